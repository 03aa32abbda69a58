/* SPDX-License-Identifier: MIT
 * Deregistration with work in flight (IBA 10.6.7; issue 8 defect 2), RC and MetaRoCE: after
 * mr_dereg() the memory may be unmapped and reused by another app (here: overwritten with a
 * marker), so no retransmission, READ response or placement may touch it again. In-flight
 * work completes in error, the peer gets the NAK for a gone key, and no byte of the marker
 * reaches the peer nor any peer byte lands in the old range.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rc_harness.h"

#define SEC 1000000000ull
#define LEN 4096u
#define MARK 0xee /* "another app's bytes" now mapped where the MR was */

/* Move one packet from side `from` to the other, logged like tw_pump's. */
static bool step(struct tw *w, int from)
{
	static uint8_t buf[4096];
	struct mr_tx_pkt tx;
	uint32_t off = 0, idx;

	if (mr_ctx_tx(w->s[from].ctx, w->now, &tx) != 1)
		return false;
	for (unsigned int i = 0; i < tx.niov; i++) {
		memcpy(buf + off, tx.iov[i].base, tx.iov[i].len);
		off += tx.iov[i].len;
	}
	idx = w->sent[from]++;
	if (idx < TW_MAX_LOG) {
		w->log[from][idx] = tx.hdr;
		w->log_paylen[from][idx] = tx.paylen;
	}
	tw_inject(w, 1 - from, &tx.hdr, buf, off);
	return true;
}

static void cfg_for(struct tw_cfg *c, bool mrt)
{
	if (mrt)
		tw_metaroce_cfg(c, 4);
	else
		tw_default_cfg(c);
}

static bool has_byte(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] == v)
			return true;
	return false;
}

static bool all_byte(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* WRITE source deregistered while the message waits for retransmission: the resend must not
 * gather from the old range (SEGV in mr_frame_build / another app's bytes on the wire). */
static void write_source(bool mrt)
{
	static uint8_t src[LEN], dst[LEN];
	struct tw_cfg c;
	struct tw *w;
	struct mr_memreg *ms, *md;
	struct mr_send_wr wr;
	struct mr_wc wc;

	cfg_for(&c, mrt);
	w = tw_create(&c);
	memset(src, 0xab, sizeof(src));
	memset(dst, 0, sizeof(dst));
	ms = tw_reg(w, 0, src, LEN, MR_ACCESS_LOCAL_WRITE);
	md = tw_reg(w, 1, dst, LEN, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE);
	wr = tw_wr(1, MR_WR_RDMA_WRITE, src, LEN, ms);
	wr.rdma.remote_addr = (uint64_t)(uintptr_t)dst;
	wr.rdma.rkey = mr_memreg_rkey(md);
	tw_post_send(w, 0, &wr);
	w->drop_all[0] = true;
	tw_pump(w, false, 0); /* every packet lost: all of it awaits retransmission */
	w->drop_all[0] = false;
	assert_int_equal(mr_dereg(ms), 0);
	memset(src, MARK, sizeof(src));
	tw_pump(w, true, SEC);

	assert_false(has_byte(dst, LEN, MARK));
	tw_poll(w->s[0].scq, 1, &wc);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, MR_WC_LOC_PROT_ERR);
	assert_int_equal(mr_qp_state(w->s[0].qp), MR_QPS_ERR);
	tw_destroy(w);
}

static void test_rc_write_source(void **state)
{
	(void)state;
	write_source(false);
}

static void test_mrt_write_source(void **state)
{
	(void)state;
	write_source(true);
}

/* READ sink deregistered while its responses are outstanding: retried READ responses must
 * not land in the old range. */
static void read_sink(bool mrt)
{
	static uint8_t src[LEN], sink[LEN];
	struct tw_cfg c;
	struct tw *w;
	struct mr_memreg *mk, *msrc;
	struct mr_send_wr wr;
	struct mr_wc wc;

	cfg_for(&c, mrt);
	w = tw_create(&c);
	memset(src, 0xab, sizeof(src));
	memset(sink, 0, sizeof(sink));
	mk = tw_reg(w, 0, sink, LEN, MR_ACCESS_LOCAL_WRITE);
	msrc = tw_reg(w, 1, src, LEN, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_READ);
	wr = tw_wr(1, MR_WR_RDMA_READ, sink, LEN, mk);
	wr.rdma.remote_addr = (uint64_t)(uintptr_t)src;
	wr.rdma.rkey = mr_memreg_rkey(msrc);
	tw_post_send(w, 0, &wr);
	w->drop_all[1] = true;
	tw_pump(w, false, 0); /* request arrives, every response lost */
	w->drop_all[1] = false;
	assert_int_equal(mr_dereg(mk), 0);
	memset(sink, 0x11, sizeof(sink));
	tw_pump(w, true, SEC);

	assert_true(all_byte(sink, LEN, 0x11));
	tw_poll(w->s[0].scq, 1, &wc);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, MR_WC_LOC_PROT_ERR);
	assert_int_equal(mr_qp_state(w->s[0].qp), MR_QPS_ERR);
	tw_destroy(w);
}

static void test_rc_read_sink(void **state)
{
	(void)state;
	read_sink(false);
}

static void test_mrt_read_sink(void **state)
{
	(void)state;
	read_sink(true);
}

/* RC WRITE in progress at the responder (resp.wptr) when its target is deregistered: the
 * next MIDDLE gets the REM_ACCESS_ERR NAK (class C) and nothing more is written. */
static void test_rc_write_middle_after_dereg(void **state)
{
	static uint8_t src[3072], dst[3072];
	struct tw_cfg c;
	struct tw *w;
	struct mr_memreg *ms, *md;
	struct mr_send_wr wr;
	struct mr_wc wc;

	(void)state;
	tw_default_cfg(&c);
	w = tw_create(&c);
	memset(src, 0xab, sizeof(src));
	memset(dst, 0, sizeof(dst));
	ms = tw_reg(w, 0, src, sizeof(src), MR_ACCESS_LOCAL_WRITE);
	md = tw_reg(w, 1, dst, sizeof(dst), MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE);
	wr = tw_wr(1, MR_WR_RDMA_WRITE, src, sizeof(src), ms);
	wr.rdma.remote_addr = (uint64_t)(uintptr_t)dst;
	wr.rdma.rkey = mr_memreg_rkey(md);
	tw_post_send(w, 0, &wr);
	assert_true(step(w, 0)); /* WRITE FIRST placed */
	assert_int_equal(w->log[0][0].opcode, MR_OP_RC_WRITE_FIRST);
	assert_true(all_byte(dst, 1024, 0xab));
	assert_int_equal(mr_dereg(md), 0);
	tw_pump(w, true, SEC);

	assert_true(all_byte(dst + 1024, sizeof(dst) - 1024, 0)); /* MIDDLE/LAST not placed */
	assert_int_equal(tw_count_syndrome(w, 1, MR_AETH_NAK | MR_NAK_REM_ACCESS_ERR), 1);
	tw_poll(w->s[0].scq, 1, &wc);
	assert_int_equal(wc.status, MR_WC_REM_ACCESS_ERR);
	assert_int_equal(mr_qp_state(w->s[0].qp), MR_QPS_ERR);
	assert_int_equal(mr_qp_state(w->s[1].qp), MR_QPS_ERR);
	tw_destroy(w);
}

/* A READ request accepted and queued at the responder, its source deregistered before the
 * responses go out: the peer gets REM_ACCESS_ERR, never bytes of the old range. */
static void queued_read(bool mrt)
{
	static uint8_t src[LEN], sink[LEN];
	struct tw_cfg c;
	struct tw *w;
	struct mr_memreg *mk, *msrc;
	struct mr_send_wr wr;
	struct mr_wc wc;

	cfg_for(&c, mrt);
	w = tw_create(&c);
	memset(src, 0xab, sizeof(src));
	memset(sink, 0, sizeof(sink));
	mk = tw_reg(w, 0, sink, LEN, MR_ACCESS_LOCAL_WRITE);
	msrc = tw_reg(w, 1, src, LEN, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_READ);
	wr = tw_wr(1, MR_WR_RDMA_READ, sink, LEN, mk);
	wr.rdma.remote_addr = (uint64_t)(uintptr_t)src;
	wr.rdma.rkey = mr_memreg_rkey(msrc);
	tw_post_send(w, 0, &wr);
	assert_true(step(w, 0)); /* the READ request: responses queued at B */
	assert_int_equal(mr_dereg(msrc), 0);
	memset(src, MARK, sizeof(src));
	tw_pump(w, true, SEC);

	assert_false(has_byte(sink, LEN, MARK));
	assert_int_equal(tw_stats(w, 1).rem_access_naks_sent, 1);
	assert_int_equal(tw_stats(w, 0).rem_access_naks_rcvd, 1);
	tw_poll(w->s[0].scq, 1, &wc);
	assert_int_equal(wc.status, MR_WC_REM_ACCESS_ERR);
	assert_int_equal(mr_qp_state(w->s[0].qp), MR_QPS_ERR);
	assert_int_equal(mr_qp_state(w->s[1].qp), MR_QPS_ERR);
	tw_destroy(w);
}

static void test_rc_queued_read(void **state)
{
	(void)state;
	queued_read(false);
}

static void test_mrt_queued_read(void **state)
{
	(void)state;
	queued_read(true);
}

/* A receive bound to host pointers by the first packet of a SEND, its buffer deregistered
 * before the rest arrives: the rest is never placed; the receive completes in error. */
static void bound_recv(bool mrt)
{
	static uint8_t src[3072], rbuf[3072];
	struct tw_cfg c;
	struct tw *w;
	struct mr_memreg *ms, *mrcv;
	struct mr_send_wr wr;
	struct mr_wc wc;

	cfg_for(&c, mrt);
	w = tw_create(&c);
	memset(src, 0xab, sizeof(src));
	memset(rbuf, 0, sizeof(rbuf));
	ms = tw_reg(w, 0, src, sizeof(src), MR_ACCESS_LOCAL_WRITE);
	mrcv = tw_reg(w, 1, rbuf, sizeof(rbuf), MR_ACCESS_LOCAL_WRITE);
	tw_post_recv(w, 1, 7, rbuf, sizeof(rbuf), mrcv);
	wr = tw_wr(1, MR_WR_SEND, src, sizeof(src), ms);
	tw_post_send(w, 0, &wr);
	assert_true(step(w, 0)); /* SEND FIRST placed: the receive is bound */
	assert_true(all_byte(rbuf, 1024, 0xab));
	assert_int_equal(mr_dereg(mrcv), 0);
	tw_pump(w, true, SEC);

	assert_true(all_byte(rbuf + 1024, sizeof(rbuf) - 1024, 0));
	tw_poll(w->s[1].rcq, 1, &wc);
	assert_int_equal(wc.wr_id, 7);
	assert_int_not_equal(wc.status, MR_WC_SUCCESS);
	tw_poll(w->s[0].scq, 1, &wc);
	assert_int_equal(wc.status, MR_WC_REM_OP_ERR);
	assert_int_equal(mr_qp_state(w->s[1].qp), MR_QPS_ERR);
	tw_destroy(w);
}

static void test_rc_bound_recv(void **state)
{
	(void)state;
	bound_recv(false);
}

static void test_mrt_bound_recv(void **state)
{
	(void)state;
	bound_recv(true);
}

/* Deregistering an MR that nothing in flight uses changes nothing, and a second
 * registration of the same memory keeps its in-flight work (references go by key). */
static void test_dereg_idle_and_overlap(void **state)
{
	static uint8_t src[LEN], dst[LEN];
	struct tw_cfg c;
	struct tw *w;
	struct mr_memreg *ms, *ms2, *md;
	struct mr_send_wr wr;
	struct mr_wc wc;

	(void)state;
	tw_default_cfg(&c);
	w = tw_create(&c);
	memset(src, 0xab, sizeof(src));
	memset(dst, 0, sizeof(dst));
	ms = tw_reg(w, 0, src, LEN, MR_ACCESS_LOCAL_WRITE);
	ms2 = tw_reg(w, 0, src, LEN, MR_ACCESS_LOCAL_WRITE);
	md = tw_reg(w, 1, dst, LEN, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE);
	wr = tw_wr(1, MR_WR_RDMA_WRITE, src, LEN, ms);
	wr.rdma.remote_addr = (uint64_t)(uintptr_t)dst;
	wr.rdma.rkey = mr_memreg_rkey(md);
	tw_post_send(w, 0, &wr);
	w->drop_all[0] = true;
	tw_pump(w, false, 0);
	w->drop_all[0] = false;
	assert_int_equal(mr_dereg(ms2), 0);
	tw_pump(w, true, SEC);
	tw_poll(w->s[0].scq, 1, &wc);
	assert_int_equal(wc.status, MR_WC_SUCCESS);
	assert_true(all_byte(dst, LEN, 0xab));
	assert_int_equal(mr_qp_state(w->s[0].qp), MR_QPS_RTS);
	tw_destroy(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rc_write_source),
		cmocka_unit_test(test_mrt_write_source),
		cmocka_unit_test(test_rc_read_sink),
		cmocka_unit_test(test_mrt_read_sink),
		cmocka_unit_test(test_rc_write_middle_after_dereg),
		cmocka_unit_test(test_rc_queued_read),
		cmocka_unit_test(test_mrt_queued_read),
		cmocka_unit_test(test_rc_bound_recv),
		cmocka_unit_test(test_mrt_bound_recv),
		cmocka_unit_test(test_dereg_idle_and_overlap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
