/* SPDX-License-Identifier: MIT
 * QP state machine (IBA 10.3.1, ibv_modify_qp masks), posting rules per state, flush on ERR,
 * RESET clearing, and bad API calls.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rc_harness.h"

#define M_INIT (MR_QP_STATE | MR_QP_PKEY_INDEX | MR_QP_ACCESS_FLAGS)
#define M_RTR (MR_QP_STATE | MR_QP_PATH | MR_QP_PATH_MTU | MR_QP_DEST_QPN | MR_QP_RQ_PSN | \
	       MR_QP_MAX_DEST_RD_ATOMIC | MR_QP_MIN_RNR_TIMER)
#define M_RTS (MR_QP_STATE | MR_QP_SQ_PSN | MR_QP_TIMEOUT | MR_QP_RETRY_CNT | MR_QP_RNR_RETRY | \
	       MR_QP_MAX_QP_RD_ATOMIC)

struct one {
	struct mr_ctx *ctx;
	struct mr_pd *pd;
	struct mr_cq *cq;
	struct mr_qp *qp;
	uint8_t buf[256];
	struct mr_memreg *mr;
};

static void one_init(struct one *o)
{
	struct mr_ctx_params p = { .max_qp = 4, .first_qpn = 2, .max_mr = 4, .seed = 1 };
	struct mr_qp_init_attr ia = { 0 };

	o->ctx = mr_ctx_create(&p);
	assert_non_null(o->ctx);
	o->pd = mr_pd_alloc(o->ctx);
	o->cq = mr_cq_create(o->ctx, 64);
	ia.pd = o->pd;
	ia.send_cq = o->cq;
	ia.recv_cq = o->cq;
	ia.max_send_wr = 4;
	ia.max_recv_wr = 4;
	ia.max_inline_data = 16;
	o->qp = mr_qp_create(o->ctx, &ia);
	assert_non_null(o->qp);
	assert_int_equal(mr_qp_num(o->qp), 2);
	o->mr = mr_reg(o->pd, o->buf, (uint64_t)(uintptr_t)o->buf, sizeof(o->buf),
		       MR_ACCESS_LOCAL_WRITE);
	assert_non_null(o->mr);
}

static struct mr_qp_attr attr_for(enum mr_qp_state s)
{
	struct mr_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = s;
	a.path_mtu = 1024;
	a.dest_qp_num = 9;
	a.rq_psn = 1;
	a.sq_psn = 2;
	a.max_dest_rd_atomic = 4;
	a.max_rd_atomic = 4;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	return a;
}

static void to_rts(struct mr_qp *qp)
{
	struct mr_qp_attr a = attr_for(MR_QPS_INIT);

	assert_int_equal(mr_qp_modify(qp, &a, M_INIT), 0);
	a = attr_for(MR_QPS_RTR);
	assert_int_equal(mr_qp_modify(qp, &a, M_RTR), 0);
	a = attr_for(MR_QPS_RTS);
	assert_int_equal(mr_qp_modify(qp, &a, M_RTS), 0);
}

static void test_transitions(void **state)
{
	struct one o;
	struct mr_qp_attr a, q;

	(void)state;
	one_init(&o);
	assert_int_equal(mr_qp_state(o.qp), MR_QPS_RESET);
	/* Wrong masks for RESET->INIT: missing, extra, unknown bit. */
	a = attr_for(MR_QPS_INIT);
	assert_int_equal(mr_qp_modify(o.qp, &a, MR_QP_STATE | MR_QP_PKEY_INDEX), -EINVAL);
	assert_int_equal(mr_qp_modify(o.qp, &a, M_INIT | MR_QP_SQ_PSN), -EINVAL);
	assert_int_equal(mr_qp_modify(o.qp, &a, M_INIT | (1u << 20)), -EINVAL);
	/* Skipping states. */
	a = attr_for(MR_QPS_RTR);
	assert_int_equal(mr_qp_modify(o.qp, &a, M_RTR), -EINVAL);
	a = attr_for(MR_QPS_RTS);
	assert_int_equal(mr_qp_modify(o.qp, &a, M_RTS), -EINVAL);
	assert_int_equal(mr_qp_state(o.qp), MR_QPS_RESET);
	a = attr_for(MR_QPS_INIT);
	assert_int_equal(mr_qp_modify(o.qp, &a, M_INIT), 0);
	assert_int_equal(mr_qp_state(o.qp), MR_QPS_INIT);
	/* INIT->INIT with optional attributes only. */
	a.qp_access_flags = MR_ACCESS_REMOTE_READ;
	assert_int_equal(mr_qp_modify(o.qp, &a, MR_QP_ACCESS_FLAGS), 0);
	assert_int_equal(mr_qp_modify(o.qp, &a, MR_QP_TIMEOUT), -EINVAL);
	/* INIT->RTR: each required attribute missing fails; bad values fail. */
	a = attr_for(MR_QPS_RTR);
	for (uint32_t bit = MR_QP_PATH; bit <= MR_QP_MIN_RNR_TIMER; bit <<= 1)
		if (M_RTR & bit)
			assert_int_equal(mr_qp_modify(o.qp, &a, M_RTR & ~bit), -EINVAL);
	a.path_mtu = 1500;
	assert_int_equal(mr_qp_modify(o.qp, &a, M_RTR), -EINVAL);
	a.path_mtu = 4096;
	a.max_dest_rd_atomic = 200;
	assert_int_equal(mr_qp_modify(o.qp, &a, M_RTR), -EINVAL);
	a = attr_for(MR_QPS_RTR);
	assert_int_equal(mr_qp_modify(o.qp, &a, M_RTR | MR_QP_ACCESS_FLAGS), 0);
	assert_int_equal(mr_qp_state(o.qp), MR_QPS_RTR);
	/* RTR->RTS */
	a = attr_for(MR_QPS_RTS);
	a.retry_cnt = 8;
	assert_int_equal(mr_qp_modify(o.qp, &a, M_RTS), -EINVAL);
	a.retry_cnt = 7;
	assert_int_equal(mr_qp_modify(o.qp, &a, M_RTS & ~MR_QP_RNR_RETRY), -EINVAL);
	assert_int_equal(mr_qp_modify(o.qp, &a, M_RTS | MR_QP_RQ_PSN), -EINVAL);
	assert_int_equal(mr_qp_modify(o.qp, &a, M_RTS), 0);
	assert_int_equal(mr_qp_query(o.qp, &q), 0);
	assert_int_equal(q.qp_state, MR_QPS_RTS);
	assert_int_equal(q.sq_psn, 2);
	assert_int_equal(q.rq_psn, 1);
	assert_int_equal(q.path_mtu, 1024);
	assert_int_equal(q.dest_qp_num, 9);
	/* RTS->SQD->RTS, RTS->RTS with optional, RTS->INIT invalid. */
	a = attr_for(MR_QPS_SQD);
	assert_int_equal(mr_qp_modify(o.qp, &a, MR_QP_STATE), 0);
	assert_int_equal(mr_qp_state(o.qp), MR_QPS_SQD);
	a = attr_for(MR_QPS_SQD);
	assert_int_equal(mr_qp_modify(o.qp, &a, MR_QP_STATE | MR_QP_TIMEOUT), 0);
	a = attr_for(MR_QPS_RTS);
	assert_int_equal(mr_qp_modify(o.qp, &a, MR_QP_STATE | MR_QP_MIN_RNR_TIMER), 0);
	assert_int_equal(mr_qp_modify(o.qp, &a, MR_QP_MIN_RNR_TIMER), 0);
	a = attr_for(MR_QPS_INIT);
	assert_int_equal(mr_qp_modify(o.qp, &a, M_INIT), -EINVAL);
	/* Any -> ERR (no other attributes), ERR -> RESET, RESET -> ERR. */
	a = attr_for(MR_QPS_ERR);
	assert_int_equal(mr_qp_modify(o.qp, &a, MR_QP_STATE | MR_QP_TIMEOUT), -EINVAL);
	assert_int_equal(mr_qp_modify(o.qp, &a, MR_QP_STATE), 0);
	assert_int_equal(mr_qp_state(o.qp), MR_QPS_ERR);
	a = attr_for(MR_QPS_RTS);
	assert_int_equal(mr_qp_modify(o.qp, &a, M_RTS), -EINVAL);
	a = attr_for(MR_QPS_RESET);
	assert_int_equal(mr_qp_modify(o.qp, &a, MR_QP_STATE), 0);
	assert_int_equal(mr_qp_state(o.qp), MR_QPS_RESET);
	a = attr_for(MR_QPS_ERR);
	assert_int_equal(mr_qp_modify(o.qp, &a, MR_QP_STATE), 0);
	a = attr_for(MR_QPS_RESET);
	assert_int_equal(mr_qp_modify(o.qp, &a, MR_QP_STATE), 0);
	mr_ctx_destroy(o.ctx);
}

static struct mr_send_wr wr_send(uint64_t id, const struct one *o)
{
	struct mr_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.opcode = MR_WR_SEND;
	wr.num_sge = 1;
	wr.sg_list[0].addr = (uint64_t)(uintptr_t)o->buf;
	wr.sg_list[0].length = 8;
	wr.sg_list[0].lkey = mr_memreg_lkey(o->mr);
	return wr;
}

static struct mr_recv_wr wr_recv(uint64_t id, const struct one *o)
{
	struct mr_recv_wr r;

	memset(&r, 0, sizeof(r));
	r.wr_id = id;
	r.num_sge = 1;
	r.sg_list[0].addr = (uint64_t)(uintptr_t)o->buf;
	r.sg_list[0].length = 64;
	r.sg_list[0].lkey = mr_memreg_lkey(o->mr);
	return r;
}

/* Posting per state; entering ERR flushes every WR in order; posting in ERR flushes at once. */
static void test_posting_and_flush(void **state)
{
	struct one o;
	struct mr_qp_attr a;
	struct mr_send_wr s;
	struct mr_recv_wr r;
	struct mr_wc wc[16];
	struct mr_tx_pkt tx;

	(void)state;
	one_init(&o);
	s = wr_send(1, &o);
	r = wr_recv(100, &o);
	assert_int_equal(mr_post_send(o.qp, &s), -EINVAL); /* RESET */
	assert_int_equal(mr_post_recv(o.qp, &r), -EINVAL);
	a = attr_for(MR_QPS_INIT);
	assert_int_equal(mr_qp_modify(o.qp, &a, M_INIT), 0);
	assert_int_equal(mr_post_send(o.qp, &s), -EINVAL); /* INIT */
	assert_int_equal(mr_post_recv(o.qp, &r), 0);       /* receives from INIT on */
	a = attr_for(MR_QPS_RTR);
	assert_int_equal(mr_qp_modify(o.qp, &a, M_RTR), 0);
	assert_int_equal(mr_post_send(o.qp, &s), -EINVAL); /* RTR */
	r.wr_id = 101;
	assert_int_equal(mr_post_recv(o.qp, &r), 0);
	a = attr_for(MR_QPS_RTS);
	assert_int_equal(mr_qp_modify(o.qp, &a, M_RTS), 0);
	assert_int_equal(mr_post_send(o.qp, &s), 0);
	/* SQD: accepted but not started. */
	a = attr_for(MR_QPS_SQD);
	assert_int_equal(mr_qp_modify(o.qp, &a, MR_QP_STATE), 0);
	s.wr_id = 2;
	s.opcode = MR_WR_RDMA_WRITE;
	assert_int_equal(mr_post_send(o.qp, &s), 0);
	assert_int_equal(mr_ctx_tx(o.ctx, 0, &tx), 0);
	a = attr_for(MR_QPS_RTS);
	assert_int_equal(mr_qp_modify(o.qp, &a, MR_QP_STATE), 0);
	assert_int_equal(mr_ctx_tx(o.ctx, 0, &tx), 1); /* WR 1 goes out */
	assert_int_equal(tx.hdr.opcode, MR_OP_RC_SEND_ONLY);
	assert_int_equal(tx.hdr.psn, 2);
	assert_int_equal(tx.hdr.dqpn, 9);
	s.wr_id = 3;
	assert_int_equal(mr_post_send(o.qp, &s), 0);
	assert_int_equal(mr_qp_sq_room(o.qp), 1);
	s.wr_id = 4;
	assert_int_equal(mr_post_send(o.qp, &s), 0);
	assert_int_equal(mr_qp_sq_room(o.qp), 0); /* what the shm server asks before copying */
	s.wr_id = 5;
	assert_int_equal(mr_post_send(o.qp, &s), -ENOMEM); /* max_send_wr = 4 */
	assert_int_equal(mr_cq_poll(o.cq, 16, wc), 0);

	a = attr_for(MR_QPS_ERR);
	assert_int_equal(mr_qp_modify(o.qp, &a, MR_QP_STATE), 0);
	assert_int_equal(mr_cq_poll(o.cq, 16, wc), 6);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(wc[i].wr_id, (uint64_t)i + 1);
		assert_int_equal(wc[i].status, MR_WC_WR_FLUSH_ERR);
		assert_int_equal(wc[i].opcode, i == 0 ? MR_WC_SEND : MR_WC_RDMA_WRITE);
	}
	assert_int_equal(wc[4].wr_id, 100);
	assert_int_equal(wc[4].opcode, MR_WC_RECV);
	assert_int_equal(wc[4].status, MR_WC_WR_FLUSH_ERR);
	assert_int_equal(wc[5].wr_id, 101);
	/* In ERR, posted WRs complete as flushed at once (IBA 10.3.1). */
	s.wr_id = 9;
	assert_int_equal(mr_post_send(o.qp, &s), 0);
	r.wr_id = 109;
	assert_int_equal(mr_post_recv(o.qp, &r), 0);
	assert_int_equal(mr_cq_poll(o.cq, 16, wc), 2);
	assert_int_equal(wc[0].wr_id, 9);
	assert_int_equal(wc[0].status, MR_WC_WR_FLUSH_ERR);
	assert_int_equal(wc[1].wr_id, 109);
	assert_int_equal(mr_ctx_tx(o.ctx, 0, &tx), 0);
	assert_int_equal(mr_ctx_next_expiry(o.ctx), UINT64_MAX);
	mr_ctx_destroy(o.ctx);
}

/* RESET empties both queues silently; the QP can be brought up again and used. */
static void test_reset_clears(void **state)
{
	struct one o;
	struct mr_qp_attr a;
	struct mr_send_wr s;
	struct mr_recv_wr r;
	struct mr_wc wc[8];
	struct mr_tx_pkt tx;

	(void)state;
	one_init(&o);
	to_rts(o.qp);
	r = wr_recv(1, &o);
	for (int i = 0; i < 4; i++)
		assert_int_equal(mr_post_recv(o.qp, &r), 0);
	assert_int_equal(mr_post_recv(o.qp, &r), -ENOMEM);
	s = wr_send(1, &o);
	assert_int_equal(mr_post_send(o.qp, &s), 0);
	assert_int_equal(mr_ctx_tx(o.ctx, 0, &tx), 1);
	assert_true(mr_ctx_next_expiry(o.ctx) != UINT64_MAX);
	a = attr_for(MR_QPS_RESET);
	assert_int_equal(mr_qp_modify(o.qp, &a, MR_QP_STATE), 0);
	assert_int_equal(mr_cq_poll(o.cq, 8, wc), 0);
	assert_int_equal(mr_ctx_next_expiry(o.ctx), UINT64_MAX);
	assert_int_equal(mr_ctx_tx(o.ctx, 0, &tx), 0);
	to_rts(o.qp);
	for (int i = 0; i < 4; i++)
		assert_int_equal(mr_post_recv(o.qp, &r), 0);
	assert_int_equal(mr_post_send(o.qp, &s), 0);
	assert_int_equal(mr_ctx_tx(o.ctx, 0, &tx), 1);
	assert_int_equal(tx.hdr.psn, 2); /* fresh SQ PSN */
	mr_ctx_destroy(o.ctx);
}

static void test_bad_api(void **state)
{
	struct mr_ctx_params p = { .max_qp = 4, .first_qpn = 1, .max_mr = 4 };
	struct one o;
	struct mr_send_wr s;
	struct mr_recv_wr r;
	struct mr_qp_init_attr ia = { 0 };
	struct mr_wc wc;
	struct mr_qp_stats st;

	(void)state;
	errno = 0;
	assert_null(mr_ctx_create(&p)); /* QPN 1 is reserved */
	assert_int_equal(errno, EINVAL);
	assert_null(mr_ctx_create(NULL));
	p.first_qpn = 0xfffffe;
	assert_null(mr_ctx_create(&p));
	p.first_qpn = 2;
	p.max_inflight_pkts = 1u << 23;
	assert_null(mr_ctx_create(&p));

	one_init(&o);
	assert_null(mr_qp_create(o.ctx, &ia));
	assert_int_equal(errno, EINVAL);
	assert_null(mr_reg(o.pd, o.buf, 0, 16, MR_ACCESS_REMOTE_WRITE)); /* needs LOCAL_WRITE */
	assert_null(mr_reg(o.pd, o.buf, UINT64_MAX - 4, 16, 0));          /* iova wraps */
	assert_null(mr_reg(o.pd, o.buf, 0, 16, 1u << 7));
	assert_int_equal(mr_pd_free(o.pd), -EBUSY);
	assert_int_equal(mr_cq_destroy(o.cq), -EBUSY);
	assert_int_equal(mr_pd_free(NULL), -EINVAL);
	assert_int_equal(mr_dereg(NULL), -EINVAL);
	assert_int_equal(mr_qp_modify(NULL, NULL, 0), -EINVAL);
	assert_int_equal(mr_qp_query(o.qp, NULL), -EINVAL);
	assert_int_equal(mr_qp_get_stats(NULL, &st), -EINVAL);
	assert_int_equal(mr_cq_poll(o.cq, -1, &wc), -EINVAL);
	assert_int_equal(mr_cq_poll(NULL, 1, &wc), -EINVAL);
	assert_null(mr_cq_create(o.ctx, 0));

	to_rts(o.qp);
	s = wr_send(1, &o);
	s.opcode = (enum mr_wr_opcode)7;
	assert_int_equal(mr_post_send(o.qp, &s), -EINVAL);
	s = wr_send(1, &o);
	s.num_sge = MR_MAX_SGE + 1;
	assert_int_equal(mr_post_send(o.qp, &s), -EINVAL);
	s = wr_send(1, &o);
	s.send_flags = MR_SEND_INLINE;
	s.sg_list[0].length = 17; /* max_inline_data 16 */
	assert_int_equal(mr_post_send(o.qp, &s), -EINVAL);
	s = wr_send(1, &o);
	s.opcode = MR_WR_ATOMIC_FETCH_AND_ADD;
	s.atomic.remote_addr = 0x1004; /* not 8-byte aligned */
	assert_int_equal(mr_post_send(o.qp, &s), -EINVAL);
	s.atomic.remote_addr = 0x1000;
	s.sg_list[0].length = 4;
	assert_int_equal(mr_post_send(o.qp, &s), -EINVAL);
	s = wr_send(1, &o);
	s.opcode = MR_WR_RDMA_READ;
	s.send_flags = MR_SEND_INLINE;
	assert_int_equal(mr_post_send(o.qp, &s), -EINVAL);
	s = wr_send(1, &o);
	s.num_sge = 2;
	s.sg_list[0].length = 0x80000000u;
	s.sg_list[1].length = 1; /* > 2^31 total */
	assert_int_equal(mr_post_send(o.qp, &s), -EINVAL);
	r = wr_recv(1, &o);
	r.num_sge = 17;
	assert_int_equal(mr_post_recv(o.qp, &r), -EINVAL);
	assert_int_equal(mr_post_send(NULL, &s), -EINVAL);
	assert_int_equal(mr_post_recv(o.qp, NULL), -EINVAL);
	assert_int_equal(mr_ctx_tx(NULL, 0, NULL), -EINVAL);
	assert_int_equal(mr_qp_destroy(NULL), -EINVAL);
	assert_int_equal(mr_qp_destroy(o.qp), 0);
	assert_int_equal(mr_cq_destroy(o.cq), 0);
	assert_int_equal(mr_pd_free(o.pd), -EBUSY); /* the MR */
	assert_int_equal(mr_dereg(o.mr), 0);
	assert_int_equal(mr_pd_free(o.pd), 0);
	mr_ctx_destroy(o.ctx);
}

/* Local protection: a SEND whose lkey is wrong completes with LOC_PROT_ERR, QP to ERR. */
static void test_bad_lkey(void **state)
{
	struct one o;
	struct mr_send_wr s;
	struct mr_wc wc[2];
	struct mr_tx_pkt tx;

	(void)state;
	one_init(&o);
	to_rts(o.qp);
	s = wr_send(1, &o);
	s.sg_list[0].lkey ^= 0x1; /* stale tag */
	assert_int_equal(mr_post_send(o.qp, &s), 0);
	s = wr_send(2, &o);
	assert_int_equal(mr_post_send(o.qp, &s), 0);
	assert_int_equal(mr_ctx_tx(o.ctx, 0, &tx), 0);
	assert_int_equal(mr_cq_poll(o.cq, 2, wc), 2);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[0].status, MR_WC_LOC_PROT_ERR);
	assert_int_equal(wc[1].wr_id, 2);
	assert_int_equal(wc[1].status, MR_WC_WR_FLUSH_ERR);
	assert_int_equal(mr_qp_state(o.qp), MR_QPS_ERR);
	mr_ctx_destroy(o.ctx);
}

/* QPNs are handed out next-fit (rc_qp.c): a destroyed QP's number comes back only after every
 * other free one, then the search wraps; a full table gives ENOSPC. */
static void test_qpn_next_fit(void **state)
{
	struct one o;
	struct mr_qp_init_attr ia = { 0 };
	struct mr_qp *q[4];

	(void)state;
	one_init(&o); /* QPN 2 of 2..5 */
	ia.pd = o.pd;
	ia.send_cq = o.cq;
	ia.recv_cq = o.cq;
	ia.max_send_wr = 4;
	ia.max_recv_wr = 4;
	q[0] = mr_qp_create(o.ctx, &ia);
	assert_non_null(q[0]);
	assert_int_equal(mr_qp_num(q[0]), 3);
	assert_int_equal(mr_qp_destroy(q[0]), 0);
	q[1] = mr_qp_create(o.ctx, &ia); /* not 3 again */
	assert_non_null(q[1]);
	assert_int_equal(mr_qp_num(q[1]), 4);
	q[2] = mr_qp_create(o.ctx, &ia);
	assert_non_null(q[2]);
	assert_int_equal(mr_qp_num(q[2]), 5);
	q[3] = mr_qp_create(o.ctx, &ia); /* wraps: 2 is taken, 3 is free */
	assert_non_null(q[3]);
	assert_int_equal(mr_qp_num(q[3]), 3);
	assert_null(mr_qp_create(o.ctx, &ia));
	assert_int_equal(errno, ENOSPC);
	for (int i = 1; i < 4; i++)
		assert_int_equal(mr_qp_destroy(q[i]), 0);
	mr_ctx_destroy(o.ctx);
}

/* Issue 8 defect 5b: an RC READ takes one PSN per response packet, all outstanding at once
 * (IBA 9.7.1: at most 2^23 - 1). At MTU 256 a READ of more than (2^23 - 1) * 256 bytes could
 * never be sent and stalled the QP with no completion: it is refused at post. */
static void test_read_beyond_psn_space(void **state)
{
	struct mr_qp_attr a;
	struct mr_send_wr wr;
	struct one o;
	const uint32_t limit = ((1u << 23) - 1) * 256u;

	(void)state;
	one_init(&o);
	a = attr_for(MR_QPS_INIT);
	assert_int_equal(mr_qp_modify(o.qp, &a, M_INIT), 0);
	a = attr_for(MR_QPS_RTR);
	a.path_mtu = 256;
	assert_int_equal(mr_qp_modify(o.qp, &a, M_RTR), 0);
	a = attr_for(MR_QPS_RTS);
	assert_int_equal(mr_qp_modify(o.qp, &a, M_RTS), 0);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = MR_WR_RDMA_READ;
	wr.num_sge = 1;
	wr.sg_list[0].addr = (uint64_t)(uintptr_t)o.buf;
	wr.sg_list[0].lkey = mr_memreg_lkey(o.mr);
	wr.sg_list[0].length = limit + 1;
	assert_int_equal(mr_post_send(o.qp, &wr), -EINVAL);
	wr.sg_list[0].length = 1u << 31;
	assert_int_equal(mr_post_send(o.qp, &wr), -EINVAL);
	/* Exactly the PSN space is accepted (a WRITE of any legal size is, it streams). */
	wr.sg_list[0].length = limit;
	assert_int_equal(mr_post_send(o.qp, &wr), 0);
	wr.opcode = MR_WR_RDMA_WRITE;
	wr.sg_list[0].length = 1u << 31;
	assert_int_equal(mr_post_send(o.qp, &wr), 0);
	mr_ctx_destroy(o.ctx);
}

/* Issue 8 defect 5c: a path MTU above the port's (mr_ctx_params.max_mtu) is refused at
 * modify_qp, as rxe_qp_chk_attr does, so no frame larger than the port's MTU is built. */
static void test_path_mtu_above_port(void **state)
{
	struct mr_ctx_params p = { .max_qp = 4, .first_qpn = 2, .max_mr = 4, .seed = 1,
				   .max_mtu = 1024 };
	struct mr_qp_init_attr ia = { 0 };
	struct mr_qp_attr a, q;
	struct mr_ctx *ctx;
	struct mr_cq *cq;
	struct mr_qp *qp;

	(void)state;
	ctx = mr_ctx_create(&p);
	assert_non_null(ctx);
	ia.pd = mr_pd_alloc(ctx);
	ia.send_cq = ia.recv_cq = cq = mr_cq_create(ctx, 16);
	ia.max_send_wr = ia.max_recv_wr = 4;
	qp = mr_qp_create(ctx, &ia);
	assert_non_null(qp);
	a = attr_for(MR_QPS_INIT);
	assert_int_equal(mr_qp_modify(qp, &a, M_INIT), 0);
	a = attr_for(MR_QPS_RTR);
	a.path_mtu = 4096;
	assert_int_equal(mr_qp_modify(qp, &a, M_RTR), -EINVAL);
	a.path_mtu = 2048;
	assert_int_equal(mr_qp_modify(qp, &a, M_RTR), -EINVAL);
	assert_int_equal(mr_qp_state(qp), MR_QPS_INIT);
	a.path_mtu = 1024;
	assert_int_equal(mr_qp_modify(qp, &a, M_RTR), 0);
	assert_int_equal(mr_qp_query(qp, &q), 0);
	assert_int_equal(q.path_mtu, 1024);
	(void)cq;
	mr_ctx_destroy(ctx);
	/* The port MTU itself must be an IB MTU. */
	p.max_mtu = 1500;
	assert_null(mr_ctx_create(&p));
	assert_int_equal(errno, EINVAL);
}

/* A pair at IB MTU 1024 whose A has sent the first packet of a 2-packet WRITE of src into dst
 * (WRITE FIRST, no AckReq): B owes the delayed ACK its timer holds. */
static struct tw *tw_held_write(uint8_t *src, uint8_t *dst, uint64_t wr_id)
{
	struct tw_cfg c;
	struct tw *w;
	struct mr_memreg *ms, *md;
	struct mr_send_wr wr;

	tw_default_cfg(&c);
	c.mtu = 1024;
	w = tw_create(&c);
	ms = tw_reg(w, 0, src, 2048, 0);
	md = tw_reg(w, 1, dst, 2048, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE);
	wr = tw_wr(wr_id, MR_WR_RDMA_WRITE, src, 2048, ms);
	wr.rdma.remote_addr = (uint64_t)(uintptr_t)dst;
	wr.rdma.rkey = mr_memreg_rkey(md);
	tw_post_send(w, 0, &wr);
	assert_true(tw_step(w, 0));
	assert_int_equal(w->log[0][0].opcode, MR_OP_RC_WRITE_FIRST);
	assert_false(w->log[0][0].ackreq);
	return w;
}

/* mr_ctx_ack_early (an engine about to sleep or yield its CPU): the delayed ACK owed for a run
 * without AckReq goes at once when its deadline falls before `until`, covering the run's last
 * PSN (IBA 9.7.5.1.2), and not when it falls after; with nothing owed it does nothing. */
static void test_ack_early(void **state)
{
	struct tw *w;
	uint8_t src[2048], dst[2048];
	struct mr_wc wc;

	(void)state;
	tw_fill(src, sizeof(src), 5);
	w = tw_held_write(src, dst, 11);
	assert_false(tw_step(w, 1));       /* held by the timer */
	/* Its deadline (4 us) is after `until`: nothing yet. */
	assert_int_equal(mr_ctx_ack_early(w->s[1].ctx, w->now + 1000), 0);
	assert_false(tw_step(w, 1));
	/* Before `until`: sent now, the clock standing still. */
	assert_int_equal(mr_ctx_ack_early(w->s[1].ctx, w->now + 5000), 1);
	assert_true(tw_step(w, 1));
	assert_false(tw_step(w, 1));
	assert_int_equal(w->log[1][0].opcode, MR_OP_RC_ACK);
	assert_int_equal(w->log[1][0].psn, w->log[0][0].psn);
	assert_int_equal(w->log[1][0].aeth.syndrome & MR_AETH_TYPE_MASK, MR_AETH_ACK);
	assert_int_equal(w->log[1][0].aeth.msn, 0); /* the message is not complete */
	/* Owed once: a second call finds nothing, and the timer does not fire it again. */
	assert_int_equal(mr_ctx_ack_early(w->s[1].ctx, w->now + 5000), 0);
	w->now += 10000;
	mr_ctx_on_timer(w->s[1].ctx, w->now);
	assert_false(tw_step(w, 1));
	/* The rest of the message completes as usual. */
	tw_pump(w, true, 0);
	tw_poll(w->s[0].scq, 1, &wc);
	assert_int_equal(wc.status, MR_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 11);
	assert_memory_equal(dst, src, 2048);
	tw_destroy(w);
}

/* A QP destroyed before the engine sent the ACK it owed still gets it out (rc_qp.c
 * rc_qp_parting_ack): queued (a SEND with AckReq, its receive completed) and held by the
 * delayed-ACK timer (a WRITE FIRST without AckReq). The requester completes, or advances, with
 * nothing retried; before, the peer retried into the destroyed QP until RETRY_EXC_ERR. */
static void test_destroy_sends_owed_ack(void **state)
{
	struct tw_cfg c;
	struct tw *w;
	uint8_t src[2048], dst[2048];
	struct mr_memreg *ms, *md;
	struct mr_send_wr wr;
	struct mr_wc wc;
	struct mr_ctx_stats cs;
	uint32_t n0;

	(void)state;
	tw_default_cfg(&c);
	c.mtu = 1024;
	w = tw_create(&c);
	tw_fill(src, sizeof(src), 3);
	ms = tw_reg(w, 0, src, sizeof(src), 0);
	md = tw_reg(w, 1, dst, sizeof(dst), MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE);
	tw_post_recv(w, 1, 5, dst, 100, md);
	wr = tw_wr(6, MR_WR_SEND, src, 100, ms);
	tw_post_send(w, 0, &wr);
	assert_true(tw_step(w, 0));        /* SEND ONLY (AckReq): B queues its ACK */
	tw_poll(w->s[1].rcq, 1, &wc);
	assert_int_equal(wc.status, MR_WC_SUCCESS);
	assert_memory_equal(dst, src, 100);
	assert_int_equal(mr_qp_destroy(w->s[1].qp), 0);
	w->s[1].qp = NULL;
	assert_true(tw_step(w, 1));        /* the parting ACK */
	assert_false(tw_step(w, 1));       /* and nothing else */
	assert_int_equal(w->log[1][0].opcode, MR_OP_RC_ACK);
	assert_int_equal(w->log[1][0].psn, w->log[0][0].psn);
	assert_int_equal(w->log[1][0].dqpn, mr_qp_num(w->s[0].qp));
	assert_int_equal(w->log[1][0].aeth.syndrome & MR_AETH_TYPE_MASK, MR_AETH_ACK);
	assert_int_equal(w->log[1][0].aeth.msn, 1);
	tw_poll(w->s[0].scq, 1, &wc);
	assert_int_equal(wc.status, MR_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 6);
	mr_ctx_get_stats(w->s[1].ctx, &cs);
	assert_int_equal(cs.parting_acks, 1);
	tw_destroy(w);

	/* Held by the delayed-ACK timer: only the FIRST of a 2-packet WRITE arrived. */
	w = tw_held_write(src, dst, 7);
	n0 = w->sent[1];
	assert_int_equal(n0, 0);           /* no ACK yet: the timer holds it */
	assert_int_equal(mr_qp_destroy(w->s[1].qp), 0);
	w->s[1].qp = NULL;
	assert_true(tw_step(w, 1));
	assert_false(tw_step(w, 1));
	assert_int_equal(w->log[1][0].opcode, MR_OP_RC_ACK);
	assert_int_equal(w->log[1][0].psn, w->log[0][0].psn);
	assert_int_equal(w->log[1][0].aeth.msn, 0); /* no message complete */
	assert_int_equal(mr_cq_poll(w->s[0].scq, 1, &wc), 0);
	tw_destroy(w);

	/* Nothing owed (everything ACKed, or never connected): nothing sent. */
	w = tw_create(&c);
	ms = tw_reg(w, 0, src, sizeof(src), 0);
	md = tw_reg(w, 1, dst, sizeof(dst), MR_ACCESS_LOCAL_WRITE);
	tw_post_recv(w, 1, 8, dst, 100, md);
	wr = tw_wr(9, MR_WR_SEND, src, 100, ms);
	tw_post_send(w, 0, &wr);
	tw_pump(w, false, 0);
	n0 = w->sent[1];
	assert_int_equal(mr_qp_destroy(w->s[1].qp), 0);
	w->s[1].qp = NULL;
	assert_false(tw_step(w, 1));
	assert_int_equal(w->sent[1], n0);
	tw_destroy(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_transitions),
		cmocka_unit_test(test_posting_and_flush),
		cmocka_unit_test(test_reset_clears),
		cmocka_unit_test(test_bad_api),
		cmocka_unit_test(test_bad_lkey),
		cmocka_unit_test(test_qpn_next_fit),
		cmocka_unit_test(test_read_beyond_psn_space),
		cmocka_unit_test(test_path_mtu_above_port),
		cmocka_unit_test(test_destroy_sends_owed_ack),
		cmocka_unit_test(test_ack_early),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
