/* SPDX-License-Identifier: MIT
 * mrperf: perftest-compatible bandwidth/latency tool on metaroce.
 *
 *   mrperf write_bw|write_lat|send_bw|send_lat|read_bw|read_lat|atomic_bw|atomic_lat [opts] [SERVER]
 *
 * Without SERVER it is the server (listens on TCP 18515), with it the client, exactly like
 * ib_write_bw & co: the TCP conversation (exchange.h) is perftest 4.5's, so either side may be
 * a stock perftest on a Linux rxe (or any verbs) peer. Output mimics perftest's (report.h).
 *   ib_write_bw [opts] [SERVER]     (mrperf run under a perftest name: the name is the test)
 *   mrperf --test=write_bw [opts] [SERVER]
 *
 * Every flag of stock perftest 4.5 is understood (docs/mrperf.md): implemented, accepted with
 * no effect (listed under the header), or refused with a reason.
 * Exit: 0 ok, 1 runtime failure (no daemon, peer, data corruption, -w/-y limit missed) or a
 * perftest flag metaroce cannot honour, 2 bad command line.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "exchange.h"
#include "negotiate.h"
#include "perf.h"
#include "report.h"

#define SETUP_TIMEOUT_MS 60000

static int die(struct mr_perf_ctx *c, const char *what, int rc)
{
	fprintf(stderr, "mrperf: %s: %s\n", what,
		c != NULL && c->err[0] ? c->err : strerror(rc < 0 ? -rc : rc));
	return 1;
}

static void info_of(const struct mr_perf_args *a, const struct mr_perf_ctx *c, uint32_t mtu,
		    struct mr_report_info *in)
{
	memset(in, 0, sizeof(*in));
	in->verb = c->verb;
	in->bw = mr_perf_test_is_bw(a->test);
	in->client = c->client;
	in->gbits = a->gbits;
	in->device = a->device;
	in->num_qps = a->num_qps;
	in->tx_depth = a->tx_depth;
	in->rx_depth = a->rx_depth;
	in->cq_mod = a->cq_mod;
	in->mtu = mtu;
	in->gid_index = (int)c->gid_index;
	in->out_reads = c->qp[0].mine.out_reads;
	in->inline_size = a->inline_size;
	in->use_srq = a->use_srq;
	in->atomic_cmp_swap = a->atomic_cas;
	in->bidir = a->bidir;
}

struct run {
	struct mr_perf_args a;
	struct mr_perf_ctx c;
	struct mr_pt_conn conn;
	struct mr_report_info info;
	uint64_t sizes[32];
	unsigned nsizes;
	struct mr_pt_bw_report bw[32];
	struct mr_lat_stats lat[32];
	unsigned nrows;
};

static int hs0(struct run *r)
{
	return mr_pt_hand_shake(&r->conn, &r->c.qp[0].mine, &r->c.qp[0].rem);
}

/* -b: both sides run the requester loop at once; per size a start barrier (after the receives
 * of a send test are posted), the loop, then a barrier and the report exchange; each side
 * prints the sum of both directions (and, with --report-both, each one). */
static int run_bw_duplex(struct run *r)
{
	int rc;

	mr_report_bw_title(stdout, r->a.gbits);
	for (unsigned k = 0; k < r->nsizes; k++) {
		uint64_t size = r->sizes[k];
		struct mr_pt_bw_report mine, theirs, sum;

		if (r->c.verb == MR_VERB_SEND && mr_perf_post_recvs(&r->c, size) < 0)
			return die(&r->c, "post_recv", -EIO);
		rc = hs0(r);
		if (rc < 0)
			return die(NULL, "sync before the measurement", rc);
		rc = mr_perf_bw_client(&r->c, size, &mine);
		if (rc < 0)
			return die(&r->c, "measurement", rc);
		rc = hs0(r);
		if (rc == 0)
			rc = mr_pt_xchg_bw_report(&r->conn, &mine, &theirs);
		if (rc < 0)
			return die(NULL, "report exchange", rc);
		sum = mine;
		sum.bw_peak += theirs.bw_peak;
		sum.bw_avg += theirs.bw_avg;
		sum.msg_rate += theirs.msg_rate;
		if (r->a.report_both) {
			printf(" Local results (sent by this side):\n");
			mr_report_bw_row(stdout, &mine, r->a.gbits);
			printf(" Remote results (sent by the peer):\n");
			mr_report_bw_row(stdout, &theirs, r->a.gbits);
			printf(" Both directions:\n");
		}
		mr_report_bw_row(stdout, &sum, r->a.gbits);
		r->bw[r->nrows++] = sum;
		/* the peer's writes/atomics into us all completed before its report */
		if (r->a.verify && r->c.verb != MR_VERB_SEND && r->c.verb != MR_VERB_READ)
			mr_perf_verify_target(&r->c, size);
	}
	mr_report_line(stdout);
	rc = mr_pt_close(&r->conn, &r->c.qp[0].mine, &r->c.qp[0].rem);
	return rc < 0 ? die(NULL, "closing", rc) : 0;
}

/* --run_infinitely, the requester: a -D period after another, a row each, until killed. */
static int run_bw_forever(struct run *r)
{
	for (;;) {
		struct mr_pt_bw_report row;
		int rc = mr_perf_bw_client(&r->c, r->sizes[0], &row);

		if (rc < 0)
			return die(&r->c, "measurement", rc);
		mr_report_bw_row(stdout, &row, r->a.gbits);
	}
}

static int run_bw(struct run *r)
{
	unsigned tail = mr_pt_tail_flags(r->a.test, r->a.all);
	struct mr_pt_bw_report theirs;
	int rc;

	if (r->a.bidir)
		return run_bw_duplex(r);
	mr_report_bw_title(stdout, r->a.gbits);
	if (r->a.run_infinitely && r->c.client) {
		if (tail & MR_PT_TAIL_SYNC_PER_SIZE_PRE) {
			rc = hs0(r);
			if (rc < 0)
				return die(NULL, "sync before the measurement", rc);
		}
		return run_bw_forever(r);
	}
	if ((tail & MR_PT_TAIL_SERVER_PASSIVE) && !r->c.client) {
		/* write/read/atomic server: wait for the client to finish, print its numbers */
		struct mr_pt_bw_report none = { 0 };

		rc = hs0(r);
		if (rc == 0)
			rc = mr_pt_xchg_bw_report(&r->conn, &none, &theirs);
		if (rc < 0)
			return die(NULL, "waiting for the client's report", rc);
		mr_report_bw_row(stdout, &theirs, r->a.gbits);
		r->bw[r->nrows++] = theirs;
		if (r->a.verify)
			mr_perf_verify_target(&r->c, r->sizes[r->nsizes - 1]);
		rc = mr_pt_close(&r->conn, &r->c.qp[0].mine, &r->c.qp[0].rem);
		mr_report_line(stdout);
		return rc < 0 ? die(NULL, "closing", rc) : 0;
	}
	for (unsigned k = 0; k < r->nsizes; k++) {
		uint64_t size = r->sizes[k];
		struct mr_pt_bw_report row;

		if (tail & MR_PT_TAIL_SYNC_PER_SIZE_PRE) {
			/* send: the server posts its receives before the sync (no RNR storm) */
			if (!r->c.client && mr_perf_post_recvs(&r->c, size) < 0)
				return die(&r->c, "post_recv", -EIO);
			rc = hs0(r);
			if (rc < 0)
				return die(NULL, "sync before the measurement", rc);
		}
		rc = r->c.client ? mr_perf_bw_client(&r->c, size, &row)
				 : mr_perf_bw_send_server(&r->c, size, &row);
		if (rc < 0)
			return die(&r->c, "measurement", rc);
		mr_report_bw_row(stdout, &row, r->a.gbits);
		r->bw[r->nrows++] = row;
		if (tail & MR_PT_TAIL_SYNC_PER_SIZE_POST) {
			rc = hs0(r);
			if (rc < 0)
				return die(NULL, "sync after the measurement", rc);
		}
	}
	mr_report_line(stdout);
	if (tail & MR_PT_TAIL_REPORT_XCHG) {
		rc = hs0(r);
		if (rc == 0)
			rc = mr_pt_xchg_bw_report(&r->conn, &r->bw[r->nrows - 1], &theirs);
		if (rc < 0)
			return die(NULL, "report exchange", rc);
	}
	rc = mr_pt_close(&r->conn, &r->c.qp[0].mine, &r->c.qp[0].rem);
	return rc < 0 ? die(NULL, "closing", rc) : 0;
}

static int run_lat(struct run *r)
{
	unsigned tail = mr_pt_tail_flags(r->a.test, r->a.all);
	int rc;

	if ((tail & MR_PT_TAIL_SERVER_CLOSE_EARLY) && !r->c.client) {
		/* read/atomic latency: the server is passive; its close waits for the client's */
		rc = mr_pt_close(&r->conn, &r->c.qp[0].mine, &r->c.qp[0].rem);
		if (r->a.verify)
			mr_perf_verify_target(&r->c, r->sizes[r->nsizes - 1]);
		return rc < 0 ? die(NULL, "closing", rc) : 0;
	}
	mr_report_lat_title(stdout);
	for (unsigned k = 0; k < r->nsizes; k++) {
		uint64_t size = r->sizes[k];
		struct mr_lat_stats row;

		if (tail & MR_PT_TAIL_SYNC_PER_SIZE_PRE) {
			if (mr_perf_post_recvs(&r->c, size) < 0)
				return die(&r->c, "post_recv", -EIO);
			rc = hs0(r);
			if (rc < 0)
				return die(NULL, "sync before the measurement", rc);
		}
		rc = mr_perf_lat(&r->c, size, &row);
		if (rc < 0)
			return die(&r->c, "measurement", rc);
		mr_report_lat_row(stdout, &row);
		r->lat[r->nrows++] = row;
	}
	mr_report_line(stdout);
	if (tail & MR_PT_TAIL_CLOSE) {
		rc = mr_pt_close(&r->conn, &r->c.qp[0].mine, &r->c.qp[0].rem);
		if (rc < 0)
			return die(NULL, "closing", rc);
	}
	return 0;
}

static int run(struct run *r)
{
	struct mr_pt_preamble pre;
	struct mr_mrc_offer mine = { 0 }, peer, agreed;
	uint8_t vfield[MR_PT_VERSION_LEN];
	unsigned idx[2 * MR_PERF_MAX_QPS + 2], conn_after;
	uint32_t mine_mtu;
	int n, rc;

	r->conn.with_gid = true; /* RoCE always has a GID index */
	/* --run_infinitely: the passive side waits for the end of a run that never ends */
	r->conn.timeout_ms = r->a.run_infinitely ? 0 : SETUP_TIMEOUT_MS;
	r->conn.client = r->c.client;
	if (r->c.client) {
		r->conn.fd = mr_pt_connect(r->a.server, r->a.port, SETUP_TIMEOUT_MS);
	} else {
		printf("\n************************************\n");
		printf("* Waiting for client to connect... *\n");
		printf("************************************\n");
		fflush(stdout);
		r->conn.fd = mr_pt_accept(r->a.port, 0, NULL, NULL);
	}
	r->c.peer_fd = r->conn.fd;
	if (r->conn.fd < 0)
		return die(NULL, r->c.client ? "connecting to the server" : "accepting a client",
			   r->conn.fd);
	memset(&pre, 0, sizeof(pre));
	if (r->a.metaroce) {
		mine.metaroce = true;
		mine.n_entropies = r->a.entropies;
		mine.cc = r->a.cc;
		if (mr_mrc_version_encode(&mine, vfield) < 0)
			return die(NULL, "MetaRoCE offer", -EINVAL);
		pre.version_out = vfield;
	}
	pre.skip_version = r->a.no_xchg_versions;
	pre.cycle_buffer = (uint32_t)sysconf(_SC_PAGESIZE);
	pre.cache_line_size = 64;
	pre.mtu = r->a.mtu ? r->a.mtu : r->c.port_mtu;
	if (pre.mtu > r->c.port_mtu)
		pre.mtu = r->c.port_mtu;
	mine_mtu = pre.mtu;
	rc = mr_pt_preamble(&r->conn, &pre);
	/* perftest's check_mtu() takes the smaller silently; say so, it explains low bandwidth. */
	if (rc == 0 && pre.mtu < mine_mtu)
		fprintf(stderr, "mrperf: MTU mismatch: the peer uses MTU %u, we %u: both use "
			"%u (set the same port.mtu on both daemons; mrstat link shows it)\n", pre.mtu,
			mine_mtu, pre.mtu);
	if (rc == -EPROTO)
		return die(NULL, "peer's perftest version is older than 5.70", rc);
	if (rc < 0)
		return die(NULL, "setup exchange", rc);
	/* MetaRoCE only if both offered it (negotiate.h); a stock peer's field has no offer. */
	mr_mrc_version_decode(pre.peer_version_raw, &peer);
	r->c.metaroce = mr_mrc_negotiate(&mine, &peer, &agreed);
	r->c.n_entropies = agreed.n_entropies;
	r->c.cc = agreed.cc;
	info_of(&r->a, &r->c, pre.mtu, &r->info);
	r->info.transport = r->c.metaroce ? "MetaRoCE" : "RoCE";
	if (r->c.metaroce) {
		r->info.entropies = agreed.n_entropies;
		r->info.cc = mr_mrc_cc_name(agreed.cc);
	}
	mr_report_header(stdout, &r->info);
	for (unsigned i = 0; i < r->a.nnotes; i++)
		printf(" Ignored         : --%s (%s)\n", r->a.note_flag[i], r->a.note_why[i]);
	if (r->a.post_list > 1)
		printf(" Post List       : %u (CQ moderation %u)\n", r->a.post_list, r->a.cq_mod);
	if (r->a.events)
		printf(" Events          : ON (sleeps on the CQ event fd)\n");
	if (r->a.bidir)
		printf(" Bidirectional   : ON\n");
	if (r->c.metaroce)
		printf(" Transport: MetaRoCE (%u entropies, cc %s)\n", agreed.n_entropies,
		       mr_mrc_cc_name(agreed.cc));
	else if (r->a.metaroce)
		printf(" MetaRoCE requested but peer did not offer it: plain RoCE\n");
	n = mr_pt_setup_script(r->a.test, r->c.nqp, idx, sizeof(idx) / sizeof(idx[0]), &conn_after);
	if (n < 0)
		return die(NULL, "setup script", n);
	for (int k = 0; k < n; k++) {
		if ((unsigned)k == conn_after) {
			rc = mr_perf_connect(&r->c, pre.mtu);
			if (rc < 0)
				return die(&r->c, "connecting the QPs", rc);
		}
		rc = mr_pt_hand_shake(&r->conn, &r->c.qp[idx[k]].mine, &r->c.qp[idx[k]].rem);
		if (rc < 0)
			return die(NULL, rc == -EPROTO ? "malformed key record from the peer"
						      : "key exchange", rc);
	}
	for (unsigned i = 0; i < r->c.nqp; i++)
		mr_report_dest(stdout, &r->info, false, &r->c.qp[i].mine);
	for (unsigned i = 0; i < r->c.nqp; i++)
		mr_report_dest(stdout, &r->info, true, &r->c.qp[i].rem);
	rc = r->info.bw ? run_bw(r) : run_lat(r);
	if (r->conn.fd >= 0) {
		close(r->conn.fd);
		r->conn.fd = -1;
	}
	return rc;
}

/* -w/-y, perftest's verifier limits: every reported row must reach them. */
static int check_limits(const struct run *r)
{
	for (unsigned i = 0; i < r->nrows; i++) {
		const struct mr_pt_bw_report *b = &r->bw[i];

		if (r->a.limit_bw > 0 && b->bw_avg < r->a.limit_bw) {
			fprintf(stderr, "mrperf: -w/--limit_bw: %llu bytes: average %.2f %s is below "
				"the limit %.2f\n", (unsigned long long)b->size, b->bw_avg,
				r->a.gbits ? "Gb/sec" : "MB/sec", r->a.limit_bw);
			return 1;
		}
		if (r->a.limit_msgrate > 0 && b->msg_rate < r->a.limit_msgrate) {
			fprintf(stderr, "mrperf: -y/--limit_msgrate: %llu bytes: %.6f Mpps is below the "
				"limit %.6f\n", (unsigned long long)b->size, b->msg_rate,
				r->a.limit_msgrate);
			return 1;
		}
	}
	printf(" limits: every row reached%s%s\n", r->a.limit_bw > 0 ? " -w" : "",
	       r->a.limit_msgrate > 0 ? " -y" : "");
	return 0;
}

int main(int argc, char **argv)
{
	static struct run r;
	char err[256];
	uint64_t max_size;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	rc = mr_perf_args_parse(argc, (const char *const *)argv, &r.a, err, sizeof(err));
	if (rc == -ENOTSUP) {
		/* a stock perftest flag metaroce cannot honour: say which and why, nothing else */
		fprintf(stderr, "mrperf: %s\n", err);
		return 1;
	}
	if (rc < 0) {
		fprintf(stderr, "mrperf: %s\n%s", err, mr_perf_usage());
		return 2;
	}
	if (r.a.help) {
		fputs(mr_perf_usage(), stdout);
		return 0;
	}
	if (r.a.version) {
		printf("mrperf: perftest %s compatible (stock perftest 4.5 flags; metaroce)\n",
		       MR_PT_VERSION);
		return 0;
	}
	if (r.a.all) {
		for (unsigned i = 1; i <= MR_PERF_ALL_MAX_LOG2; i++)
			r.sizes[r.nsizes++] = 1ull << i;
	} else {
		r.sizes[r.nsizes++] = r.a.size;
	}
	max_size = r.sizes[r.nsizes - 1];
	rc = mr_perf_open(&r.c, &r.a, max_size);
	if (rc < 0) {
		rc = die(&r.c, "setup", rc);
		mr_perf_close(&r.c);
		return rc;
	}
	rc = run(&r);
	if (rc == 0 && r.a.json != NULL) {
		int jr = r.info.bw ? mr_report_json_bw(r.a.json, &r.info, r.bw, r.nrows)
				   : mr_report_json_lat(r.a.json, &r.info, r.lat, r.nrows);

		if (jr < 0)
			rc = die(NULL, "writing the JSON file", jr);
	}
	if (rc == 0 && r.a.verify && r.c.verified == 0) {
		printf(" verify: sent the seed %u pattern; the receiving side checks it\n", r.a.seed);
	} else if (rc == 0 && r.a.verify) {
		printf(" verified %" PRIu64 " bytes, %" PRIu64 " corrupted\n", r.c.verified,
		       r.c.corrupted);
		if (r.c.corrupted != 0)
			rc = 1;
	}
	if (rc == 0 && (r.a.limit_bw > 0 || r.a.limit_msgrate > 0))
		rc = check_limits(&r);
	if (rc == 0 && r.a.events)
		printf(" events: %llu CQ wake-ups\n", (unsigned long long)r.c.cq_events);
	if (r.conn.fd > 0)
		close(r.conn.fd);
	if (r.a.wait_destroy > 0)
		sleep(r.a.wait_destroy); /* --wait_destroy */
	mr_perf_close(&r.c);
	return rc;
}
