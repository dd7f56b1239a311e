// SPDX-License-Identifier: MIT
/*
 * verbs.c - libzcx-verbs: an ibv_mr cache kept exact by zcx monitors.
 *
 * Every cached MR has a monitor on its range, added before the MR pins
 * its pages, so any later change to the memory marks it stale.  A hit is
 * a hash lookup plus one load of the monitor's generation word.  MRs that
 * go stale or are evicted wait on a "grave" list and are deregistered on
 * the next miss or in zcx_verbs_cache_progress(), never on the hit path.
 *
 * Entry states (all under cache->lock):
 *   cached:   in the key table and the MR table; on the LRU when unused;
 *   detached: stale while in use, only in the MR table (so that
 *             zcx_verbs_dereg() finds it), on no list;
 *   grave:    waiting to be deregistered, in the MR table, on the grave
 *             list; it leaves the MR table when taken off the list.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#include "zcx_list.h"
#include "zcx_verbs.h"

#define ZCX_EXPORT __attribute__((visibility("default")))

#define ZCX_VERBS_DEFAULT_ENTRIES	1024
#define ZCX_VERBS_MAX_ENTRIES		(1U << 20)

struct zcx_vmr {
	uintptr_t addr;
	size_t len;
	int access;
	unsigned int refs;
	bool in_keys;
	struct ibv_mr *mr;
	struct zcx_monitor *mon;
	struct zcx_vmr *key_next, *mr_next;
	struct zcx_list link;		/* on the LRU or the grave */
};

struct zcx_verbs_cache {
	struct zcx *zcx;
	struct ibv_pd *pd;
	struct zcx_verbs_cache_attr attr;
	pthread_mutex_t lock;
	struct zcx_vmr **keys, **mrs;
	size_t nbuckets;
	struct zcx_list lru, grave;
	size_t grave_entries, grave_bytes;	/* buried, not yet taken */
	uint64_t events_seen;
	struct zcx_verbs_stats stats;
};

static size_t key_bucket(const struct zcx_verbs_cache *c, uintptr_t addr, size_t len, int access)
{
	return zcx_hash_range(addr, len, (unsigned int)access, c->nbuckets);
}

static size_t mr_bucket(const struct zcx_verbs_cache *c, const struct ibv_mr *mr)
{
	uint64_t h = (uint64_t)(uintptr_t)mr * 0x9e3779b97f4a7c15ULL;

	return (h ^ (h >> 31)) & (c->nbuckets - 1);
}

static struct zcx_vmr *vmr_of(struct zcx_list *node)
{
	return zcx_list_entry(node, struct zcx_vmr, link);
}

static void keys_unlink(struct zcx_verbs_cache *c, struct zcx_vmr *e)
{
	struct zcx_vmr **pp = &c->keys[key_bucket(c, e->addr, e->len, e->access)];

	while (*pp != e)
		pp = &(*pp)->key_next;
	*pp = e->key_next;
	e->in_keys = false;
}

static void mrs_unlink(struct zcx_verbs_cache *c, struct zcx_vmr *e)
{
	struct zcx_vmr **pp = &c->mrs[mr_bucket(c, e->mr)];

	while (*pp != e)
		pp = &(*pp)->mr_next;
	*pp = e->mr_next;
}

static bool entry_valid(const struct zcx_verbs_cache *c, const struct zcx_vmr *e)
{
	return zcx_monitor_valid(c->zcx, e->mon);
}

/* An unused entry, off the LRU, goes to the grave. */
static void bury(struct zcx_verbs_cache *c, struct zcx_vmr *e)
{
	if (e->in_keys)
		keys_unlink(c, e);
	zcx_list_append(&c->grave, &e->link);
	c->grave_entries++;
	c->grave_bytes += e->len;
}

/* Move unused stale entries from the LRU to the grave, if anything changed. */
static void collect_stale(struct zcx_verbs_cache *c)
{
	uint64_t events = zcx_events_head(c->zcx);
	struct zcx_list *node, *next;
	struct zcx_vmr *e;

	if (events == c->events_seen)
		return;
	c->events_seen = events;
	for (node = c->lru.next; node != &c->lru; node = next) {
		next = node->next;
		e = vmr_of(node);
		if (!entry_valid(c, e)) {
			zcx_list_del(&e->link);
			bury(c, e);
			c->stats.stale++;
		}
	}
}

/*
 * Move the grave's entries out of the tables onto @taken (initialised
 * here): the caller deregisters them, without the lock.
 */
static void take_grave(struct zcx_verbs_cache *c, struct zcx_list *taken)
{
	struct zcx_vmr *e;

	zcx_list_init(taken);
	while (!zcx_list_empty(&c->grave)) {
		e = vmr_of(c->grave.next);
		zcx_list_del(&e->link);
		mrs_unlink(c, e);
		c->grave_entries--;
		c->grave_bytes -= e->len;
		c->stats.entries--;
		c->stats.bytes -= e->len;
		c->stats.deregistered++;
		zcx_list_append(taken, &e->link);
	}
}

/* Deregister entries taken from the grave; no lock held (system calls). */
static int destroy_entries(struct zcx_verbs_cache *c, struct zcx_list *taken)
{
	struct zcx_list *node, *next;
	struct zcx_vmr *e;
	int n = 0;

	for (node = taken->next; node != taken; node = next) {
		next = node->next;
		e = vmr_of(node);
		c->attr.dereg_mr(e->mr);
		zcx_monitor_del(c->zcx, e->mon);
		free(e);
		n++;
	}
	return n;
}

/* Would one more MR of @extra bytes exceed a limit, once the grave is gone? */
static bool over_limits(const struct zcx_verbs_cache *c, size_t extra)
{
	size_t entries = c->stats.entries - c->grave_entries;
	size_t bytes = c->stats.bytes - c->grave_bytes;

	return entries + 1 > c->attr.max_entries ||
	       (c->attr.max_bytes && bytes + extra > c->attr.max_bytes);
}

static struct zcx_vmr *lookup(struct zcx_verbs_cache *c, uintptr_t addr, size_t len, int access)
{
	struct zcx_vmr *e = c->keys[key_bucket(c, addr, len, access)];

	while (e && !(e->addr == addr && e->len == len && e->access == access))
		e = e->key_next;
	if (!e || entry_valid(c, e))
		return e;
	/* Stale: never handed out again. */
	c->stats.stale++;
	if (e->refs) {
		keys_unlink(c, e);	/* detached until released */
	} else {
		zcx_list_del(&e->link);
		bury(c, e);
	}
	return NULL;
}

/* The hook's registration: 0, or its errno (ENOMEM if it set none). */
static int reg_mr(struct zcx_verbs_cache *c, void *addr, size_t len, int access,
		  struct ibv_mr **mr)
{
	errno = 0;
	*mr = c->attr.reg_mr(c->pd, addr, len, access);
	return *mr ? 0 : errno ? -errno : -ENOMEM;
}

ZCX_EXPORT int zcx_verbs_reg(struct zcx_verbs_cache *c, void *addr, size_t len, int access,
			     struct ibv_mr **out)
{
	uintptr_t key = (uintptr_t)addr;
	struct zcx_vmr *e, *other;
	struct zcx_list dead;
	int ret;

	*out = NULL;
	/* A forked child must not touch the parent's MRs. */
	if (!zcx_owned(c->zcx))
		return -EIO;
	/* Refused before a miss lets cached MRs go for it. */
	if (!len || key + len - 1 < key)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	e = lookup(c, key, len, access);
	if (e) {
		if (!e->refs++)
			zcx_list_del(&e->link);
		c->stats.hits++;
		pthread_mutex_unlock(&c->lock);
		*out = e->mr;
		return 0;
	}
	/* A miss: the slow path, where old MRs are let go. */
	collect_stale(c);
	while (over_limits(c, len) && !zcx_list_empty(&c->lru)) {
		e = vmr_of(c->lru.next);
		zcx_list_del(&e->link);
		bury(c, e);
		c->stats.evictions++;
	}
	take_grave(c, &dead);
	pthread_mutex_unlock(&c->lock);
	destroy_entries(c, &dead);

	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	/*
	 * The monitor first: any change after the pin below is seen.
	 * Released MRs hold monitors, i.e. the context's cache entries, and
	 * still pin their pages: they may be what fills the entries, the
	 * memlock limit or the device.  Let them go and try once more.
	 */
	ret = zcx_monitor_add(c->zcx, addr, len, 0, &e->mon);
	if (ret == -ENOMEM && zcx_verbs_cache_flush(c) > 0)
		ret = zcx_monitor_add(c->zcx, addr, len, 0, &e->mon);
	if (ret) {
		free(e);
		return ret;
	}
	ret = reg_mr(c, addr, len, access, &e->mr);
	if ((ret == -ENOMEM || ret == -EAGAIN) && zcx_verbs_cache_flush(c) > 0)
		ret = reg_mr(c, addr, len, access, &e->mr);
	if (ret) {
		zcx_monitor_del(c->zcx, e->mon);
		free(e);
		return ret;
	}
	e->addr = key;
	e->len = len;
	e->access = access;
	e->refs = 1;
	e->in_keys = true;

	pthread_mutex_lock(&c->lock);
	c->stats.misses++;
	/* Another thread may have registered the same range meanwhile: one stays. */
	other = lookup(c, key, len, access);
	if (other) {
		if (!other->refs++)
			zcx_list_del(&other->link);
		c->stats.deregistered++;
		pthread_mutex_unlock(&c->lock);
		c->attr.dereg_mr(e->mr);
		zcx_monitor_del(c->zcx, e->mon);
		free(e);
		*out = other->mr;
		return 0;
	}
	e->key_next = c->keys[key_bucket(c, key, len, access)];
	c->keys[key_bucket(c, key, len, access)] = e;
	e->mr_next = c->mrs[mr_bucket(c, e->mr)];
	c->mrs[mr_bucket(c, e->mr)] = e;
	c->stats.entries++;
	c->stats.bytes += len;
	pthread_mutex_unlock(&c->lock);
	*out = e->mr;
	return 0;
}

ZCX_EXPORT int zcx_verbs_dereg(struct zcx_verbs_cache *c, struct ibv_mr *mr)
{
	struct zcx_vmr *e;

	if (!zcx_owned(c->zcx))
		return -EIO;
	pthread_mutex_lock(&c->lock);
	for (e = c->mrs[mr_bucket(c, mr)]; e && e->mr != mr; e = e->mr_next)
		;
	if (!e || !e->refs || zcx_list_linked(&e->link)) {
		pthread_mutex_unlock(&c->lock);
		return e ? -EINVAL : -ENOENT;
	}
	if (!--e->refs) {
		if (e->in_keys && entry_valid(c, e))
			zcx_list_append(&c->lru, &e->link);
		else
			bury(c, e);	/* deregistered on the next miss */
	}
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* Whether @mr came from @c (for the interposer; not exported). */
bool zcx_verbs_owns(struct zcx_verbs_cache *c, const struct ibv_mr *mr)
{
	struct zcx_vmr *e;

	pthread_mutex_lock(&c->lock);
	for (e = c->mrs[mr_bucket(c, mr)]; e && e->mr != mr; e = e->mr_next)
		;
	pthread_mutex_unlock(&c->lock);
	return e;
}

ZCX_EXPORT int zcx_verbs_cache_progress(struct zcx_verbs_cache *c)
{
	struct zcx_list dead;

	if (!zcx_owned(c->zcx))
		return -EIO;
	pthread_mutex_lock(&c->lock);
	c->events_seen--;	/* look at the LRU even without new events */
	collect_stale(c);
	take_grave(c, &dead);
	pthread_mutex_unlock(&c->lock);
	return destroy_entries(c, &dead);
}

ZCX_EXPORT int zcx_verbs_cache_flush(struct zcx_verbs_cache *c)
{
	struct zcx_list dead;
	struct zcx_vmr *e;

	if (!zcx_owned(c->zcx))
		return -EIO;
	pthread_mutex_lock(&c->lock);
	while (!zcx_list_empty(&c->lru)) {
		e = vmr_of(c->lru.next);
		zcx_list_del(&e->link);
		bury(c, e);
	}
	take_grave(c, &dead);
	pthread_mutex_unlock(&c->lock);
	return destroy_entries(c, &dead);
}

ZCX_EXPORT int zcx_verbs_stats(struct zcx_verbs_cache *c, struct zcx_verbs_stats *stats)
{
	pthread_mutex_lock(&c->lock);
	*stats = c->stats;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

ZCX_EXPORT int zcx_verbs_cache_create(struct zcx *zcx, struct ibv_pd *pd,
				      const struct zcx_verbs_cache_attr *attr,
				      struct zcx_verbs_cache **out)
{
	struct zcx_verbs_cache *c;
	struct zcx_query q;
	int ret;

	*out = NULL;
	/* Without monitors every registration would fail, later. */
	ret = zcx_query(zcx, &q);
	if (ret)
		return ret;
	if (!(q.features & ZCX_FEATURE_MONITOR))
		return -EOPNOTSUPP;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->zcx = zcx;
	c->pd = pd;
	if (attr)
		c->attr = *attr;
	if (!c->attr.max_entries)
		c->attr.max_entries = ZCX_VERBS_DEFAULT_ENTRIES;
	if (c->attr.max_entries > ZCX_VERBS_MAX_ENTRIES) {
		free(c);
		return -EINVAL;
	}
	if (!c->attr.reg_mr)
		c->attr.reg_mr = ibv_reg_mr;
	if (!c->attr.dereg_mr)
		c->attr.dereg_mr = ibv_dereg_mr;
	for (c->nbuckets = 64; c->nbuckets < c->attr.max_entries * 2; c->nbuckets *= 2)
		;
	c->keys = calloc(c->nbuckets, sizeof(*c->keys));
	c->mrs = calloc(c->nbuckets, sizeof(*c->mrs));
	if (!c->keys || !c->mrs) {
		free(c->keys);
		free(c->mrs);
		free(c);
		return -ENOMEM;
	}
	pthread_mutex_init(&c->lock, NULL);
	zcx_list_init(&c->lru);
	zcx_list_init(&c->grave);
	*out = c;
	return 0;
}

ZCX_EXPORT void zcx_verbs_cache_destroy(struct zcx_verbs_cache *c)
{
	struct zcx_vmr *e, *next;
	size_t b;

	bool owned;

	if (!c)
		return;
	/* In a forked child only the memory is ours to free, not the MRs. */
	owned = zcx_owned(c->zcx);
	for (b = 0; b < c->nbuckets; b++) {
		for (e = c->mrs[b]; e; e = next) {
			next = e->mr_next;
			if (owned)
				c->attr.dereg_mr(e->mr);
			zcx_monitor_del(c->zcx, e->mon);
			free(e);
		}
	}
	pthread_mutex_destroy(&c->lock);
	free(c->keys);
	free(c->mrs);
	free(c);
}
