/* SPDX-License-Identifier: MIT
 * RC scenarios through the simulator: real RoCE v2 frames (built, ICRC-checked and parsed) between
 * two mr_ctx over seeded impaired links. Every transferred byte is compared with the seeded source
 * pattern (sim_xfer.c); guard bytes between messages must stay untouched.
 *
 * Usage: test_sim_rc GROUP, GROUP one of: ops loss big impair errors mask (one meson test each, so
 * they run in parallel and each stays well under its timeout).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim/sim.h"
#include "sim/sim_qp.h"
#include "sim/sim_xfer.h"

enum loss_kind { LOSS_NONE, LOSS_RANDOM, LOSS_BURST };

struct scen {
	char name[96];
	enum mr_wr_opcode op;
	uint64_t size;
	uint32_t count, depth, nqp, mtu;
	enum loss_kind loss_kind;
	double loss;          /* random rate, or overall rate of the burst model */
	double reorder, dup, corrupt;
	uint64_t recv_delay_ns;
	bool report;          /* print the go-back-N counters */
};

#define MAX_SCEN 256
static struct scen scens[MAX_SCEN];
static struct CMUnitTest tests[MAX_SCEN];
static unsigned int nscen;

static bool is_atomic(enum mr_wr_opcode op)
{
	return op == MR_WR_ATOMIC_CMP_AND_SWP || op == MR_WR_ATOMIC_FETCH_AND_ADD;
}

static bool needs_recv(enum mr_wr_opcode op)
{
	return op == MR_WR_SEND || op == MR_WR_SEND_WITH_IMM || op == MR_WR_RDMA_WRITE_WITH_IMM;
}

static uint64_t link_drops(const struct mr_sim_link_stats *st)
{
	uint64_t n = 0;

	for (int f = 1; f < MR_SIM_FATE_NR; f++)
		n += st->dropped[f];
	return n;
}

static void build_cfg(const struct scen *s, unsigned int idx, struct mr_sim_xfer_cfg *cfg)
{
	mr_sim_xfer_cfg_init(cfg);
	cfg->op = s->op;
	cfg->size = s->size;
	cfg->count = s->count;
	cfg->depth = s->depth ? s->depth : 4;
	cfg->nqp = s->nqp ? s->nqp : 1;
	cfg->qp.mtu = s->mtu;
	cfg->qp.timeout = 8; /* 4.096 us * 2^8 = 1.05 ms: short in virtual time */
	cfg->seed = 0x5eed0000u + idx;
	cfg->recv_delay_ns = s->recv_delay_ns;
	cfg->link_ab.seed = 1000 + idx;
	cfg->link_ba.seed = 2000 + idx;
	for (int dir = 0; dir < 2; dir++) {
		struct mr_sim_link_cfg *l = dir ? &cfg->link_ba : &cfg->link_ab;

		if (s->loss_kind == LOSS_RANDOM)
			l->loss = s->loss;
		else if (s->loss_kind == LOSS_BURST)
			assert_int_equal(mr_sim_link_cfg_burst(l, 4.0, s->loss), 0);
		l->reorder = s->reorder;
		l->reorder_delay_ns = 20000; /* more than an RTT: a real overtake */
		l->dup = s->dup;
		l->corrupt = s->corrupt;
	}
	if (getenv("MR_SIM_TRACE"))
		cfg->trace = stderr;
}

static void report(const struct scen *s, const struct mr_sim_xfer_result *r)
{
	printf("[sim] %-40s bytes_ok=%llu retransmits=%llu timeouts=%llu seq_naks=%llu/%llu "
	       "rnr_naks=%llu implied_naks=%llu dup_req=%llu link_drops=%llu/%llu "
	       "parse_drops=%llu vtime=%.1fus goodput=%.2fGb/s\n",
	       s->name, (unsigned long long)r->bytes_verified,
	       (unsigned long long)r->qa.retransmits, (unsigned long long)r->qa.timeouts,
	       (unsigned long long)r->qb.seq_naks_sent, (unsigned long long)r->qa.seq_naks_rcvd,
	       (unsigned long long)r->qa.rnr_naks_rcvd, (unsigned long long)r->qa.implied_naks,
	       (unsigned long long)r->qb.duplicate_requests,
	       (unsigned long long)link_drops(&r->link_ab),
	       (unsigned long long)link_drops(&r->link_ba),
	       (unsigned long long)(r->node_a.parse_drops + r->node_b.parse_drops),
	       (double)r->elapsed_ns / 1000.0, r->goodput_gbps);
	fflush(stdout);
}

static void run_scen(void **state)
{
	const struct scen *s = *state;
	unsigned int idx = (unsigned int)(s - scens);
	struct mr_sim_xfer_cfg cfg;
	struct mr_sim_xfer_result r;
	uint64_t expect_bytes;

	build_cfg(s, idx, &cfg);
	mr_sim_xfer_run(&cfg, &r);
	if (s->report || r.rc != 0 || r.bytes_bad || r.succeeded != s->count)
		report(s, &r);
	if (r.first_error != MR_WC_SUCCESS)
		print_message("first error: %s\n", mr_sim_wc_status_str(r.first_error));
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.completed, s->count);
	assert_int_equal(r.succeeded, s->count);
	assert_int_equal(r.wc_bad, 0);
	assert_int_equal(r.bytes_bad, 0);
	expect_bytes = is_atomic(s->op) ? 16ull * s->count
					: (s->size + MR_SIM_XFER_GUARD) * s->count;
	assert_int_equal(r.bytes_verified, expect_bytes);
	if (needs_recv(s->op))
		assert_int_equal(r.recv_completed, s->count);
	assert_int_equal(r.node_a.build_errors + r.node_b.build_errors, 0);
	assert_int_equal(r.final_state_a, MR_QPS_RTS);
	if (s->corrupt > 0.0) {
		/* A flipped bit is caught by the ICRC (or an IP/UDP check) and the frame dropped;
		 * flips in the Ethernet header are not covered by any check and pass harmlessly. */
		assert_true(r.node_a.parse_drops + r.node_b.parse_drops > 0);
	} else {
		assert_int_equal(r.node_a.parse_drops + r.node_b.parse_drops, 0);
	}
	/* Go-back-N must have resent something whenever a packet it needed was lost: requests
	 * (a->b) for SEND/WRITE/atomics, responses (b->a) for READ. */
	if (s->op == MR_WR_RDMA_READ) {
		if (r.link_ba.dropped[MR_SIM_FATE_DROP_RANDOM] + r.link_ba.dropped[MR_SIM_FATE_DROP_BURST])
			assert_true(r.qa.retransmits > 0);
	} else if (link_drops(&r.link_ab) > 0) {
		assert_true(r.qa.retransmits > 0);
	}
	if (s->dup > 0.0 && r.link_ab.duplicated > 0)
		assert_true(r.qb.duplicate_requests > 0);
	if (s->recv_delay_ns > 0)
		assert_true(r.qa.rnr_naks_rcvd > 0 && r.qb.rnr_naks_sent > 0);
	if (s->report && (link_drops(&r.link_ab) + link_drops(&r.link_ba)) > 0)
		assert_true(r.qa.retransmits > 0 || r.qa.timeouts > 0);
}

static const char *loss_name(const struct scen *s, char *buf, size_t n)
{
	if (s->loss_kind == LOSS_NONE)
		snprintf(buf, n, "lossless");
	else if (s->loss_kind == LOSS_RANDOM)
		snprintf(buf, n, "loss%g%%", s->loss * 100);
	else
		snprintf(buf, n, "burst4@%g%%", s->loss * 100);
	return buf;
}

static void add(const struct scen *tmpl)
{
	struct scen *s;
	char lb[32];

	if (nscen == MAX_SCEN)
		abort();
	s = &scens[nscen];
	*s = *tmpl;
	if (s->name[0] == '\0')
		snprintf(s->name, sizeof(s->name), "%s_%llu_mtu%u_%s%s%s",
			 mr_sim_xfer_op_name(s->op), (unsigned long long)s->size, s->mtu,
			 loss_name(s, lb, sizeof(lb)), s->reorder > 0 ? "_reorder" : "",
			 s->dup > 0 ? "_dup" : "");
	tests[nscen] = (struct CMUnitTest){ s->name, run_scen, NULL, NULL, s };
	nscen++;
}

static const enum mr_wr_opcode data_ops[] = {
	MR_WR_SEND, MR_WR_SEND_WITH_IMM, MR_WR_RDMA_WRITE, MR_WR_RDMA_WRITE_WITH_IMM,
	MR_WR_RDMA_READ,
};
static const enum mr_wr_opcode atomic_ops[] = {
	MR_WR_ATOMIC_CMP_AND_SWP, MR_WR_ATOMIC_FETCH_AND_ADD,
};
static const uint32_t mtus[] = { 256, 1024, 4096 };

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* Every operation and boundary size, lossless. */
static void group_ops(void)
{
	for (size_t m = 0; m < NELEM(mtus); m++) {
		uint32_t mtu = mtus[m];
		uint64_t sizes[] = { 0, 1, mtu - 1, mtu, mtu + 1, 65536 };

		for (size_t o = 0; o < NELEM(data_ops); o++)
			for (size_t z = 0; z < NELEM(sizes); z++)
				add(&(struct scen){ .op = data_ops[o], .size = sizes[z], .count = 3,
						    .mtu = mtu });
		for (size_t o = 0; o < NELEM(atomic_ops); o++)
			add(&(struct scen){ .op = atomic_ops[o], .size = 8, .count = 16, .mtu = mtu });
	}
}

/* Random and bursty loss on both directions. */
static void group_loss(void)
{
	const struct { enum loss_kind k; double p; } losses[] = {
		{ LOSS_RANDOM, 0.001 }, { LOSS_RANDOM, 0.01 }, { LOSS_RANDOM, 0.05 },
		{ LOSS_BURST, 0.01 },
	};
	const uint32_t lmtus[] = { 1024, 4096 };

	for (size_t l = 0; l < NELEM(losses); l++) {
		for (size_t m = 0; m < NELEM(lmtus); m++)
			for (size_t o = 0; o < NELEM(data_ops); o++)
				add(&(struct scen){ .op = data_ops[o], .size = 65536, .count = 8,
						    .mtu = lmtus[m], .loss_kind = losses[l].k,
						    .loss = losses[l].p });
		for (size_t o = 0; o < NELEM(atomic_ops); o++)
			add(&(struct scen){ .op = atomic_ops[o], .size = 8, .count = 64,
					    .mtu = 1024, .loss_kind = losses[l].k,
					    .loss = losses[l].p });
	}
	/* Small MTU: many packets per message. */
	add(&(struct scen){ .op = MR_WR_RDMA_WRITE, .size = 65536, .count = 4, .mtu = 256,
			    .loss_kind = LOSS_RANDOM, .loss = 0.01 });
	add(&(struct scen){ .op = MR_WR_RDMA_READ, .size = 65536, .count = 4, .mtu = 256,
			    .loss_kind = LOSS_RANDOM, .loss = 0.01 });
	add(&(struct scen){ .op = MR_WR_SEND, .size = 65536, .count = 4, .mtu = 256,
			    .loss_kind = LOSS_RANDOM, .loss = 0.01 });
}

/* 1 MiB WRITE, READ and SEND; the go-back-N counters are printed for each. */
static void group_big(void)
{
	const enum mr_wr_opcode ops[] = { MR_WR_RDMA_WRITE, MR_WR_RDMA_READ, MR_WR_SEND };
	const uint32_t bmtus[] = { 1024, 4096 };

	for (size_t o = 0; o < NELEM(ops); o++) {
		add(&(struct scen){ .op = ops[o], .size = 1 << 20, .count = 1, .mtu = 256,
				    .report = true });
		for (size_t m = 0; m < NELEM(bmtus); m++) {
			add(&(struct scen){ .op = ops[o], .size = 1 << 20, .count = 1,
					    .mtu = bmtus[m], .report = true });
			add(&(struct scen){ .op = ops[o], .size = 1 << 20, .count = 1,
					    .mtu = bmtus[m], .loss_kind = LOSS_RANDOM,
					    .loss = 0.01, .report = true });
			add(&(struct scen){ .op = ops[o], .size = 1 << 20, .count = 1,
					    .mtu = bmtus[m], .loss_kind = LOSS_BURST,
					    .loss = 0.01, .report = true });
		}
	}
}

/* Reordering, duplication, corruption, RNR, several QPs. */
static void group_impair(void)
{
	for (size_t o = 0; o < NELEM(data_ops); o++) {
		add(&(struct scen){ .op = data_ops[o], .size = 65536, .count = 8, .mtu = 1024,
				    .reorder = 0.02, .report = true });
		add(&(struct scen){ .op = data_ops[o], .size = 65536, .count = 8, .mtu = 1024,
				    .dup = 0.02, .report = true });
	}
	for (size_t o = 0; o < NELEM(atomic_ops); o++) {
		add(&(struct scen){ .op = atomic_ops[o], .size = 8, .count = 64, .mtu = 1024,
				    .reorder = 0.05, .report = true });
		add(&(struct scen){ .op = atomic_ops[o], .size = 8, .count = 64, .mtu = 1024,
				    .dup = 0.05, .report = true });
	}
	add(&(struct scen){ .name = "write_64k_mtu1024_corrupt1%", .op = MR_WR_RDMA_WRITE,
			    .size = 65536, .count = 8, .mtu = 1024, .corrupt = 0.01,
			    .report = true });
	add(&(struct scen){ .name = "read_64k_mtu1024_corrupt1%", .op = MR_WR_RDMA_READ,
			    .size = 65536, .count = 8, .mtu = 1024, .corrupt = 0.01,
			    .report = true });
	add(&(struct scen){ .name = "send_4k_rnr_recv_late_200us", .op = MR_WR_SEND,
			    .size = 4096, .count = 4, .mtu = 1024, .recv_delay_ns = 200000,
			    .report = true });
	add(&(struct scen){ .name = "send_imm_0_rnr_recv_late_100us", .op = MR_WR_SEND_WITH_IMM,
			    .size = 0, .count = 2, .mtu = 1024, .recv_delay_ns = 100000,
			    .report = true });
	add(&(struct scen){ .name = "write_imm_rnr_recv_late_100us", .op = MR_WR_RDMA_WRITE_WITH_IMM,
			    .size = 5000, .count = 2, .mtu = 1024, .recv_delay_ns = 100000,
			    .report = true });
	add(&(struct scen){ .name = "write_4qp_64k_mtu1024_loss1%", .op = MR_WR_RDMA_WRITE,
			    .size = 65536, .count = 32, .nqp = 4, .mtu = 1024,
			    .loss_kind = LOSS_RANDOM, .loss = 0.01, .report = true });
	add(&(struct scen){ .name = "send_4qp_64k_mtu4096_burst", .op = MR_WR_SEND,
			    .size = 65536, .count = 32, .nqp = 4, .mtu = 4096,
			    .loss_kind = LOSS_BURST, .loss = 0.01, .report = true });
	add(&(struct scen){ .name = "read_8qp_16k_mtu1024_loss1%_reorder", .op = MR_WR_RDMA_READ,
			    .size = 16384, .count = 64, .nqp = 8, .mtu = 1024,
			    .loss_kind = LOSS_RANDOM, .loss = 0.01, .reorder = 0.01,
			    .report = true });
	add(&(struct scen){ .name = "fetch_add_3qp_loss5%_dup", .op = MR_WR_ATOMIC_FETCH_AND_ADD,
			    .size = 8, .count = 96, .nqp = 3, .mtu = 1024,
			    .loss_kind = LOSS_RANDOM, .loss = 0.05, .dup = 0.02, .report = true });
}

#include "sim_rc_errors.h"

int main(int argc, char **argv)
{
	const char *g = argc > 1 ? argv[1] : "ops";

	if (strcmp(g, "errors") == 0)
		return test_sim_rc_errors();
	if (strcmp(g, "mask") == 0)
		return test_sim_rc_mask();
	if (strcmp(g, "ops") == 0)
		group_ops();
	else if (strcmp(g, "loss") == 0)
		group_loss();
	else if (strcmp(g, "big") == 0)
		group_big();
	else if (strcmp(g, "impair") == 0)
		group_impair();
	else {
		fprintf(stderr, "test_sim_rc: unknown group '%s'\n", g);
		return 2;
	}
	return _cmocka_run_group_tests(g, tests, nscen, NULL, NULL);
}
