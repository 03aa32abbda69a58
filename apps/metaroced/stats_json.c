/* SPDX-License-Identifier: MIT
 * metaroced statistics as JSON (--stats-json FILE; written on SIGUSR1 and at exit): port
 * counters, engine counters, parse drops by reason, RC transport counters summed and per live
 * QP, neighbour and shm server counters, impairment counters per direction, and one entry per
 * engine shard (the totals above are the sums over shards). Scripts (the demo,
 * loss sweeps) read it as they would `rdma stat` or `ethtool -S`. The file is replaced
 * atomically (written to FILE.tmp, then renamed), so a reader never sees half a document.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "backend.h"
#include "dpdk/dpdk_port.h"
#include "dpdk/neigh.h"
#include "impair/impair.h"
#include "json_out.h"
#include "wire/pcap_file.h"
#include "shm/shm_server.h"
#include "transport/rc.h"

#define F(name) { #name, offsetof(struct mr_qp_stats, name) }
static const struct {
	const char *name;
	size_t off;
} qp_fields[] = {
	F(tx_pkts), F(rx_pkts), F(tx_bytes), F(rx_bytes), F(retransmits), F(timeouts),
	F(seq_naks_sent), F(seq_naks_rcvd), F(rnr_naks_sent), F(rnr_naks_rcvd),
	F(rem_access_naks_sent), F(rem_access_naks_rcvd), F(inv_req_naks_sent),
	F(inv_req_naks_rcvd), F(duplicate_requests), F(out_of_sequence), F(acks_sent),
	F(acks_rcvd), F(implied_naks), F(dropped), F(sack_retransmits), F(spurious_retransmits),
	F(tlp_probes), F(ooo_placed), F(ce_rcvd), F(cnps_sent), F(cnps_rcvd),
	F(retry_seqs), F(retry_exceeded), F(rnr_retry_exceeded), F(cnps_handled),
	F(sends_completed), F(recvs_completed), F(sack_blocks_rcvd),
};
#undef F

static const char *const qp_state_names[] = {
	[MR_QPS_RESET] = "RESET", [MR_QPS_INIT] = "INIT", [MR_QPS_RTR] = "RTR",
	[MR_QPS_RTS] = "RTS", [MR_QPS_SQD] = "SQD", [MR_QPS_SQE] = "SQE", [MR_QPS_ERR] = "ERR",
};

static void qp_counters(struct mr_json *j, const struct mr_qp_stats *s)
{
	size_t i;

	for (i = 0; i < sizeof(qp_fields) / sizeof(qp_fields[0]); i++) {
		uint64_t v;

		memcpy(&v, (const uint8_t *)s + qp_fields[i].off, sizeof(v));
		mr_json_u64(j, qp_fields[i].name, v);
	}
}

static void one_qp(struct mr_json *j, const struct mr_qp_snap *q)
{
	enum mr_qp_state st = q->state;

	mr_json_obj_begin(j, NULL);
	mr_json_u64(j, "qpn", q->qpn);
	mr_json_str(j, "state", (unsigned int)st < sizeof(qp_state_names) / sizeof(qp_state_names[0])
		    && qp_state_names[st] != NULL ? qp_state_names[st] : "?");
	qp_counters(j, &q->s);
	mr_json_obj_end(j);
}

static void port_engine(struct mr_json *j, const struct mr_stats_view *v)
{
	const struct mr_shard_snap *io = &v->shards[0]->snap;
	const struct mr_engine_stats *e = &v->st;
	const struct mr_dpdk_port_stats ps = io->ps;
	unsigned int i;
	uint64_t drops = 0;

	mr_json_obj_begin(j, "port");
	mr_json_u64(j, "ipackets", ps.ipackets);
	mr_json_u64(j, "opackets", ps.opackets);
	mr_json_u64(j, "ibytes", ps.ibytes);
	mr_json_u64(j, "obytes", ps.obytes);
	mr_json_u64(j, "imissed", ps.imissed);
	mr_json_u64(j, "ierrors", ps.ierrors);
	mr_json_u64(j, "oerrors", ps.oerrors);
	mr_json_u64(j, "rx_nombuf", ps.rx_nombuf);
	mr_json_u64(j, "tx_buffer_drops", ps.tx_buffer_drops);
	mr_json_u64(j, "mbuf_alloc_fail", ps.mbuf_alloc_fail);
	mr_json_u64(j, "tx_warm", ps.tx_warm);
	mr_json_u64(j, "tx_warm_slips", ps.tx_warm_slips);
	mr_json_obj_end(j);

	mr_json_obj_begin(j, "engine");
	mr_json_u64(j, "iterations", e->iterations);
	mr_json_u64(j, "idle_sleeps", e->idle_sleeps);
	mr_json_u64(j, "idle_yields", e->idle_yields);
	mr_json_u64(j, "load_sleeps", e->load_sleeps);
	mr_json_u64(j, "clock_resyncs", e->clock_resyncs);
	mr_json_u64(j, "tx_backpressure", e->tx_backpressure);
	mr_json_u64(j, "rx_frames", e->rx_frames);
	mr_json_u64(j, "rx_bytes", e->rx_bytes);
	mr_json_u64(j, "rx_roce", e->rx_roce);
	mr_json_u64(j, "rx_neigh", e->rx_neigh);
	mr_json_u64(j, "rx_not_for_us", e->rx_not_for_us);
	mr_json_u64(j, "rx_own_echo", e->rx_own_echo);
	mr_json_u64(j, "rx_too_long", e->rx_too_long);
	mr_json_u64(j, "tx_frames", e->tx_frames);
	mr_json_u64(j, "tx_bytes", e->tx_bytes);
	mr_json_u64(j, "tx_neigh", e->tx_neigh);
	mr_json_u64(j, "tx_loopback", e->tx_loopback);
	mr_json_u64(j, "tx_nombuf", e->tx_nombuf);
	mr_json_u64(j, "tx_build_err", e->tx_build_err);
	mr_json_u64(j, "tx_csum_offload", e->tx_csum_offload);
	mr_json_u64(j, "held", e->held);
	mr_json_u64(j, "held_sent", e->held_sent);
	mr_json_u64(j, "held_dropped", e->held_dropped);
	mr_json_u64(j, "holding", v->nheld);
	mr_json_u64(j, "timer_runs", e->timer_runs);
	mr_json_u64(j, "stalls", e->stalls);
	mr_json_u64(j, "max_gap_ns", e->max_gap_ns);
	mr_json_u64(j, "max_work_ns", e->max_work_ns);
	mr_json_u64(j, "pcap_dropped", io->pcap_dropped);
	/* QP sharding (sums over shards; per shard in "shards") */
	mr_json_u64(j, "tx_roce", e->tx_roce);
	mr_json_u64(j, "rx_dispatched", e->rx_dispatched);
	mr_json_u64(j, "ring_full", e->ring_full);
	mr_json_obj_end(j);

	/* Every reason, zeros included, so readers need no defaults. */
	mr_json_obj_begin(j, "parse_drops");
	for (i = 1; i < MR_PARSE_NR_RESULTS; i++) {
		drops += e->parse_drop[i];
		mr_json_u64(j, mr_parse_result_str((enum mr_parse_result)i), e->parse_drop[i]);
	}
	mr_json_u64(j, "total", drops);
	mr_json_obj_end(j);
}

/* Live objects, summed over shards: what a leak check compares once every app is gone. */
static void objects(struct mr_json *j, const struct mr_stats_view *v)
{
	struct mr_ctx_counts c = {0};
	uint64_t tx_mbufs = 0;

	for (unsigned int i = 0; i < v->n; i++) {
		const struct mr_shard_snap *sn = &v->shards[i]->snap;

		c.qps += sn->cnt.qps;
		c.pds += sn->cnt.pds;
		c.mrs += sn->cnt.mrs;
		c.cqs += sn->cnt.cqs;
		c.srqs += sn->cnt.srqs;
		tx_mbufs += sn->txpool_in_use;
	}
	mr_json_obj_begin(j, "objects");
	mr_json_u64(j, "qps", c.qps);
	mr_json_u64(j, "pds", c.pds);
	mr_json_u64(j, "mrs", c.mrs);
	mr_json_u64(j, "cqs", c.cqs);
	mr_json_u64(j, "srqs", c.srqs);
	mr_json_u64(j, "rx_mbufs_in_use", v->shards[0]->snap.ps.mbufs_in_use);
	mr_json_u64(j, "tx_mbufs_in_use", tx_mbufs);
	mr_json_obj_end(j);
}

static void transport(struct mr_json *j, const struct mr_stats_view *v)
{
	unsigned int i, k;

	mr_json_obj_begin(j, "transport");
	mr_json_u64(j, "qps", v->nqp);
	mr_json_u64(j, "ctx_rx_unknown_qp", v->cs.rx_unknown_qp);
	mr_json_u64(j, "ctx_rx_dropped", v->cs.rx_dropped);
	mr_json_u64(j, "ctx_rx_bad_pkey", v->cs.rx_bad_pkey);
	mr_json_u64(j, "ctx_rx_bad_source", v->cs.rx_bad_source);
	mr_json_u64(j, "ctx_parting_acks", v->cs.parting_acks);
	mr_json_u64(j, "ctx_parting_dropped", v->cs.parting_dropped);
	mr_json_u64(j, "metaroce_by_policy", v->policy_upgrades);
	/* Destroyed QPs included: totals never go back. */
	mr_json_obj_begin(j, "sum");
	qp_counters(j, &v->qsum);
	mr_json_obj_end(j);
	mr_json_arr_begin(j, "per_qp");
	for (i = 0; i < v->n; i++)
		for (k = 0; k < v->shards[i]->snap.nqps; k++)
			one_qp(j, &v->shards[i]->snap.qps[k]);
	mr_json_arr_end(j);
	mr_json_obj_end(j);
}

/* One entry per engine shard: shard and lcore ids, live QPs and sessions, RoCE frames into
 * (rx) and out of (tx) its transport, frames it got from the I/O shard's dispatch. */
static void shards(struct mr_json *j, const struct mr_stats_view *v)
{
	unsigned int i;

	mr_json_arr_begin(j, "shards");
	for (i = 0; i < v->n; i++) {
		const struct mr_daemon *d = v->shards[i];
		const struct mr_shard_snap *sn = &d->snap;
		uint64_t drops = 0;
		unsigned int k;

		for (k = 1; k < MR_PARSE_NR_RESULTS; k++)
			drops += sn->st.parse_drop[k];
		mr_json_obj_begin(j, NULL);
		mr_json_u64(j, "shard", d->shard_id);
		mr_json_u64(j, "lcore", d->lcore);
		mr_json_u64(j, "qps", sn->nqp);
		mr_json_u64(j, "qps_created", sn->qps_created);
		mr_json_u64(j, "sessions", sn->nsessions);
		mr_json_u64(j, "rx", sn->st.rx_roce);
		mr_json_u64(j, "tx", sn->st.tx_roce);
		mr_json_u64(j, "dispatched", d->shard_id == 0 ? sn->st.rx_dispatched :
			    sn->st.ring_rx);
		mr_json_u64(j, "ring_rx", sn->st.ring_rx);
		mr_json_u64(j, "ring_tx", sn->st.ring_tx);
		mr_json_u64(j, "ring_full", sn->st.ring_full);
		mr_json_u64(j, "ring_copy", sn->st.ring_copy);
		mr_json_u64(j, "rx_backpressure", sn->st.rx_backpressure);
		mr_json_u64(j, "parse_drops", drops);
		mr_json_u64(j, "rx_not_for_us", sn->st.rx_not_for_us);
		mr_json_u64(j, "tx_loopback", sn->st.tx_loopback);
		mr_json_u64(j, "sessions_opened", sn->ss.sessions_opened);
		mr_json_u64(j, "tx_pkts", sn->qsum.tx_pkts);
		mr_json_u64(j, "rx_pkts", sn->qsum.rx_pkts);
		mr_json_u64(j, "retransmits", sn->qsum.retransmits);
		mr_json_u64(j, "iterations", sn->st.iterations);
		mr_json_u64(j, "idle_sleeps", sn->st.idle_sleeps);
		mr_json_u64(j, "stalls", sn->st.stalls);
		mr_json_obj_end(j);
	}
	mr_json_arr_end(j);
}

static void neigh_shm(struct mr_json *j, const struct mr_stats_view *v)
{
	const struct mr_neigh_stats *ns = &v->shards[0]->snap.ns;
	const struct mr_shm_server_stats ss = v->ss;

	mr_json_obj_begin(j, "neigh");
	mr_json_u64(j, "arp_rx", ns->arp_rx);
	mr_json_u64(j, "arp_requests_answered", ns->arp_requests_answered);
	mr_json_u64(j, "arp_replies_rx", ns->arp_replies_rx);
	mr_json_u64(j, "nd_rx", ns->nd_rx);
	mr_json_u64(j, "ns_answered", ns->ns_answered);
	mr_json_u64(j, "solicits_tx", ns->solicits_tx);
	mr_json_u64(j, "resolved", ns->resolved);
	mr_json_u64(j, "unresolved_lookups", ns->unresolved_lookups);
	mr_json_u64(j, "unreachable", ns->unreachable);
	mr_json_u64(j, "malformed", ns->arp_malformed + ns->nd_malformed);
	mr_json_obj_end(j);

	mr_json_obj_begin(j, "shm");
	mr_json_u64(j, "sessions", v->nsessions);
	mr_json_u64(j, "sessions_opened", ss.sessions_opened);
	mr_json_u64(j, "sessions_closed", ss.sessions_closed);
	mr_json_u64(j, "ctl_requests", ss.ctl_requests);
	mr_json_u64(j, "ctl_errors", ss.ctl_errors);
	mr_json_u64(j, "send_wrs", ss.send_wrs);
	mr_json_u64(j, "recv_wrs", ss.recv_wrs);
	mr_json_u64(j, "wr_rejected", ss.wr_rejected);
	mr_json_u64(j, "cqes", ss.cqes);
	mr_json_u64(j, "ring_corrupt", ss.ring_corrupt);
	mr_json_u64(j, "db_pends", ss.db_pends);
	mr_json_u64(j, "db_barriers", ss.db_barriers);
	mr_json_u64(j, "db_barrier_fails", ss.db_barrier_fails);
	mr_json_obj_end(j);
}

static void impair(struct mr_json *j, const struct mr_stats_view *v)
{
	const struct mr_daemon *d = v->shards[0];
	const struct mr_shard_snap *io = &d->snap;
	static const char *const drop_names[MR_IMPAIR_NR_DROP] = {
		[MR_IMPAIR_DROP_RANDOM] = "random", [MR_IMPAIR_DROP_BURST] = "burst",
		[MR_IMPAIR_DROP_ENTROPY] = "entropy", [MR_IMPAIR_DROP_QFULL] = "queue_full",
	};
	unsigned int dir, k;

	mr_json_obj_begin(j, "impair");
	for (dir = 0; dir < MR_IMPAIR_NR_DIRS; dir++) {
		const struct mr_impair_stats is = io->is[dir];
		uint64_t total = 0;

		mr_json_obj_begin(j, dir == MR_IMPAIR_RX ? "rx" : "tx");
		mr_json_bool(j, "enabled", io->imp_on[dir]);
		mr_json_str(j, "spec", io->imp_on[dir] ? d->cfg.impair_spec[dir] : NULL);
		mr_json_u64(j, "seed", d->cfg.impair[dir].seed);
		mr_json_u64(j, "frames", is.frames);
		mr_json_u64(j, "bytes", is.bytes);
		mr_json_u64(j, "delivered", is.delivered);
		mr_json_obj_begin(j, "dropped");
		for (k = 0; k < MR_IMPAIR_NR_DROP; k++) {
			total += is.dropped[k];
			mr_json_u64(j, drop_names[k], is.dropped[k]);
		}
		mr_json_u64(j, "total", total);
		mr_json_obj_end(j);
		mr_json_u64(j, "delayed", is.delayed);
		mr_json_u64(j, "reordered", is.reordered);
		mr_json_u64(j, "duplicated", is.duplicated);
		mr_json_u64(j, "corrupted", is.corrupted);
		mr_json_u64(j, "ce_marked", is.ce_marked);
		mr_json_u64(j, "ce_not_ect", is.ce_not_ect);
		mr_json_u64(j, "burst_entries", is.burst_entries);
		mr_json_u64(j, "ecn_queue_peak", is.ecn_queue_peak);
		mr_json_u64(j, "malformed", is.malformed);
		mr_json_u64(j, "late", dir == MR_IMPAIR_RX ? v->st.imp_rx_late : v->st.imp_tx_late);
		mr_json_u64(j, "queued", io->imp_queued[dir]);
		mr_json_obj_end(j);
	}
	mr_json_u64(j, "late_tx_nombuf", v->st.imp_tx_nombuf);
	mr_json_u64(j, "errors", v->st.imp_errors);
	mr_json_obj_end(j);
}

int mr_stats_json_write(const struct mr_stats_view *v, const char *path, bool final)
{
	char tmp[4096];
	struct mr_json j;
	FILE *f;
	int rc;

	if (v == NULL || v->n == 0 || path == NULL)
		return -EINVAL;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	f = fopen(tmp, "w");
	if (f == NULL)
		return -errno;
	mr_json_init(&j, f);
	mr_json_obj_begin(&j, NULL);
	mr_json_str(&j, "schema", "metaroced-stats-1");
	mr_json_u64(&j, "pid", (uint64_t)getpid());
	mr_json_bool(&j, "final", final);
	mr_json_u64(&j, "time_ns", mr_now_ns());
	port_engine(&j, v);
	objects(&j, v);
	transport(&j, v);
	neigh_shm(&j, v);
	impair(&j, v);
	mr_json_u64(&j, "nshards", v->n);
	shards(&j, v);
	mr_json_obj_end(&j);
	rc = mr_json_finish(&j);
	if (fclose(f) != 0 && rc == 0)
		rc = -EIO;
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc < 0)
		unlink(tmp);
	return rc;
}
