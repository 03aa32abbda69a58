/* SPDX-License-Identifier: MIT
 * Argument parsing, files and report rows shared by mrsim's modes (see mrsim_cli.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "mrsim_cli.h"

int mr_mrsim_bad(const char *flag, const char *val, const char *why)
{
	fprintf(stderr, "mrsim: invalid value '%s' for %s: %s\n", val, flag, why);
	return -1;
}

/* Strict unsigned decimal: no sign, no blanks, no fraction; exact up to UINT64_MAX. */
static int parse_u64(const char *flag, const char *s, uint64_t min, uint64_t max, bool suffix,
		     uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	if (s[0] == '\0' || s[0] == '-' || s[0] == '+' || s[0] == ' ')
		return mr_mrsim_bad(flag, s, "expected a non-negative integer");
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s)
		return mr_mrsim_bad(flag, s, "expected a non-negative integer");
	if (suffix && *end != '\0' && end[1] == '\0') {
		if (*end == 'K' || *end == 'k')
			mul = 1024;
		else if (*end == 'M' || *end == 'm')
			mul = 1024 * 1024;
		else if (*end == 'G' || *end == 'g')
			mul = 1024ull * 1024 * 1024;
		else
			return mr_mrsim_bad(flag, s, "unknown suffix (K, M or G)");
		end++;
	}
	if (*end != '\0')
		return mr_mrsim_bad(flag, s, "trailing characters");
	if (v > max / mul || v * mul < min || v * mul > max) {
		char why[96];

		snprintf(why, sizeof(why), "must be in [%" PRIu64 ", %" PRIu64 "]", min, max);
		return mr_mrsim_bad(flag, s, why);
	}
	*out = v * mul;
	return 0;
}

/* A finite number (strtod syntax), times 1024 or 1048576 for a K or M suffix if allowed. */
static int parse_num(const char *flag, const char *s, double min, double max, bool suffix,
		     double *out)
{
	char *end;
	double v, mul = 1;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || !isfinite(v) || (!suffix && *end != '\0'))
		return mr_mrsim_bad(flag, s, "expected a number");
	if (*end == 'K' || *end == 'k')
		mul = 1024, end++;
	else if (*end == 'M' || *end == 'm')
		mul = 1048576, end++;
	if (*end != '\0')
		return mr_mrsim_bad(flag, s, "trailing characters");
	v *= mul;
	if (v < min || v > max) {
		char why[96];

		snprintf(why, sizeof(why), "must be in [%g, %g]", min, max);
		return mr_mrsim_bad(flag, s, why);
	}
	*out = v;
	return 0;
}

static void store_uint(void *out, unsigned int width, uint64_t v)
{
	switch (width) {
	case 1: *(uint8_t *)out = (uint8_t)v; break;
	case 2: *(uint16_t *)out = (uint16_t)v; break;
	case 4: *(uint32_t *)out = (uint32_t)v; break;
	default: *(uint64_t *)out = v; break;
	}
}

static bool one_of(const char *val, const char *const *choices)
{
	for (size_t k = 0; choices[k] != NULL; k++)
		if (strcmp(val, choices[k]) == 0)
			return true;
	return false;
}

static int parse_arg(const struct mr_mrsim_arg *a, const char *val)
{
	uint64_t u = 0;
	double d;

	switch (a->kind) {
	case MR_MRSIM_ARG_NUM:
		return parse_num(a->flag, val, a->dmin, a->dmax, a->suffix, (double *)a->out);
	case MR_MRSIM_ARG_STR:
		*(const char **)a->out = val;
		if (a->choices != NULL && !one_of(val, a->choices))
			return mr_mrsim_bad(a->flag, val, a->why);
		return 0;
	case MR_MRSIM_ARG_INT:
		if (parse_num(a->flag, val, a->dmin, a->dmax, true, &d) < 0)
			return -1;
		if (d != floor(d))
			return mr_mrsim_bad(a->flag, val, "expected an integer");
		u = (uint64_t)d;
		break;
	default:
		if (parse_u64(a->flag, val, a->umin, a->umax, a->suffix, &u) < 0)
			return -1;
		break;
	}
	if (a->mtu && (u & (u - 1)) != 0)
		return mr_mrsim_bad(a->flag, val, "must be 256, 512, 1024, 2048 or 4096");
	store_uint(a->out, a->width, u);
	return 0;
}

size_t mr_mrsim_common_args(struct mr_mrsim_arg *a, struct mr_mrsim_common *com,
			    struct mr_sim_qp_cfg *qp, bool loose)
{
	const struct mr_mrsim_arg common[MR_MRSIM_COMMON_ARGS] = {
		MR_MRSIM_NUM("--loss", &com->loss, 0, 1, loose),
		MR_MRSIM_NUM("--burst", &com->burst, 1, 1e6, loose),
		MR_MRSIM_NUM("--reorder", &com->reorder, 0, 1, loose),
		MR_MRSIM_NUM("--rate-gbps", &com->rate_gbps, 0.001, 10000, loose),
		{ .flag = "--mtu", .kind = MR_MRSIM_ARG_U64, .out = &qp->mtu,
		  .width = sizeof(qp->mtu), .umin = 256, .umax = 4096, .mtu = true },
		MR_MRSIM_U64("--timeout-code", &qp->timeout, 1, 31, false),
		MR_MRSIM_U64("--retry", &qp->retry_cnt, 0, 7, false),
		MR_MRSIM_STR("--json", &com->json, NULL, NULL),
		MR_MRSIM_STR("--trace", &com->trace, NULL, NULL),
	};

	for (size_t k = 0; k < MR_MRSIM_COMMON_ARGS; k++) {
		a[k] = common[k];
		/* The fabric mode reads integers as numbers (e.g. "4K" or "1e3"). */
		if (loose && a[k].kind == MR_MRSIM_ARG_U64) {
			a[k].kind = MR_MRSIM_ARG_INT;
			a[k].dmin = (double)a[k].umin;
			a[k].dmax = (double)a[k].umax;
		}
	}
	return MR_MRSIM_COMMON_ARGS;
}

int mr_mrsim_parse(int argc, char **argv, const struct mr_mrsim_arg *args, size_t n,
		   void (*usage)(FILE *f), const struct mr_mrsim_common *com)
{
	for (int i = 1; i < argc; i++) {
		const char *f = argv[i];
		const struct mr_mrsim_arg *a = NULL;

		if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
			usage(stdout);
			exit(0);
		}
		if (strncmp(f, "--", 2) != 0 || i + 1 >= argc) {
			if (strncmp(f, "--", 2) == 0)
				fprintf(stderr, "mrsim: %s needs a value\n", f);
			else
				fprintf(stderr, "mrsim: unexpected argument '%s'\n", f);
			return -1;
		}
		for (size_t k = 0; k < n && a == NULL; k++)
			if (strcmp(f, args[k].flag) == 0)
				a = &args[k];
		if (a == NULL) {
			fprintf(stderr, "mrsim: unknown option '%s'\n", f);
			return -1;
		}
		if (parse_arg(a, argv[++i]) < 0)
			return -1;
	}
	if (com->burst > 0 && !(com->loss > 0 && com->loss < 1)) {
		fprintf(stderr, "mrsim: --burst needs --loss in (0, 1)\n");
		return -1;
	}
	return 0;
}

void mr_mrsim_link_impair(struct mr_sim_link_cfg *l, const struct mr_mrsim_common *com)
{
	if (com->burst > 0)
		mr_sim_link_cfg_burst(l, com->burst, com->loss);
	else
		l->loss = com->loss;
	l->reorder = com->reorder;
}

FILE *mr_mrsim_open_trace(const char *path)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		fprintf(stderr, "mrsim: cannot write --trace %s: %s\n", path, strerror(errno));
	return f;
}

FILE *mr_mrsim_open_json(const char *path, bool dash_is_stdout)
{
	FILE *f = dash_is_stdout && strcmp(path, "-") == 0 ? stdout : fopen(path, "w");

	if (f == NULL)
		fprintf(stderr, "mrsim: cannot write --json %s: %s\n", path, strerror(errno));
	return f;
}

void mr_mrsim_row(FILE *f, const char *label, const char *fmt, ...)
{
	va_list ap;

	fprintf(f, "  %-17s", label);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
}

void mr_mrsim_row_latency(FILE *f, uint64_t p50_ns, uint64_t p99_ns, uint64_t max_ns,
			  bool show_max)
{
	mr_mrsim_row(f, "completion time", "p50 %.1f us, p99 %.1f us", (double)p50_ns / 1e3,
		     (double)p99_ns / 1e3);
	if (show_max)
		fprintf(f, ", max %.1f us", (double)max_ns / 1e3);
	fputc('\n', f);
}
