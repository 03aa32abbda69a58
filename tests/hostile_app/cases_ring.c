/* SPDX-License-Identifier: MIT
 * Hostile ring indices: producer indices that jump past the ring or go backwards, rings full
 * of random bytes, CQ consumer/producer indices the app moves under the daemon.
 * shm_abi.h: the daemon keeps private copies of the indices it owns and treats a published
 * index beyond the ring size as a protocol error (counted in ring_corrupt, nothing read).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hostile.h"

#define BUF_LEN (1u << 20)
#define FILL_A 0x11
#define FILL_B 0x22

static void pair_open(struct hside *a, struct hside *b, uint32_t depth)
{
	hside_open(a, 0, BUF_LEN, depth, depth, 4 * depth, FILL_A);
	hside_open(b, 1, BUF_LEN, depth, depth, 4 * depth, FILL_B);
	hpair_connect(a, b, 16, 7);
}

static void sqe_write(struct mrc_sqe *e, const struct hside *a, const struct hside *b,
		      uint64_t wr_id, uint64_t off, uint32_t len)
{
	e->wr_id = wr_id;
	e->opcode = MR_WR_RDMA_WRITE;
	e->send_flags = MR_SEND_SIGNALED;
	e->num_sge = 1;
	e->u.sge[0].addr = (uint64_t)(uintptr_t)a->buf + off;
	e->u.sge[0].length = len;
	e->u.sge[0].lkey = mrc_mr_lkey(a->mr);
	e->rkey = mrc_mr_rkey(b->mr);
	e->remote_addr = (uint64_t)(uintptr_t)b->buf + off;
}

/* A legitimate signaled WRITE must complete successfully (the pair works). */
static bool write_ok(struct hside *a, struct hside *b, uint64_t wr_id, const char *when)
{
	struct mr_wc wc;

	sqe_write(hsqe_next(a->qp), a, b, wr_id, 8192, 4096);
	hsq_publish(a->qp, 1);
	if (hpoll(a->cq, &wc, 1, g_opt->timeout_s * 1000) != 1) {
		hfail("%s: a valid WRITE got no completion", when);
		return false;
	}
	if (wc.wr_id != wr_id || wc.status != MR_WC_SUCCESS) {
		hfail("%s: valid WRITE completed wr_id 0x%" PRIx64 " status %d", when, wc.wr_id,
		      (int)wc.status);
		return false;
	}
	return true;
}

static bool untouched(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* Forged WRITE at the private producer index, then an impossible published index. */
static void sq_bad_index(uint32_t (*bad)(uint32_t prod, uint32_t size), const char *what)
{
	struct hside a, b;
	struct mr_wc wc[8];
	int n;

	pair_open(&a, &b, 16);
	write_ok(&a, &b, 1, what);
	sqe_write(hsqe_next(a.qp), &a, &b, 0xdead0001, 0, 4096);
	atomic_store_explicit(&a.qp->sq->prod, bad(a.qp->sq_prod + 1, a.qp->sq_size),
			      memory_order_release);
	hring(a.qp);
	n = hpoll_quiet(a.cq, wc, 8, 500);
	HCHECK(n == 0, "%s: %d completion(s) from a ring with an impossible index (first wr_id "
	       "0x%" PRIx64 ")", what, n, n > 0 ? wc[0].wr_id : 0);
	HCHECK(untouched(b.buf, 4096, FILL_B), "%s: the entry behind the impossible index was "
	       "executed (peer memory written)", what);
	if (n == 0)
		hok("%s: nothing read from the SQ after an impossible producer index", what);
	hcheck_daemons(what);
	hside_close(&a);
	hside_close(&b);
}

static uint32_t jump(uint32_t prod, uint32_t size) { return prod + size + 1000; }
static uint32_t back(uint32_t prod, uint32_t size) { (void)size; return prod - 2; }
static uint32_t huge(uint32_t prod, uint32_t size) { (void)size; return prod ^ 0x80000000u; }

void case_ring_sq_jump(void)
{
	sq_bad_index(jump, "sq prod + size + 1000");
	sq_bad_index(huge, "sq prod ^ 2^31");
}

void case_ring_sq_back(void)
{
	sq_bad_index(back, "sq prod moved backwards");
}

void case_ring_rq_jump(void)
{
	struct hside a, b;
	struct mr_wc wc[8];
	struct mrc_rqe *r;
	int n;

	pair_open(&a, &b, 16);
	r = hrqe_next(b.qp);
	r->wr_id = 0xdead0002;
	r->num_sge = 1;
	r->sge[0].addr = (uint64_t)(uintptr_t)b.buf;
	r->sge[0].length = 4096;
	r->sge[0].lkey = mrc_mr_lkey(b.mr);
	atomic_store_explicit(&b.qp->rq->prod, b.qp->rq_prod + 1 + b.qp->rq_size + 77,
			      memory_order_release);
	hring(b.qp);
	n = hpoll_quiet(b.cq, wc, 8, 500);
	HCHECK(n == 0, "rq jump: %d completion(s) from a corrupt RQ", n);
	/* The app is told: its QP enters ERR (shm_server_data.c qp_break; the errors_reported
	 * group checks the same for the SQ), so a peer's WRITE no longer lands in it. */
	{
		struct mrc_qp_attr qa;
		int st = -1;

		for (int i = 0; i < 200 && st != MR_QPS_ERR; i++) {
			if (mrc_query_qp(b.qp, &qa) == 0)
				st = (int)qa.qp_state;
			if (st != MR_QPS_ERR)
				usleep(10000);
		}
		HCHECK(st == MR_QPS_ERR, "rq jump: QP state %d, not ERR, after a corrupt RQ", st);
	}
	hok("rq prod jump: no receive taken from the corrupt ring, the QP is in ERR");
	hcheck_daemons("rq prod jump");
	hside_close(&a);
	hside_close(&b);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

/* Every slot of the SQ and RQ full of random bytes, published with a valid index: each entry
 * must be rejected with an error completion carrying its wr_id, in ring order. */
void case_ring_garbage(void)
{
	enum { DEPTH = 64 };
	struct hside a, b;
	struct mr_wc wc[2 * DEPTH];
	uint64_t sq_ids[DEPTH], rq_ids[DEPTH];
	int n, bad = 0, i;

	pair_open(&a, &b, DEPTH);
	for (i = 0; i < DEPTH; i++) {
		struct mrc_sqe *e = hsqe_next(a.qp);
		uint64_t *w = (uint64_t *)e;

		for (size_t k = 0; k < sizeof(*e) / 8; k++)
			w[k] = rng();
		/* Random opcodes are almost never valid; make sure: valid ones could write. */
		if (e->opcode <= MR_WR_SEND_WITH_INV)
			e->opcode |= 0x100;
		sq_ids[i] = e->wr_id;
		a.qp->sq_prod++;
	}
	mrc_ring_publish(a.qp->sq, a.qp->sq_prod);
	hring(a.qp);
	for (i = 0; i < DEPTH; i++) {
		struct mrc_rqe *r = mrc_ring_entry(a.qp->rq, a.qp->rq_prod, a.qp->rq_size - 1,
						   sizeof(*r));
		uint64_t *w = (uint64_t *)r;

		for (size_t k = 0; k < sizeof(*r) / 8; k++)
			w[k] = rng();
		if (i % 2 == 0)
			r->num_sge = (uint32_t)(rng() % MRC_RQE_MAX_SGE) + 1; /* random SGEs */
		rq_ids[i] = r->wr_id;
		a.qp->rq_prod++;
	}
	mrc_ring_publish(a.qp->rq, a.qp->rq_prod);
	hring(a.qp);
	n = hpoll(a.cq, wc, 2 * DEPTH, g_opt->timeout_s * 1000);
	HCHECK(n == 2 * DEPTH, "garbage rings: %d of %d error completions", n, 2 * DEPTH);
	{
		int si = 0, ri = 0;

		for (i = 0; i < n; i++) {
			bool recv = wc[i].opcode == MR_WC_RECV;
			uint64_t want = recv ? (ri < DEPTH ? rq_ids[ri++] : 0) :
					(si < DEPTH ? sq_ids[si++] : 0);

			if (wc[i].status == MR_WC_SUCCESS || wc[i].wr_id != want ||
			    wc[i].qp_num != mrc_qp_num(a.qp))
				bad++;
		}
	}
	HCHECK(bad == 0, "garbage rings: %d completions not an error for the right wr_id in ring "
	       "order", bad);
	HCHECK(untouched(b.buf, BUF_LEN, FILL_B), "garbage rings: peer memory was written");
	if (n == 2 * DEPTH && bad == 0)
		hok("garbage rings: %d random SQEs and %d random RQEs each completed in error, in "
		    "order", DEPTH, DEPTH);
	write_ok(&a, &b, 3, "after garbage rings");
	hcheck_daemons("garbage rings");
	hside_close(&a);
	hside_close(&b);
}

/* The CQ ring's consumer index (the app's line) moved beyond the producer, and far behind
 * it; the producer index (the daemon's line) overwritten by the app. */
void case_cq_cons_games(void)
{
	struct hside a, b;
	struct mr_wc wc[8];
	struct mrc_ring_hdr *r;
	int n, rc;

	pair_open(&a, &b, 16);
	r = a.cq->ring;
	for (int game = 0; game < 2; game++) {
		uint32_t fake = game == 0 ? a.cq->cons + 1000 : a.cq->cons - a.cq->size - 7;

		atomic_store_explicit(&r->cons, fake, memory_order_release);
		for (int i = 0; i < 4; i++) {
			sqe_write(hsqe_next(a.qp), &a, &b, 0x100 + (uint64_t)i, 4096, 512);
			hsq_publish(a.qp, 1);
		}
		hsleep_ms(300);
		/* The daemon wrote nothing it could not (it saw no room); now give the room back. */
		atomic_store_explicit(&r->cons, a.cq->cons, memory_order_release);
		n = hpoll(a.cq, wc, 4, g_opt->timeout_s * 1000);
		HCHECK(n == 4, "cq cons %s: %d of 4 completions after the index was restored",
		       game == 0 ? "ahead" : "behind", n);
		for (int i = 0; i < n; i++)
			HCHECK(wc[i].wr_id == 0x100 + (uint64_t)i && wc[i].status == MR_WC_SUCCESS,
			       "cq cons game: completion %d wr_id 0x%" PRIx64 " status %d", i,
			       wc[i].wr_id, (int)wc[i].status);
	}
	/* The app scribbles the daemon's producer line: its own library must refuse to read. */
	atomic_store_explicit(&r->prod, a.cq->cons + a.cq->size + 5, memory_order_release);
	rc = mrc_poll_cq(a.cq, 8, wc);
	HCHECK(rc < 0, "cq prod scribbled: mrc_poll_cq returned %d, expected a negative errno", rc);
	atomic_store_explicit(&r->prod, a.cq->cons, memory_order_release);
	write_ok(&a, &b, 4, "after cq index games");
	hok("cq index games: the daemon waited for room, completions resumed in order");
	hcheck_daemons("cq index games");
	hside_close(&a);
	hside_close(&b);
}

/* Intended behaviour (issue 8: "each gets a clear error"): a QP whose ring the app corrupted
 * must tell the app, either as an error completion or by reporting the QP in ERR (IBA 10.3.1:
 * a QP that can no longer process WRs moves to the Error state and flushes). */
void case_ring_error_report(void)
{
	struct hside a, b;
	struct mr_wc wc[4];
	struct mrc_qp_attr qa;
	uint64_t end;
	bool told = false;

	pair_open(&a, &b, 16);
	atomic_store_explicit(&a.qp->sq->prod, a.qp->sq_prod + a.qp->sq_size + 9,
			      memory_order_release);
	hring(a.qp);
	end = hnow_ms() + 2000;
	while (!told && hnow_ms() < end) {
		int n = mrc_poll_cq(a.cq, 4, wc);

		for (int i = 0; i < n; i++)
			told |= wc[i].status != MR_WC_SUCCESS;
		memset(&qa, 0, sizeof(qa));
		if (!told && mrc_query_qp(a.qp, &qa) == 0 && qa.qp_state == MR_QPS_ERR)
			told = true;
		hsleep_ms(20);
	}
	HCHECK(told, "corrupt SQ index: the app is never told (no error completion, QP state %u "
	       "not ERR after 2 s)", qa.qp_state);
	if (told)
		hok("corrupt SQ index reported to the app (error completion or QP in ERR)");
	hcheck_daemons("ring error report");
	hside_close(&a);
	hside_close(&b);
}
