/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * zcx.h - internal declarations shared by the files of zcx.ko.
 *
 * Locking, outermost first:
 *   zcx_ctx_list_mutex	the node-wide list of contexts (netlink.c walks it;
 *				a context leaves it on release() before its
 *				regions are torn down);
 *   zcx_ctx.ep_mutex	creation and destruction of endpoints and of
 *				their connections and barrier memberships,
 *				the polling thread.  A shutdown holds it
 *				while it waits for sq_mutex, so a system
 *				call takes it killably (an undo that is
 *				killed leaves it to the context's teardown);
 *   zcx_ep.sq_mutex	whoever takes submissions from an endpoint's SQ
 *				(ZCX_IOC_ENTER or the polling thread), held
 *				across faults in the process's memory (as
 *				long as the process likes: a userfaultfd),
 *				so ZCX_IOC_ENTER waits for it interruptibly
 *				and ep_mutex holders with zcx_ep_lock_sq();
 *   zcx_ep.match_mutex	a receiving endpoint's queues of posted receives
 *				and unexpected messages, and its @dead flag.
 *				Senders take their peer's; nobody holds two;
 *   zcx_ctx.read_mutex	serialises read() of events;
 *   zcx_ctx.reap_mutex	held through a whole reaper pass, so that
 *				waiting for it means the pages are unpinned
 *				(but those transfers under way hold busy);
 *   mm->mmap_lock		taken by pinning and the VMA check;
 *   zcx_ep.bars_lock	spinlock: an endpoint's barrier numbers
 *				(taken under mmap_lock by mmap());
 *   zcx_barrier.lock	spinlock: a barrier's sleepers;
 *   zcx_ctx.stats_lock	spinlock: the transport counters of the
 *				context's endpoints, live and destroyed, so
 *				that netlink counts them without waiting
 *				for an endpoint under way;
 *   zcx_ep.cq_lock		spinlock: the CQ's producer side;
 *   zcx_ctx.expose_lock	spinlock: the exposures' hash table;
 *   zcx_ctx.lock		a spinlock, innermost.  MMU-notifier callbacks
 *				take it while the mm's own locks are held, so
 *				nothing that sleeps, allocates, faults or takes
 *				mmap_lock ever runs under it (a backend's
 *				zcx_region_watch.dead() only queues work).
 *
 * zcx_mm_contexts.lock (context.c), a spinlock, is a leaf: an mm's
 * contexts, which its release() walks to queue their exit_work.
 *
 * zcx_backend_mutex (backend.c) is a leaf: the backend and its devices'
 * list; taken alone or under ep_mutex (an endpoint's address), it holds no
 * other lock.
 *
 * zcx_user_pollers_mutex (endpoint.c) is a leaf: each user's polling
 * threads, counted under ep_mutex as one starts or stops.
 *
 * The cgroup core's locks (cgroup_mutex, the threadgroup rwsem, the CPU
 * hotplug lock) are taken under ep_mutex, once per context, when its
 * polling thread joins its creator's cgroups (zcx_poller_start()); none
 * of zcx's locks is taken under them.
 *
 * Copies between processes run under no lock at all: the pages they touch
 * are held "busy" (see struct zcx_region) and the copy stops early when
 * either endpoint dies.
 */
#ifndef ZCX_H
#define ZCX_H

#include <linux/fs.h>
#include <linux/hashtable.h>
#include <linux/interval_tree.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mm_types.h>
#include <linux/mmu_notifier.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/time64.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "backend.h"
#include "compat.h"
#include "zcx_uapi.h"

/*
 * Module parameters (main.c), validated at init.  Those marked "settable"
 * change at run time through netlink (ZCX_CMD_SET_PARAMS): read them once
 * per use with READ_ONCE().
 */
extern unsigned int zcx_cache_entries;		/* settable */
extern unsigned int zcx_ring_depth;
extern unsigned int zcx_zcopy_threshold;	/* settable */
extern unsigned long zcx_cache_bytes;		/* settable */
extern unsigned int zcx_eager_credits;		/* settable */
extern unsigned int zcx_poll_idle_us;		/* settable */
extern unsigned int zcx_max_pollers;
extern unsigned int zcx_max_pollers_per_user;
extern atomic_t zcx_pollers;

#define ZCX_MAX_CACHE_ENTRIES	(1U << 20)
#define ZCX_MAX_RING_DEPTH	32768
/* Inline messages are kmalloc()ed: keep them small. */
#define ZCX_MAX_ZCOPY_THRESHOLD	(64 * 1024)
#define ZCX_EVENT_COUNT		1024
#define ZCX_MAX_EAGER_CREDITS	ZCX_MAX_RING_DEPTH
#define ZCX_MAX_POLL_IDLE_US	USEC_PER_SEC
/* Invalidation causes counted apart: ZCX_EVENT_UNMAP .. _EXCLUSIVE. */
#define ZCX_EVENT_CAUSES	ZCX_EVENT_EXCLUSIVE

/**
 * struct zcx_xfer_stats - completions an endpoint posted.
 * @ops:	completions ...
 * @errors:	... with a negative result.
 * @tx_bytes:	bytes of SEND and PUT completions.
 * @rx_bytes:	bytes of RECV and GET completions.
 */
struct zcx_xfer_stats {
	u64 ops;
	u64 errors;
	u64 tx_bytes;
	u64 rx_bytes;
};

/**
 * struct zcx_stats - a snapshot of one context's numbers, or a sum of
 *		several (netlink.c).  Names as in struct zcx_counters;
 * @inval:	invalidations by cause, [ZCX_EVENT_UNMAP - 1] first.
 * @endpoints:	endpoints now.
 * @xfer:	transport counters.
 */
struct zcx_stats {
	u64 hits;
	u64 misses;
	u64 invalidations;
	u64 inval[ZCX_EVENT_CAUSES];
	u64 evictions;
	u64 events;
	u64 regions;
	u64 pinned_pages;
	u64 dev_regs;
	u64 dev_regs_total;
	u64 dev_regs_posted;
	u64 endpoints;
	struct zcx_xfer_stats xfer;
};

enum zcx_region_state {
	ZCX_REGION_NEW,		/* being pinned, not yet visible */
	ZCX_REGION_LIVE,	/* in the tree, may be handed out */
	ZCX_REGION_DEAD,	/* stale or evicted: queued for unpinning */
};

/**
 * struct zcx_region - pinned pages of one registered range.
 * @node:	[start, last] in zcx_ctx.regions while LIVE.
 * @notifier:	MMU interval notifier over the same range.
 * @ctx:	owning context.
 * @pages:	pinned pages, @npages of them (NULL once unpinned).
 * @npages:	number of pages.
 * @access:	ZCX_ACCESS_* it was pinned for.
 * @slot:	index of its generation word.
 * @gen:	its generation (even).
 * @users:	handles userspace holds on it.
 * @state:	enum zcx_region_state.
 * @unpinned:	pages released by the reaper.
 * @busy:	transfers using the pages now, and backends' watches: the
 *		reaper leaves them pinned until the last one is done, even
 *		when the region is DEAD.
 * @monitor:	a monitor (ZCX_IOC_MON_ADD): no pages, never in @node's
 *		tree, never on the LRU.
 * @cookie:	a monitor's cookie, for its events.
 * @link:	on zcx_ctx.lru (LIVE, no users) or zcx_ctx.dead (DEAD).
 * @watches:	backends' registrations of the pages (struct
 *		zcx_region_watch), each holding a busy reference.
 *
 * All fields but @pages/@npages are protected by zcx_ctx.lock; the pages
 * belong to whoever moved the region to DEAD (the reaper).
 */
struct zcx_region {
	struct interval_tree_node node;
	struct mmu_interval_notifier notifier;
	struct zcx_ctx *ctx;
	struct page **pages;
	unsigned long npages;
	u32 access;
	u32 slot;
	u64 gen;
	unsigned int users;
	enum zcx_region_state state;
	bool unpinned;
	unsigned int busy;
	bool monitor;
	u64 cookie;
	struct list_head link;
	struct list_head watches;
};

struct zcx_mm_contexts;

/**
 * struct zcx_ctx - state of one open() of /dev/zcx.
 * @mm:		address space of the opener, held with mmgrab().  It is both
 *		the memory the context works on and its identity: calls from
 *		any other mm (a forked child, a receiver of the fd) fail.
 * @lock:	protects everything below but @status's constant header,
 *		@read_seq and @reap_work.  See the lock order above.
 * @regions:	LIVE regions (not monitors) by address.
 * @lru:	LIVE regions without users, least recently used first.
 * @dead:	DEAD regions waiting for the reaper.
 * @slots:	slot -> region, @nslots of them.
 * @nslots:	generation words in the status area.
 * @nregions:	slots in use (regions in any state, and reservations).
 * @pinned:	pages pinned or reserved for pinning.
 * @ndying:	DEAD regions the reaper has not unpinned yet ...
 * @dying_pages: ... and their pages: both leave with the reaper, so the
 *		limits do not count them.
 * @dead_watches: backends' watches on DEAD regions, which they let go of
 *		once their device is done with the pages (zcx_reap_watched()) ...
 * @watch_wait:	... which waits here for the last to go.
 * @next_gen:	next generation to hand out.
 * @max_entries: per-context limit on @nregions.
 * @max_bytes:	per-context limit on @pinned in bytes, 0 for none.
 * @free_slots: stack of free slot numbers, @nfree of them.
 * @status:	the status area (vmalloc, zeroed), @status_size bytes.
 * @gens:	its generation words.
 * @events:	its event ring.
 * @read_mutex:	serialises read().
 * @read_seq:	next event read() returns (under @read_mutex).
 * @event_wait:	read() and poll() wait here for events.
 * @reap_work:	unpins DEAD regions outside the notifier callbacks.
 * @reap_mutex:	held by whoever unpins DEAD regions.
 * @mm_contexts: the contexts of @mm (context.c), told when its address
 *		space goes ...
 * @mm_entry:	... this one among them (under its lock) ...
 * @exit_work:	... and this takes the endpoints down then.
 * @busy:	busy references on this context's regions and remote
 *		accesses to its mm (transfers, its own or peers');
 *		teardown waits for zero (zcx_ctx_busy_put()).
 * @kthread_memlock: RLIMIT_MEMLOCK of the process when it last created
 *		a polled endpoint or exposed memory (RLIM_INFINITY with
 *		CAP_IPC_LOCK): the limit its polling thread, or a backend's
 *		worker serving a put or get, pins under.
 * @ep_mutex:	see the lock order above.
 * @eps:	endpoints by index, RCU-protected for lookups.
 * @polled:	the indices of the ZCX_EP_POLL ones (set under @ep_mutex),
 *		so that the polling thread looks at no others.
 * @poller:	the polling thread, started with the first ZCX_EP_POLL
 *		endpoint (stopped again if that creation fails) and kept
 *		until the context goes; killable (zcx_poller_kill()) ...
 * @poller_user: the effective uid that started it, whose share
 *		(max_pollers_per_user) it takes.
 * @poller_killed: ... and then killed: it serves no more.
 * @poll_wait:	where it sleeps when idle ...
 * @poll_kick:	... until this is set (ZCX_ENTER_SQ_WAKEUP).
 * @poll_takers: the process takes submissions of its polled endpoints
 *		itself (ZCX_IOC_ENTER's to_submit) when the thread shares
 *		its CPU, so an idle thread may nap rather than stay
 *		runnable for it.
 * @expose_lock: protects @exposed.
 * @exposed:	exposed regions by key.
 * @inval:	invalidations by cause (under @lock), [ZCX_EVENT_UNMAP - 1]
 *		first; the status area counts them all together.
 * @stats_lock: see the lock order above.
 * @counted:	endpoints whose counters are not in @xfer_closed yet
 *		(struct zcx_ep, under @stats_lock) ...
 * @xfer_closed: ... and the transport counters of the others, destroyed
 *		(under @stats_lock).
 * @list:	on the node-wide list (zcx_ctx_list_mutex) ...
 * @id:		... where it has this number, from 1, ascending.
 * @pid:	thread group of the opener (a reference) ...
 * @euid:	... its effective uid ...
 * @comm:	... and command name, for netlink: who may see the context,
 *		and how it is shown.
 */
struct zcx_ctx {
	struct mm_struct *mm;
	spinlock_t lock;		/* innermost; see the lock order above */
	struct rb_root_cached regions;
	struct list_head lru;
	struct list_head dead;
	struct zcx_region **slots;
	u32 nslots;
	u32 nregions;
	u64 pinned;
	u32 ndying;
	u64 dying_pages;
	unsigned int dead_watches;
	wait_queue_head_t watch_wait;
	u64 next_gen;
	u32 max_entries;
	u64 max_bytes;
	u32 *free_slots;
	u32 nfree;
	struct zcx_status *status;
	size_t status_size;
	__u64 *gens;
	struct zcx_event *events;
	struct mutex read_mutex;	/* serialises read() */
	u64 read_seq;
	wait_queue_head_t event_wait;
	struct work_struct reap_work;
	struct mutex reap_mutex;	/* see the lock order above */
	struct zcx_mm_contexts *mm_contexts;
	struct list_head mm_entry;
	struct work_struct exit_work;
	atomic_t busy;
	unsigned long kthread_memlock;
	struct mutex ep_mutex;		/* see the lock order above */
	struct zcx_ep __rcu *eps[ZCX_MAX_ENDPOINTS];
	DECLARE_BITMAP(polled, ZCX_MAX_ENDPOINTS);
	struct task_struct *poller;
	kuid_t poller_user;
	bool poller_killed;
	wait_queue_head_t poll_wait;
	bool poll_kick;
	bool poll_takers;
	spinlock_t expose_lock;		/* see the lock order above */
	DECLARE_HASHTABLE(exposed, 6);
	u64 inval[ZCX_EVENT_CAUSES];
	spinlock_t stats_lock;		/* see the lock order above */
	struct list_head counted;
	struct zcx_xfer_stats xfer_closed;
	struct list_head list;
	u64 id;
	struct pid *pid;
	kuid_t euid;
	char comm[TASK_COMM_LEN];
};

/* An endpoint's mmap() offsets: (index + 1) << this, and below it its barriers. */
#define ZCX_MMAP_EP_SHIFT	32

struct zcx_ring_hdr;
struct zcx_barrier;

/**
 * struct zcx_ep - an endpoint: its rings and its message queues.
 * @ref:	held by the context's table, its connections' peers, its
 *		operations and lookups in flight.
 * @rcu:	frees it after RCU lookups.
 * @ctx:	owner; valid while !@dead or while a busy reference is held.
 * @idx:	index in ctx->eps.
 * @id:		number in the node-wide table (the address's id).
 * @key:	the address's secret.
 * @owner:	euid of the creator.
 * @memcg:	the creator's memory cgroup (a reference): what is allocated
 *		for the endpoint outside its owner's system calls (messages
 *		received from another node, their buffers, a PUT or GET
 *		served) is charged to it, not to the node.
 * @flags:	ZCX_EP_*.
 * @ring:	the mapped memory (vmalloc, zeroed), @ring_size bytes: @hdr,
 *		then @sqes, then @cqes.
 * @sq_mask:	@sq_entries - 1, the kernel's own copy.
 * @cq_mask:	@cq_entries - 1, the kernel's own copy.
 * @sq_mutex:	see the lock order.
 * @sq_head:	next SQ entry to take (under @sq_mutex).
 * @cq_lock:	see the lock order.
 * @cq_tail:	next CQ entry to fill (under @cq_lock).
 * @owed:	operations taken but not completed (under @cq_lock): they
 *		have CQ room reserved, so the CQ never overflows.
 * @cq_wait:	ZCX_IOC_ENTER waits here for completions.
 * @match_mutex: see the lock order.
 * @dead:	destroyed: takes nothing more, peers fail (under
 *		@match_mutex; read locklessly to cut copies short).
 * @posted:	receives waiting for a message (struct zcx_op).
 * @unexpected:	messages waiting for a receive (struct zcx_op).
 * @accepted:	connections from other nodes (struct zcx_accepted), under
 *		@match_mutex.
 * @senders:	connections to it from live endpoints (under @match_mutex):
 *		when the last goes, posted receives fail.
 * @conns:	connections by number (struct zcx_conn).
 * @bars:	barriers joined, by number (set under ctx->ep_mutex, read
 *		under @sq_mutex or RCU).
 * @bars_used:	numbers of @bars that a submission or an mmap() used: a
 *		join undone before any did gives its place back.
 * @bars_lock:	taken to change @bars, and by an mmap() to mark the
 *		membership it maps used, so that it marks no other.
 * @stats:	completions posted (under @cq_lock); added to the context's
 *		@xfer_closed when the endpoint is destroyed ...
 * @counted:	... until then on the context's @counted list.
 */
struct zcx_ep {
	struct kref ref;
	struct rcu_head rcu;
	struct zcx_ctx *ctx;
	u32 idx;
	u32 id;
	u64 key;
	kuid_t owner;
	struct mem_cgroup *memcg;
	u32 flags;
	void *ring;
	size_t ring_size;
	struct zcx_ring_hdr *hdr;
	struct zcx_sqe *sqes;
	struct zcx_cqe *cqes;
	u32 sq_entries;
	u32 cq_entries;
	u32 sq_mask;
	u32 cq_mask;
	struct mutex sq_mutex;		/* see the lock order */
	u32 sq_head;
	spinlock_t cq_lock;		/* see the lock order */
	u32 cq_tail;
	u32 owed;
	wait_queue_head_t cq_wait;
	struct mutex match_mutex;	/* see the lock order */
	bool dead;
	struct list_head posted;
	struct list_head unexpected;
	struct list_head accepted;
	unsigned int senders;
	struct xarray conns;
	struct zcx_barrier *bars[ZCX_MAX_BARRIERS];
	DECLARE_BITMAP(bars_used, ZCX_MAX_BARRIERS);
	spinlock_t bars_lock;
	struct zcx_xfer_stats stats;
	struct list_head counted;
};

/**
 * struct zcx_conn - a one-way connection to a peer endpoint.
 * @ref:	held by the connection table and by queued eager messages.
 * @peer:	the peer (a reference).
 * @eager:	eager messages queued unreceived at @peer (under
 *		peer->match_mutex), at most zcx_eager_credits.
 * @used:	a submission used it (set under the owner's sq_mutex).
 * @ops:	for a peer on another node (@peer is NULL): the backend that
 *		carries the connection (a reference on its module) ...
 * @remote:	... and its state.
 */
struct zcx_conn {
	struct kref ref;
	struct zcx_ep *peer;
	unsigned int eager;
	bool used;
	const struct zcx_backend_ops *ops;
	void *remote;
};

/**
 * struct zcx_op - a submission taken from an SQ, until it completes.
 * @link:	on a peer's or its owner's queue, or a barrier's.
 * @ep:		owner (a reference), whose CQ gets the completion; NULL for
 *		an eager message, whose send completed already.
 * @user_data:	from the SQE.
 * @opcode:	ZCX_OP_*.
 * @addr:	the local buffer ...
 * @len:	... and its length.
 * @tag:	SEND: the message's; RECV: to match ...
 * @tag_mask:	... in these bits.
 * @need_sender: RECV: fail, rather than wait, with no sender connected.
 * @region:	busy reference on the pinned pages of the buffer, or NULL.
 * @data:	an eager message's bytes (kmalloc), or NULL.
 * @conn:	an eager message's connection (a reference), for its credit.
 * @rx:		a message received by a backend: the buffer @data is in, to
 *		give back (instead of freeing @data); with @data NULL, a
 *		rendezvous message the backend pulls into the receive.
 */
struct zcx_op {
	struct list_head link;
	struct zcx_ep *ep;
	u64 user_data;
	u8 opcode;
	bool need_sender;
	u64 addr;
	u64 len;
	u64 tag;
	u64 tag_mask;
	struct zcx_region *region;
	void *data;
	struct zcx_conn *conn;
	void *rx;
};

/* endpoint.c */
int zcx_ep_create(struct zcx_ctx *ctx, struct zcx_ep_create *arg);
int zcx_ep_destroy_idx(struct zcx_ctx *ctx, u32 idx);
void zcx_eps_destroy(struct zcx_ctx *ctx);
int zcx_ep_connect(struct zcx_ctx *ctx, struct zcx_ep_connect *arg);
int zcx_ep_enter(struct zcx_ctx *ctx, const struct zcx_enter *arg);
int zcx_ep_mmap(struct zcx_ctx *ctx, struct vm_area_struct *vma);
struct zcx_ep *zcx_ep_get(struct zcx_ctx *ctx, u32 idx);
void zcx_poller_kick(struct zcx_ctx *ctx);
void zcx_ep_lock_sq(struct zcx_ep *ep);
void zcx_ep_put(struct zcx_ep *ep);
void zcx_op_complete(struct zcx_op *op, int res, u64 len, u64 tag);
void zcx_ops_complete(struct list_head *list, int res);
bool zcx_addr_valid(const struct zcx_addr *addr, u16 kind);
void zcx_ep_global_exit(void);
void zcx_eps_stats_add(struct zcx_ctx *ctx, struct zcx_stats *sum);
void zcx_xfer_stats_add(struct zcx_xfer_stats *sum, const struct zcx_xfer_stats *add);

/* xfer.c */
void zcx_op_send(struct zcx_op *op, struct zcx_conn *conn, u64 handle);
void zcx_ep_sender_gone(struct zcx_ep *ep, bool refused);
void zcx_op_recv(struct zcx_op *op, u64 handle);
void zcx_op_rma(struct zcx_op *op, struct zcx_conn *conn, u64 remote_addr, u64 rkey,
		u64 handle);
void zcx_ep_cancel(struct zcx_ep *ep);
void zcx_ep_disconnect(struct zcx_ctx *ctx, u32 ep_idx, u32 peer);
void zcx_conn_put(struct zcx_conn *conn);
void zcx_conn_count(struct zcx_conn *conn);
void zcx_conn_undo(struct zcx_conn *conn);
int zcx_expose(struct zcx_ctx *ctx, struct zcx_expose *arg);
int zcx_unexpose(struct zcx_ctx *ctx, u64 rkey);
void zcx_exposed_destroy(struct zcx_ctx *ctx);

/* barrier.c */
int zcx_bar_create(struct zcx_ctx *ctx, struct zcx_bar_create *arg);
int zcx_bar_join(struct zcx_ctx *ctx, struct zcx_bar_join *arg);
void zcx_op_barrier(struct zcx_op *op, u32 bar);
void zcx_bar_wake_passed(struct zcx_ep *ep, u32 bar);
void zcx_ep_leave_barriers(struct zcx_ep *ep);
void zcx_bar_detach(struct zcx_ctx *ctx, u32 ep_idx, u32 idx);
int zcx_bar_mmap(struct zcx_ctx *ctx, struct vm_area_struct *vma);
void zcx_bar_global_exit(void);

/* context.c */
extern struct list_head zcx_ctx_list;
extern struct mutex zcx_ctx_list_mutex;

/* backend.c: the devices backends (zcx_ib.ko) drive, in order of id. */
extern struct list_head zcx_backend_devs;
extern struct mutex zcx_backend_mutex;
extern u64 zcx_node_id;
const struct zcx_backend_ops *zcx_backend_get(void);
void zcx_backend_put(const struct zcx_backend_ops *ops);
void zcx_backend_release_rx(void *rx);
void zcx_backend_pull(void *rx, struct zcx_op *recv, u64 len);
int zcx_region_watch(struct zcx_region *r, struct zcx_region_watch *w);
struct zcx_ctx *zcx_ctx_create(void);
void zcx_ctx_destroy(struct zcx_ctx *ctx);
void zcx_ctx_global_exit(void);
int zcx_ctx_check_caller(const struct zcx_ctx *ctx);
void zcx_ctx_stats_add(struct zcx_ctx *ctx, struct zcx_stats *sum);
void zcx_ctx_closed_stats(struct zcx_stats *sum);

/* netlink.c */
int zcx_netlink_init(void);
void zcx_netlink_exit(void);

/* ioctl.c */
long zcx_ioctl(struct file *file, unsigned int cmd, unsigned long arg);

/* region.c */
int zcx_mr_register(struct zcx_ctx *ctx, struct zcx_mr_reg *reg);
int zcx_mr_deregister(struct zcx_ctx *ctx, u64 handle);
unsigned int zcx_mr_flush(struct zcx_ctx *ctx);
void zcx_ctx_note_memlock(struct zcx_ctx *ctx);
int zcx_pin_charge(struct zcx_ctx *ctx, unsigned long npages);
void zcx_pin_uncharge(struct zcx_ctx *ctx, unsigned long npages);
unsigned int zcx_mr_evict_unused(struct zcx_ctx *ctx);
int zcx_mr_set_limits(struct zcx_ctx *ctx, struct zcx_limits *limits);
int zcx_mon_add(struct zcx_ctx *ctx, struct zcx_mon_add *mon);
void zcx_regions_destroy(struct zcx_ctx *ctx);
void zcx_reap_work(struct work_struct *work);
int zcx_region_acquire(struct zcx_ctx *ctx, u64 addr, u64 len, u32 access, u64 handle,
		       struct zcx_region **out);
struct zcx_region *zcx_handle_lookup_locked(struct zcx_ctx *ctx, u64 handle,
					    unsigned long start, unsigned long last,
					    u32 access);
void zcx_region_busy_get_locked(struct zcx_region *r);
void zcx_region_busy_put(struct zcx_region *r);
bool zcx_region_busy_drop_locked(struct zcx_region *r);
void zcx_ctx_busy_put_reap(struct zcx_ctx *ctx, bool reap);
int zcx_user_range(u64 addr, u64 len, unsigned long *start, unsigned long *end);

/* status.c */
int zcx_status_init(struct zcx_ctx *ctx);
void zcx_status_free(struct zcx_ctx *ctx);
void zcx_event_add_locked(struct zcx_ctx *ctx, const struct zcx_region *region, u32 cause);
int zcx_status_mmap(struct zcx_ctx *ctx, struct vm_area_struct *vma);
ssize_t zcx_events_read(struct zcx_ctx *ctx, char __user *buf, size_t len, bool nonblock);
__poll_t zcx_events_poll(struct zcx_ctx *ctx, struct file *file, poll_table *wait);

static inline u64 zcx_region_handle(const struct zcx_region *r)
{
	return (r->gen << ZCX_HANDLE_SLOT_BITS) | r->slot;
}

/*
 * ctx->busy counts what keeps a context's pages in use by transfers;
 * teardown waits for zero.  wait_var_event() hashes the address only, so
 * the waker touches nothing of the context after its decrement.
 */
static inline void zcx_ctx_busy_put(struct zcx_ctx *ctx)
{
	if (atomic_dec_and_test(&ctx->busy))
		wake_up_var(&ctx->busy);
}

/*
 * Counters in the shared status area.  Only the kernel writes them, under
 * zcx_ctx.lock; WRITE_ONCE() because userspace reads them concurrently.
 */
#define zcx_counter_add(ctx, name, delta) \
	WRITE_ONCE((ctx)->status->counters.name, (ctx)->status->counters.name + (delta))

/* A backend asked its device for @n registrations for @ctx's transfers. */
static inline void zcx_ctx_regs_posted(struct zcx_ctx *ctx, u32 n)
{
	spin_lock(&ctx->lock);
	zcx_counter_add(ctx, dev_regs_posted, n);
	spin_unlock(&ctx->lock);
}

/* stats.c: module-wide counters, for leak checks (sysfs). */
extern atomic64_t zcx_stat_contexts;
extern atomic64_t zcx_stat_regions;
extern atomic64_t zcx_stat_pinned_pages;
extern const struct attribute_group *zcx_attr_groups[];

#endif /* ZCX_H */
