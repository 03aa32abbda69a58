/* SPDX-License-Identifier: MIT
 * MetaRoCE requester: segments send WQEs into self-describing packets (MRETH on every packet,
 * RETH in every WRITE packet), sprays them over the entropies, and recovers losses
 * selectively: SACK ACKs update the scoreboard, RACK/TLP/RTO (rack.c) declare losses, and only
 * lost PSNs are resent (a READ chunk re-requests only its missing byte range). Send WQEs
 * complete strictly in SQ order once every PSN up to their last is done (IBA 10.8.3.1).
 */
#include <string.h>

#include "mrt_internal.h"

static uint32_t mrt_mtu(const struct mr_qp *qp)
{
	return rc_mtu(qp);
}

/* Fill out for scoreboard entry e at psn. Returns the payload length. */
static uint32_t mrt_build(struct mr_qp *qp, uint32_t psn, struct mrt_txe *e, uint64_t now,
			  uint8_t mflags, struct mr_tx_pkt *out)
{
	const struct rc_swqe *w = rc_sq_at(qp, e->wqe);
	struct mr_roce_hdrs *h = &out->hdr;
	uint32_t mtu = mrt_mtu(qp);
	uint16_t path = mrt_path_pick(qp, now);

	rc_tx_reset(out);
	out->path = &qp->attr.path;
	out->udp_sport = mrt_udp_sport(qp->attr.path.udp_sport, path);
	h->pkey = 0xffff;
	h->dqpn = qp->attr.dest_qp_num;
	h->psn = psn;
	h->mreth.ver = 1;
	h->mreth.flags = mflags;
	h->mreth.path = (uint8_t)path;
	h->mreth.msg_seq = w->msg_seq;
	h->mreth.ts = mrt_ts(now);
	e->path = path;

	switch (w->wr.opcode) {
	case MR_WR_RDMA_READ: {
		uint32_t i0 = 0, i1 = e->rd_npkts - 1, start, end;

		/* Re-request only the missing span of the chunk (MRETH RETX). */
		while (i0 < e->rd_npkts && (e->rd_bits >> i0) & 1)
			i0++;
		while (i1 > i0 && (e->rd_bits >> i1) & 1)
			i1--;
		if (i0 >= e->rd_npkts)
			i0 = i1 = 0; /* all there: a probe asks again for the first packet */
		start = e->off + i0 * mtu;
		end = e->off + (i1 + 1) * mtu;
		if (end > e->off + e->len)
			end = e->off + e->len;
		h->opcode = mr_opcode_to_metaroce(MR_OP_RC_READ_REQUEST);
		h->reth.va = w->wr.rdma.remote_addr + start;
		h->reth.rkey = w->wr.rdma.rkey;
		h->reth.dlen = end - start;
		h->mreth.offset = start;
		h->mreth.msg_len = w->len;
		h->ackreq = true;
		return 0;
	}
	case MR_WR_ATOMIC_CMP_AND_SWP:
	case MR_WR_ATOMIC_FETCH_AND_ADD:
		h->opcode = mr_opcode_to_metaroce(w->wr.opcode == MR_WR_ATOMIC_CMP_AND_SWP ?
						  MR_OP_RC_CMP_SWAP : MR_OP_RC_FETCH_ADD);
		h->atmeth.va = w->wr.atomic.remote_addr;
		h->atmeth.rkey = w->wr.atomic.rkey;
		if (w->wr.opcode == MR_WR_ATOMIC_CMP_AND_SWP) {
			h->atmeth.swap_add = w->wr.atomic.swap;
			h->atmeth.cmp = w->wr.atomic.compare_add;
		} else {
			h->atmeth.swap_add = w->wr.atomic.compare_add;
		}
		h->ackreq = true;
		return 0;
	default: {
		bool first = e->off == 0, last = e->off + e->len >= w->len;
		bool write = w->wr.opcode == MR_WR_RDMA_WRITE ||
			     w->wr.opcode == MR_WR_RDMA_WRITE_WITH_IMM;

		h->opcode = mr_opcode_to_metaroce(rc_req_opcode(w->wr.opcode, first, last));
		h->mreth.offset = e->off;
		h->mreth.msg_len = w->len;
		if (write) { /* docs/metaroce-wire.md: RETH in every WRITE packet */
			h->reth.va = w->wr.rdma.remote_addr;
			h->reth.rkey = w->wr.rdma.rkey;
			h->reth.dlen = w->len;
		}
		if (last) {
			h->imm = w->wr.imm_data;
			h->ieth_rkey = w->wr.invalidate_rkey;
			h->se = (w->wr.send_flags & MR_SEND_SOLICITED) != 0 &&
				w->wr.opcode != MR_WR_RDMA_WRITE;
			h->ackreq = true;
		}
		out->niov = rc_req_gather(w, e->off, e->len, out->iov);
		out->paylen = e->len;
		return e->len;
	}
	}
}

/* Account a (re)transmission of e (built into out). */
static void mrt_sent(struct mr_qp *qp, struct mrt_txe *e, uint64_t now, uint32_t paylen,
		     struct mr_tx_pkt *out)
{
	struct mrt_req *r = &qp->mrt->req;

	e->xmit_ts = now;
	mrt_sb_sent_order(qp, e);
	e->flags |= MRT_TX_SENT;
	if (!(e->flags & MRT_TX_PIPE)) {
		e->flags |= MRT_TX_PIPE;
		r->pipe++;
		r->pipe_bytes += mrt_txe_is_rd_atomic(qp, e) ? 0 : e->len;
	}
	qp_cc_sent(qp, now, paylen, e->path);
	/* The delay signal must measure the fabric, not the responder's delayed ACK (Swift,
	 * SIGCOMM'20 3.1 separates host delay from fabric delay). When congestion control holds
	 * the next packet back (window full, or a pacing gap near the delayed-ACK time), no
	 * second packet comes to trigger the ACK: ask for it at once with AckReq (IBA 9.7.5.1.2;
	 * QUIC's ACK-frequency draft does the same with IMMEDIATE_ACK). */
	if (!out->hdr.ackreq && mrt_cc_blocked_after(qp, now, r->pipe_bytes, MRT_DELACK_NS / 2))
		out->hdr.ackreq = true;
	mrt_arm_timers(qp, now, false);
}

static void mrt_resend(struct mr_qp *qp, uint32_t psn, uint64_t now, uint8_t mflags,
		       struct mr_tx_pkt *out)
{
	struct mrt_req *r = &qp->mrt->req;
	struct mrt_txe *e = mrt_sb(qp, psn);
	uint32_t n;

	if (e->flags & MRT_TX_LOST) {
		e->flags &= (uint8_t)~MRT_TX_LOST;
		r->nlost--;
	}
	e->prev_ts = e->xmit_ts;
	e->flags &= (uint8_t)~MRT_TX_SPUR;
	mrt_rack_resent(qp, psn, e->prev_ts);
	n = mrt_build(qp, psn, e, now, mflags | MR_MRETH_RETX, out);
	e->flags |= MRT_TX_RETX;
	qp->stats.retransmits++;
	mrt_sent(qp, e, now, n, out);
}

/* IRN's BDP flow control (Mittal et al., SIGCOMM'18, 3.2) caps the packets in flight at the
 * bandwidth-delay product. The configured RTT is propagation only: the unloaded RTT the
 * requester measures also holds a store-and-forward serialisation per hop and the ACK's, so the
 * cap follows max(configured, measured min RTT), with 1/8 headroom for ACK clumping (ACKs every
 * MRT_ACK_EVERY packets) and loss recovery (a packet in recovery leaves the pipe only when it is
 * declared lost). min_rtt does not grow with queueing, so the cap cannot feed on itself. */
uint32_t mrt_inflight_cap(const struct mr_qp *qp)
{
	const struct mrt_req *r = &qp->mrt->req;
	uint64_t rtt = r->bdp_rtt_ns, pkts;

	if (r->bdp_rate_bps == 0)
		return r->cap_pkts;
	if (r->have_rtt && r->min_rtt > rtt)
		rtt = r->min_rtt;
	pkts = (uint64_t)((unsigned __int128)r->bdp_rate_bps * rtt / 8000000000ull) / mrt_mtu(qp);
	pkts += pkts / 8 + 2;
	return pkts < r->cap_pkts ? (uint32_t)pkts : r->cap_pkts;
}

/* Start the next packet of new data, or return 0. */
static int mrt_new(struct mr_qp *qp, uint64_t now, uint8_t mflags, struct mr_tx_pkt *out)
{
	struct mrt_req *r = &qp->mrt->req;
	uint32_t mtu = mrt_mtu(qp), n;
	struct mrt_txe *e;
	struct rc_swqe *w;
	bool rd;

	if (r->cur == qp->sq_tail || mrt_psn_dist(r->nxt, r->una) >= MRT_WIN - 1 ||
	    r->pipe >= mrt_inflight_cap(qp))
		return 0;
	w = rc_sq_at(qp, r->cur);
	/* IBA 10.3.1 (SQD): no new WQE starts while draining. */
	if (qp->state == MR_QPS_SQD && !w->psn_valid)
		return 0;
	if (!w->resolved && rc_req_resolve(qp, w) < 0) {
		w->status = MR_WC_LOC_PROT_ERR; /* IBA 10.6.3.2 */
		rc_qp_to_err(qp);
		return 0;
	}
	rd = rc_wr_is_rd_atomic(w->wr.opcode);
	/* IBA 10.8.3.3: a fenced WQE waits for earlier READ/atomics. */
	if (r->off == 0 && (w->wr.send_flags & MR_SEND_FENCE) && r->rd_out > 0)
		return 0;
	if (rd && r->rd_out >= qp->attr.max_rd_atomic)
		return 0;
	if (!w->psn_valid) {
		if (w->wr.opcode == MR_WR_RDMA_READ)
			w->npkts = rc_npkts(w->len, MRT_RD_CHUNK * mtu);
		else
			w->npkts = rd ? 1 : rc_npkts(w->len, mtu);
		w->first_psn = r->nxt;
		w->last_psn = mr_psn_add(r->nxt, w->npkts - 1);
		/* MRETH.msg_seq: receive sequence (see mrt_responder.c). */
		w->msg_seq = r->msg_seq;
		if (w->wr.opcode == MR_WR_SEND || w->wr.opcode == MR_WR_SEND_WITH_IMM ||
		    w->wr.opcode == MR_WR_SEND_WITH_INV ||
		    w->wr.opcode == MR_WR_RDMA_WRITE_WITH_IMM)
			r->msg_seq++;
		w->psn_valid = true;
	}
	e = mrt_sb(qp, r->nxt);
	memset(e, 0, sizeof(*e));
	e->wqe = r->cur;
	e->off = r->off;
	if (w->wr.opcode == MR_WR_RDMA_READ) {
		e->len = w->len - r->off < MRT_RD_CHUNK * mtu ? w->len - r->off : MRT_RD_CHUNK * mtu;
		e->rd_npkts = (uint8_t)rc_npkts(e->len, mtu);
	} else if (!rd) {
		e->len = w->len - r->off < mtu ? w->len - r->off : mtu;
	}
	r->off += e->len;
	if (rd && w->wr.opcode != MR_WR_RDMA_READ)
		r->off = w->len;
	if (r->off >= w->len) {
		r->cur++;
		r->off = 0;
	}
	if (rd)
		r->rd_out++;
	if (r->una == r->nxt)
		r->progress_ts = now; /* a flight starts: the retry budget counts from here */
	n = mrt_build(qp, r->nxt, e, now, mflags, out);
	r->nxt = mr_psn_add(r->nxt, 1);
	mrt_sent(qp, e, now, n, out);
	return 1;
}

/* RFC 8985 7.3: the probe is new data if any may be sent, else the last unacknowledged
 * packet again. */
static int mrt_tlp(struct mr_qp *qp, uint64_t now, struct mr_tx_pkt *out)
{
	struct mrt_req *r = &qp->mrt->req;
	uint32_t psn;

	r->tlp_fire = false;
	if (mrt_new(qp, now, MR_MRETH_TLP, out) == 0) {
		for (psn = mr_psn_add(r->nxt, MR_PSN_MASK); ; psn = mr_psn_add(psn, MR_PSN_MASK)) {
			if (!(mrt_sb(qp, psn)->flags & MRT_TX_DONE))
				break;
			if (psn == r->una)
				return 0;
		}
		mrt_resend(qp, psn, now, MR_MRETH_TLP, out);
	}
	qp->stats.tlp_probes++;
	r->tlp_out = true;
	/* RFC 8985 7.3: after the probe, re-arm the RTO (not the PTO) from now, so the probe
	 * has a whole RTO to be answered. Without it, a flow whose pacer held it back for most
	 * of an RTO times out while its probe's ACK is on the way. */
	r->rto_deadline = UINT64_MAX;
	mrt_arm_timers(qp, now, false);
	return 1;
}

int mrt_req_tx(struct mr_qp *qp, uint64_t now, struct mr_tx_pkt *out)
{
	struct mrt_req *r = &qp->mrt->req;

	if ((qp->state != MR_QPS_RTS && qp->state != MR_QPS_SQD) || r->rnr_wait)
		return 0;
	/* RFC 8985 7.3: the probe goes out whatever the window says: when the whole flight is
	 * lost, the pipe still counts it and would block every other transmission until RTO. */
	if (r->rto_probe) {
		r->rto_probe = false;
		for (uint32_t psn = r->una; psn != r->nxt; psn = mr_psn_add(psn, 1)) {
			if (!(mrt_sb(qp, psn)->flags & MRT_TX_DONE)) {
				mrt_resend(qp, psn, now, 0, out); /* rack.c mrt_on_rto */
				return 1;
			}
		}
	}
	if (r->tlp_fire && r->una != r->nxt && mrt_tlp(qp, now, out))
		return 1;
	r->tlp_fire = false;
	if (!qp_cc_can_send(qp, now, r->pipe_bytes))
		return 0;
	if (r->nlost > 0 && r->pipe < mrt_inflight_cap(qp)) {
		uint32_t psn = mr_psn_cmp(r->retx_hint, r->una) > 0 ? r->retx_hint : r->una;

		for (; psn != r->nxt; psn = mr_psn_add(psn, 1)) {
			const struct mrt_txe *e = mrt_sb(qp, psn);

			if ((e->flags & MRT_TX_LOST) && !(e->flags & MRT_TX_DONE))
				break;
		}
		if (psn != r->nxt) {
			r->retx_hint = psn;
			mrt_resend(qp, psn, now, 0, out);
			qp->stats.sack_retransmits++;
			return 1;
		}
		r->nlost = 0; /* defensive: nothing was actually lost */
	}
	return mrt_new(qp, now, 0, out);
}

/* Retire DONE PSNs from the front and complete WQEs in SQ order. */
void mrt_req_progress(struct mr_qp *qp, uint64_t now)
{
	struct mrt_req *r = &qp->mrt->req;
	bool moved = false;

	(void)now;
	while (r->una != r->nxt && (mrt_sb(qp, r->una)->flags & MRT_TX_DONE)) {
		r->una = mr_psn_add(r->una, 1);
		moved = true;
	}
	if (mr_psn_cmp(r->hi_acked, r->una) < 0)
		r->hi_acked = r->una;
	if (mr_psn_cmp(r->cum, r->una) < 0)
		r->cum = r->una;
	while (qp->sq_head != qp->sq_tail && qp->state != MR_QPS_ERR) {
		struct rc_swqe *w = rc_sq_at(qp, qp->sq_head);

		if (!w->psn_valid || mr_psn_cmp(w->last_psn, r->una) >= 0 || qp->sq_head == r->cur)
			break;
		rc_comp_complete_head(qp, MR_WC_SUCCESS);
	}
	if (moved)
		rc_sched_req(qp);
}

static void mrt_req_fail_psn(struct mr_qp *qp, uint32_t psn, enum mr_wc_status st)
{
	for (uint32_t i = qp->sq_head; i != qp->sq_tail; i++) {
		struct rc_swqe *w = rc_sq_at(qp, i);

		if (!w->psn_valid)
			break;
		if (mr_psn_cmp(psn, w->first_psn) >= 0 && mr_psn_cmp(psn, w->last_psn) <= 0) {
			w->status = st;
			break;
		}
	}
	if (qp->sq_head != qp->sq_tail && rc_sq_at(qp, qp->sq_head)->status == MR_WC_WR_FLUSH_ERR)
		rc_sq_at(qp, qp->sq_head)->status = st;
	rc_qp_to_err(qp);
}

static void mrt_req_nak(struct mr_qp *qp, const struct mr_pkt *pkt, uint64_t now)
{
	struct mrt_req *r = &qp->mrt->req;
	uint8_t syn = pkt->hdr.aeth.syndrome;
	uint32_t psn = pkt->hdr.psn;

	if ((syn & MR_AETH_TYPE_MASK) == MR_AETH_RNR_NAK) {
		struct mrt_txe *e = mrt_sb(qp, psn);

		qp->stats.rnr_naks_rcvd++;
		if (r->rnr_wait || !mrt_sb_in_flight(qp, psn) || (e->flags & MRT_TX_ACKED))
			return; /* stale, or another packet of the same flight */
		/* IBA 9.7.5.2.8: rnr_retry 7 retries forever; else count down. */
		if (qp->attr.rnr_retry != 7) {
			if (r->rnr_left == 0) {
				qp->stats.rnr_retry_exceeded++;
				mrt_req_fail_psn(qp, psn, MR_WC_RNR_RETRY_EXC_ERR);
				return;
			}
			r->rnr_left--;
		}
		r->rnr_wait = true;
		r->rnr_until = now + rc_rnr_timer_ns(syn & 0x1f);
		mrt_arm_timers(qp, now, false);
		return;
	}
	switch (syn & 0x1f) {
	case MR_NAK_INVALID_REQ:
		qp->stats.inv_req_naks_rcvd++;
		mrt_req_fail_psn(qp, psn, MR_WC_REM_INV_REQ_ERR);
		break;
	case MR_NAK_REM_ACCESS_ERR:
		qp->stats.rem_access_naks_rcvd++;
		mrt_req_fail_psn(qp, psn, MR_WC_REM_ACCESS_ERR);
		break;
	case MR_NAK_REM_OP_ERR:
		mrt_req_fail_psn(qp, psn, MR_WC_REM_OP_ERR);
		break;
	case MR_NAK_INVALID_RD_REQ:
		mrt_req_fail_psn(qp, psn, MR_WC_REM_INV_RD_REQ_ERR);
		break;
	default:
		qp->stats.dropped++; /* MetaRoCE never sends PSN sequence NAKs */
		break;
	}
}

static void mrt_req_ack(struct mr_qp *qp, const struct mr_pkt *pkt, uint64_t now)
{
	struct mrt_req *r = &qp->mrt->req;
	const struct mr_roce_hdrs *h = &pkt->hdr;
	uint8_t type = h->aeth.syndrome & MR_AETH_TYPE_MASK;
	uint32_t cum, psn, bytes = 0, pkts = 0;
	uint64_t rtt = 0;
	bool ece;

	/* A NAK names a request packet this QP sent and the peer has not acknowledged (IBA
	 * 9.7.5.2: a NAK reports the error of that request); any other NAK is stale or forged and
	 * has no effect at all, as for plain RC (rc_completer.c). */
	if (type != MR_AETH_ACK && (!mrt_sb_in_flight(qp, h->psn) ||
				    (mrt_sb(qp, h->psn)->flags & (MRT_TX_SENT | MRT_TX_ACKED)) !=
					    MRT_TX_SENT)) {
		qp->stats.dropped++;
		return;
	}
	/* ACK: BTH.PSN is cumulative; NAKs carry the NAKed PSN, the SACKETH base the hole. */
	cum = type == MR_AETH_ACK ? h->psn : mr_psn_add(h->sack.base, MR_PSN_MASK);
	if (mr_psn_cmp(cum, r->nxt) >= 0 || mr_psn_cmp(h->sack.base, r->nxt) > 0) {
		qp->stats.dropped++; /* acknowledges PSNs never sent (ghost ACK) */
		return;
	}
	if (type == MR_AETH_ACK)
		qp->stats.acks_rcvd++;
	psn = mr_psn_cmp(r->cum, r->una) > 0 ? r->cum : r->una;
	for (; mr_psn_cmp(psn, cum) <= 0; psn = mr_psn_add(psn, 1))
		pkts += mrt_sb_ack(qp, psn, h->mreth.ts, now, &bytes);
	if (mr_psn_cmp(mr_psn_add(cum, 1), r->cum) > 0)
		r->cum = mr_psn_add(cum, 1);
	for (uint32_t i = 0, seen = 0; i < MRT_SACK_BITS; i++) {
		if (!(h->sack.bitmap[i / 8] & (0x80u >> (i % 8))))
			continue;
		if (!seen++)
			qp->stats.sack_blocks_rcvd++;
		psn = mr_psn_add(h->sack.base, i);
		if (mrt_sb_in_flight(qp, psn))
			pkts += mrt_sb_ack(qp, psn, h->mreth.ts, now, &bytes);
	}
	ece = (h->mreth.flags & MR_MRETH_ECE) || h->sack.ce_count > 0;
	if (pkts > 0) {
		/* Swift-style delay sample from the echoed timestamp (256 ns units). */
		rtt = (uint64_t)((mrt_ts(now) - h->mreth.ts) & 0xffffffffu) << 8;
		mrt_rtt_sample(qp, rtt, now);
		if (mrt_rto_eifel(qp, h->mreth.ts, rtt, now))
			rc_sched_req(qp);
		if (ece)
			mrt_path_ecn(qp, h->mreth.path, now);
		else if (rtt > 2 * r->min_rtt + 4 * MRT_REO_MIN_NS)
			mrt_path_slow(qp, h->mreth.path);
		else
			mrt_path_good(qp, h->mreth.path);
		r->retry_left = qp->attr.retry_cnt;
		r->rnr_left = qp->attr.rnr_retry;
		r->backoff = 0;
		r->tlp_out = false;
	}
	if (pkts > 0 || h->sack.ce_count > 0) {
		struct mr_cc_ack a = {
			.now = now,
			.acked_bytes = bytes,
			.acked_pkts = pkts,
			.ce_pkts = h->sack.ce_count,
			.rtt_ns = rtt,
			.path = h->mreth.path,
			.inflight_bytes = r->pipe_bytes,
		};
		mrt_cc_ack(qp, &a);
	}
	mrt_rack_dup_echo(qp, h->mreth.ts, now);
	if (type != MR_AETH_ACK)
		mrt_req_nak(qp, pkt, now);
	if (qp->state == MR_QPS_ERR)
		return;
	mrt_rack_detect(qp, now);
	mrt_req_progress(qp, now);
	/* ACK clocking (RFC 6675 5: each ACK that shrinks the pipe lets a packet out): SACKed
	 * packets leave the pipe while the cumulative point stays behind a hole, and a lost
	 * packet that waits for the window they open has nothing else to wake it but the RTO
	 * (mrt_req_progress only reschedules when una moves). */
	if (pkts > 0 && r->nlost > 0)
		rc_sched_req(qp);
	mrt_arm_timers(qp, now, pkts > 0);
}

static void mrt_req_read_resp(struct mr_qp *qp, const struct mr_pkt *pkt, uint64_t now)
{
	uint32_t psn = pkt->hdr.psn, mtu = mrt_mtu(qp), off = pkt->hdr.mreth.offset, i, want;
	uint32_t bytes = 0;
	struct rc_swqe *w;
	struct mrt_txe *e;

	if (!mrt_sb_in_flight(qp, psn)) {
		qp->stats.dropped++;
		return;
	}
	e = mrt_sb(qp, psn);
	w = rc_sq_at(qp, e->wqe);
	if (w->wr.opcode != MR_WR_RDMA_READ || (e->flags & MRT_TX_DONE) || off < e->off ||
	    (off - e->off) % mtu != 0 || (i = (off - e->off) / mtu) >= e->rd_npkts) {
		qp->stats.dropped++; /* duplicate or malformed response: never placed */
		return;
	}
	want = e->off + e->len - off < mtu ? e->off + e->len - off : mtu;
	if (pkt->paylen != want || (e->rd_bits >> i) & 1) {
		qp->stats.dropped++;
		return;
	}
	if (want > 0)
		mrt_scatter(w->wr.sg_list, w->host, w->wr.num_sge, off, pkt->payload, want);
	e->rd_bits |= 1ull << i;
	/* A response proves the request arrived. */
	mrt_sb_ack(qp, psn, mrt_ts(now), now, &bytes);
	if (e->rd_bits == (e->rd_npkts == 64 ? UINT64_MAX : (1ull << e->rd_npkts) - 1)) {
		mrt_sb_done(qp, psn, now);
		mrt_rack_detect(qp, now);
		mrt_req_progress(qp, now);
		mrt_arm_timers(qp, now, true);
	}
}

static void mrt_req_atomic_ack(struct mr_qp *qp, const struct mr_pkt *pkt, uint64_t now)
{
	uint32_t psn = pkt->hdr.psn;
	struct rc_swqe *w;
	struct mrt_txe *e;

	if (!mrt_sb_in_flight(qp, psn)) {
		qp->stats.dropped++;
		return;
	}
	e = mrt_sb(qp, psn);
	w = rc_sq_at(qp, e->wqe);
	if ((w->wr.opcode != MR_WR_ATOMIC_CMP_AND_SWP &&
	     w->wr.opcode != MR_WR_ATOMIC_FETCH_AND_ADD) || (e->flags & MRT_TX_DONE)) {
		qp->stats.dropped++;
		return;
	}
	/* IBA 9.4.5: the original remote value lands in the local 8-byte buffer. */
	memcpy(w->host[0], &pkt->hdr.atmack, sizeof(pkt->hdr.atmack));
	mrt_sb_done(qp, psn, now);
	mrt_rack_detect(qp, now);
	mrt_req_progress(qp, now);
	mrt_arm_timers(qp, now, true);
}

void mrt_req_rx(struct mr_qp *qp, const struct mr_pkt *pkt, uint64_t now)
{
	if ((qp->state != MR_QPS_RTS && qp->state != MR_QPS_SQD) || pkt->hdr.mreth.ver != 1) {
		qp->stats.dropped++;
		return;
	}
	switch (mr_opcode_base(pkt->hdr.opcode)) {
	case MR_OP_RC_ACK:
		mrt_req_ack(qp, pkt, now);
		break;
	case MR_OP_RC_ATOMIC_ACK:
		mrt_req_atomic_ack(qp, pkt, now);
		break;
	case MR_OP_RC_READ_RESPONSE_FIRST:
	case MR_OP_RC_READ_RESPONSE_MIDDLE:
	case MR_OP_RC_READ_RESPONSE_LAST:
	case MR_OP_RC_READ_RESPONSE_ONLY:
		mrt_req_read_resp(qp, pkt, now);
		break;
	default:
		qp->stats.dropped++;
		break;
	}
}
