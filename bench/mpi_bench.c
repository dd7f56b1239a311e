// SPDX-License-Identifier: MIT
/*
 * mpi_bench - Open MPI's figures for the transport benchmark, measured the
 * way xfer_bench measures zcx: ping-pong latency (blocking MPI_Send /
 * MPI_Recv, half the round trip), streaming bandwidth (windows of
 * BW_WINDOW MPI_Isend answered by a short acknowledgement, as osu_bw
 * does) and MPI_Barrier.  Built with mpicc.
 *
 *   mpirun -np 2 mpi_bench [-r REPS] [-t MS]        latency and bandwidth
 *   mpirun -np N mpi_bench -b [-r REPS] [-t MS]     barrier of 2, 4, ... N
 *                                                   processes (one start-up:
 *                                                   the first n ranks form a
 *                                                   communicator, the others
 *                                                   sleep meanwhile)
 *   mpirun -np 2 mpi_bench -x lat|bw -s SIZE -n N   one fixed run, no
 *                                                   output (for strace -c)
 *
 * Rank 0 prints the CSV rows described in xfer_common.h, system "mpi".
 */
#define _GNU_SOURCE
#include <mpi.h>

#include "xfer_common.h"

static int rank, nprocs;
static char *buf;

/* One-way ns per message over @iters round trips. */
static double pingpong(size_t len, long iters)
{
	double t0 = MPI_Wtime();
	long i;

	for (i = 0; i < iters; i++) {
		if (rank == 0) {
			MPI_Send(buf, (int)len, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
			MPI_Recv(buf, (int)len, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(buf, (int)len, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(buf, (int)len, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
		}
	}
	return (MPI_Wtime() - t0) * 1e9 / (2.0 * iters);
}

/* MB/s over @windows windows of BW_WINDOW messages. */
static double stream(size_t len, long windows)
{
	MPI_Request req[BW_WINDOW];
	double t0 = MPI_Wtime();
	int ack = 0;
	long w;
	int i;

	for (w = 0; w < windows; w++) {
		for (i = 0; i < BW_WINDOW; i++) {
			if (rank == 0)
				MPI_Isend(buf, (int)len, MPI_BYTE, 1, 3, MPI_COMM_WORLD, &req[i]);
			else
				MPI_Irecv(buf, (int)len, MPI_BYTE, 0, 3, MPI_COMM_WORLD, &req[i]);
		}
		MPI_Waitall(BW_WINDOW, req, MPI_STATUSES_IGNORE);
		if (rank == 0)
			MPI_Recv(&ack, 1, MPI_INT, 1, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		else
			MPI_Send(&ack, 1, MPI_INT, 0, 4, MPI_COMM_WORLD);
	}
	return (double)len * BW_WINDOW * windows / (MPI_Wtime() - t0) / 1e6;
}

static double barriers(MPI_Comm comm, long iters)
{
	double t0 = MPI_Wtime();
	long i;

	for (i = 0; i < iters; i++)
		MPI_Barrier(comm);
	return (MPI_Wtime() - t0) * 1e9 / iters;
}

/* Rank 0 of @comm times a trial and tells the others how many iterations to run. */
static long agree_iters(MPI_Comm comm, double trial_ns, long trial_iters, double target_ns, long min)
{
	int me;
	long n = 0;

	MPI_Comm_rank(comm, &me);
	if (me == 0)
		n = xfer_iters((unsigned long long)(trial_ns * trial_iters), trial_iters,
			       (unsigned long long)target_ns, min);
	MPI_Bcast(&n, 1, MPI_LONG, 0, comm);
	return n;
}

/*
 * Wait for every rank without spinning (MPI_Barrier busy-polls): ranks
 * outside the communicator being measured must leave the CPUs to it.
 */
static void wait_all_sleeping(void)
{
	const struct timespec pause = { 0, 10 * 1000 * 1000 };
	MPI_Request req;
	int done = 0;

	MPI_Ibarrier(MPI_COMM_WORLD, &req);
	for (;;) {
		MPI_Test(&req, &done, MPI_STATUS_IGNORE);
		if (done)
			break;
		nanosleep(&pause, NULL);
	}
}

/* Barriers of 2, 4, ... nprocs processes: the first n ranks of the job. */
static void bench_barriers(int reps, double target)
{
	int n, r;

	for (n = 2; n <= nprocs; n *= 2) {
		MPI_Comm comm;

		MPI_Comm_split(MPI_COMM_WORLD, rank < n ? 0 : MPI_UNDEFINED, rank, &comm);
		if (comm != MPI_COMM_NULL) {
			barriers(comm, 10);
			for (r = 1; r <= reps; r++) {
				long iters = agree_iters(comm, barriers(comm, 10), 10, target, 10);
				double ns = barriers(comm, iters);

				if (rank == 0)
					xfer_row("mpi", "bar", n, r, ns);
			}
			MPI_Comm_free(&comm);
		}
		wait_all_sleeping();
	}
}

int main(int argc, char **argv)
{
	double target = 200e6;
	int reps = 3, opt, barrier = 0, r;
	const char *fixed = NULL;
	long fixed_n = 0;
	size_t fixed_len = 8, i;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	while ((opt = getopt(argc, argv, "br:t:x:s:n:")) != -1) {
		switch (opt) {
		case 'b':
			barrier = 1;
			break;
		case 'r':
			reps = atoi(optarg);
			break;
		case 't':
			target = atof(optarg) * 1e6;
			break;
		case 'x':
			fixed = optarg;
			break;
		case 's':
			fixed_len = strtoul(optarg, NULL, 0);
			break;
		case 'n':
			fixed_n = atol(optarg);
			break;
		default:
			if (rank == 0)
				fprintf(stderr, "usage: see the header of bench/mpi_bench.c\n");
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (barrier) {
		bench_barriers(reps, target);
		MPI_Finalize();
		return 0;
	}
	if (nprocs != 2) {
		if (rank == 0)
			fprintf(stderr, "mpi_bench: latency and bandwidth need 2 processes\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	buf = xfer_buf(MAX_MSG, rank ? 'b' : 'a');
	if (fixed) {
		if (!strcmp(fixed, "lat"))
			pingpong(fixed_len, fixed_n);
		else
			stream(fixed_len, fixed_n);
		MPI_Finalize();
		return 0;
	}
	if (rank == 0)
		printf("system,test,param,rep,value\n");
	for (i = 0; i < NLAT; i++) {
		size_t len = lat_sizes[i];
		long n = agree_iters(MPI_COMM_WORLD, pingpong(len, 20), 20, target / 2, 20);

		for (r = 1; r <= reps; r++) {
			double ns = pingpong(len, n);

			if (rank == 0)
				xfer_row("mpi", "lat", len, r, ns);
		}
	}
	for (i = 0; i < NBW; i++) {
		size_t len = bw_sizes[i];
		double t0 = MPI_Wtime();
		long n;

		stream(len, 1);
		n = agree_iters(MPI_COMM_WORLD, (MPI_Wtime() - t0) * 1e9, 1, target, 1);
		for (r = 1; r <= reps; r++) {
			double mbs = stream(len, n);

			if (rank == 0)
				xfer_row("mpi", "bw", len, r, mbs);
		}
	}
	MPI_Finalize();
	return 0;
}
