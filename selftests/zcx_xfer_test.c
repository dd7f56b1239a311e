// SPDX-License-Identifier: GPL-2.0-only
/*
 * zcx_xfer_test - transfers between two processes, end to end: tagged
 * messages of every size class at unaligned offsets checked on both
 * sides, many in flight with tags out of order, the unexpected-message
 * path, flow control under a slow receiver, truncation, several sending
 * threads, put/get with their bounds and rights, and the stale-
 * registration regression (memory replaced at the same address between
 * two transfers must be what the next transfer moves).  Every data test
 * runs with endpoints in enter mode (doorbell ioctl) and in polling mode
 * (ZCX_EP_POLL).
 *
 * Each process opens its own handle after fork(); the processes swap
 * endpoint addresses through pipes and connect both ways.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>

#include "kselftest_harness.h"
#include "zcx_net.h"
#include "zcx_test.h"
#include "zcx_xfer.h"

#define KiB		1024UL
#define MiB		(1024 * KiB)
#define GUARD		64
#define SLACK		(16 * KiB)	/* room for offsets and guards */

FIXTURE(xfer) {
	struct zcx_test_census before;
};

FIXTURE_VARIANT(xfer) {
	unsigned int ep_flags;
	bool net;
};

/* The doorbell: every submission goes through ZCX_IOC_ENTER. */
FIXTURE_VARIANT_ADD(xfer, enter) {
	.ep_flags = 0,
};

/* A kernel thread takes submissions. */
FIXTURE_VARIANT_ADD(xfer, poll) {
	.ep_flags = ZCX_EP_POLL,
};

/*
 * Between "nodes": through zcx_ib.ko's RDMA queue pairs on Soft-RoCE
 * (zcx_net.h), inline SENDs up to 8192 bytes and RDMA READ rendezvous above.
 */
FIXTURE_VARIANT_ADD(xfer, net) {
	.ep_flags = ZCX_EP_NET,
	.net = true,
};

/*
 * No polling variant over the network: in a 2-vCPU emulated guest the
 * polling threads starve Soft-RoCE's own processing until an ACK outlasts
 * the transport timeout, and rxe's retransmission then replays the
 * registrations queued behind it, which fail (see kmod/ib/xfer.c).
 */

FIXTURE_SETUP(xfer)
{
	/* First: the teardown compares with it even after a skip. */
	self->before = zcx_test_census();
	if (variant->net) {
		ZCX_NET_FIXTURE_UP();
		xconnect_flags = ZCX_CONNECT_NET;
	}
}

FIXTURE_TEARDOWN(xfer)
{
	/* Both contexts are closed; unpinning may still be under way. */
	const char *leaked = zcx_test_census_settle(&self->before, 5000);

	EXPECT_EQ(NULL, leaked) TH_LOG("%s not back where the test began", leaked);
	if (variant->net)
		ZCX_NET_FIXTURE_DOWN();
}

/* What does not go between nodes yet, or means something else there. */
#define SKIP_ON_NET(why) do {				\
	if (variant->net)				\
		SKIP(return, "between nodes: %s", why);	\
} while (0)

TEST(feature)
{
	struct zcx_query q;
	struct zcx *zcx;

	ASSERT_EQ(0, zcx_open(&zcx, 0));
	ASSERT_EQ(0, zcx_query(zcx, &q));
	EXPECT_TRUE(q.features & ZCX_FEATURE_TRANSPORT);
	EXPECT_LT(0, q.eager_credits);
	EXPECT_LT(0, q.max_endpoints);
	EXPECT_LT(0, q.zcopy_threshold);
	zcx_close(zcx);
}

/*
 * Data integrity: every size class (and over the network, both sides of
 * its inline limit, 8 KiB), both directions.  The parent sends
 * each message from an odd offset; the child receives it into a buffer of
 * exactly its size at another unaligned offset, between guard bytes,
 * checks it, and sends it back from there; the parent checks the echo.
 * Even sizes have the receive posted before the send, odd ones after.
 */
static const size_t sizes[] = {
	0, 1, 7, 4095, 4096, 4097, 8192, 8193, 64 * KiB + 3, 1 * MiB, 16 * MiB,
};
#define NSIZES		(sizeof(sizes) / sizeof(sizes[0]))
#define BIG		(16 * MiB)

static size_t send_off(unsigned int i) { return 1 + 2 * i; }
static size_t recv_off(unsigned int i) { return GUARD + 3 + 5 * i; }
static size_t echo_off(unsigned int i) { return GUARD + 5 + 7 * i; }
static uint64_t size_seed(unsigned int i) { return 0x1000 + i; }

static int integrity_child(struct xside *s, void *arg)
{
	char *rbuf = zcx_test_anon(BIG + SLACK);
	unsigned int i;

	(void)arg;
	CK(rbuf);
	for (i = 0; i < NSIZES; i++) {
		size_t len = sizes[i];
		char *p = rbuf + recv_off(i);

		memset(p - GUARD, 0xa5, len + 2 * GUARD);
		if (i % 2 == 0) {
			struct zcx_req req = xreq(NULL);

			CK_EQ(0, zcx_irecv(s->ep, p, len, i, ~0ULL, &req));
			CK_EQ(0, xflush(s->ep, &req));
			CK_EQ(0, xsend_u64(s, i));
			CK_EQ(0, zcx_wait(s->ep, &req));
			CK_EQ(0, req.status);
			CK_EQ(len, req.len);
			CK_EQ(i, req.tag);
		} else {
			uint64_t tag = ~0ULL;

			CK_EQ(0, xexpect_u64(s, i));
			CK_EQ(len, zcx_recv(s->ep, p, len, i, ~0ULL, &tag));
			CK_EQ(i, tag);
		}
		CK_PAT(p, len, size_seed(i));
		CK(xall(p - GUARD, GUARD, 0xa5));
		CK(xall(p + len, GUARD, 0xa5));
		CK_EQ(0, zcx_send(s->ep, s->peer, p, len, 1000 + i));
	}
	munmap(rbuf, BIG + SLACK);
	return 0;
}

static int integrity_parent(struct xside *s, void *arg)
{
	char *sbuf = zcx_test_anon(BIG + SLACK), *ebuf = zcx_test_anon(BIG + SLACK);
	unsigned int i;

	(void)arg;
	CK(sbuf && ebuf);
	for (i = 0; i < NSIZES; i++) {
		size_t len = sizes[i];
		char *p = sbuf + send_off(i), *e = ebuf + echo_off(i);
		uint64_t tag = ~0ULL;

		xpat_fill(p, len, size_seed(i));
		if (i % 2 == 0) {
			CK_EQ(0, xexpect_u64(s, i));
			CK_EQ(0, zcx_send(s->ep, s->peer, p, len, i));
		} else {
			struct zcx_req req = xreq(NULL);

			CK_EQ(0, zcx_isend(s->ep, s->peer, p, len, i, &req));
			CK_EQ(0, xsend_u64(s, i));
			CK_EQ(0, zcx_wait(s->ep, &req));
			CK_EQ(0, req.status);
		}
		memset(e - GUARD, 0x5a, len + 2 * GUARD);
		CK_EQ(len, zcx_recv(s->ep, e, len, 1000 + i, ~0ULL, &tag));
		CK_EQ(1000 + i, tag);
		CK_PAT(e, len, size_seed(i));
		CK(xall(e - GUARD, GUARD, 0x5a));
		CK(xall(e + len, GUARD, 0x5a));
		/* The sender's buffer is untouched by its own send. */
		CK_PAT(p, len, size_seed(i));
	}
	munmap(sbuf, BIG + SLACK);
	munmap(ebuf, BIG + SLACK);
	return 0;
}

TEST_F_TIMEOUT(xfer, integrity_all_sizes, 120)
{
	EXPECT_EQ(0, xrun_pair(variant->ep_flags, 0, integrity_parent, integrity_child, NULL));
}

/*
 * Many messages in flight, tags out of order: the child posts receives
 * for the odd tags (highest first), the parent sends all tags in order,
 * then the child posts the even ones (highest first) and waits for all
 * in a scrambled order.  Every fourth message is above the zero-copy
 * threshold.  Each receive must get exactly its tag's message.
 */
#define OOO_N		64
#define OOO_SLOT	(128 * KiB)

static size_t ooo_len(unsigned int t) { return t % 4 == 0 ? 64 * KiB + t : 1 + t * 13; }
static uint64_t ooo_seed(unsigned int t) { return 0xa000 + t; }

static int ooo_child(struct xside *s, void *arg)
{
	struct zcx_req req[OOO_N];
	char *rb = zcx_test_anon(OOO_N * OOO_SLOT);
	unsigned int j;
	int t;

	(void)arg;
	CK(rb);
	for (t = OOO_N - 1; t >= 0; t--) {
		req[t] = xreq(NULL);
		if (t % 2)
			CK_EQ(0, zcx_irecv(s->ep, rb + t * OOO_SLOT + 1, ooo_len(t), t, ~0ULL, &req[t]));
	}
	CK_EQ(0, xflush(s->ep, &req[1]));
	CK_EQ(0, xsend_u64(s, 1));
	CK_EQ(0, xexpect_u64(s, 2));
	for (t = OOO_N - 1; t >= 0; t--)
		if (t % 2 == 0)
			CK_EQ(0, zcx_irecv(s->ep, rb + t * OOO_SLOT + 1, ooo_len(t), t, ~0ULL, &req[t]));
	for (j = 0; j < OOO_N; j++) {
		t = (j * 37 + 11) % OOO_N;
		CK_EQ(0, zcx_wait(s->ep, &req[t]));
		CK_EQ(0, req[t].status);
		CK_EQ(t, req[t].tag);
		CK_EQ(ooo_len(t), req[t].len);
		CK_PAT(rb + t * OOO_SLOT + 1, ooo_len(t), ooo_seed(t));
	}
	CK_EQ(0, xsend_u64(s, 3));
	munmap(rb, OOO_N * OOO_SLOT);
	return 0;
}

static int ooo_parent(struct xside *s, void *arg)
{
	struct zcx_req req[OOO_N];
	char *sb = zcx_test_anon(OOO_N * OOO_SLOT);
	unsigned int t;

	(void)arg;
	CK(sb);
	for (t = 0; t < OOO_N; t++)
		xpat_fill(sb + t * OOO_SLOT + 3, ooo_len(t), ooo_seed(t));
	CK_EQ(0, xexpect_u64(s, 1));
	for (t = 0; t < OOO_N; t++) {
		req[t] = xreq(NULL);
		CK_EQ(0, zcx_isend(s->ep, s->peer, sb + t * OOO_SLOT + 3, ooo_len(t), t, &req[t]));
	}
	CK_EQ(0, xsend_u64(s, 2));
	for (t = 0; t < OOO_N; t++) {
		CK_EQ(0, zcx_wait(s->ep, &req[t]));
		CK_EQ(0, req[t].status);
	}
	CK_EQ(0, xexpect_u64(s, 3));
	munmap(sb, OOO_N * OOO_SLOT);
	return 0;
}

TEST_F_TIMEOUT(xfer, many_in_flight_out_of_order_tags, 60)
{
	EXPECT_EQ(0, xrun_pair(variant->ep_flags, 0, ooo_parent, ooo_child, NULL));
}

/*
 * Unexpected messages: sent before any receive is posted.  A small one
 * is buffered and its send completes with nobody receiving; a large one
 * waits for the receiver.  The child then receives them in an order
 * other than the sending one.
 */
#define UNEXP_BIG	(256 * KiB + 5)

static int unexpected_child(struct xside *s, void *arg)
{
	char *b = zcx_test_anon(UNEXP_BIG + 2 * GUARD);
	uint64_t tag;

	(void)arg;
	CK(b);
	CK_EQ(0, xexpect_u64(s, 1));
	CK_EQ(UNEXP_BIG, zcx_recv(s->ep, b + 1, UNEXP_BIG, 2, ~0ULL, &tag));
	CK_EQ(2, tag);
	CK_PAT(b + 1, UNEXP_BIG, 0xb002);
	CK_EQ(100, zcx_recv(s->ep, b + 3, 100, 3, ~0ULL, &tag));
	CK_PAT(b + 3, 100, 0xb003);
	/* Any tag: the only message left. */
	CK_EQ(100, zcx_recv(s->ep, b + 5, UNEXP_BIG, 0, 0, &tag));
	CK_EQ(1, tag);
	CK_PAT(b + 5, 100, 0xb001);
	CK_EQ(0, xsend_u64(s, 2));
	munmap(b, UNEXP_BIG + 2 * GUARD);
	return 0;
}

static int unexpected_parent(struct xside *s, void *arg)
{
	struct zcx_req small = xreq(NULL), big = xreq(NULL), small2 = xreq(NULL);
	char *b = zcx_test_anon(3 * (UNEXP_BIG + GUARD));
	char *p1 = b + 7, *p2 = b + UNEXP_BIG + GUARD + 9, *p3 = b + 2 * (UNEXP_BIG + GUARD) + 11;

	(void)arg;
	CK(b);
	CK(UNEXP_BIG >= s->q.zcopy_threshold);
	CK(100 < s->q.zcopy_threshold);
	xpat_fill(p1, 100, 0xb001);
	xpat_fill(p2, UNEXP_BIG, 0xb002);
	xpat_fill(p3, 100, 0xb003);
	CK_EQ(0, zcx_isend(s->ep, s->peer, p1, 100, 1, &small));
	/* Buffered at the receiver, nobody receiving: done. */
	CK_EQ(0, xwait_bounded(s->ep, &small, 20000));
	CK_EQ(0, zcx_isend(s->ep, s->peer, p2, UNEXP_BIG, 2, &big));
	CK_EQ(0, zcx_isend(s->ep, s->peer, p3, 100, 3, &small2));
	/* The large one needs the receiver, who has posted nothing yet. */
	CK_EQ(0, zcx_test(s->ep, &big));
	CK_EQ(0, xsend_u64(s, 1));
	CK_EQ(0, zcx_wait(s->ep, &big));
	CK_EQ(0, big.status);
	CK_EQ(0, zcx_wait(s->ep, &small2));
	CK_EQ(0, small2.status);
	CK_EQ(0, xexpect_u64(s, 2));
	munmap(b, 3 * (UNEXP_BIG + GUARD));
	return 0;
}

TEST_F_TIMEOUT(xfer, unexpected_messages, 60)
{
	EXPECT_EQ(0, xrun_pair(variant->ep_flags, 0, unexpected_parent, unexpected_child, NULL));
}

/*
 * Unexpected messages never hold up a later one: the parent sends far more
 * small messages (tag 1) than a node's eager credits and a connection's
 * network buffers, then more large ones (tag 2) than those buffers (and,
 * between nodes, than the answers a receiver may have out before the
 * sender says it took them, and than the entries of a send queue), then
 * one small message (tag 3).  The child receives tag 3 first, within a
 * bound, and only then the others, each tag in order.  (In MPI terms:
 * nonblocking sends must complete whatever order the receives come in.)
 * The first small ones, as many as are buffered at the receiver whoever
 * receives, complete before the rest are sent.  Between nodes, the
 * receiver holds at most 24 (then copies the messages out of its buffers
 * and tells the sender, which sends the next as rendezvous messages).
 */
#define FLOOD_SMALL_LEN	100

/* @big_len: the large ones', each in a slot of flood_slot() bytes. */
struct flood {
	unsigned int small, first, big;
	size_t big_len;
};

static size_t flood_slot(const struct flood *f) { return f->big_len + GUARD; }

static uint64_t flood_seed(unsigned int tag, unsigned int i) { return 0xf000 + (tag << 12) + i; }

static int flood_child(struct xside *s, void *arg)
{
	const struct flood *f = arg;
	unsigned int n = f->small + f->big, i;
	struct zcx_req last = xreq(NULL), *req = calloc(n, sizeof(*req));
	size_t slot = flood_slot(f);
	char *b = zcx_test_anon((size_t)(n + 1) * slot);

	CK(req && b);
	CK_EQ(0, xexpect_u64(s, 1));
	CK_EQ(0, zcx_irecv(s->ep, b + 1, FLOOD_SMALL_LEN, 3, ~0ULL, &last));
	/* Behind more than a thousand messages: longer on a slow guest. */
	CK_EQ(0, xwait_bounded(s->ep, &last, 30000 * (zcx_test_slowdown() > 1 ? 3 : 1)));
	CK_EQ(FLOOD_SMALL_LEN, last.len);
	CK_PAT(b + 1, FLOOD_SMALL_LEN, flood_seed(3, 0));
	/* All the others at once: their answers go back to the sender together. */
	for (i = 0; i < n; i++) {
		req[i] = xreq(NULL);
		CK_EQ(0, zcx_irecv(s->ep, b + (size_t)(i + 1) * slot + 1, slot - 1,
				   i < f->small ? 1 : 2, ~0ULL, &req[i]));
	}
	for (i = 0; i < n; i++) {
		bool small = i < f->small;
		char *p = b + (size_t)(i + 1) * slot + 1;

		CK_EQ(0, zcx_wait(s->ep, &req[i]));
		CK_EQ(small ? 1 : 2, req[i].tag);
		CK_EQ(small ? FLOOD_SMALL_LEN : f->big_len, req[i].len);
		CK_PAT(p, req[i].len, flood_seed(req[i].tag, small ? i : i - f->small));
	}
	free(req);
	munmap(b, (size_t)(n + 1) * slot);
	return 0;
}

static int flood_parent(struct xside *s, void *arg)
{
	const struct flood *f = arg;
	unsigned int n = f->small + f->big + 1, i, k;
	struct zcx_req *req = calloc(n, sizeof(*req));
	size_t slot = flood_slot(f);
	char *b = zcx_test_anon((size_t)n * slot);
	char *p;

	CK(req && b);
	CK(FLOOD_SMALL_LEN < s->q.zcopy_threshold);
	for (i = 0; i < n; i++) {
		unsigned int tag = i < f->small ? 1 : i < n - 1 ? 2 : 3;
		size_t len = tag == 2 ? f->big_len : FLOOD_SMALL_LEN;

		p = b + (size_t)i * slot + 5;
		xpat_fill(p, len, flood_seed(tag, tag == 1 ? i : tag == 2 ? i - f->small : 0));
		req[i] = xreq(NULL);
		CK_EQ(0, zcx_isend(s->ep, s->peer, p, len, tag, &req[i]));
		if (i + 1 != f->first)
			continue;
		/* Buffered at the receiver, nobody receiving: done. */
		for (k = 0; k < f->first; k++)
			CK_EQ(0, xwait_bounded(s->ep, &req[k], 20000));
	}
	CK_EQ(0, xsend_u64(s, 1));
	for (i = 0; i < n; i++) {
		CK_EQ(0, zcx_wait(s->ep, &req[i]));
		CK_EQ(0, req[i].status);
	}
	free(req);
	munmap(b, (size_t)n * slot);
	return 0;
}

TEST_F_TIMEOUT(xfer, unexpected_flood_holds_up_no_later_message, 120)
{
	/*
	 * A connection's network buffers, those it holds, the FINs its
	 * receiver may have out, its send queue, and the longest inline
	 * message: zcx_ib.h's.
	 */
	const unsigned int net_buffers = 32, net_held = 24, net_fins = 128, net_sq = 1024;
	const size_t net_inline = 8192;
	struct zcx_query q;
	struct zcx *zcx;
	struct flood f;
	unsigned int depth = 1;

	ASSERT_EQ(0, zcx_open(&zcx, 0));
	ASSERT_EQ(0, zcx_query(zcx, &q));
	zcx_close(zcx);
	f.small = 2 * (variant->net ? net_buffers : q.eager_credits) + 8;
	f.first = q.eager_credits < net_held ? q.eager_credits : net_held;
	f.big = variant->net ? net_sq + net_fins / 2 : net_buffers + 8;
	/* Past the largest zcopy_threshold on a node; short, for so many, between nodes. */
	f.big_len = variant->net ? 8 * KiB + 3 : 64 * KiB + 3;
	ASSERT_LT(variant->net ? net_inline : q.zcopy_threshold - 1, f.big_len);
	/* Room in the rings for every message at once. */
	while (depth < f.small + f.big + 16)
		depth <<= 1;
	ASSERT_GE(32768, depth) TH_LOG("eager_credits %u too large for one ring", q.eager_credits);
	if (depth < q.ring_depth)
		depth = 0;
	EXPECT_EQ(0, xrun_pair(variant->ep_flags, depth, flood_parent, flood_child, &f));
}

/*
 * Flow control under a slow receiver: the parent sends far more small
 * messages (one tag) than eager_credits before the child posts anything.
 * The first eager_credits complete at once (buffered); the rest must not
 * complete while the child receives nothing (they wait for it: a
 * rendezvous, not a buffer that grows, and not a loss).  Then the child
 * receives them all, in order, and every send completes.
 */
#define FLOW_SLOT	256

static size_t flow_len(unsigned int i) { return 1 + (i * 29) % (FLOW_SLOT - 1); }
static uint64_t flow_seed(unsigned int i) { return 0x9000 + i; }

struct flow {
	unsigned int credits, n;
};

static int flow_child(struct xside *s, void *arg)
{
	struct flow *f = arg;
	struct zcx_req extra = xreq(NULL);
	char buf[FLOW_SLOT];
	unsigned int i;

	CK_EQ(0, xexpect_u64(s, 1));
	for (i = 0; i < f->n; i++) {
		uint64_t tag = 0;

		memset(buf, 0, sizeof(buf));
		CK_EQ(flow_len(i), zcx_recv(s->ep, buf, sizeof(buf), 7, ~0ULL, &tag));
		CK_EQ(7, tag);
		CK_PAT(buf, flow_len(i), flow_seed(i));
	}
	/* Nothing more was sent: nothing more arrives. */
	CK_EQ(0, zcx_irecv(s->ep, buf, sizeof(buf), 0, 0, &extra));
	CK_EQ(0, xsend_u64(s, 2));
	CK_EQ(0, xexpect_u64(s, 3));
	/* The parent may be gone already, which fails the receive instead. */
	if (zcx_test(s->ep, &extra))
		CK_EQ(-ECONNRESET, extra.status);
	return 0;
}

static int flow_parent(struct xside *s, void *arg)
{
	struct flow *f = arg;
	struct zcx_req *req = calloc(f->n, sizeof(*req));
	char *b = zcx_test_anon((size_t)f->n * FLOW_SLOT);
	unsigned int i, early = 0;

	CK(req && b);
	CK(FLOW_SLOT < s->q.zcopy_threshold);
	CK_EQ(f->credits, s->q.eager_credits);
	for (i = 0; i < f->n; i++) {
		xpat_fill(b + i * FLOW_SLOT, flow_len(i), flow_seed(i));
		req[i] = xreq(NULL);
		CK_EQ(0, zcx_isend(s->ep, s->peer, b + i * FLOW_SLOT, flow_len(i), 7, &req[i]));
	}
	/* Within the credits: buffered at the receiver, complete. */
	for (i = 0; i < f->credits; i++)
		CK_EQ(0, xwait_bounded(s->ep, &req[i], 20000));
	/* Beyond them: waiting for the receiver, who has posted nothing. */
	for (i = f->credits; i < f->n; i++)
		early += zcx_test(s->ep, &req[i]) != 0;
	for (i = f->credits; i < f->n; i++)
		early += zcx_test(s->ep, &req[i]) != 0;
	CK_EQ(0, early);
	CK_EQ(0, xsend_u64(s, 1));
	for (i = f->credits; i < f->n; i++) {
		CK_EQ(0, zcx_wait(s->ep, &req[i]));
		CK_EQ(0, req[i].status);
	}
	CK_EQ(0, xexpect_u64(s, 2));
	CK_EQ(0, xsend_u64(s, 3));
	free(req);
	munmap(b, (size_t)f->n * FLOW_SLOT);
	return 0;
}

TEST_F_TIMEOUT(xfer, flow_control_slow_receiver, 90)
{
	struct flow f;
	struct zcx_query q;
	struct zcx *zcx;
	unsigned int depth = 1;

	/* Credits are for eager messages on a node; the network has its own buffers. */
	SKIP_ON_NET("flow control is zcx_ib_test's slow_receiver_loses_nothing");
	ASSERT_EQ(0, zcx_open(&zcx, 0));
	ASSERT_EQ(0, zcx_query(zcx, &q));
	zcx_close(zcx);
	f.credits = q.eager_credits;
	f.n = 3 * f.credits + 8;
	/* Room in the rings for every message at once. */
	while (depth < f.n + 16)
		depth <<= 1;
	ASSERT_GE(32768, depth) TH_LOG("eager_credits %u too large for one ring", f.credits);
	if (depth < q.ring_depth)
		depth = 0;
	EXPECT_EQ(0, xrun_pair(variant->ep_flags, depth, flow_parent, flow_child, &f));
}

/* A message longer than the receive buffer: EMSGSIZE, the head delivered. */
static int truncate_child(struct xside *s, void *arg)
{
	struct zcx_req req = xreq(NULL);
	char *b = zcx_test_anon(16 * KiB);

	(void)arg;
	CK(b);
	memset(b, 0xa5, 16 * KiB);
	CK_EQ(0, zcx_irecv(s->ep, b + 1, 3000, 1, ~0ULL, &req));
	CK_EQ(-EMSGSIZE, zcx_wait(s->ep, &req));
	CK_EQ(-EMSGSIZE, req.status);
	CK_EQ(3000, req.len);
	CK_PAT(b + 1, 3000, 0xc001);
	CK(xall(b + 3001, 16 * KiB - 3001, 0xa5));
	memset(b, 0xa5, 16 * KiB);
	req = xreq(NULL);
	CK_EQ(0, zcx_irecv(s->ep, b + 1, 50, 2, ~0ULL, &req));
	CK_EQ(-EMSGSIZE, zcx_wait(s->ep, &req));
	CK_EQ(50, req.len);
	CK_PAT(b + 1, 50, 0xc002);
	CK(xall(b + 51, 16 * KiB - 51, 0xa5));
	/* The connection still works afterwards. */
	CK_EQ(10, zcx_recv(s->ep, b + 1, 100, 3, ~0ULL, NULL));
	CK_PAT(b + 1, 10, 0xc003);
	return 0;
}

static int truncate_parent(struct xside *s, void *arg)
{
	char *b = zcx_test_anon(16 * KiB);
	struct zcx_req big = xreq(NULL), small = xreq(NULL);

	(void)arg;
	CK(b);
	xpat_fill(b + 3, 10000, 0xc001);
	xpat_fill(b + 12000, 100, 0xc002);
	xpat_fill(b + 13000, 10, 0xc003);
	CK_EQ(0, zcx_isend(s->ep, s->peer, b + 3, 10000, 1, &big));
	CK_EQ(0, zcx_isend(s->ep, s->peer, b + 12000, 100, 2, &small));
	/* Truncated at the receiver, a send still completes with 0. */
	CK_EQ(0, zcx_wait(s->ep, &big));
	CK_EQ(0, zcx_wait(s->ep, &small));
	CK_EQ(0, zcx_send(s->ep, s->peer, b + 13000, 10, 3));
	return 0;
}

TEST_F_TIMEOUT(xfer, truncation_emsgsize, 120)
{
	EXPECT_EQ(0, xrun_pair(variant->ep_flags, 0, truncate_parent, truncate_child, NULL));
}

/*
 * Several threads send on one endpoint, over one connection, each its own
 * numbered sequence (tag = thread << 32 | number), half with zcx_send(),
 * half with a window of zcx_isend()s.  The child receives any tag and
 * checks that each thread's messages arrive complete and in order.
 */
#define MT_THREADS	4
#define MT_MSGS		150
#define MT_WINDOW	4
#define MT_MAX		(24 * KiB)

static size_t mt_len(unsigned int t, unsigned int n)
{
	return n % 7 == 3 ? 20 * KiB + t * 100 + n : 1 + (n * 37 + t) % 2000;
}

static uint64_t mt_tag(unsigned int t, unsigned int n) { return (uint64_t)t << 32 | n; }

struct mt_thread {
	struct xside *s;
	unsigned int t;
	int ret;
	pthread_t thread;
};

static int mt_send(struct mt_thread *m)
{
	char *b = zcx_test_anon(MT_WINDOW * MT_MAX);
	struct zcx_req req[MT_WINDOW];
	unsigned int n;

	CK(b);
	for (n = 0; n < MT_MSGS; n++) {
		unsigned int w = n % MT_WINDOW;
		char *p = b + w * MT_MAX;

		if (m->t % 2 == 0) {
			xpat_fill(p, mt_len(m->t, n), mt_tag(m->t, n));
			CK_EQ(0, zcx_send(m->s->ep, m->s->peer, p, mt_len(m->t, n), mt_tag(m->t, n)));
			continue;
		}
		if (n >= MT_WINDOW)
			CK_EQ(0, zcx_wait(m->s->ep, &req[w]));
		xpat_fill(p, mt_len(m->t, n), mt_tag(m->t, n));
		req[w] = xreq(NULL);
		CK_EQ(0, zcx_isend(m->s->ep, m->s->peer, p, mt_len(m->t, n), mt_tag(m->t, n), &req[w]));
	}
	if (m->t % 2)
		for (n = 0; n < MT_WINDOW; n++)
			CK_EQ(0, zcx_wait(m->s->ep, &req[n]));
	munmap(b, MT_WINDOW * MT_MAX);
	return 0;
}

static void *mt_thread_fn(void *arg)
{
	struct mt_thread *m = arg;

	m->ret = mt_send(m);
	return NULL;
}

static int mt_parent(struct xside *s, void *arg)
{
	struct mt_thread m[MT_THREADS];
	unsigned int t;
	int ret = 0;

	(void)arg;
	for (t = 0; t < MT_THREADS; t++) {
		m[t] = (struct mt_thread){ .s = s, .t = t };
		CK_EQ(0, pthread_create(&m[t].thread, NULL, mt_thread_fn, &m[t]));
	}
	for (t = 0; t < MT_THREADS; t++) {
		CK_EQ(0, pthread_join(m[t].thread, NULL));
		ret |= m[t].ret;
	}
	CK_EQ(0, ret);
	CK_EQ(0, xexpect_u64(s, 1));
	return 0;
}

static int mt_child(struct xside *s, void *arg)
{
	unsigned int next[MT_THREADS] = { 0 }, i;
	char *b = zcx_test_anon(MT_MAX);

	(void)arg;
	CK(b);
	for (i = 0; i < MT_THREADS * MT_MSGS; i++) {
		uint64_t tag = ~0ULL;
		ssize_t len = zcx_recv(s->ep, b, MT_MAX, 0, 0, &tag);
		unsigned int t = tag >> 32, n = (uint32_t)tag;

		CK(len >= 0);
		CK(t < MT_THREADS);
		/* In order per thread: nothing lost, nothing overtaken. */
		CK_EQ(next[t], n);
		next[t]++;
		CK_EQ(mt_len(t, n), len);
		CK_PAT(b, len, tag);
	}
	CK_EQ(0, xsend_u64(s, 1));
	return 0;
}

TEST_F_TIMEOUT(xfer, threads_send_on_one_endpoint, 90)
{
	EXPECT_EQ(0, xrun_pair(variant->ep_flags, 0, mt_parent, mt_child, NULL));
}

/*
 * The stale-registration regression, two-sided: the parent sends from a
 * buffer and the child receives into one; between messages both replace
 * their buffer's memory at the same address (munmap + mmap, MAP_FIXED
 * over the live mapping, or madvise(MADV_DONTNEED)) and the parent writes
 * a new pattern.  The child must receive the new bytes, into its new
 * memory.  Messages 2-4 carry a zcx_mr_reg() registration in req.mr on
 * both sides: message 3 the registration made before the replacement,
 * now stale (the module must ignore it), message 4 a fresh one.
 */
enum { REMAP_MUNMAP, REMAP_FIXED, REMAP_DONTNEED };

static int remap(void *buf, size_t len, int how)
{
	switch (how) {
	case REMAP_MUNMAP:
		if (munmap(buf, len))
			return -1;
		/* fallthrough */
	case REMAP_FIXED:
		return mmap(buf, len, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == buf ? 0 : -1;
	case REMAP_DONTNEED:
		return madvise(buf, len, MADV_DONTNEED);
	}
	return -1;
}

#define STALE_MAP	(512 * KiB)
#define STALE_STEPS	5

static const size_t stale_sizes[] = { 100, 256 * KiB + 3 };

static uint64_t stale_seed(unsigned int si, unsigned int k) { return 0x5000 + si * 16 + k; }

/*
 * One side's buffer through the steps: replaced before steps 1 and 3,
 * registered at step 2, the stale registration used at step 3, a fresh
 * one at step 4.  @mrs[0] the first registration, @mrs[1] the fresh one.
 */
static int stale_step(struct xside *s, char *map, char *p, size_t len, unsigned int k,
		      int how, struct zcx_mr **mrs, struct zcx_mr **use)
{
	*use = NULL;
	if (k == 1 || k == 3)
		CK_EQ(0, remap(map, STALE_MAP, how));
	if (k == 2) {
		CK_EQ(0, zcx_mr_reg(s->zcx, p, len, ZCX_ACCESS_ALL, &mrs[0]));
		CK(zcx_mr_valid(s->zcx, mrs[0]));
	}
	if (k == 3) {
		/* Stale the moment the memory changed. */
		CK(!zcx_mr_valid(s->zcx, mrs[0]));
		*use = mrs[0];
	}
	if (k == 2)
		*use = mrs[0];
	if (k == 4) {
		CK_EQ(0, zcx_mr_reg(s->zcx, p, len, ZCX_ACCESS_ALL, &mrs[1]));
		CK(zcx_mr_valid(s->zcx, mrs[1]));
		CK(zcx_mr_handle(mrs[1]) != zcx_mr_handle(mrs[0]));
		*use = mrs[1];
	}
	return 0;
}

static int stale_send_child(struct xside *s, void *arg)
{
	int how = *(int *)arg;
	char *map = zcx_test_anon(STALE_MAP);
	unsigned int si, k;

	CK(map);
	for (si = 0; si < 2; si++) {
		struct zcx_mr *mrs[2] = { NULL, NULL }, *use;
		size_t len = stale_sizes[si];
		char *p = map + 5;

		for (k = 0; k < STALE_STEPS; k++) {
			struct zcx_req req;

			CK_EQ(0, stale_step(s, map, p, len, k, how, mrs, &use));
			req = xreq(use);
			CK_EQ(0, zcx_irecv(s->ep, p, len, si * 16 + k, ~0ULL, &req));
			CK_EQ(0, zcx_wait(s->ep, &req));
			CK_EQ(len, req.len);
			CK_PAT(p, len, stale_seed(si, k));
		}
		CK_EQ(0, zcx_mr_dereg(s->zcx, mrs[0]));
		CK_EQ(0, zcx_mr_dereg(s->zcx, mrs[1]));
	}
	CK_EQ(0, xsend_u64(s, 1));
	munmap(map, STALE_MAP);
	return 0;
}

static int stale_send_parent(struct xside *s, void *arg)
{
	int how = *(int *)arg;
	char *map = zcx_test_anon(STALE_MAP);
	unsigned int si, k;

	CK(map);
	for (si = 0; si < 2; si++) {
		struct zcx_mr *mrs[2] = { NULL, NULL }, *use;
		size_t len = stale_sizes[si];
		char *p = map + 3;

		for (k = 0; k < STALE_STEPS; k++) {
			struct zcx_req req;

			CK_EQ(0, stale_step(s, map, p, len, k, how, mrs, &use));
			xpat_fill(p, len, stale_seed(si, k));
			req = xreq(use);
			CK_EQ(0, zcx_isend(s->ep, s->peer, p, len, si * 16 + k, &req));
			CK_EQ(0, zcx_wait(s->ep, &req));
		}
		CK_EQ(0, zcx_mr_dereg(s->zcx, mrs[0]));
		CK_EQ(0, zcx_mr_dereg(s->zcx, mrs[1]));
	}
	CK_EQ(0, xexpect_u64(s, 1));
	munmap(map, STALE_MAP);
	return 0;
}

TEST_F_TIMEOUT(xfer, stale_send_munmap_mmap, 60)
{
	int how = REMAP_MUNMAP;

	EXPECT_EQ(0, xrun_pair(variant->ep_flags, 0, stale_send_parent, stale_send_child, &how));
}

TEST_F_TIMEOUT(xfer, stale_send_map_fixed, 60)
{
	int how = REMAP_FIXED;

	EXPECT_EQ(0, xrun_pair(variant->ep_flags, 0, stale_send_parent, stale_send_child, &how));
}

TEST_F_TIMEOUT(xfer, stale_send_madv_dontneed, 60)
{
	int how = REMAP_DONTNEED;

	EXPECT_EQ(0, xrun_pair(variant->ep_flags, 0, stale_send_parent, stale_send_child, &how));
}

/* What a target tells the initiator about an exposed region. */
struct exposed {
	uint64_t addr, rkey;
};

/*
 * Put and get, every size class: the parent puts a pattern at an
 * unaligned place in the child's exposed region and the child checks it
 * (and the guards around it); the child writes another pattern there and
 * the parent gets it back into a buffer between guards.
 */
static size_t remote_off(unsigned int i) { return GUARD + 9 + 3 * i; }
static uint64_t put_seed(unsigned int i) { return 0x3000 + i; }
static uint64_t get_seed(unsigned int i) { return 0x4000 + i; }

static int putget_child(struct xside *s, void *arg)
{
	char *t = zcx_test_anon(BIG + SLACK);
	struct exposed ex;
	unsigned int i;

	(void)arg;
	CK(t);
	memset(t, 0xa5, BIG + SLACK);
	ex.addr = (uintptr_t)(t + 1);
	CK_EQ(0, zcx_expose(s->zcx, t + 1, BIG + SLACK - 1, ZCX_REMOTE_ALL, &ex.rkey));
	CK_EQ(0, xwrite(s->wr, &ex, sizeof(ex)));
	for (i = 0; i < NSIZES; i++) {
		size_t len = sizes[i];
		char *p = t + 1 + remote_off(i);

		CK_EQ(0, xexpect_u64(s, i));
		CK_PAT(p, len, put_seed(i));
		CK(xall(p - GUARD, GUARD, 0xa5));
		CK(xall(p + len, GUARD, 0xa5));
		xpat_fill(p, len, get_seed(i));
		CK_EQ(0, xsend_u64(s, i));
		CK_EQ(0, xexpect_u64(s, 100 + i));
		/* Guards again: the next size's place overlaps this one's. */
		memset(p, 0xa5, len);
		CK_EQ(0, xsend_u64(s, 200 + i));
	}
	CK_EQ(0, zcx_unexpose(s->zcx, ex.rkey));
	munmap(t, BIG + SLACK);
	return 0;
}

static int putget_parent(struct xside *s, void *arg)
{
	char *src = zcx_test_anon(BIG + SLACK), *dst = zcx_test_anon(BIG + SLACK);
	struct exposed ex;
	unsigned int i;

	(void)arg;
	CK(src && dst);
	CK_EQ(0, xread(s->rd, &ex, sizeof(ex)));
	for (i = 0; i < NSIZES; i++) {
		size_t len = sizes[i];
		char *p = src + send_off(i), *d = dst + echo_off(i);
		uint64_t raddr = ex.addr + remote_off(i);

		xpat_fill(p, len, put_seed(i));
		if (i % 2) {
			CK_EQ(0, zcx_put(s->ep, s->peer, p, len, raddr, ex.rkey));
		} else {
			struct zcx_req req = xreq(NULL);

			CK_EQ(0, zcx_iput(s->ep, s->peer, p, len, raddr, ex.rkey, &req));
			CK_EQ(0, zcx_wait(s->ep, &req));
			CK_EQ(0, req.status);
			CK_EQ(len, req.len);
		}
		CK_EQ(0, xsend_u64(s, i));
		CK_EQ(0, xexpect_u64(s, i));
		memset(d - GUARD, 0x5a, len + 2 * GUARD);
		if (i % 2) {
			CK_EQ(0, zcx_get(s->ep, s->peer, d, len, raddr, ex.rkey));
		} else {
			struct zcx_req req = xreq(NULL);

			CK_EQ(0, zcx_iget(s->ep, s->peer, d, len, raddr, ex.rkey, &req));
			CK_EQ(0, zcx_wait(s->ep, &req));
			CK_EQ(0, req.status);
			CK_EQ(len, req.len);
		}
		CK_PAT(d, len, get_seed(i));
		CK(xall(d - GUARD, GUARD, 0x5a));
		CK(xall(d + len, GUARD, 0x5a));
		CK_EQ(0, xsend_u64(s, 100 + i));
		CK_EQ(0, xexpect_u64(s, 200 + i));
	}
	munmap(src, BIG + SLACK);
	munmap(dst, BIG + SLACK);
	return 0;
}

TEST_F_TIMEOUT(xfer, put_get_all_sizes, 120)
{
	EXPECT_EQ(0, xrun_pair(variant->ep_flags, 0, putget_parent, putget_child, NULL));
}

/*
 * Bounds and rights: regions exposed read-only, write-only and read-write;
 * every violation fails in the completion (req.status and the blocking
 * call's result) and leaves the target's memory alone.
 */
#define REG_LEN		(64 * KiB)

struct three_regions {
	struct exposed ro, wo, rw;
};

static int rights_child(struct xside *s, void *arg)
{
	char *m = zcx_test_anon(3 * (REG_LEN + 2 * 4096));
	char *ro, *wo, *rw;
	struct three_regions r;

	(void)arg;
	CK(m);
	ro = m + 4096 + 1;
	wo = ro + REG_LEN + 2 * 4096;
	rw = wo + REG_LEN + 2 * 4096;
	xpat_fill(ro, REG_LEN, 0xd001);
	xpat_fill(wo, REG_LEN, 0xd002);
	xpat_fill(rw, REG_LEN, 0xd003);
	CK_EQ(0, zcx_expose(s->zcx, ro, REG_LEN, ZCX_REMOTE_READ, &r.ro.rkey));
	CK_EQ(0, zcx_expose(s->zcx, wo, REG_LEN, ZCX_REMOTE_WRITE, &r.wo.rkey));
	CK_EQ(0, zcx_expose(s->zcx, rw, REG_LEN, ZCX_REMOTE_ALL, &r.rw.rkey));
	CK(r.ro.rkey != r.wo.rkey && r.wo.rkey != r.rw.rkey && r.ro.rkey != r.rw.rkey);
	r.ro.addr = (uintptr_t)ro;
	r.wo.addr = (uintptr_t)wo;
	r.rw.addr = (uintptr_t)rw;
	CK_EQ(0, xwrite(s->wr, &r, sizeof(r)));

	/* The parent tried everything but the revocation. */
	CK_EQ(0, xexpect_u64(s, 1));
	CK_PAT(ro, REG_LEN, 0xd001);
	/* The one allowed put landed: [100, 1100) of wo. */
	CK_PAT(wo, 100, 0xd002);
	CK_PAT(wo + 100, 1000, 0xd004);
	CK_PAT_AT(wo + 1100, REG_LEN - 1100, 0xd002, 1100);
	/* Nothing around rw was written by the puts rejected for bounds. */
	CK(xall(rw - 4095, 4095, 0) && xall(rw + REG_LEN, 4095, 0));
	CK_PAT(rw, REG_LEN, 0xd003);
	CK_EQ(0, zcx_unexpose(s->zcx, r.rw.rkey));
	CK_EQ(-ENOENT, zcx_unexpose(s->zcx, r.rw.rkey));
	CK_EQ(0, xsend_u64(s, 2));
	CK_EQ(0, xexpect_u64(s, 3));
	CK_PAT(rw, REG_LEN, 0xd003);
	CK_EQ(0, zcx_unexpose(s->zcx, r.ro.rkey));
	CK_EQ(0, zcx_unexpose(s->zcx, r.wo.rkey));
	munmap(m, 3 * (REG_LEN + 2 * 4096));
	return 0;
}

/* A put or get expected to fail with @err, both ways of calling it. */
static int rejected(struct xside *s, bool put, void *buf, size_t len, uint64_t raddr,
		    uint64_t rkey, int err)
{
	struct zcx_req req = xreq(NULL);

	if (put) {
		CK_EQ(0, zcx_iput(s->ep, s->peer, buf, len, raddr, rkey, &req));
		CK_EQ(err, zcx_wait(s->ep, &req));
		CK_EQ(err, req.status);
		CK_EQ(err, zcx_put(s->ep, s->peer, buf, len, raddr, rkey));
	} else {
		CK_EQ(0, zcx_iget(s->ep, s->peer, buf, len, raddr, rkey, &req));
		CK_EQ(err, zcx_wait(s->ep, &req));
		CK_EQ(err, req.status);
		CK_EQ(err, zcx_get(s->ep, s->peer, buf, len, raddr, rkey));
	}
	return 0;
}

static int rights_parent(struct xside *s, void *arg)
{
	char *b = zcx_test_anon(2 * REG_LEN + 8192);
	struct three_regions r;
	uint64_t bogus;

	(void)arg;
	CK(b);
	CK_EQ(0, xread(s->rd, &r, sizeof(r)));
	/* Rights. */
	CK_EQ(0, zcx_get(s->ep, s->peer, b, 1000, r.ro.addr + 100, r.ro.rkey));
	CK_PAT_AT(b, 1000, 0xd001, 100);
	xpat_fill(b, 1000, 0xd004);
	if (rejected(s, true, b, 1000, r.ro.addr + 100, r.ro.rkey, -EACCES))
		return 1;
	if (rejected(s, false, b + 4096, 1000, r.wo.addr + 100, r.wo.rkey, -EACCES))
		return 1;
	CK_EQ(0, zcx_put(s->ep, s->peer, b, 1000, r.wo.addr + 100, r.wo.rkey));
	/* Unknown keys. */
	bogus = r.rw.rkey ^ 0x5a5a5a5a00000000ULL;
	if (bogus == r.ro.rkey || bogus == r.wo.rkey)
		bogus ^= 1;
	if (rejected(s, false, b + 4096, 100, r.rw.addr, bogus, -EACCES) ||
	    rejected(s, true, b, 100, r.rw.addr, bogus, -EACCES) ||
	    rejected(s, false, b + 4096, 100, r.rw.addr, 0, -EACCES))
		return 1;
	/* Bounds: before, straddling either end, after, longer than it. */
	if (rejected(s, false, b + 4096, 16, r.rw.addr - 1, r.rw.rkey, -ERANGE) ||
	    rejected(s, true, b, 16, r.rw.addr - 1, r.rw.rkey, -ERANGE) ||
	    rejected(s, false, b + 4096, 11, r.rw.addr + REG_LEN - 10, r.rw.rkey, -ERANGE) ||
	    rejected(s, true, b, 11, r.rw.addr + REG_LEN - 10, r.rw.rkey, -ERANGE) ||
	    rejected(s, true, b, 1, r.rw.addr + REG_LEN, r.rw.rkey, -ERANGE) ||
	    rejected(s, false, b + 4096, 4096, r.rw.addr + REG_LEN + 4096, r.rw.rkey, -ERANGE) ||
	    rejected(s, true, b, REG_LEN + 1, r.rw.addr, r.rw.rkey, -ERANGE) ||
	    rejected(s, false, b, REG_LEN + 1, r.rw.addr, r.rw.rkey, -ERANGE))
		return 1;
	/* Right at the edges: fine. */
	CK_EQ(0, zcx_get(s->ep, s->peer, b + 4096, REG_LEN, r.rw.addr, r.rw.rkey));
	CK_PAT(b + 4096, REG_LEN, 0xd003);
	CK_EQ(0, zcx_get(s->ep, s->peer, b, 1, r.rw.addr + REG_LEN - 1, r.rw.rkey));
	CK_EQ(0, xsend_u64(s, 1));
	/* Revoked. */
	CK_EQ(0, xexpect_u64(s, 2));
	if (rejected(s, false, b + 4096, 100, r.rw.addr, r.rw.rkey, -EACCES) ||
	    rejected(s, true, b, 100, r.rw.addr, r.rw.rkey, -EACCES))
		return 1;
	CK_EQ(0, xsend_u64(s, 3));
	munmap(b, 2 * REG_LEN + 8192);
	return 0;
}

TEST_F_TIMEOUT(xfer, put_get_bounds_and_rights, 60)
{
	EXPECT_EQ(0, xrun_pair(variant->ep_flags, 0, rights_parent, rights_child, NULL));
}

/*
 * The stale-registration regression, one-sided: the child exposes a
 * buffer and then replaces its memory at the same address; the parent's
 * GET must see the new bytes, and its PUT must land in the new memory.
 * Then the parent replaces its own buffers, passing the registrations
 * made before (now stale) in req.mr: GET must fill, and PUT must read,
 * the new memory.
 */
#define PG_LEN		(256 * KiB + 3)
#define PG_MAP		(512 * KiB)

static int stale_pg_child(struct xside *s, void *arg)
{
	int how = *(int *)arg;
	char *map = zcx_test_anon(PG_MAP), *p;
	struct exposed ex;

	CK(map);
	p = map + 7;
	xpat_fill(p, PG_LEN, 0x7001);
	ex.addr = (uintptr_t)p;
	CK_EQ(0, zcx_expose(s->zcx, p, PG_LEN, ZCX_REMOTE_ALL, &ex.rkey));
	CK_EQ(0, xwrite(s->wr, &ex, sizeof(ex)));
	CK_EQ(0, xexpect_u64(s, 1));
	CK_EQ(0, remap(map, PG_MAP, how));
	xpat_fill(p, PG_LEN, 0x7002);
	CK_EQ(0, xsend_u64(s, 2));
	CK_EQ(0, xexpect_u64(s, 3));
	CK_PAT(p, PG_LEN, 0x7003);
	CK_EQ(0, xsend_u64(s, 4));
	CK_EQ(0, xexpect_u64(s, 5));
	CK_PAT(p, PG_LEN, 0x7004);
	CK_EQ(0, zcx_unexpose(s->zcx, ex.rkey));
	CK_EQ(0, xsend_u64(s, 6));
	/* Alive until the parent tried the revoked key. */
	CK_EQ(0, xexpect_u64(s, 7));
	munmap(map, PG_MAP);
	return 0;
}

static int stale_pg_parent(struct xside *s, void *arg)
{
	int how = *(int *)arg;
	char *lmap = zcx_test_anon(PG_MAP), *smap = zcx_test_anon(PG_MAP), *l, *src;
	struct zcx_mr *lmr, *smr;
	struct zcx_req req;
	struct exposed ex;

	CK(lmap && smap);
	l = lmap + 9;
	src = smap + 11;
	CK_EQ(0, xread(s->rd, &ex, sizeof(ex)));
	CK_EQ(0, zcx_get(s->ep, s->peer, l, PG_LEN, ex.addr, ex.rkey));
	CK_PAT(l, PG_LEN, 0x7001);
	/* The target replaced its memory. */
	CK_EQ(0, xsend_u64(s, 1));
	CK_EQ(0, xexpect_u64(s, 2));
	CK_EQ(0, zcx_get(s->ep, s->peer, l, PG_LEN, ex.addr, ex.rkey));
	CK_PAT(l, PG_LEN, 0x7002);
	xpat_fill(src, PG_LEN, 0x7003);
	CK_EQ(0, zcx_put(s->ep, s->peer, src, PG_LEN, ex.addr, ex.rkey));
	CK_EQ(0, xsend_u64(s, 3));
	CK_EQ(0, xexpect_u64(s, 4));

	/* Now the initiator's memory, with registrations in req.mr. */
	CK_EQ(0, zcx_mr_reg(s->zcx, l, PG_LEN, ZCX_ACCESS_ALL, &lmr));
	CK_EQ(0, zcx_mr_reg(s->zcx, src, PG_LEN, ZCX_ACCESS_ALL, &smr));
	memset(l, 0, PG_LEN);
	req = xreq(lmr);
	CK_EQ(0, zcx_iget(s->ep, s->peer, l, PG_LEN, ex.addr, ex.rkey, &req));
	CK_EQ(0, zcx_wait(s->ep, &req));
	CK_PAT(l, PG_LEN, 0x7003);
	CK_EQ(0, remap(lmap, PG_MAP, how));
	CK_EQ(0, remap(smap, PG_MAP, how));
	CK(!zcx_mr_valid(s->zcx, lmr));
	CK(!zcx_mr_valid(s->zcx, smr));
	req = xreq(lmr);
	CK_EQ(0, zcx_iget(s->ep, s->peer, l, PG_LEN, ex.addr, ex.rkey, &req));
	CK_EQ(0, zcx_wait(s->ep, &req));
	CK_PAT(l, PG_LEN, 0x7003);
	xpat_fill(src, PG_LEN, 0x7004);
	req = xreq(smr);
	CK_EQ(0, zcx_iput(s->ep, s->peer, src, PG_LEN, ex.addr, ex.rkey, &req));
	CK_EQ(0, zcx_wait(s->ep, &req));
	CK_EQ(0, xsend_u64(s, 5));
	CK_EQ(0, xexpect_u64(s, 6));
	CK_EQ(0, zcx_mr_dereg(s->zcx, lmr));
	CK_EQ(0, zcx_mr_dereg(s->zcx, smr));
	/* Revoked now. */
	CK_EQ(-EACCES, zcx_get(s->ep, s->peer, l, 16, ex.addr, ex.rkey));
	CK_EQ(0, xsend_u64(s, 7));
	munmap(lmap, PG_MAP);
	munmap(smap, PG_MAP);
	return 0;
}

TEST_F_TIMEOUT(xfer, stale_put_get_munmap_mmap, 60)
{
	int how = REMAP_MUNMAP;

	EXPECT_EQ(0, xrun_pair(variant->ep_flags, 0, stale_pg_parent, stale_pg_child, &how));
}

TEST_F_TIMEOUT(xfer, stale_put_get_map_fixed, 60)
{
	int how = REMAP_FIXED;

	EXPECT_EQ(0, xrun_pair(variant->ep_flags, 0, stale_pg_parent, stale_pg_child, &how));
}

TEST_F_TIMEOUT(xfer, stale_put_get_madv_dontneed, 60)
{
	int how = REMAP_DONTNEED;

	EXPECT_EQ(0, xrun_pair(variant->ep_flags, 0, stale_pg_parent, stale_pg_child, &how));
}

/*
 * A busy ZCX_EP_POLL endpoint needs no system call per message: with the
 * receives posted beforehand, a burst of 1000 small sends (and waiting
 * for them) costs fewer than 500 system calls on the sending endpoint.
 */
#define BURST		1000
#define BURST_LEN	32

struct burst {
	uint64_t syscalls, in_sends, send_ns;
};

static int burst_child(struct xside *s, void *arg)
{
	struct zcx_req *req = calloc(BURST, sizeof(*req));
	char *b = zcx_test_anon(BURST * BURST_LEN);
	unsigned int i;

	(void)arg;
	CK(req && b);
	for (i = 0; i < BURST; i++) {
		req[i] = xreq(NULL);
		CK_EQ(0, zcx_irecv(s->ep, b + i * BURST_LEN, BURST_LEN, 5, ~0ULL, &req[i]));
	}
	CK_EQ(0, xflush(s->ep, &req[0]));
	CK_EQ(0, xsend_u64(s, 1));
	for (i = 0; i < BURST; i++) {
		CK_EQ(0, zcx_wait(s->ep, &req[i]));
		CK_EQ(BURST_LEN, req[i].len);
		/* In order: the oldest receive takes the oldest message. */
		CK_PAT(b + i * BURST_LEN, BURST_LEN, 0xe000 + i);
	}
	CK_EQ(0, xsend_u64(s, 2));
	free(req);
	return 0;
}

static int burst_parent(struct xside *s, void *arg)
{
	struct burst *bu = arg;
	struct zcx_req *req = calloc(BURST, sizeof(*req));
	char *b = zcx_test_anon(BURST * BURST_LEN);
	uint64_t before;
	unsigned int i;

	CK(req && b);
	for (i = 0; i < BURST; i++)
		xpat_fill(b + i * BURST_LEN, BURST_LEN, 0xe000 + i);
	CK_EQ(0, xexpect_u64(s, 1));
	before = zcx_ep_syscalls(s->ep);
	bu->send_ns = xnow_ns();
	for (i = 0; i < BURST; i++) {
		req[i] = xreq(NULL);
		CK_EQ(0, zcx_isend(s->ep, s->peer, b + i * BURST_LEN, BURST_LEN, 5, &req[i]));
	}
	bu->send_ns = xnow_ns() - bu->send_ns;
	bu->in_sends = zcx_ep_syscalls(s->ep) - before;
	for (i = 0; i < BURST; i++)
		CK_EQ(0, zcx_wait(s->ep, &req[i]));
	bu->syscalls = zcx_ep_syscalls(s->ep) - before;
	CK_EQ(0, xexpect_u64(s, 2));
	free(req);
	return 0;
}

FIXTURE(burst) {
	struct zcx_test_census before;
	struct burst bu;
};

FIXTURE_SETUP(burst)
{
	self->before = zcx_test_census();
}

FIXTURE_TEARDOWN(burst)
{
	const char *leaked = zcx_test_census_settle(&self->before, 5000);

	EXPECT_EQ(NULL, leaked) TH_LOG("%s not back where the test began", leaked);
}

TEST_F_TIMEOUT(burst, poll_mode_needs_no_syscall_per_message, 60)
{
	long long idle_us = zcx_test_read_number(ZCX_MODULE_PARAM("poll_idle_us"));
	double per_msg_us;

	ASSERT_EQ(0, xrun_pair(ZCX_EP_POLL, 0, burst_parent, burst_child, &self->bu));
	per_msg_us = self->bu.send_ns / 1e3 / BURST;
	TH_LOG("%u small sends on a ZCX_EP_POLL endpoint: %llu system calls (%llu while "
	       "sending, %.1f us per send; poll_idle_us %lld)", BURST,
	       (unsigned long long)self->bu.syscalls, (unsigned long long)self->bu.in_sends,
	       per_msg_us, idle_us);
	/*
	 * RELAXABLE: fewer than one system call per two messages is the
	 * robust form of "none per message".  It is only judged when the
	 * sends come well within the polling thread's idle time (a slow,
	 * emulated machine may take longer per send than that, and then
	 * the thread rightly sleeps between sends and needs doorbells).
	 * On a slow guest (ZCX_SLOW) the waits for completions after the
	 * sends sleep too, so only the sends themselves are judged there.
	 */
	if (idle_us > 0 && per_msg_us * 4 > idle_us)
		SKIP(return, "not judged: sends slower than a quarter of poll_idle_us");
	EXPECT_GT(BURST / 2, self->bu.in_sends);
	if (zcx_test_slowdown() == 1)
		EXPECT_GT(BURST / 2, self->bu.syscalls);
}

ZCX_NET_HARNESS_MAIN
