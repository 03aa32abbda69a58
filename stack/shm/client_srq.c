/* SPDX-License-Identifier: MIT
 * libmetaroce: shared receive queues. Create/destroy are control requests; mrc_post_srq_recv
 * writes one entry into the SRQ's ring (same entry format as a QP's RQ ring), which the daemon
 * hands to the transport's SRQ (stack/transport/rc_srq.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "client_priv.h"

struct mrc_srq *mrc_create_srq(struct mrc_pd *pd, uint32_t max_wr, uint32_t max_sge)
{
	struct mrc_ctl_req req;
	struct mrc_ctl_resp resp;
	struct mrc_session *s;
	struct mrc_srq *q;
	int rc, fd = -1;

	if (pd == NULL) {
		errno = EINVAL;
		return NULL;
	}
	s = pd->o.s;
	if (max_wr == 0 || max_wr > MRC_RING_MAX_ENTRIES || max_sge > MRC_RQE_MAX_SGE) {
		errno = -mrc_fail(s, EINVAL, "mrc_create_srq: max_wr 1..%u, max_sge <= %u",
				  MRC_RING_MAX_ENTRIES, MRC_RQE_MAX_SGE);
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	if (q == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	memset(&req, 0, sizeof(req));
	req.u.create_srq.pd = pd->o.handle;
	req.u.create_srq.max_wr = max_wr;
	req.u.create_srq.max_sge = max_sge;
	rc = mrc_rpc(s, MRC_CTL_CREATE_SRQ, &req, -1, &resp, &fd);
	if (rc < 0)
		goto fail;
	q->o.handle = resp.u.create_srq.handle;
	q->size = resp.u.create_srq.size;
	q->max_sge = resp.u.create_srq.max_sge;
	q->map_len = (size_t)resp.u.create_srq.map_len;
	if (fd < 0 || q->size == 0 || (q->size & (q->size - 1)) != 0 ||
	    mrc_ring_bytes(q->size, sizeof(struct mrc_rqe)) > q->map_len) {
		rc = mrc_fail(s, EPROTO, "mrc_create_srq: malformed answer from the daemon");
		goto fail_destroy;
	}
	q->map = mmap(NULL, q->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (q->map == MAP_FAILED) {
		rc = mrc_fail(s, errno, "mrc_create_srq: mmap ring: %s", strerror(errno));
		goto fail_destroy;
	}
	close(fd);
	q->ring = q->map;
	q->pd = pd;
	mrc_obj_link(s, &q->o, MRC_OBJ_SRQ, q->o.handle);
	return q;
fail_destroy:
	memset(&req, 0, sizeof(req));
	req.u.obj.handle = q->o.handle;
	mrc_rpc(s, MRC_CTL_DESTROY_SRQ, &req, -1, &resp, NULL);
fail:
	if (fd >= 0)
		close(fd);
	free(q);
	errno = -rc;
	return NULL;
}

int mrc_destroy_srq(struct mrc_srq *q)
{
	struct mrc_ctl_req req;
	struct mrc_ctl_resp resp;
	int rc;

	if (q == NULL)
		return -EINVAL;
	if (q->qp_refs > 0)
		return mrc_fail(q->o.s, EBUSY, "mrc_destroy_srq: %u QP(s) still use this SRQ",
				q->qp_refs);
	memset(&req, 0, sizeof(req));
	req.u.obj.handle = q->o.handle;
	rc = mrc_rpc(q->o.s, MRC_CTL_DESTROY_SRQ, &req, -1, &resp, NULL);
	if (rc < 0)
		return rc;
	mrc_obj_unlink(&q->o);
	mrc_obj_free(&q->o);
	return 0;
}

int mrc_post_srq_recv(struct mrc_srq *q, const struct mr_recv_wr *wr)
{
	struct mrc_rqe *e;

	if (q == NULL)
		return -EINVAL;
	if (wr == NULL)
		return mrc_fail(q->o.s, EINVAL, "mrc_post_srq_recv: wr is NULL");
	if (wr->num_sge > q->max_sge)
		return mrc_fail(q->o.s, EINVAL, "mrc_post_srq_recv: %u SGEs, SRQ allows %u",
				wr->num_sge, q->max_sge);
	if (mrc_ring_free_seen(q->ring, q->prod, q->size, &q->cons_seen, 1) == 0)
		return mrc_fail(q->o.s, ENOMEM, "mrc_post_srq_recv: SRQ full (%u entries)",
				q->size);
	e = mrc_ring_entry(q->ring, q->prod, q->size - 1, sizeof(*e));
	e->wr_id = wr->wr_id;
	e->num_sge = wr->num_sge;
	memcpy(e->sge, wr->sg_list, sizeof(struct mr_sge) * wr->num_sge);
	q->prod++;
	mrc_ring_publish(q->ring, q->prod);
	mrc_embed_note_post();
	return 0;
}

uint32_t mrc_srq_size(const struct mrc_srq *q)
{
	return q != NULL ? q->size : 0;
}
