// SPDX-License-Identifier: MIT
/*
 * pmix.c - libzcx-pmix: zcx addresses traded through PMIx's key-value
 * store.  Each collective puts this process's blob under a key of its
 * own ("zcx.<h>.<n>": h counting the process's job handles, n the
 * handle's collectives, which every rank makes in the same order), fences
 * once, and reads the blobs it needs.  A key is never put twice: a rank
 * that is one collective ahead would otherwise replace a blob that a
 * slower one has yet to read.
 */
/* PMIx's header uses POSIX and BSD string functions. */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pmix.h>

#include "zcx_internal.h"
#include "zcx_pmix.h"

/* zcx_group_addr_count(ZCX_GROUP_MAX_PROCS) */
#define ZCX_PMIX_MAX_ROUNDS	16
_Static_assert(ZCX_GROUP_MAX_PROCS <= 1U << ZCX_PMIX_MAX_ROUNDS, "rounds of a group");

struct zcx_pmix {
	pmix_proc_t self;
	uint32_t size;
	bool single;		/* no launcher: a job of one, PMIx unused */
	unsigned int handle;	/* job handles made before this one, for its keys ... */
	unsigned int seq;	/* ... and its collectives made */
	int timeout;		/* seconds PMIx may take for each step; 0: no limit */
};

/* Job handles this process made, in the order every rank makes them. */
static unsigned int zcx_pmix_handles;

static int zcx_pmix_error(const char *what, pmix_status_t rc)
{
	fprintf(stderr, "libzcx-pmix: %s: %s\n", what, PMIx_Error_string(rc));
	return rc == PMIX_ERR_TIMEOUT ? -ETIMEDOUT : -EIO;
}

ZCX_EXPORT int zcx_pmix_init(struct zcx_pmix **out)
{
	struct zcx_pmix *job = calloc(1, sizeof(*job));
	pmix_value_t *val = NULL;
	pmix_proc_t wildcard;
	pmix_status_t rc;

	if (!job)
		return -ENOMEM;
	/* A launcher always names the job; without one there is no server. */
	if (!getenv("PMIX_NAMESPACE")) {
		job->single = true;
		job->size = 1;
		*out = job;
		return 0;
	}
	rc = PMIx_Init(&job->self, NULL, 0);
	if (rc != PMIX_SUCCESS) {
		free(job);
		return zcx_pmix_error("PMIx_Init", rc);
	}
	PMIX_LOAD_PROCID(&wildcard, job->self.nspace, PMIX_RANK_WILDCARD);
	rc = PMIx_Get(&wildcard, PMIX_JOB_SIZE, NULL, 0, &val);
	if (rc != PMIX_SUCCESS || val->type != PMIX_UINT32 || !val->data.uint32) {
		int ret = rc != PMIX_SUCCESS ? zcx_pmix_error("job size", rc) : -EPROTO;

		if (val)
			PMIX_VALUE_RELEASE(val);
		PMIx_Finalize(NULL, 0);
		free(job);
		return ret;
	}
	job->size = val->data.uint32;
	PMIX_VALUE_RELEASE(val);
	/* Only a handle made counts: a rank that retries keeps in step. */
	job->handle = __atomic_fetch_add(&zcx_pmix_handles, 1, __ATOMIC_RELAXED);
	*out = job;
	return 0;
}

ZCX_EXPORT uint32_t zcx_pmix_rank(const struct zcx_pmix *job)
{
	return job->single ? 0 : job->self.rank;
}

ZCX_EXPORT uint32_t zcx_pmix_size(const struct zcx_pmix *job)
{
	return job->size;
}

ZCX_EXPORT int zcx_pmix_set_timeout(struct zcx_pmix *job, unsigned int seconds)
{
	if (seconds > INT_MAX)
		return -EINVAL;
	job->timeout = (int)seconds;
	return 0;
}

/* The job's timeout, if it has one, into @info: how many entries (0 or 1). */
static size_t zcx_pmix_timeout_info(const struct zcx_pmix *job, pmix_info_t *info)
{
	if (!job->timeout)
		return 0;
	PMIX_INFO_LOAD(info, PMIX_TIMEOUT, &job->timeout, PMIX_INT);
	return 1;
}

/*
 * Publish @len bytes at @blob (if non-NULL) under the next key and wait
 * for every rank.  The fence is always made, whatever failed before it,
 * so that no other rank waits in it for ever (our blob then missing,
 * those who read it fail).
 */
static int zcx_pmix_exchange(struct zcx_pmix *job, const void *blob, size_t len, char *key,
			     size_t key_size)
{
	pmix_status_t rc = PMIX_SUCCESS, fenced;
	const char *what = "PMIx_Put";
	pmix_info_t info[2];
	pmix_value_t val;
	bool yes = true;
	size_t n, i;

	snprintf(key, key_size, "zcx.%u.%u", job->handle, job->seq++);
	if (blob) {
		val.type = PMIX_BYTE_OBJECT;
		val.data.bo.bytes = (char *)blob;
		val.data.bo.size = len;
		rc = PMIx_Put(PMIX_GLOBAL, key, &val);
	}
	if (rc == PMIX_SUCCESS) {
		rc = PMIx_Commit();
		what = "PMIx_Commit";
	}
	PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
	n = 1 + zcx_pmix_timeout_info(job, &info[1]);
	fenced = PMIx_Fence(NULL, 0, info, n);
	/* PMIX_INFO_DESTRUCT() takes its argument more than once. */
	for (i = 0; i < n; i++)
		PMIX_INFO_DESTRUCT(&info[i]);
	if (rc == PMIX_SUCCESS) {
		rc = fenced;
		what = "PMIx_Fence";
	}
	return rc == PMIX_SUCCESS ? 0 : zcx_pmix_error(what, rc);
}

/* Rank @rank's blob of @len bytes under @key into @blob. */
static int zcx_pmix_fetch(struct zcx_pmix *job, uint32_t rank, const char *key, void *blob,
			  size_t len)
{
	pmix_value_t *val = NULL;
	pmix_info_t timeout;
	size_t n = zcx_pmix_timeout_info(job, &timeout);
	pmix_proc_t peer;
	pmix_status_t rc;
	int ret = 0;

	PMIX_LOAD_PROCID(&peer, job->self.nspace, rank);
	rc = PMIx_Get(&peer, key, n ? &timeout : NULL, n, &val);
	if (n)
		PMIX_INFO_DESTRUCT(&timeout);
	if (rc != PMIX_SUCCESS)
		return zcx_pmix_error("PMIx_Get", rc);
	if (val->type != PMIX_BYTE_OBJECT || val->data.bo.size != len)
		ret = -EPROTO;
	else
		memcpy(blob, val->data.bo.bytes, len);
	PMIX_VALUE_RELEASE(val);
	return ret;
}

ZCX_EXPORT int zcx_pmix_allgather(struct zcx_pmix *job, const struct zcx_addr *mine, struct zcx_addr *all)
{
	char key[32];
	uint32_t r;
	int ret;

	if (job->single) {
		all[0] = *mine;
		return 0;
	}
	ret = zcx_pmix_exchange(job, mine, sizeof(*mine), key, sizeof(key));
	for (r = 0; !ret && r < job->size; r++)
		ret = r == job->self.rank ? (all[r] = *mine, 0) :
		      zcx_pmix_fetch(job, r, key, &all[r], sizeof(all[r]));
	return ret;
}

ZCX_EXPORT int zcx_pmix_bcast(struct zcx_pmix *job, uint32_t root, struct zcx_addr *addr)
{
	bool am_root = root == zcx_pmix_rank(job);
	char key[32];
	int ret;

	if (root >= job->size)
		return -EINVAL;
	if (job->single)
		return 0;
	ret = zcx_pmix_exchange(job, am_root ? addr : NULL, sizeof(*addr), key, sizeof(key));
	if (!ret && !am_root)
		ret = zcx_pmix_fetch(job, root, key, addr, sizeof(*addr));
	return ret;
}

/*
 * Whether the ranks that connect to us (rank - 2^k, in each round k) did:
 * 0, or -ECONNRESET if one could not.  Each rank publishes how its own
 * part went (@mine: 0 or its error) and reads its senders'.  A receive
 * waiting for a sender that never connected would wait for ever: nothing
 * fails it, as a sender's leaving fails a connected one.
 */
static int zcx_pmix_senders_ok(struct zcx_pmix *job, unsigned int rounds, int mine)
{
	uint32_t rank = zcx_pmix_rank(job), from;
	int32_t status = mine, theirs;
	unsigned int k;
	char key[32];
	int ret;

	ret = zcx_pmix_exchange(job, &status, sizeof(status), key, sizeof(key));
	for (k = 0; k < rounds && !ret && !mine; k++) {
		from = (uint32_t)((rank + job->size - (1ULL << k)) % job->size);	/* 2^k < size */
		ret = zcx_pmix_fetch(job, from, key, &theirs, sizeof(theirs));
		if (!ret && theirs)
			ret = -ECONNRESET;
	}
	return ret;
}

/*
 * Three steps, each rank taking part in every one whatever became of the
 * ones before, so that no rank waits for ever for another:
 *  - one exchange: each rank publishes its addresses of every round as
 *    one blob and reads only its partners', the one it connects to in
 *    each round (zcx_group_connect() reads no other); a rank that failed
 *    already publishes zeros, which its partners fail to connect to;
 *  - a second: each rank learns whether its senders connected;
 *  - a first barrier, which fails everywhere if one rank failed (a failed
 *    rank's group is gone, which breaks its partners' barriers, and
 *    theirs their partners': group.c): every rank gets the group, or an
 *    error.
 */
ZCX_EXPORT int zcx_pmix_group(struct zcx_pmix *job, struct zcx *zcx, unsigned int ep_flags,
			      unsigned int connect_flags, struct zcx_group **out)
{
	unsigned int rounds = zcx_group_addr_count(job->size), k;
	struct zcx_addr mine[ZCX_PMIX_MAX_ROUNDS] = { 0 }, theirs[ZCX_PMIX_MAX_ROUNDS];
	bool collective = rounds && job->size <= ZCX_GROUP_MAX_PROCS;
	uint32_t rank = zcx_pmix_rank(job), to;
	struct zcx_group *g = NULL;
	struct zcx_addr *all;
	char key[32];
	int ret, err;

	all = calloc((size_t)job->size * rounds + 1, sizeof(*all));
	ret = all ? zcx_group_create(zcx, job->size, rank, ep_flags, &g) : -ENOMEM;
	if (!ret)
		zcx_group_addrs(g, mine);
	if (collective) {
		err = zcx_pmix_exchange(job, mine, rounds * sizeof(*mine), key, sizeof(key));
		ret = ret ? ret : err;
	}
	for (k = 0; k < rounds && !ret; k++) {
		to = (uint32_t)((rank + (1ULL << k)) % job->size);
		ret = zcx_pmix_fetch(job, to, key, theirs, rounds * sizeof(*theirs));
		if (!ret)
			all[(size_t)to * rounds + k] = theirs[k];
	}
	if (!ret)
		ret = zcx_group_connect(g, all, connect_flags);
	free(all);
	if (collective) {
		err = zcx_pmix_senders_ok(job, rounds, ret);
		ret = ret ? ret : err;
	}
	/* Ours gone, our partners' first barrier fails: see above. */
	if (ret) {
		zcx_group_destroy(g);
		return ret;
	}
	ret = zcx_group_barrier(g);
	if (ret) {
		zcx_group_destroy(g);
		return ret;
	}
	*out = g;
	return 0;
}

ZCX_EXPORT void zcx_pmix_fini(struct zcx_pmix *job)
{
	if (!job)
		return;
	if (!job->single)
		PMIx_Finalize(NULL, 0);
	free(job);
}
