/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * verbs_loop.h - two RC QPs of the first RDMA device connected to each
 * other (Soft-RoCE rxe0 on lo in the test guest), to move bytes the way a
 * NIC does: an RDMA WRITE reads the source through the pages its lkey's MR
 * pinned, not through the CPU's page tables.  That is what lets a test
 * see whether an MR still describes the memory at its address.
 *
 * Functions return 0 or -errno; verbs_loop_open() returns -ENODEV when
 * the machine has no RDMA device (the caller's cue to skip).
 */
#ifndef VERBS_LOOP_H
#define VERBS_LOOP_H

#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

#define VERBS_LOOP_PORT		1
#define VERBS_LOOP_DEPTH	16
/* Generous: the guest is emulated (TCG) and rxe copies in software. */
#define VERBS_LOOP_TIMEOUT_NS	(10 * 1000000000LL)

struct verbs_loop {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp[2];		/* [0] posts, [1] is the target */
	int gid_index;
	union ibv_gid gid;
	enum ibv_mtu mtu;
	uint64_t last_wr_id;
	enum ibv_wc_status last_status;	/* of the last completion, for logs */
	long long timeout_ns;		/* a WRITE's, VERBS_LOOP_TIMEOUT_NS unless set */
};

static inline long long verbs_loop_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * RoCE needs a GRH, hence a GID: prefer the IPv4-mapped one (127.0.0.1
 * on lo) since it routes over lo for sure; else any non-zero entry.
 */
static inline int verbs_loop_pick_gid(struct verbs_loop *loop, int table_len)
{
	static const uint8_t v4_prefix[10];
	union ibv_gid gid;
	int i;

	loop->gid_index = -1;
	for (i = 0; i < table_len; i++) {
		bool v4;

		/* rdma-core reports an empty entry as a zero GID. */
		if (ibv_query_gid(loop->ctx, VERBS_LOOP_PORT, i, &gid) ||
		    !(gid.global.subnet_prefix | gid.global.interface_id))
			continue;
		v4 = !memcmp(gid.raw, v4_prefix, 10) && gid.raw[10] == 0xff && gid.raw[11] == 0xff;
		if (v4 || loop->gid_index < 0) {
			loop->gid_index = i;
			loop->gid = gid;
		}
		if (v4)
			break;
	}
	return loop->gid_index < 0 ? -EADDRNOTAVAIL : 0;
}

/* RESET -> INIT -> RTR -> RTS, each QP aimed at the other. */
static inline int verbs_loop_connect(struct verbs_loop *loop)
{
	int i, s, ret;

	for (i = 0; i < 2; i++) {
		struct { struct ibv_qp_attr attr; int mask; } step[] = {
			{ { .qp_state = IBV_QPS_RESET }, IBV_QP_STATE },
			{ { .qp_state = IBV_QPS_INIT, .port_num = VERBS_LOOP_PORT,
			    .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					       IBV_ACCESS_REMOTE_READ },
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS },
			{ { .qp_state = IBV_QPS_RTR, .path_mtu = loop->mtu,
			    .dest_qp_num = loop->qp[!i]->qp_num, .rq_psn = 0,
			    .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
			    .ah_attr = { .is_global = 1, .port_num = VERBS_LOOP_PORT,
					 .grh = { .dgid = loop->gid, .sgid_index = loop->gid_index,
						  .hop_limit = 1 } } },
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER },
			/* ACK timeout 4.096 us << 18, about 1 s: slow guests. */
			{ { .qp_state = IBV_QPS_RTS, .sq_psn = 0, .timeout = 18, .retry_cnt = 7,
			    .rnr_retry = 7, .max_rd_atomic = 1 },
			  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC },
		};

		for (s = 0; s < (int)(sizeof(step) / sizeof(step[0])); s++) {
			ret = ibv_modify_qp(loop->qp[i], &step[s].attr, step[s].mask);
			if (ret)
				return -ret;
		}
	}
	return 0;
}

static inline void verbs_loop_close(struct verbs_loop *loop)
{
	int i;

	for (i = 0; i < 2; i++)
		if (loop->qp[i])
			ibv_destroy_qp(loop->qp[i]);
	if (loop->cq)
		ibv_destroy_cq(loop->cq);
	if (loop->pd)
		ibv_dealloc_pd(loop->pd);
	if (loop->ctx)
		ibv_close_device(loop->ctx);
	memset(loop, 0, sizeof(*loop));
}

static inline int verbs_loop_open(struct verbs_loop *loop)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = VERBS_LOOP_DEPTH, .max_recv_wr = VERBS_LOOP_DEPTH,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_port_attr port;
	struct ibv_device **list;
	int count = 0, ret;

	memset(loop, 0, sizeof(*loop));
	loop->timeout_ns = VERBS_LOOP_TIMEOUT_NS;
	list = ibv_get_device_list(&count);
	if (!list || count <= 0) {
		if (list)
			ibv_free_device_list(list);
		return -ENODEV;
	}
	loop->ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	ret = errno ? -errno : -EIO;
	if (!loop->ctx)
		goto fail;
	ret = -ibv_query_port(loop->ctx, VERBS_LOOP_PORT, &port);
	if (!ret && port.state != IBV_PORT_ACTIVE)
		ret = -ENETDOWN;
	if (ret)
		goto fail;
	loop->mtu = port.active_mtu;
	ret = verbs_loop_pick_gid(loop, port.gid_tbl_len);
	if (ret)
		goto fail;

	ret = -ENOMEM;
	loop->pd = ibv_alloc_pd(loop->ctx);
	loop->cq = loop->pd ? ibv_create_cq(loop->ctx, 2 * VERBS_LOOP_DEPTH, NULL, NULL, 0) : NULL;
	init.send_cq = init.recv_cq = loop->cq;
	loop->qp[0] = loop->cq ? ibv_create_qp(loop->pd, &init) : NULL;
	loop->qp[1] = loop->qp[0] ? ibv_create_qp(loop->pd, &init) : NULL;
	if (loop->qp[1])
		ret = verbs_loop_connect(loop);
	if (ret)
		goto fail;
	return 0;
fail:
	verbs_loop_close(loop);
	return ret;
}

/*
 * RDMA WRITE @len bytes from @src (in the MR of @lkey) to @dst (in the MR
 * of @rkey) and wait for its completion: once the requester has it, rxe's
 * responder has placed the data.  -EIO on an error completion (the QPs are
 * reconnected so the next call can work), -ETIMEDOUT after loop->timeout_ns.
 */
static inline int verbs_loop_write(struct verbs_loop *loop, const void *src, size_t len,
				   uint32_t lkey, void *dst, uint32_t rkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)src, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = {
		.wr_id = ++loop->last_wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)dst, .rkey = rkey },
	};
	long long deadline = verbs_loop_now_ns() + loop->timeout_ns;
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	int n, ret;

	if (len > UINT32_MAX)
		return -EINVAL;
	ret = ibv_post_send(loop->qp[0], &wr, &bad);
	if (ret)
		return -ret;
	for (;;) {
		n = ibv_poll_cq(loop->cq, 1, &wc);
		if (n < 0)
			return -EIO;
		if (n == 1 && wc.wr_id == wr.wr_id)
			break;
		if (n == 0 && verbs_loop_now_ns() > deadline)
			return -ETIMEDOUT;
		/* rxe works in kernel threads: leave them the CPU (no sleep). */
		sched_yield();
	}
	loop->last_status = wc.status;
	if (wc.status == IBV_WC_SUCCESS)
		return 0;
	/* An error moved the QPs to ERROR: drain and start them over. */
	while (ibv_poll_cq(loop->cq, 1, &wc) > 0)
		;
	ret = verbs_loop_connect(loop);
	return ret ? ret : -EIO;
}

#endif /* VERBS_LOOP_H */
