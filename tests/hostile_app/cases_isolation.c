/* SPDX-License-Identifier: MIT
 * Another session's keys and handles, and objects used after they were destroyed.
 * shm README: handles are per session (foreign or stale: -ENOENT); SGE lkeys must name an MR
 * of the same session and PD (else LOC_PROT_ERR). IBA 10.6.3 / C10-10 (L_Key of the QP's PD),
 * 10.6.7 (an R_Key is invalid once its region is deregistered: the peer gets a NAK).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hostile.h"

#define BUF_LEN (256u << 10)

static bool untouched(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

static int post_one(struct hside *a, uint32_t opcode, uint64_t laddr, uint32_t lkey,
		    uint64_t raddr, uint32_t rkey, uint64_t wr_id, struct mr_wc *wc)
{
	struct mrc_sqe *e = hsqe_next(a->qp);

	e->wr_id = wr_id;
	e->opcode = opcode;
	e->send_flags = MR_SEND_SIGNALED;
	e->num_sge = 1;
	e->u.sge[0] = (struct mr_sge){ laddr, 4096, lkey };
	e->rkey = rkey;
	e->remote_addr = raddr;
	hsq_publish(a->qp, 1);
	if (hpoll(a->cq, wc, 1, g_opt->timeout_s * 1000) != 1)
		return -ETIMEDOUT;
	return wc->wr_id == wr_id ? 0 : -EPROTO;
}

static void expect_wc_error(int rc, const struct mr_wc *wc, const char *what)
{
	if (rc < 0)
		hfail("%s: no completion (%s)", what, strerror(-rc));
	else if (wc->status == MR_WC_SUCCESS)
		hfail("%s: completed successfully", what);
	else
		hok("%s: error completion status %d", what, (int)wc->status);
}

void case_foreign_keys(void)
{
	struct hside a, b, x2, v;
	struct mr_wc wc;
	int rc;

	hside_open(&a, 0, BUF_LEN, 16, 16, 64, 0x51);
	hside_open(&b, 1, BUF_LEN, 16, 16, 64, 0x52);
	hside_open(&x2, 0, BUF_LEN, 16, 16, 64, 0x53);  /* another app on daemon A */
	hside_open(&v, 1, BUF_LEN, 16, 16, 64, 0x54);   /* another app on daemon B */
	hpair_connect(&a, &b, 16, 7);
	rc = post_one(&a, MR_WR_RDMA_WRITE, (uint64_t)(uintptr_t)x2.buf, mrc_mr_lkey(x2.mr),
		      (uint64_t)(uintptr_t)b.buf, mrc_mr_rkey(b.mr), 1, &wc);
	expect_wc_error(rc, &wc, "SGE with another session's lkey and address");
	rc = post_one(&a, MR_WR_RDMA_READ, (uint64_t)(uintptr_t)x2.buf, mrc_mr_lkey(x2.mr),
		      (uint64_t)(uintptr_t)b.buf, mrc_mr_rkey(b.mr), 2, &wc);
	expect_wc_error(rc, &wc, "READ into another session's memory (its lkey)");
	rc = post_one(&a, MR_WR_RDMA_WRITE, (uint64_t)(uintptr_t)x2.buf, mrc_mr_lkey(a.mr),
		      (uint64_t)(uintptr_t)b.buf, mrc_mr_rkey(b.mr), 3, &wc);
	expect_wc_error(rc, &wc, "own lkey, another session's address");
	HCHECK(untouched(x2.buf, BUF_LEN, 0x53), "the other session's memory on A changed");
	HCHECK(untouched(b.buf, BUF_LEN, 0x52), "peer memory written by a rejected WR");
	/* The other app's rkey through our own connection: its MR is in another PD. */
	rc = post_one(&a, MR_WR_RDMA_WRITE, (uint64_t)(uintptr_t)a.buf, mrc_mr_lkey(a.mr),
		      (uint64_t)(uintptr_t)v.buf, mrc_mr_rkey(v.mr), 4, &wc);
	expect_wc_error(rc, &wc, "WRITE with another app's rkey on the peer daemon");
	HCHECK(untouched(v.buf, BUF_LEN, 0x54), "another app's memory on B was written through "
	       "its rkey");
	hside_close(&a);
	hside_close(&b);
	hside_open(&a, 0, BUF_LEN, 16, 16, 64, 0x51);
	hside_open(&b, 1, BUF_LEN, 16, 16, 64, 0x52);
	hpair_connect(&a, &b, 16, 7);
	rc = post_one(&a, MR_WR_RDMA_READ, (uint64_t)(uintptr_t)a.buf, mrc_mr_lkey(a.mr),
		      (uint64_t)(uintptr_t)v.buf, mrc_mr_rkey(v.mr), 5, &wc);
	expect_wc_error(rc, &wc, "READ with another app's rkey on the peer daemon");
	HCHECK(untouched(a.buf, BUF_LEN, 0x51), "another app's bytes reached us through a READ "
	       "with its rkey");
	hcheck_daemons("foreign keys");
	hside_close(&a);
	hside_close(&b);
	hside_close(&x2);
	hside_close(&v);
}

static int raw_modify(struct mrc_session *s, uint32_t qp_handle)
{
	struct mrc_ctl_req req;
	struct mrc_ctl_resp resp;

	memset(&req, 0, sizeof(req));
	req.u.modify_qp.qp = qp_handle;
	req.u.modify_qp.mask = MRC_QP_STATE;
	req.u.modify_qp.attr.qp_state = MR_QPS_ERR;
	return mrc_rpc(s, MRC_CTL_MODIFY_QP, &req, -1, &resp, NULL);
}

static int raw_reg(struct mrc_session *s, uint32_t pd, uint32_t buf)
{
	struct mrc_ctl_req req;
	struct mrc_ctl_resp resp;

	memset(&req, 0, sizeof(req));
	req.u.reg_mr.pd = pd;
	req.u.reg_mr.buf = buf;
	req.u.reg_mr.len = 4096;
	req.u.reg_mr.access = MR_ACCESS_LOCAL_WRITE;
	return mrc_rpc(s, MRC_CTL_REG_MR, &req, -1, &resp, NULL);
}

static int raw_create_qp(struct mrc_session *s, uint32_t pd, uint32_t cq)
{
	struct mrc_ctl_req req;
	struct mrc_ctl_resp resp;
	int fd = -1, rc;

	memset(&req, 0, sizeof(req));
	req.u.create_qp.pd = pd;
	req.u.create_qp.send_cq = req.u.create_qp.recv_cq = cq;
	req.u.create_qp.qp_type = MRC_QPT_RC;
	req.u.create_qp.max_send_wr = req.u.create_qp.max_recv_wr = 4;
	req.u.create_qp.max_send_sge = req.u.create_qp.max_recv_sge = 1;
	rc = mrc_rpc(s, MRC_CTL_CREATE_QP, &req, -1, &resp, &fd);
	if (fd >= 0)
		close(fd);
	return rc;
}

void case_foreign_handles(void)
{
	struct hside x, y;
	struct mrc_qp_attr qa;
	uint32_t yh[6];
	static const char *const yn[6] = { "pd", "buf", "mr", "cq", "qp", "junk" };
	unsigned int bad = 0;

	hside_open(&x, 0, BUF_LEN, 16, 16, 64, 0x61);
	hside_open(&y, 0, BUF_LEN, 16, 16, 64, 0x62);
	yh[0] = y.pd->o.handle;
	yh[1] = y.mr->buf->o.handle;
	yh[2] = y.mr->o.handle;
	yh[3] = y.cq->o.handle;
	yh[4] = y.qp->o.handle;
	yh[5] = 0;
	for (int i = 0; i < 6; i++) {
		static const uint16_t ops[] = { MRC_CTL_DEREG_MR, MRC_CTL_DESTROY_QP,
						MRC_CTL_QUERY_QP, MRC_CTL_DESTROY_CQ,
						MRC_CTL_DEALLOC_PD, MRC_CTL_UNMAP_BUF };

		for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
			int rc = hctl_obj(x.s, ops[k], yh[i]);

			if (rc != -ENOENT) {
				hfail("%s with the other session's %s handle 0x%x: %d, want -ENOENT",
				      mrc_op_name(ops[k]), yn[i], yh[i], rc);
				bad++;
			}
		}
	}
	HCHECK(raw_modify(x.s, yh[4]) == -ENOENT, "modify_qp with a foreign QP handle");
	HCHECK(raw_reg(x.s, yh[0], yh[1]) == -ENOENT, "reg_mr on a foreign PD and buffer");
	HCHECK(raw_reg(x.s, x.pd->o.handle, yh[1]) == -ENOENT, "reg_mr on a foreign buffer");
	HCHECK(raw_create_qp(x.s, yh[0], yh[3]) == -ENOENT, "create_qp with a foreign PD and CQ");
	HCHECK(raw_create_qp(x.s, x.pd->o.handle, yh[3]) == -ENOENT, "create_qp, foreign CQ");
	/* Made-up handles: index 0 and 0xffff, generations all over (none names our QP here:
	 * its generation is the session's salt, not one of these). */
	for (uint32_t i = 0, h = 0xffff0000u; i < 64; i++, h = h * 2654435761u + 0x10001u)
		if (h != x.qp->o.handle && hctl_obj(x.s, MRC_CTL_QUERY_QP, h) != -ENOENT) {
			hfail("query_qp with made-up handle 0x%x did not fail -ENOENT", h);
			bad++;
			break;
		}
	if (bad == 0)
		hok("every foreign or made-up handle: -ENOENT (%d ops x 6 handles)", 6);
	/* The other session's objects are intact. */
	HCHECK(mrc_query_qp(y.qp, &qa) == 0 && qa.qp_state == MR_QPS_INIT,
	       "the other session's QP was changed (%s)", mrc_last_error(y.s));
	HCHECK(mrc_reg_mr(y.pd, y.buf, 4096, MR_ACCESS_LOCAL_WRITE) != NULL,
	       "the other session's PD/buffer no longer usable");
	hcheck_daemons("foreign handles");
	hside_close(&x);
	hside_close(&y);
}

/* Destroy twice, use after destroy, destroy what is still in use. Raw requests (the library
 * frees its own struct on success, so a second call through it would be our own bug). */
void case_double_destroy(void)
{
	struct hside a, b;
	struct mrc_qp_init_attr init;
	struct mrc_qp *q2;
	struct mrc_qp_attr qa;
	struct mr_wc wc;
	uint32_t qh, mh, lkey, rkey;
	int rc, n;

	hside_open(&a, 0, BUF_LEN, 16, 16, 64, 0x71);
	hside_open(&b, 1, BUF_LEN, 16, 16, 64, 0x72);
	hpair_connect(&a, &b, 16, 7);
	/* In use: CQ under a QP, PD under MRs/QPs, buffer under an MR. */
	HCHECK(hctl_obj(a.s, MRC_CTL_DESTROY_CQ, a.cq->o.handle) == -EBUSY,
	       "destroy_cq under a live QP: want -EBUSY");
	HCHECK(hctl_obj(a.s, MRC_CTL_DEALLOC_PD, a.pd->o.handle) == -EBUSY,
	       "dealloc_pd under live MR/QP: want -EBUSY");
	HCHECK(hctl_obj(a.s, MRC_CTL_UNMAP_BUF, a.mr->buf->o.handle) == -EBUSY,
	       "unmap_buf under a live MR: want -EBUSY");
	/* Peer MR deregistered: its rkey is invalid (IBA 10.6.7), the WRITE is NAKed. */
	mh = b.mr->o.handle;
	rkey = mrc_mr_rkey(b.mr);
	HCHECK(hctl_obj(b.s, MRC_CTL_DEREG_MR, mh) == 0, "dereg_mr");
	HCHECK(hctl_obj(b.s, MRC_CTL_DEREG_MR, mh) == -ENOENT, "second dereg_mr: want -ENOENT");
	{
		struct mrc_sqe *e = hsqe_next(a.qp);

		e->wr_id = 0x700;
		e->opcode = MR_WR_RDMA_WRITE;
		e->send_flags = MR_SEND_SIGNALED;
		e->num_sge = 1;
		e->u.sge[0] = (struct mr_sge){ (uint64_t)(uintptr_t)a.buf, 4096, mrc_mr_lkey(a.mr) };
		e->rkey = rkey;
		e->remote_addr = (uint64_t)(uintptr_t)b.buf;
		hsq_publish(a.qp, 1);
		n = hpoll(a.cq, &wc, 1, g_opt->timeout_s * 1000);
		HCHECK(n == 1 && wc.status != MR_WC_SUCCESS, "WRITE to a deregistered rkey: %s",
		       n == 1 ? "completed successfully" : "no completion");
		HCHECK(untouched(b.buf, BUF_LEN, 0x72), "deregistered MR written by the peer");
	}
	/* Own MR deregistered: its lkey is gone. */
	mh = a.mr->o.handle;
	lkey = mrc_mr_lkey(a.mr);
	HCHECK(hctl_obj(a.s, MRC_CTL_DEREG_MR, mh) == 0, "dereg own mr");
	HCHECK(hctl_obj(a.s, MRC_CTL_DEREG_MR, mh) == -ENOENT, "second dereg own mr");
	/* The QP is in ERR now (after the NAK); destroy it twice and use it afterwards. */
	qh = a.qp->o.handle;
	HCHECK(hctl_obj(a.s, MRC_CTL_DESTROY_QP, qh) == 0, "destroy_qp");
	HCHECK(hctl_obj(a.s, MRC_CTL_DESTROY_QP, qh) == -ENOENT, "second destroy_qp: -ENOENT");
	HCHECK(hctl_obj(a.s, MRC_CTL_QUERY_QP, qh) == -ENOENT, "query of a destroyed QP");
	HCHECK(raw_modify(a.s, qh) == -ENOENT, "modify of a destroyed QP");
	/* Its ring is still mapped here: entries published now must never be read. */
	{
		struct mrc_sqe *e = hsqe_next(a.qp);

		e->wr_id = 0x701;
		e->opcode = MR_WR_SEND;
		e->send_flags = MR_SEND_SIGNALED;
		e->num_sge = 1;
		e->u.sge[0] = (struct mr_sge){ (uint64_t)(uintptr_t)a.buf, 64, lkey };
		hsq_publish(a.qp, 1);
		n = hpoll_quiet(a.cq, &wc, 1, 300);
		HCHECK(n == 0, "a destroyed QP's ring was still served (wr_id 0x%" PRIx64 ")",
		       wc.wr_id);
	}
	/* A new QP probably reuses the slot: the old handle must still not resolve. */
	memset(&init, 0, sizeof(init));
	init.qp_type = MRC_QPT_RC;
	init.send_cq = init.recv_cq = a.cq;
	init.max_send_wr = init.max_recv_wr = 4;
	init.max_send_sge = init.max_recv_sge = 1;
	q2 = mrc_create_qp(a.pd, &init);
	HCHECK(q2 != NULL, "create_qp after destroy: %s", mrc_last_error(a.s));
	if (q2 != NULL) {
		HCHECK(hctl_obj(a.s, MRC_CTL_QUERY_QP, qh) == -ENOENT,
		       "the destroyed QP's handle resolves again after slot reuse");
		HCHECK(mrc_query_qp(q2, &qa) == 0 && qa.qp_state == MR_QPS_RESET,
		       "the new QP is not a fresh one");
		rc = hctl_obj(a.s, MRC_CTL_DESTROY_QP, q2->o.handle);
		HCHECK(rc == 0, "destroy the new QP: %d", rc);
	}
	HCHECK(hctl_obj(a.s, MRC_CTL_DESTROY_CQ, a.cq->o.handle) == 0, "destroy_cq");
	HCHECK(hctl_obj(a.s, MRC_CTL_DESTROY_CQ, a.cq->o.handle) == -ENOENT, "second destroy_cq");
	HCHECK(hctl_obj(a.s, MRC_CTL_UNMAP_BUF, a.mr->buf->o.handle) == 0, "unmap_buf");
	HCHECK(hctl_obj(a.s, MRC_CTL_UNMAP_BUF, a.mr->buf->o.handle) == -ENOENT, "second unmap");
	HCHECK(hctl_obj(a.s, MRC_CTL_DEALLOC_PD, a.pd->o.handle) == 0, "dealloc_pd");
	HCHECK(hctl_obj(a.s, MRC_CTL_DEALLOC_PD, a.pd->o.handle) == -ENOENT, "second dealloc");
	hok("double destroy / use after destroy: -ENOENT, -EBUSY while in use, stale ring ignored");
	hcheck_daemons("double destroy");
	hside_close(&a);
	hside_close(&b);
}
