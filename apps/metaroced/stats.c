/* SPDX-License-Identifier: MIT
 * metaroced statistics: port counters, engine counters, per-QP transport counters summed, parse
 * drops by reason, neighbour and shm server counters, impairment counters per direction; with
 * several engine shards, one line per shard first. Printed on SIGUSR1, every --stats-every
 * seconds, and once at exit, always from per-shard snapshots (struct mr_shard_snap) that each
 * shard took of its own single-threaded objects.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_mempool.h>

#include "daemon.h"
#include "backend.h"
#include "dpdk/dpdk_port.h"
#include "dpdk/neigh.h"
#include "impair/impair.h"
#include "wire/pcap_file.h"
#include "shm/shm_server.h"
#include "transport/rc.h"

/* The counter structs summed here are plain arrays of uint64_t. */
_Static_assert(sizeof(struct mr_qp_stats) % sizeof(uint64_t) == 0, "mr_qp_stats layout");
_Static_assert(sizeof(struct mr_ctx_stats) % sizeof(uint64_t) == 0, "mr_ctx_stats layout");
_Static_assert(sizeof(struct mr_shm_server_stats) % sizeof(uint64_t) == 0, "shm stats layout");
_Static_assert(sizeof(struct mr_engine_stats) % sizeof(uint64_t) == 0, "engine stats layout");

static void add_u64s(void *dst, const void *src, size_t bytes)
{
	size_t i;

	for (i = 0; i < bytes; i += sizeof(uint64_t)) {
		uint64_t a, b;

		memcpy(&a, (uint8_t *)dst + i, sizeof(a));
		memcpy(&b, (const uint8_t *)src + i, sizeof(b));
		a += b;
		memcpy((uint8_t *)dst + i, &a, sizeof(a));
	}
}

static void snap_qp(void *arg, const struct mr_qp *qp)
{
	struct mr_daemon *d = arg;
	struct mr_qp_snap *q;

	if (d->snap.qps == NULL || d->snap.nqps >= d->cfg.max_qp)
		return;
	q = &d->snap.qps[d->snap.nqps];
	if (mr_qp_get_stats(qp, &q->s) < 0)
		return;
	q->qpn = mr_qp_num(qp);
	q->state = mr_qp_state(qp);
	{
		struct mr_qp_attr a;

		memset(&a, 0, sizeof(a));
		if (mr_qp_query(qp, &a) == 0) {
			q->dest_qpn = a.dest_qp_num;
			q->path_mtu = a.path_mtu;
			q->transport = (uint8_t)a.transport;
			q->cc = (uint8_t)a.cc;
			q->n_entropies = a.n_entropies;
		}
		if (mr_qp_get_cc_state(qp, &q->cc_on, &q->cc_rate_bps, &q->cc_rate_min_bps,
				       &q->cc_cwnd_bytes) < 0)
			q->cc_on = false;
	}
	d->snap.nqps++;
}

void mr_shard_snapshot(struct mr_daemon *d)
{
	struct mr_shard_snap *sn = &d->snap;
	unsigned int i;

	sn->st = d->st;
	sn->nheld = d->nheld;
	sn->nqp = mr_backend_qp_stats_sum(d->be, &sn->qsum);
	sn->qps_created = mr_backend_qps_created(d->be);
	sn->policy_upgrades = mr_backend_policy_upgrades(d->be);
	mr_ctx_get_stats(d->ctx, &sn->cs);
	mr_ctx_get_counts(d->ctx, &sn->cnt);
	sn->txpool_in_use = d->shard_id == 0 && d->txpool != NULL ?
			    rte_mempool_in_use_count(d->txpool) : 0;
	mr_shm_server_get_stats(d->srv, &sn->ss);
	sn->nsessions = mr_shm_server_nsessions(d->srv);
	sn->nqps = 0;
	mr_backend_qp_foreach(d->be, snap_qp, d);
	if (d->shard_id != 0)
		return;
	memset(&sn->ps, 0, sizeof(sn->ps));
	mr_dpdk_port_stats_get(d->port, &sn->ps);
	sn->ns = *mr_neigh_stats(d->neigh);
	for (i = 0; i < MR_IMPAIR_NR_DIRS; i++) {
		sn->imp_on[i] = d->imp[i] != NULL;
		memset(&sn->is[i], 0, sizeof(sn->is[i]));
		sn->imp_queued[i] = 0;
		if (d->imp[i] == NULL)
			continue;
		mr_impair_get_stats(d->imp[i], (enum mr_impair_dir)i, &sn->is[i]);
		sn->imp_queued[i] = mr_impair_queued(d->imp[i], (enum mr_impair_dir)i);
	}
	sn->pcap_dropped = d->pcap != NULL ? mr_pcap_writer_dropped(d->pcap) : 0;
	memset(&sn->link, 0, sizeof(sn->link));
	mr_dpdk_port_link(d->port, 0, &sn->link);
	/* The state is the one apps get from query_port (the engine follows the link every
	 * 100 ms): `mrstat link` saying ACTIVE while ibv_devinfo says DOWN would mislead. */
	sn->link.up = mr_backend_port_up(d->be);
}

void mr_stats_view_build(struct mr_stats_view *v, struct mr_daemon *const *shards,
			 unsigned int n)
{
	unsigned int i;

	memset(v, 0, sizeof(*v));
	v->shards = shards;
	v->n = n;
	for (i = 0; i < n; i++) {
		const struct mr_shard_snap *sn = &shards[i]->snap;

		add_u64s(&v->st, &sn->st, sizeof(v->st));
		add_u64s(&v->qsum, &sn->qsum, sizeof(v->qsum));
		add_u64s(&v->cs, &sn->cs, sizeof(v->cs));
		add_u64s(&v->ss, &sn->ss, sizeof(v->ss));
		v->nheld += sn->nheld;
		v->nqp += sn->nqp;
		v->policy_upgrades += sn->policy_upgrades;
		v->nsessions += sn->nsessions;
	}
	/* Gaps and work times are per loop: the worst shard, not a sum. */
	v->st.max_gap_ns = v->st.max_work_ns = 0;
	for (i = 0; i < n; i++) {
		const struct mr_engine_stats *e = &shards[i]->snap.st;

		if (e->max_gap_ns > v->st.max_gap_ns)
			v->st.max_gap_ns = e->max_gap_ns;
		if (e->max_work_ns > v->st.max_work_ns)
			v->st.max_work_ns = e->max_work_ns;
	}
}

/* The dump reaches f in one write(2): a reader of the log (a script waiting for the
 * dump's last line after SIGUSR1, tests/integration/lib.sh) never sees half of it. stdout to a
 * file is fully buffered, and a dump longer than the buffer used to be written in two parts,
 * splitting whatever line straddled them. */
void mr_stats_print_whole(const struct mr_stats_view *v, FILE *f, bool final)
{
	char *buf = NULL;
	size_t len = 0, off = 0;
	FILE *m = open_memstream(&buf, &len);

	if (m == NULL) {
		mr_stats_print(v, f, final);
		return;
	}
	mr_stats_print(v, m, final);
	fclose(m);
	fflush(f);
	while (off < len) {
		ssize_t w = write(fileno(f), buf + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	free(buf);
}

void mr_stats_dump_local(struct mr_daemon *const *shards, unsigned int n, bool final, bool json)
{
	struct mr_stats_view v;
	unsigned int i;
	int rc;

	for (i = 0; i < n; i++)
		mr_shard_snapshot(shards[i]);
	mr_stats_view_build(&v, shards, n);
	mr_stats_print_whole(&v, stdout, final);
	if (json && shards[0]->stats_json != NULL &&
	    (rc = mr_stats_json_write(&v, shards[0]->stats_json, final)) < 0)
		fprintf(stderr, "metaroced: stats json %s: %s\n", shards[0]->stats_json,
			strerror(-rc));
}

void mr_stats_print(const struct mr_stats_view *v, FILE *f, bool final)
{
	const char *tag = final ? "metaroced final" : "metaroced stats";
	const struct mr_shard_snap *io = &v->shards[0]->snap;
	const struct mr_engine_stats *e = &v->st;
	const struct mr_neigh_stats *ns = &io->ns;
	const struct mr_dpdk_port_stats ps = io->ps;
	const struct mr_shm_server_stats ss = v->ss;
	const struct mr_qp_stats q = v->qsum;
	const struct mr_ctx_stats cs = v->cs;
	unsigned int nqp = v->nqp, i;
	uint64_t drops = 0;

	/* Per-shard lines come first: scripts take the last lines of a dump (lib.sh). */
	for (i = 0; v->n > 1 && i < v->n; i++) {
		const struct mr_daemon *d = v->shards[i];
		const struct mr_shard_snap *sn = &d->snap;

		fprintf(f, "%s: shard %u lcore=%u qps=%u sessions=%u rx_roce=%" PRIu64
			" tx_roce=%" PRIu64 " dispatched=%" PRIu64 " ring_rx=%" PRIu64
			" ring_tx=%" PRIu64 " ring_full=%" PRIu64 " iterations=%" PRIu64
			" idle_sleeps=%" PRIu64 " load_sleeps=%" PRIu64 " stalls=%" PRIu64 "\n", tag,
			d->shard_id, d->lcore, sn->nqp, sn->nsessions, sn->st.rx_roce, sn->st.tx_roce,
			sn->st.rx_dispatched, sn->st.ring_rx, sn->st.ring_tx, sn->st.ring_full,
			sn->st.iterations, sn->st.idle_sleeps, sn->st.load_sleeps, sn->st.stalls);
	}
	for (i = 1; i < MR_PARSE_NR_RESULTS; i++)
		drops += e->parse_drop[i];

	fprintf(f, "%s: port ipackets=%" PRIu64 " opackets=%" PRIu64 " ibytes=%" PRIu64
		" obytes=%" PRIu64 " imissed=%" PRIu64 " ierrors=%" PRIu64 " oerrors=%" PRIu64
		" rx_nombuf=%" PRIu64 " tx_buffer_drops=%" PRIu64 " tx_warm=%" PRIu64
		" tx_warm_slips=%" PRIu64 "\n", tag, ps.ipackets,
		ps.opackets, ps.ibytes, ps.obytes, ps.imissed, ps.ierrors, ps.oerrors,
		ps.rx_nombuf, ps.tx_buffer_drops, ps.tx_warm, ps.tx_warm_slips);
	fprintf(f, "%s: engine iterations=%" PRIu64 " idle_sleeps=%" PRIu64 " load_sleeps=%" PRIu64
		" rx=%" PRIu64
		" rx_roce=%" PRIu64 " rx_neigh=%" PRIu64 " rx_not_for_us=%" PRIu64
		" rx_own_echo=%" PRIu64 " rx_too_long=%" PRIu64 " parse_drops=%" PRIu64
		" tx=%" PRIu64 " tx_neigh=%" PRIu64 " tx_loopback=%" PRIu64 " tx_nombuf=%" PRIu64
		" tx_build_err=%" PRIu64 " tx_csum_offload=%" PRIu64 " held=%" PRIu64
		" held_sent=%" PRIu64
		" held_dropped=%" PRIu64 " holding=%u timer_runs=%" PRIu64 " stalls=%" PRIu64
		" max_gap_us=%" PRIu64 " max_work_us=%" PRIu64 "\n", tag,
		e->iterations, e->idle_sleeps, e->load_sleeps, e->rx_frames, e->rx_roce, e->rx_neigh,
		e->rx_not_for_us, e->rx_own_echo, e->rx_too_long, drops, e->tx_frames, e->tx_neigh,
		e->tx_loopback, e->tx_nombuf, e->tx_build_err, e->tx_csum_offload, e->held,
		e->held_sent,
		e->held_dropped, v->nheld, e->timer_runs, e->stalls, e->max_gap_ns / 1000,
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
		" dropped=%" PRIu64 " ctx_rx_unknown_qp=%" PRIu64 " ctx_rx_dropped=%" PRIu64
		" ctx_rx_bad_pkey=%" PRIu64 " ctx_rx_bad_source=%" PRIu64 " sack_retransmits=%" PRIu64
		" ce_rcvd=%" PRIu64 " cnps_sent=%" PRIu64 " cnps_rcvd=%" PRIu64
		" cnps_handled=%" PRIu64 " metaroce_by_policy=%" PRIu64 "\n",
		tag, nqp, q.tx_pkts, q.rx_pkts, q.tx_bytes, q.rx_bytes, q.retransmits, q.timeouts,
		q.seq_naks_sent, q.seq_naks_rcvd, q.rnr_naks_sent, q.rnr_naks_rcvd,
		q.duplicate_requests, q.out_of_sequence, q.acks_sent, q.acks_rcvd, q.dropped,
		cs.rx_unknown_qp, cs.rx_dropped, cs.rx_bad_pkey, cs.rx_bad_source, q.sack_retransmits,
		q.ce_rcvd, q.cnps_sent, q.cnps_rcvd, q.cnps_handled, v->policy_upgrades);
	fprintf(f, "%s: neigh arp_rx=%" PRIu64 " arp_answered=%" PRIu64 " arp_replies_rx=%" PRIu64
		" nd_rx=%" PRIu64 " ns_answered=%" PRIu64 " solicits_tx=%" PRIu64
		" resolved=%" PRIu64 " unresolved_lookups=%" PRIu64 " unreachable=%" PRIu64
		" malformed=%" PRIu64 "\n", tag, ns->arp_rx, ns->arp_requests_answered,
		ns->arp_replies_rx, ns->nd_rx, ns->ns_answered, ns->solicits_tx, ns->resolved,
		ns->unresolved_lookups, ns->unreachable, ns->arp_malformed + ns->nd_malformed);
	fprintf(f, "%s: shm sessions=%u opened=%" PRIu64 " closed=%" PRIu64 " ctl=%" PRIu64
		" ctl_errors=%" PRIu64 " send_wrs=%" PRIu64 " recv_wrs=%" PRIu64
		" wr_rejected=%" PRIu64 " cqes=%" PRIu64 " ring_corrupt=%" PRIu64 " pcap_dropped=%"
		PRIu64 " db_pends=%" PRIu64 " db_barriers=%" PRIu64 " db_barrier_fails=%" PRIu64
		"\n", tag, v->nsessions, ss.sessions_opened,
		ss.sessions_closed, ss.ctl_requests, ss.ctl_errors, ss.send_wrs, ss.recv_wrs,
		ss.wr_rejected, ss.cqes, ss.ring_corrupt, io->pcap_dropped, ss.db_pends,
		ss.db_barriers, ss.db_barrier_fails);
	for (i = 0; i < MR_IMPAIR_NR_DIRS; i++) {
		const struct mr_impair_stats is = io->is[i];

		if (!io->imp_on[i])
			continue;
		fprintf(f, "%s: impair_%s frames=%" PRIu64 " delivered=%" PRIu64
			" dropped_random=%" PRIu64 " dropped_burst=%" PRIu64
			" dropped_entropy=%" PRIu64 " dropped_qfull=%" PRIu64 " delayed=%" PRIu64
			" reordered=%" PRIu64 " duplicated=%" PRIu64 " corrupted=%" PRIu64
			" ce_marked=%" PRIu64 " late=%" PRIu64 " queued=%zu\n", tag,
			i == MR_IMPAIR_RX ? "rx" : "tx", is.frames, is.delivered,
			is.dropped[MR_IMPAIR_DROP_RANDOM], is.dropped[MR_IMPAIR_DROP_BURST],
			is.dropped[MR_IMPAIR_DROP_ENTROPY], is.dropped[MR_IMPAIR_DROP_QFULL],
			is.delayed, is.reordered, is.duplicated, is.corrupted, is.ce_marked,
			i == MR_IMPAIR_RX ? e->imp_rx_late : e->imp_tx_late, io->imp_queued[i]);
	}
	fflush(f);
}
