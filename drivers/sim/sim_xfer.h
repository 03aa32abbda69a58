/* SPDX-License-Identifier: MIT
 * One simulated RC transfer between two nodes ("a" requester, "b" responder): `count` messages of
 * one operation over `nqp` QP pairs, at most `depth` outstanding per QP, every byte verified at
 * the end against a seeded pattern. Shared by the simulation tests and the mrsim tool.
 *
 * Per operation what is checked:
 *   SEND / SEND_WITH_IMM       b's receive buffers == a's source; recv WC length, opcode, imm
 *   WRITE / WRITE_WITH_IMM     b's region == a's source; WITH_IMM: recv WC imm and length
 *   READ                       a's local buffer == b's source
 *   CMP_SWAP / FETCH_ADD       the original value returned to a and the final remote word
 * Guard bytes between messages must stay untouched (catches writes past a message's end).
 */
#ifndef MR_SIM_XFER_H
#define MR_SIM_XFER_H

#include <stdint.h>
#include <stdio.h>

#include "sim/sim.h"
#include "sim/sim_qp.h"

#define MR_SIM_XFER_MAX_QP 8
/* Guard bytes after each message in the data buffers (verified untouched). */
#define MR_SIM_XFER_GUARD 64

struct mr_sim_xfer_cfg {
	enum mr_wr_opcode op;
	uint64_t size;           /* bytes per message (ignored for atomics: 8) */
	uint32_t count;          /* messages */
	uint32_t depth;          /* outstanding WRs per QP */
	uint32_t nqp;            /* QP pairs, 1..MR_SIM_XFER_MAX_QP */
	struct mr_sim_qp_cfg qp;
	struct mr_sim_link_cfg link_ab, link_ba;
	uint64_t seed;           /* data pattern and transport seeds */
	uint64_t max_ns;         /* virtual time budget */
	uint64_t recv_delay_ns;  /* b posts its receives only this long after the start (RNR) */
	FILE *trace;             /* per-frame trace, or NULL */
};

struct mr_sim_xfer_result {
	int rc;                     /* 0, -ETIMEDOUT (deadline), or a setup error */
	uint64_t bytes_verified;    /* bytes compared equal */
	uint64_t bytes_bad;         /* bytes that differ (data, results, guards) */
	uint32_t wc_bad;            /* completions with a wrong field (length, opcode, imm, qp) */
	uint32_t completed;         /* send-side completions (any status) */
	uint32_t succeeded;         /* ... with MR_WC_SUCCESS */
	uint32_t recv_completed;    /* receive completions on b (any status) */
	uint32_t status_count[32];  /* send-side completions by enum mr_wc_status */
	enum mr_wc_status first_error; /* MR_WC_SUCCESS if none */
	enum mr_qp_state final_state_a; /* state of a's first QP at the end */
	uint64_t elapsed_ns;        /* virtual time until the last completion */
	double goodput_gbps;        /* verified payload bits / elapsed virtual time */
	uint64_t lat_p50_ns, lat_p99_ns, lat_max_ns; /* post -> send completion */
	struct mr_qp_stats qa, qb;  /* summed over the QPs of a (requester) and b (responder) */
	struct mr_sim_node_stats node_a, node_b;
	struct mr_sim_link_stats link_ab, link_ba;
	struct mr_ctx_stats ctx_a, ctx_b;
	struct mr_sim_stats sim;
};

/* Defaults: SEND, 1 message of 4096 B, depth 8, 1 QP, 100 Gb/s links with 5 us latency, QP
 * timeout code 8 (~1 ms), 10 s virtual budget. */
void mr_sim_xfer_cfg_init(struct mr_sim_xfer_cfg *cfg);
/* Run the transfer. Returns res->rc. */
int mr_sim_xfer_run(const struct mr_sim_xfer_cfg *cfg, struct mr_sim_xfer_result *res);
/* Human name of an operation ("write", "read", ...). */
const char *mr_sim_xfer_op_name(enum mr_wr_opcode op);
/* Human name of a completion status. */
const char *mr_sim_wc_status_str(enum mr_wc_status s);

#endif
