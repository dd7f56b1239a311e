// SPDX-License-Identifier: GPL-2.0-only
/*
 * backend.c - remote-transport backends (zcx_ib.ko): the devices they
 * drive, and the connection ops zcx.ko calls for peers on other nodes.
 *
 * zcx.ko itself never links against ib_core: a backend module registers
 * here, so that zcx.ko can use it and, without any backend, loads on a
 * node with no RDMA stack at all.
 */
#include <linux/export.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/string.h>

#include "zcx.h"

DEFINE_MUTEX(zcx_backend_mutex);
LIST_HEAD(zcx_backend_devs);
static u64 zcx_backend_last_id;

void zcx_backend_dev_add(struct zcx_backend_dev *dev)
{
	mutex_lock(&zcx_backend_mutex);
	dev->id = ++zcx_backend_last_id;
	/* In order of ids: a dump resumes after the last id it sent. */
	list_add_tail(&dev->list, &zcx_backend_devs);
	mutex_unlock(&zcx_backend_mutex);
}
EXPORT_SYMBOL_GPL(zcx_backend_dev_add);

void zcx_backend_dev_del(struct zcx_backend_dev *dev)
{
	mutex_lock(&zcx_backend_mutex);
	list_del(&dev->list);
	mutex_unlock(&zcx_backend_mutex);
}
EXPORT_SYMBOL_GPL(zcx_backend_dev_del);

void zcx_backend_dev_rename(struct zcx_backend_dev *dev, const char *name)
{
	mutex_lock(&zcx_backend_mutex);
	strscpy(dev->name, name, sizeof(dev->name));
	mutex_unlock(&zcx_backend_mutex);
}
EXPORT_SYMBOL_GPL(zcx_backend_dev_rename);

/* The node's zcx instance, in ZCX_NODE_INET addresses. */
u64 zcx_node_id __read_mostly;

/* The registered backend's connection ops, under zcx_backend_mutex. */
static const struct zcx_backend_ops *zcx_backend;

int zcx_backend_register(const struct zcx_backend_ops *ops)
{
	int ret = 0;

	mutex_lock(&zcx_backend_mutex);
	if (zcx_backend)
		ret = -EBUSY;
	else
		WRITE_ONCE(zcx_backend, ops);
	mutex_unlock(&zcx_backend_mutex);
	return ret;
}
EXPORT_SYMBOL_GPL(zcx_backend_register);

/*
 * Called from the backend's module exit: nothing of zcx.ko holds the
 * module then (zcx_backend_get() takes a reference), so no call is under
 * way.
 */
void zcx_backend_unregister(const struct zcx_backend_ops *ops)
{
	mutex_lock(&zcx_backend_mutex);
	if (zcx_backend == ops)
		WRITE_ONCE(zcx_backend, NULL);
	mutex_unlock(&zcx_backend_mutex);
}
EXPORT_SYMBOL_GPL(zcx_backend_unregister);

/*
 * The backend's ops with a reference on its module, or NULL.  Not before
 * its init is done: an init that fails after registering frees the module
 * whatever references were taken meanwhile.
 */
const struct zcx_backend_ops *zcx_backend_get(void)
{
	const struct zcx_backend_ops *ops;

	mutex_lock(&zcx_backend_mutex);
	ops = zcx_backend;
	if (ops && ((ops->owner && READ_ONCE(ops->owner->state) == MODULE_STATE_COMING) ||
		    !try_module_get(ops->owner)))
		ops = NULL;
	mutex_unlock(&zcx_backend_mutex);
	return ops;
}

void zcx_backend_put(const struct zcx_backend_ops *ops)
{
	module_put(ops->owner);
}

/*
 * Hand a received buffer back.  Only called while the connection it came
 * on exists, which holds the backend's module; that reference may go in
 * the call, so hold one of our own until it has returned.
 */
void zcx_backend_release_rx(void *rx)
{
	const struct zcx_backend_ops *ops = READ_ONCE(zcx_backend);

	__module_get(ops->owner);
	ops->release_rx(rx);
	module_put(ops->owner);
}

/* Pull a rendezvous message into @recv: as above, @rx keeps the backend. */
void zcx_backend_pull(void *rx, struct zcx_op *recv, u64 len)
{
	const struct zcx_backend_ops *ops = READ_ONCE(zcx_backend);

	__module_get(ops->owner);
	ops->pull(rx, recv, len);
	module_put(ops->owner);
}

void zcx_conn_set_remote(struct zcx_conn *conn, void *remote)
{
	conn->remote = remote;
}
EXPORT_SYMBOL_GPL(zcx_conn_set_remote);

void *zcx_conn_remote(const struct zcx_conn *conn)
{
	return conn->remote;
}
EXPORT_SYMBOL_GPL(zcx_conn_remote);

void zcx_op_payload(const struct zcx_op *op, const void **data, u64 *len, u64 *tag)
{
	*data = op->data;
	*len = op->len;
	*tag = op->tag;
}
EXPORT_SYMBOL_GPL(zcx_op_payload);

/*
 * The pinned pages of @op's buffer, from the one holding its first byte,
 * which is at @offset in it; NULL if the buffer is not pinned.
 */
struct page **zcx_op_pages(const struct zcx_op *op, u32 *offset)
{
	const struct zcx_region *r = op->region;

	if (!r)
		return NULL;
	*offset = offset_in_page(op->addr);
	return r->pages + ((op->addr >> PAGE_SHIFT) - (r->node.start >> PAGE_SHIFT));
}
EXPORT_SYMBOL_GPL(zcx_op_pages);

/*
 * Watch region @r for a backend (struct zcx_region_watch): 0, or -ESTALE
 * if it is no longer valid, as then it would get no dead() call.
 */
int zcx_region_watch(struct zcx_region *r, struct zcx_region_watch *w)
{
	struct zcx_ctx *ctx = r->ctx;

	spin_lock(&ctx->lock);
	if (r->state != ZCX_REGION_LIVE) {
		spin_unlock(&ctx->lock);
		return -ESTALE;
	}
	zcx_region_busy_get_locked(r);
	w->region = r;
	list_add_tail(&w->link, &r->watches);
	zcx_counter_add(ctx, dev_regs, 1);
	zcx_counter_add(ctx, dev_regs_total, 1);
	spin_unlock(&ctx->lock);
	return 0;
}

/* Watch the region of @op's pages: zcx_region_watch(), -ESTALE if none. */
int zcx_op_watch(const struct zcx_op *op, struct zcx_region_watch *w)
{
	return op->region ? zcx_region_watch(op->region, w) : -ESTALE;
}
EXPORT_SYMBOL_GPL(zcx_op_watch);

/* The backend asks its device for @n registrations for @op (backend.h). */
void zcx_op_regs_posted(const struct zcx_op *op, u32 n)
{
	zcx_ctx_regs_posted(op->ep->ctx, n);
}
EXPORT_SYMBOL_GPL(zcx_op_regs_posted);

/* The device no longer reaches the pages @w watched: let go of them. */
void zcx_region_unwatch(struct zcx_region_watch *w)
{
	struct zcx_region *r = w->region;
	struct zcx_ctx *ctx = r->ctx;
	bool last = false, reap;

	spin_lock(&ctx->lock);
	list_del(&w->link);
	zcx_counter_add(ctx, dev_regs, -1);
	if (r->state == ZCX_REGION_DEAD) {
		WRITE_ONCE(ctx->dead_watches, ctx->dead_watches - 1);
		last = !ctx->dead_watches;
	}
	/*
	 * With the count zcx_reap_watched() waits on: a reaper it lets go
	 * must find the region no longer busy, or it would leave the pages
	 * pinned and its caller, making room, would give up.
	 */
	reap = zcx_region_busy_drop_locked(r);
	spin_unlock(&ctx->lock);
	/* Before the context's busy reference goes: it lives until then. */
	if (last)
		wake_up_all(&ctx->watch_wait);
	zcx_ctx_busy_put_reap(ctx, reap);
}
EXPORT_SYMBOL_GPL(zcx_region_unwatch);
