/* SPDX-License-Identifier: MIT
 * In-test wire for the RC transport tests (see rc_harness.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rc_harness.h"

void tw_default_cfg(struct tw_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->mtu = 1024;
	c->psn[0] = 100;
	c->psn[1] = 5000;
	c->access = MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ |
		    MR_ACCESS_REMOTE_ATOMIC;
	c->max_rd_atomic = 4;
	c->timeout = 14;   /* ~67 ms */
	c->retry_cnt = 7;
	c->rnr_retry = 7;
	c->min_rnr_timer = 1; /* 10 us */
	c->max_send_wr = 64;
	c->max_recv_wr = 64;
	c->max_inline = 256;
}

void tw_metaroce_cfg(struct tw_cfg *c, uint16_t n)
{
	tw_default_cfg(c);
	c->transport = MR_TRANSPORT_METAROCE;
	c->n_entropies = n;
	c->udp_sport = 0xc000;
}

static void tw_connect(struct tw *w, const struct tw_cfg *c, int i)
{
	struct mr_qp *qp = w->s[i].qp;
	struct mr_qp_attr a;
	uint32_t xmask = 0;

	memset(&a, 0, sizeof(a));
	a.qp_state = MR_QPS_INIT;
	a.qp_access_flags = c->access;
	assert_int_equal(mr_qp_modify(qp, &a, MR_QP_STATE | MR_QP_PKEY_INDEX | MR_QP_ACCESS_FLAGS),
			 0);
	a.qp_state = MR_QPS_RTR;
	a.path_mtu = c->mtu;
	a.dest_qp_num = mr_qp_num(w->s[1 - i].qp);
	a.rq_psn = c->psn[1 - i];
	a.max_dest_rd_atomic = c->max_rd_atomic;
	a.min_rnr_timer = c->min_rnr_timer;
	a.path.udp_sport = c->udp_sport;
	if (c->transport != MR_TRANSPORT_RC || c->cc != MR_CC_NONE) {
		a.transport = c->transport;
		a.n_entropies = c->n_entropies;
		a.cc = c->cc;
		a.cc_params = c->cc_params;
		xmask = MR_QP_TRANSPORT;
	}
	assert_int_equal(mr_qp_modify(qp, &a, MR_QP_STATE | MR_QP_PATH | MR_QP_PATH_MTU |
					      MR_QP_DEST_QPN | MR_QP_RQ_PSN |
					      MR_QP_MAX_DEST_RD_ATOMIC | MR_QP_MIN_RNR_TIMER | xmask),
			 0);
	a.qp_state = MR_QPS_RTS;
	a.sq_psn = c->psn[i];
	a.timeout = c->timeout;
	a.retry_cnt = c->retry_cnt;
	a.rnr_retry = c->rnr_retry;
	a.max_rd_atomic = c->max_rd_atomic;
	assert_int_equal(mr_qp_modify(qp, &a, MR_QP_STATE | MR_QP_SQ_PSN | MR_QP_TIMEOUT |
					      MR_QP_RETRY_CNT | MR_QP_RNR_RETRY |
					      MR_QP_MAX_QP_RD_ATOMIC),
			 0);
	assert_int_equal(mr_qp_state(qp), MR_QPS_RTS);
}

struct tw *tw_create(const struct tw_cfg *c)
{
	struct tw *w = calloc(1, sizeof(*w));

	assert_non_null(w);
	w->rng = 0x2545f4914f6cdd1dull;
	for (int i = 0; i < 2; i++) {
		struct mr_ctx_params p = {
			.max_qp = 8,
			.first_qpn = 16 + 100 * (uint32_t)i,
			.max_mr = 16,
			.seed = 42 + (uint64_t)i,
			.max_inflight_pkts = c->max_inflight,
		};
		struct mr_qp_init_attr ia;
		struct tw_side *s = &w->s[i];

		s->ctx = mr_ctx_create(&p);
		assert_non_null(s->ctx);
		s->pd = mr_pd_alloc(s->ctx);
		s->scq = mr_cq_create(s->ctx, 1024);
		s->rcq = mr_cq_create(s->ctx, 1024);
		assert_non_null(s->pd);
		assert_non_null(s->scq);
		assert_non_null(s->rcq);
		memset(&ia, 0, sizeof(ia));
		ia.pd = s->pd;
		ia.send_cq = s->scq;
		ia.recv_cq = s->rcq;
		ia.max_send_wr = c->max_send_wr;
		ia.max_recv_wr = c->max_recv_wr;
		ia.max_inline_data = c->max_inline;
		ia.sq_sig_all = c->sq_sig_all;
		if (i == 1 && c->srq_depth > 0) {
			s->srq = mr_srq_create(s->pd, c->srq_depth);
			assert_non_null(s->srq);
			ia.srq = s->srq;
		}
		s->qp = mr_qp_create(s->ctx, &ia);
		assert_non_null(s->qp);
	}
	tw_connect(w, c, 0);
	tw_connect(w, c, 1);
	return w;
}

void tw_destroy(struct tw *w)
{
	for (int i = 0; i < 2; i++)
		mr_ctx_destroy(w->s[i].ctx);
	free(w);
}

static uint32_t tw_rand(struct tw *w, uint32_t n)
{
	/* xorshift64: deterministic per run */
	w->rng ^= w->rng << 13;
	w->rng ^= w->rng >> 7;
	w->rng ^= w->rng << 17;
	return (uint32_t)(w->rng % n);
}

/* Frames mode: the packet as a real frame, optionally with one payload bit flipped. */
static void tw_deliver_frame(struct tw *w, int to, const struct mr_roce_hdrs *hdr,
			     const uint8_t *payload, uint32_t paylen, bool corrupt)
{
	static uint8_t frame[4096 + 256];
	struct mr_iov iov = { .base = payload, .len = paylen };
	struct mr_path path;
	struct mr_pkt pkt;
	int len, r;

	memset(&path, 0, sizeof(path));
	path.ipv6 = true;
	path.ttl = 64;
	path.udp_sport = 0xc000;
	len = mr_frame_build(frame, sizeof(frame), &path, 0, hdr, &iov, paylen ? 1 : 0);
	assert_true(len > 0);
	if (corrupt) {
		assert_true(paylen > 0);
		frame[len - 4 - (int)((4 - (paylen & 3)) & 3) - 1 - (int)paylen / 2] ^= 0x08;
	}
	r = mr_frame_parse_deferred(frame, (uint32_t)len, &pkt);
	if (r == MR_PARSE_BAD_ICRC) {
		w->icrc_bad[to]++;
		return;
	}
	assert_int_equal(r, MR_PARSE_OK);
	if (pkt.icrc_pending)
		w->icrc_deferred[to]++;
	if (mr_ctx_rx(w->s[to].ctx, &pkt, w->now) == -EBADMSG)
		w->icrc_bad[to]++;
}

static void tw_deliver(struct tw *w, int to, const struct mr_roce_hdrs *hdr,
		       const uint8_t *payload, uint32_t paylen)
{
	struct mr_pkt pkt;
	int from = 1 - to;

	if (w->frames[from]) {
		w->delivered[from]++;
		tw_deliver_frame(w, to, hdr, payload, paylen, false);
		return;
	}

	memset(&pkt, 0, sizeof(pkt));
	pkt.hdr = *hdr;
	pkt.payload = payload;
	pkt.paylen = paylen;
	w->delivered[from]++;
	if (w->ce_every[from] && w->delivered[from] % w->ce_every[from] == 0)
		pkt.tclass = 3; /* ECN CE */
	mr_ctx_rx(w->s[to].ctx, &pkt, w->now);
}

/* Deliver the shuffle buffer of direction from in a random permutation. */
static bool tw_flush_shuf(struct tw *w, int from)
{
	bool any = w->nshuf[from] > 0;

	while (w->nshuf[from] > 0) {
		uint32_t i = tw_rand(w, w->nshuf[from]);
		struct tw_held tmp = w->shuf[from][i];

		w->shuf[from][i] = w->shuf[from][--w->nshuf[from]];
		tw_deliver(w, 1 - from, &tmp.hdr, tmp.payload, tmp.paylen);
	}
	return any;
}

uint32_t tw_count_path(const struct tw *w, int dir, uint16_t p)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < w->sent[dir] && i < TW_MAX_LOG; i++)
		n += w->log[dir][i].mreth.path == p;
	return n;
}

uint32_t tw_count_mflag(const struct tw *w, int dir, uint8_t f)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < w->sent[dir] && i < TW_MAX_LOG; i++)
		n += (w->log[dir][i].mreth.flags & f) == f;
	return n;
}

void tw_inject(struct tw *w, int to, const struct mr_roce_hdrs *hdr, const void *payload,
	       uint32_t paylen)
{
	tw_deliver(w, to, hdr, payload, paylen);
}

/* Take one packet from side `from`; returns false when it had none. */
bool tw_step(struct tw *w, int from)
{
	static uint8_t buf[4096];
	struct mr_tx_pkt tx;
	uint32_t idx, off = 0;
	enum tw_action a;
	int to = 1 - from;

	if (mr_ctx_tx(w->s[from].ctx, w->now, &tx) != 1)
		return false;
	assert_true(tx.paylen <= sizeof(buf));
	for (unsigned int i = 0; i < tx.niov; i++) {
		memcpy(buf + off, tx.iov[i].base, tx.iov[i].len);
		off += tx.iov[i].len;
	}
	assert_int_equal(off, tx.paylen);
	idx = w->sent[from]++;
	if (idx < TW_MAX_LOG) {
		w->log[from][idx] = tx.hdr;
		w->log_paylen[from][idx] = tx.paylen;
		w->log_ts[from][idx] = w->now;
		w->log_sport[from][idx] = tx.udp_sport;
	}
	a = idx < TW_MAX_LOG ? w->act[from][idx] : TW_PASS;
	if (w->drop_all[from])
		a = TW_DROP;
	if (mr_opcode_is_metaroce(tx.hdr.opcode) &&
	    (w->drop_path[from][tx.hdr.mreth.path / 64] >> (tx.hdr.mreth.path % 64)) & 1)
		a = TW_DROP;
	if (a == TW_PASS && w->shuffle[from] > 1) {
		struct tw_held *hd = &w->shuf[from][w->nshuf[from]++];

		hd->hdr = tx.hdr;
		hd->paylen = tx.paylen;
		memcpy(hd->payload, buf, tx.paylen);
		if (w->nshuf[from] >= w->shuffle[from] || w->nshuf[from] >= TW_MAX_SHUF)
			tw_flush_shuf(w, from);
		return true;
	}
	switch (a) {
	case TW_DROP:
		break;
	case TW_HOLD:
		assert_false(w->have_held[from]);
		w->held[from].hdr = tx.hdr;
		w->held[from].paylen = tx.paylen;
		memcpy(w->held[from].payload, buf, tx.paylen);
		w->have_held[from] = true;
		return true;
	case TW_CORRUPT:
		tw_deliver_frame(w, to, &tx.hdr, buf, tx.paylen, true);
		break;
	case TW_DUP:
		tw_deliver(w, to, &tx.hdr, buf, tx.paylen);
		tw_deliver(w, to, &tx.hdr, buf, tx.paylen);
		break;
	default:
		tw_deliver(w, to, &tx.hdr, buf, tx.paylen);
		break;
	}
	if (w->have_held[from] && a != TW_HOLD) {
		w->have_held[from] = false;
		tw_deliver(w, to, &w->held[from].hdr, w->held[from].payload, w->held[from].paylen);
	}
	return true;
}

uint32_t tw_pump(struct tw *w, bool timers, uint64_t max_ns)
{
	uint64_t end = w->now + max_ns;
	uint32_t moved = 0;

	for (;;) {
		bool any = false;

		for (int i = 0; i < 2; i++)
			while (tw_step(w, i)) {
				any = true;
				moved++;
			}
		for (int i = 0; i < 2; i++)
			if (tw_flush_shuf(w, i))
				any = true;
		for (int i = 0; i < 2; i++)
			if (w->have_held[i]) { /* nothing followed: release it */
				w->have_held[i] = false;
				tw_deliver(w, 1 - i, &w->held[i].hdr, w->held[i].payload,
					   w->held[i].paylen);
				any = true;
			}
		if (any)
			continue;
		if (!timers)
			break;
		{
			uint64_t t0 = mr_ctx_next_expiry(w->s[0].ctx);
			uint64_t t1 = mr_ctx_next_expiry(w->s[1].ctx);
			uint64_t t = t0 < t1 ? t0 : t1;

			if (t == UINT64_MAX || t > end)
				break;
			if (t > w->now)
				w->now = t;
			mr_ctx_on_timer(w->s[0].ctx, w->now);
			mr_ctx_on_timer(w->s[1].ctx, w->now);
		}
	}
	return moved;
}

uint32_t tw_count_op(const struct tw *w, int dir, uint8_t opcode)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < w->sent[dir] && i < TW_MAX_LOG; i++)
		n += w->log[dir][i].opcode == opcode;
	return n;
}

uint32_t tw_count_syndrome(const struct tw *w, int dir, uint8_t syndrome)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < w->sent[dir] && i < TW_MAX_LOG; i++)
		n += mr_opcode_base(w->log[dir][i].opcode) == MR_OP_RC_ACK &&
		     w->log[dir][i].aeth.syndrome == syndrome;
	return n;
}

struct mr_memreg *tw_reg(struct tw *w, int side, void *buf, uint64_t len, uint32_t access)
{
	struct mr_memreg *mr = mr_reg(w->s[side].pd, buf, (uint64_t)(uintptr_t)buf, len, access);

	assert_non_null(mr);
	return mr;
}

void tw_post_send(struct tw *w, int side, const struct mr_send_wr *wr)
{
	assert_int_equal(mr_post_send(w->s[side].qp, wr), 0);
}

void tw_post_recv(struct tw *w, int side, uint64_t wr_id, void *buf, uint32_t len,
		  const struct mr_memreg *mr)
{
	struct mr_recv_wr r;

	memset(&r, 0, sizeof(r));
	r.wr_id = wr_id;
	r.num_sge = 1;
	r.sg_list[0].addr = (uint64_t)(uintptr_t)buf;
	r.sg_list[0].length = len;
	r.sg_list[0].lkey = mr_memreg_lkey(mr);
	assert_int_equal(mr_post_recv(w->s[side].qp, &r), 0);
}

void tw_poll(struct mr_cq *cq, int n, struct mr_wc *wc)
{
	struct mr_wc extra;

	assert_int_equal(mr_cq_poll(cq, n, wc), n);
	assert_int_equal(mr_cq_poll(cq, 1, &extra), 0);
}

struct mr_qp_stats tw_stats(const struct tw *w, int side)
{
	struct mr_qp_stats st;

	assert_int_equal(mr_qp_get_stats(w->s[side].qp, &st), 0);
	return st;
}

void tw_fill(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

struct mr_send_wr tw_wr(uint64_t id, enum mr_wr_opcode op, const void *p, uint32_t len,
			const struct mr_memreg *mr)
{
	struct mr_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.opcode = op;
	wr.send_flags = MR_SEND_SIGNALED;
	wr.num_sge = 1;
	wr.sg_list[0].addr = (uint64_t)(uintptr_t)p;
	wr.sg_list[0].length = len;
	wr.sg_list[0].lkey = mr_memreg_lkey(mr);
	return wr;
}
