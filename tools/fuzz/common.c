// SPDX-License-Identifier: GPL-2.0-only
/*
 * common.c - zcx_fuzz's bookkeeping (last-operations ring, statistics,
 * failure report), the bulletin board through which workers learn each
 * other's addresses, keys and handles, and the argument pickers.
 */
#include "fuzz.h"

#include <stdarg.h>

_Static_assert(sizeof(struct zcx_addr) == 64, "board entries hold a zcx_addr");

const char *const op_names[NOPS] = {
	"open", "close", "query", "mr_reg", "mr_dereg", "mr_flush", "limits",
	"mon_add", "ep_create", "ep_destroy", "ep_connect", "enter",
	"ring_garbage", "expose", "unexpose", "bar_create", "bar_join",
	"bar_arrive", "mmap_fd", "munmap_fd", "mremap_fd", "read", "poll",
	"buf_map", "buf_unmap", "buf_mremap", "buf_madvise", "buf_mprotect",
	"buf_touch", "fork", "raw_ioctl", "(cqe.res)",
};

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * Distinct, well-separated streams per (seed, process, thread).  The
 * operations come from one stream, so worker P.T runs the same sequence
 * of operations for a seed whatever the module answers; each operation's
 * arguments come from a stream seeded by (that, operation number), so
 * they stay the same too, except for values learned from earlier answers.
 */
void rng_seed(struct thr *t, uint64_t seed, int p, int q)
{
	uint64_t x = seed ^ ((uint64_t)(p + 1) << 40) ^ ((uint64_t)(q + 1) << 20);
	int i;

	for (i = 0; i < 4; i++)
		t->sel[i] = splitmix64(&x);
	t->base = splitmix64(&x);
}

void rng_op(struct thr *t)
{
	uint64_t x = t->base ^ (t->nops * 0x2545f4914f6cdd1dULL);
	int i;

	for (i = 0; i < 4; i++)
		t->s[i] = splitmix64(&x);
}

/* --- bookkeeping ---------------------------------------------------------- */

void note(struct thr *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(t->desc, sizeof(t->desc), "%s ", op_names[t->cur_op]);
	va_start(ap, fmt);
	vsnprintf(t->desc + n, sizeof(t->desc) - n, fmt, ap);
	va_end(ap);
	if (t->pr->in_child)
		snprintf(t->slot->child_last, DESC_LEN, "[child %d] %.100s", (int)getpid(), t->desc);
	else
		memcpy(t->slot->ring[(t->slot->opno - 1) % RING_N], t->desc, DESC_LEN);
}

void dump_ring(const struct shared *sh, int p, int q)
{
	const struct wslot *s = &sh->slots[p * sh->nthreads + q];
	uint64_t n = s->opno, i = n > RING_N ? n - RING_N + 1 : 1;

	fprintf(stderr, "# last operations of worker %d.%d:\n", p, q);
	for (; i <= n; i++)
		fprintf(stderr, "#   op#%llu %.*s\n", (unsigned long long)i, DESC_LEN,
			s->ring[(i - 1) % RING_N]);
	if (s->child_last[0])
		fprintf(stderr, "#   last fork child op: %.*s\n", DESC_LEN, s->child_last);
}

void fuzz_fail(struct thr *t, const char *why)
{
	fprintf(stderr, "FAIL seed=%llu worker=%d.%d op#=%llu last=%s%s: %s\n",
		(unsigned long long)t->sh->seed, t->p, t->t,
		(unsigned long long)t->slot->opno, t->desc,
		t->pr->in_child ? " (in a fork child)" : "", why);
	if (t->pr->in_child)
		_exit(1);
	dump_ring(t->sh, t->p, t->t);
	t->pr->failed = 1;
	__atomic_store_n(&t->sh->failed, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&t->sh->stop, 1, __ATOMIC_RELAXED);
}

void stat_add(struct thr *t, int op, long r)
{
	unsigned int b = r >= 0 ? 0 : -r < ERRB - 1 ? (unsigned int)-r : ERRB - 1;

	__atomic_fetch_add(&t->sh->stats[op][b], 1, __ATOMIC_RELAXED);
}

/* A call the ticker thread may interrupt (SIGUSR1) if it blocks too long. */
void call_begin(struct thr *t)
{
	__atomic_store_n(&t->block_since, now_ns(), __ATOMIC_RELAXED);
}

void call_end(struct thr *t)
{
	__atomic_store_n(&t->block_since, 0, __ATOMIC_RELAXED);
}

int xioctl(struct thr *t, int fd, unsigned long cmd, void *arg)
{
	int r, e;

	call_begin(t);
	r = ioctl(fd, cmd, arg);
	e = errno;
	call_end(t);
	return r < 0 ? -e : r > 0 ? 0 : 0;
}

void learn(struct pool *p, uint64_t v)
{
	uint32_t i = __atomic_fetch_add(&p->n, 1, __ATOMIC_RELAXED);

	__atomic_store_n(&p->v[i % POOL_N], v, __ATOMIC_RELAXED);
}

int recall(struct thr *t, struct pool *p, uint64_t *v)
{
	uint32_t n = __atomic_load_n(&p->n, __ATOMIC_RELAXED);

	if (!n)
		return 0;
	*v = __atomic_load_n(&p->v[below(t, n < POOL_N ? n : POOL_N)], __ATOMIC_RELAXED);
	return 1;
}

void board_put_addr(struct thr *t, const struct zcx_addr *a)
{
	uint32_t i = __atomic_fetch_add(&t->sh->naddr, 1, __ATOMIC_RELAXED) % BOARD_N;
	uint64_t w[8];
	int k;

	memcpy(w, a, sizeof(w));
	for (k = 0; k < 8; k++)
		__atomic_store_n(&t->sh->addr[i][k], w[k], __ATOMIC_RELAXED);
}

/*
 * An address from the board (any process's), mostly of @kind, sometimes
 * mangled.
 */
void board_get_addr(struct thr *t, struct zcx_addr *a, __u16 kind)
{
	uint32_t n = __atomic_load_n(&t->sh->naddr, __ATOMIC_RELAXED), i = 0;
	uint64_t w[8];
	int k, tries;

	memset(w, 0, sizeof(w));
	for (tries = 0; n && tries < 8; tries++) {
		i = below(t, n < BOARD_N ? n : BOARD_N);
		for (k = 0; k < 8; k++)
			w[k] = __atomic_load_n(&t->sh->addr[i][k], __ATOMIC_RELAXED);
		memcpy(a, w, sizeof(*a));
		if (a->kind == kind || chance(t, 10))
			break;
	}
	memcpy(a, w, sizeof(*a));
	if (!n || chance(t, 10)) {
		switch (below(t, 6)) {
		case 0: a->key ^= 1ULL << below(t, 64); break;
		case 1: a->id += below(t, 3) - 1; break;
		case 2: a->kind = (__u16)below(t, 4); break;
		case 3: a->node = (__u32)pick_u64(t); break;
		case 4:
			/* A reserved field, or the network part of the address. */
			a->reserved0 = (__u16)rnd(t);
			((unsigned char *)&a->node_id)[below(t, sizeof(*a) - 24)] = (unsigned char)rnd(t);
			break;
		default: a->id = pick_u64(t); a->key = rnd(t); break;
		}
	}
}

void board_put_rkey(struct thr *t, uint64_t key, uint64_t addr, uint64_t len)
{
	uint32_t i = __atomic_fetch_add(&t->sh->nrkey, 1, __ATOMIC_RELAXED) % BOARD_N;

	__atomic_store_n(&t->sh->rkey[i][0], key, __ATOMIC_RELAXED);
	__atomic_store_n(&t->sh->rkey[i][1], addr, __ATOMIC_RELAXED);
	__atomic_store_n(&t->sh->rkey[i][2], len, __ATOMIC_RELAXED);
}

/* A key and an address inside (or near) what it exposes. */
uint64_t board_get_rkey(struct thr *t, uint64_t *remote)
{
	uint32_t n = __atomic_load_n(&t->sh->nrkey, __ATOMIC_RELAXED);
	uint64_t key, addr, len;

	if (!n || chance(t, 5)) {
		*remote = pick_addr(t);
		return pick_u64(t);
	}
	n = below(t, n < BOARD_N ? n : BOARD_N);
	key = __atomic_load_n(&t->sh->rkey[n][0], __ATOMIC_RELAXED);
	addr = __atomic_load_n(&t->sh->rkey[n][1], __ATOMIC_RELAXED);
	len = __atomic_load_n(&t->sh->rkey[n][2], __ATOMIC_RELAXED);
	*remote = addr + (chance(t, 80) ? below(t, len > 1 ? len : 1) : len - below(t, 2) + below(t, 4096));
	return key;
}

uint64_t pick_handle(struct thr *t)
{
	uint64_t h = 0;
	uint32_t n;

	switch (below(t, 8)) {
	case 0: case 1: case 2:
		if (recall(t, &t->pr->handles, &h))
			return h;
		break;
	case 3:
		n = __atomic_load_n(&t->sh->nhandle, __ATOMIC_RELAXED);
		if (n)
			return __atomic_load_n(&t->sh->handle[below(t, n < BOARD_N ? n : BOARD_N)],
					       __ATOMIC_RELAXED);
		break;
	case 4:
		/* A neighbour: same slot, other generation, or the reverse. */
		if (recall(t, &t->pr->handles, &h))
			return chance(t, 50) ? h + (1ULL << ZCX_HANDLE_SLOT_BITS) * (below(t, 3) + 1) :
					       h ^ (1ULL << below(t, ZCX_HANDLE_SLOT_BITS));
		break;
	case 5:
		return 0;
	}
	return pick_u64(t);
}

uint64_t pick_u64(struct thr *t)
{
	switch (below(t, 9)) {
	case 0: return 0;
	case 1: return 1;
	case 2: return ~0ULL;
	case 3: return 0x7fffffff;
	case 4: return 0x80000000;
	case 5: return 0xffffffff;
	case 6: return below(t, 64);
	case 7: return 1ULL << below(t, 64);
	default: return rnd(t);
	}
}

/*
 * An address for the module to read or write: our arena (buffers and the
 * PROT_NONE reservation around them), a descriptor mapping, or memory no
 * process may use.  Never our heap or stacks: the module writing there
 * would corrupt the fuzzer and be blamed on the module.
 */
uint64_t pick_addr(struct thr *t)
{
	struct proc *pr = t->pr;
	uint64_t base;
	size_t len;
	int i;

	switch (below(t, 24)) {
	case 0: return 0;
	case 1: return below(t, 65536);
	case 2: return 0xffff888000000000ULL + (rnd(t) & 0xfffff000ULL);
	case 3: return 0x8000000000000000ULL | (rnd(t) & 0xfffff000ULL);
	case 4: return ~0ULL - below(t, 8192);
	case 5: case 6:
		i = below(t, NMAPS);
		if (pr->in_child || __atomic_load_n(&pr->maps[i].kind, __ATOMIC_RELAXED) == FM_FREE)
			break;
		base = (uintptr_t)__atomic_load_n(&pr->maps[i].p, __ATOMIC_RELAXED);
		return base + below(t, __atomic_load_n(&pr->maps[i].len, __ATOMIC_RELAXED) + 1);
	}
	i = below(t, NBUF);
	base = (uintptr_t)pr->arena + (uint64_t)i * SLOT_SIZE;
	len = __atomic_load_n(&pr->bufs[i].len, __ATOMIC_RELAXED);
	switch (below(t, 4)) {
	case 0: return base;
	case 1: return base + below(t, len + 1);
	case 2: return base + below(t, len / pr->page + 1) * pr->page;
	default: return base + below(t, SLOT_SIZE);
	}
}

uint64_t pick_len(struct thr *t)
{
	size_t page = t->pr->page;

	switch (below(t, 14)) {
	case 0: return 0;
	case 1: return 1;
	case 2: return page - 1;
	case 3: return page;
	case 4: return page + 1;
	case 5: return 2 * page + 13;
	case 6: return below(t, SLOT_SIZE) + 1;
	case 7: return SLOT_SIZE;
	case 8: return 3 * SLOT_SIZE;
	case 9: return chance(t, 50) ? 1ULL << 40 : ~0ULL - below(t, 4096);
	default: return (below(t, 16) + 1) * page;
	}
}

/* A live descriptor, sometimes a dead or foreign one. */
int pick_fd(struct thr *t, int *ci)
{
	struct proc *pr = t->pr;
	int i, k, fd, start = below(t, NCTX);

	*ci = start;
	if (chance(t, 3)) {
		switch (below(t, 4)) {
		case 0: return -1;
		case 1: return pr->memfd;
		case 2: return pr->exefd;
		default: return below(t, 64);
		}
	}
	for (k = 0; k < NCTX; k++) {
		i = (start + k) % NCTX;
		fd = __atomic_load_n(&pr->fds[i], __ATOMIC_RELAXED);
		if (fd >= 0) {
			*ci = i;
			return fd;
		}
	}
	return -1;
}

