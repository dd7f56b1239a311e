// SPDX-License-Identifier: MIT
/*
 * mr.c - libzcx's registration cache in front of the module's.
 *
 * An entry is keyed by (address, length, access) and holds one module
 * reference on its region.  A hit needs the entry and one acquire load of
 * the region's generation word in the mapped status area: no system call.
 * Entries nobody uses sit on an LRU, bounded to half the module's slots so
 * the module keeps room of its own; when the module still runs out
 * (ENOMEM), the library gives back all unused entries and tries once more.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "zcx_internal.h"

static size_t zcx_mr_bucket(const struct zcx_mr_cache *cache, uintptr_t addr, size_t len,
			    unsigned int access)
{
	return zcx_hash_range(addr, len, access, cache->nbuckets);
}

static void zcx_lru_unlink(struct zcx_mr_cache *cache, struct zcx_mr *mr)
{
	zcx_list_del(&mr->link);
	cache->nunused--;
}

static void zcx_lru_append(struct zcx_mr_cache *cache, struct zcx_mr *mr)
{
	zcx_list_append(&cache->lru, &mr->link);
	cache->nunused++;
}

static void zcx_hash_unlink(struct zcx_mr_cache *cache, struct zcx_mr *mr)
{
	struct zcx_mr **pp = &cache->buckets[zcx_mr_bucket(cache, mr->addr, mr->len, mr->access)];

	while (*pp != mr)
		pp = &(*pp)->hash_next;
	*pp = mr->hash_next;
}

/* Give the module its reference back and forget the entry. */
static void zcx_mr_release(struct zcx *zcx, struct zcx_mr *mr)
{
	struct zcx_mr_dereg dereg = { .handle = mr->handle };

	zcx_ioctl(zcx, ZCX_IOC_MR_DEREG, &dereg);
	free(mr);
}

/* Drop an unused entry (on the LRU, in the table). */
static void zcx_mr_drop_unused(struct zcx *zcx, struct zcx_mr *mr)
{
	zcx_lru_unlink(&zcx->cache, mr);
	zcx_hash_unlink(&zcx->cache, mr);
	zcx_mr_release(zcx, mr);
}

static bool zcx_mr_is_valid(const struct zcx *zcx, const struct zcx_mr *mr)
{
	/* A forked child has no status area: nothing is valid there. */
	return !zcx_check_owner(zcx) &&
	       __atomic_load_n(&zcx->gens[mr->slot], __ATOMIC_ACQUIRE) == mr->gen;
}

static struct zcx_mr *zcx_mr_lookup(struct zcx *zcx, uintptr_t addr, size_t len,
				    unsigned int access)
{
	struct zcx_mr_cache *cache = &zcx->cache;
	struct zcx_mr *mr = cache->buckets[zcx_mr_bucket(cache, addr, len, access)];

	while (mr && !(mr->addr == addr && mr->len == len && mr->access == access))
		mr = mr->hash_next;
	if (!mr || zcx_mr_is_valid(zcx, mr))
		return mr;

	/*
	 * The memory changed since: never hand this out again.  Users still
	 * holding it release it through zcx_mr_dereg(); until then it waits
	 * on the detached list.
	 */
	cache->stats.stale++;
	if (mr->refs) {
		zcx_hash_unlink(cache, mr);
		mr->detached = true;
		zcx_list_append(&cache->detached, &mr->link);
	} else {
		zcx_mr_drop_unused(zcx, mr);
	}
	return NULL;
}

static void zcx_mr_take(struct zcx_mr_cache *cache, struct zcx_mr *mr)
{
	if (!mr->refs++)
		zcx_lru_unlink(cache, mr);
}

/* Release unused entries, oldest first, until at most @keep remain. */
static unsigned int zcx_mr_trim(struct zcx *zcx, size_t keep)
{
	unsigned int n = 0;

	while (zcx->cache.nunused > keep) {
		zcx_mr_drop_unused(zcx, zcx_list_entry(zcx->cache.lru.next, struct zcx_mr, link));
		n++;
	}
	return n;
}

/*
 * An ioctl that takes a cache entry of the module (and may pin): on
 * ENOMEM, once more after releasing our unused entries, which the module
 * counts as in use and may be what fills its cache or the memlock limit.
 */
int zcx_ioctl_pinning(struct zcx *zcx, unsigned long cmd, void *arg)
{
	int ret = zcx_ioctl(zcx, cmd, arg);

	if (ret == -ENOMEM) {
		pthread_mutex_lock(&zcx->lock);
		zcx->cache.stats.evictions += zcx_mr_trim(zcx, 0);
		pthread_mutex_unlock(&zcx->lock);
		ret = zcx_ioctl(zcx, cmd, arg);
	}
	return ret;
}

static int zcx_mr_register_kernel(struct zcx *zcx, uintptr_t addr, size_t len,
				  unsigned int access, struct zcx_mr_reg *reg)
{
	memset(reg, 0, sizeof(*reg));
	reg->addr = addr;
	reg->length = len;
	reg->access = access;
	return zcx_ioctl_pinning(zcx, ZCX_IOC_MR_REG, reg);
}

ZCX_EXPORT int zcx_mr_reg(struct zcx *zcx, const void *addr, size_t len, unsigned int access,
			  struct zcx_mr **out)
{
	uintptr_t key = (uintptr_t)addr;
	struct zcx_mr_reg reg;
	struct zcx_mr *mr, *fresh;
	int ret;

	*out = NULL;
	ret = zcx_check_owner(zcx);
	if (ret)
		return ret;

	pthread_mutex_lock(&zcx->lock);
	mr = zcx_mr_lookup(zcx, key, len, access);
	if (mr) {
		zcx_mr_take(&zcx->cache, mr);
		zcx->cache.stats.lib_hits++;
		pthread_mutex_unlock(&zcx->lock);
		*out = mr;
		return 0;
	}
	pthread_mutex_unlock(&zcx->lock);

	/* Pinning may take long: other threads' hits go on meanwhile. */
	fresh = calloc(1, sizeof(*fresh));
	if (!fresh)
		return -ENOMEM;
	ret = zcx_mr_register_kernel(zcx, key, len, access, &reg);
	if (ret) {
		free(fresh);
		return ret;
	}

	pthread_mutex_lock(&zcx->lock);
	if (reg.result == ZCX_MR_HIT)
		zcx->cache.stats.kernel_hits++;
	else
		zcx->cache.stats.misses++;
	/* Another thread may have cached the same key in the meantime. */
	mr = zcx_mr_lookup(zcx, key, len, access);
	if (mr) {
		zcx_mr_take(&zcx->cache, mr);
		pthread_mutex_unlock(&zcx->lock);
		fresh->handle = reg.handle;
		zcx_mr_release(zcx, fresh);
		*out = mr;
		return 0;
	}
	fresh->addr = key;
	fresh->len = len;
	fresh->access = access;
	fresh->refs = 1;
	fresh->slot = reg.slot;
	fresh->gen = reg.gen;
	fresh->handle = reg.handle;
	{
		size_t b = zcx_mr_bucket(&zcx->cache, key, len, access);

		fresh->hash_next = zcx->cache.buckets[b];
		zcx->cache.buckets[b] = fresh;
	}
	pthread_mutex_unlock(&zcx->lock);
	*out = fresh;
	return 0;
}

ZCX_EXPORT int zcx_mr_dereg(struct zcx *zcx, struct zcx_mr *mr)
{
	int ret = zcx_check_owner(zcx);

	if (ret)
		return ret;
	pthread_mutex_lock(&zcx->lock);
	if (!mr->refs) {
		pthread_mutex_unlock(&zcx->lock);
		return -EINVAL;
	}
	if (!--mr->refs) {
		if (mr->detached) {
			zcx_list_del(&mr->link);
			zcx_mr_release(zcx, mr);
		} else {
			zcx_lru_append(&zcx->cache, mr);
			zcx->cache.stats.evictions += zcx_mr_trim(zcx, zcx->cache.max_unused);
		}
	}
	pthread_mutex_unlock(&zcx->lock);
	return 0;
}

ZCX_EXPORT uint64_t zcx_mr_handle(const struct zcx_mr *mr)
{
	return mr->handle;
}

ZCX_EXPORT bool zcx_mr_valid(const struct zcx *zcx, const struct zcx_mr *mr)
{
	return zcx_mr_is_valid(zcx, mr);
}

ZCX_EXPORT int zcx_mr_flush(struct zcx *zcx)
{
	struct zcx_mr_flush flush = { 0 };
	int ret = zcx_check_owner(zcx);

	if (ret)
		return ret;
	pthread_mutex_lock(&zcx->lock);
	zcx->cache.stats.evictions += zcx_mr_trim(zcx, 0);
	pthread_mutex_unlock(&zcx->lock);
	return zcx_ioctl(zcx, ZCX_IOC_MR_FLUSH, &flush);
}

ZCX_EXPORT int zcx_mr_stats(struct zcx *zcx, struct zcx_mr_stats *stats)
{
	const struct zcx_counters *k = &zcx->status->counters;
	int ret = zcx_check_owner(zcx);

	if (ret)
		return ret;
	pthread_mutex_lock(&zcx->lock);
	*stats = zcx->cache.stats;
	pthread_mutex_unlock(&zcx->lock);
	stats->kernel.hits = __atomic_load_n(&k->hits, __ATOMIC_RELAXED);
	stats->kernel.misses = __atomic_load_n(&k->misses, __ATOMIC_RELAXED);
	stats->kernel.invalidations = __atomic_load_n(&k->invalidations, __ATOMIC_RELAXED);
	stats->kernel.evictions = __atomic_load_n(&k->evictions, __ATOMIC_RELAXED);
	stats->kernel.pinned_pages = __atomic_load_n(&k->pinned_pages, __ATOMIC_RELAXED);
	stats->kernel.regions = __atomic_load_n(&k->regions, __ATOMIC_RELAXED);
	stats->kernel.events = __atomic_load_n(&k->events, __ATOMIC_RELAXED);
	stats->kernel.dev_regs = __atomic_load_n(&k->dev_regs, __ATOMIC_RELAXED);
	stats->kernel.dev_regs_total = __atomic_load_n(&k->dev_regs_total, __ATOMIC_RELAXED);
	stats->kernel.dev_regs_posted = __atomic_load_n(&k->dev_regs_posted, __ATOMIC_RELAXED);
	return 0;
}

int zcx_mr_cache_init(struct zcx *zcx)
{
	struct zcx_mr_cache *cache = &zcx->cache;
	size_t slots = zcx->status->gen_count;

	cache->max_unused = slots / 2 ? slots / 2 : 1;
	for (cache->nbuckets = 64; cache->nbuckets < slots; cache->nbuckets *= 2)
		;
	cache->buckets = calloc(cache->nbuckets, sizeof(*cache->buckets));
	if (!cache->buckets)
		return -ENOMEM;
	zcx_list_init(&cache->lru);
	zcx_list_init(&cache->detached);
	return 0;
}

/*
 * Free every entry, in use or not: closing the descriptor releases the
 * module's references all at once.
 */
void zcx_mr_cache_fini(struct zcx *zcx)
{
	struct zcx_mr_cache *cache = &zcx->cache;
	struct zcx_list *node, *next_node;
	struct zcx_mr *mr, *next;
	size_t b;

	if (!cache->buckets)
		return;
	for (b = 0; b < cache->nbuckets; b++) {
		for (mr = cache->buckets[b]; mr; mr = next) {
			next = mr->hash_next;
			free(mr);
		}
	}
	for (node = cache->detached.next; node != &cache->detached; node = next_node) {
		next_node = node->next;
		free(zcx_list_entry(node, struct zcx_mr, link));
	}
	free(cache->buckets);
	cache->buckets = NULL;
}
