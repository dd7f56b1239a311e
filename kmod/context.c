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
 * The address space is gone (the process exited or exec'd) while its file
 * stays open, inherited by a child across fork(), which may not use it
 * (zcx_ctx_check_caller()): take the endpoints down now, as close() would,
 * rather than leave their partners waiting until that child exits.  Not
 * in the callback itself, which runs wherever the mm's last user lets go,
 * maybe a peer's transfer holding locks of its own.
 */
static void zcx_ctx_exit_work(struct work_struct *work)
{
	zcx_eps_destroy(container_of(work, struct zcx_ctx, exit_work));
}

static void zcx_ctx_mm_release(struct mmu_notifier *mn, struct mm_struct *mm)
{
	struct zcx_ctx *ctx = container_of(mn, struct zcx_ctx, mm_watch);

	queue_work(system_unbound_wq, &ctx->exit_work);
}

static const struct mmu_notifier_ops zcx_ctx_mm_ops = {
	.release = zcx_ctx_mm_release,
};

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
	ctx->mm_watch.ops = &zcx_ctx_mm_ops;
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
	/*
	 * It takes all the mm's locks, giving up (EINTR) on any signal, even
	 * one handled: then open() starts again once the handler has run.
	 */
	ret = mmu_notifier_register(&ctx->mm_watch, ctx->mm);
	if (ret) {
		zcx_ctx_free(ctx);
		return ERR_PTR(ret == -EINTR ? -ERESTARTNOINTR : ret);
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
	zcx_xfer_stats_add(&sum->xfer, &s->xfer);
}

void zcx_ctx_destroy(struct zcx_ctx *ctx)
{
	struct zcx_stats last = {};

	/* Its release() may queue exit_work: that, or this, does the job. */
	mmu_notifier_unregister(&ctx->mm_watch, ctx->mm);
	cancel_work_sync(&ctx->exit_work);
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
	spin_unlock(&ctx->lock);
}

/* Add the counters of every context closed so far to @sum. */
void zcx_ctx_closed_stats(struct zcx_stats *sum)
{
	lockdep_assert_held(&zcx_ctx_list_mutex);
	zcx_stats_add_counters(sum, &zcx_closed);
}
