/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * zcx.h - internal declarations shared by the files of zcx.ko.
 *
 * Locking, outermost first:
 *   zcx_ctx.read_mutex	serialises read() of events;
 *   zcx_ctx.reap_mutex	held through a whole reaper pass, so that
 *				waiting for it means the pages are unpinned;
 *   mm->mmap_lock		taken by pinning and the VMA check;
 *   zcx_ctx.lock		a spinlock, innermost.  MMU-notifier callbacks
 *				take it while the mm's own locks are held, so
 *				nothing that sleeps, allocates, faults or takes
 *				mmap_lock ever runs under it.
 */
#ifndef ZCX_H
#define ZCX_H

#include <linux/fs.h>
#include <linux/interval_tree.h>
#include <linux/list.h>
#include <linux/mm_types.h>
#include <linux/mmu_notifier.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "compat.h"
#include "zcx_uapi.h"

/* Module parameters (main.c); read-only after load, validated at init. */
extern unsigned int zcx_cache_entries;
extern unsigned int zcx_ring_depth;
extern unsigned int zcx_zcopy_threshold;
extern unsigned long zcx_cache_bytes;

#define ZCX_MAX_CACHE_ENTRIES	(1U << 20)
#define ZCX_EVENT_COUNT		1024

enum zcx_region_state {
	ZCX_REGION_NEW,		/* being pinned, not yet visible */
	ZCX_REGION_LIVE,	/* in the tree, may be handed out */
	ZCX_REGION_DEAD,	/* stale or evicted: queued for unpinning */
};

/**
 * struct zcx_region - pinned pages of one registered range.
 * @node:	[start, last] in zcx_ctx.regions while LIVE.
 * @notifier:	MMU interval notifier over the same range.
 * @ctx:	owning context.
 * @pages:	pinned pages, @npages of them (NULL once unpinned).
 * @npages:	number of pages.
 * @access:	ZCX_ACCESS_* it was pinned for.
 * @slot:	index of its generation word.
 * @gen:	its generation (even).
 * @users:	handles userspace holds on it.
 * @state:	enum zcx_region_state.
 * @unpinned:	pages released by the reaper.
 * @monitor:	a monitor (ZCX_IOC_MON_ADD): no pages, never in @node's
 *		tree, never on the LRU.
 * @cookie:	a monitor's cookie, for its events.
 * @link:	on zcx_ctx.lru (LIVE, no users) or zcx_ctx.dead (DEAD).
 *
 * All fields but @pages/@npages are protected by zcx_ctx.lock; the pages
 * belong to whoever moved the region to DEAD (the reaper).
 */
struct zcx_region {
	struct interval_tree_node node;
	struct mmu_interval_notifier notifier;
	struct zcx_ctx *ctx;
	struct page **pages;
	unsigned long npages;
	u32 access;
	u32 slot;
	u64 gen;
	unsigned int users;
	enum zcx_region_state state;
	bool unpinned;
	bool monitor;
	u64 cookie;
	struct list_head link;
};

/**
 * struct zcx_ctx - state of one open() of /dev/zcx.
 * @mm:		address space of the opener, held with mmgrab().  It is both
 *		the memory the context works on and its identity: calls from
 *		any other mm (a forked child, a receiver of the fd) fail.
 * @lock:	protects everything below but @status's constant header,
 *		@read_seq and @reap_work.  See the lock order above.
 * @regions:	LIVE regions (not monitors) by address.
 * @lru:	LIVE regions without users, least recently used first.
 * @dead:	DEAD regions waiting for the reaper.
 * @slots:	slot -> region, @nslots of them.
 * @nslots:	generation words in the status area.
 * @nregions:	slots in use (regions in any state, and reservations).
 * @pinned:	pages pinned or reserved for pinning.
 * @ndying:	DEAD regions the reaper has not unpinned yet ...
 * @dying_pages: ... and their pages: both leave with the reaper, so the
 *		limits do not count them.
 * @next_gen:	next generation to hand out.
 * @max_entries: per-context limit on @nregions.
 * @max_bytes:	per-context limit on @pinned in bytes, 0 for none.
 * @free_slots: stack of free slot numbers, @nfree of them.
 * @status:	the status area (vmalloc_user), @status_size bytes.
 * @gens:	its generation words.
 * @events:	its event ring.
 * @read_mutex:	serialises read().
 * @read_seq:	next event read() returns (under @read_mutex).
 * @event_wait:	read() and poll() wait here for events.
 * @reap_work:	unpins DEAD regions outside the notifier callbacks.
 * @reap_mutex:	held by whoever unpins DEAD regions.
 */
struct zcx_ctx {
	struct mm_struct *mm;
	spinlock_t lock;		/* innermost; see the lock order above */
	struct rb_root_cached regions;
	struct list_head lru;
	struct list_head dead;
	struct zcx_region **slots;
	u32 nslots;
	u32 nregions;
	u64 pinned;
	u32 ndying;
	u64 dying_pages;
	u64 next_gen;
	u32 max_entries;
	u64 max_bytes;
	u32 *free_slots;
	u32 nfree;
	struct zcx_status *status;
	size_t status_size;
	__u64 *gens;
	struct zcx_event *events;
	struct mutex read_mutex;	/* serialises read() */
	u64 read_seq;
	wait_queue_head_t event_wait;
	struct work_struct reap_work;
	struct mutex reap_mutex;	/* see the lock order above */
};

/* context.c */
struct zcx_ctx *zcx_ctx_create(void);
void zcx_ctx_destroy(struct zcx_ctx *ctx);
int zcx_ctx_check_caller(const struct zcx_ctx *ctx);

/* ioctl.c */
long zcx_ioctl(struct file *file, unsigned int cmd, unsigned long arg);

/* region.c */
int zcx_mr_register(struct zcx_ctx *ctx, struct zcx_mr_reg *reg);
int zcx_mr_deregister(struct zcx_ctx *ctx, u64 handle);
unsigned int zcx_mr_flush(struct zcx_ctx *ctx);
int zcx_mr_set_limits(struct zcx_ctx *ctx, struct zcx_limits *limits);
int zcx_mon_add(struct zcx_ctx *ctx, struct zcx_mon_add *mon);
void zcx_regions_destroy(struct zcx_ctx *ctx);
void zcx_reap_work(struct work_struct *work);

/* status.c */
int zcx_status_init(struct zcx_ctx *ctx);
void zcx_status_free(struct zcx_ctx *ctx);
void zcx_event_add_locked(struct zcx_ctx *ctx, const struct zcx_region *region, u32 cause);
int zcx_status_mmap(struct zcx_ctx *ctx, struct vm_area_struct *vma);
ssize_t zcx_events_read(struct zcx_ctx *ctx, char __user *buf, size_t len, bool nonblock);
__poll_t zcx_events_poll(struct zcx_ctx *ctx, struct file *file, poll_table *wait);

/*
 * Counters in the shared status area.  Only the kernel writes them, under
 * zcx_ctx.lock; WRITE_ONCE() because userspace reads them concurrently.
 */
#define zcx_counter_add(ctx, name, delta) \
	WRITE_ONCE((ctx)->status->counters.name, (ctx)->status->counters.name + (delta))

/* stats.c: module-wide counters, for leak checks (sysfs). */
extern atomic64_t zcx_stat_contexts;
extern atomic64_t zcx_stat_regions;
extern atomic64_t zcx_stat_pinned_pages;
extern const struct attribute_group *zcx_attr_groups[];

#endif /* ZCX_H */
