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
 *  EFAULT  the argument pointer is not readable or writable;
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
#define ZCX_FEATURES_KNOWN	(ZCX_FEATURE_MR_CACHE | ZCX_FEATURE_MONITOR)

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
	__u64 reserved[4];
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
 * struct zcx_mr_flush - ZCX_IOC_MR_FLUSH: unpin every unused region now.
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
 * @cache_entries:	in/out: regions at most, 1 to the module's
 *			cache_entries.
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
 * ZCX_MMAP_STATUS), read-only and not inherited by fork().  Map the first
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
	__u64 reserved[9];
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

#endif /* _UAPI_ZCX_H */
