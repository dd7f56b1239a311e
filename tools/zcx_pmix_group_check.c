// SPDX-License-Identifier: GPL-2.0-only
/*
 * zcx_pmix_group_check - one rank of a job that makes a group through
 * libzcx-pmix where one rank's part fails, or that trades through two job
 * handles: what selftests/zcx_pmix_test.sh runs under mpirun.
 *
 * Usage: zcx_pmix_group_check [-c RANK] [-e RANK] [-n BARRIERS]
 *                             [-a RANK -d DIR] [-t COLLECTIVES]
 *   -c RANK  that rank connects with flags no module knows (-EINVAL after
 *            the addresses were traded);
 *   -e RANK  that rank creates its endpoints with flags no module knows
 *            (-EINVAL before they were traded: it has no addresses);
 *   -n       barriers of the group after a success (default 10);
 *   -a RANK  that rank stays away: the others, with a timeout of
 *            TIMEOUT_S (zcx_pmix_set_timeout()), each create DIR/R once
 *            they have their group's outcome; the absent rank leaves once
 *            it sees them all (within ABSENT_MAX_S);
 *   -t COLLECTIVES  no group (the options above are ignored): every rank
 *            makes a second job handle, then that many allgathers, by
 *            turns on each handle, of made-up addresses that tell the
 *            collective and the rank.
 *
 * Each rank prints "rank R: group E" (E: zcx_pmix_group()'s return) and,
 * if it got the group, "rank R: N barriers, ok" once N barriers passed, or
 * "rank R: barrier E"; an absent rank "rank R: away, N came back"; with -t,
 * "rank R: N collectives, W wrong" (W: addresses not the ones sent), or
 * "rank R: allgather E".
 * Exits 0 unless PMIx or zcx cannot be set up, so that the launcher lets
 * every rank report; a rank waiting for ever is what the caller's timeout
 * catches.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "zcx.h"
#include "zcx_pmix.h"

/* Flags no module knows: refused with -EINVAL. */
#define UNKNOWN_FLAG	(1U << 31)
#define TIMEOUT_S	2
#define ABSENT_MAX_S	120

/* The ranks other than @absent that created their file in @dir. */
static uint32_t ranks_back(const char *dir, uint32_t size, uint32_t absent)
{
	char path[4096];
	uint32_t r, n = 0;

	for (r = 0; r < size; r++) {
		snprintf(path, sizeof(path), "%s/%u", dir, r);
		n += r != absent && access(path, F_OK) == 0;
	}
	return n;
}

/* The absent rank: wait, bounded, until every other rank is back. */
static uint32_t stay_away(const char *dir, uint32_t size, uint32_t rank)
{
	const struct timespec tick = { 0, 10 * 1000 * 1000 };
	uint32_t n = 0;
	long i;

	for (i = 0; i < ABSENT_MAX_S * 100L; i++) {
		n = ranks_back(dir, size, rank);
		if (n == size - 1)
			break;
		nanosleep(&tick, NULL);
	}
	return n;
}

static void come_back(const char *dir, uint32_t rank)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%u", dir, rank);
	fd = open(path, O_CREAT | O_WRONLY, 0644);
	if (fd >= 0)
		close(fd);
}

/*
 * Collective k on handle k % 2 of @jobs: every rank must get from rank r
 * the address it made for (k, r).  The number of addresses that were not,
 * or a negative errno.
 */
static long two_handles(struct zcx_pmix *jobs[2], long collectives)
{
	uint32_t r, rank = zcx_pmix_rank(jobs[0]), size = zcx_pmix_size(jobs[0]);
	struct zcx_addr mine = { 0 }, *all = calloc(size, sizeof(*all));
	long k, wrong = 0;
	int ret;

	if (!all)
		return -ENOMEM;
	for (k = 0; k < collectives; k++) {
		mine.id = (uint64_t)k << 32 | rank;
		ret = zcx_pmix_allgather(jobs[k % 2], &mine, all);
		if (ret) {
			free(all);
			return ret;
		}
		for (r = 0; r < size; r++)
			wrong += all[r].id != ((uint64_t)k << 32 | r);
	}
	free(all);
	return wrong;
}

int main(int argc, char **argv)
{
	long bad_connect = -1, bad_create = -1, absent = -1, barriers = 10, collectives = 0, i;
	const char *dir = NULL;
	struct zcx_group *g;
	struct zcx_pmix *job, *jobs[2];
	struct zcx *zcx;
	uint32_t rank;
	int opt, ret;

	while ((opt = getopt(argc, argv, "a:c:d:e:n:t:")) != -1) {
		switch (opt) {
		case 'a':
			absent = strtol(optarg, NULL, 0);
			break;
		case 'd':
			dir = optarg;
			break;
		case 'c':
			bad_connect = strtol(optarg, NULL, 0);
			break;
		case 'e':
			bad_create = strtol(optarg, NULL, 0);
			break;
		case 'n':
			barriers = strtol(optarg, NULL, 0);
			break;
		case 't':
			collectives = strtol(optarg, NULL, 0);
			if (collectives <= 0) {
				fprintf(stderr, "-t needs a positive count\n");
				return 2;
			}
			break;
		default:
			fprintf(stderr,
				"usage: %s [-c RANK] [-e RANK] [-n BARRIERS] [-a RANK -d DIR] [-t COLLECTIVES]\n",
				argv[0]);
			return 2;
		}
	}
	if (absent >= 0 && !dir) {
		fprintf(stderr, "-a needs -d\n");
		return 2;
	}
	ret = zcx_pmix_init(&job);
	if (ret) {
		fprintf(stderr, "zcx_pmix_init: %s\n", strerror(-ret));
		return 1;
	}
	rank = zcx_pmix_rank(job);
	if (collectives) {
		jobs[0] = job;
		ret = zcx_pmix_init(&jobs[1]);
		if (ret) {
			fprintf(stderr, "zcx_pmix_init, a second time: %s\n", strerror(-ret));
			zcx_pmix_fini(job);
			return 1;
		}
		i = two_handles(jobs, collectives);
		if (i < 0)
			printf("rank %u: allgather %ld\n", rank, i);
		else
			printf("rank %u: %ld collectives, %ld wrong\n", rank, collectives, i);
		zcx_pmix_fini(jobs[1]);
		zcx_pmix_fini(job);
		return 0;
	}
	if (rank == absent) {
		printf("rank %u: away, %u came back\n", rank, stay_away(dir, zcx_pmix_size(job), rank));
		zcx_pmix_fini(job);
		return 0;
	}
	if (absent >= 0)
		zcx_pmix_set_timeout(job, TIMEOUT_S);
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
	if (absent >= 0)
		come_back(dir, rank);
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
