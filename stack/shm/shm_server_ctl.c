/* SPDX-License-Identifier: MIT
 * shm server control requests: one handler per enum mrc_ctl_op, each validating handles and
 * arguments before calling the backend, plus the reclaim of a whole session.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm_server_priv.h"

#define ACCESS_ALL (MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ | \
		    MR_ACCESS_REMOTE_ATOMIC)

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

/* A sealed memfd for rings: the app cannot shrink it under the daemon's mapping (SIGBUS). */
static int ring_memfd(const char *name, size_t bytes, void **map)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	int e;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)bytes) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		goto fail;
	*map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (*map == MAP_FAILED)
		goto fail;
	return fd;
fail:
	e = errno;
	close(fd);
	return -e;
}

static void ring_init(struct mrc_ring_hdr *r, uint32_t size, uint32_t entry_size)
{
	r->magic = MRC_RING_MAGIC;
	r->size = size;
	r->entry_size = entry_size;
	atomic_store_explicit(&r->prod, 0, memory_order_relaxed);
	atomic_store_explicit(&r->cons, 0, memory_order_relaxed);
}

/* The CQ wake-up is the daemon's end of an AF_UNIX datagram socket pair. The engine only
 * ever sends on it with MSG_DONTWAIT (cq_notify()), which cannot block whatever the app does
 * with the file status flags (an eventfd's O_NONBLOCK is shared with the app, which could
 * clear it between a check and the write). Reading is shut down, so the app cannot queue
 * data towards the daemon either. */
static bool wakeup_sock_ok(int fd)
{
	int dom = 0, type = 0;
	socklen_t l1 = sizeof(dom), l2 = sizeof(type);

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l1) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l2) < 0 || dom != AF_UNIX ||
	    type != SOCK_DGRAM)
		return false;
	(void)shutdown(fd, SHUT_RD);
	return true;
}

static int do_hello(struct mr_shm_session *s, const struct mrc_ctl_req *req,
		    struct mrc_ctl_resp *resp, int *out_fd)
{
	resp->u.hello.abi_version = MRC_ABI_VERSION;
	if (req->u.hello.abi_version != MRC_ABI_VERSION)
		return -EPROTO;
	if (s->hello_done)
		return -EALREADY; /* one HELLO per session (it may hand out the doorbell) */
	s->pid = req->u.hello.pid;
	s->hello_done = true;
	resp->u.hello.session_id = s->id;
	resp->u.hello.features = MRC_FEAT_MAP_OFFSET;
	/* The doorbell region, zeroed by ftruncate. Without one (memfd refused) the session is
	 * served by the scan, and the app, not told DOORBELL, does not ring. */
	if (req->u.hello.features & MRC_FEAT_DOORBELL) {
		void *map;
		int fd;

		s->db_again = calloc(1, sizeof(*s->db_again));
		fd = s->db_again != NULL ?
			ring_memfd("metaroce-doorbell", sizeof(struct mrc_doorbell), &map) : -ENOMEM;
		if (fd >= 0) {
			s->db = map;
			*out_fd = fd;
			resp->u.hello.features |= MRC_FEAT_DOORBELL;
			/* The fence-free doorbell: this server's barrier before its last read
			 * of a QP whose bit it cleared (shm_abi.h mrc_db_ring_asym). */
			if ((req->u.hello.features & MRC_FEAT_DB_ASYM) && s->srv->db_asym) {
				s->db_pend = calloc(1, sizeof(*s->db_pend));
				if (s->db_pend != NULL)
					resp->u.hello.features |= MRC_FEAT_DB_ASYM;
			}
		} else {
			free(s->db_again);
			s->db_again = NULL;
		}
	}
	return 0;
}

static int do_query_port(struct mr_shm_session *s, struct mrc_ctl_resp *resp)
{
	struct mr_shm_server *srv = s->srv;

	if (srv->ops->query_port == NULL) {
		resp->u.port.state = MRC_PORT_DOWN;
		return 0;
	}
	return srv->ops->query_port(srv->be, &resp->u.port);
}

static int do_alloc_pd(struct mr_shm_session *s, struct mrc_ctl_resp *resp)
{
	struct mr_shm_server *srv = s->srv;
	struct mr_shm_pd *pd;
	int rc;

	if (srv->q_pd && s->n_pd >= srv->q_pd)
		return -EDQUOT;
	pd = calloc(1, sizeof(*pd));
	if (pd == NULL)
		return -ENOMEM;
	rc = srv->ops->alloc_pd(srv->be, &pd->be);
	if (rc < 0) {
		free(pd);
		return rc;
	}
	pd->handle = mr_shm_htab_add(&s->h, MR_SHM_OBJ_PD, pd);
	if (pd->handle == 0) {
		if (srv->ops->dealloc_pd != NULL)
			srv->ops->dealloc_pd(srv->be, pd->be);
		free(pd);
		return -ENOSPC;
	}
	s->n_pd++;
	resp->u.obj.handle = pd->handle;
	return 0;
}

static int do_dealloc_pd(struct mr_shm_session *s, uint32_t handle)
{
	struct mr_shm_server *srv = s->srv;
	struct mr_shm_pd *pd = mr_shm_htab_get(&s->h, handle, MR_SHM_OBJ_PD);
	int rc;

	if (pd == NULL)
		return -ENOENT;
	if (pd->refs > 0)
		return -EBUSY;
	if (srv->ops->dealloc_pd != NULL) {
		rc = srv->ops->dealloc_pd(srv->be, pd->be);
		if (rc < 0)
			return rc;
	}
	mr_shm_htab_del(&s->h, handle, MR_SHM_OBJ_PD);
	free(pd);
	s->n_pd--;
	return 0;
}

static int do_map_buf(struct mr_shm_session *s, const struct mrc_ctl_req *req, int fd,
		      struct mrc_ctl_resp *resp)
{
	uint64_t len = req->u.map_buf.len, addr = req->u.map_buf.app_addr;
	uint64_t foff = req->u.map_buf.file_offset;
	long page = sysconf(_SC_PAGESIZE);
	struct mr_shm_buf *b;
	struct stat st;
	int seals;

	if (len == 0 || len % (uint64_t)page != 0 || addr % (uint64_t)page != 0 ||
	    addr + len < addr || len > SIZE_MAX || foff % (uint64_t)page != 0 ||
	    foff + len < foff || foff + len > (uint64_t)INT64_MAX)
		return -EINVAL;
	if (len > s->srv->max_session_bytes - s->mapped_bytes)
		return -ENOSPC;
	/* Without F_SEAL_SHRINK the app could truncate the file and crash the daemon. */
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		return -EPERM;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < foff + len)
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (b == NULL)
		return -ENOMEM;
	/* A window of a larger memfd: libibverbs keeps one sparse memfd per session whose file
	 * offsets are the app's virtual addresses (stack/verbs/mem_remap.c). */
	b->host = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)foff);
	if (b->host == MAP_FAILED) {
		int e = errno;

		free(b);
		return -e;
	}
	b->app_addr = addr;
	b->len = len;
	b->handle = mr_shm_htab_add(&s->h, MR_SHM_OBJ_BUF, b);
	if (b->handle == 0) {
		munmap(b->host, (size_t)len);
		free(b);
		return -ENOSPC;
	}
	s->mapped_bytes += len;
	resp->u.obj.handle = b->handle;
	return 0;
}

static void buf_free(struct mr_shm_session *s, struct mr_shm_buf *b)
{
	munmap(b->host, (size_t)b->len);
	s->mapped_bytes -= b->len;
	free(b);
}

static int do_unmap_buf(struct mr_shm_session *s, uint32_t handle)
{
	struct mr_shm_buf *b = mr_shm_htab_get(&s->h, handle, MR_SHM_OBJ_BUF);

	if (b == NULL)
		return -ENOENT;
	if (b->refs > 0)
		return -EBUSY;
	mr_shm_htab_del(&s->h, handle, MR_SHM_OBJ_BUF);
	buf_free(s, b);
	return 0;
}

/* Chains mr into the session's lkey hash, doubling the table past two MRs per chain. */
static int mr_hash_add(struct mr_shm_session *s, struct mr_shm_mr *mr)
{
	if (s->mr_hash == NULL || s->n_mr + 1 > 2 * (s->mr_hash_mask + 1)) {
		uint32_t n = s->mr_hash == NULL ? 64 : 2 * (s->mr_hash_mask + 1);
		struct mr_shm_mr **t = calloc(n, sizeof(*t));

		if (t == NULL)
			return -ENOMEM;
		for (struct mr_shm_mr *m = s->mrs; m != NULL; m = m->next) {
			uint32_t h = mr_shm_lkey_hash(m->lkey, n - 1);

			m->hnext = t[h];
			t[h] = m;
		}
		free(s->mr_hash);
		s->mr_hash = t;
		s->mr_hash_mask = n - 1;
	}
	mr->hnext = s->mr_hash[mr_shm_lkey_hash(mr->lkey, s->mr_hash_mask)];
	s->mr_hash[mr_shm_lkey_hash(mr->lkey, s->mr_hash_mask)] = mr;
	return 0;
}

static void mr_hash_del(struct mr_shm_session *s, struct mr_shm_mr *mr)
{
	struct mr_shm_mr **pp;

	if (s->mr_hash == NULL)
		return;
	for (pp = &s->mr_hash[mr_shm_lkey_hash(mr->lkey, s->mr_hash_mask)]; *pp != NULL;
	     pp = &(*pp)->hnext) {
		if (*pp == mr) {
			*pp = mr->hnext;
			break;
		}
	}
}

static int do_reg_mr(struct mr_shm_session *s, const struct mrc_ctl_req *req,
		     struct mrc_ctl_resp *resp)
{
	struct mr_shm_server *srv = s->srv;
	struct mr_shm_pd *pd = mr_shm_htab_get(&s->h, req->u.reg_mr.pd, MR_SHM_OBJ_PD);
	struct mr_shm_buf *b = mr_shm_htab_get(&s->h, req->u.reg_mr.buf, MR_SHM_OBJ_BUF);
	uint64_t off = req->u.reg_mr.offset, len = req->u.reg_mr.len;
	uint32_t access = req->u.reg_mr.access;
	struct mr_shm_mr *mr;
	int rc;

	if (pd == NULL || b == NULL)
		return -ENOENT;
	if (len == 0 || off > b->len || len > b->len - off)
		return -EFAULT;
	/* IBA 10.6.3.1 (C10-23): remote write/atomic access requires local write. */
	if ((access & ~(uint32_t)ACCESS_ALL) != 0 ||
	    ((access & (MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_ATOMIC)) &&
	     !(access & MR_ACCESS_LOCAL_WRITE)))
		return -EINVAL;
	if (srv->q_mr && s->n_mr >= srv->q_mr)
		return -EDQUOT;
	mr = calloc(1, sizeof(*mr));
	if (mr == NULL)
		return -ENOMEM;
	mr->iova = b->app_addr + off;
	mr->len = len;
	mr->access = access;
	rc = srv->ops->reg_mr(srv->be, pd->be, (uint8_t *)b->host + off, mr->iova, len, access,
			      &mr->be, &mr->lkey, &mr->rkey);
	if (rc < 0) {
		free(mr);
		return rc;
	}
	mr->handle = mr_shm_htab_add(&s->h, MR_SHM_OBJ_MR, mr);
	rc = mr->handle == 0 ? -ENOSPC : mr_hash_add(s, mr);
	if (rc < 0) {
		if (mr->handle != 0)
			mr_shm_htab_del(&s->h, mr->handle, MR_SHM_OBJ_MR);
		srv->ops->dereg_mr(srv->be, mr->be);
		free(mr);
		return rc;
	}
	mr->pd = pd;
	mr->buf = b;
	pd->refs++;
	b->refs++;
	mr->next = s->mrs;
	s->mrs = mr;
	s->n_mr++;
	resp->u.reg_mr.handle = mr->handle;
	resp->u.reg_mr.lkey = mr->lkey;
	resp->u.reg_mr.rkey = mr->rkey;
	return 0;
}

static int mr_release(struct mr_shm_session *s, struct mr_shm_mr *mr)
{
	struct mr_shm_mr **pp;
	int rc = s->srv->ops->dereg_mr(s->srv->be, mr->be);

	if (rc < 0)
		return rc;
	for (pp = &s->mrs; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == mr) {
			*pp = mr->next;
			break;
		}
	}
	if (s->last_mr == mr)
		s->last_mr = NULL;
	mr_hash_del(s, mr);
	mr->pd->refs--;
	mr->buf->refs--;
	mr_shm_htab_del(&s->h, mr->handle, MR_SHM_OBJ_MR);
	free(mr);
	s->n_mr--;
	return 0;
}

static int do_dereg_mr(struct mr_shm_session *s, uint32_t handle)
{
	struct mr_shm_mr *mr = mr_shm_htab_get(&s->h, handle, MR_SHM_OBJ_MR);

	return mr == NULL ? -ENOENT : mr_release(s, mr);
}

static int do_create_cq(struct mr_shm_session *s, const struct mrc_ctl_req *req, int evfd,
			struct mrc_ctl_resp *resp, int *out_fd)
{
	struct mr_shm_server *srv = s->srv;
	uint32_t depth = req->u.create_cq.depth;
	struct mr_shm_cq *cq;
	int rc, fd;

	if (depth == 0 || depth > MRC_RING_MAX_ENTRIES)
		return -EINVAL;
	if (!wakeup_sock_ok(evfd))
		return -EBADF;
	if ((srv->q_cq && s->n_cq >= srv->q_cq) ||
	    (srv->q_wr && pow2_at_least(depth) > srv->q_wr - s->n_wr))
		return -EDQUOT;
	cq = calloc(1, sizeof(*cq));
	if (cq == NULL)
		return -ENOMEM;
	cq->size = pow2_at_least(depth);
	cq->mask = cq->size - 1;
	cq->map_len = mrc_ring_bytes(cq->size, sizeof(struct mrc_cqe));
	fd = ring_memfd("metaroce-cq", cq->map_len, &cq->map);
	if (fd < 0) {
		free(cq);
		return fd;
	}
	cq->ring = cq->map;
	ring_init(cq->ring, cq->size, sizeof(struct mrc_cqe));
	rc = srv->ops->create_cq(srv->be, cq->size, &cq->be);
	if (rc < 0)
		goto fail;
	cq->handle = mr_shm_htab_add(&s->h, MR_SHM_OBJ_CQ, cq);
	if (cq->handle == 0) {
		srv->ops->destroy_cq(srv->be, cq->be);
		rc = -ENOSPC;
		goto fail;
	}
	cq->evfd = evfd;
	/* Kept in creation order: one session pass drains (and wakes) its CQs in this order.
	 * When completions of two CQs sharing a completion channel land in one pass, the one
	 * created first wakes first: perftest -e creates its send CQ first and, on one channel,
	 * expects the send completion's event before the next receive's (the wire order). */
	{
		struct mr_shm_cq **tail = &s->cqs;

		while (*tail != NULL)
			tail = &(*tail)->next;
		cq->next = NULL;
		*tail = cq;
	}
	s->n_cq++;
	s->n_wr += cq->size;
	resp->u.create_cq.handle = cq->handle;
	resp->u.create_cq.size = cq->size;
	resp->u.create_cq.map_len = cq->map_len;
	*out_fd = fd;
	return 0;
fail:
	munmap(cq->map, cq->map_len);
	close(fd);
	free(cq);
	return rc;
}

static int cq_release(struct mr_shm_session *s, struct mr_shm_cq *cq)
{
	struct mr_shm_cq **pp;
	int rc = s->srv->ops->destroy_cq(s->srv->be, cq->be);

	if (rc < 0)
		return rc;
	for (pp = &s->cqs; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == cq) {
			*pp = cq->next;
			break;
		}
	}
	munmap(cq->map, cq->map_len);
	close(cq->evfd);
	mr_shm_htab_del(&s->h, cq->handle, MR_SHM_OBJ_CQ);
	s->n_cq--;
	s->n_wr -= cq->size;
	free(cq);
	return 0;
}

static int do_destroy_cq(struct mr_shm_session *s, uint32_t handle)
{
	struct mr_shm_cq *cq = mr_shm_htab_get(&s->h, handle, MR_SHM_OBJ_CQ);

	if (cq == NULL)
		return -ENOENT;
	if (cq->refs > 0)
		return -EBUSY;
	return cq_release(s, cq);
}

static int do_create_qp(struct mr_shm_session *s, const struct mrc_ctl_req *req,
			struct mrc_ctl_resp *resp, int *out_fd)
{
	struct mr_shm_server *srv = s->srv;
	const __typeof__(req->u.create_qp) *c = &req->u.create_qp;
	struct mr_shm_pd *pd = mr_shm_htab_get(&s->h, c->pd, MR_SHM_OBJ_PD);
	struct mr_shm_cq *scq = mr_shm_htab_get(&s->h, c->send_cq, MR_SHM_OBJ_CQ);
	struct mr_shm_cq *rcq = mr_shm_htab_get(&s->h, c->recv_cq, MR_SHM_OBJ_CQ);
	struct mr_shm_srq *srq = NULL;
	struct mr_shm_qp *qp;
	size_t sq_bytes;
	int rc, fd;

	if (pd == NULL || scq == NULL || rcq == NULL)
		return -ENOENT;
	if (c->srq != 0) {
		srq = mr_shm_htab_get(&s->h, c->srq, MR_SHM_OBJ_SRQ);
		if (srq == NULL)
			return -ENOENT;
		if (srq->pd != pd)
			return -EINVAL; /* the transport binds SRQ receives in the QP's PD */
	}
	if (c->qp_type != MRC_QPT_RC)
		return -EOPNOTSUPP;
	if (c->max_send_wr == 0 || c->max_send_wr > MRC_RING_MAX_ENTRIES ||
	    c->max_recv_wr > MRC_RING_MAX_ENTRIES || c->max_send_sge > MRC_SQE_MAX_SGE ||
	    c->max_recv_sge > MRC_RQE_MAX_SGE || c->max_inline_data > MRC_SQE_INLINE_MAX)
		return -EINVAL;
	{
		/* Quotas on what the engine commits for this QP (queues sized after rounding). */
		uint64_t wrs = (uint64_t)pow2_at_least(c->max_send_wr) +
			       pow2_at_least(c->max_recv_wr ? c->max_recv_wr : 1);
		uint64_t inl = (uint64_t)pow2_at_least(c->max_send_wr) * c->max_inline_data;

		if ((srv->q_qp && s->n_qp >= srv->q_qp) ||
		    (srv->q_wr && wrs > srv->q_wr - s->n_wr) ||
		    (srv->q_inline && inl > srv->q_inline - s->n_inline))
			return -EDQUOT;
	}
	qp = calloc(1, sizeof(*qp));
	if (qp == NULL)
		return -ENOMEM;
	qp->sq_size = pow2_at_least(c->max_send_wr);
	qp->rq_size = pow2_at_least(c->max_recv_wr ? c->max_recv_wr : 1);
	qp->caps.max_send_wr = qp->sq_size;
	qp->caps.max_recv_wr = qp->rq_size;
	qp->caps.max_send_sge = c->max_send_sge ? c->max_send_sge : 1;
	qp->caps.max_recv_sge = c->max_recv_sge ? c->max_recv_sge : 1;
	qp->caps.max_inline_data = c->max_inline_data;
	qp->caps.sq_sig_all = c->sq_sig_all != 0;
	qp->caps.srq = srq != NULL ? srq->be : NULL;
	sq_bytes = mrc_ring_bytes(qp->sq_size, sizeof(struct mrc_sqe));
	qp->map_len = sq_bytes + mrc_ring_bytes(qp->rq_size, sizeof(struct mrc_rqe));
	fd = ring_memfd("metaroce-qp", qp->map_len, &qp->map);
	if (fd < 0) {
		free(qp);
		return fd;
	}
	qp->sq = qp->map;
	qp->rq = (struct mrc_ring_hdr *)((uint8_t *)qp->map + sq_bytes);
	ring_init(qp->sq, qp->sq_size, sizeof(struct mrc_sqe));
	ring_init(qp->rq, qp->rq_size, sizeof(struct mrc_rqe));
	rc = srv->ops->create_qp(srv->be, pd->be, scq->be, rcq->be, &qp->caps, &qp->be,
				 &qp->qp_num);
	if (rc < 0)
		goto fail;
	qp->handle = mr_shm_htab_add(&s->h, MR_SHM_OBJ_QP, qp);
	if (qp->handle == 0) {
		srv->ops->destroy_qp(srv->be, qp->be);
		rc = -ENOSPC;
		goto fail;
	}
	qp->pd = pd;
	qp->send_cq = scq;
	qp->recv_cq = rcq;
	qp->srq = srq;
	if (srq != NULL)
		srq->refs++;
	pd->refs++;
	scq->refs++;
	rcq->refs++;
	qp->next = s->qps;
	s->qps = qp;
	s->n_qp++;
	s->n_wr += (uint64_t)qp->sq_size + qp->rq_size;
	s->n_inline += (uint64_t)qp->sq_size * qp->caps.max_inline_data;
	resp->u.create_qp.handle = qp->handle;
	resp->u.create_qp.qp_num = qp->qp_num;
	resp->u.create_qp.sq_size = qp->sq_size;
	resp->u.create_qp.rq_size = qp->rq_size;
	resp->u.create_qp.sq_off = 0;
	resp->u.create_qp.rq_off = sq_bytes;
	resp->u.create_qp.map_len = qp->map_len;
	resp->u.create_qp.max_inline_data = qp->caps.max_inline_data;
	resp->u.create_qp.max_send_sge = qp->caps.max_send_sge;
	resp->u.create_qp.max_recv_sge = qp->caps.max_recv_sge;
	*out_fd = fd;
	return 0;
fail:
	munmap(qp->map, qp->map_len);
	close(fd);
	free(qp);
	return rc;
}

static int qp_release(struct mr_shm_session *s, struct mr_shm_qp *qp)
{
	struct mr_shm_qp **pp;
	int rc = s->srv->ops->destroy_qp(s->srv->be, qp->be);

	if (rc < 0)
		return rc;
	for (pp = &s->qps; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == qp) {
			*pp = qp->next;
			break;
		}
	}
	qp->pd->refs--;
	qp->send_cq->refs--;
	qp->recv_cq->refs--;
	if (qp->srq != NULL)
		qp->srq->refs--;
	munmap(qp->map, qp->map_len);
	mr_shm_htab_del(&s->h, qp->handle, MR_SHM_OBJ_QP);
	s->n_qp--;
	s->n_wr -= (uint64_t)qp->sq_size + qp->rq_size;
	s->n_inline -= (uint64_t)qp->sq_size * qp->caps.max_inline_data;
	free(qp);
	return 0;
}

static int do_modify_qp(struct mr_shm_session *s, const struct mrc_ctl_req *req)
{
	struct mr_shm_qp *qp = mr_shm_htab_get(&s->h, req->u.modify_qp.qp, MR_SHM_OBJ_QP);

	if (qp == NULL)
		return -ENOENT;
	if (req->u.modify_qp.mask == 0 || (req->u.modify_qp.mask & ~MRC_QP_ATTR_MASK_ALL) != 0)
		return -EINVAL;
	if (s->srv->ops->modify_qp == NULL)
		return -EOPNOTSUPP;
	return s->srv->ops->modify_qp(s->srv->be, qp->be, &req->u.modify_qp.attr,
				      req->u.modify_qp.mask);
}

static int do_query_qp(struct mr_shm_session *s, uint32_t handle, struct mrc_ctl_resp *resp)
{
	struct mr_shm_qp *qp = mr_shm_htab_get(&s->h, handle, MR_SHM_OBJ_QP);

	if (qp == NULL)
		return -ENOENT;
	if (s->srv->ops->query_qp == NULL)
		return -EOPNOTSUPP;
	return s->srv->ops->query_qp(s->srv->be, qp->be, &resp->u.qp_attr);
}

static int do_destroy_qp(struct mr_shm_session *s, uint32_t handle)
{
	struct mr_shm_qp *qp = mr_shm_htab_get(&s->h, handle, MR_SHM_OBJ_QP);

	return qp == NULL ? -ENOENT : qp_release(s, qp);
}

/* Descriptors each request must carry. */
/* A shared receive queue: one RQ-format ring the app posts to; the data path hands its
 * entries to the backend SRQ (shm_server_data.c srq_drain). */
static int do_create_srq(struct mr_shm_session *s, const struct mrc_ctl_req *req,
			 struct mrc_ctl_resp *resp, int *out_fd)
{
	struct mr_shm_server *srv = s->srv;
	const __typeof__(req->u.create_srq) *c = &req->u.create_srq;
	struct mr_shm_pd *pd = mr_shm_htab_get(&s->h, c->pd, MR_SHM_OBJ_PD);
	struct mr_shm_srq *q;
	int rc, fd;

	if (pd == NULL)
		return -ENOENT;
	if (srv->ops->create_srq == NULL)
		return -EOPNOTSUPP;
	if (c->max_wr == 0 || c->max_wr > MRC_RING_MAX_ENTRIES || c->max_sge > MRC_RQE_MAX_SGE)
		return -EINVAL;
	q = calloc(1, sizeof(*q));
	if (q == NULL)
		return -ENOMEM;
	q->size = pow2_at_least(c->max_wr);
	q->max_sge = c->max_sge ? c->max_sge : 1;
	q->map_len = mrc_ring_bytes(q->size, sizeof(struct mrc_rqe));
	fd = ring_memfd("metaroce-srq", q->map_len, &q->map);
	if (fd < 0) {
		free(q);
		return fd;
	}
	q->ring = q->map;
	ring_init(q->ring, q->size, sizeof(struct mrc_rqe));
	rc = srv->ops->create_srq(srv->be, pd->be, q->size, &q->be);
	if (rc < 0)
		goto fail;
	q->handle = mr_shm_htab_add(&s->h, MR_SHM_OBJ_SRQ, q);
	if (q->handle == 0) {
		srv->ops->destroy_srq(srv->be, q->be);
		rc = -ENOSPC;
		goto fail;
	}
	q->pd = pd;
	pd->refs++;
	q->next = s->srqs;
	s->srqs = q;
	resp->u.create_srq.handle = q->handle;
	resp->u.create_srq.size = q->size;
	resp->u.create_srq.max_sge = q->max_sge;
	resp->u.create_srq.map_len = q->map_len;
	*out_fd = fd;
	return 0;
fail:
	munmap(q->map, q->map_len);
	close(fd);
	free(q);
	return rc;
}

static int srq_release(struct mr_shm_session *s, struct mr_shm_srq *q)
{
	struct mr_shm_srq **pp;
	int rc;

	if (q->refs > 0)
		return -EBUSY; /* IBA 11.2.3.4: not while QPs are associated with it */
	rc = s->srv->ops->destroy_srq(s->srv->be, q->be);
	if (rc < 0)
		return rc;
	for (pp = &s->srqs; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == q) {
			*pp = q->next;
			break;
		}
	}
	q->pd->refs--;
	munmap(q->map, q->map_len);
	mr_shm_htab_del(&s->h, q->handle, MR_SHM_OBJ_SRQ);
	free(q);
	return 0;
}

static int do_destroy_srq(struct mr_shm_session *s, uint32_t handle)
{
	struct mr_shm_srq *q = mr_shm_htab_get(&s->h, handle, MR_SHM_OBJ_SRQ);

	return q == NULL ? -ENOENT : srq_release(s, q);
}

static unsigned int fds_expected(uint16_t op)
{
	return op == MRC_CTL_MAP_BUF || op == MRC_CTL_CREATE_CQ ? 1 : 0;
}

void mr_shm_ctl_handle(struct mr_shm_session *s, const void *msg, size_t len, int *fds,
		       unsigned int nfds, struct mrc_ctl_resp *resp, int *out_fd)
{
	struct mr_shm_server *srv = s->srv;
	struct mrc_ctl_req req;
	unsigned int i;
	int rc;

	memset(resp, 0, sizeof(*resp));
	resp->hdr.version = MRC_ABI_VERSION;
	*out_fd = -1;
	if (len != sizeof(req)) {
		srv->st.ctl_malformed++;
		resp->hdr.status = -EPROTO;
		goto close_fds;
	}
	memcpy(&req, msg, sizeof(req));
	resp->hdr.op = req.hdr.op;
	resp->hdr.seq = req.hdr.seq;
	if (req.hdr.version != MRC_ABI_VERSION || req.hdr.op == 0 ||
	    req.hdr.op >= MRC_CTL_OP_MAX || nfds != fds_expected(req.hdr.op) ||
	    (!s->hello_done && req.hdr.op != MRC_CTL_HELLO)) {
		srv->st.ctl_malformed++;
		resp->hdr.status = nfds != fds_expected(req.hdr.op) ? -EBADF : -EPROTO;
		goto close_fds;
	}
	srv->st.ctl_requests++;
	switch (req.hdr.op) {
	case MRC_CTL_HELLO:
		rc = do_hello(s, &req, resp, out_fd);
		break;
	case MRC_CTL_QUERY_PORT:
		rc = do_query_port(s, resp);
		break;
	case MRC_CTL_ALLOC_PD:
		rc = do_alloc_pd(s, resp);
		break;
	case MRC_CTL_DEALLOC_PD:
		rc = do_dealloc_pd(s, req.u.obj.handle);
		break;
	case MRC_CTL_MAP_BUF:
		rc = do_map_buf(s, &req, fds[0], resp);
		close(fds[0]); /* the mapping keeps the memory */
		nfds = 0;
		break;
	case MRC_CTL_UNMAP_BUF:
		rc = do_unmap_buf(s, req.u.obj.handle);
		break;
	case MRC_CTL_REG_MR:
		rc = do_reg_mr(s, &req, resp);
		break;
	case MRC_CTL_DEREG_MR:
		rc = do_dereg_mr(s, req.u.obj.handle);
		break;
	case MRC_CTL_CREATE_CQ:
		rc = do_create_cq(s, &req, fds[0], resp, out_fd);
		if (rc == 0)
			nfds = 0; /* the CQ keeps the wake-up socket */
		break;
	case MRC_CTL_DESTROY_CQ:
		rc = do_destroy_cq(s, req.u.obj.handle);
		break;
	case MRC_CTL_CREATE_QP:
		rc = do_create_qp(s, &req, resp, out_fd);
		break;
	case MRC_CTL_MODIFY_QP:
		rc = do_modify_qp(s, &req);
		break;
	case MRC_CTL_QUERY_QP:
		rc = do_query_qp(s, req.u.obj.handle, resp);
		break;
	case MRC_CTL_DESTROY_QP:
		rc = do_destroy_qp(s, req.u.obj.handle);
		break;
	case MRC_CTL_CREATE_SRQ:
		rc = do_create_srq(s, &req, resp, out_fd);
		break;
	case MRC_CTL_DESTROY_SRQ:
		rc = do_destroy_srq(s, req.u.obj.handle);
		break;
	default:
		rc = -EOPNOTSUPP;
		break;
	}
	resp->hdr.status = rc;
	if (rc < 0)
		srv->st.ctl_errors++;
	if (req.hdr.op == MRC_CTL_HELLO && rc < 0)
		s->closing = true; /* version mismatch: answer, then hang up */
close_fds:
	for (i = 0; i < nfds; i++)
		close(fds[i]);
}

void mr_shm_session_reclaim(struct mr_shm_session *s)
{
	struct mr_shm_server *srv = s->srv;
	uint32_t i;

	/* QPs first: to ERR (IBA 10.3.1: flushes outstanding WRs, stops the wire), then gone. */
	while (s->qps != NULL) {
		struct mr_shm_qp *qp = s->qps;

		if (srv->ops->modify_qp != NULL) {
			struct mrc_qp_attr a = { .qp_state = MR_QPS_ERR };

			srv->ops->modify_qp(srv->be, qp->be, &a, MRC_QP_STATE);
		}
		if (qp_release(s, qp) < 0) {
			/* Backend refused: forget the object rather than loop forever. */
			s->qps = qp->next;
			munmap(qp->map, qp->map_len);
			free(qp);
		}
	}
	while (s->srqs != NULL) { /* after the QPs that used them */
		struct mr_shm_srq *q = s->srqs;

		if (srq_release(s, q) < 0) {
			s->srqs = q->next;
			q->pd->refs--;
			munmap(q->map, q->map_len);
			free(q);
		}
	}
	while (s->mrs != NULL) {
		struct mr_shm_mr *mr = s->mrs;

		if (mr_release(s, mr) < 0) {
			s->mrs = mr->next;
			s->last_mr = NULL;
			mr_hash_del(s, mr);
			free(mr);
		}
	}
	while (s->cqs != NULL) {
		struct mr_shm_cq *cq = s->cqs;

		if (cq_release(s, cq) < 0) {
			s->cqs = cq->next;
			munmap(cq->map, cq->map_len);
			close(cq->evfd);
			free(cq);
		}
	}
	/* PDs and buffers have no list: walk the handle table. */
	for (i = 0; i < s->h.cap; i++) {
		struct mr_shm_hslot *sl = &s->h.slot[i];

		if (sl->type == MR_SHM_OBJ_PD) {
			struct mr_shm_pd *pd = sl->obj;

			if (srv->ops->dealloc_pd != NULL)
				srv->ops->dealloc_pd(srv->be, pd->be);
			free(pd);
		} else if (sl->type == MR_SHM_OBJ_BUF) {
			buf_free(s, sl->obj);
		} else {
			continue;
		}
		sl->type = MR_SHM_OBJ_NONE;
		sl->obj = NULL;
	}
}
