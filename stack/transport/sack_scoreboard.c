/* SPDX-License-Identifier: MIT
 * SACK scoreboard: per request PSN, what the requester knows (sent, acknowledged, done, lost,
 * resent) and what is in flight; and, at the responder, the SACK bitmap from the first hole
 * (docs/metaroce-wire.md SACKETH; the scoreboard follows RFC 6675's model).
 *
 * Spurious retransmission (counted in mr_qp_stats.spurious_retransmits): a resent packet whose
 * first acknowledgement arrives in an ACK that echoes a timestamp older than the resend. The
 * ACK was triggered by a packet sent before the resend, so the original copy had already
 * reached the responder (the Eifel test, RFC 3522, on MRETH.ts). The responder's
 * duplicate_requests counts the other end of the same event.
 */
#include "mrt_internal.h"

bool mrt_sb_in_flight(const struct mr_qp *qp, uint32_t psn)
{
	const struct mrt_req *r = &qp->mrt->req;

	return mr_psn_cmp(psn, r->una) >= 0 && mr_psn_cmp(psn, r->nxt) < 0;
}

bool mrt_txe_is_rd_atomic(const struct mr_qp *qp, const struct mrt_txe *e)
{
	return rc_wr_is_rd_atomic(rc_sq_at(qp, e->wqe)->wr.opcode);
}

void mrt_sb_pipe_out(struct mr_qp *qp, struct mrt_txe *e)
{
	struct mrt_req *r = &qp->mrt->req;

	if (!(e->flags & MRT_TX_PIPE))
		return;
	e->flags &= (uint8_t)~MRT_TX_PIPE;
	r->pipe--;
	r->pipe_bytes -= mrt_txe_is_rd_atomic(qp, e) ? 0 : e->len;
}

static uint32_t slot_of(const struct mrt_req *r, const struct mrt_txe *e)
{
	return (uint32_t)(e - r->sb);
}

static void order_unlink(struct mrt_req *r, struct mrt_txe *e)
{
	if (e->tprev != MRT_NIL)
		r->sb[e->tprev].tnext = e->tnext;
	else
		r->t_head = e->tnext;
	if (e->tnext != MRT_NIL)
		r->sb[e->tnext].tprev = e->tprev;
	else
		r->t_tail = e->tprev;
	e->tprev = e->tnext = MRT_NIL;
}

void mrt_sb_sent_order(struct mr_qp *qp, struct mrt_txe *e)
{
	struct mrt_req *r = &qp->mrt->req;
	uint32_t i = slot_of(r, e);

	if (e->flags & MRT_TX_DONE)
		return; /* nothing left to detect: never on the list */
	if (e->flags & MRT_TX_SENT)
		order_unlink(r, e); /* a resend: it leaves its old place */
	e->tprev = r->t_tail;
	e->tnext = MRT_NIL;
	if (r->t_tail != MRT_NIL)
		r->sb[r->t_tail].tnext = i;
	else
		r->t_head = i;
	r->t_tail = i;
}

/* e becomes DONE: off the sent-order list, where every SENT entry not DONE is. */
static void mrt_sb_finish(struct mr_qp *qp, struct mrt_txe *e)
{
	if ((e->flags & (MRT_TX_SENT | MRT_TX_DONE)) == MRT_TX_SENT)
		order_unlink(&qp->mrt->req, e);
	e->flags |= MRT_TX_DONE;
}

static void mrt_sb_unlose(struct mr_qp *qp, struct mrt_txe *e)
{
	if (e->flags & MRT_TX_LOST) {
		e->flags &= (uint8_t)~MRT_TX_LOST;
		qp->mrt->req.nlost--;
	}
}

static bool mrt_ts_before(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

bool mrt_sb_ack(struct mr_qp *qp, uint32_t psn, uint32_t echo_ts, uint64_t now, uint32_t *bytes)
{
	struct mrt_req *r = &qp->mrt->req;
	struct mrt_txe *e = mrt_sb(qp, psn);

	if (!(e->flags & MRT_TX_SENT) || (e->flags & MRT_TX_ACKED))
		return false;
	e->flags |= MRT_TX_ACKED;
	if (e->flags & MRT_TX_LOST) {
		/* Declared lost, arrived before we resent it: reordering beyond the window, or,
		 * after a timeout, proof that it was spurious (rack.c mrt_rto_eifel). */
		if (r->eifel_pending)
			r->eifel_hit = true;
		else
			mrt_rack_spurious(qp, now, e->xmit_ts);
	} else if ((e->flags & MRT_TX_RETX) && mrt_ts_before(echo_ts, mrt_ts(e->xmit_ts))) {
		/* The copy before the resend is the one that arrived. */
		e->flags |= MRT_TX_SPUR;
		qp->stats.spurious_retransmits++;
		mrt_rack_spurious(qp, now, e->prev_ts);
	}
	mrt_sb_unlose(qp, e);
	mrt_sb_pipe_out(qp, e);
	if (mr_psn_cmp(psn, r->hi_acked) >= 0)
		r->hi_acked = mr_psn_add(psn, 1);
	if (!mrt_txe_is_rd_atomic(qp, e)) {
		*bytes += e->len;
		mrt_sb_finish(qp, e);
		mrt_rack_update(qp, e, psn, now);
	}
	return true;
}

/* A READ chunk got all its responses or an atomic its result. */
void mrt_sb_done(struct mr_qp *qp, uint32_t psn, uint64_t now)
{
	struct mrt_req *r = &qp->mrt->req;
	struct mrt_txe *e = mrt_sb(qp, psn);

	if (e->flags & MRT_TX_DONE)
		return;
	e->flags |= MRT_TX_ACKED;
	mrt_sb_finish(qp, e);
	mrt_sb_unlose(qp, e);
	mrt_sb_pipe_out(qp, e);
	if (mr_psn_cmp(psn, r->hi_acked) >= 0)
		r->hi_acked = mr_psn_add(psn, 1);
	if (r->rd_out > 0)
		r->rd_out--;
	mrt_rack_update(qp, e, psn, now);
}

void mrt_sb_lost(struct mr_qp *qp, uint32_t psn, uint64_t now)
{
	struct mrt_req *r = &qp->mrt->req;
	struct mrt_txe *e = mrt_sb(qp, psn);

	if (!(e->flags & MRT_TX_SENT) || (e->flags & (MRT_TX_DONE | MRT_TX_LOST)))
		return;
	e->flags |= MRT_TX_LOST;
	if (r->nlost == 0 || mr_psn_cmp(psn, r->retx_hint) < 0)
		r->retx_hint = psn;
	r->nlost++;
	mrt_sb_pipe_out(qp, e);
	/* A READ chunk whose request arrived lost responses, which took the reverse path. */
	if (!(e->flags & MRT_TX_ACKED) && !r->in_rto) {
		mrt_path_loss(qp, e->path, now);
		mrt_cc_loss(qp, now, e->len, e->path);
	}
}

/* The packet was presumed lost but not resent yet (RFC 4015 response to a spurious timeout):
 * it counts in flight again, as before the declaration. */
bool mrt_sb_unlost(struct mr_qp *qp, uint32_t psn)
{
	struct mrt_req *r = &qp->mrt->req;
	struct mrt_txe *e = mrt_sb(qp, psn);

	if (!(e->flags & MRT_TX_LOST) || (e->flags & MRT_TX_DONE))
		return false;
	mrt_sb_unlose(qp, e);
	if (!(e->flags & MRT_TX_PIPE)) {
		e->flags |= MRT_TX_PIPE;
		r->pipe++;
		r->pipe_bytes += mrt_txe_is_rd_atomic(qp, e) ? 0 : e->len;
	}
	return true;
}

void mrt_rx_sack(const struct mr_qp *qp, uint8_t bitmap[16])
{
	const struct mrt_resp *s = &qp->mrt->resp;

	for (unsigned int i = 0; i < 16; i++)
		bitmap[i] = 0;
	for (uint32_t i = 0; i < MRT_SACK_BITS; i++)
		if (s->rflags[(s->nxt + i) & (MRT_WIN - 1)] & MRT_RX_RCVD)
			bitmap[i / 8] |= (uint8_t)(0x80u >> (i % 8)); /* bit 0 = MSB of byte 0 */
}
