/* SPDX-License-Identifier: MIT
 * The plain RC engine (IBA ch. 9.7) as the core sees it: requester (rc_requester.c), responder
 * (rc_responder.c) and completer (rc_completer.c) behind struct rc_engine_ops. Its state is
 * the req/comp/resp blocks of struct mr_qp, which the core initialises on RESET, INIT->RTR and
 * RTR->RTS, so the lifecycle hooks have nothing of their own to do.
 */
#include "rc_internal.h"

static int rc_eng_setup(struct mr_qp *qp, const struct mr_qp_attr *a)
{
	(void)qp;
	(void)a;
	return 0;
}

static void rc_eng_nop(struct mr_qp *qp)
{
	(void)qp;
}

/* ACK timeout (IBA 9.7.6.1.3), RNR wait (9.7.5.2.8) and the responder's delayed ACK. */
static uint64_t rc_eng_next_expiry(const struct mr_qp *qp)
{
	uint64_t t = qp->comp.ack_deadline;

	if (qp->req.rnr_wait && qp->req.rnr_until < t)
		t = qp->req.rnr_until;
	if (qp->resp.ack_deadline < t)
		t = qp->resp.ack_deadline;
	return t;
}

static void rc_eng_on_timer(struct mr_qp *qp, uint64_t now)
{
	rc_resp_on_timer(qp, now);
	rc_req_on_timer(qp, now);
}

static int rc_eng_tx_resp(struct mr_qp *qp, uint64_t now, struct mr_tx_pkt *out)
{
	(void)now;
	return rc_resp_tx(qp, out);
}

const struct rc_engine_ops rc_engine = {
	.setup = rc_eng_setup,
	.start = rc_eng_nop,
	.on_err = rc_eng_nop,
	.free = rc_eng_nop,
	.next_expiry = rc_eng_next_expiry,
	.on_timer = rc_eng_on_timer,
	.ack_early = rc_resp_on_timer, /* only the responder's delayed ACK looks at the time */
	.rx_req = rc_resp_rx,
	.rx_resp = rc_comp_rx,
	.tx_resp = rc_eng_tx_resp,
	.tx_req = rc_req_tx,
};
