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
 * units (-T units; run on the host, where zcx cannot be loaded): the unit
 * costs a projection of zcx's figures is built from, system "unit":
 *   syscall  ns of one trivial system call (getppid);
 *   pin      ns to pin, copy one byte from and release a lone page of
 *            another process: one process_vm_readv() of 256 one-byte
 *            pieces on 256 pages, less a system call, per page;
 *   pin_bulk ns per page to pin a 1 MiB range in one go: process_vm_readv()
 *            of 1 MiB less a system call and a memcpy() of 1 MiB, per page;
 *   handoff  ns for one process to see a store of another on the other
 *            CPU (a shared-word ping-pong, one way);
 *   copy     param = bytes: ns per byte of the kernel's copy between two
 *            processes, from process_vm_readv() of that size less a system
 *            call (the pins of its pages included).
 *
 * Usage: peer_bench [-T memcpy,cma,units] [-r REPS] [-t MS]   (defaults
 * memcpy and cma, 3 repetitions, 200 ms per measurement).  Prints the CSV
 * rows described in xfer_common.h.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "xfer_common.h"

#define MAX_UNIT_REPS	32

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

/* --- unit costs ------------------------------------------------------------ */

#define PIN_PAGES	256
#define BULK_PIN_BYTES	1048576UL

static double syscall_ns(long iters)
{
	unsigned long long t0 = now_ns();
	long i;

	for (i = 0; i < iters; i++)
		syscall(SYS_getppid);
	return (double)(now_ns() - t0) / iters;
}

/* ns per page: one process_vm_readv() of a byte from each of PIN_PAGES pages. */
static double pin_ns(pid_t b, char *remote, char *local, long iters, double sys_ns)
{
	static struct iovec r[PIN_PAGES];
	struct iovec l = { local, PIN_PAGES };
	size_t page = sysconf(_SC_PAGESIZE);
	unsigned long long t0;
	long i;
	int k;

	for (k = 0; k < PIN_PAGES; k++) {
		r[k].iov_base = remote + (size_t)k * page;
		r[k].iov_len = 1;
	}
	t0 = now_ns();
	for (i = 0; i < iters; i++)
		if (process_vm_readv(b, &l, 1, r, PIN_PAGES, 0) != PIN_PAGES)
			die("process_vm_readv");
	return ((double)(now_ns() - t0) / iters - sys_ns) / PIN_PAGES;
}

/* One-way ns for a store to be seen by the process on the other CPU. */
static double handoff_ns(struct shared *sh, long *seq, long iters)
{
	unsigned long long t0 = now_ns();
	long i;

	for (i = 0; i < iters; i++) {
		long s = ++*seq;

		atomic_store_explicit(&sh->seq_a, s, memory_order_release);
		while (atomic_load_explicit(&sh->seq_b, memory_order_acquire) != s)
			;
	}
	return (double)(now_ns() - t0) / (2.0 * iters);
}

/* The other side of handoff_ns(): answer every announcement. */
static void handoff_responder(struct shared *sh)
{
	long last = 0, s;

	pin_cpu(1);
	for (;;) {
		while ((s = atomic_load_explicit(&sh->seq_a, memory_order_acquire)) == last)
			;
		if (s < 0)
			_exit(0);
		last = s;
		atomic_store_explicit(&sh->seq_b, s, memory_order_release);
	}
}

static void bench_units(int reps, unsigned long long target)
{
	static const size_t copy_sizes[] = { 8, 64, 512, 4096, 8192, 16384, 65536, 262144,
					     1048576, 4194304, 16777216 };
	char *local = xfer_buf(MAX_MSG, 'a'), *remote = xfer_buf(MAX_MSG, 'b');
	size_t page = sysconf(_SC_PAGESIZE), i;
	struct shared *sh = xfer_shared(sizeof(*sh));
	double sys[MAX_UNIT_REPS + 1], pin[MAX_UNIT_REPS + 1];
	unsigned long long t0;
	long iters, seq = 0;
	int pfd[2], r;
	pid_t b;

	if (reps > MAX_UNIT_REPS)
		reps = MAX_UNIT_REPS;
	pin_cpu(0);
	t0 = now_ns();
	syscall_ns(1000);
	iters = xfer_iters(now_ns() - t0, 1000, target, 1000);
	for (r = 1; r <= reps; r++) {
		sys[r] = syscall_ns(iters);
		xfer_row("unit", "syscall", 0, r, sys[r]);
	}

	/* A process whose pages are read: its own copy of remote, populated. */
	if (pipe(pfd))
		die("pipe");
	fflush(stdout);
	b = fork();
	if (b < 0)
		die("fork");
	if (b == 0) {
		char c;

		memset(remote, 'c', MAX_MSG);
		close(pfd[1]);
		if (read(pfd[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(pfd[0]);
	t0 = now_ns();
	pin_ns(b, remote, local, 10, sys[1]);
	iters = xfer_iters(now_ns() - t0, 10, target, 10);
	for (r = 1; r <= reps; r++) {
		pin[r] = pin_ns(b, remote, local, iters, sys[r]);
		xfer_row("unit", "pin", 0, r, pin[r]);
	}
	for (i = 0; i < sizeof(copy_sizes) / sizeof(copy_sizes[0]); i++) {
		size_t len = copy_sizes[i];

		t0 = now_ns();
		cma_loop(b, remote, local, len, 4);
		iters = xfer_iters(now_ns() - t0, 4, target, 4);
		for (r = 1; r <= reps; r++) {
			double per_call = len / cma_loop(b, remote, local, len, iters) * 1e3;
			double copy = (per_call - sys[r]) / len;

			xfer_row("unit", "copy", len, r, copy > 0 ? copy : 0);
			if (len == BULK_PIN_BYTES) {
				long n = xfer_iters(memcpy_loop(local, remote, len, 4), 4, target, 4);
				double user = (double)memcpy_loop(local, remote, len, n) / n;
				double bulk = (per_call - sys[r] - user) / (len / page);

				xfer_row("unit", "pin_bulk", 0, r, bulk > 0 ? bulk : 0);
			}
		}
	}
	close(pfd[1]);
	waitpid(b, NULL, 0);

	fflush(stdout);
	b = fork();
	if (b < 0)
		die("fork");
	if (b == 0)
		handoff_responder(sh);
	t0 = now_ns();
	handoff_ns(sh, &seq, 100);
	iters = xfer_iters(now_ns() - t0, 100, target, 100);
	for (r = 1; r <= reps; r++)
		xfer_row("unit", "handoff", 0, r, handoff_ns(sh, &seq, iters));
	atomic_store(&sh->seq_a, -1);
	waitpid(b, NULL, 0);
	munmap(sh, sizeof(*sh));
	munmap(local, MAX_MSG);
	munmap(remote, MAX_MSG);
}

int main(int argc, char **argv)
{
	unsigned long long target = 200 * 1000000ULL;
	const char *tests = "memcpy,cma";
	int reps = 3, opt;

	while ((opt = getopt(argc, argv, "T:r:t:h")) != -1) {
		switch (opt) {
		case 'T':
			tests = optarg;
			break;
		case 'r':
			reps = atoi(optarg);
			break;
		case 't':
			target = strtoull(optarg, NULL, 0) * 1000000ULL;
			break;
		default:
			fprintf(stderr, "usage: peer_bench [-T memcpy,cma,units] [-r REPS] [-t MS]\n");
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("system,test,param,rep,value\n");
	if (strstr(tests, "memcpy"))
		bench_memcpy(reps, target);
	if (strstr(tests, "cma")) {
		bench_cma_lat(reps, target);
		bench_cma_bw(reps, target);
	}
	if (strstr(tests, "units"))
		bench_units(reps, target);
	return 0;
}
