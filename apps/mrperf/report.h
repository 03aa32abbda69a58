/* SPDX-License-Identifier: MIT
 * perftest-compatible output: the test header, the local/remote address lines, the bandwidth
 * and latency tables (same text and column layout as perftest 4.5's perftest_parameters.c, so
 * scripts that scrape ib_write_bw output work on mrperf), the statistics behind them, and a
 * --json file with the same numbers (valid JSON; perftest's own is not).
 */
#ifndef MRPERF_REPORT_H
#define MRPERF_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "exchange.h"

/* perftest's testsStr order. */
enum mr_perf_verb {
	MR_VERB_SEND = 0,
	MR_VERB_WRITE = 1,
	MR_VERB_READ = 2,
	MR_VERB_ATOMIC = 3,
};

struct mr_report_info {
	enum mr_perf_verb verb;
	bool bw;                 /* BW test, else latency */
	bool client;
	bool gbits;              /* --report_gbits */
	bool atomic_cmp_swap;    /* else FETCH_AND_ADD (perftest's default) */
	bool use_srq;            /* --use-srq */
	bool bidir;              /* -b: "Bidirectional" in the header's title line */
	const char *device;
	unsigned num_qps;
	unsigned tx_depth;
	unsigned rx_depth;
	unsigned cq_mod;
	unsigned mtu;            /* bytes */
	int gid_index;           /* -1: not printed */
	unsigned inline_size;
	unsigned out_reads;
	/* Reliable transport actually used ("RoCE" or "MetaRoCE"); NULL: not reported (JSON
	 * then has no Reliable_transport key, as perftest's). */
	const char *transport;
	unsigned entropies;      /* MetaRoCE only */
	const char *cc;          /* MetaRoCE only */
};

/* The "----" line. */
void mr_report_line(FILE *f);
/* ctx_print_test_info(): "RDMA_Write BW Test", Dual-port, qps, connection type, MTU, ... */
void mr_report_header(FILE *f, const struct mr_report_info *info);
/* ctx_print_pingpong_data(): " local address: LID 0000 QPN 0x0011 PSN 0x..." and " GID: ..."
 * (perftest prints the GID bytes in decimal). */
void mr_report_dest(FILE *f, const struct mr_report_info *info, bool remote,
		    const struct mr_pt_dest *d);
/* Column titles of the results table (line, titles, newline). */
void mr_report_bw_title(FILE *f, bool gbits);
void mr_report_lat_title(FILE *f);

/* Bandwidth from per-iteration post/completion timestamps (ns), as print_report_bw():
 * average = size * n / (last completion - first post); peak = size / the smallest mean time per
 * message over any window [post i, completion j] with j on a CQ-moderation boundary.
 * Units: MB/sec = 2^20 bytes/s, Gb/sec = 10^9 bits/s; MsgRate in Mpps. -EINVAL if n == 0,
 * cq_mod == 0 or timestamps are not monotonic. */
int mr_bw_compute(const uint64_t *posted_ns, const uint64_t *completed_ns, uint64_t n,
		  uint64_t size, unsigned cq_mod, bool gbits, struct mr_pt_bw_report *out);
/* One result row, REPORT_FMT (REPORT_FMT_EXT with 6 decimals when Gb/sec < 0.1). */
void mr_report_bw_row(FILE *f, const struct mr_pt_bw_report *r, bool gbits);

struct mr_lat_stats {
	uint64_t size;
	uint64_t iters;
	double t_min, t_max, t_typical, t_avg, t_stdev, p99, p999; /* usec */
};

/* Latency statistics over n one-way samples (usec), as print_report_lat(): sort, ignore the two
 * largest samples (LAT_MEASURE_TAIL), typical = median, percentiles at index ceil(m * p) of the
 * remaining m samples, t_max = sorted[m] (perftest's choice). stdev is the population standard
 * deviation of the m samples (perftest truncates each deviation to an integer; we do not).
 * samples is sorted in place. -EINVAL if n < 3. */
int mr_lat_compute(double *samples, size_t n, uint64_t size, uint64_t iters,
		   struct mr_lat_stats *out);
/* One result row, REPORT_FMT_LAT. */
void mr_report_lat_row(FILE *f, const struct mr_lat_stats *s);

/* JSON with a test_info object (the header's fields) and a results object or array.
 * Returns 0 or -errno (file cannot be written). */
int mr_report_json_bw(const char *path, const struct mr_report_info *info,
		      const struct mr_pt_bw_report *rows, size_t nrows);
int mr_report_json_lat(const char *path, const struct mr_report_info *info,
		       const struct mr_lat_stats *rows, size_t nrows);
/* Same, to an open stream (the tests use fmemopen/tmpfile). */
void mr_report_json_bw_write(FILE *f, const struct mr_report_info *info,
			     const struct mr_pt_bw_report *rows, size_t nrows);
void mr_report_json_lat_write(FILE *f, const struct mr_report_info *info,
			      const struct mr_lat_stats *rows, size_t nrows);

#endif
