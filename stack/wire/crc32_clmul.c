/* SPDX-License-Identifier: MIT
 * CRC-32 (reflected 0xEDB88320) by carry-less-multiply folding, after Gopal et al., "Fast CRC
 * Computation for Generic Polynomials Using PCLMULQDQ Instruction" (Intel, 2009):
 *
 *   - the message is consumed in 128-bit lanes; a lane A followed, N bits later, by data B is
 *     replaced by A.lo * (x^(N+32) mod P) ^ A.hi * (x^(N-32) mod P) ^ B, which has the same
 *     remainder mod P (the constants are bit-reflected and shifted left by one, because a
 *     reflected 64x64 product comes out one bit low);
 *   - four lanes run side by side (N = 512 bits) so that the multiplier's latency is hidden,
 *     then are folded into one; the last 128 bits become a 96-bit remainder with one multiply
 *     and that goes through the slicing-by-8 tables (finish96) for the 32-bit register;
 *   - the VPCLMULQDQ path does the same on four 512-bit registers (sixteen lanes, N = 2048),
 *     and takes the accumulators and last blocks to one 96-bit remainder in independent
 *     multiplies (qprod).
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
#define K_2080 0x11542778aull /* fold by 2048 */
#define K_2016 0x1322d1430ull
#define K_32 0x1db710640ull   /* the last qword's place in a 96-bit remainder (kq) */

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

/* 96-bit remainder V (bits 0..95 of v, the rest zero; bit i stands for x^(95 - i)) -> 32-bit
 * CRC register, V(x) mod P: V's low 64 bits as eight message bytes through the slicing-by-8
 * tables (Kounavis and Berry, "A Systematic Approach to Building High Performance Software-Based
 * CRC Generators", 2005), XORed with V's high 32 bits, which stand where the register does. The
 * lookups run on the integer side, beside the multiplier: a 64-bit Barrett reduction is two
 * dependent multiplies (and equals four of these lookups). */
INLINE T_PCLMUL uint32_t finish96(__m128i v)
{
	const uint32_t(*t)[256] = (const uint32_t(*)[256])mr_crc32_tab;
	uint64_t lo = (uint64_t)_mm_cvtsi128_si64(v);

	return (uint32_t)_mm_extract_epi32(v, 2) ^ t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^
	       t[5][(lo >> 16) & 0xff] ^ t[4][(lo >> 24) & 0xff] ^ t[3][(lo >> 32) & 0xff] ^
	       t[2][(lo >> 40) & 0xff] ^ t[1][(lo >> 48) & 0xff] ^ t[0][lo >> 56];
}

/* 128-bit remainder -> 32-bit CRC register: its first qword times x^96 mod P (to the end, and
 * on by the register's 32 bits) is a 96-bit product; the last qword is already where that puts
 * it (q(x) x^32 is q in the top 64 bits of 96). */
INLINE T_PCLMUL uint32_t reduce128(__m128i x)
{
	const __m128i k = _mm_set_epi64x(0, (long long)K_96);

	return finish96(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_srli_si128(x, 8)));
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

INLINE T_VPCLMUL __m512i ld512(const uint8_t *p, uint8_t *dst)
{
	__m512i v = _mm512_loadu_si512((const void *)p);

	if (dst)
		_mm512_storeu_si512((void *)dst, v);
	return v;
}

/* kq[m][j] = x^(512 m + 64 (7 - j) + 32) mod P: qword j of a 512-bit register that stands m
 * blocks before the stream's last one, taken to the end of the stream and on by the 32 bits of
 * the CRC register, in the order _mm512_clmulepi64_epi128 pairs them with the register's qwords
 * (lane l holds qwords 2l and 2l + 1). From tests/wire/crc32_consts.py. */
static const uint64_t kq[8][8] __attribute__((aligned(64))) = {
	{ K_480, K_416, K_352, K_288, K_224, K_160, K_96, K_32 },
	{ 0x14a7fe880ull, 0x1ea89367eull, 0x1d7cfc6acull, 0x0df068dc2ull, 0x18cb44e58ull,
	  0x1c7569e54ull, 0x0ae0b5394ull, 0x154442bd4ull },
	{ 0x12e958ac4ull, 0x1816ab61cull, 0x10aae2566ull, 0x0e3543be0ull, 0x14b57d3f0ull,
	  0x1fdc60a7cull, 0x03f41287aull, 0x1e88ef372ull },
	{ 0x1322d1430ull, 0x1db06f64cull, 0x1c47d2a9cull, 0x19159bb02ull, 0x125f17dfcull,
	  0x1b35adb0eull, 0x1e7146aacull, 0x1821d8bc0ull },
	{ 0x115b87256ull, 0x032b0733cull, 0x0ff6f2fc2ull, 0x1f7228078ull, 0x1aaa44c18ull,
	  0x0a749e894ull, 0x16269a506ull, 0x11542778aull },
	{ 0x0d31343eaull, 0x07eaed122ull, 0x09b9bdbd0ull, 0x11e6a95a2ull, 0x12af2c15aull,
	  0x1ad568056ull, 0x1c712203aull, 0x00e9bd5ccull },
	{ 0x0cd669a40ull, 0x13484efdcull, 0x0f9d9c7eeull, 0x04b700aa8ull, 0x0eea395c4ull,
	  0x150fc8004ull, 0x04470ac44ull, 0x1f79525b0ull },
	{ 0x1d741f35cull, 0x0398e2ff2ull, 0x1cf247394ull, 0x119adc226ull, 0x145972f08ull,
	  0x144c76d92ull, 0x1b631f204ull, 0x0ad0d2bb2ull },
};

/* The 512 bits of v, m blocks before the last one, as four 96-bit products (one per lane) whose
 * sum is congruent to their share of the CRC register: each qword times its kq constant (64 x 33
 * bits), eight multiplies in two instructions. */
INLINE T_VPCLMUL __m512i qprod(__m512i v, size_t m)
{
	const __m512i k = _mm512_load_si512((const void *)kq[m]);

	return _mm512_xor_si512(_mm512_clmulepi64_epi128(v, k, 0x00),
				_mm512_clmulepi64_epi128(v, k, 0x11));
}

/* Sum of qprod()s -> 32-bit CRC register. The CRC register of the stream's last blocks is the
 * sum over their qwords q of q(x) x^(distance to the end + 32) mod P, which the products already
 * are up to P: their four lanes' sum V (96 bits) is what remains (finish96). Every product is
 * one multiply deep. */
INLINE T_VPCLMUL uint32_t vpcl_finish(__m512i f)
{
	__m256i h = _mm256_xor_si256(_mm512_castsi512_si256(f), _mm512_extracti64x4_epi64(f, 1));

	return finish96(_mm_xor_si128(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1)));
}

static const uint8_t iota64[64] __attribute__((aligned(64))) = {
	0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
	22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43,
	44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63,
};

/* The first two blocks of the padded stream (z zero bytes, then p; a second one only if two):
 * the state added, the OR mask applied if given, copied to dst if given. The data is read where
 * it lies (a masked load: nothing before p is touched, AVX-512 suppresses faults on masked-out
 * bytes) and only the state and the OR mask, known before the data arrives, are moved by z with
 * byte permutes: the data's path to the first multiply is a load and one ternary logic op. The
 * state's four bytes lie in the first block, or run into the second when z > 60 (then there
 * is a second). */
INLINE T_VPCLMUL void vpcl_head(uint32_t state, const uint8_t *or64, const uint8_t *p,
				uint8_t *dst, size_t z, bool two, __m512i *z0, __m512i *z1)
{
	const __m512i iota = _mm512_load_si512((const void *)iota64);
	const __mmask64 k0 = ~0ull << z;
	const __m512i i0 = _mm512_sub_epi8(iota, _mm512_set1_epi8((char)z));
	const __m512i sv = _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)state));
	const __m512i zero = _mm512_setzero_si512();
	const __m512i m = or64 ? _mm512_loadu_si512((const void *)or64) : zero;
	/* p - z by integer arithmetic: a pointer before the buffer is not formed in C */
	__m512i d0 = _mm512_maskz_loadu_epi8(k0, (const void *)((uintptr_t)p - z));

	if (dst)
		_mm512_mask_storeu_epi8((void *)((uintptr_t)dst - z), k0, d0);
	/* (d | m) ^ s; m is zero without or64 */
	*z0 = _mm512_ternarylogic_epi64(d0, _mm512_maskz_permutexvar_epi8(k0, i0, m),
					_mm512_maskz_permutexvar_epi8(k0, i0, sv), 0x56);
	if (two) {
		const __m512i i1 = _mm512_add_epi8(iota, _mm512_set1_epi8((char)(64 - z)));

		*z1 = _mm512_ternarylogic_epi64(ld512(p + 64 - z, dst ? dst + 64 - z : NULL),
						_mm512_permutex2var_epi8(m, i1, zero),
						_mm512_permutex2var_epi8(sv, i1, zero), 0x56);
	}
}

/* 16..256 bytes (one to four padded blocks), each block multiplied straight to the end (qprod:
 * one multiply deep). Out of line: inlined, its code moved vpcl_run's loop and cost the
 * longer frames 2 %. */
static T_VPCLMUL __attribute__((noinline)) uint32_t vpcl_short(uint32_t state, const uint8_t *or64,
								const uint8_t *p, uint8_t *dst,
								size_t len)
{
	const size_t z = (0 - len) & 63;
	const size_t nb = (len + z) / 64;
	__m512i z0, z1, f;

	if (nb == 1) {
		vpcl_head(state, or64, p, dst, z, false, &z0, &z1);
		return vpcl_finish(qprod(z0, 0));
	}
	vpcl_head(state, or64, p, dst, z, true, &z0, &z1);
	p += 128 - z;
	dst = dst ? dst + 128 - z : NULL;
	f = _mm512_xor_si512(qprod(z0, nb - 1), qprod(z1, nb - 2));
	for (size_t i = 0; i + 2 < nb; i++)
		f = _mm512_xor_si512(f, qprod(ld512(p + 64 * i, dst ? dst + 64 * i : NULL), nb - 3 - i));
	return vpcl_finish(f);
}

/* The raw register's CRC does not change when zeros are put in front of the message once the
 * state is added into its first bytes (a zero register stays zero), so from 16 bytes on the
 * message is taken as z = -len mod 64 zero bytes and then the message: whole 64-byte blocks
 * only, and no partial block at the end to shuffle in. Up to four blocks: vpcl_short. From
 * five on, four accumulators fold the stream by 2048 bits until the last 0..3 blocks. */
INLINE T_VPCLMUL uint32_t vpcl_run(uint32_t state, const uint8_t *or64, const uint8_t *p,
				   uint8_t *dst, size_t len)
{
	const __m512i k2048 = kvec(K_2080, K_2016);
	const size_t z = (0 - len) & 63;
	__m512i z0, z1, z2, z3;
	size_t rem;

	if (len < 16)
		return or64 ? pcl_run(state, or64, p, NULL, len) : pcl_run(state, NULL, p, dst, len);
	if (len <= 256)
		return vpcl_short(state, or64, p, dst, len);
	rem = (len + z) / 64 - 4; /* blocks after the first four */
	vpcl_head(state, or64, p, dst, z, true, &z0, &z1);
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
	/* The k (0..3) blocks left and the four accumulators, each multiplied by its distance to
	 * the end in independent multiplies (qprod). */
	{
		const size_t k = rem;
		__m512i f = _mm512_ternarylogic_epi64(qprod(z0, 3 + k), qprod(z1, 2 + k),
						      qprod(z2, 1 + k), 0x96);

		f = _mm512_xor_si512(f, qprod(z3, k));
		for (size_t i = 0; i < k; i++)
			f = _mm512_xor_si512(f, qprod(ld512(p + 64 * i, dst ? dst + 64 * i : NULL),
						      k - 1 - i));
		return vpcl_finish(f);
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
