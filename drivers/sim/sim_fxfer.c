/* SPDX-License-Identifier: MIT
 * Verified RDMA WRITE flows over the multipath fabric (see sim_fxfer.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_fxfer.h"
#include "sim/sim_verify.h"

#define GUARD 64
#define GUARD_BYTE 0x5a
#define IOVA_SRC 0x200000000ull
#define IOVA_DST 0x6f0000000000ull

struct fflow {
	struct mr_qp *qa, *qb;
	struct mr_cq *cqa, *cqb;
	struct mr_memreg *mra, *mrb;
	uint8_t *src, *dst;
	uint64_t len, stride;
	uint32_t next_post, outstanding, completed;
	struct mr_sim_msgs msgs; /* post and completion times per message */
	bool failed;
};

struct fx {
	const struct mr_sim_fxfer_cfg *cfg;
	struct mr_sim_fxfer_result *res;
	struct mr_sim_fabric *fab;
	struct mr_pd *pd[MR_SIM_FABRIC_MAX_HOSTS];
	struct fflow fl[MR_SIM_FXFER_MAX_FLOWS];
	uint64_t start;
};

void mr_sim_fxfer_cfg_init(struct mr_sim_fxfer_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	mr_sim_fabric_cfg_init(&cfg->fabric);
	cfg->n_flows = 1;
	cfg->flow[0].src = 0;
	cfg->flow[0].dst = 1;
	cfg->size = 1 << 20;
	cfg->count = 8;
	cfg->depth = 4;
	mr_sim_qp_cfg_init(&cfg->qp);
	cfg->qp.mtu = 4096;
	cfg->qp.tclass = 2; /* ECT(0): RoCE v2 congestion management (A17.9) needs ECN-capable */
	cfg->seed = 1;
	cfg->max_ns = 10ull * 1000000000ull;
}

int mr_sim_fxfer_cfg_incast(struct mr_sim_fxfer_cfg *cfg, unsigned int k)
{
	if (k < 1 || k + 1 > MR_SIM_FABRIC_MAX_HOSTS || k > MR_SIM_FXFER_MAX_FLOWS)
		return -EINVAL;
	cfg->fabric.n_hosts = k + 1;
	cfg->n_flows = k;
	for (unsigned int i = 0; i < k; i++) {
		cfg->flow[i].src = (uint16_t)i;
		cfg->flow[i].dst = (uint16_t)k;
	}
	return 0;
}

static int setup_flow(struct fx *x, unsigned int i)
{
	const struct mr_sim_fxfer_cfg *c = x->cfg;
	const uint32_t acc = MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE;
	struct fflow *fl = &x->fl[i];
	unsigned int s = c->flow[i].src, d = c->flow[i].dst;
	struct mr_sim_node *ns = mr_sim_fabric_host(x->fab, s), *nd = mr_sim_fabric_host(x->fab, d);
	struct mr_qp_init_attr ia;

	if (ns == NULL || nd == NULL || s == d)
		return -EINVAL;
	fl->stride = c->size + GUARD;
	fl->len = fl->stride * c->count;
	fl->src = malloc(fl->len);
	fl->dst = malloc(fl->len);
	if (mr_sim_msgs_init(&fl->msgs, c->count) < 0 || !fl->src || !fl->dst)
		return -ENOMEM;
	mr_sim_fill_pattern(fl->src, fl->len, c->seed * 1000003u + i);
	memset(fl->dst, GUARD_BYTE, fl->len);
	for (unsigned int h = 0; h < 2; h++) {
		unsigned int n = h ? d : s;

		if (x->pd[n] == NULL)
			x->pd[n] = mr_pd_alloc(mr_sim_node_ctx(mr_sim_fabric_host(x->fab, n)));
		if (x->pd[n] == NULL)
			return errno ? -errno : -ENOMEM;
	}
	fl->mra = mr_reg(x->pd[s], fl->src, IOVA_SRC + i * (1ull << 32), fl->len, acc);
	fl->mrb = mr_reg(x->pd[d], fl->dst, IOVA_DST + i * (1ull << 32), fl->len, acc);
	fl->cqa = mr_cq_create(mr_sim_node_ctx(ns), c->depth + 16);
	fl->cqb = mr_cq_create(mr_sim_node_ctx(nd), 16);
	if (!fl->mra || !fl->mrb || !fl->cqa || !fl->cqb)
		return errno ? -errno : -ENOMEM;
	memset(&ia, 0, sizeof(ia));
	ia.max_send_wr = c->depth;
	ia.max_recv_wr = 1;
	ia.pd = x->pd[s];
	ia.send_cq = ia.recv_cq = fl->cqa;
	fl->qa = mr_qp_create(mr_sim_node_ctx(ns), &ia);
	ia.pd = x->pd[d];
	ia.send_cq = ia.recv_cq = fl->cqb;
	fl->qb = mr_qp_create(mr_sim_node_ctx(nd), &ia);
	if (!fl->qa || !fl->qb)
		return errno ? -errno : -ENOMEM;
	return mr_sim_qp_connect(ns, fl->qa, nd, fl->qb, &c->qp);
}

static int post(struct fx *x, unsigned int i)
{
	const struct mr_sim_fxfer_cfg *c = x->cfg;
	struct fflow *fl = &x->fl[i];
	uint32_t m = fl->next_post;
	struct mr_send_wr wr;
	int rc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = m;
	wr.opcode = MR_WR_RDMA_WRITE;
	wr.send_flags = MR_SEND_SIGNALED;
	wr.num_sge = 1;
	wr.sg_list[0] = (struct mr_sge){ IOVA_SRC + i * (1ull << 32) + m * fl->stride,
					 (uint32_t)c->size, mr_memreg_lkey(fl->mra) };
	wr.rdma.remote_addr = IOVA_DST + i * (1ull << 32) + m * fl->stride;
	wr.rdma.rkey = mr_memreg_rkey(fl->mrb);
	rc = mr_post_send(fl->qa, &wr);
	if (rc < 0)
		return rc;
	fl->msgs.t_post[m] = mr_sim_fabric_now(x->fab);
	fl->next_post++;
	fl->outstanding++;
	return 0;
}

static bool pred(struct mr_sim_fabric *fab, void *arg)
{
	struct fx *x = arg;
	const struct mr_sim_fxfer_cfg *c = x->cfg;
	struct mr_sim_fxfer_result *r = x->res;
	bool done = true;

	for (unsigned int i = 0; i < c->n_flows; i++) {
		struct fflow *fl = &x->fl[i];
		struct mr_wc wc[16];
		int n;

		while ((n = mr_cq_poll(fl->cqa, 16, wc)) > 0)
			for (int k = 0; k < n; k++) {
				uint64_t m = wc[k].wr_id;

				if (wc[k].qp_num != mr_qp_num(fl->qa) ||
				    !mr_sim_msgs_complete(&fl->msgs, m, mr_sim_fabric_now(fab))) {
					r->wc_bad++;
					continue;
				}
				fl->outstanding--;
				fl->completed++;
				r->completed++;
				if (wc[k].status != MR_WC_SUCCESS) {
					if (r->first_error == 0)
						r->first_error = (int)wc[k].status;
					fl->failed = true;
				} else if (wc[k].opcode != MR_WC_RDMA_WRITE) {
					r->wc_bad++;
				} else {
					r->succeeded++;
					x->res->flow[i].succeeded++;
				}
			}
		while (!fl->failed && fl->next_post < c->count && fl->outstanding < c->depth)
			if (post(x, i) < 0) {
				fl->failed = true;
				r->wc_bad++;
			}
		if (fl->outstanding > 0 || (!fl->failed && fl->next_post < c->count))
			done = false;
	}
	return done;
}

static void collect(struct fx *x)
{
	const struct mr_sim_fxfer_cfg *c = x->cfg;
	struct mr_sim_fxfer_result *r = x->res;
	uint64_t *lat = malloc(((size_t)c->count * c->n_flows + 1) * sizeof(*lat));
	double sum = 0, sum2 = 0;
	uint64_t nlat = 0, last = x->start;
	bool all_ok = r->rc == 0 && r->wc_bad == 0;

	for (unsigned int i = 0; i < c->n_flows; i++) {
		struct fflow *fl = &x->fl[i];
		struct mr_sim_fxfer_flow *ff = &r->flow[i];

		ff->completed = fl->completed;
		mr_qp_get_stats(fl->qa, &ff->qa);
		mr_qp_get_stats(fl->qb, &ff->qb);
		mr_sim_qp_stats_add(&r->qa, &ff->qa);
		mr_sim_qp_stats_add(&r->qb, &ff->qb);
		/* Verify only a flow whose every WRITE completed successfully: the responder has
		 * then placed every byte (IBA 9.7.5.1.2: the ACK follows placement). */
		if (fl->failed || ff->succeeded != c->count) {
			all_ok = false;
		} else {
			mr_sim_verify_strided(fl->dst, fl->src, fl->len, fl->stride, c->size,
					      GUARD_BYTE, &ff->bytes_verified, &ff->bytes_bad);
		}
		if (ff->bytes_bad != 0)
			all_ok = false;
		r->bytes_verified += ff->bytes_verified;
		r->bytes_bad += ff->bytes_bad;
		ff->elapsed_ns = fl->msgs.last_done > x->start ? fl->msgs.last_done - x->start : 0;
		if (ff->bytes_bad == 0 && ff->succeeded == c->count)
			ff->goodput_gbps = mr_sim_goodput_gbps(c->size * c->count, ff->elapsed_ns);
		sum += ff->goodput_gbps;
		sum2 += ff->goodput_gbps * ff->goodput_gbps;
		if (fl->msgs.last_done > last)
			last = fl->msgs.last_done;
		if (lat != NULL)
			nlat += mr_sim_msgs_latencies(&fl->msgs, lat + nlat);
	}
	r->verified = all_ok;
	r->jain = sum2 > 0 ? sum * sum / (c->n_flows * sum2) : 0;
	r->elapsed_ns = last - x->start;
	if (all_ok)
		r->goodput_gbps = mr_sim_goodput_gbps(c->size * c->count * c->n_flows,
						      r->elapsed_ns);
	if (lat != NULL)
		mr_sim_lat_percentiles(lat, nlat, &r->lat_p50_ns, &r->lat_p99_ns, &r->lat_max_ns);
	free(lat);
	r->data_pkts = r->qa.tx_pkts;
	for (unsigned int h = 0; h < c->fabric.n_hosts; h++) {
		struct mr_sim_node_stats ns;

		mr_sim_node_get_stats(mr_sim_fabric_host(x->fab, h), &ns);
		r->parse_drops += ns.parse_drops;
		mr_sim_fabric_down_report(x->fab, h, &r->down[h]);
	}
	r->n_paths = c->fabric.n_paths;
	for (unsigned int p = 0; p < c->fabric.n_paths; p++)
		mr_sim_fabric_path_report(x->fab, p, &r->path[p]);
	mr_sim_fabric_get_stats(x->fab, &r->fabric);
}

static void teardown(struct fx *x)
{
	for (unsigned int i = 0; i < MR_SIM_FXFER_MAX_FLOWS; i++) {
		struct fflow *fl = &x->fl[i];

		if (fl->qa)
			mr_qp_destroy(fl->qa);
		if (fl->qb)
			mr_qp_destroy(fl->qb);
		if (fl->mra)
			mr_dereg(fl->mra);
		if (fl->mrb)
			mr_dereg(fl->mrb);
		if (fl->cqa)
			mr_cq_destroy(fl->cqa);
		if (fl->cqb)
			mr_cq_destroy(fl->cqb);
		free(fl->src);
		free(fl->dst);
		mr_sim_msgs_free(&fl->msgs);
	}
	for (unsigned int h = 0; h < MR_SIM_FABRIC_MAX_HOSTS; h++)
		if (x->pd[h])
			mr_pd_free(x->pd[h]);
	mr_sim_fabric_destroy(x->fab);
}

int mr_sim_fxfer_run(const struct mr_sim_fxfer_cfg *cfg, struct mr_sim_fxfer_result *res)
{
	struct fx *x;
	int rc = 0;

	if (res == NULL)
		return -EINVAL;
	memset(res, 0, sizeof(*res));
	if (cfg == NULL || cfg->n_flows < 1 || cfg->n_flows > MR_SIM_FXFER_MAX_FLOWS ||
	    cfg->count < 1 || cfg->depth < 1 || cfg->size < 1 || cfg->size > UINT32_MAX)
		return res->rc = -EINVAL;
	x = calloc(1, sizeof(*x));
	if (x == NULL)
		return res->rc = -ENOMEM;
	x->cfg = cfg;
	x->res = res;
	x->fab = mr_sim_fabric_create(&cfg->fabric);
	if (x->fab == NULL)
		rc = errno ? -errno : -ENOMEM;
	for (unsigned int i = 0; rc == 0 && i < cfg->n_flows; i++)
		rc = setup_flow(x, i);
	if (rc == 0) {
		for (unsigned int h = 0; cfg->trace != NULL && h < cfg->fabric.n_hosts; h++)
			mr_sim_node_set_trace(mr_sim_fabric_host(x->fab, h), cfg->trace);
		x->start = mr_sim_fabric_now(x->fab);
		rc = mr_sim_fabric_run(x->fab, pred, x, cfg->max_ns, NULL);
	}
	res->rc = rc;
	if (x->fab != NULL && (rc == 0 || rc == -ETIMEDOUT))
		collect(x);
	teardown(x);
	free(x);
	return res->rc;
}
