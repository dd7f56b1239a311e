// SPDX-License-Identifier: MIT
/*
 * peer_bench - the kernel's own single copy between two processes
 * (process_vm_readv, "CMA") and a single-thread memcpy of the same sizes:
 * the references xfer_bench's figures are compared with.
 *
 * cma lat: a ping-pong between two processes pinned to different CPUs.
 *   A message is announced by a sequence number in a shared page; the
 *   receiver pulls it with one process_vm_readv() from the sender's buffer
 *   into its own and answers the same way.  That is how MPI and UCX use
 *   CMA (rendezvous, receiver reads): 1 system call and 1 copy per
 *   message, by construction.
 * cma bw: one process reads the other's buffer with process_vm_readv() in
 *   a loop (no synchronisation at all): the kernel's single-copy speed.
 * memcpy lat/bw: one thread copies between two buffers of the size.
 *
 * Usage: peer_bench [-r REPS] [-t MS]   (defaults 3 repetitions, 200 ms
 * per measurement).  Prints the CSV rows described in xfer_common.h.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdatomic.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "xfer_common.h"

struct shared {
	_Atomic long seq_a;	/* A announces ping i; -1: stop */
	_Atomic long seq_b;	/* B announces pong i */
	char pad[64];
};

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void pull(pid_t pid, void *remote, void *local, size_t len)
{
	struct iovec l = { local, len }, r = { remote, len };
	ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);

	if (n != (ssize_t)len)
		die("process_vm_readv");
}

/* The responder of the ping-pong: B pulls each ping, then announces a pong. */
static void cma_responder(struct shared *sh, pid_t a, char *bufa, char *bufb, size_t len)
{
	long last = 0, s;

	pin_cpu(1);
	for (;;) {
		while ((s = atomic_load_explicit(&sh->seq_a, memory_order_acquire)) == last)
			;
		if (s < 0)
			_exit(0);
		pull(a, bufa, bufb, len);
		last = s;
		atomic_store_explicit(&sh->seq_b, s, memory_order_release);
	}
}

/* One-way ns per message over @iters round trips. */
static double cma_pingpong(struct shared *sh, pid_t b, char *bufa, char *bufb, size_t len,
			   long *seq, long iters)
{
	unsigned long long t0 = now_ns();
	long i;

	for (i = 0; i < iters; i++) {
		long s = ++*seq;

		atomic_store_explicit(&sh->seq_a, s, memory_order_release);
		while (atomic_load_explicit(&sh->seq_b, memory_order_acquire) != s)
			;
		pull(b, bufb, bufa, len);
	}
	return (double)(now_ns() - t0) / (2.0 * iters);
}

static void bench_cma_lat(int reps, unsigned long long target)
{
	char *bufa = xfer_buf(MAX_MSG, 'a'), *bufb = xfer_buf(MAX_MSG, 'b');
	size_t i;
	int r;

	for (i = 0; i < NLAT; i++) {
		size_t len = lat_sizes[i];
		struct shared *sh = xfer_shared(sizeof(*sh));
		long seq = 0, iters;
		unsigned long long t0;
		pid_t b;

		fflush(stdout);
		b = fork();
		if (b < 0)
			die("fork");
		if (b == 0)
			cma_responder(sh, getppid(), bufa, bufb, len);
		pin_cpu(0);
		/* Warm up and calibrate. */
		t0 = now_ns();
		cma_pingpong(sh, b, bufa, bufb, len, &seq, 20);
		iters = xfer_iters(now_ns() - t0, 20, target, 20);
		for (r = 1; r <= reps; r++)
			xfer_row("cma", "lat", len, r,
				 cma_pingpong(sh, b, bufa, bufb, len, &seq, iters));
		atomic_store(&sh->seq_a, -1);
		waitpid(b, NULL, 0);
		munmap(sh, sizeof(*sh));
		xfer_row("cma", "syscalls", len, 0, 1);
		xfer_row("cma", "copies", len, 0, 1);
	}
	munmap(bufa, MAX_MSG);
	munmap(bufb, MAX_MSG);
}

static double cma_loop(pid_t b, char *remote, char *local, size_t len, long iters)
{
	unsigned long long t0 = now_ns();
	long i;

	for (i = 0; i < iters; i++)
		pull(b, remote, local, len);
	return (double)len * iters / ((now_ns() - t0) / 1e9) / 1e6;
}

static void bench_cma_bw(int reps, unsigned long long target)
{
	char *local = xfer_buf(MAX_MSG, 'a'), *remote = xfer_buf(MAX_MSG, 'b');
	int pfd[2], r;
	size_t i;
	pid_t b;

	if (pipe(pfd))
		die("pipe");
	fflush(stdout);
	b = fork();
	if (b < 0)
		die("fork");
	if (b == 0) {
		char c;

		/* Own the pages (no sharing with the parent), then wait. */
		memset(remote, 'c', MAX_MSG);
		close(pfd[1]);
		if (read(pfd[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(pfd[0]);
	pin_cpu(0);
	for (i = 0; i < NBW; i++) {
		size_t len = bw_sizes[i];
		unsigned long long t0 = now_ns();
		long iters;

		cma_loop(b, remote, local, len, 4);
		iters = xfer_iters(now_ns() - t0, 4, target, 4);
		for (r = 1; r <= reps; r++)
			xfer_row("cma", "bw", len, r, cma_loop(b, remote, local, len, iters));
	}
	close(pfd[1]);
	waitpid(b, NULL, 0);
	munmap(local, MAX_MSG);
	munmap(remote, MAX_MSG);
}

static unsigned long long memcpy_loop(char *dst, const char *src, size_t len, long iters)
{
	unsigned long long t0 = now_ns();
	long i;

	for (i = 0; i < iters; i++) {
		memcpy(dst, src, len);
		/* Keep the compiler from merging or dropping the copies. */
		__asm__ __volatile__("" : : "r"(dst) : "memory");
	}
	return now_ns() - t0;
}

static void bench_memcpy(int reps, unsigned long long target)
{
	char *src = xfer_buf(MAX_MSG, 's'), *dst = xfer_buf(MAX_MSG, 'd');
	size_t i;
	int r;

	pin_cpu(0);
	for (i = 0; i < NLAT; i++) {
		size_t len = lat_sizes[i];
		long iters = xfer_iters(memcpy_loop(dst, src, len, 20), 20, target, 20);

		for (r = 1; r <= reps; r++)
			xfer_row("memcpy", "lat", len, r,
				 (double)memcpy_loop(dst, src, len, iters) / iters);
		xfer_row("memcpy", "syscalls", len, 0, 0);
		xfer_row("memcpy", "copies", len, 0, 1);
	}
	for (i = 0; i < NBW; i++) {
		size_t len = bw_sizes[i];
		long iters = xfer_iters(memcpy_loop(dst, src, len, 4), 4, target, 4);

		for (r = 1; r <= reps; r++)
			xfer_row("memcpy", "bw", len, r, (double)len * iters /
				 (memcpy_loop(dst, src, len, iters) / 1e9) / 1e6);
	}
	munmap(src, MAX_MSG);
	munmap(dst, MAX_MSG);
}

int main(int argc, char **argv)
{
	unsigned long long target = 200 * 1000000ULL;
	int reps = 3, opt;

	while ((opt = getopt(argc, argv, "r:t:h")) != -1) {
		switch (opt) {
		case 'r':
			reps = atoi(optarg);
			break;
		case 't':
			target = strtoull(optarg, NULL, 0) * 1000000ULL;
			break;
		default:
			fprintf(stderr, "usage: peer_bench [-r REPS] [-t MS]\n");
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("system,test,param,rep,value\n");
	bench_memcpy(reps, target);
	bench_cma_lat(reps, target);
	bench_cma_bw(reps, target);
	return 0;
}
