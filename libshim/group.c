// SPDX-License-Identifier: MIT
/*
 * group.c - barriers across nodes: a dissemination barrier over zcx
 * connections.
 *
 * With n members, a barrier is ceil(log2 n) rounds; in round k, member r
 * sends a zero-byte message to member r + 2^k and waits for the one of
 * member r - 2^k (mod n).  After the last round every member has heard,
 * directly or not, from every other.
 *
 * Each round has an endpoint of its own ("inbox" k): the partner sending
 * to it is its only sender, so the receive waiting there fails
 * (ECONNRESET) as soon as that partner goes, and one posted after it went
 * fails at once (ZCX_SQE_CONNECTED; only the first, posted before the
 * partner may have connected, goes without).  The receive for the next
 * barrier is posted, and flushed to the module, as soon as the last one
 * completed, so that the partner's death finds it there.  A member whose
 * barrier failed destroys its inboxes, which fails its own partners'
 * waits in turn, so that a member's death reaches every member still
 * waiting instead of leaving some of them waiting for each other.  A
 * member that heard from every other is through even if a send of its
 * failed (its partner may have got through and left), and breaks the
 * group then.  The tag of each message is the barrier's number, so that
 * no message of another barrier counts for this one (a peer that runs
 * another barrier leaves its partners waiting, as in MPI).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "zcx_internal.h"


struct zcx_group_inbox {
	struct zcx_ep *ep;
	uint32_t peer;			/* connection to member rank + 2^k */
	struct zcx_req recv;		/* the next barrier's, posted */
	struct zcx_req send;
};

struct zcx_group {
	uint32_t nprocs;
	uint32_t rank;
	uint32_t rounds;
	bool connected;
	int broken;			/* 0, or what every call returns now */
	uint64_t epoch;			/* barriers done */
	struct zcx_group_inbox inbox[];
};

ZCX_EXPORT unsigned int zcx_group_addr_count(uint32_t nprocs)
{
	unsigned int rounds = 0;

	while (rounds < 32 && (1ULL << rounds) < nprocs)
		rounds++;
	return rounds;
}

static void zcx_group_close_inboxes(struct zcx_group *g)
{
	uint32_t k;

	for (k = 0; k < g->rounds; k++) {
		zcx_ep_destroy(g->inbox[k].ep);
		g->inbox[k].ep = NULL;
	}
}

ZCX_EXPORT int zcx_group_create(struct zcx *zcx, uint32_t nprocs, uint32_t rank,
				unsigned int ep_flags, struct zcx_group **out)
{
	unsigned int rounds = zcx_group_addr_count(nprocs);
	struct zcx_group *g;
	uint32_t k;
	int ret;

	if (!nprocs || nprocs > ZCX_GROUP_MAX_PROCS || rank >= nprocs)
		return -EINVAL;
	g = calloc(1, sizeof(*g) + rounds * sizeof(g->inbox[0]));
	if (!g)
		return -ENOMEM;
	g->nprocs = nprocs;
	g->rank = rank;
	g->rounds = rounds;
	for (k = 0; k < rounds; k++) {
		/* Two sends and two receives at most are outstanding on one. */
		ret = zcx_ep_create(zcx, ep_flags, 8, &g->inbox[k].ep);
		if (ret) {
			zcx_group_close_inboxes(g);
			free(g);
			return ret;
		}
	}
	*out = g;
	return 0;
}

ZCX_EXPORT void zcx_group_addrs(const struct zcx_group *g, struct zcx_addr *addrs)
{
	uint32_t k;

	/* A broken group's endpoints are gone: addresses of nothing (all zero). */
	for (k = 0; k < g->rounds; k++) {
		if (g->inbox[k].ep)
			zcx_ep_addr(g->inbox[k].ep, &addrs[k]);
		else
			memset(&addrs[k], 0, sizeof(addrs[k]));
	}
}

/* Post round @k's receive for barrier number @epoch, in the module at once. */
static int zcx_group_post(struct zcx_group *g, uint32_t k, uint64_t epoch)
{
	struct zcx_group_inbox *in = &g->inbox[k];
	int ret;

	memset(&in->recv, 0, sizeof(in->recv));
	ret = zcx_irecv_flags(in->ep, NULL, 0, epoch, ~0ULL, epoch ? ZCX_SQE_CONNECTED : 0,
			      &in->recv);
	return ret ? ret : zcx_ep_flush(in->ep);
}

/* The group cannot go on: fail our partners' waits too. */
static int zcx_group_break(struct zcx_group *g, int err)
{
	g->broken = err;
	zcx_group_close_inboxes(g);
	return err;
}

ZCX_EXPORT int zcx_group_connect(struct zcx_group *g, const struct zcx_addr *all,
				 unsigned int flags)
{
	uint32_t k, to;
	int ret;

	if (g->broken)
		return g->broken;
	if (g->connected)
		return -EISCONN;
	for (k = 0; k < g->rounds; k++) {
		to = (uint32_t)((g->rank + (1ULL << k)) % g->nprocs);
		ret = zcx_ep_connect_flags(g->inbox[k].ep, &all[(size_t)to * g->rounds + k],
					   flags, &g->inbox[k].peer);
		if (!ret)
			ret = zcx_group_post(g, k, 0);
		if (ret)
			return zcx_group_break(g, ret);
	}
	g->connected = true;
	return 0;
}

ZCX_EXPORT int zcx_group_barrier(struct zcx_group *g)
{
	uint64_t epoch = g->epoch;
	struct zcx_group_inbox *in;
	int ret, err;
	uint32_t k;

	if (g->broken)
		return g->broken;
	if (!g->connected)
		return g->rounds ? -ENOTCONN : 0;
	for (k = 0; k < g->rounds; k++) {
		in = &g->inbox[k];
		memset(&in->send, 0, sizeof(in->send));
		ret = zcx_isend(in->ep, in->peer, NULL, 0, epoch, &in->send);
		if (!ret)
			ret = zcx_wait(in->ep, &in->recv);
		if (!ret)
			ret = zcx_group_post(g, k, epoch + 1);
		if (ret)
			return zcx_group_break(g, ret);
	}
	/*
	 * We heard from every member: this barrier is done whatever became
	 * of our sends.  One that failed says only that the connection to
	 * its partner broke: the partner may have got through and left
	 * (across nodes, the acknowledgement of our message can come after
	 * that), or it still waits for the message, and fails when we break
	 * the group.  The next barrier cannot complete, so the group breaks
	 * now, every send ended.
	 */
	err = 0;
	for (k = 0; k < g->rounds; k++) {
		ret = zcx_wait(g->inbox[k].ep, &g->inbox[k].send);
		if (ret && !err)
			err = ret;
	}
	if (err)
		zcx_group_break(g, err);
	g->epoch++;
	return 0;
}

ZCX_EXPORT void zcx_group_destroy(struct zcx_group *g)
{
	if (!g)
		return;
	zcx_group_close_inboxes(g);
	free(g);
}
