// SPDX-License-Identifier: GPL-2.0-only
/*
 * barrier.c - barriers between the endpoints of a node.
 *
 * Chosen for latency on a node, where every waiter must be woken anyway:
 * a central counter.  Each arrival is one increment under a spinlock; the
 * last one completes every waiting arrival, so each process is woken
 * exactly once per round and nobody relays messages (a dissemination
 * barrier would need log2(N) wake-ups per process).  Each member counts
 * its own arrivals, so a member that arrives again (a second non-blocking
 * barrier, say) before the round completed waits for the next round
 * instead of counting twice in this one.
 */
#include <linux/cred.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/xarray.h>
#include <crypto/algapi.h>

#include "zcx.h"

/**
 * struct zcx_barrier - a barrier of @nprocs endpoints.
 * @ref:	held by the table's lookups and by each member endpoint.
 * @rcu:	frees it after lookups.
 * @id:		number in the node-wide table.
 * @key:	the address's secret.
 * @owner:	euid of the creator; only that user may join.
 * @lock:	protects the fields below.
 * @nprocs:	members.
 * @joined:	members so far.
 * @round:	the round under way.
 * @arrived:	arrivals in it ...
 * @waiters:	... waiting for it (struct zcx_op).
 * @early:	arrivals for later rounds (round number in zcx_op.tag).
 * @broken:	a member left: every arrival fails.
 */
struct zcx_barrier {
	struct kref ref;
	struct rcu_head rcu;
	u32 id;
	u64 key;
	kuid_t owner;
	spinlock_t lock;		/* see the lock order in zcx.h */
	u32 nprocs;
	u32 joined;
	u64 round;
	u32 arrived;
	struct list_head waiters;
	struct list_head early;
	bool broken;
};

static DEFINE_XARRAY_ALLOC1(zcx_bar_table);

static void zcx_bar_release(struct kref *ref)
{
	struct zcx_barrier *bar = container_of(ref, struct zcx_barrier, ref);

	xa_erase(&zcx_bar_table, bar->id);
	kfree_rcu(bar, rcu);
}

static void zcx_bar_put(struct zcx_barrier *bar)
{
	kref_put(&bar->ref, zcx_bar_release);
}

/* Make @bar member number *@idx of endpoint @idx_ep; takes our reference. */
static int zcx_bar_attach(struct zcx_ctx *ctx, u32 ep_idx, struct zcx_barrier *bar, u32 *idx)
{
	struct zcx_ep *ep;
	int ret = -ENOENT;
	u32 i;

	mutex_lock(&ctx->ep_mutex);
	ep = rcu_dereference_protected(ep_idx < ZCX_MAX_ENDPOINTS ? ctx->eps[ep_idx] : NULL,
				       lockdep_is_held(&ctx->ep_mutex));
	if (ep) {
		ret = -ENOSPC;
		for (i = 0; i < ZCX_MAX_BARRIERS; i++) {
			if (!ep->bars[i]) {
				mutex_lock(&ep->sq_mutex);
				ep->bar_rounds[i] = bar->round;
				mutex_unlock(&ep->sq_mutex);
				/* Initialised before readers under sq_mutex see it. */
				smp_store_release(&ep->bars[i], bar);
				*idx = i;
				ret = 0;
				break;
			}
		}
	}
	mutex_unlock(&ctx->ep_mutex);
	return ret;
}

/* Undo a join that could not be attached. */
static void zcx_bar_unjoin(struct zcx_barrier *bar)
{
	spin_lock(&bar->lock);
	bar->joined--;
	spin_unlock(&bar->lock);
	zcx_bar_put(bar);
}

int zcx_bar_create(struct zcx_ctx *ctx, struct zcx_bar_create *arg)
{
	struct zcx_barrier *bar;
	u32 id;
	int ret;

	if (arg->flags || !arg->nprocs || arg->nprocs > ZCX_MAX_BARRIER_PROCS)
		return -EINVAL;
	bar = kzalloc(sizeof(*bar), GFP_KERNEL_ACCOUNT);
	if (!bar)
		return -ENOMEM;
	kref_init(&bar->ref);
	spin_lock_init(&bar->lock);
	INIT_LIST_HEAD(&bar->waiters);
	INIT_LIST_HEAD(&bar->early);
	bar->key = get_random_u64();
	bar->owner = current_euid();
	bar->nprocs = arg->nprocs;
	bar->joined = 1;
	ret = xa_alloc(&zcx_bar_table, &id, NULL, xa_limit_32b, GFP_KERNEL);
	if (ret) {
		kfree(bar);
		return ret;
	}
	bar->id = id;
	/* Visible to joiners only once whole. */
	xa_store(&zcx_bar_table, id, bar, GFP_KERNEL);

	/* Before it is attached: a concurrent destroy may free it then. */
	memset(&arg->addr, 0, sizeof(arg->addr));
	arg->addr.kind = ZCX_ADDR_BARRIER;
	arg->addr.id = bar->id;
	arg->addr.key = bar->key;
	ret = zcx_bar_attach(ctx, arg->ep, bar, &arg->bar);
	if (ret)
		zcx_bar_put(bar);
	return ret;
}

int zcx_bar_join(struct zcx_ctx *ctx, struct zcx_bar_join *arg)
{
	struct zcx_barrier *bar;
	int ret;

	if (arg->flags || !zcx_addr_valid(&arg->addr, ZCX_ADDR_BARRIER))
		return -EINVAL;
	rcu_read_lock();
	bar = xa_load(&zcx_bar_table, arg->addr.id);
	if (bar && !kref_get_unless_zero(&bar->ref))
		bar = NULL;
	rcu_read_unlock();
	if (!bar || crypto_memneq(&bar->key, &arg->addr.key, sizeof(bar->key))) {
		ret = -ECONNREFUSED;
		goto out_put;
	}
	ret = -EACCES;
	if (!uid_eq(bar->owner, current_euid()))
		goto out_put;

	spin_lock(&bar->lock);
	ret = bar->broken ? -ECONNRESET : bar->joined == bar->nprocs ? -EBUSY : 0;
	if (!ret)
		bar->joined++;
	spin_unlock(&bar->lock);
	if (ret)
		goto out_put;
	arg->nprocs = bar->nprocs;
	ret = zcx_bar_attach(ctx, arg->ep, bar, &arg->bar);
	if (ret)
		zcx_bar_unjoin(bar);
	return ret;

out_put:
	if (bar)
		zcx_bar_put(bar);
	return ret;
}

/*
 * Complete the rounds that are full, starting with the one under way, and
 * move the early arrivals of each next round in.  bar->lock held.
 */
static void zcx_bar_advance_locked(struct zcx_barrier *bar, struct list_head *done)
{
	struct zcx_op *it, *tmp;

	while (bar->arrived == bar->nprocs) {
		list_splice_tail_init(&bar->waiters, done);
		bar->arrived = 0;
		bar->round++;
		list_for_each_entry_safe(it, tmp, &bar->early, link) {
			if (it->tag == bar->round) {
				list_move_tail(&it->link, &bar->waiters);
				bar->arrived++;
			}
		}
	}
}

/* Arrive; the round's last arrival completes everybody's.  sq_mutex held. */
void zcx_op_barrier(struct zcx_op *op, u32 idx)
{
	struct zcx_barrier *bar = NULL;
	LIST_HEAD(done);

	if (idx < ZCX_MAX_BARRIERS)
		/* Pairs with the release in zcx_bar_attach(). */
		bar = smp_load_acquire(&op->ep->bars[idx]);
	if (!bar) {
		zcx_op_complete(op, -EINVAL, 0, 0);
		return;
	}
	/* This member's arrival number is the round it belongs to. */
	op->tag = op->ep->bar_rounds[idx]++;
	spin_lock(&bar->lock);
	if (bar->broken) {
		list_add_tail(&op->link, &done);
		spin_unlock(&bar->lock);
		zcx_ops_complete(&done, -ECONNRESET);
		return;
	}
	if (op->tag == bar->round) {
		list_add_tail(&op->link, &bar->waiters);
		bar->arrived++;
		zcx_bar_advance_locked(bar, &done);
	} else {
		list_add_tail(&op->link, &bar->early);
	}
	spin_unlock(&bar->lock);
	zcx_ops_complete(&done, 0);
}

/* Leave a barrier: it breaks, and what waits on it fails. */
static void zcx_bar_leave(struct zcx_barrier *bar)
{
	LIST_HEAD(done);

	spin_lock(&bar->lock);
	bar->broken = true;
	list_splice_init(&bar->waiters, &done);
	list_splice_init(&bar->early, &done);
	spin_unlock(&bar->lock);
	zcx_ops_complete(&done, -ECONNRESET);
	zcx_bar_put(bar);
}

/* The endpoint is going away (ctx->ep_mutex held): its barriers break. */
void zcx_ep_leave_barriers(struct zcx_ep *ep)
{
	struct zcx_barrier *bar;
	u32 i;

	for (i = 0; i < ZCX_MAX_BARRIERS; i++) {
		bar = ep->bars[i];
		if (!bar)
			continue;
		ep->bars[i] = NULL;
		zcx_bar_leave(bar);
	}
}

/* Undo a membership whose number the caller never learnt. */
void zcx_bar_detach(struct zcx_ctx *ctx, u32 ep_idx, u32 idx)
{
	struct zcx_barrier *bar = NULL;
	struct zcx_ep *ep;

	mutex_lock(&ctx->ep_mutex);
	ep = rcu_dereference_protected(ctx->eps[ep_idx], lockdep_is_held(&ctx->ep_mutex));
	if (ep) {
		/* Not while a submission may be looking at it. */
		mutex_lock(&ep->sq_mutex);
		bar = ep->bars[idx];
		ep->bars[idx] = NULL;
		mutex_unlock(&ep->sq_mutex);
	}
	mutex_unlock(&ctx->ep_mutex);
	if (bar)
		zcx_bar_leave(bar);
}

void zcx_bar_global_exit(void)
{
	xa_destroy(&zcx_bar_table);
}
