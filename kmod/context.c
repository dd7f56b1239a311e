// SPDX-License-Identifier: GPL-2.0-only
/*
 * context.c - one context per open() of /dev/zcx, bound to the opener's mm.
 */
#include <linux/errno.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "zcx.h"

static void zcx_ctx_free(struct zcx_ctx *ctx)
{
	zcx_status_free(ctx);
	kvfree(ctx->free_slots);
	kvfree(ctx->slots);
	mmdrop(ctx->mm);
	kfree(ctx);
}

struct zcx_ctx *zcx_ctx_create(void)
{
	struct zcx_ctx *ctx;
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
	INIT_WORK(&ctx->reap_work, zcx_reap_work);
	atomic_set(&ctx->busy, 0);
	mutex_init(&ctx->ep_mutex);
	init_waitqueue_head(&ctx->poll_wait);
	spin_lock_init(&ctx->expose_lock);
	hash_init(ctx->exposed);
	ctx->nslots = zcx_cache_entries;
	ctx->max_entries = zcx_cache_entries;
	ctx->max_bytes = zcx_cache_bytes;
	ctx->next_gen = 2;

	ctx->slots = kvcalloc(ctx->nslots, sizeof(*ctx->slots), GFP_KERNEL_ACCOUNT);
	ctx->free_slots = kvmalloc_array(ctx->nslots, sizeof(*ctx->free_slots),
					 GFP_KERNEL_ACCOUNT);
	if (!ctx->slots || !ctx->free_slots || zcx_status_init(ctx)) {
		zcx_ctx_free(ctx);
		return ERR_PTR(-ENOMEM);
	}
	/* Lowest slot first: the stack pops from the end. */
	for (i = 0; i < ctx->nslots; i++)
		ctx->free_slots[i] = ctx->nslots - 1 - i;
	ctx->nfree = ctx->nslots;
	atomic64_inc(&zcx_stat_contexts);
	return ctx;
}

void zcx_ctx_destroy(struct zcx_ctx *ctx)
{
	/* Transfers first: they hold pages of the regions busy. */
	zcx_eps_destroy(ctx);
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
