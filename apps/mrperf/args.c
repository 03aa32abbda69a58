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
	       "       mrperf --test=TEST [options] [SERVER]\n"
	       "       ib_write_bw [options] [SERVER]   (mrperf run under a perftest name)\n"
	       "  -s, --size=N          message size, K/M suffixes (default 65536 bw, 2 lat, 8 atomic)\n"
	       "  -a, --all             all sizes 2 .. 2^23\n"
	       "  -n, --iters=N         iterations (default 5000 write_bw, else 1000)\n"
	       "  -D, --duration=S      run for S seconds instead of -n\n"
	       "  -q, --qp=N            number of QPs (1..1024)\n"
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
	       "      --yield           busy polling yields the CPU after a few empty polls (for hosts\n"
	       "                        with fewer CPUs than pollers: apps and metaroced engines)\n"
	       "      --test=TEST       the test, instead of the first argument\n"
	       " perftest's flags (docs/mrperf.md: every stock flag and how mrperf handles it):\n"
	       "  -b, --bidirectional   bw tests: both sides send; rows sum both directions\n"
	       "      --report-both     with -b: each direction's row too\n"
	       "  -e, --events          sleep on CQ events instead of polling\n"
	       "  -I, --inline_size=N   post messages up to N bytes inline (write/send)\n"
	       "  -l, --post_list=N     post N WRs per call (bw tests; CQ moderation becomes N)\n"
	       "  -o, --outs=N          outstanding READs/atomics (1..16, default 16)\n"
	       "      --use-srq         receives from a shared receive queue (send tests)\n"
	       "  -c, --connection=RC   RC only\n"
	       "  -A, --atomic_type=T   FETCH_AND_ADD (default) or CMP_AND_SWAP\n"
	       "  -S, --sl=0            SL 0 only\n"
	       "      --tclass=N        traffic class (IPv4 ToS / IPv6 TC byte)\n"
	       "  -L, --hop_limit=N     IP TTL / hop limit (default 64)\n"
	       "      --retry_count=N   QP retry count 0..7 (default 7)\n"
	       "  -N, --noPeak          no peak bandwidth (reported as 0)\n"
	       "  -H, --report-histogram  lat tests: print every sample\n"
	       "  -U, --report-unsorted   lat tests: every sample, in order\n"
	       "  -w, --limit_bw=X      fail (exit 1) if the average bandwidth is below X\n"
	       "  -y, --limit_msgrate=X fail (exit 1) if the message rate is below X Mpps\n"
	       "      --out_json        write the results as JSON (perftest_out.json)\n"
	       "      --out_json_file=F JSON file name (as --json=F)\n"
	       "      --run_infinitely  bw tests: a row every -D seconds (default 5) until killed\n"
	       "      --perform_warm_up write/read/atomic bw: warm up before measuring\n"
	       "      --ipv6            use the daemon's IPv6 GID\n"
	       "      --dont_xchg_versions  skip the version step of the setup exchange\n"
	       "      --wait_destroy=S  wait S seconds before freeing the resources\n"
	       "  -V, --version\n"
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
	O_DEV, O_GBITS, O_VERIFY, O_SEED, O_JSON, O_SOCK, O_HELP, O_METAROCE, O_YIELD, O_ENTROPIES, O_CC,
	O_QPTO, O_IBPORT, O_TEST, O_VERSION,
	/* perftest's other flags */
	O_BIDIR, O_REPORT_BOTH, O_EVENTS, O_VECTOR, O_INLINE, O_POST_LIST, O_OUTS, O_SRQ, O_CONN,
	O_SL, O_TCLASS, O_HOP, O_RETRY, O_NOPEAK, O_HIST, O_UNSORTED, O_ATOMIC_TYPE, O_OUT_JSON,
	O_OUT_JSON_FILE, O_LIMIT_BW, O_LIMIT_RATE, O_RUN_INF, O_WARM_UP, O_IPV6, O_NO_XCHG,
	O_WAIT_DESTROY, O_PKEY, O_FORCE_LINK,
	O_IGNORE,  /* accepted, no effect on metaroce (why: the note printed under the header) */
	O_REJECT,  /* refused with why: metaroce cannot do what perftest would */
};

/* Every flag of stock perftest 4.5's ib_{write,read,send,atomic}_{bw,lat} --help, plus
 * mrperf's own (--verify, --seed, --json, --sock, --metaroce, --entropies, --cc, --test).
 * docs/mrperf.md lists them with their handling; tests/mrperf/test_perftest_flags.py checks
 * this table against the installed tools' --help. */
static const struct opt {
	char shrt;
	const char *lng;
	bool arg;
	enum opt_id id;
	const char *why;   /* O_IGNORE / O_REJECT */
} opts[] = {
	{ 's', "size", true, O_SIZE, NULL },        { 'a', "all", false, O_ALL, NULL },
	{ 'n', "iters", true, O_ITERS, NULL },      { 'D', "duration", true, O_DUR, NULL },
	{ 'q', "qp", true, O_QP, NULL },            { 'm', "mtu", true, O_MTU, NULL },
	{ 'p', "port", true, O_PORT, NULL },        { 't', "tx-depth", true, O_TX, NULL },
	{ 'r', "rx-depth", true, O_RX, NULL },      { 'Q', "cq-mod", true, O_CQMOD, NULL },
	{ 'F', "CPU-freq", false, O_FREQ, NULL },   { 'x', "gid-index", true, O_GID, NULL },
	{ 'd', "ib-dev", true, O_DEV, NULL },       { 0, "report_gbits", false, O_GBITS, NULL },
	{ 0, "verify", false, O_VERIFY, NULL },     { 0, "seed", true, O_SEED, NULL },
	{ 0, "json", true, O_JSON, NULL },          { 0, "sock", true, O_SOCK, NULL },
	{ 'h', "help", false, O_HELP, NULL },
	{ 0, "metaroce", false, O_METAROCE, NULL }, { 0, "entropies", true, O_ENTROPIES, NULL },
	{ 0, "yield", false, O_YIELD, NULL },
	{ 0, "cc", true, O_CC, NULL },
	{ 'u', "qp-timeout", true, O_QPTO, NULL },
	{ 'i', "ib-port", true, O_IBPORT, NULL },
	{ 0, "test", true, O_TEST, NULL },
	{ 'V', "version", false, O_VERSION, NULL },
	/* implemented */
	{ 'b', "bidirectional", false, O_BIDIR, NULL },
	{ 0, "report-both", false, O_REPORT_BOTH, NULL },
	{ 'e', "events", false, O_EVENTS, NULL },
	{ 'X', "vector", true, O_VECTOR, NULL },
	{ 'I', "inline_size", true, O_INLINE, NULL },
	{ 'l', "post_list", true, O_POST_LIST, NULL },
	{ 'o', "outs", true, O_OUTS, NULL },
	{ 0, "use-srq", false, O_SRQ, NULL },
	{ 'c', "connection", true, O_CONN, NULL },
	{ 'S', "sl", true, O_SL, NULL },
	{ 0, "tclass", true, O_TCLASS, NULL },
	{ 'L', "hop_limit", true, O_HOP, NULL },
	{ 0, "retry_count", true, O_RETRY, NULL },
	{ 'N', "noPeak", false, O_NOPEAK, NULL },
	{ 'H', "report-histogram", false, O_HIST, NULL },
	{ 'U', "report-unsorted", false, O_UNSORTED, NULL },
	{ 'A', "atomic_type", true, O_ATOMIC_TYPE, NULL },
	{ 0, "out_json", false, O_OUT_JSON, NULL },
	{ 0, "out_json_file", true, O_OUT_JSON_FILE, NULL },
	{ 'w', "limit_bw", true, O_LIMIT_BW, NULL },
	{ 'y', "limit_msgrate", true, O_LIMIT_RATE, NULL },
	{ 0, "run_infinitely", false, O_RUN_INF, NULL },
	{ 0, "perform_warm_up", false, O_WARM_UP, NULL },
	{ 0, "ipv6", false, O_IPV6, NULL },
	{ 0, "dont_xchg_versions", false, O_NO_XCHG, NULL },
	{ 0, "wait_destroy", true, O_WAIT_DESTROY, NULL },
	{ 0, "pkey_index", true, O_PKEY, NULL },
	{ 0, "force-link", true, O_FORCE_LINK, NULL },
	/* accepted, no effect */
	{ 0, "mr_per_qp", false, O_IGNORE, "mrperf always registers one MR per QP" },
	{ 0, "use_hugepages", false, O_IGNORE, "buffers are metaroced's shared memory" },
	{ 0, "use_old_post_send", false, O_IGNORE, "mrperf always posts with mrc_post_send" },
	{ 0, "disable_pcie_relaxed", false, O_IGNORE, "no PCIe device" },
	{ 0, "inline_recv", true, O_IGNORE, "no inline-receive (scatter to CQE) in metaroce" },
	{ 0, "recv_post_list", true, O_IGNORE, "receives are posted one by one" },
	{ 'f', "margin", true, O_IGNORE, "-D measures the whole period (no margins)" },
	/* refused: each changes what perftest would measure and metaroce cannot do it */
	{ 'R', "rdma_cm", false, O_REJECT, "metaroce has no RDMA CM; the TCP setup exchange is used" },
	{ 'z', "com_rdma_cm", false, O_REJECT, "metaroce has no RDMA CM; the TCP setup exchange is used" },
	{ 'T', "tos", true, O_REJECT, "perftest applies it to RDMA CM QPs only (-R), which metaroce "
				    "lacks; use --tclass" },
	{ 0, "source_ip", true, O_REJECT, "it binds the RDMA CM, which metaroce lacks" },
	{ 'O', "dualport", false, O_REJECT, "metaroced has one port" },
	{ 0, "report-per-port", false, O_REJECT, "metaroced has one port (no -O)" },
	{ 'g', "mcg", false, O_REJECT, "metaroce has no multicast (UD) QPs" },
	{ 'M', "MGID", true, O_REJECT, "metaroce has no multicast (UD) QPs" },
	{ 'C', "report-cycles", false, O_REJECT, "mrperf times with CLOCK_MONOTONIC, it has no "
					      "cycle counts to report" },
	{ 'W', "report-counters", true, O_REJECT, "no sysfs counters; use mrstat --watch" },
	{ 0, "cpu_util", false, O_REJECT, "not implemented; measure with pidstat or mrstat" },
	{ 0, "dlid", true, O_REJECT, "RoCE has no LIDs; the peer's GID comes from the exchange" },
	{ 0, "mmap", true, O_REJECT, "buffers must be metaroced's shared memory" },
	{ 0, "mmap-offset", true, O_REJECT, "buffers must be metaroced's shared memory" },
	{ 0, "odp", false, O_REJECT, "metaroce has no on-demand paging" },
	{ 0, "output", true, O_REJECT, "not implemented; read the figures from --json" },
	{ 0, "reversed", false, O_REJECT, "not implemented; swap the client and server instead" },
	{ 0, "latency_gap", true, O_REJECT, "not implemented" },
	{ 0, "log_dci_streams", true, O_REJECT, "DC transport only; metaroce has RC only" },
	{ 0, "log_active_dci_streams", true, O_REJECT, "DC transport only; metaroce has RC only" },
	{ 0, "aes_xts", false, O_REJECT, "metaroce has no encryption offload" },
	{ 0, "encrypt_on_tx", false, O_REJECT, "metaroce has no encryption offload" },
	{ 0, "sig_before", false, O_REJECT, "metaroce has no signature/encryption offload" },
	{ 0, "aes_block_size", true, O_REJECT, "metaroce has no encryption offload" },
	{ 0, "data_enc_keys_number", true, O_REJECT, "metaroce has no encryption offload" },
	{ 0, "kek_path", true, O_REJECT, "metaroce has no encryption offload" },
	{ 0, "credentials_path", true, O_REJECT, "metaroce has no encryption offload" },
	{ 0, "data_enc_key_app_path", true, O_REJECT, "metaroce has no encryption offload" },
	{ 0, "rate_limit", true, O_REJECT, "no rate limiter in metaroce; --cc paces MetaRoCE QPs" },
	{ 0, "rate_units", true, O_REJECT, "no rate limiter in metaroce (--rate_limit)" },
	{ 0, "rate_limit_type", true, O_REJECT, "no rate limiter in metaroce (--rate_limit)" },
	{ 0, "burst_size", true, O_REJECT, "no rate limiter in metaroce (--rate_limit)" },
	{ 0, "typical_pkt_size", true, O_REJECT, "no rate limiter in metaroce (--rate_limit)" },
	/* newer perftest releases (not in 4.5's --help) */
	{ 0, "flows", true, O_REJECT, "raw Ethernet QPs only" },
	{ 0, "ipv6-addr", true, O_REJECT, "raw Ethernet QPs only; use --ipv6" },
	{ 0, "payload_file_path", true, O_REJECT, "not implemented; --verify fills a seeded pattern" },
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

/* "-R/--rdma_cm" or "--use-srq": both spellings, so the message names what was typed. */
static const char *both_names(const struct opt *o, char *buf, size_t len)
{
	if (o->shrt != 0)
		snprintf(buf, len, "-%c/--%s", o->shrt, o->lng);
	else
		snprintf(buf, len, "--%s", o->lng);
	return buf;
}

static int reject(char *err, size_t len, const struct opt *o, const char *fmt, ...)
{
	char names[64], why[192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (err != NULL && len > 0)
		snprintf(err, len, "%s: %s", both_names(o, names, sizeof(names)), why);
	return -ENOTSUP;
}

struct seen {
	bool size, iters, tx, mtu, cq_mod, test, post_list, json_file, out_json, rx;
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

/* A decimal number >= 0 (-w/-y limits). */
static int parse_double(const char *s, double *v)
{
	char *end;

	if (s == NULL || *s == '\0' || *s == '-' || *s == ' ')
		return -EINVAL;
	errno = 0;
	*v = strtod(s, &end);
	return errno != 0 || *end != '\0' || !(*v >= 0) ? -EINVAL : 0;
}

static int note(struct mr_perf_args *a, const struct opt *o, char *err, size_t len)
{
	if (a->nnotes >= MR_PERF_MAX_NOTES)
		return fail(err, len, "too many ignored flags (--%s)", o->lng);
	a->note_flag[a->nnotes] = o->lng;
	a->note_why[a->nnotes] = o->why;
	a->nnotes++;
	return 0;
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
		NUM(1, MR_PERF_MAX_QPS);
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
		seen->rx = true;
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
	case O_OUT_JSON_FILE:
		if (val[0] == '\0')
			return fail(err, len, "invalid value '' for %s (expected a path)", flag);
		if (o->id == O_SOCK) {
			a->sock = val;
		} else {
			a->json = val;
			seen->json_file = true;
		}
		break;
	case O_OUT_JSON:
		seen->out_json = true;
		break;
	case O_HELP:
		a->help = true;
		break;
	case O_VERSION:
		a->version = true;
		break;
	case O_METAROCE:
		a->metaroce = true;
		break;
	case O_YIELD:
		a->yield = true;
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
	case O_TEST:
		if (mr_perf_test_from_name(val, &a->test) < 0)
			return fail(err, len, "invalid value '%s' for %s (expected write_bw, write_lat, "
				    "send_bw, send_lat, read_bw, read_lat, atomic_bw or atomic_lat)",
				    val, flag);
		seen->test = true;
		break;
	case O_BIDIR:
		a->bidir = true;
		break;
	case O_REPORT_BOTH:
		a->report_both = true;
		break;
	case O_EVENTS:
		a->events = true;
		break;
	case O_VECTOR:
		NUM(0, 1024);
		if (v != 0)
			return reject(err, len, o, "a metaroce CQ has one completion vector (0)");
		break;
	case O_INLINE:
		NUM(0, 65536);
		a->inline_size = (unsigned)v;
		break;
	case O_POST_LIST:
		NUM(1, MR_PERF_MAX_POST_LIST);
		a->post_list = (unsigned)v;
		seen->post_list = true;
		break;
	case O_OUTS:
		NUM(1, 255);
		if (v > MR_PERF_MAX_OUT_READS)
			return reject(err, len, o, "%s outstanding, metaroced's RC QPs offer at most %d "
				      "READ/atomic responder resources", val, MR_PERF_MAX_OUT_READS);
		a->out_reads = (unsigned)v;
		break;
	case O_SRQ:
		a->use_srq = true;
		break;
	case O_CONN:
		if (strcmp(val, "RC") == 0)
			break;
		if (strcmp(val, "UC") == 0 || strcmp(val, "UD") == 0 || strcmp(val, "XRC") == 0 ||
		    strcmp(val, "DC") == 0 || strcmp(val, "SRD") == 0)
			return reject(err, len, o, "%s: metaroce has RC QPs only", val);
		return fail(err, len, "invalid value '%s' for %s (expected RC; UC/UD/XRC/DC/SRD are "
			    "perftest's others)", val, flag);
	case O_SL:
		NUM(0, 15);
		if (v != 0)
			return reject(err, len, o, "SL %s: metaroce sends untagged RoCE v2 frames (no "
				      "VLAN priority); use --tclass for DSCP", val);
		break;
	case O_TCLASS:
		NUM(0, 255);
		a->tclass = (int)v;
		break;
	case O_HOP:
		NUM(0, 255);
		a->hop_limit = (unsigned)v;
		break;
	case O_RETRY:
		NUM(0, 7); /* IBA 9.7.6.1.3: 3 bits */
		a->retry_count = (unsigned)v;
		break;
	case O_NOPEAK:
		a->no_peak = true;
		break;
	case O_HIST:
		a->histogram = true;
		break;
	case O_UNSORTED:
		a->unsorted = a->histogram = true;
		break;
	case O_ATOMIC_TYPE:
		if (strcmp(val, "CMP_AND_SWAP") == 0)
			a->atomic_cas = true;
		else if (strcmp(val, "FETCH_AND_ADD") == 0)
			a->atomic_cas = false;
		else
			return fail(err, len, "invalid value '%s' for %s (expected CMP_AND_SWAP or "
				    "FETCH_AND_ADD)", val, flag);
		break;
	case O_LIMIT_BW:
	case O_LIMIT_RATE:
		if (parse_double(val, o->id == O_LIMIT_BW ? &a->limit_bw : &a->limit_msgrate) < 0)
			return fail(err, len, "invalid value '%s' for %s (expected a number >= 0)",
				    val, flag);
		break;
	case O_RUN_INF:
		a->run_infinitely = true;
		break;
	case O_WARM_UP:
		a->warm_up = true;
		break;
	case O_IPV6:
		a->ipv6 = true;
		break;
	case O_NO_XCHG:
		a->no_xchg_versions = true;
		break;
	case O_WAIT_DESTROY:
		NUM(0, 3600);
		a->wait_destroy = (unsigned)v;
		break;
	case O_PKEY:
		NUM(0, 65535);
		if (v != 0)
			return reject(err, len, o, "index %s: metaroced has one P_Key (index 0, "
				      "0xffff)", val);
		break;
	case O_FORCE_LINK:
		if (strcmp(val, "Ethernet") == 0)
			break;
		if (strcmp(val, "IB") == 0)
			return reject(err, len, o, "IB: metaroce is RoCE v2 (Ethernet) only");
		return fail(err, len, "invalid value '%s' for %s (expected Ethernet or IB)", val, flag);
	case O_IGNORE:
		return note(a, o, err, len);
	case O_REJECT:
		return reject(err, len, o, "%s", o->why);
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
	a->post_list = 1;
	a->tclass = -1;
	a->hop_limit = 64;    /* perftest's default hop limit */
	a->retry_count = 7;
	/* as libmetaroce's mrc_open(NULL) */
	a->sock = getenv("METAROCE_SOCK") != NULL && getenv("METAROCE_SOCK")[0] != '\0' ?
		  getenv("METAROCE_SOCK") : "/run/metaroce/metaroced.sock";
}

int mr_perf_test_from_prog(const char *argv0, enum mr_pt_test *t)
{
	const char *base;

	if (argv0 == NULL)
		return -EINVAL;
	base = strrchr(argv0, '/');
	base = base != NULL ? base + 1 : argv0;
	if (strncmp(base, "ib_", 3) != 0)
		return -EINVAL;
	return mr_perf_test_from_name(base + 3, t);
}

/* The flag's names for messages about combinations ("-b/--bidirectional"). */
static const char *named(enum opt_id id, char *buf, size_t len)
{
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		if (opts[i].id == id)
			return both_names(&opts[i], buf, len);
	return "?";
}

static const struct opt *opt_of(enum opt_id id)
{
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		if (opts[i].id == id)
			return &opts[i];
	return NULL;
}

/* Combinations that perftest refuses or that metaroce cannot run, after the defaults. */
static int check_combinations(struct mr_perf_args *a, const struct seen *seen, char *err,
			      size_t len)
{
	bool bw = mr_perf_test_is_bw(a->test);
	bool rd_atomic = a->test == MR_PT_READ_BW || a->test == MR_PT_READ_LAT ||
			 a->test == MR_PT_ATOMIC_BW || a->test == MR_PT_ATOMIC_LAT;
	bool send = a->test == MR_PT_SEND_BW || a->test == MR_PT_SEND_LAT;
	bool atomic = a->test == MR_PT_ATOMIC_BW || a->test == MR_PT_ATOMIC_LAT;
	const char *t = mr_perf_test_name(a->test);
	char n[64];

	if (a->bidir && !bw)
		return reject(err, len, opt_of(O_BIDIR), "bandwidth tests only (%s is a ping-pong)", t);
	if (a->bidir && send && a->duration)
		return reject(err, len, opt_of(O_BIDIR), "with -D on a send test: a receiver cannot "
			      "tell when the peer's period ends; use -n");
	if (a->report_both && !a->bidir)
		return fail(err, len, "%s needs -b/--bidirectional", named(O_REPORT_BOTH, n, sizeof(n)));
	if (a->events && a->test == MR_PT_WRITE_LAT)
		return reject(err, len, opt_of(O_EVENTS), "write_lat polls the peer's write in memory, "
			      "not a CQ (perftest has no -e for it)");
	if (a->inline_size > 0 && rd_atomic)
		return reject(err, len, opt_of(O_INLINE), "%s: RDMA READ and atomic requests carry no "
			      "payload to inline", t);
	if (a->post_list > 1) {
		if (!bw)
			return reject(err, len, opt_of(O_POST_LIST), "bandwidth tests only");
		if (seen->cq_mod && a->cq_mod != a->post_list)
			return fail(err, len, "-l/--post_list %u signals the last WR of each list: "
				    "-Q/--cq-mod must be %u or left out", a->post_list, a->post_list);
		a->cq_mod = a->post_list;
		if (a->tx_depth < a->post_list)
			return fail(err, len, "-l/--post_list %u needs -t/--tx-depth of at least %u "
				    "(is %u)", a->post_list, a->post_list, a->tx_depth);
		if (a->duration == 0 && a->iters % a->post_list != 0)
			return fail(err, len, "-l/--post_list %u: -n/--iters (%llu) must be a multiple "
				    "of it", a->post_list, (unsigned long long)a->iters);
	}
	if (a->out_reads != 0 && !rd_atomic)
		return reject(err, len, opt_of(O_OUTS), "read and atomic tests only (%s has no "
			      "outstanding READs)", t);
	if (a->use_srq && !send)
		return reject(err, len, opt_of(O_SRQ), "send tests only (%s posts no receives)", t);
	if (a->atomic_cas && !atomic)
		return fail(err, len, "-A/--atomic_type applies to atomic tests only");
	if (a->histogram && bw)
		return reject(err, len, opt_of(a->unsorted ? O_UNSORTED : O_HIST),
			      "latency tests only");
	if (a->no_peak && !bw)
		return reject(err, len, opt_of(O_NOPEAK), "bandwidth tests only");
	if ((a->limit_bw > 0 || a->limit_msgrate > 0) && !bw)
		return reject(err, len, opt_of(a->limit_bw > 0 ? O_LIMIT_BW : O_LIMIT_RATE),
			      "bandwidth tests only");
	if (a->run_infinitely) {
		if (!bw)
			return reject(err, len, opt_of(O_RUN_INF), "bandwidth tests only");
		if (a->bidir || a->all || seen->iters)
			return fail(err, len, "--run_infinitely cannot be combined with %s",
				    a->bidir ? "-b/--bidirectional" : a->all ? "-a/--all" :
				    "-n/--iters");
		if (a->verify)
			return fail(err, len, "--run_infinitely cannot be combined with --verify");
		if (a->duration == 0)
			a->duration = 5; /* perftest's DEF_DURATION: a row every 5 s */
	}
	if (a->warm_up && (send || !bw))
		return reject(err, len, opt_of(O_WARM_UP), "write, read and atomic bandwidth tests "
			      "only (as perftest)");
	if (a->no_xchg_versions && a->metaroce)
		return fail(err, len, "--metaroce rides in the version exchange: it cannot be "
			    "combined with --dont_xchg_versions");
	if (seen->out_json && !seen->json_file)
		a->json = MR_PERF_JSON_DEFAULT;
	return 0;
}

int mr_perf_args_parse(int argc, const char *const argv[], struct mr_perf_args *a, char *err,
		       size_t errlen)
{
	struct seen seen = { 0 };
	const char *pos[3];
	unsigned npos = 0;
	bool only_pos = false;
	enum mr_pt_test prog_test;
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
			if (npos == sizeof(pos) / sizeof(pos[0]))
				return fail(err, errlen, "unexpected argument '%s'", s);
			pos[npos++] = s;
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
	if (a->help || a->version)
		return 0;
	/* The test: --test, else the program's name (ib_write_bw), else the first positional. */
	if (!seen.test && mr_perf_test_from_prog(argv[0], &prog_test) == 0) {
		a->test = prog_test;
		seen.test = true;
	}
	for (unsigned k = 0; k < npos; k++) {
		if (!seen.test) {
			if (mr_perf_test_from_name(pos[k], &a->test) < 0)
				return fail(err, errlen, "unknown test '%s'", pos[k]);
			seen.test = true;
		} else if (a->server == NULL) {
			a->server = pos[k];
		} else {
			return fail(err, errlen, "unexpected argument '%s'", pos[k]);
		}
	}
	if (!seen.test)
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
	r = check_combinations(a, &seen, err, errlen);
	if (r < 0)
		return r;
	if (a->cq_mod > a->tx_depth)
		a->cq_mod = a->tx_depth;
	return 0;
}
