/* SPDX-License-Identifier: MIT
 * mrpingpong's verbs side (see pingpong.h).
 */
#include "tool_util.h"
#include "pingpong.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "metaroce/metaroce.h"

#define RECV_WRID 1 /* rc_pingpong's PINGPONG_RECV_WRID / PINGPONG_SEND_WRID */
#define SEND_WRID 2
/* rc_pingpong waits forever; a peer that vanished should not wedge a script: give up after
 * this long without any completion. */
#define PROGRESS_TIMEOUT_NS (30ull * 1000000000ull)

static uint64_t now_ns(void)
{
	return mr_tool_now_ns();
}

static int fail(struct mr_pp_ctx *c, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct mr_pp_ctx *c, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rc = mr_tool_vfail(c->err, sizeof(c->err), c->s, rc, fmt, ap);
	va_end(ap);
	return rc;
}

static int post_recvs(struct mr_pp_ctx *c, uint32_t n)
{
	struct mr_recv_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = RECV_WRID;
	wr.num_sge = 1;
	wr.sg_list[0].addr = (uint64_t)(uintptr_t)c->buf;
	wr.sg_list[0].length = c->a->size;
	wr.sg_list[0].lkey = mrc_mr_lkey(c->mr);
	for (uint32_t i = 0; i < n; i++) {
		int rc = mrc_post_recv(c->qp, &wr);

		if (rc < 0)
			return fail(c, rc, "Couldn't post receive (%u)", c->routs);
		c->routs++;
	}
	return 0;
}

static int post_send(struct mr_pp_ctx *c)
{
	struct mr_send_wr wr;
	int rc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = SEND_WRID;
	wr.opcode = MR_WR_SEND;
	wr.send_flags = MR_SEND_SIGNALED;
	wr.num_sge = 1;
	wr.sg_list[0].addr = (uint64_t)(uintptr_t)c->buf;
	wr.sg_list[0].length = c->a->size;
	wr.sg_list[0].lkey = mrc_mr_lkey(c->mr);
	rc = mrc_post_send(c->qp, &wr);
	return rc < 0 ? fail(c, rc, "Couldn't post send") : 0;
}

int mr_pp_open(struct mr_pp_ctx *c, const struct mr_pp_args *a)
{
	struct mrc_port_attr port;
	struct mrc_qp_init_attr init;
	struct mrc_qp_attr at;
	size_t len;
	int rc;

	memset(c, 0, sizeof(*c));
	c->a = a;
	c->s = mrc_open(a->sock);
	if (c->s == NULL)
		return fail(c, -errno, "cannot reach metaroced at %s",
			    a->sock != NULL ? a->sock : "the default socket");
	rc = mrc_query_port(c->s, &port);
	if (rc < 0)
		return fail(c, rc, "Couldn't get port info");
	if (port.state != MRC_PORT_ACTIVE)
		return fail(c, -ENETDOWN, "port is not active");
	c->port_mtu = port.active_mtu;
	if (a->gid_index >= 0) {
		if ((uint32_t)a->gid_index >= port.gid_count)
			return fail(c, -EINVAL, "can't read sgid of index %d", a->gid_index);
		memcpy(c->mine.gid, port.gid[a->gid_index], 16);
	}
	c->pd = mrc_alloc_pd(c->s);
	if (c->pd == NULL)
		return fail(c, -errno, "Couldn't allocate PD");
	/* rc_pingpong: a CQ of rx_depth + 1 (one SEND in flight); one spare for safety */
	c->cq = mrc_create_cq(c->s, a->rx_depth + 2);
	if (c->cq == NULL)
		return fail(c, -errno, "Couldn't create CQ");
	len = ((size_t)a->size + 4095) & ~(size_t)4095;
	c->buf = mrc_alloc_buf(c->s, len);
	if (c->buf == NULL)
		return fail(c, -errno, "Couldn't allocate work buf");
	/* rc_pingpong fills its buffer with 0x7b; the client's -c marks are set before sending */
	memset(c->buf, 0x7b, len);
	c->mr = mrc_reg_mr(c->pd, c->buf, len, MR_ACCESS_LOCAL_WRITE);
	if (c->mr == NULL)
		return fail(c, -errno, "Couldn't register MR");
	memset(&init, 0, sizeof(init));
	init.qp_type = MRC_QPT_RC;
	init.send_cq = c->cq;
	init.recv_cq = c->cq;
	init.max_send_wr = 2; /* rc_pingpong asks for 1; the library rounds to a power of two */
	init.max_recv_wr = a->rx_depth;
	init.max_send_sge = init.max_recv_sge = 1;
	c->qp = mrc_create_qp(c->pd, &init);
	if (c->qp == NULL)
		return fail(c, -errno, "Couldn't create QP");
	memset(&at, 0, sizeof(at));
	at.qp_state = MR_QPS_INIT;
	at.pkey_index = 0;
	at.qp_access_flags = 0; /* SEND/RECV only */
	rc = mrc_modify_qp(c->qp, &at, MRC_QP_STATE | MRC_QP_PKEY_INDEX | MRC_QP_ACCESS_FLAGS);
	if (rc < 0)
		return fail(c, rc, "Failed to modify QP to INIT");
	/* IBA 10.8.2: receives may be posted from INIT; rc_pingpong posts them all up front */
	rc = post_recvs(c, a->rx_depth);
	if (rc < 0)
		return rc;
	c->mine.lid = 0;
	c->mine.qpn = mrc_qp_num(c->qp);
	srand48((long)getpid() * (long)time(NULL));
	c->mine.psn = (uint32_t)lrand48() & 0xffffff;
	return 0;
}

void mr_pp_close(struct mr_pp_ctx *c)
{
	if (c->qp != NULL)
		mrc_destroy_qp(c->qp);
	if (c->mr != NULL)
		mrc_dereg_mr(c->mr);
	if (c->buf != NULL)
		mrc_free_buf(c->s, c->buf);
	if (c->cq != NULL)
		mrc_destroy_cq(c->cq);
	if (c->pd != NULL)
		mrc_dealloc_pd(c->pd);
	if (c->s != NULL)
		mrc_close(c->s);
	memset(c, 0, sizeof(*c));
}

static bool gid_is_zero(const uint8_t g[16])
{
	for (int i = 0; i < 16; i++)
		if (g[i] != 0)
			return false;
	return true;
}

int mr_pp_connect(struct mr_pp_ctx *c, const struct mr_pp_dest *rem)
{
	struct mrc_qp_attr at;
	int rc;

	/* RoCE has no LIDs: the GRH (RoCE v2: the IP header) is the only address (A17.4.5) */
	if (gid_is_zero(rem->gid) || gid_is_zero(c->mine.gid))
		return fail(c, -EINVAL, "RoCE needs GIDs on both ends (use -g 1)");
	memset(&at, 0, sizeof(at));
	at.qp_state = MR_QPS_RTR;
	at.path_mtu = c->a->mtu;
	at.dest_qp_num = rem->qpn;
	at.rq_psn = rem->psn;      /* the peer's SQ PSN is our expected PSN (IBA 9.7.1) */
	at.max_dest_rd_atomic = 1;
	at.min_rnr_timer = 12;     /* 0.64 ms (IBA table 45), rc_pingpong's */
	memcpy(at.path.sgid, c->mine.gid, 16);
	memcpy(at.path.dgid, rem->gid, 16);
	/* RoCE v2 over IPv4 when the GID is IPv4-mapped (IBA A17.4.5.1) */
	at.path.ipv6 = !(rem->gid[10] == 0xff && rem->gid[11] == 0xff &&
			 memcmp(rem->gid, "\0\0\0\0\0\0\0\0\0\0", 10) == 0);
	at.path.ttl = 1;           /* rc_pingpong's grh.hop_limit */
	rc = mrc_modify_qp(c->qp, &at, MRC_QP_STATE | MRC_QP_PATH | MRC_QP_PATH_MTU |
			   MRC_QP_DEST_QPN | MRC_QP_RQ_PSN | MRC_QP_MAX_DEST_RD_ATOMIC |
			   MRC_QP_MIN_RNR_TIMER);
	if (rc < 0)
		return fail(c, rc, "Failed to modify QP to RTR");
	at.qp_state = MR_QPS_RTS;
	at.timeout = 14;           /* 4.096 us * 2^14 = 67 ms (C9-141) */
	at.retry_cnt = 7;
	at.rnr_retry = 7;          /* infinite (IBA 9.7.5.2.8) */
	at.sq_psn = c->mine.psn;
	at.max_rd_atomic = 1;
	rc = mrc_modify_qp(c->qp, &at, MRC_QP_STATE | MRC_QP_TIMEOUT | MRC_QP_RETRY_CNT |
			   MRC_QP_RNR_RETRY | MRC_QP_SQ_PSN | MRC_QP_MAX_QP_RD_ATOMIC);
	if (rc < 0)
		return fail(c, rc, "Failed to modify QP to RTS");
	return 0;
}

/* -e: arm, re-poll, then sleep on the CQ's event fd (the race-free order, metaroce.h). */
static int wait_event(struct mr_pp_ctx *c, struct mr_wc *wc, int n)
{
	struct pollfd pfd = { .fd = mrc_cq_event_fd(c->cq), .events = POLLIN };
	int rc = mrc_req_notify_cq(c->cq, false);

	if (rc < 0)
		return fail(c, rc, "Couldn't request CQ notification");
	rc = mrc_poll_cq(c->cq, n, wc);
	if (rc != 0)
		return rc;
	if (poll(&pfd, 1, 1000) < 0 && errno != EINTR)
		return fail(c, -errno, "Failed to get cq_event");
	mrc_cq_ack_events(c->cq);
	return 0;
}

int mr_pp_run(struct mr_pp_ctx *c, double *usec)
{
	const struct mr_pp_args *a = c->a;
	uint32_t rcnt = 0, scnt = 0, page = (uint32_t)sysconf(_SC_PAGESIZE);
	unsigned pending = RECV_WRID;
	uint64_t t0, last;
	int rc;

	if (a->server != NULL) {
		/* rc_pingpong -c marks one byte per page (its i / page_size % sizeof(char)) */
		if (a->chk)
			for (uint32_t i = 0; i < a->size; i += page)
				c->buf[i] = (uint8_t)(i / page % sizeof(char));
		rc = post_send(c);
		if (rc < 0)
			return rc;
		pending |= SEND_WRID;
	}
	t0 = now_ns();
	last = t0;
	while (rcnt < a->iters || scnt < a->iters) {
		struct mr_wc wc[2];
		int ne = a->events ? wait_event(c, wc, 2) : mrc_poll_cq(c->cq, 2, wc);

		if (ne < 0)
			return c->err[0] != '\0' ? ne : fail(c, ne, "poll CQ failed %d", ne);
		if (ne == 0 && now_ns() - last > PROGRESS_TIMEOUT_NS)
			return fail(c, -ETIMEDOUT, "no completion for 30 s (%u sent, %u received)",
				    scnt, rcnt);
		for (int i = 0; i < ne; i++) {
			if (wc[i].status != MR_WC_SUCCESS)
				return fail(c, -EIO, "Failed status %d for wr_id %d", (int)wc[i].status,
					    (int)wc[i].wr_id);
			last = now_ns();
			switch ((int)wc[i].wr_id) {
			case SEND_WRID:
				++scnt;
				break;
			case RECV_WRID:
				/* keep receives posted: refill when at most one is left */
				if (--c->routs <= 1) {
					rc = post_recvs(c, a->rx_depth - c->routs);
					if (rc < 0)
						return rc;
				}
				++rcnt;
				break;
			default:
				return fail(c, -EIO, "Completion for unknown wr_id %d",
					    (int)wc[i].wr_id);
			}
			pending &= ~(unsigned)wc[i].wr_id;
			if (scnt < a->iters && pending == 0) {
				rc = post_send(c);
				if (rc < 0)
					return rc;
				pending = RECV_WRID | SEND_WRID;
			}
		}
	}
	*usec = (double)(now_ns() - t0) / 1000.0;
	return 0;
}
