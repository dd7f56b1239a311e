// SPDX-License-Identifier: GPL-2.0-only
/*
 * conn.c - zcx connections between nodes: one RC queue pair per zcx
 * connection, set up with the kernel's rdma_cm.
 *
 * The node listens on one rdma_cm port (module parameter "listen"); an
 * endpoint's address carries it.  Connecting sends a hello with the
 * target endpoint's number and key; the listener accepts it only for a
 * live endpoint with that key, with a welcome telling how many receive
 * buffers it posted for it (rx_buffers).  A connection is one-way, as on
 * a node: the active side sends, the passive side receives.
 *
 * Messages and rendezvous are xfer.c's, registrations mr.c's.
 *
 * Teardown (zcx_ib_conn_kill()) happens once, from a work item, from
 * connect's caller, or from the device's removal: it stops posting,
 * disconnects, drains the queue pair (which completes what was posted),
 * and frees the verbs resources.  Messages zcx.ko still holds are plain
 * memory by then (their bodies unmapped when they arrived, their headers
 * in an array unmapped once the CQ is freed and freed with the
 * connection, which they hold) and outlive it.
 */
#include <linux/inet.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/module.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/socket.h>

#include "zcx_ib.h"

/* Connections accepted on the node, at most max_accepted (main.c). */
static atomic_t zcx_ib_accepted = ATOMIC_INIT(0);

/*
 * Teardowns run on zcx_ib_wq, the work of live connections (serving a
 * put or get, letting kept registrations go) on zcx_ib_work_wq.  A
 * teardown waits for its connection's serving: on one queue, as many
 * teardowns as it runs at once, each waiting for work queued behind them,
 * would wait for ever.
 */
static struct workqueue_struct *zcx_ib_wq, *zcx_ib_work_wq;
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
	init_rwsem(&conn->building);
	spin_lock_init(&conn->lock);
	init_completion(&conn->connected);
	INIT_LIST_HEAD(&conn->tx_waiting);
	INIT_LIST_HEAD(&conn->held);
	INIT_LIST_HEAD(&conn->inv_waiting);
	INIT_LIST_HEAD(&conn->mrs);
	conn->quiet_cqe.done = zcx_ib_quiet_done;
	INIT_LIST_HEAD(&conn->acc.link);
	INIT_WORK(&conn->teardown, zcx_ib_teardown_work);
	zcx_ib_keepalive_init(conn);
	zcx_ib_serve_init(conn);
	zcx_ib_kept_init(conn);
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

	if (conn->counted)
		atomic_dec(&zcx_ib_accepted);
	kfree(conn->rx_hdrs);
	kfree(conn);
	module_put(THIS_MODULE);
}

void zcx_ib_conn_put(struct zcx_ib_conn *conn)
{
	kref_put(&conn->ref, zcx_ib_conn_free);
}

/* Queue @work, of a live connection; false if pending. */
bool zcx_ib_queue_work(struct work_struct *work)
{
	return queue_work(zcx_ib_work_wq, work);
}

/* Tear @conn down from the workqueue (never from a CQ or CM handler). */
void zcx_ib_conn_schedule_kill(struct zcx_ib_conn *conn)
{
	kref_get(&conn->ref);
	if (!queue_work(zcx_ib_wq, &conn->teardown))
		zcx_ib_conn_put(conn);
}

/* --- setting up and tearing down ----------------------------------------- */

/* An asynchronous event of @conn's queue pair: a fatal one ends it. */
static void zcx_ib_qp_event(struct ib_event *ev, void *context)
{
	struct zcx_ib_conn *conn = context;

	switch (ev->event) {
	case IB_EVENT_QP_FATAL:
	case IB_EVENT_QP_REQ_ERR:
	case IB_EVENT_QP_ACCESS_ERR:
		zcx_ib_conn_schedule_kill(conn);
		break;
	default:
		break;
	}
}

/*
 * PD, CQ and QP for @conn on @id's device, and its receive buffers: an
 * accepted connection's for messages, an outgoing one's for replies.
 */
static int zcx_ib_qp_create(struct zcx_ib_conn *conn, struct rdma_cm_id *id)
{
	const struct ib_device_attr *attrs = &id->device->attrs;
	u32 rx_depth = conn->passive ? conn->rx_depth : ZCX_IB_REPLY_DEPTH;
	struct ib_qp_init_attr attr = {};
	int ret;

	conn->rx_size = conn->passive ? ZCX_IB_INLINE : ZCX_IB_REPLY_SIZE;
	/*
	 * Retransmissions replay, on Soft-RoCE, the registrations queued
	 * behind the lost packet, which then fail and break the connection:
	 * a long ACK timeout keeps an emulated or loaded machine from
	 * retransmitting what is merely slow.
	 */
	ret = rdma_set_ack_timeout(id, ZCX_IB_ACK_TIMEOUT);
	if (ret)
		return ret;

	WRITE_ONCE(conn->ibdev, id->device);
	conn->sq_depth = min_t(u32, ZCX_IB_SQ_DEPTH, attrs->max_qp_wr - 1);
	conn->mr_pages = min_t(u32, ZCX_IB_MR_PAGES, attrs->max_fast_reg_page_list_len);
	/* A device that tells no limit for READs gets one entry per READ. */
	conn->rdma_sge = max_t(int, 1, min3(ZCX_IB_RDMA_SGE, attrs->max_send_sge, attrs->max_sge_rd));
	conn->read_mr = rdma_protocol_iwarp(id->device, id->port_num);
	conn->pd = ib_alloc_pd(id->device, 0);
	if (IS_ERR(conn->pd)) {
		ret = PTR_ERR(conn->pd);
		conn->pd = NULL;
		return ret;
	}
	/* One more send and receive, and their completions, for the drain. */
	conn->cq = ib_alloc_cq(id->device, conn, conn->sq_depth + rx_depth + 2, 0,
			       IB_POLL_WORKQUEUE);
	if (IS_ERR(conn->cq)) {
		ret = PTR_ERR(conn->cq);
		conn->cq = NULL;
		return ret;
	}
	attr.event_handler = zcx_ib_qp_event;
	attr.qp_context = conn;
	attr.send_cq = conn->cq;
	attr.recv_cq = conn->cq;
	attr.cap.max_send_wr = conn->sq_depth + 1;
	attr.cap.max_recv_wr = rx_depth + 1;
	attr.cap.max_send_sge = max(2U, conn->rdma_sge);
	attr.cap.max_recv_sge = 2;	/* header and body (accepted; a reply's: 1) */
	attr.sq_sig_type = IB_SIGNAL_REQ_WR;
	attr.qp_type = IB_QPT_RC;
	ret = rdma_create_qp(id, conn->pd, &attr);
	if (ret)
		return ret;
	conn->qp = id->qp;
	ret = zcx_ib_ctl_init(conn);
	if (ret)
		return ret;
	return zcx_ib_rx_fill(conn, rx_depth);
}

/*
 * Drain the QP (what was posted completes, flushed) and free QP, CQ and
 * PD.  Posting has stopped (ZCX_IB_DEAD).
 */
static void zcx_ib_qp_destroy(struct zcx_ib_conn *conn, struct rdma_cm_id *id)
{
	if (conn->qp) {
		ib_drain_qp(conn->qp);
		/* Its tasks stopped too: no READ of the peer's is still copying. */
		rdma_destroy_qp(id);
		conn->qp = NULL;
		/* Nothing is posted: end what the device left unfinished. */
		zcx_ib_jobs_fail(conn);
		zcx_ib_kept_drop_all(conn);
		zcx_ib_ctl_free(conn);
		zcx_ib_mrs_free(conn);
	}
	if (conn->cq) {
		ib_free_cq(conn->cq);
		conn->cq = NULL;
	}
	/* No completion handler runs any more, even if the drain failed. */
	zcx_ib_rx_hdrs_unmap(conn);
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
		/* Dead: it does not arm itself again. */
		cancel_delayed_work_sync(&conn->keepalive);
		/* No job is being built on what is freed below. */
		down_write(&conn->building);
		up_write(&conn->building);
	}
	if (id) {
		if (conn->qp)
			rdma_disconnect(id);
		zcx_ib_qp_destroy(conn, id);
		rdma_destroy_id(id);
		conn->cm_id = NULL;
	}
	/*
	 * Nothing completes any more, so nothing is queued for serving: let
	 * what was end (it fails, the connection being dead) while conn->ep
	 * still holds the endpoint it names.
	 */
	flush_work(&conn->serve);
	/* Jobs that never got posted (no queue pair, or never connected). */
	zcx_ib_jobs_fail(conn);
	if (conn->ep) {
		zcx_ep_unaccept(conn->ep, &conn->acc, conn->refused);
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

/*
 * keepalive_ms was written: each live connection checks its peer that long
 * from now (from 0, it starts checking), or, set to 0, no more.  A check
 * already running sends its packet and does not re-arm.  Under conn->lock,
 * under which the teardown marks a connection dead before it cancels the
 * check.
 */
void zcx_ib_keepalive_rearm_all(void)
{
	unsigned int ms = READ_ONCE(zcx_ib_keepalive_ms);
	struct zcx_ib_conn *conn;

	mutex_lock(&zcx_ib_conns_mutex);
	list_for_each_entry(conn, &zcx_ib_conns, list) {
		spin_lock(&conn->lock);
		if (!ms)
			cancel_delayed_work(&conn->keepalive);
		else if (conn->state == ZCX_IB_LIVE)
			mod_delayed_work(system_wq, &conn->keepalive, msecs_to_jiffies(ms));
		spin_unlock(&conn->lock);
	}
	mutex_unlock(&zcx_ib_conns_mutex);
}

/* --- rdma_cm --------------------------------------------------------------- */

static void zcx_ib_connect_done(struct zcx_ib_conn *conn, int status)
{
	if (completion_done(&conn->connected))
		return;
	conn->status = status;
	complete(&conn->connected);
}

/*
 * Connection parameters on @dev: the passive side reads (RDMA READ) from
 * the active one, so it needs READs in flight (@initiator_depth) and the
 * active side room to answer them (@responder_resources).  @req is the
 * request being accepted, NULL when connecting.
 */
static void zcx_ib_conn_param(struct rdma_conn_param *param, const struct ib_device *dev,
			      const struct rdma_conn_param *req)
{
	memset(param, 0, sizeof(*param));
	param->retry_count = ZCX_IB_RETRY_COUNT;
	/* 7: retry without limit while the receiver has no buffer posted. */
	param->rnr_retry_count = 7;
	param->flow_control = 1;
	param->responder_resources = min_t(u32, ZCX_IB_RD_ATOM, dev->attrs.max_qp_rd_atom);
	param->initiator_depth = min_t(u32, ZCX_IB_RD_ATOM, dev->attrs.max_qp_init_rd_atom);
	if (req) {
		/* As the request event reports them: from our side. */
		param->responder_resources = min(param->responder_resources,
						 req->responder_resources);
		param->initiator_depth = min(param->initiator_depth, req->initiator_depth);
	}
}

static int zcx_ib_route_resolved(struct zcx_ib_conn *conn, struct rdma_cm_id *id)
{
	struct zcx_ib_hello hello = {
		.magic = cpu_to_le32(ZCX_IB_MAGIC),
		.version = cpu_to_le16(ZCX_IB_VERSION),
	};
	struct rdma_conn_param param;
	int ret;

	ret = zcx_ib_qp_create(conn, id);
	if (ret)
		return ret;
	hello.ep_id = cpu_to_le64(conn->peer_id);
	hello.key = cpu_to_le64(conn->peer_key);
	zcx_ib_conn_param(&param, id->device, NULL);
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
	struct zcx_ib_welcome welcome = {
		.magic = cpu_to_le32(ZCX_IB_MAGIC),
		.version = cpu_to_le16(ZCX_IB_VERSION),
	};
	struct rdma_conn_param param;
	struct mem_cgroup *old_memcg;
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
	/*
	 * The requester's transport, as the IB CM tells it from here (iWARP's
	 * MPA need not; its provider decides): we READ from it, so it must
	 * take at least one READ at a time, and its retry count becomes ours
	 * (ZCX_IB_RETRY_COUNT).
	 */
	if (rdma_cap_ib_cm(id->device, id->port_num) &&
	    (!ev->param.conn.initiator_depth || ev->param.conn.retry_count > ZCX_IB_RETRY_COUNT))
		goto reject;
	conn = zcx_ib_conn_alloc(true);
	if (!conn)
		goto reject;
	conn->cm_id = id;
	id->context = conn;
	conn->acc.gone = zcx_ib_ep_gone;
	/* Read once: the parameter may change meanwhile. */
	conn->rx_depth = READ_ONCE(zcx_ib_rx_buffers);
	welcome.credits = cpu_to_le16(conn->rx_depth);
	/* Ours until we return: a teardown may be queued any time from here. */
	kref_get(&conn->ref);
	/* A teardown waits for this handler (rdma_lock_handler()) to set ->ep. */
	ep = zcx_ep_accept(le64_to_cpu(hello.ep_id), le64_to_cpu(hello.key), &conn->acc);
	ret = -ECONNREFUSED;
	if (ep) {
		conn->ep = ep;
		/*
		 * Counted once let in, so a wrong key takes no slot; refused
		 * for lack of one, it gives it back at once.
		 */
		conn->counted = (unsigned int)atomic_inc_return(&zcx_ib_accepted) <=
				READ_ONCE(zcx_ib_max_accepted);
		if (!conn->counted)
			atomic_dec(&zcx_ib_accepted);
	}
	if (conn->counted) {
		/* Its receive buffers are the endpoint's owner's. */
		old_memcg = set_active_memcg(zcx_ep_memcg(ep));
		ret = zcx_ib_qp_create(conn, id);
		set_active_memcg(old_memcg);
		if (!ret) {
			zcx_ib_conn_param(&param, id->device, &ev->param.conn);
			param.private_data = &welcome;
			param.private_data_len = sizeof(welcome);
			accepting = true;
			/*
			 * Live before the active side hears of it: its first
			 * RTS may come before our ESTABLISHED, and the READ
			 * then finds the QP ready to send (accepting moves it
			 * to RTS before it answers).
			 */
			spin_lock(&conn->lock);
			conn->state = ZCX_IB_LIVE;
			spin_unlock(&conn->lock);
			/* On failure it rejects by itself. */
			ret = rdma_accept(id, &param);
		}
	}
	if (ret) {
		if (!accepting)
			rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
		/* It carried nothing: the endpoint's receives do not fail for it. */
		conn->refused = true;
		zcx_ib_conn_schedule_kill(conn);
	}
	zcx_ib_conn_put(conn);
	return 0;

reject:
	/* Not ours: rdma_cm destroys the id when we return non-zero. */
	rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
	return -ECONNREFUSED;
}

/*
 * The credits the peer's welcome gives, accepting the active side's
 * connection, in *@credits; -ECONNREFUSED if it gives none we can take: a
 * peer speaking another version, as one that refuses it.
 */
static int zcx_ib_welcome_credits(const struct rdma_cm_event *ev, u32 *credits)
{
	struct zcx_ib_welcome welcome;

	if (ev->param.conn.private_data_len < sizeof(welcome))
		return -ECONNREFUSED;
	/* Copied: the data follows rdma_cm's header, unaligned. */
	memcpy(&welcome, ev->param.conn.private_data, sizeof(welcome));
	*credits = le16_to_cpu(welcome.credits);
	if (le32_to_cpu(welcome.magic) != ZCX_IB_MAGIC ||
	    le16_to_cpu(welcome.version) != ZCX_IB_VERSION ||
	    *credits < ZCX_IB_RX_MIN || *credits > ZCX_IB_RX_MAX)
		return -ECONNREFUSED;
	return 0;
}

static int zcx_ib_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct zcx_ib_conn *conn = id->context;
	u32 credits = 0;
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
		/* Only the active side's comes with the peer's welcome. */
		ret = conn->passive ? 0 : zcx_ib_welcome_credits(ev, &credits);
		spin_lock(&conn->lock);
		if (conn->failed_connecting)
			ret = -ECONNRESET;
		/* Before any message can go: connecting has not returned. */
		if (!ret && !conn->passive) {
			conn->rx_depth = credits;
			conn->credits = credits;
		}
		if (conn->state == ZCX_IB_CONNECTING && !ret)
			conn->state = ZCX_IB_LIVE;
		zcx_ib_keepalive_arm(conn);
		spin_unlock(&conn->lock);
		/* A failed connect is torn down by zcx_ib_connect(). */
		if (!conn->passive)
			zcx_ib_connect_done(conn, ret);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		/* A passive connection that never came up goes. */
		if (conn->passive) {
			zcx_ib_conn_schedule_kill(conn);
			break;
		}
		if (ev->event == RDMA_CM_EVENT_REJECTED)
			zcx_ib_connect_done(conn, -ECONNREFUSED);
		else if (ev->event == RDMA_CM_EVENT_CONNECT_ERROR)
			zcx_ib_connect_done(conn, -ECONNRESET);
		else
			zcx_ib_connect_done(conn, ev->status == -ETIMEDOUT ? -ETIMEDOUT :
						  -EHOSTUNREACH);
		/*
		 * Also after connecting: on RoCE, rdma_cm reports UNREACHABLE
		 * when the peer's address moved to another MAC (a neighbour
		 * update), which the queue pair's packets do not follow.  The
		 * connection goes, as on a disconnect; a new one finds the
		 * new MAC.  (Connecting, zcx_ib_connect() tears down too.)
		 */
		zcx_ib_conn_schedule_kill(conn);
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
	.pull		= zcx_ib_pull,
	.rma		= zcx_ib_rma,
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
	if (!zcx_ib_wq)
		return -ENOMEM;
	zcx_ib_work_wq = alloc_workqueue("zcx_ib_work", 0, 0);
	if (!zcx_ib_work_wq) {
		destroy_workqueue(zcx_ib_wq);
		return -ENOMEM;
	}
	return 0;
}

/* No connection is left (each holds the module); wait for their last work. */
void zcx_ib_conn_exit(void)
{
	destroy_workqueue(zcx_ib_wq);
	destroy_workqueue(zcx_ib_work_wq);
}
