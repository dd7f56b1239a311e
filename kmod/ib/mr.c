// SPDX-License-Identifier: GPL-2.0-only
/*
 * mr.c - fast registration (FRWR) of pinned pages on a connection.
 *
 * A rendezvous message's pages (the sender's, for the peer to read, or
 * the receiver's, to read into) are mapped for the device and registered
 * in as many MRs as it takes, each mapping up to conn->mr_pages pages (on
 * siw, runs of contiguous pages);
 * the receiver's only if they map to more entries than one READ takes.
 * The MRs are the connection's: on its own protection domain, so that
 * only its queue pair can use them, and kept idle between messages (up
 * to ZCX_IB_MR_CACHE of them) so that a message costs work requests, not
 * allocations.  The jobs of xfer.c post the registration and its
 * invalidation (LOCAL_INV): a registration for one message before its
 * operation completes, a kept one (kept.c) once its region goes.  The
 * pages stay pinned until then, so the device never touches a page after
 * zcx.ko let go of it.
 */
#include <linux/scatterlist.h>
#include <linux/slab.h>

#include "zcx_ib.h"

/* An idle MR of @conn, or a new one; NULL if none can be had. */
static struct ib_mr *zcx_ib_mr_get(struct zcx_ib_conn *conn)
{
	struct ib_mr *mr;

	spin_lock(&conn->lock);
	mr = list_first_entry_or_null(&conn->mrs, struct ib_mr, qp_entry);
	if (mr) {
		list_del(&mr->qp_entry);
		conn->nmrs--;
	}
	spin_unlock(&conn->lock);
	if (mr)
		return mr;
	mr = ib_alloc_mr(conn->pd, IB_MR_TYPE_MEM_REG, conn->mr_pages);
	return IS_ERR(mr) ? NULL : mr;
}

/* @mr is invalid (never registered, or invalidated): idle it, or free it. */
static void zcx_ib_mr_put(struct zcx_ib_conn *conn, struct ib_mr *mr)
{
	spin_lock(&conn->lock);
	if (conn->nmrs < ZCX_IB_MR_CACHE) {
		list_add(&mr->qp_entry, &conn->mrs);
		conn->nmrs++;
		mr = NULL;
	}
	spin_unlock(&conn->lock);
	if (mr)
		ib_dereg_mr(mr);
}

/*
 * Map @len bytes of @pages, from @offset in the first, for the device and
 * register them in @reg's MRs with @access, ready for the registration
 * work requests (their keys renewed, so that no key of an earlier use
 * reaches these pages); or, if they map to at most @direct entries,
 * register nothing: our own READs and WRITEs reach them with the local
 * DMA key, which saves registering and invalidating (never for pages the
 * peer is to reach, which need a key of their own).  0, or -ENOMEM, or
 * -EMSGSIZE if it takes more MRs than a message may have; @reg is left
 * for zcx_ib_reg_unmap() either way.
 */
int zcx_ib_reg_map(struct zcx_ib_conn *conn, struct zcx_ib_reg *reg, struct page **pages,
		   u32 offset, u64 len, int access, u32 direct)
{
	unsigned int npages = DIV_ROUND_UP(offset + len, PAGE_SIZE), sg_offset = 0;
	struct scatterlist *sg;
	struct ib_mr *mr;
	u64 done = 0;
	int nents, n, ret;

	reg->dir = access & IB_ACCESS_LOCAL_WRITE ? DMA_FROM_DEVICE : DMA_TO_DEVICE;
	ret = sg_alloc_table_from_pages_segment(&reg->sgt, pages, npages, offset, len,
						ZCX_IB_SG_MAX, GFP_KERNEL_ACCOUNT);
	if (ret)
		return ret;
	ret = ib_dma_map_sgtable_attrs(conn->ibdev, &reg->sgt, reg->dir, 0);
	if (ret) {
		sg_free_table(&reg->sgt);
		return ret;
	}
	reg->mapped = true;
	sg = reg->sgt.sgl;
	nents = reg->sgt.nents;
	if (nents <= direct)
		return 0;
	while (done < len) {
		if (reg->nmr == ARRAY_SIZE(reg->mr))
			return -EMSGSIZE;
		mr = zcx_ib_mr_get(conn);
		if (!mr)
			return -ENOMEM;
		reg->mr[reg->nmr++] = mr;
		ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
		/*
		 * As much as fits, the rest of a partly mapped entry next.
		 * No more entries than the MR has pages: some devices (siw)
		 * refuse a list longer than that instead of mapping part.
		 */
		n = ib_map_mr_sg(mr, sg, min_t(int, nents, conn->mr_pages), &sg_offset, PAGE_SIZE);
		if (n < 0 || !mr->length)
			return n < 0 ? n : -EINVAL;
		/*
		 * The address the peer is told: not the DMA address (a kernel
		 * or bus address), only its offset in the page, which the
		 * registration needs.
		 */
		mr->iova = ((u64)reg->nmr << 32) | offset_in_page(mr->iova);
		done += mr->length;
		nents -= n;
		while (n--)
			sg = sg_next(sg);
	}
	return 0;
}

/* Undo zcx_ib_reg_map(); the MRs are invalid (or the queue pair dead). */
void zcx_ib_reg_unmap(struct zcx_ib_conn *conn, struct zcx_ib_reg *reg)
{
	while (reg->nmr)
		zcx_ib_mr_put(conn, reg->mr[--reg->nmr]);
	if (reg->mapped) {
		ib_dma_unmap_sgtable_attrs(conn->ibdev, &reg->sgt, reg->dir, 0);
		sg_free_table(&reg->sgt);
		reg->mapped = false;
	}
}

/* The queue pair is gone: free the idle MRs. */
void zcx_ib_mrs_free(struct zcx_ib_conn *conn)
{
	struct ib_mr *mr, *tmp;

	list_for_each_entry_safe(mr, tmp, &conn->mrs, qp_entry) {
		list_del(&mr->qp_entry);
		ib_dereg_mr(mr);
	}
	conn->nmrs = 0;
}
