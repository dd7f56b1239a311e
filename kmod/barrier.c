// SPDX-License-Identifier: GPL-2.0-only
/*
 * barrier.c - barriers between the endpoints of a node.
 *
 * Chosen for latency: the members arrive in a page they all map (struct
 * zcx_bar_state), a counter and a round number, so a barrier whose
 * members run costs no system call at all.  The module owns membership:
 * it hands out the page, breaks the barrier when a member leaves, and
 * puts to sleep the members that stopped spinning (ZCX_OP_BARRIER), to be
 * woken by the member that completes the round.  It only reads the
 * round from the page and never trusts it.
 */
#include <linux/cred.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/xarray.h>
#include <crypto/algapi.h>

#include "zcx.h"

/* A barrier's state page: (endpoint + 1) << 32 | (number + 1) << 24. */
#define ZCX_MMAP_BAR_SHIFT	24

/**
 * struct zcx_barrier - a barrier of @nprocs endpoints.
 * @ref:	held by the table's lookups and by each member endpoint.
 * @rcu:	frees it after lookups.
 * @id:		number in the node-wide table.
 * @key:	the address's secret.
 * @owner:	euid of the creator; only that user may join.
 * @page:	the state page the members map ...
 * @state:	... and its kernel address.
 * @lock:	protects the fields below.
 * @nprocs:	members.
 * @joined:	members so far.
 * @waiters:	ZCX_OP_BARRIER waits (struct zcx_op, round in tag).
 * @sleepers:	how many; published in @state.
 * @broken:	a member left: every wait fails.
 */
struct zcx_barrier {
	struct kref ref;
	struct rcu_head rcu;
	u32 id;
	u64 key;
	kuid_t owner;
	struct page *page;
	struct zcx_bar_state *state;
	spinlock_t lock;		/* see the lock order in zcx.h */
	u32 nprocs;
	u32 joined;
	struct list_head waiters;
	u32 sleepers;
	bool broken;
};

static DEFINE_XARRAY_ALLOC1(zcx_bar_table);

static void zcx_bar_release(struct kref *ref)
{
	struct zcx_barrier *bar = container_of(ref, struct zcx_barrier, ref);

	xa_erase(&zcx_bar_table, bar->id);
	/* Mappings hold references of their own. */
	put_page(bar->page);
	kfree_rcu(bar, rcu);
}

static void zcx_bar_put(struct zcx_barrier *bar)
{
	kref_put(&bar->ref, zcx_bar_release);
}

/* Count one more member of @bar, unless it is broken or full. */
static int zcx_bar_count_joiner(struct zcx_barrier *bar)
{
	int ret;

	spin_lock(&bar->lock);
	ret = bar->broken ? -ECONNRESET : bar->joined == bar->nprocs ? -EBUSY : 0;
	if (!ret)
		bar->joined++;
	spin_unlock(&bar->lock);
	return ret;
}

/*
 * Make @bar member number *@idx of endpoint @idx_ep; takes our reference.
 * A joiner (@join) is counted only here, once its endpoint and a place on
 * it are found: a join that fails never holds a member's place, not even
 * while it waits for ep_mutex (a join then refused as full).
 */
static int zcx_bar_attach(struct zcx_ctx *ctx, u32 ep_idx, struct zcx_barrier *bar, bool join,
			  u32 *idx)
{
	struct zcx_ep *ep;
	int ret = -ENOENT;
	u32 i;

	if (mutex_lock_killable(&ctx->ep_mutex))
		return -EINTR;
	ep = rcu_dereference_protected(ep_idx < ZCX_MAX_ENDPOINTS ? ctx->eps[ep_idx] : NULL,
				       lockdep_is_held(&ctx->ep_mutex));
	if (ep) {
		spin_lock(&ep->bars_lock);
		for (i = 0; i < ZCX_MAX_BARRIERS && ep->bars[i]; i++)
			;
		ret = i == ZCX_MAX_BARRIERS ? -ENOSPC : join ? zcx_bar_count_joiner(bar) : 0;
		if (!ret) {
			clear_bit(i, ep->bars_used);
			/* Initialised before lockless readers see it. */
			smp_store_release(&ep->bars[i], bar);
			*idx = i;
		}
		spin_unlock(&ep->bars_lock);
	}
	mutex_unlock(&ctx->ep_mutex);
	return ret;
}

/* Give a member's place back: an undone join that never used it. */
static void zcx_bar_unjoin(struct zcx_barrier *bar)
{
	spin_lock(&bar->lock);
	bar->joined--;
	spin_unlock(&bar->lock);
	zcx_bar_put(bar);
}

static u64 zcx_bar_mmap_offset(u32 ep_idx, u32 idx)
{
	return (u64)(ep_idx + 1) << ZCX_MMAP_EP_SHIFT | (u64)(idx + 1) << ZCX_MMAP_BAR_SHIFT;
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
	bar->page = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
	if (!bar->page) {
		kfree(bar);
		return -ENOMEM;
	}
	bar->state = page_address(bar->page);
	kref_init(&bar->ref);
	spin_lock_init(&bar->lock);
	INIT_LIST_HEAD(&bar->waiters);
	bar->key = get_random_u64();
	bar->owner = current_euid();
	bar->nprocs = arg->nprocs;
	bar->joined = 1;
	ret = xa_alloc(&zcx_bar_table, &id, NULL, xa_limit_32b, GFP_KERNEL);
	if (ret) {
		put_page(bar->page);
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
	ret = zcx_bar_attach(ctx, arg->ep, bar, false, &arg->bar);
	if (ret)
		zcx_bar_put(bar);
	else
		arg->mmap_offset = zcx_bar_mmap_offset(arg->ep, arg->bar);
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

	arg->nprocs = bar->nprocs;
	ret = zcx_bar_attach(ctx, arg->ep, bar, true, &arg->bar);
	if (ret)
		goto out_put;
	arg->mmap_offset = zcx_bar_mmap_offset(arg->ep, arg->bar);
	return 0;

out_put:
	if (bar)
		zcx_bar_put(bar);
	return ret;
}

/* Whether round @round of @bar is over (the page's round is past it). */
static bool zcx_bar_passed(struct zcx_barrier *bar, u32 round)
{
	return (s32)(READ_ONCE(bar->state->round) - round) > 0;
}

/* Publish the count of sleepers to the members.  bar->lock held. */
static void zcx_bar_set_sleepers_locked(struct zcx_barrier *bar, u32 sleepers)
{
	bar->sleepers = sleepers;
	WRITE_ONCE(bar->state->sleepers, sleepers);
}

/* Move the waits whose round is over to @done.  bar->lock held. */
static void zcx_bar_take_passed_locked(struct zcx_barrier *bar, struct list_head *done)
{
	struct zcx_op *it, *tmp;
	u32 woken = 0;

	list_for_each_entry_safe(it, tmp, &bar->waiters, link) {
		if (zcx_bar_passed(bar, it->tag)) {
			list_move_tail(&it->link, done);
			woken++;
		}
	}
	zcx_bar_set_sleepers_locked(bar, bar->sleepers - woken);
}

/*
 * Wait until round @op->tag is over; and wake the waits whose round is.
 * The waiter publishes itself in the sleepers count before it looks at
 * the round; the member completing a round stores the round before it
 * looks at the count (struct zcx_bar_state): with a full barrier on both
 * sides, either that member sees the sleeper and submits a wake-up, or
 * this look sees the round over.  sq_mutex held.
 */
void zcx_op_barrier(struct zcx_op *op, u32 idx)
{
	struct zcx_barrier *bar = NULL;
	LIST_HEAD(done);

	if (idx < ZCX_MAX_BARRIERS)
		/* Pairs with the release in zcx_bar_attach(). */
		bar = smp_load_acquire(&op->ep->bars[idx]);
	if (!bar || op->tag > U32_MAX) {
		zcx_op_complete(op, -EINVAL, 0, 0);
		return;
	}
	set_bit(idx, op->ep->bars_used);
	spin_lock(&bar->lock);
	if (bar->broken) {
		list_add_tail(&op->link, &done);
		spin_unlock(&bar->lock);
		zcx_ops_complete(&done, zcx_bar_passed(bar, op->tag) ? 0 : -ECONNRESET);
		return;
	}
	list_add_tail(&op->link, &bar->waiters);
	zcx_bar_set_sleepers_locked(bar, bar->sleepers + 1);
	/* Sleepers before round: pairs with the members' fence after it. */
	smp_mb();
	zcx_bar_take_passed_locked(bar, &done);
	spin_unlock(&bar->lock);
	zcx_ops_complete(&done, 0);
}

/*
 * A ZCX_OP_BARRIER of @ep for barrier @idx that failed before it could
 * run (no memory for it): it may have been a member's wake-up, after
 * which nothing else wakes the waits whose round is over; they are woken
 * all the same.  sq_mutex held.
 */
void zcx_bar_wake_passed(struct zcx_ep *ep, u32 idx)
{
	struct zcx_barrier *bar;
	LIST_HEAD(done);

	if (idx >= ZCX_MAX_BARRIERS)
		return;
	/* Pairs with the release in zcx_bar_attach(). */
	bar = smp_load_acquire(&ep->bars[idx]);
	if (!bar)
		return;
	spin_lock(&bar->lock);
	/*
	 * The waker stored the new round before it submitted, which orders
	 * it already; a full barrier all the same, as zcx_op_barrier() has,
	 * on a path this rare.
	 */
	smp_mb();
	if (!bar->broken)
		zcx_bar_take_passed_locked(bar, &done);
	spin_unlock(&bar->lock);
	zcx_ops_complete(&done, 0);
}

/* Leave a barrier: it breaks, and what waits on it fails. */
static void zcx_bar_leave(struct zcx_barrier *bar)
{
	struct zcx_op *it, *tmp;
	LIST_HEAD(passed);
	LIST_HEAD(done);

	spin_lock(&bar->lock);
	bar->broken = true;
	/* After the rounds it saw end: members read it before the round. */
	smp_store_release(&bar->state->broken, 1);
	/* Rounds that ended before (their wake-up may be what got lost) pass. */
	list_for_each_entry_safe(it, tmp, &bar->waiters, link)
		list_move_tail(&it->link, zcx_bar_passed(bar, it->tag) ? &passed : &done);
	zcx_bar_set_sleepers_locked(bar, 0);
	spin_unlock(&bar->lock);
	zcx_ops_complete(&passed, 0);
	zcx_ops_complete(&done, -ECONNRESET);
	zcx_bar_put(bar);
}

/* The endpoint is going away (ctx->ep_mutex held): its barriers break. */
void zcx_ep_leave_barriers(struct zcx_ep *ep)
{
	struct zcx_barrier *bar;
	u32 i;

	for (i = 0; i < ZCX_MAX_BARRIERS; i++) {
		spin_lock(&ep->bars_lock);
		bar = ep->bars[i];
		WRITE_ONCE(ep->bars[i], NULL);
		spin_unlock(&ep->bars_lock);
		if (bar)
			zcx_bar_leave(bar);
	}
}

/*
 * Undo a membership whose number the caller never learnt.  If nothing
 * used it (a submission, or an mmap() of the page: the number can be
 * guessed), the place goes back and the other members never knew;
 * otherwise the member leaves, which breaks the barrier.
 */
void zcx_bar_detach(struct zcx_ctx *ctx, u32 ep_idx, u32 idx)
{
	struct zcx_barrier *bar = NULL;
	struct zcx_ep *ep;
	bool used = true;

	/* Killed meanwhile: the teardown that follows makes it leave. */
	if (mutex_lock_killable(&ctx->ep_mutex))
		return;
	ep = rcu_dereference_protected(ctx->eps[ep_idx], lockdep_is_held(&ctx->ep_mutex));
	if (ep) {
		/* Not while a submission may be looking at it. */
		zcx_ep_lock_sq(ep);
		spin_lock(&ep->bars_lock);
		bar = ep->bars[idx];
		WRITE_ONCE(ep->bars[idx], NULL);
		used = test_and_clear_bit(idx, ep->bars_used);
		spin_unlock(&ep->bars_lock);
		mutex_unlock(&ep->sq_mutex);
	}
	mutex_unlock(&ctx->ep_mutex);
	if (bar && used)
		zcx_bar_leave(bar);
	else if (bar)
		zcx_bar_unjoin(bar);
}

/*
 * mmap() of a barrier's state page, at the offset ZCX_IOC_BAR_CREATE or
 * ZCX_IOC_BAR_JOIN gave: only a member endpoint of this context maps it.
 * Called with mmap_lock held, so no ctx->ep_mutex here (see the lock
 * order): bars_lock keeps the barrier while we take a reference, as a
 * membership's reference is dropped only after its slot is cleared under
 * that lock.
 */
int zcx_bar_mmap(struct zcx_ctx *ctx, struct vm_area_struct *vma)
{
	u64 offset = (u64)vma->vm_pgoff << PAGE_SHIFT;
	u32 idx = ((offset & (BIT_ULL(ZCX_MMAP_EP_SHIFT) - 1)) >> ZCX_MMAP_BAR_SHIFT) - 1;
	struct zcx_barrier *bar = NULL;
	struct zcx_ep *ep;
	int ret;

	if (offset & (BIT_ULL(ZCX_MMAP_BAR_SHIFT) - 1) || idx >= ZCX_MAX_BARRIERS ||
	    vma_pages(vma) != 1 || !(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	ep = zcx_ep_get(ctx, (offset >> ZCX_MMAP_EP_SHIFT) - 1);
	if (!ep)
		return -EINVAL;
	/*
	 * Marked used only with the membership it maps, under bars_lock: a
	 * stray mmap() of a free number, or one racing the undo of a join
	 * there, must not keep a later join there from being undone.
	 */
	spin_lock(&ep->bars_lock);
	bar = ep->bars[idx];
	if (bar) {
		kref_get(&bar->ref);
		set_bit(idx, ep->bars_used);
	}
	spin_unlock(&ep->bars_lock);
	zcx_ep_put(ep);
	if (!bar)
		return -EINVAL;
	vm_flags_set(vma, VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP);
	ret = vm_insert_page(vma, vma->vm_start, bar->page);
	zcx_bar_put(bar);
	return ret;
}

void zcx_bar_global_exit(void)
{
	xa_destroy(&zcx_bar_table);
}
