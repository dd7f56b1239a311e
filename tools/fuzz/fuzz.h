/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * fuzz.h - state shared by the parts of zcx_fuzz (tools/zcx_fuzz.c, the
 * driver; tools/fuzz/ops.c and mem.c, the operations; common.c, what
 * they share).
 *
 * Layout: the driver forks PROCS worker processes, each runs THREADS
 * fuzzing threads.  What the driver must see while workers run (progress
 * for the watchdog, the last operations for a failure report, statistics,
 * and a "bulletin board" through which workers learn each other's
 * endpoint addresses, keys and handles) lives in one MAP_SHARED anonymous
 * mapping, struct shared.  Everything else is per process (struct proc)
 * or per thread (struct thr).
 */
#ifndef ZCX_FUZZ_H
#define ZCX_FUZZ_H

#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "zcx_test.h"	/* uapi, zcx_test_census() */

#define NCTX		4	/* /dev/zcx descriptors per process */
#define NMAPS		24	/* tracked mappings of those descriptors */
#define NRINGS		16	/* learned ring geometries */
#define NBUF		16	/* buffer slots of the arena */
#define SLOT_SIZE	(1UL << 20)
#define POOL_N		32	/* learned handles, keys, ... */
#define BOARD_N		64
#define RING_N		32	/* last operations kept per worker */
#define DESC_LEN	120
#define ERRB		136	/* stats buckets: 0 ok, errno, ERRB-1 other */
#define GARBAGE_SIZE	16384	/* >= any size an ioctl number can encode */

enum op {
	OP_OPEN, OP_CLOSE, OP_QUERY, OP_MR_REG, OP_MR_DEREG, OP_MR_FLUSH,
	OP_LIMITS, OP_MON_ADD, OP_EP_CREATE, OP_EP_DESTROY, OP_EP_CONNECT,
	OP_ENTER, OP_RING_GARBAGE, OP_EXPOSE, OP_UNEXPOSE, OP_BAR_CREATE,
	OP_BAR_JOIN, OP_BAR_ARRIVE, OP_MMAP_FD, OP_MUNMAP_FD, OP_MREMAP_FD,
	OP_READ, OP_POLL, OP_BUF_MAP, OP_BUF_UNMAP, OP_BUF_MREMAP,
	OP_BUF_MADVISE, OP_BUF_MPROTECT, OP_BUF_TOUCH, OP_FORK, OP_RAW_IOCTL,
	OP_CQE,		/* not an operation: completions seen, by cqe.res */
	NOPS
};

extern const char *const op_names[NOPS];

/* One fuzzing thread as the driver sees it. */
struct wslot {
	uint64_t opno;		/* operations started */
	uint64_t started;	/* CLOCK_MONOTONIC ns at the current one's start */
	uint32_t busy;		/* inside an operation */
	int32_t tid;
	char ring[RING_N][DESC_LEN];	/* operation opno is at opno % RING_N */
	char child_last[DESC_LEN];	/* its fork child's current operation */
};

struct shared {
	uint64_t seed;
	int nprocs, nthreads;
	int stop, failed;
	int verbose;		/* -v: print every operation */
	uint32_t naddr, nrkey, nhandle;
	uint64_t addr[BOARD_N][8];	/* struct zcx_addr of endpoints and barriers */
	uint64_t rkey[BOARD_N][3];	/* key, start, length of exposed ranges */
	uint64_t handle[BOARD_N];
	uint64_t stats[NOPS][ERRB];
	struct wslot slots[];		/* nprocs * nthreads */
};

/* Values learned from successful calls, overwritten round robin. */
struct pool {
	uint64_t v[POOL_N];
	uint32_t n;
};

enum fmap_kind { FM_FREE, FM_STATUS, FM_RING, FM_BAR, FM_OTHER };

/* A mapping of a /dev/zcx descriptor (VM_DONTCOPY: absent in fork children). */
struct fmap {
	char *p;
	size_t len;
	size_t safe;		/* bytes we may touch: known to be backed */
	int kind, ctx, writable;
	uint32_t ep, bar, sq_entries, cq_entries;
	struct zcx_ring_offsets off;
};

struct ringinfo {
	int ctx;
	uint32_t ep, sq_entries, cq_entries;
	uint64_t offset, size;
	struct zcx_ring_offsets off;
};

struct buf {
	size_t len;		/* mapped at slot start; 0: PROT_NONE reservation */
	int rw_ok;		/* all of [start, len) read-write, safe to memset */
	int backed;		/* anonymous or memfd within its size: may become rw_ok */
};

/*
 * A worker process.  @lock serialises changes of the address-space layout
 * (arena slots, descriptor mappings) with our own loads and stores into
 * them, so that the fuzzer never faults on memory it unmapped itself; the
 * ioctls run without it, so the module does see memory change under it.
 */
struct proc {
	pthread_mutex_t lock;
	int idx, in_child, failed;
	uint64_t status_size;
	int fds[NCTX];
	struct pool handles, rkeys, peers, bars, eps;	/* eps: ctx << 32 | ep */
	struct ringinfo rings[NRINGS];
	uint32_t nrings;
	struct fmap maps[NMAPS];
	char *arena;
	struct buf bufs[NBUF];
	int memfd, exefd;
	size_t page;
};

struct thr {
	struct proc *pr;
	struct shared *sh;
	struct wslot *slot;
	int p, t;
	pthread_t th;
	uint64_t sel[4];	/* xoshiro256** state choosing the operations */
	uint64_t s[4];		/* ... choosing an operation's arguments */
	uint64_t base;		/* seeds s[] afresh for each operation */
	uint64_t nops;
	int cur_op;
	uint64_t block_since;	/* ns; the ticker interrupts long calls */
	pid_t child;
	int child_killed;
	char desc[DESC_LEN];
	unsigned char garbage[GARBAGE_SIZE];
};

/* splitmix64: turns (seed, proc, thread) into a well-mixed state. */
static inline uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline uint64_t rotl64(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* xoshiro256**: each worker's own reproducible streams. */
static inline uint64_t xoshiro(uint64_t *s)
{
	uint64_t r = rotl64(s[1] * 5, 7) * 9, x = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= x;
	s[3] = rotl64(s[3], 45);
	return r;
}

static inline uint64_t rnd(struct thr *t)
{
	return xoshiro(t->s);
}

static inline uint64_t below(struct thr *t, uint64_t n)
{
	return n ? rnd(t) % n : 0;
}

static inline int chance(struct thr *t, unsigned int pct)
{
	return below(t, 100) < pct;
}

uint64_t now_ns(void);
void rng_seed(struct thr *t, uint64_t seed, int p, int q);
void rng_op(struct thr *t);

#define SKIP	1	/* an operation that found nothing to work on */

/* ops.c, common.c, mem.c: the driver's entry points */
void proc_init(struct proc *pr, int idx);
void proc_teardown(struct proc *pr);
void run_one(struct thr *t);
void reap_child(struct thr *t, int block);
void fuzz_fail(struct thr *t, const char *why);
void dump_ring(const struct shared *sh, int p, int q);

/* common.c: helpers for the operations */
void stat_add(struct thr *t, int op, long r);
void board_put_addr(struct thr *t, const struct zcx_addr *a);
void board_get_addr(struct thr *t, struct zcx_addr *a, __u16 kind);
void board_put_rkey(struct thr *t, uint64_t key, uint64_t addr, uint64_t len);
uint64_t board_get_rkey(struct thr *t, uint64_t *remote);
uint64_t pick_handle(struct thr *t);
void note(struct thr *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int xioctl(struct thr *t, int fd, unsigned long cmd, void *arg);
void call_begin(struct thr *t);
void call_end(struct thr *t);
int pick_fd(struct thr *t, int *ci);
uint64_t pick_addr(struct thr *t);
uint64_t pick_len(struct thr *t);
uint64_t pick_u64(struct thr *t);
void learn(struct pool *p, uint64_t v);
int recall(struct thr *t, struct pool *p, uint64_t *v);
int add_map(struct proc *pr, const struct fmap *m);
int enter_op(struct thr *t, int fmi, int garbage);
void run_op(struct thr *t, int op);

/* mem.c: operations on memory, descriptor mappings and processes */
int op_mmap_fd(struct thr *t);
int op_munmap_fd(struct thr *t);
int op_mremap_fd(struct thr *t);
int op_buf_map(struct thr *t);
int op_buf_unmap(struct thr *t);
int op_buf_mremap(struct thr *t);
int op_buf_madvise(struct thr *t);
int op_buf_mprotect(struct thr *t);
int op_buf_touch(struct thr *t);
int op_fork(struct thr *t);
void map_status(struct thr *t, int ci, int fd);

#endif /* ZCX_FUZZ_H */
