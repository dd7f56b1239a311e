// SPDX-License-Identifier: GPL-2.0-only
/*
 * zcx_inval_test - every way the memory behind a registration can change
 * makes it stale before the changing call returns, and a registration of
 * the same addresses afterwards pins the new memory: munmap + mmap at the
 * same address, MAP_FIXED over a live mapping, brk shrink, mremap,
 * madvise DONTNEED/FREE/REMOVE, memfd hole punch, shmdt, hugetlbfs, THP.
 * Changes that keep the pages (mprotect, fork's copy-on-write in the
 * parent) do not.
 */
#define _GNU_SOURCE
#include <linux/falloc.h>
#include <sys/shm.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "zcx_test.h"

#define LEN	(256 * 1024)

FIXTURE(inval) {
	struct zcx_test_ctx t;
	struct zcx_test_census before;
	long page;
};

FIXTURE_SETUP(inval)
{
	self->before = zcx_test_census();
	ASSERT_EQ(0, zcx_test_ctx_open(&self->t));
	self->page = sysconf(_SC_PAGESIZE);
}

FIXTURE_TEARDOWN(inval)
{
	const char *leaked;

	zcx_test_ctx_close(&self->t);
	leaked = zcx_test_census_diff(&self->before);
	EXPECT_EQ(NULL, leaked) TH_LOG("%s not back where the test began", leaked);
}

/* The last event in the mapped ring, if it is for @r. */
static bool last_event_is(const struct zcx_test_ctx *t, const struct zcx_mr_reg *r, __u32 cause)
{
	__u64 head = __atomic_load_n(&t->status->counters.events, __ATOMIC_ACQUIRE);
	const struct zcx_event *ev;

	if (!head)
		return false;
	ev = &t->events[(head - 1) & (t->status->event_count - 1)];
	return ev->seq == head - 1 && ev->handle == r->handle && ev->cause == cause &&
	       ev->start == r->region_start && ev->length == r->region_length;
}

/* Register [p, p + len) anew: must pin, not reuse the stale region. */
static bool fresh_miss(const struct zcx_test_ctx *t, void *p, size_t len,
		       const struct zcx_mr_reg *old)
{
	struct zcx_mr_reg r;
	bool ok;

	if (zcx_test_reg(t, p, len, ZCX_ACCESS_ALL, &r))
		return false;
	ok = r.result == ZCX_MR_MISS && r.handle != old->handle && zcx_test_valid(t, &r);
	return !zcx_test_dereg(t, r.handle) && ok;
}

TEST_F(inval, munmap_then_mmap_same_address)
{
	struct zcx_mr_reg r;
	char *buf = zcx_test_anon(LEN), *again;

	ASSERT_NE(NULL, buf);
	memset(buf, 1, LEN);
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, LEN, ZCX_ACCESS_ALL, &r));
	ASSERT_EQ(0, munmap(buf, LEN));
	/* Visible the moment munmap() returned. */
	EXPECT_FALSE(zcx_test_valid(&self->t, &r));
	EXPECT_TRUE(last_event_is(&self->t, &r, ZCX_EVENT_UNMAP));
	EXPECT_EQ(1, zcx_test_counter(&self->t, invalidations));
	again = mmap(buf, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ASSERT_EQ(buf, again);
	EXPECT_TRUE(fresh_miss(&self->t, buf, LEN, &r));
	/* The stale handle is still released normally, once. */
	EXPECT_EQ(0, zcx_test_dereg(&self->t, r.handle));
	EXPECT_EQ(-ENOENT, zcx_test_dereg(&self->t, r.handle));
	munmap(buf, LEN);
}

TEST_F(inval, map_fixed_over_live_mapping)
{
	struct zcx_mr_reg r;
	char *buf = zcx_test_anon(LEN), *again;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, LEN, ZCX_ACCESS_ALL, &r));
	again = mmap(buf + self->page, self->page, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ASSERT_EQ(buf + self->page, again);
	EXPECT_FALSE(zcx_test_valid(&self->t, &r));
	EXPECT_TRUE(fresh_miss(&self->t, buf, LEN, &r));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, r.handle));
	munmap(buf, LEN);
}

/* Only regions overlapping the change go stale. */
TEST_F(inval, only_overlapping_regions)
{
	struct zcx_mr_reg a, b, c;
	char *buf = zcx_test_anon(16 * self->page);

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, 8 * self->page, ZCX_ACCESS_ALL, &a));
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf + 6 * self->page, 4 * self->page, ZCX_ACCESS_ALL, &b));
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf + 12 * self->page, 4 * self->page, ZCX_ACCESS_ALL, &c));
	ASSERT_EQ(0, munmap(buf + 7 * self->page, self->page));
	EXPECT_FALSE(zcx_test_valid(&self->t, &a));
	EXPECT_FALSE(zcx_test_valid(&self->t, &b));
	EXPECT_TRUE(zcx_test_valid(&self->t, &c));
	EXPECT_EQ(2, zcx_test_counter(&self->t, invalidations));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, a.handle));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, b.handle));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, c.handle));
	munmap(buf, 16 * self->page);
}

TEST_F(inval, brk_shrink)
{
	struct zcx_mr_reg r;
	char *top = sbrk(0), *grown;

	ASSERT_NE((void *)-1, top);
	/* Start on a page boundary so the region is exactly the growth. */
	ASSERT_NE((void *)-1, sbrk(self->page - ((uintptr_t)top & (self->page - 1))));
	grown = sbrk(LEN);
	ASSERT_NE((void *)-1, grown);
	memset(grown, 2, LEN);
	ASSERT_EQ(0, zcx_test_reg(&self->t, grown, LEN, ZCX_ACCESS_ALL, &r));
	ASSERT_NE((void *)-1, sbrk(-(LEN / 2)));
	EXPECT_FALSE(zcx_test_valid(&self->t, &r));
	EXPECT_TRUE(last_event_is(&self->t, &r, ZCX_EVENT_UNMAP));
	ASSERT_NE((void *)-1, sbrk(LEN / 2));
	EXPECT_TRUE(fresh_miss(&self->t, grown, LEN, &r));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, r.handle));
	ASSERT_EQ(0, brk(top));
}

TEST_F(inval, mremap_move)
{
	struct zcx_mr_reg r;
	char *buf = zcx_test_anon(2 * LEN), *moved;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, munmap(buf + LEN, LEN));
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, LEN, ZCX_ACCESS_ALL, &r));
	/* Move it elsewhere: the old addresses lose their pages. */
	moved = mmap(NULL, LEN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, moved);
	ASSERT_EQ(moved, mremap(buf, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED, moved));
	EXPECT_FALSE(zcx_test_valid(&self->t, &r));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, r.handle));
	munmap(moved, LEN);
}

TEST_F(inval, mremap_shrink)
{
	struct zcx_mr_reg whole, head;
	char *buf = zcx_test_anon(LEN);

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, LEN, ZCX_ACCESS_ALL, &whole));
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, LEN / 4, ZCX_ACCESS_ALL, &head));
	ASSERT_EQ(buf, mremap(buf, LEN, LEN / 2, 0));
	EXPECT_FALSE(zcx_test_valid(&self->t, &whole));
	/* head was served by whole; registering it again pins anew. */
	EXPECT_EQ(whole.handle, head.handle);
	EXPECT_TRUE(fresh_miss(&self->t, buf, LEN / 4, &whole));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, whole.handle));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, head.handle));
	munmap(buf, LEN / 2);
}

/* Growing keeps the old pages; whatever the kernel does, no stale hit. */
TEST_F(inval, mremap_grow)
{
	struct zcx_mr_reg r, again, big;
	char *buf = zcx_test_anon(LEN), *grown;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, LEN, ZCX_ACCESS_ALL, &r));
	grown = mremap(buf, LEN, 4 * LEN, MREMAP_MAYMOVE);
	ASSERT_NE(MAP_FAILED, grown);
	/* The old range again, where it is now: a hit only on the same pages. */
	ASSERT_EQ(0, zcx_test_reg(&self->t, grown, LEN, ZCX_ACCESS_ALL, &again));
	if (grown != buf) {
		EXPECT_FALSE(zcx_test_valid(&self->t, &r));
		EXPECT_EQ(ZCX_MR_MISS, again.result);
	} else if (again.result == ZCX_MR_HIT) {
		EXPECT_TRUE(zcx_test_valid(&self->t, &r));
		EXPECT_EQ(r.handle, again.handle);
	}
	ASSERT_EQ(0, zcx_test_reg(&self->t, grown, 4 * LEN, ZCX_ACCESS_ALL, &big));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, big.handle));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, again.handle));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, r.handle));
	munmap(grown, 4 * LEN);
}

static void madvise_case(struct __test_metadata *_metadata, FIXTURE_DATA(inval) *self,
			 int advice)
{
	struct zcx_mr_reg r;
	char *buf = zcx_test_anon(LEN);

	ASSERT_NE(NULL, buf);
	memset(buf, 3, LEN);
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, LEN, ZCX_ACCESS_ALL, &r));
	/* Part of the region only. */
	ASSERT_EQ(0, madvise(buf + 4 * self->page, 2 * self->page, advice));
	EXPECT_FALSE(zcx_test_valid(&self->t, &r));
	EXPECT_TRUE(last_event_is(&self->t, &r, ZCX_EVENT_CLEAR));
	EXPECT_TRUE(fresh_miss(&self->t, buf, LEN, &r));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, r.handle));
	munmap(buf, LEN);
}

TEST_F(inval, madvise_dontneed)
{
	madvise_case(_metadata, self, MADV_DONTNEED);
}

TEST_F(inval, madvise_free)
{
	madvise_case(_metadata, self, MADV_FREE);
}

TEST_F(inval, madvise_remove_shared)
{
	struct zcx_mr_reg r;
	char *buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	ASSERT_NE(MAP_FAILED, buf);
	memset(buf, 4, LEN);
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, LEN, ZCX_ACCESS_ALL, &r));
	ASSERT_EQ(0, madvise(buf, self->page, MADV_REMOVE));
	EXPECT_FALSE(zcx_test_valid(&self->t, &r));
	EXPECT_TRUE(fresh_miss(&self->t, buf, LEN, &r));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, r.handle));
	munmap(buf, LEN);
}

TEST_F(inval, memfd_hole_punch)
{
	struct zcx_mr_reg r;
	int fd = memfd_create("zcx-test", 0);
	char *buf;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, LEN));
	buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, buf);
	memset(buf, 5, LEN);
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, LEN, ZCX_ACCESS_ALL, &r));
	ASSERT_EQ(0, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       2 * self->page, self->page));
	EXPECT_FALSE(zcx_test_valid(&self->t, &r));
	EXPECT_TRUE(fresh_miss(&self->t, buf, LEN, &r));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, r.handle));
	munmap(buf, LEN);
	close(fd);
}

TEST_F(inval, shm_detach)
{
	struct zcx_mr_reg r;
	int id = shmget(IPC_PRIVATE, LEN, IPC_CREAT | 0600);
	char *buf;

	ASSERT_LE(0, id);
	buf = shmat(id, NULL, 0);
	ASSERT_NE((void *)-1, buf);
	shmctl(id, IPC_RMID, NULL);
	memset(buf, 6, LEN);
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, LEN, ZCX_ACCESS_ALL, &r));
	ASSERT_EQ(0, shmdt(buf));
	EXPECT_FALSE(zcx_test_valid(&self->t, &r));
	EXPECT_TRUE(last_event_is(&self->t, &r, ZCX_EVENT_UNMAP));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, r.handle));
}

TEST_F(inval, hugetlb)
{
	struct zcx_mr_reg r;
	size_t len = 2 * 1024 * 1024;
	char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);

	if (buf == MAP_FAILED)
		SKIP(return, "no huge pages reserved (vm.nr_hugepages)");
	memset(buf, 7, len);
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf + 4096, 8192, ZCX_ACCESS_ALL, &r));
	ASSERT_EQ(0, munmap(buf, len));
	EXPECT_FALSE(zcx_test_valid(&self->t, &r));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, r.handle));
}

/* AnonHugePages of the mapping holding @addr, in KiB (-1: not found). */
static long anon_huge_kib(const void *addr)
{
	unsigned long start, end;
	char line[256];
	long kib = -1;
	bool in = false;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2)
			in = (uintptr_t)addr >= start && (uintptr_t)addr < end;
		else if (in && sscanf(line, "AnonHugePages: %ld kB", &kib) == 1)
			break;
	}
	fclose(f);
	return kib;
}

/* Splitting a transparent huge page under a region: stale, never wrong. */
TEST_F(inval, thp_split)
{
	size_t len = 4 * 1024 * 1024;
	struct zcx_mr_reg r;
	char *raw = zcx_test_anon(len), *buf;

	ASSERT_NE(NULL, raw);
	buf = (char *)(((uintptr_t)raw + len / 2 - 1) & ~(uintptr_t)(len / 2 - 1));
	ASSERT_EQ(0, madvise(buf, 2 * 1024 * 1024, MADV_HUGEPAGE));
	memset(buf, 8, 2 * 1024 * 1024);
	if (anon_huge_kib(buf) < 2048) {
		munmap(raw, len);
		SKIP(return, "no transparent huge page under the buffer (THP off?)");
	}
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, 2 * 1024 * 1024, ZCX_ACCESS_ALL, &r));
	/* Unmapping one small page splits the huge one. */
	ASSERT_EQ(0, munmap(buf + self->page, self->page));
	EXPECT_FALSE(zcx_test_valid(&self->t, &r));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, r.handle));
	munmap(raw, len);
}

/* mprotect keeps the pages: the region stays valid. */
TEST_F(inval, mprotect_keeps_region)
{
	struct zcx_mr_reg r;
	char *buf = zcx_test_anon(LEN);

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, LEN, ZCX_ACCESS_ALL, &r));
	ASSERT_EQ(0, mprotect(buf, LEN, PROT_READ));
	ASSERT_EQ(0, mprotect(buf, LEN, PROT_READ | PROT_WRITE));
	EXPECT_TRUE(zcx_test_valid(&self->t, &r));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, r.handle));
	munmap(buf, LEN);
}

/*
 * fork() write-protects the parent's memory for copy-on-write, but pinned
 * pages stay with the parent (the child gets copies): the parent's
 * registration stays valid while both write; the child's inherited
 * descriptor fails with EIO and the status area is not in the child.
 */
TEST_F(inval, fork_parent_keeps_region)
{
	struct zcx_mr_reg r;
	char *buf = zcx_test_anon(LEN);
	int status;
	pid_t pid;

	ASSERT_NE(NULL, buf);
	memset(buf, 9, LEN);
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, LEN, ZCX_ACCESS_ALL, &r));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct zcx_mr_reg c;

		memset(buf, 10, LEN);
		if (zcx_test_reg(&self->t, buf, LEN, ZCX_ACCESS_ALL, &c) != -EIO)
			_exit(1);
		if (zcx_test_dereg(&self->t, r.handle) != -EIO)
			_exit(2);
		/* VM_DONTCOPY: the status area is not mapped here. */
		if (msync((void *)self->t.status, 4096, MS_ASYNC) != -1 || errno != ENOMEM)
			_exit(3);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	memset(buf, 11, LEN);
	EXPECT_TRUE(zcx_test_valid(&self->t, &r));
	EXPECT_EQ(0, zcx_test_dereg(&self->t, r.handle));
	munmap(buf, LEN);
}

ZCX_TEST_HARNESS_MAIN
