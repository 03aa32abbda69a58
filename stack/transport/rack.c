/* SPDX-License-Identifier: MIT
 * Time-based loss detection for MetaRoCE (RACK-TLP, RFC 8985), RTT estimation (RFC 6298 on
 * echoed MRETH timestamps) and the retransmission timeout with exponential backoff.
 *
 * Spraying reorders packets by design, so a gap in the SACK bitmap is not a loss: a packet is
 * lost only when a packet *sent after it* has been delivered and the reorder window has also
 * passed since it was sent (RFC 8985 6.2). The window is reo_mult * min_rtt / 4 (at least
 * MRT_REO_MIN_NS, at most SRTT); reo_mult grows on spurious-retransmission evidence (6.2.4's
 * D-SACK rule, here the Eifel test in sack_scoreboard.c) and resets after 16 clean recoveries.
 */
#include "mrt_internal.h"

void mrt_rtt_sample(struct mr_qp *qp, uint64_t rtt)
{
	struct mrt_req *r = &qp->mrt->req;

	if (!r->have_rtt) {
		r->srtt = rtt;
		r->rttvar = rtt / 2;
		r->min_rtt = rtt;
		r->have_rtt = true;
		return;
	}
	/* RFC 6298 2.3: beta = 1/4, alpha = 1/8. */
	r->rttvar = (3 * r->rttvar + (r->srtt > rtt ? r->srtt - rtt : rtt - r->srtt)) / 4;
	r->srtt = (7 * r->srtt + rtt) / 8;
	if (rtt < r->min_rtt)
		r->min_rtt = rtt;
}

/* RFC 8985 6.2 step 2: remember the most recently sent packet that was delivered. */
void mrt_rack_update(struct mr_qp *qp, const struct mrt_txe *e, uint32_t psn, uint64_t now)
{
	struct mrt_req *r = &qp->mrt->req;
	uint64_t rtt = now >= e->xmit_ts ? now - e->xmit_ts : 0;

	/* A resent packet acknowledged sooner than min_rtt after the resend was the original. */
	if ((e->flags & MRT_TX_RETX) && r->have_rtt && rtt < r->min_rtt)
		return;
	if (!r->rack_valid || e->xmit_ts > r->rack_xmit_ts ||
	    (e->xmit_ts == r->rack_xmit_ts && mr_psn_cmp(psn, r->rack_psn) > 0)) {
		r->rack_xmit_ts = e->xmit_ts;
		r->rack_psn = psn;
		r->rack_rtt = rtt;
		r->rack_valid = true;
	}
	if (mrt_txe_is_rd_atomic(qp, e) && (e->flags & MRT_TX_DONE) &&
	    (!r->rd_rack_valid || mr_psn_cmp(psn, r->rd_rack_psn) > 0)) {
		r->rd_rack_psn = psn;
		r->rd_rack_valid = true;
	}
}

uint64_t mrt_reo_wnd(const struct mr_qp *qp)
{
	const struct mrt_req *r = &qp->mrt->req;
	uint64_t w = 0;

	if (r->have_rtt) {
		w = r->reo_mult * r->min_rtt / 4;
		if (w > r->srtt)
			w = r->srtt;
	}
	return w > MRT_REO_MIN_NS ? w : MRT_REO_MIN_NS;
}

/* RFC 8985 6.2.4: widen the window on evidence of a spurious loss declaration, at most once
 * per round trip. */
void mrt_rack_spurious(struct mr_qp *qp, uint64_t now)
{
	struct mrt_req *r = &qp->mrt->req;

	if (r->reo_mult < MRT_REO_MULT_MAX && now >= r->reo_last_inc + r->srtt) {
		r->reo_mult++;
		r->reo_last_inc = now;
	}
	r->reo_persist = 16;
}

void mrt_rack_detect(struct mr_qp *qp, uint64_t now)
{
	struct mrt_req *r = &qp->mrt->req;
	uint64_t reo = mrt_reo_wnd(qp);
	bool lost = false;

	r->rack_deadline = UINT64_MAX;
	if (!r->rack_valid)
		return;
	/* Only PSNs below the highest acknowledged one can have a later-sent packet delivered
	 * (a resend of a higher PSN is itself found lost by TLP or RTO). */
	for (uint32_t psn = r->una; psn != r->hi_acked; psn = mr_psn_add(psn, 1)) {
		struct mrt_txe *e = mrt_sb(qp, psn);
		uint64_t dl;

		if ((e->flags & (MRT_TX_DONE | MRT_TX_LOST)) || !(e->flags & MRT_TX_SENT))
			continue;
		if (e->xmit_ts > r->rack_xmit_ts ||
		    (e->xmit_ts == r->rack_xmit_ts && mr_psn_cmp(psn, r->rack_psn) >= 0))
			continue;
		if ((e->flags & MRT_TX_ACKED) &&
		    (!r->rd_rack_valid || mr_psn_cmp(psn, r->rd_rack_psn) >= 0))
			continue; /* READ responses still streaming */
		dl = e->xmit_ts + r->rack_rtt + reo;
		if (now >= dl) {
			mrt_sb_lost(qp, psn, now);
			lost = true;
		} else if (dl < r->rack_deadline) {
			r->rack_deadline = dl;
		}
	}
	if (lost) {
		if (r->reo_persist > 0 && --r->reo_persist == 0)
			r->reo_mult = 1;
		rc_sched_req(qp);
	}
}

uint64_t mrt_rto(const struct mr_qp *qp)
{
	const struct mrt_req *r = &qp->mrt->req;
	uint64_t ceil = mr_ack_timeout_ns(qp->attr.timeout), est;

	if (ceil == UINT64_MAX || !r->have_rtt)
		return ceil; /* IBA C9-141: timeout 0 means no RTO at all */
	est = r->srtt + 4 * r->rttvar;
	if (est < MRT_RTO_MIN_NS)
		est = MRT_RTO_MIN_NS;
	return est < ceil ? est : ceil;
}

static uint64_t mrt_rto_deadline(const struct mr_qp *qp, uint64_t now)
{
	uint64_t rto = mrt_rto(qp);
	uint32_t b = qp->mrt->req.backoff;

	if (rto == UINT64_MAX)
		return UINT64_MAX;
	if (b > MRT_RTO_MAX_SHIFT)
		b = MRT_RTO_MAX_SHIFT;
	return now + (rto << b);
}

/* Arm RTO and TLP for what is outstanding. progress: new data was acknowledged (restart). */
void mrt_arm_timers(struct mr_qp *qp, uint64_t now, bool progress)
{
	struct mrt_req *r = &qp->mrt->req;
	uint64_t pto;

	if (r->una == r->nxt || r->rnr_wait) {
		r->rto_deadline = r->tlp_deadline = UINT64_MAX;
		r->tlp_out = false;
		rc_timer_update(qp);
		return;
	}
	if (progress || r->rto_deadline == UINT64_MAX)
		r->rto_deadline = mrt_rto_deadline(qp, now);
	if (!r->tlp_out && (progress || r->tlp_deadline == UINT64_MAX)) {
		/* RFC 8985 7.2: PTO = 2 SRTT, plus the peer's delayed-ACK time if only one
		 * packet is in flight; never later than the RTO. */
		pto = r->have_rtt ? 2 * r->srtt : MRT_TLP_INIT_NS;
		if (pto < MRT_TLP_MIN_NS)
			pto = MRT_TLP_MIN_NS;
		if (r->pipe <= 1)
			pto += MRT_DELACK_NS;
		r->tlp_deadline = now + pto < r->rto_deadline ? now + pto : UINT64_MAX;
	}
	rc_timer_update(qp);
}

static void mrt_on_rto(struct mr_qp *qp, uint64_t now)
{
	struct mrt_req *r = &qp->mrt->req;

	qp->stats.timeouts++;
	/* IBA 9.7.6.1.3: retry_cnt consecutive timeouts, then a retry-exceeded error. */
	if (r->retry_left == 0) {
		rc_sq_at(qp, qp->sq_head)->status = MR_WC_RETRY_EXC_ERR;
		rc_qp_to_err(qp);
		return;
	}
	r->retry_left--;
	if (r->backoff < MRT_RTO_MAX_SHIFT)
		r->backoff++;
	/* Everything outstanding is presumed lost (RFC 6298 5.4 / RFC 8985 8), resent
	 * selectively: entries SACKed meanwhile stay acknowledged. */
	r->in_rto = true;
	for (uint32_t psn = r->una; psn != r->nxt; psn = mr_psn_add(psn, 1))
		mrt_sb_lost(qp, psn, now);
	r->in_rto = false;
	mrt_cc_timeout(qp, now);
	r->tlp_fire = false;
	r->tlp_out = true; /* no probe until new data is acknowledged */
	r->tlp_deadline = UINT64_MAX;
	r->rto_deadline = mrt_rto_deadline(qp, now);
	rc_sched_req(qp);
}

void mrt_rack_on_timer(struct mr_qp *qp, uint64_t now)
{
	struct mrt_req *r = &qp->mrt->req;

	if (r->rnr_wait)
		return;
	if (r->rack_deadline <= now)
		mrt_rack_detect(qp, now);
	if (r->tlp_deadline <= now) {
		r->tlp_deadline = UINT64_MAX;
		if (r->una != r->nxt && !r->tlp_out) {
			r->tlp_fire = true; /* the next mr_ctx_tx sends the probe */
			rc_sched_req(qp);
		}
	}
	if (r->rto_deadline <= now) {
		r->rto_deadline = UINT64_MAX;
		if (r->una != r->nxt)
			mrt_on_rto(qp, now);
	}
}
