/* SPDX-License-Identifier: MIT
 * Transport context: QPN table, packet dispatch, round-robin tx scheduling and timers.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rc_internal.h"

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
	/* One heap slot per QP (h[0] unused): arming never allocates. */
	ctx->tm = calloc(1, sizeof(*ctx->tm) + ((size_t)p->max_qp + 1) * sizeof(ctx->tm->h[0]));
	if (ctx->qp_tab == NULL || ctx->mr_tab == NULL || ctx->mr_tag == NULL || ctx->tm == NULL)
		goto nomem_free;
	/* Seeded tags make keys differ between runs with different seeds. */
	for (uint32_t i = 0; i < p->max_mr; i++)
		ctx->mr_tag[i] = (uint8_t)(p->seed >> ((i % 8) * 8)) + (uint8_t)i;
	rc_list_init(&ctx->resp_sched);
	rc_list_init(&ctx->req_sched);
	rc_list_init(&ctx->tm->dirty);
	rc_list_init(&ctx->pds);
	rc_list_init(&ctx->cqs);
	rc_list_init(&ctx->srqs);
	return ctx;
nomem_free:
	free(ctx->qp_tab);
	free(ctx->mr_tab);
	free(ctx->mr_tag);
	free(ctx->tm);
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
	free(ctx->tm);
	free(ctx);
}

/* Scheduling a QP means its state changed: its timers are re-keyed too (cheap insurance for
 * a deadline written without rc_timer_update). */
void rc_sched_req(struct mr_qp *qp)
{
	if (!rc_linked(&qp->req_link))
		rc_list_add_tail(&qp->ctx->req_sched, &qp->req_link);
	rc_timer_update(qp);
}

void rc_sched_resp(struct mr_qp *qp)
{
	if (!rc_linked(&qp->resp_link))
		rc_list_add_tail(&qp->ctx->resp_sched, &qp->resp_link);
	rc_timer_update(qp);
}

/* Earliest timer of one QP: its engine's (RC: ACK timeout, RNR, delayed ACK; MetaRoCE: RACK,
 * TLP, RTO, RNR, delayed ACK), plus pacing and congestion-control timers. */
uint64_t rc_qp_next_expiry(const struct mr_qp *qp)
{
	uint64_t t = qp_cc_next_expiry(qp), x = qp->eng->next_expiry(qp);

	return x < t ? x : t;
}

/* ---- timer heap (struct rc_timers in rc_internal.h) ---- */

static void rc_tm_set(struct rc_timers *tm, uint32_t i, struct rc_tm_ent e)
{
	tm->h[i] = e;
	e.qp->tm_pos = i;
}

static void rc_tm_sift_up(struct rc_timers *tm, uint32_t i)
{
	struct rc_tm_ent e = tm->h[i];

	while (i > 1 && tm->h[i / 2].key > e.key) {
		rc_tm_set(tm, i, tm->h[i / 2]);
		i /= 2;
	}
	rc_tm_set(tm, i, e);
}

static void rc_tm_sift_down(struct rc_timers *tm, uint32_t i)
{
	struct rc_tm_ent e = tm->h[i];

	for (;;) {
		uint32_t c = 2 * i;

		if (c > tm->n)
			break;
		if (c < tm->n && tm->h[c + 1].key < tm->h[c].key)
			c++;
		if (tm->h[c].key >= e.key)
			break;
		rc_tm_set(tm, i, tm->h[c]);
		i = c;
	}
	rc_tm_set(tm, i, e);
}

static void rc_tm_del(struct rc_timers *tm, struct mr_qp *qp)
{
	uint32_t i = qp->tm_pos;
	struct rc_tm_ent last;

	if (i == 0)
		return;
	qp->tm_pos = 0;
	last = tm->h[tm->n--];
	if (i > tm->n)
		return; /* qp was the last entry */
	rc_tm_set(tm, i, last);
	if (i > 1 && tm->h[i / 2].key > last.key)
		rc_tm_sift_up(tm, i);
	else
		rc_tm_sift_down(tm, i);
}

/* Key qp by its earliest deadline: insert, move or remove. Armed as the timer list was: an
 * expiry, or an RC RNR wait (IBA 9.7.5.2.8) even with no finite expiry. */
static void rc_tm_key(struct rc_timers *tm, struct mr_qp *qp)
{
	uint64_t key = rc_qp_next_expiry(qp), old;
	uint32_t i = qp->tm_pos;

	if (key == UINT64_MAX && !qp->req.rnr_wait) {
		rc_tm_del(tm, qp);
		return;
	}
	if (i == 0) {
		i = ++tm->n;
		rc_tm_set(tm, i, (struct rc_tm_ent){ .key = key, .qp = qp });
		rc_tm_sift_up(tm, i);
		return;
	}
	old = tm->h[i].key;
	tm->h[i].key = key;
	if (key < old)
		rc_tm_sift_up(tm, i);
	else if (key > old)
		rc_tm_sift_down(tm, i);
}

/* Re-key every dirty QP: the work is bounded by the QPs touched since the last call. */
static void rc_tm_flush(struct rc_timers *tm)
{
	while (!rc_list_empty(&tm->dirty)) {
		struct rc_link *l = tm->dirty.next;

		rc_list_del(l);
		rc_tm_key(tm, rc_container_of(l, struct mr_qp, tm_link));
	}
}

void rc_timer_update(struct mr_qp *qp)
{
	/* Already linked: dirty, or due in a timer run that re-keys it afterwards. */
	if (!rc_linked(&qp->tm_link))
		rc_list_add_tail(&qp->ctx->tm->dirty, &qp->tm_link);
}

void rc_timer_remove(struct mr_qp *qp)
{
	rc_list_del(&qp->tm_link);
	rc_tm_del(qp->ctx->tm, qp);
}

unsigned int rc_timer_audit(const struct mr_ctx *ctx, bool strict)
{
	struct rc_timers *tm;
	unsigned int bad = 0;
	uint32_t armed = 0;

	if (ctx == NULL)
		return 0;
	tm = ctx->tm;
	rc_tm_flush(tm);
	if (tm->n > ctx->p.max_qp)
		return 1;
	for (uint32_t i = 1; i <= tm->n; i++) {
		const struct mr_qp *qp = tm->h[i].qp;

		bad += i > 1 && tm->h[i / 2].key > tm->h[i].key;
		bad += qp == NULL || qp->tm_pos != i || qp->ctx != ctx ||
		       ctx->qp_tab[qp->qpn - ctx->p.first_qpn] != qp;
	}
	for (uint32_t s = 0; s < ctx->p.max_qp; s++) {
		const struct mr_qp *qp = ctx->qp_tab[s];
		uint64_t t;
		bool on;

		if (qp == NULL)
			continue;
		t = rc_qp_next_expiry(qp);
		on = t != UINT64_MAX || qp->req.rnr_wait;
		armed += qp->tm_pos != 0;
		if (qp->tm_pos > tm->n) {
			bad++;
			continue;
		}
		if (on && (qp->tm_pos == 0 || tm->h[qp->tm_pos].key > t))
			bad++; /* a lost (or late) timer */
		else if (strict && qp->tm_pos != 0 && (!on || tm->h[qp->tm_pos].key != t))
			bad++;
	}
	return bad + (armed != tm->n);
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

/* A packet whose ICRC is still pending (mr_frame_parse_deferred) is checked before it is
 * counted or dropped for any other reason: a corrupted packet is an ICRC error (A17.3.4), as
 * it would have been had it been checked on arrival. */
#define RC_RX_PENDING_BAD(pkt) ((pkt)->icrc_pending && !mr_pkt_icrc_ok(pkt))

int mr_ctx_rx(struct mr_ctx *ctx, const struct mr_pkt *pkt, uint64_t now)
{
	struct mr_qp *qp;
	uint32_t idx;
	uint8_t op, b;
	int placed = -EAGAIN;

	if (ctx == NULL || pkt == NULL)
		return -EINVAL;
	idx = pkt->hdr.dqpn - ctx->p.first_qpn; /* wraps to a huge index when below first_qpn */
	if (pkt->hdr.dqpn < ctx->p.first_qpn || idx >= ctx->p.max_qp ||
	    (qp = ctx->qp_tab[idx]) == NULL) {
		if (RC_RX_PENDING_BAD(pkt))
			return -EBADMSG;
		ctx->stats.rx_unknown_qp++;
		return 0;
	}
	rc_timer_update(qp); /* whatever the packet does to its deadlines */
	/* Header validation before any transport processing (IBA 9.6): the BTH P_Key must be a
	 * member of the QP's partition (10.9: equal low 15 bits; every QP here is in the default
	 * partition 0xFFFF as a full member, so limited-member 0x7FFF matches too). */
	if ((pkt->hdr.pkey & 0x7fff) != 0x7fff) {
		if (RC_RX_PENDING_BAD(pkt))
			return -EBADMSG;
		ctx->stats.rx_bad_pkey++;
		qp->stats.dropped++;
		return 0;
	}
	/* A connected QP takes packets only from its peer's address (IBA 9.6: the source of an
	 * RC packet must be the QP's remote endpoint; rxe drops a network address mismatch the
	 * same way). Only packets parsed from a frame carry a source (pkt->frame), not the
	 * in-memory ones of the transport unit tests. */
	if (pkt->frame != NULL && qp->state != MR_QPS_RESET && qp->state != MR_QPS_INIT &&
	    memcmp(pkt->sgid, qp->attr.path.dgid, sizeof(pkt->sgid)) != 0) {
		if (RC_RX_PENDING_BAD(pkt))
			return -EBADMSG;
		ctx->stats.rx_bad_source++;
		qp->stats.dropped++;
		return 0;
	}
	op = pkt->hdr.opcode;
	if (op == MR_OP_CNP) { /* A17.9.3: congestion notification for our requests */
		qp->stats.rx_pkts++;
		rc_count_rx(qp, op);
		qp_cc_on_cnp(qp, now);
		return 0;
	}
	/* MetaRoCE opcodes only on QPs that negotiated it (docs/metaroce-wire.md), RC opcodes
	 * only on the others; anything else is not a transport opcode this QP takes (IBA
	 * 9.6.1.2: transport header checks): dropped silently. */
	b = mr_opcode_base(op); /* the RC opcode a MetaRoCE one extends */
	if ((qp->mrt != NULL) != mr_opcode_is_metaroce(op) ||
	    (pkt->paylen > 0 && pkt->payload == NULL) || pkt->paylen > 4096 ||
	    (!rc_is_request(b) && !rc_is_response(b))) {
		if (RC_RX_PENDING_BAD(pkt))
			return -EBADMSG;
		ctx->stats.rx_dropped++;
		qp->stats.dropped++;
		return 0;
	}
	if (pkt->icrc_pending) {
		/* Only RC WRITE Middle/Last are deferred (wire/roce_pkt.h); the responder places
		 * the in-order ones with the check fused into the copy (placed: 0), the rest are
		 * checked in full here and then take the ordinary path. */
		placed = qp->mrt == NULL ? rc_resp_write_checked(qp, pkt, now) : -EAGAIN;
		if (placed == -EAGAIN && !mr_pkt_icrc_ok(pkt))
			placed = -EBADMSG;
		if (placed == -EBADMSG)
			return placed;
	}
	qp->stats.rx_pkts++;
	qp->stats.rx_bytes += pkt->paylen;
	rc_count_rx(qp, op);
	if (placed != 0) {
		if (rc_is_request(b))
			qp->eng->rx_req(qp, pkt, now);
		else
			qp->eng->rx_resp(qp, pkt, now);
	}
	rc_check_overrun(qp);
	return 0;
}

/* Pop the first QP of a scheduling list and let it produce one packet; a QP that produced one
 * goes to the tail (round robin), one that had nothing leaves the list until rescheduled.
 * Requesters (streak != NULL) keep their turn for up to RC_TX_QUANTUM packets: IBA leaves the
 * arbitration between send queues to the implementation, and back-to-back packets of one QP
 * reach the responder in one receive burst, where their ACKs coalesce (rc_resp_ack) instead
 * of costing one ACK frame per packet when many QPs are busy. */
static int rc_serve(struct rc_link *list, uint32_t *streak, bool resp, uint64_t now,
		    struct mr_tx_pkt *out)
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
				n = qp->eng->tx_resp(qp, now, out);
		} else {
			qp = rc_container_of(l, struct mr_qp, req_link);
			n = qp->eng->tx_req(qp, now, out);
		}
		rc_timer_update(qp); /* sending arms ACK/RTO/TLP timers and the pacer */
		if (n <= 0) { /* nothing to send: off the list until rescheduled */
			if (streak != NULL)
				*streak = 0;
			continue;
		}
		/* A requester keeps its turn for up to RC_TX_QUANTUM packets (its ACKs coalesce at
		 * the responder); then, and for responses after each packet, the next QP's turn. */
		if (streak != NULL && ++*streak < RC_TX_QUANTUM) {
			rc_list_add_head(list, l);
		} else {
			if (streak != NULL)
				*streak = 0;
			rc_list_add_tail(list, l);
		}
		out->tmpl = out->path == &qp->attr.path && qp->tmpl.len != 0 ? &qp->tmpl : NULL;
		qp->stats.tx_pkts++;
		qp->stats.tx_bytes += out->paylen;
		qp->stats.tx_op[rc_op_class(out->hdr.opcode)]++;
		return 1;
	}
	return 0;
}

/* The oldest ACK of a destroyed QP (rc_qp.c rc_qp_parting_ack), as rc_resp_tx builds one. */
static void rc_parting_tx(struct mr_ctx *ctx, struct mr_tx_pkt *out)
{
	const struct rc_parting *p = &ctx->parting[ctx->parting_head];

	ctx->parting_path = p->path; /* stays put while the caller builds the frame */
	rc_resp_hdr(out, &ctx->parting_path, p->dqpn, p->psn, p->msn);
	out->tmpl = NULL;
	ctx->parting_head = (ctx->parting_head + 1) % RC_PARTING_MAX;
	ctx->parting_n--;
	ctx->stats.parting_acks++;
}

int mr_ctx_tx(struct mr_ctx *ctx, uint64_t now, struct mr_tx_pkt *out)
{
	if (ctx == NULL || out == NULL)
		return -EINVAL;
	if (ctx->parting_n > 0) {
		rc_parting_tx(ctx, out);
		return 1;
	}
	/* Responses first: they free the peer's resources and never depend on our window. */
	if (rc_serve(&ctx->resp_sched, NULL, true, now, out))
		return 1;
	return rc_serve(&ctx->req_sched, &ctx->req_streak, false, now, out);
}

#ifdef MR_TIMER_AUDIT
/* Audit builds (sanitizers): every read of the heap is checked against the walk it replaced. */
static void rc_tm_audit(const struct mr_ctx *ctx)
{
	if (rc_timer_audit(ctx, false) != 0)
		abort();
}
#else
static void rc_tm_audit(const struct mr_ctx *ctx)
{
	(void)ctx;
}
#endif

/* O(1) after re-keying the QPs touched since the last call. The heap is behind ctx->tm, so the
 * const ctx of the API still holds: re-keying changes no observable state. */
uint64_t mr_ctx_next_expiry(const struct mr_ctx *ctx)
{
	struct rc_timers *tm;

	if (ctx == NULL)
		return UINT64_MAX;
	tm = ctx->tm;
	rc_tm_flush(tm);
	rc_tm_audit(ctx);
	return tm->n > 0 ? tm->h[1].key : UINT64_MAX;
}

/* Unlink every QP whose earliest deadline is at or before `until` from the heap into *due (an
 * initialised list); the caller runs them and re-keys each with rc_timer_update. */
static void rc_tm_take_due(struct rc_timers *tm, uint64_t until, struct rc_link *due)
{
	while (tm->n > 0 && tm->h[1].key <= until) {
		struct mr_qp *qp = tm->h[1].qp;

		rc_tm_del(tm, qp);
		rc_list_add_tail(due, &qp->tm_link);
	}
}

/* Visit only the QPs whose earliest deadline is at or before now, earliest first, each once
 * (its handlers check each of its deadlines against now): O(k log n) for k due QPs. */
void mr_ctx_on_timer(struct mr_ctx *ctx, uint64_t now)
{
	struct rc_timers *tm;
	struct rc_link due;

	if (ctx == NULL)
		return;
	tm = ctx->tm;
	rc_tm_flush(tm);
	rc_tm_audit(ctx);
	rc_list_init(&due);
	rc_tm_take_due(tm, now, &due);
	while (!rc_list_empty(&due)) {
		struct rc_link *l = due.next;
		struct mr_qp *qp = rc_container_of(l, struct mr_qp, tm_link);

		rc_list_del(l);
		qp_cc_on_timer(qp, now);
		qp->eng->on_timer(qp, now);
		rc_check_overrun(qp);
		rc_timer_update(qp);
	}
	rc_tm_flush(tm);
}

unsigned int mr_ctx_ack_early(struct mr_ctx *ctx, uint64_t until)
{
	struct rc_timers *tm;
	struct rc_link due;
	unsigned int n = 0;

	if (ctx == NULL)
		return 0;
	tm = ctx->tm;
	rc_tm_flush(tm);
	rc_list_init(&due);
	rc_tm_take_due(tm, until, &due);
	while (!rc_list_empty(&due)) {
		struct rc_link *l = due.next;
		struct mr_qp *qp = rc_container_of(l, struct mr_qp, tm_link);

		rc_list_del(l);
		if (qp->eng->ack_early != NULL) {
			qp->eng->ack_early(qp, until);
			n++;
		}
		rc_timer_update(qp);
	}
	rc_tm_flush(tm);
	return n;
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
