/* SPDX-License-Identifier: MIT
 * Protection domains and memory regions (IBA 10.6): keys, access flags and bounds checks.
 *
 * A key is (slot << 8) | tag: the slot indexes ctx->mr_tab in O(1), and the 8-bit tag changes
 * every time a slot is reused, so a key kept after mr_dereg() does not match a newer MR
 * (IBA 10.6.3.2: the consumer-owned "key" part of an L_Key/R_Key).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

static bool rc_sges_use(const struct mr_sge *sg, uint32_t n, uint32_t key)
{
	for (uint32_t i = 0; i < n; i++)
		if (sg[i].length > 0 && sg[i].lkey == key)
			return true;
	return false;
}

/* IBA 10.6.7 (deregistration with operations outstanding; the keys are invalid afterwards):
 * the memory behind mr may be unmapped as soon as mr_dereg() returns (the shm server munmaps
 * the app's buffer), so nothing in the transport may keep a pointer into it. References are
 * found by key, so an overlapping registration of the same memory is not disturbed:
 *  - send WQEs not completed whose SGEs were resolved through mr (retransmissions gather from
 *    them, READ/atomic responses land in them): the QP fails to ERR and those WQEs complete
 *    with LOC_PROT_ERR, the others flushed (IBA 10.3.1). Unresolved WQEs need nothing: their
 *    stale lkey fails at resolution (rc_req_resolve).
 *  - receive WQEs bound to host pointers (the RC SEND in progress, MetaRoCE per-packet
 *    placement): unbound, back to their lkeys; the next packet re-binds, the stale lkey fails
 *    and the responder reports it as for any bad receive buffer (LOC_PROT_ERR receive
 *    completion, REM_OP_ERR NAK, IBA 9.7.5.2.4).
 *  - the RC WRITE in progress (resp.wptr): revoked, its next MIDDLE/LAST gets the class C
 *    REM_ACCESS_ERR NAK (IBA 9.7.5.2.3) as a WRITE naming a gone R_Key would.
 *  - queued READ responses (RC and MetaRoCE) not fully sent: replaced by a REM_ACCESS_ERR NAK
 *    at the next response PSN and the QP enters ERR, as rc_resp_fatal() does for a READ that
 *    names a bad R_Key (IBA 9.7.5.2.3).
 * rxe keeps the MR alive by reference count instead; here the memory belongs to the caller,
 * so the transport lets go of it instead of delaying the caller's unmap. */
static void rc_mr_revoke(struct mr_qp *qp, uint32_t key)
{
	bool fail = false, nak = false;

	for (uint32_t i = qp->sq_head; i != qp->sq_tail; i++) {
		struct rc_swqe *w = rc_sq_at(qp, i);

		if (!w->resolved || (w->wr.send_flags & MR_SEND_INLINE) ||
		    !rc_sges_use(w->wr.sg_list, w->wr.num_sge, key))
			continue;
		w->status = MR_WC_LOC_PROT_ERR;
		fail = true;
	}
	for (uint32_t i = qp->rq_head; i != qp->rq_tail; i++) {
		struct rc_rwqe *r = rc_rq_at(qp, i);

		if (!rc_sges_use(r->wr.sg_list, r->wr.num_sge, key))
			continue;
		r->m_bound = false;
		if (i == qp->rq_head)
			qp->resp.rwqe_bound = false;
		memset(r->host, 0, sizeof(r->host));
	}
	if (qp->resp.in_msg == RC_MSG_WRITE && qp->resp.wleft > 0 && qp->resp.wkey == key)
		qp->resp.wptr = NULL;
	for (uint32_t i = 0; i < qp->resp.ring_count; i++) {
		struct rc_resp *e = &qp->resp.ring[(qp->resp.ring_head + i) % RC_RESP_RING];

		if (e->kind != RC_RESP_READ || e->left == 0 || e->rkey != key)
			continue;
		e->kind = RC_RESP_ACK;
		e->syndrome = MR_AETH_NAK | MR_NAK_REM_ACCESS_ERR;
		e->host = NULL;
		e->left = 0;
		if (qp->resp.rd_pending > 0)
			qp->resp.rd_pending--;
		qp->resp.rd_dups -= e->dup;
		e->dup = false;
		nak = true;
	}
	if ((fail || nak) && qp->state != MR_QPS_ERR)
		rc_qp_to_err(qp);
}

int mr_dereg(struct mr_memreg *mr)
{
	struct mr_ctx *ctx;
	uint32_t slot;

	if (mr == NULL)
		return -EINVAL;
	ctx = mr->ctx;
	for (uint32_t i = 0; i < ctx->p.max_qp; i++)
		if (ctx->qp_tab[i] != NULL && ctx->qp_tab[i]->init.pd == mr->pd)
			rc_mr_revoke(ctx->qp_tab[i], mr->key);
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
