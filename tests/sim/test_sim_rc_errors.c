/* SPDX-License-Identifier: MIT
 * Error paths of RC over the simulator: retry exhaustion on a link that drops everything (IBA
 * 9.7.6.1.3: retry_cnt retries after the first attempt, then MR_WC_RETRY_EXC_ERR and the QP goes to
 * ERR, C10-?: outstanding and later WRs complete with MR_WC_WR_FLUSH_ERR), a link cut in the middle
 * of a transfer, and RNR retry exhaustion (IBA 9.7.5.2.8).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim/sim.h"
#include "sim/sim_qp.h"
#include "sim/sim_xfer.h"
#include "sim_rc_errors.h"

#define BUF_LEN (8 * 65536)
#define IOVA 0x10000

struct world {
	struct mr_sim *sim;
	struct mr_sim_node *a, *b;
	struct mr_pd *pda, *pdb;
	struct mr_memreg *mra, *mrb;
	struct mr_cq *cqa, *cqb;
	struct mr_qp *qa, *qb;
	uint8_t *bufa, *bufb;
	struct mr_wc wc[64];
	int nwc;
	int want;          /* stop once this many completions arrived on a's CQ */
	int cut_after;     /* cut the a->b link after this many completions (0 = never) */
	bool cut;
};

static struct mr_sim_node *node(struct mr_sim *sim, const char *name, uint8_t id, uint32_t qpn)
{
	struct mr_sim_node_cfg nc;
	struct mr_sim_node *n;

	memset(&nc, 0, sizeof(nc));
	nc.name = name;
	nc.mac[0] = 2;
	nc.mac[5] = id;
	nc.ipv4[0] = 10;
	nc.ipv4[3] = id;
	nc.ctx = (struct mr_ctx_params){ .max_qp = 4, .first_qpn = qpn, .max_mr = 4, .seed = id };
	n = mr_sim_node_create(&nc);
	assert_non_null(n);
	assert_int_equal(mr_sim_add_node(sim, n), 0);
	return n;
}

static void world_up(struct world *w, double loss_ab, uint8_t retry_cnt)
{
	struct mr_sim_link_cfg l;
	struct mr_sim_qp_cfg qc;
	struct mr_qp_init_attr ia;
	const uint32_t acc = MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE;

	memset(w, 0, sizeof(*w));
	w->sim = mr_sim_create();
	assert_non_null(w->sim);
	w->a = node(w->sim, "a", 1, 0x20);
	w->b = node(w->sim, "b", 2, 0x30);
	mr_sim_link_cfg_init(&l);
	l.rate_bps = 100000000000ull;
	l.latency_ns = 5000;
	l.loss = loss_ab;
	l.seed = 7;
	struct mr_sim_link_cfg lb = l;

	lb.loss = 0;
	assert_int_equal(mr_sim_connect(w->sim, w->a, w->b, &l, &lb), 0);
	w->bufa = malloc(BUF_LEN);
	w->bufb = calloc(1, BUF_LEN);
	assert_non_null(w->bufa);
	assert_non_null(w->bufb);
	for (int i = 0; i < BUF_LEN; i++)
		w->bufa[i] = (uint8_t)(i * 7 + (i >> 9));
	w->pda = mr_pd_alloc(mr_sim_node_ctx(w->a));
	w->pdb = mr_pd_alloc(mr_sim_node_ctx(w->b));
	assert_non_null(w->pda);
	assert_non_null(w->pdb);
	w->mra = mr_reg(w->pda, w->bufa, IOVA, BUF_LEN, acc);
	w->mrb = mr_reg(w->pdb, w->bufb, IOVA, BUF_LEN, acc);
	assert_non_null(w->mra);
	assert_non_null(w->mrb);
	w->cqa = mr_cq_create(mr_sim_node_ctx(w->a), 64);
	w->cqb = mr_cq_create(mr_sim_node_ctx(w->b), 64);
	assert_non_null(w->cqa);
	assert_non_null(w->cqb);
	memset(&ia, 0, sizeof(ia));
	ia.max_send_wr = 16;
	ia.max_recv_wr = 16;
	ia.pd = w->pda;
	ia.send_cq = ia.recv_cq = w->cqa;
	w->qa = mr_qp_create(mr_sim_node_ctx(w->a), &ia);
	ia.pd = w->pdb;
	ia.send_cq = ia.recv_cq = w->cqb;
	w->qb = mr_qp_create(mr_sim_node_ctx(w->b), &ia);
	assert_non_null(w->qa);
	assert_non_null(w->qb);
	mr_sim_qp_cfg_init(&qc);
	qc.retry_cnt = retry_cnt;
	qc.timeout = 8;
	assert_int_equal(mr_sim_qp_connect(w->a, w->qa, w->b, w->qb, &qc), 0);
	if (getenv("MR_SIM_TRACE"))
		mr_sim_set_trace(w->sim, stderr);
}

static void world_down(struct world *w)
{
	mr_qp_destroy(w->qa);
	mr_qp_destroy(w->qb);
	mr_dereg(w->mra);
	mr_dereg(w->mrb);
	mr_cq_destroy(w->cqa);
	mr_cq_destroy(w->cqb);
	mr_pd_free(w->pda);
	mr_pd_free(w->pdb);
	mr_sim_destroy(w->sim);
	free(w->bufa);
	free(w->bufb);
}

static int post_write(struct world *w, uint64_t id, uint32_t off, uint32_t len)
{
	struct mr_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.opcode = MR_WR_RDMA_WRITE;
	wr.send_flags = MR_SEND_SIGNALED;
	wr.num_sge = 1;
	wr.sg_list[0] = (struct mr_sge){ IOVA + off, len, mr_memreg_lkey(w->mra) };
	wr.rdma.remote_addr = IOVA + off;
	wr.rdma.rkey = mr_memreg_rkey(w->mrb);
	return mr_post_send(w->qa, &wr);
}

static bool collect(struct mr_sim *sim, void *arg)
{
	struct world *w = arg;
	int n;

	while (w->nwc < 64 && (n = mr_cq_poll(w->cqa, 64 - w->nwc, w->wc + w->nwc)) > 0)
		w->nwc += n;
	if (w->cut_after && !w->cut && w->nwc >= w->cut_after) {
		struct mr_sim_link_cfg c = *mr_sim_link_get_cfg(mr_sim_get_link(sim, w->a, w->b));

		c.loss = 1.0; /* the cable is pulled */
		assert_int_equal(mr_sim_link_set_cfg(mr_sim_get_link(sim, w->a, w->b), &c), 0);
		w->cut = true;
	}
	return w->nwc >= w->want;
}

static void test_retry_exhausted_then_flush(void **state)
{
	struct world w;
	struct mr_qp_stats st;
	struct mr_sim_link_stats ls;
	uint64_t elapsed;
	int rc;
	(void)state;

	world_up(&w, 1.0, 2);
	for (int i = 0; i < 3; i++)
		assert_int_equal(post_write(&w, 100 + i, (uint32_t)i * 4096, 4096), 0);
	w.want = 3;
	assert_int_equal(mr_sim_run(w.sim, collect, &w, 1000000000ull, &elapsed), 0);
	assert_int_equal(w.nwc, 3);
	/* The oldest WR reports the retry error; the rest are flushed, in order. */
	assert_int_equal(w.wc[0].wr_id, 100);
	assert_int_equal(w.wc[0].status, MR_WC_RETRY_EXC_ERR);
	assert_int_equal(w.wc[1].wr_id, 101);
	assert_int_equal(w.wc[1].status, MR_WC_WR_FLUSH_ERR);
	assert_int_equal(w.wc[2].wr_id, 102);
	assert_int_equal(w.wc[2].status, MR_WC_WR_FLUSH_ERR);
	assert_int_equal(mr_qp_state(w.qa), MR_QPS_ERR);
	assert_int_equal(mr_qp_state(w.qb), MR_QPS_RTS);
	assert_int_equal(mr_qp_get_stats(w.qa, &st), 0);
	/* retry_cnt = 2: the first attempt and two retries each time out (IBA 9.7.6.1.3). */
	print_message("retry exhaustion: timeouts=%llu retransmits=%llu vtime=%.3f ms\n",
		      (unsigned long long)st.timeouts, (unsigned long long)st.retransmits,
		      (double)elapsed / 1e6);
	assert_int_equal(st.timeouts, 3);
	assert_true(st.retransmits >= 2 * 3); /* 3 packets x 2 retries at least (MTU 1024: 12) */
	assert_true(elapsed >= 3 * mr_ack_timeout_ns(8));
	assert_true(elapsed < 8 * mr_ack_timeout_ns(8));
	mr_sim_link_get_stats(mr_sim_get_link(w.sim, w.a, w.b), &ls);
	assert_int_equal(ls.delivered, 0);
	assert_true(ls.dropped[MR_SIM_FATE_DROP_RANDOM] == ls.sent && ls.sent > 0);
	for (int i = 0; i < BUF_LEN; i++)
		assert_int_equal(w.bufb[i], 0);

	/* A WR posted in ERR is flushed too (verbs semantics) or refused (rc.h allows -EINVAL). */
	rc = post_write(&w, 200, 0, 16);
	if (rc == 0) {
		w.want = 4;
		assert_int_equal(mr_sim_run(w.sim, collect, &w, 1000000000ull, NULL), 0);
		assert_int_equal(w.wc[3].wr_id, 200);
		assert_int_equal(w.wc[3].status, MR_WC_WR_FLUSH_ERR);
		print_message("post in ERR: accepted and flushed\n");
	} else {
		assert_int_equal(rc, -EINVAL);
		print_message("post in ERR: refused with -EINVAL\n");
	}
	world_down(&w);
}

static void test_link_cut_mid_transfer(void **state)
{
	struct world w;
	struct mr_qp_stats st;
	int ok = 0;
	(void)state;

	world_up(&w, 0.0, 3);
	/* 8 x 64 KiB; the link dies once the first two have completed. */
	for (int i = 0; i < 8; i++)
		assert_int_equal(post_write(&w, (uint64_t)i, (uint32_t)i * 65536, 65536), 0);
	w.want = 8;
	w.cut_after = 2;
	assert_int_equal(mr_sim_run(w.sim, collect, &w, 1000000000ull, NULL), 0);
	assert_int_equal(w.nwc, 8);
	for (int i = 0; i < 8; i++) {
		assert_int_equal(w.wc[i].wr_id, (uint64_t)i); /* completions stay in order */
		if (w.wc[i].status == MR_WC_SUCCESS) {
			assert_int_equal(ok, i); /* successes form a prefix */
			ok++;
			assert_memory_equal(w.bufb + i * 65536, w.bufa + i * 65536, 65536);
		} else if (i == ok) {
			assert_int_equal(w.wc[i].status, MR_WC_RETRY_EXC_ERR);
		} else {
			assert_int_equal(w.wc[i].status, MR_WC_WR_FLUSH_ERR);
		}
	}
	assert_true(ok >= 2 && ok < 8);
	assert_int_equal(mr_qp_state(w.qa), MR_QPS_ERR);
	assert_int_equal(mr_qp_get_stats(w.qa, &st), 0);
	print_message("link cut: %d of 8 succeeded, timeouts=%llu retransmits=%llu\n", ok,
		      (unsigned long long)st.timeouts, (unsigned long long)st.retransmits);
	assert_int_equal(st.timeouts, 4); /* retry_cnt 3 */
	world_down(&w);
}

static void test_rnr_retry_exhausted(void **state)
{
	struct mr_sim_xfer_cfg cfg;
	struct mr_sim_xfer_result r;
	(void)state;

	/* The receiver never posts a receive: RNR NAKs until rnr_retry (1) is used up. */
	mr_sim_xfer_cfg_init(&cfg);
	cfg.op = MR_WR_SEND;
	cfg.size = 1000;
	cfg.count = 3;
	cfg.depth = 3;
	cfg.qp.rnr_retry = 1;
	cfg.recv_delay_ns = 1000000000000ull;
	cfg.max_ns = 1000000000ull;
	assert_int_equal(mr_sim_xfer_run(&cfg, &r), 0);
	print_message("rnr exhaustion: first=%s rnr_naks=%llu/%llu\n",
		      mr_sim_wc_status_str(r.first_error),
		      (unsigned long long)r.qb.rnr_naks_sent, (unsigned long long)r.qa.rnr_naks_rcvd);
	assert_int_equal(r.completed, 3);
	assert_int_equal(r.status_count[MR_WC_RNR_RETRY_EXC_ERR], 1);
	assert_int_equal(r.status_count[MR_WC_WR_FLUSH_ERR], 2);
	assert_int_equal(r.first_error, MR_WC_RNR_RETRY_EXC_ERR);
	assert_int_equal(r.final_state_a, MR_QPS_ERR);
	/* The first attempt and one retry were both RNR NAKed. */
	assert_int_equal(r.qa.rnr_naks_rcvd, 2);
	assert_true(r.qb.rnr_naks_sent >= 2);
	assert_int_equal(r.recv_completed, 0);
}

int test_sim_rc_errors(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_retry_exhausted_then_flush),
		cmocka_unit_test(test_link_cut_mid_transfer),
		cmocka_unit_test(test_rnr_retry_exhausted),
	};

	return cmocka_run_group_tests_name("errors", t, NULL, NULL);
}
