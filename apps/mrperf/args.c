/* SPDX-License-Identifier: MIT
 * mrperf command line parser (see args.h). Hand-written rather than getopt_long so that it is
 * reentrant for the tests and every error can name the flag exactly as the user typed it.
 */
#include "args.h"
#include "negotiate.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *name;
	enum mr_pt_test t;
} tests[] = {
	{ "write_bw", MR_PT_WRITE_BW },   { "write_lat", MR_PT_WRITE_LAT },
	{ "send_bw", MR_PT_SEND_BW },     { "send_lat", MR_PT_SEND_LAT },
	{ "read_bw", MR_PT_READ_BW },     { "read_lat", MR_PT_READ_LAT },
	{ "atomic_bw", MR_PT_ATOMIC_BW }, { "atomic_lat", MR_PT_ATOMIC_LAT },
};

int mr_perf_test_from_name(const char *name, enum mr_pt_test *t)
{
	for (size_t i = 0; name != NULL && i < sizeof(tests) / sizeof(tests[0]); i++)
		if (strcmp(name, tests[i].name) == 0) {
			*t = tests[i].t;
			return 0;
		}
	return -EINVAL;
}

const char *mr_perf_test_name(enum mr_pt_test t)
{
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (tests[i].t == t)
			return tests[i].name;
	return "unknown";
}

bool mr_perf_test_is_bw(enum mr_pt_test t)
{
	return t == MR_PT_WRITE_BW || t == MR_PT_READ_BW || t == MR_PT_SEND_BW ||
	       t == MR_PT_ATOMIC_BW;
}

const char *mr_perf_usage(void)
{
	return "usage: mrperf write_bw|write_lat|send_bw|send_lat|read_bw|read_lat|atomic_bw|atomic_lat"
	       " [options] [SERVER]\n"
	       "  -s, --size=N          message size, K/M suffixes (default 65536 bw, 2 lat, 8 atomic)\n"
	       "  -a, --all             all sizes 2 .. 2^23\n"
	       "  -n, --iters=N         iterations (default 5000 write_bw, else 1000)\n"
	       "  -D, --duration=S      run for S seconds instead of -n\n"
	       "  -q, --qp=N            number of QPs (1..64)\n"
	       "  -m, --mtu=N           IB MTU 256|512|1024|2048|4096 (default: the port's)\n"
	       "  -p, --port=N          TCP port for the setup exchange (default 18515)\n"
	       "  -t, --tx-depth=N      send queue depth (default 128 bw, 1 lat)\n"
	       "  -r, --rx-depth=N      receive queue depth for send tests (default 512)\n"
	       "  -Q, --cq-mod=N        signal one send in N (default 100)\n"
	       "  -u, --qp-timeout=N    local ACK timeout 4.096 us * 2^N (default 14)\n"
	       "  -F, --CPU-freq        accepted, ignored (times come from CLOCK_MONOTONIC)\n"
	       "  -x, --gid-index=N     accepted (the daemon's RoCE v2 GID is used)\n"
	       "  -d, --ib-dev=NAME     accepted, shown in the header\n"
	       "  -i, --ib-port=N       port (metaroced has port 1)\n"
	       "      --report_gbits    bandwidth in Gb/sec instead of MB/sec\n"
	       "      --verify          seeded data pattern, every received byte checked\n"
	       "      --seed=N          pattern seed for --verify (default 1)\n"
	       "      --json=FILE       write the results as JSON\n"
	       "      --sock=PATH       metaroced socket (default $METAROCE_SOCK, else\n"
	       "                        /run/metaroce/metaroced.sock)\n"
	       "      --metaroce        offer MetaRoCE (used only if the peer offers it too)\n"
	       "      --entropies=N     MetaRoCE UDP source ports to spray over, 1..256 (default 16)\n"
	       "      --cc=ALGO         MetaRoCE congestion control: none|dcqcn|metaroce (default none)\n"
	       "  -h, --help\n";
}

static int fail(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && len > 0) {
		va_start(ap, fmt);
		vsnprintf(err, len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* Whole-string unsigned decimal within [lo, hi]. */
static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *v)
{
	char *end;
	unsigned long long x;

	if (s == NULL || *s == '\0' || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || x < lo || x > hi)
		return -EINVAL;
	*v = x;
	return 0;
}

enum opt_id {
	O_SIZE, O_ALL, O_ITERS, O_DUR, O_QP, O_MTU, O_PORT, O_TX, O_RX, O_CQMOD, O_FREQ, O_GID,
	O_DEV, O_GBITS, O_VERIFY, O_SEED, O_JSON, O_SOCK, O_HELP, O_METAROCE, O_ENTROPIES, O_CC,
	O_QPTO, O_IBPORT,
};

static const struct opt {
	char shrt;
	const char *lng;
	bool arg;
	enum opt_id id;
} opts[] = {
	{ 's', "size", true, O_SIZE },        { 'a', "all", false, O_ALL },
	{ 'n', "iters", true, O_ITERS },      { 'D', "duration", true, O_DUR },
	{ 'q', "qp", true, O_QP },            { 'm', "mtu", true, O_MTU },
	{ 'p', "port", true, O_PORT },        { 't', "tx-depth", true, O_TX },
	{ 'r', "rx-depth", true, O_RX },      { 'Q', "cq-mod", true, O_CQMOD },
	{ 'F', "CPU-freq", false, O_FREQ },   { 'x', "gid-index", true, O_GID },
	{ 'd', "ib-dev", true, O_DEV },       { 0, "report_gbits", false, O_GBITS },
	{ 0, "verify", false, O_VERIFY },     { 0, "seed", true, O_SEED },
	{ 0, "json", true, O_JSON },          { 0, "sock", true, O_SOCK },
	{ 'h', "help", false, O_HELP },
	{ 0, "metaroce", false, O_METAROCE }, { 0, "entropies", true, O_ENTROPIES },
	{ 0, "cc", true, O_CC },
	{ 'u', "qp-timeout", true, O_QPTO },
	{ 'i', "ib-port", true, O_IBPORT },
};

static const struct opt *find_short(char c)
{
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		if (opts[i].shrt == c)
			return &opts[i];
	return NULL;
}

static const struct opt *find_long(const char *s, size_t n)
{
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		if (strlen(opts[i].lng) == n && strncmp(opts[i].lng, s, n) == 0)
			return &opts[i];
	return NULL;
}

struct seen {
	bool size, iters, tx, mtu, cq_mod;
};

/* A size with an optional K or M suffix (x1024, x1024^2), as perftest's -s accepts. */
static int parse_size(const char *s, uint64_t lo, uint64_t hi, uint64_t *v)
{
	char buf[32];
	size_t n = s != NULL ? strlen(s) : 0;
	uint64_t mul = 1;

	if (n == 0 || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n + 1);
	if (buf[n - 1] == 'K' || buf[n - 1] == 'k')
		mul = 1024;
	else if (buf[n - 1] == 'M' || buf[n - 1] == 'm')
		mul = 1024 * 1024;
	if (mul > 1)
		buf[n - 1] = '\0';
	if (parse_u64(buf, 1, hi, v) < 0 || *v > hi / mul)
		return -EINVAL;
	*v *= mul;
	return *v < lo ? -EINVAL : 0;
}

static int apply(const struct opt *o, const char *flag, const char *val, struct mr_perf_args *a,
		 struct seen *seen, char *err, size_t len)
{
	uint64_t v;

#define NUM(lo, hi)                                                                        \
	do {                                                                               \
		if (parse_u64(val, (lo), (hi), &v) < 0)                                    \
			return fail(err, len, "invalid value '%s' for %s (expected %llu..%llu)", \
				    val, flag, (unsigned long long)(lo),                   \
				    (unsigned long long)(hi));                             \
	} while (0)
	switch (o->id) {
	case O_SIZE:
		if (parse_size(val, 1, MR_PERF_MAX_SIZE, &v) < 0)
			return fail(err, len, "invalid value '%s' for %s (expected 1..%llu, or with a "
				    "K or M suffix)", val, flag, (unsigned long long)MR_PERF_MAX_SIZE);
		a->size = v;
		seen->size = true;
		break;
	case O_ALL:
		a->all = true;
		break;
	case O_ITERS:
		/* perftest needs a few samples: latency drops 2 and peak uses windows */
		NUM(5, 1000000000ull);
		a->iters = v;
		seen->iters = true;
		break;
	case O_DUR:
		NUM(1, 86400);
		a->duration = (unsigned)v;
		break;
	case O_QP:
		NUM(1, 64);
		a->num_qps = (unsigned)v;
		break;
	case O_MTU:
		NUM(256, 4096);
		if (v != 256 && v != 512 && v != 1024 && v != 2048 && v != 4096)
			return fail(err, len, "invalid value '%s' for %s (expected 256|512|1024|2048|4096)",
				    val, flag);
		a->mtu = (unsigned)v;
		break;
	case O_PORT:
		NUM(1, 65535);
		a->port = (uint16_t)v;
		break;
	case O_TX:
		NUM(1, 16384);
		a->tx_depth = (unsigned)v;
		seen->tx = true;
		break;
	case O_RX:
		NUM(1, 16384);
		a->rx_depth = (unsigned)v;
		break;
	case O_CQMOD:
		NUM(1, 1024);
		a->cq_mod = (unsigned)v;
		seen->cq_mod = true;
		break;
	case O_QPTO:
		/* IBA 9.7.6.1.3: 5 bits; 0 (infinite) is refused, as perftest does */
		NUM(1, 31);
		a->qp_timeout = (unsigned)v;
		break;
	case O_FREQ:
		break;
	case O_IBPORT:
		/* perftest's -i picks the HCA port; metaroced is a one-port device. */
		NUM(1, 255);
		if (v != 1)
			return fail(err, len, "invalid value '%s' for %s: metaroced has one port (1); "
				    "see `mrstat link`", val, flag);
		break;
	case O_GID:
		NUM(0, 255);
		a->gid_index = (int)v;
		break;
	case O_DEV:
		if (val[0] == '\0')
			return fail(err, len, "invalid value '' for %s", flag);
		a->device = val;
		break;
	case O_GBITS:
		a->gbits = true;
		break;
	case O_VERIFY:
		a->verify = true;
		break;
	case O_SEED:
		NUM(0, UINT32_MAX);
		a->seed = (uint32_t)v;
		break;
	case O_JSON:
	case O_SOCK:
		if (val[0] == '\0')
			return fail(err, len, "invalid value '' for %s (expected a path)", flag);
		if (o->id == O_JSON)
			a->json = val;
		else
			a->sock = val;
		break;
	case O_HELP:
		a->help = true;
		break;
	case O_METAROCE:
		a->metaroce = true;
		break;
	case O_ENTROPIES:
		NUM(1, MR_MRC_MAX_ENTROPIES);
		a->entropies = (uint16_t)v;
		break;
	case O_CC:
		if (mr_mrc_cc_from_name(val, &a->cc) < 0)
			return fail(err, len, "invalid value '%s' for %s (expected none|dcqcn|metaroce)",
				    val, flag);
		break;
	}
#undef NUM
	return 0;
}

static void defaults(struct mr_perf_args *a)
{
	memset(a, 0, sizeof(*a));
	a->num_qps = 1;
	a->port = MR_PT_DEFAULT_PORT;
	a->gid_index = -1;
	a->cq_mod = 100;      /* DEF_CQ_MOD */
	a->qp_timeout = 14;   /* DEF_QP_TIME */
	a->rx_depth = 512;    /* DEF_RX_SEND */
	a->seed = 1;
	a->entropies = 16;
	/* as libmetaroce's mrc_open(NULL) */
	a->sock = getenv("METAROCE_SOCK") != NULL && getenv("METAROCE_SOCK")[0] != '\0' ?
		  getenv("METAROCE_SOCK") : "/run/metaroce/metaroced.sock";
}

int mr_perf_args_parse(int argc, const char *const argv[], struct mr_perf_args *a, char *err,
		       size_t errlen)
{
	struct seen seen = { 0 };
	bool have_test = false, only_pos = false;
	int r;

	if (a == NULL || argv == NULL)
		return -EINVAL;
	defaults(a);
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];
		const struct opt *o;
		char flag[64];
		const char *val = NULL;

		if (only_pos || s[0] != '-' || s[1] == '\0') {
			if (!have_test) {
				if (mr_perf_test_from_name(s, &a->test) < 0)
					return fail(err, errlen, "unknown test '%s'", s);
				have_test = true;
			} else if (a->server == NULL) {
				a->server = s;
			} else {
				return fail(err, errlen, "unexpected argument '%s'", s);
			}
			continue;
		}
		if (strcmp(s, "--") == 0) {
			only_pos = true;
			continue;
		}
		if (s[1] == '-') {
			const char *eq = strchr(s + 2, '=');
			size_t n = eq != NULL ? (size_t)(eq - (s + 2)) : strlen(s + 2);

			o = find_long(s + 2, n);
			snprintf(flag, sizeof(flag), "--%.*s", (int)(n < 40 ? n : 40), s + 2);
			if (o == NULL)
				return fail(err, errlen, "unknown option '%s'", flag);
			if (eq != NULL) {
				if (!o->arg)
					return fail(err, errlen, "option %s takes no value", flag);
				val = eq + 1;
			}
		} else {
			o = find_short(s[1]);
			snprintf(flag, sizeof(flag), "-%c", s[1]);
			if (o == NULL)
				return fail(err, errlen, "unknown option '%s'", flag);
			if (s[2] != '\0') {
				if (!o->arg)
					return fail(err, errlen, "option %s takes no value", flag);
				val = s + 2;
			}
		}
		if (o->arg && val == NULL) {
			if (i + 1 >= argc)
				return fail(err, errlen, "option %s needs a value", flag);
			val = argv[++i];
		}
		r = apply(o, flag, val, a, &seen, err, errlen);
		if (r < 0)
			return r;
	}
	if (a->help)
		return 0;
	if (!have_test)
		return fail(err, errlen, "missing test name (write_bw, send_lat, ...)");
	if (a->duration && (seen.iters || a->all))
		return fail(err, errlen, "-D/--duration cannot be combined with %s",
			    seen.iters ? "-n/--iters" : "-a/--all");
	if (a->test == MR_PT_ATOMIC_BW || a->test == MR_PT_ATOMIC_LAT) {
		/* IBA 9.4.5: atomics operate on exactly 8 bytes */
		if (seen.size && a->size != 8)
			return fail(err, errlen, "invalid value '%llu' for -s/--size: atomic tests use 8",
				    (unsigned long long)a->size);
		if (a->all)
			return fail(err, errlen, "-a/--all is not supported by atomic tests");
		a->size = 8;
	}
	if (mr_perf_test_is_bw(a->test)) {
		if (!seen.size && a->size == 0)
			a->size = 65536;     /* DEF_SIZE_BW */
		if (!seen.iters)     /* DEF_ITERS_WB for write_bw, DEF_ITERS for the others */
			a->iters = a->test == MR_PT_WRITE_BW ? 5000 : 1000;
		if (!seen.tx)
			a->tx_depth = 128;   /* DEF_TX_BW */
	} else {
		if (!seen.size && a->size == 0)
			a->size = 2;         /* DEF_SIZE_LAT */
		if (!seen.iters)
			a->iters = 1000;     /* DEF_ITERS */
		if (!seen.tx)
			a->tx_depth = 1;     /* DEF_TX_LAT */
	}
	if (a->tx_depth > a->iters)
		a->tx_depth = (unsigned)a->iters; /* perftest clamps the same way */
	if (a->cq_mod > a->tx_depth)
		a->cq_mod = a->tx_depth;
	return 0;
}
