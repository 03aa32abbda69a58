/* SPDX-License-Identifier: MIT
 * Protection domains and memory regions (IBA 10.6): keys, access flags and bounds checks.
 *
 * A key is (slot << 8) | tag: the slot indexes ctx->mr_tab in O(1), and the 8-bit tag changes
 * every time a slot is reused, so a key kept after mr_dereg() does not match a newer MR
 * (IBA 10.6.3.2: the consumer-owned "key" part of an L_Key/R_Key).
 */
#include <errno.h>
#include <stdlib.h>

#include "rc_internal.h"

struct mr_pd *mr_pd_alloc(struct mr_ctx *ctx)
{
	struct mr_pd *pd;

	if (ctx == NULL) {
		errno = EINVAL;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (pd == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	pd->ctx = ctx;
	rc_list_add_tail(&ctx->pds, &pd->link);
	return pd;
}

int mr_pd_free(struct mr_pd *pd)
{
	if (pd == NULL)
		return -EINVAL;
	if (pd->refs)
		return -EBUSY;
	rc_list_del(&pd->link);
	free(pd);
	return 0;
}

struct mr_memreg *mr_reg(struct mr_pd *pd, void *host, uint64_t iova, uint64_t len,
			 uint32_t access)
{
	const uint32_t all = MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE |
			     MR_ACCESS_REMOTE_READ | MR_ACCESS_REMOTE_ATOMIC;
	struct mr_ctx *ctx;
	struct mr_memreg *mr;
	uint32_t slot;

	/* IBA 10.6.3.1: remote write/atomic access requires local write. The iova range must not
	 * wrap the 64-bit space, so that va + len never overflows in later checks. */
	if (pd == NULL || (host == NULL && len > 0) || (access & ~all) ||
	    ((access & (MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_ATOMIC)) &&
	     !(access & MR_ACCESS_LOCAL_WRITE)) ||
	    iova > UINT64_MAX - len || (uintptr_t)host > UINTPTR_MAX - len) {
		errno = EINVAL;
		return NULL;
	}
	ctx = pd->ctx;
	for (slot = 0; slot < ctx->p.max_mr; slot++)
		if (ctx->mr_tab[slot] == NULL)
			break;
	if (slot == ctx->p.max_mr) {
		errno = ENOSPC;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (mr == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	mr->ctx = ctx;
	mr->pd = pd;
	mr->host = host;
	mr->iova = iova;
	mr->len = len;
	mr->access = access;
	mr->key = slot << 8 | ctx->mr_tag[slot];
	ctx->mr_tab[slot] = mr;
	pd->refs++;
	return mr;
}

int mr_dereg(struct mr_memreg *mr)
{
	struct mr_ctx *ctx;
	uint32_t slot;

	if (mr == NULL)
		return -EINVAL;
	ctx = mr->ctx;
	slot = mr->key >> 8;
	ctx->mr_tab[slot] = NULL;
	ctx->mr_tag[slot]++; /* the old key is now stale */
	mr->pd->refs--;
	free(mr);
	return 0;
}

uint32_t mr_memreg_lkey(const struct mr_memreg *mr)
{
	return mr ? mr->key : 0;
}

uint32_t mr_memreg_rkey(const struct mr_memreg *mr)
{
	return mr ? mr->key : 0;
}

struct mr_memreg *rc_mr_lookup(struct mr_ctx *ctx, const struct mr_pd *pd, uint32_t key,
			       uint64_t va, uint64_t len, uint32_t access)
{
	uint32_t slot = key >> 8;
	struct mr_memreg *mr;

	if (slot >= ctx->p.max_mr)
		return NULL;
	mr = ctx->mr_tab[slot];
	/* IBA 10.6.3.2, 9.7.5.2.3: key, PD, access rights and the whole range must all match.
	 * The bounds test is written as subtractions so that no sum can overflow. */
	if (mr == NULL || mr->key != key || mr->pd != pd || (mr->access & access) != access)
		return NULL;
	if (va < mr->iova || len > mr->len || va - mr->iova > mr->len - len)
		return NULL;
	return mr;
}

void rc_mr_destroy_all(struct mr_ctx *ctx)
{
	for (uint32_t i = 0; i < ctx->p.max_mr; i++) {
		free(ctx->mr_tab[i]);
		ctx->mr_tab[i] = NULL;
	}
}
