/* SPDX-License-Identifier: MIT
 * metaroced's counter catalogue (counters.h). Meanings follow the sources of the names:
 * rxe: rxe_hw_counters.c and where rxe increments each; mlx5: the ConnectX "Understanding mlx5
 * Linux counters" descriptions. Where metaroce counts a thing rxe and mlx5 both count, both
 * names are shown (e.g. out_of_seq_request and out_of_sequence).
 */
#include <stddef.h>
#include <stdio.h>

#include "counters.h"

static void c(const struct mr_cnt_sink *k, const char *name, uint64_t v)
{
	k->emit(k->arg, MR_CNT_COUNTER, name, v);
}

static uint64_t sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static const char *const op_class_names[MR_OPC_NR] = {
	[MR_OPC_SEND] = "send", [MR_OPC_WRITE] = "write", [MR_OPC_READ_REQ] = "read_req",
	[MR_OPC_READ_RESP] = "read_resp", [MR_OPC_ATOMIC] = "atomic",
	[MR_OPC_ATOMIC_ACK] = "atomic_ack", [MR_OPC_ACK] = "ack", [MR_OPC_CNP] = "cnp",
};

void mr_cnt_qp(const struct mr_cnt_sink *k, const struct mr_qp_stats *s)
{
	char name[48];
	unsigned int i;

	/* rxe (rdma statistic show): every RoCE packet of the QP(s), ACKs and CNPs included */
	c(k, "sent_pkts", s->tx_pkts);
	c(k, "rcvd_pkts", s->rx_pkts);
	c(k, "duplicate_request", s->duplicate_requests);     /* responder: PSN < ePSN */
	c(k, "out_of_seq_request", s->out_of_sequence);       /* responder: PSN > ePSN */
	c(k, "rcvd_rnr_err", s->rnr_naks_rcvd);              /* requester got an RNR NAK */
	c(k, "send_rnr_err", s->rnr_naks_sent);              /* responder sent an RNR NAK */
	c(k, "rcvd_seq_err", s->seq_naks_rcvd);              /* requester got a PSN-sequence NAK */
	c(k, "completer_retry_err", s->retry_seqs);          /* retry sequences started */
	c(k, "retry_exceeded_err", s->retry_exceeded);
	c(k, "retry_rnr_exceeded_err", s->rnr_retry_exceeded);
	c(k, "rdma_sends", s->sends_completed);              /* SEND WRs completed */
	c(k, "rdma_recvs", s->recvs_completed);              /* receive WQEs completed */
	/* mlx5 (hw_counters / rdma statistic) */
	c(k, "out_of_sequence", s->out_of_sequence);
	c(k, "packet_seq_err", s->seq_naks_rcvd);
	c(k, "rnr_nak_retry_err", s->rnr_naks_rcvd);
	c(k, "implied_nak_seq_err", s->implied_naks);
	c(k, "local_ack_timeout_err", s->timeouts);
	c(k, "out_of_buffer", s->rnr_naks_sent);             /* no receive WQE: RNR NAK sent */
	c(k, "req_remote_access_errors", s->rem_access_naks_rcvd);
	c(k, "req_remote_invalid_request", s->inv_req_naks_rcvd);
	c(k, "resp_remote_access_errors", s->rem_access_naks_sent);
	c(k, "rx_write_requests", s->rx_requests[MR_OPC_WRITE]);
	c(k, "rx_read_requests", s->rx_requests[MR_OPC_READ_REQ]);
	c(k, "rx_atomic_requests", s->rx_requests[MR_OPC_ATOMIC]);
	c(k, "np_cnp_sent", s->cnps_sent);
	c(k, "np_ecn_marked_roce_packets", s->ce_rcvd);
	c(k, "rp_cnp_handled", s->cnps_handled);
	c(k, "rp_cnp_ignored", sub0(s->cnps_rcvd, s->cnps_handled)); /* QP without a controller */
	/* metaroce */
	c(k, "rx_send_requests", s->rx_requests[MR_OPC_SEND]);
	c(k, "sent_payload_bytes", s->tx_bytes);
	c(k, "rcvd_payload_bytes", s->rx_bytes);
	for (i = 0; i < MR_OPC_NR; i++) {
		snprintf(name, sizeof(name), "tx_%s_pkts", op_class_names[i]);
		c(k, name, s->tx_op[i]);
		snprintf(name, sizeof(name), "rx_%s_pkts", op_class_names[i]);
		c(k, name, s->rx_op[i]);
	}
	c(k, "acks_sent", s->acks_sent);
	c(k, "acks_rcvd", s->acks_rcvd);
	/* NAKs by AETH syndrome (IBA 9.7.5.2, table 42) */
	c(k, "nak_sent_psn_seq_err", s->seq_naks_sent);
	c(k, "nak_sent_rnr", s->rnr_naks_sent);
	c(k, "nak_sent_invalid_request", s->inv_req_naks_sent);
	c(k, "nak_sent_remote_access_err", s->rem_access_naks_sent);
	c(k, "nak_rcvd_psn_seq_err", s->seq_naks_rcvd);
	c(k, "nak_rcvd_rnr", s->rnr_naks_rcvd);
	c(k, "nak_rcvd_invalid_request", s->inv_req_naks_rcvd);
	c(k, "nak_rcvd_remote_access_err", s->rem_access_naks_rcvd);
	/* Retransmissions: every resent request packet; the selective (SACK/RACK) ones and TLP
	 * probes of MetaRoCE; the rest went back N (plain RC, or a MetaRoCE RTO). */
	c(k, "retransmitted_pkts", s->retransmits);
	c(k, "retrans_selective_pkts", s->sack_retransmits);
	c(k, "retrans_gbn_pkts", sub0(s->retransmits, s->sack_retransmits + s->tlp_probes));
	c(k, "retrans_spurious_pkts", s->spurious_retransmits);
	c(k, "tlp_probes", s->tlp_probes);
	c(k, "sack_acks_rcvd", s->sack_blocks_rcvd);
	c(k, "ooo_placed_pkts", s->ooo_placed);
	c(k, "cnps_rcvd", s->cnps_rcvd);
	c(k, "rx_drop_transport", s->dropped); /* bad state, stale, ghost ACK, ... */
}

void mr_cnt_ctx(const struct mr_cnt_sink *k, const struct mr_ctx_stats *s)
{
	c(k, "rx_drop_unknown_qp", s->rx_unknown_qp);
	c(k, "rx_drop_bad_opcode", s->rx_dropped);
	c(k, "rx_drop_bad_pkey", s->rx_bad_pkey);
	c(k, "rx_drop_bad_source", s->rx_bad_source);
	c(k, "acks_sent_after_destroy", s->parting_acks); /* owed by a QP destroyed first */
	c(k, "acks_lost_to_destroy", s->parting_dropped);
}

static const char *const parse_names[MR_PARSE_NR_RESULTS] = {
	[MR_PARSE_NOT_ROCE] = "rx_not_roce",
	[MR_PARSE_TRUNCATED] = "rx_malformed_truncated",
	[MR_PARSE_BAD_IP] = "rx_malformed_bad_ip",
	[MR_PARSE_BAD_IP_CSUM] = "rx_malformed_bad_ip_csum",
	[MR_PARSE_BAD_IP_LEN] = "rx_malformed_bad_ip_len",
	[MR_PARSE_BAD_UDP_LEN] = "rx_malformed_bad_udp_len",
	[MR_PARSE_BAD_UDP_CSUM] = "rx_malformed_bad_udp_csum",
	[MR_PARSE_BAD_VERSION] = "rx_malformed_bad_version",
	[MR_PARSE_UNKNOWN_OPCODE] = "rx_malformed_unknown_opcode",
	[MR_PARSE_BAD_PAD] = "rx_malformed_bad_pad",
	[MR_PARSE_BAD_LENGTH] = "rx_malformed_bad_length",
	[MR_PARSE_BAD_ICRC] = "rx_icrc_errors",
};

const char *mr_cnt_parse_name(enum mr_parse_result r)
{
	return (unsigned int)r < MR_PARSE_NR_RESULTS ? parse_names[r] : NULL;
}

void mr_cnt_parse_drops(const struct mr_cnt_sink *k, const uint64_t drops[MR_PARSE_NR_RESULTS])
{
	uint64_t malformed = 0;
	unsigned int i;

	for (i = 1; i < MR_PARSE_NR_RESULTS; i++) {
		c(k, parse_names[i], drops[i]);
		if (i != MR_PARSE_NOT_ROCE)
			malformed += drops[i];
	}
	c(k, "rx_malformed", malformed);
}

void mr_cnt_port(const struct mr_cnt_sink *k, const struct mr_dpdk_port_stats *ps)
{
	c(k, "rx_good_packets", ps->ipackets);
	c(k, "tx_good_packets", ps->opackets);
	c(k, "rx_good_bytes", ps->ibytes);
	c(k, "tx_good_bytes", ps->obytes);
	c(k, "rx_missed_errors", ps->imissed);
	c(k, "rx_errors", ps->ierrors);
	c(k, "tx_errors", ps->oerrors);
	c(k, "rx_mbuf_allocation_errors", ps->rx_nombuf);
	c(k, "tx_drop_buffer", ps->tx_buffer_drops);
	c(k, "tx_drop_mbuf_alloc", ps->mbuf_alloc_fail);
	c(k, "tx_memif_warm", ps->tx_warm);
	c(k, "tx_memif_warm_slips", ps->tx_warm_slips);
}

void mr_cnt_neigh(const struct mr_cnt_sink *k, const struct mr_neigh_stats *ns)
{
	c(k, "arp_rx", ns->arp_rx);
	c(k, "arp_requests_answered", ns->arp_requests_answered);
	c(k, "arp_replies_rx", ns->arp_replies_rx);
	c(k, "nd_rx", ns->nd_rx);
	c(k, "nd_solicits_answered", ns->ns_answered);
	c(k, "neigh_solicits_tx", ns->solicits_tx);
	c(k, "neigh_resolved", ns->resolved);
	c(k, "neigh_unresolved_lookups", ns->unresolved_lookups);
	c(k, "neigh_unreachable", ns->unreachable);
	c(k, "rx_drop_neigh_malformed", ns->arp_malformed + ns->nd_malformed + ns->nd_bad_csum);
	c(k, "neigh_addr_conflicts", ns->addr_conflicts);
}

void mr_cnt_impair(const struct mr_cnt_sink *k, const char *dir, const struct mr_impair_stats *s)
{
	static const char *const drop_names[MR_IMPAIR_NR_DROP] = {
		[MR_IMPAIR_DROP_RANDOM] = "random", [MR_IMPAIR_DROP_BURST] = "burst",
		[MR_IMPAIR_DROP_ENTROPY] = "entropy", [MR_IMPAIR_DROP_QFULL] = "queue_full",
	};
	char name[64];
	uint64_t total = 0;
	unsigned int i;

#define IMP(field) do { \
		snprintf(name, sizeof(name), "impair_%s_%s", dir, #field); \
		c(k, name, s->field); \
	} while (0)
	IMP(frames);
	IMP(delivered);
	for (i = 0; i < MR_IMPAIR_NR_DROP; i++) {
		snprintf(name, sizeof(name), "impair_%s_dropped_%s", dir, drop_names[i]);
		c(k, name, s->dropped[i]);
		total += s->dropped[i];
	}
	snprintf(name, sizeof(name), "impair_%s_dropped", dir);
	c(k, name, total);
	IMP(delayed);
	IMP(reordered);
	IMP(duplicated);
	IMP(corrupted);
	IMP(ce_marked);
	IMP(ce_not_ect);
#undef IMP
}

/* Engine (per shard or summed): the mlx5 vport RDMA packet counters of `ethtool -S`, and
 * drops by reason outside the transport. */
void mr_cnt_engine(const struct mr_cnt_sink *k, const struct mr_engine_stats *e)
{
	c(k, "rx_vport_rdma_unicast_packets", e->rx_roce);
	c(k, "tx_vport_rdma_unicast_packets", e->tx_roce);
	c(k, "rx_frames", e->rx_frames);
	c(k, "rx_bytes", e->rx_bytes);
	c(k, "tx_frames", e->tx_frames);
	c(k, "tx_bytes", e->tx_bytes);
	c(k, "rx_neigh_frames", e->rx_neigh);
	c(k, "tx_neigh_frames", e->tx_neigh);
	c(k, "tx_loopback_frames", e->tx_loopback);
	c(k, "tx_ip_csum_offload_frames", e->tx_csum_offload);
	/* drops by reason (the transport's own are in rx_drop_transport / rx_drop_*) */
	c(k, "rx_drop_not_for_us", e->rx_not_for_us);
	c(k, "rx_drop_own_echo", e->rx_own_echo);
	c(k, "rx_drop_too_long", e->rx_too_long);
	c(k, "tx_drop_nombuf", e->tx_nombuf);
	c(k, "tx_drop_build_err", e->tx_build_err);
	c(k, "tx_drop_unreachable", e->held_dropped);
	c(k, "drop_ring_full", e->ring_full);
	c(k, "tx_backpressure", e->tx_backpressure);
	c(k, "tx_held_for_arp", e->held);
	c(k, "engine_iterations", e->iterations);
	c(k, "engine_idle_sleeps", e->idle_sleeps);
	c(k, "engine_idle_yields", e->idle_yields);
	c(k, "engine_load_sleeps", e->load_sleeps);
	c(k, "engine_clock_resyncs", e->clock_resyncs);
	c(k, "engine_stalls", e->stalls);
	k->emit(k->arg, MR_CNT_GAUGE, "engine_max_gap_ns", e->max_gap_ns);
	k->emit(k->arg, MR_CNT_GAUGE, "engine_max_work_ns", e->max_work_ns);
}
