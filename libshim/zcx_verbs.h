/* SPDX-License-Identifier: MIT */
/*
 * zcx_verbs.h - libzcx-verbs: a cache of ibv_mr's for runtimes that own
 * their verbs data path.
 *
 * zcx_verbs_reg() returns an ibv_mr of the caller's protection domain
 * covering [addr, addr + len) with @access.  Repeating it for the same
 * range and access, while the memory behind it is unchanged, returns the
 * cached MR with no system call.  The module's MMU-notifier events are the
 * only source of invalidation (no libc hooks, no userfaultfd): after
 * munmap, mremap, madvise, brk, shmdt and the like, the stale MR is never
 * returned again; a new one is registered on the new memory.  Stale and
 * evicted MRs are deregistered later, on a miss or in
 * zcx_verbs_cache_progress(), not on the hit path.
 *
 * Every successful zcx_verbs_reg() needs one zcx_verbs_dereg(); released
 * MRs stay cached until a limit needs the room, or until a registration
 * fails for room (its monitor with ENOMEM: the context's cache_entries;
 * or ibv_reg_mr with ENOMEM, EAGAIN: the memlock limit, the device),
 * which then deregisters them and, if there were any, tries once more.
 * Callers asking for the same range and access share one MR, lkey and
 * rkey included.  A cached MR stays registered, rkey included: do not
 * hand out the rkey of memory whose remote access you meant to revoke by
 * releasing it (flush instead).  Each MR takes one monitor, i.e. one of
 * the zcx context's cache_entries.  A cache may be used by the threads
 * of one process; after fork() the child must not use it (-EIO).
 * Functions return 0 or a negative errno, unless said otherwise.
 */
#ifndef ZCX_VERBS_H
#define ZCX_VERBS_H

#include <infiniband/verbs.h>

#include "zcx.h"

#ifdef __cplusplus
extern "C" {
#endif

struct zcx_verbs_cache;

/**
 * struct zcx_verbs_cache_attr - limits and hooks of a cache.
 * @max_entries:	cached MRs at most (0: 1024; at most 2^20, else -EINVAL);
 *			MRs in use are never evicted, so they may exceed it.
 * @max_bytes:		registered bytes at most, as @max_entries (0: no limit).
 * @reg_mr:		registers an MR (NULL: ibv_reg_mr); for interposers
 *			that must reach the real function.
 * @dereg_mr:		deregisters one (NULL: ibv_dereg_mr).
 */
struct zcx_verbs_cache_attr {
	size_t max_entries;
	size_t max_bytes;
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t len, int access);
	int (*dereg_mr)(struct ibv_mr *mr);
};

/**
 * struct zcx_verbs_stats - what a cache did.
 * @hits:	zcx_verbs_reg() answered from the cache, no system call.
 * @misses:	MRs registered.
 * @stale:	cached MRs found invalidated, by a lookup, a miss or
 *		progress.
 * @evictions:	unused MRs dropped for a limit.
 * @deregistered: MRs deregistered so far (stale, evicted, flushed).
 * @entries:	MRs cached now, in use or not, stale ones not yet
 *		deregistered included.
 * @bytes:	bytes they cover.
 */
struct zcx_verbs_stats {
	uint64_t hits, misses, stale, evictions, deregistered;
	uint64_t entries, bytes;
};

/*
 * @zcx must outlive the cache.  @attr may be NULL for the defaults.
 * -EOPNOTSUPP if the module has no monitors (ZCX_FEATURE_MONITOR).
 */
int zcx_verbs_cache_create(struct zcx *zcx, struct ibv_pd *pd,
			   const struct zcx_verbs_cache_attr *attr,
			   struct zcx_verbs_cache **cache);
/* Deregisters every MR, in use or not (in a forked child: frees only memory). */
void zcx_verbs_cache_destroy(struct zcx_verbs_cache *cache);

/*
 * -EINVAL for an empty range or one that wraps; -EFAULT from the module
 * for one beyond user space.
 */
int zcx_verbs_reg(struct zcx_verbs_cache *cache, void *addr, size_t len, int access,
		  struct ibv_mr **mr);
/* -ENOENT if @mr did not come from this cache, -EINVAL if it is not held. */
int zcx_verbs_dereg(struct zcx_verbs_cache *cache, struct ibv_mr *mr);

/*
 * Deregister now (off the hot path) the unused MRs found stale, and
 * those released stale; returns how many.
 */
int zcx_verbs_cache_progress(struct zcx_verbs_cache *cache);
/* Deregister every unused MR; returns how many. */
int zcx_verbs_cache_flush(struct zcx_verbs_cache *cache);
int zcx_verbs_stats(struct zcx_verbs_cache *cache, struct zcx_verbs_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* ZCX_VERBS_H */
