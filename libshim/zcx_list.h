/* SPDX-License-Identifier: MIT */
/*
 * zcx_list.h - the intrusive list and hash mixing that libzcx's front
 * cache and libzcx-verbs' MR cache share; not installed.
 */
#ifndef ZCX_LIST_H
#define ZCX_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Circular, with the head a node of its own; an unlinked node is NULLs. */
struct zcx_list {
	struct zcx_list *prev, *next;
};

#define zcx_list_entry(node, type, member) \
	((type *)((char *)(node) - offsetof(type, member)))

static inline void zcx_list_init(struct zcx_list *head)
{
	head->prev = head->next = head;
}

static inline bool zcx_list_empty(const struct zcx_list *head)
{
	return head->next == head;
}

static inline bool zcx_list_linked(const struct zcx_list *node)
{
	return node->next != NULL;
}

static inline void zcx_list_del(struct zcx_list *node)
{
	node->prev->next = node->next;
	node->next->prev = node->prev;
	node->prev = node->next = NULL;
}

static inline void zcx_list_append(struct zcx_list *head, struct zcx_list *node)
{
	node->prev = head->prev;
	node->next = head;
	head->prev->next = node;
	head->prev = node;
}

/* Bucket of a registration key in a table of @nbuckets (a power of two). */
static inline size_t zcx_hash_range(uintptr_t addr, size_t len, unsigned int access,
				    size_t nbuckets)
{
	uint64_t h = (uint64_t)addr * 0x9e3779b97f4a7c15ULL;

	h ^= ((uint64_t)len + access) * 0xc2b2ae3d27d4eb4fULL;
	h ^= h >> 29;
	return h & (nbuckets - 1);
}

#endif /* ZCX_LIST_H */
