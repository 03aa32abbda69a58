/* SPDX-License-Identifier: MIT
 * srq_loop: shared receive queues through a real metaroced (one daemon, loopback). One sender
 * QP per receiver; two receiver QPs share one SRQ (IBA 10.2.9.1). Each sender sends MSGS
 * messages; the receives were posted to the SRQ with distinct buffers, so every completion
 * must name a posted wr_id exactly once, carry its receiving QP's number, and its buffer must
 * hold exactly the bytes that QP's peer sent in that message. Then destroying the SRQ while
 * QPs use it is refused, posting to a QP's own RQ is refused, and teardown works.
 *
 *   srq_loop --sock PATH [--transport rc|metaroce]
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <metaroce/metaroce.h>

#define MSGS 16
#define LEN 3000
#define NRX (2 * MSGS)

static void die(const char *what, int rc, struct mrc_session *s)
{
	fprintf(stderr, "srq_loop: FAIL: %s: %s (%s)\n", what, strerror(rc < 0 ? -rc : rc),
		s ? mrc_last_error(s) : "");
	exit(1);
}

static void to_rts(struct mrc_session *s, struct mrc_qp *qp, const struct mrc_port_attr *port,
		   uint32_t dqpn, bool metaroce)
{
	struct mrc_qp_attr a;
	uint32_t m = MRC_QP_STATE | MRC_QP_PATH | MRC_QP_PATH_MTU | MRC_QP_DEST_QPN |
		     MRC_QP_RQ_PSN | MRC_QP_MAX_DEST_RD_ATOMIC | MRC_QP_MIN_RNR_TIMER;
	int rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = MR_QPS_INIT;
	rc = mrc_modify_qp(qp, &a, MRC_QP_STATE | MRC_QP_PKEY_INDEX | MRC_QP_ACCESS_FLAGS);
	if (rc < 0)
		die("INIT", rc, s);
	a.qp_state = MR_QPS_RTR;
	memcpy(a.path.dgid, port->gid[1], 16); /* our own IPv4-mapped GID: loopback */
	a.path_mtu = port->active_mtu;
	a.dest_qp_num = dqpn;
	a.rq_psn = 1000 + dqpn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	if (metaroce) {
		a.transport = MRC_TRANSPORT_METAROCE;
		a.n_entropies = 8;
		m |= MRC_QP_TRANSPORT;
	}
	rc = mrc_modify_qp(qp, &a, m);
	if (rc < 0)
		die("RTR", rc, s);
	a.qp_state = MR_QPS_RTS;
	a.sq_psn = 1000 + mrc_qp_num(qp);
	a.timeout = 18;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	rc = mrc_modify_qp(qp, &a, MRC_QP_STATE | MRC_QP_SQ_PSN | MRC_QP_TIMEOUT |
			   MRC_QP_RETRY_CNT | MRC_QP_RNR_RETRY | MRC_QP_MAX_QP_RD_ATOMIC);
	if (rc < 0)
		die("RTS", rc, s);
}

static uint8_t pat(int q, int m, int i)
{
	return (uint8_t)(q * 131 + m * 17 + i * 7 + 1);
}

int main(int argc, char **argv)
{
	const char *sock = NULL;
	bool metaroce = false;
	struct mrc_session *s;
	struct mrc_port_attr port;
	struct mrc_pd *pd;
	struct mrc_cq *scq, *rcq;
	struct mrc_srq *srq;
	struct mrc_qp *tx[2], *rx[2];
	struct mrc_mr *mr;
	struct mrc_qp_init_attr ia;
	struct mr_recv_wr rwr;
	struct mr_send_wr swr;
	uint8_t *buf, *src, *dst;
	int seen[NRX] = {0}, per_qp[2] = {0}, got = 0, sent = 0, rc, c;
	struct timespec t0, t1;

	while ((c = getopt_long(argc, argv, "s:t:", (const struct option[]){
			{"sock", required_argument, NULL, 's'},
			{"transport", required_argument, NULL, 't'}, {0}}, NULL)) != -1) {
		if (c == 's')
			sock = optarg;
		else if (c == 't')
			metaroce = strcmp(optarg, "metaroce") == 0;
		else
			return 2;
	}
	s = mrc_open(sock);
	if (s == NULL)
		die("mrc_open", errno, NULL);
	if ((rc = mrc_query_port(s, &port)) < 0)
		die("query_port", rc, s);
	pd = mrc_alloc_pd(s);
	scq = mrc_create_cq(s, 256);
	rcq = mrc_create_cq(s, 256);
	buf = mrc_alloc_buf(s, (size_t)(2 * MSGS + NRX) * LEN);
	if (pd == NULL || scq == NULL || rcq == NULL || buf == NULL)
		die("setup", errno, s);
	src = buf;
	dst = buf + (size_t)2 * MSGS * LEN;
	mr = mrc_reg_mr(pd, buf, (size_t)(2 * MSGS + NRX) * LEN, MR_ACCESS_LOCAL_WRITE);
	srq = mrc_create_srq(pd, NRX, 1);
	if (mr == NULL || srq == NULL)
		die("mr/srq", errno, s);
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = MRC_QPT_RC;
	ia.send_cq = scq;
	ia.recv_cq = rcq;
	ia.max_send_wr = MSGS;
	ia.max_recv_wr = 1;
	ia.max_send_sge = ia.max_recv_sge = 1;
	for (int q = 0; q < 2; q++) {
		tx[q] = mrc_create_qp(pd, &ia);
		if (tx[q] == NULL)
			die("create tx qp", errno, s);
	}
	ia.srq = srq;
	for (int q = 0; q < 2; q++) {
		rx[q] = mrc_create_qp(pd, &ia);
		if (rx[q] == NULL)
			die("create srq qp", errno, s);
	}
	for (int q = 0; q < 2; q++) {
		to_rts(s, tx[q], &port, mrc_qp_num(rx[q]), metaroce);
		to_rts(s, rx[q], &port, mrc_qp_num(tx[q]), metaroce);
	}
	memset(&rwr, 0, sizeof(rwr));
	rwr.num_sge = 1;
	rwr.sg_list[0].length = LEN;
	rwr.sg_list[0].lkey = mrc_mr_lkey(mr);
	if (mrc_post_recv(rx[0], &rwr) != -EINVAL)
		die("mrc_post_recv on an SRQ QP was accepted", 0, s);
	memset(dst, 0, (size_t)NRX * LEN);
	for (int i = 0; i < NRX; i++) {
		rwr.wr_id = (uint64_t)i;
		rwr.sg_list[0].addr = (uint64_t)(uintptr_t)(dst + (size_t)i * LEN);
		if ((rc = mrc_post_srq_recv(srq, &rwr)) < 0)
			die("post_srq_recv", rc, s);
	}
	memset(&swr, 0, sizeof(swr));
	swr.opcode = MR_WR_SEND;
	swr.send_flags = MR_SEND_SIGNALED;
	swr.num_sge = 1;
	swr.sg_list[0].length = LEN;
	swr.sg_list[0].lkey = mrc_mr_lkey(mr);
	for (int m = 0; m < MSGS; m++) {
		for (int q = 0; q < 2; q++) {
			uint8_t *p = src + (size_t)(q * MSGS + m) * LEN;

			for (int i = 0; i < LEN; i++)
				p[i] = pat(q, m, i);
			swr.wr_id = (uint64_t)(q * MSGS + m);
			swr.sg_list[0].addr = (uint64_t)(uintptr_t)p;
			if ((rc = mrc_post_send(tx[q], &swr)) < 0)
				die("post_send", rc, s);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (got < NRX || sent < NRX) {
		struct mr_wc wc[16];
		int n = mrc_poll_cq(rcq, 16, wc);

		for (int k = 0; k < n; k++) {
			int q = wc[k].qp_num == mrc_qp_num(rx[0]) ? 0 :
				wc[k].qp_num == mrc_qp_num(rx[1]) ? 1 : -1;
			uint64_t id = wc[k].wr_id;

			if (wc[k].status != MR_WC_SUCCESS || q < 0 || id >= NRX || seen[id]++ ||
			    wc[k].byte_len != LEN)
				die("bad receive completion", -EPROTO, s);
			/* the m-th message a QP received is its peer's m-th send (RC order) */
			for (int i = 0; i < LEN; i++)
				if (dst[id * LEN + (size_t)i] != pat(q, per_qp[q], i))
					die("received bytes differ", -EIO, s);
			per_qp[q]++;
			got++;
		}
		n = mrc_poll_cq(scq, 16, wc);
		for (int k = 0; k < n; k++) {
			if (wc[k].status != MR_WC_SUCCESS)
				die("send failed", -EIO, s);
			sent++;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (t1.tv_sec - t0.tv_sec > 60)
			die("timeout waiting for completions", -ETIMEDOUT, s);
	}
	if (per_qp[0] != MSGS || per_qp[1] != MSGS)
		die("messages per QP", -EPROTO, s);
	if (mrc_destroy_srq(srq) != -EBUSY)
		die("SRQ destroyed while QPs use it", 0, s);
	for (int q = 0; q < 2; q++)
		if (mrc_destroy_qp(rx[q]) < 0 || mrc_destroy_qp(tx[q]) < 0)
			die("destroy qp", -EIO, s);
	if ((rc = mrc_destroy_srq(srq)) < 0)
		die("destroy srq", rc, s);
	printf("srq_loop: PASS: %d messages of %d B over 2 QPs on one SRQ (%s), every byte verified\n",
	       NRX, LEN, metaroce ? "MetaRoCE" : "RC");
	mrc_close(s);
	return 0;
}
