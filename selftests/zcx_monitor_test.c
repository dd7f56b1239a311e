// SPDX-License-Identifier: GPL-2.0-only
/*
 * zcx_monitor_test - monitors watch a range without pinning it: stale on
 * the same changes as a region, with the caller's cookie in the event;
 * any memory can be watched; never a registration hit, never evicted or
 * flushed; removed by ZCX_IOC_MR_DEREG without an event.
 */
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "zcx_test.h"

#define LEN	(64 * 1024)

FIXTURE(mon) {
	struct zcx_test_ctx t;
	struct zcx_test_census before;
	long page;
};

FIXTURE_SETUP(mon)
{
	self->before = zcx_test_census();
	ASSERT_EQ(0, zcx_test_ctx_open(&self->t));
	self->page = sysconf(_SC_PAGESIZE);
}

FIXTURE_TEARDOWN(mon)
{
	const char *leaked;

	zcx_test_ctx_close(&self->t);
	leaked = zcx_test_census_diff(&self->before);
	EXPECT_EQ(NULL, leaked) TH_LOG("%s not back where the test began", leaked);
}

static int mon_add(const struct zcx_test_ctx *t, const void *addr, size_t len, __u64 cookie,
		   struct zcx_mon_add *out)
{
	memset(out, 0, sizeof(*out));
	out->addr = (uintptr_t)addr;
	out->length = len;
	out->cookie = cookie;
	return zcx_test_ioctl(t->fd, ZCX_IOC_MON_ADD, out);
}

static bool mon_valid(const struct zcx_test_ctx *t, const struct zcx_mon_add *m)
{
	return __atomic_load_n(&t->gens[m->slot], __ATOMIC_ACQUIRE) == m->gen;
}

TEST_F(mon, stale_on_unmap_with_cookie)
{
	struct zcx_mon_add m;
	struct zcx_event ev;
	struct zcx_query q = { 0 };
	char *buf = zcx_test_anon(LEN);

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, zcx_test_ioctl(self->t.fd, ZCX_IOC_QUERY, &q));
	EXPECT_TRUE(q.features & ZCX_FEATURE_MONITOR);
	ASSERT_EQ(0, mon_add(&self->t, buf + 10, LEN - 20, 0xc00c1e, &m));
	EXPECT_TRUE(mon_valid(&self->t, &m));
	/* Nothing pinned, one entry used. */
	EXPECT_EQ(0, zcx_test_counter(&self->t, pinned_pages));
	EXPECT_EQ(1, zcx_test_counter(&self->t, regions));
	ASSERT_EQ(0, munmap(buf + self->page, self->page));
	EXPECT_FALSE(mon_valid(&self->t, &m));
	ASSERT_EQ(sizeof(ev), read(self->t.fd, &ev, sizeof(ev)));
	EXPECT_EQ(0xc00c1e, ev.cookie);
	EXPECT_EQ(m.handle, ev.handle);
	EXPECT_EQ(ZCX_EVENT_UNMAP, ev.cause);
	EXPECT_EQ((uintptr_t)buf, ev.start);
	EXPECT_EQ(LEN, ev.length);
	/* Stale, it stays until removed. */
	EXPECT_EQ(1, zcx_test_counter(&self->t, regions));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, m.handle));
	EXPECT_EQ(-ENOENT, zcx_test_dereg(&self->t, m.handle));
	munmap(buf, LEN);
}

TEST_F(mon, madvise_and_any_memory)
{
	struct zcx_mon_add anon, file;
	char *buf = zcx_test_anon(LEN);
	void *map;
	int fd;

	ASSERT_NE(NULL, buf);
	memset(buf, 1, LEN);
	ASSERT_EQ(0, mon_add(&self->t, buf, LEN, 1, &anon));
	ASSERT_EQ(0, madvise(buf, self->page, MADV_DONTNEED));
	EXPECT_FALSE(mon_valid(&self->t, &anon));
	/* A file mapping cannot be registered, but it can be watched. */
	fd = open("/proc/self/exe", O_RDONLY);
	ASSERT_LE(0, fd);
	map = mmap(NULL, self->page, PROT_READ, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, mon_add(&self->t, map, self->page, 2, &file));
	EXPECT_TRUE(mon_valid(&self->t, &file));
	ASSERT_EQ(0, munmap(map, self->page));
	EXPECT_FALSE(mon_valid(&self->t, &file));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, anon.handle));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, file.handle));
	close(fd);
	munmap(buf, LEN);
}

TEST_F(mon, not_a_registration)
{
	struct zcx_mon_add m;
	struct zcx_mr_reg r;
	struct zcx_event ev;
	char *buf = zcx_test_anon(LEN);

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, mon_add(&self->t, buf, LEN, 3, &m));
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, LEN, ZCX_ACCESS_ALL, &r));
	EXPECT_EQ(ZCX_MR_MISS, r.result);
	EXPECT_NE(m.slot, r.slot);
	EXPECT_EQ(0, zcx_test_dereg(&self->t, r.handle));
	/* A flush drops the cached region, not the monitor. */
	EXPECT_EQ(1, zcx_test_flush(&self->t));
	EXPECT_TRUE(mon_valid(&self->t, &m));
	/* Removing a monitor is not an event. */
	EXPECT_EQ(0, zcx_test_dereg(&self->t, m.handle));
	ASSERT_EQ(0, fcntl(self->t.fd, F_SETFL, O_NONBLOCK));
	EXPECT_EQ(-1, read(self->t.fd, &ev, sizeof(ev)));
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(0, zcx_test_counter(&self->t, regions));
	munmap(buf, LEN);
}

TEST_F(mon, entry_limit_and_bad_input)
{
	struct zcx_mon_add m[3];
	char *buf = zcx_test_anon(LEN);

	ASSERT_NE(NULL, buf);
	EXPECT_EQ(-EINVAL, mon_add(&self->t, buf, 0, 0, &m[0]));
	EXPECT_EQ(-EINVAL, mon_add(&self->t, (void *)(UINTPTR_MAX - 10), 100, 0, &m[0]));
	EXPECT_EQ(-EFAULT, mon_add(&self->t, (void *)0xffff888000000000ULL, 4096, 0, &m[0]));
	memset(&m[0], 0, sizeof(m[0]));
	m[0].addr = (uintptr_t)buf;
	m[0].length = LEN;
	m[0].flags = 1;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->t.fd, ZCX_IOC_MON_ADD, &m[0]));
	m[0].flags = 0;
	m[0].reserved[0] = 1;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->t.fd, ZCX_IOC_MON_ADD, &m[0]));

	/* Monitors are never evicted: the third finds no room. */
	ASSERT_EQ(0, zcx_test_limits(&self->t, ZCX_LIMIT_SET_ENTRIES, 2, 0));
	ASSERT_EQ(0, mon_add(&self->t, buf, LEN, 0, &m[0]));
	ASSERT_EQ(0, mon_add(&self->t, buf, LEN, 0, &m[1]));
	EXPECT_EQ(-ENOMEM, mon_add(&self->t, buf, LEN, 0, &m[2]));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, m[0].handle));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, m[1].handle));
	EXPECT_EQ(0, zcx_test_counter(&self->t, regions));
	munmap(buf, LEN);
}

/*
 * fork() write-protects the parent's pages; that alone changes nothing.
 * Unlike a pinned region's, a watched page is shared with the child
 * until someone writes: the parent's write copies it, and the monitor
 * says so.
 */
TEST_F(mon, fork_then_parent_write)
{
	struct zcx_mon_add m;
	char *buf = zcx_test_anon(LEN);
	int pipefd[2], status;
	char go = 0;
	pid_t pid;

	ASSERT_NE(NULL, buf);
	memset(buf, 1, LEN);
	ASSERT_EQ(0, mon_add(&self->t, buf, LEN, 4, &m));
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		/* Hold the shared pages until the parent has written. */
		close(pipefd[1]);
		_exit(read(pipefd[0], &go, 1) == 1 ? 0 : 1);
	}
	close(pipefd[0]);
	EXPECT_TRUE(mon_valid(&self->t, &m));
	memset(buf, 3, LEN);
	EXPECT_FALSE(mon_valid(&self->t, &m));
	ASSERT_EQ(1, write(pipefd[1], &go, 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	close(pipefd[1]);
	EXPECT_EQ(0, zcx_test_dereg(&self->t, m.handle));
	munmap(buf, LEN);
}

ZCX_TEST_HARNESS_MAIN
