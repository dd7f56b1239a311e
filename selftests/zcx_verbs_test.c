// SPDX-License-Identifier: GPL-2.0-only
/*
 * zcx_verbs_test - libzcx-verbs on Soft-RoCE: an RDMA WRITE posted with the
 * MR that zcx_verbs_reg() returns delivers the bytes the application sees
 * at that address now, whatever happened to the memory since an earlier
 * registration (munmap + mmap, madvise, mremap, brk, shmdt + shmat, fork,
 * remapping by another thread).  The NIC (rxe) reads through the pages the
 * MR pinned, so a stale MR shows up as old bytes at the destination.
 * Also: hits without registering again, and the cache's limits; and,
 * with hooks standing in for a device, a registration refused for room
 * and two threads registering one range at once.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "zcx.h"
#include "zcx_test.h"
#include "zcx_verbs.h"
#include "verbs_loop.h"

#define KiB		1024UL
#define MiB		(1024 * KiB)
#define DEST_LEN	(16 * MiB)	/* the largest WRITE of any test */
#define POISON		0xa5
/* A WRITE source needs local read only; LOCAL_WRITE is what runtimes ask. */
#define SRC_ACCESS	IBV_ACCESS_LOCAL_WRITE
/* The guest is emulated: pinning and copying megabytes is slow there. */
#define SLOW_TIMEOUT	180

FIXTURE(verbs) {
	struct zcx_test_census before;
	struct zcx *zcx;
	struct verbs_loop loop;
	char *dest;
	struct ibv_mr *dest_mr;
	struct zcx_verbs_cache *cache;
	long page;
};

FIXTURE_SETUP(verbs)
{
	int ret;

	self->before = zcx_test_census();
	ASSERT_LE(0, self->before.regions);
	self->page = sysconf(_SC_PAGESIZE);
	ret = verbs_loop_open(&self->loop);
	if (ret == -ENODEV)
		SKIP(return, "no RDMA device (modprobe rdma_rxe; rdma link add rxe0 type rxe netdev lo)");
	ASSERT_EQ(0, ret) TH_LOG("loopback QPs: %s", strerror(-ret));
	/* A 16 MiB WRITE took over 10 s on the debug kernel beside the other lane. */
	self->loop.timeout_ns *= zcx_test_slowdown();
	ASSERT_EQ(0, zcx_open(&self->zcx, 0));
	self->dest = zcx_test_anon(DEST_LEN);
	ASSERT_NE(NULL, self->dest);
	/* The target of every WRITE, plain verbs: only the source is cached. */
	self->dest_mr = ibv_reg_mr(self->loop.pd, self->dest, DEST_LEN,
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	ASSERT_NE(NULL, self->dest_mr);
	ASSERT_EQ(0, zcx_verbs_cache_create(self->zcx, self->loop.pd, NULL, &self->cache));
}

FIXTURE_TEARDOWN(verbs)
{
	const char *leaked;

	zcx_verbs_cache_destroy(self->cache);
	if (self->dest_mr)
		EXPECT_EQ(0, ibv_dereg_mr(self->dest_mr));
	verbs_loop_close(&self->loop);
	zcx_close(self->zcx);
	if (self->dest)
		munmap(self->dest, DEST_LEN);
	leaked = zcx_test_census_diff(&self->before);
	EXPECT_EQ(NULL, leaked) TH_LOG("%s not back where the test began", leaked);
}

/* Bytes that differ from one seed to another almost everywhere. */
static void fill_pattern(void *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
	unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i += sizeof(x)) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + i, &x, len - i < sizeof(x) ? len - i : sizeof(x));
	}
}

/*
 * WRITE [src, src + len) with @mr into the destination (poisoned first, so
 * a WRITE that moves nothing is caught): true if the destination then
 * holds what the CPU sees at @src now; else logs the first difference.
 */
static bool delivers(struct __test_metadata *_metadata, FIXTURE_DATA(verbs) *self,
		     const void *src, size_t len, const struct ibv_mr *mr)
{
	const unsigned char *want = src, *got = (unsigned char *)self->dest;
	size_t i = 0;
	int ret;

	memset(self->dest, POISON, len);
	ret = verbs_loop_write(&self->loop, src, len, mr->lkey, self->dest, self->dest_mr->rkey);
	if (ret) {
		TH_LOG("WRITE of %zu bytes from %p: %s (%s)", len, src, strerror(-ret),
		       ibv_wc_status_str(self->loop.last_status));
		return false;
	}
	if (!memcmp(got, want, len))
		return true;
	while (got[i] == want[i])
		i++;
	TH_LOG("WRITE of %zu bytes from %p: byte %zu is 0x%02x, memory has 0x%02x",
	       len, src, i, got[i], want[i]);
	return false;
}

#define DELIVERS(src, len, mr) delivers(_metadata, self, (src), (len), (mr))

/* Register through @cache, WRITE, check, release: the central property. */
static void reg_delivers(struct __test_metadata *_metadata, FIXTURE_DATA(verbs) *self,
			 struct zcx_verbs_cache *cache, char *buf, size_t len)
{
	struct ibv_mr *mr;

	ASSERT_EQ(0, zcx_verbs_reg(cache, buf, len, SRC_ACCESS, &mr));
	EXPECT_TRUE(DELIVERS(buf, len, mr));
	EXPECT_EQ(0, zcx_verbs_dereg(cache, mr));
}

static struct zcx_verbs_stats stats_of(struct __test_metadata *_metadata,
				       struct zcx_verbs_cache *cache)
{
	struct zcx_verbs_stats st;

	memset(&st, 0xff, sizeof(st));
	EXPECT_EQ(0, zcx_verbs_stats(cache, &st));
	return st;
}

/*
 * The common shape of the "same address, new memory" tests: pattern A is
 * registered and delivered, the MR released; change_memory() puts other
 * memory at the address; the next registration must be a new MR (one
 * stale entry replaced) whose WRITE delivers the memory's bytes now.
 */
typedef void (*change_fn)(struct __test_metadata *_metadata, char *buf, size_t len);

static void reg_change_reg(struct __test_metadata *_metadata, FIXTURE_DATA(verbs) *self,
			   char *buf, size_t len, change_fn change_memory)
{
	struct ibv_mr *old_mr, *new_mr;
	struct zcx_verbs_stats st;
	uint32_t old_lkey;

	fill_pattern(buf, len, 0xA);
	ASSERT_EQ(0, zcx_verbs_reg(self->cache, buf, len, SRC_ACCESS, &old_mr));
	EXPECT_TRUE(DELIVERS(buf, len, old_mr));
	old_lkey = old_mr->lkey;
	/* Released but still cached: the stale entry is found on lookup. */
	ASSERT_EQ(0, zcx_verbs_dereg(self->cache, old_mr));

	change_memory(_metadata, buf, len);	/* an ASSERT there ends the test */
	ASSERT_EQ(0, zcx_verbs_reg(self->cache, buf, len, SRC_ACCESS, &new_mr));
	/* The old MR may be freed by now: compare keys, not pointers. */
	EXPECT_NE(old_lkey, new_mr->lkey);
	st = stats_of(_metadata, self->cache);
	EXPECT_EQ(1, st.stale);
	EXPECT_EQ(2, st.misses);
	EXPECT_EQ(0, st.hits);
	EXPECT_TRUE(DELIVERS(buf, len, new_mr));
	EXPECT_EQ(0, zcx_verbs_dereg(self->cache, new_mr));
}

TEST_F(verbs, hit_without_syscall)
{
	size_t len = 256 * KiB;
	char *buf = zcx_test_anon(len);
	struct ibv_mr *first, *second;
	struct zcx_verbs_stats st;

	ASSERT_NE(NULL, buf);
	fill_pattern(buf, len, 1);
	ASSERT_EQ(0, zcx_verbs_reg(self->cache, buf, len, SRC_ACCESS, &first));
	ASSERT_EQ(0, zcx_verbs_reg(self->cache, buf, len, SRC_ACCESS, &second));
	EXPECT_EQ(first, second);
	st = stats_of(_metadata, self->cache);
	EXPECT_EQ(1, st.hits);
	EXPECT_EQ(1, st.misses);
	EXPECT_EQ(1, st.entries);
	EXPECT_LE(len, st.bytes);
	EXPECT_EQ(0, st.stale);
	EXPECT_TRUE(DELIVERS(buf, len, second));
	EXPECT_EQ(0, zcx_verbs_dereg(self->cache, first));
	EXPECT_EQ(0, zcx_verbs_dereg(self->cache, second));
	/* Not from this cache. */
	EXPECT_EQ(-ENOENT, zcx_verbs_dereg(self->cache, self->dest_mr));

	/* Released, unchanged memory: still the same MR, still no registration. */
	ASSERT_EQ(0, zcx_verbs_reg(self->cache, buf, len, SRC_ACCESS, &second));
	EXPECT_EQ(first, second);
	st = stats_of(_metadata, self->cache);
	EXPECT_EQ(2, st.hits);
	EXPECT_EQ(1, st.misses);
	EXPECT_TRUE(DELIVERS(buf, len, second));
	EXPECT_EQ(0, zcx_verbs_dereg(self->cache, second));
	munmap(buf, len);
}

static void unmap_and_map_again(struct __test_metadata *_metadata, char *buf, size_t len)
{
	ASSERT_EQ(0, munmap(buf, len));
	ASSERT_EQ(buf, mmap(buf, len, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
	fill_pattern(buf, len, 0xB);
}

TEST_F(verbs, munmap_mmap_same_address)
{
	size_t len = 256 * KiB;
	char *buf = zcx_test_anon(len);

	ASSERT_NE(NULL, buf);
	reg_change_reg(_metadata, self, buf, len, unmap_and_map_again);
	munmap(buf, len);
}

/*
 * The control: a plain MR kept across the same change reads the old pages,
 * so a stale MR from the cache could not go unnoticed in these tests.
 */
TEST_F(verbs, control_plain_mr_goes_stale)
{
	size_t len = 64 * KiB;
	char *buf = zcx_test_anon(len);
	struct ibv_mr *plain;

	ASSERT_NE(NULL, buf);
	fill_pattern(buf, len, 0xA);
	plain = ibv_reg_mr(self->loop.pd, buf, len, SRC_ACCESS);
	ASSERT_NE(NULL, plain);
	unmap_and_map_again(_metadata, buf, len);
	ASSERT_EQ(0, verbs_loop_write(&self->loop, buf, len, plain->lkey, self->dest,
				      self->dest_mr->rkey));
	EXPECT_NE(0, memcmp(self->dest, buf, len));
	fill_pattern(buf, len, 0xA);
	EXPECT_EQ(0, memcmp(self->dest, buf, len)) TH_LOG("the old pages went over the wire");
	EXPECT_EQ(0, ibv_dereg_mr(plain));
	munmap(buf, len);
}

/* Pages 4..11 of 16 dropped: they read as zeros now, until written. */
static void drop_middle(struct __test_metadata *_metadata, char *buf, size_t len)
{
	ASSERT_EQ(0, madvise(buf + len / 4, len / 2, MADV_DONTNEED));
	ASSERT_EQ(0, buf[len / 4]);
}

TEST_F(verbs, madvise_dontneed)
{
	size_t len = 16 * self->page;
	char *buf = zcx_test_anon(len);

	ASSERT_NE(NULL, buf);
	reg_change_reg(_metadata, self, buf, len, drop_middle);
	/* New data into the fresh pages: whatever MR we get must carry it. */
	fill_pattern(buf + len / 4, len / 2, 0xC);
	reg_delivers(_metadata, self, self->cache, buf, len);
	munmap(buf, len);
}

static char *moved_to;

static void move_away_and_map_new(struct __test_metadata *_metadata, char *buf, size_t len)
{
	/* A reserved spot to move to, so the old address is surely free after. */
	moved_to = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, moved_to);
	ASSERT_EQ(moved_to, mremap(buf, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, moved_to));
	ASSERT_EQ(buf, mmap(buf, len, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
	fill_pattern(buf, len, 0xB);
}

TEST_F(verbs, mremap_move_and_new_mapping)
{
	size_t len = 256 * KiB;
	char *buf = zcx_test_anon(len);

	ASSERT_NE(NULL, buf);
	reg_change_reg(_metadata, self, buf, len, move_away_and_map_new);
	/* The moved pages kept pattern A; registered at their new address. */
	reg_delivers(_metadata, self, self->cache, moved_to, len);
	munmap(moved_to, len);
	munmap(buf, len);
}

static char *brk_end;

/* Half of the heap growth given back and taken again: zeros there now. */
static void shrink_and_regrow_brk(struct __test_metadata *_metadata, char *buf, size_t len)
{
	/* Nobody else may have moved the break, or brk() below hurts them. */
	ASSERT_EQ(brk_end, sbrk(0));
	ASSERT_EQ(0, brk(buf + len / 2));
	ASSERT_EQ(0, brk(brk_end));
	ASSERT_EQ(0, buf[len - 1]);
}

TEST_F(verbs, brk_shrink_and_regrow)
{
	size_t len = 64 * self->page;
	char *top, *grown;
	void *warm;

	/* No malloc() may move the break meanwhile: give the heap room first. */
	ASSERT_EQ(1, mallopt(M_TRIM_THRESHOLD, 1 << 30));
	ASSERT_EQ(1, mallopt(M_MMAP_MAX, 0));
	warm = malloc(8 * MiB);
	ASSERT_NE(NULL, warm);
	__asm__ volatile("" : : "r"(warm) : "memory");	/* keep the pair */
	free(warm);
	ASSERT_EQ(1, mallopt(M_MMAP_MAX, 65536));

	top = sbrk(0);
	ASSERT_NE((void *)-1, top);
	/* From a page boundary, so the growth is whole pages of its own. */
	ASSERT_NE((void *)-1, sbrk(self->page - ((uintptr_t)top & (self->page - 1))));
	grown = sbrk(len);
	ASSERT_NE((void *)-1, grown);
	brk_end = grown + len;
	reg_change_reg(_metadata, self, grown, len, shrink_and_regrow_brk);
	ASSERT_EQ(brk_end, sbrk(0));
	ASSERT_EQ(0, brk(top));
}

static int shm_next_id = -1;

/* Another segment at the same address, with other data. */
static void shm_swap_segment(struct __test_metadata *_metadata, char *buf, size_t len)
{
	ASSERT_EQ(0, shmdt(buf));
	ASSERT_EQ(buf, shmat(shm_next_id, buf, 0));
	fill_pattern(buf, len, 0xB);
}

TEST_F(verbs, shm_detach_attach_other)
{
	size_t len = 256 * KiB;
	int id_a = shmget(IPC_PRIVATE, len, IPC_CREAT | 0600);
	int id_b = shmget(IPC_PRIVATE, len, IPC_CREAT | 0600);
	char *buf, *b_elsewhere;

	ASSERT_LE(0, id_a);
	ASSERT_LE(0, id_b);
	buf = shmat(id_a, NULL, 0);
	ASSERT_NE((void *)-1, buf);
	/* Attached once already, so removal waits until the test detaches. */
	b_elsewhere = shmat(id_b, NULL, 0);
	ASSERT_NE((void *)-1, b_elsewhere);
	EXPECT_EQ(0, shmctl(id_a, IPC_RMID, NULL));
	EXPECT_EQ(0, shmctl(id_b, IPC_RMID, NULL));
	shm_next_id = id_b;
	reg_change_reg(_metadata, self, buf, len, shm_swap_segment);
	EXPECT_EQ(0, memcmp(buf, b_elsewhere, len));
	shmdt(b_elsewhere);
	shmdt(buf);
}

/*
 * fork() with registered memory: the MR pins the parent's pages, so the
 * child gets copies, and its writes must not reach the parent's WRITEs;
 * the parent's cached MR stays valid (a hit) and carries its new writes.
 */
TEST_F(verbs, fork_child_writes_own_copy)
{
	size_t len = 256 * KiB;
	char *buf = zcx_test_anon(len);
	struct ibv_mr *mr, *again;
	struct zcx_verbs_stats st;
	int status;
	pid_t pid;

	ASSERT_NE(NULL, buf);
	fill_pattern(buf, len, 0xA);
	ASSERT_EQ(0, zcx_verbs_reg(self->cache, buf, len, SRC_ACCESS, &mr));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		memset(buf, 0xee, len);
		_exit(buf[len - 1] == (char)0xee ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status)) TH_LOG("child died of signal %d", WTERMSIG(status));
	EXPECT_EQ(0, WEXITSTATUS(status));

	ASSERT_EQ(0, zcx_verbs_reg(self->cache, buf, len, SRC_ACCESS, &again));
	EXPECT_EQ(mr, again);
	st = stats_of(_metadata, self->cache);
	EXPECT_EQ(1, st.hits);
	EXPECT_EQ(0, st.stale);
	EXPECT_TRUE(DELIVERS(buf, len, again));
	EXPECT_EQ(0, zcx_verbs_dereg(self->cache, again));

	/* The parent writes after the fork: still the memory the MR reads. */
	fill_pattern(buf, len, 0xB);
	reg_delivers(_metadata, self, self->cache, buf, len);
	EXPECT_EQ(0, zcx_verbs_dereg(self->cache, mr));
	munmap(buf, len);
}

#define POOL_CHUNKS	32
#define CHUNK_LEN	(64 * KiB)
#define WORKERS		4
#define WORKER_ITERS	1500

struct pool_run {
	struct zcx_verbs_cache *cache;
	char *pool;
	int workers_left;	/* the remapper runs until this is 0 */
	int errors;
	int remaps;
	char what[128];		/* the first error */
};

static void pool_error(struct pool_run *run, const char *what, int ret)
{
	if (__atomic_fetch_add(&run->errors, 1, __ATOMIC_RELAXED) == 0)
		snprintf(run->what, sizeof(run->what), "%s: %d", what, ret);
}

/* Whole chunks half the time: those are the entries the final check reuses. */
static void *pool_worker(void *arg)
{
	struct pool_run *run = arg;
	unsigned int seed = (uintptr_t)pthread_self();
	struct ibv_mr *mr;
	int i, ret;

	for (i = 0; i < WORKER_ITERS; i++) {
		size_t chunk = rand_r(&seed) % POOL_CHUNKS;
		size_t off = 0, len = CHUNK_LEN;
		char *addr;

		if (rand_r(&seed) & 1) {
			off = rand_r(&seed) % CHUNK_LEN;
			len = 1 + rand_r(&seed) % (2 * CHUNK_LEN);
			if (chunk * CHUNK_LEN + off + len > POOL_CHUNKS * CHUNK_LEN)
				len = POOL_CHUNKS * CHUNK_LEN - chunk * CHUNK_LEN - off;
		}
		addr = run->pool + chunk * CHUNK_LEN + off;
		ret = zcx_verbs_reg(run->cache, addr, len, SRC_ACCESS, &mr);
		if (ret) {
			pool_error(run, "reg", ret);
			continue;
		}
		if ((uintptr_t)mr->addr > (uintptr_t)addr ||
		    (uintptr_t)mr->addr + mr->length < (uintptr_t)addr + len)
			pool_error(run, "MR does not cover the range", 0);
		ret = zcx_verbs_dereg(run->cache, mr);
		if (ret)
			pool_error(run, "dereg", ret);
	}
	__atomic_fetch_sub(&run->workers_left, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * mmap(MAP_FIXED) over the live chunk is munmap + mmap done atomically: a
 * separate munmap would let a worker's registration fail with EFAULT on
 * the hole, which is right, but not what this test is about.
 */
static void *pool_remapper(void *arg)
{
	struct pool_run *run = arg;
	unsigned int seed = 1;

	while (__atomic_load_n(&run->workers_left, __ATOMIC_ACQUIRE) > 0) {
		char *chunk = run->pool + (rand_r(&seed) % POOL_CHUNKS) * CHUNK_LEN;

		if (mmap(chunk, CHUNK_LEN, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != chunk) {
			pool_error(run, "mmap", -errno);
			break;
		}
		fill_pattern(chunk, CHUNK_LEN, ++run->remaps);
	}
	return NULL;
}

TEST_F_TIMEOUT(verbs, threads_reg_while_remapping, SLOW_TIMEOUT)
{
	struct pool_run run = { .cache = self->cache, .workers_left = WORKERS };
	pthread_t workers[WORKERS], remapper;
	int i;

	run.pool = zcx_test_anon(POOL_CHUNKS * CHUNK_LEN);
	ASSERT_NE(NULL, run.pool);
	for (i = 0; i < POOL_CHUNKS; i++)
		fill_pattern(run.pool + i * CHUNK_LEN, CHUNK_LEN, 1000 + i);
	ASSERT_EQ(0, pthread_create(&remapper, NULL, pool_remapper, &run));
	for (i = 0; i < WORKERS; i++)
		ASSERT_EQ(0, pthread_create(&workers[i], NULL, pool_worker, &run));
	for (i = 0; i < WORKERS; i++)
		pthread_join(workers[i], NULL);
	pthread_join(remapper, NULL);
	EXPECT_EQ(0, run.errors) TH_LOG("first error: %s", run.what);
	EXPECT_LT(0, run.remaps);

	/* Quiet now: every chunk's MR must carry the chunk's current bytes. */
	for (i = 0; i < POOL_CHUNKS; i++)
		reg_delivers(_metadata, self, self->cache, run.pool + i * CHUNK_LEN, CHUNK_LEN);
	munmap(run.pool, POOL_CHUNKS * CHUNK_LEN);
}

/* Eight one-page buffers registered and released through a limited cache. */
static void fill_limited_cache(struct __test_metadata *_metadata, FIXTURE_DATA(verbs) *self,
			       const struct zcx_verbs_cache_attr *attr,
			       struct zcx_verbs_stats *st)
{
	struct zcx_verbs_cache *cache;
	char *buf = zcx_test_anon(8 * self->page);
	int i;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, zcx_verbs_cache_create(self->zcx, self->loop.pd, attr, &cache));
	fill_pattern(buf, 8 * self->page, 0xA);
	for (i = 0; i < 8; i++)
		reg_delivers(_metadata, self, cache, buf + i * self->page, self->page);
	*st = stats_of(_metadata, cache);
	/* Evicted MRs are deregistered on a miss or here, not on a hit. */
	EXPECT_LE(0, zcx_verbs_cache_progress(cache));
	EXPECT_LE(st->evictions, stats_of(_metadata, cache).deregistered);
	zcx_verbs_cache_destroy(cache);
	munmap(buf, 8 * self->page);
}

TEST_F(verbs, eviction_under_limits)
{
	struct zcx_verbs_cache_attr few_entries = { .max_entries = 4 };
	struct zcx_verbs_cache_attr few_bytes = { .max_bytes = 4 * self->page };
	struct zcx_verbs_stats st;

	/* One eviction per miss beyond the limit, no more: the cache stays full. */
	fill_limited_cache(_metadata, self, &few_entries, &st);
	EXPECT_EQ(8, st.misses);
	EXPECT_EQ(4, st.evictions);
	EXPECT_EQ(4, st.entries);

	fill_limited_cache(_metadata, self, &few_bytes, &st);
	EXPECT_EQ(8, st.misses);
	EXPECT_EQ(4, st.evictions);
	EXPECT_EQ(4 * self->page, st.bytes);
}

/* 4 KiB, 1 MiB at an odd address, 16 MiB: one WRITE each. */
TEST_F_TIMEOUT(verbs, sizes, SLOW_TIMEOUT)
{
	static const struct { size_t len, offset; } cases[] = {
		{ 4 * KiB, 0 }, { MiB, 123 }, { 16 * MiB, 0 },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		size_t map_len = cases[i].len + 2 * self->page;
		char *map = zcx_test_anon(map_len);
		char *buf = map + cases[i].offset;

		ASSERT_NE(NULL, map);
		fill_pattern(buf, cases[i].len, i + 1);
		reg_delivers(_metadata, self, self->cache, buf, cases[i].len);
		munmap(map, map_len);
	}
}

/*
 * The cache's own logic, with registration hooks standing in for a
 * device (no RDMA device needed): they count the MRs alive, refuse to go
 * past fake.room bytes with ENOMEM, as a memlock limit would, and with
 * fake.meet set make two registrations wait for each other inside.
 */
static struct {
	pthread_mutex_t lock;
	size_t room, used;
	int alive;
	pthread_barrier_t *meet;
} fake = { .lock = PTHREAD_MUTEX_INITIALIZER };

static struct ibv_mr *fake_reg(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	struct ibv_mr *mr = NULL;

	(void)access;
	if (fake.meet)
		pthread_barrier_wait(fake.meet);
	pthread_mutex_lock(&fake.lock);
	if (fake.room && fake.used + len > fake.room) {
		errno = ENOMEM;
	} else {
		mr = calloc(1, sizeof(*mr));
		if (mr) {
			mr->pd = pd;
			mr->addr = addr;
			mr->length = len;
			fake.used += len;
			fake.alive++;
		}
	}
	pthread_mutex_unlock(&fake.lock);
	return mr;
}

static int fake_dereg(struct ibv_mr *mr)
{
	pthread_mutex_lock(&fake.lock);
	fake.used -= mr->length;
	fake.alive--;
	pthread_mutex_unlock(&fake.lock);
	free(mr);
	return 0;
}

FIXTURE(fake) {
	struct zcx *zcx;
	struct zcx_verbs_cache *cache;
	char *buf;
	long page;
};

FIXTURE_SETUP(fake)
{
	struct zcx_verbs_cache_attr attr = { .reg_mr = fake_reg, .dereg_mr = fake_dereg };

	self->page = sysconf(_SC_PAGESIZE);
	fake.room = 0;
	fake.used = 0;
	fake.alive = 0;
	fake.meet = NULL;
	self->buf = zcx_test_anon(4 * self->page);
	ASSERT_NE(NULL, self->buf);
	ASSERT_EQ(0, zcx_open(&self->zcx, 0));
	/* The hooks never look at the PD. */
	ASSERT_EQ(0, zcx_verbs_cache_create(self->zcx, (struct ibv_pd *)&fake, &attr,
					    &self->cache));
}

FIXTURE_TEARDOWN(fake)
{
	zcx_verbs_cache_destroy(self->cache);
	EXPECT_EQ(0, fake.alive);
	zcx_close(self->zcx);
	munmap(self->buf, 4 * self->page);
}

/*
 * A registration refused for room (ENOMEM) while released MRs hold it
 * succeeds: they go, and it is tried again.
 */
TEST_F(fake, released_mrs_give_way_to_a_new_one)
{
	struct ibv_mr *mr, *refused;
	struct zcx_verbs_stats st;

	fake.room = 3 * self->page;
	ASSERT_EQ(0, zcx_verbs_reg(self->cache, self->buf, 2 * self->page, SRC_ACCESS, &mr));
	ASSERT_EQ(0, zcx_verbs_dereg(self->cache, mr));
	EXPECT_EQ(1, fake.alive);	/* released, still cached */
	ASSERT_EQ(0, zcx_verbs_reg(self->cache, self->buf + 2 * self->page, 2 * self->page,
				   SRC_ACCESS, &mr));
	EXPECT_EQ(self->buf + 2 * self->page, mr->addr);
	EXPECT_EQ(1, fake.alive);
	ASSERT_EQ(0, zcx_verbs_stats(self->cache, &st));
	EXPECT_EQ(1, st.deregistered);
	EXPECT_EQ(1, st.entries);
	EXPECT_EQ(0, zcx_verbs_dereg(self->cache, mr));
	/* With nothing released to let go, the refusal stands. */
	ASSERT_EQ(0, zcx_verbs_reg(self->cache, self->buf, 2 * self->page, SRC_ACCESS, &mr));
	EXPECT_EQ(-ENOMEM, zcx_verbs_reg(self->cache, self->buf + 2 * self->page, 2 * self->page,
					 SRC_ACCESS, &refused));
	ASSERT_EQ(0, zcx_verbs_dereg(self->cache, mr));
}

/*
 * Released MRs hold monitors, i.e. the context's cache entries: a
 * registration refused its monitor for room lets them go and tries again.
 */
TEST_F(fake, released_mrs_give_their_monitors_way)
{
	struct zcx_limits lim = { .flags = ZCX_LIMIT_SET_ENTRIES, .cache_entries = 2 };
	struct zcx_verbs_stats st;
	struct ibv_mr *mr;
	int i;

	ASSERT_EQ(0, ioctl(zcx_fd(self->zcx), ZCX_IOC_LIMITS, &lim));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, zcx_verbs_reg(self->cache, self->buf + i * self->page, self->page,
					   SRC_ACCESS, &mr));
		ASSERT_EQ(0, zcx_verbs_dereg(self->cache, mr));
	}
	EXPECT_EQ(2, fake.alive);	/* released, still cached */
	ASSERT_EQ(0, zcx_verbs_reg(self->cache, self->buf + 2 * self->page, self->page,
				   SRC_ACCESS, &mr));
	EXPECT_EQ(self->buf + 2 * self->page, mr->addr);
	EXPECT_EQ(1, fake.alive);
	ASSERT_EQ(0, zcx_verbs_stats(self->cache, &st));
	EXPECT_EQ(2, st.deregistered);
	EXPECT_EQ(1, st.entries);
	/* With nothing released to let go, the refusal stands. */
	ASSERT_EQ(0, zcx_verbs_reg(self->cache, self->buf, self->page, SRC_ACCESS, &mr));
	EXPECT_EQ(-ENOMEM, zcx_verbs_reg(self->cache, self->buf + 3 * self->page, self->page,
					 SRC_ACCESS, &mr));
	EXPECT_EQ(2, fake.alive);
}

/* A range no MR can cover is refused before a released MR goes for it. */
TEST_F(fake, bad_range_refused_before_evicting)
{
	struct zcx_verbs_cache_attr attr = {
		.max_entries = 1, .reg_mr = fake_reg, .dereg_mr = fake_dereg,
	};
	char *past_end = (char *)(UINTPTR_MAX - self->page + 1);
	struct zcx_verbs_cache *one;
	struct zcx_verbs_stats st;
	struct ibv_mr *mr;

	ASSERT_EQ(0, zcx_verbs_cache_create(self->zcx, (struct ibv_pd *)&fake, &attr, &one));
	ASSERT_EQ(0, zcx_verbs_reg(one, self->buf, self->page, SRC_ACCESS, &mr));
	ASSERT_EQ(0, zcx_verbs_dereg(one, mr));
	EXPECT_EQ(-EINVAL, zcx_verbs_reg(one, self->buf, 0, SRC_ACCESS, &mr));
	EXPECT_EQ(NULL, mr);
	EXPECT_EQ(-EINVAL, zcx_verbs_reg(one, past_end, 2 * self->page, SRC_ACCESS, &mr));
	ASSERT_EQ(0, zcx_verbs_stats(one, &st));
	EXPECT_EQ(0, st.evictions);
	EXPECT_EQ(1, st.entries);
	EXPECT_EQ(1, fake.alive);
	/* Still cached: a hit. */
	ASSERT_EQ(0, zcx_verbs_reg(one, self->buf, self->page, SRC_ACCESS, &mr));
	ASSERT_EQ(0, zcx_verbs_stats(one, &st));
	EXPECT_EQ(1, st.hits);
	ASSERT_EQ(0, zcx_verbs_dereg(one, mr));
	zcx_verbs_cache_destroy(one);
}

struct reg_arg {
	struct zcx_verbs_cache *cache;
	void *addr;
	size_t len;
	struct ibv_mr *mr;
	int ret;
};

static void *reg_thread(void *p)
{
	struct reg_arg *a = p;

	a->ret = zcx_verbs_reg(a->cache, a->addr, a->len, SRC_ACCESS, &a->mr);
	return NULL;
}

/* Two threads missing on one range at once end up sharing one MR. */
TEST_F(fake, concurrent_misses_share_one_mr)
{
	struct reg_arg a = { .cache = self->cache, .addr = self->buf, .len = 2 * self->page };
	struct reg_arg b = a;
	pthread_barrier_t meet;
	struct zcx_verbs_stats st;
	pthread_t t;

	ASSERT_EQ(0, pthread_barrier_init(&meet, NULL, 2));
	fake.meet = &meet;
	ASSERT_EQ(0, pthread_create(&t, NULL, reg_thread, &a));
	reg_thread(&b);
	pthread_join(t, NULL);
	fake.meet = NULL;
	pthread_barrier_destroy(&meet);
	ASSERT_EQ(0, a.ret);
	ASSERT_EQ(0, b.ret);
	EXPECT_EQ(a.mr, b.mr);
	EXPECT_EQ(1, fake.alive);
	ASSERT_EQ(0, zcx_verbs_stats(self->cache, &st));
	EXPECT_EQ(1, st.entries);
	EXPECT_EQ(2, st.misses);
	EXPECT_EQ(1, st.deregistered);
	EXPECT_EQ(0, zcx_verbs_dereg(self->cache, a.mr));
	EXPECT_EQ(0, zcx_verbs_dereg(self->cache, b.mr));
	/* Released twice over: a third is refused. */
	EXPECT_EQ(-EINVAL, zcx_verbs_dereg(self->cache, a.mr));
}

ZCX_TEST_HARNESS_MAIN
