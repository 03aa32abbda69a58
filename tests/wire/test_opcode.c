/* SPDX-License-Identifier: MIT
 * Opcode table consistency (IBA 9.2 table 38, 9.3.3.3 header sizes, A17.9.3 CNP).
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
		/* exactly one service */
		assert_int_equal(popcount(f & (MR_OPF_RC | MR_OPF_UD | MR_OPF_CNP)), 1);
		assert_true(!(f & MR_OPF_REQ) || !(f & MR_OPF_RESP));
		/* opcode ranges: RC 0x00-0x1f, UD 0x60-0x7f (IBA 9.2 table 38), CNP 0x81 */
		if (f & MR_OPF_RC)
			assert_true(op <= 0x1f);
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
		/* RETH on WRITE first/only and on READ requests only (IBA 9.3.3.3.2) */
		assert_int_equal(!!(m & MR_RETH_MASK),
				 ((f & MR_OPF_WRITE) && (f & (MR_OPF_FIRST | MR_OPF_ONLY))) ||
				 ((f & MR_OPF_READ) && (f & MR_OPF_REQ)));
		/* responses are RC read responses and acks */
		if (f & MR_OPF_RESP)
			assert_true((f & MR_OPF_READ) || (f & MR_OPF_ACK));
		/* payload-free opcodes */
		if (op == MR_OP_RC_READ_REQUEST || op == MR_OP_RC_ACK ||
		    op == MR_OP_RC_ATOMIC_ACK || op == MR_OP_RC_CMP_SWAP ||
		    op == MR_OP_RC_FETCH_ADD || op == MR_OP_CNP)
			assert_false(m & MR_PAYLOAD_MASK);
		else
			assert_true(m & MR_PAYLOAD_MASK);
		/* exactly one operation kind, except ACK (none) and CNP */
		if (op != MR_OP_RC_ACK && op != MR_OP_CNP)
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
		cmocka_unit_test(test_raw_accessors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
