/* SPDX-License-Identifier: MIT
 * libibverbs over metaroce: the data path. ibv_post_send/ibv_post_recv (called inline by the
 * application through ctx->ops) and the ibv_wr_* work-request builders of ibv_qp_ex, all
 * translated into libmetaroce ring entries (one shared-memory index store per batch).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_priv.h"

#define BATCH 16
#define INLINE_MAX 448   /* MRC_SQE_INLINE_MAX */
#define INLINE_MARK 0xffffffffu  /* sg_list[0].lkey of a WR whose data is in q->inl */

static int send_wr_from(struct mr_send_wr *m, const struct ibv_send_wr *w)
{
	int i;

	if (w->num_sge < 0 || w->num_sge > MR_MAX_SGE || (w->num_sge > 0 && w->sg_list == NULL))
		return EINVAL;
	m->wr_id = w->wr_id;
	m->send_flags = w->send_flags & (IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED |
					 IBV_SEND_INLINE);
	m->num_sge = (uint32_t)w->num_sge;
	for (i = 0; i < w->num_sge; i++) {
		m->sg_list[i].addr = w->sg_list[i].addr;
		m->sg_list[i].length = w->sg_list[i].length;
		m->sg_list[i].lkey = w->sg_list[i].lkey;
	}
	m->imm_data = 0;
	m->invalidate_rkey = 0;
	switch (w->opcode) {
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		m->imm_data = ntohl(w->imm_data);
		/* fallthrough */
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_READ:
		m->rdma.remote_addr = w->wr.rdma.remote_addr;
		m->rdma.rkey = w->wr.rdma.rkey;
		break;
	case IBV_WR_SEND_WITH_IMM:
		m->imm_data = ntohl(w->imm_data);
		break;
	case IBV_WR_SEND:
		break;
	case IBV_WR_SEND_WITH_INV:
		m->invalidate_rkey = w->invalidate_rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		m->atomic.remote_addr = w->wr.atomic.remote_addr;
		m->atomic.compare_add = w->wr.atomic.compare_add;
		m->atomic.swap = w->wr.atomic.swap;
		m->atomic.rkey = w->wr.atomic.rkey;
		break;
	default:
		/* LOCAL_INV, BIND_MW, TSO, ATOMIC_WRITE, driver opcodes: no MWs, no UD/raw. */
		return EOPNOTSUPP;
	}
	m->opcode = (enum mr_wr_opcode)w->opcode;   /* same values (types.h) */
	return 0;
}

int mv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct mv_qp *q = (struct mv_qp *)qp;
	struct mr_send_wr batch[BATCH];
	struct ibv_send_wr *first = wr, *w;

	while (first != NULL) {
		int n = 0, rc = 0, posted;

		for (w = first; w != NULL && n < BATCH; w = w->next, n++) {
			rc = send_wr_from(&batch[n], w);
			if (rc != 0)
				break;
		}
		posted = n > 0 ? mrc_post_send_batch(q->m, batch, n) : 0;
		if (posted < 0)
			posted = 0;
		if (posted < n) {
			/* Find the failing one's errno (the ring may have drained meanwhile). */
			struct ibv_send_wr *f = first;
			int k;

			for (k = 0; k < posted; k++)
				f = f->next;
			rc = mrc_post_send(q->m, &batch[posted]);
			if (rc < 0) {
				*bad = f;
				return -rc;
			}
			posted++;
			rc = 0;
		}
		for (; posted > 0; posted--)
			first = first->next;
		if (rc != 0) {
			*bad = first;
			return rc;
		}
	}
	return 0;
}

int mv_recv_wr_from(struct mr_recv_wr *m, const struct ibv_recv_wr *w)
{
	int i;

	if (w->num_sge < 0 || w->num_sge > MR_MAX_SGE || (w->num_sge > 0 && w->sg_list == NULL))
		return EINVAL;
	m->wr_id = w->wr_id;
	m->num_sge = (uint32_t)w->num_sge;
	for (i = 0; i < w->num_sge; i++) {
		m->sg_list[i].addr = w->sg_list[i].addr;
		m->sg_list[i].length = w->sg_list[i].length;
		m->sg_list[i].lkey = w->sg_list[i].lkey;
	}
	return 0;
}

int mv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct mv_qp *q = (struct mv_qp *)qp;
	struct mr_recv_wr batch[BATCH];
	struct ibv_recv_wr *first = wr, *w;

	if (qp->srq != NULL) {
		*bad = wr;
		return EINVAL;
	}
	while (first != NULL) {
		int n = 0, rc = 0, posted;

		for (w = first; w != NULL && n < BATCH; w = w->next, n++) {
			rc = mv_recv_wr_from(&batch[n], w);
			if (rc != 0)
				break;
		}
		posted = n > 0 ? mrc_post_recv_batch(q->m, batch, n) : 0;
		if (posted < 0)
			posted = 0;
		if (posted < n) {
			struct ibv_recv_wr *f = first;
			int k;

			for (k = 0; k < posted; k++)
				f = f->next;
			rc = mrc_post_recv(q->m, &batch[posted]);
			if (rc < 0) {
				*bad = f;
				return -rc;
			}
			posted++;
			rc = 0;
		}
		for (; posted > 0; posted--)
			first = first->next;
		if (rc != 0) {
			*bad = first;
			return rc;
		}
	}
	return 0;
}

/* ---- ibv_qp_ex: the work-request builders ---- */
/* Pending WRs are a dense array (what mrc_post_send_batch takes) plus one inline buffer per
 * WR, both grown on demand between wr_start and wr_complete. */
static struct mv_qp *xqp(struct ibv_qp_ex *x)
{
	return (struct mv_qp *)x;
}

/* A new WR with the common fields (wr_id, flags) from the ibv_qp_ex. */
static struct mr_send_wr *wr_new(struct ibv_qp_ex *x, enum mr_wr_opcode op)
{
	struct mv_qp *q = xqp(x);
	struct mr_send_wr *w;

	if (q->wr_err != 0)
		return NULL;
	if (q->nwr == q->wr_cap) {
		uint32_t cap = q->wr_cap ? 2 * q->wr_cap : 16;
		void *p = cap <= 65536 ? realloc(q->wr, (size_t)cap * sizeof(*q->wr)) : NULL;
		void *pi;

		if (p == NULL) {
			q->wr_err = ENOMEM;
			return NULL;
		}
		q->wr = p;
		pi = realloc(q->inl, (size_t)cap * INLINE_MAX);
		if (pi == NULL) {
			q->wr_err = ENOMEM;
			return NULL;
		}
		q->inl = pi;
		q->wr_cap = cap;
	}
	w = &q->wr[q->nwr++];
	memset(w, 0, sizeof(*w));
	w->wr_id = x->wr_id;
	w->send_flags = x->wr_flags & (IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED |
				       IBV_SEND_INLINE);
	w->opcode = op;
	return w;
}

static struct mr_send_wr *wr_last(struct ibv_qp_ex *x)
{
	struct mv_qp *q = xqp(x);

	if (q->wr_err != 0 || q->nwr == 0) {
		if (q->wr_err == 0)
			q->wr_err = EINVAL;   /* a data setter before any opcode builder */
		return NULL;
	}
	return &q->wr[q->nwr - 1];
}

static void x_wr_start(struct ibv_qp_ex *x)
{
	xqp(x)->nwr = 0;
	xqp(x)->wr_err = 0;
}

static int x_wr_complete(struct ibv_qp_ex *x)
{
	struct mv_qp *q = xqp(x);
	int rc, err = q->wr_err;

	if (err == 0 && q->nwr > 0) {
		uint32_t i;

		for (i = 0; i < q->nwr; i++)
			if ((q->wr[i].send_flags & MR_SEND_INLINE) &&
			    q->wr[i].sg_list[0].lkey == INLINE_MARK)
				q->wr[i].sg_list[0].addr =
					(uintptr_t)(q->inl + q->wr[i].sg_list[0].addr * INLINE_MAX);
		rc = mrc_post_send_batch(q->m, q->wr, (int)q->nwr);
		if (rc < 0)
			err = -rc;
		else if ((uint32_t)rc < q->nwr)
			err = ENOMEM;   /* the rest did not fit in the send queue */
	}
	q->nwr = 0;
	q->wr_err = 0;
	return err;
}

static void x_wr_abort(struct ibv_qp_ex *x)
{
	xqp(x)->nwr = 0;
	xqp(x)->wr_err = 0;
}

static void x_rdma_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr)
{
	struct mr_send_wr *w = wr_new(x, MR_WR_RDMA_WRITE);

	if (w != NULL) {
		w->rdma.rkey = rkey;
		w->rdma.remote_addr = addr;
	}
}

static void x_rdma_write_imm(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr, __be32 imm)
{
	struct mr_send_wr *w = wr_new(x, MR_WR_RDMA_WRITE_WITH_IMM);

	if (w != NULL) {
		w->rdma.rkey = rkey;
		w->rdma.remote_addr = addr;
		w->imm_data = ntohl(imm);
	}
}

static void x_rdma_read(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr)
{
	struct mr_send_wr *w = wr_new(x, MR_WR_RDMA_READ);

	if (w != NULL) {
		w->rdma.rkey = rkey;
		w->rdma.remote_addr = addr;
	}
}

static void x_send(struct ibv_qp_ex *x)
{
	wr_new(x, MR_WR_SEND);
}

static void x_send_imm(struct ibv_qp_ex *x, __be32 imm)
{
	struct mr_send_wr *w = wr_new(x, MR_WR_SEND_WITH_IMM);

	if (w != NULL)
		w->imm_data = ntohl(imm);
}

static void x_send_inv(struct ibv_qp_ex *x, uint32_t rkey)
{
	struct mr_send_wr *w = wr_new(x, MR_WR_SEND_WITH_INV);

	if (w != NULL)
		w->invalidate_rkey = rkey;
}

static void x_cmp_swp(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr, uint64_t compare,
		      uint64_t swap)
{
	struct mr_send_wr *w = wr_new(x, MR_WR_ATOMIC_CMP_AND_SWP);

	if (w != NULL) {
		w->atomic.rkey = rkey;
		w->atomic.remote_addr = addr;
		w->atomic.compare_add = compare;
		w->atomic.swap = swap;
	}
}

static void x_fetch_add(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr, uint64_t add)
{
	struct mr_send_wr *w = wr_new(x, MR_WR_ATOMIC_FETCH_AND_ADD);

	if (w != NULL) {
		w->atomic.rkey = rkey;
		w->atomic.remote_addr = addr;
		w->atomic.compare_add = add;
	}
}

static void x_set_sge(struct ibv_qp_ex *x, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct mr_send_wr *w = wr_last(x);

	if (w != NULL) {
		w->num_sge = 1;
		w->sg_list[0].addr = addr;
		w->sg_list[0].length = length;
		w->sg_list[0].lkey = lkey;
	}
}

static void x_set_sge_list(struct ibv_qp_ex *x, size_t n, const struct ibv_sge *sg)
{
	struct mr_send_wr *w = wr_last(x);
	size_t i;

	if (w == NULL)
		return;
	if (n > MR_MAX_SGE || n > xqp(x)->cap.max_send_sge || (n > 0 && sg == NULL)) {
		xqp(x)->wr_err = EINVAL;
		return;
	}
	w->num_sge = (uint32_t)n;
	for (i = 0; i < n; i++) {
		w->sg_list[i].addr = sg[i].addr;
		w->sg_list[i].length = sg[i].length;
		w->sg_list[i].lkey = sg[i].lkey;
	}
}

static void x_set_inline_data_list(struct ibv_qp_ex *x, size_t n, const struct ibv_data_buf *b)
{
	struct mr_send_wr *w = wr_last(x);
	struct mv_qp *q = xqp(x);
	uint8_t *inl;
	size_t i, total = 0;

	if (w == NULL)
		return;
	inl = q->inl + (size_t)(q->nwr - 1) * INLINE_MAX;
	/* Copied now: verbs lets the application reuse the buffers as soon as this returns. */
	for (i = 0; i < n; i++) {
		if (b[i].length > xqp(x)->cap.max_inline_data - total) {
			xqp(x)->wr_err = EINVAL;
			return;
		}
		memcpy(inl + total, b[i].addr, b[i].length);
		total += b[i].length;
	}
	w->send_flags |= MR_SEND_INLINE;
	w->num_sge = 1;
	/* The buffer may move when the arrays grow: wr_complete resolves the index. */
	w->sg_list[0].addr = q->nwr - 1;
	w->sg_list[0].length = (uint32_t)total;
	w->sg_list[0].lkey = INLINE_MARK;
}

static void x_set_inline_data(struct ibv_qp_ex *x, void *addr, size_t length)
{
	struct ibv_data_buf b = { .addr = addr, .length = length };

	x_set_inline_data_list(x, 1, &b);
}

static void x_unsupported_bind(struct ibv_qp_ex *x, struct ibv_mw *mw, uint32_t rkey,
			       const struct ibv_mw_bind_info *info)
{
	(void)mw, (void)rkey, (void)info;
	xqp(x)->wr_err = EOPNOTSUPP;
}

static void x_unsupported_inv(struct ibv_qp_ex *x, uint32_t rkey)
{
	(void)rkey;
	xqp(x)->wr_err = EOPNOTSUPP;
}

static void x_unsupported_ud(struct ibv_qp_ex *x, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	(void)ah, (void)qpn, (void)qkey;
	xqp(x)->wr_err = EOPNOTSUPP;
}

static void x_unsupported_xrc(struct ibv_qp_ex *x, uint32_t srqn)
{
	(void)srqn;
	xqp(x)->wr_err = EOPNOTSUPP;
}

static void x_unsupported_tso(struct ibv_qp_ex *x, void *hdr, uint16_t sz, uint16_t mss)
{
	(void)hdr, (void)sz, (void)mss;
	xqp(x)->wr_err = EOPNOTSUPP;
}

static void x_unsupported_atomic_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr,
				       const void *v)
{
	(void)rkey, (void)addr, (void)v;
	xqp(x)->wr_err = EOPNOTSUPP;
}

void mv_qp_ex_init(struct mv_qp *q)
{
	struct ibv_qp_ex *x = &q->qpx;

	x->comp_mask = 0;
	x->wr_start = x_wr_start;
	x->wr_complete = x_wr_complete;
	x->wr_abort = x_wr_abort;
	x->wr_rdma_write = x_rdma_write;
	x->wr_rdma_write_imm = x_rdma_write_imm;
	x->wr_rdma_read = x_rdma_read;
	x->wr_send = x_send;
	x->wr_send_imm = x_send_imm;
	x->wr_send_inv = x_send_inv;
	x->wr_atomic_cmp_swp = x_cmp_swp;
	x->wr_atomic_fetch_add = x_fetch_add;
	x->wr_set_sge = x_set_sge;
	x->wr_set_sge_list = x_set_sge_list;
	x->wr_set_inline_data = x_set_inline_data;
	x->wr_set_inline_data_list = x_set_inline_data_list;
	x->wr_bind_mw = x_unsupported_bind;
	x->wr_local_inv = x_unsupported_inv;
	x->wr_set_ud_addr = x_unsupported_ud;
	x->wr_set_xrc_srqn = x_unsupported_xrc;
	x->wr_send_tso = x_unsupported_tso;
	x->wr_atomic_write = x_unsupported_atomic_write;
}

void mv_qp_ex_fini(struct mv_qp *q)
{
	free(q->wr);
	free(q->inl);
	q->wr = NULL;
	q->inl = NULL;
}
