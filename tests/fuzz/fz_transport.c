/* SPDX-License-Identifier: MIT
 * The transport fuzz interpreter shared by fuzz_rc and fuzz_mrt: the input is a program of
 * operations against a live victim (live_qp.h): raw frames, structured headers (built into
 * real frames, so they pass the ICRC), releases of held legitimate packets, timers and app
 * actions. After every operation the queue invariants are checked; at the end B must settle,
 * complete every WR exactly once and have written nothing outside its writable regions.
 *
 * Input layout: byte 0 = configuration (MTU, rd_atomic depth, entropies), then operations,
 * each an opcode byte followed by its arguments; a short input reads zeros.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fz_transport.h"
#include "live_qp.h"

#define MAX_OPS 512

struct rd {
	const uint8_t *p;
	size_t n;
};

static uint8_t u8(struct rd *r)
{
	if (r->n == 0)
		return 0;
	r->n--;
	return *r->p++;
}

static uint16_t u16(struct rd *r)
{
	return (uint16_t)(u8(r) | u8(r) << 8);
}

static uint32_t u32(struct rd *r)
{
	return (uint32_t)u16(r) | (uint32_t)u16(r) << 16;
}

static uint64_t u64(struct rd *r)
{
	return (uint64_t)u32(r) | (uint64_t)u32(r) << 32;
}

enum fz_op { OP_RAW, OP_HDR, OP_TX, OP_PEER, OP_TIMER, OP_APP, OP_NUM };

static const uint8_t rc_ops[] = {
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b,
	0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x16, 0x17, 0x81,
};

static void die(const char *why)
{
	fprintf(stderr, "INVARIANT VIOLATED: %s\n", why);
	abort();
}

static uint32_t psn_pick(struct live *l, struct rd *r)
{
	uint8_t sel = u8(r);
	int8_t delta = (int8_t)u8(r);
	uint32_t base;

	switch (sel & 3) {
	case 0:
		base = live_b_epsn(l);
		break;
	case 1:
		base = live_b_req_next(l);
		break;
	case 2:
		base = live_b_req_oldest(l);
		break;
	default:
		base = u32(r);
		break;
	}
	if (sel & 4) /* far ahead / far behind */
		base += (uint32_t)(int32_t)delta << 12;
	return (base + (uint32_t)(int32_t)delta) & MR_PSN_MASK;
}

static const enum live_region key_regions[] = { LR_RW, LR_RO, LR_RECV, LR_STALE, LR_SRC };

static void hdr_op(struct live *l, struct rd *r, bool metaroce)
{
	/* Up to the largest IB MTU plus one byte (paylen below): a payload one over the path's MTU
	 * must be refused by the transport, not overflow this buffer (it had 4096 bytes: ASan's
	 * global-buffer-overflow in CI, 2026-12-06, regressions/rc/payload-mtu-plus-one). */
	static uint8_t payload[4096 + 1];
	struct mr_roce_hdrs h;
	struct mr_path path = l->path_ab;
	uint8_t opsel = u8(r), keysel, vasel, dmode, fl, mode;
	enum live_region reg = LR_RW;
	uint32_t mtu = l->cfg.mtu, paylen;
	uint64_t base, va;

	memset(&h, 0, sizeof(h));
	if (opsel & 0x80) {
		h.opcode = u8(r);
	} else {
		h.opcode = rc_ops[opsel % sizeof(rc_ops)];
		if (metaroce != !!(opsel & 0x40) && h.opcode != MR_OP_CNP)
			h.opcode = mr_opcode_to_metaroce(h.opcode);
	}
	h.pkey = 0xffff;
	h.dqpn = mr_qp_num(l->b.qp);
	h.psn = psn_pick(l, r);
	keysel = u8(r);
	if (keysel % 6 < 5) {
		reg = key_regions[keysel % 6];
		h.reth.rkey = l->key[reg];
	} else {
		h.reth.rkey = u32(r);
	}
	base = (uint64_t)(uintptr_t)live_addr(l, reg, 0);
	vasel = u8(r);
	switch (vasel & 3) {
	case 0:
		va = base + u16(r) % l->reg_len[reg];
		break;
	case 1:
		va = base + l->reg_len[reg] - u8(r) % 64;
		break;
	case 2:
		va = u64(r);
		break;
	default:
		va = base + u16(r);
		break;
	}
	h.reth.va = va;
	dmode = u8(r);
	switch (dmode & 3) {
	case 0:
		h.reth.dlen = u16(r) % (4 * mtu + 1);
		break;
	case 1:
		h.reth.dlen = u32(r);
		break;
	case 2:
		h.reth.dlen = u8(r);
		break;
	default:
		h.reth.dlen = (uint32_t)(base + l->reg_len[reg] - va);
		break;
	}
	h.atmeth.va = va;
	h.atmeth.rkey = h.reth.rkey;
	h.atmeth.swap_add = u64(r);
	h.atmeth.cmp = u64(r);
	h.atmack = h.atmeth.swap_add;
	h.aeth.syndrome = u8(r);
	h.aeth.msn = u32(r) & MR_PSN_MASK;
	h.imm = u32(r);
	h.ieth_rkey = u32(r);
	fl = u8(r);
	h.ackreq = fl & 1;
	h.se = fl & 2;
	h.fecn = fl & 4;
	h.becn = fl & 8;
	if (fl & 0x10)
		path.tclass = 3; /* CE */
	if (fl & 0x20)
		h.pkey = u16(r);
	if (fl & 0x40)
		h.dqpn = u32(r) & MR_PSN_MASK;
	paylen = u16(r) % (mtu + 2);
	memset(payload, u8(r), paylen);
	/* MRETH */
	h.mreth.flags = u8(r) & MR_MRETH_FLAGS_MASK;
	h.mreth.path = u8(r);
	mode = u8(r);
	h.mreth.msg_seq = (mode & 0x80) ? u32(r) : (uint32_t)(mode & 0x7f);
	mode = u8(r);
	h.mreth.offset = (mode & 0x80) ? u32(r) : (uint32_t)(mode & 0x7f) * mtu;
	mode = u8(r);
	switch (mode & 3) {
	case 0:
		h.mreth.msg_len = h.mreth.offset + paylen;
		break;
	case 1:
		h.mreth.msg_len = h.reth.dlen;
		break;
	case 2:
		h.mreth.msg_len = u32(r);
		break;
	default:
		h.mreth.msg_len = h.mreth.offset + paylen + (mode >> 2) * mtu;
		break;
	}
	h.mreth.ts = u32(r);
	mode = u8(r);
	h.sack.base = (mode & 1) ? (live_b_req_oldest(l) + (uint32_t)(int32_t)(int8_t)u8(r)) &
					   MR_PSN_MASK
				 : u32(r) & MR_PSN_MASK;
	for (int i = 0; i < 16; i++)
		h.sack.bitmap[i] = (mode & 2) ? u8(r) : 0;
	h.sack.ce_count = u16(r);
	live_inject_on(l, &path, &h, payload, paylen);
}

static void raw_op(struct live *l, struct rd *r)
{
	static uint8_t frame[4200];
	uint8_t fl = u8(r);
	uint32_t len = u16(r) % sizeof(frame);
	struct mr_pkt pkt;

	for (uint32_t i = 0; i < len; i++)
		frame[i] = u8(r);
	if (mr_frame_parse(frame, len, fl & 8, &pkt) != MR_PARSE_OK)
		return;
	if (pkt.payload < frame || (size_t)(pkt.payload - frame) + pkt.paylen > len)
		die("mr_frame_parse: payload outside the frame");
	/* Captured frames carry other addresses: optionally aim them at the live QP. */
	if (fl & 1)
		memcpy(pkt.sgid, l->path_ab.sgid, 16);
	if (fl & 2)
		pkt.hdr.dqpn = mr_qp_num(l->b.qp);
	if (fl & 4)
		pkt.hdr.psn = psn_pick(l, r);
	live_rx_b(l, &pkt);
}

static void app_op(struct live *l, struct rd *r)
{
	static const enum mr_wr_opcode ops[] = {
		MR_WR_SEND, MR_WR_SEND_WITH_IMM, MR_WR_RDMA_WRITE, MR_WR_RDMA_WRITE_WITH_IMM,
		MR_WR_RDMA_READ, MR_WR_ATOMIC_CMP_AND_SWP, MR_WR_ATOMIC_FETCH_AND_ADD,
	};
	uint8_t sub = u8(r);

	switch (sub % 4) {
	case 0:
		live_post_recv(l, u8(r), u16(r));
		break;
	case 1: {
		enum mr_wr_opcode op = ops[u8(r) % 7];
		uint32_t len = u16(r);

		live_post_send(l, op, len, u16(r));
		break;
	}
	case 2:
		live_poll_b(l, NULL);
		break;
	default: {
		/* A (the legitimate peer) starts a request of its own; it is held. */
		struct mr_send_wr wr;
		uint32_t len = u16(r) % 8192, off = u16(r) % 8192;

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 0xfe;
		wr.opcode = ops[u8(r) % 7];
		wr.num_sge = 1;
		if (wr.opcode == MR_WR_ATOMIC_CMP_AND_SWP || wr.opcode == MR_WR_ATOMIC_FETCH_AND_ADD) {
			len = 8;
			off &= ~7u;
		}
		wr.sg_list[0].addr = (uint64_t)(uintptr_t)(l->a_buf + 0x2000);
		wr.sg_list[0].length = len;
		wr.sg_list[0].lkey = mr_memreg_lkey(l->a_mr);
		wr.rdma.remote_addr = (uint64_t)(uintptr_t)live_addr(l, LR_RW, off);
		wr.rdma.rkey = l->key[LR_RW];
		wr.atomic.remote_addr = wr.rdma.remote_addr;
		wr.atomic.rkey = wr.rdma.rkey;
		mr_post_send(l->a.qp, &wr);
		live_a_tx(l);
		break;
	}
	}
}

int fz_transport_run(const uint8_t *data, size_t size, enum mr_transport t)
{
	static const uint32_t mtus[] = { 256, 512, 1024, 2048, 4096 };
	struct rd r = { data, size };
	struct live_cfg cfg;
	struct live *l;
	uint8_t c = u8(&r);
	const char *why;

	memset(&cfg, 0, sizeof(cfg));
	cfg.transport = t;
	cfg.mtu = mtus[c % 5];
	cfg.max_rd_atomic = (uint8_t)(1 + (c >> 3) % 4);
	cfg.n_entropies = (uint16_t)(1 + (c >> 5));
	l = live_create(&cfg);
	if (l == NULL)
		die("live_create failed");
	for (unsigned int n = 0; n < MAX_OPS && r.n > 0; n++) {
		uint8_t op = u8(&r);

		switch (op % OP_NUM) {
		case OP_RAW:
			raw_op(l, &r);
			break;
		case OP_HDR:
			hdr_op(l, &r, t == MR_TRANSPORT_METAROCE);
			break;
		case OP_TX:
			op = u8(&r);
			live_b_tx(l, 1 + op % 32, op & 0x80, NULL, 0);
			break;
		case OP_PEER:
			op = u8(&r);
			live_held_deliver(l, op, (op & 0xc0) == 0x40, (op & 0xc0) == 0x80);
			break;
		case OP_TIMER:
			live_advance(l, 1ull << (u8(&r) % 28));
			break;
		default:
			app_op(l, &r);
			break;
		}
		if ((why = live_check_queues(l)) != NULL)
			die(why);
	}
	if (getenv("FZ_VERBOSE") != NULL) {
		struct mr_qp_stats st;
		struct mr_ctx_stats cs;

		mr_qp_get_stats(l->b.qp, &st);
		mr_ctx_get_stats(l->b.ctx, &cs);
		fprintf(stderr, "B: state %d rx %llu tx %llu dropped %llu dup %llu ooo %llu "
			"naks sent seq %llu inv %llu acc %llu rnr %llu; ctx unknown_qp %llu "
			"bad_src %llu; held %u posted %u\n", mr_qp_state(l->b.qp),
			(unsigned long long)st.rx_pkts, (unsigned long long)st.tx_pkts,
			(unsigned long long)st.dropped, (unsigned long long)st.duplicate_requests,
			(unsigned long long)st.out_of_sequence, (unsigned long long)st.seq_naks_sent,
			(unsigned long long)st.inv_req_naks_sent,
			(unsigned long long)st.rem_access_naks_sent,
			(unsigned long long)st.rnr_naks_sent, (unsigned long long)cs.rx_unknown_qp,
			(unsigned long long)cs.rx_bad_source, l->nheld_ab, l->nposted);
	}
	if ((why = live_finish(l)) != NULL)
		die(why);
	live_destroy(l);
	return 0;
}
