// SPDX-License-Identifier: GPL-2.0-only
/*
 * ioctl.c - ioctl dispatch, argument copying and the query command.
 */
#include <linux/errno.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "zcx.h"
#include "zcx_uapi.h"

/* Largest argument we copy; far above any struct, bounds a hostile size. */
#define ZCX_MAX_ARG_SIZE	PAGE_SIZE

/*
 * Copy an extensible argument in.  The caller's size comes from the
 * command; fields it did not pass read as zero and bytes past what this
 * kernel knows must be zero.  Every malformed argument is EINVAL.
 */
static int zcx_copy_arg_in(void *karg, size_t ksize, size_t min_size,
			   unsigned int cmd, void __user *uarg)
{
	size_t usize = _IOC_SIZE(cmd);
	int ret;

	if (_IOC_DIR(cmd) != (_IOC_READ | _IOC_WRITE))
		return -EINVAL;
	if (usize < min_size || usize > ZCX_MAX_ARG_SIZE)
		return -EINVAL;
	ret = copy_struct_from_user(karg, ksize, uarg, usize);
	return ret == -E2BIG ? -EINVAL : ret;
}

/* Copy a result out, no more than the caller's structure holds. */
static int zcx_copy_arg_out(const void *karg, size_t ksize, unsigned int cmd,
			    void __user *uarg)
{
	size_t usize = min_t(size_t, _IOC_SIZE(cmd), ksize);

	if (copy_to_user(uarg, karg, usize))
		return -EFAULT;
	return 0;
}

static bool zcx_reserved_is_zero(const __u64 *reserved, size_t count)
{
	return !memchr_inv(reserved, 0, count * sizeof(*reserved));
}

static long zcx_ioctl_query(unsigned int cmd, void __user *uarg)
{
	struct zcx_query q;
	int ret;

	ret = zcx_copy_arg_in(&q, sizeof(q), sizeof(q), cmd, uarg);
	if (ret)
		return ret;
	if (q.flags || !zcx_reserved_is_zero(q.reserved, ARRAY_SIZE(q.reserved)))
		return -EINVAL;

	/* Built whole from a zeroed struct: no stack bytes reach the user. */
	memset(&q, 0, sizeof(q));
	q.abi_version = ZCX_ABI_VERSION;
	q.features = ZCX_FEATURES_KNOWN;
	q.cache_entries = READ_ONCE(zcx_cache_entries);
	q.ring_depth = zcx_ring_depth;
	q.zcopy_threshold = READ_ONCE(zcx_zcopy_threshold);
	q.page_size = PAGE_SIZE;
	q.cache_bytes = READ_ONCE(zcx_cache_bytes);
	q.eager_credits = READ_ONCE(zcx_eager_credits);
	q.max_endpoints = ZCX_MAX_ENDPOINTS;
	return zcx_copy_arg_out(&q, sizeof(q), cmd, uarg);
}

static long zcx_ioctl_mr_reg(struct zcx_ctx *ctx, unsigned int cmd, void __user *uarg)
{
	struct zcx_mr_reg reg;
	int ret;

	ret = zcx_copy_arg_in(&reg, sizeof(reg), sizeof(reg), cmd, uarg);
	if (ret)
		return ret;
	if (!zcx_reserved_is_zero(reg.reserved, ARRAY_SIZE(reg.reserved)))
		return -EINVAL;
	ret = zcx_mr_register(ctx, &reg);
	if (ret)
		return ret;
	ret = zcx_copy_arg_out(&reg, sizeof(reg), cmd, uarg);
	/* The caller cannot learn the handle: do not leave a reference behind. */
	if (ret)
		zcx_mr_deregister(ctx, reg.handle);
	return ret;
}

static long zcx_ioctl_mr_dereg(struct zcx_ctx *ctx, unsigned int cmd, void __user *uarg)
{
	struct zcx_mr_dereg dereg;
	int ret;

	ret = zcx_copy_arg_in(&dereg, sizeof(dereg), sizeof(dereg), cmd, uarg);
	if (ret)
		return ret;
	if (dereg.flags || dereg.pad ||
	    !zcx_reserved_is_zero(dereg.reserved, ARRAY_SIZE(dereg.reserved)))
		return -EINVAL;
	return zcx_mr_deregister(ctx, dereg.handle);
}

static long zcx_ioctl_mr_flush(struct zcx_ctx *ctx, unsigned int cmd, void __user *uarg)
{
	struct zcx_mr_flush flush;
	int ret;

	ret = zcx_copy_arg_in(&flush, sizeof(flush), sizeof(flush), cmd, uarg);
	if (ret)
		return ret;
	if (flush.flags || !zcx_reserved_is_zero(flush.reserved, ARRAY_SIZE(flush.reserved)))
		return -EINVAL;
	flush.flushed = zcx_mr_flush(ctx);
	return zcx_copy_arg_out(&flush, sizeof(flush), cmd, uarg);
}

static long zcx_ioctl_limits(struct zcx_ctx *ctx, unsigned int cmd, void __user *uarg)
{
	struct zcx_limits limits;
	int ret;

	ret = zcx_copy_arg_in(&limits, sizeof(limits), sizeof(limits), cmd, uarg);
	if (ret)
		return ret;
	if (!zcx_reserved_is_zero(limits.reserved, ARRAY_SIZE(limits.reserved)))
		return -EINVAL;
	ret = zcx_mr_set_limits(ctx, &limits);
	if (ret)
		return ret;
	return zcx_copy_arg_out(&limits, sizeof(limits), cmd, uarg);
}

static long zcx_ioctl_mon_add(struct zcx_ctx *ctx, unsigned int cmd, void __user *uarg)
{
	struct zcx_mon_add mon;
	int ret;

	ret = zcx_copy_arg_in(&mon, sizeof(mon), sizeof(mon), cmd, uarg);
	if (ret)
		return ret;
	if (!zcx_reserved_is_zero(mon.reserved, ARRAY_SIZE(mon.reserved)))
		return -EINVAL;
	ret = zcx_mon_add(ctx, &mon);
	if (ret)
		return ret;
	ret = zcx_copy_arg_out(&mon, sizeof(mon), cmd, uarg);
	/* The caller cannot learn the handle: remove the monitor again. */
	if (ret)
		zcx_mr_deregister(ctx, mon.handle);
	return ret;
}

/*
 * The transport's commands: copy in and check the reserved words, run,
 * and, for commands with results, copy out, undoing what was made if the
 * caller cannot learn of it.  zcx_run_<name>() returns 0 or a negative
 * errno, or, for ZCX_IOC_ENTER, the count it returns to the caller.
 */
#define ZCX_XFER_IOCTL_BODY(name, type)						\
	type arg;								\
	long ret;								\
										\
	ret = zcx_copy_arg_in(&arg, sizeof(arg), offsetofend(type, reserved),	\
			      cmd, uarg);					\
	if (ret)								\
		return ret;							\
	if (!zcx_reserved_is_zero(arg.reserved, ARRAY_SIZE(arg.reserved)))	\
		return -EINVAL;							\
	ret = zcx_run_##name(ctx, &arg)

#define ZCX_XFER_IOCTL_IN(name, type)						\
static long zcx_ioctl_##name(struct zcx_ctx *ctx, unsigned int cmd, void __user *uarg) \
{										\
	ZCX_XFER_IOCTL_BODY(name, type);					\
	return ret;								\
}

#define ZCX_XFER_IOCTL_INOUT(name, type)					\
static long zcx_ioctl_##name(struct zcx_ctx *ctx, unsigned int cmd, void __user *uarg) \
{										\
	ZCX_XFER_IOCTL_BODY(name, type);					\
	if (ret < 0)								\
		return ret;							\
	if (zcx_copy_arg_out(&arg, sizeof(arg), cmd, uarg)) {			\
		zcx_undo_##name(ctx, &arg);					\
		return -EFAULT;							\
	}									\
	return ret;								\
}

static int zcx_run_ep_destroy(struct zcx_ctx *ctx, struct zcx_ep_destroy *arg)
{
	return arg->flags ? -EINVAL : zcx_ep_destroy_idx(ctx, arg->ep);
}

static int zcx_run_enter(struct zcx_ctx *ctx, struct zcx_enter *arg)
{
	return zcx_ep_enter(ctx, arg);
}

static int zcx_run_unexpose(struct zcx_ctx *ctx, struct zcx_unexpose *arg)
{
	return arg->flags || arg->pad ? -EINVAL : zcx_unexpose(ctx, arg->rkey);
}

#define zcx_run_ep_create	zcx_ep_create
#define zcx_run_ep_connect	zcx_ep_connect
#define zcx_run_expose		zcx_expose
#define zcx_run_bar_create	zcx_bar_create
#define zcx_run_bar_join	zcx_bar_join
#define zcx_undo_ep_create(ctx, arg)	zcx_ep_destroy_idx(ctx, (arg)->ep)
#define zcx_undo_ep_connect(ctx, arg)	zcx_ep_disconnect(ctx, (arg)->ep, (arg)->peer)
#define zcx_undo_expose(ctx, arg)	zcx_unexpose(ctx, (arg)->rkey)
#define zcx_undo_bar_create(ctx, arg)	zcx_bar_detach(ctx, (arg)->ep, (arg)->bar)
#define zcx_undo_bar_join(ctx, arg)	zcx_bar_detach(ctx, (arg)->ep, (arg)->bar)

ZCX_XFER_IOCTL_INOUT(ep_create, struct zcx_ep_create)
ZCX_XFER_IOCTL_IN(ep_destroy, struct zcx_ep_destroy)
ZCX_XFER_IOCTL_INOUT(ep_connect, struct zcx_ep_connect)
ZCX_XFER_IOCTL_IN(enter, struct zcx_enter)
ZCX_XFER_IOCTL_INOUT(expose, struct zcx_expose)
ZCX_XFER_IOCTL_IN(unexpose, struct zcx_unexpose)
ZCX_XFER_IOCTL_INOUT(bar_create, struct zcx_bar_create)
ZCX_XFER_IOCTL_INOUT(bar_join, struct zcx_bar_join)

long zcx_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct zcx_ctx *ctx = file->private_data;
	void __user *uarg = (void __user *)arg;
	int ret;

	if (_IOC_TYPE(cmd) != ZCX_IOC_MAGIC)
		return -ENOTTY;
	ret = zcx_ctx_check_caller(ctx);
	if (ret)
		return ret;

	/* Match on number only: the size is the caller's struct version. */
	switch (_IOC_NR(cmd)) {
	case _IOC_NR(ZCX_IOC_QUERY):
		return zcx_ioctl_query(cmd, uarg);
	case _IOC_NR(ZCX_IOC_MR_REG):
		return zcx_ioctl_mr_reg(ctx, cmd, uarg);
	case _IOC_NR(ZCX_IOC_MR_DEREG):
		return zcx_ioctl_mr_dereg(ctx, cmd, uarg);
	case _IOC_NR(ZCX_IOC_MR_FLUSH):
		return zcx_ioctl_mr_flush(ctx, cmd, uarg);
	case _IOC_NR(ZCX_IOC_LIMITS):
		return zcx_ioctl_limits(ctx, cmd, uarg);
	case _IOC_NR(ZCX_IOC_MON_ADD):
		return zcx_ioctl_mon_add(ctx, cmd, uarg);
	case _IOC_NR(ZCX_IOC_EP_CREATE):
		return zcx_ioctl_ep_create(ctx, cmd, uarg);
	case _IOC_NR(ZCX_IOC_EP_DESTROY):
		return zcx_ioctl_ep_destroy(ctx, cmd, uarg);
	case _IOC_NR(ZCX_IOC_EP_CONNECT):
		return zcx_ioctl_ep_connect(ctx, cmd, uarg);
	case _IOC_NR(ZCX_IOC_ENTER):
		return zcx_ioctl_enter(ctx, cmd, uarg);
	case _IOC_NR(ZCX_IOC_EXPOSE):
		return zcx_ioctl_expose(ctx, cmd, uarg);
	case _IOC_NR(ZCX_IOC_UNEXPOSE):
		return zcx_ioctl_unexpose(ctx, cmd, uarg);
	case _IOC_NR(ZCX_IOC_BAR_CREATE):
		return zcx_ioctl_bar_create(ctx, cmd, uarg);
	case _IOC_NR(ZCX_IOC_BAR_JOIN):
		return zcx_ioctl_bar_join(ctx, cmd, uarg);
	default:
		return -ENOTTY;
	}
}
