/* SPDX-License-Identifier: MIT
 * MetaRoCE CC: fast start at the BDP, DCTCP-style cut on the ECN fraction, Swift-style cut on
 * delay above a flow-scaled target (at most once per RTT, only on packets sent after the last
 * cut), additive increase (faster without a queue), loss cuts only when clustered with
 * congestion, per-path penalties that rise on marks/delay/loss and decay, pacing = cwnd / srtt,
 * and malformed acks.
 * Expected values are recomputed here from the published rules (see metaroce_cc.c).
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cc/cc.h"

#define LINE 100000000000ull /* 100 Gb/s */
#define RTT 10000ull         /* 10 us */
#define BDP 125000.0         /* LINE * RTT / 8 */
#define TARGET 12000ull      /* RTT + 4 hops * 0.5 us, before flow scaling */
#define AI 256.0      /* max(BDP / 1024, 256 B) */
#define BOOST 2048.0  /* extra increase per RTT while rtt < min_rtt + 1 us: MTU / 2 */

/* Swift flow scaling (SIGCOMM'20 3.5): fs_range 10 us between 0.1 and 100 packets. */
/* The controller's pacing RTT: EWMA 1/8 of samples clamped at twice srtt (a host stall must not
 * inflate it a thousandfold: metaroce_cc.c). */
static double srtt_step(double srtt, double s)
{
	if (s > 2.0 * srtt)
		s = 2.0 * srtt;
	return srtt + (s - srtt) / 8;
}

static double target_of(double cwnd)
{
	double a = 10000.0 / (1.0 / sqrt(0.1) - 1.0 / sqrt(100.0)), b = -a / sqrt(100.0);
	double pk = cwnd / 4096.0, fs;

	if (pk < 0.1)
		pk = 0.1;
	fs = a / sqrt(pk) + b;
	if (fs > 10000.0)
		fs = 10000.0;
	return (double)TARGET + (fs > 0 ? fs : 0);
}

static void setup(struct mr_cc *cc)
{
	struct mr_cc_params p;

	memset(&p, 0, sizeof(p));
	p.line_rate_bps = LINE;
	p.base_rtt_ns = RTT;
	p.mtu = 4096;
	p.n_paths = 8;
	assert_int_equal(mr_cc_init(cc, MR_CC_METAROCE, &p, 0), 0);
}

static void ack(struct mr_cc *cc, uint64_t now, uint32_t pkts, uint32_t ce, uint64_t rtt,
		uint16_t path)
{
	struct mr_cc_ack a = {
		.now = now, .acked_bytes = pkts * 4096, .acked_pkts = pkts, .ce_pkts = ce,
		.rtt_ns = rtt, .path = path,
	};
	cc->ops->on_ack(cc, &a);
}

static uint64_t rate_of(double cwnd, double srtt)
{
	double r = cwnd * 8e9 / srtt;

	return r > (double)LINE ? LINE : (uint64_t)r;
}

static void test_fast_start(void **state)
{
	struct mr_cc cc;
	(void)state;

	setup(&cc);
	assert_true(cc.cwnd_bytes == (uint64_t)BDP);
	assert_true(cc.rate_bps == LINE); /* BDP / base_rtt = line rate */
	assert_true(cc.ops->next_timer(&cc) == UINT64_MAX);
	for (int i = 0; i < 8; i++)
		assert_int_equal(cc.path_penalty[i], 0);
	/* base_rtt 0 selects the 8 us default: cwnd = 100 Gb/s * 8 us = 100 KB */
	struct mr_cc_params p = cc.p;
	p.base_rtt_ns = 0;
	assert_int_equal(mr_cc_init(&cc, MR_CC_METAROCE, &p, 0), 0);
	assert_true(cc.cwnd_bytes == 100000);
}

/* DCTCP: alpha = 15/16 alpha + F/16 per RTT window; a marked window cuts cwnd *= 1 - alpha/2. */
static void test_ecn_fraction(void **state)
{
	struct mr_cc cc;
	double cwnd = BDP, alpha = 1.0;
	(void)state;

	setup(&cc);
	/* all marked, window closes at 10 us: F = 1, alpha stays 1, cwnd halves */
	ack(&cc, RTT, 1, 1, RTT, 0);
	alpha = 15.0 / 16 * alpha + 1.0 / 16;
	cwnd *= 1 - alpha / 2;
	assert_true(cc.cwnd_bytes == (uint64_t)cwnd);
	assert_true(cc.rate_bps == rate_of(cwnd, RTT));
	/* next window [10, 20] us: half the packets marked; mid-window acks change nothing
	 * (marked -> no increase; cut at most once per RTT) */
	ack(&cc, RTT + 1000, 2, 1, RTT, 0);
	assert_true(cc.cwnd_bytes == (uint64_t)cwnd);
	ack(&cc, RTT + 5000, 2, 1, RTT, 1);
	assert_true(cc.cwnd_bytes == (uint64_t)cwnd);
	/* the window [10, 20] us closes with F = 4/8, but a cut needs a sample sent one srtt
	 * after the previous one (10 us): the ACK at 20 us is for a packet sent at 10 us */
	ack(&cc, 2 * RTT + 1, 0, 0, RTT, 1);
	alpha = 15.0 / 16 * alpha + 0.5 / 16;
	assert_true(cc.cwnd_bytes == (uint64_t)cwnd);
	ack(&cc, 3 * RTT + 1, 4, 2, RTT, 1); /* closes the next window: F = 2/4, sent at 20 us */
	alpha = 15.0 / 16 * alpha + 0.5 / 16;
	cwnd *= 1 - alpha / 2;
	assert_true(cc.cwnd_bytes == (uint64_t)cwnd);
	/* an unmarked window: alpha decays, no cut; acks below target grow cwnd by
	 * ai*acked/cwnd, and by BOOST*acked/cwnd more while rtt is at min_rtt (no queue) */
	ack(&cc, 3 * RTT + 100, 1, 0, RTT, 2);
	cwnd += AI * 4096 / cwnd;
	cwnd += BOOST * 4096 / cwnd;
	assert_true(cc.cwnd_bytes == (uint64_t)cwnd);
	ack(&cc, 4 * RTT + 100, 1, 0, RTT + 1000, 2); /* window closes with F = 0; 1 us queue */
	alpha = 15.0 / 16 * alpha;
	cwnd += AI * 4096 / cwnd;
	assert_true(cc.cwnd_bytes == (uint64_t)cwnd);
	/* a lightly marked window (1 of 16) cuts by the small alpha, not by half */
	ack(&cc, 4 * RTT + 200, 15, 0, RTT + 1000, 3);
	cwnd += AI * 15 * 4096 / cwnd;
	ack(&cc, 5 * RTT + 400, 1, 1, RTT, 3); /* srtt grew to ~10.2 us: the window closes */
	alpha = 15.0 / 16 * alpha + (1.0 / 16) / 16;
	cwnd *= 1 - alpha / 2;
	assert_true(cc.cwnd_bytes == (uint64_t)cwnd);
	assert_true(alpha < 0.85 && alpha > 0.8);
}

/* Swift: rtt above target -> cwnd *= max(1 - 0.5 (rtt - target)/rtt, 0.5), once per srtt and
 * only on a packet sent at least one srtt after the previous cut; target = 12 us + flow scaling of cwnd. */
static void test_delay_reaction(void **state)
{
	struct mr_cc cc;
	double cwnd = BDP, srtt = RTT, t;
	(void)state;

	setup(&cc);
	t = target_of(cwnd);
	assert_true(t > 12200 && t < 12300); /* ~30 packets: +0.26 us */
	ack(&cc, 1000, 1, 0, 20000, 0); /* 20 us against a ~12.3 us target */
	srtt = 20000.0;                 /* the first sample initialises srtt */
	cwnd *= 1 - 0.5 * (20000.0 - (uint64_t)t) / 20000.0;
	assert_true(cc.cwnd_bytes == (uint64_t)cwnd);
	assert_true(cc.rate_bps == rate_of(cwnd, srtt));
	/* still high within one srtt: no second cut, and no increase either */
	ack(&cc, 1000 + 11000, 1, 0, 20000, 0); /* 11 us after the cut, srtt 20 us */
	srtt = srtt_step(srtt, 20000.0);
	assert_true(cc.cwnd_bytes == (uint64_t)cwnd);
	/* one srtt later but the packet left before the cut: it shows the old queue, no cut */
	ack(&cc, 1000 + 30000, 1, 0, 100000, 0);
	srtt = srtt_step(srtt, 100000.0);
	assert_true(cc.cwnd_bytes == (uint64_t)cwnd);
	/* sent after the cut but within one srtt (~30 us) of it: the queue the cut leaves is
	 * still draining, no cut */
	ack(&cc, 1000 + 105000, 1, 0, 100000, 0);
	srtt = srtt_step(srtt, 100000.0);
	assert_true(cc.cwnd_bytes == (uint64_t)cwnd);
	/* a huge delay on a packet sent one srtt (~46 us) after the cut: cut by the excess (with
	 * beta 0.5 the max_mdf 0.5 floor is never reached) */
	t = (double)(uint64_t)target_of(cwnd);
	ack(&cc, 1000 + 150000, 1, 0, 100000, 0);
	srtt = srtt_step(srtt, 100000.0);
	cwnd *= 1 - 0.5 * (100000.0 - t) / 100000.0;
	assert_true(cwnd < 0.57 * 100825.0 && cwnd > 0.55 * 100825.0);
	assert_true(cc.cwnd_bytes == (uint64_t)cwnd);
	assert_true(cc.rate_bps == rate_of(cwnd, srtt));
	/* below target (11 us, 1 us above min_rtt 10 us... min is 20 us here): additive increase
	 * plus the no-queue boost (11 us < min_rtt 20 us + 1 us) */
	ack(&cc, 160000, 2, 0, 11000, 0);
	srtt = srtt_step(srtt, 11000.0);
	cwnd += AI * 8192 / cwnd;
	cwnd += BOOST * 8192 / cwnd;
	assert_true(cc.cwnd_bytes == (uint64_t)cwnd);
	assert_true(cc.rate_bps == rate_of(cwnd, srtt));
	/* 12 us, 1 us after the 11 us sample: the delay signal is the standing RTT (Copa: the
	 * minimum over the last srtt/4..srtt/2), still 11 us: increase and boost again */
	ack(&cc, 161000, 2, 0, 12000, 0);
	srtt = srtt_step(srtt, 12000.0);
	cwnd += AI * 8192 / cwnd;
	cwnd += BOOST * 8192 / cwnd;
	assert_true(cc.cwnd_bytes == (uint64_t)cwnd);
	/* a lone 12 us sample once both buckets expired: 1 us above min_rtt (11 us), additive
	 * increase only */
	ack(&cc, 200000, 2, 0, 12000, 0);
	srtt = srtt_step(srtt, 12000.0);
	cwnd += AI * 8192 / cwnd;
	assert_true(cc.cwnd_bytes == (uint64_t)cwnd);
	/* exactly at target counts as "above" (cut factor 1 -> no cut, no increase) */
	uint64_t before = cc.cwnd_bytes;
	ack(&cc, 240000, 1, 0, (uint64_t)target_of(cwnd), 0);
	assert_true(cc.cwnd_bytes == before);
	/* small windows get a higher target (Swift 3.5): at 1 packet, +2.94 us */
	t = target_of(4096.0) - (double)TARGET;
	assert_true(t > 2900 && t < 3000);
	assert_true(target_of(0.0) - (double)TARGET == 10000.0);
	assert_true(target_of(1e6) == (double)TARGET);
}

/* Growth is capped at 2 BDP; cuts floor at 256 B, where the gate stays at one MTU and pacing
 * alone spaces single packets (Swift sub-packet windows). */
static void test_bounds_and_pacing(void **state)
{
	struct mr_cc cc;
	uint64_t now = 0;
	(void)state;

	setup(&cc);
	for (int i = 0; i < 100000; i++)
		ack(&cc, now += 100, 1, 0, RTT, 0);
	assert_true(cc.cwnd_bytes == (uint64_t)(2 * BDP));
	assert_true(cc.rate_bps == LINE);
	for (int i = 0; i < 40; i++)
		ack(&cc, now += 200000, 1, 1, RTT, 0);
	assert_true(cc.cwnd_bytes == 4096); /* gate: max(cwnd, 1 MTU) */
	/* rate = 256 B / 10 us = 204.8 Mb/s; one 4096 B packet may leave (inflight 0 < 256),
	 * then the next waits 4096 * 8 / 204.8e6 s = 160 us (the catch-up credit spent first) */
	assert_true(cc.rate_bps == 204800000);
	assert_true(mr_cc_can_send(&cc, now, 0));
	cc.next_send_ns = now; /* no catch-up credit */
	mr_cc_sent(&cc, now, 4096, 0);
	assert_false(mr_cc_can_send(&cc, now + 1, 0));
	assert_true(cc.next_send_ns == now + 160000);
	assert_false(mr_cc_can_send(&cc, now + 160000, 4096)); /* window full */
	assert_true(mr_cc_can_send(&cc, now + 160000, 0));
}

static uint16_t ce_of(uint32_t pen)
{
	return (uint16_t)(pen >> 16);
}

static uint16_t dly_of(uint32_t pen)
{
	return (uint16_t)(pen & 0xffff);
}

/* Per-path scores: marks dominate, delay second, loss counts as marks; all decay. */
static void test_path_penalty(void **state)
{
	struct mr_cc cc;
	uint32_t prev = 0;
	(void)state;

	setup(&cc);
	for (int i = 0; i < 6; i++) {
		ack(&cc, 100 + (uint64_t)i, 1, 1, RTT, 3);  /* marked */
		assert_true(cc.path_penalty[3] > prev);
		prev = cc.path_penalty[3];
	}
	/* EWMA gain 1/4 toward 65535: 16383, 28671, 37887, 44799, 49983, 53871 */
	assert_int_equal(ce_of(cc.path_penalty[3]), 53871);
	ack(&cc, 200, 1, 0, RTT + 6400, 5); /* delayed by 6.4 us = 100 units, not marked */
	assert_int_equal(ce_of(cc.path_penalty[5]), 0);
	assert_int_equal(dly_of(cc.path_penalty[5]), 25);
	ack(&cc, 201, 1, 0, RTT, 6);          /* clean path */
	assert_int_equal(cc.path_penalty[6], 0);
	assert_true(cc.path_penalty[3] > cc.path_penalty[5]);
	assert_true(cc.path_penalty[5] > cc.path_penalty[6]);
	cc.ops->on_loss(&cc, 300, 4096, 2);
	assert_int_equal(ce_of(cc.path_penalty[2]), 16383);
	assert_true(cc.path_penalty[2] > cc.path_penalty[5]);
	/* decay: every base_rtt each half loses ceil(x/8) until everything is back to 0 */
	uint64_t t = cc.ops->next_timer(&cc);
	assert_true(t == 100 + RTT);
	uint32_t p3 = cc.path_penalty[3], p2 = cc.path_penalty[2];
	cc.ops->on_timer(&cc, t);
	assert_int_equal(ce_of(cc.path_penalty[3]), ce_of(p3) - (ce_of(p3) + 7) / 8);
	assert_int_equal(ce_of(cc.path_penalty[2]), ce_of(p2) - (ce_of(p2) + 7) / 8);
	assert_true(cc.ops->next_timer(&cc) == t + RTT);
	cc.ops->on_timer(&cc, t + 5); /* early call: nothing happens */
	assert_true(cc.ops->next_timer(&cc) == t + RTT);
	int rounds = 0;
	while ((t = cc.ops->next_timer(&cc)) != UINT64_MAX && rounds < 1000) {
		uint32_t before = cc.path_penalty[3];

		cc.ops->on_timer(&cc, t);
		assert_true(cc.path_penalty[3] < before || before == 0);
		rounds++;
	}
	assert_true(rounds < 200);
	for (int i = 0; i < 8; i++)
		assert_int_equal(cc.path_penalty[i], 0);
	/* a marked path that becomes clean recovers through its own acks as well */
	for (int i = 0; i < 4; i++)
		ack(&cc, 1000000, 1, 1, RTT, 1);
	prev = cc.path_penalty[1];
	ack(&cc, 1000001, 1, 0, RTT, 1);
	assert_true(cc.path_penalty[1] < prev);
}

static void test_loss_timeout_cnp(void **state)
{
	struct mr_cc cc;
	double cwnd = BDP;
	(void)state;

	setup(&cc);
	/* isolated loss (no CE, no delay): the path is penalised, the window is not cut
	 * (IRN / SRD: loss is not congestion on its own) */
	cc.ops->on_loss(&cc, 1000, 4096, 0);
	assert_true(cc.cwnd_bytes == (uint64_t)cwnd);
	assert_int_equal(cc.path_penalty[0] >> 16, 16383);
	/* loss clustered with congestion: a CE-marked ack in the same window (no cut yet: the
	 * DCTCP window is still open), then a loss: the max_mdf cut */
	ack(&cc, 1500, 1, 1, RTT, 1);
	cc.ops->on_loss(&cc, 2000, 4096, 0);
	cwnd *= 0.5;
	assert_true(cc.cwnd_bytes == (uint64_t)cwnd);
	cc.ops->on_loss(&cc, 3000, 4096, 0); /* same RTT: no second cut */
	assert_true(cc.cwnd_bytes == (uint64_t)cwnd);
	/* still marked (this ack's packet left before the cut: no ECN cut on it), then a loss
	 * one RTT after the cut: cut; path 9 out of range ignored */
	ack(&cc, 1500 + RTT, 1, 1, RTT, 1);
	assert_true(cc.cwnd_bytes == (uint64_t)cwnd);
	cc.ops->on_loss(&cc, 2000 + RTT, 4096, 9);
	cwnd *= 0.5;
	assert_true(cc.cwnd_bytes == (uint64_t)cwnd);
	/* long after the last congestion signal: isolated again, no cut */
	cc.ops->on_loss(&cc, 2000 + 10 * RTT, 4096, 0);
	assert_true(cc.cwnd_bytes == (uint64_t)cwnd);
	cc.ops->on_timeout(&cc, 1000 + RTT + 1); /* timeouts always halve */
	cwnd *= 0.5;
	assert_true(cc.cwnd_bytes == (uint64_t)cwnd);
	cc.ops->on_cnp(&cc, 1000 + 3 * RTT); /* CNP: DCTCP cut with alpha = 1 */
	cwnd *= 0.5;
	assert_true(cc.cwnd_bytes == (uint64_t)cwnd);
	assert_true(cc.rate_bps == rate_of(cwnd, RTT));
}

static void test_malformed_acks(void **state)
{
	struct mr_cc cc, ref;
	(void)state;

	setup(&cc);
	setup(&ref);
	/* empty ack: nothing changes */
	ack(&cc, 5, 0, 0, 0, 0);
	assert_memory_equal(&cc, &ref, sizeof(cc));
	/* path beyond n_paths: no penalty written anywhere, cwnd logic still runs */
	ack(&cc, 6, 1, 0, RTT, 200);
	ack(&cc, 7, 1, 0, RTT, UINT16_MAX);
	for (int i = 0; i < MR_CC_MAX_PATHS; i++)
		assert_int_equal(cc.path_penalty[i], 0);
	assert_true(cc.cwnd_bytes > ref.cwnd_bytes);
	/* more CE than packets: treated as all marked */
	setup(&cc);
	ack(&cc, RTT, 1, 1000, RTT, 4);
	assert_int_equal(ce_of(cc.path_penalty[4]), 16383);
	assert_true(cc.cwnd_bytes == (uint64_t)(BDP / 2));
	/* CE with zero packets: no division by zero, no mark */
	ack(&cc, RTT + 1, 0, 3, RTT, 4);
	assert_true(cc.cwnd_bytes == (uint64_t)(BDP / 2));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fast_start),
		cmocka_unit_test(test_ecn_fraction),
		cmocka_unit_test(test_delay_reaction),
		cmocka_unit_test(test_bounds_and_pacing),
		cmocka_unit_test(test_path_penalty),
		cmocka_unit_test(test_loss_timeout_cnp),
		cmocka_unit_test(test_malformed_acks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
