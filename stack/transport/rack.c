/* SPDX-License-Identifier: MIT
 * Time-based loss detection for MetaRoCE (RACK-TLP, RFC 8985), RTT estimation (RFC 6298 on
 * echoed MRETH timestamps) and the retransmission timeout with exponential backoff.
 *
 * Spraying reorders packets by design, so a gap in the SACK bitmap is not a loss: a packet is
 * lost only when a packet *sent after it* has been delivered and the reorder window has also
 * passed since it was sent (RFC 8985 6.2). The window is reo_mult * min_rtt / 4 (at least
 * MRT_REO_MIN_NS, at most SRTT), or the measured reordering extent if larger; both grow on
 * spurious-retransmission evidence (6.2.4's D-SACK rule, here the Eifel test in
 * sack_scoreboard.c) and reset after 16 recovery rounds without such evidence.
 */
#include "mrt_internal.h"

/* RFC 6298 2.4 adds G, the clock granularity, to the variance term: RTO = SRTT + max(G,
 * 4*RTTVAR). For software endpoints the granularity that matters is the hosts' scheduling: a
 * poller descheduled for a time slice delays every ACK by that much (RTT p50 ~200 us, p99
 * several ms on a busy 2-core host), at intervals far longer than RTTVAR's memory of a few
 * samples, so 4*RTTVAR alone times out spuriously at every stall. G is therefore learnt: the
 * largest excursion of an RTT sample above min RTT seen recently (after a spurious timeout,
 * twice the late sample: mrt_rto_eifel), halving every MRT_GRAN_HALFLIFE smoothed RTTs (at
 * least MRT_GRAN_ACKTO_MULT local ACK timeouts) without a larger one. It is ~0 on a simulated
 * or unloaded fabric (the RTO stays at SRTT + 4*RTTVAR there) and grows with the observed
 * stalls, so the floor scales with the measured variability, not with a constant. */
static void mrt_gran_note(const struct mr_qp *qp, struct mrt_req *r, uint64_t exc, uint64_t now)
{
	uint64_t hl = MRT_GRAN_HALFLIFE * (r->srtt > 0 ? r->srtt : 1), n;
	uint64_t ack_to = mr_ack_timeout_ns(qp->attr.timeout);

	/* Host stalls recur on the scheduler's time scale, not the RTT's: a busy requester's
	 * srtt of ~10 us would forget a 5 ms stall within 40 ms. The memory is therefore also
	 * at least MRT_GRAN_ACKTO_MULT local ACK timeouts (IBA 9.7.6.1.3): as long as the
	 * application told the QP a response may take. */
	if (ack_to != UINT64_MAX && ack_to * MRT_GRAN_ACKTO_MULT > hl)
		hl = ack_to * MRT_GRAN_ACKTO_MULT;

	if (r->gran > 0 && now > r->gran_ts && now - r->gran_ts >= hl) {
		n = (now - r->gran_ts) / hl;
		r->gran = n >= 64 ? 0 : r->gran >> n;
		r->gran_ts += n * hl;
	}
	if (exc >= r->gran) {
		r->gran = exc;
		r->gran_ts = now;
	}
}

void mrt_rtt_sample(struct mr_qp *qp, uint64_t rtt, uint64_t now)
{
	struct mrt_req *r = &qp->mrt->req;

	if (!r->have_rtt) {
		r->srtt = rtt;
		r->rttvar = rtt / 2;
		r->min_rtt = rtt;
		r->have_rtt = true;
		r->gran = 0;
		r->gran_ts = now;
		return;
	}
	/* RFC 6298 2.3: beta = 1/4, alpha = 1/8. */
	r->rttvar = (3 * r->rttvar + (r->srtt > rtt ? r->srtt - rtt : rtt - r->srtt)) / 4;
	r->srtt = (7 * r->srtt + rtt) / 8;
	if (rtt < r->min_rtt)
		r->min_rtt = rtt;
	mrt_gran_note(qp, r, rtt - r->min_rtt, now);
}

/* Eifel detection (RFC 3522 with timestamps): the first ACK of new data after a timeout
 * echoes the MRETH.ts of the packet that triggered it; older than the timeout means an
 * original transmission arrived, so the timeout was spurious (a late ACK, not a loss).
 * Response (RFC 4015 3.2): restore the congestion state from before the timeout, adapt the
 * RTO so that a delay this long does not time out again (here: G covers the late sample's
 * whole RTT), and resume transmission of new data: the PSNs the timeout marked lost and that
 * were not resent yet are in flight again, not retransmitted. */
bool mrt_rto_eifel(struct mr_qp *qp, uint32_t echo_ts, uint64_t rtt, uint64_t now)
{
	struct mrt_req *r = &qp->mrt->req;

	if (!r->eifel_pending)
		return false;
	r->eifel_pending = false;
	/* Either evidence suffices: the echo is older than the timeout, or a PSN the timeout
	 * marked lost was acknowledged while still waiting for its resend. */
	if (!r->eifel_hit && (int32_t)(echo_ts - r->eifel_ts) >= 0) {
		r->cc_undo_valid = false; /* a genuine timeout: keep the response */
		return false;
	}
	mrt_cc_undo_timeout(qp);
	/* RFC 4015 3.2 sets SRTT = max(SRTT, sample), RTTVAR = max(RTTVAR, sample / 2): an RTO of
	 * at least three times the late sample. The same bound through G, which decays slowly,
	 * instead of through the estimators, which forget it within a few samples. */
	if (2 * rtt > r->gran) {
		r->gran = 2 * rtt;
		r->gran_ts = now;
	}
	for (uint32_t psn = r->una; psn != r->nxt; psn = mr_psn_add(psn, 1))
		mrt_sb_unlost(qp, psn);
	return true;
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
	uint64_t w = 0, x;

	if (r->have_rtt) {
		w = r->reo_mult * r->min_rtt / 4;
		if (w > r->srtt)
			w = r->srtt;
	}
	/* RFC 8985 6.2 caps the window at SRTT, but spraying can delay a packet by more than
	 * one RTT (a slow path): once a spurious declaration has measured how late packets
	 * really arrive, the window covers that extent (+1/8), as Linux RACK's reo_wnd steps do
	 * per D-SACK round, in one step instead of one min_rtt/4 per round; bounded by
	 * MRT_REO_EXT_MAX_NS so that a real loss is still repaired well before the RTO. */
	if (r->reo_extent > 0) {
		x = r->reo_extent + r->reo_extent / 8;
		if (x > MRT_REO_EXT_MAX_NS)
			x = MRT_REO_EXT_MAX_NS;
		if (x > w)
			w = x;
	}
	return w > MRT_REO_MIN_NS ? w : MRT_REO_MIN_NS;
}

/* RFC 8985 6.2.4: widen the window on evidence of a spurious loss declaration (our Eifel test
 * stands in for D-SACK): reo_wnd_mult at most once per round trip, and the measured lateness of
 * the copy that did arrive (sent at sent_ts, its ACK here at now, one min RTT being normal).
 * Either persists for 16 rounds of loss declarations without new evidence. */
void mrt_rack_spurious(struct mr_qp *qp, uint64_t now, uint64_t sent_ts)
{
	struct mrt_req *r = &qp->mrt->req;

	if (r->reo_mult < MRT_REO_MULT_MAX && now >= r->reo_last_inc + r->srtt) {
		r->reo_mult++;
		r->reo_last_inc = now;
	}
	if (r->have_rtt && sent_ts != 0 && now > sent_ts + r->min_rtt &&
	    now - sent_ts - r->min_rtt > r->reo_extent)
		r->reo_extent = now - sent_ts - r->min_rtt;
	r->reo_persist = 16;
}

/* Remember a resend of psn whose previous copy left at prev_ts. */
void mrt_rack_resent(struct mr_qp *qp, uint32_t psn, uint64_t prev_ts)
{
	struct mrt_req *r = &qp->mrt->req;
	struct mrt_rtx_rec *x = &r->rtx_recent[r->rtx_head++ % MRT_RTX_RECENT];

	x->psn = psn;
	x->ts = mrt_ts(prev_ts);
	x->valid = true;
}

/* D-SACK stand-in (RFC 2883, used by RFC 8985 6.2.4 and RFC 3708): the responder ACKs a
 * duplicate at once and echoes its timestamp, so an ACK echoing the timestamp of a copy that was
 * later resent proves that copy arrived: the resend was spurious. This catches what the Eifel
 * test cannot, a resend that overtook its late original. A timestamp tick shared with another
 * packet only matters if that packet, too, triggered an ACK: rare, and it only widens the
 * reorder window. */
void mrt_rack_dup_echo(struct mr_qp *qp, uint32_t echo_ts, uint64_t now)
{
	struct mrt_req *r = &qp->mrt->req;

	for (uint32_t i = 0; i < MRT_RTX_RECENT; i++) {
		struct mrt_rtx_rec *x = &r->rtx_recent[i];
		struct mrt_txe *e;

		if (!x->valid || x->ts != echo_ts)
			continue;
		x->valid = false;
		e = mrt_sb(qp, x->psn);
		if (mrt_psn_dist(r->nxt, x->psn) == 0 || mrt_psn_dist(r->nxt, x->psn) >= MRT_WIN ||
		    !(e->flags & MRT_TX_RETX) || (e->flags & MRT_TX_SPUR) ||
		    mrt_ts(e->xmit_ts) == echo_ts)
			continue;
		e->flags |= MRT_TX_SPUR;
		qp->stats.spurious_retransmits++;
		mrt_rack_spurious(qp, now, e->prev_ts);
	}
}

void mrt_rack_detect(struct mr_qp *qp, uint64_t now)
{
	struct mrt_req *r = &qp->mrt->req;
	uint64_t reo = mrt_reo_wnd(qp);
	bool lost = false;

	r->rack_deadline = UINT64_MAX;
	if (!r->rack_valid)
		return;
	/* Oldest transmission first (the sent-order list, mrt_internal.h): a packet sent after
	 * the newest delivered one is not lost yet (RFC 8985 6.2 step 5), nor is any sent after
	 * it; the first one not yet overdue gives the earliest deadline, and every later one is
	 * due later still (the same RTT + reorder window on a later send time). */
	for (uint32_t i = r->t_head, next; i != MRT_NIL; i = next) {
		struct mrt_txe *e = &r->sb[i];
		/* on the list: una <= psn < nxt, less than a ring apart */
		uint32_t psn = mr_psn_add(r->una, (i - r->una) & (MRT_WIN - 1));
		uint64_t dl;

		next = e->tnext;
		r->rack_walked++;
		/* Sent at the same time (one burst), the higher PSN counts as sent later (RFC
		 * 8985 6.2, the end sequence breaks ties): within a burst the list holds the
		 * resends, then new data, in PSN order (mrt_req_tx), so this is also where
		 * the packets sent after the newest delivered one begin. */
		if (e->xmit_ts > r->rack_xmit_ts ||
		    (e->xmit_ts == r->rack_xmit_ts && mr_psn_cmp(psn, r->rack_psn) >= 0))
			break;
		if (e->flags & MRT_TX_LOST)
			continue; /* waiting for its resend */
		/* Only PSNs below the highest acknowledged one can have a later-sent packet
		 * delivered (a resend of a higher PSN is itself found lost by TLP or RTO). */
		if (mr_psn_cmp(psn, r->hi_acked) >= 0)
			continue;
		if ((e->flags & MRT_TX_ACKED) &&
		    (!r->rd_rack_valid || mr_psn_cmp(psn, r->rd_rack_psn) >= 0))
			continue; /* READ responses still streaming */
		dl = e->xmit_ts + r->rack_rtt + reo;
		if (now < dl) {
			r->rack_deadline = dl;
			break;
		}
		mrt_sb_lost(qp, psn, now);
		lost = true;
	}
	if (lost) {
		/* RFC 8985 6.2.4: the widened window persists for 16 loss-recovery rounds (at
		 * most one per SRTT here) without spurious evidence, then resets. */
		if (r->reo_persist > 0 && now >= r->reo_last_dec + r->srtt) {
			r->reo_last_dec = now;
			if (--r->reo_persist == 0) {
				r->reo_mult = 1;
				r->reo_extent = 0;
			}
		}
		rc_sched_req(qp);
	}
}

uint64_t mrt_rto(const struct mr_qp *qp)
{
	const struct mrt_req *r = &qp->mrt->req;
	uint64_t ceil = mr_ack_timeout_ns(qp->attr.timeout), est;

	if (ceil == UINT64_MAX || !r->have_rtt)
		return ceil; /* IBA C9-141: timeout 0 means no RTO at all */
	/* RFC 6298 2.3: SRTT + max(G, 4*RTTVAR), G the scheduling granularity above. */
	est = r->srtt + (r->gran > 4 * r->rttvar ? r->gran : 4 * r->rttvar);
	if (est < MRT_RTO_MIN_NS)
		est = MRT_RTO_MIN_NS;
	return est < ceil ? est : ceil;
}

/* The backed-off RTO (RFC 6298 5.5) is capped at max(RTO, Local ACK Timeout /
 * MRT_RTO_PROBES_PER_ACKTO). Exponential backoff protects a congested path from repeated
 * resends, but here the failure budget is wall time, (retry_cnt + 1) Local ACK Timeouts
 * (mrt_on_rto), and an uncapped backoff spends it on a handful of probes: a loss burst that
 * keeps hitting the one outstanding packet (per-packet Gilbert-Elliott keeps a lone probe in
 * the bad state with p = 1 - 1/burst, 0.75 at mean burst 4) then fails the QP with ~0.75^10
 * probability. IBA's own RC retries at a fixed Local ACK Timeout (9.7.6.1.3) and IRN uses fixed
 * RTOs with no backoff (Mittal et al., SIGCOMM'18 3.3); the cap keeps at least
 * MRT_RTO_PROBES_PER_ACKTO probes per Local ACK Timeout, and a repeated timeout resends only
 * the oldest packet (mrt_on_rto), so a dead or stalled peer costs one packet per probe. */
static uint64_t mrt_rto_deadline(const struct mr_qp *qp, uint64_t now)
{
	uint64_t rto = mrt_rto(qp), ack_to = mr_ack_timeout_ns(qp->attr.timeout), cap, iv;
	uint32_t b = qp->mrt->req.backoff;

	if (rto == UINT64_MAX)
		return UINT64_MAX;
	if (b > MRT_RTO_MAX_SHIFT)
		b = MRT_RTO_MAX_SHIFT;
	iv = rto << b;
	cap = ack_to == UINT64_MAX ? UINT64_MAX : ack_to / MRT_RTO_PROBES_PER_ACKTO;
	if (cap < rto)
		cap = rto;
	return now + (iv < cap ? iv : cap);
}

/* Arm RTO and TLP for what is outstanding. progress: new data was acknowledged (restart). */
void mrt_arm_timers(struct mr_qp *qp, uint64_t now, bool progress)
{
	struct mrt_req *r = &qp->mrt->req;
	uint64_t pto;

	if (progress || r->una == r->nxt)
		r->progress_ts = now; /* the peer's silence (mrt_on_rto) counts from here */
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
	/* IBA 9.7.6.1.3: retry_cnt consecutive timeouts, then a retry-exceeded error. The
	 * application sized that budget in Local ACK Timeouts (C9-141: 4.096 us x 2^timeout);
	 * MetaRoCE's RTO adapts far below it, so its timeouts count against retry_cnt only
	 * once the peer has also been silent for (retry_cnt + 1) Local ACK Timeouts: a host
	 * stall fails the QP no sooner than it would fail plain RC. */
	if (r->retry_left == 0 &&
	    now - r->progress_ts >= (uint64_t)(qp->attr.retry_cnt + 1) *
				    mr_ack_timeout_ns(qp->attr.timeout)) {
		qp->stats.retry_exceeded++;
		rc_sq_at(qp, qp->sq_head)->status = MR_WC_RETRY_EXC_ERR;
		rc_qp_to_err(qp);
		return;
	}
	qp->stats.retry_seqs++;
	if (r->retry_left > 0)
		r->retry_left--;
	/* RFC 4015: remember the first timeout of a series for the Eifel test (mrt_rto_eifel). */
	if (r->backoff == 0) {
		r->eifel_pending = true;
		r->eifel_hit = false;
		r->eifel_ts = mrt_ts(now);
		r->cc_undo_valid = false; /* mrt_cc_timeout saves the state from before this one */
	}
	/* The first timeout of a series presumes everything outstanding lost (RFC 8985 8),
	 * resent selectively: entries SACKed meanwhile stay acknowledged. A repeated one means
	 * those resends went unanswered too: only the oldest unacknowledged packet goes again
	 * (RFC 6298 5.4), as a probe that ignores the window like a TLP (RFC 8985 7.3); once
	 * it is answered, TLP and RACK account for the rest. */
	if (r->backoff == 0) {
		r->in_rto = true;
		for (uint32_t psn = r->una; psn != r->nxt; psn = mr_psn_add(psn, 1))
			mrt_sb_lost(qp, psn, now);
		r->in_rto = false;
	} else {
		r->rto_probe = true;
	}
	if (r->backoff < MRT_RTO_MAX_SHIFT)
		r->backoff++;
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
