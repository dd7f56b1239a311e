// SPDX-License-Identifier: GPL-2.0-only
/*
 * zcx_mr_test - the registration cache without invalidation: misses and
 * hits, covering and access rules, bad inputs (which change nothing),
 * limits with LRU eviction, RLIMIT_MEMLOCK, slot and generation reuse,
 * the status area's mapping rules.  After every test the module-wide
 * counters are back where they were.
 */
#include <sys/resource.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "zcx_test.h"

#define MiB (1024 * 1024)

FIXTURE(mr) {
	struct zcx_test_ctx t;
	struct zcx_test_census before;
	long page;
};

FIXTURE_SETUP(mr)
{
	self->before = zcx_test_census();
	ASSERT_LE(0, self->before.regions);
	ASSERT_EQ(0, zcx_test_ctx_open(&self->t));
	self->page = sysconf(_SC_PAGESIZE);
}

FIXTURE_TEARDOWN(mr)
{
	const char *leaked;

	zcx_test_ctx_close(&self->t);
	leaked = zcx_test_census_diff(&self->before);
	EXPECT_EQ(NULL, leaked) TH_LOG("%s not back where the test began", leaked);
}

TEST_F(mr, feature_and_layout)
{
	struct zcx_query q = { 0 };

	ASSERT_EQ(0, zcx_test_ioctl(self->t.fd, ZCX_IOC_QUERY, &q));
	EXPECT_TRUE(q.features & ZCX_FEATURE_MR_CACHE);
	EXPECT_EQ(ZCX_ABI_VERSION, self->t.status->abi_version);
	EXPECT_EQ(q.cache_entries, self->t.status->gen_count);
	EXPECT_EQ(0, self->t.status->event_count & (self->t.status->event_count - 1));
	EXPECT_LE(self->t.status->event_offset + self->t.status->event_count * sizeof(struct zcx_event),
		  self->t.status->size);
	EXPECT_EQ(0, zcx_test_counter(&self->t, regions));
}

TEST_F(mr, miss_then_hit)
{
	struct zcx_mr_reg a, b;
	char *buf = zcx_test_anon(MiB);

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, MiB, ZCX_ACCESS_ALL, &a));
	EXPECT_EQ(ZCX_MR_MISS, a.result);
	EXPECT_EQ((uintptr_t)buf, a.region_start);
	EXPECT_EQ(MiB, a.region_length);
	EXPECT_EQ(0, a.gen & 1);
	EXPECT_EQ(a.slot, ZCX_HANDLE_SLOT(a.handle));
	EXPECT_EQ(a.gen, ZCX_HANDLE_GEN(a.handle));
	EXPECT_TRUE(zcx_test_valid(&self->t, &a));
	EXPECT_EQ(1, zcx_test_counter(&self->t, misses));
	EXPECT_EQ(MiB / self->page, zcx_test_counter(&self->t, pinned_pages));
	EXPECT_EQ(self->before.pinned_pages + MiB / self->page, zcx_test_stat("pinned_pages"));

	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, MiB, ZCX_ACCESS_ALL, &b));
	EXPECT_EQ(ZCX_MR_HIT, b.result);
	EXPECT_EQ(a.handle, b.handle);
	EXPECT_EQ(1, zcx_test_counter(&self->t, hits));
	EXPECT_EQ(1, zcx_test_counter(&self->t, regions));

	/* Unused, it stays cached: the next registration is still a hit. */
	EXPECT_EQ(0, zcx_test_dereg(&self->t, a.handle));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, b.handle));
	EXPECT_EQ(-ENOENT, zcx_test_dereg(&self->t, a.handle));
	EXPECT_TRUE(zcx_test_valid(&self->t, &a));
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, MiB, ZCX_ACCESS_ALL, &b));
	EXPECT_EQ(ZCX_MR_HIT, b.result);
	EXPECT_EQ(0, zcx_test_dereg(&self->t, b.handle));

	EXPECT_EQ(1, zcx_test_flush(&self->t));
	EXPECT_FALSE(zcx_test_valid(&self->t, &a));
	EXPECT_EQ(0, zcx_test_counter(&self->t, pinned_pages));
	EXPECT_EQ(0, zcx_test_counter(&self->t, regions));
	EXPECT_EQ(1, zcx_test_counter(&self->t, evictions));
	munmap(buf, MiB);
}

TEST_F(mr, covering_region_serves_subranges)
{
	struct zcx_mr_reg whole, part;
	char *buf = zcx_test_anon(MiB);

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, MiB, ZCX_ACCESS_ALL, &whole));
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf + self->page + 7, 1000, ZCX_ACCESS_READ, &part));
	EXPECT_EQ(ZCX_MR_HIT, part.result);
	EXPECT_EQ(whole.handle, part.handle);
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf + MiB - 1, 1, ZCX_ACCESS_WRITE, &part));
	EXPECT_EQ(ZCX_MR_HIT, part.result);
	EXPECT_EQ(0, zcx_test_dereg(&self->t, whole.handle));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, whole.handle));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, whole.handle));
	munmap(buf, MiB);
}

TEST_F(mr, access_must_be_covered)
{
	struct zcx_mr_reg ro, rw, again;
	char *buf = zcx_test_anon(64 * 1024);

	ASSERT_NE(NULL, buf);
	/*
	 * Written first: a read-only pin of never-written anonymous memory
	 * may pin the shared zero page, which the write pin then replaces,
	 * rightly invalidating the read-only region.
	 */
	memset(buf, 1, 64 * 1024);
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, 64 * 1024, ZCX_ACCESS_READ, &ro));
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, 64 * 1024, ZCX_ACCESS_WRITE, &rw));
	EXPECT_EQ(ZCX_MR_MISS, rw.result);
	EXPECT_NE(ro.handle, rw.handle);
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, 4096, ZCX_ACCESS_READ, &again));
	EXPECT_EQ(ZCX_MR_HIT, again.result);
	EXPECT_EQ(0, zcx_test_dereg(&self->t, ro.handle));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, rw.handle));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, again.handle));
	munmap(buf, 64 * 1024);
}

/* A larger request than any cached region pins anew; both stay usable. */
TEST_F(mr, partial_overlap_and_duplicates)
{
	struct zcx_mr_reg a, b, c;
	char *buf = zcx_test_anon(16 * self->page);

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, 8 * self->page, ZCX_ACCESS_ALL, &a));
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf + 4 * self->page, 8 * self->page, ZCX_ACCESS_ALL, &b));
	EXPECT_EQ(ZCX_MR_MISS, b.result);
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf + 4 * self->page, 8 * self->page, ZCX_ACCESS_ALL, &c));
	EXPECT_EQ(b.handle, c.handle);
	EXPECT_EQ(2, zcx_test_counter(&self->t, regions));
	EXPECT_EQ(16, zcx_test_counter(&self->t, pinned_pages) * self->page / 4096 * 4096 / self->page);
	EXPECT_EQ(0, zcx_test_dereg(&self->t, a.handle));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, b.handle));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, c.handle));
	munmap(buf, 16 * self->page);
}

TEST_F(mr, unaligned_ranges)
{
	struct zcx_mr_reg r;
	char *buf = zcx_test_anon(4 * self->page);

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf + 5, 10, ZCX_ACCESS_ALL, &r));
	EXPECT_EQ((uintptr_t)buf, r.region_start);
	EXPECT_EQ(self->page, r.region_length);
	EXPECT_EQ(0, zcx_test_dereg(&self->t, r.handle));
	/* Straddling a page boundary takes both pages. */
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf + self->page - 1, 2, ZCX_ACCESS_ALL, &r));
	EXPECT_EQ((uintptr_t)buf, r.region_start);
	EXPECT_EQ(2 * self->page, r.region_length);
	EXPECT_EQ(0, zcx_test_dereg(&self->t, r.handle));
	munmap(buf, 4 * self->page);
}

TEST_F(mr, bad_inputs_change_nothing)
{
	char *buf = zcx_test_anon(4 * self->page);
	struct zcx_mr_reg r;
	void *none, *ro, *file;
	int fd;

	ASSERT_NE(NULL, buf);
	EXPECT_EQ(-EINVAL, zcx_test_reg(&self->t, buf, 0, ZCX_ACCESS_ALL, &r));
	EXPECT_EQ(-EINVAL, zcx_test_reg(&self->t, buf, 4096, 0, &r));
	EXPECT_EQ(-EINVAL, zcx_test_reg(&self->t, buf, 4096, 4, &r));
	EXPECT_EQ(-EINVAL, zcx_test_reg(&self->t, (void *)(UINTPTR_MAX - 100), 200, ZCX_ACCESS_ALL, &r));
	EXPECT_EQ(-EINVAL, zcx_test_reg(&self->t, (void *)(UINTPTR_MAX - 100), 50, ZCX_ACCESS_ALL, &r));
	EXPECT_EQ(-EFAULT, zcx_test_reg(&self->t, (void *)0xffff888000000000ULL, 4096, ZCX_ACCESS_ALL, &r));
	EXPECT_EQ(-EFAULT, zcx_test_reg(&self->t, NULL, 4096, ZCX_ACCESS_ALL, &r));

	memset(&r, 0, sizeof(r));
	r.addr = (uintptr_t)buf;
	r.length = 4096;
	r.access = ZCX_ACCESS_ALL;
	r.flags = 1;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->t.fd, ZCX_IOC_MR_REG, &r));
	r.flags = 0;
	r.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->t.fd, ZCX_IOC_MR_REG, &r));
	EXPECT_EQ(0, r.handle);

	/* A hole in the middle of the range. */
	ASSERT_EQ(0, munmap(buf + self->page, self->page));
	EXPECT_EQ(-EFAULT, zcx_test_reg(&self->t, buf, 3 * self->page, ZCX_ACCESS_ALL, &r));

	none = mmap(NULL, self->page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, none);
	EXPECT_EQ(-EACCES, zcx_test_reg(&self->t, none, self->page, ZCX_ACCESS_READ, &r));
	ro = mmap(NULL, self->page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	EXPECT_EQ(-EACCES, zcx_test_reg(&self->t, ro, self->page, ZCX_ACCESS_WRITE, &r));
	/* Read-only memory registers for reading. */
	ASSERT_EQ(0, zcx_test_reg(&self->t, ro, self->page, ZCX_ACCESS_READ, &r));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, r.handle));
	EXPECT_EQ(1, zcx_test_flush(&self->t));

	/* A file that is not shmem: this program's own binary. */
	fd = open("/proc/self/exe", O_RDONLY);
	ASSERT_LE(0, fd);
	file = mmap(NULL, self->page, PROT_READ, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, file);
	EXPECT_EQ(-EOPNOTSUPP, zcx_test_reg(&self->t, file, self->page, ZCX_ACCESS_READ, &r));
	munmap(file, self->page);
	close(fd);
	/* Driver memory: the status area itself. */
	EXPECT_EQ(-EOPNOTSUPP, zcx_test_reg(&self->t, self->t.status, self->page,
					    ZCX_ACCESS_READ, &r));

	/* Unknown and foreign handles. */
	EXPECT_EQ(-ENOENT, zcx_test_dereg(&self->t, 0));
	EXPECT_EQ(-ENOENT, zcx_test_dereg(&self->t, ~0ULL));
	EXPECT_EQ(-ENOENT, zcx_test_dereg(&self->t, (2ULL << ZCX_HANDLE_SLOT_BITS) | 5));

	EXPECT_EQ(0, zcx_test_counter(&self->t, regions));
	EXPECT_EQ(0, zcx_test_counter(&self->t, pinned_pages));
	EXPECT_EQ(0, zcx_test_counter(&self->t, misses) - 1);
	munmap(none, self->page);
	munmap(ro, self->page);
	munmap(buf, 4 * self->page);
}

/* A range that cannot be registered leaves the cache as it was. */
TEST_F(mr, bad_range_keeps_cache)
{
	struct zcx_mr_reg keep, r;
	struct zcx_mr_flush f = { .flushed = 7 };
	char *buf = zcx_test_anon(4 * self->page);
	void *file, *none;
	int fd;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, self->page, ZCX_ACCESS_ALL, &keep));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, keep.handle));
	fd = open("/proc/self/exe", O_RDONLY);
	ASSERT_LE(0, fd);
	file = mmap(NULL, self->page, PROT_READ, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, file);
	none = mmap(NULL, self->page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, none);
	ASSERT_EQ(0, zcx_test_limits(&self->t, ZCX_LIMIT_SET_ENTRIES, 1, 0));
	EXPECT_EQ(-EOPNOTSUPP, zcx_test_reg(&self->t, file, self->page, ZCX_ACCESS_READ, &r));
	EXPECT_EQ(-EACCES, zcx_test_reg(&self->t, none, self->page, ZCX_ACCESS_READ, &r));
	ASSERT_EQ(0, munmap(buf + 2 * self->page, self->page));
	EXPECT_EQ(-EFAULT, zcx_test_reg(&self->t, buf + self->page, 3 * self->page,
					ZCX_ACCESS_ALL, &r));
	EXPECT_TRUE(zcx_test_valid(&self->t, &keep));
	EXPECT_EQ(0, zcx_test_counter(&self->t, evictions));
	/* Outputs in the argument are ignored on input. */
	EXPECT_EQ(0, zcx_test_ioctl(self->t.fd, ZCX_IOC_MR_FLUSH, &f));
	EXPECT_EQ(1, f.flushed);
	munmap(file, self->page);
	munmap(none, self->page);
	close(fd);
	munmap(buf, self->page);
	munmap(buf + self->page, self->page);
	munmap(buf + 3 * self->page, self->page);
}

/* A handle of one context means nothing in another. */
TEST_F(mr, handles_are_per_context)
{
	struct zcx_test_ctx other;
	struct zcx_mr_reg r;
	char *buf = zcx_test_anon(self->page);

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, zcx_test_ctx_open(&other));
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, self->page, ZCX_ACCESS_ALL, &r));
	EXPECT_EQ(-ENOENT, zcx_test_dereg(&other, r.handle));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, r.handle));
	zcx_test_ctx_close(&other);
	munmap(buf, self->page);
}

TEST_F(mr, entry_limit_evicts_lru)
{
	struct zcx_mr_reg r[5], again;
	char *buf = zcx_test_anon(8 * self->page);
	int i;

	ASSERT_NE(NULL, buf);
	EXPECT_EQ(-EINVAL, zcx_test_limits(&self->t, ZCX_LIMIT_SET_ENTRIES, 0, 0));
	EXPECT_EQ(-EINVAL, zcx_test_limits(&self->t, ZCX_LIMIT_SET_ENTRIES,
					   self->t.status->gen_count + 1, 0));
	EXPECT_EQ(-EINVAL, zcx_test_limits(&self->t, 4, 0, 0));
	ASSERT_EQ(0, zcx_test_limits(&self->t, ZCX_LIMIT_SET_ENTRIES, 4, 0));

	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, zcx_test_reg(&self->t, buf + i * self->page, self->page,
					  ZCX_ACCESS_ALL, &r[i]));
	/* All four in use: no room for a fifth. */
	EXPECT_EQ(-ENOMEM, zcx_test_reg(&self->t, buf + 4 * self->page, self->page,
					ZCX_ACCESS_ALL, &r[4]));
	for (i = 0; i < 4; i++)
		EXPECT_EQ(0, zcx_test_dereg(&self->t, r[i].handle));
	/* Touch region 0: region 1 is now the least recently used. */
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, self->page, ZCX_ACCESS_ALL, &again));
	EXPECT_EQ(ZCX_MR_HIT, again.result);
	EXPECT_EQ(0, zcx_test_dereg(&self->t, again.handle));

	ASSERT_EQ(0, zcx_test_reg(&self->t, buf + 4 * self->page, self->page, ZCX_ACCESS_ALL, &r[4]));
	EXPECT_EQ(1, zcx_test_counter(&self->t, evictions));
	EXPECT_TRUE(zcx_test_valid(&self->t, &r[0]));
	EXPECT_FALSE(zcx_test_valid(&self->t, &r[1]));
	EXPECT_TRUE(zcx_test_valid(&self->t, &r[2]));
	EXPECT_TRUE(zcx_test_valid(&self->t, &r[3]));
	EXPECT_EQ(4, zcx_test_counter(&self->t, regions));

	/* Lowering the limit evicts at once. */
	EXPECT_EQ(0, zcx_test_dereg(&self->t, r[4].handle));
	ASSERT_EQ(0, zcx_test_limits(&self->t, ZCX_LIMIT_SET_ENTRIES, 2, 0));
	EXPECT_EQ(2, zcx_test_counter(&self->t, regions));
	munmap(buf, 8 * self->page);
}

TEST_F(mr, byte_limit_evicts_lru)
{
	struct zcx_mr_reg a, b, c;
	long long evictions;
	char *buf = zcx_test_anon(MiB);

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, zcx_test_limits(&self->t, ZCX_LIMIT_SET_BYTES, 0, 64 * 1024));
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, 32 * 1024, ZCX_ACCESS_ALL, &a));
	/* Over the byte limit with everything in use. */
	EXPECT_EQ(-ENOMEM, zcx_test_reg(&self->t, buf + 128 * 1024, 48 * 1024, ZCX_ACCESS_ALL, &b));
	EXPECT_EQ(-ENOMEM, zcx_test_reg(&self->t, buf, 128 * 1024, ZCX_ACCESS_ALL, &b));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, a.handle));
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf + 128 * 1024, 48 * 1024, ZCX_ACCESS_ALL, &b));
	EXPECT_FALSE(zcx_test_valid(&self->t, &a));
	EXPECT_EQ(48 * 1024 / self->page, zcx_test_counter(&self->t, pinned_pages));
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf + 256 * 1024, 16 * 1024, ZCX_ACCESS_ALL, &c));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, b.handle));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, c.handle));
	/* More than the limit by itself: refused, and nothing evicted for it. */
	evictions = zcx_test_counter(&self->t, evictions);
	EXPECT_EQ(-ENOMEM, zcx_test_reg(&self->t, buf + 512 * 1024, 128 * 1024, ZCX_ACCESS_ALL, &a));
	EXPECT_TRUE(zcx_test_valid(&self->t, &b));
	EXPECT_TRUE(zcx_test_valid(&self->t, &c));
	EXPECT_EQ(evictions, zcx_test_counter(&self->t, evictions));
	munmap(buf, MiB);
}

/* A reused slot gets a new generation: old handles never match it. */
TEST_F(mr, slot_reuse_is_not_aba)
{
	struct zcx_mr_reg a, b;
	char *buf = zcx_test_anon(2 * self->page);

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, self->page, ZCX_ACCESS_ALL, &a));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, a.handle));
	EXPECT_EQ(1, zcx_test_flush(&self->t));
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf + self->page, self->page, ZCX_ACCESS_ALL, &b));
	EXPECT_EQ(a.slot, b.slot);
	EXPECT_LT(a.gen, b.gen);
	EXPECT_FALSE(zcx_test_valid(&self->t, &a));
	EXPECT_TRUE(zcx_test_valid(&self->t, &b));
	EXPECT_EQ(-ENOENT, zcx_test_dereg(&self->t, a.handle));
	EXPECT_TRUE(zcx_test_valid(&self->t, &b));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, b.handle));
	munmap(buf, 2 * self->page);
}

TEST_F(mr, status_area_is_read_only)
{
	void *p;

	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->t.fd, ZCX_MMAP_STATUS);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EACCES, errno);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->t.fd, 4096);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, self->t.status_size + 4096, PROT_READ, MAP_SHARED, self->t.fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->t.fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-1, mprotect(p, 4096, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	munmap(p, 4096);
}

/* An unprivileged process stays within RLIMIT_MEMLOCK, cache or not. */
static int memlock_child(long page)
{
	struct rlimit lim = { .rlim_cur = 256 * 1024, .rlim_max = 256 * 1024 };
	struct zcx_test_ctx t;
	struct zcx_mr_reg a, b;
	char *buf = zcx_test_anon(MiB);

	if (!buf || setrlimit(RLIMIT_MEMLOCK, &lim) ||
	    (geteuid() == 0 && setuid(65534)))
		return 10;
	if (zcx_test_ctx_open(&t))
		return 11;
	if (zcx_test_reg(&t, buf, 128 * 1024, ZCX_ACCESS_ALL, &a))
		return 12;
	if (zcx_test_reg(&t, buf + 256 * 1024, 192 * 1024, ZCX_ACCESS_ALL, &b) != -ENOMEM)
		return 13;
	if (zcx_test_counter(&t, pinned_pages) != 128 * 1024 / page)
		return 14;
	/* An unused cached region gives way to a new one. */
	if (zcx_test_dereg(&t, a.handle))
		return 15;
	if (zcx_test_reg(&t, buf + 256 * 1024, 192 * 1024, ZCX_ACCESS_ALL, &b))
		return 16;
	if (zcx_test_valid(&t, &a) || zcx_test_counter(&t, pinned_pages) != 192 * 1024 / page)
		return 17;
	zcx_test_ctx_close(&t);
	return 0;
}

TEST_F(mr, memlock_limit)
{
	int status;
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(memlock_child(self->page));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

ZCX_TEST_HARNESS_MAIN
