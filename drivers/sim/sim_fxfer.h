/* SPDX-License-Identifier: MIT
 * Verified transfers over the multipath fabric: F flows, each one QP pair from host src to host
 * dst moving `count` RDMA WRITEs of `size` bytes (at most `depth` outstanding), every byte of
 * every destination region (and the guard bytes between them) compared with the source at the
 * end. Gives per-flow and aggregate goodput, Jain fairness, latency percentiles, transport
 * counters and per-queue fabric reports. Used by mrsim (--fabric-paths, --incast) and the 'sim'
 * tests of the fabric.
 */
#ifndef MR_SIM_FXFER_H
#define MR_SIM_FXFER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/sim_fabric.h"
#include "sim/sim_qp.h"

#define MR_SIM_FXFER_MAX_FLOWS 64

struct mr_sim_fxfer_cfg {
	struct mr_sim_fabric_cfg fabric;
	unsigned int n_flows;
	struct { uint16_t src, dst; } flow[MR_SIM_FXFER_MAX_FLOWS];
	uint64_t size;           /* bytes per message */
	uint32_t count;          /* messages per flow */
	uint32_t depth;          /* outstanding WRITEs per flow */
	struct mr_sim_qp_cfg qp; /* transport, entropies, CC, MTU, timeouts... */
	uint64_t seed;           /* data pattern */
	uint64_t max_ns;         /* virtual time budget */
	FILE *trace;             /* per-frame trace of every host, or NULL */
};

struct mr_sim_fxfer_flow {
	uint64_t bytes_verified, bytes_bad;
	uint32_t completed, succeeded;
	uint64_t elapsed_ns;     /* start -> last completion of this flow */
	double goodput_gbps;
	struct mr_qp_stats qa, qb;
};

struct mr_sim_fxfer_result {
	int rc;                  /* 0, -ETIMEDOUT, or a setup error */
	bool verified;           /* every byte of every flow checked and equal, every WR ok */
	uint64_t bytes_verified, bytes_bad;
	uint32_t completed, succeeded, wc_bad;
	int first_error;         /* enum mr_wc_status of the first failed WR, 0 if none */
	uint64_t elapsed_ns;     /* start -> last completion of any flow */
	double goodput_gbps;     /* all verified payload / elapsed */
	double jain;             /* Jain's fairness index over per-flow goodput (Jain 1984) */
	uint64_t lat_p50_ns, lat_p99_ns, lat_max_ns; /* post -> completion, all messages */
	uint64_t data_pkts;      /* request packets the senders put on the wire (incl. retx) */
	struct mr_qp_stats qa, qb; /* summed over requesters / responders */
	uint64_t parse_drops;    /* frames hosts rejected (corruption, ...) */
	struct mr_sim_fabric_stats fabric;
	unsigned int n_paths;
	struct mr_sim_fabric_report path[MR_SIM_FABRIC_MAX_PATHS]; /* summed over destinations */
	struct mr_sim_fabric_report down[MR_SIM_FABRIC_MAX_HOSTS];
	struct mr_sim_fxfer_flow flow[MR_SIM_FXFER_MAX_FLOWS];
};

/* Defaults: 2 hosts, 1 path, one flow 0 -> 1, 1 MiB x 8 messages, depth 4, MTU 4096, RC. */
void mr_sim_fxfer_cfg_init(struct mr_sim_fxfer_cfg *cfg);
/* Fill flows for K:1 incast: hosts 0..K-1 each send to host K (n_hosts becomes K+1). */
int mr_sim_fxfer_cfg_incast(struct mr_sim_fxfer_cfg *cfg, unsigned int k);
/* Run. Returns res->rc. res is large: allocate it, not on a small stack. */
int mr_sim_fxfer_run(const struct mr_sim_fxfer_cfg *cfg, struct mr_sim_fxfer_result *res);

#endif
