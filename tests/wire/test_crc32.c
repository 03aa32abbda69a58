/* SPDX-License-Identifier: MIT
 * Every CRC-32 path (slicing-by-8, PCLMULQDQ, VPCLMULQDQ; those this CPU runs) against a bitwise
 * reference written here from the definition: lengths 0..4200 at random alignments and seeds,
 * chained in random pieces, fused copy+CRC (bytes copied, nothing written outside dst), the
 * first-64-bytes-ORed entry, and the ICRC of IPv4/IPv6 packets (with and without options) against the
 * same reference over an explicitly masked copy. Also the standard check value and the run-time
 * selection API.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "wire/crc32_impl.h"
#include "wire/icrc.h"
#include "wire/roce_pkt.h"

#define MAXLEN 4200
#define SLACK 128

static uint64_t rng_state = 0x243f6a8885a308d3ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

/* zlib-style CRC-32, one bit at a time (reflected polynomial 0xEDB88320). */
static uint32_t ref_crc(uint32_t crc, const uint8_t *p, size_t n)
{
	uint32_t c = ~crc;

	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
	}
	return ~c;
}

static uint8_t src_buf[MAXLEN + 2 * SLACK], dst_buf[MAXLEN + 2 * SLACK];

static void fill_random(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rnd();
}

static void test_check_value(void **state)
{
	(void)state;
	for (int i = 0; i < MR_CRC32_NR_IMPLS; i++) {
		const struct mr_crc32_ops *ops = mr_crc32_impl_ops((enum mr_crc32_impl)i);

		if (!ops)
			continue;
		/* The catalogue check value of CRC-32/ISO-HDLC over "123456789". */
		assert_int_equal(~ops->crc(~0u, (const uint8_t *)"123456789", 9), 0xcbf43926u);
	}
	assert_int_equal(mr_crc32(0, "123456789", 9), 0xcbf43926u);
	assert_int_equal(mr_crc32(0x1234u, "", 0), 0x1234u);
}

/* Each path, each length, a random alignment and seed: equal to the reference. */
static void test_all_lengths(void **state)
{
	(void)state;
	fill_random(src_buf, sizeof(src_buf));
	for (int i = 0; i < MR_CRC32_NR_IMPLS; i++) {
		const struct mr_crc32_ops *ops = mr_crc32_impl_ops((enum mr_crc32_impl)i);

		if (!ops) {
			printf("# %s: not supported on this CPU, skipped\n",
			       mr_crc32_impl_name((enum mr_crc32_impl)i));
			continue;
		}
		for (size_t len = 0; len <= MAXLEN; len++) {
			size_t off = rnd() % SLACK;
			uint32_t seed = (uint32_t)rnd();
			uint32_t want = ref_crc(seed, src_buf + off, len);

			if (~ops->crc(~seed, src_buf + off, len) != want)
				fail_msg("%s: len %zu off %zu seed %08x", mr_crc32_impl_name(
					 (enum mr_crc32_impl)i), len, off, seed);
		}
	}
}

/* Fused copy: CRC right, every byte copied, the bytes around dst untouched. */
static void test_copy(void **state)
{
	(void)state;
	fill_random(src_buf, sizeof(src_buf));
	for (int i = 0; i < MR_CRC32_NR_IMPLS; i++) {
		const struct mr_crc32_ops *ops = mr_crc32_impl_ops((enum mr_crc32_impl)i);

		if (!ops)
			continue;
		for (size_t len = 0; len <= MAXLEN; len += 1 + (len > 600 ? rnd() % 23 : 0)) {
			size_t so = rnd() % SLACK, doff = rnd() % SLACK;
			uint32_t seed = (uint32_t)rnd();

			memset(dst_buf, 0xa5, sizeof(dst_buf));
			if (~ops->copy(~seed, dst_buf + doff, src_buf + so, len) !=
			    ref_crc(seed, src_buf + so, len))
				fail_msg("%s copy: len %zu", mr_crc32_impl_name((enum mr_crc32_impl)i),
					 len);
			assert_memory_equal(dst_buf + doff, src_buf + so, len);
			for (size_t k = 0; k < doff; k++)
				assert_int_equal(dst_buf[k], 0xa5);
			for (size_t k = doff + len; k < sizeof(dst_buf); k++)
				assert_int_equal(dst_buf[k], 0xa5);
		}
	}
}

/* The first 64 bytes (or fewer) ORed with a mask, the rest as is: as the reference over a masked copy. */
static void test_or64(void **state)
{
	uint8_t mask[64];

	(void)state;
	fill_random(src_buf, sizeof(src_buf));
	for (int i = 0; i < MR_CRC32_NR_IMPLS; i++) {
		const struct mr_crc32_ops *ops = mr_crc32_impl_ops((enum mr_crc32_impl)i);

		if (!ops)
			continue;
		for (size_t len = 16; len <= MAXLEN; len++) {
			size_t off = rnd() % SLACK;
			uint32_t seed = (uint32_t)rnd();
			uint32_t want;

			for (int k = 0; k < 64; k++)
				mask[k] = rnd() % 4 ? 0 : (uint8_t)rnd();
			memcpy(dst_buf, src_buf + off, len);
			for (size_t k = 0; k < 64 && k < len; k++)
				dst_buf[k] |= mask[k];
			want = ref_crc(seed, dst_buf, len);
			if (~ops->or64(~seed, mask, src_buf + off, len) != want)
				fail_msg("%s or64: len %zu", mr_crc32_impl_name((enum mr_crc32_impl)i),
					 len);
		}
	}
}

/* or64 on a stream that starts at a page's first byte after an inaccessible page, and on one
 * that ends at its page's last byte before another: no path reads outside the stream (the
 * VPCLMUL one reads its first block from before p, masked: AVX-512 masked loads neither touch
 * nor fault on masked bytes). */
static void test_or64_page_edges(void **state)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *map, *page, mask[64], ref[MAXLEN];

	(void)state;
	assert_true(pg >= 4096);
	map = mmap(NULL, (size_t)pg * 3, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(map != MAP_FAILED);
	page = map + pg;
	assert_int_equal(mprotect(map, (size_t)pg, PROT_NONE), 0);
	assert_int_equal(mprotect(page + pg, (size_t)pg, PROT_NONE), 0);
	fill_random(page, (size_t)pg);
	for (int k = 0; k < 64; k++)
		mask[k] = (uint8_t)(k % 5 ? 0 : 0xff);
	for (int i = 0; i < MR_CRC32_NR_IMPLS; i++) {
		const struct mr_crc32_ops *ops = mr_crc32_impl_ops((enum mr_crc32_impl)i);

		if (!ops)
			continue;
		for (size_t len = 16; len <= 4096 && len <= (size_t)pg; len++) {
			const uint8_t *at[2] = { page, page + pg - len };

			for (int e = 0; e < 2; e++) {
				uint32_t seed = (uint32_t)rnd();

				memcpy(ref, at[e], len);
				for (size_t k = 0; k < 64 && k < len; k++)
					ref[k] |= mask[k];
				if (~ops->or64(~seed, mask, at[e], len) != ref_crc(seed, ref, len))
					fail_msg("%s or64 at the page's %s: len %zu",
						 mr_crc32_impl_name((enum mr_crc32_impl)i),
						 e ? "end" : "start", len);
			}
		}
	}
	munmap(map, (size_t)pg * 3);
}

/* Chaining the public API over random pieces, with the selected path switched between pieces:
 * the register is the same whichever path computed a piece. */
static void test_chain_mixed(void **state)
{
	(void)state;
	fill_random(src_buf, sizeof(src_buf));
	for (int round = 0; round < 300; round++) {
		size_t len = rnd() % MAXLEN, done = 0;
		uint32_t crc = 0;

		while (done < len) {
			size_t piece = 1 + rnd() % (rnd() & 1 ? 40 : 900);

			if (piece > len - done)
				piece = len - done;
			while (mr_crc32_impl_set((enum mr_crc32_impl)(rnd() % MR_CRC32_NR_IMPLS)))
				;
			if (rnd() & 1)
				crc = mr_crc32(crc, src_buf + done, piece);
			else
				crc = mr_crc32_copy(crc, dst_buf + done, src_buf + done, piece);
			done += piece;
		}
		assert_int_equal(crc, ref_crc(0, src_buf, len));
	}
	/* Back to the automatic choice for the tests that follow. */
	for (int i = MR_CRC32_NR_IMPLS - 1; i >= 0; i--)
		if (mr_crc32_impl_set((enum mr_crc32_impl)i) == 0)
			break;
}

static void test_select(void **state)
{
	(void)state;
	assert_int_equal(mr_crc32_impl_set(MR_CRC32_NR_IMPLS), -ENOTSUP);
	assert_int_equal(mr_crc32_impl_set(MR_CRC32_TABLE), 0);
	assert_int_equal(mr_crc32_impl_get(), MR_CRC32_TABLE);
	assert_string_equal(mr_crc32_impl_name(MR_CRC32_TABLE), "table");
	assert_string_equal(mr_crc32_impl_name(MR_CRC32_NR_IMPLS), "invalid");
	/* The VPCLMUL path implies the PCLMUL one (it uses it for short buffers). */
	if (mr_crc32_impl_ops(MR_CRC32_VPCLMUL))
		assert_non_null(mr_crc32_impl_ops(MR_CRC32_PCLMUL));
	for (int i = MR_CRC32_NR_IMPLS - 1; i >= 0; i--)
		if (mr_crc32_impl_set((enum mr_crc32_impl)i) == 0)
			break;
	printf("# selected path: %s\n", mr_crc32_impl_name(mr_crc32_impl_get()));
}

/* Reference ICRC (A17.3.3): ones x 8, then the packet with the variant fields set to ones. */
static uint32_t ref_icrc(const uint8_t *ip, uint32_t iphl, bool ipv6, uint32_t roce_len)
{
	static const uint8_t ones[8] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	uint8_t *m = malloc(iphl + 8 + roce_len);
	uint32_t c;

	assert_non_null(m);
	memcpy(m, ip, iphl + 8 + roce_len);
	if (ipv6) {
		m[0] |= 0x0f;
		m[1] = m[2] = m[3] = 0xff;
		m[7] = 0xff;
	} else {
		m[1] = 0xff;
		m[8] = 0xff;
		m[10] = m[11] = 0xff;
	}
	m[iphl + 6] = m[iphl + 7] = 0xff;
	m[iphl + 8 + 4] = 0xff;
	c = ref_crc(ref_crc(0, ones, 8), m, iphl + 8 + roce_len);
	free(m);
	return c;
}

/* The ICRC through every path, IPv4 (with 0..40 bytes of options) and IPv6, every roce_len from
 * the BTH alone to 4200 bytes, also split into a head and a chained tail. */
static void test_icrc_paths(void **state)
{
	(void)state;
	fill_random(src_buf, sizeof(src_buf));
	for (int i = 0; i < MR_CRC32_NR_IMPLS; i++) {
		if (mr_crc32_impl_set((enum mr_crc32_impl)i))
			continue;
		for (uint32_t roce_len = MR_BTH_LEN; roce_len <= MAXLEN - 100; roce_len++) {
			bool ipv6 = rnd() & 1;
			uint32_t iphl = ipv6 ? 40 : 20 + 4 * (uint32_t)(rnd() % 11);
			const uint8_t *ip = src_buf + rnd() % SLACK;
			uint32_t want = ref_icrc(ip, iphl, ipv6, roce_len);
			uint32_t k = MR_BTH_LEN + (uint32_t)(rnd() % (roce_len - MR_BTH_LEN + 1));
			uint32_t split;

			if (mr_icrc_calc(ip, iphl, ipv6, roce_len) != want)
				fail_msg("%s icrc: v6 %d iphl %u roce_len %u",
					 mr_crc32_impl_name((enum mr_crc32_impl)i), ipv6, iphl, roce_len);
			/* Chained: the first k bytes of the RoCE part, then the rest copied. */
			split = mr_icrc_calc(ip, iphl, ipv6, k);
			split = mr_crc32_copy(split, dst_buf, ip + iphl + 8 + k, roce_len - k);
			assert_int_equal(split, want);
		}
	}
	for (int i = MR_CRC32_NR_IMPLS - 1; i >= 0; i--)
		if (mr_crc32_impl_set((enum mr_crc32_impl)i) == 0)
			break;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check_value),
		cmocka_unit_test(test_all_lengths),
		cmocka_unit_test(test_copy),
		cmocka_unit_test(test_or64),
		cmocka_unit_test(test_or64_page_edges),
		cmocka_unit_test(test_chain_mixed),
		cmocka_unit_test(test_select),
		cmocka_unit_test(test_icrc_paths),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
