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

#include "mrsim_cli.h"
#include "mrsim_fabric.h"
#include "sim/sim_xfer.h"

struct opts {
	struct mr_sim_xfer_cfg cfg;
	struct mr_mrsim_common com; /* --loss, --burst, --reorder, --rate-gbps, --json, --trace */
	double dup, corrupt, latency_us;
	const char *op;
};

static const char *const op_names[] = {
	"write", "write_imm", "read", "send", "send_imm", "cmp_swap", "fetch_add", NULL,
};
static const enum mr_wr_opcode op_codes[] = {
	MR_WR_RDMA_WRITE, MR_WR_RDMA_WRITE_WITH_IMM, MR_WR_RDMA_READ, MR_WR_SEND,
	MR_WR_SEND_WITH_IMM, MR_WR_ATOMIC_CMP_AND_SWP, MR_WR_ATOMIC_FETCH_AND_ADD,
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

static int parse_args(int argc, char **argv, struct opts *o)
{
	struct mr_sim_xfer_cfg *c = &o->cfg;
	const struct mr_mrsim_arg own[] = {
		MR_MRSIM_STR("--op", &o->op, op_names, "expected write, write_imm, read, send, "
			     "send_imm, cmp_swap or fetch_add"),
		MR_MRSIM_U64("--size", &c->size, 0, 1ull << 30, true),
		MR_MRSIM_U64("--count", &c->count, 1, 1000000, false),
		MR_MRSIM_NUM("--dup", &o->dup, 0, 1, false),
		MR_MRSIM_NUM("--corrupt", &o->corrupt, 0, 1, false),
		MR_MRSIM_U64("--seed", &c->seed, 0, UINT64_MAX, false),
		MR_MRSIM_NUM("--latency-us", &o->latency_us, 0, 1e7, false),
		MR_MRSIM_U64("--qps", &c->nqp, 1, MR_SIM_XFER_MAX_QP, false),
		MR_MRSIM_U64("--depth", &c->depth, 1, 1024, false),
	};
	struct mr_mrsim_arg args[sizeof(own) / sizeof(own[0]) + MR_MRSIM_COMMON_ARGS];
	size_t n = sizeof(own) / sizeof(own[0]);

	memset(o, 0, sizeof(*o));
	mr_sim_xfer_cfg_init(c);
	c->size = 65536;
	c->count = 16;
	c->qp.mtu = 4096;
	o->com.rate_gbps = 100;
	o->latency_us = 5;
	memcpy(args, own, sizeof(own));
	n += mr_mrsim_common_args(args + n, &o->com, &c->qp, false);
	if (mr_mrsim_parse(argc, argv, args, n, usage, &o->com) < 0)
		return -1;
	for (size_t k = 0; o->op != NULL && op_names[k] != NULL; k++)
		if (strcmp(o->op, op_names[k]) == 0)
			c->op = op_codes[k];
	if (c->size * c->count > (4ull << 30)) {
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
		l->rate_bps = (uint64_t)llround(o->com.rate_gbps * 1e9);
		l->latency_ns = (uint64_t)llround(o->latency_us * 1e3);
		mr_mrsim_link_impair(l, &o->com);
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
	const struct mr_mrsim_common *m = &o->com;

	fprintf(f, "mrsim: %s %" PRIu64 " B x %u over %u QP(s), MTU %u, %.3g Gb/s, %.3g us, "
		   "loss %.3g%%%s, reorder %.3g%%, dup %.3g%%, seed %" PRIu64 "\n",
		mr_sim_xfer_op_name(c->op), c->size, c->count, c->nqp, c->qp.mtu, m->rate_gbps,
		o->latency_us, m->loss * 100, m->burst > 0 ? " (bursty)" : "", m->reorder * 100,
		o->dup * 100, c->seed);
	mr_mrsim_row(f, "result", "%s (%u/%u WRs succeeded%s%s)\n", ok ? "OK" : "FAILED",
		     r->succeeded, c->count, r->first_error ? ", first error " : "",
		     r->first_error ? mr_sim_wc_status_str(r->first_error) : "");
	if (r->rc == -ETIMEDOUT)
		mr_mrsim_row(f, "deadline", "virtual time budget exhausted\n");
	mr_mrsim_row(f, "bytes verified", "%" PRIu64 " (%" PRIu64 " wrong, %u bad completions)\n",
		     r->bytes_verified, r->bytes_bad, r->wc_bad);
	mr_mrsim_row(f, "virtual time", "%.3f ms\n", (double)r->elapsed_ns / 1e6);
	mr_mrsim_row(f, "goodput", "%.3f Gb/s\n", r->goodput_gbps);
	mr_mrsim_row_latency(f, r->lat_p50_ns, r->lat_p99_ns, r->lat_max_ns, true);
	for (int dir = 0; dir < 2; dir++) {
		const struct mr_sim_link_stats *l = dir ? &r->link_ba : &r->link_ab;

		mr_mrsim_row(f, dir ? "packets b->a" : "packets a->b", "%" PRIu64 " sent, %" PRIu64
			     " lost, %" PRIu64 " duplicated, %" PRIu64 " reordered\n",
			     l->sent, drops(l), l->duplicated, l->reordered);
	}
	mr_mrsim_row(f, "retransmits", "%" PRIu64 " (go-back-N), timeouts %" PRIu64 ", seq NAKs %"
		     PRIu64 ", RNR NAKs %" PRIu64 ", implied NAKs %" PRIu64 "\n",
		     r->qa.retransmits, r->qa.timeouts, r->qa.seq_naks_rcvd, r->qa.rnr_naks_rcvd,
		     r->qa.implied_naks);
	mr_mrsim_row(f, "responder", "%" PRIu64 " duplicate requests, %" PRIu64
		     " out of sequence, %" PRIu64 " seq NAKs sent\n",
		     r->qb.duplicate_requests, r->qb.out_of_sequence, r->qb.seq_naks_sent);
	mr_mrsim_row(f, "parser drops", "%" PRIu64 " at a, %" PRIu64 " at b (bad ICRC: %" PRIu64
		     ")\n", r->node_a.parse_drops, r->node_b.parse_drops,
		     r->node_a.parse_err[MR_PARSE_BAD_ICRC] + r->node_b.parse_err[MR_PARSE_BAD_ICRC]);
}

static int write_json(const char *path, const struct opts *o, const struct mr_sim_xfer_result *r,
		      bool ok)
{
	FILE *f = mr_mrsim_open_json(path, false);
	const struct mr_sim_xfer_cfg *c = &o->cfg;

	if (f == NULL)
		return -1;
	fprintf(f, "{\"op\":\"%s\",\"size\":%" PRIu64 ",\"count\":%u,\"qps\":%u,\"mtu\":%u,"
		   "\"loss\":%g,\"burst\":%g,\"reorder\":%g,\"dup\":%g,\"seed\":%" PRIu64 ","
		   "\"ok\":%s,\"succeeded\":%u,\"first_error\":\"%s\",\"bytes_verified\":%" PRIu64
		   ",\"bytes_bad\":%" PRIu64 ",\"virtual_time_ns\":%" PRIu64
		   ",\"goodput_gbps\":%.6f,\"lat_p50_ns\":%" PRIu64 ",\"lat_p99_ns\":%" PRIu64
		   ",\"pkts_ab\":%" PRIu64 ",\"pkts_ba\":%" PRIu64 ",\"lost_ab\":%" PRIu64
		   ",\"lost_ba\":%" PRIu64 ",\"retransmits\":%" PRIu64 ",\"timeouts\":%" PRIu64
		   ",\"seq_naks\":%" PRIu64 ",\"rnr_naks\":%" PRIu64 ",\"parser_drops\":%" PRIu64
		   "}\n",
		mr_sim_xfer_op_name(c->op), c->size, c->count, c->nqp, c->qp.mtu, o->com.loss,
		o->com.burst, o->com.reorder, o->dup, c->seed, ok ? "true" : "false", r->succeeded,
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
	if (o.com.trace) {
		trace = mr_mrsim_open_trace(o.com.trace);
		if (trace == NULL)
			return 2;
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
	if (o.com.json && write_json(o.com.json, &o, &r, ok) < 0)
		return 1;
	return ok ? 0 : 1;
}
