/* SPDX-License-Identifier: MIT
 * metaroced's counter catalogue: every counter mrstat and the stats socket show, under the name
 * Linux rxe (`rdma statistic`, drivers/infiniband/sw/rxe/rxe_hw_counters.c) or mlx5 (hw_counters,
 * `ethtool -S`) users know where one of those has the same meaning, else a metaroce name (no
 * spaces). DPDK-free: the names are unit-tested against the rxe/mlx5 lists (tests/daemon).
 */
#ifndef MR_DAEMON_COUNTERS_H
#define MR_DAEMON_COUNTERS_H

#include <stdint.h>

#include "daemon.h"
#include "dpdk/dpdk_port.h"
#include "dpdk/neigh.h"
#include "impair/impair.h"
#include "transport/rc.h"
#include "wire/roce_pkt.h"

/* 'c': a counter (monotonic; --reset and rates apply), 'g': a gauge (a value now). */
enum mr_cnt_kind { MR_CNT_COUNTER = 'c', MR_CNT_GAUGE = 'g' };

struct mr_cnt_sink {
	void (*emit)(void *arg, enum mr_cnt_kind kind, const char *name, uint64_t value);
	void *arg;
};

/* Transport counters of one QP or of a sum of QPs. */
void mr_cnt_qp(const struct mr_cnt_sink *k, const struct mr_qp_stats *s);
void mr_cnt_ctx(const struct mr_cnt_sink *k, const struct mr_ctx_stats *s);
/* Frames the parser refused, by reason (rx_malformed_*, rx_icrc_errors, rx_not_roce). */
void mr_cnt_parse_drops(const struct mr_cnt_sink *k, const uint64_t drops[MR_PARSE_NR_RESULTS]);
/* Counter name of a parse result (no spaces), NULL for MR_PARSE_OK or out of range. */
const char *mr_cnt_parse_name(enum mr_parse_result r);
/* Port counters (DPDK's rte_eth_stats under their xstats names). */
void mr_cnt_port(const struct mr_cnt_sink *k, const struct mr_dpdk_port_stats *ps);
void mr_cnt_neigh(const struct mr_cnt_sink *k, const struct mr_neigh_stats *ns);
/* Engine counters: RoCE frames each way (rx/tx_vport_rdma_unicast_packets), drops by reason. */
void mr_cnt_engine(const struct mr_cnt_sink *k, const struct mr_engine_stats *e);
/* The impairment stage of one direction ("rx"/"tx"): impair_<dir>_*. */
void mr_cnt_impair(const struct mr_cnt_sink *k, const char *dir, const struct mr_impair_stats *s);

#endif
