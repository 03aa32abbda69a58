/* SPDX-License-Identifier: MIT
 * metaroced statistics as JSON (--stats-json FILE; written on SIGUSR1 and at exit): port
 * counters, engine counters, parse drops by reason, RC transport counters summed and per live
 * QP, neighbour and shm server counters, impairment counters per direction. Scripts (the demo,
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
#include "pcap_file.h"
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

static void one_qp(void *arg, const struct mr_qp *qp)
{
	struct mr_json *j = arg;
	struct mr_qp_stats s;
	enum mr_qp_state st = mr_qp_state(qp);

	if (mr_qp_get_stats(qp, &s) < 0)
		return;
	mr_json_obj_begin(j, NULL);
	mr_json_u64(j, "qpn", mr_qp_num(qp));
	mr_json_str(j, "state", (unsigned int)st < sizeof(qp_state_names) / sizeof(qp_state_names[0])
		    && qp_state_names[st] != NULL ? qp_state_names[st] : "?");
	qp_counters(j, &s);
	mr_json_obj_end(j);
}

static void port_engine(struct mr_json *j, struct mr_daemon *d)
{
	const struct mr_engine_stats *e = &d->st;
	struct mr_dpdk_port_stats ps = {0};
	unsigned int i;
	uint64_t drops = 0;

	mr_dpdk_port_stats_get(d->port, &ps);
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
	mr_json_obj_end(j);

	mr_json_obj_begin(j, "engine");
	mr_json_u64(j, "iterations", e->iterations);
	mr_json_u64(j, "idle_sleeps", e->idle_sleeps);
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
	mr_json_u64(j, "held", e->held);
	mr_json_u64(j, "held_sent", e->held_sent);
	mr_json_u64(j, "held_dropped", e->held_dropped);
	mr_json_u64(j, "holding", d->nheld);
	mr_json_u64(j, "timer_runs", e->timer_runs);
	mr_json_u64(j, "stalls", e->stalls);
	mr_json_u64(j, "max_gap_ns", e->max_gap_ns);
	mr_json_u64(j, "max_work_ns", e->max_work_ns);
	mr_json_u64(j, "pcap_dropped", d->pcap != NULL ? mr_pcap_writer_dropped(d->pcap) : 0);
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

static void transport(struct mr_json *j, struct mr_daemon *d)
{
	struct mr_qp_stats sum;
	struct mr_ctx_stats cs;
	unsigned int nqp;

	mr_ctx_get_stats(d->ctx, &cs);
	nqp = mr_backend_qp_stats_sum(d->be, &sum);
	mr_json_obj_begin(j, "transport");
	mr_json_u64(j, "qps", nqp);
	mr_json_u64(j, "ctx_rx_unknown_qp", cs.rx_unknown_qp);
	mr_json_u64(j, "ctx_rx_dropped", cs.rx_dropped);
	/* Destroyed QPs included: totals never go back. */
	mr_json_obj_begin(j, "sum");
	qp_counters(j, &sum);
	mr_json_obj_end(j);
	mr_json_arr_begin(j, "per_qp");
	mr_backend_qp_foreach(d->be, one_qp, j);
	mr_json_arr_end(j);
	mr_json_obj_end(j);
}

static void neigh_shm(struct mr_json *j, struct mr_daemon *d)
{
	const struct mr_neigh_stats *ns = mr_neigh_stats(d->neigh);
	struct mr_shm_server_stats ss;

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

	mr_shm_server_get_stats(d->srv, &ss);
	mr_json_obj_begin(j, "shm");
	mr_json_u64(j, "sessions", mr_shm_server_nsessions(d->srv));
	mr_json_u64(j, "sessions_opened", ss.sessions_opened);
	mr_json_u64(j, "sessions_closed", ss.sessions_closed);
	mr_json_u64(j, "ctl_requests", ss.ctl_requests);
	mr_json_u64(j, "ctl_errors", ss.ctl_errors);
	mr_json_u64(j, "send_wrs", ss.send_wrs);
	mr_json_u64(j, "recv_wrs", ss.recv_wrs);
	mr_json_u64(j, "wr_rejected", ss.wr_rejected);
	mr_json_u64(j, "cqes", ss.cqes);
	mr_json_u64(j, "ring_corrupt", ss.ring_corrupt);
	mr_json_obj_end(j);
}

static void impair(struct mr_json *j, struct mr_daemon *d)
{
	static const char *const drop_names[MR_IMPAIR_NR_DROP] = {
		[MR_IMPAIR_DROP_RANDOM] = "random", [MR_IMPAIR_DROP_BURST] = "burst",
		[MR_IMPAIR_DROP_ENTROPY] = "entropy", [MR_IMPAIR_DROP_QFULL] = "queue_full",
	};
	unsigned int dir, k;

	mr_json_obj_begin(j, "impair");
	for (dir = 0; dir < MR_IMPAIR_NR_DIRS; dir++) {
		struct mr_impair_stats is = {0};
		uint64_t total = 0;

		mr_json_obj_begin(j, dir == MR_IMPAIR_RX ? "rx" : "tx");
		mr_json_bool(j, "enabled", d->imp[dir] != NULL);
		mr_json_str(j, "spec", d->imp[dir] != NULL ? d->cfg.impair_spec[dir] : NULL);
		if (d->imp[dir] != NULL)
			mr_impair_get_stats(d->imp[dir], (enum mr_impair_dir)dir, &is);
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
		mr_json_u64(j, "late", dir == MR_IMPAIR_RX ? d->st.imp_rx_late : d->st.imp_tx_late);
		mr_json_u64(j, "queued", d->imp[dir] != NULL ?
			    mr_impair_queued(d->imp[dir], (enum mr_impair_dir)dir) : 0);
		mr_json_obj_end(j);
	}
	mr_json_u64(j, "late_tx_nombuf", d->st.imp_tx_nombuf);
	mr_json_u64(j, "errors", d->st.imp_errors);
	mr_json_obj_end(j);
}

int mr_stats_json_write(struct mr_daemon *d, const char *path, bool final)
{
	char tmp[4096];
	struct mr_json j;
	FILE *f;
	int rc;

	if (d == NULL || path == NULL)
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
	port_engine(&j, d);
	transport(&j, d);
	neigh_shm(&j, d);
	impair(&j, d);
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
