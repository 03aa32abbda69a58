/* SPDX-License-Identifier: MIT
 * What mrsim's two modes (mrsim.c: one link, mrsim_fabric.c: the multipath fabric) share:
 * strict table-driven argument parsing, the link impairment flags, the trace/JSON files and
 * the aligned report rows. Each mode keeps its own number syntax where they differ (see the
 * MR_MRSIM_ARG_* kinds) so command lines keep their meaning.
 */
#ifndef MR_MRSIM_CLI_H
#define MR_MRSIM_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/sim_link.h"
#include "sim/sim_qp.h"

enum mr_mrsim_arg_kind {
	MR_MRSIM_ARG_U64,    /* decimal integer in [umin, umax], K/M/G (x1024) if `suffix` */
	MR_MRSIM_ARG_NUM,    /* number (strtod) in [dmin, dmax], K/M (x1024) if `suffix` */
	MR_MRSIM_ARG_INT,    /* integer-valued number with optional K/M, in [dmin, dmax] */
	MR_MRSIM_ARG_STR,    /* any string, or one of `choices` */
};

/* One --flag VALUE. Integer targets are uint8_t/16/32/64 (`width` bytes), NUM a double, STR a
 * const char *. */
struct mr_mrsim_arg {
	const char *flag;
	enum mr_mrsim_arg_kind kind;
	void *out;
	unsigned int width;
	uint64_t umin, umax;
	double dmin, dmax;
	bool suffix;
	bool mtu;                     /* also a power of two (an IBA path MTU) */
	const char *const *choices;   /* STR: NULL-terminated list of accepted values */
	const char *why;              /* STR with choices: the message for anything else */
};

#define MR_MRSIM_U64(f, p, lo, hi, sfx) \
	{ .flag = (f), .kind = MR_MRSIM_ARG_U64, .out = (p), .width = sizeof(*(p)), \
	  .umin = (lo), .umax = (hi), .suffix = (sfx) }
#define MR_MRSIM_NUM(f, p, lo, hi, sfx) \
	{ .flag = (f), .kind = MR_MRSIM_ARG_NUM, .out = (p), .width = sizeof(*(p)), \
	  .dmin = (lo), .dmax = (hi), .suffix = (sfx) }
#define MR_MRSIM_INT(f, p, lo, hi) \
	{ .flag = (f), .kind = MR_MRSIM_ARG_INT, .out = (p), .width = sizeof(*(p)), \
	  .dmin = (lo), .dmax = (hi), .suffix = true }
#define MR_MRSIM_STR(f, p, ch, w) \
	{ .flag = (f), .kind = MR_MRSIM_ARG_STR, .out = (p), .width = sizeof(*(p)), \
	  .choices = (ch), .why = (w) }

/* Flags both modes take with the same meaning. */
struct mr_mrsim_common {
	double loss, burst, reorder, rate_gbps;
	const char *json, *trace;
};

/* The most entries mr_mrsim_common_args() writes. */
#define MR_MRSIM_COMMON_ARGS 9

/* Write the entries of the flags both modes take (--loss, --burst, --reorder, --rate-gbps,
 * --mtu, --timeout-code, --retry, --json, --trace) into a[]; returns how many. `loose` is the
 * fabric mode's number syntax (K/M suffixes, integers written as numbers). */
size_t mr_mrsim_common_args(struct mr_mrsim_arg *a, struct mr_mrsim_common *com,
			    struct mr_sim_qp_cfg *qp, bool loose);
/* Print "mrsim: invalid value 'VAL' for FLAG: WHY" to stderr; returns -1. */
int mr_mrsim_bad(const char *flag, const char *val, const char *why);
/* Parse argv against args[0..n). --help/-h prints usage to stdout and exits 0. Afterwards
 * --burst needs --loss in (0, 1). Returns 0, or -1 after a message on stderr. */
int mr_mrsim_parse(int argc, char **argv, const struct mr_mrsim_arg *args, size_t n,
		   void (*usage)(FILE *f), const struct mr_mrsim_common *com);
/* Apply --loss/--burst/--reorder to a link (the rest of the link is the caller's). */
void mr_mrsim_link_impair(struct mr_sim_link_cfg *l, const struct mr_mrsim_common *com);
/* Open --trace FILE for writing: NULL (after a message) if that fails. */
FILE *mr_mrsim_open_trace(const char *path);
/* Open --json FILE for writing ("-" is stdout if dash_is_stdout): NULL after a message. */
FILE *mr_mrsim_open_json(const char *path, bool dash_is_stdout);
/* One report row: two spaces, the label padded to 17 columns, then the formatted text. */
void mr_mrsim_row(FILE *f, const char *label, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The completion-time row: p50, p99 and (if show_max) max, in microseconds. */
void mr_mrsim_row_latency(FILE *f, uint64_t p50_ns, uint64_t p99_ns, uint64_t max_ns,
			  bool show_max);

#endif
