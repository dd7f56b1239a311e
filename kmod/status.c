// SPDX-License-Identifier: GPL-2.0-only
/*
 * status.c - the status area mapped read-only into the process: counters,
 * one generation word per region slot, and the ring of invalidation
 * events, which read() and poll() also deliver.
 */
#include <linux/mm.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "zcx.h"

int zcx_status_init(struct zcx_ctx *ctx)
{
	size_t gen_offset = ALIGN(sizeof(struct zcx_status), 64);
	size_t event_offset = ALIGN(gen_offset + ctx->nslots * sizeof(__u64), 64);
	size_t size = PAGE_ALIGN(event_offset + ZCX_EVENT_COUNT * sizeof(struct zcx_event));
	u32 i;

	/* Zeroed, and charged to the opener's memory cgroup. */
	ctx->status = __vmalloc(size, GFP_KERNEL_ACCOUNT | __GFP_ZERO);
	if (!ctx->status)
		return -ENOMEM;
	ctx->status_size = size;
	ctx->gens = (void *)ctx->status + gen_offset;
	ctx->events = (void *)ctx->status + event_offset;

	ctx->status->abi_version = ZCX_ABI_VERSION;
	ctx->status->size = size;
	ctx->status->gen_offset = gen_offset;
	ctx->status->gen_count = ctx->nslots;
	ctx->status->event_offset = event_offset;
	ctx->status->event_count = ZCX_EVENT_COUNT;
	/* Odd: no slot holds a valid region yet. */
	for (i = 0; i < ctx->nslots; i++)
		ctx->gens[i] = 1;
	/* No ring entry may look like event 0 before it is written. */
	for (i = 0; i < ZCX_EVENT_COUNT; i++)
		ctx->events[i].seq = U64_MAX;
	return 0;
}

void zcx_status_free(struct zcx_ctx *ctx)
{
	vfree(ctx->status);
}

/*
 * Append an event; called with ctx->lock held, from MMU-notifier callbacks
 * among others, so it only stores and wakes.  The entry's seq is set to
 * an impossible value first and to the event's number last, so a reader
 * of the mapped ring can tell a torn or overwritten entry.
 */
void zcx_event_add_locked(struct zcx_ctx *ctx, const struct zcx_region *region, u32 cause)
{
	u64 seq = ctx->status->counters.events;
	struct zcx_event *ev = &ctx->events[seq & (ZCX_EVENT_COUNT - 1)];

	lockdep_assert_held(&ctx->lock);
	WRITE_ONCE(ev->seq, U64_MAX);
	smp_wmb();	/* seq invalidated before the fields change */
	WRITE_ONCE(ev->start, region->node.start);
	WRITE_ONCE(ev->length, region->node.last - region->node.start + 1);
	WRITE_ONCE(ev->handle, (region->gen << ZCX_HANDLE_SLOT_BITS) | region->slot);
	WRITE_ONCE(ev->cookie, region->cookie);
	WRITE_ONCE(ev->cause, cause);
	/* Fields before seq: pairs with the ring reader's acquire of seq. */
	smp_store_release(&ev->seq, seq);
	/* Entry before head: pairs with the acquire in zcx_events_pending(). */
	smp_store_release(&ctx->status->counters.events, seq + 1);
	wake_up_interruptible(&ctx->event_wait);
}

int zcx_status_mmap(struct zcx_ctx *ctx, struct vm_area_struct *vma)
{
	unsigned long i;
	int ret;

	if (vma->vm_pgoff != (ZCX_MMAP_STATUS >> PAGE_SHIFT))
		return -EINVAL;
	if (vma->vm_flags & VM_WRITE)
		return -EACCES;
	if (vma_pages(vma) > (ctx->status_size >> PAGE_SHIFT))
		return -EINVAL;
	/* Read-only for good, not inherited, not growable, not dumped. */
	vm_flags_clear(vma, VM_MAYWRITE);
	vm_flags_set(vma, VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP);
	for (i = 0; i < vma_pages(vma); i++) {
		ret = vm_insert_page(vma, vma->vm_start + (i << PAGE_SHIFT),
				     vmalloc_to_page((void *)ctx->status + (i << PAGE_SHIFT)));
		if (ret)
			return ret;
	}
	return 0;
}

static bool zcx_events_pending(struct zcx_ctx *ctx)
{
	/* Pairs with the release of the head in zcx_event_add_locked(). */
	return smp_load_acquire(&ctx->status->counters.events) != READ_ONCE(ctx->read_seq);
}

/*
 * Copy the events from ctx->read_seq on into @out (at most @max), or one
 * overflow event if the ring lapped the reader.  Returns the count and in
 * @next the read position to commit once the caller delivered them.
 */
static size_t zcx_events_collect(struct zcx_ctx *ctx, struct zcx_event *out,
				 size_t max, u64 *next)
{
	u64 head, seq = ctx->read_seq;
	size_t n = 0;

	spin_lock(&ctx->lock);
	head = ctx->status->counters.events;
	if (head - seq > ZCX_EVENT_COUNT) {
		memset(out, 0, sizeof(*out));
		out->seq = seq;
		out->cause = ZCX_EVENT_OVERFLOW;
		out->lost = head - ZCX_EVENT_COUNT - seq;
		*next = head - ZCX_EVENT_COUNT;
		spin_unlock(&ctx->lock);
		return 1;
	}
	for (; seq != head && n < max; seq++, n++)
		out[n] = ctx->events[seq & (ZCX_EVENT_COUNT - 1)];
	spin_unlock(&ctx->lock);
	*next = seq;
	return n;
}

#define ZCX_READ_BATCH	32

ssize_t zcx_events_read(struct zcx_ctx *ctx, char __user *buf, size_t len, bool nonblock)
{
	size_t max = min_t(size_t, len / sizeof(struct zcx_event), ZCX_READ_BATCH);
	struct zcx_event *batch;
	size_t n, bytes = 0;
	u64 next;
	int ret;

	if (!max)
		return -EINVAL;
	batch = kmalloc_array(max, sizeof(*batch), GFP_KERNEL);
	if (!batch)
		return -ENOMEM;

	ret = mutex_lock_interruptible(&ctx->read_mutex);
	if (ret)
		goto out_free;
	while (!zcx_events_pending(ctx)) {
		if (nonblock) {
			ret = -EAGAIN;
			goto out_unlock;
		}
		mutex_unlock(&ctx->read_mutex);
		ret = wait_event_interruptible(ctx->event_wait, zcx_events_pending(ctx));
		if (ret)
			goto out_free;
		ret = mutex_lock_interruptible(&ctx->read_mutex);
		if (ret)
			goto out_free;
	}
	n = zcx_events_collect(ctx, batch, max, &next);
	bytes = n * sizeof(*batch);
	/* Consumed only once delivered: a bad buffer loses nothing. */
	if (copy_to_user(buf, batch, bytes))
		ret = -EFAULT;
	else
		WRITE_ONCE(ctx->read_seq, next);
out_unlock:
	mutex_unlock(&ctx->read_mutex);
out_free:
	kfree(batch);
	return ret ? ret : bytes;
}

__poll_t zcx_events_poll(struct zcx_ctx *ctx, struct file *file, poll_table *wait)
{
	poll_wait(file, &ctx->event_wait, wait);
	return zcx_events_pending(ctx) ? EPOLLIN | EPOLLRDNORM : 0;
}
