/* SPDX-License-Identifier: MIT
 * Multipath fabric scenarios (suite 'sim'). argv[1] selects a group:
 *   ecmp     the ECMP hash spreads entropies (UDP source ports) over every path, deterministic;
 *            one RC flow stays on one path and is verified
 *   ecn      a 4:1 incast marks CE past the threshold only for ECT traffic, never for a lone
 *            paced flow; the marked frames still pass ICRC (data verified)
 *   incast   an 8:1 incast builds the receiver's downlink queue and tail-drops when it is
 *            small; go-back-N recovers and every byte is verified
 *   targets  the MetaRoCE targets of the issue at small scale (goodput ratio at 0.1/1/5% random
 *            and 1% bursty loss, spurious retransmits on 16 reordering paths, 32:1 incast);
 *            fails (does not skip) while MetaRoCE is missing
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim/sim_fxfer.h"

static struct mr_sim_fxfer_result *run(const struct mr_sim_fxfer_cfg *c)
{
	struct mr_sim_fxfer_result *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	mr_sim_fxfer_run(c, r);
	return r;
}

static void test_ecmp_spread(void **state)
{
	struct mr_sim_fabric_cfg fc;
	struct mr_sim_fabric *f;
	unsigned int hits[16] = { 0 };

	(void)state;
	mr_sim_fabric_cfg_init(&fc);
	fc.n_paths = 16;
	f = mr_sim_fabric_create(&fc);
	assert_non_null(f);
	/* 256 consecutive entropies from an arbitrary base, as a MetaRoCE QP uses them */
	for (unsigned int e = 0; e < 256; e++) {
		unsigned int p = mr_sim_fabric_ecmp(f, 0, 1, (uint16_t)(0xc123 + e));

		assert_true(p < 16);
		assert_int_equal(p, mr_sim_fabric_ecmp(f, 0, 1, (uint16_t)(0xc123 + e)));
		hits[p]++;
	}
	for (unsigned int p = 0; p < 16; p++) {
		/* mean 16; a fair hash keeps every path within [4, 32] (binomial, > 4 sigma) */
		if (hits[p] < 4 || hits[p] > 32)
			fail_msg("path %u got %u of 256 entropies", p, hits[p]);
	}
	assert_null(mr_sim_fabric_host(f, 2));
	mr_sim_fabric_destroy(f);
	fc.n_paths = 0;
	assert_null(mr_sim_fabric_create(&fc));
	assert_int_equal(errno, EINVAL);
}

static void test_single_flow_one_path(void **state)
{
	struct mr_sim_fxfer_cfg c;
	struct mr_sim_fxfer_result *r;
	unsigned int used = 0;

	(void)state;
	mr_sim_fxfer_cfg_init(&c);
	c.fabric.n_paths = 8;
	c.count = 4;
	r = run(&c);
	assert_int_equal(r->rc, 0);
	assert_true(r->verified);
	assert_int_equal(r->bytes_bad, 0);
	assert_int_equal(r->bytes_verified, 4ull * ((1 << 20) + 64));
	for (unsigned int p = 0; p < 8; p++)
		used += r->path[p].pkts > 0;
	/* RC: one UDP source port per direction, so data and ACKs use at most two paths */
	assert_true(used >= 1 && used <= 2);
	assert_true(r->goodput_gbps > 90 && r->goodput_gbps <= 100);
	assert_int_equal(r->fabric.unroutable, 0);
	free(r);
}

static struct mr_sim_fxfer_cfg incast_cfg(unsigned int k, uint64_t queue, uint64_t ecn_k,
					  uint8_t tclass)
{
	struct mr_sim_fxfer_cfg c;

	mr_sim_fxfer_cfg_init(&c);
	assert_int_equal(mr_sim_fxfer_cfg_incast(&c, k), 0);
	c.size = 256 * 1024;
	c.count = 2;
	c.depth = 2;
	/* a non-blocking fabric (paths at k x line rate): the receiver's downlink is the only
	 * bottleneck, the classic incast setting */
	for (unsigned int p = 0; p < MR_SIM_FABRIC_MAX_PATHS; p++)
		c.fabric.path[p].link.rate_bps = c.fabric.host_rate_bps * k;
	c.fabric.down_queue_bytes = queue;
	c.fabric.down_ecn_k_bytes = ecn_k;
	c.qp.tclass = tclass;
	return c;
}

static void test_ecn_threshold(void **state)
{
	struct mr_sim_fxfer_cfg c = incast_cfg(4, 4 << 20, 64 * 1024, 2);
	struct mr_sim_fxfer_result *r;

	(void)state;
	r = run(&c);
	assert_true(r->verified); /* CE-marked frames still pass the ICRC (TOS is masked) */
	assert_true(r->down[4].peak_queue_bytes > 64 * 1024);
	assert_true(r->down[4].ce_marks > 0);
	assert_true(r->qb.ce_rcvd == 0 || r->qb.ce_rcvd <= r->down[4].ce_marks);
	/* the senders' downlinks (ACKs only) never cross K */
	for (unsigned int h = 0; h < 4; h++)
		assert_int_equal(r->down[h].ce_marks, 0);
	free(r);

	/* Not-ECT traffic is never marked however long the queue (RFC 3168 5) */
	c = incast_cfg(4, 4 << 20, 64 * 1024, 0);
	r = run(&c);
	assert_true(r->verified);
	assert_true(r->down[4].peak_queue_bytes > 64 * 1024);
	assert_int_equal(r->down[4].ce_marks, 0);
	free(r);

	/* a lone paced flow at line rate never builds a queue past one frame: no marks */
	c = incast_cfg(1, 4 << 20, 16 * 1024, 2);
	r = run(&c);
	assert_true(r->verified);
	assert_true(r->down[1].peak_queue_bytes <= 8400);
	assert_int_equal(r->down[1].ce_marks, 0);
	free(r);
}

static void test_incast_queue(void **state)
{
	struct mr_sim_fxfer_cfg c = incast_cfg(8, 4 << 20, 0, 0);
	struct mr_sim_fxfer_result *r;

	(void)state;
	/* deep queue: 8 x 100 Gb/s into one: the queue builds to several hundred KB, no loss */
	r = run(&c);
	assert_true(r->verified);
	assert_true(r->down[8].peak_queue_bytes > 256 * 1024);
	assert_int_equal(r->down[8].drops_queue, 0);
	assert_true(r->goodput_gbps > 80); /* the bottleneck stays busy */
	free(r);

	/* shallow queue: tail drops; go-back-N repairs them, every byte verified */
	c = incast_cfg(8, 64 * 1024, 0, 0);
	c.qp.timeout = 6; /* ~262 us: bounded test time on a stall */
	r = run(&c);
	assert_true(r->verified);
	assert_true(r->down[8].drops_queue > 0);
	assert_true(r->down[8].peak_queue_bytes <= 64 * 1024);
	assert_true(r->qa.retransmits > 0);
	assert_int_equal(r->bytes_bad, 0);
	free(r);
}

/* ---- issue targets (MetaRoCE) ---- */

static double goodput(enum mr_transport t, double loss, double burst, unsigned int paths,
		      struct mr_sim_fxfer_result **keep)
{
	struct mr_sim_fxfer_cfg c;
	struct mr_sim_fabric_path_cfg p;
	struct mr_sim_fxfer_result *r;
	double g;

	mr_sim_fxfer_cfg_init(&c);
	c.fabric.n_paths = paths;
	c.count = 8;
	c.qp.transport = t;
	c.qp.n_entropies = t == MR_TRANSPORT_METAROCE ? (uint16_t)(4 * paths) : 1;
	c.qp.cc_params.line_rate_bps = c.fabric.host_rate_bps;
	c.qp.cc_params.base_rtt_ns = 10000;
	c.qp.cc_params.mtu = c.qp.mtu;
	c.qp.cc_params.n_paths = c.qp.n_entropies;
	p = c.fabric.path[0];
	if (burst > 0)
		assert_int_equal(mr_sim_link_cfg_burst(&p.link, burst, loss), 0);
	else
		p.link.loss = loss;
	mr_sim_fabric_cfg_all_paths(&c.fabric, &p);
	r = run(&c);
	if (!r->verified)
		fail_msg("transport %d loss %g burst %g: not verified (rc %d, %u/%u ok, first "
			 "error %d)", t, loss, burst, r->rc, r->succeeded, c.count, r->first_error);
	g = r->goodput_gbps;
	if (keep)
		*keep = r;
	else
		free(r);
	return g;
}

static void test_targets_loss(void **state)
{
	static const struct { double loss, burst, min_ratio; } t[] = {
		{ 0.001, 0, 0.97 }, { 0.01, 0, 0.93 }, { 0.05, 0, 0.80 }, { 0.01, 4, 0.85 },
	};
	double base;
	int failed = 0;

	(void)state;
	base = goodput(MR_TRANSPORT_METAROCE, 0, 0, 8, NULL);
	assert_true(base > 50);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		double g = goodput(MR_TRANSPORT_METAROCE, t[i].loss, t[i].burst, 8, NULL);

		print_message("metaroce loss %g burst %g: %.2f Gb/s, ratio %.3f (target >= %.2f)\n",
			      t[i].loss, t[i].burst, g, g / base, t[i].min_ratio);
		if (g / base < t[i].min_ratio) {
			print_error("loss %g burst %g: goodput ratio %.3f < %.2f\n", t[i].loss,
				    t[i].burst, g / base, t[i].min_ratio);
			failed++;
		}
	}
	assert_int_equal(failed, 0); /* every point is measured and printed first */
}

static void test_targets_spurious(void **state)
{
	struct mr_sim_fxfer_cfg c;
	struct mr_sim_fabric_path_cfg p;
	struct mr_sim_fxfer_result *r;
	double frac;

	(void)state;
	mr_sim_fxfer_cfg_init(&c);
	c.fabric.n_paths = 16;
	c.count = 8;
	c.qp.transport = MR_TRANSPORT_METAROCE;
	c.qp.n_entropies = 64;
	p = c.fabric.path[0];
	p.link.reorder = 0.05;
	p.link.reorder_delay_ns = 20000;
	mr_sim_fabric_cfg_all_paths(&c.fabric, &p);
	r = run(&c);
	assert_true(r->verified);
	frac = r->data_pkts ? (double)r->qa.spurious_retransmits / r->data_pkts : 1;
	print_message("16 paths, 5%% reordered by 20 us: %" PRIu64 " spurious of %" PRIu64
		      " (%.3f%%)\n", r->qa.spurious_retransmits, r->data_pkts, 100 * frac);
	assert_true(r->path[0].pkts > 0 && r->path[15].pkts > 0);
	if (frac >= 0.01)
		fail_msg("spurious retransmits %.3f%% >= 1%%", 100 * frac);
	free(r);
}

static void test_targets_incast(void **state)
{
	struct mr_sim_fxfer_cfg c = incast_cfg(32, 1 << 20, 100 * 1024, 2);
	struct mr_sim_fxfer_result *r;
	double ratio;

	(void)state;
	c.size = 1 << 20;
	c.count = 1;
	c.qp.transport = MR_TRANSPORT_METAROCE;
	c.qp.cc = MR_CC_METAROCE;
	c.qp.n_entropies = 1;
	c.qp.cc_params.line_rate_bps = c.fabric.host_rate_bps;
	c.qp.cc_params.base_rtt_ns = 10000;
	c.qp.cc_params.mtu = c.qp.mtu;
	c.qp.cc_params.n_paths = 1;
	r = run(&c);
	ratio = r->goodput_gbps / 100.0;
	print_message("32:1 MetaRoCE CC: %.2f Gb/s (%.3f of bottleneck), Jain %.3f, peak %" PRIu64
		      " B, drops %" PRIu64 ", timeouts %" PRIu64 "\n", r->goodput_gbps, ratio,
		      r->jain, r->down[32].peak_queue_bytes, r->down[32].drops_queue,
		      r->qa.timeouts);
	assert_true(r->verified);
	if (ratio < 0.9 || r->jain < 0.95 || r->qa.timeouts != 0)
		fail_msg("32:1 incast: ratio %.3f (>= 0.9), Jain %.3f (>= 0.95), timeouts %" PRIu64
			 " (0)", ratio, r->jain, r->qa.timeouts);
	free(r);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest ecmp[] = {
		cmocka_unit_test(test_ecmp_spread),
		cmocka_unit_test(test_single_flow_one_path),
	};
	const struct CMUnitTest ecn[] = { cmocka_unit_test(test_ecn_threshold) };
	const struct CMUnitTest incast[] = { cmocka_unit_test(test_incast_queue) };
	const struct CMUnitTest targets[] = {
		cmocka_unit_test(test_targets_loss),
		cmocka_unit_test(test_targets_spurious),
		cmocka_unit_test(test_targets_incast),
	};
	const char *g = argc > 1 ? argv[1] : "ecmp";

	if (strcmp(g, "ecmp") == 0)
		return cmocka_run_group_tests_name("fabric_ecmp", ecmp, NULL, NULL);
	if (strcmp(g, "ecn") == 0)
		return cmocka_run_group_tests_name("fabric_ecn", ecn, NULL, NULL);
	if (strcmp(g, "incast") == 0)
		return cmocka_run_group_tests_name("fabric_incast", incast, NULL, NULL);
	if (strcmp(g, "targets") == 0)
		return cmocka_run_group_tests_name("fabric_targets", targets, NULL, NULL);
	fprintf(stderr, "unknown group '%s'\n", g);
	return 2;
}
