/* SPDX-License-Identifier: MIT
 * mrperf command line: perftest's main flags, parsed strictly (a bad value names its flag).
 */
#ifndef MRPERF_ARGS_H
#define MRPERF_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exchange.h"

/* QPs per run (-q): the benchmark's QP-scaling figure runs 1024 (issue 10). */
#define MR_PERF_MAX_QPS 1024

#define MR_PERF_MAX_SIZE (1ull << 30)
#define MR_PERF_ALL_MAX_LOG2 23   /* -a: sizes 2 .. 2^23, as perftest */
#define MR_PERF_MAX_OUT_READS 16  /* -o: the READ/atomic responder resources mrperf offers */
#define MR_PERF_MAX_POST_LIST 64  /* -l */
#define MR_PERF_MAX_NOTES 24      /* accepted-and-ignored flags listed in the header */
#define MR_PERF_JSON_DEFAULT "perftest_out.json" /* --out_json without --out_json_file */

struct mr_perf_args {
	enum mr_pt_test test;
	const char *server;   /* NULL: we are the server */
	uint64_t size;
	bool all;             /* -a */
	uint64_t iters;
	unsigned duration;    /* -D seconds, 0 = iteration mode */
	unsigned num_qps;     /* -q */
	unsigned mtu;         /* -m bytes, 0 = the port's active MTU */
	uint16_t port;        /* -p TCP port */
	unsigned tx_depth;    /* -t */
	unsigned rx_depth;    /* -r */
	unsigned cq_mod;      /* -Q */
	unsigned qp_timeout;  /* -u: local ACK timeout code, 4.096 us * 2^u (perftest's, 14) */
	int gid_index;        /* -x, accepted (the daemon's GID index 1 is used) */
	const char *device;   /* -d, accepted and printed */
	bool gbits;           /* --report_gbits */
	bool verify;          /* --verify */
	uint32_t seed;        /* --seed for the --verify pattern */
	const char *json;     /* --json FILE */
	const char *sock;     /* --sock PATH */
	bool metaroce;        /* --metaroce: offer MetaRoCE in the setup exchange (negotiate.h) */
	uint16_t entropies;   /* --entropies N (default 16) */
	uint8_t cc;           /* --cc: enum mrc_cc_algo (default none) */
	bool help;
	bool version;         /* -V */
	/* perftest flags beyond the basic set (docs/mrperf.md has the whole table) */
	bool bidir;           /* -b: both sides send; rows are the sum of both directions */
	bool report_both;     /* --report-both: with -b, also each direction's row */
	bool events;          /* -e: sleep on the CQ's event fd instead of busy polling */
	bool yield;           /* --yield: sched_yield() after a few empty polls */
	unsigned inline_size; /* -I: messages up to this size are posted inline (0 = none) */
	unsigned post_list;   /* -l: WRs per post call (1) */
	unsigned out_reads;   /* -o: outstanding READs/atomics (0 = MR_PERF_MAX_OUT_READS) */
	bool use_srq;         /* --use-srq: receives come from one SRQ (send tests) */
	bool no_peak;         /* -N: no peak bandwidth (reported as 0) */
	bool histogram;       /* -H: every latency sample, sorted */
	bool unsorted;        /* -U: every latency sample in order (implies -H) */
	bool atomic_cas;      /* -A CMP_AND_SWAP (else FETCH_AND_ADD) */
	bool run_infinitely;  /* --run_infinitely: a row every -D seconds until killed */
	bool warm_up;         /* --perform_warm_up */
	bool ipv6;            /* --ipv6: use the daemon's IPv6 GID */
	bool no_xchg_versions; /* --dont_xchg_versions */
	int tclass;           /* --tclass: the GRH traffic class (IPv4 ToS byte), -1 = 0 */
	unsigned hop_limit;   /* -L: hop limit / IPv4 TTL (64) */
	unsigned retry_count; /* --retry_count: the QP's retry count (7) */
	unsigned wait_destroy; /* --wait_destroy: seconds before freeing the resources */
	double limit_bw;      /* -w: fail if the average bandwidth is below (0 = no limit) */
	double limit_msgrate; /* -y: fail if the message rate is below, Mpps (0 = no limit) */
	/* flags accepted but without effect (long name, why), printed under the header */
	const char *note_flag[MR_PERF_MAX_NOTES];
	const char *note_why[MR_PERF_MAX_NOTES];
	unsigned nnotes;
};

/* Parses argv (argv[0] is the program: under a perftest name such as ib_write_bw its basename
 * selects the test, as --test=write_bw or a first positional `write_bw` do). Returns 0;
 * -EINVAL with a message naming the flag in err (bad syntax or value); or -ENOTSUP when the
 * flag is one of stock perftest's that metaroce cannot honour, err saying which and why.
 * Applies perftest's defaults for the chosen test (size, iterations, depths). */
int mr_perf_args_parse(int argc, const char *const argv[], struct mr_perf_args *a, char *err,
		       size_t errlen);
/* Usage text. */
const char *mr_perf_usage(void);
/* "write_bw" etc. -> test; -EINVAL if unknown. */
int mr_perf_test_from_prog(const char *argv0, enum mr_pt_test *t); /* ".../ib_write_bw" */
int mr_perf_test_from_name(const char *name, enum mr_pt_test *t);
const char *mr_perf_test_name(enum mr_pt_test t);
bool mr_perf_test_is_bw(enum mr_pt_test t);

#endif
