/* SPDX-License-Identifier: MIT
 * Hostile-peer cases that only MetaRoCE has (docs/metaroce-wire.md): MRETH msg_seq (which
 * receive a message consumes), MRETH offsets (per-packet placement), SACK blocks and path
 * indices. Defect 1 of issue 8 (a msg_seq reused at two PSNs completes two receives for one
 * and runs rq_head past rq_tail) has two cases here; they fail until its fix is merged.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "hostile.h"

#define NAK_ACCESS (MR_AETH_NAK | MR_NAK_REM_ACCESS_ERR)
#define NAK_INV (MR_AETH_NAK | MR_NAK_INVALID_REQ)

static const uint8_t pat[4096] = { 0x5a, 0xa5 };

static struct mr_roce_hdrs send_only(const struct live *l, uint32_t psn, uint32_t msg_seq,
				     uint32_t len)
{
	struct mr_roce_hdrs h = h_hdr(l, MR_OP_RC_SEND_ONLY, psn);

	h.mreth.msg_seq = msg_seq;
	h.mreth.msg_len = len;
	return h;
}

/* After the pair: at most the one posted receive completed (with a posted wr_id, once: live
 * checks), no queue index passed another, receives can still be posted, and moving to ERR is
 * immediate (not a 2^32-step flush). */
static void after_reused_msg_seq(struct live *l)
{
	int n = live_poll_b(l, NULL);

	h_assert_ok(live_check_queues(l));
	assert_true(n <= 1);
	assert_true(l->b.qp->rq_head <= l->b.qp->rq_tail);
	assert_int_equal(live_post_recv(l, 1, LIVE_RECV_BUF), 0);
	h_end(l, false);
}

/* Defect 1 (issue 8): one receive posted; SEND_ONLY msg_seq 0 at ePSN+1, then at ePSN. */
static void defect1_send_pair_one_receive(void **state)
{
	struct live *l = h_live(MR_TRANSPORT_METAROCE, false);
	uint32_t epsn = live_b_epsn(l);
	struct mr_roce_hdrs h;

	(void)state;
	assert_int_equal(live_post_recv(l, 0, LIVE_RECV_BUF), 0);
	h = send_only(l, epsn + 1, 0, 16);
	h_inject(l, &h, pat, 16);
	h = send_only(l, epsn, 0, 16);
	h_inject(l, &h, pat, 16);
	live_b_tx(l, 0, false, NULL, 0);
	after_reused_msg_seq(l);
}

/* Defect 1 with zero-length WRITE_ONLY_IMM (no rkey checked, nothing placed). */
static void defect1_write_imm_pair_one_receive(void **state)
{
	struct live *l = h_live(MR_TRANSPORT_METAROCE, false);
	uint32_t epsn = live_b_epsn(l);
	struct mr_roce_hdrs h;

	(void)state;
	assert_int_equal(live_post_recv(l, 0, LIVE_RECV_BUF), 0);
	for (int i = 1; i >= 0; i--) {
		h = h_hdr(l, MR_OP_RC_WRITE_ONLY_IMM, epsn + (uint32_t)i);
		h.imm = 0x1000u + (uint32_t)i;
		h_inject(l, &h, NULL, 0);
	}
	live_b_tx(l, 0, false, NULL, 0);
	after_reused_msg_seq(l);
}

/* Defect 1, second half: a SEND whose msg_seq skips a receive (msg_seq 1 at ePSN, two
 * receives posted) lands in receive 1. Whatever B does (NAK, drop, or complete), a successful
 * receive completion must be for the receive holding the data, with its length. */
static void defect1_msg_seq_skips_a_receive(void **state)
{
	struct live *l = h_live(MR_TRANSPORT_METAROCE, false);
	uint32_t epsn = live_b_epsn(l);
	struct mr_roce_hdrs h;
	struct mr_wc wc[4];
	int n;

	(void)state;
	assert_int_equal(live_post_recv(l, 0, LIVE_RECV_BUF), 0);
	assert_int_equal(live_post_recv(l, 1, LIVE_RECV_BUF), 0);
	h = send_only(l, epsn, 1, 64);
	h_inject(l, &h, pat, 64);
	live_b_tx(l, 0, false, NULL, 0);
	n = mr_cq_poll(l->b.rcq, 4, wc);
	for (int i = 0; i < n; i++) {
		uint64_t idx = wc[i].wr_id - LIVE_WRID_BASE;

		assert_true(idx < l->nposted);
		l->completed[idx] = 1;
		if (wc[i].status != MR_WC_SUCCESS)
			continue;
		assert_int_equal(wc[i].byte_len, 64);
		assert_memory_equal(live_addr(l, LR_RECV, l->recv_buf[idx] * LIVE_RECV_BUF), pat, 64);
	}
	h_end(l, false);
}

/* A msg_seq far ahead of every posted receive: silently dropped and counted, never placed. */
static void msg_seq_absurd(void **state)
{
	static const uint32_t seqs[] = { 0x10000, 0x40000000, 0x7fffffff, 0xffffffff };
	struct live *l = h_live(MR_TRANSPORT_METAROCE, false);
	uint32_t epsn = live_b_epsn(l);
	uint8_t recv[LIVE_RECV_BUF];
	struct h_out o;

	(void)state;
	assert_int_equal(live_post_recv(l, 0, LIVE_RECV_BUF), 0);
	memcpy(recv, live_addr(l, LR_RECV, 0), sizeof(recv));
	for (unsigned int i = 0; i < 4; i++) {
		struct mr_roce_hdrs h = send_only(l, epsn + i, seqs[i], 64);

		h_inject(l, &h, pat, 64);
	}
	h_collect(l, &o);
	assert_int_equal(h_naks(&o, NAK_INV, ~0u) + h_naks(&o, NAK_ACCESS, ~0u), 0);
	assert_int_equal(h_stats(l).dropped, 4);
	assert_int_equal(live_poll_b(l, NULL), 0);
	assert_memory_equal(recv, live_addr(l, LR_RECV, 0), sizeof(recv));
	assert_int_equal(live_b_epsn(l), epsn);
	h_end(l, true);
}

static void expect_nak(struct live *l, const struct mr_roce_hdrs *h, uint32_t paylen,
		       uint8_t syn)
{
	uint8_t rw[16384];
	struct h_out o;

	memcpy(rw, live_addr(l, LR_RW, 0), sizeof(rw));
	h_inject(l, h, pat, paylen);
	h_collect(l, &o);
	assert_int_equal(h_naks(&o, syn, h->psn), 1);
	assert_int_equal(mr_qp_state(l->b.qp), MR_QPS_ERR);
	assert_memory_equal(rw, live_addr(l, LR_RW, 0), sizeof(rw));
	h_end(l, false);
}

/* MRETH offsets that do not fit the message shape or the region (docs/metaroce-wire.md
 * placement rules, IBA 9.7.5.2.2 / 9.7.5.2.3). */
static void hostile_offsets(void **state)
{
	struct live *l;
	struct mr_roce_hdrs h;

	(void)state;
	/* a SEND_ONLY that does not start at offset 0 */
	l = h_live(MR_TRANSPORT_METAROCE, false);
	live_post_recv(l, 0, LIVE_RECV_BUF);
	h = send_only(l, live_b_epsn(l), 0, 1024 + 16);
	h.mreth.offset = 1024;
	expect_nak(l, &h, 16, NAK_INV);
	/* an offset that is not an MTU multiple */
	l = h_live(MR_TRANSPORT_METAROCE, false);
	h = h_write(l, live_b_epsn(l), h_va(l, LR_RW, 0), l->key[LR_RW], 4096);
	h.opcode = MR_OP_MRC_WRITE_MIDDLE;
	h.mreth.offset = 1000;
	expect_nak(l, &h, 1024, NAK_INV);
	/* a LAST packet placed past the end of the region: va + offset beyond it */
	l = h_live(MR_TRANSPORT_METAROCE, false);
	h = h_write(l, live_b_epsn(l), h_va(l, LR_RW, 8192), l->key[LR_RW], 16384);
	h.opcode = MR_OP_MRC_WRITE_LAST;
	h.mreth.offset = 16384 - 1024;
	expect_nak(l, &h, 1024, NAK_ACCESS);
	/* offset near the top of the 32-bit space, message longer than 2^31 (IBA 9.7.2) */
	l = h_live(MR_TRANSPORT_METAROCE, false);
	h = h_write(l, live_b_epsn(l), h_va(l, LR_RW, 0), l->key[LR_RW], 0xffffffffu);
	h.opcode = MR_OP_MRC_WRITE_LAST;
	h.mreth.offset = 0xfffffc00u;
	expect_nak(l, &h, 1023, NAK_INV);
	/* a READ whose range starts past the end of its message */
	l = h_live(MR_TRANSPORT_METAROCE, false);
	h = h_hdr(l, MR_OP_RC_READ_REQUEST, live_b_epsn(l));
	h.reth.va = h_va(l, LR_RW, 0);
	h.reth.rkey = l->key[LR_RW];
	h.reth.dlen = 1024;
	h.mreth.msg_len = 1024;
	h.mreth.offset = 4096;
	expect_nak(l, &h, 0, NAK_INV);
	/* the legal version of the third case is placed */
	l = h_live(MR_TRANSPORT_METAROCE, false);
	h = h_write(l, live_b_epsn(l), h_va(l, LR_RW, 0), l->key[LR_RW], 16384);
	h.opcode = MR_OP_MRC_WRITE_LAST;
	h.mreth.offset = 16384 - 1024;
	h_inject(l, &h, pat, 1024);
	assert_memory_equal(live_addr(l, LR_RW, 16384 - 1024), pat, 1024);
	assert_int_equal(mr_qp_state(l->b.qp), MR_QPS_RTS);
	h_end(l, false);
}

/* SACK blocks for PSNs never sent (base beyond the window) are ghost ACKs: dropped; a base
 * far behind selects nothing. B's own requests still complete from A's real answers. */
static void hostile_sack_blocks(void **state)
{
	struct live *l = h_live(MR_TRANSPORT_METAROCE, true);
	uint32_t next = live_b_req_next(l), oldest = live_b_req_oldest(l);
	uint64_t dropped = h_stats(l).dropped;

	(void)state;
	for (uint32_t i = 0; i < 256; i++) {
		struct mr_roce_hdrs h = h_hdr(l, MR_OP_RC_ACK, oldest - 1);

		h.sack.base = ((i & 1) ? next + 1 + i : oldest - 0x400000 - i) & MR_PSN_MASK;
		memset(h.sack.bitmap, 0xff, sizeof(h.sack.bitmap));
		h.sack.ce_count = (uint16_t)i;
		h_inject(l, &h, NULL, 0);
	}
	assert_int_equal(h_stats(l).dropped - dropped, 128);
	assert_int_equal(live_poll_b(l, NULL), 0);
	assert_int_equal(live_b_req_oldest(l), oldest);
	live_settle(l);
	assert_int_equal(live_poll_b(l, NULL), 5);
	h_end(l, true);
}

/* MRETH.path is an 8-bit index chosen by the peer: values beyond the QP's entropies are
 * ignored for path feedback and never index outside the path table (ASan). */
static void hostile_path_indices(void **state)
{
	struct live *l = h_live(MR_TRANSPORT_METAROCE, true);
	uint32_t oldest = live_b_req_oldest(l);

	(void)state;
	live_b_tx(l, 0, true, NULL, 0);
	for (uint32_t p = 0; p < 256; p++) {
		struct mr_roce_hdrs h = h_hdr(l, MR_OP_RC_ACK, oldest - 1);

		h.mreth.path = (uint8_t)p;
		h.mreth.flags = MR_MRETH_ECE;
		h.sack.base = oldest;
		h_inject(l, &h, NULL, 0);
	}
	/* A's held packets re-sent on hostile paths: placement must not depend on them. */
	for (uint32_t i = 0; l->nheld_ab > 0; i++) {
		l->held_ab[0].hdr.mreth.path = (uint8_t)(250 + i);
		live_held_deliver(l, 0, false, false);
	}
	assert_int_equal(mr_qp_state(l->b.qp), MR_QPS_RTS);
	h_end(l, true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defect1_send_pair_one_receive),
		cmocka_unit_test(defect1_write_imm_pair_one_receive),
		cmocka_unit_test(defect1_msg_seq_skips_a_receive),
		cmocka_unit_test(msg_seq_absurd),
		cmocka_unit_test(hostile_offsets),
		cmocka_unit_test(hostile_sack_blocks),
		cmocka_unit_test(hostile_path_indices),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
