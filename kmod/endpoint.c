// SPDX-License-Identifier: GPL-2.0-only
/*
 * endpoint.c - endpoints: their mapped rings, addresses and connections,
 * the doorbell (ZCX_IOC_ENTER), completions, and the polling thread.
 *
 * The rings live in one zeroed vmalloc area per endpoint that the process
 * maps shared.  Userspace owns sq_tail and cq_head; the kernel owns the
 * rest, keeps its own copies of everything it relies on (masks, heads,
 * tails) and treats what it reads from the mapping as untrusted: a process
 * that scribbles on its rings only confuses itself.
 */
#include <linux/capability.h>
#include <linux/cgroup.h>
#include <linux/kthread.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/stat.h>
#include <linux/slab.h>
#include <linux/socket.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <linux/wait_bit.h>
#include <linux/xarray.h>
#include <crypto/algapi.h>

#include "zcx.h"
#include "zcx_trace.h"

/* Ring mappings sit above the status area, one 4 GiB window each. */

/* The shared header; each side's indices on their own cache line. */
struct zcx_ring_hdr {
	u32 sq_head ____cacheline_aligned;
	u32 sq_flags;
	u32 sq_mask;
	u32 sq_entries;
	u32 cq_mask;
	u32 cq_entries;
	u32 sq_tail ____cacheline_aligned;
	u32 cq_head ____cacheline_aligned;
	u32 cq_tail ____cacheline_aligned;
};

/* Node-wide table of endpoints, by address id. */
static DEFINE_XARRAY_ALLOC1(zcx_ep_table);

bool zcx_addr_valid(const struct zcx_addr *addr, u16 kind)
{
	if (addr->kind != kind || addr->reserved0 || addr->id > U32_MAX || addr->reserved1 ||
	    addr->reserved2)
		return false;
	if (addr->node == ZCX_NODE_LOCAL)
		return !addr->node_id && !addr->family && !addr->port &&
		       !memchr_inv(addr->ip, 0, sizeof(addr->ip));
	/* Barriers are on one node. */
	return kind == ZCX_ADDR_ENDPOINT && addr->node == ZCX_NODE_INET &&
	       (addr->family == AF_INET || addr->family == AF_INET6);
}

static void zcx_ep_release(struct kref *ref)
{
	struct zcx_ep *ep = container_of(ref, struct zcx_ep, ref);

	xa_destroy(&ep->conns);
	/* Pages still mapped somewhere keep their own references. */
	vfree(ep->ring);
	mem_cgroup_put(ep->memcg);
	kfree_rcu(ep, rcu);
}

void zcx_ep_put(struct zcx_ep *ep)
{
	kref_put(&ep->ref, zcx_ep_release);
}

/* A reference to endpoint @idx of @ctx, or NULL. */
struct zcx_ep *zcx_ep_get(struct zcx_ctx *ctx, u32 idx)
{
	struct zcx_ep *ep;

	if (idx >= ZCX_MAX_ENDPOINTS)
		return NULL;
	rcu_read_lock();
	ep = rcu_dereference(ctx->eps[idx]);
	if (ep && !kref_get_unless_zero(&ep->ref))
		ep = NULL;
	rcu_read_unlock();
	return ep;
}

static int zcx_ep_rings_init(struct zcx_ep *ep)
{
	size_t sqes = ALIGN(sizeof(struct zcx_ring_hdr), 64);
	size_t cqes = sqes + ep->sq_entries * sizeof(struct zcx_sqe);
	size_t size = PAGE_ALIGN(cqes + ep->cq_entries * sizeof(struct zcx_cqe));

	/* Zeroed, user-mappable, charged to the opener's memory cgroup. */
	ep->ring = __vmalloc(size, GFP_KERNEL_ACCOUNT | __GFP_ZERO);
	if (!ep->ring)
		return -ENOMEM;
	ep->ring_size = size;
	ep->hdr = ep->ring;
	ep->sqes = ep->ring + sqes;
	ep->cqes = ep->ring + cqes;
	ep->sq_mask = ep->sq_entries - 1;
	ep->cq_mask = ep->cq_entries - 1;
	ep->hdr->sq_mask = ep->sq_mask;
	ep->hdr->sq_entries = ep->sq_entries;
	ep->hdr->cq_mask = ep->cq_mask;
	ep->hdr->cq_entries = ep->cq_entries;
	return 0;
}

/* Where peers on other nodes reach the endpoint, if a backend listens. */
static void zcx_ep_fill_inet(struct zcx_addr *addr)
{
	const struct zcx_backend_ops *ops = zcx_backend_get();

	if (!ops)
		return;
	if (ops->fill_addr(addr)) {
		addr->node = ZCX_NODE_INET;
		addr->node_id = zcx_node_id;
	} else {
		/* Back to a local address, whatever the backend wrote. */
		struct zcx_addr local = { .kind = addr->kind, .id = addr->id, .key = addr->key };

		*addr = local;
	}
	zcx_backend_put(ops);
}

static void zcx_ep_fill(const struct zcx_ep *ep, struct zcx_ep_create *arg)
{
	struct zcx_ring_offsets *o = &arg->offsets;

	arg->sq_entries = ep->sq_entries;
	arg->cq_entries = ep->cq_entries;
	arg->ep = ep->idx;
	arg->mmap_offset = (u64)(ep->idx + 1) << ZCX_MMAP_EP_SHIFT;
	arg->mmap_size = ep->ring_size;
	memset(o, 0, sizeof(*o));
	o->sq_head = offsetof(struct zcx_ring_hdr, sq_head);
	o->sq_tail = offsetof(struct zcx_ring_hdr, sq_tail);
	o->sq_flags = offsetof(struct zcx_ring_hdr, sq_flags);
	o->sq_mask = offsetof(struct zcx_ring_hdr, sq_mask);
	o->sq_entries = offsetof(struct zcx_ring_hdr, sq_entries);
	o->sqes = (void *)ep->sqes - ep->ring;
	o->cq_head = offsetof(struct zcx_ring_hdr, cq_head);
	o->cq_tail = offsetof(struct zcx_ring_hdr, cq_tail);
	o->cq_mask = offsetof(struct zcx_ring_hdr, cq_mask);
	o->cq_entries = offsetof(struct zcx_ring_hdr, cq_entries);
	o->cqes = (void *)ep->cqes - ep->ring;
	memset(&arg->addr, 0, sizeof(arg->addr));
	arg->addr.kind = ZCX_ADDR_ENDPOINT;
	arg->addr.id = ep->id;
	arg->addr.key = ep->key;
	if (ep->flags & ZCX_EP_NET)
		zcx_ep_fill_inet(&arg->addr);
}

static int zcx_poller_start(struct zcx_ctx *ctx);
static void zcx_poller_stop(struct zcx_ctx *ctx);
static void zcx_user_poller_put(kuid_t user);

int zcx_ep_create(struct zcx_ctx *ctx, struct zcx_ep_create *arg)
{
	u32 depth = arg->sq_entries ? arg->sq_entries : zcx_ring_depth;
	bool started_poller = false;
	struct zcx_ep *ep;
	u32 idx, id;
	int ret;

	if (arg->flags & ~ZCX_EP_FLAGS || depth > ZCX_MAX_RING_DEPTH)
		return -EINVAL;
	ep = kzalloc(sizeof(*ep), GFP_KERNEL_ACCOUNT);
	if (!ep)
		return -ENOMEM;
	kref_init(&ep->ref);
	ep->ctx = ctx;
	ep->flags = arg->flags;
	ep->owner = current_euid();
	ep->memcg = get_mem_cgroup_from_mm(current->mm);
	ep->key = get_random_u64();
	ep->sq_entries = roundup_pow_of_two(max(depth, 2U));
	ep->cq_entries = 2 * ep->sq_entries;
	mutex_init(&ep->sq_mutex);
	spin_lock_init(&ep->cq_lock);
	init_waitqueue_head(&ep->cq_wait);
	mutex_init(&ep->match_mutex);
	spin_lock_init(&ep->bars_lock);
	INIT_LIST_HEAD(&ep->posted);
	INIT_LIST_HEAD(&ep->unexpected);
	INIT_LIST_HEAD(&ep->accepted);
	xa_init_flags(&ep->conns, XA_FLAGS_ALLOC);
	ret = zcx_ep_rings_init(ep);
	if (ret)
		goto err_free;

	ret = mutex_lock_killable(&ctx->ep_mutex);
	if (ret)
		goto err_free;
	for (idx = 0; idx < ZCX_MAX_ENDPOINTS; idx++)
		if (!rcu_access_pointer(ctx->eps[idx]))
			break;
	ret = -ENOSPC;
	if (idx == ZCX_MAX_ENDPOINTS)
		goto err_unlock;
	ep->idx = idx;
	if ((ep->flags & ZCX_EP_POLL) && !ctx->poller) {
		ret = zcx_poller_start(ctx);
		if (ret)
			goto err_unlock;
		started_poller = true;
	}
	ret = xa_alloc(&zcx_ep_table, &id, ep, xa_limit_32b, GFP_KERNEL);
	if (ret)
		goto err_poller;
	/* Before the thread sees the endpoint (ctx->polled), for every one. */
	if (ep->flags & ZCX_EP_POLL)
		zcx_ctx_note_memlock(ctx);
	ep->id = id;
	zcx_ep_fill(ep, arg);
	rcu_assign_pointer(ctx->eps[idx], ep);
	spin_lock(&ctx->stats_lock);
	list_add_tail(&ep->counted, &ctx->counted);
	spin_unlock(&ctx->stats_lock);
	if (ep->flags & ZCX_EP_POLL)
		set_bit(idx, ctx->polled);
	mutex_unlock(&ctx->ep_mutex);
	/* Not ep->flags: another thread may destroy it already. */
	if (arg->flags & ZCX_EP_POLL)
		zcx_poller_kick(ctx);
	return 0;

err_poller:
	/*
	 * A failed call leaves no thread for endpoints yet to come.  Only
	 * the one this call started: it has no endpoint to serve, so no
	 * fault to wait in, and is stopped, not killed, which would have it
	 * mark the context's polling dead (zcx_poller_dead()).
	 */
	if (started_poller)
		zcx_poller_stop(ctx);
err_unlock:
	mutex_unlock(&ctx->ep_mutex);
err_free:
	zcx_ep_put(ep);
	return ret;
}

/*
 * Kill the polling thread, as a process's thread is killed: a fault it
 * waits in for the process (a page missing under a userfaultfd, or of a
 * FUSE file) ends, and the submission it was taking fails.  It serves no
 * more from then on (zcx_poller()).  ctx->ep_mutex held.
 */
static void zcx_poller_kill(struct zcx_ctx *ctx)
{
	lockdep_assert_held(&ctx->ep_mutex);
	if (ctx->poller)
		send_sig(SIGKILL, ctx->poller, 1);
}

/*
 * Lock @ep's sq_mutex, which its polling thread may hold for as long as a
 * fault takes that only the process can serve.  If we are killed
 * meanwhile, so is the process (with the thread still there, only the
 * address space's own threads get here: zcx_ctx_check_caller(); the
 * teardown stops it first), and nobody will serve it: kill the thread,
 * or this would wait for ever.  ctx->ep_mutex held.
 */
void zcx_ep_lock_sq(struct zcx_ep *ep)
{
	lockdep_assert_held(&ep->ctx->ep_mutex);
	if (!mutex_lock_killable(&ep->sq_mutex))
		return;
	zcx_poller_kill(ep->ctx);
	mutex_lock(&ep->sq_mutex);
}

/*
 * Take @ep out of service: nothing new reaches it, what waits on it
 * fails, its operations queued anywhere are dropped.  ctx->ep_mutex held.
 * Copies under way that involve it stop at their next check of @dead.
 */
static void zcx_ep_shutdown(struct zcx_ctx *ctx, struct zcx_ep *ep)
{
	struct zcx_accepted *acc, *tmp;
	struct zcx_conn *conn;
	unsigned long i;

	lockdep_assert_held(&ctx->ep_mutex);
	clear_bit(ep->idx, ctx->polled);
	RCU_INIT_POINTER(ctx->eps[ep->idx], NULL);
	xa_erase(&zcx_ep_table, ep->id);

	mutex_lock(&ep->match_mutex);
	WRITE_ONCE(ep->dead, true);
	/* Connections from other nodes: their backend closes them. */
	list_for_each_entry_safe(acc, tmp, &ep->accepted, link) {
		list_del_init(&acc->link);
		acc->gone(acc);
	}
	mutex_unlock(&ep->match_mutex);
	/* Dead: it posts and counts nothing more (zcx_cq_post()). */
	spin_lock(&ctx->stats_lock);
	spin_lock(&ep->cq_lock);
	zcx_xfer_stats_add(&ctx->xfer_closed, &ep->stats);
	list_del(&ep->counted);
	spin_unlock(&ep->cq_lock);
	spin_unlock(&ctx->stats_lock);
	/* Whoever is taking submissions finishes its batch first. */
	zcx_ep_lock_sq(ep);
	mutex_unlock(&ep->sq_mutex);
	wake_up_all(&ep->cq_wait);

	zcx_ep_cancel(ep);
	zcx_ep_leave_barriers(ep);
	xa_for_each(&ep->conns, i, conn) {
		xa_erase(&ep->conns, i);
		zcx_conn_put(conn);
	}
	zcx_ep_put(ep);
}

int zcx_ep_destroy_idx(struct zcx_ctx *ctx, u32 idx)
{
	struct zcx_ep *ep;

	if (idx >= ZCX_MAX_ENDPOINTS)
		return -ENOENT;
	if (mutex_lock_killable(&ctx->ep_mutex))
		return -EINTR;
	ep = rcu_dereference_protected(ctx->eps[idx], lockdep_is_held(&ctx->ep_mutex));
	if (ep)
		zcx_ep_shutdown(ctx, ep);
	mutex_unlock(&ctx->ep_mutex);
	return ep ? 0 : -ENOENT;
}

/* Stop the polling thread, if there is one.  ctx->ep_mutex held. */
static void zcx_poller_stop(struct zcx_ctx *ctx)
{
	lockdep_assert_held(&ctx->ep_mutex);
	if (!ctx->poller)
		return;
	kthread_stop(ctx->poller);
	put_task_struct(ctx->poller);
	ctx->poller = NULL;
	zcx_user_poller_put(ctx->poller_user);
	atomic_dec(&zcx_pollers);
}

/*
 * The context goes away, or its address space did: every endpoint is
 * shut down, the polling thread stopped, and we wait until no transfer,
 * ours or a peer's, still uses our pages.  Before the regions are torn
 * down.  Doing it again finds nothing left to do.
 */
void zcx_eps_destroy(struct zcx_ctx *ctx)
{
	struct zcx_ep *ep;
	u32 idx;

	mutex_lock(&ctx->ep_mutex);
	/* Nobody is served any more: end the fault it may wait in. */
	zcx_poller_kill(ctx);
	zcx_poller_stop(ctx);
	for (idx = 0; idx < ZCX_MAX_ENDPOINTS; idx++) {
		ep = rcu_dereference_protected(ctx->eps[idx], lockdep_is_held(&ctx->ep_mutex));
		if (ep)
			zcx_ep_shutdown(ctx, ep);
	}
	mutex_unlock(&ctx->ep_mutex);
	zcx_exposed_destroy(ctx);
	wait_var_event(&ctx->busy, !atomic_read(&ctx->busy));
}

/* Add @conn to @ep's table: its number, or -errno.  Takes @conn. */
static int zcx_ep_add_conn(struct zcx_ctx *ctx, struct zcx_ep *ep, struct zcx_conn *conn)
{
	u32 id;
	int ret;

	ret = mutex_lock_killable(&ctx->ep_mutex);
	if (ret) {
		zcx_conn_put(conn);
		return ret;
	}
	ret = ep->dead ? -ENOENT :
	      xa_alloc(&ep->conns, &id, conn, XA_LIMIT(0, ZCX_MAX_CONNECTIONS - 1),
		       GFP_KERNEL_ACCOUNT);
	/* Counted while ep_mutex holds off the shutdown that uncounts it. */
	if (!ret && conn->peer)
		zcx_conn_count(conn);
	mutex_unlock(&ctx->ep_mutex);
	if (ret) {
		zcx_conn_put(conn);
		return ret == -EBUSY ? -ENOSPC : ret;
	}
	return id;
}

/* A connection through the backend; sleeps until it is up. */
static int zcx_ep_connect_remote(struct zcx_ctx *ctx, struct zcx_ep *ep,
				 const struct zcx_addr *addr)
{
	struct zcx_conn *conn;
	int ret;

	conn = kzalloc(sizeof(*conn), GFP_KERNEL_ACCOUNT);
	if (!conn)
		return -ENOMEM;
	kref_init(&conn->ref);
	conn->ops = zcx_backend_get();
	if (!conn->ops) {
		kfree(conn);
		return -ENETUNREACH;
	}
	ret = conn->ops->connect(conn, addr);
	if (ret) {
		zcx_backend_put(conn->ops);
		kfree(conn);
		return ret;
	}
	return zcx_ep_add_conn(ctx, ep, conn);
}

int zcx_ep_connect(struct zcx_ctx *ctx, struct zcx_ep_connect *arg)
{
	bool net = arg->flags & ZCX_CONNECT_NET;
	struct zcx_ep *ep, *peer;
	struct zcx_conn *conn;
	int ret;

	if (arg->flags & ~ZCX_CONNECT_FLAGS || arg->pad ||
	    !zcx_addr_valid(&arg->addr, ZCX_ADDR_ENDPOINT) ||
	    (net && arg->addr.node != ZCX_NODE_INET))
		return -EINVAL;
	ep = zcx_ep_get(ctx, arg->ep);
	if (!ep)
		return -ENOENT;
	if (net || (arg->addr.node == ZCX_NODE_INET && arg->addr.node_id != zcx_node_id)) {
		ret = zcx_ep_connect_remote(ctx, ep, &arg->addr);
		zcx_ep_put(ep);
		if (ret < 0)
			return ret;
		arg->peer = ret;
		return 0;
	}

	rcu_read_lock();
	peer = xa_load(&zcx_ep_table, arg->addr.id);
	if (peer && !kref_get_unless_zero(&peer->ref))
		peer = NULL;
	rcu_read_unlock();
	ret = -ECONNREFUSED;
	/* Constant time: the key is the only secret an address holds. */
	if (!peer || crypto_memneq(&peer->key, &arg->addr.key, sizeof(peer->key)))
		goto out_put_peer;
	ret = -EACCES;
	if (!(peer->flags & ZCX_EP_ANY_USER) && !uid_eq(peer->owner, current_euid()))
		goto out_put_peer;

	ret = -ENOMEM;
	conn = kzalloc(sizeof(*conn), GFP_KERNEL_ACCOUNT);
	if (!conn)
		goto out_put_peer;
	kref_init(&conn->ref);
	conn->peer = peer;
	/* The connection holds the reference on @peer from here. */
	ret = zcx_ep_add_conn(ctx, ep, conn);
	zcx_ep_put(ep);
	if (ret < 0)
		return ret;
	arg->peer = ret;
	return 0;

out_put_peer:
	if (peer)
		zcx_ep_put(peer);
	zcx_ep_put(ep);
	return ret;
}

/*
 * Undo a connection whose number the caller never learnt.  One that a
 * submission used already (its number guessed, by another thread) stays:
 * what it queued at the peer is found through it when the endpoint goes.
 */
void zcx_ep_disconnect(struct zcx_ctx *ctx, u32 ep_idx, u32 peer)
{
	struct zcx_conn *conn = NULL;
	struct zcx_ep *ep;

	/*
	 * ep_mutex: a shutdown under way must not uncount it a second time.
	 * Killed meanwhile, we leave it to the teardown that follows.
	 */
	if (mutex_lock_killable(&ctx->ep_mutex))
		return;
	ep = rcu_dereference_protected(ctx->eps[ep_idx], lockdep_is_held(&ctx->ep_mutex));
	if (ep) {
		/* Submissions use connections under sq_mutex, without a reference. */
		zcx_ep_lock_sq(ep);
		conn = xa_load(&ep->conns, peer);
		if (conn && !conn->used)
			xa_erase(&ep->conns, peer);
		else
			conn = NULL;
		mutex_unlock(&ep->sq_mutex);
	}
	mutex_unlock(&ctx->ep_mutex);
	if (conn)
		zcx_conn_undo(conn);
}

/*
 * A peer on another node connects to endpoint @id with @key: the endpoint
 * (a reference), counted as a sender, or NULL.  Only the key is checked:
 * users of other nodes are not ours to compare.
 */
struct zcx_ep *zcx_ep_accept(u64 id, u64 key, struct zcx_accepted *acc)
{
	struct zcx_ep *ep = NULL;
	bool live;

	if (id <= U32_MAX) {
		rcu_read_lock();
		ep = xa_load(&zcx_ep_table, id);
		if (ep && !kref_get_unless_zero(&ep->ref))
			ep = NULL;
		rcu_read_unlock();
	}
	if (!ep)
		return NULL;
	/* Only endpoints that asked for it; the key decides in constant time. */
	if (!(ep->flags & ZCX_EP_NET) || crypto_memneq(&ep->key, &key, sizeof(key))) {
		zcx_ep_put(ep);
		return NULL;
	}
	mutex_lock(&ep->match_mutex);
	live = !ep->dead;
	if (live) {
		ep->senders++;
		list_add_tail(&acc->link, &ep->accepted);
	}
	mutex_unlock(&ep->match_mutex);
	if (!live) {
		zcx_ep_put(ep);
		return NULL;
	}
	return ep;
}
EXPORT_SYMBOL_GPL(zcx_ep_accept);

/* What a backend allocates for @ep is charged to this (backend.h). */
struct mem_cgroup *zcx_ep_memcg(const struct zcx_ep *ep)
{
	return ep->memcg;
}
EXPORT_SYMBOL_GPL(zcx_ep_memcg);

/* The connection zcx_ep_accept() let in is gone (backend.h). */
void zcx_ep_unaccept(struct zcx_ep *ep, struct zcx_accepted *acc, bool refused)
{
	mutex_lock(&ep->match_mutex);
	list_del_init(&acc->link);
	mutex_unlock(&ep->match_mutex);
	zcx_ep_sender_gone(ep, refused);
	zcx_ep_put(ep);
}
EXPORT_SYMBOL_GPL(zcx_ep_unaccept);

void zcx_xfer_stats_add(struct zcx_xfer_stats *sum, const struct zcx_xfer_stats *add)
{
	sum->ops += add->ops;
	sum->errors += add->errors;
	sum->tx_bytes += add->tx_bytes;
	sum->rx_bytes += add->rx_bytes;
}

/*
 * Add the endpoints of @ctx and their transport counters to @sum.  Not
 * under ep_mutex: a shutdown holds it while it waits for a submission,
 * which can wait for a page fault as long as the process likes.
 */
void zcx_eps_stats_add(struct zcx_ctx *ctx, struct zcx_stats *sum)
{
	struct zcx_ep *ep;

	spin_lock(&ctx->stats_lock);
	zcx_xfer_stats_add(&sum->xfer, &ctx->xfer_closed);
	list_for_each_entry(ep, &ctx->counted, counted) {
		sum->endpoints++;
		spin_lock(&ep->cq_lock);
		zcx_xfer_stats_add(&sum->xfer, &ep->stats);
		spin_unlock(&ep->cq_lock);
	}
	spin_unlock(&ctx->stats_lock);
}

/* Count a completion posted; cq_lock held. */
static void zcx_cq_count(struct zcx_ep *ep, u8 opcode, int res, u64 len)
{
	ep->stats.ops++;
	if (res < 0)
		ep->stats.errors++;
	if (opcode == ZCX_OP_SEND || opcode == ZCX_OP_PUT)
		ep->stats.tx_bytes += len;
	else if (opcode == ZCX_OP_RECV || opcode == ZCX_OP_GET)
		ep->stats.rx_bytes += len;
}

/* Post a completion; the room was reserved when the operation was taken. */
static void zcx_cq_post(struct zcx_ep *ep, u8 opcode, u64 user_data, int res, u64 len,
			u64 tag)
{
	struct zcx_cqe *cqe;

	spin_lock(&ep->cq_lock);
	if (!READ_ONCE(ep->dead)) {
		trace_zcx_complete(ep, opcode, user_data, res, len);
		zcx_cq_count(ep, opcode, res, len);
		cqe = &ep->cqes[ep->cq_tail & ep->cq_mask];
		WRITE_ONCE(cqe->user_data, user_data);
		WRITE_ONCE(cqe->res, res);
		WRITE_ONCE(cqe->flags, 0);
		WRITE_ONCE(cqe->len, len);
		WRITE_ONCE(cqe->tag, tag);
		ep->cq_tail++;
		/* Entry before tail: pairs with userspace's acquire of cq_tail. */
		smp_store_release(&ep->hdr->cq_tail, ep->cq_tail);
	}
	ep->owed--;
	spin_unlock(&ep->cq_lock);
	/* Pairs with the barrier in prepare_to_wait(): no lost wake-up. */
	smp_mb();
	if (wq_has_sleeper(&ep->cq_wait))
		wake_up(&ep->cq_wait);
}

/*
 * Finish an operation: give back what it holds and, if it has an owner,
 * post its completion.
 */
void zcx_op_complete(struct zcx_op *op, int res, u64 len, u64 tag)
{
	if (op->region)
		zcx_region_busy_put(op->region);
	if (op->conn)
		zcx_conn_put(op->conn);
	if (op->rx)
		zcx_backend_release_rx(op->rx);
	else
		kfree(op->data);
	if (op->ep) {
		zcx_cq_post(op->ep, op->opcode, op->user_data, res, len, tag);
		zcx_ep_put(op->ep);
	}
	kfree(op);
}
EXPORT_SYMBOL_GPL(zcx_op_complete);

/* Complete every operation on @list (linked by ->link) with @res. */
void zcx_ops_complete(struct list_head *list, int res)
{
	struct zcx_op *op, *tmp;

	list_for_each_entry_safe(op, tmp, list, link) {
		list_del(&op->link);
		zcx_op_complete(op, res, 0, 0);
	}
}

/* Completions posted and not yet read, as far as userspace tells. */
static u32 zcx_cq_ready(struct zcx_ep *ep)
{
	/* Pairs with userspace's release of cq_head after reading entries. */
	return READ_ONCE(ep->cq_tail) - smp_load_acquire(&ep->hdr->cq_head);
}

/* Reserve CQ room for one more operation; false if the CQ could fill. */
static bool zcx_cq_reserve(struct zcx_ep *ep)
{
	u32 unread;
	bool room;

	spin_lock(&ep->cq_lock);
	/* A head userspace moved past the tail counts as a full CQ. */
	unread = ep->cq_tail - READ_ONCE(ep->hdr->cq_head);
	room = unread <= ep->cq_entries && ep->owed < ep->cq_entries - unread;
	if (room)
		ep->owed++;
	spin_unlock(&ep->cq_lock);
	return room;
}

/* Start one submission; it completes now or later, never fails here. */
static void zcx_sqe_start(struct zcx_ep *ep, struct zcx_op *op, const struct zcx_sqe *sqe)
{
	struct zcx_conn *conn = NULL;

	if (sqe->reserved || (sqe->flags && (sqe->opcode != ZCX_OP_RECV ||
					     sqe->flags & ~ZCX_SQE_FLAGS)))
		goto invalid;
	op->need_sender = sqe->flags & ZCX_SQE_CONNECTED;
	switch (sqe->opcode) {
	case ZCX_OP_NOP:
		zcx_op_complete(op, 0, 0, 0);
		return;
	case ZCX_OP_RECV:
		zcx_op_recv(op, sqe->handle);
		return;
	case ZCX_OP_BARRIER:
		zcx_op_barrier(op, sqe->peer);
		return;
	case ZCX_OP_SEND:
	case ZCX_OP_PUT:
	case ZCX_OP_GET:
		/* Connections only go away with the endpoint, under sq_mutex. */
		conn = xa_load(&ep->conns, sqe->peer);
		if (!conn)
			goto invalid;
		conn->used = true;
		if (sqe->opcode == ZCX_OP_SEND)
			zcx_op_send(op, conn, sqe->handle);
		else
			zcx_op_rma(op, conn, sqe->remote_addr, sqe->rkey, sqe->handle);
		return;
	}
invalid:
	zcx_op_complete(op, -EINVAL, 0, 0);
}

/*
 * Take up to @max submissions.  Returns how many, or -EBUSY if the CQ had
 * no room for the first.  sq_mutex held; runs in ctx->mm.
 */
static int zcx_sq_take(struct zcx_ep *ep, u32 max)
{
	/* Pairs with userspace's release of sq_tail after writing entries. */
	u32 tail = smp_load_acquire(&ep->hdr->sq_tail);
	struct zcx_sqe sqe;
	struct zcx_op *op;
	u32 done = 0;

	lockdep_assert_held(&ep->sq_mutex);
	/* A tail beyond a full ring is a confused process: take a ring. */
	if (tail - ep->sq_head > ep->sq_entries)
		tail = ep->sq_head + ep->sq_entries;
	while (ep->sq_head != tail && done < max && !READ_ONCE(ep->dead) &&
	       !fatal_signal_pending(current)) {
		if (!zcx_cq_reserve(ep))
			return done ? done : -EBUSY;
		/* One copy of the entry: userspace may rewrite it meanwhile. */
		memcpy(&sqe, &ep->sqes[ep->sq_head & ep->sq_mask], sizeof(sqe));
		ep->sq_head++;
		trace_zcx_submit(ep, &sqe);
		op = kzalloc(sizeof(*op), GFP_KERNEL_ACCOUNT);
		if (!op) {
			/*
			 * Taken all the same: a submission's failure is its
			 * completion's, never the doorbell's (the entry
			 * would run late, on the next ring).
			 */
			zcx_cq_post(ep, sqe.opcode, sqe.user_data, -ENOMEM, 0, 0);
			if (sqe.opcode == ZCX_OP_BARRIER)
				zcx_bar_wake_passed(ep, sqe.peer);
			goto taken;
		}
		kref_get(&ep->ref);
		op->ep = ep;
		op->user_data = sqe.user_data;
		op->opcode = sqe.opcode;
		op->addr = sqe.addr;
		op->len = sqe.len;
		op->tag = sqe.tag;
		op->tag_mask = sqe.tag_mask;
		zcx_sqe_start(ep, op, &sqe);
taken:
		/*
		 * Handed back once started, so that a head that caught up
		 * with the tail means "all taken, receives posted".  Entry
		 * read before its slot is reused: release.
		 */
		smp_store_release(&ep->hdr->sq_head, ep->sq_head);
		done++;
	}
	return done;
}

/* Whether @ep has entries that only ZCX_IOC_ENTER will take now. */
static bool zcx_sq_orphaned(struct zcx_ep *ep)
{
	return (ep->flags & ZCX_EP_POLL) && READ_ONCE(ep->ctx->poller_killed) &&
	       READ_ONCE(ep->hdr->sq_tail) != READ_ONCE(ep->hdr->sq_head);
}

/*
 * Done waiting: @ep is gone, its completions are there, or it has
 * entries to take that a waiter's caller published for a polling thread
 * killed meanwhile (it calls again, and takes them).
 */
static bool zcx_cq_wait_done(struct zcx_ep *ep, u32 min_complete)
{
	return READ_ONCE(ep->dead) || zcx_cq_ready(ep) >= min_complete ||
	       zcx_sq_orphaned(ep);
}

/*
 * The process takes up to @max submissions of @ep.  Whoever else takes
 * them (another thread, or the polling thread) may hold sq_mutex for as
 * long as a copy of a large message or a fault in the process's memory
 * takes: wait for it interruptibly.
 */
static int zcx_enter_take(struct zcx_ep *ep, u32 max)
{
	int ret;

	if (mutex_lock_interruptible(&ep->sq_mutex))
		return -EINTR;
	ret = zcx_sq_take(ep, max);
	mutex_unlock(&ep->sq_mutex);
	return ret;
}

int zcx_ep_enter(struct zcx_ctx *ctx, const struct zcx_enter *arg)
{
	u32 to_submit = arg->to_submit;
	struct zcx_ep *ep;
	int ret = 0;

	if (arg->flags & ~ZCX_ENTER_FLAGS)
		return -EINVAL;
	ep = zcx_ep_get(ctx, arg->ep);
	if (!ep)
		return -ENOENT;
	if ((arg->flags & ZCX_ENTER_GETEVENTS) && arg->min_complete > ep->cq_entries) {
		ret = -EINVAL;
		goto out;
	}

	if ((ep->flags & ZCX_EP_POLL) && (arg->flags & ZCX_ENTER_SQ_WAKEUP)) {
		/*
		 * The thread will run: no more doorbells until it sets the
		 * flag again, before it next sleeps.  ZCX_SQ_CPU_SHARED stays
		 * until it looks again.
		 */
		WRITE_ONCE(ep->hdr->sq_flags,
			   READ_ONCE(ep->hdr->sq_flags) & ~ZCX_SQ_NEED_WAKEUP);
		zcx_poller_kick(ctx);
	}
	/* Nobody else takes them any more. */
	if ((ep->flags & ZCX_EP_POLL) && READ_ONCE(ctx->poller_killed))
		to_submit = ep->sq_entries;
	/*
	 * On a polled endpoint too: a process whose polling thread shares
	 * its CPU takes its submissions itself rather than wait for the
	 * thread's turn.  sq_mutex orders us with the thread.
	 */
	if (to_submit) {
		if ((ep->flags & ZCX_EP_POLL) && !READ_ONCE(ctx->poll_takers))
			WRITE_ONCE(ctx->poll_takers, true);
		ret = zcx_enter_take(ep, to_submit);
		/* No room for entries the caller did not ask to take: its wait goes on. */
		if (ret == -EBUSY && !arg->to_submit)
			ret = 0;
		if (ret < 0)
			goto out;
	}
	if ((arg->flags & ZCX_ENTER_GETEVENTS) && arg->min_complete) {
		int wret = wait_event_interruptible(ep->cq_wait,
						    zcx_cq_wait_done(ep, arg->min_complete));

		if (READ_ONCE(ep->dead))
			ret = -ENOENT;
		else if (wret && !ret)
			ret = wret;
	}
out:
	zcx_ep_put(ep);
	return ret;
}

#define ZCX_POLL_NAPS		64
#define ZCX_POLL_LOOK_NAPS	4

/*
 * The polling thread: takes the submissions of every ZCX_EP_POLL endpoint
 * of its context, in the context's address space, charging memory to the
 * process's memory cgroup.  It holds the address space only during a pass
 * (so that the process's exit is not held up) and stops serving once the
 * address space is gone.  After poll_idle_us without work it sets
 * NEED_WAKEUP on each endpoint and sleeps until ZCX_IOC_ENTER with
 * ZCX_ENTER_SQ_WAKEUP kicks it.  Entries it cannot take (completion ring
 * full) do not keep it awake: the kick after reaping does.  While others
 * wait for its CPU it says so (ZCX_SQ_CPU_SHARED).  If the process takes
 * its own submissions then (ctx->poll_takers), the idle thread naps a
 * tick at a time rather than compete for the CPU, ZCX_POLL_NAPS times,
 * then sleeps with the flag still set; woken from such a sleep (the
 * process has it look again now and then), it goes back to sleep after
 * ZCX_POLL_LOOK_NAPS if it still shares its CPU and finds no work.
 * Otherwise it gives way with schedule() until poll_idle_us have passed.
 * Killed (zcx_poller_kill()), it serves no more (zcx_poller_dead()).
 */
atomic_t zcx_pollers = ATOMIC_INIT(0);

/*
 * Each user's polling threads (uid -> count, an xarray value), kept only
 * with max_pollers_per_user set, so that one user cannot take all
 * max_pollers.  See the lock order in zcx.h.
 */
static DEFINE_MUTEX(zcx_user_pollers_mutex);
static DEFINE_XARRAY(zcx_user_pollers);

/* Count one more polling thread of @user: 0, or -EAGAIN past its share. */
static int zcx_user_poller_get(kuid_t user)
{
	unsigned int share = zcx_max_pollers_per_user;
	unsigned long n;
	int ret = -EAGAIN;

	if (!share)
		return 0;
	mutex_lock(&zcx_user_pollers_mutex);
	n = xa_to_value(xa_load(&zcx_user_pollers, __kuid_val(user)) ?: xa_mk_value(0));
	if (n < share)
		ret = xa_err(xa_store(&zcx_user_pollers, __kuid_val(user), xa_mk_value(n + 1),
				      GFP_KERNEL));
	mutex_unlock(&zcx_user_pollers_mutex);
	return ret;
}

static void zcx_user_poller_put(kuid_t user)
{
	unsigned long n;

	if (!zcx_max_pollers_per_user)
		return;
	mutex_lock(&zcx_user_pollers_mutex);
	n = xa_to_value(xa_load(&zcx_user_pollers, __kuid_val(user)));
	if (n > 1)	/* in place: no allocation, no failure */
		xa_store(&zcx_user_pollers, __kuid_val(user), xa_mk_value(n - 1), GFP_KERNEL);
	else
		xa_erase(&zcx_user_pollers, __kuid_val(user));
	mutex_unlock(&zcx_user_pollers_mutex);
}

void zcx_poller_kick(struct zcx_ctx *ctx)
{
	WRITE_ONCE(ctx->poll_kick, true);
	wake_up(&ctx->poll_wait);
}

/*
 * One pass over the polled endpoints, publishing @flags in each; true if
 * it took anything.  The flags are stored only when they change: the
 * line is read by every spinning waiter.
 */
static bool zcx_poll_pass(struct zcx_ctx *ctx, u32 flags)
{
	bool busy = false;
	struct zcx_ep *ep;
	u32 idx;

	for_each_set_bit(idx, ctx->polled, ZCX_MAX_ENDPOINTS) {
		ep = zcx_ep_get(ctx, idx);
		if (!ep)
			continue;
		if (ep->flags & ZCX_EP_POLL) {
			if (READ_ONCE(ep->hdr->sq_flags) != flags)
				WRITE_ONCE(ep->hdr->sq_flags, flags);
			/*
			 * The process takes entries itself too: do not wait
			 * for it.  It takes what was published before it
			 * began, and later publishers see NEED_WAKEUP only
			 * once we are in our last look: that look must see
			 * their entries, so it counts as work there.
			 */
			if (!mutex_trylock(&ep->sq_mutex)) {
				if (flags & ZCX_SQ_NEED_WAKEUP)
					busy = true;
			} else {
				if (zcx_sq_take(ep, ep->sq_entries) > 0)
					busy = true;
				mutex_unlock(&ep->sq_mutex);
			}
		}
		zcx_ep_put(ep);
	}
	return busy;
}

/* Publish @flags in each polled endpoint; once killed, wake its waiters too. */
static void zcx_poll_set_flags(struct zcx_ctx *ctx, u32 flags)
{
	struct zcx_ep *ep;
	u32 idx;

	for_each_set_bit(idx, ctx->polled, ZCX_MAX_ENDPOINTS) {
		ep = zcx_ep_get(ctx, idx);
		if (!ep)
			continue;
		if (ep->flags & ZCX_EP_POLL) {
			WRITE_ONCE(ep->hdr->sq_flags, flags);
			/* To take what they published for us (zcx_cq_wait_done()). */
			if (READ_ONCE(ctx->poller_killed))
				wake_up_all(&ep->cq_wait);
		}
		zcx_ep_put(ep);
	}
}

/* A pass with the address space held; false if it is gone. */
static bool zcx_poll_pass_mm(struct zcx_ctx *ctx, u32 flags, bool *busy)
{
	struct mem_cgroup *memcg, *old_memcg;

	if (!mmget_not_zero(ctx->mm))
		return false;
	memcg = get_mem_cgroup_from_mm(ctx->mm);
	old_memcg = set_active_memcg(memcg);
	*busy = zcx_poll_pass(ctx, flags);
	set_active_memcg(old_memcg);
	mem_cgroup_put(memcg);
	mmput(ctx->mm);
	return true;
}

/* Sleep until kicked or stopped, or for @timeout jiffies at most. */
static void zcx_poll_sleep(struct zcx_ctx *ctx, long timeout)
{
	DEFINE_WAIT(wait);

	prepare_to_wait(&ctx->poll_wait, &wait, TASK_INTERRUPTIBLE);
	if (!READ_ONCE(ctx->poll_kick) && !kthread_should_stop())
		schedule_timeout(timeout);
	finish_wait(&ctx->poll_wait, &wait);
}

/*
 * Killed (zcx_poller_kill(), or by root): serve no more, but stay until
 * the context stops us.  ZCX_IOC_ENTER takes what is published from now
 * on, whatever its to_submit, and the endpoints say that we sleep and
 * that others want our CPU, so that libzcx calls it; an endpoint created
 * later kicks us to be told too.  A fatal signal stays pending: no
 * interruptible sleep would last.
 */
static void zcx_poller_dead(struct zcx_ctx *ctx)
{
	WRITE_ONCE(ctx->poller_killed, true);
	while (!kthread_should_stop()) {
		WRITE_ONCE(ctx->poll_kick, false);
		zcx_poll_set_flags(ctx, ZCX_SQ_NEED_WAKEUP | ZCX_SQ_CPU_SHARED);
		wait_event_idle(ctx->poll_wait,
				READ_ONCE(ctx->poll_kick) || kthread_should_stop());
	}
}

static int zcx_poller(void *data)
{
	struct zcx_ctx *ctx = data;
	/* Settable at run time: taken anew each time we go idle. */
	u64 idle_ns = (u64)READ_ONCE(zcx_poll_idle_us) * NSEC_PER_USEC;
	u64 idle_until = ktime_get_ns() + idle_ns;
	bool alive = true, busy;
	unsigned int naps = 0;
	u32 sleep_flags;

	/*
	 * Killable as a process's thread is, unlike other kernel threads
	 * (zcx_poller_kill()): the default action makes a kill fatal, so
	 * that every killable wait ends, a fault's included.
	 */
	kernel_sigaction(SIGKILL, SIG_DFL);
	/* The context's mmgrab() keeps the mm_struct for our use. */
	kthread_use_mm(ctx->mm);
	while (!kthread_should_stop() && !fatal_signal_pending(current)) {
		/* Others wait for this CPU: more threads than CPUs. */
		bool shared = !single_task_running();

		WRITE_ONCE(ctx->poll_kick, false);
		alive = alive && zcx_poll_pass_mm(ctx, shared ? ZCX_SQ_CPU_SHARED : 0, &busy);
		if (alive && busy) {
			idle_until = ktime_get_ns() + idle_ns;
			naps = 0;
			cond_resched();
			continue;
		}
		if (alive && shared && READ_ONCE(ctx->poll_takers)) {
			/*
			 * Idle, and others want this CPU: they are what we
			 * wait for, and while the flags say so they take
			 * their submissions themselves.  Leave them the CPU
			 * for a tick at a time rather than compete for it.
			 */
			if (naps < ZCX_POLL_NAPS) {
				naps++;
				zcx_poll_sleep(ctx, 1);
				continue;
			}
		} else if (alive && ktime_get_ns() < idle_until) {
			/*
			 * Idle: spin; if others want this CPU, let them run
			 * now rather than at the next tick, they are what
			 * we wait for.
			 */
			if (shared)
				schedule();
			else
				cond_resched();
			continue;
		}
		/* Asleep, and whether we shared the CPU when we last looked. */
		sleep_flags = ZCX_SQ_NEED_WAKEUP | (shared ? ZCX_SQ_CPU_SHARED : 0);
		zcx_poll_set_flags(ctx, sleep_flags);
		/*
		 * Flags, then a last look: a submission published after that
		 * look sees the flag (userspace's full barrier pairs with
		 * ours) and kicks us, so the kick check below cannot miss it.
		 */
		smp_mb();
		if (!(alive && zcx_poll_pass_mm(ctx, sleep_flags, &busy) && busy))
			zcx_poll_sleep(ctx, MAX_SCHEDULE_TIMEOUT);
		/* Still shared, as far as we know, until the next pass. */
		zcx_poll_set_flags(ctx, sleep_flags & ZCX_SQ_CPU_SHARED);
		/* Slept sharing: a look of a few naps, unless work comes. */
		naps = shared ? ZCX_POLL_NAPS - ZCX_POLL_LOOK_NAPS : 0;
		idle_ns = (u64)READ_ONCE(zcx_poll_idle_us) * NSEC_PER_USEC;
		idle_until = ktime_get_ns() + idle_ns;
	}
	/*
	 * First: a killed thread with an address space would count as a
	 * dying user of it, one the OOM killer might pick (and never see
	 * exit, since we exit without one).
	 */
	kthread_unuse_mm(ctx->mm);
	if (!kthread_should_stop())
		zcx_poller_dead(ctx);
	return 0;
}

/*
 * One polling thread per context, started with its first polled endpoint
 * (the caller found no thread), or again after a failed creation stopped
 * the one it started: the context's polling starts alive.  It joins its
 * creator's cgroups, as the process's own threads would: the CPU it spins
 * on is the job's (cpu, cpuset), not the node's.
 */
static int zcx_poller_start(struct zcx_ctx *ctx)
{
	struct task_struct *task;
	int ret;

	lockdep_assert_held(&ctx->ep_mutex);
	if (atomic_inc_return(&zcx_pollers) > zcx_max_pollers) {
		atomic_dec(&zcx_pollers);
		return -EAGAIN;
	}
	ret = zcx_user_poller_get(current_euid());
	if (ret)
		goto err_node;
	task = kthread_create(zcx_poller, ctx, "zcx-poll/%d", task_tgid_nr(current));
	if (IS_ERR(task)) {
		ret = PTR_ERR(task);
		goto err_user;
	}
	ret = cgroup_attach_task_all(current, task);
	if (ret) {
		/* Never woken: it ends without running zcx_poller(). */
		kthread_stop(task);
		goto err_user;
	}
	get_task_struct(task);
	ctx->poller = task;
	ctx->poller_user = current_euid();
	WRITE_ONCE(ctx->poller_killed, false);
	WRITE_ONCE(ctx->poll_kick, false);
	wake_up_process(task);
	return 0;

err_user:
	zcx_user_poller_put(current_euid());
err_node:
	atomic_dec(&zcx_pollers);
	return ret;
}

/*
 * mmap() of an endpoint's rings, at the offset ZCX_IOC_EP_CREATE gave, or
 * of one of its barriers' state pages.
 */
int zcx_ep_mmap(struct zcx_ctx *ctx, struct vm_area_struct *vma)
{
	u64 offset = (u64)vma->vm_pgoff << PAGE_SHIFT;
	struct zcx_ep *ep;
	unsigned long i;
	int ret = 0;

	if (!(offset >> ZCX_MMAP_EP_SHIFT))
		return -EINVAL;
	if (offset & (BIT_ULL(ZCX_MMAP_EP_SHIFT) - 1))
		return zcx_bar_mmap(ctx, vma);
	ep = zcx_ep_get(ctx, (offset >> ZCX_MMAP_EP_SHIFT) - 1);
	if (!ep)
		return -EINVAL;
	if (vma_pages(vma) > (ep->ring_size >> PAGE_SHIFT)) {
		ret = -EINVAL;
		goto out;
	}
	vm_flags_set(vma, VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP);
	for (i = 0; i < vma_pages(vma) && !ret; i++)
		ret = vm_insert_page(vma, vma->vm_start + (i << PAGE_SHIFT),
				     vmalloc_to_page(ep->ring + (i << PAGE_SHIFT)));
out:
	zcx_ep_put(ep);
	return ret;
}

void zcx_ep_global_exit(void)
{
	xa_destroy(&zcx_ep_table);
}
