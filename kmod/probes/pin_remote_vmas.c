// SPDX-License-Identifier: GPL-2.0-only
/* Probe: pin_user_pages_remote() still takes a vmas array (before 6.5). */
#include <linux/mm.h>

long zcx_probe(struct mm_struct *mm, struct page **pages, int *locked);
long zcx_probe(struct mm_struct *mm, struct page **pages, int *locked)
{
	return pin_user_pages_remote(mm, 0, 1, 0, pages, NULL, locked);
}
