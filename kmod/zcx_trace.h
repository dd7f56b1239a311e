/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * zcx_trace.h - tracepoints of zcx.ko (events/zcx/ in tracefs).
 *
 * Registration: zcx_reg_hit, zcx_reg_miss, zcx_region_evict and
 * zcx_region_invalidate (with its cause); transport: zcx_submit and
 * zcx_complete.  All but zcx_complete carry the context's node-wide
 * number (ctx), the one netlink reports, so one job's processes can be
 * followed; endpoint events carry the endpoint's node-wide id (ep), the
 * one in its address.  They fire under the context's spinlock or on the
 * submission path: they only copy a few integers.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM zcx

#if !defined(ZCX_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define ZCX_TRACE_H

#include <linux/tracepoint.h>

#include "zcx.h"

#define zcx_show_cause(cause)					\
	__print_symbolic(cause,					\
			 { ZCX_EVENT_UNMAP, "unmap" },		\
			 { ZCX_EVENT_CLEAR, "clear" },		\
			 { ZCX_EVENT_RELEASE, "release" },	\
			 { ZCX_EVENT_MIGRATE, "migrate" },	\
			 { ZCX_EVENT_EXCLUSIVE, "exclusive" })

#define zcx_show_opcode(op)					\
	__print_symbolic(op,					\
			 { ZCX_OP_NOP, "nop" },			\
			 { ZCX_OP_SEND, "send" },		\
			 { ZCX_OP_RECV, "recv" },		\
			 { ZCX_OP_PUT, "put" },			\
			 { ZCX_OP_GET, "get" },			\
			 { ZCX_OP_BARRIER, "barrier" })

DECLARE_EVENT_CLASS(zcx_region_class,
	TP_PROTO(const struct zcx_region *r),
	TP_ARGS(r),
	TP_STRUCT__entry(
		__field(u64, ctx)
		__field(unsigned long, start)
		__field(unsigned long, length)
		__field(u64, handle)
		__field(u32, access)
		__field(u32, users)
	),
	TP_fast_assign(
		__entry->ctx = r->ctx->id;
		__entry->start = r->node.start;
		__entry->length = r->node.last - r->node.start + 1;
		__entry->handle = zcx_region_handle(r);
		__entry->access = r->access;
		__entry->users = r->users;
	),
	TP_printk("ctx=%llu start=0x%lx length=%lu handle=0x%llx access=%u users=%u",
		  __entry->ctx, __entry->start, __entry->length, __entry->handle,
		  __entry->access, __entry->users)
);

/* A registration or a transfer served by a cached region. */
DEFINE_EVENT(zcx_region_class, zcx_reg_hit,
	TP_PROTO(const struct zcx_region *r),
	TP_ARGS(r)
);

/* A registration or a transfer that pinned a new region. */
DEFINE_EVENT(zcx_region_class, zcx_reg_miss,
	TP_PROTO(const struct zcx_region *r),
	TP_ARGS(r)
);

/* An unused region dropped for a limit or a flush. */
DEFINE_EVENT(zcx_region_class, zcx_region_evict,
	TP_PROTO(const struct zcx_region *r),
	TP_ARGS(r)
);

TRACE_EVENT(zcx_region_invalidate,
	TP_PROTO(const struct zcx_region *r, u32 cause),
	TP_ARGS(r, cause),
	TP_STRUCT__entry(
		__field(u64, ctx)
		__field(unsigned long, start)
		__field(unsigned long, length)
		__field(u64, handle)
		__field(u32, cause)
		__field(bool, monitor)
	),
	TP_fast_assign(
		__entry->ctx = r->ctx->id;
		__entry->start = r->node.start;
		__entry->length = r->node.last - r->node.start + 1;
		__entry->handle = zcx_region_handle(r);
		__entry->cause = cause;
		__entry->monitor = r->monitor;
	),
	TP_printk("ctx=%llu start=0x%lx length=%lu handle=0x%llx cause=%s monitor=%d",
		  __entry->ctx, __entry->start, __entry->length, __entry->handle,
		  zcx_show_cause(__entry->cause), __entry->monitor)
);

TRACE_EVENT(zcx_submit,
	TP_PROTO(const struct zcx_ep *ep, const struct zcx_sqe *sqe),
	TP_ARGS(ep, sqe),
	TP_STRUCT__entry(
		__field(u64, ctx)
		__field(u32, ep)
		__field(u32, peer)
		__field(u8, opcode)
		__field(u64, len)
		__field(u64, tag)
		__field(u64, user_data)
	),
	TP_fast_assign(
		__entry->ctx = ep->ctx->id;
		__entry->ep = ep->id;
		__entry->peer = sqe->peer;
		__entry->opcode = sqe->opcode;
		__entry->len = sqe->len;
		__entry->tag = sqe->tag;
		__entry->user_data = sqe->user_data;
	),
	TP_printk("ctx=%llu ep=%u op=%s peer=%u len=%llu tag=0x%llx user_data=0x%llx",
		  __entry->ctx, __entry->ep, zcx_show_opcode(__entry->opcode),
		  __entry->peer, __entry->len, __entry->tag, __entry->user_data)
);

/*
 * A completion, when it is posted.  No context number: a completion may
 * be posted by a peer after the owner's context started going away.
 */
TRACE_EVENT(zcx_complete,
	TP_PROTO(const struct zcx_ep *ep, u8 opcode, u64 user_data, int res, u64 len),
	TP_ARGS(ep, opcode, user_data, res, len),
	TP_STRUCT__entry(
		__field(u32, ep)
		__field(u8, opcode)
		__field(int, res)
		__field(u64, len)
		__field(u64, user_data)
	),
	TP_fast_assign(
		__entry->ep = ep->id;
		__entry->opcode = opcode;
		__entry->res = res;
		__entry->len = len;
		__entry->user_data = user_data;
	),
	TP_printk("ep=%u op=%s res=%d len=%llu user_data=0x%llx",
		  __entry->ep, zcx_show_opcode(__entry->opcode), __entry->res,
		  __entry->len, __entry->user_data)
);

#endif /* ZCX_TRACE_H */

/* Out of tree: the build adds kmod/ to the include path (Kbuild). */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE zcx_trace
#include <trace/define_trace.h>
