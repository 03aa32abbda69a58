/* SPDX-License-Identifier: MIT
 * cacheline_pingpong CPU_A CPU_B [REPS [ROUNDS]]: how long one cache line takes to go from one
 * CPU to another, as bench-perf.sh prints it beside its memif baselines. Two threads, pinned to
 * CPU_A and CPU_B, hand one 64-byte line back and forth ROUNDS times (default 100000), each
 * waiting for the other's store; REPS (default 5) repetitions, each timed with CLOCK_MONOTONIC.
 * Prints "ns per hand-over: median M min N max X (REPS x ROUNDS)". memif's frames, its ring
 * indices and every shm ring entry between an app and its daemon cross this line; on a virtual
 * machine its cost depends on where the host placed the two vCPUs (a shared cache or not).
 * Exit 0, or 2 on a bad argument or a CPU the threads cannot be pinned to.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static _Alignas(64) _Atomic uint64_t line;
static _Alignas(64) _Atomic int ready; /* the second thread: 1 pinned, -1 could not be */
static uint64_t rounds = 100000;

static int pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* The second thread: answers every odd value with the next even one. */
static void *pong(void *arg)
{
	int cpu = *(int *)arg;

	if (pin(cpu) != 0) {
		atomic_store(&ready, -1);
		return NULL;
	}
	atomic_store(&ready, 1);
	for (uint64_t v = 1; v < 2 * rounds; v += 2) {
		while (atomic_load_explicit(&line, memory_order_acquire) != v)
			;
		atomic_store_explicit(&line, v + 1, memory_order_release);
	}
	return NULL;
}

static int parse(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || end == s || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	long a, b, reps = 5, r = 100000;
	double ns[64];

	if (argc < 3 || argc > 5 || parse(argv[1], 0, CPU_SETSIZE - 1, &a) < 0 ||
	    parse(argv[2], 0, CPU_SETSIZE - 1, &b) < 0 ||
	    (argc > 3 && parse(argv[3], 1, 64, &reps) < 0) ||
	    (argc > 4 && parse(argv[4], 1, 100000000, &r) < 0)) {
		fprintf(stderr, "usage: cacheline_pingpong CPU_A CPU_B [REPS 1-64 [ROUNDS]]\n");
		return 2;
	}
	rounds = (uint64_t)r;
	if (pin((int)a) != 0) {
		fprintf(stderr, "cacheline_pingpong: cannot run on CPU %ld\n", a);
		return 2;
	}
	for (long i = 0; i < reps; i++) {
		int cpu_b = (int)b;
		pthread_t t;
		uint64_t t0, t1;
		int st;

		atomic_store(&line, 0);
		atomic_store(&ready, 0);
		if (pthread_create(&t, NULL, pong, &cpu_b) != 0) {
			fprintf(stderr, "cacheline_pingpong: pthread_create failed\n");
			return 2;
		}
		while ((st = atomic_load(&ready)) == 0)
			;
		if (st < 0) {
			pthread_join(t, NULL);
			fprintf(stderr, "cacheline_pingpong: cannot run on CPU %ld\n", b);
			return 2;
		}
		t0 = now_ns();
		for (uint64_t v = 0; v < 2 * rounds; v += 2) {
			atomic_store_explicit(&line, v + 1, memory_order_release);
			while (atomic_load_explicit(&line, memory_order_acquire) != v + 2)
				;
		}
		t1 = now_ns();
		pthread_join(t, NULL);
		ns[i] = (double)(t1 - t0) / (double)(2 * rounds);
	}
	qsort(ns, (size_t)reps, sizeof(ns[0]), cmp_d);
	printf("ns per hand-over: median %.1f min %.1f max %.1f (%ld x %ld)\n", ns[reps / 2], ns[0],
	       ns[reps - 1], reps, r);
	return 0;
}
