// SPDX-License-Identifier: MIT
/*
 * ep.c - endpoints: the mapped rings, submissions and completions.
 *
 * One mutex per endpoint covers producing submissions and consuming
 * completions, so that threads can share an endpoint.  A completion's
 * user_data is the address of its struct zcx_req; whoever reaps it fills
 * the request, so a thread may find its request completed by another.
 * Only one thread at a time sleeps in the kernel for completions; others
 * wait on a condition variable and are woken by whoever reaps.
 */
#define _GNU_SOURCE	/* CLOCK_MONOTONIC_COARSE */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "zcx_internal.h"

/* A barrier's state page (struct zcx_bar_state) as this member sees it. */
struct zcx_bar_member {
	struct zcx_bar_state *state;	/* mapped; NULL: not a member */
	uint32_t nprocs;
	uint32_t arrivals;		/* so far: the next one's round */
	uint32_t yield_every;		/* polls between sched_yield()s */
};

/* Where a barrier request is (zcx_req.phase_). */
enum {
	ZCX_BAR_TURN = 1,	/* waiting for its round to begin */
	ZCX_BAR_ARRIVED,	/* arrived, its round not over yet */
	ZCX_BAR_ASLEEP,		/* a ZCX_OP_BARRIER waits for it in the module */
};

/* Polls of the CQ before sleeping; ZCX_SPIN overrides. */
#define ZCX_SPIN_DEFAULT	20000
#define ZCX_SPIN_POLL_DEFAULT	200000
/* Polls between two sched_yield()s (see zcx_spin_pause()). */
#define ZCX_YIELD_EVERY		256
/* How often a polling thread asleep on a shared CPU is woken to look. */
#define ZCX_POLL_LOOK_NS	100000000u

struct zcx_ep {
	struct zcx *zcx;
	struct zcx_list link;		/* on zcx->eps */
	uint32_t idx;
	unsigned int flags;
	struct zcx_addr addr;
	void *ring;
	size_t ring_size;
	uint32_t *sq_head, *sq_tail, *sq_flags, *cq_head, *cq_tail;
	uint32_t sq_mask, sq_entries, cq_mask;
	struct zcx_sqe *sqes;
	struct zcx_cqe *cqes;
	pthread_mutex_t lock;		/* SQ production, CQ consumption */
	pthread_cond_t reaped;		/* broadcast after reaping */
	bool kernel_waiter;		/* a thread sleeps in ZCX_IOC_ENTER */
	bool wake_waiter;		/* we reaped what it may wait for */
	uint32_t unsubmitted;		/* published, kernel not told (enter mode) */
	uint64_t poll_look_ns;		/* CLOCK_MONOTONIC: zcx_poll_look_due() */
	bool cq_full;			/* EBUSY since the last reap */
	unsigned long spin;
	uint64_t syscalls;
	struct zcx_bar_member bars[ZCX_MAX_BARRIERS];
};

static unsigned long zcx_spin_budget(bool poll)
{
	const char *env = getenv("ZCX_SPIN");

	if (env && *env)
		return strtoul(env, NULL, 0);
	return poll ? ZCX_SPIN_POLL_DEFAULT : ZCX_SPIN_DEFAULT;
}

static int zcx_enter(struct zcx_ep *ep, unsigned int flags, uint32_t to_submit,
		     uint32_t min_complete)
{
	struct zcx_enter arg = {
		.ep = ep->idx, .flags = flags, .to_submit = to_submit,
		.min_complete = min_complete,
	};
	int ret;

	__atomic_add_fetch(&ep->syscalls, 1, __ATOMIC_RELAXED);
	ret = ioctl(ep->zcx->fd, ZCX_IOC_ENTER, &arg);
	return ret < 0 ? -errno : ret;
}

#define ZCX_RING_FIELD(ep, off)	((uint32_t *)((char *)(ep)->ring + (off)))

ZCX_EXPORT int zcx_ep_create(struct zcx *zcx, unsigned int flags, unsigned int depth,
			     struct zcx_ep **out)
{
	struct zcx_ep_create arg = { .flags = flags, .sq_entries = depth };
	struct zcx_ep_destroy destroy = { 0 };
	const struct zcx_ring_offsets *o = &arg.offsets;
	struct zcx_ep *ep;
	int ret;

	ret = zcx_check_owner(zcx);
	if (ret)
		return ret;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -ENOMEM;
	ret = zcx_ioctl(zcx, ZCX_IOC_EP_CREATE, &arg);
	if (ret)
		goto err_free;
	ep->ring = mmap(NULL, arg.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, zcx->fd,
			(off_t)arg.mmap_offset);
	if (ep->ring == MAP_FAILED) {
		ret = -errno;
		destroy.ep = arg.ep;
		zcx_ioctl(zcx, ZCX_IOC_EP_DESTROY, &destroy);
		goto err_free;
	}
	ep->zcx = zcx;
	ep->idx = arg.ep;
	ep->flags = flags;
	ep->addr = arg.addr;
	ep->ring_size = arg.mmap_size;
	ep->sq_head = ZCX_RING_FIELD(ep, o->sq_head);
	ep->sq_tail = ZCX_RING_FIELD(ep, o->sq_tail);
	ep->sq_flags = ZCX_RING_FIELD(ep, o->sq_flags);
	ep->cq_head = ZCX_RING_FIELD(ep, o->cq_head);
	ep->cq_tail = ZCX_RING_FIELD(ep, o->cq_tail);
	ep->sq_mask = *ZCX_RING_FIELD(ep, o->sq_mask);
	ep->sq_entries = *ZCX_RING_FIELD(ep, o->sq_entries);
	ep->cq_mask = *ZCX_RING_FIELD(ep, o->cq_mask);
	ep->sqes = (struct zcx_sqe *)((char *)ep->ring + o->sqes);
	ep->cqes = (struct zcx_cqe *)((char *)ep->ring + o->cqes);
	ep->spin = zcx_spin_budget(flags & ZCX_EP_POLL);
	pthread_mutex_init(&ep->lock, NULL);
	pthread_cond_init(&ep->reaped, NULL);
	pthread_mutex_lock(&zcx->eps_lock);
	zcx_list_append(&zcx->eps, &ep->link);
	pthread_mutex_unlock(&zcx->eps_lock);
	*out = ep;
	return 0;

err_free:
	free(ep);
	return ret;
}

ZCX_EXPORT void zcx_ep_destroy(struct zcx_ep *ep)
{
	struct zcx_ep_destroy arg;
	unsigned int i;

	if (!ep)
		return;
	/*
	 * In a child of fork() the endpoint is the parent's: its mappings
	 * were not inherited (their ranges may hold the child's own memory
	 * by now), and its locks may be held, its condition variable waited
	 * on, by parent threads that did not come along (destroying it would
	 * wait for them for ever).  Only free ours.
	 */
	if (zcx_check_owner(ep->zcx)) {
		zcx_list_del(&ep->link);
		free(ep);
		return;
	}
	pthread_mutex_lock(&ep->zcx->eps_lock);
	zcx_list_del(&ep->link);
	pthread_mutex_unlock(&ep->zcx->eps_lock);
	memset(&arg, 0, sizeof(arg));
	arg.ep = ep->idx;
	zcx_ioctl(ep->zcx, ZCX_IOC_EP_DESTROY, &arg);
	munmap(ep->ring, ep->ring_size);
	for (i = 0; i < ZCX_MAX_BARRIERS; i++)
		if (ep->bars[i].state)
			munmap(ep->bars[i].state, sizeof(*ep->bars[i].state));
	pthread_cond_destroy(&ep->reaped);
	pthread_mutex_destroy(&ep->lock);
	free(ep);
}

void zcx_eps_destroy(struct zcx *zcx)
{
	while (!zcx_list_empty(&zcx->eps))
		zcx_ep_destroy(zcx_list_entry(zcx->eps.next, struct zcx_ep, link));
}

ZCX_EXPORT void zcx_ep_addr(const struct zcx_ep *ep, struct zcx_addr *addr)
{
	*addr = ep->addr;
}

ZCX_EXPORT int zcx_ep_connect(struct zcx_ep *ep, const struct zcx_addr *addr, uint32_t *peer)
{
	return zcx_ep_connect_flags(ep, addr, 0, peer);
}

ZCX_EXPORT int zcx_ep_connect_flags(struct zcx_ep *ep, const struct zcx_addr *addr,
				    unsigned int flags, uint32_t *peer)
{
	struct zcx_ep_connect arg = { .ep = ep->idx, .flags = flags, .addr = *addr };
	int ret;

	ret = zcx_check_owner(ep->zcx);
	if (!ret)
		ret = zcx_ioctl(ep->zcx, ZCX_IOC_EP_CONNECT, &arg);
	if (!ret)
		*peer = arg.peer;
	return ret;
}

ZCX_EXPORT uint64_t zcx_ep_syscalls(const struct zcx_ep *ep)
{
	return __atomic_load_n(&ep->syscalls, __ATOMIC_RELAXED);
}

/* Fill requests from the CQ; returns how many.  ep->lock held. */
static unsigned int zcx_reap_locked(struct zcx_ep *ep)
{
	uint32_t head = *ep->cq_head;
	uint32_t tail = __atomic_load_n(ep->cq_tail, __ATOMIC_ACQUIRE);
	unsigned int n = 0;

	for (; head != tail; head++, n++) {
		const struct zcx_cqe *cqe = &ep->cqes[head & ep->cq_mask];
		struct zcx_req *req = (struct zcx_req *)(uintptr_t)cqe->user_data;

		if (!req)
			continue;	/* a wake-up NOP */
		req->status = cqe->res;
		req->len = cqe->len;
		req->tag = cqe->tag;
		__atomic_store_n(&req->done, true, __ATOMIC_RELEASE);
	}
	if (n) {
		__atomic_store_n(ep->cq_head, head, __ATOMIC_RELEASE);
		__atomic_store_n(&ep->cq_full, false, __ATOMIC_RELAXED);
		pthread_cond_broadcast(&ep->reaped);
		if (ep->kernel_waiter)
			ep->wake_waiter = true;
	}
	return n;
}

/* Published entries the kernel has not taken yet. */
static uint32_t zcx_sq_pending(const struct zcx_ep *ep)
{
	return *ep->sq_tail - __atomic_load_n(ep->sq_head, __ATOMIC_ACQUIRE);
}

/*
 * Whether to wake a polling thread that went to sleep while it shared its
 * CPU: every ZCX_POLL_LOOK_NS at most, for it to look again whether it
 * now has a CPU of its own.  ep->lock held.
 */
static bool zcx_poll_look_due(struct zcx_ep *ep)
{
	struct timespec ts;
	uint64_t now;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (now < ep->poll_look_ns)
		return false;
	ep->poll_look_ns = now + ZCX_POLL_LOOK_NS;
	return true;
}

/*
 * The doorbell of a polled endpoint, for what was published and not
 * taken.  A thread that is asleep (ZCX_SQ_NEED_WAKEUP) is woken, and the
 * call takes the entries too since it is made anyway.  But a thread that
 * shares its CPU (ZCX_SQ_CPU_SHARED) would only take CPU time from the
 * processes it serves: they take their entries themselves when they wait
 * (@take) and, if it sleeps, when they publish, and wake it only now and
 * then to look again.  Publishing while it naps (the flag alone) leaves
 * the entries to it, within a tick, or to the next wait: a burst of
 * sends makes no system call each.  ep->lock held.
 */
static int zcx_poll_doorbell_locked(struct zcx_ep *ep, bool take)
{
	uint32_t pending, flags;
	bool asleep, wake;
	int ret;

	/* Tail before flags: pairs with the polling thread's barrier. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	pending = zcx_sq_pending(ep);
	flags = __atomic_load_n(ep->sq_flags, __ATOMIC_RELAXED);
	asleep = flags & ZCX_SQ_NEED_WAKEUP;
	if (!pending || !(flags & (ZCX_SQ_NEED_WAKEUP | ZCX_SQ_CPU_SHARED)))
		return 0;
	if (!(ep->zcx->features & ZCX_FEATURE_POLL_SUBMIT)) {
		/* An older module: only it takes them (waits yield to it). */
		ret = asleep ? zcx_enter(ep, ZCX_ENTER_SQ_WAKEUP, 0, 0) : 0;
		return ret < 0 ? ret : 0;
	}
	wake = asleep && (!(flags & ZCX_SQ_CPU_SHARED) || zcx_poll_look_due(ep));
	if (!wake && !take && !asleep)
		return 0;
	ret = zcx_enter(ep, wake ? ZCX_ENTER_SQ_WAKEUP : 0, pending, 0);
	/* EINTR: a signal came while the thread held the ring; later. */
	return ret < 0 && ret != -EINTR ? ret : 0;
}

/*
 * Hand the kernel what was published: the doorbell.  Everything
 * published is taken or being taken when it returns.  ep->lock held.
 */
static int zcx_ring_doorbell_locked(struct zcx_ep *ep)
{
	int ret;

	if (ep->flags & ZCX_EP_POLL)
		return zcx_poll_doorbell_locked(ep, true);
	while (ep->unsubmitted) {
		ret = zcx_enter(ep, 0, ep->unsubmitted, 0);
		if (ret == -EBUSY) {
			/* The CQ is full of completions nobody reaped yet. */
			if (!zcx_reap_locked(ep))
				return ret;
			continue;
		}
		/* A signal came while another thread took submissions. */
		if (ret == -EINTR)
			continue;
		if (ret < 0)
			return ret;
		ep->unsubmitted -= (uint32_t)ret;
	}
	return 0;
}

static bool zcx_sq_full(const struct zcx_ep *ep)
{
	return zcx_sq_pending(ep) >= ep->sq_entries;
}

/*
 * Write an entry into a free SQ slot and publish it; ring the doorbell
 * unless @lazy (the next doorbell, or a wait, will); on a polled
 * endpoint, as its thread's state says (zcx_poll_doorbell_locked()).
 * ep->lock held.
 */
static int zcx_publish_locked(struct zcx_ep *ep, const struct zcx_sqe *sqe, bool lazy)
{
	uint32_t tail = *ep->sq_tail;

	ep->sqes[tail & ep->sq_mask] = *sqe;
	/* Entry before tail: pairs with the kernel's acquire of sq_tail. */
	__atomic_store_n(ep->sq_tail, tail + 1, __ATOMIC_RELEASE);
	if (ep->flags & ZCX_EP_POLL)
		return zcx_poll_doorbell_locked(ep, false);	/* a load, mostly */
	ep->unsubmitted++;
	return lazy ? 0 : zcx_ring_doorbell_locked(ep);
}

/*
 * Unlock; if we reaped while another thread sleeps in the kernel for a
 * completion, that completion may have been its own: a NOP's completion
 * wakes it to look.  With no room for the NOP, the entries that fill the
 * SQ wake it: the kernel may not have taken them for want of the CQ room
 * we just made, so ring for them (on a polled endpoint too, whose thread
 * may sleep without looking again soon: zcx_poll_doorbell_locked()).
 */
static void zcx_unlock(struct zcx_ep *ep)
{
	static const struct zcx_sqe nop = { .opcode = ZCX_OP_NOP };

	if (ep->wake_waiter && ep->kernel_waiter) {
		if (!zcx_sq_full(ep)) {
			ep->wake_waiter = false;
			zcx_publish_locked(ep, &nop, false);
		} else if (ep->unsubmitted || (ep->flags & ZCX_EP_POLL)) {
			zcx_ring_doorbell_locked(ep);
		}
	}
	pthread_mutex_unlock(&ep->lock);
}

/*
 * Queue one submission and ring the doorbell (or not, if @lazy).  With
 * both rings full of work the module has not finished, -EAGAIN.
 */
static int zcx_post(struct zcx_ep *ep, const struct zcx_sqe *sqe, bool lazy)
{
	int ret;

	pthread_mutex_lock(&ep->lock);
	if (zcx_sq_full(ep)) {
		/* The kernel has not taken earlier entries yet: let it. */
		zcx_reap_locked(ep);
		ret = zcx_ring_doorbell_locked(ep);
		if (ret && ret != -EBUSY)
			goto out;
		ret = -EAGAIN;
		if (zcx_sq_full(ep))
			goto out;
	}
	ret = zcx_publish_locked(ep, sqe, lazy);
	/* Taken or not, it is published: it will complete. */
	if (ret == -EBUSY)
		ret = 0;
out:
	zcx_unlock(ep);
	return ret;
}

/* zcx_post() for @req, whose outputs it resets. */
static int zcx_submit(struct zcx_ep *ep, struct zcx_sqe *sqe, struct zcx_req *req, bool lazy)
{
	int ret;

	ret = zcx_check_owner(ep->zcx);
	if (ret)
		return ret;
	req->done = false;
	req->status = 0;
	req->len = 0;
	req->tag = 0;
	sqe->user_data = (uintptr_t)req;
	if (req->mr)
		sqe->handle = zcx_mr_handle(req->mr);
	return zcx_post(ep, sqe, lazy);
}

ZCX_EXPORT int zcx_ep_flush(struct zcx_ep *ep)
{
	int ret;

	ret = zcx_check_owner(ep->zcx);
	if (ret)
		return ret;
	pthread_mutex_lock(&ep->lock);
	for (;;) {
		ret = zcx_ring_doorbell_locked(ep);
		if (ret == -EBUSY)
			ret = -EAGAIN;	/* the CQ is full: reap first */
		if (ret || *ep->sq_tail == __atomic_load_n(ep->sq_head, __ATOMIC_ACQUIRE))
			break;
		/*
		 * A polling thread is on it, and takes no more while the CQ is
		 * full: reap, as no other thread can while we hold the lock.
		 */
		zcx_reap_locked(ep);
		zcx_cpu_relax();
	}
	zcx_unlock(ep);
	return ret;
}

/*
 * One poll's pause.  When what we wait for runs in other threads (a
 * polled endpoint's kernel thread, the other members of a barrier), they
 * may be waiting for this very CPU on a node with more threads than CPUs:
 * give them a turn every @yield_every polls (0: never).  sched_yield()
 * with nobody else runnable returns at once.
 */
static void zcx_spin_pause(struct zcx_ep *ep, unsigned long spins, unsigned int yield_every)
{
	if (yield_every && !(spins % yield_every)) {
		__atomic_add_fetch(&ep->syscalls, 1, __ATOMIC_RELAXED);
		sched_yield();
	} else {
		zcx_cpu_relax();
	}
}

/*
 * Whether @ep's polling thread may be waiting for our CPU: it shares its
 * own with other threads.  A module that tells (ZCX_SQ_CPU_SHARED) says
 * when; with an older one, always.
 */
static bool zcx_poller_shares_cpu(const struct zcx_ep *ep)
{
	if (!(ep->flags & ZCX_EP_POLL))
		return false;
	return !(ep->zcx->features & ZCX_FEATURE_SQ_CPU_SHARED) ||
	       (__atomic_load_n(ep->sq_flags, __ATOMIC_RELAXED) & ZCX_SQ_CPU_SHARED);
}

/*
 * A wait's poll on @ep, whose polling thread shares its CPU: take what
 * the thread left rather than wait for its turn (a context switch or two
 * per message, or a tick), as enter mode would; with a module that
 * cannot (no ZCX_FEATURE_POLL_SUBMIT), give it a turn now and then.
 * Returns < 0 on an error of the doorbell.
 */
static int zcx_poll_shared_cpu(struct zcx_ep *ep, unsigned long spins)
{
	int ret;

	if (!(ep->zcx->features & ZCX_FEATURE_POLL_SUBMIT)) {
		zcx_spin_pause(ep, spins, ZCX_YIELD_EVERY);
		return 0;
	}
	/* After EBUSY, nothing can be taken until completions are reaped. */
	if (!zcx_sq_pending(ep) || __atomic_load_n(&ep->cq_full, __ATOMIC_RELAXED)) {
		zcx_cpu_relax();
		return 0;
	}
	pthread_mutex_lock(&ep->lock);
	ret = zcx_ring_doorbell_locked(ep);
	if (ret == -EBUSY) {
		/* The CQ has no room for what is in flight: the caller reaps. */
		__atomic_store_n(&ep->cq_full, true, __ATOMIC_RELAXED);
		ret = 0;
	}
	zcx_unlock(ep);
	return ret;
}

static int zcx_wait_for(struct zcx_ep *ep, struct zcx_req *req);

static void zcx_req_finish(struct zcx_req *req, int status)
{
	req->status = status;
	__atomic_store_n(&req->done, true, __ATOMIC_RELEASE);
}

/* Wake the members asleep in the module for round @round of barrier @bar. */
static void zcx_bar_wake(struct zcx_ep *ep, uint32_t bar, uint32_t round)
{
	const struct zcx_sqe wake = { .opcode = ZCX_OP_BARRIER, .peer = bar, .tag = round };

	/*
	 * Its completion carries no request: reaping skips it.  Nothing of
	 * ours may wait on @ep again, to reap them: reap the ones before, or
	 * a member that is always the last fills the CQ with them, and the
	 * module then leaves a wake-up in a polled endpoint's SQ for good.
	 */
	pthread_mutex_lock(&ep->lock);
	zcx_reap_locked(ep);
	zcx_unlock(ep);
	while (zcx_post(ep, &wake, false) == -EAGAIN && !zcx_wait_for(ep, NULL))
		;
}

/*
 * Move a barrier request along without blocking, by the protocol of
 * struct zcx_bar_state; whether it completed.
 */
static bool zcx_bar_progress(struct zcx_ep *ep, struct zcx_req *req)
{
	struct zcx_bar_member *m = &ep->bars[req->bar_ - 1];
	struct zcx_bar_state *st = m->state;
	uint32_t round = req->round_, broken;

	if (req->phase_ == ZCX_BAR_TURN) {
		if (__atomic_load_n(&st->broken, __ATOMIC_RELAXED)) {
			zcx_req_finish(req, -ECONNRESET);
			return true;
		}
		/* Our previous arrival's round is still under way. */
		if ((int32_t)(__atomic_load_n(&st->round, __ATOMIC_ACQUIRE) - round) < 0)
			return false;
		req->phase_ = ZCX_BAR_ARRIVED;
		if (__atomic_add_fetch(&st->arrived, 1, __ATOMIC_ACQ_REL) >= m->nprocs) {
			__atomic_store_n(&st->arrived, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&st->round, round + 1, __ATOMIC_RELEASE);
			/* Round before sleepers: pairs with the module's barrier. */
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			if (__atomic_load_n(&st->sleepers, __ATOMIC_RELAXED))
				zcx_bar_wake(ep, req->bar_ - 1, round);
			zcx_req_finish(req, 0);
			return true;
		}
	}
	/*
	 * Broken before the round: a member that leaves after our round
	 * ended (it saw the round end) must not fail us.
	 */
	broken = __atomic_load_n(&st->broken, __ATOMIC_ACQUIRE);
	if ((int32_t)(__atomic_load_n(&st->round, __ATOMIC_ACQUIRE) - round) > 0) {
		zcx_req_finish(req, 0);
		return true;
	}
	if (broken) {
		zcx_req_finish(req, -ECONNRESET);
		return true;
	}
	return false;
}

/*
 * Spin on a barrier request, then sleep in the module: hand it a
 * ZCX_OP_BARRIER for the request, which then completes through the CQ.
 */
static int zcx_bar_wait(struct zcx_ep *ep, struct zcx_req *req)
{
	struct zcx_sqe sqe = { .opcode = ZCX_OP_BARRIER, .peer = req->bar_ - 1u };
	const struct zcx_bar_member *m = &ep->bars[req->bar_ - 1];
	unsigned long spins;
	int ret;

	for (spins = 0; !zcx_bar_progress(ep, req); spins++) {
		if (spins < ep->spin) {
			/*
			 * Yielding at every poll, each counts as the polls
			 * between two yields: as many yields before sleeping.
			 */
			if (m->yield_every == 1)
				spins += ZCX_YIELD_EVERY - 1;
			zcx_spin_pause(ep, spins + 1, m->yield_every);
			continue;
		}
		if (req->phase_ == ZCX_BAR_TURN) {
			/* Two of our requests on one barrier: the first one's round (a yield). */
			zcx_spin_pause(ep, 1, 1);
			continue;
		}
		sqe.tag = req->round_;
		ret = zcx_submit(ep, &sqe, req, false);
		if (!ret) {
			req->phase_ = ZCX_BAR_ASLEEP;
			return 1;
		}
		if (ret != -EAGAIN)
			return ret;
		ret = zcx_wait_for(ep, NULL);
		if (ret)
			return ret;
	}
	return 0;
}

ZCX_EXPORT int zcx_test(struct zcx_ep *ep, struct zcx_req *req)
{
	int ret = 0;

	if (__atomic_load_n(&req->done, __ATOMIC_ACQUIRE))
		return 1;
	/* A child of fork() has none of the rings or barrier pages. */
	ret = zcx_check_owner(ep->zcx);
	if (ret)
		return ret;
	if (req->bar_ && req->phase_ != ZCX_BAR_ASLEEP)
		return zcx_bar_progress(ep, req);
	pthread_mutex_lock(&ep->lock);
	zcx_reap_locked(ep);
	if (ep->unsubmitted || (ep->flags & ZCX_EP_POLL))
		ret = zcx_ring_doorbell_locked(ep);
	zcx_unlock(ep);
	if (ret && ret != -EBUSY)
		return ret;
	return __atomic_load_n(&req->done, __ATOMIC_ACQUIRE);
}

/* Whether a completion is waiting in the CQ; no lock needed to peek. */
static bool zcx_cq_pending(const struct zcx_ep *ep)
{
	return __atomic_load_n(ep->cq_tail, __ATOMIC_ACQUIRE) !=
	       __atomic_load_n(ep->cq_head, __ATOMIC_RELAXED);
}

/*
 * Wait until @req completed or, without @req, until some completion was
 * reaped or the SQ has room: spin on the CQ first, then sleep in the
 * kernel.
 */
static int zcx_wait_for(struct zcx_ep *ep, struct zcx_req *req)
{
	unsigned long spins = 0;
	bool reaped = false;
	int ret;

	/* Receives riding the next doorbell must reach the module first. */
	if (__atomic_load_n(&ep->unsubmitted, __ATOMIC_RELAXED)) {
		pthread_mutex_lock(&ep->lock);
		ret = zcx_ring_doorbell_locked(ep);
		zcx_unlock(ep);
		if (ret && ret != -EBUSY)
			return ret;
	}
	while (req ? !__atomic_load_n(&req->done, __ATOMIC_ACQUIRE) : !reaped) {
		if (spins < ep->spin) {
			spins++;
			if (!zcx_cq_pending(ep)) {
				if (!zcx_poller_shares_cpu(ep)) {
					zcx_cpu_relax();
					continue;
				}
				ret = zcx_poll_shared_cpu(ep, spins);
				if (ret)
					return ret;
				continue;
			}
		}
		pthread_mutex_lock(&ep->lock);
		if (ep->unsubmitted || (ep->flags & ZCX_EP_POLL)) {
			ret = zcx_ring_doorbell_locked(ep);
			if (ret && ret != -EBUSY) {
				zcx_unlock(ep);
				return ret;
			}
		}
		reaped = zcx_reap_locked(ep) > 0;
		/* Without @req: room in the SQ, which another thread may have made. */
		if (!req && !zcx_sq_full(ep))
			reaped = true;
		if (!reaped && !(req && req->done) && spins >= ep->spin) {
			if (ep->kernel_waiter) {
				pthread_cond_wait(&ep->reaped, &ep->lock);
				reaped = true;	/* someone reaped: look again */
			} else {
				ep->kernel_waiter = true;
				pthread_mutex_unlock(&ep->lock);
				ret = zcx_enter(ep, ZCX_ENTER_GETEVENTS, 0, 1);
				pthread_mutex_lock(&ep->lock);
				ep->kernel_waiter = false;
				ep->wake_waiter = false;
				reaped = zcx_reap_locked(ep) > 0;
				/* Whoever waits next becomes the kernel waiter. */
				pthread_cond_broadcast(&ep->reaped);
				/* EBUSY: an older module, its thread killed, a full CQ. */
				if (ret < 0 && ret != -EINTR && ret != -EBUSY) {
					pthread_mutex_unlock(&ep->lock);
					return ret;
				}
			}
		}
		zcx_unlock(ep);
	}
	return req ? req->status : 0;
}

ZCX_EXPORT int zcx_wait(struct zcx_ep *ep, struct zcx_req *req)
{
	int ret;

	if (__atomic_load_n(&req->done, __ATOMIC_ACQUIRE))
		return req->status;
	ret = zcx_check_owner(ep->zcx);
	if (ret)
		return ret;
	if (req->bar_ && req->phase_ != ZCX_BAR_ASLEEP &&
	    !__atomic_load_n(&req->done, __ATOMIC_ACQUIRE)) {
		ret = zcx_bar_wait(ep, req);
		if (ret <= 0)
			return ret ? ret : req->status;
	}
	return zcx_wait_for(ep, req);
}

static int zcx_xfer_flags(struct zcx_ep *ep, uint8_t opcode, uint8_t flags, uint32_t peer,
			  uint64_t addr, size_t len, uint64_t tag, uint64_t mask_or_raddr,
			  uint64_t rkey, struct zcx_req *req)
{
	struct zcx_sqe sqe = {
		.opcode = opcode, .flags = flags, .peer = peer, .addr = addr, .len = len,
		.tag = tag, .tag_mask = mask_or_raddr, .rkey = rkey,
	};

	req->bar_ = 0;
	/*
	 * A receive needs to reach the module only before the message does
	 * or when its caller waits: the next send's doorbell carries it.
	 */
	return zcx_submit(ep, &sqe, req, opcode == ZCX_OP_RECV);
}

static int zcx_xfer(struct zcx_ep *ep, uint8_t opcode, uint32_t peer, uint64_t addr,
		    size_t len, uint64_t tag, uint64_t mask_or_raddr, uint64_t rkey,
		    struct zcx_req *req)
{
	return zcx_xfer_flags(ep, opcode, 0, peer, addr, len, tag, mask_or_raddr, rkey, req);
}

int zcx_irecv_flags(struct zcx_ep *ep, void *buf, size_t len, uint64_t tag, uint64_t mask,
		    uint8_t flags, struct zcx_req *req)
{
	return zcx_xfer_flags(ep, ZCX_OP_RECV, flags, 0, (uintptr_t)buf, len, tag, mask, 0, req);
}

ZCX_EXPORT int zcx_isend(struct zcx_ep *ep, uint32_t peer, const void *buf, size_t len,
			 uint64_t tag, struct zcx_req *req)
{
	return zcx_xfer(ep, ZCX_OP_SEND, peer, (uintptr_t)buf, len, tag, 0, 0, req);
}

ZCX_EXPORT int zcx_irecv(struct zcx_ep *ep, void *buf, size_t len, uint64_t tag,
			 uint64_t mask, struct zcx_req *req)
{
	return zcx_irecv_flags(ep, buf, len, tag, mask, 0, req);
}

ZCX_EXPORT int zcx_iput(struct zcx_ep *ep, uint32_t peer, const void *buf, size_t len,
			uint64_t remote_addr, uint64_t rkey, struct zcx_req *req)
{
	return zcx_xfer(ep, ZCX_OP_PUT, peer, (uintptr_t)buf, len, 0, remote_addr, rkey, req);
}

ZCX_EXPORT int zcx_iget(struct zcx_ep *ep, uint32_t peer, void *buf, size_t len,
			uint64_t remote_addr, uint64_t rkey, struct zcx_req *req)
{
	return zcx_xfer(ep, ZCX_OP_GET, peer, (uintptr_t)buf, len, 0, remote_addr, rkey, req);
}

ZCX_EXPORT int zcx_ibarrier(struct zcx_ep *ep, uint32_t bar, struct zcx_req *req)
{
	struct zcx_bar_member *m;
	int ret;

	ret = zcx_check_owner(ep->zcx);
	if (ret)
		return ret;
	if (bar >= ZCX_MAX_BARRIERS || !ep->bars[bar].state)
		return -EINVAL;
	m = &ep->bars[bar];
	req->done = false;
	req->status = 0;
	req->len = 0;
	req->tag = 0;
	req->bar_ = (uint16_t)(bar + 1);
	req->phase_ = ZCX_BAR_TURN;
	req->round_ = __atomic_fetch_add(&m->arrivals, 1, __ATOMIC_RELAXED);
	zcx_bar_progress(ep, req);
	return 0;
}

/* Start, then wait: the blocking forms.  Full rings: make room, retry. */
#define zcx_complete(ep, start, req) ({						\
	int _ret;								\
	while ((_ret = (start)) == -EAGAIN && !(_ret = zcx_wait_for((ep), NULL)))	\
		;								\
	_ret ? _ret : zcx_wait((ep), (req));					\
})

ZCX_EXPORT int zcx_send(struct zcx_ep *ep, uint32_t peer, const void *buf, size_t len,
			uint64_t tag)
{
	struct zcx_req req = { 0 };

	return zcx_complete(ep, zcx_isend(ep, peer, buf, len, tag, &req), &req);
}

ZCX_EXPORT ssize_t zcx_recv(struct zcx_ep *ep, void *buf, size_t len, uint64_t tag,
			    uint64_t mask, uint64_t *tag_out)
{
	struct zcx_req req = { 0 };
	int ret = zcx_complete(ep, zcx_irecv(ep, buf, len, tag, mask, &req), &req);

	if (ret)
		return ret;
	if (tag_out)
		*tag_out = req.tag;
	return (ssize_t)req.len;
}

ZCX_EXPORT int zcx_put(struct zcx_ep *ep, uint32_t peer, const void *buf, size_t len,
		       uint64_t remote_addr, uint64_t rkey)
{
	struct zcx_req req = { 0 };

	return zcx_complete(ep, zcx_iput(ep, peer, buf, len, remote_addr, rkey, &req), &req);
}

ZCX_EXPORT int zcx_get(struct zcx_ep *ep, uint32_t peer, void *buf, size_t len,
		       uint64_t remote_addr, uint64_t rkey)
{
	struct zcx_req req = { 0 };

	return zcx_complete(ep, zcx_iget(ep, peer, buf, len, remote_addr, rkey, &req), &req);
}

ZCX_EXPORT int zcx_barrier(struct zcx_ep *ep, uint32_t bar)
{
	struct zcx_req req = { 0 };

	return zcx_complete(ep, zcx_ibarrier(ep, bar, &req), &req);
}

ZCX_EXPORT int zcx_expose(struct zcx *zcx, void *buf, size_t len, unsigned int rights,
			  uint64_t *rkey)
{
	struct zcx_expose arg = { .addr = (uintptr_t)buf, .length = len, .rights = rights };
	int ret;

	ret = zcx_check_owner(zcx);
	if (!ret)
		ret = zcx_ioctl_pinning(zcx, ZCX_IOC_EXPOSE, &arg);
	if (!ret)
		*rkey = arg.rkey;
	return ret;
}

ZCX_EXPORT int zcx_unexpose(struct zcx *zcx, uint64_t rkey)
{
	struct zcx_unexpose arg = { .rkey = rkey };
	int ret;

	ret = zcx_check_owner(zcx);
	return ret ? ret : zcx_ioctl(zcx, ZCX_IOC_UNEXPOSE, &arg);
}

/*
 * How often a member spinning on a barrier of @nprocs gives way.  With
 * more members than the node has CPUs, they take turns: the round waits
 * for members that are not running, so yield at every poll, or the other
 * members of our CPU wait out our whole spin.  (A job confined to fewer
 * CPUs than the node has is not recognised, and yields less often.)
 */
static uint32_t zcx_bar_yield_every(uint32_t nprocs)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	return cpus > 0 && (unsigned long)cpus < nprocs ? 1 : ZCX_YIELD_EVERY;
}

/* Map the state page of membership @bar. */
static int zcx_bar_map(struct zcx_ep *ep, uint32_t bar, uint32_t nprocs, uint64_t offset)
{
	void *state;

	if (bar >= ZCX_MAX_BARRIERS)
		return -EPROTO;
	state = mmap(NULL, sizeof(struct zcx_bar_state), PROT_READ | PROT_WRITE, MAP_SHARED,
		     ep->zcx->fd, (off_t)offset);
	if (state == MAP_FAILED)
		return -errno;
	ep->bars[bar] = (struct zcx_bar_member){
		.state = state, .nprocs = nprocs, .yield_every = zcx_bar_yield_every(nprocs),
	};
	return 0;
}

ZCX_EXPORT int zcx_barrier_create(struct zcx_ep *ep, unsigned int nprocs,
				  struct zcx_addr *addr, uint32_t *bar)
{
	struct zcx_bar_create arg = { .ep = ep->idx, .nprocs = nprocs };
	int ret;

	ret = zcx_check_owner(ep->zcx);
	if (!ret)
		ret = zcx_ioctl(ep->zcx, ZCX_IOC_BAR_CREATE, &arg);
	if (!ret)
		ret = zcx_bar_map(ep, arg.bar, nprocs, arg.mmap_offset);
	if (!ret) {
		*addr = arg.addr;
		*bar = arg.bar;
	}
	return ret;
}

ZCX_EXPORT int zcx_barrier_join(struct zcx_ep *ep, const struct zcx_addr *addr, uint32_t *bar)
{
	struct zcx_bar_join arg = { .ep = ep->idx, .addr = *addr };
	int ret;

	ret = zcx_check_owner(ep->zcx);
	if (!ret)
		ret = zcx_ioctl(ep->zcx, ZCX_IOC_BAR_JOIN, &arg);
	if (!ret)
		ret = zcx_bar_map(ep, arg.bar, arg.nprocs, arg.mmap_offset);
	if (!ret)
		*bar = arg.bar;
	return ret;
}
