/* SPDX-License-Identifier: MIT
 * Helpers of the hostile-peer suite: cmocka assertions over the live victim of
 * tests/fuzz/live_qp.h (B, with guard-fenced memory) and the packets it answers with.
 * Include after <cmocka.h>.
 */
#ifndef MR_TESTS_HOSTILE_H
#define MR_TESTS_HOSTILE_H

#include <string.h>

#include "live_qp.h"

#define H_OUT 64

/* A victim with (setup) or without the setup traffic of live_create. */
static inline struct live *h_live(enum mr_transport t, bool setup)
{
	struct live_cfg c;
	struct live *l;

	memset(&c, 0, sizeof(c));
	c.transport = t;
	c.mtu = 1024;
	c.max_rd_atomic = 4;
	c.n_entropies = 4;
	c.no_setup_traffic = !setup;
	l = live_create(&c);
	assert_non_null(l);
	return l;
}

/* A request/response header aimed at B: opcode rc_op (MetaRoCE form on a MetaRoCE QP). */
static inline struct mr_roce_hdrs h_hdr(const struct live *l, uint8_t rc_op, uint32_t psn)
{
	struct mr_roce_hdrs h;

	memset(&h, 0, sizeof(h));
	h.opcode = l->b.qp->mrt && rc_op != MR_OP_CNP ? mr_opcode_to_metaroce(rc_op) : rc_op;
	h.pkey = 0xffff;
	h.dqpn = mr_qp_num(l->b.qp);
	h.psn = psn & MR_PSN_MASK;
	h.ackreq = true;
	h.mreth.ver = 1;
	h.aeth.syndrome = MR_AETH_ACK | MR_AETH_CREDIT_INVALID;
	return h;
}

/* A WRITE_ONLY of n pattern bytes to [va, va+n) with rkey, at psn. */
static inline struct mr_roce_hdrs h_write(const struct live *l, uint32_t psn, uint64_t va,
					  uint32_t rkey, uint32_t n)
{
	struct mr_roce_hdrs h = h_hdr(l, MR_OP_RC_WRITE_ONLY, psn);

	h.reth.va = va;
	h.reth.rkey = rkey;
	h.reth.dlen = n;
	h.mreth.msg_len = n;
	return h;
}

static inline uint64_t h_va(const struct live *l, enum live_region r, uint32_t off)
{
	return (uint64_t)(uintptr_t)live_addr(l, r, off);
}

/* Inject and require that the frame was buildable and parsed. */
static inline void h_inject(struct live *l, const struct mr_roce_hdrs *h, const void *p,
			    uint32_t n)
{
	assert_int_equal(live_inject(l, h, p, n), MR_PARSE_OK);
}

/* B's answers (not delivered anywhere). */
struct h_out {
	struct live_pkt p[H_OUT];
	uint32_t n;
};

static inline void h_collect(struct live *l, struct h_out *o)
{
	o->n = live_b_tx(l, 0, false, o->p, H_OUT);
	if (o->n > H_OUT)
		o->n = H_OUT;
}

/* Packets with ACK opcode (either transport), this syndrome and (psn != ~0u) this PSN. */
static inline uint32_t h_naks(const struct h_out *o, uint8_t syndrome, uint32_t psn)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < o->n; i++)
		k += mr_opcode_base(o->p[i].hdr.opcode) == MR_OP_RC_ACK &&
		     o->p[i].hdr.aeth.syndrome == syndrome &&
		     (psn == ~0u || o->p[i].hdr.psn == psn);
	return k;
}

static inline uint32_t h_ops(const struct h_out *o, uint8_t rc_op)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < o->n; i++)
		k += mr_opcode_base(o->p[i].hdr.opcode) == rc_op;
	return k;
}

static inline struct mr_qp_stats h_stats(const struct live *l)
{
	struct mr_qp_stats st;

	assert_int_equal(mr_qp_get_stats(l->b.qp, &st), 0);
	return st;
}

static inline struct mr_ctx_stats h_ctx_stats(const struct live *l)
{
	struct mr_ctx_stats st;

	mr_ctx_get_stats(l->b.ctx, &st);
	return st;
}

#define h_assert_ok(expr)                                                   \
	do {                                                                \
		const char *h_why_ = (expr);                                \
		if (h_why_ != NULL)                                         \
			fail_msg("%s: %s", #expr, h_why_);                  \
	} while (0)

/* Every hostile case ends here: no byte outside B's writable regions changed, a legitimate
 * transfer still moves correct bytes (when B is meant to stay usable), B settles and every
 * WR completes exactly once. */
static inline void h_end(struct live *l, bool legit)
{
	h_assert_ok(live_check_queues(l));
	h_assert_ok(live_check_memory(l));
	if (legit) {
		assert_int_equal(mr_qp_state(l->b.qp), MR_QPS_RTS);
		h_assert_ok(live_legit_transfer(l, 8192, 3000));
	}
	h_assert_ok(live_finish(l));
	live_destroy(l);
}

#endif
