/* SPDX-License-Identifier: MIT
 * MetaRoCE frames (docs/metaroce-wire.md) through the one table-driven builder and parser:
 * MRETH/SACKETH fields at their extremes, the SACK bitmap bit order on the wire, the ICRC rules
 * (identical to RoCE v2, A17.3.3), builder refusals, MRETH version and offset/msg_len drops, and
 * corruption/truncation sweeps over every MetaRoCE opcode (run under ASan for overreads).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wire/icrc.h"
#include "wire/roce_hdr.h"
#include "wire/roce_opcode.h"
#include "wire/roce_pkt.h"

#define CAP 8192
#define L2 14
#define L3 20
#define BTH_OFF (L2 + L3 + 8u)

static void make_path(struct mr_path *p, bool ipv6)
{
	memset(p, 0, sizeof(*p));
	memcpy(p->smac, "\x02\x00\x00\x00\x00\x01", 6);
	memcpy(p->dmac, "\x02\x00\x00\x00\x00\x02", 6);
	p->ipv6 = ipv6;
	if (ipv6) {
		p->sgid[0] = p->dgid[0] = 0xfd;
		p->sgid[15] = 1;
		p->dgid[15] = 2;
		p->flow_label = 0xfffff;
	} else {
		p->sgid[10] = p->sgid[11] = p->dgid[10] = p->dgid[11] = 0xff;
		memcpy(p->sgid + 12, "\x0a\x00\x00\x01", 4);
		memcpy(p->dgid + 12, "\x0a\x00\x00\x02", 4);
	}
	p->tclass = 26 << 2 | 2;
	p->ttl = 64;
	p->udp_sport = 0xc000 + 255; /* udp_sport_base + path */
}

/* A legal header for op with paylen bytes; every MetaRoCE field set to its maximum. */
static void max_hdrs(struct mr_roce_hdrs *h, uint8_t op, uint32_t paylen)
{
	memset(h, 0, sizeof(*h));
	h->opcode = op;
	h->pkey = 0xffff;
	h->dqpn = 0xffffff;
	h->psn = 0xffffff;
	h->mreth.ver = MR_MRETH_VER;
	h->mreth.flags = MR_MRETH_RETX | MR_MRETH_TLP | MR_MRETH_ECE;
	h->mreth.path = 0xff;
	h->mreth.msg_seq = 0xffffffffu;
	h->mreth.offset = 0xffffffffu - paylen;
	h->mreth.msg_len = 0xffffffffu;
	h->mreth.ts = 0xffffffffu;
	h->reth.va = ~0ull;
	h->reth.rkey = 0xffffffffu;
	h->reth.dlen = paylen;
	h->aeth.syndrome = 0xff;
	h->aeth.msn = 0xffffff;
	h->atmeth.va = ~0ull;
	h->atmeth.swap_add = ~0ull;
	h->atmeth.cmp = ~0ull;
	h->atmack = ~0ull;
	h->imm = 0xffffffffu;
	h->ieth_rkey = 0xffffffffu;
	h->sack.base = 0xffffff;
	memset(h->sack.bitmap, 0xff, sizeof(h->sack.bitmap));
	h->sack.ce_count = 0xffff;
}

static uint32_t legal_len(const struct mr_opcode_info *oi)
{
	if (!(oi->mask & MR_PAYLOAD_MASK))
		return 0;
	return (oi->flags & (MR_OPF_FIRST | MR_OPF_MIDDLE)) ? 64 : 13;
}

static int build(uint8_t *buf, const struct mr_roce_hdrs *h, uint32_t paylen, bool ipv6)
{
	static uint8_t data[MR_MAX_PAYLOAD];
	struct mr_iov iov = { data, paylen };
	struct mr_path path;

	for (uint32_t i = 0; i < paylen; i++)
		data[i] = (uint8_t)(i * 29 + 3);
	make_path(&path, ipv6);
	return mr_frame_build(buf, CAP, &path, 0x1234, h, &iov, 1);
}

static void assert_mrc_equal(const struct mr_roce_hdrs *in, const struct mr_roce_hdrs *out,
			     uint32_t mask)
{
	assert_int_equal(out->mreth.ver, MR_MRETH_VER);
	assert_int_equal(out->mreth.flags, in->mreth.flags);
	assert_int_equal(out->mreth.path, in->mreth.path);
	assert_int_equal(out->mreth.msg_seq, in->mreth.msg_seq);
	assert_int_equal(out->mreth.offset, in->mreth.offset);
	assert_int_equal(out->mreth.msg_len, in->mreth.msg_len);
	assert_int_equal(out->mreth.ts, in->mreth.ts);
	if (mask & MR_SACKETH_MASK) {
		assert_int_equal(out->sack.base, in->sack.base);
		assert_memory_equal(out->sack.bitmap, in->sack.bitmap, 16);
		assert_int_equal(out->sack.ce_count, in->sack.ce_count);
	}
	if (mask & MR_RETH_MASK) {
		assert_true(out->reth.va == in->reth.va);
		assert_int_equal(out->reth.rkey, in->reth.rkey);
		assert_int_equal(out->reth.dlen, in->reth.dlen);
	}
}

/* Every MetaRoCE opcode with all-ones and all-zero MRETH/SACKETH fields, IPv4 and IPv6; the
 * MRETH is on the wire right after the BTH, byte for byte as the doc draws it. */
static void test_extremes(void **state)
{
	uint8_t *buf = malloc(CAP);
	unsigned int nops = 0;

	(void)state;
	assert_non_null(buf);
	for (unsigned int op = 0xc0; op <= 0xdf; op++) {
		const struct mr_opcode_info *oi = mr_opcode_info((uint8_t)op);

		if (!oi)
			continue;
		nops++;
		for (int zero = 0; zero < 2; zero++) {
			for (int v6 = 0; v6 < 2; v6++) {
				uint32_t paylen = legal_len(oi), l3 = v6 ? 40 : 20;
				struct mr_roce_hdrs h;
				struct mr_pkt pkt;
				const uint8_t *m;
				int len;

				max_hdrs(&h, (uint8_t)op, paylen);
				if (zero) {
					memset(&h.mreth, 0, sizeof(h.mreth)); /* ver 0 = current */
					memset(&h.sack, 0, sizeof(h.sack));
					h.mreth.msg_len = paylen;
				}
				len = build(buf, &h, paylen, v6);
				assert_true(len > 0);
				assert_int_equal(mr_frame_parse(buf, (uint32_t)len, true, &pkt),
						 MR_PARSE_OK);
				assert_int_equal(pkt.paylen, paylen);
				assert_mrc_equal(&h, &pkt.hdr, oi->mask);
				m = buf + L2 + l3 + 8 + MR_BTH_LEN;
				assert_int_equal(m[0], zero ? 0x10 : 0x17);
				assert_int_equal(m[1], zero ? 0 : 0xff);
				assert_int_equal(m[2], 0); /* reserved */
				assert_int_equal(m[3], 0);
				assert_int_equal(mr_get_be32(m + 12), h.mreth.msg_len);
				if (oi->mask & MR_SACKETH_MASK) {
					const uint8_t *s = buf + L2 + l3 + 8 +
							   oi->offset[MR_HDR_SACKETH];

					assert_int_equal(s[0], 0); /* reserved */
					assert_int_equal(s[22], 0);
					assert_int_equal(s[23], 0);
					assert_int_equal(mr_get_be16(s + 20), h.sack.ce_count);
				}
			}
		}
	}
	assert_int_equal(nops, 23);
	free(buf);
}

/* docs/metaroce-wire.md: bitmap bit i (bit 0 = MSB of the first byte) is PSN sack_base + i. */
static void test_sack_bit_order(void **state)
{
	static const unsigned int bits[] = { 0, 1, 7, 8, 15, 64, 126, 127 };
	uint8_t buf[256];
	struct mr_roce_hdrs h;
	struct mr_pkt pkt;
	int len;

	(void)state;
	for (size_t k = 0; k < sizeof(bits) / sizeof(bits[0]); k++) {
		const uint8_t *s;

		max_hdrs(&h, MR_OP_MRC_ACK, 0);
		memset(h.sack.bitmap, 0, sizeof(h.sack.bitmap));
		h.psn = 0xfffffe;
		h.sack.base = 0xffffff; /* PSN wraps inside the window */
		mr_sack_set(h.sack.bitmap, bits[k]);
		len = build(buf, &h, 0, false);
		assert_int_equal(len, BTH_OFF + 12 + 20 + 4 + 24 + 4);
		s = buf + BTH_OFF + 12 + 20 + 4;
		assert_int_equal(mr_get_be24(s + 1), 0xffffff);
		for (unsigned int b = 0; b < 16; b++)
			assert_int_equal(s[4 + b], b == bits[k] / 8 ? 0x80 >> (bits[k] % 8) : 0);
		assert_int_equal(mr_frame_parse(buf, (uint32_t)len, true, &pkt), MR_PARSE_OK);
		for (unsigned int i = 0; i < MR_SACK_BITS; i++)
			assert_int_equal(mr_sack_test(pkt.hdr.sack.bitmap, i), i == bits[k]);
		/* bit i names PSN base + i modulo 2^24 */
		assert_int_equal(mr_psn_add(pkt.hdr.sack.base, bits[k]), (0xffffff + bits[k]) &
				 MR_PSN_MASK);
	}
}

/* The ICRC of a MetaRoCE frame follows A17.3.3 exactly: computed here independently of icrc.c's
 * pseudo-header code (mask the variant fields, CRC-32 after 8 bytes of ones), the MRETH and
 * SACKETH are covered, FECN/BECN, DSCP/ECN and TTL are not. */
static void test_icrc_rules(void **state)
{
	uint8_t buf[512], ps[512];
	struct mr_roce_hdrs h;
	struct mr_pkt pkt;
	uint32_t n, crc;
	int len;

	(void)state;
	max_hdrs(&h, MR_OP_MRC_ACK, 0);
	len = build(buf, &h, 0, false);
	assert_true(len > 0);
	n = (uint32_t)len;
	memset(ps, 0xff, 8);
	memcpy(ps + 8, buf + L2, n - L2 - 4);
	ps[8 + 1] = 0xff;                        /* TOS */
	ps[8 + 8] = 0xff;                        /* TTL */
	ps[8 + 10] = ps[8 + 11] = 0xff;          /* IPv4 checksum */
	ps[8 + L3 + 6] = ps[8 + L3 + 7] = 0xff;  /* UDP checksum */
	ps[8 + L3 + 8 + 4] = 0xff;               /* BTH FECN/BECN/resv6 */
	crc = mr_crc32(0, ps, 8 + n - L2 - 4);
	assert_int_equal(mr_get_le32(buf + n - 4), crc);

	/* variant fields: a switch may change them without breaking the ICRC */
	buf[BTH_OFF + 4] |= 0xc0;
	buf[L2 + 1] ^= 0x03;  /* ECN CE */
	buf[L2 + 8]--;        /* TTL */
	mr_put_be16(buf + L2 + 10, 0);
	{
		uint32_t sum = 0;

		for (int i = 0; i < L3; i += 2)
			sum += mr_get_be16(buf + L2 + i);
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		mr_put_be16(buf + L2 + 10, (uint16_t)~sum);
	}
	assert_int_equal(mr_frame_parse(buf, n, true, &pkt), MR_PARSE_OK);
	assert_true(pkt.hdr.fecn && pkt.hdr.becn);
	/* invariant MetaRoCE bytes: every MRETH and SACKETH bit is covered */
	for (uint32_t off = BTH_OFF + 12; off < BTH_OFF + 12 + 20 + 4 + 24; off++) {
		for (int bit = 0; bit < 8; bit++) {
			buf[off] ^= (uint8_t)(1u << bit);
			assert_int_equal(mr_frame_parse(buf, n, true, &pkt),
					 (off == BTH_OFF + 12 && bit >= 4) ?
					 MR_PARSE_BAD_VERSION : MR_PARSE_BAD_ICRC);
			buf[off] ^= (uint8_t)(1u << bit);
		}
	}
}

static void test_build_refusals(void **state)
{
	uint8_t buf[CAP];
	struct mr_roce_hdrs h;

	(void)state;
	max_hdrs(&h, MR_OP_MRC_SEND_LAST, 13);
	assert_true(build(buf, &h, 13, false) > 0);
	h.mreth.ver = 2;
	assert_int_equal(build(buf, &h, 13, false), -EINVAL);
	h.mreth.ver = 0;
	assert_true(build(buf, &h, 13, false) > 0);
	h.mreth.flags = 0x08; /* reserved flag bit */
	assert_int_equal(build(buf, &h, 13, false), -EINVAL);
	h.mreth.flags = 0x17;
	assert_int_equal(build(buf, &h, 13, false), -EINVAL);
	h.mreth.flags = 0;
	h.mreth.offset++; /* one byte past msg_len */
	assert_int_equal(build(buf, &h, 13, false), -EINVAL);
	h.mreth.offset = 0xfffffff8u; /* 32-bit wrap must not pass */
	h.mreth.msg_len = 4;
	assert_int_equal(build(buf, &h, 13, false), -EINVAL);
	h.mreth.offset = 0;
	h.mreth.msg_len = 13;
	assert_true(build(buf, &h, 13, false) > 0);
	max_hdrs(&h, MR_OP_MRC_ACK, 0);
	h.sack.base = 0x1000000;
	assert_int_equal(build(buf, &h, 0, false), -EINVAL);
	h.sack.base = 0xffffff;
	assert_true(build(buf, &h, 0, false) > 0);
	max_hdrs(&h, MR_OP_MRC_WRITE_MIDDLE, 0); /* RC rule kept: middle is not empty */
	assert_int_equal(build(buf, &h, 0, false), -EINVAL);
	max_hdrs(&h, MR_OP_MRC_WRITE_ONLY, 16);
	h.reth.dlen = 15; /* WRITE ONLY: RETH length is the payload */
	assert_int_equal(build(buf, &h, 16, false), -EINVAL);
	h.opcode = 0xd5; /* 0x15 is reserved in RC, so is its MetaRoCE twin */
	assert_int_equal(build(buf, &h, 16, false), -EINVAL);
}

/* The parser drops MRETH ver != 1 and offset + payload > msg_len, even with a good ICRC. */
static void test_parse_drops(void **state)
{
	uint8_t buf[CAP];
	struct mr_roce_hdrs h;
	struct mr_pkt pkt;
	uint32_t n;
	int len;

	(void)state;
	max_hdrs(&h, MR_OP_MRC_WRITE_LAST, 13);
	h.mreth.offset = 100;
	h.mreth.msg_len = 113;
	len = build(buf, &h, 13, false);
	assert_true(len > 0);
	n = (uint32_t)len;
	assert_int_equal(mr_frame_parse(buf, n, true, &pkt), MR_PARSE_OK);
	for (unsigned int ver = 0; ver < 16; ver++) {
		buf[BTH_OFF + 12] = (uint8_t)(ver << 4 | 7);
		assert_int_equal(mr_icrc_frame_fix(buf, n), 0);
		assert_int_equal(mr_frame_parse(buf, n, true, &pkt),
				 ver == 1 ? MR_PARSE_OK : MR_PARSE_BAD_VERSION);
	}
	/* reserved flag bit and reserved bytes: ignored on receive */
	buf[BTH_OFF + 12] = 0x1f;
	buf[BTH_OFF + 14] = 0xaa;
	assert_int_equal(mr_icrc_frame_fix(buf, n), 0);
	assert_int_equal(mr_frame_parse(buf, n, true, &pkt), MR_PARSE_OK);
	assert_int_equal(pkt.hdr.mreth.flags, 0xf);
	mr_put_be32(buf + BTH_OFF + 12 + 12, 112); /* msg_len one short */
	assert_int_equal(mr_icrc_frame_fix(buf, n), 0);
	assert_int_equal(mr_frame_parse(buf, n, true, &pkt), MR_PARSE_BAD_LENGTH);
	mr_put_be32(buf + BTH_OFF + 12 + 8, 0xfffffffau); /* offset wraps past msg_len */
	mr_put_be32(buf + BTH_OFF + 12 + 12, 5);
	assert_int_equal(mr_icrc_frame_fix(buf, n), 0);
	assert_int_equal(mr_frame_parse(buf, n, true, &pkt), MR_PARSE_BAD_LENGTH);
	/* the MetaRoCE opcode bit itself: flipping 0xc8 to 0x08 yields an RC WRITE LAST whose
	 * "payload" is the MRETH + RETH; legal in RC, so the ICRC is what catches it */
	max_hdrs(&h, MR_OP_MRC_WRITE_LAST, 13);
	len = build(buf, &h, 13, false);
	buf[BTH_OFF] = MR_OP_RC_WRITE_LAST;
	assert_int_equal(mr_frame_parse(buf, (uint32_t)len, true, &pkt), MR_PARSE_BAD_ICRC);
}

/* Every MetaRoCE opcode: any single-byte corruption of the ICRC-covered bytes is rejected; every
 * prefix is rejected without reading past it (exactly sized heap copies for ASan). */
static void test_corruption_truncation(void **state)
{
	static const uint8_t flips[] = { 0x01, 0x10, 0x80, 0xff };
	uint8_t *buf = malloc(CAP);
	unsigned long cases = 0;

	(void)state;
	assert_non_null(buf);
	for (unsigned int op = 0xc0; op <= 0xdf; op++) {
		const struct mr_opcode_info *oi = mr_opcode_info((uint8_t)op);
		struct mr_roce_hdrs h;
		struct mr_pkt pkt;
		uint32_t n, paylen;
		int len;

		if (!oi)
			continue;
		paylen = legal_len(oi);
		max_hdrs(&h, (uint8_t)op, paylen);
		len = build(buf, &h, paylen, false);
		assert_true(len > 0);
		n = (uint32_t)len;
		for (uint32_t off = 12; off < n; off++) {
			if (off == BTH_OFF + 4) /* FECN/BECN: outside the ICRC by design */
				continue;
			for (size_t k = 0; k < sizeof(flips); k++) {
				enum mr_parse_result r;

				buf[off] ^= flips[k];
				r = mr_frame_parse(buf, n, true, &pkt);
				buf[off] ^= flips[k];
				cases++;
				if (r == MR_PARSE_OK)
					fail_msg("opcode 0x%02x: flip 0x%02x at %u accepted", op,
						 flips[k], off);
				/* payload, pad, ICRC, and the SACKETH: only the ICRC notices */
				if (off >= BTH_OFF + oi->length ||
				    ((oi->mask & MR_SACKETH_MASK) &&
				     off >= BTH_OFF + oi->offset[MR_HDR_SACKETH]))
					assert_int_equal(r, MR_PARSE_BAD_ICRC);
			}
		}
		for (uint32_t cut = 0; cut < n; cut++) {
			uint8_t *c = malloc(cut ? cut : 1);

			assert_non_null(c);
			memcpy(c, buf, cut);
			assert_int_not_equal(mr_frame_parse(c, cut, true, &pkt), MR_PARSE_OK);
			free(c);
			cases++;
		}
	}
	printf("metaroce corruption/truncation: %lu cases rejected\n", cases);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_extremes),
		cmocka_unit_test(test_sack_bit_order),
		cmocka_unit_test(test_icrc_rules),
		cmocka_unit_test(test_build_refusals),
		cmocka_unit_test(test_parse_drops),
		cmocka_unit_test(test_corruption_truncation),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
