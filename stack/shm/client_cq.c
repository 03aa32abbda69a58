/* SPDX-License-Identifier: MIT
 * libmetaroce: completion queues. The app is the consumer of a CQ ring; polling and arming
 * touch only shared memory.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client_priv.h"

struct mrc_cq *mrc_create_cq(struct mrc_session *s, uint32_t depth)
{
	struct mrc_ctl_req req;
	struct mrc_ctl_resp resp;
	struct mrc_cq *cq;
	int rc, ring_fd = -1, sv[2];

	if (s == NULL) {
		errno = EINVAL;
		return NULL;
	}
	if (depth == 0 || depth > MRC_RING_MAX_ENTRIES) {
		errno = -mrc_fail(s, EINVAL, "mrc_create_cq: depth %u not in 1..%u", depth,
				  MRC_RING_MAX_ENTRIES);
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (cq == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	/* The wake-up: a datagram socket pair; the daemon gets one end and sends on it with
	 * MSG_DONTWAIT, which never blocks whatever is done to our end (an eventfd shares its
	 * O_NONBLOCK flag with the app, which could make the daemon's write() block). */
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0) {
		cq->evfd = -1;
		rc = mrc_fail(s, errno, "mrc_create_cq: socketpair: %s", strerror(errno));
		goto fail;
	}
	cq->evfd = sv[0];
	memset(&req, 0, sizeof(req));
	req.u.create_cq.depth = depth;
	rc = mrc_rpc(s, MRC_CTL_CREATE_CQ, &req, sv[1], &resp, &ring_fd);
	close(sv[1]); /* the daemon holds its own copy now */
	if (rc < 0)
		goto fail;
	cq->o.handle = resp.u.create_cq.handle;
	cq->size = resp.u.create_cq.size;
	cq->map_len = (size_t)resp.u.create_cq.map_len;
	if (ring_fd < 0 || cq->size == 0 || (cq->size & (cq->size - 1)) != 0 ||
	    cq->map_len < mrc_ring_bytes(cq->size, sizeof(struct mrc_cqe))) {
		rc = mrc_fail(s, EPROTO, "mrc_create_cq: malformed answer from the daemon");
		goto fail_destroy;
	}
	cq->map = mmap(NULL, cq->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, ring_fd, 0);
	if (cq->map == MAP_FAILED) {
		rc = mrc_fail(s, errno, "mrc_create_cq: mmap ring: %s", strerror(errno));
		goto fail_destroy;
	}
	close(ring_fd);
	cq->ring = cq->map;
	cq->mask = cq->size - 1;
	cq->cons = atomic_load_explicit(&cq->ring->cons, memory_order_relaxed);
	mrc_obj_link(s, &cq->o, MRC_OBJ_CQ, cq->o.handle);
	return cq;
fail_destroy:
	memset(&req, 0, sizeof(req));
	req.u.obj.handle = cq->o.handle;
	mrc_rpc(s, MRC_CTL_DESTROY_CQ, &req, -1, &resp, NULL);
fail:
	if (ring_fd >= 0)
		close(ring_fd);
	if (cq->evfd >= 0)
		close(cq->evfd);
	free(cq);
	errno = -rc;
	return NULL;
}

int mrc_destroy_cq(struct mrc_cq *cq)
{
	struct mrc_ctl_req req;
	struct mrc_ctl_resp resp;
	int rc;

	if (cq == NULL)
		return -EINVAL;
	if (cq->qp_refs > 0)
		return mrc_fail(cq->o.s, EBUSY, "mrc_destroy_cq: %u QP(s) still use this CQ",
				cq->qp_refs);
	memset(&req, 0, sizeof(req));
	req.u.obj.handle = cq->o.handle;
	rc = mrc_rpc(cq->o.s, MRC_CTL_DESTROY_CQ, &req, -1, &resp, NULL);
	if (rc < 0)
		return rc;
	mrc_obj_unlink(&cq->o);
	mrc_obj_free(&cq->o);
	return 0;
}

int mrc_poll_cq(struct mrc_cq *cq, int n, struct mr_wc *wc)
{
	uint32_t ready, i;

	if (cq == NULL || n < 0 || (wc == NULL && n > 0))
		return -EINVAL;
	ready = mrc_ring_ready(cq->ring, cq->cons);
	/* An embedded engine (mrc_progress) runs when the ring is empty, and the ring is read
	 * again after it: what that iteration completed is returned now, not one more
	 * iteration later. Every poll counts as the app's presence (client_priv.h). */
	if (mrc_embed_poll_fn != NULL) {
		mrc_embed_note_poll();
		if (ready == 0 && mrc_embed_poll_fn() > 0)
			ready = mrc_ring_ready(cq->ring, cq->cons);
	}
	if (ready > cq->size)
		return mrc_fail(cq->o.s, EIO, "mrc_poll_cq: corrupt CQ ring (producer index)");
	if (ready > (uint32_t)n)
		ready = (uint32_t)n;
	for (i = 0; i < ready; i++) {
		const struct mrc_cqe *e = mrc_ring_entry(cq->ring, cq->cons + i, cq->mask,
							 sizeof(*e));

		wc[i].wr_id = e->wr_id;
		wc[i].status = (enum mr_wc_status)e->status;
		wc[i].opcode = (enum mr_wc_opcode)e->opcode;
		wc[i].vendor_err = e->vendor_err;
		wc[i].byte_len = e->byte_len;
		wc[i].imm_data = e->imm_data;
		wc[i].invalidated_rkey = e->invalidated_rkey;
		wc[i].qp_num = e->qp_num;
		wc[i].src_qp = e->src_qp;
		wc[i].wc_flags = e->wc_flags;
	}
	if (ready > 0) {
		cq->cons += ready;
		mrc_ring_consume(cq->ring, cq->cons);
	}
	return (int)ready;
}

int mrc_cq_ready(const struct mrc_cq *cq)
{
	uint32_t ready;

	if (cq == NULL)
		return -EINVAL;
	ready = mrc_ring_ready(cq->ring, cq->cons);
	return ready > cq->size ? -EIO : (int)ready;
}

int mrc_cq_event_fd(const struct mrc_cq *cq)
{
	return cq != NULL ? cq->evfd : -EINVAL;
}

int mrc_req_notify_cq(struct mrc_cq *cq, bool solicited_only)
{
	if (cq == NULL)
		return -EINVAL;
	atomic_store_explicit(&cq->ring->notify_flags, solicited_only ? MRC_NOTIFY_SOLICITED : 0,
			      memory_order_relaxed);
	atomic_store_explicit(&cq->ring->notify_req, ++cq->notify_seq, memory_order_relaxed);
	/* Pairs with the daemon's fence after publishing entries (see shm_server_data.c): the
	 * app's next mrc_poll_cq() sees every entry the daemon did not signal. */
	atomic_thread_fence(memory_order_seq_cst);
	/* An app arms before it sleeps on the event fd: the embedded engine's helper takes over. */
	if (mrc_embed_kick_fn != NULL)
		mrc_embed_kick_fn();
	return 0;
}

int mrc_cq_ack_events(struct mrc_cq *cq)
{
	int cnt = 0;

	if (cq == NULL)
		return -EINVAL;
	/* One datagram per event; MSG_DONTWAIT so that an fd the app made blocking still
	 * drains without waiting. */
	for (;;) {
		uint8_t b[8];
		ssize_t n = recv(cq->evfd, b, sizeof(b), MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK || cnt > 0 ? cnt : -errno;
		}
		if (n == 0) /* the daemon sends 1 byte: 0 is an end of file, not an event */
			return cnt;
		if (cnt < INT32_MAX)
			cnt++;
	}
}
