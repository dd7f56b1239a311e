// SPDX-License-Identifier: MIT
/*
 * zcx_regcache - the registration cache at work: a repeated registration
 * is a hit without a system call; after munmap + mmap at the same address
 * the old registration is stale and a new one pins the new memory; the
 * change arrives as an event.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "zcx.h"

#define LEN (1 << 20)

static void on_event(void *arg, const struct zcx_event *ev)
{
	(void)arg;
	printf("  event %llu: [%#llx, +%llu) went stale, cause %u\n",
	       (unsigned long long)ev->seq, (unsigned long long)ev->start,
	       (unsigned long long)ev->length, ev->cause);
}

static int check(int ret, const char *what)
{
	if (ret < 0)
		fprintf(stderr, "%s: %s\n", what, zcx_strerror(ret));
	return ret < 0;
}

int main(void)
{
	struct zcx_mr *first, *again, *fresh;
	struct zcx_mr_stats st;
	struct zcx *zcx;
	char *buf;

	if (check(zcx_open(&zcx, 0), "zcx_open"))
		return 1;
	buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return 1;
	memset(buf, 'a', LEN);

	if (check(zcx_mr_reg(zcx, buf, LEN, ZCX_ACCESS_ALL, &first), "register") ||
	    check(zcx_mr_reg(zcx, buf, LEN, ZCX_ACCESS_ALL, &again), "register again"))
		return 1;
	zcx_mr_stats(zcx, &st);
	printf("registered 1 MiB twice: handle %#llx, %llu miss (pinned %llu pages), "
	       "%llu library hit (no system call)\n",
	       (unsigned long long)zcx_mr_handle(first), (unsigned long long)st.misses,
	       (unsigned long long)st.kernel.pinned_pages, (unsigned long long)st.lib_hits);

	/* Same address, different memory. */
	mmap(buf, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	printf("after munmap + mmap at the same address: registration valid? %s\n",
	       zcx_mr_valid(zcx, first) ? "yes (BUG)" : "no, stale");
	if (check(zcx_mr_reg(zcx, buf, LEN, ZCX_ACCESS_ALL, &fresh), "register new memory"))
		return 1;
	zcx_mr_stats(zcx, &st);
	printf("registered again: new handle %#llx (%llu stale entry replaced, %llu misses)\n",
	       (unsigned long long)zcx_mr_handle(fresh), (unsigned long long)st.stale,
	       (unsigned long long)st.misses);
	printf("events:\n");
	zcx_events_drain(zcx, on_event, NULL);

	zcx_mr_dereg(zcx, first);
	zcx_mr_dereg(zcx, again);
	zcx_mr_dereg(zcx, fresh);
	zcx_close(zcx);
	munmap(buf, LEN);
	return 0;
}
