/* SPDX-License-Identifier: MIT
 * The engine's clock (apps/metaroced/tsc_clock.h) against a simulated TSC: in step with its
 * calibration, 50x slow (what session 12's memif blaster saw: 13 s became 11 minutes), 2x fast,
 * stopped for a while, and jumping. Real time advances 1 ms per step, as the engine checks
 * every few thousand iterations; the clock is read at every step and must never step back and
 * must stay, or come back, within the tolerance of CLOCK_MONOTONIC (plus the lead it may keep
 * after a fast TSC) with a corrected rate.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "apps/metaroced/tsc_clock.h"

#define HZ 2096000000ull  /* DPDK's calibrated rate on this host */
#define STEP_NS 1000000ull
#define T0_REAL 5000000000ull
#define T0_TSC 123456789ull

struct sim {
	struct mr_tsc_clock c;
	uint64_t real, tsc, last;
	double tsc_frac;           /* sub-tick remainder */
	unsigned int backwards;
	unsigned int resyncs;      /* mr_tsc_clock_check's re-anchorings */
};

static void sim_init(struct sim *s)
{
	s->real = T0_REAL;
	s->tsc = T0_TSC;
	s->tsc_frac = 0;
	s->backwards = 0;
	s->resyncs = 0;
	mr_tsc_clock_init(&s->c, HZ, s->tsc, s->real);
	s->last = mr_tsc_clock_ns(&s->c, s->tsc);
}

/* steps of 1 ms real time with the TSC at ticks_per_ns; the writer checks every step. */
static void sim_run(struct sim *s, unsigned int steps, double ticks_per_ns)
{
	for (unsigned int i = 0; i < steps; i++) {
		double t = (double)STEP_NS * ticks_per_ns + s->tsc_frac;
		uint64_t v;

		s->tsc += (uint64_t)t;
		s->tsc_frac = t - (double)(uint64_t)t;
		s->real += STEP_NS;
		v = mr_tsc_clock_ns(&s->c, s->tsc);
		if (v < s->last)
			s->backwards++;
		s->last = v;
		s->resyncs += (unsigned int)mr_tsc_clock_check(&s->c, s->tsc, s->real);
		v = mr_tsc_clock_ns(&s->c, s->tsc);
		if (v < s->last)
			s->backwards++;
		s->last = v;
	}
}

static uint64_t absdiff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/* How far the clock moves over the next second of real time, in ns. */
static uint64_t advance_per_s(struct sim *s, double ticks_per_ns)
{
	uint64_t a = s->last;

	sim_run(s, 1000, ticks_per_ns);
	return s->last - a;
}

/* The clock advances at real time's rate again, within 0.1 %, over one more second. */
static void assert_real_rate(struct sim *s, double ticks_per_ns)
{
	assert_true(absdiff(advance_per_s(s, ticks_per_ns), 1000000000ull) < 1000000ull);
}

static void test_in_step_never_resyncs(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s);
	sim_run(&s, 10000, (double)HZ / 1e9);
	assert_int_equal(s.resyncs, 0);
	assert_int_equal(s.backwards, 0);
	assert_true(absdiff(s.last, s.real) < 10000); /* 10 us after 10 s */
}

/* 1e-4 off the calibration (0.1 ms per s): still no re-anchoring for 1 s, and the drift is
 * caught (once) before it exceeds the tolerance by much. */
static void test_small_calibration_error(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s);
	sim_run(&s, 1000, (double)HZ / 1e9 * (1.0 + 1e-4));
	assert_int_equal(s.resyncs, 0);
	sim_run(&s, 9000, (double)HZ / 1e9 * (1.0 + 1e-4));
	assert_true(s.resyncs >= 1 && s.resyncs <= 10);
	assert_int_equal(s.backwards, 0);
	assert_true(absdiff(s.last, s.real + s.c.off) <= MR_TSC_CLOCK_TOL_NS + STEP_NS);
}

/* The TSC at 1/50 of its calibrated rate: the clock is re-anchored on CLOCK_MONOTONIC within
 * a few steps, its rate corrected: one real second moves it one second (not 20 ms). */
static void test_slow_tsc_follows_real_time(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s);
	sim_run(&s, 100, (double)HZ / 1e9);
	sim_run(&s, 100, (double)HZ / 1e9 / 50);
	assert_true(s.resyncs >= 1);
	assert_true(absdiff(s.last, s.real) <= MR_TSC_CLOCK_TOL_NS + STEP_NS);
	assert_real_rate(&s, (double)HZ / 1e9 / 50);
	assert_int_equal(s.backwards, 0);
	assert_int_equal(s.c.off, 0);
}

/* The TSC at twice its rate: the clock may not step back, so it keeps its lead, but from the
 * re-anchoring on it runs at real time's rate. */
static void test_fast_tsc_keeps_lead_not_rate(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s);
	sim_run(&s, 100, (double)HZ / 1e9 * 2);
	assert_true(s.resyncs >= 1);
	/* the lead: what the 2x TSC gained until its rate was measured (one interval) */
	assert_true(s.c.off > 0 && s.c.off <= MR_TSC_CLOCK_RATE_MIN_NS + MR_TSC_CLOCK_TOL_NS +
					       2 * STEP_NS);
	assert_real_rate(&s, (double)HZ / 1e9 * 2);
	assert_int_equal(s.backwards, 0);
}

/* The TSC stops for 100 ms (a vCPU whose TSC is not advanced): the clock stands, then jumps
 * forward to real time at the next check; the rate measured across the stop is fixed once the
 * TSC runs again. */
static void test_stopped_tsc(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s);
	sim_run(&s, 100, (double)HZ / 1e9);
	sim_run(&s, 100, 0.0);
	assert_true(s.resyncs >= 1);
	assert_true(absdiff(s.last, s.real) <= MR_TSC_CLOCK_TOL_NS + STEP_NS);
	sim_run(&s, 2000, (double)HZ / 1e9);
	assert_real_rate(&s, (double)HZ / 1e9);
	assert_true(absdiff(s.last, s.real + s.c.off) <= MR_TSC_CLOCK_TOL_NS + STEP_NS);
	assert_int_equal(s.backwards, 0);
}

/* The TSC jumps 1 s ahead once: the clock keeps the second (never back) and its rate comes
 * back to real time's. */
static void test_tsc_jump(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s);
	sim_run(&s, 100, (double)HZ / 1e9);
	s.tsc += HZ;
	sim_run(&s, 2000, (double)HZ / 1e9);
	assert_real_rate(&s, (double)HZ / 1e9);
	assert_true(s.c.off <= 1000000000ull + MR_TSC_CLOCK_TOL_NS + STEP_NS);
	assert_int_equal(s.backwards, 0);
}

/* A TSC read before the anchor (another thread's) counts as the anchor, not as 2^64 ticks. */
static void test_tsc_before_anchor(void **state)
{
	struct mr_tsc_clock c;

	(void)state;
	mr_tsc_clock_init(&c, HZ, 1000000, 7000);
	assert_int_equal(mr_tsc_clock_ns(&c, 999999), 7000);
	/* one second of ticks: a second, to the nanosecond (mult is rounded down) */
	assert_true(absdiff(mr_tsc_clock_ns(&c, 1000000 + HZ), 7000 + 1000000000ull) <= 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_step_never_resyncs),
		cmocka_unit_test(test_small_calibration_error),
		cmocka_unit_test(test_slow_tsc_follows_real_time),
		cmocka_unit_test(test_fast_tsc_keeps_lead_not_rate),
		cmocka_unit_test(test_stopped_tsc),
		cmocka_unit_test(test_tsc_jump),
		cmocka_unit_test(test_tsc_before_anchor),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
