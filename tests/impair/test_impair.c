/* SPDX-License-Identifier: MIT
 * Unit tests of the impairment stage: config strings (values and errors naming the field), loss
 * rates against binomial bounds, Gilbert-Elliott burst lengths, per-entropy loss, corruption
 * that the RoCE parser must always reject (ICRC / IP checksum), CE marking from the modelled
 * queue (only ECT, IPv4 checksum and ICRC still valid), delay/jitter/reorder/dup through the
 * delay queue, direction independence, and bad input. Frames are real RoCE v2 frames built by
 * mr_frame_build(). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "impair/impair.h"
#include "wire/roce_pkt.h"

static uint8_t payload[4096];

/* A RoCE v2 SEND ONLY frame with `plen` payload bytes; tclass carries the ECN field. */
static int build(uint8_t *buf, uint32_t cap, uint16_t sport, uint8_t tclass, uint32_t psn,
		 uint32_t plen, bool ipv6)
{
	struct mr_path p;
	struct mr_roce_hdrs h;
	struct mr_iov iov = { payload, plen };

	memset(&p, 0, sizeof(p));
	memcpy(p.smac, (uint8_t[6]){ 2, 0, 0, 0, 0, 1 }, 6);
	memcpy(p.dmac, (uint8_t[6]){ 2, 0, 0, 0, 0, 2 }, 6);
	p.ipv6 = ipv6;
	if (ipv6) {
		p.sgid[0] = 0xfd;
		p.sgid[15] = 1;
		p.dgid[0] = 0xfd;
		p.dgid[15] = 2;
	} else {
		p.sgid[10] = p.sgid[11] = p.dgid[10] = p.dgid[11] = 0xff;
		memcpy(p.sgid + 12, (uint8_t[4]){ 10, 0, 0, 1 }, 4);
		memcpy(p.dgid + 12, (uint8_t[4]){ 10, 0, 0, 2 }, 4);
	}
	p.ttl = 64;
	p.tclass = tclass;
	p.udp_sport = sport;
	memset(&h, 0, sizeof(h));
	h.opcode = MR_OP_RC_SEND_ONLY;
	h.pkey = 0xffff;
	h.dqpn = 0x123;
	h.psn = psn;
	return mr_frame_build(buf, cap, &p, (uint16_t)psn, &h, &iov, 1);
}

static struct mr_impair *make(const char *spec)
{
	struct mr_impair_cfg c;
	char err[128];
	struct mr_impair *im;

	mr_impair_cfg_init(&c);
	if (mr_impair_cfg_parse(&c, spec, err, sizeof(err)) != 0)
		fail_msg("parse '%s': %s", spec, err);
	im = mr_impair_create(&c);
	assert_non_null(im);
	return im;
}

static void test_cfg_parse(void **state)
{
	struct mr_impair_cfg c;
	char err[128] = "";

	(void)state;
	mr_impair_cfg_init(&c);
	assert_int_equal(mr_impair_cfg_parse(&c, "loss=0.01,burst=4,reorder=0.02:20us,dup=0.001,"
					     "corrupt=1e-4,delay=10us,jitter=2us,ecn=rate:10g,"
					     "k:64k,entropy_loss=3:0.5,seed=7", err,
					     sizeof(err)), 0);
	assert_true(fabs(c.loss - 0.01) < 1e-12);
	assert_true(fabs(c.burst - 4) < 1e-12);
	assert_true(fabs(c.reorder - 0.02) < 1e-12);
	assert_int_equal(c.reorder_ns, 20000);
	assert_true(fabs(c.dup - 0.001) < 1e-12);
	assert_true(fabs(c.corrupt - 1e-4) < 1e-12);
	assert_int_equal(c.delay_ns, 10000);
	assert_int_equal(c.jitter_ns, 2000);
	assert_int_equal(c.ecn_rate_bps, 10000000000ull);
	assert_int_equal(c.ecn_k_bytes, 65536);
	assert_int_equal(c.n_entropy, 1);
	assert_int_equal(c.entropy[0].entropy, 3);
	assert_true(fabs(c.entropy[0].loss - 0.5) < 1e-12);
	assert_int_equal(c.seed, 7);
	/* both spellings of the ECN parameters */
	mr_impair_cfg_init(&c);
	assert_int_equal(mr_impair_cfg_parse(&c, "ecn=rate:25g:k:100k,loss=1%", err, sizeof(err)),
			 0);
	assert_int_equal(c.ecn_rate_bps, 25000000000ull);
	assert_int_equal(c.ecn_k_bytes, 102400);
	assert_true(fabs(c.loss - 0.01) < 1e-12);
}

static void expect_err(const char *spec, const char *field)
{
	struct mr_impair_cfg c, before;
	char err[128] = "";

	mr_impair_cfg_init(&c);
	c.loss = 0.125;
	before = c;
	if (mr_impair_cfg_parse(&c, spec, err, sizeof(err)) != -EINVAL)
		fail_msg("'%s' accepted", spec);
	if (strstr(err, field) == NULL)
		fail_msg("'%s': error '%s' does not name '%s'", spec, err, field);
	/* a failed parse leaves the configuration untouched */
	assert_memory_equal(&c, &before, sizeof(c));
}

static void test_cfg_errors(void **state)
{
	(void)state;
	expect_err("loss=1.5", "loss");
	expect_err("loss=abc", "loss");
	expect_err("loss", "loss");
	expect_err("burst=0.5,loss=0.1", "burst");
	expect_err("reorder=0.1", "reorder");
	expect_err("reorder=0.1:5parsecs", "reorder");
	expect_err("dup=-0.1", "dup");
	expect_err("corrupt=2", "corrupt");
	expect_err("delay=10xs", "delay");
	expect_err("jitter=-3us", "jitter");
	expect_err("ecn=rate:10g", "ecn");
	expect_err("ecn=speed:10g,k:1k", "ecn");
	expect_err("entropy_loss=3", "entropy_loss");
	expect_err("entropy_loss=70000:0.1", "entropy_loss");
	expect_err("seed=-1", "seed");
	expect_err("frobnicate=1", "frobnicate");
	expect_err("loss=0.1,,dup=0.1", "empty");
}

/* Count drops over n frames; assert within 5 binomial standard deviations of n*p. */
static void check_rate(const char *spec, double p, uint32_t n)
{
	struct mr_impair *im = make(spec);
	uint8_t f[2048];
	int len = build(f, sizeof(f), 0xc000, 0, 0, 1024, false);
	uint32_t drops = 0;
	double mean = n * p, sd = sqrt(n * p * (1 - p));

	assert_true(len > 0);
	for (uint32_t i = 0; i < n; i++) {
		struct mr_impair_verdict v;

		assert_int_equal(mr_impair_process(im, MR_IMPAIR_TX, i * 100ull, f, (uint32_t)len,
						   &v), 0);
		drops += v.action == MR_IMPAIR_DROP;
	}
	if (fabs(drops - mean) > 5 * sd + 1)
		fail_msg("%s: %u drops of %u, expected %.1f +- %.1f", spec, drops, n, mean, 5 * sd);
	mr_impair_destroy(im);
}

static void test_random_loss(void **state)
{
	(void)state;
	check_rate("loss=0.01,seed=3", 0.01, 200000);
	check_rate("loss=0.05,seed=4", 0.05, 100000);
	check_rate("loss=0,seed=4", 0, 10000);
	check_rate("loss=1,seed=4", 1, 1000);
}

static void test_burst_loss(void **state)
{
	struct mr_impair *im = make("loss=0.02,burst=4,seed=9");
	uint8_t f[2048];
	int len = build(f, sizeof(f), 0xc000, 0, 0, 512, false);
	uint32_t n = 400000, drops = 0, runs = 0;
	bool prev = false;
	struct mr_impair_stats st;
	double mean_burst;

	(void)state;
	for (uint32_t i = 0; i < n; i++) {
		struct mr_impair_verdict v;
		bool d;

		assert_int_equal(mr_impair_process(im, MR_IMPAIR_TX, i, f, (uint32_t)len, &v), 0);
		d = v.action == MR_IMPAIR_DROP;
		drops += d;
		runs += d && !prev;
		prev = d;
	}
	mean_burst = (double)drops / runs;
	/* Rate within 15% and mean run length within 10% of the model (runs are geometric). */
	assert_true(fabs((double)drops / n - 0.02) < 0.003);
	assert_true(fabs(mean_burst - 4.0) < 0.4);
	mr_impair_get_stats(im, MR_IMPAIR_TX, &st);
	assert_int_equal(st.dropped[MR_IMPAIR_DROP_BURST], drops);
	assert_int_equal(st.burst_entries, runs);
	mr_impair_destroy(im);
}

static void test_entropy_loss(void **state)
{
	struct mr_impair *im = make("entropy_base=49152,entropy_loss=3:1,entropy_loss=5:0.5");
	uint8_t f[2048];
	uint32_t drops[8] = { 0 };
	struct mr_impair_stats st;

	(void)state;
	for (uint32_t i = 0; i < 8000; i++) {
		uint16_t e = (uint16_t)(i % 8);
		int len = build(f, sizeof(f), (uint16_t)(49152 + e), 0, i, 256, i % 2);
		struct mr_impair_verdict v;

		assert_int_equal(mr_impair_process(im, MR_IMPAIR_RX, i, f, (uint32_t)len, &v), 0);
		drops[e] += v.action == MR_IMPAIR_DROP;
	}
	for (int e = 0; e < 8; e++) {
		if (e == 3)
			assert_int_equal(drops[e], 1000);
		else if (e == 5)
			assert_true(drops[e] > 400 && drops[e] < 600);
		else
			assert_int_equal(drops[e], 0);
	}
	mr_impair_get_stats(im, MR_IMPAIR_RX, &st);
	assert_int_equal(st.dropped[MR_IMPAIR_DROP_ENTROPY], drops[3] + drops[5]);
	mr_impair_destroy(im);
}

/* Every corrupted RoCE frame must be rejected by the parser with the ICRC checked. */
static void test_corrupt_rejected(void **state)
{
	struct mr_impair *im = make("corrupt=1,seed=11");
	uint8_t f[8192], orig[8192];
	struct mr_impair_stats st;
	struct mr_pkt pkt;

	(void)state;
	for (uint32_t i = 0; i < 20000; i++) {
		uint32_t plen = (i * 37) % 4097;
		int len = build(f, sizeof(f), (uint16_t)(0xc000 + i % 64), (uint8_t)(i % 4), i,
				plen, i % 3 == 0);
		struct mr_impair_verdict v;

		assert_true(len > 0);
		assert_int_equal(mr_frame_parse(f, (uint32_t)len, true, &pkt), MR_PARSE_OK);
		memcpy(orig, f, (size_t)len);
		assert_int_equal(mr_impair_process(im, MR_IMPAIR_TX, i, f, (uint32_t)len, &v), 0);
		assert_int_equal(v.action, MR_IMPAIR_DELIVER);
		assert_true(v.flags & MR_IMPAIR_F_CORRUPTED);
		assert_memory_not_equal(f, orig, (size_t)len);
		if (mr_frame_parse(f, (uint32_t)len, true, &pkt) == MR_PARSE_OK)
			fail_msg("corrupted frame %u (len %d) accepted", i, len);
	}
	mr_impair_get_stats(im, MR_IMPAIR_TX, &st);
	assert_int_equal(st.corrupted, 20000);
	mr_impair_destroy(im);
}

/* Exhaustive: each single-bit flip from the IP header to the end of a frame is rejected when
 * mr_impair_bit_protected() says so, and the unprotected bits are exactly the masked fields. */
static void test_corrupt_every_bit(void **state)
{
	uint8_t f[2048];
	struct mr_pkt pkt;

	(void)state;
	for (int v6 = 0; v6 < 2; v6++) {
		int len = build(f, sizeof(f), 0xc123, 2, 77, 300, v6);
		bool is6;
		int l3 = mr_impair_l3_offset(f, (uint32_t)len, &is6);
		uint32_t l4 = (uint32_t)l3 + (v6 ? 40 : 20), unprotected = 0;

		assert_int_equal(l3, 14);
		assert_int_equal(is6, v6 == 1);
		for (uint32_t bit = 0; bit < (uint32_t)len * 8; bit++) {
			uint32_t byte = bit / 8;
			bool prot = mr_impair_bit_protected(f, (uint32_t)len, bit);
			/* the masked fields, by offset (IBA A17.3.3) */
			bool masked = byte < (uint32_t)l3 ||
				      (v6 && (byte < (uint32_t)l3 + 4 || byte == (uint32_t)l3 + 7)) ||
				      byte == l4 + 6 || byte == l4 + 7 || byte == l4 + 12;

			assert_int_equal(prot, !masked);
			if (!prot) {
				unprotected++;
				continue;
			}
			f[byte] ^= (uint8_t)(1u << (bit % 8));
			if (mr_frame_parse(f, (uint32_t)len, true, &pkt) == MR_PARSE_OK)
				fail_msg("v6=%d: flip of protected bit %u accepted", v6, bit);
			f[byte] ^= (uint8_t)(1u << (bit % 8));
		}
		assert_int_equal(unprotected, (14 + 3 + (v6 ? 5 : 0)) * 8);
		assert_int_equal(mr_frame_parse(f, (uint32_t)len, true, &pkt), MR_PARSE_OK);
	}
}

/* 10 Gb/s modelled queue, K = 8 KiB, 1 KiB frames offered at 100 Gb/s: the queue grows by ~0.9
 * frame per frame, so marking starts at the 9th-10th frame; ECT frames get CE with a valid
 * IPv4 checksum and ICRC, Not-ECT frames are left alone. */
static void test_ecn_marking(void **state)
{
	struct mr_impair *im = make("ecn=rate:10g,k:8k");
	uint8_t f[2048];
	struct mr_pkt pkt;
	struct mr_impair_stats st;
	int first_mark = -1, marks = 0;
	uint64_t t = 0;

	(void)state;
	for (int i = 0; i < 40; i++) {
		int len = build(f, sizeof(f), 0xc000, 2 /* ECT(0) */, (uint32_t)i, 1024,
				i % 2 == 1);
		struct mr_impair_verdict v;

		assert_int_equal(mr_impair_process(im, MR_IMPAIR_TX, t, f, (uint32_t)len, &v), 0);
		t += (uint64_t)len * 8 / 100; /* 100 Gb/s arrivals */
		assert_int_equal(v.action, MR_IMPAIR_DELIVER);
		assert_int_equal(mr_frame_parse(f, (uint32_t)len, true, &pkt), MR_PARSE_OK);
		if (v.flags & MR_IMPAIR_F_CE) {
			assert_int_equal(pkt.tclass & 3, 3);
			assert_int_equal(pkt.tclass >> 2, 0); /* DSCP untouched */
			if (first_mark < 0)
				first_mark = i;
			marks++;
		} else {
			assert_int_equal(pkt.tclass & 3, 2);
		}
	}
	assert_true(first_mark >= 7 && first_mark <= 10);
	assert_int_equal(marks, 40 - first_mark);
	mr_impair_get_stats(im, MR_IMPAIR_TX, &st);
	assert_int_equal(st.ce_marked, (uint64_t)marks);
	assert_true(st.ecn_queue_peak > 8192);

	/* Not-ECT frames are never marked even over the threshold (RFC 3168 5). */
	for (int i = 0; i < 20; i++) {
		int len = build(f, sizeof(f), 0xc000, 0x28 /* DSCP 10, Not-ECT */, (uint32_t)i,
				1024, false);
		struct mr_impair_verdict v;

		assert_int_equal(mr_impair_process(im, MR_IMPAIR_TX, t, f, (uint32_t)len, &v), 0);
		assert_false(v.flags & MR_IMPAIR_F_CE);
		assert_int_equal(mr_frame_parse(f, (uint32_t)len, true, &pkt), MR_PARSE_OK);
		assert_int_equal(pkt.tclass, 0x28);
	}
	mr_impair_get_stats(im, MR_IMPAIR_TX, &st);
	assert_int_equal(st.ce_not_ect, 20);

	/* Once the queue drains (1 ms later), frames at a slower rate than 10 Gb/s pass unmarked. */
	t += 1000000;
	for (int i = 0; i < 50; i++) {
		int len = build(f, sizeof(f), 0xc000, 1 /* ECT(1) */, (uint32_t)i, 1024, false);
		struct mr_impair_verdict v;

		assert_int_equal(mr_impair_process(im, MR_IMPAIR_TX, t, f, (uint32_t)len, &v), 0);
		assert_false(v.flags & MR_IMPAIR_F_CE);
		t += (uint64_t)len * 8 / 5; /* 5 Gb/s */
	}
	mr_impair_destroy(im);
}

static void test_ecn_helpers(void **state)
{
	uint8_t f[256];
	int len;

	(void)state;
	len = build(f, sizeof(f), 0xc000, 3, 1, 16, false);
	assert_int_equal(mr_impair_ecn_get(f, (uint32_t)len), 3);
	assert_int_equal(mr_impair_ecn_mark_ce(f, (uint32_t)len), 0); /* already CE */
	assert_int_equal(mr_impair_udp_sport(f, (uint32_t)len), 0xc000);
	memset(f, 0, 20); /* EtherType 0: not IP */
	assert_int_equal(mr_impair_ecn_mark_ce(f, (uint32_t)len), -EINVAL);
	assert_int_equal(mr_impair_udp_sport(f, 10), -EINVAL);
	assert_int_equal(mr_impair_l3_offset(f, 5, &(bool){ false }), -EINVAL);
}

static int poll_all(struct mr_impair *im, enum mr_impair_dir dir, uint64_t now, uint32_t *psn,
		    int max)
{
	uint8_t buf[8192];
	struct mr_pkt pkt;
	int n = 0, len;

	while ((len = mr_impair_poll(im, dir, now, buf, sizeof(buf))) > 0) {
		assert_int_equal(mr_frame_parse(buf, (uint32_t)len, true, &pkt), MR_PARSE_OK);
		assert_true(n < max);
		psn[n++] = pkt.hdr.psn;
	}
	assert_int_equal(len, 0);
	return n;
}

static void test_delay_jitter(void **state)
{
	struct mr_impair *im = make("delay=10us,jitter=2us,seed=5");
	uint8_t f[2048];
	uint32_t psn[64];
	uint64_t last_due = 0;

	(void)state;
	for (uint32_t i = 0; i < 32; i++) {
		int len = build(f, sizeof(f), 0xc000, 0, i, 100, false);
		struct mr_impair_verdict v;

		assert_int_equal(mr_impair_process(im, MR_IMPAIR_RX, 1000 + i, f, (uint32_t)len,
						   &v), 0);
		assert_int_equal(v.action, MR_IMPAIR_QUEUED);
	}
	assert_int_equal(mr_impair_queued(im, MR_IMPAIR_RX), 32);
	assert_int_equal(mr_impair_queued(im, MR_IMPAIR_TX), 0);
	/* nothing before 10 us, everything by 10 us + 2 us + 32 ns */
	assert_true(mr_impair_next_due(im, MR_IMPAIR_RX) >= 11000);
	assert_int_equal(poll_all(im, MR_IMPAIR_RX, 10999, psn, 64), 0);
	while (mr_impair_queued(im, MR_IMPAIR_RX) > 0) {
		uint64_t due = mr_impair_next_due(im, MR_IMPAIR_RX);

		assert_true(due >= last_due && due <= 1000 + 31 + 12000);
		last_due = due;
		assert_int_equal(poll_all(im, MR_IMPAIR_RX, due, psn, 64) > 0, 1);
	}
	assert_int_equal(mr_impair_next_due(im, MR_IMPAIR_RX), UINT64_MAX);
	mr_impair_destroy(im);
}

static void test_reorder_dup(void **state)
{
	struct mr_impair *im = make("reorder=0.2:5us,dup=0.1,seed=21");
	uint8_t f[2048];
	uint32_t psn[4096], n = 0, inversions = 0, seen[1000] = { 0 };
	uint32_t now_cnt = 0, dups = 0;
	struct mr_impair_stats st;
	uint64_t t;

	(void)state;
	for (t = 0; t < 1000; t++) {
		int len = build(f, sizeof(f), 0xc000, 0, (uint32_t)t, 64, false);
		struct mr_impair_verdict v;

		assert_int_equal(mr_impair_process(im, MR_IMPAIR_TX, t * 100, f, (uint32_t)len,
						   &v), 0);
		if (v.action == MR_IMPAIR_DELIVER)
			psn[n++] = (uint32_t)t, now_cnt++;
		dups += !!(v.flags & MR_IMPAIR_F_DUP);
		n += (uint32_t)poll_all(im, MR_IMPAIR_TX, t * 100, psn + n, 4096 - (int)n);
	}
	n += (uint32_t)poll_all(im, MR_IMPAIR_TX, UINT64_MAX, psn + n, 4096 - (int)n);
	for (uint32_t i = 0; i < n; i++) {
		seen[psn[i]]++;
		if (i > 0 && psn[i] < psn[i - 1])
			inversions++;
	}
	for (int i = 0; i < 1000; i++)
		assert_true(seen[i] == 1 || seen[i] == 2);
	mr_impair_get_stats(im, MR_IMPAIR_TX, &st);
	assert_int_equal(n, 1000 + st.duplicated);
	assert_int_equal(st.duplicated, dups);
	assert_true(st.duplicated > 60 && st.duplicated < 140);
	assert_true(st.reordered > 140 && st.reordered < 260);
	assert_true(inversions > 100);
	assert_int_equal(st.delivered, n);
	mr_impair_destroy(im);
}

static void test_bad_input(void **state)
{
	struct mr_impair *im = make("loss=0.5");
	struct mr_impair_verdict v;
	uint8_t f[64] = { 0 }, big[16];
	struct mr_impair_cfg c;

	(void)state;
	assert_int_equal(mr_impair_process(im, MR_IMPAIR_TX, 0, f, 0, &v), -EINVAL);
	assert_int_equal(mr_impair_process(im, MR_IMPAIR_TX, 0, f, MR_IMPAIR_FRAME_MAX + 1, &v),
			 -EINVAL);
	assert_int_equal(mr_impair_process(im, (enum mr_impair_dir)7, 0, f, 64, &v), -EINVAL);
	assert_int_equal(mr_impair_process(im, MR_IMPAIR_TX, 0, NULL, 64, &v), -EINVAL);
	assert_int_equal(mr_impair_poll(im, (enum mr_impair_dir)2, 0, f, 64), -EINVAL);
	/* a non-IP frame is still subject to loss but never crashes the frame helpers */
	for (int i = 0; i < 100; i++)
		assert_int_equal(mr_impair_process(im, MR_IMPAIR_TX, 0, f, 3, &v), 0);
	mr_impair_destroy(im);

	im = make("delay=1us");
	assert_int_equal(mr_impair_process(im, MR_IMPAIR_TX, 0, f, 64, &v), 0);
	assert_int_equal(mr_impair_poll(im, MR_IMPAIR_TX, 5000, big, sizeof(big)), -ENOSPC);
	assert_int_equal(mr_impair_queued(im, MR_IMPAIR_TX), 1);
	mr_impair_destroy(im);

	/* delay queue overflow is a counted drop */
	im = make("delay=1us,qlimit=4");
	for (int i = 0; i < 10; i++)
		assert_int_equal(mr_impair_process(im, MR_IMPAIR_TX, 0, f, 64, &v), 0);
	assert_int_equal(mr_impair_queued(im, MR_IMPAIR_TX), 4);
	mr_impair_destroy(im);

	mr_impair_cfg_init(&c);
	c.loss = 2;
	errno = 0;
	assert_null(mr_impair_create(&c));
	assert_int_equal(errno, EINVAL);
	assert_null(mr_impair_create(NULL));
	mr_impair_destroy(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cfg_parse),
		cmocka_unit_test(test_cfg_errors),
		cmocka_unit_test(test_random_loss),
		cmocka_unit_test(test_burst_loss),
		cmocka_unit_test(test_entropy_loss),
		cmocka_unit_test(test_corrupt_rejected),
		cmocka_unit_test(test_corrupt_every_bit),
		cmocka_unit_test(test_ecn_marking),
		cmocka_unit_test(test_ecn_helpers),
		cmocka_unit_test(test_delay_jitter),
		cmocka_unit_test(test_reorder_dup),
		cmocka_unit_test(test_bad_input),
	};

	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 131 + 7);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
