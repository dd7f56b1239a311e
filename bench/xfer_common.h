/* SPDX-License-Identifier: MIT */
/*
 * xfer_common.h - what the transport benchmarks (xfer_bench, peer_bench,
 * mpi_bench) share: message sizes, timing, CPU pinning, buffers and the
 * CSV they print.
 *
 * Every program prints rows "system,test,param,rep,value":
 *   lat       param = message bytes, value = one-way latency in ns
 *             (half a ping-pong round trip, as ucx_perftest reports it);
 *   bw        param = message bytes, value = streaming bandwidth in MB/s
 *             (10^6 bytes per second);
 *   bar       param = processes, value = ns per barrier (rank 0's mean);
 *   syscalls  param = message bytes (or processes for barriers), value =
 *             system calls per message (per barrier and process);
 *   copies    param = message bytes, value = times each payload byte is
 *             copied (structural: from the design, not timed);
 *   pkts, regs  (xfer_bench -n) param = message bytes, value = packets
 *             the RDMA device sent, registrations it was asked for, per
 *             message (bw_pkts, bw_regs: in the bandwidth test).
 * rep is the repetition (1..N), or 0 for structural rows.
 */
#ifndef XFER_COMMON_H
#define XFER_COMMON_H

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* 8 B to 4 MiB for latency, 4 KiB to 16 MiB for bandwidth. */
static const size_t lat_sizes[] = { 8, 64, 512, 4096, 8192, 65536, 262144,
				    1048576, 4194304 };
static const size_t bw_sizes[] = { 4096, 16384, 65536, 262144, 1048576,
				   4194304, 16777216 };
#define NLAT	(sizeof(lat_sizes) / sizeof(lat_sizes[0]))
#define NBW	(sizeof(bw_sizes) / sizeof(bw_sizes[0]))
#define MAX_MSG	16777216UL

/* Messages in flight per window of a bandwidth test, as osu_bw does. */
#define BW_WINDOW	16

static inline unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Pin the caller to CPU @cpu modulo the CPUs online; quiet on failure. */
static inline void pin_cpu(int cpu)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;

	if (n < 2)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu % n, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* Page-aligned anonymous memory, written so that it is populated. */
static inline void *xfer_buf(size_t len, int fill)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	memset(p, fill, len);
	return p;
}

/* Shared between a parent and the children it forks afterwards. */
static inline void *xfer_shared(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	memset(p, 0, len);
	return p;
}

/*
 * Iterations so that a measurement lasts about @target_ns, from a trial of
 * @trial_iters that took @trial_ns; at least @min.
 */
static inline long xfer_iters(unsigned long long trial_ns, long trial_iters,
			      unsigned long long target_ns, long min)
{
	double per = trial_ns ? (double)trial_ns / trial_iters : 1.0;
	long n = (long)(target_ns / per);

	return n < min ? min : n;
}

static inline void xfer_row(const char *sys, const char *test, size_t param, int rep, double v)
{
	printf("%s,%s,%zu,%d,%.6g\n", sys, test, param, rep, v);
}

#endif /* XFER_COMMON_H */
