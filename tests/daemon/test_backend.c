/* SPDX-License-Identifier: MIT
 * metaroced backend (apps/metaroced/backend.c): the shm ops over the RC transport. Checks the
 * path the daemon composes (addresses, traffic class, UDP source port), query_port's GIDs, and
 * a WRITE between two backends whose frames go through the real wire builder and parser.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "apps/metaroced/backend.h"

static const uint8_t mac_a[6] = {0x02, 0, 0, 0, 0, 0x0a};
static const uint8_t mac_b[6] = {0x02, 0, 0, 0, 0, 0x0b};
static const uint8_t gid_a[16] = {[10] = 0xff, [11] = 0xff, 198, 18, 0, 1};
static const uint8_t gid_b[16] = {[10] = 0xff, [11] = 0xff, 198, 18, 0, 2};

struct side {
	struct mr_ctx *ctx;
	struct mr_backend *be;
	uint8_t last_path_gid[16];
	int paths;
};

static void on_path(void *arg, const uint8_t dgid[16])
{
	struct side *s = arg;

	memcpy(s->last_path_gid, dgid, 16);
	s->paths++;
}

static void side_init(struct side *s, const uint8_t mac[6], const uint8_t gid[16], uint64_t seed)
{
	struct mr_ctx_params cp = { .max_qp = 16, .first_qpn = 17, .max_mr = 16, .seed = seed };
	struct mr_backend_conf bc = {0};

	memset(s, 0, sizeof(*s));
	s->ctx = mr_ctx_create(&cp);
	assert_non_null(s->ctx);
	bc.ctx = s->ctx;
	memcpy(bc.mac, mac, 6);
	bc.has_ipv4 = true;
	memcpy(bc.ipv4, gid + 12, 4);
	bc.tclass = 26 << 2 | 2; /* DSCP 26, ECT(0) */
	bc.udp_sport_base = 0xc000;
	bc.ib_mtu = 1024;
	bc.max_qp = bc.max_mr = bc.max_cq = 16;
	bc.on_path = on_path;
	bc.on_path_arg = s;
	s->be = mr_backend_create(&bc);
	assert_non_null(s->be);
}

static void side_fini(struct side *s)
{
	mr_backend_destroy(s->be);
	mr_ctx_destroy(s->ctx);
}

static void test_udp_sport(void **state)
{
	uint16_t a, b;
	uint32_t i, distinct = 0;

	(void)state;
	a = mr_backend_udp_sport(0xc000, 17, 18);
	b = mr_backend_udp_sport(0xc000, 17, 18);
	assert_int_equal(a, b); /* fixed per QP pair, also on retransmission */
	for (i = 0; i < 64; i++) {
		uint16_t p = mr_backend_udp_sport(0xc000, 17 + i, 1000);

		assert_true(p >= 0xc000);
		if (p != a)
			distinct++;
	}
	assert_true(distinct > 32); /* entropy: different pairs mostly differ */
	/* A base near the top never wraps past 65535. */
	for (i = 0; i < 256; i++)
		assert_true(mr_backend_udp_sport(65535 - 256, i, i * 7 + 3) >= 65535 - 256);
}

static void test_make_path(void **state)
{
	struct side s;
	struct mrc_path app;
	struct mr_path p;

	(void)state;
	side_init(&s, mac_a, gid_a, 1);
	memset(&app, 0, sizeof(app));
	memcpy(app.dgid, gid_b, 16);
	memset(app.smac, 0xee, 6); /* ignored: the daemon owns its addressing */
	assert_int_equal(mr_backend_make_path(s.be, &app, 17, 18, &p), 0);
	assert_false(p.ipv6); /* IPv4-mapped dgid selects IPv4 framing */
	assert_memory_equal(p.smac, mac_a, 6);
	assert_memory_equal(p.sgid, gid_a, 16);
	assert_memory_equal(p.dgid, gid_b, 16);
	assert_int_equal(p.tclass, 26 << 2 | 2);
	assert_int_equal(p.ttl, 64);
	assert_int_equal(p.udp_sport, mr_backend_udp_sport(0xc000, 17, 18));
	/* App overrides for tclass, ttl and the source port. */
	app.tclass = 0x10;
	app.ttl = 3;
	app.udp_sport = 5000;
	assert_int_equal(mr_backend_make_path(s.be, &app, 17, 18, &p), 0);
	assert_int_equal(p.tclass, 0x10);
	assert_int_equal(p.ttl, 3);
	assert_int_equal(p.udp_sport, 5000);
	/* Unspecified, multicast, broadcast, and a family we have no address for. */
	memset(app.dgid, 0, 16);
	assert_int_equal(mr_backend_make_path(s.be, &app, 17, 18, &p), -EINVAL);
	memcpy(app.dgid, gid_b, 16);
	app.dgid[12] = 224;
	assert_int_equal(mr_backend_make_path(s.be, &app, 17, 18, &p), -EINVAL);
	memset(app.dgid + 12, 0xff, 4);
	assert_int_equal(mr_backend_make_path(s.be, &app, 17, 18, &p), -EINVAL);
	memset(app.dgid, 0, 16);
	app.dgid[0] = 0x20;
	app.dgid[15] = 1;
	assert_int_equal(mr_backend_make_path(s.be, &app, 17, 18, &p), -EAFNOSUPPORT);
	app.dgid[0] = 0xff;
	assert_int_equal(mr_backend_make_path(s.be, &app, 17, 18, &p), -EINVAL);
	assert_true(mr_backend_is_local_gid(s.be, gid_a));
	assert_false(mr_backend_is_local_gid(s.be, gid_b));
	side_fini(&s);
}

static void test_query_port(void **state)
{
	const struct mr_shm_backend_ops *ops = mr_backend_ops();
	static const uint8_t ll[16] = {0xfe, 0x80, [8] = 0x00, 0, 0, 0xff, 0xfe, 0, 0, 0x0a};
	struct mrc_port_attr a;
	struct side s;

	(void)state;
	side_init(&s, mac_a, gid_a, 2);
	assert_int_equal(ops->query_port(s.be, &a), 0);
	assert_int_equal(a.state, MRC_PORT_DOWN);
	mr_backend_set_port_up(s.be, true);
	assert_int_equal(ops->query_port(s.be, &a), 0);
	assert_int_equal(a.state, MRC_PORT_ACTIVE);
	assert_int_equal(a.active_mtu, 1024);
	assert_int_equal(a.gid_count, 2);
	assert_memory_equal(a.gid[0], ll, 16); /* fe80::EUI-64 of 02:00:00:00:00:0a */
	assert_memory_equal(a.gid[1], gid_a, 16);
	assert_memory_equal(a.mac, mac_a, 6);
	side_fini(&s);
}

struct objs {
	void *pd, *mr, *cq, *qp;
	uint32_t lkey, rkey, qpn;
};

static void make_objs(struct side *s, uint8_t *buf, uint64_t iova, uint32_t len, struct objs *o)
{
	const struct mr_shm_backend_ops *ops = mr_backend_ops();
	struct mr_shm_qp_caps caps = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
				       .max_recv_sge = 1, .max_inline_data = 64 };

	assert_int_equal(ops->alloc_pd(s->be, &o->pd), 0);
	assert_int_equal(ops->reg_mr(s->be, o->pd, buf, iova, len, MR_ACCESS_LOCAL_WRITE |
				     MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ, &o->mr,
				     &o->lkey, &o->rkey), 0);
	assert_int_equal(ops->create_cq(s->be, 64, &o->cq), 0);
	assert_int_equal(ops->create_qp(s->be, o->pd, o->cq, o->cq, &caps, &o->qp, &o->qpn), 0);
}

static void qp_connect(struct side *s, struct objs *o, uint32_t dqpn, const uint8_t dgid[16])
{
	const struct mr_shm_backend_ops *ops = mr_backend_ops();
	struct mrc_qp_attr a;
	struct mrc_qp_attr q;

	memset(&a, 0, sizeof(a));
	a.qp_state = MR_QPS_INIT;
	a.qp_access_flags = MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ;
	assert_int_equal(ops->modify_qp(s->be, o->qp, &a, MRC_QP_STATE | MRC_QP_PKEY_INDEX |
					MRC_QP_ACCESS_FLAGS), 0);
	a.qp_state = MR_QPS_RTR;
	memcpy(a.path.dgid, dgid, 16);
	a.path_mtu = 1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = 100;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	assert_int_equal(ops->modify_qp(s->be, o->qp, &a, MRC_QP_STATE | MRC_QP_PATH |
					MRC_QP_PATH_MTU | MRC_QP_DEST_QPN | MRC_QP_RQ_PSN |
					MRC_QP_MAX_DEST_RD_ATOMIC | MRC_QP_MIN_RNR_TIMER), 0);
	assert_int_equal(s->paths, 1);
	assert_memory_equal(s->last_path_gid, dgid, 16);
	a.qp_state = MR_QPS_RTS;
	a.sq_psn = 100;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	assert_int_equal(ops->modify_qp(s->be, o->qp, &a, MRC_QP_STATE | MRC_QP_SQ_PSN |
					MRC_QP_TIMEOUT | MRC_QP_RETRY_CNT | MRC_QP_RNR_RETRY |
					MRC_QP_MAX_QP_RD_ATOMIC), 0);
	assert_int_equal(ops->query_qp(s->be, o->qp, &q), 0);
	assert_int_equal(q.qp_state, MR_QPS_RTS);
	assert_int_equal(q.dest_qp_num, dqpn);
	assert_memory_equal(q.path.dgid, dgid, 16);
	assert_int_equal(q.path.udp_sport, mr_backend_udp_sport(0xc000, o->qpn, dqpn));
}

/* Moves every packet src's transport produces through the wire builder and parser into dst.
 * Checks what the daemon put into the path: IPv4, DSCP/ECN, source MAC and port. */
static unsigned int shuttle(struct side *src, const uint8_t smac[6], struct side *dst,
			    uint16_t sport, uint64_t now)
{
	static uint8_t frame[2048];
	struct mr_tx_pkt pkt;
	unsigned int n = 0;

	while (mr_ctx_tx(src->ctx, now, &pkt) == 1) {
		struct mr_path path = *pkt.path;
		struct mr_pkt p;
		int len;

		memset(path.dmac, 0x02, 6); /* the engine's neighbour cache fills it */
		len = mr_frame_build(frame, sizeof(frame), &path, (uint16_t)n, &pkt.hdr, pkt.iov,
				     pkt.niov);
		assert_true(len > 0);
		assert_int_equal(mr_frame_parse(frame, (uint32_t)len, true, &p), MR_PARSE_OK);
		assert_false(p.ipv6);
		assert_int_equal(frame[12], 0x08); /* EtherType IPv4 */
		assert_int_equal(frame[13], 0x00);
		assert_int_equal(frame[15], 26 << 2 | 2); /* IPv4 TOS: DSCP 26, ECT(0) */
		assert_memory_equal(p.smac, smac, 6);
		assert_int_equal(p.udp_sport, sport);
		assert_int_equal(p.udp_dport, 4791);
		mr_ctx_rx(dst->ctx, &p, now);
		n++;
	}
	return n;
}

static void test_write_between_backends(void **state)
{
	const struct mr_shm_backend_ops *ops = mr_backend_ops();
	static uint8_t buf_a[8192], buf_b[8192];
	struct side a, b;
	struct objs oa, ob;
	struct mr_send_wr wr;
	struct mr_qp_stats st;
	struct mr_wc wc;
	uint64_t now = 1000;
	unsigned int i, moved = 0;
	int got = 0;

	(void)state;
	side_init(&a, mac_a, gid_a, 3);
	side_init(&b, mac_b, gid_b, 4);
	/* iova is the app's address, host the daemon's mapping: deliberately different. */
	make_objs(&a, buf_a, 0x7f0000001000ull, sizeof(buf_a), &oa);
	make_objs(&b, buf_b, 0x7f0000100000ull, sizeof(buf_b), &ob);
	qp_connect(&a, &oa, ob.qpn, gid_b);
	qp_connect(&b, &ob, oa.qpn, gid_a);
	for (i = 0; i < 5000; i++)
		buf_a[i] = (uint8_t)(i * 7 + 1);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 42;
	wr.opcode = MR_WR_RDMA_WRITE;
	wr.send_flags = MR_SEND_SIGNALED;
	wr.num_sge = 1;
	wr.sg_list[0].addr = 0x7f0000001000ull;
	wr.sg_list[0].length = 5000;
	wr.sg_list[0].lkey = oa.lkey;
	wr.rdma.remote_addr = 0x7f0000100000ull + 100;
	wr.rdma.rkey = ob.rkey;
	assert_int_equal(ops->post_send(a.be, oa.qp, &wr), 0);
	for (i = 0; i < 20 && got == 0; i++) {
		moved += shuttle(&a, mac_a, &b, mr_backend_udp_sport(0xc000, oa.qpn, ob.qpn), now);
		moved += shuttle(&b, mac_b, &a, mr_backend_udp_sport(0xc000, ob.qpn, oa.qpn), now);
		got = ops->poll_cq(a.be, oa.cq, 1, &wc);
		now += 1000;
	}
	assert_int_equal(got, 1);
	assert_int_equal(wc.status, MR_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 42);
	assert_int_equal(wc.opcode, MR_WC_RDMA_WRITE);
	assert_int_equal(moved, 5 + 1); /* 5 x 1024-byte MTU packets, 1 ACK */
	assert_memory_equal(buf_b + 100, buf_a, 5000);
	for (i = 0; i < 100; i++)
		assert_int_equal(buf_b[i], 0);
	assert_int_equal(mr_backend_qp_stats_sum(a.be, &st), 1);
	assert_int_equal(st.tx_pkts, 5);
	/* Counters survive the QP (the daemon's totals never go back). */
	assert_int_equal(ops->destroy_qp(a.be, oa.qp), 0);
	assert_int_equal(mr_backend_qp_stats_sum(a.be, &st), 0);
	assert_int_equal(st.tx_pkts, 5);
	assert_int_equal(ops->destroy_qp(b.be, ob.qp), 0);
	assert_int_equal(ops->destroy_cq(a.be, oa.cq), 0);
	assert_int_equal(ops->dereg_mr(a.be, oa.mr), 0);
	assert_int_equal(ops->dealloc_pd(a.be, oa.pd), 0);
	/* b's CQ/MR/PD are left for mr_backend_destroy + mr_ctx_destroy to reclaim. */
	side_fini(&a);
	side_fini(&b);
}

/* Issue 8 defect 2 over the daemon's backend and the real frame builder: the app deregisters
 * and the server unmaps while work is in flight. A's WRITE source goes away while all its
 * packets are lost (the retransmission used to SEGV in mr_frame_build); B's WRITE target goes
 * away after the FIRST packet (the MIDDLE used to be copied into the unmapped range). Now A's
 * WRITE completes LOC_PROT_ERR without another packet, and B NAKs REM_ACCESS_ERR. */
static void test_dereg_unmap_in_flight(void **state)
{
	const struct mr_shm_backend_ops *ops = mr_backend_ops();
	uint8_t *buf_a, *buf_b;
	struct side a, b;
	struct objs oa, ob;
	struct mr_send_wr wr;
	struct mr_tx_pkt pkt;
	struct mr_qp_stats st;
	struct mr_wc wc;
	uint64_t now = 1000;
	unsigned int lost = 0;

	(void)state;
	buf_a = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	buf_b = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(buf_a != MAP_FAILED && buf_b != MAP_FAILED);
	side_init(&a, mac_a, gid_a, 5);
	side_init(&b, mac_b, gid_b, 6);
	make_objs(&a, buf_a, 0x7f0000001000ull, 8192, &oa);
	make_objs(&b, buf_b, 0x7f0000100000ull, 8192, &ob);
	qp_connect(&a, &oa, ob.qpn, gid_b);
	qp_connect(&b, &ob, oa.qpn, gid_a);
	memset(buf_a, 0xab, 8192);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 42;
	wr.opcode = MR_WR_RDMA_WRITE;
	wr.send_flags = MR_SEND_SIGNALED;
	wr.num_sge = 1;
	wr.sg_list[0].addr = 0x7f0000001000ull;
	wr.sg_list[0].length = 5000;
	wr.sg_list[0].lkey = oa.lkey;
	wr.rdma.remote_addr = 0x7f0000100000ull;
	wr.rdma.rkey = ob.rkey;
	assert_int_equal(ops->post_send(a.be, oa.qp, &wr), 0);
	while (mr_ctx_tx(a.ctx, now, &pkt) == 1) /* every packet lost on the wire */
		lost++;
	assert_int_equal(lost, 5);
	assert_int_equal(ops->dereg_mr(a.be, oa.mr), 0);
	assert_int_equal(munmap(buf_a, 8192), 0); /* what the shm server's unmap does */
	now += 200ull * 1000 * 1000;             /* past the ACK timeout (code 14: 67 ms) */
	mr_ctx_on_timer(a.ctx, now);
	assert_int_equal(shuttle(&a, mac_a, &b, mr_backend_udp_sport(0xc000, oa.qpn, ob.qpn),
				 now), 0);
	assert_int_equal(ops->poll_cq(a.be, oa.cq, 1, &wc), 1);
	assert_int_equal(wc.wr_id, 42);
	assert_int_equal(wc.status, MR_WC_LOC_PROT_ERR);
	assert_int_equal(mr_backend_qp_stats_sum(a.be, &st), 1);
	assert_int_equal(st.retransmits, 0);

	/* B: a fresh QP pair (A's QP is in ERR) with a WRITE whose target B unmaps mid-way. */
	side_fini(&a);
	side_init(&a, mac_a, gid_a, 7);
	buf_a = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(buf_a != MAP_FAILED);
	memset(buf_a, 0xcd, 8192);
	a.paths = 0;
	b.paths = 0;
	make_objs(&a, buf_a, 0x7f0000001000ull, 8192, &oa);
	assert_int_equal(ops->create_qp(b.be, ob.pd, ob.cq, ob.cq,
					&(struct mr_shm_qp_caps){ .max_send_wr = 16,
								  .max_recv_wr = 16,
								  .max_send_sge = 1,
								  .max_recv_sge = 1 },
					&ob.qp, &ob.qpn), 0);
	qp_connect(&a, &oa, ob.qpn, gid_b);
	qp_connect(&b, &ob, oa.qpn, gid_a);
	wr.sg_list[0].lkey = oa.lkey;
	assert_int_equal(ops->post_send(a.be, oa.qp, &wr), 0);
	{
		static uint8_t frame[2048];
		struct mr_path path;
		struct mr_pkt p;
		int len;

		assert_int_equal(mr_ctx_tx(a.ctx, now, &pkt), 1); /* WRITE FIRST only */
		path = *pkt.path;
		len = mr_frame_build(frame, sizeof(frame), &path, 0, &pkt.hdr, pkt.iov, pkt.niov);
		assert_true(len > 0);
		assert_int_equal(mr_frame_parse(frame, (uint32_t)len, true, &p), MR_PARSE_OK);
		assert_int_equal(p.hdr.opcode, MR_OP_RC_WRITE_FIRST);
		mr_ctx_rx(b.ctx, &p, now);
	}
	assert_int_equal(buf_b[0], 0xcd);
	assert_int_equal(ops->dereg_mr(b.be, ob.mr), 0);
	assert_int_equal(munmap(buf_b, 8192), 0);
	shuttle(&a, mac_a, &b, mr_backend_udp_sport(0xc000, oa.qpn, ob.qpn), now);
	shuttle(&b, mac_b, &a, mr_backend_udp_sport(0xc000, ob.qpn, oa.qpn), now);
	assert_int_equal(ops->poll_cq(a.be, oa.cq, 1, &wc), 1);
	assert_int_equal(wc.status, MR_WC_REM_ACCESS_ERR);
	assert_int_equal(mr_backend_qp_stats_sum(b.be, &st), 2); /* B's QP of the first part too */
	assert_int_equal(st.rem_access_naks_sent, 1);
	side_fini(&a);
	side_fini(&b);
	munmap(buf_a, 8192);
}

static void test_bad_calls(void **state)
{
	const struct mr_shm_backend_ops *ops = mr_backend_ops();
	struct mr_backend_conf bc = {0};
	static uint8_t buf[4096];
	struct mrc_qp_attr a;
	struct side s;
	struct objs o;

	(void)state;
	assert_null(mr_backend_create(NULL));
	assert_int_equal(errno, EINVAL);
	assert_null(mr_backend_create(&bc)); /* no ctx, no address */
	assert_int_equal(errno, EINVAL);
	side_init(&s, mac_a, gid_a, 5);
	make_objs(&s, buf, 0x1000, sizeof(buf), &o);
	memset(&a, 0, sizeof(a));
	a.qp_state = MR_QPS_RTS; /* RESET -> RTS is not a legal transition (IBA 10.3.1) */
	assert_true(ops->modify_qp(s.be, o.qp, &a, MRC_QP_STATE) < 0);
	assert_int_equal(ops->modify_qp(s.be, o.qp, &a, 1u << 20), -EINVAL);
	a.qp_state = MR_QPS_INIT;
	assert_int_equal(ops->modify_qp(s.be, o.qp, &a, MRC_QP_STATE | MRC_QP_PKEY_INDEX |
					MRC_QP_ACCESS_FLAGS), 0);
	a.qp_state = MR_QPS_RTR;
	a.path_mtu = 1024;
	a.dest_qp_num = 99;
	a.max_dest_rd_atomic = 1;
	/* A path to the unspecified GID is refused before the transport sees it. */
	assert_int_equal(ops->modify_qp(s.be, o.qp, &a, MRC_QP_STATE | MRC_QP_PATH |
					MRC_QP_PATH_MTU | MRC_QP_DEST_QPN | MRC_QP_RQ_PSN |
					MRC_QP_MAX_DEST_RD_ATOMIC | MRC_QP_MIN_RNR_TIMER), -EINVAL);
	assert_int_equal(s.paths, 0);
	assert_int_equal(ops->dealloc_pd(s.be, o.pd), -EBUSY); /* MR and QP still use it */
	side_fini(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_udp_sport),
		cmocka_unit_test(test_make_path),
		cmocka_unit_test(test_query_port),
		cmocka_unit_test(test_write_between_backends),
		cmocka_unit_test(test_dereg_unmap_in_flight),
		cmocka_unit_test(test_bad_calls),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
