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
 * CLOCK_MONOTONIC over 2 ms at the first call, counted from the same origin; else
 * CLOCK_MONOTONIC itself. */
static struct {
	uint64_t tsc0, ns0, mult; /* ns = ns0 + (tsc - tsc0) * mult >> 32 */
	bool on;
} tclk;
static pthread_once_t tclk_once = PTHREAD_ONCE_INIT;

static void tclk_init(void)
{
#if defined(__x86_64__)
	unsigned int a, b, c, d;
	uint64_t n0, n1, t0, t1;

	if (!__get_cpuid(0x80000007u, &a, &b, &c, &d) || !(d & (1u << 8)))
		return;
	n0 = mono_ns();
	t0 = __rdtsc();
	do
		n1 = mono_ns();
	while (n1 - n0 < 2000000);
	t1 = __rdtsc();
	if (t1 <= t0)
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
