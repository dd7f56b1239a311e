/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * zcx_nl.h - a small client of the "zcx" generic netlink family for the
 * selftests (libnl-genl-3): requests return 0 or the kernel's -errno, and
 * hand each reply's attributes, flattened, to a callback.
 */
#ifndef ZCX_NL_H
#define ZCX_NL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>

#include "zcx_uapi.h"

/* One reply: which attributes came, their integer values, the strings. */
struct zcx_nl_msg {
	bool has[ZCX_ATTR_MAX + 1];
	uint64_t val[ZCX_ATTR_MAX + 1];
	char comm[32];
	char dev_name[64];
	char dev_backend[16];
};

/* Attributes to send: integers, by attribute number (u64 if marked). */
struct zcx_nl_req {
	int n;
	struct {
		int attr;
		uint64_t value;
		bool is_u64;
	} attrs[8];
};

typedef void (*zcx_nl_fn)(const struct zcx_nl_msg *msg, void *arg);

struct zcx_nl_state {
	zcx_nl_fn fn;
	void *arg;
	int error;
};

static inline void zcx_nl_add(struct zcx_nl_req *req, int attr, uint64_t value, bool is_u64)
{
	req->attrs[req->n].attr = attr;
	req->attrs[req->n].value = value;
	req->attrs[req->n].is_u64 = is_u64;
	req->n++;
}

static inline int zcx_nl_on_error(struct sockaddr_nl *who, struct nlmsgerr *err, void *arg)
{
	struct zcx_nl_state *state = arg;

	(void)who;
	state->error = err->error;
	return NL_STOP;
}

static inline int zcx_nl_on_valid(struct nl_msg *nlmsg, void *arg)
{
	struct zcx_nl_state *state = arg;
	struct nlattr *attrs[ZCX_ATTR_MAX + 1];
	struct zcx_nl_msg msg;
	int i;

	memset(&msg, 0, sizeof(msg));
	if (genlmsg_parse(nlmsg_hdr(nlmsg), 0, attrs, ZCX_ATTR_MAX, NULL))
		return NL_SKIP;
	for (i = 1; i <= ZCX_ATTR_MAX; i++) {
		if (!attrs[i])
			continue;
		msg.has[i] = true;
		switch (nla_len(attrs[i])) {
		case 4:
			msg.val[i] = nla_get_u32(attrs[i]);
			break;
		case 8:
			msg.val[i] = nla_get_u64(attrs[i]);
			break;
		}
	}
	if (attrs[ZCX_ATTR_COMM])
		snprintf(msg.comm, sizeof(msg.comm), "%s", nla_get_string(attrs[ZCX_ATTR_COMM]));
	if (attrs[ZCX_ATTR_DEV_NAME])
		snprintf(msg.dev_name, sizeof(msg.dev_name), "%s",
			 nla_get_string(attrs[ZCX_ATTR_DEV_NAME]));
	if (attrs[ZCX_ATTR_DEV_BACKEND])
		snprintf(msg.dev_backend, sizeof(msg.dev_backend), "%s",
			 nla_get_string(attrs[ZCX_ATTR_DEV_BACKEND]));
	if (state->fn)
		state->fn(&msg, state->arg);
	return NL_OK;
}

/*
 * Send @cmd (dump if @dump) with @req's attributes on a new socket; 0,
 * the kernel's -errno, or -ENOPROTOOPT when the family does not exist.
 */
static inline int zcx_nl_request(uint8_t cmd, bool dump, const struct zcx_nl_req *req,
				 zcx_nl_fn fn, void *arg)
{
	struct zcx_nl_state state = { .fn = fn, .arg = arg };
	struct nl_sock *sock = nl_socket_alloc();
	struct nl_msg *msg = nlmsg_alloc();
	struct nl_cb *cb = nl_cb_alloc(NL_CB_DEFAULT);
	int family, i, ret = -ENOMEM;

	if (!sock || !msg || !cb)
		goto out;
	ret = -EIO;
	if (genl_connect(sock))
		goto out;
	nl_socket_disable_auto_ack(sock);
	family = genl_ctrl_resolve(sock, ZCX_NL_FAMILY_NAME);
	ret = -ENOPROTOOPT;
	if (family < 0)
		goto out;
	ret = -EMSGSIZE;
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, dump ? NLM_F_DUMP : 0,
			 cmd, ZCX_NL_VERSION))
		goto out;
	for (i = 0; req && i < req->n; i++) {
		if (req->attrs[i].is_u64 ?
		    nla_put_u64(msg, req->attrs[i].attr, req->attrs[i].value) :
		    nla_put_u32(msg, req->attrs[i].attr, (uint32_t)req->attrs[i].value))
			goto out;
	}
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, zcx_nl_on_valid, &state);
	nl_cb_err(cb, NL_CB_CUSTOM, zcx_nl_on_error, &state);
	ret = -EIO;
	if (nl_send_auto(sock, msg) < 0)
		goto out;
	ret = nl_recvmsgs(sock, cb);
	if (state.error)
		ret = state.error;
	else if (ret < 0)
		ret = -EIO;
	else
		ret = 0;
out:
	nl_cb_put(cb);
	nlmsg_free(msg);
	nl_socket_free(sock);
	return ret;
}

static inline void zcx_nl_copy(const struct zcx_nl_msg *msg, void *arg)
{
	memcpy(arg, msg, sizeof(*msg));
}

/* A "do" command with at most a pid; its reply in *out. */
static inline int zcx_nl_do_pid(uint8_t cmd, long pid, struct zcx_nl_msg *out)
{
	struct zcx_nl_req req = { 0 };

	memset(out, 0, sizeof(*out));
	if (pid)
		zcx_nl_add(&req, ZCX_ATTR_PID, (uint64_t)pid, false);
	return zcx_nl_request(cmd, false, &req, zcx_nl_copy, out);
}

#endif /* ZCX_NL_H */
