// SPDX-License-Identifier: GPL-2.0-only
/*
 * xfer.c - messages on a zcx_ib connection.
 *
 * Up to ZCX_IB_INLINE bytes, a message is one SEND (EAGER) into a receive
 * buffer the passive side posted, for which the sender holds a credit
 * (see "credits" below).  A message zcx.ko has not received yet keeps its
 * buffer, up to ZCX_IB_HOLD_MAX of them; the buffer is posted again once
 * the message is consumed.  Beyond that the message is copied out and
 * the sender told to send short messages as rendezvous ones too, so
 * nothing is lost, no memory grows without bound, and a message the
 * receiver waits for gets through however many inline ones wait, and
 * past up to ZCX_IB_RTS_COPY_BYTES of rendezvous requests.
 *
 * A longer message is a rendezvous: the sender registers its pinned pages
 * (or a short message's kernel buffer) for remote reading (mr.c) and SENDs
 * an RTS naming the segments, which the passive side copies out of its
 * buffer (while those not yet pulled take at most ZCX_IB_RTS_COPY_BYTES;
 * the next keep their buffers); once zcx.ko matched the RTS with a
 * receive, the receiver maps that receive's pinned pages (registering them
 * only if one READ cannot take them with the device's local DMA key), RDMA
 * READs the message straight into them and SENDs a FIN; the receive
 * completes once the READs have (and the receiver's own registrations for
 * this message are invalid, its mapping undone).  The sender then
 * invalidates its own registrations for the message, and only then does
 * the send complete, which lets go of its pages.  Registrations of a
 * cached region's pages are kept instead (kept.c): neither side makes or
 * invalidates them again for later messages in those pages, and they hold
 * the pages pinned until they go.
 * Either way, each side's device touches user pages only while they are
 * pinned: held busy by an operation or watched by a kept registration.
 *
 * Everything a connection posts is a job (struct zcx_ib_tx): a chain of
 * work requests, the last signalled, reserving its entries of the send
 * queue.  Jobs post in order; one that does not fit waits.  A job that
 * may hold registrations (every one but an EAGER) is on conn->held from
 * posting to its end, so that a teardown (zcx_ib_jobs_fail(), after
 * draining the queue pair) ends those the device never completed.
 */
#include <linux/dma-mapping.h>
#include <linux/highmem.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "zcx_ib.h"

static_assert(sizeof(struct zcx_ib_rts) + ZCX_IB_MAX_SEGS * sizeof(struct zcx_ib_seg) <=
	      ZCX_IB_INLINE);
/* The pages of a short send's kernel buffer (zcx_ib_op_pages()). */
#define ZCX_IB_KPAGES		(DIV_ROUND_UP(ZCX_IB_INLINE, PAGE_SIZE) + 1)
/* The registrations of one message map the longest PUT or GET. */
static_assert((u64)ZCX_IB_MAX_SEGS * ZCX_IB_MR_PAGES * PAGE_SIZE >= ZCX_IB_RMA_MAX);
/* A segment's 32-bit length holds all that one MR maps. */
static_assert((u64)ZCX_IB_MR_PAGES * ZCX_IB_SG_MAX <= U32_MAX);
/*
 * At the fewest buffers too, inline messages not received yet leave two:
 * one for the next message (copied out then) and the TAKEN's ...
 */
static_assert(ZCX_IB_HOLD_MAX(ZCX_IB_RX_MIN) <= ZCX_IB_RX_MIN - 2);
/* ... and the sender may queue one for credits, which come in batches. */
static_assert(ZCX_IB_EAGER_QUEUE(ZCX_IB_RX_MIN) >= 1 && ZCX_IB_CREDIT_LOW(ZCX_IB_RX_MIN) >= 1);

/* --- receive buffers ------------------------------------------------------ */

/*
 * A buffer takes a message in two parts: its header, and its body, whose
 * ZCX_IB_INLINE bytes on an accepted connection then fill a kmalloc()
 * size of their own (header and body in one would take 8 KiB and a bit,
 * which the allocator rounds up).  The headers of a connection's buffers
 * are one array, a slot each rounded up to dma_get_cache_alignment() (so
 * that none shares a cache line where DMA must not), mapped once for the
 * connection's life and freed with it (held messages point into it); a
 * body is mapped while posted.  A reply's body is too small for an
 * allocation and a mapping of its own, which would share cache lines
 * with other buffers: it follows its header in the slot.  An accepted
 * connection's buffers are charged to its endpoint's owner (conn.c).
 */

/* Bytes of a buffer's body kept in its header's slot: a reply's all, a message's none. */
static u32 zcx_ib_rx_slot_body(const struct zcx_ib_conn *conn)
{
	return conn->passive ? 0 : conn->rx_size;
}

/* Bytes of a slot the device writes. */
static u32 zcx_ib_rx_slot_len(const struct zcx_ib_conn *conn)
{
	return sizeof(struct zcx_ib_hdr) + zcx_ib_rx_slot_body(conn);
}

static struct zcx_ib_rx *zcx_ib_rx_alloc(struct zcx_ib_conn *conn, u32 slot, size_t stride)
{
	struct zcx_ib_rx *rx = kmalloc(sizeof(*rx), GFP_KERNEL_ACCOUNT);

	if (!rx)
		return NULL;
	rx->hdr = conn->rx_hdrs + slot * stride;
	rx->hdr_dma = conn->rx_hdrs_dma + slot * stride;
	if (zcx_ib_rx_slot_body(conn))
		rx->buf = rx->hdr + 1;
	else
		rx->buf = kmalloc(conn->rx_size, GFP_KERNEL_ACCOUNT);
	if (!rx->buf) {
		kfree(rx);
		return NULL;
	}
	rx->conn = conn;
	rx->copy = false;
	rx->unreceived = false;
	rx->rts_copy = 0;
	return rx;
}

/* @rx is not posted (any more). */
static void zcx_ib_rx_free(struct zcx_ib_rx *rx)
{
	if (rx->copy)
		kfree(rx->hdr);
	if (rx->copy || !zcx_ib_rx_slot_body(rx->conn))
		kfree(rx->buf);
	kfree(rx);
}

/* Once the CQ is freed: the device writes, and a handler syncs, no more headers. */
void zcx_ib_rx_hdrs_unmap(struct zcx_ib_conn *conn)
{
	if (conn->rx_hdrs_size)
		ib_dma_unmap_single(conn->ibdev, conn->rx_hdrs_dma, conn->rx_hdrs_size,
				    DMA_FROM_DEVICE);
	conn->rx_hdrs_size = 0;
}

static void zcx_ib_rx_done(struct ib_cq *cq, struct ib_wc *wc);

/* @rx was posted: the device is done with it. */
static void zcx_ib_rx_unmap(struct zcx_ib_conn *conn, struct zcx_ib_rx *rx)
{
	ib_dma_sync_single_for_cpu(conn->ibdev, rx->hdr_dma, zcx_ib_rx_slot_len(conn),
				   DMA_FROM_DEVICE);
	if (!zcx_ib_rx_slot_body(conn))
		ib_dma_unmap_single(conn->ibdev, rx->dma, conn->rx_size, DMA_FROM_DEVICE);
}

/* Post @rx; conn->lock held.  0, or -errno (the caller keeps @rx). */
static int zcx_ib_rx_post_locked(struct zcx_ib_conn *conn, struct zcx_ib_rx *rx)
{
	struct ib_recv_wr wr = {};
	struct ib_sge sge[2];
	int ret;

	if (conn->state == ZCX_IB_DEAD)
		return -ECONNRESET;
	sge[0].addr = rx->hdr_dma;
	sge[0].length = zcx_ib_rx_slot_len(conn);
	sge[0].lkey = sge[1].lkey = conn->pd->local_dma_lkey;
	wr.num_sge = 1;
	if (!zcx_ib_rx_slot_body(conn)) {
		rx->dma = ib_dma_map_single(conn->ibdev, rx->buf, conn->rx_size, DMA_FROM_DEVICE);
		if (ib_dma_mapping_error(conn->ibdev, rx->dma))
			return -ENOMEM;
		sge[1].addr = rx->dma;
		sge[1].length = conn->rx_size;
		wr.num_sge = 2;
	}
	ib_dma_sync_single_for_device(conn->ibdev, rx->hdr_dma, sge[0].length, DMA_FROM_DEVICE);
	rx->cqe.done = zcx_ib_rx_done;
	wr.wr_cqe = &rx->cqe;
	wr.sg_list = sge;
	ret = ib_post_recv(conn->qp, &wr, NULL);
	if (ret)
		zcx_ib_rx_unmap(conn, rx);
	return ret;
}

static void zcx_ib_credit_post_locked(struct zcx_ib_conn *conn);

/*
 * Post @rx again, or free it if the connection is dead.  A buffer of an
 * accepted connection is then owed to the sender, who waits for its
 * credit (and so is never told "receiver not ready").
 */
static void zcx_ib_rx_repost(struct zcx_ib_conn *conn, struct zcx_ib_rx *rx)
{
	int ret;

	spin_lock(&conn->lock);
	ret = zcx_ib_rx_post_locked(conn, rx);
	if (!ret && conn->passive) {
		conn->owed++;
		zcx_ib_credit_post_locked(conn);
	}
	spin_unlock(&conn->lock);
	if (!ret)
		return;
	zcx_ib_rx_free(rx);
	/* A live connection cannot lose a buffer: its credit would be gone. */
	if (ret != -ECONNRESET)
		zcx_ib_conn_schedule_kill(conn);
}

/* zcx.ko does not hold the EAGER message or RTS in @rx any more. */
static void zcx_ib_rx_received(struct zcx_ib_rx *rx)
{
	struct zcx_ib_conn *conn = rx->conn;

	if (!rx->unreceived && !rx->rts_copy)
		return;
	spin_lock(&conn->lock);
	conn->unreceived -= rx->unreceived;
	conn->rts_copied -= rx->rts_copy;
	spin_unlock(&conn->lock);
	rx->unreceived = false;
	rx->rts_copy = 0;
}

/*
 * A copy of the message in @rx (its header and @len bytes of body), whose
 * buffer is posted again at once; or @rx itself if no memory can be had
 * for the copy.  The receiver pays for it.
 */
static struct zcx_ib_rx *zcx_ib_rx_copy(struct zcx_ib_conn *conn, struct zcx_ib_rx *rx, u32 len)
{
	/* Not worth reclaiming for, in the completion handler: @rx will do. */
	gfp_t gfp = GFP_KERNEL_ACCOUNT | __GFP_NORETRY | __GFP_NOWARN;
	struct mem_cgroup *old_memcg = set_active_memcg(zcx_ep_memcg(conn->ep));
	struct zcx_ib_rx *copy = kzalloc(sizeof(*copy), gfp);

	if (copy) {
		copy->copy = true;
		copy->hdr = kmemdup(rx->hdr, sizeof(*rx->hdr), gfp);
		copy->buf = kmemdup(rx->buf, len, gfp);
	}
	set_active_memcg(old_memcg);
	if (!copy)
		return rx;
	if (!copy->hdr || !copy->buf) {
		zcx_ib_rx_free(copy);
		return rx;
	}
	copy->conn = conn;
	copy->unreceived = rx->unreceived;
	copy->rts_copy = rx->rts_copy;
	rx->unreceived = false;
	rx->rts_copy = 0;
	zcx_ib_rx_repost(conn, rx);
	return copy;
}

/*
 * zcx.ko consumed the message in @rx (or a PUT or GET in it was served):
 * post the buffer again, or free it, or the copy.
 */
void zcx_ib_release_rx(void *arg)
{
	struct zcx_ib_rx *rx = arg;
	struct zcx_ib_conn *conn = rx->conn;

	zcx_ib_rx_received(rx);
	if (rx->copy)
		zcx_ib_rx_free(rx);
	else
		zcx_ib_rx_repost(conn, rx);
	zcx_ib_conn_put(conn);
}

/* --- credits --------------------------------------------------------------- */

/*
 * Flow control.  The active side sends a message only with a credit: it
 * starts with conn->rx_depth, one per buffer of the passive side (whose
 * welcome says how many), and gets them back once the passive side
 * posted the buffers again, in a CREDIT message that carries all owed so
 * far; one is in flight at a time, the next carrying what was owed
 * meanwhile.  So no SEND ever meets a receiver without a buffer:
 * receiver-not-ready retries, besides being slow, make Soft-RoCE replay
 * the registrations queued behind the SEND, which then fail.
 *
 * Credits go back in batches, not one per message (which costs a SEND,
 * its acknowledgement and two completions, work that runs on the CPUs
 * the applications wait on): once the sender may have fewer than
 * ZCX_IB_CREDIT_LOW left, counting every buffer it filled and has not had
 * back.  So a sender that keeps pace never waits, and buffers held by
 * unexpected messages never keep back owed credits the sender needs (the
 * check runs as messages arrive, too).  Inline ones hold at most
 * ZCX_IB_HOLD_MAX buffers, rendezvous requests none until their copies
 * reach ZCX_IB_RTS_COPY_BYTES (zcx_ib_rx_done()), so credits keep coming
 * back however many of them wait, up to there; the CREDIT telling the
 * sender that it may send inline again goes at once.
 *
 * The active side queues at most ZCX_IB_EAGER_QUEUE inline messages for
 * credits (more go as RTS).
 *
 * FINs come back into the active side's reply buffers, which it posts
 * again as it takes them.  The passive side has at most ZCX_IB_FIN_MAX
 * out that the active side has not said it took, in TAKEN messages sent
 * once it took half as many: so there is a buffer for every FIN, and the
 * active side may have any number of rendezvous messages, puts and gets
 * waiting for their FIN, which hold no room in its send queue meanwhile
 * (zcx_ib_rts_sent()).  A pull or serve job waits for room for its FIN,
 * its moves with it.  A TAKEN needs a credit too, and other messages
 * leave it the last one: buffers held by messages whose answer waits for
 * room (a PUT, a GET, or an RTS that could not be copied out) then never
 * keep it from coming.
 */

/* Send the connection's control message with @n and @flags; conn->lock held. */
static bool zcx_ib_ctl_send_locked(struct zcx_ib_conn *conn, u32 n, u8 flags)
{
	struct zcx_ib_tx *tx = conn->ctl_tx;
	struct zcx_ib_hdr *hdr = tx->msg;

	hdr->credits = cpu_to_le16(n);
	hdr->flags = flags;
	ib_dma_sync_single_for_device(conn->ibdev, tx->msg_dma, tx->msg_len, DMA_TO_DEVICE);
	if (ib_post_send(conn->qp, &tx->wr[0].send, NULL)) {
		zcx_ib_conn_schedule_kill(conn);
		return false;
	}
	conn->ctl_busy = true;
	conn->sq_used++;
	return true;
}

/* Whether the control message may go now. */
static bool zcx_ib_ctl_ready_locked(const struct zcx_ib_conn *conn)
{
	return conn->ctl_tx && !conn->ctl_busy && conn->state == ZCX_IB_LIVE &&
	       conn->sq_used < conn->sq_depth;
}

static void zcx_ib_credit_post_locked(struct zcx_ib_conn *conn)
{
	bool eager_off = conn->unreceived >= ZCX_IB_HOLD_MAX(conn->rx_depth);

	if (!conn->owed || !zcx_ib_ctl_ready_locked(conn))
		return;
	/* Batched, unless the sender is to learn that it may send inline again. */
	if (conn->rx_depth - conn->lent >= ZCX_IB_CREDIT_LOW(conn->rx_depth) &&
	    eager_off == conn->eager_off)
		return;
	if (!zcx_ib_ctl_send_locked(conn, conn->owed, eager_off ? ZCX_IB_EAGER_OFF : 0))
		return;
	conn->lent -= conn->owed;
	conn->owed = 0;
	conn->eager_off = eager_off;
}

/* Active: tell the FINs taken, once half of what the receiver may have out. */
static void zcx_ib_taken_post_locked(struct zcx_ib_conn *conn)
{
	if (conn->fins_taken < ZCX_IB_FIN_MAX / 2 || !conn->credits ||
	    !zcx_ib_ctl_ready_locked(conn))
		return;
	if (!zcx_ib_ctl_send_locked(conn, conn->fins_taken, 0))
		return;
	conn->credits--;
	conn->fins_taken = 0;
}

static void zcx_ib_ctl_post_locked(struct zcx_ib_conn *conn)
{
	if (conn->passive)
		zcx_ib_credit_post_locked(conn);
	else
		zcx_ib_taken_post_locked(conn);
}

/*
 * A completion's outcome: 0, or -ECONNRESET if its work request failed.
 * That leaves the queue pair in the error state, which the device need
 * not announce (Soft-RoCE does not after a peer's access error), flushing
 * what is posted: a live connection goes.  One still connecting is left
 * to its CM event (Soft-iWARP flushes the receives of a rejected one
 * before it reports the rejection), which fails the connect if it was
 * established; one being torn down is going already.
 */
static int zcx_ib_wc_result(struct zcx_ib_conn *conn, const struct ib_wc *wc)
{
	bool live;

	if (wc->status == IB_WC_SUCCESS)
		return 0;
	spin_lock(&conn->lock);
	live = conn->state == ZCX_IB_LIVE;
	if (conn->state == ZCX_IB_CONNECTING)
		conn->failed_connecting = true;
	spin_unlock(&conn->lock);
	if (live)
		zcx_ib_conn_schedule_kill(conn);
	return -ECONNRESET;
}

static void zcx_ib_ctl_sent(struct ib_cq *cq, struct ib_wc *wc)
{
	struct zcx_ib_tx *tx = container_of(wc->wr_cqe, struct zcx_ib_tx, cqe);
	struct zcx_ib_conn *conn = tx->conn;

	zcx_ib_wc_result(conn, wc);
	spin_lock(&conn->lock);
	conn->ctl_busy = false;
	conn->sq_used--;
	zcx_ib_ctl_post_locked(conn);
	spin_unlock(&conn->lock);
}


/* Post @depth receive buffers on @conn, once. */
int zcx_ib_rx_fill(struct zcx_ib_conn *conn, u32 depth)
{
	size_t stride = ALIGN(zcx_ib_rx_slot_len(conn), dma_get_cache_alignment());
	struct zcx_ib_rx *rx;
	int ret = 0;
	u32 i;

	conn->rx_hdrs = kcalloc(depth, stride, GFP_KERNEL_ACCOUNT);
	if (!conn->rx_hdrs)
		return -ENOMEM;
	conn->rx_hdrs_dma = ib_dma_map_single(conn->ibdev, conn->rx_hdrs, depth * stride,
					      DMA_FROM_DEVICE);
	if (ib_dma_mapping_error(conn->ibdev, conn->rx_hdrs_dma))
		return -ENOMEM;
	conn->rx_hdrs_size = depth * stride;
	for (i = 0; i < depth && !ret; i++) {
		rx = zcx_ib_rx_alloc(conn, i, stride);
		if (!rx)
			return -ENOMEM;
		spin_lock(&conn->lock);
		ret = zcx_ib_rx_post_locked(conn, rx);
		spin_unlock(&conn->lock);
		if (ret)
			zcx_ib_rx_free(rx);
	}
	return ret;
}

/* --- jobs ------------------------------------------------------------------ */

static void zcx_ib_sq_release(struct zcx_ib_conn *conn, u32 wrs);

/* Link the first @n work requests of @wr into a chain. */
static void zcx_ib_wr_chain(union ib_wr_any *wr, u32 n)
{
	u32 i;

	for (i = 0; i + 1 < n; i++)
		wr[i].send.next = &wr[i + 1].send;
}

/*
 * Before building a job on @conn's PD and device: false if the connection
 * is dead (they may be gone), else up_read(&conn->building) when built.
 */
bool zcx_ib_build_begin(struct zcx_ib_conn *conn)
{
	down_read(&conn->building);
	if (READ_ONCE(conn->state) == ZCX_IB_LIVE)
		return true;
	up_read(&conn->building);
	return false;
}

/* A job of @type for @op, charged to the process it works for. */
static struct zcx_ib_tx *zcx_ib_job_alloc(struct zcx_ib_conn *conn, enum zcx_ib_job_type type,
					  struct zcx_op *op)
{
	struct zcx_ib_tx *tx = kzalloc(sizeof(*tx), GFP_KERNEL_ACCOUNT);

	if (!tx)
		return NULL;
	tx->conn = conn;
	tx->type = type;
	tx->op = op;
	tx->wr = &tx->wr1;
	tx->sge = tx->sge2;
	tx->msg = tx->small;
	return tx;
}

/* Room for @nwr work requests and @nsge scatter entries in @tx. */
static int zcx_ib_job_wrs(struct zcx_ib_tx *tx, u32 nwr, u32 nsge)
{
	union ib_wr_any *wr;
	struct ib_sge *sge;

	tx->wrs = nwr;
	if (nwr > 1) {
		wr = kcalloc(nwr, sizeof(*wr), GFP_KERNEL_ACCOUNT);
		if (!wr)
			return -ENOMEM;
		tx->wr = wr;
	}
	if (nsge > ARRAY_SIZE(tx->sge2)) {
		sge = kcalloc(nsge, sizeof(*sge), GFP_KERNEL_ACCOUNT);
		if (!sge)
			return -ENOMEM;
		tx->sge = sge;
	}
	zcx_ib_wr_chain(tx->wr, nwr);
	return 0;
}

/* Map the message @tx sends (tx->msg, tx->msg_len bytes). */
static int zcx_ib_msg_map(struct zcx_ib_conn *conn, struct zcx_ib_tx *tx)
{
	tx->msg_dma = ib_dma_map_single(conn->ibdev, tx->msg, tx->msg_len, DMA_TO_DEVICE);
	if (ib_dma_mapping_error(conn->ibdev, tx->msg_dma)) {
		tx->msg_dma = 0;
		return -ENOMEM;
	}
	return 0;
}

/*
 * The end of @tx, off every list: undo its mappings and registrations,
 * complete its operation with @res and free it.
 */
void zcx_ib_job_end(struct zcx_ib_tx *tx, int res)
{
	struct zcx_ib_conn *conn = tx->conn;
	struct zcx_ib_rx *rx = tx->rx;

	if (tx->started)
		zcx_ib_sq_release(conn, tx->wrs);
	if (tx->msg_dma)
		ib_dma_unmap_single(conn->ibdev, tx->msg_dma, tx->msg_len, DMA_TO_DEVICE);
	if (tx->data_dma)
		ib_dma_unmap_single(conn->ibdev, tx->data_dma, tx->len, DMA_TO_DEVICE);
	zcx_ib_reg_unmap(conn, &tx->reg);
	if (tx->type == ZCX_IB_JOB_UNREG)
		zcx_ib_kept_free(tx->kept);
	else if (tx->kept)
		zcx_ib_kept_put(conn, tx->kept);
	if (tx->type == ZCX_IB_JOB_PULL) {
		if (tx->op)
			zcx_op_pulled(tx->op, res, tx->len, tx->tag);
	} else if (tx->type == ZCX_IB_JOB_EAGER || tx->type == ZCX_IB_JOB_RTS) {
		zcx_op_complete(tx->op, res, res ? 0 : tx->len, 0);
	} else if (tx->target) {
		zcx_rma_target_done(tx->target);
	}
	if (tx->wr != &tx->wr1)
		kfree(tx->wr);
	if (tx->sge != tx->sge2)
		kfree(tx->sge);
	if (tx->msg != tx->small)
		kfree(tx->msg);
	kfree(tx->inv);
	kfree(tx);
	/* Last: the buffer may hold the last reference to the connection. */
	if (rx)
		zcx_ib_release_rx(rx);
}

/* A message to the passive side takes a credit. */
static bool zcx_ib_job_takes_credit(const struct zcx_ib_tx *tx)
{
	return tx->type == ZCX_IB_JOB_EAGER || tx->type == ZCX_IB_JOB_RTS;
}

/* A pull or serve job ends with a FIN to the active side. */
static bool zcx_ib_job_sends_fin(const struct zcx_ib_tx *tx)
{
	return tx->type == ZCX_IB_JOB_PULL || tx->type == ZCX_IB_JOB_SERVE;
}

/*
 * Whether @tx may be posted now: room in the send queue, and a credit, or
 * room for its FIN.
 */
static bool zcx_ib_job_fits_locked(const struct zcx_ib_conn *conn, const struct zcx_ib_tx *tx)
{
	/* The last credit is the TAKEN's (see "credits"). */
	return conn->sq_used + tx->wrs <= conn->sq_depth &&
	       (conn->credits > 1 || !zcx_ib_job_takes_credit(tx)) &&
	       (conn->fins_out < ZCX_IB_FIN_MAX || !zcx_ib_job_sends_fin(tx));
}

/*
 * Post @tx's chain.  conn->lock held.  A job with registrations goes on
 * conn->held first; one that fails to post (the connection is broken,
 * and part of the chain may be posted) goes there too, for the teardown
 * the caller schedules.
 */
static int zcx_ib_job_start_locked(struct zcx_ib_conn *conn, struct zcx_ib_tx *tx)
{
	int ret;

	/*
	 * Accounted before posting: once posted, the job may complete and be
	 * freed at once (an EAGER job's completion takes no lock).
	 */
	tx->started = true;
	conn->sq_used += tx->wrs;
	if (zcx_ib_job_takes_credit(tx))
		conn->credits--;
	if (zcx_ib_job_sends_fin(tx))
		conn->fins_out++;
	if (tx->type != ZCX_IB_JOB_EAGER)
		list_add_tail(&tx->link, &conn->held);
	/* Posted from now on: a registration it makes may be used after it. */
	if (tx->kept && tx->type != ZCX_IB_JOB_UNREG && !tx->kept->cached)
		zcx_ib_kept_posted_locked(conn, tx->kept);
	ret = ib_post_send(conn->qp, &tx->wr[0].send, NULL);
	if (ret) {
		tx->started = false;
		conn->sq_used -= tx->wrs;
		if (zcx_ib_job_takes_credit(tx))
			conn->credits++;
		if (zcx_ib_job_sends_fin(tx))
			conn->fins_out--;
		if (tx->type == ZCX_IB_JOB_EAGER)
			list_add_tail(&tx->link, &conn->held);
	}
	return ret;
}

/*
 * Post @tx now, if the queue has room and no job or invalidation waits
 * before it, or let it wait.  0, or -errno: @tx is not ours any more
 * either way, but on an error the caller schedules the teardown.
 */
static int zcx_ib_job_submit(struct zcx_ib_conn *conn, struct zcx_ib_tx *tx)
{
	int ret = 0;

	spin_lock(&conn->lock);
	if (conn->state != ZCX_IB_LIVE) {
		spin_unlock(&conn->lock);
		zcx_ib_job_end(tx, -ECONNRESET);
		return 0;
	}
	if (list_empty(&conn->tx_waiting) && list_empty(&conn->inv_waiting) &&
	    zcx_ib_job_fits_locked(conn, tx)) {
		ret = zcx_ib_job_start_locked(conn, tx);
	} else {
		list_add_tail(&tx->link, &conn->tx_waiting);
		if (zcx_ib_job_takes_credit(tx))
			WRITE_ONCE(conn->credit_waiters, conn->credit_waiters + 1);
	}
	spin_unlock(&conn->lock);
	return ret;
}

/* Post @tx's invalidations, which the send queue has room for; conn->lock held. */
static void zcx_ib_inv_post_locked(struct zcx_ib_conn *conn, struct zcx_ib_tx *tx)
{
	tx->wrs = tx->reg.nmr;
	conn->sq_used += tx->wrs;
	/* Not posted: the teardown ends it, the queue pair being dead. */
	if (conn->state != ZCX_IB_LIVE || ib_post_send(conn->qp, &tx->inv[0].send, NULL))
		zcx_ib_conn_schedule_kill(conn);
}

/*
 * Post @tx's invalidations (its own registrations', or, for UNREG, the
 * kept one's) now if the send queue has room and none wait before them,
 * else let them wait, ahead of any job.  conn->lock held.
 */
static void zcx_ib_inv_queue_locked(struct zcx_ib_conn *conn, struct zcx_ib_tx *tx)
{
	if (list_empty(&conn->inv_waiting) && conn->sq_used + tx->reg.nmr <= conn->sq_depth)
		zcx_ib_inv_post_locked(conn, tx);
	else
		list_add_tail(&tx->inv_link, &conn->inv_waiting);
}

/*
 * Give back @wrs entries of the send queue and post what waited: the
 * control message, invalidations, jobs.
 */
static void zcx_ib_sq_release(struct zcx_ib_conn *conn, u32 wrs)
{
	struct zcx_ib_tx *tx;
	int ret = 0;

	spin_lock(&conn->lock);
	conn->sq_used -= wrs;
	/* The control message first: a CREDIT or TAKEN unblocks the peer. */
	zcx_ib_ctl_post_locked(conn);
	/* Then invalidations: what we sent waits on them. */
	while (conn->state == ZCX_IB_LIVE) {
		tx = list_first_entry_or_null(&conn->inv_waiting, struct zcx_ib_tx, inv_link);
		if (!tx || conn->sq_used + tx->reg.nmr > conn->sq_depth)
			break;
		list_del(&tx->inv_link);
		zcx_ib_inv_post_locked(conn, tx);
	}
	while (!ret && conn->state == ZCX_IB_LIVE) {
		tx = list_first_entry_or_null(&conn->tx_waiting, struct zcx_ib_tx, link);
		if (!tx || !zcx_ib_job_fits_locked(conn, tx))
			break;
		list_del(&tx->link);
		if (zcx_ib_job_takes_credit(tx))
			WRITE_ONCE(conn->credit_waiters, conn->credit_waiters - 1);
		ret = zcx_ib_job_start_locked(conn, tx);
	}
	spin_unlock(&conn->lock);
	if (ret)
		zcx_ib_conn_schedule_kill(conn);
}

/*
 * The queue pair is drained (nothing of ours is posted any more): end the
 * jobs that wait or that the device left unfinished.
 */
void zcx_ib_jobs_fail(struct zcx_ib_conn *conn)
{
	struct zcx_ib_tx *tx, *tmp;
	LIST_HEAD(jobs);

	spin_lock(&conn->lock);
	list_splice_init(&conn->tx_waiting, &jobs);
	WRITE_ONCE(conn->credit_waiters, 0);
	/* Those are on conn->held too. */
	INIT_LIST_HEAD(&conn->inv_waiting);
	list_splice_tail_init(&conn->held, &jobs);
	spin_unlock(&conn->lock);
	list_for_each_entry_safe(tx, tmp, &jobs, link) {
		list_del(&tx->link);
		zcx_ib_job_end(tx, -ECONNRESET);
	}
}

/* Unsignalled work requests complete only when flushed or failed. */
void zcx_ib_quiet_done(struct ib_cq *cq, struct ib_wc *wc)
{
	zcx_ib_wc_result(container_of(wc->wr_cqe, struct zcx_ib_conn, quiet_cqe), wc);
}

/* A job's last work request completed: so did the job. */
static void zcx_ib_job_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct zcx_ib_tx *tx = container_of(wc->wr_cqe, struct zcx_ib_tx, cqe);
	struct zcx_ib_conn *conn = tx->conn;
	int res = zcx_ib_wc_result(conn, wc);

	if (tx->type != ZCX_IB_JOB_EAGER) {
		spin_lock(&conn->lock);
		list_del(&tx->link);
		spin_unlock(&conn->lock);
	}
	zcx_ib_job_end(tx, res ? res : tx->status);
}

/*
 * A pull's READs completed, and the invalidations of its own registrations
 * if any: the receive has its data and our device is done with its pages,
 * so it completes now rather than once the FIN is acknowledged, a wire
 * round trip later.  Completions come in order: this one before the FIN's.
 */
static void zcx_ib_pull_moved(struct ib_cq *cq, struct ib_wc *wc)
{
	struct zcx_ib_tx *tx = container_of(wc->wr_cqe, struct zcx_ib_tx, moved_cqe);
	int res = zcx_ib_wc_result(tx->conn, wc);

	/*
	 * After a failure the registrations may still be valid: they, and
	 * so the receive, wait for the job's last completion, flushed once
	 * the queue pair is in error and reaches them no more.
	 */
	if (res)
		return;
	/* Unmapped first: that syncs the pages for the CPU (bounce buffers). */
	zcx_ib_reg_unmap(tx->conn, &tx->reg);
	zcx_op_pulled(tx->op, tx->status, tx->len, tx->tag);
	tx->op = NULL;
}

/* --- keepalive ----------------------------------------------------------- */

/*
 * A queue pair learns that its peer is gone only when what it sends is
 * not acknowledged, so an idle one (a receiver, or a sender waiting for
 * a FIN) would never learn it.  Every keepalive_ms a live connection
 * sends a zero-byte RDMA WRITE, which needs no buffer, key or credit of
 * the peer's, only its acknowledgement: once the peer's node is gone, the
 * retries run out (the first ACK timeout and six more, about 30 s), the
 * completion fails and the connection is torn down, failing what waits on
 * it.
 */
static void zcx_ib_keepalive_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct zcx_ib_conn *conn = container_of(wc->wr_cqe, struct zcx_ib_conn, keepalive_cqe);

	zcx_ib_wc_result(conn, wc);
	spin_lock(&conn->lock);
	conn->keepalive_busy = false;
	spin_unlock(&conn->lock);
	zcx_ib_sq_release(conn, 1);
}

static void zcx_ib_keepalive_work(struct work_struct *work)
{
	struct zcx_ib_conn *conn = container_of(to_delayed_work(work), struct zcx_ib_conn,
						keepalive);
	struct ib_rdma_wr wr = {
		.wr.opcode = IB_WR_RDMA_WRITE,
		.wr.send_flags = IB_SEND_SIGNALED,
		.wr.wr_cqe = &conn->keepalive_cqe,
	};
	bool broken = false;

	spin_lock(&conn->lock);
	if (conn->state != ZCX_IB_LIVE) {
		spin_unlock(&conn->lock);
		return;
	}
	/* The last one still going, or a full queue: checking already. */
	if (!conn->keepalive_busy && conn->sq_used < conn->sq_depth) {
		conn->sq_used++;
		conn->keepalive_busy = true;
		if (ib_post_send(conn->qp, &wr.wr, NULL)) {
			conn->sq_used--;
			conn->keepalive_busy = false;
			broken = true;
		}
	}
	if (!broken)
		zcx_ib_keepalive_arm(conn);
	spin_unlock(&conn->lock);
	if (broken)
		zcx_ib_conn_schedule_kill(conn);
}

void zcx_ib_keepalive_init(struct zcx_ib_conn *conn)
{
	INIT_DELAYED_WORK(&conn->keepalive, zcx_ib_keepalive_work);
	conn->keepalive_cqe.done = zcx_ib_keepalive_done;
}

/*
 * Check @conn's peer in keepalive_ms; the teardown cancels it.  Under
 * conn->lock, so that a check armed with the period of before a write of
 * keepalive_ms is one the write's zcx_ib_keepalive_rearm_all() sees.
 */
void zcx_ib_keepalive_arm(struct zcx_ib_conn *conn)
{
	unsigned int ms = READ_ONCE(zcx_ib_keepalive_ms);

	lockdep_assert_held(&conn->lock);
	if (ms && conn->state == ZCX_IB_LIVE)
		queue_delayed_work(system_wq, &conn->keepalive, msecs_to_jiffies(ms));
}

/* --- work requests ------------------------------------------------------- */

/* @tx's message as the SEND @wr, signalled, with @sge its first entry. */
static void zcx_ib_wr_send(struct zcx_ib_conn *conn, struct zcx_ib_tx *tx, struct ib_send_wr *wr,
			   struct ib_sge *sge, u32 nsge)
{
	wr->opcode = IB_WR_SEND;
	wr->sg_list = sge;
	wr->num_sge = nsge;
	wr->send_flags = IB_SEND_SIGNALED;
	wr->wr_cqe = &tx->cqe;
	sge->addr = tx->msg_dma;
	sge->length = tx->msg_len;
	sge->lkey = conn->pd->local_dma_lkey;
}

/*
 * A connection's control message, made once: an accepted one's CREDIT,
 * an outgoing one's TAKEN.  0 or -errno.
 */
int zcx_ib_ctl_init(struct zcx_ib_conn *conn)
{
	struct zcx_ib_tx *tx = zcx_ib_job_alloc(conn, ZCX_IB_JOB_CTL, NULL);
	struct zcx_ib_hdr *hdr;

	if (!tx)
		return -ENOMEM;
	hdr = tx->msg;
	hdr->type = conn->passive ? ZCX_IB_CREDIT : ZCX_IB_TAKEN;
	tx->msg_len = sizeof(*hdr);
	if (zcx_ib_msg_map(conn, tx)) {
		kfree(tx);
		return -ENOMEM;
	}
	tx->cqe.done = zcx_ib_ctl_sent;
	zcx_ib_wr_send(conn, tx, &tx->wr[0].send, &tx->sge[0], 1);
	conn->ctl_tx = tx;
	return 0;
}

/* The queue pair is drained: the control message is not posted. */
void zcx_ib_ctl_free(struct zcx_ib_conn *conn)
{
	struct zcx_ib_tx *tx = conn->ctl_tx;

	if (!tx)
		return;
	ib_dma_unmap_single(conn->ibdev, tx->msg_dma, tx->msg_len, DMA_TO_DEVICE);
	kfree(tx);
	conn->ctl_tx = NULL;
}

/*
 * Registration work requests for @reg, @tx's first, counted for the
 * context whose transfer it is.
 */
static void zcx_ib_wr_reg(struct zcx_ib_conn *conn, struct zcx_ib_tx *tx,
			  const struct zcx_ib_reg *reg, int access)
{
	union ib_wr_any *wr = tx->wr;
	u32 i;

	if (tx->op)
		zcx_op_regs_posted(tx->op, reg->nmr);
	else if (tx->target)
		zcx_rma_target_regs_posted(tx->target, reg->nmr);
	for (i = 0; i < reg->nmr; i++) {
		wr[i].reg.wr.opcode = IB_WR_REG_MR;
		wr[i].reg.wr.wr_cqe = &conn->quiet_cqe;
		wr[i].reg.mr = reg->mr[i];
		wr[i].reg.key = reg->mr[i]->rkey;
		wr[i].reg.access = access;
	}
}

/* Invalidation work requests for @reg, from @wr on, the first fenced. */
static void zcx_ib_wr_inv(struct zcx_ib_conn *conn, struct zcx_ib_reg *reg, union ib_wr_any *wr)
{
	u32 i;

	for (i = 0; i < reg->nmr; i++) {
		wr[i].send.opcode = IB_WR_LOCAL_INV;
		wr[i].send.wr_cqe = &conn->quiet_cqe;
		wr[i].send.ex.invalidate_rkey = reg->mr[i]->rkey;
		wr[i].send.send_flags = i ? 0 : IB_SEND_FENCE;
	}
}

static void zcx_ib_inv_done(struct ib_cq *cq, struct ib_wc *wc);

/*
 * The chain invalidating tx->reg's MRs (posted by zcx_ib_inv_post_locked()),
 * the first fenced, the last ending the job.  0 or -ENOMEM.
 */
static int zcx_ib_inv_build(struct zcx_ib_conn *conn, struct zcx_ib_tx *tx)
{
	u32 n = tx->reg.nmr;

	tx->inv = kcalloc(n, sizeof(*tx->inv), GFP_KERNEL_ACCOUNT);
	if (!tx->inv)
		return -ENOMEM;
	zcx_ib_wr_inv(conn, &tx->reg, tx->inv);
	zcx_ib_wr_chain(tx->inv, n);
	tx->inv_cqe.done = zcx_ib_inv_done;
	tx->inv[n - 1].send.send_flags |= IB_SEND_SIGNALED;
	tx->inv[n - 1].send.wr_cqe = &tx->inv_cqe;
	return 0;
}

/*
 * Whether the CPU and the device would have to be synchronised around
 * each use of @reg's mapping (bounce buffers, a device that is not cache
 * coherent): then it is kept for one message only, as its unmapping does
 * that.
 */
static bool zcx_ib_reg_needs_sync(struct zcx_ib_conn *conn, struct zcx_ib_reg *reg)
{
	struct scatterlist *sg;
	int i;

	if (ib_uses_virt_dma(conn->ibdev))
		return false;
	for_each_sgtable_dma_sg(&reg->sgt, sg, i)
		if (dma_need_sync(conn->ibdev->dma_device, sg_dma_address(sg)))
			return true;
	return false;
}

/*
 * A kept registration (kept.c) of @npages whole pages for @access: the
 * pages mapped and registered in tx->reg (zcx_ib_reg_map(), @direct
 * telling when a mapping suffices), and the job of invalidating them,
 * posted once the registration goes; ERR_PTR(-EOPNOTSUPP) if the mapping
 * cannot be kept, or another -errno.  The registration work requests are
 * the first job's to post.
 */
struct zcx_ib_tx *zcx_ib_unreg_job(struct zcx_ib_conn *conn, struct page **pages,
				   unsigned long npages, int access, u32 direct)
{
	struct zcx_ib_tx *tx = zcx_ib_job_alloc(conn, ZCX_IB_JOB_UNREG, NULL);
	int ret;

	if (!tx)
		return ERR_PTR(-ENOMEM);
	ret = zcx_ib_reg_map(conn, &tx->reg, pages, 0, (u64)npages << PAGE_SHIFT, access, direct);
	if (!ret && zcx_ib_reg_needs_sync(conn, &tx->reg))
		ret = -EOPNOTSUPP;
	if (!ret && tx->reg.nmr > conn->sq_depth)
		ret = -EMSGSIZE;
	if (!ret && tx->reg.nmr)
		ret = zcx_ib_inv_build(conn, tx);
	if (ret) {
		zcx_ib_reg_unmap(conn, &tx->reg);
		kfree(tx->inv);
		kfree(tx);
		return ERR_PTR(ret);
	}
	return tx;
}

/*
 * A kept registration no job uses goes (@tx its UNREG job): invalidate
 * it, ahead of waiting jobs, which do not use it; or, if the pages are
 * only mapped, which only our own (finished) work requests reached,
 * unmap them now.  On a dead connection the teardown ends it once the
 * queue pair is destroyed.
 */
void zcx_ib_unreg_post(struct zcx_ib_conn *conn, struct zcx_ib_tx *tx)
{
	spin_lock(&conn->lock);
	if (conn->state == ZCX_IB_LIVE && !tx->reg.nmr) {
		spin_unlock(&conn->lock);
		zcx_ib_job_end(tx, 0);
		return;
	}
	/* It reserves what zcx_ib_inv_post_locked() takes, until it ends. */
	tx->started = true;
	list_add_tail(&tx->link, &conn->held);
	if (conn->state == ZCX_IB_LIVE)
		zcx_ib_inv_queue_locked(conn, tx);
	spin_unlock(&conn->lock);
}

/*
 * Map @len bytes of @pages (from @offset in the first) for @access, for
 * @tx: with the kept registration of @op's pages, or else of the exposed
 * range tx->target's, if there is one; else with tx->reg, for this
 * message (zcx_ib_reg_map()).  Tells in *@nreg the MRs whose registration
 * @tx is to post.  0 or -errno.
 */
static int zcx_ib_job_map(struct zcx_ib_conn *conn, struct zcx_ib_tx *tx, struct zcx_op *op,
			  struct page **pages, u32 offset, u64 len, int access, u32 direct,
			  u32 *nreg)
{
	struct zcx_ib_kept *k = NULL;
	int ret;

	if (op || tx->target)
		k = zcx_ib_kept_get(conn, op, tx->target, pages, offset, len, access, direct,
				    &tx->kept_start);
	if (k) {
		tx->kept = k;
		/* Not cached yet: made for this job, which registers it. */
		*nreg = k->cached ? 0 : k->unreg->reg.nmr;
		return 0;
	}
	ret = zcx_ib_reg_map(conn, &tx->reg, pages, offset, len, access, direct);
	*nreg = tx->reg.nmr;
	return ret;
}

/* The registration @tx moves its bytes with: kept, or its own. */
static const struct zcx_ib_reg *zcx_ib_job_reg(const struct zcx_ib_tx *tx)
{
	return tx->kept ? &tx->kept->unreg->reg : &tx->reg;
}

/*
 * The segments of @reg's MRs that hold @len bytes from @start in it,
 * written to @segs unless NULL; how many.
 */
static u32 zcx_ib_reg_segs(const struct zcx_ib_reg *reg, u64 start, u64 len,
			   struct zcx_ib_seg *segs)
{
	const struct ib_mr *mr;
	u32 i, n = 0;
	u64 chunk;

	for (i = 0; i < reg->nmr && len; i++) {
		mr = reg->mr[i];
		if (start >= mr->length) {
			start -= mr->length;
			continue;
		}
		chunk = min(len, mr->length - start);
		if (segs) {
			segs[n].addr = cpu_to_le64(mr->iova + start);
			segs[n].len = cpu_to_le32(chunk);
			segs[n].rkey = cpu_to_le32(mr->rkey);
		}
		n++;
		len -= chunk;
		start = 0;
	}
	return n;
}

/* --- sending --------------------------------------------------------------- */

/* An inline send: header and payload, two scatter entries, one SEND. */
static int zcx_ib_eager_job(struct zcx_ib_conn *conn, struct zcx_ib_tx *tx, const void *data,
			    u64 len, u64 tag)
{
	struct zcx_ib_hdr *hdr = tx->msg;
	int ret;

	tx->len = len;
	ret = zcx_ib_job_wrs(tx, 1, 2);
	if (ret)
		return ret;
	hdr->tag = cpu_to_le64(tag);
	hdr->len = cpu_to_le32(len);
	hdr->type = ZCX_IB_EAGER;
	tx->msg_len = sizeof(*hdr);
	ret = zcx_ib_msg_map(conn, tx);
	if (ret)
		return ret;
	tx->cqe.done = zcx_ib_job_done;
	zcx_ib_wr_send(conn, tx, &tx->wr[0].send, &tx->sge[0], len ? 2 : 1);
	if (!len)
		return 0;
	/* The payload straight from the operation's buffer. */
	tx->data_dma = ib_dma_map_single(conn->ibdev, (void *)data, len, DMA_TO_DEVICE);
	if (ib_dma_mapping_error(conn->ibdev, tx->data_dma)) {
		tx->data_dma = 0;
		return -ENOMEM;
	}
	tx->sge[1].addr = tx->data_dma;
	tx->sge[1].length = len;
	tx->sge[1].lkey = conn->pd->local_dma_lkey;
	return 0;
}

/*
 * An RTS (or PUT, GET) was sent and its FIN came: invalidate its own
 * registrations, or, with none (a kept one stays valid), take it off
 * conn->held and return true for the caller to end it.
 */
static bool zcx_ib_rts_finish_locked(struct zcx_ib_conn *conn, struct zcx_ib_tx *tx)
{
	if (!tx->reg.nmr) {
		list_del(&tx->link);
		return true;
	}
	zcx_ib_inv_queue_locked(conn, tx);
	return false;
}

/*
 * An RTS's SEND completed, and so did its registrations before it: it
 * gives back its room in the send queue while its FIN may take long to
 * come (the receive may not even be posted), and takes room again for
 * its invalidations, or waits for it (zcx_ib_rts_finish_locked()).  On an
 * error no FIN can come, but its registrations may still be valid (a
 * GET's for remote writing) while the device is not quite done with the
 * queue pair: the job stays on conn->held for the teardown, which the
 * error has scheduled, to end once the queue pair is destroyed.
 */
static void zcx_ib_rts_sent(struct ib_cq *cq, struct ib_wc *wc)
{
	struct zcx_ib_tx *tx = container_of(wc->wr_cqe, struct zcx_ib_tx, cqe);
	struct zcx_ib_conn *conn = tx->conn;
	bool end = false;
	u32 done;

	if (zcx_ib_wc_result(conn, wc))
		return;
	spin_lock(&conn->lock);
	tx->sent = true;
	done = tx->wrs;
	tx->wrs = 0;
	end = tx->fin && zcx_ib_rts_finish_locked(conn, tx);
	spin_unlock(&conn->lock);
	zcx_ib_sq_release(conn, done);
	if (end)
		zcx_ib_job_end(tx, tx->status);
}

/*
 * A job's invalidations completed (an RTS's, or an UNREG's): its
 * registrations are invalid again, and the job is done.
 */
static void zcx_ib_inv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct zcx_ib_tx *tx = container_of(wc->wr_cqe, struct zcx_ib_tx, inv_cqe);
	struct zcx_ib_conn *conn = tx->conn;

	/* Not invalidated: for the teardown, as above. */
	if (zcx_ib_wc_result(conn, wc))
		return;
	spin_lock(&conn->lock);
	list_del(&tx->link);
	spin_unlock(&conn->lock);
	zcx_ib_job_end(tx, tx->status);
}

/* Copy @len bytes between @buf and @pages (from @offset), to the pages if @to. */
static void zcx_ib_copy_pages(struct page **pages, u32 offset, void *buf, u64 len, bool to)
{
	u32 n;

	for (; len; pages++, offset = 0, buf += n, len -= n) {
		n = min_t(u64, len, PAGE_SIZE - offset);
		if (to)
			memcpy_to_page(*pages, offset, buf, n);
		else
			memcpy_from_page(buf, *pages, offset, n);
	}
}

/*
 * The pages of @op's @len bytes, the first from *@offset: pinned, or a
 * short send's kernel buffer (sent as an RTS, see zcx_ib_send()), whose
 * pages (at most ZCX_IB_KPAGES: kmalloc()ed, so contiguous) go in
 * @kpages.  NULL if none.
 */
static struct page **zcx_ib_op_pages(struct zcx_op *op, u64 len, struct page **kpages,
				     u32 *offset)
{
	struct page **pages = zcx_op_pages(op, offset);
	const void *data;
	u64 n, tag;
	u32 i;

	zcx_op_payload(op, &data, &n, &tag);
	if (pages || !data || len > ZCX_IB_INLINE || !virt_addr_valid(data))
		return pages;
	*offset = offset_in_page(data);
	for (i = 0; i < DIV_ROUND_UP(*offset + len, PAGE_SIZE); i++)
		kpages[i] = virt_to_page(data - *offset + i * PAGE_SIZE);
	return kpages;
}

/*
 * A message the passive side answers with a FIN: an RTS (a rendezvous
 * send of @tag), a PUT or a GET (@type) of the op's @len bytes (pinned,
 * or a short send's kernel buffer),
 * at @raddr of the peer's range @rkey.  Register the pages for the peer
 * to read (RTS, PUT) or write (GET), then SEND the message; once it is
 * sent and its FIN came, invalidate, and only then complete the op.  A
 * short PUT carries its bytes and registers nothing.
 */
static int zcx_ib_rts_job(struct zcx_ib_conn *conn, struct zcx_ib_tx *tx, u8 type, u64 len,
			  u64 tag, u64 raddr, u64 rkey)
{
	int access = type == ZCX_IB_GET ? IB_ACCESS_REMOTE_WRITE | IB_ACCESS_LOCAL_WRITE :
					  IB_ACCESS_REMOTE_READ;
	bool carried = type == ZCX_IB_PUT && len <= ZCX_IB_PUT_INLINE;
	struct page **pages = NULL, *kpages[ZCX_IB_KPAGES];
	const struct zcx_ib_reg *reg;
	u32 offset = 0, nreg = 0, nseg;
	struct zcx_ib_hdr *hdr;
	struct zcx_ib_rts *rts;
	int ret;

	tx->len = len;
	if (len > ZCX_IB_RMA_MAX && type != ZCX_IB_RTS)
		return -EMSGSIZE;
	if (len) {
		pages = zcx_ib_op_pages(tx->op, len, kpages, &offset);
		if (!pages)
			return -EFAULT;
	}
	if (len && !carried) {
		/* A short send's kernel buffer is registered for itself only. */
		ret = zcx_ib_job_map(conn, tx, pages == kpages ? NULL : tx->op, pages, offset, len,
				     access, 0, &nreg);
		if (ret)
			return ret;
	}
	reg = zcx_ib_job_reg(tx);
	nseg = carried ? 0 : zcx_ib_reg_segs(reg, tx->kept_start, len, NULL);
	ret = zcx_ib_job_wrs(tx, nreg + 1, 1);
	if (ret)
		return ret;
	if (tx->wrs > conn->sq_depth || nseg > ZCX_IB_MAX_SEGS)
		return -EMSGSIZE;
	tx->msg_len = sizeof(*hdr) + struct_size(rts, segs, nseg) + (carried ? len : 0);
	tx->msg = kzalloc(tx->msg_len, GFP_KERNEL_ACCOUNT);
	if (!tx->msg) {
		tx->msg = tx->small;
		return -ENOMEM;
	}
	/* A kept registration stays valid past the message. */
	if (tx->reg.nmr) {
		ret = zcx_ib_inv_build(conn, tx);
		if (ret)
			return ret;
	}
	hdr = tx->msg;
	rts = tx->msg + sizeof(*hdr);
	hdr->tag = cpu_to_le64(tag);
	hdr->len = cpu_to_le32(tx->msg_len - sizeof(*hdr));
	hdr->type = type;
	tx->cookie = atomic64_inc_return(&conn->next_cookie);
	rts->len = cpu_to_le64(len);
	rts->cookie = cpu_to_le64(tx->cookie);
	rts->raddr = cpu_to_le64(raddr);
	rts->rkey = cpu_to_le64(rkey);
	rts->nseg = cpu_to_le32(nseg);
	if (carried)
		zcx_ib_copy_pages(pages, offset, rts->segs, len, false);
	else
		zcx_ib_reg_segs(reg, tx->kept_start, len, rts->segs);
	ret = zcx_ib_msg_map(conn, tx);
	if (ret)
		return ret;
	if (nreg)
		zcx_ib_wr_reg(conn, tx, reg, access);
	tx->cqe.done = zcx_ib_rts_sent;
	zcx_ib_wr_send(conn, tx, &tx->wr[nreg].send, &tx->sge[0], 1);
	return 0;
}

/*
 * A job of @type for @op on @conn, with conn->building held (read) to
 * build it; NULL if there can be none, @op completed.
 */
static struct zcx_ib_tx *zcx_ib_op_job(struct zcx_ib_conn *conn, enum zcx_ib_job_type type,
				       struct zcx_op *op)
{
	struct zcx_ib_tx *tx = zcx_ib_job_alloc(conn, type, op);

	if (!tx) {
		zcx_op_complete(op, -ENOMEM, 0, 0);
		return NULL;
	}
	if (!zcx_ib_build_begin(conn)) {
		zcx_ib_job_end(tx, -ECONNRESET);
		return NULL;
	}
	return tx;
}

/* Post @tx, built with outcome @ret, or end it; the building is over. */
static void zcx_ib_op_post(struct zcx_ib_conn *conn, struct zcx_ib_tx *tx, int ret)
{
	if (ret)
		zcx_ib_job_end(tx, ret);
	else if (zcx_ib_job_submit(conn, tx))
		zcx_ib_conn_schedule_kill(conn);
	up_read(&conn->building);
}

void zcx_ib_send(struct zcx_conn *zconn, struct zcx_op *op)
{
	struct zcx_ib_conn *conn = zcx_conn_remote(zconn);
	struct zcx_ib_tx *tx;
	const void *data;
	u64 len, tag;
	bool eager;

	zcx_op_payload(op, &data, &len, &tag);
	/*
	 * Inline unless the receiver holds too many messages (see rx_done),
	 * or too many wait for credits already: the receiver may have to
	 * copy out what was queued before it said so.
	 */
	eager = len <= ZCX_IB_INLINE && !READ_ONCE(conn->eager_off) &&
		READ_ONCE(conn->credit_waiters) < ZCX_IB_EAGER_QUEUE(conn->rx_depth);
	tx = zcx_ib_op_job(conn, eager ? ZCX_IB_JOB_EAGER : ZCX_IB_JOB_RTS, op);
	if (tx)
		zcx_ib_op_post(conn, tx, eager ? zcx_ib_eager_job(conn, tx, data, len, tag) :
					   zcx_ib_rts_job(conn, tx, ZCX_IB_RTS, len, tag, 0, 0));
}

void zcx_ib_rma(struct zcx_conn *zconn, struct zcx_op *op, bool put, u64 raddr, u64 rkey)
{
	struct zcx_ib_conn *conn = zcx_conn_remote(zconn);
	struct zcx_ib_tx *tx;
	const void *data;
	u64 len, tag;

	zcx_op_payload(op, &data, &len, &tag);
	tx = zcx_ib_op_job(conn, ZCX_IB_JOB_RTS, op);
	if (tx)
		zcx_ib_op_post(conn, tx, zcx_ib_rts_job(conn, tx, put ? ZCX_IB_PUT : ZCX_IB_GET,
							 len, 0, raddr, rkey));
}

/* --- receiving ------------------------------------------------------------ */

/* A FIN for an RTS of ours: finish it, once the RTS's SEND completed. */
static int zcx_ib_fin(struct zcx_ib_conn *conn, const struct zcx_ib_fin *fin)
{
	u64 cookie = le64_to_cpu(fin->cookie);
	int status = (int)le32_to_cpu(fin->status);
	struct zcx_ib_tx *tx, *end = NULL;
	int ret = -EPROTO;

	if (status > 0 || status < -ZCX_IB_ERRNO_MAX)
		return -EPROTO;
	spin_lock(&conn->lock);
	list_for_each_entry(tx, &conn->held, link) {
		if (tx->type != ZCX_IB_JOB_RTS || tx->cookie != cookie || tx->fin)
			continue;
		tx->fin = true;
		/* Its buffer is posted again (zcx_ib_reply()). */
		conn->fins_taken++;
		tx->status = status;
		if (tx->sent && zcx_ib_rts_finish_locked(conn, tx))
			end = tx;
		ret = 0;
		break;
	}
	spin_unlock(&conn->lock);
	if (end)
		zcx_ib_job_end(end, end->status);
	return ret;
}

/* @n credits came back, and whether to send inline (@eager_off). */
static int zcx_ib_credit(struct zcx_ib_conn *conn, u32 n, bool eager_off)
{
	int ret = -EPROTO;

	spin_lock(&conn->lock);
	if (n && conn->credits + n <= conn->rx_depth) {
		conn->credits += n;
		WRITE_ONCE(conn->eager_off, eager_off);
		ret = 0;
	}
	spin_unlock(&conn->lock);
	return ret;
}

/*
 * A reply came to an active connection in @rx: a FIN or a CREDIT,
 * @hdr and a @len-byte body.  The buffer is posted again first
 * (a FIN's body copied out): the credits it brings may be spent at once,
 * and there must be a buffer for every reply they can cause.
 */
static void zcx_ib_reply(struct zcx_ib_conn *conn, struct zcx_ib_rx *rx,
			 const struct zcx_ib_hdr *hdr, u32 len)
{
	u32 n = le16_to_cpu(hdr->credits);
	bool eager_off = hdr->flags & ZCX_IB_EAGER_OFF;
	u8 type = hdr->type;
	struct zcx_ib_fin fin;
	int ret = -EPROTO;

	if (type == ZCX_IB_FIN && len == sizeof(fin))
		memcpy(&fin, rx->buf, sizeof(fin));
	else if (type != ZCX_IB_CREDIT || len)
		goto broken;
	zcx_ib_rx_repost(conn, rx);
	ret = type == ZCX_IB_FIN ? zcx_ib_fin(conn, &fin) : zcx_ib_credit(conn, n, eager_off);
	if (ret)
		zcx_ib_conn_schedule_kill(conn);
	else
		zcx_ib_sq_release(conn, 0);	/* what waited for the credits */
	return;
broken:
	zcx_ib_rx_free(rx);
	zcx_ib_conn_schedule_kill(conn);
}

/*
 * Whether the RTS, PUT or GET (@type) of @len bytes at @rts is well
 * formed: its segments add up to its length, or a short PUT carries it.
 */
static bool zcx_ib_rts_valid(u8 type, const struct zcx_ib_rts *rts, u32 len)
{
	u64 msg_len, sum = 0;
	u32 i, nseg, seg_len;

	if (len < sizeof(*rts) || rts->reserved)
		return false;
	nseg = le32_to_cpu(rts->nseg);
	msg_len = le64_to_cpu(rts->len);
	if (type == ZCX_IB_PUT && !nseg && msg_len <= ZCX_IB_PUT_INLINE)
		return len == sizeof(*rts) + msg_len;
	if (nseg > ZCX_IB_MAX_SEGS || len != struct_size(rts, segs, nseg))
		return false;
	for (i = 0; i < nseg; i++) {
		seg_len = le32_to_cpu(rts->segs[i].len);
		if (!seg_len)
			return false;
		sum += seg_len;
	}
	if (sum != msg_len)
		return false;
	/* Short too (zcx_ib_send()): whether one should be is the sender's call. */
	if (type == ZCX_IB_RTS)
		return true;
	return sum <= ZCX_IB_RMA_MAX && (type == ZCX_IB_GET || sum > ZCX_IB_PUT_INLINE);
}

static void zcx_ib_serve_queue(struct zcx_ib_conn *conn, struct zcx_ib_rx *rx);

/* The sender took @n of our FINs; a TAKEN has no body (@len).  conn->lock held. */
static int zcx_ib_taken(struct zcx_ib_conn *conn, u32 n, u32 len)
{
	if (len || !n || n > conn->fins_out)
		return -EPROTO;
	conn->fins_out -= n;
	return 0;
}

/*
 * A message arrived: a passive connection hands EAGER and RTS messages
 * to zcx.ko, which holds the buffer (or a copy) until it consumed the
 * message, serves PUT and GET itself and takes TAKEN; an active one
 * takes FINs and CREDITs.
 * Anything else is not our protocol: the peer is broken, and the
 * connection goes.
 */
static void zcx_ib_rx_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct zcx_ib_rx *rx = container_of(wc->wr_cqe, struct zcx_ib_rx, cqe);
	struct zcx_ib_conn *conn = rx->conn;
	const struct zcx_ib_hdr *hdr = rx->hdr;
	void *body = rx->buf;
	u64 tag, msg_len;
	int ret = -EPROTO;
	bool copy;
	u32 len;
	u8 type;

	zcx_ib_rx_unmap(conn, rx);
	if (zcx_ib_wc_result(conn, wc)) {
		/* Flushed by a teardown, or the connection broke. */
		zcx_ib_rx_free(rx);
		return;
	}
	len = le32_to_cpu(hdr->len);
	tag = le64_to_cpu(hdr->tag);
	type = hdr->type;
	/*
	 * Only a SEND is a message: a WRITE with immediate data (with a key
	 * a GET gave) takes a buffer it leaves as it was.
	 */
	if (wc->opcode != IB_WC_RECV)
		goto broken;
	if (wc->byte_len < sizeof(*hdr) || len != wc->byte_len - sizeof(*hdr))
		goto broken;
	/* No message invalidates a registration of ours: some are kept. */
	if (wc->wc_flags & IB_WC_WITH_INVALIDATE)
		goto broken;
	/* Only a CREDIT has a flag. */
	if (hdr->flags & ~(type == ZCX_IB_CREDIT ? ZCX_IB_EAGER_OFF : 0))
		goto broken;
	if (!conn->passive) {
		zcx_ib_reply(conn, rx, hdr, len);
		return;
	}
	spin_lock(&conn->lock);
	conn->lent++;
	zcx_ib_credit_post_locked(conn);
	if (type == ZCX_IB_TAKEN) {
		ret = zcx_ib_taken(conn, le16_to_cpu(hdr->credits), len);
		spin_unlock(&conn->lock);
		if (ret)
			goto broken;
		zcx_ib_rx_repost(conn, rx);
		zcx_ib_sq_release(conn, 0);	/* the answers that waited */
		return;
	}
	/*
	 * An RTS is copied out of its buffer, which goes back at once: it is
	 * short, and its bytes wait at the sender.  So is an EAGER message
	 * once zcx.ko holds ZCX_IB_HOLD_MAX of them, and the CREDITs say so
	 * until it holds fewer: then messages not received yet never take
	 * every buffer, and one the receiver waits for can always come.  A
	 * sender that heeds the CREDITs sends few more inline (what it had
	 * queued); one that does not is copied for up to
	 * ZCX_IB_UNRECEIVED_MAX and then holds up only its own connection.
	 * So does one whose rendezvous messages the receiver does not consume
	 * once their copies take ZCX_IB_RTS_COPY_BYTES: no peer makes this
	 * node copy without bound.
	 */
	copy = (type == ZCX_IB_RTS &&
		conn->rts_copied + sizeof(*hdr) + len <= ZCX_IB_RTS_COPY_BYTES) ||
	       (type == ZCX_IB_EAGER && conn->unreceived >= ZCX_IB_HOLD_MAX(conn->rx_depth) &&
		conn->unreceived < ZCX_IB_UNRECEIVED_MAX(conn->rx_depth));
	if (type == ZCX_IB_EAGER) {
		conn->unreceived++;
		rx->unreceived = true;
	} else if (type == ZCX_IB_RTS && copy) {
		rx->rts_copy = sizeof(*hdr) + len;
		conn->rts_copied += rx->rts_copy;
	}
	spin_unlock(&conn->lock);
	if ((type == ZCX_IB_PUT || type == ZCX_IB_GET) && zcx_ib_rts_valid(type, body, len)) {
		/* The buffer, and so the connection, is held until answered. */
		kref_get(&conn->ref);
		zcx_ib_serve_queue(conn, rx);
		return;
	}
	if (type == ZCX_IB_EAGER)
		msg_len = len;
	else if (type == ZCX_IB_RTS && zcx_ib_rts_valid(type, body, len))
		msg_len = le64_to_cpu(((struct zcx_ib_rts *)body)->len);
	else
		goto broken;
	if (copy)
		rx = zcx_ib_rx_copy(conn, rx, len);
	/* zcx.ko holds the buffer or copy, and so the connection, until consumed. */
	kref_get(&conn->ref);
	ret = zcx_ep_deliver(conn->ep, tag, type == ZCX_IB_EAGER ? rx->buf : NULL, msg_len, rx);
	if (!ret)
		return;
	zcx_ib_conn_put(conn);
broken:
	zcx_ib_rx_received(rx);
	zcx_ib_rx_free(rx);
	zcx_ib_conn_schedule_kill(conn);
}

/*
 * Where the next bytes of a move's local side are: @reg's MRs in order,
 * or, with none, its DMA-mapped entries, reached with the local DMA key;
 * the first @skip bytes of them are not the move's.
 */
struct zcx_ib_local {
	const struct zcx_ib_reg *reg;
	u64 skip;
	struct scatterlist *sg;
	u32 mr;
	u64 addr;
	u64 left;
	u32 lkey;
};

static void zcx_ib_local_next(struct zcx_ib_local *l, u32 dma_lkey)
{
	const struct ib_mr *mr;
	u64 n;

	do {
		if (l->reg->nmr) {
			mr = l->reg->mr[l->mr++];
			l->addr = mr->iova;
			l->left = mr->length;
			l->lkey = mr->lkey;
		} else {
			l->sg = l->sg ? sg_next(l->sg) : l->reg->sgt.sgl;
			l->addr = sg_dma_address(l->sg);
			l->left = sg_dma_len(l->sg);
			l->lkey = dma_lkey;
		}
		n = min(l->skip, l->left);
		l->addr += n;
		l->left -= n;
		l->skip -= n;
	} while (!l->left);
}

/*
 * READs (@opcode) of the segments of @rts into the pages of @reg, from
 * @start in it, or WRITEs from them, @len bytes: one per remote segment, or more where
 * its local side takes more than conn->rdma_sge scatter entries.  Fills
 * @wr and @sge from their start; returns how many work requests, and in
 * *@nsge how many entries.
 */
static u32 zcx_ib_wr_rdma(struct zcx_ib_conn *conn, const struct zcx_ib_reg *reg, u64 start,
			  const struct zcx_ib_rts *rts, u64 len, enum ib_wr_opcode opcode,
			  union ib_wr_any *wr, struct ib_sge *sge, u32 *nsge)
{
	struct zcx_ib_local l = { .reg = reg, .skip = start };
	struct ib_rdma_wr *cur = NULL;
	u32 r = 0, n = 0, s = 0;
	u64 roff = 0, chunk;

	while (len) {
		const struct zcx_ib_seg *seg = &rts->segs[r];

		if (!l.left)
			zcx_ib_local_next(&l, conn->pd->local_dma_lkey);
		if (!cur || cur->wr.num_sge == conn->rdma_sge) {
			cur = &wr[n++].rdma;
			cur->wr.opcode = opcode;
			cur->wr.wr_cqe = &conn->quiet_cqe;
			cur->wr.sg_list = &sge[s];
			cur->wr.num_sge = 0;
			cur->remote_addr = le64_to_cpu(seg->addr) + roff;
			cur->rkey = le32_to_cpu(seg->rkey);
		}
		chunk = min3(len, l.left, le32_to_cpu(seg->len) - roff);
		sge[s].addr = l.addr;
		sge[s].length = chunk;
		sge[s].lkey = l.lkey;
		s++;
		cur->wr.num_sge++;
		len -= chunk;
		l.addr += chunk;
		l.left -= chunk;
		roff += chunk;
		if (roff == le32_to_cpu(seg->len)) {
			/* The next segment takes a READ or WRITE of its own. */
			r++;
			roff = 0;
			cur = NULL;
		}
	}
	*nsge = s;
	return n;
}

/*
 * The chain moving @len bytes between the segments of @rts and @pages
 * (from @offset): map the pages, registering them unless few entries
 * map them (zcx_ib_reg_map(); an iWARP device only READs into
 * registered pages), then READ into them (@read) and invalidate (fenced:
 * after the READs), leaving room for the FIN last; or WRITE from them,
 * leaving room for the FIN, and invalidate (fenced: a local invalidation
 * waits for the work requests before it, WRITEs included, on Soft-RoCE
 * and on NICs with strong ordering for it).  A pull's pages, or a
 * served PUT's or GET's, may have a registration kept (kept.c), which
 * is neither made nor invalidated here.  Sets tx->wrs and where the FIN
 * and its scatter entry go; 0 or -errno.
 */
static int zcx_ib_move_chain(struct zcx_ib_conn *conn, struct zcx_ib_tx *tx,
			     const struct zcx_ib_rts *rts, struct page **pages, u32 offset,
			     u64 len, bool read, u32 *fin_wr, u32 *fin_sge)
{
	int access = read ? IB_ACCESS_LOCAL_WRITE | (conn->read_mr ? IB_ACCESS_REMOTE_WRITE : 0) : 0;
	u32 direct = read && conn->read_mr ? 0 : conn->rdma_sge;
	u32 nseg = le32_to_cpu(rts->nseg), nreg, ninv, pieces, n;
	struct zcx_op *op = tx->type == ZCX_IB_JOB_PULL ? tx->op : NULL;
	const struct zcx_ib_reg *reg;
	int ret;

	if (!pages)
		return -EFAULT;
	ret = zcx_ib_job_map(conn, tx, op, pages, offset, len, access, direct, &nreg);
	if (ret)
		return ret;
	reg = zcx_ib_job_reg(tx);
	ninv = tx->reg.nmr;
	/* Each local MR or entry and each remote segment starts a piece at most. */
	pieces = (reg->nmr ? reg->nmr : reg->sgt.nents) + nseg;
	ret = zcx_ib_job_wrs(tx, nreg + pieces + ninv + 1, pieces + 1);
	if (ret)
		return ret;
	if (tx->wrs > conn->sq_depth)
		return -EMSGSIZE;
	if (nreg)
		zcx_ib_wr_reg(conn, tx, reg, access);
	n = zcx_ib_wr_rdma(conn, reg, tx->kept_start, rts, len,
			   read ? IB_WR_RDMA_READ : IB_WR_RDMA_WRITE, tx->wr + nreg, tx->sge, fin_sge);
	tx->wrs = nreg + n + ninv + 1;
	*fin_wr = read ? nreg + n + ninv : nreg + n;
	zcx_ib_wr_inv(conn, &tx->reg, tx->wr + nreg + n + (read ? 0 : 1));
	return 0;
}

/*
 * Post @tx, answering the RTS, PUT or GET @rts with a FIN: first move
 * the first @len bytes between its segments and @pages (from @offset),
 * READing into the pages (@read) or WRITEing from them, unless tx->status
 * tells a failure already.  A move that cannot be set up sends the FIN
 * alone, with the error, which both sides' operations complete with.
 */
static void zcx_ib_answer(struct zcx_ib_conn *conn, struct zcx_ib_tx *tx,
			  const struct zcx_ib_rts *rts, struct page **pages, u32 offset,
			  u64 len, bool read)
{
	u32 fin_wr = 0, fin_sge = 0;
	struct zcx_ib_hdr *hdr;
	struct zcx_ib_fin *fin;
	struct ib_send_wr *last;
	int ret;

	if (!zcx_ib_build_begin(conn)) {
		zcx_ib_job_end(tx, -ECONNRESET);
		return;
	}
	tx->wrs = 1;
	ret = len && !tx->status ?
	      zcx_ib_move_chain(conn, tx, rts, pages, offset, len, read, &fin_wr, &fin_sge) : 0;
	if (ret) {
		/*
		 * The FIN alone, first in what was allocated.  Nothing moved:
		 * not EMSGSIZE, which would say the receive holds a prefix.
		 */
		tx->status = ret == -EMSGSIZE ? -ENOBUFS : ret;
		zcx_ib_reg_unmap(conn, &tx->reg);
		if (tx->kept) {
			/* Not used: one made for this job goes, unregistered. */
			zcx_ib_kept_put(conn, tx->kept);
			tx->kept = NULL;
		}
		memset(tx->wr, 0, sizeof(*tx->wr));
		tx->wrs = 1;
		fin_wr = 0;
		fin_sge = 0;
	}
	hdr = tx->msg;
	fin = tx->msg + sizeof(*hdr);
	tx->msg_len = sizeof(*hdr) + sizeof(*fin);
	hdr->len = cpu_to_le32(sizeof(*fin));
	hdr->type = ZCX_IB_FIN;
	fin->cookie = rts->cookie;
	fin->status = cpu_to_le32(tx->status < -ZCX_IB_ERRNO_MAX ? -EIO : tx->status);
	ret = zcx_ib_msg_map(conn, tx);
	if (ret)
		goto fail;
	tx->cqe.done = zcx_ib_job_done;
	zcx_ib_wr_send(conn, tx, &tx->wr[fin_wr].send, &tx->sge[fin_sge], 1);
	if (tx->type == ZCX_IB_JOB_PULL && fin_wr) {
		tx->moved_cqe.done = zcx_ib_pull_moved;
		tx->wr[fin_wr - 1].send.wr_cqe = &tx->moved_cqe;
		tx->wr[fin_wr - 1].send.send_flags |= IB_SEND_SIGNALED;
	}
	last = &tx->wr[tx->wrs - 1].send;
	if (last == &tx->wr[fin_wr].send) {
		tx->wr[fin_wr].send.send_flags |= IB_SEND_FENCE;
	} else {
		/* The invalidations after a WRITE's FIN: the last ends the job. */
		tx->wr[fin_wr].send.send_flags = 0;
		tx->wr[fin_wr].send.wr_cqe = &conn->quiet_cqe;
		last->send_flags |= IB_SEND_SIGNALED;
		last->wr_cqe = &tx->cqe;
	}
	last->next = NULL;
	if (zcx_ib_job_submit(conn, tx))
		zcx_ib_conn_schedule_kill(conn);
	up_read(&conn->building);
	return;
fail:
	zcx_ib_job_end(tx, ret);
	zcx_ib_conn_schedule_kill(conn);
	up_read(&conn->building);
}

/* A job of @type answering the request in @rx, or NULL (@rx let go of). */
static struct zcx_ib_tx *zcx_ib_answer_job(struct zcx_ib_conn *conn, struct zcx_ib_rx *rx,
					   enum zcx_ib_job_type type, struct zcx_op *op)
{
	struct zcx_ib_tx *tx = zcx_ib_job_alloc(conn, type, op);

	if (!tx) {
		zcx_ib_conn_schedule_kill(conn);
		zcx_ib_release_rx(rx);
		return NULL;
	}
	tx->rx = rx;
	return tx;
}

/*
 * zcx.ko matched the rendezvous message in @arg with receive @recv: read
 * its first @len bytes into @recv's pinned pages, then tell the sender
 * (FIN).
 */
void zcx_ib_pull(void *arg, struct zcx_op *recv, u64 len)
{
	struct zcx_ib_rx *rx = arg;
	const struct zcx_ib_hdr *hdr = rx->hdr;
	const struct zcx_ib_rts *rts = rx->buf;
	struct page **pages = NULL;
	struct zcx_ib_tx *tx;
	u32 offset = 0;

	tx = zcx_ib_answer_job(rx->conn, rx, ZCX_IB_JOB_PULL, recv);
	if (!tx) {
		zcx_op_complete(recv, -ENOMEM, 0, 0);
		return;
	}
	tx->len = le64_to_cpu(rts->len);
	tx->tag = le64_to_cpu(hdr->tag);
	if (len)
		pages = zcx_op_pages(recv, &offset);
	zcx_ib_answer(rx->conn, tx, rts, pages, offset, len, true);
}

/*
 * A PUT or GET came in @rx: hold the exposed range it names (zcx.ko
 * checks key, rights and bounds), copy a short PUT's bytes into it, or
 * READ a PUT into it, or WRITE a GET from it, and answer with a FIN
 * telling the outcome.
 */
static void zcx_ib_serve(struct zcx_ib_conn *conn, struct zcx_ib_rx *rx)
{
	const struct zcx_ib_hdr *hdr = rx->hdr;
	const struct zcx_ib_rts *rts = rx->buf;
	bool put = hdr->type == ZCX_IB_PUT;
	u64 len = le64_to_cpu(rts->len);
	struct zcx_rma_target *target;
	struct page **pages = NULL;
	struct zcx_ib_tx *tx;
	u32 offset = 0;

	tx = zcx_ib_answer_job(conn, rx, ZCX_IB_JOB_SERVE, NULL);
	if (!tx)
		return;
	target = zcx_ep_rma_target(conn->ep, le64_to_cpu(rts->rkey), le64_to_cpu(rts->raddr),
				   len, put);
	if (IS_ERR(target)) {
		tx->status = PTR_ERR(target);
		len = 0;
	} else {
		tx->target = target;
		if (len)
			pages = zcx_rma_target_pages(target, &offset);
	}
	if (put && !rts->nseg && len) {
		zcx_ib_copy_pages(pages, offset, (void *)rts->segs, len, true);
		len = 0;
	}
	zcx_ib_answer(conn, tx, rts, pages, offset, len, put);
}

/*
 * PUTs and GETs are served by a work item, one at a time in the order
 * they came, and not in the completion handler: holding the range may
 * pin it in its owner's mm, which may wait (boundedly) for pages to be
 * read in, and the connection's other completions (messages, credits) go
 * on meanwhile.  Every PUT and GET pays the hop to the work item, even one
 * whose range needs no pin.
 */
static void zcx_ib_serve_work(struct work_struct *work)
{
	struct zcx_ib_conn *conn = container_of(work, struct zcx_ib_conn, serve);
	struct mem_cgroup *old_memcg;
	struct zcx_ib_rx *rx;

	for (;;) {
		spin_lock(&conn->lock);
		rx = list_first_entry_or_null(&conn->serving, struct zcx_ib_rx, link);
		if (rx)
			list_del(&rx->link);
		spin_unlock(&conn->lock);
		if (!rx)
			break;
		/* The target's owner pays for serving it. */
		old_memcg = set_active_memcg(zcx_ep_memcg(conn->ep));
		zcx_ib_serve(conn, rx);
		set_active_memcg(old_memcg);
	}
	/* The reference of being queued. */
	zcx_ib_conn_put(conn);
}

/* Serve the PUT or GET in @rx (which holds a connection reference) soon. */
static void zcx_ib_serve_queue(struct zcx_ib_conn *conn, struct zcx_ib_rx *rx)
{
	spin_lock(&conn->lock);
	list_add_tail(&rx->link, &conn->serving);
	spin_unlock(&conn->lock);
	kref_get(&conn->ref);
	if (!zcx_ib_queue_work(&conn->serve))
		zcx_ib_conn_put(conn);
}

void zcx_ib_serve_init(struct zcx_ib_conn *conn)
{
	INIT_LIST_HEAD(&conn->serving);
	INIT_WORK(&conn->serve, zcx_ib_serve_work);
}
