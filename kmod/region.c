// SPDX-License-Identifier: GPL-2.0-only
/*
 * region.c - the pinned-region cache of a context: lookup, pinning under
 * MMU-notifier protection, the LRU and its limits, invalidation, and
 * unpinning in the background.
 *
 * Monitors (ZCX_IOC_MON_ADD) are regions without pages: the same
 * notifier, generation word and events, but never looked up, pinned,
 * or evicted.
 *
 * Life of a region: NEW while being pinned (it holds a slot and its share
 * of the limits, but lookups do not see it); LIVE once in the interval
 * tree; DEAD when the notifier invalidates it or the LRU evicts it.  A
 * DEAD region is off the tree and its generation word is odd, so it is
 * never handed out again; the reaper unpins it once no transfer holds it
 * busy, and the structure goes when both the reaper and the last handle
 * are done with it.
 */
#include <linux/capability.h>
#include <linux/hugetlb_inline.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/shmem_fs.h>
#include <linux/slab.h>

#include "zcx.h"
#include "zcx_trace.h"

/* Pins racing with changes to the range are retried this often. */
#define ZCX_PIN_RETRIES		16
/* Pages pinned per pin_user_pages_fast() call. */
#define ZCX_PIN_CHUNK		BIT(16)
/* The page array must stay within what kvmalloc() serves. */
#define ZCX_MAX_REGION_PAGES	((unsigned long)INT_MAX / sizeof(struct page *))
#define ZCX_GEN_LIMIT		(1ULL << (64 - ZCX_HANDLE_SLOT_BITS))

static void zcx_slot_release_locked(struct zcx_ctx *ctx, struct zcx_region *r)
{
	ctx->slots[r->slot] = NULL;
	ctx->free_slots[ctx->nfree++] = r->slot;
	ctx->nregions--;
	zcx_counter_add(ctx, regions, -1);
	atomic64_dec(&zcx_stat_regions);
}

static void zcx_region_free(struct zcx_region *r)
{
	kvfree(r->pages);
	kfree(r);
}

/*
 * Take a LIVE region out of service: no lookup finds it, its generation
 * word turns odd before the caller returns, and the reaper will unpin it.
 */
static void zcx_region_kill_locked(struct zcx_region *r)
{
	struct zcx_ctx *ctx = r->ctx;
	struct zcx_region_watch *w;

	lockdep_assert_held(&ctx->lock);
	if (!r->monitor)
		interval_tree_remove(&r->node, &ctx->regions);
	/* Pairs with userspace's acquire load of the word: odd is stale. */
	smp_store_release(&ctx->gens[r->slot], r->gen | 1);
	r->state = ZCX_REGION_DEAD;
	list_move_tail(&r->link, &ctx->dead);
	ctx->ndying++;
	ctx->dying_pages += r->npages;
	/* Backends let go of their registrations: their busy references. */
	list_for_each_entry(w, &r->watches, link) {
		WRITE_ONCE(ctx->dead_watches, ctx->dead_watches + 1);
		w->dead(w);
	}
}

static void zcx_region_evict_locked(struct zcx_region *r)
{
	trace_zcx_region_evict(r);
	zcx_region_kill_locked(r);
	zcx_counter_add(r->ctx, evictions, 1);
}

/*
 * The notifier events that leave the pinned pages where they are:
 * mprotect and NUMA hinting (PROTECTION_VMA), fork's write-protection for
 * copy-on-write (PROTECTION_PAGE: pinned pages stay with the parent, the
 * child gets copies) and soft-dirty tracking.  Everything else, including
 * events unknown to this code, makes the region stale: a spurious
 * invalidation costs a re-pin, a missed one hands out the wrong pages.
 */
static u32 zcx_event_cause(enum mmu_notifier_event event)
{
	switch (event) {
	case MMU_NOTIFY_PROTECTION_VMA:
	case MMU_NOTIFY_PROTECTION_PAGE:
	case MMU_NOTIFY_SOFT_DIRTY:
		return 0;
	case MMU_NOTIFY_UNMAP:
		return ZCX_EVENT_UNMAP;
	case MMU_NOTIFY_RELEASE:
		return ZCX_EVENT_RELEASE;
	case MMU_NOTIFY_MIGRATE:
		return ZCX_EVENT_MIGRATE;
	case MMU_NOTIFY_EXCLUSIVE:
		return ZCX_EVENT_EXCLUSIVE;
	default:
		return ZCX_EVENT_CLEAR;
	}
}

/*
 * Runs inside munmap() and friends, possibly for a non-blockable range
 * (the OOM reaper): only ctx->lock is taken and nothing sleeps, so the
 * answer is always "done".  The region is stale before this returns, and
 * so before the system call that changed the memory returns.
 */
static bool zcx_region_invalidate(struct mmu_interval_notifier *notifier,
				  const struct mmu_notifier_range *range,
				  unsigned long cur_seq)
{
	struct zcx_region *r = container_of(notifier, struct zcx_region, notifier);
	struct zcx_ctx *ctx = r->ctx;
	u32 cause = zcx_event_cause(range->event);

	if (!cause)
		return true;
	spin_lock(&ctx->lock);
	/* Makes a pin of this range that is under way retry. */
	mmu_interval_set_seq(notifier, cur_seq);
	if (r->state == ZCX_REGION_LIVE) {
		zcx_region_kill_locked(r);
		zcx_counter_add(ctx, invalidations, 1);
		ctx->inval[cause - 1]++;
		trace_zcx_region_invalidate(r, cause);
		zcx_event_add_locked(ctx, r, cause);
		schedule_work(&ctx->reap_work);
	}
	spin_unlock(&ctx->lock);
	return true;
}

static const struct mmu_interval_notifier_ops zcx_region_ops = {
	.invalidate = zcx_region_invalidate,
};

/* Give back what a region holds; it is DEAD and on no list.  Sleeps. */
static void zcx_region_unpin(struct zcx_ctx *ctx, struct zcx_region *r)
{
	/* Waits for a callback in flight; none runs after this. */
	mmu_interval_notifier_remove(&r->notifier);
	if (r->monitor)
		return;
	unpin_user_pages_dirty_lock(r->pages, r->npages, r->access & ZCX_ACCESS_WRITE);
	kvfree(r->pages);
	r->pages = NULL;
	zcx_pin_uncharge(ctx, r->npages);
	atomic64_sub(r->npages, &zcx_stat_pinned_pages);
}

/*
 * Unpin every DEAD region that no transfer holds busy (the last busy put
 * of one queues another pass); frees those no handle refers to any more.
 * The mutex makes a second caller wait until a pass under way has
 * unpinned what it took, so "reaped" means "unpinned but what transfers
 * under way still use" for every caller.
 */
static void zcx_reap(struct zcx_ctx *ctx)
{
	struct zcx_region *r, *tmp;
	LIST_HEAD(list);
	bool unused;

	mutex_lock(&ctx->reap_mutex);
	spin_lock(&ctx->lock);
	list_splice_init(&ctx->dead, &list);
	spin_unlock(&ctx->lock);

	list_for_each_entry_safe(r, tmp, &list, link) {
		spin_lock(&ctx->lock);
		if (r->busy) {
			/* A transfer still copies: its last busy put requeues us. */
			list_move_tail(&r->link, &ctx->dead);
			spin_unlock(&ctx->lock);
			continue;
		}
		list_del_init(&r->link);
		spin_unlock(&ctx->lock);
		zcx_region_unpin(ctx, r);

		spin_lock(&ctx->lock);
		r->unpinned = true;
		ctx->pinned -= r->npages;
		ctx->ndying--;
		ctx->dying_pages -= r->npages;
		zcx_counter_add(ctx, pinned_pages, -r->npages);
		unused = !r->users;
		if (unused)
			zcx_slot_release_locked(ctx, r);
		spin_unlock(&ctx->lock);
		if (unused)
			zcx_region_free(r);
	}
	mutex_unlock(&ctx->reap_mutex);
}

void zcx_reap_work(struct work_struct *work)
{
	zcx_reap(container_of(work, struct zcx_ctx, reap_work));
}

/*
 * Reap, once the backends' registrations of DEAD regions are gone: they
 * go as soon as their device is done with the pages, which takes a
 * device's round trip and a few workers' turns, or, for a stuck device,
 * until the keepalive ends its connection.  So a process's own system call
 * waits 30 seconds at most, and killably; a kernel thread (the polling
 * thread, a backend's worker), which its callers' deaths do not kill and
 * which others may wait for, five.  Regions evicted for room then give
 * it back.
 */
static void zcx_reap_watched(struct zcx_ctx *ctx)
{
	long timeout = current->flags & PF_KTHREAD ? 5 * HZ : 30 * HZ;

	wait_event_killable_timeout(ctx->watch_wait, !READ_ONCE(ctx->dead_watches), timeout);
	zcx_reap(ctx);
}

/* Would the limits hold with this much more, once the reaper is done? */
static bool zcx_over_limits_locked(const struct zcx_ctx *ctx, unsigned int extra_regions,
				   unsigned long extra_pages)
{
	u64 pages = ctx->pinned - ctx->dying_pages + extra_pages;

	return ctx->nregions - ctx->ndying + extra_regions > ctx->max_entries ||
	       (ctx->max_bytes && pages << PAGE_SHIFT > ctx->max_bytes);
}

/*
 * Evict unused regions, oldest first, while the limits are exceeded.  Not
 * those a transfer holds busy (a posted receive's, for as long as no
 * message comes): their pages stay pinned until it ends, so evicting them
 * would only let new regions past the limits.
 */
static bool zcx_evict_locked(struct zcx_ctx *ctx, unsigned int extra_regions,
			     unsigned long extra_pages)
{
	struct zcx_region *r, *tmp;
	bool evicted = false;

	list_for_each_entry_safe(r, tmp, &ctx->lru, link) {
		if (!zcx_over_limits_locked(ctx, extra_regions, extra_pages))
			break;
		if (r->busy)
			continue;
		zcx_region_evict_locked(r);
		evicted = true;
	}
	return evicted;
}

/*
 * Reserve a slot and the region's share of the limits, evicting unused
 * regions as needed.  Stale regions whose slots the reaper is freeing
 * count too, so wait for the reaper once before giving up.  A region
 * over the byte limit by itself evicts nothing: it would not fit anyway.
 */
static int zcx_reserve(struct zcx_ctx *ctx, struct zcx_region *r)
{
	bool evicted, fits;
	int attempt;

	for (attempt = 0; ; attempt++) {
		spin_lock(&ctx->lock);
		if (ctx->max_bytes && (u64)r->npages << PAGE_SHIFT > ctx->max_bytes) {
			spin_unlock(&ctx->lock);
			return -ENOMEM;
		}
		evicted = zcx_evict_locked(ctx, 1, r->npages);
		fits = !zcx_over_limits_locked(ctx, 1, r->npages) && ctx->nfree;
		if (fits) {
			r->slot = ctx->free_slots[--ctx->nfree];
			ctx->slots[r->slot] = r;
			ctx->nregions++;
			ctx->pinned += r->npages;
			zcx_counter_add(ctx, regions, 1);
			atomic64_inc(&zcx_stat_regions);
		}
		spin_unlock(&ctx->lock);
		if (fits || attempt) {
			/* Unpin what was evicted, even if this does not fit. */
			if (evicted)
				zcx_reap(ctx);
			return fits ? 0 : -ENOMEM;
		}
		zcx_reap_watched(ctx);
	}
}

static void zcx_unreserve(struct zcx_ctx *ctx, struct zcx_region *r)
{
	spin_lock(&ctx->lock);
	ctx->pinned -= r->npages;
	zcx_slot_release_locked(ctx, r);
	spin_unlock(&ctx->lock);
}

/*
 * Note the limit that kernel threads pin under for @ctx's process: its
 * RLIMIT_MEMLOCK now, or none with CAP_IPC_LOCK.  Called as it creates a
 * polled endpoint or exposes memory, before they can pin for it.
 */
void zcx_ctx_note_memlock(struct zcx_ctx *ctx)
{
	WRITE_ONCE(ctx->kthread_memlock, capable(CAP_IPC_LOCK) ? RLIM_INFINITY :
			 rlimit(RLIMIT_MEMLOCK));
}

/*
 * The RLIMIT_MEMLOCK the caller pins for @ctx's process under, and in
 * *@for_other whether it is not that process: a kernel thread (the
 * polling thread, a backend's worker), or any other process, pins under
 * the limit noted by zcx_ctx_note_memlock(), its own credentials not
 * being the process's.
 */
static unsigned long zcx_memlock_limit(struct zcx_ctx *ctx, bool *for_other)
{
	*for_other = (current->flags & PF_KTHREAD) || current->mm != ctx->mm;
	return *for_other ? READ_ONCE(ctx->kthread_memlock) : rlimit(RLIMIT_MEMLOCK);
}

/*
 * Charge mm->pinned_vm against RLIMIT_MEMLOCK, as ib_umem_get() does.
 * CAP_IPC_LOCK is checked only past the limit, as mlock() does: a check
 * may be audited.
 */
static int zcx_charge_memlock(struct zcx_ctx *ctx, unsigned long npages)
{
	bool for_other;
	unsigned long limit = zcx_memlock_limit(ctx, &for_other);
	s64 total = atomic64_add_return(npages, &ctx->mm->pinned_vm);

	if (limit != RLIM_INFINITY && total > (limit >> PAGE_SHIFT) &&
	    (for_other || !capable(CAP_IPC_LOCK))) {
		atomic64_sub(npages, &ctx->mm->pinned_vm);
		return -ENOMEM;
	}
	return 0;
}

/*
 * Charge @npages about to be pinned for @ctx's process to its
 * RLIMIT_MEMLOCK; its own unused regions go first if they are what holds
 * the limit (not when @npages alone is past it).  Returns 0 or -ENOMEM.
 */
int zcx_pin_charge(struct zcx_ctx *ctx, unsigned long npages)
{
	bool for_other;

	if (!zcx_charge_memlock(ctx, npages))
		return 0;
	/* Refused, so the limit is finite. */
	if (npages > (zcx_memlock_limit(ctx, &for_other) >> PAGE_SHIFT))
		return -ENOMEM;
	zcx_mr_flush(ctx);
	return zcx_charge_memlock(ctx, npages);
}

/* Give back what zcx_pin_charge() charged. */
void zcx_pin_uncharge(struct zcx_ctx *ctx, unsigned long npages)
{
	atomic64_sub(npages, &ctx->mm->pinned_vm);
}

static bool zcx_vma_supported(struct vm_area_struct *vma)
{
	/* Device memory, and driver mappings such as our own status area. */
	if (vma->vm_flags & (VM_IO | VM_PFNMAP | VM_MIXEDMAP))
		return false;
	if (vma_is_anonymous(vma) || is_vm_hugetlb_page(vma))
		return true;
	/* shmem, memfd and SysV shm all sit on a shmem mapping. */
	return vma->vm_file && shmem_mapping(vma->vm_file->f_mapping);
}

/* Every page of [start, end) mapped, of a supported kind, accessible. */
static int zcx_check_vmas(struct mm_struct *mm, unsigned long start, unsigned long end,
			  u32 access)
{
	struct vm_area_struct *vma;
	unsigned long addr;
	int ret = 0;

	mmap_read_lock(mm);
	for (addr = start; addr < end; addr = vma->vm_end) {
		vma = vma_lookup(mm, addr);
		if (!vma) {
			ret = -EFAULT;
			break;
		}
		if (!zcx_vma_supported(vma)) {
			ret = -EOPNOTSUPP;
			break;
		}
		if (!(vma->vm_flags & VM_READ) ||
		    ((access & ZCX_ACCESS_WRITE) && !(vma->vm_flags & VM_WRITE))) {
			ret = -EACCES;
			break;
		}
	}
	mmap_read_unlock(mm);
	return ret;
}

static int zcx_pin(struct zcx_region *r)
{
	unsigned int gup_flags = FOLL_LONGTERM;
	unsigned long done = 0;
	int n;

	if (r->access & ZCX_ACCESS_WRITE)
		gup_flags |= FOLL_WRITE;
	while (done < r->npages) {
		n = pin_user_pages_fast(r->node.start + (done << PAGE_SHIFT),
					min(r->npages - done, ZCX_PIN_CHUNK),
					gup_flags, r->pages + done);
		if (n <= 0) {
			unpin_user_pages(r->pages, done);
			return n ? n : -EFAULT;
		}
		done += n;
	}
	return 0;
}

static void zcx_mr_fill(struct zcx_mr_reg *reg, const struct zcx_region *r, u32 result)
{
	reg->handle = zcx_region_handle(r);
	reg->gen = r->gen;
	reg->region_start = r->node.start;
	reg->region_length = r->node.last - r->node.start + 1;
	reg->slot = r->slot;
	reg->result = result;
}

/*
 * The page-aligned [*start, *end) of a user range: EINVAL for an empty or
 * wrapping one (the rounded end too), EFAULT beyond the user address space.
 */
int zcx_user_range(u64 addr, u64 len, unsigned long *start, unsigned long *end)
{
	if (!len || addr + len < addr || PAGE_ALIGN(addr + len) < addr + len)
		return -EINVAL;
	if (!access_ok(u64_to_user_ptr(addr), len))
		return -EFAULT;
	*start = addr & PAGE_MASK;
	*end = PAGE_ALIGN(addr + len);
	return 0;
}

/* A NEW region over [start, end), holding nothing yet. */
static struct zcx_region *zcx_region_alloc(struct zcx_ctx *ctx, unsigned long start,
					   unsigned long end)
{
	struct zcx_region *r = kzalloc(sizeof(*r), GFP_KERNEL_ACCOUNT);

	if (!r)
		return NULL;
	r->ctx = ctx;
	r->node.start = start;
	r->node.last = end - 1;
	r->state = ZCX_REGION_NEW;
	INIT_LIST_HEAD(&r->link);
	INIT_LIST_HEAD(&r->watches);
	return r;
}

/* NEW to LIVE: hand out a generation, become visible.  ctx->lock held. */
static int zcx_region_publish_locked(struct zcx_ctx *ctx, struct zcx_region *r)
{
	lockdep_assert_held(&ctx->lock);
	if (ctx->next_gen >= ZCX_GEN_LIMIT)
		return -EOVERFLOW;
	r->gen = ctx->next_gen;
	ctx->next_gen += 2;
	r->users = 1;
	r->state = ZCX_REGION_LIVE;
	if (!r->monitor)
		interval_tree_insert(&r->node, &ctx->regions);
	/* Pairs with userspace's acquire load: valid once it reads @gen. */
	smp_store_release(&ctx->gens[r->slot], r->gen);
	return 0;
}

/*
 * Busy references: a transfer copying to or from a region's pages holds
 * one, which keeps the pages pinned (though not the region valid) and the
 * context alive until zcx_region_busy_put().
 */
void zcx_region_busy_get_locked(struct zcx_region *r)
{
	lockdep_assert_held(&r->ctx->lock);
	r->busy++;
	atomic_inc(&r->ctx->busy);
}

/*
 * Drop @r's busy reference, not yet the context's: true if the reaper is
 * then due.  ctx->lock held; @r may be freed once it is released.
 */
bool zcx_region_busy_drop_locked(struct zcx_region *r)
{
	lockdep_assert_held(&r->ctx->lock);
	return !--r->busy && r->state == ZCX_REGION_DEAD;
}

/* The rest of a busy put, after zcx_region_busy_drop_locked(). */
void zcx_ctx_busy_put_reap(struct zcx_ctx *ctx, bool reap)
{
	/* Before the count drops: the context lives until it is zero. */
	if (reap)
		schedule_work(&ctx->reap_work);
	zcx_ctx_busy_put(ctx);
}

void zcx_region_busy_put(struct zcx_region *r)
{
	struct zcx_ctx *ctx = r->ctx;
	bool reap;

	spin_lock(&ctx->lock);
	reap = zcx_region_busy_drop_locked(r);
	spin_unlock(&ctx->lock);
	zcx_ctx_busy_put_reap(ctx, reap);
}

/*
 * Pin a new region.  The notifier goes in first and the pin runs inside a
 * read_begin/read_retry section, so a change to the range at any moment
 * during the VMA check or the pin makes us start over instead of caching
 * pages that are already gone.
 *
 * With @busy, the caller is a transfer: the new region starts unused (on
 * the LRU) and *@busy gets a busy reference to it, instead of the handle
 * reference a registration gets.
 */
static int zcx_region_create(struct zcx_ctx *ctx, struct zcx_mr_reg *reg,
			     unsigned long start, unsigned long end,
			     struct zcx_region **busy)
{
	unsigned long npages = (end - start) >> PAGE_SHIFT;
	struct zcx_region *r;
	unsigned long seq;
	int ret, attempt;

	if (npages > ZCX_MAX_REGION_PAGES)
		return -ENOMEM;
	/*
	 * A range that cannot be registered fails before anything is
	 * reserved or evicted: bad input changes nothing.  (Checked again
	 * under read_begin below, where it counts.)
	 */
	ret = zcx_check_vmas(ctx->mm, start, end, reg->access);
	if (ret)
		return ret;
	r = zcx_region_alloc(ctx, start, end);
	if (!r)
		return -ENOMEM;
	r->npages = npages;
	r->access = reg->access;

	ret = zcx_reserve(ctx, r);
	if (ret)
		goto err_free;
	ret = zcx_pin_charge(ctx, npages);
	if (ret)
		goto err_unreserve;
	r->pages = kvmalloc_array(npages, sizeof(*r->pages), GFP_KERNEL_ACCOUNT);
	if (!r->pages) {
		ret = -ENOMEM;
		goto err_uncharge;
	}
	ret = mmu_interval_notifier_insert(&r->notifier, ctx->mm, start, end - start,
					   &zcx_region_ops);
	if (ret)
		goto err_uncharge;

	for (attempt = 0; ; attempt++) {
		if (attempt == ZCX_PIN_RETRIES) {
			ret = -EAGAIN;
			goto err_remove;
		}
		seq = mmu_interval_read_begin(&r->notifier);
		ret = zcx_check_vmas(ctx->mm, start, end, r->access);
		if (ret)
			goto err_remove;
		ret = zcx_pin(r);
		if (ret)
			goto err_remove;
		spin_lock(&ctx->lock);
		if (!mmu_interval_read_retry(&r->notifier, seq))
			break;
		spin_unlock(&ctx->lock);
		unpin_user_pages(r->pages, npages);
	}

	/* ctx->lock held. */
	ret = zcx_region_publish_locked(ctx, r);
	if (ret) {
		spin_unlock(&ctx->lock);
		unpin_user_pages(r->pages, npages);
		goto err_remove;
	}
	zcx_counter_add(ctx, misses, 1);
	trace_zcx_reg_miss(r);
	zcx_counter_add(ctx, pinned_pages, npages);
	atomic64_add(npages, &zcx_stat_pinned_pages);
	zcx_mr_fill(reg, r, ZCX_MR_MISS);
	if (busy) {
		r->users = 0;
		list_add_tail(&r->link, &ctx->lru);
		zcx_region_busy_get_locked(r);
		*busy = r;
	}
	spin_unlock(&ctx->lock);
	return 0;

err_remove:
	mmu_interval_notifier_remove(&r->notifier);
err_uncharge:
	zcx_pin_uncharge(ctx, npages);
err_unreserve:
	zcx_unreserve(ctx, r);
err_free:
	zcx_region_free(r);
	return ret;
}

static struct zcx_region *zcx_lookup_locked(struct zcx_ctx *ctx, unsigned long start,
					    unsigned long last, u32 access)
{
	struct interval_tree_node *node;
	struct zcx_region *r;

	for (node = interval_tree_iter_first(&ctx->regions, start, last); node;
	     node = interval_tree_iter_next(node, start, last)) {
		r = container_of(node, struct zcx_region, node);
		if (node->start <= start && node->last >= last &&
		    (r->access & access) == access)
			return r;
	}
	return NULL;
}

int zcx_mr_register(struct zcx_ctx *ctx, struct zcx_mr_reg *reg)
{
	unsigned long start, end;
	struct zcx_region *r;
	int ret;

	if (reg->flags || !reg->access || (reg->access & ~ZCX_ACCESS_ALL))
		return -EINVAL;
	ret = zcx_user_range(reg->addr, reg->length, &start, &end);
	if (ret)
		return ret;

	spin_lock(&ctx->lock);
	r = zcx_lookup_locked(ctx, start, end - 1, reg->access);
	if (r && r->users == UINT_MAX) {
		spin_unlock(&ctx->lock);
		return -EOVERFLOW;
	}
	if (r) {
		if (!r->users++)
			list_del_init(&r->link);	/* off the LRU */
		zcx_counter_add(ctx, hits, 1);
		trace_zcx_reg_hit(r);
		zcx_mr_fill(reg, r, ZCX_MR_HIT);
		spin_unlock(&ctx->lock);
		return 0;
	}
	spin_unlock(&ctx->lock);
	return zcx_region_create(ctx, reg, start, end, NULL);
}

int zcx_mr_deregister(struct zcx_ctx *ctx, u64 handle)
{
	u32 slot = ZCX_HANDLE_SLOT(handle);
	struct zcx_region *r = NULL;
	bool unused = false, reap = false;

	spin_lock(&ctx->lock);
	if (slot < ctx->nslots)
		r = ctx->slots[slot];
	if (!r || r->state == ZCX_REGION_NEW || r->gen != ZCX_HANDLE_GEN(handle) ||
	    !r->users) {
		spin_unlock(&ctx->lock);
		return -ENOENT;
	}
	if (!--r->users) {
		if (r->state == ZCX_REGION_LIVE && r->monitor) {
			/* Removed for good: the reaper below frees it. */
			zcx_region_kill_locked(r);
			reap = true;
		} else if (r->state == ZCX_REGION_LIVE) {
			list_add_tail(&r->link, &ctx->lru);
		} else if (r->unpinned) {
			zcx_slot_release_locked(ctx, r);
			unused = true;
		}
	}
	spin_unlock(&ctx->lock);
	if (unused)
		zcx_region_free(r);
	if (reap)
		zcx_reap(ctx);
	return 0;
}

/* The LIVE region a handle names if it covers [start, last] with @access. */
struct zcx_region *zcx_handle_lookup_locked(struct zcx_ctx *ctx, u64 handle,
						   unsigned long start, unsigned long last,
						   u32 access)
{
	u32 slot = ZCX_HANDLE_SLOT(handle);
	struct zcx_region *r;

	if (slot >= ctx->nslots)
		return NULL;
	r = ctx->slots[slot];
	if (!r || r->monitor || r->state != ZCX_REGION_LIVE || r->gen != ZCX_HANDLE_GEN(handle) ||
	    r->node.start > start || r->node.last < last || (r->access & access) != access)
		return NULL;
	return r;
}

/*
 * A busy reference on a valid region covering [addr, addr + len) with
 * @access, for a transfer: the one @handle names if it still fits, else
 * one from the cache, pinning on a miss.  Runs in ctx->mm.
 */
int zcx_region_acquire(struct zcx_ctx *ctx, u64 addr, u64 len, u32 access, u64 handle,
		       struct zcx_region **out)
{
	struct zcx_mr_reg reg = { .addr = addr, .length = len, .access = access };
	unsigned long start, end;
	struct zcx_region *r;
	int ret;

	ret = zcx_user_range(addr, len, &start, &end);
	if (ret)
		return ret;
	spin_lock(&ctx->lock);
	r = handle ? zcx_handle_lookup_locked(ctx, handle, start, end - 1, access) : NULL;
	if (!r)
		r = zcx_lookup_locked(ctx, start, end - 1, access);
	if (r) {
		zcx_region_busy_get_locked(r);
		zcx_counter_add(ctx, hits, 1);
		trace_zcx_reg_hit(r);
		spin_unlock(&ctx->lock);
		*out = r;
		return 0;
	}
	spin_unlock(&ctx->lock);
	return zcx_region_create(ctx, &reg, start, end, out);
}

/* Watch [start, end) without pinning: a region with no pages. */
int zcx_mon_add(struct zcx_ctx *ctx, struct zcx_mon_add *mon)
{
	unsigned long start, end;
	struct zcx_region *r;
	int ret;

	if (mon->flags)
		return -EINVAL;
	ret = zcx_user_range(mon->addr, mon->length, &start, &end);
	if (ret)
		return ret;
	r = zcx_region_alloc(ctx, start, end);
	if (!r)
		return -ENOMEM;
	r->monitor = true;
	r->cookie = mon->cookie;

	ret = zcx_reserve(ctx, r);
	if (ret)
		goto err_free;
	ret = mmu_interval_notifier_insert(&r->notifier, ctx->mm, start, end - start,
					   &zcx_region_ops);
	if (ret)
		goto err_unreserve;

	spin_lock(&ctx->lock);
	ret = zcx_region_publish_locked(ctx, r);
	if (ret) {
		spin_unlock(&ctx->lock);
		mmu_interval_notifier_remove(&r->notifier);
		goto err_unreserve;
	}
	mon->slot = r->slot;
	mon->gen = r->gen;
	mon->handle = zcx_region_handle(r);
	spin_unlock(&ctx->lock);
	return 0;

err_unreserve:
	zcx_unreserve(ctx, r);
err_free:
	zcx_region_free(r);
	return ret;
}

/*
 * Evict every unused region: stale at once, unpinned by the reaper in the
 * background.  Does not sleep, so netlink may call it for any listed
 * context.
 */
unsigned int zcx_mr_evict_unused(struct zcx_ctx *ctx)
{
	struct zcx_region *r, *tmp;
	unsigned int flushed = 0;

	spin_lock(&ctx->lock);
	list_for_each_entry_safe(r, tmp, &ctx->lru, link) {
		zcx_region_evict_locked(r);
		flushed++;
	}
	if (flushed)
		schedule_work(&ctx->reap_work);
	spin_unlock(&ctx->lock);
	return flushed;
}

/*
 * Evict every unused region and wait until its pages are unpinned (for
 * those a backend's registration holds, as long as zcx_reap_watched()).
 */
unsigned int zcx_mr_flush(struct zcx_ctx *ctx)
{
	unsigned int flushed = zcx_mr_evict_unused(ctx);

	zcx_reap_watched(ctx);
	return flushed;
}

int zcx_mr_set_limits(struct zcx_ctx *ctx, struct zcx_limits *limits)
{
	bool evicted;

	if (limits->flags & ~(ZCX_LIMIT_SET_ENTRIES | ZCX_LIMIT_SET_BYTES))
		return -EINVAL;
	if ((limits->flags & ZCX_LIMIT_SET_ENTRIES) &&
	    (!limits->cache_entries || limits->cache_entries > ctx->nslots))
		return -EINVAL;

	spin_lock(&ctx->lock);
	if (limits->flags & ZCX_LIMIT_SET_ENTRIES)
		ctx->max_entries = limits->cache_entries;
	if (limits->flags & ZCX_LIMIT_SET_BYTES)
		ctx->max_bytes = limits->cache_bytes;
	evicted = zcx_evict_locked(ctx, 0, 0);
	limits->cache_entries = ctx->max_entries;
	limits->cache_bytes = ctx->max_bytes;
	spin_unlock(&ctx->lock);
	if (evicted)
		zcx_reap(ctx);
	return 0;
}

/*
 * The context is going away (release(), no call in flight): unpin all,
 * free all.  Handles userspace still holds die with the descriptor.
 */
void zcx_regions_destroy(struct zcx_ctx *ctx)
{
	struct zcx_region *r;
	u32 slot;

	spin_lock(&ctx->lock);
	for (slot = 0; slot < ctx->nslots; slot++) {
		r = ctx->slots[slot];
		if (r && r->state == ZCX_REGION_LIVE)
			zcx_region_kill_locked(r);
	}
	spin_unlock(&ctx->lock);
	zcx_reap(ctx);
	/* Every notifier is gone: nothing can queue the worker again. */
	cancel_work_sync(&ctx->reap_work);

	for (slot = 0; slot < ctx->nslots; slot++) {
		spin_lock(&ctx->lock);
		r = ctx->slots[slot];
		if (r)
			zcx_slot_release_locked(ctx, r);
		spin_unlock(&ctx->lock);
		if (r)
			zcx_region_free(r);
	}
}
