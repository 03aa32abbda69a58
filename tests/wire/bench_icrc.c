/* SPDX-License-Identifier: MIT
 * ICRC and CRC-32 throughput on one core (not a test): bytes/s for 64 B .. 4 KiB frames of
 *   - memcpy (the floor for touching each byte once: the baseline of icrc_vs_memcpy),
 *   - our CRC-32 on each path this CPU runs (table, pclmul, vpclmul), the fused copy+CRC,
 *     and the whole ICRC of an IPv4 RoCE frame (mr_icrc_calc: masked head + rest),
 *   - DPDK's rte_net_crc_calc(RTE_NET_CRC32_ETH) (same polynomial, init and xorout) with the
 *     path EAL's default SIMD limit (256 bits) selects (SSE4.2/PCLMULQDQ), with its fastest
 *     (RTE_NET_CRC_AVX512, needing --force-max-simd-bitwidth=512) and its scalar one,
 *   - the carry-less multiplier's ceiling: the VPCLMULQDQ fold loop alone (four 512-bit
 *     accumulators, two products per 64 bytes, no reduction, not a CRC) over the same bytes,
 *     the most any CRC by folding could reach on this core;
 *   - the multiplier's bound for a whole CRC: every 64 bytes multiplied once (two VPCLMULQDQ,
 *     eight 64 x 64 products, as every CLMUL CRC must make: the fold above leaves its last
 *     four blocks unmultiplied), independent products XORed together, no reduction.
 * All in one process, interleaved: each repetition times every function once per size, and the
 * median over the repetitions is printed, so that the ratios compare figures taken under the
 * same load (the machine may be shared), and time is this thread's CPU time. Buffers are L1-resident (one source, one destination),
 * as DPDK's own CRC autotest does. Every function's CRC is checked against ours first.
 *
 * Output: a table, then "RESULT key value" lines (bench-perf.sh parses them).
 * Usage: bench_icrc [--quick] [--reps N] [--ms MS] [--no-dep]
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "wire/crc32_impl.h"
#include "wire/icrc.h"

#ifdef MR_BENCH_DPDK
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_net_crc.h>
#endif

#define MAXF 4096
#define MAXREPS 31

static const uint32_t sizes[] = { 64, 128, 256, 512, 1024, 1518, 2048, 4096 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static uint8_t src[MAXF + 64] __attribute__((aligned(64)));
static uint8_t dst[MAXF + 64] __attribute__((aligned(64)));
static volatile uint32_t sink;
static bool dep = true; /* --no-dep: see time_fn */

enum fn {
	F_MEMCPY,
	F_CRC_TABLE,
	F_CRC_PCLMUL,
	F_CRC_VPCLMUL,
	F_COPY_BEST,  /* fused copy + CRC, selected path */
	F_ICRC_TABLE, /* mr_icrc_calc on each path */
	F_ICRC_PCLMUL,
	F_ICRC_VPCLMUL,
	F_RTE_DEFAULT,
	F_RTE_AVX512,
	F_RTE_SCALAR,
	F_FOLD_BOUND, /* the fold loop alone (fold_bound) */
	F_MUL_BOUND,  /* every block multiplied once (mul_bound) */
	F_NR
};

static const char *const fn_names[F_NR] = {
	"memcpy", "crc32 table", "crc32 pclmul", "crc32 vpclmul", "copy+crc32 best",
	"ICRC table", "ICRC pclmul", "ICRC vpclmul", "rte_net_crc default(sse)",
	"rte_net_crc avx512", "rte_net_crc scalar", "clmul fold bound", "clmul bound",
};

static const char *const fn_keys[F_NR] = {
	"memcpy", "crc32_table", "crc32_pclmul", "crc32_vpclmul", "copy_crc32", "icrc_table",
	"icrc_pclmul", "icrc_vpclmul", "rte_net_crc_default", "rte_net_crc_avx512",
	"rte_net_crc_scalar", "clmul_fold_bound", "clmul_bound",
};

static bool avail[F_NR];
static enum mr_crc32_impl best_impl;

/* This thread's CPU time, not the wall clock: on a shared machine the time we are preempted
 * would otherwise count against whichever function was running. */
static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The frame: Ethernet + IPv4 + UDP + RoCE part + ICRC, len bytes in all. */
static uint32_t icrc_frame(uint32_t len)
{
	return mr_icrc_calc(src + 14, 20, false, len - 14 - 20 - 8 - 4);
}

#ifdef MR_BENCH_DPDK
static bool rte_ok;
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* The fold loop of a 512-bit CLMUL CRC and nothing else: the len / 256 whole 256-byte steps,
 * each folding four accumulators by 2048 bits (any constant: the multiplier's time does not
 * depend on it) into the next 256 bytes; a byte of the accumulators' XOR is returned. */
__attribute__((target("vpclmulqdq,avx512f"), noinline)) static uint32_t fold_bound(
	const uint8_t *p, uint32_t len)
{
	const __m512i k = _mm512_broadcast_i32x4(_mm_set_epi64x(0x1322d1430ll, 0x11542778all));
	__m512i a0 = _mm512_loadu_si512((const void *)p);
	__m512i a1 = _mm512_loadu_si512((const void *)(p + 64));
	__m512i a2 = _mm512_loadu_si512((const void *)(p + 128));
	__m512i a3 = _mm512_loadu_si512((const void *)(p + 192));

	/* Four named registers, not an array: GCC kept an array's accumulators on the stack. */
#define FOLD(a, off) \
	a = _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(a, k, 0x00), \
				      _mm512_clmulepi64_epi128(a, k, 0x11), \
				      _mm512_loadu_si512((const void *)(p + (off))), 0x96)
	for (uint32_t o = 256; o + 256 <= len; o += 256) {
		FOLD(a0, o);
		FOLD(a1, o + 64);
		FOLD(a2, o + 128);
		FOLD(a3, o + 192);
	}
#undef FOLD
	a0 = _mm512_xor_si512(_mm512_xor_si512(a0, a1), _mm512_xor_si512(a2, a3));
	return (uint32_t)_mm_cvtsi128_si32(_mm512_castsi512_si128(a0));
}

/* The products a whole CRC of len bytes needs and nothing else: each 64-byte block (the last
 * partial one too, as the CRC pads it) multiplied once by a constant, two VPCLMULQDQ, the
 * products XORed into four accumulators (no multiply waits on another). What remains of any
 * CLMUL CRC beyond this is the per-call reduction and the head. */
__attribute__((target("vpclmulqdq,avx512f"), noinline)) static uint32_t mul_bound(
	const uint8_t *p, uint32_t len)
{
	const __m512i k = _mm512_broadcast_i32x4(_mm_set_epi64x(0x1322d1430ll, 0x11542778all));
	__m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
	uint32_t o = 0;

#define MUL(a, q) \
	do { \
		const __m512i d_ = _mm512_loadu_si512((const void *)(q)); \
		a = _mm512_ternarylogic_epi64(a, _mm512_clmulepi64_epi128(d_, k, 0x00), \
					      _mm512_clmulepi64_epi128(d_, k, 0x11), 0x96); \
	} while (0)
	for (; o + 256 <= len; o += 256) {
		MUL(a0, p + o);
		MUL(a1, p + o + 64);
		MUL(a2, p + o + 128);
		MUL(a3, p + o + 192);
	}
	for (; o + 64 <= len; o += 64)
		MUL(a1, p + o);
	if (o < len && len >= 64) /* the partial last block: its 64 bytes ending at len */
		MUL(a2, p + len - 64);
#undef MUL
	a0 = _mm512_xor_si512(_mm512_xor_si512(a0, a1), _mm512_xor_si512(a2, a3));
	return (uint32_t)_mm_cvtsi128_si32(_mm512_castsi512_si128(a0));
}
#else
static uint32_t fold_bound(const uint8_t *p, uint32_t len)
{
	(void)p;
	(void)len;
	return 0;
}

static uint32_t mul_bound(const uint8_t *p, uint32_t len)
{
	(void)p;
	(void)len;
	return 0;
}
#endif

static void select_for(enum fn f)
{
	switch (f) {
	case F_CRC_TABLE:
	case F_ICRC_TABLE:
		mr_crc32_impl_set(MR_CRC32_TABLE);
		break;
	case F_CRC_PCLMUL:
	case F_ICRC_PCLMUL:
		mr_crc32_impl_set(MR_CRC32_PCLMUL);
		break;
	case F_CRC_VPCLMUL:
	case F_ICRC_VPCLMUL:
		mr_crc32_impl_set(MR_CRC32_VPCLMUL);
		break;
	default:
		mr_crc32_impl_set(best_impl);
		break;
	}
#ifdef MR_BENCH_DPDK
	if (f == F_RTE_DEFAULT)
		rte_net_crc_set_alg(RTE_NET_CRC_SSE42);
	else if (f == F_RTE_AVX512)
		rte_net_crc_set_alg(RTE_NET_CRC_AVX512);
	else if (f == F_RTE_SCALAR)
		rte_net_crc_set_alg(RTE_NET_CRC_SCALAR);
#endif
}

static uint32_t run_once(enum fn f, uint32_t len)
{
	switch (f) {
	case F_MEMCPY:
		memcpy(dst, src, len);
		return dst[len - 1];
	case F_CRC_TABLE:
	case F_CRC_PCLMUL:
	case F_CRC_VPCLMUL:
		return mr_crc32(0, src, len);
	case F_COPY_BEST:
		return mr_crc32_copy(0, dst, src, len);
	case F_ICRC_TABLE:
	case F_ICRC_PCLMUL:
	case F_ICRC_VPCLMUL:
		return icrc_frame(len);
	case F_FOLD_BOUND:
		return fold_bound(src, len);
	case F_MUL_BOUND:
		return mul_bound(src, len);
#ifdef MR_BENCH_DPDK
	case F_RTE_DEFAULT:
	case F_RTE_AVX512:
	case F_RTE_SCALAR:
		return rte_net_crc_calc(src, len, RTE_NET_CRC32_ETH);
#endif
	default:
		return 0;
	}
}

/* Bytes per second of f at len, timed for about secs. */
static double time_fn(enum fn f, uint32_t len, double secs)
{
	uint64_t n = 0;
	/* The clock is CPU time, a system call (about 1.2 us in this guest: as long as memcpy
	 * takes over 100 KiB). Until session 24 it was read every 256 KiB, which took 40% off
	 * memcpy's figure and 20% off the CRCs'. Now the batch doubles until one takes at least a
	 * sixteenth of the cell, so that the reads cost well under 1%. */
	uint32_t acc = 0, batch = 1;
	double t0, t;

	select_for(f);
	t0 = now_s();
	do {
		for (uint32_t i = 0; i < batch; i++) {
			acc += run_once(f, len);
			/* A data dependence between iterations, as a packet loop has (the next
			 * buffer's header is read after this one's CRC): stops the compiler from
			 * hoisting, and keeps memcpy from being deleted. Into the first byte every
			 * function reads: src[0] (memcpy, CRC-32, rte_net_crc) and src[14] (the
			 * ICRC starts at the IP header). Until session 22 only src[0] was written,
			 * so the ICRC alone overlapped one call with the next: at 64-512 B that
			 * flattered it (ICRC / rte_net_crc at 64 B 1.9 against 1.1 now); at the
			 * 1-4 KiB the ratios are formed from it made no difference. --no-dep: no
			 * dependence at all (every function overlaps its calls). */
			if (dep) {
				src[0] ^= (uint8_t)acc;
				src[14] ^= (uint8_t)acc;
			} else {
				__asm__ volatile("" ::: "memory");
			}
		}
		n += batch;
		t = now_s() - t0;
		if (t < secs / 16 && batch < (1u << 24))
			batch *= 2;
	} while (t < secs);
	sink += acc;
	/* The fold bound covers whole 256-byte steps only: its bytes/s counts those. */
	return (double)n * (f == F_FOLD_BOUND ? len & ~255u : len) / t;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Every function agrees with the CRC it claims to compute, on every size. */
static int check_values(void)
{
	for (size_t s = 0; s < NSIZES; s++) {
		uint32_t len = sizes[s], want;

		mr_crc32_impl_set(MR_CRC32_TABLE);
		want = mr_crc32(0, src, len);
		for (int f = F_CRC_TABLE; f < F_NR; f++) {
			uint32_t got;

			if (!avail[f] || (f >= F_ICRC_TABLE && f <= F_ICRC_VPCLMUL) ||
			    f == F_FOLD_BOUND || f == F_MUL_BOUND)
				continue;
			select_for((enum fn)f);
			got = run_once((enum fn)f, len);
			if (got != want) {
				fprintf(stderr, "%s: CRC %08x at %u bytes, expected %08x\n",
					fn_names[f], got, len, want);
				return -1;
			}
		}
		mr_crc32_impl_set(MR_CRC32_TABLE);
		want = icrc_frame(len);
		for (int f = F_ICRC_PCLMUL; f <= F_ICRC_VPCLMUL; f++) {
			if (avail[f]) {
				select_for((enum fn)f);
				if (icrc_frame(len) != want) {
					fprintf(stderr, "%s: ICRC differs at %u\n", fn_names[f], len);
					return -1;
				}
			}
		}
	}
	return 0;
}

#ifdef MR_BENCH_DPDK
static void eal_start(const char *argv0)
{
	char prefix[64];
	char *eal_argv[] = {
		(char *)(uintptr_t)argv0, (char *)(uintptr_t)"--no-pci",
		(char *)(uintptr_t)"--no-huge", (char *)(uintptr_t)"--no-telemetry",
		(char *)(uintptr_t)"--no-shconf", prefix, (char *)(uintptr_t)"-m",
		(char *)(uintptr_t)"64", (char *)(uintptr_t)"--log-level=lib.eal:error",
		/* rte_net_crc's AVX-512 path is refused below a 512-bit SIMD limit; EAL's
		 * default on x86 is 256. */
		(char *)(uintptr_t)"--force-max-simd-bitwidth=512",
	};
	int cpu = sched_getcpu();
	char lcores[32];
	char *argv2[sizeof(eal_argv) / sizeof(eal_argv[0]) + 2];
	int n = (int)(sizeof(eal_argv) / sizeof(eal_argv[0]));

	snprintf(prefix, sizeof(prefix), "--file-prefix=mrbicrc%ld", (long)getpid());
	/* One core: the one we run on (the caller may have pinned us with taskset). */
	snprintf(lcores, sizeof(lcores), "%d", cpu < 0 ? 0 : cpu);
	memcpy(argv2, eal_argv, sizeof(eal_argv));
	argv2[n] = (char *)(uintptr_t)"-l";
	argv2[n + 1] = lcores;
	if (rte_eal_init(n + 2, argv2) < 0) {
		fprintf(stderr, "note: rte_eal_init failed (%s): no rte_net_crc figures\n",
			rte_strerror(rte_errno));
		return;
	}
	rte_ok = true;
}
#endif

int main(int argc, char **argv)
{
	static double samples[F_NR][NSIZES][MAXREPS];
	double med[F_NR][NSIZES];
	int reps = 7;
	double ms = 20;
	bool quick = false;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0) {
			quick = true;
		} else if (strcmp(argv[i], "--no-dep") == 0) {
			dep = false;
		} else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
			reps = atoi(argv[++i]);
		} else if (strcmp(argv[i], "--ms") == 0 && i + 1 < argc) {
			ms = atof(argv[++i]);
		} else {
			fprintf(stderr, "usage: %s [--quick] [--reps N] [--ms MS] [--no-dep]\n",
				argv[0]);
			return 2;
		}
	}
	if (quick) {
		reps = 3;
		ms = 5;
	}
	if (reps < 1 || reps > MAXREPS || ms <= 0) {
		fprintf(stderr, "--reps 1..%d, --ms > 0\n", MAXREPS);
		return 2;
	}
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 2654435761u >> 13);
	/* An IPv4 header where the frame's IP header goes (only the ICRC's masking reads it). */
	src[14] = 0x45;

	best_impl = mr_crc32_impl_get();
	avail[F_MEMCPY] = avail[F_CRC_TABLE] = avail[F_ICRC_TABLE] = avail[F_COPY_BEST] = true;
	avail[F_CRC_PCLMUL] = avail[F_ICRC_PCLMUL] = mr_crc32_impl_ops(MR_CRC32_PCLMUL) != NULL;
	avail[F_CRC_VPCLMUL] = avail[F_ICRC_VPCLMUL] = mr_crc32_impl_ops(MR_CRC32_VPCLMUL) != NULL;
	avail[F_FOLD_BOUND] = avail[F_MUL_BOUND] = avail[F_CRC_VPCLMUL];
#ifdef MR_BENCH_DPDK
	eal_start(argv[0]);
	avail[F_RTE_DEFAULT] = avail[F_RTE_AVX512] = avail[F_RTE_SCALAR] = rte_ok;
#endif
	if (check_values() < 0)
		return 1;

	for (int r = 0; r < reps; r++)
		for (size_t s = 0; s < NSIZES; s++)
			for (int f = 0; f < F_NR; f++)
				if (avail[f])
					samples[f][s][r] = time_fn((enum fn)f, sizes[s], ms / 1000);
	for (int f = 0; f < F_NR; f++)
		for (size_t s = 0; s < NSIZES; s++)
			med[f][s] = avail[f] ? median(samples[f][s], reps) : 0;

	printf("# one core (cpu %d), L1-resident buffers, median of %d x %.0f ms CPU time per cell, "
	       "GB/s (1e9 bytes/s); selected path: %s\n", sched_getcpu(), reps, ms,
	       mr_crc32_impl_name(best_impl));
	printf("%-26s", "frame bytes");
	for (size_t s = 0; s < NSIZES; s++)
		printf("%8u", sizes[s]);
	printf("\n");
	for (int f = 0; f < F_NR; f++) {
		if (!avail[f])
			continue;
		printf("%-26s", fn_names[f]);
		for (size_t s = 0; s < NSIZES; s++)
			if (med[f][s] > 0)
				printf("%8.2f", med[f][s] / 1e9);
			else
				printf("%8s", "-");
		printf("\n");
	}
	{
		enum fn icrc = avail[F_ICRC_VPCLMUL] ? F_ICRC_VPCLMUL :
			       avail[F_ICRC_PCLMUL] ? F_ICRC_PCLMUL : F_ICRC_TABLE;
		const char *ratio_names[] = { "ICRC/memcpy", "ICRC/rte fastest",
					      "ICRC/rte default", "ICRC/ICRC table",
					      "ICRC/fold bound", "fold bound/memcpy",
					      "ICRC/clmul bound", "clmul bound/memcpy" };

		for (int k = 0; k < 8; k++) {
			printf("%-26s", ratio_names[k]);
			for (size_t s = 0; s < NSIZES; s++) {
				double base = k == 0 || k == 5 || k == 7 ? med[F_MEMCPY][s] :
					      k == 1 ? med[F_RTE_AVX512][s] :
					      k == 2 ? med[F_RTE_DEFAULT][s] :
					      k == 3 ? med[F_ICRC_TABLE][s] :
					      k == 6 ? med[F_MUL_BOUND][s] : med[F_FOLD_BOUND][s];
				double x = k == 5 ? med[F_FOLD_BOUND][s] :
					   k == 7 ? med[F_MUL_BOUND][s] : med[icrc][s];

				if (base > 0 && x > 0)
					printf("%8.2f", x / base);
				else
					printf("%8s", "-");
			}
			printf("\n");
		}
		for (int f = 0; f < F_NR; f++)
			for (size_t s = 0; s < NSIZES; s++)
				if (avail[f] && med[f][s] > 0)
					printf("RESULT %s_%u_Bps %.0f\n", fn_keys[f], sizes[s],
					       med[f][s]);
		printf("RESULT icrc_path %s\n", fn_keys[icrc]);
	}
	return sink == 0xdeadbeef; /* never: keeps sink alive */
}
