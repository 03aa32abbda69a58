/* SPDX-License-Identifier: MIT */
#include "tool_util.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#include "metaroce/metaroce.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The tools read the clock per posted batch and per latency sample, as perftest reads the TSC
 * (get_cycles). On this host's paravirtualised clock (kvm-clock) clock_gettime takes ~25 ns, and
 * two reads per loop of mrperf's rate client were 18 % of its thread (perf). With an invariant
 * TSC (CPUID 0x80000007 EDX bit 8) the clock is the TSC scaled by a rate measured against
 * CLOCK_MONOTONIC over 5 ms at the first call, counted from the same origin; else
 * CLOCK_MONOTONIC itself. Each end of that measurement is a CLOCK_MONOTONIC read bracketed by
 * two TSC reads less than TCLK_PAIR_CYCLES apart: a preemption between an unbracketed pair
 * (seen under CI load) skewed the rate by the time descheduled, 2x for 2 ms, and halved every
 * duration mrperf measured. */
#define TCLK_PAIR_CYCLES 4000u
#define TCLK_SPAN_NS 5000000u
static struct {
	uint64_t tsc0, ns0, mult; /* ns = ns0 + (tsc - tsc0) * mult >> 32 */
	bool on;
} tclk;
static pthread_once_t tclk_once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__)
/* A CLOCK_MONOTONIC reading and the TSC at the same instant, within TCLK_PAIR_CYCLES. */
static bool tclk_pair(uint64_t *ns, uint64_t *tsc)
{
	for (int i = 0; i < 1000; i++) {
		uint64_t a = __rdtsc(), n = mono_ns(), b = __rdtsc();

		if (b > a && b - a < TCLK_PAIR_CYCLES) {
			*ns = n;
			*tsc = a + (b - a) / 2;
			return true;
		}
	}
	return false;
}
#endif

static void tclk_init(void)
{
#if defined(__x86_64__)
	unsigned int a, b, c, d;
	uint64_t n0, n1, t0, t1;

	if (!__get_cpuid(0x80000007u, &a, &b, &c, &d) || !(d & (1u << 8)))
		return;
	if (!tclk_pair(&n0, &t0))
		return;
	while (mono_ns() - n0 < TCLK_SPAN_NS)
		;
	if (!tclk_pair(&n1, &t1) || t1 <= t0 || n1 <= n0)
		return;
	tclk.mult = (uint64_t)(((unsigned __int128)(n1 - n0) << 32) / (t1 - t0));
	tclk.ns0 = n1;
	tclk.tsc0 = t1;
	tclk.on = tclk.mult != 0;
#endif
}

uint64_t mr_tool_now_ns(void)
{
	pthread_once(&tclk_once, tclk_init);
#if defined(__x86_64__)
	if (tclk.on)
		return tclk.ns0 + (uint64_t)(((unsigned __int128)(__rdtsc() - tclk.tsc0) *
					     tclk.mult) >> 32);
#endif
	return mono_ns();
}

int mr_tool_vfail(char *err, size_t cap, const struct mrc_session *s, int rc, const char *fmt,
		  va_list ap)
{
	size_t n;

	vsnprintf(err, cap, fmt, ap);
	n = strlen(err);
	if (rc < 0 && n < cap) {
		const char *last = s != NULL ? mrc_last_error(s) : "";

		snprintf(err + n, cap - n, ": %s%s%s", mrc_strerror(rc), last[0] ? " - " : "", last);
	}
	return rc < 0 ? rc : -EIO;
}
