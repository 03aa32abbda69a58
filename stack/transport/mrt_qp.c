/* SPDX-License-Identifier: MIT
 * MetaRoCE per-QP lifecycle: negotiated at INIT->RTR (MR_QP_TRANSPORT, docs/metaroce-wire.md:
 * both ends agreed beforehand), started at RTR->RTS, timers, and the shared scatter helper.
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

void mrt_free(struct mr_qp *qp)
{
	if (qp->mrt == NULL)
		return;
	free(qp->mrt->req.sb);
	free(qp->mrt->resp.rflags);
	free(qp->mrt->resp.rseq);
	free(qp->mrt);
	qp->mrt = NULL;
}

int mrt_setup(struct mr_qp *qp, const struct mr_qp_attr *a)
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

void mrt_start(struct mr_qp *qp)
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

void mrt_on_err(struct mr_qp *qp)
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

uint64_t mrt_next_expiry(const struct mr_qp *qp)
{
	const struct mrt_req *r = &qp->mrt->req;
	uint64_t t = mrt_min(r->rack_deadline, mrt_min(r->tlp_deadline, r->rto_deadline));

	if (r->rnr_wait)
		t = r->rnr_until;
	return mrt_min(t, qp->mrt->resp.ack_deadline);
}

void mrt_on_timer(struct mr_qp *qp, uint64_t now)
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
