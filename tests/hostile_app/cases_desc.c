/* SPDX-License-Identifier: MIT
 * Hostile descriptors written straight into the rings: unknown opcodes and flags, SGE counts
 * beyond the entry, SGE lengths and addresses that overflow 32 or 64 bits, messages longer than
 * 2^31 (IBA 9.7.1 / C9-xx: RC messages are at most 2^31 bytes), inline misuse, remote addresses
 * that wrap. Each WR must complete in error with its own wr_id, and nothing may be written.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "hostile.h"

#define BUF_LEN (1u << 20)
#define FILL_A 0x33
#define FILL_B 0x44
#define BIG_MR (256u << 20)

static bool untouched(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

static void base_write(struct mrc_sqe *e, const struct hside *a, const struct hside *b,
		       uint64_t wr_id)
{
	e->wr_id = wr_id;
	e->opcode = MR_WR_RDMA_WRITE;
	e->send_flags = MR_SEND_SIGNALED;
	e->num_sge = 1;
	e->u.sge[0].addr = (uint64_t)(uintptr_t)a->buf;
	e->u.sge[0].length = 4096;
	e->u.sge[0].lkey = mrc_mr_lkey(a->mr);
	e->rkey = mrc_mr_rkey(b->mr);
	e->remote_addr = (uint64_t)(uintptr_t)b->buf;
}

/* Posts one forged entry and expects exactly one error completion for it. */
static void expect_error(struct hside *a, const char *what)
{
	struct mr_wc wc[2];
	uint64_t id = a->qp->sq_prod | 0xbad0000000ull;
	struct mrc_sqe *e = mrc_ring_entry(a->qp->sq, a->qp->sq_prod, a->qp->sq_size - 1,
					   sizeof(*e));
	int n;

	e->wr_id = id;
	hsq_publish(a->qp, 1);
	n = hpoll(a->cq, wc, 1, g_opt->timeout_s * 1000);
	if (n != 1) {
		hfail("%s: no completion for the forged WR", what);
		return;
	}
	if (wc[0].wr_id != id || wc[0].status == MR_WC_SUCCESS)
		hfail("%s: completion wr_id 0x%" PRIx64 " (want 0x%" PRIx64 ") status %d (want an "
		      "error)", what, wc[0].wr_id, id, (int)wc[0].status);
	else
		hok("%s: error completion, status %d vendor_err %u", what, (int)wc[0].status,
		    wc[0].vendor_err);
}

static void pair_open(struct hside *a, struct hside *b)
{
	hside_open(a, 0, BUF_LEN, 64, 64, 256, FILL_A);
	hside_open(b, 1, BUF_LEN, 64, 64, 256, FILL_B);
	hpair_connect(a, b, 16, 7);
}

void case_sqe_bad_fields(void)
{
	struct hside a, b;
	struct mrc_sqe *e;
	struct mr_wc wc;

	pair_open(&a, &b);
	e = hsqe_next(a.qp); base_write(e, &a, &b, 0); e->opcode = 7;
	expect_error(&a, "opcode 7 (unassigned)");
	e = hsqe_next(a.qp); base_write(e, &a, &b, 0); e->opcode = 0xffffffffu;
	expect_error(&a, "opcode 0xffffffff");
	e = hsqe_next(a.qp); base_write(e, &a, &b, 0); e->send_flags = 0x10 | MR_SEND_SIGNALED;
	expect_error(&a, "unknown send flag 0x10");
	e = hsqe_next(a.qp); base_write(e, &a, &b, 0); e->num_sge = MRC_SQE_MAX_SGE + 1;
	expect_error(&a, "num_sge 17 (beyond the entry)");
	e = hsqe_next(a.qp); base_write(e, &a, &b, 0); e->num_sge = 0xffffffffu;
	expect_error(&a, "num_sge 0xffffffff");
	e = hsqe_next(a.qp); base_write(e, &a, &b, 0);
	e->send_flags |= MR_SEND_INLINE; e->num_sge = 0; e->inline_len = MRC_SQE_INLINE_MAX + 1;
	expect_error(&a, "inline_len 449 (beyond the entry)");
	e = hsqe_next(a.qp); base_write(e, &a, &b, 0);
	e->send_flags |= MR_SEND_INLINE; e->num_sge = 0; e->inline_len = 65;
	expect_error(&a, "inline_len 65 (QP max_inline_data 64)");
	e = hsqe_next(a.qp); base_write(e, &a, &b, 0);
	e->opcode = MR_WR_RDMA_READ; e->send_flags |= MR_SEND_INLINE; e->inline_len = 8;
	expect_error(&a, "inline RDMA READ");
	e = hsqe_next(a.qp); base_write(e, &a, &b, 0);
	e->opcode = MR_WR_ATOMIC_FETCH_AND_ADD; e->u.sge[0].length = 4;
	expect_error(&a, "atomic with a 4-byte SGE");
	e = hsqe_next(a.qp); base_write(e, &a, &b, 0);
	e->opcode = MR_WR_ATOMIC_CMP_AND_SWP; e->u.sge[0].length = 8; e->remote_addr += 3;
	expect_error(&a, "atomic at a misaligned remote address");
	HCHECK(untouched(b.buf, BUF_LEN, FILL_B), "bad fields: peer memory was written");
	/* The QP still serves well-formed work. */
	e = hsqe_next(a.qp); base_write(e, &a, &b, 77);
	hsq_publish(a.qp, 1);
	HCHECK(hpoll(a.cq, &wc, 1, g_opt->timeout_s * 1000) == 1 && wc.wr_id == 77 &&
	       wc.status == MR_WC_SUCCESS, "bad fields: a valid WRITE afterwards failed");
	hcheck_daemons("bad descriptor fields");
	hside_close(&a);
	hside_close(&b);
}

void case_sge_overflow(void)
{
	struct hside a, b;
	struct mrc_sqe *e;
	struct mrc_rqe *r;
	struct mrc_mr *big;
	struct mr_wc wc[4];
	uint8_t *bigbuf;
	uint64_t base;
	int n;

	pair_open(&a, &b);
	base = (uint64_t)(uintptr_t)a.buf;
	e = hsqe_next(a.qp); base_write(e, &a, &b, 0); e->u.sge[0].length = 0xffffffffu;
	expect_error(&a, "SGE length 0xffffffff");
	e = hsqe_next(a.qp); base_write(e, &a, &b, 0);
	e->u.sge[0].addr = base + BUF_LEN - 16; e->u.sge[0].length = 32;
	expect_error(&a, "SGE running 16 bytes past its MR");
	e = hsqe_next(a.qp); base_write(e, &a, &b, 0);
	e->u.sge[0].addr = 0xfffffffffffffff0ull; e->u.sge[0].length = 0x20;
	expect_error(&a, "SGE addr+len wrapping 2^64");
	e = hsqe_next(a.qp); base_write(e, &a, &b, 0);
	e->u.sge[0].addr = base - 1;
	expect_error(&a, "SGE starting one byte before its MR");
	e = hsqe_next(a.qp); base_write(e, &a, &b, 0);
	e->u.sge[0].addr = base + (1ull << 63);
	expect_error(&a, "SGE address + 2^63");
	/* A message whose SGE lengths sum to 2^32 (0 in 32 bits) and one of 2.25 GiB: both beyond
	 * the 2^31 RC message limit. Sparse memory: nothing is touched unless it is sent. */
	bigbuf = mrc_alloc_buf(a.s, BIG_MR);
	big = bigbuf != NULL ? mrc_reg_mr(a.pd, bigbuf, BIG_MR, MR_ACCESS_LOCAL_WRITE) : NULL;
	HCHECK(big != NULL, "sge overflow: 256 MiB MR: %s", mrc_last_error(a.s));
	if (big != NULL) {
		struct mr_recv_wr rw = { .wr_id = 0x5151, .num_sge = 1 };

		rw.sg_list[0] = (struct mr_sge){ (uint64_t)(uintptr_t)b.buf, 64, mrc_mr_lkey(b.mr) };
		HCHECK(mrc_post_recv(b.qp, &rw) == 0, "sge overflow: peer post_recv");
		for (uint32_t nsge = 16; nsge >= 9; nsge -= 7) {
			char what[80];

			e = hsqe_next(a.qp);
			e->opcode = MR_WR_SEND;
			e->send_flags = MR_SEND_SIGNALED;
			e->num_sge = nsge;
			for (uint32_t i = 0; i < nsge; i++)
				e->u.sge[i] = (struct mr_sge){ (uint64_t)(uintptr_t)bigbuf, BIG_MR,
							       mrc_mr_lkey(big) };
			snprintf(what, sizeof(what), "SEND of %u x 256 MiB SGEs (%s)", nsge,
				 nsge == 16 ? "2^32: 0 in 32 bits" : "2.25 GiB > 2^31");
			expect_error(&a, what);
		}
		n = hpoll_quiet(b.cq, wc, 4, 300);
		HCHECK(n == 0, "sge overflow: the peer's receive completed (%d, byte_len %u) for an "
		       "oversized SEND", n, n > 0 ? wc[0].byte_len : 0);
	}
	/* Receive side: the same on an RQE. */
	r = hrqe_next(b.qp);
	r->wr_id = 0x5252;
	r->num_sge = 1;
	r->sge[0] = (struct mr_sge){ (uint64_t)(uintptr_t)b.buf + 64, 0xffffffffu,
				     mrc_mr_lkey(b.mr) };
	hrq_publish(b.qp, 1);
	r = hrqe_next(b.qp);
	r->wr_id = 0x5353;
	r->num_sge = 1;
	r->sge[0] = (struct mr_sge){ 0xffffffffffffff00ull, 0x200, mrc_mr_lkey(b.mr) };
	hrq_publish(b.qp, 1);
	n = hpoll(b.cq, wc, 2, g_opt->timeout_s * 1000);
	HCHECK(n == 2 && wc[0].wr_id == 0x5252 && wc[0].status != MR_WC_SUCCESS &&
	       wc[1].wr_id == 0x5353 && wc[1].status != MR_WC_SUCCESS,
	       "forged RQEs (length 2^32-1, address wrapping): %d completions, want 2 errors", n);
	HCHECK(untouched(b.buf + 64, BUF_LEN - 64, FILL_B), "sge overflow: peer memory written");
	hcheck_daemons("sge overflow");
	hside_close(&a);
	hside_close(&b);
}

/* Remote addresses outside the peer's MR (wrapping 2^64, crossing its end): the peer's
 * responder must NAK (IBA 9.7.4.1.5, C9-88 remote access error), the requester completes in
 * error, and the peer's memory is untouched. One fresh pair each: the NAK moves the QP to ERR. */
void case_remote_wrap(void)
{
	static const struct {
		uint32_t opcode;
		int addr_kind;   /* 0: 2^64 - 4096, 1: end - 100, 2: end (atomic) */
		uint32_t len;
		const char *what;
	} t[] = {
		{ MR_WR_RDMA_WRITE, 0, 8192, "WRITE at 2^64-4096 (wraps)" },
		{ MR_WR_RDMA_READ, 0, 8192, "READ at 2^64-4096 (wraps)" },
		{ MR_WR_RDMA_WRITE, 1, 4096, "WRITE crossing the peer MR's end" },
		{ MR_WR_RDMA_READ, 1, 4096, "READ crossing the peer MR's end" },
		{ MR_WR_ATOMIC_FETCH_AND_ADD, 2, 8, "FETCH_ADD at the peer MR's end" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct hside a, b;
		struct mrc_sqe *e;
		struct mr_wc wc;
		uint64_t bend;

		pair_open(&a, &b);
		bend = (uint64_t)(uintptr_t)b.buf + BUF_LEN;
		e = hsqe_next(a.qp);
		base_write(e, &a, &b, 0x600 + i);
		e->opcode = t[i].opcode;
		e->u.sge[0].length = t[i].len;
		e->remote_addr = t[i].addr_kind == 0 ? 0xfffffffffffff000ull :
				 t[i].addr_kind == 1 ? bend - 100 : bend;
		hsq_publish(a.qp, 1);
		if (hpoll(a.cq, &wc, 1, g_opt->timeout_s * 1000) != 1)
			hfail("%s: no completion", t[i].what);
		else if (wc.status == MR_WC_SUCCESS)
			hfail("%s: completed successfully", t[i].what);
		else
			hok("%s: error completion status %d", t[i].what, (int)wc.status);
		HCHECK(untouched(b.buf, BUF_LEN, FILL_B), "%s: peer memory written", t[i].what);
		HCHECK(t[i].opcode == MR_WR_RDMA_WRITE || untouched(a.buf, BUF_LEN, FILL_A),
		       "%s: local memory written by a rejected response", t[i].what);
		hside_close(&a);
		hside_close(&b);
	}
	hcheck_daemons("remote address wrap");
}
