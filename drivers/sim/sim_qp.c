/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "sim/sim_qp.h"

void mr_sim_qp_cfg_init(struct mr_sim_qp_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->mtu = 1024;
	cfg->access = MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ |
		      MR_ACCESS_REMOTE_ATOMIC;
	cfg->timeout = 8;
	cfg->retry_cnt = 7;
	cfg->rnr_retry = 7;
	cfg->min_rnr_timer = 1;
	cfg->max_rd_atomic = 16;
	cfg->psn_a = MR_PSN_MASK - 100;
	cfg->psn_b = MR_PSN_MASK - 3;
}

uint16_t mr_sim_qp_sport(uint32_t lqpn, uint32_t rqpn)
{
	uint32_t x = lqpn * 0x9e3779b1u ^ rqpn;

	return (uint16_t)(0xc000u | ((x ^ (x >> 14) ^ (x >> 28)) & 0x3fffu));
}

/* Drive one QP from RESET to RTS towards its peer. */
static int bring_up(struct mr_sim_node *self, struct mr_qp *q, struct mr_sim_node *peer,
		    uint32_t peer_qpn, uint32_t sq_psn, uint32_t rq_psn,
		    const struct mr_sim_qp_cfg *cfg)
{
	struct mr_qp_attr at;
	uint32_t mask;
	int rc;

	memset(&at, 0, sizeof(at));
	at.qp_state = MR_QPS_INIT;
	at.pkey_index = 0;
	at.qp_access_flags = cfg->access;
	rc = mr_qp_modify(q, &at, MR_QP_STATE | MR_QP_PKEY_INDEX | MR_QP_ACCESS_FLAGS);
	if (rc < 0)
		return rc;

	memset(&at, 0, sizeof(at));
	at.qp_state = MR_QPS_RTR;
	mr_sim_node_path_to(self, peer, mr_sim_qp_sport(mr_qp_num(q), peer_qpn), &at.path);
	at.path_mtu = cfg->mtu;
	at.dest_qp_num = peer_qpn;
	at.rq_psn = rq_psn;
	at.max_dest_rd_atomic = cfg->max_rd_atomic;
	at.min_rnr_timer = cfg->min_rnr_timer;
	at.path.tclass = cfg->tclass;
	mask = MR_QP_STATE | MR_QP_PATH | MR_QP_PATH_MTU | MR_QP_DEST_QPN | MR_QP_RQ_PSN |
	       MR_QP_MAX_DEST_RD_ATOMIC | MR_QP_MIN_RNR_TIMER;
	if (cfg->transport != MR_TRANSPORT_RC || cfg->cc != MR_CC_NONE) {
		at.transport = cfg->transport;
		at.n_entropies = cfg->n_entropies ? cfg->n_entropies : 1;
		at.cc = cfg->cc;
		at.cc_params = cfg->cc_params;
		mask |= MR_QP_TRANSPORT;
	}
	rc = mr_qp_modify(q, &at, mask);
	if (rc < 0)
		return rc;

	memset(&at, 0, sizeof(at));
	at.qp_state = MR_QPS_RTS;
	at.sq_psn = sq_psn;
	at.timeout = cfg->timeout;
	at.retry_cnt = cfg->retry_cnt;
	at.rnr_retry = cfg->rnr_retry;
	at.max_rd_atomic = cfg->max_rd_atomic;
	return mr_qp_modify(q, &at, MR_QP_STATE | MR_QP_SQ_PSN | MR_QP_TIMEOUT | MR_QP_RETRY_CNT |
					    MR_QP_RNR_RETRY | MR_QP_MAX_QP_RD_ATOMIC);
}

int mr_sim_qp_connect(struct mr_sim_node *a, struct mr_qp *qa, struct mr_sim_node *b,
		      struct mr_qp *qb, const struct mr_sim_qp_cfg *cfg)
{
	int rc = bring_up(a, qa, b, mr_qp_num(qb), cfg->psn_a, cfg->psn_b, cfg);

	if (rc < 0)
		return rc;
	return bring_up(b, qb, a, mr_qp_num(qa), cfg->psn_b, cfg->psn_a, cfg);
}
