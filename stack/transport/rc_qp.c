/* SPDX-License-Identifier: MIT
 * Queue pairs: create/destroy, the verbs state machine (IBA 10.3.1, 11.2.4.2 Modify QP),
 * posting rules per state, and flushing on entry to ERR.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rc_internal.h"

#define S(x) (1u << (x))

/* Attribute masks per transition, as ib_modify_qp_is_ok()'s table for RC (IBA 11.2.4.2). */
struct rc_trans {
	bool valid;
	uint32_t req, opt;
};

static const struct rc_trans rc_trans_tab[MR_QPS_ERR + 1][MR_QPS_ERR + 1] = {
	[MR_QPS_RESET] = {
		[MR_QPS_RESET] = { .valid = true },
		[MR_QPS_INIT] = { .valid = true,
				  .req = MR_QP_PKEY_INDEX | MR_QP_ACCESS_FLAGS },
	},
	[MR_QPS_INIT] = {
		[MR_QPS_INIT] = { .valid = true, .opt = MR_QP_PKEY_INDEX | MR_QP_ACCESS_FLAGS },
		[MR_QPS_RTR] = { .valid = true,
				 .req = MR_QP_PATH | MR_QP_PATH_MTU | MR_QP_DEST_QPN | MR_QP_RQ_PSN |
					MR_QP_MAX_DEST_RD_ATOMIC | MR_QP_MIN_RNR_TIMER,
				 .opt = MR_QP_ACCESS_FLAGS | MR_QP_PKEY_INDEX | MR_QP_TRANSPORT },
	},
	[MR_QPS_RTR] = {
		[MR_QPS_RTS] = { .valid = true,
				 .req = MR_QP_SQ_PSN | MR_QP_TIMEOUT | MR_QP_RETRY_CNT |
					MR_QP_RNR_RETRY | MR_QP_MAX_QP_RD_ATOMIC,
				 .opt = MR_QP_ACCESS_FLAGS | MR_QP_MIN_RNR_TIMER },
	},
	[MR_QPS_RTS] = {
		[MR_QPS_RTS] = { .valid = true, .opt = MR_QP_ACCESS_FLAGS | MR_QP_MIN_RNR_TIMER },
		[MR_QPS_SQD] = { .valid = true },
	},
	[MR_QPS_SQD] = {
		[MR_QPS_RTS] = { .valid = true, .opt = MR_QP_ACCESS_FLAGS | MR_QP_MIN_RNR_TIMER },
		[MR_QPS_SQD] = { .valid = true,
				 .opt = MR_QP_PATH | MR_QP_ACCESS_FLAGS | MR_QP_PKEY_INDEX |
					MR_QP_MIN_RNR_TIMER | MR_QP_MAX_QP_RD_ATOMIC |
					MR_QP_MAX_DEST_RD_ATOMIC | MR_QP_TIMEOUT |
					MR_QP_RETRY_CNT | MR_QP_RNR_RETRY },
	},
	[MR_QPS_SQE] = {
		[MR_QPS_RTS] = { .valid = true, .opt = MR_QP_ACCESS_FLAGS },
	},
	[MR_QPS_ERR] = {},
};

uint32_t rc_mtu(const struct mr_qp *qp)
{
	return qp->attr.path_mtu;
}

bool rc_wr_is_rd_atomic(enum mr_wr_opcode op)
{
	return op == MR_WR_RDMA_READ || op == MR_WR_ATOMIC_CMP_AND_SWP ||
	       op == MR_WR_ATOMIC_FETCH_AND_ADD;
}

struct mr_qp *mr_qp_create(struct mr_ctx *ctx, const struct mr_qp_init_attr *init)
{
	struct mr_qp_init_attr srq_init;
	struct mr_qp *qp;
	uint32_t slot;

	if (ctx == NULL || init == NULL || init->pd == NULL || init->send_cq == NULL ||
	    init->recv_cq == NULL || init->pd->ctx != ctx || init->send_cq->ctx != ctx ||
	    init->recv_cq->ctx != ctx || init->max_send_wr == 0 ||
	    (init->srq == NULL && init->max_recv_wr == 0) || init->max_send_wr > RC_MAX_WR ||
	    init->max_recv_wr > RC_MAX_WR || init->max_inline_data > RC_MAX_INLINE ||
	    (init->srq != NULL && init->srq->pd != init->pd)) {
		errno = EINVAL;
		return NULL;
	}
	if (init->srq != NULL) { /* the QP's ring is a window onto the SRQ (rc_srq.c) */
		srq_init = *init;
		srq_init.max_recv_wr = rc_srq_qp_ring(init->srq);
		init = &srq_init;
	}
	/* Next fit, not lowest first: a destroyed QP's number is reused only after every other
	 * free one, so late packets of an old connection (still in flight, or retransmitted by a
	 * peer that has not noticed) do not land on a new QP that got the same QPN and PSN space
	 * (IBA 9.7: a connection is known on the wire only by its QPN and PSNs; rxe and ConnectX also
	 * hand QPNs out incrementally). */
	for (uint32_t i = 0; i < ctx->p.max_qp; i++) {
		slot = (ctx->qp_next + i) % ctx->p.max_qp;
		if (ctx->qp_tab[slot] == NULL)
			goto found;
	}
	errno = ENOSPC;
	return NULL;
found:
	ctx->qp_next = (slot + 1) % ctx->p.max_qp;
	qp = calloc(1, sizeof(*qp));
	if (qp == NULL)
		goto nomem;
	qp->sq = calloc(init->max_send_wr, sizeof(*qp->sq));
	qp->rq = calloc(init->max_recv_wr, sizeof(*qp->rq));
	if (init->max_inline_data)
		qp->inline_area = calloc(init->max_send_wr, init->max_inline_data);
	if (qp->sq == NULL || qp->rq == NULL || (init->max_inline_data && qp->inline_area == NULL))
		goto nomem_free;
	for (uint32_t i = 0; i < init->max_send_wr; i++)
		qp->sq[i].inline_buf = init->max_inline_data ?
				       qp->inline_area + (size_t)i * init->max_inline_data : NULL;
	qp->ctx = ctx;
	qp->qpn = ctx->p.first_qpn + slot;
	qp->init = *init;
	qp->state = MR_QPS_RESET;
	qp->eng = &rc_engine;
	qp->attr.path_mtu = 1024;
	qp->comp.ack_deadline = UINT64_MAX;
	qp->resp.ack_deadline = UINT64_MAX;
	init->pd->refs++;
	init->send_cq->refs++;
	init->recv_cq->refs++;
	if (init->srq != NULL)
		init->srq->refs++;
	ctx->qp_tab[slot] = qp;
	return qp;
nomem_free:
	free(qp->sq);
	free(qp->rq);
	free(qp->inline_area);
	free(qp);
nomem:
	errno = ENOMEM;
	return NULL;
}

/* Hand qp to engine eng; the one it leaves releases its private state first. */
static void rc_qp_set_engine(struct mr_qp *qp, const struct rc_engine_ops *eng)
{
	if (qp->eng == eng)
		return;
	qp->eng->free(qp);
	qp->eng = eng;
}

void rc_qp_free(struct mr_qp *qp)
{
	struct mr_ctx *ctx = qp->ctx;

	rc_list_del(&qp->req_link);
	rc_list_del(&qp->resp_link);
	rc_timer_remove(qp);
	qp->eng->free(qp);
	ctx->qp_tab[qp->qpn - ctx->p.first_qpn] = NULL;
	qp->init.pd->refs--;
	qp->init.send_cq->refs--;
	qp->init.recv_cq->refs--;
	if (qp->init.srq != NULL)
		qp->init.srq->refs--;
	free(qp->sq);
	free(qp->rq);
	free(qp->inline_area);
	free(qp);
}

/* An app may destroy its QP right after its last completion, before the engine has sent the
 * ACK the responder owes for what it received: queued in the response ring, or held by the
 * delayed-ACK timer (a run's last packet without AckReq). Without it the peer's requester
 * times out and retries into a QP that no longer exists until RETRY_EXC_ERR (IBA 9.7.6.1.3),
 * though every byte arrived; rxe and ConnectX have sent their ACK by then. So the ACK the
 * responder owes (IBA 9.7.5.1.2: cumulative, up to the last PSN received in sequence, or the
 * last queued ACK before a READ/atomic response or a NAK, which need the QP) is kept in the
 * context and leaves after the QP is gone. MetaRoCE's ACKs carry its SACK state and are left
 * to its own recovery. */
static void rc_qp_parting_ack(struct mr_qp *qp)
{
	struct mr_ctx *ctx = qp->ctx;
	struct rc_parting *p;
	uint32_t i, psn = 0, msn = 0;
	bool owed = false;

	if (qp->eng != &rc_engine || (qp->state != MR_QPS_RTR && qp->state != MR_QPS_RTS &&
				      qp->state != MR_QPS_SQD && qp->state != MR_QPS_SQE))
		return;
	for (i = 0; i < qp->resp.ring_count; i++) {
		const struct rc_resp *e = &qp->resp.ring[(qp->resp.ring_head + i) % RC_RESP_RING];

		if (e->kind != RC_RESP_ACK || (e->syndrome & MR_AETH_TYPE_MASK) != MR_AETH_ACK)
			break;
		owed = true;
		psn = e->psn;
		msn = e->msn;
	}
	if (i == qp->resp.ring_count && qp->resp.since_ack > 0) {
		owed = true;
		psn = mr_psn_add(qp->resp.epsn, MR_PSN_MASK);
		msn = qp->resp.msn;
	}
	if (!owed)
		return;
	if (ctx->parting_n == RC_PARTING_MAX) {
		ctx->stats.parting_dropped++;
		return;
	}
	p = &ctx->parting[(ctx->parting_head + ctx->parting_n++) % RC_PARTING_MAX];
	p->path = qp->attr.path;
	p->dqpn = qp->attr.dest_qp_num;
	p->psn = psn;
	p->msn = msn;
}

int mr_qp_destroy(struct mr_qp *qp)
{
	if (qp == NULL)
		return -EINVAL;
	rc_qp_parting_ack(qp);
	rc_qp_free(qp);
	return 0;
}

uint32_t mr_qp_num(const struct mr_qp *qp)
{
	return qp ? qp->qpn : 0;
}

enum mr_qp_state mr_qp_state(const struct mr_qp *qp)
{
	return qp ? qp->state : MR_QPS_ERR;
}

static enum mr_wc_opcode rc_wc_opcode(enum mr_wr_opcode op)
{
	switch (op) {
	case MR_WR_RDMA_WRITE:
	case MR_WR_RDMA_WRITE_WITH_IMM:
		return MR_WC_RDMA_WRITE;
	case MR_WR_RDMA_READ:
		return MR_WC_RDMA_READ;
	case MR_WR_ATOMIC_CMP_AND_SWP:
		return MR_WC_COMP_SWAP;
	case MR_WR_ATOMIC_FETCH_AND_ADD:
		return MR_WC_FETCH_ADD;
	default:
		return MR_WC_SEND;
	}
}

/* Send completion for the SQ head WQE and pop it. Unsignaled successful WQEs complete silently;
 * errors are always reported whatever the signaling (IBA 11.4.1.1 Post Send Request). */
void rc_comp_complete_head(struct mr_qp *qp, enum mr_wc_status status)
{
	struct rc_swqe *w = rc_sq_at(qp, qp->sq_head);

	if (status != MR_WC_SUCCESS || qp->init.sq_sig_all || (w->wr.send_flags & MR_SEND_SIGNALED)) {
		struct mr_wc wc = {
			.wr_id = w->wr.wr_id,
			.status = status,
			.opcode = rc_wc_opcode(w->wr.opcode),
			.byte_len = status == MR_WC_SUCCESS ? w->len : 0,
			.qp_num = qp->qpn,
		};
		rc_cq_push(qp, qp->init.send_cq, &wc);
	}
	if (status == MR_WC_SUCCESS && rc_wc_opcode(w->wr.opcode) == MR_WC_SEND)
		qp->stats.sends_completed++;
	if (qp->req.cur == qp->sq_head) {
		qp->req.cur++;
		qp->req.off = 0;
	} else if (rc_wr_is_rd_atomic(w->wr.opcode) && qp->req.rd_atomic > 0 &&
		   (uint32_t)(qp->sq_head - qp->sq_head) < (uint32_t)(qp->req.cur - qp->sq_head)) {
		qp->req.rd_atomic--;
	}
	qp->sq_head++;
}

static void rc_flush_recv(struct mr_qp *qp, const struct rc_rwqe *r, enum mr_wc_status st)
{
	struct mr_wc wc = {
		.wr_id = r->wr.wr_id,
		.status = st,
		.opcode = MR_WC_RECV,
		.qp_num = qp->qpn,
	};

	rc_cq_push(qp, qp->init.recv_cq, &wc);
}

void rc_qp_to_err(struct mr_qp *qp)
{
	qp->state = MR_QPS_ERR;
	while (qp->sq_head != qp->sq_tail)
		rc_comp_complete_head(qp, rc_sq_at(qp, qp->sq_head)->status);
	qp->req.cur = qp->sq_head;
	qp->req.off = 0;
	qp->req.rd_atomic = 0;
	while (qp->rq_head != qp->rq_tail)
		rc_flush_recv(qp, rc_rq_at(qp, qp->rq_head++), MR_WC_WR_FLUSH_ERR);
	qp->resp.rwqe_bound = false;
	qp->resp.in_msg = RC_MSG_NONE;
	qp->req.rnr_wait = false;
	qp->comp.ack_deadline = UINT64_MAX;
	qp->resp.ack_deadline = UINT64_MAX;
	qp->paced = false;
	qp->eng->on_err(qp);
	rc_timer_update(qp);
	rc_list_del(&qp->req_link);
	/* Queued responses (e.g. the NAK that reported the error) still go out. */
}

static void rc_qp_reset(struct mr_qp *qp)
{
	rc_list_del(&qp->req_link);
	rc_list_del(&qp->resp_link);
	rc_timer_remove(qp);
	qp->sq_head = qp->sq_tail = 0;
	qp->rq_head = qp->rq_tail = 0;
	memset(&qp->req, 0, sizeof(qp->req));
	memset(&qp->comp, 0, sizeof(qp->comp));
	qp->comp.ack_deadline = UINT64_MAX;
	rc_resp_reset(qp);
	rc_qp_set_engine(qp, &rc_engine);
	qp->cc_on = qp->paced = qp->cnp_pending = false;
	qp->attr.transport = MR_TRANSPORT_RC;
	qp->attr.cc = MR_CC_NONE;
	qp->attr.n_entropies = 0;
	qp->state = MR_QPS_RESET;
}

static bool rc_mtu_ok(uint32_t mtu)
{
	return mtu == 256 || mtu == 512 || mtu == 1024 || mtu == 2048 || mtu == 4096;
}

static int rc_check_values(const struct mr_qp_attr *a, uint32_t mask)
{
	const uint32_t acc = MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE |
			     MR_ACCESS_REMOTE_READ | MR_ACCESS_REMOTE_ATOMIC;

	if (((mask & MR_QP_STATE) && (unsigned int)a->qp_state > MR_QPS_ERR) ||
	    ((mask & MR_QP_ACCESS_FLAGS) && (a->qp_access_flags & ~acc)) ||
	    ((mask & MR_QP_PATH_MTU) && !rc_mtu_ok(a->path_mtu)) ||
	    ((mask & MR_QP_DEST_QPN) && a->dest_qp_num > MR_PSN_MASK) ||
	    ((mask & MR_QP_RQ_PSN) && a->rq_psn > MR_PSN_MASK) ||
	    ((mask & MR_QP_SQ_PSN) && a->sq_psn > MR_PSN_MASK) ||
	    ((mask & MR_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > RC_MAX_RD_ATOMIC) ||
	    ((mask & MR_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > RC_MAX_RD_ATOMIC) ||
	    ((mask & MR_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31) ||
	    ((mask & MR_QP_TIMEOUT) && a->timeout > 31) ||
	    ((mask & MR_QP_RETRY_CNT) && a->retry_cnt > 7) ||
	    ((mask & MR_QP_RNR_RETRY) && a->rnr_retry > 7))
		return -EINVAL;
	/* MetaRoCE: 1..256 entropies (docs/metaroce-wire.md MRETH.path is 8 bits). */
	if ((mask & MR_QP_TRANSPORT) &&
	    (((unsigned int)a->transport != MR_TRANSPORT_RC &&
	      a->transport != MR_TRANSPORT_METAROCE) ||
	     (a->transport == MR_TRANSPORT_METAROCE &&
	      (a->n_entropies < 1 || a->n_entropies > MR_CC_MAX_PATHS)) ||
	     qp_cc_check(a) < 0))
		return -EINVAL;
	return 0;
}

int mr_qp_modify(struct mr_qp *qp, const struct mr_qp_attr *a, uint32_t mask)
{
	const uint32_t known = (MR_QP_TRANSPORT << 1) - 1;
	enum mr_qp_state cur, next;
	const struct rc_trans *t;
	uint32_t attrs;

	if (qp == NULL || a == NULL || (mask & ~known) || rc_check_values(a, mask))
		return -EINVAL;
	/* As rxe_qp_chk_attr: a path MTU above the port's is refused, never built into frames
	 * the port cannot send (they would be dropped and the QP would retry until error). */
	if ((mask & MR_QP_PATH_MTU) &&
	    a->path_mtu > (qp->ctx->p.max_mtu ? qp->ctx->p.max_mtu : 4096u))
		return -EINVAL;
	cur = qp->state;
	next = (mask & MR_QP_STATE) ? a->qp_state : cur;
	attrs = mask & ~(uint32_t)MR_QP_STATE;
	/* Any state may go to RESET or ERR, with no other attribute (IBA 10.3.1). */
	if (next == MR_QPS_RESET || next == MR_QPS_ERR) {
		if (attrs)
			return -EINVAL;
	} else {
		t = &rc_trans_tab[cur][next];
		if (!t->valid || (attrs & t->req) != t->req || (attrs & ~(t->req | t->opt)))
			return -EINVAL;
	}

	if (mask & MR_QP_ACCESS_FLAGS)
		qp->attr.qp_access_flags = a->qp_access_flags;
	if (mask & MR_QP_PKEY_INDEX)
		qp->attr.pkey_index = a->pkey_index;
	if (mask & MR_QP_PATH) {
		qp->attr.path = a->path;
		/* A path the builder refuses leaves the template empty (len 0): its packets are
		 * then built from the path, and refused there, as before templates. */
		(void)mr_hdr_tmpl_init(&qp->tmpl, &qp->attr.path);
	}
	if (mask & MR_QP_PATH_MTU)
		qp->attr.path_mtu = a->path_mtu;
	if (mask & MR_QP_DEST_QPN)
		qp->attr.dest_qp_num = a->dest_qp_num;
	if (mask & MR_QP_RQ_PSN)
		qp->attr.rq_psn = a->rq_psn;
	if (mask & MR_QP_SQ_PSN)
		qp->attr.sq_psn = a->sq_psn;
	if (mask & MR_QP_MAX_DEST_RD_ATOMIC)
		qp->attr.max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & MR_QP_MAX_QP_RD_ATOMIC)
		qp->attr.max_rd_atomic = a->max_rd_atomic;
	if (mask & MR_QP_MIN_RNR_TIMER)
		qp->attr.min_rnr_timer = a->min_rnr_timer;
	if (mask & MR_QP_TIMEOUT)
		qp->attr.timeout = a->timeout;
	if (mask & MR_QP_RETRY_CNT)
		qp->attr.retry_cnt = a->retry_cnt;
	if (mask & MR_QP_RNR_RETRY)
		qp->attr.rnr_retry = a->rnr_retry;

	switch (next) {
	case MR_QPS_RESET:
		rc_qp_reset(qp);
		break;
	case MR_QPS_ERR:
		rc_qp_to_err(qp);
		break;
	case MR_QPS_RTR:
		if (cur == MR_QPS_INIT) {
			struct mr_qp_attr ta = *a;
			int rc;

			if (!(mask & MR_QP_TRANSPORT)) {
				ta.transport = MR_TRANSPORT_RC;
				ta.cc = MR_CC_NONE;
				ta.n_entropies = 0;
				memset(&ta.cc_params, 0, sizeof(ta.cc_params));
			}
			/* MetaRoCE only when both ends agreed beforehand (docs/metaroce-wire.md). */
			rc_qp_set_engine(qp, ta.transport == MR_TRANSPORT_METAROCE ?
					     &mrt_engine : &rc_engine);
			rc = qp->eng->setup(qp, &ta);
			if (rc == 0)
				rc = qp_cc_setup(qp, &ta);
			if (rc < 0) {
				rc_qp_set_engine(qp, &rc_engine);
				return rc;
			}
			qp->attr.transport = ta.transport;
			qp->attr.n_entropies = ta.n_entropies;
			qp->attr.cc = ta.cc;
			qp->attr.cc_params = ta.cc_params;
			rc_resp_reset(qp);
			qp->resp.epsn = qp->attr.rq_psn;
		}
		qp->state = next;
		break;
	case MR_QPS_RTS:
		if (cur == MR_QPS_RTR) {
			qp->req.psn = qp->req.psn_max = qp->attr.sq_psn;
			qp->req.cur = qp->sq_head;
			qp->comp.psn = qp->attr.sq_psn;
			qp->eng->start(qp);
		}
		qp->comp.retry_left = qp->attr.retry_cnt;
		qp->comp.rnr_left = qp->attr.rnr_retry;
		qp->state = next;
		rc_sched_req(qp); /* SQD -> RTS resumes WQEs queued while drained */
		break;
	default:
		qp->state = next;
		break;
	}
	rc_timer_update(qp); /* a transition may arm or clear any timer */
	return 0;
}

int mr_qp_query(const struct mr_qp *qp, struct mr_qp_attr *attr)
{
	if (qp == NULL || attr == NULL)
		return -EINVAL;
	*attr = qp->attr;
	attr->qp_state = qp->state;
	return 0;
}

int mr_qp_get_stats(const struct mr_qp *qp, struct mr_qp_stats *st)
{
	if (qp == NULL || st == NULL)
		return -EINVAL;
	*st = qp->stats;
	return 0;
}

/* Total SGE length, or -EINVAL on > MR_MAX_SGE entries or a message over 2^31 bytes. */
static int64_t rc_sge_total(const struct mr_sge *sg, uint32_t n)
{
	uint64_t sum = 0;

	if (n > MR_MAX_SGE)
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++)
		sum += sg[i].length;
	return sum > RC_MAX_MSG ? -EINVAL : (int64_t)sum;
}

uint32_t mr_qp_sq_room(const struct mr_qp *qp)
{
	if (qp == NULL)
		return 0;
	return qp->init.max_send_wr - (qp->sq_tail - qp->sq_head);
}

int mr_post_send(struct mr_qp *qp, const struct mr_send_wr *wr)
{
	struct rc_swqe *w;
	int64_t len;

	if (qp == NULL || wr == NULL)
		return -EINVAL;
	switch (wr->opcode) {
	case MR_WR_RDMA_WRITE:
	case MR_WR_RDMA_WRITE_WITH_IMM:
	case MR_WR_SEND:
	case MR_WR_SEND_WITH_IMM:
	case MR_WR_SEND_WITH_INV:
	case MR_WR_RDMA_READ:
	case MR_WR_ATOMIC_CMP_AND_SWP:
	case MR_WR_ATOMIC_FETCH_AND_ADD:
		break;
	default:
		return -EINVAL;
	}
	len = rc_sge_total(wr->sg_list, wr->num_sge);
	if (len < 0)
		return -EINVAL;
	/* IBA 9.7.4.1.4 / 9.7.1: an RC READ takes one PSN per response packet and all of them are
	 * outstanding at once, at most 2^23 - 1: a longer READ could never be sent (the QP would
	 * stall with no completion). MetaRoCE asks in chunks (one PSN per MRT_RD_CHUNK packets). */
	if (wr->opcode == MR_WR_RDMA_READ && qp->mrt == NULL &&
	    rc_npkts((uint32_t)len, rc_mtu(qp)) > RC_MAX_INFLIGHT)
		return -EINVAL;
	if ((wr->send_flags & MR_SEND_INLINE) &&
	    (rc_wr_is_rd_atomic(wr->opcode) || (uint64_t)len > qp->init.max_inline_data))
		return -EINVAL;
	/* IBA 9.4.5: atomics operate on one naturally aligned 64-bit word. */
	if ((wr->opcode == MR_WR_ATOMIC_CMP_AND_SWP || wr->opcode == MR_WR_ATOMIC_FETCH_AND_ADD) &&
	    ((wr->atomic.remote_addr & 7) || wr->num_sge != 1 || wr->sg_list[0].length != 8))
		return -EINVAL;
	if (qp->state != MR_QPS_RTS && qp->state != MR_QPS_SQD && qp->state != MR_QPS_ERR)
		return -EINVAL;
	if (qp->sq_tail - qp->sq_head >= qp->init.max_send_wr)
		return -ENOMEM;

	w = rc_sq_at(qp, qp->sq_tail);
	rc_send_wr_copy(&w->wr, wr);
	w->len = (uint32_t)len;
	w->psn_valid = false;
	w->resolved = false;
	w->status = MR_WC_WR_FLUSH_ERR;
	if (wr->send_flags & MR_SEND_INLINE) {
		/* Inline data is copied now, so the caller's buffers are free on return. */
		uint32_t off = 0;

		for (uint32_t i = 0; i < wr->num_sge; i++) {
			if (wr->sg_list[i].length)
				memcpy(w->inline_buf + off, (const void *)(uintptr_t)wr->sg_list[i].addr,
				       wr->sg_list[i].length);
			off += wr->sg_list[i].length;
		}
		w->wr.num_sge = 1;
		w->wr.sg_list[0].length = off;
		w->host[0] = w->inline_buf;
		w->resolved = true;
	}
	qp->sq_tail++;
	if (qp->state == MR_QPS_ERR) {
		/* IBA 10.3.1 / 11.4.1.1: WRs posted in the Error state complete as flushed. */
		rc_comp_complete_head(qp, MR_WC_WR_FLUSH_ERR);
		qp->req.cur = qp->sq_head;
		return 0;
	}
	if (qp->state == MR_QPS_RTS)
		rc_sched_req(qp);
	rc_timer_update(qp);
	return 0;
}

int mr_post_recv(struct mr_qp *qp, const struct mr_recv_wr *wr)
{
	struct rc_rwqe *r;
	int64_t len;

	if (qp == NULL || wr == NULL || qp->init.srq != NULL) /* an SRQ QP posts to its SRQ */
		return -EINVAL;
	len = rc_sge_total(wr->sg_list, wr->num_sge);
	if (len < 0)
		return -EINVAL;
	if (qp->state == MR_QPS_RESET) /* IBA 10.3.1: receives may be posted from INIT on */
		return -EINVAL;
	if (qp->rq_tail - qp->rq_head >= qp->init.max_recv_wr)
		return -ENOMEM;
	r = rc_rq_at(qp, qp->rq_tail);
	r->wr = *wr;
	r->len = (uint32_t)len;
	r->m_bound = false;
	r->m_claimed = false;
	if (qp->state == MR_QPS_ERR) {
		rc_flush_recv(qp, r, MR_WC_WR_FLUSH_ERR);
		return 0;
	}
	qp->rq_tail++;
	rc_timer_update(qp);
	return 0;
}
