/* SPDX-License-Identifier: MIT
 * A verified RC transfer scenario over the simulator (see sim_xfer.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_rng.h"
#include "sim/sim_verify.h"
#include "sim/sim_xfer.h"

#define GUARD MR_SIM_XFER_GUARD
#define GUARD_BYTE 0xa5
#define IOVA_A 0x100000000ull /* MR address spaces differ from host pointers on purpose */
#define IOVA_B 0x7f0000000000ull

struct xqp {
	struct mr_qp *qa, *qb;
	uint32_t next_post;   /* next message index for this QP */
	uint32_t outstanding;
	uint32_t next_recv;
	uint32_t recv_outstanding;
};

struct xfer {
	const struct mr_sim_xfer_cfg *cfg;
	struct mr_sim_xfer_result *res;
	struct mr_sim *sim;
	struct mr_sim_node *a, *b;
	struct mr_pd *pda, *pdb;
	struct mr_cq *scq_a, *rcq_a, *scq_b, *rcq_b;
	struct mr_memreg *mra, *mrb;
	struct xqp qp[MR_SIM_XFER_MAX_QP];
	uint8_t *bufa, *bufb, *expect; /* expect: what the destination must hold */
	uint64_t stride, buflen;
	uint32_t rq_max;
	uint64_t start;
	struct mr_sim_msgs msgs; /* post and completion times per message */
	uint32_t posted;
	bool failed;   /* a send-side WR failed: stop posting */
	bool stop;
};

static bool is_atomic(enum mr_wr_opcode op)
{
	return op == MR_WR_ATOMIC_CMP_AND_SWP || op == MR_WR_ATOMIC_FETCH_AND_ADD;
}

static bool needs_recv(enum mr_wr_opcode op)
{
	return op == MR_WR_SEND || op == MR_WR_SEND_WITH_IMM || op == MR_WR_RDMA_WRITE_WITH_IMM;
}

static bool has_imm(enum mr_wr_opcode op)
{
	return op == MR_WR_SEND_WITH_IMM || op == MR_WR_RDMA_WRITE_WITH_IMM;
}

static uint32_t imm_of(uint32_t i)
{
	return 0xc0de0000u ^ (i * 2654435761u);
}

const char *mr_sim_xfer_op_name(enum mr_wr_opcode op)
{
	switch (op) {
	case MR_WR_RDMA_WRITE: return "write";
	case MR_WR_RDMA_WRITE_WITH_IMM: return "write_imm";
	case MR_WR_SEND: return "send";
	case MR_WR_SEND_WITH_IMM: return "send_imm";
	case MR_WR_RDMA_READ: return "read";
	case MR_WR_ATOMIC_CMP_AND_SWP: return "cmp_swap";
	case MR_WR_ATOMIC_FETCH_AND_ADD: return "fetch_add";
	default: return "?";
	}
}

const char *mr_sim_wc_status_str(enum mr_wc_status s)
{
	static const char *const names[] = {
		"SUCCESS", "LOC_LEN_ERR", "LOC_QP_OP_ERR", "LOC_EEC_OP_ERR", "LOC_PROT_ERR",
		"WR_FLUSH_ERR", "MW_BIND_ERR", "BAD_RESP_ERR", "LOC_ACCESS_ERR",
		"REM_INV_REQ_ERR", "REM_ACCESS_ERR", "REM_OP_ERR", "RETRY_EXC_ERR",
		"RNR_RETRY_EXC_ERR", "LOC_RDD_VIOL_ERR", "REM_INV_RD_REQ_ERR", "REM_ABORT_ERR",
		"INV_EECN_ERR", "INV_EEC_STATE_ERR", "FATAL_ERR", "RESP_TIMEOUT_ERR",
		"GENERAL_ERR",
	};

	return (unsigned int)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

void mr_sim_xfer_cfg_init(struct mr_sim_xfer_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->op = MR_WR_SEND;
	cfg->size = 4096;
	cfg->count = 1;
	cfg->depth = 8;
	cfg->nqp = 1;
	mr_sim_qp_cfg_init(&cfg->qp);
	mr_sim_link_cfg_init(&cfg->link_ab);
	cfg->link_ab.rate_bps = 100000000000ull;
	cfg->link_ab.latency_ns = 5000;
	cfg->link_ab.seed = 1;
	cfg->link_ba = cfg->link_ab;
	cfg->link_ba.seed = 2;
	cfg->seed = 1;
	cfg->max_ns = 10ull * 1000000000ull;
}

/* Per-message atomic operands, derived from the seed. */
static uint64_t atom_orig(const struct xfer *x, uint32_t i)
{
	uint64_t st = x->cfg->seed * 31 + i;

	return mr_sim_splitmix64(&st);
}

static uint64_t atom_operand(const struct xfer *x, uint32_t i)
{
	uint64_t st = ~(x->cfg->seed * 37 + i);

	return mr_sim_splitmix64(&st);
}

/* CMP_SWAP: even messages compare equal (the swap happens), odd ones do not. */
static uint64_t atom_compare(const struct xfer *x, uint32_t i)
{
	return i % 2 == 0 ? atom_orig(x, i) : ~atom_orig(x, i);
}

static int setup_buffers(struct xfer *x)
{
	const struct mr_sim_xfer_cfg *c = x->cfg;
	uint8_t *src, *dst;

	if (is_atomic(c->op)) {
		x->stride = 8;
		x->buflen = (uint64_t)c->count * 8;
	} else {
		x->stride = c->size + GUARD;
		x->buflen = (uint64_t)c->count * x->stride;
	}
	/* 8-byte aligned: atomics need it, and the data ops do not care. */
	x->bufa = aligned_alloc(64, (x->buflen + 63) / 64 * 64);
	x->bufb = aligned_alloc(64, (x->buflen + 63) / 64 * 64);
	x->expect = malloc(x->buflen);
	if (mr_sim_msgs_init(&x->msgs, c->count) < 0 || !x->bufa || !x->bufb || !x->expect)
		return -ENOMEM;

	if (is_atomic(c->op)) {
		memset(x->bufa, GUARD_BYTE, x->buflen);
		for (uint32_t i = 0; i < c->count; i++) {
			uint64_t orig = atom_orig(x, i), fin;

			memcpy(x->bufb + 8 * i, &orig, 8);
			if (c->op == MR_WR_ATOMIC_FETCH_AND_ADD)
				fin = orig + atom_operand(x, i);
			else
				fin = atom_compare(x, i) == orig ? atom_operand(x, i) : orig;
			memcpy(x->expect + 8 * i, &fin, 8); /* expected final remote word */
		}
		return 0;
	}
	/* READ moves b -> a; everything else a -> b. */
	src = c->op == MR_WR_RDMA_READ ? x->bufb : x->bufa;
	dst = c->op == MR_WR_RDMA_READ ? x->bufa : x->bufb;
	mr_sim_fill_pattern(src, x->buflen, c->seed);
	memset(dst, GUARD_BYTE, x->buflen);
	memset(x->expect, GUARD_BYTE, x->buflen);
	for (uint32_t i = 0; i < c->count; i++)
		memcpy(x->expect + i * x->stride, src + i * x->stride, c->size);
	return 0;
}

static int post_one(struct xfer *x, struct xqp *q, uint32_t i)
{
	const struct mr_sim_xfer_cfg *c = x->cfg;
	struct mr_send_wr wr;
	int rc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = i;
	wr.opcode = c->op;
	wr.send_flags = MR_SEND_SIGNALED;
	if (is_atomic(c->op)) {
		wr.num_sge = 1;
		wr.sg_list[0] = (struct mr_sge){ IOVA_A + 8ull * i, 8, mr_memreg_lkey(x->mra) };
		wr.atomic.remote_addr = IOVA_B + 8ull * i;
		wr.atomic.rkey = mr_memreg_rkey(x->mrb);
		if (c->op == MR_WR_ATOMIC_CMP_AND_SWP) {
			wr.atomic.compare_add = atom_compare(x, i);
			wr.atomic.swap = atom_operand(x, i);
		} else {
			wr.atomic.compare_add = atom_operand(x, i);
		}
	} else {
		wr.num_sge = c->size ? 1 : 0;
		wr.sg_list[0] = (struct mr_sge){ IOVA_A + i * x->stride, (uint32_t)c->size,
						 mr_memreg_lkey(x->mra) };
		wr.rdma.remote_addr = IOVA_B + i * x->stride;
		wr.rdma.rkey = mr_memreg_rkey(x->mrb);
		wr.imm_data = imm_of(i);
	}
	rc = mr_post_send(q->qa, &wr);
	if (rc < 0)
		return rc;
	x->msgs.t_post[i] = mr_sim_now(x->sim);
	q->outstanding++;
	x->posted++;
	return 0;
}

static int post_recv_one(struct xfer *x, struct xqp *q, uint32_t i)
{
	const struct mr_sim_xfer_cfg *c = x->cfg;
	struct mr_recv_wr wr;
	int rc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = i;
	/* WRITE_WITH_IMM consumes a receive WR but places no data through it. */
	if (c->op != MR_WR_RDMA_WRITE_WITH_IMM && c->size) {
		wr.num_sge = 1;
		wr.sg_list[0] = (struct mr_sge){ IOVA_B + i * x->stride, (uint32_t)c->size,
						 mr_memreg_lkey(x->mrb) };
	}
	rc = mr_post_recv(q->qb, &wr);
	if (rc < 0)
		return rc;
	q->recv_outstanding++;
	return 0;
}

static enum mr_wc_opcode expected_wc_op(enum mr_wr_opcode op)
{
	switch (op) {
	case MR_WR_RDMA_WRITE:
	case MR_WR_RDMA_WRITE_WITH_IMM: return MR_WC_RDMA_WRITE;
	case MR_WR_RDMA_READ: return MR_WC_RDMA_READ;
	case MR_WR_ATOMIC_CMP_AND_SWP: return MR_WC_COMP_SWAP;
	case MR_WR_ATOMIC_FETCH_AND_ADD: return MR_WC_FETCH_ADD;
	default: return MR_WC_SEND;
	}
}

static void poll_send(struct xfer *x)
{
	const struct mr_sim_xfer_cfg *c = x->cfg;
	struct mr_sim_xfer_result *r = x->res;
	struct mr_wc wc[32];
	int n;

	while ((n = mr_cq_poll(x->scq_a, 32, wc)) > 0) {
		for (int k = 0; k < n; k++) {
			uint64_t i = wc[k].wr_id;
			struct xqp *q;

			if (!mr_sim_msgs_complete(&x->msgs, i, mr_sim_now(x->sim))) {
				r->wc_bad++;
				continue;
			}
			q = &x->qp[i % c->nqp];
			q->outstanding--;
			r->completed++;
			if ((unsigned int)wc[k].status < 32)
				r->status_count[wc[k].status]++;
			if (wc[k].status != MR_WC_SUCCESS) {
				if (!x->failed)
					r->first_error = wc[k].status;
				x->failed = true;
				continue;
			}
			r->succeeded++;
			if (wc[k].opcode != expected_wc_op(c->op) ||
			    wc[k].qp_num != mr_qp_num(q->qa))
				r->wc_bad++;
		}
	}
}

static void poll_recv(struct xfer *x)
{
	const struct mr_sim_xfer_cfg *c = x->cfg;
	struct mr_sim_xfer_result *r = x->res;
	struct mr_wc wc[32];
	int n;

	while ((n = mr_cq_poll(x->rcq_b, 32, wc)) > 0) {
		for (int k = 0; k < n; k++) {
			uint64_t i = wc[k].wr_id;
			struct xqp *q;
			bool ok;

			r->recv_completed++;
			if (i >= c->count) {
				r->wc_bad++;
				continue;
			}
			q = &x->qp[i % c->nqp];
			q->recv_outstanding--;
			if (wc[k].status == MR_WC_WR_FLUSH_ERR && x->failed)
				continue;
			ok = wc[k].status == MR_WC_SUCCESS && wc[k].qp_num == mr_qp_num(q->qb);
			if (c->op == MR_WR_RDMA_WRITE_WITH_IMM)
				ok = ok && wc[k].opcode == MR_WC_RECV_RDMA_WITH_IMM;
			else
				ok = ok && wc[k].opcode == MR_WC_RECV && wc[k].byte_len == c->size;
			if (has_imm(c->op))
				ok = ok && (wc[k].wc_flags & MR_WC_WITH_IMM) &&
				     wc[k].imm_data == imm_of((uint32_t)i);
			else
				ok = ok && !(wc[k].wc_flags & MR_WC_WITH_IMM);
			if (!ok)
				r->wc_bad++;
		}
	}
}

static bool xfer_pred(struct mr_sim *sim, void *arg)
{
	struct xfer *x = arg;
	const struct mr_sim_xfer_cfg *c = x->cfg;
	bool recv_time = mr_sim_now(sim) >= x->start + c->recv_delay_ns;
	int rc;

	poll_send(x);
	if (needs_recv(c->op))
		poll_recv(x);
	for (uint32_t qi = 0; qi < c->nqp; qi++) {
		struct xqp *q = &x->qp[qi];

		while (needs_recv(c->op) && recv_time && q->next_recv < c->count &&
		       q->recv_outstanding < x->rq_max) {
			rc = post_recv_one(x, q, q->next_recv);
			if (rc < 0) {
				x->res->rc = rc;
				return true;
			}
			q->next_recv += c->nqp;
		}
		while (!x->failed && q->next_post < c->count && q->outstanding < c->depth) {
			rc = post_one(x, q, q->next_post);
			if (rc < 0) {
				x->res->rc = rc;
				return true;
			}
			q->next_post += c->nqp;
		}
	}
	if (x->res->completed < x->posted)
		return false;
	if (!x->failed && x->posted < c->count)
		return false;
	/* Receives complete before the responder ACKs, so they are in by now unless lost. */
	if (!x->failed && needs_recv(c->op) && x->res->recv_completed < c->count)
		return false;
	return true;
}

static void verify(struct xfer *x)
{
	const struct mr_sim_xfer_cfg *c = x->cfg;
	struct mr_sim_xfer_result *r = x->res;
	const uint8_t *dst;

	if (is_atomic(c->op)) {
		for (uint32_t i = 0; i < c->count; i++) {
			uint64_t orig = atom_orig(x, i);
			uint64_t got_ret, got_rem, exp_rem;

			memcpy(&got_ret, x->bufa + 8 * i, 8);
			memcpy(&got_rem, x->bufb + 8 * i, 8);
			memcpy(&exp_rem, x->expect + 8 * i, 8);
			/* Count differing bytes of the returned original and the remote word. */
			for (int b = 0; b < 8; b++) {
				bool ok1 = ((got_ret ^ orig) >> (8 * b) & 0xff) == 0;
				bool ok2 = ((got_rem ^ exp_rem) >> (8 * b) & 0xff) == 0;

				r->bytes_verified += ok1 + ok2;
				r->bytes_bad += !ok1 + !ok2;
			}
		}
		return;
	}
	/* expect holds the source bytes and the guard bytes: check it against the region. */
	dst = c->op == MR_WR_RDMA_READ ? x->bufa : x->bufb;
	mr_sim_verify_strided(dst, x->expect, x->buflen, x->stride, c->size, GUARD_BYTE,
			      &r->bytes_verified, &r->bytes_bad);
}

static void latency(struct xfer *x)
{
	const struct mr_sim_xfer_cfg *c = x->cfg;
	uint64_t *lat = malloc((c->count ? c->count : 1) * sizeof(*lat));

	if (lat == NULL)
		return;
	mr_sim_lat_percentiles(lat, mr_sim_msgs_latencies(&x->msgs, lat), &x->res->lat_p50_ns,
			       &x->res->lat_p99_ns, &x->res->lat_max_ns);
	free(lat);
}

static struct mr_sim_node *make_node(struct mr_sim *sim, const char *name, uint8_t id,
				     uint32_t first_qpn, uint64_t seed)
{
	struct mr_sim_node_cfg nc;
	struct mr_sim_node *n;

	memset(&nc, 0, sizeof(nc));
	nc.name = name;
	memcpy(nc.mac, (uint8_t[6]){ 0x02, 0, 0, 0, 0, id }, 6);
	memcpy(nc.ipv4, (uint8_t[4]){ 10, 0, 0, id }, 4);
	nc.ctx.max_qp = 2 * MR_SIM_XFER_MAX_QP;
	nc.ctx.first_qpn = first_qpn;
	nc.ctx.max_mr = 8;
	nc.ctx.seed = seed;
	n = mr_sim_node_create(&nc);
	if (n != NULL && mr_sim_add_node(sim, n) < 0) {
		mr_sim_node_destroy(n);
		return NULL;
	}
	return n;
}

static int setup(struct xfer *x)
{
	const struct mr_sim_xfer_cfg *c = x->cfg;
	const uint32_t acc = MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE |
			     MR_ACCESS_REMOTE_READ | MR_ACCESS_REMOTE_ATOMIC;
	struct mr_ctx *ca, *cb;
	uint32_t cqd;
	int rc;

	if (c->nqp < 1 || c->nqp > MR_SIM_XFER_MAX_QP || c->depth < 1 ||
	    (!is_atomic(c->op) && c->size > UINT32_MAX))
		return -EINVAL;
	rc = setup_buffers(x);
	if (rc < 0)
		return rc;
	x->sim = mr_sim_create();
	if (x->sim == NULL)
		return -ENOMEM;
	/* Distinct QPN ranges on the two sides catch a transport dispatching on the wrong QPN. */
	x->a = make_node(x->sim, "a", 1, 0x11, c->seed ^ 0xa);
	x->b = make_node(x->sim, "b", 2, 0x400, c->seed ^ 0xb);
	if (x->a == NULL || x->b == NULL)
		return errno ? -errno : -ENOMEM;
	rc = mr_sim_connect(x->sim, x->a, x->b, &c->link_ab, &c->link_ba);
	if (rc < 0)
		return rc;
	if (c->trace)
		mr_sim_set_trace(x->sim, c->trace);
	ca = mr_sim_node_ctx(x->a);
	cb = mr_sim_node_ctx(x->b);
	x->pda = mr_pd_alloc(ca);
	x->pdb = mr_pd_alloc(cb);
	if (!x->pda || !x->pdb)
		return -ENOMEM;
	x->mra = mr_reg(x->pda, x->bufa, IOVA_A, x->buflen, acc);
	x->mrb = mr_reg(x->pdb, x->bufb, IOVA_B, x->buflen, acc);
	if (!x->mra || !x->mrb)
		return errno ? -errno : -ENOMEM;
	x->rq_max = c->depth * 2;
	cqd = (c->depth + x->rq_max) * c->nqp + 16;
	x->scq_a = mr_cq_create(ca, cqd);
	x->rcq_a = mr_cq_create(ca, cqd);
	x->scq_b = mr_cq_create(cb, cqd);
	x->rcq_b = mr_cq_create(cb, cqd);
	if (!x->scq_a || !x->rcq_a || !x->scq_b || !x->rcq_b)
		return errno ? -errno : -ENOMEM;
	for (uint32_t i = 0; i < c->nqp; i++) {
		struct mr_qp_init_attr ia = {
			.max_send_wr = c->depth, .max_recv_wr = x->rq_max,
		};
		struct xqp *q = &x->qp[i];

		ia.pd = x->pda;
		ia.send_cq = x->scq_a;
		ia.recv_cq = x->rcq_a;
		q->qa = mr_qp_create(ca, &ia);
		ia.pd = x->pdb;
		ia.send_cq = x->scq_b;
		ia.recv_cq = x->rcq_b;
		q->qb = mr_qp_create(cb, &ia);
		if (!q->qa || !q->qb)
			return errno ? -errno : -ENOMEM;
		rc = mr_sim_qp_connect(x->a, q->qa, x->b, q->qb, &c->qp);
		if (rc < 0)
			return rc;
		q->next_post = i;
		q->next_recv = i;
	}
	return 0;
}

static void teardown(struct xfer *x)
{
	for (uint32_t i = 0; i < MR_SIM_XFER_MAX_QP; i++) {
		if (x->qp[i].qa)
			mr_qp_destroy(x->qp[i].qa);
		if (x->qp[i].qb)
			mr_qp_destroy(x->qp[i].qb);
	}
	if (x->mra)
		mr_dereg(x->mra);
	if (x->mrb)
		mr_dereg(x->mrb);
	if (x->scq_a)
		mr_cq_destroy(x->scq_a);
	if (x->rcq_a)
		mr_cq_destroy(x->rcq_a);
	if (x->scq_b)
		mr_cq_destroy(x->scq_b);
	if (x->rcq_b)
		mr_cq_destroy(x->rcq_b);
	if (x->pda)
		mr_pd_free(x->pda);
	if (x->pdb)
		mr_pd_free(x->pdb);
	mr_sim_destroy(x->sim);
	free(x->bufa);
	free(x->bufb);
	free(x->expect);
	mr_sim_msgs_free(&x->msgs);
}

static void collect(struct xfer *x)
{
	struct mr_sim_xfer_result *r = x->res;

	for (uint32_t i = 0; i < x->cfg->nqp; i++) {
		struct mr_qp_stats s;

		if (mr_qp_get_stats(x->qp[i].qa, &s) == 0)
			mr_sim_qp_stats_add(&r->qa, &s);
		if (mr_qp_get_stats(x->qp[i].qb, &s) == 0)
			mr_sim_qp_stats_add(&r->qb, &s);
	}
	r->final_state_a = mr_qp_state(x->qp[0].qa);
	mr_sim_node_get_stats(x->a, &r->node_a);
	mr_sim_node_get_stats(x->b, &r->node_b);
	mr_sim_link_get_stats(mr_sim_get_link(x->sim, x->a, x->b), &r->link_ab);
	mr_sim_link_get_stats(mr_sim_get_link(x->sim, x->b, x->a), &r->link_ba);
	mr_ctx_get_stats(mr_sim_node_ctx(x->a), &r->ctx_a);
	mr_ctx_get_stats(mr_sim_node_ctx(x->b), &r->ctx_b);
	mr_sim_get_stats(x->sim, &r->sim);
}

int mr_sim_xfer_run(const struct mr_sim_xfer_cfg *cfg, struct mr_sim_xfer_result *res)
{
	struct xfer x;
	int rc;

	memset(&x, 0, sizeof(x));
	memset(res, 0, sizeof(*res));
	x.cfg = cfg;
	x.res = res;
	rc = setup(&x);
	if (rc < 0) {
		res->rc = rc;
		teardown(&x);
		return rc;
	}
	x.start = mr_sim_now(x.sim);
	if (cfg->recv_delay_ns)
		mr_sim_wake_at(x.sim, x.start + cfg->recv_delay_ns);
	rc = mr_sim_run(x.sim, xfer_pred, &x, cfg->max_ns, NULL);
	if (res->rc == 0)
		res->rc = rc;
	res->elapsed_ns = x.msgs.last_done > x.start ? x.msgs.last_done - x.start : 0;
	collect(&x);
	if (res->rc == 0 && !x.failed)
		verify(&x);
	latency(&x);
	if (res->elapsed_ns > 0 && !x.failed && res->bytes_bad == 0) {
		uint64_t payload = is_atomic(cfg->op) ? 8ull * cfg->count : cfg->size * cfg->count;

		res->goodput_gbps = mr_sim_goodput_gbps(payload, res->elapsed_ns);
	}
	teardown(&x);
	return res->rc;
}
