/* SPDX-License-Identifier: MIT
 * bench_shm: cost of the shared-memory path alone (app -> SQ ring -> shm server -> backend ->
 * CQ ring -> app) with the loopback fake backend and the server busy-polling in a thread.
 * Reports throughput with a window of outstanding WRs and the round-trip latency of one WR.
 * Not a unit test: numbers depend on the machine (2 cores shared with other work here).
 * Usage: bench_shm [ops] [window]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "metaroce/metaroce.h"
#include "metaroce/shm_abi.h"

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void connect_pair(struct mrc_qp *a, uint32_t dest)
{
	struct mrc_qp_attr at;

	memset(&at, 0, sizeof(at));
	at.qp_state = MR_QPS_INIT;
	mrc_modify_qp(a, &at, MRC_QP_STATE);
	at.qp_state = MR_QPS_RTR;
	at.dest_qp_num = dest;
	mrc_modify_qp(a, &at, MRC_QP_STATE | MRC_QP_DEST_QPN);
	at.qp_state = MR_QPS_RTS;
	mrc_modify_qp(a, &at, MRC_QP_STATE);
}

int main(int argc, char **argv)
{
	long ops = argc > 1 ? atol(argv[1]) : 200000, done = 0, posted = 0;
	int window = argc > 2 ? atoi(argv[2]) : 64, lat_n = 20000, i;
	static struct harness h;
	struct mrc_session *s;
	struct mrc_pd *pd;
	struct mrc_cq *cq;
	struct mrc_mr *mr;
	struct mrc_qp *qa, *qb;
	struct mrc_qp_init_attr init;
	struct mr_send_wr w;
	struct mr_wc wc[64];
	uint8_t *buf;
	double t0, t1, *lat;

	if (harness_start(&h) < 0)
		return 1;
	atomic_store(&h.busy, true);
	h.fb.exec = true;
	s = mrc_open(h.path);
	pd = mrc_alloc_pd(s);
	buf = mrc_alloc_buf(s, 1 << 16);
	mr = mrc_reg_mr(pd, buf, 1 << 16, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE);
	cq = mrc_create_cq(s, 1024);
	memset(&init, 0, sizeof(init));
	init.qp_type = MRC_QPT_RC;
	init.send_cq = init.recv_cq = cq;
	init.max_send_wr = init.max_recv_wr = 256;
	init.max_send_sge = init.max_recv_sge = 1;
	qa = mrc_create_qp(pd, &init);
	qb = mrc_create_qp(pd, &init);
	if (qa == NULL || qb == NULL) {
		fprintf(stderr, "setup failed: %s\n", mrc_last_error(s));
		return 1;
	}
	connect_pair(qa, mrc_qp_num(qb));
	connect_pair(qb, mrc_qp_num(qa));
	memset(&w, 0, sizeof(w));
	w.opcode = MR_WR_RDMA_WRITE;
	w.send_flags = MR_SEND_SIGNALED;
	w.num_sge = 1;
	w.sg_list[0] = (struct mr_sge){ (uint64_t)(uintptr_t)buf, 64, mrc_mr_lkey(mr) };
	w.rdma.remote_addr = (uint64_t)(uintptr_t)buf + 32768;
	w.rdma.rkey = mrc_mr_rkey(mr);

	t0 = now_s();
	while (done < ops) {
		while (posted < ops && posted - done < window && mrc_post_send(qa, &w) == 0)
			posted++;
		done += mrc_poll_cq(cq, 64, wc);
	}
	t1 = now_s();
	printf("throughput: %ld signaled 64 B WRITEs, window %d: %.2f Mops/s (%.0f ns/op)\n",
	       ops, window, (double)ops / (t1 - t0) / 1e6, (t1 - t0) / (double)ops * 1e9);

	/* Same with batches of 16 WRs published by one index store. */
	{
		struct mr_send_wr b[16];
		long pb = 0, db = 0;

		for (i = 0; i < 16; i++)
			b[i] = w;
		t0 = now_s();
		while (db < ops) {
			if (pb < ops && pb - db <= window - 16) {
				int r = mrc_post_send_batch(qa, b, 16);

				pb += r > 0 ? r : 0;
			}
			db += mrc_poll_cq(cq, 64, wc);
		}
		t1 = now_s();
		printf("throughput, batches of 16: %.2f Mops/s (%.0f ns/op)\n",
		       (double)db / (t1 - t0) / 1e6, (t1 - t0) / (double)db * 1e9);
	}

	lat = calloc((size_t)lat_n, sizeof(*lat));
	for (i = 0; i < lat_n; i++) {
		double a = now_s();

		mrc_post_send(qa, &w);
		while (mrc_poll_cq(cq, 1, wc) == 0)
			;
		lat[i] = (now_s() - a) * 1e9;
	}
	qsort(lat, (size_t)lat_n, sizeof(*lat), cmp_d);
	printf("round trip (post -> completion, window 1): median %.0f ns, p99 %.0f ns\n",
	       lat[lat_n / 2], lat[lat_n * 99 / 100]);
	free(lat);

	/* Posting alone: 16 QPs round-robin, one unsignaled 8-byte WRITE per post, the server
	 * reading them and handing them to a backend that only counts them. What the app's post
	 * costs, the doorbell included (METAROCE_NO_DB_ASYM=1: the fenced doorbell). */
	{
		enum { NQ = 16 };
		struct mrc_qp *q[NQ];
		long n = 0, full = 0;

		fake_lock(&h.fb);
		h.fb.exec = false;
		fake_unlock(&h.fb);
		for (i = 0; i < NQ; i++) {
			q[i] = mrc_create_qp(pd, &init);
			if (q[i] == NULL) {
				fprintf(stderr, "setup failed: %s\n", mrc_last_error(s));
				return 1;
			}
			connect_pair(q[i], mrc_qp_num(q[i]));
		}
		w.send_flags = 0;
		w.sg_list[0].length = 8;
		t0 = now_s();
		while (n < ops) {
			if (mrc_post_send(q[n % NQ], &w) == 0)
				n++;
			else
				full++;
		}
		t1 = now_s();
		printf("posting alone, %d QPs round-robin, unsignaled 8 B WRITEs: %.2f Mposts/s "
		       "(%.1f ns/post, queue found full %ld times; doorbell %s)\n", NQ,
		       (double)n / (t1 - t0) / 1e6, (t1 - t0) / (double)n * 1e9, full,
		       (mrc_features(s) & MRC_FEAT_DB_ASYM) ? "fence-free" : "fenced");
		for (i = 0; i < NQ; i++)
			mrc_destroy_qp(q[i]);
	}
	mrc_close(s);
	harness_stop(&h);
	return 0;
}
