/* SPDX-License-Identifier: MIT
 * Go-back-N pinned down exactly, with loss masks instead of random loss (picoquic names its loss
 * tests by mask): which packet is lost decides exactly how many packets are resent (IBA 9.7.4.1,
 * 9.7.5.1: a PSN sequence error NAKs the first missing PSN and the requester resends from there;
 * a local ACK timeout resends from the oldest unacknowledged PSN). Also: the whole RC simulation
 * is deterministic from its seeds.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim/sim_xfer.h"
#include "sim_rc_errors.h"

/* One 8-packet message (8 KiB at MTU 1024). */
static void one_msg(struct mr_sim_xfer_cfg *c, enum mr_wr_opcode op, uint64_t mask_ab,
		    uint64_t mask_ba)
{
	mr_sim_xfer_cfg_init(c);
	c->op = op;
	c->size = 8192;
	c->count = 1;
	c->qp.mtu = 1024;
	c->link_ab.loss_mask = mask_ab;
	c->link_ba.loss_mask = mask_ba;
	if (getenv("MR_SIM_TRACE"))
		c->trace = stderr;
}

static void ok(const struct mr_sim_xfer_result *r, const char *what)
{
	print_message("%-28s retransmits=%llu timeouts=%llu seq_naks=%llu oos=%llu dup_req=%llu "
		      "pkts a->b=%llu b->a=%llu vtime=%.1fus\n",
		      what, (unsigned long long)r->qa.retransmits,
		      (unsigned long long)r->qa.timeouts, (unsigned long long)r->qb.seq_naks_sent,
		      (unsigned long long)r->qb.out_of_sequence,
		      (unsigned long long)r->qb.duplicate_requests,
		      (unsigned long long)r->link_ab.sent, (unsigned long long)r->link_ba.sent,
		      (double)r->elapsed_ns / 1e3);
	assert_int_equal(r->rc, 0);
	assert_int_equal(r->succeeded, 1);
	assert_int_equal(r->bytes_bad, 0);
	assert_int_equal(r->bytes_verified, 8192 + MR_SIM_XFER_GUARD);
}

static void test_write_mask_0x8_middle(void **state)
{
	struct mr_sim_xfer_cfg c;
	struct mr_sim_xfer_result r;
	(void)state;

	/* Request packet 3 of 0..7 lost: the responder NAKs PSN 3 once, 4..7 are out of
	 * sequence, the requester resends 3..7. No timeout. */
	one_msg(&c, MR_WR_RDMA_WRITE, 1ull << 3, 0);
	mr_sim_xfer_run(&c, &r);
	ok(&r, "write mask 0x8 (middle)");
	assert_int_equal(r.qb.seq_naks_sent, 1);
	assert_int_equal(r.qa.seq_naks_rcvd, 1);
	assert_int_equal(r.qb.out_of_sequence, 4);
	assert_int_equal(r.qa.retransmits, 5);
	assert_int_equal(r.qa.timeouts, 0);
	assert_int_equal(r.link_ab.sent, 8 + 5);
	assert_int_equal(r.qb.duplicate_requests, 0);
}

static void test_write_mask_0x80_tail(void **state)
{
	struct mr_sim_xfer_cfg c;
	struct mr_sim_xfer_result r;
	(void)state;

	/* The last packet lost: nothing follows to reveal the gap, so only the ACK timeout
	 * recovers it, and go-back-N resends from the oldest unacknowledged PSN. AckReq is only on
	 * the last packet (as rxe does), so whether 0..6 were acknowledged before the timeout is
	 * the responder's choice (a coalesced ACK may or may not have gone out): either just PSN 7
	 * is resent, or all 8 and the responder sees 0..6 again as duplicates. */
	one_msg(&c, MR_WR_RDMA_WRITE, 1ull << 7, 0);
	mr_sim_xfer_run(&c, &r);
	ok(&r, "write mask 0x80 (tail)");
	assert_int_equal(r.qa.timeouts, 1);
	assert_int_equal(r.qb.seq_naks_sent, 0);
	assert_true(r.qa.retransmits == 1 || r.qa.retransmits == 8);
	assert_int_equal(r.qb.duplicate_requests, r.qa.retransmits - 1);
	assert_int_equal(r.link_ab.sent, 8 + r.qa.retransmits);
	assert_true(r.elapsed_ns >= mr_ack_timeout_ns(c.qp.timeout));
}

static void test_write_ack_lost(void **state)
{
	struct mr_sim_xfer_cfg c;
	struct mr_sim_xfer_result r;
	(void)state;

	/* The only ACK lost: timeout, the whole message is resent from its first PSN, the
	 * responder sees 8 duplicates (IBA 9.7.5.1.1 answers them with an ACK, no re-execution). */
	one_msg(&c, MR_WR_RDMA_WRITE, 0, 1ull << 0);
	mr_sim_xfer_run(&c, &r);
	ok(&r, "write ack lost (ba 0x1)");
	assert_int_equal(r.qa.timeouts, 1);
	assert_int_equal(r.qa.retransmits, 8);
	assert_int_equal(r.qb.duplicate_requests, 8);
	assert_int_equal(r.link_ab.sent, 16);
}

static void test_read_response_lost(void **state)
{
	struct mr_sim_xfer_cfg c;
	struct mr_sim_xfer_result r;
	(void)state;

	/* Response 3 of 0..7 lost: the requester re-issues one READ for PSNs 3..7 (address and
	 * length advanced, IBA 9.7.4.1.4 / as rxe does); the responder sends 5 responses again. */
	one_msg(&c, MR_WR_RDMA_READ, 0, 1ull << 3);
	mr_sim_xfer_run(&c, &r);
	ok(&r, "read mask ba 0x8");
	assert_int_equal(r.qa.retransmits, 1);
	assert_int_equal(r.link_ab.sent, 2);
	assert_int_equal(r.link_ba.sent, 8 + 5);
	assert_int_equal(r.qa.timeouts, 0);
}

static void test_send_mask_first(void **state)
{
	struct mr_sim_xfer_cfg c;
	struct mr_sim_xfer_result r;
	(void)state;

	/* SEND_FIRST lost: every later packet is out of sequence, one NAK, all 8 resent. */
	one_msg(&c, MR_WR_SEND, 1ull << 0, 0);
	mr_sim_xfer_run(&c, &r);
	ok(&r, "send mask 0x1 (first)");
	assert_int_equal(r.qb.seq_naks_sent, 1);
	assert_int_equal(r.qa.retransmits, 8);
	assert_int_equal(r.qb.out_of_sequence, 7);
	assert_int_equal(r.recv_completed, 1);
}

static void run_det(uint64_t seed_ab, struct mr_sim_xfer_result *r)
{
	struct mr_sim_xfer_cfg c;

	mr_sim_xfer_cfg_init(&c);
	c.op = MR_WR_RDMA_WRITE;
	c.size = 65536;
	c.count = 16;
	c.nqp = 2;
	c.qp.mtu = 1024;
	c.link_ab.loss = 0.02;
	c.link_ab.reorder = 0.01;
	c.link_ab.reorder_delay_ns = 20000;
	c.link_ab.dup = 0.01;
	c.link_ab.jitter_ns = 500;
	c.link_ab.seed = seed_ab;
	c.link_ba.loss = 0.02;
	mr_sim_xfer_run(&c, r);
	assert_int_equal(r->rc, 0);
	assert_int_equal(r->bytes_bad, 0);
	assert_int_equal(r->succeeded, 16);
}

static void test_rc_sim_deterministic(void **state)
{
	struct mr_sim_xfer_result a, b, d;
	(void)state;

	run_det(77, &a);
	run_det(77, &b);
	run_det(78, &d);
	/* Same seeds: the same run, counter for counter and to the nanosecond. */
	assert_int_equal(a.elapsed_ns, b.elapsed_ns);
	assert_memory_equal(&a.qa, &b.qa, sizeof(a.qa));
	assert_memory_equal(&a.qb, &b.qb, sizeof(a.qb));
	assert_memory_equal(&a.link_ab, &b.link_ab, sizeof(a.link_ab));
	assert_memory_equal(&a.link_ba, &b.link_ba, sizeof(a.link_ba));
	assert_int_equal(a.lat_p99_ns, b.lat_p99_ns);
	/* Another link seed: another run. */
	assert_true(a.elapsed_ns != d.elapsed_ns ||
		    memcmp(&a.link_ab, &d.link_ab, sizeof(a.link_ab)) != 0);
	print_message("determinism: seed 77 -> %.1f us, %llu retransmits; seed 78 -> %.1f us, "
		      "%llu retransmits\n",
		      (double)a.elapsed_ns / 1e3, (unsigned long long)a.qa.retransmits,
		      (double)d.elapsed_ns / 1e3, (unsigned long long)d.qa.retransmits);
}

int test_sim_rc_mask(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_write_mask_0x8_middle),
		cmocka_unit_test(test_write_mask_0x80_tail),
		cmocka_unit_test(test_write_ack_lost),
		cmocka_unit_test(test_read_response_lost),
		cmocka_unit_test(test_send_mask_first),
		cmocka_unit_test(test_rc_sim_deterministic),
	};

	return cmocka_run_group_tests_name("mask", t, NULL, NULL);
}
