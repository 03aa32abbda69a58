/* SPDX-License-Identifier: MIT
 * Unit tests of the simulated link alone: exact rate/latency arithmetic, the rotating loss mask,
 * seeded determinism, the Gilbert-Elliott burst statistics, duplication, reordering, tail drop
 * and corruption. Packets carry their send index so every test can check which ones arrived.
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

#include "sim/sim_link.h"
#include "sim/sim_rng.h"

#define PKT_LEN 1000

static void make_pkt(uint8_t *buf, uint32_t idx)
{
	memset(buf, (int)(idx & 0xff), PKT_LEN);
	memcpy(buf, &idx, sizeof(idx));
}

static uint32_t pkt_idx(const uint8_t *buf)
{
	uint32_t idx;

	memcpy(&idx, buf, sizeof(idx));
	return idx;
}

/* Drain every frame of the link (time jumps to each arrival) into idx[]/when[]. */
static size_t drain(struct mr_sim_link *l, uint32_t *idx, uint64_t *when, size_t max)
{
	uint8_t buf[PKT_LEN];
	size_t n = 0;
	uint64_t t;

	while ((t = mr_sim_link_next_arrival(l)) != UINT64_MAX) {
		int len = mr_sim_link_recv(l, t, buf, sizeof(buf));

		assert_int_equal(len, PKT_LEN);
		assert_true(n < max);
		idx[n] = pkt_idx(buf);
		if (when)
			when[n] = t;
		n++;
	}
	return n;
}

static void test_rate_latency_exact(void **state)
{
	struct mr_sim_link_cfg cfg;
	struct mr_sim_link *l;
	uint8_t buf[PKT_LEN];
	(void)state;

	mr_sim_link_cfg_init(&cfg);
	cfg.rate_bps = 1000000000ull; /* 1 Gb/s: 1000 B = 8000 ns */
	cfg.latency_ns = 10000;
	l = mr_sim_link_create(&cfg);
	assert_non_null(l);
	assert_int_equal(mr_sim_link_tx_time(l, 1000), 8000);
	assert_int_equal(mr_sim_link_tx_time(l, 1), 8);
	for (uint32_t i = 0; i < 3; i++) {
		make_pkt(buf, i);
		assert_int_equal(mr_sim_link_send(l, 0, buf, PKT_LEN), MR_SIM_FATE_QUEUED);
	}
	assert_int_equal(mr_sim_link_busy_until(l), 24000);
	assert_int_equal(mr_sim_link_backlog(l, 0), 3000);
	assert_int_equal(mr_sim_link_backlog(l, 8000), 2000);
	assert_int_equal(mr_sim_link_next_arrival(l), 18000);
	assert_int_equal(mr_sim_link_recv(l, 17999, buf, sizeof(buf)), 0);
	assert_int_equal(mr_sim_link_recv(l, 18000, buf, sizeof(buf)), PKT_LEN);
	assert_int_equal(pkt_idx(buf), 0);
	assert_int_equal(mr_sim_link_next_arrival(l), 26000);
	/* A packet sent when the transmitter is idle starts at once. */
	make_pkt(buf, 3);
	assert_int_equal(mr_sim_link_send(l, 100000, buf, 500), MR_SIM_FATE_QUEUED);
	assert_int_equal(mr_sim_link_busy_until(l), 104000);
	assert_int_equal(mr_sim_link_recv(l, 100000, buf, sizeof(buf)), PKT_LEN);
	assert_int_equal(mr_sim_link_recv(l, 100000, buf, sizeof(buf)), PKT_LEN);
	assert_int_equal(pkt_idx(buf), 2);
	assert_int_equal(mr_sim_link_next_arrival(l), 114000);
	assert_int_equal(mr_sim_link_recv(l, 114000, buf, sizeof(buf)), 500);
	assert_int_equal(mr_sim_link_next_arrival(l), UINT64_MAX);
	mr_sim_link_destroy(l);

	/* Rounding is up to the next whole ns: 8 bits at 3 b/s = 2.666...s. */
	cfg.rate_bps = 3;
	l = mr_sim_link_create(&cfg);
	assert_non_null(l);
	assert_int_equal(mr_sim_link_tx_time(l, 1), 2666666667ull);
	/* 100 Gb/s: 4096 B serialise in 327.68 ns -> 328. */
	mr_sim_link_destroy(l);
	cfg.rate_bps = 100000000000ull;
	l = mr_sim_link_create(&cfg);
	assert_non_null(l);
	assert_int_equal(mr_sim_link_tx_time(l, 4096), 328);
	mr_sim_link_destroy(l);
}

static void test_loss_mask_exact(void **state)
{
	struct mr_sim_link_cfg cfg;
	struct mr_sim_link *l;
	uint8_t buf[PKT_LEN];
	uint32_t idx[200];
	size_t n, k = 0, ndrop = 0;
	(void)state;

	mr_sim_link_cfg_init(&cfg);
	cfg.latency_ns = 1000;
	cfg.loss_mask = (1ull << 0) | (1ull << 2) | (1ull << 63);
	l = mr_sim_link_create(&cfg);
	assert_non_null(l);
	for (uint32_t i = 0; i < 200; i++) {
		uint32_t b = i % 64;
		bool masked = b == 0 || b == 2 || b == 63;

		make_pkt(buf, i);
		assert_int_equal(mr_sim_link_send(l, i * 10, buf, PKT_LEN),
				 masked ? MR_SIM_FATE_DROP_MASK : MR_SIM_FATE_QUEUED);
		ndrop += masked;
	}
	n = drain(l, idx, NULL, 200);
	assert_int_equal(ndrop, 11); /* 0,2,63,64,66,127,128,130,191,192,194 */
	assert_int_equal(n, 200 - ndrop);
	for (uint32_t i = 0; i < 200; i++) {
		uint32_t b = i % 64;

		if (b == 0 || b == 2 || b == 63)
			continue;
		assert_int_equal(idx[k], i); /* exactly the unmasked ones, in order */
		k++;
	}
	struct mr_sim_link_stats st;

	mr_sim_link_get_stats(l, &st);
	assert_int_equal(st.sent, 200);
	assert_int_equal(st.dropped[MR_SIM_FATE_DROP_MASK], 11);
	assert_int_equal(st.delivered, 189);
	mr_sim_link_destroy(l);
}

struct trace_ent {
	uint64_t t;
	uint32_t idx;
	uint32_t crc; /* cheap content digest: corruption must be reproducible too */
};

static size_t run_trace(uint64_t seed, struct trace_ent *tr, size_t max,
			struct mr_sim_link_stats *st)
{
	struct mr_sim_link_cfg cfg;
	struct mr_sim_link *l;
	uint8_t buf[PKT_LEN];
	size_t n = 0;

	mr_sim_link_cfg_init(&cfg);
	cfg.rate_bps = 10000000000ull;
	cfg.latency_ns = 5000;
	cfg.jitter_ns = 2000;
	cfg.loss = 0.05;
	cfg.reorder = 0.05;
	cfg.reorder_delay_ns = 7000;
	cfg.dup = 0.05;
	cfg.corrupt = 0.05;
	assert_int_equal(mr_sim_link_cfg_burst(&cfg, 3, 0.02), 0);
	cfg.seed = seed;
	l = mr_sim_link_create(&cfg);
	assert_non_null(l);
	for (uint32_t i = 0; i < 2000; i++) {
		make_pkt(buf, i);
		assert_true(mr_sim_link_send(l, (uint64_t)i * 500, buf, PKT_LEN) >= 0);
	}
	uint64_t t;

	while ((t = mr_sim_link_next_arrival(l)) != UINT64_MAX) {
		uint32_t h = 2166136261u;

		assert_int_equal(mr_sim_link_recv(l, t, buf, sizeof(buf)), PKT_LEN);
		for (int j = 0; j < PKT_LEN; j++)
			h = (h ^ buf[j]) * 16777619u; /* FNV-1a */
		assert_true(n < max);
		tr[n++] = (struct trace_ent){ t, pkt_idx(buf), h };
	}
	mr_sim_link_get_stats(l, st);
	mr_sim_link_destroy(l);
	return n;
}

static void test_seed_determinism(void **state)
{
	static struct trace_ent a[4000], b[4000], c[4000];
	struct mr_sim_link_stats sa, sb, sc;
	size_t na, nb, nc;
	(void)state;

	na = run_trace(42, a, 4000, &sa);
	nb = run_trace(42, b, 4000, &sb);
	nc = run_trace(43, c, 4000, &sc);
	assert_int_equal(na, nb);
	assert_memory_equal(a, b, na * sizeof(a[0]));
	assert_memory_equal(&sa, &sb, sizeof(sa));
	/* Every impairment actually happened. */
	assert_true(sa.dropped[MR_SIM_FATE_DROP_RANDOM] > 0);
	assert_true(sa.dropped[MR_SIM_FATE_DROP_BURST] > 0);
	assert_true(sa.duplicated > 0 && sa.reordered > 0 && sa.corrupted > 0);
	assert_int_equal(sa.delivered, na);
	assert_int_equal(sa.sent - sa.dropped[MR_SIM_FATE_DROP_RANDOM] -
				 sa.dropped[MR_SIM_FATE_DROP_BURST] + sa.duplicated,
			 na);
	/* Another seed: another trace. */
	assert_true(na != nc || memcmp(a, c, na * sizeof(a[0])) != 0);
}

static void test_rng_known_values(void **state)
{
	struct mr_sim_rng r1, r2;
	uint64_t st = 0;
	(void)state;

	/* splitmix64 from state 0: published first output 0xe220a8397b1dcdaf. */
	assert_int_equal(mr_sim_splitmix64(&st), 0xe220a8397b1dcdafull);
	mr_sim_rng_seed(&r1, 7);
	mr_sim_rng_seed(&r2, 7);
	for (int i = 0; i < 1000; i++) {
		double u = mr_sim_rng_unit(&r1);

		assert_true(u >= 0.0 && u < 1.0);
		assert_true(mr_sim_rng_upto(&r2, 9) <= 9);
	}
	assert_int_equal(mr_sim_rng_upto(&r1, 0), 0);
	assert_false(mr_sim_rng_chance(&r1, 0.0));
	assert_true(mr_sim_rng_chance(&r1, 1.0));
}

static void test_random_loss_rate(void **state)
{
	struct mr_sim_link_cfg cfg;
	struct mr_sim_link *l;
	struct mr_sim_link_stats st;
	uint8_t buf[64] = { 0 };
	const uint32_t n = 100000;
	(void)state;

	mr_sim_link_cfg_init(&cfg);
	cfg.loss = 0.01;
	cfg.seed = 1;
	l = mr_sim_link_create(&cfg);
	assert_non_null(l);
	for (uint32_t i = 0; i < n; i++) {
		assert_true(mr_sim_link_send(l, i, buf, sizeof(buf)) >= 0);
		while (mr_sim_link_recv(l, i, buf, sizeof(buf)) > 0)
			;
	}
	mr_sim_link_get_stats(l, &st);
	double rate = (double)st.dropped[MR_SIM_FATE_DROP_RANDOM] / n;

	print_message("random loss: %.4f%% of %u (target 1%%)\n", rate * 100, n);
	assert_true(rate > 0.009 && rate < 0.011);
	assert_int_equal(st.delivered + st.dropped[MR_SIM_FATE_DROP_RANDOM], n);
	mr_sim_link_destroy(l);
}

static void test_burst_mean_length(void **state)
{
	struct mr_sim_link_cfg cfg;
	struct mr_sim_link *l;
	struct mr_sim_link_stats st;
	uint8_t buf[64] = { 0 };
	const uint32_t n = 400000;
	uint64_t drops = 0, runs = 0;
	bool prev = false;
	(void)state;

	mr_sim_link_cfg_init(&cfg);
	assert_int_equal(mr_sim_link_cfg_burst(&cfg, 4.0, 0.05), 0);
	assert_int_equal(mr_sim_link_cfg_burst(&cfg, 0.5, 0.05), -EINVAL);
	assert_int_equal(mr_sim_link_cfg_burst(&cfg, 4.0, 1.0), -EINVAL);
	assert_int_equal(mr_sim_link_cfg_burst(&cfg, 4.0, 0.05), 0);
	cfg.seed = 99;
	l = mr_sim_link_create(&cfg);
	assert_non_null(l);
	for (uint32_t i = 0; i < n; i++) {
		bool lost = mr_sim_link_send(l, i, buf, sizeof(buf)) == MR_SIM_FATE_DROP_BURST;

		drops += lost;
		runs += lost && !prev;
		prev = lost;
		while (mr_sim_link_recv(l, i, buf, sizeof(buf)) > 0)
			;
	}
	mr_sim_link_get_stats(l, &st);
	double mean = (double)drops / (double)runs, rate = (double)drops / n;

	print_message("Gilbert-Elliott: loss %.3f%% (target 5%%), %llu bursts, mean burst %.3f "
		      "(target 4; back-to-back bursts merge, so slightly above)\n",
		      rate * 100, (unsigned long long)runs, mean);
	assert_true(rate > 0.045 && rate < 0.055);
	assert_true(mean > 3.8 && mean < 4.4);
	assert_int_equal(st.dropped[MR_SIM_FATE_DROP_BURST], drops);
	assert_true(st.ge_bad_entries >= runs);
	mr_sim_link_destroy(l);
}

static void test_duplication(void **state)
{
	struct mr_sim_link_cfg cfg;
	struct mr_sim_link *l;
	struct mr_sim_link_stats st;
	uint8_t buf[PKT_LEN];
	static uint32_t idx[30000];
	size_t n, extra = 0;
	(void)state;

	mr_sim_link_cfg_init(&cfg);
	cfg.latency_ns = 100;
	cfg.dup = 0.25;
	cfg.seed = 5;
	l = mr_sim_link_create(&cfg);
	assert_non_null(l);
	for (uint32_t i = 0; i < 10000; i++) {
		make_pkt(buf, i);
		assert_int_equal(mr_sim_link_send(l, i, buf, PKT_LEN), MR_SIM_FATE_QUEUED);
	}
	n = drain(l, idx, NULL, 30000);
	mr_sim_link_get_stats(l, &st);
	/* Every index arrives, in order; a copy directly follows its original. */
	uint32_t expect = 0;

	for (size_t i = 0; i < n; i++) {
		if (i > 0 && idx[i] == idx[i - 1]) {
			extra++;
			continue;
		}
		assert_int_equal(idx[i], expect);
		expect++;
	}
	assert_int_equal(expect, 10000);
	assert_int_equal(extra, st.duplicated);
	assert_int_equal(n, 10000 + st.duplicated);
	assert_true(st.duplicated > 2300 && st.duplicated < 2700);
	mr_sim_link_destroy(l);
}

static void test_reordering(void **state)
{
	struct mr_sim_link_cfg cfg;
	struct mr_sim_link *l;
	struct mr_sim_link_stats st;
	uint8_t buf[PKT_LEN];
	static uint32_t idx[2000];
	static bool seen[2000];
	size_t n, inversions = 0;
	(void)state;

	mr_sim_link_cfg_init(&cfg);
	cfg.rate_bps = 1000000000ull; /* 8 us per packet */
	cfg.latency_ns = 5000;
	cfg.reorder = 0.1;
	cfg.reorder_delay_ns = 20000; /* overtaken by ~2 packets */
	cfg.seed = 11;
	l = mr_sim_link_create(&cfg);
	assert_non_null(l);
	for (uint32_t i = 0; i < 2000; i++) {
		make_pkt(buf, i);
		assert_int_equal(mr_sim_link_send(l, (uint64_t)i * 8000, buf, PKT_LEN),
				 MR_SIM_FATE_QUEUED);
	}
	n = drain(l, idx, NULL, 2000);
	mr_sim_link_get_stats(l, &st);
	assert_int_equal(n, 2000);
	for (size_t i = 0; i < n; i++) {
		assert_false(seen[idx[i]]);
		seen[idx[i]] = true;
		if (i > 0 && idx[i] < idx[i - 1])
			inversions++;
	}
	assert_true(st.reordered > 150 && st.reordered < 250);
	/* Each held-back packet is overtaken by later ones: at least one inversion each,
	 * except when two consecutive ones are held back together. */
	assert_true(inversions > st.reordered / 2 && inversions <= st.reordered);
	mr_sim_link_destroy(l);
}

static void test_queue_tail_drop(void **state)
{
	struct mr_sim_link_cfg cfg;
	struct mr_sim_link *l;
	struct mr_sim_link_stats st;
	uint8_t buf[PKT_LEN];
	uint32_t idx[8];
	(void)state;

	mr_sim_link_cfg_init(&cfg);
	cfg.rate_bps = 1000000000ull;
	cfg.queue_bytes = 3000;
	l = mr_sim_link_create(&cfg);
	assert_non_null(l);
	for (uint32_t i = 0; i < 5; i++) {
		make_pkt(buf, i);
		assert_int_equal(mr_sim_link_send(l, 0, buf, PKT_LEN),
				 i < 3 ? MR_SIM_FATE_QUEUED : MR_SIM_FATE_DROP_QUEUE);
	}
	/* A dropped packet does not occupy the transmitter. */
	assert_int_equal(mr_sim_link_busy_until(l), 24000);
	/* At 8 us the first packet has left: room for exactly one more. */
	make_pkt(buf, 5);
	assert_int_equal(mr_sim_link_send(l, 8000, buf, PKT_LEN), MR_SIM_FATE_QUEUED);
	make_pkt(buf, 6);
	assert_int_equal(mr_sim_link_send(l, 8000, buf, PKT_LEN), MR_SIM_FATE_DROP_QUEUE);
	assert_int_equal(drain(l, idx, NULL, 8), 4);
	assert_int_equal(idx[3], 5);
	mr_sim_link_get_stats(l, &st);
	assert_int_equal(st.dropped[MR_SIM_FATE_DROP_QUEUE], 3);
	assert_int_equal(st.queue_peak_bytes, 3000);
	assert_int_equal(st.delivered, 4);
	mr_sim_link_destroy(l);
}

static void test_corruption_and_errors(void **state)
{
	struct mr_sim_link_cfg cfg;
	struct mr_sim_link *l;
	uint8_t buf[PKT_LEN], got[PKT_LEN];
	(void)state;

	mr_sim_link_cfg_init(&cfg);
	cfg.corrupt = 1.0;
	cfg.seed = 3;
	l = mr_sim_link_create(&cfg);
	assert_non_null(l);
	for (uint32_t i = 0; i < 100; i++) {
		int diff = 0;

		make_pkt(buf, i);
		assert_int_equal(mr_sim_link_send(l, i, buf, PKT_LEN), MR_SIM_FATE_QUEUED);
		assert_int_equal(mr_sim_link_recv(l, i, got, 10), -ENOSPC);
		assert_int_equal(mr_sim_link_recv(l, i, got, sizeof(got)), PKT_LEN);
		for (int j = 0; j < PKT_LEN; j++)
			diff += __builtin_popcount(buf[j] ^ got[j]);
		assert_int_equal(diff, 1); /* exactly one flipped bit */
	}
	assert_int_equal(mr_sim_link_send(l, 200, buf, 0), -EINVAL);
	assert_int_equal(mr_sim_link_send(l, 200, buf, 70000), -EINVAL);
	/* Cutting the link mid-run: loss 1 from the next packet on. */
	cfg.corrupt = 0;
	cfg.loss = 1.0;
	assert_int_equal(mr_sim_link_set_cfg(l, &cfg), 0);
	assert_int_equal(mr_sim_link_send(l, 300, buf, PKT_LEN), MR_SIM_FATE_DROP_RANDOM);
	assert_int_equal(mr_sim_link_in_flight(l), 0);
	mr_sim_link_destroy(l);
	assert_null(mr_sim_link_create(NULL));
	assert_int_equal(errno, EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rate_latency_exact),
		cmocka_unit_test(test_loss_mask_exact),
		cmocka_unit_test(test_rng_known_values),
		cmocka_unit_test(test_seed_determinism),
		cmocka_unit_test(test_random_loss_rate),
		cmocka_unit_test(test_burst_mean_length),
		cmocka_unit_test(test_duplication),
		cmocka_unit_test(test_reordering),
		cmocka_unit_test(test_queue_tail_drop),
		cmocka_unit_test(test_corruption_and_errors),
	};

	return cmocka_run_group_tests_name("sim_link", tests, NULL, NULL);
}
