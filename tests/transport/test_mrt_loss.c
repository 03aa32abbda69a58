/* SPDX-License-Identifier: MIT
 * MetaRoCE loss recovery over the in-test wire: selective retransmission of exactly the lost
 * PSN, tail loss recovered by TLP before the RTO, lost ACKs covered by later cumulative ACKs,
 * RTO backoff doubling and retry exhaustion, READ re-request of missing responses, atomics
 * executed once, RNR, a black-holed entropy avoided, and CE echo / DCQCN CNPs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rc_harness.h"
#include "transport/rc_internal.h"

#define MS 1000000ull

struct wfix {
	struct tw *w;
	uint8_t *src, *dst;
	uint32_t len;
};

static void write_setup(struct wfix *f, const struct tw_cfg *c, uint32_t len)
{
	struct mr_memreg *ms, *md;
	struct mr_send_wr wr;

	f->w = tw_create(c);
	f->len = len;
	f->src = malloc(len);
	f->dst = calloc(1, len);
	assert_non_null(f->src);
	assert_non_null(f->dst);
	tw_fill(f->src, len, len);
	ms = tw_reg(f->w, 0, f->src, len, 0);
	md = tw_reg(f->w, 1, f->dst, len, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE);
	wr = tw_wr(1, MR_WR_RDMA_WRITE, f->src, len, ms);
	wr.rdma.remote_addr = (uint64_t)(uintptr_t)f->dst;
	wr.rdma.rkey = mr_memreg_rkey(md);
	tw_post_send(f->w, 0, &wr);
}

static void write_done(struct wfix *f, enum mr_wc_status st)
{
	struct mr_wc wc;

	if (st == MR_WC_SUCCESS)
		assert_memory_equal(f->dst, f->src, f->len);
	tw_poll(f->w->s[0].scq, 1, &wc);
	assert_int_equal(wc.status, st);
	tw_destroy(f->w);
	free(f->src);
	free(f->dst);
}

/* PSN 103 of a 16-packet WRITE is lost: exactly that PSN is resent, once. */
static void test_drop_middle_selective(void **state)
{
	struct tw_cfg c;
	struct wfix f;
	struct mr_qp_stats a, b;
	uint32_t n103 = 0;

	(void)state;
	tw_metaroce_cfg(&c, 8);
	write_setup(&f, &c, 16 * 1024);
	f.w->act[0][3] = TW_DROP;
	tw_pump(f.w, true, 100 * MS);
	a = tw_stats(f.w, 0);
	b = tw_stats(f.w, 1);
	assert_int_equal(a.sack_retransmits, 1);
	assert_int_equal(a.retransmits, 1);
	assert_int_equal(a.spurious_retransmits, 0);
	assert_int_equal(a.timeouts, 0);
	assert_int_equal(a.tlp_probes, 0);
	assert_int_equal(b.duplicate_requests, 0);
	assert_int_equal(f.w->sent[0], 17);
	for (uint32_t i = 0; i < f.w->sent[0]; i++)
		n103 += f.w->log[0][i].psn == 103;
	assert_int_equal(n103, 2);
	assert_int_equal(f.w->log[0][16].psn, 103);
	assert_true(f.w->log[0][16].mreth.flags & MR_MRETH_RETX);
	assert_int_equal(f.w->log[0][16].mreth.offset, 3 * 1024);
	write_done(&f, MR_WC_SUCCESS);
}

/* The last packet of a WRITE is lost: a tail-loss probe (RFC 8985 7) recovers it long before
 * the RTO would have fired. */
static void test_tail_loss_tlp(void **state)
{
	struct tw_cfg c;
	struct wfix f;
	struct mr_qp_stats a;

	(void)state;
	tw_metaroce_cfg(&c, 4);
	write_setup(&f, &c, 16 * 1024);
	f.w->act[0][15] = TW_DROP; /* PSN 115, the WRITE LAST */
	tw_pump(f.w, true, 100 * MS);
	a = tw_stats(f.w, 0);
	assert_int_equal(a.tlp_probes, 1);
	assert_int_equal(a.timeouts, 0);
	assert_int_equal(a.retransmits, 1);
	assert_int_equal(f.w->sent[0], 17);
	assert_int_equal(f.w->log[0][16].psn, 115);
	assert_int_equal(f.w->log[0][16].mreth.flags & (MR_MRETH_TLP | MR_MRETH_RETX),
			 MR_MRETH_TLP | MR_MRETH_RETX);
	/* Recovered within the TLP floor (+ delayed ACK), far below any RTO (>= 100 us). */
	assert_true(f.w->log_ts[0][16] > 0);
	assert_true(f.w->log_ts[0][16] <= 12000);
	assert_true(f.w->now < 100000);
	assert_true(f.w->now < mr_ack_timeout_ns(c.timeout));
	write_done(&f, MR_WC_SUCCESS);
}

/* The ACK of a first WRITE is lost; the ACK of a second one acknowledges both cumulatively:
 * nothing is resent, both complete in order. */
static void test_lost_acks_cumulative(void **state)
{
	struct tw_cfg c;
	struct wfix f;
	struct mr_qp_stats a;
	struct mr_send_wr wr;
	struct mr_memreg *ms, *md;
	struct mr_wc wc[2];
	static uint8_t src2[4096], dst2[4096];

	(void)state;
	tw_metaroce_cfg(&c, 4);
	write_setup(&f, &c, 8 * 1024);
	f.w->act[1][0] = TW_DROP;
	tw_pump(f.w, false, 0);
	assert_int_equal(tw_count_op(f.w, 1, MR_OP_MRC_ACK), 1);
	assert_int_equal(mr_cq_poll(f.w->s[0].scq, 1, wc), 0);
	tw_fill(src2, sizeof(src2), 3);
	ms = tw_reg(f.w, 0, src2, sizeof(src2), 0);
	md = tw_reg(f.w, 1, dst2, sizeof(dst2), MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE);
	wr = tw_wr(2, MR_WR_RDMA_WRITE, src2, sizeof(src2), ms);
	wr.rdma.remote_addr = (uint64_t)(uintptr_t)dst2;
	wr.rdma.rkey = mr_memreg_rkey(md);
	tw_post_send(f.w, 0, &wr);
	tw_pump(f.w, false, 0);
	assert_int_equal(tw_count_op(f.w, 1, MR_OP_MRC_ACK), 2);
	assert_int_equal(f.w->log[1][1].psn, 100 + 8 + 4 - 1); /* cumulative over both */
	a = tw_stats(f.w, 0);
	assert_int_equal(a.retransmits, 0);
	assert_int_equal(a.acks_rcvd, 1);
	assert_memory_equal(dst2, src2, sizeof(src2));
	assert_memory_equal(f.dst, f.src, f.len);
	tw_poll(f.w->s[0].scq, 2, wc);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[1].wr_id, 2);
	tw_destroy(f.w);
	free(f.src);
	free(f.dst);
}

/* Before any RTT sample the probe leaves at the initial PTO (100 us) plus the delayed-ACK
 * allowance for a single packet in flight (RFC 8985 7.2). */
#define MRT_PROBE_NS (100000u + 2000u)

/* A dead link: a probe, then RTOs. Before any RTT sample the RTO is the Local ACK Timeout R
 * itself and stays there (rack.c mrt_rto_deadline caps the backoff at max(RTO, R / 4)), as
 * IBA's RC timer does; after retry_cnt timeouts, (retry_cnt + 1) R after the flight started, the
 * WQE fails with RETRY_EXC_ERR (IBA 9.7.6.1.3). */
static void test_rto_backoff_retry_exc(void **state)
{
	struct tw_cfg c;
	struct wfix f;
	struct mr_qp_stats a;
	uint64_t r = mr_ack_timeout_ns(10), t[8];
	uint32_t n = 0;

	(void)state;
	tw_metaroce_cfg(&c, 4);
	c.timeout = 10; /* 4.19 ms */
	c.retry_cnt = 3;
	write_setup(&f, &c, 1024);
	f.w->drop_all[0] = true;
	tw_pump(f.w, true, 1000 * MS);
	a = tw_stats(f.w, 0);
	assert_int_equal(a.tlp_probes, 1);
	assert_int_equal(a.timeouts, 4);
	for (uint32_t i = 0; i < f.w->sent[0] && n < 8; i++)
		t[n++] = f.w->log_ts[0][i];
	/* original, TLP, 3 RTO resends (the 4th timeout fails the QP) */
	assert_int_equal(n, 5);
	assert_int_equal(t[0], 0);
	assert_true(t[1] > 0 && t[1] < r);
	/* RFC 8985 7.3: the probe re-arms the RTO, so the first RTO counts from the probe */
	assert_int_equal(t[1], MRT_PROBE_NS);
	assert_int_equal(t[2] - t[1], r);
	assert_int_equal(t[3] - t[2], r);
	assert_int_equal(t[4] - t[3], r);
	assert_int_equal(f.w->now - t[4], r);
	assert_true(f.w->now >= (c.retry_cnt + 1) * r);
	assert_int_equal(mr_qp_state(f.w->s[0].qp), MR_QPS_ERR);
	write_done(&f, MR_WC_RETRY_EXC_ERR);
}

/* A loss burst that keeps hitting the tail: the last packet of a WRITE and its next 15 copies
 * are lost (per-packet Gilbert-Elliott in the bad state does this to a lone probe with p =
 * 0.75^k at mean burst 4). With an RTT estimate the RTO backs off exponentially (RFC 6298
 * 5.5) but never past a quarter of the Local ACK Timeout, and each repeated timeout resends one
 * packet, the oldest unacknowledged (RFC 6298 5.4), so the 17th copy completes the WRITE
 * well inside the (retry_cnt + 1) Local ACK Timeouts budget. Uncapped, the 16 copies would
 * need 100 us x 2^15, past that budget: RETRY_EXC_ERR. */
static void test_rto_backoff_capped(void **state)
{
	struct tw_cfg c;
	struct wfix f;
	struct mr_qp_stats a;
	uint64_t ack_to = mr_ack_timeout_ns(14), cap = ack_to / 4, gap, prev = 0;
	uint32_t doubled = 0, capped = 0;

	(void)state;
	tw_metaroce_cfg(&c, 4);
	write_setup(&f, &c, 4 * 1024);
	for (uint32_t i = 3; i < 3 + 16; i++)
		f.w->act[0][i] = TW_DROP;
	tw_pump(f.w, true, 2000 * MS);
	a = tw_stats(f.w, 0);
	print_message("tail burst: %u packets, %lu timeouts, %lu probes, done at %.1f ms\n",
		      f.w->sent[0], (unsigned long)a.timeouts, (unsigned long)a.tlp_probes,
		      (double)f.w->now / 1e6);
	/* 4 originals, then exactly one copy of PSN 103 per probe or timeout */
	assert_int_equal(f.w->sent[0], 3 + 17);
	for (uint32_t i = 3; i < f.w->sent[0]; i++)
		assert_int_equal(f.w->log[0][i].psn, 103);
	assert_int_equal(a.tlp_probes, 1);
	assert_int_equal(a.timeouts, 15);
	for (uint32_t i = 5; i < f.w->sent[0]; i++) {
		gap = f.w->log_ts[0][i] - f.w->log_ts[0][i - 1];
		assert_true(gap <= cap);
		assert_true(gap >= prev);
		doubled += prev > 0 && gap == 2 * prev;
		capped += gap == cap;
		prev = gap;
	}
	assert_true(doubled >= 3);
	assert_true(capped >= 3);
	assert_true(f.w->now < (uint64_t)(c.retry_cnt + 1) * ack_to);
	assert_int_equal(mr_qp_state(f.w->s[0].qp), MR_QPS_RTS);
	write_done(&f, MR_WC_SUCCESS);
}

/* Entropy 3 black-holes every packet: after the first losses it is cooled down, the rest of the
 * transfer avoids it, data arrives intact. */
static void test_blackhole_path_avoided(void **state)
{
	struct tw_cfg c;
	struct wfix f;
	struct mr_qp_stats a;
	uint32_t on3, total;

	(void)state;
	tw_metaroce_cfg(&c, 8);
	c.max_inflight = 16;
	write_setup(&f, &c, 512 * 1024);
	f.w->drop_path[0][0] = 1ull << 3;
	tw_pump(f.w, true, 1000 * MS);
	a = tw_stats(f.w, 0);
	on3 = tw_count_path(f.w, 0, 3);
	total = f.w->sent[0];
	print_message("blackhole: %u of %u packets on path 3, sack_retx %lu tlp %lu rto %lu\n", on3,
		      total, (unsigned long)a.sack_retransmits, (unsigned long)a.tlp_probes,
		      (unsigned long)a.timeouts);
	assert_true(total >= 512);
	assert_true(on3 * 100 < total * 2); /* < 2 % instead of 12.5 % */
	assert_int_equal(a.sack_retransmits + a.tlp_probes, on3);
	assert_int_equal(a.timeouts, 0);
	write_done(&f, MR_WC_SUCCESS);
}

/* One READ response of a chunk is lost: only that byte range is re-requested (MRETH RETX). */
static void test_read_lost_response(void **state)
{
	static uint8_t rsrc[64 * 1024], ldst[64 * 1024];
	struct tw_cfg c;
	struct tw *w;
	struct mr_memreg *mrs, *mld;
	struct mr_send_wr wr;
	struct mr_wc wc;
	uint32_t reqs = 0, resp = 0;

	(void)state;
	tw_metaroce_cfg(&c, 4);
	w = tw_create(&c);
	tw_fill(rsrc, sizeof(rsrc), 77);
	memset(ldst, 0, sizeof(ldst));
	mrs = tw_reg(w, 1, rsrc, sizeof(rsrc), MR_ACCESS_REMOTE_READ);
	mld = tw_reg(w, 0, ldst, sizeof(ldst), MR_ACCESS_LOCAL_WRITE);
	wr = tw_wr(5, MR_WR_RDMA_READ, ldst, sizeof(ldst), mld);
	wr.rdma.remote_addr = (uint64_t)(uintptr_t)rsrc;
	wr.rdma.rkey = mr_memreg_rkey(mrs);
	tw_post_send(w, 0, &wr);
	w->act[1][10] = TW_DROP; /* response for bytes 10240..11263 */
	tw_pump(w, true, 100 * MS);
	assert_memory_equal(ldst, rsrc, sizeof(rsrc));
	tw_poll(w->s[0].scq, 1, &wc);
	assert_int_equal(wc.status, MR_WC_SUCCESS);
	for (uint32_t i = 0; i < w->sent[0]; i++)
		if (w->log[0][i].opcode == MR_OP_MRC_READ_REQUEST) {
			reqs++;
			if (reqs == 2) {
				assert_true(w->log[0][i].mreth.flags & MR_MRETH_RETX);
				assert_int_equal(w->log[0][i].mreth.offset, 10240);
				assert_int_equal(w->log[0][i].reth.dlen, 1024);
				assert_int_equal(w->log[0][i].reth.va,
						 (uint64_t)(uintptr_t)rsrc + 10240);
			}
		}
	for (uint32_t i = 0; i < w->sent[1]; i++)
		resp += w->log_paylen[1][i] > 0;
	assert_int_equal(reqs, 2);
	assert_int_equal(resp, 65); /* 64 + the one resent */
	tw_destroy(w);
}

/* The atomic ACK is lost: the requester resends the request, the responder answers from the
 * saved result without executing it again (IBA 9.4.5). */
static void test_atomic_ack_lost_exactly_once(void **state)
{
	static uint64_t cell = 40;
	uint64_t res = 0;
	struct tw_cfg c;
	struct tw *w;
	struct mr_memreg *mc, *mres;
	struct mr_send_wr wr;
	struct mr_wc wc;

	(void)state;
	tw_metaroce_cfg(&c, 4);
	w = tw_create(&c);
	mc = tw_reg(w, 1, &cell, 8, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_ATOMIC);
	mres = tw_reg(w, 0, &res, 8, MR_ACCESS_LOCAL_WRITE);
	wr = tw_wr(9, MR_WR_ATOMIC_FETCH_AND_ADD, &res, 8, mres);
	wr.atomic.remote_addr = (uint64_t)(uintptr_t)&cell;
	wr.atomic.rkey = mr_memreg_rkey(mc);
	wr.atomic.compare_add = 2;
	tw_post_send(w, 0, &wr);
	w->act[1][0] = TW_DROP;
	tw_pump(w, true, 100 * MS);
	tw_poll(w->s[0].scq, 1, &wc);
	assert_int_equal(wc.status, MR_WC_SUCCESS);
	assert_int_equal(cell, 42);
	assert_int_equal(res, 40);
	assert_int_equal(tw_stats(w, 1).duplicate_requests, 1);
	assert_int_equal(tw_count_op(w, 0, MR_OP_MRC_FETCH_ADD), 2);
	assert_int_equal(tw_count_op(w, 1, MR_OP_MRC_ATOMIC_ACK), 2);
	tw_destroy(w);
}

/* No receive posted: RNR NAK; after the RNR timer the SEND is resent and lands. */
static void test_rnr_then_recv(void **state)
{
	static uint8_t src[3000], dst[3000];
	struct tw_cfg c;
	struct tw *w;
	struct mr_memreg *ms, *md;
	struct mr_send_wr wr;
	struct mr_wc wc;

	(void)state;
	tw_metaroce_cfg(&c, 4);
	w = tw_create(&c);
	tw_fill(src, sizeof(src), 8);
	ms = tw_reg(w, 0, src, sizeof(src), 0);
	md = tw_reg(w, 1, dst, sizeof(dst), MR_ACCESS_LOCAL_WRITE);
	wr = tw_wr(3, MR_WR_SEND, src, sizeof(src), ms);
	tw_post_send(w, 0, &wr);
	tw_pump(w, false, 0);
	assert_true(tw_stats(w, 1).rnr_naks_sent >= 1);
	assert_int_equal(tw_stats(w, 0).rnr_naks_rcvd, tw_stats(w, 1).rnr_naks_sent);
	tw_post_recv(w, 1, 44, dst, sizeof(dst), md);
	tw_pump(w, true, 100 * MS);
	assert_memory_equal(dst, src, sizeof(src));
	tw_poll(w->s[1].rcq, 1, &wc);
	assert_int_equal(wc.wr_id, 44);
	assert_int_equal(wc.byte_len, sizeof(src));
	tw_poll(w->s[0].scq, 1, &wc);
	assert_int_equal(wc.status, MR_WC_SUCCESS);
	assert_int_equal(tw_stats(w, 0).timeouts, 0);
	tw_destroy(w);
}

/* Duplicated packets are counted, re-ACKed and never placed twice; PSNs wrap at 2^24 with a
 * loss right at the wrap. */
static void test_dup_and_psn_wrap(void **state)
{
	struct tw_cfg c;
	struct wfix f;
	struct mr_qp_stats a, b;

	(void)state;
	tw_metaroce_cfg(&c, 4);
	c.psn[0] = 0xfffffd;
	write_setup(&f, &c, 8 * 1024);
	f.w->act[0][1] = TW_DUP;
	f.w->act[0][3] = TW_DROP; /* PSN 0 */
	tw_pump(f.w, true, 100 * MS);
	a = tw_stats(f.w, 0);
	b = tw_stats(f.w, 1);
	assert_int_equal(f.w->log[0][3].psn, 0);
	assert_int_equal(b.duplicate_requests, 1);
	assert_int_equal(a.sack_retransmits, 1);
	assert_int_equal(f.w->log[0][8].psn, 0);
	assert_int_equal(f.w->log[1][f.w->sent[1] - 1].psn, 4); /* cumulative across the wrap */
	write_done(&f, MR_WC_SUCCESS);
}

/* CE-marked data: the responder counts it and echoes it (ECE flag, SACKETH ce_count). */
static void test_ce_echo(void **state)
{
	struct tw_cfg c;
	struct wfix f;
	uint32_t ce = 0, ece = 0;

	(void)state;
	tw_metaroce_cfg(&c, 4);
	write_setup(&f, &c, 64 * 1024);
	f.w->ce_every[0] = 4;
	tw_pump(f.w, true, 100 * MS);
	for (uint32_t i = 0; i < f.w->sent[1]; i++) {
		ce += f.w->log[1][i].sack.ce_count;
		ece += (f.w->log[1][i].mreth.flags & MR_MRETH_ECE) != 0;
	}
	assert_int_equal(tw_stats(f.w, 1).ce_rcvd, 16);
	assert_int_equal(ce, 16);
	/* ACKs coalesce while the requester's burst is delivered: at least one echoes ECE. */
	assert_true(ece >= 1 && ece <= tw_count_op(f.w, 1, MR_OP_MRC_ACK));
	write_done(&f, MR_WC_SUCCESS);
}

/* Plain RC with DCQCN: the responder (notification point) answers CE marks with CNPs
 * (opcode 0x81, at most one per 50 us), the requester (reaction point) cuts its rate and is
 * paced by it (A17.9.3; Zhu et al., SIGCOMM'15). */
static void test_rc_dcqcn_cnp(void **state)
{
	struct tw_cfg c;
	struct wfix f;
	struct mr_qp_stats a, b;

	(void)state;
	tw_default_cfg(&c);
	c.cc = MR_CC_DCQCN;
	c.cc_params.line_rate_bps = 100000000000ull;
	c.cc_params.base_rtt_ns = 10000;
	c.cc_params.mtu = 1024;
	write_setup(&f, &c, 1 << 20);
	f.w->ce_every[0] = 2;
	tw_pump(f.w, true, 1000 * MS);
	a = tw_stats(f.w, 0);
	b = tw_stats(f.w, 1);
	print_message("dcqcn: cnps %lu, final rate %lu bps, %lu ns for 1 MiB, timeouts %lu\n",
		      (unsigned long)b.cnps_sent, (unsigned long)f.w->s[0].qp->cc.rate_bps,
		      (unsigned long)f.w->now, (unsigned long)a.timeouts);
	assert_int_equal(b.ce_rcvd, 512);
	assert_true(b.cnps_sent >= 1);
	assert_int_equal(a.cnps_rcvd, b.cnps_sent);
	assert_int_equal(tw_count_op(f.w, 1, MR_OP_CNP), b.cnps_sent);
	assert_int_equal(a.timeouts, 0);
	assert_int_equal(a.retransmits, 0);
	/* Paced at the cut rates: 1 MiB took far longer than at line rate (84 us). */
	assert_true(f.w->now >= 10 * (1ull << 20) * 8 * 1000000000ull / c.cc_params.line_rate_bps);
	/* Still plain RC on the wire. */
	assert_int_equal(tw_count_op(f.w, 0, MR_OP_MRC_WRITE_MIDDLE), 0);
	write_done(&f, MR_WC_SUCCESS);
}

/* MetaRoCE with its own controller: ECN echo cuts the window, the transfer is paced and
 * completes byte-exact. */
static void test_metaroce_cc(void **state)
{
	struct tw_cfg c;
	struct wfix f;
	uint64_t cwnd0;

	(void)state;
	tw_metaroce_cfg(&c, 16);
	c.cc = MR_CC_METAROCE;
	c.cc_params.line_rate_bps = 100000000000ull;
	c.cc_params.base_rtt_ns = 10000;
	c.cc_params.mtu = 1024;
	write_setup(&f, &c, 1 << 20);
	cwnd0 = f.w->s[0].qp->cc.cwnd_bytes;
	f.w->ce_every[0] = 3;
	tw_pump(f.w, true, 1000 * MS);
	print_message("metaroce cc: cwnd %lu -> %lu, %lu ns for 1 MiB, retx %lu\n",
		      (unsigned long)cwnd0, (unsigned long)f.w->s[0].qp->cc.cwnd_bytes,
		      (unsigned long)f.w->now, (unsigned long)tw_stats(f.w, 0).retransmits);
	assert_true(f.w->s[0].qp->cc.cwnd_bytes < cwnd0);
	assert_true(f.w->now >= (1ull << 20) * 8 * 1000000000ull / c.cc_params.line_rate_bps);
	assert_int_equal(tw_stats(f.w, 0).retransmits, 0);
	write_done(&f, MR_WC_SUCCESS);
}

/* 1 % random loss under 32-packet reordering over 16 entropies, 4 MiB: data exact, every lost
 * packet resent once, spurious retransmissions < 1 % of packets. */
static void test_random_loss_reorder(void **state)
{
	struct tw_cfg c;
	struct wfix f;
	struct mr_qp_stats a, b;
	uint32_t drops = 0, x = 12345;

	(void)state;
	tw_metaroce_cfg(&c, 16);
	c.max_inflight = 128;
	write_setup(&f, &c, 4 << 20);
	f.w->shuffle[0] = 32;
	for (uint32_t i = 0; i < TW_MAX_LOG; i++) {
		x = x * 1103515245u + 12345u;
		if ((x >> 16) % 100 == 0) {
			f.w->act[0][i] = TW_DROP;
			drops += i < 4096 + 64;
		}
	}
	tw_pump(f.w, true, 1000 * MS);
	a = tw_stats(f.w, 0);
	b = tw_stats(f.w, 1);
	print_message("random loss: %u sent, sack_retx %lu tlp %lu rto %lu spurious %lu dup %lu, %lu ns\n",
		      f.w->sent[0], (unsigned long)a.sack_retransmits, (unsigned long)a.tlp_probes,
		      (unsigned long)a.timeouts, (unsigned long)a.spurious_retransmits,
		      (unsigned long)b.duplicate_requests, (unsigned long)f.w->now);
	assert_true(a.retransmits >= drops - 2);
	assert_true(b.duplicate_requests * 100 < f.w->sent[0]);
	assert_true(a.spurious_retransmits * 100 < f.w->sent[0]);
	assert_int_equal(a.timeouts, 0);
	write_done(&f, MR_WC_SUCCESS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drop_middle_selective),
		cmocka_unit_test(test_tail_loss_tlp),
		cmocka_unit_test(test_lost_acks_cumulative),
		cmocka_unit_test(test_rto_backoff_capped),
		cmocka_unit_test(test_rto_backoff_retry_exc),
		cmocka_unit_test(test_blackhole_path_avoided),
		cmocka_unit_test(test_read_lost_response),
		cmocka_unit_test(test_atomic_ack_lost_exactly_once),
		cmocka_unit_test(test_rnr_then_recv),
		cmocka_unit_test(test_dup_and_psn_wrap),
		cmocka_unit_test(test_ce_echo),
		cmocka_unit_test(test_rc_dcqcn_cnp),
		cmocka_unit_test(test_metaroce_cc),
		cmocka_unit_test(test_random_loss_reorder),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
