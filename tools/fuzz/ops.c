// SPDX-License-Identifier: GPL-2.0-only
/*
 * ops.c - zcx_fuzz's ioctl operations, and the choice of the next one.
 *
 * Every ioctl structure is filled from a mix of plausible values (our own
 * buffers, lengths around page boundaries, handles, keys and addresses
 * learned from earlier successful calls of any context or process) and
 * random bits.  Any errno is an acceptable answer; what is not is
 * success for a call that the ABI says must fail (a non-zero reserved
 * field or unknown flag bit, a structure smaller than the first published
 * size or with non-zero bytes past the known ones), or output the ABI
 * rules out (reserved output fields not zero, ring offsets outside the
 * mapping, read() returning part of an event).
 */
#include "fuzz.h"

#include <poll.h>
#include <stddef.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* An endpoint number, with the context it came from. */
static uint32_t pick_ep(struct thr *t, int *fd)
{
	uint64_t v;
	int ci;

	*fd = pick_fd(t, &ci);
	if (chance(t, 90) && recall(t, &t->pr->eps, &v)) {
		/* Mostly on its own context, sometimes on another one. */
		if (chance(t, 80) && t->pr->fds[(v >> 32) % NCTX] >= 0)
			*fd = __atomic_load_n(&t->pr->fds[(v >> 32) % NCTX], __ATOMIC_RELAXED);
		return (uint32_t)v;
	}
	return (uint32_t)pick_u64(t);
}

/* Set a must-be-zero field to non-zero bits, now and then; *d records it. */
#define DIRTY(t, d, f) do {						\
	if (chance((t), 3)) {						\
		do (f) = (__typeof__(f))rnd(t); while (!(f));		\
		(d) = 1;						\
	}								\
} while (0)
/* Set unknown bits in a flags field whose known bits are @known. */
#define DIRTY_FLAGS(t, d, f, known) do {				\
	if (chance((t), 3)) {						\
		__typeof__(f) x_;					\
		do x_ = (__typeof__(f))rnd(t) & ~(__typeof__(f))(known); while (!x_); \
		(f) |= x_;						\
		(d) = 1;						\
	}								\
} while (0)
#define DIRTY_ARRAY(t, d, a) do {					\
	for (size_t i_ = 0; i_ < sizeof(a) / sizeof((a)[0]); i_++)	\
		DIRTY(t, d, (a)[i_]);					\
} while (0)

static int nonzero(const void *p, size_t n)
{
	const unsigned char *c = p;

	while (n--)
		if (*c++)
			return 1;
	return 0;
}

/* The ABI check after a call: a dirty argument must not have succeeded. */
static int verdict(struct thr *t, int r, int dirty, const char *what)
{
	char why[160];

	if (r >= 0 && dirty) {
		snprintf(why, sizeof(why), "ABI: %s succeeded with a non-zero reserved field or "
			 "unknown flag", what);
		fuzz_fail(t, why);
	}
	return r;
}

/* --- ioctl operations ------------------------------------------------------ */

static int op_open(struct thr *t)
{
	struct proc *pr = t->pr;
	int ci, fd, flags = O_RDWR | O_CLOEXEC;

	for (ci = 0; ci < NCTX && pr->fds[ci] >= 0; ci++)
		;
	if (ci == NCTX)
		return SKIP;
	if (chance(t, 10))
		flags |= O_NONBLOCK;
	if (chance(t, 4))
		flags = (flags & ~O_RDWR) | (chance(t, 50) ? O_RDONLY : O_WRONLY);
	note(t, "ctx%d flags=%#x", ci, flags);
	fd = open(ZCX_DEVICE_PATH, flags);
	if (fd < 0)
		return -errno;
	pthread_mutex_lock(&pr->lock);
	if (pr->fds[ci] >= 0) {		/* another thread took the slot */
		pthread_mutex_unlock(&pr->lock);
		close(fd);
		return 0;
	}
	__atomic_store_n(&pr->fds[ci], fd, __ATOMIC_RELAXED);
	if (!pr->in_child && chance(t, 60))
		map_status(t, ci, fd);
	pthread_mutex_unlock(&pr->lock);
	return 0;
}

/* Close while other threads may be using the descriptor. */
static int op_close(struct thr *t)
{
	struct proc *pr = t->pr;
	int ci = below(t, NCTX), fd;

	pthread_mutex_lock(&pr->lock);
	fd = pr->fds[ci];
	__atomic_store_n(&pr->fds[ci], -1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&pr->lock);
	if (fd < 0)
		return SKIP;
	note(t, "ctx%d fd=%d", ci, fd);
	return close(fd) ? -errno : 0;
}

static int op_query(struct thr *t)
{
	struct zcx_query q;
	unsigned char *g = t->garbage;
	int ci, fd = pick_fd(t, &ci), d = 0, r;
	size_t size;

	memset(&q, 0, sizeof(q));
	if (chance(t, 15)) {
		/*
		 * Another size: smaller than the first published one must
		 * fail, larger ones succeed only if the unknown tail is zero.
		 */
		size = chance(t, 30) ? below(t, sizeof(q)) : sizeof(q) + 1 + below(t, 256);
		memset(g, 0, size);
		if (size > sizeof(q) && chance(t, 50))
			g[sizeof(q) + below(t, size - sizeof(q))] = 1 + below(t, 255);
		d = size < sizeof(q) || nonzero(g + sizeof(q), size > sizeof(q) ? size - sizeof(q) : 0);
		note(t, "fd=%d size=%zu tail%s", fd, size, d ? " dirty" : " zero");
		r = xioctl(t, fd, _IOC(_IOC_READ | _IOC_WRITE, ZCX_IOC_MAGIC, 0, size), g);
		return verdict(t, r, d, "QUERY of another size");
	}
	DIRTY(t, d, q.flags);
	DIRTY_ARRAY(t, d, q.reserved);
	note(t, "fd=%d flags=%#x dirty=%d", fd, q.flags, d);
	r = verdict(t, xioctl(t, fd, ZCX_IOC_QUERY, &q), d, "QUERY");
	if (r == 0 && (nonzero(q.reserved, sizeof(q.reserved)) || q.abi_version != ZCX_ABI_VERSION))
		fuzz_fail(t, "ABI: QUERY output reserved not zero or wrong abi_version");
	return r;
}

static int op_mr_reg(struct thr *t)
{
	struct zcx_mr_reg m;
	int ci, fd = pick_fd(t, &ci), d = 0, r;

	memset(&m, 0, sizeof(m));
	m.addr = pick_addr(t);
	m.length = pick_len(t);
	m.access = chance(t, 92) ? 1 + below(t, 3) : (__u32)pick_u64(t);
	if (m.access & ~ZCX_ACCESS_ALL)
		d = 1;
	DIRTY(t, d, m.flags);
	DIRTY_ARRAY(t, d, m.reserved);
	if (chance(t, 10))
		m.handle = rnd(t), m.slot = (__u32)rnd(t);	/* outputs: ignored */
	note(t, "fd=%d addr=%#llx len=%#llx access=%#x dirty=%d", fd,
	     (unsigned long long)m.addr, (unsigned long long)m.length, m.access, d);
	r = verdict(t, xioctl(t, fd, ZCX_IOC_MR_REG, &m), d, "MR_REG");
	if (r)
		return r;
	learn(&t->pr->handles, m.handle);
	__atomic_store_n(&t->sh->handle[__atomic_fetch_add(&t->sh->nhandle, 1, __ATOMIC_RELAXED) %
					BOARD_N], m.handle, __ATOMIC_RELAXED);
	if (m.addr + m.length < m.addr || !m.length)
		fuzz_fail(t, "ABI: MR_REG accepted an empty or overflowing range");
	else if (m.region_start > m.addr ||
		 m.region_start + m.region_length < m.addr + m.length ||
		 ZCX_HANDLE_SLOT(m.handle) != m.slot || m.result > ZCX_MR_HIT ||
		 nonzero(m.reserved, sizeof(m.reserved)))
		fuzz_fail(t, "ABI: MR_REG output inconsistent (region does not cover the "
			  "request, slot, result or reserved)");
	return r;
}

static int op_mr_dereg(struct thr *t)
{
	struct zcx_mr_dereg m;
	int ci, fd = pick_fd(t, &ci), d = 0;

	memset(&m, 0, sizeof(m));
	m.handle = pick_handle(t);
	DIRTY(t, d, m.flags);
	DIRTY(t, d, m.pad);
	DIRTY_ARRAY(t, d, m.reserved);
	note(t, "fd=%d handle=%#llx dirty=%d", fd, (unsigned long long)m.handle, d);
	return verdict(t, xioctl(t, fd, ZCX_IOC_MR_DEREG, &m), d, "MR_DEREG");
}

static int op_mr_flush(struct thr *t)
{
	struct zcx_mr_flush f;
	int ci, fd = pick_fd(t, &ci), d = 0, r;

	memset(&f, 0, sizeof(f));
	DIRTY(t, d, f.flags);
	DIRTY_ARRAY(t, d, f.reserved);
	note(t, "fd=%d dirty=%d", fd, d);
	r = verdict(t, xioctl(t, fd, ZCX_IOC_MR_FLUSH, &f), d, "MR_FLUSH");
	if (r == 0 && nonzero(f.reserved, sizeof(f.reserved)))
		fuzz_fail(t, "ABI: MR_FLUSH output reserved not zero");
	return r;
}

static int op_limits(struct thr *t)
{
	static const __u32 entries[] = { 0, 1, 2, 16, 1024, 8192, 1U << 20, ~0U };
	struct zcx_limits l;
	int ci, fd = pick_fd(t, &ci), d = 0, r;

	memset(&l, 0, sizeof(l));
	l.flags = chance(t, 50) ? 0 : (__u32)below(t, 4);
	DIRTY_FLAGS(t, d, l.flags, ZCX_LIMIT_SET_ENTRIES | ZCX_LIMIT_SET_BYTES);
	/* Small limits starve everything else: rarely. */
	l.cache_entries = chance(t, 80) ? entries[4 + below(t, 4)] : entries[below(t, 4)];
	l.cache_bytes = chance(t, 70) ? 0 : chance(t, 50) ? (below(t, 64) + 1) << 20 : pick_u64(t);
	DIRTY_ARRAY(t, d, l.reserved);
	note(t, "fd=%d flags=%#x entries=%u bytes=%#llx dirty=%d", fd, l.flags, l.cache_entries,
	     (unsigned long long)l.cache_bytes, d);
	r = verdict(t, xioctl(t, fd, ZCX_IOC_LIMITS, &l), d, "LIMITS");
	if (r == 0 && nonzero(l.reserved, sizeof(l.reserved)))
		fuzz_fail(t, "ABI: LIMITS output reserved not zero");
	return r;
}

static int op_mon_add(struct thr *t)
{
	struct zcx_mon_add m;
	int ci, fd = pick_fd(t, &ci), d = 0, r;

	memset(&m, 0, sizeof(m));
	/* A monitor pins and writes nothing: any address will do. */
	m.addr = chance(t, 15) ? (uintptr_t)&m : chance(t, 10) ? rnd(t) : pick_addr(t);
	m.length = pick_len(t);
	m.cookie = rnd(t);
	DIRTY(t, d, m.flags);
	DIRTY_ARRAY(t, d, m.reserved);
	note(t, "fd=%d addr=%#llx len=%#llx dirty=%d", fd, (unsigned long long)m.addr,
	     (unsigned long long)m.length, d);
	r = verdict(t, xioctl(t, fd, ZCX_IOC_MON_ADD, &m), d, "MON_ADD");
	if (r == 0)
		learn(&t->pr->handles, m.handle);
	return r;
}

static int ring_geometry_ok(const struct zcx_ep_create *c)
{
	const struct zcx_ring_offsets *o = &c->offsets;
	uint64_t size = c->mmap_size;

	return c->sq_entries && !(c->sq_entries & (c->sq_entries - 1)) &&
	       c->cq_entries == 2 * c->sq_entries &&
	       o->sq_head + 4 <= size && o->sq_tail + 4 <= size && o->sq_flags + 4 <= size &&
	       o->sq_mask + 4 <= size && o->sq_entries + 4 <= size &&
	       o->cq_head + 4 <= size && o->cq_tail + 4 <= size &&
	       o->cq_mask + 4 <= size && o->cq_entries + 4 <= size &&
	       o->sqes + (uint64_t)c->sq_entries * sizeof(struct zcx_sqe) <= size &&
	       o->cqes + (uint64_t)c->cq_entries * sizeof(struct zcx_cqe) <= size;
}

static int op_ep_create(struct thr *t)
{
	static const __u32 sizes[] = { 0, 1, 2, 3, 4, 8, 16, 64, 100, 1024, 32768, 32769, 1U << 31, ~0U };
	struct proc *pr = t->pr;
	struct zcx_ep_create c;
	struct ringinfo *ri;
	struct fmap m;
	int ci, fd = pick_fd(t, &ci), d = 0, r;
	void *p;

	memset(&c, 0, sizeof(c));
	c.flags = (chance(t, 10) ? ZCX_EP_POLL : 0) | (chance(t, 30) ? ZCX_EP_ANY_USER : 0);
	DIRTY_FLAGS(t, d, c.flags, ZCX_EP_FLAGS);
	/* Big rings are megabytes each: seldom. */
	c.sq_entries = chance(t, 90) ? sizes[below(t, 9)] : sizes[9 + below(t, 5)];
	DIRTY_ARRAY(t, d, c.reserved);
	if (chance(t, 10))
		c.mmap_offset = rnd(t), c.ep = (__u32)rnd(t);	/* outputs */
	note(t, "fd=%d flags=%#x sq=%u dirty=%d", fd, c.flags, c.sq_entries, d);
	r = verdict(t, xioctl(t, fd, ZCX_IOC_EP_CREATE, &c), d, "EP_CREATE");
	if (r)
		return r;
	learn(&pr->eps, (uint64_t)ci << 32 | c.ep);
	board_put_addr(t, &c.addr);
	if (!ring_geometry_ok(&c) || nonzero(c.reserved, sizeof(c.reserved))) {
		fuzz_fail(t, "ABI: EP_CREATE ring geometry outside mmap_size, or reserved not zero");
		return r;
	}
	pthread_mutex_lock(&pr->lock);
	ri = &pr->rings[pr->nrings++ % NRINGS];
	ri->ctx = ci;
	ri->ep = c.ep;
	ri->sq_entries = c.sq_entries;
	ri->cq_entries = c.cq_entries;
	ri->offset = c.mmap_offset;
	ri->size = c.mmap_size;
	ri->off = c.offsets;
	if (!pr->in_child && chance(t, 75)) {
		p = mmap(NULL, c.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, c.mmap_offset);
		if (p != MAP_FAILED) {
			memset(&m, 0, sizeof(m));
			m.p = p;
			m.len = m.safe = c.mmap_size;
			m.kind = FM_RING;
			m.ctx = ci;
			m.writable = 1;
			m.ep = c.ep;
			m.sq_entries = c.sq_entries;
			m.cq_entries = c.cq_entries;
			m.off = c.offsets;
			if (add_map(pr, &m) < 0)
				munmap(p, c.mmap_size);
		}
	}
	pthread_mutex_unlock(&pr->lock);
	return r;
}

static int op_ep_destroy(struct thr *t)
{
	struct zcx_ep_destroy e;
	int fd, d = 0;

	memset(&e, 0, sizeof(e));
	e.ep = pick_ep(t, &fd);
	DIRTY(t, d, e.flags);
	DIRTY_ARRAY(t, d, e.reserved);
	note(t, "fd=%d ep=%u dirty=%d", fd, e.ep, d);
	return verdict(t, xioctl(t, fd, ZCX_IOC_EP_DESTROY, &e), d, "EP_DESTROY");
}

static int op_ep_connect(struct thr *t)
{
	struct zcx_ep_connect c;
	int fd, d = 0, r;

	memset(&c, 0, sizeof(c));
	c.ep = pick_ep(t, &fd);
	board_get_addr(t, &c.addr, ZCX_ADDR_ENDPOINT);
	DIRTY(t, d, c.flags);
	DIRTY(t, d, c.pad);
	DIRTY_ARRAY(t, d, c.reserved);
	note(t, "fd=%d ep=%u kind=%u id=%llu key=%#llx dirty=%d", fd, c.ep, c.addr.kind,
	     (unsigned long long)c.addr.id, (unsigned long long)c.addr.key, d);
	r = verdict(t, xioctl(t, fd, ZCX_IOC_EP_CONNECT, &c), d, "EP_CONNECT");
	if (r == 0)
		learn(&t->pr->peers, c.peer);
	return r;
}

/* A submission: mostly well-formed, about our buffers and learned peers. */
static void fill_sqe(struct thr *t, struct zcx_sqe *s)
{
	uint64_t v = 0;

	memset(s, 0, sizeof(*s));
	s->opcode = chance(t, 93) ? (__u8)below(t, 6) : (__u8)rnd(t);
	if (chance(t, 3))
		s->flags = (__u8)rnd(t);
	if (chance(t, 3))
		s->reserved = (__u16)rnd(t);
	if (s->opcode == ZCX_OP_BARRIER)
		s->peer = recall(t, &t->pr->bars, &v) && chance(t, 90) ? (__u32)v : (__u32)pick_u64(t);
	else
		s->peer = recall(t, &t->pr->peers, &v) && chance(t, 90) ? (__u32)v : (__u32)pick_u64(t);
	s->user_data = rnd(t);
	s->addr = pick_addr(t);
	s->len = chance(t, 60) ? below(t, 3 * t->pr->page) : pick_len(t);
	s->tag = chance(t, 70) ? below(t, 4) : rnd(t);
	if (s->opcode == ZCX_OP_PUT || s->opcode == ZCX_OP_GET)
		s->rkey = board_get_rkey(t, &v), s->remote_addr = v;
	else
		s->tag_mask = chance(t, 50) ? 0 : chance(t, 50) ? ~0ULL : rnd(t);
	if (s->opcode == ZCX_OP_BARRIER && chance(t, 80))
		s->tag = below(t, 8);
	s->handle = chance(t, 60) ? 0 : pick_handle(t);
}

static __u32 *ring_u32(struct fmap *m, __u32 off)
{
	return (uint64_t)off + 4 <= m->safe ? (__u32 *)(m->p + off) : NULL;
}

/*
 * Submit to a mapped ring (under the lock, so that no other thread of
 * ours unmaps it meanwhile), reap its completions, then ring the
 * doorbell without the lock.  @garbage: scribble over the ring instead.
 */
int enter_op(struct thr *t, int fmi, int garbage)
{
	struct proc *pr = t->pr;
	struct zcx_enter e;
	struct fmap *m;
	__u32 *sqt, *cqh, *cqt, tail, head, n, i;
	int fd = -1, d = 0;

	memset(&e, 0, sizeof(e));
	pthread_mutex_lock(&pr->lock);
	if (fmi < 0)
		fmi = below(t, NMAPS);
	m = &pr->maps[fmi];
	if (m->kind == FM_RING) {
		fd = __atomic_load_n(&pr->fds[m->ctx], __ATOMIC_RELAXED);
		e.ep = m->ep;
		sqt = ring_u32(m, m->off.sq_tail);
		cqh = ring_u32(m, m->off.cq_head);
		cqt = ring_u32(m, m->off.cq_tail);
		if (garbage) {
			static const size_t fields[] = {
				offsetof(struct zcx_ring_offsets, sq_head),
				offsetof(struct zcx_ring_offsets, sq_tail),
				offsetof(struct zcx_ring_offsets, sq_flags),
				offsetof(struct zcx_ring_offsets, sq_mask),
				offsetof(struct zcx_ring_offsets, sq_entries),
				offsetof(struct zcx_ring_offsets, cq_head),
				offsetof(struct zcx_ring_offsets, cq_tail),
				offsetof(struct zcx_ring_offsets, cq_mask),
				offsetof(struct zcx_ring_offsets, cq_entries),
			};
			__u32 off, *f, val = (__u32)pick_u64(t);
			uint64_t at;

			memcpy(&off, (char *)&m->off + fields[below(t, 9)], sizeof(off));
			f = ring_u32(m, off);
			if (f && chance(t, 60)) {
				if (chance(t, 50))
					val += __atomic_load_n(f, __ATOMIC_RELAXED);
				__atomic_store_n(f, val, __ATOMIC_RELEASE);
				note(t, "ep=%u field@%u=%#x", m->ep, off, val);
			} else {
				at = below(t, m->safe);
				n = 1 + below(t, 64);
				n = at + n > m->safe ? m->safe - at : n;
				for (i = 0; i < n; i++)
					m->p[at + i] = (char)rnd(t);
				note(t, "ep=%u %u random bytes@%llu", m->ep, n, (unsigned long long)at);
			}
		} else if (sqt && m->sq_entries &&
			   m->off.sqes + (uint64_t)m->sq_entries * sizeof(struct zcx_sqe) <= m->safe) {
			struct zcx_sqe *sqes = (void *)(m->p + m->off.sqes), s;

			n = 1 + below(t, 4);
			tail = __atomic_load_n(sqt, __ATOMIC_RELAXED);
			for (i = 0; i < n; i++) {
				fill_sqe(t, &s);
				memcpy(&sqes[(tail + i) & (m->sq_entries - 1)], &s, sizeof(s));
			}
			__atomic_store_n(sqt, tail + n, __ATOMIC_RELEASE);
			note(t, "ep=%u %u sqes, first op %u peer %u addr %#llx len %#llx", m->ep, n,
			     sqes[tail & (m->sq_entries - 1)].opcode, sqes[tail & (m->sq_entries - 1)].peer,
			     (unsigned long long)sqes[tail & (m->sq_entries - 1)].addr,
			     (unsigned long long)sqes[tail & (m->sq_entries - 1)].len);
			e.to_submit = n;
		}
		/* Reap: what the module completed since, by result. */
		if (cqh && cqt && m->cq_entries &&
		    m->off.cqes + (uint64_t)m->cq_entries * sizeof(struct zcx_cqe) <= m->safe) {
			struct zcx_cqe *cqes = (void *)(m->p + m->off.cqes);

			head = __atomic_load_n(cqh, __ATOMIC_RELAXED);
			tail = __atomic_load_n(cqt, __ATOMIC_ACQUIRE);
			/* (Not counted when our own garbage moved cq_head.) */
			n = tail - head > m->cq_entries ? 0 : tail - head;
			for (i = 0; i < n; i++)
				stat_add(t, OP_CQE, cqes[(head + i) & (m->cq_entries - 1)].res);
			__atomic_store_n(cqh, tail, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&pr->lock);
	if (fd < 0)
		e.ep = pick_ep(t, &fd);
	if (chance(t, 15))
		e.flags |= ZCX_ENTER_GETEVENTS;
	if (chance(t, 10))
		e.flags |= ZCX_ENTER_SQ_WAKEUP;
	DIRTY_FLAGS(t, d, e.flags, ZCX_ENTER_FLAGS);
	if (chance(t, 30))
		e.to_submit = (__u32)pick_u64(t);
	e.min_complete = chance(t, 70) ? below(t, 3) : (__u32)pick_u64(t);
	DIRTY_ARRAY(t, d, e.reserved);
	if (!t->desc[0])
		note(t, "fd=%d ep=%u flags=%#x submit=%u min=%u dirty=%d", fd, e.ep, e.flags,
		     e.to_submit, e.min_complete, d);
	/* Blocks until min_complete; the ticker interrupts it (EINTR). */
	return verdict(t, xioctl(t, fd, ZCX_IOC_ENTER, &e), d, "ENTER");
}

static int op_expose(struct thr *t)
{
	struct zcx_expose x;
	int ci, fd = pick_fd(t, &ci), d = 0, r;

	memset(&x, 0, sizeof(x));
	x.addr = pick_addr(t);
	x.length = pick_len(t);
	x.rights = chance(t, 92) ? 1 + below(t, 3) : (__u32)pick_u64(t);
	if (x.rights & ~ZCX_REMOTE_ALL)
		d = 1;
	DIRTY(t, d, x.flags);
	DIRTY_ARRAY(t, d, x.reserved);
	note(t, "fd=%d addr=%#llx len=%#llx rights=%#x dirty=%d", fd, (unsigned long long)x.addr,
	     (unsigned long long)x.length, x.rights, d);
	r = verdict(t, xioctl(t, fd, ZCX_IOC_EXPOSE, &x), d, "EXPOSE");
	if (r == 0) {
		learn(&t->pr->rkeys, x.rkey);
		board_put_rkey(t, x.rkey, x.addr, x.length);
	}
	return r;
}

static int op_unexpose(struct thr *t)
{
	struct zcx_unexpose u;
	uint64_t v;
	int ci, fd = pick_fd(t, &ci), d = 0;

	memset(&u, 0, sizeof(u));
	if (chance(t, 60) && recall(t, &t->pr->rkeys, &v))
		u.rkey = v;
	else
		u.rkey = board_get_rkey(t, &v);
	DIRTY(t, d, u.flags);
	DIRTY(t, d, u.pad);
	DIRTY_ARRAY(t, d, u.reserved);
	note(t, "fd=%d rkey=%#llx dirty=%d", fd, (unsigned long long)u.rkey, d);
	return verdict(t, xioctl(t, fd, ZCX_IOC_UNEXPOSE, &u), d, "UNEXPOSE");
}

/* Map a barrier's state page, so that bar_arrive can use it. */
static void map_bar(struct thr *t, int fd, uint32_t ep, uint32_t bar, uint64_t offset)
{
	struct proc *pr = t->pr;
	struct fmap m;
	int ci;
	void *p;

	if (pr->in_child || chance(t, 30))
		return;
	for (ci = 0; ci < NCTX && pr->fds[ci] != fd; ci++)
		;
	pthread_mutex_lock(&pr->lock);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset);
	if (p != MAP_FAILED) {
		memset(&m, 0, sizeof(m));
		m.p = p;
		m.len = m.safe = 4096;
		m.kind = FM_BAR;
		m.ctx = ci % NCTX;
		m.writable = 1;
		m.ep = ep;
		m.bar = bar;
		if (add_map(pr, &m) < 0)
			munmap(p, 4096);
	}
	pthread_mutex_unlock(&pr->lock);
}

static int op_bar_create(struct thr *t)
{
	struct zcx_bar_create b;
	int fd, d = 0, r;
	__u32 members = t->sh->nprocs * t->sh->nthreads;

	memset(&b, 0, sizeof(b));
	b.ep = pick_ep(t, &fd);
	switch (below(t, 6)) {
	case 0: b.nprocs = 1; break;
	case 1: b.nprocs = 2; break;
	case 2: b.nprocs = members; break;
	case 3: b.nprocs = 1 + below(t, members + 1); break;
	case 4: b.nprocs = ZCX_MAX_BARRIER_PROCS + below(t, 2); break;
	default: b.nprocs = (__u32)pick_u64(t); break;
	}
	DIRTY(t, d, b.flags);
	DIRTY_ARRAY(t, d, b.reserved);
	note(t, "fd=%d ep=%u nprocs=%u dirty=%d", fd, b.ep, b.nprocs, d);
	r = verdict(t, xioctl(t, fd, ZCX_IOC_BAR_CREATE, &b), d, "BAR_CREATE");
	if (r == 0) {
		learn(&t->pr->bars, b.bar);
		board_put_addr(t, &b.addr);
		map_bar(t, fd, b.ep, b.bar, b.mmap_offset);
	}
	return r;
}

static int op_bar_join(struct thr *t)
{
	struct zcx_bar_join b;
	int fd, d = 0, r;

	memset(&b, 0, sizeof(b));
	b.ep = pick_ep(t, &fd);
	board_get_addr(t, &b.addr, ZCX_ADDR_BARRIER);
	DIRTY(t, d, b.flags);
	DIRTY_ARRAY(t, d, b.reserved);
	note(t, "fd=%d ep=%u kind=%u id=%llu dirty=%d", fd, b.ep, b.addr.kind,
	     (unsigned long long)b.addr.id, d);
	r = verdict(t, xioctl(t, fd, ZCX_IOC_BAR_JOIN, &b), d, "BAR_JOIN");
	if (r == 0) {
		learn(&t->pr->bars, b.bar);
		map_bar(t, fd, b.ep, b.bar, b.mmap_offset);
	}
	return r;
}

/*
 * Arrive at a barrier through its state page as the ABI describes (or
 * scribble over it), then maybe wait in the module with ZCX_OP_BARRIER
 * on a ring of the same endpoint.
 */
static int op_bar_arrive(struct thr *t)
{
	struct proc *pr = t->pr;
	struct zcx_bar_state *s;
	struct fmap *m;
	int i, fmi, ring = -1;
	__u32 k, now;

	pthread_mutex_lock(&pr->lock);
	fmi = below(t, NMAPS);
	m = &pr->maps[fmi];
	if (m->kind != FM_BAR) {
		pthread_mutex_unlock(&pr->lock);
		return SKIP;
	}
	s = (struct zcx_bar_state *)m->p;
	if (chance(t, 5)) {
		__u32 *f[] = { &s->arrived, &s->round, &s->broken, &s->sleepers };
		__atomic_store_n(f[below(t, 4)], (__u32)pick_u64(t), __ATOMIC_RELAXED);
		note(t, "bar=%u garbage into the state page", m->bar);
	} else {
		k = __atomic_load_n(&s->round, __ATOMIC_ACQUIRE);
		now = __atomic_add_fetch(&s->arrived, 1, __ATOMIC_ACQ_REL);
		note(t, "bar=%u round=%u arrived=%u", m->bar, k, now);
		/* Members: we do not know nprocs here; any arrival may complete. */
		if (chance(t, 30)) {
			__atomic_store_n(&s->arrived, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&s->round, k + 1, __ATOMIC_RELEASE);
		}
	}
	for (i = 0; i < NMAPS; i++)
		if (pr->maps[i].kind == FM_RING && pr->maps[i].ctx == m->ctx &&
		    pr->maps[i].ep == m->ep)
			ring = i;
	pthread_mutex_unlock(&pr->lock);
	if (ring < 0 || chance(t, 50))
		return 0;
	/* enter_op fills random sqes; bars are learned, so BARRIER ops come. */
	return enter_op(t, ring, 0);
}

static int op_read(struct thr *t)
{
	static const size_t sizes[] = { 0, 1, sizeof(struct zcx_event) - 1, sizeof(struct zcx_event),
					4 * sizeof(struct zcx_event) + 3, GARBAGE_SIZE };
	int ci, fd = pick_fd(t, &ci), e;
	size_t size = sizes[below(t, 6)];
	void *buf = chance(t, 5) ? (void *)(uintptr_t)pick_addr(t) : t->garbage;
	ssize_t r;

	note(t, "fd=%d size=%zu buf=%p", fd, size, buf);
	call_begin(t);
	r = read(fd, buf, size);	/* blocks without O_NONBLOCK: interrupted */
	e = errno;
	call_end(t);
	if (r < 0)
		return -e;
	/* (pick_fd() hands out other files too.) */
	if (fd >= 0 && fd == __atomic_load_n(&t->pr->fds[ci], __ATOMIC_RELAXED) &&
	    (r % sizeof(struct zcx_event) || (size_t)r > size))
		fuzz_fail(t, "ABI: read() returned part of an event");
	return 0;
}

static int op_poll(struct thr *t)
{
	int ci, r;
	struct pollfd p = { .fd = pick_fd(t, &ci), .events = POLLIN | POLLOUT };

	note(t, "fd=%d", p.fd);
	call_begin(t);
	r = poll(&p, 1, below(t, 20));
	call_end(t);
	return r < 0 ? -errno : 0;
}

/*
 * Any command number near the real ones with any size, on random bytes,
 * a kernel address, NULL or our PROT_NONE arena.
 */
static int op_raw_ioctl(struct thr *t)
{
	static const unsigned int dirs[] = { _IOC_NONE, _IOC_READ, _IOC_WRITE, _IOC_READ | _IOC_WRITE };
	unsigned int nr = chance(t, 85) ? below(t, 0x0e) : (unsigned int)below(t, 256);
	unsigned int dir = chance(t, 85) ? _IOC_READ | _IOC_WRITE : dirs[below(t, 4)];
	unsigned int type = chance(t, 95) ? ZCX_IOC_MAGIC : (unsigned int)below(t, 256);
	unsigned int size = below(t, 4) ? 16 * (1 + below(t, 12)) + below(t, 3) * 8 - 8 :
				(unsigned int)below(t, _IOC_SIZEMASK + 1);
	int ci, fd = pick_fd(t, &ci), k;
	void *arg = t->garbage;
	unsigned long cmd;

	for (k = 0; k < 64; k++)
		((uint64_t *)t->garbage)[k] = chance(t, 40) ? 0 : pick_u64(t);
	switch (below(t, 10)) {
	case 0: arg = NULL; break;
	case 1: arg = (void *)(uintptr_t)pick_addr(t); break;
	case 2: arg = (void *)0xffffffff81000000UL; break;
	}
	cmd = _IOC(dir, type, nr, size);
	note(t, "fd=%d cmd=%#lx (nr %#x size %u) arg=%p", fd, cmd, nr, size, arg);
	return xioctl(t, fd, cmd, arg);
}

/* Relative frequencies; a fork child never forks. */
static const unsigned int weights[NOPS] = {
	[OP_OPEN] = 4, [OP_CLOSE] = 2, [OP_QUERY] = 3, [OP_MR_REG] = 12,
	[OP_MR_DEREG] = 8, [OP_MR_FLUSH] = 2, [OP_LIMITS] = 2, [OP_MON_ADD] = 4,
	[OP_EP_CREATE] = 5, [OP_EP_DESTROY] = 2, [OP_EP_CONNECT] = 6,
	[OP_ENTER] = 14, [OP_RING_GARBAGE] = 4, [OP_EXPOSE] = 4,
	[OP_UNEXPOSE] = 2, [OP_BAR_CREATE] = 2, [OP_BAR_JOIN] = 3,
	[OP_BAR_ARRIVE] = 3, [OP_MMAP_FD] = 4, [OP_MUNMAP_FD] = 2,
	[OP_MREMAP_FD] = 1, [OP_READ] = 2, [OP_POLL] = 1, [OP_BUF_MAP] = 5,
	[OP_BUF_UNMAP] = 4, [OP_BUF_MREMAP] = 3, [OP_BUF_MADVISE] = 4,
	[OP_BUF_MPROTECT] = 2, [OP_BUF_TOUCH] = 2, [OP_FORK] = 1,
	[OP_RAW_IOCTL] = 6,
};

typedef int (*op_fn)(struct thr *t);

static int op_enter(struct thr *t)
{
	return enter_op(t, -1, 0);
}

static int op_ring_garbage(struct thr *t)
{
	return enter_op(t, -1, 1);
}

static const op_fn fns[NOPS] = {
	[OP_OPEN] = op_open, [OP_CLOSE] = op_close, [OP_QUERY] = op_query,
	[OP_MR_REG] = op_mr_reg, [OP_MR_DEREG] = op_mr_dereg, [OP_MR_FLUSH] = op_mr_flush,
	[OP_LIMITS] = op_limits, [OP_MON_ADD] = op_mon_add, [OP_EP_CREATE] = op_ep_create,
	[OP_EP_DESTROY] = op_ep_destroy, [OP_EP_CONNECT] = op_ep_connect, [OP_ENTER] = op_enter,
	[OP_RING_GARBAGE] = op_ring_garbage, [OP_EXPOSE] = op_expose, [OP_UNEXPOSE] = op_unexpose,
	[OP_BAR_CREATE] = op_bar_create, [OP_BAR_JOIN] = op_bar_join,
	[OP_BAR_ARRIVE] = op_bar_arrive, [OP_MMAP_FD] = op_mmap_fd,
	[OP_MUNMAP_FD] = op_munmap_fd, [OP_MREMAP_FD] = op_mremap_fd, [OP_READ] = op_read,
	[OP_POLL] = op_poll, [OP_BUF_MAP] = op_buf_map, [OP_BUF_UNMAP] = op_buf_unmap,
	[OP_BUF_MREMAP] = op_buf_mremap, [OP_BUF_MADVISE] = op_buf_madvise,
	[OP_BUF_MPROTECT] = op_buf_mprotect, [OP_BUF_TOUCH] = op_buf_touch,
	[OP_FORK] = op_fork, [OP_RAW_IOCTL] = op_raw_ioctl,
};

void run_op(struct thr *t, int op)
{
	int r;

	t->cur_op = op;
	t->desc[0] = 0;
	r = fns[op](t);
	if (!t->desc[0])
		note(t, "%s", r == SKIP ? "(nothing to do)" : "");
	if (r != SKIP)
		stat_add(t, op, r);
}

/* One operation, chosen by the worker's own stream. */
void run_one(struct thr *t)
{
	unsigned int total = 0, x;
	int op;

	if (t->child)
		reap_child(t, 0);
	for (op = 0; op < NOPS; op++)
		total += (op == OP_FORK && t->pr->in_child) ? 0 : weights[op];
	x = xoshiro(t->sel) % total;
	rng_op(t);
	for (op = 0; op < NOPS; op++) {
		unsigned int w = (op == OP_FORK && t->pr->in_child) ? 0 : weights[op];

		if (x < w)
			break;
		x -= w;
	}
	if (!t->pr->in_child) {
		__atomic_store_n(&t->slot->started, now_ns(), __ATOMIC_RELAXED);
		__atomic_store_n(&t->slot->opno, t->slot->opno + 1, __ATOMIC_RELAXED);
		/* Until note() says more: a fault before it must not show an old entry. */
		snprintf(t->slot->ring[(t->slot->opno - 1) % RING_N], DESC_LEN, "%s (arguments not chosen yet)",
			 op_names[op]);
		__atomic_store_n(&t->slot->busy, 1, __ATOMIC_RELEASE);
	}
	run_op(t, op);
	if (!t->pr->in_child)
		__atomic_store_n(&t->slot->busy, 0, __ATOMIC_RELEASE);
	if (t->sh->verbose)
		dprintf(1, "%d.%d%s #%llu %s\n", t->p, t->t, t->pr->in_child ? " child" : "",
		       (unsigned long long)t->nops + 1, t->desc);
	t->nops++;
}
