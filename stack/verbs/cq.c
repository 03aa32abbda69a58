/* SPDX-License-Identifier: MIT
 * libibverbs over metaroce: completion queues, completion channels, extended CQ polling.
 *
 * A completion channel is an epoll set of its CQs' eventfds (the daemon writes a CQ's
 * eventfd when an armed CQ gets an entry, IBA 11.4.2.2): its fd is pollable like the kernel's
 * and ibv_get_cq_event() learns from epoll which CQ fired. Events of one CQ between two reads
 * coalesce into one (one arm gives at most one event anyway).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "verbs_priv.h"

MV_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct ibv_comp_channel *ch;

	if (context == NULL) {
		errno = EINVAL;
		return NULL;
	}
	ch = calloc(1, sizeof(*ch));
	if (ch == NULL)
		return NULL;
	ch->fd = epoll_create1(EPOLL_CLOEXEC);
	if (ch->fd < 0) {
		int e = errno;

		free(ch);
		errno = e;
		return NULL;
	}
	ch->context = context;
	ch->refcnt = 0;
	return ch;
}

MV_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	if (ch == NULL)
		return EINVAL;
	if (ch->refcnt > 0)
		return EBUSY;
	close(ch->fd);
	free(ch);
	return 0;
}

static struct mv_cq *cq_new(struct ibv_context *context, int cqe, void *cq_context,
			    struct ibv_comp_channel *ch, int comp_vector)
{
	struct mv_context *c;
	struct mv_cq *cq;
	int e;

	if (context == NULL || cqe < 1 || comp_vector < 0 || comp_vector >= 1) {
		errno = EINVAL;
		return NULL;
	}
	c = mv_ctx(context);
	if ((uint32_t)cqe > c->port.max_cqe) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (cq == NULL)
		return NULL;
	cq->m = mrc_create_cq(c->s, (uint32_t)cqe);
	if (cq->m == NULL) {
		e = errno;
		free(cq);
		errno = e;
		return NULL;
	}
	cq->ctx = c;
	if (ch != NULL) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = cq };

		if (epoll_ctl(ch->fd, EPOLL_CTL_ADD, mrc_cq_event_fd(cq->m), &ev) < 0) {
			e = errno;
			mrc_destroy_cq(cq->m);
			free(cq);
			errno = e;
			return NULL;
		}
		ch->refcnt++;
	}
	cq->cq.context = context;
	cq->cq.channel = ch;
	cq->cq.cq_context = cq_context;
	/* The ring is a power of two at least cqe; report what the app asked for as rxe does
	 * with its rounding (>= cqe is what verbs promises). */
	cq->cq.cqe = cqe;
	pthread_mutex_init(&cq->cq.mutex, NULL);
	pthread_cond_init(&cq->cq.cond, NULL);
	return cq;
}

#undef ibv_create_cq
MV_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
				       struct ibv_comp_channel *channel, int comp_vector)
{
	struct mv_cq *cq = cq_new(context, cqe, cq_context, channel, comp_vector);

	return cq != NULL ? ibv_cq_ex_to_cq(&cq->cq) : NULL;
}

MV_EXPORT int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct mv_cq *cq = (struct mv_cq *)ibcq;
	int rc;

	if (cq == NULL)
		return EINVAL;
	/* Out of the channel first: the eventfd is closed by mrc_destroy_cq. */
	if (ibcq->channel != NULL)
		epoll_ctl(ibcq->channel->fd, EPOLL_CTL_DEL, mrc_cq_event_fd(cq->m), NULL);
	rc = mrc_destroy_cq(cq->m);
	if (rc < 0) {
		if (ibcq->channel != NULL) {
			struct epoll_event ev = { .events = EPOLLIN, .data.ptr = cq };

			epoll_ctl(ibcq->channel->fd, EPOLL_CTL_ADD, mrc_cq_event_fd(cq->m), &ev);
		}
		return mv_err(cq->ctx->s, rc, "ibv_destroy_cq");
	}
	if (ibcq->channel != NULL)
		ibcq->channel->refcnt--;
	pthread_mutex_destroy(&ibcq->mutex);
	pthread_cond_destroy(&ibcq->cond);
	free(cq);
	return 0;
}

MV_EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	(void)cq, (void)cqe;
	return EOPNOTSUPP;
}

MV_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_context)
{
	struct epoll_event ev;
	int fl, n;

	if (ch == NULL || cq == NULL || cq_context == NULL) {
		errno = EINVAL;
		return -1;
	}
	/* O_NONBLOCK on the channel fd (apps set it with fcntl, as for the kernel's) means:
	 * do not wait. */
	fl = fcntl(ch->fd, F_GETFL);
	for (;;) {
		struct mv_cq *c;

		n = epoll_wait(ch->fd, &ev, 1, fl >= 0 && (fl & O_NONBLOCK) ? 0 : -1);
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = EAGAIN;
			return -1;
		}
		c = ev.data.ptr;
		if (mrc_cq_ack_events(c->m) <= 0)
			continue;   /* raced with another reader: wait again */
		/* An event may find the CQ empty: the daemon saw the arm after publishing an entry
		 * the application polled right after arming. Delivered anyway, as the kernel
		 * does (verbs applications poll after waking and re-arm). */
		mv_log("cq event %p (%d ready)", (void *)c, mrc_cq_ready(c->m));
		*cq = ibv_cq_ex_to_cq(&c->cq);
		*cq_context = c->cq.cq_context;
		return 0;
	}
}

MV_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	if (cq == NULL)
		return;
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

static void wc_from(struct ibv_wc *w, const struct mr_wc *m)
{
	w->wr_id = m->wr_id;
	w->status = (enum ibv_wc_status)m->status;
	w->opcode = (enum ibv_wc_opcode)m->opcode;
	w->vendor_err = m->vendor_err;
	w->byte_len = m->byte_len;
	if (m->wc_flags & MR_WC_WITH_INV)
		w->invalidated_rkey = m->invalidated_rkey;
	else
		w->imm_data = htonl(m->imm_data);   /* verbs: network order */
	w->qp_num = m->qp_num;
	w->src_qp = m->src_qp;
	w->wc_flags = m->wc_flags & (IBV_WC_WITH_IMM | IBV_WC_WITH_INV);
	w->pkey_index = 0;
	w->slid = 0;
	w->sl = 0;
	w->dlid_path_bits = 0;
}

int mv_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct mv_cq *cq = (struct mv_cq *)ibcq;
	struct mr_wc tmp[32];
	int done = 0;

	if (n < 0)
		return -1;
	while (done < n) {
		int want = n - done > 32 ? 32 : n - done, got, i;

		got = mrc_poll_cq(cq->m, want, tmp);
		if (got < 0)
			return done > 0 ? done : -1;
		for (i = 0; i < got; i++)
			wc_from(&wc[done + i], &tmp[i]);
		done += got;
		if (got < want)
			break;
	}
	return done;
}

int mv_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct mv_cq *cq = (struct mv_cq *)ibcq;
	int rc = mrc_req_notify_cq(cq->m, solicited_only != 0);

	mv_log("cq arm %p (%d ready)", (void *)cq, mrc_cq_ready(cq->m));
	return rc < 0 ? -rc : 0;
}

/* ---- extended CQ: start_poll / next_poll / end_poll and the read_* accessors ---- */
static struct mv_cq *xcq(struct ibv_cq_ex *c)
{
	return (struct mv_cq *)c;
}

static int xcq_fill(struct mv_cq *cq)
{
	const struct mr_wc *w;

	if (cq->icur >= cq->ncur) {
		int got = mrc_poll_cq(cq->m, 32, cq->cur);

		if (got < 0)
			return EIO;
		cq->ncur = got;
		cq->icur = 0;
		if (got == 0)
			return ENOENT;
	}
	w = &cq->cur[cq->icur];
	cq->cq.wr_id = w->wr_id;
	cq->cq.status = (enum ibv_wc_status)w->status;
	return 0;
}

static int x_start_poll(struct ibv_cq_ex *c, struct ibv_poll_cq_attr *attr)
{
	if (attr != NULL && attr->comp_mask != 0)
		return EINVAL;
	return xcq_fill(xcq(c));
}

static int x_next_poll(struct ibv_cq_ex *c)
{
	struct mv_cq *cq = xcq(c);

	cq->icur++;
	return xcq_fill(cq);
}

static void x_end_poll(struct ibv_cq_ex *c)
{
	struct mv_cq *cq = xcq(c);

	/* The entry the app looked at last is consumed; read-ahead ones stay for the next
	 * start_poll (they are already out of the ring). */
	if (cq->icur < cq->ncur)
		cq->icur++;
}

static enum ibv_wc_opcode x_opcode(struct ibv_cq_ex *c)
{
	return (enum ibv_wc_opcode)xcq(c)->cur[xcq(c)->icur].opcode;
}

static uint32_t x_vendor_err(struct ibv_cq_ex *c)
{
	return xcq(c)->cur[xcq(c)->icur].vendor_err;
}

static uint32_t x_byte_len(struct ibv_cq_ex *c)
{
	return xcq(c)->cur[xcq(c)->icur].byte_len;
}

static __be32 x_imm(struct ibv_cq_ex *c)
{
	const struct mr_wc *w = &xcq(c)->cur[xcq(c)->icur];

	return w->wc_flags & MR_WC_WITH_INV ? w->invalidated_rkey : htonl(w->imm_data);
}

static uint32_t x_qp_num(struct ibv_cq_ex *c)
{
	return xcq(c)->cur[xcq(c)->icur].qp_num;
}

static uint32_t x_src_qp(struct ibv_cq_ex *c)
{
	return xcq(c)->cur[xcq(c)->icur].src_qp;
}

static unsigned int x_wc_flags(struct ibv_cq_ex *c)
{
	return xcq(c)->cur[xcq(c)->icur].wc_flags & (IBV_WC_WITH_IMM | IBV_WC_WITH_INV);
}

static uint32_t x_zero32(struct ibv_cq_ex *c)
{
	(void)c;
	return 0;
}

static uint8_t x_zero8(struct ibv_cq_ex *c)
{
	(void)c;
	return 0;
}

#define MV_WC_EX_FLAGS (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM | \
			IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL | \
			IBV_WC_EX_WITH_DLID_PATH_BITS)

struct ibv_cq_ex *mv_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *a)
{
	struct mv_cq *cq;

	if (a == NULL) {
		errno = EINVAL;
		return NULL;
	}
	/* No completion timestamps, flow tags or tag matching; no parent domains. */
	if ((a->wc_flags & ~(uint64_t)MV_WC_EX_FLAGS) || a->comp_mask > IBV_CQ_INIT_ATTR_MASK_FLAGS ||
	    ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (a->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	cq = cq_new(context, (int)a->cqe, a->cq_context, a->channel, (int)a->comp_vector);
	if (cq == NULL)
		return NULL;
	cq->cq.start_poll = x_start_poll;
	cq->cq.next_poll = x_next_poll;
	cq->cq.end_poll = x_end_poll;
	cq->cq.read_opcode = x_opcode;
	cq->cq.read_vendor_err = x_vendor_err;
	cq->cq.read_byte_len = x_byte_len;
	cq->cq.read_imm_data = x_imm;
	cq->cq.read_qp_num = x_qp_num;
	cq->cq.read_src_qp = x_src_qp;
	cq->cq.read_wc_flags = x_wc_flags;
	cq->cq.read_slid = x_zero32;
	cq->cq.read_sl = x_zero8;
	cq->cq.read_dlid_path_bits = x_zero8;
	return &cq->cq;
}
