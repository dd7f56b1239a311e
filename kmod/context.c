// SPDX-License-Identifier: GPL-2.0-only
/*
 * context.c - one context per open() of /dev/zcx, bound to the opener's mm.
 */
#include <linux/cred.h>
#include <linux/errno.h>
#include <linux/mmu_notifier.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "zcx.h"

/*
 * Every context, in order of creation, for netlink (who uses zcx, and
 * how much); and the counters of the contexts already closed, so that
 * module-wide totals keep counting what they did.
 */
LIST_HEAD(zcx_ctx_list);
DEFINE_MUTEX(zcx_ctx_list_mutex);
static u64 zcx_ctx_last_id;
static struct zcx_stats zcx_closed;	/* under zcx_ctx_list_mutex */

/*
 * The contexts of one address space, and the notifier that tells them
 * when it goes: one for all of them (mmu_notifier_get()), so that an
 * open() takes all the mm's locks only when none of its contexts is open
 * and no close() waits for SRCU.  @lock, a leaf, protects @contexts,
 * newest first.
 */
struct zcx_mm_contexts {
	struct mmu_notifier notifier;
	spinlock_t lock;
	struct list_head contexts;
};

/*
 * The address space is gone (the process exited or exec'd) while its files
 * stay open, inherited by a child across fork(), which may not use them
 * (zcx_ctx_check_caller()): take the endpoints down now, as close() would,
 * rather than leave their partners waiting until that child exits.  Not
 * in the callback itself, which runs wherever the mm's last user lets go,
 * maybe a peer's transfer holding locks of its own.
 */
static void zcx_ctx_exit_work(struct work_struct *work)
{
	zcx_eps_destroy(container_of(work, struct zcx_ctx, exit_work));
}

static void zcx_mm_release(struct mmu_notifier *mn, struct mm_struct *mm)
{
	struct zcx_mm_contexts *mc = container_of(mn, struct zcx_mm_contexts, notifier);
	struct zcx_ctx *ctx;

	spin_lock(&mc->lock);
	list_for_each_entry(ctx, &mc->contexts, mm_entry)
		queue_work(system_unbound_wq, &ctx->exit_work);
	spin_unlock(&mc->lock);
}

static struct mmu_notifier *zcx_mm_alloc(struct mm_struct *mm)
{
	struct zcx_mm_contexts *mc = kzalloc(sizeof(*mc), GFP_KERNEL_ACCOUNT);

	if (!mc)
		return ERR_PTR(-ENOMEM);
	spin_lock_init(&mc->lock);
	INIT_LIST_HEAD(&mc->contexts);
	return &mc->notifier;
}

/*
 * After the last context's mmu_notifier_put() and an SRCU grace period,
 * or at once if mmu_notifier_get() failed to register it.
 */
static void zcx_mm_free(struct mmu_notifier *mn)
{
	kfree(container_of(mn, struct zcx_mm_contexts, notifier));
}

static const struct mmu_notifier_ops zcx_mm_ops = {
	.release = zcx_mm_release,
	.alloc_notifier = zcx_mm_alloc,
	.free_notifier = zcx_mm_free,
};

/*
 * Joins the contexts of the caller's mm.  When there are none, the
 * notifier's registration takes all the mm's locks, giving up (EINTR) on
 * any signal, even one handled: then open() starts again once the
 * handler has run.
 */
static int zcx_ctx_watch_mm(struct zcx_ctx *ctx)
{
	struct mmu_notifier *mn = mmu_notifier_get(&zcx_mm_ops, ctx->mm);

	if (IS_ERR(mn))
		return PTR_ERR(mn) == -EINTR ? -ERESTARTNOINTR : PTR_ERR(mn);
	ctx->mm_contexts = container_of(mn, struct zcx_mm_contexts, notifier);
	spin_lock(&ctx->mm_contexts->lock);
	list_add(&ctx->mm_entry, &ctx->mm_contexts->contexts);
	spin_unlock(&ctx->mm_contexts->lock);
	return 0;
}

static void zcx_ctx_unwatch_mm(struct zcx_ctx *ctx)
{
	spin_lock(&ctx->mm_contexts->lock);
	list_del(&ctx->mm_entry);
	spin_unlock(&ctx->mm_contexts->lock);
	/* Off the list, so release() queues it no more. */
	cancel_work_sync(&ctx->exit_work);
	mmu_notifier_put(&ctx->mm_contexts->notifier);
}

/* For the module's exit: the last zcx_mm_free() has run, as the kernel promises. */
void zcx_ctx_global_exit(void)
{
	mmu_notifier_synchronize();
}

static void zcx_ctx_free(struct zcx_ctx *ctx)
{
	put_pid(ctx->pid);
	zcx_status_free(ctx);
	kvfree(ctx->free_slots);
	kvfree(ctx->slots);
	mmdrop(ctx->mm);
	kfree(ctx);
}

struct zcx_ctx *zcx_ctx_create(void)
{
	unsigned int entries = READ_ONCE(zcx_cache_entries);
	struct zcx_ctx *ctx;
	int ret;
	u32 i;

	/* Kernel threads have no user address space to work on. */
	if (!current->mm)
		return ERR_PTR(-EINVAL);

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL_ACCOUNT);
	if (!ctx)
		return ERR_PTR(-ENOMEM);
	/*
	 * mmgrab() keeps the mm_struct itself alive (not the address space),
	 * so the identity check and the pinned_vm accounting stay valid until
	 * release(), even after the process exited.
	 */
	mmgrab(current->mm);
	ctx->mm = current->mm;
	spin_lock_init(&ctx->lock);
	ctx->regions = RB_ROOT_CACHED;
	INIT_LIST_HEAD(&ctx->lru);
	INIT_LIST_HEAD(&ctx->dead);
	mutex_init(&ctx->read_mutex);
	mutex_init(&ctx->reap_mutex);
	init_waitqueue_head(&ctx->event_wait);
	init_waitqueue_head(&ctx->watch_wait);
	INIT_WORK(&ctx->reap_work, zcx_reap_work);
	INIT_WORK(&ctx->exit_work, zcx_ctx_exit_work);
	atomic_set(&ctx->busy, 0);
	mutex_init(&ctx->ep_mutex);
	init_waitqueue_head(&ctx->poll_wait);
	spin_lock_init(&ctx->expose_lock);
	hash_init(ctx->exposed);
	spin_lock_init(&ctx->stats_lock);
	INIT_LIST_HEAD(&ctx->counted);
	ctx->nslots = entries;
	ctx->max_entries = entries;
	ctx->max_bytes = READ_ONCE(zcx_cache_bytes);
	ctx->pid = get_pid(task_tgid(current));
	ctx->euid = current_euid();
	get_task_comm(ctx->comm, current);
	ctx->next_gen = 2;

	ctx->slots = kvcalloc(ctx->nslots, sizeof(*ctx->slots), GFP_KERNEL_ACCOUNT);
	ctx->free_slots = kvmalloc_array(ctx->nslots, sizeof(*ctx->free_slots),
					 GFP_KERNEL_ACCOUNT);
	if (!ctx->slots || !ctx->free_slots || zcx_status_init(ctx)) {
		zcx_ctx_free(ctx);
		return ERR_PTR(-ENOMEM);
	}
	ret = zcx_ctx_watch_mm(ctx);
	if (ret) {
		zcx_ctx_free(ctx);
		return ERR_PTR(ret);
	}
	/* Lowest slot first: the stack pops from the end. */
	for (i = 0; i < ctx->nslots; i++)
		ctx->free_slots[i] = ctx->nslots - 1 - i;
	ctx->nfree = ctx->nslots;
	atomic64_inc(&zcx_stat_contexts);

	mutex_lock(&zcx_ctx_list_mutex);
	ctx->id = ++zcx_ctx_last_id;
	list_add_tail(&ctx->list, &zcx_ctx_list);
	mutex_unlock(&zcx_ctx_list_mutex);
	return ctx;
}

/* Counters, not gauges: what a closed context adds to the totals. */
static void zcx_stats_add_counters(struct zcx_stats *sum, const struct zcx_stats *s)
{
	int i;

	sum->hits += s->hits;
	sum->misses += s->misses;
	sum->invalidations += s->invalidations;
	for (i = 0; i < ZCX_EVENT_CAUSES; i++)
		sum->inval[i] += s->inval[i];
	sum->evictions += s->evictions;
	sum->events += s->events;
	sum->dev_regs_total += s->dev_regs_total;
	sum->dev_regs_posted += s->dev_regs_posted;
	zcx_xfer_stats_add(&sum->xfer, &s->xfer);
}

void zcx_ctx_destroy(struct zcx_ctx *ctx)
{
	struct zcx_stats last = {};

	/* The mm's release() may have queued exit_work: that, or this, does the job. */
	zcx_ctx_unwatch_mm(ctx);
	/* Transfers first: they hold pages of the regions busy. */
	zcx_eps_destroy(ctx);
	/*
	 * Off the list before the regions go: netlink may flush a listed
	 * context, which queues its reaper.
	 */
	mutex_lock(&zcx_ctx_list_mutex);
	zcx_ctx_stats_add(ctx, &last);
	zcx_stats_add_counters(&zcx_closed, &last);
	list_del(&ctx->list);
	mutex_unlock(&zcx_ctx_list_mutex);
	zcx_regions_destroy(ctx);
	atomic64_dec(&zcx_stat_contexts);
	zcx_ctx_free(ctx);
}

/*
 * A context acts on the opener's address space only.  After fork() the
 * child shares the file but not the mm; failing with EIO is clearer than
 * silently working on memory the caller does not own.
 */
int zcx_ctx_check_caller(const struct zcx_ctx *ctx)
{
	return current->mm == ctx->mm ? 0 : -EIO;
}

/*
 * Add the numbers of @ctx to @sum without sleeping: no lock a process can
 * hold for long is taken.  The caller keeps @ctx alive
 * (zcx_ctx_list_mutex, or it is the one destroying it).
 */
void zcx_ctx_stats_add(struct zcx_ctx *ctx, struct zcx_stats *sum)
{
	const struct zcx_counters *c = &ctx->status->counters;
	int i;

	zcx_eps_stats_add(ctx, sum);
	spin_lock(&ctx->lock);
	sum->hits += c->hits;
	sum->misses += c->misses;
	sum->invalidations += c->invalidations;
	for (i = 0; i < ZCX_EVENT_CAUSES; i++)
		sum->inval[i] += ctx->inval[i];
	sum->evictions += c->evictions;
	sum->events += c->events;
	sum->regions += c->regions;
	sum->pinned_pages += c->pinned_pages;
	sum->dev_regs += c->dev_regs;
	sum->dev_regs_total += c->dev_regs_total;
	sum->dev_regs_posted += c->dev_regs_posted;
	spin_unlock(&ctx->lock);
}

/* Add the counters of every context closed so far to @sum. */
void zcx_ctx_closed_stats(struct zcx_stats *sum)
{
	lockdep_assert_held(&zcx_ctx_list_mutex);
	zcx_stats_add_counters(sum, &zcx_closed);
}
