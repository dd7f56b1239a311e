/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * zcx_raw.h - an endpoint driven through the raw ABI (the ioctls and the
 * mapped rings, no library), for the selftests that check the ABI itself:
 * zcx_fault_test, zcx_security_test, zcx_failinject_test and
 * zcx_netlink_test.  Each of them builds its own submit and reap policy
 * on these few steps.
 */
#ifndef ZCX_RAW_H
#define ZCX_RAW_H

#include "zcx_test.h"

struct zcx_raw_ep {
	int fd;
	struct zcx_ep_create c;		/* what EP_CREATE answered */
	char *map;			/* the rings, or NULL */
	__u32 *sq_head, *sq_tail, *sq_flags, *cq_head, *cq_tail;
	__u32 sq_mask, cq_mask;
	struct zcx_sqe *sqes;
	struct zcx_cqe *cqes;
};

/*
 * Create an endpoint (@flags, @depth SQ entries, 0 for the default) and
 * map its rings; 0 or -errno.  On a failed mmap the endpoint exists and
 * zcx_raw_ep_destroy() removes it.
 */
static inline int zcx_raw_ep_create(int fd, unsigned int flags, unsigned int depth,
				    struct zcx_raw_ep *r)
{
	const struct zcx_ring_offsets *o = &r->c.offsets;
	int ret;

	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->c.flags = flags;
	r->c.sq_entries = depth;
	ret = zcx_test_ioctl(fd, ZCX_IOC_EP_CREATE, &r->c);
	if (ret)
		return ret;
	r->map = mmap(NULL, r->c.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		      r->c.mmap_offset);
	if (r->map == MAP_FAILED) {
		r->map = NULL;
		return -errno;
	}
	r->sq_head = (__u32 *)(r->map + o->sq_head);
	r->sq_tail = (__u32 *)(r->map + o->sq_tail);
	r->sq_flags = (__u32 *)(r->map + o->sq_flags);
	r->cq_head = (__u32 *)(r->map + o->cq_head);
	r->cq_tail = (__u32 *)(r->map + o->cq_tail);
	r->sq_mask = *(__u32 *)(r->map + o->sq_mask);
	r->cq_mask = *(__u32 *)(r->map + o->cq_mask);
	r->sqes = (struct zcx_sqe *)(r->map + o->sqes);
	r->cqes = (struct zcx_cqe *)(r->map + o->cqes);
	return 0;
}

/* Unmap the rings and destroy the endpoint; 0 or EP_DESTROY's -errno. */
static inline int zcx_raw_ep_destroy(struct zcx_raw_ep *r)
{
	struct zcx_ep_destroy d = { .ep = r->c.ep };

	if (r->map)
		munmap(r->map, r->c.mmap_size);
	r->map = NULL;
	return zcx_test_ioctl(r->fd, ZCX_IOC_EP_DESTROY, &d);
}

/* ZCX_IOC_ENTER: its result (entries taken), or -errno. */
static inline int zcx_raw_enter(struct zcx_raw_ep *r, __u32 to_submit, __u32 flags,
				__u32 min_complete)
{
	struct zcx_enter e = {
		.ep = r->c.ep, .flags = flags, .to_submit = to_submit, .min_complete = min_complete,
	};
	int ret = ioctl(r->fd, ZCX_IOC_ENTER, &e);

	return ret < 0 ? -errno : ret;
}

/*
 * Queue one submission: written at the tail, then the tail published
 * with release ordering (the UAPI header's rule), and a full fence so a
 * polling engine's NEED_WAKEUP flag read afterwards is current.  The
 * doorbell is the caller's.
 */
static inline void zcx_raw_push(struct zcx_raw_ep *r, const struct zcx_sqe *sqe)
{
	__u32 tail = *r->sq_tail;

	r->sqes[tail & r->sq_mask] = *sqe;
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* Take the next completion if there is one: 1 with *cqe filled, else 0. */
static inline int zcx_raw_pop(struct zcx_raw_ep *r, struct zcx_cqe *cqe)
{
	__u32 head = *r->cq_head;

	if (__atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE) == head)
		return 0;
	*cqe = r->cqes[head & r->cq_mask];
	__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
	return 1;
}

/* Threads that call into an endpoint and get stuck there. */
struct zcx_raw_stuck {
	struct zcx_raw_ep *r;
	pid_t tid;			/* __atomic: the thread's id, once set */
	int ret;
};

/* ENTER to take one submission (pthread start routine). */
static inline void *zcx_raw_stuck_enter(void *arg)
{
	struct zcx_raw_stuck *c = arg;

	__atomic_store_n(&c->tid, gettid(), __ATOMIC_RELEASE);
	c->ret = zcx_raw_enter(c->r, 1, 0, 0);
	return NULL;
}

/* Destroy the endpoint, rings still mapped: another thread is in there. */
static inline void *zcx_raw_stuck_destroy(void *arg)
{
	struct zcx_raw_stuck *c = arg;
	struct zcx_ep_destroy d = { .ep = c->r->c.ep };

	__atomic_store_n(&c->tid, gettid(), __ATOMIC_RELEASE);
	c->ret = zcx_test_ioctl(c->r->fd, ZCX_IOC_EP_DESTROY, &d);
	return NULL;
}

#endif /* ZCX_RAW_H */
