/* SPDX-License-Identifier: MIT
 * mrsim: run one simulated RC transfer between two metaroce contexts over a seeded impaired link
 * and print a human report (every byte is verified). Exit 0 on success, 1 if any byte is wrong or
 * any work request failed, 2 on a bad argument.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mrsim_fabric.h"
#include "sim/sim_xfer.h"

struct opts {
	struct mr_sim_xfer_cfg cfg;
	double loss, burst, reorder, dup, corrupt, rate_gbps, latency_us;
	const char *json, *trace;
};

static void usage(FILE *f)
{
	fputs("usage: mrsim --op write|write_imm|read|send|send_imm|cmp_swap|fetch_add\n"
	      "             --size BYTES[K|M] --count N [--mtu 256|512|1024|2048|4096]\n"
	      "             [--loss P] [--burst MEAN] [--reorder P] [--dup P] [--corrupt P]\n"
	      "             [--seed S] [--rate-gbps R] [--latency-us L] [--qps N] [--depth N]\n"
	      "             [--timeout-code T] [--retry N] [--json FILE] [--trace FILE]\n"
	      "  --loss P      per-packet loss probability on both directions (0..1)\n"
	      "  --burst MEAN  make loss bursty: Gilbert-Elliott, mean burst MEAN packets,\n"
	      "                overall rate P\n"
	      "  fabric mode (multipath, MetaRoCE, incast): mrsim --fabric 1 --help\n",
	      f);
}

static int bad(const char *flag, const char *val, const char *why)
{
	fprintf(stderr, "mrsim: invalid value '%s' for %s: %s\n", val, flag, why);
	return -1;
}

static int parse_u64(const char *flag, const char *s, uint64_t min, uint64_t max, bool suffix,
		     uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	if (s[0] == '\0' || s[0] == '-' || s[0] == '+' || s[0] == ' ')
		return bad(flag, s, "expected a non-negative integer");
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s)
		return bad(flag, s, "expected a non-negative integer");
	if (suffix && *end != '\0' && end[1] == '\0') {
		if (*end == 'K' || *end == 'k')
			mul = 1024;
		else if (*end == 'M' || *end == 'm')
			mul = 1024 * 1024;
		else if (*end == 'G' || *end == 'g')
			mul = 1024ull * 1024 * 1024;
		else
			return bad(flag, s, "unknown suffix (K, M or G)");
		end++;
	}
	if (*end != '\0')
		return bad(flag, s, "trailing characters");
	if (v > max / mul || v * mul < min || v * mul > max) {
		char why[96];

		snprintf(why, sizeof(why), "must be in [%" PRIu64 ", %" PRIu64 "]", min, max);
		return bad(flag, s, why);
	}
	*out = v * mul;
	return 0;
}

static int parse_double(const char *flag, const char *s, double min, double max, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !isfinite(v))
		return bad(flag, s, "expected a number");
	if (v < min || v > max) {
		char why[96];

		snprintf(why, sizeof(why), "must be in [%g, %g]", min, max);
		return bad(flag, s, why);
	}
	*out = v;
	return 0;
}

static int parse_op(const char *s, enum mr_wr_opcode *op)
{
	static const struct { const char *n; enum mr_wr_opcode op; } ops[] = {
		{ "write", MR_WR_RDMA_WRITE }, { "write_imm", MR_WR_RDMA_WRITE_WITH_IMM },
		{ "read", MR_WR_RDMA_READ }, { "send", MR_WR_SEND },
		{ "send_imm", MR_WR_SEND_WITH_IMM }, { "cmp_swap", MR_WR_ATOMIC_CMP_AND_SWP },
		{ "fetch_add", MR_WR_ATOMIC_FETCH_AND_ADD },
	};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (strcmp(s, ops[i].n) == 0) {
			*op = ops[i].op;
			return 0;
		}
	return bad("--op", s, "expected write, write_imm, read, send, send_imm, cmp_swap or "
			      "fetch_add");
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	uint64_t v;

	memset(o, 0, sizeof(*o));
	mr_sim_xfer_cfg_init(&o->cfg);
	o->cfg.size = 65536;
	o->cfg.count = 16;
	o->cfg.qp.mtu = 4096;
	o->rate_gbps = 100;
	o->latency_us = 5;
	for (int i = 1; i < argc; i++) {
		const char *f = argv[i], *val;
		int rc = 0;

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
		val = argv[++i];
		if (strcmp(f, "--op") == 0) {
			rc = parse_op(val, &o->cfg.op);
		} else if (strcmp(f, "--size") == 0) {
			rc = parse_u64(f, val, 0, 1ull << 30, true, &o->cfg.size);
		} else if (strcmp(f, "--count") == 0) {
			rc = parse_u64(f, val, 1, 1000000, false, &v);
			o->cfg.count = (uint32_t)v;
		} else if (strcmp(f, "--mtu") == 0) {
			rc = parse_u64(f, val, 256, 4096, false, &v);
			if (rc == 0 && (v & (v - 1)) != 0)
				rc = bad(f, val, "must be 256, 512, 1024, 2048 or 4096");
			o->cfg.qp.mtu = (uint32_t)v;
		} else if (strcmp(f, "--loss") == 0) {
			rc = parse_double(f, val, 0, 1, &o->loss);
		} else if (strcmp(f, "--burst") == 0) {
			rc = parse_double(f, val, 1, 1e6, &o->burst);
		} else if (strcmp(f, "--reorder") == 0) {
			rc = parse_double(f, val, 0, 1, &o->reorder);
		} else if (strcmp(f, "--dup") == 0) {
			rc = parse_double(f, val, 0, 1, &o->dup);
		} else if (strcmp(f, "--corrupt") == 0) {
			rc = parse_double(f, val, 0, 1, &o->corrupt);
		} else if (strcmp(f, "--seed") == 0) {
			rc = parse_u64(f, val, 0, UINT64_MAX, false, &o->cfg.seed);
		} else if (strcmp(f, "--rate-gbps") == 0) {
			rc = parse_double(f, val, 0.001, 10000, &o->rate_gbps);
		} else if (strcmp(f, "--latency-us") == 0) {
			rc = parse_double(f, val, 0, 1e7, &o->latency_us);
		} else if (strcmp(f, "--qps") == 0) {
			rc = parse_u64(f, val, 1, MR_SIM_XFER_MAX_QP, false, &v);
			o->cfg.nqp = (uint32_t)v;
		} else if (strcmp(f, "--depth") == 0) {
			rc = parse_u64(f, val, 1, 1024, false, &v);
			o->cfg.depth = (uint32_t)v;
		} else if (strcmp(f, "--timeout-code") == 0) {
			rc = parse_u64(f, val, 1, 31, false, &v);
			o->cfg.qp.timeout = (uint8_t)v;
		} else if (strcmp(f, "--retry") == 0) {
			rc = parse_u64(f, val, 0, 7, false, &v);
			o->cfg.qp.retry_cnt = (uint8_t)v;
		} else if (strcmp(f, "--json") == 0) {
			o->json = val;
		} else if (strcmp(f, "--trace") == 0) {
			o->trace = val;
		} else {
			fprintf(stderr, "mrsim: unknown option '%s'\n", f);
			return -1;
		}
		if (rc < 0)
			return -1;
	}
	if (o->burst > 0 && !(o->loss > 0 && o->loss < 1)) {
		fprintf(stderr, "mrsim: --burst needs --loss in (0, 1)\n");
		return -1;
	}
	if (o->cfg.size * o->cfg.count > (4ull << 30)) {
		fprintf(stderr, "mrsim: --size x --count exceeds 4 GiB of simulated memory\n");
		return -1;
	}
	return 0;
}

static void apply_link(struct opts *o)
{
	struct mr_sim_xfer_cfg *c = &o->cfg;

	for (int dir = 0; dir < 2; dir++) {
		struct mr_sim_link_cfg *l = dir ? &c->link_ba : &c->link_ab;

		mr_sim_link_cfg_init(l);
		l->rate_bps = (uint64_t)llround(o->rate_gbps * 1e9);
		l->latency_ns = (uint64_t)llround(o->latency_us * 1e3);
		if (o->burst > 0)
			mr_sim_link_cfg_burst(l, o->burst, o->loss);
		else
			l->loss = o->loss;
		l->reorder = o->reorder;
		l->reorder_delay_ns = 4 * l->latency_ns + 1000; /* overtaken by later packets */
		l->dup = o->dup;
		l->corrupt = o->corrupt;
		/* Distinct streams per direction, all derived from --seed. */
		l->seed = c->seed * 2 + (uint64_t)dir + 1;
	}
}

static uint64_t drops(const struct mr_sim_link_stats *s)
{
	uint64_t n = 0;

	for (int f = 1; f < MR_SIM_FATE_NR; f++)
		n += s->dropped[f];
	return n;
}

static void print_report(FILE *f, const struct opts *o, const struct mr_sim_xfer_result *r,
			 bool ok)
{
	const struct mr_sim_xfer_cfg *c = &o->cfg;

	fprintf(f, "mrsim: %s %" PRIu64 " B x %u over %u QP(s), MTU %u, %.3g Gb/s, %.3g us, "
		   "loss %.3g%%%s, reorder %.3g%%, dup %.3g%%, seed %" PRIu64 "\n",
		mr_sim_xfer_op_name(c->op), c->size, c->count, c->nqp, c->qp.mtu, o->rate_gbps,
		o->latency_us, o->loss * 100, o->burst > 0 ? " (bursty)" : "", o->reorder * 100,
		o->dup * 100, c->seed);
	fprintf(f, "  result           %s (%u/%u WRs succeeded%s%s)\n", ok ? "OK" : "FAILED",
		r->succeeded, c->count, r->first_error ? ", first error " : "",
		r->first_error ? mr_sim_wc_status_str(r->first_error) : "");
	if (r->rc == -ETIMEDOUT)
		fprintf(f, "  deadline         virtual time budget exhausted\n");
	fprintf(f, "  bytes verified   %" PRIu64 " (%" PRIu64 " wrong, %u bad completions)\n",
		r->bytes_verified, r->bytes_bad, r->wc_bad);
	fprintf(f, "  virtual time     %.3f ms\n", (double)r->elapsed_ns / 1e6);
	fprintf(f, "  goodput          %.3f Gb/s\n", r->goodput_gbps);
	fprintf(f, "  completion time  p50 %.1f us, p99 %.1f us, max %.1f us\n",
		(double)r->lat_p50_ns / 1e3, (double)r->lat_p99_ns / 1e3,
		(double)r->lat_max_ns / 1e3);
	fprintf(f, "  packets a->b     %" PRIu64 " sent, %" PRIu64 " lost, %" PRIu64
		   " duplicated, %" PRIu64 " reordered\n",
		r->link_ab.sent, drops(&r->link_ab), r->link_ab.duplicated, r->link_ab.reordered);
	fprintf(f, "  packets b->a     %" PRIu64 " sent, %" PRIu64 " lost, %" PRIu64
		   " duplicated, %" PRIu64 " reordered\n",
		r->link_ba.sent, drops(&r->link_ba), r->link_ba.duplicated, r->link_ba.reordered);
	fprintf(f, "  retransmits      %" PRIu64 " (go-back-N), timeouts %" PRIu64
		   ", seq NAKs %" PRIu64 ", RNR NAKs %" PRIu64 ", implied NAKs %" PRIu64 "\n",
		r->qa.retransmits, r->qa.timeouts, r->qa.seq_naks_rcvd, r->qa.rnr_naks_rcvd,
		r->qa.implied_naks);
	fprintf(f, "  responder        %" PRIu64 " duplicate requests, %" PRIu64
		   " out of sequence, %" PRIu64 " seq NAKs sent\n",
		r->qb.duplicate_requests, r->qb.out_of_sequence, r->qb.seq_naks_sent);
	fprintf(f, "  parser drops     %" PRIu64 " at a, %" PRIu64 " at b (bad ICRC: %" PRIu64
		   ")\n",
		r->node_a.parse_drops, r->node_b.parse_drops,
		r->node_a.parse_err[MR_PARSE_BAD_ICRC] + r->node_b.parse_err[MR_PARSE_BAD_ICRC]);
}

static int write_json(const char *path, const struct opts *o, const struct mr_sim_xfer_result *r,
		      bool ok)
{
	FILE *f = fopen(path, "w");
	const struct mr_sim_xfer_cfg *c = &o->cfg;

	if (f == NULL) {
		fprintf(stderr, "mrsim: cannot write --json %s: %s\n", path, strerror(errno));
		return -1;
	}
	fprintf(f, "{\"op\":\"%s\",\"size\":%" PRIu64 ",\"count\":%u,\"qps\":%u,\"mtu\":%u,"
		   "\"loss\":%g,\"burst\":%g,\"reorder\":%g,\"dup\":%g,\"seed\":%" PRIu64 ","
		   "\"ok\":%s,\"succeeded\":%u,\"first_error\":\"%s\",\"bytes_verified\":%" PRIu64
		   ",\"bytes_bad\":%" PRIu64 ",\"virtual_time_ns\":%" PRIu64
		   ",\"goodput_gbps\":%.6f,\"lat_p50_ns\":%" PRIu64 ",\"lat_p99_ns\":%" PRIu64
		   ",\"pkts_ab\":%" PRIu64 ",\"pkts_ba\":%" PRIu64 ",\"lost_ab\":%" PRIu64
		   ",\"lost_ba\":%" PRIu64 ",\"retransmits\":%" PRIu64 ",\"timeouts\":%" PRIu64
		   ",\"seq_naks\":%" PRIu64 ",\"rnr_naks\":%" PRIu64 ",\"parser_drops\":%" PRIu64
		   "}\n",
		mr_sim_xfer_op_name(c->op), c->size, c->count, c->nqp, c->qp.mtu, o->loss,
		o->burst, o->reorder, o->dup, c->seed, ok ? "true" : "false", r->succeeded,
		mr_sim_wc_status_str(r->first_error), r->bytes_verified, r->bytes_bad,
		r->elapsed_ns, r->goodput_gbps, r->lat_p50_ns, r->lat_p99_ns, r->link_ab.sent,
		r->link_ba.sent, drops(&r->link_ab), drops(&r->link_ba), r->qa.retransmits,
		r->qa.timeouts, r->qa.seq_naks_rcvd, r->qa.rnr_naks_rcvd,
		r->node_a.parse_drops + r->node_b.parse_drops);
	return fclose(f) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct mr_sim_xfer_result r;
	FILE *trace = NULL;
	bool ok;

	if (mr_mrsim_fabric_wanted(argc, argv))
		return mr_mrsim_fabric_main(argc, argv);
	if (parse_args(argc, argv, &o) < 0) {
		usage(stderr);
		return 2;
	}
	apply_link(&o);
	if (o.trace) {
		trace = fopen(o.trace, "w");
		if (trace == NULL) {
			fprintf(stderr, "mrsim: cannot write --trace %s: %s\n", o.trace,
				strerror(errno));
			return 2;
		}
		o.cfg.trace = trace;
	}
	mr_sim_xfer_run(&o.cfg, &r);
	if (trace)
		fclose(trace);
	if (r.rc < 0 && r.rc != -ETIMEDOUT && r.completed == 0) {
		fprintf(stderr, "mrsim: setup failed: %s\n", strerror(-r.rc));
		return 1;
	}
	ok = r.rc == 0 && r.succeeded == o.cfg.count && r.bytes_bad == 0 && r.wc_bad == 0;
	print_report(stdout, &o, &r, ok);
	if (o.json && write_json(o.json, &o, &r, ok) < 0)
		return 1;
	return ok ? 0 : 1;
}
