/* SPDX-License-Identifier: MIT
 * Completion queues: a preallocated ring of struct mr_wc (IBA 11.4.2.1 Poll CQ).
 */
#include <errno.h>
#include <stdlib.h>

#include "rc_internal.h"

struct mr_cq *mr_cq_create(struct mr_ctx *ctx, uint32_t depth)
{
	struct mr_cq *cq;

	if (ctx == NULL || depth == 0 || depth > 4 * RC_MAX_WR * 16) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (cq == NULL || (cq->wc = calloc(depth, sizeof(*cq->wc))) == NULL) {
		free(cq);
		errno = ENOMEM;
		return NULL;
	}
	cq->ctx = ctx;
	cq->depth = depth;
	rc_list_add_tail(&ctx->cqs, &cq->link);
	return cq;
}

int mr_cq_destroy(struct mr_cq *cq)
{
	if (cq == NULL)
		return -EINVAL;
	if (cq->refs)
		return -EBUSY;
	rc_list_del(&cq->link);
	free(cq->wc);
	free(cq);
	return 0;
}

uint32_t mr_cq_count(const struct mr_cq *cq)
{
	return cq != NULL ? cq->count : 0;
}

int mr_cq_poll(struct mr_cq *cq, int n, struct mr_wc *wc)
{
	int i;

	if (cq == NULL || n < 0 || (wc == NULL && n > 0))
		return -EINVAL;
	for (i = 0; i < n && cq->count > 0; i++) {
		wc[i] = cq->wc[cq->head];
		cq->head = (cq->head + 1) % cq->depth;
		cq->count--;
	}
	return i;
}

/* A full CQ is a consumer error (IBA 11.4.2.1 "CQ overrun"): the entry is lost and counted,
 * and the QP that produced it is marked so that it enters ERR once the packet or timer being
 * handled is done (rc_check_overrun): the app learns of the loss from the QP state, as on rxe,
 * whose responder and completer move a QP to ERR when rxe_cq_post() finds the CQ full. */
void rc_cq_push(struct mr_qp *qp, struct mr_cq *cq, const struct mr_wc *wc)
{
	if (cq->count == cq->depth) {
		cq->overflows++;
		qp->cq_overrun = true;
		return;
	}
	cq->wc[(cq->head + cq->count) % cq->depth] = *wc;
	cq->count++;
}
