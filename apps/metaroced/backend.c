/* SPDX-License-Identifier: MIT
 * metaroced backend: the shm server's ops over the RC transport (see backend.h).
 */
#include "backend.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "metaroce/shm_abi.h"

/* A QP wrapper: the transport QP plus list linkage for the stats sums. */
struct be_qp {
	struct mr_qp *qp;
	struct be_qp *next, *prev;
};

struct mr_backend {
	struct mr_backend_conf conf;
	bool port_up;
	uint8_t gid[MRC_MAX_GIDS][16];
	unsigned int ngid;
	struct be_qp *qps;
	unsigned int nqp;
	struct mr_qp_stats retired;  /* counters of destroyed QPs, so totals never go back */
	uint64_t qps_created;
	uint64_t policy_upgrades;    /* QPs made MetaRoCE by conf.mrc_policy */
	uint64_t link_bps;           /* port link speed, 0 = unknown */
};

/* The public MetaRoCE values travel unchanged to the transport (metaroce.h, rc.h, cc.h). */
_Static_assert((int)MRC_QP_TRANSPORT == (int)MR_QP_TRANSPORT, "transport mask bit");
_Static_assert(MRC_TRANSPORT_RC == (int)MR_TRANSPORT_RC &&
	       MRC_TRANSPORT_METAROCE == (int)MR_TRANSPORT_METAROCE, "transport values");
_Static_assert(MRC_CC_NONE == (int)MR_CC_NONE && MRC_CC_DCQCN == (int)MR_CC_DCQCN &&
	       MRC_CC_METAROCE == (int)MR_CC_METAROCE, "cc values");
_Static_assert(MRC_MAX_ENTROPIES == MR_CC_MAX_PATHS, "entropies");

static void stats_add(struct mr_qp_stats *sum, const struct mr_qp_stats *s)
{
	const uint64_t *src = (const uint64_t *)s;
	uint64_t *dst = (uint64_t *)sum;
	size_t i;

	/* struct mr_qp_stats is all uint64_t counters. */
	for (i = 0; i < sizeof(*s) / sizeof(uint64_t); i++)
		dst[i] += src[i];
}

static const uint8_t v4_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

static bool gid_is_v4(const uint8_t gid[16])
{
	return memcmp(gid, v4_prefix, sizeof(v4_prefix)) == 0;
}

struct mr_backend *mr_backend_create(const struct mr_backend_conf *conf)
{
	struct mr_backend *be;

	if (conf == NULL || conf->ctx == NULL || (!conf->has_ipv4 && !conf->has_ipv6)) {
		errno = EINVAL;
		return NULL;
	}
	be = calloc(1, sizeof(*be));
	if (be == NULL)
		return NULL;
	be->conf = *conf;
	/* GID 0: the IPv6 address, or the link-local GID from the MAC (EUI-64, RFC 4291 app. A),
	 * as the kernel's default GID table does; GID 1: IPv4-mapped (A17.4.5.1), as rxe. */
	if (conf->has_ipv6) {
		memcpy(be->gid[0], conf->ipv6, 16);
	} else {
		uint8_t *g = be->gid[0];

		g[0] = 0xfe;
		g[1] = 0x80;
		g[8] = conf->mac[0] ^ 0x02;
		g[9] = conf->mac[1];
		g[10] = conf->mac[2];
		g[11] = 0xff;
		g[12] = 0xfe;
		g[13] = conf->mac[3];
		g[14] = conf->mac[4];
		g[15] = conf->mac[5];
	}
	be->ngid = 1;
	if (conf->has_ipv4) {
		memcpy(be->gid[1], v4_prefix, 12);
		memcpy(be->gid[1] + 12, conf->ipv4, 4);
		be->ngid = 2;
	}
	return be;
}

void mr_backend_destroy(struct mr_backend *be)
{
	if (be == NULL)
		return;
	while (be->qps != NULL) {
		struct be_qp *q = be->qps;

		be->qps = q->next;
		mr_qp_destroy(q->qp);
		free(q);
	}
	free(be);
}

void mr_backend_set_port_up(struct mr_backend *be, bool up)
{
	be->port_up = up;
}

bool mr_backend_port_up(const struct mr_backend *be)
{
	return be->port_up;
}

void mr_backend_set_link_rate(struct mr_backend *be, uint64_t bps)
{
	be->link_bps = bps;
}

void mr_backend_cc_params(const struct mr_backend *be, uint32_t path_mtu, uint16_t n_paths,
			  struct mr_cc_params *p)
{
	memset(p, 0, sizeof(*p));
	/* DCQCN and MetaRoCE CC start at and never exceed the line rate (cc.h); the base RTT
	 * sizes the BDP window and the delay target. */
	p->line_rate_bps = be->conf.line_rate_bps ? be->conf.line_rate_bps :
			   be->link_bps ? be->link_bps : MR_BACKEND_DEFAULT_LINE_RATE_BPS;
	p->base_rtt_ns = be->conf.base_rtt_ns ? be->conf.base_rtt_ns :
			 MR_BACKEND_DEFAULT_BASE_RTT_NS;
	p->mtu = path_mtu;
	p->n_paths = n_paths ? n_paths : 1;
}

unsigned int mr_backend_gids(const struct mr_backend *be, uint8_t gid[MRC_MAX_GIDS][16])
{
	memcpy(gid, be->gid, sizeof(be->gid));
	return be->ngid;
}

bool mr_backend_is_local_gid(const struct mr_backend *be, const uint8_t gid[16])
{
	if (gid_is_v4(gid))
		return be->conf.has_ipv4 && memcmp(gid + 12, be->conf.ipv4, 4) == 0;
	return be->conf.has_ipv6 && memcmp(gid, be->conf.ipv6, 16) == 0;
}

uint16_t mr_backend_udp_sport(uint16_t base, uint32_t lqpn, uint32_t rqpn)
{
	/* Same fold as the flow label rxe derives from the QPN pair (IBA A17.3.3 asks only that
	 * one flow keep one port so that ECMP keeps it in order). */
	uint64_t v = (uint64_t)(lqpn & 0xffffff) * (rqpn & 0xffffff);
	uint32_t fl, span = 0x4000;

	v ^= v >> 20;
	v ^= v >> 40;
	fl = (uint32_t)(v & 0xfffff);
	fl ^= fl >> 14;
	if (65536u - base < span)
		span = 65536u - base;
	return (uint16_t)(base + (fl & 0x3fff) % span);
}

int mr_backend_make_path(const struct mr_backend *be, const struct mrc_path *app, uint32_t lqpn,
			 uint32_t rqpn, struct mr_path *out)
{
	static const uint8_t zero[16];
	bool v4 = gid_is_v4(app->dgid);

	if (memcmp(app->dgid, zero, 16) == 0 || (!v4 && app->dgid[0] == 0xff) ||
	    (v4 && (app->dgid[12] & 0xf0) == 0xe0) ||
	    (v4 && memcmp(app->dgid + 12, "\xff\xff\xff\xff", 4) == 0))
		return -EINVAL;
	if ((v4 && !be->conf.has_ipv4) || (!v4 && !be->conf.has_ipv6))
		return -EAFNOSUPPORT;
	memset(out, 0, sizeof(*out));
	memcpy(out->smac, be->conf.mac, 6);
	/* dmac is filled per packet by the engine from the neighbour cache. */
	out->vlan = be->conf.vlan;
	out->vlan_tci = be->conf.vlan_tci;
	out->ipv6 = !v4;
	memcpy(out->sgid, v4 ? be->gid[1] : be->gid[0], 16);
	memcpy(out->dgid, app->dgid, 16);
	out->tclass = app->tclass ? app->tclass : be->conf.tclass;
	out->ttl = app->ttl ? app->ttl : 64; /* rxe's choice, see DESIGN.md */
	out->flow_label = app->flow_label & 0xfffff;
	out->udp_sport = app->udp_sport ? app->udp_sport :
		mr_backend_udp_sport(be->conf.udp_sport_base, lqpn, rqpn);
	return 0;
}

unsigned int mr_backend_qp_stats_sum(const struct mr_backend *be, struct mr_qp_stats *sum)
{
	const struct be_qp *q;
	unsigned int n = 0;

	*sum = be->retired;
	for (q = be->qps; q != NULL; q = q->next) {
		struct mr_qp_stats s;

		if (mr_qp_get_stats(q->qp, &s) < 0)
			continue;
		stats_add(sum, &s);
		n++;
	}
	return n;
}

unsigned int mr_backend_qp_foreach(const struct mr_backend *be,
				   void (*fn)(void *arg, const struct mr_qp *qp), void *arg)
{
	const struct be_qp *q;
	unsigned int n = 0;

	if (be == NULL || fn == NULL)
		return 0;
	for (q = be->qps; q != NULL; q = q->next) {
		fn(arg, q->qp);
		n++;
	}
	return n;
}

/* ---- ops ---- */

static int b_query_port(void *bep, struct mrc_port_attr *a)
{
	struct mr_backend *be = bep;

	memset(a, 0, sizeof(*a));
	a->state = be->port_up ? MRC_PORT_ACTIVE : MRC_PORT_DOWN;
	a->active_mtu = be->conf.ib_mtu;
	a->max_mtu = be->conf.ib_mtu;
	memcpy(a->mac, be->conf.mac, 6);
	a->gid_count = mr_backend_gids(be, a->gid);
	a->max_qp = be->conf.max_qp;
	a->max_qp_wr = 16384;
	a->max_cq = be->conf.max_cq;
	/* One source of truth for CQ depth: the shm ring limit that libmetaroce and the shm
	 * server both enforce (shm_abi.h); b_create_cq refuses more too. */
	a->max_cqe = MRC_RING_MAX_ENTRIES;
	a->max_mr = be->conf.max_mr;
	a->max_pd = be->conf.max_mr;
	a->max_sge = MR_MAX_SGE;
	a->max_inline_data = 256;
	a->max_mr_size = 1ull << 40;
	return 0;
}

static int b_alloc_pd(void *bep, void **pd)
{
	struct mr_backend *be = bep;

	errno = 0;
	*pd = mr_pd_alloc(be->conf.ctx);
	return *pd != NULL ? 0 : (errno ? -errno : -ENOMEM);
}

static int b_dealloc_pd(void *bep, void *pd)
{
	(void)bep;
	return mr_pd_free(pd);
}

static int b_reg_mr(void *bep, void *pd, void *host, uint64_t iova, uint64_t len,
		    uint32_t access, void **mr, uint32_t *lkey, uint32_t *rkey)
{
	struct mr_memreg *m;

	(void)bep;
	errno = 0;
	/* host: our mapping of the app's memfd; iova: the app's address (zero copy). */
	m = mr_reg(pd, host, iova, len, access);
	if (m == NULL)
		return errno ? -errno : -ENOMEM;
	*mr = m;
	*lkey = mr_memreg_lkey(m);
	*rkey = mr_memreg_rkey(m);
	return 0;
}

static int b_dereg_mr(void *bep, void *mr)
{
	(void)bep;
	return mr_dereg(mr);
}

static int b_create_cq(void *bep, uint32_t depth, void **cq)
{
	struct mr_backend *be = bep;

	if (depth == 0 || depth > MRC_RING_MAX_ENTRIES) /* what b_query_port advertises */
		return -EINVAL;
	errno = 0;
	*cq = mr_cq_create(be->conf.ctx, depth);
	return *cq != NULL ? 0 : (errno ? -errno : -ENOMEM);
}

static int b_destroy_cq(void *bep, void *cq)
{
	(void)bep;
	return mr_cq_destroy(cq);
}

static int b_poll_cq(void *bep, void *cq, int n, struct mr_wc *wc)
{
	(void)bep;
	return mr_cq_poll(cq, n, wc);
}

static bool b_cq_pending(void *bep, void *cq)
{
	(void)bep;
	return mr_cq_count(cq) > 0;
}


static int b_create_qp(void *bep, void *pd, void *send_cq, void *recv_cq,
		       const struct mr_shm_qp_caps *caps, void **qp, uint32_t *qp_num)
{
	struct mr_backend *be = bep;
	struct mr_qp_init_attr ia = {
		.pd = pd, .send_cq = send_cq, .recv_cq = recv_cq,
		.max_send_wr = caps->max_send_wr, .max_recv_wr = caps->max_recv_wr,
		.max_inline_data = caps->max_inline_data, .sq_sig_all = caps->sq_sig_all,
		.srq = caps->srq,
	};
	struct be_qp *q = calloc(1, sizeof(*q));

	if (q == NULL)
		return -ENOMEM;
	errno = 0;
	q->qp = mr_qp_create(be->conf.ctx, &ia);
	if (q->qp == NULL) {
		int err = errno ? -errno : -ENOMEM;

		free(q);
		return err;
	}
	q->next = be->qps;
	if (be->qps != NULL)
		be->qps->prev = q;
	be->qps = q;
	be->nqp++;
	*qp = q;
	*qp_num = mr_qp_num(q->qp);
	be->qps_created++;
	mr_log(MR_LOG_INFO, "QP %u created", *qp_num);
	return 0;
}

static int b_destroy_qp(void *bep, void *qp)
{
	struct mr_backend *be = bep;
	struct be_qp *q = qp;
	struct mr_qp_stats s;
	bool have = mr_qp_get_stats(q->qp, &s) == 0;
	uint32_t qpn = mr_qp_num(q->qp);
	int rc = mr_qp_destroy(q->qp);

	if (rc < 0)
		return rc;
	/* Packets that still arrive for it are counted as ctx_rx_unknown_qp: the log says when. */
	mr_log(MR_LOG_INFO, "QP %u destroyed (rx_pkts %" PRIu64 " tx_pkts %" PRIu64 ")", qpn,
	       have ? s.rx_pkts : 0, have ? s.tx_pkts : 0);
	if (have)
		stats_add(&be->retired, &s);
	if (q->prev != NULL)
		q->prev->next = q->next;
	else
		be->qps = q->next;
	if (q->next != NULL)
		q->next->prev = q->prev;
	be->nqp--;
	free(q);
	return 0;
}

static void path_to_app(const struct mr_path *p, struct mrc_path *a)
{
	memset(a, 0, sizeof(*a));
	memcpy(a->smac, p->smac, 6);
	memcpy(a->dmac, p->dmac, 6);
	a->vlan = p->vlan;
	a->ipv6 = p->ipv6;
	a->vlan_tci = p->vlan_tci;
	memcpy(a->sgid, p->sgid, 16);
	memcpy(a->dgid, p->dgid, 16);
	a->tclass = p->tclass;
	a->ttl = p->ttl;
	a->udp_sport = p->udp_sport;
	a->flow_label = p->flow_label;
}

/* The [metaroce] peers policy (mrc_policy.h): an INIT->RTR call that names no transport and
 * whose destination GID is a listed metaroce host gets MetaRoCE. Only INIT->RTR carries a
 * transport (rc_qp.c's transition table, as the RC QP attributes of IBA 11.2.4.2 would).
 * Returns true and fills *up if the QP is to be upgraded. */
static bool policy_upgrade(const struct mr_backend *be, const struct be_qp *q,
			   const struct mrc_qp_attr *a, uint32_t mask, struct mrc_qp_attr *up)
{
	struct mr_qp_attr cur;

	if (be->conf.mrc_policy.n == 0 || (mask & MRC_QP_TRANSPORT) || !(mask & MRC_QP_STATE) ||
	    !(mask & MRC_QP_PATH) || a->qp_state != MR_QPS_RTR ||
	    mr_qp_query(q->qp, &cur) < 0 || cur.qp_state != MR_QPS_INIT ||
	    !mr_mrc_policy_match(&be->conf.mrc_policy, a->path.dgid))
		return false;
	*up = *a;
	up->transport = MRC_TRANSPORT_METAROCE;
	up->n_entropies = be->conf.mrc_policy.n_entropies;
	up->cc = be->conf.mrc_policy.cc;
	return true;
}

static int b_modify_qp(void *bep, void *qp, const struct mrc_qp_attr *a, uint32_t mask)
{
	struct mr_backend *be = bep;
	struct be_qp *q = qp;
	struct mr_qp_attr cur, na;
	struct mrc_qp_attr up;
	bool by_policy = false;
	int rc;

	if (mask & ~(uint32_t)MRC_QP_ATTR_MASK_ALL)
		return -EINVAL;
	if (policy_upgrade(be, q, a, mask, &up)) {
		a = &up;
		mask |= MRC_QP_TRANSPORT;
		by_policy = true;
	}
	memset(&na, 0, sizeof(na));
	na.qp_state = (enum mr_qp_state)a->qp_state;
	na.qp_access_flags = a->qp_access_flags;
	na.pkey_index = a->pkey_index;
	na.path_mtu = a->path_mtu;
	na.dest_qp_num = a->dest_qp_num;
	na.rq_psn = a->rq_psn;
	na.sq_psn = a->sq_psn;
	na.max_dest_rd_atomic = a->max_dest_rd_atomic;
	na.max_rd_atomic = a->max_rd_atomic;
	na.min_rnr_timer = a->min_rnr_timer;
	na.timeout = a->timeout;
	na.retry_cnt = a->retry_cnt;
	na.rnr_retry = a->rnr_retry;
	if (mask & MRC_QP_PATH) {
		uint32_t rqpn = a->dest_qp_num;

		/* The source port folds in the remote QPN, normally set in the same RTR call. */
		if (!(mask & MRC_QP_DEST_QPN) && mr_qp_query(q->qp, &cur) == 0)
			rqpn = cur.dest_qp_num;
		rc = mr_backend_make_path(be, &a->path, mr_qp_num(q->qp), rqpn, &na.path);
		if (rc < 0)
			return rc;
	}
	if (mask & MRC_QP_TRANSPORT) {
		uint32_t mtu = a->path_mtu;

		/* The app states only what both ends agreed on (transport, entropies, CC); the
		 * controller's parameters are the port's (docs/metaroce-wire.md). */
		na.transport = (enum mr_transport)a->transport;
		na.n_entropies = a->n_entropies;
		na.cc = (enum mr_cc_algo)a->cc;
		if (!(mask & MRC_QP_PATH_MTU) && mr_qp_query(q->qp, &cur) == 0)
			mtu = cur.path_mtu;
		if (na.cc != MR_CC_NONE)
			mr_backend_cc_params(be, mtu, na.transport == MR_TRANSPORT_METAROCE ?
					     na.n_entropies : 1, &na.cc_params);
		/* Sprayed ports are udp_sport + 0..n-1: keep them below 65536 so none wraps to a
		 * well-known port (A17.3.3 only asks for a per-flow port). */
		if ((mask & MRC_QP_PATH) && na.transport == MR_TRANSPORT_METAROCE &&
		    na.n_entropies >= 1 && na.n_entropies <= MRC_MAX_ENTROPIES &&
		    (uint32_t)na.path.udp_sport + na.n_entropies > 65536u)
			na.path.udp_sport = (uint16_t)(65536u - na.n_entropies);
	}
	if (!(mask & MRC_QP_TRANSPORT) && be->conf.rc_default_cc != MR_CC_NONE &&
	    (mask & MRC_QP_STATE) && na.qp_state == MR_QPS_RTR &&
	    mr_qp_state(q->qp) == MR_QPS_INIT) {
		/* DCQCN paper (Zhu et al., SIGCOMM'15) 3: the RP reacts to the NP's CNPs. */
		uint32_t mtu = a->path_mtu;

		if (!(mask & MRC_QP_PATH_MTU) && mr_qp_query(q->qp, &cur) == 0)
			mtu = cur.path_mtu;
		na.transport = MR_TRANSPORT_RC;
		na.cc = be->conf.rc_default_cc;
		mr_backend_cc_params(be, mtu, 1, &na.cc_params);
		mask |= MRC_QP_TRANSPORT;
	}
	rc = mr_qp_modify(q->qp, &na, mask);
	if (rc < 0)
		return rc;
	if ((mask & MRC_QP_PATH) && be->conf.on_path != NULL)
		be->conf.on_path(be->conf.on_path_arg, na.path.dgid);
	if (mask & MRC_QP_STATE)
		mr_log(MR_LOG_INFO, "QP %u -> state %u", mr_qp_num(q->qp), a->qp_state);
	if (by_policy)
		be->policy_upgrades++;
	if ((mask & MRC_QP_TRANSPORT) && na.transport == MR_TRANSPORT_METAROCE)
		mr_log(MR_LOG_INFO, "QP %u: MetaRoCE, %u entropies, cc %s%s", mr_qp_num(q->qp),
		       na.n_entropies, mr_cc_algo_name(na.cc),
		       by_policy ? " (daemon policy: [metaroce] peers lists the peer)" : "");
	return 0;
}

static int b_query_qp(void *bep, void *qp, struct mrc_qp_attr *a)
{
	struct be_qp *q = qp;
	struct mr_qp_attr c;
	int rc;

	(void)bep;
	rc = mr_qp_query(q->qp, &c);
	if (rc < 0)
		return rc;
	memset(a, 0, sizeof(*a));
	a->qp_state = c.qp_state;
	a->qp_access_flags = c.qp_access_flags;
	a->pkey_index = c.pkey_index;
	a->max_dest_rd_atomic = c.max_dest_rd_atomic;
	a->max_rd_atomic = c.max_rd_atomic;
	a->path_mtu = c.path_mtu;
	a->dest_qp_num = c.dest_qp_num;
	a->rq_psn = c.rq_psn;
	a->sq_psn = c.sq_psn;
	a->min_rnr_timer = c.min_rnr_timer;
	a->timeout = c.timeout;
	a->retry_cnt = c.retry_cnt;
	a->rnr_retry = c.rnr_retry;
	path_to_app(&c.path, &a->path);
	a->transport = (uint8_t)c.transport;
	a->cc = (uint8_t)c.cc;
	a->n_entropies = c.n_entropies;
	return 0;
}

static int b_post_send(void *bep, void *qp, const struct mr_send_wr *wr)
{
	(void)bep;
	/* The transport copies inline payloads during the call (rc.h), as the server requires. */
	return mr_post_send(((struct be_qp *)qp)->qp, wr);
}

static uint32_t b_sq_room(void *bep, void *qp)
{
	(void)bep;
	return mr_qp_sq_room(((struct be_qp *)qp)->qp);
}

static int b_post_recv(void *bep, void *qp, const struct mr_recv_wr *wr)
{
	(void)bep;
	return mr_post_recv(((struct be_qp *)qp)->qp, wr);
}

static int b_create_srq(void *bep, void *pd, uint32_t max_wr, void **srq)
{
	(void)bep;
	errno = 0;
	*srq = mr_srq_create(pd, max_wr);
	return *srq != NULL ? 0 : errno ? -errno : -ENOMEM;
}

static int b_destroy_srq(void *bep, void *srq)
{
	(void)bep;
	return mr_srq_destroy(srq);
}

static int b_post_srq_recv(void *bep, void *srq, const struct mr_recv_wr *wr)
{
	(void)bep;
	return mr_post_srq_recv(srq, wr);
}

static const struct mr_shm_backend_ops be_ops = {
	.query_port = b_query_port,
	.alloc_pd = b_alloc_pd,
	.dealloc_pd = b_dealloc_pd,
	.reg_mr = b_reg_mr,
	.dereg_mr = b_dereg_mr,
	.create_cq = b_create_cq,
	.destroy_cq = b_destroy_cq,
	.poll_cq = b_poll_cq,
	.cq_pending = b_cq_pending,
	.sq_room = b_sq_room,
	.create_qp = b_create_qp,
	.modify_qp = b_modify_qp,
	.query_qp = b_query_qp,
	.destroy_qp = b_destroy_qp,
	.post_send = b_post_send,
	.post_recv = b_post_recv,
	.create_srq = b_create_srq,
	.destroy_srq = b_destroy_srq,
	.post_srq_recv = b_post_srq_recv,
};

const struct mr_shm_backend_ops *mr_backend_ops(void)
{
	return &be_ops;
}

uint64_t mr_backend_policy_upgrades(const struct mr_backend *be)
{
	return be != NULL ? be->policy_upgrades : 0;
}

uint64_t mr_backend_qps_created(const struct mr_backend *be)
{
	return be != NULL ? be->qps_created : 0;
}
