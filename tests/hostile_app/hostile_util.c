/* SPDX-License-Identifier: MIT
 * mr_hostile helpers: sessions and connected QP pairs on the two daemons, polling, raw ring
 * slots and raw control requests, daemon liveness.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hostile.h"

const struct hopts *g_opt;
unsigned int g_failed;

void hfail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stdout, "mr_hostile: FAIL: ");
	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
	fprintf(stdout, "\n");
	fflush(stdout);
	g_failed++;
}

void hok(const char *fmt, ...)
{
	va_list ap;

	fprintf(stdout, "mr_hostile: ok: ");
	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
	fprintf(stdout, "\n");
	fflush(stdout);
}

static void hdie(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void hdie(const char *fmt, ...)
{
	va_list ap;

	fprintf(stdout, "mr_hostile: FAIL (setup): ");
	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
	fprintf(stdout, "\n");
	exit(1);
}

uint64_t hnow_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void hsleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

void hside_open(struct hside *h, int daemon, size_t len, uint32_t sq, uint32_t rq,
		uint32_t cq_depth, uint8_t fill)
{
	struct mrc_qp_init_attr init;
	struct mrc_qp_attr a;
	int rc;

	memset(h, 0, sizeof(*h));
	h->s = mrc_open(g_opt->sock[daemon]);
	if (h->s == NULL)
		hdie("mrc_open %s: %s", g_opt->sock[daemon], strerror(errno));
	if (mrc_query_port(h->s, &h->port) < 0 || h->port.state != MRC_PORT_ACTIVE)
		hdie("daemon %c: port not active", 'A' + daemon);
	h->pd = mrc_alloc_pd(h->s);
	h->cq = h->pd != NULL ? mrc_create_cq(h->s, cq_depth) : NULL;
	h->len = len;
	h->buf = h->cq != NULL ? mrc_alloc_buf(h->s, len) : NULL;
	if (h->buf == NULL)
		hdie("daemon %c: pd/cq/buf(%zu): %s (%s)", 'A' + daemon, len, strerror(errno),
		     mrc_last_error(h->s));
	memset(h->buf, fill, len);
	h->mr = mrc_reg_mr(h->pd, h->buf, len, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE |
			   MR_ACCESS_REMOTE_READ | MR_ACCESS_REMOTE_ATOMIC);
	if (h->mr == NULL)
		hdie("daemon %c: reg_mr: %s", 'A' + daemon, mrc_last_error(h->s));
	memset(&init, 0, sizeof(init));
	init.qp_type = MRC_QPT_RC;
	init.send_cq = init.recv_cq = h->cq;
	init.max_send_wr = sq;
	init.max_recv_wr = rq;
	init.max_send_sge = init.max_recv_sge = MR_MAX_SGE;
	init.max_inline_data = 64;
	h->qp = mrc_create_qp(h->pd, &init);
	if (h->qp == NULL)
		hdie("daemon %c: create_qp: %s", 'A' + daemon, mrc_last_error(h->s));
	memset(&a, 0, sizeof(a));
	a.qp_state = MR_QPS_INIT;
	a.qp_access_flags = MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ |
			    MR_ACCESS_REMOTE_ATOMIC;
	rc = mrc_modify_qp(h->qp, &a, MRC_QP_STATE | MRC_QP_PKEY_INDEX | MRC_QP_ACCESS_FLAGS);
	if (rc < 0)
		hdie("daemon %c: modify INIT: %s", 'A' + daemon, mrc_last_error(h->s));
	h->psn = (uint32_t)(hnow_ms() * 2654435761u + (uint32_t)getpid() * 977u + (uint32_t)daemon) &
		 0xffffff;
}

void hside_close(struct hside *h)
{
	if (h->s != NULL)
		mrc_close(h->s); /* the daemon reclaims whatever is left */
	memset(h, 0, sizeof(*h));
}

static void to_rts(struct hside *me, const struct hside *peer, uint8_t timeout, uint8_t retry)
{
	const uint8_t *gid = peer->port.gid[peer->port.gid_count > 1 ? 1 : 0];
	struct mrc_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = MR_QPS_RTR;
	memcpy(a.path.dgid, gid, 16);
	a.path.ipv6 = !(gid[10] == 0xff && gid[11] == 0xff);
	a.path_mtu = me->port.active_mtu < peer->port.active_mtu ? me->port.active_mtu :
		     peer->port.active_mtu;
	a.dest_qp_num = mrc_qp_num(peer->qp);
	a.rq_psn = peer->psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	if (mrc_modify_qp(me->qp, &a, MRC_QP_STATE | MRC_QP_PATH | MRC_QP_PATH_MTU |
			  MRC_QP_DEST_QPN | MRC_QP_RQ_PSN | MRC_QP_MAX_DEST_RD_ATOMIC |
			  MRC_QP_MIN_RNR_TIMER) < 0)
		hdie("modify RTR: %s", mrc_last_error(me->s));
	a.qp_state = MR_QPS_RTS;
	a.sq_psn = me->psn;
	a.timeout = timeout;
	a.retry_cnt = retry;
	a.rnr_retry = retry;
	a.max_rd_atomic = 4;
	if (mrc_modify_qp(me->qp, &a, MRC_QP_STATE | MRC_QP_SQ_PSN | MRC_QP_TIMEOUT |
			  MRC_QP_RETRY_CNT | MRC_QP_RNR_RETRY | MRC_QP_MAX_QP_RD_ATOMIC) < 0)
		hdie("modify RTS: %s", mrc_last_error(me->s));
}

void hpair_connect(struct hside *a, struct hside *b, uint8_t timeout, uint8_t retry)
{
	/* The responder side first: IBA 10.3.1, a request reaching a QP before RTR is dropped. */
	to_rts(b, a, timeout, retry);
	to_rts(a, b, timeout, retry);
}

int hpoll(struct mrc_cq *cq, struct mr_wc *wc, int want, unsigned int timeout_ms)
{
	uint64_t end = hnow_ms() + timeout_ms;
	int got = 0;

	while (got < want) {
		int n = mrc_poll_cq(cq, want - got, wc + got);

		if (n < 0)
			return got;
		got += n;
		if (n == 0) {
			if (hnow_ms() > end)
				break;
			hsleep_ms(1);
		}
	}
	return got;
}

int hpoll_quiet(struct mrc_cq *cq, struct mr_wc *wc, int max, unsigned int quiet_ms)
{
	uint64_t end = hnow_ms() + quiet_ms;
	int got = 0;

	while (hnow_ms() < end && got < max) {
		int n = mrc_poll_cq(cq, max - got, wc + got);

		if (n > 0)
			got += n;
		else
			hsleep_ms(2);
	}
	return got;
}

struct mrc_sqe *hsqe_next(struct mrc_qp *qp)
{
	struct mrc_sqe *e = mrc_ring_entry(qp->sq, qp->sq_prod, qp->sq_size - 1, sizeof(*e));

	memset(e, 0, sizeof(*e));
	return e;
}

struct mrc_rqe *hrqe_next(struct mrc_qp *qp)
{
	struct mrc_rqe *e = mrc_ring_entry(qp->rq, qp->rq_prod, qp->rq_size - 1, sizeof(*e));

	memset(e, 0, sizeof(*e));
	return e;
}

void hring(struct mrc_qp *qp)
{
	if (qp->o.s->db != NULL)
		mrc_db_ring(qp->o.s->db, qp->db_slot);
}

void hsq_publish(struct mrc_qp *qp, uint32_t n)
{
	qp->sq_prod += n;
	mrc_ring_publish(qp->sq, qp->sq_prod);
	hring(qp);
}

void hrq_publish(struct mrc_qp *qp, uint32_t n)
{
	qp->rq_prod += n;
	mrc_ring_publish(qp->rq, qp->rq_prod);
	hring(qp);
}

int hctl_obj(struct mrc_session *s, uint16_t op, uint32_t handle)
{
	struct mrc_ctl_req req;
	struct mrc_ctl_resp resp;

	memset(&req, 0, sizeof(req));
	req.u.obj.handle = handle;
	return mrc_rpc(s, op, &req, -1, &resp, NULL);
}

int hping(int daemon)
{
	struct mrc_session *s = mrc_open(g_opt->sock[daemon]);
	struct mrc_port_attr pa;
	struct mrc_pd *pd;
	struct mrc_cq *cq;
	int rc;

	if (s == NULL)
		return -errno;
	rc = mrc_query_port(s, &pa);
	if (rc == 0 && pa.state != MRC_PORT_ACTIVE)
		rc = -ENETDOWN;
	if (rc == 0) {
		pd = mrc_alloc_pd(s);
		cq = pd != NULL ? mrc_create_cq(s, 4) : NULL;
		if (cq == NULL)
			rc = -errno;
	}
	mrc_close(s);
	return rc;
}

void hcheck_daemons(const char *step)
{
	for (int d = 0; d < 2; d++) {
		int rc = hping(d);

		if (rc < 0)
			hfail("%s: daemon %c does not answer a new session: %s", step, 'A' + d,
			      strerror(-rc));
	}
}

long hproc_kb(int daemon, const char *field)
{
	char path[64], line[256];
	size_t fl = strlen(field);
	long v = -1;
	FILE *f;

	if (g_opt->pid[daemon] <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/status", g_opt->pid[daemon]);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, field, fl) == 0 && line[fl] == ':') {
			v = strtol(line + fl + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}
