/* SPDX-License-Identifier: MIT
 * Shared receive queues (rc_srq.c) for plain RC and MetaRoCE: receives are consumed in the
 * order they were posted to the SRQ, one per message; an empty SRQ gets the RNR NAK and the
 * message lands once a receive is posted; MetaRoCE's reordered arrivals still complete in
 * message order into the right buffers; the verbs rules (no mr_post_recv on an SRQ QP, no
 * destroy while a QP uses it, same PD).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rc_harness.h"

#define MSGS 4
#define LEN 2500 /* 3 packets at MTU 1024 */

static void srq_post(struct tw *w, uint64_t id, void *buf, uint32_t len,
		     const struct mr_memreg *mr)
{
	struct mr_recv_wr r;

	memset(&r, 0, sizeof(r));
	r.wr_id = id;
	r.num_sge = 1;
	r.sg_list[0].addr = (uint64_t)(uintptr_t)buf;
	r.sg_list[0].length = len;
	r.sg_list[0].lkey = mr_memreg_lkey(mr);
	assert_int_equal(mr_post_srq_recv(w->s[1].srq, &r), 0);
}

static void sends_through_srq(enum mr_transport t)
{
	static uint8_t src[MSGS][LEN], dst[MSGS][LEN + 16];
	struct mr_memreg *ms, *md;
	struct mr_send_wr wr;
	struct mr_wc wc[MSGS];
	struct tw_cfg c;
	struct tw *w;

	if (t == MR_TRANSPORT_METAROCE)
		tw_metaroce_cfg(&c, 4);
	else
		tw_default_cfg(&c);
	c.srq_depth = 8;
	w = tw_create(&c);
	if (t == MR_TRANSPORT_METAROCE)
		w->shuffle[0] = 12; /* every message's packets and the messages reordered */
	ms = tw_reg(w, 0, src, sizeof(src), 0);
	md = tw_reg(w, 1, dst, sizeof(dst), MR_ACCESS_LOCAL_WRITE);
	memset(dst, 0xee, sizeof(dst));
	/* posted in reverse buffer order: the n-th message must land in the n-th posted */
	for (int i = 0; i < MSGS; i++)
		srq_post(w, 50 + (uint64_t)i, dst[MSGS - 1 - i], LEN, md);
	assert_int_equal(mr_srq_count(w->s[1].srq), MSGS);
	for (int i = 0; i < MSGS; i++) {
		tw_fill(src[i], LEN, (uint32_t)i + 1);
		wr = tw_wr((uint64_t)i, MR_WR_SEND, src[i], LEN, ms);
		tw_post_send(w, 0, &wr);
	}
	tw_pump(w, true, 1000000000ull);
	tw_poll(w->s[1].rcq, MSGS, wc);
	for (int i = 0; i < MSGS; i++) {
		assert_int_equal(wc[i].status, MR_WC_SUCCESS);
		assert_int_equal(wc[i].wr_id, 50 + (uint64_t)i);
		assert_int_equal(wc[i].byte_len, LEN);
		assert_int_equal(wc[i].qp_num, mr_qp_num(w->s[1].qp));
		assert_memory_equal(dst[MSGS - 1 - i], src[i], LEN);
		assert_int_equal(dst[MSGS - 1 - i][LEN], 0xee);
	}
	assert_int_equal(mr_srq_count(w->s[1].srq), 0);
	tw_poll(w->s[0].scq, MSGS, wc);
	tw_destroy(w);
}

static void test_rc_srq_sends(void **state)
{
	(void)state;
	sends_through_srq(MR_TRANSPORT_RC);
}

static void test_mrt_srq_sends(void **state)
{
	(void)state;
	sends_through_srq(MR_TRANSPORT_METAROCE);
}

/* Empty SRQ: RNR NAK; after a receive is posted the resend lands. */
static void rnr_then_post(enum mr_transport t)
{
	uint8_t src[100], dst[100];
	struct mr_memreg *ms, *md;
	struct mr_send_wr wr;
	struct mr_wc wc;
	struct tw_cfg c;
	struct tw *w;

	if (t == MR_TRANSPORT_METAROCE)
		tw_metaroce_cfg(&c, 2);
	else
		tw_default_cfg(&c);
	c.srq_depth = 2;
	w = tw_create(&c);
	tw_fill(src, sizeof(src), 9);
	ms = tw_reg(w, 0, src, sizeof(src), 0);
	md = tw_reg(w, 1, dst, sizeof(dst), MR_ACCESS_LOCAL_WRITE);
	wr = tw_wr(1, MR_WR_SEND, src, sizeof(src), ms);
	tw_post_send(w, 0, &wr);
	tw_pump(w, false, 0);
	assert_true(tw_stats(w, 1).rnr_naks_sent >= 1);
	assert_int_equal(mr_cq_poll(w->s[1].rcq, 1, &wc), 0);
	srq_post(w, 77, dst, sizeof(dst), md);
	tw_pump(w, true, 1000000000ull);
	tw_poll(w->s[1].rcq, 1, &wc);
	assert_int_equal(wc.status, MR_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 77);
	assert_memory_equal(dst, src, sizeof(src));
	tw_poll(w->s[0].scq, 1, &wc);
	assert_int_equal(wc.status, MR_WC_SUCCESS);
	tw_destroy(w);
}

static void test_rc_srq_rnr(void **state)
{
	(void)state;
	rnr_then_post(MR_TRANSPORT_RC);
}

static void test_mrt_srq_rnr(void **state)
{
	(void)state;
	rnr_then_post(MR_TRANSPORT_METAROCE);
}

static void test_srq_rules(void **state)
{
	uint8_t buf[64];
	struct mr_qp_init_attr ia;
	struct mr_recv_wr r;
	struct mr_memreg *md;
	struct mr_srq *s2;
	struct mr_pd *pd2;
	struct tw_cfg c;
	struct tw *w;

	(void)state;
	tw_default_cfg(&c);
	c.srq_depth = 4;
	w = tw_create(&c);
	md = tw_reg(w, 1, buf, sizeof(buf), MR_ACCESS_LOCAL_WRITE);
	memset(&r, 0, sizeof(r));
	r.num_sge = 1;
	r.sg_list[0].addr = (uint64_t)(uintptr_t)buf;
	r.sg_list[0].length = sizeof(buf);
	r.sg_list[0].lkey = mr_memreg_lkey(md);
	assert_int_equal(mr_post_recv(w->s[1].qp, &r), -EINVAL); /* post to the SRQ instead */
	for (int i = 0; i < 4; i++)
		assert_int_equal(mr_post_srq_recv(w->s[1].srq, &r), 0);
	assert_int_equal(mr_post_srq_recv(w->s[1].srq, &r), -ENOMEM);
	r.num_sge = MR_MAX_SGE + 1;
	assert_int_equal(mr_post_srq_recv(w->s[1].srq, &r), -EINVAL);
	assert_int_equal(mr_srq_destroy(w->s[1].srq), -EBUSY);
	assert_null(mr_srq_create(w->s[1].pd, 0));
	assert_int_equal(errno, EINVAL);
	/* an SRQ of another PD cannot serve this PD's QP */
	pd2 = mr_pd_alloc(w->s[1].ctx);
	s2 = mr_srq_create(pd2, 4);
	assert_non_null(s2);
	memset(&ia, 0, sizeof(ia));
	ia.pd = w->s[1].pd;
	ia.send_cq = ia.recv_cq = w->s[1].rcq;
	ia.max_send_wr = 4;
	ia.srq = s2;
	assert_null(mr_qp_create(w->s[1].ctx, &ia));
	assert_int_equal(mr_pd_free(pd2), -EBUSY); /* the SRQ holds it */
	assert_int_equal(mr_srq_destroy(s2), 0);
	assert_int_equal(mr_pd_free(pd2), 0);
	/* after the QP is gone the SRQ can go */
	assert_int_equal(mr_qp_destroy(w->s[1].qp), 0);
	w->s[1].qp = NULL;
	assert_int_equal(mr_srq_destroy(w->s[1].srq), 0);
	tw_destroy(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rc_srq_sends),
		cmocka_unit_test(test_mrt_srq_sends),
		cmocka_unit_test(test_rc_srq_rnr),
		cmocka_unit_test(test_mrt_srq_rnr),
		cmocka_unit_test(test_srq_rules),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
