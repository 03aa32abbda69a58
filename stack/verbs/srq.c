/* SPDX-License-Identifier: MIT
 * libibverbs over metaroce: shared receive queues (IBA 10.2.9.1, 11.2.3) over libmetaroce's
 * mrc_*_srq. What is not there yet: the SRQ limit event (IBA 11.6.3.1, "SRQ limit reached";
 * the limit is kept and reported by ibv_query_srq, never fires) and resizing (no
 * IBV_DEVICE_SRQ_RESIZE in the device capabilities, so IBV_SRQ_MAX_WR is refused).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_priv.h"

#undef ibv_create_srq
MV_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct mv_context *c;
	struct mv_srq *q;
	int e;

	if (pd == NULL || attr == NULL) {
		errno = EINVAL;
		return NULL;
	}
	c = mv_ctx(pd->context);
	if (attr->attr.max_wr == 0 || attr->attr.max_wr > c->port.max_qp_wr ||
	    attr->attr.max_sge > c->port.max_sge) {
		mv_warn("ibv_create_srq: max_wr %u (1..%u), max_sge %u (<= %u)",
			attr->attr.max_wr, c->port.max_qp_wr, attr->attr.max_sge, c->port.max_sge);
		errno = EINVAL;
		return NULL;
	}
	/* IBA 11.2.3: the limit must not exceed the queue's size. */
	if (attr->attr.srq_limit > attr->attr.max_wr) {
		errno = EINVAL;
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	if (q == NULL)
		return NULL;
	q->m = mrc_create_srq(((struct mv_pd *)pd)->m, attr->attr.max_wr,
			      attr->attr.max_sge ? attr->attr.max_sge : 1);
	if (q->m == NULL) {
		e = errno;
		mv_log("ibv_create_srq: %s", mrc_last_error(c->s));
		free(q);
		errno = e;
		return NULL;
	}
	q->ctx = c;
	q->max_wr = mrc_srq_size(q->m);
	q->max_sge = attr->attr.max_sge ? attr->attr.max_sge : 1;
	q->limit = attr->attr.srq_limit;
	pthread_mutex_init(&q->lock, NULL);
	q->srq.context = pd->context;
	q->srq.srq_context = attr->srq_context;
	q->srq.pd = pd;
	q->srq.handle = (uint32_t)(uintptr_t)q;
	pthread_mutex_init(&q->srq.mutex, NULL);
	pthread_cond_init(&q->srq.cond, NULL);
	/* verbs returns what was granted (ibv_create_srq(3)). */
	attr->attr.max_wr = q->max_wr;
	attr->attr.max_sge = q->max_sge;
	return &q->srq;
}

MV_EXPORT int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	struct mv_srq *q = (struct mv_srq *)srq;
	int um = mask;

	if (q == NULL || attr == NULL)
		return EINVAL;
	if (um & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
		return EINVAL;
	if (um & IBV_SRQ_MAX_WR) {
		/* ibv_modify_srq(3): resizing only where IBV_DEVICE_SRQ_RESIZE is set. */
		mv_warn("ibv_modify_srq: resizing an SRQ (IBV_SRQ_MAX_WR) is not supported");
		return EOPNOTSUPP;
	}
	if (um & IBV_SRQ_LIMIT) {
		if (attr->srq_limit > q->max_wr)
			return EINVAL;
		pthread_mutex_lock(&q->lock);
		q->limit = attr->srq_limit;
		pthread_mutex_unlock(&q->lock);
	}
	return 0;
}

MV_EXPORT int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct mv_srq *q = (struct mv_srq *)srq;

	if (q == NULL || attr == NULL)
		return EINVAL;
	pthread_mutex_lock(&q->lock);
	attr->max_wr = q->max_wr;
	attr->max_sge = q->max_sge;
	attr->srq_limit = q->limit;
	pthread_mutex_unlock(&q->lock);
	return 0;
}

MV_EXPORT int ibv_destroy_srq(struct ibv_srq *srq)
{
	struct mv_srq *q = (struct mv_srq *)srq;
	int rc;

	if (q == NULL)
		return EINVAL;
	rc = mrc_destroy_srq(q->m);   /* -EBUSY while a QP still uses it */
	if (rc < 0)
		return mv_err(q->ctx->s, rc, "ibv_destroy_srq");
	pthread_mutex_destroy(&q->lock);
	pthread_mutex_destroy(&srq->mutex);
	pthread_cond_destroy(&srq->cond);
	free(q);
	return 0;
}

int mv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct mv_srq *q = (struct mv_srq *)srq;
	struct mr_recv_wr m;
	int rc = 0;

	if (q == NULL) {
		*bad = wr;
		return EINVAL;
	}
	pthread_mutex_lock(&q->lock);
	for (; wr != NULL; wr = wr->next) {
		rc = mv_recv_wr_from(&m, wr);
		if (rc == 0) {
			rc = mrc_post_srq_recv(q->m, &m);
			rc = rc < 0 ? -rc : 0;
		}
		if (rc != 0) {
			*bad = wr;
			break;
		}
	}
	pthread_mutex_unlock(&q->lock);
	return rc;
}
