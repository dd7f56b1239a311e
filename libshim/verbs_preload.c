// SPDX-License-Identifier: MIT
/*
 * verbs_preload.c - LD_PRELOAD=libzcx-verbs-preload.so: unmodified verbs
 * programs get zcx's MR cache.
 *
 * Interposes ibv_reg_mr(), ibv_reg_mr_iova2() (what the ibv_reg_mr()
 * macro calls for a non-constant access) when the I/O address is the
 * virtual address, ibv_dereg_mr(), ibv_rereg_mr() and ibv_dealloc_pd().
 * Each protection domain gets a cache on first use.  A released MR stays
 * registered while cached; ibv_dealloc_pd() first deregisters its PD's
 * cache.
 *
 * Limits: without /dev/zcx (or a module without monitors) every call
 * passes straight through, and so does anything the cache cannot take
 * (on-demand paging, memory-window binding, a full module); MRs
 * registered with other calls (ibv_reg_dmabuf_mr, ...) are not cached;
 * ibv_rereg_mr() on a cached MR fails with IBV_REREG_MR_ERR_INPUT
 * (EINVAL); callers registering the same range share one MR, with its
 * lkey and rkey; a released MR stays registered,
 * rkey included, while cached; in a child of fork() everything passes
 * through; the cache holds up to ZCX_PRELOAD_ENTRIES MRs per PD (env,
 * default 1024, at most 2^20, else the PD passes through), for 16 PDs
 * at a time (others pass through).  ZCX_PRELOAD_STATS (set, to
 * anything) prints each cache's statistics to stderr when its PD is
 * deallocated.
 */
#define _GNU_SOURCE	/* RTLD_NEXT */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "zcx_verbs.h"

/* verbs.h makes ibv_reg_mr a macro; we define the function itself. */
#undef ibv_reg_mr

/* Built with hidden visibility: the interposed calls must be seen. */
#define ZCX_INTERPOSE __attribute__((visibility("default")))

#define MAX_PDS 16

/* verbs.c, compiled into this object: whether @mr came from @cache. */
bool zcx_verbs_owns(struct zcx_verbs_cache *cache, const struct ibv_mr *mr);

static struct ibv_mr *(*real_reg_mr)(struct ibv_pd *, void *, size_t, int);
static struct ibv_mr *(*real_reg_mr_iova2)(struct ibv_pd *, void *, size_t, uint64_t,
					   unsigned int);
static int (*real_dereg_mr)(struct ibv_mr *);
static int (*real_dealloc_pd)(struct ibv_pd *);
static int (*real_rereg_mr)(struct ibv_mr *, int, struct ibv_pd *, void *, size_t, int);

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct zcx *zcx;
static struct {
	struct ibv_pd *pd;
	struct zcx_verbs_cache *cache;
} caches[MAX_PDS];

/* A forked child starts with the lock free and passes everything through. */
static void in_child(void)
{
	pthread_mutex_init(&lock, NULL);
}

static void init(void)
{
	struct zcx_query q;

	real_reg_mr = dlsym(RTLD_NEXT, "ibv_reg_mr");
	real_reg_mr_iova2 = dlsym(RTLD_NEXT, "ibv_reg_mr_iova2");
	real_dereg_mr = dlsym(RTLD_NEXT, "ibv_dereg_mr");
	real_dealloc_pd = dlsym(RTLD_NEXT, "ibv_dealloc_pd");
	real_rereg_mr = dlsym(RTLD_NEXT, "ibv_rereg_mr");
	pthread_atfork(NULL, NULL, in_child);
	if (zcx_open(&zcx, 0))
		zcx = NULL;	/* no module: pass everything through */
	else if (zcx_query(zcx, &q) || !(q.features & ZCX_FEATURE_MONITOR)) {
		zcx_close(zcx);
		zcx = NULL;
	}
}

/*
 * How the cache registers: libibverbs' own ibv_reg_mr() calls
 * ibv_reg_mr_iova2() through its PLT, which would land back in our
 * interposer, so go to the real ibv_reg_mr_iova2() directly.
 */
static struct ibv_mr *reg_mr_underneath(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	return real_reg_mr_iova2(pd, addr, len, (uintptr_t)addr, (unsigned int)access);
}

/* The cache of @pd, created on first use; NULL to pass through. */
static struct zcx_verbs_cache *cache_of(struct ibv_pd *pd)
{
	struct zcx_verbs_cache_attr attr = { .reg_mr = reg_mr_underneath };
	struct zcx_verbs_cache *cache = NULL;
	const char *entries;
	int i, slot = -1;

	pthread_once(&once, init);
	if (!zcx || !zcx_owned(zcx) || !real_reg_mr || !real_reg_mr_iova2 || !real_dereg_mr)
		return NULL;
	/* Never the interposed one: the cache must reach libibverbs. */
	attr.dereg_mr = real_dereg_mr;
	pthread_mutex_lock(&lock);
	for (i = 0; i < MAX_PDS && !cache; i++) {
		if (caches[i].pd == pd)
			cache = caches[i].cache;
		else if (!caches[i].pd && slot < 0)
			slot = i;
	}
	if (!cache && slot >= 0) {
		entries = getenv("ZCX_PRELOAD_ENTRIES");
		attr.max_entries = entries ? strtoul(entries, NULL, 0) : 0;
		if (!zcx_verbs_cache_create(zcx, pd, &attr, &cache)) {
			caches[slot].pd = pd;
			caches[slot].cache = cache;
		}
	}
	pthread_mutex_unlock(&lock);
	return cache;
}

/*
 * Through the cache when it can take the registration; otherwise (on-
 * demand paging pins nothing; memory windows bound to an MR would keep a
 * cached one from being deregistered; the module may be out of entries)
 * the real call, which also gives a genuine verbs failure its own errno.
 */
static struct ibv_mr *cached_reg(struct zcx_verbs_cache *cache, struct ibv_pd *pd, void *addr,
				 size_t len, int access)
{
	struct ibv_mr *mr;

	if (!(access & (IBV_ACCESS_ON_DEMAND | IBV_ACCESS_MW_BIND)) &&
	    !zcx_verbs_reg(cache, addr, len, access, &mr))
		return mr;
	return reg_mr_underneath(pd, addr, len, access);
}

ZCX_INTERPOSE struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	struct zcx_verbs_cache *cache = cache_of(pd);

	if (!cache)
		return real_reg_mr ? real_reg_mr(pd, addr, len, access) : NULL;
	return cached_reg(cache, pd, addr, len, access);
}

ZCX_INTERPOSE struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
				unsigned int access)
{
	struct zcx_verbs_cache *cache = cache_of(pd);

	if (!cache || iova != (uintptr_t)addr)
		return real_reg_mr_iova2 ? real_reg_mr_iova2(pd, addr, len, iova, access) : NULL;
	return cached_reg(cache, pd, addr, len, (int)access);
}

ZCX_INTERPOSE int ibv_dereg_mr(struct ibv_mr *mr)
{
	struct zcx_verbs_cache *cache = cache_of(mr->pd);
	int ret = cache ? zcx_verbs_dereg(cache, mr) : -ENOENT;

	if (ret != -ENOENT)
		return -ret;	/* verbs returns an errno value */
	return real_dereg_mr ? real_dereg_mr(mr) : EINVAL;
}

/* A cached MR is shared: changing it under the cache would make it lie. */
ZCX_INTERPOSE int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
			       size_t len, int access)
{
	struct zcx_verbs_cache *cache = cache_of(mr->pd);

	if ((cache && zcx_verbs_owns(cache, mr)) || !real_rereg_mr) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	return real_rereg_mr(mr, flags, pd, addr, len, access);
}

ZCX_INTERPOSE int ibv_dealloc_pd(struct ibv_pd *pd)
{
	int i;

	pthread_once(&once, init);
	/* A forked child's caches are the parent's, locks and all. */
	if (!zcx || !zcx_owned(zcx))
		return real_dealloc_pd ? real_dealloc_pd(pd) : EINVAL;
	pthread_mutex_lock(&lock);
	for (i = 0; i < MAX_PDS; i++) {
		if (caches[i].pd == pd) {
			struct zcx_verbs_stats left;

			/* MRs still in use keep the PD busy, as they would anyway. */
			zcx_verbs_cache_flush(caches[i].cache);
			zcx_verbs_stats(caches[i].cache, &left);
			if (left.entries)
				break;
			if (getenv("ZCX_PRELOAD_STATS")) {
				struct zcx_verbs_stats st;

				zcx_verbs_stats(caches[i].cache, &st);
				fprintf(stderr, "zcx-preload: %llu hits, %llu misses, %llu stale\n",
					(unsigned long long)st.hits, (unsigned long long)st.misses,
					(unsigned long long)st.stale);
			}
			zcx_verbs_cache_destroy(caches[i].cache);
			caches[i].pd = NULL;
			caches[i].cache = NULL;
		}
	}
	pthread_mutex_unlock(&lock);
	return real_dealloc_pd ? real_dealloc_pd(pd) : EINVAL;
}
