// SPDX-License-Identifier: MIT
/*
 * pmix.c - libzcx-pmix: zcx addresses traded through PMIx's key-value
 * store.  Each collective puts this process's blob under a key of its
 * own ("zcx.<n>", n counting the job handle's collectives, which every
 * rank makes in the same order), fences, and reads the others' blobs.
 */
/* PMIx's header uses POSIX and BSD string functions. */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pmix.h>

#include "zcx_internal.h"
#include "zcx_pmix.h"

struct zcx_pmix {
	pmix_proc_t self;
	uint32_t size;
	bool single;		/* no launcher: a job of one, PMIx unused */
	unsigned int seq;	/* collectives made, for their keys */
};

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

/* Publish @addr (if non-NULL) under the next key and wait for every rank. */
static int zcx_pmix_exchange(struct zcx_pmix *job, const struct zcx_addr *addr, char *key,
			     size_t key_size)
{
	pmix_value_t val;
	pmix_info_t collect;
	bool yes = true;
	pmix_status_t rc;

	snprintf(key, key_size, "zcx.%u", job->seq++);
	if (addr) {
		val.type = PMIX_BYTE_OBJECT;
		val.data.bo.bytes = (char *)addr;
		val.data.bo.size = sizeof(*addr);
		rc = PMIx_Put(PMIX_GLOBAL, key, &val);
		if (rc != PMIX_SUCCESS)
			return zcx_pmix_error("PMIx_Put", rc);
	}
	rc = PMIx_Commit();
	if (rc != PMIX_SUCCESS)
		return zcx_pmix_error("PMIx_Commit", rc);
	PMIX_INFO_LOAD(&collect, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
	rc = PMIx_Fence(NULL, 0, &collect, 1);
	PMIX_INFO_DESTRUCT(&collect);
	if (rc != PMIX_SUCCESS)
		return zcx_pmix_error("PMIx_Fence", rc);
	return 0;
}

/* Rank @rank's blob under @key into *addr. */
static int zcx_pmix_fetch(struct zcx_pmix *job, uint32_t rank, const char *key,
			  struct zcx_addr *addr)
{
	pmix_value_t *val = NULL;
	pmix_proc_t peer;
	pmix_status_t rc;
	int ret = 0;

	PMIX_LOAD_PROCID(&peer, job->self.nspace, rank);
	rc = PMIx_Get(&peer, key, NULL, 0, &val);
	if (rc != PMIX_SUCCESS)
		return zcx_pmix_error("PMIx_Get", rc);
	if (val->type != PMIX_BYTE_OBJECT || val->data.bo.size != sizeof(*addr))
		ret = -EPROTO;
	else
		memcpy(addr, val->data.bo.bytes, sizeof(*addr));
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
	ret = zcx_pmix_exchange(job, mine, key, sizeof(key));
	for (r = 0; !ret && r < job->size; r++)
		ret = r == job->self.rank ? (all[r] = *mine, 0) : zcx_pmix_fetch(job, r, key, &all[r]);
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
	ret = zcx_pmix_exchange(job, am_root ? addr : NULL, key, sizeof(key));
	if (!ret && !am_root)
		ret = zcx_pmix_fetch(job, root, key, addr);
	return ret;
}

ZCX_EXPORT int zcx_pmix_group(struct zcx_pmix *job, struct zcx *zcx, unsigned int ep_flags,
			      unsigned int connect_flags, struct zcx_group **out)
{
	unsigned int rounds = zcx_group_addr_count(job->size), k;
	struct zcx_addr *mine, *one, *all;
	struct zcx_group *g;
	uint32_t r;
	int ret;

	ret = zcx_group_create(zcx, job->size, zcx_pmix_rank(job), ep_flags, &g);
	if (ret)
		return ret;
	mine = calloc(rounds + 1, sizeof(*mine));
	one = calloc(job->size, sizeof(*one));
	all = calloc((size_t)job->size * rounds + 1, sizeof(*all));
	ret = mine && one && all ? 0 : -ENOMEM;
	if (!ret)
		zcx_group_addrs(g, mine);
	for (k = 0; k < rounds && !ret; k++) {
		ret = zcx_pmix_allgather(job, &mine[k], one);
		for (r = 0; r < job->size && !ret; r++)
			all[(size_t)r * rounds + k] = one[r];
	}
	if (!ret)
		ret = zcx_group_connect(g, all, connect_flags);
	free(all);
	free(one);
	free(mine);
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
