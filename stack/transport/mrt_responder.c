/* SPDX-License-Identifier: MIT
 * MetaRoCE responder: per-packet placement in whatever order packets arrive (WRITE at
 * RETH.va + MRETH.offset, SEND into the receive WQE of its message at MRETH.offset), READ and
 * atomic execution, and SACK ACKs (cumulative PSN + 128-bit bitmap from the first hole + CE
 * count, echoing path and timestamp; docs/metaroce-wire.md).
 *
 * Ordering (IBA 10.8.3.1 / 9.7.5.1.1): receive completions and the AETH MSN advance only when
 * the cumulative PSN passes a message's last packet, so they are delivered strictly in message
 * order even when a later message finished placing first, and a SEND completion implies every
 * earlier WRITE is placed.
 *
 * Receive WQE selection (the n-th SEND consumes the n-th posted receive, as in RC): MRETH.msg_seq
 * counts the receive-consuming messages (SEND, WRITE with immediate) of the QP, as IRN's
 * receive WQE sequence number does (Mittal et al., SIGCOMM'18): such a message's msg_seq is the
 * index of the receive it consumes, so any of its packets can be placed on arrival without
 * knowing the messages before it. Other requests carry the count so far (non-decreasing).
 */
#include <string.h>

#include "mrt_internal.h"

static uint8_t *mrt_rx_flag(const struct mr_qp *qp, uint32_t psn)
{
	return &qp->mrt->resp.rflags[psn & (MRT_WIN - 1)];
}

static void mrt_resp_nak(struct mr_qp *qp, uint8_t syndrome, uint32_t psn)
{
	struct rc_resp *e = rc_resp_push(qp);

	if (e == NULL)
		return;
	e->kind = RC_RESP_ACK;
	e->syndrome = syndrome;
	e->psn = psn;
}

/* Class B/C/D errors (IBA 9.7.5.2.2-9.7.5.2.4): NAK, then ERR; the NAK still goes out. */
static void mrt_resp_fatal(struct mr_qp *qp, uint8_t nak, uint32_t psn)
{
	mrt_resp_nak(qp, MR_AETH_NAK | nak, psn);
	rc_qp_to_err(qp);
}

static void mrt_ack_soon(struct mr_qp *qp)
{
	struct mrt_resp *s = &qp->mrt->resp;

	s->ack_pending = true;
	s->unacked = 0;
	s->ack_deadline = UINT64_MAX;
	rc_sched_resp(qp);
	rc_timer_update(qp);
}

/* Receive WQE index of a receive-consuming message; false if it is not usable now. */
static bool mrt_msg_rq(const struct mr_qp *qp, uint32_t msg_seq, uint32_t *rq)
{
	uint32_t k = qp->mrt->resp.rq_base + msg_seq;

	if (k - qp->rq_head >= RC_MAX_WR * 4u)
		return false; /* behind the receive queue (already completed) or absurdly ahead */
	*rq = k;
	return true;
}

static bool mrt_rq_posted(struct mr_qp *qp, uint32_t idx)
{
	return rc_rq_ready(qp, idx); /* with an SRQ, takes its WQEs up to idx */
}

static bool mrt_op_first(uint8_t b)
{
	return b == MR_OP_RC_SEND_FIRST || b == MR_OP_RC_SEND_ONLY || b == MR_OP_RC_SEND_ONLY_IMM ||
	       b == MR_OP_RC_SEND_ONLY_INV || b == MR_OP_RC_WRITE_FIRST ||
	       b == MR_OP_RC_WRITE_ONLY || b == MR_OP_RC_WRITE_ONLY_IMM;
}

static bool mrt_op_last(uint8_t b)
{
	return b != MR_OP_RC_SEND_FIRST && b != MR_OP_RC_SEND_MIDDLE &&
	       b != MR_OP_RC_WRITE_FIRST && b != MR_OP_RC_WRITE_MIDDLE;
}

/* Per-packet shape (IBA 9.8.3 adapted to offsets): FIRST at offset 0, LAST ends the message,
 * FIRST/MIDDLE carry exactly one MTU at an MTU multiple. */
static bool mrt_valid_shape(const struct mr_qp *qp, const struct mr_pkt *pkt, uint8_t b)
{
	const uint32_t off = pkt->hdr.mreth.offset, len = pkt->paylen;
	const uint32_t mlen = pkt->hdr.mreth.msg_len, mtu = rc_mtu(qp);

	if (mlen > RC_MAX_MSG || off > mlen || len > mlen - off || off % mtu != 0)
		return false;
	if (mrt_op_first(b) != (off == 0))
		return false;
	if (mrt_op_last(b) != (off + len == mlen))
		return false;
	if (!mrt_op_last(b) && len != mtu)
		return false;
	return len <= mtu;
}

/* Bind receive r to the message this packet belongs to. Every packet carries its message's
 * msg_seq, length and offset (docs/metaroce-wire.md), so each names the message's last PSN;
 * the first to arrive claims the receive and all others must name the same message, or two
 * messages would complete one receive (a peer reusing a msg_seq at another PSN). False:
 * the packet contradicts the claim (IBA 9.7.5.2.2, invalid request). */
static bool mrt_claim(const struct mr_qp *qp, struct rc_rwqe *r, const struct mr_roce_hdrs *h)
{
	uint32_t mtu = rc_mtu(qp);
	uint32_t last = mr_psn_add(h->psn, rc_npkts(h->mreth.msg_len, mtu) - 1 -
					   h->mreth.offset / mtu);

	if (!r->m_claimed) {
		r->m_claimed = true;
		r->m_last_psn = last;
		r->m_len = h->mreth.msg_len;
		return true;
	}
	return r->m_last_psn == last && r->m_len == h->mreth.msg_len;
}

static int mrt_bind_recv(struct mr_qp *qp, struct rc_rwqe *r)
{
	if (rc_rwqe_bind(qp, r) < 0)
		return -1;
	r->m_bound = true;
	return 0;
}

/* Returns true when the packet was accepted (its PSN counts as received). */
static bool mrt_rx_send(struct mr_qp *qp, const struct mr_pkt *pkt, uint8_t b)
{
	const struct mr_roce_hdrs *h = &pkt->hdr;
	struct rc_rwqe *r;
	uint32_t k;

	if (!mrt_msg_rq(qp, h->mreth.msg_seq, &k)) {
		qp->stats.dropped++;
		return false;
	}
	if (!mrt_rq_posted(qp, k)) {
		/* IBA 9.7.5.2.8: RNR NAK for this PSN; the requester resends after the timer. */
		mrt_resp_nak(qp, MR_AETH_RNR_NAK | qp->attr.min_rnr_timer, h->psn);
		return false;
	}
	r = rc_rq_at(qp, k);
	if (!mrt_claim(qp, r, h)) {
		mrt_resp_fatal(qp, MR_NAK_INVALID_REQ, h->psn);
		return false;
	}
	if (!r->m_bound && mrt_bind_recv(qp, r) < 0) {
		mrt_resp_fatal(qp, MR_NAK_REM_OP_ERR, h->psn); /* IBA 9.7.5.2.4 */
		return false;
	}
	if (h->mreth.msg_len > r->len) {
		mrt_resp_fatal(qp, MR_NAK_INVALID_REQ, h->psn); /* IBA 9.7.5.2.2 */
		return false;
	}
	mrt_scatter(r->wr.sg_list, r->host, r->wr.num_sge, h->mreth.offset, pkt->payload,
		    pkt->paylen);
	if (mrt_op_last(b)) {
		r->m_op = MR_WC_RECV;
		r->m_flags = 0;
		if (b == MR_OP_RC_SEND_LAST_IMM || b == MR_OP_RC_SEND_ONLY_IMM) {
			r->m_flags = MR_WC_WITH_IMM;
			r->m_imm = h->imm;
		}
		/* IBA 10.6.7: no memory windows here, so the rkey is only reported. */
		if (b == MR_OP_RC_SEND_LAST_INV || b == MR_OP_RC_SEND_ONLY_INV) {
			r->m_flags = MR_WC_WITH_INV;
			r->m_inv = h->ieth_rkey;
		}
	}
	return true;
}

static bool mrt_rx_write(struct mr_qp *qp, const struct mr_pkt *pkt, uint8_t b)
{
	const struct mr_roce_hdrs *h = &pkt->hdr;
	bool imm = b == MR_OP_RC_WRITE_LAST_IMM || b == MR_OP_RC_WRITE_ONLY_IMM;
	struct mr_memreg *mr = NULL;
	uint32_t k = 0;

	if (imm && !mrt_msg_rq(qp, h->mreth.msg_seq, &k)) {
		qp->stats.dropped++;
		return false;
	}
	if (imm && !mrt_rq_posted(qp, k)) {
		mrt_resp_nak(qp, MR_AETH_RNR_NAK | qp->attr.min_rnr_timer, h->psn);
		return false;
	}
	if (imm && !mrt_claim(qp, rc_rq_at(qp, k), h)) {
		mrt_resp_fatal(qp, MR_NAK_INVALID_REQ, h->psn);
		return false;
	}
	if (h->reth.dlen != h->mreth.msg_len) {
		mrt_resp_fatal(qp, MR_NAK_INVALID_REQ, h->psn);
		return false;
	}
	/* IBA 9.7.5.2.3 / 10.6.3.2, checked on every packet: R_Key, range and QP access. */
	if (h->reth.dlen > 0) {
		if (qp->attr.qp_access_flags & MR_ACCESS_REMOTE_WRITE)
			mr = rc_mr_lookup(qp->ctx, qp->init.pd, h->reth.rkey, h->reth.va,
					  h->reth.dlen, MR_ACCESS_REMOTE_WRITE);
		if (mr == NULL) {
			mrt_resp_fatal(qp, MR_NAK_REM_ACCESS_ERR, h->psn);
			return false;
		}
		if (pkt->paylen)
			memcpy(mr->host + (h->reth.va - mr->iova) + h->mreth.offset, pkt->payload,
			       pkt->paylen);
	}
	if (imm) {
		struct rc_rwqe *r = rc_rq_at(qp, k);

		r->m_op = MR_WC_RECV_RDMA_WITH_IMM;
		r->m_flags = MR_WC_WITH_IMM;
		r->m_imm = h->imm;
	}
	return true;
}

static const uint8_t *mrt_read_src(struct mr_qp *qp, const struct mr_roce_hdrs *h, bool *ok)
{
	struct mr_memreg *mr = NULL;

	*ok = true;
	if (h->reth.dlen == 0)
		return NULL;
	if (qp->attr.qp_access_flags & MR_ACCESS_REMOTE_READ)
		mr = rc_mr_lookup(qp->ctx, qp->init.pd, h->reth.rkey, h->reth.va, h->reth.dlen,
				  MR_ACCESS_REMOTE_READ);
	if (mr == NULL) {
		*ok = false;
		return NULL;
	}
	return mr->host + (h->reth.va - mr->iova);
}

/* Queue the responses for a READ request (new or re-requested range). dup: a duplicate,
 * where resource shortage drops instead of failing the QP. */
static bool mrt_rx_read(struct mr_qp *qp, const struct mr_pkt *pkt, bool dup)
{
	const struct mr_roce_hdrs *h = &pkt->hdr;
	const uint8_t *src;
	struct rc_resp *e;
	bool ok;

	if (h->reth.dlen > RC_MAX_MSG || h->mreth.msg_len > RC_MAX_MSG ||
	    h->mreth.offset > h->mreth.msg_len || h->reth.dlen > h->mreth.msg_len - h->mreth.offset ||
	    rc_npkts(h->reth.dlen, rc_mtu(qp)) > MRT_RD_CHUNK) {
		if (dup) {
			qp->stats.dropped++;
			return false;
		}
		mrt_resp_fatal(qp, MR_NAK_INVALID_REQ, h->psn);
		return false;
	}
	/* IBA 9.7.5.2.2: more new requests outstanding than the responder resources is an invalid
	 * request. Responses queued for duplicates do not count: with spraying a re-request can be
	 * spurious (the "lost" responses were only late), the requester then finishes the chunk and
	 * legally issues a new READ while the re-served copy is still queued here. Duplicates get
	 * what room is left and are dropped (re-requested later) when there is none. */
	if (!dup && qp->resp.rd_pending - qp->resp.rd_dups >= qp->attr.max_dest_rd_atomic) {
		mrt_resp_fatal(qp, MR_NAK_INVALID_REQ, h->psn);
		return false;
	}
	if (dup && qp->resp.rd_pending >= qp->attr.max_dest_rd_atomic) {
		qp->stats.dropped++;
		return false;
	}
	if (qp->resp.ring_count + 2 > RC_RESP_RING) {
		qp->stats.dropped++;
		return false;
	}
	src = mrt_read_src(qp, h, &ok);
	if (!ok) {
		if (dup) {
			qp->stats.dropped++;
			return false;
		}
		mrt_resp_fatal(qp, MR_NAK_REM_ACCESS_ERR, h->psn);
		return false;
	}
	e = rc_resp_push(qp);
	if (e == NULL)
		return false;
	e->kind = RC_RESP_READ;
	e->psn = h->psn;
	e->first_psn = 0;                                    /* packets sent so far */
	e->last_psn = rc_npkts(h->reth.dlen, rc_mtu(qp));    /* packets in this response */
	e->host = src;
	e->left = h->reth.dlen;
	e->rkey = h->reth.rkey; /* mr_dereg revokes by key (rc_mr.c) */
	e->msg_seq = h->mreth.msg_seq;
	e->off = h->mreth.offset;
	e->msg_len = h->mreth.msg_len;
	e->path = h->mreth.path;
	e->dup = dup;
	qp->resp.rd_pending++;
	qp->resp.rd_dups += dup;
	return true;
}

static bool mrt_rx_atomic(struct mr_qp *qp, const struct mr_pkt *pkt, uint8_t b)
{
	const struct mr_roce_hdrs *h = &pkt->hdr;
	struct mr_memreg *mr = NULL;
	struct rc_rd_res *res;
	struct rc_resp *e;
	uint64_t orig, val;
	uint8_t *p;

	/* IBA 9.4.5: 8-byte aligned; IBA 9.7.5.2.2: responder resources. */
	if ((h->atmeth.va & 7) || qp->resp.rd_pending >= qp->attr.max_dest_rd_atomic) {
		mrt_resp_fatal(qp, MR_NAK_INVALID_REQ, h->psn);
		return false;
	}
	if (qp->resp.ring_count + 2 > RC_RESP_RING) {
		qp->stats.dropped++;
		return false;
	}
	if (qp->attr.qp_access_flags & MR_ACCESS_REMOTE_ATOMIC)
		mr = rc_mr_lookup(qp->ctx, qp->init.pd, h->atmeth.rkey, h->atmeth.va, 8,
				  MR_ACCESS_REMOTE_ATOMIC);
	if (mr == NULL) {
		mrt_resp_fatal(qp, MR_NAK_REM_ACCESS_ERR, h->psn);
		return false;
	}
	p = mr->host + (h->atmeth.va - mr->iova);
	memcpy(&orig, p, 8);
	if (b == MR_OP_RC_CMP_SWAP)
		val = orig == h->atmeth.cmp ? h->atmeth.swap_add : orig;
	else
		val = orig + h->atmeth.swap_add;
	memcpy(p, &val, 8);
	/* Executed exactly once: a duplicate (same PSN) is answered from this saved result. */
	res = &qp->resp.res[qp->resp.res_next];
	qp->resp.res_next = (qp->resp.res_next + 1) % RC_MAX_RD_ATOMIC;
	res->valid = true;
	res->atomic = true;
	res->psn = h->psn;
	res->orig = orig;
	e = rc_resp_push(qp);
	if (e != NULL) {
		e->kind = RC_RESP_ATOMIC;
		e->psn = h->psn;
		e->orig = orig;
		qp->resp.rd_pending++;
	}
	return true;
}

/* A duplicate READ or atomic request at psn (MetaRoCE resends one request PSN, a READ chunk
 * asking only for its missing span) supersedes what is still queued for that PSN: drop it, so
 * each request PSN holds at most one responder resource, as the requester counts them. Kept,
 * the copies made rd_pending exceed max_dest_rd_atomic under loss and the requester's next,
 * legal READ got a fatal invalid-request NAK (IBA 9.7.5.2.2 lets the responder abandon a
 * response in progress on a duplicate; rc_responder.c rc_resp_abort_reads for plain RC). */
static void mrt_resp_abort_psn(struct mr_qp *qp, uint32_t psn)
{
	uint32_t kept = 0;

	for (uint32_t i = 0; i < qp->resp.ring_count; i++) {
		struct rc_resp *e = &qp->resp.ring[(qp->resp.ring_head + i) % RC_RESP_RING];

		if ((e->kind == RC_RESP_READ || e->kind == RC_RESP_ATOMIC) && e->psn == psn) {
			qp->resp.rd_pending--;
			qp->resp.rd_dups -= e->dup;
			continue;
		}
		if (kept != i)
			qp->resp.ring[(qp->resp.ring_head + kept) % RC_RESP_RING] = *e;
		kept++;
	}
	qp->resp.ring_count = kept;
}

static void mrt_rx_duplicate(struct mr_qp *qp, const struct mr_pkt *pkt, uint8_t b)
{
	qp->stats.duplicate_requests++;
	if (b == MR_OP_RC_READ_REQUEST || b == MR_OP_RC_CMP_SWAP || b == MR_OP_RC_FETCH_ADD)
		mrt_resp_abort_psn(qp, pkt->hdr.psn);
	if (b == MR_OP_RC_READ_REQUEST) {
		mrt_rx_read(qp, pkt, true); /* READs are idempotent: serve the range again */
		return;
	}
	if (b == MR_OP_RC_CMP_SWAP || b == MR_OP_RC_FETCH_ADD) {
		for (uint32_t i = 0; i < RC_MAX_RD_ATOMIC; i++) {
			const struct rc_rd_res *res = &qp->resp.res[i];
			struct rc_resp *e;

			if (!res->valid || !res->atomic || res->psn != pkt->hdr.psn)
				continue;
			if (qp->resp.rd_pending >= qp->attr.max_dest_rd_atomic ||
			    (e = rc_resp_push(qp)) == NULL)
				break;
			e->kind = RC_RESP_ATOMIC;
			e->psn = pkt->hdr.psn;
			e->orig = res->orig;
			e->dup = true;
			qp->resp.rd_pending++;
			qp->resp.rd_dups++;
			return;
		}
		qp->stats.dropped++;
		return;
	}
	mrt_ack_soon(qp); /* the requester's ACK was probably lost: re-ACK */
}

/* Packets of receive-consuming messages reach the cumulative point in PSN order, so (IBA
 * 9.7.5.1.1, the n-th such message consumes the n-th receive) each must belong to the receive
 * at rq_head, and the one completing it must be the last PSN its message claimed. A peer that
 * numbered its messages otherwise placed data elsewhere than where the completion would say. */
static bool mrt_rx_in_order(const struct mr_qp *qp, uint8_t f, uint32_t psn)
{
	const struct mrt_resp *s = &qp->mrt->resp;
	const struct rc_rwqe *r;

	if (!(f & MRT_RX_RQ))
		return true;
	if (qp->rq_head == qp->rq_tail || s->rq_base + s->rseq[psn & (MRT_WIN - 1)] != qp->rq_head)
		return false;
	r = rc_rq_at(qp, qp->rq_head);
	return r->m_claimed && (!(f & MRT_RX_RECV) || r->m_last_psn == psn);
}

/* Move the cumulative PSN over received PSNs; complete messages in order. Returns false when
 * the QP failed on the way. */
static bool mrt_resp_advance(struct mr_qp *qp)
{
	struct mrt_resp *s = &qp->mrt->resp;

	for (;;) {
		uint8_t *f = mrt_rx_flag(qp, s->nxt);

		if (!(*f & MRT_RX_RCVD))
			break;
		if (!mrt_rx_in_order(qp, *f, s->nxt)) {
			mrt_resp_fatal(qp, MR_NAK_INVALID_REQ, s->nxt);
			return false;
		}
		if (*f & MRT_RX_LAST) {
			s->msn = (s->msn + 1) & MR_PSN_MASK; /* IBA 9.7.5.1.1 */
			if (*f & MRT_RX_RECV) {
				struct rc_rwqe *r = rc_rq_at(qp, qp->rq_head);
				struct mr_wc wc = {
					.wr_id = r->wr.wr_id,
					.status = MR_WC_SUCCESS,
					.opcode = (enum mr_wc_opcode)r->m_op,
					.byte_len = r->m_len,
					.imm_data = r->m_imm,
					.invalidated_rkey = r->m_inv,
					.qp_num = qp->qpn,
					.src_qp = qp->attr.dest_qp_num,
					.wc_flags = r->m_flags,
				};
				if (!(wc.wc_flags & MR_WC_WITH_IMM))
					wc.imm_data = 0;
				if (!(wc.wc_flags & MR_WC_WITH_INV))
					wc.invalidated_rkey = 0;
				qp->rq_head++;
				qp->stats.recvs_completed++;
				rc_cq_push(qp, qp->init.recv_cq, &wc);
			}
		}
		*f = 0;
		s->nxt = mr_psn_add(s->nxt, 1);
	}
	return true;
}

void mrt_resp_rx(struct mr_qp *qp, const struct mr_pkt *pkt, uint64_t now)
{
	struct mrt_resp *s = &qp->mrt->resp;
	const struct mr_roce_hdrs *h = &pkt->hdr;
	uint8_t b = mr_opcode_base(h->opcode), flags = MRT_RX_RCVD;
	uint32_t old = s->nxt;
	bool ce = (pkt->tclass & 3) == 3, ok, last;
	int32_t d;

	if ((qp->state != MR_QPS_RTR && qp->state != MR_QPS_RTS && qp->state != MR_QPS_SQD &&
	     qp->state != MR_QPS_SQE) || h->mreth.ver != 1) {
		qp->stats.dropped++;
		return;
	}
	if (ce) {
		qp->stats.ce_rcvd++;
		s->ce_count++;
	}
	d = mr_psn_cmp(h->psn, s->nxt);
	if (d >= (int32_t)MRT_WIN) {
		qp->stats.dropped++; /* beyond any window the requester may use */
		return;
	}
	if (d < 0 || (*mrt_rx_flag(qp, h->psn) & MRT_RX_RCVD)) {
		/* A duplicate's timestamp is echoed (the D-SACK stand-in, rack.c) unless an ACK
		 * for new data is already waiting: that ACK must echo the new data's timestamp,
		 * or a late original followed by its resend (a host stall, a spurious timeout)
		 * would look, to the requester's Eifel test (RFC 3522), like a resend that was
		 * needed. */
		if (!s->ack_pending && s->unacked == 0) {
			s->echo_ts = h->mreth.ts;
			s->echo_path = h->mreth.path;
			s->echo_ece = ce;
		}
		mrt_rx_duplicate(qp, pkt, b);
		return;
	}
	s->echo_ts = h->mreth.ts;
	s->echo_path = h->mreth.path;
	s->echo_ece = ce;
	if (d > 0)
		qp->stats.out_of_sequence++;
	switch (b) {
	case MR_OP_RC_READ_REQUEST:
		ok = pkt->paylen == 0 && mrt_rx_read(qp, pkt, false);
		last = h->mreth.offset + h->reth.dlen == h->mreth.msg_len;
		break;
	case MR_OP_RC_CMP_SWAP:
	case MR_OP_RC_FETCH_ADD:
		ok = pkt->paylen == 0 && mrt_rx_atomic(qp, pkt, b);
		last = true;
		break;
	default:
		if (b > MR_OP_RC_WRITE_ONLY_IMM && b != MR_OP_RC_SEND_LAST_INV &&
		    b != MR_OP_RC_SEND_ONLY_INV) {
			qp->stats.dropped++;
			return;
		}
		if (!mrt_valid_shape(qp, pkt, b)) {
			mrt_resp_fatal(qp, MR_NAK_INVALID_REQ, h->psn);
			return;
		}
		last = mrt_op_last(b);
		if (b >= MR_OP_RC_WRITE_FIRST && b <= MR_OP_RC_WRITE_ONLY_IMM) {
			ok = mrt_rx_write(qp, pkt, b);
			if (b == MR_OP_RC_WRITE_LAST_IMM || b == MR_OP_RC_WRITE_ONLY_IMM)
				flags |= MRT_RX_RECV | MRT_RX_RQ;
		} else {
			ok = mrt_rx_send(qp, pkt, b);
			flags |= MRT_RX_RECV | MRT_RX_RQ;
		}
		if (ok && d > 0)
			qp->stats.ooo_placed++;
		break;
	}
	if (!ok || qp->state == MR_QPS_ERR)
		return;
	if (last)
		flags |= MRT_RX_LAST;
	else
		flags &= (uint8_t)~MRT_RX_RECV;
	*mrt_rx_flag(qp, h->psn) = flags;
	s->rseq[h->psn & (MRT_WIN - 1)] = h->mreth.msg_seq;
	if (!mrt_resp_advance(qp))
		return;
	/* ACK at once on out-of-order arrival or a filled hole, CE, message end, AckReq (the
	 * requester is window- or pacing-limited: IBA 9.7.5.1.2); otherwise every
	 * MRT_ACK_EVERY packets or after the delayed-ACK time. READ/atomic requests are answered
	 * by their responses (IBA 9.7.5.1.2: a response implies the ACK), unless they filled a
	 * hole that newer data is waiting behind. */
	if (b == MR_OP_RC_READ_REQUEST || b == MR_OP_RC_CMP_SWAP || b == MR_OP_RC_FETCH_ADD) {
		if (mrt_psn_dist(s->nxt, old) > 1)
			mrt_ack_soon(qp);
	} else if (d != 0 || mrt_psn_dist(s->nxt, old) != 1 || ce || last || h->ackreq ||
	    ++s->unacked >= MRT_ACK_EVERY)
		mrt_ack_soon(qp);
	else if (s->ack_deadline == UINT64_MAX) {
		s->ack_deadline = now + MRT_DELACK_NS;
		rc_timer_update(qp);
	}
}

void mrt_resp_on_timer(struct mr_qp *qp, uint64_t now)
{
	struct mrt_resp *s = &qp->mrt->resp;

	if (s->ack_deadline > now)
		return;
	s->ack_deadline = UINT64_MAX;
	if (s->unacked > 0 && qp->state != MR_QPS_ERR && qp->state != MR_QPS_RESET)
		mrt_ack_soon(qp);
	rc_timer_update(qp);
}

static void mrt_hdr_common(struct mr_qp *qp, uint64_t now, struct mr_tx_pkt *out)
{
	const struct mrt_resp *s = &qp->mrt->resp;
	struct mr_roce_hdrs *h = &out->hdr;

	rc_tx_reset(out);
	out->path = &qp->attr.path;
	h->pkey = 0xffff;
	h->dqpn = qp->attr.dest_qp_num;
	h->mreth.ver = 1;
	h->mreth.ts = mrt_ts(now);
	h->aeth.msn = s->msn;
	h->aeth.syndrome = MR_AETH_ACK | MR_AETH_CREDIT_INVALID;
}

static void mrt_fill_ack(struct mr_qp *qp, struct mr_tx_pkt *out)
{
	struct mrt_resp *s = &qp->mrt->resp;
	struct mr_roce_hdrs *h = &out->hdr;

	h->opcode = mr_opcode_to_metaroce(MR_OP_RC_ACK);
	h->psn = mr_psn_add(s->nxt, MR_PSN_MASK); /* cumulative */
	h->mreth.ts = s->echo_ts;
	h->mreth.path = (uint8_t)s->echo_path;
	h->mreth.flags = s->echo_ece ? MR_MRETH_ECE : 0;
	out->udp_sport = mrt_udp_sport(qp->attr.path.udp_sport, s->echo_path);
	h->sack.base = s->nxt;
	mrt_rx_sack(qp, h->sack.bitmap);
	h->sack.ce_count = (uint16_t)(s->ce_count > 0xffff ? 0xffff : s->ce_count);
	s->ce_count = 0;
}

int mrt_resp_tx(struct mr_qp *qp, uint64_t now, struct mr_tx_pkt *out)
{
	struct mrt_resp *s = &qp->mrt->resp;
	struct mr_roce_hdrs *h = &out->hdr;
	struct rc_resp *e;
	bool done = true;

	if (s->ack_pending) {
		mrt_hdr_common(qp, now, out);
		mrt_fill_ack(qp, out);
		s->ack_pending = false;
		s->unacked = 0;
		s->ack_deadline = UINT64_MAX;
		qp->stats.acks_sent++;
		rc_timer_update(qp);
		return 1;
	}
	if (qp->resp.ring_count == 0)
		return 0;
	e = &qp->resp.ring[qp->resp.ring_head];
	mrt_hdr_common(qp, now, out);
	switch (e->kind) {
	case RC_RESP_ACK: /* NAKs: BTH.PSN is the NAKed PSN, SACKETH the current state */
		mrt_fill_ack(qp, out);
		h->psn = e->psn;
		h->aeth.syndrome = e->syndrome;
		if ((e->syndrome & MR_AETH_TYPE_MASK) == MR_AETH_RNR_NAK)
			qp->stats.rnr_naks_sent++;
		else if ((e->syndrome & 0x1f) == MR_NAK_INVALID_REQ)
			qp->stats.inv_req_naks_sent++;
		else if ((e->syndrome & 0x1f) == MR_NAK_REM_ACCESS_ERR)
			qp->stats.rem_access_naks_sent++;
		break;
	case RC_RESP_ATOMIC:
		h->opcode = mr_opcode_to_metaroce(MR_OP_RC_ATOMIC_ACK);
		h->psn = e->psn;
		h->atmack = e->orig;
		qp->resp.rd_pending--;
		qp->resp.rd_dups -= e->dup;
		break;
	default: {
		uint32_t mtu = rc_mtu(qp), n = e->left < mtu ? e->left : mtu;
		uint32_t i = e->first_psn, cnt = e->last_psn;
		uint8_t op;

		if (cnt == 1)
			op = MR_OP_RC_READ_RESPONSE_ONLY;
		else if (i == 0)
			op = MR_OP_RC_READ_RESPONSE_FIRST;
		else if (i + 1 == cnt)
			op = MR_OP_RC_READ_RESPONSE_LAST;
		else
			op = MR_OP_RC_READ_RESPONSE_MIDDLE;
		h->opcode = mr_opcode_to_metaroce(op);
		h->psn = e->psn; /* the READ request's PSN; MRETH.offset places the payload */
		/* Responses are sprayed too (per-packet placement by MRETH.offset makes their
		 * arrival order irrelevant): round robin over the QP's entropies from the one the
		 * request came on. The responder gets no ACKs for them, so no path feedback: a
		 * response lost on a bad path shows as a missing range that the requester's RACK
		 * re-requests (mrt_requester.c), on a path its own feedback chose. */
		if (qp->mrt->req.n_paths > 1) {
			uint16_t p = (uint16_t)((e->path + i) % qp->mrt->req.n_paths);

			h->mreth.path = (uint8_t)p;
			out->udp_sport = mrt_udp_sport(qp->attr.path.udp_sport, p);
		}
		h->mreth.msg_seq = e->msg_seq;
		h->mreth.offset = e->off + i * mtu;
		h->mreth.msg_len = e->msg_len;
		if (n > 0) { /* a zero-length READ has no source (host NULL: C11 6.5.6) */
			out->iov[0].base = e->host;
			out->iov[0].len = n;
			out->niov = 1;
			e->host += n;
		}
		out->paylen = n;
		e->left -= n;
		e->first_psn++;
		done = e->first_psn >= cnt;
		if (done) {
			qp->resp.rd_pending--;
			qp->resp.rd_dups -= e->dup;
		}
		break;
	}
	}
	if (done) {
		qp->resp.ring_head = (qp->resp.ring_head + 1) % RC_RESP_RING;
		qp->resp.ring_count--;
	}
	return 1;
}
