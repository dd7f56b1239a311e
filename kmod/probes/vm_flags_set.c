// SPDX-License-Identifier: GPL-2.0-only
/* Probe: vm_flags_set()/vm_flags_clear() exist (vm_flags is read-only). */
#include <linux/mm.h>

void zcx_probe(struct vm_area_struct *vma);
void zcx_probe(struct vm_area_struct *vma)
{
	vm_flags_set(vma, VM_DONTCOPY);
	vm_flags_clear(vma, VM_MAYWRITE);
}
