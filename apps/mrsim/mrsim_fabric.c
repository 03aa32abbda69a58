/* SPDX-License-Identifier: MIT
 * mrsim fabric mode (see mrsim_fabric.h). Topology: hosts behind a switch with --fabric-paths
 * parallel paths (ECMP on the UDP source port), 100 Gb/s and a ~10 us RTT by default. Loss,
 * bursts and reordering are applied on every path in both directions (data and ACKs). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mrsim_cli.h"
#include "mrsim_fabric.h"
#include "sim/sim_fxfer.h"

struct fopts {
	struct mr_sim_fxfer_cfg cfg;
	struct mr_mrsim_common com; /* --loss, --burst, --reorder, --rate-gbps, --json, --trace */
	const char *transport, *cc;
	unsigned int incast;
	double reorder_us, path_lat_us, host_lat_us;
	double queue_kb, ecn_kb;
};

static const char *const fabric_flags[] = {
	"--transport", "--entropies", "--fabric-paths", "--incast", "--cc", "--fabric",
};

bool mr_mrsim_fabric_wanted(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		for (size_t k = 0; k < sizeof(fabric_flags) / sizeof(fabric_flags[0]); k++)
			if (strcmp(argv[i], fabric_flags[k]) == 0)
				return true;
	return false;
}

static void fusage(FILE *f)
{
	fputs("usage: mrsim --fabric 1 [--transport roce|metaroce] [--entropies N]\n"
	      "             [--fabric-paths N] [--incast K] [--cc none|dcqcn|metaroce]\n"
	      "             [--size BYTES] [--count N] [--depth N] [--mtu M] [--loss P]\n"
	      "             [--burst MEAN] [--reorder P] [--reorder-us D] [--rate-gbps R]\n"
	      "             [--path-latency-us L] [--host-latency-us L] [--queue-kb Q]\n"
	      "             [--ecn-kb K] [--timeout-code T] [--retry N] [--seed S]\n"
	      "             [--json FILE|-] [--trace FILE]\n"
	      "  RDMA WRITE flows host 0 -> 1 (or K senders -> 1 with --incast K) over N ECMP\n"
	      "  paths; --loss/--burst/--reorder apply to every path, both directions.\n",
	      f);
}

static int parse(int argc, char **argv, struct fopts *o)
{
	static const char *const transports[] = { "roce", "metaroce", NULL };
	static const char *const ccs[] = { "none", "dcqcn", "metaroce", NULL };
	struct mr_sim_fxfer_cfg *c = &o->cfg;
	uint64_t fabric;
	const struct mr_mrsim_arg own[] = {
		MR_MRSIM_INT("--fabric", &fabric, 0, 1),
		MR_MRSIM_STR("--transport", &o->transport, transports, "expected roce or metaroce"),
		MR_MRSIM_STR("--cc", &o->cc, ccs, "expected none, dcqcn or metaroce"),
		MR_MRSIM_INT("--entropies", &c->qp.n_entropies, 1, 256),
		MR_MRSIM_INT("--fabric-paths", &c->fabric.n_paths, 1, MR_SIM_FABRIC_MAX_PATHS),
		MR_MRSIM_INT("--incast", &o->incast, 1, MR_SIM_FABRIC_MAX_HOSTS - 1),
		MR_MRSIM_INT("--size", &c->size, 1, 1 << 30),
		MR_MRSIM_INT("--count", &c->count, 1, 100000),
		MR_MRSIM_INT("--depth", &c->depth, 1, 1024),
		MR_MRSIM_NUM("--reorder-us", &o->reorder_us, 0, 1e6, true),
		MR_MRSIM_NUM("--path-latency-us", &o->path_lat_us, 0, 1e6, true),
		MR_MRSIM_NUM("--host-latency-us", &o->host_lat_us, 0, 1e6, true),
		MR_MRSIM_NUM("--queue-kb", &o->queue_kb, 0, 1 << 20, true),
		MR_MRSIM_NUM("--ecn-kb", &o->ecn_kb, 0, 1 << 20, true),
		MR_MRSIM_INT("--seed", &c->seed, 0, 1e15),
	};
	struct mr_mrsim_arg args[sizeof(own) / sizeof(own[0]) + MR_MRSIM_COMMON_ARGS];
	size_t n = sizeof(own) / sizeof(own[0]);

	memset(o, 0, sizeof(*o));
	mr_sim_fxfer_cfg_init(c);
	o->transport = "roce";
	o->cc = "none";
	o->com.rate_gbps = 100;
	o->path_lat_us = 3;
	o->host_lat_us = 1;
	o->queue_kb = 1024;
	o->reorder_us = 20;
	memcpy(args, own, sizeof(own));
	n += mr_mrsim_common_args(args + n, &o->com, &c->qp, true);
	if (mr_mrsim_parse(argc, argv, args, n, fusage, &o->com) < 0)
		return -1;
	if ((double)c->size * c->count * (o->incast ? o->incast : 1) > 4.0 * (1u << 30)) {
		fprintf(stderr, "mrsim: flows x --size x --count exceeds 4 GiB\n");
		return -1;
	}
	return 0;
}

static void apply(struct fopts *o)
{
	struct mr_sim_fxfer_cfg *c = &o->cfg;
	struct mr_sim_fabric_path_cfg p;
	uint64_t rate = (uint64_t)llround(o->com.rate_gbps * 1e9);

	if (o->incast)
		mr_sim_fxfer_cfg_incast(c, o->incast);
	c->fabric.host_rate_bps = rate;
	c->fabric.host_latency_ns = (uint64_t)llround(o->host_lat_us * 1e3);
	c->fabric.down_queue_bytes = (uint64_t)llround(o->queue_kb * 1024);
	c->fabric.down_ecn_k_bytes = (uint64_t)llround(o->ecn_kb * 1024);
	c->fabric.seed = c->seed;
	memset(&p, 0, sizeof(p));
	mr_sim_link_cfg_init(&p.link);
	p.link.rate_bps = rate;
	p.link.latency_ns = (uint64_t)llround(o->path_lat_us * 1e3);
	p.link.queue_bytes = c->fabric.down_queue_bytes;
	p.ecn_k_bytes = c->fabric.down_ecn_k_bytes;
	mr_mrsim_link_impair(&p.link, &o->com);
	p.link.reorder_delay_ns = (uint64_t)llround(o->reorder_us * 1e3);
	if (o->incast)
		/* non-blocking fabric: only the receiver's downlink is a bottleneck (incast) */
		p.link.rate_bps = rate * o->incast;
	mr_sim_fabric_cfg_all_paths(&c->fabric, &p);
	c->qp.transport = strcmp(o->transport, "metaroce") == 0 ? MR_TRANSPORT_METAROCE :
								   MR_TRANSPORT_RC;
	c->qp.cc = strcmp(o->cc, "dcqcn") == 0 ? MR_CC_DCQCN :
		   strcmp(o->cc, "metaroce") == 0 ? MR_CC_METAROCE : MR_CC_NONE;
	if (c->qp.n_entropies == 0)
		c->qp.n_entropies = c->qp.transport == MR_TRANSPORT_METAROCE ?
					    (uint16_t)(c->fabric.n_paths > 1 ? 4 * c->fabric.n_paths : 1) : 1;
	if (c->qp.n_entropies > 256)
		c->qp.n_entropies = 256;
	c->qp.cc_params.line_rate_bps = rate;
	c->qp.cc_params.base_rtt_ns = 2 * (2 * c->fabric.host_latency_ns + p.link.latency_ns);
	c->qp.cc_params.mtu = c->qp.mtu;
	c->qp.cc_params.n_paths = c->qp.n_entropies;
	/* Enough in flight for one BDP and more per flow: the requester cap is in packets. */
	c->fabric.ctx.max_inflight_pkts = 0;
	c->max_ns = 30ull * 1000000000ull;
}

static uint64_t sum_down(const struct mr_sim_fxfer_result *r, unsigned int n, int what)
{
	uint64_t s = 0;

	for (unsigned int h = 0; h < n; h++) {
		const struct mr_sim_fabric_report *d = &r->down[h];

		if (what == 0)
			s += d->drops_queue;
		else if (what == 1)
			s += d->ce_marks;
		else if (d->peak_queue_bytes > s)
			s = d->peak_queue_bytes;
	}
	return s;
}

static int emit_json(FILE *f, const struct fopts *o, const struct mr_sim_fxfer_result *r)
{
	const struct mr_sim_fxfer_cfg *c = &o->cfg;
	uint64_t qdrops = sum_down(r, c->fabric.n_hosts, 0), marks = sum_down(r, c->fabric.n_hosts, 1);
	uint64_t peak = sum_down(r, c->fabric.n_hosts, 2);
	uint64_t path_drops = 0;
	double bottleneck = o->com.rate_gbps;

	for (unsigned int p = 0; p < r->n_paths; p++) {
		path_drops += r->path[p].drops_queue;
		marks += r->path[p].ce_marks;
		if (r->path[p].peak_queue_bytes > peak)
			peak = r->path[p].peak_queue_bytes;
	}
	fprintf(f, "{\"transport\":\"%s\",\"cc\":\"%s\",\"entropies\":%u,\"fabric_paths\":%u,"
		   "\"flows\":%u,\"incast\":%u,\"loss_model\":\"%s\",\"loss_rate\":%g,"
		   "\"burst\":%g,\"reorder\":%g,\"size\":%" PRIu64 ",\"count\":%u,\"mtu\":%u,"
		   "\"rate_gbps\":%g,\"rtt_us\":%g,\"seed\":%" PRIu64 ",\"rc\":%d,"
		   "\"verified\":%s,\"bytes_verified\":%" PRIu64 ",\"bytes_bad\":%" PRIu64 ","
		   "\"elapsed_ns\":%" PRIu64 ",\"goodput_gbps\":%.4f,\"bottleneck_gbps\":%g,"
		   "\"goodput_of_bottleneck\":%.4f,\"jain\":%.4f,\"p50_us\":%.3f,\"p99_us\":%.3f,"
		   "\"data_pkts\":%" PRIu64 ",\"retransmits\":%" PRIu64 ","
		   "\"sack_retransmits\":%" PRIu64 ",\"spurious_retransmits\":%" PRIu64 ","
		   "\"spurious_frac\":%.6f,\"timeouts\":%" PRIu64 ",\"tlp_probes\":%" PRIu64 ","
		   "\"ce_marks\":%" PRIu64 ",\"cnps\":%" PRIu64 ",\"queue_drops\":%" PRIu64 ","
		   "\"path_queue_drops\":%" PRIu64 ",\"peak_queue_bytes\":%" PRIu64 ","
		   "\"parse_drops\":%" PRIu64 ",\"path_util\":[",
		o->transport, o->cc, c->qp.n_entropies, c->fabric.n_paths, c->n_flows, o->incast,
		o->com.burst > 0 ? "bursty" : "random", o->com.loss, o->com.burst, o->com.reorder,
		c->size, c->count, c->qp.mtu, o->com.rate_gbps,
		(double)c->qp.cc_params.base_rtt_ns / 1e3,
		c->seed, r->rc, r->verified ? "true" : "false", r->bytes_verified, r->bytes_bad,
		r->elapsed_ns, r->goodput_gbps, bottleneck, r->goodput_gbps / bottleneck, r->jain,
		(double)r->lat_p50_ns / 1e3, (double)r->lat_p99_ns / 1e3, r->data_pkts,
		r->qa.retransmits, r->qa.sack_retransmits, r->qa.spurious_retransmits,
		r->data_pkts ? (double)r->qa.spurious_retransmits / (double)r->data_pkts : 0.0,
		r->qa.timeouts, r->qa.tlp_probes, marks, r->qb.cnps_sent, qdrops, path_drops, peak,
		r->parse_drops);
	for (unsigned int p = 0; p < r->n_paths; p++)
		fprintf(f, "%s%.4f", p ? "," : "", r->path[p].utilisation);
	fputs("],\"path_pkts\":[", f);
	for (unsigned int p = 0; p < r->n_paths; p++)
		fprintf(f, "%s%" PRIu64, p ? "," : "", r->path[p].pkts);
	fputs("]}\n", f);
	return 0;
}

static void report(FILE *f, const struct fopts *o, const struct mr_sim_fxfer_result *r)
{
	const struct mr_sim_fxfer_cfg *c = &o->cfg;
	const struct mr_mrsim_common *m = &o->com;

	fprintf(f, "mrsim fabric: %s (cc %s, %u entropies) over %u path(s), %u flow(s) of %u x %"
		   PRIu64 " B, MTU %u, %g Gb/s, loss %g%s, reorder %g\n",
		o->transport, o->cc, c->qp.n_entropies, c->fabric.n_paths, c->n_flows, c->count,
		c->size, c->qp.mtu, m->rate_gbps, m->loss, m->burst > 0 ? " (bursty)" : "",
		m->reorder);
	mr_mrsim_row(f, "result", "%s (rc %d, %u/%u WRs ok, %" PRIu64 " bytes verified, %" PRIu64
		     " wrong)\n", r->verified ? "OK" : "FAILED", r->rc, r->succeeded,
		     c->count * c->n_flows, r->bytes_verified, r->bytes_bad);
	mr_mrsim_row(f, "goodput", "%.3f Gb/s (Jain %.3f), %.3f ms\n", r->goodput_gbps, r->jain,
		     (double)r->elapsed_ns / 1e6);
	mr_mrsim_row_latency(f, r->lat_p50_ns, r->lat_p99_ns, r->lat_max_ns, false);
	mr_mrsim_row(f, "retransmits", "%" PRIu64 " (sack %" PRIu64 ", spurious %" PRIu64
		     "), timeouts %" PRIu64 ", data packets %" PRIu64 "\n",
		     r->qa.retransmits, r->qa.sack_retransmits, r->qa.spurious_retransmits,
		     r->qa.timeouts, r->data_pkts);
	for (unsigned int p = 0; p < r->n_paths; p++) {
		char label[16];

		snprintf(label, sizeof(label), "path %u", p);
		mr_mrsim_row(f, label, "%" PRIu64 " pkts, util %.3f, peak queue %" PRIu64 " B, %"
			     PRIu64 " tail drops, %" PRIu64 " lost, %" PRIu64 " CE\n",
			     r->path[p].pkts, r->path[p].utilisation, r->path[p].peak_queue_bytes,
			     r->path[p].drops_queue, r->path[p].drops_loss, r->path[p].ce_marks);
	}
}

int mr_mrsim_fabric_main(int argc, char **argv)
{
	struct fopts o;
	struct mr_sim_fxfer_result *r;
	FILE *trace = NULL;
	int rc;

	if (parse(argc, argv, &o) < 0) {
		fusage(stderr);
		return 2;
	}
	apply(&o);
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return 1;
	if (o.com.trace) {
		trace = mr_mrsim_open_trace(o.com.trace);
		if (trace == NULL) {
			free(r);
			return 2;
		}
		o.cfg.trace = trace;
	}
	mr_sim_fxfer_run(&o.cfg, r);
	if (trace)
		fclose(trace);
	if (r->rc < 0 && r->rc != -ETIMEDOUT && r->completed == 0)
		/* still write the record (rc, verified false): sweeps keep every row */
		fprintf(stderr, "mrsim: setup failed: %s\n", strerror(-r->rc));
	report(o.com.json && strcmp(o.com.json, "-") == 0 ? stderr : stdout, &o, r);
	if (o.com.json) {
		FILE *f = mr_mrsim_open_json(o.com.json, true);

		if (f == NULL) {
			free(r);
			return 1;
		}
		emit_json(f, &o, r);
		if (f != stdout)
			fclose(f);
	}
	rc = r->verified ? 0 : 1;
	free(r);
	return rc;
}
