/* SPDX-License-Identifier: MIT
 * mrstat's views (render.h).
 */
#include <inttypes.h>
#include <string.h>

#include "render.h"

const char *const mr_summary_names[] = {
	/* rxe */
	"sent_pkts", "rcvd_pkts", "duplicate_request", "out_of_seq_request", "rcvd_rnr_err",
	"send_rnr_err", "rcvd_seq_err", "completer_retry_err", "retry_exceeded_err",
	"retry_rnr_exceeded_err", "rdma_sends", "rdma_recvs",
	/* mlx5 */
	"out_of_sequence", "packet_seq_err", "implied_nak_seq_err", "local_ack_timeout_err",
	"out_of_buffer", "req_remote_access_errors", "req_remote_invalid_request",
	"rx_write_requests", "rx_read_requests", "rx_atomic_requests", "np_cnp_sent",
	"np_ecn_marked_roce_packets", "rp_cnp_handled", "rp_cnp_ignored",
	"rx_vport_rdma_unicast_packets", "tx_vport_rdma_unicast_packets",
	/* metaroce */
	"retransmitted_pkts", "retrans_gbn_pkts", "retrans_selective_pkts", "tlp_probes",
	"rx_icrc_errors", "rx_malformed", "rx_drop_transport", NULL,
};

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static void json_sec(FILE *f, const struct mr_doc *d, const struct mr_doc *prev,
		     const struct mr_doc_sec *s)
{
	size_t i;
	bool first = true;

	fputc('{', f);
	if (s->id >= 0) {
		fprintf(f, "\"id\":%ld", s->id);
		first = false;
	}
	for (i = 0; i < s->n; i++) {
		const struct mr_doc_ent *e = &s->e[i];

		fprintf(f, "%s", first ? "" : ",");
		first = false;
		json_str(f, e->name);
		if (e->kind == 's') {
			fputc(':', f);
			json_str(f, e->s);
		} else {
			fprintf(f, ":%" PRIu64, e->v);
		}
	}
	if (prev != NULL) {
		bool rfirst = true;

		fprintf(f, "%s\"rates\":{", first ? "" : ",");
		for (i = 0; i < s->n; i++) {
			double r = mr_doc_rate(prev, d, s, s->e[i].name);

			if (s->e[i].kind != 'c' || r < 0)
				continue;
			fprintf(f, "%s", rfirst ? "" : ",");
			rfirst = false;
			json_str(f, s->e[i].name);
			fprintf(f, ":%.3f", r);
		}
		fputc('}', f);
	}
	fputc('}', f);
}

static void json(FILE *f, const struct mr_doc *d, const struct mr_doc *prev)
{
	static const char *const arrays[] = { "shard", "qp" };
	const struct mr_doc_sec *s;
	size_t i, a;

	fprintf(f, "{\"schema\":\"mrstat-1\",\"time_ns\":%" PRIu64, d->time_ns);
	if (prev != NULL)
		fprintf(f, ",\"interval_s\":%.3f", (double)(d->time_ns - prev->time_ns) / 1e9);
	if ((s = mr_doc_find(d, "link", -1)) != NULL) {
		fprintf(f, ",\"link\":");
		json_sec(f, d, NULL, s);
	}
	if ((s = mr_doc_find(d, "port", -1)) != NULL) {
		fprintf(f, ",\"port\":");
		json_sec(f, d, prev, s);
	}
	for (a = 0; a < 2; a++) {
		bool first = true;

		fprintf(f, ",\"%ss\":[", arrays[a]);
		for (i = 0; i < d->n; i++) {
			if (strcmp(d->sec[i].kind, arrays[a]) != 0)
				continue;
			fprintf(f, "%s", first ? "" : ",");
			first = false;
			json_sec(f, d, prev, &d->sec[i]);
		}
		fputc(']', f);
	}
	fprintf(f, "}\n");
}

static const char *sval(const struct mr_doc_sec *s, const char *name)
{
	const struct mr_doc_ent *e = mr_doc_get(s, name);

	return e != NULL && e->kind == 's' ? e->s : "-";
}

static uint64_t uval(const struct mr_doc_sec *s, const char *name)
{
	const struct mr_doc_ent *e = mr_doc_get(s, name);

	return e != NULL && e->kind != 's' ? e->v : 0;
}

/* `rdma link show` line, then the `ibv_devinfo -v` port fields and GID table. */
static void link_view(FILE *f, const struct mr_doc *d)
{
	const struct mr_doc_sec *s = mr_doc_find(d, "link", -1);
	size_t i;
	unsigned int g = 0;

	if (s == NULL) {
		fprintf(f, "no link section\n");
		return;
	}
	fprintf(f, "link %s/%" PRIu64 " state %s physical_state %s driver %s\n", sval(s, "device"),
		uval(s, "port"), sval(s, "state"), sval(s, "physical_state"), sval(s, "driver"));
	fprintf(f, "hca_id:\t%s\n", sval(s, "device"));
	fprintf(f, "\ttransport:\t\t\tInfiniBand (0)\n");
	fprintf(f, "\tnode_guid:\t\t\t(none: RoCE v2)\n");
	fprintf(f, "\t\tport:\t%" PRIu64 "\n", uval(s, "port"));
	fprintf(f, "\t\t\tstate:\t\t\tPORT_%s\n", sval(s, "state"));
	fprintf(f, "\t\t\tmax_mtu:\t\t%" PRIu64 "\n", uval(s, "max_mtu"));
	fprintf(f, "\t\t\tactive_mtu:\t\t%" PRIu64 "\n", uval(s, "active_mtu"));
	fprintf(f, "\t\t\tnetdev_mtu:\t\t%" PRIu64 "\n", uval(s, "netdev_mtu"));
	fprintf(f, "\t\t\tlink_layer:\t\t%s\n", sval(s, "link_layer"));
	fprintf(f, "\t\t\tmac:\t\t\t%s\n", sval(s, "mac"));
	if (uval(s, "link_speed_mbps"))
		fprintf(f, "\t\t\tlink_speed:\t\t%.1f Gb/s\n",
			(double)uval(s, "link_speed_mbps") / 1000.0);
	else
		fprintf(f, "\t\t\tlink_speed:\t\tunknown\n");
	for (i = 0; i < s->n; i++)
		if (strncmp(s->e[i].name, "gid", 3) == 0 && s->e[i].name[3] >= '0' &&
		    s->e[i].name[3] <= '9') {
			fprintf(f, "\t\t\tGID[%3u]:\t\t%s\n", g, s->e[i].s);
			g++;
		}
	fprintf(f, "\t\t\tecn:\t\t\t%s (dscp %" PRIu64 ", cnp dscp %" PRIu64 ")\n", sval(s, "ecn"),
		uval(s, "dscp"), uval(s, "cnp_dscp"));
	fprintf(f, "\t\t\tengine_shards:\t\t%" PRIu64 " (max_qp %" PRIu64 " each)\n",
		uval(s, "nshards"), uval(s, "max_qp"));
	fprintf(f, "\t\t\timpairment:\t\trx %s, tx %s\n", sval(s, "impair_rx"),
		sval(s, "impair_tx"));
	fprintf(f, "\t\t\tsocket:\t\t\t%s\n", sval(s, "socket"));
}

/* One "name: value" line per entry, `ethtool -S` style; with rates when watching. */
static void list_sec(FILE *f, const struct mr_doc *d, const struct mr_doc *prev,
		     const struct mr_doc_sec *s, bool nonzero)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		const struct mr_doc_ent *e = &s->e[i];
		double r = prev != NULL ? mr_doc_rate(prev, d, s, e->name) : -1;

		if (e->kind == 's') {
			fprintf(f, "     %s: %s\n", e->name, e->s);
			continue;
		}
		if (nonzero && (prev != NULL ? r <= 0 : e->v == 0))
			continue;
		if (r >= 0)
			fprintf(f, "     %s: %" PRIu64 " (%.0f/s)\n", e->name, e->v, r);
		else
			fprintf(f, "     %s: %" PRIu64 "\n", e->name, e->v);
	}
}

static void summary(FILE *f, const struct mr_doc *d, const struct mr_doc *prev, bool nonzero)
{
	const struct mr_doc_sec *l = mr_doc_find(d, "link", -1);
	const struct mr_doc_sec *s = mr_doc_find(d, "port", -1);
	size_t col, i;

	if (s == NULL)
		return;
	col = (size_t)fprintf(f, "link %s/1", l != NULL ? sval(l, "device") : "mr0");
	for (i = 0; mr_summary_names[i] != NULL; i++) {
		const struct mr_doc_ent *e = mr_doc_get(s, mr_summary_names[i]);
		char buf[128];
		double r;
		int n;

		if (e == NULL)
			continue;
		r = prev != NULL ? mr_doc_rate(prev, d, s, e->name) : -1;
		if (nonzero && (prev != NULL ? r <= 0 : e->v == 0))
			continue;
		n = r >= 0 ? snprintf(buf, sizeof(buf), " %s %" PRIu64 " (%.0f/s)", e->name, e->v, r)
			   : snprintf(buf, sizeof(buf), " %s %" PRIu64, e->name, e->v);
		if (col + (size_t)n > 100) {
			fprintf(f, "\n    ");
			col = 4;
		}
		fputs(buf, f);
		col += (size_t)n;
	}
	fputc('\n', f);
}

static void rate_str(char *buf, size_t n, uint64_t bps)
{
	if (bps == UINT64_MAX)
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "%.2f", (double)bps / 1e9);
}

static void qp_table(FILE *f, const struct mr_doc *d, const struct mr_doc *prev, bool verbose,
		     bool nonzero)
{
	size_t i;

	fprintf(f, "%-7s %-7s %-5s %-9s %-8s %5s %9s %10s %12s %12s %9s %8s %6s %6s\n", "LQPN",
		"RQPN", "STATE", "TRANSPORT", "CC", "SHARD", "RATE_Gbps", "CWND_B", "sent_pkts",
		"rcvd_pkts", "retrans", "timeouts", "naks", "cnps");
	for (i = 0; i < d->n; i++) {
		const struct mr_doc_sec *s = &d->sec[i];
		char rate[32], cwnd[32];
		uint64_t w;

		if (strcmp(s->kind, "qp") != 0)
			continue;
		rate_str(rate, sizeof(rate), uval(s, "cc_rate_bps"));
		w = uval(s, "cc_cwnd_bytes");
		if (w == UINT64_MAX)
			snprintf(cwnd, sizeof(cwnd), "-");
		else
			snprintf(cwnd, sizeof(cwnd), "%" PRIu64, w);
		fprintf(f, "%-7" PRIu64 " %-7" PRIu64 " %-5s %-9s %-8s %5" PRIu64 " %9s %10s %12"
			PRIu64 " %12" PRIu64 " %9" PRIu64 " %8" PRIu64 " %6" PRIu64 " %6" PRIu64 "\n",
			uval(s, "lqpn"), uval(s, "rqpn"), sval(s, "state"), sval(s, "transport"),
			sval(s, "cc"), uval(s, "shard"), rate, cwnd, uval(s, "sent_pkts"),
			uval(s, "rcvd_pkts"), uval(s, "retransmitted_pkts"),
			uval(s, "local_ack_timeout_err"),
			uval(s, "nak_rcvd_psn_seq_err") + uval(s, "nak_sent_psn_seq_err"),
			uval(s, "np_cnp_sent") + uval(s, "cnps_rcvd"));
		if (verbose || prev != NULL) {
			fprintf(f, "qp %ld:\n", s->id);
			list_sec(f, d, prev, s, nonzero || prev != NULL);
		}
	}
}

void mr_render(FILE *f, const struct mr_doc *d, const struct mr_doc *prev,
	       const struct mr_render_opts *o)
{
	size_t i;

	if (o->json) {
		json(f, d, prev);
		return;
	}
	switch (o->view) {
	case MR_VIEW_SUMMARY:
		summary(f, d, prev, o->nonzero);
		break;
	case MR_VIEW_LINK:
		link_view(f, d);
		break;
	case MR_VIEW_PORT:
		fprintf(f, "port 1 statistics:\n");
		if (mr_doc_find(d, "port", -1) != NULL)
			list_sec(f, d, prev, mr_doc_find(d, "port", -1), o->nonzero);
		break;
	case MR_VIEW_SHARD:
		for (i = 0; i < d->n; i++)
			if (strcmp(d->sec[i].kind, "shard") == 0) {
				fprintf(f, "shard %ld statistics:\n", d->sec[i].id);
				list_sec(f, d, prev, &d->sec[i], o->nonzero);
			}
		break;
	case MR_VIEW_QP:
		qp_table(f, d, prev, o->verbose, o->nonzero);
		break;
	}
	fflush(f);
}
