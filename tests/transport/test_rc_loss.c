/* SPDX-License-Identifier: MIT
 * Loss recovery over the in-test wire: PSN sequence NAK + go-back-N, PSN wrap, ACK timeout,
 * READ re-issue from the first missing response, duplicate READ/atomic, implied and coalesced
 * ACKs, RNR NAK and its retry limit, retry exhaustion on a dead link.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rc_harness.h"
#include "transport/rc_internal.h"

#define SEC 1000000000ull

/* A dropped middle packet of an 8-packet WRITE: one sequence NAK, resend from the lost PSN. */
static void test_drop_middle_go_back_n(void **state)
{
	struct tw_cfg c;
	struct tw *w;
	uint8_t src[2048], dst[2048];
	struct mr_memreg *ms, *md;
	struct mr_send_wr wr;
	struct mr_qp_stats a, b;
	struct mr_wc wc;

	(void)state;
	tw_default_cfg(&c);
	c.mtu = 256;
	w = tw_create(&c);
	tw_fill(src, sizeof(src), 4);
	memset(dst, 0, sizeof(dst));
	ms = tw_reg(w, 0, src, sizeof(src), 0);
	md = tw_reg(w, 1, dst, sizeof(dst), MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE);
	wr = tw_wr(1, MR_WR_RDMA_WRITE, src, 2048, ms);
	wr.rdma.remote_addr = (uint64_t)(uintptr_t)dst;
	wr.rdma.rkey = mr_memreg_rkey(md);
	tw_post_send(w, 0, &wr);
	w->act[0][3] = TW_DROP; /* PSN 103 */
	tw_pump(w, true, SEC);

	assert_memory_equal(dst, src, 2048);
	tw_poll(w->s[0].scq, 1, &wc);
	assert_int_equal(wc.status, MR_WC_SUCCESS);
	a = tw_stats(w, 0);
	b = tw_stats(w, 1);
	assert_int_equal(b.out_of_sequence, 4);   /* PSNs 104..107 */
	assert_int_equal(b.seq_naks_sent, 1);     /* once per sequence error */
	assert_int_equal(a.seq_naks_rcvd, 1);
	assert_int_equal(a.retransmits, 5);       /* 103..107 again */
	assert_int_equal(a.timeouts, 0);
	assert_int_equal(tw_count_syndrome(w, 1, MR_AETH_NAK | MR_NAK_PSN_SEQ_ERR), 1);
	/* The resent run starts mid-message with the right opcode, PSN and payload. */
	assert_int_equal(w->sent[0], 13);
	assert_int_equal(w->log[0][8].psn, 103);
	assert_int_equal(w->log[0][8].opcode, MR_OP_RC_WRITE_MIDDLE);
	assert_int_equal(w->log[0][12].opcode, MR_OP_RC_WRITE_LAST);
	tw_destroy(w);
}

/* PSNs start just below 2^24: a 10-packet SEND crosses the wrap and loses PSN 0x000000. */
static void test_psn_wrap_with_drop(void **state)
{
	struct tw_cfg c;
	struct tw *w;
	uint8_t src[2560], dst[2560];
	struct mr_memreg *ms, *md;
	struct mr_send_wr wr;
	struct mr_wc wc;

	(void)state;
	tw_default_cfg(&c);
	c.mtu = 256;
	c.psn[0] = 0xfffffd;
	c.psn[1] = 0xffffff;
	w = tw_create(&c);
	tw_fill(src, sizeof(src), 5);
	memset(dst, 0, sizeof(dst));
	ms = tw_reg(w, 0, src, sizeof(src), 0);
	md = tw_reg(w, 1, dst, sizeof(dst), MR_ACCESS_LOCAL_WRITE);
	tw_post_recv(w, 1, 1, dst, sizeof(dst), md);
	wr = tw_wr(7, MR_WR_SEND, src, 2560, ms);
	tw_post_send(w, 0, &wr);
	w->act[0][3] = TW_DROP; /* PSN 0x000000 */
	tw_pump(w, true, SEC);
	assert_int_equal(w->log[0][2].psn, 0xffffff);
	assert_int_equal(w->log[0][3].psn, 0);
	assert_memory_equal(dst, src, 2560);
	tw_poll(w->s[1].rcq, 1, &wc);
	assert_int_equal(wc.byte_len, 2560);
	tw_poll(w->s[0].scq, 1, &wc);
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.status, MR_WC_SUCCESS);
	assert_int_equal(tw_stats(w, 0).retransmits, 7);
	assert_int_equal(tw_stats(w, 1).seq_naks_sent, 1);
	/* A B->A message also wraps (B starts at 0xffffff) and a READ crosses it. */
	{
		uint8_t rsrc[1024], rdst[1024];
		struct mr_memreg *mrs = tw_reg(w, 0, rsrc, sizeof(rsrc), MR_ACCESS_REMOTE_READ);
		struct mr_memreg *mrd = tw_reg(w, 1, rdst, sizeof(rdst), MR_ACCESS_LOCAL_WRITE);

		tw_fill(rsrc, sizeof(rsrc), 6);
		wr = tw_wr(8, MR_WR_RDMA_READ, rdst, 1024, mrd);
		wr.rdma.remote_addr = (uint64_t)(uintptr_t)rsrc;
		wr.rdma.rkey = mr_memreg_rkey(mrs);
		tw_post_send(w, 1, &wr);
		tw_pump(w, true, SEC);
		tw_poll(w->s[1].scq, 1, &wc);
		assert_int_equal(wc.status, MR_WC_SUCCESS);
		assert_memory_equal(rdst, rsrc, 1024);
	}
	tw_destroy(w);
}

/* One 600-byte WRITE (MTU 256: PSN 100..102, AckReq on the last) with a 4.194 ms Local ACK
 * Timeout, posted on a fresh wire. */
static struct tw *write600(uint8_t src[600], uint8_t dst[600], uint32_t seed)
{
	struct tw_cfg c;
	struct tw *w;
	struct mr_memreg *ms, *md;
	struct mr_send_wr wr;

	tw_default_cfg(&c);
	c.mtu = 256;
	c.timeout = 10;
	w = tw_create(&c);
	tw_fill(src, 600, seed);
	ms = tw_reg(w, 0, src, 600, 0);
	md = tw_reg(w, 1, dst, 600, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE);
	wr = tw_wr(1, MR_WR_RDMA_WRITE, src, 600, ms);
	wr.rdma.remote_addr = (uint64_t)(uintptr_t)dst;
	wr.rdma.rkey = mr_memreg_rkey(md);
	tw_post_send(w, 0, &wr);
	return w;
}

/* The only ACK is lost: local ACK timeout, resend, the responder sees duplicates and re-ACKs. */
static void test_ack_timeout(void **state)
{
	struct tw *w;
	uint8_t src[600], dst[600];
	struct mr_wc wc;
	uint64_t t0;

	(void)state;
	w = write600(src, dst, 7);
	w->act[1][0] = TW_DROP;
	t0 = w->now;
	tw_pump(w, false, 0);
	assert_int_equal(mr_ctx_next_expiry(w->s[0].ctx), t0 + mr_ack_timeout_ns(10));
	tw_pump(w, true, SEC);
	tw_poll(w->s[0].scq, 1, &wc);
	assert_int_equal(wc.status, MR_WC_SUCCESS);
	assert_int_equal(w->now, t0 + 4096ull * 1024);
	assert_int_equal(tw_stats(w, 0).timeouts, 1);
	assert_int_equal(tw_stats(w, 0).retransmits, 3);
	assert_int_equal(tw_stats(w, 1).duplicate_requests, 3);
	assert_int_equal(tw_count_op(w, 1, MR_OP_RC_ACK), 2);
	assert_memory_equal(dst, src, 600);
	tw_destroy(w);
}

/* The only ACK is lost and so is the resent LAST packet (the one with AckReq): the duplicates
 * without AckReq are re-acknowledged with the most recent PSN (C9-105, as rxe), so one timeout
 * recovers the whole message. */
static void test_duplicates_reacked(void **state)
{
	struct tw *w;
	uint8_t src[600], dst[600];
	struct mr_wc wc;
	uint32_t i;

	(void)state;
	w = write600(src, dst, 9);
	w->act[1][0] = TW_DROP; /* the ACK of 102 */
	w->act[0][5] = TW_DROP; /* the resent WRITE LAST (PSN 102, AckReq) */
	tw_pump(w, true, SEC);
	tw_poll(w->s[0].scq, 1, &wc);
	assert_int_equal(wc.status, MR_WC_SUCCESS);
	assert_memory_equal(dst, src, 600);
	assert_int_equal(tw_stats(w, 0).timeouts, 1);
	assert_int_equal(w->sent[0], 6);
	assert_false(w->log[0][3].ackreq);
	assert_int_equal(tw_stats(w, 1).duplicate_requests, 2);
	/* the first ACK after the loss acknowledges PSN 102 although 102 was not resent */
	for (i = 1; i < w->sent[1]; i++)
		if (w->log[1][i].opcode == MR_OP_RC_ACK)
			break;
	assert_true(i < w->sent[1]);
	assert_int_equal(w->log[1][i].psn, 102);
	tw_destroy(w);
}

/* A lost READ response: the READ is re-issued from the first missing PSN with address and
 * length advanced; the responder re-executes it as a duplicate. */
static void test_read_reissue(void **state)
{
	struct tw_cfg c;
	struct tw *w;
	uint8_t remote[2048], local[2048];
	struct mr_memreg *mr, *ml;
	struct mr_send_wr wr;
	struct mr_wc wc;
	uint32_t i;

	(void)state;
	tw_default_cfg(&c);
	c.mtu = 512;
	w = tw_create(&c);
	tw_fill(remote, sizeof(remote), 8);
	memset(local, 0, sizeof(local));
	mr = tw_reg(w, 1, remote, sizeof(remote), MR_ACCESS_REMOTE_READ);
	ml = tw_reg(w, 0, local, sizeof(local), MR_ACCESS_LOCAL_WRITE);
	wr = tw_wr(3, MR_WR_RDMA_READ, local, 2048, ml);
	wr.rdma.remote_addr = (uint64_t)(uintptr_t)remote;
	wr.rdma.rkey = mr_memreg_rkey(mr);
	tw_post_send(w, 0, &wr);
	w->act[1][1] = TW_DROP; /* PSN 101 of 100..103 */
	tw_pump(w, true, SEC);
	assert_memory_equal(local, remote, 2048);
	tw_poll(w->s[0].scq, 1, &wc);
	assert_int_equal(wc.status, MR_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 2048);
	/* The second READ request starts at PSN 101, 512 bytes in, 1536 long. */
	for (i = 1; i < w->sent[0]; i++)
		if (w->log[0][i].opcode == MR_OP_RC_READ_REQUEST)
			break;
	assert_true(i < w->sent[0]);
	assert_int_equal(w->log[0][i].psn, 101);
	assert_int_equal(w->log[0][i].reth.va, (uint64_t)(uintptr_t)remote + 512);
	assert_int_equal(w->log[0][i].reth.dlen, 1536);
	assert_int_equal(tw_stats(w, 1).duplicate_requests, 1);
	assert_int_equal(tw_stats(w, 0).implied_naks, 1);
	assert_int_equal(tw_stats(w, 0).retransmits, 1);
	tw_destroy(w);
}

/* A duplicated READ request is re-executed; the still-queued responses to the original are
 * abandoned (the duplicate supersedes them), so the requester sees exactly one stream. */
static void test_duplicate_read(void **state)
{
	struct tw_cfg c;
	struct tw *w;
	uint8_t remote[300], local[300];
	struct mr_memreg *mr, *ml;
	struct mr_send_wr wr;
	struct mr_wc wc;

	(void)state;
	tw_default_cfg(&c);
	c.mtu = 256;
	w = tw_create(&c);
	tw_fill(remote, sizeof(remote), 9);
	mr = tw_reg(w, 1, remote, sizeof(remote), MR_ACCESS_REMOTE_READ);
	ml = tw_reg(w, 0, local, sizeof(local), MR_ACCESS_LOCAL_WRITE);
	wr = tw_wr(3, MR_WR_RDMA_READ, local, 300, ml);
	wr.rdma.remote_addr = (uint64_t)(uintptr_t)remote;
	wr.rdma.rkey = mr_memreg_rkey(mr);
	tw_post_send(w, 0, &wr);
	w->act[0][0] = TW_DUP;
	tw_pump(w, true, SEC);
	assert_int_equal(tw_stats(w, 1).duplicate_requests, 1);
	assert_int_equal(tw_count_op(w, 1, MR_OP_RC_READ_RESPONSE_FIRST), 1);
	assert_int_equal(tw_count_op(w, 1, MR_OP_RC_READ_RESPONSE_LAST), 1);
	assert_memory_equal(local, remote, 300);
	tw_poll(w->s[0].scq, 1, &wc);
	assert_int_equal(wc.status, MR_WC_SUCCESS);
	assert_int_equal(tw_stats(w, 0).dropped, 0);
	tw_destroy(w);
}

/* Lost atomic ACK: the resent FETCH_ADD is answered from the saved result, memory changes
 * once, and the requester sees the original value. */
static void test_duplicate_atomic(void **state)
{
	struct tw_cfg c;
	struct tw *w;
	uint64_t remote = 40, local = 0;
	struct mr_memreg *mr, *ml;
	struct mr_send_wr wr;
	struct mr_wc wc;

	(void)state;
	tw_default_cfg(&c);
	c.timeout = 8;
	w = tw_create(&c);
	mr = tw_reg(w, 1, &remote, 8, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_ATOMIC);
	ml = tw_reg(w, 0, &local, 8, MR_ACCESS_LOCAL_WRITE);
	wr = tw_wr(4, MR_WR_ATOMIC_FETCH_AND_ADD, &local, 8, ml);
	wr.atomic.remote_addr = (uint64_t)(uintptr_t)&remote;
	wr.atomic.rkey = mr_memreg_rkey(mr);
	wr.atomic.compare_add = 2;
	tw_post_send(w, 0, &wr);
	w->act[1][0] = TW_DROP;
	tw_pump(w, true, SEC);
	assert_int_equal(remote, 42);
	assert_int_equal(local, 40);
	tw_poll(w->s[0].scq, 1, &wc);
	assert_int_equal(wc.status, MR_WC_SUCCESS);
	assert_int_equal(wc.opcode, MR_WC_FETCH_ADD);
	assert_int_equal(tw_stats(w, 1).duplicate_requests, 1);
	assert_int_equal(tw_stats(w, 0).timeouts, 1);
	assert_int_equal(tw_count_op(w, 1, MR_OP_RC_ATOMIC_ACK), 2);
	assert_int_equal(w->log[1][1].atmack, 40);
	tw_destroy(w);
}

/* Implied ACK (IBA 9.7.5.1): the WRITE's ACK is lost, but the READ response behind it
 * acknowledges the WRITE: both complete in order, without a timeout. Coalescing: of three
 * SEND ACKs only the last arrives and completes all three. */
static void test_implied_and_coalesced_ack(void **state)
{
	struct tw_cfg c;
	struct tw *w;
	uint8_t buf[64], rbuf[64];
	struct mr_memreg *ml, *mr;
	struct mr_send_wr wr;
	struct mr_wc wc[3];

	(void)state;
	tw_default_cfg(&c);
	w = tw_create(&c);
	tw_fill(rbuf, sizeof(rbuf), 10);
	ml = tw_reg(w, 0, buf, sizeof(buf), MR_ACCESS_LOCAL_WRITE);
	mr = tw_reg(w, 1, rbuf, sizeof(rbuf), MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_READ |
					     MR_ACCESS_REMOTE_WRITE);
	wr = tw_wr(1, MR_WR_RDMA_WRITE, buf, 8, ml);
	wr.rdma.remote_addr = (uint64_t)(uintptr_t)(rbuf + 32);
	wr.rdma.rkey = mr_memreg_rkey(mr);
	tw_fill(buf, 8, 11);
	tw_post_send(w, 0, &wr);
	w->act[1][0] = TW_DROP; /* the WRITE's ACK */
	tw_pump(w, false, 0);
	wr = tw_wr(2, MR_WR_RDMA_READ, buf + 16, 16, ml);
	wr.rdma.remote_addr = (uint64_t)(uintptr_t)rbuf;
	wr.rdma.rkey = mr_memreg_rkey(mr);
	tw_post_send(w, 0, &wr);
	tw_pump(w, false, 0);
	tw_poll(w->s[0].scq, 2, wc);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[0].status, MR_WC_SUCCESS);
	assert_int_equal(wc[1].wr_id, 2);
	assert_memory_equal(buf + 16, rbuf, 16);
	assert_memory_equal(rbuf + 32, buf, 8);
	assert_int_equal(tw_stats(w, 0).timeouts, 0);
	assert_int_equal(tw_stats(w, 0).retransmits, 0);
	assert_int_equal(mr_ctx_next_expiry(w->s[0].ctx), UINT64_MAX);

	/* Three SENDs in one burst complete in SQ order (ACK coalescing proper is asserted in
	 * test_coalesced_ack_only). */
	{
		struct mr_memreg *mrr = tw_reg(w, 1, rbuf, sizeof(rbuf), MR_ACCESS_LOCAL_WRITE);

		for (int i = 0; i < 3; i++) {
			tw_post_recv(w, 1, 50 + (uint64_t)i, rbuf + 16 * i, 16, mrr);
			wr = tw_wr(10 + (uint64_t)i, MR_WR_SEND, buf, 4, ml);
			tw_post_send(w, 0, &wr);
		}
		tw_pump(w, false, 0);
		tw_poll(w->s[0].scq, 3, wc);
		for (int i = 0; i < 3; i++) {
			assert_int_equal(wc[i].wr_id, 10 + (uint64_t)i);
			assert_int_equal(wc[i].status, MR_WC_SUCCESS);
		}
	}
	tw_destroy(w);
}

/* Three SENDs reach B before B transmits anything: B coalesces them into one ACK for the last
 * PSN, and that ACK alone completes all three in order. */
static void test_coalesced_ack_only(void **state)
{
	struct tw_cfg c;
	struct tw *w;
	uint8_t buf[16], rbuf[48];
	struct mr_memreg *ml, *mr;
	struct mr_send_wr wr;
	struct mr_tx_pkt tx;
	struct mr_pkt pkt;
	struct mr_wc wc[3];

	(void)state;
	tw_default_cfg(&c);
	w = tw_create(&c);
	ml = tw_reg(w, 0, buf, sizeof(buf), 0);
	mr = tw_reg(w, 1, rbuf, sizeof(rbuf), MR_ACCESS_LOCAL_WRITE);
	for (int i = 0; i < 3; i++) {
		tw_post_recv(w, 1, 50 + (uint64_t)i, rbuf + 16 * i, 16, mr);
		wr = tw_wr(10 + (uint64_t)i, MR_WR_SEND, buf, 4, ml);
		tw_post_send(w, 0, &wr);
	}
	for (int i = 0; i < 3; i++) {
		assert_int_equal(mr_ctx_tx(w->s[0].ctx, 0, &tx), 1);
		memset(&pkt, 0, sizeof(pkt));
		pkt.hdr = tx.hdr;
		pkt.payload = tx.iov[0].base;
		pkt.paylen = tx.paylen;
		mr_ctx_rx(w->s[1].ctx, &pkt, 0);
	}
	assert_int_equal(mr_ctx_tx(w->s[1].ctx, 0, &tx), 1);
	assert_int_equal(tx.hdr.opcode, MR_OP_RC_ACK);
	assert_int_equal(tx.hdr.psn, 102);
	assert_int_equal(tx.hdr.aeth.msn, 3);
	memset(&pkt, 0, sizeof(pkt));
	pkt.hdr = tx.hdr;
	mr_ctx_rx(w->s[0].ctx, &pkt, 0);
	assert_int_equal(mr_ctx_tx(w->s[1].ctx, 0, &tx), 0);
	tw_poll(w->s[0].scq, 3, wc);
	for (int i = 0; i < 3; i++)
		assert_int_equal(wc[i].wr_id, 10 + (uint64_t)i);
	tw_destroy(w);
}

/* SEND with no receive posted: RNR NAK with min_rnr_timer, then success once a receive is
 * posted and the RNR timer (IBA table 45) has run. */
static void test_rnr_then_success(void **state)
{
	struct tw_cfg c;
	struct tw *w;
	uint8_t src[100], dst[100];
	struct mr_memreg *ms, *md;
	struct mr_send_wr wr;
	struct mr_wc wc;
	uint64_t t0;

	(void)state;
	tw_default_cfg(&c);
	c.min_rnr_timer = 14; /* 1.28 ms */
	c.rnr_retry = 3;
	w = tw_create(&c);
	tw_fill(src, sizeof(src), 12);
	ms = tw_reg(w, 0, src, sizeof(src), 0);
	md = tw_reg(w, 1, dst, sizeof(dst), MR_ACCESS_LOCAL_WRITE);
	wr = tw_wr(1, MR_WR_SEND, src, 100, ms);
	tw_post_send(w, 0, &wr);
	t0 = w->now;
	tw_pump(w, false, 0);
	assert_int_equal(tw_count_syndrome(w, 1, MR_AETH_RNR_NAK | 14), 1);
	assert_int_equal(tw_stats(w, 1).rnr_naks_sent, 1);
	assert_int_equal(tw_stats(w, 0).rnr_naks_rcvd, 1);
	assert_int_equal(mr_ctx_next_expiry(w->s[0].ctx), t0 + 1280000);
	tw_post_recv(w, 1, 9, dst, sizeof(dst), md);
	tw_pump(w, true, SEC);
	assert_int_equal(w->now, t0 + 1280000);
	tw_poll(w->s[1].rcq, 1, &wc);
	assert_int_equal(wc.byte_len, 100);
	assert_memory_equal(dst, src, 100);
	tw_poll(w->s[0].scq, 1, &wc);
	assert_int_equal(wc.status, MR_WC_SUCCESS);
	assert_int_equal(tw_stats(w, 0).retransmits, 1);
	tw_destroy(w);
}

/* rnr_retry = 2: the third RNR NAK fails the SEND with RNR_RETRY_EXC_ERR. */
static void test_rnr_retry_exceeded(void **state)
{
	struct tw_cfg c;
	struct tw *w;
	uint8_t src[10];
	struct mr_memreg *ms;
	struct mr_send_wr wr;
	struct mr_wc wc[2];

	(void)state;
	tw_default_cfg(&c);
	c.rnr_retry = 2;
	w = tw_create(&c);
	ms = tw_reg(w, 0, src, sizeof(src), 0);
	wr = tw_wr(1, MR_WR_SEND, src, 10, ms);
	tw_post_send(w, 0, &wr);
	wr.wr_id = 2;
	tw_post_send(w, 0, &wr);
	tw_pump(w, true, SEC);
	assert_int_equal(tw_stats(w, 0).rnr_naks_rcvd, 3);
	tw_poll(w->s[0].scq, 2, wc);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[0].status, MR_WC_RNR_RETRY_EXC_ERR);
	assert_int_equal(wc[1].wr_id, 2);
	assert_int_equal(wc[1].status, MR_WC_WR_FLUSH_ERR);
	assert_int_equal(mr_qp_state(w->s[0].qp), MR_QPS_ERR);
	tw_destroy(w);
}

/* Dead link: retry_cnt = 3 -> 4 transmissions, 4 timeouts, RETRY_EXC_ERR, the rest flushed. */
static void test_retry_exceeded_dead_link(void **state)
{
	struct tw_cfg c;
	struct tw *w;
	uint8_t src[10];
	struct mr_memreg *ms;
	struct mr_send_wr wr;
	struct mr_wc wc[3];

	(void)state;
	tw_default_cfg(&c);
	c.retry_cnt = 3;
	c.timeout = 12;
	w = tw_create(&c);
	ms = tw_reg(w, 0, src, sizeof(src), MR_ACCESS_LOCAL_WRITE);
	for (int i = 0; i < 3; i++) {
		wr = tw_wr(1 + (uint64_t)i, i == 1 ? MR_WR_RDMA_READ : MR_WR_RDMA_WRITE, src, 10, ms);
		wr.rdma.remote_addr = 0x1000;
		wr.rdma.rkey = 0x100;
		if (i == 1)
			wr.sg_list[0].lkey = mr_memreg_lkey(ms);
		tw_post_send(w, 0, &wr);
	}
	w->drop_all[0] = true;
	tw_pump(w, true, 100 * SEC);
	assert_int_equal(tw_stats(w, 0).timeouts, 4);
	assert_int_equal(w->sent[0], 4 * 3);
	assert_int_equal(w->now, 4 * mr_ack_timeout_ns(12));
	assert_int_equal(mr_qp_state(w->s[0].qp), MR_QPS_ERR);
	tw_poll(w->s[0].scq, 3, wc);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[0].status, MR_WC_RETRY_EXC_ERR);
	assert_int_equal(wc[1].wr_id, 2);
	assert_int_equal(wc[1].status, MR_WC_WR_FLUSH_ERR);
	assert_int_equal(wc[1].opcode, MR_WC_RDMA_READ);
	assert_int_equal(wc[2].wr_id, 3);
	assert_int_equal(wc[2].status, MR_WC_WR_FLUSH_ERR);
	assert_int_equal(mr_ctx_next_expiry(w->s[0].ctx), UINT64_MAX);
	tw_destroy(w);
}

/* Reordered request packets: the early one draws one NAK; the transfer still completes. */
static void test_reorder(void **state)
{
	struct tw_cfg c;
	struct tw *w;
	uint8_t src[1024], dst[1024];
	struct mr_memreg *ms, *md;
	struct mr_send_wr wr;
	struct mr_wc wc;

	(void)state;
	tw_default_cfg(&c);
	c.mtu = 256;
	w = tw_create(&c);
	tw_fill(src, sizeof(src), 13);
	ms = tw_reg(w, 0, src, sizeof(src), 0);
	md = tw_reg(w, 1, dst, sizeof(dst), MR_ACCESS_LOCAL_WRITE);
	tw_post_recv(w, 1, 1, dst, sizeof(dst), md);
	wr = tw_wr(1, MR_WR_SEND, src, 1024, ms);
	tw_post_send(w, 0, &wr);
	w->act[0][1] = TW_HOLD; /* PSN 101 arrives after 102 */
	tw_pump(w, true, SEC);
	assert_memory_equal(dst, src, 1024);
	tw_poll(w->s[0].scq, 1, &wc);
	assert_int_equal(wc.status, MR_WC_SUCCESS);
	/* 102 arrives early (NAK for 101); once 101 lands, the next early packet (103, since
	 * 102 was dropped) is a new sequence error with its own NAK. */
	assert_int_equal(tw_stats(w, 1).out_of_sequence, 2);
	assert_int_equal(tw_stats(w, 1).seq_naks_sent, 2);
	assert_int_equal(tw_stats(w, 0).seq_naks_rcvd, 2);
	tw_poll(w->s[1].rcq, 1, &wc);
	assert_int_equal(wc.byte_len, 1024);
	tw_destroy(w);
}

/* Tail loss: the last (AckReq) packet is lost; the responder's delayed ACK covers PSNs
 * 100..102 after RC_DELAYED_ACK_NS, so the ACK timeout resends only PSN 103. */
static void test_tail_loss_delayed_ack(void **state)
{
	struct tw_cfg c;
	struct tw *w;
	uint8_t src[1024], dst[1024];
	struct mr_memreg *ms, *md;
	struct mr_send_wr wr;
	struct mr_wc wc;

	(void)state;
	tw_default_cfg(&c);
	c.mtu = 256;
	c.timeout = 10;
	w = tw_create(&c);
	tw_fill(src, sizeof(src), 14);
	ms = tw_reg(w, 0, src, sizeof(src), 0);
	md = tw_reg(w, 1, dst, sizeof(dst), MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE);
	wr = tw_wr(1, MR_WR_RDMA_WRITE, src, 1024, ms);
	wr.rdma.remote_addr = (uint64_t)(uintptr_t)dst;
	wr.rdma.rkey = mr_memreg_rkey(md);
	tw_post_send(w, 0, &wr);
	w->act[0][3] = TW_DROP;
	tw_pump(w, false, 0);
	assert_int_equal(w->sent[1], 0); /* no AckReq seen yet: no ACK */
	assert_int_equal(mr_ctx_next_expiry(w->s[1].ctx), RC_DELAYED_ACK_NS);
	tw_pump(w, true, SEC);
	assert_int_equal(w->log[1][0].opcode, MR_OP_RC_ACK);
	assert_int_equal(w->log[1][0].psn, 102);
	assert_int_equal(w->log[0][4].psn, 103);
	assert_int_equal(w->log[0][4].opcode, MR_OP_RC_WRITE_LAST);
	assert_int_equal(tw_stats(w, 0).retransmits, 1);
	assert_int_equal(tw_stats(w, 0).timeouts, 1);
	assert_int_equal(tw_stats(w, 1).duplicate_requests, 0);
	assert_memory_equal(dst, src, 1024);
	tw_poll(w->s[0].scq, 1, &wc);
	assert_int_equal(wc.status, MR_WC_SUCCESS);
	tw_destroy(w);
}

/* The delayed ACK runs from the last packet of a run, not from its first: within a steady stream
 * without AckReq (packets closer than RC_DELAYED_ACK_NS) it never fires, and RC_ACK_EVERY paces
 * the ACKs; it fires once the run pauses. (Run from the first packet, it fired every 2 us inside
 * a 3 Mpps stream: one ACK per 6 packets instead of per 16.) */
static void test_delayed_ack_restarts(void **state)
{
	struct tw_cfg c;
	struct tw *w;
	struct mr_roce_hdrs h;
	struct mr_tx_pkt tx;
	uint8_t dst[1024], pay[256];
	struct mr_memreg *md;

	(void)state;
	tw_default_cfg(&c);
	c.mtu = 256;
	w = tw_create(&c);
	md = tw_reg(w, 1, dst, sizeof(dst), MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE);
	memset(pay, 0x5a, sizeof(pay));
	memset(&h, 0, sizeof(h));
	h.pkey = 0xffff;
	h.dqpn = mr_qp_num(w->s[1].qp);
	h.opcode = MR_OP_RC_WRITE_FIRST;
	h.psn = 100;
	h.reth.va = (uint64_t)(uintptr_t)dst;
	h.reth.rkey = mr_memreg_rkey(md);
	h.reth.dlen = sizeof(dst);
	tw_inject(w, 1, &h, pay, sizeof(pay));
	assert_int_equal(mr_ctx_next_expiry(w->s[1].ctx), RC_DELAYED_ACK_NS);
	h.opcode = MR_OP_RC_WRITE_MIDDLE;
	for (uint32_t i = 1; i < 3; i++) {
		w->now = i * (RC_DELAYED_ACK_NS - 1);
		assert_true(mr_ctx_next_expiry(w->s[1].ctx) > w->now);
		h.psn = 100 + i;
		tw_inject(w, 1, &h, pay, sizeof(pay));
		assert_int_equal(mr_ctx_next_expiry(w->s[1].ctx), w->now + RC_DELAYED_ACK_NS);
	}
	assert_int_equal(mr_ctx_tx(w->s[1].ctx, w->now, &tx), 0); /* nothing to ACK yet */
	w->now += RC_DELAYED_ACK_NS;
	mr_ctx_on_timer(w->s[1].ctx, w->now);
	assert_int_equal(mr_ctx_tx(w->s[1].ctx, w->now, &tx), 1);
	assert_int_equal(tx.hdr.opcode, MR_OP_RC_ACK);
	assert_int_equal(tx.hdr.psn, 102);
	assert_memory_equal(dst + 512, pay, sizeof(pay));
	tw_destroy(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drop_middle_go_back_n),
		cmocka_unit_test(test_psn_wrap_with_drop),
		cmocka_unit_test(test_ack_timeout),
		cmocka_unit_test(test_duplicates_reacked),
		cmocka_unit_test(test_read_reissue),
		cmocka_unit_test(test_duplicate_read),
		cmocka_unit_test(test_duplicate_atomic),
		cmocka_unit_test(test_implied_and_coalesced_ack),
		cmocka_unit_test(test_coalesced_ack_only),
		cmocka_unit_test(test_rnr_then_success),
		cmocka_unit_test(test_rnr_retry_exceeded),
		cmocka_unit_test(test_retry_exceeded_dead_link),
		cmocka_unit_test(test_reorder),
		cmocka_unit_test(test_tail_loss_delayed_ack),
		cmocka_unit_test(test_delayed_ack_restarts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
