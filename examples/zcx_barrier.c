// SPDX-License-Identifier: MIT
/*
 * zcx_barrier - N processes meet at a zcx barrier, round after round, and
 * check that nobody ever got through early.
 *
 *   zcx_barrier [-n PROCS] [-r ROUNDS] [-p]     (defaults 4 and 1000)
 *
 * -p uses ZCX_EP_POLL endpoints.
 *
 * The steps:
 *  1. the first process opens a context, creates an endpoint and a barrier
 *     for N members (zcx_barrier_create); the barrier's address (struct
 *     zcx_addr) is what the others need - here they inherit it across
 *     fork(), in a real job it goes out of band like an endpoint address;
 *  2. every other process opens its own context and endpoint (a context
 *     never crosses fork()) and joins with that address
 *     (zcx_barrier_join);
 *  3. all call zcx_barrier() as often as they like: it returns once all N
 *     arrived; the barrier is reusable at once.  (The first waits until
 *     every other joined: one that failed to would leave the members
 *     waiting for it; a member that goes breaks the barrier for them.)
 *
 * The check: before round r each process writes r into its slot of a
 * shared array; after the barrier it reads every slot, which must be r or
 * more.  Now and then one process dawdles before arriving, so the others
 * really have to wait.
 */
#define _DEFAULT_SOURCE		/* MAP_ANONYMOUS */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "zcx.h"

#define MAX_PROCS	64

static int check(int ret, const char *what, int rank)
{
	if (ret < 0) {
		fprintf(stderr, "zcx_barrier[%d]: %s: %s\n", rank, what, zcx_strerror(ret));
		exit(1);
	}
	return ret;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* What every member does; returns the number of early exits it saw. */
static long member(struct zcx_ep *ep, uint32_t bar, int rank, int nprocs, long rounds,
		   _Atomic long *arrived)
{
	struct timespec dawdle = { 0, 200 * 1000 };
	long r, early = 0;

	for (r = 1; r <= rounds; r++) {
		if (r % 97 == 0 && rank == (r / 97) % nprocs)
			nanosleep(&dawdle, NULL);
		atomic_store(&arrived[rank], r);
		check(zcx_barrier(ep, bar), "zcx_barrier", rank);
		for (int j = 0; j < nprocs; j++)
			if (atomic_load(&arrived[j]) < r)
				early++;
	}
	return early;
}

int main(int argc, char **argv)
{
	int nprocs = 4, opt, rank, status, failed = 0;
	unsigned int flags = 0;
	long rounds = 1000, early;
	struct zcx_addr addr;
	_Atomic long *arrived;
	pid_t pids[MAX_PROCS];
	struct zcx_ep *ep;
	struct zcx *zcx;
	uint32_t bar;
	double t0;

	while ((opt = getopt(argc, argv, "n:r:p")) != -1) {
		switch (opt) {
		case 'n':
			nprocs = atoi(optarg);
			break;
		case 'r':
			rounds = atol(optarg);
			break;
		case 'p':
			flags |= ZCX_EP_POLL;
			break;
		default:
			nprocs = 0;
		}
	}
	if (nprocs < 1 || nprocs > MAX_PROCS || rounds < 1) {
		fprintf(stderr, "usage: zcx_barrier [-n PROCS (1-%d)] [-r ROUNDS] [-p]\n", MAX_PROCS);
		return 2;
	}
	/*
	 * The check's shared array, then the count of processes that joined:
	 * MAP_SHARED memory survives fork() shared.
	 */
	arrived = mmap(NULL, (MAX_PROCS + 1) * sizeof(*arrived), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (arrived == MAP_FAILED) {
		perror("mmap");
		return 1;
	}

	/* 1. Rank 0 creates the barrier; its address is plain bytes. */
	check(zcx_open(&zcx, 0), "zcx_open", 0);
	check(zcx_ep_create(zcx, flags, 0, &ep), "zcx_ep_create", 0);
	check(zcx_barrier_create(ep, nprocs, &addr, &bar), "zcx_barrier_create", 0);

	fflush(stdout);
	for (rank = 1; rank < nprocs; rank++) {
		pids[rank] = fork();
		if (pids[rank] < 0) {
			perror("fork");
			return 1;
		}
		if (pids[rank] == 0) {
			struct zcx *mine;
			struct zcx_ep *my_ep;
			uint32_t my_bar;

			/* 2. Our own context and endpoint; join with the address. */
			check(zcx_open(&mine, 0), "zcx_open", rank);
			check(zcx_ep_create(mine, flags, 0, &my_ep), "zcx_ep_create", rank);
			check(zcx_barrier_join(my_ep, &addr, &my_bar), "zcx_barrier_join", rank);
			atomic_fetch_add(&arrived[MAX_PROCS], 1);
			/* 3. Meet the others. */
			early = member(my_ep, my_bar, rank, nprocs, rounds, arrived);
			zcx_ep_destroy(my_ep);
			zcx_close(mine);
			_exit(early ? 1 : 0);
		}
	}

	/* Not into the barrier before all joined: a process may fail to. */
	while (atomic_load(&arrived[MAX_PROCS]) < nprocs - 1) {
		struct timespec tick = { 0, 1000 * 1000 };

		if (waitpid(-1, &status, WNOHANG) > 0) {
			/* Our leaving breaks the barrier for those who joined. */
			fprintf(stderr, "zcx_barrier: a process ended before it joined\n");
			return 1;
		}
		nanosleep(&tick, NULL);
	}
	t0 = now_us();
	early = member(ep, bar, 0, nprocs, rounds, arrived);
	t0 = now_us() - t0;
	for (rank = 1; rank < nprocs; rank++)
		if (waitpid(pids[rank], &status, 0) != pids[rank] || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			failed++;
	if (early || failed) {
		fprintf(stderr, "zcx_barrier: %ld early exits seen by rank 0, %d other ranks failed\n",
			early, failed);
		return 1;
	}
	printf("%d processes, %ld barriers, %.1f us each (%s), none left early\n", nprocs, rounds,
	       t0 / rounds, flags & ZCX_EP_POLL ? "ZCX_EP_POLL" : "doorbell");
	printf("system calls on rank 0's endpoint: %llu\n", (unsigned long long)zcx_ep_syscalls(ep));
	zcx_ep_destroy(ep);
	zcx_close(zcx);
	return 0;
}
