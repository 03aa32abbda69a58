/* SPDX-License-Identifier: MIT
 * metaroced statistics: port counters, engine counters, per-QP transport counters summed, parse
 * drops by reason, neighbour and shm server counters, impairment counters per direction. Printed on SIGUSR1, every --stats-every
 * seconds, and once at exit.
 */
#include <inttypes.h>
#include <stdio.h>

#include "daemon.h"
#include "backend.h"
#include "dpdk/dpdk_port.h"
#include "dpdk/neigh.h"
#include "impair/impair.h"
#include "pcap_file.h"
#include "shm/shm_server.h"
#include "transport/rc.h"

void mr_stats_print(struct mr_daemon *d, FILE *f, bool final)
{
	const char *tag = final ? "metaroced final" : "metaroced stats";
	const struct mr_engine_stats *e = &d->st;
	const struct mr_neigh_stats *ns = mr_neigh_stats(d->neigh);
	struct mr_dpdk_port_stats ps = {0};
	struct mr_shm_server_stats ss;
	struct mr_qp_stats q;
	struct mr_ctx_stats cs;
	unsigned int nqp, i;
	uint64_t drops = 0;

	mr_dpdk_port_stats_get(d->port, &ps);
	mr_shm_server_get_stats(d->srv, &ss);
	mr_ctx_get_stats(d->ctx, &cs);
	nqp = mr_backend_qp_stats_sum(d->be, &q);
	for (i = 1; i < MR_PARSE_NR_RESULTS; i++)
		drops += e->parse_drop[i];

	fprintf(f, "%s: port ipackets=%" PRIu64 " opackets=%" PRIu64 " ibytes=%" PRIu64
		" obytes=%" PRIu64 " imissed=%" PRIu64 " ierrors=%" PRIu64 " oerrors=%" PRIu64
		" rx_nombuf=%" PRIu64 " tx_buffer_drops=%" PRIu64 "\n", tag, ps.ipackets,
		ps.opackets, ps.ibytes, ps.obytes, ps.imissed, ps.ierrors, ps.oerrors,
		ps.rx_nombuf, ps.tx_buffer_drops);
	fprintf(f, "%s: engine iterations=%" PRIu64 " idle_sleeps=%" PRIu64 " rx=%" PRIu64
		" rx_roce=%" PRIu64 " rx_neigh=%" PRIu64 " rx_not_for_us=%" PRIu64
		" rx_own_echo=%" PRIu64 " rx_too_long=%" PRIu64 " parse_drops=%" PRIu64
		" tx=%" PRIu64 " tx_neigh=%" PRIu64 " tx_loopback=%" PRIu64 " tx_nombuf=%" PRIu64
		" tx_build_err=%" PRIu64 " held=%" PRIu64 " held_sent=%" PRIu64
		" held_dropped=%" PRIu64 " holding=%u timer_runs=%" PRIu64 " stalls=%" PRIu64
		" max_gap_us=%" PRIu64 " max_work_us=%" PRIu64 "\n", tag,
		e->iterations, e->idle_sleeps, e->rx_frames, e->rx_roce, e->rx_neigh,
		e->rx_not_for_us, e->rx_own_echo, e->rx_too_long, drops, e->tx_frames, e->tx_neigh,
		e->tx_loopback, e->tx_nombuf, e->tx_build_err, e->held, e->held_sent,
		e->held_dropped, d->nheld, e->timer_runs, e->stalls, e->max_gap_ns / 1000,
		e->max_work_ns / 1000);
	fprintf(f, "%s: parse_drops", tag);
	for (i = 1; i < MR_PARSE_NR_RESULTS; i++)
		if (e->parse_drop[i] > 0)
			fprintf(f, " [%s]=%" PRIu64, mr_parse_result_str((enum mr_parse_result)i),
				e->parse_drop[i]);
	fprintf(f, "\n");
	fprintf(f, "%s: qps=%u tx_pkts=%" PRIu64 " rx_pkts=%" PRIu64 " tx_bytes=%" PRIu64
		" rx_bytes=%" PRIu64 " retransmits=%" PRIu64 " timeouts=%" PRIu64
		" seq_naks_sent=%" PRIu64 " seq_naks_rcvd=%" PRIu64 " rnr_naks_sent=%" PRIu64
		" rnr_naks_rcvd=%" PRIu64 " duplicate_requests=%" PRIu64
		" out_of_sequence=%" PRIu64 " acks_sent=%" PRIu64 " acks_rcvd=%" PRIu64
		" dropped=%" PRIu64 " ctx_rx_unknown_qp=%" PRIu64 " ctx_rx_dropped=%" PRIu64 "\n",
		tag, nqp, q.tx_pkts, q.rx_pkts, q.tx_bytes, q.rx_bytes, q.retransmits, q.timeouts,
		q.seq_naks_sent, q.seq_naks_rcvd, q.rnr_naks_sent, q.rnr_naks_rcvd,
		q.duplicate_requests, q.out_of_sequence, q.acks_sent, q.acks_rcvd, q.dropped,
		cs.rx_unknown_qp, cs.rx_dropped);
	fprintf(f, "%s: neigh arp_rx=%" PRIu64 " arp_answered=%" PRIu64 " arp_replies_rx=%" PRIu64
		" nd_rx=%" PRIu64 " ns_answered=%" PRIu64 " solicits_tx=%" PRIu64
		" resolved=%" PRIu64 " unresolved_lookups=%" PRIu64 " unreachable=%" PRIu64
		" malformed=%" PRIu64 "\n", tag, ns->arp_rx, ns->arp_requests_answered,
		ns->arp_replies_rx, ns->nd_rx, ns->ns_answered, ns->solicits_tx, ns->resolved,
		ns->unresolved_lookups, ns->unreachable, ns->arp_malformed + ns->nd_malformed);
	fprintf(f, "%s: shm sessions=%u opened=%" PRIu64 " closed=%" PRIu64 " ctl=%" PRIu64
		" ctl_errors=%" PRIu64 " send_wrs=%" PRIu64 " recv_wrs=%" PRIu64
		" wr_rejected=%" PRIu64 " cqes=%" PRIu64 " ring_corrupt=%" PRIu64 " pcap_dropped=%"
		PRIu64 "\n", tag, mr_shm_server_nsessions(d->srv), ss.sessions_opened,
		ss.sessions_closed, ss.ctl_requests, ss.ctl_errors, ss.send_wrs, ss.recv_wrs,
		ss.wr_rejected, ss.cqes, ss.ring_corrupt,
		d->pcap != NULL ? mr_pcap_writer_dropped(d->pcap) : 0);
	for (i = 0; i < MR_IMPAIR_NR_DIRS; i++) {
		struct mr_impair_stats is;

		if (d->imp[i] == NULL)
			continue;
		mr_impair_get_stats(d->imp[i], (enum mr_impair_dir)i, &is);
		fprintf(f, "%s: impair_%s frames=%" PRIu64 " delivered=%" PRIu64
			" dropped_random=%" PRIu64 " dropped_burst=%" PRIu64
			" dropped_entropy=%" PRIu64 " dropped_qfull=%" PRIu64 " delayed=%" PRIu64
			" reordered=%" PRIu64 " duplicated=%" PRIu64 " corrupted=%" PRIu64
			" ce_marked=%" PRIu64 " late=%" PRIu64 " queued=%zu\n", tag,
			i == MR_IMPAIR_RX ? "rx" : "tx", is.frames, is.delivered,
			is.dropped[MR_IMPAIR_DROP_RANDOM], is.dropped[MR_IMPAIR_DROP_BURST],
			is.dropped[MR_IMPAIR_DROP_ENTROPY], is.dropped[MR_IMPAIR_DROP_QFULL],
			is.delayed, is.reordered, is.duplicated, is.corrupted, is.ce_marked,
			i == MR_IMPAIR_RX ? e->imp_rx_late : e->imp_tx_late,
			mr_impair_queued(d->imp[i], (enum mr_impair_dir)i));
	}
	fflush(f);
}
