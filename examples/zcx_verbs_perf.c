// SPDX-License-Identifier: GPL-2.0-only
/*
 * zcx_verbs_perf - perftest-style: register, RDMA WRITE and deregister a
 * buffer for every message, as runtimes do with user buffers, either with
 * plain ibv_reg_mr/ibv_dereg_mr or through libzcx-verbs' cache.
 *
 *   zcx_verbs_perf [-c] [-s SIZE] [-n ITERS] [-r EVERY]
 *     -c        use the zcx cache (default: plain verbs)
 *     -s SIZE   message size (default 1048576)
 *     -n ITERS  messages (default 200)
 *     -r EVERY  every EVERY messages, munmap the buffer and map new memory
 *               at the same address (default 0: never)
 *
 * The buffers rotate through a pool of four, filled with the message
 * number before each send; the destination is checked after each WRITE,
 * so a stale registration (old pages) shows as a wrong delivery.  Then
 * times registration alone (register + deregister, same buffers).  Prints
 * one CSV line: mode,size,iters,us_per_msg,reg_us_per_msg,bad_deliveries.
 * Needs an RDMA device (Soft-RoCE: rdma link add rxe0 type rxe netdev lo).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "verbs_loop.h"
#include "zcx_verbs.h"

#define POOL 4

static char *map_at(void *addr, size_t len)
{
	char *p = mmap(addr, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | (addr ? MAP_FIXED : 0), -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	return p;
}

/* Register @buf through the cache if there is one, else plainly. */
static int reg(struct zcx_verbs_cache *cache, struct verbs_loop *loop, char *buf, size_t size,
	       struct ibv_mr **mr)
{
	if (cache)
		return zcx_verbs_reg(cache, buf, size, IBV_ACCESS_LOCAL_WRITE, mr);
	*mr = ibv_reg_mr(loop->pd, buf, size, IBV_ACCESS_LOCAL_WRITE);
	return *mr ? 0 : -errno;
}

static void dereg(struct zcx_verbs_cache *cache, struct ibv_mr *mr)
{
	if (cache)
		zcx_verbs_dereg(cache, mr);
	else
		ibv_dereg_mr(mr);
}

int main(int argc, char **argv)
{
	size_t size = 1 << 20;
	long iters = 200, remap_every = 0, i, bad = 0;
	long long t0, reg_ns, total_ns;
	struct zcx_verbs_cache *cache = NULL;
	struct zcx *zcx = NULL;
	struct verbs_loop loop;
	struct ibv_mr *dst_mr, *mr;
	char *pool[POOL], *dst;
	int opt, cached = 0, ret;

	while ((opt = getopt(argc, argv, "cs:n:r:")) != -1) {
		switch (opt) {
		case 'c': cached = 1; break;
		case 's': size = strtoul(optarg, NULL, 0); break;
		case 'n': iters = strtol(optarg, NULL, 0); break;
		case 'r': remap_every = strtol(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: %s [-c] [-s SIZE] [-n ITERS] [-r EVERY]\n", argv[0]);
			return 2;
		}
	}
	ret = verbs_loop_open(&loop);
	if (ret) {
		fprintf(stderr, "no RDMA device: %s\n", zcx_strerror(ret));
		return 1;
	}
	if (cached) {
		ret = zcx_open(&zcx, 0);
		if (!ret)
			ret = zcx_verbs_cache_create(zcx, loop.pd, NULL, &cache);
		if (ret) {
			fprintf(stderr, "zcx: %s\n", zcx_strerror(ret));
			return 1;
		}
	}
	for (i = 0; i < POOL; i++)
		pool[i] = map_at(NULL, size);
	dst = map_at(NULL, size);
	dst_mr = ibv_reg_mr(loop.pd, dst, size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!dst_mr) {
		perror("ibv_reg_mr");
		return 1;
	}

	t0 = verbs_loop_now_ns();
	for (i = 0; i < iters; i++) {
		char *buf = pool[i % POOL];

		if (remap_every && i && i % remap_every == 0)
			map_at(buf, size);	/* new memory, same address */
		buf[0] = buf[size / 2] = buf[size - 1] = (char)i;

		ret = reg(cache, &loop, buf, size, &mr);
		if (ret) {
			fprintf(stderr, "register: %s\n", zcx_strerror(ret));
			return 1;
		}
		ret = verbs_loop_write(&loop, buf, size, mr->lkey, dst, dst_mr->rkey);
		if (ret) {
			fprintf(stderr, "RDMA WRITE: %s\n", zcx_strerror(ret));
			return 1;
		}
		if (dst[0] != (char)i || dst[size / 2] != (char)i || dst[size - 1] != (char)i)
			bad++;
		dereg(cache, mr);
	}
	total_ns = verbs_loop_now_ns() - t0;

	/*
	 * Registration alone, in one window of the clock: reading the clock
	 * costs microseconds in the emulated guest, too much to time each
	 * call.  Same buffers, same order as the messages.
	 */
	t0 = verbs_loop_now_ns();
	for (i = 0; i < iters; i++) {
		if (reg(cache, &loop, pool[i % POOL], size, &mr))
			return 1;
		dereg(cache, mr);
	}
	reg_ns = verbs_loop_now_ns() - t0;

	printf("%s,%zu,%ld,%.2f,%.2f,%ld\n", cached ? "zcx" : "verbs", size, iters,
	       total_ns / 1000.0 / iters, reg_ns / 1000.0 / iters, bad);
	if (cache) {
		struct zcx_verbs_stats st;

		zcx_verbs_stats(cache, &st);
		fprintf(stderr, "cache: %llu hits, %llu misses, %llu stale\n",
			(unsigned long long)st.hits, (unsigned long long)st.misses,
			(unsigned long long)st.stale);
	}
	ibv_dereg_mr(dst_mr);
	zcx_verbs_cache_destroy(cache);
	verbs_loop_close(&loop);
	zcx_close(zcx);
	return bad ? 3 : 0;
}
