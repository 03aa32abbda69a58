/* SPDX-License-Identifier: MIT
 * shm server data path: SQ/RQ rings -> backend post_send/post_recv, backend CQs -> CQ rings,
 * wake-ups (datagram socket) for armed CQs. Ring memory is app-writable: every entry is copied out
 * before it is validated, and published indices are range-checked.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "shm_server_priv.h"

#define WR_BUDGET 32   /* WRs per ring per poll: one app cannot starve the others */
#define CQ_BUDGET 32

static struct mr_shm_mr *mr_by_lkey(struct mr_shm_session *s, uint32_t lkey)
{
	struct mr_shm_mr *mr = s->last_mr;

	/* Apps mostly reuse one MR per QP: one compare in the common case. */
	if (mr != NULL && mr->lkey == lkey)
		return mr;
	mr = mr_shm_mr_find(s, lkey);
	if (mr != NULL)
		s->last_mr = mr;
	return mr;
}

/* IBA 10.6.3 / C10-10: an L_Key is valid only for QPs of the MR's PD, and the SGE must lie
 * within the region. Memory the engine writes (receives, READ/atomic results) needs local
 * write access (IBA 10.6.3.1). Returns 0 or the completion status to report. */
static int sge_check_pd(struct mr_shm_session *s, const struct mr_shm_pd *pd,
			const struct mr_sge *sg, bool write)
{
	struct mr_shm_mr *mr;

	if (sg->length == 0)
		return 0;
	mr = mr_by_lkey(s, sg->lkey);
	if (mr == NULL || mr->pd != pd || (write && !(mr->access & MR_ACCESS_LOCAL_WRITE)))
		return MR_WC_LOC_PROT_ERR;
	if (sg->addr < mr->iova || sg->length > mr->len || sg->addr - mr->iova > mr->len - sg->length)
		return MR_WC_LOC_PROT_ERR;
	return 0;
}

static int sge_check(struct mr_shm_session *s, const struct mr_shm_qp *qp,
		     const struct mr_sge *sg, bool write)
{
	return sge_check_pd(s, qp->pd, sg, write);
}

static uint32_t wc_opcode_of(uint32_t wr_opcode)
{
	switch (wr_opcode) {
	case MR_WR_RDMA_WRITE:
	case MR_WR_RDMA_WRITE_WITH_IMM:
		return MR_WC_RDMA_WRITE;
	case MR_WR_RDMA_READ:
		return MR_WC_RDMA_READ;
	case MR_WR_ATOMIC_CMP_AND_SWP:
		return MR_WC_COMP_SWAP;
	case MR_WR_ATOMIC_FETCH_AND_ADD:
		return MR_WC_FETCH_ADD;
	default:
		return MR_WC_SEND;
	}
}

/* Builds wr from a private copy of an SQ entry (inline data stays in e, which wr then points
 * at). Returns 0 or the completion status that rejects the WR. */
static int sqe_to_wr(struct mr_shm_session *s, const struct mr_shm_qp *qp,
		     const struct mrc_sqe *e, struct mr_send_wr *wr)
{
	bool atomic = e->opcode == MR_WR_ATOMIC_CMP_AND_SWP ||
		      e->opcode == MR_WR_ATOMIC_FETCH_AND_ADD;
	bool local_write = atomic || e->opcode == MR_WR_RDMA_READ;
	uint32_t i;
	int st;

	/* Every field is set below; of sg_list only the num_sge entries the backend reads (a
	 * memset of all 336 bytes was 2 % of a sender's cycles at 4 M WRs/s). */
	wr->num_sge = 0;
	switch (e->opcode) {
	case MR_WR_RDMA_WRITE:
	case MR_WR_RDMA_WRITE_WITH_IMM:
	case MR_WR_SEND:
	case MR_WR_SEND_WITH_IMM:
	case MR_WR_RDMA_READ:
	case MR_WR_ATOMIC_CMP_AND_SWP:
	case MR_WR_ATOMIC_FETCH_AND_ADD:
	case MR_WR_SEND_WITH_INV:
		break;
	default:
		return MR_WC_LOC_QP_OP_ERR;
	}
	if (e->send_flags & ~(uint32_t)(MR_SEND_FENCE | MR_SEND_SIGNALED | MR_SEND_SOLICITED |
					MR_SEND_INLINE))
		return MR_WC_LOC_QP_OP_ERR;
	wr->wr_id = e->wr_id;
	wr->opcode = (enum mr_wr_opcode)e->opcode;
	wr->send_flags = e->send_flags;
	wr->imm_data = e->imm_data;
	wr->invalidate_rkey = e->invalidate_rkey;
	wr->rdma.remote_addr = e->remote_addr;
	wr->rdma.rkey = e->rkey;
	wr->atomic.remote_addr = e->remote_addr;
	wr->atomic.rkey = e->rkey;
	wr->atomic.compare_add = atomic ? e->u.atomic.compare_add : 0;
	wr->atomic.swap = atomic ? e->u.atomic.swap : 0;
	if (e->send_flags & MR_SEND_INLINE) {
		/* Inline carries data out only: READ and atomics cannot be inline. */
		if (local_write)
			return MR_WC_LOC_QP_OP_ERR;
		if (e->inline_len > qp->caps.max_inline_data || e->inline_len > MRC_SQE_INLINE_MAX)
			return MR_WC_LOC_LEN_ERR;
		/* The private copy e outlives post_send, which copies inline data before it
		 * returns (mr_post_send). */
		wr->num_sge = e->inline_len ? 1 : 0;
		wr->sg_list[0].addr = (uint64_t)(uintptr_t)e->u.inline_data;
		wr->sg_list[0].length = e->inline_len;
		wr->sg_list[0].lkey = 0;
		return 0;
	}
	if (e->num_sge > qp->caps.max_send_sge)
		return MR_WC_LOC_QP_OP_ERR;
	/* Atomics address one naturally aligned 8-byte word (IBA 9.4.5, C9-39 alignment). */
	if (atomic && (e->num_sge != 1 || e->u.sge[0].length != 8 || (e->remote_addr & 7) != 0))
		return MR_WC_LOC_QP_OP_ERR;
	wr->num_sge = e->num_sge;
	for (i = 0; i < e->num_sge; i++) {
		wr->sg_list[i] = e->u.sge[i];
		st = sge_check(s, qp, &wr->sg_list[i], local_write);
		if (st != 0)
			return st;
	}
	return 0;
}

/* The private copy of an SQ entry that everything after reads (the app may rewrite the ring
 * meanwhile): its first line (header and the first 16 payload bytes), then only the SGEs or
 * inline bytes that header announces beyond it (an atomic: its SGE and operands), at most the
 * entry's room: a small WR is one line read, not the whole 512 bytes. sqe_to_wr() refuses
 * counts above the QP's caps (never above what was copied) and reads no further. */
static void sqe_copy(struct mrc_sqe *e, const struct mrc_sqe *ring)
{
	const size_t first = MRC_CACHE_LINE - MRC_SQE_HDR;
	size_t n;

	_Static_assert(MRC_SQE_HDR < MRC_CACHE_LINE, "the header leaves room in its line");
	memcpy(e, ring, MRC_CACHE_LINE);
	if (e->send_flags & MR_SEND_INLINE)
		n = e->inline_len < MRC_SQE_INLINE_MAX ? e->inline_len : MRC_SQE_INLINE_MAX;
	else if (e->opcode == MR_WR_ATOMIC_CMP_AND_SWP || e->opcode == MR_WR_ATOMIC_FETCH_AND_ADD)
		n = sizeof(e->u.atomic);
	else
		n = (e->num_sge < MRC_SQE_MAX_SGE ? e->num_sge : MRC_SQE_MAX_SGE) *
		    sizeof(struct mr_sge);
	if (n <= first)
		return;
	n -= first;
	/* Up to 64 bytes more as one fixed-size copy: the variable-length one compiled to rep
	 * movsq, 7 % of a sender's cycles at 4 M WRs/s. */
	_Static_assert(sizeof(e->u) >= 16 + 64, "mrc_sqe.u holds at least 80 bytes");
	if (n <= 64)
		memcpy(e->u.room + first, ring->u.room + first, 64);
	else
		memcpy(e->u.room + first, ring->u.room + first, n);
}

/* Producer side of a CQ ring (the daemon's only producer role). Returns false when full. */
static bool cq_push(struct mr_shm_cq *cq, const struct mr_wc *wc)
{
	struct mrc_cqe *e;

	if (mrc_ring_free(cq->ring, cq->prod, cq->size) == 0)
		return false;
	e = mrc_ring_entry(cq->ring, cq->prod, cq->mask, sizeof(*e));
	memset(e, 0, sizeof(*e));
	e->wr_id = wc->wr_id;
	e->status = (uint32_t)wc->status;
	e->opcode = (uint32_t)wc->opcode;
	e->vendor_err = wc->vendor_err;
	e->byte_len = wc->byte_len;
	e->imm_data = wc->imm_data;
	e->invalidated_rkey = wc->invalidated_rkey;
	e->qp_num = wc->qp_num;
	e->src_qp = wc->src_qp;
	e->wc_flags = wc->wc_flags;
	cq->prod++;
	return true;
}

/* IBA 11.4.2.2: after entries were added, an armed CQ raises one event. "Solicited only"
 * fires on receive or error completions (struct mr_wc carries no SE bit). The seq_cst fence
 * pairs with the one in mrc_req_notify_cq(): either we see the arm, or the app's re-poll
 * after arming sees our entries. */
static void cq_notify(struct mr_shm_session *s, struct mr_shm_cq *cq, bool solicited_ok)
{
	uint32_t req;
	uint8_t one = 1;

	atomic_thread_fence(memory_order_seq_cst);
	req = atomic_load_explicit(&cq->ring->notify_req, memory_order_relaxed);
	if (req == cq->notify_done)
		return;
	if ((atomic_load_explicit(&cq->ring->notify_flags, memory_order_relaxed) &
	     MRC_NOTIFY_SOLICITED) && !solicited_ok)
		return;
	cq->notify_done = req;
	atomic_store_explicit(&cq->ring->notify_done, req, memory_order_release);
	/* MSG_DONTWAIT: never blocks, whatever the app did to its end (blocking mode, never
	 * draining). EAGAIN means the app left earlier events unread: one is pending anyway.
	 * MSG_NOSIGNAL: an app that closed its end costs no SIGPIPE. */
	if (send(cq->evfd, &one, sizeof(one), MSG_DONTWAIT | MSG_NOSIGNAL) == sizeof(one))
		s->srv->st.events++;
	else if (errno != EAGAIN && errno != EWOULDBLOCK)
		s->srv->st.events_refused++;
}

int mr_shm_cq_drain(struct mr_shm_session *s, struct mr_shm_cq *cq)
{
	struct mr_wc wc[CQ_BUDGET];
	uint32_t room = mrc_ring_free(cq->ring, cq->prod, cq->size);
	bool sol = false;
	int n, i;

	if (room == 0) {
		/* App is slow: completions wait in the backend CQ. If it is armed, those arrived
		 * after the arm (IBA 11.4.2.2): raise its event, or an app asleep on the channel
		 * never polls. Whether they are solicited is not known yet: a solicited-only arm
		 * waits until they are published. An arm that only finds unpolled entries in the
		 * ring raises nothing, as rxe (rxe_cq_post raises the event): an app taking one
		 * entry per event (perftest -e latency loops) would get an event with nothing
		 * behind it, skip a wait and run ahead of its peer. */
		if (s->srv->ops->cq_pending == NULL || s->srv->ops->cq_pending(s->srv->be, cq->be))
			cq_notify(s, cq, false);
		return 0;
	}
	n = s->srv->ops->poll_cq(s->srv->be, cq->be, room < CQ_BUDGET ? (int)room : CQ_BUDGET,
				 wc);
	if (n <= 0)
		return 0;
	for (i = 0; i < n; i++) {
		cq_push(cq, &wc[i]);
		sol |= wc[i].opcode >= MR_WC_RECV || wc[i].status != MR_WC_SUCCESS;
	}
	mrc_ring_publish(cq->ring, cq->prod);
	s->srv->st.cqes += (uint64_t)n;
	cq_notify(s, cq, sol);
	return n;
}

/* Completes a WR the server rejected. Earlier backend completions of the CQ go first so the
 * app sees completions in order. Returns false if the ring is full (retry later). */
static bool complete_error(struct mr_shm_session *s, struct mr_shm_cq *cq, uint64_t wr_id,
			   uint32_t status, uint32_t opcode, uint32_t qpn, int err)
{
	struct mr_wc wc = {
		.wr_id = wr_id, .status = (enum mr_wc_status)status,
		.opcode = (enum mr_wc_opcode)opcode, .vendor_err = (uint32_t)-err, .qp_num = qpn,
	};

	mr_shm_cq_drain(s, cq);
	if (!cq_push(cq, &wc))
		return false;
	mrc_ring_publish(cq->ring, cq->prod);
	s->srv->st.cqes++;
	s->srv->st.wr_rejected++;
	cq_notify(s, cq, true);
	return true;
}

/* The app published an impossible ring index: nothing more is read from this QP's rings, and
 * the QP enters ERR so that the app learns of it (its outstanding WRs complete with
 * WR_FLUSH_ERR and the state it queries is ERR, IBA 10.3.1) instead of a silent stall. */
static void qp_break(struct mr_shm_session *s, struct mr_shm_qp *qp)
{
	const struct mr_shm_backend_ops *ops = s->srv->ops;
	struct mrc_qp_attr a = { .qp_state = MR_QPS_ERR };

	qp->broken = true;
	s->srv->st.ring_corrupt++;
	if (ops->modify_qp != NULL)
		ops->modify_qp(s->srv->be, qp->be, &a, MRC_QP_STATE);
}

#define SQ_PREFETCH 4 /* SQ entries read ahead */

/* Starts loading SQ entry idx's first line (all a one-SGE or small-inline WR reads; the line
 * after it would be a transfer the app pays back on its next write there). Only a hint: the
 * entry is still copied out and checked as any other ring read. */
static inline void sqe_prefetch(const struct mr_shm_qp *qp, uint32_t idx)
{
	__builtin_prefetch(mrc_ring_entry(qp->sq, idx, qp->sq_size - 1, sizeof(struct mrc_sqe)));
}

/* *more is set when entries remain (budget, backend queue or CQ full): the doorbell path rings
 * the QP again itself so that they are not left waiting for the app's next post. */
static int qp_drain_sq(struct mr_shm_session *s, struct mr_shm_qp *qp, bool *more)
{
	const struct mr_shm_backend_ops *ops = s->srv->ops;
	uint32_t ready = mrc_ring_ready(qp->sq, qp->sq_cons);
	int n = 0;

	if (ready > qp->sq_size) {
		qp_break(s, qp);
		return 0;
	}
	if (ready > 0 && ops->sq_room != NULL && ops->sq_room(s->srv->be, qp->be) == 0) {
		*more = true; /* the backend's queue is full: retried on a later poll */
		return 0;
	}
	/* The app wrote these entries on another CPU: each first read is a cache miss (perf: 40 % of
	 * this function at 8 B WRITEs). Asking for the next SQ_PREFETCH entries' first lines ahead
	 * overlaps those misses instead of taking them one by one. */
	for (uint32_t k = 1; k <= SQ_PREFETCH && k < ready; k++)
		sqe_prefetch(qp, qp->sq_cons + k);
	while (ready > 0 && n < WR_BUDGET) {
		struct mrc_sqe e;
		struct mr_send_wr wr;
		int st, rc = 0;

		if (ready > SQ_PREFETCH)
			sqe_prefetch(qp, qp->sq_cons + SQ_PREFETCH);
		sqe_copy(&e, mrc_ring_entry(qp->sq, qp->sq_cons, qp->sq_size - 1, sizeof(e)));
		st = sqe_to_wr(s, qp, &e, &wr);
		if (st == 0) {
			rc = ops->post_send(s->srv->be, qp->be, &wr);
			if (rc == -ENOMEM || rc == -EAGAIN)
				break; /* backend queue full: the entry stays in the ring */
			if (rc < 0)
				st = MR_WC_LOC_QP_OP_ERR;
		} else {
			rc = -EINVAL;
		}
		if (st != 0 && !complete_error(s, qp->send_cq, e.wr_id, (uint32_t)st,
					       wc_opcode_of(e.opcode), qp->qp_num, rc))
			break;
		if (st == 0)
			s->srv->st.send_wrs++;
		qp->sq_cons++;
		ready--;
		n++;
	}
	if (n > 0)
		mrc_ring_consume(qp->sq, qp->sq_cons);
	*more |= ready > 0;
	return n;
}

static int qp_drain_rq(struct mr_shm_session *s, struct mr_shm_qp *qp, bool *more)
{
	const struct mr_shm_backend_ops *ops = s->srv->ops;
	uint32_t ready = mrc_ring_ready(qp->rq, qp->rq_cons);
	int n = 0;

	if (ready > qp->rq_size) {
		qp_break(s, qp);
		return 0;
	}
	while (ready > 0 && n < WR_BUDGET) {
		struct mrc_rqe e;
		struct mr_recv_wr wr;
		uint32_t i;
		int st = 0, rc = -EINVAL;

		memcpy(&e, mrc_ring_entry(qp->rq, qp->rq_cons, qp->rq_size - 1, sizeof(e)),
		       sizeof(e));
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = e.wr_id;
		if (e.num_sge > qp->caps.max_recv_sge) {
			st = MR_WC_LOC_QP_OP_ERR;
		} else {
			wr.num_sge = e.num_sge;
			for (i = 0; i < e.num_sge && st == 0; i++) {
				wr.sg_list[i] = e.sge[i];
				st = sge_check(s, qp, &wr.sg_list[i], true);
			}
		}
		if (st == 0) {
			rc = ops->post_recv(s->srv->be, qp->be, &wr);
			if (rc == -ENOMEM || rc == -EAGAIN)
				break;
			if (rc < 0)
				st = MR_WC_LOC_QP_OP_ERR;
		}
		if (st != 0 && !complete_error(s, qp->recv_cq, e.wr_id, (uint32_t)st, MR_WC_RECV,
					       qp->qp_num, rc))
			break;
		if (st == 0)
			s->srv->st.recv_wrs++;
		qp->rq_cons++;
		ready--;
		n++;
	}
	if (n > 0)
		mrc_ring_consume(qp->rq, qp->rq_cons);
	*more |= ready > 0;
	return n;
}

/* SRQ ring -> backend SRQ. A WQE whose SGEs this session may not use has no QP yet whose CQ
 * could report it, so it is refused here (counted in wr_rejected) and never reaches the
 * transport, where another session's lkey of the same engine could resolve. */
static int srq_drain(struct mr_shm_session *s, struct mr_shm_srq *q)
{
	const struct mr_shm_backend_ops *ops = s->srv->ops;
	uint32_t ready = mrc_ring_ready(q->ring, q->cons);
	int n = 0;

	if (ready > q->size) {
		q->broken = true;
		s->srv->st.ring_corrupt++;
		return 0;
	}
	while (ready > 0 && n < WR_BUDGET) {
		struct mrc_rqe e;
		struct mr_recv_wr wr;
		int st = 0;

		memcpy(&e, mrc_ring_entry(q->ring, q->cons, q->size - 1, sizeof(e)), sizeof(e));
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = e.wr_id;
		if (e.num_sge > q->max_sge)
			st = MR_WC_LOC_QP_OP_ERR;
		wr.num_sge = st == 0 ? e.num_sge : 0;
		for (uint32_t i = 0; i < wr.num_sge && st == 0; i++) {
			wr.sg_list[i] = e.sge[i];
			st = sge_check_pd(s, q->pd, &wr.sg_list[i], true);
		}
		if (st == 0) {
			int rc = ops->post_srq_recv(s->srv->be, q->be, &wr);

			if (rc == -ENOMEM || rc == -EAGAIN)
				break;
			if (rc < 0)
				st = MR_WC_LOC_QP_OP_ERR;
		}
		if (st == 0)
			s->srv->st.recv_wrs++;
		else
			s->srv->st.wr_rejected++;
		q->cons++;
		ready--;
		n++;
	}
	if (n > 0)
		mrc_ring_consume(q->ring, q->cons);
	return n;
}

/* Polls a rung QP stays rung while idle before the daemon clears its bit (poll_doorbell). */
#define DB_IDLE_POLLS 8
/* DB_ASYM: polls a QP is read after its bit was cleared, or after it last had entries since,
 * before it waits for the barrier (shm_abi.h mrc_db_ring_asym; shm_server.c db_barrier). An
 * index store that missed the clear lands within nanoseconds: these polls serve it at once,
 * the barrier's read only guarantees it. */
#define DB_HOT_POLLS 2

static inline void retry_set(struct mr_shm_retry *m, uint32_t slot)
{
	m->leaf[slot / 64] |= 1ull << (slot % 64);
	m->sum[slot / 4096] |= 1ull << ((slot / 64) % 64);
}

/* A QP read again after its bit was cleared (DB_ASYM) that found nothing: after DB_HOT_POLLS
 * such reads in a row it waits for the barrier; entries found meanwhile start them again, as
 * more index stores of the same app may still be on their way. */
static void db_hot_step(struct mr_shm_session *s, struct mr_shm_qp *qp, uint32_t slot)
{
	if (qp->db_busy)
		qp->db_hot = DB_HOT_POLLS;
	else if (--qp->db_hot == 0) {
		retry_set(s->db_pend, slot);
		s->db_pend_any = true;
		s->srv->st.db_pends++;
		return;
	}
	retry_set(s->db_again, slot);
}

/* Drains the rung QPs of n leaf words (index leaf[k], bits bits[k], of which rung[k] are set
 * in the shared doorbell): every receive queue first, then the send queues, so that a receive
 * posted before a send is with the backend before the send executes (a loopback SEND finds its
 * receive, as with the scan that came before). A QP left with entries (budget, backend queue
 * or CQ full) goes into the session's private retry map, served on the next poll.
 *
 * A QP's shared bit stays set while the QP is busy, and is cleared only after DB_IDLE_POLLS
 * polls that found nothing on its rings (or at once for a bit naming no live QP): while it is
 * set the app's post finds it set and writes nothing to the doorbell (shm_abi.h), so that the
 * doorbell's line is not taken back and forth on every post, as it was when every poll
 * cleared every bit (perf, 8 B WRITEs at 16 QPs: all 16 QPs share one leaf word). The clear is
 * a seq_cst RMW and the QP is served once more after it, on the next poll: a post that found
 * the bit still set is then seen by that read of its producer index (the Dekker pairing of
 * shm_abi.h, the clear taking the place of the exchange). */
static int drain_rung(struct mr_shm_session *s, const uint32_t *leaf, const uint64_t *bits,
		      const uint64_t *rung, unsigned int n)
{
	struct mr_shm_retry *again = s->db_again;
	int work = 0;

	for (int pass = 0; pass < 2; pass++) {
		for (unsigned int k = 0; k < n; k++) {
			for (uint64_t y = bits[k]; y != 0; y &= y - 1) {
				uint32_t b = (uint32_t)__builtin_ctzll(y);
				uint32_t slot = leaf[k] * 64 + b;
				struct mr_shm_qp *qp = mr_shm_htab_at(&s->h, slot, MR_SHM_OBJ_QP);
				bool more = false;
				int got;

				if (qp == NULL || qp->broken) {
					if (pass == 0 && (rung[k] >> b & 1))
						atomic_fetch_and_explicit(&s->db->leaf[leaf[k]],
									  ~(1ull << b),
									  memory_order_seq_cst);
					continue;
				}
				/* The receive pass starts loading what the send pass reads first
				 * (the app's producer index: a miss when written on another CPU),
				 * so that the QPs' misses overlap. Not its next entry: a QP that
				 * stays rung is read on every poll, and a line read before the app
				 * writes it is one more transfer for both. */
				if (pass == 0) {
					__builtin_prefetch(&qp->sq->prod);
					qp->db_busy = false;
				}
				got = pass == 0 ? qp_drain_rq(s, qp, &more) : qp_drain_sq(s, qp, &more);
				work += got;
				qp->db_busy |= got > 0 || more;
				if (more)
					retry_set(again, slot);
				if (pass == 0)
					continue;
				if (!(rung[k] >> b & 1)) {
					if (qp->db_hot > 0)
						db_hot_step(s, qp, slot);
					continue;
				}
				/* Rung: that post fenced (mrc_db_ring), so every earlier index
				 * store of the app is visible to this read. */
				qp->db_hot = 0;
				if (qp->db_busy) {
					qp->db_idle = 0;
				} else if (++qp->db_idle >= DB_IDLE_POLLS) {
					qp->db_idle = 0;
					atomic_fetch_and_explicit(&s->db->leaf[leaf[k]], ~(1ull << b),
								  memory_order_seq_cst);
					atomic_thread_fence(memory_order_seq_cst); /* before that read */
					retry_set(again, slot);
					if (s->db_pend != NULL)
						qp->db_hot = DB_HOT_POLLS;
				}
			}
		}
	}
	return work;
}

/* Serves the QPs the app rang (shm_abi.h, struct mrc_doorbell) and those left to retry: the
 * summary words, then only the leaf words and QPs they name. Every index is bounded by the
 * region's fixed layout and resolved through the session's own handle table. Bits are read,
 * not exchanged: drain_rung() clears a QP's bit once it is idle, and a summary bit is cleared
 * here once its leaf word is 0, then that word read again (the same pairing, with the app's
 * leaf RMW before its summary test). */
static int poll_doorbell(struct mr_shm_session *s)
{
	enum { CHUNK = 64 };
	struct mrc_doorbell *db = s->db;
	struct mr_shm_retry *again = s->db_again;
	uint32_t leaf[CHUNK];
	uint64_t bits[CHUNK], rung[CHUNK];
	unsigned int n = 0;
	int work = 0;

	for (uint32_t w = 0; w < MRC_DB_SLOTS / 4096; w++) {
		uint64_t x = again->sum[w] |
			     atomic_load_explicit(&db->sum[w], memory_order_seq_cst);

		if (x == 0)
			continue;
		again->sum[w] = 0;
		for (; x != 0; x &= x - 1) {
			uint32_t l = w * 64 + (uint32_t)__builtin_ctzll(x);
			uint64_t sbit = x & -x;
			uint64_t r = atomic_load_explicit(&db->leaf[l], memory_order_seq_cst);
			uint64_t y = again->leaf[l];

			again->leaf[l] = 0;
			if (r == 0 &&
			    (atomic_load_explicit(&db->sum[w], memory_order_relaxed) & sbit)) {
				atomic_fetch_and_explicit(&db->sum[w], ~sbit, memory_order_seq_cst);
				r = atomic_load_explicit(&db->leaf[l], memory_order_seq_cst);
				/* Rung meanwhile, and that app may have found the summary bit
				 * still set: set it again, as a set leaf bit is only reached
				 * through it. */
				if (r != 0)
					atomic_fetch_or_explicit(&db->sum[w], sbit,
								 memory_order_seq_cst);
			}
			y |= r;
			if (y == 0)
				continue;
			leaf[n] = l;
			bits[n] = y;
			rung[n++] = r;
			if (n == CHUNK) {
				work += drain_rung(s, leaf, bits, rung, n);
				n = 0;
			}
		}
	}
	return n > 0 ? work + drain_rung(s, leaf, bits, rung, n) : work;
}

int mr_shm_session_poll_data(struct mr_shm_session *s)
{
	struct mr_shm_srq *q;
	struct mr_shm_qp *qp;
	struct mr_shm_cq *cq;
	int work = 0;

	if (s->db != NULL) {
		work += poll_doorbell(s);
	} else {
		for (qp = s->qps; qp != NULL; qp = qp->next) {
			bool more = false;

			if (qp->broken)
				continue;
			work += qp_drain_rq(s, qp, &more);
			work += qp_drain_sq(s, qp, &more);
		}
	}
	for (q = s->srqs; q != NULL; q = q->next)
		if (!q->broken)
			work += srq_drain(s, q);
	for (cq = s->cqs; cq != NULL; cq = cq->next)
		work += mr_shm_cq_drain(s, cq);
	return work;
}
