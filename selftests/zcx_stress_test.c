// SPDX-License-Identifier: GPL-2.0-only
/*
 * zcx_stress_test - registrations racing with unmaps in many threads never
 * return a stale region; a process that exits with registrations leaves
 * nothing pinned, also while another process still holds its descriptor.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "zcx_test.h"

#define CHUNKS		8
#define CHUNK_PAGES	16
#define REGISTRARS	4
#define REMAPPERS	2
/* Fewer on a slow guest (ZCX_SLOW). */
#define ITERATIONS	(3000 / (int)zcx_test_slowdown())

struct race {
	struct zcx_test_ctx *t;
	char *pool;
	long page;
	/* Per chunk: odd while it is being replaced, bumped after. */
	unsigned int epoch[CHUNKS];
	unsigned int seed;
	/* Results, written by the threads. */
	unsigned long stale_hits, late_invalidations, untold, registered, faults;
	int errors;
};

static unsigned int next_rand(unsigned int *seed)
{
	*seed = *seed * 1103515245 + 12345;
	return *seed >> 8;
}

/* Seq of the event that invalidated @handle, if the ring holds it; else UINT64_MAX. */
static __u64 invalidation_seq(const struct zcx_test_ctx *t, __u64 handle, __u64 head)
{
	__u64 count = t->status->event_count, seq;

	for (seq = head > count ? head - count : 0; seq < head; seq++) {
		const struct zcx_event *ev = &t->events[seq & (count - 1)];

		if (__atomic_load_n(&ev->seq, __ATOMIC_ACQUIRE) == seq && ev->handle == handle)
			return seq;
	}
	return UINT64_MAX;
}

/* How long an invalidation's event may take to follow its stale word. */
#define EVENT_WAIT_MS	2000

/*
 * Whether the event that invalidated @handle came before event @before
 * (the region was stale when the call that returned it began): 1 if so,
 * 0 if not, -1 if the ring no longer tells.  Every invalidation of a
 * region that is in use makes an event, so an event not in the ring is
 * older than the ring's oldest, which tells as long as that is no later
 * than @before.  The head is read again after each scan, as a seqlock's
 * reader would: entries from @before on were not overwritten meanwhile
 * if the ring still holds them then.  The module marks a region stale
 * just before it publishes the event, under a lock: a late invalidation
 * seen through the word alone has its event in a moment, so a miss is
 * looked for again, for a bounded time, before it counts as stale.
 */
static int invalidated_before(const struct zcx_test_ctx *t, __u64 handle, __u64 before)
{
	const struct timespec tick = { 0, 1000 * 1000 };
	__u64 count = t->status->event_count, head, seq;
	unsigned int waited;

	for (waited = 0;; waited++) {
		head = __atomic_load_n(&t->status->counters.events, __ATOMIC_ACQUIRE);
		seq = invalidation_seq(t, handle, head);
		head = __atomic_load_n(&t->status->counters.events, __ATOMIC_ACQUIRE);
		if (head > count && head - count > before)
			return -1;
		if (seq != UINT64_MAX)
			return seq < before;
		if (waited >= EVENT_WAIT_MS)
			return 1;
		nanosleep(&tick, NULL);
	}
}

static void *registrar(void *arg)
{
	struct race *race = arg;
	unsigned int seed = __atomic_add_fetch(&race->seed, 7919, __ATOMIC_RELAXED);
	int i;

	for (i = 0; i < ITERATIONS; i++) {
		unsigned int chunk = next_rand(&seed) % CHUNKS;
		unsigned int first = next_rand(&seed) % CHUNK_PAGES;
		unsigned int pages = 1 + next_rand(&seed) % (CHUNK_PAGES - first);
		unsigned int access = 1 + next_rand(&seed) % 3;
		char *p = race->pool + (chunk * CHUNK_PAGES + first) * race->page;
		unsigned int e1, e2;
		struct zcx_mr_reg r;
		__u64 events_before;
		int ret, before;
		bool valid;

		e1 = __atomic_load_n(&race->epoch[chunk], __ATOMIC_ACQUIRE);
		events_before = __atomic_load_n(&race->t->status->counters.events,
						__ATOMIC_ACQUIRE);
		ret = zcx_test_reg(race->t, p, pages * race->page, access, &r);
		valid = !ret && zcx_test_valid(race->t, &r);
		e2 = __atomic_load_n(&race->epoch[chunk], __ATOMIC_ACQUIRE);
		if (ret) {
			/* Only a chunk caught mid-replacement may fail. */
			if (ret == -EFAULT || ret == -EAGAIN)
				__atomic_add_fetch(&race->faults, 1, __ATOMIC_RELAXED);
			else
				__atomic_add_fetch(&race->errors, 1, __ATOMIC_RELAXED);
			continue;
		}
		/*
		 * Invalid already?  Fine if it was invalidated after the call
		 * began (a remap, or a spurious invalidation such as a failed
		 * migration attempt).  A region invalidated before the call,
		 * and still handed out, is the bug this test hunts.
		 */
		if (!valid) {
			before = invalidated_before(race->t, r.handle, events_before);
			if (before > 0)
				__atomic_add_fetch(&race->stale_hits, 1, __ATOMIC_RELAXED);
			else if (before < 0)
				__atomic_add_fetch(&race->untold, 1, __ATOMIC_RELAXED);
			else if (e1 == e2 && !(e1 & 1))
				__atomic_add_fetch(&race->late_invalidations, 1,
						   __ATOMIC_RELAXED);
		}
		__atomic_add_fetch(&race->registered, 1, __ATOMIC_RELAXED);
		if (zcx_test_dereg(race->t, r.handle))
			__atomic_add_fetch(&race->errors, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *remapper(void *arg)
{
	struct race *race = arg;
	unsigned int seed = __atomic_add_fetch(&race->seed, 104729, __ATOMIC_RELAXED);
	size_t len = CHUNK_PAGES * race->page;
	int i;

	for (i = 0; i < ITERATIONS / 4; i++) {
		unsigned int chunk = next_rand(&seed) % CHUNKS;
		char *p = race->pool + chunk * len;

		/* Two remappers may pick one chunk: claim it (even -> odd). */
		unsigned int e = __atomic_load_n(&race->epoch[chunk], __ATOMIC_RELAXED);

		if ((e & 1) || !__atomic_compare_exchange_n(&race->epoch[chunk], &e, e + 1, false,
							    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			continue;
		if (munmap(p, len) ||
		    mmap(p, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != p)
			__atomic_add_fetch(&race->errors, 1, __ATOMIC_RELAXED);
		/*
		 * Written before it counts as stable: a read-only pin of a
		 * never-written page may pin the zero page, which a later
		 * write pin rightly invalidates without any remap.
		 */
		memset(p, (int)e, len);
		__atomic_store_n(&race->epoch[chunk], e + 2, __ATOMIC_RELEASE);
	}
	return NULL;
}

TEST(threads_register_while_others_unmap)
{
	struct zcx_test_census before = zcx_test_census(), after;
	pthread_t threads[REGISTRARS + REMAPPERS];
	struct zcx_test_ctx t;
	struct race race = { .t = &t, .seed = 1 };
	int i;

	race.page = sysconf(_SC_PAGESIZE);
	ASSERT_EQ(0, zcx_test_ctx_open(&t));
	race.pool = zcx_test_anon(CHUNKS * CHUNK_PAGES * race.page);
	ASSERT_NE(NULL, race.pool);
	memset(race.pool, 1, CHUNKS * CHUNK_PAGES * race.page);
	for (i = 0; i < REGISTRARS; i++)
		ASSERT_EQ(0, pthread_create(&threads[i], NULL, registrar, &race));
	for (; i < REGISTRARS + REMAPPERS; i++)
		ASSERT_EQ(0, pthread_create(&threads[i], NULL, remapper, &race));
	for (i = 0; i < REGISTRARS + REMAPPERS; i++)
		ASSERT_EQ(0, pthread_join(threads[i], NULL));

	TH_LOG("%lu registered, %lu raced with a remap, %llu invalidations, %lu spurious, "
	       "%lu untold (events overwritten)", race.registered, race.faults,
	       (unsigned long long)zcx_test_counter(&t, invalidations),
	       race.late_invalidations, race.untold);
	EXPECT_EQ(0, race.errors);
	EXPECT_EQ(0, race.stale_hits);
	EXPECT_LT(ITERATIONS, race.registered);
	EXPECT_LT(0, zcx_test_counter(&t, invalidations));
	zcx_test_ctx_close(&t);
	after = zcx_test_census();
	EXPECT_EQ(before.regions, after.regions);
	EXPECT_EQ(before.pinned_pages, after.pinned_pages);
	munmap(race.pool, CHUNKS * CHUNK_PAGES * race.page);
}

/* Register a lot and leave without deregistering or closing. */
static int register_and_leave(int sock)
{
	struct zcx_test_ctx t;
	struct zcx_mr_reg r;
	char *buf = zcx_test_anon(4 * 1024 * 1024);
	int i;

	if (!buf || zcx_test_ctx_open(&t))
		return 1;
	for (i = 0; i < 16; i++)
		if (zcx_test_reg(&t, buf + i * 256 * 1024, 256 * 1024, ZCX_ACCESS_ALL, &r))
			return 2;
	if (sock >= 0 && zcx_test_send_fd(sock, t.fd))
		return 3;
	return 0;
}

TEST(exit_with_registrations)
{
	struct zcx_test_census before = zcx_test_census(), after;
	int status;
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(register_and_leave(-1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* The descriptor was released during exit: all gone already. */
	after = zcx_test_census();
	EXPECT_EQ(before.contexts, after.contexts);
	EXPECT_EQ(before.regions, after.regions);
	EXPECT_EQ(before.pinned_pages, after.pinned_pages);
}

/*
 * The owner exits while another process holds its descriptor: the
 * address space's release invalidates everything and the reaper unpins it
 * without waiting for the last close.
 */
TEST(exit_with_fd_open_elsewhere)
{
	struct zcx_test_census before = zcx_test_census(), after;
	int sv[2], status, fd, i;
	pid_t pid;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(register_and_leave(sv[1]));
	/* Only the child writes: if it fails, recvmsg() sees end of file. */
	close(sv[1]);
	fd = zcx_test_recv_fd(sv[0]);
	ASSERT_LE(0, fd);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(before.contexts + 1, zcx_test_stat("contexts"));
	/* Unpinning runs in the background: wait for it, boundedly. */
	for (i = 0; i < 10000; i++) {
		if (zcx_test_stat("pinned_pages") == before.pinned_pages)
			break;
		usleep(1000);
	}
	EXPECT_EQ(before.pinned_pages, zcx_test_stat("pinned_pages"));
	/* The holder cannot use it, and closing it frees the rest. */
	EXPECT_EQ(-EIO, zcx_test_flush(&(struct zcx_test_ctx){ .fd = fd }));
	close(fd);
	after = zcx_test_census();
	EXPECT_EQ(before.contexts, after.contexts);
	EXPECT_EQ(before.regions, after.regions);
	close(sv[0]);
}

ZCX_TEST_HARNESS_MAIN
