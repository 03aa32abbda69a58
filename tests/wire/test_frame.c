/* SPDX-License-Identifier: MIT
 * mr_frame_build / mr_frame_parse round trips for every opcode over IPv4 and IPv6, with and
 * without 802.1Q, payload sizes 0..4096; builder argument errors; hand-crafted malformed frames
 * rejected with their specific reason; 24-bit PSN helpers.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wire/icrc.h"
#include "wire/roce_hdr.h"
#include "wire/roce_opcode.h"
#include "wire/roce_pkt.h"

#define BUF_CAP 8192

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	/* xorshift64*: deterministic, so failures reproduce */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static void make_path(struct mr_path *p, bool ipv6, bool vlan)
{
	memset(p, 0, sizeof(*p));
	memcpy(p->smac, "\x52\x54\x00\x00\x00\x12", 6);
	memcpy(p->dmac, "\x52\x54\x00\x00\x00\x11", 6);
	p->vlan = vlan;
	p->vlan_tci = 0x6123; /* PCP 3, VID 0x123 */
	p->ipv6 = ipv6;
	if (ipv6) {
		for (int i = 0; i < 16; i++) {
			p->sgid[i] = (uint8_t)(0xfe + i);
			p->dgid[i] = (uint8_t)(0x20 + 3 * i);
		}
		p->flow_label = 0xabcde;
	} else {
		p->sgid[10] = p->sgid[11] = p->dgid[10] = p->dgid[11] = 0xff;
		memcpy(p->sgid + 12, "\xc6\x12\x00\x0c", 4);
		memcpy(p->dgid + 12, "\xc6\x12\x00\x0b", 4);
	}
	p->tclass = 26 << 2 | 1; /* DSCP 26, ECT(1) */
	p->ttl = 64;
	p->udp_sport = 0xc123;
}

static void random_hdrs(struct mr_roce_hdrs *h, uint8_t op, uint32_t paylen)
{
	memset(h, 0, sizeof(*h));
	h->opcode = op;
	h->se = rnd() & 1;
	h->mig = rnd() & 1;
	h->pkey = (uint16_t)rnd();
	h->fecn = rnd() & 1;
	h->becn = rnd() & 1;
	h->dqpn = (uint32_t)rnd() & MR_PSN_MASK;
	h->ackreq = rnd() & 1;
	h->psn = (uint32_t)rnd() & MR_PSN_MASK;
	h->reth.va = rnd();
	h->reth.rkey = (uint32_t)rnd();
	h->reth.dlen = (uint32_t)rnd();
	h->aeth.syndrome = (uint8_t)rnd();
	h->aeth.msn = (uint32_t)rnd() & 0xffffff;
	h->atmeth.va = rnd();
	h->atmeth.rkey = (uint32_t)rnd();
	h->atmeth.swap_add = rnd();
	h->atmeth.cmp = rnd();
	h->atmack = rnd();
	h->imm = (uint32_t)rnd();
	h->ieth_rkey = (uint32_t)rnd();
	h->deth.qkey = (uint32_t)rnd();
	h->deth.sqpn = (uint32_t)rnd() & 0xffffff;
	if (mr_opcode_base(op) == MR_OP_RC_WRITE_ONLY ||
	    mr_opcode_base(op) == MR_OP_RC_WRITE_ONLY_IMM)
		h->reth.dlen = paylen;
	/* MetaRoCE: any values that keep offset + paylen <= msg_len (the one MRETH rule) */
	h->mreth.ver = rnd() & 1; /* 0 means "current" to the builder */
	h->mreth.flags = (uint8_t)(rnd() & MR_MRETH_FLAGS_MASK);
	h->mreth.path = (uint8_t)rnd();
	h->mreth.msg_seq = (uint32_t)rnd();
	h->mreth.offset = (uint32_t)(rnd() % (0x100000000ull - paylen));
	h->mreth.msg_len = (uint32_t)(h->mreth.offset + paylen +
				      rnd() % (0x100000000ull - h->mreth.offset - paylen));
	h->mreth.ts = (uint32_t)rnd();
	h->sack.base = (uint32_t)rnd() & MR_PSN_MASK;
	for (int i = 0; i < 16; i++)
		h->sack.bitmap[i] = (uint8_t)rnd();
	h->sack.ce_count = (uint16_t)rnd();
}

/* Every header field the opcode carries decodes to what was built; absent ones are zero. */
static void assert_hdrs(const struct mr_roce_hdrs *in, const struct mr_roce_hdrs *out,
			uint32_t paylen)
{
	const struct mr_opcode_info *oi = mr_opcode_info(in->opcode);
	uint32_t m = oi->mask;

	assert_int_equal(out->opcode, in->opcode);
	assert_int_equal(out->se, in->se);
	assert_int_equal(out->mig, in->mig);
	assert_int_equal(out->padcnt, (4 - (paylen & 3)) & 3);
	assert_int_equal(out->tver, 0);
	assert_int_equal(out->pkey, in->pkey);
	assert_int_equal(out->fecn, in->fecn);
	assert_int_equal(out->becn, in->becn);
	assert_int_equal(out->dqpn, in->dqpn);
	assert_int_equal(out->ackreq, in->ackreq);
	assert_int_equal(out->psn, in->psn);
	assert_true(out->reth.va == ((m & MR_RETH_MASK) ? in->reth.va : 0));
	assert_int_equal(out->reth.rkey, (m & MR_RETH_MASK) ? in->reth.rkey : 0);
	assert_int_equal(out->reth.dlen, (m & MR_RETH_MASK) ? in->reth.dlen : 0);
	assert_int_equal(out->aeth.syndrome, (m & MR_AETH_MASK) ? in->aeth.syndrome : 0);
	assert_int_equal(out->aeth.msn, (m & MR_AETH_MASK) ? in->aeth.msn : 0);
	assert_true(out->atmeth.va == ((m & MR_ATMETH_MASK) ? in->atmeth.va : 0));
	assert_int_equal(out->atmeth.rkey, (m & MR_ATMETH_MASK) ? in->atmeth.rkey : 0);
	assert_true(out->atmeth.swap_add == ((m & MR_ATMETH_MASK) ? in->atmeth.swap_add : 0));
	assert_true(out->atmeth.cmp == ((m & MR_ATMETH_MASK) ? in->atmeth.cmp : 0));
	assert_true(out->atmack == ((m & MR_ATMACK_MASK) ? in->atmack : 0));
	assert_int_equal(out->imm, (m & MR_IMMDT_MASK) ? in->imm : 0);
	assert_int_equal(out->ieth_rkey, (m & MR_IETH_MASK) ? in->ieth_rkey : 0);
	assert_int_equal(out->deth.qkey, (m & MR_DETH_MASK) ? in->deth.qkey : 0);
	assert_int_equal(out->deth.sqpn, (m & MR_DETH_MASK) ? in->deth.sqpn : 0);
	assert_int_equal(out->mreth.ver, (m & MR_MRETH_MASK) ? MR_MRETH_VER : 0);
	assert_int_equal(out->mreth.flags, (m & MR_MRETH_MASK) ? in->mreth.flags : 0);
	assert_int_equal(out->mreth.path, (m & MR_MRETH_MASK) ? in->mreth.path : 0);
	assert_int_equal(out->mreth.msg_seq, (m & MR_MRETH_MASK) ? in->mreth.msg_seq : 0);
	assert_int_equal(out->mreth.offset, (m & MR_MRETH_MASK) ? in->mreth.offset : 0);
	assert_int_equal(out->mreth.msg_len, (m & MR_MRETH_MASK) ? in->mreth.msg_len : 0);
	assert_int_equal(out->mreth.ts, (m & MR_MRETH_MASK) ? in->mreth.ts : 0);
	assert_int_equal(out->sack.base, (m & MR_SACKETH_MASK) ? in->sack.base : 0);
	assert_int_equal(out->sack.ce_count, (m & MR_SACKETH_MASK) ? in->sack.ce_count : 0);
	if (m & MR_SACKETH_MASK) {
		assert_memory_equal(out->sack.bitmap, in->sack.bitmap, 16);
	} else {
		for (int i = 0; i < 16; i++)
			assert_int_equal(out->sack.bitmap[i], 0);
	}
}

static bool paylen_legal(const struct mr_opcode_info *oi, uint32_t paylen)
{
	if (!(oi->mask & MR_PAYLOAD_MASK))
		return paylen == 0;
	if (oi->flags & (MR_OPF_FIRST | MR_OPF_MIDDLE))
		return paylen && !(paylen & 3);
	return true;
}

/* Build one frame, parse it back, compare everything. */
static void round_trip(uint8_t op, const struct mr_path *path, uint32_t paylen,
		       const uint8_t *payload)
{
	const struct mr_opcode_info *oi = mr_opcode_info(op);
	uint32_t l2 = path->vlan ? 18 : 14, l3 = path->ipv6 ? 40 : 20;
	uint32_t pad = (4 - (paylen & 3)) & 3, want_len, icrc;
	uint8_t *buf = malloc(BUF_CAP);
	struct mr_roce_hdrs h;
	struct mr_iov iov[3];
	struct mr_pkt pkt;
	uint16_t ip_id = (uint16_t)rnd();
	int len;

	assert_non_null(buf);
	random_hdrs(&h, op, paylen);
	/* split the payload across three iovs to exercise gathering */
	iov[0].base = payload;
	iov[0].len = paylen / 3;
	iov[1].base = payload + iov[0].len;
	iov[1].len = paylen / 3;
	iov[2].base = payload + 2 * (paylen / 3);
	iov[2].len = paylen - 2 * (paylen / 3);
	memset(buf, 0xee, BUF_CAP);
	len = mr_frame_build(buf, BUF_CAP, path, ip_id, &h, iov, 3);
	want_len = l2 + l3 + 8 + oi->length + paylen + pad + 4;
	assert_int_equal(len, want_len);

	/* exact cap works, one byte less does not */
	assert_int_equal(mr_frame_build(buf, want_len, path, ip_id, &h, iov, 3), want_len);
	assert_int_equal(mr_frame_build(buf, want_len - 1, path, ip_id, &h, iov, 3), -ENOSPC);

	assert_int_equal(mr_frame_parse(buf, (uint32_t)len, true, &pkt), MR_PARSE_OK);
	assert_ptr_equal(pkt.frame, buf);
	assert_int_equal(pkt.frame_len, len);
	assert_memory_equal(pkt.smac, path->smac, 6);
	assert_memory_equal(pkt.dmac, path->dmac, 6);
	assert_int_equal(pkt.vlan, path->vlan);
	assert_int_equal(pkt.vlan_tci, path->vlan ? path->vlan_tci : 0);
	assert_int_equal(pkt.ipv6, path->ipv6);
	assert_memory_equal(pkt.sgid, path->sgid, 16);
	assert_memory_equal(pkt.dgid, path->dgid, 16);
	assert_int_equal(pkt.tclass, path->tclass);
	assert_int_equal(pkt.ttl, path->ttl);
	assert_int_equal(pkt.udp_sport, path->udp_sport);
	assert_int_equal(pkt.udp_dport, MR_ROCE_UDP_PORT);
	assert_ptr_equal(pkt.bth, buf + l2 + l3 + 8);
	assert_hdrs(&h, &pkt.hdr, paylen);
	assert_int_equal(pkt.paylen, paylen);
	assert_ptr_equal(pkt.payload, pkt.bth + oi->length);
	if (paylen)
		assert_memory_equal(pkt.payload, payload, paylen);
	for (uint32_t i = 0; i < pad; i++)
		assert_int_equal(pkt.payload[paylen + i], 0);
	assert_int_equal(mr_icrc_frame(buf, (uint32_t)len, &icrc), 0);
	assert_int_equal(pkt.icrc, icrc);
	assert_int_equal(mr_get_le32(buf + len - 4), icrc);
	/* L3 details the parser does not expose */
	if (!path->ipv6) {
		assert_int_equal(mr_get_be16(buf + l2 + 4), ip_id);
		assert_int_equal(mr_get_be16(buf + l2 + 6), 0x4000); /* DF, no fragment */
	} else {
		assert_int_equal(mr_get_be32(buf + l2) & 0xfffff, path->flow_label);
	}
	assert_int_equal(mr_get_be16(buf + l2 + l3 + 6), 0); /* UDP checksum 0 */
	/* nothing written past the frame */
	assert_int_equal(buf[len], 0xee);
	free(buf);
}

static uint8_t *make_payload(void)
{
	uint8_t *p = malloc(MR_MAX_PAYLOAD);

	assert_non_null(p);
	for (int i = 0; i < MR_MAX_PAYLOAD; i++)
		p[i] = (uint8_t)rnd();
	return p;
}

/* Every opcode, every payload size 0..4096 over IPv4 without VLAN. */
static void test_round_trip_all_sizes(void **state)
{
	uint8_t *payload = make_payload();
	struct mr_path path;
	unsigned int n = 0;

	(void)state;
	make_path(&path, false, false);
	for (unsigned int op = 0; op < 256; op++) {
		const struct mr_opcode_info *oi = mr_opcode_info((uint8_t)op);

		if (!oi)
			continue;
		for (uint32_t len = 0; len <= MR_MAX_PAYLOAD; len++) {
			if (!paylen_legal(oi, len))
				continue;
			round_trip((uint8_t)op, &path, len, payload);
			n++;
		}
	}
	assert_true(n > 26 + 23);
	free(payload);
}

/* Every opcode over IPv4+VLAN, IPv6, IPv6+VLAN at sizes around every alignment and limit. */
/* mr_frame_parse_deferred: WRITE Middle/Last of at least MR_ICRC_DEFER_MIN bytes come back
 * with the ICRC pending, and mr_pkt_place_checked finishes it while copying (payloads that
 * need pad included); a flipped bit anywhere in the ICRC's extent is caught by it and by
 * mr_pkt_icrc_ok; every other packet is checked in full at once. */
static void test_parse_deferred(void **state)
{
	static const uint32_t lens[] = { 255, 256, 1021, 4096 };
	static const uint8_t ops[] = { MR_OP_RC_WRITE_MIDDLE, MR_OP_RC_WRITE_LAST,
				       MR_OP_RC_WRITE_LAST_IMM, MR_OP_RC_SEND_MIDDLE };
	uint8_t *buf = malloc(BUF_CAP), *payload = malloc(4096), *dst = malloc(4096 + 8);
	struct mr_path path;

	(void)state;
	assert_non_null(buf);
	assert_non_null(payload);
	assert_non_null(dst);
	for (uint32_t i = 0; i < 4096; i++)
		payload[i] = (uint8_t)rnd();
	for (int v6 = 0; v6 < 2; v6++) {
		make_path(&path, v6, v6);
		for (size_t o = 0; o < sizeof(ops); o++) {
			for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
				uint32_t n = lens[l];
				bool defer = (ops[o] == MR_OP_RC_WRITE_MIDDLE ||
					      ops[o] == MR_OP_RC_WRITE_LAST) &&
					     n >= MR_ICRC_DEFER_MIN;
				struct mr_roce_hdrs h;
				struct mr_iov iov = { .base = payload, .len = n };
				struct mr_pkt pkt;
				int len;

				/* only a message's last packet may carry pad (IBA 9.2) */
				if ((n & 3) && (ops[o] == MR_OP_RC_WRITE_MIDDLE ||
						ops[o] == MR_OP_RC_SEND_MIDDLE))
					continue;
				random_hdrs(&h, ops[o], n);
				len = mr_frame_build(buf, BUF_CAP, &path, 7, &h, &iov, 1);
				assert_true(len > 0);
				assert_int_equal(mr_frame_parse_deferred(buf, (uint32_t)len, &pkt),
						 MR_PARSE_OK);
				assert_int_equal(pkt.icrc_pending, defer);
				assert_true(mr_pkt_icrc_ok(&pkt));
				if (defer) {
					memset(dst, 0xa5, 4096 + 8);
					assert_true(mr_pkt_place_checked(&pkt, dst));
					assert_memory_equal(dst, payload, n);
					assert_int_equal(dst[n], 0xa5); /* no pad written */
				}
				/* one bit in the payload, then in the BTH's PSN */
				buf[len - 4 - 1 - (n & 3 ? 4 - (n & 3) : 0)] ^= 0x10;
				if (defer) {
					assert_int_equal(mr_frame_parse_deferred(buf, (uint32_t)len,
										 &pkt), MR_PARSE_OK);
					assert_false(mr_pkt_place_checked(&pkt, dst));
					assert_false(mr_pkt_icrc_ok(&pkt));
				} else {
					assert_int_equal(mr_frame_parse_deferred(buf, (uint32_t)len,
										 &pkt), MR_PARSE_BAD_ICRC);
				}
				buf[len - 4 - 1 - (n & 3 ? 4 - (n & 3) : 0)] ^= 0x10;
				buf[(uint32_t)(pkt.bth - buf) + 11] ^= 1;
				if (defer) {
					assert_int_equal(mr_frame_parse_deferred(buf, (uint32_t)len,
										 &pkt), MR_PARSE_OK);
					assert_false(mr_pkt_place_checked(&pkt, dst));
				} else {
					assert_int_equal(mr_frame_parse_deferred(buf, (uint32_t)len,
										 &pkt), MR_PARSE_BAD_ICRC);
				}
			}
		}
	}
	free(buf);
	free(payload);
	free(dst);
}

static void test_round_trip_paths(void **state)
{
	static const uint32_t sizes[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 63, 64, 65, 255, 256, 257,
					  1021, 1022, 1023, 1024, 1025, 2047, 4093, 4094, 4095,
					  4096 };
	uint8_t *payload = make_payload();
	struct mr_path path;

	(void)state;
	for (int v = 1; v < 4; v++) {
		make_path(&path, v & 2, v & 1);
		for (unsigned int op = 0; op < 256; op++) {
			const struct mr_opcode_info *oi = mr_opcode_info((uint8_t)op);

			if (!oi)
				continue;
			for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
				if (paylen_legal(oi, sizes[i]))
					round_trip((uint8_t)op, &path, sizes[i], payload);
		}
	}
	free(payload);
}

static void test_build_errors(void **state)
{
	uint8_t buf[BUF_CAP], data[8] = { 0 };
	struct mr_iov iov = { data, 8 }, big = { data, MR_MAX_PAYLOAD + 1 }, nul = { NULL, 4 };
	struct mr_path path;
	struct mr_roce_hdrs h;

	(void)state;
	make_path(&path, false, false);
	random_hdrs(&h, MR_OP_RC_SEND_ONLY, 8);
	assert_true(mr_frame_build(buf, sizeof(buf), &path, 1, &h, &iov, 1) > 0);
	assert_int_equal(mr_frame_build(NULL, sizeof(buf), &path, 1, &h, &iov, 1), -EINVAL);
	assert_int_equal(mr_frame_build(buf, sizeof(buf), NULL, 1, &h, &iov, 1), -EINVAL);
	assert_int_equal(mr_frame_build(buf, sizeof(buf), &path, 1, NULL, &iov, 1), -EINVAL);
	assert_int_equal(mr_frame_build(buf, sizeof(buf), &path, 1, &h, NULL, 1), -EINVAL);
	assert_int_equal(mr_frame_build(buf, sizeof(buf), &path, 1, &h, &nul, 1), -EINVAL);
	assert_int_equal(mr_frame_build(buf, sizeof(buf), &path, 1, &h, &big, 1), -EINVAL);
	assert_int_equal(mr_frame_build(buf, 10, &path, 1, &h, &iov, 1), -ENOSPC);
	h.opcode = 0x15; /* reserved RC opcode */
	assert_int_equal(mr_frame_build(buf, sizeof(buf), &path, 1, &h, &iov, 1), -EINVAL);
	h.opcode = MR_OP_RC_SEND_ONLY;
	h.psn = 0x1000000;
	assert_int_equal(mr_frame_build(buf, sizeof(buf), &path, 1, &h, &iov, 1), -EINVAL);
	h.psn = 0;
	h.dqpn = 0x1000000;
	assert_int_equal(mr_frame_build(buf, sizeof(buf), &path, 1, &h, &iov, 1), -EINVAL);
	h.dqpn = 0;
	h.tver = 1;
	assert_int_equal(mr_frame_build(buf, sizeof(buf), &path, 1, &h, &iov, 1), -EINVAL);
	h.tver = 0;
	h.opcode = MR_OP_RC_ACK; /* ACK carries no payload */
	assert_int_equal(mr_frame_build(buf, sizeof(buf), &path, 1, &h, &iov, 1), -EINVAL);
	assert_true(mr_frame_build(buf, sizeof(buf), &path, 1, &h, NULL, 0) > 0);
	h.opcode = MR_OP_RC_SEND_MIDDLE; /* middle must not be empty */
	assert_int_equal(mr_frame_build(buf, sizeof(buf), &path, 1, &h, NULL, 0), -EINVAL);
	iov.len = 7; /* nor short of a 4-byte multiple */
	assert_int_equal(mr_frame_build(buf, sizeof(buf), &path, 1, &h, &iov, 1), -EINVAL);
	h.opcode = MR_OP_RC_WRITE_ONLY; /* payload must equal the RETH DMA length */
	h.reth.dlen = 8;
	assert_int_equal(mr_frame_build(buf, sizeof(buf), &path, 1, &h, &iov, 1), -EINVAL);
	path.ipv6 = true;
	path.flow_label = 0x100000;
	h.opcode = MR_OP_RC_ACK;
	assert_int_equal(mr_frame_build(buf, sizeof(buf), &path, 1, &h, NULL, 0), -EINVAL);
}

/* mr_frame_build_tmpl gives mr_frame_build's bytes and return value: every opcode over the
 * four header layouts, random addresses, TOS, TTL and VLAN tags (IPv4 checksum carries
 * included), ip_id, the path's or a per-packet UDP source port, every buffer size from the
 * exact frame length down (short buffers: -ENOSPC from both, nothing compared). */
static void test_build_tmpl(void **state)
{
	static const uint32_t sizes[] = { 0, 1, 3, 4, 8, 63, 64, 255, 256, 1023, 1024, 1025, 4096 };
	uint8_t *payload = make_payload();
	uint8_t a[BUF_CAP], b[BUF_CAP];
	unsigned int n = 0;

	(void)state;
	for (int round = 0; round < 24; round++) {
		struct mr_path path;
		struct mr_hdr_tmpl t;
		uint8_t dmac[6];

		make_path(&path, round & 2, round & 1);
		for (int i = 0; i < 16; i++) {
			path.sgid[i] = round >= 20 ? 0xff : (uint8_t)rnd(); /* 20+: carries */
			path.dgid[i] = round >= 20 ? 0xff : (uint8_t)rnd();
		}
		if (!path.ipv6) {
			memset(path.sgid, 0, 10);
			memset(path.dgid, 0, 10);
			path.sgid[10] = path.sgid[11] = path.dgid[10] = path.dgid[11] = 0xff;
		}
		path.tclass = (uint8_t)rnd();
		path.ttl = (uint8_t)rnd();
		path.vlan_tci = (uint16_t)rnd();
		path.flow_label = (uint32_t)rnd() & 0xfffff;
		path.udp_sport = (uint16_t)rnd();
		for (int i = 0; i < 6; i++)
			dmac[i] = (uint8_t)rnd();
		assert_int_equal(mr_hdr_tmpl_init(&t, &path), 0);
		assert_int_equal(t.len, (path.vlan ? 18 : 14) + (path.ipv6 ? 40 : 20) + 8);
		for (unsigned int op = 0; op < 256; op++) {
			const struct mr_opcode_info *oi = mr_opcode_info((uint8_t)op);

			if (!oi)
				continue;
			for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
				struct mr_iov iov = { payload, sizes[i] };
				struct mr_path pp = path;
				struct mr_roce_hdrs h;
				uint16_t id = (uint16_t)rnd(), sport = rnd() & 1 ? (uint16_t)rnd() : 0;
				int la, lb;

				if (!paylen_legal(oi, sizes[i]))
					continue;
				random_hdrs(&h, (uint8_t)op, sizes[i]);
				memcpy(pp.dmac, dmac, 6);
				if (sport != 0)
					pp.udp_sport = sport;
				la = mr_frame_build(a, sizeof(a), &pp, id, &h, &iov, 1);
				assert_true(la > 0);
				memset(b, 0xa5, sizeof(b));
				lb = mr_frame_build_tmpl(b, sizeof(b), &t, dmac, sport, id, &h, &iov, 1, 0);
				assert_int_equal(lb, la);
				assert_memory_equal(a, b, (size_t)la);
				/* The exact length (the short-copy branch below 64 or 80 bytes)... */
				memset(b, 0xa5, sizeof(b));
				assert_int_equal(mr_frame_build_tmpl(b, (uint32_t)la, &t, dmac, sport, id,
								     &h, &iov, 1, 0), la);
				assert_memory_equal(a, b, (size_t)la);
				assert_int_equal(b[la], 0xa5); /* nothing written past cap */
				/* ...and one byte short. */
				assert_int_equal(mr_frame_build_tmpl(b, (uint32_t)la - 1, &t, dmac, sport,
								     id, &h, &iov, 1, 0), -ENOSPC);
				/* Checksum offload: IPv4's header checksum 0 (the rest, ICRC included,
				 * unchanged: A17.3.3 masks the field); IPv6 frames unchanged. */
				memset(b, 0xa5, sizeof(b));
				assert_int_equal(mr_frame_build_tmpl(b, sizeof(b), &t, dmac, sport, id, &h,
								     &iov, 1, MR_BUILD_IP_CSUM_OFFLOAD), la);
				if (!path.ipv6) {
					uint32_t c = t.ip_off + 10;

					assert_int_equal(b[c] | b[c + 1], 0);
					assert_memory_equal(a, b, c);
					assert_memory_equal(a + c + 2, b + c + 2, (size_t)la - c - 2);
				} else {
					assert_memory_equal(a, b, (size_t)la);
				}
				n++;
			}
		}
	}
	assert_true(n > 24 * 100);
	free(payload);
}

/* The template refuses what mr_frame_build refuses: a bad path leaves it empty, bad headers
 * and NULL arguments give -EINVAL. */
static void test_build_tmpl_errors(void **state)
{
	uint8_t buf[BUF_CAP], data[8] = { 0 }, mac[6] = { 0 };
	struct mr_iov iov = { data, 8 }, nul = { NULL, 4 };
	struct mr_hdr_tmpl t;
	struct mr_path path;
	struct mr_roce_hdrs h;

	(void)state;
	make_path(&path, true, false);
	random_hdrs(&h, MR_OP_RC_SEND_ONLY, 8);
	assert_int_equal(mr_hdr_tmpl_init(NULL, &path), -EINVAL);
	assert_int_equal(mr_hdr_tmpl_init(&t, NULL), -EINVAL);
	assert_int_equal(t.len, 0);
	path.flow_label = 0x100000;
	assert_int_equal(mr_hdr_tmpl_init(&t, &path), -EINVAL);
	assert_int_equal(t.len, 0);
	assert_int_equal(mr_frame_build_tmpl(buf, sizeof(buf), &t, mac, 0, 1, &h, &iov, 1, 0),
			 -EINVAL);
	path.flow_label = 1;
	assert_int_equal(mr_hdr_tmpl_init(&t, &path), 0);
	assert_true(mr_frame_build_tmpl(buf, sizeof(buf), &t, mac, 0, 1, &h, &iov, 1, 0) > 0);
	assert_int_equal(mr_frame_build_tmpl(NULL, sizeof(buf), &t, mac, 0, 1, &h, &iov, 1, 0),
			 -EINVAL);
	assert_int_equal(mr_frame_build_tmpl(buf, sizeof(buf), NULL, mac, 0, 1, &h, &iov, 1, 0),
			 -EINVAL);
	assert_int_equal(mr_frame_build_tmpl(buf, sizeof(buf), &t, NULL, 0, 1, &h, &iov, 1, 0),
			 -EINVAL);
	assert_int_equal(mr_frame_build_tmpl(buf, sizeof(buf), &t, mac, 0, 1, NULL, &iov, 1, 0),
			 -EINVAL);
	assert_int_equal(mr_frame_build_tmpl(buf, sizeof(buf), &t, mac, 0, 1, &h, NULL, 1, 0),
			 -EINVAL);
	assert_int_equal(mr_frame_build_tmpl(buf, sizeof(buf), &t, mac, 0, 1, &h, &nul, 1, 0),
			 -EINVAL);
	assert_int_equal(mr_frame_build_tmpl(buf, sizeof(buf), &t, mac, 0, 1, &h, &iov, 1, 2),
			 -EINVAL); /* an unknown flag */
	h.opcode = 0x15; /* reserved RC opcode */
	assert_int_equal(mr_frame_build_tmpl(buf, sizeof(buf), &t, mac, 0, 1, &h, &iov, 1, 0),
			 -EINVAL);
}

/* A valid IPv4 SEND_LAST frame with a 5-byte payload, to be edited by the cases below. */
static int base_frame(uint8_t *buf, uint32_t cap, bool vlan)
{
	static const uint8_t data[5] = { 1, 2, 3, 4, 5 };
	struct mr_iov iov = { data, sizeof(data) };
	struct mr_path path;
	struct mr_roce_hdrs h;

	make_path(&path, false, vlan);
	random_hdrs(&h, MR_OP_RC_SEND_LAST, sizeof(data));
	return mr_frame_build(buf, cap, &path, 7, &h, &iov, 1);
}

static void ipv4_fix_csum(uint8_t *ip)
{
	uint32_t sum = 0;

	ip[10] = ip[11] = 0;
	for (int i = 0; i < (ip[0] & 0xf) * 4; i += 2)
		sum += mr_get_be16(ip + i);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	mr_put_be16(ip + 10, (uint16_t)~sum);
}

static enum mr_parse_result parse_fixed(uint8_t *buf, uint32_t len)
{
	struct mr_pkt pkt;

	ipv4_fix_csum(buf + 14);
	/* frames with an IHL below 5 cannot be located; they fail before the ICRC anyway */
	(void)mr_icrc_frame_fix(buf, len);
	return mr_frame_parse(buf, len, true, &pkt);
}

/* Each malformation, with valid checksums and ICRC, yields its own reason. */
static void test_parse_reasons(void **state)
{
	uint8_t buf[256], big[300];
	struct mr_pkt pkt;
	int len;
	uint32_t n;

	(void)state;
	len = base_frame(buf, sizeof(buf), false);
	assert_true(len > 0);
	n = (uint32_t)len;
	uint8_t *ip = buf + 14, *udp = buf + 34, *bth = buf + 42;

	assert_int_equal(parse_fixed(buf, n), MR_PARSE_OK);
	bth[1] |= 1; /* TVer 1 */
	assert_int_equal(parse_fixed(buf, n), MR_PARSE_BAD_VERSION);
	bth[1] &= 0xf0;
	bth[0] = 0x15;
	assert_int_equal(parse_fixed(buf, n), MR_PARSE_UNKNOWN_OPCODE);
	bth[0] = 0x18;
	assert_int_equal(parse_fixed(buf, n), MR_PARSE_UNKNOWN_OPCODE);
	bth[0] = MR_OP_RC_ACK; /* AETH + 4 more bytes: ACK with payload */
	bth[1] &= 0xcf;
	assert_int_equal(parse_fixed(buf, n), MR_PARSE_BAD_LENGTH);
	bth[0] = MR_OP_RC_SEND_MIDDLE; /* middle with pad */
	bth[1] |= 0x30;
	assert_int_equal(parse_fixed(buf, n), MR_PARSE_BAD_PAD);
	bth[0] = MR_OP_RC_SEND_LAST;
	assert_int_equal(parse_fixed(buf, n), MR_PARSE_OK);
	/* IPv4 fragment */
	ip[6] |= 0x20;
	assert_int_equal(parse_fixed(buf, n), MR_PARSE_BAD_IP);
	ip[6] &= 0xdf;
	ip[7] = 1;
	assert_int_equal(parse_fixed(buf, n), MR_PARSE_BAD_IP);
	ip[7] = 0;
	ip[0] = 0x44; /* IHL 4 */
	assert_int_equal(parse_fixed(buf, n), MR_PARSE_BAD_IP);
	ip[0] = 0x65; /* version 6 in an IPv4 ethertype */
	assert_int_equal(parse_fixed(buf, n), MR_PARSE_BAD_IP);
	ip[0] = 0x45;
	assert_int_equal(parse_fixed(buf, n), MR_PARSE_OK);
	ip[8]--; /* TTL changed without checksum update */
	assert_int_equal(mr_frame_parse(buf, n, true, &pkt), MR_PARSE_BAD_IP_CSUM);
	ip[8]++;
	mr_put_be16(ip + 2, (uint16_t)(n - 14 + 1)); /* IP longer than the frame */
	assert_int_equal(parse_fixed(buf, n), MR_PARSE_TRUNCATED);
	mr_put_be16(ip + 2, 20 + 7);
	assert_int_equal(parse_fixed(buf, n), MR_PARSE_BAD_IP_LEN);
	mr_put_be16(ip + 2, (uint16_t)(n - 14));
	mr_put_be16(udp + 4, (uint16_t)(n - 34 - 4));
	assert_int_equal(parse_fixed(buf, n), MR_PARSE_BAD_UDP_LEN);
	mr_put_be16(udp + 4, (uint16_t)(n - 34));
	/* a non-zero UDP checksum must verify; a right one is accepted */
	mr_put_be16(udp + 6, 0x1234);
	assert_int_equal(parse_fixed(buf, n), MR_PARSE_BAD_UDP_CSUM);
	{
		uint32_t sum = 17 + (n - 34);

		mr_put_be16(udp + 6, 0);
		for (int i = 12; i < 20; i += 2)
			sum += mr_get_be16(ip + i);
		for (uint32_t i = 0; i + 1 < n - 34; i += 2)
			sum += mr_get_be16(udp + i);
		if ((n - 34) & 1)
			sum += (uint32_t)udp[n - 34 - 1] << 8;
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		mr_put_be16(udp + 6, (uint16_t)~sum);
		assert_int_equal(parse_fixed(buf, n), MR_PARSE_OK);
		mr_put_be16(udp + 6, 0);
	}
	mr_put_be16(udp + 2, 4792);
	assert_int_equal(parse_fixed(buf, n), MR_PARSE_NOT_ROCE);
	mr_put_be16(udp + 2, MR_ROCE_UDP_PORT);
	ip[9] = 6; /* TCP */
	assert_int_equal(parse_fixed(buf, n), MR_PARSE_NOT_ROCE);
	ip[9] = 17;
	mr_put_be16(buf + 12, 0x0806); /* ARP */
	assert_int_equal(mr_frame_parse(buf, n, true, &pkt), MR_PARSE_NOT_ROCE);
	mr_put_be16(buf + 12, 0x0800);
	assert_int_equal(parse_fixed(buf, n), MR_PARSE_OK);
	buf[n - 1] ^= 1;
	assert_int_equal(mr_frame_parse(buf, n, true, &pkt), MR_PARSE_BAD_ICRC);
	/* not checked when the caller says so (hardware-verified ICRC) */
	assert_int_equal(mr_frame_parse(buf, n, false, &pkt), MR_PARSE_OK);
	/* FECN/BECN are outside the ICRC (A17.9.1): a switch may set them */
	buf[n - 1] ^= 1;
	bth[4] |= 0xc0;
	assert_int_equal(mr_frame_parse(buf, n, true, &pkt), MR_PARSE_OK);
	assert_true(pkt.hdr.fecn && pkt.hdr.becn);
	/* as is DSCP/ECN (with a fixed IP checksum) */
	ip[1] ^= 0x03;
	ipv4_fix_csum(ip);
	assert_int_equal(mr_frame_parse(buf, n, true, &pkt), MR_PARSE_OK);

	/* ACK: pad bits set, or a payload area that is not a 4-byte multiple. */
	{
		struct mr_path path;
		struct mr_roce_hdrs h;
		uint8_t ack[128];
		int alen;

		make_path(&path, false, false);
		random_hdrs(&h, MR_OP_RC_ACK, 0);
		alen = mr_frame_build(ack, sizeof(ack), &path, 1, &h, NULL, 0);
		assert_int_equal(alen, 14 + 20 + 8 + 16 + 4);
		ack[42 + 1] |= 0x20;
		assert_int_equal(parse_fixed(ack, (uint32_t)alen), MR_PARSE_BAD_PAD);
		ack[42 + 1] &= 0xcf;
		assert_int_equal(parse_fixed(ack, (uint32_t)alen), MR_PARSE_OK);
		ack[alen] = 0; /* one stray byte before the ICRC */
		mr_put_be16(ack + 16, (uint16_t)(alen + 1 - 14));
		mr_put_be16(ack + 38, (uint16_t)(alen + 1 - 34));
		assert_int_equal(parse_fixed(ack, (uint32_t)alen + 1), MR_PARSE_BAD_PAD);
		/* UDP datagram too short for a BTH */
		mr_put_be16(ack + 16, 20 + 8 + 8);
		mr_put_be16(ack + 38, 8 + 8);
		ipv4_fix_csum(ack + 14);
		assert_int_equal(mr_frame_parse(ack, 14 + 36, true, &pkt), MR_PARSE_TRUNCATED);
	}

	/* Ethernet trailer after the IP datagram is ignored. */
	memcpy(big, buf, n);
	memset(big + n, 0, 6);
	assert_int_equal(mr_frame_parse(big, n + 6, true, &pkt), MR_PARSE_OK);
	assert_int_equal(pkt.paylen, 5);

	/* IPv4 options (IHL 6) are skipped and covered by the ICRC. */
	memcpy(big, buf, 34);
	memset(big + 34, 1, 4); /* four NOP options */
	memcpy(big + 38, buf + 34, n - 34);
	big[14] = 0x46;
	mr_put_be16(big + 16, (uint16_t)(n - 14 + 4));
	assert_int_equal(parse_fixed(big, n + 4), MR_PARSE_OK);
	assert_int_equal(mr_frame_parse(big, n + 4, true, &pkt), MR_PARSE_OK);
	assert_int_equal(pkt.paylen, 5);
	assert_memory_equal(pkt.payload, "\1\2\3\4\5", 5);
}

static void test_parse_result_str(void **state)
{
	(void)state;
	for (int r = 0; r < MR_PARSE_NR_RESULTS; r++) {
		assert_non_null(mr_parse_result_str((enum mr_parse_result)r));
		for (int s = 0; s < r; s++)
			assert_string_not_equal(mr_parse_result_str((enum mr_parse_result)r),
						mr_parse_result_str((enum mr_parse_result)s));
	}
	assert_non_null(mr_parse_result_str(MR_PARSE_NR_RESULTS));
	assert_int_equal(mr_frame_parse(NULL, 0, true, &(struct mr_pkt){ 0 }),
			 MR_PARSE_TRUNCATED);
}

/* IBA 9.7.1: 24-bit PSN space, compared within half the space. */
static void test_psn(void **state)
{
	(void)state;
	assert_int_equal(mr_psn_add(0xffffff, 1), 0);
	assert_int_equal(mr_psn_add(0xfffffe, 5), 3);
	assert_int_equal(mr_psn_add(5, 0x1000000), 5);
	assert_int_equal(mr_psn_add(0, 0xffffff), 0xffffff);
	assert_true(mr_psn_cmp(0, 0xffffff) > 0);
	assert_true(mr_psn_cmp(0xffffff, 0) < 0);
	assert_int_equal(mr_psn_cmp(0, 0xffffff), 1);
	assert_int_equal(mr_psn_cmp(0xffffff, 0), -1);
	assert_int_equal(mr_psn_cmp(0x123456, 0x123456), 0);
	assert_int_equal(mr_psn_cmp(2, 0xfffffe), 4);
	assert_int_equal(mr_psn_cmp(0xfffffe, 2), -4);
	assert_int_equal(mr_psn_cmp(0x7fffff, 0), 0x7fffff);
	assert_true(mr_psn_cmp(0x800000, 0) < 0); /* exactly half: wraps negative */
	assert_int_equal(mr_psn_cmp(0x800001, 0), -0x7fffff);
	/* upper bits of the arguments are ignored */
	assert_int_equal(mr_psn_cmp(0x1000005, 5), 0);
	for (uint32_t b = 0xfffff0; b != 0x10; b = mr_psn_add(b, 1)) {
		assert_int_equal(mr_psn_cmp(mr_psn_add(b, 7), b), 7);
		assert_int_equal(mr_psn_cmp(b, mr_psn_add(b, 7)), -7);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_all_sizes),
		cmocka_unit_test(test_round_trip_paths),
		cmocka_unit_test(test_build_errors),
		cmocka_unit_test(test_build_tmpl),
		cmocka_unit_test(test_build_tmpl_errors),
		cmocka_unit_test(test_parse_reasons),
		cmocka_unit_test(test_parse_deferred),
		cmocka_unit_test(test_parse_result_str),
		cmocka_unit_test(test_psn),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
