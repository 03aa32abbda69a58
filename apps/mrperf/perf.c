/* SPDX-License-Identifier: MIT
 * mrperf's verbs side over libmetaroce (see perf.h).
 */
#include "tool_util.h"
#include "perf.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "metaroce/metaroce.h"
#include "pattern.h"

#define PROGRESS_TIMEOUT_NS (10ull * 1000000000ull) /* no completion for 10 s: give up */
#define POLL_BATCH 16
/* --yield: empty polls in a row before each further one yields the CPU. */
#define POLL_YIELD_SPINS 2

/* One empty busy poll; *spins counts them since the last progress. An embedded engine
 * ($METAROCE_ENGINE) runs one iteration here: write_lat waits on memory, not on a CQ, so no
 * mrc_poll_cq would run it. With --yield, a poller past POLL_YIELD_SPINS gives its CPU to
 * whatever else is runnable there (the metaroced engine it waits for, on a host with fewer
 * CPUs than pollers) instead of spinning out its time slice. */
static void poll_idle(const struct mr_perf_ctx *c, unsigned int *spins)
{
	mrc_progress();
	if (c->a->yield && ++*spins >= POLL_YIELD_SPINS)
		sched_yield();
}
#define READ_ATOMIC_DEPTH MR_PERF_MAX_OUT_READS /* responder resources we offer (IBA 9.5) */
#define EVENT_WAIT_MS 50 /* -e: longest sleep on an event fd (progress and -D checks) */

static uint64_t now_ns(void)
{
	return mr_tool_now_ns();
}

static int fail(struct mr_perf_ctx *c, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct mr_perf_ctx *c, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rc = mr_tool_vfail(c->err, sizeof(c->err), c->s, rc, fmt, ap);
	va_end(ap);
	return rc;
}

enum mr_perf_verb mr_perf_verb_of(enum mr_pt_test t)
{
	switch (t) {
	case MR_PT_WRITE_BW:
	case MR_PT_WRITE_LAT:
		return MR_VERB_WRITE;
	case MR_PT_READ_BW:
	case MR_PT_READ_LAT:
		return MR_VERB_READ;
	case MR_PT_ATOMIC_BW:
	case MR_PT_ATOMIC_LAT:
		return MR_VERB_ATOMIC;
	case MR_PT_SEND_BW:
	case MR_PT_SEND_LAT:
		break;
	}
	return MR_VERB_SEND;
}

static bool is_send(const struct mr_perf_ctx *c)
{
	return c->verb == MR_VERB_SEND;
}

/* Receives posted per QP at most: rx_depth, or fewer when the run has fewer messages. */
static uint64_t rx_outstanding(const struct mr_perf_args *a)
{
	return a->iters != 0 && a->iters < a->rx_depth ? a->iters : a->rx_depth;
}

int mr_perf_open(struct mr_perf_ctx *c, const struct mr_perf_args *a, uint64_t max_size)
{
	struct mrc_port_attr port;
	struct mrc_qp_init_attr init;
	uint64_t depth, rdepth, sdepth;
	int rc;

	memset(c, 0, sizeof(*c));
	c->peer_fd = -1;
	c->a = a;
	c->verb = mr_perf_verb_of(a->test);
	c->client = a->server != NULL;
	c->nqp = a->num_qps;
	c->s = mrc_open(a->sock);
	if (c->s == NULL && (errno == ENOENT || errno == ECONNREFUSED)) {
		int e = errno;

		/* Not mrc_strerror's "no such object in this session": there is no daemon. */
		snprintf(c->err, sizeof(c->err), "cannot reach metaroced at %s: %s: is metaroced "
			 "running? Start it (metaroced -c FILE), or point --sock / $METAROCE_SOCK at "
			 "its socket", a->sock, e == ENOENT ? "no such socket" : "connection refused");
		return -e;
	}
	if (c->s == NULL)
		return fail(c, -errno, "cannot reach metaroced at %s", a->sock);
	rc = mrc_query_port(c->s, &port);
	if (rc < 0)
		return fail(c, rc, "query_port");
	if (port.state != MRC_PORT_ACTIVE)
		return fail(c, -ENETDOWN, "port is not active");
	c->port_mtu = port.active_mtu;
	/* GID index 1 is the IPv4-mapped RoCE v2 GID, as rxe's (perftest -x 1) */
	c->gid_index = port.gid_count > 1 ? 1 : 0;
	if (a->ipv6) {
		/* perftest's --ipv6: a GID that is not IPv4-mapped (RFC 4291 2.5.5.2) */
		static const uint8_t v4[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
		static const uint8_t zero[16];

		c->gid_index = MRC_MAX_GIDS;
		for (unsigned g = 0; g < port.gid_count && g < MRC_MAX_GIDS; g++)
			if (memcmp(port.gid[g], v4, 12) != 0 && memcmp(port.gid[g], zero, 16) != 0) {
				c->gid_index = g;
				break;
			}
		if (c->gid_index == MRC_MAX_GIDS)
			return fail(c, -ENOENT, "--ipv6: metaroced has no IPv6 GID (port.ipv6 in its "
				    "config; see mrstat link)");
	}
	memcpy(c->gid, port.gid[c->gid_index], 16);
	if (a->inline_size > port.max_inline_data)
		return fail(c, -EINVAL, "-I/--inline_size %u: metaroced allows at most %u inline "
			    "bytes", a->inline_size, port.max_inline_data);
	c->pd = mrc_alloc_pd(c->s);
	if (c->pd == NULL)
		return fail(c, -errno, "alloc_pd");
	/* Each CQ holds what can be outstanding on it (as perftest sizes them), within the
	 * daemon's advertised max_cqe: sends may all be signalled (latency tests), receives are
	 * posted min(rx_depth, iters) deep per QP. */
	rdepth = is_send(c) ? rx_outstanding(a) : 1;
	sdepth = (a->tx_depth < 2 ? 2 : a->tx_depth) * c->nqp;
	if (sdepth > port.max_cqe && mr_perf_test_is_bw(a->test) && a->cq_mod > 1)
		/* bandwidth tests signal one send in cq_mod, and the last (perftest's moderation) */
		sdepth = ((a->tx_depth + a->cq_mod - 1) / a->cq_mod + 1) * c->nqp;
	depth = rdepth * c->nqp;
	if (sdepth > port.max_cqe || depth > port.max_cqe)
		return fail(c, -EINVAL, "%u QPs need %llu send and %llu receive CQEs; the daemon "
			    "allows %u per CQ (lower -t/-r/-q)", c->nqp, (unsigned long long)sdepth,
			    (unsigned long long)depth, port.max_cqe);
	c->scq = mrc_create_cq(c->s, (uint32_t)sdepth);
	c->rcq = c->scq != NULL ? mrc_create_cq(c->s, (uint32_t)depth) : NULL;
	if (c->rcq == NULL)
		return fail(c, -errno, "create_cq");
	if (a->use_srq) {
		/* receives are accounted per QP index (each QP's share of the buffers): the SRQ
		 * holds what every QP would have posted */
		c->srq = mrc_create_srq(c->pd, (uint32_t)(rx_outstanding(a) * c->nqp), 1);
		if (c->srq == NULL)
			return fail(c, -errno, "create_srq(%llu)",
				    (unsigned long long)(rx_outstanding(a) * c->nqp));
	}
	srand48((long)getpid() * (long)time(NULL));
	for (unsigned i = 0; i < c->nqp; i++) {
		struct mr_perf_qp *q = &c->qp[i];

		q->half = (size_t)((max_size < 8 ? 8 : max_size) + 4095) & ~(size_t)4095;
		q->buf = mrc_alloc_buf(c->s, 2 * q->half);
		if (q->buf == NULL)
			return fail(c, -errno, "alloc_buf(%zu)", 2 * q->half);
		q->mr = mrc_reg_mr(c->pd, q->buf, 2 * q->half,
				   MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE |
				   MR_ACCESS_REMOTE_READ | MR_ACCESS_REMOTE_ATOMIC);
		if (q->mr == NULL)
			return fail(c, -errno, "reg_mr");
		memset(&init, 0, sizeof(init));
		init.qp_type = MRC_QPT_RC;
		init.send_cq = c->scq;
		init.recv_cq = c->rcq;
		init.max_send_wr = a->tx_depth < 2 ? 2 : a->tx_depth;
		init.max_recv_wr = is_send(c) ? a->rx_depth : 1;
		init.max_send_sge = init.max_recv_sge = 1;
		init.max_inline_data = a->inline_size;
		init.srq = c->srq;
		q->qp = mrc_create_qp(c->pd, &init);
		if (q->qp == NULL)
			return fail(c, -errno, "create_qp");
		q->mine.lid = 0;
		q->mine.out_reads = (c->verb == MR_VERB_READ || c->verb == MR_VERB_ATOMIC) ?
					    (a->out_reads != 0 ? a->out_reads : READ_ATOMIC_DEPTH) : 1;
		q->mine.qpn = mrc_qp_num(q->qp);
		q->mine.psn = (uint32_t)lrand48() & 0xffffff; /* as perftest: random 24-bit */
		q->mine.rkey = mrc_mr_rkey(q->mr);
		q->mine.vaddr = (uint64_t)(uintptr_t)(q->buf + q->half);
		memcpy(q->mine.gid, c->gid, 16);
		if (a->verify) {
			/* the sender's source, or the region a READ fetches from us */
			if ((c->client || a->bidir || !mr_perf_test_is_bw(a->test)) &&
			    c->verb != MR_VERB_READ)
				mr_pattern_fill(a->seed, q->buf, q->half);
			if ((!c->client || a->bidir) && c->verb == MR_VERB_READ)
				mr_pattern_fill(a->seed, q->buf + q->half, q->half);
		}
	}
	return 0;
}

void mr_perf_close(struct mr_perf_ctx *c)
{
	for (unsigned i = 0; i < c->nqp; i++) {
		struct mr_perf_qp *q = &c->qp[i];

		if (q->qp != NULL)
			mrc_destroy_qp(q->qp);
		if (q->mr != NULL)
			mrc_dereg_mr(q->mr);
		if (q->buf != NULL)
			mrc_free_buf(c->s, q->buf);
	}
	if (c->scq != NULL)
		mrc_destroy_cq(c->scq);
	if (c->srq != NULL)
		mrc_destroy_srq(c->srq);
	if (c->rcq != NULL)
		mrc_destroy_cq(c->rcq);
	if (c->pd != NULL)
		mrc_dealloc_pd(c->pd);
	if (c->s != NULL)
		mrc_close(c->s);
	c->s = NULL;
}

int mr_perf_connect(struct mr_perf_ctx *c, uint32_t mtu)
{
	for (unsigned i = 0; i < c->nqp; i++) {
		struct mr_perf_qp *q = &c->qp[i];
		struct mrc_qp_attr at;
		int rc;

		memset(&at, 0, sizeof(at));
		at.qp_state = MR_QPS_INIT;
		at.qp_access_flags = MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ |
				     MR_ACCESS_REMOTE_ATOMIC;
		rc = mrc_modify_qp(q->qp, &at, MRC_QP_STATE | MRC_QP_PKEY_INDEX | MRC_QP_ACCESS_FLAGS);
		if (rc < 0)
			return fail(c, rc, "modify_qp INIT");
		at.qp_state = MR_QPS_RTR;
		memcpy(at.path.sgid, c->gid, 16);
		memcpy(at.path.dgid, q->rem.gid, 16);
		/* RoCE v2 over IPv4 when the GID is IPv4-mapped (IBA A17.4.5.1) */
		at.path.ipv6 = !(q->rem.gid[10] == 0xff && q->rem.gid[11] == 0xff &&
				 memcmp(q->rem.gid, "\0\0\0\0\0\0\0\0\0\0", 10) == 0);
		at.path.ttl = (uint8_t)c->a->hop_limit;         /* -L, perftest's 64 */
		at.path.tclass = c->a->tclass >= 0 ? (uint8_t)c->a->tclass : 0; /* --tclass */
		at.path_mtu = mtu;
		at.dest_qp_num = q->rem.qpn;
		at.rq_psn = q->rem.psn; /* the peer's SQ PSN is our expected PSN (IBA 9.7.1) */
		at.max_dest_rd_atomic = (uint8_t)q->mine.out_reads;
		at.min_rnr_timer = 12;
		/* MetaRoCE only when both ends offered it in the exchange (negotiate.h); else the
		 * QP stays plain RC, the only thing a stock peer understands. */
		at.transport = c->metaroce ? MRC_TRANSPORT_METAROCE : MRC_TRANSPORT_RC;
		at.n_entropies = c->metaroce ? c->n_entropies : 0;
		at.cc = c->metaroce ? c->cc : MRC_CC_NONE;
		rc = mrc_modify_qp(q->qp, &at, MRC_QP_STATE | MRC_QP_PATH | MRC_QP_PATH_MTU |
				   MRC_QP_DEST_QPN | MRC_QP_RQ_PSN | MRC_QP_MAX_DEST_RD_ATOMIC |
				   MRC_QP_MIN_RNR_TIMER | (c->metaroce ? MRC_QP_TRANSPORT : 0));
		if (rc < 0)
			return fail(c, rc, "modify_qp RTR");
		at.qp_state = MR_QPS_RTS;
		at.sq_psn = q->mine.psn;
		at.timeout = (uint8_t)c->a->qp_timeout; /* -u, perftest's DEF_QP_TIME 14 */
		at.retry_cnt = (uint8_t)c->a->retry_count; /* --retry_count, 7 */
		at.rnr_retry = 7;
		/* never more outstanding READs/atomics than the responder offers (C9-149) */
		at.max_rd_atomic = (uint8_t)(q->rem.out_reads == 0 ? 1 :
					     q->rem.out_reads < q->mine.out_reads ? q->rem.out_reads :
										    q->mine.out_reads);
		rc = mrc_modify_qp(q->qp, &at, MRC_QP_STATE | MRC_QP_SQ_PSN | MRC_QP_TIMEOUT |
				   MRC_QP_RETRY_CNT | MRC_QP_RNR_RETRY | MRC_QP_MAX_QP_RD_ATOMIC);
		if (rc < 0)
			return fail(c, rc, "modify_qp RTS");
	}
	return 0;
}

static void build_wr(const struct mr_perf_ctx *c, const struct mr_perf_qp *q, uint64_t size,
		     struct mr_send_wr *wr)
{
	memset(wr, 0, sizeof(*wr));
	wr->num_sge = 1;
	wr->sg_list[0].addr = (uint64_t)(uintptr_t)q->buf;
	wr->sg_list[0].length = (uint32_t)size;
	wr->sg_list[0].lkey = mrc_mr_lkey(q->mr);
	/* -I: copied into the work request at post time (perftest's IBV_SEND_INLINE) */
	if (c->a->inline_size != 0 && size <= c->a->inline_size &&
	    (c->verb == MR_VERB_WRITE || c->verb == MR_VERB_SEND))
		wr->send_flags |= MR_SEND_INLINE;
	switch (c->verb) {
	case MR_VERB_WRITE:
		wr->opcode = MR_WR_RDMA_WRITE;
		break;
	case MR_VERB_READ:
		wr->opcode = MR_WR_RDMA_READ;
		break;
	case MR_VERB_SEND:
		wr->opcode = MR_WR_SEND;
		break;
	case MR_VERB_ATOMIC:
		wr->sg_list[0].length = 8; /* IBA 9.4.5: 8-byte operand */
		wr->atomic.remote_addr = q->rem.vaddr;
		wr->atomic.rkey = q->rem.rkey;
		if (c->a->atomic_cas) {
			/* -A CMP_AND_SWAP: 0 -> 0, so every one succeeds and the target stays 0 */
			wr->opcode = MR_WR_ATOMIC_CMP_AND_SWP;
			wr->atomic.compare_add = 0;
			wr->atomic.swap = 0;
		} else {
			wr->opcode = MR_WR_ATOMIC_FETCH_AND_ADD;
			wr->atomic.compare_add = 1;
		}
		return;
	}
	wr->rdma.remote_addr = q->rem.vaddr;
	wr->rdma.rkey = q->rem.rkey;
}

/* A work request build_wr() made for another QP, pointed at q: only the fields that differ
 * between QPs (build_wr takes the same size and verb for all of them). The bandwidth loop
 * builds its requests once and retargets them, as perftest posts the requests it set up
 * before the loop: a 336-byte memset per post was most of the posting thread's stores, and a
 * posting thread that waits for its store buffer (the queue entries go to lines the engine's
 * CPU last read) waits longer the more stores each post adds. */
static void retarget_wr(const struct mr_perf_ctx *c, const struct mr_perf_qp *q,
			struct mr_send_wr *wr)
{
	wr->sg_list[0].addr = (uint64_t)(uintptr_t)q->buf;
	wr->sg_list[0].lkey = mrc_mr_lkey(q->mr);
	if (c->verb == MR_VERB_ATOMIC) {
		wr->atomic.remote_addr = q->rem.vaddr;
		wr->atomic.rkey = q->rem.rkey;
	} else {
		wr->rdma.remote_addr = q->rem.vaddr;
		wr->rdma.rkey = q->rem.rkey;
	}
}

#define DRAIN_QUIET_NS 200000000ull /* -D: the receiver's CQ quiet this long after the peer ended */

/* -D on the passive side (send_bw's receiver, the lat server): has the active side moved on to
 * its end-of-test exchange on the setup connection? Looked at once a millisecond. */
static bool peer_done(struct mr_perf_ctx *c, uint64_t now)
{
	struct pollfd p = { .fd = c->peer_fd, .events = POLLIN };

	if (c->a->duration == 0 || c->peer_fd < 0 || now - c->done_check_ns < 1000000)
		return false;
	c->done_check_ns = now;
	return poll(&p, 1, 0) > 0;
}

/* Room for entry n in a growing timestamp array (duration mode: the count is not known). */
static int room(uint64_t **v, uint64_t *cap, uint64_t n)
{
	uint64_t *nv;

	if (n < *cap)
		return 0;
	nv = realloc(*v, (*cap * 2) * sizeof(**v));
	if (nv == NULL)
		return -ENOMEM;
	*v = nv;
	*cap *= 2;
	return 0;
}

static int check_wc(struct mr_perf_ctx *c, const struct mr_wc *wc)
{
	if (wc->status != MR_WC_SUCCESS)
		return fail(c, -EIO, "completion error status %d (vendor 0x%x) on QP 0x%x",
			    (int)wc->status, wc->vendor_err, wc->qp_num);
	return 0;
}

static int post_recv_one(struct mr_perf_ctx *c, unsigned i, uint64_t size)
{
	struct mr_perf_qp *q = &c->qp[i];
	struct mr_recv_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = i;
	wr.num_sge = 1;
	wr.sg_list[0].addr = (uint64_t)(uintptr_t)(q->buf + q->half);
	wr.sg_list[0].length = (uint32_t)size;
	wr.sg_list[0].lkey = mrc_mr_lkey(q->mr);
	/* --use-srq: wr_id still names the buffer (QP index) the receive lands in */
	return c->srq != NULL ? mrc_post_srq_recv(c->srq, &wr) : mrc_post_recv(q->qp, &wr);
}

/* Gives back the receive a completion consumed, counted in *posted. */
static int repost_recv(struct mr_perf_ctx *c, unsigned i, uint64_t size, uint64_t *posted)
{
	int r = post_recv_one(c, i, size);

	if (r < 0)
		return fail(c, r, "post_recv");
	(*posted)++;
	return 0;
}

/* -e: nothing to do until a completion: arm the CQs (IBA 11.4.2.2), look once more (an entry
 * may have come before the arm), then sleep on their event fds, at most EVENT_WAIT_MS so the
 * callers' progress and -D checks still run. */
static int ev_wait(struct mr_perf_ctx *c, struct mrc_cq *a, struct mrc_cq *b)
{
	struct mrc_cq *cq[2] = { a, b };
	struct pollfd p[2];
	int n = b != NULL ? 2 : 1, rc;

	for (int k = 0; k < n; k++) {
		rc = mrc_req_notify_cq(cq[k], false);
		if (rc < 0)
			return fail(c, rc, "req_notify_cq");
	}
	for (int k = 0; k < n; k++)
		if (mrc_cq_ready(cq[k]) > 0)
			return 0;
	for (int k = 0; k < n; k++) {
		p[k].fd = mrc_cq_event_fd(cq[k]);
		p[k].events = POLLIN;
		p[k].revents = 0;
	}
	if (poll(p, (nfds_t)n, EVENT_WAIT_MS) < 0)
		return fail(c, -errno, "poll on the CQ event fd");
	for (int k = 0; k < n; k++)
		if (p[k].revents & POLLIN) {
			mrc_cq_ack_events(cq[k]);
			c->cq_events++;
		}
	return 0;
}

/* A receive completion on a receiving side: --verify check of what it carried. */
static void verify_recv(struct mr_perf_ctx *c, const struct mr_wc *wc, unsigned i, uint64_t size)
{
	if (!c->a->verify)
		return;
	c->corrupted += mr_pattern_check(c->a->seed, c->qp[i].buf + c->qp[i].half, wc->byte_len);
	c->verified += wc->byte_len;
	if (wc->byte_len != size)
		c->corrupted += size; /* a short message is a corruption */
}

/* --perform_warm_up (write/read/atomic): one send queue's worth per QP before the clock starts,
 * the last one signalled. Atomics add 0 (or fail their compare) so --verify's count holds. */
static int warm_up(struct mr_perf_ctx *c, uint64_t size)
{
	struct mr_send_wr wr;
	struct mr_wc wc[POLL_BATCH];
	unsigned n = c->a->tx_depth, left = c->nqp;
	uint64_t start = now_ns();
	int rc;

	for (unsigned i = 0; i < c->nqp; i++)
		for (unsigned k = 0; k < n; k++) {
			build_wr(c, &c->qp[i], size, &wr);
			wr.wr_id = i;
			if (c->verb == MR_VERB_ATOMIC) {
				wr.atomic.compare_add = c->a->atomic_cas ? UINT64_MAX : 0;
				wr.atomic.swap = 0;
			}
			if (k + 1 == n)
				wr.send_flags |= MR_SEND_SIGNALED;
			rc = mrc_post_send(c->qp[i].qp, &wr);
			if (rc < 0)
				return fail(c, rc, "post_send (warm-up)");
		}
	while (left > 0) {
		rc = mrc_poll_cq(c->scq, POLL_BATCH, wc);
		if (rc < 0)
			return fail(c, rc, "poll_cq (warm-up)");
		for (int k = 0; k < rc; k++)
			if (check_wc(c, &wc[k]) < 0)
				return -EIO;
		left -= (unsigned)rc;
		if (rc == 0 && c->a->events && ev_wait(c, c->scq, NULL) < 0)
			return -EIO;
		if (now_ns() - start > PROGRESS_TIMEOUT_NS)
			return fail(c, -ETIMEDOUT, "no completion for 10 s (warm-up)");
	}
	return 0;
}

int mr_perf_bw_client(struct mr_perf_ctx *c, uint64_t size, struct mr_pt_bw_report *out)
{
	unsigned int spins = 0; /* empty polls in a row (--yield) */
	const struct mr_perf_args *a = c->a;
	bool dur = a->duration > 0;
	bool rx = a->bidir && is_send(c); /* -b send: we are a receiver too */
	unsigned list = a->post_list;
	uint64_t iters = dur ? UINT64_MAX : a->iters;
	uint64_t total = dur ? 0 : iters * c->nqp;
	uint64_t rtotal = rx ? a->iters * c->nqp : 0, rgot = 0;
	uint64_t scnt[MR_PERF_MAX_QPS] = { 0 }, ccnt[MR_PERF_MAX_QPS] = { 0 };
	/* Per QP, the next send count to signal (a multiple of cq_mod): a counter, not a
	 * division per post (the 64-bit div was a third of this loop's cycles per 8-byte WRITE
	 * at 16 QPs, perf). */
	uint64_t next_sig[MR_PERF_MAX_QPS];
	uint64_t rposted[MR_PERF_MAX_QPS];
	uint64_t *posted = NULL, *completed = NULL, gpost = 0, gcomp = 0;
	uint64_t t0, t_end = 0, last_progress, done_qps = 0;
	static struct mr_send_wr wrs[MR_PERF_MAX_POST_LIST];
	struct mr_wc wc[POLL_BATCH];
	unsigned int built_for = 0; /* the QP wrs[] point at (built below for QP 0) */
	uint32_t flags;
	int rc = 0;

	if (a->warm_up) {
		rc = warm_up(c, size);
		if (rc < 0)
			return rc;
	}
	for (unsigned i = 0; i < c->nqp; i++) {
		rposted[i] = rx_outstanding(a);
		next_sig[i] = a->cq_mod;
	}
	if (!dur) {
		posted = malloc(total * sizeof(*posted));
		completed = malloc(total * sizeof(*completed));
		if (posted == NULL || completed == NULL) {
			free(posted);
			free(completed);
			return fail(c, -ENOMEM, "timestamps for %llu messages", (unsigned long long)total);
		}
	}
	for (unsigned k = 0; k < list; k++)
		build_wr(c, &c->qp[0], size, &wrs[k]);
	flags = wrs[0].send_flags;
	t0 = now_ns();
	last_progress = t0;
	if (dur)
		t_end = t0 + (uint64_t)a->duration * 1000000000ull;
	while (done_qps < c->nqp || rgot < rtotal) {
		uint64_t now = now_ns();
		bool busy = false;

		for (unsigned i = 0; i < c->nqp; i++) {
			struct mr_perf_qp *q = &c->qp[i];

			/* -l: whole lists only (the parser made iters and tx_depth multiples) */
			while (scnt[i] < iters && scnt[i] - ccnt[i] + list <= a->tx_depth &&
			       !(dur && now >= t_end)) {
				/* Per-message timestamps only where they are kept (-n runs): a
				 * clock read per post was 13 % of a -D run's posting thread. */
				uint64_t ts = dur ? 0 : now_ns();

				for (unsigned k = 0; k < list; k++) {
					uint64_t n = scnt[i] + k + 1;
					bool sig = n == next_sig[i];

					if (built_for != i)
						retarget_wr(c, q, &wrs[k]);
					wrs[k].wr_id = i;
					/* signal one in cq_mod, and the last one (perftest's cq
					 * moderation; with -l, cq_mod is the list size) */
					wrs[k].send_flags = sig || n == iters ? flags | MR_SEND_SIGNALED
									      : flags;
					if (sig)
						next_sig[i] += a->cq_mod;
					if (!dur)
						posted[gpost + k] = ts;
				}
				built_for = i;
				rc = list == 1 ? mrc_post_send(q->qp, &wrs[0])
					       : mrc_post_send_batch(q->qp, wrs, (int)list);
				if (rc < 0 || (list > 1 && rc != (int)list)) {
					fail(c, rc < 0 ? rc : -EIO, list > 1 ? "post_send_batch(%u)" :
					     "post_send", list);
					rc = rc < 0 ? rc : -EIO;
					goto out;
				}
				gpost += list;
				scnt[i] += list;
				busy = true;
			}
		}
		rc = mrc_poll_cq(c->scq, POLL_BATCH, wc);
		if (rc < 0) {
			fail(c, rc, "poll_cq");
			goto out;
		}
		now = now_ns();
		busy = busy || rc > 0;
		for (int k = 0; k < rc; k++) {
			unsigned i = (unsigned)wc[k].wr_id;
			uint64_t upto;

			if (check_wc(c, &wc[k]) < 0 || i >= c->nqp) {
				rc = -EIO;
				goto out;
			}
			/* one CQE completes everything posted on that QP up to it */
			upto = ccnt[i] + a->cq_mod;
			if (upto > scnt[i] || (scnt[i] == iters && upto > iters))
				upto = scnt[i];
			for (uint64_t n = ccnt[i]; n < upto; n++)
				if (!dur && gcomp < total)
					completed[gcomp++] = now;
			ccnt[i] = upto;
			last_progress = now;
		}
		if (rx) {
			rc = mrc_poll_cq(c->rcq, POLL_BATCH, wc);
			if (rc < 0) {
				fail(c, rc, "poll_cq (receive)");
				goto out;
			}
			busy = busy || rc > 0;
			for (int k = 0; k < rc; k++) {
				unsigned i = (unsigned)wc[k].wr_id;

				if (check_wc(c, &wc[k]) < 0 || i >= c->nqp) {
					rc = -EIO;
					goto out;
				}
				verify_recv(c, &wc[k], i, size);
				rgot++;
				if (rposted[i] < a->iters) {
					int r = repost_recv(c, i, size, &rposted[i]);

					if (r < 0) {
						rc = r;
						goto out;
					}
				}
				last_progress = now;
			}
		}
		rc = 0;
		done_qps = 0;
		for (unsigned i = 0; i < c->nqp; i++) {
			bool stopped = dur ? now >= t_end : scnt[i] == iters;

			if (stopped && ccnt[i] == scnt[i])
				done_qps++;
			/* in duration mode an unsignalled tail may remain: drain with one more */
			if (dur && now >= t_end && ccnt[i] < scnt[i] &&
			    (scnt[i] % a->cq_mod) != 0 && scnt[i] - ccnt[i] < a->cq_mod) {
				ccnt[i] = scnt[i];
				done_qps++;
			}
		}
		if (now - last_progress > PROGRESS_TIMEOUT_NS) {
			rc = fail(c, -ETIMEDOUT, "no completion for 10 s");
			goto out;
		}
		if (!busy && a->events && (done_qps < c->nqp || rgot < rtotal) &&
		    ev_wait(c, c->scq, rx ? c->rcq : NULL) < 0) {
			rc = -EIO;
			goto out;
		}
		if (busy)
			spins = 0;
		else if (!a->events)
			poll_idle(c, &spins);
	}
	if (dur) {
		double secs = (double)(now_ns() - t0) / 1e9;
		double unit = a->gbits ? 125000000.0 : 1048576.0;

		out->size = size;
		out->iters = gpost;
		out->bw_peak = 0; /* perftest reports no peak in duration mode */
		out->bw_avg = (double)size * (double)gpost / secs / unit;
		out->msg_rate = (double)gpost / secs / 1e6;
	} else {
		rc = mr_bw_compute(posted, completed, total, size, 1, a->gbits, out);
		if (rc < 0)
			fail(c, rc, "bandwidth computation");
		if (a->no_peak)
			out->bw_peak = 0; /* -N */
	}
	if (a->verify && c->verb == MR_VERB_READ)
		for (unsigned i = 0; i < c->nqp; i++) {
			c->corrupted += mr_pattern_check(a->seed, c->qp[i].buf, size);
			c->verified += size;
		}
out:
	free(posted);
	free(completed);
	return rc;
}

int mr_perf_post_recvs(struct mr_perf_ctx *c, uint64_t size)
{
	uint64_t n = c->a->rx_depth < c->a->iters ? c->a->rx_depth : c->a->iters;

	for (unsigned i = 0; i < c->nqp; i++)
		for (uint64_t k = 0; k < n; k++) {
			int rc = post_recv_one(c, i, size);

			if (rc < 0)
				return fail(c, rc, "post_recv");
		}
	return 0;
}

/* A receiver cannot see when the sender posted: its clock starts at the first arrival (it may
 * have been descheduled before it, on 2 cores busy-polling daemons). Average over the n - 1
 * inter-arrival gaps; peak = the best window of cq_mod consecutive arrivals. */
static int server_rates(const uint64_t *t, uint64_t n, uint64_t size, unsigned cq_mod, bool gbits,
			struct mr_pt_bw_report *out)
{
	double unit = gbits ? 125000000.0 : 1048576.0;
	uint64_t w = cq_mod < n - 1 ? cq_mod : n - 1;
	double best;

	if (n < 2 || t[n - 1] <= t[0])
		return -EINVAL;
	best = (double)(t[n - 1] - t[0]) / (double)(n - 1);
	for (uint64_t i = 0; i + w < n; i++) {
		double g = (double)(t[i + w] - t[i]) / (double)w;

		if (g > 0 && g < best)
			best = g;
	}
	out->size = size;
	out->iters = n;
	out->bw_avg = (double)size * (double)(n - 1) / ((double)(t[n - 1] - t[0]) / 1e9) / unit;
	out->msg_rate = (double)(n - 1) / ((double)(t[n - 1] - t[0]) / 1e9) / 1e6;
	out->bw_peak = (double)size / (best / 1e9) / unit;
	return 0;
}

int mr_perf_bw_send_server(struct mr_perf_ctx *c, uint64_t size, struct mr_pt_bw_report *out)
{
	const struct mr_perf_args *a = c->a;
	bool dur = a->duration > 0;
	uint64_t total = dur ? UINT64_MAX : a->iters * c->nqp, got = 0;
	uint64_t cap = dur ? 4096 : total;
	uint64_t rposted[MR_PERF_MAX_QPS], rcnt[MR_PERF_MAX_QPS] = { 0 };
	uint64_t *completed = malloc(cap * sizeof(*completed));
	uint64_t t0 = now_ns(), last = t0, drain_until = 0, rc_got = 0;
	struct mr_wc wc[POLL_BATCH];
	int rc = 0;

	if (completed == NULL) {
		return fail(c, -ENOMEM, "timestamps");
	}
	for (unsigned i = 0; i < c->nqp; i++)
		rposted[i] = a->rx_depth < a->iters ? a->rx_depth : a->iters;
	uint64_t next_row = t0 + (uint64_t)a->duration * 1000000000ull, row_from = 0;

	while (got < total) {
		uint64_t now;

		rc = mrc_poll_cq(c->rcq, POLL_BATCH, wc);
		if (rc < 0) {
			fail(c, rc, "poll_cq");
			goto out;
		}
		now = now_ns();
		for (int k = 0; k < rc; k++) {
			unsigned i = (unsigned)wc[k].wr_id;

			if (check_wc(c, &wc[k]) < 0 || i >= c->nqp) {
				rc = -EIO;
				goto out;
			}
			verify_recv(c, &wc[k], i, size);
			if (room(&completed, &cap, got) < 0) {
				rc = fail(c, -ENOMEM, "timestamps");
				goto out;
			}
			completed[got++] = now;
			rcnt[i]++;
			if (dur || rposted[i] < a->iters) {
				int r = repost_recv(c, i, size, &rposted[i]);

				if (r < 0) {
					rc = r;
					goto out;
				}
			}
			last = now;
		}
		if (rc == 0 && a->events && ev_wait(c, c->rcq, NULL) < 0) {
			rc = -EIO;
			goto out;
		}
		rc = 0;
		if (a->run_infinitely && now >= next_row) {
			/* a row per -D period over the messages of that period, then start over */
			struct mr_pt_bw_report row;

			if (got - row_from >= 2 &&
			    server_rates(completed + row_from, got - row_from, size, a->cq_mod,
					 a->gbits, &row) == 0) {
				row.bw_peak = 0;
				mr_report_bw_row(stdout, &row, a->gbits);
			}
			next_row = now + (uint64_t)a->duration * 1000000000ull;
			got = row_from = 0;
			last = now;
			continue;
		}
		/* The peer saw its last ACK: what it sent is in our daemon, and its completions
		 * reach our CQ shortly; take them until the CQ stays quiet. */
		if (dur && !a->run_infinitely && drain_until == 0 && peer_done(c, now))
			drain_until = now + DRAIN_QUIET_NS;
		if (drain_until != 0) {
			if (rc_got != got)
				drain_until = now + DRAIN_QUIET_NS;
			rc_got = got;
			if (now >= drain_until)
				break;
		}
		if (now - last > PROGRESS_TIMEOUT_NS) {
			rc = fail(c, -ETIMEDOUT, "no message for 10 s (%llu of %llu received)",
				  (unsigned long long)got, (unsigned long long)total);
			goto out;
		}
	}
	rc = server_rates(completed, got, size, a->cq_mod, a->gbits, out);
	if (rc < 0)
		fail(c, rc, "too few messages for a rate");
	if (a->no_peak || dur)
		out->bw_peak = 0; /* -N; and perftest reports no peak in duration mode */
out:
	free(completed);
	return rc;
}

/* Waits for one completion on cq; 0 or -errno. */
static int wait_one(struct mr_perf_ctx *c, struct mrc_cq *cq, struct mr_wc *wc)
{
	uint64_t start = 0;
	unsigned int spins = 0, k = 0;

	for (;;) {
		int rc = mrc_poll_cq(cq, 1, wc);

		if (rc < 0)
			return fail(c, rc, "poll_cq");
		if (rc == 1)
			return check_wc(c, wc);
		/* The 10-s check on every 16th empty poll, its clock started at the first of them:
		 * a clock read per poll, or per call (a ping-pong's every round trip), is not free. */
		if (++k % 16 == 0) {
			if (start == 0)
				start = now_ns();
			else if (now_ns() - start > PROGRESS_TIMEOUT_NS)
				return fail(c, -ETIMEDOUT, "no completion for 10 s");
		}
		if (c->a->events && ev_wait(c, cq, NULL) < 0)
			return -EIO;
		poll_idle(c, &spins);
	}
}

/* The next completion on cq, or 1 when (-D) the peer has ended the run. */
static int wait_or_done(struct mr_perf_ctx *c, struct mrc_cq *cq, struct mr_wc *wc)
{
	uint64_t start = now_ns();
	unsigned int spins = 0;

	for (;;) {
		int rc = mrc_poll_cq(cq, 1, wc);
		uint64_t now;

		if (rc < 0)
			return fail(c, rc, "poll_cq");
		if (rc == 1)
			return check_wc(c, wc);
		now = now_ns();
		if (peer_done(c, now))
			return 1;
		if (now - start > PROGRESS_TIMEOUT_NS)
			return fail(c, -ETIMEDOUT, "no completion for 10 s");
		if (c->a->events && ev_wait(c, cq, NULL) < 0)
			return -EIO;
		poll_idle(c, &spins);
	}
}

/* The completion of the passive side's own reply. Under -D the active side ends on its clock
 * after a whole round, and the passive side's next reply may then be in flight to a QP that
 * is being destroyed: nobody ACKs it, so its completion would be RETRY_EXC_ERR after the
 * whole retry budget (IBA 9.7.6.1.3) unless the end-of-test message stops the wait (1). */
static int wait_reply_sent(struct mr_perf_ctx *c, struct mr_wc *wc)
{
	if (c->a->duration > 0 && !c->client)
		return wait_or_done(c, c->scq, wc);
	return wait_one(c, c->scq, wc);
}

/* write_lat's ping-pong, as perftest's run_iter_lat_write (perftest_resources.c): each side
 * RDMA-WRITEs `size` bytes from the start of its source into the peer's advertised buffer, the
 * last byte carrying the iteration number (mod 256), and spins on the last byte of its own
 * receive buffer (vaddr + size - 1) for the peer's matching write. The server writes first
 * (it skips the first poll), the client waits for it; every write is signalled and its
 * completion reaped before the next poll. tp[n] = when write n+1 was posted. */
static int lat_write(struct mr_perf_ctx *c, uint64_t size, uint64_t **tp, uint64_t *cap,
		     uint64_t *count)
{
	struct mr_perf_qp *q = &c->qp[0];
	bool dur = c->a->duration > 0;
	uint64_t iters = dur ? UINT64_MAX : c->a->iters, scnt = 0, ccnt = 0, rcnt = 0;
	uint64_t t_end = now_ns() + (uint64_t)c->a->duration * 1000000000ull;
	volatile uint8_t *poll_byte = q->buf + q->half + size - 1;
	struct mr_send_wr wr;
	struct mr_wc wc;
	int rc;

	build_wr(c, q, size, &wr);
	wr.send_flags |= MR_SEND_SIGNALED;
	while (scnt < iters || ccnt < iters || rcnt < iters) {
		/* -D: the client stops on its clock after a whole round; the server follows */
		if (dur && c->client && now_ns() >= t_end)
			break;
		if (rcnt < iters && !(scnt < 1 && !c->client)) {
			uint64_t start = 0;
			unsigned int spins = 0, k = 0;
			bool done = false;

			rcnt++;
			while (*poll_byte != (uint8_t)rcnt) {
				uint64_t now;

				poll_idle(c, &spins);
				/* The clock only every 16th empty poll, started at the first of them:
				 * the checks below are coarse (1 ms, 10 s), and a read per spin (or
				 * per round trip) delays seeing the write. */
				if (++k % 16 != 0)
					continue;
				now = now_ns();
				if (start == 0)
					start = now;
				if (peer_done(c, now)) {
					done = true;
					break;
				}
				if (now - start > PROGRESS_TIMEOUT_NS)
					return fail(c, -ETIMEDOUT,
						    "no write from the peer for 10 s (waiting for #%llu)",
						    (unsigned long long)rcnt);
			}
			if (done)
				break;
		}
		if (scnt < iters) {
			if (room(tp, cap, scnt) < 0)
				return fail(c, -ENOMEM, "latency samples");
			(*tp)[scnt] = now_ns();
			q->buf[size - 1] = (uint8_t)++scnt;
			rc = mrc_post_send(q->qp, &wr);
			if (rc < 0)
				return fail(c, rc, "post_send");
		}
		if (ccnt < iters) {
			rc = wait_reply_sent(c, &wc);
			if (rc < 0)
				return rc;
			if (rc == 1)
				break; /* its post time still closes a whole round */
			ccnt++;
		}
	}
	*count = scnt;
	return 0;
}

/* -H/-U: every one-way sample, one per line, before the summary row. */
static void print_samples(const double *v, uint64_t n)
{
	printf(" #, %s\n", "usec");
	for (uint64_t i = 0; i < n; i++)
		printf(" %llu, %.2f\n", (unsigned long long)(i + 1), v[i]);
}

int mr_perf_lat(struct mr_perf_ctx *c, uint64_t size, struct mr_lat_stats *out)
{
	const struct mr_perf_args *a = c->a;
	struct mr_perf_qp *q = &c->qp[0]; /* latency runs on one QP, as perftest */
	bool dur = a->duration > 0;
	uint64_t iters = dur ? UINT64_MAX : a->iters, cap = dur ? 4096 : a->iters, count = 0;
	uint64_t *tp = malloc(cap * sizeof(*tp));
	uint64_t t_end = now_ns() + (uint64_t)a->duration * 1000000000ull;
	double *samples = NULL;
	double rtt_factor = (c->verb == MR_VERB_READ || c->verb == MR_VERB_ATOMIC) ? 1.0 : 2.0;
	struct mr_send_wr wr;
	struct mr_wc wc;
	int rc = 0;

	if (tp == NULL)
		return fail(c, -ENOMEM, "latency samples");
	if (c->verb == MR_VERB_WRITE) {
		rc = lat_write(c, size, &tp, &cap, &count);
		if (rc < 0)
			goto out;
	}
	for (uint64_t n = 0; c->verb != MR_VERB_WRITE && n < iters; n++, count = n) {
		if (dur && c->client && now_ns() >= t_end)
			break;
		/* send_lat: the server answers each message of the client */
		if (!c->client && c->verb == MR_VERB_SEND) {
			rc = wait_or_done(c, c->rcq, &wc);
			if (rc == 1) {
				rc = 0;
				break;
			}
			if (rc == 0 && (dur || n + a->rx_depth < iters))
				rc = post_recv_one(c, 0, size);
			if (rc < 0)
				goto out;
		}
		build_wr(c, q, size, &wr);
		wr.send_flags |= MR_SEND_SIGNALED;
		if (room(&tp, &cap, n) < 0) {
			rc = fail(c, -ENOMEM, "latency samples");
			goto out;
		}
		tp[n] = now_ns();
		rc = mrc_post_send(q->qp, &wr);
		if (rc < 0) {
			fail(c, rc, "post_send");
			goto out;
		}
		rc = wait_reply_sent(c, &wc);
		if (rc == 1) {
			rc = 0;
			count = n + 1;
			break;
		}
		if (rc < 0)
			goto out;
		if (c->client && c->verb == MR_VERB_SEND) {
			rc = wait_one(c, c->rcq, &wc);
			if (rc == 0 && (dur || n + a->rx_depth < iters))
				rc = post_recv_one(c, 0, size);
			if (rc < 0)
				goto out;
		}
		if (a->verify && c->verb == MR_VERB_SEND) {
			/* the pattern minus nothing: SEND payload is untouched */
			c->corrupted += mr_pattern_check(a->seed, q->buf + q->half, size);
			c->verified += size;
		}
	}
	/* print_report_lat(): deltas between consecutive posts, divided by the RTT factor */
	samples = count > 1 ? malloc((count - 1) * sizeof(*samples)) : NULL;
	if (samples == NULL) {
		rc = fail(c, count > 1 ? -ENOMEM : -EINVAL, "latency statistics (%llu samples)",
			  (unsigned long long)count);
		goto out;
	}
	for (uint64_t n = 0; n + 1 < count; n++)
		samples[n] = (double)(tp[n + 1] - tp[n]) / 1000.0 / rtt_factor;
	if (a->unsorted)
		print_samples(samples, count - 1); /* -U: in the order measured */
	rc = mr_lat_compute(samples, count - 1, size, count, out);
	if (rc == 0 && a->histogram && !a->unsorted)
		print_samples(samples, count - 1); /* -H: sorted (mr_lat_compute sorted them) */
	if (rc < 0)
		fail(c, rc, "latency statistics");
	if (a->verify && c->verb == MR_VERB_READ) {
		c->corrupted += mr_pattern_check(a->seed, q->buf, size);
		c->verified += size;
	}
	if (a->verify && c->verb == MR_VERB_WRITE && size > 1) {
		/* the peer's last write; its final byte is the iteration tag */
		c->corrupted += mr_pattern_check(a->seed, q->buf + q->half, size - 1);
		c->verified += size - 1;
	}
out:
	free(tp);
	free(samples);
	return rc;
}

void mr_perf_verify_target(struct mr_perf_ctx *c, uint64_t size)
{
	for (unsigned i = 0; i < c->nqp; i++) {
		struct mr_perf_qp *q = &c->qp[i];

		if (c->verb == MR_VERB_WRITE) {
			c->corrupted += mr_pattern_check(c->a->seed, q->buf + q->half, size);
			c->verified += size;
		} else if (c->verb == MR_VERB_ATOMIC && c->a->duration == 0) {
			uint64_t v;

			/* every FETCH_AND_ADD of 1 landed exactly once (IBA 9.4.5); each
			 * CMP_AND_SWAP swapped 0 for 0 */
			memcpy(&v, q->buf + q->half, 8);
			c->corrupted += v != (c->a->atomic_cas ? 0 : c->a->iters) ? 8 : 0;
			c->verified += 8;
		}
	}
}
