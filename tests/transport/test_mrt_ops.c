/* SPDX-License-Identifier: MIT
 * MetaRoCE operations over the in-test wire: WRITE/SEND/READ/atomics byte-exact without loss,
 * spraying over entropies (MRETH.path / UDP source port), self-describing packets (MRETH and a
 * RETH in every WRITE packet), reordering by random permutations with zero retransmits,
 * in-order completions when a later message finishes placing first, negotiation checks.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rc_harness.h"

#define MS 1000000ull

/* 16 KiB WRITE at MTU 1024 over 4 entropies: 16 self-describing packets, sprayed. */
static void test_write_lossless(void **state)
{
	static uint8_t src[16384], dst[16384 + 64];
	struct tw_cfg c;
	struct tw *w;
	struct mr_memreg *ms, *md;
	struct mr_send_wr wr;
	struct mr_qp_stats a, b;
	struct mr_wc wc;
	uint32_t paths[4] = { 0 };

	(void)state;
	tw_metaroce_cfg(&c, 4);
	w = tw_create(&c);
	tw_fill(src, sizeof(src), 1);
	memset(dst, 0xee, sizeof(dst));
	ms = tw_reg(w, 0, src, sizeof(src), 0);
	md = tw_reg(w, 1, dst, sizeof(dst), MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE);
	wr = tw_wr(11, MR_WR_RDMA_WRITE, src, sizeof(src), ms);
	wr.rdma.remote_addr = (uint64_t)(uintptr_t)dst;
	wr.rdma.rkey = mr_memreg_rkey(md);
	tw_post_send(w, 0, &wr);
	tw_pump(w, true, 10 * MS);

	assert_memory_equal(dst, src, sizeof(src));
	assert_int_equal(dst[sizeof(src)], 0xee); /* nothing beyond */
	tw_poll(w->s[0].scq, 1, &wc);
	assert_int_equal(wc.wr_id, 11);
	assert_int_equal(wc.status, MR_WC_SUCCESS);
	assert_int_equal(wc.opcode, MR_WC_RDMA_WRITE);
	assert_int_equal(wc.byte_len, sizeof(src));
	assert_int_equal(tw_count_op(w, 0, MR_OP_MRC_WRITE_FIRST), 1);
	assert_int_equal(tw_count_op(w, 0, MR_OP_MRC_WRITE_MIDDLE), 14);
	assert_int_equal(tw_count_op(w, 0, MR_OP_MRC_WRITE_LAST), 1);
	for (uint32_t i = 0; i < 16; i++) {
		const struct mr_roce_hdrs *h = &w->log[0][i];

		assert_int_equal(h->psn, 100 + i);
		assert_int_equal(h->mreth.ver, 1);
		assert_int_equal(h->mreth.offset, i * 1024);
		assert_int_equal(h->mreth.msg_len, sizeof(src));
		assert_int_equal(h->mreth.msg_seq, 0);
		assert_int_equal(h->reth.va, (uint64_t)(uintptr_t)dst); /* RETH in every packet */
		assert_int_equal(h->reth.dlen, sizeof(src));
		assert_true(h->mreth.path < 4);
		assert_int_equal(w->log_sport[0][i], 0xc000 + h->mreth.path);
		paths[h->mreth.path]++;
	}
	for (int p = 0; p < 4; p++)
		assert_true(paths[p] >= 2); /* sprayed over every entropy */
	/* Only MetaRoCE opcodes went back: SACK ACKs with a cumulative PSN. */
	assert_true(tw_count_op(w, 1, MR_OP_MRC_ACK) >= 1);
	assert_int_equal(tw_count_op(w, 1, MR_OP_RC_ACK), 0);
	assert_int_equal(w->log[1][w->sent[1] - 1].psn, 115);
	a = tw_stats(w, 0);
	b = tw_stats(w, 1);
	assert_int_equal(a.retransmits, 0);
	assert_int_equal(a.sack_retransmits, 0);
	assert_int_equal(a.tlp_probes, 0);
	assert_int_equal(a.timeouts, 0);
	assert_int_equal(b.duplicate_requests, 0);
	tw_destroy(w);
}

/* SENDs (one with immediate, multi-SGE receive), WRITE with immediate, zero-length SEND. */
static void test_send_and_imm(void **state)
{
	static uint8_t src[5000], r0[6000], r1[100], r2[64], wdst[3000];
	struct tw_cfg c;
	struct tw *w;
	struct mr_memreg *ms, *mr0, *mr1, *mr2, *mw;
	struct mr_send_wr wr;
	struct mr_wc wc[4];

	(void)state;
	tw_metaroce_cfg(&c, 8);
	w = tw_create(&c);
	tw_fill(src, sizeof(src), 2);
	ms = tw_reg(w, 0, src, sizeof(src), 0);
	mr0 = tw_reg(w, 1, r0, sizeof(r0), MR_ACCESS_LOCAL_WRITE);
	mr1 = tw_reg(w, 1, r1, sizeof(r1), MR_ACCESS_LOCAL_WRITE);
	mr2 = tw_reg(w, 1, r2, sizeof(r2), MR_ACCESS_LOCAL_WRITE);
	mw = tw_reg(w, 1, wdst, sizeof(wdst), MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE);
	tw_post_recv(w, 1, 100, r0, sizeof(r0), mr0);
	tw_post_recv(w, 1, 101, r1, sizeof(r1), mr1);
	tw_post_recv(w, 1, 102, r2, sizeof(r2), mr2);
	tw_post_recv(w, 1, 103, r2, sizeof(r2), mr2);

	wr = tw_wr(1, MR_WR_SEND, src, 5000, ms);
	tw_post_send(w, 0, &wr);
	wr = tw_wr(2, MR_WR_SEND_WITH_IMM, src + 7, 100, ms);
	wr.imm_data = 0xabcdef01;
	tw_post_send(w, 0, &wr);
	wr = tw_wr(3, MR_WR_RDMA_WRITE_WITH_IMM, src + 11, 3000, ms);
	wr.imm_data = 77;
	wr.rdma.remote_addr = (uint64_t)(uintptr_t)wdst;
	wr.rdma.rkey = mr_memreg_rkey(mw);
	tw_post_send(w, 0, &wr);
	wr = tw_wr(4, MR_WR_SEND, src, 0, ms);
	tw_post_send(w, 0, &wr);
	tw_pump(w, true, 10 * MS);

	assert_memory_equal(r0, src, 5000);
	assert_memory_equal(r1, src + 7, 100);
	assert_memory_equal(wdst, src + 11, 3000);
	tw_poll(w->s[1].rcq, 4, wc);
	assert_int_equal(wc[0].wr_id, 100);
	assert_int_equal(wc[0].byte_len, 5000);
	assert_int_equal(wc[0].opcode, MR_WC_RECV);
	assert_int_equal(wc[1].wr_id, 101);
	assert_int_equal(wc[1].wc_flags, MR_WC_WITH_IMM);
	assert_int_equal(wc[1].imm_data, 0xabcdef01);
	assert_int_equal(wc[2].wr_id, 102);
	assert_int_equal(wc[2].opcode, MR_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc[2].imm_data, 77);
	assert_int_equal(wc[2].byte_len, 3000);
	assert_int_equal(wc[3].wr_id, 103);
	assert_int_equal(wc[3].byte_len, 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(wc[i].status, MR_WC_SUCCESS);
	tw_poll(w->s[0].scq, 4, wc);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(wc[i].wr_id, (uint64_t)i + 1);
		assert_int_equal(wc[i].status, MR_WC_SUCCESS);
	}
	/* msg_seq is the receive sequence: the n-th SEND carries n (mrt_responder.c) */
	assert_int_equal(w->log[0][0].mreth.msg_seq, 0);
	assert_int_equal(w->log[0][w->sent[0] - 1].mreth.msg_seq, 3);
	assert_int_equal(tw_stats(w, 0).retransmits, 0);
	tw_destroy(w);
}

/* READ of 200 KiB (several 64-packet chunks) and atomics, byte-exact. */
static void test_read_atomic(void **state)
{
	static uint8_t rsrc[200000], ldst[200000];
	static uint64_t cell[2] = { 40, 7 };
	uint64_t res[2] = { 0, 0 };
	struct tw_cfg c;
	struct tw *w;
	struct mr_memreg *mrs, *mld, *mc, *mres;
	struct mr_send_wr wr;
	struct mr_wc wc[3];

	(void)state;
	tw_metaroce_cfg(&c, 16);
	w = tw_create(&c);
	tw_fill(rsrc, sizeof(rsrc), 3);
	memset(ldst, 0, sizeof(ldst));
	mrs = tw_reg(w, 1, rsrc, sizeof(rsrc), MR_ACCESS_REMOTE_READ);
	mc = tw_reg(w, 1, cell, sizeof(cell), MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_ATOMIC);
	mld = tw_reg(w, 0, ldst, sizeof(ldst), MR_ACCESS_LOCAL_WRITE);
	mres = tw_reg(w, 0, res, sizeof(res), MR_ACCESS_LOCAL_WRITE);

	wr = tw_wr(1, MR_WR_RDMA_READ, ldst, sizeof(ldst), mld);
	wr.rdma.remote_addr = (uint64_t)(uintptr_t)rsrc;
	wr.rdma.rkey = mr_memreg_rkey(mrs);
	tw_post_send(w, 0, &wr);
	wr = tw_wr(2, MR_WR_ATOMIC_FETCH_AND_ADD, &res[0], 8, mres);
	wr.atomic.remote_addr = (uint64_t)(uintptr_t)&cell[0];
	wr.atomic.rkey = mr_memreg_rkey(mc);
	wr.atomic.compare_add = 2;
	tw_post_send(w, 0, &wr);
	wr = tw_wr(3, MR_WR_ATOMIC_CMP_AND_SWP, &res[1], 8, mres);
	wr.atomic.remote_addr = (uint64_t)(uintptr_t)&cell[1];
	wr.atomic.rkey = mr_memreg_rkey(mc);
	wr.atomic.compare_add = 7;
	wr.atomic.swap = 99;
	tw_post_send(w, 0, &wr);
	tw_pump(w, true, 10 * MS);

	assert_memory_equal(ldst, rsrc, sizeof(rsrc));
	assert_int_equal(res[0], 40);
	assert_int_equal(cell[0], 42);
	assert_int_equal(res[1], 7);
	assert_int_equal(cell[1], 99);
	tw_poll(w->s[0].scq, 3, wc);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[0].opcode, MR_WC_RDMA_READ);
	assert_int_equal(wc[0].byte_len, sizeof(rsrc));
	assert_int_equal(wc[1].opcode, MR_WC_FETCH_ADD);
	assert_int_equal(wc[2].opcode, MR_WC_COMP_SWAP);
	for (int i = 0; i < 3; i++)
		assert_int_equal(wc[i].status, MR_WC_SUCCESS);
	/* 200000 B at MTU 1024 = 196 responses in 4 chunks (64 + 64 + 64 + 4 packets). */
	assert_int_equal(tw_count_op(w, 0, MR_OP_MRC_READ_REQUEST), 4);
	assert_int_equal(tw_count_op(w, 1, MR_OP_MRC_READ_RESPONSE_FIRST) +
			 tw_count_op(w, 1, MR_OP_MRC_READ_RESPONSE_MIDDLE) +
			 tw_count_op(w, 1, MR_OP_MRC_READ_RESPONSE_LAST), 196);
	assert_int_equal(tw_count_op(w, 1, MR_OP_MRC_ATOMIC_ACK), 2);
	assert_int_equal(tw_stats(w, 0).retransmits, 0);
	/* Responses are sprayed round robin over the 16 entropies from the request's (196 =
	 * 12 x 16 + 4): every entropy carries 12 or 13, and each one's UDP source port is
	 * base + entropy (A17.3.3 / docs/metaroce-wire.md). */
	{
		uint32_t per[16] = { 0 }, nresp = 0;

		for (uint32_t i = 0; i < w->sent[1]; i++) {
			uint8_t op = w->log[1][i].opcode;

			if (op != MR_OP_MRC_READ_RESPONSE_FIRST && op != MR_OP_MRC_READ_RESPONSE_MIDDLE &&
			    op != MR_OP_MRC_READ_RESPONSE_LAST && op != MR_OP_MRC_READ_RESPONSE_ONLY)
				continue;
			assert_true(w->log[1][i].mreth.path < 16);
			assert_int_equal(w->log_sport[1][i], 0xc000 + w->log[1][i].mreth.path);
			per[w->log[1][i].mreth.path]++;
			nresp++;
		}
		assert_int_equal(nresp, 196);
		for (int p = 0; p < 16; p++)
			assert_true(per[p] >= 12 && per[p] <= 13);
	}
	tw_destroy(w);
}

/* Random permutations of 32-packet windows over a 1 MiB WRITE, then SENDs: data exact, no
 * retransmission at all, every packet placed (many out of order). */
static void test_reorder_no_retransmit(void **state)
{
	static uint8_t src[1 << 20], dst[1 << 20], r[3][8192];
	struct tw_cfg c;
	struct tw *w;
	struct mr_memreg *ms, *md, *mr;
	struct mr_send_wr wr;
	struct mr_qp_stats a, b;
	struct mr_wc wc[4];

	(void)state;
	tw_metaroce_cfg(&c, 16);
	c.max_inflight = 256;
	w = tw_create(&c);
	w->shuffle[0] = 32;
	w->shuffle[1] = 8; /* ACKs reordered too */
	tw_fill(src, sizeof(src), 9);
	memset(dst, 0, sizeof(dst));
	ms = tw_reg(w, 0, src, sizeof(src), 0);
	md = tw_reg(w, 1, dst, sizeof(dst), MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE);
	mr = tw_reg(w, 1, r, sizeof(r), MR_ACCESS_LOCAL_WRITE);
	for (int i = 0; i < 3; i++)
		tw_post_recv(w, 1, 200 + (uint64_t)i, r[i], sizeof(r[i]), mr);
	wr = tw_wr(1, MR_WR_RDMA_WRITE, src, sizeof(src), ms);
	wr.rdma.remote_addr = (uint64_t)(uintptr_t)dst;
	wr.rdma.rkey = mr_memreg_rkey(md);
	tw_post_send(w, 0, &wr);
	tw_pump(w, true, 100 * MS);
	for (int i = 0; i < 3; i++) {
		wr = tw_wr(2 + (uint64_t)i, MR_WR_SEND, src + 1000 * i, 8192, ms);
		tw_post_send(w, 0, &wr);
	}
	tw_pump(w, true, 100 * MS);

	assert_memory_equal(dst, src, sizeof(src));
	for (int i = 0; i < 3; i++)
		assert_memory_equal(r[i], src + 1000 * i, 8192);
	tw_poll(w->s[0].scq, 4, wc);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(wc[i].wr_id, (uint64_t)i + 1);
		assert_int_equal(wc[i].status, MR_WC_SUCCESS);
	}
	tw_poll(w->s[1].rcq, 3, wc);
	for (int i = 0; i < 3; i++)
		assert_int_equal(wc[i].wr_id, 200 + (uint64_t)i);
	a = tw_stats(w, 0);
	b = tw_stats(w, 1);
	print_message("A: retx %lu sack %lu spur %lu tlp %lu to %lu; B: dup %lu ooo %lu dropped %lu\n", (unsigned long)a.retransmits, (unsigned long)a.sack_retransmits, (unsigned long)a.spurious_retransmits, (unsigned long)a.tlp_probes, (unsigned long)a.timeouts, (unsigned long)b.duplicate_requests, (unsigned long)b.ooo_placed, (unsigned long)b.dropped);
	assert_int_equal(a.retransmits, 0);
	assert_int_equal(a.sack_retransmits, 0);
	assert_int_equal(a.spurious_retransmits, 0);
	assert_int_equal(a.timeouts, 0);
	assert_int_equal(b.duplicate_requests, 0);
	assert_true(b.ooo_placed > 500); /* most of 1024 + 24 packets landed out of order */
	tw_destroy(w);
}

/* A short message that completes placing before an earlier long one still completes after
 * it: receive completions in message order (IBA 10.8.3.1). */
static void test_completion_order(void **state)
{
	static uint8_t src[8192], r0[8192], r1[64];
	struct tw_cfg c;
	struct tw *w;
	struct mr_memreg *ms, *m0, *m1;
	struct mr_send_wr wr;
	struct mr_wc wc[2];

	(void)state;
	tw_metaroce_cfg(&c, 4);
	w = tw_create(&c);
	tw_fill(src, sizeof(src), 5);
	ms = tw_reg(w, 0, src, sizeof(src), 0);
	m0 = tw_reg(w, 1, r0, sizeof(r0), MR_ACCESS_LOCAL_WRITE);
	m1 = tw_reg(w, 1, r1, sizeof(r1), MR_ACCESS_LOCAL_WRITE);
	tw_post_recv(w, 1, 1, r0, sizeof(r0), m0);
	tw_post_recv(w, 1, 2, r1, sizeof(r1), m1);
	wr = tw_wr(1, MR_WR_SEND, src, 8192, ms); /* PSNs 100..107 */
	tw_post_send(w, 0, &wr);
	wr = tw_wr(2, MR_WR_SEND, src + 3, 64, ms); /* PSN 108 */
	tw_post_send(w, 0, &wr);
	w->act[0][7] = TW_DROP; /* the long message's last packet */
	tw_pump(w, false, 0);
	/* Message 2 is fully placed, but message 1 is not: nothing may complete yet. */
	assert_memory_equal(r1, src + 3, 64);
	assert_int_equal(mr_cq_poll(w->s[1].rcq, 2, wc), 0);
	tw_pump(w, true, 10 * MS);
	tw_poll(w->s[1].rcq, 2, wc);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[0].byte_len, 8192);
	assert_int_equal(wc[1].wr_id, 2);
	assert_memory_equal(r0, src, 8192);
	tw_destroy(w);
}

/* Negotiation: bad entropy counts are refused; a MetaRoCE packet for an RC QP is dropped. */
static void test_negotiation(void **state)
{
	struct tw_cfg c;
	struct tw *w;
	struct mr_qp_attr a;
	struct mr_roce_hdrs h;
	struct mr_qp_init_attr ia;
	struct mr_qp *qp;

	(void)state;
	tw_default_cfg(&c);
	w = tw_create(&c); /* plain RC */
	memset(&ia, 0, sizeof(ia));
	ia.pd = w->s[0].pd;
	ia.send_cq = ia.recv_cq = w->s[0].scq;
	ia.max_send_wr = ia.max_recv_wr = 4;
	qp = mr_qp_create(w->s[0].ctx, &ia);
	assert_non_null(qp);
	memset(&a, 0, sizeof(a));
	a.qp_state = MR_QPS_INIT;
	assert_int_equal(mr_qp_modify(qp, &a, MR_QP_STATE | MR_QP_PKEY_INDEX | MR_QP_ACCESS_FLAGS), 0);
	a.qp_state = MR_QPS_RTR;
	a.path_mtu = 1024;
	a.transport = MR_TRANSPORT_METAROCE;
	const uint32_t m = MR_QP_STATE | MR_QP_PATH | MR_QP_PATH_MTU | MR_QP_DEST_QPN |
			   MR_QP_RQ_PSN | MR_QP_MAX_DEST_RD_ATOMIC | MR_QP_MIN_RNR_TIMER |
			   MR_QP_TRANSPORT;
	a.n_entropies = 0;
	assert_int_equal(mr_qp_modify(qp, &a, m), -EINVAL);
	a.n_entropies = 257;
	assert_int_equal(mr_qp_modify(qp, &a, m), -EINVAL);
	a.n_entropies = 16;
	a.cc = (enum mr_cc_algo)9;
	assert_int_equal(mr_qp_modify(qp, &a, m), -EINVAL);
	assert_int_equal(mr_qp_state(qp), MR_QPS_INIT);
	a.cc = MR_CC_NONE;
	assert_int_equal(mr_qp_modify(qp, &a, m), 0);
	assert_int_equal(mr_qp_query(qp, &a), 0);
	assert_int_equal(a.transport, MR_TRANSPORT_METAROCE);
	assert_int_equal(a.n_entropies, 16);
	/* MR_QP_TRANSPORT is only allowed at INIT->RTR */
	a.qp_state = MR_QPS_RTS;
	assert_int_equal(mr_qp_modify(qp, &a, MR_QP_STATE | MR_QP_SQ_PSN | MR_QP_TIMEOUT |
					       MR_QP_RETRY_CNT | MR_QP_RNR_RETRY |
					       MR_QP_MAX_QP_RD_ATOMIC | MR_QP_TRANSPORT), -EINVAL);
	mr_qp_destroy(qp);

	/* A MetaRoCE WRITE to the plain RC QP of side B: counted and dropped. */
	memset(&h, 0, sizeof(h));
	h.pkey = 0xffff;
	h.opcode = MR_OP_MRC_WRITE_ONLY;
	h.dqpn = mr_qp_num(w->s[1].qp);
	h.psn = 100;
	h.mreth.ver = 1;
	tw_inject(w, 1, &h, NULL, 0);
	assert_int_equal(tw_stats(w, 1).dropped, 1);
	assert_int_equal(tw_stats(w, 1).duplicate_requests + tw_stats(w, 1).out_of_sequence, 0);
	tw_destroy(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_lossless),
		cmocka_unit_test(test_send_and_imm),
		cmocka_unit_test(test_read_atomic),
		cmocka_unit_test(test_reorder_no_retransmit),
		cmocka_unit_test(test_completion_order),
		cmocka_unit_test(test_negotiation),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
