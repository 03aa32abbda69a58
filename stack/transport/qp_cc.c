/* SPDX-License-Identifier: MIT
 * Congestion-control glue (stack/cc/cc.h) for both transports: the per-QP controller is
 * created at INIT->RTR from MR_QP_TRANSPORT's cc/cc_params. Plain RC with DCQCN: the requester
 * is the reaction point (paced by the DCQCN rate, on_cnp on received CNPs), the responder the
 * notification point (CE-marked requests -> at most one CNP per interval, A17.9.3).
 * Without the mrcc library (MR_HAVE_CC undefined) only MR_CC_NONE is accepted. The hooks only
 * MetaRoCE feeds (per-ACK, loss, timeout and undo) are its engine's, in mrt_qp.c.
 */
#include <errno.h>
#include <string.h>

#include "rc_internal.h"

/* DCQCN paper (Zhu et al., SIGCOMM'15) section 3: one CNP per flow per 50 us. */
#define QP_CNP_INTERVAL_NS 50000u

int qp_cc_check(const struct mr_qp_attr *a)
{
	if (a->cc == MR_CC_NONE)
		return 0;
#ifdef MR_HAVE_CC
	if (a->cc == MR_CC_DCQCN || a->cc == MR_CC_METAROCE)
		return 0;
#endif
	return -EINVAL;
}

int qp_cc_setup(struct mr_qp *qp, const struct mr_qp_attr *a)
{
	qp->cc_on = false;
	qp->paced = false;
	qp->cnp_pending = false;
	if (a->cc == MR_CC_NONE)
		return 0;
#ifdef MR_HAVE_CC
	{
		struct mr_cc_params p = a->cc_params;
		int rc;

		if (p.mtu == 0)
			p.mtu = qp->attr.path_mtu;
		if (p.n_paths == 0)
			p.n_paths = a->transport == MR_TRANSPORT_METAROCE ? a->n_entropies : 1;
		rc = mr_cc_init(&qp->cc, a->cc, &p, 0);
		if (rc < 0)
			return rc;
		qp->cc_on = true;
		mr_dcqcn_np_init(&qp->np, QP_CNP_INTERVAL_NS);
		return 0;
	}
#else
	return -EINVAL;
#endif
}

bool qp_cc_can_send(struct mr_qp *qp, uint64_t now, uint64_t inflight_bytes)
{
#ifdef MR_HAVE_CC
	if (!qp->cc_on || mr_cc_can_send(&qp->cc, now, inflight_bytes))
		return true;
	/* Paced: wake up at next_send_ns (mr_ctx_next_expiry); a window limit waits for ACKs. */
	if (qp->cc.next_send_ns > now && !qp->paced) {
		qp->paced = true;
		rc_timer_update(qp);
	}
	return false;
#else
	(void)qp;
	(void)now;
	(void)inflight_bytes;
	return true;
#endif
}

void qp_cc_sent(struct mr_qp *qp, uint64_t now, uint32_t bytes, uint16_t path)
{
#ifdef MR_HAVE_CC
	if (qp->cc_on)
		mr_cc_sent(&qp->cc, now, bytes, path);
#else
	(void)qp;
	(void)now;
	(void)bytes;
	(void)path;
#endif
}

uint64_t qp_cc_next_expiry(const struct mr_qp *qp)
{
	uint64_t t = UINT64_MAX;

	if (!qp->cc_on)
		return t;
	if (qp->paced)
		t = qp->cc.next_send_ns;
	if (qp->cc.ops && qp->cc.ops->next_timer) {
		uint64_t c = qp->cc.ops->next_timer(&qp->cc);

		if (c < t)
			t = c;
	}
	return t;
}

void qp_cc_on_timer(struct mr_qp *qp, uint64_t now)
{
	if (!qp->cc_on)
		return;
	if (qp->cc.ops && qp->cc.ops->next_timer && qp->cc.ops->on_timer &&
	    qp->cc.ops->next_timer(&qp->cc) <= now)
		qp->cc.ops->on_timer(&qp->cc, now);
	if (qp->paced && qp->cc.next_send_ns <= now) {
		qp->paced = false;
		rc_sched_req(qp);
	}
}

void qp_cc_on_cnp(struct mr_qp *qp, uint64_t now)
{
	qp->stats.cnps_rcvd++;
	if (qp->cc_on && qp->cc.ops && qp->cc.ops->on_cnp) {
		qp->stats.cnps_handled++;
		qp->cc.ops->on_cnp(&qp->cc, now);
		rc_sched_req(qp);
	}
}

void rc_resp_on_ce(struct mr_qp *qp, uint64_t now)
{
	qp->stats.ce_rcvd++;
#ifdef MR_HAVE_CC
	/* A17.9.3: the notification point answers CE with a CNP; ConnectX does so for every QP
	 * of an ECN-enabled priority (cnp_all_qps), not only for QPs that run DCQCN themselves. */
	if (!(qp->cc_on && qp->attr.cc == MR_CC_DCQCN) && !qp->ctx->p.cnp_all_qps)
		return;
	if (qp->np.min_interval_ns == 0)
		mr_dcqcn_np_init(&qp->np, QP_CNP_INTERVAL_NS);
	if (mr_dcqcn_np_on_ce(&qp->np, now)) {
		qp->cnp_pending = true;
		rc_sched_resp(qp);
	}
#else
	(void)now;
#endif
}

int rc_resp_cnp_tx(struct mr_qp *qp, struct mr_tx_pkt *out)
{
	if (!qp->cnp_pending)
		return 0;
	qp->cnp_pending = false;
	rc_tx_reset(out);
	out->path = &qp->attr.path;
	/* A17.9.3: CNP = BTH (opcode 0x81, DestQP of the flow's sender, PSN 0) + 16 reserved
	 * bytes, which the frame builder adds for this opcode. */
	out->hdr.opcode = MR_OP_CNP;
	out->hdr.pkey = 0xffff;
	out->hdr.dqpn = qp->attr.dest_qp_num;
	out->hdr.becn = true;
	qp->stats.cnps_sent++;
	return 1;
}

int mr_qp_get_cc_state(const struct mr_qp *qp, bool *cc_on, uint64_t *rate_bps,
		       uint64_t *rate_min_bps, uint64_t *cwnd_bytes)
{
	if (qp == NULL || cc_on == NULL || rate_bps == NULL || rate_min_bps == NULL ||
	    cwnd_bytes == NULL)
		return -EINVAL;
	*cc_on = qp->cc_on;
	*rate_bps = qp->cc_on ? qp->cc.rate_bps : UINT64_MAX;
	*rate_min_bps = qp->cc_on ? qp->cc.rate_min_bps : UINT64_MAX;
	*cwnd_bytes = qp->cc_on ? qp->cc.cwnd_bytes : UINT64_MAX;
	return 0;
}
