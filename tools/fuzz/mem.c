// SPDX-License-Identifier: GPL-2.0-only
/*
 * mem.c - zcx_fuzz's operations on memory: the buffer arena (what
 * registrations, exposures and transfers point at), mappings of the
 * /dev/zcx descriptors (status area, rings, barrier pages) and fork.
 *
 * The arena is one PROT_NONE reservation per process, cut into NBUF
 * slots.  Buffers are mapped into slots with MAP_FIXED, and whatever is
 * unmapped or moved away is reserved again at once (under the process
 * lock): so no address the module may be handed ever belongs to the
 * fuzzer's heap or stacks, and stale addresses the module writes through
 * land in our own buffers or fail with EFAULT.  The fuzzer itself only
 * stores into a buffer it knows to be mapped read-write and backed
 * (struct buf.rw_ok), and only into descriptor mappings it knows the
 * extent of (struct fmap.safe).
 */
#include "fuzz.h"

#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

void proc_init(struct proc *pr, int idx)
{
	int i;

	memset(pr, 0, sizeof(*pr));
	pthread_mutex_init(&pr->lock, NULL);
	pr->idx = idx;
	pr->page = sysconf(_SC_PAGESIZE);
	for (i = 0; i < NCTX; i++)
		pr->fds[i] = -1;
	pr->arena = mmap(NULL, NBUF * SLOT_SIZE, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (pr->arena == MAP_FAILED) {
		perror("zcx_fuzz: arena");
		exit(2);
	}
	pr->memfd = memfd_create("zcx_fuzz", MFD_CLOEXEC);
	if (pr->memfd < 0 || ftruncate(pr->memfd, SLOT_SIZE)) {
		perror("zcx_fuzz: memfd");
		exit(2);
	}
	/* File-backed memory the module must refuse to pin. */
	pr->exefd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
}

void proc_teardown(struct proc *pr)
{
	int i;

	for (i = 0; i < NCTX; i++)
		if (pr->fds[i] >= 0)
			close(pr->fds[i]);
	for (i = 0; i < NMAPS; i++)
		if (pr->maps[i].kind != FM_FREE)
			munmap(pr->maps[i].p, pr->maps[i].len);
}

static char *slot_base(struct proc *pr, int i)
{
	return pr->arena + (size_t)i * SLOT_SIZE;
}

/* Put the reservation back over [p, p + len) of the arena. */
static void reserve(char *p, size_t len)
{
	if (mmap(p, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
		 -1, 0) == MAP_FAILED) {
		/* Never leave a hole someone else's mmap() could fill. */
		perror("zcx_fuzz: re-reserving the arena");
		abort();
	}
}

/* Record a descriptor mapping (lock held); evicts one if the table is full. */
int add_map(struct proc *pr, const struct fmap *m)
{
	int i;

	for (i = 0; i < NMAPS && pr->maps[i].kind != FM_FREE; i++)
		;
	if (i == NMAPS) {
		i = (int)(m->len % NMAPS);
		munmap(pr->maps[i].p, pr->maps[i].len);
	}
	pr->maps[i] = *m;
	return i;
}

/* The status area the way the ABI says: first page, then @size (lock held). */
void map_status(struct thr *t, int ci, int fd)
{
	struct proc *pr = t->pr;
	struct fmap m;
	uint32_t size;
	void *p;

	p = mmap(NULL, pr->page, PROT_READ, MAP_SHARED, fd, ZCX_MMAP_STATUS);
	if (p == MAP_FAILED)
		return;
	size = ((const struct zcx_status *)p)->size;
	munmap(p, pr->page);
	if (size < pr->page || size > (64U << 20)) {
		fuzz_fail(t, "ABI: status area size implausible");
		return;
	}
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, ZCX_MMAP_STATUS);
	if (p == MAP_FAILED)
		return;
	memset(&m, 0, sizeof(m));
	m.p = p;
	m.len = size;
	m.kind = FM_STATUS;
	m.ctx = ci;
	add_map(pr, &m);
}

/* mmap() of a descriptor at good and bad offsets, lengths, protections. */
int op_mmap_fd(struct thr *t)
{
	static const int prots[] = { PROT_READ, PROT_READ | PROT_WRITE, PROT_READ | PROT_WRITE,
				     PROT_READ | PROT_WRITE | PROT_EXEC, PROT_NONE, PROT_WRITE };
	static const int flagset[] = { MAP_SHARED, MAP_SHARED, MAP_SHARED, MAP_PRIVATE,
				       MAP_SHARED | MAP_POPULATE, MAP_SHARED | MAP_LOCKED };
	struct proc *pr = t->pr;
	struct ringinfo ri = { 0 };
	struct fmap m;
	int ci, fd = pick_fd(t, &ci), have = 0, prot, flags, e;
	uint64_t off;
	size_t len;
	void *p;

	if (pr->in_child)
		return SKIP;	/* its mappings are not tracked */
	pthread_mutex_lock(&pr->lock);
	if (pr->nrings && chance(t, 70)) {
		ri = pr->rings[below(t, pr->nrings < NRINGS ? pr->nrings : NRINGS)];
		have = 1;
	}
	pthread_mutex_unlock(&pr->lock);
	switch (below(t, 8)) {
	case 0: case 1: off = 0; break;
	case 2: case 3: case 4: off = have ? ri.offset : 0; break;
	case 5: off = pr->page * below(t, 1 << 20); break;
	case 6: off = below(t, 1ULL << 32); break;
	default: off = pick_u64(t) & ~(uint64_t)(pr->page - 1); break;
	}
	switch (below(t, 8)) {
	case 0: case 1: len = pr->page; break;
	case 2: case 3: len = have ? ri.size : pr->page; break;
	case 4: len = 0; break;
	case 5: len = 1; break;
	case 6: len = pr->page * (1 + below(t, 64)); break;
	default: len = 1ULL << 40; break;
	}
	prot = prots[below(t, 6)];
	flags = flagset[below(t, 6)];
	note(t, "fd=%d off=%#llx len=%#zx prot=%d flags=%#x", fd, (unsigned long long)off, len,
	     prot, flags);
	pthread_mutex_lock(&pr->lock);
	p = mmap(NULL, len, prot, flags, fd, off);
	e = errno;
	if (p != MAP_FAILED) {
		memset(&m, 0, sizeof(m));
		m.p = p;
		m.len = len;
		m.kind = FM_OTHER;	/* never touched */
		m.ctx = ci;
		/* (pick_fd() hands out other files too: a memfd mapped there is no ring.) */
		if (have && ri.ctx == ci && fd == pr->fds[ci] && off == ri.offset && len == ri.size &&
		    prot & PROT_WRITE && prot & PROT_READ && flags & MAP_SHARED) {
			m.kind = FM_RING;
			m.safe = len;
			m.writable = 1;
			m.ep = ri.ep;
			m.sq_entries = ri.sq_entries;
			m.cq_entries = ri.cq_entries;
			m.off = ri.off;
		}
		add_map(pr, &m);
	}
	pthread_mutex_unlock(&pr->lock);
	return p == MAP_FAILED ? -e : 0;
}

int op_munmap_fd(struct thr *t)
{
	struct proc *pr = t->pr;
	struct fmap *m;
	size_t off;
	int r;

	pthread_mutex_lock(&pr->lock);
	m = &pr->maps[below(t, NMAPS)];
	if (m->kind == FM_FREE) {
		pthread_mutex_unlock(&pr->lock);
		return SKIP;
	}
	if (chance(t, 70) || m->len <= pr->page) {
		note(t, "kind=%d ep=%u all %#zx", m->kind, m->ep, m->len);
		r = munmap(m->p, m->len);
		m->kind = FM_FREE;
	} else {
		/* A page out of the middle; what follows it is not tracked any more. */
		off = pr->page * (1 + below(t, m->len / pr->page - 1));
		note(t, "kind=%d ep=%u page at %#zx of %#zx", m->kind, m->ep, off, m->len);
		r = munmap(m->p + off, pr->page);
		if (!r) {
			m->len = off;
			m->safe = m->safe < off ? m->safe : off;
		}
	}
	pthread_mutex_unlock(&pr->lock);
	return r ? -errno : 0;
}

int op_mremap_fd(struct thr *t)
{
	struct proc *pr = t->pr;
	struct fmap *m;
	size_t nl;
	char *r = MAP_FAILED, *to;
	int e = 0;

	pthread_mutex_lock(&pr->lock);
	m = &pr->maps[below(t, NMAPS)];
	if (m->kind == FM_FREE) {
		pthread_mutex_unlock(&pr->lock);
		return SKIP;
	}
	switch (below(t, 4)) {
	case 0:		/* shrink */
		nl = pr->page * (m->len / pr->page / 2 ? m->len / pr->page / 2 : 1);
		note(t, "kind=%d shrink %#zx -> %#zx", m->kind, m->len, nl);
		r = mremap(m->p, m->len, nl, 0);
		e = errno;
		if (r != MAP_FAILED) {
			m->len = nl;
			m->safe = m->safe < nl ? m->safe : nl;
		}
		break;
	case 1:		/* grow: beyond the object, never touched */
		nl = m->len + pr->page;
		note(t, "kind=%d grow %#zx -> %#zx", m->kind, m->len, nl);
		r = mremap(m->p, m->len, nl, MREMAP_MAYMOVE);
		e = errno;
		if (r != MAP_FAILED) {
			m->p = r;
			m->len = nl;
		}
		break;
	case 2:		/* move onto a placeholder of ours */
		to = mmap(NULL, m->len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (to == MAP_FAILED)
			break;
		note(t, "kind=%d move %#zx to %p", m->kind, m->len, (void *)to);
		r = mremap(m->p, m->len, m->len, MREMAP_MAYMOVE | MREMAP_FIXED, to);
		e = errno;
		if (r != MAP_FAILED)
			m->p = r;
		else
			munmap(to, m->len);
		break;
	default:	/* the old range stays, without pages: forget it */
		note(t, "kind=%d dontunmap %#zx", m->kind, m->len);
		r = mremap(m->p, m->len, m->len, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, NULL);
		e = errno;
		if (r != MAP_FAILED)
			m->p = r;
		break;
	}
	pthread_mutex_unlock(&pr->lock);
	return r == MAP_FAILED ? -(e ? e : ENOMEM) : 0;
}

/* A sub-range of a slot: [*off, *off + *len), page-aligned, inside it. */
static void pick_range(struct thr *t, int i, size_t *off, size_t *len)
{
	struct proc *pr = t->pr;
	size_t blen = pr->bufs[i].len, pages = SLOT_SIZE / pr->page;

	*off = chance(t, 50) ? 0 : pr->page * below(t, (blen ? blen : SLOT_SIZE) / pr->page);
	*len = chance(t, 50) && blen > *off ? blen - *off : pr->page * (1 + below(t, 8));
	if (*off / pr->page + *len / pr->page > pages)
		*len = SLOT_SIZE - *off;
}

int op_buf_map(struct thr *t)
{
	struct proc *pr = t->pr;
	int i = below(t, NBUF), kind = below(t, 7), prot = PROT_READ | PROT_WRITE;
	int flags = MAP_PRIVATE | MAP_ANONYMOUS, fd = -1, e;
	size_t len = pr->page * (1 + (chance(t, 50) ? below(t, 16) : below(t, SLOT_SIZE / pr->page)));
	char *base = slot_base(pr, i), *p;
	off_t off = 0;

	switch (kind) {
	case 2: flags = MAP_SHARED | MAP_ANONYMOUS; break;
	case 3:
		flags = MAP_SHARED;
		fd = pr->memfd;
		off = pr->page * below(t, (SLOT_SIZE - len) / pr->page + 1);
		break;
	case 4: flags = MAP_PRIVATE; fd = pr->exefd; prot = PROT_READ; break;
	case 5: prot = chance(t, 50) ? PROT_NONE : PROT_READ; break;
	case 6: flags |= MAP_POPULATE; break;
	}
	note(t, "slot %d len %#zx kind %d prot %d", i, len, kind, prot);
	pthread_mutex_lock(&pr->lock);
	p = mmap(base, len, prot, flags | MAP_FIXED, fd, off);
	e = errno;
	if (p == MAP_FAILED) {
		reserve(base, SLOT_SIZE);
		pr->bufs[i].len = 0;
		pr->bufs[i].rw_ok = pr->bufs[i].backed = 0;
	} else {
		__atomic_store_n(&pr->bufs[i].len, len, __ATOMIC_RELAXED);
		pr->bufs[i].backed = kind != 4 && kind != 5;
		pr->bufs[i].rw_ok = pr->bufs[i].backed;
		if (pr->bufs[i].rw_ok && chance(t, 50))
			memset(base, (int)rnd(t), len);
	}
	pthread_mutex_unlock(&pr->lock);
	return p == MAP_FAILED ? -e : 0;
}

/* munmap (then reserve again), or MAP_FIXED over a live mapping. */
int op_buf_unmap(struct thr *t)
{
	struct proc *pr = t->pr;
	int i = below(t, NBUF), r = 0;
	char *base = slot_base(pr, i);
	size_t off, len;

	pthread_mutex_lock(&pr->lock);
	pick_range(t, i, &off, &len);
	if (chance(t, 30)) {
		note(t, "slot %d mmap over [%#zx, +%#zx)", i, off, len);
		if (mmap(base + off, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
			r = -errno;
			reserve(base + off, len);
			pr->bufs[i].rw_ok = 0;
		}
	} else {
		note(t, "slot %d munmap [%#zx, +%#zx)", i, off, len);
		r = munmap(base + off, len) ? -errno : 0;
		reserve(base + off, len);
		if (off == 0 && len >= pr->bufs[i].len) {
			__atomic_store_n(&pr->bufs[i].len, 0, __ATOMIC_RELAXED);
			pr->bufs[i].backed = 0;
		}
		if (off < pr->bufs[i].len)
			pr->bufs[i].rw_ok = 0;
	}
	pthread_mutex_unlock(&pr->lock);
	return r;
}

int op_buf_mremap(struct thr *t)
{
	struct proc *pr = t->pr;
	int i = below(t, NBUF), j = (i + 1 + below(t, NBUF - 1)) % NBUF, e = 0, fixed = 0;
	char *bi = slot_base(pr, i), *bj = slot_base(pr, j), *r = MAP_FAILED;
	size_t li, nl;

	pthread_mutex_lock(&pr->lock);
	li = pr->bufs[i].len;
	if (!li) {
		pthread_mutex_unlock(&pr->lock);
		return SKIP;
	}
	switch (below(t, 3)) {
	case 0:		/* move to another slot, maybe growing */
		nl = chance(t, 50) ? li : pr->page * (1 + below(t, SLOT_SIZE / pr->page));
		note(t, "move slot %d (%#zx) to slot %d as %#zx", i, li, j, nl);
		r = mremap(bi, li, nl, MREMAP_MAYMOVE | MREMAP_FIXED, bj);
		e = errno;
		fixed = 1;
		if (r != MAP_FAILED) {
			reserve(bi, li);
			__atomic_store_n(&pr->bufs[j].len, nl, __ATOMIC_RELAXED);
			/* Grown shared memory may end past its file: do not touch. */
			pr->bufs[j].backed = pr->bufs[i].backed && nl <= li;
			pr->bufs[j].rw_ok = pr->bufs[i].rw_ok && nl <= li;
			__atomic_store_n(&pr->bufs[i].len, 0, __ATOMIC_RELAXED);
			pr->bufs[i].rw_ok = pr->bufs[i].backed = 0;
		}
		break;
	case 1:		/* shrink in place */
		nl = pr->page * (1 + below(t, li / pr->page));
		if (nl >= li)
			nl = li - pr->page;
		if (!nl)
			break;
		note(t, "shrink slot %d %#zx -> %#zx", i, li, nl);
		r = mremap(bi, li, nl, 0);
		e = errno;
		if (r != MAP_FAILED) {
			reserve(bi + nl, li - nl);
			__atomic_store_n(&pr->bufs[i].len, nl, __ATOMIC_RELAXED);
		}
		break;
	default:	/* pages move to slot j, slot i stays mapped but empty */
		note(t, "dontunmap slot %d (%#zx) to slot %d", i, li, j);
		r = mremap(bi, li, li, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, bj);
		e = errno;
		fixed = 1;
		if (r != MAP_FAILED) {
			__atomic_store_n(&pr->bufs[j].len, li, __ATOMIC_RELAXED);
			pr->bufs[j].backed = pr->bufs[i].backed;
			pr->bufs[j].rw_ok = pr->bufs[i].rw_ok;
		}
		break;
	}
	if (r == MAP_FAILED && fixed) {
		/*
		 * A failed MREMAP_FIXED may have unmapped its destination, and
		 * the source's tail when shrinking, already (Linux does that
		 * before it checks the source): reserve both slots again
		 * before anyone's mmap() lands there.
		 */
		reserve(bi, SLOT_SIZE);
		reserve(bj, SLOT_SIZE);
		__atomic_store_n(&pr->bufs[i].len, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&pr->bufs[j].len, 0, __ATOMIC_RELAXED);
		pr->bufs[i].rw_ok = pr->bufs[i].backed = 0;
		pr->bufs[j].rw_ok = pr->bufs[j].backed = 0;
	}
	pthread_mutex_unlock(&pr->lock);
	if (!t->desc[0])
		return SKIP;
	return r == MAP_FAILED ? -(e ? e : ENOMEM) : 0;
}

int op_buf_madvise(struct thr *t)
{
	static const int advice[] = { MADV_DONTNEED, MADV_DONTNEED, MADV_FREE, MADV_REMOVE,
				      MADV_COLD, MADV_PAGEOUT, MADV_WILLNEED, MADV_HUGEPAGE,
				      MADV_NOHUGEPAGE };
	int i = below(t, NBUF), a = advice[below(t, 9)];
	size_t off, len;

	pick_range(t, i, &off, &len);
	note(t, "slot %d [%#zx, +%#zx) advice %d", i, off, len, a);
	/* Layout does not change: no lock, so it races with everything. */
	return madvise(slot_base(t->pr, i) + off, len, a) ? -errno : 0;
}

int op_buf_mprotect(struct thr *t)
{
	static const int prots[] = { PROT_NONE, PROT_READ, PROT_READ | PROT_WRITE, PROT_READ | PROT_EXEC };
	struct proc *pr = t->pr;
	int i = below(t, NBUF), prot = prots[below(t, 4)], r;
	size_t off, len;

	pthread_mutex_lock(&pr->lock);
	pick_range(t, i, &off, &len);
	note(t, "slot %d [%#zx, +%#zx) prot %d", i, off, len, prot);
	r = mprotect(slot_base(pr, i) + off, len, prot) ? -errno : 0;
	if (!r && prot != (PROT_READ | PROT_WRITE) && off < pr->bufs[i].len)
		pr->bufs[i].rw_ok = 0;
	if (!r && prot == (PROT_READ | PROT_WRITE) && off == 0 && len >= pr->bufs[i].len &&
	    pr->bufs[i].backed)
		pr->bufs[i].rw_ok = 1;
	pthread_mutex_unlock(&pr->lock);
	return r;
}

int op_buf_touch(struct thr *t)
{
	struct proc *pr = t->pr;
	int i = below(t, NBUF), r = SKIP;

	pthread_mutex_lock(&pr->lock);
	if (pr->bufs[i].rw_ok && pr->bufs[i].len) {
		note(t, "slot %d %#zx bytes", i, pr->bufs[i].len);
		memset(slot_base(pr, i), (int)rnd(t), pr->bufs[i].len);
		r = 0;
	}
	pthread_mutex_unlock(&pr->lock);
	return r;
}

static void on_alarm(int sig)
{
	(void)sig;	/* only there to interrupt blocking calls */
}

/*
 * A fork child: its parent's contexts are not its own (EIO), its
 * descriptor mappings are gone (VM_DONTCOPY), the arena is a copy-on-write
 * copy.  It runs a few operations of its own and exits, unless its parent
 * kills it first.
 */
static void child_main(struct thr *t)
{
	struct proc *pr = t->pr;
	struct sigaction sa;
	struct itimerval it = { { 0, 200000 }, { 0, 200000 } };
	uint64_t x = rnd(t) ^ 0x6368696c64ULL;
	int i, n;

	pr->in_child = 1;
	pthread_mutex_init(&pr->lock, NULL);	/* the parent held it */
	memset(pr->maps, 0, sizeof(pr->maps));
	t->child = 0;
	for (i = 0; i < 4; i++)
		t->sel[i] = splitmix64(&x);
	t->base = splitmix64(&x);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;	/* no SA_RESTART: blocked calls get EINTR */
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	for (i = 0; i < NCTX; i++)
		if (chance(t, 50) && pr->fds[i] >= 0) {
			close(pr->fds[i]);
			pr->fds[i] = -1;
		}
	n = 1 + below(t, 16);
	for (i = 0; i < n && !__atomic_load_n(&t->sh->stop, __ATOMIC_RELAXED); i++)
		run_one(t);
	_exit(0);
}

/*
 * Reap the fork child: @mode 0 if it is done, 1 wait for it, 2 kill it
 * (SIGKILL, ours) and wait.  Any other death by a signal is a failure.
 */
void reap_child(struct thr *t, int mode)
{
	char why[96];
	pid_t r;
	int st;

	if (mode == 2 && !kill(t->child, SIGKILL))
		t->child_killed = 1;
	do {
		call_begin(t);
		r = waitpid(t->child, &st, mode ? 0 : WNOHANG);
		call_end(t);
	} while (r < 0 && errno == EINTR);
	if (r == 0)
		return;
	if (r == t->child) {
		if (WIFSIGNALED(st) && !(WTERMSIG(st) == SIGKILL && t->child_killed)) {
			snprintf(why, sizeof(why), "fork child %d killed by signal %d (%s)",
				 (int)t->child, WTERMSIG(st), strsignal(WTERMSIG(st)));
			fuzz_fail(t, why);
		} else if (WIFEXITED(st) && WEXITSTATUS(st)) {
			snprintf(why, sizeof(why), "fork child %d failed (exit %d)", (int)t->child,
				 WEXITSTATUS(st));
			fuzz_fail(t, why);
		}
	}
	t->child = 0;
	t->child_killed = 0;
}

int op_fork(struct thr *t)
{
	struct proc *pr = t->pr;
	pid_t pid;

	if (t->child) {
		int mode = chance(t, 50) ? 2 : 1;

		note(t, "%s child %d", mode == 2 ? "kill and reap" : "wait for", (int)t->child);
		reap_child(t, mode);
		return 0;
	}
	note(t, "new child");
	/* With the lock held no other thread of ours is mid-change. */
	pthread_mutex_lock(&pr->lock);
	pid = fork();
	if (pid == 0)
		child_main(t);
	pthread_mutex_unlock(&pr->lock);
	if (pid < 0)
		return -errno;
	t->child = pid;
	note(t, "new child %d", (int)pid);
	return 0;
}
