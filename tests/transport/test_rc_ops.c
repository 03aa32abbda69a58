/* SPDX-License-Identifier: MIT
 * RC operations over a lossless in-test wire: SEND (+imm, +inv, inline, zero length),
 * WRITE (+imm), READ, CMP_SWAP, FETCH_ADD, segmentation per MTU, signaling, READ/atomic depth
 * and the in-flight cap.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rc_harness.h"

static struct mr_send_wr wr_init(uint64_t id, enum mr_wr_opcode op)
{
	struct mr_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.opcode = op;
	wr.send_flags = MR_SEND_SIGNALED;
	return wr;
}

static void sge(struct mr_send_wr *wr, const void *p, uint32_t len, const struct mr_memreg *mr)
{
	wr->sg_list[wr->num_sge].addr = (uint64_t)(uintptr_t)p;
	wr->sg_list[wr->num_sge].length = len;
	wr->sg_list[wr->num_sge].lkey = mr_memreg_lkey(mr);
	wr->num_sge++;
}

/* A 1000-byte SEND from 3 SGEs at MTU 256: FIRST, MIDDLE x2, LAST with AckReq only on LAST. */
static void test_send_segmented(void **state)
{
	struct tw_cfg c;
	struct tw *w;
	uint8_t src[1000], dst[1200];
	struct mr_memreg *ms, *md;
	struct mr_send_wr wr;
	struct mr_wc wc;

	(void)state;
	tw_default_cfg(&c);
	c.mtu = 256;
	w = tw_create(&c);
	tw_fill(src, sizeof(src), 1);
	memset(dst, 0xee, sizeof(dst));
	ms = tw_reg(w, 0, src, sizeof(src), 0);
	md = tw_reg(w, 1, dst, sizeof(dst), MR_ACCESS_LOCAL_WRITE);
	tw_post_recv(w, 1, 77, dst, sizeof(dst), md);
	wr = wr_init(11, MR_WR_SEND);
	sge(&wr, src, 100, ms);
	sge(&wr, src + 100, 600, ms);
	sge(&wr, src + 700, 300, ms);
	tw_post_send(w, 0, &wr);
	tw_pump(w, false, 0);

	assert_int_equal(w->sent[0], 4);
	assert_int_equal(w->log[0][0].opcode, MR_OP_RC_SEND_FIRST);
	assert_int_equal(w->log[0][1].opcode, MR_OP_RC_SEND_MIDDLE);
	assert_int_equal(w->log[0][2].opcode, MR_OP_RC_SEND_MIDDLE);
	assert_int_equal(w->log[0][3].opcode, MR_OP_RC_SEND_LAST);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(w->log[0][i].psn, 100 + i);
		assert_int_equal(w->log[0][i].dqpn, mr_qp_num(w->s[1].qp));
		assert_int_equal(w->log[0][i].ackreq, i == 3);
		assert_int_equal(w->log_paylen[0][i], i < 3 ? 256 : 1000 - 768);
	}
	/* One coalesced ACK for the last PSN, MSN 1 (IBA 9.7.5.1.1). */
	assert_int_equal(w->sent[1], 1);
	assert_int_equal(w->log[1][0].opcode, MR_OP_RC_ACK);
	assert_int_equal(w->log[1][0].psn, 103);
	assert_int_equal(w->log[1][0].aeth.msn, 1);
	assert_int_equal(w->log[1][0].aeth.syndrome, MR_AETH_CREDIT_INVALID);

	tw_poll(w->s[1].rcq, 1, &wc);
	assert_int_equal(wc.wr_id, 77);
	assert_int_equal(wc.status, MR_WC_SUCCESS);
	assert_int_equal(wc.opcode, MR_WC_RECV);
	assert_int_equal(wc.byte_len, 1000);
	assert_int_equal(wc.wc_flags, 0);
	assert_int_equal(wc.qp_num, mr_qp_num(w->s[1].qp));
	assert_memory_equal(dst, src, 1000);
	assert_int_equal(dst[1000], 0xee);
	tw_poll(w->s[0].scq, 1, &wc);
	assert_int_equal(wc.wr_id, 11);
	assert_int_equal(wc.status, MR_WC_SUCCESS);
	assert_int_equal(wc.opcode, MR_WC_SEND);
	assert_int_equal(wc.byte_len, 1000);
	assert_int_equal(mr_ctx_next_expiry(w->s[0].ctx), UINT64_MAX);
	tw_destroy(w);
}

/* SEND with immediate, with invalidate, zero-length, and inline (source changed after post). */
static void test_send_variants(void **state)
{
	struct tw_cfg c;
	struct tw *w;
	uint8_t src[64], dst[4][64];
	struct mr_memreg *ms, *md;
	struct mr_send_wr wr;
	struct mr_wc wc[4];

	(void)state;
	tw_default_cfg(&c);
	w = tw_create(&c);
	tw_fill(src, sizeof(src), 2);
	memset(dst, 0, sizeof(dst));
	ms = tw_reg(w, 0, src, sizeof(src), 0);
	md = tw_reg(w, 1, dst, sizeof(dst), MR_ACCESS_LOCAL_WRITE);
	for (int i = 0; i < 4; i++)
		tw_post_recv(w, 1, 200 + (uint64_t)i, dst[i], 64, md);

	wr = wr_init(1, MR_WR_SEND_WITH_IMM);
	wr.imm_data = 0xdeadbeef;
	sge(&wr, src, 10, ms);
	tw_post_send(w, 0, &wr);
	wr = wr_init(2, MR_WR_SEND_WITH_INV);
	wr.invalidate_rkey = 0x1234;
	sge(&wr, src, 20, ms);
	tw_post_send(w, 0, &wr);
	wr = wr_init(3, MR_WR_SEND);
	tw_post_send(w, 0, &wr); /* zero length */
	wr = wr_init(4, MR_WR_SEND);
	wr.send_flags |= MR_SEND_INLINE;
	{
		uint8_t tmp[40];

		memcpy(tmp, src, sizeof(tmp));
		wr.sg_list[0].addr = (uint64_t)(uintptr_t)tmp;
		wr.sg_list[0].length = sizeof(tmp);
		wr.sg_list[0].lkey = 0xbad; /* inline ignores lkeys */
		wr.num_sge = 1;
		tw_post_send(w, 0, &wr);
		memset(tmp, 0, sizeof(tmp));
	}
	tw_pump(w, false, 0);
	assert_int_equal(w->log[0][0].opcode, MR_OP_RC_SEND_ONLY_IMM);
	assert_int_equal(w->log[0][0].imm, 0xdeadbeef);
	assert_int_equal(w->log[0][1].opcode, MR_OP_RC_SEND_ONLY_INV);
	assert_int_equal(w->log[0][1].ieth_rkey, 0x1234);
	assert_int_equal(w->log[0][2].opcode, MR_OP_RC_SEND_ONLY);
	assert_int_equal(w->log_paylen[0][2], 0);

	tw_poll(w->s[1].rcq, 4, wc);
	assert_int_equal(wc[0].wr_id, 200);
	assert_int_equal(wc[0].byte_len, 10);
	assert_int_equal(wc[0].wc_flags, MR_WC_WITH_IMM);
	assert_int_equal(wc[0].imm_data, 0xdeadbeef);
	assert_int_equal(wc[1].wr_id, 201);
	assert_int_equal(wc[1].wc_flags, MR_WC_WITH_INV);
	assert_int_equal(wc[1].invalidated_rkey, 0x1234);
	assert_int_equal(wc[1].byte_len, 20);
	assert_int_equal(wc[2].wr_id, 202);
	assert_int_equal(wc[2].byte_len, 0);
	assert_int_equal(wc[2].status, MR_WC_SUCCESS);
	assert_int_equal(wc[3].wr_id, 203);
	assert_int_equal(wc[3].byte_len, 40);
	assert_memory_equal(dst[0], src, 10);
	assert_memory_equal(dst[1], src, 20);
	assert_memory_equal(dst[3], src, 40);
	tw_poll(w->s[0].scq, 4, wc);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(wc[i].wr_id, (uint64_t)i + 1);
		assert_int_equal(wc[i].status, MR_WC_SUCCESS);
	}
	tw_destroy(w);
}

/* RDMA WRITE (multi-packet, RETH only in FIRST) and WRITE with immediate, at every MTU. */
/* RDMA WRITE through real frames (metaroced's receive path): WRITE Middle/Last come to the
 * responder with their ICRC pending and it is checked in the placement copy. A corrupted
 * Middle and a corrupted Last are each dropped as ICRC errors without advancing the responder
 * (its next packets are out of sequence until go-back-N resends), and the message still
 * completes with every byte right; nothing lands past the target range. */
static void test_write_frames_icrc(void **state)
{
	enum { LEN = 16 * 1024, MTU = 1024 };
	struct tw_cfg c;
	struct tw *w;
	uint8_t *src = malloc(LEN), *dst = malloc(LEN + 64);
	struct mr_memreg *ms, *md;
	struct mr_send_wr wr;
	struct mr_wc wc;
	struct mr_qp_stats st;

	(void)state;
	assert_non_null(src);
	assert_non_null(dst);
	tw_default_cfg(&c);
	c.mtu = MTU;
	c.timeout = 1;
	c.retry_cnt = 7;
	w = tw_create(&c);
	w->frames[0] = w->frames[1] = true;
	w->act[0][5] = TW_CORRUPT;  /* a Middle */
	w->act[0][15] = TW_CORRUPT; /* the Last (Middles 6..14 in between all went through) */
	tw_fill(src, LEN, 41);
	memset(dst, 0x5a, LEN + 64);
	ms = tw_reg(w, 0, src, LEN, 0);
	md = tw_reg(w, 1, dst, LEN + 64, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE);
	wr = wr_init(1, MR_WR_RDMA_WRITE);
	sge(&wr, src, LEN, ms);
	wr.rdma.remote_addr = (uint64_t)(uintptr_t)(dst + 32);
	wr.rdma.rkey = mr_memreg_rkey(md);
	tw_post_send(w, 0, &wr);
	tw_pump(w, true, 1000000000ull);
	tw_poll(w->s[0].scq, 1, &wc);
	assert_int_equal(wc.status, MR_WC_SUCCESS);
	assert_memory_equal(dst + 32, src, LEN);
	for (int i = 0; i < 32; i++) {
		assert_int_equal(dst[i], 0x5a);
		assert_int_equal(dst[32 + LEN + i], 0x5a);
	}
	assert_int_equal(w->log[0][5].opcode, MR_OP_RC_WRITE_MIDDLE);
	assert_int_equal(w->log[0][15].opcode, MR_OP_RC_WRITE_LAST);
	/* both caught, and by the fused path (deferred), not on arrival */
	assert_int_equal(w->icrc_bad[1], 2);
	assert_true(w->icrc_deferred[1] >= 14);
	st = tw_stats(w, 1);
	assert_true(st.out_of_sequence > 0); /* packet 6 met ePSN 5: nothing had advanced */
	assert_true(tw_stats(w, 0).retransmits > 0);
	tw_destroy(w);
	free(src);
	free(dst);
}

static void test_write(void **state)
{
	static const uint32_t mtus[] = { 256, 512, 1024, 2048, 4096 };

	(void)state;
	for (unsigned int m = 0; m < 5; m++) {
		struct tw_cfg c;
		struct tw *w;
		uint8_t *src = malloc(10000), *dst = malloc(10016), rbuf[4];
		struct mr_memreg *ms, *md, *mrb;
		struct mr_send_wr wr;
		struct mr_wc wc;
		uint32_t pk;

		tw_default_cfg(&c);
		c.mtu = mtus[m];
		w = tw_create(&c);
		tw_fill(src, 10000, m);
		memset(dst, 0x5a, 10016);
		ms = tw_reg(w, 0, src, 10000, 0);
		md = tw_reg(w, 1, dst, 10016, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE);
		mrb = tw_reg(w, 1, rbuf, sizeof(rbuf), MR_ACCESS_LOCAL_WRITE);
		tw_post_recv(w, 1, 9, rbuf, sizeof(rbuf), mrb);

		wr = wr_init(1, MR_WR_RDMA_WRITE);
		sge(&wr, src, 9000, ms);
		wr.rdma.remote_addr = (uint64_t)(uintptr_t)(dst + 8);
		wr.rdma.rkey = mr_memreg_rkey(md);
		tw_post_send(w, 0, &wr);
		wr = wr_init(2, MR_WR_RDMA_WRITE_WITH_IMM);
		sge(&wr, src, 1000, ms);
		wr.imm_data = 77;
		wr.rdma.remote_addr = (uint64_t)(uintptr_t)(dst + 9008);
		wr.rdma.rkey = mr_memreg_rkey(md);
		tw_post_send(w, 0, &wr);
		tw_pump(w, false, 0);

		pk = (9000 + mtus[m] - 1) / mtus[m];
		assert_int_equal(w->log[0][0].opcode, MR_OP_RC_WRITE_FIRST);
		assert_int_equal(w->log[0][0].reth.dlen, 9000);
		assert_int_equal(w->log[0][0].reth.va, (uint64_t)(uintptr_t)(dst + 8));
		assert_int_equal(w->log[0][1].reth.dlen, 0); /* no RETH in MIDDLE */
		assert_int_equal(w->log[0][pk - 1].opcode, MR_OP_RC_WRITE_LAST);
		assert_int_equal(w->log[0][pk].opcode,
				 mtus[m] >= 1000 ? MR_OP_RC_WRITE_ONLY_IMM : MR_OP_RC_WRITE_FIRST);
		assert_memory_equal(dst + 8, src, 9000);
		assert_memory_equal(dst + 9008, src, 1000);
		assert_int_equal(dst[7], 0x5a);
		assert_int_equal(dst[10008], 0x5a);
		tw_poll(w->s[1].rcq, 1, &wc);
		assert_int_equal(wc.wr_id, 9);
		assert_int_equal(wc.opcode, MR_WC_RECV_RDMA_WITH_IMM);
		assert_int_equal(wc.imm_data, 77);
		assert_int_equal(wc.byte_len, 1000);
		assert_int_equal(wc.wc_flags, MR_WC_WITH_IMM);
		assert_int_equal(mr_cq_poll(w->s[0].scq, 1, &wc), 1);
		assert_int_equal(wc.wr_id, 1);
		assert_int_equal(wc.opcode, MR_WC_RDMA_WRITE);
		assert_int_equal(wc.status, MR_WC_SUCCESS);
		tw_poll(w->s[0].scq, 1, &wc);
		assert_int_equal(wc.wr_id, 2);
		assert_int_equal(wc.status, MR_WC_SUCCESS);
		tw_destroy(w);
		free(src);
		free(dst);
	}
}

/* RDMA READ: response opcodes FIRST/MIDDLE/LAST, one request PSN per response packet, data
 * scattered to two SGEs, and a zero-length READ. */
static void test_read(void **state)
{
	struct tw_cfg c;
	struct tw *w;
	uint8_t remote[3000], local[3000];
	struct mr_memreg *mr, *ml;
	struct mr_send_wr wr;
	struct mr_wc wc[2];

	(void)state;
	tw_default_cfg(&c);
	c.mtu = 1024;
	w = tw_create(&c);
	tw_fill(remote, sizeof(remote), 3);
	memset(local, 0, sizeof(local));
	mr = tw_reg(w, 1, remote, sizeof(remote), MR_ACCESS_REMOTE_READ);
	ml = tw_reg(w, 0, local, sizeof(local), MR_ACCESS_LOCAL_WRITE);
	wr = wr_init(5, MR_WR_RDMA_READ);
	sge(&wr, local, 1000, ml);
	sge(&wr, local + 1000, 1500, ml);
	wr.rdma.remote_addr = (uint64_t)(uintptr_t)(remote + 100);
	wr.rdma.rkey = mr_memreg_rkey(mr);
	tw_post_send(w, 0, &wr);
	wr = wr_init(6, MR_WR_RDMA_READ);
	wr.rdma.remote_addr = (uint64_t)(uintptr_t)remote;
	wr.rdma.rkey = mr_memreg_rkey(mr);
	tw_post_send(w, 0, &wr);
	tw_pump(w, false, 0);

	assert_int_equal(w->sent[0], 2);
	assert_int_equal(w->log[0][0].opcode, MR_OP_RC_READ_REQUEST);
	assert_int_equal(w->log[0][0].psn, 100);
	assert_true(w->log[0][0].ackreq);
	assert_int_equal(w->log[0][0].reth.dlen, 2500);
	assert_int_equal(w->log[0][1].psn, 103); /* READ of 3 packets used PSNs 100..102 */
	assert_int_equal(w->sent[1], 4);
	assert_int_equal(w->log[1][0].opcode, MR_OP_RC_READ_RESPONSE_FIRST);
	assert_int_equal(w->log[1][1].opcode, MR_OP_RC_READ_RESPONSE_MIDDLE);
	assert_int_equal(w->log[1][2].opcode, MR_OP_RC_READ_RESPONSE_LAST);
	assert_int_equal(w->log[1][2].psn, 102);
	assert_int_equal(w->log_paylen[1][2], 2500 - 2048);
	assert_int_equal(w->log[1][3].opcode, MR_OP_RC_READ_RESPONSE_ONLY);
	assert_int_equal(w->log_paylen[1][3], 0);
	assert_memory_equal(local, remote + 100, 2500);
	assert_int_equal(local[2500], 0);
	tw_poll(w->s[0].scq, 2, wc);
	assert_int_equal(wc[0].wr_id, 5);
	assert_int_equal(wc[0].opcode, MR_WC_RDMA_READ);
	assert_int_equal(wc[0].byte_len, 2500);
	assert_int_equal(wc[1].wr_id, 6);
	assert_int_equal(wc[1].status, MR_WC_SUCCESS);
	tw_destroy(w);
}

static void test_atomics(void **state)
{
	struct tw_cfg c;
	struct tw *w;
	uint64_t remote[2] = { 1000, 55 }, local[3] = { 0, 0, 0 };
	struct mr_memreg *mr, *ml;
	struct mr_send_wr wr;
	struct mr_wc wc[3];

	(void)state;
	tw_default_cfg(&c);
	w = tw_create(&c);
	mr = tw_reg(w, 1, remote, sizeof(remote), MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_ATOMIC);
	ml = tw_reg(w, 0, local, sizeof(local), MR_ACCESS_LOCAL_WRITE);
	wr = wr_init(1, MR_WR_ATOMIC_FETCH_AND_ADD);
	sge(&wr, &local[0], 8, ml);
	wr.atomic.remote_addr = (uint64_t)(uintptr_t)&remote[0];
	wr.atomic.rkey = mr_memreg_rkey(mr);
	wr.atomic.compare_add = 23;
	tw_post_send(w, 0, &wr);
	wr = wr_init(2, MR_WR_ATOMIC_CMP_AND_SWP); /* matches: swaps */
	sge(&wr, &local[1], 8, ml);
	wr.atomic.remote_addr = (uint64_t)(uintptr_t)&remote[1];
	wr.atomic.rkey = mr_memreg_rkey(mr);
	wr.atomic.compare_add = 55;
	wr.atomic.swap = 0x1122334455667788ull;
	tw_post_send(w, 0, &wr);
	wr.wr_id = 3; /* no longer matches: no swap */
	wr.sg_list[0].addr = (uint64_t)(uintptr_t)&local[2];
	wr.atomic.swap = 9;
	tw_post_send(w, 0, &wr);
	tw_pump(w, false, 0);

	assert_int_equal(w->log[0][0].opcode, MR_OP_RC_FETCH_ADD);
	assert_int_equal(w->log[0][0].atmeth.swap_add, 23);
	assert_int_equal(w->log[0][1].opcode, MR_OP_RC_CMP_SWAP);
	assert_int_equal(w->log[0][1].atmeth.cmp, 55);
	assert_int_equal(tw_count_op(w, 1, MR_OP_RC_ATOMIC_ACK), 3);
	assert_int_equal(remote[0], 1023);
	assert_int_equal(remote[1], 0x1122334455667788ull);
	assert_int_equal(local[0], 1000);
	assert_int_equal(local[1], 55);
	assert_int_equal(local[2], 0x1122334455667788ull);
	tw_poll(w->s[0].scq, 3, wc);
	assert_int_equal(wc[0].opcode, MR_WC_FETCH_ADD);
	assert_int_equal(wc[1].opcode, MR_WC_COMP_SWAP);
	assert_int_equal(wc[2].wr_id, 3);
	assert_int_equal(wc[2].status, MR_WC_SUCCESS);
	tw_destroy(w);
}

/* Unsignaled WRs complete silently; completions still come in SQ order. */
static void test_unsignaled(void **state)
{
	struct tw_cfg c;
	struct tw *w;
	uint8_t src[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, dst[8];
	struct mr_memreg *ms, *md;
	struct mr_send_wr wr;
	struct mr_wc wc;

	(void)state;
	tw_default_cfg(&c);
	w = tw_create(&c);
	ms = tw_reg(w, 0, src, 8, 0);
	md = tw_reg(w, 1, dst, 8, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE);
	for (int i = 0; i < 5; i++) {
		wr = wr_init((uint64_t)i, MR_WR_RDMA_WRITE);
		wr.send_flags = i == 4 ? MR_SEND_SIGNALED : 0;
		sge(&wr, src, 8, ms);
		wr.rdma.remote_addr = (uint64_t)(uintptr_t)dst;
		wr.rdma.rkey = mr_memreg_rkey(md);
		tw_post_send(w, 0, &wr);
	}
	tw_pump(w, false, 0);
	tw_poll(w->s[0].scq, 1, &wc);
	assert_int_equal(wc.wr_id, 4);
	assert_memory_equal(dst, src, 8);
	tw_destroy(w);
}

/* max_rd_atomic bounds outstanding READs; the in-flight cap bounds request packets. */
static void test_depth_and_window(void **state)
{
	struct tw_cfg c;
	struct tw *w;
	uint8_t *buf = calloc(1, 65536), *rb = calloc(1, 65536);
	struct mr_memreg *ml, *mr;
	struct mr_send_wr wr;
	struct mr_tx_pkt tx;
	struct mr_wc wc[4];
	int n = 0;

	(void)state;
	tw_default_cfg(&c);
	c.max_rd_atomic = 2;
	c.max_inflight = 8;
	c.mtu = 256;
	w = tw_create(&c);
	ml = tw_reg(w, 0, buf, 65536, MR_ACCESS_LOCAL_WRITE);
	mr = tw_reg(w, 1, rb, 65536, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_READ |
				     MR_ACCESS_REMOTE_WRITE);
	for (int i = 0; i < 4; i++) {
		wr = wr_init((uint64_t)i, MR_WR_RDMA_READ);
		sge(&wr, buf + i * 16, 16, ml);
		wr.rdma.remote_addr = (uint64_t)(uintptr_t)rb;
		wr.rdma.rkey = mr_memreg_rkey(mr);
		tw_post_send(w, 0, &wr);
	}
	while (mr_ctx_tx(w->s[0].ctx, 0, &tx) == 1)
		n++;
	assert_int_equal(n, 2); /* IBA 11.2.4.2 initiator depth */
	tw_destroy(w);

	w = tw_create(&c);
	ml = tw_reg(w, 0, buf, 65536, 0);
	mr = tw_reg(w, 1, rb, 65536, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE);
	wr = wr_init(1, MR_WR_RDMA_WRITE);
	sge(&wr, buf, 20 * 256, ml);
	wr.rdma.remote_addr = (uint64_t)(uintptr_t)rb;
	wr.rdma.rkey = mr_memreg_rkey(mr);
	tw_post_send(w, 0, &wr);
	n = 0;
	while (mr_ctx_tx(w->s[0].ctx, 0, &tx) == 1)
		n++;
	assert_int_equal(n, 8);
	/* The responder ACKs every 16 packets without AckReq, so the window keeps moving. */
	tw_fill(buf, 65536, 9);
	tw_destroy(w);

	w = tw_create(&c);
	ml = tw_reg(w, 0, buf, 65536, 0);
	mr = tw_reg(w, 1, rb, 65536, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE);
	wr = wr_init(1, MR_WR_RDMA_WRITE);
	sge(&wr, buf, 60 * 256, ml);
	wr.rdma.remote_addr = (uint64_t)(uintptr_t)rb;
	wr.rdma.rkey = mr_memreg_rkey(mr);
	tw_post_send(w, 0, &wr);
	tw_pump(w, true, 1000000000ull);
	tw_poll(w->s[0].scq, 1, wc);
	assert_int_equal(wc[0].status, MR_WC_SUCCESS);
	assert_memory_equal(rb, buf, 60 * 256);
	assert_int_equal(tw_stats(w, 0).retransmits, 0);
	tw_destroy(w);
	free(buf);
	free(rb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_send_segmented),
		cmocka_unit_test(test_send_variants),
		cmocka_unit_test(test_write),
		cmocka_unit_test(test_read),
		cmocka_unit_test(test_atomics),
		cmocka_unit_test(test_unsignaled),
		cmocka_unit_test(test_write_frames_icrc),
		cmocka_unit_test(test_depth_and_window),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
