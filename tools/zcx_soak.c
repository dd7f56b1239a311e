// SPDX-License-Identifier: GPL-2.0-only
/*
 * zcx_soak - long-running mixed transfers with end-to-end verification
 * while the application keeps remapping its own buffers.
 *
 * Usage: zcx_soak [-t SECONDS] [-p PAIRS] [-s SEED] [-n] [-N] [-v]
 *
 * Each pair is two processes with an endpoint each, connected both ways,
 * a barrier of two and (on the second process) an exposed region.  Both
 * draw the same sequence of rounds from a generator seeded with (seed,
 * pair), so they agree on every round's operation, sizes and tags without
 * talking; each also has a private generator for what only it decides
 * (buffers, offsets, blocking or not, remapping).  Rounds: a blocking
 * send/recv of 0 bytes to 16 MiB; a batch of up to 8 isend/irecv in
 * flight each way with random tags (exact in a random order, or
 * wildcards in order); a put and a get through the exposed region; a
 * barrier.  Every message's bytes are a pattern of (seed, pair, round,
 * message), and the receiver checks each byte and that nothing beyond the
 * message was written.  With -N the messages, puts and gets go through
 * the network backend (zcx_ib, ZCX_EP_NET endpoints connected with
 * ZCX_CONNECT_NET) although both processes are on this node; the
 * barrier stays the node's.  Between rounds a process remaps its buffers at
 * random: mmap(MAP_FIXED) over them, munmap + mmap at the same address,
 * mremap move, shrink + grow, madvise(MADV_DONTNEED), fork() of a child
 * that writes to them and exits, free/malloc/realloc of a brk heap; the
 * next round uses the same addresses with new content, so a stale
 * registration anywhere would deliver or receive old bytes and be caught.
 *
 * Output: a line per 10 s on stderr, then the totals and a line
 * "soak-result: key=value ..." for scripts.  Exit status: 0 when every
 * byte was right and nothing failed, 1 on a corruption or error, 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "zcx.h"

#define MiB		(1024UL * 1024)
#define ARENA		(17 * MiB)	/* a 16 MiB message and offsets */
#define EXPOSED		(4 * MiB + 3 * 4096)
#define HEAP_MAX	(4 * MiB)
#define BATCH_MAX	8
#define CTRL_TAG	(1ULL << 63)	/* data tags have bit 63 clear */
#define POISON		0xa5
#define MAX_REPORTS	5		/* corruptions printed per process */

/* What each process did, in memory shared with the driver. */
struct pstats {
	uint64_t ops, bytes, msgs, puts, gets, barriers;
	uint64_t remaps, forks, moves;
	uint64_t corruptions, errors;
	uint64_t events[6], lost;	/* invalidation events by cause */
	uint64_t kinval, khits, kmisses, lib_stale;
	int finished;
};

struct rng {
	uint64_t s;
};

struct arena {
	char *base;	/* reservation of 2 * ARENA */
	char *p;	/* the live half */
	size_t len;
};

struct proc {
	int pair, rank;
	uint64_t seed;
	struct zcx *zcx;
	struct zcx_ep *ep;
	uint32_t peer, bar;
	int rd, wr;
	struct rng shared, priv;
	struct arena snd, rcv;
	char *exp;		/* rank 1: the exposed region */
	uint64_t rkey;
	uint64_t raddr, rrkey;	/* rank 0: the peer's, from its last message */
	char *heap;
	size_t heap_len;
	size_t thr, page;
	uint64_t seq;
	struct pstats *st;
	const char *what;	/* the operation under way, for reports */
};

static bool verbose;
static bool net;	/* -N */

/* --- numbers and patterns --------------------------------------------- */

static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static uint64_t rnext(struct rng *r)
{
	r->s += 0x9e3779b97f4a7c15ULL;
	return mix(r->s);
}

static uint64_t rbelow(struct rng *r, uint64_t n)
{
	return n ? rnext(r) % n : 0;
}

/* The pattern of message @sub of round @seq of @p's pair. */
static uint64_t pseed(const struct proc *p, uint64_t seq, uint64_t sub)
{
	return mix(p->seed ^ mix(((uint64_t)p->pair << 48) ^ (seq << 8) ^ sub));
}

static inline uint64_t pword(uint64_t ps, uint64_t i)
{
	return mix(ps + i * 0x9e3779b97f4a7c15ULL);
}

static void pfill(void *buf, size_t len, uint64_t ps)
{
	unsigned char *b = buf;
	size_t i;

	for (i = 0; i < len; i += 8) {
		uint64_t w = pword(ps, i / 8);

		memcpy(b + i, &w, len - i < 8 ? len - i : 8);
	}
}

static unsigned char pbyte(uint64_t ps, size_t i)
{
	uint64_t w = pword(ps, i / 8);

	return ((unsigned char *)&w)[i % 8];
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * Check [buf, +len) against pattern @ps and [buf + len, +tail) against the
 * poison; count the bytes, report the first corruptions in detail.
 */
static bool verify(struct proc *p, const char *what, uint64_t seq, const void *buf,
		   size_t len, uint64_t ps, size_t tail)
{
	const unsigned char *b = buf;
	size_t i, first = SIZE_MAX, wrong = 0;
	unsigned char want = 0, seen = 0;

	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t w = pword(ps, i / 8);

		if (memcmp(b + i, &w, 8))
			break;
	}
	for (; i < len + tail; i++) {
		unsigned char e = i < len ? pbyte(ps, i) : POISON;

		if (b[i] != e) {
			if (first == SIZE_MAX) {
				first = i;
				want = e;
				seen = b[i];
			}
			wrong++;
		}
	}
	if (first == SIZE_MAX) {
		p->st->bytes += len;
		return true;
	}
	if (p->st->corruptions++ < MAX_REPORTS)
		fprintf(stderr, "zcx_soak: CORRUPTION pair %d rank %d seq %" PRIu64 " %s: "
			"%zu bytes at %p: offset %zu%s expected %02x actual %02x "
			"(%zu bytes wrong)\n", p->pair, p->rank, seq, what, len, buf, first,
			first >= len ? " (past the message)" : "", want, seen, wrong);
	return false;
}

/* A failed call: report it; the process gives up (its peer then sees the reset). */
static int fail(struct proc *p, const char *call, long ret)
{
	p->st->errors++;
	fprintf(stderr, "zcx_soak: pair %d rank %d seq %" PRIu64 " %s: %s: %s\n", p->pair,
		p->rank, p->seq, p->what ? p->what : "setup", call,
		ret < 0 ? zcx_strerror((int)ret) : strerror(errno));
	return -1;
}

#define CALL(p, expr) do {							\
	long __r = (long)(expr);						\
	if (__r < 0)								\
		return fail((p), #expr, __r);					\
} while (0)

static int xio(int fd, void *buf, size_t len, bool wr)
{
	char *c = buf;

	while (len) {
		ssize_t n = wr ? write(fd, c, len) : read(fd, c, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		c += n;
		len -= n;
	}
	return 0;
}

/* --- invalidation events --------------------------------------------- */

static void on_event(void *arg, const struct zcx_event *ev)
{
	struct pstats *st = arg;

	if (ev->cause == ZCX_EVENT_OVERFLOW)
		st->lost += ev->lost;
	else if (ev->cause < 6)
		st->events[ev->cause]++;
}

static void drain(struct proc *p)
{
	zcx_events_drain(p->zcx, on_event, p->st);
}

/* --- the application's own remapping ---------------------------------- */

static int map_fixed(struct proc *p, void *at, size_t len)
{
	if (mmap(at, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		 -1, 0) != at)
		return fail(p, "mmap(MAP_FIXED)", 0);
	return 0;
}

static int arena_init(struct proc *p, struct arena *a)
{
	a->base = mmap(NULL, 2 * ARENA, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (a->base == MAP_FAILED)
		return fail(p, "mmap(reservation)", 0);
	a->p = a->base;
	a->len = ARENA;
	return map_fixed(p, a->p, ARENA);
}

/* A fork()ed child that writes to [at, +len) and exits: copy-on-write. */
static int fork_touch(struct proc *p, char *at, size_t len)
{
	pid_t pid;
	int status;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return fail(p, "fork", 0);
	if (pid == 0) {
		size_t i;

		for (i = 0; i < len; i += p->page)
			at[i] = (char)i;
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return fail(p, "fork child", 0);
	/* And the parent writes too, so its pages are copied or stay its own. */
	memset(at, 0x5a, len < 3 * p->page ? len : 3 * p->page);
	p->st->forks++;
	return 0;
}

/* A page-aligned random piece of [base, +len). */
static void piece(struct proc *p, char *base, size_t len, char **at, size_t *plen)
{
	size_t pages = len / p->page, first = rbelow(&p->priv, pages);
	size_t n = 1 + rbelow(&p->priv, pages - first);

	if (rbelow(&p->priv, 4) == 0) {
		first = 0;
		n = pages;
	}
	*at = base + first * p->page;
	*plen = n * p->page;
}

/*
 * The mappings (VMAs) over [at, +len), from /proc/self/maps: mremap()
 * works on one at a time, and remapping pieces of an arena splits it.
 * Returns how many were found (at most @max), -1 on error.
 */
static int vmas(char *at, size_t len, char **start, size_t *size, int max)
{
	uintptr_t lo = (uintptr_t)at, hi = lo + len, s, e;
	char line[512];
	int n = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &s, &e) != 2)
			continue;
		if (e <= lo || s >= hi)
			continue;
		if (n == max) {
			n = -1;
			break;
		}
		s = s < lo ? lo : s;
		e = e > hi ? hi : e;
		start[n] = (char *)s;
		size[n++] = e - s;
	}
	fclose(f);
	return n;
}

#define MAX_VMAS 1024

static char *vma_start[MAX_VMAS];
static size_t vma_size[MAX_VMAS];

/* mremap [from, +len) to @to, one mapping at a time. */
static int move_range(struct proc *p, char *from, size_t len, char *to)
{
	int cnt = vmas(from, len, vma_start, vma_size, MAX_VMAS), i;

	if (cnt <= 0)
		return fail(p, "/proc/self/maps", 0);
	for (i = 0; i < cnt; i++) {
		char *dst = to + (vma_start[i] - from);

		if (mremap(vma_start[i], vma_size[i], vma_size[i], MREMAP_MAYMOVE | MREMAP_FIXED,
			   dst) != dst)
			return fail(p, "mremap(move)", 0);
	}
	return 0;
}

/* Change the memory behind an arena, keeping it at an address we know. */
static int remap_arena(struct proc *p, struct arena *a)
{
	char *at, *q;
	size_t n, len;
	int cnt;

	p->st->remaps++;
	switch (rbelow(&p->priv, 6)) {
	case 0:		/* a new mapping over the live one */
		piece(p, a->p, a->len, &at, &n);
		return map_fixed(p, at, n);
	case 1:		/* munmap, then mmap at the same address */
		piece(p, a->p, a->len, &at, &n);
		if (munmap(at, n))
			return fail(p, "munmap", 0);
		return map_fixed(p, at, n);
	case 2:		/* mremap move to the other half of the reservation */
		q = a->p == a->base ? a->base + ARENA : a->base;
		if (move_range(p, a->p, a->len, q))
			return -1;
		if (mmap(a->p, ARENA, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
			 MAP_FIXED, -1, 0) != a->p)
			return fail(p, "mmap(reservation)", 0);
		a->p = q;
		p->st->moves++;
		return 0;
	case 3:		/* mremap shrink the last mapping, then grow it back in place */
		cnt = vmas(a->p, a->len, vma_start, vma_size, MAX_VMAS);
		if (cnt <= 0)
			return fail(p, "/proc/self/maps", 0);
		at = vma_start[cnt - 1];
		len = vma_size[cnt - 1];
		if (len < 2 * p->page)
			return 0;
		n = (1 + rbelow(&p->priv, len / p->page - 1)) * p->page;
		if (mremap(at, len, len - n, 0) != at)
			return fail(p, "mremap(shrink)", 0);
		if (mremap(at, len - n, len, 0) != at)
			return fail(p, "mremap(grow)", 0);
		return 0;
	case 4:		/* madvise(DONTNEED): zero-fill on the next touch */
		piece(p, a->p, a->len, &at, &n);
		if (madvise(at, n, MADV_DONTNEED))
			return fail(p, "madvise(DONTNEED)", 0);
		return 0;
	default:
		piece(p, a->p, a->len, &at, &n);
		return fork_touch(p, at, n);
	}
}

/*
 * The brk heap (malloc with M_MMAP_THRESHOLD raised, so big blocks come
 * from brk, and trimmed eagerly): free + malloc shrinks and grows the break,
 * realloc grows the block; either way new pages at addresses used before.
 */
static int remap_heap(struct proc *p)
{
	size_t len = p->page + rbelow(&p->priv, HEAP_MAX - p->page);
	char *h;

	p->st->remaps++;
	if (rbelow(&p->priv, 2)) {
		free(p->heap);
		p->heap = NULL;
		h = malloc(len);
	} else {
		h = realloc(p->heap, len);
	}
	if (!h)
		return fail(p, "malloc", -ENOMEM);
	memset(h, 0x3c, len);
	p->heap = h;
	p->heap_len = len;
	return 0;
}

/* rank 1: change the exposed region; a move re-exposes it. */
static int remap_exposed(struct proc *p)
{
	char *at, *q;
	size_t n;

	p->st->remaps++;
	switch (rbelow(&p->priv, 5)) {
	case 0:
		piece(p, p->exp, EXPOSED, &at, &n);
		return map_fixed(p, at, n);
	case 1:
		piece(p, p->exp, EXPOSED, &at, &n);
		if (munmap(at, n))
			return fail(p, "munmap", 0);
		return map_fixed(p, at, n);
	case 2:
		piece(p, p->exp, EXPOSED, &at, &n);
		if (madvise(at, n, MADV_DONTNEED))
			return fail(p, "madvise(DONTNEED)", 0);
		return 0;
	case 3:
		piece(p, p->exp, EXPOSED, &at, &n);
		return fork_touch(p, at, n);
	default:
		/* Somewhere new (mremap of an unchanged size does not move by itself). */
		CALL(p, zcx_unexpose(p->zcx, p->rkey));
		q = mmap(NULL, EXPOSED, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			 -1, 0);
		if (q == MAP_FAILED)
			return fail(p, "mmap", 0);
		if (move_range(p, p->exp, EXPOSED, q))
			return -1;
		p->exp = q;
		p->st->moves++;
		CALL(p, zcx_expose(p->zcx, p->exp, EXPOSED, ZCX_REMOTE_ALL, &p->rkey));
		return 0;
	}
}

static int maybe_remap(struct proc *p)
{
	int ret = 0;

	if (rbelow(&p->priv, 3))
		return 0;
	p->what = "remap";
	switch (rbelow(&p->priv, 5)) {
	case 0:
	case 1:
		ret = remap_arena(p, &p->snd);
		break;
	case 2:
	case 3:
		ret = remap_arena(p, &p->rcv);
		break;
	default:
		ret = remap_heap(p);
		break;
	}
	drain(p);
	return ret;
}

/* --- buffers and sizes ------------------------------------------------ */

/* Message sizes: 0, 1, inline, around the threshold, 64 KiB+odd, 1 MiB, 16 MiB. */
static size_t pick_size(struct proc *p, bool big)
{
	uint64_t r = rbelow(&p->shared, 100);

	if (r < 5)
		return 0;
	if (r < 10)
		return 1;
	if (r < 30)
		return 2 + rbelow(&p->shared, p->thr > 3 ? p->thr - 3 : 1);
	if (r < 50)
		return p->thr - 2 + rbelow(&p->shared, 5);
	if (r < 65)
		return 64 * 1024 + 2 * rbelow(&p->shared, 512) + 1;
	if (r < 82)
		return p->thr + rbelow(&p->shared, 256 * 1024);
	if (r < 98 || !big)
		return MiB - 64 + rbelow(&p->shared, 128);
	return 16 * MiB - rbelow(&p->shared, 3);
}

/* An offset that comes back often (cached registrations get reused). */
static size_t pick_off(struct proc *p, size_t room)
{
	size_t off = rbelow(&p->priv, 4) * p->page;

	if (rbelow(&p->priv, 2))
		off += rbelow(&p->priv, 64);
	return off <= room ? off : 0;
}

/* A buffer for @len bytes: the arena, or sometimes the brk heap. */
static char *pick_buf(struct proc *p, struct arena *a, size_t len)
{
	if (p->heap && len <= p->heap_len && rbelow(&p->priv, 5) == 0)
		return p->heap + pick_off(p, p->heap_len - len);
	return a->p + pick_off(p, a->len - len);
}

/*
 * Sometimes register ourselves (libzcx's front cache): the buffer, or the
 * whole arena it lies in, a range that comes back after each remap, so
 * that the library must notice its cached registration went stale.
 */
static int maybe_reg(struct proc *p, const void *buf, size_t len, unsigned int access,
		     struct zcx_mr **mr)
{
	const char *c = buf;
	struct arena *a = NULL;

	*mr = NULL;
	if (!len || rbelow(&p->priv, 3))
		return 0;
	if (c >= p->snd.p && c + len <= p->snd.p + p->snd.len)
		a = &p->snd;
	else if (c >= p->rcv.p && c + len <= p->rcv.p + p->rcv.len)
		a = &p->rcv;
	if (a && rbelow(&p->priv, 4) == 0)
		CALL(p, zcx_mr_reg(p->zcx, a->p, a->len, access, mr));
	else
		CALL(p, zcx_mr_reg(p->zcx, buf, len, access, mr));
	return 0;
}

static int unreg(struct proc *p, struct zcx_mr *mr)
{
	if (mr)
		CALL(p, zcx_mr_dereg(p->zcx, mr));
	return 0;
}

/* --- rounds ------------------------------------------------------------ */

static int round_send(struct proc *p)
{
	bool sender = (int)rbelow(&p->shared, 2) == p->rank;
	size_t len = pick_size(p, true);
	uint64_t tag = rnext(&p->shared) & ~CTRL_TAG, ps = pseed(p, p->seq, 0);
	struct zcx_req req = { 0 };
	struct zcx_mr *mr;
	char *buf;

	p->what = "send";
	if (sender) {
		buf = pick_buf(p, &p->snd, len);
		pfill(buf, len, ps);
		if (maybe_reg(p, buf, len, ZCX_ACCESS_READ, &mr))
			return -1;
		if (mr || rbelow(&p->priv, 2)) {
			req.mr = mr;
			CALL(p, zcx_isend(p->ep, p->peer, buf, len, tag, &req));
			CALL(p, zcx_wait(p->ep, &req));
		} else {
			CALL(p, zcx_send(p->ep, p->peer, buf, len, tag));
		}
		p->st->ops++;
		p->st->msgs++;
		return unreg(p, mr);
	}
	size_t extra = rbelow(&p->priv, 2) ? rbelow(&p->priv, 100) : 0;
	uint64_t got_tag = 0;
	ssize_t got;

	p->what = "recv";
	buf = pick_buf(p, &p->rcv, len + extra);
	memset(buf, POISON, len + extra);
	if (maybe_reg(p, buf, len + extra, ZCX_ACCESS_WRITE, &mr))
		return -1;
	if (mr || rbelow(&p->priv, 2)) {
		req.mr = mr;
		/* A wildcard is safe: nothing else is under way. */
		CALL(p, zcx_irecv(p->ep, buf, len + extra, tag, rbelow(&p->priv, 2) ? ~0ULL : 0,
				  &req));
		CALL(p, zcx_wait(p->ep, &req));
		got = (ssize_t)req.len;
		got_tag = req.tag;
	} else {
		got = zcx_recv(p->ep, buf, len + extra, tag, ~0ULL, &got_tag);
		CALL(p, got);
	}
	p->st->ops++;
	p->st->msgs++;
	if ((size_t)got != len || got_tag != tag) {
		p->st->corruptions++;
		fprintf(stderr, "zcx_soak: CORRUPTION pair %d seq %" PRIu64 " recv: %zd bytes "
			"tag %#" PRIx64 ", expected %zu tag %#" PRIx64 "\n", p->pair, p->seq,
			got, got_tag, len, tag);
	} else {
		verify(p, "recv", p->seq, buf, len, ps, extra);
	}
	return unreg(p, mr);
}

struct bmsg {
	size_t len, extra;
	uint64_t tag, ps;
	char *buf;
	struct zcx_mr *mr;
	struct zcx_req req;
};

/* Up to BATCH_MAX messages each way in flight at once. */
static int round_batch(struct proc *p)
{
	struct bmsg m[2][BATCH_MAX];
	unsigned int k[2], d, j, order[BATCH_MAX], n;
	bool wild = rbelow(&p->shared, 4) == 0;
	size_t off[2] = { 0, 0 };

	p->what = "batch";
	memset(m, 0, sizeof(m));
	for (d = 0; d < 2; d++) {
		k[d] = rbelow(&p->shared, BATCH_MAX + 1);
		for (j = 0; j < k[d]; j++) {
			m[d][j].len = pick_size(p, false);
			m[d][j].tag = ((rnext(&p->shared) & 0xffffffffffULL) << 8 | j) & ~CTRL_TAG;
			m[d][j].ps = pseed(p, p->seq, d << 4 | j);
		}
	}
	/* d == p->rank: mine to send; the other direction: mine to receive. */
	for (d = 0; d < 2; d++) {
		struct arena *a = d == (unsigned int)p->rank ? &p->snd : &p->rcv;

		for (j = 0; j < k[d]; j++) {
			struct bmsg *b = &m[d][j];

			b->extra = d == (unsigned int)p->rank ? 0 : rbelow(&p->priv, 40);
			off[d] += rbelow(&p->priv, 3) * p->page + rbelow(&p->priv, 16);
			b->buf = a->p + off[d];
			off[d] += b->len + b->extra;
		}
	}
	bool recv_first = rbelow(&p->priv, 2);

	for (n = 0; n < 2; n++) {
		bool sending = (n == 0) != recv_first;

		d = sending ? (unsigned int)p->rank : 1 - (unsigned int)p->rank;
		for (j = 0; j < k[d]; j++)
			order[j] = j;
		if (!sending && !wild)
			for (j = k[d]; j > 1; j--) {
				unsigned int r = rbelow(&p->priv, j), t = order[j - 1];

				order[j - 1] = order[r];
				order[r] = t;
			}
		for (j = 0; j < k[d]; j++) {
			struct bmsg *b = &m[d][order[j]];

			if (sending) {
				pfill(b->buf, b->len, b->ps);
				if (maybe_reg(p, b->buf, b->len, ZCX_ACCESS_READ, &b->mr))
					return -1;
				b->req.mr = b->mr;
				CALL(p, zcx_isend(p->ep, p->peer, b->buf, b->len, b->tag, &b->req));
			} else {
				memset(b->buf, POISON, b->len + b->extra);
				if (maybe_reg(p, b->buf, b->len + b->extra, ZCX_ACCESS_WRITE, &b->mr))
					return -1;
				b->req.mr = b->mr;
				CALL(p, zcx_irecv(p->ep, b->buf, b->len + b->extra, b->tag,
						  wild ? 0 : ~0ULL, &b->req));
			}
		}
	}
	/* Complete in a random order, then check what came in. */
	for (n = 0; n < k[0] + k[1]; n++) {
		unsigned int pick = rbelow(&p->priv, k[0] + k[1] - n), seen = 0;

		for (d = 0; d < 2; d++)
			for (j = 0; j < k[d]; j++) {
				if (m[d][j].req.done || seen++ != pick)
					continue;
				CALL(p, zcx_wait(p->ep, &m[d][j].req));
			}
	}
	/* Completing one may have completed others: whatever is left, then the statuses. */
	for (d = 0; d < 2; d++)
		for (j = 0; j < k[d]; j++) {
			if (!m[d][j].req.done)
				CALL(p, zcx_wait(p->ep, &m[d][j].req));
			CALL(p, m[d][j].req.status);
		}
	for (d = 0; d < 2; d++)
		for (j = 0; j < k[d]; j++) {
			struct bmsg *b = &m[d][j];

			if (unreg(p, b->mr))
				return -1;
			p->st->ops++;
			p->st->msgs++;
			if (d == (unsigned int)p->rank)
				continue;
			if (b->req.len != b->len || b->req.tag != b->tag) {
				p->st->corruptions++;
				fprintf(stderr, "zcx_soak: CORRUPTION pair %d seq %" PRIu64 " batch "
					"message %u: %zu bytes tag %#" PRIx64 ", expected %zu tag %#"
					PRIx64 "\n", p->pair, p->seq, j, b->req.len, b->req.tag,
					b->len, b->tag);
				continue;
			}
			verify(p, wild ? "batch recv (wildcard)" : "batch recv", p->seq, b->buf,
			       b->len, b->ps, b->extra);
		}
	return 0;
}

/* Control messages of a put/get round: the exposed region's place and key. */
struct ctrl {
	uint64_t addr, rkey;
};

static int ctrl_send(struct proc *p)
{
	struct ctrl c = { (uintptr_t)p->exp, p->rkey };

	CALL(p, zcx_send(p->ep, p->peer, &c, sizeof(c), CTRL_TAG));
	return 0;
}

static int ctrl_recv(struct proc *p)
{
	struct ctrl c;
	uint64_t tag;
	ssize_t n = zcx_recv(p->ep, &c, sizeof(c), CTRL_TAG, ~0ULL, &tag);

	if (n < 0)
		return fail(p, "zcx_recv(control message)", n);
	if (n != sizeof(c))
		return fail(p, "control message", -EPROTO);
	p->raddr = c.addr;
	p->rrkey = c.rkey;
	return 0;
}

/* Offsets in the exposed region that come back often. */
static size_t exp_off(struct proc *p, size_t len)
{
	size_t off = rbelow(&p->shared, 8) * p->page + rbelow(&p->shared, 2) * rbelow(&p->shared, 100);

	return off + len <= EXPOSED ? off : EXPOSED - len;
}

/*
 * Rank 0 puts pattern A into rank 1's exposed region, which rank 1
 * checks; rank 1 writes pattern B there (maybe after remapping it), which
 * rank 0 gets and checks.
 */
static int round_putget(struct proc *p)
{
	size_t len1 = pick_size(p, false), off1 = exp_off(p, len1);
	size_t len2 = pick_size(p, false), off2 = exp_off(p, len2);
	uint64_t ps1 = pseed(p, p->seq, 1), ps2 = pseed(p, p->seq, 2);
	struct zcx_req req = { 0 };
	struct zcx_mr *mr;
	char *buf;

	p->what = "put/get";
	if (p->rank == 1) {
		if (rbelow(&p->priv, 3) == 0 && remap_exposed(p))
			return -1;
		drain(p);
		if (ctrl_send(p) || ctrl_recv(p))	/* go; put done */
			return -1;
		verify(p, "put (checked by its target)", p->seq, p->exp + off1, len1, ps1, 0);
		if (rbelow(&p->priv, 3) == 0 && remap_exposed(p))
			return -1;
		drain(p);
		pfill(p->exp + off2, len2, ps2);
		return ctrl_send(p);			/* ready for the get */
	}
	if (ctrl_recv(p))
		return -1;
	p->what = "put";
	buf = pick_buf(p, &p->snd, len1);
	pfill(buf, len1, ps1);
	if (maybe_reg(p, buf, len1, ZCX_ACCESS_READ, &mr))
		return -1;
	if (mr || rbelow(&p->priv, 2)) {
		req.mr = mr;
		CALL(p, zcx_iput(p->ep, p->peer, buf, len1, p->raddr + off1, p->rrkey, &req));
		CALL(p, zcx_wait(p->ep, &req));
	} else {
		CALL(p, zcx_put(p->ep, p->peer, buf, len1, p->raddr + off1, p->rrkey));
	}
	if (unreg(p, mr))
		return -1;
	p->st->ops++;
	p->st->puts++;
	if (ctrl_send(p) || ctrl_recv(p))
		return -1;
	p->what = "get";
	buf = pick_buf(p, &p->rcv, len2);
	memset(buf, POISON, len2);
	if (maybe_reg(p, buf, len2, ZCX_ACCESS_WRITE, &mr))
		return -1;
	if (mr || rbelow(&p->priv, 2)) {
		memset(&req, 0, sizeof(req));
		req.mr = mr;
		CALL(p, zcx_iget(p->ep, p->peer, buf, len2, p->raddr + off2, p->rrkey, &req));
		CALL(p, zcx_wait(p->ep, &req));
	} else {
		CALL(p, zcx_get(p->ep, p->peer, buf, len2, p->raddr + off2, p->rrkey));
	}
	if (unreg(p, mr))
		return -1;
	p->st->ops++;
	p->st->gets++;
	verify(p, "get", p->seq, buf, len2, ps2, 0);
	return 0;
}

static int round_barrier(struct proc *p)
{
	struct zcx_req req = { 0 };

	p->what = "barrier";
	if (rbelow(&p->priv, 2)) {
		CALL(p, zcx_ibarrier(p->ep, p->bar, &req));
		CALL(p, zcx_wait(p->ep, &req));
	} else {
		CALL(p, zcx_barrier(p->ep, p->bar));
	}
	p->st->ops++;
	p->st->barriers++;
	return 0;
}

/* --- one process of a pair -------------------------------------------- */

static int setup(struct proc *p, bool poll)
{
	struct zcx_addr mine, theirs;
	struct zcx_query q;

	CALL(p, zcx_open(&p->zcx, 0));
	CALL(p, zcx_query(p->zcx, &q));
	p->thr = q.zcopy_threshold > 8 ? q.zcopy_threshold : 4096;
	CALL(p, zcx_ep_create(p->zcx, (poll ? ZCX_EP_POLL : 0) | (net ? ZCX_EP_NET : 0), 0,
			      &p->ep));
	zcx_ep_addr(p->ep, &mine);
	if (xio(p->wr, &mine, sizeof(mine), true) || xio(p->rd, &theirs, sizeof(theirs), false))
		return fail(p, "address exchange", -EPIPE);
	CALL(p, zcx_ep_connect_flags(p->ep, &theirs, net ? ZCX_CONNECT_NET : 0, &p->peer));
	if (p->rank == 0) {
		CALL(p, zcx_barrier_create(p->ep, 2, &mine, &p->bar));
		if (xio(p->wr, &mine, sizeof(mine), true))
			return fail(p, "barrier address", -EPIPE);
	} else {
		if (xio(p->rd, &theirs, sizeof(theirs), false))
			return fail(p, "barrier address", -EPIPE);
		CALL(p, zcx_barrier_join(p->ep, &theirs, &p->bar));
	}
	if (arena_init(p, &p->snd) || arena_init(p, &p->rcv))
		return -1;
	if (p->rank == 1) {
		p->exp = mmap(NULL, EXPOSED, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p->exp == MAP_FAILED)
			return fail(p, "mmap", 0);
		CALL(p, zcx_expose(p->zcx, p->exp, EXPOSED, ZCX_REMOTE_ALL, &p->rkey));
	}
	return remap_heap(p);
}

static int run(struct proc *p, uint64_t deadline)
{
	struct zcx_mr_stats ms;
	uint64_t go;

	for (;;) {
		/* Rank 0 keeps time and tells rank 1 whether to go on. */
		if (p->rank == 0) {
			go = now_ns() < deadline;
			if (xio(p->wr, &go, sizeof(go), true))
				return fail(p, "pipe", -EPIPE);
		} else if (xio(p->rd, &go, sizeof(go), false)) {
			return fail(p, "pipe", -EPIPE);
		}
		if (!go)
			break;
		p->seq++;
		if (maybe_remap(p))
			return -1;
		uint64_t r = rbelow(&p->shared, 100);
		int ret;

		if (p->seq % 64 == 0 || r >= 90)
			ret = round_barrier(p);
		else if (r < 35)
			ret = round_send(p);
		else if (r < 65)
			ret = round_batch(p);
		else
			ret = round_putget(p);
		if (ret)
			return ret;
		if (verbose && p->seq % 256 == 0)
			fprintf(stderr, "zcx_soak: pair %d rank %d: round %" PRIu64 "\n", p->pair,
				p->rank, p->seq);
	}
	p->what = "final barrier";
	if (round_barrier(p))
		return -1;
	drain(p);
	CALL(p, zcx_mr_stats(p->zcx, &ms));
	p->st->kinval = ms.kernel.invalidations;
	p->st->khits = ms.kernel.hits;
	p->st->kmisses = ms.kernel.misses;
	p->st->lib_stale = ms.stale;
	if (p->rank == 1)
		CALL(p, zcx_unexpose(p->zcx, p->rkey));
	return 0;
}

static void proc_main(struct proc *p, bool poll, uint64_t deadline)
{
	int ret;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* Big blocks from brk, and the top given back as soon as freed. */
	mallopt(M_MMAP_THRESHOLD, 64 * MiB);
	mallopt(M_TRIM_THRESHOLD, 128 * 1024);
	mallopt(M_TOP_PAD, 0);
	p->page = (size_t)sysconf(_SC_PAGESIZE);
	p->shared.s = mix(p->seed ^ (uint64_t)p->pair);
	p->priv.s = mix(p->seed ^ ((uint64_t)p->pair << 32) ^ ((uint64_t)p->rank + 1) << 60);
	ret = setup(p, poll);
	if (!ret)
		ret = run(p, deadline);
	p->st->finished = 1;
	if (p->ep)
		zcx_ep_destroy(p->ep);
	if (p->zcx)
		zcx_close(p->zcx);
	_exit(ret || p->st->corruptions ? 1 : 0);
}

/* --- the driver ---------------------------------------------------------- */

static volatile sig_atomic_t ticked;

static void on_alarm(int sig)
{
	(void)sig;
	ticked = 1;
}

static void totals(struct pstats *st, int n, struct pstats *t)
{
	int i, c;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < n; i++) {
		t->ops += st[i].ops;
		t->bytes += st[i].bytes;
		t->msgs += st[i].msgs;
		t->puts += st[i].puts;
		t->gets += st[i].gets;
		t->barriers += st[i].barriers;
		t->remaps += st[i].remaps;
		t->forks += st[i].forks;
		t->moves += st[i].moves;
		t->corruptions += st[i].corruptions;
		t->errors += st[i].errors;
		for (c = 0; c < 6; c++)
			t->events[c] += st[i].events[c];
		t->lost += st[i].lost;
		t->kinval += st[i].kinval;
		t->khits += st[i].khits;
		t->kmisses += st[i].kmisses;
		t->lib_stale += st[i].lib_stale;
	}
}

static void usage(FILE *f)
{
	fprintf(f, "usage: zcx_soak [-t SECONDS] [-p PAIRS] [-s SEED] [-n] [-N] [-v]\n"
		"  -t SECONDS  how long each pair runs (default 60)\n"
		"  -p PAIRS    process pairs (default 2)\n"
		"  -s SEED     seed of every choice (default: from the clock, printed)\n"
		"  -n          no polling endpoints (default: odd pairs use ZCX_EP_POLL)\n"
		"  -N          through the network backend (zcx_ib listening on an RDMA device)\n"
		"  -v          progress of each pair\n");
}

int main(int argc, char **argv)
{
	unsigned long secs = 60, pairs = 2;
	uint64_t seed = now_ns() ^ (uint64_t)getpid() << 32, start, deadline;
	bool nopoll = false, failed = false;
	struct pstats *st, t;
	pid_t *pids;
	int opt, i, alive;
	char *end;

	while ((opt = getopt(argc, argv, "t:p:s:nNvh")) != -1) {
		switch (opt) {
		case 't':
			secs = strtoul(optarg, &end, 0);
			if (*end || !secs)
				goto bad;
			break;
		case 'p':
			pairs = strtoul(optarg, &end, 0);
			if (*end || !pairs || pairs > 64)
				goto bad;
			break;
		case 's':
			seed = strtoull(optarg, &end, 0);
			if (*end)
				goto bad;
			break;
		case 'n':
			nopoll = true;
			break;
		case 'N':
			net = true;
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			goto bad;
		}
	}
	if (optind != argc)
		goto bad;

	st = mmap(NULL, 2 * pairs * sizeof(*st), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pids = calloc(2 * pairs, sizeof(*pids));
	if (st == MAP_FAILED || !pids) {
		perror("zcx_soak: memory");
		return 1;
	}
	printf("zcx_soak: %lu pairs, %lu s, seed %#" PRIx64 "\n", pairs, secs, seed);
	fflush(NULL);
	start = now_ns();
	deadline = start + secs * 1000000000ULL;
	for (i = 0; i < (int)pairs; i++) {
		int ab[2], ba[2], r;

		if (pipe(ab) || pipe(ba)) {
			perror("zcx_soak: pipe");
			return 1;
		}
		for (r = 0; r < 2; r++) {
			pid_t pid = fork();

			if (pid < 0) {
				perror("zcx_soak: fork");
				return 1;
			}
			if (pid == 0) {
				struct proc p = {
					.pair = i, .rank = r, .seed = seed, .st = &st[2 * i + r],
					.rd = r ? ab[0] : ba[0], .wr = r ? ba[1] : ab[1],
				};

				close(r ? ab[1] : ba[1]);
				close(r ? ba[0] : ab[0]);
				proc_main(&p, !nopoll && (i & 1), deadline);
			}
			pids[2 * i + r] = pid;
		}
		close(ab[0]);
		close(ab[1]);
		close(ba[0]);
		close(ba[1]);
	}

	/* Reap; every 10 s a progress line; past the deadline + 300 s, a hang. */
	struct sigaction sa = { .sa_handler = on_alarm };

	sigaction(SIGALRM, &sa, NULL);
	alarm(10);
	for (alive = 2 * (int)pairs; alive > 0;) {
		int status;
		pid_t pid = waitpid(-1, &status, 0);

		if (pid < 0 && errno == EINTR && ticked) {
			ticked = 0;
			totals(st, 2 * (int)pairs, &t);
			fprintf(stderr, "zcx_soak: %3.0f s: %" PRIu64 " ops, %" PRIu64 " MiB verified, "
				"%" PRIu64 " remaps, %" PRIu64 " corruptions, %" PRIu64 " errors\n",
				(now_ns() - start) / 1e9, t.ops, t.bytes / MiB, t.remaps,
				t.corruptions, t.errors);
			if (now_ns() > deadline + 300 * 1000000000ULL) {
				fprintf(stderr, "zcx_soak: still running 300 s past the end: hang; "
					"killing the pairs\n");
				for (i = 0; i < 2 * (int)pairs; i++)
					if (pids[i] > 0)
						kill(pids[i], SIGKILL);
				failed = true;
			}
			alarm(10);
			continue;
		}
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			perror("zcx_soak: waitpid");
			return 1;
		}
		for (i = 0; i < 2 * (int)pairs; i++)
			if (pids[i] == pid)
				break;
		if (i == 2 * (int)pairs)
			continue;
		pids[i] = 0;
		alive--;
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			failed = true;
			if (WIFSIGNALED(status))
				fprintf(stderr, "zcx_soak: pair %d rank %d killed by signal %d\n",
					i / 2, i % 2, WTERMSIG(status));
			else if (!st[i].corruptions && !st[i].errors)
				fprintf(stderr, "zcx_soak: pair %d rank %d exited %d\n", i / 2,
					i % 2, WEXITSTATUS(status));
		}
	}
	alarm(0);
	totals(st, 2 * (int)pairs, &t);
	if (t.corruptions || t.errors)
		failed = true;
	double took = (now_ns() - start) / 1e9;
	uint64_t seen = t.lost;

	for (i = 1; i < 6; i++)
		seen += t.events[i];

	printf("zcx_soak: %.0f s, %" PRIu64 " operations (%" PRIu64 " messages, %" PRIu64
	       " puts, %" PRIu64 " gets, %" PRIu64 " barriers), %" PRIu64 " bytes verified "
	       "(%.1f GiB)\n", took, t.ops, t.msgs, t.puts, t.gets, t.barriers, t.bytes,
	       t.bytes / (1024.0 * MiB));
	printf("zcx_soak: %" PRIu64 " remaps (%" PRIu64 " moves, %" PRIu64 " forks); "
	       "invalidations seen: %" PRIu64 " (events: unmap %" PRIu64 ", clear %" PRIu64
	       ", release %" PRIu64 ", migrate %" PRIu64 ", exclusive %" PRIu64 ", lost %"
	       PRIu64 "; the contexts' counters: %" PRIu64 "); kernel cache hits %" PRIu64
	       ", misses %" PRIu64 "; library stale %" PRIu64 "\n", t.remaps, t.moves,
	       t.forks, seen, t.events[ZCX_EVENT_UNMAP],
	       t.events[ZCX_EVENT_CLEAR], t.events[ZCX_EVENT_RELEASE],
	       t.events[ZCX_EVENT_MIGRATE], t.events[ZCX_EVENT_EXCLUSIVE], t.lost, t.kinval, t.khits,
	       t.kmisses, t.lib_stale);
	printf("soak-result: seconds=%.0f ops=%" PRIu64 " bytes=%" PRIu64 " invalidations=%"
	       PRIu64 " remaps=%" PRIu64 " corruptions=%" PRIu64 " errors=%" PRIu64
	       " verdict=%s\n", took, t.ops, t.bytes, seen, t.remaps, t.corruptions,
	       t.errors, failed ? "FAIL" : "PASS");
	return failed ? 1 : 0;
bad:
	usage(stderr);
	return 2;
}
