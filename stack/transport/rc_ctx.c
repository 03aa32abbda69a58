/* SPDX-License-Identifier: MIT
 * Transport context: QPN table, packet dispatch, round-robin tx scheduling and timers.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mrt_internal.h"

struct mr_ctx *mr_ctx_create(const struct mr_ctx_params *p)
{
	struct mr_ctx *ctx;

	/* QPNs are 24 bits; QP0/QP1 are special (IBA 10.2.4). MR keys carry the slot in 24 bits. */
	if (p == NULL || p->max_qp == 0 || p->first_qpn < 2 || p->max_mr == 0 ||
	    p->max_mr > (1u << 24) || (uint64_t)p->first_qpn + p->max_qp > (1u << 24) ||
	    p->max_inflight_pkts > RC_MAX_INFLIGHT ||
	    (p->max_mtu != 0 && p->max_mtu != 256 && p->max_mtu != 512 && p->max_mtu != 1024 &&
	     p->max_mtu != 2048 && p->max_mtu != 4096)) {
		errno = EINVAL;
		return NULL;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (ctx == NULL)
		goto nomem;
	ctx->p = *p;
	ctx->max_inflight = p->max_inflight_pkts ? p->max_inflight_pkts : RC_DEFAULT_INFLIGHT;
	ctx->rng = p->seed ^ 0x9e3779b97f4a7c15ull;
	ctx->qp_tab = calloc(p->max_qp, sizeof(*ctx->qp_tab));
	ctx->mr_tab = calloc(p->max_mr, sizeof(*ctx->mr_tab));
	ctx->mr_tag = calloc(p->max_mr, 1);
	if (ctx->qp_tab == NULL || ctx->mr_tab == NULL || ctx->mr_tag == NULL)
		goto nomem_free;
	/* Seeded tags make keys differ between runs with different seeds. */
	for (uint32_t i = 0; i < p->max_mr; i++)
		ctx->mr_tag[i] = (uint8_t)(p->seed >> ((i % 8) * 8)) + (uint8_t)i;
	rc_list_init(&ctx->resp_sched);
	rc_list_init(&ctx->req_sched);
	rc_list_init(&ctx->timers);
	rc_list_init(&ctx->pds);
	rc_list_init(&ctx->cqs);
	rc_list_init(&ctx->srqs);
	return ctx;
nomem_free:
	free(ctx->qp_tab);
	free(ctx->mr_tab);
	free(ctx->mr_tag);
	free(ctx);
nomem:
	errno = ENOMEM;
	return NULL;
}

void mr_ctx_destroy(struct mr_ctx *ctx)
{
	if (ctx == NULL)
		return;
	for (uint32_t i = 0; i < ctx->p.max_qp; i++)
		if (ctx->qp_tab[i] != NULL)
			rc_qp_free(ctx->qp_tab[i]);
	rc_mr_destroy_all(ctx);
	rc_srq_destroy_all(ctx);
	while (!rc_list_empty(&ctx->cqs)) {
		struct mr_cq *cq = rc_container_of(ctx->cqs.next, struct mr_cq, link);

		rc_list_del(&cq->link);
		free(cq->wc);
		free(cq);
	}
	while (!rc_list_empty(&ctx->pds)) {
		struct mr_pd *pd = rc_container_of(ctx->pds.next, struct mr_pd, link);

		rc_list_del(&pd->link);
		free(pd);
	}
	free(ctx->qp_tab);
	free(ctx->mr_tab);
	free(ctx->mr_tag);
	free(ctx);
}

void rc_sched_req(struct mr_qp *qp)
{
	if (!rc_linked(&qp->req_link))
		rc_list_add_tail(&qp->ctx->req_sched, &qp->req_link);
}

void rc_sched_resp(struct mr_qp *qp)
{
	if (!rc_linked(&qp->resp_link))
		rc_list_add_tail(&qp->ctx->resp_sched, &qp->resp_link);
}

/* Earliest timer of one QP: RC (ACK timeout, RNR, delayed ACK) or MetaRoCE (RACK, TLP, RTO,
 * RNR, delayed ACK), plus pacing and congestion-control timers. */
uint64_t rc_qp_next_expiry(const struct mr_qp *qp)
{
	uint64_t t = qp_cc_next_expiry(qp), x;

	if (qp->mrt != NULL) {
		x = mrt_next_expiry(qp);
		return x < t ? x : t;
	}
	if (qp->comp.ack_deadline < t)
		t = qp->comp.ack_deadline;
	if (qp->req.rnr_wait && qp->req.rnr_until < t)
		t = qp->req.rnr_until;
	if (qp->resp.ack_deadline < t)
		t = qp->resp.ack_deadline;
	return t;
}

void rc_timer_update(struct mr_qp *qp)
{
	bool armed = rc_qp_next_expiry(qp) != UINT64_MAX || qp->req.rnr_wait;

	if (armed && !rc_linked(&qp->timer_link))
		rc_list_add_tail(&qp->ctx->timers, &qp->timer_link);
	else if (!armed)
		rc_list_del(&qp->timer_link);
}

static bool rc_is_request(uint8_t op)
{
	return op <= MR_OP_RC_READ_REQUEST || op == MR_OP_RC_CMP_SWAP ||
	       op == MR_OP_RC_FETCH_ADD || op == MR_OP_RC_SEND_LAST_INV ||
	       op == MR_OP_RC_SEND_ONLY_INV;
}

static bool rc_is_response(uint8_t op)
{
	return op >= MR_OP_RC_READ_RESPONSE_FIRST && op <= MR_OP_RC_ATOMIC_ACK;
}

/* Statistics class of a (base, RC) opcode, IBA 9.2 table 38. */
static enum mr_op_class rc_op_class(uint8_t op)
{
	if (op == MR_OP_CNP)
		return MR_OPC_CNP;
	op = mr_opcode_is_metaroce(op) ? mr_opcode_base(op) : op;
	if (op <= MR_OP_RC_SEND_ONLY_IMM || op == MR_OP_RC_SEND_LAST_INV ||
	    op == MR_OP_RC_SEND_ONLY_INV)
		return MR_OPC_SEND;
	if (op <= MR_OP_RC_WRITE_ONLY_IMM)
		return MR_OPC_WRITE;
	if (op == MR_OP_RC_READ_REQUEST)
		return MR_OPC_READ_REQ;
	if (op <= MR_OP_RC_READ_RESPONSE_ONLY)
		return MR_OPC_READ_RESP;
	if (op == MR_OP_RC_ACK)
		return MR_OPC_ACK;
	if (op == MR_OP_RC_ATOMIC_ACK)
		return MR_OPC_ATOMIC_ACK;
	return MR_OPC_ATOMIC;
}

/* First or only packet of a request message: one per message (mlx5 rx_*_requests). */
static bool rc_op_starts_request(uint8_t op)
{
	op = mr_opcode_is_metaroce(op) ? mr_opcode_base(op) : op;
	switch (op) {
	case MR_OP_RC_SEND_FIRST: case MR_OP_RC_SEND_ONLY: case MR_OP_RC_SEND_ONLY_IMM:
	case MR_OP_RC_SEND_ONLY_INV: case MR_OP_RC_WRITE_FIRST: case MR_OP_RC_WRITE_ONLY:
	case MR_OP_RC_WRITE_ONLY_IMM: case MR_OP_RC_READ_REQUEST: case MR_OP_RC_CMP_SWAP:
	case MR_OP_RC_FETCH_ADD:
		return true;
	default:
		return false;
	}
}

static void rc_count_rx(struct mr_qp *qp, uint8_t op)
{
	enum mr_op_class c = rc_op_class(op);

	qp->stats.rx_op[c]++;
	if (rc_op_starts_request(op))
		qp->stats.rx_requests[c]++;
}

/* After a packet or timer of qp: a CQ overrun it caused moves it to ERR (rc_cq.c). */
static void rc_check_overrun(struct mr_qp *qp)
{
	if (!qp->cq_overrun)
		return;
	qp->cq_overrun = false;
	if (qp->state != MR_QPS_ERR && qp->state != MR_QPS_RESET)
		rc_qp_to_err(qp);
}

void mr_ctx_rx(struct mr_ctx *ctx, const struct mr_pkt *pkt, uint64_t now)
{
	struct mr_qp *qp;
	uint32_t idx;
	uint8_t op;

	if (ctx == NULL || pkt == NULL)
		return;
	idx = pkt->hdr.dqpn - ctx->p.first_qpn; /* wraps to a huge index when below first_qpn */
	if (pkt->hdr.dqpn < ctx->p.first_qpn || idx >= ctx->p.max_qp ||
	    (qp = ctx->qp_tab[idx]) == NULL) {
		ctx->stats.rx_unknown_qp++;
		return;
	}
	/* Header validation before any transport processing (IBA 9.6): the BTH P_Key must be a
	 * member of the QP's partition (10.9: equal low 15 bits; every QP here is in the default
	 * partition 0xFFFF as a full member, so limited-member 0x7FFF matches too). */
	if ((pkt->hdr.pkey & 0x7fff) != 0x7fff) {
		ctx->stats.rx_bad_pkey++;
		qp->stats.dropped++;
		return;
	}
	/* A connected QP takes packets only from its peer's address (IBA 9.6: the source of an
	 * RC packet must be the QP's remote endpoint; rxe drops a network address mismatch the
	 * same way). Only packets parsed from a frame carry a source (pkt->frame), not the
	 * in-memory ones of the transport unit tests. */
	if (pkt->frame != NULL && qp->state != MR_QPS_RESET && qp->state != MR_QPS_INIT &&
	    memcmp(pkt->sgid, qp->attr.path.dgid, sizeof(pkt->sgid)) != 0) {
		ctx->stats.rx_bad_source++;
		qp->stats.dropped++;
		return;
	}
	op = pkt->hdr.opcode;
	if (op == MR_OP_CNP) { /* A17.9.3: congestion notification for our requests */
		qp->stats.rx_pkts++;
		rc_count_rx(qp, op);
		qp_cc_on_cnp(qp, now);
		return;
	}
	if (mr_opcode_is_metaroce(op)) {
		uint8_t b = mr_opcode_base(op);

		/* MetaRoCE only on QPs that negotiated it (docs/metaroce-wire.md). */
		if (qp->mrt == NULL || (pkt->paylen > 0 && pkt->payload == NULL) ||
		    pkt->paylen > 4096 || (!rc_is_request(b) && !rc_is_response(b))) {
			ctx->stats.rx_dropped++;
			qp->stats.dropped++;
			return;
		}
		qp->stats.rx_pkts++;
		qp->stats.rx_bytes += pkt->paylen;
		rc_count_rx(qp, op);
		if (rc_is_request(b))
			mrt_resp_rx(qp, pkt, now);
		else
			mrt_req_rx(qp, pkt, now);
		rc_check_overrun(qp);
		return;
	}
	if (qp->mrt != NULL || (pkt->paylen > 0 && pkt->payload == NULL) || pkt->paylen > 4096 ||
	    (!rc_is_request(op) && !rc_is_response(op))) {
		/* Not an RC opcode (IBA 9.6.1.2: transport header checks): drop silently. */
		ctx->stats.rx_dropped++;
		qp->stats.dropped++;
		return;
	}
	qp->stats.rx_pkts++;
	qp->stats.rx_bytes += pkt->paylen;
	rc_count_rx(qp, op);
	if (rc_is_request(op))
		rc_resp_rx(qp, pkt, now);
	else
		rc_comp_rx(qp, pkt, now);
	rc_check_overrun(qp);
}

/* Pop the first QP of a scheduling list and let it produce one packet; a QP that produced one
 * goes to the tail (round robin), one that had nothing leaves the list until rescheduled. */
static int rc_serve(struct rc_link *list, bool resp, uint64_t now, struct mr_tx_pkt *out)
{
	while (!rc_list_empty(list)) {
		struct rc_link *l = list->next;
		struct mr_qp *qp;
		int n;

		rc_list_del(l);
		if (resp) {
			qp = rc_container_of(l, struct mr_qp, resp_link);
			n = rc_resp_cnp_tx(qp, out);
			if (n == 0)
				n = qp->mrt ? mrt_resp_tx(qp, now, out) : rc_resp_tx(qp, out);
		} else {
			qp = rc_container_of(l, struct mr_qp, req_link);
			n = qp->mrt ? mrt_req_tx(qp, now, out) : rc_req_tx(qp, now, out);
		}
		if (n > 0) {
			rc_list_add_tail(list, l);
			qp->stats.tx_pkts++;
			qp->stats.tx_bytes += out->paylen;
			qp->stats.tx_op[rc_op_class(out->hdr.opcode)]++;
			return 1;
		}
	}
	return 0;
}

int mr_ctx_tx(struct mr_ctx *ctx, uint64_t now, struct mr_tx_pkt *out)
{
	if (ctx == NULL || out == NULL)
		return -EINVAL;
	/* Responses first: they free the peer's resources and never depend on our window. */
	if (rc_serve(&ctx->resp_sched, true, now, out))
		return 1;
	return rc_serve(&ctx->req_sched, false, now, out);
}

uint64_t mr_ctx_next_expiry(const struct mr_ctx *ctx)
{
	uint64_t t = UINT64_MAX;

	if (ctx == NULL)
		return t;
	for (const struct rc_link *l = ctx->timers.next; l != &ctx->timers; l = l->next) {
		const struct mr_qp *qp = rc_container_of(l, const struct mr_qp, timer_link);
		uint64_t q = rc_qp_next_expiry(qp);

		if (qp->mrt == NULL && qp->req.rnr_wait && qp->req.rnr_until < q)
			q = qp->req.rnr_until;
		if (q < t)
			t = q;
	}
	return t;
}

void mr_ctx_on_timer(struct mr_ctx *ctx, uint64_t now)
{
	struct rc_link *l, *next;

	if (ctx == NULL)
		return;
	for (l = ctx->timers.next; l != &ctx->timers; l = next) {
		next = l->next;
		struct mr_qp *qp = rc_container_of(l, struct mr_qp, timer_link);

		qp_cc_on_timer(qp, now);
		if (qp->mrt != NULL) {
			mrt_on_timer(qp, now);
		} else {
			rc_resp_on_timer(qp, now);
			rc_req_on_timer(qp, now);
		}
		rc_check_overrun(qp);
		rc_timer_update(qp);
	}
}

static uint32_t rc_list_len(const struct rc_link *h)
{
	uint32_t n = 0;

	for (const struct rc_link *l = h->next; l != h; l = l->next)
		n++;
	return n;
}

void mr_ctx_get_counts(const struct mr_ctx *ctx, struct mr_ctx_counts *c)
{
	memset(c, 0, sizeof(*c));
	if (ctx == NULL)
		return;
	for (uint32_t i = 0; i < ctx->p.max_qp; i++)
		c->qps += ctx->qp_tab[i] != NULL;
	for (uint32_t i = 0; i < ctx->p.max_mr; i++)
		c->mrs += ctx->mr_tab[i] != NULL;
	c->pds = rc_list_len(&ctx->pds);
	c->cqs = rc_list_len(&ctx->cqs);
	c->srqs = rc_list_len(&ctx->srqs);
}

void mr_ctx_get_stats(const struct mr_ctx *ctx, struct mr_ctx_stats *st)
{
	if (ctx == NULL || st == NULL)
		return;
	*st = ctx->stats;
}
