/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * zcx_xfer.h - helpers shared by the transport selftests (zcx_xfer_test,
 * zcx_barrier_test, zcx_fault_test): two processes joined by pipes, each
 * with its own handle and endpoint, connected both ways; data patterns;
 * checks for code that runs in forked processes, where the harness's
 * ASSERT_*() must not be used (a failing ASSERT would unwind into the
 * harness's copy of the test and run its teardown from the wrong process).
 */
#ifndef ZCX_XFER_H
#define ZCX_XFER_H

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "zcx.h"
#include "zcx_test.h"

/* A pattern check: on a mismatch, where and what. */
#define CK_PAT(buf, len, seed) do {						\
	long long __bad = xpat_check((buf), (len), (seed));			\
	if (__bad >= 0) {							\
		fprintf(stderr, "# pid %d: %s:%d: %s: %zu bytes of pattern "	\
			"%#llx wrong from byte %lld\n", getpid(), __FILE__,	\
			__LINE__, #buf, (size_t)(len),				\
			(unsigned long long)(seed), __bad);			\
		xpat_explain((buf), (len), (seed), __bad);			\
		return 1;							\
	}									\
} while (0)

#define CK_PAT_AT(buf, len, seed, start) do {					\
	long long __bad = xpat_check_at((buf), (len), (seed), (start));		\
	if (__bad >= 0) {							\
		fprintf(stderr, "# pid %d: %s:%d: %s: bytes %zu.. of pattern "	\
			"%#llx wrong from byte %lld\n", getpid(), __FILE__,	\
			__LINE__, #buf, (size_t)(start),			\
			(unsigned long long)(seed), __bad);			\
		return 1;							\
	}									\
} while (0)

static inline uint64_t xmix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

/*
 * The pattern: byte i of a message with @seed is byte i % 8 of
 * xmix(seed * golden + i / 8), relative to the message's start, so it
 * does not depend on the buffer's alignment and no two pages, messages or
 * seeds look alike.
 */
static inline uint64_t xpat_word(uint64_t seed, uint64_t word)
{
	return xmix(seed * 0x9e3779b97f4a7c15ULL + word);
}

static inline void xpat_fill(void *buf, size_t len, uint64_t seed)
{
	unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i += 8) {
		uint64_t w = xpat_word(seed, i / 8);

		memcpy(p + i, &w, len - i < 8 ? len - i : 8);
	}
}

/* -1 if [buf, +len) holds the pattern, else the first wrong byte. */
static inline long long xpat_check(const void *buf, size_t len, uint64_t seed)
{
	const unsigned char *p = buf;
	size_t i, j;

	for (i = 0; i < len; i += 8) {
		uint64_t w = xpat_word(seed, i / 8);
		size_t n = len - i < 8 ? len - i : 8;

		if (memcmp(p + i, &w, n))
			for (j = 0; j < n; j++)
				if (p[i + j] != ((unsigned char *)&w)[j])
					return (long long)(i + j);
	}
	return -1;
}

/*
 * After a mismatch at @bad: the bytes seen and expected there, and how
 * many of all the bytes are wrong.
 */
static inline void xpat_explain(const void *buf, size_t len, uint64_t seed, long long bad)
{
	const unsigned char *p = buf;
	size_t i, wrong = 0;
	char seen[40] = "", want[40] = "";

	for (i = 0; i < len; i++) {
		uint64_t w = xpat_word(seed, i / 8);
		unsigned char e = ((unsigned char *)&w)[i % 8];

		if (p[i] != e)
			wrong++;
		if (i >= (size_t)bad && i < (size_t)bad + 12) {
			snprintf(seen + strlen(seen), sizeof(seen) - strlen(seen), "%02x", p[i]);
			snprintf(want + strlen(want), sizeof(want) - strlen(want), "%02x", e);
		}
	}
	fprintf(stderr, "#   at byte %lld: seen %s, expected %s; %zu of %zu bytes wrong\n",
		bad, seen, want, wrong, len);
}

/* The same for bytes [start, start + len) of a pattern, found at @buf. */
static inline long long xpat_check_at(const void *buf, size_t len, uint64_t seed, size_t start)
{
	const unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++) {
		uint64_t w = xpat_word(seed, (start + i) / 8);

		if (p[i] != ((unsigned char *)&w)[(start + i) % 8])
			return (long long)i;
	}
	return -1;
}

/* Whether [buf, +len) is all @byte. */
static inline bool xall(const void *buf, size_t len, unsigned char byte)
{
	const unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != byte)
			return false;
	return true;
}

/* Anonymous private memory (NULL on failure), and shared (before fork). */
static inline void *xmap_shared(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Whole reads and writes on pipes; 0, or -1 (error or the other end gone). */
static inline int xwrite(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

static inline int xread(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

static inline uint64_t xnow_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * One process's side of a pair: its own handle and endpoint, the
 * connection to the other side's endpoint, and the pipes to it.
 */
struct xside {
	struct zcx *zcx;
	struct zcx_ep *ep;
	uint32_t peer;
	int rd, wr;
	struct zcx_query q;
	struct zcx_addr peer_addr;
	bool child;
};

/* ZCX_CONNECT_* for the pairs set up from here (the RDMA tests: _NET). */
static unsigned int xconnect_flags;
/*
 * A cgroup (v2) directory that xfer_fork()'s child joins before it opens
 * its handle, or NULL: its endpoint is then charged there.
 */
static const char *xchild_cgroup;

/* Tell the other side a number / wait for one from it: 0 or -1. */
static inline int xsend_u64(struct xside *s, uint64_t v)
{
	return xwrite(s->wr, &v, sizeof(v));
}

static inline int xrecv_u64(struct xside *s, uint64_t *v)
{
	return xread(s->rd, v, sizeof(*v));
}

/* Wait for the number @want from the other side: 0, or -1 on anything else. */
static inline int xexpect_u64(struct xside *s, uint64_t want)
{
	uint64_t v;

	if (xrecv_u64(s, &v))
		return -1;
	if (v != want) {
		fprintf(stderr, "# pid %d: expected %#llx from the other side, got %#llx\n",
			getpid(), (unsigned long long)want, (unsigned long long)v);
		return -1;
	}
	return 0;
}

/* What each side tells the other once its connection is up ... */
#define XSIDE_READY	0x52454144ULL	/* "READ" */
/* ... and once it is done with its transfers (xrun_pair()). */
#define XSIDE_DONE	0x444f4e45ULL	/* "DONE" */

/* Both sides at the same point @word names: 0, or -1 if the other is gone. */
static inline int xside_meet(struct xside *s, uint64_t word)
{
	return xsend_u64(s, word) || xexpect_u64(s, word) ? -1 : 0;
}

/*
 * Open a handle, create an endpoint with @flags and @depth, swap addresses
 * with the other side and connect to its endpoint, then wait until the
 * other side is connected too: neither starts (and perhaps finishes, and
 * destroys its endpoint) while the other still connects to it, which
 * through the network takes a while.  0 or -errno (-EPIPE when the other
 * side went away).
 */
static inline int xside_init(struct xside *s, unsigned int flags, unsigned int depth)
{
	struct zcx_addr mine;
	int ret;

	ret = zcx_open(&s->zcx, 0);
	if (ret)
		return ret;
	ret = zcx_query(s->zcx, &s->q);
	if (ret)
		return ret;
	ret = zcx_ep_create(s->zcx, flags, depth, &s->ep);
	if (ret)
		return ret;
	zcx_ep_addr(s->ep, &mine);
	if (xwrite(s->wr, &mine, sizeof(mine)) || xread(s->rd, &s->peer_addr, sizeof(s->peer_addr)))
		return -EPIPE;
	ret = zcx_ep_connect_flags(s->ep, &s->peer_addr, xconnect_flags, &s->peer);
	if (ret)
		return ret;
	return xside_meet(s, XSIDE_READY) ? -EPIPE : 0;
}

static inline void xside_fini(struct xside *s)
{
	if (s->ep)
		zcx_ep_destroy(s->ep);
	s->ep = NULL;
	if (s->zcx)
		zcx_close(s->zcx);
	s->zcx = NULL;
	if (s->rd >= 0)
		close(s->rd);
	if (s->wr >= 0)
		close(s->wr);
	s->rd = s->wr = -1;
}

/*
 * Make the calling (forked) process die with its parent, so that a parent
 * failing an ASSERT never leaves a child blocked in a transfer.
 */
static inline void xdie_with_parent(pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(99);
}

typedef int (*xchild_fn)(struct xside *s, void *arg);

/* Move the calling process into the cgroup @dir: 0 or -errno. */
static inline int xjoin_cgroup(const char *dir)
{
	char path[256], pid[16];

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	return zcx_test_write_file(path, pid);
}

/*
 * Fork a child that runs @fn(its side, @arg) and exits with what @fn
 * returned; set up the calling process's side in @parent.  Both sides open
 * their handles after fork().  Returns the child's pid, or -errno with
 * @parent's handle closed; a child that could not set itself up exits 100.
 */
static inline pid_t xfer_fork(struct xside *parent, unsigned int flags, unsigned int depth,
			      xchild_fn fn, void *arg)
{
	int p2c[2], c2p[2], ret;
	pid_t pid, me = getpid();

	memset(parent, 0, sizeof(*parent));
	parent->rd = parent->wr = -1;
	if (pipe(p2c))
		return -errno;
	if (pipe(c2p)) {
		close(p2c[0]);
		close(p2c[1]);
		return -errno;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		struct xside s = { .rd = p2c[0], .wr = c2p[1], .child = true };

		xdie_with_parent(me);
		close(p2c[1]);
		close(c2p[0]);
		ret = xchild_cgroup ? xjoin_cgroup(xchild_cgroup) : 0;
		if (!ret)
			ret = xside_init(&s, flags, depth);
		if (ret) {
			fprintf(stderr, "# child %d: setting up its endpoint: %s\n", getpid(),
				zcx_strerror(ret));
			_exit(100);
		}
		ret = fn(&s, arg);
		xside_fini(&s);
		_exit(ret);
	}
	close(p2c[0]);
	close(c2p[1]);
	parent->rd = c2p[0];
	parent->wr = p2c[1];
	ret = xside_init(parent, flags, depth);
	if (ret) {
		xside_fini(parent);
		return ret;
	}
	return pid;
}

struct xpair_child {
	xchild_fn fn;
	void *arg;
};

static inline int xpair_child_run(struct xside *s, void *arg)
{
	const struct xpair_child *c = arg;
	int ret = c->fn(s, c->arg);

	return ret ? ret : xside_meet(s, XSIDE_DONE) ? 1 : 0;
}

/* Reap @pid: its exit status, 128 + signal if killed, -1 on error. */
static inline int xreap(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

/*
 * Wait for @req at most @ms milliseconds, for operations that must not
 * hang (a bug would otherwise show only as the harness's timeout): the
 * request's status, or -ETIME if it did not complete in time.  This is a
 * bounded wait for a completion, not a sleep standing in for one.
 */
static inline int xwait_bounded(struct zcx_ep *ep, struct zcx_req *req, unsigned int ms)
{
	uint64_t end = xnow_ns() + ms * 1000000ULL;
	struct timespec tick = { 0, 1000000 };
	int ret;

	for (;;) {
		ret = zcx_test(ep, req);
		if (ret < 0)
			return ret;
		if (ret == 1)
			return req->status;
		if (xnow_ns() > end)
			return -ETIME;
		nanosleep(&tick, NULL);
	}
}

/*
 * Make sure the module has what was queued on @ep: receives may wait in
 * the ring for the next doorbell, and zcx_test() rings it.  0 or 1 (the
 * request's state), or a negative errno.
 */
static inline int xflush(struct zcx_ep *ep, struct zcx_req *req)
{
	(void)req;
	return zcx_ep_flush(ep);
}

/* A request ready for use, with an optional registration. */
static inline struct zcx_req xreq(struct zcx_mr *mr)
{
	struct zcx_req req;

	memset(&req, 0, sizeof(req));
	req.mr = mr;
	return req;
}

/*
 * Run @parent_fn here and @child_fn in a forked child, each on its side of
 * a connected pair of endpoints created with @flags and @depth.  Returns 0
 * if both returned 0; otherwise what failed has been printed.  A parent
 * that fails kills the child, which might wait forever for it.
 *
 * Both sides end by meeting (XSIDE_DONE) once their functions succeeded,
 * so neither destroys its endpoint before the other is done too: through
 * the network the last message can reach its receiver before its sender
 * learns that it did, and a receiver that left at once would fail that
 * send with ECONNRESET (as it should: the peer went while it was
 * pending).  A function whose point is to leave abruptly calls _exit().
 */
static inline int xrun_pair(unsigned int flags, unsigned int depth, xchild_fn parent_fn,
			    xchild_fn child_fn, void *arg)
{
	struct xpair_child c = { child_fn, arg };
	struct xside s;
	pid_t pid;
	int ret, child;

	/* A side that left closed its pipes: writing to them fails, not kills. */
	signal(SIGPIPE, SIG_IGN);
	pid = xfer_fork(&s, flags, depth, xpair_child_run, &c);
	if (pid < 0) {
		fprintf(stderr, "# setting up the pair: %s\n", zcx_strerror(pid));
		return -1;
	}
	ret = parent_fn(&s, arg);
	if (ret)
		kill(pid, SIGKILL);
	else
		xside_meet(&s, XSIDE_DONE);	/* the child's status tells if it failed */
	xside_fini(&s);
	child = xreap(pid);
	if (child)
		fprintf(stderr, "# child %d exited with status %d\n", pid, child);
	return ret ? ret : child;
}

#endif /* ZCX_XFER_H */
