// SPDX-License-Identifier: GPL-2.0-only
/*
 * zcx_barrier_test - barriers across processes: groups of 2, 3, 8 and 64
 * processes pass 10,000 rounds each (3 on polled endpoints 1,000;
 * ZCX_BARRIER_ROUNDS overrides the count), checked every round; a member
 * that leaves (exit, SIGKILL, destroyed endpoint, closed handle) breaks
 * the barrier and the others get -ECONNRESET instead of hanging (also
 * when the exiting member's child still holds its handle); the
 * create/join rules.  The same for libzcx's groups (zcx_group_barrier(),
 * the barrier across nodes), on this node and through the RDMA backend
 * (zcx_net.h), where a member that got every message of a barrier is also
 * through it if the others left before its own messages reached them.
 *
 * Every member is a forked process with its own handle and endpoint; with
 * more members than CPUs they wait without spinning (ZCX_SPIN=0), but in
 * group.n8_spin, where they spin as by default (libzcx then yields at
 * every poll: on up to 7 CPUs).
 * Round check: before arriving at round r a member writes r + 1 into its
 * slot of a shared array; after the barrier every slot must hold r + 1
 * (or r + 2, from a member already past the barrier): a barrier that let
 * anyone through early, or let anyone run two rounds ahead, shows.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "kselftest_harness.h"
#include "zcx_net.h"
#include "zcx_test.h"
#include "zcx_xfer.h"

#define MAX_MEMBERS	64
#define MAX_GROUP_ADDRS	(MAX_MEMBERS * 6)	/* zcx_group_addr_count(64) each */

/* Which barrier the members run. */
enum spread {
	SPREAD_NONE,	/* the module's barrier of the node */
	SPREAD_LOCAL,	/* a zcx_group, its connections through the module */
	SPREAD_NET,	/* a zcx_group through the RDMA backend */
};

static unsigned int rounds(void)
{
	const char *env = getenv("ZCX_BARRIER_ROUNDS");

	return env && atoi(env) > 0 ? (unsigned int)atoi(env) : 10000 / zcx_test_slowdown();
}

/*
 * A group of forked members.  Member 0 creates the barrier and publishes
 * its address in shared memory; the others are forked after that and
 * join.  Everyone reports "ready" on a pipe and waits for the parent's
 * "go" so that no one arrives before all joined.
 */
struct group {
	unsigned int n;
	unsigned int ep_flags;
	enum spread spread;
	bool spin;		/* spin even with more members than CPUs */
	pid_t pid[MAX_MEMBERS];
	/* Shared with the members. */
	struct shared {
		struct zcx_addr addr;
		uint64_t slot[MAX_MEMBERS];
		/* A zcx_group's: every member's addresses, member after member. */
		struct zcx_addr gaddr[MAX_GROUP_ADDRS];
	} *sh;
	int ready[2], go[2], finish[2];
};

struct member {
	struct zcx *zcx;
	struct zcx_ep *ep;
	uint32_t bar;
	struct zcx_group *grp;
	unsigned int me;
};

typedef int (*member_fn)(struct group *g, struct member *m, void *arg);

static int member_setup(struct group *g, struct member *m)
{
	int ret;

	ret = zcx_open(&m->zcx, 0);
	if (!ret && g->spread) {
		ret = zcx_group_create(m->zcx, g->n, m->me, g->ep_flags, &m->grp);
		if (!ret)
			zcx_group_addrs(m->grp, &g->sh->gaddr[m->me * zcx_group_addr_count(g->n)]);
		goto out;
	}
	if (!ret)
		ret = zcx_ep_create(m->zcx, g->ep_flags, 16, &m->ep);
	if (!ret && m->me == 0)
		ret = zcx_barrier_create(m->ep, g->n, &g->sh->addr, &m->bar);
	if (!ret && m->me != 0)
		ret = zcx_barrier_join(m->ep, &g->sh->addr, &m->bar);
out:
	if (ret)
		fprintf(stderr, "# member %u: setting up: %s\n", m->me, zcx_strerror(ret));
	return ret;
}

static void member_main(struct group *g, unsigned int me, pid_t parent, member_fn fn, void *arg)
{
	struct member m = { .me = me };
	char c = 0;
	int ret;

	xdie_with_parent(parent);
	/*
	 * More members than CPUs: a member spinning for its completion only
	 * keeps the ones it waits for off the CPU.  Sleep at once, unless the
	 * case is the spin itself (then as by default, whatever we inherited).
	 */
	if (g->spin)
		unsetenv("ZCX_SPIN");
	else if (g->n > sysconf(_SC_NPROCESSORS_ONLN))
		setenv("ZCX_SPIN", "0", 1);
	close(g->ready[0]);
	close(g->go[1]);
	close(g->finish[1]);
	if (member_setup(g, &m))
		_exit(100);
	if (xwrite(g->ready[1], &c, 1) || xread(g->go[0], &c, 1))
		_exit(101);
	/* Every member published its addresses before "go". */
	if (m.grp) {
		ret = zcx_group_connect(m.grp, g->sh->gaddr,
					g->spread == SPREAD_NET ? ZCX_CONNECT_NET : 0);
		if (ret) {
			fprintf(stderr, "# member %u: connecting: %s\n", me, zcx_strerror(ret));
			_exit(102);
		}
	}
	ret = fn(g, &m, arg);
	zcx_group_destroy(m.grp);
	if (m.ep)
		zcx_ep_destroy(m.ep);
	if (m.zcx)
		zcx_close(m.zcx);
	_exit(ret);
}

/* Fork the members, let them set up, release them: 0 or -1. */
static int group_start(struct group *g, unsigned int n, unsigned int ep_flags,
		       enum spread spread, bool spin, member_fn fn, void *arg)
{
	pid_t parent = getpid();
	unsigned int i;
	char c;

	memset(g, 0, sizeof(*g));
	g->n = n;
	g->ep_flags = ep_flags | (spread == SPREAD_NET ? ZCX_EP_NET : 0);
	g->spread = spread;
	g->spin = spin;
	g->sh = xmap_shared(sizeof(*g->sh));
	if (!g->sh || pipe(g->ready) || pipe(g->go) || pipe(g->finish))
		return -1;
	fflush(NULL);
	for (i = 0; i < n; i++) {
		g->pid[i] = fork();
		if (g->pid[i] < 0)
			return -1;
		if (g->pid[i] == 0)
			member_main(g, i, parent, fn, arg);
		/* The others need member 0's address: wait until it made it. */
		if (i == 0 && xread(g->ready[0], &c, 1))
			return -1;
	}
	for (i = 1; i < n; i++)
		if (xread(g->ready[0], &c, 1))
			return -1;
	for (i = 0; i < n; i++)
		if (xwrite(g->go[1], &c, 1))
			return -1;
	return 0;
}

/* Reap member @i: its exit status, 128 + signal if killed. */
static int group_reap(struct group *g, unsigned int i)
{
	int ret = xreap(g->pid[i]);

	g->pid[i] = 0;
	return ret;
}

static void group_end(struct group *g)
{
	unsigned int i;

	for (i = 0; i < g->n; i++)
		if (g->pid[i] > 0) {
			kill(g->pid[i], SIGKILL);
			xreap(g->pid[i]);
		}
	close(g->ready[0]);
	close(g->ready[1]);
	close(g->go[0]);
	close(g->go[1]);
	close(g->finish[0]);
	if (g->finish[1] >= 0)
		close(g->finish[1]);
	munmap(g->sh, sizeof(*g->sh));
}

/* Rounds [first, last) with the check described at the top. */
static int member_rounds(struct group *g, struct member *m, unsigned int first, unsigned int last)
{
	unsigned int r, j;
	int ret;

	for (r = first; r < last; r++) {
		__atomic_store_n(&g->sh->slot[m->me], r + 1, __ATOMIC_RELEASE);
		ret = m->grp ? zcx_group_barrier(m->grp) : zcx_barrier(m->ep, m->bar);
		if (ret) {
			fprintf(stderr, "# member %u: round %u: barrier: %s\n", m->me, r,
				zcx_strerror(ret));
			return 1;
		}
		for (j = 0; j < g->n; j++) {
			uint64_t v = __atomic_load_n(&g->sh->slot[j], __ATOMIC_ACQUIRE);

			if (v != r + 1 && v != r + 2) {
				fprintf(stderr, "# member %u: after round %u member %u is at %llu\n",
					m->me, r, j, (unsigned long long)v);
				return 1;
			}
		}
	}
	return 0;
}

static int rounds_fn(struct group *g, struct member *m, void *arg)
{
	return member_rounds(g, m, 0, *(unsigned int *)arg);
}

FIXTURE(group) {
	struct zcx_test_census before;
	struct group g;
};

FIXTURE_VARIANT(group) {
	unsigned int n;
	unsigned int ep_flags;
	bool spin;
};

/* On 2 CPUs, more than 2 members sleep in the module at once (ZCX_SPIN=0). */
FIXTURE_VARIANT_ADD(group, n2) { .n = 2 };
FIXTURE_VARIANT_ADD(group, n3) { .n = 3 };
FIXTURE_VARIANT_ADD(group, n8) { .n = 8 };
/* Or spin, taking turns on the CPUs. */
FIXTURE_VARIANT_ADD(group, n8_spin) { .n = 8, .spin = true };
FIXTURE_VARIANT_ADD(group, n64) { .n = 64 };
FIXTURE_VARIANT_ADD(group, n3_polled) { .n = 3, .ep_flags = ZCX_EP_POLL };

FIXTURE_SETUP(group)
{
	self->before = zcx_test_census();
}

FIXTURE_TEARDOWN(group)
{
	const char *leaked = zcx_test_census_settle(&self->before, 10000);

	EXPECT_EQ(NULL, leaked) TH_LOG("%s not back where the test began", leaked);
}

TEST_F_TIMEOUT(group, rounds, 600)
{
	unsigned int n = rounds(), i;
	uint64_t t0 = xnow_ns();

	/*
	 * Three polling threads and three members on 2 CPUs take turns, and
	 * so do eight spinning members (a round took 2 to 22 ms in emulated
	 * guests, which ran past the program's time limit): fewer.
	 */
	if ((variant->ep_flags & ZCX_EP_POLL) || variant->spin)
		n = n / 10 ? n / 10 : 1;

	ASSERT_EQ(0, group_start(&self->g, variant->n, variant->ep_flags, SPREAD_NONE, variant->spin,
				 rounds_fn, &n));
	for (i = 0; i < variant->n; i++) {
		int status = group_reap(&self->g, i);

		EXPECT_EQ(0, status) TH_LOG("member %u", i);
	}
	TH_LOG("%u processes, %u rounds: %.1f us per round", variant->n, n,
	       (xnow_ns() - t0) / 1e3 / n);
	for (i = 0; i < variant->n; i++)
		EXPECT_EQ(n, self->g.sh->slot[i]);
	group_end(&self->g);
}

/*
 * A broken barrier: after some good rounds the victim leaves; the others
 * then arrive (before or after it left) and must get -ECONNRESET, and
 * again at the next arrival, within a bounded time.
 */
enum { LEAVE_EXIT, LEAVE_EXIT_FORKED, LEAVE_KILL, LEAVE_DESTROY, LEAVE_CLOSE };

#define BROKEN_N	4
#define BROKEN_GOOD	50

struct broken {
	int how;
	unsigned int victim;
};

static int broken_fn(struct group *g, struct member *m, void *arg)
{
	struct broken *b = arg;
	struct zcx_req req = xreq(NULL);
	char c = 0;

	if (member_rounds(g, m, 0, BROKEN_GOOD))
		return 1;
	if (m->me == b->victim) {
		switch (b->how) {
		case LEAVE_EXIT:
			_exit(0);
		case LEAVE_EXIT_FORKED: {
			struct zcx *later;

			/*
			 * A child inherits the handle, and another the member
			 * opened later (a second context of the same mm, the
			 * first on the module's list of them), and keeps them
			 * open, unused, until the parent says: the member's
			 * exit alone must break the barrier.
			 */
			CK_EQ(0, zcx_open(&later, 0));
			switch (fork()) {
			case -1:
				_exit(99);
			case 0:
				xread(g->finish[0], &c, 1);
				_exit(0);
			}
			_exit(0);
		}
		case LEAVE_KILL:
			/* Tell the parent, who kills us. */
			CK_EQ(0, xwrite(g->ready[1], &c, 1));
			break;
		case LEAVE_DESTROY:
			zcx_ep_destroy(m->ep);
			m->ep = NULL;
			break;
		case LEAVE_CLOSE:
			/* The handle's endpoints go with it. */
			zcx_close(m->zcx);
			m->zcx = NULL;
			m->ep = NULL;
			break;
		}
		/* Alive, without the endpoint, until the parent says. */
		xread(g->finish[0], &c, 1);
		return 0;
	}
	CK_EQ(0, zcx_ibarrier(m->ep, m->bar, &req));
	CK_EQ(-ECONNRESET, xwait_bounded(m->ep, &req, 10000));
	CK_EQ(-ECONNRESET, req.status);
	/* And every later arrival. */
	req = xreq(NULL);
	CK_EQ(0, zcx_ibarrier(m->ep, m->bar, &req));
	CK_EQ(-ECONNRESET, xwait_bounded(m->ep, &req, 10000));
	CK_EQ(-ECONNRESET, zcx_barrier(m->ep, m->bar));
	return 0;
}

FIXTURE(broken) {
	struct zcx_test_census before;
	struct group g;
};

FIXTURE_VARIANT(broken) {
	int how;
	unsigned int victim;
};

FIXTURE_VARIANT_ADD(broken, joiner_exits) { .how = LEAVE_EXIT, .victim = BROKEN_N - 1 };
FIXTURE_VARIANT_ADD(broken, creator_exits) { .how = LEAVE_EXIT, .victim = 0 };
FIXTURE_VARIANT_ADD(broken, joiner_exits_child_keeps_handle) {
	.how = LEAVE_EXIT_FORKED, .victim = 1
};
FIXTURE_VARIANT_ADD(broken, joiner_killed) { .how = LEAVE_KILL, .victim = 2 };
FIXTURE_VARIANT_ADD(broken, joiner_destroys_endpoint) { .how = LEAVE_DESTROY, .victim = 1 };
FIXTURE_VARIANT_ADD(broken, creator_closes_handle) { .how = LEAVE_CLOSE, .victim = 0 };

FIXTURE_SETUP(broken)
{
	self->before = zcx_test_census();
}

FIXTURE_TEARDOWN(broken)
{
	const char *leaked = zcx_test_census_settle(&self->before, 10000);

	EXPECT_EQ(NULL, leaked) TH_LOG("%s not back where the test began", leaked);
}

TEST_F_TIMEOUT(broken, others_get_econnreset, 90)
{
	struct broken b = { .how = variant->how, .victim = variant->victim };
	unsigned int i;
	char c;

	ASSERT_EQ(0, group_start(&self->g, BROKEN_N, 0, SPREAD_NONE, false, broken_fn, &b));
	if (b.how == LEAVE_KILL) {
		ASSERT_EQ(0, xread(self->g.ready[0], &c, 1));
		ASSERT_EQ(0, kill(self->g.pid[b.victim], SIGKILL));
	}
	for (i = 0; i < BROKEN_N; i++) {
		int status;

		if (i == b.victim)
			continue;
		status = group_reap(&self->g, i);
		EXPECT_EQ(0, status) TH_LOG("member %u", i);
	}
	/* Let a victim that stayed alive go. */
	close(self->g.finish[1]);
	self->g.finish[1] = -1;
	EXPECT_EQ(b.how == LEAVE_KILL ? 128 + SIGKILL : 0, group_reap(&self->g, b.victim));
	group_end(&self->g);
}

/*
 * libzcx's groups (zcx_group_barrier()): the round check, on this node
 * (connections through the module) and through the RDMA backend; then a
 * member killed once all are through the good rounds, and every other
 * member's barrier, and the next one, fail with ECONNRESET instead of
 * hanging.
 */
FIXTURE(spread) {
	struct zcx_test_census before;
	struct group g;
};

FIXTURE_VARIANT(spread) {
	unsigned int n;
	enum spread spread;
};

FIXTURE_VARIANT_ADD(spread, n2) { .n = 2, .spread = SPREAD_LOCAL };
FIXTURE_VARIANT_ADD(spread, n3) { .n = 3, .spread = SPREAD_LOCAL };
FIXTURE_VARIANT_ADD(spread, n8) { .n = 8, .spread = SPREAD_LOCAL };
FIXTURE_VARIANT_ADD(spread, net_n2) { .n = 2, .spread = SPREAD_NET };
FIXTURE_VARIANT_ADD(spread, net_n3) { .n = 3, .spread = SPREAD_NET };

FIXTURE_SETUP(spread)
{
	/* First: the teardown compares with it even after a skip. */
	self->before = zcx_test_census();
	if (variant->spread == SPREAD_NET)
		ZCX_NET_FIXTURE_UP();
}

FIXTURE_TEARDOWN(spread)
{
	const char *leaked = zcx_test_census_settle(&self->before, 10000);

	EXPECT_EQ(NULL, leaked) TH_LOG("%s not back where the test began", leaked);
	if (variant->spread == SPREAD_NET)
		ZCX_NET_FIXTURE_DOWN();
}

TEST_F_TIMEOUT(spread, rounds, 600)
{
	/* A round is ceil(log2 n) messages, each a system call or two: fewer. */
	unsigned int n = rounds() / (variant->spread == SPREAD_NET ? 50 : 10), i;
	uint64_t t0 = xnow_ns();

	n = n ? n : 1;
	ASSERT_EQ(0, group_start(&self->g, variant->n, 0, variant->spread, false, rounds_fn, &n));
	for (i = 0; i < variant->n; i++) {
		EXPECT_EQ(0, group_reap(&self->g, i)) TH_LOG("member %u", i);
	}
	TH_LOG("%u processes, %u rounds: %.1f us per round", variant->n, n,
	       (xnow_ns() - t0) / 1e3 / n);
	for (i = 0; i < variant->n; i++)
		EXPECT_EQ(n, self->g.sh->slot[i]);
	group_end(&self->g);
}

static int spread_killed_fn(struct group *g, struct member *m, void *arg)
{
	unsigned int victim = *(unsigned int *)arg;
	char c = 0;

	if (member_rounds(g, m, 0, BROKEN_GOOD))
		return 1;
	/*
	 * Everyone tells the parent, who kills the victim once all are
	 * through the good rounds: across nodes the victim's last messages
	 * may still be on the wire when it is through, and die with it.
	 */
	CK_EQ(0, xwrite(g->ready[1], &c, 1));
	if (m->me == victim) {
		xread(g->finish[0], &c, 1);
		return 1;
	}
	CK_EQ(-ECONNRESET, zcx_group_barrier(m->grp));
	CK_EQ(-ECONNRESET, zcx_group_barrier(m->grp));
	return 0;
}

TEST_F_TIMEOUT(spread, member_killed, 300)
{
	unsigned int victim = variant->n / 2, i;
	char c;

	ASSERT_EQ(0, group_start(&self->g, variant->n, 0, variant->spread, false, spread_killed_fn,
				 &victim));
	for (i = 0; i < variant->n; i++)
		ASSERT_EQ(0, xread(self->g.ready[0], &c, 1));
	ASSERT_EQ(0, kill(self->g.pid[victim], SIGKILL));
	for (i = 0; i < variant->n; i++) {
		if (i != victim) {
			EXPECT_EQ(0, group_reap(&self->g, i)) TH_LOG("member %u", i);
		}
	}
	EXPECT_EQ(128 + SIGKILL, group_reap(&self->g, victim));
	group_end(&self->g);
}

/*
 * The others got through a barrier and left before this member was: their
 * messages came, its own to them fail (across nodes, the last barrier
 * before a job exits can go so, the acknowledgement of a message coming
 * back after the member that got it left).  It is through all the same;
 * the group is broken then, and the next barrier fails.  The others are
 * endpoints of this process: in each round one that our message goes to
 * and one that sends us theirs.  On the node our sends fail at once;
 * across nodes their connections are torn down by work items, which our
 * sends may beat (then the group breaks at the next barrier): there, only
 * what holds either way is checked.
 */
TEST_F_TIMEOUT(spread, through_after_the_others_left, 300)
{
	bool net = variant->spread == SPREAD_NET;
	unsigned int nrounds = zcx_group_addr_count(variant->n), k;
	struct zcx_ep *to[MAX_MEMBERS], *from[MAX_MEMBERS];
	struct zcx_addr all[MAX_GROUP_ADDRS];
	struct zcx_group *g;
	struct zcx *zcx;
	uint32_t peer;

	memset(all, 0, sizeof(all));
	ASSERT_EQ(0, zcx_open(&zcx, 0));
	ASSERT_EQ(0, zcx_group_create(zcx, variant->n, 0, net ? ZCX_EP_NET : 0, &g));
	zcx_group_addrs(g, all);
	for (k = 0; k < nrounds; k++) {
		ASSERT_EQ(0, zcx_ep_create(zcx, net ? ZCX_EP_NET : 0, 8, &to[k]));
		ASSERT_EQ(0, zcx_ep_create(zcx, net ? ZCX_EP_NET : 0, 8, &from[k]));
		/* Round k's message goes to member 2^k's endpoint k. */
		zcx_ep_addr(to[k], &all[((1U << k) % variant->n) * nrounds + k]);
	}
	ASSERT_EQ(0, zcx_group_connect(g, all, net ? ZCX_CONNECT_NET : 0));
	for (k = 0; k < nrounds; k++) {
		ASSERT_EQ(0, zcx_ep_connect_flags(from[k], &all[k], net ? ZCX_CONNECT_NET : 0,
						  &peer));
		/* Barrier 0's message, taken by the receive the group posted. */
		ASSERT_EQ(0, zcx_send(from[k], peer, NULL, 0, 0));
	}
	for (k = 0; k < nrounds; k++) {
		zcx_ep_destroy(to[k]);
		zcx_ep_destroy(from[k]);
	}
	EXPECT_EQ(0, zcx_group_barrier(g));
	if (!net) {
		/* Broken: its endpoints are gone. */
		zcx_group_addrs(g, all);
		EXPECT_TRUE(xall(all, nrounds * sizeof(all[0]), 0));
	}
	EXPECT_EQ(-ECONNRESET, zcx_group_barrier(g));
	zcx_group_destroy(g);
	zcx_close(zcx);
}

/* The calls' own rules, in one process. */
TEST(group_rules)
{
	struct zcx_addr addrs[3];
	struct zcx_group *g;
	struct zcx *zcx;

	EXPECT_EQ(0, zcx_group_addr_count(1));
	EXPECT_EQ(1, zcx_group_addr_count(2));
	EXPECT_EQ(2, zcx_group_addr_count(3));
	EXPECT_EQ(2, zcx_group_addr_count(4));
	EXPECT_EQ(3, zcx_group_addr_count(5));
	EXPECT_EQ(6, zcx_group_addr_count(64));
	ASSERT_EQ(0, zcx_open(&zcx, 0));
	EXPECT_EQ(-EINVAL, zcx_group_create(zcx, 0, 0, 0, &g));
	EXPECT_EQ(-EINVAL, zcx_group_create(zcx, 2, 2, 0, &g));
	EXPECT_EQ(-EINVAL, zcx_group_create(zcx, ZCX_GROUP_MAX_PROCS + 1, 0, 0, &g));
	/* A group of one: nothing to wait for. */
	ASSERT_EQ(0, zcx_group_create(zcx, 1, 0, 0, &g));
	EXPECT_EQ(0, zcx_group_barrier(g));
	EXPECT_EQ(0, zcx_group_connect(g, addrs, 0));
	EXPECT_EQ(0, zcx_group_barrier(g));
	zcx_group_destroy(g);
	/* Two members, both here: not connected yet, then fine. */
	{
		struct zcx_group *a, *b;

		ASSERT_EQ(0, zcx_group_create(zcx, 2, 0, 0, &a));
		ASSERT_EQ(0, zcx_group_create(zcx, 2, 1, 0, &b));
		EXPECT_EQ(-ENOTCONN, zcx_group_barrier(a));
		zcx_group_addrs(a, &addrs[0]);
		zcx_group_addrs(b, &addrs[1]);
		ASSERT_EQ(0, zcx_group_connect(a, addrs, 0));
		ASSERT_EQ(0, zcx_group_connect(b, addrs, 0));
		EXPECT_EQ(-EISCONN, zcx_group_connect(a, addrs, 0));
		zcx_group_destroy(a);
		/* b's partner is gone: its barrier fails, and stays failed. */
		EXPECT_EQ(-ECONNRESET, zcx_group_barrier(b));
		EXPECT_EQ(-ECONNRESET, zcx_group_barrier(b));
		/* Its endpoints are gone with it: no address to hand out. */
		zcx_group_addrs(b, &addrs[2]);
		EXPECT_EQ(0, addrs[2].kind);
		EXPECT_EQ(0, addrs[2].key);
		zcx_group_destroy(b);
	}
	zcx_group_destroy(NULL);
	zcx_close(zcx);
}

/* A member of polled_last_member_wakes_the_sleepers, on its own thread. */
struct sleeper {
	struct zcx_ep *ep;
	uint32_t bar;
	unsigned int rounds;
	unsigned int done;	/* barriers passed */
	pid_t tid;
	int ret;
};

static void *sleeper_main(void *arg)
{
	struct sleeper *s = arg;
	unsigned int r;
	int ret = 0;

	__atomic_store_n(&s->tid, gettid(), __ATOMIC_RELEASE);
	for (r = 0; r < s->rounds && !ret; r++) {
		ret = zcx_barrier(s->ep, s->bar);
		if (!ret)
			__atomic_store_n(&s->done, r + 1, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&s->ret, ret, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * The last member, on a polled endpoint, wakes the members asleep in the
 * module every round, although its wake-ups' completions are nobody's
 * to reap: round after round, more than its CQ holds.
 */
TEST(polled_last_member_wakes_the_sleepers)
{
	const unsigned int depth = 8, rounds = 5 * depth;	/* the CQ holds 2 * depth */
	struct zcx_test_census before = zcx_test_census();
	struct sleeper s[2] = { 0 };
	struct zcx_ep *last;
	struct timespec until;
	struct zcx_addr addr;
	unsigned int r, i;
	pthread_t t[2];
	struct zcx *zcx;
	int stranded = 0;
	uint64_t deadline;
	uint32_t bar;

	/* Read when an endpoint is created: the sleepers sleep at once. */
	setenv("ZCX_SPIN", "0", 1);
	ASSERT_EQ(0, zcx_open(&zcx, 0));
	ASSERT_EQ(0, zcx_ep_create(zcx, ZCX_EP_POLL, depth, &last));
	ASSERT_EQ(0, zcx_barrier_create(last, 3, &addr, &bar));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, zcx_ep_create(zcx, 0, depth, &s[i].ep));
		ASSERT_EQ(0, zcx_barrier_join(s[i].ep, &addr, &s[i].bar));
		s[i].rounds = rounds;
	}
	unsetenv("ZCX_SPIN");
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, sleeper_main, &s[i]));
	for (r = 0; r < rounds && !stranded; r++) {
		/* Both asleep in the module in round r: we are the last. */
		for (i = 0; i < 2 && !stranded; i++) {
			deadline = xnow_ns() + 10000000000ULL * zcx_test_slowdown();
			while (__atomic_load_n(&s[i].done, __ATOMIC_ACQUIRE) < r &&
			       !__atomic_load_n(&s[i].ret, __ATOMIC_ACQUIRE) && xnow_ns() < deadline)
				sched_yield();
			stranded = __atomic_load_n(&s[i].done, __ATOMIC_ACQUIRE) < r ||
				   !zcx_test_await_thread_state(&s[i].tid, 'S', 10000);
		}
		if (!stranded)
			ASSERT_EQ(0, zcx_barrier(last, bar)) TH_LOG("round %u", r);
	}
	EXPECT_EQ(0, stranded) TH_LOG("round %u: a member not asleep in it (stranded before)",
				      r - 1);
	for (i = 0; i < 2; i++) {
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 10 * zcx_test_slowdown();
		if (stranded || pthread_timedjoin_np(t[i], NULL, &until)) {
			/* Our endpoint gone, the barrier breaks: it ends. */
			zcx_ep_destroy(last);
			last = NULL;
			pthread_join(t[i], NULL);
		}
	}
	for (i = 0; i < 2; i++) {
		EXPECT_EQ(0, s[i].ret);
		EXPECT_EQ(rounds, s[i].done);
		zcx_ep_destroy(s[i].ep);
	}
	zcx_ep_destroy(last);
	zcx_close(zcx);
	EXPECT_EQ(NULL, zcx_test_census_settle(&before, 5000));
}

/* Within one process: several endpoints of one handle. */
FIXTURE(local) {
	struct zcx_test_census before;
	struct zcx *zcx;
	struct zcx_ep *ep[4];
};

FIXTURE_SETUP(local)
{
	int i;

	self->before = zcx_test_census();
	ASSERT_EQ(0, zcx_open(&self->zcx, 0));
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, zcx_ep_create(self->zcx, 0, 16, &self->ep[i]));
}

FIXTURE_TEARDOWN(local)
{
	const char *leaked;
	int i;

	for (i = 0; i < 4; i++)
		zcx_ep_destroy(self->ep[i]);
	zcx_close(self->zcx);
	leaked = zcx_test_census_settle(&self->before, 5000);
	EXPECT_EQ(NULL, leaked) TH_LOG("%s not back where the test began", leaked);
}

TEST_F(local, barrier_of_one)
{
	struct zcx_addr addr;
	uint32_t bar;
	int i;

	ASSERT_EQ(0, zcx_barrier_create(self->ep[0], 1, &addr, &bar));
	EXPECT_EQ(ZCX_ADDR_BARRIER, addr.kind);
	for (i = 0; i < 100; i++)
		ASSERT_EQ(0, zcx_barrier(self->ep[0], bar));
}

/* The barrier waits for the last member, and only for it. */
TEST_F(local, waits_for_all_members)
{
	struct zcx_req req[3];
	struct zcx_addr addr;
	uint32_t bar[3];
	int round, i;

	ASSERT_EQ(0, zcx_barrier_create(self->ep[0], 3, &addr, &bar[0]));
	ASSERT_EQ(0, zcx_barrier_join(self->ep[1], &addr, &bar[1]));
	ASSERT_EQ(0, zcx_barrier_join(self->ep[2], &addr, &bar[2]));
	for (round = 0; round < 20; round++) {
		for (i = 0; i < 2; i++) {
			req[i] = xreq(NULL);
			ASSERT_EQ(0, zcx_ibarrier(self->ep[i], bar[i], &req[i]));
		}
		for (i = 0; i < 2; i++) {
			EXPECT_EQ(0, zcx_test(self->ep[i], &req[i])) TH_LOG("round %d", round);
		}
		for (i = 0; i < 2; i++) {
			EXPECT_EQ(0, zcx_test(self->ep[i], &req[i])) TH_LOG("round %d", round);
		}
		ASSERT_EQ(0, zcx_barrier(self->ep[2], bar[2]));
		for (i = 0; i < 2; i++) {
			ASSERT_EQ(0, xwait_bounded(self->ep[i], &req[i], 10000));
			EXPECT_EQ(0, req[i].status);
		}
	}
}

/* A member's second arrival waits for the round of its first to end. */
TEST_F(local, overlapping_arrivals_take_turns)
{
	struct zcx_req first = xreq(NULL), second = xreq(NULL);
	struct zcx_addr addr;
	uint32_t bar[2];

	ASSERT_EQ(0, zcx_barrier_create(self->ep[0], 2, &addr, &bar[0]));
	ASSERT_EQ(0, zcx_barrier_join(self->ep[1], &addr, &bar[1]));
	ASSERT_EQ(0, zcx_ibarrier(self->ep[0], bar[0], &first));
	ASSERT_EQ(0, zcx_ibarrier(self->ep[0], bar[0], &second));
	EXPECT_EQ(0, zcx_test(self->ep[0], &second));
	ASSERT_EQ(0, zcx_barrier(self->ep[1], bar[1]));
	EXPECT_EQ(1, zcx_test(self->ep[0], &first));
	/* Now it arrives, in the next round, and waits for the other member. */
	EXPECT_EQ(0, zcx_test(self->ep[0], &second));
	ASSERT_EQ(0, zcx_barrier(self->ep[1], bar[1]));
	EXPECT_EQ(1, zcx_test(self->ep[0], &second));
	EXPECT_EQ(0, second.status);
}

TEST_F(local, create_and_join_errors)
{
	struct zcx_addr addr, bad;
	uint32_t bar, b2;

	EXPECT_EQ(-EINVAL, zcx_barrier_create(self->ep[0], 0, &addr, &bar));
	EXPECT_EQ(-EINVAL, zcx_barrier_create(self->ep[0], ZCX_MAX_BARRIER_PROCS + 1, &addr, &bar));
	ASSERT_EQ(0, zcx_barrier_create(self->ep[0], 2, &addr, &bar));
	bad = addr;
	bad.key ^= 1;
	EXPECT_EQ(-ECONNREFUSED, zcx_barrier_join(self->ep[1], &bad, &b2));
	bad = addr;
	bad.id += 1000;
	EXPECT_EQ(-ECONNREFUSED, zcx_barrier_join(self->ep[1], &bad, &b2));
	ASSERT_EQ(0, zcx_barrier_join(self->ep[1], &addr, &b2));
	/* Both members are there. */
	EXPECT_EQ(-EBUSY, zcx_barrier_join(self->ep[2], &addr, &b2));
}

TEST_F(local, barriers_per_endpoint_limit)
{
	struct zcx_addr addr;
	uint32_t bar;
	int i;

	for (i = 0; i < ZCX_MAX_BARRIERS; i++) {
		ASSERT_EQ(0, zcx_barrier_create(self->ep[3], 1, &addr, &bar)) TH_LOG("barrier %d", i);
	}
	EXPECT_EQ(-ENOSPC, zcx_barrier_create(self->ep[3], 1, &addr, &bar));
	/* The endpoint still works with the barriers it has. */
	EXPECT_EQ(0, zcx_barrier(self->ep[3], bar));
}

ZCX_NET_HARNESS_MAIN
