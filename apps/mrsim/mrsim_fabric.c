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

#include "mrsim_fabric.h"
#include "sim/sim_fxfer.h"

struct fopts {
	struct mr_sim_fxfer_cfg cfg;
	const char *transport, *cc, *json, *trace;
	unsigned int incast;
	double loss, burst, reorder, reorder_us, rate_gbps, path_lat_us, host_lat_us;
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

static int fbad(const char *flag, const char *val, const char *why)
{
	fprintf(stderr, "mrsim: invalid value '%s' for %s: %s\n", val, flag, why);
	return -1;
}

static int num(const char *flag, const char *s, double min, double max, double *out)
{
	char *end;
	double v, mul = 1;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || !isfinite(v))
		return fbad(flag, s, "expected a number");
	if (*end == 'K' || *end == 'k')
		mul = 1024, end++;
	else if (*end == 'M' || *end == 'm')
		mul = 1048576, end++;
	if (*end != '\0')
		return fbad(flag, s, "trailing characters");
	v *= mul;
	if (v < min || v > max) {
		char why[80];

		snprintf(why, sizeof(why), "must be in [%g, %g]", min, max);
		return fbad(flag, s, why);
	}
	*out = v;
	return 0;
}

static int integer(const char *flag, const char *s, double min, double max, uint64_t *out)
{
	double v;

	if (num(flag, s, min, max, &v) < 0)
		return -1;
	if (v != floor(v))
		return fbad(flag, s, "expected an integer");
	*out = (uint64_t)v;
	return 0;
}

static int parse(int argc, char **argv, struct fopts *o)
{
	struct mr_sim_fxfer_cfg *c = &o->cfg;
	uint64_t v;

	memset(o, 0, sizeof(*o));
	mr_sim_fxfer_cfg_init(c);
	o->transport = "roce";
	o->cc = "none";
	o->rate_gbps = 100;
	o->path_lat_us = 3;
	o->host_lat_us = 1;
	o->queue_kb = 1024;
	o->reorder_us = 20;
	for (int i = 1; i < argc; i++) {
		const char *f = argv[i], *val;
		int rc = 0;

		if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
			fusage(stdout);
			exit(0);
		}
		if (strncmp(f, "--", 2) != 0 || i + 1 >= argc) {
			fprintf(stderr, "mrsim: %s: %s\n", f,
				strncmp(f, "--", 2) ? "unexpected argument" : "needs a value");
			return -1;
		}
		val = argv[++i];
		if (strcmp(f, "--fabric") == 0) {
			rc = integer(f, val, 0, 1, &v);
		} else if (strcmp(f, "--transport") == 0) {
			if (strcmp(val, "roce") && strcmp(val, "metaroce"))
				rc = fbad(f, val, "expected roce or metaroce");
			o->transport = val;
		} else if (strcmp(f, "--cc") == 0) {
			if (strcmp(val, "none") && strcmp(val, "dcqcn") && strcmp(val, "metaroce"))
				rc = fbad(f, val, "expected none, dcqcn or metaroce");
			o->cc = val;
		} else if (strcmp(f, "--entropies") == 0) {
			rc = integer(f, val, 1, 256, &v);
			c->qp.n_entropies = (uint16_t)v;
		} else if (strcmp(f, "--fabric-paths") == 0) {
			rc = integer(f, val, 1, MR_SIM_FABRIC_MAX_PATHS, &v);
			c->fabric.n_paths = (unsigned int)v;
		} else if (strcmp(f, "--incast") == 0) {
			rc = integer(f, val, 1, MR_SIM_FABRIC_MAX_HOSTS - 1, &v);
			o->incast = (unsigned int)v;
		} else if (strcmp(f, "--size") == 0) {
			rc = integer(f, val, 1, 1 << 30, &c->size);
		} else if (strcmp(f, "--count") == 0) {
			rc = integer(f, val, 1, 100000, &v);
			c->count = (uint32_t)v;
		} else if (strcmp(f, "--depth") == 0) {
			rc = integer(f, val, 1, 1024, &v);
			c->depth = (uint32_t)v;
		} else if (strcmp(f, "--mtu") == 0) {
			rc = integer(f, val, 256, 4096, &v);
			if (rc == 0 && (v & (v - 1)) != 0)
				rc = fbad(f, val, "must be 256, 512, 1024, 2048 or 4096");
			c->qp.mtu = (uint32_t)v;
		} else if (strcmp(f, "--loss") == 0) {
			rc = num(f, val, 0, 1, &o->loss);
		} else if (strcmp(f, "--burst") == 0) {
			rc = num(f, val, 1, 1e6, &o->burst);
		} else if (strcmp(f, "--reorder") == 0) {
			rc = num(f, val, 0, 1, &o->reorder);
		} else if (strcmp(f, "--reorder-us") == 0) {
			rc = num(f, val, 0, 1e6, &o->reorder_us);
		} else if (strcmp(f, "--rate-gbps") == 0) {
			rc = num(f, val, 0.001, 10000, &o->rate_gbps);
		} else if (strcmp(f, "--path-latency-us") == 0) {
			rc = num(f, val, 0, 1e6, &o->path_lat_us);
		} else if (strcmp(f, "--host-latency-us") == 0) {
			rc = num(f, val, 0, 1e6, &o->host_lat_us);
		} else if (strcmp(f, "--queue-kb") == 0) {
			rc = num(f, val, 0, 1 << 20, &o->queue_kb);
		} else if (strcmp(f, "--ecn-kb") == 0) {
			rc = num(f, val, 0, 1 << 20, &o->ecn_kb);
		} else if (strcmp(f, "--timeout-code") == 0) {
			rc = integer(f, val, 1, 31, &v);
			c->qp.timeout = (uint8_t)v;
		} else if (strcmp(f, "--retry") == 0) {
			rc = integer(f, val, 0, 7, &v);
			c->qp.retry_cnt = (uint8_t)v;
		} else if (strcmp(f, "--seed") == 0) {
			rc = integer(f, val, 0, 1e15, &c->seed);
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
	uint64_t rate = (uint64_t)llround(o->rate_gbps * 1e9);

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
	if (o->burst > 0)
		mr_sim_link_cfg_burst(&p.link, o->burst, o->loss);
	else
		p.link.loss = o->loss;
	p.link.reorder = o->reorder;
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
	double bottleneck = o->rate_gbps;

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
		o->burst > 0 ? "bursty" : "random", o->loss, o->burst, o->reorder, c->size,
		c->count, c->qp.mtu, o->rate_gbps, (double)c->qp.cc_params.base_rtt_ns / 1e3,
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

	fprintf(f, "mrsim fabric: %s (cc %s, %u entropies) over %u path(s), %u flow(s) of %u x %"
		   PRIu64 " B, MTU %u, %g Gb/s, loss %g%s, reorder %g\n",
		o->transport, o->cc, c->qp.n_entropies, c->fabric.n_paths, c->n_flows, c->count,
		c->size, c->qp.mtu, o->rate_gbps, o->loss, o->burst > 0 ? " (bursty)" : "",
		o->reorder);
	fprintf(f, "  result           %s (rc %d, %u/%u WRs ok, %" PRIu64 " bytes verified, %"
		   PRIu64 " wrong)\n", r->verified ? "OK" : "FAILED", r->rc, r->succeeded,
		c->count * c->n_flows, r->bytes_verified, r->bytes_bad);
	fprintf(f, "  goodput          %.3f Gb/s (Jain %.3f), %.3f ms\n", r->goodput_gbps, r->jain,
		(double)r->elapsed_ns / 1e6);
	fprintf(f, "  completion time  p50 %.1f us, p99 %.1f us\n", (double)r->lat_p50_ns / 1e3,
		(double)r->lat_p99_ns / 1e3);
	fprintf(f, "  retransmits      %" PRIu64 " (sack %" PRIu64 ", spurious %" PRIu64
		   "), timeouts %" PRIu64 ", data packets %" PRIu64 "\n",
		r->qa.retransmits, r->qa.sack_retransmits, r->qa.spurious_retransmits,
		r->qa.timeouts, r->data_pkts);
	for (unsigned int p = 0; p < r->n_paths; p++)
		fprintf(f, "  path %-2u          %" PRIu64 " pkts, util %.3f, peak queue %" PRIu64
			   " B, %" PRIu64 " tail drops, %" PRIu64 " lost, %" PRIu64 " CE\n",
			p, r->path[p].pkts, r->path[p].utilisation, r->path[p].peak_queue_bytes,
			r->path[p].drops_queue, r->path[p].drops_loss, r->path[p].ce_marks);
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
	if (o.trace) {
		trace = fopen(o.trace, "w");
		if (trace == NULL) {
			fprintf(stderr, "mrsim: cannot write --trace %s: %s\n", o.trace,
				strerror(errno));
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
	report(o.json && strcmp(o.json, "-") == 0 ? stderr : stdout, &o, r);
	if (o.json) {
		FILE *f = strcmp(o.json, "-") == 0 ? stdout : fopen(o.json, "w");

		if (f == NULL) {
			fprintf(stderr, "mrsim: cannot write --json %s: %s\n", o.json,
				strerror(errno));
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
