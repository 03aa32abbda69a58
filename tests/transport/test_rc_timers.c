/* SPDX-License-Identifier: MIT
 * The ctx's timer heap (rc_ctx.c): many QPs in one ctx, their ACK deadlines firing in order,
 * re-keying when a deadline moves, QPs leaving it on destroy / RESET / ERR, the RNR-wait
 * arming rule, MetaRoCE RACK/TLP/RTO timers, and the heap itself under random operations
 * checked against a brute-force minimum. Peers are absent: every request is lost.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "transport/mrt_internal.h"

#define FIRST_QPN 16u
#define DEST_BASE 0x10000u
#define STEP_NS 1000u
#define TO_CODE 14 /* local ACK timeout 4.096 us * 2^14 ~ 67 ms (IBA 9.7.6.1.3, C9-141) */

struct fx {
	struct mr_ctx *ctx;
	struct mr_pd *pd;
	struct mr_cq *cq;
	uint32_t max_qp;
	struct mr_qp **qp; /* by slot (qpn - FIRST_QPN) */
};

static void fx_init(struct fx *f, uint32_t max_qp)
{
	struct mr_ctx_params p = { .max_qp = max_qp, .first_qpn = FIRST_QPN, .max_mr = 4, .seed = 7 };

	memset(f, 0, sizeof(*f));
	f->max_qp = max_qp;
	f->ctx = mr_ctx_create(&p);
	assert_non_null(f->ctx);
	f->pd = mr_pd_alloc(f->ctx);
	f->cq = mr_cq_create(f->ctx, 4 * max_qp + 64);
	assert_non_null(f->pd);
	assert_non_null(f->cq);
	f->qp = calloc(max_qp, sizeof(*f->qp));
	assert_non_null(f->qp);
}

static void fx_fini(struct fx *f)
{
	assert_int_equal(rc_timer_audit(f->ctx, true), 0);
	mr_ctx_destroy(f->ctx);
	free(f->qp);
}

/* A QP in RTS whose peer (DEST_BASE + slot) does not exist. */
static struct mr_qp *fx_qp(struct fx *f, bool metaroce)
{
	struct mr_qp_init_attr ia = {
		.pd = f->pd, .send_cq = f->cq, .recv_cq = f->cq, .max_send_wr = 8, .max_recv_wr = 8,
	};
	struct mr_qp *qp = mr_qp_create(f->ctx, &ia);
	uint32_t slot, xmask = 0;
	struct mr_qp_attr a;

	assert_non_null(qp);
	slot = mr_qp_num(qp) - FIRST_QPN;
	f->qp[slot] = qp;
	memset(&a, 0, sizeof(a));
	a.qp_state = MR_QPS_INIT;
	assert_int_equal(mr_qp_modify(qp, &a, MR_QP_STATE | MR_QP_PKEY_INDEX | MR_QP_ACCESS_FLAGS),
			 0);
	a.qp_state = MR_QPS_RTR;
	a.path_mtu = 1024;
	a.dest_qp_num = DEST_BASE + slot;
	a.rq_psn = 1;
	a.min_rnr_timer = 1;
	if (metaroce) {
		a.transport = MR_TRANSPORT_METAROCE;
		a.n_entropies = 4;
		xmask = MR_QP_TRANSPORT;
	}
	assert_int_equal(mr_qp_modify(qp, &a, MR_QP_STATE | MR_QP_PATH | MR_QP_PATH_MTU |
					      MR_QP_DEST_QPN | MR_QP_RQ_PSN |
					      MR_QP_MAX_DEST_RD_ATOMIC | MR_QP_MIN_RNR_TIMER | xmask),
			 0);
	a.qp_state = MR_QPS_RTS;
	a.sq_psn = 1;
	a.timeout = TO_CODE;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	assert_int_equal(mr_qp_modify(qp, &a, MR_QP_STATE | MR_QP_SQ_PSN | MR_QP_TIMEOUT |
					      MR_QP_RETRY_CNT | MR_QP_RNR_RETRY |
					      MR_QP_MAX_QP_RD_ATOMIC),
			 0);
	return qp;
}

static void fx_send(struct mr_qp *qp, uint64_t id)
{
	struct mr_send_wr wr = { .wr_id = id, .opcode = MR_WR_SEND, .send_flags = MR_SEND_SIGNALED };

	assert_int_equal(mr_post_send(qp, &wr), 0);
}

/* Send everything the ctx has; returns the packets, *last_dqpn the last one's destination. */
static uint32_t fx_drain(struct fx *f, uint64_t now, uint32_t *last_dqpn)
{
	struct mr_tx_pkt out;
	uint32_t n = 0;

	while (mr_ctx_tx(f->ctx, now, &out) == 1) {
		n++;
		if (last_dqpn != NULL)
			*last_dqpn = out.hdr.dqpn;
	}
	return n;
}

static uint64_t fx_timeouts(const struct mr_qp *qp)
{
	struct mr_qp_stats st;

	assert_int_equal(mr_qp_get_stats(qp, &st), 0);
	return st.timeouts;
}

/* The walk the heap replaced: the earliest expiry of any armed QP. */
static uint64_t fx_brute_min(const struct fx *f)
{
	uint64_t t = UINT64_MAX;

	for (uint32_t s = 0; s < f->max_qp; s++)
		if (f->qp[s] != NULL && rc_qp_next_expiry(f->qp[s]) < t)
			t = rc_qp_next_expiry(f->qp[s]);
	return t;
}

static uint64_t xs(uint64_t *r)
{
	*r ^= *r << 13;
	*r ^= *r >> 7;
	*r ^= *r << 17;
	return *r;
}

static void shuffle(uint32_t *v, uint32_t n, uint64_t seed)
{
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(xs(&seed) % (i + 1)), t = v[i];

		v[i] = v[j];
		v[j] = t;
	}
}

/* 1000 QPs whose first sends go out in a shuffled order STEP_NS apart: their local ACK
 * timers (IBA 9.7.6.1.3) expire in that order, one QP per run, and each run times out only
 * the QP that was due; the resends re-arm them one ACK timeout later, in the same order. */
static void test_many_fire_in_order(void **state)
{
	const uint32_t n = 1000;
	const uint64_t to = mr_ack_timeout_ns(TO_CODE);
	uint32_t *order = calloc(n, sizeof(*order));
	struct fx f;

	(void)state;
	assert_non_null(order);
	fx_init(&f, 1024);
	for (uint32_t i = 0; i < n; i++) {
		fx_qp(&f, false);
		order[i] = i;
	}
	shuffle(order, n, 0x5eed);
	assert_int_equal(mr_ctx_next_expiry(f.ctx), UINT64_MAX);
	for (uint32_t i = 0; i < n; i++) {
		fx_send(f.qp[order[i]], i);
		assert_int_equal(fx_drain(&f, (uint64_t)i * STEP_NS, NULL), 1);
	}
	assert_int_equal(rc_timer_audit(f.ctx, true), 0);
	assert_int_equal(f.ctx->tm->n, n);
	for (uint32_t round = 0; round < 2; round++) {
		uint64_t base = (round + 1) * to;

		for (uint32_t i = 0; i < n; i++) {
			struct mr_qp *qp = f.qp[order[i]];
			uint64_t t = mr_ctx_next_expiry(f.ctx);
			uint32_t dq = 0;

			assert_int_equal(t, base + (uint64_t)i * STEP_NS);
			/* One nanosecond early: nothing runs, nothing changes. */
			mr_ctx_on_timer(f.ctx, t - 1);
			assert_int_equal(fx_timeouts(qp), round);
			assert_int_equal(mr_ctx_next_expiry(f.ctx), t);
			mr_ctx_on_timer(f.ctx, t);
			assert_int_equal(fx_timeouts(qp), round + 1);
			if (i + 1 < n)
				assert_int_equal(fx_timeouts(f.qp[order[i + 1]]), round);
			/* The go-back-N resend comes from the QP that timed out, and re-arms it. */
			assert_int_equal(fx_drain(&f, t, &dq), 1);
			assert_int_equal(dq, DEST_BASE + order[i]);
			if (i % 97 == 0)
				assert_int_equal(rc_timer_audit(f.ctx, true), 0);
		}
	}
	for (uint32_t s = 0; s < n; s++)
		assert_int_equal(fx_timeouts(f.qp[s]), 2);
	assert_int_equal(mr_ctx_next_expiry(f.ctx), 3 * to);
	fx_fini(&f);
	free(order);
}

/* A deadline moved earlier or later is re-keyed once rc_timer_update() marks the QP; without
 * the mark the audit reports the lost timer (what every deadline writer must avoid). */
static void test_rekey(void **state)
{
	struct mr_qp *a, *b, *c;
	struct fx f;

	(void)state;
	fx_init(&f, 8);
	a = fx_qp(&f, false);
	b = fx_qp(&f, false);
	c = fx_qp(&f, false);
	fx_send(a, 1);
	assert_int_equal(fx_drain(&f, 1000, NULL), 1);
	fx_send(b, 2);
	assert_int_equal(fx_drain(&f, 2000, NULL), 1);
	fx_send(c, 3);
	assert_int_equal(fx_drain(&f, 3000, NULL), 1);
	assert_int_equal(mr_ctx_next_expiry(f.ctx), 1000 + mr_ack_timeout_ns(TO_CODE));

	/* c earlier than everyone: to the root. */
	c->comp.ack_deadline = 500;
	rc_timer_update(c);
	assert_int_equal(mr_ctx_next_expiry(f.ctx), 500);
	assert_int_equal(f.ctx->tm->h[1].qp, c);
	/* then later than everyone: down again. */
	c->comp.ack_deadline = 10 * mr_ack_timeout_ns(TO_CODE);
	rc_timer_update(c);
	assert_int_equal(mr_ctx_next_expiry(f.ctx), 1000 + mr_ack_timeout_ns(TO_CODE));
	assert_int_equal(rc_timer_audit(f.ctx, true), 0);
	/* b later, a disarmed: c's deadline is the next after b's. */
	b->comp.ack_deadline = 5 * mr_ack_timeout_ns(TO_CODE);
	rc_timer_update(b);
	a->comp.ack_deadline = UINT64_MAX;
	rc_timer_update(a);
	assert_int_equal(mr_ctx_next_expiry(f.ctx), 5 * mr_ack_timeout_ns(TO_CODE));
	assert_int_equal(a->tm_pos, 0);
	assert_int_equal(f.ctx->tm->n, 2);

	/* Moved earlier without the mark: a lost timer, which the audit sees. */
	b->comp.ack_deadline = 700;
	assert_true(rc_timer_audit(f.ctx, false) > 0);
	rc_timer_update(b);
	assert_int_equal(rc_timer_audit(f.ctx, false), 0);
	assert_int_equal(mr_ctx_next_expiry(f.ctx), 700);
	/* Moved later without the mark: only early (a visit with nothing due), not lost. */
	b->comp.ack_deadline = 800;
	assert_int_equal(rc_timer_audit(f.ctx, false), 0);
	assert_true(rc_timer_audit(f.ctx, true) > 0);
	mr_ctx_on_timer(f.ctx, 700); /* visits b: nothing due, re-keyed */
	assert_int_equal(fx_timeouts(b), 0);
	assert_int_equal(mr_ctx_next_expiry(f.ctx), 800);
	assert_int_equal(rc_timer_audit(f.ctx, true), 0);
	/* An entry point marks the QP it serves: the packet path re-keys b without the call. */
	b->comp.ack_deadline = 750;
	{
		struct mr_pkt pkt;

		memset(&pkt, 0, sizeof(pkt));
		pkt.hdr.dqpn = mr_qp_num(b);
		pkt.hdr.pkey = 0xffff;
		pkt.hdr.opcode = 0x1f; /* reserved RC opcode: dropped after dispatch */
		mr_ctx_rx(f.ctx, &pkt, 740);
	}
	assert_int_equal(mr_ctx_next_expiry(f.ctx), 750);
	fx_fini(&f);
}

/* Destroy, RESET and ERR take QPs off the heap; the rest still fire, in order. */
static void test_destroy_reset_err(void **state)
{
	const uint32_t n = 1000;
	const uint64_t to = mr_ack_timeout_ns(TO_CODE);
	struct mr_qp_attr a;
	uint32_t left = 0, fired = 0;
	uint64_t last = 0;
	struct fx f;

	(void)state;
	fx_init(&f, n);
	for (uint32_t i = 0; i < n; i++) {
		fx_qp(&f, false);
		fx_send(f.qp[i], i);
		assert_int_equal(fx_drain(&f, (uint64_t)i * STEP_NS, NULL), 1);
	}
	memset(&a, 0, sizeof(a));
	for (uint32_t i = 0; i < n; i++) {
		switch (i % 4) {
		case 0:
			assert_int_equal(mr_qp_destroy(f.qp[i]), 0);
			f.qp[i] = NULL;
			break;
		case 1:
			a.qp_state = MR_QPS_RESET;
			assert_int_equal(mr_qp_modify(f.qp[i], &a, MR_QP_STATE), 0);
			assert_int_equal(f.qp[i]->tm_pos, 0);
			break;
		case 2:
			a.qp_state = MR_QPS_ERR;
			assert_int_equal(mr_qp_modify(f.qp[i], &a, MR_QP_STATE), 0);
			break;
		default:
			left++;
			break;
		}
		if (i % 50 == 0)
			assert_int_equal(rc_timer_audit(f.ctx, true), 0);
	}
	assert_int_equal(mr_ctx_next_expiry(f.ctx), to + 3 * STEP_NS);
	assert_int_equal(f.ctx->tm->n, left);
	assert_int_equal(rc_timer_audit(f.ctx, true), 0);
	/* New QPs reuse freed slots (next fit) and join with fresh deadlines. */
	for (uint32_t i = 0; i < 10; i++) {
		struct mr_qp *qp = fx_qp(&f, false);

		fx_send(qp, 5000 + i);
		assert_int_equal(fx_drain(&f, 2 * to + i, NULL), 1);
		left++;
	}
	assert_int_equal(rc_timer_audit(f.ctx, true), 0); /* re-keys the dirty QPs */
	assert_int_equal(f.ctx->tm->n, left);
	/* Run everything to retry exhaustion: 8 timeouts per QP (retry_cnt 7, C9-141). */
	for (;;) {
		uint64_t t = mr_ctx_next_expiry(f.ctx);

		if (t == UINT64_MAX)
			break;
		assert_true(t >= last);
		assert_int_equal(t, fx_brute_min(&f));
		last = t;
		mr_ctx_on_timer(f.ctx, t);
		fx_drain(&f, t, NULL);
		fired++;
	}
	assert_int_equal(fired, 8 * left);
	assert_int_equal(f.ctx->tm->n, 0);
	/* Destroy half of what is left, then the ctx with the rest (ASan: no dangling slot). */
	for (uint32_t s = 0; s < n; s += 2)
		if (f.qp[s] != NULL) {
			assert_int_equal(mr_qp_destroy(f.qp[s]), 0);
			f.qp[s] = NULL;
		}
	fx_fini(&f);
}

/* The arming rule of the former timer list: an RC RNR wait (IBA 9.7.5.2.8) keeps a QP armed
 * even without a finite expiry; the RNR timer fires at rnr_until and disarms it. */
static void test_rnr_wait_armed(void **state)
{
	struct mr_qp *qp;
	struct fx f;

	(void)state;
	fx_init(&f, 4);
	qp = fx_qp(&f, false);
	qp->req.rnr_wait = true;
	qp->req.rnr_until = UINT64_MAX;
	rc_timer_update(qp);
	assert_int_equal(mr_ctx_next_expiry(f.ctx), UINT64_MAX);
	assert_int_not_equal(qp->tm_pos, 0);
	qp->req.rnr_until = 12345;
	rc_timer_update(qp);
	assert_int_equal(mr_ctx_next_expiry(f.ctx), 12345);
	mr_ctx_on_timer(f.ctx, 12344);
	assert_true(qp->req.rnr_wait);
	mr_ctx_on_timer(f.ctx, 12345);
	assert_false(qp->req.rnr_wait);
	assert_int_equal(mr_ctx_next_expiry(f.ctx), UINT64_MAX);
	assert_int_equal(qp->tm_pos, 0);
	fx_fini(&f);
}

/* Random arm / move / disarm / destroy / create / run against a brute-force minimum: the heap
 * order, the positions, and no QP still due after a run at now (its handler cleared it). */
static void test_heap_random(void **state)
{
	const uint32_t n = 257;
	uint64_t r = 0x9e3779b97f4a7c15ull, now = 0;
	struct fx f;

	(void)state;
	fx_init(&f, n);
	for (uint32_t i = 0; i < n; i++)
		fx_qp(&f, false);
	for (uint32_t step = 0; step < 20000; step++) {
		uint32_t s = (uint32_t)(xs(&r) % n), op = (uint32_t)(xs(&r) % 16);
		struct mr_qp *qp = f.qp[s];

		if (qp == NULL) {
			fx_qp(&f, false);
			continue;
		}
		if (op < 8) {
			qp->comp.ack_deadline = now + xs(&r) % 100000;
			rc_timer_update(qp);
		} else if (op < 10) {
			qp->resp.ack_deadline = now + xs(&r) % 100000;
			rc_timer_update(qp);
		} else if (op < 12) {
			qp->comp.ack_deadline = UINT64_MAX;
			rc_timer_update(qp);
		} else if (op == 12) {
			assert_int_equal(mr_qp_destroy(qp), 0);
			f.qp[s] = NULL;
		} else {
			now += xs(&r) % 20000;
			mr_ctx_on_timer(f.ctx, now);
			assert_true(mr_ctx_next_expiry(f.ctx) > now);
		}
		assert_int_equal(mr_ctx_next_expiry(f.ctx), fx_brute_min(&f));
		if (step % 64 == 0)
			assert_int_equal(rc_timer_audit(f.ctx, true), 0);
	}
	fx_fini(&f);
}

/* MetaRoCE: TLP and RTO (RFC 8985 7, RFC 6298 with the IBA 9.7.6.1.3 budget) of 64 QPs in one
 * ctx, run from the heap until each has exhausted retry_cnt: every run leaves the heap exact. */
static void test_metaroce_many(void **state)
{
	const uint32_t n = 64;
	uint64_t now = 0, last = 0;
	uint32_t runs = 0;
	struct fx f;

	(void)state;
	fx_init(&f, n);
	for (uint32_t i = 0; i < n; i++) {
		fx_qp(&f, true);
		fx_send(f.qp[i], i);
		assert_int_equal(fx_drain(&f, (uint64_t)i * STEP_NS, NULL), 1);
	}
	assert_int_equal(rc_timer_audit(f.ctx, true), 0);
	assert_int_equal(f.ctx->tm->n, n);
	for (;;) {
		uint64_t t = mr_ctx_next_expiry(f.ctx);

		if (t == UINT64_MAX)
			break;
		assert_int_equal(t, fx_brute_min(&f));
		assert_true(t >= last);
		last = t;
		now = t > now ? t : now;
		mr_ctx_on_timer(f.ctx, now);
		fx_drain(&f, now, NULL);
		assert_int_equal(rc_timer_audit(f.ctx, true), 0);
		assert_true(++runs < 100000);
	}
	for (uint32_t s = 0; s < n; s++) {
		assert_int_equal(mr_qp_state(f.qp[s]), MR_QPS_ERR);
		assert_true(fx_timeouts(f.qp[s]) > 0);
	}
	fx_fini(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_many_fire_in_order),
		cmocka_unit_test(test_rekey),
		cmocka_unit_test(test_destroy_reset_err),
		cmocka_unit_test(test_rnr_wait_armed),
		cmocka_unit_test(test_heap_random),
		cmocka_unit_test(test_metaroce_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
