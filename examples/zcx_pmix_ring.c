// SPDX-License-Identifier: MIT
/*
 * zcx_pmix_ring - the processes of a job started by a PMIx launcher find
 * each other through libzcx-pmix, pass messages round a ring and meet at
 * a barrier, with no address exchange of their own:
 *
 *   mpirun -n 4 zcx_pmix_ring [-N [-F]] [-r ROUNDS] [-s BYTES]
 *                                         (defaults 100, 65536)
 *
 * -N: a job across nodes: endpoints reachable from the network
 * (ZCX_EP_NET; zcx_ib must be loaded with listen=) and, for the barrier,
 * a group (zcx_pmix_group()) instead of the node's barrier.  Ranks on one
 * node still reach each other through the module; -F sends them through
 * the network too (ZCX_CONNECT_NET), to try it on one node.
 *
 * (As root, Open MPI's mpirun also wants --allow-run-as-root; with more
 * processes than CPUs, --oversubscribe.)  Started alone, it is a ring of
 * one: it sends to itself.
 *
 * The steps:
 *  1. zcx_pmix_init(): this process's rank and the job's size;
 *  2. every rank creates an endpoint and zcx_pmix_allgather() hands each
 *     the addresses of all; each connects to the next rank;
 *  3. rank 0 creates a barrier for all, zcx_pmix_bcast() hands its address
 *     to the others, who join (with -N: zcx_pmix_group());
 *  4. ROUNDS times: send a message of BYTES to the next rank (its bytes
 *     computed from sender, round and offset), receive the previous
 *     rank's and check every byte; then the barrier.
 *
 * Prints one line per rank: "rank R of N: ROUNDS rounds, BYTES bytes,
 * ok"; exits non-zero on any error or wrong byte.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zcx.h"
#include "zcx_pmix.h"

static uint32_t rank;

static int check(int ret, const char *what)
{
	if (ret < 0) {
		fprintf(stderr, "zcx_pmix_ring[%u]: %s: %s\n", rank, what, zcx_strerror(ret));
		exit(1);
	}
	return ret;
}

static unsigned char pattern(uint32_t from, long round, size_t i)
{
	return (unsigned char)(from * 131 + round * 7 + i * 31 + (i >> 8));
}

int main(int argc, char **argv)
{
	long rounds = 100, r;
	size_t bytes = 65536, i;
	struct zcx_addr mine, *all, bar_addr;
	unsigned int ep_flags = 0, connect_flags = 0;
	struct zcx_group *group = NULL;
	unsigned char *out, *in;
	uint32_t size, next, prev, peer, bar;
	struct zcx_pmix *job;
	struct zcx_ep *ep;
	struct zcx *zcx;
	int opt;

	while ((opt = getopt(argc, argv, "NFr:s:")) != -1) {
		switch (opt) {
		case 'N':
			ep_flags = ZCX_EP_NET;
			break;
		case 'F':
			connect_flags = ZCX_CONNECT_NET;
			break;
		case 'r':
			rounds = strtol(optarg, NULL, 0);
			break;
		case 's':
			bytes = strtoul(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr, "usage: %s [-N [-F]] [-r ROUNDS] [-s BYTES]\n", argv[0]);
			return 2;
		}
	}
	if (rounds < 1 || !bytes) {
		fprintf(stderr, "zcx_pmix_ring: ROUNDS and BYTES must be positive\n");
		return 2;
	}

	check(zcx_pmix_init(&job), "zcx_pmix_init");
	rank = zcx_pmix_rank(job);
	size = zcx_pmix_size(job);
	next = (rank + 1) % size;
	prev = (rank + size - 1) % size;

	check(zcx_open(&zcx, 0), "zcx_open");
	check(zcx_ep_create(zcx, ep_flags, 0, &ep), "zcx_ep_create");
	all = calloc(size, sizeof(*all));
	out = malloc(bytes);
	in = malloc(bytes);
	if (!all || !out || !in)
		check(-ENOMEM, "malloc");
	zcx_ep_addr(ep, &mine);
	check(zcx_pmix_allgather(job, &mine, all), "zcx_pmix_allgather");
	check(zcx_ep_connect_flags(ep, &all[next], connect_flags, &peer), "zcx_ep_connect");

	if (ep_flags & ZCX_EP_NET) {
		check(zcx_pmix_group(job, zcx, ep_flags, connect_flags, &group), "zcx_pmix_group");
	} else {
		if (rank == 0)
			check(zcx_barrier_create(ep, size, &bar_addr, &bar), "zcx_barrier_create");
		check(zcx_pmix_bcast(job, 0, &bar_addr), "zcx_pmix_bcast");
		if (rank != 0)
			check(zcx_barrier_join(ep, &bar_addr, &bar), "zcx_barrier_join");
	}

	for (r = 0; r < rounds; r++) {
		struct zcx_req send = { 0 };
		ssize_t got;

		for (i = 0; i < bytes; i++)
			out[i] = pattern(rank, r, i);
		/* Send first without waiting: in a ring everyone sends at once. */
		check(zcx_isend(ep, peer, out, bytes, (uint64_t)r, &send), "zcx_isend");
		got = zcx_recv(ep, in, bytes, (uint64_t)r, UINT64_MAX, NULL);
		check((int)got, "zcx_recv");
		check(zcx_wait(ep, &send), "send");
		if ((size_t)got != bytes) {
			fprintf(stderr, "zcx_pmix_ring[%u]: round %ld: %zd bytes, want %zu\n",
				rank, r, got, bytes);
			return 1;
		}
		for (i = 0; i < bytes; i++) {
			if (in[i] != pattern(prev, r, i)) {
				fprintf(stderr, "zcx_pmix_ring[%u]: round %ld: byte %zu from rank %u wrong\n",
					rank, r, i, prev);
				return 1;
			}
		}
		check(group ? zcx_group_barrier(group) : zcx_barrier(ep, bar), "barrier");
	}
	printf("rank %u of %u: %ld rounds, %zu bytes, ok\n", rank, size, rounds, bytes);

	free(in);
	free(out);
	free(all);
	zcx_group_destroy(group);
	zcx_ep_destroy(ep);
	zcx_close(zcx);
	zcx_pmix_fini(job);
	return 0;
}
