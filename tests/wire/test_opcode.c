/* SPDX-License-Identifier: MIT
 * Opcode table consistency (IBA 9.2 table 38, 9.3.3.3 header sizes, A17.9.3 CNP), including the
 * MetaRoCE opcodes 0xC0 | RC opcode (docs/metaroce-wire.md).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "wire/roce_hdr.h"
#include "wire/roce_opcode.h"
#include "wire/roce_pkt.h"

static const uint8_t supported[] = {
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c,
	0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x16, 0x17, 0x64, 0x65, 0x81,
	/* MetaRoCE: every RC opcode (0x15 is reserved in RC, so 0xd5 is too) */
	0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xcb, 0xcc,
	0xcd, 0xce, 0xcf, 0xd0, 0xd1, 0xd2, 0xd3, 0xd4, 0xd6, 0xd7,
};

static bool is_supported(unsigned int op)
{
	for (size_t i = 0; i < sizeof(supported); i++)
		if (supported[i] == op)
			return true;
	return false;
}

static void test_header_sizes(void **state)
{
	(void)state;
	assert_int_equal(MR_BTH_LEN, 12);
	assert_int_equal(mr_hdr_len_table[MR_HDR_BTH], 12);
	assert_int_equal(mr_hdr_len_table[MR_HDR_RETH], 16);
	assert_int_equal(mr_hdr_len_table[MR_HDR_AETH], 4);
	assert_int_equal(mr_hdr_len_table[MR_HDR_ATMETH], 28);
	assert_int_equal(mr_hdr_len_table[MR_HDR_ATMACK], 8);
	assert_int_equal(mr_hdr_len_table[MR_HDR_IMMDT], 4);
	assert_int_equal(mr_hdr_len_table[MR_HDR_IETH], 4);
	assert_int_equal(mr_hdr_len_table[MR_HDR_DETH], 8);
	assert_int_equal(mr_hdr_len_table[MR_HDR_CNP_RSVD], 16);
	assert_int_equal(mr_hdr_len_table[MR_HDR_PAYLOAD], 0);
	assert_int_equal(mr_hdr_len_table[MR_HDR_MRETH], 20);
	assert_int_equal(mr_hdr_len_table[MR_HDR_SACKETH], 24);
	assert_int_equal(MR_MRETH_LEN, 20);
	assert_int_equal(MR_SACKETH_LEN, 24);
	/* the largest MetaRoCE headers: ACK and the atomic requests */
	assert_int_equal(mr_opcode_hdr_len(MR_OP_MRC_ACK), 12 + 20 + 4 + 24);
	assert_int_equal(mr_opcode_hdr_len(MR_OP_MRC_CMP_SWAP), 12 + 20 + 28);
	assert_int_equal(mr_opcode_hdr_len(MR_OP_MRC_WRITE_MIDDLE), 12 + 20 + 16);
	assert_int_equal(mr_opcode_hdr_len(MR_OP_MRC_READ_RESPONSE_FIRST), 12 + 20);
	/* The worst case fits the public bound. */
	for (unsigned int op = 0; op < 256; op++)
		assert_true(mr_opcode_hdr_len((uint8_t)op) <= MR_ROCE_HDR_MAX_LEN);
}

/* Every supported opcode present, unsupported ones absent everywhere. */
static void test_presence(void **state)
{
	(void)state;
	for (unsigned int op = 0; op < 256; op++) {
		const struct mr_opcode_info *oi = mr_opcode_info((uint8_t)op);

		if (is_supported(op)) {
			assert_non_null(oi);
			assert_non_null(mr_opcode_name((uint8_t)op));
			assert_int_not_equal(mr_opcode_hdr_len((uint8_t)op), 0);
		} else {
			assert_null(oi);
			assert_null(mr_opcode_name((uint8_t)op));
			assert_int_equal(mr_opcode_hdr_len((uint8_t)op), 0);
		}
	}
}

/* Offsets strictly increase in wire order and the length is the sum of the present headers. */
static void test_offsets_and_lengths(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(supported); i++) {
		const struct mr_opcode_info *oi = mr_opcode_info(supported[i]);
		unsigned int sum = 0, next = 0;

		assert_true(oi->mask & MR_BTH_MASK);
		assert_int_equal(oi->offset[MR_HDR_BTH], 0);
		for (int t = 0; t < MR_HDR_PAYLOAD; t++) {
			if (!(oi->mask & MR_MASK(t))) {
				assert_int_equal(oi->offset[t], 0);
				continue;
			}
			/* each header starts where the previous one ended */
			assert_int_equal(oi->offset[t], next);
			next += mr_hdr_len_table[t];
			sum += mr_hdr_len_table[t];
		}
		assert_int_equal(oi->length, sum);
		assert_int_equal(oi->offset[MR_HDR_PAYLOAD], oi->length);
		assert_int_equal(mr_opcode_hdr_len(supported[i]), sum);
	}
}

static int popcount(uint32_t v) { return __builtin_popcount(v); }

static void test_flags(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(supported); i++) {
		uint8_t op = supported[i];
		const struct mr_opcode_info *oi = mr_opcode_info(op);
		uint32_t f = oi->flags, m = oi->mask;

		/* exactly one position in the message */
		assert_int_equal(popcount(f & (MR_OPF_FIRST | MR_OPF_MIDDLE | MR_OPF_LAST |
					      MR_OPF_ONLY)), 1);
		uint8_t base = mr_opcode_base(op);
		bool mrc = f & MR_OPF_MRC;

		/* exactly one service */
		assert_int_equal(popcount(f & (MR_OPF_RC | MR_OPF_UD | MR_OPF_CNP | MR_OPF_MRC)),
				 1);
		/* MetaRoCE: exactly the 0xC0 range, MRETH first after the BTH, the RC opcode's
		 * meaning (docs/metaroce-wire.md) */
		assert_int_equal(mrc, mr_opcode_is_metaroce(op));
		assert_int_equal(mrc, !!(m & MR_MRETH_MASK));
		if (mrc) {
			const struct mr_opcode_info *bi = mr_opcode_info(base);
			uint32_t keep = ~(uint32_t)(MR_OPF_RC | MR_OPF_MRC | MR_OPF_ACK);

			assert_non_null(bi);
			assert_true(bi->flags & MR_OPF_RC);
			assert_int_equal(mr_opcode_to_metaroce(base), op);
			assert_int_equal(f & keep, bi->flags & keep);
			assert_int_equal(oi->offset[MR_HDR_MRETH], MR_BTH_LEN);
			/* SACKETH in the ACK only, right after its AETH */
			assert_int_equal(!!(m & MR_SACKETH_MASK), base == MR_OP_RC_ACK);
			if (m & MR_SACKETH_MASK)
				assert_int_equal(oi->offset[MR_HDR_SACKETH],
						 oi->offset[MR_HDR_AETH] + MR_AETH_LEN);
			/* payload presence as in RC */
			assert_int_equal(m & MR_PAYLOAD_MASK, bi->mask & MR_PAYLOAD_MASK);
		} else {
			assert_false(m & MR_SACKETH_MASK);
			assert_int_equal(base, op);
		}
		assert_true(!(f & MR_OPF_REQ) || !(f & MR_OPF_RESP));
		/* opcode ranges: RC 0x00-0x1f, UD 0x60-0x7f (IBA 9.2 table 38), CNP 0x81 */
		if (f & MR_OPF_RC)
			assert_true(op <= 0x1f);
		if (f & MR_OPF_MRC)
			assert_true(op >= 0xc0 && op <= 0xdf);
		if (f & MR_OPF_UD) {
			assert_true(op >= 0x60 && op <= 0x7f);
			assert_true(m & MR_DETH_MASK);
		} else {
			assert_false(m & MR_DETH_MASK);
		}
		if (f & MR_OPF_CNP) {
			assert_int_equal(op, MR_OP_CNP);
			assert_int_equal(m, MR_BTH_MASK | MR_CNP_RSVD_MASK);
		}
		/* header presence follows meaning */
		assert_int_equal(!!(f & MR_OPF_IMM), !!(m & MR_IMMDT_MASK));
		assert_int_equal(!!(f & MR_OPF_INV), !!(m & MR_IETH_MASK));
		assert_int_equal(!!(f & MR_OPF_ACK), !!(m & MR_AETH_MASK));
		if (f & MR_OPF_ATOMIC)
			assert_true(m & ((f & MR_OPF_REQ) ? MR_ATMETH_MASK : MR_ATMACK_MASK));
		else
			assert_false(m & (MR_ATMETH_MASK | MR_ATMACK_MASK));
		/* RETH on WRITE first/only and on READ requests only (IBA 9.3.3.3.2); MetaRoCE
		 * puts it in every WRITE packet (per-packet placement) */
		assert_int_equal(!!(m & MR_RETH_MASK),
				 ((f & MR_OPF_WRITE) &&
				  (mrc || (f & (MR_OPF_FIRST | MR_OPF_ONLY)))) ||
				 ((f & MR_OPF_READ) && (f & MR_OPF_REQ)));
		/* AETH: RC read responses first/last/only; MetaRoCE read responses never */
		if ((f & MR_OPF_READ) && (f & MR_OPF_RESP))
			assert_int_equal(!!(m & MR_AETH_MASK),
					 !mrc && !(f & MR_OPF_MIDDLE));
		/* responses are RC read responses and acks */
		if (f & MR_OPF_RESP)
			assert_true((f & MR_OPF_READ) || (f & MR_OPF_ACK));
		/* payload-free opcodes */
		if (base == MR_OP_RC_READ_REQUEST || base == MR_OP_RC_ACK ||
		    base == MR_OP_RC_ATOMIC_ACK || base == MR_OP_RC_CMP_SWAP ||
		    base == MR_OP_RC_FETCH_ADD || op == MR_OP_CNP)
			assert_false(m & MR_PAYLOAD_MASK);
		else
			assert_true(m & MR_PAYLOAD_MASK);
		/* exactly one operation kind, except ACK (none) and CNP */
		if (base != MR_OP_RC_ACK && op != MR_OP_CNP)
			assert_int_equal(popcount(f & (MR_OPF_SEND | MR_OPF_WRITE | MR_OPF_READ |
						      MR_OPF_ATOMIC)), 1);
	}
}

static void test_names_unique(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(supported); i++)
		for (size_t j = i + 1; j < sizeof(supported); j++)
			assert_string_not_equal(mr_opcode_name(supported[i]),
						mr_opcode_name(supported[j]));
}

/* Length rules shared by builder and parser. */
static void test_check_len(void **state)
{
	const struct mr_opcode_info *ack = mr_opcode_info(MR_OP_RC_ACK);
	const struct mr_opcode_info *mid = mr_opcode_info(MR_OP_RC_SEND_MIDDLE);
	const struct mr_opcode_info *last = mr_opcode_info(MR_OP_RC_SEND_LAST);
	const struct mr_opcode_info *wonly = mr_opcode_info(MR_OP_RC_WRITE_ONLY);
	struct mr_roce_hdrs h = { 0 };

	(void)state;
	assert_int_equal(mr_opcode_check_len(ack, 0, 0, NULL), MR_PARSE_OK);
	assert_int_equal(mr_opcode_check_len(ack, 4, 0, NULL), MR_PARSE_BAD_LENGTH);
	assert_int_equal(mr_opcode_check_len(ack, 0, 1, NULL), MR_PARSE_BAD_PAD);
	assert_int_equal(mr_opcode_check_len(mid, 0, 0, NULL), MR_PARSE_BAD_LENGTH);
	assert_int_equal(mr_opcode_check_len(mid, 1023, 1, NULL), MR_PARSE_BAD_PAD);
	assert_int_equal(mr_opcode_check_len(mid, 1024, 0, NULL), MR_PARSE_OK);
	assert_int_equal(mr_opcode_check_len(last, 0, 0, NULL), MR_PARSE_OK);
	assert_int_equal(mr_opcode_check_len(last, 0, 3, NULL), MR_PARSE_BAD_PAD);
	assert_int_equal(mr_opcode_check_len(last, 5, 3, NULL), MR_PARSE_OK);
	assert_int_equal(mr_opcode_check_len(last, 5, 2, NULL), MR_PARSE_BAD_PAD);
	assert_int_equal(mr_opcode_check_len(last, 4097, 3, NULL), MR_PARSE_BAD_LENGTH);
	h.reth.dlen = 8;
	assert_int_equal(mr_opcode_check_len(wonly, 8, 0, &h), MR_PARSE_OK);
	assert_int_equal(mr_opcode_check_len(wonly, 4, 0, &h), MR_PARSE_BAD_LENGTH);
}

/* MetaRoCE keeps the RC length rules and adds offset + payload <= msg_len, without 32-bit
 * wrap-around. */
static void test_check_len_metaroce(void **state)
{
	const struct mr_opcode_info *mid = mr_opcode_info(MR_OP_MRC_WRITE_MIDDLE);
	const struct mr_opcode_info *last = mr_opcode_info(MR_OP_MRC_SEND_LAST);
	const struct mr_opcode_info *wonly = mr_opcode_info(MR_OP_MRC_WRITE_ONLY);
	const struct mr_opcode_info *ack = mr_opcode_info(MR_OP_MRC_ACK);
	struct mr_roce_hdrs h = { 0 };

	(void)state;
	h.mreth.offset = 1024;
	h.mreth.msg_len = 2048;
	assert_int_equal(mr_opcode_check_len(mid, 1024, 0, &h), MR_PARSE_OK);
	assert_int_equal(mr_opcode_check_len(mid, 0, 0, &h), MR_PARSE_BAD_LENGTH);
	assert_int_equal(mr_opcode_check_len(mid, 1020, 1, &h), MR_PARSE_BAD_PAD);
	h.mreth.msg_len = 2047;
	assert_int_equal(mr_opcode_check_len(mid, 1024, 0, &h), MR_PARSE_BAD_LENGTH);
	h.mreth.offset = 0xfffffffcu; /* offset + 4 wraps to 0 in 32 bits */
	h.mreth.msg_len = 0xffffffffu;
	assert_int_equal(mr_opcode_check_len(last, 3, 1, &h), MR_PARSE_OK);
	assert_int_equal(mr_opcode_check_len(last, 4, 0, &h), MR_PARSE_BAD_LENGTH);
	h.mreth.offset = 0;
	h.mreth.msg_len = 0;
	assert_int_equal(mr_opcode_check_len(last, 0, 0, &h), MR_PARSE_OK);
	assert_int_equal(mr_opcode_check_len(ack, 0, 0, &h), MR_PARSE_OK);
	assert_int_equal(mr_opcode_check_len(ack, 4, 0, &h), MR_PARSE_BAD_LENGTH);
	h.mreth.msg_len = 8;
	h.reth.dlen = 8;
	assert_int_equal(mr_opcode_check_len(wonly, 8, 0, &h), MR_PARSE_OK);
	h.reth.dlen = 9; /* WRITE ONLY: payload == RETH DMA length still holds */
	assert_int_equal(mr_opcode_check_len(wonly, 8, 0, &h), MR_PARSE_BAD_LENGTH);
}

/* The mapping helpers over the whole opcode byte. */
static void test_metaroce_mapping(void **state)
{
	(void)state;
	assert_int_equal(MR_OP_MRC_BASE, 0xc0);
	for (unsigned int op = 0; op < 256; op++) {
		bool in = op >= 0xc0 && op <= 0xdf;

		assert_int_equal(mr_opcode_is_metaroce((uint8_t)op), in);
		assert_int_equal(mr_opcode_base((uint8_t)op), in ? op - 0xc0 : op);
		assert_int_equal(mr_opcode_to_metaroce((uint8_t)op), op <= 0x1f ? op | 0xc0 : op);
		if (op <= 0x1f)
			assert_int_equal(mr_opcode_base(mr_opcode_to_metaroce((uint8_t)op)), op);
		/* a MetaRoCE opcode exists exactly when its RC opcode does */
		if (in)
			assert_int_equal(!!mr_opcode_info((uint8_t)op),
					 !!mr_opcode_info((uint8_t)(op - 0xc0)));
	}
	assert_int_equal(MR_OP_MRC_WRITE_FIRST, 0xc6);
	assert_int_equal(MR_OP_MRC_ACK, 0xd1);
	assert_string_equal(mr_opcode_name(MR_OP_MRC_WRITE_FIRST), "MRC_RDMA_WRITE_FIRST");
	assert_string_equal(mr_opcode_name(MR_OP_MRC_ACK), "MRC_ACKNOWLEDGE");
}

/* MRETH/SACKETH raw accessors: byte positions per docs/metaroce-wire.md, masks respected. */
static void test_metaroce_accessors(void **state)
{
	uint8_t m[MR_MRETH_LEN], s[MR_SACKETH_LEN], bm[16] = { 0 };

	(void)state;
	memset(m, 0xa5, sizeof(m));
	mr_mreth_set(m, 1, MR_MRETH_RETX | MR_MRETH_ECE, 0xfe, 0x01020304, 0x05060708,
		     0x090a0b0c, 0x0d0e0f10);
	static const uint8_t want_m[MR_MRETH_LEN] = {
		0x15, 0xfe, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
	};
	assert_memory_equal(m, want_m, sizeof(m));
	assert_int_equal(mr_mreth_ver(m), 1);
	assert_int_equal(mr_mreth_flags(m), 5);
	assert_int_equal(mr_mreth_path(m), 0xfe);
	assert_int_equal(mr_mreth_msg_seq(m), 0x01020304);
	assert_int_equal(mr_mreth_offset(m), 0x05060708);
	assert_int_equal(mr_mreth_msg_len(m), 0x090a0b0c);
	assert_int_equal(mr_mreth_ts(m), 0x0d0e0f10);
	mr_mreth_set(m, 0xff, 0xff, 0, 0, 0, 0, 0); /* nibbles masked */
	assert_int_equal(m[0], 0xff);
	assert_int_equal(mr_mreth_ver(m), 15);
	assert_int_equal(mr_mreth_flags(m), 15);

	memset(s, 0xa5, sizeof(s));
	mr_sack_set(bm, 0);
	mr_sack_set(bm, 9);
	mr_sack_set(bm, 127);
	mr_sack_set(bm, 128); /* out of range: ignored */
	mr_sacketh_set(s, 0x1abcdef, bm, 0xbeef);
	static const uint8_t want_s[MR_SACKETH_LEN] = {
		0, 0xab, 0xcd, 0xef, 0x80, 0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01,
		0xbe, 0xef, 0, 0,
	};
	assert_memory_equal(s, want_s, sizeof(s));
	assert_int_equal(mr_sacketh_base(s), 0xabcdef);
	assert_int_equal(mr_sacketh_ce_count(s), 0xbeef);
	for (unsigned int i = 0; i < 130; i++)
		assert_int_equal(mr_sack_test(mr_sacketh_bitmap(s), i),
				 i == 0 || i == 9 || i == 127);
}

/* Raw accessors: explicit masks keep neighbouring bits intact. */
static void test_raw_accessors(void **state)
{
	uint8_t bth[12];

	(void)state;
	memset(bth, 0xa5, sizeof(bth));
	mr_bth_set_psn(bth, 0x1234567); /* 25 bits: masked to 24 */
	assert_int_equal(mr_bth_psn(bth), 0x234567);
	assert_int_equal(bth[8], 0xa5);
	mr_bth_set_qpn(bth, 0xabcdef);
	assert_int_equal(mr_bth_qpn(bth), 0xabcdef);
	assert_int_equal(bth[4], 0xa5);
	mr_bth_set_flags(bth, true, false, 3, 0);
	assert_int_equal(bth[1], 0xb0);
	assert_true(mr_bth_se(bth));
	assert_false(mr_bth_mig(bth));
	assert_int_equal(mr_bth_pad(bth), 3);
	assert_int_equal(mr_bth_tver(bth), 0);
	mr_bth_set_pkey(bth, 0xffff);
	assert_int_equal(bth[2], 0xff);
	assert_int_equal(bth[3], 0xff);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_sizes),
		cmocka_unit_test(test_presence),
		cmocka_unit_test(test_offsets_and_lengths),
		cmocka_unit_test(test_flags),
		cmocka_unit_test(test_names_unique),
		cmocka_unit_test(test_check_len),
		cmocka_unit_test(test_check_len_metaroce),
		cmocka_unit_test(test_metaroce_mapping),
		cmocka_unit_test(test_metaroce_accessors),
		cmocka_unit_test(test_raw_accessors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
