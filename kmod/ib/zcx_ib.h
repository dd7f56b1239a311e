/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * zcx_ib.h - what the files of zcx_ib.ko share.
 *
 * Locking, outermost first:
 *   zcx_ib_conn.mutex	a connection's verbs resources while they are
 *				torn down (zcx_ib_conn_kill());
 *   zcx_ib_conn.building	rwsem: held (read) while a job is built on
 *				the connection's PD and device, from process
 *				context or a CQ handler; the teardown takes it
 *				(write) once the connection is dead, so that
 *				none is being built when it frees them;
 *   rdma_cm's handler_mutex	held around zcx_ib_cm_handler(), which takes
 *				zcx.ko's match_mutex and zcx_ib_conns_mutex
 *				(accepting) but never conn->mutex;
 *   zcx_ib_conns_mutex	the list of connections (takes only conn->lock,
 *				when keepalive_ms changes);
 *   zcx_ib_conn.lock	spinlock: state, sends in flight and waiting,
 *				posting of work requests.
 * Completion handlers run on ib_core's completion workqueue and take
 * conn->lock and what zcx.ko's delivery and completion take; a message
 * matched there is pulled there, which takes conn->building (read) and
 * may sleep (allocating, registering).  A PUT or GET is served by the
 * connection's serve work, not there: it takes what zcx_ep_rma_target()
 * takes (the endpoint's match_mutex, its context's expose_lock and lock,
 * and, for a range remapped since it was exposed, the owner's mmap_lock,
 * pinning, which may fault pages in and so take long, and beyond the
 * owner's RLIMIT_MEMLOCK what evicting its unused regions takes), then
 * conn->building (read), and then, for a kept registration it makes, the
 * context's lock again (zcx_rma_target_watch()), as a pull does
 * (zcx_op_watch()).  Any job that registers pages takes the context's
 * lock once more, holding no lock but conn->building, to count them
 * (zcx_op_regs_posted(), zcx_rma_target_regs_posted()).  The keepalive
 * work takes conn->lock only.
 * The work letting go of kept registrations (kept.c) takes
 * conn->building (read), then conn->lock; zcx.ko calls a kept
 * registration's watch under its innermost lock, and the watch only
 * queues that work.
 */
#ifndef ZCX_IB_H
#define ZCX_IB_H

#include <linux/completion.h>
#include <linux/errno.h>
#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/rwsem.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_cm.h>
#include <rdma/rdma_cm.h>

#include "backend.h"

/*
 * Bytes one message carries, at most: 8 KiB, so that messages up to two
 * 4 KiB pages go inline, one SEND instead of a rendezvous's three trips across
 * the network (request, READ, its answer); part of the wire, the same on
 * every node whatever its page size.  A receive buffer takes the header
 * apart from these bytes, so that they fill a kmalloc() size (xfer.c).
 */
#define ZCX_IB_INLINE		8192
/*
 * Receive buffers of an accepted connection: the rx_buffers parameter,
 * from ZCX_IB_RX_MIN to ZCX_IB_RX_MAX.  Accepting tells the active side
 * how many (struct zcx_ib_welcome): its credits to start with.
 */
#define ZCX_IB_RX_MIN		8
#define ZCX_IB_RX_MAX		32
/*
 * Inline messages not received yet on an accepted connection with
 * @depth buffers: from ZCX_IB_HOLD_MAX, one arriving is copied out of its
 * buffer and the sender told to stop sending inline; from
 * ZCX_IB_UNRECEIVED_MAX (which a sender that heeds it never reaches)
 * none is copied (xfer.c).
 */
#define ZCX_IB_HOLD_MAX(depth)		((depth) - (depth) / 4)
#define ZCX_IB_UNRECEIVED_MAX(depth)	(2 * (depth))
/*
 * Bytes of RTS messages an accepted connection keeps copied out of their
 * buffers until their pull is done, at most: some 3,600 requests of a
 * segment each, about 1 MiB with what zcx.ko keeps for each.  More keep
 * their buffers (xfer.c).
 */
#define ZCX_IB_RTS_COPY_BYTES	(256U << 10)
/* Inline messages an outgoing connection queues, waiting for credits. */
#define ZCX_IB_EAGER_QUEUE(depth)	((depth) / 2)
/* Credits go back once the sender may have fewer than this (xfer.c). */
#define ZCX_IB_CREDIT_LOW(depth)	((depth) / 2)
/*
 * FINs an accepted connection has sent that the sender has not yet said
 * it took (ZCX_IB_TAKEN, sent once it took half of them): its reply
 * buffers for them are posted again.
 */
#define ZCX_IB_FIN_MAX		128
/*
 * Receive buffers of an outgoing connection, for the FINs and CREDITs
 * coming back: one per FIN the receiver may have out, and one CREDIT per
 * credit that has not come back yet, so it never runs out.
 */
#define ZCX_IB_REPLY_DEPTH	(ZCX_IB_FIN_MAX + ZCX_IB_RX_MAX)
#define ZCX_IB_REPLY_SIZE	sizeof(struct zcx_ib_fin)	/* a reply's body, at most */
#define ZCX_IB_SQ_DEPTH		1024	/* work requests on a send queue, at most */
#define ZCX_IB_MR_PAGES		512	/* pages one fast registration maps, at most */
/*
 * Bytes of contiguous pages in one scatter entry, at most: siw maps a
 * whole entry per page of an MR, and this keeps an MR's length, which a
 * segment tells in 32 bits, below 4 GiB.
 */
#define ZCX_IB_SG_MAX		(4U << 20)
#define ZCX_IB_MAX_SEGS		128	/* registrations of one rendezvous message */
#define ZCX_IB_MR_CACHE		64	/* idle registrations a connection keeps */
/* Registrations a connection keeps for later messages (kept.c), at most ... */
#define ZCX_IB_KEPT_MAX		64
#define ZCX_IB_KEPT_MRS		256	/* ... and the MRs they take, at most */
#define ZCX_IB_RDMA_SGE		8	/* scatter entries of a READ or WRITE, at most */
#define ZCX_IB_RD_ATOM		16	/* RDMA READs in flight, at most */
#define ZCX_IB_TIMEOUT_MS	10000	/* address and route resolution */
/* Transport ACK timeout, 4.096 us << this: 4.3 s (see conn.c). */
#define ZCX_IB_ACK_TIMEOUT	20
/*
 * Transport retries after the first timeout: about 30 s in all.  Not 7,
 * which Soft-RoCE takes for "retry forever" (as 7 means for
 * receiver-not-ready retries): a peer gone would go unnoticed.  An
 * accepted connection's queue pair takes the requester's count (the CM's
 * reply carries none), so a request asking for more is refused.
 */
#define ZCX_IB_RETRY_COUNT	6
#define ZCX_IB_MAGIC		0x7a637831	/* "zcx1" */
#define ZCX_IB_VERSION		10

/* What a connection request carries (at most 56 bytes over IP). */
struct zcx_ib_hello {
	__le32 magic;
	__le16 version;
	__le16 reserved;
	__le64 ep_id;
	__le64 key;
};

/*
 * What accepting a connection answers (at most 196 bytes on InfiniBand
 * and RoCE): @credits, the receive buffers posted for the active side's
 * messages, from ZCX_IB_RX_MIN to ZCX_IB_RX_MAX.
 */
struct zcx_ib_welcome {
	__le32 magic;
	__le16 version;
	__le16 credits;
};

/*
 * Messages.  EAGER carries the payload; RTS (active to passive) offers a
 * longer one as registered segments for the receiver to read, and FIN
 * (passive to active) says it has been read.  CREDIT (passive to active)
 * gives back @credits receive buffers.  PUT and GET (active to passive)
 * ask the passive side to READ the segments into, or WRITE them from,
 * the range its endpoint's context exposed as @rkey; a short PUT carries
 * its bytes instead.  A FIN answers them too, with the outcome.  TAKEN
 * (active to passive, taking a credit like the others) says that @credits
 * more FINs were taken, their buffers posted again.
 */
enum zcx_ib_type {
	ZCX_IB_EAGER,
	ZCX_IB_RTS,
	ZCX_IB_FIN,
	ZCX_IB_CREDIT,
	ZCX_IB_PUT,
	ZCX_IB_GET,
	ZCX_IB_TAKEN,
};

/*
 * CREDIT's flag: the passive side holds ZCX_IB_HOLD_MAX inline messages
 * not yet received, so the active side sends every message as an RTS
 * until a CREDIT without it comes (xfer.c).
 */
#define ZCX_IB_EAGER_OFF	0x1

/* The head of every message: @len bytes follow it. */
struct zcx_ib_hdr {
	__le64 tag;
	__le32 len;
	u8 type;
	u8 flags;
	__le16 credits;
};

struct zcx_ib_seg {
	__le64 addr;
	__le32 len;
	__le32 rkey;
};

/*
 * RTS, PUT, GET: @len bytes in @segs (or, for a short PUT, no segment
 * and the bytes after @segs); PUT, GET: at @raddr in the range exposed as
 * @rkey.  The FIN echoes @cookie.
 */
struct zcx_ib_rts {
	__le64 len;
	__le64 cookie;
	__le64 raddr;
	__le64 rkey;
	__le32 nseg;
	__le32 reserved;
	struct zcx_ib_seg segs[];
};

/*
 * The longest PUT that carries its bytes: its message, header included,
 * fits in ZCX_IB_INLINE bytes, a kmalloc() size.
 */
#define ZCX_IB_PUT_INLINE	(ZCX_IB_INLINE - sizeof(struct zcx_ib_hdr) - sizeof(struct zcx_ib_rts))
/*
 * The longest PUT or GET, on the wire: what a message's registrations can
 * map with 4 KiB pages (xfer.c checks that this node's can).
 */
#define ZCX_IB_RMA_MAX		((u64)256 << 20)

struct zcx_ib_fin {
	__le64 cookie;
	__le32 status;		/* 0, or the negative errno the send completes with */
	__le32 reserved;
};

/* A FIN's errnos are user space's: the kernel's own start at ERESTARTSYS. */
#define ZCX_IB_ERRNO_MAX	(ERESTARTSYS - 1)

enum zcx_ib_state {
	ZCX_IB_CONNECTING,
	ZCX_IB_LIVE,
	ZCX_IB_DEAD,
};

struct zcx_ib_conn;

/*
 * A receive buffer, or a copy of the message that came in one; while
 * zcx.ko holds its message, or while its PUT or GET waits on
 * conn->serving (@link), a connection reference.
 */
struct zcx_ib_rx {
	struct ib_cqe cqe;
	struct zcx_ib_conn *conn;
	struct list_head link;
	u64 hdr_dma;		/* @hdr's place in conn->rx_hdrs_dma, unless a copy */
	u64 dma;		/* @buf mapped, while posted, unless in @hdr's slot */
	struct zcx_ib_hdr *hdr;	/* its header (in conn->rx_hdrs, unless a copy) ... */
	void *buf;		/* ... its body (rx_size bytes; a reply's: in @hdr's slot) */
	bool copy;		/* a copy (its own header and body), freed, not posted */
	bool unreceived;	/* an EAGER message zcx.ko holds: in conn->unreceived */
	u32 rts_copy;		/* an RTS zcx.ko holds: its bytes, in conn->rts_copied */
};

/*
 * Pinned pages mapped for the device (@sgt) and registered, in order, in
 * @nmr fast-registration MRs, or in none: then the device reaches them
 * through its local DMA key (zcx_ib_reg_map()).
 */
struct zcx_ib_reg {
	struct sg_table sgt;
	enum dma_data_direction dir;
	bool mapped;
	u32 nmr;
	struct ib_mr *mr[ZCX_IB_MAX_SEGS + 1];
};

union ib_wr_any {
	struct ib_send_wr send;
	struct ib_rdma_wr rdma;
	struct ib_reg_wr reg;
};

enum zcx_ib_job_type {
	ZCX_IB_JOB_EAGER,	/* an inline send */
	ZCX_IB_JOB_RTS,		/* a rendezvous send, PUT or GET, until its FIN */
	ZCX_IB_JOB_PULL,	/* reading a rendezvous message, and its FIN */
	ZCX_IB_JOB_SERVE,	/* a peer's PUT or GET into our exposed range, and its FIN */
	ZCX_IB_JOB_CTL,		/* a connection's own CREDIT or TAKEN message, reused */
	ZCX_IB_JOB_UNREG,	/* invalidating a kept registration, and letting it go */
};

struct zcx_ib_tx;

/**
 * struct zcx_ib_kept - a registration a connection keeps for later
 *		messages (kept.c): whole pages of a cached region, mapped and
 *		registered on the connection's PD, valid until the region is
 *		invalidated or evicted or the connection's cache is full.
 * @watch:	on the region: holds its pages pinned.
 * @link:	on conn->kept, least recently used first, while @cached.
 * @conn:	the connection.
 * @pages:	the first of @npages pages registered, in the region's array.
 * @access:	what they are registered for.
 * @users:	jobs using it (under conn->lock).
 * @cached:	on conn->kept, where jobs find it; set once the job that
 *		registers it is posted (under conn->lock).
 * @stale:	it is to go once unused: its region is dead, or the cache
 *		too full (written without conn->lock by the watch).
 * @unreg:	the registration (@unreg->reg), in the job that invalidates
 *		it and then lets it go.
 */
struct zcx_ib_kept {
	struct zcx_region_watch watch;
	struct list_head link;
	struct zcx_ib_conn *conn;
	struct page **pages;
	unsigned long npages;
	int access;
	u32 users;
	bool cached;
	bool stale;
	struct zcx_ib_tx *unreg;
};

/*
 * Work for a send queue: a chain of work requests, the last signalled
 * (@cqe), reserving @wrs entries of the queue until it is done.
 * @op:		EAGER, RTS: the send (or PUT, GET); PULL: the receive,
 *		until completed (@moved_cqe).
 * @target:	SERVE: the exposed range, if it could be had.
 * @rx:		PULL, SERVE: the buffer of the request (and its connection
 *		reference).
 * @wrs:	entries of the send queue it reserves.
 * @started:	posted: @wrs are reserved.
 * @wr:		the chain, built before posting ...
 * @sge:	... and its scatter entries: @wr1 and @sge2, or allocated.
 * @inv:	RTS: the chain invalidating @reg, posted on FIN (@inv_cqe), or
 *		queued on conn->inv_waiting (@inv_link) for room.
 * @moved_cqe:	PULL: the work request before the FIN completed: the data is
 *		in and @reg invalid.
 * @reg:	RTS, PULL, SERVE: the registrations of the pages, for this
 *		message only; UNREG: the kept registration.
 * @kept:	RTS, PULL, SERVE: the kept registration used instead of @reg, the
 *		message's bytes from @kept_start in it; UNREG: the one it
 *		lets go of.
 * @cookie:	RTS: the FIN's.
 * @sent, @fin:	RTS: the RTS completed, the FIN came (under conn->lock).
 * @status:	RTS: the FIN's status; PULL, SERVE: what the FIN tells.
 * @len, @tag:	the message's length; PULL: and its tag.
 * @msg:	the message sent, @msg_len bytes (@small, or allocated) ...
 * @msg_dma:	... mapped here;
 * @data_dma:	EAGER: the payload, mapped, if any.
 */
struct zcx_ib_tx {
	struct ib_cqe cqe;
	struct zcx_ib_conn *conn;
	enum zcx_ib_job_type type;
	struct zcx_op *op;
	struct zcx_rma_target *target;
	struct zcx_ib_rx *rx;
	struct list_head link;	/* on conn->tx_waiting or conn->held */
	u32 wrs;
	bool started;
	union ib_wr_any *wr;
	struct ib_sge *sge;
	union ib_wr_any *inv;
	struct list_head inv_link;
	struct ib_cqe inv_cqe;
	struct ib_cqe moved_cqe;
	struct zcx_ib_reg reg;
	struct zcx_ib_kept *kept;
	u64 kept_start;
	u64 cookie;
	bool sent;
	bool fin;
	int status;
	u64 len;
	u64 tag;
	void *msg;
	u32 msg_len;
	u64 msg_dma;
	u64 data_dma;
	union ib_wr_any wr1;
	struct ib_sge sge2[2];
	u8 small[sizeof(struct zcx_ib_hdr) + sizeof(struct zcx_ib_fin)];
};

/**
 * struct zcx_ib_conn - one RC queue pair: an outgoing zcx connection
 *		(active) or one accepted into a local endpoint (passive).
 * @ref:	held by zcx.ko's connection (active) or by being connected
 *		(passive, until zcx_ib_conn_kill()), by queued teardown work
 *		and by received messages zcx.ko holds.
 * @mutex:	see the lock order.
 * @building:	see the lock order.
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
 * @sq_depth:	entries of the send queue ...
 * @sq_used:	... reserved by jobs posted (under @lock).
 * @tx_waiting:	jobs waiting for room, in order (under @lock).
 * @held:	jobs with registrations, posted or failed to (under @lock).
 * @inv_waiting: RTS jobs whose invalidations wait for room, in order
 *		(under @lock).
 * @next_cookie: the next RTS's cookie (under @lock).
 * @mrs:	idle fast-registration MRs, @nmrs of them (under @lock).
 * @kept:	registrations kept for later messages (under @lock) ...
 * @unreg:	... and the work that lets go of the stale ones.
 * @kept_off:	the device's mappings need synchronising: none is kept.
 * @mr_pages:	pages one of them maps (on siw: runs of contiguous pages).
 * @rdma_sge:	scatter entries one READ or WRITE of ours may have.
 * @read_mr:	the sink of a READ must be registered (iWARP).
 * @quiet_cqe:	the completion of unsignalled work requests, which only
 *		completes when flushed or failed.
 * @rx_size:	bytes of each receive buffer's body (after the header).
 * @rx_hdrs:	the receive buffers' headers, and the bodies of replies
 *		(xfer.c), freed with @conn ...
 * @rx_hdrs_dma: ... mapped there, @rx_hdrs_size bytes (0: not mapped),
 *		until the teardown.
 * @rx_depth:	passive: its receive buffers for messages; active: the
 *		peer's, as its welcome told (set before the connection is up).
 * @credits:	active: messages we may send, the peer having buffers posted
 *		for them (under @lock).
 * @lent:	passive: buffers the sender filled and has not had back
 *		(holding a message, or among @owed; under @lock).
 * @unreceived: passive: EAGER messages zcx.ko holds, in buffers or
 *		copies (under @lock).
 * @rts_copied: passive: bytes of the RTS messages zcx.ko holds that were
 *		to be copied out of their buffers (under @lock).
 * @eager_off:	the last CREDIT (passive: sent; active: received) said
 *		ZCX_IB_EAGER_OFF (under @lock; read without it to decide).
 * @fins_out:	passive: FINs posted that the sender has not said it took
 *		(under @lock) ...
 * @fins_taken: ... and active: FINs taken that it has not told yet (under
 *		@lock).
 * @credit_waiters: active: jobs on @tx_waiting that take a credit (under
 *		@lock; read without it to decide).
 * @owed:	passive: buffers posted again but not yet given back ...
 * @ctl_tx:	... by this CREDIT message; active: @fins_taken told by this
 *		TAKEN message ...
 * @ctl_busy:	... which is posted (under @lock).
 * @keepalive:	checks the peer every keepalive_ms while live ...
 * @keepalive_cqe: ... with a zero-byte RDMA WRITE ...
 * @keepalive_busy: ... that is posted (under @lock).
 * @serving:	passive: PUTs and GETs received, in order, for ...
 * @serve:	... this work item on zcx_ib_work_wq to serve (under @lock).
 * @teardown:	zcx_ib_conn_kill() from zcx_ib_wq.
 * @list:	on zcx_ib_conns.
 * @base_ref:	passive: the reference of being connected is still held.
 * @counted:	passive: one of the node's zcx_ib_max_accepted, taken once
 *		its endpoint let it in (the key was right) and not refused.
 * @refused:	passive: refused after its endpoint let it in (the node
 *		full, or setting it up failed), before it carried anything.
 * @failed_connecting: active: a completion failed before it was
 *		established, which it then is not (under @lock; a passive
 *		one is live before it can complete anything).
 */
struct zcx_ib_conn {
	struct kref ref;
	struct mutex mutex;
	struct rw_semaphore building;
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
	u32 sq_depth;
	u32 sq_used;
	struct list_head tx_waiting;
	struct list_head held;
	struct list_head inv_waiting;
	atomic64_t next_cookie;
	struct list_head mrs;
	u32 nmrs;
	struct list_head kept;
	struct work_struct unreg;
	bool kept_off;
	u32 mr_pages;
	u32 rdma_sge;
	bool read_mr;
	struct ib_cqe quiet_cqe;
	u32 rx_size;
	void *rx_hdrs;
	u64 rx_hdrs_dma;
	size_t rx_hdrs_size;
	u32 rx_depth;
	u32 credits;
	u32 lent;
	u32 unreceived;
	u32 rts_copied;
	u32 fins_out;
	u32 fins_taken;
	u32 credit_waiters;
	u32 owed;
	struct zcx_ib_tx *ctl_tx;
	bool ctl_busy;
	bool eager_off;
	struct delayed_work keepalive;
	struct ib_cqe keepalive_cqe;
	bool keepalive_busy;
	struct list_head serving;
	struct work_struct serve;
	struct work_struct teardown;
	struct list_head list;
	bool base_ref;
	bool counted;
	bool refused;
	bool failed_connecting;
};

/* main.c */
extern unsigned int zcx_ib_keepalive_ms;
extern bool zcx_ib_reg_cache;
extern unsigned int zcx_ib_max_accepted;
extern unsigned int zcx_ib_rx_buffers;

/* conn.c */
extern const struct zcx_backend_ops zcx_ib_ops;
int zcx_ib_listen_init(const char *listen, u16 port);
void zcx_ib_listen_exit(void);
void zcx_ib_device_gone(struct ib_device *ibdev);
int zcx_ib_conn_init(void);
void zcx_ib_conn_exit(void);
void zcx_ib_conn_put(struct zcx_ib_conn *conn);
void zcx_ib_conn_schedule_kill(struct zcx_ib_conn *conn);
bool zcx_ib_queue_work(struct work_struct *work);

/* xfer.c */
int zcx_ib_rx_fill(struct zcx_ib_conn *conn, u32 depth);
void zcx_ib_rx_hdrs_unmap(struct zcx_ib_conn *conn);
void zcx_ib_release_rx(void *rx);
void zcx_ib_send(struct zcx_conn *zconn, struct zcx_op *op);
void zcx_ib_pull(void *rx, struct zcx_op *recv, u64 len);
void zcx_ib_rma(struct zcx_conn *zconn, struct zcx_op *op, bool put, u64 raddr, u64 rkey);
void zcx_ib_jobs_fail(struct zcx_ib_conn *conn);
int zcx_ib_ctl_init(struct zcx_ib_conn *conn);
void zcx_ib_ctl_free(struct zcx_ib_conn *conn);
void zcx_ib_quiet_done(struct ib_cq *cq, struct ib_wc *wc);
void zcx_ib_keepalive_init(struct zcx_ib_conn *conn);
void zcx_ib_serve_init(struct zcx_ib_conn *conn);
void zcx_ib_keepalive_arm(struct zcx_ib_conn *conn);
void zcx_ib_keepalive_rearm_all(void);
struct zcx_ib_tx *zcx_ib_unreg_job(struct zcx_ib_conn *conn, struct page **pages,
				   unsigned long npages, int access, u32 direct);
void zcx_ib_unreg_post(struct zcx_ib_conn *conn, struct zcx_ib_tx *tx);
void zcx_ib_job_end(struct zcx_ib_tx *tx, int res);
bool zcx_ib_build_begin(struct zcx_ib_conn *conn);

/* kept.c */
struct zcx_ib_kept *zcx_ib_kept_get(struct zcx_ib_conn *conn, struct zcx_op *op,
				    const struct zcx_rma_target *target, struct page **pages,
				    u32 offset, u64 len, int access, u32 direct, u64 *start);
void zcx_ib_kept_posted_locked(struct zcx_ib_conn *conn, struct zcx_ib_kept *k);
void zcx_ib_kept_put(struct zcx_ib_conn *conn, struct zcx_ib_kept *k);
void zcx_ib_kept_free(struct zcx_ib_kept *k);
void zcx_ib_kept_init(struct zcx_ib_conn *conn);
void zcx_ib_kept_drop_all(struct zcx_ib_conn *conn);

/* mr.c */
int zcx_ib_reg_map(struct zcx_ib_conn *conn, struct zcx_ib_reg *reg, struct page **pages,
		   u32 offset, u64 len, int access, u32 direct);
void zcx_ib_reg_unmap(struct zcx_ib_conn *conn, struct zcx_ib_reg *reg);
void zcx_ib_mrs_free(struct zcx_ib_conn *conn);

#endif /* ZCX_IB_H */
