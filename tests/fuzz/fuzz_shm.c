/* SPDX-License-Identifier: MIT
 * Fuzz target: the shm server's ring consumer (stack/shm/shm_server_data.c). The app owns the
 * ring memory, so the input writes it: SQ/RQ entries, the published producer indices, the CQ
 * rings' consumer indices and notification words, plus the backend's answers (post results,
 * completions offered). A session with two PDs, MRs in both (one read-only) and one QP of
 * each PD is built directly from the server's private structs, with a recording backend.
 *
 * Invariants besides ASan/UBSan: every WR handed to the backend has num_sge within the QP's
 * caps and every SGE inside an MR of the same session and PD (local write access where the
 * engine will write: receives, READ, atomics); inline payloads within max_inline_data; the
 * server never asks poll_cq for more completions than the CQ ring has room for, never
 * publishes more entries than the ring holds, and its private consumer index never passes
 * what the app published (or the QP is marked broken).
 *
 * Half the inputs (first byte odd) run the session with a doorbell (shm_abi.h): its QPs are
 * in the handle table beside a PD and an MR (slots of other types), and the input writes any
 * summary and leaf words as well as ringing the real slots.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "fz_transport.h"
#include "shm/shm_server_priv.h"

#define NQP 2
#define RING 4u
#define CQ_RING 8u

struct fz_be {
	const uint8_t *p;
	size_t n;
	struct mr_shm_session *s;
	struct mr_shm_qp *qp[NQP];
	struct mr_shm_cq *cq[NQP];
	int pd_tag[2];
	uint64_t wr_ids;
};

static struct fz_be be;

static void die(const char *why)
{
	fprintf(stderr, "INVARIANT VIOLATED: %s\n", why);
	abort();
}

static uint8_t in8(void)
{
	if (be.n == 0)
		return 0;
	be.n--;
	return *be.p++;
}

static uint32_t in32(void)
{
	return (uint32_t)in8() | (uint32_t)in8() << 8 | (uint32_t)in8() << 16 |
	       (uint32_t)in8() << 24;
}

static struct mr_shm_qp *qp_of(void *q)
{
	for (int i = 0; i < NQP; i++)
		if (be.qp[i] != NULL && be.qp[i]->be == q)
			return be.qp[i];
	die("backend called for an unknown QP");
	return NULL;
}

static void check_sges(const struct mr_shm_qp *qp, const struct mr_sge *sg, uint32_t n,
		       bool write)
{
	for (uint32_t i = 0; i < n; i++) {
		const struct mr_shm_mr *mr;

		if (sg[i].length == 0)
			continue;
		for (mr = be.s->mrs; mr != NULL; mr = mr->next)
			if (mr->lkey == sg[i].lkey)
				break;
		if (mr == NULL)
			die("SGE with an lkey of no MR of this session reached the backend");
		if (mr->pd != qp->pd)
			die("SGE with an lkey of another PD reached the backend");
		if (write && !(mr->access & MR_ACCESS_LOCAL_WRITE))
			die("engine-written SGE without local write access reached the backend");
		if (sg[i].addr < mr->iova || sg[i].length > mr->len ||
		    sg[i].addr - mr->iova > mr->len - sg[i].length)
			die("SGE outside its MR reached the backend");
	}
}

static int be_result(void)
{
	static const int rcs[] = { 0, 0, 0, 0, -ENOMEM, -EAGAIN, -EINVAL, -EIO };

	return rcs[in8() & 7];
}

static int fz_post_send(void *b, void *q, const struct mr_send_wr *wr)
{
	struct mr_shm_qp *qp = qp_of(q);
	bool local_write = wr->opcode == MR_WR_RDMA_READ ||
			   wr->opcode == MR_WR_ATOMIC_CMP_AND_SWP ||
			   wr->opcode == MR_WR_ATOMIC_FETCH_AND_ADD;

	(void)b;
	if (wr->send_flags & MR_SEND_INLINE) {
		if (wr->num_sge > 1 || (wr->num_sge && wr->sg_list[0].length >
						       qp->caps.max_inline_data))
			die("inline WR longer than max_inline_data reached the backend");
		if (local_write)
			die("inline READ/atomic reached the backend");
		if (wr->num_sge)
			be.wr_ids += ((const uint8_t *)(uintptr_t)wr->sg_list[0].addr)
				[wr->sg_list[0].length ? wr->sg_list[0].length - 1 : 0];
	} else {
		if (wr->num_sge > qp->caps.max_send_sge)
			die("send WR with more SGEs than the QP's caps reached the backend");
		check_sges(qp, wr->sg_list, wr->num_sge, local_write);
	}
	return be_result();
}

static int fz_post_recv(void *b, void *q, const struct mr_recv_wr *wr)
{
	struct mr_shm_qp *qp = qp_of(q);

	(void)b;
	if (wr->num_sge > qp->caps.max_recv_sge)
		die("receive WR with more SGEs than the QP's caps reached the backend");
	check_sges(qp, wr->sg_list, wr->num_sge, true);
	return be_result();
}

static int fz_poll_cq(void *b, void *c, int n, struct mr_wc *wc)
{
	int k = in8() % 9, i;

	(void)b;
	for (i = 0; i < NQP; i++)
		if (be.cq[i] != NULL && be.cq[i]->be == c)
			break;
	if (i == NQP)
		die("poll_cq for an unknown CQ");
	if (n <= 0 || (uint32_t)n > mrc_ring_free(be.cq[i]->ring, be.cq[i]->prod, be.cq[i]->size))
		die("poll_cq asked for more completions than the CQ ring has room for");
	if (k > n)
		k = n;
	for (int j = 0; j < k; j++) {
		memset(&wc[j], 0, sizeof(wc[j]));
		wc[j].wr_id = in32();
		wc[j].status = (enum mr_wc_status)(in8() % 22);
		wc[j].opcode = (in8() & 1) ? MR_WC_RECV : MR_WC_SEND;
		wc[j].byte_len = in32();
	}
	return k;
}

static const struct mr_shm_backend_ops fz_ops = {
	.post_send = fz_post_send,
	.post_recv = fz_post_recv,
	.poll_cq = fz_poll_cq,
};

static struct mrc_ring_hdr *ring_new(uint32_t size, uint32_t esz)
{
	size_t bytes = mrc_ring_bytes(size, esz);
	struct mrc_ring_hdr *r = aligned_alloc(MRC_CACHE_LINE, bytes);

	if (r == NULL)
		die("out of memory");
	memset(r, 0, bytes);
	r->magic = MRC_RING_MAGIC;
	r->size = size;
	r->entry_size = esz;
	return r;
}

static void fill_bytes(void *dst, size_t n)
{
	uint8_t *d = dst;

	for (size_t i = 0; i < n; i++)
		d[i] = in8();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int evfd = -1;
	struct mr_shm_server srv;
	struct mr_shm_session s;
	struct mr_shm_pd pd[2];
	struct mr_shm_mr mr[4];
	struct mr_shm_cq cq[NQP];
	struct mr_shm_qp qp[NQP];
	int qp_be[NQP], cq_be[NQP];
	bool use_db;

	if (evfd < 0)
		evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	memset(&be, 0, sizeof(be));
	be.p = data;
	be.n = size;
	use_db = in8() & 1;
	memset(&srv, 0, sizeof(srv));
	srv.ops = &fz_ops;
	srv.be = &be;
	memset(&s, 0, sizeof(s));
	s.srv = &srv;
	be.s = &s;
	memset(pd, 0, sizeof(pd));
	memset(mr, 0, sizeof(mr));
	/* MRs: PD0 read-write, PD0 read-only, PD1 read-write, PD1 zero-length. */
	for (int i = 0; i < 4; i++) {
		mr[i].pd = &pd[i / 2];
		mr[i].lkey = 0x100u * (uint32_t)(i + 1) + 7;
		mr[i].iova = 0x10000000ull * (uint64_t)(i + 1) + (i == 2 ? 0xfffff000ull : 0);
		mr[i].len = i == 3 ? 0 : 4096;
		mr[i].access = i == 1 ? MR_ACCESS_REMOTE_READ : MR_ACCESS_LOCAL_WRITE;
		mr[i].next = i < 3 ? &mr[i + 1] : NULL;
	}
	s.mrs = &mr[0];
	for (int i = 0; i < NQP; i++) {
		memset(&cq[i], 0, sizeof(cq[i]));
		cq[i].be = &cq_be[i];
		cq[i].evfd = evfd;
		cq[i].ring = ring_new(CQ_RING, sizeof(struct mrc_cqe));
		cq[i].size = CQ_RING;
		cq[i].mask = CQ_RING - 1;
		cq[i].next = i + 1 < NQP ? &cq[i + 1] : NULL;
		be.cq[i] = &cq[i];

		memset(&qp[i], 0, sizeof(qp[i]));
		qp[i].be = &qp_be[i];
		qp[i].qp_num = 0x20 + (uint32_t)i;
		qp[i].pd = &pd[i];
		qp[i].send_cq = &cq[i];
		qp[i].recv_cq = &cq[NQP - 1 - i];
		qp[i].sq = ring_new(RING, sizeof(struct mrc_sqe));
		qp[i].rq = ring_new(RING, sizeof(struct mrc_rqe));
		qp[i].sq_size = qp[i].rq_size = RING;
		qp[i].caps.max_send_wr = qp[i].caps.max_recv_wr = RING;
		qp[i].caps.max_send_sge = 1 + in8() % MRC_SQE_MAX_SGE;
		qp[i].caps.max_recv_sge = 1 + in8() % MRC_RQE_MAX_SGE;
		qp[i].caps.max_inline_data = in8() % 2 ? 0 : (in8() * 2u) % (MRC_SQE_INLINE_MAX + 1);
		qp[i].sq_cons = qp[i].rq_cons = in32();
		atomic_store(&qp[i].sq->prod, qp[i].sq_cons);
		atomic_store(&qp[i].rq->prod, qp[i].rq_cons);
		atomic_store(&qp[i].sq->cons, qp[i].sq_cons);
		atomic_store(&qp[i].rq->cons, qp[i].rq_cons);
		qp[i].next = i + 1 < NQP ? &qp[i + 1] : NULL;
		be.qp[i] = &qp[i];
	}
	s.qps = &qp[0];
	s.cqs = &cq[0];
	if (use_db) {
		s.db = aligned_alloc(MRC_CACHE_LINE, sizeof(*s.db));
		s.db_again = calloc(1, sizeof(*s.db_again));
		if (s.db == NULL || s.db_again == NULL || mr_shm_htab_init(&s.h, 8, (uint16_t)in32()) < 0)
			die("out of memory");
		memset(s.db, 0, sizeof(*s.db));
		/* Objects of other types in the slots around the QPs. */
		if (mr_shm_htab_add(&s.h, MR_SHM_OBJ_PD, &pd[0]) == 0 ||
		    (qp[0].handle = mr_shm_htab_add(&s.h, MR_SHM_OBJ_QP, &qp[0])) == 0 ||
		    mr_shm_htab_add(&s.h, MR_SHM_OBJ_MR, &mr[0]) == 0 ||
		    (qp[1].handle = mr_shm_htab_add(&s.h, MR_SHM_OBJ_QP, &qp[1])) == 0)
			die("handle table");
	}
	for (int round = 0; round < 4 && be.n > 0; round++) {
		uint32_t prod0[NQP], free0[NQP], sq0[NQP], rq0[NQP];

		if (use_db) {
			uint8_t k = in8();

			for (int i = 0; i < NQP; i++)
				if (k & (1u << i))
					mrc_db_ring(s.db, mrc_db_slot(qp[i].handle));
			/* Arbitrary words: the daemon may only ever resolve them through the
			 * handle table. */
			for (uint8_t j = 0; j < (k >> 4); j++) {
				uint64_t v = (uint64_t)in32() << 32 | in32();

				if (in8() & 1)
					atomic_store(&s.db->sum[in8() % (MRC_DB_SLOTS / 4096)], v);
				else
					atomic_store(&s.db->leaf[in32() % (MRC_DB_SLOTS / 64)], v);
			}
		}

		for (int i = 0; i < NQP; i++) {
			uint8_t what = in8();

			/* The app writes entries and publishes (possibly absurd) indices. */
			for (uint32_t e = 0; e < RING; e++) {
				if (what & 1)
					fill_bytes(mrc_ring_entry(qp[i].sq, e, RING - 1,
								  sizeof(struct mrc_sqe)),
						   (what & 4) ? sizeof(struct mrc_sqe) : 96);
				if (what & 2)
					fill_bytes(mrc_ring_entry(qp[i].rq, e, RING - 1,
								  sizeof(struct mrc_rqe)),
						   (what & 4) ? sizeof(struct mrc_rqe) : 96);
			}
			atomic_store(&qp[i].sq->prod, qp[i].sq_cons + ((what & 8) ? in32() : in8() % 6));
			atomic_store(&qp[i].rq->prod, qp[i].rq_cons + ((what & 16) ? in32() : in8() % 6));
			atomic_store(&cq[i].ring->cons, (what & 32) ? in32() : cq[i].prod - in8() % 10);
			atomic_store(&cq[i].ring->notify_req, in8());
			atomic_store(&cq[i].ring->notify_flags, in8() & 1);
		}
		for (int i = 0; i < NQP; i++) {
			prod0[i] = cq[i].prod;
			free0[i] = mrc_ring_free(cq[i].ring, cq[i].prod, cq[i].size);
			sq0[i] = qp[i].sq_cons;
			rq0[i] = qp[i].rq_cons;
		}
		mr_shm_session_poll_data(&s);
		for (int i = 0; i < NQP; i++) {
			uint32_t sq_ready = atomic_load(&qp[i].sq->prod) - qp[i].sq_cons;
			uint32_t rq_ready = atomic_load(&qp[i].rq->prod) - qp[i].rq_cons;

			if (atomic_load(&cq[i].ring->prod) != cq[i].prod)
				die("CQ ring producer index not published as written");
			if (cq[i].prod - prod0[i] > free0[i])
				die("CQ ring overfilled (more entries than the app left free)");
			/* With a doorbell an unrung QP is not looked at (its indices may be
			 * absurd and unnoticed); whatever was consumed was published. */
			if (!qp[i].broken && (sq_ready > RING || rq_ready > RING) &&
			    (!use_db || qp[i].sq_cons != sq0[i] || qp[i].rq_cons != rq0[i]))
				die("SQ/RQ consumer passed the published producer index");
			if (atomic_load(&qp[i].sq->cons) != qp[i].sq_cons ||
			    atomic_load(&qp[i].rq->cons) != qp[i].rq_cons)
				die("consumer index not published as consumed");
		}
	}
	{
		uint64_t v;

		while (read(evfd, &v, sizeof(v)) == sizeof(v))
			;
	}
	for (int i = 0; i < NQP; i++) {
		free(cq[i].ring);
		free(qp[i].sq);
		free(qp[i].rq);
	}
	if (use_db) {
		mr_shm_htab_fini(&s.h);
		free(s.db);
		free(s.db_again);
	}
	return 0;
}
