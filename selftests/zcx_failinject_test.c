// SPDX-License-Identifier: GPL-2.0-only
/*
 * zcx_failinject_test - allocation failures injected into the calls that
 * make and use zcx objects, with the kernel's fault injection
 * (Documentation/fault-injection/): every failure must come back as an
 * errno (the call's, or the completion's), what failed must leave the
 * rest working, and once everything is closed the module's objects
 * (contexts, regions, pinned pages) are back where they were.  The VM
 * runner fails the run on any kernel splat; injected failures are not
 * reported (verbose=0 on every failure type).
 *
 * Two passes over one scenario of twelve steps (open + status mapping,
 * register, endpoint + ring mapping, connect, expose, small and large
 * messages, an unexpected message, put, get, barrier create + page
 * mapping, barrier join):
 *  - systematic: for each step, /proc/thread-self/fail-nth fails the 1st,
 *    2nd, ... allocation (slab or page) of that step only, until the step
 *    runs without reaching the armed count; the steps after a failed one
 *    run unarmed and must work where they do not depend on it;
 *  - random: failslab and fail_page_alloc with task-filter, only this
 *    thread marked (make-it-fail), at several probabilities, the whole
 *    scenario armed.
 * Also: a barrier member's wake-up whose operation cannot be allocated
 * still wakes the member asleep in the round it ended, and a polled
 * endpoint whose creation fails leaves no polling thread.
 * Skipped where the kernel has no fault injection (Debian's kernels; the
 * project's debug kernel has it).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "zcx_raw.h"
#include "zcx_test.h"

#define KiB		1024UL
#define DBG		"/sys/kernel/debug"
#define MAX_NTH		4000
#define SMALL_LEN	100
#define LARGE_LEN	(96 * KiB + 5)
#define RMA_LEN		(64 * KiB + 3)

/* ---- fault-injection knobs ---- */

static const char *const fail_types[] = { "failslab", "fail_page_alloc" };

struct knob {
	const char *type, *name, *value;
	char saved[64];
	bool present;
};

/* What both passes need; probability, task-filter and times are set by the random pass. */
static struct knob knobs[] = {
	{ .type = "failslab", .name = "verbose", .value = "0" },
	{ .type = "failslab", .name = "ignore-gfp-wait", .value = "N" },
	{ .type = "failslab", .name = "cache-filter", .value = "N" },
	{ .type = "failslab", .name = "probability", .value = "0" },
	{ .type = "failslab", .name = "task-filter", .value = "Y" },
	{ .type = "failslab", .name = "interval", .value = "1" },
	{ .type = "failslab", .name = "space", .value = "0" },
	{ .type = "failslab", .name = "times", .value = "-1" },
	{ .type = "fail_page_alloc", .name = "verbose", .value = "0" },
	{ .type = "fail_page_alloc", .name = "ignore-gfp-wait", .value = "N" },
	{ .type = "fail_page_alloc", .name = "ignore-gfp-highmem", .value = "N" },
	{ .type = "fail_page_alloc", .name = "min-order", .value = "0" },
	{ .type = "fail_page_alloc", .name = "probability", .value = "0" },
	{ .type = "fail_page_alloc", .name = "task-filter", .value = "Y" },
	{ .type = "fail_page_alloc", .name = "interval", .value = "1" },
	{ .type = "fail_page_alloc", .name = "space", .value = "0" },
	{ .type = "fail_page_alloc", .name = "times", .value = "-1" },
};
#define NKNOBS	(sizeof(knobs) / sizeof(knobs[0]))

static int knob_write(const char *type, const char *name, const char *value)
{
	char path[128];
	int fd, ret = 0;

	snprintf(path, sizeof(path), DBG "/%s/%s", type, name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, value, strlen(value)) != (ssize_t)strlen(value))
		ret = -errno;
	close(fd);
	return ret;
}

static int knob_read(const char *type, const char *name, char *buf, size_t size)
{
	char path[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), DBG "/%s/%s", type, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/* Whether fault injection is there; mounts debugfs if needed.  NULL or why not. */
static const char *fi_available(void)
{
	struct stat st;
	size_t i;

	if (stat(DBG "/failslab", &st))
		mount("debugfs", DBG, "debugfs", 0, NULL);
	for (i = 0; i < sizeof(fail_types) / sizeof(fail_types[0]); i++) {
		char path[128];

		snprintf(path, sizeof(path), DBG "/%s", fail_types[i]);
		if (stat(path, &st))
			return "no " DBG "/failslab or fail_page_alloc (kernel without "
			       "CONFIG_FAILSLAB/CONFIG_FAIL_PAGE_ALLOC/CONFIG_FAULT_INJECTION_DEBUG_FS)";
	}
	if (stat("/proc/thread-self/fail-nth", &st))
		return "no /proc/thread-self/fail-nth";
	return NULL;
}

/* Save every knob and set ours, probabilities last (they are 0 here anyway). */
static int knobs_set(void)
{
	size_t i;
	int ret;

	for (i = 0; i < NKNOBS; i++) {
		knobs[i].present = !knob_read(knobs[i].type, knobs[i].name, knobs[i].saved,
					      sizeof(knobs[i].saved));
		if (!knobs[i].present)
			continue;
		ret = knob_write(knobs[i].type, knobs[i].name, knobs[i].value);
		if (ret)
			return ret;
	}
	return 0;
}

/* Put everything back: probabilities first, so nothing fails meanwhile. */
static void knobs_restore(void)
{
	size_t i;

	for (i = 0; i < NKNOBS; i++)
		if (knobs[i].present && !strcmp(knobs[i].name, "probability"))
			knob_write(knobs[i].type, knobs[i].name, "0");
	for (i = NKNOBS; i-- > 0;)
		if (knobs[i].present && knobs[i].saved[0]) {
			/* "times" reads back as the remaining count; -1 stays -1. */
			knob_write(knobs[i].type, knobs[i].name, knobs[i].saved);
		}
}

static int proc_write(int fd, const char *value)
{
	return pwrite(fd, value, strlen(value), 0) == (ssize_t)strlen(value) ? 0 : -errno;
}

/* ---- submit and reap on the raw ABI (zcx_raw.h) ---- */

/*
 * ZCX_IOC_ENTER calls that failed for a reason the header does not give
 * ENTER ("a submission's failure is reported in its completion, never by
 * ZCX_IOC_ENTER"), leaving the entry in the SQ, and their errno.
 */
static int enter_undocumented, enter_undocumented_errno;

/*
 * Submit one entry: 0 once the kernel took it, or ENTER's -errno.  An
 * ENTER failure other than the documented ones is counted and the
 * entry, still in the SQ, submitted again, so the ring stays in step.
 */
static int rep_submit(struct zcx_raw_ep *r, const struct zcx_sqe *sqe)
{
	int ret, tries;

	zcx_raw_push(r, sqe);
	for (tries = 0; tries < 1000; tries++) {
		ret = zcx_raw_enter(r, 1, 0, 0);
		if (ret >= 0)
			return ret == 1 ? 0 : -EPROTO;
		if (ret == -EBUSY || ret == -EINTR || ret == -ENOENT || ret == -EINVAL)
			return ret;
		enter_undocumented++;
		enter_undocumented_errno = -ret;
	}
	return ret;
}

static volatile sig_atomic_t alarmed;

static void on_alarm(int sig)
{
	(void)sig;
	alarmed = 1;
}

/* Seconds a completion that must come may take: a hang is reported, not waited out. */
#define REAP_TIMEOUT	20

/*
 * A completion if one is there (1), none (0); @wait: sleep for one, at
 * most REAP_TIMEOUT seconds (then -ETIME).
 */
static int rep_reap(struct zcx_raw_ep *r, struct zcx_cqe *cqe, bool wait)
{
	struct sigaction sa = { .sa_handler = on_alarm };	/* no SA_RESTART */
	int ret = 0;

	if (wait) {
		alarmed = 0;
		sigaction(SIGALRM, &sa, NULL);
		alarm(REAP_TIMEOUT);
	}
	while (!zcx_raw_pop(r, cqe)) {
		if (!wait)
			return 0;
		if (alarmed) {
			ret = -ETIME;
			break;
		}
		ret = zcx_raw_enter(r, 0, ZCX_ENTER_GETEVENTS, 1);
		if (ret < 0 && ret != -EINTR)
			break;
		ret = 0;
	}
	if (wait)
		alarm(0);
	return ret ? ret : 1;
}

/* ---- the scenario ---- */

enum step {
	S_OPEN, S_REG, S_EP, S_CONNECT, S_EXPOSE, S_SMALL, S_LARGE, S_UNEXPECTED,
	S_PUT, S_GET, S_BAR_CREATE, S_BAR_JOIN, NSTEPS
};

static const char *const step_name[NSTEPS] = {
	"open+status mmap", "register", "endpoint+ring mmap", "connect", "expose",
	"small send/recv", "large send/recv", "unexpected small message", "put", "get",
	"barrier create+mmap", "barrier join+mmap",
};

struct env {
	int nth_fd, mif_fd;	/* this thread's fail-nth, make-it-fail */
	int armed;		/* step armed with fail-nth, or -1 */
	int nth;
	bool random;		/* make-it-fail over the whole scenario */
	bool injected;		/* the armed count was reached */
	size_t status_size;	/* of a context's status area */
	char *src, *dst, *rma;	/* data buffers, made before anything is armed */
	/* What happened, for the log. */
	int failed_step, failed_err;
	char why[200];
};

static void arm(struct env *e, int step)
{
	char buf[16];

	if (e->armed != step)
		return;
	snprintf(buf, sizeof(buf), "%d", e->nth);
	proc_write(e->nth_fd, buf);
}

static void disarm(struct env *e, int step)
{
	char buf[16] = { 0 };

	if (e->armed != step)
		return;
	/* 0: the nth call failed; a positive count: never reached. */
	if (pread(e->nth_fd, buf, sizeof(buf) - 1, 0) > 0 && atoi(buf) == 0)
		e->injected = true;
	proc_write(e->nth_fd, "0");
}

/* Errnos an allocation failure may be reported as. */
static bool clean_errno(int err)
{
	return err == -ENOMEM || err == -EFAULT || err == -ENFILE || err == -EAGAIN;
}

#define BAD(fmt, ...) do {							\
	snprintf(e->why, sizeof(e->why), "%s: " fmt, step_name[step], ##__VA_ARGS__); \
	return -1;								\
} while (0)

/*
 * A step's outcome: 0 went on, 1 failed cleanly (errno @err), -1 wrong
 * (e->why says how).  The first clean failure is recorded.
 */
static int outcome(struct env *e, int step, int err)
{
	if (!err)
		return 0;
	if (!clean_errno(err))
		BAD("errno %d (%s) is not an allocation failure's", -err, strerror(-err));
	if (!e->random && e->armed != step)
		BAD("failed (%d, %s) without injection", -err, strerror(-err));
	if (e->failed_step < 0) {
		e->failed_step = step;
		e->failed_err = err;
	}
	return 1;
}

static void fill(char *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (char)(i * 7 + seed + (i >> 9));
}

static bool filled(const char *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != (char)(i * 7 + seed + (i >> 9)))
			return false;
	return true;
}

/*
 * One message A -> B of @len bytes with @tag, the receive posted first
 * (or, @unexpected, after the send).  0 delivered, 1 failed cleanly.
 */
static int message(struct env *e, int step, struct zcx_raw_ep *a, struct zcx_raw_ep *b, __u32 peer,
		   size_t len, __u64 tag, bool unexpected)
{
	struct zcx_sqe rsqe = {
		.opcode = ZCX_OP_RECV, .addr = (uintptr_t)e->dst, .len = len, .tag = tag,
		.tag_mask = ~0ULL, .user_data = 2,
	};
	struct zcx_sqe ssqe = {
		.opcode = ZCX_OP_SEND, .peer = peer, .addr = (uintptr_t)e->src, .len = len,
		.tag = tag, .user_data = 1,
	};
	struct zcx_cqe scqe, rcqe;
	int ret, got;

	fill(e->src, len, (unsigned int)tag);
	memset(e->dst, 0, len);
	if (!unexpected) {
		ret = rep_submit(b, &rsqe);
		if (ret)
			return outcome(e, step, ret);
		/* A receive that could not be posted completes at once. */
		got = rep_reap(b, &rcqe, false);
		if (got < 0)
			BAD("reaping: %d", got);
		if (got) {
			if (rcqe.user_data != 2 || !rcqe.res)
				BAD("receive completed early: res %d", rcqe.res);
			return outcome(e, step, rcqe.res);
		}
	}
	ret = rep_submit(a, &ssqe);
	if (ret)
		return outcome(e, step, ret);
	/* Small sends complete at once; a large one, with its receive posted, too. */
	got = rep_reap(a, &scqe, true);
	if (got != 1 || scqe.user_data != 1)
		BAD("send completion missing (%d)", got);
	if (scqe.res) {
		/* The receive, if posted, stays (its tag is unique) or completes with an errno. */
		if (rep_reap(b, &rcqe, false) == 1 && !clean_errno(rcqe.res))
			BAD("receive of a failed send: res %d", rcqe.res);
		return outcome(e, step, scqe.res);
	}
	if (unexpected) {
		ret = rep_submit(b, &rsqe);
		if (ret)
			return outcome(e, step, ret);
	}
	got = rep_reap(b, &rcqe, true);
	if (got != 1 || rcqe.user_data != 2)
		BAD("receive completion missing (%d)", got);
	if (rcqe.res)
		return outcome(e, step, rcqe.res);
	if (rcqe.len != len || rcqe.tag != tag || !filled(e->dst, len, (unsigned int)tag))
		BAD("delivered %llu bytes, tag %llu, data %s", (unsigned long long)rcqe.len,
		    (unsigned long long)rcqe.tag, filled(e->dst, len, (unsigned int)tag) ? "right" : "wrong");
	return 0;
}

static int rma(struct env *e, int step, struct zcx_raw_ep *a, __u32 peer, bool put, uint64_t rkey)
{
	struct zcx_sqe sqe = {
		.opcode = put ? ZCX_OP_PUT : ZCX_OP_GET, .peer = peer, .len = RMA_LEN,
		.addr = (uintptr_t)e->src, .remote_addr = (uintptr_t)e->rma, .rkey = rkey,
		.user_data = 3,
	};
	struct zcx_cqe cqe;
	int ret;

	if (put)
		fill(e->src, RMA_LEN, 0x91);
	else
		memset(e->src, 0, RMA_LEN);
	ret = rep_submit(a, &sqe);
	if (ret)
		return outcome(e, step, ret);
	if (rep_reap(a, &cqe, true) != 1 || cqe.user_data != 3)
		BAD("completion missing");
	if (cqe.res)
		return outcome(e, step, cqe.res);
	if (cqe.len != RMA_LEN || !filled(put ? e->rma : e->src, RMA_LEN, 0x91))
		BAD("%s moved %llu bytes, data wrong", put ? "put" : "get",
		    (unsigned long long)cqe.len);
	return 0;
}

#define STEP(s, expr) ({							\
	int __r;								\
	arm(e, s);								\
	__r = (expr);								\
	disarm(e, s);								\
	__r;									\
})

/* Check a step: go on, stop the scenario (clean failure of a prerequisite), or fail. */
#define NEED(s, err) do {							\
	int __o = outcome(e, s, (err));						\
	if (__o < 0) { ret = -1; goto out; }					\
	if (__o > 0) { ret = 0; goto out; }					\
} while (0)

/* Unmark this thread; the write itself is retried should it be failed. */
static void unmark(struct env *e)
{
	int i;

	for (i = 0; i < 1000 && proc_write(e->mif_fd, "0"); i++)
		;
}

/* The whole scenario; -1 if something went wrong (e->why), else 0. */
static int scenario(struct env *e)
{
	int fa = -1, fb = -1, ret = 0, o, step;
	struct zcx_test_ctx t = { .fd = -1 };
	struct zcx_bar_create bc = { .nprocs = 2 };
	struct zcx_bar_join bj = { 0 };
	struct zcx_expose x = { 0 };
	struct zcx_mr_reg reg;
	struct zcx_raw_ep a = { .fd = -1 }, b = { .fd = -1 };
	void *page1 = MAP_FAILED, *page2 = MAP_FAILED;
	bool have_a = false, have_b = false;
	__u32 peer = 0;

	if (e->random)
		proc_write(e->mif_fd, "1");

	/*
	 * Open and map the whole status area at once (its size learnt
	 * unarmed in setup): no munmap() under injection, whose failure
	 * would leave a mapping, and so the context, behind.
	 */
	ret = STEP(S_OPEN, ({
		int __r = 0;
		t.fd = zcx_test_open();
		if (t.fd < 0) {
			__r = -errno;
		} else {
			void *__p = mmap(NULL, e->status_size, PROT_READ, MAP_SHARED, t.fd,
					 ZCX_MMAP_STATUS);
			if (__p == MAP_FAILED)
				__r = -errno;
			else
				t.status = __p;
			t.status_size = e->status_size;
		}
		__r;
	}));
	fa = t.fd;
	NEED(S_OPEN, ret);
	ret = STEP(S_REG, zcx_test_reg(&t, e->rma, RMA_LEN, ZCX_ACCESS_ALL, &reg));
	NEED(S_REG, ret);
	if (reg.result != ZCX_MR_MISS) {
		step = S_REG;
		snprintf(e->why, sizeof(e->why), "%s: not a miss", step_name[step]);
		ret = -1;
		goto out;
	}
	zcx_test_dereg(&t, reg.handle);
	fb = zcx_test_open();
	NEED(S_OPEN, fb < 0 ? -errno : 0);
	ret = STEP(S_EP, zcx_raw_ep_create(fa, 0, 32, &a));
	have_a = !ret || a.map;
	NEED(S_EP, ret);
	ret = zcx_raw_ep_create(fb, 0, 32, &b);
	have_b = true;
	NEED(S_EP, ret);
	{
		struct zcx_ep_connect c = { .ep = a.c.ep, .addr = b.c.addr };

		ret = STEP(S_CONNECT, zcx_test_ioctl(fa, ZCX_IOC_EP_CONNECT, &c));
		peer = c.peer;
		NEED(S_CONNECT, ret);
	}
	x.addr = (uintptr_t)e->rma;
	x.length = RMA_LEN;
	x.rights = ZCX_REMOTE_ALL;
	ret = STEP(S_EXPOSE, zcx_test_ioctl(fb, ZCX_IOC_EXPOSE, &x));
	NEED(S_EXPOSE, ret);

	/* Transfers: a failed one must leave the next working. */
	for (step = S_SMALL; step <= S_GET; step++) {
		switch (step) {
		case S_SMALL:
			o = STEP(step, message(e, step, &a, &b, peer, SMALL_LEN, 100 + e->nth, false));
			break;
		case S_LARGE:
			o = STEP(step, message(e, step, &a, &b, peer, LARGE_LEN, 200 + e->nth, false));
			break;
		case S_UNEXPECTED:
			o = STEP(step, message(e, step, &a, &b, peer, SMALL_LEN, 300 + e->nth, true));
			break;
		default:
			o = STEP(step, rma(e, step, &a, peer, step == S_PUT, x.rkey));
			break;
		}
		if (o < 0) {
			ret = -1;
			goto out;
		}
	}
	bc.ep = a.c.ep;
	ret = STEP(S_BAR_CREATE, ({
		int __r = zcx_test_ioctl(fa, ZCX_IOC_BAR_CREATE, &bc);
		if (!__r) {
			page1 = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fa, bc.mmap_offset);
			__r = page1 == MAP_FAILED ? -errno : 0;
		}
		__r;
	}));
	NEED(S_BAR_CREATE, ret);
	bj.ep = b.c.ep;
	bj.addr = bc.addr;
	ret = STEP(S_BAR_JOIN, ({
		int __r = zcx_test_ioctl(fb, ZCX_IOC_BAR_JOIN, &bj);
		if (!__r) {
			page2 = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fb, bj.mmap_offset);
			__r = page2 == MAP_FAILED ? -errno : 0;
		}
		__r;
	}));
	NEED(S_BAR_JOIN, ret);
	/* The members share one page. */
	__atomic_store_n(&((struct zcx_bar_state *)page1)->arrived, 1, __ATOMIC_RELEASE);
	if (__atomic_load_n(&((struct zcx_bar_state *)page2)->arrived, __ATOMIC_ACQUIRE) != 1) {
		step = S_BAR_JOIN;
		snprintf(e->why, sizeof(e->why), "%s: the members' pages differ", step_name[step]);
		ret = -1;
	}
out:
	if (e->random)
		unmark(e);
	if (page1 != MAP_FAILED)
		munmap(page1, 4096);
	if (page2 != MAP_FAILED)
		munmap(page2, 4096);
	if (have_a && a.map)
		munmap(a.map, a.c.mmap_size);
	if (have_b && b.map)
		munmap(b.map, b.c.mmap_size);
	zcx_test_ctx_close(&t);
	if (fb >= 0)
		close(fb);
	return ret < 0 ? -1 : 0;
}

/* ---- the tests ---- */

FIXTURE(fi) {
	struct zcx_test_census before;
	struct env e;
	bool set;
};

FIXTURE_SETUP(fi)
{
	const char *why = fi_available();
	int ret;

	memset(&self->e, 0, sizeof(self->e));
	self->e.nth_fd = self->e.mif_fd = -1;
	if (why)
		SKIP(return, "%s", why);
	self->before = zcx_test_census();
	self->e.nth_fd = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->e.nth_fd);
	self->e.mif_fd = open("/proc/thread-self/make-it-fail", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->e.mif_fd);
	self->e.src = zcx_test_anon(256 * KiB);
	self->e.dst = zcx_test_anon(256 * KiB);
	self->e.rma = zcx_test_anon(256 * KiB);
	ASSERT_TRUE(self->e.src && self->e.dst && self->e.rma);
	/* Faulted in now: the test's own page faults are not what is tested. */
	memset(self->e.src, 1, 256 * KiB);
	memset(self->e.dst, 1, 256 * KiB);
	memset(self->e.rma, 1, 256 * KiB);
	{
		struct zcx_test_ctx t;

		ASSERT_EQ(0, zcx_test_ctx_open(&t));
		self->e.status_size = t.status_size;
		zcx_test_ctx_close(&t);
	}
	/* Last: nothing may fail after it, as teardown does not run for setup failures. */
	ret = knobs_set();
	if (ret)
		knobs_restore();
	ASSERT_EQ(0, ret) TH_LOG("setting the fault-injection knobs: %s", strerror(-ret));
	self->set = true;
}

FIXTURE_TEARDOWN(fi)
{
	const char *leaked;

	/* Disarmed whatever happened, before anything else. */
	if (self->e.nth_fd >= 0) {
		proc_write(self->e.nth_fd, "0");
		close(self->e.nth_fd);
	}
	if (self->e.mif_fd >= 0) {
		proc_write(self->e.mif_fd, "0");
		close(self->e.mif_fd);
	}
	if (self->set)
		knobs_restore();
	if (!self->set)
		return;
	leaked = zcx_test_census_settle(&self->before, 10000);
	EXPECT_EQ(NULL, leaked) TH_LOG("%s not back where the test began", leaked);
}

/* After a run: nothing of it left (unpinning is deferred: bounded wait). */
#define CHECK_CENSUS(what, ...) do {						\
	const char *__l = zcx_test_census_settle(&self->before, 10000);		\
	ASSERT_EQ(NULL, __l) TH_LOG("%s left after " what, __l, ##__VA_ARGS__);	\
} while (0)

TEST_F_TIMEOUT(fi, fail_nth_every_step, 900)
{
	int step, nth, injected_total = 0;

	for (step = 0; step < NSTEPS; step++) {
		int failures = 0;

		for (nth = 1; nth <= MAX_NTH; nth++) {
			self->e.armed = step;
			self->e.nth = nth;
			self->e.injected = false;
			self->e.failed_step = -1;
			self->e.why[0] = 0;
			ASSERT_EQ(0, scenario(&self->e))
				TH_LOG("%s, allocation %d failed: %s", step_name[step], nth, self->e.why);
			CHECK_CENSUS("%s, allocation %d failed", step_name[step], nth);
			if (!self->e.injected) {
				/* The armed count was not reached: the step ran whole. */
				ASSERT_NE(step, self->e.failed_step);
				break;
			}
			if (self->e.failed_step >= 0)
				failures++;
		}
		ASSERT_GE(MAX_NTH, nth) TH_LOG("%s: still failing at allocation %d", step_name[step], nth);
		TH_LOG("%s: %d allocations, %d failures surfaced as errnos", step_name[step], nth - 1,
		       failures);
		injected_total += nth - 1;
	}
	/* The injection reached the module's paths at all. */
	EXPECT_LT(NSTEPS, injected_total);
	EXPECT_EQ(0, enter_undocumented)
		TH_LOG("ZCX_IOC_ENTER failed %d times with errno %d (%s), leaving the entry in the SQ",
		       enter_undocumented, enter_undocumented_errno, strerror(enter_undocumented_errno));
}

/*
 * A barrier member's wake-up whose operation cannot be allocated (ENOMEM
 * in its completion) still wakes the member asleep in a round that is
 * over: nothing else would, until another member arrives or leaves.
 */
TEST_F_TIMEOUT(fi, failed_wake_up_still_wakes_the_sleeper, 120)
{
	struct zcx_sqe sqe = { .opcode = ZCX_OP_BARRIER };
	struct zcx_bar_create bc = { .nprocs = 2 };
	struct zcx_bar_join bj = { 0 };
	struct zcx_bar_state *st;
	struct zcx_raw_ep a, b;
	struct zcx_cqe cqe;
	int fd;

	fd = zcx_test_open();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, zcx_raw_ep_create(fd, 0, 8, &a));
	ASSERT_EQ(0, zcx_raw_ep_create(fd, 0, 8, &b));
	bc.ep = a.c.ep;
	ASSERT_EQ(0, zcx_test_ioctl(fd, ZCX_IOC_BAR_CREATE, &bc));
	bj.ep = b.c.ep;
	bj.addr = bc.addr;
	ASSERT_EQ(0, zcx_test_ioctl(fd, ZCX_IOC_BAR_JOIN, &bj));
	st = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE, MAP_SHARED, fd, bc.mmap_offset);
	ASSERT_NE(MAP_FAILED, st);
	/* a arrived in round 0 and sleeps in the module. */
	st->arrived = 1;
	sqe.peer = bc.bar;
	sqe.user_data = 1;
	ASSERT_EQ(0, rep_submit(&a, &sqe));
	ASSERT_EQ(0, rep_reap(&a, &cqe, false));
	ASSERT_EQ(1, __atomic_load_n(&st->sleepers, __ATOMIC_ACQUIRE));
	/* b arrives last: round 0 is over; its wake-up finds no memory. */
	st->arrived = 0;
	__atomic_store_n(&st->round, 1, __ATOMIC_SEQ_CST);
	sqe.peer = bj.bar;
	sqe.user_data = 2;
	ASSERT_EQ(0, proc_write(self->e.nth_fd, "1"));
	ASSERT_EQ(0, rep_submit(&b, &sqe));
	ASSERT_EQ(0, proc_write(self->e.nth_fd, "0"));
	ASSERT_EQ(1, rep_reap(&b, &cqe, true));
	ASSERT_EQ(-ENOMEM, cqe.res) TH_LOG("not the wake-up's allocation failed");
	ASSERT_EQ(1, rep_reap(&a, &cqe, true)) TH_LOG("the sleeper was not woken");
	EXPECT_EQ(1, cqe.user_data);
	EXPECT_EQ(0, cqe.res);
	EXPECT_EQ(0, __atomic_load_n(&st->sleepers, __ATOMIC_ACQUIRE));
	munmap(st, sizeof(*st));
	zcx_raw_ep_destroy(&a);
	zcx_raw_ep_destroy(&b);
	close(fd);
}

/*
 * Whether this process's polling thread is gone, within 10 s (scaled): it
 * exits as kthread_stop() returns.  Timed by the clock, as each look
 * reads all of /proc.
 */
static bool polling_thread_gone(void)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		if (!zcx_test_polling_thread())
			return true;
		usleep(10000);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < 10 * zcx_test_slowdown());
	return false;
}

/*
 * A polled endpoint whose creation fails leaves nothing behind, not even
 * the polling thread it started for the context.  Endpoints of another
 * context first take ids 1 to 63, so that the new endpoint's id (64)
 * needs memory of its own (one level more in the id table) after the
 * thread started (the creation that succeeds must get id 64).  failslab
 * then fails every allocation of this thread from the one that would use
 * up a budget of "space" bytes on, for a growing budget, until the
 * creation succeeds: each allocation of the call fails in turn, with all
 * that follow it (a single failure of the table's first, non-blocking
 * try would be retried).
 */
TEST_F_TIMEOUT(fi, failed_polled_create_leaves_no_thread, 600)
{
	struct zcx_ep_create c = { 0 };
	struct zcx_raw_ep fill[64];
	int filler, fd, n = 0, failures = 0, ret = -1, err = 0;
	long space;

	filler = zcx_test_open();
	ASSERT_LE(0, filler);
	do {
		ASSERT_GT(64, n);
		ASSERT_EQ(0, zcx_raw_ep_create(filler, 0, 2, &fill[n]));
	} while (fill[n++].c.addr.id < 63);
	ASSERT_EQ(63, fill[n - 1].c.addr.id) TH_LOG("endpoint ids in use elsewhere");
	fd = zcx_test_open();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, zcx_test_polling_thread());
	for (space = 0; ret && space < 256 * 1024; space += 64) {
		char buf[32];

		memset(&c, 0, sizeof(c));
		c.flags = ZCX_EP_POLL;
		c.sq_entries = 2;
		snprintf(buf, sizeof(buf), "%ld", space);
		ASSERT_EQ(0, knob_write("failslab", "space", buf));
		ASSERT_EQ(0, knob_write("failslab", "probability", "100"));
		ASSERT_EQ(0, proc_write(self->e.mif_fd, "1"));
		ret = ioctl(fd, ZCX_IOC_EP_CREATE, &c);
		err = errno;
		unmark(&self->e);
		ASSERT_EQ(0, knob_write("failslab", "probability", "0"));
		if (!ret)
			break;
		failures++;
		ASSERT_TRUE(clean_errno(-err)) TH_LOG("space %ld: %s", space, strerror(err));
		ASSERT_TRUE(polling_thread_gone())
			TH_LOG("space %ld: the failed creation (%s) left a polling thread", space,
			       strerror(err));
	}
	ASSERT_EQ(0, ret) TH_LOG("still failing with %ld bytes", space);
	TH_LOG("%d failed creations, then one with %ld bytes", failures, space);
	EXPECT_LT(0, failures);
	/* Its id needed memory after the thread started: those failures were tried. */
	EXPECT_EQ(64, c.addr.id);
	EXPECT_NE(0, zcx_test_polling_thread());
	close(fd);
	while (n--)
		munmap(fill[n].map, fill[n].c.mmap_size);
	close(filler);
	EXPECT_TRUE(polling_thread_gone());
}

TEST_F_TIMEOUT(fi, random_failures, 900)
{
	static const char *const probs[] = { "1", "5", "20", "50" };
	int run, p, failed = 0, completed = 0;
	size_t i;

	self->e.armed = -1;
	for (p = 0; p < 4; p++) {
		for (i = 0; i < sizeof(fail_types) / sizeof(fail_types[0]); i++)
			ASSERT_EQ(0, knob_write(fail_types[i], "probability", probs[p]));
		for (run = 0; run < 50; run++) {
			self->e.random = true;
			self->e.nth = run;
			self->e.failed_step = -1;
			self->e.why[0] = 0;
			ASSERT_EQ(0, scenario(&self->e))
				TH_LOG("probability %s%%, run %d: %s", probs[p], run, self->e.why);
			self->e.random = false;
			CHECK_CENSUS("probability %s%%, run %d", probs[p], run);
			if (self->e.failed_step >= 0)
				failed++;
			else
				completed++;
		}
		for (i = 0; i < sizeof(fail_types) / sizeof(fail_types[0]); i++)
			ASSERT_EQ(0, knob_write(fail_types[i], "probability", "0"));
	}
	TH_LOG("%d runs met an injected failure, %d completed", failed, completed);
	EXPECT_LT(0, failed);
	EXPECT_EQ(0, enter_undocumented)
		TH_LOG("ZCX_IOC_ENTER failed %d times with errno %d (%s), leaving the entry in the SQ",
		       enter_undocumented, enter_undocumented_errno, strerror(enter_undocumented_errno));
	/* Unarmed, everything works afterwards. */
	self->e.failed_step = -1;
	ASSERT_EQ(0, scenario(&self->e)) TH_LOG("%s", self->e.why);
	EXPECT_EQ(-1, self->e.failed_step);
}

ZCX_TEST_HARNESS_MAIN
