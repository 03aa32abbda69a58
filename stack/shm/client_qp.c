/* SPDX-License-Identifier: MIT
 * libmetaroce: queue pairs. Create/modify/query/destroy are control requests; post_send and
 * post_recv write one entry into the QP's SQ/RQ ring (the app is the producer).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "client_priv.h"

struct mrc_qp *mrc_create_qp(struct mrc_pd *pd, const struct mrc_qp_init_attr *init)
{
	struct mrc_ctl_req req;
	struct mrc_ctl_resp resp;
	struct mrc_session *s;
	struct mrc_qp *qp;
	int rc, ring_fd = -1;

	if (pd == NULL) {
		errno = EINVAL;
		return NULL;
	}
	s = pd->o.s;
	if (init == NULL || init->send_cq == NULL || init->recv_cq == NULL) {
		errno = -mrc_fail(s, EINVAL, "mrc_create_qp: init attributes and both CQs needed");
		return NULL;
	}
	if (init->send_cq->o.s != s || init->recv_cq->o.s != s ||
	    (init->srq != NULL && init->srq->o.s != s)) {
		errno = -mrc_fail(s, EINVAL, "mrc_create_qp: CQ or SRQ belongs to another session");
		return NULL;
	}
	if (init->qp_type != MRC_QPT_RC) {
		errno = -mrc_fail(s, EOPNOTSUPP, "mrc_create_qp: only MRC_QPT_RC is supported");
		return NULL;
	}
	if (init->max_send_wr == 0 || init->max_send_wr > MRC_RING_MAX_ENTRIES ||
	    init->max_recv_wr > MRC_RING_MAX_ENTRIES || init->max_send_sge > MRC_SQE_MAX_SGE ||
	    init->max_recv_sge > MRC_RQE_MAX_SGE || init->max_inline_data > MRC_SQE_INLINE_MAX) {
		errno = -mrc_fail(s, EINVAL,
				  "mrc_create_qp: capabilities out of range (wr 1..%u, sge <= %u, "
				  "inline <= %u)", MRC_RING_MAX_ENTRIES, MRC_SQE_MAX_SGE,
				  MRC_SQE_INLINE_MAX);
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (qp == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	memset(&req, 0, sizeof(req));
	req.u.create_qp.pd = pd->o.handle;
	req.u.create_qp.send_cq = init->send_cq->o.handle;
	req.u.create_qp.recv_cq = init->recv_cq->o.handle;
	req.u.create_qp.qp_type = init->qp_type;
	req.u.create_qp.max_send_wr = init->max_send_wr;
	req.u.create_qp.max_recv_wr = init->max_recv_wr;
	req.u.create_qp.max_send_sge = init->max_send_sge;
	req.u.create_qp.max_recv_sge = init->max_recv_sge;
	req.u.create_qp.max_inline_data = init->max_inline_data;
	req.u.create_qp.sq_sig_all = init->sq_sig_all;
	req.u.create_qp.srq = init->srq != NULL ? init->srq->o.handle : 0;
	rc = mrc_rpc(s, MRC_CTL_CREATE_QP, &req, -1, &resp, &ring_fd);
	if (rc < 0)
		goto fail;
	qp->o.handle = resp.u.create_qp.handle;
	qp->db_slot = mrc_db_slot(qp->o.handle);
	qp->qp_num = resp.u.create_qp.qp_num;
	qp->sq_size = resp.u.create_qp.sq_size;
	qp->rq_size = resp.u.create_qp.rq_size;
	qp->map_len = (size_t)resp.u.create_qp.map_len;
	qp->max_inline_data = resp.u.create_qp.max_inline_data;
	qp->max_send_sge = resp.u.create_qp.max_send_sge;
	qp->max_recv_sge = resp.u.create_qp.max_recv_sge;
	if (ring_fd < 0 || qp->sq_size == 0 || (qp->sq_size & (qp->sq_size - 1)) != 0 ||
	    qp->rq_size == 0 || (qp->rq_size & (qp->rq_size - 1)) != 0 ||
	    resp.u.create_qp.sq_off + mrc_ring_bytes(qp->sq_size, sizeof(struct mrc_sqe)) >
		    qp->map_len ||
	    resp.u.create_qp.rq_off + mrc_ring_bytes(qp->rq_size, sizeof(struct mrc_rqe)) >
		    qp->map_len) {
		rc = mrc_fail(s, EPROTO, "mrc_create_qp: malformed answer from the daemon");
		goto fail_destroy;
	}
	qp->map = mmap(NULL, qp->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, ring_fd, 0);
	if (qp->map == MAP_FAILED) {
		rc = mrc_fail(s, errno, "mrc_create_qp: mmap rings: %s", strerror(errno));
		goto fail_destroy;
	}
	close(ring_fd);
	qp->sq = (struct mrc_ring_hdr *)((uint8_t *)qp->map + resp.u.create_qp.sq_off);
	qp->rq = (struct mrc_ring_hdr *)((uint8_t *)qp->map + resp.u.create_qp.rq_off);
	qp->pd = pd;
	qp->send_cq = init->send_cq;
	qp->recv_cq = init->recv_cq;
	qp->state = MR_QPS_RESET;
	qp->send_cq->qp_refs++;
	qp->recv_cq->qp_refs++;
	qp->srq = init->srq;
	if (qp->srq != NULL)
		qp->srq->qp_refs++;
	mrc_obj_link(s, &qp->o, MRC_OBJ_QP, qp->o.handle);
	return qp;
fail_destroy:
	memset(&req, 0, sizeof(req));
	req.u.obj.handle = qp->o.handle;
	mrc_rpc(s, MRC_CTL_DESTROY_QP, &req, -1, &resp, NULL);
fail:
	if (ring_fd >= 0)
		close(ring_fd);
	free(qp);
	errno = -rc;
	return NULL;
}

int mrc_modify_qp(struct mrc_qp *qp, const struct mrc_qp_attr *attr, uint32_t mask)
{
	struct mrc_ctl_req req;
	struct mrc_ctl_resp resp;
	int rc;

	if (qp == NULL)
		return -EINVAL;
	if (attr == NULL || mask == 0 || (mask & ~(uint32_t)MRC_QP_ATTR_MASK_ALL) != 0)
		return mrc_fail(qp->o.s, EINVAL, "mrc_modify_qp: bad attr or mask 0x%x", mask);
	/* MetaRoCE only after both ends agreed; its values are checked here so a bad call fails
	 * without a round trip (docs/metaroce-wire.md: MRETH.path is 8 bits -> 1..256 entropies). */
	if ((mask & MRC_QP_TRANSPORT) &&
	    (attr->transport > MRC_TRANSPORT_METAROCE || attr->cc > MRC_CC_METAROCE ||
	     (attr->transport == MRC_TRANSPORT_METAROCE &&
	      (attr->n_entropies < 1 || attr->n_entropies > MRC_MAX_ENTROPIES))))
		return mrc_fail(qp->o.s, EINVAL, "mrc_modify_qp: bad transport %u/%u entropies/cc %u",
				attr->transport, attr->n_entropies, attr->cc);
	memset(&req, 0, sizeof(req));
	req.u.modify_qp.qp = qp->o.handle;
	req.u.modify_qp.mask = mask;
	/* Without MRC_QP_TRANSPORT only the verbs fields are read: a caller built against the
	 * 88-byte attr (before the transport fields were appended) is never over-read. */
	if (mask & MRC_QP_TRANSPORT)
		req.u.modify_qp.attr = *attr;
	else
		memcpy(&req.u.modify_qp.attr, attr, offsetof(struct mrc_qp_attr, transport));
	rc = mrc_rpc(qp->o.s, MRC_CTL_MODIFY_QP, &req, -1, &resp, NULL);
	if (rc == -EINVAL && (mask & MRC_QP_PATH_MTU)) {
		struct mrc_port_attr pa;

		/* The daemon refuses a path MTU above the port's (as rxe): say so. */
		if (mrc_query_port(qp->o.s, &pa) == 0 && attr->path_mtu > pa.active_mtu)
			return mrc_fail(qp->o.s, EINVAL,
					"mrc_modify_qp: path_mtu %u is above the port's active MTU %u",
					attr->path_mtu, pa.active_mtu);
	}
	if (rc == 0 && (mask & MRC_QP_PATH_MTU))
		qp->path_mtu = attr->path_mtu;
	if (rc == 0 && (mask & MRC_QP_TRANSPORT))
		qp->metaroce = attr->transport == MRC_TRANSPORT_METAROCE;
	if (rc == 0 && (mask & MRC_QP_STATE))
		qp->state = attr->qp_state;
	return rc;
}

int mrc_query_qp(struct mrc_qp *qp, struct mrc_qp_attr *attr)
{
	struct mrc_ctl_req req;
	struct mrc_ctl_resp resp;
	int rc;

	if (qp == NULL)
		return -EINVAL;
	if (attr == NULL)
		return mrc_fail(qp->o.s, EINVAL, "mrc_query_qp: attr is NULL");
	memset(&req, 0, sizeof(req));
	req.u.obj.handle = qp->o.handle;
	rc = mrc_rpc(qp->o.s, MRC_CTL_QUERY_QP, &req, -1, &resp, NULL);
	if (rc == 0) {
		*attr = resp.u.qp_attr;
		qp->state = attr->qp_state;
	}
	return rc;
}

int mrc_destroy_qp(struct mrc_qp *qp)
{
	struct mrc_ctl_req req;
	struct mrc_ctl_resp resp;
	int rc;

	if (qp == NULL)
		return -EINVAL;
	memset(&req, 0, sizeof(req));
	req.u.obj.handle = qp->o.handle;
	rc = mrc_rpc(qp->o.s, MRC_CTL_DESTROY_QP, &req, -1, &resp, NULL);
	if (rc < 0)
		return rc;
	qp->send_cq->qp_refs--;
	qp->recv_cq->qp_refs--;
	if (qp->srq != NULL)
		qp->srq->qp_refs--;
	mrc_obj_unlink(&qp->o);
	mrc_obj_free(&qp->o);
	return 0;
}

uint32_t mrc_qp_num(const struct mrc_qp *qp)
{
	return qp != NULL ? qp->qp_num : 0;
}

int mrc_qp_caps(const struct mrc_qp *qp, struct mrc_qp_init_attr *c)
{
	if (qp == NULL || c == NULL)
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	c->qp_type = MRC_QPT_RC;
	c->send_cq = qp->send_cq;
	c->recv_cq = qp->recv_cq;
	c->max_send_wr = qp->sq_size;
	c->max_recv_wr = qp->rq_size;
	c->max_send_sge = qp->max_send_sge;
	c->max_recv_sge = qp->max_recv_sge;
	c->max_inline_data = qp->max_inline_data;
	return 0;
}

static bool wr_opcode_valid(uint32_t op)
{
	switch (op) {
	case MR_WR_RDMA_WRITE:
	case MR_WR_RDMA_WRITE_WITH_IMM:
	case MR_WR_SEND:
	case MR_WR_SEND_WITH_IMM:
	case MR_WR_RDMA_READ:
	case MR_WR_ATOMIC_CMP_AND_SWP:
	case MR_WR_ATOMIC_FETCH_AND_ADD:
	case MR_WR_SEND_WITH_INV:
		return true;
	default:
		return false;
	}
}

/* Validates wr and writes it at the private producer index without publishing it. */
static int sq_write(struct mrc_qp *qp, const struct mr_send_wr *wr)
{
	struct mrc_session *s = qp->o.s;
	struct mrc_sqe *e;
	bool atomic, inl;
	uint32_t i;

	if (wr == NULL)
		return mrc_fail(s, EINVAL, "mrc_post_send: wr is NULL");
	/* IBA 10.8.2 (Post Send Request): RESET, INIT and RTR reject sends; RTS, SQD, SQE and
	 * ERR accept them (ERR completes them flushed). */
	if (qp->state < MR_QPS_RTS)
		return mrc_fail(s, EINVAL, "mrc_post_send: QP %u is not in RTS", qp->qp_num);
	if (!wr_opcode_valid((uint32_t)wr->opcode))
		return mrc_fail(s, EINVAL, "mrc_post_send: unknown opcode %d", (int)wr->opcode);
	if (wr->send_flags & ~(uint32_t)(MR_SEND_FENCE | MR_SEND_SIGNALED | MR_SEND_SOLICITED |
					 MR_SEND_INLINE))
		return mrc_fail(s, EINVAL, "mrc_post_send: unknown send flags 0x%x", wr->send_flags);
	atomic = wr->opcode == MR_WR_ATOMIC_CMP_AND_SWP ||
		 wr->opcode == MR_WR_ATOMIC_FETCH_AND_ADD;
	inl = (wr->send_flags & MR_SEND_INLINE) != 0;
	if (wr->num_sge > (inl ? MR_MAX_SGE : qp->max_send_sge))
		return mrc_fail(s, EINVAL, "mrc_post_send: %u SGEs, QP allows %u", wr->num_sge,
				qp->max_send_sge);
	if (inl && (atomic || wr->opcode == MR_WR_RDMA_READ))
		return mrc_fail(s, EINVAL, "mrc_post_send: READ and atomics cannot be inline");
	/* IBA 9.4.5: atomics operate on one 8-byte, 8-byte aligned word. */
	if (atomic && (wr->num_sge != 1 || wr->sg_list[0].length != 8 ||
		       (wr->atomic.remote_addr & 7) != 0))
		return mrc_fail(s, EINVAL,
				"mrc_post_send: atomics need one 8-byte SGE and an aligned address");
	/* IBA 9.7.1 / 9.7.4.1.4: an RC READ takes one PSN per response packet, all outstanding
	 * at once, at most 2^23 - 1 (the daemon refuses longer ones too; MetaRoCE asks in
	 * chunks). Only reachable at path MTU 256. */
	if (wr->opcode == MR_WR_RDMA_READ && !qp->metaroce && qp->path_mtu != 0) {
		uint64_t len = 0;

		for (uint32_t k = 0; k < wr->num_sge; k++)
			len += wr->sg_list[k].length;
		if ((len + qp->path_mtu - 1) / qp->path_mtu > (1u << 23) - 1)
			return mrc_fail(s, EINVAL,
					"mrc_post_send: READ of %llu bytes needs more than 2^23-1 "
					"response packets at path MTU %u",
					(unsigned long long)len, qp->path_mtu);
	}
	if (mrc_ring_free_seen(qp->sq, qp->sq_prod, qp->sq_size, &qp->sq_cons_seen, 1) == 0)
		return mrc_fail(s, ENOMEM, "mrc_post_send: send queue full (%u entries)",
				qp->sq_size);
	e = mrc_ring_entry(qp->sq, qp->sq_prod, qp->sq_size - 1, sizeof(*e));
	/* Field-sized loads of the app's WR (WR_LD): it was just written, often with 4-byte
	 * stores, and GCC merges neighbouring 4-byte copies into one 8-byte load, which cannot be
	 * forwarded from two stores still in the store buffer: the load then waits for them to
	 * drain, as a fence would (perf: 93 % of sq_write on that load without the doorbell's
	 * fence). */
#define WR_LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
	e->wr_id = WR_LD(wr->wr_id);
	e->opcode = (uint32_t)WR_LD(wr->opcode);
	e->send_flags = WR_LD(wr->send_flags);
	e->imm_data = WR_LD(wr->imm_data);
	e->invalidate_rkey = WR_LD(wr->invalidate_rkey);
	e->reserved = 0;
	if (atomic) {
		e->rkey = WR_LD(wr->atomic.rkey);
		e->remote_addr = WR_LD(wr->atomic.remote_addr);
		e->u.atomic.compare_add = wr->atomic.compare_add;
		e->u.atomic.swap = wr->atomic.swap;
	} else {
		e->rkey = WR_LD(wr->rdma.rkey);
		e->remote_addr = WR_LD(wr->rdma.remote_addr);
	}
#undef WR_LD
	if (inl) {
		uint32_t total = 0;

		for (i = 0; i < wr->num_sge; i++) {
			const struct mr_sge *sg = &wr->sg_list[i];

			if (sg->length > qp->max_inline_data - total)
				return mrc_fail(s, EINVAL,
						"mrc_post_send: inline data longer than %u bytes",
						qp->max_inline_data);
			if (sg->length > 0)
				memcpy(e->u.inline_data + total,
				       (const void *)(uintptr_t)sg->addr, sg->length);
			total += sg->length;
		}
		e->num_sge = 0;
		e->inline_len = total;
	} else {
		e->num_sge = wr->num_sge;
		e->inline_len = 0;
		/* An atomic's operands sit after sge[0] (written above): copy its one SGE only. */
		memcpy(e->u.sge, wr->sg_list, sizeof(struct mr_sge) * wr->num_sge);
	}
	qp->sq_prod++;
	return 0;
}

/* New entries on one of qp's rings: the index store, then the doorbell (shm_abi.h). */
static void publish(struct mrc_qp *qp, struct mrc_ring_hdr *r, uint32_t prod)
{
	mrc_ring_publish(r, prod);
	mrc_embed_note_post();
	if (qp->o.s->db_asym)
		mrc_db_ring_asym(qp->o.s->db, qp->db_slot);
	else if (qp->o.s->db != NULL)
		mrc_db_ring(qp->o.s->db, qp->db_slot);
}

/* Asks for the line at p in a writable state (x86 PREFETCHW; elsewhere the compiler's hint). */
static inline void prefetch_w(const void *p)
{
#if defined(__x86_64__)
	__asm__ volatile("prefetchw %0" : : "m"(*(const uint8_t *)p));
#else
	__builtin_prefetch(p, 1);
#endif
}

/* After a post: the next SQ slot's first line (the whole of a small WR), which the daemon last
 * read (a shared line here), is requested for writing now, so that the next post's entry
 * stores do not wait for that ownership in the doorbell's fence (perf: the fence was 3/4 of an
 * 8-byte post, waiting for the entry's and the index's lines). The lines after it are taken
 * only by WRs that need them: the daemon does not read them for small ones. A hint only. */
static inline void sq_prefetch_next(struct mrc_qp *qp)
{
	prefetch_w(mrc_ring_entry(qp->sq, qp->sq_prod, qp->sq_size - 1, sizeof(struct mrc_sqe)));
}

int mrc_post_send(struct mrc_qp *qp, const struct mr_send_wr *wr)
{
	int rc;

	if (qp == NULL)
		return -EINVAL;
	/* The producer index's line, which the daemon reads on every poll while the QP is busy
	 * (a shared line here), is asked for in a writable state before the entry is built, so
	 * that the transfer overlaps the checks and entry stores instead of stalling the
	 * doorbell's fence after the index store. */
	prefetch_w(&qp->sq->prod);
	rc = sq_write(qp, wr);
	if (rc == 0) {
		publish(qp, qp->sq, qp->sq_prod);
		sq_prefetch_next(qp);
	}
	return rc;
}

int mrc_post_send_batch(struct mrc_qp *qp, const struct mr_send_wr *wrs, int n)
{
	int i, rc = 0;

	if (qp == NULL || n < 0 || (wrs == NULL && n > 0))
		return -EINVAL;
	prefetch_w(&qp->sq->prod); /* as in mrc_post_send */
	for (i = 0; i < n; i++) {
		rc = sq_write(qp, &wrs[i]);
		if (rc < 0)
			break;
	}
	if (i > 0) {
		publish(qp, qp->sq, qp->sq_prod); /* one index store for the whole batch */
		sq_prefetch_next(qp);
	}
	return i > 0 ? i : rc;
}

static int rq_write(struct mrc_qp *qp, const struct mr_recv_wr *wr)
{
	struct mrc_rqe *e;

	if (wr == NULL)
		return mrc_fail(qp->o.s, EINVAL, "mrc_post_recv: wr is NULL");
	if (qp->srq != NULL)
		return mrc_fail(qp->o.s, EINVAL, "mrc_post_recv: QP %u takes its receives from "
				"an SRQ (mrc_post_srq_recv)", qp->qp_num);
	/* IBA 10.8.2: receives may be posted from INIT on. */
	if (qp->state == MR_QPS_RESET)
		return mrc_fail(qp->o.s, EINVAL, "mrc_post_recv: QP %u is in RESET", qp->qp_num);
	if (wr->num_sge > qp->max_recv_sge)
		return mrc_fail(qp->o.s, EINVAL, "mrc_post_recv: %u SGEs, QP allows %u",
				wr->num_sge, qp->max_recv_sge);
	if (mrc_ring_free_seen(qp->rq, qp->rq_prod, qp->rq_size, &qp->rq_cons_seen, 1) == 0)
		return mrc_fail(qp->o.s, ENOMEM, "mrc_post_recv: receive queue full (%u entries)",
				qp->rq_size);
	e = mrc_ring_entry(qp->rq, qp->rq_prod, qp->rq_size - 1, sizeof(*e));
	e->wr_id = wr->wr_id;
	e->num_sge = wr->num_sge;
	memcpy(e->sge, wr->sg_list, sizeof(struct mr_sge) * wr->num_sge);
	qp->rq_prod++;
	return 0;
}

int mrc_post_recv(struct mrc_qp *qp, const struct mr_recv_wr *wr)
{
	int rc;

	if (qp == NULL)
		return -EINVAL;
	rc = rq_write(qp, wr);
	if (rc == 0)
		publish(qp, qp->rq, qp->rq_prod);
	return rc;
}

int mrc_post_recv_batch(struct mrc_qp *qp, const struct mr_recv_wr *wrs, int n)
{
	int i, rc = 0;

	if (qp == NULL || n < 0 || (wrs == NULL && n > 0))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		rc = rq_write(qp, &wrs[i]);
		if (rc < 0)
			break;
	}
	if (i > 0)
		publish(qp, qp->rq, qp->rq_prod);
	return i > 0 ? i : rc;
}
