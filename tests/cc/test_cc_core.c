/* SPDX-License-Identifier: MIT
 * CC core: parameter validation, dispatch, the pacing/window gate, the "none" algorithm and the
 * DCQCN notification point.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cc/cc.h"

static struct mr_cc_params good_params(void)
{
	struct mr_cc_params p;

	memset(&p, 0, sizeof(p));
	p.line_rate_bps = 100000000000ull; /* 100 Gb/s */
	p.base_rtt_ns = 10000;
	p.mtu = 4096;
	p.n_paths = 16;
	return p;
}

static void test_bad_params(void **state)
{
	struct mr_cc cc;
	struct mr_cc_params p = good_params();
	(void)state;

	assert_int_equal(mr_cc_init(NULL, MR_CC_NONE, &p, 0), -EINVAL);
	assert_int_equal(mr_cc_init(&cc, MR_CC_NONE, NULL, 0), -EINVAL);
	assert_int_equal(mr_cc_init(&cc, (enum mr_cc_algo)3, &p, 0), -EINVAL);
	assert_int_equal(mr_cc_init(&cc, (enum mr_cc_algo)-1, &p, 0), -EINVAL);
	for (int a = MR_CC_NONE; a <= MR_CC_METAROCE; a++) {
		p = good_params();
		p.line_rate_bps = 0;
		assert_int_equal(mr_cc_init(&cc, (enum mr_cc_algo)a, &p, 0), -EINVAL);
		p = good_params();
		p.mtu = 255;
		assert_int_equal(mr_cc_init(&cc, (enum mr_cc_algo)a, &p, 0), -EINVAL);
		p.mtu = 4097;
		assert_int_equal(mr_cc_init(&cc, (enum mr_cc_algo)a, &p, 0), -EINVAL);
		p.mtu = 0;
		assert_int_equal(mr_cc_init(&cc, (enum mr_cc_algo)a, &p, 0), -EINVAL);
		p = good_params();
		p.n_paths = 0;
		assert_int_equal(mr_cc_init(&cc, (enum mr_cc_algo)a, &p, 0), -EINVAL);
		p.n_paths = 257;
		assert_int_equal(mr_cc_init(&cc, (enum mr_cc_algo)a, &p, 0), -EINVAL);
		p = good_params();
		p.dcqcn_g_shift = 31;
		assert_int_equal(mr_cc_init(&cc, (enum mr_cc_algo)a, &p, 0), -EINVAL);
		/* boundaries are accepted */
		p = good_params();
		p.mtu = 256;
		p.n_paths = 1;
		assert_int_equal(mr_cc_init(&cc, (enum mr_cc_algo)a, &p, 0), 0);
		p.mtu = 4096;
		p.n_paths = 256;
		assert_int_equal(mr_cc_init(&cc, (enum mr_cc_algo)a, &p, 0), 0);
	}
	/* NULL-safe helpers */
	assert_false(mr_cc_can_send(NULL, 0, 0));
	mr_cc_sent(NULL, 0, 100, 0);
	mr_dcqcn_np_init(NULL, 0);
	assert_false(mr_dcqcn_np_on_ce(NULL, 0));
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(mr_cc_algo_name(MR_CC_NONE), "none");
	assert_string_equal(mr_cc_algo_name(MR_CC_DCQCN), "dcqcn");
	assert_string_equal(mr_cc_algo_name(MR_CC_METAROCE), "metaroce");
	assert_string_equal(mr_cc_algo_name((enum mr_cc_algo)42), "unknown");
}

static void test_none_unpaced(void **state)
{
	struct mr_cc cc;
	struct mr_cc_params p = good_params();
	struct mr_cc_ack ack = { .now = 5, .acked_bytes = 4096, .acked_pkts = 1, .ce_pkts = 1 };
	(void)state;

	assert_int_equal(mr_cc_init(&cc, MR_CC_NONE, &p, 1000), 0);
	assert_true(cc.rate_bps == UINT64_MAX);
	assert_true(cc.cwnd_bytes == UINT64_MAX);
	assert_true(cc.ops->next_timer(&cc) == UINT64_MAX);
	/* 1000 back-to-back sends at the same instant are all allowed */
	for (int i = 0; i < 1000; i++) {
		assert_true(mr_cc_can_send(&cc, 1000, (uint64_t)i * 4096));
		mr_cc_sent(&cc, 1000, 4096, (uint16_t)i);
	}
	assert_true(cc.next_send_ns == 1000);
	cc.ops->on_ack(&cc, &ack);
	cc.ops->on_cnp(&cc, 6);
	cc.ops->on_loss(&cc, 7, 4096, 3);
	cc.ops->on_timeout(&cc, 8);
	cc.ops->on_timer(&cc, 9);
	assert_true(cc.rate_bps == UINT64_MAX);
	assert_true(cc.cwnd_bytes == UINT64_MAX);
	assert_true(mr_cc_can_send(&cc, 2000, UINT64_MAX - 1));
	assert_false(mr_cc_can_send(&cc, 999, 0)); /* init set the first slot to now = 1000 */
}

/* Pacing arithmetic on a hand-set rate: 4096 B at 10 Gb/s is 3276.8 ns, rounded up to 3277. */
static void test_pacing_exact(void **state)
{
	struct mr_cc cc;
	struct mr_cc_params p = good_params();
	(void)state;

	assert_int_equal(mr_cc_init(&cc, MR_CC_NONE, &p, 0), 0);
	cc.rate_bps = 10000000000ull;
	cc.cwnd_bytes = 3 * 4096;
	/* Idle since init (slot 0): the first packet leaves at 100 and the next slot follows
	 * from the schedule, 100 ns of it being within the catch-up credit. */
	assert_true(mr_cc_can_send(&cc, 100, 0));
	mr_cc_sent(&cc, 100, 4096, 0);
	assert_true(cc.next_send_ns == 3277);
	cc.next_send_ns = 100; /* from here: on time */
	mr_cc_sent(&cc, 100, 4096, 0);
	assert_true(cc.next_send_ns == 100 + 3277);
	assert_false(mr_cc_can_send(&cc, 100 + 3276, 4096));
	assert_true(mr_cc_can_send(&cc, 100 + 3277, 4096));
	/* sent on time: the schedule advances from the previous slot, not from now */
	mr_cc_sent(&cc, 100 + 3277, 1000, 0); /* 1000 B = 800 ns exactly */
	assert_true(cc.next_send_ns == 100 + 3277 + 800);
	/* After a long idle period the credit is bounded: MR_CC_BURST_PKTS full-size packets
	 * back to back (the token bucket of a NIC rate limiter), then the rate again. */
	{
		uint64_t t = 500000, n = 0;

		while (mr_cc_can_send(&cc, t, 0) && n < 100) {
			mr_cc_sent(&cc, t, 4096, 0);
			n++;
		}
		assert_int_equal(n, MR_CC_BURST_PKTS);
		assert_true(cc.next_send_ns > t && cc.next_send_ns <= t + 3277);
	}
	/* window gate: inflight must be strictly below cwnd */
	assert_false(mr_cc_can_send(&cc, 1000000, 3 * 4096));
	assert_true(mr_cc_can_send(&cc, 1000000, 3 * 4096 - 1));
	/* idle for ~0.5 ms: the credit is capped at MR_CC_BURST_PKTS x 4096 B = 26215 ns at
	 * 10 Gb/s (rounded up), so the next slot is that much before now, plus one packet */
	mr_cc_sent(&cc, 1000000, 4096, 0);
	assert_true(cc.next_send_ns == 1000000 - 26215 + 3277);
	assert_true(MR_CC_BURST_PKTS == 8); /* the figure above */
	/* 1 b/s and a 4 GB burst: no overflow, saturates instead of wrapping */
	cc.rate_bps = 1;
	mr_cc_sent(&cc, 2000000, UINT32_MAX, 0);
	assert_true(cc.next_send_ns == UINT64_MAX);
	assert_false(mr_cc_can_send(&cc, UINT64_MAX - 1, 0));
	mr_cc_sent(&cc, 2000000, 4096, 0);
	assert_true(cc.next_send_ns == UINT64_MAX);
}

/* DCQCN NP: one CNP per flow per 50 us (default) however many CE packets arrive. */
static void test_np_interval(void **state)
{
	struct mr_dcqcn_np np;
	unsigned sent = 0;
	(void)state;

	mr_dcqcn_np_init(&np, 0);
	assert_true(np.min_interval_ns == 50000);
	assert_true(mr_dcqcn_np_on_ce(&np, 7));         /* first CE: immediate CNP */
	assert_false(mr_dcqcn_np_on_ce(&np, 7));
	assert_false(mr_dcqcn_np_on_ce(&np, 50006));    /* 49.999 us later */
	assert_true(mr_dcqcn_np_on_ce(&np, 50007));     /* exactly 50 us */
	assert_false(mr_dcqcn_np_on_ce(&np, 50006));    /* clock went back: no CNP */
	assert_true(np.cnps == 2);
	/* a CE packet every 100 ns for 1 ms: CNPs at 0, 50, ..., 950 us relative -> 20 */
	mr_dcqcn_np_init(&np, 50000);
	for (uint64_t t = 1000000; t < 2000000; t += 100)
		sent += mr_dcqcn_np_on_ce(&np, t);
	assert_int_equal(sent, 20);
	assert_true(np.cnps == 20);
	assert_true(np.last_cnp_ns == 1000000 + 19 * 50000);
	/* a custom interval */
	mr_dcqcn_np_init(&np, 4000);
	assert_true(mr_dcqcn_np_on_ce(&np, 0));
	assert_false(mr_dcqcn_np_on_ce(&np, 3999));
	assert_true(mr_dcqcn_np_on_ce(&np, 4000));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_params),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_none_unpaced),
		cmocka_unit_test(test_pacing_exact),
		cmocka_unit_test(test_np_interval),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
