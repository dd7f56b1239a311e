/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * backend.h - what zcx.ko offers a remote-transport backend (zcx_ib.ko),
 * the only header such a backend includes from zcx.ko.
 *
 * Devices: a backend announces each device it can drive with
 * zcx_backend_dev_add() and withdraws it with zcx_backend_dev_del() before
 * the device goes away; zcx.ko lists them (ZCX_CMD_GET_DEVICES).  The
 * backend owns the struct; zcx.ko only links it into its list, under
 * zcx_backend_mutex, a leaf lock.
 *
 * Connections: with its ops registered, a backend carries connections to
 * endpoints of other nodes.  zcx.ko asks it to connect a struct zcx_conn
 * and to send on it; the backend completes the operations it was given
 * with zcx_op_complete().  On the other side, it accepts a connection to
 * a local endpoint with zcx_ep_accept() and hands each message it
 * receives to zcx_ep_deliver(), which matches it like a local one (and
 * may copy_to_user() from it: kmalloc()ed memory).
 * Endpoints, connections and operations stay opaque to the backend.
 *
 * Rendezvous: a send longer than @max_inline reaches ops->send() with its
 * buffer's pages pinned and held busy (zcx_op_pages()) until it completes.
 * The receiving backend delivers such a message without its bytes
 * (zcx_ep_deliver() with @data NULL); once it matches a receive, whose
 * pages are pinned too, zcx.ko hands both to ops->pull(), which moves the
 * bytes and completes the receive with zcx_op_pulled().
 *
 * Registrations kept: a backend may keep the device's registration of an
 * operation's pages, or of an exposed range's, for later operations on
 * the same pages, with a watch (zcx_op_watch(), zcx_rma_target_watch())
 * on the region holding them.  The watch holds the pages pinned, as a
 * busy reference does; once the region is invalidated or
 * evicted, zcx.ko calls its dead(), and the backend lets go
 * (zcx_region_unwatch()) as soon as its device cannot reach the pages any
 * more.  A context's teardown waits for that.  Every registration a
 * backend asks of its device for a transfer, kept or not, it counts in
 * the owner's counters (zcx_op_regs_posted(), zcx_rma_target_regs_posted()).
 *
 * One-sided: a PUT or GET to another node reaches ops->rma() with its
 * buffer pinned.  The backend on the target's node asks zcx.ko for the
 * exposed range (zcx_ep_rma_target(), which checks key, rights and
 * bounds), moves the bytes from or to its pages and lets go of it with
 * zcx_rma_target_done().
 *
 * Memory: what a backend allocates for a local endpoint outside its
 * owner's system calls (an accepted connection's receive buffers, copies
 * of messages, serving a PUT or GET) it allocates with __GFP_ACCOUNT
 * under set_active_memcg(zcx_ep_memcg(ep)): the owner's memory cgroup
 * pays, as it does for what zcx_ep_deliver() and zcx_ep_rma_target()
 * allocate, not the node.
 *
 * Context: ops->connect() and zcx_ep_accept() may sleep; ops->send(),
 * ops->rma(), ops->pull(), ops->release_rx(), zcx_ep_deliver() and
 * zcx_ep_rma_target() are called, and may
 * be called, from process context or a workqueue (never with a spinlock
 * held); ops->close() from any of those, and must defer what sleeps long.
 */
#ifndef ZCX_BACKEND_H
#define ZCX_BACKEND_H

#include <linux/list.h>
#include <linux/types.h>

#include "zcx_uapi.h"

#define ZCX_BACKEND_NAME_MAX	64

/**
 * struct zcx_backend_dev - a device a backend drives.
 * @list:	in zcx.ko's list of devices; zcx.ko's own.
 * @id:		set by zcx_backend_dev_add(): node-wide, never reused.
 * @name:	the device's name (e.g. "rxe0"), kept current by the backend
 *		through zcx_backend_dev_rename().
 * @backend:	the backend's name (e.g. "ib").
 * @ports:	ports the device has.
 * @mr_pages:	pages one fast registration can map.
 */
struct zcx_backend_dev {
	struct list_head list;
	u64 id;
	char name[ZCX_BACKEND_NAME_MAX];
	const char *backend;
	u32 ports;
	u32 mr_pages;
};

void zcx_backend_dev_add(struct zcx_backend_dev *dev);
void zcx_backend_dev_del(struct zcx_backend_dev *dev);
void zcx_backend_dev_rename(struct zcx_backend_dev *dev, const char *name);

struct mem_cgroup;
struct zcx_conn;
struct zcx_ep;
struct zcx_op;

/**
 * struct zcx_backend_ops - a backend's connections.
 * @owner:	the backend module; zcx.ko holds it while it uses the ops.
 * @max_inline:	the longest message @send takes.
 * @fill_addr:	fill the ZCX_NODE_INET part of a new endpoint's address
 *		(all but @node_id); false if the backend does not listen.
 * @connect:	connect @conn to @addr, sleeping until it is up; 0, or
 *		-errno (ECONNREFUSED, EHOSTUNREACH, ETIMEDOUT, EINTR, ...).
 *		On success the backend keeps its state with
 *		zcx_conn_set_remote().
 * @send:	send SEND @op on @conn, and complete it when it has arrived
 *		or failed: its bytes (zcx_op_payload(), in a kmalloc()ed
 *		buffer that lives until then) up to @max_inline, else its
 *		pinned pages (zcx_op_pages()).
 * @close:	@conn's last reference is gone: tear down its state.
 * @pull:	move the first @len bytes of the rendezvous message in @rx
 *		into receive @recv's pinned pages (zcx_op_pages()), complete
 *		@recv with zcx_op_pulled() and let go of @rx.
 * @release_rx:	a message handed to zcx_ep_deliver() was consumed (or
 *		dropped): its buffer @rx is the backend's again.
 * @rma:	PUT (@put) or GET @op on @conn: its buffer (zcx_op_pages(),
 *		pinned unless empty) to or from the peer's range exposed as
 *		@rkey, from @remote_addr; complete @op when done or failed
 *		(EACCES, ERANGE: what the peer's node found).
 */
struct zcx_backend_ops {
	struct module *owner;
	u32 max_inline;
	bool (*fill_addr)(struct zcx_addr *addr);
	int (*connect)(struct zcx_conn *conn, const struct zcx_addr *addr);
	void (*send)(struct zcx_conn *conn, struct zcx_op *op);
	void (*close)(struct zcx_conn *conn);
	void (*pull)(void *rx, struct zcx_op *recv, u64 len);
	void (*release_rx)(void *rx);
	void (*rma)(struct zcx_conn *conn, struct zcx_op *op, bool put, u64 remote_addr,
		    u64 rkey);
};

int zcx_backend_register(const struct zcx_backend_ops *ops);
void zcx_backend_unregister(const struct zcx_backend_ops *ops);

void zcx_conn_set_remote(struct zcx_conn *conn, void *remote);
void *zcx_conn_remote(const struct zcx_conn *conn);
void zcx_op_payload(const struct zcx_op *op, const void **data, u64 *len, u64 *tag);
struct page **zcx_op_pages(const struct zcx_op *op, u32 *offset);

/**
 * struct zcx_region_watch - a backend's registration of a region's pages.
 * @link:	on the region's list; zcx.ko's.
 * @region:	the region; zcx.ko's.
 * @dead:	called once, when the region is invalidated or evicted,
 *		under a spinlock that MMU notifiers take: it must not sleep,
 *		allocate or take a lock (it may queue work).  Not called
 *		once zcx_region_unwatch() has returned.
 */
struct zcx_region_watch {
	struct list_head link;
	struct zcx_region *region;
	void (*dead)(struct zcx_region_watch *w);
};

int zcx_op_watch(const struct zcx_op *op, struct zcx_region_watch *w);
void zcx_region_unwatch(struct zcx_region_watch *w);
void zcx_op_regs_posted(const struct zcx_op *op, u32 n);
void zcx_op_complete(struct zcx_op *op, int res, u64 len, u64 tag);
void zcx_op_pulled(struct zcx_op *recv, int res, u64 len, u64 tag);

/**
 * struct zcx_accepted - a backend's connection into a local endpoint.
 * @link:	on the endpoint's list; zcx.ko's.
 * @gone:	called once, under the endpoint's match_mutex (so it must
 *		not wait long nor take zcx.ko's locks), when the endpoint
 *		is destroyed: the backend has the connection torn down
 *		(zcx_ib: queued) and calls zcx_ep_unaccept().
 *
 * zcx_ep_accept() counts the connection as one of the endpoint's senders,
 * and zcx_ep_unaccept() as one less: when the last goes, the receives
 * posted there fail (ECONNRESET).  @refused there says the backend
 * refused the connection before it could carry a message (the node was
 * full, or setting it up failed): the endpoint's receives do not fail
 * for it, unless they wait for a sender to be there (ZCX_SQE_CONNECTED)
 * and it was the only one.
 */
struct zcx_accepted {
	struct list_head link;
	void (*gone)(struct zcx_accepted *acc);
};

struct zcx_ep *zcx_ep_accept(u64 id, u64 key, struct zcx_accepted *acc);
struct mem_cgroup *zcx_ep_memcg(const struct zcx_ep *ep);
void zcx_ep_unaccept(struct zcx_ep *ep, struct zcx_accepted *acc, bool refused);
int zcx_ep_deliver(struct zcx_ep *ep, u64 tag, void *data, u64 len, void *rx);

struct zcx_rma_target;
struct zcx_rma_target *zcx_ep_rma_target(struct zcx_ep *ep, u64 rkey, u64 addr, u64 len,
					 bool put);
struct page **zcx_rma_target_pages(const struct zcx_rma_target *t, u32 *offset);
int zcx_rma_target_watch(const struct zcx_rma_target *t, struct zcx_region_watch *w);
void zcx_rma_target_regs_posted(const struct zcx_rma_target *t, u32 n);
void zcx_rma_target_done(struct zcx_rma_target *t);

#endif /* ZCX_BACKEND_H */
