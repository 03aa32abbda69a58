/* SPDX-License-Identifier: MIT
 * libibverbs over metaroce: RC queue pairs, attribute translation (ibv_qp_attr + mask <->
 * mrc_qp_attr + mask; same IBA 10.3.1 transition rules, enforced by the transport).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_priv.h"

#define MV_SEND_OPS (IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
		     IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | \
		     IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
		     IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_SEND_WITH_INV)

static struct ibv_qp *create(struct ibv_context *context, struct ibv_qp_init_attr_ex *a)
{
	struct mrc_qp_init_attr init, caps;
	struct mv_context *c;
	struct mv_qp *q;
	int e;

	if (context == NULL || a == NULL || a->send_cq == NULL || a->recv_cq == NULL) {
		errno = EINVAL;
		return NULL;
	}
	c = mv_ctx(context);
	/* UD/UC/XRC/raw packet QPs and the creation flags need transport support that
	 * metaroce does not have yet. */
	if (a->qp_type != IBV_QPT_RC ||
	    (a->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
					IBV_QP_INIT_ATTR_CREATE_FLAGS)) ||
	    ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags != 0) ||
	    ((a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	     (a->send_ops_flags & ~(uint64_t)MV_SEND_OPS))) {
		mv_log("ibv_create_qp: only RC QPs (type %d)", (int)a->qp_type);
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD) || a->pd == NULL) {
		errno = EINVAL;
		return NULL;
	}
	if (a->srq != NULL && a->srq->pd != a->pd) {
		/* IBA 10.2.9.1: a QP and its SRQ belong to the same PD. */
		mv_warn("ibv_create_qp: the SRQ belongs to another PD");
		errno = EINVAL;
		return NULL;
	}
	/* With an SRQ the receive capabilities are ignored (ibv_create_qp(3)). */
	if (a->srq != NULL) {
		a->cap.max_recv_wr = 0;
		a->cap.max_recv_sge = 0;
	}
	if (a->cap.max_inline_data > c->port.max_inline_data ||
	    a->cap.max_send_sge > c->port.max_sge || a->cap.max_recv_sge > c->port.max_sge ||
	    a->cap.max_send_wr > c->port.max_qp_wr || a->cap.max_recv_wr > c->port.max_qp_wr) {
		errno = EINVAL;
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	if (q == NULL)
		return NULL;
	memset(&init, 0, sizeof(init));
	init.qp_type = MRC_QPT_RC;
	init.send_cq = ((struct mv_cq *)a->send_cq)->m;
	init.recv_cq = ((struct mv_cq *)a->recv_cq)->m;
	init.max_send_wr = a->cap.max_send_wr ? a->cap.max_send_wr : 1;
	init.max_recv_wr = a->cap.max_recv_wr ? a->cap.max_recv_wr : 1;
	init.max_send_sge = a->cap.max_send_sge;
	init.max_recv_sge = a->cap.max_recv_sge;
	init.max_inline_data = a->cap.max_inline_data;
	init.sq_sig_all = a->sq_sig_all != 0;
	init.srq = a->srq != NULL ? ((struct mv_srq *)a->srq)->m : NULL;
	q->m = mrc_create_qp(((struct mv_pd *)a->pd)->m, &init);
	if (q->m == NULL) {
		e = errno;
		free(q);
		errno = e;
		return NULL;
	}
	mrc_qp_caps(q->m, &caps);
	q->cap.max_send_wr = caps.max_send_wr;
	q->cap.max_recv_wr = caps.max_recv_wr;
	q->cap.max_send_sge = caps.max_send_sge;
	q->cap.max_recv_sge = caps.max_recv_sge;
	q->cap.max_inline_data = caps.max_inline_data;
	if (a->srq != NULL) {
		q->cap.max_recv_wr = 0;
		q->cap.max_recv_sge = 0;
	}
	a->cap = q->cap;   /* verbs returns the granted capabilities */
	q->ctx = c;
	q->sq_sig_all = a->sq_sig_all != 0;
	q->qpx.qp_base.context = context;
	q->qpx.qp_base.qp_context = a->qp_context;
	q->qpx.qp_base.pd = a->pd;
	q->qpx.qp_base.send_cq = a->send_cq;
	q->qpx.qp_base.recv_cq = a->recv_cq;
	q->qpx.qp_base.srq = a->srq;
	q->qpx.qp_base.qp_num = mrc_qp_num(q->m);
	q->qpx.qp_base.handle = q->qpx.qp_base.qp_num;
	q->qpx.qp_base.state = IBV_QPS_RESET;
	q->qpx.qp_base.qp_type = IBV_QPT_RC;
	pthread_mutex_init(&q->qpx.qp_base.mutex, NULL);
	pthread_cond_init(&q->qpx.qp_base.cond, NULL);
	mv_qp_ex_init(q);
	return &q->qpx.qp_base;
}

struct ibv_qp *mv_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *a)
{
	return create(context, a);
}

#undef ibv_create_qp
MV_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ex;
	struct ibv_qp *qp;

	if (pd == NULL || attr == NULL) {
		errno = EINVAL;
		return NULL;
	}
	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, attr, sizeof(*attr));
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd;
	qp = create(pd->context, &ex);
	if (qp != NULL)
		attr->cap = ex.cap;
	return qp;
}

MV_EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
	struct mv_qp *q = (struct mv_qp *)qp;
	int rc;

	if (q == NULL)
		return EINVAL;
	rc = mrc_destroy_qp(q->m);
	if (rc < 0)
		return mv_err(q->ctx->s, rc, "ibv_destroy_qp");
	mv_qp_ex_fini(q);
	pthread_mutex_destroy(&qp->mutex);
	pthread_cond_destroy(&qp->cond);
	free(q);
	return 0;
}

static uint32_t mtu_bytes(enum ibv_mtu m)
{
	return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128u << m : 0;
}

static bool is_v4(const uint8_t g[16])
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(g, pfx, 12) == 0;
}

/* RoCE: the address vector is the GRH (IBA A17.4.5.2); LIDs mean nothing on Ethernet. */
static int path_from_ah(struct mv_qp *q, const struct ibv_ah_attr *ah, struct mrc_path *p)
{
	union ibv_gid sgid;

	if (!ah->is_global) {
		mv_warn("ibv_modify_qp: RoCE needs a GRH (ah_attr.is_global = 1 and a GID)");
		return EINVAL;
	}
	if (ah->port_num != 0 && ah->port_num != MV_PORT)
		return EINVAL;
	if (!mv_gid(&q->ctx->port, ah->grh.sgid_index, &sgid, NULL)) {
		mv_warn("ibv_modify_qp: sgid_index %u is beyond the GID table (%u entries)",
			ah->grh.sgid_index, mv_gid_count(&q->ctx->port));
		return EINVAL;
	}
	if (is_v4(sgid.raw) != is_v4(ah->grh.dgid.raw)) {
		mv_warn("ibv_modify_qp: GID %u and the destination GID are of different IP "
			"families", ah->grh.sgid_index);
		return EINVAL;
	}
	memset(p, 0, sizeof(*p));
	memcpy(p->sgid, sgid.raw, 16);
	memcpy(p->dgid, ah->grh.dgid.raw, 16);
	p->ipv6 = !is_v4(ah->grh.dgid.raw);
	p->tclass = ah->grh.traffic_class;
	p->ttl = ah->grh.hop_limit;
	p->flow_label = ah->grh.flow_label & 0xfffff;
	/* smac/dmac: the daemon's MAC and its neighbour cache (ARP/ND), per packet. */
	q->sgid_index = ah->grh.sgid_index;
	return 0;
}

MV_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	struct mv_qp *q = (struct mv_qp *)qp;
	struct mrc_qp_attr m;
	uint32_t mm = 0, um = (uint32_t)mask;
	int rc;

	if (q == NULL || attr == NULL)
		return EINVAL;
	/* Not for RC (Q_Key: UD), or features metaroce lacks (APM, rate limits). */
	if (um & (IBV_QP_QKEY | IBV_QP_CAP))
		return EINVAL;
	if (um & (IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE | IBV_QP_RATE_LIMIT |
		  IBV_QP_EN_SQD_ASYNC_NOTIFY))
		return EOPNOTSUPP;
	memset(&m, 0, sizeof(m));
	if (um & IBV_QP_STATE) {
		mm |= MRC_QP_STATE;
		m.qp_state = (uint32_t)attr->qp_state;
	}
	if ((um & IBV_QP_CUR_STATE) && attr->cur_qp_state != qp->state)
		return EINVAL;
	if (um & IBV_QP_ACCESS_FLAGS) {
		mm |= MRC_QP_ACCESS_FLAGS;
		m.qp_access_flags = (uint32_t)attr->qp_access_flags &
				    (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	}
	if (um & IBV_QP_PKEY_INDEX) {
		if (attr->pkey_index != 0)
			return EINVAL;
		mm |= MRC_QP_PKEY_INDEX;
	}
	if ((um & IBV_QP_PORT) && attr->port_num != MV_PORT)
		return EINVAL;
	if (um & IBV_QP_AV) {
		rc = path_from_ah(q, &attr->ah_attr, &m.path);
		if (rc != 0)
			return rc;
		mm |= MRC_QP_PATH;
	}
	if (um & IBV_QP_PATH_MTU) {
		m.path_mtu = mtu_bytes(attr->path_mtu);
		if (m.path_mtu == 0)
			return EINVAL;
		mm |= MRC_QP_PATH_MTU;
	}
	if (um & IBV_QP_TIMEOUT) {
		mm |= MRC_QP_TIMEOUT;
		m.timeout = attr->timeout;
	}
	if (um & IBV_QP_RETRY_CNT) {
		mm |= MRC_QP_RETRY_CNT;
		m.retry_cnt = attr->retry_cnt;
	}
	if (um & IBV_QP_RNR_RETRY) {
		mm |= MRC_QP_RNR_RETRY;
		m.rnr_retry = attr->rnr_retry;
	}
	if (um & IBV_QP_RQ_PSN) {
		mm |= MRC_QP_RQ_PSN;
		m.rq_psn = attr->rq_psn & 0xffffff;
	}
	if (um & IBV_QP_SQ_PSN) {
		mm |= MRC_QP_SQ_PSN;
		m.sq_psn = attr->sq_psn & 0xffffff;
	}
	if (um & IBV_QP_MAX_QP_RD_ATOMIC) {
		mm |= MRC_QP_MAX_QP_RD_ATOMIC;
		/* Initiator depth: keeping fewer READs/atomics outstanding than the responder
		 * allows is always safe (IBA 9.5: the requester limits itself to at most the
		 * responder's resources), so a value above the device's maximum (perftest passes
		 * the peer's, e.g. rxe's 128) is clamped rather than refused. */
		m.max_rd_atomic = attr->max_rd_atomic > MV_MAX_RD_ATOMIC ? MV_MAX_RD_ATOMIC :
				  attr->max_rd_atomic;
	}
	if (um & IBV_QP_MAX_DEST_RD_ATOMIC) {
		mm |= MRC_QP_MAX_DEST_RD_ATOMIC;
		m.max_dest_rd_atomic = attr->max_dest_rd_atomic;
	}
	if (um & IBV_QP_MIN_RNR_TIMER) {
		mm |= MRC_QP_MIN_RNR_TIMER;
		m.min_rnr_timer = attr->min_rnr_timer;
	}
	if (um & IBV_QP_DEST_QPN) {
		mm |= MRC_QP_DEST_QPN;
		m.dest_qp_num = attr->dest_qp_num & 0xffffff;
	}
	/* Without $METAROCE_TRANSPORT the mask carries no transport: the daemon's policy picks. */
	if (q->ctx->transport_set && (um & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RTR &&
	    qp->state == IBV_QPS_INIT) {
		mm |= MRC_QP_TRANSPORT;
		m.transport = q->ctx->metaroce ? MRC_TRANSPORT_METAROCE : MRC_TRANSPORT_RC;
		m.n_entropies = q->ctx->n_entropies;
		m.cc = q->ctx->cc;
	}
	if (mm == 0)
		return 0;   /* e.g. IBV_QP_PORT alone: nothing the transport keeps */
	rc = mrc_modify_qp(q->m, &m, mm);
	if (rc < 0)
		return mv_err(q->ctx->s, rc, "ibv_modify_qp");
	if (um & IBV_QP_STATE)
		qp->state = attr->qp_state;
	return 0;
}

MV_EXPORT int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
			   struct ibv_qp_init_attr *init)
{
	struct mv_qp *q = (struct mv_qp *)qp;
	struct mrc_qp_attr m;
	int rc;

	(void)mask;   /* everything is filled, as rdma-core's providers do */
	if (q == NULL || attr == NULL || init == NULL)
		return EINVAL;
	rc = mrc_query_qp(q->m, &m);
	if (rc < 0)
		return mv_err(q->ctx->s, rc, "ibv_query_qp");
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = (enum ibv_qp_state)m.qp_state;
	attr->cur_qp_state = attr->qp_state;
	attr->path_mtu = m.path_mtu ? mv_mtu_enum(m.path_mtu) : IBV_MTU_1024;
	attr->path_mig_state = IBV_MIG_MIGRATED;
	attr->rq_psn = m.rq_psn;
	attr->sq_psn = m.sq_psn;
	attr->dest_qp_num = m.dest_qp_num;
	attr->qp_access_flags = (int)m.qp_access_flags;
	attr->cap = q->cap;
	attr->ah_attr.is_global = 1;
	memcpy(attr->ah_attr.grh.dgid.raw, m.path.dgid, 16);
	attr->ah_attr.grh.sgid_index = q->sgid_index;
	attr->ah_attr.grh.hop_limit = m.path.ttl;
	attr->ah_attr.grh.traffic_class = m.path.tclass;
	attr->ah_attr.grh.flow_label = m.path.flow_label;
	attr->ah_attr.port_num = MV_PORT;
	attr->pkey_index = m.pkey_index;
	attr->max_rd_atomic = m.max_rd_atomic;
	attr->max_dest_rd_atomic = m.max_dest_rd_atomic;
	attr->min_rnr_timer = m.min_rnr_timer;
	attr->port_num = MV_PORT;
	attr->timeout = m.timeout;
	attr->retry_cnt = m.retry_cnt;
	attr->rnr_retry = m.rnr_retry;
	qp->state = attr->qp_state;
	memset(init, 0, sizeof(*init));
	init->qp_context = qp->qp_context;
	init->send_cq = qp->send_cq;
	init->recv_cq = qp->recv_cq;
	init->srq = qp->srq;
	init->cap = q->cap;
	init->qp_type = IBV_QPT_RC;
	init->sq_sig_all = q->sq_sig_all;
	return 0;
}

MV_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	return qp != NULL ? &((struct mv_qp *)qp)->qpx : NULL;
}

MV_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	(void)qp, (void)op, (void)flags;
	return 0;   /* no in-order placement guarantee beyond what IBA gives */
}

MV_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp, (void)ece;
	return EOPNOTSUPP;
}

MV_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp, (void)ece;
	return EOPNOTSUPP;
}
