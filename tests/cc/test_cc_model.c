/* SPDX-License-Identifier: MIT
 * Controllers in the bottleneck model (cc_model.h): N = 2, 8, 32 long flows into one 100 Gb/s
 * queue, 10 us RTT, ECN step marking at K. MetaRoCE CC must share fairly (Jain >= 0.95), keep
 * the link busy (>= 0.9) and hold the queue near its delay target; DCQCN must converge too.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cc_model.h"

static struct mr_model_cfg cfg(enum mr_cc_algo algo, unsigned n)
{
	struct mr_model_cfg c;

	memset(&c, 0, sizeof(c));
	c.algo = algo;
	c.n_flows = n;
	c.line_bps = 100000000000ull;
	c.base_rtt_ns = 10000;
	c.mtu = 4096;
	c.ecn_k_bytes = 40000;
	c.dt_ns = 50;
	c.warmup_ns = 10000000;   /* 10 ms */
	c.duration_ns = 30000000; /* measure 20 ms */
	return c;
}

static void report(const char *name, unsigned n, const struct mr_model_result *r)
{
	printf("[model] %-8s N=%-2u jain=%.4f util=%.4f queue avg=%.1f KB min=%.1f KB max=%.1f KB "
	       "thr min/max=%.2f/%.2f Gb/s marks=%llu/%llu cnps=%llu\n",
	       name, n, r->jain, r->util, r->q_avg_bytes / 1e3, r->q_min_bytes / 1e3,
	       r->q_max_bytes / 1e3, r->thr_min_gbps, r->thr_max_gbps,
	       (unsigned long long)r->marks, (unsigned long long)r->pkts,
	       (unsigned long long)r->cnps);
}

/* Swift flow scaling (SIGCOMM'20 3.5) as metaroce_cc.c publishes it, for a window in bytes. */
static double fs_ns(double cwnd)
{
	double a = 10000.0 / (1.0 / sqrt(0.1) - 1.0 / sqrt(100.0)), b = -a / sqrt(100.0);
	double pk = cwnd / 4096.0 < 0.1 ? 0.1 : cwnd / 4096.0, fs = a / sqrt(pk) + b;

	return fs < 0 ? 0 : fs > 10000.0 ? 10000.0 : fs;
}

static void run_metaroce(unsigned n)
{
	struct mr_model_cfg c = cfg(MR_CC_METAROCE, n);
	struct mr_model_result r;

	assert_int_equal(mr_model_run(&c, &r), 0);
	report("metaroce", n, &r);
	assert_true(r.jain >= 0.95);
	assert_true(r.util >= 0.9);
	assert_true(r.util <= 1.0001);
	/* the queue stays bounded: within a few delay targets (2 us = 25 KB at 100 Gb/s) plus one
	 * packet per flow, nowhere near the megabytes an uncontrolled N:1 builds */
	assert_true(r.q_max_bytes <= 150000.0 + n * 4096.0);
	/* average within 2x the target queue: 2 us (25 KB) plus Swift's flow scaling at the fair
	 * window BDP/n (metaroce_cc.c: fs_range 10 us between 0.1 and 100 packets), e.g. +2.9 us
	 * at n = 32 (1 packet each), +0.5 us at n = 2 */
	assert_true(r.q_avg_bytes <= 2.0 * 12.5 * (2000.0 + fs_ns(125000.0 / n)));
	assert_true(r.marks > 0);
}

static void test_metaroce_2(void **state)
{
	(void)state;
	run_metaroce(2);
}

static void test_metaroce_8(void **state)
{
	(void)state;
	run_metaroce(8);
}

static void test_metaroce_32(void **state)
{
	(void)state;
	run_metaroce(32);
}

static void run_dcqcn(unsigned n)
{
	struct mr_model_cfg c = cfg(MR_CC_DCQCN, n);
	struct mr_model_result r;

	c.warmup_ns = 20000000;
	c.duration_ns = 60000000;
	assert_int_equal(mr_model_run(&c, &r), 0);
	report("dcqcn", n, &r);
	assert_true(r.cnps > 0);
	assert_true(r.jain >= 0.9);
	assert_true(r.util >= 0.85);
	assert_true(r.util <= 1.0001);
}

static void test_dcqcn_2(void **state)
{
	(void)state;
	run_dcqcn(2);
}

static void test_dcqcn_8(void **state)
{
	(void)state;
	run_dcqcn(8);
}

static void test_dcqcn_32(void **state)
{
	(void)state;
	run_dcqcn(32);
}

/* Without congestion control the same model has no bound: the queue grows with time. */
static void test_none_unbounded(void **state)
{
	struct mr_model_cfg c = cfg(MR_CC_NONE, 2);
	struct mr_model_result r;
	(void)state;

	c.warmup_ns = 100000;
	c.duration_ns = 400000;
	assert_int_equal(mr_model_run(&c, &r), 0);
	report("none", 2, &r);
	assert_true(r.q_max_bytes > 1000000.0);
	c.n_flows = 0;
	assert_int_equal(mr_model_run(&c, &r), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metaroce_2),
		cmocka_unit_test(test_metaroce_8),
		cmocka_unit_test(test_metaroce_32),
		cmocka_unit_test(test_dcqcn_2),
		cmocka_unit_test(test_dcqcn_8),
		cmocka_unit_test(test_dcqcn_32),
		cmocka_unit_test(test_none_unbounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
