// SPDX-License-Identifier: GPL-2.0-only
/*
 * barrier.c - barriers between the endpoints of a node.
 *
 * Chosen for latency on a node, where every waiter must be woken anyway:
 * a central counter.  Each arrival is one increment under a spinlock; the
 * last one completes every waiting arrival, so each process is woken
 * exactly once per round and nobody relays messages (a dissemination
 * barrier would need log2(N) wake-ups per process).  Rounds follow each
 * other at once: an early arrival at round k+1 simply counts towards it.
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
 * @arrived:	arrivals in this round.
 * @broken:	a member left: every arrival fails.
 * @waiters:	arrivals of this round (struct zcx_op).
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
	u32 arrived;
	bool broken;
	struct list_head waiters;
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

	ret = zcx_bar_attach(ctx, arg->ep, bar, &arg->bar);
	if (ret) {
		zcx_bar_put(bar);
		return ret;
	}
	memset(&arg->addr, 0, sizeof(arg->addr));
	arg->addr.kind = ZCX_ADDR_BARRIER;
	arg->addr.id = bar->id;
	arg->addr.key = bar->key;
	return 0;
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
	ret = zcx_bar_attach(ctx, arg->ep, bar, &arg->bar);
	if (ret) {
		zcx_bar_unjoin(bar);
		return ret;
	}
	arg->nprocs = bar->nprocs;
	return 0;

out_put:
	if (bar)
		zcx_bar_put(bar);
	return ret;
}

/* Arrive; the round's last arrival completes everybody's. */
void zcx_op_barrier(struct zcx_op *op, u32 idx)
{
	struct zcx_barrier *bar = NULL;
	struct zcx_op *it, *tmp;
	LIST_HEAD(done);
	int res = 0;

	if (idx < ZCX_MAX_BARRIERS)
		/* Pairs with the release in zcx_bar_attach(). */
		bar = smp_load_acquire(&op->ep->bars[idx]);
	if (!bar) {
		zcx_op_complete(op, -EINVAL, 0, 0);
		return;
	}
	spin_lock(&bar->lock);
	if (bar->broken) {
		res = -ECONNRESET;
	} else if (++bar->arrived < bar->nprocs) {
		list_add_tail(&op->link, &bar->waiters);
		op = NULL;
	} else {
		bar->arrived = 0;
		list_splice_init(&bar->waiters, &done);
	}
	spin_unlock(&bar->lock);

	list_for_each_entry_safe(it, tmp, &done, link) {
		list_del(&it->link);
		zcx_op_complete(it, 0, 0, 0);
	}
	if (op)
		zcx_op_complete(op, res, 0, 0);
}

/* The endpoint is going away: its barriers break. */
void zcx_ep_leave_barriers(struct zcx_ep *ep)
{
	struct zcx_barrier *bar;
	struct zcx_op *it, *tmp;
	LIST_HEAD(done);
	u32 i;

	for (i = 0; i < ZCX_MAX_BARRIERS; i++) {
		bar = ep->bars[i];
		if (!bar)
			continue;
		ep->bars[i] = NULL;
		spin_lock(&bar->lock);
		bar->broken = true;
		list_splice_init(&bar->waiters, &done);
		spin_unlock(&bar->lock);
		list_for_each_entry_safe(it, tmp, &done, link) {
			list_del(&it->link);
			zcx_op_complete(it, -ECONNRESET, 0, 0);
		}
		zcx_bar_put(bar);
	}
}

void zcx_bar_global_exit(void)
{
	xa_destroy(&zcx_bar_table);
}
