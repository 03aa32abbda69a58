/* SPDX-License-Identifier: MIT
 * Completer (IBA 9.7.5.1, 9.7.6): consumes ACKs, NAKs, READ responses and atomic ACKs;
 * retires send WQEs strictly in SQ order; drives go-back-N, RNR waits and error completion.
 */
#include <string.h>

#include "rc_internal.h"

/* Forward progress: reset the retry counters and restart the ACK timer for what remains. */
static void rc_comp_progress(struct mr_qp *qp, uint64_t now)
{
	qp->comp.retry_left = qp->attr.retry_cnt;
	qp->comp.rnr_left = qp->attr.rnr_retry;
	qp->comp.implied_retried = false;
	if (mr_psn_cmp(qp->comp.psn, qp->req.psn_max) < 0 && qp->attr.timeout != 0)
		qp->comp.ack_deadline = now + mr_ack_timeout_ns(qp->attr.timeout);
	else
		qp->comp.ack_deadline = UINT64_MAX;
	rc_timer_update(qp);
	/* A late ACK may cover PSNs that a go-back-N restart was about to resend. */
	if (mr_psn_cmp(qp->comp.psn, qp->req.psn) > 0)
		rc_req_seek(qp, qp->comp.psn);
	rc_sched_req(qp); /* the window may have opened */
}

/* Acknowledge every PSN before end (IBA 9.7.5.1.2: ACKs are cumulative; a NAK, READ response
 * or atomic ACK for PSN n also acknowledges every request before n). A READ/atomic WQE can only
 * complete with its data, so an ACK reaching past one whose data has not arrived means those
 * responses were lost: returns true for that "implied NAK". */
static bool rc_comp_ack_upto(struct mr_qp *qp, uint32_t end, uint64_t now)
{
	bool lost = false, progress = false;

	while (qp->sq_head != qp->sq_tail && qp->state != MR_QPS_ERR) {
		struct rc_swqe *w = rc_sq_at(qp, qp->sq_head);

		if (!w->psn_valid)
			break;
		if (rc_wr_is_rd_atomic(w->wr.opcode)) {
			if (mr_psn_cmp(end, qp->comp.psn) > 0)
				lost = true;
			break;
		}
		if (mr_psn_cmp(w->last_psn, end) < 0) {
			qp->comp.psn = mr_psn_add(w->last_psn, 1);
			rc_comp_complete_head(qp, MR_WC_SUCCESS);
			progress = true;
			continue;
		}
		if (mr_psn_cmp(end, qp->comp.psn) > 0) {
			qp->comp.psn = end; /* part of a multi-packet message */
			progress = true;
		}
		break;
	}
	if (progress)
		rc_comp_progress(qp, now);
	return lost;
}

/* Go-back-N from the oldest unacknowledged PSN (IBA 9.7.5.2.1, as rxe's req_retry). Counts
 * against retry_cnt; the last retry failing completes the head with RETRY_EXC_ERR. */
static void rc_comp_retry(struct mr_qp *qp)
{
	if (qp->comp.retry_left == 0) {
		qp->stats.retry_exceeded++;
		rc_sq_at(qp, qp->sq_head)->status = MR_WC_RETRY_EXC_ERR;
		rc_qp_to_err(qp);
		return;
	}
	qp->stats.retry_seqs++;
	qp->comp.retry_left--;
	qp->comp.implied_retried = true;
	qp->comp.ack_deadline = UINT64_MAX;
	rc_timer_update(qp);
	rc_req_seek(qp, qp->comp.psn);
}

/* A READ response or atomic ACK beyond the expected PSN: earlier responses were lost. Only the
 * first such packet per restart point triggers a retry; the rest are from the same flight. */
static void rc_comp_implied_nak(struct mr_qp *qp)
{
	if (!qp->comp.implied_retried) {
		qp->stats.implied_naks++;
		rc_comp_retry(qp);
	}
}

static void rc_comp_error(struct mr_qp *qp, enum mr_wc_status st)
{
	if (qp->sq_head == qp->sq_tail)
		return;
	rc_sq_at(qp, qp->sq_head)->status = st;
	rc_qp_to_err(qp);
}

static void rc_comp_nak(struct mr_qp *qp, const struct mr_pkt *pkt, uint64_t now)
{
	uint8_t syn = pkt->hdr.aeth.syndrome;
	uint32_t psn = pkt->hdr.psn;

	switch (syn & MR_AETH_TYPE_MASK) {
	case MR_AETH_ACK:
		qp->stats.acks_rcvd++;
		if (rc_comp_ack_upto(qp, mr_psn_add(psn, 1), now))
			rc_comp_implied_nak(qp);
		return;
	case MR_AETH_RNR_NAK:
		qp->stats.rnr_naks_rcvd++;
		if (mr_psn_cmp(psn, qp->comp.psn) < 0)
			return; /* stale */
		rc_comp_ack_upto(qp, psn, now);
		if (qp->state == MR_QPS_ERR || qp->sq_head == qp->sq_tail)
			return;
		/* IBA 9.7.5.2.8: rnr_retry 7 retries forever; else count down. */
		if (qp->attr.rnr_retry != 7) {
			if (qp->comp.rnr_left == 0) {
				qp->stats.rnr_retry_exceeded++;
				rc_comp_error(qp, MR_WC_RNR_RETRY_EXC_ERR);
				return;
			}
			qp->comp.rnr_left--;
		}
		qp->req.rnr_wait = true;
		qp->req.rnr_until = now + rc_rnr_timer_ns(syn & 0x1f);
		qp->comp.ack_deadline = UINT64_MAX;
		rc_timer_update(qp);
		return;
	case MR_AETH_NAK:
		break;
	default:
		qp->stats.dropped++; /* reserved syndrome (IBA table 42) */
		return;
	}
	switch (syn & 0x1f) {
	case MR_NAK_PSN_SEQ_ERR:
		qp->stats.seq_naks_rcvd++;
		if (mr_psn_cmp(psn, qp->comp.psn) < 0)
			return;
		/* IBA 9.7.5.2.1: the NAK acknowledges all before its PSN; resend from there. */
		rc_comp_ack_upto(qp, psn, now);
		if (qp->state != MR_QPS_ERR && qp->sq_head != qp->sq_tail)
			rc_comp_retry(qp);
		return;
	case MR_NAK_INVALID_REQ:
		qp->stats.inv_req_naks_rcvd++;
		break;
	case MR_NAK_REM_ACCESS_ERR:
		qp->stats.rem_access_naks_rcvd++;
		break;
	case MR_NAK_REM_OP_ERR:
	case MR_NAK_INVALID_RD_REQ:
		break;
	default:
		qp->stats.dropped++;
		return;
	}
	if (mr_psn_cmp(psn, qp->comp.psn) < 0)
		return;
	/* IBA 9.7.5.2.2-9.7.5.2.5: fatal NAKs complete the WQE in error; QP goes to ERR. */
	rc_comp_ack_upto(qp, psn, now);
	switch (syn & 0x1f) {
	case MR_NAK_INVALID_REQ:
		rc_comp_error(qp, MR_WC_REM_INV_REQ_ERR);
		break;
	case MR_NAK_REM_ACCESS_ERR:
		rc_comp_error(qp, MR_WC_REM_ACCESS_ERR);
		break;
	case MR_NAK_REM_OP_ERR:
		rc_comp_error(qp, MR_WC_REM_OP_ERR);
		break;
	default:
		rc_comp_error(qp, MR_WC_REM_INV_RD_REQ_ERR);
		break;
	}
}

/* Scatter n bytes at message offset off into the WQE's resolved SGEs. */
static void rc_scatter(const struct rc_swqe *w, uint32_t off, const uint8_t *src, uint32_t n)
{
	for (uint32_t i = 0; i < w->wr.num_sge && n > 0; i++) {
		uint32_t l = w->wr.sg_list[i].length, take;

		if (off >= l) {
			off -= l;
			continue;
		}
		take = l - off < n ? l - off : n;
		memcpy(w->host[i] + off, src, take);
		src += take;
		n -= take;
		off = 0;
	}
}

static void rc_comp_read(struct mr_qp *qp, const struct mr_pkt *pkt, uint64_t now)
{
	uint32_t psn = pkt->hdr.psn, mtu = rc_mtu(qp), off, want;
	uint8_t op = pkt->hdr.opcode;
	struct rc_swqe *w;
	bool lost, last;

	lost = rc_comp_ack_upto(qp, psn, now);
	if (qp->state == MR_QPS_ERR)
		return;
	w = qp->sq_head != qp->sq_tail ? rc_sq_at(qp, qp->sq_head) : NULL;
	if (w == NULL || !w->psn_valid || w->wr.opcode != MR_WR_RDMA_READ ||
	    psn != qp->comp.psn || lost) {
		if (lost || mr_psn_cmp(psn, qp->comp.psn) > 0)
			rc_comp_implied_nak(qp);
		else
			qp->stats.dropped++; /* duplicate response */
		return;
	}
	off = ((psn - w->first_psn) & MR_PSN_MASK) * mtu;
	want = w->len - off < mtu ? w->len - off : mtu;
	last = psn == w->last_psn;
	/* IBA 9.8.3: response opcodes and lengths must follow the READ's shape, else it is a bad
	 * response; a re-issued READ restarts with FIRST mid-message, so FIRST/MIDDLE are alike. */
	if (pkt->paylen != want ||
	    (last != (op == MR_OP_RC_READ_RESPONSE_LAST || op == MR_OP_RC_READ_RESPONSE_ONLY))) {
		rc_comp_error(qp, MR_WC_BAD_RESP_ERR);
		return;
	}
	rc_scatter(w, off, pkt->payload, want);
	qp->comp.psn = mr_psn_add(psn, 1);
	if (last)
		rc_comp_complete_head(qp, MR_WC_SUCCESS);
	rc_comp_progress(qp, now);
}

static void rc_comp_atomic(struct mr_qp *qp, const struct mr_pkt *pkt, uint64_t now)
{
	uint32_t psn = pkt->hdr.psn;
	struct rc_swqe *w;
	bool lost;

	lost = rc_comp_ack_upto(qp, psn, now);
	if (qp->state == MR_QPS_ERR)
		return;
	w = qp->sq_head != qp->sq_tail ? rc_sq_at(qp, qp->sq_head) : NULL;
	if (w == NULL || !w->psn_valid || psn != qp->comp.psn || lost ||
	    (w->wr.opcode != MR_WR_ATOMIC_CMP_AND_SWP &&
	     w->wr.opcode != MR_WR_ATOMIC_FETCH_AND_ADD)) {
		if (lost || mr_psn_cmp(psn, qp->comp.psn) > 0)
			rc_comp_implied_nak(qp);
		else
			qp->stats.dropped++;
		return;
	}
	/* IBA 9.4.5: the original remote value lands in the local 8-byte buffer. */
	memcpy(w->host[0], &pkt->hdr.atmack, sizeof(pkt->hdr.atmack));
	qp->comp.psn = mr_psn_add(psn, 1);
	rc_comp_complete_head(qp, MR_WC_SUCCESS);
	rc_comp_progress(qp, now);
}

void rc_comp_rx(struct mr_qp *qp, const struct mr_pkt *pkt, uint64_t now)
{
	uint8_t op = pkt->hdr.opcode;

	if (qp->state != MR_QPS_RTS && qp->state != MR_QPS_SQD) {
		qp->stats.dropped++;
		return;
	}
	/* A response for a PSN never sent is bogus (a "ghost" ACK, IBA 9.7.5.1): drop it. */
	if (mr_psn_cmp(pkt->hdr.psn, qp->req.psn_max) >= 0) {
		qp->stats.dropped++;
		return;
	}
	switch (op) {
	case MR_OP_RC_ACK:
		rc_comp_nak(qp, pkt, now);
		break;
	case MR_OP_RC_ATOMIC_ACK:
		rc_comp_atomic(qp, pkt, now);
		break;
	default:
		rc_comp_read(qp, pkt, now);
		break;
	}
}
