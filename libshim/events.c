// SPDX-License-Identifier: MIT
/*
 * events.c - libzcx: draining invalidation events from the mapped ring.
 */
#include <string.h>

#include "zcx_internal.h"

static void zcx_report_overflow(zcx_event_fn fn, void *arg, uint64_t seq, uint64_t lost)
{
	struct zcx_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.seq = seq;
	ev.cause = ZCX_EVENT_OVERFLOW;
	ev.lost = lost;
	fn(arg, &ev);
}

/*
 * Copy ring entry @seq if it still holds event @seq: the kernel writes an
 * entry's seq last (release) and invalidates it first, so seq read before
 * (acquire) and after the copy both equal to @seq means a whole event.
 */
static bool zcx_ring_read(const struct zcx *zcx, uint64_t seq, struct zcx_event *out)
{
	const struct zcx_event *slot = &zcx->events[seq & (zcx->status->event_count - 1)];

	if (__atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE) != seq)
		return false;
	out->start = __atomic_load_n(&slot->start, __ATOMIC_RELAXED);
	out->length = __atomic_load_n(&slot->length, __ATOMIC_RELAXED);
	out->handle = __atomic_load_n(&slot->handle, __ATOMIC_RELAXED);
	out->cookie = __atomic_load_n(&slot->cookie, __ATOMIC_RELAXED);
	out->cause = __atomic_load_n(&slot->cause, __ATOMIC_RELAXED);
	out->reserved = 0;
	out->lost = 0;
	out->seq = seq;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return __atomic_load_n(&slot->seq, __ATOMIC_RELAXED) == seq;
}

ZCX_EXPORT int zcx_events_drain(struct zcx *zcx, zcx_event_fn fn, void *arg)
{
	int ret = zcx_check_owner(zcx), delivered = 0;
	uint64_t count, head, seq;
	struct zcx_event ev;

	/* Before the status area: a child of fork() did not inherit it. */
	if (ret)
		return ret;
	count = zcx->status->event_count;
	pthread_mutex_lock(&zcx->events_lock);
	seq = zcx->event_next;
	head = __atomic_load_n(&zcx->status->counters.events, __ATOMIC_ACQUIRE);
	while (seq != head) {
		if (head - seq > count) {
			/* Lapped by the kernel: say so, go on with the oldest left. */
			zcx_report_overflow(fn, arg, seq, head - count - seq);
			delivered++;
			seq = head - count;
			continue;
		}
		if (!zcx_ring_read(zcx, seq, &ev)) {
			/* Overwritten while we read it: the head moved on. */
			uint64_t now = __atomic_load_n(&zcx->status->counters.events,
						       __ATOMIC_ACQUIRE);

			if (now == head) {
				/* Cannot happen with a sane kernel; do not spin. */
				zcx_report_overflow(fn, arg, seq, 1);
				delivered++;
				seq++;
			}
			head = now;
			continue;
		}
		fn(arg, &ev);
		delivered++;
		seq++;
		head = __atomic_load_n(&zcx->status->counters.events, __ATOMIC_ACQUIRE);
	}
	zcx->event_next = seq;
	pthread_mutex_unlock(&zcx->events_lock);
	return delivered;
}

ZCX_EXPORT uint64_t zcx_events_head(const struct zcx *zcx)
{
	if (zcx_check_owner(zcx))
		return 0;
	return __atomic_load_n(&zcx->status->counters.events, __ATOMIC_ACQUIRE);
}
