/* SPDX-License-Identifier: MIT */
/*
 * zcx.h - libzcx, the userspace library over /dev/zcx.
 *
 * Every call that can fail returns 0 (or a non-negative value) on success
 * and a negative errno on failure; zcx_strerror() turns that into text.
 * A handle is bound to the process that opened it: after fork() the child
 * must open its own (calls through the parent's handle fail with -EIO).
 * A handle may be shared by the threads of one process.  The library
 * notices fork() through pthread_atfork(); a child created by a raw
 * clone() system call must not use its parent's handles.
 */
#ifndef ZCX_H
#define ZCX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "zcx_uapi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque handle: one zcx context, i.e. one open file of /dev/zcx. */
struct zcx;

/*
 * Open /dev/zcx (close-on-exec) and check that the module speaks
 * ZCX_ABI_VERSION.  flags must be 0.  Errors: -EINVAL (flags), -ENOENT
 * (module not loaded), -EACCES (device permissions), -EPROTO (module of
 * another ABI version), -ENOMEM.
 */
int zcx_open(struct zcx **zcx, unsigned int flags);

/*
 * Close the handle; NULL is ignored.  Endpoints still open are destroyed
 * (their handles become invalid), registrations released.  In a child of
 * fork() it only frees the child's copy of the parent's handle and
 * endpoints and closes the descriptor: it takes none of their locks,
 * which threads that did not come along may hold.
 */
void zcx_close(struct zcx *zcx);

/* Whether the handle belongs to the calling process: false after fork(). */
bool zcx_owned(const struct zcx *zcx);

/* The file descriptor behind the handle, for poll() and diagnostics. */
int zcx_fd(const struct zcx *zcx);

/* ABI version, feature bits and limits of the running module. */
int zcx_query(struct zcx *zcx, struct zcx_query *query);

/*
 * Memory registration.
 *
 * zcx_mr_reg() returns a registration of [addr, addr + len) with at least
 * @access (ZCX_ACCESS_READ and/or ZCX_ACCESS_WRITE).  The library keeps a
 * cache in front of the module's: registering a range again, while its
 * memory is unchanged, costs no system call (one load of the region's
 * generation word tells it the registration still holds).  When the
 * memory changed (munmap, mremap, madvise, ...), the next zcx_mr_reg()
 * notices and registers the new memory; a stale registration is never
 * returned.  Each successful zcx_mr_reg() needs one zcx_mr_dereg(); the
 * released registration stays cached until the cache needs the room.
 * Errors: those of ZCX_IOC_MR_REG (see zcx_uapi.h), -EIO after fork().
 */
struct zcx_mr;

int zcx_mr_reg(struct zcx *zcx, const void *addr, size_t len, unsigned int access,
	       struct zcx_mr **mr);
int zcx_mr_dereg(struct zcx *zcx, struct zcx_mr *mr);

/* The module's handle of the registration (what transfers refer to). */
uint64_t zcx_mr_handle(const struct zcx_mr *mr);

/*
 * Whether the memory behind @mr is still what was registered: one load.
 * Always false in a child of fork() (the status area is not inherited).
 */
bool zcx_mr_valid(const struct zcx *zcx, const struct zcx_mr *mr);

/* Drop every cached registration not in use (pins are released). */
int zcx_mr_flush(struct zcx *zcx);

/**
 * struct zcx_mr_stats - what the registration caches did.
 * @lib_hits:	zcx_mr_reg() served by the library, no system call.
 * @kernel_hits: served by the module's cache (one ioctl, no pinning).
 * @misses:	pinned.
 * @stale:	cached registrations found stale and replaced.
 * @evictions:	unused registrations the library released for room.
 * @kernel:	the module's counters for this context.
 */
struct zcx_mr_stats {
	uint64_t lib_hits;
	uint64_t kernel_hits;
	uint64_t misses;
	uint64_t stale;
	uint64_t evictions;
	struct zcx_counters kernel;
};

int zcx_mr_stats(struct zcx *zcx, struct zcx_mr_stats *stats);

/*
 * Monitors, for runtimes that keep registrations of their own (ibv_mr's
 * in their protection domain, say): zcx_monitor_add() watches a range
 * without pinning it; zcx_monitor_valid() tells with one load whether the
 * memory behind it is unchanged since; when it changes, an event with
 * @cookie is queued (see zcx_events_drain()).  A stale monitor stays
 * stale; remove it with zcx_monitor_del() and add a new one when the
 * runtime registers the new memory.  Errors: those of ZCX_IOC_MON_ADD,
 * -EIO after fork(), -ENOTTY if the module lacks ZCX_FEATURE_MONITOR.
 * zcx_monitor_valid() is always false in a child of fork(), where
 * zcx_monitor_del() frees the handle's memory and returns -EIO.
 */
struct zcx_monitor;

int zcx_monitor_add(struct zcx *zcx, const void *addr, size_t len, uint64_t cookie,
		    struct zcx_monitor **mon);
bool zcx_monitor_valid(const struct zcx *zcx, const struct zcx_monitor *mon);
int zcx_monitor_del(struct zcx *zcx, struct zcx_monitor *mon);

/*
 * Invalidation events, for runtimes that keep their own caches: each
 * event says a region or monitor [start, start + length) went stale and
 * why (a monitor's event carries its cookie).
 * zcx_events_drain() calls @fn for each event produced since the last
 * drain, reading the mapped ring (no system call), and returns how many
 * it delivered.  If more events came than the ring holds, @fn first gets
 * one event with cause ZCX_EVENT_OVERFLOW and the number lost in @lost:
 * treat everything as changed.  For blocking waits, poll() zcx_fd() for
 * POLLIN (read() on it consumes the same events through the kernel).
 */
typedef void (*zcx_event_fn)(void *arg, const struct zcx_event *event);

int zcx_events_drain(struct zcx *zcx, zcx_event_fn fn, void *arg);

/*
 * Events produced so far (the ring's head), one load: a cache can tell
 * "nothing changed since I last looked" without draining.
 */
uint64_t zcx_events_head(const struct zcx *zcx);

/*
 * Endpoints and transfers (needs ZCX_FEATURE_TRANSPORT; -ENOTTY without).
 *
 * An endpoint owns a submission and a completion ring mapped from the
 * module.  Its address (struct zcx_addr, fixed-size bytes) goes to peers
 * out of band; a peer that knows it connects and gets a connection number
 * to send, put and get through.  Connections are one-way: to answer, the
 * peer connects back.  An endpoint may be used by several threads.
 *
 * Non-blocking calls start an operation described by a caller-owned
 * struct zcx_req, which must stay in place until the operation completed
 * (zcx_test() returned 1 or zcx_wait() returned).  Completion sets the
 * request's @status (0 or a negative errno, see struct zcx_cqe), @len and,
 * for receives, @tag.  Buffers are registered through the module's cache
 * automatically; a caller that holds a registration covering the buffer
 * (zcx_mr_reg()) may put it in @mr to save the lookup.  Buffers must not
 * be touched until their operation completed.  A non-blocking call
 * returns -EAGAIN when the endpoint's rings are full of operations the
 * module has not finished (more than the ring depth outstanding):
 * complete some and retry.  The blocking forms do that themselves.
 *
 * With ZCX_EP_POLL a kernel thread takes submissions, so a busy endpoint
 * sends and completes with no system call at all; an idle thread sleeps
 * and the library rings the doorbell when the module asks for it.  While
 * it waits on a polled endpoint whose kernel thread shares its CPU with
 * other runnable threads (the module says so: ZCX_SQ_CPU_SHARED), the
 * library takes the submissions the thread has not taken yet itself, one
 * ZCX_IOC_ENTER each time, rather than wait for the thread's turn (with
 * a module without ZCX_FEATURE_POLL_SUBMIT it calls sched_yield() every
 * 256 polls instead).  With a CPU per thread, waiting makes no system
 * call.
 *
 * Waiting spins on the completion ring before sleeping in the module:
 * ZCX_SPIN (environment) sets the number of polls (default 20000, 200000
 * on a ZCX_EP_POLL endpoint); set it to 0 when a node runs more processes
 * than CPUs, where spinning only delays the others.  It is also a barrier
 * member's spin (below), which on such a node yields at every poll and
 * costs less than sleeping: leave it unset when waits are mostly barriers.
 */
struct zcx_ep;

/* Zero it (or set @mr) before use: @mr is read by the call. */
struct zcx_req {
	struct zcx_mr *mr;	/* in, optional */
	int status;		/* out */
	bool done;		/* out */
	size_t len;		/* out */
	uint64_t tag;		/* out */
	/* The library's own: a barrier's progress. */
	uint16_t bar_;
	uint16_t phase_;
	uint32_t round_;
};

/*
 * Create an endpoint.  @flags: ZCX_EP_POLL, ZCX_EP_ANY_USER, ZCX_EP_NET.
 * @depth: SQ entries, 0 for the module's default.  Errors: those of
 * ZCX_IOC_EP_CREATE, -EIO after fork().
 */
int zcx_ep_create(struct zcx *zcx, unsigned int flags, unsigned int depth,
		  struct zcx_ep **ep);

/*
 * Destroy an endpoint; NULL is ignored.  Operations still pending are
 * abandoned: their requests never complete.  Peers waiting on it see
 * -ECONNRESET.
 */
void zcx_ep_destroy(struct zcx_ep *ep);

/* The endpoint's address, for peers. */
void zcx_ep_addr(const struct zcx_ep *ep, struct zcx_addr *addr);

/*
 * Connect to a peer's address; *peer is the connection number.  A peer on
 * another node is reached through the RDMA backend (zcx_ib.ko), the call
 * sleeping until the connection is up; zcx_ep_connect_flags() with
 * ZCX_CONNECT_NET goes through it even for a peer on this node.
 */
int zcx_ep_connect(struct zcx_ep *ep, const struct zcx_addr *addr, uint32_t *peer);
int zcx_ep_connect_flags(struct zcx_ep *ep, const struct zcx_addr *addr, unsigned int flags,
			 uint32_t *peer);

/*
 * Tagged messages.  A receive takes the oldest message (in order per
 * sender) whose tag equals @tag in the bits set in @mask.  Without a
 * polling thread, a receive reaches the module with the endpoint's next
 * system call (the next send, zcx_test() or zcx_wait()), which saves one
 * per message in a ping-pong; zcx_ep_flush() posts it at once.  A
 * message longer than the buffer fills it and completes the receive with
 * -EMSGSIZE (the send completes with 0).  A posted receive completes with
 * -ECONNRESET when the last endpoint connected to this one goes away.
 */
int zcx_isend(struct zcx_ep *ep, uint32_t peer, const void *buf, size_t len,
	      uint64_t tag, struct zcx_req *req);
int zcx_irecv(struct zcx_ep *ep, void *buf, size_t len, uint64_t tag, uint64_t mask,
	      struct zcx_req *req);

/* Blocking forms: return 0 / the bytes received, or a negative errno. */
int zcx_send(struct zcx_ep *ep, uint32_t peer, const void *buf, size_t len, uint64_t tag);
ssize_t zcx_recv(struct zcx_ep *ep, void *buf, size_t len, uint64_t tag, uint64_t mask,
		 uint64_t *tag_out);

/*
 * Expose [buf, buf + len) to connected peers with @rights
 * (ZCX_REMOTE_READ/WRITE); *rkey names it for them.  Revoke with
 * zcx_unexpose().
 */
int zcx_expose(struct zcx *zcx, void *buf, size_t len, unsigned int rights, uint64_t *rkey);
int zcx_unexpose(struct zcx *zcx, uint64_t rkey);

/* One-sided: write to / read from a peer's exposed region. */
int zcx_iput(struct zcx_ep *ep, uint32_t peer, const void *buf, size_t len,
	     uint64_t remote_addr, uint64_t rkey, struct zcx_req *req);
int zcx_iget(struct zcx_ep *ep, uint32_t peer, void *buf, size_t len,
	     uint64_t remote_addr, uint64_t rkey, struct zcx_req *req);
int zcx_put(struct zcx_ep *ep, uint32_t peer, const void *buf, size_t len,
	    uint64_t remote_addr, uint64_t rkey);
int zcx_get(struct zcx_ep *ep, uint32_t peer, void *buf, size_t len,
	    uint64_t remote_addr, uint64_t rkey);

/*
 * Barriers: one member creates it for @nprocs endpoints and passes the
 * address to the others, who join; *bar is its number on the endpoint.
 * zcx_barrier() returns once all members arrived; -ECONNRESET once a
 * member went away.  Arriving and waiting happen in a page the members
 * share, without system calls; a member that waited ZCX_SPIN polls sleeps
 * in the module; it yields the CPU every 256 polls, for members that may
 * be waiting for it, or, when the barrier has more members than the node
 * has CPUs, at every poll, each yield counting as 256 polls.  A second
 * zcx_ibarrier() on the same barrier before the first completed arrives
 * once the first's round is over; a wait for it until then does not
 * sleep in the module but yields the CPU at every poll.  If mapping the barrier's page fails
 * (an mmap() errno such as -ENOMEM), the endpoint has joined but can
 * never arrive: destroy it, which breaks the barrier.
 */
int zcx_barrier_create(struct zcx_ep *ep, unsigned int nprocs, struct zcx_addr *addr,
		       uint32_t *bar);
int zcx_barrier_join(struct zcx_ep *ep, const struct zcx_addr *addr, uint32_t *bar);
int zcx_ibarrier(struct zcx_ep *ep, uint32_t bar, struct zcx_req *req);
int zcx_barrier(struct zcx_ep *ep, uint32_t bar);

/*
 * Groups: a barrier for the @nprocs processes of a job (ranks 0 to
 * nprocs - 1) wherever they run, across nodes too; a dissemination
 * barrier over zcx connections: ceil(log2 nprocs) rounds of one zero-byte
 * message (to rank + 2^k, from rank - 2^k), each round on an endpoint of
 * its own.  Members on one node reach each other through the module, the
 * others through the RDMA backend.  Every member, collectively:
 *
 *	zcx_group_create(zcx, nprocs, rank, ZCX_EP_NET, &g);
 *	zcx_group_addrs(g, mine);	// zcx_group_addr_count(nprocs) addresses
 *	... gather every rank's, rank after rank, into all[] (zcx_pmix_group()
 *	    does all of this through PMIx) ...
 *	zcx_group_connect(g, all, 0);	// or ZCX_CONNECT_NET: reads, for each
 *					// round k, only all[to * count + k] of
 *					// to = (rank + 2^k) % nprocs
 *	zcx_group_barrier(g);		// as often as needed
 *	zcx_group_destroy(g);
 *
 * @ep_flags are the endpoints' (ZCX_EP_NET for members on other nodes).
 * Once a member of a connected group goes, the barriers of the others fail
 * with -ECONNRESET (or the errno that broke it) instead of hanging, and the
 * group stays broken.  But a barrier whose messages all reached this
 * member returns 0 even if one of its sends failed (say the last one
 * before a member that got through it exits); the group is broken then,
 * and its next barrier fails.  A member that goes before it connected
 * leaves the others waiting for it.  A broken group's zcx_group_addrs()
 * are all zero.
 * A group is for one thread at a time.  Errors:
 * -EINVAL (no members, more than ZCX_GROUP_MAX_PROCS, rank out of range),
 * -ENOTCONN (not connected yet), -EISCONN, and those of zcx_ep_create(),
 * zcx_ep_connect_flags() and the transfers.
 */
#define ZCX_GROUP_MAX_PROCS	65536

struct zcx_group;

unsigned int zcx_group_addr_count(uint32_t nprocs);
int zcx_group_create(struct zcx *zcx, uint32_t nprocs, uint32_t rank, unsigned int ep_flags,
		     struct zcx_group **g);
void zcx_group_addrs(const struct zcx_group *g, struct zcx_addr *addrs);
int zcx_group_connect(struct zcx_group *g, const struct zcx_addr *all, unsigned int flags);
int zcx_group_barrier(struct zcx_group *g);
void zcx_group_destroy(struct zcx_group *g);

/*
 * Progress: zcx_test() returns 1 once @req completed, 0 if not yet, or a
 * negative errno if progress failed (-EIO in a child of fork(), for a
 * request not already complete there); zcx_wait() blocks until it
 * completed and returns its status.
 */
int zcx_test(struct zcx_ep *ep, struct zcx_req *req);
int zcx_wait(struct zcx_ep *ep, struct zcx_req *req);

/*
 * Return once the module has started every operation submitted so far on
 * @ep: receives are posted, sends matched or queued at their peer (with a
 * polling thread, this waits for it, reaping completions meanwhile).
 * -EAGAIN if the completion ring is full: complete requests first.
 */
int zcx_ep_flush(struct zcx_ep *ep);

/*
 * System calls the library made on this endpoint (doorbells, waits and
 * yields: a polled endpoint's, a barrier member's): with ZCX_EP_POLL, a
 * busy endpoint whose polling thread has a CPU makes none per message.
 */
uint64_t zcx_ep_syscalls(const struct zcx_ep *ep);

/*
 * Describe a negative errno returned by libzcx, with the meaning it has
 * here where that differs from the generic one.  Never returns NULL; the
 * string is static.
 */
const char *zcx_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* ZCX_H */
