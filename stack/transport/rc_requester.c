/* SPDX-License-Identifier: MIT
 * Requester (IBA 9.7.4, 9.7.6): turns send WQEs into request packets, segments by path MTU,
 * assigns PSNs, and restarts from a given PSN for go-back-N (as rxe's req_retry).
 */
#include <errno.h>
#include <string.h>

#include "rc_internal.h"

/* Resolve the SGEs' lkeys once, when the WQE is first started (IBA 10.6.3.2: an invalid
 * L_Key is a local protection error). READ/atomic results are written locally, so their
 * SGEs need LOCAL_WRITE. Returns 0 or -EACCES. */
int rc_req_resolve(struct mr_qp *qp, struct rc_swqe *w)
{
	uint32_t need = rc_wr_is_rd_atomic(w->wr.opcode) ? MR_ACCESS_LOCAL_WRITE : 0;

	for (uint32_t i = 0; i < w->wr.num_sge; i++) {
		const struct mr_sge *sg = &w->wr.sg_list[i];
		struct mr_memreg *mr;

		if (sg->length == 0) {
			w->host[i] = NULL;
			continue;
		}
		mr = rc_mr_lookup(qp->ctx, qp->init.pd, sg->lkey, sg->addr, sg->length, need);
		if (mr == NULL)
			return -EACCES;
		w->host[i] = mr->host + (sg->addr - mr->iova);
	}
	w->resolved = true;
	return 0;
}

/* Gather n bytes at message offset off into iov; returns the number of iov entries. */
unsigned int rc_req_gather(const struct rc_swqe *w, uint32_t off, uint32_t n, struct mr_iov *iov)
{
	unsigned int k = 0;

	for (uint32_t i = 0; i < w->wr.num_sge && n > 0; i++) {
		uint32_t l = w->wr.sg_list[i].length;
		uint32_t take;

		if (off >= l) {
			off -= l;
			continue;
		}
		take = l - off < n ? l - off : n;
		iov[k].base = w->host[i] + off;
		iov[k].len = take;
		k++;
		n -= take;
		off = 0;
	}
	return k;
}

static void rc_req_fail(struct mr_qp *qp, struct rc_swqe *w, enum mr_wc_status st)
{
	w->status = st;
	rc_qp_to_err(qp);
}

uint8_t rc_req_opcode(enum mr_wr_opcode op, bool first, bool last)
{
	bool write = op == MR_WR_RDMA_WRITE || op == MR_WR_RDMA_WRITE_WITH_IMM;
	uint8_t base = write ? MR_OP_RC_WRITE_FIRST : MR_OP_RC_SEND_FIRST;

	if (!last)
		return first ? base : (uint8_t)(base + 1); /* FIRST / MIDDLE */
	switch (op) {
	case MR_WR_SEND_WITH_IMM:
		return first ? MR_OP_RC_SEND_ONLY_IMM : MR_OP_RC_SEND_LAST_IMM;
	case MR_WR_RDMA_WRITE_WITH_IMM:
		return first ? MR_OP_RC_WRITE_ONLY_IMM : MR_OP_RC_WRITE_LAST_IMM;
	case MR_WR_SEND_WITH_INV:
		return first ? MR_OP_RC_SEND_ONLY_INV : MR_OP_RC_SEND_LAST_INV;
	default:
		return first ? (uint8_t)(base + 4) : (uint8_t)(base + 2); /* ONLY / LAST */
	}
}

int rc_req_tx(struct mr_qp *qp, uint64_t now, struct mr_tx_pkt *out)
{
	uint32_t mtu = rc_mtu(qp), inflight, psn;
	struct mr_roce_hdrs *h = &out->hdr;
	struct rc_swqe *w;
	bool rd;

	if ((qp->state != MR_QPS_RTS && qp->state != MR_QPS_SQD) || qp->req.rnr_wait ||
	    qp->req.cur == qp->sq_tail)
		return 0;
	w = rc_sq_at(qp, qp->req.cur);
	/* IBA 10.3.1 (SQD): a draining send queue starts no new WQE, but finishes (and
	 * retransmits) the ones already started. */
	if (qp->state == MR_QPS_SQD && !w->psn_valid)
		return 0;
	if (!w->resolved && rc_req_resolve(qp, w) < 0) {
		rc_req_fail(qp, w, MR_WC_LOC_PROT_ERR);
		return 0;
	}
	inflight = (uint32_t)mr_psn_cmp(qp->req.psn, qp->comp.psn);
	if (inflight >= qp->ctx->max_inflight)
		return 0;
	/* DCQCN reaction point (A17.9.3): the requester is paced at the controller's rate. */
	if (qp->cc_on && !qp_cc_can_send(qp, now, (uint64_t)inflight * mtu))
		return 0;
	rd = rc_wr_is_rd_atomic(w->wr.opcode);
	/* IBA 10.8.3.3: a fenced WQE waits for earlier READ/atomics to complete. */
	if (qp->req.off == 0 && (w->wr.send_flags & MR_SEND_FENCE) && qp->req.rd_atomic > 0)
		return 0;
	/* Never more outstanding READ/atomics than the initiator depth (IBA 11.2.4.2). */
	if (rd && qp->req.rd_atomic >= qp->attr.max_rd_atomic)
		return 0;
	if (!w->psn_valid) {
		w->npkts = w->wr.opcode == MR_WR_RDMA_READ || !rd ? rc_npkts(w->len, mtu) : 1;
		w->first_psn = qp->req.psn;
		w->last_psn = mr_psn_add(w->first_psn, w->npkts - 1);
		w->psn_valid = true;
	}

	rc_tx_reset(out);
	out->path = &qp->attr.path;
	h->pkey = 0xffff;
	h->dqpn = qp->attr.dest_qp_num;
	h->psn = psn = qp->req.psn;

	switch (w->wr.opcode) {
	case MR_WR_RDMA_READ: {
		uint32_t left = w->len - qp->req.off;
		uint32_t n = rc_npkts(left, mtu);

		/* IBA 9.7.1: keep every PSN in flight within half the 24-bit space. */
		if ((uint64_t)inflight + n > RC_MAX_INFLIGHT)
			return 0;
		/* IBA 9.7.4.1.4: a READ occupies one PSN per response; a re-issued READ starts at
		 * the first missing response with address and length advanced (as rxe). */
		h->opcode = MR_OP_RC_READ_REQUEST;
		h->reth.va = w->wr.rdma.remote_addr + qp->req.off;
		h->reth.rkey = w->wr.rdma.rkey;
		h->reth.dlen = left;
		h->ackreq = true;
		qp->req.psn = mr_psn_add(psn, n);
		qp->req.cur++;
		qp->req.off = 0;
		qp->req.rd_atomic++;
		break;
	}
	case MR_WR_ATOMIC_CMP_AND_SWP:
	case MR_WR_ATOMIC_FETCH_AND_ADD:
		h->opcode = w->wr.opcode == MR_WR_ATOMIC_CMP_AND_SWP ? MR_OP_RC_CMP_SWAP :
								       MR_OP_RC_FETCH_ADD;
		h->atmeth.va = w->wr.atomic.remote_addr;
		h->atmeth.rkey = w->wr.atomic.rkey;
		if (w->wr.opcode == MR_WR_ATOMIC_CMP_AND_SWP) {
			h->atmeth.swap_add = w->wr.atomic.swap;
			h->atmeth.cmp = w->wr.atomic.compare_add;
		} else {
			h->atmeth.swap_add = w->wr.atomic.compare_add;
		}
		h->ackreq = true;
		qp->req.psn = mr_psn_add(psn, 1);
		qp->req.cur++;
		qp->req.off = 0;
		qp->req.rd_atomic++;
		break;
	default: {
		uint32_t off = qp->req.off;
		uint32_t n = w->len - off < mtu ? w->len - off : mtu;
		bool first = off == 0, last = off + n == w->len;
		bool write = w->wr.opcode == MR_WR_RDMA_WRITE ||
			     w->wr.opcode == MR_WR_RDMA_WRITE_WITH_IMM;

		h->opcode = rc_req_opcode(w->wr.opcode, first, last);
		if (write && first) { /* IBA 9.3.3.3.2: RETH only in WRITE FIRST/ONLY */
			h->reth.va = w->wr.rdma.remote_addr;
			h->reth.rkey = w->wr.rdma.rkey;
			h->reth.dlen = w->len;
		}
		if (last) {
			h->imm = w->wr.imm_data;
			h->ieth_rkey = w->wr.invalidate_rkey;
			h->se = (w->wr.send_flags & MR_SEND_SOLICITED) != 0 &&
				w->wr.opcode != MR_WR_RDMA_WRITE;
			/* AckReq on the last packet of each message (as rxe; IBA 9.7.5.1). */
			h->ackreq = true;
		}
		out->niov = rc_req_gather(w, off, n, out->iov);
		out->paylen = n;
		qp->req.psn = mr_psn_add(psn, 1);
		if (last) {
			qp->req.cur++;
			qp->req.off = 0;
		} else {
			qp->req.off = off + n;
		}
		break;
	}
	}

	/* Also ask for an ACK when this packet fills the window or after RC_ACK_EVERY packets
	 * without one (as rxe's noack_pkts), so a window smaller than a message cannot stall. */
	if (!h->ackreq && (++qp->req.noack >= RC_ACK_EVERY ||
			   inflight + 1 >= qp->ctx->max_inflight))
		h->ackreq = true;
	if (h->ackreq)
		qp->req.noack = 0;
	if (qp->cc_on)
		qp_cc_sent(qp, now, out->paylen, 0);
	if (mr_psn_cmp(psn, qp->req.psn_max) < 0)
		qp->stats.retransmits++;
	if (mr_psn_cmp(qp->req.psn, qp->req.psn_max) > 0)
		qp->req.psn_max = qp->req.psn;
	/* IBA 9.7.6.1.3: the local ACK timer runs while responses are outstanding. */
	if (qp->comp.ack_deadline == UINT64_MAX && qp->attr.timeout != 0) {
		qp->comp.ack_deadline = now + mr_ack_timeout_ns(qp->attr.timeout);
		rc_timer_update(qp);
	}
	return 1;
}

void rc_req_seek(struct mr_qp *qp, uint32_t psn)
{
	uint32_t idx = qp->sq_head, off = 0, rd = 0;

	for (; idx != qp->sq_tail; idx++) {
		const struct rc_swqe *w = rc_sq_at(qp, idx);

		if (!w->psn_valid)
			break;
		if (mr_psn_cmp(psn, w->last_psn) <= 0) {
			if (mr_psn_cmp(psn, w->first_psn) < 0 ||
			    w->wr.opcode == MR_WR_ATOMIC_CMP_AND_SWP ||
			    w->wr.opcode == MR_WR_ATOMIC_FETCH_AND_ADD)
				psn = w->first_psn;
			else
				off = ((psn - w->first_psn) & MR_PSN_MASK) * rc_mtu(qp);
			break;
		}
		if (rc_wr_is_rd_atomic(w->wr.opcode))
			rd++;
	}
	qp->req.cur = idx;
	qp->req.off = off;
	qp->req.psn = psn;
	qp->req.rd_atomic = rd;
	rc_sched_req(qp);
}

void rc_req_on_timer(struct mr_qp *qp, uint64_t now)
{
	if (qp->req.rnr_wait && now >= qp->req.rnr_until) {
		/* IBA 9.7.5.2.8: after the RNR timer, resend from the NAKed PSN. */
		qp->req.rnr_wait = false;
		rc_req_seek(qp, qp->comp.psn);
	}
	if (qp->comp.ack_deadline <= now) {
		qp->comp.ack_deadline = UINT64_MAX;
		if ((qp->state == MR_QPS_RTS || qp->state == MR_QPS_SQD) &&
		    mr_psn_cmp(qp->comp.psn, qp->req.psn_max) < 0 && qp->sq_head != qp->sq_tail) {
			qp->stats.timeouts++;
			/* IBA 9.7.6.1.3: retry_cnt timeouts, then a retry-exceeded error. */
			if (qp->comp.retry_left == 0) {
				qp->stats.retry_exceeded++;
				rc_req_fail(qp, rc_sq_at(qp, qp->sq_head), MR_WC_RETRY_EXC_ERR);
				return;
			}
			qp->stats.retry_seqs++;
			qp->comp.retry_left--;
			qp->comp.implied_retried = true;
			rc_req_seek(qp, qp->comp.psn);
		}
	}
	rc_timer_update(qp);
}
