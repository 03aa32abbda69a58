/* SPDX-License-Identifier: MIT
 * CRC-32 (reflected 0xEDB88320) by carry-less-multiply folding, after Gopal et al., "Fast CRC
 * Computation for Generic Polynomials Using PCLMULQDQ Instruction" (Intel, 2009):
 *
 *   - the message is consumed in 128-bit lanes; a lane A followed, N bits later, by data B is
 *     replaced by A.lo * (x^(N+32) mod P) ^ A.hi * (x^(N-32) mod P) ^ B, which has the same
 *     remainder mod P (the constants are bit-reflected and shifted left by one, because a
 *     reflected 64x64 product comes out one bit low);
 *   - four lanes run side by side (N = 512 bits) so that the multiplier's latency is hidden,
 *     then are folded into one, then 128 -> 64 bits and a Barrett reduction (u = x^64 / P)
 *     give the 32-bit register;
 *   - the VPCLMULQDQ path does the same on four 512-bit registers (sixteen lanes, N = 2048).
 *
 * Every constant below is x^n mod P for the n in its name, as printed by
 * tests/wire/crc32_consts.py (kept with the code so that they can be checked).
 *
 * In the PCLMULQDQ path, bytes after the last whole 16-byte block are folded in with one
 * shuffled block (tail_fold); the VPCLMULQDQ path has no tail (zeros in front: vpcl_run).
 * Messages shorter than 16 bytes go through the slicing-by-8 table. The functions are
 * compiled for their instruction sets with target attributes, so the build needs no -march and
 * the choice is made at run time (icrc.c).
 */
#include <string.h>

#include "wire/crc32_impl.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define K_544 0x154442bd4ull  /* fold by 512 bits, low qword */
#define K_480 0x1c6e41596ull  /* fold by 512 bits, high qword */
#define K_160 0x1751997d0ull  /* fold by 128 */
#define K_96 0x0ccaa009eull
#define K_288 0x0f1da05aaull  /* fold by 256 */
#define K_224 0x15a546366ull
#define K_416 0x03db1ecdcull  /* fold by 384 */
#define K_352 0x174359406ull
#define K_64 0x163cd6124ull   /* 96 -> 64 bits */
#define K_1056 0x1e88ef372ull /* fold by 1024 */
#define K_992 0x14a7fe880ull
#define K_1568 0x1821d8bc0ull /* fold by 1536 */
#define K_1504 0x12e958ac4ull
#define K_2080 0x11542778aull /* fold by 2048 */
#define K_2016 0x1322d1430ull
#define K_2592 0x00e9bd5ccull /* fold by 2560 */
#define K_2528 0x115b87256ull
#define K_3104 0x1f79525b0ull /* fold by 3072 */
#define K_3040 0x0d31343eaull
/* x^(32 (16 - i)) mod P for dword i of the last 512-bit register (vpcl_reduce512) */
#define K_32 0x1db710640ull
#define K_128 0x140d44a2eull
#define K_192 0x065673b46ull
#define K_256 0x1dac4fb5cull
#define K_320 0x14e01d2d4ull
#define K_384 0x02a283862ull
#define K_448 0x1b2bdfa4cull
#define K_512 0x111a288ceull
#define BARRETT_P 0x1db710641ull /* P, reflected, 33 bits */
#define BARRETT_U 0x1f7011641ull /* floor(x^64 / P), reflected */

#define T_PCLMUL __attribute__((target("pclmul,sse4.1")))
#define T_VPCLMUL \
	__attribute__((target("vpclmulqdq,avx512f,avx512bw,avx512vl,avx512vbmi,pclmul,sse4.1")))
#define INLINE static inline __attribute__((always_inline))

/* ---- 128-bit (PCLMULQDQ) ---- */

INLINE T_PCLMUL __m128i fold128(__m128i x, __m128i k)
{
	return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

/* Load 16 bytes and, when copying, store them at the same offset in dst. */
INLINE T_PCLMUL __m128i ld128(const uint8_t *p, uint8_t *dst)
{
	__m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);

	if (dst)
		_mm_storeu_si128((__m128i *)(void *)dst, v);
	return v;
}

/* Four lanes (x0 first in the message) into one: x0 is 384 bits ahead of x3, x1 256, x2 128. */
INLINE T_PCLMUL __m128i merge4(__m128i x0, __m128i x1, __m128i x2, __m128i x3)
{
	x3 = _mm_xor_si128(x3, fold128(x0, _mm_set_epi64x((long long)K_352, (long long)K_416)));
	x3 = _mm_xor_si128(x3, fold128(x1, _mm_set_epi64x((long long)K_224, (long long)K_288)));
	return _mm_xor_si128(x3, fold128(x2, _mm_set_epi64x((long long)K_96, (long long)K_160)));
}

/* 64-bit remainder (bits 0..63 of x, the rest zero) -> 32-bit CRC register, by Barrett:
 * q = floor(x / P) via u, remainder = x - q * P. */
INLINE T_PCLMUL uint32_t barrett(__m128i x)
{
	const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
	const __m128i poly = _mm_set_epi64x((long long)BARRETT_U, (long long)BARRETT_P);
	__m128i t;

	t = _mm_clmulepi64_si128(_mm_and_si128(x, mask32), poly, 0x10);
	t = _mm_clmulepi64_si128(_mm_and_si128(t, mask32), poly, 0x00);
	x = _mm_xor_si128(x, t);
	return (uint32_t)_mm_extract_epi32(x, 1);
}

/* 128-bit remainder -> 32-bit CRC register. */
INLINE T_PCLMUL uint32_t reduce128(__m128i x)
{
	const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
	const __m128i k = _mm_set_epi64x((long long)K_96, (long long)K_160);
	__m128i t;

	/* 128 -> 96: low qword times x^96 mod P, added to the high qword. */
	x = _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x10), _mm_srli_si128(x, 8));
	/* 96 -> 64: low dword times x^64 mod P. */
	t = _mm_srli_si128(x, 4);
	x = _mm_clmulepi64_si128(_mm_and_si128(x, mask32), _mm_set_epi64x(0, (long long)K_64),
				 0x00);
	return barrett(_mm_xor_si128(x, t));
}

/* pshufb/blend controls indexed by the tail length r (1..15): shift_tbl + r moves byte i to
 * i + 16 - r (0x80 clears), shift_tbl + 16 + r moves byte i + r to i, blend_tbl + r selects
 * bytes 16 - r..15. */
static const uint8_t shift_tbl[48] __attribute__((aligned(16))) = {
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	0x80, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0x80, 0x80, 0x80, 0x80, 0x80,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
};
static const uint8_t blend_tbl[32] __attribute__((aligned(16))) = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
};

/* The last r (1..15) bytes of the message after the 128-bit remainder x, without the table:
 * the message's last 16 bytes form a new block C = x[r..15] . tail[0..r-1], and x[0..r-1] is
 * what lies one block before C, so the remainder becomes fold128(x[0..r-1] moved up) ^ C.
 * last16 holds the 16 bytes ending at the tail's end (its first 16 - r bytes are ignored). */
INLINE T_PCLMUL __m128i tail_fold(__m128i x, __m128i last16, size_t r)
{
	const __m128i k128 = _mm_set_epi64x((long long)K_96, (long long)K_160);
	__m128i up = _mm_loadu_si128((const __m128i *)(const void *)(shift_tbl + r));
	__m128i down = _mm_loadu_si128((const __m128i *)(const void *)(shift_tbl + 16 + r));
	__m128i sel = _mm_loadu_si128((const __m128i *)(const void *)(blend_tbl + r));
	__m128i c = _mm_blendv_epi8(_mm_shuffle_epi8(x, down), last16, sel);

	return _mm_xor_si128(fold128(_mm_shuffle_epi8(x, up), k128), c);
}

/* Finish: fold the tail (p, len < 16; the 16 bytes before p's end are readable when
 * back_ok), reduce, copy the tail when copying. */
INLINE T_PCLMUL uint32_t finish(__m128i x, const uint8_t *p, uint8_t *dst, size_t len,
				bool back_ok)
{
	__m128i last;

	if (len == 0)
		return reduce128(x);
	if (dst)
		memcpy(dst, p, len);
	if (back_ok) {
		last = _mm_loadu_si128((const __m128i *)(const void *)(p + len - 16));
	} else {
		uint8_t tmp[16];

		memcpy(tmp + 16 - len, p, len);
		last = _mm_loadu_si128((const __m128i *)(const void *)tmp);
	}
	return reduce128(tail_fold(x, last, len));
}

/* A stream of 16..63 bytes whose bytes are ORed with or64's (the ICRC of short packets, ACKs):
 * every load, the tail's overlapping one included, is ORed with the mask bytes at its offset. */
INLINE T_PCLMUL uint32_t pcl_or_short(uint32_t state, const uint8_t *or64, const uint8_t *p,
				      size_t len)
{
	const __m128i k128 = _mm_set_epi64x((long long)K_96, (long long)K_160);
	__m128i x = _mm_or_si128(ld128(p, NULL), ld128(or64, NULL));
	size_t o = 16;

	x = _mm_xor_si128(x, _mm_cvtsi32_si128((int)state));
	for (; len - o >= 16; o += 16)
		x = _mm_xor_si128(fold128(x, k128),
				  _mm_or_si128(ld128(p + o, NULL), ld128(or64 + o, NULL)));
	if (len > o)
		x = tail_fold(x, _mm_or_si128(ld128(p + len - 16, NULL),
					      ld128(or64 + len - 16, NULL)), len - o);
	return reduce128(x);
}

/* The stream is p[0..len), its first 64 bytes ORed with or64 if given (then len >= 16). */
INLINE T_PCLMUL uint32_t pcl_run(uint32_t state, const uint8_t *or64, const uint8_t *p,
				 uint8_t *dst, size_t len)
{
	const __m128i k512 = _mm_set_epi64x((long long)K_480, (long long)K_544);
	const __m128i k128 = _mm_set_epi64x((long long)K_96, (long long)K_160);
	__m128i x0, x1, x2, x3, x;
	if (or64 && len < 64)
		return pcl_or_short(state, or64, p, len);
	if (or64) {
		x0 = _mm_or_si128(ld128(p, NULL), ld128(or64, NULL));
		x1 = _mm_or_si128(ld128(p + 16, NULL), ld128(or64 + 16, NULL));
		x2 = _mm_or_si128(ld128(p + 32, NULL), ld128(or64 + 32, NULL));
		x3 = _mm_or_si128(ld128(p + 48, NULL), ld128(or64 + 48, NULL));
		p += 64;
		len -= 64;
	} else {
		if (len < 16) {
			if (dst)
				memcpy(dst, p, len);
			return mr_crc32_table_raw(state, p, len);
		}
		if (len < 64) {
			x = _mm_xor_si128(ld128(p, dst), _mm_cvtsi32_si128((int)state));
			p += 16;
			dst = dst ? dst + 16 : NULL;
			len -= 16;
			goto tail;
		}
		x0 = ld128(p, dst);
		x1 = ld128(p + 16, dst ? dst + 16 : NULL);
		x2 = ld128(p + 32, dst ? dst + 32 : NULL);
		x3 = ld128(p + 48, dst ? dst + 48 : NULL);
		p += 64;
		dst = dst ? dst + 64 : NULL;
		len -= 64;
	}
	x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int)state));
	while (len >= 64) {
		x0 = _mm_xor_si128(fold128(x0, k512), ld128(p, dst));
		x1 = _mm_xor_si128(fold128(x1, k512), ld128(p + 16, dst ? dst + 16 : NULL));
		x2 = _mm_xor_si128(fold128(x2, k512), ld128(p + 32, dst ? dst + 32 : NULL));
		x3 = _mm_xor_si128(fold128(x3, k512), ld128(p + 48, dst ? dst + 48 : NULL));
		p += 64;
		dst = dst ? dst + 64 : NULL;
		len -= 64;
	}
	x = merge4(x0, x1, x2, x3);
tail:
	while (len >= 16) {
		x = _mm_xor_si128(fold128(x, k128), ld128(p, dst));
		p += 16;
		dst = dst ? dst + 16 : NULL;
		len -= 16;
	}
	return finish(x, p, dst, len, true); /* at least 16 bytes of p consumed */
}

static T_PCLMUL uint32_t pcl_crc(uint32_t state, const uint8_t *p, size_t len)
{
	return pcl_run(state, NULL, p, NULL, len);
}

static T_PCLMUL uint32_t pcl_copy(uint32_t state, uint8_t *dst, const uint8_t *src, size_t len)
{
	return pcl_run(state, NULL, src, dst, len);
}

static T_PCLMUL uint32_t pcl_or64(uint32_t state, const uint8_t *or64, const uint8_t *p,
				  size_t len)
{
	return pcl_run(state, or64, p, NULL, len);
}

static const struct mr_crc32_ops pcl_ops = { pcl_crc, pcl_copy, pcl_or64 };

/* ---- 512-bit (VPCLMULQDQ) ---- */

INLINE T_VPCLMUL __m512i kvec(uint64_t lo, uint64_t hi)
{
	return _mm512_broadcast_i32x4(_mm_set_epi64x((long long)hi, (long long)lo));
}

/* fold(z, k) ^ b, the three-way XOR in one instruction. */
INLINE T_VPCLMUL __m512i fold512x(__m512i z, __m512i k, __m512i b)
{
	return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(z, k, 0x00),
					 _mm512_clmulepi64_epi128(z, k, 0x11), b, 0x96);
}

/* Fold-by-(512 m) constants, m = 0..6 (m = 0 unused), for the final merge of the four
 * accumulators and the last whole 64-byte blocks: every block folded straight to the end in
 * independent multiplies instead of one after the other. */
static const uint64_t k512_m[7][2] __attribute__((aligned(16))) = {
	{ 0, 0 }, { K_544, K_480 }, { K_1056, K_992 }, { K_1568, K_1504 }, { K_2080, K_2016 },
	{ K_2592, K_2528 }, { K_3104, K_3040 },
};
#define K512(m) _mm512_broadcast_i32x4(_mm_load_si128((const __m128i *)(const void *)k512_m[m]))

INLINE T_VPCLMUL __m512i ld512(const uint8_t *p, uint8_t *dst)
{
	__m512i v = _mm512_loadu_si512((const void *)p);

	if (dst)
		_mm512_storeu_si512((void *)dst, v);
	return v;
}

/* dword i of a 512-bit remainder stands 32 (15 - i) bits before its end: the constants that take
 * each (zero-extended to a qword) to the 64-bit remainder, x^(32 (16 - i)) mod P, in the order
 * of _mm512_cvtepu32_epi64 of the low and of the high half. */
static const uint64_t kdw[16] __attribute__((aligned(64))) = {
	K_512, K_480, K_448, K_416, K_384, K_352, K_320, K_288,
	K_256, K_224, K_192, K_160, K_128, K_96, K_64, K_32,
};

/* 512-bit remainder (the last four 16-byte blocks' worth, lane 3 last) -> 32-bit CRC register:
 * its sixteen dwords multiplied by their distances to the end in four independent multiplies,
 * summed into one 64-bit remainder, then Barrett. Three multiplies deep where the fold to 128
 * bits and reduce128 are five. */
INLINE T_VPCLMUL uint32_t vpcl_reduce512(__m512i z)
{
	__m512i lo = _mm512_cvtepu32_epi64(_mm512_castsi512_si256(z));
	__m512i hi = _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(z, 1));
	__m512i klo = _mm512_load_si512((const void *)kdw);
	__m512i khi = _mm512_load_si512((const void *)(kdw + 8));
	__m512i f = _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(lo, klo, 0x00),
					      _mm512_clmulepi64_epi128(lo, klo, 0x11),
					      _mm512_clmulepi64_epi128(hi, khi, 0x00), 0x96);
	__m256i h;

	f = _mm512_xor_si512(f, _mm512_clmulepi64_epi128(hi, khi, 0x11));
	h = _mm256_xor_si256(_mm512_castsi512_si256(f), _mm512_extracti64x4_epi64(f, 1));
	return barrett(_mm_xor_si128(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1)));
}

static const uint8_t iota64[64] __attribute__((aligned(64))) = {
	0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
	22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43,
	44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63,
};

/* The raw register's CRC does not change when zeros are put in front of the message once the
 * state is added into its first bytes (a zero register stays zero), so from 256 bytes on the
 * message is taken as z = -len mod 64 zero bytes and then the message: whole 64-byte blocks
 * only, and no partial block at the end to shuffle in. The padded blocks start z bytes before
 * p; the first one is read with those z bytes masked off. */
INLINE T_VPCLMUL uint32_t vpcl_run(uint32_t state, const uint8_t *or64, const uint8_t *p,
				   uint8_t *dst, size_t len)
{
	const __m512i k2048 = kvec(K_2080, K_2016);
	const size_t z = (0 - len) & 63;
	size_t rem;
	__m512i z0, z1, z2, z3, iota;

	if (len < 256)
		return or64 ? pcl_run(state, or64, p, NULL, len) : pcl_run(state, NULL, p, dst, len);
	rem = (len + z) / 64 - 4; /* blocks after the first four */
	/* The data of the first two padded blocks is read where it lies (a masked load: nothing
	 * before p is touched, AVX-512 suppresses faults on masked-out bytes) and only the state
	 * and the OR mask, known before the data arrives, are moved by z with byte permutes: the
	 * data's path to the first multiply is a load and one ternary logic op. */
	iota = _mm512_load_si512((const void *)iota64);
	{
		const __mmask64 k0 = ~0ull << z;
		const __m512i i0 = _mm512_sub_epi8(iota, _mm512_set1_epi8((char)z));
		const __m512i i1 = _mm512_add_epi8(iota, _mm512_set1_epi8((char)(64 - z)));
		const __m512i sv = _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)state));
		const __m512i zero = _mm512_setzero_si512();
		__m512i s0 = _mm512_maskz_permutexvar_epi8(k0, i0, sv);
		__m512i s1 = _mm512_permutex2var_epi8(sv, i1, zero);
		/* p - z by integer arithmetic: a pointer before the buffer is not formed in C */
		__m512i d0 = _mm512_maskz_loadu_epi8(k0, (const void *)((uintptr_t)p - z));
		__m512i d1 = _mm512_loadu_si512((const void *)(p + 64 - z));

		if (dst) {
			_mm512_mask_storeu_epi8((void *)((uintptr_t)dst - z), k0, d0);
			_mm512_storeu_si512((void *)(dst + 64 - z), d1);
		}
		if (or64) {
			__m512i m = _mm512_loadu_si512((const void *)or64);
			__m512i m0 = _mm512_maskz_permutexvar_epi8(k0, i0, m);
			__m512i m1 = _mm512_permutex2var_epi8(m, i1, zero);

			/* (d | m) ^ s */
			z0 = _mm512_ternarylogic_epi64(d0, m0, s0, 0x56);
			z1 = _mm512_ternarylogic_epi64(d1, m1, s1, 0x56);
		} else {
			z0 = _mm512_xor_si512(d0, s0);
			z1 = _mm512_xor_si512(d1, s1);
		}
	}
	p += 128 - z;
	dst = dst ? dst + 128 - z : NULL;
	z2 = ld512(p, dst);
	z3 = ld512(p + 64, dst ? dst + 64 : NULL);
	p += 128;
	dst = dst ? dst + 128 : NULL;
	while (rem >= 4) {
		z0 = fold512x(z0, k2048, ld512(p, dst));
		z1 = fold512x(z1, k2048, ld512(p + 64, dst ? dst + 64 : NULL));
		z2 = fold512x(z2, k2048, ld512(p + 128, dst ? dst + 128 : NULL));
		z3 = fold512x(z3, k2048, ld512(p + 192, dst ? dst + 192 : NULL));
		p += 256;
		dst = dst ? dst + 256 : NULL;
		rem -= 4;
	}
	/* The k (0..3) blocks left and the four accumulators, each folded by its distance to the
	 * last block in independent multiplies. */
	if (rem == 0)
		return vpcl_reduce512(fold512x(z0, K512(3), fold512x(z1, K512(2),
					       fold512x(z2, K512(1), z3))));
	{
		const size_t k = rem;
		__m512i acc = fold512x(z0, K512(3 + k), fold512x(z1, K512(2 + k),
				       fold512x(z2, K512(1 + k), fold512x(z3, K512(k),
				       ld512(p + 64 * (k - 1), dst ? dst + 64 * (k - 1) : NULL)))));

		for (size_t i = 0; i + 1 < k; i++)
			acc = fold512x(ld512(p + 64 * i, dst ? dst + 64 * i : NULL), K512(k - 1 - i),
				       acc);
		return vpcl_reduce512(acc);
	}
}

static T_VPCLMUL uint32_t vpcl_crc(uint32_t state, const uint8_t *p, size_t len)
{
	return vpcl_run(state, NULL, p, NULL, len);
}

static T_VPCLMUL uint32_t vpcl_copy(uint32_t state, uint8_t *dst, const uint8_t *src, size_t len)
{
	return vpcl_run(state, NULL, src, dst, len);
}

static T_VPCLMUL uint32_t vpcl_or64(uint32_t state, const uint8_t *or64, const uint8_t *p,
				    size_t len)
{
	return vpcl_run(state, or64, p, NULL, len);
}

static const struct mr_crc32_ops vpcl_ops = { vpcl_crc, vpcl_copy, vpcl_or64 };

const struct mr_crc32_ops *mr_crc32_pclmul_ops(void)
{
	__builtin_cpu_init();
	if (__builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1"))
		return &pcl_ops;
	return NULL;
}

const struct mr_crc32_ops *mr_crc32_vpclmul_ops(void)
{
	__builtin_cpu_init();
	/* libgcc's feature bits include the OS check (XCR0 saves the ZMM state). */
	if (mr_crc32_pclmul_ops() && __builtin_cpu_supports("vpclmulqdq") &&
	    __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vbmi"))
		return &vpcl_ops;
	return NULL;
}

#else /* not x86-64 GCC/clang: table only */

const struct mr_crc32_ops *mr_crc32_pclmul_ops(void)
{
	return NULL;
}

const struct mr_crc32_ops *mr_crc32_vpclmul_ops(void)
{
	return NULL;
}

#endif
