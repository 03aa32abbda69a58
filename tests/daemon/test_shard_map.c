/* SPDX-License-Identifier: MIT
 * metaroced QP sharding's pure logic (apps/metaroced/shard_map.c): QPN ranges per shard, the
 * BTH DestQP / destination GID peeks on well-formed, truncated and odd frames (every truncation
 * length is tried on an exact-size heap copy, so ASan catches any read past the frame), and
 * session placement.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "apps/metaroced/shard_map.h"

static void test_map_ranges(void **state)
{
	struct mr_shard_map m;

	(void)state;
	assert_int_equal(mr_shard_map_init(&m, 17, 1024, 2), 0);
	assert_int_equal(mr_shard_first_qpn(&m, 0), 17);
	assert_int_equal(mr_shard_first_qpn(&m, 1), 1041);
	assert_int_equal(mr_shard_of_qpn(&m, 17), 0);
	assert_int_equal(mr_shard_of_qpn(&m, 1040), 0);
	assert_int_equal(mr_shard_of_qpn(&m, 1041), 1);
	assert_int_equal(mr_shard_of_qpn(&m, 2064), 1);
	/* Outside every range: shard 0 parses and counts them (QP1, unknown QPs). */
	assert_int_equal(mr_shard_of_qpn(&m, 1), 0);
	assert_int_equal(mr_shard_of_qpn(&m, 16), 0);
	assert_int_equal(mr_shard_of_qpn(&m, 2065), 0);
	assert_int_equal(mr_shard_of_qpn(&m, 0xffffff), 0);
	assert_int_equal(mr_shard_of_qpn(&m, UINT32_MAX), 0);
	/* One shard: everything is shard 0's. */
	assert_int_equal(mr_shard_map_init(&m, 17, 1024, 1), 0);
	assert_int_equal(mr_shard_of_qpn(&m, 5000), 0);
	/* 16 shards of 2^20 QPs starting at 17 do not fit in a 24-bit QPN. */
	assert_int_equal(mr_shard_map_init(&m, 17, 1u << 20, 16), -ERANGE);
	assert_int_equal(mr_shard_map_init(&m, 17, (1u << 20) - 2, 16), 0);
	assert_int_equal(mr_shard_of_qpn(&m, 17 + 15 * ((1u << 20) - 2)), 15);
	assert_int_equal(mr_shard_map_init(&m, 17, 0, 2), -EINVAL);
	assert_int_equal(mr_shard_map_init(&m, 17, 8, 0), -EINVAL);
	assert_int_equal(mr_shard_map_init(&m, 1, 8, 2), -EINVAL);
	assert_int_equal(mr_shard_map_init(NULL, 17, 8, 2), -EINVAL);
}

/* A RoCE v2 frame: Ethernet [+ 802.1Q] / IPv4 or IPv6 / UDP 4791 / BTH / 4 payload / ICRC. */
static size_t roce_frame(uint8_t *f, bool vlan, bool v6, uint32_t dqpn)
{
	size_t o = 12;

	memset(f, 0, 128);
	memset(f, 0x02, 12);
	if (vlan) {
		f[o++] = 0x81, f[o++] = 0x00, f[o++] = 0x00, f[o++] = 0x05;
	}
	if (!v6) {
		f[o++] = 0x08, f[o++] = 0x00;
		f[o] = 0x45;
		f[o + 6] = 0x40;         /* DF */
		f[o + 8] = 64;
		f[o + 9] = 17;
		f[o + 12] = 198, f[o + 13] = 18, f[o + 14] = 0, f[o + 15] = 2;
		f[o + 16] = 198, f[o + 17] = 18, f[o + 18] = 0, f[o + 19] = 1;
		o += 20;
	} else {
		f[o++] = 0x86, f[o++] = 0xdd;
		f[o] = 0x60;
		f[o + 6] = 17;
		f[o + 7] = 64;
		f[o + 8] = 0xfe, f[o + 9] = 0x80;
		f[o + 24] = 0x20, f[o + 25] = 0x01, f[o + 39] = 0x42;
		o += 40;
	}
	f[o + 2] = 4791 >> 8, f[o + 3] = 4791 & 0xff;
	o += 8;
	f[o] = 0x04;                     /* SEND_ONLY */
	f[o + 2] = 0xff, f[o + 3] = 0xff;
	f[o + 5] = (uint8_t)(dqpn >> 16), f[o + 6] = (uint8_t)(dqpn >> 8), f[o + 7] = (uint8_t)dqpn;
	o += 12 + 4 + 4;
	return o;
}

/* Every prefix of the frame, each in a heap block of exactly that size. Returns how many
 * prefixes peeked successfully (those must be the ones holding the whole BTH). */
static unsigned int peek_prefixes(const uint8_t *f, size_t len, uint32_t want, size_t need)
{
	unsigned int ok = 0;
	size_t n;

	for (n = 0; n <= len; n++) {
		uint8_t *c = malloc(n ? n : 1);
		uint32_t qpn = 0;
		int rc;

		assert_non_null(c);
		memcpy(c, f, n);
		rc = mr_shard_peek_dqpn(c, (uint32_t)n, &qpn);
		if (n < need) {
			assert_int_equal(rc, -EMSGSIZE);
		} else {
			assert_int_equal(rc, 0);
			assert_int_equal(qpn, want);
			ok++;
		}
		free(c);
	}
	return ok;
}

static void test_peek_dqpn(void **state)
{
	uint8_t f[128];
	size_t len;

	(void)state;
	/* BTH ends 14 + 20 + 8 + 12 = 54 bytes in (58 tagged, 74 over IPv6). */
	len = roce_frame(f, false, false, 0x000411);
	assert_int_equal(peek_prefixes(f, len, 0x411, 54), len - 54 + 1);
	len = roce_frame(f, true, false, 0xabcdef);
	assert_int_equal(peek_prefixes(f, len, 0xabcdef, 58), len - 58 + 1);
	len = roce_frame(f, false, true, 0x123456);
	assert_int_equal(peek_prefixes(f, len, 0x123456, 74), len - 74 + 1);
	len = roce_frame(f, true, true, 17);
	assert_int_equal(peek_prefixes(f, len, 17, 78), len - 78 + 1);
}

static void test_peek_odd(void **state)
{
	uint8_t f[128], big[128];
	uint32_t qpn = 7;
	size_t len;

	(void)state;
	assert_int_equal(mr_shard_peek_dqpn(NULL, 10, &qpn), -EINVAL);
	len = roce_frame(f, false, false, 99);
	assert_int_equal(mr_shard_peek_dqpn(f, (uint32_t)len, NULL), -EINVAL);
	/* ARP */
	f[12] = 0x08, f[13] = 0x06;
	assert_int_equal(mr_shard_peek_dqpn(f, (uint32_t)len, &qpn), -ENOENT);
	/* another UDP port */
	len = roce_frame(f, false, false, 99);
	f[14 + 20 + 3] = 0xb6;
	assert_int_equal(mr_shard_peek_dqpn(f, (uint32_t)len, &qpn), -ENOENT);
	/* TCP */
	len = roce_frame(f, false, false, 99);
	f[14 + 9] = 6;
	assert_int_equal(mr_shard_peek_dqpn(f, (uint32_t)len, &qpn), -ENOENT);
	/* a fragment (offset) and a first fragment (MF) */
	len = roce_frame(f, false, false, 99);
	f[14 + 6] = 0x00, f[14 + 7] = 0x10;
	assert_int_equal(mr_shard_peek_dqpn(f, (uint32_t)len, &qpn), -ENOENT);
	f[14 + 6] = 0x20, f[14 + 7] = 0x00;
	assert_int_equal(mr_shard_peek_dqpn(f, (uint32_t)len, &qpn), -ENOENT);
	/* IHL below 5, a version that is not 4 */
	len = roce_frame(f, false, false, 99);
	f[14] = 0x44;
	assert_int_equal(mr_shard_peek_dqpn(f, (uint32_t)len, &qpn), -ENOENT);
	f[14] = 0x65;
	assert_int_equal(mr_shard_peek_dqpn(f, (uint32_t)len, &qpn), -ENOENT);
	/* IHL 15 (60-byte header) in a short frame: the UDP header would start past the end. */
	len = roce_frame(f, false, false, 99);
	f[14] = 0x4f;
	assert_int_equal(mr_shard_peek_dqpn(f, 14 + 20, &qpn), -EMSGSIZE);
	assert_int_equal(mr_shard_peek_dqpn(f, 14 + 60, &qpn), -EMSGSIZE);
	assert_int_equal(mr_shard_peek_dqpn(f, 14 + 60 + 19, &qpn), -EMSGSIZE);
	/* ... and with options actually present, the BTH is found after them */
	memset(big, 0, sizeof(big));
	memcpy(big, f, 14 + 20);
	memcpy(big + 14 + 60, f + 14 + 20, len - 14 - 20);
	assert_int_equal(mr_shard_peek_dqpn(big, (uint32_t)(len + 40), &qpn), 0);
	assert_int_equal(qpn, 99);
	/* IPv6 with an extension header first is not walked */
	len = roce_frame(f, false, true, 99);
	f[14 + 6] = 0;
	assert_int_equal(mr_shard_peek_dqpn(f, (uint32_t)len, &qpn), -ENOENT);
	/* the 802.1Q tag hides a non-IP ethertype */
	len = roce_frame(f, true, false, 99);
	f[16] = 0x88, f[17] = 0xcc;
	assert_int_equal(mr_shard_peek_dqpn(f, (uint32_t)len, &qpn), -ENOENT);
	assert_int_equal(mr_shard_peek_dqpn(f, 0, &qpn), -EMSGSIZE);
	assert_int_equal(qpn, 99); /* untouched by the failures above */
}

static void test_peek_dgid(void **state)
{
	static const uint8_t v4gid[16] = {[10] = 0xff, [11] = 0xff, 198, 18, 0, 1};
	static const uint8_t v6gid[16] = {0x20, 0x01, [15] = 0x42};
	uint8_t f[128], gid[16];
	size_t len, n;

	(void)state;
	len = roce_frame(f, false, false, 5);
	assert_int_equal(mr_shard_peek_dgid(f, (uint32_t)len, gid), 0);
	assert_memory_equal(gid, v4gid, 16);
	len = roce_frame(f, true, true, 5);
	assert_int_equal(mr_shard_peek_dgid(f, (uint32_t)len, gid), 0);
	assert_memory_equal(gid, v6gid, 16);
	for (n = 0; n < 18 + 40; n++) {
		uint8_t *c = malloc(n ? n : 1);

		assert_non_null(c);
		memcpy(c, f, n);
		assert_int_equal(mr_shard_peek_dgid(c, (uint32_t)n, gid), -EMSGSIZE);
		free(c);
	}
	f[16] = 0x08, f[17] = 0x06;
	assert_int_equal(mr_shard_peek_dgid(f, (uint32_t)len, gid), -ENOENT);
	assert_int_equal(mr_shard_peek_dgid(NULL, (uint32_t)len, gid), -EINVAL);
}

static void test_pick(void **state)
{
	uint32_t load[4] = {0, 0, 0, 0};

	(void)state;
	assert_int_equal(mr_shard_pick(load, 1), 0);
	assert_int_equal(mr_shard_pick(load, 4), 0);      /* tie: lowest id */
	load[0] = 1;
	assert_int_equal(mr_shard_pick(load, 4), 1);
	load[1] = 1, load[2] = 1;
	assert_int_equal(mr_shard_pick(load, 4), 3);
	load[3] = 2;
	assert_int_equal(mr_shard_pick(load, 4), 0);
	load[0] = 5, load[2] = 0;
	assert_int_equal(mr_shard_pick(load, 4), 2);
	/* Sessions placed one after another spread evenly. */
	memset(load, 0, sizeof(load));
	for (unsigned int k = 0; k < 40; k++)
		load[mr_shard_pick(load, 4)]++;
	for (unsigned int k = 0; k < 4; k++)
		assert_int_equal(load[k], 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_map_ranges),
		cmocka_unit_test(test_peek_dqpn),
		cmocka_unit_test(test_peek_odd),
		cmocka_unit_test(test_peek_dgid),
		cmocka_unit_test(test_pick),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
