// SPDX-License-Identifier: GPL-2.0-only
/*
 * zcxctl - look at and tune zcx.ko through its generic netlink family
 * ("zcx", see uapi/zcx_uapi.h): statistics, a process's regions, module
 * parameters, flushing a process's unused regions, the RDMA devices the
 * backend (zcx_ib.ko) drives.
 *
 * Exit status: 0 success, 1 other failure, 2 usage error, 3 zcx.ko not
 * loaded, 4 permission denied, 5 no such process using zcx.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>

#include "zcx_uapi.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

enum {
	EXIT_USAGE = 2,
	EXIT_NO_MODULE = 3,
	EXIT_NO_RIGHTS = 4,
	EXIT_NO_PROCESS = 5,
};

static const char *progname = "zcxctl";
static bool json;

/* What one request came back with: the kernel's errno and message. */
struct zcx_request {
	int error;		/* 0 or a negative errno */
	char message[256];	/* extended ack text, if any */
};

enum attr_kind { KIND_U32, KIND_U64, KIND_STR, KIND_FLAG };

struct attr_desc {
	int attr;
	const char *name;
	enum attr_kind kind;
};

/* Statistics, in the order they are shown. */
static const struct attr_desc stats_attrs[] = {
	{ ZCX_ATTR_CONTEXTS,		"contexts",		KIND_U32 },
	{ ZCX_ATTR_REGIONS,		"regions",		KIND_U64 },
	{ ZCX_ATTR_PINNED_BYTES,	"pinned_bytes",		KIND_U64 },
	{ ZCX_ATTR_HITS,		"hits",			KIND_U64 },
	{ ZCX_ATTR_MISSES,		"misses",		KIND_U64 },
	{ ZCX_ATTR_INVALIDATIONS,	"invalidations",	KIND_U64 },
	{ ZCX_ATTR_INVAL_UNMAP,		"inval_unmap",		KIND_U64 },
	{ ZCX_ATTR_INVAL_CLEAR,		"inval_clear",		KIND_U64 },
	{ ZCX_ATTR_INVAL_RELEASE,	"inval_release",	KIND_U64 },
	{ ZCX_ATTR_INVAL_MIGRATE,	"inval_migrate",	KIND_U64 },
	{ ZCX_ATTR_INVAL_EXCLUSIVE,	"inval_exclusive",	KIND_U64 },
	{ ZCX_ATTR_EVICTIONS,		"evictions",		KIND_U64 },
	{ ZCX_ATTR_EVENTS,		"events",		KIND_U64 },
	{ ZCX_ATTR_ENDPOINTS,		"endpoints",		KIND_U64 },
	{ ZCX_ATTR_OPS,			"ops",			KIND_U64 },
	{ ZCX_ATTR_ERRORS,		"errors",		KIND_U64 },
	{ ZCX_ATTR_TX_BYTES,		"tx_bytes",		KIND_U64 },
	{ ZCX_ATTR_RX_BYTES,		"rx_bytes",		KIND_U64 },
	{ ZCX_ATTR_DEV_REGS,		"dev_regs",		KIND_U64 },
	{ ZCX_ATTR_DEV_REGS_TOTAL,	"dev_regs_total",	KIND_U64 },
	{ ZCX_ATTR_DEV_REGS_POSTED,	"dev_regs_posted",	KIND_U64 },
};

/* Parameters; @settable ones are accepted by "set" (the kernel decides). */
static const struct param_desc {
	struct attr_desc desc;
	bool settable;
} params[] = {
	{ { ZCX_ATTR_PARAM_CACHE_ENTRIES,	"cache_entries",	KIND_U32 }, true },
	{ { ZCX_ATTR_PARAM_CACHE_BYTES,		"cache_bytes",		KIND_U64 }, true },
	{ { ZCX_ATTR_PARAM_RING_DEPTH,		"ring_depth",		KIND_U32 }, false },
	{ { ZCX_ATTR_PARAM_ZCOPY_THRESHOLD,	"zcopy_threshold",	KIND_U32 }, true },
	{ { ZCX_ATTR_PARAM_EAGER_CREDITS,	"eager_credits",	KIND_U32 }, true },
	{ { ZCX_ATTR_PARAM_POLL_IDLE_US,	"poll_idle_us",		KIND_U32 }, true },
	{ { ZCX_ATTR_PARAM_MAX_POLLERS,		"max_pollers",		KIND_U32 }, false },
	{ { ZCX_ATTR_PARAM_MAX_POLLERS_PER_USER, "max_pollers_per_user", KIND_U32 }, false },
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static void usage(FILE *out)
{
	fprintf(out,
		"usage: %s [-j] [-h] COMMAND [ARGS]\n"
		"\n"
		"  status              module version, totals and the processes using zcx\n"
		"  stats [-p PID]      module-wide statistics, or one process's\n"
		"  regions -p PID      the cached regions of a process\n"
		"  params              module parameters\n"
		"  set NAME VALUE      change a parameter (root): cache_entries,\n"
		"                      cache_bytes, zcopy_threshold, eager_credits,\n"
		"                      poll_idle_us\n"
		"  flush -p PID        drop the unused cached regions of a process\n"
		"  devices             the RDMA devices zcx_ib.ko drives\n"
		"\n"
		"  -j                  JSON output\n"
		"  -h                  this help\n"
		"\n"
		"Users see their own processes; root sees all.  Exit status: 0 ok,\n"
		"1 failure, 2 usage, 3 zcx module not loaded, 4 permission denied,\n"
		"5 no such process using zcx.\n",
		progname);
}

/* --- JSON and tables ---------------------------------------------------- */

static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* Print @attrs described by @desc as JSON members (comma-led after the first). */
static void json_members(struct nlattr **attrs, const struct attr_desc *desc, size_t n,
			 bool *first)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct nlattr *a = attrs[desc[i].attr];

		if (!a)
			continue;
		printf("%s", *first ? "" : ",");
		*first = false;
		json_string(desc[i].name);
		putchar(':');
		switch (desc[i].kind) {
		case KIND_U32:
			printf("%" PRIu32, nla_get_u32(a));
			break;
		case KIND_U64:
			printf("%" PRIu64, (uint64_t)nla_get_u64(a));
			break;
		case KIND_STR:
			json_string(nla_get_string(a));
			break;
		case KIND_FLAG:
			printf("true");
			break;
		}
	}
}

static void table_rows(struct nlattr **attrs, const struct attr_desc *desc, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct nlattr *a = attrs[desc[i].attr];

		if (!a)
			continue;
		if (desc[i].kind == KIND_U32)
			printf("%-18s %" PRIu32 "\n", desc[i].name, nla_get_u32(a));
		else if (desc[i].kind == KIND_U64)
			printf("%-18s %" PRIu64 "\n", desc[i].name, (uint64_t)nla_get_u64(a));
		else if (desc[i].kind == KIND_STR)
			printf("%-18s %s\n", desc[i].name, nla_get_string(a));
	}
}

static uint64_t attr_u64(struct nlattr **attrs, int attr)
{
	return attrs[attr] ? (uint64_t)nla_get_u64(attrs[attr]) : 0;
}

static uint32_t attr_u32(struct nlattr **attrs, int attr)
{
	return attrs[attr] ? nla_get_u32(attrs[attr]) : 0;
}

/* --- netlink ------------------------------------------------------------- */

struct zcx_conn {
	struct nl_sock *sock;
	int family;
};

/* Keep the kernel's error and its extended-ack message. */
static int on_error(struct sockaddr_nl *who, struct nlmsgerr *err, void *arg)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)((char *)err - NLMSG_HDRLEN);
	struct zcx_request *req = arg;
	size_t offset = sizeof(*err);
	struct nlattr *tlvs[NLMSGERR_ATTR_MAX + 1];
	int len;

	(void)who;
	req->error = err->error;
	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return NL_STOP;
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		offset += err->msg.nlmsg_len - NLMSG_HDRLEN;
	len = (int)nlh->nlmsg_len - NLMSG_HDRLEN - (int)offset;
	if (len <= 0 ||
	    nla_parse(tlvs, NLMSGERR_ATTR_MAX, (struct nlattr *)((char *)err + offset), len, NULL))
		return NL_STOP;
	if (tlvs[NLMSGERR_ATTR_MSG])
		snprintf(req->message, sizeof(req->message), "%s",
			 nla_get_string(tlvs[NLMSGERR_ATTR_MSG]));
	return NL_STOP;
}

static int zcx_connect(struct zcx_conn *conn)
{
	int one = 1;

	conn->sock = nl_socket_alloc();
	if (!conn->sock) {
		fprintf(stderr, "%s: out of memory\n", progname);
		return EXIT_FAILURE;
	}
	if (genl_connect(conn->sock)) {
		fprintf(stderr, "%s: cannot open a generic netlink socket\n", progname);
		return EXIT_FAILURE;
	}
	/*
	 * Replies end a request; only failures need an acknowledgement (the
	 * kernel always sends those), so a successful one leaves nothing
	 * behind for the next request to read.
	 */
	nl_socket_disable_auto_ack(conn->sock);
	/* Ask for the kernel's explanations with errors (best effort). */
	setsockopt(nl_socket_get_fd(conn->sock), SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(nl_socket_get_fd(conn->sock), SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	conn->family = genl_ctrl_resolve(conn->sock, ZCX_NL_FAMILY_NAME);
	if (conn->family < 0) {
		fprintf(stderr, "%s: the zcx module is not loaded (no generic netlink family \"%s\")\n",
			progname, ZCX_NL_FAMILY_NAME);
		return EXIT_NO_MODULE;
	}
	return 0;
}

/* An exit status and a message for the kernel's answer to @what. */
static int report_error(const struct zcx_request *req, const char *what, long pid)
{
	int err = -req->error;
	const char *extra = req->message[0] ? req->message : NULL;

	switch (err) {
	case EPERM:
	case EACCES:
		if (pid)
			fprintf(stderr, "%s: %s: permission denied for process %ld "
				"(another user's; needs root)\n", progname, what, pid);
		else
			fprintf(stderr, "%s: %s: permission denied (needs root)\n", progname, what);
		return EXIT_NO_RIGHTS;
	case ESRCH:
		fprintf(stderr, "%s: %s: process %ld does not use zcx\n", progname, what, pid);
		return EXIT_NO_PROCESS;
	default:
		fprintf(stderr, "%s: %s: %s%s%s\n", progname, what, strerror(err),
			extra ? ": " : "", extra ? extra : "");
		return EXIT_FAILURE;
	}
}

typedef void (*reply_fn)(struct nlattr **attrs, void *arg);

struct reply_ctx {
	reply_fn fn;
	void *arg;
};

static int on_valid(struct nl_msg *msg, void *arg)
{
	struct reply_ctx *ctx = arg;
	struct nlattr *attrs[ZCX_ATTR_MAX + 1];

	if (genlmsg_parse(nlmsg_hdr(msg), 0, attrs, ZCX_ATTR_MAX, NULL))
		return NL_SKIP;
	ctx->fn(attrs, ctx->arg);
	return NL_OK;
}

/*
 * Send @cmd (a dump with @dump) with the attributes @build adds, and call
 * @fn for each reply.  Returns 0 or an exit status, having said why.
 */
static int zcx_request(struct zcx_conn *conn, uint8_t cmd, bool dump,
		       int (*build)(struct nl_msg *msg, void *arg), void *build_arg,
		       reply_fn fn, void *fn_arg, const char *what, long pid)
{
	struct reply_ctx rctx = { .fn = fn, .arg = fn_arg };
	struct zcx_request req = { 0 };
	struct nl_msg *msg;
	struct nl_cb *cb;
	int ret;

	msg = nlmsg_alloc();
	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!msg || !cb) {
		fprintf(stderr, "%s: out of memory\n", progname);
		ret = EXIT_FAILURE;
		goto out;
	}
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, conn->family, 0,
			 dump ? NLM_F_DUMP : 0, cmd, ZCX_NL_VERSION) ||
	    (build && build(msg, build_arg))) {
		fprintf(stderr, "%s: cannot build the request\n", progname);
		ret = EXIT_FAILURE;
		goto out;
	}
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, on_valid, &rctx);
	nl_cb_err(cb, NL_CB_CUSTOM, on_error, &req);
	ret = nl_send_auto(conn->sock, msg);
	if (ret >= 0)
		ret = nl_recvmsgs(conn->sock, cb);
	if (req.error) {
		ret = report_error(&req, what, pid);
		goto out;
	}
	if (ret < 0) {
		fprintf(stderr, "%s: %s: %s\n", progname, what, nl_geterror(ret));
		ret = EXIT_FAILURE;
		goto out;
	}
	ret = 0;
out:
	nl_cb_put(cb);
	nlmsg_free(msg);
	return ret;
}

static int build_pid(struct nl_msg *msg, void *arg)
{
	long pid = *(long *)arg;

	return pid ? nla_put_u32(msg, ZCX_ATTR_PID, (uint32_t)pid) : 0;
}

/* --- commands ------------------------------------------------------------ */

static void print_stats(struct nlattr **attrs, void *arg)
{
	bool first = true;

	(void)arg;
	if (!json) {
		if (attrs[ZCX_ATTR_PID])
			printf("%-18s %" PRIu32 "\n", "pid", nla_get_u32(attrs[ZCX_ATTR_PID]));
		table_rows(attrs, stats_attrs, ARRAY_SIZE(stats_attrs));
		return;
	}
	putchar('{');
	if (attrs[ZCX_ATTR_PID]) {
		printf("\"pid\":%" PRIu32, nla_get_u32(attrs[ZCX_ATTR_PID]));
		first = false;
	}
	json_members(attrs, stats_attrs, ARRAY_SIZE(stats_attrs), &first);
	printf("}\n");
}

static int cmd_stats(struct zcx_conn *conn, long pid)
{
	return zcx_request(conn, ZCX_CMD_GET_STATS, false, build_pid, &pid, print_stats, NULL,
			   "stats", pid);
}

static void print_params(struct nlattr **attrs, void *arg)
{
	static const struct attr_desc head[] = {
		{ ZCX_ATTR_VERSION,	"version",	KIND_STR },
		{ ZCX_ATTR_ABI_VERSION,	"abi_version",	KIND_U32 },
	};
	bool first = true;
	size_t i;

	(void)arg;
	if (!json) {
		table_rows(attrs, head, ARRAY_SIZE(head));
		for (i = 0; i < ARRAY_SIZE(params); i++)
			table_rows(attrs, &params[i].desc, 1);
		return;
	}
	putchar('{');
	json_members(attrs, head, ARRAY_SIZE(head), &first);
	for (i = 0; i < ARRAY_SIZE(params); i++)
		json_members(attrs, &params[i].desc, 1, &first);
	printf("}\n");
}

static int cmd_params(struct zcx_conn *conn)
{
	return zcx_request(conn, ZCX_CMD_GET_PARAMS, false, NULL, NULL, print_params, NULL,
			   "params", 0);
}

struct set_arg {
	const struct param_desc *param;
	uint64_t value;
};

static int build_set(struct nl_msg *msg, void *arg)
{
	const struct set_arg *set = arg;

	if (set->param->desc.kind == KIND_U64)
		return nla_put_u64(msg, set->param->desc.attr, set->value);
	return nla_put_u32(msg, set->param->desc.attr, (uint32_t)set->value);
}

static int cmd_set(struct zcx_conn *conn, const char *name, const char *value)
{
	struct set_arg set = { 0 };
	char *end;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(params); i++)
		if (!strcmp(name, params[i].desc.name))
			set.param = &params[i];
	if (!set.param) {
		fprintf(stderr, "%s: set: unknown parameter \"%s\" (see \"%s params\")\n",
			progname, name, progname);
		return EXIT_USAGE;
	}
	errno = 0;
	set.value = strtoull(value, &end, 0);
	if (errno || end == value || *end || value[0] == '-' ||
	    (set.param->desc.kind == KIND_U32 && set.value > UINT32_MAX)) {
		fprintf(stderr, "%s: set: \"%s\" is not a valid value for %s\n",
			progname, value, name);
		return EXIT_USAGE;
	}
	return zcx_request(conn, ZCX_CMD_SET_PARAMS, false, build_set, &set, print_params, NULL,
			   "set", 0);
}

static void print_flush(struct nlattr **attrs, void *arg)
{
	(void)arg;
	if (json)
		printf("{\"pid\":%" PRIu32 ",\"flushed\":%" PRIu32 "}\n",
		       attr_u32(attrs, ZCX_ATTR_PID), attr_u32(attrs, ZCX_ATTR_FLUSHED));
	else
		printf("flushed %" PRIu32 " unused regions of process %" PRIu32 "\n",
		       attr_u32(attrs, ZCX_ATTR_FLUSHED), attr_u32(attrs, ZCX_ATTR_PID));
}

static int cmd_flush(struct zcx_conn *conn, long pid)
{
	return zcx_request(conn, ZCX_CMD_FLUSH, false, build_pid, &pid, print_flush, NULL,
			   "flush", pid);
}

/* Rows of a dump: header printed before the first, JSON array around. */
struct rows {
	unsigned int count;
};

static void rows_begin(struct rows *rows, const char *header)
{
	if (json)
		printf("%s", rows->count ? "," : "[");
	else if (!rows->count)
		printf("%s\n", header);
	rows->count++;
}

static void rows_end(const struct rows *rows, const char *none)
{
	if (json)
		printf("%s\n", rows->count ? "]" : "[]");
	else if (!rows->count)
		printf("%s\n", none);
}

static const char *access_name(uint32_t access, bool monitor)
{
	static const char *const names[] = { "-", "r", "w", "rw" };

	return monitor ? "monitor" : names[access & ZCX_ACCESS_ALL];
}

static void print_region(struct nlattr **attrs, void *arg)
{
	static const struct attr_desc desc[] = {
		{ ZCX_ATTR_CONTEXT,		"context",	KIND_U64 },
		{ ZCX_ATTR_REGION_HANDLE,	"handle",	KIND_U64 },
		{ ZCX_ATTR_REGION_START,	"start",	KIND_U64 },
		{ ZCX_ATTR_REGION_LENGTH,	"length",	KIND_U64 },
		{ ZCX_ATTR_REGION_ACCESS,	"access",	KIND_U32 },
		{ ZCX_ATTR_REGION_USERS,	"users",	KIND_U32 },
		{ ZCX_ATTR_REGION_MONITOR,	"monitor",	KIND_FLAG },
	};
	bool monitor = attrs[ZCX_ATTR_REGION_MONITOR] != NULL;
	bool live = attr_u32(attrs, ZCX_ATTR_REGION_STATE) == ZCX_NL_REGION_LIVE;
	struct rows *rows = arg;
	bool first = true;

	rows_begin(rows, "CTX   HANDLE              START               LENGTH        ACCESS   STATE  USERS");
	if (json) {
		putchar('{');
		json_members(attrs, desc, ARRAY_SIZE(desc), &first);
		printf(",\"state\":\"%s\"}", live ? "live" : "stale");
		return;
	}
	printf("%-5" PRIu64 " 0x%-16" PRIx64 "  0x%-16" PRIx64 "  %-12" PRIu64 "  %-7s  %-5s  %" PRIu32
	       "\n", attr_u64(attrs, ZCX_ATTR_CONTEXT), attr_u64(attrs, ZCX_ATTR_REGION_HANDLE),
	       attr_u64(attrs, ZCX_ATTR_REGION_START), attr_u64(attrs, ZCX_ATTR_REGION_LENGTH),
	       access_name(attr_u32(attrs, ZCX_ATTR_REGION_ACCESS), monitor),
	       live ? "live" : "stale", attr_u32(attrs, ZCX_ATTR_REGION_USERS));
}

static int cmd_regions(struct zcx_conn *conn, long pid)
{
	struct rows rows = { 0 };
	int ret;

	ret = zcx_request(conn, ZCX_CMD_GET_REGIONS, true, build_pid, &pid, print_region, &rows,
			  "regions", pid);
	if (!ret)
		rows_end(&rows, "no regions");
	return ret;
}

static void print_proc(struct nlattr **attrs, void *arg)
{
	static const struct attr_desc desc[] = {
		{ ZCX_ATTR_PID,		"pid",		KIND_U32 },
		{ ZCX_ATTR_UID,		"uid",		KIND_U32 },
		{ ZCX_ATTR_COMM,	"comm",		KIND_STR },
		{ ZCX_ATTR_CONTEXT,	"context",	KIND_U64 },
	};
	struct rows *rows = arg;
	bool first = true;

	rows_begin(rows, "PID      UID      COMM             CTX   REGIONS  PINNED_BYTES  HITS        MISSES      INVAL       EPS");
	if (json) {
		putchar('{');
		json_members(attrs, desc, ARRAY_SIZE(desc), &first);
		json_members(attrs, stats_attrs, ARRAY_SIZE(stats_attrs), &first);
		putchar('}');
		return;
	}
	printf("%-8" PRIu32 " %-8" PRIu32 " %-16s %-5" PRIu64 " %-8" PRIu64 " %-13" PRIu64
	       " %-11" PRIu64 " %-11" PRIu64 " %-11" PRIu64 " %" PRIu64 "\n",
	       attr_u32(attrs, ZCX_ATTR_PID), attr_u32(attrs, ZCX_ATTR_UID),
	       attrs[ZCX_ATTR_COMM] ? nla_get_string(attrs[ZCX_ATTR_COMM]) : "?",
	       attr_u64(attrs, ZCX_ATTR_CONTEXT), attr_u64(attrs, ZCX_ATTR_REGIONS),
	       attr_u64(attrs, ZCX_ATTR_PINNED_BYTES), attr_u64(attrs, ZCX_ATTR_HITS),
	       attr_u64(attrs, ZCX_ATTR_MISSES), attr_u64(attrs, ZCX_ATTR_INVALIDATIONS),
	       attr_u64(attrs, ZCX_ATTR_ENDPOINTS));
}

static void print_device(struct nlattr **attrs, void *arg)
{
	static const struct attr_desc desc[] = {
		{ ZCX_ATTR_DEV_ID,		"id",		KIND_U64 },
		{ ZCX_ATTR_DEV_NAME,		"name",		KIND_STR },
		{ ZCX_ATTR_DEV_BACKEND,		"backend",	KIND_STR },
		{ ZCX_ATTR_DEV_PORTS,		"ports",	KIND_U32 },
		{ ZCX_ATTR_DEV_MR_PAGES,	"mr_pages",	KIND_U32 },
	};
	struct rows *rows = arg;
	bool first = true;

	rows_begin(rows, "ID    NAME              BACKEND  PORTS  MR_PAGES");
	if (json) {
		putchar('{');
		json_members(attrs, desc, ARRAY_SIZE(desc), &first);
		putchar('}');
		return;
	}
	printf("%-5" PRIu64 " %-17s %-8s %-6" PRIu32 " %" PRIu32 "\n",
	       attr_u64(attrs, ZCX_ATTR_DEV_ID),
	       attrs[ZCX_ATTR_DEV_NAME] ? nla_get_string(attrs[ZCX_ATTR_DEV_NAME]) : "?",
	       attrs[ZCX_ATTR_DEV_BACKEND] ? nla_get_string(attrs[ZCX_ATTR_DEV_BACKEND]) : "?",
	       attr_u32(attrs, ZCX_ATTR_DEV_PORTS), attr_u32(attrs, ZCX_ATTR_DEV_MR_PAGES));
}

static int cmd_devices(struct zcx_conn *conn)
{
	struct rows rows = { 0 };
	int ret;

	ret = zcx_request(conn, ZCX_CMD_GET_DEVICES, true, NULL, NULL, print_device, &rows,
			  "devices", 0);
	if (!ret)
		rows_end(&rows, "no RDMA devices (is zcx_ib loaded?)");
	return ret;
}

/* status: parameters' head, module-wide totals, then the contexts. */
static int cmd_status(struct zcx_conn *conn)
{
	struct rows rows = { 0 };
	int ret;

	if (json)
		printf("{\"params\":");
	ret = cmd_params(conn);
	if (!ret) {
		printf(json ? ",\"stats\":" : "\n");
		ret = cmd_stats(conn, 0);
	}
	if (!ret) {
		printf(json ? ",\"processes\":" : "\n");
		ret = zcx_request(conn, ZCX_CMD_GET_PROCS, true, NULL, NULL, print_proc, &rows,
				  "status", 0);
	}
	if (!ret) {
		rows_end(&rows, "no process uses zcx (that you may see)");
		if (json)
			printf("}\n");
	}
	return ret;
}

/* --- main ---------------------------------------------------------------- */

/* Parse "-p PID" (and -j, -h) after a command; PID required if @need_pid. */
static int parse_cmd_opts(int argc, char **argv, bool allow_pid, bool need_pid, long *pid)
{
	char *end;
	int opt;

	*pid = 0;
	optind = 1;
	while ((opt = getopt(argc, argv, allow_pid ? "+p:jh" : "+jh")) != -1) {
		switch (opt) {
		case 'p':
			errno = 0;
			*pid = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || *pid <= 0 || *pid > INT_MAX) {
				fprintf(stderr, "%s: bad pid \"%s\"\n", progname, optarg);
				return EXIT_USAGE;
			}
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			exit(EXIT_SUCCESS);
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (need_pid && !*pid) {
		fprintf(stderr, "%s: %s needs -p PID\n", progname, argv[0]);
		return EXIT_USAGE;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct zcx_conn conn = { 0 };
	const char *cmd;
	int opt, ret;
	long pid;

	while ((opt = getopt(argc, argv, "+jh")) != -1) {
		switch (opt) {
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return EXIT_SUCCESS;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	cmd = argv[optind];
	argc -= optind;
	argv += optind;

	if (!strcmp(cmd, "status") || !strcmp(cmd, "params") || !strcmp(cmd, "devices")) {
		ret = parse_cmd_opts(argc, argv, false, false, &pid);
	} else if (!strcmp(cmd, "stats")) {
		ret = parse_cmd_opts(argc, argv, true, false, &pid);
	} else if (!strcmp(cmd, "regions") || !strcmp(cmd, "flush")) {
		ret = parse_cmd_opts(argc, argv, true, true, &pid);
	} else if (!strcmp(cmd, "set")) {
		ret = parse_cmd_opts(argc, argv, false, false, &pid);
		if (!ret && argc - optind != 2) {
			fprintf(stderr, "%s: usage: set NAME VALUE\n", progname);
			ret = EXIT_USAGE;
		}
	} else {
		fprintf(stderr, "%s: unknown command \"%s\" (try -h)\n", progname, cmd);
		return EXIT_USAGE;
	}
	if (ret)
		return ret;
	if (strcmp(cmd, "set") && optind != argc) {
		fprintf(stderr, "%s: %s: unexpected argument \"%s\"\n", progname, cmd, argv[optind]);
		return EXIT_USAGE;
	}

	ret = zcx_connect(&conn);
	if (!ret) {
		if (!strcmp(cmd, "status"))
			ret = cmd_status(&conn);
		else if (!strcmp(cmd, "stats"))
			ret = cmd_stats(&conn, pid);
		else if (!strcmp(cmd, "regions"))
			ret = cmd_regions(&conn, pid);
		else if (!strcmp(cmd, "params"))
			ret = cmd_params(&conn);
		else if (!strcmp(cmd, "devices"))
			ret = cmd_devices(&conn);
		else if (!strcmp(cmd, "set"))
			ret = cmd_set(&conn, argv[optind], argv[optind + 1]);
		else
			ret = cmd_flush(&conn, pid);
	}
	nl_socket_free(conn.sock);
	return ret;
}
