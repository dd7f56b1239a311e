/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * zcx_creds.h - the selftests' unprivileged processes: dropping root, and
 * what such a process has pinned (mm->pinned_vm, which RLIMIT_MEMLOCK
 * limits).
 */
#ifndef ZCX_CREDS_H
#define ZCX_CREDS_H

#include <grp.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define ZCX_TEST_NOBODY	65534

/*
 * Become uid/gid 65534 (real, effective and saved: setuid() and setgid()
 * as root set all three) with no supplementary groups; 0 or -1.
 */
static inline int zcx_test_drop_to_nobody(void)
{
	if (setgroups(0, NULL) || setgid(ZCX_TEST_NOBODY) || setuid(ZCX_TEST_NOBODY))
		return -1;
	return geteuid() == ZCX_TEST_NOBODY && getegid() == ZCX_TEST_NOBODY ? 0 : -1;
}

/* This process's pinned memory (mm->pinned_vm) in KiB, from VmPin; -1 if unknown. */
static inline long long zcx_test_vmpin_kib(void)
{
	char line[256];
	long long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %lld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* VmPin once it reached @want (unpinning is deferred), polling for at most 5 s. */
static inline long long zcx_test_vmpin_settle(long long want)
{
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	long long now;
	int i;

	for (i = 0; i < 500; i++) {
		now = zcx_test_vmpin_kib();
		if (now == want)
			break;
		nanosleep(&tick, NULL);
	}
	return now;
}

#endif /* ZCX_CREDS_H */
