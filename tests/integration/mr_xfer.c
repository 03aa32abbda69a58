/* SPDX-License-Identifier: MIT
 * mr_xfer: integration client for the two-daemon suite. Role "b" (target) runs against one
 * metaroced, role "a" (initiator) against another; they exchange QP info through files in a
 * shared directory, connect N RC QPs and run a deterministic list of rounds that both sides
 * derive from the same arguments: for every size and every operation (SEND, SEND_WITH_IMM,
 * WRITE, WRITE_WITH_IMM, READ, CMP_SWAP, FETCH_ADD) one WR per QP, all QPs at once.
 *
 * What is checked (any mismatch exits 1 with the QP, round, byte offset and values):
 *  - target, per SEND/WRITE round and QP: the completion's opcode, status, byte_len, qp_num,
 *    WITH_IMM flag and immediate; every byte of the message (a per-round, per-QP pattern) and
 *    the byte after it (still the poison value: nothing written past the end). WRITE data is
 *    checked when a SEND "doorbell" posted after it arrives (IBA 10.8.3 / C9-28: a later SEND's
 *    completion implies the earlier WRITE was placed);
 *  - initiator, per READ round: every byte fetched from an unaligned remote offset plus the
 *    poison byte after it; per atomic: the returned original value (IBA 9.4.5) against a model
 *    both sides compute; the target checks its atomic words against the same model at the end.
 *  - --expect-mtu: the port's active IB MTU (the daemon derives it from port.mtu).
 * Extra modes for the failure tests:
 *  --stream SEC (a): after the rounds, keep DEPTH 64 KiB WRITEs outstanding per QP (a victim to
 *      kill -9); prints "stream: N completed" lines.
 *  --until-error (a): after the rounds, keep WRITEs outstanding until the peer vanishes; every
 *      outstanding WR must then complete with an error (first RETRY_EXC_ERR, C9-141; the rest
 *      flushed, IBA 10.3.1) within --timeout, and the QP must be in ERR.
 *  --reconnect (b): after the rounds, wait until the daemon is gone (a control call fails),
 *      reopen the socket until a new daemon answers, and run generation 2 of the rounds with a
 *      new initiator (--gen 2).
 *
 *   mr_xfer --role a|b --sock PATH --dir DIR [--qps N] [--sizes LIST] [--ops LIST] [--iters N]
 *           [--expect-mtu N] [--timeout SEC] [--gen N] [--stream SEC] [--until-error]
 *           [--ack-timeout CODE (IBA 9.7.6.1.3: 4.096 us * 2^CODE, default 14)]
 *           [--reconnect]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <metaroce/metaroce.h>

#define MAX_QPS 64
#define MAX_SIZES 16
#define MAX_ROUNDS 4096
#define CTRL_SIZE 4096
#define POISON 0xa5
#define BELL_LEN 8
#define ACK_MAGIC 0x41434b00u
#define DONE_ROUND 0xffffffu
#define STREAM_MSG 65536u
#define STREAM_DEPTH 16u
#define REMOTE_SKEW 64   /* READ source offsets vary in [0, 64): unaligned remote addresses */

/* ctrl area layout (per QP, after the two data regions) */
#define C_ATOM 0         /* target: the atomic word */
#define C_ATOM_RES 8     /* initiator: an atomic's returned value */
#define C_BELL_RX 64     /* target: doorbell / done receive */
#define C_BELL_TX 128    /* initiator: doorbell source */
#define C_ACK_RX 256     /* initiator: ack receive */
#define C_ACK_TX 320     /* target: ack source */

enum op {
	OP_SEND, OP_SEND_IMM, OP_WRITE, OP_WRITE_IMM, OP_READ, OP_CMP_SWAP, OP_FETCH_ADD, OP_NR,
};
static const char *const op_names[OP_NR] = {
	"send", "send_imm", "write", "write_imm", "read", "cmp_swap", "fetch_add",
};

/* wr_id = qp << 8 | kind */
enum kind { K_DATA, K_BELL, K_ACK_RX, K_RX, K_ACK_TX, K_ATOM1, K_ATOM2, K_STREAM, K_NR };

struct round {
	enum op op;
	uint64_t size;
	uint32_t no; /* 1-based, unique per generation */
};

struct peer_info {
	uint32_t qpn, psn, rkey;
	uint64_t vaddr;
	uint8_t gid[16];
};

struct xqp {
	struct mrc_qp *qp;
	uint8_t *buf;
	struct mrc_mr *mr;
	struct peer_info me, peer;
	bool got[K_NR];
	struct mr_wc wc[K_NR];
	uint64_t model;      /* expected value of the target's atomic word */
	uint64_t outstanding;
};

struct xfer {
	char role;
	const char *sock, *dir;
	unsigned int nqp, iters, timeout_s, gen, stream_s;
	uint32_t expect_mtu;
	uint8_t ack_timeout;    /* --ack-timeout: IBA local ACK timeout code (default 14) */
	bool until_error, reconnect;
	uint64_t sizes[MAX_SIZES];
	unsigned int nsizes;
	bool ops[OP_NR];
	uint64_t maxsz, region; /* region: one data area, >= maxsz + REMOTE_SKEW + 1 */
	struct round rounds[MAX_ROUNDS];
	unsigned int nrounds;
	struct mrc_session *s;
	struct mrc_port_attr port;
	struct mrc_pd *pd;
	struct mrc_cq *cq;
	struct xqp q[MAX_QPS];
	uint64_t verified_bytes, checks;
	bool erred;                 /* stream: an error completion was seen */
	struct mr_wc first_err;
	uint64_t nerr[MR_WC_GENERAL_ERR + 1];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct xfer *g_x; /* for fail() messages */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mr_xfer[%c]: FAIL: ", g_x != NULL ? g_x->role : '?');
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (g_x != NULL && g_x->s != NULL && mrc_last_error(g_x->s)[0] != '\0')
		fprintf(stderr, " (%s)", mrc_last_error(g_x->s));
	fprintf(stderr, "\n");
	exit(1);
}

/* Pattern byte i of a message: differs between rounds and QPs at every position, so stale data
 * from another round or QP cannot pass. */
static uint8_t pat(uint64_t i, uint32_t seed)
{
	uint64_t v = (i + 1) * 0x9e3779b97f4a7c15ull ^ (uint64_t)seed * 0xbf58476d1ce4e5b9ull;

	v ^= v >> 29;
	return (uint8_t)(v ^ (v >> 8) ^ seed);
}

static uint32_t seed_of(const struct round *r, unsigned int q, unsigned int gen)
{
	return r->no * 7919u + q * 131u + gen * 1000003u + (uint32_t)r->op;
}

static uint32_t read_seed(unsigned int q, unsigned int gen)
{
	return 0x52454144u ^ (q * 97u) ^ (gen << 20);
}

static uint32_t imm_of(const struct round *r, unsigned int q)
{
	return 0x1d000000u ^ (r->no << 8) ^ q;
}

static uint64_t atom_init(unsigned int q, unsigned int gen)
{
	return 0x1111222233334444ull + ((uint64_t)q << 32) + gen;
}

static uint64_t read_off(const struct round *r)
{
	return (r->no * 13u) % REMOTE_SKEW;
}

static void fill(uint8_t *p, uint64_t n, uint32_t seed, uint64_t first)
{
	for (uint64_t i = 0; i < n; i++)
		p[i] = pat(first + i, seed);
}

static void check(struct xfer *x, unsigned int q, const struct round *r, const uint8_t *p,
		  uint64_t n, uint32_t seed, uint64_t first, const char *what)
{
	for (uint64_t i = 0; i < n; i++)
		if (p[i] != pat(first + i, seed))
			die("%s round %u size %" PRIu64 " qp %u: byte %" PRIu64 " is 0x%02x, expected "
			    "0x%02x", what, r->no, r->size, q, i, p[i], pat(first + i, seed));
	if (p[n] != POISON)
		die("%s round %u size %" PRIu64 " qp %u: byte after the message is 0x%02x, expected "
		    "the untouched 0x%02x", what, r->no, r->size, q, p[n], POISON);
	x->verified_bytes += n;
	x->checks++;
}

/* ---- completions ---- */

static void reap(struct xfer *x, bool tolerate_errors)
{
	struct mr_wc wc[32];
	int n = mrc_poll_cq(x->cq, 32, wc);

	if (n < 0)
		die("poll_cq: %s", mrc_strerror(n));
	for (int i = 0; i < n; i++) {
		unsigned int q = (unsigned int)(wc[i].wr_id >> 8), k = wc[i].wr_id & 0xff;

		if (q >= x->nqp || k >= K_NR)
			die("completion with unknown wr_id 0x%" PRIx64, wc[i].wr_id);
		if (wc[i].status != MR_WC_SUCCESS && !tolerate_errors)
			die("qp %u (qpn %u) wr kind %u: status %d vendor_err %u", q, wc[i].qp_num, k,
			    (int)wc[i].status, wc[i].vendor_err);
		if (wc[i].qp_num != x->q[q].me.qpn)
			die("qp %u: completion carries qp_num %u, expected %u", q, wc[i].qp_num,
			    x->q[q].me.qpn);
		if (k == K_STREAM) {
			x->q[q].outstanding--;
			if (wc[i].status != MR_WC_SUCCESS) {
				if (!x->erred)
					x->first_err = wc[i];
				x->erred = true;
				if ((unsigned int)wc[i].status <= MR_WC_GENERAL_ERR)
					x->nerr[wc[i].status]++;
			}
			x->checks++;
			continue;
		}
		if (x->q[q].got[k])
			die("qp %u: a second completion of kind %u", q, k);
		x->q[q].got[k] = true;
		x->q[q].wc[k] = wc[i];
	}
}

static void wait_all(struct xfer *x, enum kind k, const char *what)
{
	uint64_t deadline = now_ns() + (uint64_t)x->timeout_s * 1000000000ull;
	unsigned int spins = 0;

	for (;;) {
		unsigned int q;

		for (q = 0; q < x->nqp && x->q[q].got[k]; q++)
			;
		if (q == x->nqp)
			return;
		reap(x, false);
		if (++spins >= 256) {
			struct timespec ts = { 0, 2000 };

			spins = 0;
			if (now_ns() > deadline)
				die("%s: qp %u has no completion after %u s", what, q, x->timeout_s);
			nanosleep(&ts, NULL); /* two cores shared with two daemons */
		}
	}
}

static void clear_kind(struct xfer *x, enum kind k)
{
	for (unsigned int q = 0; q < x->nqp; q++)
		x->q[q].got[k] = false;
}

static void post_send(struct xfer *x, unsigned int q, const struct mr_send_wr *wr)
{
	uint64_t deadline = now_ns() + (uint64_t)x->timeout_s * 1000000000ull;
	int rc;

	while ((rc = mrc_post_send(x->q[q].qp, wr)) == -ENOMEM) {
		if (now_ns() > deadline)
			die("qp %u: send queue full for %u s", q, x->timeout_s);
		sched_yield();
	}
	if (rc < 0)
		die("qp %u: post_send opcode %d: %s", q, (int)wr->opcode, mrc_strerror(rc));
}

static void post_recv(struct xfer *x, unsigned int q, enum kind k, uint64_t off, uint32_t len)
{
	struct mr_recv_wr r = { .wr_id = (uint64_t)q << 8 | k, .num_sge = 1 };
	int rc;

	r.sg_list[0].addr = (uint64_t)(uintptr_t)(x->q[q].buf + off);
	r.sg_list[0].length = len;
	r.sg_list[0].lkey = mrc_mr_lkey(x->q[q].mr);
	rc = mrc_post_recv(x->q[q].qp, &r);
	if (rc < 0)
		die("qp %u: post_recv: %s", q, mrc_strerror(rc));
}

static struct mr_send_wr wr_make(struct xfer *x, unsigned int q, enum kind k,
				 enum mr_wr_opcode opc, uint64_t loff, uint32_t len, uint64_t roff)
{
	struct mr_send_wr w;

	memset(&w, 0, sizeof(w));
	w.wr_id = (uint64_t)q << 8 | k;
	w.opcode = opc;
	w.send_flags = MR_SEND_SIGNALED;
	w.num_sge = len > 0 ? 1 : 0;
	w.sg_list[0].addr = (uint64_t)(uintptr_t)(x->q[q].buf + loff);
	w.sg_list[0].length = len;
	w.sg_list[0].lkey = mrc_mr_lkey(x->q[q].mr);
	w.rdma.remote_addr = x->q[q].peer.vaddr + roff;
	w.rdma.rkey = x->q[q].peer.rkey;
	return w;
}

/* ---- setup and QP info exchange through files (atomic rename) ---- */

static void write_info(struct xfer *x, const char *what)
{
	char path[600], tmp[610];
	FILE *f;

	snprintf(path, sizeof(path), "%s/g%u.%c.%s", x->dir, x->gen, x->role, what);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (f == NULL)
		die("write %s: %s", tmp, strerror(errno));
	fprintf(f, "%u\n", x->nqp);
	for (unsigned int q = 0; q < x->nqp; q++) {
		const struct peer_info *m = &x->q[q].me;

		fprintf(f, "%" PRIu32 " %" PRIu32 " %" PRIu32 " %" PRIu64 " ", m->qpn, m->psn,
			m->rkey, m->vaddr);
		for (int i = 0; i < 16; i++)
			fprintf(f, "%02x", m->gid[i]);
		fprintf(f, "\n");
	}
	if (fclose(f) != 0 || rename(tmp, path) != 0)
		die("write %s: %s", path, strerror(errno));
}

static void read_info(struct xfer *x, const char *what)
{
	uint64_t deadline = now_ns() + (uint64_t)x->timeout_s * 1000000000ull;
	char path[600], gid[40];
	unsigned int n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/g%u.%c.%s", x->dir, x->gen, x->role == 'a' ? 'b' : 'a',
		 what);
	while ((f = fopen(path, "r")) == NULL) {
		if (now_ns() > deadline)
			die("peer file %s never appeared", path);
		usleep(10000);
	}
	if (fscanf(f, "%u", &n) != 1 || n != x->nqp)
		die("%s: peer has a different QP count", path);
	for (unsigned int q = 0; q < x->nqp; q++) {
		struct peer_info *p = &x->q[q].peer;

		if (fscanf(f, "%" SCNu32 " %" SCNu32 " %" SCNu32 " %" SCNu64 " %32s", &p->qpn,
			   &p->psn, &p->rkey, &p->vaddr, gid) != 5 || strlen(gid) != 32)
			die("%s: malformed line %u", path, q);
		for (int i = 0; i < 16; i++) {
			unsigned int v;

			if (sscanf(gid + 2 * i, "%2x", &v) != 1)
				die("%s: malformed gid", path);
			p->gid[i] = (uint8_t)v;
		}
	}
	fclose(f);
}

static void connect_qp(struct xfer *x, unsigned int q)
{
	struct xqp *p = &x->q[q];
	struct mrc_qp_attr a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = MR_QPS_RTR;
	memcpy(a.path.dgid, p->peer.gid, 16);
	a.path.ipv6 = !(p->peer.gid[10] == 0xff && p->peer.gid[11] == 0xff);
	a.path_mtu = x->port.active_mtu;
	a.dest_qp_num = p->peer.qpn;
	a.rq_psn = p->peer.psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	rc = mrc_modify_qp(p->qp, &a, MRC_QP_STATE | MRC_QP_PATH | MRC_QP_PATH_MTU |
			   MRC_QP_DEST_QPN | MRC_QP_RQ_PSN | MRC_QP_MAX_DEST_RD_ATOMIC |
			   MRC_QP_MIN_RNR_TIMER);
	if (rc < 0)
		die("qp %u: modify RTR: %s", q, mrc_strerror(rc));
	a.qp_state = MR_QPS_RTS;
	a.sq_psn = p->me.psn;
	/* until-error: 4.096 us * 2^15 = 134 ms, 3 retries (IBA 9.7.6.1.3), so that the peer's
	 * loss shows within about half a second. Not shorter: over af_packet, one go-back-N resend
	 * of the 2 x 16 outstanding 64 KiB WRITEs takes about as long as 16.8 ms (2^12), and in CI
	 * a busy host once ended the stream in RETRY_EXC_ERR with the peer alive (2026-12-05). */
	a.timeout = x->until_error ? 15 : x->ack_timeout;
	a.retry_cnt = x->until_error ? 3 : 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	rc = mrc_modify_qp(p->qp, &a, MRC_QP_STATE | MRC_QP_SQ_PSN | MRC_QP_TIMEOUT |
			   MRC_QP_RETRY_CNT | MRC_QP_RNR_RETRY | MRC_QP_MAX_QP_RD_ATOMIC);
	if (rc < 0)
		die("qp %u: modify RTS: %s", q, mrc_strerror(rc));
}

static void open_session(struct xfer *x)
{
	struct mrc_qp_init_attr init;
	struct mrc_qp_attr a;
	unsigned int gi;
	int rc;

	x->s = mrc_open(x->sock);
	if (x->s == NULL)
		die("mrc_open %s: %s", x->sock, strerror(errno));
	rc = mrc_query_port(x->s, &x->port);
	if (rc < 0)
		die("query_port: %s", mrc_strerror(rc));
	if (x->port.state != MRC_PORT_ACTIVE)
		die("port not active (state %u)", x->port.state);
	if (x->expect_mtu != 0 && x->port.active_mtu != x->expect_mtu)
		die("port active_mtu is %u, expected %u", x->port.active_mtu, x->expect_mtu);
	x->pd = mrc_alloc_pd(x->s);
	if (x->pd == NULL)
		die("alloc_pd: %s", strerror(errno));
	x->cq = mrc_create_cq(x->s, x->nqp * (STREAM_DEPTH + 8) + 64);
	if (x->cq == NULL)
		die("create_cq: %s", strerror(errno));
	gi = x->port.gid_count > 1 ? 1 : 0; /* index 1: IPv4-mapped RoCE v2 GID, as rxe */
	for (unsigned int q = 0; q < x->nqp; q++) {
		struct xqp *p = &x->q[q];
		size_t len = 2 * x->region + CTRL_SIZE;

		memset(p, 0, sizeof(*p));
		p->buf = mrc_alloc_buf(x->s, len);
		if (p->buf == NULL)
			die("qp %u: alloc_buf(%zu): %s", q, len, strerror(errno));
		p->mr = mrc_reg_mr(x->pd, p->buf, len, MR_ACCESS_LOCAL_WRITE |
				   MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ |
				   MR_ACCESS_REMOTE_ATOMIC);
		if (p->mr == NULL)
			die("qp %u: reg_mr: %s", q, strerror(errno));
		memset(&init, 0, sizeof(init));
		init.qp_type = MRC_QPT_RC;
		init.send_cq = init.recv_cq = x->cq;
		init.max_send_wr = STREAM_DEPTH + 4;
		init.max_recv_wr = 4;
		init.max_send_sge = init.max_recv_sge = 1;
		init.max_inline_data = 0;
		p->qp = mrc_create_qp(x->pd, &init);
		if (p->qp == NULL)
			die("qp %u: create_qp: %s", q, strerror(errno));
		p->me.qpn = mrc_qp_num(p->qp);
		p->me.psn = (uint32_t)(now_ns() * 2654435761u ^ (uint64_t)getpid() << 4 ^ q) &
			    0xffffff;
		p->me.rkey = mrc_mr_rkey(p->mr);
		p->me.vaddr = (uint64_t)(uintptr_t)p->buf;
		memcpy(p->me.gid, x->port.gid[gi], 16);
		memset(&a, 0, sizeof(a));
		a.qp_state = MR_QPS_INIT;
		a.qp_access_flags = MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ |
				    MR_ACCESS_REMOTE_ATOMIC;
		rc = mrc_modify_qp(p->qp, &a, MRC_QP_STATE | MRC_QP_PKEY_INDEX |
				   MRC_QP_ACCESS_FLAGS);
		if (rc < 0)
			die("qp %u: modify INIT: %s", q, mrc_strerror(rc));
		/* dst region and the byte after every message start as poison */
		memset(p->buf + x->region, POISON, x->region);
		p->model = atom_init(q, x->gen);
	}
	printf("mr_xfer[%c]: gen %u: %u QPs (qpn %u..%u) ib_mtu %u, %u rounds, region %" PRIu64
	       " bytes\n", x->role, x->gen, x->nqp, x->q[0].me.qpn, x->q[x->nqp - 1].me.qpn,
	       x->port.active_mtu, x->nrounds, x->region);
}

static void close_session(struct xfer *x, bool dead)
{
	if (!dead) {
		/* Allocation order, as an app naturally does. MR_XFER_FREE_LIFO=1 frees in reverse
		 * order instead: only to look past the known mrc_free_buf bug with adjacent buffers
		 * (see README.md); the suite never sets it. */
		bool lifo = getenv("MR_XFER_FREE_LIFO") != NULL;

		for (unsigned int i = 0; i < x->nqp; i++) {
			unsigned int q = lifo ? x->nqp - 1 - i : i;
			int rc = mrc_destroy_qp(x->q[q].qp);

			if (rc < 0)
				die("qp %u: destroy_qp: %s", q, mrc_strerror(rc));
			rc = mrc_dereg_mr(x->q[q].mr);
			if (rc < 0)
				die("qp %u: dereg_mr: %s", q, mrc_strerror(rc));
			rc = mrc_free_buf(x->s, x->q[q].buf);
			if (rc < 0)
				die("qp %u: BUG: mrc_free_buf(%p) rejected a buffer mrc_alloc_buf "
				    "returned: %s", q, (void *)x->q[q].buf, mrc_strerror(rc));
		}
		if (mrc_destroy_cq(x->cq) < 0 || mrc_dealloc_pd(x->pd) < 0)
			die("teardown of CQ/PD failed");
	}
	/* With a dead daemon the close may report an error; the process must simply survive. */
	(void)mrc_close(x->s);
	x->s = NULL;
}

/* ---- rounds ---- */

static bool needs_target(enum op o)
{
	return o == OP_SEND || o == OP_SEND_IMM || o == OP_WRITE || o == OP_WRITE_IMM;
}

static void build_rounds(struct xfer *x)
{
	uint32_t no = 0;

	for (unsigned int it = 0; it < x->iters; it++)
		for (unsigned int si = 0; si < x->nsizes; si++)
			for (int o = 0; o < OP_NR; o++) {
				if (!x->ops[o])
					continue;
				if ((o == OP_CMP_SWAP || o == OP_FETCH_ADD) && si > 0)
					continue; /* 8-byte ops: once per iteration */
				if (x->nrounds >= MAX_ROUNDS)
					die("too many rounds");
				x->rounds[x->nrounds++] = (struct round){ (enum op)o, x->sizes[si],
									  ++no };
			}
}

/* The target's receive for round r (or the final "done" doorbell when r is NULL). */
static void target_post_rx(struct xfer *x, unsigned int q, const struct round *r)
{
	if (r != NULL && (r->op == OP_SEND || r->op == OP_SEND_IMM))
		post_recv(x, q, K_RX, x->region, (uint32_t)x->region - 1);
	else
		post_recv(x, q, K_RX, 2 * x->region + C_BELL_RX, BELL_LEN);
}

static const struct round *next_target_round(struct xfer *x, unsigned int *i)
{
	while (*i < x->nrounds && !needs_target(x->rounds[*i].op))
		(*i)++;
	return *i < x->nrounds ? &x->rounds[(*i)++] : NULL;
}

static void model_atomics(struct xfer *x)
{
	for (unsigned int i = 0; i < x->nrounds; i++)
		for (unsigned int q = 0; q < x->nqp; q++) {
			const struct round *r = &x->rounds[i];

			if (r->op == OP_FETCH_ADD)
				x->q[q].model += r->no + 1;
			else if (r->op == OP_CMP_SWAP)
				x->q[q].model = ((uint64_t)seed_of(r, q, x->gen) << 32) | r->no;
		}
}

static void target_verify(struct xfer *x, unsigned int q, const struct round *r)
{
	struct xqp *p = &x->q[q];
	const struct mr_wc *wc = &p->wc[K_RX];
	uint8_t *dst = p->buf + x->region;
	bool imm = r->op == OP_SEND_IMM || r->op == OP_WRITE_IMM;
	int want_op = r->op == OP_WRITE_IMM ? MR_WC_RECV_RDMA_WITH_IMM : MR_WC_RECV;
	uint64_t want_len = r->op == OP_WRITE ? BELL_LEN : r->size;
	uint32_t bell;

	if ((int)wc->opcode != want_op)
		die("%s round %u qp %u: receive opcode %d, expected %d", op_names[r->op], r->no, q,
		    (int)wc->opcode, want_op);
	if (wc->byte_len != want_len)
		die("%s round %u qp %u: byte_len %u, expected %" PRIu64, op_names[r->op], r->no, q,
		    wc->byte_len, want_len);
	if (!!(wc->wc_flags & MR_WC_WITH_IMM) != imm || (imm && wc->imm_data != imm_of(r, q)))
		die("%s round %u qp %u: wc_flags 0x%x imm 0x%08x, expected imm %s 0x%08x",
		    op_names[r->op], r->no, q, wc->wc_flags, wc->imm_data, imm ? "yes" : "no",
		    imm_of(r, q));
	if (r->op == OP_WRITE) {
		memcpy(&bell, p->buf + 2 * x->region + C_BELL_RX, 4);
		if (bell != r->no)
			die("write round %u qp %u: doorbell says round %u", r->no, q, bell);
	}
	check(x, q, r, dst, r->size, seed_of(r, q, x->gen), 0, op_names[r->op]);
	memset(dst, POISON, r->size + 1);
}

static void run_target(struct xfer *x)
{
	unsigned int ti = 0, tj;
	const struct round *r, *next;
	uint64_t v;

	for (unsigned int q = 0; q < x->nqp; q++) {
		v = atom_init(q, x->gen);
		memcpy(x->q[q].buf + 2 * x->region + C_ATOM, &v, 8);
		fill(x->q[q].buf, x->maxsz + REMOTE_SKEW, read_seed(q, x->gen), 0);
	}
	r = next_target_round(x, &ti);
	for (unsigned int q = 0; q < x->nqp; q++)
		target_post_rx(x, q, r);
	write_info(x, "info");
	read_info(x, "info");
	for (unsigned int q = 0; q < x->nqp; q++)
		connect_qp(x, q);
	/* The initiator may send only once we are in RTR (IBA 10.3.1: else dropped). */
	write_info(x, "rtr");
	while (r != NULL) {
		char what[64];

		snprintf(what, sizeof(what), "%s round %u", op_names[r->op], r->no);
		wait_all(x, K_RX, what);
		tj = ti;
		next = next_target_round(x, &tj);
		for (unsigned int q = 0; q < x->nqp; q++) {
			struct mr_send_wr w;
			uint32_t ack[2] = { ACK_MAGIC, r->no };

			target_verify(x, q, r);
			x->q[q].got[K_RX] = false;
			/* next receive before the ack: the initiator sends only after the ack */
			target_post_rx(x, q, next);
			memcpy(x->q[q].buf + 2 * x->region + C_ACK_TX, ack, 8);
			w = wr_make(x, q, K_ACK_TX, MR_WR_SEND, 2 * x->region + C_ACK_TX, 8, 0);
			post_send(x, q, &w);
		}
		wait_all(x, K_ACK_TX, "ack send");
		clear_kind(x, K_ACK_TX);
		ti = tj;
		r = next;
	}
	wait_all(x, K_RX, "done doorbell");
	model_atomics(x);
	for (unsigned int q = 0; q < x->nqp; q++) {
		uint32_t bell;

		memcpy(&bell, x->q[q].buf + 2 * x->region + C_BELL_RX, 4);
		if (bell != DONE_ROUND)
			die("qp %u: expected the done doorbell, got round %u", q, bell);
		memcpy(&v, x->q[q].buf + 2 * x->region + C_ATOM, 8);
		if (v != x->q[q].model)
			die("qp %u: atomic word is 0x%016" PRIx64 ", expected 0x%016" PRIx64, q, v,
			    x->q[q].model);
	}
	clear_kind(x, K_RX);
	printf("mr_xfer[b]: gen %u: %u QPs: atomic words as modelled; %" PRIu64 " checks, %" PRIu64
	       " bytes verified\n", x->gen, x->nqp, x->checks, x->verified_bytes);
}

static uint64_t initiator_atomic(struct xfer *x, const struct round *r)
{
	for (int step = 0; step < (r->op == OP_CMP_SWAP ? 2 : 1); step++) {
		enum kind k = step == 0 ? K_ATOM1 : K_ATOM2;

		for (unsigned int q = 0; q < x->nqp; q++) {
			struct xqp *p = &x->q[q];
			struct mr_send_wr w;
			uint64_t sentinel = 0x5a5a5a5a5a5a5a5aull;

			memcpy(p->buf + 2 * x->region + C_ATOM_RES + 8 * step, &sentinel, 8);
			w = wr_make(x, q, k, r->op == OP_FETCH_ADD ? MR_WR_ATOMIC_FETCH_AND_ADD :
				    MR_WR_ATOMIC_CMP_AND_SWP, 2 * x->region + C_ATOM_RES + 8 * step, 8,
				    0);
			w.atomic.remote_addr = p->peer.vaddr + 2 * x->region + C_ATOM;
			w.atomic.rkey = p->peer.rkey;
			if (r->op == OP_FETCH_ADD) {
				w.atomic.compare_add = r->no + 1;
			} else if (step == 0) {
				w.atomic.compare_add = p->model + 1; /* mismatch: must not swap */
				w.atomic.swap = 0xbadbadbadbadull;
			} else {
				w.atomic.compare_add = p->model;
				w.atomic.swap = ((uint64_t)seed_of(r, q, x->gen) << 32) | r->no;
			}
			post_send(x, q, &w);
		}
		wait_all(x, k, op_names[r->op]);
		for (unsigned int q = 0; q < x->nqp; q++) {
			struct xqp *p = &x->q[q];
			uint64_t v;

			if ((int)p->wc[k].opcode != (r->op == OP_FETCH_ADD ? MR_WC_FETCH_ADD :
						     MR_WC_COMP_SWAP))
				die("%s qp %u: completion opcode %d", op_names[r->op], q,
				    (int)p->wc[k].opcode);
			memcpy(&v, p->buf + 2 * x->region + C_ATOM_RES + 8 * step, 8);
			/* IBA 9.4.5: both atomics return the original remote value */
			if (v != p->model)
				die("%s round %u step %d qp %u: returned 0x%016" PRIx64 ", expected "
				    "0x%016" PRIx64, op_names[r->op], r->no, step, q, v, p->model);
			if (r->op == OP_FETCH_ADD)
				p->model += r->no + 1;
			else if (step == 1)
				p->model = ((uint64_t)seed_of(r, q, x->gen) << 32) | r->no;
			x->checks++;
		}
		clear_kind(x, k);
	}
	return 0;
}

static void initiator_round(struct xfer *x, const struct round *r)
{
	char what[64];

	snprintf(what, sizeof(what), "%s round %u size %" PRIu64, op_names[r->op], r->no, r->size);
	if (r->op == OP_CMP_SWAP || r->op == OP_FETCH_ADD) {
		initiator_atomic(x, r);
		return;
	}
	for (unsigned int q = 0; q < x->nqp; q++) {
		struct xqp *p = &x->q[q];
		uint32_t len = (uint32_t)r->size;
		struct mr_send_wr w;

		if (r->op == OP_READ) {
			memset(p->buf + x->region, POISON, r->size + 1);
			w = wr_make(x, q, K_DATA, MR_WR_RDMA_READ, x->region, len, read_off(r));
			post_send(x, q, &w);
			continue;
		}
		post_recv(x, q, K_ACK_RX, 2 * x->region + C_ACK_RX, 8);
		fill(p->buf, r->size, seed_of(r, q, x->gen), 0);
		switch (r->op) {
		case OP_SEND:
			w = wr_make(x, q, K_DATA, MR_WR_SEND, 0, len, 0);
			break;
		case OP_SEND_IMM:
			w = wr_make(x, q, K_DATA, MR_WR_SEND_WITH_IMM, 0, len, 0);
			w.imm_data = imm_of(r, q);
			break;
		case OP_WRITE_IMM:
			w = wr_make(x, q, K_DATA, MR_WR_RDMA_WRITE_WITH_IMM, 0, len, x->region);
			w.imm_data = imm_of(r, q);
			break;
		default:
			w = wr_make(x, q, K_DATA, MR_WR_RDMA_WRITE, 0, len, x->region);
			break;
		}
		post_send(x, q, &w);
		if (r->op == OP_WRITE) {
			uint32_t bell[2] = { r->no, 0 };

			memcpy(p->buf + 2 * x->region + C_BELL_TX, bell, 8);
			w = wr_make(x, q, K_BELL, MR_WR_SEND, 2 * x->region + C_BELL_TX, BELL_LEN, 0);
			post_send(x, q, &w);
		}
	}
	wait_all(x, K_DATA, what);
	for (unsigned int q = 0; q < x->nqp; q++) {
		static const int wc_op[OP_NR] = { MR_WC_SEND, MR_WC_SEND, MR_WC_RDMA_WRITE,
						  MR_WC_RDMA_WRITE, MR_WC_RDMA_READ };

		if ((int)x->q[q].wc[K_DATA].opcode != wc_op[r->op])
			die("%s qp %u: completion opcode %d, expected %d", what, q,
			    (int)x->q[q].wc[K_DATA].opcode, wc_op[r->op]);
		if (r->op == OP_READ) {
			if (x->q[q].wc[K_DATA].byte_len != r->size)
				die("%s qp %u: READ byte_len %u", what, q, x->q[q].wc[K_DATA].byte_len);
			check(x, q, r, x->q[q].buf + x->region, r->size, read_seed(q, x->gen),
			      read_off(r), "read");
		}
	}
	clear_kind(x, K_DATA);
	if (r->op == OP_READ)
		return;
	if (r->op == OP_WRITE) {
		wait_all(x, K_BELL, what);
		clear_kind(x, K_BELL);
	}
	wait_all(x, K_ACK_RX, what);
	for (unsigned int q = 0; q < x->nqp; q++) {
		uint32_t ack[2];

		memcpy(ack, x->q[q].buf + 2 * x->region + C_ACK_RX, 8);
		if (ack[0] != ACK_MAGIC || ack[1] != r->no)
			die("%s qp %u: ack 0x%08x/%u, expected round %u", what, q, ack[0], ack[1],
			    r->no);
		x->checks++;
	}
	clear_kind(x, K_ACK_RX);
}

static void send_done(struct xfer *x)
{
	for (unsigned int q = 0; q < x->nqp; q++) {
		uint32_t bell[2] = { DONE_ROUND, 0 };
		struct mr_send_wr w;

		memcpy(x->q[q].buf + 2 * x->region + C_BELL_TX, bell, 8);
		w = wr_make(x, q, K_BELL, MR_WR_SEND, 2 * x->region + C_BELL_TX, BELL_LEN, 0);
		post_send(x, q, &w);
	}
	wait_all(x, K_BELL, "done doorbell");
	clear_kind(x, K_BELL);
}

/* Keeps STREAM_DEPTH WRITEs outstanding per QP; returns when stop() says so. With
 * tolerate_errors the first error ends posting and the function drains every outstanding WR. */
static void stream(struct xfer *x, uint64_t until_ns, bool until_error)
{
	uint64_t done = 0, posted = 0, next_print = now_ns(), deadline = 0;
	uint32_t len = x->region - 1 < STREAM_MSG ? (uint32_t)(x->region - 1) : STREAM_MSG;
	bool erred = false;

	for (unsigned int q = 0; q < x->nqp; q++)
		fill(x->q[q].buf, len, 0x5757u + q, 0);
	printf("mr_xfer[a]: stream: %u QPs x %u outstanding WRITEs of %u bytes\n", x->nqp,
	       STREAM_DEPTH, len);
	fflush(stdout);
	for (;;) {
		uint64_t before = x->checks, now = now_ns();

		for (unsigned int q = 0; q < x->nqp && !erred; q++)
			while (x->q[q].outstanding < STREAM_DEPTH) {
				struct mr_send_wr w = wr_make(x, q, K_STREAM, MR_WR_RDMA_WRITE, 0, len,
							      x->region);

				post_send(x, q, &w);
				x->q[q].outstanding++;
				posted++;
			}
		reap(x, until_error);
		done += x->checks - before;
		if (!erred && x->erred) {
			erred = true;
			deadline = now + (uint64_t)x->timeout_s * 1000000000ull;
			printf("mr_xfer[a]: stream: first error: qpn %u wr_id 0x%" PRIx64 " status %d "
			       "after %" PRIu64 " completions\n", x->first_err.qp_num,
			       x->first_err.wr_id, (int)x->first_err.status, done);
			fflush(stdout);
		}
		if (now >= next_print) {
			printf("mr_xfer[a]: stream: %" PRIu64 " completed, %" PRIu64 " posted\n", done,
			       posted);
			fflush(stdout);
			next_print = now + 1000000000ull;
		}
		if (erred) {
			uint64_t left = 0;

			for (unsigned int q = 0; q < x->nqp; q++)
				left += x->q[q].outstanding;
			if (left == 0)
				break;
			if (now > deadline)
				die("stream: %" PRIu64 " WRs still outstanding %u s after the first "
				    "error", left, x->timeout_s);
		} else if (!until_error && now > until_ns) {
			break;
		}
		if (x->checks == before) {
			struct timespec ts = { 0, 2000 };

			nanosleep(&ts, NULL);
		}
	}
	if (!until_error) {
		/* drain the tail before the done doorbell */
		uint64_t dl = now_ns() + (uint64_t)x->timeout_s * 1000000000ull;

		for (;;) {
			uint64_t left = 0;

			for (unsigned int q = 0; q < x->nqp; q++)
				left += x->q[q].outstanding;
			if (left == 0)
				break;
			if (now_ns() > dl)
				die("stream: %" PRIu64 " WRITEs never completed", left);
			reap(x, false);
		}
	}
	printf("mr_xfer[a]: stream: %" PRIu64 " WRITEs completed of %" PRIu64 " posted\n", done,
	       posted);
}

static void run_initiator(struct xfer *x)
{
	for (unsigned int q = 0; q < x->nqp; q++)
		x->q[q].model = atom_init(q, x->gen);
	write_info(x, "info");
	read_info(x, "info");
	for (unsigned int q = 0; q < x->nqp; q++)
		connect_qp(x, q);
	read_info(x, "rtr");
	for (unsigned int i = 0; i < x->nrounds; i++)
		initiator_round(x, &x->rounds[i]);
	printf("mr_xfer[a]: gen %u: %u rounds on %u QPs done; %" PRIu64 " checks, %" PRIu64
	       " bytes verified\n", x->gen, x->nrounds, x->nqp, x->checks, x->verified_bytes);
	fflush(stdout);
	if (x->stream_s > 0)
		stream(x, now_ns() + (uint64_t)x->stream_s * 1000000000ull, false);
	if (x->until_error) {
		struct mrc_qp_attr a = { 0 };
		int rc;

		send_done(x); /* the target may check its atomics now; it stays connected */
		printf("mr_xfer[a]: armed: streaming until the peer vanishes\n");
		fflush(stdout);
		stream(x, 0, true);
		for (unsigned int q = 0; q < x->nqp; q++) {
			rc = mrc_query_qp(x->q[q].qp, &a);
			if (rc < 0 || a.qp_state != MR_QPS_ERR)
				die("qp %u: state %u after the error completions, expected ERR (%d)", q,
				    a.qp_state, MR_QPS_ERR);
		}
		uint64_t nall = 0;

		for (unsigned int i = 0; i <= MR_WC_GENERAL_ERR; i++)
			nall += x->nerr[i];
		if (x->first_err.status != MR_WC_RETRY_EXC_ERR)
			die("first error status %d, expected RETRY_EXC_ERR (%d)",
			    (int)x->first_err.status, MR_WC_RETRY_EXC_ERR);
		printf("mr_xfer[a]: every outstanding WR completed with an error (retry_exc %" PRIu64
		       ", flushed %" PRIu64 ", other %" PRIu64 "); all %u QPs in ERR\n",
		       x->nerr[MR_WC_RETRY_EXC_ERR], x->nerr[MR_WC_WR_FLUSH_ERR],
		       nall - x->nerr[MR_WC_RETRY_EXC_ERR] - x->nerr[MR_WC_WR_FLUSH_ERR], x->nqp);
		return;
	}
	send_done(x);
}

static bool daemon_alive(struct xfer *x)
{
	struct mrc_port_attr pa;

	return mrc_query_port(x->s, &pa) == 0;
}

static void parse_sizes(struct xfer *x, const char *s)
{
	char buf[512], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", s);
	x->nsizes = 0;
	for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		uint64_t v = strtoull(tok, &end, 0);

		if (*end == 'K' || *end == 'k')
			v <<= 10, end++;
		else if (*end == 'M' || *end == 'm')
			v <<= 20, end++;
		if (*end != '\0' || v == 0 || v > (64u << 20) || x->nsizes >= MAX_SIZES)
			die("bad size '%s' (1 .. 64M, at most %d sizes)", tok, MAX_SIZES);
		x->sizes[x->nsizes++] = v;
	}
}

static void parse_ops(struct xfer *x, const char *s)
{
	char buf[256], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", s);
	memset(x->ops, 0, sizeof(x->ops));
	for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		int o;

		for (o = 0; o < OP_NR && strcmp(tok, op_names[o]) != 0; o++)
			;
		if (o == OP_NR)
			die("unknown op '%s'", tok);
		x->ops[o] = true;
	}
}

static void run_gen(struct xfer *x)
{
	open_session(x);
	if (x->role == 'a')
		run_initiator(x);
	else
		run_target(x);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0); /* logs are read while we run (readiness checks) */
	static const struct option opts[] = {
		{"role", required_argument, NULL, 'r'}, {"sock", required_argument, NULL, 's'},
		{"dir", required_argument, NULL, 'd'}, {"qps", required_argument, NULL, 'q'},
		{"sizes", required_argument, NULL, 'z'}, {"ops", required_argument, NULL, 'o'},
		{"iters", required_argument, NULL, 'i'},
		{"expect-mtu", required_argument, NULL, 'm'},
		{"timeout", required_argument, NULL, 't'}, {"gen", required_argument, NULL, 'g'},
		{"stream", required_argument, NULL, 'S'},
		{"until-error", no_argument, NULL, 'E'}, {"reconnect", no_argument, NULL, 'R'},
		{"ack-timeout", required_argument, NULL, 'A'},
		{NULL, 0, NULL, 0},
	};
	static struct xfer x = { .nqp = 1, .iters = 1, .timeout_s = 30, .gen = 1,
				 .ack_timeout = 14 };
	int opt;

	g_x = &x;
	/* The daemon may vanish (restart test): a write on its socket must fail, not kill us. */
	signal(SIGPIPE, SIG_IGN);
	for (int o = 0; o < OP_NR; o++)
		x.ops[o] = true;
	x.sizes[0] = 4096;
	x.nsizes = 1;
	/* The suite's default (lib.sh ITL_ACK_TIMEOUT); --ack-timeout overrides it. */
	if (getenv("MR_XFER_ACK_TIMEOUT") != NULL)
		x.ack_timeout = (uint8_t)strtoul(getenv("MR_XFER_ACK_TIMEOUT"), NULL, 0);
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'r': x.role = optarg[0]; break;
		case 's': x.sock = optarg; break;
		case 'd': x.dir = optarg; break;
		case 'q': x.nqp = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'z': parse_sizes(&x, optarg); break;
		case 'o': parse_ops(&x, optarg); break;
		case 'i': x.iters = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'm': x.expect_mtu = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 't': x.timeout_s = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'g': x.gen = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'S': x.stream_s = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'E': x.until_error = true; break;
		case 'R': x.reconnect = true; break;
		case 'A': x.ack_timeout = (uint8_t)strtoul(optarg, NULL, 0); break;
		default: return 2;
		}
	}
	if ((x.role != 'a' && x.role != 'b') || x.sock == NULL || x.dir == NULL || x.nqp == 0 ||
	    x.nqp > MAX_QPS || x.iters == 0 || x.timeout_s == 0 || x.gen == 0 ||
	    x.ack_timeout == 0 || x.ack_timeout > 31 ||
	    ((x.stream_s || x.until_error) && x.role != 'a') || (x.reconnect && x.role != 'b')) {
		fprintf(stderr, "usage: mr_xfer --role a|b --sock PATH --dir DIR [--qps 1..64] "
			"[--sizes 1,4K,1M] [--ops send,send_imm,write,write_imm,read,cmp_swap,"
			"fetch_add] [--iters N] [--expect-mtu N] [--timeout S] [--gen N] "
			"[--ack-timeout 1..31] "
			"[--stream S (a)] [--until-error (a)] [--reconnect (b)]\n");
		return 2;
	}
	for (unsigned int i = 0; i < x.nsizes; i++)
		x.maxsz = x.sizes[i] > x.maxsz ? x.sizes[i] : x.maxsz;
	x.region = (x.maxsz + REMOTE_SKEW + 1 + 4095) & ~4095ull;
	build_rounds(&x);
	run_gen(&x);
	if (x.reconnect) {
		uint64_t deadline = now_ns() + (uint64_t)x.timeout_s * 1000000000ull;
		int err = 0;

		printf("mr_xfer[b]: gen %u done; waiting for the daemon to go away\n", x.gen);
		fflush(stdout);
		while (daemon_alive(&x)) {
			if (now_ns() > deadline)
				die("the daemon did not go away within %u s", x.timeout_s);
			usleep(20000);
		}
		printf("mr_xfer[b]: daemon gone (control call failed: %s)\n", mrc_last_error(x.s));
		fflush(stdout);
		close_session(&x, true);
		deadline = now_ns() + (uint64_t)x.timeout_s * 1000000000ull;
		while ((x.s = mrc_open(x.sock)) == NULL) {
			err = errno;
			if (now_ns() > deadline)
				die("no daemon on %s again within %u s (%s)", x.sock, x.timeout_s,
				    strerror(err));
			usleep(20000);
		}
		(void)mrc_close(x.s);
		x.s = NULL;
		printf("mr_xfer[b]: reconnected to the restarted daemon\n");
		fflush(stdout);
		x.gen++;
		x.checks = x.verified_bytes = 0;
		run_gen(&x);
	}
	close_session(&x, false);
	printf("mr_xfer[%c]: PASS\n", x.role);
	return 0;
}
