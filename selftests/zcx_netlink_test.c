// SPDX-License-Identifier: GPL-2.0-only
/*
 * zcx_netlink_test - the "zcx" generic netlink family, zcxctl and the
 * tracepoints: statistics equal the status area and what the test did
 * (registrations, hits, munmap, bytes moved); a user sees only their own
 * processes and may not set parameters or flush others'; parameters round
 * trip and bad values change nothing; zcxctl prints the same numbers as
 * a table and as JSON, with distinct exit codes; the tracepoints fire.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "zcx_nl.h"
#include "zcx_creds.h"
#include "zcx_raw.h"
#include "zcx_test.h"
#include "zcx.h"

static struct zcx_nl_msg stats_of(long pid, int *ret)
{
	struct zcx_nl_msg msg;

	*ret = zcx_nl_do_pid(ZCX_CMD_GET_STATS, pid, &msg);
	return msg;
}

FIXTURE(nl) {
	struct zcx_test_ctx t;
	struct zcx_test_census before;
	long page;
};

FIXTURE_SETUP(nl)
{
	self->before = zcx_test_census();
	ASSERT_EQ(0, zcx_test_ctx_open(&self->t));
	self->page = sysconf(_SC_PAGESIZE);
}

FIXTURE_TEARDOWN(nl)
{
	const char *leaked;

	zcx_test_ctx_close(&self->t);
	/* Closing a context unpins synchronously: no settling needed. */
	leaked = zcx_test_census_diff(&self->before);
	EXPECT_EQ(NULL, leaked) TH_LOG("%s not back where the test began", leaked);
}

/* The netlink numbers of this process equal its status area's counters. */
static void expect_matches_status(struct __test_metadata *_metadata,
				  const struct zcx_test_ctx *t, long page)
{
	struct zcx_nl_msg s;
	int ret;

	s = stats_of(getpid(), &ret);
	ASSERT_EQ(0, ret);
	EXPECT_EQ(getpid(), s.val[ZCX_ATTR_PID]);
	EXPECT_EQ(1, s.val[ZCX_ATTR_CONTEXTS]);
	EXPECT_EQ(zcx_test_counter(t, hits), s.val[ZCX_ATTR_HITS]);
	EXPECT_EQ(zcx_test_counter(t, misses), s.val[ZCX_ATTR_MISSES]);
	EXPECT_EQ(zcx_test_counter(t, invalidations), s.val[ZCX_ATTR_INVALIDATIONS]);
	EXPECT_EQ(zcx_test_counter(t, evictions), s.val[ZCX_ATTR_EVICTIONS]);
	EXPECT_EQ(zcx_test_counter(t, events), s.val[ZCX_ATTR_EVENTS]);
	EXPECT_EQ(zcx_test_counter(t, regions), s.val[ZCX_ATTR_REGIONS]);
	EXPECT_EQ(zcx_test_counter(t, pinned_pages) * page, s.val[ZCX_ATTR_PINNED_BYTES]);
	/* No RDMA device here: present, and zero (zcx_ib_test sees them count). */
	EXPECT_TRUE(s.has[ZCX_ATTR_DEV_REGS] && s.has[ZCX_ATTR_DEV_REGS_TOTAL] &&
		    s.has[ZCX_ATTR_DEV_REGS_POSTED]);
	EXPECT_EQ(zcx_test_counter(t, dev_regs), s.val[ZCX_ATTR_DEV_REGS]);
	EXPECT_EQ(zcx_test_counter(t, dev_regs_total), s.val[ZCX_ATTR_DEV_REGS_TOTAL]);
	EXPECT_EQ(zcx_test_counter(t, dev_regs_posted), s.val[ZCX_ATTR_DEV_REGS_POSTED]);
}

TEST_F(nl, stats_match_status_and_activity)
{
	char *buf = zcx_test_anon(4 * self->page);
	struct zcx_mr_reg a, b, c, other;
	struct zcx_nl_msg s, global;
	int fd2, ret;

	ASSERT_NE(NULL, buf);
	memset(buf, 1, 4 * self->page);
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, 2 * self->page, ZCX_ACCESS_ALL, &a));
	ASSERT_EQ(ZCX_MR_MISS, a.result);
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, self->page, ZCX_ACCESS_READ, &b));
	ASSERT_EQ(ZCX_MR_HIT, b.result);
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf + 3 * self->page, self->page, ZCX_ACCESS_ALL, &c));
	ASSERT_EQ(ZCX_MR_MISS, c.result);

	expect_matches_status(_metadata, &self->t, self->page);
	s = stats_of(getpid(), &ret);
	ASSERT_EQ(0, ret);
	EXPECT_EQ(1, s.val[ZCX_ATTR_HITS]);
	EXPECT_EQ(2, s.val[ZCX_ATTR_MISSES]);
	EXPECT_EQ(2, s.val[ZCX_ATTR_REGIONS]);
	EXPECT_EQ(3 * self->page, s.val[ZCX_ATTR_PINNED_BYTES]);
	EXPECT_EQ(0, s.val[ZCX_ATTR_INVALIDATIONS]);
	EXPECT_EQ(0, s.val[ZCX_ATTR_ENDPOINTS]);

	/* munmap invalidates both, before it returns: cause "unmap". */
	ASSERT_EQ(0, munmap(buf, 4 * self->page));
	s = stats_of(getpid(), &ret);
	ASSERT_EQ(0, ret);
	EXPECT_EQ(2, s.val[ZCX_ATTR_INVALIDATIONS]);
	EXPECT_EQ(2, s.val[ZCX_ATTR_INVAL_UNMAP]);
	EXPECT_EQ(0, s.val[ZCX_ATTR_INVAL_CLEAR]);
	EXPECT_EQ(2, s.val[ZCX_ATTR_EVENTS]);
	ASSERT_EQ(0, zcx_test_dereg(&self->t, a.handle));
	ASSERT_EQ(0, zcx_test_dereg(&self->t, b.handle));
	ASSERT_EQ(0, zcx_test_dereg(&self->t, c.handle));
	/* The reaper is done once a flush returns: the gauges settle. */
	ASSERT_LE(0, zcx_test_flush(&self->t));
	expect_matches_status(_metadata, &self->t, self->page);
	s = stats_of(getpid(), &ret);
	EXPECT_EQ(0, s.val[ZCX_ATTR_REGIONS]);
	EXPECT_EQ(0, s.val[ZCX_ATTR_PINNED_BYTES]);

	/* A second context of the process adds up; module-wide too. */
	fd2 = zcx_test_open();
	ASSERT_LE(0, fd2);
	buf = zcx_test_anon(self->page);
	ASSERT_NE(NULL, buf);
	memset(&other, 0, sizeof(other));
	other.addr = (uintptr_t)buf;
	other.length = self->page;
	other.access = ZCX_ACCESS_ALL;
	ASSERT_EQ(0, zcx_test_ioctl(fd2, ZCX_IOC_MR_REG, &other));
	s = stats_of(getpid(), &ret);
	ASSERT_EQ(0, ret);
	EXPECT_EQ(2, s.val[ZCX_ATTR_CONTEXTS]);
	EXPECT_EQ(3, s.val[ZCX_ATTR_MISSES]);
	EXPECT_EQ(1, s.val[ZCX_ATTR_REGIONS]);
	global = stats_of(0, &ret);
	ASSERT_EQ(0, ret);
	EXPECT_FALSE(global.has[ZCX_ATTR_PID]);
	EXPECT_EQ(zcx_test_stat("contexts"), global.val[ZCX_ATTR_CONTEXTS]);
	EXPECT_EQ(zcx_test_stat("regions"), global.val[ZCX_ATTR_REGIONS]);
	EXPECT_EQ(zcx_test_stat("pinned_pages") * self->page, global.val[ZCX_ATTR_PINNED_BYTES]);
	EXPECT_LE(3, global.val[ZCX_ATTR_MISSES]);
	close(fd2);
	munmap(buf, self->page);

	/* A closed context's counters stay in the module-wide totals. */
	s = stats_of(0, &ret);
	ASSERT_EQ(0, ret);
	EXPECT_EQ(global.val[ZCX_ATTR_MISSES], s.val[ZCX_ATTR_MISSES]);
	EXPECT_EQ(global.val[ZCX_ATTR_CONTEXTS] - 1, s.val[ZCX_ATTR_CONTEXTS]);
}

struct region_list {
	int count;
	struct zcx_nl_msg msgs[8];
};

static void collect(const struct zcx_nl_msg *msg, void *arg)
{
	struct region_list *list = arg;

	if (list->count < 8)
		list->msgs[list->count] = *msg;
	list->count++;
}

static int regions_of(long pid, struct region_list *list)
{
	struct zcx_nl_req req = { 0 };

	memset(list, 0, sizeof(*list));
	zcx_nl_add(&req, ZCX_ATTR_PID, pid, false);
	return zcx_nl_request(ZCX_CMD_GET_REGIONS, true, &req, collect, list);
}

static const struct zcx_nl_msg *find_region(const struct region_list *list, __u64 handle)
{
	int i;

	for (i = 0; i < list->count && i < 8; i++)
		if (list->msgs[i].val[ZCX_ATTR_REGION_HANDLE] == handle)
			return &list->msgs[i];
	return NULL;
}

TEST_F(nl, region_list)
{
	char *buf = zcx_test_anon(3 * self->page);
	const struct zcx_nl_msg *m;
	struct zcx_mr_reg a, b;
	struct region_list list;

	ASSERT_NE(NULL, buf);
	memset(buf, 1, 3 * self->page);
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, 2 * self->page, ZCX_ACCESS_ALL, &a));
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf + 2 * self->page, 100, ZCX_ACCESS_READ, &b));

	ASSERT_EQ(0, regions_of(getpid(), &list));
	ASSERT_EQ(2, list.count);
	m = find_region(&list, a.handle);
	ASSERT_NE(NULL, m);
	EXPECT_EQ((uintptr_t)buf, m->val[ZCX_ATTR_REGION_START]);
	EXPECT_EQ(2 * self->page, m->val[ZCX_ATTR_REGION_LENGTH]);
	EXPECT_EQ(ZCX_ACCESS_ALL, m->val[ZCX_ATTR_REGION_ACCESS]);
	EXPECT_EQ(ZCX_NL_REGION_LIVE, m->val[ZCX_ATTR_REGION_STATE]);
	EXPECT_EQ(1, m->val[ZCX_ATTR_REGION_USERS]);
	EXPECT_FALSE(m->has[ZCX_ATTR_REGION_MONITOR]);
	EXPECT_EQ(getpid(), m->val[ZCX_ATTR_PID]);
	m = find_region(&list, b.handle);
	ASSERT_NE(NULL, m);
	EXPECT_EQ((uintptr_t)buf + 2 * self->page, m->val[ZCX_ATTR_REGION_START]);
	EXPECT_EQ(self->page, m->val[ZCX_ATTR_REGION_LENGTH]);
	EXPECT_EQ(ZCX_ACCESS_READ, m->val[ZCX_ATTR_REGION_ACCESS]);

	/* Released: cached, no users.  Unmapped: stale while a handle holds it. */
	ASSERT_EQ(0, zcx_test_dereg(&self->t, a.handle));
	ASSERT_EQ(0, munmap(buf + 2 * self->page, self->page));
	ASSERT_EQ(0, regions_of(getpid(), &list));
	ASSERT_EQ(2, list.count);
	m = find_region(&list, a.handle);
	ASSERT_NE(NULL, m);
	EXPECT_EQ(0, m->val[ZCX_ATTR_REGION_USERS]);
	EXPECT_EQ(ZCX_NL_REGION_LIVE, m->val[ZCX_ATTR_REGION_STATE]);
	m = find_region(&list, b.handle);
	ASSERT_NE(NULL, m);
	EXPECT_EQ(ZCX_NL_REGION_STALE, m->val[ZCX_ATTR_REGION_STATE]);

	ASSERT_EQ(0, zcx_test_dereg(&self->t, b.handle));
	ASSERT_LE(0, zcx_test_flush(&self->t));
	ASSERT_EQ(0, regions_of(getpid(), &list));
	EXPECT_EQ(0, list.count);
	munmap(buf, 2 * self->page);
}

TEST_F(nl, transfer_counts)
{
	size_t big = 64 * 1024;
	struct zcx_nl_msg s, g0, g1;
	char *sbuf = zcx_test_anon(big), *rbuf = zcx_test_anon(big);
	struct zcx_ep *a, *b;
	struct zcx_req req = { 0 };
	struct zcx_addr addr;
	struct zcx *zcx;
	uint32_t peer;
	int ret;

	ASSERT_NE(NULL, sbuf);
	ASSERT_NE(NULL, rbuf);
	memset(sbuf, 7, big);
	g0 = stats_of(0, &ret);
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, zcx_open(&zcx, 0));
	ASSERT_EQ(0, zcx_ep_create(zcx, 0, 0, &a));
	ASSERT_EQ(0, zcx_ep_create(zcx, 0, 0, &b));
	zcx_ep_addr(b, &addr);
	ASSERT_EQ(0, zcx_ep_connect(a, &addr, &peer));

	/* Inline, zero-copy, and one truncated (an error completion). */
	ASSERT_EQ(0, zcx_send(a, peer, sbuf, 100, 1));
	ASSERT_EQ(100, zcx_recv(b, rbuf, big, 1, ~0ULL, NULL));
	ASSERT_EQ(0, zcx_irecv(b, rbuf, big, 2, ~0ULL, &req));
	/* Posted now, not with b's next doorbell: the send waits for it. */
	ASSERT_EQ(0, zcx_ep_flush(b));
	ASSERT_EQ(0, zcx_send(a, peer, sbuf, big, 2));
	ASSERT_EQ(0, zcx_wait(b, &req));
	ASSERT_EQ(0, req.status);
	ASSERT_EQ(big, req.len);
	ASSERT_EQ(0, zcx_send(a, peer, sbuf, 200, 3));
	ASSERT_EQ(-EMSGSIZE, zcx_recv(b, rbuf, 50, 3, ~0ULL, NULL));

	s = stats_of(getpid(), &ret);
	ASSERT_EQ(0, ret);
	EXPECT_EQ(2, s.val[ZCX_ATTR_CONTEXTS]);
	EXPECT_EQ(2, s.val[ZCX_ATTR_ENDPOINTS]);
	EXPECT_EQ(6, s.val[ZCX_ATTR_OPS]);
	EXPECT_EQ(1, s.val[ZCX_ATTR_ERRORS]);
	EXPECT_EQ(100 + big + 200, s.val[ZCX_ATTR_TX_BYTES]);
	EXPECT_EQ(100 + big + 50, s.val[ZCX_ATTR_RX_BYTES]);

	/* Destroyed endpoints keep their counts in the context ... */
	zcx_ep_destroy(a);
	s = stats_of(getpid(), &ret);
	ASSERT_EQ(0, ret);
	EXPECT_EQ(1, s.val[ZCX_ATTR_ENDPOINTS]);
	EXPECT_EQ(6, s.val[ZCX_ATTR_OPS]);
	zcx_ep_destroy(b);
	zcx_close(zcx);
	/* ... and closed contexts in the module's totals. */
	g1 = stats_of(0, &ret);
	ASSERT_EQ(0, ret);
	EXPECT_EQ(6, g1.val[ZCX_ATTR_OPS] - g0.val[ZCX_ATTR_OPS]);
	EXPECT_EQ(1, g1.val[ZCX_ATTR_ERRORS] - g0.val[ZCX_ATTR_ERRORS]);
	EXPECT_EQ(100 + big + 200, g1.val[ZCX_ATTR_TX_BYTES] - g0.val[ZCX_ATTR_TX_BYTES]);
	EXPECT_EQ(0, g1.val[ZCX_ATTR_ENDPOINTS]);
	munmap(sbuf, big);
	munmap(rbuf, big);
}

TEST_F(nl, flush_drops_unused_regions)
{
	char *buf = zcx_test_anon(2 * self->page);
	struct zcx_mr_reg cached, held, again;
	struct zcx_nl_req req = { 0 };
	struct zcx_nl_msg reply;
	__u64 evictions = zcx_test_counter(&self->t, evictions);

	ASSERT_NE(NULL, buf);
	memset(buf, 1, 2 * self->page);
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, self->page, ZCX_ACCESS_ALL, &cached));
	ASSERT_EQ(0, zcx_test_dereg(&self->t, cached.handle));
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf + self->page, self->page, ZCX_ACCESS_ALL, &held));

	ASSERT_EQ(0, zcx_nl_do_pid(ZCX_CMD_FLUSH, getpid(), &reply));
	EXPECT_EQ(1, reply.val[ZCX_ATTR_FLUSHED]);
	EXPECT_EQ(getpid(), reply.val[ZCX_ATTR_PID]);
	/* Stale at once; the one in use stays. */
	EXPECT_FALSE(zcx_test_valid(&self->t, &cached));
	EXPECT_TRUE(zcx_test_valid(&self->t, &held));
	EXPECT_EQ(evictions + 1, zcx_test_counter(&self->t, evictions));
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, self->page, ZCX_ACCESS_ALL, &again));
	EXPECT_EQ(ZCX_MR_MISS, again.result);

	/* Bad requests: no pid, pid 0, a process without zcx. */
	EXPECT_EQ(-EINVAL, zcx_nl_request(ZCX_CMD_FLUSH, false, NULL, NULL, NULL));
	zcx_nl_add(&req, ZCX_ATTR_PID, 0, false);
	EXPECT_EQ(-EINVAL, zcx_nl_request(ZCX_CMD_FLUSH, false, &req, NULL, NULL));
	EXPECT_EQ(-ESRCH, zcx_nl_do_pid(ZCX_CMD_FLUSH, 1, &reply));
	EXPECT_EQ(1, zcx_test_counter(&self->t, evictions) - evictions);

	ASSERT_EQ(0, zcx_test_dereg(&self->t, again.handle));
	ASSERT_EQ(0, zcx_test_dereg(&self->t, held.handle));
	munmap(buf, 2 * self->page);
}

TEST(bad_requests)
{
	struct zcx_nl_req req = { 0 };
	struct zcx_nl_msg reply;

	EXPECT_EQ(-EINVAL, zcx_nl_request(ZCX_CMD_GET_REGIONS, true, NULL, NULL, NULL));
	EXPECT_EQ(-ESRCH, zcx_nl_do_pid(ZCX_CMD_GET_STATS, 1, &reply));
	zcx_nl_add(&req, ZCX_ATTR_PID, 0xffffffffULL, false);
	EXPECT_EQ(-EINVAL, zcx_nl_request(ZCX_CMD_GET_STATS, false, &req, NULL, NULL));
	EXPECT_EQ(-EINVAL, zcx_nl_request(ZCX_CMD_GET_REGIONS, true, &req, NULL, NULL));
	/* Counters are replies, not requests. */
	memset(&req, 0, sizeof(req));
	zcx_nl_add(&req, ZCX_ATTR_HITS, 1, true);
	EXPECT_EQ(-EINVAL, zcx_nl_request(ZCX_CMD_GET_STATS, false, &req, NULL, NULL));
}

/*
 * A context whose process exited while another process holds it open (it
 * took the descriptor) answers to that process's number no more: the
 * number may be another process's by now, which would find the context
 * in its way (EPERM for another user) and be counted with it.
 */
TEST(contexts_of_an_exited_process_answer_to_its_number_no_more)
{
	int fd_out[2], go[2], status, child_fd = -1, held, pidfd;
	struct zcx_nl_msg msg;
	pid_t child;
	int ret;

	ASSERT_EQ(0, pipe2(fd_out, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(go, O_CLOEXEC));
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		int fd = zcx_test_open();
		char c;

		if (write(fd_out[1], &fd, sizeof(fd)) != sizeof(fd) || fd < 0)
			_exit(1);
		_exit(read(go[0], &c, 1) == 1 ? 0 : 2);
	}
	ASSERT_EQ(sizeof(child_fd), read(fd_out[0], &child_fd, sizeof(child_fd)));
	ASSERT_LE(0, child_fd);
	pidfd = pidfd_open(child, 0);
	ASSERT_LE(0, pidfd);
	held = pidfd_getfd(pidfd, child_fd, 0);
	ASSERT_LE(0, held) TH_LOG("pidfd_getfd: %s", strerror(errno));
	msg = stats_of(child, &ret);
	EXPECT_EQ(0, ret);
	EXPECT_EQ(1, msg.val[ZCX_ATTR_CONTEXTS]);

	ASSERT_EQ(1, write(go[1], "x", 1));
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) TH_LOG("%#x", status);
	/* Still open here, but of nobody's number. */
	stats_of(child, &ret);
	EXPECT_EQ(-ESRCH, ret);

	close(held);
	close(pidfd);
	close(fd_out[0]);
	close(fd_out[1]);
	close(go[0]);
	close(go[1]);
}

struct proc_list {
	int count;
	int foreign;		/* entries not of the expected uid */
	int of_pid;		/* entries of @pid */
	long pid;
	unsigned int uid;
};

static void count_procs(const struct zcx_nl_msg *msg, void *arg)
{
	struct proc_list *list = arg;

	list->count++;
	if (msg->val[ZCX_ATTR_UID] != list->uid)
		list->foreign++;
	if ((long)msg->val[ZCX_ATTR_PID] == list->pid)
		list->of_pid++;
}

/* In a child that became "nobody": what it may see and do.  0 if right. */
static int unprivileged_checks(pid_t parent, long page)
{
	struct zcx_nl_req req = { 0 };
	struct proc_list procs = { .uid = ZCX_TEST_NOBODY };
	struct region_list regions;
	struct zcx_nl_msg msg;
	struct zcx_mr_reg reg = { 0 };
	int fd, ret;
	void *buf;

	if (zcx_nl_do_pid(ZCX_CMD_GET_STATS, parent, &msg) != -EPERM)
		return 1;
	if (regions_of(parent, &regions) != -EPERM)
		return 2;
	if (zcx_nl_do_pid(ZCX_CMD_FLUSH, parent, &msg) != -EPERM)
		return 3;
	zcx_nl_add(&req, ZCX_ATTR_PARAM_ZCOPY_THRESHOLD, 4096, false);
	if (zcx_nl_request(ZCX_CMD_SET_PARAMS, false, &req, NULL, NULL) != -EPERM)
		return 4;
	/* Module-wide totals and parameters are public. */
	if (zcx_nl_do_pid(ZCX_CMD_GET_STATS, 0, &msg) || zcx_nl_do_pid(ZCX_CMD_GET_PARAMS, 0, &msg))
		return 5;
	/* Nothing of the parent's (root's) in the list. */
	procs.pid = parent;
	if (zcx_nl_request(ZCX_CMD_GET_PROCS, true, NULL, count_procs, &procs) ||
	    procs.foreign || procs.of_pid)
		return 6;

	/* Its own context: visible, and its own to flush. */
	fd = zcx_test_open();
	buf = zcx_test_anon(page);
	if (fd < 0 || !buf)
		return 7;
	memset(buf, 1, page);
	reg.addr = (uintptr_t)buf;
	reg.length = page;
	reg.access = ZCX_ACCESS_ALL;
	if (zcx_test_ioctl(fd, ZCX_IOC_MR_REG, &reg))
		return 8;
	ret = zcx_nl_do_pid(ZCX_CMD_GET_STATS, getpid(), &msg);
	if (ret || msg.val[ZCX_ATTR_MISSES] != 1 || msg.val[ZCX_ATTR_CONTEXTS] != 1)
		return 9;
	memset(&procs, 0, sizeof(procs));
	procs.uid = ZCX_TEST_NOBODY;
	procs.pid = getpid();
	if (zcx_nl_request(ZCX_CMD_GET_PROCS, true, NULL, count_procs, &procs) ||
	    procs.count != 1 || procs.of_pid != 1 || procs.foreign)
		return 10;
	if (regions_of(getpid(), &regions) || regions.count != 1)
		return 11;
	if (zcx_nl_do_pid(ZCX_CMD_FLUSH, getpid(), &msg) || msg.val[ZCX_ATTR_FLUSHED] != 0)
		return 12;
	close(fd);
	return 0;
}

TEST_F(nl, other_users_see_only_their_own)
{
	struct proc_list procs = { .uid = 0 };
	pid_t parent = getpid(), child;
	int status;

	if (geteuid() != 0)
		SKIP(return, "needs root to become another user");
	/* Root sees its own context. */
	procs.pid = parent;
	ASSERT_EQ(0, zcx_nl_request(ZCX_CMD_GET_PROCS, true, NULL, count_procs, &procs));
	EXPECT_EQ(1, procs.of_pid);

	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		if (zcx_test_drop_to_nobody())
			_exit(100);
		_exit(unprivileged_checks(parent, self->page));
	}
	ASSERT_EQ(child, waitpid(child, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("unprivileged check %d failed",
						 WEXITSTATUS(status));
}

/* Parameters: saved, and restored whatever the test does. */
FIXTURE(params) {
	struct zcx_nl_msg saved;
};

FIXTURE_SETUP(params)
{
	if (geteuid() != 0)
		SKIP(return, "needs root");
	ASSERT_EQ(0, zcx_nl_do_pid(ZCX_CMD_GET_PARAMS, 0, &self->saved));
}

static int set_params(const struct zcx_nl_req *req, struct zcx_nl_msg *reply)
{
	memset(reply, 0, sizeof(*reply));
	return zcx_nl_request(ZCX_CMD_SET_PARAMS, false, req, zcx_nl_copy, reply);
}

FIXTURE_TEARDOWN(params)
{
	static const int settable[] = {
		ZCX_ATTR_PARAM_CACHE_ENTRIES, ZCX_ATTR_PARAM_ZCOPY_THRESHOLD,
		ZCX_ATTR_PARAM_EAGER_CREDITS, ZCX_ATTR_PARAM_POLL_IDLE_US,
	};
	struct zcx_nl_req req = { 0 };
	struct zcx_nl_msg now;
	size_t i;

	if (geteuid() != 0)
		return;
	for (i = 0; i < sizeof(settable) / sizeof(settable[0]); i++)
		zcx_nl_add(&req, settable[i], self->saved.val[settable[i]], false);
	zcx_nl_add(&req, ZCX_ATTR_PARAM_CACHE_BYTES,
		   self->saved.val[ZCX_ATTR_PARAM_CACHE_BYTES], true);
	EXPECT_EQ(0, set_params(&req, &now));
	for (i = 0; i < sizeof(settable) / sizeof(settable[0]); i++)
		EXPECT_EQ(self->saved.val[settable[i]], now.val[settable[i]]);
}

static long long sysfs_param(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/module/zcx/parameters/%s", name);
	return zcx_test_read_number(path);
}

TEST_F(params, set_round_trips_bad_values_change_nothing)
{
	__u64 zcopy = self->saved.val[ZCX_ATTR_PARAM_ZCOPY_THRESHOLD] == 8192 ? 8000 : 8192;
	__u64 idle = self->saved.val[ZCX_ATTR_PARAM_POLL_IDLE_US] + 7;
	struct zcx_nl_req req = { 0 };
	struct zcx_nl_msg reply, now;
	struct zcx_query q = { 0 };
	struct zcx_test_ctx t;
	int fd;

	EXPECT_TRUE(self->saved.has[ZCX_ATTR_PARAM_RING_DEPTH]);
	EXPECT_TRUE(self->saved.has[ZCX_ATTR_PARAM_MAX_POLLERS]);
	EXPECT_EQ(sysfs_param("max_pollers_per_user"),
		  self->saved.val[ZCX_ATTR_PARAM_MAX_POLLERS_PER_USER]);
	EXPECT_EQ(ZCX_ABI_VERSION, self->saved.val[ZCX_ATTR_ABI_VERSION]);
	EXPECT_EQ(sysfs_param("ring_depth"), self->saved.val[ZCX_ATTR_PARAM_RING_DEPTH]);

	/* Two at once, and a cache size for contexts opened from now on. */
	zcx_nl_add(&req, ZCX_ATTR_PARAM_ZCOPY_THRESHOLD, zcopy, false);
	zcx_nl_add(&req, ZCX_ATTR_PARAM_POLL_IDLE_US, idle, false);
	zcx_nl_add(&req, ZCX_ATTR_PARAM_CACHE_ENTRIES, 16, false);
	ASSERT_EQ(0, set_params(&req, &reply));
	EXPECT_EQ(zcopy, reply.val[ZCX_ATTR_PARAM_ZCOPY_THRESHOLD]);
	EXPECT_EQ(idle, reply.val[ZCX_ATTR_PARAM_POLL_IDLE_US]);
	ASSERT_EQ(0, zcx_nl_do_pid(ZCX_CMD_GET_PARAMS, 0, &now));
	EXPECT_EQ(zcopy, now.val[ZCX_ATTR_PARAM_ZCOPY_THRESHOLD]);
	EXPECT_EQ(idle, now.val[ZCX_ATTR_PARAM_POLL_IDLE_US]);
	EXPECT_EQ(16, now.val[ZCX_ATTR_PARAM_CACHE_ENTRIES]);
	EXPECT_EQ(zcopy, sysfs_param("zcopy_threshold"));
	EXPECT_EQ(idle, sysfs_param("poll_idle_us"));
	fd = zcx_test_open();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, zcx_test_ioctl(fd, ZCX_IOC_QUERY, &q));
	EXPECT_EQ(zcopy, q.zcopy_threshold);
	EXPECT_EQ(16, q.cache_entries);
	close(fd);
	ASSERT_EQ(0, zcx_test_ctx_open(&t));
	EXPECT_EQ(16, t.status->gen_count);
	zcx_test_ctx_close(&t);

	/* Out of range, alone or next to a good value: nothing changes. */
	memset(&req, 0, sizeof(req));
	zcx_nl_add(&req, ZCX_ATTR_PARAM_ZCOPY_THRESHOLD, 65537, false);
	EXPECT_EQ(-EINVAL, set_params(&req, &reply));
	memset(&req, 0, sizeof(req));
	zcx_nl_add(&req, ZCX_ATTR_PARAM_POLL_IDLE_US, 5, false);
	zcx_nl_add(&req, ZCX_ATTR_PARAM_CACHE_ENTRIES, 0, false);
	EXPECT_EQ(-EINVAL, set_params(&req, &reply));
	memset(&req, 0, sizeof(req));
	zcx_nl_add(&req, ZCX_ATTR_PARAM_POLL_IDLE_US, 1000001, false);
	EXPECT_EQ(-EINVAL, set_params(&req, &reply));
	memset(&req, 0, sizeof(req));
	zcx_nl_add(&req, ZCX_ATTR_PARAM_CACHE_ENTRIES, (1U << 20) + 1, false);
	EXPECT_EQ(-EINVAL, set_params(&req, &reply));
	/* Fixed at load time; and an empty request. */
	memset(&req, 0, sizeof(req));
	zcx_nl_add(&req, ZCX_ATTR_PARAM_RING_DEPTH, 64, false);
	EXPECT_EQ(-EINVAL, set_params(&req, &reply));
	memset(&req, 0, sizeof(req));
	zcx_nl_add(&req, ZCX_ATTR_PARAM_MAX_POLLERS_PER_USER, 1, false);
	EXPECT_EQ(-EINVAL, set_params(&req, &reply));
	memset(&req, 0, sizeof(req));
	EXPECT_EQ(-EINVAL, set_params(&req, &reply));
	ASSERT_EQ(0, zcx_nl_do_pid(ZCX_CMD_GET_PARAMS, 0, &reply));
	EXPECT_EQ(0, memcmp(now.val, reply.val, sizeof(now.val)));
	EXPECT_EQ(sysfs_param("ring_depth"), reply.val[ZCX_ATTR_PARAM_RING_DEPTH]);
}

/* --- zcxctl ---------------------------------------------------------------- */

/* build/tools/zcxctl next to build/selftests/<us>, or $ZCXCTL. */
static const char *zcxctl_path(void)
{
	static char path[PATH_MAX + 32];
	char self_path[PATH_MAX];
	ssize_t n;
	char *slash;

	if (getenv("ZCXCTL"))
		return getenv("ZCXCTL");
	n = readlink("/proc/self/exe", self_path, sizeof(self_path) - 1);
	if (n <= 0)
		return NULL;
	self_path[n] = '\0';
	slash = strrchr(self_path, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	snprintf(path, sizeof(path), "%s/../tools/zcxctl", self_path);
	return access(path, X_OK) ? NULL : path;
}

/* Run zcxctl with @args; its output in @out, its exit status returned. */
static int run_zcxctl(const char *args, char *out, size_t size)
{
	char cmd[PATH_MAX + 512];
	size_t len = 0;
	FILE *p;
	int status;

	snprintf(cmd, sizeof(cmd), "%s %s 2>/dev/null", zcxctl_path(), args);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (len + 1 < size && fgets(out + len, size - len, p))
		len += strlen(out + len);
	out[len] = '\0';
	status = pclose(p);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The number after "key": in JSON, or after "key " at a table line's start. */
static long long json_number(const char *text, const char *key)
{
	char pattern[64];
	const char *at;

	snprintf(pattern, sizeof(pattern), "\"%s\":", key);
	at = strstr(text, pattern);
	return at ? strtoll(at + strlen(pattern), NULL, 10) : -1;
}

static long long table_number(const char *text, const char *key)
{
	const char *line = text;
	size_t len = strlen(key);

	for (; line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
		if (!strncmp(line, key, len) && line[len] == ' ')
			return strtoll(line + len, NULL, 10);
	return -1;
}

/* Exec zcxctl @arg1 @arg2 after @setup() in a child; its exit status. */
static int zcxctl_in_child(int (*setup)(void), const char *arg1, const char *arg2,
			   const char *arg3)
{
	pid_t child = fork();
	int status, devnull;

	if (child < 0)
		return -1;
	if (!child) {
		devnull = open("/dev/null", O_WRONLY);
		dup2(devnull, 1);
		dup2(devnull, 2);
		if (setup())
			_exit(100);
		execl(zcxctl_path(), "zcxctl", arg1, arg2, arg3, (char *)NULL);
		_exit(101);
	}
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* The family lives in the initial network namespace only. */
static int other_netns(void)
{
	return unshare(CLONE_NEWNET);
}

/* Six runs of zcxctl, each a program started from the 9p root: slow in TCG. */
TEST_F_TIMEOUT(nl, zcxctl_prints_the_numbers, 120)
{
	char *buf = zcx_test_anon(2 * self->page);
	char out[16384], args[64], addr[32];
	struct zcx_mr_reg a, b;

	if (!zcxctl_path())
		SKIP(return, "build/tools/zcxctl not built");
	ASSERT_NE(NULL, buf);
	memset(buf, 1, 2 * self->page);
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, 2 * self->page, ZCX_ACCESS_ALL, &a));
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, self->page, ZCX_ACCESS_ALL, &b));

	snprintf(args, sizeof(args), "-j stats -p %d", getpid());
	ASSERT_EQ(0, run_zcxctl(args, out, sizeof(out)));
	EXPECT_EQ(getpid(), json_number(out, "pid")) TH_LOG("%s", out);
	EXPECT_EQ(1, json_number(out, "hits"));
	EXPECT_EQ(1, json_number(out, "misses"));
	EXPECT_EQ(1, json_number(out, "regions"));
	EXPECT_EQ(2 * self->page, json_number(out, "pinned_bytes"));
	EXPECT_EQ(0, json_number(out, "invalidations"));

	snprintf(args, sizeof(args), "stats -p %d", getpid());
	ASSERT_EQ(0, run_zcxctl(args, out, sizeof(out)));
	EXPECT_EQ(getpid(), table_number(out, "pid")) TH_LOG("%s", out);
	EXPECT_EQ(1, table_number(out, "hits"));
	EXPECT_EQ(1, table_number(out, "misses"));
	EXPECT_EQ(2 * self->page, table_number(out, "pinned_bytes"));

	snprintf(args, sizeof(args), "-j regions -p %d", getpid());
	ASSERT_EQ(0, run_zcxctl(args, out, sizeof(out)));
	EXPECT_EQ((long long)(uintptr_t)buf, json_number(out, "start")) TH_LOG("%s", out);
	EXPECT_EQ(2 * self->page, json_number(out, "length"));
	EXPECT_EQ(2, json_number(out, "users"));
	EXPECT_NE(NULL, strstr(out, "\"state\":\"live\""));
	snprintf(args, sizeof(args), "regions -p %d", getpid());
	ASSERT_EQ(0, run_zcxctl(args, out, sizeof(out)));
	snprintf(addr, sizeof(addr), "0x%-16lx", (unsigned long)(uintptr_t)buf);
	EXPECT_NE(NULL, strstr(out, addr)) TH_LOG("%s", out);

	ASSERT_EQ(0, run_zcxctl("-j status", out, sizeof(out)));
	EXPECT_LE(1, json_number(out, "contexts"));
	snprintf(args, sizeof(args), "\"pid\":%d", getpid());
	EXPECT_NE(NULL, strstr(out, args)) TH_LOG("%s", out);
	ASSERT_EQ(0, run_zcxctl("params", out, sizeof(out)));
	EXPECT_EQ(sysfs_param("ring_depth"), table_number(out, "ring_depth"));

	/* Exit codes: usage, no such process, no rights, no module. */
	EXPECT_EQ(2, run_zcxctl("regions", out, sizeof(out)));
	EXPECT_EQ(2, run_zcxctl("set no_such_param 1", out, sizeof(out)));
	EXPECT_EQ(1, run_zcxctl("set zcopy_threshold 65537", out, sizeof(out)));
	EXPECT_EQ(5, run_zcxctl("stats -p 1", out, sizeof(out)));
	if (geteuid() == 0) {
		EXPECT_EQ(4, zcxctl_in_child(zcx_test_drop_to_nobody, "set", "zcopy_threshold",
					     "4096"));
		EXPECT_EQ(3, zcxctl_in_child(other_netns, "status", NULL, NULL));
	}

	ASSERT_EQ(0, zcx_test_dereg(&self->t, a.handle));
	ASSERT_EQ(0, zcx_test_dereg(&self->t, b.handle));
	munmap(buf, 2 * self->page);
}

/* --- tracepoints ------------------------------------------------------------ */

#define TRACEFS		"/sys/kernel/tracing"
#define INSTANCE	TRACEFS "/instances/zcx_selftest"

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_TRUNC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -EIO;
}

static size_t read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY);
	size_t len = 0;
	ssize_t n;

	if (fd < 0)
		return 0;
	while (len + 1 < size && (n = read(fd, buf + len, size - len - 1)) > 0)
		len += n;
	buf[len] = '\0';
	close(fd);
	return len;
}

/* A trace line of @event that also contains @text. */
static bool traced(const char *trace, const char *event, const char *text)
{
	const char *line = trace, *end;
	char name[64];

	snprintf(name, sizeof(name), " %s: ", event);
	while ((line = strstr(line, name))) {
		end = strchr(line, '\n');
		if (!end)
			end = line + strlen(line);
		if (!text || (memmem(line, end - line, text, strlen(text))))
			return true;
		line = end;
	}
	return false;
}

TEST(tracepoints_fire)
{
	static char trace[1 << 20];
	long page = sysconf(_SC_PAGESIZE);
	struct zcx_mr_reg miss, hit, evicted;
	struct zcx_test_ctx t;
	struct zcx_ep *a, *b;
	struct zcx_addr addr;
	struct zcx *zcx;
	char start[64], *buf, msg[16] = "ping";
	uint32_t peer;

	if (geteuid() != 0)
		SKIP(return, "needs root for tracefs");
	if (access(TRACEFS "/trace", F_OK) &&
	    mount("tracefs", TRACEFS, "tracefs", 0, NULL))
		SKIP(return, "no tracefs");
	ASSERT_EQ(0, access(TRACEFS "/events/zcx/zcx_reg_miss", F_OK));
	/* An instance of our own: its buffer and switches touch no one else's. */
	if (mkdir(INSTANCE, 0700) && errno != EEXIST)
		SKIP(return, "no tracefs instances");
	ASSERT_EQ(0, write_file(INSTANCE "/trace", ""));
	ASSERT_EQ(0, write_file(INSTANCE "/events/zcx/enable", "1"));

	ASSERT_EQ(0, zcx_test_ctx_open(&t));
	buf = zcx_test_anon(2 * page);
	ASSERT_NE(NULL, buf);
	memset(buf, 1, 2 * page);
	ASSERT_EQ(0, zcx_test_reg(&t, buf, page, ZCX_ACCESS_ALL, &miss));
	ASSERT_EQ(0, zcx_test_reg(&t, buf, page, ZCX_ACCESS_ALL, &hit));
	ASSERT_EQ(0, zcx_test_reg(&t, buf + page, page, ZCX_ACCESS_ALL, &evicted));
	ASSERT_EQ(0, zcx_test_dereg(&t, evicted.handle));
	ASSERT_LE(0, zcx_test_flush(&t));
	ASSERT_EQ(0, munmap(buf, page));
	ASSERT_EQ(0, zcx_test_dereg(&t, miss.handle));
	ASSERT_EQ(0, zcx_test_dereg(&t, hit.handle));

	ASSERT_EQ(0, zcx_open(&zcx, 0));
	ASSERT_EQ(0, zcx_ep_create(zcx, 0, 0, &a));
	ASSERT_EQ(0, zcx_ep_create(zcx, 0, 0, &b));
	zcx_ep_addr(b, &addr);
	ASSERT_EQ(0, zcx_ep_connect(a, &addr, &peer));
	ASSERT_EQ(0, zcx_send(a, peer, msg, sizeof(msg), 9));
	ASSERT_EQ((ssize_t)sizeof(msg), zcx_recv(b, msg, sizeof(msg), 9, ~0ULL, NULL));
	zcx_ep_destroy(a);
	zcx_ep_destroy(b);
	zcx_close(zcx);

	ASSERT_EQ(0, write_file(INSTANCE "/events/zcx/enable", "0"));
	read_file(INSTANCE "/trace", trace, sizeof(trace));
	snprintf(start, sizeof(start), "start=0x%lx ", (unsigned long)(uintptr_t)buf);
	EXPECT_TRUE(traced(trace, "zcx_reg_miss", start)) TH_LOG("%s", trace);
	EXPECT_TRUE(traced(trace, "zcx_reg_hit", start));
	EXPECT_TRUE(traced(trace, "zcx_region_invalidate", "cause=unmap"));
	snprintf(start, sizeof(start), "start=0x%lx ", (unsigned long)(uintptr_t)buf + page);
	EXPECT_TRUE(traced(trace, "zcx_region_evict", start));
	EXPECT_TRUE(traced(trace, "zcx_submit", "op=send"));
	EXPECT_TRUE(traced(trace, "zcx_submit", "op=recv"));
	EXPECT_TRUE(traced(trace, "zcx_complete", "op=send res=0 len=16"));
	EXPECT_TRUE(traced(trace, "zcx_complete", "op=recv res=0 len=16"));

	zcx_test_ctx_close(&t);
	munmap(buf + page, page);
	rmdir(INSTANCE);
}

/*
 * Contexts opening, registering, unmapping and closing while other threads
 * list, dump and flush them: nothing may crash, hang or leak (the VM run
 * fails on any kernel splat).
 */
struct query {
	struct zcx_nl_msg msg;
	int ret;
};

static void *query_stats(void *arg)
{
	struct query *q = arg;

	q->msg = stats_of(getpid(), &q->ret);
	return NULL;
}

/*
 * A submission stuck in a page fault for as long as its process likes
 * (an inline send's payload on a page under a userfaultfd that nobody
 * serves) while another thread destroys that endpoint, which waits for
 * it: the numbers are answered at once all the same.  Netlink counts
 * under the node-wide list of contexts, which every open and close of
 * /dev/zcx takes; had it waited for the endpoint, one process could stall
 * them all.  The endpoint being destroyed already counts as gone.
 */
TEST_F_TIMEOUT(nl, stats_do_not_wait_for_a_stuck_endpoint, 120)
{
	struct zcx_raw_ep stuck_ep, live_ep;
	struct zcx_ep_connect conn = { 0 };
	struct uffdio_zeropage zp = { 0 };
	struct zcx_raw_stuck enter = { .r = &stuck_ep }, destroy = { .r = &stuck_ep };
	struct pollfd fault = { .events = POLLIN };
	struct query q = { 0 };
	pthread_t enter_thread, destroy_thread, query_thread;
	int joined;
	struct timespec deadline;
	struct zcx_sqe sqe;
	char *page = mmap(NULL, self->page, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_NE(MAP_FAILED, page);
	fault.fd = zcx_test_uffd(page, self->page);
	ASSERT_LE(0, fault.fd);
	ASSERT_EQ(0, zcx_raw_ep_create(self->t.fd, 0, 0, &stuck_ep));
	ASSERT_EQ(0, zcx_raw_ep_create(self->t.fd, 0, 0, &live_ep));
	conn.ep = stuck_ep.c.ep;
	conn.addr = live_ep.c.addr;
	ASSERT_EQ(0, zcx_test_ioctl(self->t.fd, ZCX_IOC_EP_CONNECT, &conn));
	sqe = (struct zcx_sqe){ .opcode = ZCX_OP_SEND, .peer = conn.peer,
				.addr = (uintptr_t)page, .len = 64 };
	zcx_raw_push(&stuck_ep, &sqe);

	ASSERT_EQ(0, pthread_create(&enter_thread, NULL, zcx_raw_stuck_enter, &enter));
	ASSERT_EQ(1, poll(&fault, 1, 60000));
	ASSERT_EQ(0, pthread_create(&destroy_thread, NULL, zcx_raw_stuck_destroy, &destroy));
	/* Uninterruptible: waiting for the submission to finish. */
	EXPECT_TRUE(zcx_test_await_thread_state(&destroy.tid, 'D', 10000));

	ASSERT_EQ(0, pthread_create(&query_thread, NULL, query_stats, &q));
	ASSERT_EQ(0, clock_gettime(CLOCK_REALTIME, &deadline));
	deadline.tv_sec += 10 * zcx_test_slowdown();
	joined = pthread_timedjoin_np(query_thread, NULL, &deadline);
	EXPECT_EQ(0, joined);
	if (!joined) {
		EXPECT_EQ(0, q.ret);
		EXPECT_EQ(1, q.msg.val[ZCX_ATTR_ENDPOINTS]);
	}

	/* Serve the fault: everything goes on. */
	zp.range.start = (uintptr_t)page;
	zp.range.len = self->page;
	ASSERT_EQ(0, ioctl(fault.fd, UFFDIO_ZEROPAGE, &zp));
	ASSERT_EQ(0, pthread_join(enter_thread, NULL));
	ASSERT_EQ(0, pthread_join(destroy_thread, NULL));
	if (joined)
		ASSERT_EQ(0, pthread_join(query_thread, NULL));
	EXPECT_EQ(1, enter.ret);
	EXPECT_EQ(0, destroy.ret);
	munmap(stuck_ep.map, stuck_ep.c.mmap_size);
	EXPECT_EQ(0, zcx_raw_ep_destroy(&live_ep));
	close(fault.fd);
	munmap(page, self->page);
}

struct churn {
	bool stop;		/* __atomic: the churning thread is done */
	long page;
	int rounds;
};

static void *churn_contexts(void *arg)
{
	struct churn *c = arg;
	struct zcx_test_ctx t;
	struct zcx_mr_reg reg;
	char *buf;
	int i;

	for (i = 0; i < c->rounds; i++) {
		if (zcx_test_ctx_open(&t))
			break;
		buf = zcx_test_anon(2 * c->page);
		if (buf) {
			memset(buf, 1, 2 * c->page);
			if (!zcx_test_reg(&t, buf, c->page, ZCX_ACCESS_ALL, &reg))
				zcx_test_dereg(&t, reg.handle);
			zcx_test_reg(&t, buf + c->page, c->page, ZCX_ACCESS_ALL, &reg);
			munmap(buf, 2 * c->page);
		}
		zcx_test_ctx_close(&t);
	}
	__atomic_store_n(&c->stop, true, __ATOMIC_RELEASE);
	return NULL;
}

TEST(queries_race_with_teardown)
{
	struct churn c = {
		.page = sysconf(_SC_PAGESIZE),
		.rounds = 300 / zcx_test_slowdown(),
	};
	struct zcx_test_census before = zcx_test_census();
	struct region_list regions;
	struct proc_list procs;
	struct zcx_nl_msg msg;
	pthread_t thread;
	int ret, queries = 0;

	ASSERT_EQ(0, pthread_create(&thread, NULL, churn_contexts, &c));
	while (!__atomic_load_n(&c.stop, __ATOMIC_ACQUIRE)) {
		memset(&procs, 0, sizeof(procs));
		EXPECT_EQ(0, zcx_nl_request(ZCX_CMD_GET_PROCS, true, NULL, count_procs, &procs));
		/* The other thread's context comes and goes: 0 or ESRCH. */
		ret = regions_of(getpid(), &regions);
		EXPECT_TRUE(ret == 0 || ret == -ESRCH) TH_LOG("regions: %d", ret);
		ret = zcx_nl_do_pid(ZCX_CMD_FLUSH, getpid(), &msg);
		EXPECT_TRUE(ret == 0 || ret == -ESRCH) TH_LOG("flush: %d", ret);
		ret = zcx_nl_do_pid(ZCX_CMD_GET_STATS, getpid(), &msg);
		EXPECT_TRUE(ret == 0 || ret == -ESRCH) TH_LOG("stats: %d", ret);
		queries++;
	}
	ASSERT_EQ(0, pthread_join(thread, NULL));
	EXPECT_LT(0, queries);
	EXPECT_EQ(NULL, zcx_test_census_diff(&before));
	EXPECT_EQ(-ESRCH, zcx_nl_do_pid(ZCX_CMD_GET_STATS, getpid(), &msg));
}

ZCX_TEST_HARNESS_MAIN
