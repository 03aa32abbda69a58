/* SPDX-License-Identifier: MIT
 * Responder (IBA 9.7.5): PSN checks, duplicate handling, placement of SEND/WRITE data, READ
 * and atomic execution, receive completions, and the ACK/NAK/response queue that mr_ctx_tx
 * drains before any request.
 */
#include <errno.h>
#include <string.h>

#include "rc_internal.h"

/* IBA table 45: RNR NAK timer field -> minimum wait, in ns (code 0 is the longest, 655.36 ms). */
static const uint32_t rc_rnr_ns[32] = {
	655360000, 10000, 20000, 30000, 40000, 60000, 80000, 120000,
	160000, 240000, 320000, 480000, 640000, 960000, 1280000, 1920000,
	2560000, 3840000, 5120000, 7680000, 10240000, 15360000, 20480000, 30720000,
	40960000, 61440000, 81920000, 122880000, 163840000, 245760000, 327680000, 491520000,
};

uint64_t rc_rnr_timer_ns(uint8_t code)
{
	return rc_rnr_ns[code & 0x1f];
}

void rc_resp_reset(struct mr_qp *qp)
{
	memset(&qp->resp, 0, sizeof(qp->resp));
	qp->resp.ack_deadline = UINT64_MAX;
	rc_list_del(&qp->resp_link);
}

struct rc_resp *rc_resp_push(struct mr_qp *qp)
{
	struct rc_resp *e;

	if (qp->resp.ring_count == RC_RESP_RING) {
		qp->stats.dropped++; /* the requester's timer / loss recovery resends */
		return NULL;
	}
	e = &qp->resp.ring[(qp->resp.ring_head + qp->resp.ring_count) % RC_RESP_RING];
	memset(e, 0, sizeof(*e));
	qp->resp.ring_count++;
	rc_sched_resp(qp);
	return e;
}

/* Queue an ACK or NAK. Positive ACKs coalesce into a still-unsent ACK at the tail: an ACK for
 * PSN n acknowledges everything up to n (IBA 9.7.5.1.2). */
static void rc_resp_ack(struct mr_qp *qp, uint8_t syndrome, uint32_t psn)
{
	struct rc_resp *e;

	if ((syndrome & MR_AETH_TYPE_MASK) == MR_AETH_ACK && qp->resp.ring_count > 0) {
		e = &qp->resp.ring[(qp->resp.ring_head + qp->resp.ring_count - 1) % RC_RESP_RING];
		if (e->kind == RC_RESP_ACK && (e->syndrome & MR_AETH_TYPE_MASK) == MR_AETH_ACK &&
		    mr_psn_cmp(psn, e->psn) >= 0) {
			e->psn = psn;
			e->msn = qp->resp.msn;
			return;
		}
	}
	e = rc_resp_push(qp);
	if (e == NULL)
		return;
	e->kind = RC_RESP_ACK;
	e->syndrome = syndrome;
	e->psn = psn;
	e->msn = qp->resp.msn;
}

/* ACK when the requester asks (AckReq) and at least every RC_ACK_EVERY packets, so that a
 * long message without AckReq still frees the requester's window (IBA 9.7.5.1.2). */
static void rc_resp_ack_policy(struct mr_qp *qp, const struct mr_pkt *pkt, uint64_t now)
{
	if (pkt->hdr.ackreq || ++qp->resp.since_ack >= RC_ACK_EVERY) {
		qp->resp.since_ack = 0;
		qp->resp.ack_deadline = UINT64_MAX;
		rc_resp_ack(qp, MR_AETH_ACK | MR_AETH_CREDIT_INVALID, pkt->hdr.psn);
	} else {
		/* Restarted by every packet: it fires after a gap in the run, not within a
		 * steady stream (there RC_ACK_EVERY paces the ACKs). */
		qp->resp.ack_deadline = now + RC_DELAYED_ACK_NS;
	}
	rc_timer_update(qp);
}

/* A READ response or atomic ACK acknowledges everything before it: no ACK owed. */
static void rc_resp_acked(struct mr_qp *qp)
{
	qp->resp.since_ack = 0;
	qp->resp.ack_deadline = UINT64_MAX;
	rc_timer_update(qp);
}

void rc_resp_on_timer(struct mr_qp *qp, uint64_t now)
{
	if (qp->resp.ack_deadline > now)
		return;
	qp->resp.ack_deadline = UINT64_MAX;
	if (qp->resp.since_ack > 0 && qp->state != MR_QPS_ERR && qp->state != MR_QPS_RESET) {
		/* IBA 9.7.5.1.2: acknowledge up to the last PSN received in sequence. */
		qp->resp.since_ack = 0;
		rc_resp_ack(qp, MR_AETH_ACK | MR_AETH_CREDIT_INVALID,
			    mr_psn_add(qp->resp.epsn, MR_PSN_MASK));
	}
	rc_timer_update(qp);
}

/* Class B/C/D responder errors (IBA 9.7.5.2.2-9.7.5.2.4): NAK the offending PSN, then the QP
 * enters ERR (as rxe's do_class_ac_error); the NAK stays queued and still goes out. */
static void rc_resp_fatal(struct mr_qp *qp, uint8_t nak, uint32_t psn)
{
	rc_resp_ack(qp, MR_AETH_NAK | nak, psn);
	rc_qp_to_err(qp);
}

static void rc_resp_recv_done(struct mr_qp *qp, enum mr_wc_status st, enum mr_wc_opcode op,
			      uint32_t byte_len, uint32_t flags, const struct mr_pkt *pkt)
{
	struct rc_rwqe *r = rc_rq_at(qp, qp->rq_head);
	struct mr_wc wc = {
		.wr_id = r->wr.wr_id,
		.status = st,
		.opcode = op,
		.byte_len = byte_len,
		.qp_num = qp->qpn,
		.src_qp = qp->attr.dest_qp_num,
		.wc_flags = flags,
	};

	if (flags & MR_WC_WITH_IMM)
		wc.imm_data = pkt->hdr.imm;
	if (flags & MR_WC_WITH_INV)
		wc.invalidated_rkey = pkt->hdr.ieth_rkey;
	qp->rq_head++;
	qp->resp.rwqe_bound = false;
	if (st == MR_WC_SUCCESS)
		qp->stats.recvs_completed++;
	rc_cq_push(qp, qp->init.recv_cq, &wc);
}

/* RNR NAK (IBA 9.7.5.2.8): no receive WQE; ePSN stays, the requester resends this PSN after
 * min_rnr_timer. Later packets of the same flight are dropped without a sequence NAK. */
static void rc_resp_rnr(struct mr_qp *qp, uint32_t psn)
{
	rc_resp_ack(qp, MR_AETH_RNR_NAK | qp->attr.min_rnr_timer, psn);
	qp->resp.nak_sent = true;
}

/* Resolve a receive WQE's SGEs to host pointers (local write access, bounds checked: IBA
 * 10.6.3). Shared by the RC and MetaRoCE responders. Returns 0, or -1 for a bad lkey/range. */
int rc_rwqe_bind(struct mr_qp *qp, struct rc_rwqe *r)
{
	for (uint32_t i = 0; i < r->wr.num_sge; i++) {
		const struct mr_sge *sg = &r->wr.sg_list[i];
		struct mr_memreg *mr;

		r->host[i] = NULL;
		if (sg->length == 0)
			continue;
		mr = rc_mr_lookup(qp->ctx, qp->init.pd, sg->lkey, sg->addr, sg->length,
				  MR_ACCESS_LOCAL_WRITE);
		if (mr == NULL)
			return -1;
		r->host[i] = mr->host + (sg->addr - mr->iova);
	}
	return 0;
}

static int rc_resp_bind_recv(struct mr_qp *qp)
{
	if (rc_rwqe_bind(qp, rc_rq_at(qp, qp->rq_head)) < 0)
		return -1;
	qp->resp.rwqe_bound = true;
	qp->resp.recv_off = 0;
	return 0;
}

static void rc_resp_scatter(const struct rc_rwqe *r, uint32_t off, const uint8_t *src, uint32_t n)
{
	for (uint32_t i = 0; i < r->wr.num_sge && n > 0; i++) {
		uint32_t l = r->wr.sg_list[i].length, take;

		if (off >= l) {
			off -= l;
			continue;
		}
		take = l - off < n ? l - off : n;
		memcpy(r->host[i] + off, src, take);
		src += take;
		n -= take;
		off = 0;
	}
}

static bool rc_op_first(uint8_t op)
{
	switch (op) {
	case MR_OP_RC_SEND_FIRST:
	case MR_OP_RC_SEND_ONLY:
	case MR_OP_RC_SEND_ONLY_IMM:
	case MR_OP_RC_SEND_ONLY_INV:
	case MR_OP_RC_WRITE_FIRST:
	case MR_OP_RC_WRITE_ONLY:
	case MR_OP_RC_WRITE_ONLY_IMM:
	case MR_OP_RC_READ_REQUEST:
	case MR_OP_RC_CMP_SWAP:
	case MR_OP_RC_FETCH_ADD:
		return true;
	default:
		return false;
	}
}

static bool rc_op_last(uint8_t op)
{
	return op != MR_OP_RC_SEND_FIRST && op != MR_OP_RC_SEND_MIDDLE &&
	       op != MR_OP_RC_WRITE_FIRST && op != MR_OP_RC_WRITE_MIDDLE;
}

static bool rc_op_send(uint8_t op)
{
	return op <= MR_OP_RC_SEND_ONLY_IMM || op == MR_OP_RC_SEND_LAST_INV ||
	       op == MR_OP_RC_SEND_ONLY_INV;
}

static bool rc_op_write(uint8_t op)
{
	return op >= MR_OP_RC_WRITE_FIRST && op <= MR_OP_RC_WRITE_ONLY_IMM;
}

static void rc_resp_send(struct mr_qp *qp, const struct mr_pkt *pkt, uint64_t now)
{
	uint8_t op = pkt->hdr.opcode;
	struct rc_rwqe *r;

	if (!qp->resp.rwqe_bound) {
		if (!rc_rq_ready(qp, qp->rq_head)) {
			rc_resp_rnr(qp, pkt->hdr.psn);
			return;
		}
		if (rc_resp_bind_recv(qp) < 0) {
			/* IBA 9.7.5.2.4: a local protection fault here is a remote operational
			 * error for the requester. */
			rc_resp_recv_done(qp, MR_WC_LOC_PROT_ERR, MR_WC_RECV, 0, 0, pkt);
			rc_resp_fatal(qp, MR_NAK_REM_OP_ERR, pkt->hdr.psn);
			return;
		}
	}
	r = rc_rq_at(qp, qp->rq_head);
	if (pkt->paylen > r->len - qp->resp.recv_off) {
		/* IBA 9.7.5.2.2: a SEND longer than the receive buffer is an invalid request;
		 * the receive completes with a local length error. */
		rc_resp_recv_done(qp, MR_WC_LOC_LEN_ERR, MR_WC_RECV, 0, 0, pkt);
		rc_resp_fatal(qp, MR_NAK_INVALID_REQ, pkt->hdr.psn);
		return;
	}
	rc_resp_scatter(r, qp->resp.recv_off, pkt->payload, pkt->paylen);
	qp->resp.recv_off += pkt->paylen;
	qp->resp.epsn = mr_psn_add(qp->resp.epsn, 1);
	if (rc_op_last(op)) {
		uint32_t flags = 0;

		if (op == MR_OP_RC_SEND_LAST_IMM || op == MR_OP_RC_SEND_ONLY_IMM)
			flags = MR_WC_WITH_IMM;
		/* IBA 10.6.7: only memory windows and fast-registered MRs can be
		 * invalidated; neither exists here, so the rkey is only reported. */
		if (op == MR_OP_RC_SEND_LAST_INV || op == MR_OP_RC_SEND_ONLY_INV)
			flags = MR_WC_WITH_INV;
		qp->resp.in_msg = RC_MSG_NONE;
		qp->resp.msn = (qp->resp.msn + 1) & MR_PSN_MASK; /* IBA 9.7.5.1.1 */
		rc_resp_recv_done(qp, MR_WC_SUCCESS, MR_WC_RECV, qp->resp.recv_off, flags, pkt);
	} else {
		qp->resp.in_msg = RC_MSG_SEND;
	}
	rc_resp_ack_policy(qp, pkt, now);
}

static void rc_resp_write_advance(struct mr_qp *qp, const struct mr_pkt *pkt, uint64_t now,
				  bool imm);

static void rc_resp_write(struct mr_qp *qp, const struct mr_pkt *pkt, uint64_t now)
{
	uint8_t op = pkt->hdr.opcode;
	bool imm = op == MR_OP_RC_WRITE_LAST_IMM || op == MR_OP_RC_WRITE_ONLY_IMM;

	/* WRITE with immediate consumes a receive WQE: RNR before touching memory. */
	if (imm && !rc_rq_ready(qp, qp->rq_head)) {
		rc_resp_rnr(qp, pkt->hdr.psn);
		return;
	}
	if (rc_op_first(op)) {
		const uint32_t dlen = pkt->hdr.reth.dlen;
		struct mr_memreg *mr = NULL;

		/* IBA 9.7.5.2.3 / 10.6.3.2: R_Key, range and the QP's access must allow the
		 * write; a zero-length WRITE checks no R_Key. */
		if (dlen > RC_MAX_MSG) {
			rc_resp_fatal(qp, MR_NAK_INVALID_REQ, pkt->hdr.psn);
			return;
		}
		if (dlen > 0) {
			if (qp->attr.qp_access_flags & MR_ACCESS_REMOTE_WRITE)
				mr = rc_mr_lookup(qp->ctx, qp->init.pd, pkt->hdr.reth.rkey,
						  pkt->hdr.reth.va, dlen, MR_ACCESS_REMOTE_WRITE);
			if (mr == NULL) {
				rc_resp_fatal(qp, MR_NAK_REM_ACCESS_ERR, pkt->hdr.psn);
				return;
			}
			qp->resp.wptr = mr->host + (pkt->hdr.reth.va - mr->iova);
			qp->resp.wkey = mr->key;
		} else {
			qp->resp.wptr = NULL;
		}
		qp->resp.wleft = qp->resp.wlen = dlen;
	}
	/* IBA 10.6.7: the app deregistered the region this WRITE targets after its FIRST packet
	 * (mr_dereg revoked wptr): its R_Key is gone, so the rest is a remote access error
	 * (IBA 9.7.5.2.3, class C), never a write into memory that may be unmapped. */
	if (!rc_op_first(op) && qp->resp.wptr == NULL && qp->resp.wleft > 0) {
		rc_resp_fatal(qp, MR_NAK_REM_ACCESS_ERR, pkt->hdr.psn);
		return;
	}
	/* IBA 9.7.5.2.2: payload beyond the RETH length, or a message ending short of it. */
	if (pkt->paylen > qp->resp.wleft || (rc_op_last(op) && pkt->paylen != qp->resp.wleft)) {
		rc_resp_fatal(qp, MR_NAK_INVALID_REQ, pkt->hdr.psn);
		return;
	}
	if (pkt->paylen)
		memcpy(qp->resp.wptr, pkt->payload, pkt->paylen);
	rc_resp_write_advance(qp, pkt, now, imm);
}

/* The payload is in place: move past it, complete the message on its last packet. */
static void rc_resp_write_advance(struct mr_qp *qp, const struct mr_pkt *pkt, uint64_t now,
				  bool imm)
{
	uint8_t op = pkt->hdr.opcode;

	if (pkt->paylen) {
		qp->resp.wptr += pkt->paylen;
		qp->resp.wleft -= pkt->paylen;
	}
	qp->resp.epsn = mr_psn_add(qp->resp.epsn, 1);
	if (rc_op_last(op)) {
		qp->resp.in_msg = RC_MSG_NONE;
		qp->resp.msn = (qp->resp.msn + 1) & MR_PSN_MASK; /* IBA 9.7.5.1.1 */
		if (imm)
			rc_resp_recv_done(qp, MR_WC_SUCCESS, MR_WC_RECV_RDMA_WITH_IMM,
					  qp->resp.wlen, MR_WC_WITH_IMM, pkt);
	} else {
		qp->resp.in_msg = RC_MSG_WRITE;
	}
	rc_resp_ack_policy(qp, pkt, now);
}

/* Validate a READ request's R_Key and range; returns the first byte or NULL (access error).
 * *ok distinguishes a zero-length READ (no R_Key check) from a failure. */
static const uint8_t *rc_resp_read_src(struct mr_qp *qp, const struct mr_pkt *pkt, bool *ok)
{
	struct mr_memreg *mr = NULL;

	*ok = true;
	if (pkt->hdr.reth.dlen == 0)
		return NULL;
	if (qp->attr.qp_access_flags & MR_ACCESS_REMOTE_READ)
		mr = rc_mr_lookup(qp->ctx, qp->init.pd, pkt->hdr.reth.rkey, pkt->hdr.reth.va,
				  pkt->hdr.reth.dlen, MR_ACCESS_REMOTE_READ);
	if (mr == NULL) {
		*ok = false;
		return NULL;
	}
	return mr->host + (pkt->hdr.reth.va - mr->iova);
}

static void rc_resp_queue_read(struct mr_qp *qp, const struct mr_pkt *pkt, const uint8_t *src,
			       uint32_t npkts)
{
	struct rc_resp *e = rc_resp_push(qp);

	if (e == NULL)
		return;
	e->kind = RC_RESP_READ;
	e->psn = e->first_psn = pkt->hdr.psn;
	e->last_psn = mr_psn_add(pkt->hdr.psn, npkts - 1);
	e->host = src;
	e->left = pkt->hdr.reth.dlen;
	e->rkey = pkt->hdr.reth.rkey;
	e->msn = qp->resp.msn;
	qp->resp.rd_pending++;
}

static bool rc_resp_rd_room(const struct mr_qp *qp)
{
	return qp->resp.ring_count + 2 <= RC_RESP_RING;
}

static void rc_resp_read(struct mr_qp *qp, const struct mr_pkt *pkt)
{
	uint32_t dlen = pkt->hdr.reth.dlen, n;
	const uint8_t *src;
	bool ok;

	/* IBA 9.7.5.2.2: more outstanding READ/atomics than the responder resources. */
	if (dlen > RC_MAX_MSG || qp->resp.rd_pending >= qp->attr.max_dest_rd_atomic) {
		rc_resp_fatal(qp, MR_NAK_INVALID_REQ, pkt->hdr.psn);
		return;
	}
	if (!rc_resp_rd_room(qp)) {
		qp->stats.dropped++;
		return;
	}
	src = rc_resp_read_src(qp, pkt, &ok);
	if (!ok) {
		rc_resp_fatal(qp, MR_NAK_REM_ACCESS_ERR, pkt->hdr.psn);
		return;
	}
	n = rc_npkts(dlen, rc_mtu(qp));
	if (n > RC_MAX_INFLIGHT) {
		rc_resp_fatal(qp, MR_NAK_INVALID_REQ, pkt->hdr.psn);
		return;
	}
	qp->resp.msn = (qp->resp.msn + 1) & MR_PSN_MASK; /* IBA 9.7.5.1.1 */
	rc_resp_queue_read(qp, pkt, src, n);
	/* IBA 9.7.4.1.4: the READ consumes one PSN per response packet. */
	qp->resp.epsn = mr_psn_add(qp->resp.epsn, n);
	rc_resp_acked(qp);
}

static void rc_resp_atomic(struct mr_qp *qp, const struct mr_pkt *pkt)
{
	struct mr_memreg *mr = NULL;
	struct rc_rd_res *res;
	struct rc_resp *e;
	uint64_t orig, val;
	uint8_t *p;

	/* IBA 9.4.5: an atomic's VA must be 8-byte aligned, else an invalid request. */
	if ((pkt->hdr.atmeth.va & 7) || qp->resp.rd_pending >= qp->attr.max_dest_rd_atomic) {
		rc_resp_fatal(qp, MR_NAK_INVALID_REQ, pkt->hdr.psn);
		return;
	}
	if (!rc_resp_rd_room(qp)) {
		qp->stats.dropped++;
		return;
	}
	if (qp->attr.qp_access_flags & MR_ACCESS_REMOTE_ATOMIC)
		mr = rc_mr_lookup(qp->ctx, qp->init.pd, pkt->hdr.atmeth.rkey, pkt->hdr.atmeth.va,
				  8, MR_ACCESS_REMOTE_ATOMIC);
	if (mr == NULL) {
		rc_resp_fatal(qp, MR_NAK_REM_ACCESS_ERR, pkt->hdr.psn);
		return;
	}
	p = mr->host + (pkt->hdr.atmeth.va - mr->iova);
	memcpy(&orig, p, 8);
	if (pkt->hdr.opcode == MR_OP_RC_CMP_SWAP)
		val = orig == pkt->hdr.atmeth.cmp ? pkt->hdr.atmeth.swap_add : orig;
	else
		val = orig + pkt->hdr.atmeth.swap_add;
	memcpy(p, &val, 8);

	res = &qp->resp.res[qp->resp.res_next];
	qp->resp.res_next = (qp->resp.res_next + 1) % qp->attr.max_dest_rd_atomic;
	res->valid = true;
	res->atomic = true;
	res->psn = pkt->hdr.psn;
	res->orig = orig;

	qp->resp.msn = (qp->resp.msn + 1) & MR_PSN_MASK; /* IBA 9.7.5.1.1 */
	e = rc_resp_push(qp);
	if (e != NULL) {
		e->kind = RC_RESP_ATOMIC;
		e->psn = pkt->hdr.psn;
		e->msn = qp->resp.msn;
		e->orig = orig;
		qp->resp.rd_pending++;
	}
	qp->resp.epsn = mr_psn_add(qp->resp.epsn, 1);
	rc_resp_acked(qp);
}

/* A duplicate READ/atomic request at PSN p means the requester went back (go-back-N) to p and
 * will re-send every request after it: queued READ responses and atomic ACKs that cover p or
 * later are obsolete (the duplicates re-create them). Drop them, so that they neither waste the
 * link nor hold responder resources (IBA 9.7.5.2.2 lets the responder abandon a response in
 * progress when a duplicate arrives; rxe likewise restarts on the duplicate). Keeping them made
 * rd_pending exceed max_dest_rd_atomic and NAK the requester's next, legal READ. Responses
 * wholly before p are kept: earlier duplicates of the same go-back-N pass queued them. */
static void rc_resp_abort_reads(struct mr_qp *qp, uint32_t psn)
{
	uint32_t kept = 0;

	for (uint32_t i = 0; i < qp->resp.ring_count; i++) {
		struct rc_resp *e = &qp->resp.ring[(qp->resp.ring_head + i) % RC_RESP_RING];
		uint32_t last = e->kind == RC_RESP_READ ? e->last_psn : e->psn;

		if ((e->kind == RC_RESP_READ || e->kind == RC_RESP_ATOMIC) &&
		    mr_psn_cmp(last, psn) >= 0) {
			qp->resp.rd_pending--;
			continue;
		}
		if (kept != i)
			qp->resp.ring[(qp->resp.ring_head + kept) % RC_RESP_RING] = *e;
		kept++;
	}
	qp->resp.ring_count = kept;
}

/* PSN before ePSN (IBA 9.7.5.1 duplicates): SEND/WRITE are re-ACKed, never re-executed; a
 * READ is re-executed from memory starting at the duplicate's PSN; an atomic is answered from
 * the saved result, never executed twice. */
static void rc_resp_duplicate(struct mr_qp *qp, const struct mr_pkt *pkt)
{
	uint8_t op = pkt->hdr.opcode;

	qp->stats.duplicate_requests++;
	if (op == MR_OP_RC_READ_REQUEST || op == MR_OP_RC_CMP_SWAP || op == MR_OP_RC_FETCH_ADD)
		rc_resp_abort_reads(qp, pkt->hdr.psn);
	if (op == MR_OP_RC_READ_REQUEST) {
		uint32_t n = rc_npkts(pkt->hdr.reth.dlen, rc_mtu(qp));
		const uint8_t *src;
		bool ok;

		if (pkt->hdr.reth.dlen > RC_MAX_MSG ||
		    mr_psn_cmp(mr_psn_add(pkt->hdr.psn, n - 1), qp->resp.epsn) >= 0 ||
		    qp->resp.rd_pending >= qp->attr.max_dest_rd_atomic || !rc_resp_rd_room(qp)) {
			qp->stats.dropped++;
			return;
		}
		src = rc_resp_read_src(qp, pkt, &ok);
		if (!ok) {
			qp->stats.dropped++;
			return;
		}
		rc_resp_queue_read(qp, pkt, src, n);
		return;
	}
	if (op == MR_OP_RC_CMP_SWAP || op == MR_OP_RC_FETCH_ADD) {
		for (uint32_t i = 0; i < qp->attr.max_dest_rd_atomic; i++) {
			const struct rc_rd_res *res = &qp->resp.res[i];
			struct rc_resp *e;

			if (!res->valid || !res->atomic || res->psn != pkt->hdr.psn)
				continue;
			if (qp->resp.rd_pending >= qp->attr.max_dest_rd_atomic ||
			    (e = rc_resp_push(qp)) == NULL)
				break;
			e->kind = RC_RESP_ATOMIC;
			e->psn = pkt->hdr.psn;
			e->msn = qp->resp.msn;
			e->orig = res->orig;
			qp->resp.rd_pending++;
			return;
		}
		qp->stats.dropped++; /* result no longer saved: the requester will time out */
		return;
	}
	/* C9-105 (as rxe): a duplicate SEND/WRITE is acknowledged again, AckReq or not, with the
	 * most recent PSN received (ePSN - 1): the requester resent it because our ACKs were lost,
	 * and every further ACK is a chance to stop its retry countdown. Back-to-back ACKs still
	 * coalesce in the output ring (rc_resp_ack). */
	rc_resp_ack(qp, MR_AETH_ACK | MR_AETH_CREDIT_INVALID, mr_psn_add(qp->resp.epsn, MR_PSN_MASK));
}

/* IBA 9.8.3 / 9.7.5.2.2: opcode must continue the message in progress (or start a new one),
 * and FIRST/MIDDLE carry exactly one MTU, LAST 1..MTU, ONLY 0..MTU, READ/atomic nothing. */
static bool rc_resp_valid_seq(const struct mr_qp *qp, const struct mr_pkt *pkt)
{
	uint8_t op = pkt->hdr.opcode;
	uint32_t mtu = rc_mtu(qp), len = pkt->paylen;
	bool first = rc_op_first(op), last = rc_op_last(op);

	switch (qp->resp.in_msg) {
	case RC_MSG_SEND:
		if (first || !rc_op_send(op))
			return false;
		break;
	case RC_MSG_WRITE:
		if (first || !rc_op_write(op))
			return false;
		break;
	default:
		if (!first)
			return false;
		break;
	}
	if (op == MR_OP_RC_READ_REQUEST || op == MR_OP_RC_CMP_SWAP || op == MR_OP_RC_FETCH_ADD)
		return len == 0;
	if (!last)
		return len == mtu;
	if (!first)
		return len >= 1 && len <= mtu;
	return len <= mtu;
}

static bool rc_resp_state_ok(const struct mr_qp *qp)
{
	/* IBA 10.3.1: the responder runs from RTR on. */
	return qp->state == MR_QPS_RTR || qp->state == MR_QPS_RTS || qp->state == MR_QPS_SQD ||
	       qp->state == MR_QPS_SQE;
}

int rc_resp_write_checked(struct mr_qp *qp, const struct mr_pkt *pkt, uint64_t now)
{
	uint8_t op = pkt->hdr.opcode;

	/* Exactly the case in which rc_resp_rx would reach the memcpy of rc_resp_write with
	 * nothing before it but checks: the expected PSN inside a WRITE (IBA 9.7.5.2.1), a valid
	 * continuation (9.7.5.2.2), a live target with room (10.6.7, 9.7.5.2.2). A Last with
	 * immediate is never deferred (its receive WQE check may take one from an SRQ). */
	if (!rc_resp_state_ok(qp) || pkt->hdr.psn != qp->resp.epsn ||
	    qp->resp.in_msg != RC_MSG_WRITE ||
	    (op != MR_OP_RC_WRITE_MIDDLE && op != MR_OP_RC_WRITE_LAST) ||
	    !rc_resp_valid_seq(qp, pkt) || qp->resp.wptr == NULL || pkt->paylen == 0 ||
	    pkt->paylen > qp->resp.wleft || (rc_op_last(op) && pkt->paylen != qp->resp.wleft))
		return -EAGAIN;
	/* The payload goes to [wptr, wptr + paylen) while its ICRC is finished (one pass, not a
	 * check pass and a copy pass). On a mismatch the packet is dropped as A17.3.4 says and
	 * nothing advances: those bytes belong to the WRITE in progress, whose packet with this
	 * PSN (resent by go-back-N, IBA 9.7.5.2.1) rewrites them before the message can complete.
	 * A WRITE that never completes leaves its target undefined anyway (only the requester's
	 * completion says that the data arrived, IBA 9.7.5.1.1 and 10.8). The target
	 * address comes from the responder's state, never from the unchecked packet. */
	if (!mr_pkt_place_checked(pkt, qp->resp.wptr))
		return -EBADMSG;
	if ((pkt->tclass & 3) == 3) /* ECN CE (RFC 3168), as rc_resp_rx */
		rc_resp_on_ce(qp, now);
	qp->resp.nak_sent = false;
	rc_resp_write_advance(qp, pkt, now, false);
	return 0;
}

void rc_resp_rx(struct mr_qp *qp, const struct mr_pkt *pkt, uint64_t now)
{
	int32_t d;
	uint8_t op = pkt->hdr.opcode;

	if (!rc_resp_state_ok(qp)) {
		qp->stats.dropped++;
		return;
	}
	if ((pkt->tclass & 3) == 3) /* ECN CE (RFC 3168): DCQCN notification point */
		rc_resp_on_ce(qp, now);
	d = mr_psn_cmp(pkt->hdr.psn, qp->resp.epsn);
	if (d > 0) {
		/* IBA 9.7.5.2.1: one PSN sequence NAK per error, then silence until ePSN. */
		qp->stats.out_of_sequence++;
		if (!qp->resp.nak_sent) {
			qp->resp.nak_sent = true;
			rc_resp_ack(qp, MR_AETH_NAK | MR_NAK_PSN_SEQ_ERR, qp->resp.epsn);
		}
		return;
	}
	if (d < 0) {
		rc_resp_duplicate(qp, pkt);
		return;
	}
	qp->resp.nak_sent = false;
	if (!rc_resp_valid_seq(qp, pkt)) {
		rc_resp_fatal(qp, MR_NAK_INVALID_REQ, pkt->hdr.psn);
		return;
	}
	if (rc_op_send(op))
		rc_resp_send(qp, pkt, now);
	else if (rc_op_write(op))
		rc_resp_write(qp, pkt, now);
	else if (op == MR_OP_RC_READ_REQUEST)
		rc_resp_read(qp, pkt);
	else
		rc_resp_atomic(qp, pkt);
}

int rc_resp_tx(struct mr_qp *qp, struct mr_tx_pkt *out)
{
	struct mr_roce_hdrs *h = &out->hdr;
	struct rc_resp *e;
	bool done = true;

	if (qp->resp.ring_count == 0)
		return 0;
	e = &qp->resp.ring[qp->resp.ring_head];
	rc_resp_hdr(out, &qp->attr.path, qp->attr.dest_qp_num, e->psn, e->msn);
	switch (e->kind) {
	case RC_RESP_ACK:
		h->opcode = MR_OP_RC_ACK;
		h->aeth.syndrome = e->syndrome;
		switch (e->syndrome & MR_AETH_TYPE_MASK) {
		case MR_AETH_ACK:
			qp->stats.acks_sent++;
			break;
		case MR_AETH_RNR_NAK:
			qp->stats.rnr_naks_sent++;
			break;
		default:
			if ((e->syndrome & 0x1f) == MR_NAK_PSN_SEQ_ERR)
				qp->stats.seq_naks_sent++;
			else if ((e->syndrome & 0x1f) == MR_NAK_INVALID_REQ)
				qp->stats.inv_req_naks_sent++;
			else if ((e->syndrome & 0x1f) == MR_NAK_REM_ACCESS_ERR)
				qp->stats.rem_access_naks_sent++;
			break;
		}
		break;
	case RC_RESP_ATOMIC:
		h->opcode = MR_OP_RC_ATOMIC_ACK;
		h->atmack = e->orig;
		qp->resp.rd_pending--;
		break;
	default: {
		uint32_t mtu = rc_mtu(qp), n = e->left < mtu ? e->left : mtu;

		/* IBA 9.7.5.1.4: FIRST/LAST/ONLY carry an AETH, MIDDLE does not. */
		if (e->first_psn == e->last_psn)
			h->opcode = MR_OP_RC_READ_RESPONSE_ONLY;
		else if (e->psn == e->first_psn)
			h->opcode = MR_OP_RC_READ_RESPONSE_FIRST;
		else if (e->psn == e->last_psn)
			h->opcode = MR_OP_RC_READ_RESPONSE_LAST;
		else
			h->opcode = MR_OP_RC_READ_RESPONSE_MIDDLE;
		if (n > 0) { /* a zero-length READ has no source (host NULL: C11 6.5.6) */
			out->iov[0].base = e->host;
			out->iov[0].len = n;
			out->niov = 1;
			e->host += n;
		}
		out->paylen = n;
		e->left -= n;
		done = e->psn == e->last_psn;
		e->psn = mr_psn_add(e->psn, 1);
		if (done)
			qp->resp.rd_pending--;
		break;
	}
	}
	if (done) {
		qp->resp.ring_head = (qp->resp.ring_head + 1) % RC_RESP_RING;
		qp->resp.ring_count--;
	}
	return 1;
}
