// SPDX-License-Identifier: GPL-2.0-only
/*
 * zcx_security_test - what keeps one process out of another's memory,
 * through the raw ABI (no library):
 *  - keys belong to one object: another region's rkey, keys near a known
 *    one, an endpoint's key for another endpoint or for a barrier, are all
 *    refused, and the target's bytes stay as they were; a revoked rkey
 *    stays dead when the same range is exposed again; memory remapped at
 *    an exposed range is reached with no more than its protection;
 *  - revocation racing transfers: every transfer either fails with EACCES
 *    or moves exactly the bytes of the exposure whose key it used;
 *  - other users: a process that dropped to uid 65534 cannot connect to,
 *    or join a barrier of, root's objects even with the right key, unless
 *    the endpoint opted in with ZCX_EP_ANY_USER (then puts and gets work
 *    with the rkey); root cannot connect to nobody's endpoint either;
 *  - RLIMIT_MEMLOCK: an unprivileged process pins no more than its limit
 *    (registration, expose, and a transfer's own pinning, polled or not:
 *    ENOMEM), gets it back on release (VmPin), and rings and barrier
 *    pages are not charged to it; root with CAP_IPC_LOCK is not limited
 *    (the pins a put or get from another node makes in remapped exposed
 *    memory: zcx_remap_test's pins_count_against_memlock);
 *  - an ioctl whose result cannot be copied out (EFAULT) leaves no object
 *    behind that the caller could not name (a connection another thread
 *    submitted on already stays, to be cleaned up with its endpoint);
 *  - no stale bytes reach userspace: every ioctl's output fields, passed
 *    in holding a pattern, come back with documented values and zeroed
 *    reserved words; the status area, rings and barrier pages hold
 *    nothing but documented values and zeroes; messages shorter than the
 *    receive buffer leave the rest of it alone.
 * Where other selftests already cover a point, they are named below.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "zcx_raw.h"
#include "zcx_creds.h"
#include "zcx_test.h"

#define KiB		1024UL
#define PAT		0xA5
#define PATW		0xA5A5A5A5A5A5A5A5ULL

/* ---- submit and reap on the raw ABI (zcx_raw.h) ---- */

/* Queue one submission and ring the doorbell: 0, or an errno shifted out of range. */
static int rep_submit(struct zcx_raw_ep *r, const struct zcx_sqe *sqe)
{
	int ret;

	zcx_raw_push(r, sqe);
	if (r->c.flags & ZCX_EP_POLL)
		ret = zcx_raw_enter(r, 0, ZCX_ENTER_SQ_WAKEUP, 0);
	else
		ret = zcx_raw_enter(r, 1, 0, 0) == 1 ? 0 : -1;
	return ret < 0 ? -100000 + ret : 0;
}

/* Wait for the next completion: its res with *cqe filled, or below -100000. */
static int rep_reap(struct zcx_raw_ep *r, struct zcx_cqe *cqe)
{
	int ret;

	while (!zcx_raw_pop(r, cqe)) {
		ret = zcx_raw_enter(r, 0, ZCX_ENTER_GETEVENTS, 1);
		if (ret < 0 && ret != -EINTR)
			return -100000 + ret;
	}
	return cqe->res;
}

static int rep_one(struct zcx_raw_ep *r, const struct zcx_sqe *sqe, struct zcx_cqe *cqe)
{
	int ret = rep_submit(r, sqe);

	return ret ? ret : rep_reap(r, cqe);
}

static int rep_connect(struct zcx_raw_ep *r, const struct zcx_addr *addr, __u32 *peer)
{
	struct zcx_ep_connect c = { .ep = r->c.ep, .addr = *addr };
	int ret = zcx_test_ioctl(r->fd, ZCX_IOC_EP_CONNECT, &c);

	if (!ret)
		*peer = c.peer;
	return ret;
}

/* A PUT or GET, waited for: the completion's res. */
static int rep_rma(struct zcx_raw_ep *r, __u8 op, __u32 peer, void *buf, size_t len,
		   uint64_t raddr, uint64_t rkey)
{
	struct zcx_sqe sqe = {
		.opcode = op, .peer = peer, .addr = (uintptr_t)buf, .len = len,
		.remote_addr = raddr, .rkey = rkey, .user_data = 0x5ec,
	};
	struct zcx_cqe cqe;

	return rep_one(r, &sqe, &cqe);
}

static int do_expose(int fd, const void *addr, size_t len, unsigned int rights, uint64_t *rkey)
{
	struct zcx_expose x = { .addr = (uintptr_t)addr, .length = len, .rights = rights };
	int ret = zcx_test_ioctl(fd, ZCX_IOC_EXPOSE, &x);

	if (!ret)
		*rkey = x.rkey;
	return ret;
}

static int do_unexpose(int fd, uint64_t rkey)
{
	struct zcx_unexpose u = { .rkey = rkey };

	return zcx_test_ioctl(fd, ZCX_IOC_UNEXPOSE, &u);
}

/* ---- data ---- */

static void fill(void *buf, size_t len, uint64_t seed)
{
	unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)((seed * 0x9e3779b97f4a7c15ULL + i * 131 + (i >> 8)) >> 3);
}

/*
 * Index of the first byte that is not the pattern, -1 if none; @buf holds
 * the pattern from its byte @start on.
 */
static long long unfilled_at(const void *buf, size_t len, uint64_t seed, size_t start)
{
	const unsigned char *p = buf;
	size_t i, j;

	for (i = 0; i < len; i++) {
		j = start + i;
		if (p[i] != (unsigned char)((seed * 0x9e3779b97f4a7c15ULL + j * 131 + (j >> 8)) >> 3))
			return (long long)i;
	}
	return -1;
}

static long long unfilled(const void *buf, size_t len, uint64_t seed)
{
	return unfilled_at(buf, len, seed, 0);
}

/* Index of the first byte that is not @b, -1 if none. */
static long long not_all(const void *buf, size_t len, unsigned char b)
{
	const unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != b)
			return (long long)i;
	return -1;
}

/* Run @fn in a child (dying with the parent) and return its exit status, or -1. */
static int in_child(int (*fn)(void *), void *arg)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(fn(arg));
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* ---- fixture: leak check around every test ---- */

FIXTURE(sec) {
	struct zcx_test_census before;
};

FIXTURE_SETUP(sec)
{
	self->before = zcx_test_census();
}

FIXTURE_TEARDOWN(sec)
{
	const char *leaked = zcx_test_census_settle(&self->before, 10000);

	EXPECT_EQ(NULL, leaked) TH_LOG("%s not back where the test began", leaked);
}

/*
 * Keys name one object each.  Three contexts of this process (A, B, C;
 * each is its own context with its own keys); A is connected to B only.
 * Wrong-key connects and joins by bit flips are in zcx_fault_test
 * (connect_refused, raw.*) and zcx_barrier_test (create_and_join_errors);
 * read-only/write-only rights and a bogus rkey in zcx_xfer_test
 * (put_get_bounds_and_rights).
 */
TEST_F(sec, keys_belong_to_one_object)
{
	int fa = zcx_test_open(), fb = zcx_test_open(), fc = zcx_test_open();
	struct zcx_bar_create bc = { .nprocs = 2 };
	struct zcx_bar_join bj = { 0 };
	struct zcx_raw_ep a, b, c;
	struct zcx_addr addr;
	char *bufb = zcx_test_anon(64 * KiB), *bufc = zcx_test_anon(64 * KiB);
	char *mine = zcx_test_anon(64 * KiB);
	uint64_t kb, kb2, kb3, kc, guess;
	__u32 pb, peer;
	int i, bit, bad = 0;

	ASSERT_LE(0, fa);
	ASSERT_LE(0, fb);
	ASSERT_LE(0, fc);
	ASSERT_TRUE(bufb && bufc && mine);
	ASSERT_EQ(0, zcx_raw_ep_create(fa, 0, 64, &a));
	ASSERT_EQ(0, zcx_raw_ep_create(fb, 0, 64, &b));
	ASSERT_EQ(0, zcx_raw_ep_create(fc, 0, 64, &c));
	ASSERT_EQ(0, rep_connect(&a, &b.c.addr, &pb));
	fill(bufb, 64 * KiB, 0xb);
	fill(bufc, 64 * KiB, 0xc);
	ASSERT_EQ(0, do_expose(fb, bufb, 32 * KiB, ZCX_REMOTE_ALL, &kb));
	ASSERT_EQ(0, do_expose(fb, bufb + 32 * KiB, 32 * KiB, ZCX_REMOTE_ALL, &kb2));
	ASSERT_EQ(0, do_expose(fc, bufc, 64 * KiB, ZCX_REMOTE_ALL, &kc));
	/* Random, not counted out: two keys of one context are far apart. */
	EXPECT_LT(1ULL << 32, kb > kb2 ? kb - kb2 : kb2 - kb);
	EXPECT_NE(kb, kc);

	/* Control: B's key through the connection to B works. */
	ASSERT_EQ(0, rep_rma(&a, ZCX_OP_GET, pb, mine, 4096, (uintptr_t)bufb, kb));
	EXPECT_EQ(-1, unfilled(mine, 4096, 0xb));

	/* C's key and address through the connection to B: C's key means nothing at B. */
	EXPECT_EQ(-EACCES, rep_rma(&a, ZCX_OP_PUT, pb, mine, 4096, (uintptr_t)bufc, kc));
	memset(mine, 0, 4096);
	EXPECT_EQ(-EACCES, rep_rma(&a, ZCX_OP_GET, pb, mine, 4096, (uintptr_t)bufc, kc));
	EXPECT_EQ(-1, not_all(mine, 4096, 0));

	/* Guesses around a known key: neighbours, single-bit flips, its complement. */
	memset(mine, 0x3c, 4096);
	for (i = -512; i <= 512 && !bad; i++) {
		guess = kb + (int64_t)i;
		if (guess == kb || guess == kb2)
			continue;
		if (rep_rma(&a, ZCX_OP_PUT, pb, mine, 64, (uintptr_t)bufb, guess) != -EACCES)
			bad = i;
	}
	EXPECT_EQ(0, bad) TH_LOG("rkey %+d from a known one was accepted", bad);
	for (bit = 0; bit < 64; bit++) {
		guess = kb ^ (1ULL << bit);
		if (guess != kb2) {
			EXPECT_EQ(-EACCES, rep_rma(&a, ZCX_OP_PUT, pb, mine, 64,
						   (uintptr_t)bufb, guess)) TH_LOG("bit %d", bit);
		}
	}
	EXPECT_EQ(-EACCES, rep_rma(&a, ZCX_OP_PUT, pb, mine, 64, (uintptr_t)bufb, ~kb));
	EXPECT_EQ(-EACCES, rep_rma(&a, ZCX_OP_PUT, pb, mine, 64, (uintptr_t)bufb, 0));
	EXPECT_EQ(-1, unfilled(bufb, 64 * KiB, 0xb));
	EXPECT_EQ(-1, unfilled(bufc, 64 * KiB, 0xc));

	/* Revoked and exposed again: a new key; the old one stays dead. */
	ASSERT_EQ(0, do_unexpose(fb, kb));
	ASSERT_EQ(0, do_expose(fb, bufb, 32 * KiB, ZCX_REMOTE_ALL, &kb3));
	EXPECT_NE(kb, kb3);
	EXPECT_EQ(-EACCES, rep_rma(&a, ZCX_OP_PUT, pb, mine, 4096, (uintptr_t)bufb, kb));
	EXPECT_EQ(-EACCES, rep_rma(&a, ZCX_OP_GET, pb, mine, 4096, (uintptr_t)bufb, kb));
	EXPECT_EQ(-1, unfilled(bufb, 64 * KiB, 0xb));
	fill(mine, 4096, 0xd);
	EXPECT_EQ(0, rep_rma(&a, ZCX_OP_PUT, pb, mine, 4096, (uintptr_t)bufb, kb3));
	EXPECT_EQ(-1, unfilled(bufb, 4096, 0xd));
	EXPECT_EQ(-1, unfilled_at(bufb + 4096, 60 * KiB, 0xb, 4096));

	/* An endpoint's key opens that endpoint only, and no barrier. */
	addr = c.c.addr;
	addr.key = b.c.addr.key;
	EXPECT_EQ(-ECONNREFUSED, rep_connect(&a, &addr, &peer));
	addr = b.c.addr;
	addr.key = c.c.addr.key;
	EXPECT_EQ(-ECONNREFUSED, rep_connect(&a, &addr, &peer));
	bc.ep = b.c.ep;
	ASSERT_EQ(0, zcx_test_ioctl(fb, ZCX_IOC_BAR_CREATE, &bc));
	bj.ep = a.c.ep;
	bj.addr = bc.addr;
	bj.addr.key = b.c.addr.key;
	EXPECT_EQ(-ECONNREFUSED, zcx_test_ioctl(fa, ZCX_IOC_BAR_JOIN, &bj));
	/* And a barrier's key opens no endpoint. */
	addr = b.c.addr;
	addr.key = bc.addr.key;
	EXPECT_EQ(-ECONNREFUSED, rep_connect(&a, &addr, &peer));
	bj.addr = bc.addr;
	EXPECT_EQ(0, zcx_test_ioctl(fa, ZCX_IOC_BAR_JOIN, &bj));

	zcx_raw_ep_destroy(&a);
	zcx_raw_ep_destroy(&b);
	zcx_raw_ep_destroy(&c);
	close(fa);
	close(fb);
	close(fc);
	munmap(bufb, 64 * KiB);
	munmap(bufc, 64 * KiB);
	munmap(mine, 64 * KiB);
}

/*
 * A key reaches the memory mapped at its range now (the header), but
 * never with more than the owner's protection of that memory: after
 * munmap + mmap of read-only memory there, a put fails and changes
 * nothing while a get works; PROT_NONE memory refuses both.  (mprotect()
 * of the memory that was exposed keeps the pinned pages writable for
 * peers, by design, as for ibv_reg_mr(): not checked here.)
 */
TEST_F(sec, remapped_range_keeps_owner_protection)
{
	int fa = zcx_test_open(), fb = zcx_test_open();
	char *bufb = zcx_test_anon(64 * KiB), *mine = zcx_test_anon(64 * KiB);
	struct zcx_raw_ep a, b;
	uint64_t kb;
	__u32 pb;
	int ret;

	ASSERT_LE(0, fa);
	ASSERT_LE(0, fb);
	ASSERT_TRUE(bufb && mine);
	ASSERT_EQ(0, zcx_raw_ep_create(fa, 0, 64, &a));
	ASSERT_EQ(0, zcx_raw_ep_create(fb, 0, 64, &b));
	ASSERT_EQ(0, rep_connect(&a, &b.c.addr, &pb));
	ASSERT_EQ(0, do_expose(fb, bufb, 64 * KiB, ZCX_REMOTE_ALL, &kb));
	/* New memory at the range, filled, then made read-only. */
	ASSERT_EQ(bufb, mmap(bufb, 64 * KiB, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
	fill(bufb, 64 * KiB, 0x0b);
	ASSERT_EQ(0, mprotect(bufb, 64 * KiB, PROT_READ));
	ASSERT_EQ(0, rep_rma(&a, ZCX_OP_GET, pb, mine, 8192, (uintptr_t)bufb + 4096, kb));
	EXPECT_EQ(-1, unfilled_at(mine, 8192, 0x0b, 4096));
	fill(mine, 8192, 0xbad);
	ret = rep_rma(&a, ZCX_OP_PUT, pb, mine, 8192, (uintptr_t)bufb + 4096, kb);
	EXPECT_TRUE(ret == -EFAULT || ret == -EACCES) TH_LOG("put into read-only memory: %d", ret);
	EXPECT_EQ(-1, unfilled(bufb, 64 * KiB, 0x0b));
	/* Nothing accessible there at all. */
	ASSERT_EQ(0, mprotect(bufb, 64 * KiB, PROT_NONE));
	memset(mine, 0, 8192);
	ret = rep_rma(&a, ZCX_OP_GET, pb, mine, 8192, (uintptr_t)bufb, kb);
	EXPECT_TRUE(ret == -EFAULT || ret == -EACCES) TH_LOG("get from PROT_NONE memory: %d", ret);
	EXPECT_EQ(-1, not_all(mine, 8192, 0));
	ret = rep_rma(&a, ZCX_OP_PUT, pb, mine, 8192, (uintptr_t)bufb, kb);
	EXPECT_TRUE(ret == -EFAULT || ret == -EACCES) TH_LOG("put into PROT_NONE memory: %d", ret);
	ASSERT_EQ(0, mprotect(bufb, 64 * KiB, PROT_READ));
	EXPECT_EQ(-1, unfilled(bufb, 64 * KiB, 0x0b));

	EXPECT_EQ(0, do_unexpose(fb, kb));
	zcx_raw_ep_destroy(&a);
	zcx_raw_ep_destroy(&b);
	close(fa);
	close(fb);
	munmap(bufb, 64 * KiB);
	munmap(mine, 64 * KiB);
}

/*
 * Revocation racing transfers.  The owner (a thread with context B)
 * cycles: unexpose the key, replace the memory (munmap + mmap at the same
 * address), fill it with the next pattern, expose it under a new key.  The
 * initiator (this thread, context A) alternates GETs and PUTs with the
 * latest key it saw; the owner revokes as soon as one was started.  Every transfer must fail with EACCES or move the
 * bytes of exactly the exposure its key named: a GET sees one whole
 * pattern, the one of its key; a PUT writes that same pattern, so a PUT
 * that reached the memory of a later exposure spoils the next GET.
 */
#define RACE_LEN	(64 * KiB + 13)
#define RACE_MAP	(128 * KiB)
#define RACE_CYCLES	300

struct race {
	int fd;
	char *map;
	pthread_mutex_t lock;
	uint64_t key, seed;	/* under lock */
	uint64_t uses;		/* transfers started with the latest key */
	int cycles, error;
	bool done;
};

static void *race_owner(void *arg)
{
	struct race *r = arg;
	uint64_t key, seed, seen = 0;
	int i;

	for (i = 0; i < RACE_CYCLES; i++) {
		/* Revoke while a transfer with the current key is being started. */
		while (__atomic_load_n(&r->uses, __ATOMIC_ACQUIRE) == seen)
			sched_yield();
		seen = __atomic_load_n(&r->uses, __ATOMIC_ACQUIRE);
		pthread_mutex_lock(&r->lock);
		key = r->key;
		seed = r->seed + 1;
		pthread_mutex_unlock(&r->lock);
		if (do_unexpose(r->fd, key)) {
			r->error = 1;
			break;
		}
		if (mmap(r->map, RACE_MAP, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != r->map) {
			r->error = 2;
			break;
		}
		fill(r->map + 3, RACE_LEN, seed);
		if (do_expose(r->fd, r->map + 3, RACE_LEN, ZCX_REMOTE_ALL, &key)) {
			r->error = 3;
			break;
		}
		pthread_mutex_lock(&r->lock);
		r->key = key;
		r->seed = seed;
		pthread_mutex_unlock(&r->lock);
		r->cycles++;
	}
	__atomic_store_n(&r->done, true, __ATOMIC_RELEASE);
	return NULL;
}

TEST_F_TIMEOUT(sec, revoke_races_transfers, 120)
{
	struct race r = { .lock = PTHREAD_MUTEX_INITIALIZER, .seed = 1 };
	int fa = zcx_test_open();
	char *local = zcx_test_anon(RACE_MAP);
	unsigned long ok = 0, refused = 0, n;
	uint64_t key, seed;
	pthread_t owner;
	struct zcx_raw_ep a, b;
	__u32 pb;
	int ret;

	r.fd = zcx_test_open();
	r.map = zcx_test_anon(RACE_MAP);
	ASSERT_LE(0, fa);
	ASSERT_LE(0, r.fd);
	ASSERT_TRUE(local && r.map);
	ASSERT_EQ(0, zcx_raw_ep_create(fa, 0, 64, &a));
	ASSERT_EQ(0, zcx_raw_ep_create(r.fd, 0, 64, &b));
	ASSERT_EQ(0, rep_connect(&a, &b.c.addr, &pb));
	fill(r.map + 3, RACE_LEN, r.seed);
	ASSERT_EQ(0, do_expose(r.fd, r.map + 3, RACE_LEN, ZCX_REMOTE_ALL, &r.key));
	ASSERT_EQ(0, pthread_create(&owner, NULL, race_owner, &r));
	for (n = 0; !__atomic_load_n(&r.done, __ATOMIC_ACQUIRE); n++) {
		pthread_mutex_lock(&r.lock);
		key = r.key;
		seed = r.seed;
		pthread_mutex_unlock(&r.lock);
		__atomic_fetch_add(&r.uses, 1, __ATOMIC_RELEASE);
		if (n % 2) {
			fill(local + 5, RACE_LEN, seed);
			ret = rep_rma(&a, ZCX_OP_PUT, pb, local + 5, RACE_LEN,
				      (uintptr_t)r.map + 3, key);
		} else {
			memset(local + 5, 0, RACE_LEN);
			ret = rep_rma(&a, ZCX_OP_GET, pb, local + 5, RACE_LEN,
				      (uintptr_t)r.map + 3, key);
			if (!ret) {
				long long at = unfilled(local + 5, RACE_LEN, seed);

				ASSERT_EQ(-1, at) TH_LOG("GET %lu with key of pattern %llu: wrong from byte %lld",
							 n, (unsigned long long)seed, at);
			}
		}
		ASSERT_TRUE(ret == 0 || ret == -EACCES) TH_LOG("transfer %lu: %d", n, ret);
		if (ret)
			refused++;
		else
			ok++;
	}
	ASSERT_EQ(0, pthread_join(owner, NULL));
	ASSERT_EQ(0, r.error);
	EXPECT_EQ(RACE_CYCLES, r.cycles);
	TH_LOG("%lu transfers moved data, %lu refused, over %d revocations", ok, refused, r.cycles);
	/* The last exposure still holds its own pattern, and works. */
	EXPECT_EQ(-1, unfilled(r.map + 3, RACE_LEN, r.seed));
	EXPECT_EQ(0, rep_rma(&a, ZCX_OP_GET, pb, local + 5, RACE_LEN, (uintptr_t)r.map + 3, r.key));
	EXPECT_EQ(-1, unfilled(local + 5, RACE_LEN, r.seed));
	zcx_raw_ep_destroy(&a);
	zcx_raw_ep_destroy(&b);
	close(fa);
	close(r.fd);
	munmap(local, RACE_MAP);
	munmap(r.map, RACE_MAP);
}

/*
 * Other users.  Root (this process) owns endpoint P (default), endpoint Q
 * (ZCX_EP_ANY_USER), a barrier on P and an exposed region; a child that
 * became uid 65534 knows every address and key.  The header: connecting
 * to another user's endpoint is EACCES unless it set ZCX_EP_ANY_USER;
 * joining another user's barrier is EACCES (no opt-in exists).
 */
struct xuser {
	struct zcx_addr p, q, bar;
	uint64_t rkey;
	char *buf;		/* root's exposed memory (the child's copy is its own) */
	int to_parent[2], to_child[2];
};

static int xuser_child(void *arg)
{
	struct xuser *x = arg;
	struct zcx_bar_join bj = { 0 };
	struct zcx_addr wrong;
	struct zcx_raw_ep c, n;
	char *mine = zcx_test_anon(16 * KiB);
	__u32 peer;
	int fd;
	char done;

	close(x->to_parent[0]);
	close(x->to_child[1]);
	CK(mine);
	CK_EQ(0, zcx_test_drop_to_nobody());
	/* The device is 0666: anyone may open it. */
	fd = zcx_test_open();
	CK(fd >= 0);
	CK_EQ(0, zcx_raw_ep_create(fd, 0, 64, &c));
	CK_EQ(-EACCES, rep_connect(&c, &x->p, &peer));
	/* A wrong key is refused as such, before the user is looked at. */
	wrong = x->p;
	wrong.key ^= 1ULL << 40;
	CK_EQ(-ECONNREFUSED, rep_connect(&c, &wrong, &peer));
	wrong = x->q;
	wrong.key ^= 1;
	CK_EQ(-ECONNREFUSED, rep_connect(&c, &wrong, &peer));
	bj.ep = c.c.ep;
	bj.addr = x->bar;
	CK_EQ(-EACCES, zcx_test_ioctl(fd, ZCX_IOC_BAR_JOIN, &bj));
	/* The opt-in: Q takes anyone with the key, and so the region is reachable. */
	CK_EQ(0, rep_connect(&c, &x->q, &peer));
	CK_EQ(0, rep_rma(&c, ZCX_OP_GET, peer, mine, 4096, (uintptr_t)x->buf, x->rkey));
	CK_EQ(-1, unfilled(mine, 4096, 0x600d));
	fill(mine, 4096, 0x7e57);
	CK_EQ(0, rep_rma(&c, ZCX_OP_PUT, peer, mine, 4096, (uintptr_t)x->buf + 8192, x->rkey));
	CK_EQ(-EACCES, rep_rma(&c, ZCX_OP_PUT, peer, mine, 4096, (uintptr_t)x->buf, x->rkey ^ 2));
	/* Now the other way: root tries nobody's endpoint. */
	CK_EQ(0, zcx_raw_ep_create(fd, 0, 64, &n));
	CK(write(x->to_parent[1], &n.c.addr, sizeof(n.c.addr)) == sizeof(n.c.addr));
	CK(read(x->to_child[0], &done, 1) == 1);
	zcx_raw_ep_destroy(&n);
	zcx_raw_ep_destroy(&c);
	close(fd);
	return 0;
}

TEST_F(sec, other_user_needs_any_user)
{
	struct zcx_bar_create bc = { .nprocs = 2 };
	struct xuser x;
	struct zcx_addr naddr;
	struct zcx_raw_ep p, q;
	int fd = zcx_test_open(), status;
	__u32 peer;
	pid_t pid;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, geteuid()) TH_LOG("runs as root, to become another user");
	x.buf = zcx_test_anon(64 * KiB);
	ASSERT_NE(NULL, x.buf);
	fill(x.buf, 64 * KiB, 0x600d);
	ASSERT_EQ(0, zcx_raw_ep_create(fd, 0, 64, &p));
	ASSERT_EQ(0, zcx_raw_ep_create(fd, ZCX_EP_ANY_USER, 64, &q));
	bc.ep = p.c.ep;
	ASSERT_EQ(0, zcx_test_ioctl(fd, ZCX_IOC_BAR_CREATE, &bc));
	ASSERT_EQ(0, do_expose(fd, x.buf, 64 * KiB, ZCX_REMOTE_ALL, &x.rkey));
	x.p = p.c.addr;
	x.q = q.c.addr;
	x.bar = bc.addr;
	ASSERT_EQ(0, pipe(x.to_parent));
	ASSERT_EQ(0, pipe(x.to_child));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(xuser_child(&x));
	}
	close(x.to_parent[1]);
	close(x.to_child[0]);
	if (read(x.to_parent[0], &naddr, sizeof(naddr)) == sizeof(naddr)) {
		/* Root has no way around the owner check either. */
		EXPECT_EQ(-EACCES, rep_connect(&p, &naddr, &peer));
		EXPECT_EQ(-EACCES, rep_connect(&q, &naddr, &peer));
	} else {
		TH_LOG("the child stopped before its own endpoint");
	}
	EXPECT_EQ(1, write(x.to_child[1], "x", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) TH_LOG("child status %#x", status);
	/* The child's put landed where it aimed, and nowhere else. */
	EXPECT_EQ(-1, unfilled(x.buf + 8192, 4096, 0x7e57));
	EXPECT_EQ(-1, unfilled(x.buf, 8192, 0x600d));
	EXPECT_EQ(-1, unfilled_at(x.buf + 12288, 52 * KiB, 0x600d, 12288));
	close(x.to_parent[0]);
	close(x.to_child[1]);
	zcx_raw_ep_destroy(&p);
	zcx_raw_ep_destroy(&q);
	close(fd);
	munmap(x.buf, 64 * KiB);
}

/*
 * RLIMIT_MEMLOCK for an unprivileged process (the register-and-evict
 * case is zcx_mr_test's memlock_limit): limit 64 KiB, uid 65534.
 */
#define LIMIT		(64 * KiB)

static int memlock_child(void *arg)
{
	struct rlimit lim = { .rlim_cur = LIMIT, .rlim_max = LIMIT };
	struct zcx_bar_create bc = { .nprocs = 1 };
	struct zcx_mr_reg reg;
	struct zcx_test_ctx t;
	struct zcx_raw_ep r, pr, pr2;
	char *buf = zcx_test_anon(1024 * KiB), *page;
	uint64_t kt, k2;
	__u32 self_peer, poll_peer;

	(void)arg;
	CK(buf);
	CK_EQ(0, setrlimit(RLIMIT_MEMLOCK, &lim));
	CK_EQ(0, zcx_test_drop_to_nobody());
	CK_EQ(0, zcx_test_vmpin_kib());
	CK_EQ(0, zcx_test_ctx_open(&t));
	/* Rings (1024 entries: more than the limit) and barrier pages: not pinned user memory. */
	CK_EQ(0, zcx_raw_ep_create(t.fd, 0, 1024, &r));
	CK(r.c.mmap_size > LIMIT);
	bc.ep = r.c.ep;
	CK_EQ(0, zcx_test_ioctl(t.fd, ZCX_IOC_BAR_CREATE, &bc));
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, t.fd, bc.mmap_offset);
	CK(page != MAP_FAILED);
	CK_EQ(0, zcx_test_vmpin_kib());

	fill(buf, 16 * KiB, 0x1111);
	CK_EQ(0, do_expose(t.fd, buf, 16 * KiB, ZCX_REMOTE_ALL, &kt));
	CK_EQ(16, zcx_test_vmpin_kib());
	CK_EQ(0, zcx_test_reg(&t, buf + 256 * KiB, 48 * KiB, ZCX_ACCESS_ALL, &reg));
	CK_EQ(64, zcx_test_vmpin_kib());
	/* Full: registering, exposing and a transfer's own pinning all fail. */
	{
		struct zcx_mr_reg more;

		CK_EQ(-ENOMEM, zcx_test_reg(&t, buf + 512 * KiB, 4096, ZCX_ACCESS_ALL, &more));
	}
	CK_EQ(-ENOMEM, do_expose(t.fd, buf + 512 * KiB, 4096, ZCX_REMOTE_READ, &k2));
	CK_EQ(0, rep_connect(&r, &r.c.addr, &self_peer));
	CK_EQ(-ENOMEM, rep_rma(&r, ZCX_OP_GET, self_peer, buf + 768 * KiB, 8 * KiB,
				(uintptr_t)buf, kt));
	CK_EQ(64, zcx_test_vmpin_kib());
	/* Released and flushed: the charge comes back, and the GET fits. */
	CK_EQ(0, zcx_test_dereg(&t, reg.handle));
	CK(zcx_test_flush(&t) >= 1);
	CK_EQ(16, zcx_test_vmpin_settle(16));
	CK_EQ(0, rep_rma(&r, ZCX_OP_GET, self_peer, buf + 768 * KiB, 8 * KiB, (uintptr_t)buf, kt));
	CK_EQ(-1, unfilled(buf + 768 * KiB, 8 * KiB, 0x1111));
	/* The GET's own registration stays cached (24 KiB pinned) until flushed. */
	CK(zcx_test_flush(&t) >= 1);
	CK_EQ(16, zcx_test_vmpin_settle(16));

	/* The polling thread pins under the limit this process had too. */
	/* The tests run one at a time: a polling thread is free. */
	CK_EQ(0, zcx_raw_ep_create(t.fd, ZCX_EP_POLL, 64, &pr));
	CK_EQ(0, rep_connect(&pr, &r.c.addr, &poll_peer));
	CK_EQ(-ENOMEM, rep_rma(&pr, ZCX_OP_GET, poll_peer, buf + 512 * KiB, 64 * KiB,
				(uintptr_t)buf, kt));
	CK_EQ(0, rep_rma(&pr, ZCX_OP_GET, poll_peer, buf + 512 * KiB, 16 * KiB,
			  (uintptr_t)buf, kt));
	CK_EQ(-1, unfilled(buf + 512 * KiB, 16 * KiB, 0x1111));
	CK(zcx_test_flush(&t) >= 1);
	CK_EQ(16, zcx_test_vmpin_settle(16));
	/* ... the limit it had when it last created a polled endpoint. */
	lim.rlim_cur = lim.rlim_max = 24 * KiB;
	CK_EQ(0, setrlimit(RLIMIT_MEMLOCK, &lim));
	CK_EQ(0, zcx_raw_ep_create(t.fd, ZCX_EP_POLL, 64, &pr2));
	CK_EQ(-ENOMEM, rep_rma(&pr, ZCX_OP_GET, poll_peer, buf + 512 * KiB, 16 * KiB,
				(uintptr_t)buf, kt));
	CK_EQ(0, rep_rma(&pr, ZCX_OP_GET, poll_peer, buf + 512 * KiB, 8 * KiB,
			  (uintptr_t)buf, kt));
	zcx_raw_ep_destroy(&pr2);
	zcx_raw_ep_destroy(&pr);
	munmap(page, 4096);
	zcx_raw_ep_destroy(&r);
	zcx_test_ctx_close(&t);
	/* Everything given back once the context is gone. */
	CK_EQ(0, zcx_test_vmpin_settle(0));
	return 0;
}

TEST_F_TIMEOUT(sec, memlock_unprivileged, 60)
{
	EXPECT_EQ(0, in_child(memlock_child, NULL));
}

/* Root keeps CAP_IPC_LOCK: the limit does not apply (region.c), as for mlock(). */
static int memlock_root_child(void *arg)
{
	struct rlimit lim = { .rlim_cur = LIMIT, .rlim_max = LIMIT };
	struct zcx_test_ctx t;
	struct zcx_mr_reg reg;
	char *buf = zcx_test_anon(1024 * KiB);

	(void)arg;
	CK(buf);
	CK_EQ(0, setrlimit(RLIMIT_MEMLOCK, &lim));
	CK_EQ(0, zcx_test_ctx_open(&t));
	CK_EQ(0, zcx_test_reg(&t, buf, 1024 * KiB, ZCX_ACCESS_ALL, &reg));
	CK_EQ(1024, zcx_test_vmpin_kib());
	CK_EQ(0, zcx_test_dereg(&t, reg.handle));
	zcx_test_ctx_close(&t);
	CK_EQ(0, zcx_test_vmpin_settle(0));
	return 0;
}

TEST_F(sec, memlock_root_has_cap_ipc_lock)
{
	ASSERT_EQ(0, geteuid());
	EXPECT_EQ(0, in_child(memlock_root_child, NULL));
}

/*
 * Output fields passed in holding 0xA5 bytes come back with documented
 * values; reserved and pad words come back zero.  (zcx_query_test's
 * output_fully_written checks QUERY's reserved words from zeroed input.)
 */
TEST_F(sec, ioctl_outputs_fully_written)
{
	struct zcx_test_ctx t;
	struct zcx_query q;
	struct zcx_mr_reg reg;
	struct zcx_mr_flush fl;
	struct zcx_limits lim;
	struct zcx_mon_add mon;
	struct zcx_ep_create c;
	struct zcx_ep_connect conn;
	struct zcx_expose x;
	struct zcx_bar_create bc;
	struct zcx_bar_join bj;
	struct zcx_ep_destroy d;
	struct zcx_unexpose u;
	char *buf = zcx_test_anon(64 * KiB);
	long page = sysconf(_SC_PAGESIZE);
	int fd2 = zcx_test_open();
	int i;

	ASSERT_NE(NULL, buf);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, zcx_test_ctx_open(&t));

	memset(&q, PAT, sizeof(q));
	q.flags = 0;
	memset(q.reserved, 0, sizeof(q.reserved));
	ASSERT_EQ(0, zcx_test_ioctl(t.fd, ZCX_IOC_QUERY, &q));
	EXPECT_EQ(ZCX_ABI_VERSION, q.abi_version);
	EXPECT_EQ(0, q.features & ~ZCX_FEATURES_KNOWN);
	EXPECT_EQ(page, q.page_size);
	EXPECT_EQ(zcx_test_read_number(ZCX_MODULE_PARAM("cache_entries")), q.cache_entries);
	EXPECT_EQ(zcx_test_read_number(ZCX_MODULE_PARAM("ring_depth")), q.ring_depth);
	EXPECT_EQ(zcx_test_read_number(ZCX_MODULE_PARAM("zcopy_threshold")), q.zcopy_threshold);
	EXPECT_EQ(zcx_test_read_number(ZCX_MODULE_PARAM("cache_bytes")), (long long)q.cache_bytes);
	EXPECT_EQ(zcx_test_read_number(ZCX_MODULE_PARAM("eager_credits")), q.eager_credits);
	EXPECT_EQ(ZCX_MAX_ENDPOINTS, q.max_endpoints);
	EXPECT_EQ(-1, not_all(q.reserved, sizeof(q.reserved), 0));

	memset(&reg, PAT, sizeof(reg));
	reg.addr = (uintptr_t)buf + 100;
	reg.length = 5000;
	reg.access = ZCX_ACCESS_ALL;
	reg.flags = 0;
	memset(reg.reserved, 0, sizeof(reg.reserved));
	ASSERT_EQ(0, zcx_test_ioctl(t.fd, ZCX_IOC_MR_REG, &reg));
	EXPECT_EQ((uintptr_t)buf, reg.region_start);
	EXPECT_EQ(2 * page, reg.region_length);
	EXPECT_EQ(ZCX_MR_MISS, reg.result);
	EXPECT_LT(reg.slot, t.status->gen_count);
	EXPECT_EQ(reg.slot, ZCX_HANDLE_SLOT(reg.handle));
	EXPECT_EQ(reg.gen, ZCX_HANDLE_GEN(reg.handle));
	EXPECT_EQ(0, reg.gen & 1);
	EXPECT_TRUE(zcx_test_valid(&t, &reg));
	EXPECT_EQ(-1, not_all(reg.reserved, sizeof(reg.reserved), 0));
	ASSERT_EQ(0, zcx_test_dereg(&t, reg.handle));

	memset(&fl, PAT, sizeof(fl));
	fl.flags = 0;
	memset(fl.reserved, 0, sizeof(fl.reserved));
	ASSERT_EQ(0, zcx_test_ioctl(t.fd, ZCX_IOC_MR_FLUSH, &fl));
	EXPECT_EQ(1, fl.flushed);
	EXPECT_EQ(-1, not_all(fl.reserved, sizeof(fl.reserved), 0));

	memset(&lim, PAT, sizeof(lim));
	lim.flags = 0;
	memset(lim.reserved, 0, sizeof(lim.reserved));
	ASSERT_EQ(0, zcx_test_ioctl(t.fd, ZCX_IOC_LIMITS, &lim));
	EXPECT_EQ(zcx_test_read_number(ZCX_MODULE_PARAM("cache_entries")), lim.cache_entries);
	EXPECT_EQ(zcx_test_read_number(ZCX_MODULE_PARAM("cache_bytes")), (long long)lim.cache_bytes);
	EXPECT_EQ(-1, not_all(lim.reserved, sizeof(lim.reserved), 0));

	memset(&mon, PAT, sizeof(mon));
	mon.addr = (uintptr_t)buf;
	mon.length = 4096;
	mon.cookie = 77;
	mon.flags = 0;
	memset(mon.reserved, 0, sizeof(mon.reserved));
	ASSERT_EQ(0, zcx_test_ioctl(t.fd, ZCX_IOC_MON_ADD, &mon));
	EXPECT_LT(mon.slot, t.status->gen_count);
	EXPECT_EQ(mon.slot, ZCX_HANDLE_SLOT(mon.handle));
	EXPECT_EQ(mon.gen, ZCX_HANDLE_GEN(mon.handle));
	EXPECT_EQ(mon.gen, t.gens[mon.slot]);
	EXPECT_EQ(-1, not_all(mon.reserved, sizeof(mon.reserved), 0));
	ASSERT_EQ(0, zcx_test_dereg(&t, mon.handle));

	memset(&c, PAT, sizeof(c));
	c.flags = 0;
	c.sq_entries = 5;
	memset(c.reserved, 0, sizeof(c.reserved));
	ASSERT_EQ(0, zcx_test_ioctl(t.fd, ZCX_IOC_EP_CREATE, &c));
	EXPECT_EQ(8, c.sq_entries);
	EXPECT_EQ(16, c.cq_entries);
	EXPECT_GT(ZCX_MAX_ENDPOINTS, c.ep);
	EXPECT_EQ(0, c.mmap_offset % page);
	EXPECT_NE(0, c.mmap_offset);
	EXPECT_EQ(0, c.mmap_size % page);
	EXPECT_LE(c.offsets.cqes + 16 * sizeof(struct zcx_cqe), c.mmap_size);
	EXPECT_LE(c.offsets.sqes + 8 * sizeof(struct zcx_sqe), c.offsets.cqes);
	EXPECT_GT(c.offsets.sqes, c.offsets.cq_tail);
	EXPECT_EQ(-1, not_all(c.offsets.reserved, sizeof(c.offsets.reserved), 0));
	EXPECT_EQ(ZCX_ADDR_ENDPOINT, c.addr.kind);
	EXPECT_EQ(0, c.addr.reserved0);
	EXPECT_EQ(0, c.addr.node);
	EXPECT_GE(0xffffffffULL, c.addr.id);
	EXPECT_NE(PATW, c.addr.key);
	/* A local address (no backend listens): the network part is zero. */
	EXPECT_EQ(-1, not_all(&c.addr.node_id, sizeof(c.addr) - offsetof(struct zcx_addr, node_id), 0));
	EXPECT_EQ(-1, not_all(c.reserved, sizeof(c.reserved), 0));

	memset(&conn, PAT, sizeof(conn));
	conn.ep = c.ep;
	conn.flags = 0;
	conn.addr = c.addr;
	conn.pad = 0;
	memset(conn.reserved, 0, sizeof(conn.reserved));
	ASSERT_EQ(0, zcx_test_ioctl(t.fd, ZCX_IOC_EP_CONNECT, &conn));
	EXPECT_EQ(0, conn.peer);
	EXPECT_EQ(0, conn.pad);
	EXPECT_EQ(-1, not_all(conn.reserved, sizeof(conn.reserved), 0));

	memset(&x, PAT, sizeof(x));
	x.addr = (uintptr_t)buf;
	x.length = 8192;
	x.rights = ZCX_REMOTE_READ;
	x.flags = 0;
	memset(x.reserved, 0, sizeof(x.reserved));
	ASSERT_EQ(0, zcx_test_ioctl(t.fd, ZCX_IOC_EXPOSE, &x));
	EXPECT_NE(0, x.rkey);
	EXPECT_NE(PATW, x.rkey);
	EXPECT_EQ(-1, not_all(x.reserved, sizeof(x.reserved), 0));

	memset(&bc, PAT, sizeof(bc));
	bc.ep = c.ep;
	bc.nprocs = 2;
	bc.flags = 0;
	memset(bc.reserved, 0, sizeof(bc.reserved));
	ASSERT_EQ(0, zcx_test_ioctl(t.fd, ZCX_IOC_BAR_CREATE, &bc));
	EXPECT_EQ(ZCX_ADDR_BARRIER, bc.addr.kind);
	EXPECT_EQ(0, bc.addr.reserved0);
	EXPECT_EQ(0, bc.addr.node);
	EXPECT_GE(0xffffffffULL, bc.addr.id);
	EXPECT_NE(PATW, bc.addr.key);
	EXPECT_EQ(-1, not_all(&bc.addr.node_id, sizeof(bc.addr) - offsetof(struct zcx_addr, node_id), 0));
	EXPECT_EQ(0, bc.bar);
	EXPECT_EQ(0, bc.mmap_offset % page);
	EXPECT_EQ(-1, not_all(bc.reserved, sizeof(bc.reserved), 0));

	/* Joined from another context of this process. */
	{
		struct zcx_raw_ep other;

		ASSERT_EQ(0, zcx_raw_ep_create(fd2, 0, 8, &other));
		memset(&bj, PAT, sizeof(bj));
		bj.ep = other.c.ep;
		bj.flags = 0;
		bj.addr = bc.addr;
		memset(bj.reserved, 0, sizeof(bj.reserved));
		ASSERT_EQ(0, zcx_test_ioctl(fd2, ZCX_IOC_BAR_JOIN, &bj));
		EXPECT_EQ(0, bj.bar);
		EXPECT_EQ(2, bj.nprocs);
		EXPECT_EQ(0, bj.mmap_offset % page);
		EXPECT_EQ(-1, not_all(bj.reserved, sizeof(bj.reserved), 0));
		/* Its own address, untouched: an in-only field stays what we passed. */
		EXPECT_EQ(0, memcmp(&bj.addr, &bc.addr, sizeof(bc.addr)));
		zcx_raw_ep_destroy(&other);
	}

	/* In-only commands leave the caller's structure alone. */
	memset(&u, 0, sizeof(u));
	u.rkey = x.rkey;
	ASSERT_EQ(0, zcx_test_ioctl(t.fd, ZCX_IOC_UNEXPOSE, &u));
	EXPECT_EQ(x.rkey, u.rkey);
	memset(&d, 0, sizeof(d));
	d.ep = c.ep;
	ASSERT_EQ(0, zcx_test_ioctl(t.fd, ZCX_IOC_EP_DESTROY, &d));
	EXPECT_EQ(c.ep, d.ep);
	for (i = 0; i < 2; i++)
		EXPECT_EQ(0, d.reserved[i]);
	zcx_test_ctx_close(&t);
	close(fd2);
	munmap(buf, 64 * KiB);
}

/*
 * An ioctl whose result cannot be written back (the argument readable but
 * not writable) fails with EFAULT and leaves nothing behind that the
 * caller could not name: no endpoint, connection, barrier, exposed
 * region (pinned pages) or monitor takes a slot.  Each is tried more
 * times than its limit allows objects, then the real call must work.
 */
static void *ro_arg(const void *arg, size_t size)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memcpy(p, arg, size);
	if (mprotect(p, 4096, PROT_READ)) {
		munmap(p, 4096);
		return NULL;
	}
	return p;
}

TEST_F(sec, unwritable_result_undoes_the_call)
{
	struct zcx_test_census mid;
	struct zcx_test_ctx t;
	struct zcx_ep_create c = { .sq_entries = 2 };
	struct zcx_ep_connect conn = { 0 };
	struct zcx_bar_create bc = { .nprocs = 1 };
	struct zcx_expose x = { 0 };
	struct zcx_mon_add mon = { 0 };
	struct zcx_mr_reg reg = { 0 };
	struct zcx_raw_ep r;
	char *buf = zcx_test_anon(64 * KiB);
	void *ro;
	int i, fails;

	ASSERT_NE(NULL, buf);
	memset(buf, 1, 64 * KiB);
	ASSERT_EQ(0, zcx_test_ctx_open(&t));
	ASSERT_EQ(0, zcx_raw_ep_create(t.fd, 0, 8, &r));

	ro = ro_arg(&c, sizeof(c));
	ASSERT_NE(NULL, ro);
	for (i = fails = 0; i < ZCX_MAX_ENDPOINTS + 1; i++)
		fails += zcx_test_ioctl(t.fd, ZCX_IOC_EP_CREATE, ro) == -EFAULT;
	EXPECT_EQ(ZCX_MAX_ENDPOINTS + 1, fails);
	munmap(ro, 4096);
	EXPECT_EQ(0, zcx_test_ioctl(t.fd, ZCX_IOC_EP_CREATE, &c));
	EXPECT_EQ(r.c.ep + 1, c.ep);

	conn.ep = r.c.ep;
	conn.addr = r.c.addr;
	ro = ro_arg(&conn, sizeof(conn));
	ASSERT_NE(NULL, ro);
	for (i = fails = 0; i < ZCX_MAX_CONNECTIONS + 1; i++)
		fails += zcx_test_ioctl(t.fd, ZCX_IOC_EP_CONNECT, ro) == -EFAULT;
	EXPECT_EQ(ZCX_MAX_CONNECTIONS + 1, fails);
	munmap(ro, 4096);
	EXPECT_EQ(0, zcx_test_ioctl(t.fd, ZCX_IOC_EP_CONNECT, &conn));
	EXPECT_EQ(0, conn.peer);

	bc.ep = r.c.ep;
	ro = ro_arg(&bc, sizeof(bc));
	ASSERT_NE(NULL, ro);
	for (i = fails = 0; i < ZCX_MAX_BARRIERS + 1; i++)
		fails += zcx_test_ioctl(t.fd, ZCX_IOC_BAR_CREATE, ro) == -EFAULT;
	EXPECT_EQ(ZCX_MAX_BARRIERS + 1, fails);
	munmap(ro, 4096);
	EXPECT_EQ(0, zcx_test_ioctl(t.fd, ZCX_IOC_BAR_CREATE, &bc));
	EXPECT_EQ(0, bc.bar);

	/* Exposing and registering pin: nothing stays pinned (once flushed). */
	mid = zcx_test_census();
	x.addr = (uintptr_t)buf;
	x.length = 64 * KiB;
	x.rights = ZCX_REMOTE_ALL;
	ro = ro_arg(&x, sizeof(x));
	ASSERT_NE(NULL, ro);
	EXPECT_EQ(-EFAULT, zcx_test_ioctl(t.fd, ZCX_IOC_EXPOSE, ro));
	munmap(ro, 4096);
	reg.addr = (uintptr_t)buf;
	reg.length = 32 * KiB;
	reg.access = ZCX_ACCESS_ALL;
	ro = ro_arg(&reg, sizeof(reg));
	ASSERT_NE(NULL, ro);
	EXPECT_EQ(-EFAULT, zcx_test_ioctl(t.fd, ZCX_IOC_MR_REG, ro));
	munmap(ro, 4096);
	/* Left cached and unused at most, which a flush drops. */
	EXPECT_LE(0, zcx_test_flush(&t));
	EXPECT_EQ(NULL, zcx_test_census_settle(&mid, 5000));

	/* Monitors take cache entries: four allowed, five tried. */
	ASSERT_EQ(0, zcx_test_limits(&t, ZCX_LIMIT_SET_ENTRIES, 4, 0));
	mon.addr = (uintptr_t)buf;
	mon.length = 4096;
	ro = ro_arg(&mon, sizeof(mon));
	ASSERT_NE(NULL, ro);
	for (i = fails = 0; i < 5; i++)
		fails += zcx_test_ioctl(t.fd, ZCX_IOC_MON_ADD, ro) == -EFAULT;
	EXPECT_EQ(5, fails);
	munmap(ro, 4096);
	EXPECT_EQ(0, zcx_test_counter(&t, regions));
	EXPECT_EQ(0, zcx_test_ioctl(t.fd, ZCX_IOC_MON_ADD, &mon));

	munmap(r.map, r.c.mmap_size);
	zcx_test_ctx_close(&t);
	munmap(buf, 64 * KiB);
}

/*
 * What such a call undoes was never seen by anyone else, so nobody else
 * notices it: a receive that another context posted to wait for any
 * sender (no ZCX_SQE_CONNECTED) keeps waiting when a connect to it is
 * undone, and a barrier keeps its place and stays whole when a join is.
 */
FIXTURE(undo) {
	struct zcx_test_ctx ta, tb;
	struct zcx_raw_ep a, p;
};

FIXTURE_SETUP(undo)
{
	ASSERT_EQ(0, zcx_test_ctx_open(&self->ta));
	ASSERT_EQ(0, zcx_test_ctx_open(&self->tb));
	ASSERT_EQ(0, zcx_raw_ep_create(self->ta.fd, 0, 8, &self->a));
	ASSERT_EQ(0, zcx_raw_ep_create(self->tb.fd, 0, 8, &self->p));
}

FIXTURE_TEARDOWN(undo)
{
	zcx_raw_ep_destroy(&self->a);
	zcx_raw_ep_destroy(&self->p);
	zcx_test_ctx_close(&self->ta);
	zcx_test_ctx_close(&self->tb);
}

TEST_F(undo, connect_leaves_the_peers_receives_waiting)
{
	struct zcx_ep_connect conn = { .ep = self->a.c.ep, .addr = self->p.c.addr };
	struct zcx_sqe recv = { .opcode = ZCX_OP_RECV, .tag = 7, .tag_mask = ~0ULL,
				.user_data = 1 };
	struct zcx_sqe send = { .opcode = ZCX_OP_SEND, .tag = 7, .user_data = 2 };
	struct zcx_cqe cqe;
	void *ro;

	ASSERT_EQ(0, rep_submit(&self->p, &recv));
	ro = ro_arg(&conn, sizeof(conn));
	ASSERT_NE(NULL, ro);
	EXPECT_EQ(-EFAULT, zcx_test_ioctl(self->ta.fd, ZCX_IOC_EP_CONNECT, ro));
	munmap(ro, 4096);
	EXPECT_EQ(0, zcx_raw_enter(&self->p, 0, 0, 0));
	ASSERT_EQ(0, zcx_raw_pop(&self->p, &cqe)) TH_LOG("the receive completed: %d", cqe.res);
	/* ... until a connection that is there sends it a message. */
	ASSERT_EQ(0, zcx_test_ioctl(self->ta.fd, ZCX_IOC_EP_CONNECT, &conn));
	send.peer = conn.peer;
	EXPECT_EQ(0, rep_one(&self->a, &send, &cqe));
	EXPECT_EQ(0, rep_reap(&self->p, &cqe));
	EXPECT_EQ(1, cqe.user_data);
	EXPECT_EQ(7, cqe.tag);
}

/*
 * Endpoint a joins a barrier of p with an unwritable result (the join is
 * undone), then joins it again into *@bj; the barrier is whole all along.
 */
static void join_undone_then_again(struct __test_metadata *_metadata,
				   FIXTURE_DATA(undo) *self, struct zcx_bar_join *bj)
{
	struct zcx_bar_create bc = { .ep = self->p.c.ep, .nprocs = 2 };
	const struct zcx_bar_state *bar;
	void *ro;

	ASSERT_EQ(0, zcx_test_ioctl(self->tb.fd, ZCX_IOC_BAR_CREATE, &bc));
	bar = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->tb.fd, bc.mmap_offset);
	ASSERT_NE(MAP_FAILED, bar);
	*bj = (struct zcx_bar_join){ .ep = self->a.c.ep, .addr = bc.addr };
	ro = ro_arg(bj, sizeof(*bj));
	ASSERT_NE(NULL, ro);
	EXPECT_EQ(-EFAULT, zcx_test_ioctl(self->ta.fd, ZCX_IOC_BAR_JOIN, ro));
	munmap(ro, 4096);
	EXPECT_EQ(0, __atomic_load_n(&bar->broken, __ATOMIC_ACQUIRE));
	/* Its place is free again: the join that counts is the second. */
	EXPECT_EQ(0, zcx_test_ioctl(self->ta.fd, ZCX_IOC_BAR_JOIN, bj));
	EXPECT_EQ(0, __atomic_load_n(&bar->broken, __ATOMIC_ACQUIRE));
	munmap((void *)bar, 4096);
}

TEST_F(undo, join_leaves_the_barrier_whole)
{
	struct zcx_bar_join bj;

	join_undone_then_again(_metadata, self, &bj);
	EXPECT_EQ(0, bj.bar);
}

/*
 * An mmap() of a barrier number that has no barrier fails, and marks
 * nothing: a join undone there later still gives its place back.  The
 * offsets are opaque; those of a's first two barriers show the step to
 * the third.
 */
TEST_F(undo, join_after_a_stray_mmap_leaves_the_barrier_whole)
{
	struct zcx_bar_create own = { .ep = self->a.c.ep, .nprocs = 1 };
	struct zcx_bar_join bj;
	uint64_t first, third;

	ASSERT_EQ(0, zcx_test_ioctl(self->ta.fd, ZCX_IOC_BAR_CREATE, &own));
	first = own.mmap_offset;
	ASSERT_EQ(0, zcx_test_ioctl(self->ta.fd, ZCX_IOC_BAR_CREATE, &own));
	third = own.mmap_offset + (own.mmap_offset - first);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->ta.fd, third));
	EXPECT_EQ(EINVAL, errno);
	/* The undone join had the third number, which is free again. */
	join_undone_then_again(_metadata, self, &bj);
	EXPECT_EQ(2, bj.bar);
	EXPECT_EQ(third, bj.mmap_offset);
}

/*
 * A connection whose connect cannot write its number back, but that
 * another thread submitted on already (numbers are predictable: the
 * lowest free), stays: the send queued through it at the peer is the
 * endpoint's to cancel when it goes, so it must still find it.  (Undone,
 * it would leave that send pinning this context's pages until the peer
 * received it, and closing the context would wait for that.)  Endpoint a
 * of context A has connection 0 to p, of context B; a thread submits a
 * 64 MiB PUT through it, then a SEND on connection 1, in one doorbell.
 * While the PUT copies (its first bytes have arrived), a's connect to b
 * (B) with an unwritable result makes connection 1, and fails.
 */
#define RACE_PUT_LEN	(64UL << 20)
#define RACE_SEND_LEN	(64 * KiB)

static int entered;	/* enter_two() returned */

static void *enter_two(void *arg)
{
	int ret = zcx_raw_enter(arg, 2, 0, 0);

	__atomic_store_n(&entered, 1, __ATOMIC_RELEASE);
	return (void *)(intptr_t)ret;
}

/* B's endpoint b receives one message of a's: its res, *len its length. */
static int b_receives(struct zcx_raw_ep *b, uint64_t tag, void *buf, uint64_t *len)
{
	struct zcx_sqe recv = {
		.opcode = ZCX_OP_RECV, .addr = (uintptr_t)buf, .len = RACE_SEND_LEN,
		.tag = tag, .tag_mask = ~0ULL,
	};
	struct zcx_cqe cqe = { 0 };
	int ret = rep_one(b, &recv, &cqe);

	*len = cqe.len;
	return ret;
}

TEST_F_TIMEOUT(sec, connection_used_before_its_connect_failed_stays, 300)
{
	struct zcx_test_ctx ta, tb;
	struct zcx_raw_ep a, p, b;
	struct zcx_ep_connect conn = { 0 };
	volatile unsigned char *target;
	unsigned char *src, *msg, *in;
	struct zcx_sqe put, send;
	struct zcx_cqe cqe;
	bool won = false;
	uint64_t rkey, len;
	pthread_t thread;
	void *ro, *res;
	__u32 to_p;
	int attempt, put_res, send_res;

	src = zcx_test_anon(RACE_PUT_LEN);
	target = zcx_test_anon(RACE_PUT_LEN);
	msg = zcx_test_anon(RACE_SEND_LEN);
	in = zcx_test_anon(RACE_SEND_LEN);
	ASSERT_TRUE(src && target && msg && in);
	memset(src, 0x5a, RACE_PUT_LEN);
	fill(msg, RACE_SEND_LEN, 0x51);
	ASSERT_EQ(0, zcx_test_ctx_open(&ta));
	ASSERT_EQ(0, zcx_test_ctx_open(&tb));
	ASSERT_EQ(0, zcx_raw_ep_create(ta.fd, 0, 8, &a));
	ASSERT_EQ(0, zcx_raw_ep_create(tb.fd, 0, 8, &p));
	ASSERT_EQ(0, zcx_raw_ep_create(tb.fd, 0, 8, &b));
	ASSERT_EQ(0, do_expose(tb.fd, (const void *)target, RACE_PUT_LEN, ZCX_REMOTE_ALL, &rkey));
	ASSERT_EQ(0, rep_connect(&a, &p.c.addr, &to_p));
	ASSERT_EQ(0, to_p);
	conn.ep = a.c.ep;
	conn.addr = b.c.addr;
	ro = ro_arg(&conn, sizeof(conn));
	ASSERT_NE(NULL, ro);

	/* Lost when the PUT is done before the connect: then try again. */
	for (attempt = 0; attempt < 10 && !won; attempt++) {
		memset((void *)target, 0, RACE_PUT_LEN);
		put = (struct zcx_sqe){
			.opcode = ZCX_OP_PUT, .peer = to_p, .addr = (uintptr_t)src,
			.len = RACE_PUT_LEN, .remote_addr = (uintptr_t)target, .rkey = rkey,
			.user_data = 1,
		};
		send = (struct zcx_sqe){
			.opcode = ZCX_OP_SEND, .peer = 1, .addr = (uintptr_t)msg,
			.len = RACE_SEND_LEN, .tag = 7, .user_data = 2,
		};
		zcx_raw_push(&a, &put);
		zcx_raw_push(&a, &send);
		entered = 0;
		ASSERT_EQ(0, pthread_create(&thread, NULL, enter_two, &a));
		while (!target[0] && !__atomic_load_n(&entered, __ATOMIC_ACQUIRE))
			;
		EXPECT_EQ(-EFAULT, zcx_test_ioctl(ta.fd, ZCX_IOC_EP_CONNECT, ro));
		ASSERT_EQ(0, pthread_join(thread, &res));
		ASSERT_EQ(2, (int)(intptr_t)res);
		ASSERT_EQ(1, zcx_raw_pop(&a, &cqe));
		ASSERT_EQ(1, cqe.user_data);
		put_res = cqe.res;
		ASSERT_EQ(0, put_res);
		/* Connection 1 did not exist yet: the SEND failed at once. */
		send_res = zcx_raw_pop(&a, &cqe) ? cqe.res : 1;
		won = send_res == 1;
		if (!won)
			ASSERT_EQ(-EINVAL, send_res);
	}
	munmap(ro, 4096);
	ASSERT_TRUE(won) TH_LOG("the connect never came while the PUT copied");

	/* The send that raced the connect arrives whole ... */
	EXPECT_EQ(0, b_receives(&b, 7, in, &len));
	EXPECT_EQ(RACE_SEND_LEN, len);
	EXPECT_EQ(-1, unfilled(in, RACE_SEND_LEN, 0x51));
	EXPECT_EQ(0, rep_reap(&a, &cqe));
	EXPECT_EQ(2, cqe.user_data);
	/* ... and the connection it used is still there for the next. */
	send.tag = 8;
	send.user_data = 3;
	fill(msg, RACE_SEND_LEN, 0x52);
	ASSERT_EQ(0, rep_submit(&a, &send));
	if (zcx_raw_pop(&a, &cqe)) {
		/* It waits for b's receive: no completion before. */
		EXPECT_EQ(0, cqe.res) TH_LOG("a send on connection 1 once its connect failed");
	} else {
		memset(in, 0, RACE_SEND_LEN);
		EXPECT_EQ(0, b_receives(&b, 8, in, &len));
		EXPECT_EQ(-1, unfilled(in, RACE_SEND_LEN, 0x52));
		EXPECT_EQ(0, rep_reap(&a, &cqe));
		EXPECT_EQ(3, cqe.user_data);
	}

	EXPECT_EQ(0, zcx_raw_ep_destroy(&a));
	zcx_test_ctx_close(&ta);
	EXPECT_EQ(0, zcx_raw_ep_destroy(&b));
	EXPECT_EQ(0, zcx_raw_ep_destroy(&p));
	zcx_test_ctx_close(&tb);
	munmap(src, RACE_PUT_LEN);
	munmap((void *)target, RACE_PUT_LEN);
	munmap(msg, RACE_SEND_LEN);
	munmap(in, RACE_SEND_LEN);
}

/*
 * The mapped status area: the head's documented values, zero counters,
 * every generation word odd (no region yet), every event entry with
 * seq ~0 and the rest zero, and zero everywhere in between and after.
 * After a region went stale, the one event written is whole and its
 * reserved and lost fields are zero.
 */
TEST_F(sec, status_area_holds_nothing_else)
{
	const unsigned char *bytes;
	const struct zcx_status *s;
	struct zcx_test_ctx t;
	struct zcx_mr_reg reg;
	size_t gen_end, ev_end, i;
	char *buf;
	long long at;

	ASSERT_EQ(0, zcx_test_ctx_open(&t));
	s = t.status;
	bytes = (const unsigned char *)s;
	EXPECT_EQ(ZCX_ABI_VERSION, s->abi_version);
	EXPECT_EQ(t.status_size, s->size);
	EXPECT_LE(sizeof(*s), s->gen_offset);
	gen_end = s->gen_offset + (size_t)s->gen_count * 8;
	EXPECT_LE(gen_end, s->event_offset);
	ev_end = s->event_offset + (size_t)s->event_count * sizeof(struct zcx_event);
	ASSERT_LE(ev_end, s->size);
	EXPECT_EQ(-1, not_all(s->reserved, sizeof(s->reserved), 0));
	EXPECT_EQ(-1, not_all(&s->counters, sizeof(s->counters), 0));
	at = not_all(bytes + sizeof(*s), s->gen_offset - sizeof(*s), 0);
	EXPECT_EQ(-1, at) TH_LOG("gap after the head, byte %lld", at);
	for (i = 0; i < s->gen_count; i++)
		if (t.gens[i] != 1)
			break;
	EXPECT_EQ(s->gen_count, i) TH_LOG("generation word %zu is %#llx", i,
					  (unsigned long long)t.gens[i]);
	at = not_all(bytes + gen_end, s->event_offset - gen_end, 0);
	EXPECT_EQ(-1, at) TH_LOG("gap after the generation words, byte %lld", at);
	for (i = 0; i < s->event_count; i++) {
		const struct zcx_event *e = &t.events[i];

		if (e->seq != ~0ULL || not_all(&e->start, sizeof(*e) - 8, 0) != -1)
			break;
	}
	EXPECT_EQ(s->event_count, i) TH_LOG("event entry %zu not blank", i);
	at = not_all(bytes + ev_end, s->size - ev_end, 0);
	EXPECT_EQ(-1, at) TH_LOG("tail after the event ring, byte %lld", at);

	buf = zcx_test_anon(16 * KiB);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, zcx_test_reg(&t, buf, 16 * KiB, ZCX_ACCESS_ALL, &reg));
	ASSERT_EQ(0, munmap(buf, 16 * KiB));
	ASSERT_EQ(1, s->counters.events);
	EXPECT_EQ(0, t.events[0].seq);
	EXPECT_EQ((uintptr_t)buf, t.events[0].start);
	EXPECT_EQ(16 * KiB, t.events[0].length);
	EXPECT_EQ(reg.handle, t.events[0].handle);
	EXPECT_EQ(0, t.events[0].cookie);
	EXPECT_EQ(ZCX_EVENT_UNMAP, t.events[0].cause);
	EXPECT_EQ(0, t.events[0].reserved);
	EXPECT_EQ(0, t.events[0].lost);
	EXPECT_EQ(-1, not_all(s->reserved, sizeof(s->reserved), 0));
	EXPECT_EQ(-1, not_all(s->counters.reserved, sizeof(s->counters.reserved), 0));
	for (i = 1; i < s->event_count; i++)
		if (t.events[i].seq != ~0ULL || not_all(&t.events[i].start, sizeof(t.events[i]) - 8, 0) != -1)
			break;
	EXPECT_EQ(s->event_count, i);
	/* The same event through read(), into a buffer with room for more. */
	{
		struct zcx_event ev[3];

		memset(ev, PAT, sizeof(ev));
		ASSERT_EQ(0, fcntl(t.fd, F_SETFL, O_NONBLOCK));
		ASSERT_EQ((ssize_t)sizeof(ev[0]), read(t.fd, ev, sizeof(ev)));
		EXPECT_EQ(0, memcmp(&ev[0], &t.events[0], sizeof(ev[0])));
		EXPECT_EQ(-1, not_all(&ev[1], 2 * sizeof(ev[0]), PAT));
		EXPECT_EQ(-1, read(t.fd, ev, sizeof(ev)));
		EXPECT_EQ(EAGAIN, errno);
	}
	EXPECT_EQ(0, zcx_test_dereg(&t, reg.handle));
	zcx_test_ctx_close(&t);
}

/*
 * The rings: a new endpoint's mapping is zero but for the sizes and masks
 * at their offsets.  After traffic (NOP, small and large send/recv, put,
 * get, a failed submission) every completion has flags 0, the
 * completion slots not yet used are still zero, and so is every byte of
 * the ring header other than the documented fields.  A barrier's state
 * page is zero when made.
 */
static bool hdr_field(const struct zcx_ring_offsets *o, size_t off)
{
	const __u32 at[] = { o->sq_head, o->sq_tail, o->sq_flags, o->sq_mask, o->sq_entries,
			     o->cq_head, o->cq_tail, o->cq_mask, o->cq_entries };
	size_t i;

	for (i = 0; i < sizeof(at) / sizeof(at[0]); i++)
		if (off >= at[i] && off < at[i] + 4)
			return true;
	return false;
}

TEST_F(sec, rings_and_barrier_page_hold_nothing_else)
{
	int fa = zcx_test_open(), fb = zcx_test_open();
	struct zcx_bar_create bc = { .nprocs = 1 };
	const struct zcx_ring_offsets *o;
	char *buf = zcx_test_anon(512 * KiB), *page;
	struct zcx_sqe sqe;
	struct zcx_cqe cqe;
	struct zcx_raw_ep a, b;
	uint64_t rkey;
	size_t off, sq_end, cq_used_end;
	__u32 pb, tail;
	long long at;
	int n;

	ASSERT_LE(0, fa);
	ASSERT_LE(0, fb);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, zcx_raw_ep_create(fa, 0, 16, &a));
	ASSERT_EQ(0, zcx_raw_ep_create(fb, 0, 16, &b));
	o = &a.c.offsets;
	for (off = 0; off < a.c.mmap_size; off++)
		if (!hdr_field(o, off) && a.map[off])
			break;
	EXPECT_EQ(a.c.mmap_size, off) TH_LOG("byte %zu of a new ring is %#x", off,
					     off < a.c.mmap_size ? (unsigned char)a.map[off] : 0);
	EXPECT_EQ(16, *(__u32 *)(a.map + o->sq_entries));
	EXPECT_EQ(32, *(__u32 *)(a.map + o->cq_entries));

	/* Traffic: A to B, and the barrier. */
	ASSERT_EQ(0, rep_connect(&a, &b.c.addr, &pb));
	fill(buf, 256 * KiB, 0x44);
	ASSERT_EQ(0, do_expose(fb, buf + 256 * KiB, 64 * KiB, ZCX_REMOTE_ALL, &rkey));
	sqe = (struct zcx_sqe){ .opcode = ZCX_OP_NOP, .user_data = 1 };
	EXPECT_EQ(0, rep_one(&a, &sqe, &cqe));
	sqe = (struct zcx_sqe){ .opcode = ZCX_OP_RECV, .addr = (uintptr_t)buf + 400 * KiB,
				.len = 100 * KiB, .user_data = 2 };
	ASSERT_EQ(0, rep_submit(&b, &sqe));
	sqe = (struct zcx_sqe){ .opcode = ZCX_OP_SEND, .peer = pb, .addr = (uintptr_t)buf,
				.len = 10, .tag = 9, .user_data = 3 };
	EXPECT_EQ(0, rep_one(&a, &sqe, &cqe));
	EXPECT_EQ(0, rep_reap(&b, &cqe));
	sqe = (struct zcx_sqe){ .opcode = ZCX_OP_RECV, .addr = (uintptr_t)buf + 400 * KiB,
				.len = 100 * KiB, .user_data = 4 };
	ASSERT_EQ(0, rep_submit(&b, &sqe));
	sqe = (struct zcx_sqe){ .opcode = ZCX_OP_SEND, .peer = pb, .addr = (uintptr_t)buf,
				.len = 70 * KiB, .tag = 9, .user_data = 5 };
	EXPECT_EQ(0, rep_one(&a, &sqe, &cqe));
	EXPECT_EQ(0, rep_reap(&b, &cqe));
	EXPECT_EQ(0, rep_rma(&a, ZCX_OP_PUT, pb, buf, 1000, (uintptr_t)buf + 256 * KiB, rkey));
	EXPECT_EQ(0, rep_rma(&a, ZCX_OP_GET, pb, buf + 128 * KiB, 50 * KiB,
			     (uintptr_t)buf + 256 * KiB, rkey));
	EXPECT_EQ(-EACCES, rep_rma(&a, ZCX_OP_GET, pb, buf, 10, (uintptr_t)buf, rkey ^ 1));
	sqe = (struct zcx_sqe){ .opcode = 200, .user_data = 6 };
	EXPECT_EQ(-EINVAL, rep_one(&a, &sqe, &cqe));

	for (n = 0; n < 2; n++) {
		struct zcx_raw_ep *r = n ? &b : &a;

		o = &r->c.offsets;
		tail = *r->cq_tail;
		ASSERT_GT(r->c.cq_entries, tail) TH_LOG("the CQ wrapped: the test needs a larger one");
		for (off = 0; off < tail; off++) {
			EXPECT_EQ(0, r->cqes[off].flags) TH_LOG("ep %d completion %zu", n, off);
		}
		/* Header, and the gap up to the SQ entries: documented fields only. */
		for (off = 0; off < o->sqes; off++)
			if (!hdr_field(o, off) && r->map[off])
				break;
		EXPECT_EQ(o->sqes, off) TH_LOG("ep %d: header byte %zu is %#x", n, off,
					       (unsigned char)r->map[off]);
		/* Between the SQ entries and the CQ entries, and past the used CQ entries. */
		sq_end = o->sqes + r->c.sq_entries * sizeof(struct zcx_sqe);
		at = not_all(r->map + sq_end, o->cqes - sq_end, 0);
		EXPECT_EQ(-1, at) TH_LOG("ep %d: gap after the SQ, byte %lld", n, at);
		cq_used_end = o->cqes + tail * sizeof(struct zcx_cqe);
		at = not_all(r->map + cq_used_end, r->c.mmap_size - cq_used_end, 0);
		EXPECT_EQ(-1, at) TH_LOG("ep %d: past the used completions, byte %lld", n, at);
	}

	bc.ep = a.c.ep;
	ASSERT_EQ(0, zcx_test_ioctl(fa, ZCX_IOC_BAR_CREATE, &bc));
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fa, bc.mmap_offset);
	ASSERT_NE(MAP_FAILED, page);
	EXPECT_EQ(-1, not_all(page, 4096, 0));
	munmap(page, 4096);

	EXPECT_EQ(0, do_unexpose(fb, rkey));
	zcx_raw_ep_destroy(&a);
	zcx_raw_ep_destroy(&b);
	close(fa);
	close(fb);
	munmap(buf, 512 * KiB);
}

/*
 * A message shorter than the receive buffer: the receiver sees exactly
 * its bytes, the rest of the buffer keeps the receiver's pattern (nothing
 * of the sender's bytes past the message, nothing of kernel buffers), and
 * the completion reports the message's length.  Inline and zero-copy
 * sizes, receives posted before and after the send.  (zcx_xfer_test
 * checks guards around exact-size buffers, integrity_all_sizes, and the
 * truncated case, truncation_emsgsize.)
 */
TEST_F(sec, short_message_leaves_buffer_tail)
{
	static const size_t lens[] = { 0, 1, 10, 100, 4095, 4096, 4097, 64 * KiB + 3 };
	const size_t rlen = 192 * KiB;
	int fa = zcx_test_open(), fb = zcx_test_open();
	char *src = zcx_test_anon(256 * KiB), *dst = zcx_test_anon(256 * KiB);
	struct zcx_sqe sqe;
	struct zcx_cqe cqe;
	struct zcx_raw_ep a, b;
	unsigned int i, late;
	long long at;
	__u32 pb;

	ASSERT_LE(0, fa);
	ASSERT_LE(0, fb);
	ASSERT_TRUE(src && dst);
	ASSERT_EQ(0, zcx_raw_ep_create(fa, 0, 16, &a));
	ASSERT_EQ(0, zcx_raw_ep_create(fb, 0, 16, &b));
	ASSERT_EQ(0, rep_connect(&a, &b.c.addr, &pb));
	/* The sender's buffer goes on with bytes that are not the message's. */
	fill(src, 256 * KiB, 0x5ec2e7);
	for (late = 0; late < 2; late++) {
		for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
			struct zcx_sqe send = {
				.opcode = ZCX_OP_SEND, .peer = pb, .addr = (uintptr_t)src + 7,
				.len = lens[i], .tag = i, .user_data = 100 + i,
			};
			struct zcx_cqe scqe;

			memset(dst, PAT, 256 * KiB);
			sqe = (struct zcx_sqe){ .opcode = ZCX_OP_RECV, .addr = (uintptr_t)dst + 3,
						.len = rlen, .tag = i, .tag_mask = ~0ULL,
						.user_data = 200 + i };
			if (late) {
				/* Small: buffered in the module first; large: waits for the receive. */
				ASSERT_EQ(0, rep_submit(&a, &send));
				ASSERT_EQ(0, rep_submit(&b, &sqe));
				ASSERT_EQ(0, rep_reap(&b, &cqe)) TH_LOG("len %zu", lens[i]);
				ASSERT_EQ(0, rep_reap(&a, &scqe));
			} else {
				ASSERT_EQ(0, rep_submit(&b, &sqe));
				ASSERT_EQ(0, rep_one(&a, &send, &scqe)) TH_LOG("len %zu", lens[i]);
				ASSERT_EQ(0, rep_reap(&b, &cqe));
			}
			EXPECT_EQ(200 + i, cqe.user_data);
			EXPECT_EQ(lens[i], cqe.len);
			EXPECT_EQ(i, cqe.tag);
			EXPECT_EQ(0, cqe.flags);
			EXPECT_EQ(100 + i, scqe.user_data);
			EXPECT_EQ(0, scqe.flags);
			EXPECT_EQ(0, memcmp(dst + 3, src + 7, lens[i])) TH_LOG("len %zu", lens[i]);
			at = not_all(dst + 3 + lens[i], 256 * KiB - 3 - lens[i], PAT);
			EXPECT_EQ(-1, at) TH_LOG("len %zu%s: byte %lld past the message changed",
						 lens[i], late ? " (late receive)" : "", at);
			EXPECT_EQ(-1, not_all(dst, 3, PAT));
		}
	}
	zcx_raw_ep_destroy(&a);
	zcx_raw_ep_destroy(&b);
	close(fa);
	close(fb);
	munmap(src, 256 * KiB);
	munmap(dst, 256 * KiB);
}

ZCX_TEST_HARNESS_MAIN
