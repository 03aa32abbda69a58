/* SPDX-License-Identifier: MIT
 * MetaRoCE per-QP lifecycle: negotiated at INIT->RTR (MR_QP_TRANSPORT, docs/metaroce-wire.md:
 * both ends agreed beforehand), started at RTR->RTS, timers, the shared scatter helper, and
 * the engine's congestion-control hooks (ACK, loss, timeout and its Eifel undo).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mrt_internal.h"

void mrt_scatter(const struct mr_sge *sg, uint8_t *const *host, uint32_t nsge, uint32_t off,
		 const uint8_t *src, uint32_t n)
{
	for (uint32_t i = 0; i < nsge && n > 0; i++) {
		uint32_t l = sg[i].length, take;

		if (off >= l) {
			off -= l;
			continue;
		}
		take = l - off < n ? l - off : n;
		memcpy(host[i] + off, src, take);
		src += take;
		n -= take;
		off = 0;
	}
}

static void mrt_free(struct mr_qp *qp)
{
	if (qp->mrt == NULL)
		return;
	free(qp->mrt->req.sb);
	free(qp->mrt->resp.rflags);
	free(qp->mrt->resp.rseq);
	free(qp->mrt);
	qp->mrt = NULL;
}

/* INIT->RTR with METAROCE. */
static int mrt_setup(struct mr_qp *qp, const struct mr_qp_attr *a)
{
	struct mrt_qp *m = qp->mrt;
	struct mrt_resp *s;

	if (m == NULL) {
		m = calloc(1, sizeof(*m));
		if (m == NULL)
			return -ENOMEM;
		m->req.sb = calloc(MRT_WIN, sizeof(*m->req.sb));
		m->resp.rflags = calloc(MRT_WIN, 1);
		m->resp.rseq = calloc(MRT_WIN, sizeof(*m->resp.rseq));
		qp->mrt = m;
		if (m->req.sb == NULL || m->resp.rflags == NULL || m->resp.rseq == NULL) {
			mrt_free(qp);
			return -ENOMEM;
		}
	} else {
		memset(m->req.sb, 0, MRT_WIN * sizeof(*m->req.sb));
		memset(m->resp.rflags, 0, MRT_WIN);
	}
	s = &m->resp;
	s->nxt = a->rq_psn;
	s->msn = 0;
	s->rq_base = qp->rq_head;
	s->ack_pending = false;
	s->unacked = 0;
	s->ack_deadline = UINT64_MAX;
	s->ce_count = 0;
	m->req.n_paths = a->n_entropies;
	m->req.rack_deadline = m->req.tlp_deadline = m->req.rto_deadline = UINT64_MAX;
	/* Receives posted before RTR may have been bound by an earlier MetaRoCE life. */
	for (uint32_t i = qp->rq_head; i != qp->rq_tail; i++) {
		rc_rq_at(qp, i)->m_bound = false;
		rc_rq_at(qp, i)->m_claimed = false;
	}
	return 0;
}

/* RTR->RTS. */
static void mrt_start(struct mr_qp *qp)
{
	struct mrt_req *r = &qp->mrt->req;
	uint16_t n = r->n_paths;
	uint32_t cap;

	memset(r->sb, 0, MRT_WIN * sizeof(*r->sb));
	{
		struct mrt_txe *sb = r->sb;

		memset(r, 0, sizeof(*r));
		r->sb = sb;
	}
	r->una = r->nxt = r->cum = r->hi_acked = r->retx_hint = qp->attr.sq_psn;
	r->cur = qp->sq_head;
	r->retry_left = qp->attr.retry_cnt;
	r->rnr_left = qp->attr.rnr_retry;
	r->reo_mult = 1;
	r->rack_deadline = r->tlp_deadline = r->rto_deadline = UINT64_MAX;
	r->t_head = r->t_tail = MRT_NIL;
	mrt_path_init(qp, n);
	cap = qp->ctx->max_inflight < MRT_WIN - 1 ? qp->ctx->max_inflight : MRT_WIN - 1;
	/* IRN (Mittal et al., SIGCOMM'18): without congestion control, cap what is in flight at
	 * the bandwidth-delay product, when the caller told us link rate and RTT
	 * (mrt_inflight_cap). */
	if (!qp->cc_on && qp->attr.cc_params.line_rate_bps && qp->attr.cc_params.base_rtt_ns) {
		r->bdp_rate_bps = qp->attr.cc_params.line_rate_bps;
		r->bdp_rtt_ns = qp->attr.cc_params.base_rtt_ns;
	}
	r->cap_pkts = cap;
}

static void mrt_on_err(struct mr_qp *qp)
{
	struct mrt_req *r = &qp->mrt->req;

	r->rack_deadline = r->tlp_deadline = r->rto_deadline = UINT64_MAX;
	r->rnr_wait = false;
	r->tlp_fire = false;
	r->cur = qp->sq_head;
	r->off = 0;
	qp->mrt->resp.ack_pending = false;
	qp->mrt->resp.ack_deadline = UINT64_MAX;
}

static uint64_t mrt_min(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* RACK, TLP, RTO (or the RNR wait instead) and the delayed ACK. */
static uint64_t mrt_next_expiry(const struct mr_qp *qp)
{
	const struct mrt_req *r = &qp->mrt->req;
	uint64_t t = mrt_min(r->rack_deadline, mrt_min(r->tlp_deadline, r->rto_deadline));

	if (r->rnr_wait)
		t = r->rnr_until;
	return mrt_min(t, qp->mrt->resp.ack_deadline);
}

static void mrt_on_timer(struct mr_qp *qp, uint64_t now)
{
	struct mrt_req *r = &qp->mrt->req;

	mrt_resp_on_timer(qp, now);
	if (qp->state != MR_QPS_RTS && qp->state != MR_QPS_SQD)
		return;
	if (r->rnr_wait && now >= r->rnr_until) {
		/* IBA 9.7.5.2.8: after the RNR timer, resend what the responder did not take. */
		r->rnr_wait = false;
		r->in_rto = true;
		for (uint32_t psn = r->una; psn != r->nxt; psn = mr_psn_add(psn, 1))
			if (!(mrt_sb(qp, psn)->flags & MRT_TX_ACKED))
				mrt_sb_lost(qp, psn, now);
		r->in_rto = false;
		rc_sched_req(qp);
		mrt_arm_timers(qp, now, true);
	}
	mrt_rack_on_timer(qp, now);
	rc_timer_update(qp);
}

const struct rc_engine_ops mrt_engine = {
	.setup = mrt_setup,
	.start = mrt_start,
	.on_err = mrt_on_err,
	.free = mrt_free,
	.next_expiry = mrt_next_expiry,
	.on_timer = mrt_on_timer,
	.rx_req = mrt_resp_rx,
	.rx_resp = mrt_req_rx,
	.tx_resp = mrt_resp_tx,
	.tx_req = mrt_req_tx,
};

/* ---- congestion control glue of the MetaRoCE engine (qp_cc.c has the shared part) ---- */

bool mrt_cc_blocked_after(const struct mr_qp *qp, uint64_t now, uint64_t inflight_bytes,
			  uint64_t gap_ns)
{
#ifdef MR_HAVE_CC
	if (!qp->cc_on)
		return false;
	return inflight_bytes + rc_mtu(qp) > qp->cc.cwnd_bytes ||
	       (qp->cc.next_send_ns > now && qp->cc.next_send_ns - now >= gap_ns);
#else
	(void)qp;
	(void)now;
	(void)inflight_bytes;
	(void)gap_ns;
	return false;
#endif
}

void mrt_cc_ack(struct mr_qp *qp, const struct mr_cc_ack *ack)
{
	if (qp->cc_on && qp->cc.ops && qp->cc.ops->on_ack)
		qp->cc.ops->on_ack(&qp->cc, ack);
}

void mrt_cc_loss(struct mr_qp *qp, uint64_t now, uint32_t bytes, uint16_t path)
{
	if (qp->cc_on && qp->cc.ops && qp->cc.ops->on_loss)
		qp->cc.ops->on_loss(&qp->cc, now, bytes, path);
}

void mrt_cc_timeout(struct mr_qp *qp, uint64_t now)
{
	struct mrt_req *r = &qp->mrt->req;

	if (!qp->cc_on || !qp->cc.ops || !qp->cc.ops->on_timeout)
		return;
	/* RFC 4015 3.2: keep what the timeout is about to reduce, for the Eifel response. */
	if (!r->cc_undo_valid) {
		r->cc_undo = qp->cc;
		r->cc_undo_valid = true;
	}
	qp->cc.ops->on_timeout(&qp->cc, now);
}

void mrt_cc_undo_timeout(struct mr_qp *qp)
{
	struct mrt_req *r = &qp->mrt->req;
	uint64_t next = qp->cc.next_send_ns;

	if (!qp->cc_on || !r->cc_undo_valid)
		return;
	r->cc_undo_valid = false;
	/* The whole controller state goes back (window, rate, the algorithm's estimators): only
	 * a timeout and the resends it caused happened since. The pacing clock stays: packets
	 * have left meanwhile. */
	qp->cc = r->cc_undo;
	qp->cc.next_send_ns = next;
}

uint32_t mrt_cc_path_penalty(const struct mr_qp *qp, uint16_t p)
{
	return qp->cc_on && p < MR_CC_MAX_PATHS ? qp->cc.path_penalty[p] : 0;
}
