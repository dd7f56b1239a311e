// SPDX-License-Identifier: GPL-2.0-only
/*
 * kept.c - registrations a connection keeps for later messages.
 *
 * zcx.ko caches a process's pinned regions; this caches their
 * registrations on a connection, so that a message from (or into) pages
 * sent from before costs no mapping, no registration and no invalidation:
 * an RTS is one SEND, a pull its READs and FIN.  A kept registration maps
 * the whole pages of one message's range of a region, and serves any
 * later message within them, for the same access.
 *
 * It lives as long as its region is valid: a watch on the region
 * (zcx_op_watch()) holds the pages pinned, and when the region is
 * invalidated (munmap(), madvise(), ...) or evicted by zcx.ko's LRU, the
 * watch marks it stale and queues conn->unreg.  Once no job uses it, that
 * work posts its invalidation (LOCAL_INV), whose completion unmaps it and
 * lets go of the region, which zcx.ko then unpins: the device never
 * reaches a page zcx.ko let go of.  A connection keeps at most
 * ZCX_IB_KEPT_MAX registrations and ZCX_IB_KEPT_MRS MRs; beyond, the
 * least recently used idle ones go the same way.  Its teardown lets go of
 * them all once the queue pair is destroyed.
 *
 * What is kept: the sender's pages that the peer READs (an RTS or PUT),
 * a receive's pages that our READs fill, and the pages of an exposed
 * range that a PUT or GET reaches (zcx_ib_serve(): our READs fill them,
 * our WRITEs read them), unless the device needs them writable by the
 * peer (iWARP).  Never pages the peer may write (a GET's), nor an exposed
 * range remapped since it was exposed (pinned for one transfer): those
 * are registered for one message.  The peer that was sent a message from
 * kept pages can read them (only through its connection, whose PD is its
 * own) until they go; the module parameter reg_cache=0 keeps none.
 */
#include <linux/slab.h>

#include "zcx_ib.h"

/* The region died (under zcx.ko's spinlock): go once unused. */
static void zcx_ib_kept_dead(struct zcx_region_watch *w)
{
	struct zcx_ib_kept *k = container_of(w, struct zcx_ib_kept, watch);

	WRITE_ONCE(k->stale, true);
	zcx_ib_queue_work(&k->conn->unreg);
}

static bool zcx_ib_kept_covers(const struct zcx_ib_kept *k, struct page **pages,
			       unsigned long npages, int access)
{
	unsigned long first = (unsigned long)k->pages, p = (unsigned long)pages;

	return k->access == access && !READ_ONCE(k->stale) && p >= first &&
	       p + npages * sizeof(*pages) <= first + k->npages * sizeof(*pages);
}

/*
 * The kept registration of @len bytes of receive or send @op's pinned
 * pages, or else exposed range @target's (@pages, the first from
 * @offset), for @access, found or made with the registration work
 * requests still to post (then not @k->cached): *@start tells where the
 * bytes begin in it.  NULL if none is kept for them (see the top, and a
 * device whose mappings need synchronising) or none can be made: the
 * caller registers them for the message itself.  The caller uses it
 * until zcx_ib_kept_put().
 */
struct zcx_ib_kept *zcx_ib_kept_get(struct zcx_ib_conn *conn, struct zcx_op *op,
				    const struct zcx_rma_target *target, struct page **pages,
				    u32 offset, u64 len, int access, u32 direct, u64 *start)
{
	unsigned long npages = DIV_ROUND_UP(offset + len, PAGE_SIZE);
	struct zcx_ib_tx *unreg;
	struct zcx_ib_kept *k;

	if (!READ_ONCE(zcx_ib_reg_cache) || (access & IB_ACCESS_REMOTE_WRITE) ||
	    READ_ONCE(conn->kept_off))
		return NULL;
	spin_lock(&conn->lock);
	list_for_each_entry(k, &conn->kept, link) {
		if (!zcx_ib_kept_covers(k, pages, npages, access))
			continue;
		k->users++;
		list_move_tail(&k->link, &conn->kept);
		spin_unlock(&conn->lock);
		*start = (pages - k->pages) * PAGE_SIZE + offset;
		return k;
	}
	spin_unlock(&conn->lock);

	k = kzalloc(sizeof(*k), GFP_KERNEL_ACCOUNT);
	if (!k)
		return NULL;
	k->conn = conn;
	k->pages = pages;
	k->npages = npages;
	k->access = access;
	k->users = 1;
	INIT_LIST_HEAD(&k->link);
	k->watch.dead = zcx_ib_kept_dead;
	/* A region that died already is registered for this message only. */
	if (op ? zcx_op_watch(op, &k->watch) : zcx_rma_target_watch(target, &k->watch)) {
		kfree(k);
		return NULL;
	}
	unreg = zcx_ib_unreg_job(conn, pages, npages, access, direct);
	if (IS_ERR(unreg)) {
		if (PTR_ERR(unreg) == -EOPNOTSUPP)
			WRITE_ONCE(conn->kept_off, true);
		zcx_region_unwatch(&k->watch);
		kfree(k);
		return NULL;
	}
	unreg->kept = k;
	k->unreg = unreg;
	*start = offset;
	return k;
}

/*
 * The job registering @k is being posted: later jobs, posted after it,
 * may use it.  Mark the least recently used idle ones beyond the limits
 * stale.  conn->lock held.
 */
void zcx_ib_kept_posted_locked(struct zcx_ib_conn *conn, struct zcx_ib_kept *k)
{
	u32 n = 0, mrs = 0;
	struct zcx_ib_kept *o;
	bool evicted = false;

	k->cached = true;
	list_add_tail(&k->link, &conn->kept);
	list_for_each_entry(o, &conn->kept, link) {
		if (!READ_ONCE(o->stale)) {
			n++;
			mrs += o->unreg->reg.nmr;
		}
	}
	list_for_each_entry(o, &conn->kept, link) {
		if (n <= ZCX_IB_KEPT_MAX && mrs <= ZCX_IB_KEPT_MRS)
			break;
		if (o->users || READ_ONCE(o->stale))
			continue;
		WRITE_ONCE(o->stale, true);
		n--;
		mrs -= o->unreg->reg.nmr;
		evicted = true;
	}
	if (evicted)
		zcx_ib_queue_work(&conn->unreg);
}

/*
 * A job is done with @k.  Once unused and cached, @k may go at any time
 * (the unreg work): look at it only under conn->lock.
 */
void zcx_ib_kept_put(struct zcx_ib_conn *conn, struct zcx_ib_kept *k)
{
	bool unused, cached, stale;

	spin_lock(&conn->lock);
	unused = !--k->users;
	cached = k->cached;
	stale = READ_ONCE(k->stale);
	spin_unlock(&conn->lock);
	if (!unused)
		return;
	if (!cached)
		/* Never posted, or the teardown is past: nothing reaches it. */
		zcx_ib_job_end(k->unreg, 0);
	else if (stale)
		/* Else its watch queues the work once it is stale. */
		zcx_ib_queue_work(&conn->unreg);
}

/* The end of @k's job: its registration is unmapped; let go of the region. */
void zcx_ib_kept_free(struct zcx_ib_kept *k)
{
	zcx_region_unwatch(&k->watch);
	kfree(k);
}

/*
 * Post the invalidations of the stale registrations no job uses.  On a
 * dead connection, the teardown lets go of them once the queue pair is
 * destroyed.
 */
static void zcx_ib_unreg_work(struct work_struct *work)
{
	struct zcx_ib_conn *conn = container_of(work, struct zcx_ib_conn, unreg);
	struct zcx_ib_kept *k, *tmp;
	LIST_HEAD(gone);

	if (!zcx_ib_build_begin(conn))
		return;
	spin_lock(&conn->lock);
	list_for_each_entry_safe(k, tmp, &conn->kept, link) {
		if (READ_ONCE(k->stale) && !k->users) {
			k->cached = false;
			list_move_tail(&k->link, &gone);
		}
	}
	spin_unlock(&conn->lock);
	list_for_each_entry_safe(k, tmp, &gone, link) {
		list_del_init(&k->link);
		zcx_ib_unreg_post(conn, k->unreg);
	}
	up_read(&conn->building);
}

void zcx_ib_kept_init(struct zcx_ib_conn *conn)
{
	INIT_LIST_HEAD(&conn->kept);
	INIT_WORK(&conn->unreg, zcx_ib_unreg_work);
}

/*
 * The queue pair is destroyed and no job is left: let go of every kept
 * registration, and wait for the work that would.
 */
void zcx_ib_kept_drop_all(struct zcx_ib_conn *conn)
{
	struct zcx_ib_kept *k, *tmp;
	LIST_HEAD(gone);

	/* Every job has ended (zcx_ib_jobs_fail()): none uses them. */
	spin_lock(&conn->lock);
	list_splice_init(&conn->kept, &gone);
	list_for_each_entry(k, &gone, link)
		k->cached = false;
	spin_unlock(&conn->lock);
	list_for_each_entry_safe(k, tmp, &gone, link) {
		list_del_init(&k->link);
		zcx_ib_job_end(k->unreg, 0);
	}
	/* Every job has ended: no watch is left to queue it again. */
	cancel_work_sync(&conn->unreg);
}
