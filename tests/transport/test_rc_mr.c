/* SPDX-License-Identifier: MIT
 * Memory protection at the responder (IBA 10.6, 9.7.5.2.3): R_Key, access flags, bounds,
 * stale keys; invalid requests (9.7.5.2.2); malformed/unknown packets dropped and counted.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rc_harness.h"

#define SEC 1000000000ull

/* Run one remote op that must fail with a remote access error: NAK 0x62, requester gets
 * REM_ACCESS_ERR, both QPs end in ERR, the second WR is flushed, target memory untouched. */
static void expect_access_error(enum mr_wr_opcode op, uint32_t target_access, uint64_t off,
				uint32_t len, bool stale_key, uint32_t qp_access)
{
	struct tw_cfg c;
	struct tw *w;
	uint8_t src[64], target[64], snap[64];
	struct mr_memreg *ms, *mt;
	struct mr_send_wr wr;
	struct mr_wc wc[2];
	uint32_t rkey;

	tw_default_cfg(&c);
	if (qp_access)
		c.access = qp_access;
	w = tw_create(&c);
	memset(src, 0xab, sizeof(src));
	for (int i = 0; i < 64; i++)
		target[i] = (uint8_t)i;
	memcpy(snap, target, sizeof(snap));
	ms = tw_reg(w, 0, src, sizeof(src), MR_ACCESS_LOCAL_WRITE);
	mt = tw_reg(w, 1, target, sizeof(target), target_access);
	rkey = mr_memreg_rkey(mt);
	if (stale_key) {
		assert_int_equal(mr_dereg(mt), 0);
		/* The slot is reused with a new tag: the old key must not match it. */
		mt = tw_reg(w, 1, target, sizeof(target), MR_ACCESS_LOCAL_WRITE |
			    MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ | MR_ACCESS_REMOTE_ATOMIC);
		assert_int_not_equal(mr_memreg_rkey(mt), rkey);
		assert_int_equal(mr_memreg_rkey(mt) >> 8, rkey >> 8);
	}
	wr = tw_wr(1, op, src, len, ms);
	wr.rdma.remote_addr = (uint64_t)(uintptr_t)target + off;
	wr.rdma.rkey = rkey;
	wr.atomic.remote_addr = (uint64_t)(uintptr_t)target + off;
	wr.atomic.rkey = rkey;
	wr.atomic.compare_add = 5;
	tw_post_send(w, 0, &wr);
	wr.wr_id = 2;
	tw_post_send(w, 0, &wr);
	tw_pump(w, true, SEC);

	assert_int_equal(tw_count_syndrome(w, 1, MR_AETH_NAK | MR_NAK_REM_ACCESS_ERR), 1);
	assert_int_equal(tw_stats(w, 1).rem_access_naks_sent, 1);
	assert_int_equal(tw_stats(w, 0).rem_access_naks_rcvd, 1);
	tw_poll(w->s[0].scq, 2, wc);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[0].status, MR_WC_REM_ACCESS_ERR);
	assert_int_equal(wc[1].wr_id, 2);
	assert_int_equal(wc[1].status, MR_WC_WR_FLUSH_ERR);
	assert_int_equal(mr_qp_state(w->s[0].qp), MR_QPS_ERR);
	assert_int_equal(mr_qp_state(w->s[1].qp), MR_QPS_ERR);
	assert_memory_equal(target, snap, sizeof(target));
	if (op == MR_WR_RDMA_READ || op == MR_WR_ATOMIC_FETCH_AND_ADD)
		for (int i = 0; i < 64; i++)
			assert_int_equal(src[i], 0xab); /* nothing came back */
	tw_destroy(w);
}

static void test_write_needs_remote_write(void **state)
{
	(void)state;
	expect_access_error(MR_WR_RDMA_WRITE, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_READ, 0, 16,
			    false, 0);
}

static void test_write_one_past_end(void **state)
{
	(void)state;
	/* [48, 65) is one byte past the 64-byte region. */
	expect_access_error(MR_WR_RDMA_WRITE, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE, 48,
			    17, false, 0);
	/* Before the start: va wraps below the region. */
	expect_access_error(MR_WR_RDMA_WRITE, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE,
			    (uint64_t)-8, 16, false, 0);
}

static void test_stale_rkey(void **state)
{
	(void)state;
	expect_access_error(MR_WR_RDMA_WRITE, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE, 0, 8,
			    true, 0);
	expect_access_error(MR_WR_RDMA_READ, MR_ACCESS_REMOTE_READ, 0, 8, true, 0);
}

static void test_read_and_atomic_access(void **state)
{
	(void)state;
	expect_access_error(MR_WR_RDMA_READ, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE, 0, 8,
			    false, 0);
	expect_access_error(MR_WR_RDMA_READ, MR_ACCESS_REMOTE_READ, 60, 8, false, 0);
	expect_access_error(MR_WR_ATOMIC_FETCH_AND_ADD,
			    MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_READ, 0, 8, false, 0);
	expect_access_error(MR_WR_ATOMIC_FETCH_AND_ADD,
			    MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_ATOMIC, 64, 8, false, 0);
	/* The MR allows it but the QP's access flags do not (IBA 10.6.3.1). */
	expect_access_error(MR_WR_RDMA_WRITE, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE, 0, 8,
			    false, MR_ACCESS_REMOTE_READ);
}

/* Zero-length WRITE checks no R_Key (IBA 9.7.5.2.3) and succeeds. */
static void test_zero_length_write(void **state)
{
	struct tw_cfg c;
	struct tw *w;
	uint8_t src[4];
	struct mr_memreg *ms;
	struct mr_send_wr wr;
	struct mr_wc wc;

	(void)state;
	tw_default_cfg(&c);
	w = tw_create(&c);
	ms = tw_reg(w, 0, src, sizeof(src), 0);
	wr = tw_wr(1, MR_WR_RDMA_WRITE, src, 0, ms);
	wr.num_sge = 0;
	wr.rdma.rkey = 0xdead00;
	tw_post_send(w, 0, &wr);
	tw_pump(w, true, SEC);
	tw_poll(w->s[0].scq, 1, &wc);
	assert_int_equal(wc.status, MR_WC_SUCCESS);
	assert_int_equal(w->log[0][0].opcode, MR_OP_RC_WRITE_ONLY);
	tw_destroy(w);
}

/* SEND longer than the receive buffer: receive LOC_LEN_ERR, NAK 0x61, REM_INV_REQ_ERR. */
static void test_send_too_long(void **state)
{
	struct tw_cfg c;
	struct tw *w;
	uint8_t src[100], dst[64];
	struct mr_memreg *ms, *md;
	struct mr_send_wr wr;
	struct mr_wc wc[2];

	(void)state;
	tw_default_cfg(&c);
	w = tw_create(&c);
	memset(src, 1, sizeof(src));
	ms = tw_reg(w, 0, src, sizeof(src), 0);
	md = tw_reg(w, 1, dst, sizeof(dst), MR_ACCESS_LOCAL_WRITE);
	tw_post_recv(w, 1, 5, dst, 50, md);
	tw_post_recv(w, 1, 6, dst, 50, md);
	wr = tw_wr(1, MR_WR_SEND, src, 100, ms);
	tw_post_send(w, 0, &wr);
	tw_pump(w, true, SEC);
	assert_int_equal(tw_count_syndrome(w, 1, MR_AETH_NAK | MR_NAK_INVALID_REQ), 1);
	assert_int_equal(tw_stats(w, 1).inv_req_naks_sent, 1);
	assert_int_equal(tw_stats(w, 0).inv_req_naks_rcvd, 1);
	tw_poll(w->s[1].rcq, 2, wc);
	assert_int_equal(wc[0].wr_id, 5);
	assert_int_equal(wc[0].status, MR_WC_LOC_LEN_ERR);
	assert_int_equal(wc[1].wr_id, 6);
	assert_int_equal(wc[1].status, MR_WC_WR_FLUSH_ERR);
	tw_poll(w->s[0].scq, 1, wc);
	assert_int_equal(wc[0].status, MR_WC_REM_INV_REQ_ERR);
	tw_destroy(w);
}

/* Crafted packets: unaligned atomic -> NAK invalid request; a MIDDLE with no message in
 * progress -> NAK invalid request; unknown QPN and non-RC opcodes counted and dropped. */
static void test_invalid_requests(void **state)
{
	struct tw_cfg c;
	struct tw *w;
	struct mr_roce_hdrs h;
	struct mr_ctx_stats cs;
	struct mr_tx_pkt tx;
	uint8_t pay[1024];

	(void)state;
	tw_default_cfg(&c);
	w = tw_create(&c);
	memset(&h, 0, sizeof(h));
	h.pkey = 0xffff; /* default partition (IBA 10.9) */
	h.opcode = MR_OP_RC_SEND_ONLY;
	h.dqpn = 999; /* unknown */
	h.psn = 100;
	tw_inject(w, 1, &h, NULL, 0);
	h.dqpn = mr_qp_num(w->s[1].qp);
	h.opcode = MR_OP_UD_SEND_ONLY;
	tw_inject(w, 1, &h, NULL, 0);
	mr_ctx_get_stats(w->s[1].ctx, &cs);
	assert_int_equal(cs.rx_unknown_qp, 1);
	assert_int_equal(cs.rx_dropped, 1);
	assert_int_equal(mr_ctx_tx(w->s[1].ctx, 0, &tx), 0);
	/* A MIDDLE with no message in progress breaks the opcode sequence. */
	h.opcode = MR_OP_RC_WRITE_MIDDLE;
	memset(pay, 0, sizeof(pay));
	tw_inject(w, 1, &h, pay, 1024);
	assert_int_equal(mr_ctx_tx(w->s[1].ctx, 0, &tx), 1);
	assert_int_equal(tx.hdr.opcode, MR_OP_RC_ACK);
	assert_int_equal(tx.hdr.aeth.syndrome, MR_AETH_NAK | MR_NAK_INVALID_REQ);
	assert_int_equal(tx.hdr.psn, 100);
	assert_int_equal(mr_qp_state(w->s[1].qp), MR_QPS_ERR);
	tw_destroy(w);

	w = tw_create(&c);
	{
		uint64_t word = 7;
		struct mr_memreg *m = tw_reg(w, 1, &word, 8, MR_ACCESS_LOCAL_WRITE |
						     MR_ACCESS_REMOTE_ATOMIC);

		memset(&h, 0, sizeof(h));
		h.pkey = 0xffff; /* default partition (IBA 10.9) */
		h.dqpn = mr_qp_num(w->s[1].qp);
		h.psn = 100;
		h.opcode = MR_OP_RC_FETCH_ADD;
		h.atmeth.va = (uint64_t)(uintptr_t)&word + 4;
		h.atmeth.rkey = mr_memreg_rkey(m);
		h.atmeth.swap_add = 1;
		h.ackreq = true;
		tw_inject(w, 1, &h, NULL, 0);
		assert_int_equal(mr_ctx_tx(w->s[1].ctx, 0, &tx), 1);
		assert_int_equal(tx.hdr.aeth.syndrome, MR_AETH_NAK | MR_NAK_INVALID_REQ);
		assert_int_equal(word, 7);
	}
	tw_destroy(w);

	w = tw_create(&c);
	memset(&h, 0, sizeof(h));
	h.pkey = 0xffff; /* default partition (IBA 10.9) */
	h.dqpn = mr_qp_num(w->s[1].qp);
	h.psn = 100;
	h.opcode = MR_OP_RC_SEND_FIRST; /* a FIRST shorter than the MTU is malformed */
	tw_inject(w, 1, &h, pay, 100);
	assert_int_equal(mr_ctx_tx(w->s[1].ctx, 0, &tx), 1);
	assert_int_equal(tx.hdr.aeth.syndrome, MR_AETH_NAK | MR_NAK_INVALID_REQ);
	/* A response-type packet to a QP with nothing outstanding is dropped, not acted on. */
	h.dqpn = mr_qp_num(w->s[0].qp);
	h.opcode = MR_OP_RC_ACK;
	h.psn = 5000;
	tw_inject(w, 0, &h, NULL, 0);
	assert_int_equal(tw_stats(w, 0).dropped, 1);
	assert_int_equal(mr_qp_state(w->s[0].qp), MR_QPS_RTS);
	tw_destroy(w);
}

/* Header validation before the transport (IBA 9.6): a P_Key outside the default partition and,
 * for a packet parsed from a frame, a source address other than the connected peer's are counted
 * and dropped without touching memory or answering; a limited-member P_Key (0x7FFF) from the
 * peer's address is accepted (IBA 10.9). */
static void test_header_checks(void **state)
{
	static uint8_t dst[64], pay[64];
	static const uint8_t dummy_frame[1];
	struct tw_cfg c;
	struct tw *w;
	struct mr_memreg *m;
	struct mr_pkt pkt;
	struct mr_ctx_stats cs;
	struct mr_tx_pkt tx;
	struct mr_qp_attr qa;

	(void)state;
	tw_default_cfg(&c);
	w = tw_create(&c);
	memset(dst, 0, sizeof(dst));
	memset(pay, 0xa5, sizeof(pay));
	m = tw_reg(w, 1, dst, sizeof(dst), MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE);
	assert_int_equal(mr_qp_query(w->s[1].qp, &qa), 0);
	memset(&pkt, 0, sizeof(pkt));
	pkt.hdr.opcode = MR_OP_RC_WRITE_ONLY;
	pkt.hdr.dqpn = mr_qp_num(w->s[1].qp);
	pkt.hdr.psn = 100;
	pkt.hdr.ackreq = true;
	pkt.hdr.reth.va = (uint64_t)(uintptr_t)dst;
	pkt.hdr.reth.rkey = mr_memreg_rkey(m);
	pkt.hdr.reth.dlen = sizeof(pay);
	pkt.payload = pay;
	pkt.paylen = sizeof(pay);

	pkt.hdr.pkey = 0x8001; /* another partition */
	mr_ctx_rx(w->s[1].ctx, &pkt, 0);
	pkt.hdr.pkey = 0x7fff;
	pkt.frame = dummy_frame;
	pkt.frame_len = sizeof(dummy_frame);
	memcpy(pkt.sgid, qa.path.dgid, 16);
	pkt.sgid[15] ^= 1; /* not the peer */
	mr_ctx_rx(w->s[1].ctx, &pkt, 0);
	mr_ctx_get_stats(w->s[1].ctx, &cs);
	assert_int_equal(cs.rx_bad_pkey, 1);
	assert_int_equal(cs.rx_bad_source, 1);
	assert_int_equal(tw_stats(w, 1).dropped, 2);
	assert_int_equal(mr_ctx_tx(w->s[1].ctx, 0, &tx), 0);
	for (size_t i = 0; i < sizeof(dst); i++)
		assert_int_equal(dst[i], 0);

	pkt.sgid[15] ^= 1; /* the peer, limited-member P_Key */
	mr_ctx_rx(w->s[1].ctx, &pkt, 0);
	assert_memory_equal(dst, pay, sizeof(pay));
	assert_int_equal(mr_ctx_tx(w->s[1].ctx, 0, &tx), 1);
	assert_int_equal(tx.hdr.opcode, MR_OP_RC_ACK);
	assert_int_equal(tx.hdr.psn, 100);
	mr_ctx_get_stats(w->s[1].ctx, &cs);
	assert_int_equal(cs.rx_bad_pkey + cs.rx_bad_source, 2);
	tw_destroy(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_needs_remote_write),
		cmocka_unit_test(test_write_one_past_end),
		cmocka_unit_test(test_stale_rkey),
		cmocka_unit_test(test_read_and_atomic_access),
		cmocka_unit_test(test_zero_length_write),
		cmocka_unit_test(test_send_too_long),
		cmocka_unit_test(test_invalid_requests),
		cmocka_unit_test(test_header_checks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
