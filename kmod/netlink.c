// SPDX-License-Identifier: GPL-2.0-only
/*
 * netlink.c - the "zcx" generic netlink family: statistics module-wide and
 * per process, a process's regions, the module parameters (some settable)
 * and flushing a process's unused regions.  The ABI, with its rights
 * model, is documented in zcx_uapi.h.
 *
 * Contexts are found on zcx_ctx_list under zcx_ctx_list_mutex, which keeps
 * them alive while we look: release() takes a context off the list before
 * tearing it down.  The family runs with parallel_ops, so nothing here
 * holds genl_mutex, which every other non-parallel family shares.
 */
#include <linux/build_bug.h>
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/pid.h>
#include <linux/uidgid.h>
#include <net/genetlink.h>
#include <net/netlink.h>

#include "zcx.h"

static struct genl_family zcx_nl_family;

static const struct nla_policy zcx_nl_policy[ZCX_ATTR_MAX + 1] = {
	[ZCX_ATTR_PID]				= { .type = NLA_U32 },
	[ZCX_ATTR_PARAM_CACHE_ENTRIES]		= { .type = NLA_U32 },
	[ZCX_ATTR_PARAM_CACHE_BYTES]		= { .type = NLA_U64 },
	[ZCX_ATTR_PARAM_RING_DEPTH]		= { .type = NLA_U32 },
	[ZCX_ATTR_PARAM_ZCOPY_THRESHOLD]	= { .type = NLA_U32 },
	[ZCX_ATTR_PARAM_EAGER_CREDITS]		= { .type = NLA_U32 },
	[ZCX_ATTR_PARAM_POLL_IDLE_US]		= { .type = NLA_U32 },
	[ZCX_ATTR_PARAM_MAX_POLLERS]		= { .type = NLA_U32 },
	[ZCX_ATTR_PARAM_MAX_POLLERS_PER_USER]	= { .type = NLA_U32 },
};

/*
 * Who asks, captured once per request (a dump's later parts may run from
 * recvmsg(), possibly in another thread): the effective uid, and whether
 * the caller may see and act on every process.
 */
struct zcx_nl_caller {
	kuid_t euid;
	bool admin;
};

static void zcx_nl_caller_init(struct zcx_nl_caller *caller, const struct sk_buff *skb)
{
	caller->euid = current_euid();
	/* Both the socket's opener and the sender need the capability. */
	caller->admin = netlink_capable(skb, CAP_SYS_ADMIN);
}

static bool zcx_nl_visible(const struct zcx_nl_caller *caller, const struct zcx_ctx *ctx)
{
	return caller->admin || uid_eq(caller->euid, ctx->euid);
}

/*
 * The number of @ctx's process in the caller's pid namespace, or 0:
 * outside it, or exited (its number may be another process's by now; the
 * context, still open elsewhere, let go of what it held when its address
 * space went).
 */
static pid_t zcx_nl_ctx_nr(const struct zcx_ctx *ctx)
{
	return pid_has_task(ctx->pid, PIDTYPE_TGID) ? pid_vnr(ctx->pid) : 0;
}

/*
 * Check that process @nr (in the caller's pid namespace) has contexts and
 * that the caller may see all of them: 0, -ESRCH or -EPERM.
 */
static int zcx_nl_check_pid(const struct zcx_nl_caller *caller, pid_t nr)
{
	struct zcx_ctx *ctx;
	int ret = -ESRCH;

	lockdep_assert_held(&zcx_ctx_list_mutex);
	list_for_each_entry(ctx, &zcx_ctx_list, list) {
		if (zcx_nl_ctx_nr(ctx) != nr)
			continue;
		if (!zcx_nl_visible(caller, ctx))
			return -EPERM;
		ret = 0;
	}
	return ret;
}

static int zcx_nl_get_pid(struct genl_info *info, pid_t *nr)
{
	if (GENL_REQ_ATTR_CHECK(info, ZCX_ATTR_PID))
		return -EINVAL;
	*nr = nla_get_u32(info->attrs[ZCX_ATTR_PID]);
	if (*nr <= 0) {
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[ZCX_ATTR_PID], "bad pid");
		return -EINVAL;
	}
	return 0;
}

static int zcx_nl_put_u64(struct sk_buff *skb, int attr, u64 value)
{
	return nla_put_u64_64bit(skb, attr, value, ZCX_ATTR_PAD);
}

static int zcx_nl_put_stats(struct sk_buff *skb, const struct zcx_stats *s)
{
	int i;

	if (zcx_nl_put_u64(skb, ZCX_ATTR_HITS, s->hits) ||
	    zcx_nl_put_u64(skb, ZCX_ATTR_MISSES, s->misses) ||
	    zcx_nl_put_u64(skb, ZCX_ATTR_INVALIDATIONS, s->invalidations) ||
	    zcx_nl_put_u64(skb, ZCX_ATTR_EVICTIONS, s->evictions) ||
	    zcx_nl_put_u64(skb, ZCX_ATTR_EVENTS, s->events) ||
	    zcx_nl_put_u64(skb, ZCX_ATTR_REGIONS, s->regions) ||
	    zcx_nl_put_u64(skb, ZCX_ATTR_PINNED_BYTES, s->pinned_pages << PAGE_SHIFT) ||
	    zcx_nl_put_u64(skb, ZCX_ATTR_DEV_REGS, s->dev_regs) ||
	    zcx_nl_put_u64(skb, ZCX_ATTR_DEV_REGS_TOTAL, s->dev_regs_total) ||
	    zcx_nl_put_u64(skb, ZCX_ATTR_DEV_REGS_POSTED, s->dev_regs_posted) ||
	    zcx_nl_put_u64(skb, ZCX_ATTR_ENDPOINTS, s->endpoints) ||
	    zcx_nl_put_u64(skb, ZCX_ATTR_OPS, s->xfer.ops) ||
	    zcx_nl_put_u64(skb, ZCX_ATTR_ERRORS, s->xfer.errors) ||
	    zcx_nl_put_u64(skb, ZCX_ATTR_TX_BYTES, s->xfer.tx_bytes) ||
	    zcx_nl_put_u64(skb, ZCX_ATTR_RX_BYTES, s->xfer.rx_bytes))
		return -EMSGSIZE;
	/* ZCX_ATTR_INVAL_UNMAP.. follow the order of ZCX_EVENT_UNMAP.. */
	BUILD_BUG_ON(ZCX_ATTR_INVAL_EXCLUSIVE - ZCX_ATTR_INVAL_UNMAP != ZCX_EVENT_CAUSES - 1);
	for (i = 0; i < ZCX_EVENT_CAUSES; i++)
		if (zcx_nl_put_u64(skb, ZCX_ATTR_INVAL_UNMAP + i, s->inval[i]))
			return -EMSGSIZE;
	return 0;
}

static int zcx_nl_get_stats(struct sk_buff *skb, struct genl_info *info)
{
	struct zcx_nl_caller caller;
	struct zcx_stats sum = {};
	struct zcx_ctx *ctx;
	struct sk_buff *msg;
	u32 contexts = 0;
	pid_t nr = 0;
	void *hdr;
	int ret;

	zcx_nl_caller_init(&caller, skb);
	if (info->attrs[ZCX_ATTR_PID]) {
		ret = zcx_nl_get_pid(info, &nr);
		if (ret)
			return ret;
	}
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;

	mutex_lock(&zcx_ctx_list_mutex);
	if (nr) {
		ret = zcx_nl_check_pid(&caller, nr);
		if (ret) {
			mutex_unlock(&zcx_ctx_list_mutex);
			goto err_free;
		}
	} else {
		zcx_ctx_closed_stats(&sum);
	}
	list_for_each_entry(ctx, &zcx_ctx_list, list) {
		if (nr && zcx_nl_ctx_nr(ctx) != nr)
			continue;
		zcx_ctx_stats_add(ctx, &sum);
		contexts++;
	}
	mutex_unlock(&zcx_ctx_list_mutex);

	ret = -EMSGSIZE;
	hdr = genlmsg_put_reply(msg, info, &zcx_nl_family, 0, ZCX_CMD_GET_STATS);
	if (!hdr)
		goto err_free;
	if ((nr && nla_put_u32(msg, ZCX_ATTR_PID, nr)) ||
	    nla_put_u32(msg, ZCX_ATTR_CONTEXTS, contexts) ||
	    zcx_nl_put_stats(msg, &sum))
		goto err_free;
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);

err_free:
	nlmsg_free(msg);
	return ret;
}

/*
 * Dumps keep their state in cb->args: the caller, the pid asked for (0:
 * any), and where to resume (a context number and a slot).
 */
enum {
	ZCX_NL_ARG_EUID,
	ZCX_NL_ARG_ADMIN,
	ZCX_NL_ARG_PID,
	ZCX_NL_ARG_CTX,
	ZCX_NL_ARG_SLOT,
};

static void zcx_nl_dump_caller(const struct netlink_callback *cb, struct zcx_nl_caller *caller)
{
	caller->euid = KUIDT_INIT((uid_t)cb->args[ZCX_NL_ARG_EUID]);
	caller->admin = cb->args[ZCX_NL_ARG_ADMIN];
}

/*
 * Shared start of the dumps: record the caller and the pid, and check the
 * pid when there is one (@need_pid: it must be).  Parsed here with the
 * family's policy, as the core did already, because the way the core
 * hands a dump its attributes differs between kernels.
 */
static int zcx_nl_dump_start(struct netlink_callback *cb, bool need_pid)
{
	struct nlattr *attrs[ZCX_ATTR_MAX + 1];
	struct zcx_nl_caller caller;
	pid_t nr = 0;
	int ret;

	ret = nlmsg_parse(cb->nlh, GENL_HDRLEN, attrs, ZCX_ATTR_MAX, zcx_nl_policy, cb->extack);
	if (ret)
		return ret;
	if (attrs[ZCX_ATTR_PID]) {
		nr = nla_get_u32(attrs[ZCX_ATTR_PID]);
		if (nr <= 0) {
			NL_SET_ERR_MSG_ATTR(cb->extack, attrs[ZCX_ATTR_PID], "bad pid");
			return -EINVAL;
		}
	} else if (need_pid) {
		NL_SET_ERR_MSG(cb->extack, "a pid is required");
		return -EINVAL;
	}
	zcx_nl_caller_init(&caller, cb->skb);
	if (nr) {
		mutex_lock(&zcx_ctx_list_mutex);
		ret = zcx_nl_check_pid(&caller, nr);
		mutex_unlock(&zcx_ctx_list_mutex);
		if (ret)
			return ret;
	}
	cb->args[ZCX_NL_ARG_EUID] = __kuid_val(caller.euid);
	cb->args[ZCX_NL_ARG_ADMIN] = caller.admin;
	cb->args[ZCX_NL_ARG_PID] = nr;
	cb->args[ZCX_NL_ARG_CTX] = 0;
	cb->args[ZCX_NL_ARG_SLOT] = 0;
	return 0;
}

/* A context the dump shows: visible, and of the pid asked for if any. */
static bool zcx_nl_dump_wants(const struct netlink_callback *cb,
			      const struct zcx_nl_caller *caller, struct zcx_ctx *ctx)
{
	pid_t nr = zcx_nl_ctx_nr(ctx);

	/* 0: the process is outside the caller's pid namespace, or gone. */
	if (!nr || !zcx_nl_visible(caller, ctx))
		return false;
	return !cb->args[ZCX_NL_ARG_PID] || nr == cb->args[ZCX_NL_ARG_PID];
}

static void *zcx_nl_dump_put(struct sk_buff *skb, struct netlink_callback *cb, u8 cmd)
{
	return genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			   &zcx_nl_family, NLM_F_MULTI, cmd);
}

static int zcx_nl_put_ctx(struct sk_buff *skb, struct zcx_ctx *ctx)
{
	if (nla_put_u32(skb, ZCX_ATTR_PID, zcx_nl_ctx_nr(ctx)) ||
	    nla_put_u32(skb, ZCX_ATTR_UID, from_kuid_munged(current_user_ns(), ctx->euid)) ||
	    nla_put_string(skb, ZCX_ATTR_COMM, ctx->comm) ||
	    zcx_nl_put_u64(skb, ZCX_ATTR_CONTEXT, ctx->id))
		return -EMSGSIZE;
	return 0;
}

static int zcx_nl_procs_start(struct netlink_callback *cb)
{
	return zcx_nl_dump_start(cb, false);
}

static int zcx_nl_procs_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct zcx_nl_caller caller;
	struct zcx_stats s;
	struct zcx_ctx *ctx;
	void *hdr;

	zcx_nl_dump_caller(cb, &caller);
	mutex_lock(&zcx_ctx_list_mutex);
	list_for_each_entry(ctx, &zcx_ctx_list, list) {
		/* The list is in creation order: numbers ascend. */
		if (ctx->id <= cb->args[ZCX_NL_ARG_CTX] || !zcx_nl_dump_wants(cb, &caller, ctx))
			continue;
		memset(&s, 0, sizeof(s));
		zcx_ctx_stats_add(ctx, &s);
		hdr = zcx_nl_dump_put(skb, cb, ZCX_CMD_GET_PROCS);
		if (!hdr)
			break;
		if (zcx_nl_put_ctx(skb, ctx) || zcx_nl_put_stats(skb, &s)) {
			genlmsg_cancel(skb, hdr);
			break;
		}
		genlmsg_end(skb, hdr);
		cb->args[ZCX_NL_ARG_CTX] = ctx->id;
	}
	mutex_unlock(&zcx_ctx_list_mutex);
	return skb->len;
}

static int zcx_nl_regions_start(struct netlink_callback *cb)
{
	return zcx_nl_dump_start(cb, true);
}

/* One region's message; ctx->lock held (nothing here sleeps). */
static int zcx_nl_put_region(struct sk_buff *skb, struct netlink_callback *cb,
			     struct zcx_ctx *ctx, const struct zcx_region *r)
{
	u32 state = r->state == ZCX_REGION_LIVE ? ZCX_NL_REGION_LIVE : ZCX_NL_REGION_STALE;
	void *hdr;

	hdr = zcx_nl_dump_put(skb, cb, ZCX_CMD_GET_REGIONS);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_u32(skb, ZCX_ATTR_PID, zcx_nl_ctx_nr(ctx)) ||
	    zcx_nl_put_u64(skb, ZCX_ATTR_CONTEXT, ctx->id) ||
	    zcx_nl_put_u64(skb, ZCX_ATTR_REGION_START, r->node.start) ||
	    zcx_nl_put_u64(skb, ZCX_ATTR_REGION_LENGTH, r->node.last - r->node.start + 1) ||
	    zcx_nl_put_u64(skb, ZCX_ATTR_REGION_HANDLE, zcx_region_handle(r)) ||
	    nla_put_u32(skb, ZCX_ATTR_REGION_ACCESS, r->access) ||
	    nla_put_u32(skb, ZCX_ATTR_REGION_STATE, state) ||
	    nla_put_u32(skb, ZCX_ATTR_REGION_USERS, r->users) ||
	    (r->monitor && nla_put_flag(skb, ZCX_ATTR_REGION_MONITOR))) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

static int zcx_nl_regions_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct zcx_nl_caller caller;
	struct zcx_region *r;
	struct zcx_ctx *ctx;
	bool full = false;
	u32 slot;

	zcx_nl_dump_caller(cb, &caller);
	mutex_lock(&zcx_ctx_list_mutex);
	list_for_each_entry(ctx, &zcx_ctx_list, list) {
		if (ctx->id < cb->args[ZCX_NL_ARG_CTX])
			continue;
		if (ctx->id > cb->args[ZCX_NL_ARG_CTX]) {
			cb->args[ZCX_NL_ARG_CTX] = ctx->id;
			cb->args[ZCX_NL_ARG_SLOT] = 0;
		}
		if (!zcx_nl_dump_wants(cb, &caller, ctx))
			continue;
		spin_lock(&ctx->lock);
		for (slot = cb->args[ZCX_NL_ARG_SLOT]; slot < ctx->nslots; slot++) {
			r = ctx->slots[slot];
			/* NEW: being pinned, not a region yet. */
			if (!r || r->state == ZCX_REGION_NEW)
				continue;
			if (zcx_nl_put_region(skb, cb, ctx, r)) {
				full = true;
				break;
			}
		}
		spin_unlock(&ctx->lock);
		cb->args[ZCX_NL_ARG_SLOT] = slot;
		if (full)
			break;
	}
	mutex_unlock(&zcx_ctx_list_mutex);
	return skb->len;
}

static int zcx_nl_put_params(struct sk_buff *skb)
{
	if (nla_put_string(skb, ZCX_ATTR_VERSION, ZCX_MODULE_VERSION) ||
	    nla_put_u32(skb, ZCX_ATTR_ABI_VERSION, ZCX_ABI_VERSION) ||
	    nla_put_u32(skb, ZCX_ATTR_PARAM_CACHE_ENTRIES, READ_ONCE(zcx_cache_entries)) ||
	    zcx_nl_put_u64(skb, ZCX_ATTR_PARAM_CACHE_BYTES, READ_ONCE(zcx_cache_bytes)) ||
	    nla_put_u32(skb, ZCX_ATTR_PARAM_RING_DEPTH, zcx_ring_depth) ||
	    nla_put_u32(skb, ZCX_ATTR_PARAM_ZCOPY_THRESHOLD, READ_ONCE(zcx_zcopy_threshold)) ||
	    nla_put_u32(skb, ZCX_ATTR_PARAM_EAGER_CREDITS, READ_ONCE(zcx_eager_credits)) ||
	    nla_put_u32(skb, ZCX_ATTR_PARAM_POLL_IDLE_US, READ_ONCE(zcx_poll_idle_us)) ||
	    nla_put_u32(skb, ZCX_ATTR_PARAM_MAX_POLLERS, zcx_max_pollers) ||
	    nla_put_u32(skb, ZCX_ATTR_PARAM_MAX_POLLERS_PER_USER, zcx_max_pollers_per_user))
		return -EMSGSIZE;
	return 0;
}

static int zcx_nl_params_reply(struct genl_info *info, u8 cmd)
{
	struct sk_buff *msg;
	void *hdr;

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &zcx_nl_family, 0, cmd);
	if (!hdr || zcx_nl_put_params(msg)) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);
}

static int zcx_nl_get_params(struct sk_buff *skb, struct genl_info *info)
{
	return zcx_nl_params_reply(info, ZCX_CMD_GET_PARAMS);
}

/* A u32 parameter in [min, max], if present: 0 or -EINVAL. */
static int zcx_nl_check_u32(struct genl_info *info, int attr, u32 min, u32 max)
{
	struct nlattr *nla = info->attrs[attr];
	u32 value;

	if (!nla)
		return 0;
	value = nla_get_u32(nla);
	if (value < min || value > max) {
		NL_SET_ERR_MSG_ATTR(info->extack, nla, "value out of range");
		return -EINVAL;
	}
	return 0;
}

static void zcx_nl_set_u32(struct genl_info *info, int attr, unsigned int *param)
{
	if (info->attrs[attr])
		WRITE_ONCE(*param, nla_get_u32(info->attrs[attr]));
}

/*
 * Every value is checked before any is applied, so a request with one bad
 * value changes nothing.  Each parameter is one aligned word that readers
 * load once per use, so concurrent SETs need no lock.
 */
static int zcx_nl_set_params(struct sk_buff *skb, struct genl_info *info)
{
	static const int fixed[] = {
		ZCX_ATTR_PARAM_RING_DEPTH, ZCX_ATTR_PARAM_MAX_POLLERS,
		ZCX_ATTR_PARAM_MAX_POLLERS_PER_USER,
	};
	static const int settable[] = {
		ZCX_ATTR_PARAM_CACHE_ENTRIES, ZCX_ATTR_PARAM_CACHE_BYTES,
		ZCX_ATTR_PARAM_ZCOPY_THRESHOLD, ZCX_ATTR_PARAM_EAGER_CREDITS,
		ZCX_ATTR_PARAM_POLL_IDLE_US,
	};
	bool any = false;
	int i, ret;

	if (!netlink_capable(skb, CAP_SYS_ADMIN))
		return -EPERM;
	for (i = 0; i < ARRAY_SIZE(fixed); i++) {
		if (info->attrs[fixed[i]]) {
			NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[fixed[i]],
					    "not settable at run time");
			return -EINVAL;
		}
	}
	for (i = 0; i < ARRAY_SIZE(settable); i++)
		any |= !!info->attrs[settable[i]];
	if (!any) {
		NL_SET_ERR_MSG(info->extack, "no parameter to set");
		return -EINVAL;
	}
	ret = zcx_nl_check_u32(info, ZCX_ATTR_PARAM_CACHE_ENTRIES, 1, ZCX_MAX_CACHE_ENTRIES);
	if (!ret)
		ret = zcx_nl_check_u32(info, ZCX_ATTR_PARAM_ZCOPY_THRESHOLD, 0,
				       ZCX_MAX_ZCOPY_THRESHOLD);
	if (!ret)
		ret = zcx_nl_check_u32(info, ZCX_ATTR_PARAM_EAGER_CREDITS, 0,
				       ZCX_MAX_EAGER_CREDITS);
	if (!ret)
		ret = zcx_nl_check_u32(info, ZCX_ATTR_PARAM_POLL_IDLE_US, 0,
				       ZCX_MAX_POLL_IDLE_US);
	if (ret)
		return ret;

	zcx_nl_set_u32(info, ZCX_ATTR_PARAM_CACHE_ENTRIES, &zcx_cache_entries);
	zcx_nl_set_u32(info, ZCX_ATTR_PARAM_ZCOPY_THRESHOLD, &zcx_zcopy_threshold);
	zcx_nl_set_u32(info, ZCX_ATTR_PARAM_EAGER_CREDITS, &zcx_eager_credits);
	zcx_nl_set_u32(info, ZCX_ATTR_PARAM_POLL_IDLE_US, &zcx_poll_idle_us);
	if (info->attrs[ZCX_ATTR_PARAM_CACHE_BYTES])
		WRITE_ONCE(zcx_cache_bytes, nla_get_u64(info->attrs[ZCX_ATTR_PARAM_CACHE_BYTES]));
	return zcx_nl_params_reply(info, ZCX_CMD_SET_PARAMS);
}

static int zcx_nl_flush(struct sk_buff *skb, struct genl_info *info)
{
	struct zcx_nl_caller caller;
	unsigned int flushed = 0;
	struct zcx_ctx *ctx;
	struct sk_buff *msg;
	pid_t nr;
	void *hdr;
	int ret;

	zcx_nl_caller_init(&caller, skb);
	ret = zcx_nl_get_pid(info, &nr);
	if (ret)
		return ret;
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;

	mutex_lock(&zcx_ctx_list_mutex);
	/* All the process's contexts are checked before any is touched. */
	ret = zcx_nl_check_pid(&caller, nr);
	if (!ret) {
		list_for_each_entry(ctx, &zcx_ctx_list, list)
			if (zcx_nl_ctx_nr(ctx) == nr)
				flushed += zcx_mr_evict_unused(ctx);
	}
	mutex_unlock(&zcx_ctx_list_mutex);
	if (ret)
		goto err_free;

	ret = -EMSGSIZE;
	hdr = genlmsg_put_reply(msg, info, &zcx_nl_family, 0, ZCX_CMD_FLUSH);
	if (!hdr || nla_put_u32(msg, ZCX_ATTR_PID, nr) ||
	    nla_put_u32(msg, ZCX_ATTR_FLUSHED, flushed))
		goto err_free;
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);

err_free:
	nlmsg_free(msg);
	return ret;
}

/* One message per backend device; cb->args[0] is the last id sent. */
static int zcx_nl_devices_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct zcx_backend_dev *dev;
	void *hdr;

	mutex_lock(&zcx_backend_mutex);
	list_for_each_entry(dev, &zcx_backend_devs, list) {
		if (dev->id <= cb->args[0])
			continue;
		hdr = zcx_nl_dump_put(skb, cb, ZCX_CMD_GET_DEVICES);
		if (!hdr)
			break;
		if (zcx_nl_put_u64(skb, ZCX_ATTR_DEV_ID, dev->id) ||
		    nla_put_string(skb, ZCX_ATTR_DEV_NAME, dev->name) ||
		    nla_put_string(skb, ZCX_ATTR_DEV_BACKEND, dev->backend) ||
		    nla_put_u32(skb, ZCX_ATTR_DEV_PORTS, dev->ports) ||
		    nla_put_u32(skb, ZCX_ATTR_DEV_MR_PAGES, dev->mr_pages)) {
			genlmsg_cancel(skb, hdr);
			break;
		}
		genlmsg_end(skb, hdr);
		cb->args[0] = dev->id;
	}
	mutex_unlock(&zcx_backend_mutex);
	return skb->len;
}

static const struct genl_ops zcx_nl_ops[] = {
	{
		.cmd	= ZCX_CMD_GET_STATS,
		.doit	= zcx_nl_get_stats,
	},
	{
		.cmd	= ZCX_CMD_GET_PROCS,
		.start	= zcx_nl_procs_start,
		.dumpit	= zcx_nl_procs_dump,
	},
	{
		.cmd	= ZCX_CMD_GET_REGIONS,
		.start	= zcx_nl_regions_start,
		.dumpit	= zcx_nl_regions_dump,
	},
	{
		.cmd	= ZCX_CMD_GET_PARAMS,
		.doit	= zcx_nl_get_params,
	},
	{
		/* Rights checked in the handler: CAP_SYS_ADMIN, as for flush. */
		.cmd	= ZCX_CMD_SET_PARAMS,
		.doit	= zcx_nl_set_params,
	},
	{
		.cmd	= ZCX_CMD_FLUSH,
		.doit	= zcx_nl_flush,
	},
	{
		.cmd	= ZCX_CMD_GET_DEVICES,
		.dumpit	= zcx_nl_devices_dump,
	},
};

static struct genl_family zcx_nl_family __ro_after_init = {
	.name		= ZCX_NL_FAMILY_NAME,
	.version	= ZCX_NL_VERSION,
	.maxattr	= ZCX_ATTR_MAX,
	.policy		= zcx_nl_policy,
	.parallel_ops	= true,
	.module		= THIS_MODULE,
	.ops		= zcx_nl_ops,
	.n_ops		= ARRAY_SIZE(zcx_nl_ops),
};

int __init zcx_netlink_init(void)
{
	return genl_register_family(&zcx_nl_family);
}

void zcx_netlink_exit(void)
{
	genl_unregister_family(&zcx_nl_family);
}
