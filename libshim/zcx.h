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

/* Close the handle; NULL is ignored. */
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
 * Describe a negative errno returned by libzcx, with the meaning it has
 * here where that differs from the generic one.  Never returns NULL; the
 * string is static.
 */
const char *zcx_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* ZCX_H */
