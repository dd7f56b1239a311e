// SPDX-License-Identifier: GPL-2.0-only
/*
 * conn.c - zcx connections between nodes: one RC queue pair per zcx
 * connection, set up with the kernel's rdma_cm.
 *
 * The node listens on one rdma_cm port (module parameter "listen"); an
 * endpoint's address carries it.  Connecting sends a hello with the
 * target endpoint's number and key; the listener accepts it only for a
 * live endpoint with that key.  A connection is one-way, as on a node:
 * the active side sends, the passive side receives.
 *
 * Messages (up to ZCX_IB_INLINE bytes, with a small header) are SENDs
 * into receive buffers the passive side posted.  A message zcx.ko has
 * not received yet keeps its buffer; the buffer is posted again once the
 * message is consumed.  So a slow receiver makes the sender's queue pair
 * wait (receiver-not-ready retries, without limit), and at most
 * ZCX_IB_TX_DEPTH sends are posted: the rest wait in order.  Nothing is
 * lost and no memory grows without bound.
 *
 * Teardown (zcx_ib_conn_kill()) happens once, from a work item, from
 * connect's caller, or from the device's removal: it stops posting,
 * disconnects, drains the queue pair (which completes what was posted),
 * and frees the verbs resources.  Messages zcx.ko still holds are plain
 * memory by then (unmapped when they arrived) and outlive it.
 */
#include <linux/inet.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/socket.h>

#include "zcx_ib.h"

#define ZCX_IB_RX_SIZE	PAGE_SIZE
static_assert(sizeof(struct zcx_ib_hdr) + ZCX_IB_INLINE <= ZCX_IB_RX_SIZE);

/* Connections accepted on the node: what the buffers may cost is bounded. */
static atomic_t zcx_ib_accepted = ATOMIC_INIT(0);

static struct workqueue_struct *zcx_ib_wq;
static LIST_HEAD(zcx_ib_conns);
static DEFINE_MUTEX(zcx_ib_conns_mutex);

/* The listener and the address endpoints advertise. */
static struct rdma_cm_id *zcx_ib_listener;
static struct sockaddr_storage zcx_ib_addr;

static void zcx_ib_teardown_work(struct work_struct *work);
static void zcx_ib_connect_done(struct zcx_ib_conn *conn, int status);

static struct zcx_ib_conn *zcx_ib_conn_alloc(bool passive)
{
	struct zcx_ib_conn *conn;

	/*
	 * Dropped when the connection is freed.  An active connection comes
	 * from zcx.ko, which holds the module already; a passive one may come
	 * while the module is going, and is refused then.
	 */
	if (!passive)
		__module_get(THIS_MODULE);
	else if (!try_module_get(THIS_MODULE))
		return NULL;
	conn = kzalloc(sizeof(*conn), GFP_KERNEL);
	if (!conn) {
		module_put(THIS_MODULE);
		return NULL;
	}
	kref_init(&conn->ref);
	mutex_init(&conn->mutex);
	spin_lock_init(&conn->lock);
	init_completion(&conn->connected);
	INIT_LIST_HEAD(&conn->tx_waiting);
	INIT_LIST_HEAD(&conn->acc.link);
	INIT_WORK(&conn->teardown, zcx_ib_teardown_work);
	conn->passive = passive;
	conn->base_ref = passive;
	mutex_lock(&zcx_ib_conns_mutex);
	list_add_tail(&conn->list, &zcx_ib_conns);
	mutex_unlock(&zcx_ib_conns_mutex);
	return conn;
}

static void zcx_ib_conn_free(struct kref *ref)
{
	struct zcx_ib_conn *conn = container_of(ref, struct zcx_ib_conn, ref);

	if (conn->passive)
		atomic_dec(&zcx_ib_accepted);
	kfree(conn);
	module_put(THIS_MODULE);
}

static void zcx_ib_conn_put(struct zcx_ib_conn *conn)
{
	kref_put(&conn->ref, zcx_ib_conn_free);
}

/* Tear @conn down from the workqueue (never from a CQ or CM handler). */
static void zcx_ib_conn_schedule_kill(struct zcx_ib_conn *conn)
{
	kref_get(&conn->ref);
	if (!queue_work(zcx_ib_wq, &conn->teardown))
		zcx_ib_conn_put(conn);
}

/* --- receiving ----------------------------------------------------------- */

static struct zcx_ib_rx *zcx_ib_rx_alloc(struct zcx_ib_conn *conn)
{
	struct zcx_ib_rx *rx = kmalloc(sizeof(*rx), GFP_KERNEL);

	if (!rx)
		return NULL;
	rx->buf = (void *)__get_free_page(GFP_KERNEL);
	if (!rx->buf) {
		kfree(rx);
		return NULL;
	}
	rx->conn = conn;
	rx->dma = 0;
	return rx;
}

/* @rx is not mapped (any more). */
static void zcx_ib_rx_free(struct zcx_ib_rx *rx)
{
	free_page((unsigned long)rx->buf);
	kfree(rx);
}

static void zcx_ib_rx_done(struct ib_cq *cq, struct ib_wc *wc);

/* Post @rx; conn->lock held.  0, or -errno (the caller keeps @rx). */
static int zcx_ib_rx_post_locked(struct zcx_ib_conn *conn, struct zcx_ib_rx *rx)
{
	struct ib_recv_wr wr = {};
	struct ib_sge sge;
	int ret;

	if (conn->state == ZCX_IB_DEAD)
		return -ECONNRESET;
	rx->dma = ib_dma_map_single(conn->ibdev, rx->buf, ZCX_IB_RX_SIZE, DMA_FROM_DEVICE);
	if (ib_dma_mapping_error(conn->ibdev, rx->dma)) {
		rx->dma = 0;
		return -ENOMEM;
	}
	sge.addr = rx->dma;
	sge.length = ZCX_IB_RX_SIZE;
	sge.lkey = conn->pd->local_dma_lkey;
	rx->cqe.done = zcx_ib_rx_done;
	wr.wr_cqe = &rx->cqe;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	ret = ib_post_recv(conn->qp, &wr, NULL);
	if (ret) {
		ib_dma_unmap_single(conn->ibdev, rx->dma, ZCX_IB_RX_SIZE, DMA_FROM_DEVICE);
		rx->dma = 0;
	}
	return ret;
}

/* zcx.ko consumed the message in @rx: post the buffer again, or free it. */
static void zcx_ib_release_rx(void *arg)
{
	struct zcx_ib_rx *rx = arg;
	struct zcx_ib_conn *conn = rx->conn;
	int ret;

	spin_lock(&conn->lock);
	ret = zcx_ib_rx_post_locked(conn, rx);
	spin_unlock(&conn->lock);
	if (ret)
		zcx_ib_rx_free(rx);
	zcx_ib_conn_put(conn);
}

static void zcx_ib_rx_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct zcx_ib_rx *rx = container_of(wc->wr_cqe, struct zcx_ib_rx, cqe);
	struct zcx_ib_conn *conn = rx->conn;
	const struct zcx_ib_hdr *hdr = (const void *)rx->buf;
	u32 len;

	ib_dma_unmap_single(conn->ibdev, rx->dma, ZCX_IB_RX_SIZE, DMA_FROM_DEVICE);
	rx->dma = 0;
	if (wc->status != IB_WC_SUCCESS) {
		/* Flushed by a teardown, or the connection broke. */
		zcx_ib_rx_free(rx);
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			zcx_ib_conn_schedule_kill(conn);
		return;
	}
	len = le32_to_cpu(hdr->len);
	if (wc->byte_len < sizeof(*hdr) || len != wc->byte_len - sizeof(*hdr)) {
		/* Not our protocol: the peer is broken, drop the connection. */
		zcx_ib_rx_free(rx);
		zcx_ib_conn_schedule_kill(conn);
		return;
	}
	/* zcx.ko holds the buffer, and so the connection, until consumed. */
	kref_get(&conn->ref);
	if (zcx_ep_deliver(conn->ep, le64_to_cpu(hdr->tag), rx->buf + sizeof(*hdr), len, rx)) {
		zcx_ib_conn_put(conn);
		zcx_ib_rx_free(rx);
		zcx_ib_conn_schedule_kill(conn);
	}
}

/* --- sending ------------------------------------------------------------- */

static void zcx_ib_tx_done(struct ib_cq *cq, struct ib_wc *wc);

/* Post @tx; conn->lock held.  0 or -errno. */
static int zcx_ib_tx_post_locked(struct zcx_ib_conn *conn, struct zcx_ib_tx *tx)
{
	struct ib_send_wr wr = {};
	struct ib_sge sge[2];
	int ret;

	/* The header, then the payload straight from the operation's buffer. */
	sge[0].addr = tx->hdr_dma;
	sge[0].length = sizeof(tx->hdr);
	sge[0].lkey = conn->pd->local_dma_lkey;
	sge[1].addr = tx->data_dma;
	sge[1].length = tx->len;
	sge[1].lkey = conn->pd->local_dma_lkey;
	tx->cqe.done = zcx_ib_tx_done;
	wr.wr_cqe = &tx->cqe;
	wr.sg_list = sge;
	wr.num_sge = tx->len ? 2 : 1;
	wr.opcode = IB_WR_SEND;
	wr.send_flags = IB_SEND_SIGNALED;
	ret = ib_post_send(conn->qp, &wr, NULL);
	if (!ret)
		conn->tx_posted++;
	return ret;
}

/* Map @tx's header and payload for the device; 0 or -ENOMEM. */
static int zcx_ib_tx_map(struct zcx_ib_conn *conn, struct zcx_ib_tx *tx, const void *data)
{
	tx->hdr_dma = ib_dma_map_single(conn->ibdev, &tx->hdr, sizeof(tx->hdr), DMA_TO_DEVICE);
	if (ib_dma_mapping_error(conn->ibdev, tx->hdr_dma))
		return -ENOMEM;
	if (!tx->len)
		return 0;
	tx->data_dma = ib_dma_map_single(conn->ibdev, (void *)data, tx->len, DMA_TO_DEVICE);
	if (ib_dma_mapping_error(conn->ibdev, tx->data_dma)) {
		ib_dma_unmap_single(conn->ibdev, tx->hdr_dma, sizeof(tx->hdr), DMA_TO_DEVICE);
		return -ENOMEM;
	}
	return 0;
}

/* Unmap @tx (mapped), complete its operation with @res, free it. */
static void zcx_ib_tx_free(struct zcx_ib_conn *conn, struct zcx_ib_tx *tx, int res)
{
	ib_dma_unmap_single(conn->ibdev, tx->hdr_dma, sizeof(tx->hdr), DMA_TO_DEVICE);
	if (tx->len)
		ib_dma_unmap_single(conn->ibdev, tx->data_dma, tx->len, DMA_TO_DEVICE);
	zcx_op_complete(tx->op, res, res ? 0 : tx->len, 0);
	kfree(tx);
}

static void zcx_ib_tx_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct zcx_ib_tx *tx = container_of(wc->wr_cqe, struct zcx_ib_tx, cqe), *next;
	struct zcx_ib_conn *conn = tx->conn;
	bool ok = wc->status == IB_WC_SUCCESS;

	zcx_ib_tx_free(conn, tx, ok ? 0 : -ECONNRESET);
	spin_lock(&conn->lock);
	conn->tx_posted--;
	next = list_first_entry_or_null(&conn->tx_waiting, struct zcx_ib_tx, link);
	if (next && conn->state == ZCX_IB_LIVE) {
		if (!zcx_ib_tx_post_locked(conn, next))
			list_del(&next->link);
		else
			ok = false;
	}
	spin_unlock(&conn->lock);
	if (!ok && wc->status != IB_WC_WR_FLUSH_ERR)
		zcx_ib_conn_schedule_kill(conn);
}

static void zcx_ib_send(struct zcx_conn *zconn, struct zcx_op *op)
{
	struct zcx_ib_conn *conn = zcx_conn_remote(zconn);
	struct zcx_ib_tx *tx;
	const void *data;
	u64 tag;
	int ret;

	/* Charged to the sender; the payload stays in @op's buffer. */
	tx = kmalloc(sizeof(*tx), GFP_KERNEL_ACCOUNT);
	if (!tx) {
		zcx_op_complete(op, -ENOMEM, 0, 0);
		return;
	}
	zcx_op_payload(op, &data, &tx->len, &tag);
	tx->conn = conn;
	tx->op = op;
	tx->hdr.tag = cpu_to_le64(tag);
	tx->hdr.len = cpu_to_le32(tx->len);
	tx->hdr.reserved = 0;

	spin_lock(&conn->lock);
	ret = -ECONNRESET;
	if (conn->state != ZCX_IB_LIVE)
		goto fail;
	ret = zcx_ib_tx_map(conn, tx, data);
	if (ret)
		goto fail;
	/* In order: after those already waiting. */
	if (conn->tx_posted < ZCX_IB_TX_DEPTH && list_empty(&conn->tx_waiting)) {
		ret = zcx_ib_tx_post_locked(conn, tx);
	} else {
		list_add_tail(&tx->link, &conn->tx_waiting);
		ret = 0;
	}
	spin_unlock(&conn->lock);
	if (ret)
		zcx_ib_tx_free(conn, tx, ret);
	return;
fail:
	spin_unlock(&conn->lock);
	zcx_op_complete(op, ret, 0, 0);
	kfree(tx);
}

/* --- setting up and tearing down ----------------------------------------- */

/* PD, CQ and QP for @conn on @id's device, @rx_depth receives. */
static int zcx_ib_qp_create(struct zcx_ib_conn *conn, struct rdma_cm_id *id, u32 rx_depth)
{
	struct ib_qp_init_attr attr = {};
	int ret;

	WRITE_ONCE(conn->ibdev, id->device);
	conn->pd = ib_alloc_pd(id->device, 0);
	if (IS_ERR(conn->pd)) {
		ret = PTR_ERR(conn->pd);
		conn->pd = NULL;
		return ret;
	}
	/* One more send and receive, and their completions, for the drain. */
	conn->cq = ib_alloc_cq(id->device, conn, ZCX_IB_TX_DEPTH + rx_depth + 2, 0,
			       IB_POLL_WORKQUEUE);
	if (IS_ERR(conn->cq)) {
		ret = PTR_ERR(conn->cq);
		conn->cq = NULL;
		return ret;
	}
	attr.send_cq = conn->cq;
	attr.recv_cq = conn->cq;
	attr.cap.max_send_wr = ZCX_IB_TX_DEPTH + 1;
	attr.cap.max_recv_wr = rx_depth + 1;
	attr.cap.max_send_sge = 2;
	attr.cap.max_recv_sge = 1;
	attr.sq_sig_type = IB_SIGNAL_ALL_WR;
	attr.qp_type = IB_QPT_RC;
	ret = rdma_create_qp(id, conn->pd, &attr);
	if (!ret)
		conn->qp = id->qp;
	return ret;
}

/* Post every receive buffer of an accepted connection. */
static int zcx_ib_rx_fill(struct zcx_ib_conn *conn)
{
	struct zcx_ib_rx *rx;
	int i, ret = 0;

	for (i = 0; i < ZCX_IB_RX_DEPTH && !ret; i++) {
		rx = zcx_ib_rx_alloc(conn);
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

/* Stop posting and fail the sends still waiting; conn->lock not held. */
static void zcx_ib_conn_stop(struct zcx_ib_conn *conn)
{
	struct zcx_ib_tx *tx, *tmp;
	LIST_HEAD(waiting);

	spin_lock(&conn->lock);
	conn->state = ZCX_IB_DEAD;
	list_splice_init(&conn->tx_waiting, &waiting);
	spin_unlock(&conn->lock);
	list_for_each_entry_safe(tx, tmp, &waiting, link)
		zcx_ib_tx_free(conn, tx, -ECONNRESET);
}

/*
 * Drain the QP (what was posted completes, flushed) and free QP, CQ and
 * PD.  Posting has stopped (ZCX_IB_DEAD).
 */
static void zcx_ib_qp_destroy(struct zcx_ib_conn *conn, struct rdma_cm_id *id)
{
	if (conn->qp) {
		ib_drain_qp(conn->qp);
		rdma_destroy_qp(id);
		conn->qp = NULL;
	}
	if (conn->cq) {
		ib_free_cq(conn->cq);
		conn->cq = NULL;
	}
	if (conn->pd) {
		ib_dealloc_pd(conn->pd);
		conn->pd = NULL;
	}
}

/*
 * Tear @conn down, once: no more posting, disconnect, drain (completing
 * what was posted), free the verbs resources, let go of the endpoint.
 * Sleeps; never called from a CQ or CM handler of @conn.
 */
static void zcx_ib_conn_kill(struct zcx_ib_conn *conn)
{
	struct rdma_cm_id *id;
	bool base_ref;

	mutex_lock(&conn->mutex);
	/* Only set before any teardown can run, only cleared here. */
	id = conn->cm_id;
	if (id) {
		/* Under the handler's lock: no handler makes a QP after this. */
		rdma_lock_handler(id);
		spin_lock(&conn->lock);
		conn->state = ZCX_IB_DEAD;
		spin_unlock(&conn->lock);
		/* A connect still waiting (device removal) gives up. */
		zcx_ib_connect_done(conn, -ECONNRESET);
		rdma_unlock_handler(id);
	}
	zcx_ib_conn_stop(conn);
	if (id) {
		if (conn->qp)
			rdma_disconnect(id);
		zcx_ib_qp_destroy(conn, id);
		rdma_destroy_id(id);
		conn->cm_id = NULL;
	}
	if (conn->ep) {
		zcx_ep_unaccept(conn->ep, &conn->acc);
		conn->ep = NULL;
	}
	base_ref = conn->base_ref;
	conn->base_ref = false;
	mutex_unlock(&conn->mutex);

	mutex_lock(&zcx_ib_conns_mutex);
	list_del_init(&conn->list);
	mutex_unlock(&zcx_ib_conns_mutex);
	if (base_ref)
		zcx_ib_conn_put(conn);
}

static void zcx_ib_teardown_work(struct work_struct *work)
{
	struct zcx_ib_conn *conn = container_of(work, struct zcx_ib_conn, teardown);

	zcx_ib_conn_kill(conn);
	zcx_ib_conn_put(conn);
}

/* The endpoint a passive connection feeds is destroyed (under its mutex). */
static void zcx_ib_ep_gone(struct zcx_accepted *acc)
{
	zcx_ib_conn_schedule_kill(container_of(acc, struct zcx_ib_conn, acc));
}

/* The device goes: every connection on it is torn down before it returns. */
void zcx_ib_device_gone(struct ib_device *ibdev)
{
	struct zcx_ib_conn *conn;

	for (;;) {
		mutex_lock(&zcx_ib_conns_mutex);
		list_for_each_entry(conn, &zcx_ib_conns, list)
			if (READ_ONCE(conn->ibdev) == ibdev)
				break;
		if (list_entry_is_head(conn, &zcx_ib_conns, list)) {
			mutex_unlock(&zcx_ib_conns_mutex);
			return;
		}
		kref_get(&conn->ref);
		mutex_unlock(&zcx_ib_conns_mutex);
		zcx_ib_conn_kill(conn);
		zcx_ib_conn_put(conn);
	}
}

/* --- rdma_cm --------------------------------------------------------------- */

static void zcx_ib_connect_done(struct zcx_ib_conn *conn, int status)
{
	if (completion_done(&conn->connected))
		return;
	conn->status = status;
	complete(&conn->connected);
}

static void zcx_ib_conn_param(struct rdma_conn_param *param)
{
	memset(param, 0, sizeof(*param));
	param->retry_count = 7;
	/* 7: retry without limit while the receiver has no buffer posted. */
	param->rnr_retry_count = 7;
	param->flow_control = 1;
}

static int zcx_ib_route_resolved(struct zcx_ib_conn *conn, struct rdma_cm_id *id)
{
	struct zcx_ib_hello hello = {
		.magic = cpu_to_le32(ZCX_IB_MAGIC),
		.version = cpu_to_le16(ZCX_IB_VERSION),
	};
	struct rdma_conn_param param;
	int ret;

	ret = zcx_ib_qp_create(conn, id, 0);
	if (ret)
		return ret;
	hello.ep_id = cpu_to_le64(conn->peer_id);
	hello.key = cpu_to_le64(conn->peer_key);
	zcx_ib_conn_param(&param);
	param.private_data = &hello;
	param.private_data_len = sizeof(hello);
	return rdma_connect_locked(id, &param);
}

/*
 * A connection request: accept it for a live ZCX_EP_NET endpoint with that
 * key.  Once the id is the connection's, only zcx_ib_conn_kill() destroys
 * it (and what was made on it), so this returns 0 even when it refuses.
 */
static int zcx_ib_accept(struct rdma_cm_id *id, const struct rdma_cm_event *ev)
{
	struct rdma_conn_param param;
	struct zcx_ib_hello hello;
	bool accepting = false;
	struct zcx_ib_conn *conn;
	struct zcx_ep *ep;
	int ret;

	if (ev->param.conn.private_data_len < sizeof(hello))
		goto reject;
	/* Copied: the data follows rdma_cm's header, unaligned. */
	memcpy(&hello, ev->param.conn.private_data, sizeof(hello));
	if (le32_to_cpu(hello.magic) != ZCX_IB_MAGIC || le16_to_cpu(hello.version) != ZCX_IB_VERSION)
		goto reject;
	if (atomic_inc_return(&zcx_ib_accepted) > ZCX_IB_MAX_ACCEPTED) {
		atomic_dec(&zcx_ib_accepted);
		goto reject;
	}
	conn = zcx_ib_conn_alloc(true);
	if (!conn) {
		atomic_dec(&zcx_ib_accepted);
		goto reject;
	}
	conn->cm_id = id;
	id->context = conn;
	conn->acc.gone = zcx_ib_ep_gone;
	/* Ours until we return: a teardown may be queued any time from here. */
	kref_get(&conn->ref);
	/* A teardown waits for this handler (rdma_lock_handler()) to set ->ep. */
	ep = zcx_ep_accept(le64_to_cpu(hello.ep_id), le64_to_cpu(hello.key), &conn->acc);
	ret = -ECONNREFUSED;
	if (ep) {
		conn->ep = ep;
		ret = zcx_ib_qp_create(conn, id, ZCX_IB_RX_DEPTH);
		if (!ret)
			ret = zcx_ib_rx_fill(conn);
		if (!ret) {
			zcx_ib_conn_param(&param);
			accepting = true;
			/* On failure it rejects by itself. */
			ret = rdma_accept(id, &param);
		}
	}
	if (ret) {
		if (!accepting)
			rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
		zcx_ib_conn_schedule_kill(conn);
	}
	zcx_ib_conn_put(conn);
	return 0;

reject:
	/* Not ours: rdma_cm destroys the id when we return non-zero. */
	rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
	return -ECONNREFUSED;
}

static int zcx_ib_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct zcx_ib_conn *conn = id->context;
	int ret;

	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		return zcx_ib_accept(id, ev);
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		/* From here the id is on a device, whose removal must find it. */
		WRITE_ONCE(conn->ibdev, id->device);
		ret = rdma_resolve_route(id, ZCX_IB_TIMEOUT_MS);
		if (ret)
			zcx_ib_connect_done(conn, ret);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		/* Connecting was given up (a signal): make nothing more. */
		ret = conn->state == ZCX_IB_DEAD ? -EINTR : zcx_ib_route_resolved(conn, id);
		if (ret)
			zcx_ib_connect_done(conn, ret);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		spin_lock(&conn->lock);
		if (conn->state == ZCX_IB_CONNECTING)
			conn->state = ZCX_IB_LIVE;
		spin_unlock(&conn->lock);
		if (!conn->passive)
			zcx_ib_connect_done(conn, 0);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		/* A passive connection that never came up goes. */
		if (conn->passive)
			zcx_ib_conn_schedule_kill(conn);
		else if (ev->event == RDMA_CM_EVENT_REJECTED)
			zcx_ib_connect_done(conn, -ECONNREFUSED);
		else if (ev->event == RDMA_CM_EVENT_CONNECT_ERROR)
			zcx_ib_connect_done(conn, -ECONNRESET);
		else
			zcx_ib_connect_done(conn, ev->status == -ETIMEDOUT ? -ETIMEDOUT :
						  -EHOSTUNREACH);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/* Fail what waits now; the teardown frees the rest. */
		if (!conn->passive)
			zcx_ib_connect_done(conn, -ECONNRESET);
		zcx_ib_conn_schedule_kill(conn);
		break;
	default:
		break;
	}
	return 0;
}

/* --- the backend ops ------------------------------------------------------ */

static bool zcx_ib_fill_addr(struct zcx_addr *addr)
{
	const struct sockaddr_in *in4 = (const void *)&zcx_ib_addr;
	const struct sockaddr_in6 *in6 = (const void *)&zcx_ib_addr;

	if (!zcx_ib_listener)
		return false;
	addr->family = zcx_ib_addr.ss_family;
	if (addr->family == AF_INET) {
		addr->port = in4->sin_port;
		memcpy(addr->ip, &in4->sin_addr, sizeof(in4->sin_addr));
	} else {
		addr->port = in6->sin6_port;
		memcpy(addr->ip, &in6->sin6_addr, sizeof(in6->sin6_addr));
	}
	return true;
}

static void zcx_ib_sockaddr(const struct zcx_addr *addr, struct sockaddr_storage *ss)
{
	struct sockaddr_in *in4 = (void *)ss;
	struct sockaddr_in6 *in6 = (void *)ss;

	memset(ss, 0, sizeof(*ss));
	if (addr->family == AF_INET) {
		in4->sin_family = AF_INET;
		in4->sin_port = addr->port;
		memcpy(&in4->sin_addr, addr->ip, sizeof(in4->sin_addr));
	} else {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = addr->port;
		memcpy(&in6->sin6_addr, addr->ip, sizeof(in6->sin6_addr));
	}
}

static int zcx_ib_connect(struct zcx_conn *zconn, const struct zcx_addr *addr)
{
	struct sockaddr_storage dst;
	struct zcx_ib_conn *conn;
	struct rdma_cm_id *id;
	int ret;

	conn = zcx_ib_conn_alloc(false);
	if (!conn)
		return -ENOMEM;
	conn->peer_id = addr->id;
	conn->peer_key = addr->key;
	id = rdma_create_id(&init_net, zcx_ib_cm_handler, conn, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id)) {
		ret = PTR_ERR(id);
		goto fail;
	}
	conn->cm_id = id;
	zcx_ib_sockaddr(addr, &dst);
	ret = rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, ZCX_IB_TIMEOUT_MS);
	if (ret)
		goto fail;
	ret = wait_for_completion_killable(&conn->connected);
	if (!ret)
		ret = conn->status;
	else
		ret = -EINTR;
	if (ret)
		goto fail;
	zcx_conn_set_remote(zconn, conn);
	return 0;

fail:
	zcx_ib_conn_kill(conn);
	zcx_ib_conn_put(conn);
	return ret;
}

/* zcx.ko let go of an outgoing connection. */
static void zcx_ib_close(struct zcx_conn *zconn)
{
	struct zcx_ib_conn *conn = zcx_conn_remote(zconn);

	zcx_ib_conn_schedule_kill(conn);
	zcx_ib_conn_put(conn);
}

const struct zcx_backend_ops zcx_ib_ops = {
	.owner		= THIS_MODULE,
	.max_inline	= ZCX_IB_INLINE,
	.fill_addr	= zcx_ib_fill_addr,
	.connect	= zcx_ib_connect,
	.send		= zcx_ib_send,
	.close		= zcx_ib_close,
	.release_rx	= zcx_ib_release_rx,
};

/* --- the listener ---------------------------------------------------------- */

/*
 * Listen on @port of every address of the node, and advertise @listen (an
 * IPv4 or IPv6 address of this node) in endpoint addresses.  Nothing when
 * @listen is empty: endpoints are then reachable on this node only.
 */
int zcx_ib_listen_init(const char *listen, u16 port)
{
	struct sockaddr_storage any = {};
	struct rdma_cm_id *id;
	char port_str[8];
	int ret;

	if (!listen || !*listen)
		return 0;
	snprintf(port_str, sizeof(port_str), "%u", port);
	ret = inet_pton_with_scope(&init_net, AF_UNSPEC, listen, port_str, &zcx_ib_addr);
	if (ret)
		return ret;
	id = rdma_create_id(&init_net, zcx_ib_cm_handler, NULL, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id))
		return PTR_ERR(id);
	/* Every address of the node, on the advertised port. */
	any.ss_family = zcx_ib_addr.ss_family;
	if (any.ss_family == AF_INET)
		((struct sockaddr_in *)&any)->sin_port = ((struct sockaddr_in *)&zcx_ib_addr)->sin_port;
	else
		((struct sockaddr_in6 *)&any)->sin6_port =
			((struct sockaddr_in6 *)&zcx_ib_addr)->sin6_port;
	ret = rdma_bind_addr(id, (struct sockaddr *)&any);
	if (!ret)
		ret = rdma_listen(id, 128);
	if (ret) {
		rdma_destroy_id(id);
		return ret;
	}
	zcx_ib_listener = id;
	return 0;
}

void zcx_ib_listen_exit(void)
{
	if (zcx_ib_listener)
		rdma_destroy_id(zcx_ib_listener);
	zcx_ib_listener = NULL;
}

int zcx_ib_conn_init(void)
{
	zcx_ib_wq = alloc_workqueue("zcx_ib", 0, 0);
	return zcx_ib_wq ? 0 : -ENOMEM;
}

/* No connection is left (each holds the module); wait for their last work. */
void zcx_ib_conn_exit(void)
{
	destroy_workqueue(zcx_ib_wq);
}
