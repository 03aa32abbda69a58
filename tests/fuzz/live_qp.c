/* SPDX-License-Identifier: MIT
 * Live victim QP pair for fuzzing and hostile-peer tests (see live_qp.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "live_qp.h"

#define FRAME_CAP 8192
#define DRAIN_MAX 200000u   /* packets B may emit while settling */
#define TIMER_ROUNDS 20000u /* timer rounds B may need to become quiet */

static const uint32_t reg_size[LR_NUM] = {
	[LR_RW] = 16384, [LR_RO] = 4096, [LR_RECV] = LIVE_NRECV * LIVE_RECV_BUF,
	[LR_SRC] = 8192, [LR_SINK] = 8192, [LR_STALE] = 256,
};

static const uint32_t reg_access[LR_NUM] = {
	[LR_RW] = MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ |
		  MR_ACCESS_REMOTE_ATOMIC,
	[LR_RO] = MR_ACCESS_REMOTE_READ,
	[LR_RECV] = MR_ACCESS_LOCAL_WRITE,
	[LR_SRC] = 0,
	[LR_SINK] = MR_ACCESS_LOCAL_WRITE,
	[LR_STALE] = MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ |
		     MR_ACCESS_REMOTE_ATOMIC,
};

static void gid4(uint8_t gid[16], uint8_t last)
{
	memset(gid, 0, 16);
	gid[10] = gid[11] = 0xff;
	gid[12] = 198;
	gid[13] = 18;
	gid[14] = 0;
	gid[15] = last;
}

static const char *fail(struct live *l, const char *why)
{
	if (l->why == NULL)
		l->why = why;
	return why;
}

uint8_t *live_addr(const struct live *l, enum live_region r, uint32_t off)
{
	return l->arena + l->reg_off[r] + off;
}

static int side_create(struct live_side *s, uint32_t first_qpn, uint64_t seed)
{
	struct mr_ctx_params p = {
		.max_qp = 4, .first_qpn = first_qpn, .max_mr = 16, .seed = seed,
	};
	struct mr_qp_init_attr ia;

	s->ctx = mr_ctx_create(&p);
	if (s->ctx == NULL)
		return -1;
	s->pd = mr_pd_alloc(s->ctx);
	s->scq = mr_cq_create(s->ctx, 1024);
	s->rcq = mr_cq_create(s->ctx, 1024);
	if (s->pd == NULL || s->scq == NULL || s->rcq == NULL)
		return -1;
	memset(&ia, 0, sizeof(ia));
	ia.pd = s->pd;
	ia.send_cq = s->scq;
	ia.recv_cq = s->rcq;
	ia.max_send_wr = 64;
	ia.max_recv_wr = 16;
	s->qp = mr_qp_create(s->ctx, &ia);
	return s->qp == NULL ? -1 : 0;
}

static int side_connect(struct live *l, struct live_side *s, const struct live_side *peer,
			const struct mr_path *path, uint32_t sq_psn, uint32_t rq_psn)
{
	struct mr_qp_attr a;
	uint32_t xmask = 0;

	memset(&a, 0, sizeof(a));
	a.qp_state = MR_QPS_INIT;
	a.qp_access_flags = MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE |
			    MR_ACCESS_REMOTE_READ | MR_ACCESS_REMOTE_ATOMIC;
	if (mr_qp_modify(s->qp, &a, MR_QP_STATE | MR_QP_PKEY_INDEX | MR_QP_ACCESS_FLAGS) < 0)
		return -1;
	a.qp_state = MR_QPS_RTR;
	a.path = *path;
	a.path_mtu = l->cfg.mtu;
	a.dest_qp_num = mr_qp_num(peer->qp);
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = l->cfg.max_rd_atomic;
	a.min_rnr_timer = 1;
	if (l->cfg.transport == MR_TRANSPORT_METAROCE) {
		a.transport = MR_TRANSPORT_METAROCE;
		a.n_entropies = l->cfg.n_entropies;
		xmask = MR_QP_TRANSPORT;
	}
	if (mr_qp_modify(s->qp, &a, MR_QP_STATE | MR_QP_PATH | MR_QP_PATH_MTU | MR_QP_DEST_QPN |
				    MR_QP_RQ_PSN | MR_QP_MAX_DEST_RD_ATOMIC |
				    MR_QP_MIN_RNR_TIMER | xmask) < 0)
		return -1;
	a.qp_state = MR_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = 10;     /* 4 ms of virtual time */
	a.retry_cnt = 3;
	a.rnr_retry = 3;
	a.max_rd_atomic = l->cfg.max_rd_atomic;
	return mr_qp_modify(s->qp, &a, MR_QP_STATE | MR_QP_SQ_PSN | MR_QP_TIMEOUT |
				       MR_QP_RETRY_CNT | MR_QP_RNR_RETRY |
				       MR_QP_MAX_QP_RD_ATOMIC);
}

static void fill(uint8_t *p, uint32_t n, uint32_t seed)
{
	for (uint32_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

static int setup_memory(struct live *l)
{
	uint32_t off = LIVE_GUARD;

	for (int r = 0; r < LR_NUM; r++) {
		l->reg_off[r] = off;
		l->reg_len[r] = reg_size[r];
		off += reg_size[r] + LIVE_GUARD;
	}
	l->arena_len = off;
	l->arena = malloc(off);
	l->ro_snap = malloc(reg_size[LR_RO]);
	l->src_snap = malloc(reg_size[LR_SRC]);
	l->a_buf = calloc(1, 65536);
	if (l->arena == NULL || l->ro_snap == NULL || l->src_snap == NULL || l->a_buf == NULL)
		return -1;
	memset(l->arena, LIVE_GUARD_BYTE, off);
	for (int r = 0; r < LR_NUM; r++)
		if (r != LR_STALE)
			fill(live_addr(l, (enum live_region)r, 0), reg_size[r], (uint32_t)r + 1);
	memcpy(l->ro_snap, live_addr(l, LR_RO, 0), reg_size[LR_RO]);
	memcpy(l->src_snap, live_addr(l, LR_SRC, 0), reg_size[LR_SRC]);
	for (int r = 0; r < LR_NUM; r++) {
		uint8_t *h = live_addr(l, (enum live_region)r, 0);

		l->mr[r] = mr_reg(l->b.pd, h, (uint64_t)(uintptr_t)h, reg_size[r], reg_access[r]);
		if (l->mr[r] == NULL)
			return -1;
		l->key[r] = mr_memreg_rkey(l->mr[r]);
	}
	/* The stale key: its slot is free again, its bytes are guard bytes. */
	mr_dereg(l->mr[LR_STALE]);
	l->mr[LR_STALE] = NULL;
	l->a_mr = mr_reg(l->a.pd, l->a_buf, (uint64_t)(uintptr_t)l->a_buf, 65536,
			 reg_access[LR_RW]);
	return l->a_mr == NULL ? -1 : 0;
}

static bool is_op(uint8_t op, uint8_t base)
{
	return mr_opcode_base(op) == base;
}

/* Remove held packet i. */
static void held_remove(struct live *l, uint32_t i)
{
	memmove(&l->held_ab[i], &l->held_ab[i + 1],
		(size_t)(l->nheld_ab - i - 1) * sizeof(l->held_ab[0]));
	l->nheld_ab--;
}

static void a_post(struct live *l, uint64_t id, enum mr_wr_opcode op, uint32_t a_off,
		   uint32_t len, uint64_t remote, uint32_t rkey)
{
	struct mr_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.opcode = op;
	wr.send_flags = MR_SEND_SIGNALED;
	wr.num_sge = 1;
	wr.sg_list[0].addr = (uint64_t)(uintptr_t)(l->a_buf + a_off);
	wr.sg_list[0].length = len;
	wr.sg_list[0].lkey = mr_memreg_lkey(l->a_mr);
	wr.rdma.remote_addr = remote;
	wr.rdma.rkey = rkey;
	mr_post_send(l->a.qp, &wr);
}

static void a_post_recv(struct live *l, uint32_t off, uint32_t len)
{
	struct mr_recv_wr r;

	memset(&r, 0, sizeof(r));
	r.wr_id = 0xa0000 + off;
	r.num_sge = 1;
	r.sg_list[0].addr = (uint64_t)(uintptr_t)(l->a_buf + off);
	r.sg_list[0].length = len;
	r.sg_list[0].lkey = mr_memreg_lkey(l->a_mr);
	mr_post_recv(l->a.qp, &r);
}

/* Open WRITE, queued READ responses, outstanding requests (live_qp.h). */
static void setup_traffic(struct live *l)
{
	uint32_t mtu = l->cfg.mtu, rd = 2 * mtu > 8192 ? 8192 : 2 * mtu;
	uint64_t rw = (uint64_t)(uintptr_t)live_addr(l, LR_RW, 0);
	bool got_read = false, got_write = false;

	for (uint32_t i = 0; i < LIVE_NRECV; i++)
		live_post_recv(l, i, LIVE_RECV_BUF);
	for (uint32_t i = 0; i < 8; i++)
		a_post_recv(l, 0xc000 + i * 2048, 2048);
	/* B's own requests, delivered to A; A's answers stay held. */
	live_post_send(l, MR_WR_SEND, 2 * mtu > 2048 ? 2048 : 2 * mtu, 0);
	live_post_send(l, MR_WR_RDMA_WRITE, mtu + 100, 0x1000);
	live_post_send(l, MR_WR_RDMA_READ, mtu + 50, 0x2000);
	live_post_send(l, MR_WR_ATOMIC_FETCH_AND_ADD, 8, 0x8000);
	live_b_tx(l, 0, true, NULL, 0);
	/* A's requests: a READ of B's RW, a 3-MTU WRITE into it, a SEND. */
	a_post(l, 0xa1, MR_WR_RDMA_READ, 0x4000, rd, rw, l->key[LR_RW]);
	a_post(l, 0xa2, MR_WR_RDMA_WRITE, 0x6000, 3 * mtu > 16384 ? 16384 : 3 * mtu, rw,
	       l->key[LR_RW]);
	a_post(l, 0xa3, MR_WR_SEND, 0x9000, 100, 0, 0);
	live_a_tx(l);
	for (uint32_t i = 0; i < l->nheld_ab && !(got_read && got_write);) {
		uint8_t op = l->held_ab[i].hdr.opcode;

		if ((!got_read && is_op(op, MR_OP_RC_READ_REQUEST)) ||
		    (got_read && !got_write && is_op(op, MR_OP_RC_WRITE_FIRST))) {
			got_write = got_read;
			got_read = true;
			live_held_deliver(l, i, false, false);
			continue;
		}
		i++;
	}
}

struct live *live_create(const struct live_cfg *cfg)
{
	struct live *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return NULL;
	l->cfg = *cfg;
	if (l->cfg.mtu == 0)
		l->cfg.mtu = 1024;
	if (l->cfg.max_rd_atomic == 0)
		l->cfg.max_rd_atomic = 4;
	if (l->cfg.n_entropies == 0)
		l->cfg.n_entropies = 4;
	l->now = 1000000;
	l->last_recv_ok = -1;
	memset(&l->path_ab, 0, sizeof(l->path_ab));
	gid4(l->path_ab.sgid, 1);
	gid4(l->path_ab.dgid, 2);
	l->path_ab.ttl = 64;
	l->path_ab.udp_sport = 0xc000;
	l->path_ba = l->path_ab;
	gid4(l->path_ba.sgid, 2);
	gid4(l->path_ba.dgid, 1);
	if (side_create(&l->a, 16, 7) < 0 || side_create(&l->b, 116, 9) < 0 ||
	    setup_memory(l) < 0 ||
	    side_connect(l, &l->a, &l->b, &l->path_ab, 100, 5000) < 0 ||
	    side_connect(l, &l->b, &l->a, &l->path_ba, 5000, 100) < 0) {
		live_destroy(l);
		return NULL;
	}
	if (!cfg->no_setup_traffic)
		setup_traffic(l);
	return l;
}

void live_destroy(struct live *l)
{
	if (l == NULL)
		return;
	mr_ctx_destroy(l->a.ctx);
	mr_ctx_destroy(l->b.ctx);
	free(l->arena);
	free(l->ro_snap);
	free(l->src_snap);
	free(l->a_buf);
	free(l);
}

/* A response (ACK/NAK, READ response, atomic ACK) whose PSN lies outside the requests B has
 * outstanding, [oldest, next), refers to nothing B sent (IBA 9.7.5.1): it may be dropped but
 * must never fail B's QP (issue 8 defect 3). */
static bool response_outside_window(const struct live *l, const struct mr_pkt *pkt)
{
	uint8_t b = mr_opcode_base(pkt->hdr.opcode);
	uint32_t oldest = live_b_req_oldest(l), next = live_b_req_next(l);

	if (pkt->hdr.dqpn != mr_qp_num(l->b.qp) ||
	    (mr_opcode_is_metaroce(pkt->hdr.opcode) != (l->b.qp->mrt != NULL)) ||
	    b < MR_OP_RC_READ_RESPONSE_FIRST || b > MR_OP_RC_ATOMIC_ACK)
		return false;
	return mr_psn_cmp(pkt->hdr.psn, oldest) < 0 || mr_psn_cmp(pkt->hdr.psn, next) >= 0;
}

void live_rx_b(struct live *l, const struct mr_pkt *pkt)
{
	bool outside = response_outside_window(l, pkt);
	enum mr_qp_state st = mr_qp_state(l->b.qp);

	mr_ctx_rx(l->b.ctx, pkt, l->now);
	if (outside && st == MR_QPS_RTS && mr_qp_state(l->b.qp) == MR_QPS_ERR)
		fail(l, "B's requester failed its QP on a response for a PSN it never sent "
			"(defect 3)");
}

/* Build a frame for hdr on path (sport overrides), parse it with ICRC, deliver to `to`.
 * Returns as live_inject. */
static int deliver(struct live *l, struct live_side *to, const struct mr_path *path,
		   uint16_t sport, const struct mr_roce_hdrs *hdr, const struct mr_iov *iov,
		   unsigned int niov)
{
	static uint8_t frame[FRAME_CAP];
	struct mr_path p = *path;
	struct mr_pkt pkt;
	int n, r;

	if (sport)
		p.udp_sport = sport;
	n = mr_frame_build(frame, sizeof(frame), &p, 0, hdr, iov, niov);
	if (n < 0)
		return -1;
	r = mr_frame_parse(frame, (uint32_t)n, true, &pkt);
	if (r != MR_PARSE_OK) {
		fail(l, "mr_frame_build produced a frame mr_frame_parse rejects");
		return -2;
	}
	if (to == &l->b)
		live_rx_b(l, &pkt);
	else
		mr_ctx_rx(to->ctx, &pkt, l->now);
	return MR_PARSE_OK;
}

int live_inject(struct live *l, const struct mr_roce_hdrs *hdr, const void *payload,
		uint32_t paylen)
{
	struct mr_iov iov = { .base = payload, .len = paylen };

	return deliver(l, &l->b, &l->path_ab, 0, hdr, &iov, paylen ? 1 : 0);
}

int live_inject_on(struct live *l, const struct mr_path *path, const struct mr_roce_hdrs *hdr,
		   const void *payload, uint32_t paylen)
{
	struct mr_iov iov = { .base = payload, .len = paylen };

	return deliver(l, &l->b, path, 0, hdr, &iov, paylen ? 1 : 0);
}

int live_inject_frame(struct live *l, const uint8_t *frame, uint32_t len, bool check_icrc)
{
	struct mr_pkt pkt;
	int r = mr_frame_parse(frame, len, check_icrc, &pkt);

	if (r == MR_PARSE_OK) {
		/* The parser's promise: everything it points at is inside the frame. */
		if (pkt.payload < frame || pkt.paylen > len ||
		    (size_t)(pkt.payload - frame) > len - pkt.paylen)
			fail(l, "mr_frame_parse: payload outside the frame");
		else
			live_rx_b(l, &pkt);
	}
	return r;
}

/* Every byte B sends comes from a region B may legitimately send from. */
static bool span_readable(const struct live *l, const uint8_t *p, uint32_t n)
{
	static const enum live_region ok[] = { LR_RW, LR_RO, LR_SRC };

	for (unsigned int i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		const uint8_t *s = live_addr(l, ok[i], 0);

		if (p >= s && n <= l->reg_len[ok[i]] && (size_t)(p - s) <= l->reg_len[ok[i]] - n)
			return true;
	}
	return false;
}

static void check_tx(struct live *l, const struct mr_tx_pkt *tx)
{
	uint32_t sum = 0;

	for (unsigned int i = 0; i < tx->niov; i++) {
		if (tx->iov[i].len && !span_readable(l, tx->iov[i].base, tx->iov[i].len))
			fail(l, "B sent bytes from outside its readable registered regions");
		sum += tx->iov[i].len;
	}
	if (sum != tx->paylen)
		fail(l, "B's tx iovs disagree with paylen");
	if (tx->paylen > l->cfg.mtu)
		fail(l, "B sent a payload larger than the path MTU");
}

uint32_t live_b_tx(struct live *l, uint32_t max, bool to_a, struct live_pkt *out, uint32_t nout)
{
	struct mr_tx_pkt tx;
	uint32_t n = 0;

	if (max == 0)
		max = DRAIN_MAX;
	while (n < max && mr_ctx_tx(l->b.ctx, l->now, &tx) == 1) {
		check_tx(l, &tx);
		if (out != NULL && n < nout) {
			uint32_t off = 0;

			out[n].hdr = tx.hdr;
			out[n].paylen = tx.paylen;
			for (unsigned int i = 0; i < tx.niov && off + tx.iov[i].len <= 4096; i++) {
				memcpy(out[n].payload + off, tx.iov[i].base, tx.iov[i].len);
				off += tx.iov[i].len;
			}
		}
		if (to_a) {
			if (deliver(l, &l->a, tx.path, tx.udp_sport, &tx.hdr, tx.iov, tx.niov) == -1)
				fail(l, "B produced a packet the frame builder refuses");
		} else {
			static uint8_t frame[FRAME_CAP];
			struct mr_path p = *tx.path;

			if (tx.udp_sport)
				p.udp_sport = tx.udp_sport;
			if (mr_frame_build(frame, sizeof(frame), &p, 0, &tx.hdr, tx.iov,
					   tx.niov) < 0)
				fail(l, "B produced a packet the frame builder refuses");
		}
		n++;
	}
	if (to_a)
		live_a_tx(l);
	return n;
}

void live_a_tx(struct live *l)
{
	struct mr_tx_pkt tx;

	for (uint32_t n = 0; n < 4096 && mr_ctx_tx(l->a.ctx, l->now, &tx) == 1; n++) {
		struct live_pkt *h;
		uint32_t off = 0;

		if (l->nheld_ab == LIVE_HELD)
			continue; /* lost on the wire */
		h = &l->held_ab[l->nheld_ab++];
		h->hdr = tx.hdr;
		h->paylen = tx.paylen;
		for (unsigned int i = 0; i < tx.niov; i++) {
			memcpy(h->payload + off, tx.iov[i].base, tx.iov[i].len);
			off += tx.iov[i].len;
		}
		/* MetaRoCE sprays over source ports; the transport ignores them on receive. */
	}
}

void live_held_deliver(struct live *l, uint32_t i, bool dup, bool drop)
{
	struct live_pkt *h;

	if (l->nheld_ab == 0)
		return;
	i %= l->nheld_ab;
	h = &l->held_ab[i];
	if (!drop) {
		live_inject(l, &h->hdr, h->payload, h->paylen);
		if (dup)
			live_inject(l, &h->hdr, h->payload, h->paylen);
	}
	held_remove(l, i);
}

void live_advance(struct live *l, uint64_t ns)
{
	l->now += ns;
	mr_ctx_on_timer(l->a.ctx, l->now);
	mr_ctx_on_timer(l->b.ctx, l->now);
}

int live_post_recv(struct live *l, uint32_t i, uint32_t len)
{
	struct mr_recv_wr r;
	uint32_t idx = l->nposted;
	int rc;

	if (idx >= LIVE_MAX_WR)
		return -ENOSPC;
	i %= LIVE_NRECV;
	if (len > LIVE_RECV_BUF)
		len = LIVE_RECV_BUF;
	memset(&r, 0, sizeof(r));
	r.wr_id = LIVE_WRID_BASE + idx;
	r.num_sge = 1;
	r.sg_list[0].addr = (uint64_t)(uintptr_t)live_addr(l, LR_RECV, i * LIVE_RECV_BUF);
	r.sg_list[0].length = len;
	r.sg_list[0].lkey = l->key[LR_RECV];
	rc = mr_post_recv(l->b.qp, &r);
	if (rc == 0) {
		l->nposted++;
		l->is_recv[idx] = true;
		l->recv_len[idx] = len;
		l->recv_buf[idx] = (uint8_t)i;
		l->nrecv_posted++;
	}
	return rc;
}

int live_post_send(struct live *l, enum mr_wr_opcode op, uint32_t len, uint32_t remote_off)
{
	bool to_sink = op == MR_WR_RDMA_READ || op == MR_WR_ATOMIC_CMP_AND_SWP ||
		       op == MR_WR_ATOMIC_FETCH_AND_ADD;
	enum live_region r = to_sink ? LR_SINK : LR_SRC;
	struct mr_send_wr wr;
	uint32_t idx = l->nposted;
	int rc;

	if (idx >= LIVE_MAX_WR)
		return -ENOSPC;
	if (op == MR_WR_ATOMIC_CMP_AND_SWP || op == MR_WR_ATOMIC_FETCH_AND_ADD) {
		len = 8;
		remote_off &= ~7u;
	}
	if (len > l->reg_len[r])
		len = l->reg_len[r];
	remote_off %= 65536 - len;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = LIVE_WRID_BASE + idx;
	wr.opcode = op;
	wr.send_flags = MR_SEND_SIGNALED;
	wr.num_sge = 1;
	wr.sg_list[0].addr = (uint64_t)(uintptr_t)live_addr(l, r, 0);
	wr.sg_list[0].length = len;
	wr.sg_list[0].lkey = l->key[r];
	wr.rdma.remote_addr = (uint64_t)(uintptr_t)l->a_buf + remote_off;
	wr.rdma.rkey = mr_memreg_rkey(l->a_mr);
	wr.atomic.remote_addr = wr.rdma.remote_addr;
	wr.atomic.rkey = wr.rdma.rkey;
	wr.atomic.compare_add = 1;
	wr.imm_data = 0x1234;
	rc = mr_post_send(l->b.qp, &wr);
	if (rc == 0)
		l->nposted++;
	return rc;
}

static void check_wc(struct live *l, const struct mr_wc *wc, bool recv_cq)
{
	uint64_t idx = wc->wr_id - LIVE_WRID_BASE;

	if (wc->wr_id < LIVE_WRID_BASE || idx >= l->nposted) {
		fail(l, "completion for a wr_id that was never posted");
		return;
	}
	if (l->completed[idx]) {
		fail(l, "a work request completed twice");
		return;
	}
	l->completed[idx] = 1;
	if (l->is_recv[idx] != recv_cq)
		fail(l, "completion on the wrong CQ");
	if (recv_cq && wc->status == MR_WC_SUCCESS && wc->opcode == MR_WC_RECV &&
	    wc->byte_len > l->recv_len[idx])
		fail(l, "receive completed with more bytes than its buffer");
	if (recv_cq && wc->status == MR_WC_SUCCESS && wc->opcode == MR_WC_RECV)
		l->last_recv_ok = (int32_t)idx;
	if (wc->qp_num != mr_qp_num(l->b.qp))
		fail(l, "completion names another QP");
}

int live_poll_b(struct live *l, struct mr_wc *last)
{
	struct mr_wc wc[16];
	int total = 0, n;

	for (int c = 0; c < 2; c++) {
		struct mr_cq *cq = c ? l->b.rcq : l->b.scq;

		while ((n = mr_cq_poll(cq, 16, wc)) > 0) {
			for (int i = 0; i < n; i++)
				check_wc(l, &wc[i], c == 1);
			if (last != NULL)
				*last = wc[n - 1];
			total += n;
		}
	}
	return total;
}

const char *live_check_queues(struct live *l)
{
	const struct mr_qp *qp = l->b.qp;

	if (qp->rq_tail - qp->rq_head > qp->init.max_recv_wr)
		return fail(l, "B's receive queue: rq_head passed rq_tail (defect 1)");
	if (qp->sq_tail - qp->sq_head > qp->init.max_send_wr)
		return fail(l, "B's send queue: sq_head passed sq_tail");
	if (qp->resp.ring_count > RC_RESP_RING)
		return fail(l, "B's response ring over capacity");
	if (qp->resp.rd_pending > RC_RESP_RING)
		return fail(l, "B's rd_pending underflowed or overflowed");
	return l->why;
}

const char *live_check_memory(struct live *l)
{
	const uint8_t *p = l->arena;

	for (int r = 0; r <= LR_NUM; r++) {
		uint32_t from = r == 0 ? 0 : l->reg_off[r - 1] + l->reg_len[r - 1];
		uint32_t to = r == LR_NUM ? l->arena_len : l->reg_off[r];

		for (uint32_t i = from; i < to; i++)
			if (p[i] != LIVE_GUARD_BYTE)
				return fail(l, "a guard byte between B's regions was overwritten");
	}
	for (uint32_t i = 0; i < l->reg_len[LR_STALE]; i++)
		if (live_addr(l, LR_STALE, 0)[i] != LIVE_GUARD_BYTE)
			return fail(l, "memory of a deregistered MR was written");
	if (memcmp(live_addr(l, LR_RO, 0), l->ro_snap, l->reg_len[LR_RO]) != 0)
		return fail(l, "a remote-read-only region was written");
	if (memcmp(live_addr(l, LR_SRC, 0), l->src_snap, l->reg_len[LR_SRC]) != 0)
		return fail(l, "a region without write access was written");
	return l->why;
}

const char *live_finish(struct live *l)
{
	struct mr_qp_attr a;
	uint32_t rounds;

	if (live_check_queues(l) != NULL)
		return l->why;
	live_b_tx(l, 0, false, NULL, 0);
	for (rounds = 0; rounds < TIMER_ROUNDS; rounds++) {
		uint64_t t = mr_ctx_next_expiry(l->b.ctx);

		if (t == UINT64_MAX)
			break;
		if (t > l->now)
			l->now = t;
		mr_ctx_on_timer(l->b.ctx, l->now);
		if (live_b_tx(l, 0, false, NULL, 0) >= DRAIN_MAX)
			return fail(l, "B never stops sending");
		if (live_check_queues(l) != NULL)
			return l->why;
	}
	if (rounds == TIMER_ROUNDS)
		return fail(l, "B's timers never quiesce");
	live_poll_b(l, NULL);
	memset(&a, 0, sizeof(a));
	a.qp_state = MR_QPS_ERR;
	mr_qp_modify(l->b.qp, &a, MR_QP_STATE);
	live_b_tx(l, 0, false, NULL, 0);
	live_poll_b(l, NULL);
	for (uint32_t i = 0; i < l->nposted; i++)
		if (!l->completed[i])
			return fail(l, "a work request never completed (not even flushed)");
	if (live_check_queues(l) != NULL)
		return l->why;
	return live_check_memory(l);
}

/* Move everything both ways as frames, with timers, until quiet or max_ns passed. */
static void pump(struct live *l, uint64_t max_ns)
{
	uint64_t end = l->now + max_ns;

	for (uint32_t guard = 0; guard < 100000; guard++) {
		struct mr_tx_pkt tx;
		bool any = false;

		while (l->nheld_ab > 0) {
			live_held_deliver(l, 0, false, false);
			any = true;
		}
		while (mr_ctx_tx(l->b.ctx, l->now, &tx) == 1) {
			check_tx(l, &tx);
			deliver(l, &l->a, tx.path, tx.udp_sport, &tx.hdr, tx.iov, tx.niov);
			any = true;
		}
		live_a_tx(l);
		if (l->nheld_ab > 0)
			any = true;
		if (!any) {
			uint64_t ta = mr_ctx_next_expiry(l->a.ctx), tb = mr_ctx_next_expiry(l->b.ctx);
			uint64_t t = ta < tb ? ta : tb;

			if (t == UINT64_MAX || t > end)
				return;
			if (t > l->now)
				l->now = t;
			mr_ctx_on_timer(l->a.ctx, l->now);
			mr_ctx_on_timer(l->b.ctx, l->now);
		}
	}
}

void live_settle(struct live *l)
{
	pump(l, 1000000000ull);
}

const char *live_legit_transfer(struct live *l, uint32_t off, uint32_t len)
{
	uint64_t rw = (uint64_t)(uintptr_t)live_addr(l, LR_RW, 0);
	struct mr_wc wc[16];
	bool write_ok = false, send_ok = false;
	int n;

	if (off > 16384 || len > 16384 - off || len > 0x4000)
		return fail(l, "live_legit_transfer: range outside RW");
	/* Settle the setup traffic first, then a fresh WRITE and SEND. */
	pump(l, 1000000000ull);
	live_poll_b(l, NULL);
	while (mr_cq_poll(l->a.scq, 16, wc) > 0)
		;
	fill(l->a_buf + 0x10000 - 0x4000, len, 0x77);
	if (live_post_recv(l, 0, LIVE_RECV_BUF) < 0)
		return fail(l, "B could not post a receive for the legitimate SEND");
	a_post(l, 0xb1, MR_WR_RDMA_WRITE, 0x10000 - 0x4000, len, rw + off, l->key[LR_RW]);
	fill(l->a_buf + 0x9000, 64, 0x99);
	a_post(l, 0xb2, MR_WR_SEND, 0x9000, 64, 0, 0);
	pump(l, 1000000000ull);
	while ((n = mr_cq_poll(l->a.scq, 16, wc)) > 0)
		for (int i = 0; i < n; i++) {
			write_ok |= wc[i].wr_id == 0xb1 && wc[i].status == MR_WC_SUCCESS;
			send_ok |= wc[i].wr_id == 0xb2 && wc[i].status == MR_WC_SUCCESS;
		}
	l->last_recv_ok = -1;
	live_poll_b(l, NULL);
	if (!write_ok || !send_ok)
		return fail(l, "legitimate WRITE/SEND after hostile traffic did not complete");
	if (memcmp(live_addr(l, LR_RW, off), l->a_buf + 0x10000 - 0x4000, len) != 0)
		return fail(l, "legitimate WRITE after hostile traffic placed wrong bytes");
	if (l->last_recv_ok < 0 || l->recv_len[l->last_recv_ok] < 64 ||
	    memcmp(live_addr(l, LR_RECV, l->recv_buf[l->last_recv_ok] * LIVE_RECV_BUF),
		   l->a_buf + 0x9000, 64) != 0)
		return fail(l, "legitimate SEND after hostile traffic: no receive with its bytes");
	return live_check_memory(l);
}

uint32_t live_b_epsn(const struct live *l)
{
	return l->b.qp->mrt ? l->b.qp->mrt->resp.nxt : l->b.qp->resp.epsn;
}

uint32_t live_b_req_next(const struct live *l)
{
	return l->b.qp->mrt ? l->b.qp->mrt->req.nxt : l->b.qp->req.psn_max;
}

uint32_t live_b_req_oldest(const struct live *l)
{
	return l->b.qp->mrt ? l->b.qp->mrt->req.una : l->b.qp->comp.psn;
}
