// SPDX-License-Identifier: MIT
/*
 * monitor.c - libzcx: watching ranges without pinning them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "zcx_internal.h"

struct zcx_monitor {
	uint32_t slot;
	uint64_t gen;
	uint64_t handle;
};

ZCX_EXPORT int zcx_monitor_add(struct zcx *zcx, const void *addr, size_t len, uint64_t cookie,
			       struct zcx_monitor **out)
{
	struct zcx_mon_add add;
	struct zcx_monitor *mon;
	int ret;

	*out = NULL;
	ret = zcx_check_owner(zcx);
	if (ret)
		return ret;
	mon = malloc(sizeof(*mon));
	if (!mon)
		return -ENOMEM;
	memset(&add, 0, sizeof(add));
	add.addr = (uintptr_t)addr;
	add.length = len;
	add.cookie = cookie;
	ret = zcx_ioctl_pinning(zcx, ZCX_IOC_MON_ADD, &add);
	if (ret) {
		free(mon);
		return ret;
	}
	mon->slot = add.slot;
	mon->gen = add.gen;
	mon->handle = add.handle;
	*out = mon;
	return 0;
}

ZCX_EXPORT bool zcx_monitor_valid(const struct zcx *zcx, const struct zcx_monitor *mon)
{
	/* A forked child has no status area: nothing is valid there. */
	return !zcx_check_owner(zcx) &&
	       __atomic_load_n(&zcx->gens[mon->slot], __ATOMIC_ACQUIRE) == mon->gen;
}

ZCX_EXPORT int zcx_monitor_del(struct zcx *zcx, struct zcx_monitor *mon)
{
	struct zcx_mr_dereg dereg = { .handle = mon->handle };
	int ret = zcx_check_owner(zcx);

	/* In a forked child the monitor is the parent's: free our copy only. */
	if (!ret)
		ret = zcx_ioctl(zcx, ZCX_IOC_MR_DEREG, &dereg);
	free(mon);
	return ret;
}
