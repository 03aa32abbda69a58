/* SPDX-License-Identifier: MIT
 * Fake transport for the shm server tests (see fake_backend.h).
 */
#include "fake_backend.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void fake_init(struct fake_backend *fb)
{
	pthread_mutexattr_t ma;

	memset(fb, 0, sizeof(*fb));
	/* Error-checking: a test that failed an assertion while holding the lock can release it
	 * in teardown (unlock by a non-owner just fails with EPERM). */
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&fb->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	fb->port.state = MRC_PORT_ACTIVE;
	fb->port.active_mtu = 1024;
	fb->port.max_mtu = 4096;
	fb->port.gid_count = 2;
	memcpy(fb->port.mac, "\x02\x00\x00\x00\x00\x01", 6);
	memcpy(fb->port.gid[0], "\xfe\x80\0\0\0\0\0\0\0\0\0\0\0\0\0\x01", 16);
	memcpy(fb->port.gid[1], "\0\0\0\0\0\0\0\0\0\0\xff\xff\x0a\x00\x00\x01", 16);
	fb->port.max_qp = FAKE_MAX;
	fb->port.max_qp_wr = 4096;
	fb->port.max_cq = FAKE_MAX;
	fb->port.max_cqe = FAKE_CQ_CAP;
	fb->port.max_mr = FAKE_MAX_MR;
	fb->port.max_pd = FAKE_MAX;
	fb->port.max_sge = MR_MAX_SGE;
	fb->port.max_inline_data = 448;
	fb->port.max_mr_size = 1ull << 40;
}

void fake_fini(struct fake_backend *fb)
{
	unsigned int i;

	for (i = 0; i < fb->n_cq; i++)
		free(fb->cqs[i]);
	pthread_mutex_destroy(&fb->lock);
}

void fake_lock(struct fake_backend *fb)
{
	pthread_mutex_lock(&fb->lock);
}

void fake_unlock(struct fake_backend *fb)
{
	pthread_mutex_unlock(&fb->lock);
}

static int cq_put(struct fake_cq *cq, const struct mr_wc *wc)
{
	if (cq->tail - cq->head >= FAKE_CQ_CAP)
		return -ENOSPC;
	cq->q[cq->tail++ % FAKE_CQ_CAP] = *wc;
	return 0;
}

int fake_cq_push(struct fake_backend *fb, unsigned int cq_index, const struct mr_wc *wc)
{
	int rc = -ENOENT;

	fake_lock(fb);
	if (cq_index < fb->n_cq && fb->cqs[cq_index]->live)
		rc = cq_put(fb->cqs[cq_index], wc);
	fake_unlock(fb);
	return rc;
}

static int f_query_port(void *be, struct mrc_port_attr *attr)
{
	struct fake_backend *fb = be;

	fake_lock(fb);
	*attr = fb->port;
	fake_unlock(fb);
	return 0;
}

static int f_alloc_pd(void *be, void **pd)
{
	struct fake_backend *fb = be;
	int rc = -ENOMEM;

	fake_lock(fb);
	if (fb->n_pd < FAKE_MAX) {
		struct fake_pd *p = &fb->pds[fb->n_pd];

		p->live = true;
		p->id = (int)fb->n_pd++;
		fb->live_pd++;
		*pd = p;
		rc = 0;
	}
	fake_unlock(fb);
	return rc;
}

static int f_dealloc_pd(void *be, void *pd)
{
	struct fake_backend *fb = be;
	struct fake_pd *p = pd;

	fake_lock(fb);
	p->live = false;
	fb->live_pd--;
	fake_unlock(fb);
	return 0;
}

static int f_reg_mr(void *be, void *pd, void *host, uint64_t iova, uint64_t len,
		    uint32_t access, void **mr, uint32_t *lkey, uint32_t *rkey)
{
	struct fake_backend *fb = be;
	int rc = -ENOMEM;

	fake_lock(fb);
	if (fb->n_mr < FAKE_MAX_MR) {
		struct fake_mr *m = &fb->mrs[fb->n_mr];

		m->live = true;
		m->pd = pd;
		m->host = host;
		m->iova = iova;
		m->len = len;
		m->access = access;
		/* Distinct, recognisable keys (index in the low byte). */
		m->lkey = 0x1000u + fb->n_mr;
		m->rkey = 0x8000u + fb->n_mr;
		*lkey = m->lkey;
		*rkey = m->rkey;
		*mr = m;
		fb->n_mr++;
		fb->live_mr++;
		rc = 0;
	}
	fake_unlock(fb);
	return rc;
}

static int f_dereg_mr(void *be, void *mr)
{
	struct fake_backend *fb = be;
	struct fake_mr *m = mr;

	fake_lock(fb);
	m->live = false;
	fb->live_mr--;
	fake_unlock(fb);
	return 0;
}

static int f_create_cq(void *be, uint32_t depth, void **cq)
{
	struct fake_backend *fb = be;
	int rc = -ENOMEM;

	fake_lock(fb);
	if (fb->n_cq < FAKE_MAX) {
		struct fake_cq *c = calloc(1, sizeof(*c));

		if (c != NULL) {
			c->live = true;
			c->depth = depth;
			fb->cqs[fb->n_cq++] = c;
			fb->live_cq++;
			*cq = c;
			rc = 0;
		}
	}
	fake_unlock(fb);
	return rc;
}

static int f_destroy_cq(void *be, void *cq)
{
	struct fake_backend *fb = be;
	struct fake_cq *c = cq;

	fake_lock(fb);
	c->live = false;
	fb->live_cq--;
	fake_unlock(fb);
	return 0;
}

static int f_poll_cq(void *be, void *cq, int n, struct mr_wc *wc)
{
	struct fake_backend *fb = be;
	struct fake_cq *c = cq;
	int i = 0;

	fake_lock(fb);
	while (i < n && c->head != c->tail)
		wc[i++] = c->q[c->head++ % FAKE_CQ_CAP];
	fake_unlock(fb);
	return i;
}

static bool f_cq_pending(void *be, void *cq)
{
	struct fake_backend *fb = be;
	struct fake_cq *c = cq;
	bool r;

	fake_lock(fb);
	r = c->head != c->tail;
	fake_unlock(fb);
	return r;
}

static int f_create_qp(void *be, void *pd, void *send_cq, void *recv_cq,
		       const struct mr_shm_qp_caps *caps, void **qp, uint32_t *qp_num)
{
	struct fake_backend *fb = be;
	int rc = -ENOMEM;

	fake_lock(fb);
	if (fb->n_qp < FAKE_MAX) {
		struct fake_qp *q = &fb->qps[fb->n_qp];

		q->live = true;
		q->qpn = 0x100 + fb->n_qp;
		q->pd = pd;
		q->scq = send_cq;
		q->rcq = recv_cq;
		q->caps = *caps;
		q->attr.qp_state = MR_QPS_RESET;
		*qp = q;
		*qp_num = q->qpn;
		fb->n_qp++;
		fb->live_qp++;
		rc = 0;
	}
	fake_unlock(fb);
	return rc;
}

/* Copies the masked attributes; the real transport also checks the transition rules. */
static int f_modify_qp(void *be, void *qp, const struct mrc_qp_attr *a, uint32_t mask)
{
	struct fake_backend *fb = be;
	struct fake_qp *q = qp;

	fake_lock(fb);
	q->last_mask = mask;
	q->modifies++;
	if (mask & MRC_QP_STATE) {
		q->attr.qp_state = a->qp_state;
		if (a->qp_state == MR_QPS_ERR)
			q->saw_err = true;
	}
	if (mask & MRC_QP_ACCESS_FLAGS)
		q->attr.qp_access_flags = a->qp_access_flags;
	if (mask & MRC_QP_PATH)
		q->attr.path = a->path;
	if (mask & MRC_QP_PATH_MTU)
		q->attr.path_mtu = a->path_mtu;
	if (mask & MRC_QP_DEST_QPN)
		q->attr.dest_qp_num = a->dest_qp_num;
	if (mask & MRC_QP_RQ_PSN)
		q->attr.rq_psn = a->rq_psn;
	if (mask & MRC_QP_SQ_PSN)
		q->attr.sq_psn = a->sq_psn;
	if (mask & MRC_QP_TIMEOUT)
		q->attr.timeout = a->timeout;
	if (mask & MRC_QP_RETRY_CNT)
		q->attr.retry_cnt = a->retry_cnt;
	if (mask & MRC_QP_RNR_RETRY)
		q->attr.rnr_retry = a->rnr_retry;
	if (mask & MRC_QP_TRANSPORT) {
		q->attr.transport = a->transport;
		q->attr.cc = a->cc;
		q->attr.n_entropies = a->n_entropies;
	}
	fake_unlock(fb);
	return 0;
}

static int f_query_qp(void *be, void *qp, struct mrc_qp_attr *attr)
{
	struct fake_backend *fb = be;

	fake_lock(fb);
	*attr = ((struct fake_qp *)qp)->attr;
	fake_unlock(fb);
	return 0;
}

static int f_destroy_qp(void *be, void *qp)
{
	struct fake_backend *fb = be;
	struct fake_qp *q = qp;

	fake_lock(fb);
	q->live = false;
	fb->live_qp--;
	if (q->saw_err)
		fb->destroyed_after_err++;
	fake_unlock(fb);
	return 0;
}

/* ---- loopback execution (called with the lock held) ---- */

static struct fake_mr *mr_by_key(struct fake_backend *fb, uint32_t key, bool remote)
{
	unsigned int i;

	for (i = 0; i < fb->n_mr; i++)
		if (fb->mrs[i].live && (remote ? fb->mrs[i].rkey : fb->mrs[i].lkey) == key)
			return &fb->mrs[i];
	return NULL;
}

/* Host pointer for [addr, addr+len) of an MR, or NULL when out of bounds. */
static uint8_t *mr_host(struct fake_mr *m, uint64_t addr, uint64_t len)
{
	if (m == NULL || addr < m->iova || len > m->len || addr - m->iova > m->len - len)
		return NULL;
	return m->host + (addr - m->iova);
}

static struct fake_qp *qp_by_num(struct fake_backend *fb, uint32_t qpn)
{
	unsigned int i;

	for (i = 0; i < fb->n_qp; i++)
		if (fb->qps[i].live && fb->qps[i].qpn == qpn)
			return &fb->qps[i];
	return NULL;
}

/* Gathers the WR's local data into buf (inline: sg_list[0] is a host pointer). */
static int gather(struct fake_backend *fb, const struct mr_send_wr *wr, uint8_t *buf,
		  uint32_t cap, uint32_t *len)
{
	uint32_t i, n = 0;

	for (i = 0; i < wr->num_sge; i++) {
		const struct mr_sge *sg = &wr->sg_list[i];
		const uint8_t *p;

		if (wr->send_flags & MR_SEND_INLINE)
			p = (const uint8_t *)(uintptr_t)sg->addr;
		else
			p = mr_host(mr_by_key(fb, sg->lkey, false), sg->addr, sg->length);
		if (p == NULL || sg->length > cap - n)
			return MR_WC_LOC_PROT_ERR;
		memcpy(buf + n, p, sg->length);
		n += sg->length;
	}
	*len = n;
	return 0;
}

static int scatter(struct fake_backend *fb, const struct mr_sge *sg, uint32_t nsge,
		   const uint8_t *buf, uint32_t len)
{
	uint32_t i, off = 0;

	for (i = 0; i < nsge && off < len; i++) {
		uint32_t k = len - off < sg[i].length ? len - off : sg[i].length;
		uint8_t *p = mr_host(mr_by_key(fb, sg[i].lkey, false), sg[i].addr, k);

		if (p == NULL)
			return MR_WC_LOC_PROT_ERR;
		memcpy(p, buf + off, k);
		off += k;
	}
	return off == len ? 0 : MR_WC_LOC_LEN_ERR;
}

static void exec_wr(struct fake_backend *fb, struct fake_qp *q, const struct mr_send_wr *wr)
{
	static uint8_t data[1 << 16];
	struct fake_qp *d = qp_by_num(fb, q->attr.dest_qp_num);
	struct mr_wc swc = { .wr_id = wr->wr_id, .qp_num = q->qpn };
	struct mr_wc rwc = { .qp_num = d != NULL ? d->qpn : 0, .src_qp = q->qpn };
	bool consume_recv = false;
	uint32_t len = 0;
	int st = 0;

	switch (wr->opcode) {
	case MR_WR_SEND:
	case MR_WR_SEND_WITH_IMM:
	case MR_WR_SEND_WITH_INV:
		swc.opcode = MR_WC_SEND;
		st = gather(fb, wr, data, sizeof(data), &len);
		consume_recv = true;
		rwc.opcode = MR_WC_RECV;
		break;
	case MR_WR_RDMA_WRITE:
	case MR_WR_RDMA_WRITE_WITH_IMM: {
		uint8_t *dst;

		swc.opcode = MR_WC_RDMA_WRITE;
		st = gather(fb, wr, data, sizeof(data), &len);
		dst = mr_host(mr_by_key(fb, wr->rdma.rkey, true), wr->rdma.remote_addr, len);
		if (st == 0 && dst == NULL)
			st = MR_WC_REM_ACCESS_ERR;
		else if (st == 0)
			memcpy(dst, data, len);
		consume_recv = wr->opcode == MR_WR_RDMA_WRITE_WITH_IMM;
		rwc.opcode = MR_WC_RECV_RDMA_WITH_IMM;
		break;
	}
	case MR_WR_RDMA_READ: {
		const uint8_t *src;
		uint32_t i;

		swc.opcode = MR_WC_RDMA_READ;
		for (i = 0; i < wr->num_sge; i++)
			len += wr->sg_list[i].length;
		src = mr_host(mr_by_key(fb, wr->rdma.rkey, true), wr->rdma.remote_addr, len);
		st = src == NULL ? MR_WC_REM_ACCESS_ERR : scatter(fb, wr->sg_list, wr->num_sge,
								  src, len);
		break;
	}
	case MR_WR_ATOMIC_CMP_AND_SWP:
	case MR_WR_ATOMIC_FETCH_AND_ADD: {
		uint8_t *t = mr_host(mr_by_key(fb, wr->atomic.rkey, true),
				     wr->atomic.remote_addr, 8);
		uint64_t old = 0, nv;

		swc.opcode = wr->opcode == MR_WR_ATOMIC_CMP_AND_SWP ? MR_WC_COMP_SWAP :
								      MR_WC_FETCH_ADD;
		if (t == NULL) {
			st = MR_WC_REM_ACCESS_ERR;
			break;
		}
		memcpy(&old, t, 8);
		if (wr->opcode == MR_WR_ATOMIC_FETCH_AND_ADD)
			nv = old + wr->atomic.compare_add;
		else
			nv = old == wr->atomic.compare_add ? wr->atomic.swap : old;
		memcpy(t, &nv, 8);
		len = 8;
		st = scatter(fb, wr->sg_list, 1, (const uint8_t *)&old, 8);
		break;
	}
	}
	if (st == 0 && consume_recv) {
		if (d == NULL || d->rq_head == d->rq_tail) {
			st = MR_WC_RNR_RETRY_EXC_ERR;
		} else {
			struct mr_recv_wr *r = &d->rq[d->rq_head++ % 64];

			rwc.wr_id = r->wr_id;
			rwc.byte_len = len;
			if (wr->opcode == MR_WR_SEND_WITH_IMM ||
			    wr->opcode == MR_WR_RDMA_WRITE_WITH_IMM) {
				rwc.wc_flags = MR_WC_WITH_IMM;
				rwc.imm_data = wr->imm_data;
			}
			if (wr->opcode != MR_WR_RDMA_WRITE_WITH_IMM)
				rwc.status = (enum mr_wc_status)scatter(fb, r->sg_list, r->num_sge,
									data, len);
			cq_put(d->rcq, &rwc);
		}
	}
	swc.status = (enum mr_wc_status)st;
	swc.byte_len = len;
	if (st != 0 || (wr->send_flags & MR_SEND_SIGNALED) || q->caps.sq_sig_all)
		cq_put(q->scq, &swc);
}

/* A refusing backend (post_send_rc -ENOMEM/-EAGAIN: "queue full") has no room, as the real
 * transport's mr_qp_sq_room() is 0 exactly when its mr_post_send() says -ENOMEM. */
static uint32_t f_sq_room(void *be, void *qp)
{
	struct fake_backend *fb = be;
	uint32_t room;

	(void)qp;
	fake_lock(fb);
	room = fb->post_send_rc == -ENOMEM || fb->post_send_rc == -EAGAIN ? 0 : 1024;
	fake_unlock(fb);
	return room;
}

static int f_post_send(void *be, void *qp, const struct mr_send_wr *wr)
{
	struct fake_backend *fb = be;
	struct fake_qp *q = qp;
	int rc = 0;

	fake_lock(fb);
	if (fb->post_send_rc != 0) {
		rc = fb->post_send_rc;
	} else {
		if (fb->n_sends < FAKE_LOG) {
			fb->sends[fb->n_sends] = *wr;
			/* The inline pointer is only valid during this call: copy now. */
			if ((wr->send_flags & MR_SEND_INLINE) && wr->num_sge == 1)
				memcpy(fb->inline_copy[fb->n_sends],
				       (const void *)(uintptr_t)wr->sg_list[0].addr,
				       wr->sg_list[0].length);
			fb->n_sends++;
		}
		if (fb->exec)
			exec_wr(fb, q, wr);
	}
	fake_unlock(fb);
	return rc;
}

static int f_post_recv(void *be, void *qp, const struct mr_recv_wr *wr)
{
	struct fake_backend *fb = be;
	struct fake_qp *q = qp;
	int rc = 0;

	fake_lock(fb);
	if (fb->n_recvs < FAKE_LOG)
		fb->recvs[fb->n_recvs++] = *wr;
	if (fb->exec) {
		if (q->rq_tail - q->rq_head >= 64)
			rc = -ENOMEM;
		else
			q->rq[q->rq_tail++ % 64] = *wr;
	}
	fake_unlock(fb);
	return rc;
}

const struct mr_shm_backend_ops fake_ops = {
	.query_port = f_query_port,
	.alloc_pd = f_alloc_pd,
	.dealloc_pd = f_dealloc_pd,
	.reg_mr = f_reg_mr,
	.dereg_mr = f_dereg_mr,
	.create_cq = f_create_cq,
	.destroy_cq = f_destroy_cq,
	.poll_cq = f_poll_cq,
	.cq_pending = f_cq_pending,
	.sq_room = f_sq_room,
	.create_qp = f_create_qp,
	.modify_qp = f_modify_qp,
	.query_qp = f_query_qp,
	.destroy_qp = f_destroy_qp,
	.post_send = f_post_send,
	.post_recv = f_post_recv,
};
