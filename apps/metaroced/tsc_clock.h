/* SPDX-License-Identifier: MIT
 * metaroced: the engine's clock, the TSC scaled to nanoseconds and kept on CLOCK_MONOTONIC.
 * Pure (the TSC and CLOCK_MONOTONIC readings are arguments) and DPDK-free, so that tests/daemon
 * drives it with a TSC that runs at another rate than calibrated, stops or jumps.
 *
 * Why: reading the TSC costs ~10 ns here against ~25 for clock_gettime on a paravirtualised
 * clock, and the engine reads the time several times per iteration. But a TSC scaled once by
 * DPDK's calibrated rate is only as good as that rate: in session 12 a memif blaster timed that
 * way, told to run 13 s, ran 11 minutes. An engine clock that ran slow by as much would stretch
 * every transport timer (ACK timeout, delayed ACK, pacing, TLP) by the same factor. So one
 * thread (shard 0's engine) compares the clock with CLOCK_MONOTONIC every few thousand
 * iterations (mr_tsc_clock_check) and, when they have drifted apart by more than
 * MR_TSC_CLOCK_TOL_NS, re-anchors it and re-measures the TSC's rate against CLOCK_MONOTONIC.
 * The clock never steps back: when the TSC ran fast, the clock keeps its lead (off, at most
 * the excess over one MR_TSC_CLOCK_RATE_MIN_NS interval) and only its rate is corrected.
 *
 * Readers on other threads (the other shards, the control thread) take a consistent anchor
 * with a sequence counter (seqlock); the writer is only ever one thread.
 */
#ifndef MR_DAEMON_TSC_CLOCK_H
#define MR_DAEMON_TSC_CLOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Drift between the clock and CLOCK_MONOTONIC (beyond the lead it keeps) that re-anchors it:
 * far above the calibration's error (DPDK's hz is good to ~1e-5: 1 us per 100 ms) and the
 * jitter of a clock_gettime on this host, far below any transport timer (ms). */
#define MR_TSC_CLOCK_TOL_NS 200000ull
/* The TSC's rate is re-measured over at least this long, so that clock_gettime's jitter
 * (microseconds when the vCPU is descheduled) does not skew it by more than ~1e-4. */
#define MR_TSC_CLOCK_RATE_MIN_NS 10000000ull

struct mr_tsc_clock {
	_Atomic uint32_t seq;          /* odd while the writer updates the anchor */
	_Atomic uint64_t tsc0, ns0;    /* ns = ns0 + (tsc - tsc0) * mult >> 32 */
	_Atomic uint64_t mult;
	/* the writer's own state */
	uint64_t off;                  /* ns the clock is ahead of CLOCK_MONOTONIC */
	uint64_t ref_tsc, ref_real;    /* start of the current rate measurement */
};

static inline uint64_t mr_tsc_clock_mult(uint64_t ns, uint64_t ticks)
{
	if (ticks == 0)
		return 0;
	return (uint64_t)(((unsigned __int128)ns << 32) / ticks);
}

static inline uint64_t mr_tsc_clock_eval(uint64_t tsc0, uint64_t ns0, uint64_t mult, uint64_t tsc)
{
	/* A TSC read before the anchor (another thread's, just before a re-anchoring) counts as
	 * the anchor itself, not as 2^64 ticks. */
	uint64_t dt = tsc > tsc0 ? tsc - tsc0 : 0;

	return ns0 + (uint64_t)(((unsigned __int128)dt * mult) >> 32);
}

/* hz: DPDK's calibrated TSC rate; tsc and real_ns read together at start. */
static inline void mr_tsc_clock_init(struct mr_tsc_clock *c, uint64_t hz, uint64_t tsc,
				     uint64_t real_ns)
{
	atomic_store(&c->seq, 0);
	atomic_store(&c->tsc0, tsc);
	atomic_store(&c->ns0, real_ns);
	atomic_store(&c->mult, mr_tsc_clock_mult(1000000000ull, hz));
	c->off = 0;
	c->ref_tsc = tsc;
	c->ref_real = real_ns;
}

/* The clock at TSC reading tsc (any thread). */
static inline uint64_t mr_tsc_clock_ns(struct mr_tsc_clock *c, uint64_t tsc)
{
	uint64_t t0, n0, m;
	uint32_t s;

	do {
		s = atomic_load_explicit(&c->seq, memory_order_acquire);
		t0 = atomic_load_explicit(&c->tsc0, memory_order_relaxed);
		n0 = atomic_load_explicit(&c->ns0, memory_order_relaxed);
		m = atomic_load_explicit(&c->mult, memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
	} while ((s & 1) != 0 || s != atomic_load_explicit(&c->seq, memory_order_relaxed));
	return mr_tsc_clock_eval(t0, n0, m, tsc);
}

/* The one writer: compares the clock with CLOCK_MONOTONIC (real_ns, read right after tsc) and
 * re-anchors it when they drifted apart. Returns 1 when it did, else 0. */
static inline int mr_tsc_clock_check(struct mr_tsc_clock *c, uint64_t tsc, uint64_t real_ns)
{
	uint64_t now = mr_tsc_clock_ns(c, tsc), want = real_ns + c->off, mult, ns0;
	uint64_t drift = now > want ? now - want : want - now;
	bool measured;
	uint32_t s;

	if (drift <= MR_TSC_CLOCK_TOL_NS) {
		/* In step: the rate measurement restarts here once it is long enough, so that a
		 * later drift is measured over the recent past only. */
		if (real_ns - c->ref_real >= 64 * MR_TSC_CLOCK_RATE_MIN_NS) {
			c->ref_tsc = tsc;
			c->ref_real = real_ns;
		}
		return 0;
	}
	mult = atomic_load_explicit(&c->mult, memory_order_relaxed);
	/* The rate over the interval since the last measurement, once it is long enough; until
	 * then only the offset is corrected (and the interval keeps its start). */
	measured = real_ns > c->ref_real && real_ns - c->ref_real >= MR_TSC_CLOCK_RATE_MIN_NS &&
		   tsc > c->ref_tsc;
	if (measured)
		mult = mr_tsc_clock_mult(real_ns - c->ref_real, tsc - c->ref_tsc);
	/* Never back: a clock ahead of CLOCK_MONOTONIC (the TSC ran fast) keeps its lead. */
	ns0 = now > want ? now : want;
	c->off = ns0 - real_ns;
	s = atomic_load_explicit(&c->seq, memory_order_relaxed);
	atomic_store_explicit(&c->seq, s + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&c->tsc0, tsc, memory_order_relaxed);
	atomic_store_explicit(&c->ns0, ns0, memory_order_relaxed);
	if (mult != 0)
		atomic_store_explicit(&c->mult, mult, memory_order_relaxed);
	atomic_store_explicit(&c->seq, s + 2, memory_order_release);
	if (measured) {
		c->ref_tsc = tsc;
		c->ref_real = real_ns;
	}
	return 1;
}

#endif
