/* SPDX-License-Identifier: MIT
 * metaroced's [metaroce] peers policy (apps/metaroced/mrc_policy.c) and its use by the backend
 * (apps/metaroced/backend.c): prefix parsing and matching in GID space, the config fields, and
 * two backends whose QPs are connected the way a stock verbs app does it (no MRC_QP_TRANSPORT):
 * listed peers exchange MetaRoCE frames (BTH opcode 0xC0 | RC, docs/metaroce-wire.md), an
 * unlisted peer gets plain RC only, and an app that names a transport is never overridden.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "apps/metaroced/backend.h"
#include "apps/metaroced/config.h"
#include "apps/metaroced/mrc_policy.h"
#include "wire/roce_pkt.h"

static const uint8_t gid_a[16] = {[10] = 0xff, [11] = 0xff, 198, 18, 0, 1};
static const uint8_t gid_b[16] = {[10] = 0xff, [11] = 0xff, 198, 18, 0, 2};

static void v4gid(uint8_t g[16], uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
	memset(g, 0, 16);
	g[10] = g[11] = 0xff;
	g[12] = a;
	g[13] = b;
	g[14] = c;
	g[15] = d;
}

static void test_parse_and_match(void **state)
{
	struct mr_mrc_policy p;
	char err[256], out[512];
	uint8_t g[16];

	(void)state;
	mr_mrc_policy_init(&p);
	assert_int_equal(p.n, 0);
	assert_int_equal(p.n_entropies, MR_MRC_POLICY_DEFAULT_ENTROPIES);
	v4gid(g, 198, 18, 0, 2);
	assert_false(mr_mrc_policy_match(&p, g)); /* empty: nobody */

	assert_int_equal(mr_mrc_policy_set_peers(&p, "198.18.0.0/24, 2001:2::/48 198.19.7.7",
						 err, sizeof(err)), 0);
	assert_int_equal(p.n, 3);
	assert_true(mr_mrc_policy_match(&p, g));
	v4gid(g, 198, 18, 0, 255);
	assert_true(mr_mrc_policy_match(&p, g));
	v4gid(g, 198, 18, 1, 2);
	assert_false(mr_mrc_policy_match(&p, g)); /* outside /24 */
	v4gid(g, 198, 19, 7, 7);
	assert_true(mr_mrc_policy_match(&p, g)); /* bare address: one host */
	v4gid(g, 198, 19, 7, 8);
	assert_false(mr_mrc_policy_match(&p, g));
	/* IPv6 GIDs: in and just outside the /48. */
	memset(g, 0, 16);
	g[0] = 0x20, g[1] = 0x01, g[3] = 0x02, g[15] = 9;
	assert_true(mr_mrc_policy_match(&p, g));
	g[6] = 1;
	assert_true(mr_mrc_policy_match(&p, g)); /* byte 6 is beyond the /48 */
	g[5] = 1;
	assert_false(mr_mrc_policy_match(&p, g)); /* byte 5 is inside it */
	g[5] = 0, g[3] = 0x03;
	assert_false(mr_mrc_policy_match(&p, g));
	/* An IPv4 prefix never matches an IPv6 GID with the same low bytes. */
	memset(g, 0, 16);
	g[12] = 198, g[13] = 18, g[15] = 2;
	assert_false(mr_mrc_policy_match(&p, g));
	mr_mrc_policy_format(&p, out, sizeof(out));
	assert_string_equal(out, "198.18.0.0/24,2001:2::/48,198.19.7.7/32");

	/* Odd prefix lengths cut inside a byte. */
	assert_int_equal(mr_mrc_policy_set_peers(&p, "198.18.0.0/15", err, sizeof(err)), 0);
	v4gid(g, 198, 19, 200, 1);
	assert_true(mr_mrc_policy_match(&p, g));
	v4gid(g, 198, 20, 0, 1);
	assert_false(mr_mrc_policy_match(&p, g));
	v4gid(g, 198, 17, 255, 255);
	assert_false(mr_mrc_policy_match(&p, g));
	/* 0.0.0.0/0: every IPv4 peer, no IPv6 one. */
	assert_int_equal(mr_mrc_policy_set_peers(&p, "0.0.0.0/0", err, sizeof(err)), 0);
	assert_true(mr_mrc_policy_match(&p, g));
	memset(g, 0, 16);
	g[0] = 0x20;
	assert_false(mr_mrc_policy_match(&p, g));
	assert_int_equal(mr_mrc_policy_set_peers(&p, "none", err, sizeof(err)), 0);
	assert_int_equal(p.n, 0);
	mr_mrc_policy_format(&p, out, sizeof(out));
	assert_string_equal(out, "none");
}

static void test_parse_errors(void **state)
{
	static const struct {
		const char *in, *msg;
	} bad[] = {
		{"198.18.0.1/15", "host bits set"},
		{"198.18.0.0/33", "prefix length must be 0..32"},
		{"2001:2::/129", "prefix length must be 0..128"},
		{"198.18.0.0/", "prefix length"},
		{"198.18.0.0/1x", "prefix length"},
		{"198.18.0", "not an IPv4 or IPv6"},
		{"host.example", "not an IPv4 or IPv6"},
		{"/8", "not an IPv4 or IPv6"},
		{", ,", "no prefix given"},
	};
	struct mr_mrc_policy p;
	char err[256], many[1024] = "";

	(void)state;
	mr_mrc_policy_init(&p);
	assert_int_equal(mr_mrc_policy_set_peers(&p, "198.19.0.0/16", err, sizeof(err)), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(mr_mrc_policy_set_peers(&p, bad[i].in, err, sizeof(err)), -EINVAL);
		if (strstr(err, bad[i].msg) == NULL)
			fail_msg("'%s': got '%s', want '%s'", bad[i].in, err, bad[i].msg);
		assert_int_equal(p.n, 1); /* unchanged on error */
	}
	for (int i = 0; i < MR_MRC_POLICY_MAX_NETS + 1; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "198.18.0.%d ", i);
	assert_int_equal(mr_mrc_policy_set_peers(&p, many, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "more than 32"));
	assert_int_equal(mr_mrc_policy_set_peers(NULL, "none", err, sizeof(err)), -EINVAL);
}

static void test_config_fields(void **state)
{
	struct mr_daemon_config c;
	char err[512];

	(void)state;
	mr_config_defaults(&c);
	assert_int_equal(mr_config_parse(&c, "t.conf",
		"[port]\nipv4 = 198.18.0.1\n[metaroce]\npeers = 198.18.0.0/24 # both daemons\n"
		"entropies = 8\ncc = metaroce\n", err, sizeof(err)), 0);
	assert_int_equal(c.mrc_policy.n, 1);
	assert_int_equal(c.mrc_policy.n_entropies, 8);
	assert_int_equal(c.mrc_policy.cc, MRC_CC_METAROCE);
	/* Defaults: no peers. */
	mr_config_defaults(&c);
	assert_int_equal(mr_config_parse(&c, "t.conf", "[port]\nipv4 = 198.18.0.1\n", err,
					 sizeof(err)), 0);
	assert_int_equal(c.mrc_policy.n, 0);
	/* Errors name file, line and field. */
	mr_config_defaults(&c);
	assert_int_equal(mr_config_parse(&c, "t.conf",
		"[port]\nipv4 = 198.18.0.1\n[metaroce]\npeers = 198.18.0.1/24\n", err, sizeof(err)),
		-EINVAL);
	assert_non_null(strstr(err, "t.conf:4: metaroce.peers: '198.18.0.1/24' has host bits"));
	mr_config_defaults(&c);
	assert_int_equal(mr_config_parse(&c, "t.conf",
		"[port]\nipv4 = 198.18.0.1\n[metaroce]\nentropies = 257\n", err, sizeof(err)),
		-EINVAL);
	assert_non_null(strstr(err, "t.conf:4: metaroce.entropies"));
	mr_config_defaults(&c);
	assert_int_equal(mr_config_parse(&c, "t.conf",
		"[port]\nipv4 = 198.18.0.1\n[metaroce]\ncc = cubic\n", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t.conf:4: metaroce.cc: 'cubic'"));
}

/* ---- two backends, connected as a stock verbs app connects ---- */

struct side {
	struct mr_ctx *ctx;
	struct mr_backend *be;
	void *pd, *mr, *cq, *qp;
	uint32_t lkey, rkey, qpn;
	uint8_t buf[16384];
};

static void side_init(struct side *s, const uint8_t gid[16], const char *peers, uint64_t seed)
{
	const struct mr_shm_backend_ops *ops = mr_backend_ops();
	struct mr_ctx_params cp = { .max_qp = 16, .first_qpn = 17, .max_mr = 16, .seed = seed };
	struct mr_shm_qp_caps caps = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
				       .max_recv_sge = 1, .max_inline_data = 64 };
	struct mr_backend_conf bc = {0};
	char err[256];

	memset(s, 0, sizeof(*s));
	s->ctx = mr_ctx_create(&cp);
	assert_non_null(s->ctx);
	bc.ctx = s->ctx;
	bc.mac[0] = 0x02;
	bc.mac[5] = gid[15];
	bc.has_ipv4 = true;
	memcpy(bc.ipv4, gid + 12, 4);
	bc.udp_sport_base = 0xc000;
	bc.ib_mtu = 1024;
	bc.max_qp = bc.max_mr = bc.max_cq = 16;
	mr_mrc_policy_init(&bc.mrc_policy);
	bc.mrc_policy.n_entropies = 4;
	assert_int_equal(mr_mrc_policy_set_peers(&bc.mrc_policy, peers, err, sizeof(err)), 0);
	s->be = mr_backend_create(&bc);
	assert_non_null(s->be);
	assert_int_equal(ops->alloc_pd(s->be, &s->pd), 0);
	assert_int_equal(ops->reg_mr(s->be, s->pd, s->buf, (uintptr_t)s->buf, sizeof(s->buf),
				     MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE, &s->mr,
				     &s->lkey, &s->rkey), 0);
	assert_int_equal(ops->create_cq(s->be, 64, &s->cq), 0);
	assert_int_equal(ops->create_qp(s->be, s->pd, s->cq, s->cq, &caps, &s->qp, &s->qpn), 0);
}

static void side_fini(struct side *s)
{
	mr_backend_destroy(s->be);
	mr_ctx_destroy(s->ctx);
}

/* INIT, RTR, RTS as ibv_rc_pingpong does it; extra_mask/transport: what an app that names its
 * transport adds to INIT->RTR (0: nothing, the stock case). */
static void connect_qp(struct side *s, uint32_t dqpn, const uint8_t dgid[16], uint32_t extra_mask,
		       uint8_t transport)
{
	const struct mr_shm_backend_ops *ops = mr_backend_ops();
	struct mrc_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = MR_QPS_INIT;
	a.qp_access_flags = MR_ACCESS_REMOTE_WRITE;
	assert_int_equal(ops->modify_qp(s->be, s->qp, &a, MRC_QP_STATE | MRC_QP_PKEY_INDEX |
					MRC_QP_ACCESS_FLAGS), 0);
	a.qp_state = MR_QPS_RTR;
	memcpy(a.path.dgid, dgid, 16);
	a.path_mtu = 1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = 7;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.transport = transport;
	assert_int_equal(ops->modify_qp(s->be, s->qp, &a, MRC_QP_STATE | MRC_QP_PATH |
					MRC_QP_PATH_MTU | MRC_QP_DEST_QPN | MRC_QP_RQ_PSN |
					MRC_QP_MAX_DEST_RD_ATOMIC | MRC_QP_MIN_RNR_TIMER |
					extra_mask), 0);
	a.qp_state = MR_QPS_RTS;
	a.sq_psn = 7;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	assert_int_equal(ops->modify_qp(s->be, s->qp, &a, MRC_QP_STATE | MRC_QP_SQ_PSN |
					MRC_QP_TIMEOUT | MRC_QP_RETRY_CNT | MRC_QP_RNR_RETRY |
					MRC_QP_MAX_QP_RD_ATOMIC), 0);
}

struct opcounts {
	unsigned int mrc, rc, sports_seen;
	uint16_t sports[8];
};

static void count(struct opcounts *c, const struct mr_pkt *p)
{
	unsigned int i;

	if (p->bth[0] >= 0xc0 && p->bth[0] <= 0xdf)
		c->mrc++;
	else
		c->rc++;
	for (i = 0; i < c->sports_seen; i++)
		if (c->sports[i] == p->udp_sport)
			return;
	if (c->sports_seen < 8)
		c->sports[c->sports_seen++] = p->udp_sport;
}

static unsigned int shuttle(struct side *src, struct side *dst, uint64_t now, struct opcounts *c)
{
	static uint8_t frame[2048];
	struct mr_tx_pkt pkt;
	unsigned int n = 0;

	while (mr_ctx_tx(src->ctx, now, &pkt) == 1) {
		struct mr_path path = *pkt.path;
		struct mr_pkt p;
		int len;

		memset(path.dmac, 0x02, 6);
		if (pkt.udp_sport != 0) /* a MetaRoCE packet's entropy (rc.h), as the engine does */
			path.udp_sport = pkt.udp_sport;
		len = mr_frame_build(frame, sizeof(frame), &path, (uint16_t)n, &pkt.hdr, pkt.iov,
				     pkt.niov);
		assert_true(len > 0);
		assert_int_equal(mr_frame_parse(frame, (uint32_t)len, true, &p), MR_PARSE_OK);
		count(c, &p);
		mr_ctx_rx(dst->ctx, &p, now);
		n++;
	}
	return n;
}

/* A 12 KiB WRITE a -> b; returns the opcodes seen each way and checks the data arrived. */
static void write_a_to_b(struct side *a, struct side *b, struct opcounts *ab, struct opcounts *ba)
{
	const struct mr_shm_backend_ops *ops = mr_backend_ops();
	struct mr_send_wr wr;
	struct mr_wc wc;
	uint64_t now = 1000;
	int got = 0;

	memset(ab, 0, sizeof(*ab));
	memset(ba, 0, sizeof(*ba));
	for (unsigned int i = 0; i < 12288; i++)
		a->buf[i] = (uint8_t)(i * 13 + 5);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 9;
	wr.opcode = MR_WR_RDMA_WRITE;
	wr.send_flags = MR_SEND_SIGNALED;
	wr.num_sge = 1;
	wr.sg_list[0].addr = (uintptr_t)a->buf;
	wr.sg_list[0].length = 12288;
	wr.sg_list[0].lkey = a->lkey;
	wr.rdma.remote_addr = (uintptr_t)b->buf;
	wr.rdma.rkey = b->rkey;
	assert_int_equal(ops->post_send(a->be, a->qp, &wr), 0);
	for (unsigned int i = 0; i < 200 && got == 0; i++) {
		shuttle(a, b, now, ab);
		shuttle(b, a, now, ba);
		got = ops->poll_cq(a->be, a->cq, 1, &wc);
		now += 100000;
	}
	assert_int_equal(got, 1);
	assert_int_equal(wc.status, MR_WC_SUCCESS);
	assert_memory_equal(b->buf, a->buf, 12288);
}

static void test_listed_peers_run_metaroce(void **state)
{
	const struct mr_shm_backend_ops *ops = mr_backend_ops();
	struct side *a = test_malloc(sizeof(*a)), *b = test_malloc(sizeof(*b));
	struct opcounts ab, ba;
	struct mrc_qp_attr q;

	(void)state;
	side_init(a, gid_a, "198.18.0.0/24", 1);
	side_init(b, gid_b, "198.18.0.1", 2);
	connect_qp(a, b->qpn, gid_b, 0, 0);
	connect_qp(b, a->qpn, gid_a, 0, 0);
	assert_int_equal(ops->query_qp(a->be, a->qp, &q), 0);
	assert_int_equal(q.transport, MRC_TRANSPORT_METAROCE);
	assert_int_equal(q.n_entropies, 4);
	assert_int_equal(ops->query_qp(b->be, b->qp, &q), 0);
	assert_int_equal(q.transport, MRC_TRANSPORT_METAROCE);
	assert_int_equal(mr_backend_policy_upgrades(a->be), 1);
	assert_int_equal(mr_backend_policy_upgrades(b->be), 1);
	write_a_to_b(a, b, &ab, &ba);
	assert_int_equal(ab.rc, 0); /* nothing but MetaRoCE on the wire, both ways */
	assert_true(ab.mrc >= 12);
	assert_int_equal(ba.rc, 0);
	assert_true(ba.mrc >= 1);
	assert_true(ab.sports_seen > 1); /* sprayed over the entropies */
	side_fini(a);
	side_fini(b);
	test_free(a);
	test_free(b);
}

static void test_unlisted_peer_gets_plain_rc(void **state)
{
	const struct mr_shm_backend_ops *ops = mr_backend_ops();
	struct side *a = test_malloc(sizeof(*a)), *b = test_malloc(sizeof(*b));
	struct opcounts ab, ba;
	struct mrc_qp_attr q;

	(void)state;
	/* a lists another network; b (a stock peer's stand-in) lists nobody. */
	side_init(a, gid_a, "198.19.0.0/16, 2001:2::/48", 3);
	side_init(b, gid_b, "none", 4);
	connect_qp(a, b->qpn, gid_b, 0, 0);
	connect_qp(b, a->qpn, gid_a, 0, 0);
	assert_int_equal(ops->query_qp(a->be, a->qp, &q), 0);
	assert_int_equal(q.transport, MRC_TRANSPORT_RC);
	assert_int_equal(mr_backend_policy_upgrades(a->be), 0);
	write_a_to_b(a, b, &ab, &ba);
	assert_int_equal(ab.mrc, 0);
	assert_int_equal(ba.mrc, 0);
	assert_int_equal(ab.rc, 12);
	assert_int_equal(ab.sports_seen, 1); /* one flow, one port (A17.3.3) */
	side_fini(a);
	side_fini(b);
	test_free(a);
	test_free(b);
}

static void test_app_choice_wins(void **state)
{
	const struct mr_shm_backend_ops *ops = mr_backend_ops();
	struct side *a = test_malloc(sizeof(*a)), *b = test_malloc(sizeof(*b));
	struct opcounts ab, ba;
	struct mrc_qp_attr q;

	(void)state;
	/* Both list each other, but the apps ask for plain RC explicitly (mrperf without a
	 * negotiated MetaRoCE would, were it to state it): nothing is upgraded. */
	side_init(a, gid_a, "198.18.0.0/24", 5);
	side_init(b, gid_b, "198.18.0.0/24", 6);
	connect_qp(a, b->qpn, gid_b, MRC_QP_TRANSPORT, MRC_TRANSPORT_RC);
	connect_qp(b, a->qpn, gid_a, MRC_QP_TRANSPORT, MRC_TRANSPORT_RC);
	assert_int_equal(ops->query_qp(a->be, a->qp, &q), 0);
	assert_int_equal(q.transport, MRC_TRANSPORT_RC);
	assert_int_equal(mr_backend_policy_upgrades(a->be), 0);
	write_a_to_b(a, b, &ab, &ba);
	assert_int_equal(ab.mrc + ba.mrc, 0);
	side_fini(a);
	side_fini(b);
	test_free(a);
	test_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_and_match),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_config_fields),
		cmocka_unit_test(test_listed_peers_run_metaroce),
		cmocka_unit_test(test_unlisted_peer_gets_plain_rc),
		cmocka_unit_test(test_app_choice_wins),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
