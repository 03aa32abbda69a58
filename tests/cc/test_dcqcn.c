/* SPDX-License-Identifier: MIT
 * DCQCN reaction point against the equations of Zhu et al., SIGCOMM'15 section 3.1, recomputed
 * here independently: rate cut and alpha update per CNP, alpha decay per K, the increase stages
 * (fast recovery, additive, hyper) driven by the timer and the byte counter, and the clamps.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cc/cc.h"

#define LINE 40000000000ull /* 40 Gb/s, the paper's NICs */
#define US 1000ull

static struct mr_cc_params params(void)
{
	struct mr_cc_params p;

	memset(&p, 0, sizeof(p));
	p.line_rate_bps = LINE;
	p.mtu = 1024;
	p.n_paths = 1;
	return p;
}

/* Fire every timer due up to and including `until`, in order. */
static void run_timers(struct mr_cc *cc, uint64_t until)
{
	uint64_t t;

	while ((t = cc->ops->next_timer(cc)) <= until)
		cc->ops->on_timer(cc, t);
}

static void test_defaults(void **state)
{
	struct mr_cc cc;
	struct mr_cc_params p = params();
	(void)state;

	assert_int_equal(mr_cc_init(&cc, MR_CC_DCQCN, &p, 0), 0);
	assert_true(cc.rate_bps == LINE);
	assert_true(cc.rate_min_bps == LINE);
	assert_true(cc.cwnd_bytes == UINT64_MAX);
	assert_true(cc.ops->next_timer(&cc) == UINT64_MAX); /* nothing to do before a CNP */
	/* first CNP with alpha = 1 halves the rate; both timers arm 55 us later */
	cc.ops->on_cnp(&cc, 1000);
	assert_true(cc.rate_bps == LINE / 2);
	assert_true(cc.ops->next_timer(&cc) == 1000 + 55 * US);
	/* an ACK, a loss or a timeout do not move DCQCN's rate (it listens to CNPs only) */
	struct mr_cc_ack ack = { .now = 2000, .acked_bytes = 1024, .acked_pkts = 1, .ce_pkts = 1 };
	cc.ops->on_ack(&cc, &ack);
	cc.ops->on_loss(&cc, 2000, 1024, 0);
	cc.ops->on_timeout(&cc, 2000);
	assert_true(cc.rate_bps == LINE / 2);
	/* the timers raise the rate again; the lowest rate stays recorded */
	for (uint64_t t = 1000 + 55 * US; t < 1000 + 100 * 55 * US; t += 55 * US)
		cc.ops->on_timer(&cc, t);
	assert_true(cc.rate_bps > LINE / 2);
	assert_true(cc.rate_min_bps == LINE / 2);
}

/* k CNPs back to back (no time for timers): Rt = Rc, Rc *= 1 - a/2, a = (1 - g) a + g. */
static void test_k_cnps_exact(void **state)
{
	struct mr_cc cc;
	struct mr_cc_params p = params();
	double rc = (double)LINE, a = 1.0, g = 1.0 / 256;
	(void)state;

	assert_int_equal(mr_cc_init(&cc, MR_CC_DCQCN, &p, 0), 0);
	for (int k = 1; k <= 12; k++) {
		rc = rc * (1.0 - a / 2.0);
		a = (1.0 - g) * a + g;
		cc.ops->on_cnp(&cc, 10 * US + (uint64_t)k);
		assert_true(cc.rate_bps == (uint64_t)rc);
	}
	/* after 12 halvings-ish: 40G * prod(1 - a_i/2) ~ 9.8 Mb/s */
	assert_true(cc.rate_bps > 9000000 && cc.rate_bps < 11000000);
	/* g_shift knob: g = 1/16 */
	p.dcqcn_g_shift = 4;
	assert_int_equal(mr_cc_init(&cc, MR_CC_DCQCN, &p, 0), 0);
	rc = (double)LINE, a = 1.0, g = 1.0 / 16;
	for (int k = 1; k <= 3; k++) {
		rc = rc * (1.0 - a / 2.0);
		a = (1.0 - g) * a + g;
		cc.ops->on_cnp(&cc, (uint64_t)k);
		assert_true(cc.rate_bps == (uint64_t)rc);
	}
}

/* Alpha decays by (1 - g) every K without a CNP; the next cut shows the decayed alpha. */
static void test_alpha_decay(void **state)
{
	struct mr_cc cc;
	struct mr_cc_params p = params();
	(void)state;

	p.dcqcn_rate_timer_ns = 1000000000ull; /* keep rate increases out of the picture */
	p.dcqcn_byte_counter = UINT32_MAX;
	for (unsigned j = 0; j <= 40; j += 8) {
		double rc = (double)LINE, a = 1.0, g = 1.0 / 256;

		assert_int_equal(mr_cc_init(&cc, MR_CC_DCQCN, &p, 0), 0);
		cc.ops->on_cnp(&cc, 0);
		rc *= 1.0 - a / 2.0;
		a = (1.0 - g) * a + g;
		assert_true(cc.rate_bps == (uint64_t)rc);
		/* j alpha periods of 55 us pass, then one more CNP just before the next expiry */
		run_timers(&cc, j * 55 * US);
		for (unsigned i = 0; i < j; i++)
			a *= 1.0 - g;
		cc.ops->on_cnp(&cc, j * 55 * US + 1);
		rc *= 1.0 - a / 2.0;
		assert_true(cc.rate_bps == (uint64_t)rc);
	}
	/* custom K: a 10 us alpha timer */
	p.dcqcn_alpha_timer_ns = 10 * US;
	assert_int_equal(mr_cc_init(&cc, MR_CC_DCQCN, &p, 0), 0);
	cc.ops->on_cnp(&cc, 0);
	assert_true(cc.ops->next_timer(&cc) == 10 * US);
}

/* The recovery stages after one CNP: F = 5 timer events of fast recovery, then additive
 * increase; byte-counter events past F as well bring hyper increase. */
static void test_recovery_stages(void **state)
{
	struct mr_cc cc;
	struct mr_cc_params p = params();
	const double rai = 40e6, rhai = 400e6;
	double rc = (double)LINE, rt, a = 1.0, rc0;
	uint64_t t0 = 5 * US, now;
	(void)state;

	p.dcqcn_byte_counter = 1000000; /* 1 MB, so the test can drive BC events by sending */
	assert_int_equal(mr_cc_init(&cc, MR_CC_DCQCN, &p, 0), 0);
	/* two CNPs so that Rt < line and there is something to recover */
	cc.ops->on_cnp(&cc, t0);
	rc *= 1.0 - a / 2.0;
	a = 255.0 / 256 * a + 1.0 / 256;
	cc.ops->on_cnp(&cc, t0);
	rt = rc;
	rc *= 1.0 - a / 2.0;
	rc0 = rc;
	assert_true(cc.rate_bps == (uint64_t)rc);
	/* fast recovery: 5 timer events halve the distance to Rt each time */
	for (int i = 1; i <= 5; i++) {
		now = t0 + (uint64_t)i * 55 * US;
		run_timers(&cc, now);
		rc = (rt + rc) / 2.0;
		assert_true(cc.rate_bps == (uint64_t)rc);
	}
	/* after F stages Rc is within (Rt - Rc0)/32 of Rt: it "reached" the target */
	assert_true(rt - rc <= (rt - rc0) / 32.0 + 1.0);
	assert_true(rc < rt);
	/* additive increase: Rt += Rai, Rc = (Rt + Rc)/2, for timer events 6, 7, 8 */
	for (int i = 6; i <= 8; i++) {
		now = t0 + (uint64_t)i * 55 * US;
		run_timers(&cc, now);
		rt += rai;
		rc = (rt + rc) / 2.0;
		assert_true(cc.rate_bps == (uint64_t)rc);
	}
	/* byte counter: 1 MB sent = one BC event each. BC 1..5 while T = 8 > F: additive */
	for (int b = 1; b <= 5; b++) {
		mr_cc_sent(&cc, now, 1000000, 0);
		rt += rai;
		rc = (rt + rc) / 2.0;
		assert_true(cc.rate_bps == (uint64_t)rc);
	}
	/* BC = 6, 7 with T = 8: both past F -> hyper increase with i = min(T, BC) - F = 1, 2 */
	for (int b = 6; b <= 7; b++) {
		mr_cc_sent(&cc, now, 1000000, 0);
		rt += (double)(b - 5) * rhai;
		if (rt > (double)LINE)
			rt = (double)LINE;
		rc = (rt + rc) / 2.0;
		assert_true(cc.rate_bps == (uint64_t)rc);
	}
	/* sub-counter sends accumulate: 999,999 B is no event, one more byte is */
	mr_cc_sent(&cc, now, 999999, 0);
	assert_true(cc.rate_bps == (uint64_t)rc);
	mr_cc_sent(&cc, now, 1, 0);
	rt += 3.0 * rhai; /* min(T=8, BC=8) - F = 3 */
	if (rt > (double)LINE)
		rt = (double)LINE;
	rc = (rt + rc) / 2.0;
	assert_true(cc.rate_bps == (uint64_t)rc);
	/* a new CNP resets the stages: the next timer event is fast recovery again */
	now += 1;
	cc.ops->on_cnp(&cc, now);
	rt = rc;
	/* alpha: decayed by the alpha timer for 8 periods since the last CNP, then updated */
	for (int i = 0; i < 8; i++)
		a *= 255.0 / 256;
	rc *= 1.0 - a / 2.0;
	a = 255.0 / 256 * a + 1.0 / 256;
	assert_true(cc.rate_bps == (uint64_t)rc);
	run_timers(&cc, now + 55 * US);
	rc = (rt + rc) / 2.0;
	assert_true(cc.rate_bps == (uint64_t)rc);
}

/* Clamps: never below 1 Mb/s, never above line rate; back at line rate the timers stop. */
static void test_clamps(void **state)
{
	struct mr_cc cc;
	struct mr_cc_params p = params();
	uint64_t now = 0;
	(void)state;

	assert_int_equal(mr_cc_init(&cc, MR_CC_DCQCN, &p, 0), 0);
	for (int k = 0; k < 200; k++)
		cc.ops->on_cnp(&cc, now);
	assert_true(cc.rate_bps == 1000000);
	/* recover: fast recovery toward Rt = 1 Mb/s, then AI/HI up to line rate and stop */
	p.dcqcn_rhai_bps = 5000000000ull; /* make hyper increase reach line rate quickly */
	p.dcqcn_byte_counter = 1000;
	assert_int_equal(mr_cc_init(&cc, MR_CC_DCQCN, &p, 0), 0);
	cc.ops->on_cnp(&cc, 0);
	for (int i = 0; i < 4000 && cc.ops->next_timer(&cc) != UINT64_MAX; i++) {
		uint64_t t = cc.ops->next_timer(&cc);

		mr_cc_sent(&cc, t, 1000, 0);
		cc.ops->on_timer(&cc, t);
		assert_true(cc.rate_bps <= LINE);
		assert_true(cc.rate_bps >= 1000000);
		now = t;
	}
	assert_true(cc.rate_bps == LINE);
	/* the rate timer is off; only the alpha timer may remain, and it does not change rate */
	run_timers(&cc, now + 1000000000ull);
	assert_true(cc.ops->next_timer(&cc) == UINT64_MAX);
	assert_true(cc.rate_bps == LINE);
	/* a line rate below the 1 Mb/s floor clamps the floor too */
	p = params();
	p.line_rate_bps = 500000;
	assert_int_equal(mr_cc_init(&cc, MR_CC_DCQCN, &p, 0), 0);
	cc.ops->on_cnp(&cc, 0);
	assert_true(cc.rate_bps == 500000);
	/* a long idle is caught up in bounded work and leaves consistent deadlines */
	p = params();
	assert_int_equal(mr_cc_init(&cc, MR_CC_DCQCN, &p, 0), 0);
	cc.ops->on_cnp(&cc, 0);
	cc.ops->on_timer(&cc, 3600ull * 1000000000ull);
	assert_true(cc.ops->next_timer(&cc) > 3600ull * 1000000000ull);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_k_cnps_exact),
		cmocka_unit_test(test_alpha_decay),
		cmocka_unit_test(test_recovery_stages),
		cmocka_unit_test(test_clamps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
