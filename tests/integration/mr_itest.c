/* SPDX-License-Identifier: MIT
 * mr_itest: two-host integration client for metaroced. Run once as role "b" (the target) against
 * one daemon and once as role "a" (the initiator) against another; they exchange QP number, PSN,
 * rkey, buffer address and GID through files in a shared directory, connect one RC QP each and
 * move data with RDMA WRITE, SEND (multi-packet), WRITE WITH IMMEDIATE, RDMA READ and both
 * atomics, checking every byte and every returned value. Role a then measures WRITE throughput
 * and READ latency and prints them.
 *
 *   mr_itest --role a|b --sock PATH --dir DIR [--bytes N] [--bw-bytes N] [--lat-iters N]
 *            [--timeout SEC] [--spin N]
 *   mr_itest --role u --sock PATH --unreach A.B.C.D   (a peer that never answers ARP: the WR
 *            must end with RETRY_EXC_ERR, not hang)
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <metaroce/metaroce.h>

#define ATOM_INIT 0x1111222233334444ull
#define ATOM_ADD 5ull
#define ATOM_SWAP 0xdeadbeefcafef00dull
#define READY_IMM 0x0eadbeefu
#define CTRL_LEN 64
#define SEND_MAX (256u * 1024)

struct peer_info {
	uint32_t qpn, psn, rkey;
	uint64_t vaddr;
	uint8_t gid[16];
};

struct itest {
	char role;
	const char *sock, *dir;
	uint64_t bytes;          /* L: size of each region */
	uint64_t bw_bytes;
	unsigned int lat_iters;
	unsigned int timeout_s;
	unsigned int spin;       /* empty CQ polls before a short sleep (2-core friendliness) */
	uint8_t ack_timeout, retry_cnt;
	const char *unreach;     /* role u: an IPv4 address nobody answers ARP for */
	struct mrc_session *s;
	struct mrc_port_attr port;
	struct mrc_pd *pd;
	uint8_t *buf;
	uint64_t buflen;
	struct mrc_mr *mr;
	struct mrc_cq *cq;
	struct mrc_qp *qp;
	struct peer_info me, peer;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void fail(struct itest *t, const char *what, int err)
{
	fprintf(stderr, "mr_itest[%c]: FAIL: %s: %s%s%s\n", t->role, what,
		err ? mrc_strerror(err) : "", t->s != NULL ? " - " : "",
		t->s != NULL ? mrc_last_error(t->s) : "");
	exit(1);
}

static uint8_t pattern(uint64_t i, unsigned int seed)
{
	return (uint8_t)(i * 31u + seed * 17u + (i >> 8) + (i >> 16) * 7u);
}

static void fill(uint8_t *p, uint64_t n, unsigned int seed)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		p[i] = pattern(i, seed);
}

static void check(struct itest *t, const uint8_t *p, uint64_t n, unsigned int seed,
		  const char *what)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		if (p[i] != pattern(i, seed)) {
			fprintf(stderr, "mr_itest[%c]: FAIL: %s: byte %" PRIu64 " is 0x%02x, "
				"expected 0x%02x\n", t->role, what, i, p[i], pattern(i, seed));
			exit(1);
		}
	printf("mr_itest[%c]: %s: %" PRIu64 " bytes verified\n", t->role, what, n);
}

/* Region layout inside the registered buffer (both roles). */
static uint64_t off_w(const struct itest *t) { (void)t; return 0; }
static uint64_t off_s(const struct itest *t) { return t->bytes; }
static uint64_t off_r(const struct itest *t) { return 2 * t->bytes; }
static uint64_t off_atom(const struct itest *t) { return 3 * t->bytes; }
static uint64_t off_ctrl(const struct itest *t) { return 3 * t->bytes + 64; }

/* Waits for one completion (deadline: --timeout), whatever its status. */
static struct mr_wc wait_wc_any(struct itest *t, const char *what)
{
	uint64_t deadline = now_ns() + (uint64_t)t->timeout_s * 1000000000ull;
	unsigned int empty = 0;
	struct mr_wc wc;

	for (;;) {
		int r = mrc_poll_cq(t->cq, 1, &wc);

		if (r < 0)
			fail(t, "poll_cq", r);
		if (r == 1)
			break;
		if (++empty >= t->spin) {
			struct timespec ts = { 0, 5000 };

			if (now_ns() > deadline) {
				fprintf(stderr, "mr_itest[%c]: FAIL: %s: no completion in %u s\n",
					t->role, what, t->timeout_s);
				exit(1);
			}
			nanosleep(&ts, NULL);
			empty = 0;
		}
	}
	return wc;
}

/* Waits for one completion; checks status and opcode. */
static struct mr_wc wait_wc(struct itest *t, int opcode, const char *what)
{
	struct mr_wc wc = wait_wc_any(t, what);

	if (wc.status != MR_WC_SUCCESS) {
		fprintf(stderr, "mr_itest[%c]: FAIL: %s: wr_id %" PRIu64 " status %d vendor_err %u\n",
			t->role, what, wc.wr_id, (int)wc.status, wc.vendor_err);
		exit(1);
	}
	if (opcode >= 0 && (int)wc.opcode != opcode) {
		fprintf(stderr, "mr_itest[%c]: FAIL: %s: opcode %d, expected %d\n", t->role, what,
			(int)wc.opcode, opcode);
		exit(1);
	}
	return wc;
}

static void post_send(struct itest *t, const struct mr_send_wr *wr, const char *what)
{
	int rc;

	/* A full ring is transient: the daemon drains it. */
	while ((rc = mrc_post_send(t->qp, wr)) == -ENOMEM)
		sched_yield();
	if (rc < 0)
		fail(t, what, rc);
}

static void post_recv(struct itest *t, uint64_t id, uint64_t off, uint32_t len)
{
	struct mr_recv_wr r = { .wr_id = id, .num_sge = 1 };
	int rc;

	r.sg_list[0].addr = (uint64_t)(uintptr_t)(t->buf + off);
	r.sg_list[0].length = len;
	r.sg_list[0].lkey = mrc_mr_lkey(t->mr);
	rc = mrc_post_recv(t->qp, &r);
	if (rc < 0)
		fail(t, "post_recv", rc);
}

static struct mr_send_wr wr_rdma(struct itest *t, uint64_t id, enum mr_wr_opcode op,
				 uint64_t loff, uint32_t len, uint64_t roff)
{
	struct mr_send_wr w;

	memset(&w, 0, sizeof(w));
	w.wr_id = id;
	w.opcode = op;
	w.send_flags = MR_SEND_SIGNALED;
	w.num_sge = 1;
	w.sg_list[0].addr = (uint64_t)(uintptr_t)(t->buf + loff);
	w.sg_list[0].length = len;
	w.sg_list[0].lkey = mrc_mr_lkey(t->mr);
	w.rdma.remote_addr = t->peer.vaddr + roff;
	w.rdma.rkey = t->peer.rkey;
	return w;
}

static uint64_t atomic_op(struct itest *t, enum mr_wr_opcode op, uint64_t cmp_add,
			  uint64_t swap)
{
	struct mr_send_wr w = wr_rdma(t, 40 + op, op, off_atom(t) + 8, 8, 0);
	uint64_t v;

	w.atomic.remote_addr = t->peer.vaddr + off_atom(t);
	w.atomic.rkey = t->peer.rkey;
	w.atomic.compare_add = cmp_add;
	w.atomic.swap = swap;
	post_send(t, &w, "post atomic");
	wait_wc(t, op == MR_WR_ATOMIC_FETCH_AND_ADD ? MR_WC_FETCH_ADD : MR_WC_COMP_SWAP, "atomic");
	memcpy(&v, t->buf + off_atom(t) + 8, 8);
	return v;
}

/* ---- QP info exchange through files (atomic rename) ---- */

static void write_info(struct itest *t, const char *suffix)
{
	char path[512], tmp[520];
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "%s/%c.%s", t->dir, t->role, suffix);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (f == NULL)
		fail(t, "write info file", -errno);
	fprintf(f, "%" PRIu32 " %" PRIu32 " %" PRIu32 " %" PRIu64 " ", t->me.qpn, t->me.psn,
		t->me.rkey, t->me.vaddr);
	for (i = 0; i < 16; i++)
		fprintf(f, "%02x", t->me.gid[i]);
	fprintf(f, "\n");
	if (fclose(f) != 0 || rename(tmp, path) != 0)
		fail(t, "write info file", -errno);
}

static void read_info(struct itest *t, const char *suffix)
{
	uint64_t deadline = now_ns() + (uint64_t)t->timeout_s * 1000000000ull;
	char path[512], gid[40];
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "%s/%c.%s", t->dir, t->role == 'a' ? 'b' : 'a', suffix);
	while ((f = fopen(path, "r")) == NULL) {
		if (now_ns() > deadline)
			fail(t, "peer info file never appeared", -ETIMEDOUT);
		usleep(20000);
	}
	if (fscanf(f, "%" SCNu32 " %" SCNu32 " %" SCNu32 " %" SCNu64 " %32s", &t->peer.qpn,
		   &t->peer.psn, &t->peer.rkey, &t->peer.vaddr, gid) != 5 || strlen(gid) != 32)
		fail(t, "malformed peer info file", -EINVAL);
	fclose(f);
	for (i = 0; i < 16; i++) {
		unsigned int x;

		if (sscanf(gid + 2 * i, "%2x", &x) != 1)
			fail(t, "malformed peer gid", -EINVAL);
		t->peer.gid[i] = (uint8_t)x;
	}
}

/* RESET -> INIT -> RTR -> RTS (IBA 10.3.1; ibv_modify_qp masks). The daemon fills MACs, our
 * GID, traffic class and UDP source port; we only give the peer's GID. */
static void qp_init(struct itest *t)
{
	struct mrc_qp_attr a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = MR_QPS_INIT;
	a.qp_access_flags = MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ |
			    MR_ACCESS_REMOTE_ATOMIC;
	rc = mrc_modify_qp(t->qp, &a, MRC_QP_STATE | MRC_QP_PKEY_INDEX | MRC_QP_ACCESS_FLAGS);
	if (rc < 0)
		fail(t, "modify INIT", rc);
}

static void connect_qp(struct itest *t)
{
	struct mrc_qp_attr a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = MR_QPS_RTR;
	memcpy(a.path.dgid, t->peer.gid, 16);
	a.path.ipv6 = !(t->peer.gid[10] == 0xff && t->peer.gid[11] == 0xff);
	a.path_mtu = t->port.active_mtu ? t->port.active_mtu : 1024;
	a.dest_qp_num = t->peer.qpn;
	a.rq_psn = t->peer.psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	rc = mrc_modify_qp(t->qp, &a, MRC_QP_STATE | MRC_QP_PATH | MRC_QP_PATH_MTU |
			   MRC_QP_DEST_QPN | MRC_QP_RQ_PSN | MRC_QP_MAX_DEST_RD_ATOMIC |
			   MRC_QP_MIN_RNR_TIMER);
	if (rc < 0)
		fail(t, "modify RTR", rc);
	a.qp_state = MR_QPS_RTS;
	a.sq_psn = t->me.psn;
	a.timeout = t->ack_timeout;
	a.retry_cnt = t->retry_cnt;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	rc = mrc_modify_qp(t->qp, &a, MRC_QP_STATE | MRC_QP_SQ_PSN | MRC_QP_TIMEOUT |
			   MRC_QP_RETRY_CNT | MRC_QP_RNR_RETRY | MRC_QP_MAX_QP_RD_ATOMIC);
	if (rc < 0)
		fail(t, "modify RTS", rc);
}

static void setup(struct itest *t)
{
	struct mrc_qp_init_attr init;
	unsigned int gi;
	int rc;

	t->s = mrc_open(t->sock);
	if (t->s == NULL)
		fail(t, "mrc_open", -errno);
	rc = mrc_query_port(t->s, &t->port);
	if (rc < 0)
		fail(t, "query_port", rc);
	if (t->port.state != MRC_PORT_ACTIVE)
		fail(t, "port not active", -ENETDOWN);
	t->pd = mrc_alloc_pd(t->s);
	if (t->pd == NULL)
		fail(t, "alloc_pd", -errno);
	t->buflen = 3 * t->bytes + 4096;
	t->buf = mrc_alloc_buf(t->s, t->buflen);
	if (t->buf == NULL)
		fail(t, "alloc_buf", -errno);
	t->mr = mrc_reg_mr(t->pd, t->buf, t->buflen, MR_ACCESS_LOCAL_WRITE |
			   MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ |
			   MR_ACCESS_REMOTE_ATOMIC);
	if (t->mr == NULL)
		fail(t, "reg_mr", -errno);
	t->cq = mrc_create_cq(t->s, 1024);
	if (t->cq == NULL)
		fail(t, "create_cq", -errno);
	memset(&init, 0, sizeof(init));
	init.qp_type = MRC_QPT_RC;
	init.send_cq = init.recv_cq = t->cq;
	init.max_send_wr = 256;
	init.max_recv_wr = 64;
	init.max_send_sge = init.max_recv_sge = 2;
	init.max_inline_data = 64;
	t->qp = mrc_create_qp(t->pd, &init);
	if (t->qp == NULL)
		fail(t, "create_qp", -errno);
	/* GID index 1 is the IPv4-mapped RoCE v2 GID (as rxe), else index 0. */
	gi = t->port.gid_count > 1 ? 1 : 0;
	t->me.qpn = mrc_qp_num(t->qp);
	t->me.psn = (uint32_t)(now_ns() ^ ((uint64_t)getpid() << 8)) & 0xffffff;
	t->me.rkey = mrc_mr_rkey(t->mr);
	t->me.vaddr = (uint64_t)(uintptr_t)t->buf;
	memcpy(t->me.gid, t->port.gid[gi], 16);
	/* Receives may be posted from INIT on (IBA 10.8.2), before the peer can send. */
	qp_init(t);
	printf("mr_itest[%c]: qpn %u psn 0x%06x ib_mtu %u\n", t->role, t->me.qpn, t->me.psn,
	       t->port.active_mtu);
}

static uint32_t send_len(const struct itest *t)
{
	return t->bytes < SEND_MAX ? (uint32_t)t->bytes : SEND_MAX;
}

/* Target: receives WRITE + SEND, serves READ and atomics, checks the final atomic value. */
static void role_b(struct itest *t)
{
	struct mr_send_wr w;
	struct mr_wc wc;
	uint64_t v;

	fill(t->buf + off_r(t), t->bytes, 3);
	v = ATOM_INIT;
	memcpy(t->buf + off_atom(t), &v, 8);
	post_recv(t, 1, off_s(t), (uint32_t)t->bytes);     /* the big SEND */
	post_recv(t, 2, off_ctrl(t), CTRL_LEN);            /* "done" */
	write_info(t, "info");
	read_info(t, "info");
	connect_qp(t);
	/* The peer must be in RTR before we send, else its first packets are dropped (IBA 10.3.1)
	 * and only the ACK timeout recovers them. */
	write_info(t, "rtr");
	read_info(t, "rtr");
	wc = wait_wc(t, MR_WC_RECV, "recv SEND");
	if (wc.wr_id != 1 || wc.byte_len != send_len(t) || wc.qp_num != t->me.qpn) {
		fprintf(stderr, "mr_itest[b]: FAIL: SEND completion wr_id %" PRIu64 " len %u qp %u\n",
			wc.wr_id, wc.byte_len, wc.qp_num);
		exit(1);
	}
	/* IBA 10.8.3 ordering: the WRITE posted before the SEND is placed before it completes. */
	check(t, t->buf + off_w(t), t->bytes, 1, "RDMA WRITE placed");
	check(t, t->buf + off_s(t), send_len(t), 2, "SEND received");
	/* Tell a that READ data is ready: WRITE WITH IMMEDIATE into a's ctrl area. */
	memcpy(t->buf + off_ctrl(t) + CTRL_LEN, "ready", 6);
	w = wr_rdma(t, 3, MR_WR_RDMA_WRITE_WITH_IMM, off_ctrl(t) + CTRL_LEN, 6, off_ctrl(t));
	w.imm_data = READY_IMM;
	post_send(t, &w, "post WRITE_WITH_IMM");
	wait_wc(t, MR_WC_RDMA_WRITE, "WRITE_WITH_IMM completion");
	wc = wait_wc(t, MR_WC_RECV, "recv done");
	if (wc.wr_id != 2 || memcmp(t->buf + off_ctrl(t), "done", 5) != 0) {
		fprintf(stderr, "mr_itest[b]: FAIL: bad done message\n");
		exit(1);
	}
	/* The ACK of "done" may be lost (impair_daemon drops 1 % of b's frames) or still owed
	 * (coalesced, RC_DELAYED_ACK_NS): a's retries need b's QP alive to be answered
	 * (IBA 9.7.5.1.2: a duplicate request is ACKed again), so b leaves only once a has its
	 * completion, as perftest ends with a barrier over its TCP connection. */
	read_info(t, "finished");
	memcpy(&v, t->buf + off_atom(t), 8);
	if (v != ATOM_SWAP) {
		fprintf(stderr, "mr_itest[b]: FAIL: atomic target 0x%016" PRIx64 ", expected 0x%016"
			PRIx64 "\n", v, (uint64_t)ATOM_SWAP);
		exit(1);
	}
	printf("mr_itest[b]: atomic target 0x%016" PRIx64 " as expected\n", v);
}

/* Peer that does not exist: the daemon holds the QP's packets while ARP runs, the requester's
 * retries run out, and the WR completes with RETRY_EXC_ERR (IBA 9.7.6.1.3, C9-141) instead of
 * hanging; the QP is then in ERR. */
static void role_u(struct itest *t)
{
	struct mr_send_wr w;
	struct mr_wc wc;
	struct mrc_qp_attr q;
	unsigned int ip[4];
	int rc;

	if (t->unreach == NULL || sscanf(t->unreach, "%u.%u.%u.%u", &ip[0], &ip[1], &ip[2],
					 &ip[3]) != 4)
		fail(t, "role u needs --unreach A.B.C.D", -EINVAL);
	memset(&t->peer, 0, sizeof(t->peer));
	t->peer.gid[10] = t->peer.gid[11] = 0xff;
	for (rc = 0; rc < 4; rc++)
		t->peer.gid[12 + rc] = (uint8_t)ip[rc];
	t->peer.qpn = 0x99;
	t->peer.rkey = 1;
	t->peer.vaddr = 0x10000;
	connect_qp(t);
	w = wr_rdma(t, 77, MR_WR_RDMA_WRITE, 0, 4096, 0);
	post_send(t, &w, "post WRITE to nowhere");
	wc = wait_wc_any(t, "WRITE to an unreachable peer");
	if (wc.wr_id != 77 || wc.status != MR_WC_RETRY_EXC_ERR) {
		fprintf(stderr, "mr_itest[u]: FAIL: wr_id %" PRIu64 " status %d, expected %d\n",
			wc.wr_id, (int)wc.status, MR_WC_RETRY_EXC_ERR);
		exit(1);
	}
	rc = mrc_query_qp(t->qp, &q);
	if (rc < 0 || q.qp_state != MR_QPS_ERR)
		fail(t, "QP not in ERR after retry exhaustion", rc);
	printf("mr_itest[u]: WRITE to unreachable %s completed with RETRY_EXC_ERR, QP in ERR\n",
	       t->unreach);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void bench(struct itest *t)
{
	const uint32_t chunk = t->bytes < 65536 ? (uint32_t)t->bytes : 65536;
	uint64_t posted = 0, done = 0, n = t->bw_bytes / chunk, t0, dt, *lat;
	const unsigned int depth = 16;
	unsigned int i;

	if (n > 0) {
		t0 = now_ns();
		while (done < n) {
			while (posted < n && posted - done < depth) {
				uint64_t roff = (posted * chunk) % (t->bytes - chunk + 1);
				struct mr_send_wr w = wr_rdma(t, 100, MR_WR_RDMA_WRITE, 0, chunk, roff);

				post_send(t, &w, "post bw WRITE");
				posted++;
			}
			wait_wc(t, MR_WC_RDMA_WRITE, "bw WRITE");
			done++;
		}
		dt = now_ns() - t0;
		printf("mr_itest[a]: RESULT write_bw bytes=%" PRIu64 " msg=%u depth=%u time_ms=%.1f "
		       "gbps=%.3f pkts_per_s=%.0f\n", n * chunk, chunk, depth, dt / 1e6,
		       (double)(n * chunk) * 8 / (double)dt,
		       (double)(n * ((chunk + t->port.active_mtu - 1) / t->port.active_mtu)) * 1e9 /
		       (double)dt);
	}
	if (t->lat_iters == 0)
		return;
	lat = calloc(t->lat_iters, sizeof(*lat));
	if (lat == NULL)
		fail(t, "calloc", -ENOMEM);
	for (i = 0; i < t->lat_iters; i++) {
		struct mr_send_wr w = wr_rdma(t, 200, MR_WR_RDMA_READ, off_r(t), 64, off_r(t));

		t0 = now_ns();
		post_send(t, &w, "post lat READ");
		wait_wc(t, MR_WC_RDMA_READ, "lat READ");
		lat[i] = now_ns() - t0;
	}
	qsort(lat, t->lat_iters, sizeof(*lat), cmp_u64);
	printf("mr_itest[a]: RESULT read_lat size=64 iters=%u min_us=%.1f median_us=%.1f "
	       "p99_us=%.1f max_us=%.1f\n", t->lat_iters, lat[0] / 1e3,
	       lat[t->lat_iters / 2] / 1e3, lat[(t->lat_iters * 99) / 100] / 1e3,
	       lat[t->lat_iters - 1] / 1e3);
	free(lat);
}

/* Initiator. */
static void role_a(struct itest *t)
{
	struct mr_send_wr w;
	struct mr_wc wc;
	uint64_t v;

	post_recv(t, 10, off_ctrl(t), CTRL_LEN);           /* b's WRITE WITH IMM */
	write_info(t, "info");
	read_info(t, "info");
	connect_qp(t);
	/* The peer must be in RTR before we send, else its first packets are dropped (IBA 10.3.1)
	 * and only the ACK timeout recovers them. */
	write_info(t, "rtr");
	read_info(t, "rtr");
	fill(t->buf + off_w(t), t->bytes, 1);
	fill(t->buf + off_s(t), send_len(t), 2);
	w = wr_rdma(t, 11, MR_WR_RDMA_WRITE, off_w(t), (uint32_t)t->bytes, off_w(t));
	post_send(t, &w, "post WRITE");
	w = wr_rdma(t, 12, MR_WR_SEND, off_s(t), send_len(t), 0);
	post_send(t, &w, "post SEND");
	wait_wc(t, MR_WC_RDMA_WRITE, "WRITE completion");
	wait_wc(t, MR_WC_SEND, "SEND completion");
	printf("mr_itest[a]: WRITE %" PRIu64 " bytes and SEND %u bytes completed\n", t->bytes,
	       send_len(t));
	wc = wait_wc(t, MR_WC_RECV_RDMA_WITH_IMM, "WRITE_WITH_IMM arrival");
	if (!(wc.wc_flags & MR_WC_WITH_IMM) || wc.imm_data != READY_IMM ||
	    memcmp(t->buf + off_ctrl(t), "ready", 6) != 0) {
		fprintf(stderr, "mr_itest[a]: FAIL: WRITE_WITH_IMM: flags 0x%x imm 0x%x\n",
			wc.wc_flags, wc.imm_data);
		exit(1);
	}
	printf("mr_itest[a]: WRITE_WITH_IMM imm 0x%x and data verified\n", wc.imm_data);
	memset(t->buf + off_r(t), 0, t->bytes);
	w = wr_rdma(t, 13, MR_WR_RDMA_READ, off_r(t), (uint32_t)t->bytes, off_r(t));
	post_send(t, &w, "post READ");
	wait_wc(t, MR_WC_RDMA_READ, "READ completion");
	check(t, t->buf + off_r(t), t->bytes, 3, "RDMA READ");
	/* IBA 9.4.5: FETCH_ADD and CMP_SWAP return the original value. */
	v = atomic_op(t, MR_WR_ATOMIC_FETCH_AND_ADD, ATOM_ADD, 0);
	if (v != ATOM_INIT)
		fail(t, "FETCH_ADD returned a wrong original value", 0);
	v = atomic_op(t, MR_WR_ATOMIC_CMP_AND_SWP, ATOM_INIT, ATOM_SWAP); /* must not swap */
	if (v != ATOM_INIT + ATOM_ADD)
		fail(t, "failed CMP_SWAP returned a wrong value", 0);
	v = atomic_op(t, MR_WR_ATOMIC_CMP_AND_SWP, ATOM_INIT + ATOM_ADD, ATOM_SWAP);
	if (v != ATOM_INIT + ATOM_ADD)
		fail(t, "CMP_SWAP returned a wrong original value", 0);
	printf("mr_itest[a]: FETCH_ADD and CMP_SWAP (miss, hit) returned the expected values\n");
	bench(t);
	memcpy(t->buf + off_ctrl(t) + CTRL_LEN, "done", 5);
	w = wr_rdma(t, 14, MR_WR_SEND, off_ctrl(t) + CTRL_LEN, 5, 0);
	w.send_flags |= MR_SEND_INLINE;
	post_send(t, &w, "post done");
	wait_wc(t, MR_WC_SEND, "done completion");
	write_info(t, "finished"); /* b may leave (role_b) */
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"role", required_argument, NULL, 'r'}, {"sock", required_argument, NULL, 's'},
		{"dir", required_argument, NULL, 'd'}, {"bytes", required_argument, NULL, 'b'},
		{"bw-bytes", required_argument, NULL, 'B'},
		{"lat-iters", required_argument, NULL, 'l'},
		{"timeout", required_argument, NULL, 't'}, {"spin", required_argument, NULL, 'S'},
		{"unreach", required_argument, NULL, 'u'},
		{NULL, 0, NULL, 0},
	};
	struct itest t = { .bytes = 1 << 20, .bw_bytes = 0, .lat_iters = 0, .timeout_s = 30,
			   .spin = 2000, .ack_timeout = 14, .retry_cnt = 7 };
	int opt, rc;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'r': t.role = optarg[0]; break;
		case 's': t.sock = optarg; break;
		case 'd': t.dir = optarg; break;
		case 'b': t.bytes = strtoull(optarg, NULL, 0); break;
		case 'B': t.bw_bytes = strtoull(optarg, NULL, 0); break;
		case 'l': t.lat_iters = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 't': t.timeout_s = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'S': t.spin = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'u': t.unreach = optarg; break;
		default: return 2;
		}
	}
	if (t.role == 'u') {
		t.ack_timeout = 10; /* 4.2 ms */
		t.retry_cnt = 1;
		t.dir = t.dir != NULL ? t.dir : ".";
	}
	if ((t.role != 'a' && t.role != 'b' && t.role != 'u') || t.dir == NULL || t.bytes < 64 ||
	    t.bytes > (1u << 30) || t.bytes % 64 || t.spin == 0) {
		fprintf(stderr, "usage: mr_itest --role a|b|u --sock PATH --dir DIR [--bytes N "
			"(multiple of 64)] [--bw-bytes N] [--lat-iters N] [--timeout S] [--spin N]\n");
		return 2;
	}
	setup(&t);
	if (t.role == 'a')
		role_a(&t);
	else if (t.role == 'b')
		role_b(&t);
	else
		role_u(&t);
	mrc_destroy_qp(t.qp);
	mrc_destroy_cq(t.cq);
	mrc_dereg_mr(t.mr);
	mrc_free_buf(t.s, t.buf);
	mrc_dealloc_pd(t.pd);
	rc = mrc_close(t.s);
	printf("mr_itest[%c]: PASS\n", t.role);
	return rc == 0 ? 0 : 1;
}
