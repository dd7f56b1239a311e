// SPDX-License-Identifier: GPL-2.0-only
/*
 * zcx_ib.ko - zcx's RDMA backend: an ib_client that learns the RDMA
 * devices as they come and go and announces to zcx.ko those it can drive,
 * i.e. those with fast registration (FRWR), which is how it will register
 * cached regions; and, with a listening address, the connections of zcx
 * endpoints between nodes (conn.c).
 *
 * A separate module so that zcx.ko loads on nodes without ib_core.
 *
 * Device life: ib_core calls zcx_ib_add() for every device present when
 * the client registers and for every device added later, and
 * zcx_ib_remove() before a device goes (rdma link delete, driver unload,
 * the netdev under a Soft-RoCE device going away) and for every device
 * when the client unregisters.  Nothing zcx_ib allocated on a device may
 * outlive the device: zcx_ib_remove() kills the connections it finds on
 * it, and one not yet on it (its address unresolved, or accepting) goes
 * on rdma_cm's DEVICE_REMOVAL, which the device's removal waits for.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/slab.h>
#include <rdma/ib_verbs.h>

#include "zcx_ib.h"

static char *zcx_ib_listen_addr;
module_param_named(listen, zcx_ib_listen_addr, charp, 0444);
MODULE_PARM_DESC(listen, "This node's IP address for peers on other nodes (default: none, no connections between nodes)");

static ushort zcx_ib_port = 7471;
module_param_named(port, zcx_ib_port, ushort, 0444);
MODULE_PARM_DESC(port, "rdma_cm port the node listens on (default 7471)");

unsigned int zcx_ib_keepalive_ms = 10000;

/* A new period applies to the connections that are up too. */
static int zcx_ib_keepalive_set(const char *val, const struct kernel_param *kp)
{
	int ret = param_set_uint(val, kp);

	if (!ret)
		zcx_ib_keepalive_rearm_all();
	return ret;
}

static const struct kernel_param_ops zcx_ib_keepalive_ops = {
	.set = zcx_ib_keepalive_set,
	.get = param_get_uint,
};
module_param_cb(keepalive_ms, &zcx_ib_keepalive_ops, &zcx_ib_keepalive_ms, 0644);
MODULE_PARM_DESC(keepalive_ms, "An idle connection checks its peer every this many ms (default 10000, 0: never)");

bool zcx_ib_reg_cache = true;
module_param_named(reg_cache, zcx_ib_reg_cache, bool, 0644);
MODULE_PARM_DESC(reg_cache, "Keep the registrations of cached regions for later messages (default 1; 0: register each message, for registrations made from then on)");

/*
 * Each costs its receive buffers (rx_buffers of them, some 8.1 KiB each,
 * charged to the accepting endpoint's memory cgroup) and a queue pair of
 * the device.
 */
unsigned int zcx_ib_max_accepted = 1024;
module_param_named(max_accepted, zcx_ib_max_accepted, uint, 0644);
MODULE_PARM_DESC(max_accepted, "Connections from other nodes accepted at once, at most (default 1024; lowered, refuses new ones until fewer)");

/*
 * Fewer buffers cost less memory per connection, and let a sender have
 * fewer inline messages in flight before it waits for credits.
 */
unsigned int zcx_ib_rx_buffers = ZCX_IB_RX_MAX;

static int zcx_ib_rx_buffers_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, ZCX_IB_RX_MIN, ZCX_IB_RX_MAX);
}

static const struct kernel_param_ops zcx_ib_rx_buffers_ops = {
	.set = zcx_ib_rx_buffers_set,
	.get = param_get_uint,
};
module_param_cb(rx_buffers, &zcx_ib_rx_buffers_ops, &zcx_ib_rx_buffers, 0644);
MODULE_PARM_DESC(rx_buffers, "Receive buffers of a connection accepted from then on, 8 to 32 (default 32)");

static_assert(IB_DEVICE_NAME_MAX <= ZCX_BACKEND_NAME_MAX);

struct zcx_ib_dev {
	struct zcx_backend_dev zdev;
	struct ib_device *ibdev;
};

static struct ib_client zcx_ib_client;

static int zcx_ib_add(struct ib_device *ibdev)
{
	struct zcx_ib_dev *dev;

	if (!(ibdev->attrs.device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS) ||
	    !ibdev->attrs.max_fast_reg_page_list_len)
		return -EOPNOTSUPP;
	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return -ENOMEM;
	dev->ibdev = ibdev;
	strscpy(dev->zdev.name, dev_name(&ibdev->dev), sizeof(dev->zdev.name));
	dev->zdev.backend = "ib";
	dev->zdev.ports = rdma_end_port(ibdev) - rdma_start_port(ibdev) + 1;
	dev->zdev.mr_pages = ibdev->attrs.max_fast_reg_page_list_len;
	ib_set_client_data(ibdev, &zcx_ib_client, dev);
	zcx_backend_dev_add(&dev->zdev);
	return 0;
}

static void zcx_ib_remove(struct ib_device *ibdev, void *client_data)
{
	struct zcx_ib_dev *dev = client_data;

	/* Nothing of ours may be left on the device when this returns. */
	zcx_ib_device_gone(ibdev);
	zcx_backend_dev_del(&dev->zdev);
	kfree(dev);
}

static void zcx_ib_rename(struct ib_device *ibdev, void *client_data)
{
	struct zcx_ib_dev *dev = client_data;

	zcx_backend_dev_rename(&dev->zdev, dev_name(&ibdev->dev));
}

static struct ib_client zcx_ib_client = {
	.name	= "zcx_ib",
	.add	= zcx_ib_add,
	.remove	= zcx_ib_remove,
	.rename	= zcx_ib_rename,
};

static int __init zcx_ib_init(void)
{
	int ret;

	ret = zcx_ib_conn_init();
	if (ret)
		return ret;
	ret = ib_register_client(&zcx_ib_client);
	if (ret)
		goto fail_conn;
	/* Before listening: a message received is given back through the ops. */
	ret = zcx_backend_register(&zcx_ib_ops);
	if (ret)
		goto fail_client;
	ret = zcx_ib_listen_init(zcx_ib_listen_addr, zcx_ib_port);
	if (ret) {
		pr_err("cannot listen on %s port %u: %d\n", zcx_ib_listen_addr, zcx_ib_port, ret);
		goto fail_backend;
	}
	return 0;

fail_backend:
	zcx_backend_unregister(&zcx_ib_ops);
fail_client:
	ib_unregister_client(&zcx_ib_client);
fail_conn:
	zcx_ib_conn_exit();
	return ret;
}

/*
 * Only once no connection is left (each holds the module): stop listening,
 * stop offering connections, let go of the devices.
 */
static void __exit zcx_ib_exit(void)
{
	zcx_ib_listen_exit();
	zcx_backend_unregister(&zcx_ib_ops);
	ib_unregister_client(&zcx_ib_client);
	zcx_ib_conn_exit();
}

module_init(zcx_ib_init);
module_exit(zcx_ib_exit);

MODULE_DESCRIPTION("zcx: RDMA backend (ib_core devices for zcx.ko)");
MODULE_AUTHOR("The zcx developers");
MODULE_LICENSE("GPL");
MODULE_VERSION(ZCX_MODULE_VERSION);
