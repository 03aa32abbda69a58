/* SPDX-License-Identifier: MIT
 * A small deterministic bottleneck model for the congestion controllers: N senders, one FIFO
 * queue served at line rate with step ECN marking at K bytes (DCTCP-style),
 * a fixed propagation RTT, lossless (infinite buffer, as PFC makes RoCE). ECN is marked on dequeue (egress). Time-stepped at
 * dt; events (ACKs, CNPs) carry exact times. Receivers ACK every packet, echoing its send
 * time (RTT sample) and CE mark; for DCQCN a per-flow notification point turns CE marks into
 * CNPs that reach the sender half an RTT later.
 */
#ifndef MR_TEST_CC_MODEL_H
#define MR_TEST_CC_MODEL_H

#include <stdint.h>

#include "cc/cc.h"

#define MR_MODEL_MAX_FLOWS 64

struct mr_model_cfg {
	enum mr_cc_algo algo;
	unsigned n_flows;
	uint64_t line_bps;      /* every sender's NIC and the bottleneck */
	uint64_t base_rtt_ns;   /* propagation round trip */
	uint32_t mtu;
	uint32_t ecn_k_bytes;
	uint64_t dt_ns;
	uint64_t stagger_ns;    /* flow i starts at i * stagger_ns (real senders are never in phase) */
	uint64_t warmup_ns;     /* statistics start here */
	uint64_t duration_ns;   /* run ends here */
};

struct mr_model_result {
	double jain;            /* Jain's fairness index of per-flow goodput after warmup */
	double util;            /* delivered bits / (line rate * measured time) */
	double q_avg_bytes, q_max_bytes, q_min_bytes;
	double thr_min_gbps, thr_max_gbps;
	uint64_t marks, cnps, pkts;
};

/* Returns 0, or -EINVAL for a bad configuration, -ENOSPC if the queue overflowed. */
int mr_model_run(const struct mr_model_cfg *cfg, struct mr_model_result *res);

#endif
