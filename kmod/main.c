// SPDX-License-Identifier: GPL-2.0-only
/*
 * main.c - zcx.ko: module parameters and the /dev/zcx misc device.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/log2.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/random.h>

#include "zcx.h"
#include "zcx_uapi.h"

/*
 * The settable ones (zcx.h) change at run time through netlink only,
 * where values are checked and rights required; sysfs shows them 0444.
 */
unsigned int zcx_cache_entries = 8192;
module_param_named(cache_entries, zcx_cache_entries, uint, 0444);
MODULE_PARM_DESC(cache_entries, "Registration-cache entries per context (default 8192)");

unsigned int zcx_ring_depth = 1024;
module_param_named(ring_depth, zcx_ring_depth, uint, 0444);
MODULE_PARM_DESC(ring_depth, "Default ring depth, a power of two (default 1024)");

unsigned int zcx_eager_credits = 64;
module_param_named(eager_credits, zcx_eager_credits, uint, 0444);
MODULE_PARM_DESC(eager_credits, "Inline messages a connection may have unreceived at its peer (default 64)");

unsigned int zcx_poll_idle_us = 2000;
module_param_named(poll_idle_us, zcx_poll_idle_us, uint, 0444);
MODULE_PARM_DESC(poll_idle_us, "Microseconds a polling thread spins without work before it sleeps (default 2000; on a shared CPU whose process takes its own submissions, it naps instead)");

unsigned int zcx_max_pollers = 64;
module_param_named(max_pollers, zcx_max_pollers, uint, 0444);
MODULE_PARM_DESC(max_pollers, "Polling threads on the node at most, one per context using ZCX_EP_POLL (default 64)");

unsigned int zcx_max_pollers_per_user;
module_param_named(max_pollers_per_user, zcx_max_pollers_per_user, uint, 0444);
MODULE_PARM_DESC(max_pollers_per_user, "Polling threads of one user's processes at most (default 0: no share of its own, max_pollers for all users together)");

unsigned int zcx_zcopy_threshold = 4096;
module_param_named(zcopy_threshold, zcx_zcopy_threshold, uint, 0444);
MODULE_PARM_DESC(zcopy_threshold, "Message size in bytes from which data is not sent inline (default 4096)");

unsigned long zcx_cache_bytes;
module_param_named(cache_bytes, zcx_cache_bytes, ulong, 0444);
MODULE_PARM_DESC(cache_bytes, "Pinned bytes per context, 0 for RLIMIT_MEMLOCK only (default 0)");

static int zcx_open(struct inode *inode, struct file *file)
{
	struct zcx_ctx *ctx;

	ctx = zcx_ctx_create();
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	file->private_data = ctx;
	return nonseekable_open(inode, file);
}

static int zcx_release(struct inode *inode, struct file *file)
{
	zcx_ctx_destroy(file->private_data);
	return 0;
}

static int zcx_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct zcx_ctx *ctx = file->private_data;
	int ret;

	ret = zcx_ctx_check_caller(ctx);
	if (ret)
		return ret;
	if (vma->vm_pgoff == (ZCX_MMAP_STATUS >> PAGE_SHIFT))
		return zcx_status_mmap(ctx, vma);
	return zcx_ep_mmap(ctx, vma);
}

static ssize_t zcx_read(struct file *file, char __user *buf, size_t len, loff_t *pos)
{
	struct zcx_ctx *ctx = file->private_data;
	int ret;

	ret = zcx_ctx_check_caller(ctx);
	if (ret)
		return ret;
	return zcx_events_read(ctx, buf, len, file->f_flags & O_NONBLOCK);
}

static __poll_t zcx_poll(struct file *file, poll_table *wait)
{
	struct zcx_ctx *ctx = file->private_data;

	if (zcx_ctx_check_caller(ctx))
		return EPOLLERR;
	return zcx_events_poll(ctx, file, wait);
}

static const struct file_operations zcx_fops = {
	.owner		= THIS_MODULE,
	.open		= zcx_open,
	.release	= zcx_release,
	.unlocked_ioctl	= zcx_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.mmap		= zcx_mmap,
	.read		= zcx_read,
	.poll		= zcx_poll,
};

/*
 * World-accessible on purpose, like /dev/infiniband/uverbs*: a context
 * only ever acts on its opener's own memory, pinning is charged to its
 * RLIMIT_MEMLOCK, and anything reaching another process needs that
 * process's key.  Sites that want a group can override it in udev.
 */
static struct miscdevice zcx_miscdev = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= ZCX_DEVICE_NAME,
	.fops	= &zcx_fops,
	.mode	= 0666,
	.groups	= zcx_attr_groups,
};

static int __init zcx_check_params(void)
{
	if (!zcx_cache_entries || zcx_cache_entries > ZCX_MAX_CACHE_ENTRIES) {
		pr_err("cache_entries must be in [1, %u]\n", ZCX_MAX_CACHE_ENTRIES);
		return -EINVAL;
	}
	if (zcx_ring_depth < 2 || zcx_ring_depth > ZCX_MAX_RING_DEPTH ||
	    !is_power_of_2(zcx_ring_depth)) {
		pr_err("ring_depth must be a power of two in [2, %u]\n",
		       ZCX_MAX_RING_DEPTH);
		return -EINVAL;
	}
	if (zcx_zcopy_threshold > ZCX_MAX_ZCOPY_THRESHOLD) {
		pr_err("zcopy_threshold must be at most %u\n", ZCX_MAX_ZCOPY_THRESHOLD);
		return -EINVAL;
	}
	if (zcx_eager_credits > ZCX_MAX_EAGER_CREDITS) {
		pr_err("eager_credits must be at most %u\n", ZCX_MAX_EAGER_CREDITS);
		return -EINVAL;
	}
	if (zcx_poll_idle_us > ZCX_MAX_POLL_IDLE_US) {
		pr_err("poll_idle_us must be at most %lu\n", ZCX_MAX_POLL_IDLE_US);
		return -EINVAL;
	}
	return 0;
}

static int __init zcx_init(void)
{
	int ret;

	ret = zcx_check_params();
	if (ret)
		return ret;
	zcx_node_id = get_random_u64();
	ret = zcx_netlink_init();
	if (ret)
		return ret;
	ret = misc_register(&zcx_miscdev);
	if (ret)
		zcx_netlink_exit();
	return ret;
}

static void __exit zcx_exit(void)
{
	misc_deregister(&zcx_miscdev);
	zcx_netlink_exit();
	/* No context is left, so no endpoint or barrier either. */
	zcx_ep_global_exit();
	zcx_bar_global_exit();
	zcx_ctx_global_exit();
}

module_init(zcx_init);
module_exit(zcx_exit);

MODULE_DESCRIPTION("zcx: pinned-memory registration cache and single-copy transfers");
MODULE_AUTHOR("The zcx developers");
MODULE_LICENSE("GPL");
MODULE_VERSION(ZCX_MODULE_VERSION);
