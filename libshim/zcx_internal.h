/* SPDX-License-Identifier: MIT */
/*
 * zcx_internal.h - what the files of libzcx share; not installed.
 */
#ifndef ZCX_INTERNAL_H
#define ZCX_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zcx.h"
#include "zcx_list.h"

#define ZCX_EXPORT __attribute__((visibility("default")))

/* Spin-wait hint. */
static inline void zcx_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* One cached registration (the library's front cache entry). */
struct zcx_mr {
	uintptr_t addr;
	size_t len;
	unsigned int access;
	unsigned int refs;		/* zcx_mr_reg() calls not yet released */
	bool detached;			/* stale: out of the table, freed at refs 0 */
	uint32_t slot;
	uint64_t gen;
	uint64_t handle;
	struct zcx_mr *hash_next;	/* bucket chain */
	struct zcx_list link;		/* on the LRU (unused) or detached list */
};

struct zcx_mr_cache {
	struct zcx_mr **buckets;
	size_t nbuckets;		/* a power of two */
	struct zcx_list lru;		/* unused entries, oldest first */
	struct zcx_list detached;	/* stale entries still in use */
	size_t nunused, max_unused;
	struct zcx_mr_stats stats;
};

struct zcx {
	int fd;
	uint64_t features;		/* ZCX_FEATURE_* of the module */
	unsigned long fork_gen;		/* zcx_fork_gen when opened */
	const struct zcx_status *status;
	size_t status_size;
	const uint64_t *gens;
	const struct zcx_event *events;
	pthread_mutex_t lock;		/* the front cache */
	struct zcx_mr_cache cache;
	pthread_mutex_t events_lock;	/* event draining */
	uint64_t event_next;		/* next event of the ring to deliver */
	pthread_mutex_t eps_lock;	/* @eps */
	struct zcx_list eps;		/* endpoints, destroyed by zcx_close() */
};

/* zcx.c */
int zcx_ioctl(const struct zcx *zcx, unsigned long cmd, void *arg);
int zcx_check_owner(const struct zcx *zcx);

/* ep.c */
void zcx_eps_destroy(struct zcx *zcx);
/* zcx_irecv() with ZCX_SQE_* @flags. */
int zcx_irecv_flags(struct zcx_ep *ep, void *buf, size_t len, uint64_t tag, uint64_t mask,
		    uint8_t flags, struct zcx_req *req);

/* mr.c */
int zcx_ioctl_pinning(struct zcx *zcx, unsigned long cmd, void *arg);
int zcx_mr_cache_init(struct zcx *zcx);
void zcx_mr_cache_fini(struct zcx *zcx);

#endif /* ZCX_INTERNAL_H */
