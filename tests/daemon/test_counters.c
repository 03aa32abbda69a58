/* SPDX-License-Identifier: MIT
 * metaroced's counter catalogue (apps/metaroced/counters.c) against the names Linux rxe and
 * mlx5 users know: every rxe `rdma statistic` counter metaroce has an equivalent for, and the
 * mlx5 hw / ethtool counters of issue 11, exist under exactly that name and carry the value of
 * the metaroce field with that meaning. Names have no spaces and are unique per section.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "apps/metaroced/counters.h"

#define MAXN 256

struct rec {
	char name[MAXN][64];
	uint64_t v[MAXN];
	char kind[MAXN];
	unsigned int n;
};

static void rec_emit(void *arg, enum mr_cnt_kind kind, const char *name, uint64_t v)
{
	struct rec *r = arg;

	assert_true(r->n < MAXN);
	assert_true(strlen(name) < sizeof(r->name[0]));
	strcpy(r->name[r->n], name);
	r->v[r->n] = v;
	r->kind[r->n] = (char)kind;
	r->n++;
}

static const uint64_t *find(const struct rec *r, const char *name)
{
	unsigned int i;

	for (i = 0; i < r->n; i++)
		if (strcmp(r->name[i], name) == 0)
			return &r->v[i];
	return NULL;
}

static uint64_t val(const struct rec *r, const char *name)
{
	const uint64_t *v = find(r, name);

	if (v == NULL)
		fail_msg("counter '%s' missing", name);
	return *v;
}

static void names_clean(const struct rec *r)
{
	unsigned int i, j;

	for (i = 0; i < r->n; i++) {
		const char *p;

		assert_true(r->name[i][0] != '\0');
		for (p = r->name[i]; *p; p++)
			if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
				fail_msg("counter name '%s' is not [a-z0-9_]", r->name[i]);
		for (j = i + 1; j < r->n; j++)
			if (strcmp(r->name[i], r->name[j]) == 0)
				fail_msg("counter '%s' twice", r->name[i]);
	}
}

/* Every u64 of the struct gets a distinct value, so a wrong mapping shows. */
static void fill(void *p, size_t bytes)
{
	uint64_t *u = p;
	size_t i;

	for (i = 0; i < bytes / sizeof(uint64_t); i++)
		u[i] = 1000 + i * 7;
}

/* drivers/infiniband/sw/rxe/rxe_hw_counters.c: the rxe_counter_name[] list. */
static const char *const rxe_names[] = {
	"sent_pkts", "rcvd_pkts", "duplicate_request", "out_of_seq_request", "rcvd_rnr_err",
	"send_rnr_err", "rcvd_seq_err", "ack_deferred", "retry_exceeded_err",
	"retry_rnr_exceeded_err", "completer_retry_err", "send_err", "link_downed",
	"rdma_sends", "rdma_recvs",
};
/* rxe counters without a metaroce equivalent (docs/troubleshooting.md says why): the
 * completer is never "rescheduled" (one thread per ctx), there is no send_err path (a frame
 * the port refuses is counted as tx_drop_*), and link-down events are not counted. */
static const char *const rxe_absent[] = { "ack_deferred", "send_err", "link_downed" };

static bool absent(const char *n)
{
	size_t i;

	for (i = 0; i < sizeof(rxe_absent) / sizeof(rxe_absent[0]); i++)
		if (strcmp(n, rxe_absent[i]) == 0)
			return true;
	return false;
}

static void test_rxe_names(void **state)
{
	struct mr_qp_stats s;
	struct rec r = {0};
	struct mr_cnt_sink k = { rec_emit, &r };
	size_t i;

	(void)state;
	fill(&s, sizeof(s));
	mr_cnt_qp(&k, &s);
	names_clean(&r);
	for (i = 0; i < sizeof(rxe_names) / sizeof(rxe_names[0]); i++) {
		if (absent(rxe_names[i]))
			assert_null(find(&r, rxe_names[i]));
		else
			assert_non_null(find(&r, rxe_names[i]));
	}
	/* meanings (rxe: where each RXE_CNT_* is incremented) */
	assert_int_equal(val(&r, "sent_pkts"), s.tx_pkts);
	assert_int_equal(val(&r, "rcvd_pkts"), s.rx_pkts);
	assert_int_equal(val(&r, "duplicate_request"), s.duplicate_requests);
	assert_int_equal(val(&r, "out_of_seq_request"), s.out_of_sequence);
	assert_int_equal(val(&r, "rcvd_rnr_err"), s.rnr_naks_rcvd);
	assert_int_equal(val(&r, "send_rnr_err"), s.rnr_naks_sent);
	assert_int_equal(val(&r, "rcvd_seq_err"), s.seq_naks_rcvd);
	assert_int_equal(val(&r, "completer_retry_err"), s.retry_seqs);
	assert_int_equal(val(&r, "retry_exceeded_err"), s.retry_exceeded);
	assert_int_equal(val(&r, "retry_rnr_exceeded_err"), s.rnr_retry_exceeded);
	assert_int_equal(val(&r, "rdma_sends"), s.sends_completed);
	assert_int_equal(val(&r, "rdma_recvs"), s.recvs_completed);
	for (i = 0; i < r.n; i++)
		assert_int_equal(r.kind[i], MR_CNT_COUNTER);
}

static void test_mlx5_names(void **state)
{
	struct mr_qp_stats s;
	struct mr_engine_stats e;
	struct rec r = {0}, re = {0};
	struct mr_cnt_sink k = { rec_emit, &r }, ke = { rec_emit, &re };

	(void)state;
	fill(&s, sizeof(s));
	s.cnps_rcvd = s.cnps_handled + 5;
	mr_cnt_qp(&k, &s);
	/* mlx5 hw_counters (Understanding mlx5 Linux counters) */
	assert_int_equal(val(&r, "out_of_sequence"), s.out_of_sequence);
	assert_int_equal(val(&r, "packet_seq_err"), s.seq_naks_rcvd);
	assert_int_equal(val(&r, "rnr_nak_retry_err"), s.rnr_naks_rcvd);
	assert_int_equal(val(&r, "implied_nak_seq_err"), s.implied_naks);
	assert_int_equal(val(&r, "local_ack_timeout_err"), s.timeouts);
	assert_int_equal(val(&r, "out_of_buffer"), s.rnr_naks_sent);
	assert_int_equal(val(&r, "req_remote_access_errors"), s.rem_access_naks_rcvd);
	assert_int_equal(val(&r, "req_remote_invalid_request"), s.inv_req_naks_rcvd);
	assert_int_equal(val(&r, "resp_remote_access_errors"), s.rem_access_naks_sent);
	assert_int_equal(val(&r, "rx_write_requests"), s.rx_requests[MR_OPC_WRITE]);
	assert_int_equal(val(&r, "rx_read_requests"), s.rx_requests[MR_OPC_READ_REQ]);
	assert_int_equal(val(&r, "rx_atomic_requests"), s.rx_requests[MR_OPC_ATOMIC]);
	/* congestion counters: notification point (receiver) and reaction point (sender) */
	assert_int_equal(val(&r, "np_cnp_sent"), s.cnps_sent);
	assert_int_equal(val(&r, "np_ecn_marked_roce_packets"), s.ce_rcvd);
	assert_int_equal(val(&r, "rp_cnp_handled"), s.cnps_handled);
	assert_int_equal(val(&r, "rp_cnp_ignored"), 5);
	/* metaroce's own: retransmissions split, NAKs by syndrome, packets by opcode */
	assert_int_equal(val(&r, "retransmitted_pkts"), s.retransmits);
	assert_int_equal(val(&r, "retrans_selective_pkts"), s.sack_retransmits);
	assert_int_equal(val(&r, "nak_rcvd_psn_seq_err"), s.seq_naks_rcvd);
	assert_int_equal(val(&r, "nak_sent_rnr"), s.rnr_naks_sent);
	assert_int_equal(val(&r, "tx_write_pkts"), s.tx_op[MR_OPC_WRITE]);
	assert_int_equal(val(&r, "rx_cnp_pkts"), s.rx_op[MR_OPC_CNP]);
	assert_int_equal(val(&r, "sack_acks_rcvd"), s.sack_blocks_rcvd);

	/* ethtool -S (mlx5e): RoCE packets through the port each way */
	fill(&e, sizeof(e));
	mr_cnt_engine(&ke, &e);
	names_clean(&re);
	assert_int_equal(val(&re, "rx_vport_rdma_unicast_packets"), e.rx_roce);
	assert_int_equal(val(&re, "tx_vport_rdma_unicast_packets"), e.tx_roce);
	assert_int_equal(val(&re, "tx_drop_unreachable"), e.held_dropped);
}

static void test_gbn_not_negative(void **state)
{
	struct mr_qp_stats s;
	struct rec r = {0};
	struct mr_cnt_sink k = { rec_emit, &r };

	(void)state;
	memset(&s, 0, sizeof(s));
	s.retransmits = 10;
	s.sack_retransmits = 8;
	s.tlp_probes = 4; /* more than retransmits - sack: never wraps around */
	mr_cnt_qp(&k, &s);
	assert_int_equal(val(&r, "retrans_gbn_pkts"), 0);
	s.sack_retransmits = 0;
	s.tlp_probes = 0;
	r.n = 0;
	mr_cnt_qp(&k, &s);
	assert_int_equal(val(&r, "retrans_gbn_pkts"), 10); /* plain RC: all go-back-N */
}

static void test_parse_and_port_names(void **state)
{
	uint64_t d[MR_PARSE_NR_RESULTS];
	struct mr_dpdk_port_stats ps;
	struct mr_neigh_stats ns;
	struct mr_impair_stats is;
	struct rec r = {0};
	struct mr_cnt_sink k = { rec_emit, &r };
	unsigned int i;

	(void)state;
	for (i = 0; i < MR_PARSE_NR_RESULTS; i++)
		d[i] = 10 + i;
	assert_null(mr_cnt_parse_name(MR_PARSE_OK));
	assert_null(mr_cnt_parse_name(MR_PARSE_NR_RESULTS));
	mr_cnt_parse_drops(&k, d);
	assert_int_equal(val(&r, "rx_icrc_errors"), d[MR_PARSE_BAD_ICRC]);
	assert_int_equal(val(&r, "rx_malformed_truncated"), d[MR_PARSE_TRUNCATED]);
	{
		uint64_t m = 0;

		for (i = 2; i < MR_PARSE_NR_RESULTS; i++)
			m += d[i];
		assert_int_equal(val(&r, "rx_malformed"), m); /* not-RoCE frames are not malformed */
	}
	fill(&ps, sizeof(ps));
	mr_cnt_port(&k, &ps);
	assert_int_equal(val(&r, "rx_good_packets"), ps.ipackets);
	assert_int_equal(val(&r, "rx_missed_errors"), ps.imissed);
	fill(&ns, sizeof(ns));
	mr_cnt_neigh(&k, &ns);
	fill(&is, sizeof(is));
	mr_cnt_impair(&k, "tx", &is);
	assert_int_equal(val(&r, "impair_tx_ce_marked"), is.ce_marked);
	assert_int_equal(val(&r, "impair_tx_dropped"), is.dropped[0] + is.dropped[1] +
			 is.dropped[2] + is.dropped[3]);
	names_clean(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rxe_names),
		cmocka_unit_test(test_mlx5_names),
		cmocka_unit_test(test_gbn_not_negative),
		cmocka_unit_test(test_parse_and_port_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
