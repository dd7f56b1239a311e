// SPDX-License-Identifier: GPL-2.0-only
/*
 * xfer.c - moving data between processes on one node: tagged send/recv
 * with posted and unexpected queues and credit-based flow control, exposed
 * regions with put/get, and the one copy routine they all use.
 *
 * Whoever arrives second does the copy, in its own system call (or
 * polling thread), from its own memory or pinned pages to the other
 * side's pinned pages, or the other way round: one copy per byte, no
 * bounce buffer.  Pages of the other process come from its region cache
 * and are held busy during the copy.  Messages below zcopy_threshold are
 * an exception when no receive is waiting: the sender's bytes are kept in
 * a kernel buffer (an "eager" message) so that the send completes at
 * once; each connection may have zcx_eager_credits of those unreceived,
 * and beyond that a small send waits for its receiver like a large one.
 */
#include <linux/highmem.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/userfaultfd_k.h>

#include "zcx.h"

/* Pages copied between checks for a dying peer or a fatal signal. */
#define ZCX_COPY_BATCH		16
/* How long a fault in another process's memory may take (zcx_pin_remote()). */
#define ZCX_PIN_WAIT_MS		10000

/*
 * One side of a copy: pinned pages of a region, a kernel buffer, memory
 * of the calling process, or memory of another address space reached
 * page by page (an exposed range that went stale).
 */
struct zcx_span {
	struct zcx_region *region;
	void *kbuf;
	struct mm_struct *mm;
	u64 addr;
	bool write;
};

/*
 * Pin @n pages of another process's @mm from @start (for writing if
 * @write) into @pages, for a transfer it is not doing itself.  A fault
 * here must not wait for that process: it may be the one that has to
 * provide the page (a userfaultfd), and be waiting for this very
 * transfer, say to close its context; and the caller may be a worker,
 * which no signal interrupts.  So faults do not wait (FOLL_NOWAIT): one
 * that would, for I/O it started, is tried again until ZCX_PIN_WAIT_MS
 * have passed; one under a userfaultfd at once fails.  Returns 0, or
 * -EAGAIN (the pages did not come in time, or a userfaultfd range lacks
 * them), -EINTR (fatal signal) or another -errno; the pages pinned so far
 * stay in @pages, *@pinned counts them.
 */
static int zcx_pin_remote(struct mm_struct *mm, unsigned long start, unsigned long n,
			  bool write, struct page **pages, unsigned long *pinned)
{
	unsigned int flags = FOLL_NOWAIT | (write ? FOLL_WRITE : 0);
	unsigned long deadline = jiffies + msecs_to_jiffies(ZCX_PIN_WAIT_MS), addr;
	struct vm_area_struct *vma;
	bool uffd;
	int locked;
	long got;

	while (*pinned < n) {
		addr = start + *pinned * PAGE_SIZE;
		locked = 1;
		uffd = false;
		mmap_read_lock(mm);
		got = zcx_pin_user_pages_remote(mm, addr, n - *pinned, flags,
						pages + *pinned, &locked);
		if (!got && locked) {
			vma = vma_lookup(mm, addr);
			uffd = vma && userfaultfd_armed(vma);
		}
		if (locked)
			mmap_read_unlock(mm);
		if (got < 0)
			return got;
		*pinned += got;
		if (got)
			continue;
		if (uffd || time_after(jiffies, deadline))
			return -EAGAIN;
		/* The fault started I/O: give it a tick. */
		schedule_timeout_killable(1);
		if (fatal_signal_pending(current))
			return -EINTR;
	}
	return 0;
}

/* The page of a region or remote mm holding @span->addr, or ERR_PTR(). */
static struct page *zcx_span_page(const struct zcx_span *span)
{
	unsigned long pinned = 0;
	struct page *page;
	int ret;

	if (span->region)
		return span->region->pages[(span->addr >> PAGE_SHIFT) -
					   (span->region->node.start >> PAGE_SHIFT)];
	ret = zcx_pin_remote(span->mm, span->addr & PAGE_MASK, 1, span->write, &page, &pinned);
	return ret ? ERR_PTR(ret) : page;
}

static void zcx_span_page_done(const struct zcx_span *span, struct page *page)
{
	if (!span->region)
		unpin_user_pages_dirty_lock(&page, 1, span->write);
}

static bool zcx_span_paged(const struct zcx_span *span)
{
	return span->region || span->mm;
}

/*
 * Whether the process we copy for is gone: a polling thread (which the
 * process's death does not kill) holds the last reference to its address
 * space once the process's threads have exited.
 */
static bool zcx_owner_gone(void)
{
	return (current->flags & PF_KTHREAD) && current->mm &&
	       atomic_read(&current->mm->mm_users) <= 1;
}

/*
 * Whether @ep is gone or going: destroyed, or its process exiting (its
 * address space is being torn down, which comes well before the release
 * of its descriptor).  The caller holds pages of @ep's context busy, which
 * keeps the context and its mm_struct.
 */
static bool zcx_ep_gone(const struct zcx_ep *ep)
{
	return READ_ONCE(ep->dead) || !atomic_read(&ep->ctx->mm->mm_users);
}

/*
 * Copy @len bytes from @src to @dst.  Stops early, with ECONNRESET, when
 * @watch goes (the other process of the transfer), or with EINTR on a
 * fatal signal to the caller or, for a polling thread, when its process
 * is gone.  Returns 0 or a negative errno.
 */
static int zcx_copy(struct zcx_span dst, struct zcx_span src, u64 len, const struct zcx_ep *watch)
{
	struct page *spage = NULL, *dpage = NULL;
	unsigned int pages = 0;
	void *s, *d;
	size_t n;
	int ret = 0;

	while (len) {
		if (!(++pages % ZCX_COPY_BATCH)) {
			if (fatal_signal_pending(current) || zcx_owner_gone())
				return -EINTR;
			if (watch && zcx_ep_gone(watch))
				return -ECONNRESET;
			cond_resched();
		}
		n = len;
		if (zcx_span_paged(&src))
			n = min_t(u64, n, PAGE_SIZE - offset_in_page(src.addr));
		if (zcx_span_paged(&dst))
			n = min_t(u64, n, PAGE_SIZE - offset_in_page(dst.addr));

		/* Kernel addresses of each side, if not user memory. */
		s = src.kbuf;
		d = dst.kbuf;
		if (zcx_span_paged(&src)) {
			spage = zcx_span_page(&src);
			if (IS_ERR(spage))
				return PTR_ERR(spage);
			s = kmap_local_page(spage) + offset_in_page(src.addr);
		}
		if (zcx_span_paged(&dst)) {
			dpage = zcx_span_page(&dst);
			if (IS_ERR(dpage)) {
				ret = PTR_ERR(dpage);
				dpage = NULL;
				goto unmap_src;
			}
			d = kmap_local_page(dpage) + offset_in_page(dst.addr);
		}

		if (!src.kbuf && !zcx_span_paged(&src))
			ret = copy_from_user(d, (const void __user *)u64_to_user_ptr(src.addr), n) ?
			      -EFAULT : 0;
		else if (!dst.kbuf && !zcx_span_paged(&dst))
			ret = copy_to_user(u64_to_user_ptr(dst.addr), s, n) ? -EFAULT : 0;
		else
			memcpy(d, s, n);

		if (dpage) {
			kunmap_local(d);
			zcx_span_page_done(&dst, dpage);
			dpage = NULL;
		}
unmap_src:
		if (spage) {
			kunmap_local(s);
			zcx_span_page_done(&src, spage);
			spage = NULL;
		}
		if (ret)
			return ret;
		len -= n;
		src.addr += n;
		dst.addr += n;
		if (src.kbuf)
			src.kbuf += n;
		if (dst.kbuf)
			dst.kbuf += n;
	}
	return 0;
}

/*
 * What the other side of a copy that failed learns: its partner's fatal
 * signal means, to it, that the partner went away.
 */
static int zcx_partner_result(int ret)
{
	return ret == -EINTR ? -ECONNRESET : ret;
}

static struct zcx_span zcx_span_user(u64 addr)
{
	return (struct zcx_span){ .addr = addr };
}

/* An operation's own buffer: its pinned pages if it holds them. */
static struct zcx_span zcx_span_op(const struct zcx_op *op)
{
	return (struct zcx_span){ .region = op->region, .addr = op->addr };
}

static bool zcx_tag_match(const struct zcx_op *recv, u64 tag)
{
	return !((recv->tag ^ tag) & recv->tag_mask);
}

static void zcx_conn_release(struct kref *ref)
{
	struct zcx_conn *conn = container_of(ref, struct zcx_conn, ref);

	if (conn->ops) {
		conn->ops->close(conn);
		zcx_backend_put(conn->ops);
	} else {
		zcx_ep_put(conn->peer);
	}
	kfree(conn);
}

void zcx_conn_put(struct zcx_conn *conn)
{
	kref_put(&conn->ref, zcx_conn_release);
}

/* Pin an operation's buffer, so that copies to or from it never fault. */
static int zcx_op_pin(struct zcx_op *op, u32 access, u64 handle)
{
	if (!op->len || op->region)
		return 0;
	return zcx_region_acquire(op->ep->ctx, op->addr, op->len, access, handle, &op->region);
}

/* Credit back for an eager message leaving @peer's queue; its mutex held. */
static void zcx_eager_done(struct zcx_op *msg)
{
	if (msg->conn)
		msg->conn->eager--;
}

/*
 * The first posted receive of @ep matching @tag, taken off its queue.
 * ep->match_mutex held.
 */
static struct zcx_op *zcx_take_posted(struct zcx_ep *ep, u64 tag)
{
	struct zcx_op *recv;

	list_for_each_entry(recv, &ep->posted, link) {
		if (zcx_tag_match(recv, tag)) {
			list_del(&recv->link);
			return recv;
		}
	}
	return NULL;
}

/*
 * Complete receive @recv, into which a message of @len bytes went (as much
 * as fits) or failed with @res: a longer message fills it, and it
 * completes with EMSGSIZE.
 */
void zcx_op_pulled(struct zcx_op *recv, int res, u64 len, u64 tag)
{
	u64 n = min(recv->len, len);

	if (!res && len > recv->len)
		res = -EMSGSIZE;
	zcx_op_complete(recv, res, res && res != -EMSGSIZE ? 0 : n, tag);
}
EXPORT_SYMBOL_GPL(zcx_op_pulled);

/* Whether @msg is a rendezvous message from another node. */
static bool zcx_msg_pulled(const struct zcx_op *msg)
{
	return msg->rx && !msg->data;
}

/*
 * Deliver message @msg (a send, or an eager message whose bytes are in
 * msg->data) into receive @recv, and complete both.  The copier is the
 * receiver (@receiver_copies) or the sender, and watches the other side,
 * whose pages it holds busy.  The receive's buffer is pinned unless the
 * receiver copies from a kernel buffer (then it holds nothing of the
 * sender's while it may fault).  A rendezvous message from another node
 * goes to its backend, which completes @recv.
 */
static void zcx_deliver(struct zcx_op *recv, struct zcx_op *msg, bool receiver_copies)
{
	u64 n = min(recv->len, msg->len);
	struct zcx_span src = msg->data ? (struct zcx_span){ .kbuf = msg->data } :
					  zcx_span_op(msg);
	struct zcx_span dst = recv->region ? zcx_span_op(recv) : zcx_span_user(recv->addr);
	const struct zcx_ep *watch = receiver_copies ? (msg->data ? NULL : msg->ep) : recv->ep;
	u64 tag = msg->tag, len = msg->len;
	void *rx = msg->rx;
	int ret;

	if (zcx_msg_pulled(msg)) {
		msg->rx = NULL;
		zcx_op_complete(msg, 0, 0, 0);
		zcx_backend_pull(rx, recv, n);
		return;
	}
	ret = zcx_copy(dst, src, n, watch);
	/* The side that did not copy learns of the copier's death as ECONNRESET. */
	zcx_op_complete(msg, receiver_copies ? zcx_partner_result(ret) : ret,
			ret ? 0 : len, 0);
	zcx_op_pulled(recv, receiver_copies ? ret : zcx_partner_result(ret), len, tag);
}

/*
 * Receive @recv takes eager message @msg (its bytes in msg->data) into
 * its buffer, not pinned: copied here, under ep->match_mutex with page
 * faults off, so that a buffer that cannot take them leaves the message
 * queued (bad input changes nothing).  True once both completed; false
 * with the mutex still held if the copy faulted (the caller faults the
 * buffer in and tries again, or pins it).
 */
static bool zcx_deliver_eager_nofault(struct zcx_op *recv, struct zcx_op *msg)
{
	u64 tag = msg->tag, len = msg->len;

	lockdep_assert_held(&recv->ep->match_mutex);
	if (copy_to_user_nofault(u64_to_user_ptr(recv->addr), msg->data, min(recv->len, len)))
		return false;
	list_del(&msg->link);
	zcx_eager_done(msg);
	mutex_unlock(&recv->ep->match_mutex);
	zcx_op_complete(msg, 0, len, 0);
	zcx_op_pulled(recv, 0, len, tag);
	return true;
}

/* A small send's payload into a kernel buffer (op->data); 0 or -errno. */
static int zcx_op_copy_in(struct zcx_op *op)
{
	if (!op->len)
		return 0;
	op->data = kmalloc(op->len, GFP_KERNEL_ACCOUNT);
	if (!op->data)
		return -ENOMEM;
	if (copy_from_user(op->data, u64_to_user_ptr(op->addr), op->len))
		return -EFAULT;
	return 0;
}

/*
 * To a peer on another node: the backend sends the payload from a kernel
 * buffer up to its inline limit, else from the pinned pages (rendezvous),
 * and completes the send.
 */
static void zcx_op_send_remote(struct zcx_op *op, struct zcx_conn *conn, u64 handle)
{
	int ret;

	if (op->len <= conn->ops->max_inline)
		ret = zcx_op_copy_in(op);
	else
		ret = zcx_op_pin(op, ZCX_ACCESS_READ, handle);
	if (ret) {
		zcx_op_complete(op, ret, 0, 0);
		return;
	}
	conn->ops->send(conn, op);
}

/* zcx_ep_deliver(), in @ep's memory cgroup. */
static int zcx_ep_deliver_msg(struct zcx_ep *ep, u64 tag, void *data, u64 len, void *rx)
{
	struct zcx_op *msg, *recv;

	msg = kzalloc(sizeof(*msg), GFP_KERNEL_ACCOUNT);
	if (!msg)
		return -ENOMEM;
	msg->len = len;
	msg->tag = tag;
	msg->data = data;
	msg->rx = rx;
	mutex_lock(&ep->match_mutex);
	if (ep->dead) {
		mutex_unlock(&ep->match_mutex);
		kfree(msg);
		return -ECONNRESET;
	}
	recv = zcx_take_posted(ep, tag);
	if (!recv) {
		list_add_tail(&msg->link, &ep->unexpected);
		mutex_unlock(&ep->match_mutex);
		return 0;
	}
	mutex_unlock(&ep->match_mutex);
	/* A posted receive is pinned: its pages take the copy from here. */
	zcx_deliver(recv, msg, true);
	return 0;
}

/*
 * A message a backend received for @ep: @len bytes at @data, in its
 * buffer @rx, which the message holds until it is consumed (and the
 * backend gets it back through release_rx); or, with @data NULL, a
 * rendezvous message of @len bytes, which the backend pulls when it is
 * matched.  It goes to the first matching posted receive, or waits with
 * the unexpected ones.  0, or -ECONNRESET if @ep is gone or -ENOMEM (the
 * backend keeps @rx).  What it allocates, and a pull into a receive it
 * matches, are charged to @ep's memory cgroup.
 */
int zcx_ep_deliver(struct zcx_ep *ep, u64 tag, void *data, u64 len, void *rx)
{
	/* From a backend's completion handler: the receiver pays. */
	struct mem_cgroup *old_memcg = set_active_memcg(ep->memcg);
	int ret = zcx_ep_deliver_msg(ep, tag, data, len, rx);

	set_active_memcg(old_memcg);
	return ret;
}
EXPORT_SYMBOL_GPL(zcx_ep_deliver);

/*
 * Nothing that can fault on the caller's own memory runs under a peer's
 * lock or while it holds a peer's pages busy (a stalled fault, say on a
 * FUSE mapping, would stall the peer): a small payload is copied into a
 * kernel buffer first, a large buffer is pinned first.
 */
void zcx_op_send(struct zcx_op *op, struct zcx_conn *conn, u64 handle)
{
	struct zcx_ep *peer = conn->peer;
	bool small = op->len < READ_ONCE(zcx_zcopy_threshold);
	struct zcx_op *recv, *msg;
	int ret;

	if (conn->ops) {
		zcx_op_send_remote(op, conn, handle);
		return;
	}

	if (small) {
		ret = zcx_op_copy_in(op);
		if (ret)
			goto fail;
	} else {
		ret = zcx_op_pin(op, ZCX_ACCESS_READ, handle);
		if (ret)
			goto fail;
	}

	mutex_lock(&peer->match_mutex);
	ret = -ECONNRESET;
	if (peer->dead)
		goto fail_unlock;
	recv = zcx_take_posted(peer, op->tag);
	if (recv) {
		mutex_unlock(&peer->match_mutex);
		zcx_deliver(recv, op, false);
		return;
	}
	if (small && conn->eager < READ_ONCE(zcx_eager_credits)) {
		/* Eager: the message takes the bytes, the send is done. */
		ret = -ENOMEM;
		msg = kzalloc(sizeof(*msg), GFP_KERNEL_ACCOUNT);
		if (!msg)
			goto fail_unlock;
		msg->len = op->len;
		msg->tag = op->tag;
		msg->data = op->data;
		op->data = NULL;
		kref_get(&conn->ref);
		msg->conn = conn;
		conn->eager++;
		list_add_tail(&msg->link, &peer->unexpected);
		mutex_unlock(&peer->match_mutex);
		zcx_op_complete(op, 0, op->len, 0);
		return;
	}
	/*
	 * Rendezvous (large, or small beyond the credits): the send waits in
	 * the queue, and completes when a receive copies from it.
	 */
	list_add_tail(&op->link, &peer->unexpected);
	mutex_unlock(&peer->match_mutex);
	return;

fail_unlock:
	mutex_unlock(&peer->match_mutex);
fail:
	zcx_op_complete(op, ret, 0, 0);
}

/* The oldest unexpected message of @ep that receive @op matches. */
static struct zcx_op *zcx_find_unexpected(struct zcx_ep *ep, const struct zcx_op *op)
{
	struct zcx_op *msg;

	list_for_each_entry(msg, &ep->unexpected, link)
		if (zcx_tag_match(op, msg->tag))
			return msg;
	return NULL;
}

void zcx_op_recv(struct zcx_op *op, u64 handle)
{
	struct zcx_ep *ep = op->ep;
	bool faulted_in = false;
	struct zcx_op *msg;
	u64 n;
	int ret;

	for (;;) {
		mutex_lock(&ep->match_mutex);
		msg = zcx_find_unexpected(ep, op);
		/*
		 * An eager message into an unpinned buffer: copied with page
		 * faults off, then once more after faulting the buffer in.
		 * If that fails too (the buffer changed meanwhile, or memory
		 * the fault handler serves but such a copy cannot write),
		 * the buffer is pinned below, as for a sender's pages: either
		 * way a buffer that cannot take it leaves the message queued.
		 */
		n = msg ? min(op->len, msg->len) : 0;
		if (n && msg->data && !op->region) {
			if (zcx_deliver_eager_nofault(op, msg))
				return;
			if (!faulted_in) {
				/* @msg may go once we unlock. */
				mutex_unlock(&ep->match_mutex);
				if (fault_in_safe_writeable(u64_to_user_ptr(op->addr), n)) {
					zcx_op_complete(op, -EFAULT, 0, 0);
					return;
				}
				faulted_in = true;
				continue;
			}
		} else if (msg && (msg->data || !msg->len || !op->len || op->region)) {
			/* A sender's pages are only copied from into pinned ones. */
			list_del(&msg->link);
			zcx_eager_done(msg);
			mutex_unlock(&ep->match_mutex);
			zcx_deliver(op, msg, true);
			return;
		}
		if (!msg && op->need_sender && !ep->senders) {
			mutex_unlock(&ep->match_mutex);
			zcx_op_complete(op, -ECONNRESET, 0, 0);
			return;
		}
		if (!msg && (!op->len || op->region)) {
			list_add_tail(&op->link, &ep->posted);
			mutex_unlock(&ep->match_mutex);
			return;
		}
		mutex_unlock(&ep->match_mutex);
		ret = zcx_op_pin(op, ZCX_ACCESS_WRITE, handle);
		if (ret) {
			zcx_op_complete(op, ret, 0, 0);
			return;
		}
	}
}

/*
 * A connection to @peer is going away: if it was the last, no message can
 * come any more, and the receives posted there fail; if it was @refused
 * before it could carry one, only those waiting for a sender to be there
 * (ZCX_SQE_CONNECTED), which it alone let wait.  peer->match_mutex held;
 * the receives are moved to @done for the caller to complete.
 */
static void zcx_sender_gone_locked(struct zcx_ep *peer, bool refused, struct list_head *done)
{
	struct zcx_op *op, *tmp;

	if (--peer->senders)
		return;
	list_for_each_entry_safe(op, tmp, &peer->posted, link)
		if (!refused || op->need_sender)
			list_move_tail(&op->link, done);
}

/* One sender of @ep less (@refused: see above); receives may fail. */
void zcx_ep_sender_gone(struct zcx_ep *ep, bool refused)
{
	LIST_HEAD(done);

	mutex_lock(&ep->match_mutex);
	zcx_sender_gone_locked(ep, refused, &done);
	mutex_unlock(&ep->match_mutex);
	zcx_ops_complete(&done, -ECONNRESET);
}

/*
 * A connection made for a caller that cannot learn of it goes again,
 * unused: as refused, it fails only the peer's receives that it alone
 * let wait, not those posted to wait for any sender.
 */
void zcx_conn_undo(struct zcx_conn *conn)
{
	/*
	 * A remote peer learns only that the connection went, from the
	 * backend: as if its sender left (it cannot tell an undo).
	 */
	if (conn->peer)
		zcx_ep_sender_gone(conn->peer, true);
	zcx_conn_put(conn);
}

/* A new connection to @peer: one more endpoint that may send to it. */
void zcx_conn_count(struct zcx_conn *conn)
{
	mutex_lock(&conn->peer->match_mutex);
	conn->peer->senders++;
	mutex_unlock(&conn->peer->match_mutex);
}

/*
 * The endpoint is dead: complete what it queued at its peers and what
 * they queued at it (ECONNRESET; its own get no completion any more).
 */
void zcx_ep_cancel(struct zcx_ep *ep)
{
	struct zcx_op *op, *tmp;
	struct zcx_conn *conn;
	unsigned long i;
	LIST_HEAD(done);

	xa_for_each(&ep->conns, i, conn) {
		/* Sends to other nodes are the backend's: they fail with it. */
		if (!conn->peer)
			continue;
		mutex_lock(&conn->peer->match_mutex);
		list_for_each_entry_safe(op, tmp, &conn->peer->unexpected, link)
			if (op->ep == ep)
				list_move_tail(&op->link, &done);
		zcx_sender_gone_locked(conn->peer, false, &done);
		mutex_unlock(&conn->peer->match_mutex);
	}
	mutex_lock(&ep->match_mutex);
	list_splice_tail_init(&ep->posted, &done);
	list_for_each_entry_safe(op, tmp, &ep->unexpected, link) {
		zcx_eager_done(op);
		list_move_tail(&op->link, &done);
	}
	mutex_unlock(&ep->match_mutex);
	zcx_ops_complete(&done, -ECONNRESET);
}

/* An exposed range of a context's memory, by its key. */
struct zcx_exposed {
	struct hlist_node node;
	u64 rkey;
	u64 addr;
	u64 len;
	u32 rights;
	u64 handle;
};

static struct zcx_exposed *zcx_exposed_find_locked(struct zcx_ctx *ctx, u64 rkey)
{
	struct zcx_exposed *x;

	lockdep_assert_held(&ctx->expose_lock);
	hash_for_each_possible(ctx->exposed, x, node, rkey)
		if (x->rkey == rkey)
			return x;
	return NULL;
}

int zcx_expose(struct zcx_ctx *ctx, struct zcx_expose *arg)
{
	struct zcx_mr_reg reg = { .addr = arg->addr, .length = arg->length };
	struct zcx_exposed *x;
	int ret;

	if (arg->flags || !arg->rights || arg->rights & ~ZCX_REMOTE_ALL)
		return -EINVAL;
	reg.access = ZCX_ACCESS_READ;
	if (arg->rights & ZCX_REMOTE_WRITE)
		reg.access |= ZCX_ACCESS_WRITE;
	x = kzalloc(sizeof(*x), GFP_KERNEL_ACCOUNT);
	if (!x)
		return -ENOMEM;
	ret = zcx_mr_register(ctx, &reg);
	if (ret) {
		kfree(x);
		return ret;
	}
	/* A backend's worker may pin in the range for a peer (zcx_rma_target_pin()). */
	zcx_ctx_note_memlock(ctx);
	x->addr = arg->addr;
	x->len = arg->length;
	x->rights = arg->rights;
	/*
	 * Only the handle is kept: userspace may drop the registration's
	 * reference, so the region is found again (slot and generation
	 * checked) for each transfer.
	 */
	x->handle = reg.handle;
	spin_lock(&ctx->expose_lock);
	do {
		x->rkey = get_random_u64();
	} while (!x->rkey || zcx_exposed_find_locked(ctx, x->rkey));
	hash_add(ctx->exposed, &x->node, x->rkey);
	spin_unlock(&ctx->expose_lock);
	arg->rkey = x->rkey;
	return 0;
}

static void zcx_exposed_free(struct zcx_ctx *ctx, struct zcx_exposed *x)
{
	zcx_mr_deregister(ctx, x->handle);
	kfree(x);
}

int zcx_unexpose(struct zcx_ctx *ctx, u64 rkey)
{
	struct zcx_exposed *x;

	spin_lock(&ctx->expose_lock);
	x = zcx_exposed_find_locked(ctx, rkey);
	if (x)
		hash_del(&x->node);
	spin_unlock(&ctx->expose_lock);
	if (!x)
		return -ENOENT;
	/* Transfers under way hold the pages busy, not this. */
	zcx_exposed_free(ctx, x);
	return 0;
}

void zcx_exposed_destroy(struct zcx_ctx *ctx)
{
	struct zcx_exposed *x;
	struct hlist_node *tmp;
	HLIST_HEAD(list);
	int bkt;

	spin_lock(&ctx->expose_lock);
	hash_for_each_safe(ctx->exposed, bkt, tmp, x, node) {
		hash_del(&x->node);
		hlist_add_head(&x->node, &list);
	}
	spin_unlock(&ctx->expose_lock);
	hlist_for_each_entry_safe(x, tmp, &list, node)
		zcx_exposed_free(ctx, x);
}

/*
 * Resolve @rkey of @peer's context for [raddr, raddr + len) with @right
 * into a span: the exposed region's pages, held busy, or, if the range was
 * remapped since it was exposed, the context's mm (held, with the context
 * busy).  Peer's match_mutex held and peer alive, so its context is too.
 */
static int zcx_rma_target(struct zcx_ep *peer, u64 rkey, u64 raddr, u64 len, u32 right,
			  struct zcx_span *span)
{
	u32 access = right == ZCX_REMOTE_WRITE ? ZCX_ACCESS_WRITE : ZCX_ACCESS_READ;
	struct zcx_ctx *tctx = peer->ctx;
	struct zcx_region *r = NULL;
	struct zcx_exposed *x;
	int ret = 0;

	span->addr = raddr;
	span->write = right == ZCX_REMOTE_WRITE;
	spin_lock(&tctx->expose_lock);
	x = zcx_exposed_find_locked(tctx, rkey);
	if (!x || !(x->rights & right)) {
		ret = -EACCES;
	} else if (raddr < x->addr || raddr - x->addr > x->len ||
		   len > x->len - (raddr - x->addr)) {
		ret = -ERANGE;
	} else if (len) {
		spin_lock(&tctx->lock);
		r = zcx_handle_lookup_locked(tctx, x->handle, raddr & PAGE_MASK,
					     PAGE_ALIGN(raddr + len) - 1, access);
		if (r)
			zcx_region_busy_get_locked(r);
		spin_unlock(&tctx->lock);
		if (r) {
			span->region = r;
		} else if (mmget_not_zero(tctx->mm)) {
			/* Remapped since exposed: reach the memory there now. */
			atomic_inc(&tctx->busy);
			span->mm = tctx->mm;
		} else {
			ret = -ECONNRESET;
		}
	}
	spin_unlock(&tctx->expose_lock);
	return ret;
}

/*
 * PUT or GET.  Our buffer is pinned first, so the copy never faults on
 * our memory while it holds the peer's pages busy; to a peer on another
 * node, the backend moves the bytes from or to those pages.
 */
void zcx_op_rma(struct zcx_op *op, struct zcx_conn *conn, u64 remote_addr, u64 rkey,
		u64 handle)
{
	bool put = op->opcode == ZCX_OP_PUT;
	struct zcx_ep *peer = conn->peer;
	struct zcx_span remote = {};
	struct zcx_ctx *tctx;
	int ret;

	ret = zcx_op_pin(op, put ? ZCX_ACCESS_READ : ZCX_ACCESS_WRITE, handle);
	if (ret)
		goto out;
	if (conn->ops) {
		conn->ops->rma(conn, op, put, remote_addr, rkey);
		return;
	}
	tctx = peer->ctx;
	mutex_lock(&peer->match_mutex);
	ret = peer->dead ? -ECONNRESET :
	      zcx_rma_target(peer, rkey, remote_addr, op->len,
			     put ? ZCX_REMOTE_WRITE : ZCX_REMOTE_READ, &remote);
	mutex_unlock(&peer->match_mutex);
	if (ret || !op->len)
		goto out;

	if (put)
		ret = zcx_copy(remote, zcx_span_op(op), op->len, peer);
	else
		ret = zcx_copy(zcx_span_op(op), remote, op->len, peer);
	if (remote.region) {
		zcx_region_busy_put(remote.region);
	} else {
		mmput(remote.mm);
		zcx_ctx_busy_put(tctx);
	}
out:
	zcx_op_complete(op, ret, ret ? 0 : op->len, 0);
}

/*
 * A range of an endpoint's exposed memory, held for a backend's transfer
 * from or to another node: the region's pinned pages, held busy, or, if
 * the range was remapped since it was exposed, pages pinned now in the
 * owner's mm (@pages, @npages).
 */
struct zcx_rma_target {
	struct zcx_span span;
	struct zcx_ctx *ctx;
	struct page **pages;
	unsigned long npages;
	unsigned long charged;	/* pages charged to the owner's RLIMIT_MEMLOCK */
};

/*
 * Pin the @len bytes of @t's remapped range in its owner's mm, for as
 * long as the transfer lasts: up to 256 MiB at once (zcx_ib's limit), so
 * charged to the owner's RLIMIT_MEMLOCK like its cached regions.  (A transfer
 * on the node pins a page at a time, during its copy: not charged, as
 * process_vm_readv() does not.)
 */
static int zcx_rma_target_pin(struct zcx_rma_target *t, u64 len)
{
	unsigned long start = t->span.addr & PAGE_MASK;
	unsigned long n = (PAGE_ALIGN(t->span.addr + len) - start) >> PAGE_SHIFT;
	int ret;

	ret = zcx_pin_charge(t->ctx, n);
	if (ret)
		return ret;
	t->charged = n;
	t->pages = kvmalloc_array(n, sizeof(*t->pages), GFP_KERNEL_ACCOUNT);
	if (!t->pages)
		return -ENOMEM;
	return zcx_pin_remote(t->span.mm, start, n, t->span.write, t->pages, &t->npages);
}

static struct zcx_rma_target *zcx_rma_target_hold(struct zcx_ep *ep, u64 rkey, u64 addr,
						 u64 len, bool put)
{
	struct zcx_rma_target *t = kzalloc(sizeof(*t), GFP_KERNEL_ACCOUNT);
	int ret;

	if (!t)
		return ERR_PTR(-ENOMEM);
	t->ctx = ep->ctx;
	mutex_lock(&ep->match_mutex);
	ret = ep->dead ? -ECONNRESET :
	      zcx_rma_target(ep, rkey, addr, len, put ? ZCX_REMOTE_WRITE : ZCX_REMOTE_READ,
			     &t->span);
	mutex_unlock(&ep->match_mutex);
	if (!ret && t->span.mm)
		ret = zcx_rma_target_pin(t, len);
	if (ret) {
		zcx_rma_target_done(t);
		return ERR_PTR(ret);
	}
	return t;
}

/**
 * zcx_ep_rma_target - hold a range of exposed memory for another node.
 * @ep:		the endpoint the request came to ...
 * @rkey:	... naming the range its context exposed with this key;
 * @addr:	the start, in that range ...
 * @len:	... and the bytes;
 * @put:	for a PUT into it, else for a GET from it.
 *
 * Checks the key, the rights and the bounds as a PUT or GET on the node
 * does.  Returns the range, for zcx_rma_target_pages() until
 * zcx_rma_target_done(), or ERR_PTR(-EACCES, -ERANGE, -ECONNRESET if
 * @ep is gone, -EAGAIN or -EINTR as zcx_pin_remote(), -EFAULT, -ENOMEM,
 * also when pinning a remapped range would take the owner past its
 * RLIMIT_MEMLOCK).  What it allocates is charged to @ep's memory cgroup.
 */
struct zcx_rma_target *zcx_ep_rma_target(struct zcx_ep *ep, u64 rkey, u64 addr, u64 len,
					 bool put)
{
	/* A backend's worker asks: the owner pays. */
	struct mem_cgroup *old_memcg = set_active_memcg(ep->memcg);
	struct zcx_rma_target *t = zcx_rma_target_hold(ep, rkey, addr, len, put);

	set_active_memcg(old_memcg);
	return t;
}
EXPORT_SYMBOL_GPL(zcx_ep_rma_target);

/* The pages of @t, from the one holding its first byte, at @offset in it. */
struct page **zcx_rma_target_pages(const struct zcx_rma_target *t, u32 *offset)
{
	const struct zcx_region *r = t->span.region;

	*offset = offset_in_page(t->span.addr);
	if (!r)
		return t->pages;
	return r->pages + ((t->span.addr >> PAGE_SHIFT) - (r->node.start >> PAGE_SHIFT));
}
EXPORT_SYMBOL_GPL(zcx_rma_target_pages);

/*
 * Watch the exposed region holding @t's pages, as zcx_op_watch() does an
 * operation's: -ESTALE if @t's range was remapped since it was exposed
 * (its pages are pinned for this transfer only) or the region is no
 * longer valid.
 */
int zcx_rma_target_watch(const struct zcx_rma_target *t, struct zcx_region_watch *w)
{
	return t->span.region ? zcx_region_watch(t->span.region, w) : -ESTALE;
}
EXPORT_SYMBOL_GPL(zcx_rma_target_watch);

/* The backend asks its device for @n registrations of @t's pages. */
void zcx_rma_target_regs_posted(const struct zcx_rma_target *t, u32 n)
{
	zcx_ctx_regs_posted(t->ctx, n);
}
EXPORT_SYMBOL_GPL(zcx_rma_target_regs_posted);

/* The transfer is over (the device is done with the pages): let go of @t. */
void zcx_rma_target_done(struct zcx_rma_target *t)
{
	if (t->span.region) {
		zcx_region_busy_put(t->span.region);
	} else if (t->span.mm) {
		if (t->npages)
			unpin_user_pages_dirty_lock(t->pages, t->npages, t->span.write);
		kvfree(t->pages);
		zcx_pin_uncharge(t->ctx, t->charged);
		/* From a backend's completion handler: not the last exit_mmap(). */
		mmput_async(t->span.mm);
		zcx_ctx_busy_put(t->ctx);
	}
	kfree(t);
}
EXPORT_SYMBOL_GPL(zcx_rma_target_done);
