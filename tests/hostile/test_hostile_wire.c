/* SPDX-License-Identifier: MIT
 * Hostile frames at the header level, both transports: truncation at every length, garbage
 * after the headers, wrong destination QPN, spoofed source address, foreign P_Key. Each is
 * dropped with its counter (parser result, ctx stats) and changes nothing in B (IBA 9.6:
 * header validation happens before any transport processing).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "hostile.h"
#include "wire/icrc.h"

static enum mr_transport rc = MR_TRANSPORT_RC, mrt = MR_TRANSPORT_METAROCE;

static enum mr_transport tr(void **state)
{
	return *(enum mr_transport *)*state;
}

static uint8_t pat[256];

static int build(struct live *l, const struct mr_path *path, const struct mr_roce_hdrs *h,
		 uint32_t paylen, uint8_t *frame, uint32_t cap)
{
	struct mr_iov iov = { .base = pat, .len = paylen };
	int n = mr_frame_build(frame, cap, path, 1, h, &iov, paylen ? 1 : 0);

	(void)l;
	assert_true(n > 0);
	return n;
}

/* B's observable state: packets it took, its output, the RW region. */
struct snap {
	uint64_t rx, dropped;
	struct mr_ctx_stats cs;
	uint8_t rw[256];
};

static void take(struct live *l, struct snap *s)
{
	s->rx = h_stats(l).rx_pkts;
	s->dropped = h_stats(l).dropped;
	s->cs = h_ctx_stats(l);
	memcpy(s->rw, live_addr(l, LR_RW, 0), sizeof(s->rw));
}

static void assert_untouched(struct live *l, const struct snap *s)
{
	struct h_out o;

	h_collect(l, &o);
	assert_int_equal(o.n, 0);
	assert_int_equal(h_stats(l).rx_pkts, s->rx);
	assert_memory_equal(live_addr(l, LR_RW, 0), s->rw, sizeof(s->rw));
}

static void truncated_at_every_length(void **state)
{
	struct live *l = h_live(tr(state), false);
	uint32_t epsn = live_b_epsn(l);
	struct mr_roce_hdrs h = h_write(l, epsn, h_va(l, LR_RW, 0), l->key[LR_RW], 200);
	uint8_t frame[1024];
	struct mr_pkt pkt;
	struct snap s;
	int n;

	for (int v6 = 0; v6 < 2; v6++) {
		struct mr_path path = l->path_ab;

		path.ipv6 = v6;
		path.vlan = v6;
		n = build(l, &path, &h, 200, frame, sizeof(frame));
		take(l, &s);
		for (uint32_t len = 0; len < (uint32_t)n; len++) {
			/* An exact-size copy so that ASan sees any read past the end. */
			uint8_t *cut = malloc(len ? len : 1);

			memcpy(cut, frame, len);
			assert_int_not_equal(mr_frame_parse(cut, len, true, &pkt), MR_PARSE_OK);
			assert_int_not_equal(mr_frame_parse(cut, len, false, &pkt), MR_PARSE_OK);
			assert_int_not_equal(live_inject_frame(l, cut, len, true), MR_PARSE_OK);
			free(cut);
		}
		assert_untouched(l, &s);
	}
	h_assert_ok(live_legit_transfer(l, 8192, 3000));
	/* The whole frame is fine: it is placed (with the IPv4 path; its source is B's peer). */
	h = h_write(l, live_b_epsn(l), h_va(l, LR_RW, 0), l->key[LR_RW], 200);
	n = build(l, &l->path_ab, &h, 200, frame, sizeof(frame));
	assert_int_equal(live_inject_frame(l, frame, (uint32_t)n, true), MR_PARSE_OK);
	assert_memory_equal(live_addr(l, LR_RW, 0), pat, 200);
	h_end(l, false);
}

/* Bytes after the headers where the opcode allows none (IBA 9.2 / C9-...): an ACK or a READ
 * request with a payload is malformed and dropped by the parser. */
static void garbage_after_headers(void **state)
{
	static const uint8_t to[] = { MR_OP_RC_ACK, MR_OP_RC_READ_REQUEST, MR_OP_RC_FETCH_ADD,
				      MR_OP_RC_ATOMIC_ACK };
	struct live *l = h_live(tr(state), true);
	uint32_t epsn = live_b_epsn(l);
	struct mr_roce_hdrs h = h_write(l, epsn, h_va(l, LR_RW, 0), l->key[LR_RW], 128);
	uint8_t frame[1024];
	struct snap s;
	int n;

	live_b_tx(l, 0, true, NULL, 0);
	take(l, &s);
	n = build(l, &l->path_ab, &h, 128, frame, sizeof(frame));
	for (unsigned int i = 0; i < sizeof(to); i++) {
		uint8_t op = l->b.qp->mrt ? mr_opcode_to_metaroce(to[i]) : to[i];

		frame[14 + 20 + 8] = op; /* BTH opcode */
		assert_int_equal(mr_icrc_frame_fix(frame, (uint32_t)n), 0);
		assert_int_equal(live_inject_frame(l, frame, (uint32_t)n, true), MR_PARSE_BAD_LENGTH);
	}
	assert_untouched(l, &s);
	h_end(l, true);
}

static void wrong_destination_qpn(void **state)
{
	static const uint32_t qpns[] = { 0, 1, 115, 117, 120, 0xffffff };
	struct live *l = h_live(tr(state), false);
	struct mr_roce_hdrs h = h_write(l, live_b_epsn(l), h_va(l, LR_RW, 0), l->key[LR_RW], 64);
	struct snap s;

	take(l, &s);
	for (unsigned int i = 0; i < sizeof(qpns) / sizeof(qpns[0]); i++) {
		h.dqpn = qpns[i];
		h_inject(l, &h, pat, 64);
	}
	assert_untouched(l, &s);
	assert_int_equal(h_ctx_stats(l).rx_unknown_qp - s.cs.rx_unknown_qp,
			 sizeof(qpns) / sizeof(qpns[0]));
	h_end(l, true);
}

/* IBA 9.6: a connected QP takes packets only from its remote endpoint. */
static void spoofed_source(void **state)
{
	struct live *l = h_live(tr(state), false);
	struct mr_roce_hdrs h = h_write(l, live_b_epsn(l), h_va(l, LR_RW, 0), l->key[LR_RW], 64);
	struct mr_path p4 = l->path_ab, p6 = l->path_ab;
	struct snap s;

	take(l, &s);
	p4.sgid[15] = 99;
	assert_int_equal(live_inject_on(l, &p4, &h, pat, 64), MR_PARSE_OK);
	p6.ipv6 = true;
	memset(p6.sgid, 0, 10); /* 2001:2::1 style, not IPv4-mapped */
	p6.sgid[0] = 0x20;
	p6.sgid[1] = 0x01;
	p6.sgid[3] = 0x02;
	assert_int_equal(live_inject_on(l, &p6, &h, pat, 64), MR_PARSE_OK);
	assert_untouched(l, &s);
	assert_int_equal(h_ctx_stats(l).rx_bad_source - s.cs.rx_bad_source, 2);
	assert_int_equal(h_stats(l).dropped - s.dropped, 2);
	h_end(l, true);
}

/* IBA 10.9: a P_Key outside the QP's partition is dropped before transport processing. */
static void foreign_pkey(void **state)
{
	struct live *l = h_live(tr(state), false);
	struct mr_roce_hdrs h = h_write(l, live_b_epsn(l), h_va(l, LR_RW, 0), l->key[LR_RW], 64);
	struct snap s;

	take(l, &s);
	h.pkey = 0x1234;
	h_inject(l, &h, pat, 64);
	h.pkey = 0x0000;
	h_inject(l, &h, pat, 64);
	assert_untouched(l, &s);
	assert_int_equal(h_ctx_stats(l).rx_bad_pkey - s.cs.rx_bad_pkey, 2);
	h_end(l, true);
}

static int setup_pat(void **state)
{
	(void)state;
	for (unsigned int i = 0; i < sizeof(pat); i++)
		pat[i] = (uint8_t)(i * 13 + 1);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define BOTH(f) cmocka_unit_test_prestate(f, &rc), cmocka_unit_test_prestate(f, &mrt)
		BOTH(truncated_at_every_length),
		BOTH(garbage_after_headers),
		BOTH(wrong_destination_qpn),
		BOTH(spoofed_source),
		BOTH(foreign_pkey),
	};

	return cmocka_run_group_tests(tests, setup_pat, NULL);
}
