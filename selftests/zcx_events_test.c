// SPDX-License-Identifier: GPL-2.0-only
/*
 * zcx_events_test - invalidation events: the mapped ring and read()/poll()
 * deliver the same events in order; an overflowing ring is reported (as a
 * torn sequence in the ring, as one OVERFLOW event by read()), never
 * silent; bad read() arguments consume nothing.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>

#include "kselftest_harness.h"
#include "zcx_test.h"

FIXTURE(events) {
	struct zcx_test_ctx t;
	struct zcx_test_census before;
	long page;
};

FIXTURE_SETUP(events)
{
	self->before = zcx_test_census();
	ASSERT_EQ(0, zcx_test_ctx_open(&self->t));
	self->page = sysconf(_SC_PAGESIZE);
}

FIXTURE_TEARDOWN(events)
{
	const char *leaked;

	zcx_test_ctx_close(&self->t);
	leaked = zcx_test_census_diff(&self->before);
	EXPECT_EQ(NULL, leaked) TH_LOG("%s not back where the test began", leaked);
}

/* Register @n one-page regions of @buf and release them: they stay cached. */
static int register_pages(struct zcx_test_ctx *t, char *buf, long page, int n,
			  struct zcx_mr_reg *out)
{
	int i, ret;

	for (i = 0; i < n; i++) {
		ret = zcx_test_reg(t, buf + i * page, page, ZCX_ACCESS_ALL, &out[i]);
		if (ret)
			return ret;
		ret = zcx_test_dereg(t, out[i].handle);
		if (ret)
			return ret;
	}
	return 0;
}

TEST_F(events, read_and_ring_agree)
{
	struct zcx_mr_reg r[3];
	struct zcx_event ev[8];
	char *buf = zcx_test_anon(3 * self->page);
	struct pollfd pfd = { .fd = self->t.fd, .events = POLLIN };
	void *bad;
	int i;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, fcntl(self->t.fd, F_SETFL, O_NONBLOCK));
	EXPECT_EQ(-1, read(self->t.fd, ev, sizeof(ev)));
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(0, poll(&pfd, 1, 0));

	ASSERT_EQ(0, register_pages(&self->t, buf, self->page, 3, r));
	ASSERT_EQ(0, munmap(buf, 3 * self->page));
	EXPECT_EQ(3, zcx_test_counter(&self->t, events));
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_EQ(POLLIN, pfd.revents);

	/* Too small for one event: refused, nothing consumed. */
	EXPECT_EQ(-1, read(self->t.fd, ev, sizeof(ev[0]) - 1));
	EXPECT_EQ(EINVAL, errno);
	/* Bad buffer: refused, nothing consumed. */
	bad = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, bad);
	EXPECT_EQ(-1, read(self->t.fd, bad, sizeof(ev)));
	EXPECT_EQ(EFAULT, errno);
	munmap(bad, 4096);

	ASSERT_EQ(3 * sizeof(ev[0]), read(self->t.fd, ev, sizeof(ev)));
	for (i = 0; i < 3; i++) {
		const struct zcx_event *ring = &self->t.events[i];

		EXPECT_EQ(i, ev[i].seq);
		EXPECT_EQ(ZCX_EVENT_UNMAP, ev[i].cause);
		EXPECT_EQ(self->page, ev[i].length);
		EXPECT_EQ(0, memcmp(ring, &ev[i], sizeof(ev[i])));
	}
	/* Each region once, whatever the order within one munmap. */
	for (i = 0; i < 3; i++) {
		int j, found = 0;

		for (j = 0; j < 3; j++)
			found += ev[j].handle == r[i].handle && ev[j].start == r[i].region_start;
		EXPECT_EQ(1, found);
	}
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	EXPECT_EQ(-1, read(self->t.fd, ev, sizeof(ev)));
	EXPECT_EQ(EAGAIN, errno);
}

/* read() takes whole events only, in order, across calls. */
TEST_F(events, partial_reads)
{
	struct zcx_mr_reg r[4];
	struct zcx_event ev[2];
	char *buf = zcx_test_anon(4 * self->page);

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, register_pages(&self->t, buf, self->page, 4, r));
	ASSERT_EQ(0, munmap(buf, 4 * self->page));
	ASSERT_EQ(sizeof(ev[0]), read(self->t.fd, ev, sizeof(ev[0]) + 7));
	EXPECT_EQ(0, ev[0].seq);
	ASSERT_EQ(2 * sizeof(ev[0]), read(self->t.fd, ev, sizeof(ev)));
	EXPECT_EQ(1, ev[0].seq);
	EXPECT_EQ(2, ev[1].seq);
	ASSERT_EQ(sizeof(ev[0]), read(self->t.fd, ev, sizeof(ev)));
	EXPECT_EQ(3, ev[0].seq);
}

TEST_F(events, overflow_is_reported)
{
	unsigned int count = self->t.status->event_count, n = count + 76, i;
	struct zcx_mr_reg *r = calloc(n, sizeof(*r));
	char *buf = zcx_test_anon((size_t)n * self->page);
	struct zcx_event ev[32];
	const struct zcx_event *oldest;
	__u64 expect, got = 0;
	ssize_t len;

	ASSERT_NE(NULL, r);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, register_pages(&self->t, buf, self->page, n, r));
	ASSERT_EQ(0, munmap(buf, (size_t)n * self->page));
	EXPECT_EQ(n, zcx_test_counter(&self->t, events));

	/* A ring reader that wanted event 0 finds it overwritten. */
	oldest = &self->t.events[0];
	EXPECT_EQ(count, oldest->seq);

	/* read() says how many were lost, then continues with the rest. */
	ASSERT_EQ(sizeof(ev[0]), read(self->t.fd, ev, sizeof(ev)));
	EXPECT_EQ(ZCX_EVENT_OVERFLOW, ev[0].cause);
	EXPECT_EQ(0, ev[0].seq);
	EXPECT_EQ(n - count, ev[0].lost);
	expect = n - count;
	ASSERT_EQ(0, fcntl(self->t.fd, F_SETFL, O_NONBLOCK));
	while ((len = read(self->t.fd, ev, sizeof(ev))) > 0) {
		for (i = 0; i < len / sizeof(ev[0]); i++) {
			EXPECT_EQ(expect, ev[i].seq);
			EXPECT_EQ(ZCX_EVENT_UNMAP, ev[i].cause);
			expect++;
			got++;
		}
	}
	EXPECT_EQ(count, got);
	EXPECT_EQ(n, expect);
	free(r);
}

struct reader {
	int fd;
	pid_t tid;
	struct zcx_event ev;
	ssize_t len;
};

static void *blocking_reader(void *arg)
{
	struct reader *rd = arg;

	__atomic_store_n(&rd->tid, gettid(), __ATOMIC_RELEASE);
	rd->len = read(rd->fd, &rd->ev, sizeof(rd->ev));
	return NULL;
}

/* A reader blocked in read() wakes when a munmap invalidates. */
TEST_F(events, blocking_read_wakes)
{
	struct reader rd = { .fd = self->t.fd };
	struct zcx_mr_reg r;
	char *buf = zcx_test_anon(self->page);
	pthread_t thread;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, zcx_test_reg(&self->t, buf, self->page, ZCX_ACCESS_ALL, &r));
	ASSERT_EQ(0, pthread_create(&thread, NULL, blocking_reader, &rd));
	EXPECT_TRUE(zcx_test_await_thread_state(&rd.tid, 'S', 10000));
	EXPECT_EQ(0, zcx_test_counter(&self->t, events));
	ASSERT_EQ(0, munmap(buf, self->page));
	ASSERT_EQ(0, pthread_join(thread, NULL));
	EXPECT_EQ(sizeof(rd.ev), rd.len);
	EXPECT_EQ(r.handle, rd.ev.handle);
	EXPECT_EQ(ZCX_EVENT_UNMAP, rd.ev.cause);
	EXPECT_EQ(0, zcx_test_dereg(&self->t, r.handle));
}

ZCX_TEST_HARNESS_MAIN
