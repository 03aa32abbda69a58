/* SPDX-License-Identifier: MIT
 * Bring a pair of simulated RC QPs to RTS, connected to each other, through the verbs-style
 * transitions (IBA 10.3.1: RESET->INIT->RTR->RTS) with exactly the attributes each requires.
 */
#ifndef MR_SIM_QP_H
#define MR_SIM_QP_H

#include <stdint.h>

#include "sim/sim_node.h"
#include "transport/rc.h"

struct mr_sim_qp_cfg {
	uint32_t mtu;            /* path MTU in bytes */
	uint32_t access;         /* remote access both responders grant */
	uint8_t timeout;         /* IBA ACK timeout code (4.096 us * 2^t) */
	uint8_t retry_cnt;       /* 0..7 */
	uint8_t rnr_retry;       /* 0..7, 7 = infinite */
	uint8_t min_rnr_timer;   /* IBA table 45 code */
	uint8_t max_rd_atomic;   /* outstanding READ/atomic, both directions */
	uint32_t psn_a, psn_b;   /* initial send PSNs of a and b */
	uint8_t tclass;          /* IP DSCP<<2 | ECN of the path (2 = ECT(0), needed for CE) */
	/* MR_QP_TRANSPORT, set at INIT->RTR only when transport != RC or cc != NONE (so stock
	 * RC scenarios keep the exact verbs attribute set) */
	enum mr_transport transport;
	uint16_t n_entropies;
	enum mr_cc_algo cc;
	struct mr_cc_params cc_params;
};

/* A sensible default: MTU 1024, all remote access, timeout 8 (~1 ms), retry 7, rnr_retry 7,
 * min_rnr_timer 1 (0.01 ms), 16 outstanding reads, PSNs chosen near the 24-bit wrap so that
 * every scenario also crosses it. */
void mr_sim_qp_cfg_init(struct mr_sim_qp_cfg *cfg);

/* Connect qa (on a) and qb (on b), both in RESET. Returns 0 or the first mr_qp_modify error. */
int mr_sim_qp_connect(struct mr_sim_node *a, struct mr_qp *qa, struct mr_sim_node *b,
		      struct mr_qp *qb, const struct mr_sim_qp_cfg *cfg);

/* UDP source port for a QP pair: 0xC000 | a fold of both QPNs, fixed for the flow (as rxe). */
uint16_t mr_sim_qp_sport(uint32_t lqpn, uint32_t rqpn);

#endif
