/* SPDX-License-Identifier: MIT
 * The light-load sleep's length rule (apps/metaroced/load_nap.h), driven by a model of the
 * receiving engine: frames arrive at a steady rate, an iteration after a sleep of n us finds
 * rate x n of them (and drains them all: MR_RX_DRAIN_BURSTS), and the rule picks the next
 * sleep from that work. Session 13's bulk receiver at 1.4 Mframes/s settled at 12-25 us sleeps
 * with the old rule (halve at one 32-frame rx burst); the rule must let it sleep the cap.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "apps/metaroced/load_nap.h"

#define CAP 100u

/* Runs the model for iters sleep/drain cycles at frames_per_us (x1000 to stay integral);
 * returns the last sleep and counts the sleeps shorter than the cap in the second half. */
static uint32_t run_model(uint32_t per_ms, unsigned int iters, unsigned int *short_naps)
{
	uint32_t nap = 0;

	*short_naps = 0;
	for (unsigned int i = 0; i < iters; i++) {
		/* an engine that never slept still finds the frames of its own iteration (1 us) */
		unsigned int work = (unsigned int)(((uint64_t)(nap ? nap : 1) * per_ms) / 1000);

		nap = mr_load_nap_next(nap, work, false, CAP);
		if (i >= iters / 2 && nap < CAP)
			(*short_naps)++;
	}
	return nap;
}

/* The bulk receiver: 1.4 frames/us gathers 140 frames in a 100 us sleep, under the 256 that
 * would grow it no further: it sleeps the cap every time, once it got there. */
static void test_bulk_receiver_sleeps_the_cap(void **state)
{
	unsigned int short_naps;

	(void)state;
	assert_int_equal(run_model(1400, 200, &short_naps), CAP);
	assert_int_equal(short_naps, 0);
}

/* Above MR_LOAD_NAP_GATHER per sleep (6 frames/us: 600 in 100 us) the sleep shrinks until an
 * iteration gathers between half of it and all of it, and stays there: never the cap, never
 * less than what gathers 256 frames. */
static void test_heavy_load_sleeps_shorter(void **state)
{
	uint32_t nap = 0, lo = UINT32_MAX, hi = 0;

	(void)state;
	for (unsigned int i = 0; i < 200; i++) {
		unsigned int work = (unsigned int)((uint64_t)(nap ? nap : 1) * 6);

		nap = mr_load_nap_next(nap, work, false, CAP);
		if (i >= 100) {
			lo = nap < lo ? nap : lo;
			hi = nap > hi ? nap : hi;
		}
	}
	assert_true(hi < CAP);
	assert_true(lo * 6 >= MR_LOAD_NAP_GATHER / 2 / 2); /* a halving from >= 256 frames */
	assert_true(hi * 6 < 2 * MR_LOAD_NAP_GATHER);
}

/* A saturated sender never sleeps, whatever it slept before; the next unsaturated iteration
 * starts again from 1 us. */
static void test_saturated_sender_does_not_sleep(void **state)
{
	(void)state;
	assert_int_equal(mr_load_nap_next(CAP, 0, true, CAP), 0);
	assert_int_equal(mr_load_nap_next(37, 5000, true, CAP), 0);
	assert_int_equal(mr_load_nap_next(0, 0, false, CAP), 1);
}

/* An idle engine's sleep doubles from 1 us to the cap and stays there; the cap holds for any
 * start, including a sleep left from a larger cap. */
static void test_idle_doubles_to_the_cap(void **state)
{
	static const uint32_t want[] = { 1, 2, 4, 8, 16, 32, 64, CAP, CAP };
	uint32_t nap = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		nap = mr_load_nap_next(nap, 0, false, CAP);
		assert_int_equal(nap, want[i]);
	}
	assert_int_equal(mr_load_nap_next(1000, 0, false, CAP), CAP);
	assert_int_equal(mr_load_nap_next(1000, 0, false, 1000), 1000); /* config maximum */
	/* between half and all of MR_LOAD_NAP_GATHER: unchanged */
	assert_int_equal(mr_load_nap_next(40, MR_LOAD_NAP_GATHER / 2, false, CAP), 40);
	assert_int_equal(mr_load_nap_next(40, MR_LOAD_NAP_GATHER, false, CAP), 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bulk_receiver_sleeps_the_cap),
		cmocka_unit_test(test_heavy_load_sleeps_shorter),
		cmocka_unit_test(test_saturated_sender_does_not_sleep),
		cmocka_unit_test(test_idle_doubles_to_the_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
