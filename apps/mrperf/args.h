/* SPDX-License-Identifier: MIT
 * mrperf command line: perftest's main flags, parsed strictly (a bad value names its flag).
 */
#ifndef MRPERF_ARGS_H
#define MRPERF_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exchange.h"

#define MR_PERF_MAX_SIZE (1ull << 30)
#define MR_PERF_ALL_MAX_LOG2 23   /* -a: sizes 2 .. 2^23, as perftest */

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
};

/* Parses argv (argv[0] is the program). Returns 0, or -EINVAL with a message naming the flag in
 * err. Applies perftest's defaults for the chosen test (size, iterations, depths). */
int mr_perf_args_parse(int argc, const char *const argv[], struct mr_perf_args *a, char *err,
		       size_t errlen);
/* Usage text. */
const char *mr_perf_usage(void);
/* "write_bw" etc. -> test; -EINVAL if unknown. */
int mr_perf_test_from_name(const char *name, enum mr_pt_test *t);
const char *mr_perf_test_name(enum mr_pt_test t);
bool mr_perf_test_is_bw(enum mr_pt_test t);

#endif
