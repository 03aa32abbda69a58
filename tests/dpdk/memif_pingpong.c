/* SPDX-License-Identifier: MIT
 * Raw net_memif ping-pong between two processes (not a test; scripts/bench-perf.sh runs it): the
 * baseline for metaroce's 8-byte write latency over the same PMD. "echo" is the memif server and
 * sends every frame back; "ping" (the client) sends one frame of SIZE bytes, busy-polls for its
 * return, N times after a warm-up, prints the RTT percentiles and sends a shorter frame on
 * which the echo leaves.
 * The raw frame-rate ceiling: "sink" (server) receives and frees, "blast" (client) allocates,
 * stamps and sends bursts of 32 SIZE-byte frames for N seconds; the sink counts for N seconds
 * (0: until the blaster leaves) and prints the median of its 1-s rates. One polling thread
 * per process and nothing else (dpdk-testpmd's main lcore and stats loop took 25-50 % of a
 * CPU here, which on 2 vCPUs halves its forwarding lcores).
 * Frames above 1514 bytes (an IB MTU 4096 packet is 4154) get 4352-byte memif buffers
 * (bsize=4352, as metaroced's jumbo memif port in bench-perf.sh), so a frame is one descriptor
 * (DPDK 22.11 corrupts chained ones, drivers/dpdk/dpdk_port.c soft_mtu), and mbufs to match.
 * MEMIF_PP_WARM=1 in the environment: ping and echo warm their transmit ring when a frame
 * arrives, as metaroced does (drivers/dpdk/memif_warm.h): what that trick buys a loop with no
 * work between its receive and its transmit (docs/performance.md, session 26).
 * Usage: memif_pingpong echo|ping|sink|blast SOCKET SIZE N [EAL args...]
 * Output (ping): a summary line, then "RESULT rtt_p50_us X" etc.; (sink) "RESULT pps X",
 * "RESULT bps X" (frame bytes x 8).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dpdk/memif_warm.h"

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#define WARMUP 200
#define JUMBO_BSIZE 4352
#define LOST_US 100000 /* a frame not back after 100 ms is counted lost and sent again */

static volatile sig_atomic_t stop;

static struct mr_memif_warm warm;
static bool warm_wanted, warm_tried;

/* Locates the ring once the link is up (MEMIF_PP_WARM); RTE_PKTMBUF default buffers, no
 * bsize devarg: the PMD's 2048-byte buffers (or JUMBO_BSIZE). */
static void warm_find(bool client, uint32_t size)
{
	if (!warm_wanted || warm_tried)
		return;
	warm_tried = true;
	fprintf(stderr, "warm: %d\n", mr_memif_warm_find(&warm, client, size > 1514 ?
							   JUMBO_BSIZE : 2048));
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* Durations and rates are timed with CLOCK_MONOTONIC, never with the TSC alone: on this
 * paravirtualised host a blaster whose end was computed from rte_get_tsc_hz() ran for 11
 * minutes instead of 13 s, and a sink reported 18 Mframes/s (217 Gb/s) at 1514 B for six of
 * its TSC-timed "seconds" where the same pair makes 3.5. Round trips are counted in TSC ticks
 * (cheap to read), converted with the TSC rate measured against CLOCK_MONOTONIC over the run,
 * and DPDK's figure is printed beside it when the two disagree. */
static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Ticks per second between (tsc0, ns0) and now; DPDK's figure if the interval is under 10 ms. */
static double tsc_hz_since(uint64_t tsc0, uint64_t ns0)
{
	uint64_t tsc = rte_rdtsc(), ns = mono_ns();
	double dpdk = (double)rte_get_tsc_hz(), hz;

	if (ns - ns0 < 10000000ull || tsc <= tsc0)
		return dpdk;
	hz = (double)(tsc - tsc0) * 1e9 / (double)(ns - ns0);
	if (hz < dpdk * 0.98 || hz > dpdk * 1.02)
		printf("TSC: DPDK says %.0f Hz, measured %.0f Hz against CLOCK_MONOTONIC over %.1f s: "
		       "using the measured rate\n", dpdk, hz, (double)(ns - ns0) / 1e9);
	return hz;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int port_up(uint16_t port, struct rte_mempool *pool)
{
	struct rte_eth_conf conf;
	struct rte_eth_link link;

	memset(&conf, 0, sizeof(conf));
	if (rte_eth_dev_configure(port, 1, 1, &conf) < 0 ||
	    rte_eth_rx_queue_setup(port, 0, 1024, (unsigned int)rte_socket_id(), NULL, pool) < 0 ||
	    rte_eth_tx_queue_setup(port, 0, 1024, (unsigned int)rte_socket_id(), NULL) < 0 ||
	    rte_eth_dev_start(port) < 0)
		return -1;
	/* The memif link comes up when the peer connects. */
	for (int i = 0; i < 3000 && !stop; i++) {
		if (rte_eth_link_get_nowait(port, &link) == 0 && link.link_status)
			return 0;
		rte_delay_us_sleep(10000);
	}
	return -1;
}

/* "ping"'s last frame is one byte shorter than its pings: the echo leaves on it, before the
 * client closes its end (a memif server polling a client that has gone crashed here, in the
 * bench output as a segfault of the echo). Only the mbuf's length is read, which the PMD
 * wrote on this CPU: the echo never touches a frame's bytes. */
static void echo(uint16_t port, uint32_t size)
{
	struct rte_mbuf *b[32];
	struct rte_eth_link link;
	bool seen_up = false, bye = false;
	uint32_t empty = 0;

	while (!stop && !bye) {
		uint16_t n = rte_eth_rx_burst(port, 0, b, 32), s = 0;

		if (n > 0)
			mr_memif_warm_lines(&warm);
		for (uint16_t k = 0; k < n; k++) {
			if (rte_pktmbuf_pkt_len(b[k]) != size) {
				bye = true;
				rte_pktmbuf_free_bulk(b + k, (unsigned int)(n - k));
				n = k;
				break;
			}
		}

		/* Leave when the peer has gone (memif may crash polling a vanished peer). */
		if (n == 0 && ++empty >= 4096) {
			empty = 0;
			if (rte_eth_link_get_nowait(port, &link) == 0) {
				if (link.link_status)
					seen_up = true;
				else if (seen_up)
					break;
			}
		}

		while (s < n && !stop) {
			uint16_t t = rte_eth_tx_burst(port, 0, b + s, (uint16_t)(n - s));

			mr_memif_warm_sent(&warm, t);
			s += t;
		}
		if (n > 0)
			warm_find(false, size);
		for (; s < n; s++)
			rte_pktmbuf_free(b[s]);
	}
}

/* One sample per second from the first frame, for SECS + 1 seconds (0: until the blaster
 * leaves); the median of the samples. It leaves before the blaster does: memif may crash
 * polling a peer that has gone. */
static int sink(uint16_t port, uint32_t size, uint32_t secs)
{
	struct rte_mbuf *b[64];
	struct rte_eth_link link;
	uint64_t t0 = 0, cnt = 0, samples[600], tsc_first = 0, ns_first = 0;
	uint32_t ns = 0, empty = 0, polls = 0;
	bool seen = false;

	while (!stop && ns < 600 && (secs == 0 || ns < secs + 2)) {
		uint16_t n = rte_eth_rx_burst(port, 0, b, 64);

		if (n > 0) {
			if (!seen) {
				seen = true;
				t0 = ns_first = mono_ns();
				tsc_first = rte_rdtsc();
			}
			cnt += n;
			rte_pktmbuf_free_bulk(b, n);
			empty = 0;
		} else if (++empty >= 65536) {
			empty = 0;
			if (seen && rte_eth_link_get_nowait(port, &link) == 0 && !link.link_status)
				break;
		}
		/* The clock every 8th poll: a second's edge is then late by a few polls at most. */
		if (seen && ++polls % 8 == 0 && mono_ns() - t0 >= 1000000000ull) {
			samples[ns++] = cnt;
			cnt = 0;
			t0 += 1000000000ull;
		}
	}
	if (ns < 3) {
		printf("sink: only %u full seconds of frames\n", ns);
		return 1;
	}
	(void)tsc_hz_since(tsc_first, ns_first); /* says so if the TSC ran at another rate */
	printf("sink: 1-s samples:");
	for (uint32_t i = 0; i < ns; i++)
		printf(" %llu", (unsigned long long)samples[i]);
	printf("\n");
	/* The first second holds the start, the last one may hold the end. */
	qsort(samples + 1, ns - 2, sizeof(samples[0]), cmp_u64);
	{
		uint64_t m = samples[1 + (ns - 2) / 2];

		printf("memif sink %u B: %.3f Mframes/s (median of %u 1-s samples), %.2f Gb/s\n", size,
		       (double)m / 1e6, ns - 2, (double)m * size * 8 / 1e9);
		printf("RESULT pps %llu\nRESULT bps %llu\n", (unsigned long long)m,
		       (unsigned long long)(m * size * 8));
	}
	return 0;
}

static int blast(uint16_t port, struct rte_mempool *pool, uint32_t size, uint32_t secs)
{
	struct rte_mbuf *b[32];
	uint64_t end = mono_ns() + (uint64_t)secs * 1000000000ull, sent = 0;

	while (!stop && mono_ns() < end) {
		uint16_t s = 0;

		if (rte_pktmbuf_alloc_bulk(pool, b, 32) != 0)
			continue;
		for (int i = 0; i < 32; i++) {
			uint8_t *p = (uint8_t *)rte_pktmbuf_append(b[i], (uint16_t)size);

			if (p == NULL)
				return 1;
			memset(p, 0xff, 6); /* broadcast dst, experimental EtherType (as ping) */
			memset(p + 6, 0, 6);
			p[12] = 0x88;
			p[13] = 0xb5;
		}
		s = rte_eth_tx_burst(port, 0, b, 32);
		sent += s;
		if (s < 32)
			rte_pktmbuf_free_bulk(b + s, 32u - s);
	}
	printf("memif blast %u B: %llu frames sent\n", size, (unsigned long long)sent);
	return 0;
}

/* Tells the echo to leave (see echo()), and gives it time to, before this client closes. */
static void say_bye(uint16_t port, struct rte_mempool *pool, uint32_t size)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	uint8_t *p = m ? (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(size - 1)) : NULL;

	if (p == NULL) {
		rte_pktmbuf_free(m);
		return;
	}
	memset(p, 0xff, size - 1);
	if (rte_eth_tx_burst(port, 0, &m, 1) == 0)
		rte_pktmbuf_free(m);
	rte_delay_ms(200);
}

static int ping(uint16_t port, struct rte_mempool *pool, uint32_t size, uint32_t n)
{
	uint64_t *rtt = calloc(n, sizeof(*rtt)), hz = rte_get_tsc_hz(), lost = 0;
	uint64_t t_all = rte_rdtsc(), ns_all = mono_ns();
	double mhz;

	if (!rtt)
		return 1;
	for (uint32_t i = 0; i < n + WARMUP && !stop; i++) {
		struct rte_mbuf *m = rte_pktmbuf_alloc(pool), *r;
		uint8_t *p;
		uint64_t t0;

		if (!m)
			return 1;
		p = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)size);
		if (!p)
			return 1;
		memset(p, 0, size);
		memset(p, 0xff, 6); /* broadcast dst, so no MAC filter drops it */
		p[12] = 0x88;       /* local experimental EtherType 0x88b5 (IEEE 802) */
		p[13] = 0xb5;
		memcpy(p + 14, &i, sizeof(i)); /* a late reply to a lost ping is not this one's */
		t0 = rte_rdtsc();
		while (rte_eth_tx_burst(port, 0, &m, 1) == 0)
			;
		mr_memif_warm_sent(&warm, 1);
		for (;;) {
			if (rte_eth_rx_burst(port, 0, &r, 1) == 1) {
				uint32_t seq;

				mr_memif_warm_lines(&warm);
				memcpy(&seq, rte_pktmbuf_mtod_offset(r, uint8_t *, 14), sizeof(seq));
				rte_pktmbuf_free(r);
				if (seq == i)
					break;
				continue;
			}
			if (rte_rdtsc() - t0 > hz / 1000000 * LOST_US || stop) {
				lost++;
				break;
			}
		}
		if (i >= WARMUP)
			rtt[i - WARMUP] = rte_rdtsc() - t0;
		if (i + 1 == WARMUP)
			warm_find(true, size);
	}
	mhz = tsc_hz_since(t_all, ns_all);
	t_all = rte_rdtsc() - t_all;
	say_bye(port, pool, size);
	qsort(rtt, n, sizeof(*rtt), cmp_u64);
	{
		double us = 1e6 / mhz;
		double p50 = (double)rtt[n / 2] * us, p99 = (double)rtt[(uint64_t)n * 99 / 100] * us;
		double p999 = (double)rtt[(uint64_t)n * 999 / 1000] * us;

		printf("memif ping-pong %u B x %u: RTT min %.2f p50 %.2f p99 %.2f p99.9 %.2f us, "
		       "%llu lost, %.0f round trips/s\n", size, n, (double)rtt[0] * us, p50, p99, p999,
		       (unsigned long long)lost, (n + WARMUP) / ((double)t_all / mhz));
		printf("RESULT rtt_p50_us %.3f\nRESULT rtt_p99_us %.3f\nRESULT rtt_p999_us %.3f\n"
		       "RESULT rtt_lost %llu\n", p50, p99, p999, (unsigned long long)lost);
	}
	free(rtt);
	return 0;
}

int main(int argc, char **argv)
{
	char vdev[512];
	char *eal[64];
	int ne = 0, rc;
	bool is_echo;
	uint32_t size, n;
	struct rte_mempool *pool;

	if (argc < 5 || (strcmp(argv[1], "echo") && strcmp(argv[1], "ping") &&
			  strcmp(argv[1], "sink") && strcmp(argv[1], "blast")) || argc > 60) {
		fprintf(stderr, "usage: %s echo|ping|sink|blast SOCKET SIZE N [EAL args...]\n",
			argv[0]);
		return 2;
	}
	is_echo = !strcmp(argv[1], "echo") || !strcmp(argv[1], "sink");
	size = (uint32_t)atoi(argv[3]);
	n = (uint32_t)atoi(argv[4]);
	if (size < 60 || size > JUMBO_BSIZE || (!is_echo && n < 1)) {
		fprintf(stderr, "SIZE 60..%u, N >= 1\n", JUMBO_BSIZE);
		return 2;
	}
	/* Rate runs get the 4096-slot ring metaroced uses (rsize=12). */
	snprintf(vdev, sizeof(vdev), "--vdev=net_memif0,role=%s,id=0,socket=%s,socket-abstract=no%s%s",
		 is_echo ? "server" : "client", argv[2],
		 strcmp(argv[1], "sink") && strcmp(argv[1], "blast") ? "" : ",rsize=12",
		 size > 1514 ? ",bsize=" RTE_STR(JUMBO_BSIZE) : "");
	eal[ne++] = argv[0];
	for (int i = 5; i < argc; i++)
		eal[ne++] = argv[i];
	eal[ne++] = vdev;
	mr_memif_warm_init(&warm);
	warm_wanted = getenv("MEMIF_PP_WARM") != NULL;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	/* Line-buffered into the bench's log file: the RESULT lines must be on disk before the
	 * port is closed, where a memif server whose client is still sending has crashed (seen:
	 * the sink exited 139 with an empty log, its measurement lost in the stdio buffer). */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (rte_eal_init(ne, eal) < 0) {
		fprintf(stderr, "rte_eal_init: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	pool = rte_pktmbuf_pool_create("pp_pool", 4095, 256, 0,
				       size > 1514 ? JUMBO_BSIZE + RTE_PKTMBUF_HEADROOM :
						     RTE_MBUF_DEFAULT_BUF_SIZE,
				       (int)rte_socket_id());
	if (!pool || port_up(0, pool) < 0) {
		fprintf(stderr, "memif port did not come up: %s\n", rte_strerror(rte_errno));
		rte_eal_cleanup();
		return 1;
	}
	rc = 0;
	if (!strcmp(argv[1], "echo"))
		echo(0, size);
	else if (!strcmp(argv[1], "sink"))
		rc = sink(0, size, n);
	else if (!strcmp(argv[1], "blast"))
		rc = blast(0, pool, size, n);
	else
		rc = ping(0, pool, size, n);
	/* The process ends without closing the port or EAL: the kernel closes the memif
	 * sockets and frees the memory (--no-huge, --no-shconf: no files remain). DPDK 22.11's
	 * rte_eal_cleanup() unmaps memory while its interrupt thread may still be in
	 * rte_intr_fd_get() serving the peer's disconnect: the echo's core dump showed exactly
	 * that, in 6 of 47 back-to-back ping-pongs here, and none in 40 since (the embedded
	 * engine, apps/metaroced/daemon.c, skips its teardown for the same race). */
	fflush(stdout);
	fflush(stderr);
	_exit(rc);
}
