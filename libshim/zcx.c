// SPDX-License-Identifier: MIT
/*
 * zcx.c - libzcx: open, close, query, the status area, error reporting.
 */
#define _GNU_SOURCE	/* strerrordesc_np() */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "zcx_internal.h"

/*
 * Bumped in every child of fork(): a handle opened before it belongs to
 * the parent.  Checking it costs one load, where getpid() is a system call.
 */
static unsigned long zcx_fork_gen;
static pthread_once_t zcx_atfork_once = PTHREAD_ONCE_INIT;

static void zcx_in_child(void)
{
	__atomic_add_fetch(&zcx_fork_gen, 1, __ATOMIC_RELAXED);
}

static void zcx_register_atfork(void)
{
	pthread_atfork(NULL, NULL, zcx_in_child);
}

int zcx_check_owner(const struct zcx *zcx)
{
	return __atomic_load_n(&zcx_fork_gen, __ATOMIC_RELAXED) == zcx->fork_gen ? 0 : -EIO;
}

int zcx_ioctl(const struct zcx *zcx, unsigned long cmd, void *arg)
{
	return ioctl(zcx->fd, cmd, arg) < 0 ? -errno : 0;
}

ZCX_EXPORT int zcx_query(struct zcx *zcx, struct zcx_query *query)
{
	memset(query, 0, sizeof(*query));
	return zcx_ioctl(zcx, ZCX_IOC_QUERY, query);
}

/* Map the status area: its first page says how large it is. */
static int zcx_map_status(struct zcx *zcx)
{
	const struct zcx_status *head;
	void *all;
	size_t size;

	head = mmap(NULL, sizeof(*head), PROT_READ, MAP_SHARED, zcx->fd, ZCX_MMAP_STATUS);
	if (head == MAP_FAILED)
		return -errno;
	size = head->size;
	munmap((void *)head, sizeof(*head));
	all = mmap(NULL, size, PROT_READ, MAP_SHARED, zcx->fd, ZCX_MMAP_STATUS);
	if (all == MAP_FAILED)
		return -errno;
	zcx->status = all;
	zcx->status_size = size;
	zcx->gens = (const uint64_t *)((const char *)all + zcx->status->gen_offset);
	zcx->events = (const struct zcx_event *)((const char *)all + zcx->status->event_offset);
	return 0;
}

ZCX_EXPORT int zcx_open(struct zcx **out, unsigned int flags)
{
	struct zcx_query query = { 0 };
	struct zcx *zcx;
	int ret;

	*out = NULL;
	if (flags)
		return -EINVAL;
	pthread_once(&zcx_atfork_once, zcx_register_atfork);
	zcx = calloc(1, sizeof(*zcx));
	if (!zcx)
		return -ENOMEM;
	zcx->fork_gen = __atomic_load_n(&zcx_fork_gen, __ATOMIC_RELAXED);
	pthread_mutex_init(&zcx->lock, NULL);
	pthread_mutex_init(&zcx->events_lock, NULL);
	pthread_mutex_init(&zcx->eps_lock, NULL);
	zcx_list_init(&zcx->eps);
	zcx->fd = open(ZCX_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (zcx->fd < 0) {
		ret = -errno;
		free(zcx);
		return ret;
	}
	ret = zcx_query(zcx, &query);
	if (!ret && query.abi_version != ZCX_ABI_VERSION)
		ret = -EPROTO;
	if (!ret && !(query.features & ZCX_FEATURE_MR_CACHE))
		ret = -EPROTO;
	zcx->features = query.features;
	if (!ret)
		ret = zcx_map_status(zcx);
	if (!ret)
		ret = zcx_mr_cache_init(zcx);
	if (ret) {
		zcx_close(zcx);
		return ret;
	}
	*out = zcx;
	return 0;
}

ZCX_EXPORT void zcx_close(struct zcx *zcx)
{
	if (!zcx)
		return;
	/*
	 * The endpoints' ring mappings hold the descriptor open: without
	 * them gone, closing it would release nothing.  Closing the
	 * descriptor releases every registration at once.
	 */
	zcx_eps_destroy(zcx);
	zcx_mr_cache_fini(zcx);
	/*
	 * In a child of fork() the status area was not inherited (its range
	 * may hold the child's own memory by now), and the locks may be held
	 * by parent threads that did not come along.
	 */
	if (!zcx_check_owner(zcx)) {
		if (zcx->status)
			munmap((void *)zcx->status, zcx->status_size);
		pthread_mutex_destroy(&zcx->lock);
		pthread_mutex_destroy(&zcx->events_lock);
		pthread_mutex_destroy(&zcx->eps_lock);
	}
	close(zcx->fd);
	free(zcx);
}

ZCX_EXPORT bool zcx_owned(const struct zcx *zcx)
{
	return !zcx_check_owner(zcx);
}

ZCX_EXPORT int zcx_fd(const struct zcx *zcx)
{
	return zcx->fd;
}

ZCX_EXPORT const char *zcx_strerror(int err)
{
	const char *desc;

	switch (err) {
	case 0:
		return "Success";
	case -ENOENT:
		return "no such zcx object, or " ZCX_DEVICE_PATH " not found (is the zcx module loaded?)";
	case -EIO:
		return "zcx context belongs to another process (descriptor inherited across fork or passed)";
	case -EPROTO:
		return "zcx module speaks another ABI version than this libzcx";
	case -ENOTTY:
		return "operation not supported by the loaded zcx module";
	}
	desc = err < 0 ? strerrordesc_np(-err) : NULL;
	return desc ? desc : "Unknown error";
}
