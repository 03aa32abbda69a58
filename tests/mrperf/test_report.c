/* SPDX-License-Identifier: MIT
 * mrperf report: perftest's text layout byte for byte, bandwidth and latency statistics on
 * known inputs, JSON output.
 */
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

#include "report.h"

/* Runs fn into a memory stream and returns the text (caller frees). */
static char *capture_text(void (*fn)(FILE *f, const void *arg), const void *arg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	fn(f, arg);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static const struct mr_report_info write_client = {
	.verb = MR_VERB_WRITE, .bw = true, .client = true, .device = "rxe0", .num_qps = 1,
	.tx_depth = 128, .rx_depth = 512, .cq_mod = 100, .mtu = 1024, .gid_index = 1,
	.inline_size = 0, .out_reads = 1,
};

static void hdr(FILE *f, const void *arg)
{
	mr_report_header(f, arg);
}

static void test_header_write_bw(void **state)
{
	char *t = capture_text(hdr, &write_client);

	(void)state;
	assert_string_equal(t,
		"---------------------------------------------------------------------------------------\n"
		"                    RDMA_Write BW Test\n"
		" Dual-port       : OFF\t\tDevice         : rxe0\n"
		" Number of qps   : 1\t\tTransport type : IB\n"
		" Connection type : RC\t\tUsing SRQ      : OFF\n"
		" PCIe relax order: Unsupported\n"
		" ibv_wr* API     : OFF\n"
		" TX depth        : 128\n"
		" CQ Moderation   : 100\n"
		" Mtu             : 1024[B]\n"
		" Link type       : Ethernet\n"
		" GID index       : 1\n"
		" Max inline data : 0[B]\n"
		" rdma_cm QPs\t : OFF\n"
		" Data ex. method : Ethernet\n"
		"---------------------------------------------------------------------------------------\n");
	free(t);
}

static void test_header_variants(void **state)
{
	struct mr_report_info in = write_client;
	char *t;

	(void)state;
	/* read latency server: "Latency", no TX depth, no CQ moderation, outstanding reads */
	in.verb = MR_VERB_READ;
	in.bw = false;
	in.client = false;
	in.out_reads = 128;
	t = capture_text(hdr, &in);
	assert_non_null(strstr(t, "                    RDMA_Read Latency Test\n"));
	assert_null(strstr(t, "TX depth"));
	assert_null(strstr(t, "CQ Moderation"));
	assert_non_null(strstr(t, " Outstand reads  : 128\n"));
	assert_null(strstr(t, "Max inline"));
	free(t);
	/* atomic and send server */
	in.verb = MR_VERB_ATOMIC;
	in.bw = true;
	t = capture_text(hdr, &in);
	assert_non_null(strstr(t, "                    Atomic FETCH_AND_ADD BW Test\n"));
	free(t);
	in.verb = MR_VERB_SEND;
	t = capture_text(hdr, &in);
	assert_non_null(strstr(t, " RX depth        : 512\n"));
	free(t);
	in.gid_index = -1;
	t = capture_text(hdr, &in);
	assert_null(strstr(t, "GID index"));
	free(t);
}

struct dest_arg {
	const struct mr_report_info *in;
	bool remote;
	struct mr_pt_dest d;
};

static void dest(FILE *f, const void *arg)
{
	const struct dest_arg *a = arg;

	mr_report_dest(f, a->in, a->remote, &a->d);
}

static void test_dest_lines(void **state)
{
	/* values of the client in ib_write_bw.pcap */
	struct dest_arg a = { .in = &write_client, .remote = false,
			      .d = { .lid = 0, .out_reads = 1, .qpn = 0x11, .psn = 0x0f498a,
				     .rkey = 0x26f, .vaddr = 0x7f154a438000ull,
				     .gid = { [10] = 0xff, [11] = 0xff, 198, 18, 0, 12 } } };
	struct mr_report_info rd = write_client;
	struct mr_report_info sd = write_client;
	char *t;

	(void)state;
	t = capture_text(dest, &a);
	/* %#04x of 0 has no 0x; GID bytes are printed in decimal (PERF_GID_FMT) */
	assert_string_equal(t, " local address: LID 0000 QPN 0x0011 PSN 0xf498a RKey 0x00026f VAddr 0x007f154a438000\n"
			       " GID: 00:00:00:00:00:00:00:00:00:00:255:255:198:18:00:12\n");
	free(t);
	rd.verb = MR_VERB_READ;
	a.in = &rd;
	a.remote = true;
	a.d.out_reads = 0x80;
	t = capture_text(dest, &a);
	assert_non_null(strstr(t, " remote address: LID 0000 QPN 0x0011 PSN 0xf498a OUT 0x80 RKey 0x00026f VAddr"));
	free(t);
	sd.verb = MR_VERB_SEND;
	a.in = &sd;
	t = capture_text(dest, &a);
	assert_string_equal(t, " remote address: LID 0000 QPN 0x0011 PSN 0xf498a\n"
			       " GID: 00:00:00:00:00:00:00:00:00:00:255:255:198:18:00:12\n");
	free(t);
}

static void bw_row(FILE *f, const void *arg)
{
	const struct mr_pt_bw_report *r = arg;

	mr_report_bw_title(f, false);
	mr_report_bw_row(f, r, false);
}

static void bw_row_g(FILE *f, const void *arg)
{
	const struct mr_pt_bw_report *r = arg;

	mr_report_bw_title(f, true);
	mr_report_bw_row(f, r, true);
}

static void test_bw_rows(void **state)
{
	struct mr_pt_bw_report r = { 65536, 5000, 11.5, 10.25, 0.019531 };
	struct mr_pt_bw_report g = { 8, 1000, 0.05, 0.04, 0.625 };
	char *t;

	(void)state;
	t = capture_text(bw_row, &r);
	assert_string_equal(t,
		"---------------------------------------------------------------------------------------\n"
		" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
		" 65536      5000             11.50              10.25  \t\t   0.019531\n");
	free(t);
	/* below 0.1 Gb/sec perftest switches to 6 decimals (REPORT_FMT_EXT) */
	t = capture_text(bw_row_g, &g);
	assert_string_equal(t,
		"---------------------------------------------------------------------------------------\n"
		" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
		" 8          1000           0.050000            0.040000            0.625000\n");
	free(t);
}

static void test_bw_compute(void **state)
{
	uint64_t posted[10], completed[10];
	struct mr_pt_bw_report r;

	(void)state;
	/* a message every 1000 ns, each done 500 ns later, except every 5th takes 900 ns */
	for (int i = 0; i < 10; i++) {
		posted[i] = 1000000 + (uint64_t)i * 1000;
		completed[i] = posted[i] + (i % 5 == 4 ? 900 : 500);
	}
	assert_int_equal(mr_bw_compute(posted, completed, 10, 1000, 1, false, &r), 0);
	/* 10 x 1000 B in 9.9 us */
	assert_true(fabs(r.bw_avg - 10000 / 9.9e-6 / 1048576) < 1e-6);
	assert_true(fabs(r.msg_rate - 10 / 9.9e-6 / 1e6) < 1e-9);
	/* best window: one message in 500 ns */
	assert_true(fabs(r.bw_peak - 1907.3486328125) < 1e-6);
	assert_int_equal(r.iters, 10);
	assert_int_equal(r.size, 1000);
	/* Gb/sec: 10^9 bits */
	assert_int_equal(mr_bw_compute(posted, completed, 10, 1000, 1, true, &r), 0);
	assert_true(fabs(r.bw_avg - 8.0 * 10000 / 9900) < 1e-9);
	/* with cq_mod 5 only windows ending at completions 4 and 9 count; the best is one
	 * message of 900 ns (i = j = 4) */
	assert_int_equal(mr_bw_compute(posted, completed, 10, 1000, 5, false, &r), 0);
	assert_true(fabs(r.bw_peak - 1000 / 900e-9 / 1048576) < 1e-6);
	/* bad input */
	assert_int_equal(mr_bw_compute(posted, completed, 0, 1000, 1, false, &r), -EINVAL);
	assert_int_equal(mr_bw_compute(posted, completed, 10, 1000, 0, false, &r), -EINVAL);
	completed[3] = posted[3] - 1;
	assert_int_equal(mr_bw_compute(posted, completed, 10, 1000, 1, false, &r), -EINVAL);
}

/* perftest's print_report_bw scan, O(n^2 / cq_mod): the reference the fast peak must equal. */
static double ref_best_ns(const uint64_t *p, const uint64_t *c, uint64_t n, unsigned m)
{
	double best = (double)(c[n - 1] - p[0]) / (double)n;

	for (uint64_t i = 0; i < n; i++) {
		for (uint64_t j = ((i + m) / m) * m - 1; j < n; j += m) {
			double t = (double)(c[j] - p[i]) / (double)(j - i + 1);

			if (t < best)
				best = t;
		}
		if (n % m) {
			double t = (double)(c[n - 1] - p[i]) / (double)(n - i);

			if (t < best)
				best = t;
		}
	}
	return best;
}

static uint64_t lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

/* Random bursty timelines (posts in bursts, completions with jitter and stalls): the peak
 * equals perftest's exhaustive scan for every CQ moderation. */
static void test_bw_peak_matches_scan(void **state)
{
	static const unsigned mods[] = { 1, 2, 3, 7, 100 };
	uint64_t seed = 42;

	(void)state;
	for (unsigned round = 0; round < 60; round++) {
		uint64_t n = 1 + lcg(&seed) % 700, p[700], c[700], tp = 1000, tc = 0;

		for (uint64_t i = 0; i < n; i++) {
			tp += lcg(&seed) % 4 == 0 ? lcg(&seed) % 5000 : lcg(&seed) % 50;
			p[i] = tp;
			tc = (tc > tp ? tc : tp) + 1 + (lcg(&seed) % 9 == 0 ? lcg(&seed) % 20000 :
							lcg(&seed) % 300);
			c[i] = tc;
		}
		for (unsigned k = 0; k < sizeof(mods) / sizeof(mods[0]); k++) {
			struct mr_pt_bw_report r;
			double ref = ref_best_ns(p, c, n, mods[k]);
			double want = (double)1000 / (ref / 1e9) / 1048576.0;

			assert_int_equal(mr_bw_compute(p, c, n, 1000, mods[k], false, &r), 0);
			if (fabs(r.bw_peak - want) > 1e-9 * want)
				fail_msg("round %u n %llu cq_mod %u: peak %.9f, scan %.9f", round,
					 (unsigned long long)n, mods[k], r.bw_peak, want);
		}
	}
}

/* -n 1000000 (perftest's scan: ~5e11 steps at cq_mod 1) completes; a steady 1 us per message
 * with one 10-message burst at 0.25 us gives exactly that burst's rate as the peak. */
static void test_bw_peak_million(void **state)
{
	const uint64_t n = 1000000;
	uint64_t *p = malloc(n * sizeof(*p)), *c = malloc(n * sizeof(*c));
	struct mr_pt_bw_report r;

	(void)state;
	assert_non_null(p);
	assert_non_null(c);
	for (uint64_t i = 0; i < n; i++) {
		p[i] = i * 1000;
		c[i] = p[i] + 1000;
	}
	for (uint64_t i = 500000; i < 500010; i++) /* 10 messages posted and done in 2.5 us */
		c[i] = p[500000] + 250 * (i - 500000 + 1);
	for (uint64_t i = 500000; i < 500010; i++)
		p[i] = p[500000];
	assert_int_equal(mr_bw_compute(p, c, n, 1000, 1, true, &r), 0);
	/* best window: the burst, 250 ns per 1000-byte message = 32 Gb/s */
	assert_true(fabs(r.bw_peak - 32.0) < 1e-6);
	free(p);
	free(c);
}

static void test_lat_compute(void **state)
{
	double s[100];
	double small[3] = { 5, 1, 3 };
	struct mr_lat_stats st;

	(void)state;
	/* 1..100 in a scrambled order (37 is coprime with 100) */
	for (int i = 0; i < 100; i++)
		s[i] = (double)((i * 37) % 100 + 1);
	assert_int_equal(mr_lat_compute(s, 100, 2, 1000, &st), 0);
	/* the two largest (99, 100) are dropped: m = 98 samples 1..98 */
	assert_true(st.t_min == 1.0);
	assert_true(st.t_max == 99.0);          /* perftest prints sorted[m] */
	assert_true(st.t_typical == 49.5);      /* even m: mean of the middle two */
	assert_true(st.t_avg == 49.5);
	assert_true(fabs(st.t_stdev - 28.28869031963127) < 1e-9);
	assert_true(st.p99 == 99.0);            /* index ceil(98 * 0.99) = 98 */
	assert_true(st.p999 == 99.0);
	assert_int_equal(st.iters, 1000);
	assert_int_equal(st.size, 2);
	assert_int_equal(mr_lat_compute(small, 3, 2, 4, &st), 0);
	assert_true(st.t_min == 1.0 && st.t_typical == 1.0 && st.t_max == 3.0 && st.p99 == 3.0);
	assert_true(st.t_stdev == 0.0);
	assert_int_equal(mr_lat_compute(small, 2, 2, 3, &st), -EINVAL);
	small[1] = NAN;
	assert_int_equal(mr_lat_compute(small, 3, 2, 3, &st), -EINVAL);
	small[1] = -1;
	assert_int_equal(mr_lat_compute(small, 3, 2, 3, &st), -EINVAL);
}

static void lat_row(FILE *f, const void *arg)
{
	mr_report_lat_title(f);
	mr_report_lat_row(f, arg);
}

static void test_lat_row(void **state)
{
	struct mr_lat_stats st = { 2, 1000, 1, 99, 49.5, 49.5, 28.29, 99, 99 };
	char *t = capture_text(lat_row, &st);

	(void)state;
	assert_string_equal(t,
		"---------------------------------------------------------------------------------------\n"
		" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n"
		" 2       1000          1.00           99.00        49.50    \t       49.50       \t28.29  \t\t99.00   \t\t99.00  \n");
	free(t);
}

struct json_arg {
	const struct mr_report_info *in;
	const void *rows;
	size_t n;
};

static void json_bw(FILE *f, const void *arg)
{
	const struct json_arg *a = arg;

	mr_report_json_bw_write(f, a->in, a->rows, a->n);
}

static void json_lat(FILE *f, const void *arg)
{
	const struct json_arg *a = arg;

	mr_report_json_lat_write(f, a->in, a->rows, a->n);
}

static void assert_balanced(const char *t)
{
	int depth = 0;
	bool in_str = false;

	for (const char *p = t; *p; p++) {
		if (in_str) {
			if (*p == '\\')
				p++;
			else if (*p == '"')
				in_str = false;
			continue;
		}
		if (*p == '"')
			in_str = true;
		else if (*p == '{' || *p == '[')
			depth++;
		else if (*p == '}' || *p == ']')
			assert_true(--depth >= 0);
	}
	assert_int_equal(depth, 0);
	assert_false(in_str);
}

static void test_json(void **state)
{
	struct mr_pt_bw_report rows[2] = { { 2, 5000, 1.5, 1.25, 0.6 }, { 4, 5000, 3, 2.5, 0.6 } };
	struct mr_lat_stats lat = { 2, 1000, 1, 99, 49.5, 49.5, 28.29, 99, 99 };
	struct mr_report_info in = write_client;
	struct json_arg a = { &in, rows, 2 };
	char *t;

	(void)state;
	in.device = "dev\"x";
	t = capture_text(json_bw, &a);
	assert_balanced(t);
	assert_non_null(strstr(t, "\"test\": \"RDMA_Write_BW_Test\""));
	assert_non_null(strstr(t, "\"Device\": \"dev\\\"x\""));
	assert_non_null(strstr(t, "{\"MsgSize\": 2, \"n_iterations\": 5000, \"BW_peak\": 1.50, "
				  "\"BW_average\": 1.25, \"MsgRate\": 0.600000, \"unit\": \"MB/sec\"},"));
	assert_non_null(strstr(t, "\"MsgSize\": 4,"));
	free(t);
	in.bw = false;
	a.rows = &lat;
	a.n = 1;
	t = capture_text(json_lat, &a);
	assert_balanced(t);
	assert_non_null(strstr(t, "\"test\": \"RDMA_Write_Latency_Test\""));
	assert_non_null(strstr(t, "\"t_typical\": 49.50, \"t_avg\": 49.50, \"t_stdev\": 28.29"));
	free(t);
	assert_int_equal(mr_report_json_bw("/nonexistent-dir/x.json", &in, rows, 1), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_write_bw),
		cmocka_unit_test(test_header_variants),
		cmocka_unit_test(test_dest_lines),
		cmocka_unit_test(test_bw_rows),
		cmocka_unit_test(test_bw_compute),
		cmocka_unit_test(test_bw_peak_matches_scan),
		cmocka_unit_test(test_bw_peak_million),
		cmocka_unit_test(test_lat_compute),
		cmocka_unit_test(test_lat_row),
		cmocka_unit_test(test_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
