/* SPDX-License-Identifier: MIT
 * Hostile-peer suite, both transports (RC: IBA ch. 9.7; MetaRoCE: docs/metaroce-wire.md):
 * memory protection (9.7.5.2.3 / 10.6.3.2), invalid requests (9.7.5.2.2), PSN checks
 * (9.7.5.1 / 9.7.5.2.1), duplicate atomics (9.4.5 / 9.7.5.1), header validation (9.6), and
 * floods of CNPs, ACKs, NAKs and RNR NAKs for PSNs never sent (9.7.5.1: a response must be
 * inside the sent window). Every case checks B's answer (the spec's NAK and PSN, or a silent
 * drop and its counter), the guard bytes around B's regions, that B settles with every WR
 * completed once, and - where B is meant to stay usable - a legitimate transfer afterwards.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "hostile.h"

#define NAK_ACCESS (MR_AETH_NAK | MR_NAK_REM_ACCESS_ERR)
#define NAK_INV (MR_AETH_NAK | MR_NAK_INVALID_REQ)
#define NAK_SEQ (MR_AETH_NAK | MR_NAK_PSN_SEQ_ERR)

static enum mr_transport rc = MR_TRANSPORT_RC, mrt = MR_TRANSPORT_METAROCE;

static enum mr_transport tr(void **state)
{
	return *(enum mr_transport *)*state;
}

static const uint8_t pat[4096] = { 0x11, 0x22, 0x33 };

/* One request that must be answered by exactly one NAK `syn` at its PSN, after which B is in
 * ERR with nothing written. */
static void expect_fatal(enum mr_transport t, struct mr_roce_hdrs (*mk)(struct live *, uint32_t),
			 uint8_t syn, uint32_t paylen)
{
	struct live *l = h_live(t, false);
	uint32_t epsn = live_b_epsn(l);
	struct mr_roce_hdrs h = mk(l, epsn);
	uint8_t rw[16384];
	struct h_out o;

	memcpy(rw, live_addr(l, LR_RW, 0), sizeof(rw));
	live_post_recv(l, 0, LIVE_RECV_BUF);
	h_inject(l, &h, pat, paylen);
	h_collect(l, &o);
	assert_int_equal(h_naks(&o, syn, epsn), 1);
	assert_int_equal(mr_qp_state(l->b.qp), MR_QPS_ERR);
	assert_memory_equal(rw, live_addr(l, LR_RW, 0), sizeof(rw));
	if (syn == NAK_ACCESS)
		assert_int_equal(h_stats(l).rem_access_naks_sent, 1);
	else
		assert_int_equal(h_stats(l).inv_req_naks_sent, 1);
	h_end(l, false);
}

static struct mr_roce_hdrs w_bad_key(struct live *l, uint32_t psn)
{
	return h_write(l, psn, h_va(l, LR_RW, 0), 0x00dead00, 32);
}

static struct mr_roce_hdrs w_stale_key(struct live *l, uint32_t psn)
{
	return h_write(l, psn, h_va(l, LR_STALE, 0), l->key[LR_STALE], 32);
}

static struct mr_roce_hdrs w_recv_key(struct live *l, uint32_t psn)
{
	return h_write(l, psn, h_va(l, LR_RECV, 0), l->key[LR_RECV], 32); /* local write only */
}

static struct mr_roce_hdrs w_ro_key(struct live *l, uint32_t psn)
{
	return h_write(l, psn, h_va(l, LR_RO, 0), l->key[LR_RO], 32);
}

static struct mr_roce_hdrs w_src_key(struct live *l, uint32_t psn)
{
	return h_write(l, psn, h_va(l, LR_SRC, 0), l->key[LR_SRC], 32); /* no access at all */
}

static struct mr_roce_hdrs w_past_end(struct live *l, uint32_t psn)
{
	return h_write(l, psn, h_va(l, LR_RW, 16384 - 16), l->key[LR_RW], 32);
}

static struct mr_roce_hdrs w_before_start(struct live *l, uint32_t psn)
{
	return h_write(l, psn, h_va(l, LR_RW, 0) - 8, l->key[LR_RW], 32);
}

static struct mr_roce_hdrs w_wrapping(struct live *l, uint32_t psn)
{
	return h_write(l, psn, UINT64_MAX - 15, l->key[LR_RW], 32); /* va + len overflows */
}

static struct mr_roce_hdrs w_huge_first(struct live *l, uint32_t psn)
{
	struct mr_roce_hdrs h = h_write(l, psn, h_va(l, LR_RW, 0), l->key[LR_RW], 0xffffffffu);

	h.opcode = l->b.qp->mrt ? MR_OP_MRC_WRITE_FIRST : MR_OP_RC_WRITE_FIRST;
	return h;
}

static struct mr_roce_hdrs r_over_region(struct live *l, uint32_t psn)
{
	struct mr_roce_hdrs h = h_hdr(l, MR_OP_RC_READ_REQUEST, psn);

	h.reth.va = h_va(l, LR_RW, 0);
	h.reth.rkey = l->key[LR_RW];
	h.reth.dlen = h.mreth.msg_len = 20000;
	return h;
}

static struct mr_roce_hdrs r_over_2g(struct live *l, uint32_t psn)
{
	struct mr_roce_hdrs h = r_over_region(l, psn);

	h.reth.dlen = h.mreth.msg_len = 0x80000001u;
	return h;
}

/* MetaRoCE serves a READ request in chunks of at most MRT_RD_CHUNK response packets; a
 * longer one is an invalid request. RC: longer than the region, an access error. */
static struct mr_roce_hdrs r_over_chunk(struct live *l, uint32_t psn)
{
	struct mr_roce_hdrs h = r_over_region(l, psn);

	h.reth.dlen = h.mreth.msg_len = (MRT_RD_CHUNK + 1) * 1024;
	return h;
}

static struct mr_roce_hdrs atomic_ro(struct live *l, uint32_t psn)
{
	struct mr_roce_hdrs h = h_hdr(l, MR_OP_RC_FETCH_ADD, psn);

	h.atmeth.va = h_va(l, LR_RO, 64);
	h.atmeth.rkey = l->key[LR_RO];
	h.atmeth.swap_add = 1;
	return h;
}

static void wrong_rkey(void **state)
{
	expect_fatal(tr(state), w_bad_key, NAK_ACCESS, 32);
	expect_fatal(tr(state), w_stale_key, NAK_ACCESS, 32);
	expect_fatal(tr(state), w_recv_key, NAK_ACCESS, 32);
	expect_fatal(tr(state), w_src_key, NAK_ACCESS, 32);
}

static void write_read_only(void **state)
{
	expect_fatal(tr(state), w_ro_key, NAK_ACCESS, 32);
	expect_fatal(tr(state), atomic_ro, NAK_ACCESS, 0);
}

static void out_of_range_and_wrapping(void **state)
{
	expect_fatal(tr(state), w_past_end, NAK_ACCESS, 32);
	expect_fatal(tr(state), w_before_start, NAK_ACCESS, 32);
	expect_fatal(tr(state), w_wrapping, NAK_ACCESS, 32);
	/* IBA 9.7.2: no message is longer than 2^31 bytes. */
	expect_fatal(tr(state), w_huge_first, NAK_INV, 1024);
}

static void oversize_read(void **state)
{
	expect_fatal(tr(state), r_over_region, NAK_ACCESS, 0);
	expect_fatal(tr(state), r_over_2g, NAK_INV, 0);
	expect_fatal(tr(state), r_over_chunk,
		     tr(state) == MR_TRANSPORT_METAROCE ? NAK_INV : NAK_ACCESS, 0);
}

/* RC: one PSN sequence NAK for ePSN (IBA 9.7.5.2.1), then silence; MetaRoCE: a PSN beyond any
 * window the requester may use is dropped and counted. Nothing is placed either way. */
static void psn_far_ahead(void **state)
{
	struct live *l = h_live(tr(state), false);
	uint32_t epsn = live_b_epsn(l);
	uint8_t rw[16384];
	struct h_out o;
	uint64_t n = 0;

	memcpy(rw, live_addr(l, LR_RW, 0), sizeof(rw));
	for (uint32_t d = 0x1000; d <= 0x7fffff; d = d * 2 + 1) {
		struct mr_roce_hdrs h = h_write(l, epsn + d, h_va(l, LR_RW, 0), l->key[LR_RW], 64);

		h_inject(l, &h, pat, 64);
		h_inject(l, &h, pat, 64);
		n += 2;
	}
	h_collect(l, &o);
	if (tr(state) == MR_TRANSPORT_RC) {
		assert_int_equal(o.n, 1);
		assert_int_equal(h_naks(&o, NAK_SEQ, epsn), 1);
		assert_int_equal(h_stats(l).out_of_sequence, n);
	} else {
		assert_int_equal(o.n, 0);
		assert_int_equal(h_stats(l).dropped, n);
	}
	assert_memory_equal(rw, live_addr(l, LR_RW, 0), sizeof(rw));
	assert_int_equal(live_b_epsn(l), epsn);
	h_end(l, true);
}

/* A PSN before ePSN is a duplicate (IBA 9.7.5.1): re-acknowledged, never executed. */
static void psn_far_behind(void **state)
{
	struct live *l = h_live(tr(state), false);
	uint32_t epsn = live_b_epsn(l);
	uint8_t rw[16384];
	struct h_out o;
	uint64_t n = 0;

	memcpy(rw, live_addr(l, LR_RW, 0), sizeof(rw));
	live_post_recv(l, 0, LIVE_RECV_BUF);
	for (uint32_t d = 1; d <= 0x800000; d *= 4, n += 2) {
		struct mr_roce_hdrs w = h_write(l, epsn - d, h_va(l, LR_RW, 0), l->key[LR_RW], 64);
		struct mr_roce_hdrs s = h_hdr(l, MR_OP_RC_SEND_ONLY, epsn - d);

		s.mreth.msg_len = 64;
		h_inject(l, &w, pat, 64);
		h_inject(l, &s, pat, 64);
	}
	h_collect(l, &o);
	assert_int_equal(h_stats(l).duplicate_requests, n);
	assert_int_equal(h_naks(&o, NAK_ACCESS, ~0u) + h_naks(&o, NAK_INV, ~0u) +
			 h_naks(&o, NAK_SEQ, ~0u), 0);
	assert_true(h_ops(&o, MR_OP_RC_ACK) >= 1);
	assert_int_equal(live_poll_b(l, NULL), 0); /* no receive consumed */
	assert_memory_equal(rw, live_addr(l, LR_RW, 0), sizeof(rw));
	assert_int_equal(live_b_epsn(l), epsn);
	h_end(l, true);
}

/* IBA 9.4.5 / 9.7.5.1: a duplicate atomic is answered from the saved result, never run twice.
 * The atomic is A's own (so A's PSNs stay in step and a transfer works afterwards); its ACKs
 * are lost and copies of the request are replayed at B, then A's retransmission completes it. */
static void duplicate_atomic(void **state)
{
	struct live *l = h_live(tr(state), false);
	uint64_t before, after, result = 0;
	struct mr_roce_hdrs h;
	struct mr_send_wr wr;
	struct mr_wc wc;
	struct h_out o;

	memcpy(&before, live_addr(l, LR_RW, 64), 8);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0xa7;
	wr.opcode = MR_WR_ATOMIC_FETCH_AND_ADD;
	wr.send_flags = MR_SEND_SIGNALED;
	wr.num_sge = 1;
	wr.sg_list[0].addr = (uint64_t)(uintptr_t)l->a_buf;
	wr.sg_list[0].length = 8;
	wr.sg_list[0].lkey = mr_memreg_lkey(l->a_mr);
	wr.atomic.remote_addr = h_va(l, LR_RW, 64);
	wr.atomic.rkey = l->key[LR_RW];
	wr.atomic.compare_add = 5;
	assert_int_equal(mr_post_send(l->a.qp, &wr), 0);
	live_a_tx(l);
	assert_int_equal(l->nheld_ab, 1);
	h = l->held_ab[0].hdr;
	assert_int_equal(mr_opcode_base(h.opcode), MR_OP_RC_FETCH_ADD);
	live_held_deliver(l, 0, false, false);
	for (int i = 0; i < 4; i++) {
		if (i > 0)
			h_inject(l, &h, NULL, 0);
		h_collect(l, &o); /* lost: A never sees these */
		assert_int_equal(h_ops(&o, MR_OP_RC_ATOMIC_ACK), 1);
		for (uint32_t k = 0; k < o.n; k++)
			if (mr_opcode_base(o.p[k].hdr.opcode) == MR_OP_RC_ATOMIC_ACK) {
				assert_true(o.p[k].hdr.atmack == before);
				assert_int_equal(o.p[k].hdr.psn, h.psn);
			}
	}
	memcpy(&after, live_addr(l, LR_RW, 64), 8);
	assert_true(after == before + 5);
	assert_int_equal(h_stats(l).duplicate_requests, 3);
	live_settle(l); /* A resends after its timeout and gets the saved result */
	memcpy(&after, live_addr(l, LR_RW, 64), 8);
	assert_true(after == before + 5);
	while (mr_cq_poll(l->a.scq, 1, &wc) == 1)
		if (wc.wr_id == 0xa7) {
			assert_int_equal(wc.status, MR_WC_SUCCESS);
			memcpy(&result, l->a_buf, 8);
			assert_true(result == before);
			result = 1;
		}
	assert_true(result == 1);
	h_end(l, true);
}

static void cnp_flood(void **state)
{
	struct live *l = h_live(tr(state), true);
	struct mr_roce_hdrs h = h_hdr(l, MR_OP_CNP, 0);
	struct h_out o;
	uint64_t rx0 = h_stats(l).rx_pkts;

	live_b_tx(l, 0, true, NULL, 0); /* B's queued responses go to A first */
	for (int i = 0; i < 10000; i++) {
		h.psn = (uint32_t)i & MR_PSN_MASK;
		h.fecn = i & 1;
		h.becn = !(i & 1);
		h_inject(l, &h, NULL, 0);
	}
	h_collect(l, &o);
	assert_int_equal(o.n, 0);
	assert_int_equal(h_stats(l).rx_pkts - rx0, 10000);
	h_end(l, true);
}

/* Floods of ACKs, sequence NAKs and RNR NAKs for PSNs B never sent, and of fatal NAKs for
 * PSNs outside the sent window: none may complete, fail or stall B's outstanding requests
 * (IBA 9.7.5.1: responses are matched against the outstanding requests). Defect 3 of
 * issue 8: the MetaRoCE requester moved to ERR on a fatal NAK for a PSN it never sent. */
static void responses_for_unsent_psns(void **state)
{
	static const uint8_t fatal[] = { NAK_INV, NAK_ACCESS, MR_AETH_NAK | MR_NAK_REM_OP_ERR,
					 MR_AETH_NAK | MR_NAK_INVALID_RD_REQ };
	struct live *l = h_live(tr(state), true);
	uint32_t next = live_b_req_next(l), oldest = live_b_req_oldest(l);
	struct mr_roce_hdrs h;
	struct mr_wc wc;

	assert_int_not_equal(next, oldest); /* B has requests outstanding */
	for (uint32_t i = 0; i < 3000; i++) {
		h = h_hdr(l, MR_OP_RC_ACK, next + 1 + i % 1000);
		h.aeth.msn = i;
		h.sack.base = oldest;
		if (i >= 1000)
			h.aeth.syndrome = i < 2000 ? NAK_SEQ : (uint8_t)(MR_AETH_RNR_NAK | (i & 31));
		h_inject(l, &h, NULL, 0);
	}
	for (uint32_t i = 0; i < 400; i++) {
		/* beyond the sent window, and long before it (already acknowledged or never) */
		uint32_t psn = i & 1 ? next + 1 + i : oldest - 0x1000 - i;

		h = h_hdr(l, MR_OP_RC_ACK, psn);
		h.aeth.syndrome = fatal[i % 4];
		h.sack.base = oldest;
		h_inject(l, &h, NULL, 0);
	}
	if (mr_qp_state(l->b.qp) != MR_QPS_RTS)
		fail_msg("B left RTS on a response for a PSN it never sent%s",
			 tr(state) == MR_TRANSPORT_METAROCE ? " (issue 8 defect 3, until fixed)" : "");
	assert_int_equal(live_poll_b(l, &wc), 0);
	assert_int_equal(live_b_req_oldest(l), oldest);
	/* B's outstanding requests still complete, successfully, from A's real answers. */
	live_settle(l);
	assert_int_equal(live_poll_b(l, &wc), 5); /* SEND, WRITE, READ, atomic, A's SEND */
	assert_int_equal(mr_qp_state(l->b.qp), MR_QPS_RTS);
	for (uint32_t i = 0; i < l->nposted; i++)
		if (!l->is_recv[i])
			assert_true(l->completed[i]);
	h_end(l, true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define BOTH(f) cmocka_unit_test_prestate(f, &rc), cmocka_unit_test_prestate(f, &mrt)
		BOTH(wrong_rkey),
		BOTH(write_read_only),
		BOTH(out_of_range_and_wrapping),
		BOTH(oversize_read),
		BOTH(psn_far_ahead),
		BOTH(psn_far_behind),
		BOTH(duplicate_atomic),
		BOTH(cnp_flood),
		BOTH(responses_for_unsent_psns),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
