// SPDX-License-Identifier: GPL-2.0-only
/*
 * zcx_pmix_group_check - one rank of a job that makes a group through
 * libzcx-pmix where one rank's part fails: what selftests/zcx_pmix_test.sh
 * runs under mpirun.
 *
 * Usage: zcx_pmix_group_check [-c RANK] [-e RANK] [-n BARRIERS]
 *   -c RANK  that rank connects with flags no module knows (-EINVAL after
 *            the addresses were traded);
 *   -e RANK  that rank creates its endpoints with flags no module knows
 *            (-EINVAL before they were traded: it has no addresses);
 *   -n       barriers of the group after a success (default 10).
 *
 * Each rank prints "rank R: group E" (E: zcx_pmix_group()'s return) and,
 * if it got the group, "rank R: N barriers, ok" once N barriers passed, or
 * "rank R: barrier E".  Exits 0 unless PMIx or zcx cannot be set up, so
 * that the launcher lets every rank report; a rank waiting for ever is
 * what the caller's timeout catches.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zcx.h"
#include "zcx_pmix.h"

/* Flags no module knows: refused with -EINVAL. */
#define UNKNOWN_FLAG	(1U << 31)

int main(int argc, char **argv)
{
	long bad_connect = -1, bad_create = -1, barriers = 10, i;
	struct zcx_group *g;
	struct zcx_pmix *job;
	struct zcx *zcx;
	uint32_t rank;
	int opt, ret;

	while ((opt = getopt(argc, argv, "c:e:n:")) != -1) {
		switch (opt) {
		case 'c':
			bad_connect = strtol(optarg, NULL, 0);
			break;
		case 'e':
			bad_create = strtol(optarg, NULL, 0);
			break;
		case 'n':
			barriers = strtol(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr, "usage: %s [-c RANK] [-e RANK] [-n BARRIERS]\n", argv[0]);
			return 2;
		}
	}
	ret = zcx_pmix_init(&job);
	if (ret) {
		fprintf(stderr, "zcx_pmix_init: %s\n", strerror(-ret));
		return 1;
	}
	rank = zcx_pmix_rank(job);
	ret = zcx_open(&zcx, 0);
	if (ret) {
		fprintf(stderr, "zcx_open: %s\n", strerror(-ret));
		zcx_pmix_fini(job);
		return 1;
	}
	ret = zcx_pmix_group(job, zcx, rank == bad_create ? UNKNOWN_FLAG : 0,
			     rank == bad_connect ? UNKNOWN_FLAG : 0, &g);
	printf("rank %u: group %d\n", rank, ret);
	fflush(stdout);
	if (!ret) {
		for (i = 0; i < barriers && !ret; i++)
			ret = zcx_group_barrier(g);
		if (ret)
			printf("rank %u: barrier %d\n", rank, ret);
		else
			printf("rank %u: %ld barriers, ok\n", rank, barriers);
		zcx_group_destroy(g);
	}
	zcx_close(zcx);
	zcx_pmix_fini(job);
	return 0;
}
