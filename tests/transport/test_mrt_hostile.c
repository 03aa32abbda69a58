/* SPDX-License-Identifier: MIT
 * MetaRoCE against a peer that breaks the protocol on purpose (issue 8, defects 1 and 3):
 *  - receive-consuming messages whose MRETH.msg_seq does not name the receive they complete
 *    (two messages for one receive, a message naming a later receive): every msg_seq maps to
 *    exactly one posted receive, a completion is for the receive the data landed in, rq_head
 *    never passes rq_tail;
 *  - a fatal NAK, or an RNR NAK, for a PSN the requester never sent has no effect.
 * Each case failed on the code before the fix (two completions for one receive, a completion
 * for the wrong receive, a QP moved to ERR by a forged NAK).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rc_harness.h"

#define EPSN 100u /* side A's first SQ PSN = side B's expected PSN (tw_default_cfg) */

static struct mr_roce_hdrs mh(struct tw *w, int to, uint8_t op, uint32_t psn, uint32_t msg_seq,
			     uint32_t msg_len)
{
	struct mr_roce_hdrs h;

	memset(&h, 0, sizeof(h));
	h.pkey = 0xffff;
	h.opcode = op;
	h.dqpn = mr_qp_num(w->s[to].qp);
	h.psn = psn;
	h.mreth.ver = 1;
	h.mreth.msg_seq = msg_seq;
	h.mreth.msg_len = msg_len;
	return h;
}

/* Everything side B's receive CQ holds now. */
static int drain(struct mr_cq *cq, struct mr_wc *wc, int max)
{
	int n = 0;

	while (n < max && mr_cq_poll(cq, 1, &wc[n]) == 1)
		n++;
	return n;
}

/* B NAKed the request as invalid and its QP is in ERR; A ignored the NAK for a PSN it never
 * sent (these requests were injected, not sent by A). */
static void expect_b_failed(struct tw *w)
{
	assert_int_equal(mr_qp_state(w->s[1].qp), MR_QPS_ERR);
	assert_true(tw_count_syndrome(w, 1, MR_AETH_NAK | MR_NAK_INVALID_REQ) >= 1);
	assert_int_equal(mr_qp_state(w->s[0].qp), MR_QPS_RTS);
}

/* One receive; SEND_ONLY msg_seq 0 at ePSN+1, then again at ePSN. */
static void test_one_receive_two_sends(void **state)
{
	uint8_t buf[64], data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	struct mr_memreg *mr;
	struct mr_roce_hdrs h;
	struct mr_wc wc[8];
	struct tw_cfg c;
	struct tw *w;
	int n;

	(void)state;
	tw_metaroce_cfg(&c, 4);
	w = tw_create(&c);
	memset(buf, 0, sizeof(buf));
	mr = tw_reg(w, 1, buf, sizeof(buf), MR_ACCESS_LOCAL_WRITE);
	tw_post_recv(w, 1, 7, buf, sizeof(buf), mr);
	h = mh(w, 1, MR_OP_MRC_SEND_ONLY, EPSN + 1, 0, sizeof(data));
	tw_inject(w, 1, &h, data, sizeof(data));
	h.psn = EPSN;
	tw_inject(w, 1, &h, data, sizeof(data));
	tw_pump(w, false, 0);
	n = drain(w->s[1].rcq, wc, 8);
	assert_int_equal(n, 1); /* exactly one completion for one receive */
	assert_int_equal(wc[0].wr_id, 7);
	assert_int_equal(wc[0].status, MR_WC_WR_FLUSH_ERR);
	/* The receive queue is consistent: a receive posted now is flushed at once (ERR). */
	tw_post_recv(w, 1, 8, buf, sizeof(buf), mr);
	assert_int_equal(drain(w->s[1].rcq, wc, 8), 1);
	assert_int_equal(wc[0].wr_id, 8);
	expect_b_failed(w);
	tw_destroy(w);
}

/* The same with zero-length WRITE_ONLY_IMM (no rkey needed). */
static void test_one_receive_two_write_imm(void **state)
{
	uint8_t buf[16];
	struct mr_memreg *mr;
	struct mr_roce_hdrs h;
	struct mr_wc wc[8];
	struct tw_cfg c;
	struct tw *w;
	int n;

	(void)state;
	tw_metaroce_cfg(&c, 4);
	w = tw_create(&c);
	mr = tw_reg(w, 1, buf, sizeof(buf), MR_ACCESS_LOCAL_WRITE);
	tw_post_recv(w, 1, 9, buf, sizeof(buf), mr);
	h = mh(w, 1, MR_OP_MRC_WRITE_ONLY_IMM, EPSN + 1, 0, 0);
	h.imm = 0x11223344;
	tw_inject(w, 1, &h, NULL, 0);
	h.psn = EPSN;
	tw_inject(w, 1, &h, NULL, 0);
	tw_pump(w, false, 0);
	n = drain(w->s[1].rcq, wc, 8);
	assert_int_equal(n, 1);
	assert_int_equal(wc[0].wr_id, 9);
	assert_int_equal(wc[0].status, MR_WC_WR_FLUSH_ERR);
	expect_b_failed(w);
	tw_destroy(w);
}

/* Two receives; the first message to reach the cumulative point names the second one. Its
 * data landed in receive 2: completing receive 1 with it would report bytes that are not
 * there. */
static void test_send_names_later_receive(void **state)
{
	uint8_t b1[32], b2[32], data[8] = {9, 9, 9, 9, 9, 9, 9, 9};
	struct mr_memreg *m1, *m2;
	struct mr_roce_hdrs h;
	struct mr_wc wc[8];
	struct tw_cfg c;
	struct tw *w;
	int n;

	(void)state;
	tw_metaroce_cfg(&c, 4);
	w = tw_create(&c);
	memset(b1, 0, sizeof(b1));
	m1 = tw_reg(w, 1, b1, sizeof(b1), MR_ACCESS_LOCAL_WRITE);
	m2 = tw_reg(w, 1, b2, sizeof(b2), MR_ACCESS_LOCAL_WRITE);
	tw_post_recv(w, 1, 1, b1, sizeof(b1), m1);
	tw_post_recv(w, 1, 2, b2, sizeof(b2), m2);
	h = mh(w, 1, MR_OP_MRC_SEND_ONLY_IMM, EPSN, 1, sizeof(data));
	h.imm = 0xabcd;
	tw_inject(w, 1, &h, data, sizeof(data));
	tw_pump(w, false, 0);
	n = drain(w->s[1].rcq, wc, 8);
	assert_int_equal(n, 2);
	for (int i = 0; i < n; i++) {
		assert_int_equal(wc[i].wr_id, (uint64_t)i + 1);
		assert_int_equal(wc[i].status, MR_WC_WR_FLUSH_ERR);
	}
	for (size_t i = 0; i < sizeof(b1); i++)
		assert_int_equal(b1[i], 0); /* nothing placed into receive 1 */
	expect_b_failed(w);
	tw_destroy(w);
}

/* Two packets of one message disagree on where the message ends: the second is refused. */
static void test_send_packets_disagree(void **state)
{
	uint8_t buf[4096], data[1024];
	struct mr_memreg *mr;
	struct mr_roce_hdrs h;
	struct mr_wc wc[8];
	struct tw_cfg c;
	struct tw *w;

	(void)state;
	tw_metaroce_cfg(&c, 4);
	w = tw_create(&c);
	tw_fill(data, sizeof(data), 3);
	mr = tw_reg(w, 1, buf, sizeof(buf), MR_ACCESS_LOCAL_WRITE);
	tw_post_recv(w, 1, 5, buf, sizeof(buf), mr);
	/* FIRST of a 2048-byte message at ePSN+1 (so the message is ePSN+1..ePSN+2) */
	h = mh(w, 1, MR_OP_MRC_SEND_FIRST, EPSN + 1, 0, 2048);
	tw_inject(w, 1, &h, data, sizeof(data));
	assert_int_equal(mr_qp_state(w->s[1].qp), MR_QPS_RTS);
	/* a LAST of "the same" message at ePSN: it would end the message at ePSN */
	h = mh(w, 1, MR_OP_MRC_SEND_LAST, EPSN, 0, 2048);
	h.mreth.offset = 1024;
	tw_inject(w, 1, &h, data, sizeof(data));
	tw_pump(w, false, 0);
	assert_int_equal(drain(w->s[1].rcq, wc, 8), 1);
	assert_int_equal(wc[0].status, MR_WC_WR_FLUSH_ERR);
	expect_b_failed(w);
	tw_destroy(w);
}

/* Legitimate traffic still works after all these checks: 3 SENDs of 3 packets, reordered. */
static void test_sends_reordered_ok(void **state)
{
	uint8_t src[3][3000], dst[3][3000];
	struct mr_memreg *ms, *md[3];
	struct mr_send_wr wr;
	struct mr_wc wc[3];
	struct tw_cfg c;
	struct tw *w;

	(void)state;
	tw_metaroce_cfg(&c, 4);
	w = tw_create(&c);
	w->shuffle[0] = 9;
	ms = tw_reg(w, 0, src, sizeof(src), MR_ACCESS_LOCAL_WRITE);
	for (int i = 0; i < 3; i++) {
		tw_fill(src[i], sizeof(src[i]), (uint32_t)i + 40);
		memset(dst[i], 0, sizeof(dst[i]));
		md[i] = tw_reg(w, 1, dst[i], sizeof(dst[i]), MR_ACCESS_LOCAL_WRITE);
		tw_post_recv(w, 1, 100 + (uint64_t)i, dst[i], sizeof(dst[i]), md[i]);
	}
	for (int i = 0; i < 3; i++) {
		wr = tw_wr((uint64_t)i, MR_WR_SEND, src[i], sizeof(src[i]), ms);
		tw_post_send(w, 0, &wr);
	}
	tw_pump(w, true, 1000000000ull);
	tw_poll(w->s[1].rcq, 3, wc);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(wc[i].status, MR_WC_SUCCESS);
		assert_int_equal(wc[i].wr_id, 100 + (uint64_t)i);
		assert_int_equal(wc[i].byte_len, sizeof(src[i]));
		assert_memory_equal(dst[i], src[i], sizeof(src[i]));
	}
	tw_poll(w->s[0].scq, 3, wc);
	tw_destroy(w);
}

/* A MetaRoCE NAK (ACK opcode, AETH NAK syndrome, BTH.PSN the NAKed request) to side A. */
static struct mr_roce_hdrs nak_to_a(struct tw *w, uint8_t syndrome, uint32_t psn, uint32_t base)
{
	struct mr_roce_hdrs h = mh(w, 0, mr_opcode_to_metaroce(MR_OP_RC_ACK), psn, 0, 0);

	h.aeth.syndrome = syndrome;
	h.sack.base = base;
	return h;
}

static void write_once(struct tw *w, uint8_t *src, uint8_t *dst, uint32_t len,
		       struct mr_memreg *ms, struct mr_memreg *md, uint64_t id)
{
	struct mr_send_wr wr = tw_wr(id, MR_WR_RDMA_WRITE, src, len, ms);
	struct mr_wc wc;

	wr.rdma.rkey = mr_memreg_rkey(md);
	wr.rdma.remote_addr = (uint64_t)(uintptr_t)dst;
	tw_post_send(w, 0, &wr);
	tw_pump(w, true, 1000000000ull);
	tw_poll(w->s[0].scq, 1, &wc);
	assert_int_equal(wc.status, MR_WC_SUCCESS);
	assert_memory_equal(dst, src, len);
}

/* Fatal and RNR NAKs for PSNs A never sent, or already acknowledged, do nothing. */
static void test_nak_outside_window(void **state)
{
	static const uint8_t fatal[] = {MR_NAK_INVALID_REQ, MR_NAK_REM_ACCESS_ERR, MR_NAK_REM_OP_ERR,
					MR_NAK_INVALID_RD_REQ};
	uint8_t src[512], dst[512];
	struct mr_memreg *ms, *md;
	struct mr_roce_hdrs h;
	struct mr_qp_stats st;
	struct tw_cfg c;
	struct tw *w;
	uint32_t drops;

	(void)state;
	tw_metaroce_cfg(&c, 4);
	w = tw_create(&c);
	tw_fill(src, sizeof(src), 5);
	ms = tw_reg(w, 0, src, sizeof(src), MR_ACCESS_LOCAL_WRITE);
	md = tw_reg(w, 1, dst, sizeof(dst), MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE);
	write_once(w, src, dst, sizeof(src), ms, md, 1); /* A sent and had ACKed PSN EPSN */
	drops = tw_stats(w, 0).dropped;
	for (size_t i = 0; i < sizeof(fatal); i++) {
		/* never sent: ahead of the next PSN; sack base itself is plausible (= next) */
		h = nak_to_a(w, MR_AETH_NAK | fatal[i], EPSN + 1 + 1000, EPSN + 1);
		tw_inject(w, 0, &h, NULL, 0);
		h = nak_to_a(w, MR_AETH_NAK | fatal[i], EPSN + 1, EPSN + 1); /* = next, unsent */
		tw_inject(w, 0, &h, NULL, 0);
		h = nak_to_a(w, MR_AETH_NAK | fatal[i], EPSN, EPSN + 1); /* acknowledged */
		tw_inject(w, 0, &h, NULL, 0);
		assert_int_equal(mr_qp_state(w->s[0].qp), MR_QPS_RTS);
	}
	h = nak_to_a(w, MR_AETH_RNR_NAK | 1, EPSN + 7, EPSN + 1);
	tw_inject(w, 0, &h, NULL, 0);
	st = tw_stats(w, 0);
	assert_int_equal(st.dropped, drops + 3 * sizeof(fatal) + 1);
	assert_int_equal(st.inv_req_naks_rcvd + st.rem_access_naks_rcvd + st.rnr_naks_rcvd, 0);
	/* and the QP works: a second WRITE completes and lands */
	tw_fill(src, sizeof(src), 6);
	write_once(w, src, dst, sizeof(src), ms, md, 2);
	tw_destroy(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_receive_two_sends),
		cmocka_unit_test(test_one_receive_two_write_imm),
		cmocka_unit_test(test_send_names_later_receive),
		cmocka_unit_test(test_send_packets_disagree),
		cmocka_unit_test(test_sends_reordered_ok),
		cmocka_unit_test(test_nak_outside_window),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
