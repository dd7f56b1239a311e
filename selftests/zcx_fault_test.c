// SPDX-License-Identifier: GPL-2.0-only
/*
 * zcx_fault_test - failures of the transport: a peer killed in the middle
 * of a 64 MiB transfer (the partner's operation fails, nothing stays
 * pinned or allocated), a peer that closes its handle or destroys its
 * endpoint while the partner waits on it, connections refused, a polling
 * thread waiting in a fault that its process will never serve, and bad
 * arguments to every transport ioctl and in submissions (the raw ABI,
 * without the library), which fail cleanly and change nothing.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "zcx_net.h"
#include "zcx_raw.h"
#include "zcx_test.h"
#include "zcx_xfer.h"

#define KiB		1024UL
#define MiB		(1024 * KiB)
#define HUGE_MSG	(64 * MiB)

FIXTURE(fault) {
	struct zcx_test_census before;
};

FIXTURE_VARIANT(fault) {
	unsigned int ep_flags;
	bool net;
};

FIXTURE_VARIANT_ADD(fault, local) {
	.ep_flags = 0,
};

/* Through zcx_ib.ko on Soft-RoCE (zcx_net.h): RDMA READ rendezvous. */
FIXTURE_VARIANT_ADD(fault, net) {
	.ep_flags = ZCX_EP_NET,
	.net = true,
};

FIXTURE_SETUP(fault)
{
	/* First: the teardown compares with it even after a skip. */
	self->before = zcx_test_census();
	if (variant->net) {
		ZCX_NET_FIXTURE_UP();
		xconnect_flags = ZCX_CONNECT_NET;
	}
}

FIXTURE_TEARDOWN(fault)
{
	/* Unpinning after a process's exit is deferred: wait, bounded. */
	const char *leaked = zcx_test_census_settle(&self->before, 10000);

	EXPECT_EQ(NULL, leaked) TH_LOG("%s not back where the test began", leaked);
	if (variant->net)
		ZCX_NET_FIXTURE_DOWN();
}

/*
 * Killed during 64 MiB.  The receiving side's buffer is watched by a
 * thread of the surviving process (the survivor's own buffer, or the
 * victim's through MAP_SHARED memory made before fork): as soon as the
 * first bytes of the message are there, it SIGKILLs the victim.  The
 * survivor's operation must then fail with ECONNRESET (or EINTR).  The
 * copy stops once the victim is gone, which is when it exits, not when
 * the kill is sent, and a few more pages may come after the last check:
 * if the message was that near its end when the victim died, the attempt
 * proves nothing and is repeated (the copy is hundreds of times longer
 * than the reaction).
 */
#define KILL_ATTEMPTS	3
#define KILL_SEED	0x6001
/* What may still arrive once the victim is dead (the local copy checks every 64 KiB). */
#define KILL_MARGIN	(1 * MiB)

struct watch {
	const volatile unsigned char *buf;
	pid_t victim;
	bool tail_seen;		/* the copy was within KILL_MARGIN of its end at the death */
	bool stop;		/* give up: nothing arrived */
	pthread_t thread;
};

static void *watch_fn(void *arg)
{
	struct watch *w = arg;
	uint64_t head = xpat_word(KILL_SEED, 0);
	uint64_t near = xpat_word(KILL_SEED, (HUGE_MSG - KILL_MARGIN) / 8);
	uint64_t tail = xpat_word(KILL_SEED, HUGE_MSG / 8 - 1);
	siginfo_t death;

	while (memcmp((const void *)w->buf, &head, 8)) {
		if (__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE))
			return NULL;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
	}
	kill(w->victim, SIGKILL);
	/* Our child: wait for its death, leaving it to be reaped after the join. */
	while (waitid(P_PID, w->victim, &death, WEXITED | WNOWAIT) && errno == EINTR)
		;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	w->tail_seen = !memcmp((const void *)(w->buf + HUGE_MSG - KILL_MARGIN), &near, 8) ||
		       !memcmp((const void *)(w->buf + HUGE_MSG - 8), &tail, 8);
	return NULL;
}

enum { VICTIM_RECEIVES, VICTIM_SENDS };

struct kill_case {
	int victim_role;
	unsigned char *shared;	/* victim's receive buffer, MAP_SHARED */
	int result, tail_seen, victim_status;
};

static int kill_victim(struct xside *s, void *arg)
{
	struct kill_case *k = arg;
	struct zcx_req req = xreq(NULL);
	char c;

	if (k->victim_role == VICTIM_RECEIVES) {
		CK_EQ(0, zcx_irecv(s->ep, k->shared, HUGE_MSG, 1, ~0ULL, &req));
	} else {
		char *b = zcx_test_anon(HUGE_MSG);

		CK(b);
		xpat_fill(b, HUGE_MSG, KILL_SEED);
		CK_EQ(0, zcx_isend(s->ep, s->peer, b, HUGE_MSG, 1, &req));
	}
	/* Posted for real, not just queued for the next doorbell. */
	CK_EQ(0, xflush(s->ep, &req));
	CK_EQ(0, xsend_u64(s, 1));
	/* Until killed. */
	xread(s->rd, &c, 1);
	return 2;
}

/* One attempt: 0 done (k->result set), or 1 on a setup failure. */
static int kill_attempt(struct kill_case *k, unsigned int flags)
{
	struct zcx_req req = xreq(NULL);
	struct watch w = { 0 };
	struct xside s;
	char *b = NULL;
	pid_t pid;
	int ret;

	memset(k->shared, 0, HUGE_MSG);
	if (k->victim_role == VICTIM_RECEIVES) {
		b = zcx_test_anon(HUGE_MSG);
		CK(b);
		xpat_fill(b, HUGE_MSG, KILL_SEED);
	}
	pid = xfer_fork(&s, flags, 0, kill_victim, k);
	CK(pid > 0);
	CK_EQ(0, xexpect_u64(&s, 1));
	w.victim = pid;
	w.buf = k->victim_role == VICTIM_RECEIVES ? k->shared : (unsigned char *)zcx_test_anon(HUGE_MSG);
	CK(w.buf);
	CK_EQ(0, pthread_create(&w.thread, NULL, watch_fn, &w));
	/* The copy may well run inside this call: the watcher acts meanwhile. */
	if (k->victim_role == VICTIM_RECEIVES)
		ret = zcx_isend(s.ep, s.peer, b, HUGE_MSG, 1, &req);
	else
		ret = zcx_irecv(s.ep, (void *)w.buf, HUGE_MSG, 1, ~0ULL, &req);
	CK_EQ(0, ret);
	k->result = xwait_bounded(s.ep, &req, 60000);
	if (k->result == -ETIME) {
		/* Never started or hung: unblock the watcher and report. */
		kill(pid, SIGKILL);
		__atomic_store_n(&w.stop, true, __ATOMIC_RELEASE);
	}
	CK_EQ(0, pthread_join(w.thread, NULL));
	k->tail_seen = w.tail_seen;
	xside_fini(&s);
	k->victim_status = xreap(pid);
	if (b)
		munmap(b, HUGE_MSG);
	if (k->victim_role == VICTIM_SENDS)
		munmap((void *)w.buf, HUGE_MSG);
	return 0;
}

static void kill_case_run(struct __test_metadata *_metadata, int role, unsigned int flags)
{
	struct kill_case k = { .victim_role = role };
	int attempt;

	k.shared = xmap_shared(HUGE_MSG);
	ASSERT_NE(NULL, k.shared);
	for (attempt = 0; attempt < KILL_ATTEMPTS; attempt++) {
		ASSERT_EQ(0, kill_attempt(&k, flags));
		TH_LOG("attempt %d: survivor's status %d (%s), victim %d, copy %s at its death",
		       attempt, k.result, zcx_strerror(k.result), k.victim_status,
		       k.tail_seen ? "near its end" : "under way");
		EXPECT_EQ(128 + SIGKILL, k.victim_status);
		if (!k.tail_seen)
			break;
	}
	ASSERT_FALSE(k.tail_seen) TH_LOG("the copy was always near its end when the victim died");
	EXPECT_TRUE(k.result == -ECONNRESET || k.result == -EINTR)
		TH_LOG("status %d (%s)", k.result, zcx_strerror(k.result));
	munmap(k.shared, HUGE_MSG);
}

/*
 * Up to KILL_ATTEMPTS attempts, each waiting at most 60 s for the survivor
 * and filling 64 MiB twice: the harness's timeout, which would cut the
 * diagnostics short, is only a backstop beyond them (a loaded emulated
 * guest took more than 90 s).
 */
#define KILL_TIMEOUT	300

TEST_F_TIMEOUT(fault, receiver_killed_during_64MiB, KILL_TIMEOUT)
{
	kill_case_run(_metadata, VICTIM_RECEIVES, variant->ep_flags);
}

TEST_F_TIMEOUT(fault, sender_killed_during_64MiB, KILL_TIMEOUT)
{
	kill_case_run(_metadata, VICTIM_SENDS, variant->ep_flags);
}

TEST_F_TIMEOUT(fault, receiver_killed_during_64MiB_poll, KILL_TIMEOUT)
{
	kill_case_run(_metadata, VICTIM_RECEIVES, variant->ep_flags | ZCX_EP_POLL);
}

TEST_F_TIMEOUT(fault, sender_killed_during_64MiB_poll, KILL_TIMEOUT)
{
	kill_case_run(_metadata, VICTIM_SENDS, variant->ep_flags | ZCX_EP_POLL);
}

/*
 * The peer leaves while the partner waits on it: closes its handle or
 * destroys its endpoint.  Pending: a large send (it waits for a receive
 * that never comes), or a receive (the leaving peer was the only one
 * connected to send to it).  Either completes with ECONNRESET, and so do
 * new sends to the gone peer.
 */
enum { LEAVE_CLOSE, LEAVE_DESTROY, LEAVE_EXIT };

/* Plenty for a completion that should come at once, also under KASAN in TCG. */
#define LEAVE_WAIT_MS	(10000 * zcx_test_slowdown())

struct leave {
	bool pending_send;
	int how;
};

static int leave_peer(struct xside *s, void *arg)
{
	struct leave *l = arg;

	CK_EQ(0, xexpect_u64(s, 1));
	switch (l->how) {
	case LEAVE_CLOSE:
		/* The endpoint goes with the handle. */
		zcx_close(s->zcx);
		s->zcx = NULL;
		s->ep = NULL;
		break;
	case LEAVE_DESTROY:
		zcx_ep_destroy(s->ep);
		s->ep = NULL;
		break;
	case LEAVE_EXIT:
		_exit(0);
	}
	CK_EQ(0, xsend_u64(s, 2));
	/* Alive until the partner is done. */
	CK_EQ(0, xexpect_u64(s, 3));
	return 0;
}

/* A send's failure, whether the call or the completion reports it. */
static int send_status(struct xside *s, void *buf, size_t len, struct zcx_req *req)
{
	int ret = zcx_isend(s->ep, s->peer, buf, len, 9, req);

	return ret ? ret : xwait_bounded(s->ep, req, LEAVE_WAIT_MS);
}

static int leave_partner(struct xside *s, void *arg)
{
	struct leave *l = arg;
	struct zcx_req req = xreq(NULL), again = xreq(NULL);
	char *b = zcx_test_anon(256 * KiB);

	CK(b);
	xpat_fill(b, 256 * KiB, 0x8001);
	if (l->pending_send) {
		CK(256 * KiB >= s->q.zcopy_threshold);
		CK_EQ(0, zcx_isend(s->ep, s->peer, b, 256 * KiB, 1, &req));
	} else {
		CK_EQ(0, zcx_irecv(s->ep, b, 256 * KiB, 0, 0, &req));
	}
	/* Posted or queued in the module before the peer leaves. */
	CK_EQ(0, xflush(s->ep, &req));
	CK_EQ(0, xsend_u64(s, 1));
	if (l->how != LEAVE_EXIT) {
		CK_EQ(0, xexpect_u64(s, 2));
	} else {
		uint64_t v;

		/* The pipe's end closes when the peer exits. */
		CK(xrecv_u64(s, &v));
	}
	CK_EQ(-ECONNRESET, xwait_bounded(s->ep, &req, LEAVE_WAIT_MS));
	CK_EQ(-ECONNRESET, req.status);
	/* New sends to the gone peer fail too, large and small. */
	CK_EQ(-ECONNRESET, send_status(s, b, 256 * KiB, &again));
	again = xreq(NULL);
	CK_EQ(-ECONNRESET, send_status(s, b, 10, &again));
	if (l->how != LEAVE_EXIT)
		CK_EQ(0, xsend_u64(s, 3));
	munmap(b, 256 * KiB);
	return 0;
}

FIXTURE(leave) {
	struct zcx_test_census before;
};

FIXTURE_VARIANT(leave) {
	bool pending_send;
	int how;
	unsigned int ep_flags;
};

FIXTURE_VARIANT_ADD(leave, send_peer_closes_handle) {
	.pending_send = true, .how = LEAVE_CLOSE, .ep_flags = 0 };
FIXTURE_VARIANT_ADD(leave, send_peer_destroys_endpoint) {
	.pending_send = true, .how = LEAVE_DESTROY, .ep_flags = 0 };
FIXTURE_VARIANT_ADD(leave, send_peer_exits) {
	.pending_send = true, .how = LEAVE_EXIT, .ep_flags = 0 };
FIXTURE_VARIANT_ADD(leave, recv_peer_closes_handle) {
	.pending_send = false, .how = LEAVE_CLOSE, .ep_flags = 0 };
FIXTURE_VARIANT_ADD(leave, recv_peer_destroys_endpoint) {
	.pending_send = false, .how = LEAVE_DESTROY, .ep_flags = 0 };
FIXTURE_VARIANT_ADD(leave, recv_peer_exits) {
	.pending_send = false, .how = LEAVE_EXIT, .ep_flags = 0 };
FIXTURE_VARIANT_ADD(leave, poll_send_peer_closes_handle) {
	.pending_send = true, .how = LEAVE_CLOSE, .ep_flags = ZCX_EP_POLL };
FIXTURE_VARIANT_ADD(leave, poll_send_peer_destroys_endpoint) {
	.pending_send = true, .how = LEAVE_DESTROY, .ep_flags = ZCX_EP_POLL };
FIXTURE_VARIANT_ADD(leave, poll_send_peer_exits) {
	.pending_send = true, .how = LEAVE_EXIT, .ep_flags = ZCX_EP_POLL };
FIXTURE_VARIANT_ADD(leave, poll_recv_peer_destroys_endpoint) {
	.pending_send = false, .how = LEAVE_DESTROY, .ep_flags = ZCX_EP_POLL };

FIXTURE_SETUP(leave)
{
	self->before = zcx_test_census();
}

FIXTURE_TEARDOWN(leave)
{
	const char *leaked = zcx_test_census_settle(&self->before, 5000);

	EXPECT_EQ(NULL, leaked) TH_LOG("%s not back where the test began", leaked);
}

/*
 * "recv" variants: the partner's pending receive, when the peer leaving
 * was the only endpoint connected to send to it, must not wait forever.
 */
TEST_F_TIMEOUT(leave, partner_gets_econnreset, 60)
{
	struct leave l = { .pending_send = variant->pending_send, .how = variant->how };

	EXPECT_EQ(0, xrun_pair(variant->ep_flags, 0, leave_partner, leave_peer, &l));
}

/* Connecting needs the right key to an endpoint that exists. */
static int refuse_peer(struct xside *s, void *arg)
{
	(void)arg;
	CK_EQ(0, xexpect_u64(s, 1));
	zcx_ep_destroy(s->ep);
	s->ep = NULL;
	CK_EQ(0, xsend_u64(s, 2));
	CK_EQ(0, xexpect_u64(s, 3));
	return 0;
}

static int refuse_partner(struct xside *s, void *arg)
{
	struct zcx_addr bad;
	uint32_t peer;
	int bit;

	(void)arg;
	for (bit = 0; bit < 64; bit += 21) {
		bad = s->peer_addr;
		bad.key ^= 1ULL << bit;
		CK_EQ(-ECONNREFUSED, zcx_ep_connect(s->ep, &bad, &peer));
	}
	bad = s->peer_addr;
	bad.key = 0;
	CK_EQ(-ECONNREFUSED, zcx_ep_connect(s->ep, &bad, &peer));
	bad = s->peer_addr;
	bad.id += 77;
	CK_EQ(-ECONNREFUSED, zcx_ep_connect(s->ep, &bad, &peer));
	/* The right address works again, and again (a second connection). */
	CK_EQ(0, zcx_ep_connect(s->ep, &s->peer_addr, &peer));
	CK_EQ(0, xsend_u64(s, 1));
	CK_EQ(0, xexpect_u64(s, 2));
	/* Gone now. */
	CK_EQ(-ECONNREFUSED, zcx_ep_connect(s->ep, &s->peer_addr, &peer));
	CK_EQ(0, xsend_u64(s, 3));
	return 0;
}

TEST_F_TIMEOUT(fault, connect_refused, 120)
{
	if (variant->net)
		SKIP(return, "refusals between nodes are zcx_ib_test's refused_and_rejected");
	EXPECT_EQ(0, xrun_pair(0, 0, refuse_partner, refuse_peer, NULL));
}

/*
 * The raw ABI (zcx_raw.h): submit one entry and wait for its completion: the completion's res,
 * with *cqe filled, or a negative errno of ENTER shifted out of range
 * (-100000 - errno) so the two cannot be confused.
 */
static int raw_one(struct zcx_raw_ep *r, const struct zcx_sqe *sqe, struct zcx_cqe *cqe)
{
	int ret;

	zcx_raw_push(r, sqe);
	ret = zcx_raw_enter(r, 1, ZCX_ENTER_GETEVENTS, 1);
	if (ret != 1)
		return -100000 + (ret < 0 ? ret : -1000 - ret);
	if (!zcx_raw_pop(r, cqe))
		return -100000 - 2000;
	return cqe->res;
}

FIXTURE(raw) {
	struct zcx_test_census before;
	int fd;
	struct zcx_raw_ep r;
};

FIXTURE_SETUP(raw)
{
	self->before = zcx_test_census();
	self->fd = zcx_test_open();
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, zcx_raw_ep_create(self->fd, 0, 0, &self->r));
}

FIXTURE_TEARDOWN(raw)
{
	const char *leaked;

	zcx_raw_ep_destroy(&self->r);
	close(self->fd);
	leaked = zcx_test_census_settle(&self->before, 5000);
	EXPECT_EQ(NULL, leaked) TH_LOG("%s not back where the test began", leaked);
}

/* What a fresh endpoint reports, and a NOP through its rings. */
TEST_F(raw, ep_create_and_nop)
{
	struct zcx_sqe sqe = { .opcode = ZCX_OP_NOP, .user_data = 0x1234567890abcdefULL };
	struct zcx_cqe cqe;
	struct zcx_query q = { 0 };

	ASSERT_EQ(0, zcx_test_ioctl(self->fd, ZCX_IOC_QUERY, &q));
	EXPECT_EQ(q.ring_depth, self->r.c.sq_entries);
	EXPECT_EQ(2 * self->r.c.sq_entries, self->r.c.cq_entries);
	EXPECT_EQ(self->r.c.sq_entries - 1, self->r.sq_mask);
	EXPECT_EQ(self->r.c.cq_entries - 1, self->r.cq_mask);
	EXPECT_EQ(ZCX_ADDR_ENDPOINT, self->r.c.addr.kind);
	EXPECT_NE(0, self->r.c.addr.key);
	EXPECT_EQ(0, self->r.c.addr.node);
	ASSERT_EQ(0, raw_one(&self->r, &sqe, &cqe));
	EXPECT_EQ(0x1234567890abcdefULL, cqe.user_data);
	EXPECT_EQ(0, cqe.flags);
	EXPECT_EQ(0, *self->r.sq_flags & ~ZCX_SQ_NEED_WAKEUP);
}

/*
 * The polling thread says when others wait for its CPU: with twice as
 * many busy threads as CPUs, ZCX_SQ_CPU_SHARED shows in sq_flags while it
 * takes NOPs; with them gone and no more work, it goes to sleep with
 * ZCX_SQ_NEED_WAKEUP alone.
 */
static bool spinners_stop;

static void *spinner(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&spinners_stop, __ATOMIC_RELAXED))
		;
	return NULL;
}

/* One NOP through the polled ring; 0, or -1 if its completion is wrong. */
static int polled_nop(struct zcx_raw_ep *p)
{
	struct zcx_sqe sqe = { .opcode = ZCX_OP_NOP, .user_data = 5 };
	struct zcx_cqe cqe;

	zcx_raw_push(p, &sqe);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if ((__atomic_load_n(p->sq_flags, __ATOMIC_RELAXED) & ZCX_SQ_NEED_WAKEUP) &&
	    zcx_raw_enter(p, 0, ZCX_ENTER_SQ_WAKEUP, 0) < 0)
		return -1;
	while (!zcx_raw_pop(p, &cqe))
		sched_yield();
	return cqe.user_data == 5 && !cqe.res ? 0 : -1;
}

TEST_F_TIMEOUT(raw, polling_thread_says_when_it_shares_its_cpu, 120)
{
	long n = 2 * sysconf(_SC_NPROCESSORS_ONLN), i, started;
	unsigned int ms, limit = 30000 * zcx_test_slowdown();
	pthread_t *threads = calloc(n, sizeof(*threads));
	struct timespec t0, t;
	struct zcx_raw_ep p;
	bool shared = false;

	ASSERT_NE(NULL, threads);
	ASSERT_EQ(0, zcx_raw_ep_create(self->fd, ZCX_EP_POLL, 0, &p));
	__atomic_store_n(&spinners_stop, false, __ATOMIC_RELAXED);
	for (started = 0; started < n; started++)
		if (pthread_create(&threads[started], NULL, spinner, NULL))
			break;
	EXPECT_EQ(n, started);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		ASSERT_EQ(0, polled_nop(&p));
		shared = __atomic_load_n(p.sq_flags, __ATOMIC_RELAXED) & ZCX_SQ_CPU_SHARED;
		clock_gettime(CLOCK_MONOTONIC, &t);
		ms = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
	} while (!shared && ms < limit);
	__atomic_store_n(&spinners_stop, true, __ATOMIC_RELAXED);
	for (i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	EXPECT_TRUE(shared) TH_LOG("no ZCX_SQ_CPU_SHARED in %u ms among %ld busy threads", ms, n);
	/*
	 * Idle now: after poll_idle_us it sleeps, and says only that.  If it
	 * went to sleep while still sharing its CPU, it says that too and
	 * looks again when woken.
	 */
	for (ms = 0; ms < limit &&
	     __atomic_load_n(p.sq_flags, __ATOMIC_RELAXED) != ZCX_SQ_NEED_WAKEUP; ms++) {
		if (__atomic_load_n(p.sq_flags, __ATOMIC_RELAXED) ==
		    (ZCX_SQ_NEED_WAKEUP | ZCX_SQ_CPU_SHARED))
			ASSERT_EQ(0, polled_nop(&p));
		usleep(1000);
	}
	EXPECT_EQ(ZCX_SQ_NEED_WAKEUP, *p.sq_flags);
	ASSERT_EQ(0, polled_nop(&p));
	EXPECT_EQ(0, zcx_raw_ep_destroy(&p));
	free(threads);
}

/*
 * A process may take its polled endpoint's submissions itself with
 * ZCX_IOC_ENTER's to_submit (what libzcx does when the polling thread
 * shares its CPU): with the thread asleep and not woken, the entry is
 * taken and completes in the call, and the thread sleeps on.  Asleep is
 * NEED_WAKEUP with the thread in its sleep ('S'): the flag alone is set
 * before its last look, which may still take the entry or, finding the
 * ring busy, stay awake.
 */
TEST_F_TIMEOUT(raw, polled_endpoint_takes_submissions_in_enter, 60)
{
	struct zcx_sqe sqe = { .opcode = ZCX_OP_NOP, .user_data = 9 };
	unsigned int ms, flags = 0, limit = 10000 * zcx_test_slowdown();
	struct zcx_query q = { 0 };
	struct zcx_raw_ep p;
	struct zcx_cqe cqe;
	pid_t thread;

	ASSERT_EQ(0, zcx_test_ioctl(self->fd, ZCX_IOC_QUERY, &q));
	ASSERT_TRUE(q.features & ZCX_FEATURE_POLL_SUBMIT);
	ASSERT_EQ(0, zcx_raw_ep_create(self->fd, ZCX_EP_POLL, 0, &p));
	thread = zcx_test_polling_thread();
	ASSERT_LT(0, thread);
	/* Without work, the thread goes to sleep after poll_idle_us. */
	for (ms = 0; ms < limit; ms++) {
		flags = __atomic_load_n(p.sq_flags, __ATOMIC_RELAXED);
		if ((flags & ZCX_SQ_NEED_WAKEUP) && zcx_test_thread_state(thread) == 'S' &&
		    flags == __atomic_load_n(p.sq_flags, __ATOMIC_RELAXED))
			break;
		usleep(1000);
	}
	ASSERT_TRUE(flags & ZCX_SQ_NEED_WAKEUP);
	ASSERT_EQ('S', zcx_test_thread_state(thread));
	zcx_raw_push(&p, &sqe);
	ASSERT_EQ(1, zcx_raw_enter(&p, 1, 0, 0));
	ASSERT_EQ(1, zcx_raw_pop(&p, &cqe));
	EXPECT_EQ(9, cqe.user_data);
	EXPECT_EQ(0, cqe.res);
	EXPECT_EQ(*p.sq_tail, __atomic_load_n(p.sq_head, __ATOMIC_ACQUIRE));
	/* Not woken: it sleeps on. */
	EXPECT_EQ(flags, *p.sq_flags);
	/* Nothing left to take; and the thread still serves when woken. */
	EXPECT_EQ(0, zcx_raw_enter(&p, 1, 0, 0));
	ASSERT_EQ(0, polled_nop(&p));
	EXPECT_EQ(0, zcx_raw_ep_destroy(&p));
}

/* Wait, bounded, until @p's sq_flags are @flags. */
static bool sq_flags_become(struct zcx_raw_ep *p, __u32 flags)
{
	unsigned int ms;

	for (ms = 0; ms < 10000 * zcx_test_slowdown(); ms++) {
		if (__atomic_load_n(p->sq_flags, __ATOMIC_RELAXED) == flags)
			return true;
		usleep(1000);
	}
	return false;
}

/*
 * Kill the polling thread of polled endpoint @p's context, as the kernel
 * does to end a fault it waits in for a dying process, and wait until it
 * serves no more and @p reads so: 0, -EPERM without CAP_KILL, or -1.
 * The flags alone do not tell: a live thread asleep while others want
 * its CPU sets the same.  A killed one waits in the only idle ('I') wait
 * it has, and has said it is dead before it first gets there.
 */
static int kill_polling_thread(struct zcx_raw_ep *p)
{
	pid_t thread;

	if (polled_nop(p))
		return -1;
	thread = zcx_test_polling_thread();
	if (thread <= 0)
		return -1;
	if (kill(thread, SIGKILL))
		return errno == EPERM ? -EPERM : -1;
	if (!zcx_test_await_thread_state(&thread, 'I', 10000 * zcx_test_slowdown()))
		return -1;
	return sq_flags_become(p, ZCX_SQ_NEED_WAKEUP | ZCX_SQ_CPU_SHARED) ? 0 : -1;
}

/*
 * The polling thread can be killed (the kernel does, to end a fault it
 * waits in for a dying process): it then serves no more, and says so.
 * Its endpoints, and any created later, read asleep and sharing its CPU,
 * which has the process take its submissions itself; the context closes
 * as usual.
 */
TEST_F_TIMEOUT(raw, killed_polling_thread_leaves_the_submissions_to_the_process, 120)
{
	const __u32 dead = ZCX_SQ_NEED_WAKEUP | ZCX_SQ_CPU_SHARED;
	struct zcx_sqe sqe = { .opcode = ZCX_OP_NOP, .user_data = 11 };
	struct zcx_raw_ep p, q;
	struct zcx_cqe cqe;
	int ret;

	ASSERT_EQ(0, zcx_raw_ep_create(self->fd, ZCX_EP_POLL, 0, &p));
	ret = kill_polling_thread(&p);
	if (ret == -EPERM)
		SKIP(return, "no CAP_KILL");
	ASSERT_EQ(0, ret) TH_LOG("sq_flags %#x", *p.sq_flags);

	/* What libzcx does then: the doorbell takes the entry. */
	zcx_raw_push(&p, &sqe);
	ASSERT_EQ(1, zcx_raw_enter(&p, 1, ZCX_ENTER_SQ_WAKEUP, 0));
	ASSERT_EQ(1, zcx_raw_pop(&p, &cqe));
	EXPECT_EQ(11, cqe.user_data);
	EXPECT_EQ(0, cqe.res);
	/* Woken, it says it again. */
	EXPECT_TRUE(sq_flags_become(&p, dead)) TH_LOG("sq_flags %#x", *p.sq_flags);
	/* A wait takes what is published, whatever to_submit says. */
	zcx_raw_push(&p, &sqe);
	ASSERT_EQ(1, zcx_raw_enter(&p, 0, ZCX_ENTER_GETEVENTS, 1));
	ASSERT_EQ(1, zcx_raw_pop(&p, &cqe));
	EXPECT_EQ(0, cqe.res);

	ASSERT_EQ(0, zcx_raw_ep_create(self->fd, ZCX_EP_POLL, 0, &q));
	EXPECT_TRUE(sq_flags_become(&q, dead)) TH_LOG("sq_flags %#x", *q.sq_flags);
	zcx_raw_push(&q, &sqe);
	ASSERT_EQ(1, zcx_raw_enter(&q, 1, 0, 0));
	ASSERT_EQ(1, zcx_raw_pop(&q, &cqe));
	EXPECT_EQ(0, cqe.res);
	EXPECT_EQ(0, zcx_raw_ep_destroy(&q));
	EXPECT_EQ(0, zcx_raw_ep_destroy(&p));
}

/*
 * With the polling thread killed, a wait takes what is published; if the
 * CQ has no room for it, the entry stays, and the wait, which took
 * nothing it was asked to, is no failure: it returns the completions
 * there.  It used to fail with EBUSY, and libzcx's blocking calls then
 * returned while their requests were still owed a completion.
 */
TEST_F_TIMEOUT(raw, wait_with_a_full_cq_after_the_polling_thread_died, 120)
{
	struct zcx_sqe sqe = { .opcode = ZCX_OP_NOP };
	struct zcx_raw_ep p;
	struct zcx_cqe cqe;
	int ret;
	__u32 i;

	ASSERT_EQ(0, zcx_raw_ep_create(self->fd, ZCX_EP_POLL, 4, &p));
	ret = kill_polling_thread(&p);
	if (ret == -EPERM)
		SKIP(return, "no CAP_KILL");
	ASSERT_EQ(0, ret) TH_LOG("sq_flags %#x", *p.sq_flags);

	for (i = 0; i < p.c.cq_entries; i++) {
		sqe.user_data = i;
		zcx_raw_push(&p, &sqe);
		ASSERT_EQ(1, zcx_raw_enter(&p, 1, 0, 0));
	}
	sqe.user_data = 100;
	zcx_raw_push(&p, &sqe);
	EXPECT_EQ(0, zcx_raw_enter(&p, 0, ZCX_ENTER_GETEVENTS, 1));
	for (i = 0; i < p.c.cq_entries; i++) {
		ASSERT_EQ(1, zcx_raw_pop(&p, &cqe));
		EXPECT_EQ(i, cqe.user_data);
	}
	EXPECT_EQ(0, zcx_raw_pop(&p, &cqe));
	/* Room now: the next wait takes it. */
	ASSERT_EQ(1, zcx_raw_enter(&p, 0, ZCX_ENTER_GETEVENTS, 1));
	ASSERT_EQ(1, zcx_raw_pop(&p, &cqe));
	EXPECT_EQ(100, cqe.user_data);
	EXPECT_EQ(0, zcx_raw_ep_destroy(&p));
}

/* The cgroup v2 line ("0::/path") of /proc/@pid/cgroup into @line: 0, or -1. */
static int cgroup2_of(pid_t pid, char *line, size_t len)
{
	char path[64];
	int ret = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	f = fopen(path, "re");
	while (f && ret && fgets(line, len, f))
		ret = strncmp(line, "0::", 3) ? -1 : 0;
	if (f)
		fclose(f);
	return ret;
}

/*
 * A polling thread joins the cgroups of the process that starts it, as a
 * thread of that process would: the CPU it spins on is the job's, not the
 * node's.  The test process moves into a cgroup (v2) of its own, then
 * opens a context and creates a polled endpoint.
 */
TEST_F_TIMEOUT(raw, polling_thread_runs_in_its_creators_cgroup, 120)
{
	char mnt[64] = "/tmp/zcx-cgroup-XXXXXX", dir[96], procs[128], root_procs[96];
	char mine[160] = "", its[160] = "", pid[16];
	struct zcx_raw_ep p;
	unsigned int ms;
	pid_t thread = 0;
	int fd, ret;

	ASSERT_NE(NULL, mkdtemp(mnt));
	if (mount("cgroup2", mnt, "cgroup2", 0, NULL)) {
		rmdir(mnt);
		SKIP(return, "no cgroup2: %s", strerror(errno));
	}
	snprintf(dir, sizeof(dir), "%s/zcx-poller-%d", mnt, (int)getpid());
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	snprintf(root_procs, sizeof(root_procs), "%s/cgroup.procs", mnt);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	EXPECT_EQ(0, mkdir(dir, 0755));
	EXPECT_EQ(0, zcx_test_write_file(procs, pid));

	/* A context of its own: its polling thread goes when it is closed. */
	fd = open("/dev/zcx", O_RDWR | O_CLOEXEC);
	EXPECT_LE(0, fd);
	ret = fd < 0 ? -1 : zcx_raw_ep_create(fd, ZCX_EP_POLL, 0, &p);
	EXPECT_EQ(0, ret);
	if (!ret) {
		thread = zcx_test_polling_thread();
		EXPECT_LT(0, thread);
		EXPECT_EQ(0, cgroup2_of(getpid(), mine, sizeof(mine)));
		EXPECT_EQ(0, thread > 0 ? cgroup2_of(thread, its, sizeof(its)) : -1);
		EXPECT_STREQ(mine, its);
		EXPECT_NE(0, strcmp(mine, "0::/\n")) TH_LOG("the process did not move");
		EXPECT_EQ(0, zcx_raw_ep_destroy(&p));
	}
	if (fd >= 0)
		close(fd);

	EXPECT_EQ(0, zcx_test_write_file(root_procs, pid));
	/* Empty once the thread, stopped as the context went, is gone. */
	for (ms = 0; rmdir(dir) && errno == EBUSY && ms < 10000 * zcx_test_slowdown(); ms++)
		usleep(1000);
	EXPECT_EQ(-1, access(dir, F_OK)) TH_LOG("%s stays: %s", dir, strerror(errno));
	umount2(mnt, MNT_DETACH);
	rmdir(mnt);
}

/* Bad submissions fail in their completion, and the ring goes on. */
TEST_F(raw, bad_submissions)
{
	struct zcx_sqe good = { .opcode = ZCX_OP_NOP, .user_data = 7 }, sqe;
	struct zcx_ep_connect conn = { 0 };
	struct zcx_cqe cqe;
	char buf[64];

	sqe = good;
	sqe.opcode = 200;
	EXPECT_EQ(-EINVAL, raw_one(&self->r, &sqe, &cqe));
	EXPECT_EQ(7, cqe.user_data);
	sqe = good;
	sqe.flags = 1;
	EXPECT_EQ(-EINVAL, raw_one(&self->r, &sqe, &cqe));
	sqe = good;
	sqe.reserved = 1;
	EXPECT_EQ(-EINVAL, raw_one(&self->r, &sqe, &cqe));
	/* Flags: known ones, on a receive only. */
	sqe = (struct zcx_sqe){ .opcode = ZCX_OP_RECV, .flags = ZCX_SQE_FLAGS + 1 };
	EXPECT_EQ(-EINVAL, raw_one(&self->r, &sqe, &cqe));
	/* Nothing is connected to the endpoint: no message can ever come. */
	sqe.flags = ZCX_SQE_CONNECTED;
	EXPECT_EQ(-ECONNRESET, raw_one(&self->r, &sqe, &cqe));
	/* No such connection or barrier. */
	sqe = (struct zcx_sqe){ .opcode = ZCX_OP_SEND, .peer = 999, .addr = (uintptr_t)buf,
				.len = sizeof(buf), .user_data = 8 };
	EXPECT_EQ(-EINVAL, raw_one(&self->r, &sqe, &cqe));
	EXPECT_EQ(8, cqe.user_data);
	sqe.opcode = ZCX_OP_PUT;
	EXPECT_EQ(-EINVAL, raw_one(&self->r, &sqe, &cqe));
	sqe.opcode = ZCX_OP_GET;
	EXPECT_EQ(-EINVAL, raw_one(&self->r, &sqe, &cqe));
	sqe = (struct zcx_sqe){ .opcode = ZCX_OP_BARRIER, .peer = 999 };
	EXPECT_EQ(-EINVAL, raw_one(&self->r, &sqe, &cqe));
	/* A small (inline) send from memory that is not there, to ourselves. */
	conn.ep = self->r.c.ep;
	conn.addr = self->r.c.addr;
	ASSERT_EQ(0, zcx_test_ioctl(self->fd, ZCX_IOC_EP_CONNECT, &conn));
	sqe = (struct zcx_sqe){ .opcode = ZCX_OP_SEND, .peer = conn.peer, .addr = 0x10, .len = 100,
				.user_data = 9 };
	EXPECT_EQ(-EFAULT, raw_one(&self->r, &sqe, &cqe));
	EXPECT_EQ(9, cqe.user_data);
	EXPECT_EQ(0, raw_one(&self->r, &good, &cqe));
	EXPECT_EQ(7, cqe.user_data);
}

/* Receive the message of tag 5 into @buf: its completion, in the enter. */
static int recv_now(struct zcx_raw_ep *r, void *buf, size_t len, struct zcx_cqe *cqe)
{
	struct zcx_sqe sqe = { .opcode = ZCX_OP_RECV, .tag = 5, .tag_mask = ~0ULL,
			       .addr = (uintptr_t)buf, .len = len, .user_data = 2 };

	zcx_raw_push(r, &sqe);
	if (zcx_raw_enter(r, 1, 0, 0) != 1)
		return -100000;
	/* None: the receive was posted, the message gone. */
	return zcx_raw_pop(r, cqe) ? cqe->res : -100001;
}

/*
 * A receive into memory it cannot write fails (EFAULT) and leaves the
 * small message it matched queued: the next receive gets it, whole, also
 * into memory that must be faulted in first (its copy cannot fault).
 */
TEST_F(raw, recv_into_bad_memory_leaves_the_message)
{
	const long page = sysconf(_SC_PAGESIZE);
	struct zcx_ep_connect conn = { .ep = self->r.c.ep, .addr = self->r.c.addr };
	char msg[100], got[sizeof(msg)] = { 0 };
	char *gone, *ro, *half, *fresh;
	struct zcx_sqe sqe;
	struct zcx_cqe cqe;
	unsigned int i;

	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (char)(i * 7 + 1);
	gone = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ro = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	half = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	fresh = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, gone);
	ASSERT_NE(MAP_FAILED, ro);
	ASSERT_NE(MAP_FAILED, half);
	ASSERT_NE(MAP_FAILED, fresh);
	ASSERT_EQ(0, munmap(gone, page));
	ASSERT_EQ(0, munmap(half + page, page));
	ASSERT_EQ(0, zcx_test_ioctl(self->fd, ZCX_IOC_EP_CONNECT, &conn));
	for (i = 0; i < 2; i++) {
		/* Inline, and nobody receives yet: it completes at once, queued. */
		sqe = (struct zcx_sqe){ .opcode = ZCX_OP_SEND, .peer = conn.peer, .tag = 5,
					.addr = (uintptr_t)msg, .len = sizeof(msg),
					.user_data = 1 };
		ASSERT_EQ(0, raw_one(&self->r, &sqe, &cqe));
	}
	EXPECT_EQ(-EFAULT, recv_now(&self->r, gone, sizeof(msg), &cqe));
	EXPECT_EQ(-EFAULT, recv_now(&self->r, ro, sizeof(msg), &cqe));
	EXPECT_EQ(-EFAULT, recv_now(&self->r, (void *)-4096UL, sizeof(msg), &cqe));
	/* Its first half writable, its second unmapped. */
	EXPECT_EQ(-EFAULT, recv_now(&self->r, half + page - sizeof(msg) / 2, sizeof(msg), &cqe));
	/* Both messages still there. */
	ASSERT_EQ(0, recv_now(&self->r, got, sizeof(msg), &cqe)) TH_LOG("the message is gone");
	EXPECT_EQ(sizeof(msg), cqe.len);
	EXPECT_EQ(0, memcmp(msg, got, sizeof(msg)));
	/* Never touched: no page there until the receive faults it in. */
	ASSERT_EQ(0, recv_now(&self->r, fresh + 10, sizeof(msg), &cqe)) TH_LOG("the message is gone");
	EXPECT_EQ(sizeof(msg), cqe.len);
	EXPECT_EQ(0, memcmp(msg, fresh + 10, sizeof(msg)));
	munmap(ro, page);
	munmap(half, page);
	munmap(fresh, page);
}

/*
 * Posted receives hold their regions: the cache's byte limit counts them
 * as in use, and a receive that would pin past it fails (ENOMEM) instead
 * of evicting one of theirs, which would unpin nothing.
 */
TEST_F(raw, posted_receives_keep_the_byte_limit)
{
	const size_t limit = 1 << 20, each = limit / 4, n = 8;
	struct zcx_limits lim = { .flags = ZCX_LIMIT_SET_BYTES, .cache_bytes = limit };
	long long pinned = zcx_test_stat("pinned_pages");
	const long page = sysconf(_SC_PAGESIZE);
	unsigned int refused = 0;
	struct zcx_sqe sqe;
	struct zcx_cqe cqe;
	char *buf;
	size_t i;

	buf = zcx_test_anon(n * each);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, zcx_test_ioctl(self->fd, ZCX_IOC_LIMITS, &lim));
	/* Nobody sends: each is posted, its region pinned, or refused. */
	for (i = 0; i < n; i++) {
		sqe = (struct zcx_sqe){ .opcode = ZCX_OP_RECV, .tag = i, .tag_mask = ~0ULL,
					.addr = (uintptr_t)(buf + i * each), .len = each,
					.user_data = i + 1 };
		zcx_raw_push(&self->r, &sqe);
	}
	ASSERT_EQ(n, zcx_raw_enter(&self->r, n, 0, 0));
	while (zcx_raw_pop(&self->r, &cqe)) {
		EXPECT_EQ(-ENOMEM, cqe.res) TH_LOG("receive %llu", cqe.user_data);
		EXPECT_LT(limit / each, cqe.user_data) TH_LOG("an early receive refused");
		refused++;
	}
	EXPECT_EQ(n - limit / each, refused);
	EXPECT_GE((long long)(limit / page), zcx_test_stat("pinned_pages") - pinned);
	/* The teardown's destroy fails the posted ones and unpins. */
	munmap(buf, n * each);
}

TEST_F(raw, ep_create_bad_args_and_limit)
{
	struct zcx_query q = { 0 };
	struct zcx_ep_create c;
	unsigned int made = 1;

	ASSERT_EQ(0, zcx_test_ioctl(self->fd, ZCX_IOC_QUERY, &q));
	memset(&c, 0, sizeof(c));
	c.flags = 1U << 7;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, ZCX_IOC_EP_CREATE, &c));
	memset(&c, 0, sizeof(c));
	c.flags = ~ZCX_EP_FLAGS;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, ZCX_IOC_EP_CREATE, &c));
	memset(&c, 0, sizeof(c));
	c.reserved[3] = 1;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, ZCX_IOC_EP_CREATE, &c));
	memset(&c, 0, sizeof(c));
	c.sq_entries = 65536;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, ZCX_IOC_EP_CREATE, &c));
	memset(&c, 0, sizeof(c));
	c.sq_entries = ~0U;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, ZCX_IOC_EP_CREATE, &c));
	/* Rounded up to a power of two. */
	memset(&c, 0, sizeof(c));
	c.sq_entries = 5;
	ASSERT_EQ(0, zcx_test_ioctl(self->fd, ZCX_IOC_EP_CREATE, &c));
	EXPECT_EQ(8, c.sq_entries);
	EXPECT_EQ(16, c.cq_entries);
	made++;
	/*
	 * Nothing failed took an endpoint: exactly max_endpoints exist
	 * before ENOSPC.
	 */
	ASSERT_GE(ZCX_MAX_ENDPOINTS, q.max_endpoints);
	for (; made < q.max_endpoints; made++) {
		memset(&c, 0, sizeof(c));
		c.sq_entries = 1;
		ASSERT_EQ(0, zcx_test_ioctl(self->fd, ZCX_IOC_EP_CREATE, &c)) TH_LOG("endpoint %u", made);
	}
	memset(&c, 0, sizeof(c));
	c.sq_entries = 1;
	EXPECT_EQ(-ENOSPC, zcx_test_ioctl(self->fd, ZCX_IOC_EP_CREATE, &c));
	/* The first endpoint still works. */
	{
		struct zcx_sqe sqe = { .opcode = ZCX_OP_NOP, .user_data = 3 };
		struct zcx_cqe cqe;

		EXPECT_EQ(0, raw_one(&self->r, &sqe, &cqe));
	}
}

TEST_F(raw, ep_destroy_connect_enter_bad_args)
{
	struct zcx_ep_destroy d;
	struct zcx_ep_connect conn;
	struct zcx_enter e;
	struct zcx_sqe sqe = { .opcode = ZCX_OP_NOP, .user_data = 5 };
	struct zcx_cqe cqe;

	memset(&d, 0, sizeof(d));
	d.ep = self->r.c.ep + 1000;
	EXPECT_EQ(-ENOENT, zcx_test_ioctl(self->fd, ZCX_IOC_EP_DESTROY, &d));
	d.ep = ZCX_MAX_ENDPOINTS;
	EXPECT_EQ(-ENOENT, zcx_test_ioctl(self->fd, ZCX_IOC_EP_DESTROY, &d));
	d.ep = ~0U;
	EXPECT_EQ(-ENOENT, zcx_test_ioctl(self->fd, ZCX_IOC_EP_DESTROY, &d));
	d.ep = self->r.c.ep;
	d.flags = 1;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, ZCX_IOC_EP_DESTROY, &d));
	d.flags = 0;
	d.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, ZCX_IOC_EP_DESTROY, &d));

	memset(&conn, 0, sizeof(conn));
	conn.ep = self->r.c.ep + 1000;
	conn.addr = self->r.c.addr;
	EXPECT_EQ(-ENOENT, zcx_test_ioctl(self->fd, ZCX_IOC_EP_CONNECT, &conn));
	conn.ep = self->r.c.ep;
	conn.flags = 1;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, ZCX_IOC_EP_CONNECT, &conn));
	conn.flags = 0;
	conn.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, ZCX_IOC_EP_CONNECT, &conn));
	conn.reserved[0] = 0;
	conn.addr.key ^= 0x100;
	EXPECT_EQ(-ECONNREFUSED, zcx_test_ioctl(self->fd, ZCX_IOC_EP_CONNECT, &conn));
	/* Its own address, rightly: a loopback connection. */
	conn.addr = self->r.c.addr;
	EXPECT_EQ(0, zcx_test_ioctl(self->fd, ZCX_IOC_EP_CONNECT, &conn));

	memset(&e, 0, sizeof(e));
	e.ep = self->r.c.ep + 1000;
	EXPECT_EQ(-ENOENT, zcx_test_ioctl(self->fd, ZCX_IOC_ENTER, &e));
	e.ep = self->r.c.ep;
	e.flags = 1U << 9;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, ZCX_IOC_ENTER, &e));
	e.flags = 0;
	e.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, ZCX_IOC_ENTER, &e));
	e.reserved[0] = 0;
	e.flags = ZCX_ENTER_GETEVENTS;
	e.min_complete = self->r.c.cq_entries + 1;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, ZCX_IOC_ENTER, &e));
	/* Nothing to take, nothing to wait for. */
	EXPECT_EQ(0, zcx_raw_enter(&self->r, 0, 0, 0));

	/* All that changed nothing: the endpoint is there and works. */
	EXPECT_EQ(0, raw_one(&self->r, &sqe, &cqe));
	EXPECT_EQ(5, cqe.user_data);
}

TEST_F(raw, expose_bad_args)
{
	struct zcx_test_census mid;
	struct zcx_expose x;
	struct zcx_unexpose u;
	char *buf = zcx_test_anon(64 * 1024);

	ASSERT_NE(NULL, buf);
	mid = zcx_test_census();
	memset(&x, 0, sizeof(x));
	x.addr = (uintptr_t)buf;
	x.length = 64 * 1024;
	x.rights = 0;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, ZCX_IOC_EXPOSE, &x));
	x.rights = 1U << 5;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, ZCX_IOC_EXPOSE, &x));
	x.rights = ZCX_REMOTE_ALL;
	x.flags = 1;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, ZCX_IOC_EXPOSE, &x));
	x.flags = 0;
	x.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, ZCX_IOC_EXPOSE, &x));
	x.reserved[1] = 0;
	x.length = 0;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, ZCX_IOC_EXPOSE, &x));
	x.length = 64 * 1024;
	x.addr = 0x1000;
	EXPECT_EQ(-EFAULT, zcx_test_ioctl(self->fd, ZCX_IOC_EXPOSE, &x));
	/* Nothing pinned by any of that. */
	EXPECT_EQ(NULL, zcx_test_census_diff(&mid));

	memset(&u, 0, sizeof(u));
	u.rkey = 0x12345;
	EXPECT_EQ(-ENOENT, zcx_test_ioctl(self->fd, ZCX_IOC_UNEXPOSE, &u));
	x.addr = (uintptr_t)buf;
	ASSERT_EQ(0, zcx_test_ioctl(self->fd, ZCX_IOC_EXPOSE, &x));
	u.rkey = x.rkey;
	u.flags = 1;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, ZCX_IOC_UNEXPOSE, &u));
	u.flags = 0;
	u.pad = 1;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, ZCX_IOC_UNEXPOSE, &u));
	u.pad = 0;
	u.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, ZCX_IOC_UNEXPOSE, &u));
	u.reserved[0] = 0;
	/* The key survived the bad attempts. */
	EXPECT_EQ(0, zcx_test_ioctl(self->fd, ZCX_IOC_UNEXPOSE, &u));
	EXPECT_EQ(-ENOENT, zcx_test_ioctl(self->fd, ZCX_IOC_UNEXPOSE, &u));
	munmap(buf, 64 * 1024);
}

/* mmap()'s errno for @len bytes at @offset of @fd, 0 if it mapped. */
static int map_errno(int fd, size_t len, int flags, uint64_t offset)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, fd, (off_t)offset);

	if (p == MAP_FAILED)
		return -errno;
	munmap(p, len);
	return 0;
}

TEST_F(raw, barrier_bad_args)
{
	struct zcx_bar_create bc;
	struct zcx_bar_join bj;
	struct zcx_bar_state *page;
	struct zcx_sqe sqe;
	struct zcx_cqe cqe;
	int ret;

	memset(&bc, 0, sizeof(bc));
	bc.ep = self->r.c.ep + 1000;
	bc.nprocs = 2;
	EXPECT_EQ(-ENOENT, zcx_test_ioctl(self->fd, ZCX_IOC_BAR_CREATE, &bc));
	bc.ep = self->r.c.ep;
	bc.nprocs = 0;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, ZCX_IOC_BAR_CREATE, &bc));
	bc.nprocs = ZCX_MAX_BARRIER_PROCS + 1;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, ZCX_IOC_BAR_CREATE, &bc));
	bc.nprocs = 2;
	bc.flags = 1;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, ZCX_IOC_BAR_CREATE, &bc));
	bc.flags = 0;
	bc.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, ZCX_IOC_BAR_CREATE, &bc));
	bc.reserved[1] = 0;
	ASSERT_EQ(0, zcx_test_ioctl(self->fd, ZCX_IOC_BAR_CREATE, &bc));
	EXPECT_EQ(ZCX_ADDR_BARRIER, bc.addr.kind);

	/* Its state page: one shared page, at that offset only. */
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, bc.mmap_offset);
	ASSERT_NE(MAP_FAILED, page);
	EXPECT_EQ(0, page->round);
	EXPECT_EQ(0, page->broken);
	EXPECT_EQ(0, munmap(page, 4096));
	EXPECT_EQ(-EINVAL, map_errno(self->fd, 8192, MAP_SHARED, bc.mmap_offset));
	EXPECT_EQ(-EINVAL, map_errno(self->fd, 4096, MAP_PRIVATE, bc.mmap_offset));
	EXPECT_EQ(-EINVAL, map_errno(self->fd, 4096, MAP_SHARED, bc.mmap_offset + 4096));
	/* The next number is no barrier of ours, nor is another endpoint's. */
	EXPECT_EQ(-EINVAL, map_errno(self->fd, 4096, MAP_SHARED, bc.mmap_offset + (1 << 24)));
	EXPECT_EQ(-EINVAL, map_errno(self->fd, 4096, MAP_SHARED,
				     bc.mmap_offset + (1ULL << 32)));
	/* Rounds are 32-bit. */
	sqe = (struct zcx_sqe){ .opcode = ZCX_OP_BARRIER, .peer = bc.bar, .tag = 1ULL << 32 };
	EXPECT_EQ(-EINVAL, raw_one(&self->r, &sqe, &cqe));

	memset(&bj, 0, sizeof(bj));
	bj.ep = self->r.c.ep + 1000;
	bj.addr = bc.addr;
	EXPECT_EQ(-ENOENT, zcx_test_ioctl(self->fd, ZCX_IOC_BAR_JOIN, &bj));
	bj.ep = self->r.c.ep;
	bj.flags = 1;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, ZCX_IOC_BAR_JOIN, &bj));
	bj.flags = 0;
	bj.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, ZCX_IOC_BAR_JOIN, &bj));
	bj.reserved[0] = 0;
	bj.addr.key ^= 1;
	EXPECT_EQ(-ECONNREFUSED, zcx_test_ioctl(self->fd, ZCX_IOC_BAR_JOIN, &bj));
	/* An endpoint's address is not a barrier's. */
	bj.addr = self->r.c.addr;
	ret = zcx_test_ioctl(self->fd, ZCX_IOC_BAR_JOIN, &bj);
	EXPECT_TRUE(ret == -ECONNREFUSED || ret == -EINVAL) TH_LOG("%d", ret);
}

static void on_signal(int sig)
{
	(void)sig;
}

/*
 * A submission stuck in a page fault (an inline send's payload on a page
 * under a userfaultfd that nobody serves) holds its endpoint's submission
 * ring for as long as its process likes.  Another thread's ZCX_IOC_ENTER
 * on that endpoint waits for the ring interruptibly: a signal ends the
 * wait (EINTR, nothing taken).  An uninterruptible wait could not be
 * ended, and the hung-task detector would report it after two minutes.
 */
TEST_F_TIMEOUT(raw, enter_behind_a_stuck_submission_is_interruptible, 120)
{
	struct sigaction plain = { .sa_handler = on_signal }, old;	/* no SA_RESTART */
	long page_size = sysconf(_SC_PAGESIZE);
	struct zcx_raw_ep stuck_ep, live_ep;
	struct zcx_raw_stuck first = { .r = &stuck_ep }, second = { .r = &stuck_ep };
	struct zcx_ep_connect conn = { 0 };
	struct uffdio_zeropage zp = { 0 };
	struct pollfd fault = { .events = POLLIN };
	pthread_t first_thread, second_thread;
	struct timespec deadline;
	struct zcx_sqe sqe;
	struct zcx_cqe cqe;
	char got[64], zeros[64] = { 0 };
	int joined;
	char *page = zcx_test_anon(page_size);

	ASSERT_NE(NULL, page);
	fault.fd = zcx_test_uffd(page, page_size);
	ASSERT_LE(0, fault.fd);
	ASSERT_EQ(0, sigaction(SIGUSR1, &plain, &old));
	ASSERT_EQ(0, zcx_raw_ep_create(self->fd, 0, 0, &stuck_ep));
	ASSERT_EQ(0, zcx_raw_ep_create(self->fd, 0, 0, &live_ep));
	conn.ep = stuck_ep.c.ep;
	conn.addr = live_ep.c.addr;
	ASSERT_EQ(0, zcx_test_ioctl(self->fd, ZCX_IOC_EP_CONNECT, &conn));
	sqe = (struct zcx_sqe){ .opcode = ZCX_OP_SEND, .peer = conn.peer,
				.addr = (uintptr_t)page, .len = sizeof(got) };
	zcx_raw_push(&stuck_ep, &sqe);

	ASSERT_EQ(0, pthread_create(&first_thread, NULL, zcx_raw_stuck_enter, &first));
	ASSERT_EQ(1, poll(&fault, 1, 60000));
	/* The second finds the ring held, with nothing left to take. */
	ASSERT_EQ(0, pthread_create(&second_thread, NULL, zcx_raw_stuck_enter, &second));
	EXPECT_TRUE(zcx_test_await_thread_state(&second.tid, 'S', 10000))
		TH_LOG("ZCX_IOC_ENTER waits for the ring, state '%c'",
		       zcx_test_thread_state(second.tid));
	ASSERT_EQ(0, pthread_kill(second_thread, SIGUSR1));
	ASSERT_EQ(0, clock_gettime(CLOCK_REALTIME, &deadline));
	deadline.tv_sec += 10 * zcx_test_slowdown();
	joined = pthread_timedjoin_np(second_thread, NULL, &deadline);
	EXPECT_EQ(0, joined) TH_LOG("the signal did not end the wait");
	if (!joined)
		EXPECT_EQ(-EINTR, second.ret);

	/* Serve the fault: the send goes on. */
	zp.range.start = (uintptr_t)page;
	zp.range.len = page_size;
	ASSERT_EQ(0, ioctl(fault.fd, UFFDIO_ZEROPAGE, &zp));
	ASSERT_EQ(0, pthread_join(first_thread, NULL));
	if (joined)
		ASSERT_EQ(0, pthread_join(second_thread, NULL));
	EXPECT_EQ(1, first.ret);
	memset(got, 0xff, sizeof(got));
	sqe = (struct zcx_sqe){ .opcode = ZCX_OP_RECV, .addr = (uintptr_t)got, .len = sizeof(got) };
	zcx_raw_push(&live_ep, &sqe);
	ASSERT_EQ(1, zcx_raw_enter(&live_ep, 1, ZCX_ENTER_GETEVENTS, 1));
	ASSERT_EQ(1, zcx_raw_pop(&live_ep, &cqe));
	EXPECT_EQ(0, cqe.res);
	EXPECT_EQ(sizeof(got), cqe.len);
	/* The page the fault was served with: zeros. */
	EXPECT_EQ(0, memcmp(got, zeros, sizeof(got)));
	EXPECT_EQ(0, zcx_raw_ep_destroy(&stuck_ep));
	EXPECT_EQ(0, zcx_raw_ep_destroy(&live_ep));
	close(fault.fd);
	munmap(page, page_size);
	sigaction(SIGUSR1, &old, NULL);
}

/*
 * A polled endpoint's send whose memory is missing under a userfaultfd
 * that nobody serves: its polling thread waits in that fault, as the
 * process's own thread would in ZCX_IOC_ENTER, for as long as the process
 * likes.  Whatever the process does next must not leave anything stuck:
 * killed while another of its threads destroys that endpoint, or closing
 * its handle.  Both used to wait for the thread for ever, unkillable,
 * with nobody left to serve the fault.  A child does it; the parent
 * watches, bounded, since a failure is a task that never ends.
 */
FIXTURE(stuck) {
	struct zcx_test_census before;
	int report[2];		/* the child's steps, to the parent */
	pid_t child;
};

FIXTURE_VARIANT(stuck) {
	size_t len;
};

#define STUCK_INLINE_LEN	64

/* The thread copies the payload from the process's memory. */
FIXTURE_VARIANT_ADD(stuck, inline) {
	.len = STUCK_INLINE_LEN,
};

/* The thread pins the buffer (a registration missed). */
FIXTURE_VARIANT_ADD(stuck, zero_copy) {
	.len = 64 * KiB,
};

/*
 * Whether the send may fail instead of waiting in the fault: only a pin
 * may (6.1's long-term pin fails on a missing userfaultfd page); a copy
 * always waits, and not waiting there is a failure.
 */
static bool stuck_may_not_wait(const FIXTURE_VARIANT(stuck) *variant)
{
	return variant->len > STUCK_INLINE_LEN;
}

FIXTURE_SETUP(stuck)
{
	self->before = zcx_test_census();
	self->child = -1;
	ASSERT_EQ(0, pipe2(self->report, O_CLOEXEC));
}

FIXTURE_TEARDOWN(stuck)
{
	const char *leaked;

	/* A child left by a failed step: it may hold the context. */
	if (self->child > 0 && waitpid(self->child, NULL, WNOHANG) == 0) {
		kill(self->child, SIGKILL);
		waitpid(self->child, NULL, 0);
	}
	close(self->report[0]);
	if (self->report[1] >= 0)
		close(self->report[1]);
	leaked = zcx_test_census_settle(&self->before, 10000);
	EXPECT_EQ(NULL, leaked) TH_LOG("%s not back where the test began", leaked);
}

/* What the child tells the parent. */
enum stuck_step {
	STUCK_IN_FAULT = 1,	/* the polling thread waits in the fault */
	STUCK_NO_WAIT,		/* the kernel failed the send rather than wait */
	STUCK_DESTROYING,	/* a thread waits to destroy the endpoint */
	STUCK_CLOSED,		/* close() returned */
	STUCK_FAILED,		/* a step failed: see the child's output */
};

struct stuck_poller {
	int fd;
	struct zcx_raw_ep polled, live;
	char *mem;
	size_t map_len;		/* @mem's, whole pages */
	int uffd;
};

/*
 * In the child: a polled endpoint sends @len bytes of memory that is
 * missing under a userfaultfd; STUCK_IN_FAULT once its polling thread
 * waits in the fault, STUCK_NO_WAIT if the send completes first (with an
 * error), else STUCK_FAILED.
 */
static enum stuck_step stuck_poller_start(struct stuck_poller *s, size_t len)
{
	unsigned int ms, limit = 60000 * zcx_test_slowdown();
	struct zcx_ep_connect conn = { 0 };
	struct pollfd fault = { .events = POLLIN };
	struct zcx_sqe sqe;
	struct zcx_cqe cqe;
	long page = sysconf(_SC_PAGESIZE);

	s->fd = zcx_test_open();
	s->map_len = (len + page - 1) / page * page;
	s->mem = zcx_test_anon(s->map_len);
	if (s->fd < 0 || !s->mem ||
	    zcx_raw_ep_create(s->fd, ZCX_EP_POLL, 0, &s->polled) ||
	    zcx_raw_ep_create(s->fd, 0, 0, &s->live))
		return STUCK_FAILED;
	conn.ep = s->polled.c.ep;
	conn.addr = s->live.c.addr;
	s->uffd = zcx_test_uffd(s->mem, s->map_len);
	if (s->uffd < 0 || zcx_test_ioctl(s->fd, ZCX_IOC_EP_CONNECT, &conn))
		return STUCK_FAILED;
	sqe = (struct zcx_sqe){ .opcode = ZCX_OP_SEND, .peer = conn.peer,
				.addr = (uintptr_t)s->mem, .len = len };
	zcx_raw_push(&s->polled, &sqe);
	if ((*s->polled.sq_flags & ZCX_SQ_NEED_WAKEUP) &&
	    zcx_raw_enter(&s->polled, 0, ZCX_ENTER_SQ_WAKEUP, 0) < 0)
		return STUCK_FAILED;
	fault.fd = s->uffd;
	for (ms = 0; ms < limit; ms += 10) {
		if (poll(&fault, 1, 10) == 1)
			return STUCK_IN_FAULT;
		if (zcx_raw_pop(&s->polled, &cqe)) {
			printf("# the send completed with %d without waiting\n", cqe.res);
			return cqe.res < 0 ? STUCK_NO_WAIT : STUCK_FAILED;
		}
	}
	return STUCK_FAILED;
}

/* Undo stuck_poller_start(), once the send is over. */
static void stuck_poller_end(struct stuck_poller *s)
{
	zcx_raw_ep_destroy(&s->polled);
	zcx_raw_ep_destroy(&s->live);
	close(s->uffd);
	close(s->fd);
	munmap(s->mem, s->map_len);
}

static void stuck_report(int fd, enum stuck_step step)
{
	char c = step;

	if (write(fd, &c, 1) != 1)
		_exit(3);
}

/* In the parent after fork(): a child that dies silently ends the reports. */
static void stuck_parent(int report[2])
{
	close(report[1]);
	report[1] = -1;
}

/* The child's next step, or 0 if it told none in time. */
static enum stuck_step stuck_next(int fd)
{
	struct pollfd in = { .fd = fd, .events = POLLIN };
	char c;

	if (poll(&in, 1, 90000 * zcx_test_slowdown()) != 1 || read(fd, &c, 1) != 1)
		return 0;
	return c;
}

/* Whether the child ends within 60 s (×ZCX_SLOW); its wait status in *status. */
static bool stuck_child_ends(pid_t child, int *status)
{
	int ms;

	for (ms = 0; ms < 60000 * (int)zcx_test_slowdown(); ms += 10) {
		if (waitpid(child, status, WNOHANG) == child)
			return true;
		usleep(10000);
	}
	return false;
}

/* The child got to its step, or the test is skipped or fails. */
#define STUCK_EXPECT_STEP(self, want) do {					\
	enum stuck_step got = stuck_next((self)->report[0]);			\
										\
	if (got == STUCK_NO_WAIT && stuck_may_not_wait(variant)) {		\
		kill((self)->child, SIGKILL);					\
		waitpid((self)->child, NULL, 0);				\
		SKIP(return, "this kernel fails the pin rather than wait in the fault"); \
	}									\
	ASSERT_EQ(want, got);							\
} while (0)

TEST_F_TIMEOUT(stuck, killed_while_destroying_the_endpoint, 300)
{
	int status;

	self->child = fork();
	ASSERT_LE(0, self->child);
	if (!self->child) {
		struct zcx_raw_stuck destroy = { 0 };
		struct stuck_poller s;
		enum stuck_step step;
		pthread_t thread;

		step = stuck_poller_start(&s, variant->len);
		stuck_report(self->report[1], step);
		if (step != STUCK_IN_FAULT)
			_exit(1);
		destroy.r = &s.polled;
		if (pthread_create(&thread, NULL, zcx_raw_stuck_destroy, &destroy) ||
		    !zcx_test_await_thread_state(&destroy.tid, 'D', 10000 * zcx_test_slowdown())) {
			stuck_report(self->report[1], STUCK_FAILED);
			_exit(1);
		}
		stuck_report(self->report[1], STUCK_DESTROYING);
		pause();
		_exit(2);
	}
	stuck_parent(self->report);
	STUCK_EXPECT_STEP(self, STUCK_IN_FAULT);
	ASSERT_EQ(STUCK_DESTROYING, stuck_next(self->report[0]));
	ASSERT_EQ(0, kill(self->child, SIGKILL));
	ASSERT_TRUE(stuck_child_ends(self->child, &status))
		TH_LOG("the killed child did not end: a task is stuck");
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) TH_LOG("%#x", status);
}

TEST_F_TIMEOUT(stuck, closing_the_handle, 300)
{
	int status;

	self->child = fork();
	ASSERT_LE(0, self->child);
	if (!self->child) {
		struct stuck_poller s;
		enum stuck_step step;

		step = stuck_poller_start(&s, variant->len);
		stuck_report(self->report[1], step);
		if (step != STUCK_IN_FAULT)
			_exit(1);
		/* The rings' mappings hold the file: without them, close() releases it. */
		munmap(s.polled.map, s.polled.c.mmap_size);
		munmap(s.live.map, s.live.c.mmap_size);
		close(s.fd);
		stuck_report(self->report[1], STUCK_CLOSED);
		_exit(0);
	}
	stuck_parent(self->report);
	STUCK_EXPECT_STEP(self, STUCK_IN_FAULT);
	EXPECT_EQ(STUCK_CLOSED, stuck_next(self->report[0]))
		TH_LOG("close() did not return");
	if (!stuck_child_ends(self->child, &status)) {
		kill(self->child, SIGKILL);
		ASSERT_TRUE(stuck_child_ends(self->child, &status))
			TH_LOG("the child, killed, did not end: a task is stuck");
	}
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) TH_LOG("%#x", status);
}

/*
 * And the thread does wait, as the process's own would: once the fault
 * is served, the send completes and the receiver gets the bytes.
 */
TEST_F_TIMEOUT(stuck, served_fault_completes_the_send, 300)
{
	unsigned int ms, limit = 60000 * zcx_test_slowdown();
	long page = sysconf(_SC_PAGESIZE);
	size_t map_len = (variant->len + page - 1) / page * page;
	struct zcx_sqe sqe = { .opcode = ZCX_OP_RECV };
	struct uffdio_copy copy = { 0 };
	struct stuck_poller s;
	enum stuck_step step;
	struct zcx_cqe cqe;
	char *pattern, *got;
	size_t i;

	/* UFFDIO_COPY copies whole pages. */
	pattern = zcx_test_anon(map_len);
	got = zcx_test_anon(variant->len);
	ASSERT_NE(NULL, pattern);
	ASSERT_NE(NULL, got);
	for (i = 0; i < variant->len; i++)
		pattern[i] = (char)(i * 7 + 3);
	step = stuck_poller_start(&s, variant->len);
	if (step == STUCK_NO_WAIT && stuck_may_not_wait(variant)) {
		stuck_poller_end(&s);
		SKIP(goto out, "this kernel fails the pin rather than wait in the fault");
	}
	ASSERT_EQ(STUCK_IN_FAULT, step);

	copy.dst = (uintptr_t)s.mem;
	copy.src = (uintptr_t)pattern;
	copy.len = s.map_len;
	ASSERT_EQ(0, ioctl(s.uffd, UFFDIO_COPY, &copy));
	/* A zero-copy send completes once received. */
	sqe.addr = (uintptr_t)got;
	sqe.len = variant->len;
	zcx_raw_push(&s.live, &sqe);
	ASSERT_EQ(1, zcx_raw_enter(&s.live, 1, ZCX_ENTER_GETEVENTS, 1));
	ASSERT_EQ(1, zcx_raw_pop(&s.live, &cqe));
	EXPECT_EQ(0, cqe.res);
	EXPECT_EQ(variant->len, cqe.len);
	EXPECT_EQ(0, memcmp(pattern, got, variant->len));
	for (ms = 0; ms < limit && !zcx_raw_pop(&s.polled, &cqe); ms++)
		usleep(1000);
	ASSERT_LT(ms, limit) TH_LOG("the send did not complete");
	EXPECT_EQ(0, cqe.res);

	stuck_poller_end(&s);
out:
	munmap(pattern, map_len);
	munmap(got, variant->len);
}

/* Wait in ZCX_IOC_ENTER for a completion, taking nothing. */
static void *wait_for_one(void *arg)
{
	struct zcx_raw_stuck *w = arg;

	__atomic_store_n(&w->tid, gettid(), __ATOMIC_RELEASE);
	w->ret = zcx_raw_enter(w->r, 0, ZCX_ENTER_GETEVENTS, 1);
	return NULL;
}

/*
 * Root kills the polling thread while it waits in the fault: the fault
 * ends (the send fails), and a thread that waits in ZCX_IOC_ENTER for an
 * entry the thread never took, on another polled endpoint, comes back
 * to take it: the process goes on without the thread.
 */
TEST_F_TIMEOUT(stuck, killed_polling_thread_leaves_the_rest_to_the_process, 300)
{
	struct zcx_sqe nop = { .opcode = ZCX_OP_NOP, .user_data = 12 };
	unsigned int ms, limit = 60000 * zcx_test_slowdown();
	struct zcx_raw_stuck w = { 0 };
	struct timespec deadline;
	struct stuck_poller s;
	struct zcx_raw_ep other;
	enum stuck_step step;
	struct zcx_cqe cqe;
	pthread_t waiter;
	pid_t thread;

	step = stuck_poller_start(&s, variant->len);
	if (step == STUCK_NO_WAIT && stuck_may_not_wait(variant)) {
		stuck_poller_end(&s);
		SKIP(return, "this kernel fails the pin rather than wait in the fault");
	}
	ASSERT_EQ(STUCK_IN_FAULT, step);
	ASSERT_EQ(0, zcx_raw_ep_create(s.fd, ZCX_EP_POLL, 0, &other));
	zcx_raw_push(&other, &nop);
	w.r = &other;
	ASSERT_EQ(0, pthread_create(&waiter, NULL, wait_for_one, &w));
	ASSERT_TRUE(zcx_test_await_thread_state(&w.tid, 'S', 10000));
	/* Still waiting in the fault: the entry was not taken. */
	EXPECT_EQ(0, __atomic_load_n(other.sq_head, __ATOMIC_ACQUIRE));

	thread = zcx_test_polling_thread();
	ASSERT_LT(0, thread);
	if (kill(thread, SIGKILL) && errno == EPERM)
		SKIP(return, "no CAP_KILL");
	ASSERT_EQ(0, clock_gettime(CLOCK_REALTIME, &deadline));
	deadline.tv_sec += 60 * zcx_test_slowdown();
	ASSERT_EQ(0, pthread_timedjoin_np(waiter, NULL, &deadline))
		TH_LOG("the waiter was not woken");
	EXPECT_LE(0, w.ret);
	/* Woken, it left the entry to a call made from now on: this one. */
	if (!zcx_raw_pop(&other, &cqe)) {
		ASSERT_EQ(1, zcx_raw_enter(&other, 0, ZCX_ENTER_GETEVENTS, 1));
		ASSERT_EQ(1, zcx_raw_pop(&other, &cqe));
	}
	EXPECT_EQ(12, cqe.user_data);
	EXPECT_EQ(0, cqe.res);

	/* The send the thread was taking failed. */
	for (ms = 0; ms < limit && !zcx_raw_pop(&s.polled, &cqe); ms++)
		usleep(1000);
	ASSERT_LT(ms, limit) TH_LOG("the send did not complete");
	EXPECT_GT(0, cqe.res);

	EXPECT_EQ(0, zcx_raw_ep_destroy(&other));
	stuck_poller_end(&s);
}

ZCX_NET_HARNESS_MAIN
