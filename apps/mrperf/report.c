/* SPDX-License-Identifier: MIT
 * perftest-compatible text/JSON output and the bandwidth/latency statistics (see report.h).
 * The literal strings below reproduce perftest 4.5's output layout (its RESULT_* / REPORT_*
 * formats), since matching them is the point of this file.
 */
#include "report.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const verb_str[] = { "Send", "RDMA_Write", "RDMA_Read", "Atomic" };
static const char *const verb_json[] = { "Send", "RDMA_Write", "RDMA_Read", "Atomic" };

#define RESULT_LINE "---------------------------------------------------------------------------------------\n"

void mr_report_line(FILE *f)
{
	fputs(RESULT_LINE, f);
}

static const char *verb_name(enum mr_perf_verb v)
{
	return (unsigned)v < 4 ? verb_str[v] : "Unknown";
}

void mr_report_header(FILE *f, const struct mr_report_info *in)
{
	fputs(RESULT_LINE, f);
	fprintf(f, "                    %s ", verb_name(in->verb));
	if (in->verb == MR_VERB_ATOMIC)
		fprintf(f, "%s ", in->atomic_cmp_swap ? "CMP_AND_SWAP" : "FETCH_AND_ADD");
	fputs(in->bw ? "BW " : "Latency ", f);
	fputs("Test\n", f);
	fprintf(f, " Dual-port       : %s\t\tDevice         : %s\n", "OFF",
		in->device != NULL ? in->device : "metaroce0");
	fprintf(f, " Number of qps   : %u\t\tTransport type : %s\n", in->num_qps, "IB");
	fprintf(f, " Connection type : %s\t\tUsing SRQ      : %s\n", "RC", in->use_srq ? "ON" : "OFF");
	/* no PCIe between us and the wire: perftest's text for builds without relaxed ordering */
	fprintf(f, " PCIe relax order: %s\n", "Unsupported");
	fprintf(f, " ibv_wr* API     : %s\n", "OFF");
	if (in->client)
		fprintf(f, " TX depth        : %u\n", in->tx_depth);
	if (in->verb == MR_VERB_SEND && !in->client)
		fprintf(f, " RX depth        : %u\n", in->rx_depth);
	if (in->bw)
		fprintf(f, " CQ Moderation   : %u\n", in->cq_mod);
	fprintf(f, " Mtu             : %u[B]\n", in->mtu);
	fprintf(f, " Link type       : %s\n", "Ethernet");
	if (in->gid_index >= 0)
		fprintf(f, " GID index       : %d\n", in->gid_index);
	if (in->verb != MR_VERB_READ && in->verb != MR_VERB_ATOMIC)
		fprintf(f, " Max inline data : %u[B]\n", in->inline_size);
	else
		fprintf(f, " Outstand reads  : %u\n", in->out_reads);
	fprintf(f, " rdma_cm QPs\t : %s\n", "OFF");
	fprintf(f, " Data ex. method : %s", "Ethernet");
	fputc('\n', f);
	fputs(RESULT_LINE, f);
}

void mr_report_dest(FILE *f, const struct mr_report_info *in, bool remote,
		    const struct mr_pt_dest *d)
{
	/* BASIC_ADDR_FMT, then OUT for READ, RKey/VAddr for READ and WRITE (perftest's switch
	 * falls through from READ to WRITE; SEND and ATOMIC print neither). */
	fprintf(f, " %s address: LID %#04x QPN %#06x PSN %#06x", remote ? "remote" : "local",
		d->lid, d->qpn, d->psn);
	if (in->verb == MR_VERB_READ)
		fprintf(f, " OUT %#04x", d->out_reads);
	if (in->verb == MR_VERB_READ || in->verb == MR_VERB_WRITE)
		fprintf(f, " RKey %#08x VAddr %#016llx", d->rkey, (unsigned long long)d->vaddr);
	fputc('\n', f);
	if (in->gid_index >= 0) {
		fprintf(f, " %s: ", "GID");
		for (int i = 0; i < 16; i++)
			fprintf(f, "%02d%s", d->gid[i], i == 15 ? "\n" : ":");
	}
}

void mr_report_bw_title(FILE *f, bool gbits)
{
	fputs(RESULT_LINE, f);
	fputs(gbits ? " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
		    : " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]",
	      f);
	fputc('\n', f);
}

void mr_report_lat_title(FILE *f)
{
	fputs(RESULT_LINE, f);
	fputs(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]"
	      "    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ",
	      f);
	fputc('\n', f);
}

static double unit_bytes(bool gbits)
{
	/* perftest: MB = 0x100000 bytes; Gb = 10^9 bits = 125000000 bytes */
	return gbits ? 125000000.0 : 1048576.0;
}

/* Peak (perftest's print_report_bw): the least mean time per message over every window of
 * messages [i, j] with j on a CQ-moderation boundary (every cq_mod-th, and the last), i.e. the
 * least slope (completed[j] - posted[i]) / (j + 1 - i) between points A_i = (i, posted[i]) and
 * B_j = (j + 1, completed[j]). For a B right of every A, the A giving the least slope lies on
 * the upper convex hull of the A's, and that slope is bitonic along the hull: the hull grows in
 * amortised O(1) per point (monotone chain) and each B is a binary search, O(n log n) in all
 * instead of perftest's O(n^2 / cq_mod), which took minutes at -n 1000000. */
struct pt { int64_t x, y; };

static __int128 cross(struct pt o, struct pt a, struct pt b)
{
	return (__int128)(a.x - o.x) * (b.y - o.y) - (__int128)(a.y - o.y) * (b.x - o.x);
}

/* slope(p, q) <= slope(r, q) for p, r left of q */
static bool slope_le(struct pt p, struct pt r, struct pt q)
{
	return (__int128)(q.y - p.y) * (q.x - r.x) <= (__int128)(q.y - r.y) * (q.x - p.x);
}

static int best_window_ns(const uint64_t *posted, const uint64_t *completed, uint64_t n,
			  unsigned cq_mod, double *best_ns)
{
	struct pt *hull = malloc(n * sizeof(*hull));
	uint64_t h = 0, i = 0, j;

	if (hull == NULL)
		return -ENOMEM;
	for (j = cq_mod - 1;; j += cq_mod) {
		struct pt b;
		uint64_t lo = 0, hi;

		if (j >= n)
			j = n - 1; /* the last window: the tail since the last signalled one */
		for (; i <= j; i++) {
			struct pt a = { (int64_t)i, (int64_t)posted[i] };

			while (h >= 2 && cross(hull[h - 2], hull[h - 1], a) >= 0)
				h--;
			hull[h++] = a;
		}
		b = (struct pt){ (int64_t)j + 1, (int64_t)completed[j] };
		hi = h - 1;
		while (lo < hi) { /* first k whose slope does not beat k + 1's */
			uint64_t mid = lo + (hi - lo) / 2;

			if (slope_le(hull[mid], hull[mid + 1], b))
				hi = mid;
			else
				lo = mid + 1;
		}
		{
			double t = (double)(b.y - hull[lo].y) / (double)(b.x - hull[lo].x);

			if (t < *best_ns)
				*best_ns = t;
		}
		if (j == n - 1)
			break;
	}
	free(hull);
	return 0;
}

int mr_bw_compute(const uint64_t *posted, const uint64_t *completed, uint64_t n, uint64_t size,
		  unsigned cq_mod, bool gbits, struct mr_pt_bw_report *out)
{
	double total_s, best_ns;
	int rc;

	if (posted == NULL || completed == NULL || out == NULL || n == 0 || cq_mod == 0)
		return -EINVAL;
	for (uint64_t i = 0; i < n; i++)
		if (completed[i] < posted[i] || completed[i] > INT64_MAX ||
		    (i > 0 && (posted[i] < posted[i - 1] || completed[i] < completed[i - 1])))
			return -EINVAL;
	total_s = (double)(completed[n - 1] - posted[0]) / 1e9;
	if (total_s <= 0)
		return -EINVAL;
	best_ns = (double)(completed[n - 1] - posted[0]) / (double)n;
	rc = best_window_ns(posted, completed, n, cq_mod, &best_ns);
	if (rc < 0)
		return rc;
	out->size = size;
	out->iters = n;
	out->bw_avg = (double)size * (double)n / total_s / unit_bytes(gbits);
	out->msg_rate = (double)n / total_s / 1e6;
	out->bw_peak = best_ns > 0 ? (double)size / (best_ns / 1e9) / unit_bytes(gbits) : 0;
	return 0;
}

void mr_report_bw_row(FILE *f, const struct mr_pt_bw_report *r, bool gbits)
{
	/* REPORT_FMT / REPORT_FMT_EXT (inc_accuracy when Gb/s < 0.1) + REPORT_EXT */
	if (gbits && r->bw_avg < 0.1)
		fprintf(f, " %-7" PRIu64 "    %" PRIu64 "           %-7.6lf            %-7.6lf"
			   "            %-7.6lf",
			r->size, r->iters, r->bw_peak, r->bw_avg, r->msg_rate);
	else
		fprintf(f, " %-7" PRIu64 "    %-10" PRIu64 "       %-7.2lf            %-7.2lf\t\t"
			   "   %-7.6lf",
			r->size, r->iters, r->bw_peak, r->bw_avg, r->msg_rate);
	fputc('\n', f);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int mr_lat_compute(double *s, size_t n, uint64_t size, uint64_t iters, struct mr_lat_stats *out)
{
	size_t m, i99, i999;
	double sum = 0, var = 0;

	if (s == NULL || out == NULL || n < 3)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!isfinite(s[i]) || s[i] < 0)
			return -EINVAL;
	qsort(s, n, sizeof(*s), cmp_double);
	m = n - 2; /* LAT_MEASURE_TAIL */
	for (size_t i = 0; i < m; i++)
		sum += s[i];
	out->t_avg = sum / (double)m;
	for (size_t i = 0; i < m; i++)
		var += (s[i] - out->t_avg) * (s[i] - out->t_avg);
	out->t_stdev = sqrt(var / (double)m);
	/* get_median(): even count -> mean of the two middle samples */
	out->t_typical = (m % 2 == 0) ? (s[m / 2] + s[m / 2 - 1]) / 2 : s[m / 2];
	i99 = (size_t)ceil((double)m * 0.99);
	i999 = (size_t)ceil((double)m * 0.999);
	out->t_min = s[0];
	out->t_max = s[m];
	out->p99 = s[i99 < n ? i99 : n - 1];
	out->p999 = s[i999 < n ? i999 : n - 1];
	out->size = size;
	out->iters = iters;
	return 0;
}

void mr_report_lat_row(FILE *f, const struct mr_lat_stats *s)
{
	/* REPORT_FMT_LAT + REPORT_EXT */
	fprintf(f, " %-7" PRIu64 " %" PRIu64 "          %-7.2f        %-7.2f      %-7.2f  \t"
		   "       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f",
		s->size, s->iters, s->t_min, s->t_max, s->t_typical, s->t_avg, s->t_stdev, s->p99,
		s->p999);
	fputc('\n', f);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s != NULL && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void json_info(FILE *f, const struct mr_report_info *in)
{
	/* the keys of perftest's write_test_info_to_file(), quoted */
	fprintf(f, "  \"test_info\": {\n    \"test\": \"%s_", (unsigned)in->verb < 4 ? verb_json[in->verb] : "Unknown");
	if (in->verb == MR_VERB_ATOMIC)
		fprintf(f, "%s_", in->atomic_cmp_swap ? "CMP_AND_SWAP" : "FETCH_AND_ADD");
	fprintf(f, "%sTest\",\n", in->bw ? "BW_" : "Latency_");
	fprintf(f, "    \"Dual_port\": \"OFF\",\n    \"Device\": ");
	json_str(f, in->device != NULL ? in->device : "metaroce0");
	fprintf(f, ",\n    \"Number_of_qps\": %u,\n    \"Transport_type\": \"IB\",\n", in->num_qps);
	fprintf(f, "    \"Connection_type\": \"RC\",\n    \"Using_SRQ\": \"%s\",\n",
		in->use_srq ? "ON" : "OFF");
	if (in->bw)
		fprintf(f, "    \"Bidirectional\": \"%s\",\n", in->bidir ? "ON" : "OFF");
	if (in->client)
		fprintf(f, "    \"TX_depth\": %u,\n", in->tx_depth);
	if (in->verb == MR_VERB_SEND && !in->client)
		fprintf(f, "    \"RX_depth\": %u,\n", in->rx_depth);
	if (in->bw)
		fprintf(f, "    \"CQ_Moderation\": %u,\n", in->cq_mod);
	fprintf(f, "    \"Mtu\": %u,\n    \"Link_type\": \"Ethernet\",\n", in->mtu);
	if (in->gid_index >= 0)
		fprintf(f, "    \"GID_index\": %d,\n", in->gid_index);
	if (in->verb != MR_VERB_READ && in->verb != MR_VERB_ATOMIC)
		fprintf(f, "    \"Max_inline_data\": %u,\n", in->inline_size);
	else
		fprintf(f, "    \"Outstand_reads\": %u,\n", in->out_reads);
	if (in->transport != NULL) {
		fprintf(f, "    \"Reliable_transport\": \"%s\",\n", in->transport);
		if (in->cc != NULL)
			fprintf(f, "    \"Entropies\": %u,\n    \"CC\": \"%s\",\n", in->entropies,
				in->cc);
	}
	fprintf(f, "    \"rdma_cm_QPs\": \"OFF\",\n    \"Data_ex_method\": \"Ethernet\"\n  },\n");
}

void mr_report_json_bw_write(FILE *f, const struct mr_report_info *info,
			     const struct mr_pt_bw_report *rows, size_t nrows)
{
	fputs("{\n", f);
	json_info(f, info);
	fprintf(f, "  \"results\": [");
	for (size_t i = 0; i < nrows; i++) {
		const struct mr_pt_bw_report *r = &rows[i];
		/* same precision as the table: 6 decimals in the Gb/s < 0.1 case */
		int prec = (info->gbits && r->bw_avg < 0.1) ? 6 : 2;

		fprintf(f, "%s\n    {\"MsgSize\": %" PRIu64 ", \"n_iterations\": %" PRIu64
			   ", \"BW_peak\": %.*f, \"BW_average\": %.*f, \"MsgRate\": %.6f, \"unit\": \"%s\"}",
			i ? "," : "", r->size, r->iters, prec, r->bw_peak, prec, r->bw_avg, r->msg_rate,
			info->gbits ? "Gb/sec" : "MB/sec");
	}
	fputs(nrows ? "\n  ]\n}\n" : "]\n}\n", f);
}

void mr_report_json_lat_write(FILE *f, const struct mr_report_info *info,
			      const struct mr_lat_stats *rows, size_t nrows)
{
	fputs("{\n", f);
	json_info(f, info);
	fprintf(f, "  \"results\": [");
	for (size_t i = 0; i < nrows; i++) {
		const struct mr_lat_stats *s = &rows[i];

		fprintf(f, "%s\n    {\"MsgSize\": %" PRIu64 ", \"n_iterations\": %" PRIu64
			   ", \"t_min\": %.2f, \"t_max\": %.2f, \"t_typical\": %.2f, \"t_avg\": %.2f"
			   ", \"t_stdev\": %.2f, \"percentile_99\": %.2f, \"percentile_99_9\": %.2f}",
			i ? "," : "", s->size, s->iters, s->t_min, s->t_max, s->t_typical, s->t_avg,
			s->t_stdev, s->p99, s->p999);
	}
	fputs(nrows ? "\n  ]\n}\n" : "]\n}\n", f);
}

static int json_file(const char *path, FILE **f)
{
	if (path == NULL)
		return -EINVAL;
	*f = fopen(path, "w");
	return *f == NULL ? -errno : 0;
}

static int json_close(FILE *f)
{
	int bad = ferror(f);

	if (fclose(f) != 0 || bad)
		return -EIO;
	return 0;
}

int mr_report_json_bw(const char *path, const struct mr_report_info *info,
		      const struct mr_pt_bw_report *rows, size_t nrows)
{
	FILE *f;
	int r = json_file(path, &f);

	if (r < 0)
		return r;
	mr_report_json_bw_write(f, info, rows, nrows);
	return json_close(f);
}

int mr_report_json_lat(const char *path, const struct mr_report_info *info,
		       const struct mr_lat_stats *rows, size_t nrows)
{
	FILE *f;
	int r = json_file(path, &f);

	if (r < 0)
		return r;
	mr_report_json_lat_write(f, info, rows, nrows);
	return json_close(f);
}
