/* SPDX-License-Identifier: MIT
 * Shared receive queues (IBA 10.2.9.1, 11.2.3): one pool of receive WQEs for several RC QPs
 * (plain RC and MetaRoCE). A QP attached to an SRQ keeps its own receive ring, but as a window
 * onto the pool: a WQE is taken from the SRQ, in posting order, only when a message needs
 * the QP's next receive index (rc_rq_ready), so each message consumes exactly one WQE from the
 * pool and the responders need no other change. RC takes one WQE at a message's first packet;
 * MetaRoCE may take a few ahead when messages arrive out of order (MRETH.msg_seq names a
 * later receive), at most the QP's ring. WQEs a QP took and had not used when it enters ERR
 * are flushed on its receive CQ with that QP's number (IBA 10.3.1: WQEs of an SRQ are not
 * flushed, only those already dequeued by the QP, which here includes taken-ahead ones).
 * SRQ limit events are not generated.
 */
#include <errno.h>
#include <stdlib.h>

#include "rc_internal.h"

/* Ring of a QP on an SRQ: enough for MetaRoCE's out-of-order arrivals over a few messages. */
#define RC_SRQ_QP_RING 256u

struct mr_srq *mr_srq_create(struct mr_pd *pd, uint32_t max_wr)
{
	struct mr_srq *s;

	if (pd == NULL || max_wr == 0 || max_wr > RC_MAX_WR) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (s != NULL)
		s->wr = calloc(max_wr, sizeof(*s->wr));
	if (s == NULL || s->wr == NULL) {
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	s->pd = pd;
	s->max_wr = max_wr;
	pd->refs++;
	rc_list_add_tail(&pd->ctx->srqs, &s->link);
	return s;
}

int mr_srq_destroy(struct mr_srq *s)
{
	if (s == NULL)
		return -EINVAL;
	if (s->refs > 0)
		return -EBUSY; /* IBA 11.2.3.4: not while QPs are associated with it */
	s->pd->refs--;
	rc_list_del(&s->link);
	free(s->wr);
	free(s);
	return 0;
}

void rc_srq_destroy_all(struct mr_ctx *ctx) /* mr_ctx_destroy, after every QP */
{
	while (!rc_list_empty(&ctx->srqs)) {
		struct mr_srq *s = rc_container_of(ctx->srqs.next, struct mr_srq, link);

		s->refs = 0;
		mr_srq_destroy(s);
	}
}

int mr_post_srq_recv(struct mr_srq *s, const struct mr_recv_wr *wr)
{
	uint64_t sum = 0;

	if (s == NULL || wr == NULL || wr->num_sge > MR_MAX_SGE)
		return -EINVAL;
	for (uint32_t i = 0; i < wr->num_sge; i++)
		sum += wr->sg_list[i].length;
	if (sum > RC_MAX_MSG)
		return -EINVAL;
	if (s->tail - s->head >= s->max_wr)
		return -ENOMEM;
	s->wr[s->tail % s->max_wr] = *wr;
	s->tail++;
	return 0;
}

uint32_t mr_srq_count(const struct mr_srq *s)
{
	return s ? s->tail - s->head : 0;
}

uint32_t rc_srq_qp_ring(const struct mr_srq *s)
{
	return s->max_wr < RC_SRQ_QP_RING ? s->max_wr : RC_SRQ_QP_RING;
}

bool rc_rq_ready(struct mr_qp *qp, uint32_t idx)
{
	struct mr_srq *s = qp->init.srq;

	while (idx - qp->rq_head >= qp->rq_tail - qp->rq_head) {
		struct rc_rwqe *r;
		uint64_t len = 0;

		if (s == NULL || s->head == s->tail ||
		    qp->rq_tail - qp->rq_head >= qp->init.max_recv_wr)
			return false;
		r = rc_rq_at(qp, qp->rq_tail);
		r->wr = s->wr[s->head % s->max_wr];
		for (uint32_t i = 0; i < r->wr.num_sge; i++)
			len += r->wr.sg_list[i].length;
		r->len = (uint32_t)len; /* checked at post */
		r->m_bound = false;
		r->m_claimed = false;
		s->head++;
		qp->rq_tail++;
	}
	return true;
}
