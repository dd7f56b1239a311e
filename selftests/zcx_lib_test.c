// SPDX-License-Identifier: GPL-2.0-only
/*
 * zcx_lib_test - libzcx against the module: open/query/close/strerror, the
 * registration front cache (hits without system calls, stale entries never
 * returned, room made when the module runs out), event draining, fork,
 * flushing a polled endpoint.
 * Also built with AddressSanitizer (zcx_lib_test_asan) to prove the
 * library leaks nothing and touches no memory it should not.
 */
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "zcx.h"
#include "zcx_test.h"

TEST(open_query_close)
{
	struct zcx_query q;
	struct zcx *zcx;

	ASSERT_EQ(0, zcx_open(&zcx, 0));
	ASSERT_NE(NULL, zcx);
	memset(&q, 0xa5, sizeof(q));
	ASSERT_EQ(0, zcx_query(zcx, &q));
	EXPECT_EQ(ZCX_ABI_VERSION, q.abi_version);
	EXPECT_EQ(zcx_test_read_number(ZCX_MODULE_PARAM("ring_depth")), q.ring_depth);
	EXPECT_EQ(0, q.reserved[0]);
	EXPECT_EQ(FD_CLOEXEC, fcntl(zcx_fd(zcx), F_GETFD) & FD_CLOEXEC);
	zcx_close(zcx);
}

TEST(open_rejects_flags)
{
	struct zcx *zcx = (struct zcx *)&zcx;

	EXPECT_EQ(-EINVAL, zcx_open(&zcx, 1));
	EXPECT_EQ(NULL, zcx);
}

TEST(close_null)
{
	zcx_close(NULL);
}

TEST(many_handles)
{
	long long refs = zcx_test_module_refs();
	struct zcx *zcx[64];
	int i;

	for (i = 0; i < 64; i++)
		ASSERT_EQ(0, zcx_open(&zcx[i], 0));
	EXPECT_EQ(refs + 64, zcx_test_module_refs());
	for (i = 0; i < 64; i++)
		zcx_close(zcx[i]);
	EXPECT_EQ(refs, zcx_test_module_refs());
}

TEST(forked_child_gets_eio)
{
	struct zcx *zcx;
	int status;
	pid_t pid;

	ASSERT_EQ(0, zcx_open(&zcx, 0));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct zcx_query q;

		_exit(zcx_query(zcx, &q) == -EIO ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	zcx_close(zcx);
}

TEST(error_strings)
{
	EXPECT_NE(NULL, strstr(zcx_strerror(-ENOENT), "module"));
	EXPECT_NE(NULL, strstr(zcx_strerror(-EIO), "fork"));
	EXPECT_STREQ(strerror(ENOMEM), zcx_strerror(-ENOMEM));
	EXPECT_STREQ("Success", zcx_strerror(0));
	EXPECT_STREQ("Unknown error", zcx_strerror(-100000));
	EXPECT_STREQ("Unknown error", zcx_strerror(5));
}

static struct zcx *open_lib(struct __test_metadata *_metadata)
{
	struct zcx *zcx;

	ASSERT_EQ(0, zcx_open(&zcx, 0));
	return zcx;
}

TEST(mr_lib_hit_costs_no_syscall)
{
	struct zcx *zcx = open_lib(_metadata);
	struct zcx_mr *a, *b;
	struct zcx_mr_stats st;
	char *buf = zcx_test_anon(1 << 20);

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, zcx_mr_reg(zcx, buf, 1 << 20, ZCX_ACCESS_ALL, &a));
	ASSERT_EQ(0, zcx_mr_reg(zcx, buf, 1 << 20, ZCX_ACCESS_ALL, &b));
	EXPECT_EQ(a, b);
	EXPECT_TRUE(zcx_mr_valid(zcx, a));
	ASSERT_EQ(0, zcx_mr_stats(zcx, &st));
	EXPECT_EQ(1, st.lib_hits);
	EXPECT_EQ(1, st.misses);
	/* The module saw one registration only: the hit made no ioctl. */
	EXPECT_EQ(1, st.kernel.misses);
	EXPECT_EQ(0, st.kernel.hits);
	EXPECT_EQ(0, zcx_mr_dereg(zcx, a));
	EXPECT_EQ(0, zcx_mr_dereg(zcx, b));
	EXPECT_EQ(-EINVAL, zcx_mr_dereg(zcx, b));
	/* Released but cached: still a library hit. */
	ASSERT_EQ(0, zcx_mr_reg(zcx, buf, 1 << 20, ZCX_ACCESS_ALL, &b));
	EXPECT_EQ(a, b);
	EXPECT_EQ(0, zcx_mr_dereg(zcx, b));
	zcx_close(zcx);
	munmap(buf, 1 << 20);
}

TEST(mr_kernel_hit_for_subrange)
{
	struct zcx *zcx = open_lib(_metadata);
	struct zcx_mr *whole, *part;
	struct zcx_mr_stats st;
	char *buf = zcx_test_anon(1 << 20);

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, zcx_mr_reg(zcx, buf, 1 << 20, ZCX_ACCESS_ALL, &whole));
	ASSERT_EQ(0, zcx_mr_reg(zcx, buf + 100, 5000, ZCX_ACCESS_READ, &part));
	EXPECT_NE(whole, part);
	EXPECT_EQ(zcx_mr_handle(whole), zcx_mr_handle(part));
	ASSERT_EQ(0, zcx_mr_stats(zcx, &st));
	EXPECT_EQ(1, st.kernel_hits);
	EXPECT_EQ(0, zcx_mr_dereg(zcx, whole));
	EXPECT_EQ(0, zcx_mr_dereg(zcx, part));
	zcx_close(zcx);
	munmap(buf, 1 << 20);
}

TEST(mr_stale_never_returned)
{
	struct zcx *zcx = open_lib(_metadata);
	struct zcx_mr *old, *held, *fresh;
	struct zcx_mr_stats st;
	size_t len = 256 * 1024;
	char *buf = zcx_test_anon(len);

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, zcx_mr_reg(zcx, buf, len, ZCX_ACCESS_ALL, &old));
	ASSERT_EQ(0, zcx_mr_reg(zcx, buf, len, ZCX_ACCESS_ALL, &held));
	EXPECT_EQ(0, zcx_mr_dereg(zcx, old));
	/* Same address, new memory. */
	ASSERT_EQ(buf, mmap(buf, len, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
	EXPECT_FALSE(zcx_mr_valid(zcx, held));
	ASSERT_EQ(0, zcx_mr_reg(zcx, buf, len, ZCX_ACCESS_ALL, &fresh));
	EXPECT_NE(held, fresh);
	EXPECT_TRUE(zcx_mr_valid(zcx, fresh));
	EXPECT_NE(zcx_mr_handle(held), zcx_mr_handle(fresh));
	ASSERT_EQ(0, zcx_mr_stats(zcx, &st));
	EXPECT_EQ(1, st.stale);
	EXPECT_EQ(2, st.misses);
	EXPECT_EQ(1, st.kernel.invalidations);
	/* The stale one is still released normally. */
	EXPECT_EQ(0, zcx_mr_dereg(zcx, held));
	EXPECT_EQ(0, zcx_mr_dereg(zcx, fresh));
	zcx_close(zcx);
	munmap(buf, len);
}

/* When the module's cache is full of the library's unused entries. */
TEST(mr_makes_room_on_enomem)
{
	struct zcx *zcx = open_lib(_metadata);
	struct zcx_limits lim = { .flags = ZCX_LIMIT_SET_ENTRIES, .cache_entries = 4 };
	struct zcx_mr *mr[5];
	struct zcx_mr_stats st;
	long page = sysconf(_SC_PAGESIZE);
	char *buf = zcx_test_anon(8 * page);
	int i;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, ioctl(zcx_fd(zcx), ZCX_IOC_LIMITS, &lim));
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, zcx_mr_reg(zcx, buf + i * page, page, ZCX_ACCESS_ALL, &mr[i]));
		EXPECT_EQ(0, zcx_mr_dereg(zcx, mr[i]));
	}
	ASSERT_EQ(0, zcx_mr_reg(zcx, buf + 4 * page, page, ZCX_ACCESS_ALL, &mr[4]));
	ASSERT_EQ(0, zcx_mr_stats(zcx, &st));
	/* The library let go of its four; the module evicted one of them. */
	EXPECT_EQ(4, st.evictions);
	EXPECT_EQ(1, st.kernel.evictions);
	EXPECT_EQ(4, st.kernel.regions);
	EXPECT_EQ(0, zcx_mr_dereg(zcx, mr[4]));
	EXPECT_EQ(0, zcx_mr_flush(zcx));
	ASSERT_EQ(0, zcx_mr_stats(zcx, &st));
	EXPECT_EQ(0, st.kernel.regions);
	zcx_close(zcx);
	munmap(buf, 8 * page);
}

/*
 * Exposing memory pins it too: registrations the library keeps cached
 * (in use to the module) give way, as they do for a registration.
 */
TEST(expose_makes_room_on_enomem)
{
	struct zcx *zcx = open_lib(_metadata);
	struct zcx_limits lim = { .flags = ZCX_LIMIT_SET_BYTES, .cache_bytes = 64 * 1024 };
	char *buf = zcx_test_anon(256 * 1024);
	struct zcx_mr *mr;
	uint64_t rkey;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, ioctl(zcx_fd(zcx), ZCX_IOC_LIMITS, &lim));
	ASSERT_EQ(0, zcx_mr_reg(zcx, buf, 48 * 1024, ZCX_ACCESS_ALL, &mr));
	EXPECT_EQ(0, zcx_mr_dereg(zcx, mr));
	EXPECT_EQ(0, zcx_expose(zcx, buf + 128 * 1024, 32 * 1024, ZCX_REMOTE_ALL, &rkey));
	EXPECT_EQ(0, zcx_unexpose(zcx, rkey));
	zcx_close(zcx);
	munmap(buf, 256 * 1024);
}

struct drained {
	unsigned int n, overflows;
	__u64 lost, last_seq;
	__u32 causes;
	__u64 first_starts[3];
};

static void on_event(void *arg, const struct zcx_event *ev)
{
	struct drained *d = arg;

	d->n++;
	d->last_seq = ev->seq;
	if (ev->cause == ZCX_EVENT_OVERFLOW) {
		d->overflows++;
		d->lost += ev->lost;
	} else {
		d->causes |= 1u << ev->cause;
		if (d->n <= 3)
			d->first_starts[d->n - 1] = ev->start;
	}
}

TEST(events_drain_and_overflow)
{
	struct zcx *zcx = open_lib(_metadata);
	long page = sysconf(_SC_PAGESIZE);
	struct drained d = { 0 };
	unsigned int n = 1100, i;
	char *buf = zcx_test_anon(n * page);
	struct zcx_mr *mr;

	ASSERT_NE(NULL, buf);
	/*
	 * No huge pages: khugepaged's collapse attempts invalidate the
	 * cached regions (cause CLEAR, seen on 6.1) before they give up on
	 * the pinned pages.
	 */
	ASSERT_EQ(0, madvise(buf, n * page, MADV_NOHUGEPAGE));
	EXPECT_EQ(0, zcx_events_drain(zcx, on_event, &d));
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, zcx_mr_reg(zcx, buf + i * page, page, ZCX_ACCESS_ALL, &mr));
		EXPECT_EQ(0, zcx_mr_dereg(zcx, mr));
	}
	ASSERT_EQ(0, munmap(buf, 3 * page));
	EXPECT_EQ(3, zcx_events_drain(zcx, on_event, &d));
	/*
	 * One event per region, in the order they went stale.  The cause is
	 * the munmap's, unless the kernel invalidated a region first: 6.1's
	 * compaction, having isolated a page just before it was pinned, tries
	 * to migrate it (MMU_NOTIFY_CLEAR) and only then finds the pin.
	 */
	EXPECT_EQ(0, d.causes & ~(1u << ZCX_EVENT_UNMAP | 1u << ZCX_EVENT_CLEAR));
	for (i = 0; i < 3; i++) {
		unsigned int j, matches = 0;

		for (j = 0; j < 3; j++)
			matches += d.first_starts[j] == (uintptr_t)(buf + i * page);
		EXPECT_EQ(1, matches);
	}
	EXPECT_EQ(0, zcx_events_drain(zcx, on_event, &d));

	/* More than the ring holds: reported, then the rest in order. */
	for (i = 3; i < n; i++) {
		ASSERT_EQ(0, zcx_mr_reg(zcx, buf + i * page, page, ZCX_ACCESS_ALL, &mr));
		EXPECT_EQ(0, zcx_mr_dereg(zcx, mr));
	}
	ASSERT_EQ(0, munmap(buf + 3 * page, (n - 3) * page));
	memset(&d, 0, sizeof(d));
	EXPECT_LT(0, zcx_events_drain(zcx, on_event, &d));
	EXPECT_EQ(1, d.overflows);
	EXPECT_EQ(n - 3 - 1024, d.lost);
	EXPECT_EQ(n - 1, d.last_seq);
	EXPECT_EQ(1025, d.n);
	zcx_close(zcx);
}

TEST(mr_after_fork_is_eio)
{
	struct zcx *zcx = open_lib(_metadata);
	char *buf = zcx_test_anon(4096);
	struct zcx_mr *mr;
	int status;
	pid_t pid;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, zcx_mr_reg(zcx, buf, 4096, ZCX_ACCESS_ALL, &mr));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct zcx_mr *child;
		struct zcx_mr_stats st;

		/* The status area is not mapped here: no crash, an error. */
		if (zcx_mr_reg(zcx, buf, 4096, ZCX_ACCESS_ALL, &child) != -EIO)
			_exit(1);
		if (zcx_mr_dereg(zcx, mr) != -EIO || zcx_mr_stats(zcx, &st) != -EIO)
			_exit(2);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_TRUE(zcx_mr_valid(zcx, mr));
	EXPECT_EQ(0, zcx_mr_dereg(zcx, mr));
	zcx_close(zcx);
	munmap(buf, 4096);
}

struct hammer {
	struct zcx *zcx;
	char *buf;
	int errors;
};

static void *hammer_thread(void *arg)
{
	struct hammer *h = arg;
	struct zcx_mr *mr;
	int i;

	for (i = 0; i < 20000; i++) {
		size_t off = (size_t)(i % 16) * 4096;

		if (zcx_mr_reg(h->zcx, h->buf + off, 4096, ZCX_ACCESS_ALL, &mr) ||
		    zcx_mr_dereg(h->zcx, mr))
			__atomic_add_fetch(&h->errors, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/*
 * In a child of fork() an endpoint's calls fail with EIO (its rings were
 * not inherited), and closing the inherited handle unmaps nothing of the
 * child's: a context the child opened itself, whose status area may sit
 * where the parent's was, goes on working.
 */
TEST(endpoint_after_fork_is_eio)
{
	struct zcx *zcx = open_lib(_metadata);
	char *buf = zcx_test_anon(4096);
	struct zcx_req req = { 0 };
	struct zcx_ep *ep;
	int status;
	pid_t pid;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, zcx_ep_create(zcx, 0, 0, &ep));
	ASSERT_EQ(0, zcx_irecv(ep, buf, 64, 1, ~0ULL, &req));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct zcx_mr *mr, *again;
		struct zcx *mine;

		if (zcx_test(ep, &req) != -EIO || zcx_wait(ep, &req) != -EIO)
			_exit(1);
		if (zcx_open(&mine, 0))
			_exit(2);
		zcx_close(zcx);
		if (zcx_mr_reg(mine, buf, 4096, ZCX_ACCESS_ALL, &mr) ||
		    zcx_mr_reg(mine, buf, 4096, ZCX_ACCESS_ALL, &again) || again != mr ||
		    !zcx_mr_valid(mine, mr))
			_exit(3);
		zcx_close(mine);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status)) TH_LOG("child killed by signal %d", WTERMSIG(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, zcx_test(ep, &req));
	zcx_ep_destroy(ep);
	zcx_close(zcx);
	munmap(buf, 4096);
}

struct fork_waiter {
	struct zcx_ep *ep;
	struct zcx_req req;
	pid_t tid;			/* __atomic, once set */
	int ret;
};

static void *fork_wait(void *arg)
{
	struct fork_waiter *w = arg;

	__atomic_store_n(&w->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	w->ret = zcx_wait(w->ep, &w->req);
	return NULL;
}

/* The system call thread @tid sleeps in, or -1. */
static long thread_syscall(pid_t tid)
{
	char path[64], buf[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0 || buf[0] < '0' || buf[0] > '9')
		return -1;
	buf[n] = '\0';
	return strtol(buf, NULL, 10);
}

/*
 * Two threads wait on one endpoint: one in ZCX_IOC_ENTER, the other on
 * the library's condition variable until the first has reaped.  A child
 * forked then closes the inherited handle: it must return, although the
 * child has neither thread (glibc's pthread_cond_destroy() waits for the
 * waiters a condition variable counts, for ever in the child), and the
 * parent's waits go on.
 */
TEST(close_in_a_child_forked_while_threads_wait)
{
	/* Both waits within the harness's timeout, on a slow guest too. */
	unsigned int ms, limit = 4000 * zcx_test_slowdown();
	struct zcx *zcx = open_lib(_metadata);
	char *buf = zcx_test_anon(4096);
	struct fork_waiter w[2] = { 0 };
	pthread_t threads[2];
	struct zcx_addr addr;
	struct zcx_ep *ep;
	long sc[2] = { -1, -1 };
	int i, status = 0;
	uint32_t peer;
	pid_t pid;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, zcx_ep_create(zcx, 0, 0, &ep));
	for (i = 0; i < 2; i++) {
		w[i].ep = ep;
		ASSERT_EQ(0, zcx_irecv(ep, buf + 64 * i, 64, i + 1, ~0ULL, &w[i].req));
	}
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&threads[i], NULL, fork_wait, &w[i]));
	for (ms = 0; ms < limit; ms++) {
		for (i = 0; i < 2; i++)
			sc[i] = __atomic_load_n(&w[i].tid, __ATOMIC_ACQUIRE) ?
				thread_syscall(w[i].tid) : -1;
		if ((sc[0] == SYS_ioctl && sc[1] == SYS_futex) ||
		    (sc[0] == SYS_futex && sc[1] == SYS_ioctl))
			break;
		usleep(1000);
	}
	ASSERT_LT(ms, limit) TH_LOG("the waiters sleep in system calls %ld and %ld", sc[0], sc[1]);

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		zcx_close(zcx);
		_exit(0);
	}
	for (ms = 0; ms < limit && waitpid(pid, &status, WNOHANG) != pid; ms++)
		usleep(1000);
	if (ms == limit) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	EXPECT_LT(ms, limit) TH_LOG("zcx_close() in the child did not return");
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) TH_LOG("%#x", status);

	/* The parent's waits end as usual. */
	zcx_ep_addr(ep, &addr);
	ASSERT_EQ(0, zcx_ep_connect(ep, &addr, &peer));
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, zcx_send(ep, peer, "waited", 7, i + 1));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, pthread_join(threads[i], NULL));
		EXPECT_EQ(0, w[i].ret);
		EXPECT_STREQ("waited", buf + 64 * i);
	}
	zcx_ep_destroy(ep);
	zcx_close(zcx);
	munmap(buf, 4096);
}

/*
 * A child of fork() reads no events through the parent's handle (the
 * status area was not inherited): EIO, as the other calls.
 */
TEST(events_after_fork_are_eio)
{
	struct zcx *zcx = open_lib(_metadata);
	struct drained d = { 0 };
	int status;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(zcx_events_drain(zcx, on_event, &d) == -EIO && !d.n ? 0 : 1);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
		TH_LOG("status %#x (a signal: %d)", status, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	zcx_close(zcx);
}

/*
 * zcx_ep_flush() on a polled endpoint whose CQ fills: the polling thread
 * takes no more until completions are reaped, and no other thread can
 * reap while flush holds the endpoint, so flush must reap them itself
 * (or say -EAGAIN).  Puts, as they complete at once, into an endpoint of
 * our own.
 */
#define FLUSH_DEPTH 4
#define FLUSH_PUTS (3 * FLUSH_DEPTH)

/* Complete the oldest request not yet known complete. */
static void reap_oldest(struct __test_metadata *_metadata, struct zcx_ep *ep,
			struct zcx_req *reqs, int n, int *oldest)
{
	int ret = zcx_test(ep, &reqs[*oldest]);

	ASSERT_LE(0, ret);
	if (ret)
		*oldest += 1;
	ASSERT_GT(n, *oldest) TH_LOG("nothing left to reap, yet still full");
}

TEST(flush_polled_endpoint_with_full_cq)
{
	struct zcx *zcx = open_lib(_metadata);
	struct zcx_req reqs[FLUSH_PUTS] = { 0 };
	unsigned char *src = zcx_test_anon(4096), *dst = zcx_test_anon(4096);
	struct zcx_ep *polled, *target;
	int i, ret, oldest = 0;
	struct zcx_addr addr;
	uint32_t peer;
	uint64_t rkey;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	/* The tests run one at a time: a polling thread is free. */
	ASSERT_EQ(0, zcx_ep_create(zcx, ZCX_EP_POLL, FLUSH_DEPTH, &polled));
	ASSERT_EQ(0, zcx_ep_create(zcx, 0, 0, &target));
	zcx_ep_addr(target, &addr);
	ASSERT_EQ(0, zcx_ep_connect(polled, &addr, &peer));
	ASSERT_EQ(0, zcx_expose(zcx, dst, 4096, ZCX_REMOTE_WRITE, &rkey));
	for (i = 0; i < FLUSH_PUTS; i++) {
		memset(src + i * 64, 0x40 + i, 64);
		while ((ret = zcx_iput(polled, peer, src + i * 64, 64,
				       (uintptr_t)(dst + i * 64), rkey, &reqs[i])) == -EAGAIN)
			reap_oldest(_metadata, polled, reqs, i, &oldest);
		ASSERT_EQ(0, ret);
	}
	while ((ret = zcx_ep_flush(polled)) == -EAGAIN)
		reap_oldest(_metadata, polled, reqs, FLUSH_PUTS, &oldest);
	ASSERT_EQ(0, ret);
	for (i = 0; i < FLUSH_PUTS; i++) {
		ASSERT_EQ(0, zcx_wait(polled, &reqs[i]));
		EXPECT_EQ(64, reqs[i].len);
		EXPECT_EQ(0x40 + i, dst[i * 64]);
		EXPECT_EQ(0x40 + i, dst[i * 64 + 63]);
	}
	EXPECT_EQ(0, dst[FLUSH_PUTS * 64]);
	EXPECT_EQ(0, zcx_unexpose(zcx, rkey));
	zcx_ep_destroy(polled);
	zcx_ep_destroy(target);
	zcx_close(zcx);
	munmap(src, 4096);
	munmap(dst, 4096);
}

TEST(mr_threads_share_cache)
{
	struct hammer h = { .zcx = open_lib(_metadata) };
	struct zcx_mr_stats st;
	pthread_t threads[4];
	int i;

	h.buf = zcx_test_anon(16 * 4096);
	ASSERT_NE(NULL, h.buf);
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, pthread_create(&threads[i], NULL, hammer_thread, &h));
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, pthread_join(threads[i], NULL));
	EXPECT_EQ(0, h.errors);
	ASSERT_EQ(0, zcx_mr_stats(h.zcx, &st));
	EXPECT_EQ(80000, st.lib_hits + st.kernel_hits + st.misses);
	EXPECT_LE(16, st.misses);
	/* Racing misses of one range may each pin; the library keeps one. */
	EXPECT_LE(16, st.kernel.regions);
	zcx_close(h.zcx);
	munmap(h.buf, 16 * 4096);
}

struct cookie_seen {
	__u64 cookie;
	unsigned int n;
};

static void on_monitor_event(void *arg, const struct zcx_event *ev)
{
	struct cookie_seen *seen = arg;

	seen->cookie = ev->cookie;
	seen->n++;
}

TEST(monitor_api)
{
	struct zcx *zcx = open_lib(_metadata);
	struct cookie_seen seen = { 0 };
	struct zcx_monitor *mon;
	struct zcx_mr_stats st;
	char *buf = zcx_test_anon(4 * 4096);

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, zcx_monitor_add(zcx, buf, 4 * 4096, 42, &mon));
	EXPECT_TRUE(zcx_monitor_valid(zcx, mon));
	ASSERT_EQ(0, zcx_mr_stats(zcx, &st));
	EXPECT_EQ(0, st.kernel.pinned_pages);
	ASSERT_EQ(0, munmap(buf, 4096));
	EXPECT_FALSE(zcx_monitor_valid(zcx, mon));
	EXPECT_EQ(1, zcx_events_drain(zcx, on_monitor_event, &seen));
	EXPECT_EQ(42, seen.cookie);
	EXPECT_EQ(0, zcx_monitor_del(zcx, mon));
	EXPECT_EQ(-EINVAL, zcx_monitor_add(zcx, buf, 0, 1, &mon));
	EXPECT_EQ(NULL, mon);
	zcx_close(zcx);
	munmap(buf + 4096, 3 * 4096);
}

/* Closing with registrations still held frees them (ASan checks). */
TEST(close_with_registrations)
{
	struct zcx_test_census before = zcx_test_census(), after;
	struct zcx *zcx = open_lib(_metadata);
	char *buf = zcx_test_anon(8 * 4096);
	struct zcx_mr *mr;
	int i;

	ASSERT_NE(NULL, buf);
	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, zcx_mr_reg(zcx, buf + i * 4096, 4096, ZCX_ACCESS_ALL, &mr));
	/* One of them stale and held. */
	ASSERT_EQ(0, munmap(buf, 4096));
	ASSERT_EQ(0, zcx_mr_reg(zcx, buf + 4096, 4096, ZCX_ACCESS_ALL, &mr));
	zcx_close(zcx);
	after = zcx_test_census();
	EXPECT_EQ(before.contexts, after.contexts);
	EXPECT_EQ(before.regions, after.regions);
	EXPECT_EQ(before.pinned_pages, after.pinned_pages);
	munmap(buf + 4096, 7 * 4096);
}

ZCX_TEST_HARNESS_MAIN
