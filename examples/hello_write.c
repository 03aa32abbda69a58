/* SPDX-License-Identifier: MIT
 * hello_write: the smallest libmetaroce program. Two RC queue pairs of one session are
 * connected to each other through the daemon (loopback on its port); QP A writes a greeting
 * into QP B's buffer with RDMA WRITE with immediate, B's receive completion carries the
 * immediate, and the program checks the bytes.
 *
 * Build: make (uses only `pkg-config --cflags --libs metaroce`).
 * Run:   ./hello_write [daemon-socket]   (default $METAROCE_SOCK or /run/metaroce/metaroced.sock)
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <metaroce/metaroce.h>

#define MSG "hello, metaroce"
#define IMM 0x600dcafe

static int die(struct mrc_session *s, const char *what, int err)
{
	fprintf(stderr, "hello_write: %s: %s%s%s\n", what, mrc_strerror(err),
		s != NULL ? " - " : "", s != NULL ? mrc_last_error(s) : "");
	return 1;
}

/* RESET -> INIT -> RTR -> RTS towards `dest_qpn` (IBA 10.3.1 / ibv_modify_qp masks). */
static int connect_qp(struct mrc_qp *qp, uint32_t dest_qpn, const struct mrc_path *path,
		      uint32_t mtu)
{
	struct mrc_qp_attr a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = MR_QPS_INIT;
	a.qp_access_flags = MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ;
	rc = mrc_modify_qp(qp, &a, MRC_QP_STATE | MRC_QP_PKEY_INDEX | MRC_QP_ACCESS_FLAGS);
	if (rc < 0)
		return rc;
	a.qp_state = MR_QPS_RTR;
	a.path = *path;
	a.path_mtu = mtu;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = 0x1000;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	rc = mrc_modify_qp(qp, &a, MRC_QP_STATE | MRC_QP_PATH | MRC_QP_PATH_MTU |
			   MRC_QP_DEST_QPN | MRC_QP_RQ_PSN | MRC_QP_MAX_DEST_RD_ATOMIC |
			   MRC_QP_MIN_RNR_TIMER);
	if (rc < 0)
		return rc;
	a.qp_state = MR_QPS_RTS;
	a.sq_psn = 0x1000;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return mrc_modify_qp(qp, &a, MRC_QP_STATE | MRC_QP_SQ_PSN | MRC_QP_TIMEOUT |
			     MRC_QP_RETRY_CNT | MRC_QP_RNR_RETRY | MRC_QP_MAX_QP_RD_ATOMIC);
}

/* Waits for n completions using the CQ's event fd (no busy polling). */
static int wait_cq(struct mrc_cq *cq, struct mr_wc *wc, int n, int timeout_ms)
{
	int got = 0;

	while (got < n) {
		struct pollfd pfd = { .fd = mrc_cq_event_fd(cq), .events = POLLIN };
		int r = mrc_poll_cq(cq, n - got, wc + got);

		if (r < 0)
			return r;
		got += r;
		if (got == n)
			break;
		mrc_req_notify_cq(cq, false);
		r = mrc_poll_cq(cq, n - got, wc + got); /* an entry may predate the arm */
		if (r < 0)
			return r;
		got += r;
		if (got == n)
			break;
		if (poll(&pfd, 1, timeout_ms) <= 0)
			return -ETIMEDOUT;
		mrc_cq_ack_events(cq);
	}
	return got;
}

int main(int argc, char **argv)
{
	struct mrc_session *s = mrc_open(argc > 1 ? argv[1] : NULL);
	struct mrc_port_attr port;
	struct mrc_qp_init_attr init;
	struct mrc_path path;
	struct mrc_pd *pd;
	struct mrc_mr *mr;
	struct mrc_cq *cq;
	struct mrc_qp *qa, *qb;
	struct mr_send_wr swr;
	struct mr_recv_wr rwr;
	struct mr_wc wc[2];
	char *buf, *src, *dst;
	unsigned int gi;
	int rc, i;

	if (s == NULL)
		return die(NULL, "cannot reach the daemon (is metaroced running?)", -errno);
	rc = mrc_query_port(s, &port);
	if (rc < 0)
		return die(s, "query_port", rc);
	pd = mrc_alloc_pd(s);
	buf = pd != NULL ? mrc_alloc_buf(s, 8192) : NULL;
	if (buf == NULL)
		return die(s, "pd/buffer", -errno);
	src = buf;
	dst = buf + 4096;
	mr = mrc_reg_mr(pd, buf, 8192, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE |
			MR_ACCESS_REMOTE_READ);
	cq = mr != NULL ? mrc_create_cq(s, 16) : NULL;
	if (cq == NULL)
		return die(s, "mr/cq", -errno);
	memset(&init, 0, sizeof(init));
	init.qp_type = MRC_QPT_RC;
	init.send_cq = init.recv_cq = cq;
	init.max_send_wr = init.max_recv_wr = 8;
	init.max_send_sge = init.max_recv_sge = 1;
	init.max_inline_data = 64;
	qa = mrc_create_qp(pd, &init);
	qb = qa != NULL ? mrc_create_qp(pd, &init) : NULL;
	if (qb == NULL)
		return die(s, "create_qp", -errno);

	/* Loopback path: our own MAC and GID at both ends (GID index 1 = IPv4-mapped, as rxe). */
	memset(&path, 0, sizeof(path));
	gi = port.gid_count > 1 ? 1 : 0;
	memcpy(path.smac, port.mac, 6);
	memcpy(path.dmac, port.mac, 6);
	memcpy(path.sgid, port.gid[gi], 16);
	memcpy(path.dgid, port.gid[gi], 16);
	path.ipv6 = !(port.gid[gi][10] == 0xff && port.gid[gi][11] == 0xff);
	path.ttl = 64;
	rc = connect_qp(qa, mrc_qp_num(qb), &path, port.active_mtu ? port.active_mtu : 1024);
	if (rc == 0)
		rc = connect_qp(qb, mrc_qp_num(qa), &path, port.active_mtu ? port.active_mtu : 1024);
	if (rc < 0)
		return die(s, "connect", rc);

	/* WRITE_WITH_IMM consumes a receive at the target (IBA 9.4.3). */
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = 2;
	rc = mrc_post_recv(qb, &rwr);
	if (rc < 0)
		return die(s, "post_recv", rc);
	strcpy(src, MSG);
	memset(&swr, 0, sizeof(swr));
	swr.wr_id = 1;
	swr.opcode = MR_WR_RDMA_WRITE_WITH_IMM;
	swr.send_flags = MR_SEND_SIGNALED;
	swr.num_sge = 1;
	swr.sg_list[0].addr = (uint64_t)(uintptr_t)src;
	swr.sg_list[0].length = sizeof(MSG);
	swr.sg_list[0].lkey = mrc_mr_lkey(mr);
	swr.imm_data = IMM;
	swr.rdma.remote_addr = (uint64_t)(uintptr_t)dst;
	swr.rdma.rkey = mrc_mr_rkey(mr);
	rc = mrc_post_send(qa, &swr);
	if (rc < 0)
		return die(s, "post_send", rc);
	rc = wait_cq(cq, wc, 2, 5000);
	if (rc < 0)
		return die(s, "waiting for completions", rc);
	for (i = 0; i < 2; i++) {
		if (wc[i].status != MR_WC_SUCCESS) {
			fprintf(stderr, "hello_write: wr %llu failed with status %d\n",
				(unsigned long long)wc[i].wr_id, (int)wc[i].status);
			return 1;
		}
		if (wc[i].wr_id == 2 && (!(wc[i].wc_flags & MR_WC_WITH_IMM) || wc[i].imm_data != IMM)) {
			fprintf(stderr, "hello_write: immediate missing or wrong\n");
			return 1;
		}
	}
	if (memcmp(dst, MSG, sizeof(MSG)) != 0) {
		fprintf(stderr, "hello_write: data mismatch\n");
		return 1;
	}
	printf("hello_write: QP %u wrote \"%s\" into QP %u's buffer (imm 0x%x)\n",
	       mrc_qp_num(qa), dst, mrc_qp_num(qb), IMM);
	mrc_destroy_qp(qa);
	mrc_destroy_qp(qb);
	mrc_destroy_cq(cq);
	mrc_dereg_mr(mr);
	mrc_free_buf(s, buf);
	mrc_dealloc_pd(pd);
	return mrc_close(s) == 0 ? 0 : 1;
}
