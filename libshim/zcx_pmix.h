/* SPDX-License-Identifier: MIT */
/*
 * zcx_pmix.h - libzcx-pmix: find the other processes of a job through PMIx.
 *
 * A program started by a PMIx launcher (Open MPI's mpirun, PRRTE's
 * prterun, Slurm's "srun --mpi=pmix") trades zcx addresses with the rest
 * of its job in one call each, with no sockets or files of its own:
 *
 *	struct zcx_pmix *job;
 *	struct zcx_addr mine, *all;
 *
 *	zcx_pmix_init(&job);			// rank, size from the launcher
 *	zcx_ep_addr(ep, &mine);
 *	all = calloc(zcx_pmix_size(job), sizeof(*all));
 *	zcx_pmix_allgather(job, &mine, all);	// all[r]: rank r's endpoint
 *	...
 *	zcx_pmix_fini(job);
 *
 * Started without a launcher, the program is a job of one: rank 0 of 1.
 * Started by one that cannot be reached, zcx_pmix_init() fails (-EIO)
 * rather than leave every process believing it is alone.
 *
 * zcx_pmix_allgather() and zcx_pmix_bcast() are collective: every process
 * of the job makes the same calls in the same order (as with MPI
 * collectives); they block until all have.  A job handle is for one
 * thread at a time.  A process may have several (two libraries each with
 * its own, say) if every rank makes them one after the other in the same
 * order: each handle's collectives then trade under keys of their own.
 * PMIx may be in use beside it (by MPI, say): PMIx counts
 * initialisations.
 *
 * Functions return 0 or a negative errno: -ENOMEM; -EIO when PMIx fails
 * (its message on stderr, a missing key included); -ETIMEDOUT when a
 * step took longer than zcx_pmix_set_timeout() allows (without one, a
 * rank that never takes part leaves the others waiting, as in any PMIx
 * fence); -EPROTO when a peer's data is not an address, or the job size
 * not a number.
 *
 * Link with -lzcx-pmix -lzcx (it brings libpmix in; this header needs no
 * PMIx header).
 */
#ifndef ZCX_PMIX_H
#define ZCX_PMIX_H

#include <stdint.h>

#include "zcx_uapi.h"

#ifdef __cplusplus
extern "C" {
#endif

struct zcx_pmix;

/* Join the job (PMIx_Init): *job on success. */
int zcx_pmix_init(struct zcx_pmix **job);

/* This process's rank, and the number of processes in the job. */
uint32_t zcx_pmix_rank(const struct zcx_pmix *job);
uint32_t zcx_pmix_size(const struct zcx_pmix *job);
/*
 * Let each PMIx step of the collectives that follow (a fence, a read of a
 * peer's data) take at most @seconds (0, the default: no limit), then
 * fail with -ETIMEDOUT: a job then gives up on a rank that does not take
 * part.  A collective that timed out leaves the job's collectives out of
 * step: leave the job.  -EINVAL if @seconds is more than PMIx takes.
 */
int zcx_pmix_set_timeout(struct zcx_pmix *job, unsigned int seconds);

/* Collective: every rank's @mine, into all[0 .. size - 1]. */
int zcx_pmix_allgather(struct zcx_pmix *job, const struct zcx_addr *mine,
		       struct zcx_addr *all);

/* Collective: @root's *addr into every rank's *addr (a barrier's, say). */
int zcx_pmix_bcast(struct zcx_pmix *job, uint32_t root, struct zcx_addr *addr);

/*
 * Collective: a group of every rank of the job (zcx.h), its endpoints
 * created with @ep_flags (ZCX_EP_NET if the job spans nodes) in @zcx,
 * their addresses traded and the group connected with @connect_flags:
 * *g is ready for zcx_group_barrier().  Two PMIx fences, two PMIx_Get
 * per round (log2 of the job size) for the partners of that round, and
 * one barrier of the group.  Every rank gets a group, or every rank an
 * error: a rank whose part fails (its own errno) still takes part in
 * every step, so none waits for it, and the others fail too (-ECONNRESET,
 * or the errno of a step of theirs: a connect to a rank that had no
 * addresses, -EINVAL).  A runtime can fall back to another transport
 * everywhere alike.  Not so for a rank that fails or dies within that
 * first barrier: as in any barrier of the group, members that heard
 * from it already may pass.
 */
struct zcx;
struct zcx_group;
int zcx_pmix_group(struct zcx_pmix *job, struct zcx *zcx, unsigned int ep_flags,
		   unsigned int connect_flags, struct zcx_group **g);

/* Leave the job (PMIx_Finalize) and free @job; NULL is ignored. */
void zcx_pmix_fini(struct zcx_pmix *job);

#ifdef __cplusplus
}
#endif

#endif /* ZCX_PMIX_H */
