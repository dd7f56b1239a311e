// SPDX-License-Identifier: GPL-2.0-only
/*
 * zcx_ib.ko - zcx's RDMA backend: an ib_client that learns the RDMA
 * devices as they come and go and announces to zcx.ko those it can drive,
 * i.e. those with fast registration (FRWR), which is how it will register
 * cached regions.
 *
 * A separate module so that zcx.ko loads on nodes without ib_core.
 *
 * Device life: ib_core calls zcx_ib_add() for every device present when
 * the client registers and for every device added later, and
 * zcx_ib_remove() before a device goes (rdma link delete, driver unload,
 * the netdev under a Soft-RoCE device going away) and for every device
 * when the client unregisters.  Nothing zcx_ib allocated on a device may
 * outlive zcx_ib_remove().
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <rdma/ib_verbs.h>

#include "backend.h"

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
	return ib_register_client(&zcx_ib_client);
}

/* Calls zcx_ib_remove() for every device still known, then returns. */
static void __exit zcx_ib_exit(void)
{
	ib_unregister_client(&zcx_ib_client);
}

module_init(zcx_ib_init);
module_exit(zcx_ib_exit);

MODULE_DESCRIPTION("zcx: RDMA backend (ib_core devices for zcx.ko)");
MODULE_AUTHOR("The zcx developers");
MODULE_LICENSE("GPL");
MODULE_VERSION(ZCX_MODULE_VERSION);
