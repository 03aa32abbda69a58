/* SPDX-License-Identifier: MIT
 * The MetaRoCE requester's tuning behaviours, asserted exactly with the in-test wire:
 *  - in-flight cap: max(configured, measured min RTT) x rate + 1/8 + 2 packets (IRN BDP-FC),
 *    bounded by max_inflight (mrt_inflight_cap);
 *  - D-SACK-like evidence: the responder ACKs a duplicate at once echoing its timestamp; the
 *    requester counts a resend whose earlier copy's timestamp comes back as spurious, once,
 *    and widens the reorder window to the lateness + 1/8 (capped), reset after 16 rounds;
 *  - AckReq when congestion control will hold the next packet back, ACKed at once;
 *  - the tail-loss probe re-arms the RTO (RFC 8985 7.3);
 *  - a window-limited flow repairs a hole by RACK, without probe or RTO.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rc_harness.h"
#include "transport/mrt_internal.h"

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
	for (uint32_t i = 0; i < len; i++)
		f->src[i] = (uint8_t)(i * 13 + (i >> 9));
	ms = tw_reg(f->w, 0, f->src, len, 0);
	md = tw_reg(f->w, 1, f->dst, len, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = MR_WR_RDMA_WRITE;
	wr.send_flags = MR_SEND_SIGNALED;
	wr.num_sge = 1;
	wr.sg_list[0].addr = (uint64_t)(uintptr_t)f->src;
	wr.sg_list[0].length = len;
	wr.sg_list[0].lkey = mr_memreg_lkey(ms);
	wr.rdma.remote_addr = (uint64_t)(uintptr_t)f->dst;
	wr.rdma.rkey = mr_memreg_rkey(md);
	tw_post_send(f->w, 0, &wr);
}

static void write_done(struct wfix *f)
{
	struct mr_wc wc;

	assert_memory_equal(f->dst, f->src, f->len);
	tw_poll(f->w->s[0].scq, 1, &wc);
	assert_int_equal(wc.status, MR_WC_SUCCESS);
	tw_destroy(f->w);
	free(f->src);
	free(f->dst);
}

static struct mrt_req *req(struct tw *w)
{
	return &w->s[0].qp->mrt->req;
}

/* (a) 100 Gb/s x 10 us = 125000 B = 30 packets of 4096 B (+3 +2 = 35); a measured min RTT of
 * 20 us doubles the product (61 + 7 + 2 = 70), a smaller one never shrinks it; max_inflight
 * bounds it; without a rate the ring bound alone applies. */
static void test_inflight_cap(void **state)
{
	struct tw_cfg c;
	struct tw *w;
	struct mrt_req *r;

	(void)state;
	tw_metaroce_cfg(&c, 4);
	c.mtu = 4096;
	c.max_inflight = 1000;
	c.cc_params.line_rate_bps = 100000000000ull;
	c.cc_params.base_rtt_ns = 10000;
	w = tw_create(&c);
	r = req(w);
	assert_int_equal(r->cap_pkts, 1000);
	assert_false(r->have_rtt);
	assert_int_equal(mrt_inflight_cap(w->s[0].qp), 35);
	r->have_rtt = true;
	r->min_rtt = 20000;
	assert_int_equal(mrt_inflight_cap(w->s[0].qp), 70);
	r->min_rtt = 5000;
	assert_int_equal(mrt_inflight_cap(w->s[0].qp), 35);
	r->min_rtt = 1000000; /* 1 ms: 3051 + 381 + 2, above max_inflight */
	assert_int_equal(mrt_inflight_cap(w->s[0].qp), 1000);
	r->bdp_rate_bps = 0;
	assert_int_equal(mrt_inflight_cap(w->s[0].qp), 1000);
	tw_destroy(w);

	/* On the wire: with no ACK coming back, exactly the cap leaves (then a probe). */
	{
		struct wfix f;

		tw_metaroce_cfg(&c, 4);
		c.mtu = 4096;
		c.max_inflight = 1000;
		c.cc_params.line_rate_bps = 100000000000ull;
		c.cc_params.base_rtt_ns = 10000;
		write_setup(&f, &c, 64 * 4096);
		f.w->drop_all[1] = true; /* every ACK lost */
		tw_pump(f.w, false, 0);
		assert_int_equal(f.w->sent[0], 35);
		assert_int_equal(req(f.w)->pipe, 35);
		f.w->drop_all[1] = false;
		tw_pump(f.w, true, 100 * MS);
		write_done(&f);
	}
}

/* (b) responder side: a duplicate request is ACKed at once, echoing its own timestamp. */
static void test_dup_acked_at_once(void **state)
{
	struct tw_cfg c;
	struct wfix f;
	struct mr_roce_hdrs h;
	struct mr_qp_stats b0, b1;
	uint32_t acks;

	(void)state;
	tw_metaroce_cfg(&c, 4);
	write_setup(&f, &c, 4 * 1024);
	tw_pump(f.w, true, 10 * MS);
	assert_int_equal(f.w->sent[0], 4);
	b0 = tw_stats(f.w, 1);
	acks = f.w->sent[1];
	/* replay the second packet (PSN 101, a WRITE MIDDLE) with a new timestamp */
	h = f.w->log[0][1];
	assert_int_equal(h.psn, 101);
	h.mreth.ts = 0x12345u;
	h.ackreq = false;
	tw_inject(f.w, 1, &h, f.src + 1024, 1024);
	tw_pump(f.w, false, 0);
	b1 = tw_stats(f.w, 1);
	assert_int_equal(b1.duplicate_requests, b0.duplicate_requests + 1);
	assert_int_equal(f.w->sent[1], acks + 1);
	assert_int_equal(f.w->log[1][acks].opcode, mr_opcode_to_metaroce(MR_OP_RC_ACK));
	assert_int_equal(f.w->log[1][acks].psn, 103); /* cumulative: the whole WRITE */
	assert_int_equal(f.w->log[1][acks].mreth.ts, 0x12345u);
	write_done(&f);
}

/* (b) requester side: an ACK echoing the timestamp of a copy that was resent later proves that
 * copy arrived: the resend is counted spurious once; the reorder window becomes the lateness
 * (echo time - first send - min RTT) + 1/8, capped at MRT_REO_EXT_MAX_NS, and resets after 16
 * loss-declaration rounds without new evidence. */
static void test_dup_echo_spurious(void **state)
{
	struct tw_cfg c;
	struct tw *w;
	struct mr_qp *qp;
	struct mrt_req *r;
	struct mrt_txe *e;
	uint64_t t0 = 1 * MS, t1, now;

	(void)state;
	tw_metaroce_cfg(&c, 4);
	w = tw_create(&c);
	qp = w->s[0].qp;
	r = req(w);
	/* a pretend flight: PSNs 100..103 sent, RTT known */
	r->have_rtt = true;
	r->srtt = 8000;
	r->min_rtt = 4000;
	r->nxt = 104;
	for (uint32_t p = 100; p < 104; p++) {
		e = mrt_sb(qp, p);
		e->flags = MRT_TX_SENT;
		e->xmit_ts = t0;
	}
	assert_int_equal(mrt_reo_wnd(qp), 1000); /* reo_mult 1 x min_rtt / 4 */
	/* PSN 101 resent at t1 */
	t1 = t0 + 6000;
	e = mrt_sb(qp, 101);
	e->prev_ts = e->xmit_ts;
	mrt_rack_resent(qp, 101, e->prev_ts);
	e->xmit_ts = t1;
	e->flags |= MRT_TX_RETX;
	/* an ACK echoing the resend's own timestamp proves nothing */
	now = t1 + 4000;
	mrt_rack_dup_echo(qp, mrt_ts(t1), now);
	assert_int_equal(qp->stats.spurious_retransmits, 0);
	/* an ACK echoing an unrelated timestamp neither */
	mrt_rack_dup_echo(qp, mrt_ts(t0) + 7, now);
	assert_int_equal(qp->stats.spurious_retransmits, 0);
	/* the first copy's timestamp comes back 30 us after it left: 26 us late */
	now = t0 + 30000;
	mrt_rack_dup_echo(qp, mrt_ts(t0), now);
	assert_int_equal(qp->stats.spurious_retransmits, 1);
	assert_true(e->flags & MRT_TX_SPUR);
	assert_int_equal(r->reo_extent, 26000);
	assert_int_equal(r->reo_persist, 16);
	assert_int_equal(r->reo_mult, 2); /* RFC 8985 6.2.4: +1 per round trip with evidence */
	assert_int_equal(mrt_reo_wnd(qp), 26000 + 26000 / 8);
	/* the record is consumed: the same echo again counts nothing */
	mrt_rack_dup_echo(qp, mrt_ts(t0), now + 100);
	assert_int_equal(qp->stats.spurious_retransmits, 1);
	/* a later, larger lateness is capped at MRT_REO_EXT_MAX_NS */
	e = mrt_sb(qp, 102);
	e->prev_ts = e->xmit_ts;
	mrt_rack_resent(qp, 102, e->prev_ts);
	e->xmit_ts = now;
	e->flags |= MRT_TX_RETX;
	mrt_rack_dup_echo(qp, mrt_ts(t0), t0 + 100000);
	assert_int_equal(qp->stats.spurious_retransmits, 2);
	assert_int_equal(r->reo_extent, 96000);
	assert_int_equal(mrt_reo_wnd(qp), MRT_REO_EXT_MAX_NS);
	tw_destroy(w);
}

/* (b) the widened window persists for 16 loss-declaration rounds (at most one per srtt)
 * without new evidence, then resets to min_rtt / 4. Driven by real losses on the wire: 16
 * WRITEs one after the other, each losing its second packet (one round each). */
static void test_reo_window_resets(void **state)
{
	struct tw_cfg c;
	struct tw *w;
	struct mrt_req *r;
	struct mr_memreg *ms, *md;
	uint8_t *src = malloc(4096), *dst = calloc(1, 4096);
	struct mr_wc wc;

	(void)state;
	assert_non_null(src);
	assert_non_null(dst);
	tw_metaroce_cfg(&c, 4);
	w = tw_create(&c);
	r = req(w);
	ms = tw_reg(w, 0, src, 4096, 0);
	md = tw_reg(w, 1, dst, 4096, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE);
	/* widen it as a spurious resend would, to 9 us: below the 12 us PTO, so RACK finds each
	 * loss before a probe would */
	r->reo_extent = 8000;
	r->reo_mult = 3;
	r->reo_persist = 16;
	for (uint32_t k = 0; k < 16; k++) {
		struct mr_send_wr wr;
		uint64_t t0 = w->now;

		for (uint32_t i = 0; i < 4096; i++)
			src[i] = (uint8_t)(k * 31 + i);
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = k;
		wr.opcode = MR_WR_RDMA_WRITE;
		wr.send_flags = MR_SEND_SIGNALED;
		wr.num_sge = 1;
		wr.sg_list[0].addr = (uint64_t)(uintptr_t)src;
		wr.sg_list[0].length = 4096;
		wr.sg_list[0].lkey = mr_memreg_lkey(ms);
		wr.rdma.remote_addr = (uint64_t)(uintptr_t)dst;
		wr.rdma.rkey = mr_memreg_rkey(md);
		w->act[0][w->sent[0] + 1] = TW_DROP;
		tw_post_send(w, 0, &wr);
		tw_pump(w, true, 100 * MS);
		tw_poll(w->s[0].scq, 1, &wc);
		assert_int_equal(wc.status, MR_WC_SUCCESS);
		assert_memory_equal(dst, src, 4096);
		assert_int_equal(r->reo_persist, 15 - k);
		if (k < 15) {
			/* still widened: the loss was found one window (9 us) after the send */
			assert_int_equal(r->reo_extent, 8000);
			assert_int_equal(w->now - t0, 8000 + 8000 / 8);
		}
	}
	assert_int_equal(tw_stats(w, 0).sack_retransmits, 16);
	assert_int_equal(tw_stats(w, 0).spurious_retransmits, 0);
	assert_int_equal(r->reo_extent, 0);
	assert_int_equal(r->reo_mult, 1);
	assert_int_equal(mrt_reo_wnd(w->s[0].qp), MRT_REO_MIN_NS);
	tw_destroy(w);
	free(src);
	free(dst);
}

/* (c) mrt_cc_blocked_after: a full window or a pacing gap of at least gap_ns ahead. */
static void test_cc_blocked_after(void **state)
{
	struct tw_cfg c;
	struct tw *w;
	struct mr_qp *qp;

	(void)state;
	tw_metaroce_cfg(&c, 4);
	w = tw_create(&c);
	qp = w->s[0].qp;
	assert_false(mrt_cc_blocked_after(qp, 0, 1 << 30, 0)); /* no CC: never */
	tw_destroy(w);

	tw_metaroce_cfg(&c, 4);
	c.mtu = 4096;
	c.cc = MR_CC_METAROCE;
	c.cc_params.line_rate_bps = 100000000000ull;
	c.cc_params.base_rtt_ns = 10000;
	c.cc_params.mtu = 4096;
	w = tw_create(&c);
	qp = w->s[0].qp;
	qp->cc.cwnd_bytes = 5 * 4096;
	qp->cc.next_send_ns = 1000;
	assert_false(mrt_cc_blocked_after(qp, 0, 4 * 4096, 1001));
	assert_true(mrt_cc_blocked_after(qp, 0, 4 * 4096 + 1, 1001)); /* next MTU overflows */
	assert_true(mrt_cc_blocked_after(qp, 0, 0, 1000));             /* gap 1000 >= 1000 */
	assert_false(mrt_cc_blocked_after(qp, 1, 0, 1000));            /* gap 999 */
	assert_false(mrt_cc_blocked_after(qp, 2000, 0, 0));            /* pacer already open */
	tw_destroy(w);
}

/* (c) on the wire: at 1 Gb/s a 4096 B packet takes 32.8 us, so after every packet the pacer
 * (and the one-packet window: BDP 1250 B) holds the next one back: every packet carries AckReq
 * and the responder answers each at once, at the same virtual time, echoing its timestamp,
 * instead of coalescing them. Without CC the same WRITE asks only on its
 * last packet. */
static void ackreq_run(bool cc, uint32_t *n_req, uint32_t *n_ack)
{
	struct tw_cfg c;
	struct wfix f;

	tw_metaroce_cfg(&c, 4);
	c.mtu = 4096;
	if (cc) {
		c.cc = MR_CC_METAROCE;
		c.cc_params.line_rate_bps = 1000000000ull;
		c.cc_params.base_rtt_ns = 10000;
		c.cc_params.mtu = 4096;
	}
	write_setup(&f, &c, 16 * 4096);
	tw_pump(f.w, true, 1000 * MS);
	assert_int_equal(f.w->sent[0], 16);
	*n_req = 0;
	for (uint32_t i = 0; i < f.w->sent[0]; i++) {
		const struct mr_roce_hdrs *h = &f.w->log[0][i];
		bool found = false;

		assert_int_equal(h->psn, 100 + i);
		if (!h->ackreq)
			continue;
		(*n_req)++;
		for (uint32_t j = 0; j < f.w->sent[1]; j++)
			if (f.w->log_ts[1][j] == f.w->log_ts[0][i] && f.w->log[1][j].psn == h->psn &&
			    f.w->log[1][j].mreth.ts == h->mreth.ts)
				found = true;
		assert_true(found);
	}
	*n_ack = tw_count_op(f.w, 1, mr_opcode_to_metaroce(MR_OP_RC_ACK));
	assert_int_equal(tw_stats(f.w, 0).timeouts, 0);
	write_done(&f);
}

static void test_ackreq_when_blocked(void **state)
{
	uint32_t n_req, n_ack;

	(void)state;
	ackreq_run(true, &n_req, &n_ack);
	assert_int_equal(n_req, 16);
	assert_int_equal(n_ack, 16);
	ackreq_run(false, &n_req, &n_ack);
	assert_int_equal(n_req, 1);
	assert_int_equal(n_ack, 1); /* the wire delivers all 16 before the responder answers */
}

/* RFC 8985 7.3: after the tail-loss probe the RTO is re-armed from the probe. The last packet
 * and the probe are both lost: the RTO resend leaves exactly one RTO (100 us floor) after the
 * probe, not one RTO after the last ACK. */
static void test_tlp_rearms_rto(void **state)
{
	struct tw_cfg c;
	struct wfix f;
	struct mr_qp_stats a;
	uint64_t rto;

	(void)state;
	tw_metaroce_cfg(&c, 4);
	write_setup(&f, &c, 16 * 1024);
	f.w->act[0][15] = TW_DROP; /* PSN 115, the WRITE LAST */
	f.w->act[0][16] = TW_DROP; /* its probe */
	tw_pump(f.w, true, 100 * MS);
	a = tw_stats(f.w, 0);
	assert_int_equal(a.tlp_probes, 1);
	assert_int_equal(a.timeouts, 1);
	assert_int_equal(f.w->sent[0], 18);
	assert_int_equal(f.w->log[0][16].psn, 115);
	assert_true(f.w->log[0][16].mreth.flags & MR_MRETH_TLP);
	assert_int_equal(f.w->log[0][17].psn, 115);
	rto = mrt_rto(f.w->s[0].qp);
	assert_int_equal(rto, MRT_RTO_MIN_NS); /* zero-delay wire: the floor */
	assert_int_equal(f.w->log_ts[0][17] - f.w->log_ts[0][16], MRT_RTO_MIN_NS);
	/* the probe left one PTO (10 us floor + 2 us, one packet in flight) after the last ACK */
	assert_int_equal(f.w->log_ts[0][16] - f.w->log_ts[0][14], MRT_TLP_MIN_NS + MRT_DELACK_NS);
	write_done(&f);
}

/* A window-limited flow (max_inflight 2) with PSN 100 lost: the SACKs of later packets keep the
 * flow going while the hole stays, RACK declares PSN 100 lost one reorder window after a
 * later-sent packet was delivered, and it is resent then: no probe, no RTO. (The wake-up on a
 * SACK-only ACK while a lost packet waits for the window, mrt_req_ack, is exercised by the 32:1
 * incast target: without it flows sat until their RTO.) */
static void test_sack_opens_window_for_lost(void **state)
{
	struct tw_cfg c;
	struct wfix f;
	struct mr_qp_stats a;
	uint32_t i100 = 0;

	(void)state;
	tw_metaroce_cfg(&c, 4);
	c.max_inflight = 2;
	write_setup(&f, &c, 8 * 1024);
	f.w->act[0][0] = TW_DROP;
	tw_pump(f.w, true, 100 * MS);
	a = tw_stats(f.w, 0);
	assert_int_equal(a.timeouts, 0);
	assert_int_equal(a.tlp_probes, 0);
	assert_int_equal(a.sack_retransmits, 1);
	assert_int_equal(f.w->sent[0], 9);
	for (uint32_t i = 1; i < f.w->sent[0]; i++)
		if (f.w->log[0][i].psn == 100)
			i100 = i;
	assert_true(i100 > 0);
	assert_true(f.w->log[0][i100].mreth.flags & MR_MRETH_RETX);
	/* resent as soon as RACK declared it (its window passed), not at an RTO */
	assert_true(f.w->log_ts[0][i100] < MRT_TLP_MIN_NS);
	write_done(&f);
}

/* RACK's cost per ACK (the sent-order list, mrt_internal.h): 2048 WRITE packets through a
 * 1024-packet window with the first one lost, each packet's ACKs returned before the next
 * leaves and the clock standing still, so the hole stays for a whole window of SACK ACKs, each
 * running loss detection over the PSNs between the cumulative and the highest acknowledged
 * one. A scan of that range visited 139 199 entries over the 1150 ACKs here (session 7, before
 * the list: 121 per ACK, the SACK bitmap's 128-PSN reach); the list visits the hole and stops
 * at the first packet sent after the newest delivered one: one per ACK. Then the clock runs:
 * RACK declares the hole, one selective resend, no timeout, the data intact. */
static void test_rack_walk_bounded(void **state)
{
	struct tw_cfg c;
	struct wfix f;
	struct mr_qp_stats a;
	uint64_t walked;
	uint32_t acks;

	(void)state;
	tw_metaroce_cfg(&c, 4);
	c.mtu = 1024;
	c.max_inflight = 1024;
	write_setup(&f, &c, 2048 * 1024);
	f.w->act[0][0] = TW_DROP;
	while (tw_step(f.w, 0))
		while (tw_step(f.w, 1))
			;
	walked = req(f.w)->rack_walked;
	acks = f.w->sent[1];
	print_message("rack: %llu entries visited over %u ACKs, %u packets in flight\n",
		      (unsigned long long)walked, acks, f.w->sent[0]);
	assert_true(acks >= 400);
	assert_int_equal(req(f.w)->una, f.w->s[0].qp->attr.sq_psn); /* the hole is still open */
	assert_true(walked >= acks / 2);
	assert_true(walked <= 2ull * acks);
	tw_pump(f.w, true, 100 * MS);
	a = tw_stats(f.w, 0);
	assert_int_equal(a.sack_retransmits, 1);
	assert_int_equal(a.timeouts, 0);
	assert_true(req(f.w)->t_head == MRT_NIL && req(f.w)->t_tail == MRT_NIL);
	write_done(&f);
}

/* RFC 6298 2.4's G as the hosts' scheduling granularity (rack.c mrt_gran_note): steady 10 us
 * samples keep the RTO at its floor; one 5 ms stall sample sets G to its excursion above min RTT,
 * so that once RTTVAR has forgotten the stall the RTO is still SRTT + G; G halves after one
 * half-life (max(4096 SRTT, 4 local ACK timeouts)) without a larger excursion. */
static void test_rto_learns_stalls(void **state)
{
	struct tw_cfg c;
	struct wfix f;
	struct mr_qp *qp;
	struct mrt_req *r;
	uint64_t t = 1000000, hl;

	(void)state;
	tw_metaroce_cfg(&c, 4);
	write_setup(&f, &c, 4096);
	qp = f.w->s[0].qp;
	r = req(f.w);
	for (int i = 0; i < 64; i++)
		mrt_rtt_sample(qp, 10000, t + (uint64_t)i);
	assert_int_equal(r->min_rtt, 10000);
	assert_int_equal(r->gran, 0);
	assert_int_equal(mrt_rto(qp), MRT_RTO_MIN_NS);
	mrt_rtt_sample(qp, 5000000, t + 100);
	assert_int_equal(r->gran, 4990000);
	assert_true(mrt_rto(qp) >= 4990000 + 10000);
	for (int i = 0; i < 200; i++)
		mrt_rtt_sample(qp, 10000, t + 200 + (uint64_t)i);
	assert_true(4 * r->rttvar < r->gran); /* RTTVAR forgot the stall, G did not */
	assert_int_equal(mrt_rto(qp), r->srtt + 4990000);
	/* one half-life later (the ACK timeout term dominates: 4 x 67 ms) */
	hl = 4096 * r->srtt;
	if (4 * mr_ack_timeout_ns(c.timeout) > hl)
		hl = 4 * mr_ack_timeout_ns(c.timeout);
	assert_int_equal(hl, 4 * mr_ack_timeout_ns(14));
	mrt_rtt_sample(qp, 10000, t + 100 + hl + hl / 2);
	assert_int_equal(r->gran, 4990000 / 2);
	/* a larger excursion replaces it at once */
	mrt_rtt_sample(qp, 8010000, t + 100 + 2 * hl);
	assert_int_equal(r->gran, 8000000);
	tw_pump(f.w, true, 100 * MS);
	write_done(&f);
}

/* Lose a whole flight (A->B dropped), let the RTO fire, and return the write's state. */
static void rto_setup(struct wfix *f, uint32_t *out, uint64_t *cwnd_before, uint64_t *now)
{
	struct tw_cfg c;
	struct mr_qp *qp;
	struct mrt_req *r;

	tw_metaroce_cfg(&c, 4);
	c.cc = MR_CC_METAROCE;
	c.cc_params.line_rate_bps = 100000000000ull;
	c.cc_params.base_rtt_ns = 10000;
	write_setup(f, &c, 16 * 4096);
	f->w->drop_all[0] = true;
	tw_pump(f->w, true, 20000); /* the paced flight leaves (100 Gb/s), no probe yet */
	qp = f->w->s[0].qp;
	r = req(f->w);
	*out = mrt_psn_dist(r->nxt, r->una);
	assert_true(*out > 1);
	assert_int_equal(r->pipe, *out);
	*cwnd_before = qp->cc.cwnd_bytes;
	assert_true(r->rto_deadline != UINT64_MAX);
	*now = r->rto_deadline;
	mrt_rack_on_timer(qp, *now);
	assert_int_equal(tw_stats(f->w, 0).timeouts, 1);
	assert_true(r->eifel_pending);
	assert_int_equal(r->nlost, *out);
	assert_int_equal(r->pipe, 0);
	assert_true(qp->cc.cwnd_bytes < *cwnd_before); /* the timeout halved the window */
}

static void rto_finish(struct wfix *f, uint64_t now)
{
	f->w->now = now;
	f->w->drop_all[0] = false;
	tw_pump(f->w, true, 1000 * MS);
	write_done(f);
}

/* Eifel (RFC 3522 / 4015): an ACK of new data echoing a timestamp from before the timeout
 * proves the originals arrived. The response restores the congestion window, puts the PSNs
 * that were marked lost but not resent back in flight (nothing is resent), and sets G to twice
 * the late sample so the same delay does not time out again. */
static void test_spurious_rto_undone(void **state)
{
	struct wfix f;
	struct mrt_req *r;
	struct mr_qp *qp;
	uint32_t out;
	uint64_t cwnd, now;

	(void)state;
	rto_setup(&f, &out, &cwnd, &now);
	qp = f.w->s[0].qp;
	r = req(f.w);
	assert_true(mrt_rto_eifel(qp, r->eifel_ts - 1, 3000000, now + 10));
	assert_false(r->eifel_pending);
	assert_int_equal(r->nlost, 0);
	assert_int_equal(r->pipe, out);
	assert_int_equal(qp->cc.cwnd_bytes, cwnd);
	assert_int_equal(r->gran, 6000000);
	assert_true(mrt_rto(qp) >= 6000000);
	/* evaluated once per timeout */
	assert_false(mrt_rto_eifel(qp, r->eifel_ts - 1, 3000000, now + 20));
	rto_finish(&f, now + 20);
}

/* A genuine timeout (the first ACK echoes a resend) keeps its response; so does nothing but
 * the echo: a PSN the timeout marked lost that is acknowledged before its resend is proof too. */
static void test_genuine_rto_kept(void **state)
{
	struct wfix f;
	struct mrt_req *r;
	struct mr_qp *qp;
	uint32_t out, bytes = 0;
	uint64_t cwnd, now, cut;

	(void)state;
	rto_setup(&f, &out, &cwnd, &now);
	qp = f.w->s[0].qp;
	r = req(f.w);
	cut = qp->cc.cwnd_bytes;
	assert_false(mrt_rto_eifel(qp, r->eifel_ts, 3000000, now + 10));
	assert_int_equal(r->nlost, out);
	assert_int_equal(qp->cc.cwnd_bytes, cut);
	assert_int_equal(r->gran, 0);
	rto_finish(&f, now + 10);

	rto_setup(&f, &out, &cwnd, &now);
	qp = f.w->s[0].qp;
	r = req(f.w);
	/* the last PSN, still waiting for its resend, is SACKed */
	assert_true(mrt_sb_ack(qp, mr_psn_add(r->nxt, MR_PSN_MASK), r->eifel_ts, now + 5, &bytes));
	assert_true(r->eifel_hit);
	assert_true(mrt_rto_eifel(qp, r->eifel_ts + 1, 3000000, now + 10));
	assert_int_equal(r->nlost, 0);
	assert_int_equal(r->pipe, out - 1);
	assert_int_equal(qp->cc.cwnd_bytes, cwnd);
	/* that SACK was forged (the packet was dropped), so its bytes never land: finish the
	 * write without comparing the buffers */
	f.w->now = now + 10;
	f.w->drop_all[0] = false;
	tw_pump(f.w, true, 1000 * MS);
	assert_memory_equal(f.dst, f.src, f.len - 1024);
	tw_destroy(f.w);
	free(f.src);
	free(f.dst);
}

/* Source ports past 65535 continue at 0xC000 (entropy.c): never 0, all distinct per QP. */
static void test_sport_wrap(void **state)
{
	struct tw_cfg c;
	struct wfix f;
	bool seen[16] = { false };

	(void)state;
	assert_int_equal(mrt_udp_sport(0xc000, 5), 0xc005);
	assert_int_equal(mrt_udp_sport(0xffff, 0), 0xffff);
	assert_int_equal(mrt_udp_sport(0xffff, 1), 0xc000);
	assert_int_equal(mrt_udp_sport(0xff80, 255), 0xc07f);
	for (uint32_t base = 0xff00; base <= 0xffff; base++)
		for (uint32_t p = 0; p < 256; p++) {
			uint16_t s = mrt_udp_sport((uint16_t)base, (uint16_t)p);

			assert_true(s >= 0xc000);
			for (uint32_t q = 0; q < p; q++)
				if (mrt_udp_sport((uint16_t)base, (uint16_t)q) == s)
					fail();
		}
	/* on the wire: a QP whose base is 0xfffa sprays over 8 entropies */
	tw_metaroce_cfg(&c, 8);
	c.udp_sport = 0xfffa;
	write_setup(&f, &c, 64 * 1024);
	tw_pump(f.w, true, 100 * MS);
	for (uint32_t i = 0; i < f.w->sent[0]; i++) {
		uint16_t p = f.w->log[0][i].mreth.path;

		assert_true(p < 8);
		assert_int_equal(f.w->log_sport[0][i], mrt_udp_sport(0xfffa, p));
		seen[p] = true;
	}
	for (uint32_t i = 0; i < f.w->sent[1]; i++)
		assert_int_equal(f.w->log_sport[1][i],
				 mrt_udp_sport(0xfffa, f.w->log[1][i].mreth.path));
	assert_true(seen[7]); /* 0xfffa + 7 wrapped to 0xc001 was used */
	write_done(&f);
}

/* IBA 9.7.6.1.3 retry budget: the adaptive RTO (here ~100 us) fires many times when the peer
 * falls silent, but the QP fails only once the peer has been silent for (retry_cnt + 1) Local
 * ACK Timeouts, as plain RC would: a host stall shorter than that is survived. */
static void test_retry_budget_in_ack_timeouts(void **state)
{
	struct tw_cfg c;
	struct wfix f;
	struct mr_qp_stats a;
	struct mr_wc wc;
	uint64_t t_ack = mr_ack_timeout_ns(10), last_ack;

	(void)state;
	tw_metaroce_cfg(&c, 4);
	c.timeout = 10; /* 4.19 ms */
	c.retry_cnt = 3;
	write_setup(&f, &c, 64 * 1024);
	for (uint32_t i = 8; i < TW_MAX_LOG; i++)
		f.w->act[0][i] = TW_DROP; /* the link dies after 8 packets */
	tw_pump(f.w, true, 1000 * MS);
	a = tw_stats(f.w, 0);
	assert_true(f.w->sent[1] > 0);
	last_ack = f.w->log_ts[1][f.w->sent[1] - 1];
	assert_true(mrt_rto(f.w->s[0].qp) < t_ack / 8); /* adaptive, far below the IBA timer */
	assert_true(a.timeouts > (uint64_t)c.retry_cnt + 1); /* so more timeouts than retries... */
	assert_int_equal(mr_qp_state(f.w->s[0].qp), MR_QPS_ERR);
	assert_true(f.w->now - last_ack >= ((uint64_t)c.retry_cnt + 1) * t_ack); /* ...within the budget */
	assert_true(f.w->now - last_ack < 4 * ((uint64_t)c.retry_cnt + 1) * t_ack);
	tw_poll(f.w->s[0].scq, 1, &wc);
	assert_int_equal(wc.status, MR_WC_RETRY_EXC_ERR);
	tw_destroy(f.w);
	free(f.src);
	free(f.dst);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inflight_cap),
		cmocka_unit_test(test_dup_acked_at_once),
		cmocka_unit_test(test_dup_echo_spurious),
		cmocka_unit_test(test_reo_window_resets),
		cmocka_unit_test(test_cc_blocked_after),
		cmocka_unit_test(test_ackreq_when_blocked),
		cmocka_unit_test(test_tlp_rearms_rto),
		cmocka_unit_test(test_sack_opens_window_for_lost),
		cmocka_unit_test(test_rack_walk_bounded),
		cmocka_unit_test(test_rto_learns_stalls),
		cmocka_unit_test(test_spurious_rto_undone),
		cmocka_unit_test(test_genuine_rto_kept),
		cmocka_unit_test(test_sport_wrap),
		cmocka_unit_test(test_retry_budget_in_ack_timeouts),
	};

	return cmocka_run_group_tests_name("mrt_tuning", tests, NULL, NULL);
}
