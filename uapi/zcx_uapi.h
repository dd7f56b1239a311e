/* SPDX-License-Identifier: GPL-2.0-only WITH Linux-syscall-note OR MIT */
/*
 * zcx_uapi.h - the one ABI between zcx.ko and userspace.
 *
 * Rules every structure here follows:
 *  - fixed-width types only, explicit padding, pointers carried as __u64;
 *  - each ioctl's _IOWR() encodes the real size of its structure.  The
 *    kernel matches commands on type and number only and takes the size
 *    from the command, so a structure may grow at its end: a kernel accepts
 *    any size from the first published one upwards, treats fields the
 *    caller did not pass as zero, and insists that bytes it does not know
 *    are zero;
 *  - "flags" bits the kernel does not know, and non-zero reserved fields,
 *    fail with EINVAL; output reserved fields are written as zero.
 *
 * Errors common to every ioctl:
 *  ENOTTY  unknown command;
 *  EFAULT  the argument pointer is not readable or writable; a call that
 *          made an object it cannot tell of undoes it, unseen by other
 *          processes (but a connection that another thread has submitted
 *          on already stays until its endpoint goes, and a barrier
 *          membership that another thread used already leaves, which
 *          breaks the barrier; an undone connection to another node ends
 *          as a closed one, which fails the peer's posted receives if it
 *          was the last connected to it); ZCX_IOC_MR_REG leaves the new
 *          region cached unused, and ZCX_IOC_LIMITS the limits applied;
 *  EINVAL  wrong size, unknown flag, non-zero reserved field;
 *  EIO     the file was opened by another process: a context belongs to
 *          the address space (mm) of the process that opened /dev/zcx, so
 *          a child that inherited the descriptor across fork(), or a
 *          process that received it over a socket, cannot use it.
 */
#ifndef _UAPI_ZCX_H
#define _UAPI_ZCX_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define ZCX_DEVICE_NAME		"zcx"
#define ZCX_DEVICE_PATH		"/dev/zcx"

/* Bumped on any incompatible change; compatible growth uses features. */
#define ZCX_ABI_VERSION		1

#define ZCX_IOC_MAGIC		0xC7

/*
 * Capability bits reported in zcx_query.features.  Each capability adds
 * its bit when it lands, so userspace probes instead of comparing versions.
 */
#define ZCX_FEATURE_MR_CACHE	(1ULL << 0)	/* regions, status area, events */
#define ZCX_FEATURE_MONITOR	(1ULL << 1)	/* ZCX_IOC_MON_ADD */
#define ZCX_FEATURE_TRANSPORT	(1ULL << 2)	/* endpoints, rings, transfers */
#define ZCX_FEATURE_SQ_CPU_SHARED (1ULL << 3)	/* sq_flags ZCX_SQ_CPU_SHARED */
#define ZCX_FEATURE_POLL_SUBMIT	(1ULL << 4)	/* to_submit on ZCX_EP_POLL endpoints */
#define ZCX_FEATURE_DEV_REGS_POSTED (1ULL << 5)	/* zcx_counters.dev_regs_posted */
#define ZCX_FEATURES_KNOWN	(ZCX_FEATURE_MR_CACHE | ZCX_FEATURE_MONITOR | \
				 ZCX_FEATURE_TRANSPORT | ZCX_FEATURE_SQ_CPU_SHARED | \
				 ZCX_FEATURE_POLL_SUBMIT | ZCX_FEATURE_DEV_REGS_POSTED)

/**
 * struct zcx_query - ZCX_IOC_QUERY: ABI version, features and limits.
 * @flags:		in: must be zero.
 * @abi_version:	out: ZCX_ABI_VERSION of the running module.
 * @features:		out: ZCX_FEATURE_* bits the module supports.
 * @cache_entries:	out: region-cache entry limit per context
 *			(module parameter cache_entries, default 8192).
 * @ring_depth:		out: default submission/completion ring depth
 *			(module parameter ring_depth, default 1024).
 * @zcopy_threshold:	out: message size in bytes from which data moves
 *			between pinned pages instead of inline (module
 *			parameter zcopy_threshold, default 4096).
 * @page_size:		out: the kernel's page size.
 * @cache_bytes:	out: pinned-byte limit per context (module parameter
 *			cache_bytes; 0 means only RLIMIT_MEMLOCK applies).
 * @eager_credits:	out: inline messages one connection may have queued
 *			unreceived at its peer; beyond that, sends wait for
 *			the receiver (zero-copy) instead of being buffered.
 * @max_endpoints:	out: endpoints per context.
 * @reserved:		in: must be zero; out: zero.
 */
struct zcx_query {
	__u32 flags;
	__u32 abi_version;
	__u64 features;
	__u32 cache_entries;
	__u32 ring_depth;
	__u32 zcopy_threshold;
	__u32 page_size;
	__u64 cache_bytes;
	__u32 eager_credits;
	__u32 max_endpoints;
	__u64 reserved[3];
};

#define ZCX_IOC_QUERY		_IOWR(ZCX_IOC_MAGIC, 0x00, struct zcx_query)

/*
 * Memory regions.
 *
 * A region is a page-aligned range of the caller's memory, pinned, that
 * the module keeps cached: registering a range that a cached region with
 * at least the requested access already covers reuses it ("hit") instead
 * of pinning again.  Only anonymous, shmem/memfd/SysV shm and hugetlbfs
 * memory can be registered.
 *
 * When the memory behind a region changes (munmap, mremap, madvise
 * DONTNEED/FREE/REMOVE, hole punch, shmdt, migration, process exit) the
 * region becomes stale before the call that changed it returns: its
 * generation word changes and an event is queued.  A stale region is never
 * handed out again; its pages are unpinned shortly after, in the
 * background.  Its handle stays valid for ZCX_IOC_MR_DEREG.
 *
 * A handle is (generation << ZCX_HANDLE_SLOT_BITS) | slot.  While the
 * region is valid, word "slot" of the status area's generation array
 * equals "gen": one load tells userspace whether a registration it cached
 * still holds.  Generations are even, never reused within a context, and
 * the word becomes odd when the region goes stale or the slot is free, so
 * a reused slot never looks valid to an old handle.
 */
#define ZCX_ACCESS_READ		(1U << 0)	/* data may be read from it */
#define ZCX_ACCESS_WRITE	(1U << 1)	/* data may be written to it */
#define ZCX_ACCESS_ALL		(ZCX_ACCESS_READ | ZCX_ACCESS_WRITE)

#define ZCX_HANDLE_SLOT_BITS	24
#define ZCX_HANDLE_SLOT(handle)	((__u32)((handle) & ((1U << ZCX_HANDLE_SLOT_BITS) - 1)))
#define ZCX_HANDLE_GEN(handle)	((handle) >> ZCX_HANDLE_SLOT_BITS)

#define ZCX_MR_MISS		0	/* pinned for this call */
#define ZCX_MR_HIT		1	/* served by a cached region */

/**
 * struct zcx_mr_reg - ZCX_IOC_MR_REG: register [addr, addr + length).
 * @addr:		in: start, any alignment.
 * @length:		in: bytes, not zero.
 * @access:		in: ZCX_ACCESS_* (at least one); WRITE pins for writing.
 * @flags:		in: must be zero.
 * @handle:		out: the region's handle; release with ZCX_IOC_MR_DEREG.
 * @gen:		out: the generation word's value while valid.
 * @region_start:	out: page-aligned start of the region used.
 * @region_length:	out: its length (covers the request).
 * @slot:		out: index of the region's generation word.
 * @result:		out: ZCX_MR_HIT or ZCX_MR_MISS.
 * @reserved:		in: must be zero; out: zero.
 *
 * Access is checked against the memory's protection when a region is
 * pinned, as ibv_reg_mr() does; a later mprotect() keeps the pages and so
 * keeps the region (fork's write protection and NUMA hinting change
 * protections too, and must not cost re-pins).
 *
 * Errors: EINVAL (zero length, overflow, bad access or flags), EFAULT
 * (kernel address, unmapped hole), EACCES (protection forbids the access,
 * e.g. PROT_NONE), EOPNOTSUPP (file-backed or device memory), ENOMEM
 * (RLIMIT_MEMLOCK, cache_bytes or cache_entries reached with every cached
 * region in use), EAGAIN (the range kept changing while it was pinned),
 * EOVERFLOW (the context has handed out all 2^39 generations).
 */
struct zcx_mr_reg {
	__u64 addr;
	__u64 length;
	__u32 access;
	__u32 flags;
	__u64 handle;
	__u64 gen;
	__u64 region_start;
	__u64 region_length;
	__u32 slot;
	__u32 result;
	__u64 reserved[2];
};

/**
 * struct zcx_mr_dereg - ZCX_IOC_MR_DEREG: drop one reference to a region,
 * or remove a monitor.
 * @handle:	in: as returned by ZCX_IOC_MR_REG or ZCX_IOC_MON_ADD (stale
 *		handles included).
 * @flags:	in: must be zero.
 * @pad:	in: must be zero.
 * @reserved:	in: must be zero.
 *
 * An unused valid region stays cached (least recently used first out).
 * Errors: ENOENT (no such handle, or already released).
 */
struct zcx_mr_dereg {
	__u64 handle;
	__u32 flags;
	__u32 pad;
	__u64 reserved[2];
};

/**
 * struct zcx_mr_flush - ZCX_IOC_MR_FLUSH: unpin every unused region now
 *		(waiting 30 seconds at most, killably, for one whose
 *		registration an RDMA connection keeps to be let go).  One
 *		that an operation under way still uses (a receive posted,
 *		a copy) goes stale now and is unpinned when it ends.
 * @flags:	in: must be zero.
 * @flushed:	out: regions dropped.
 * @reserved:	in: must be zero; out: zero.
 */
struct zcx_mr_flush {
	__u32 flags;
	__u32 flushed;
	__u64 reserved[2];
};

/**
 * struct zcx_mon_add - ZCX_IOC_MON_ADD: watch a range without pinning it.
 * @addr:	in: start, any alignment.
 * @length:	in: bytes, not zero.
 * @cookie:	in: any value; events about this range carry it.
 * @flags:	in: must be zero.
 * @slot:	out: index of the monitor's generation word.
 * @handle:	out: remove the monitor with ZCX_IOC_MR_DEREG.
 * @gen:	out: the generation word's value while the range is unchanged.
 * @reserved:	in: must be zero; out: zero.
 *
 * For runtimes that keep registrations of their own (ibv_reg_mr() in
 * their protection domain, say) and need to know, exactly and at once,
 * when the memory behind them changes.  A monitor goes stale (generation
 * word, event with @cookie) on the same changes as a region, pins
 * nothing, may cover any memory the process can address, is never
 * evicted, and takes one of the context's cache entries.  Stale or not,
 * it stays until removed.
 * Errors: EINVAL (zero length, overflow, flags), EFAULT (kernel
 * address), ENOMEM (no free entry), EOVERFLOW (as for regions).
 */
struct zcx_mon_add {
	__u64 addr;
	__u64 length;
	__u64 cookie;
	__u32 flags;
	__u32 slot;
	__u64 handle;
	__u64 gen;
	__u64 reserved[2];
};

#define ZCX_LIMIT_SET_ENTRIES	(1U << 0)	/* apply @cache_entries */
#define ZCX_LIMIT_SET_BYTES	(1U << 1)	/* apply @cache_bytes */

/**
 * struct zcx_limits - ZCX_IOC_LIMITS: this context's cache limits.
 * @flags:		in: ZCX_LIMIT_SET_* selecting what to change; 0 reads.
 * @cache_entries:	in/out: regions at most, 1 to the context's
 *			status.gen_count (the module's cache_entries when
 *			it was opened).
 * @cache_bytes:	in/out: pinned bytes at most, 0 for RLIMIT_MEMLOCK
 *			only.
 * @reserved:		in: must be zero; out: zero.
 *
 * Lowering a limit evicts unused regions at once.
 */
struct zcx_limits {
	__u32 flags;
	__u32 cache_entries;
	__u64 cache_bytes;
	__u64 reserved[2];
};

#define ZCX_IOC_MR_REG		_IOWR(ZCX_IOC_MAGIC, 0x01, struct zcx_mr_reg)
#define ZCX_IOC_MR_DEREG	_IOWR(ZCX_IOC_MAGIC, 0x02, struct zcx_mr_dereg)
#define ZCX_IOC_MR_FLUSH	_IOWR(ZCX_IOC_MAGIC, 0x03, struct zcx_mr_flush)
#define ZCX_IOC_LIMITS		_IOWR(ZCX_IOC_MAGIC, 0x04, struct zcx_limits)
#define ZCX_IOC_MON_ADD		_IOWR(ZCX_IOC_MAGIC, 0x05, struct zcx_mon_add)

/*
 * Status area: mmap(NULL, status.size, PROT_READ, MAP_SHARED, fd,
 * ZCX_MMAP_STATUS), read-only and not inherited by fork() (unless the
 * process undoes that with madvise(MADV_DOFORK); a child still cannot
 * use the context, whose system calls fail there with EIO).  Map the first
 * page, read @size, then map the whole.  Counters are written by the
 * kernel with plain stores; read them with relaxed loads, except
 * @events, the event ring's head, which the kernel publishes with a
 * release store after the entry: load it with acquire before reading
 * entries.  Generation words are stored with release; load them with
 * acquire.
 */
#define ZCX_MMAP_STATUS		0ULL

/**
 * struct zcx_counters - per-context counters in the status area.
 * @hits:		registrations served by a cached region.
 * @misses:		registrations that pinned.
 * @invalidations:	regions made stale by changes to the memory.
 * @evictions:		unused regions dropped for a limit or a flush.
 * @pinned_pages:	pages pinned now (including stale regions whose
 *			unpinning is under way).
 * @regions:		regions and monitors existing now, in any state.
 * @events:		events produced so far: the event ring's head.
 * @dev_regs:		registrations of cached regions that an RDMA device
 *			keeps now (zcx_ib.ko: one per connection and range
 *			sent or received), each holding its region's pages
 *			pinned until the region is invalidated or evicted.
 * @dev_regs_total:	such registrations made so far.
 * @dev_regs_posted:	memory registrations prepared for an RDMA device for
 *			this context's transfers so far (zcx_ib.ko:
 *			fast-registration work requests, one per MR; also
 *			those of a transfer that failed before they were
 *			posted), for one message or to be kept.  None for
 *			a transfer whose pages a kept registration covers,
 *			nor for a receive, or an exposed range a peer's put
 *			or get reaches, whose pages our own READs or WRITEs
 *			reach with the device's local key (few enough DMA
 *			entries).  Zero with modules without
 *			ZCX_FEATURE_DEV_REGS_POSTED.
 * @reserved:		zero.
 */
struct zcx_counters {
	__u64 hits;
	__u64 misses;
	__u64 invalidations;
	__u64 evictions;
	__u64 pinned_pages;
	__u64 regions;
	__u64 events;
	__u64 dev_regs;
	__u64 dev_regs_total;
	__u64 dev_regs_posted;
	__u64 reserved[6];
};

/**
 * struct zcx_status - head of the status area.
 * @abi_version:	ZCX_ABI_VERSION.
 * @size:		bytes to map.
 * @gen_offset:		byte offset of __u64 gen[@gen_count].
 * @gen_count:		generation words (slots), shared by regions and
 *			monitors.
 * @event_offset:	byte offset of struct zcx_event ring[@event_count].
 * @event_count:	ring entries, a power of two.
 * @reserved:		zero.
 * @counters:		see struct zcx_counters.
 */
struct zcx_status {
	__u32 abi_version;
	__u32 size;
	__u32 gen_offset;
	__u32 gen_count;
	__u32 event_offset;
	__u32 event_count;
	__u64 reserved[5];
	struct zcx_counters counters;
};

/* Why a region went stale (zcx_event.cause). */
#define ZCX_EVENT_UNMAP		1	/* munmap, mremap move/shrink */
#define ZCX_EVENT_CLEAR		2	/* madvise, hole punch, page replaced */
#define ZCX_EVENT_RELEASE	3	/* the address space is going away */
#define ZCX_EVENT_MIGRATE	4	/* page migration */
#define ZCX_EVENT_EXCLUSIVE	5	/* device-exclusive access */
#define ZCX_EVENT_OVERFLOW	0x100	/* read() only: @lost events dropped */

/**
 * struct zcx_event - a region went stale.
 * @seq:	event number.  In the mapped ring, entry seq % event_count
 *		holds event seq once written: the kernel sets @seq to ~0,
 *		then the fields, then stores @seq (release).  A reader loads
 *		@seq with acquire, copies the fields, issues an acquire fence,
 *		and loads @seq again: equal to the number it wanted means a
 *		consistent event; any other value means overwritten
 *		(overflow).
 * @start:	the region's (or monitor's) start, page-aligned.
 * @length:	its length.
 * @handle:	its handle.
 * @cookie:	a monitor's cookie; 0 for regions.
 * @cause:	ZCX_EVENT_*.
 * @reserved:	zero.
 * @lost:	ZCX_EVENT_OVERFLOW only: events lost before this one.
 *
 * read() on the descriptor returns whole events in order, blocks unless
 * O_NONBLOCK (then EAGAIN), and reports a ring that overflowed since the
 * last read() as one ZCX_EVENT_OVERFLOW event; poll() reports POLLIN
 * while events are unread.  The mapped ring and read() are independent
 * views of the same events.
 */
struct zcx_event {
	__u64 seq;
	__u64 start;
	__u64 length;
	__u64 handle;
	__u64 cookie;
	__u32 cause;
	__u32 reserved;
	__u64 lost;
};

/*
 * Transport (ZCX_FEATURE_TRANSPORT).
 *
 * An endpoint is a pair of rings in memory shared with the kernel: a
 * submission ring (SQ) of struct zcx_sqe that userspace fills, and a
 * completion ring (CQ) of struct zcx_cqe that the kernel fills.  Map them
 * with mmap(NULL, mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
 * mmap_offset) using the values ZCX_IOC_EP_CREATE returned, and find each
 * field at the byte offsets in struct zcx_ring_offsets (the layout may
 * grow; never hard-code it).  All indices are free-running __u32 counters;
 * an entry lives at index & mask.
 *
 * Ordering, as in io_uring:
 *  - SQ: userspace writes entries, then stores sq_tail with release.  The
 *    kernel loads sq_tail with acquire, reads the entries, and stores
 *    sq_head with release once it started them: entries before sq_head
 *    may be reused, and their operations are under way (a receive is
 *    posted, a send matched or queued at its peer).
 *  - CQ: the kernel writes entries, then stores cq_tail with release.
 *    Userspace loads cq_tail with acquire, reads the entries, then stores
 *    cq_head with release.
 *  - Doorbell: after publishing sq_tail, userspace issues a full barrier
 *    and loads sq_flags.  Without a polling thread (ZCX_EP_POLL), or when
 *    ZCX_SQ_NEED_WAKEUP is set, it calls ZCX_IOC_ENTER; otherwise the
 *    polling thread will see the entries and no system call is needed.
 *    ZCX_ENTER_SQ_WAKEUP clears ZCX_SQ_NEED_WAKEUP: the thread is on its
 *    way, and sets it again before it next sleeps.  (ZCX_SQ_CPU_SHARED
 *    below changes who had better take the entries, not this rule.)
 *
 * The completion ring never overflows: the kernel takes a submission only
 * while the completions it owes plus those unread fit in the CQ.  When
 * they would not, it leaves the entry in the SQ and ZCX_IOC_ENTER
 * returns -EBUSY if it could take none; reap completions and retry.
 *
 * A submission's failure is reported in its completion (cqe.res), never by
 * ZCX_IOC_ENTER, which fails only for its own arguments.
 */

/* Endpoints of a context and connections of an endpoint. */
#define ZCX_MAX_ENDPOINTS	256
#define ZCX_MAX_CONNECTIONS	4096
#define ZCX_MAX_BARRIERS	64	/* barriers one endpoint belongs to */
#define ZCX_MAX_BARRIER_PROCS	4096

/* zcx_addr.kind */
#define ZCX_ADDR_ENDPOINT	1
#define ZCX_ADDR_BARRIER	2

/* zcx_addr.node */
#define ZCX_NODE_LOCAL		0	/* reachable on this node only */
#define ZCX_NODE_INET		1	/* also through the network: see below */

/**
 * struct zcx_addr - address of an endpoint or a barrier, to be passed to
 *		peers out of band (a file, a socket, PMIx, ...).  Treat it as
 *		opaque bytes; its size is fixed.
 * @kind:	ZCX_ADDR_*.
 * @reserved0:	zero.
 * @node:	ZCX_NODE_LOCAL, or ZCX_NODE_INET for a ZCX_EP_NET endpoint
 *		made while the RDMA backend (zcx_ib.ko) listens: the fields
 *		below say where, and peers on other nodes may connect.
 * @id:		the object's number on its node.
 * @key:	random 64-bit secret: whoever knows it may connect (or join).
 * @node_id:	ZCX_NODE_INET: the node's zcx instance (random, per load of
 *		zcx.ko): a peer with the same one is on this node and
 *		connects without the network; else zero.
 * @family:	ZCX_NODE_INET: AF_INET or AF_INET6; else zero.
 * @port:	ZCX_NODE_INET: the backend's port, network byte order.
 * @reserved1:	zero.
 * @ip:		ZCX_NODE_INET: the node's address (IPv4: the first 4 bytes).
 * @reserved2:	zero.
 */
struct zcx_addr {
	__u16 kind;
	__u16 reserved0;
	__u32 node;
	__u64 id;
	__u64 key;
	__u64 node_id;
	__u16 family;
	__be16 port;
	__u32 reserved1;
	__u8 ip[16];
	__u64 reserved2;
};

/**
 * struct zcx_ring_offsets - where the fields of the mapped rings are, in
 *		bytes from the start of the endpoint's mapping.
 * @sq_head:	__u32, written by the kernel.
 * @sq_tail:	__u32, written by userspace.
 * @sq_flags:	__u32 ZCX_SQ_*, written by the kernel.
 * @sq_mask:	__u32, entries - 1.
 * @sq_entries:	__u32.
 * @sqes:	struct zcx_sqe[sq_entries].
 * @cq_head:	__u32, written by userspace.
 * @cq_tail:	__u32, written by the kernel.
 * @cq_mask:	__u32, entries - 1.
 * @cq_entries:	__u32.
 * @cqes:	struct zcx_cqe[cq_entries].
 * @reserved:	zero.
 */
struct zcx_ring_offsets {
	__u32 sq_head;
	__u32 sq_tail;
	__u32 sq_flags;
	__u32 sq_mask;
	__u32 sq_entries;
	__u32 sqes;
	__u32 cq_head;
	__u32 cq_tail;
	__u32 cq_mask;
	__u32 cq_entries;
	__u32 cqes;
	__u32 reserved[5];
};

/* sq_flags: the polling thread sleeps; ring the doorbell (ZCX_IOC_ENTER). */
#define ZCX_SQ_NEED_WAKEUP	(1U << 0)
/*
 * sq_flags: the polling thread shares its CPU with other runnable threads
 * (more threads than CPUs), so it may wait for the CPU of the very thread
 * that spins on the completion ring.  Submissions it has not taken yet
 * (sq_head behind sq_tail) are then better taken by that thread itself
 * with ZCX_IOC_ENTER's to_submit (ZCX_FEATURE_POLL_SUBMIT; with an older
 * module, give up the CPU now and then with sched_yield()).  Once the
 * process does, the idle thread naps a tick at a time, and then sleeps
 * with both flags set.  Entries published then must still be taken:
 * wake the thread (ZCX_ENTER_SQ_WAKEUP) or take them with to_submit;
 * waking it now and then lets it look again whether it still shares
 * its CPU.  Clear, the spin needs no system call.  A hint, refreshed as
 * the thread polls (ZCX_FEATURE_SQ_CPU_SHARED).
 */
#define ZCX_SQ_CPU_SHARED	(1U << 1)

/*
 * Endpoint flags (zcx_ep_create.flags): ZCX_EP_POLL, a kernel thread of
 * the context takes submissions (it faults in the process's memory as the
 * process would, waiting for a userfaultfd to serve a page, say; if the
 * process dies meanwhile, or root kills the thread, the thread is killed
 * and serves no more: ZCX_IOC_ENTER then takes the entries, whatever its
 * to_submit, a wait in it returns when there are some, and the endpoints
 * show both flags above, so that the process calls it); ZCX_EP_ANY_USER,
 * other users may connect with the key (by default only the same
 * effective uid may); ZCX_EP_NET, peers may also connect through the
 * network (the RDMA backend), where the key is the only check: the
 * address is ZCX_NODE_INET if the backend listens.
 */
#define ZCX_EP_POLL		(1U << 0)
#define ZCX_EP_ANY_USER		(1U << 1)
#define ZCX_EP_NET		(1U << 2)
#define ZCX_EP_FLAGS		(ZCX_EP_POLL | ZCX_EP_ANY_USER | ZCX_EP_NET)

/**
 * struct zcx_ep_create - ZCX_IOC_EP_CREATE: a new endpoint.
 * @flags:	in: ZCX_EP_*.
 * @sq_entries:	in: SQ size, 0 for the module's ring_depth; rounded up to a
 *		power of two, at most 32768.  out: the size used.
 * @cq_entries:	out: CQ size, twice @sq_entries.
 * @ep:		out: the endpoint's index in this context.
 * @mmap_offset: out: mmap() offset of its rings.
 * @mmap_size:	out: bytes to map.
 * @offsets:	out: see struct zcx_ring_offsets.
 * @addr:	out: its address, for peers.
 * @reserved:	in: must be zero.
 *
 * Errors: EINVAL (flags, size, reserved), ENOSPC (ZCX_MAX_ENDPOINTS
 * already), EAGAIN (ZCX_EP_POLL: the node runs max_pollers polling
 * threads already, or the caller's effective uid max_pollers_per_user),
 * ENOMEM.
 */
struct zcx_ep_create {
	__u32 flags;
	__u32 sq_entries;
	__u32 cq_entries;
	__u32 ep;
	__u64 mmap_offset;
	__u64 mmap_size;
	struct zcx_ring_offsets offsets;
	struct zcx_addr addr;
	__u64 reserved[4];
};

/**
 * struct zcx_ep_destroy - ZCX_IOC_EP_DESTROY: close an endpoint.
 * @ep:		in: its index.
 * @flags:	in: must be zero.
 * @reserved:	in: must be zero.
 *
 * Pending operations are dropped (their completions never come); peers'
 * operations waiting on this endpoint complete with ECONNRESET.  Closing
 * the descriptor or exiting (even while a forked child still holds the
 * descriptor) does the same for every endpoint.  Errors:
 * ENOENT (no such endpoint), EINVAL.
 */
struct zcx_ep_destroy {
	__u32 ep;
	__u32 flags;
	__u64 reserved[2];
};

/**
 * struct zcx_ep_connect - ZCX_IOC_EP_CONNECT: a connection from an
 *		endpoint to a peer endpoint, for sends, puts and gets.
 * @ep:		in: the local endpoint.
 * @flags:	in: ZCX_CONNECT_*.
 * @addr:	in: the peer's address.
 * @peer:	out: the connection's number (zcx_sqe.peer).
 * @pad:	zero.
 * @reserved:	in: must be zero.
 *
 * Connections are one-way: the peer connects back to answer.  Errors:
 * ECONNREFUSED (no such endpoint on this node, or wrong key), EACCES
 * (the peer belongs to another user and did not set ZCX_EP_ANY_USER),
 * ENOSPC (ZCX_MAX_CONNECTIONS), ENOENT (no local endpoint @ep), EINVAL.
 *
 * A ZCX_NODE_INET address of another node (or any, with ZCX_CONNECT_NET)
 * connects through the RDMA backend: an RC queue pair set up with the
 * kernel's rdma_cm, the call sleeping until it is up.  The peer must have
 * been created with ZCX_EP_NET, and the key is then the only check (uids
 * mean nothing across nodes).  More errors: ENETUNREACH (no backend
 * loaded), EHOSTUNREACH (no route to the address), ETIMEDOUT, EINTR (a
 * fatal signal came first).  Over the network, sends of any size work
 * (inline up to 4 KiB; above that the receiver reads the sender's pinned
 * pages with RDMA READ), up to what 128 fast registrations map (else
 * EMSGSIZE).  Put and get too: a short put carries its bytes, else the
 * peer's node RDMA READs the put from, or RDMA WRITEs the get into, the
 * caller's pinned pages, after checking key, rights and bounds there (up
 * to 256 MiB, and what 128 registrations of the caller's device map, else
 * EMSGSIZE; ENOBUFS if the peer's device cannot register the range).
 */
/* zcx_ep_connect.flags */
#define ZCX_CONNECT_NET		(1U << 0)	/* through the network, even on this node */
#define ZCX_CONNECT_FLAGS	ZCX_CONNECT_NET

struct zcx_ep_connect {
	__u32 ep;
	__u32 flags;
	struct zcx_addr addr;
	__u32 peer;
	__u32 pad;
	__u64 reserved[2];
};

/* zcx_enter.flags */
#define ZCX_ENTER_GETEVENTS	(1U << 0)	/* wait for min_complete */
#define ZCX_ENTER_SQ_WAKEUP	(1U << 1)	/* wake the polling thread */
#define ZCX_ENTER_FLAGS		(ZCX_ENTER_GETEVENTS | ZCX_ENTER_SQ_WAKEUP)

/**
 * struct zcx_enter - ZCX_IOC_ENTER: the doorbell.
 * @ep:		in: the endpoint.
 * @flags:	in: ZCX_ENTER_*.
 * @to_submit:	in: take at most this many submissions.  On a ZCX_EP_POLL
 *		endpoint the polling thread takes them too, whichever comes
 *		first (ZCX_FEATURE_POLL_SUBMIT; older modules ignore it there).
 * @min_complete: in: with ZCX_ENTER_GETEVENTS, sleep until the CQ holds at
 *		least this many unread completions (at most cq_entries).
 * @reserved:	in: must be zero.
 *
 * Returns the number of submissions taken.  Errors: EBUSY (none taken
 * because the CQ has no room), EINTR (a signal came while waiting, for
 * the completions or for another thread taking submissions of the
 * endpoint; taken submissions still complete), ENOENT, EINVAL.
 */
struct zcx_enter {
	__u32 ep;
	__u32 flags;
	__u32 to_submit;
	__u32 min_complete;
	__u64 reserved[2];
};

/* zcx_sqe.opcode */
#define ZCX_OP_NOP		0	/* completes at once */
#define ZCX_OP_SEND		1	/* tagged message to @peer */
#define ZCX_OP_RECV		2	/* receive a message matching tag/mask */
#define ZCX_OP_PUT		3	/* write [addr, +len) to the peer's memory */
#define ZCX_OP_GET		4	/* read the peer's memory into [addr, +len) */
#define ZCX_OP_BARRIER		5	/* wait for round @tag of barrier @peer to pass */

/* zcx_sqe.flags */
#define ZCX_SQE_CONNECTED	(1U << 0)	/* RECV: see below */
#define ZCX_SQE_FLAGS		ZCX_SQE_CONNECTED

/**
 * struct zcx_sqe - a submission.
 * @opcode:	ZCX_OP_*.
 * @flags:	ZCX_SQE_* (RECV only), else zero.
 * @reserved:	must be zero.
 * @peer:	SEND, PUT, GET: connection number; BARRIER: barrier number.
 * @user_data:	copied to the completion.
 * @addr:	local buffer (SEND, RECV, PUT, GET).
 * @len:	its length in bytes.
 * @tag:	SEND: the message's tag; RECV: the tag to match; BARRIER:
 *		the round (struct zcx_bar_state).
 * @tag_mask:	RECV: bits of @tag that must match (0 takes any message).
 * @remote_addr: PUT, GET: address in the peer's exposed region.
 * @rkey:	PUT, GET: the key of that region (ZCX_IOC_EXPOSE).
 * @handle:	optional: a registration (ZCX_IOC_MR_REG) covering the local
 *		buffer, which saves the module a lookup; 0 lets the module
 *		find or make one in its cache.  A stale handle is ignored.
 *
 * Messages between two endpoints are matched in the order they were sent.
 * A posted receive completes with ECONNRESET when the last endpoint
 * connected to its endpoint goes away (no message can come any more).
 * With ZCX_SQE_CONNECTED, a receive that no waiting message matches also
 * fails so at once if no endpoint is connected to its endpoint now (the
 * last one went before it was posted); without, it waits for one.
 * A message shorter than zcopy_threshold is copied inline and its send
 * completes at once (within eager_credits); a larger one is copied once,
 * from the sender's pinned pages or memory straight into the receiver's,
 * when both sides are there, and the send completes then.
 */
struct zcx_sqe {
	__u8 opcode;
	__u8 flags;
	__u16 reserved;
	__u32 peer;
	__u64 user_data;
	__u64 addr;
	__u64 len;
	__u64 tag;
	union {
		__u64 tag_mask;
		__u64 remote_addr;
	};
	__u64 rkey;
	__u64 handle;
};

/**
 * struct zcx_cqe - a completion.
 * @user_data:	the submission's.
 * @res:	0, or a negative errno:
 *		EINVAL		bad submission (opcode, flags, peer number);
 *		EFAULT		the local buffer is not valid memory;
 *		ECONNRESET	the peer or a barrier member went away;
 *		EMSGSIZE	RECV: the message was longer than the buffer
 *				(@len bytes of it were delivered; the send
 *				completes with 0);
 *		EACCES		PUT, GET: no such key, revoked, or rights lack;
 *		ERANGE		PUT, GET: outside the exposed region;
 *		EAGAIN		PUT, GET: the owner remapped the range and
 *				its new pages were not in memory in time
 *				(or only a userfaultfd could provide them);
 *		EINTR		the copy was cut short by a fatal signal;
 *		ENOMEM, EOPNOTSUPP, EOVERFLOW as ZCX_IOC_MR_REG.
 * @flags:	zero.
 * @len:	bytes moved (RECV: the message's bytes delivered).
 * @tag:	RECV: the message's tag.
 */
struct zcx_cqe {
	__u64 user_data;
	__s32 res;
	__u32 flags;
	__u64 len;
	__u64 tag;
};

/* Rights of an exposed region (zcx_expose.rights). */
#define ZCX_REMOTE_READ		(1U << 0)	/* peers may GET from it */
#define ZCX_REMOTE_WRITE	(1U << 1)	/* peers may PUT into it */
#define ZCX_REMOTE_ALL		(ZCX_REMOTE_READ | ZCX_REMOTE_WRITE)

/**
 * struct zcx_expose - ZCX_IOC_EXPOSE: let connected peers PUT into or GET
 *		from [addr, addr + length) of this process.
 * @addr:	in: start.
 * @length:	in: bytes.
 * @rights:	in: ZCX_REMOTE_*.
 * @flags:	in: must be zero.
 * @rkey:	out: the key peers name it by; pass it out of band.
 * @reserved:	in: must be zero.
 *
 * Peers still need a connection to one of this context's endpoints.  The
 * memory is pinned (it counts against RLIMIT_MEMLOCK) until
 * ZCX_IOC_UNEXPOSE or close.  Peers always reach the memory mapped at the
 * range now: after munmap + mmap at the same address they see the new
 * memory.  Errors: those of ZCX_IOC_MR_REG.
 */
struct zcx_expose {
	__u64 addr;
	__u64 length;
	__u32 rights;
	__u32 flags;
	__u64 rkey;
	__u64 reserved[2];
};

/**
 * struct zcx_unexpose - ZCX_IOC_UNEXPOSE: revoke a key.  Transfers under
 *		way finish; later ones fail with EACCES.
 * @rkey:	in: the key.
 * @flags:	in: must be zero.
 * @pad:	in: must be zero.
 * @reserved:	in: must be zero.
 *
 * Errors: ENOENT (no such key here), EINVAL.
 */
struct zcx_unexpose {
	__u64 rkey;
	__u32 flags;
	__u32 pad;
	__u64 reserved[2];
};

/**
 * struct zcx_bar_state - a barrier's state page, shared by its members:
 *		mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
 *		mmap_offset of ZCX_IOC_BAR_CREATE or ZCX_IOC_BAR_JOIN), not
 *		inherited by fork() (as the status area).  Each field has a
 *		cache line of its own.
 * @arrived:	members: arrivals in the round under way.
 * @round:	members: rounds completed so far.
 * @broken:	module: nonzero once a member left; the barrier is dead.
 * @sleepers:	module: ZCX_OP_BARRIER waits queued in it.
 *
 * Members arrive in shared memory, with no system call: the barrier is a
 * counter and a round number, the fastest a node can do.  A member's k-th
 * arrival (from 0) belongs to round k:
 *  1. it waits until @round is k (its previous arrival completed);
 *  2. it increments @arrived (atomically); the increment that makes it
 *     nprocs stores 0 into @arrived, then @round = k + 1 with release,
 *     issues a full fence and, if @sleepers is nonzero, submits a
 *     ZCX_OP_BARRIER with tag k, which wakes them;
 *  3. the others wait until @round is not k (load with acquire), or
 *     @broken: they spin, or submit a ZCX_OP_BARRIER with tag k, which
 *     completes once @round passed k (ECONNRESET once broken).
 * The module trusts nothing in the page: a member that writes nonsense
 * only confuses its own barrier.
 */
struct zcx_bar_state {
	__u32 arrived;
	__u32 pad0[15];
	__u32 round;
	__u32 pad1[15];
	__u32 broken;
	__u32 pad2[15];
	__u32 sleepers;
	__u32 pad3[15];
};

/**
 * struct zcx_bar_create - ZCX_IOC_BAR_CREATE: a barrier for @nprocs
 *		endpoints, joined by the calling endpoint.
 * @ep:		in: the endpoint.
 * @nprocs:	in: members, 1 to ZCX_MAX_BARRIER_PROCS.
 * @addr:	out: its address; others join with it.
 * @bar:	out: its number on @ep (zcx_sqe.peer of ZCX_OP_BARRIER).
 * @flags:	in: must be zero.
 * @mmap_offset: out: mmap() offset of its state page.
 * @reserved:	in: must be zero.
 *
 * The barrier is reusable.  When a member's endpoint goes away, it
 * breaks: zcx_bar_state.broken is set and ZCX_OP_BARRIER completes with
 * ECONNRESET.  Errors: ENOSPC (ZCX_MAX_BARRIERS on @ep), ENOENT, EINVAL,
 * ENOMEM.
 */
struct zcx_bar_create {
	__u32 ep;
	__u32 nprocs;
	struct zcx_addr addr;
	__u32 bar;
	__u32 flags;
	__u64 mmap_offset;
	__u64 reserved[2];
};

/**
 * struct zcx_bar_join - ZCX_IOC_BAR_JOIN: join a barrier.
 * @ep:		in: the endpoint.
 * @flags:	in: must be zero.
 * @addr:	in: the barrier's address.
 * @bar:	out: its number on @ep.
 * @nprocs:	out: its member count.
 * @mmap_offset: out: mmap() offset of its state page.
 * @reserved:	in: must be zero.
 *
 * Errors: ECONNREFUSED (no such barrier, wrong key), EACCES (another
 * user's), EBUSY (all members joined already), ECONNRESET (broken),
 * ENOSPC, ENOENT, EINVAL.
 */
struct zcx_bar_join {
	__u32 ep;
	__u32 flags;
	struct zcx_addr addr;
	__u32 bar;
	__u32 nprocs;
	__u64 mmap_offset;
	__u64 reserved[2];
};

#define ZCX_IOC_EP_CREATE	_IOWR(ZCX_IOC_MAGIC, 0x06, struct zcx_ep_create)
#define ZCX_IOC_EP_DESTROY	_IOWR(ZCX_IOC_MAGIC, 0x07, struct zcx_ep_destroy)
#define ZCX_IOC_EP_CONNECT	_IOWR(ZCX_IOC_MAGIC, 0x08, struct zcx_ep_connect)
#define ZCX_IOC_ENTER		_IOWR(ZCX_IOC_MAGIC, 0x09, struct zcx_enter)
#define ZCX_IOC_EXPOSE		_IOWR(ZCX_IOC_MAGIC, 0x0a, struct zcx_expose)
#define ZCX_IOC_UNEXPOSE	_IOWR(ZCX_IOC_MAGIC, 0x0b, struct zcx_unexpose)
#define ZCX_IOC_BAR_CREATE	_IOWR(ZCX_IOC_MAGIC, 0x0c, struct zcx_bar_create)
#define ZCX_IOC_BAR_JOIN	_IOWR(ZCX_IOC_MAGIC, 0x0d, struct zcx_bar_join)

/*
 * Operations: the generic netlink family ZCX_NL_FAMILY_NAME ("zcx"),
 * version ZCX_NL_VERSION, in the initial network namespace.  Read with
 * libnl-3 (zcxctl does) or any generic netlink client.
 *
 * Who sees what: a process is visible to callers with the same effective
 * uid as the process had when it opened /dev/zcx, and to callers with
 * CAP_SYS_ADMIN.  Module-wide totals and parameters are visible to
 * everyone (like /sys/class/misc/zcx/).  ZCX_CMD_SET_PARAMS needs
 * CAP_SYS_ADMIN; ZCX_CMD_FLUSH of another user's process too.
 *
 * A process is named by its pid (ZCX_ATTR_PID) in the caller's pid
 * namespace; its numbers are the sums over the contexts it opened.  A
 * context whose process exited (another holds it open) is named by no
 * pid any more: only the module-wide totals count it.
 *
 * Commands (requests carry the attributes listed, replies the others):
 *  ZCX_CMD_GET_STATS	do: without ZCX_ATTR_PID the module-wide totals
 *			(ZCX_ATTR_CONTEXTS, counters of live and closed
 *			contexts, gauges of live ones); with it, that
 *			process's.  Errors: ESRCH (no context of that pid),
 *			EPERM (not visible to the caller).
 *  ZCX_CMD_GET_PROCS	dump: one message per visible context: ZCX_ATTR_PID,
 *			ZCX_ATTR_UID, ZCX_ATTR_COMM, ZCX_ATTR_CONTEXT and its
 *			counters.  With ZCX_ATTR_PID, that process's only.
 *  ZCX_CMD_GET_REGIONS	dump, ZCX_ATTR_PID required: one message per
 *			region or monitor of that process (ZCX_ATTR_CONTEXT,
 *			ZCX_ATTR_REGION_*).  Errors: EINVAL (no pid), ESRCH,
 *			EPERM.
 *  ZCX_CMD_GET_PARAMS	do: every ZCX_ATTR_PARAM_* and ZCX_ATTR_VERSION,
 *			ZCX_ATTR_ABI_VERSION.
 *  ZCX_CMD_SET_PARAMS	do: any of the settable ZCX_ATTR_PARAM_* (below);
 *			all are checked before any is applied, so a bad value
 *			changes nothing (EINVAL; EINVAL too for a parameter
 *			that cannot change at run time, or none at all).
 *			Replies like ZCX_CMD_GET_PARAMS.  Errors: EPERM.
 *  ZCX_CMD_FLUSH	do, ZCX_ATTR_PID required: drop the unused cached
 *			regions of that process, as ZCX_IOC_MR_FLUSH does
 *			(they go stale at once, their pages are unpinned in
 *			the background).  Replies ZCX_ATTR_PID and
 *			ZCX_ATTR_FLUSHED.  Errors: EINVAL, ESRCH, EPERM.
 *  ZCX_CMD_GET_DEVICES	dump: one message per network device a backend
 *			module drives (zcx_ib.ko: every RDMA device with
 *			fast registration), ZCX_ATTR_DEV_*.  Empty when no
 *			backend is loaded.
 *
 * Settable parameters, effective at once: ZCX_ATTR_PARAM_ZCOPY_THRESHOLD
 * (at most 65536), ZCX_ATTR_PARAM_POLL_IDLE_US (at most 1000000; polling
 * threads pick it up when they next go idle), ZCX_ATTR_PARAM_EAGER_CREDITS
 * (at most 32768); for contexts opened afterwards:
 * ZCX_ATTR_PARAM_CACHE_ENTRIES (1 to 1048576), ZCX_ATTR_PARAM_CACHE_BYTES
 * (0: RLIMIT_MEMLOCK only).  /sys/module/zcx/parameters/ shows the values
 * in force.
 */
#define ZCX_NL_FAMILY_NAME	"zcx"
#define ZCX_NL_VERSION		1

enum zcx_nl_cmd {
	ZCX_CMD_UNSPEC,
	ZCX_CMD_GET_STATS,
	ZCX_CMD_GET_PROCS,
	ZCX_CMD_GET_REGIONS,
	ZCX_CMD_GET_PARAMS,
	ZCX_CMD_SET_PARAMS,
	ZCX_CMD_FLUSH,
	ZCX_CMD_GET_DEVICES,
	__ZCX_CMD_MAX,
	ZCX_CMD_MAX = __ZCX_CMD_MAX - 1
};

/* ZCX_ATTR_REGION_STATE */
#define ZCX_NL_REGION_LIVE	1	/* valid, may be handed out */
#define ZCX_NL_REGION_STALE	2	/* invalidated or evicted, unpinning */

/*
 * Attributes, one flat space.  Counters are cumulative since the context
 * was opened (module-wide: since the module loaded); gauges are marked
 * "now".  Unknown attributes in replies must be ignored: the set grows.
 */
enum zcx_nl_attr {
	ZCX_ATTR_UNSPEC,
	ZCX_ATTR_PAD,			/* alignment padding for u64s */
	ZCX_ATTR_PID,			/* u32: process (thread group) id */
	ZCX_ATTR_UID,			/* u32: its effective uid at open() */
	ZCX_ATTR_COMM,			/* string: its command name at open() */
	ZCX_ATTR_CONTEXT,		/* u64: node-wide context number */
	ZCX_ATTR_CONTEXTS,		/* u32: contexts (open /dev/zcx) now */
	ZCX_ATTR_VERSION,		/* string: module version */
	ZCX_ATTR_ABI_VERSION,		/* u32: ZCX_ABI_VERSION */
	/* Registration cache. */
	ZCX_ATTR_HITS,			/* u64: registrations served from the cache */
	ZCX_ATTR_MISSES,		/* u64: registrations that pinned */
	ZCX_ATTR_INVALIDATIONS,		/* u64: regions made stale, any cause */
	ZCX_ATTR_INVAL_UNMAP,		/* u64: ... by ZCX_EVENT_UNMAP */
	ZCX_ATTR_INVAL_CLEAR,		/* u64: ... by ZCX_EVENT_CLEAR */
	ZCX_ATTR_INVAL_RELEASE,		/* u64: ... by ZCX_EVENT_RELEASE */
	ZCX_ATTR_INVAL_MIGRATE,		/* u64: ... by ZCX_EVENT_MIGRATE */
	ZCX_ATTR_INVAL_EXCLUSIVE,	/* u64: ... by ZCX_EVENT_EXCLUSIVE */
	ZCX_ATTR_EVICTIONS,		/* u64: unused regions dropped (limit, flush) */
	ZCX_ATTR_EVENTS,		/* u64: events queued */
	ZCX_ATTR_REGIONS,		/* u64: regions and monitors now */
	ZCX_ATTR_PINNED_BYTES,		/* u64: bytes pinned now */
	/* Transport. */
	ZCX_ATTR_ENDPOINTS,		/* u64: endpoints now */
	ZCX_ATTR_OPS,			/* u64: completions posted */
	ZCX_ATTR_ERRORS,		/* u64: ... with a negative res */
	ZCX_ATTR_TX_BYTES,		/* u64: bytes sent: SEND, PUT completions */
	ZCX_ATTR_RX_BYTES,		/* u64: bytes received: RECV, GET completions */
	/* ZCX_CMD_GET_REGIONS. */
	ZCX_ATTR_REGION_START,		/* u64: page-aligned start */
	ZCX_ATTR_REGION_LENGTH,		/* u64: bytes */
	ZCX_ATTR_REGION_HANDLE,		/* u64: as ZCX_IOC_MR_REG returned it */
	ZCX_ATTR_REGION_ACCESS,		/* u32: ZCX_ACCESS_*; 0 for a monitor */
	ZCX_ATTR_REGION_STATE,		/* u32: ZCX_NL_REGION_* */
	ZCX_ATTR_REGION_USERS,		/* u32: handles held (0: cached, unused) */
	ZCX_ATTR_REGION_MONITOR,	/* flag: a monitor, pins nothing */
	/* Parameters (see above for the settable ones). */
	ZCX_ATTR_PARAM_CACHE_ENTRIES,	/* u32 */
	ZCX_ATTR_PARAM_CACHE_BYTES,	/* u64 */
	ZCX_ATTR_PARAM_RING_DEPTH,	/* u32, read-only */
	ZCX_ATTR_PARAM_ZCOPY_THRESHOLD,	/* u32 */
	ZCX_ATTR_PARAM_EAGER_CREDITS,	/* u32 */
	ZCX_ATTR_PARAM_POLL_IDLE_US,	/* u32 */
	ZCX_ATTR_PARAM_MAX_POLLERS,	/* u32, read-only */
	/* ZCX_CMD_FLUSH. */
	ZCX_ATTR_FLUSHED,		/* u32: regions dropped */
	/* ZCX_CMD_GET_DEVICES. */
	ZCX_ATTR_DEV_ID,		/* u64: node-wide number, never reused */
	ZCX_ATTR_DEV_NAME,		/* string: e.g. "rxe0" */
	ZCX_ATTR_DEV_BACKEND,		/* string: the module's, e.g. "ib" */
	ZCX_ATTR_DEV_PORTS,		/* u32: ports */
	ZCX_ATTR_DEV_MR_PAGES,		/* u32: pages one fast registration maps */
	/* ZCX_CMD_GET_STATS, ZCX_CMD_GET_PROCS: as in struct zcx_counters. */
	ZCX_ATTR_DEV_REGS,		/* u64: registrations RDMA devices keep now */
	ZCX_ATTR_DEV_REGS_TOTAL,	/* u64: ... made so far */
	ZCX_ATTR_DEV_REGS_POSTED,	/* u64: registrations asked of them */
	ZCX_ATTR_PARAM_MAX_POLLERS_PER_USER,	/* u32, read-only */
	__ZCX_ATTR_MAX,
	ZCX_ATTR_MAX = __ZCX_ATTR_MAX - 1
};

#endif /* _UAPI_ZCX_H */
