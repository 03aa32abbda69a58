/* SPDX-License-Identifier: MIT
 * CRC-32 (zlib/Ethernet polynomial) implementations behind mr_crc32() and mr_crc32_copy(), and
 * the run-time choice between them. The public entry points are in wire/icrc.h; this header is
 * for the ICRC code, the tests that compare the paths and the benchmarks that time each one.
 *
 * All functions here work on the raw CRC register (already inverted: zlib's crc = ~state), so
 * that a caller can chain several pieces with one inversion at each end.
 */
#ifndef MR_WIRE_CRC32_IMPL_H
#define MR_WIRE_CRC32_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum mr_crc32_impl {
	MR_CRC32_TABLE,   /* slicing-by-8, portable */
	MR_CRC32_PCLMUL,  /* 4 x 128-bit carry-less-multiply folding (SSE4.1 + PCLMULQDQ) */
	MR_CRC32_VPCLMUL, /* 4 x 512-bit folding (AVX-512F/BW + VPCLMULQDQ) */
	MR_CRC32_NR_IMPLS
};

/* Raw-register primitives of one path. copy: dst receives src's len bytes (no overlap) while
 * the CRC is updated in the same pass. or64: CRC of p[0..len) (len >= 16) with its first
 * min(len, 64) bytes ORed with or64's: the ICRC's variant fields set to ones in registers, the packet
 * read once in place. */
struct mr_crc32_ops {
	uint32_t (*crc)(uint32_t state, const uint8_t *p, size_t len);
	uint32_t (*copy)(uint32_t state, uint8_t *dst, const uint8_t *src, size_t len);
	uint32_t (*or64)(uint32_t state, const uint8_t *or64, const uint8_t *p, size_t len);
};

/* The operations of impl, or NULL if this CPU (or this build) cannot run it. */
const struct mr_crc32_ops *mr_crc32_impl_ops(enum mr_crc32_impl impl);
const char *mr_crc32_impl_name(enum mr_crc32_impl impl);
/* The path mr_crc32()/mr_crc32_copy()/mr_icrc_calc() use now (the fastest supported one unless
 * MR_CRC32_IMPL=table|pclmul|vpclmul in the environment at start-up or mr_crc32_impl_set()
 * said otherwise). */
enum mr_crc32_impl mr_crc32_impl_get(void);
/* Select a path (tests, benchmarks). Not thread-safe with respect to concurrent CRC users:
 * call before the data path starts. 0, or -ENOTSUP if this CPU cannot run it. */
int mr_crc32_impl_set(enum mr_crc32_impl impl);

/* The slicing-by-8 table path (icrc.c), used for tails by the CLMUL paths. */
uint32_t mr_crc32_table_raw(uint32_t state, const uint8_t *p, size_t len);
/* Its tables (filled before main()): [k][b] is the raw CRC of byte b followed by k zero bytes.
 * The VPCLMULQDQ path reduces its last 96-bit remainder with them. */
extern uint32_t mr_crc32_tab[8][256];

/* CLMUL paths (crc32_clmul.c); NULL ops on CPUs or compilers without them. */
const struct mr_crc32_ops *mr_crc32_pclmul_ops(void);
const struct mr_crc32_ops *mr_crc32_vpclmul_ops(void);

#endif
