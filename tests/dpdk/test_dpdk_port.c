/* SPDX-License-Identifier: MIT
 * The DPDK port driver on net_ring vdevs (a net_ring port created by --vdev has one ring per
 * queue pair: whatever queue q transmits, queue q receives). Brings up EAL in-process with
 * --no-huge --no-shconf; exits 77 (skip) when EAL cannot start here.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_log.h>
#include <rte_mbuf.h>

#include "dpdk/dpdk_port.h"
#include "dpdk/neigh.h"

#define BURST 32

static const uint8_t port_mac[6] = { 0x02, 0x4d, 0x52, 0x00, 0x00, 0x01 };

static struct mr_dpdk_port *open_ring(const char *name, uint16_t queues, uint16_t mtu,
				      bool no_offload)
{
	struct mr_dpdk_port_conf c;
	struct mr_dpdk_port *p;

	memset(&c, 0, sizeof(c));
	c.devname = name;
	c.nb_queues = queues;
	c.mtu = mtu;
	c.nb_rxd = 1024;
	c.nb_txd = 1024;
	c.promiscuous = true;
	c.no_tx_offload = no_offload;
	c.socket_id = -1;
	c.mac = port_mac; /* net_ring's own MAC is all zeros */
	p = mr_dpdk_port_open(&c);
	if (p == NULL)
		print_error("open %s: %s\n", name, strerror(errno));
	assert_non_null(p);
	return p;
}

/* Deterministic frame content: seq in the first payload bytes, a pattern after. */
static void fill_frame(uint8_t *f, uint32_t len, uint32_t seq)
{
	static const uint8_t hdr[14] = { 2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x88, 0xb5 };

	memcpy(f, hdr, 14);
	for (uint32_t i = 14; i < len; i++)
		f[i] = (uint8_t)(seq * 7 + i);
	f[14] = (uint8_t)(seq >> 24);
	f[15] = (uint8_t)(seq >> 16);
	f[16] = (uint8_t)(seq >> 8);
	f[17] = (uint8_t)seq;
}

static uint32_t frame_len(uint32_t seq)
{
	return 60 + (seq * 97) % (1514 - 60 + 1);
}

/* Receive exactly n frames on q (polling a bounded number of times). */
static uint32_t rx_n(struct mr_dpdk_port *p, uint16_t q, struct rte_mbuf **out, uint32_t n)
{
	uint32_t got = 0;

	for (int spins = 0; got < n && spins < 100000; spins++) {
		uint16_t want = (uint16_t)((n - got) < BURST ? (n - got) : BURST);

		got += mr_dpdk_port_rx_burst(p, q, out + got, want);
	}
	return got;
}

static void test_open_errors(void **state)
{
	struct mr_dpdk_port_conf c;

	(void)state;
	errno = 0;
	assert_null(mr_dpdk_port_open(NULL));
	assert_int_equal(errno, EINVAL);
	memset(&c, 0, sizeof(c));
	c.devname = "net_nonexistent9";
	assert_null(mr_dpdk_port_open(&c));
	assert_int_equal(errno, ENODEV);
	c.devname = NULL;
	c.port_id = 999;
	assert_null(mr_dpdk_port_open(&c));
	assert_int_equal(errno, ENODEV);
	c.devname = "net_ring0";
	c.mtu = 9001;
	assert_null(mr_dpdk_port_open(&c));
	assert_int_equal(errno, EINVAL);
	c.mtu = 40;
	assert_null(mr_dpdk_port_open(&c));
	assert_int_equal(errno, EINVAL);
	c.mtu = 0;
	c.nb_queues = MR_DPDK_MAX_QUEUES + 1;
	assert_null(mr_dpdk_port_open(&c));
	assert_int_equal(errno, EINVAL);
	c.nb_queues = 1;
	c.tx_burst = 1000;
	assert_null(mr_dpdk_port_open(&c));
	assert_int_equal(errno, EINVAL);
	c.tx_burst = 0;
	c.mac = (const uint8_t[6]){ 0x01, 0, 0x5e, 0, 0, 1 }; /* multicast */
	assert_null(mr_dpdk_port_open(&c));
	assert_int_equal(errno, EINVAL);
	mr_dpdk_port_close(NULL);
}

/* N frames of varied length through each of two queues, bytes and order checked; then the
 * port and extended counters. */
static void test_loopback_bytes_and_stats(void **state)
{
	enum { N = 1000 };
	struct mr_dpdk_port *p = open_ring("net_ring0", 2, 0, false);
	static struct rte_mbuf *rx[N];
	struct mr_dpdk_port_stats st;
	struct mr_dpdk_xstat *xs;
	struct mr_dpdk_link link;
	uint8_t f[1514], scratch[16];
	uint64_t bytes = 0;
	int nx, found = 0;

	(void)state;
	assert_int_equal(mr_dpdk_port_nb_queues(p), 2);
	assert_int_equal(mr_dpdk_port_mtu(p), 1500);
	assert_true(mr_dpdk_port_max_frame(p) >= 1518);
	assert_int_equal(mr_dpdk_port_link(p, 100, &link), 0);
	assert_true(link.up);
	for (uint16_t q = 0; q < 2; q++) {
		int sent = 0;

		for (uint32_t i = 0; i < N; i++) {
			uint32_t seq = q * N + i, len = frame_len(seq);
			struct rte_mbuf *m;
			int rc;

			fill_frame(f, len, seq);
			m = mr_dpdk_port_mbuf_from_frame(p, f, len);
			assert_non_null(m);
			rc = mr_dpdk_port_tx(p, q, m);
			assert_true(rc >= 0);
			sent += rc;
			bytes += len;
			/* Receive as we go: the ring holds 1024 frames. */
			if (i % 256 == 255) {
				sent += mr_dpdk_port_tx_flush(p, q);
				assert_int_equal(rx_n(p, q, rx + i - 255, 256), 256);
			}
		}
		sent += mr_dpdk_port_tx_flush(p, q);
		assert_int_equal(sent, N);
		assert_int_equal(rx_n(p, q, rx + N - N % 256, N % 256), N % 256);
		assert_int_equal(mr_dpdk_port_rx_burst(p, q, rx, 1), 0); /* nothing extra */
		for (uint32_t i = 0; i < N; i++) {
			uint32_t seq = q * N + i, len = frame_len(seq), flen;
			const uint8_t *b = mr_dpdk_mbuf_frame(rx[i], scratch, sizeof(scratch), &flen);

			fill_frame(f, len, seq);
			assert_non_null(b);
			assert_int_equal(flen, len);
			assert_memory_equal(b, f, len);
			rte_pktmbuf_free(rx[i]);
		}
	}
	/* Bad queue ids are refused, not crashed on. */
	assert_int_equal(mr_dpdk_port_rx_burst(p, 2, rx, 1), 0);
	assert_int_equal(mr_dpdk_port_tx(p, 2, NULL), -EINVAL);

	assert_int_equal(mr_dpdk_port_stats_get(p, &st), 0);
	assert_int_equal(st.opackets, 2 * N);
	assert_int_equal(st.ipackets, 2 * N);
	/* net_ring (22.11) counts packets but not bytes; a PMD that counts bytes must agree. */
	assert_true(st.obytes == 0 || st.obytes == bytes);
	assert_int_equal(st.ibytes, st.obytes);
	assert_int_equal(st.tx_buffer_drops, 0);
	assert_int_equal(st.mbuf_alloc_fail, 0);

	nx = mr_dpdk_port_xstats(p, NULL, 0);
	assert_true(nx > 0);
	xs = calloc((size_t)nx, sizeof(*xs));
	assert_non_null(xs);
	assert_int_equal(mr_dpdk_port_xstats(p, xs, (unsigned int)nx), nx);
	for (int i = 0; i < nx; i++) {
		if (strcmp(xs[i].name, "rx_good_packets") == 0 ||
		    strcmp(xs[i].name, "tx_good_packets") == 0) {
			assert_int_equal(xs[i].value, 2 * N);
			found++;
		}
		if (strcmp(xs[i].name, "rx_good_bytes") == 0) {
			assert_int_equal(xs[i].value, st.ibytes);
			found++;
		}
		if (strcmp(xs[i].name, "rx_q1_packets") == 0) {
			assert_int_equal(xs[i].value, N);
			found++;
		}
	}
	assert_int_equal(found, 4);
	free(xs);
	assert_int_equal(mr_dpdk_port_stats_dump(p, stdout), 0);
	assert_int_equal(mr_dpdk_port_stats_reset(p), 0);
	assert_int_equal(mr_dpdk_port_stats_get(p, &st), 0);
	assert_int_equal(st.ipackets, 0);
	mr_dpdk_port_close(p);
}

/* The tx buffer sends when full (tx_burst) and on the drain period, not before. */
static void test_tx_buffer_drain(void **state)
{
	struct mr_dpdk_port *p = open_ring("net_ring1", 1, 0, false);
	struct rte_mbuf *rx[64];
	uint8_t f[64];
	uint64_t t, drain = rte_get_tsc_hz() / 1000000 * 100; /* default 100 us */
	int total = 0;

	(void)state;
	fill_frame(f, 64, 1);
	t = rte_rdtsc();
	/* The first drain check flushes the (empty) buffer and starts the period. */
	assert_int_equal(mr_dpdk_port_tx_drain(p, 0, t), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(mr_dpdk_port_tx(p, 0, mr_dpdk_port_mbuf_from_frame(p, f, 64)), 0);
	assert_int_equal(mr_dpdk_port_rx_burst(p, 0, rx, 64), 0);
	assert_int_equal(mr_dpdk_port_tx_drain(p, 0, t + drain / 2), 0); /* not due */
	assert_int_equal(mr_dpdk_port_rx_burst(p, 0, rx, 64), 0);
	assert_int_equal(mr_dpdk_port_tx_drain(p, 0, t + drain + 1), 5);
	assert_int_equal(rx_n(p, 0, rx, 5), 5);
	for (int i = 0; i < 5; i++)
		rte_pktmbuf_free(rx[i]);
	/* The 32nd buffered frame sends the whole buffer. */
	for (int i = 0; i < BURST; i++) {
		int rc = mr_dpdk_port_tx(p, 0, mr_dpdk_port_mbuf_from_frame(p, f, 64));

		assert_int_equal(rc, i == BURST - 1 ? BURST : 0);
		total += rc;
	}
	assert_int_equal(rx_n(p, 0, rx, BURST), BURST);
	for (int i = 0; i < BURST; i++)
		rte_pktmbuf_free(rx[i]);
	assert_int_equal(total, BURST);
	mr_dpdk_port_close(p);
}

/* Jumbo MTU: one segment per 9000-byte frame; and chained mbufs when a frame exceeds one
 * mbuf (1500-byte port, 5000-byte frame), read back through the scratch copy. */
static void test_jumbo_and_multiseg(void **state)
{
	static uint8_t f[9018], scratch[9018];
	struct mr_dpdk_port *p = open_ring("net_ring2", 1, 9000, false);
	struct rte_mbuf *m, *rx[2];
	const uint8_t *b;
	uint32_t len;

	(void)state;
	assert_int_equal(mr_dpdk_port_mtu(p), 9000);
	assert_true(mr_dpdk_port_max_frame(p) >= 9018);
	fill_frame(f, 9018, 77);
	m = mr_dpdk_port_mbuf_from_frame(p, f, 9018);
	assert_non_null(m);
	assert_int_equal(m->nb_segs, 1);
	assert_int_equal(mr_dpdk_port_tx_burst(p, 0, &m, 1), 1);
	assert_int_equal(rx_n(p, 0, rx, 1), 1);
	b = mr_dpdk_mbuf_frame(rx[0], NULL, 0, &len);
	assert_non_null(b);
	assert_int_equal(len, 9018);
	assert_memory_equal(b, f, 9018);
	rte_pktmbuf_free(rx[0]);
	mr_dpdk_port_close(p);

	p = open_ring("net_ring3", 1, 1500, false);
	fill_frame(f, 5000, 78);
	m = mr_dpdk_port_mbuf_from_frame(p, f, 5000);
	assert_non_null(m);
	assert_true(m->nb_segs >= 3);
	assert_int_equal(m->pkt_len, 5000);
	assert_int_equal(mr_dpdk_port_tx_burst(p, 0, &m, 1), 1);
	assert_int_equal(rx_n(p, 0, rx, 1), 1);
	assert_null(mr_dpdk_mbuf_frame(rx[0], scratch, 4999, &len)); /* too small a scratch */
	b = mr_dpdk_mbuf_frame(rx[0], scratch, sizeof(scratch), &len);
	assert_ptr_equal(b, scratch);
	assert_int_equal(len, 5000);
	assert_memory_equal(b, f, 5000);
	rte_pktmbuf_free(rx[0]);
	errno = 0;
	assert_null(mr_dpdk_port_mbuf_from_frame(p, f, 0));
	assert_int_equal(errno, EINVAL);
	mr_dpdk_port_close(p);
}

static uint16_t ref_ip_csum(const uint8_t *ip)
{
	uint32_t sum = 0;

	for (int i = 0; i < 20; i += 2)
		if (i != 10)
			sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (sum > 0xffff)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* Software fallback of the offloads (net_ring has none): VLAN tag inserted, IPv4 checksum
 * computed, everything else unchanged. */
static void test_tx_prepare_sw(void **state)
{
	struct mr_dpdk_port *p = open_ring("net_ring4", 1, 0, true);
	struct mr_dpdk_tx_meta meta = { .l2_len = 14, .l3_len = 20, .ipv4_cksum = true,
					.vlan_insert = true, .vlan_tci = 0x6064 };
	uint8_t f[100];
	struct rte_mbuf *m, *rx[1];
	const uint8_t *b;
	uint32_t len;

	(void)state;
	assert_int_equal(mr_dpdk_port_caps(p) & (MR_DPDK_CAP_TX_IPV4_CKSUM |
						 MR_DPDK_CAP_TX_VLAN_INSERT), 0);
	fill_frame(f, sizeof(f), 5);
	f[12] = 0x08;
	f[13] = 0x00;
	f[14] = 0x45;   /* IPv4, IHL 5 */
	f[16] = 0;
	f[17] = 86;     /* total length */
	f[24] = 0xde;   /* stale checksum */
	f[25] = 0xad;
	m = mr_dpdk_port_mbuf_from_frame(p, f, sizeof(f));
	assert_int_equal(mr_dpdk_port_tx_prepare(p, &m, &meta), 0);
	assert_int_equal(mr_dpdk_port_tx_burst(p, 0, &m, 1), 1);
	assert_int_equal(rx_n(p, 0, rx, 1), 1);
	b = mr_dpdk_mbuf_frame(rx[0], NULL, 0, &len);
	assert_int_equal(len, sizeof(f) + 4);
	assert_memory_equal(b, f, 12);
	assert_int_equal(b[12], 0x81);
	assert_int_equal(b[13], 0x00);
	assert_int_equal(b[14], 0x60);
	assert_int_equal(b[15], 0x64);
	assert_memory_equal(b + 16, f + 12, 12);                 /* type + IP up to the checksum */
	assert_int_equal(b[28] << 8 | b[29], ref_ip_csum(b + 18));
	assert_memory_equal(b + 30, f + 26, sizeof(f) - 26);
	rte_pktmbuf_free(rx[0]);
	/* A non-IPv4 header is refused. */
	m = mr_dpdk_port_mbuf_from_frame(p, f, sizeof(f));
	rte_pktmbuf_mtod(m, uint8_t *)[14] = 0x60;
	meta.vlan_insert = false;
	assert_int_equal(mr_dpdk_port_tx_prepare(p, &m, &meta), -EINVAL);
	meta.l3_len = 10;
	assert_int_equal(mr_dpdk_port_tx_prepare(p, &m, &meta), -EINVAL);
	rte_pktmbuf_free(m);
	mr_dpdk_port_close(p);
}

/* The control path a daemon runs: an ARP request arrives through the port, neigh answers, the
 * answer goes out through the port. */
static void test_arp_through_port(void **state)
{
	struct mr_dpdk_port *p = open_ring("net_ring5", 1, 0, false);
	struct mr_neigh_conf nc;
	struct mr_neigh *n;
	static const uint8_t peer_mac[6] = { 2, 0, 0, 0, 0, 0x22 };
	uint8_t req[60] = { 0 }, reply[MR_NEIGH_FRAME_MAX];
	struct rte_mbuf *m, *rx[1];
	const uint8_t *b;
	uint32_t len, rlen;

	(void)state;
	memset(&nc, 0, sizeof(nc));
	mr_dpdk_port_mac(p, nc.mac);
	assert_memory_equal(nc.mac, port_mac, 6);
	nc.ipv4_en = true;
	nc.ipv4[0] = 192; nc.ipv4[1] = 168; nc.ipv4[2] = 7; nc.ipv4[3] = 1;
	n = mr_neigh_create(&nc);
	assert_non_null(n);
	memset(req, 0xff, 6);
	memcpy(req + 6, peer_mac, 6);
	req[12] = 0x08; req[13] = 0x06;
	req[15] = 1; req[16] = 8; req[18] = 6; req[19] = 4; req[21] = 1;
	memcpy(req + 22, peer_mac, 6);
	req[28] = 192; req[29] = 168; req[30] = 7; req[31] = 2;
	memcpy(req + 38, nc.ipv4, 4);
	m = mr_dpdk_port_mbuf_from_frame(p, req, sizeof(req));
	assert_int_equal(mr_dpdk_port_tx_burst(p, 0, &m, 1), 1);
	assert_int_equal(rx_n(p, 0, rx, 1), 1);
	b = mr_dpdk_mbuf_frame(rx[0], NULL, 0, &len);
	assert_int_equal(mr_neigh_input(n, b, len, 1, reply, sizeof(reply), &rlen), MR_NEIGH_CONSUMED);
	rte_pktmbuf_free(rx[0]);
	assert_int_equal(rlen, 60);
	m = mr_dpdk_port_mbuf_from_frame(p, reply, rlen);
	assert_int_equal(mr_dpdk_port_tx(p, 0, m), 0);
	assert_int_equal(mr_dpdk_port_tx_flush(p, 0), 1);
	assert_int_equal(rx_n(p, 0, rx, 1), 1);
	b = mr_dpdk_mbuf_frame(rx[0], NULL, 0, &len);
	assert_int_equal(len, 60);
	assert_memory_equal(b, peer_mac, 6);
	assert_memory_equal(b + 6, nc.mac, 6);
	assert_int_equal(b[21], 2);
	assert_memory_equal(b + 22, nc.mac, 6);
	assert_memory_equal(b + 28, nc.ipv4, 4);
	assert_memory_equal(b + 32, peer_mac, 6);
	rte_pktmbuf_free(rx[0]);
	mr_neigh_destroy(n);
	mr_dpdk_port_close(p);
}

/* One rx burst of fill_frame() frames; asserts they carry the sequence numbers first, first + 1,
 * ... and frees them. Returns how many came. */
static uint32_t rx_in_order(struct mr_dpdk_port *p, uint32_t first)
{
	struct rte_mbuf *rx[BURST];
	uint16_t n = mr_dpdk_port_rx_burst(p, 0, rx, BURST);

	for (uint16_t i = 0; i < n; i++) {
		const uint8_t *b = rte_pktmbuf_mtod(rx[i], const uint8_t *);

		assert_int_equal((uint32_t)b[14] << 24 | (uint32_t)b[15] << 16 |
				 (uint32_t)b[16] << 8 | b[17], first + i);
		rte_pktmbuf_free(rx[i]);
	}
	return n;
}

/* Closing a port whose tx backlog still holds frames (its peer stopped taking them: the ring is
 * full) sends what it can while the port runs, then frees the rest: no tx burst reaches the
 * stopped port, whose ethdev stub logs "called tx_pkt_burst for not ready port" and a stack
 * dump (seen at a daemon's shutdown after its memif peer failed). */
static void test_close_with_backlog(void **state)
{
	struct mr_dpdk_port *p = open_ring("net_ring10", 1, 0, false);
	char *log = NULL;
	size_t loglen = 0;
	FILE *f;
	uint8_t fr[64];

	(void)state;
	for (uint32_t i = 0; mr_dpdk_port_tx_backlog(p, 0) < 100; i++) {
		fill_frame(fr, 64, i);
		assert_true(mr_dpdk_port_tx(p, 0, mr_dpdk_port_mbuf_from_frame(p, fr, 64)) >= 0);
		assert_true(i < 4096);
	}
	f = open_memstream(&log, &loglen);
	assert_non_null(f);
	assert_int_equal(rte_openlog_stream(f), 0);
	mr_dpdk_port_close(p);
	rte_openlog_stream(NULL);
	fclose(f);
	assert_null(strstr(log, "not ready port"));
	free(log);
}

/* The tx backlog keeps its order while the PMD takes bursts from its head and new frames join at
 * its tail: every round frees a burst of ring slots, flushes (the head moves) and adds a burst
 * (the tail reaches the array's end: the waiting frames move to its front). Nothing is dropped,
 * nothing reordered or sent twice. */
static void test_backlog_head_moves(void **state)
{
	enum { RING = 1024, ROUNDS = 100 };
	struct mr_dpdk_port *p = open_ring("net_ring9", 1, 0, false);
	struct mr_dpdk_port_stats st;
	uint32_t next = 0, got = 0, total;
	uint8_t f[64];

	(void)state;
	/* The ring full (its capacity, about RING), then the backlog behind it. */
	for (; mr_dpdk_port_tx_backlog(p, 0) < MR_DPDK_TX_BACKLOG; next++) {
		fill_frame(f, 64, next);
		assert_true(mr_dpdk_port_tx(p, 0, mr_dpdk_port_mbuf_from_frame(p, f, 64)) >= 0);
		assert_true(next < 2 * RING + MR_DPDK_TX_BACKLOG);
	}
	for (uint32_t r = 0; r < ROUNDS + RING / BURST; r++) {
		uint32_t n = rx_in_order(p, got);

		got += n;
		mr_dpdk_port_tx_flush(p, 0);
		for (uint32_t i = 0; r < ROUNDS && i < n; i++, next++) {
			fill_frame(f, 64, next);
			assert_true(mr_dpdk_port_tx(p, 0, mr_dpdk_port_mbuf_from_frame(p, f, 64)) >= 0);
		}
		if (r < ROUNDS) /* as many in as out: the backlog stays full */
			assert_int_equal(mr_dpdk_port_tx_backlog(p, 0), MR_DPDK_TX_BACKLOG);
	}
	total = next;
	for (int spins = 0; spins < 100000 && got < total; spins++) {
		uint32_t n = rx_in_order(p, got);

		got += n;
		mr_dpdk_port_tx_flush(p, 0);
	}
	assert_int_equal(got, total);
	assert_true(total > RING - 1 + MR_DPDK_TX_BACKLOG + ROUNDS * (BURST - 1));
	assert_int_equal(mr_dpdk_port_stats_get(p, &st), 0);
	assert_int_equal(st.tx_buffer_drops, 0);
	assert_int_equal(st.opackets, total);
	mr_dpdk_port_close(p);
}

/* Overload is counted, not crashed on: a tx buffer flushed into a full ring frees and counts
 * what the PMD refused; an exhausted pool fails allocation with ENOBUFS and counts it; the
 * multicast filter falls back gracefully on a PMD without one. */
/* A full PMD ring: frames wait in the port's tx backlog, in order; only frames queued on a full
 * backlog are dropped (and counted), and the backlog goes out, in order, once the ring drains. */
static void test_drops_counted(void **state)
{
	enum { N = 3000, POOL = 64 };
	struct mr_dpdk_port_conf c;
	struct mr_dpdk_port *p = open_ring("net_ring7", 1, 0, false);
	struct mr_dpdk_port_stats st;
	struct rte_mbuf *held[POOL + 1];
	static const uint8_t mc[2][6] = { { 0x33, 0x33, 0xff, 0, 0, 1 }, { 0x01, 0, 0x5e, 0, 0, 1 } };
	static const uint8_t uc[1][6] = { { 0x02, 0, 0, 0, 0, 1 } };
	uint8_t f[64];
	uint32_t sent = 0, got = 0, n, drops;
	int rc;

	(void)state;
	for (uint32_t i = 0; i < N; i++) {
		fill_frame(f, 64, i);
		rc = mr_dpdk_port_tx(p, 0, mr_dpdk_port_mbuf_from_frame(p, f, 64));
		assert_true(rc >= 0);
		sent += (uint32_t)rc;
	}
	sent += mr_dpdk_port_tx_flush(p, 0);
	/* the ring (1024 slots) is full, the backlog behind it too */
	assert_true(sent < N - MR_DPDK_TX_BACKLOG);
	assert_int_equal(mr_dpdk_port_tx_backlog(p, 0), MR_DPDK_TX_BACKLOG);
	assert_int_equal(mr_dpdk_port_tx_room(p, 0), 0);
	assert_int_equal(mr_dpdk_port_stats_get(p, &st), 0);
	drops = N - sent - MR_DPDK_TX_BACKLOG;
	assert_int_equal(st.tx_buffer_drops, drops);
	assert_int_equal(st.opackets, sent);
	/* Drain: every frame that was not dropped arrives, oldest first, none twice. */
	for (int spins = 0; spins < 100000 && got < N - drops; spins++) {
		n = rx_in_order(p, got);
		got += n;
		mr_dpdk_port_tx_flush(p, 0);
	}
	assert_int_equal(got, N - drops);
	assert_int_equal(mr_dpdk_port_tx_backlog(p, 0), 0);
	assert_int_equal(mr_dpdk_port_tx_room(p, 0), MR_DPDK_TX_BACKLOG);
	assert_int_equal(mr_dpdk_port_stats_get(p, &st), 0);
	assert_int_equal(st.tx_buffer_drops, drops);
	assert_int_equal(st.opackets, N - drops);
	assert_int_equal(mr_dpdk_port_set_mcast(p, mc, 2), 0);
	assert_int_equal(mr_dpdk_port_set_mcast(p, uc, 1), -EINVAL);
	assert_int_equal(mr_dpdk_port_set_mcast(p, NULL, 1), -EINVAL);
	mr_dpdk_port_close(p);

	memset(&c, 0, sizeof(c));
	c.devname = "net_ring8";
	c.nb_mbufs = POOL;
	c.mac = port_mac;
	p = mr_dpdk_port_open(&c);
	assert_non_null(p);
	for (n = 0; n <= POOL; n++) {
		held[n] = mr_dpdk_port_mbuf_from_frame(p, f, 64);
		if (held[n] == NULL)
			break;
	}
	assert_int_equal(n, POOL);
	assert_int_equal(errno, ENOBUFS);
	assert_int_equal(mr_dpdk_port_stats_get(p, &st), 0);
	assert_int_equal(st.mbuf_alloc_fail, 1);
	for (uint32_t i = 0; i < n; i++)
		rte_pktmbuf_free(held[i]);
	mr_dpdk_port_close(p);
}

/* Throughput through net_ring, reported (not asserted): (a) the full driver path per frame:
 * copy into a new mbuf, buffered tx, rx, read, free; (b) the PMD alone: the same 32 mbufs
 * bursted round and round. */
static void test_bench(void **state)
{
	struct mr_dpdk_port *p = open_ring("net_ring6", 1, 0, false);
	struct rte_mbuf *bufs[BURST], *rx[BURST];
	uint8_t f[64];
	uint64_t hz = rte_get_tsc_hz(), t0, t1, frames = 0, iters = 200000;
	uint32_t len;

	(void)state;
	fill_frame(f, 64, 9);
	t0 = rte_rdtsc();
	for (uint64_t it = 0; it < iters / 4; it++) {
		for (int i = 0; i < BURST; i++)
			mr_dpdk_port_tx(p, 0, mr_dpdk_port_mbuf_from_frame(p, f, 64));
		uint16_t n = rx_n(p, 0, rx, BURST);

		for (uint16_t i = 0; i < n; i++) {
			const uint8_t *b = mr_dpdk_mbuf_frame(rx[i], NULL, 0, &len);

			frames += b[17] == 9;
			rte_pktmbuf_free(rx[i]);
		}
	}
	t1 = rte_rdtsc();
	assert_int_equal(frames, iters / 4 * BURST);
	printf("net_ring driver path (alloc+copy, buffered tx, rx, free), 64 B: %.2f Mframes/s\n",
	       (double)frames * (double)hz / (double)(t1 - t0) / 1e6);

	for (int i = 0; i < BURST; i++)
		bufs[i] = mr_dpdk_port_mbuf_from_frame(p, f, 64);
	frames = 0;
	t0 = rte_rdtsc();
	for (uint64_t it = 0; it < iters; it++) {
		uint16_t s = mr_dpdk_port_tx_burst(p, 0, bufs, BURST);
		uint16_t r = mr_dpdk_port_rx_burst(p, 0, bufs, BURST);

		assert_int_equal(s, BURST);
		assert_int_equal(r, BURST);
		frames += r;
	}
	t1 = rte_rdtsc();
	printf("net_ring PMD burst loop (same 32 mbufs), 64 B: %.2f Mframes/s\n",
	       (double)frames * (double)hz / (double)(t1 - t0) / 1e6);
	for (int i = 0; i < BURST; i++)
		rte_pktmbuf_free(bufs[i]);
	mr_dpdk_port_close(p);
}

int main(int argc, char **argv)
{
	/* --no-huge implies legacy memory, which EAL refuses together with --in-memory; --no-shconf
	 * plus a per-process prefix keeps concurrent runs (two build trees) from meeting in
	 * /var/run/dpdk. */
	char prefix[64];
	char *eal_argv[] = {
		argv[0], (char *)(uintptr_t)"--no-pci", (char *)(uintptr_t)"--no-huge",
		(char *)(uintptr_t)"--no-telemetry", (char *)(uintptr_t)"--no-shconf", prefix,
		(char *)(uintptr_t)"-l", (char *)(uintptr_t)"0", (char *)(uintptr_t)"-m",
		(char *)(uintptr_t)"512", (char *)(uintptr_t)"--log-level=lib.eal:error",
		(char *)(uintptr_t)"--vdev=net_ring0", (char *)(uintptr_t)"--vdev=net_ring1",
		(char *)(uintptr_t)"--vdev=net_ring2", (char *)(uintptr_t)"--vdev=net_ring3",
		(char *)(uintptr_t)"--vdev=net_ring4", (char *)(uintptr_t)"--vdev=net_ring5",
		(char *)(uintptr_t)"--vdev=net_ring6", (char *)(uintptr_t)"--vdev=net_ring7",
		(char *)(uintptr_t)"--vdev=net_ring8", (char *)(uintptr_t)"--vdev=net_ring9",
		(char *)(uintptr_t)"--vdev=net_ring10",
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_loopback_bytes_and_stats),
		cmocka_unit_test(test_tx_buffer_drain),
		cmocka_unit_test(test_jumbo_and_multiseg),
		cmocka_unit_test(test_tx_prepare_sw),
		cmocka_unit_test(test_arp_through_port),
		cmocka_unit_test(test_drops_counted),
		cmocka_unit_test(test_backlog_head_moves),
		cmocka_unit_test(test_close_with_backlog),
		cmocka_unit_test(test_bench),
	};
	int rc;

	(void)argc;
	snprintf(prefix, sizeof(prefix), "--file-prefix=mrtest%ld", (long)getpid());
	if (rte_eal_init((int)(sizeof(eal_argv) / sizeof(eal_argv[0])), eal_argv) < 0) {
		fprintf(stderr, "SKIP: rte_eal_init failed (%s): DPDK EAL cannot start in this "
				"environment\n", rte_strerror(rte_errno));
		return 77;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	rte_eal_cleanup();
	return rc;
}
