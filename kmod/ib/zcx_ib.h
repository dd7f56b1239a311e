/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * zcx_ib.h - what the files of zcx_ib.ko share.
 *
 * Locking, outermost first:
 *   zcx_ib_conn.mutex	a connection's verbs resources while they are
 *				torn down (zcx_ib_conn_kill());
 *   rdma_cm's handler_mutex	held around zcx_ib_cm_handler(), which takes
 *				zcx.ko's match_mutex and zcx_ib_conns_mutex
 *				(accepting) but never conn->mutex;
 *   zcx_ib_conns_mutex	the list of connections (a leaf);
 *   zcx_ib_conn.lock	spinlock: state, sends in flight and waiting,
 *				posting of work requests.
 * Completion handlers run on ib_core's completion workqueue and take only
 * conn->lock and what zcx.ko's delivery and completion take.
 */
#ifndef ZCX_IB_H
#define ZCX_IB_H

#include <linux/completion.h>
#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_cm.h>
#include <rdma/rdma_cm.h>

#include "backend.h"

/* Bytes one message carries: a page with the header. */
#define ZCX_IB_INLINE		(PAGE_SIZE - sizeof(struct zcx_ib_hdr))
#define ZCX_IB_RX_DEPTH		32	/* receive buffers (pages) of an accepted connection */
#define ZCX_IB_MAX_ACCEPTED	1024	/* accepted connections on the node */
#define ZCX_IB_TX_DEPTH		64	/* sends in flight on a connection */
#define ZCX_IB_TIMEOUT_MS	10000	/* address and route resolution */
#define ZCX_IB_MAGIC		0x7a637831	/* "zcx1" */
#define ZCX_IB_VERSION		1

/* What a connection request carries (at most 56 bytes over IP). */
struct zcx_ib_hello {
	__le32 magic;
	__le16 version;
	__le16 reserved;
	__le64 ep_id;
	__le64 key;
};

/* The head of every message. */
struct zcx_ib_hdr {
	__le64 tag;
	__le32 len;
	__le32 reserved;
};

enum zcx_ib_state {
	ZCX_IB_CONNECTING,
	ZCX_IB_LIVE,
	ZCX_IB_DEAD,
};

struct zcx_ib_conn;

/* A receive buffer; while zcx.ko holds its message, a connection reference. */
struct zcx_ib_rx {
	struct ib_cqe cqe;
	struct zcx_ib_conn *conn;
	u64 dma;		/* mapped while posted, else 0 */
	void *buf;		/* a page: struct zcx_ib_hdr, then up to ZCX_IB_INLINE */
};

/* A send: the operation it completes, whose buffer holds the payload. */
struct zcx_ib_tx {
	struct ib_cqe cqe;
	struct zcx_ib_conn *conn;
	struct zcx_op *op;
	struct list_head link;	/* on conn->tx_waiting */
	struct zcx_ib_hdr hdr;
	u64 hdr_dma;
	u64 data_dma;		/* mapped if @len */
	u32 len;		/* payload bytes */
};

/**
 * struct zcx_ib_conn - one RC queue pair: an outgoing zcx connection
 *		(active) or one accepted into a local endpoint (passive).
 * @ref:	held by zcx.ko's connection (active) or by being connected
 *		(passive, until zcx_ib_conn_kill()), by queued teardown work
 *		and by received messages zcx.ko holds.
 * @mutex:	see the lock order.
 * @lock:	see the lock order.
 * @state:	under @lock.
 * @status:	active: the outcome of connecting ...
 * @connected:	... signalled here.
 * @cm_id:	the rdma_cm id; NULL once destroyed.
 * @ibdev:	its device, for DMA mapping.
 * @pd, @cq:	ours, on @ibdev; the QP is @cm_id->qp.
 * @qp:		the queue pair, NULL until made and once destroyed.
 * @passive:	accepted, not initiated.
 * @peer_id:	active: the endpoint connected to ...
 * @peer_key:	... and its key, for the hello.
 * @ep:		passive: the endpoint (a reference) ...
 * @acc:	... and our entry on its list.
 * @tx_posted:	sends posted and not yet completed (under @lock).
 * @tx_waiting:	sends waiting for room (under @lock).
 * @teardown:	zcx_ib_conn_kill() from zcx_ib_wq.
 * @list:	on zcx_ib_conns.
 * @base_ref:	passive: the reference of being connected is still held.
 */
struct zcx_ib_conn {
	struct kref ref;
	struct mutex mutex;
	spinlock_t lock;
	enum zcx_ib_state state;
	int status;
	struct completion connected;
	struct rdma_cm_id *cm_id;
	struct ib_device *ibdev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp;
	bool passive;
	u64 peer_id;
	u64 peer_key;
	struct zcx_ep *ep;
	struct zcx_accepted acc;
	u32 tx_posted;
	struct list_head tx_waiting;
	struct work_struct teardown;
	struct list_head list;
	bool base_ref;
};

/* conn.c */
extern const struct zcx_backend_ops zcx_ib_ops;
int zcx_ib_listen_init(const char *listen, u16 port);
void zcx_ib_listen_exit(void);
void zcx_ib_device_gone(struct ib_device *ibdev);
int zcx_ib_conn_init(void);
void zcx_ib_conn_exit(void);

#endif /* ZCX_IB_H */
