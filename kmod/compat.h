/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * compat.h - differences between the kernels zcx builds against.
 *
 * Decided by feature probes, never by version numbers: the build compiles
 * each kmod/probes/<name>.c against the target kernel's headers and writes
 * "#define ZCX_HAVE_<NAME> 1" into probed.h for each one that compiles
 * (scripts/kmod-probes.sh).  Fallbacks for missing features live here.
 */
#ifndef ZCX_COMPAT_H
#define ZCX_COMPAT_H

#include <linux/mm.h>

#include "probed.h"

/*
 * vm_flags became read-only behind vm_flags_set()/vm_flags_clear() (with
 * the VMA write lock asserted) in 6.3; older kernels write the field.
 */
#ifndef ZCX_HAVE_VM_FLAGS_SET
static inline void vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags |= flags;
}

static inline void vm_flags_clear(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags &= ~flags;
}
#endif

/* pin_user_pages_remote() lost its vmas argument in 6.5. */
static inline long zcx_pin_user_pages_remote(struct mm_struct *mm, unsigned long start,
					     unsigned long nr_pages, unsigned int gup_flags,
					     struct page **pages, int *locked)
{
#ifdef ZCX_HAVE_PIN_REMOTE_VMAS
	return pin_user_pages_remote(mm, start, nr_pages, gup_flags, pages, NULL, locked);
#else
	return pin_user_pages_remote(mm, start, nr_pages, gup_flags, pages, locked);
#endif
}

#endif /* ZCX_COMPAT_H */
