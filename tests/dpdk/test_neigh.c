/* SPDX-License-Identifier: MIT
 * Unit tests for drivers/dpdk/neigh: ARP (RFC 826/5227) and IPv6 ND (RFC 4861). Frames are built
 * by hand here, independently of the module's builders, and ICMPv6 checksums are recomputed with
 * a separate implementation. Every malformed frame is fed from an exact-size heap copy so that
 * ASan reports any read past its end.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dpdk/neigh.h"
#include "dpdk/neigh_priv.h"

#define NS_PER_S 1000000000ull

static const uint8_t our_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };
static const uint8_t peer_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 };
static const uint8_t peer2_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x03 };
static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const uint8_t our_ip4[4] = { 10, 0, 0, 1 };
static const uint8_t peer_ip4[4] = { 10, 0, 0, 2 };
/* 2001:db8::1 (ours) and 2001:db8::2 (peer) */
static const uint8_t our_ip6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };
static const uint8_t peer_ip6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2 };

static void gid4(const uint8_t ip[4], uint8_t gid[16])
{
	memset(gid, 0, 10);
	gid[10] = 0xff;
	gid[11] = 0xff;
	memcpy(gid + 12, ip, 4);
}

static struct mr_neigh *make(bool vlan, uint16_t tci)
{
	struct mr_neigh_conf c;
	struct mr_neigh *n;

	memset(&c, 0, sizeof(c));
	memcpy(c.mac, our_mac, 6);
	c.ipv4_en = true;
	memcpy(c.ipv4, our_ip4, 4);
	c.ipv6_en = true;
	memcpy(c.ipv6, our_ip6, 16);
	c.vlan = vlan;
	c.vlan_tci = tci;
	c.capacity = 8;
	c.reachable_ns = 30 * NS_PER_S;
	c.retrans_ns = NS_PER_S;
	c.max_probes = 3;
	c.failed_hold_ns = 5 * NS_PER_S;
	n = mr_neigh_create(&c);
	assert_non_null(n);
	return n;
}

/* Feed a frame through an exact-size heap copy. */
static int feed(struct mr_neigh *n, const uint8_t *f, uint32_t len, uint64_t now, uint8_t *reply,
		uint32_t *rlen)
{
	uint8_t *copy = malloc(len ? len : 1);
	int rc;

	assert_non_null(copy);
	memcpy(copy, f, len);
	rc = mr_neigh_input(n, copy, len, now, reply, MR_NEIGH_FRAME_MAX, rlen);
	free(copy);
	return rc;
}

/* Ethernet (+ tag) header; returns its length. */
static uint32_t eth(uint8_t *b, const uint8_t *dst, const uint8_t *src, int vid, uint16_t type)
{
	uint32_t off = 12;

	memcpy(b, dst, 6);
	memcpy(b + 6, src, 6);
	if (vid >= 0) {
		b[12] = 0x81;
		b[13] = 0x00;
		b[14] = (uint8_t)(0x60 | (vid >> 8)); /* PCP 3 */
		b[15] = (uint8_t)vid;
		off = 16;
	}
	b[off] = (uint8_t)(type >> 8);
	b[off + 1] = (uint8_t)type;
	return off + 2;
}

static uint32_t arp_frame(uint8_t *b, int vid, const uint8_t *edst, uint16_t op, const uint8_t *sha,
			  const uint8_t *spa, const uint8_t *tha, const uint8_t *tpa)
{
	uint32_t off = eth(b, edst, sha, vid, 0x0806);
	uint8_t *a = b + off;

	a[0] = 0; a[1] = 1; a[2] = 8; a[3] = 0; a[4] = 6; a[5] = 4; a[6] = 0; a[7] = (uint8_t)op;
	memcpy(a + 8, sha, 6);
	memcpy(a + 14, spa, 4);
	memcpy(a + 18, tha, 6);
	memcpy(a + 24, tpa, 4);
	memset(a + 28, 0, 18);
	return off + 28 < 60 ? 60 : off + 28;
}

/* Independent ICMPv6 checksum: assemble the pseudo-header explicitly, then one's complement sum. */
static uint16_t ref_icmp6_csum(const uint8_t *ip6)
{
	uint32_t plen = (uint32_t)ip6[4] << 8 | ip6[5];
	uint8_t *buf = calloc(1, 40 + plen + 1);
	uint32_t sum = 0;

	assert_non_null(buf);
	memcpy(buf, ip6 + 8, 32);
	buf[34] = (uint8_t)(plen >> 8);
	buf[35] = (uint8_t)plen;
	buf[39] = 58;
	memcpy(buf + 40, ip6 + 40, plen);
	buf[42] = buf[43] = 0; /* checksum field */
	for (uint32_t i = 0; i < 40 + plen; i += 2)
		sum += (uint32_t)buf[i] << 8 | buf[i + 1];
	free(buf);
	while (sum > 0xffff)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* IPv6 NS/NA with an optional link-layer option; fixes up the checksum. Returns frame length. */
static uint32_t nd_frame(uint8_t *b, int vid, const uint8_t *edst, const uint8_t *esrc,
			 const uint8_t *src, const uint8_t *dst, uint8_t type, uint8_t flags,
			 const uint8_t *target, uint8_t opt, const uint8_t *ll, uint8_t hop)
{
	uint32_t off = eth(b, edst, esrc, vid, 0x86dd);
	uint8_t *ip = b + off, *ic = ip + 40;
	uint32_t plen = 24 + (ll ? 8 : 0);
	uint16_t cs;

	memset(ip, 0, 40 + plen);
	ip[0] = 0x60;
	ip[5] = (uint8_t)plen;
	ip[6] = 58;
	ip[7] = hop;
	memcpy(ip + 8, src, 16);
	memcpy(ip + 24, dst, 16);
	ic[0] = type;
	ic[4] = flags;
	memcpy(ic + 8, target, 16);
	if (ll) {
		ic[24] = opt;
		ic[25] = 1;
		memcpy(ic + 26, ll, 6);
	}
	cs = ref_icmp6_csum(ip);
	ic[2] = (uint8_t)(cs >> 8);
	ic[3] = (uint8_t)cs;
	return off + 40 + plen;
}

static void sol_node(const uint8_t *ip, uint8_t *out)
{
	static const uint8_t p[13] = { 0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff };

	memcpy(out, p, 13);
	memcpy(out + 13, ip + 13, 3);
}

/* ---------------- ARP ---------------- */

static void test_arp_request_for_us_exact_reply(void **state)
{
	/* The reply RFC 826 prescribes, byte for byte, padded to the 60-byte Ethernet minimum. */
	static const uint8_t expect[60] = {
		0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06,
		0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x02,
		0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 10, 0, 0, 1,
		0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 10, 0, 0, 2,
	};
	static const uint8_t zero6[6];
	struct mr_neigh *n = make(false, 0);
	uint8_t f[64], reply[MR_NEIGH_FRAME_MAX], gid[16], mac[6];
	uint32_t len = arp_frame(f, -1, bcast, 1, peer_mac, peer_ip4, zero6, our_ip4), rlen = 99;

	(void)state;
	assert_int_equal(feed(n, f, len, 100, reply, &rlen), MR_NEIGH_CONSUMED);
	assert_int_equal(rlen, 60);
	assert_memory_equal(reply, expect, 60);
	assert_int_equal(mr_neigh_stats(n)->arp_requests_answered, 1);
	assert_int_equal(mr_neigh_stats(n)->arp_rx, 1);
	/* RFC 826: the requester is entered in the cache. */
	gid4(peer_ip4, gid);
	assert_int_equal(mr_neigh_lookup(n, gid, 200, mac), 0);
	assert_memory_equal(mac, peer_mac, 6);
	assert_int_equal(mr_neigh_state_of(n, gid, 200), MR_NEIGH_REACHABLE);
	mr_neigh_destroy(n);
}

static void test_arp_request_other_ip_ignored(void **state)
{
	static const uint8_t other[4] = { 10, 0, 0, 9 };
	static const uint8_t zero6[6];
	struct mr_neigh *n = make(false, 0);
	uint8_t f[64], reply[MR_NEIGH_FRAME_MAX], gid[16];
	uint32_t len = arp_frame(f, -1, bcast, 1, peer_mac, peer_ip4, zero6, other), rlen = 99;

	(void)state;
	assert_int_equal(feed(n, f, len, 100, reply, &rlen), MR_NEIGH_CONSUMED);
	assert_int_equal(rlen, 0);
	assert_int_equal(mr_neigh_stats(n)->arp_ignored, 1);
	assert_int_equal(mr_neigh_stats(n)->arp_requests_answered, 0);
	gid4(peer_ip4, gid);
	assert_int_equal(mr_neigh_state_of(n, gid, 100), MR_NEIGH_FREE); /* not merged: unknown */
	/* Unicast ARP between two other hosts (promiscuous port) is ignored too. */
	len = arp_frame(f, -1, peer2_mac, 1, peer_mac, peer_ip4, zero6, our_ip4);
	assert_int_equal(feed(n, f, len, 100, reply, &rlen), MR_NEIGH_CONSUMED);
	assert_int_equal(rlen, 0);
	assert_int_equal(mr_neigh_stats(n)->arp_ignored, 2);
	mr_neigh_destroy(n);
}

static void test_arp_vlan(void **state)
{
	static const uint8_t zero6[6];
	struct mr_neigh *n = make(true, 0x6064); /* PCP 3, VID 100 */
	uint8_t f[64], reply[MR_NEIGH_FRAME_MAX];
	uint32_t len, rlen;

	(void)state;
	len = arp_frame(f, 100, bcast, 1, peer_mac, peer_ip4, zero6, our_ip4);
	assert_int_equal(feed(n, f, len, 1, reply, &rlen), MR_NEIGH_CONSUMED);
	assert_int_equal(rlen, 60);
	assert_int_equal(reply[12], 0x81);
	assert_int_equal(reply[13], 0x00);
	assert_int_equal(reply[14], 0x60);
	assert_int_equal(reply[15], 0x64);
	assert_int_equal(reply[16], 0x08);
	assert_int_equal(reply[17], 0x06);
	assert_int_equal(reply[18 + 7], 2); /* op reply */
	assert_memory_equal(reply + 18 + 8, our_mac, 6);
	assert_memory_equal(reply + 18 + 24, peer_ip4, 4);
	/* Other VLAN, and untagged: not ours. */
	len = arp_frame(f, 200, bcast, 1, peer_mac, peer_ip4, zero6, our_ip4);
	assert_int_equal(feed(n, f, len, 1, reply, &rlen), MR_NEIGH_CONSUMED);
	assert_int_equal(rlen, 0);
	len = arp_frame(f, -1, bcast, 1, peer_mac, peer_ip4, zero6, our_ip4);
	assert_int_equal(feed(n, f, len, 1, reply, &rlen), MR_NEIGH_CONSUMED);
	assert_int_equal(rlen, 0);
	assert_int_equal(mr_neigh_stats(n)->vlan_mismatch, 2);
	assert_int_equal(mr_neigh_stats(n)->arp_requests_answered, 1);
	mr_neigh_destroy(n);

	/* An untagged port accepts priority-tagged (VID 0) frames (IEEE 802.1Q). */
	n = make(false, 0);
	len = arp_frame(f, 0, bcast, 1, peer_mac, peer_ip4, zero6, our_ip4);
	assert_int_equal(feed(n, f, len, 1, reply, &rlen), MR_NEIGH_CONSUMED);
	assert_int_equal(rlen, 60);
	assert_int_equal(reply[12], 0x08); /* we answer untagged */
	mr_neigh_destroy(n);
}

static void test_non_neigh_frames_pass(void **state)
{
	struct mr_neigh *n = make(false, 0);
	uint8_t f[80], reply[MR_NEIGH_FRAME_MAX];
	uint32_t rlen = 5;

	(void)state;
	memset(f, 0, sizeof(f));
	eth(f, our_mac, peer_mac, -1, 0x0800); /* IPv4 */
	assert_int_equal(feed(n, f, 60, 1, reply, &rlen), MR_NEIGH_PASS);
	assert_int_equal(rlen, 0);
	assert_int_equal(feed(n, f, 10, 1, reply, &rlen), MR_NEIGH_PASS); /* runt */
	assert_int_equal(feed(n, f, 0, 1, reply, &rlen), MR_NEIGH_PASS);
	/* IPv6 UDP (RoCE v2 over IPv6) passes; so does an ICMPv6 echo. */
	eth(f, our_mac, peer_mac, -1, 0x86dd);
	f[14] = 0x60;
	f[14 + 6] = 17;
	assert_int_equal(feed(n, f, 80, 1, reply, &rlen), MR_NEIGH_PASS);
	f[14 + 6] = 58;
	f[14 + 40] = 128;
	assert_int_equal(feed(n, f, 80, 1, reply, &rlen), MR_NEIGH_PASS);
	/* A tagged frame cut inside the tag. */
	eth(f, our_mac, peer_mac, 5, 0x0806);
	assert_int_equal(feed(n, f, 15, 1, reply, &rlen), MR_NEIGH_PASS);
	assert_int_equal(mr_neigh_input(NULL, f, 60, 1, reply, sizeof(reply), &rlen), -EINVAL);
	assert_int_equal(mr_neigh_input(n, NULL, 60, 1, reply, sizeof(reply), &rlen), -EINVAL);
	assert_int_equal(mr_neigh_input(n, f, 60, 1, reply, sizeof(reply), NULL), -EINVAL);
	mr_neigh_destroy(n);
}

static void test_arp_malformed(void **state)
{
	static const uint8_t zero6[6];
	struct mr_neigh *n = make(false, 0);
	uint8_t f[64], g[64], reply[MR_NEIGH_FRAME_MAX];
	uint32_t len = arp_frame(f, -1, bcast, 1, peer_mac, peer_ip4, zero6, our_ip4), rlen;
	uint64_t bad = 0;

	(void)state;
	/* Every truncation inside the ARP body. */
	for (uint32_t l = 14; l < 14 + 28; l++) {
		assert_int_equal(feed(n, f, l, 1, reply, &rlen), MR_NEIGH_CONSUMED);
		assert_int_equal(rlen, 0);
		bad++;
	}
	/* Wrong htype, ptype, hlen, plen, op; multicast and zero sender MAC. */
	for (int k = 0; k < 7; k++) {
		memcpy(g, f, len);
		switch (k) {
		case 0: g[15] = 6; break;           /* htype IEEE 802 */
		case 1: g[16] = 0x86; g[17] = 0xdd; break;
		case 2: g[18] = 8; break;
		case 3: g[19] = 16; break;
		case 4: g[21] = 3; break;           /* RARP request */
		case 5: g[22] = 0x01; break;        /* group bit in SHA */
		case 6: memset(g + 22, 0, 6); break;
		}
		assert_int_equal(feed(n, g, len, 1, reply, &rlen), MR_NEIGH_CONSUMED);
		assert_int_equal(rlen, 0);
		bad++;
	}
	assert_int_equal(mr_neigh_stats(n)->arp_malformed, bad);
	assert_int_equal(mr_neigh_stats(n)->arp_rx, 0);
	assert_int_equal(mr_neigh_stats(n)->arp_requests_answered, 0);
	/* The intact frame is still answered. */
	assert_int_equal(feed(n, f, len, 1, reply, &rlen), MR_NEIGH_CONSUMED);
	assert_int_equal(rlen, 60);
	mr_neigh_destroy(n);
}

static void test_arp_conflict_and_probe(void **state)
{
	static const uint8_t zero4[4], zero6[6];
	struct mr_neigh *n = make(false, 0);
	uint8_t f[64], reply[MR_NEIGH_FRAME_MAX];
	uint32_t len, rlen;

	(void)state;
	/* Someone else announces our address (RFC 5227 2.4). */
	len = arp_frame(f, -1, bcast, 1, peer_mac, our_ip4, zero6, our_ip4);
	assert_int_equal(feed(n, f, len, 1, reply, &rlen), MR_NEIGH_CONSUMED);
	assert_int_equal(rlen, 0);
	assert_int_equal(mr_neigh_stats(n)->addr_conflicts, 1);
	/* Our own announcement looped back is not a conflict. */
	len = arp_frame(f, -1, bcast, 1, our_mac, our_ip4, zero6, our_ip4);
	assert_int_equal(feed(n, f, len, 1, reply, &rlen), MR_NEIGH_CONSUMED);
	assert_int_equal(mr_neigh_stats(n)->addr_conflicts, 1);
	/* An RFC 5227 probe for our address (SPA 0) is answered; nothing is cached for 0.0.0.0. */
	len = arp_frame(f, -1, bcast, 1, peer_mac, zero4, zero6, our_ip4);
	assert_int_equal(feed(n, f, len, 1, reply, &rlen), MR_NEIGH_CONSUMED);
	assert_int_equal(rlen, 60);
	assert_memory_equal(reply, peer_mac, 6);
	assert_memory_equal(reply + 14 + 24, zero4, 4);
	mr_neigh_destroy(n);
}

static void test_gratuitous_arp_exact(void **state)
{
	static const uint8_t expect[42] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06,
		0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01,
		0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 10, 0, 0, 1,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 10, 0, 0, 1,
	};
	static const uint8_t zero18[18];
	struct mr_neigh *n = make(false, 0);
	uint8_t buf[MR_NEIGH_FRAME_MAX];

	(void)state;
	assert_int_equal(mr_neigh_gratuitous_arp(n, buf, sizeof(buf)), 60);
	assert_memory_equal(buf, expect, 42);
	assert_memory_equal(buf + 42, zero18, 18);
	assert_int_equal(mr_neigh_gratuitous_arp(n, buf, 30), -ENOSPC);
	mr_neigh_destroy(n);
}

/* ---------------- cache state machine ---------------- */

static void test_resolve_arp(void **state)
{
	struct mr_neigh *n = make(false, 0);
	uint8_t gid[16], mac[6], buf[MR_NEIGH_FRAME_MAX], f[64], reply[MR_NEIGH_FRAME_MAX];
	uint32_t rlen;
	uint64_t t = 10 * NS_PER_S;
	int len;

	(void)state;
	gid4(peer_ip4, gid);
	assert_int_equal(mr_neigh_lookup(n, gid, t, mac), -EAGAIN);
	assert_int_equal(mr_neigh_stats(n)->unresolved_lookups, 1);
	assert_int_equal(mr_neigh_state_of(n, gid, t), MR_NEIGH_INCOMPLETE);
	len = mr_neigh_solicit(n, gid, t, buf, sizeof(buf));
	assert_int_equal(len, 60);
	assert_memory_equal(buf, bcast, 6);
	assert_memory_equal(buf + 6, our_mac, 6);
	assert_int_equal(buf[21], 1);                 /* op request */
	assert_memory_equal(buf + 22, our_mac, 6);    /* sha */
	assert_memory_equal(buf + 28, our_ip4, 4);    /* spa */
	assert_memory_equal(buf + 38, peer_ip4, 4);   /* tpa */
	/* Not due again before retrans_ns. */
	assert_int_equal(mr_neigh_solicit(n, gid, t + 1, buf, sizeof(buf)), 0);
	assert_int_equal(mr_neigh_poll(n, t + 1, buf, sizeof(buf)), 0);
	assert_int_equal(mr_neigh_next_timeout(n), t + NS_PER_S);
	/* The reply arrives. */
	len = (int)arp_frame(f, -1, our_mac, 2, peer_mac, peer_ip4, our_mac, our_ip4);
	assert_int_equal(feed(n, f, (uint32_t)len, t + 5, reply, &rlen), MR_NEIGH_CONSUMED);
	assert_int_equal(rlen, 0);
	assert_int_equal(mr_neigh_stats(n)->arp_replies_rx, 1);
	assert_int_equal(mr_neigh_stats(n)->resolved, 1);
	assert_int_equal(mr_neigh_lookup(n, gid, t + 6, mac), 0);
	assert_memory_equal(mac, peer_mac, 6);
	assert_int_equal(mr_neigh_solicit(n, gid, t + 6, buf, sizeof(buf)), 0);
	assert_int_equal(mr_neigh_stats(n)->solicits_tx, 1);
	mr_neigh_destroy(n);
}

static void test_retry_exhaustion(void **state)
{
	struct mr_neigh *n = make(false, 0);
	uint8_t gid[16], mac[6], buf[MR_NEIGH_FRAME_MAX];
	uint64_t t = 1000;

	(void)state;
	gid4(peer_ip4, gid);
	assert_int_equal(mr_neigh_lookup(n, gid, t, mac), -EAGAIN);
	assert_int_equal(mr_neigh_solicit(n, gid, t, buf, sizeof(buf)), 60);
	assert_int_equal(mr_neigh_poll(n, t + NS_PER_S - 1, buf, sizeof(buf)), 0);
	assert_int_equal(mr_neigh_poll(n, t + NS_PER_S, buf, sizeof(buf)), 60);
	assert_memory_equal(buf, bcast, 6);
	assert_int_equal(mr_neigh_poll(n, t + NS_PER_S, buf, sizeof(buf)), 0);
	assert_int_equal(mr_neigh_poll(n, t + 2 * NS_PER_S, buf, sizeof(buf)), 60);
	assert_int_equal(mr_neigh_stats(n)->solicits_tx, 3);
	/* Third probe still has its full retrans_ns to be answered. */
	assert_int_equal(mr_neigh_lookup(n, gid, t + 3 * NS_PER_S - 1, mac), -EAGAIN);
	assert_int_equal(mr_neigh_poll(n, t + 3 * NS_PER_S, buf, sizeof(buf)), 0);
	assert_int_equal(mr_neigh_lookup(n, gid, t + 3 * NS_PER_S, mac), -EHOSTUNREACH);
	assert_int_equal(mr_neigh_solicit(n, gid, t + 3 * NS_PER_S, buf, sizeof(buf)), -EHOSTUNREACH);
	assert_int_equal(mr_neigh_stats(n)->unreachable, 1);
	assert_int_equal(mr_neigh_stats(n)->solicits_tx, 3);
	assert_int_equal(mr_neigh_state_of(n, gid, t + 3 * NS_PER_S), MR_NEIGH_FAILED);
	/* After failed_hold_ns (5 s) the address may be tried again. */
	assert_int_equal(mr_neigh_lookup(n, gid, t + 8 * NS_PER_S - 1, mac), -EHOSTUNREACH);
	assert_int_equal(mr_neigh_lookup(n, gid, t + 8 * NS_PER_S, mac), -EAGAIN);
	assert_int_equal(mr_neigh_state_of(n, gid, t + 8 * NS_PER_S), MR_NEIGH_INCOMPLETE);
	mr_neigh_destroy(n);
}

static void test_expiry_and_reprobe(void **state)
{
	struct mr_neigh *n = make(false, 0);
	uint8_t gid[16], mac[6], buf[MR_NEIGH_FRAME_MAX], f[64], reply[MR_NEIGH_FRAME_MAX];
	uint32_t len, rlen;
	uint64_t t0 = 100, t;

	(void)state;
	gid4(peer_ip4, gid);
	assert_int_equal(mr_neigh_solicit(n, gid, t0, buf, sizeof(buf)), 60);
	len = arp_frame(f, -1, our_mac, 2, peer_mac, peer_ip4, our_mac, our_ip4);
	feed(n, f, len, t0, reply, &rlen);
	assert_int_equal(mr_neigh_next_timeout(n), t0 + 30 * NS_PER_S);
	/* Expired: still usable (PROBE), re-validated with unicast requests (RFC 1122 2.3.2.1). */
	t = t0 + 30 * NS_PER_S;
	assert_int_equal(mr_neigh_lookup(n, gid, t, mac), 0);
	assert_memory_equal(mac, peer_mac, 6);
	assert_int_equal(mr_neigh_state_of(n, gid, t), MR_NEIGH_PROBE);
	assert_int_equal(mr_neigh_poll(n, t, buf, sizeof(buf)), 60);
	assert_memory_equal(buf, peer_mac, 6); /* unicast */
	assert_memory_equal(buf + 38, peer_ip4, 4);
	/* Answer: REACHABLE again, another 30 s. */
	feed(n, f, len, t + 10, reply, &rlen);
	assert_int_equal(mr_neigh_state_of(n, gid, t + 10), MR_NEIGH_REACHABLE);
	assert_int_equal(mr_neigh_stats(n)->resolved, 2);
	/* Expire again, no answers: 3 probes, then FAILED. */
	t = t + 10 + 30 * NS_PER_S;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(mr_neigh_lookup(n, gid, t, mac), 0);
		assert_int_equal(mr_neigh_poll(n, t, buf, sizeof(buf)), 60);
		t += NS_PER_S;
	}
	assert_int_equal(mr_neigh_lookup(n, gid, t, mac), -EHOSTUNREACH);
	assert_int_equal(mr_neigh_stats(n)->unreachable, 1);
	mr_neigh_destroy(n);
}

static void test_eviction_and_static(void **state)
{
	struct mr_neigh *n = make(false, 0); /* capacity 8 */
	uint8_t gid[16], mac[6], ip[4] = { 10, 0, 1, 0 };

	(void)state;
	ip[3] = 200;
	gid4(ip, gid);
	assert_int_equal(mr_neigh_add_static(n, gid, peer2_mac), 0);
	for (int i = 0; i < 8; i++) {
		ip[3] = (uint8_t)(10 + i);
		gid4(ip, gid);
		assert_int_equal(mr_neigh_lookup(n, gid, 100 + (uint64_t)i, mac), -EAGAIN);
	}
	/* 1 static + 8 dynamic in 8 slots: the least recently used (10.0.1.10) went. */
	assert_int_equal(mr_neigh_stats(n)->evictions, 1);
	ip[3] = 10;
	gid4(ip, gid);
	assert_int_equal(mr_neigh_state_of(n, gid, 200), MR_NEIGH_FREE);
	ip[3] = 17;
	gid4(ip, gid);
	assert_int_equal(mr_neigh_state_of(n, gid, 200), MR_NEIGH_INCOMPLETE);
	/* The static entry survives eviction and time. */
	ip[3] = 200;
	gid4(ip, gid);
	assert_int_equal(mr_neigh_lookup(n, gid, UINT64_MAX - 1, mac), 0);
	assert_memory_equal(mac, peer2_mac, 6);
	assert_int_equal(mr_neigh_state_of(n, gid, UINT64_MAX - 1), MR_NEIGH_PERMANENT);
	mr_neigh_destroy(n);
}

static void test_api_errors(void **state)
{
	struct mr_neigh_conf c;
	struct mr_neigh *n;
	uint8_t gid[16], mac[6], buf[MR_NEIGH_FRAME_MAX];
	static const uint8_t mcast4[4] = { 224, 0, 0, 1 }, zero4[4];

	(void)state;
	errno = 0;
	assert_null(mr_neigh_create(NULL));
	assert_int_equal(errno, EINVAL);
	memset(&c, 0, sizeof(c));
	memcpy(c.mac, our_mac, 6);
	assert_null(mr_neigh_create(&c)); /* no family */
	c.ipv4_en = true;
	memcpy(c.ipv4, zero4, 4);
	assert_null(mr_neigh_create(&c)); /* 0.0.0.0 */
	memcpy(c.ipv4, our_ip4, 4);
	c.mac[0] = 0x01;
	assert_null(mr_neigh_create(&c)); /* group MAC */
	memcpy(c.mac, our_mac, 6);
	c.vlan = true;
	c.vlan_tci = 0xfff;
	assert_null(mr_neigh_create(&c)); /* reserved VID */
	c.vlan = false;
	n = mr_neigh_create(&c); /* IPv4 only */
	assert_non_null(n);
	assert_int_equal(mr_neigh_lookup(n, peer_ip6, 1, mac), -EAFNOSUPPORT);
	assert_int_equal(mr_neigh_unsolicited_na(n, buf, sizeof(buf)), -EAFNOSUPPORT);
	gid4(mcast4, gid);
	assert_int_equal(mr_neigh_lookup(n, gid, 1, mac), -EINVAL);
	gid4(zero4, gid);
	assert_int_equal(mr_neigh_solicit(n, gid, 1, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(mr_neigh_lookup(NULL, gid, 1, mac), -EINVAL);
	gid4(peer_ip4, gid);
	assert_int_equal(mr_neigh_solicit(n, gid, 1, buf, 20), -ENOSPC);
	/* -ENOSPC did not consume a probe. */
	assert_int_equal(mr_neigh_solicit(n, gid, 1, buf, sizeof(buf)), 60);
	assert_int_equal(mr_neigh_add_static(n, gid, bcast), -EINVAL);
	assert_string_equal(mr_neigh_state_str(MR_NEIGH_PROBE), "PROBE");
	mr_neigh_destroy(n);
	mr_neigh_destroy(NULL);
}

/* ---------------- IPv6 ND ---------------- */

static void check_na(const uint8_t *r, uint32_t rlen, const uint8_t *edst, const uint8_t *ipdst,
		     uint8_t flags)
{
	const uint8_t *ip = r + 14, *ic = ip + 40;
	uint16_t cs;

	assert_int_equal(rlen, 14 + 40 + 32);
	assert_memory_equal(r, edst, 6);
	assert_memory_equal(r + 6, our_mac, 6);
	assert_int_equal(r[12], 0x86);
	assert_int_equal(r[13], 0xdd);
	assert_int_equal(ip[0], 0x60);
	assert_int_equal(ip[4] << 8 | ip[5], 32);
	assert_int_equal(ip[6], 58);
	assert_int_equal(ip[7], 255);
	assert_memory_equal(ip + 8, our_ip6, 16);
	assert_memory_equal(ip + 24, ipdst, 16);
	assert_int_equal(ic[0], 136);
	assert_int_equal(ic[1], 0);
	assert_int_equal(ic[4], flags);
	assert_memory_equal(ic + 8, our_ip6, 16);
	assert_int_equal(ic[24], 2); /* TLLAO */
	assert_int_equal(ic[25], 1);
	assert_memory_equal(ic + 26, our_mac, 6);
	cs = ref_icmp6_csum(ip);
	assert_int_equal(ic[2] << 8 | ic[3], cs);
}

static void test_ns_for_us_answered(void **state)
{
	struct mr_neigh *n = make(false, 0);
	uint8_t f[128], reply[MR_NEIGH_FRAME_MAX], sn[16], snmac[6], mac[6];
	uint32_t len, rlen;

	(void)state;
	sol_node(our_ip6, sn);
	snmac[0] = snmac[1] = 0x33;
	memcpy(snmac + 2, sn + 12, 4);
	/* To our solicited-node group, with SLLAO. */
	len = nd_frame(f, -1, snmac, peer_mac, peer_ip6, sn, 135, 0, our_ip6, 1, peer_mac, 255);
	assert_int_equal(feed(n, f, len, 7, reply, &rlen), MR_NEIGH_CONSUMED);
	check_na(reply, rlen, peer_mac, peer_ip6, 0x60); /* S | O */
	assert_int_equal(mr_neigh_stats(n)->ns_answered, 1);
	/* The solicitor is cached (RFC 4861 7.2.3). */
	assert_int_equal(mr_neigh_lookup(n, peer_ip6, 8, mac), 0);
	assert_memory_equal(mac, peer_mac, 6);
	/* Unicast to our address without SLLAO: answered to the frame's source MAC. */
	len = nd_frame(f, -1, our_mac, peer2_mac, peer_ip6, our_ip6, 135, 0, our_ip6, 0, NULL, 255);
	assert_int_equal(feed(n, f, len, 9, reply, &rlen), MR_NEIGH_CONSUMED);
	check_na(reply, rlen, peer2_mac, peer_ip6, 0x60);
	/* DAD probe from :: -> NA to all-nodes, Solicited clear (RFC 4861 7.2.4). */
	{
		static const uint8_t unspec[16];
		static const uint8_t all_nodes[16] = { 0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };
		static const uint8_t all_nodes_mac[6] = { 0x33, 0x33, 0, 0, 0, 1 };

		len = nd_frame(f, -1, snmac, peer_mac, unspec, sn, 135, 0, our_ip6, 0, NULL, 255);
		assert_int_equal(feed(n, f, len, 9, reply, &rlen), MR_NEIGH_CONSUMED);
		check_na(reply, rlen, all_nodes_mac, all_nodes, 0x20);
		/* Unsolicited NA (RFC 4861 7.2.6) looks the same. */
		rlen = (uint32_t)mr_neigh_unsolicited_na(n, reply, sizeof(reply));
		check_na(reply, rlen, all_nodes_mac, all_nodes, 0x20);
	}
	assert_int_equal(mr_neigh_stats(n)->ns_answered, 3);
	mr_neigh_destroy(n);
}

static void test_ns_ignored_and_invalid(void **state)
{
	static const uint8_t other[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9 };
	static const uint8_t unspec[16];
	struct mr_neigh *n = make(false, 0);
	uint8_t f[128], g[128], reply[MR_NEIGH_FRAME_MAX], sn[16], snmac[6] = { 0x33, 0x33 };
	uint32_t len, rlen;
	uint64_t malformed = 0;

	(void)state;
	sol_node(other, sn);
	memcpy(snmac + 2, sn + 12, 4);
	/* NS for someone else's address. */
	len = nd_frame(f, -1, snmac, peer_mac, peer_ip6, sn, 135, 0, other, 1, peer_mac, 255);
	assert_int_equal(feed(n, f, len, 1, reply, &rlen), MR_NEIGH_CONSUMED);
	assert_int_equal(rlen, 0);
	assert_int_equal(mr_neigh_stats(n)->nd_ignored, 1);

	sol_node(our_ip6, sn);
	memcpy(snmac + 2, sn + 12, 4);
	len = nd_frame(f, -1, snmac, peer_mac, peer_ip6, sn, 135, 0, our_ip6, 1, peer_mac, 255);
	/* Bad checksum. */
	memcpy(g, f, len);
	g[14 + 40 + 3] ^= 0x01;
	assert_int_equal(feed(n, g, len, 1, reply, &rlen), MR_NEIGH_CONSUMED);
	assert_int_equal(rlen, 0);
	assert_int_equal(mr_neigh_stats(n)->nd_bad_csum, 1);
	/* Hop limit != 255 (RFC 4861 7.1.1; checksum recomputed so only the hop limit is wrong). */
	len = nd_frame(g, -1, snmac, peer_mac, peer_ip6, sn, 135, 0, our_ip6, 1, peer_mac, 64);
	assert_int_equal(feed(n, g, len, 1, reply, &rlen), MR_NEIGH_CONSUMED);
	assert_int_equal(rlen, 0);
	malformed++;
	/* Option length 0. */
	len = nd_frame(g, -1, snmac, peer_mac, peer_ip6, sn, 135, 0, our_ip6, 1, peer_mac, 255);
	g[14 + 40 + 25] = 0;
	{
		uint16_t cs = ref_icmp6_csum(g + 14);

		g[14 + 40 + 2] = (uint8_t)(cs >> 8);
		g[14 + 40 + 3] = (uint8_t)cs;
	}
	assert_int_equal(feed(n, g, len, 1, reply, &rlen), MR_NEIGH_CONSUMED);
	assert_int_equal(rlen, 0);
	malformed++;
	/* DAD probe must not carry an SLLAO. */
	len = nd_frame(g, -1, snmac, peer_mac, unspec, sn, 135, 0, our_ip6, 1, peer_mac, 255);
	assert_int_equal(feed(n, g, len, 1, reply, &rlen), MR_NEIGH_CONSUMED);
	assert_int_equal(rlen, 0);
	malformed++;
	/* Multicast target. */
	len = nd_frame(g, -1, snmac, peer_mac, peer_ip6, sn, 135, 0, sn, 1, peer_mac, 255);
	assert_int_equal(feed(n, g, len, 1, reply, &rlen), MR_NEIGH_CONSUMED);
	malformed++;
	/* Every truncation that still shows the ICMPv6 type byte. */
	len = nd_frame(f, -1, snmac, peer_mac, peer_ip6, sn, 135, 0, our_ip6, 1, peer_mac, 255);
	for (uint32_t l = 14 + 40 + 1; l < len; l++) {
		assert_int_equal(feed(n, f, l, 1, reply, &rlen), MR_NEIGH_CONSUMED);
		assert_int_equal(rlen, 0);
		malformed++;
	}
	for (uint32_t l = 14; l < 14 + 40 + 1; l++)
		assert_int_equal(feed(n, f, l, 1, reply, &rlen), MR_NEIGH_PASS);
	assert_int_equal(mr_neigh_stats(n)->nd_malformed, malformed);
	assert_int_equal(mr_neigh_stats(n)->ns_answered, 0);
	/* And the intact one is answered. */
	assert_int_equal(feed(n, f, len, 1, reply, &rlen), MR_NEIGH_CONSUMED);
	check_na(reply, rlen, peer_mac, peer_ip6, 0x60);
	mr_neigh_destroy(n);
}

static void test_resolve_nd(void **state)
{
	struct mr_neigh *n = make(true, 0x0005); /* VLAN 5 */
	uint8_t buf[MR_NEIGH_FRAME_MAX], f[128], reply[MR_NEIGH_FRAME_MAX], sn[16], mac[6];
	const uint8_t *ip = buf + 18, *ic = ip + 40;
	uint32_t len, rlen;
	int l;

	(void)state;
	assert_int_equal(mr_neigh_lookup(n, peer_ip6, 1, mac), -EAGAIN);
	l = mr_neigh_solicit(n, peer_ip6, 1, buf, sizeof(buf));
	assert_int_equal(l, 18 + 40 + 32);
	sol_node(peer_ip6, sn);
	/* 33:33:ff:00:00:02, tagged VID 5, IPv6 to ff02::1:ff00:2 (RFC 2464 7, RFC 4291 2.7.1). */
	assert_int_equal(buf[0], 0x33);
	assert_int_equal(buf[1], 0x33);
	assert_int_equal(buf[2], 0xff);
	assert_int_equal(buf[5], 0x02);
	assert_int_equal(buf[12] << 8 | buf[13], 0x8100);
	assert_int_equal(buf[14] << 8 | buf[15], 5);
	assert_int_equal(buf[16] << 8 | buf[17], 0x86dd);
	assert_int_equal(ip[7], 255);
	assert_memory_equal(ip + 8, our_ip6, 16);
	assert_memory_equal(ip + 24, sn, 16);
	assert_int_equal(ic[0], 135);
	assert_memory_equal(ic + 8, peer_ip6, 16);
	assert_int_equal(ic[24], 1); /* SLLAO */
	assert_memory_equal(ic + 26, our_mac, 6);
	assert_int_equal(ic[2] << 8 | ic[3], ref_icmp6_csum(ip));
	/* NA without TLLAO does not resolve an INCOMPLETE entry (RFC 4861 7.2.5). */
	len = nd_frame(f, 5, our_mac, peer_mac, peer_ip6, our_ip6, 136, 0x60, peer_ip6, 0, NULL, 255);
	assert_int_equal(feed(n, f, len, 2, reply, &rlen), MR_NEIGH_CONSUMED);
	assert_int_equal(mr_neigh_lookup(n, peer_ip6, 2, mac), -EAGAIN);
	/* NA with S and TLLAO resolves. */
	len = nd_frame(f, 5, our_mac, peer_mac, peer_ip6, our_ip6, 136, 0x60, peer_ip6, 2, peer_mac, 255);
	assert_int_equal(feed(n, f, len, 3, reply, &rlen), MR_NEIGH_CONSUMED);
	assert_int_equal(rlen, 0);
	assert_int_equal(mr_neigh_lookup(n, peer_ip6, 4, mac), 0);
	assert_memory_equal(mac, peer_mac, 6);
	assert_int_equal(mr_neigh_stats(n)->na_rx, 2);
	assert_int_equal(mr_neigh_stats(n)->resolved, 1);
	/* A different MAC without Override is ignored; with Override and S=0 it is taken but
	 * re-validated (PROBE). */
	len = nd_frame(f, 5, our_mac, peer2_mac, peer_ip6, our_ip6, 136, 0x40, peer_ip6, 2, peer2_mac,
		       255);
	feed(n, f, len, 5, reply, &rlen);
	assert_int_equal(mr_neigh_lookup(n, peer_ip6, 5, mac), 0);
	assert_memory_equal(mac, peer_mac, 6);
	len = nd_frame(f, 5, our_mac, peer2_mac, peer_ip6, our_ip6, 136, 0x20, peer_ip6, 2, peer2_mac,
		       255);
	feed(n, f, len, 6, reply, &rlen);
	assert_int_equal(mr_neigh_lookup(n, peer_ip6, 6, mac), 0);
	assert_memory_equal(mac, peer2_mac, 6);
	assert_int_equal(mr_neigh_state_of(n, peer_ip6, 6), MR_NEIGH_PROBE);
	/* The re-validation probe is unicast NS to the new MAC and the target address. */
	l = mr_neigh_poll(n, 6, buf, sizeof(buf));
	assert_int_equal(l, 18 + 40 + 32);
	assert_memory_equal(buf, peer2_mac, 6);
	assert_memory_equal(ip + 24, peer_ip6, 16);
	/* NA with S set to a multicast destination is invalid (RFC 4861 7.1.2). */
	len = nd_frame(f, 5, bcast, peer_mac, peer_ip6, sn, 136, 0x60, peer_ip6, 2, peer_mac, 255);
	feed(n, f, len, 7, reply, &rlen);
	assert_int_equal(mr_neigh_stats(n)->nd_malformed, 1);
	/* NA for an address nobody asked about: discarded (RFC 4861 7.2.5). */
	{
		static const uint8_t x[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7 };

		len = nd_frame(f, 5, our_mac, peer_mac, x, our_ip6, 136, 0x60, x, 2, peer_mac, 255);
		feed(n, f, len, 7, reply, &rlen);
		assert_int_equal(mr_neigh_state_of(n, x, 7), MR_NEIGH_FREE);
	}
	/* Someone else defends our address. */
	len = nd_frame(f, 5, our_mac, peer_mac, our_ip6, our_ip6, 136, 0x20, our_ip6, 2, peer_mac, 255);
	feed(n, f, len, 8, reply, &rlen);
	assert_int_equal(mr_neigh_stats(n)->addr_conflicts, 1);
	mr_neigh_destroy(n);
}

/* Random bytes behind ARP and NS/NA headers: no crash (ASan), and every frame lands in exactly
 * one counter. */
static void test_random_frames(void **state)
{
	struct mr_neigh *n = make(false, 0);
	uint8_t f[128], reply[MR_NEIGH_FRAME_MAX];
	uint32_t rlen, seed = 12345, arp = 0, nd = 0;
	const struct mr_neigh_stats *s = mr_neigh_stats(n);

	(void)state;
	for (int i = 0; i < 20000; i++) {
		uint32_t len;

		for (unsigned int k = 0; k < sizeof(f); k++) {
			seed = seed * 1103515245u + 12345u;
			f[k] = (uint8_t)(seed >> 16);
		}
		seed = seed * 1103515245u + 12345u;
		len = 14 + (seed >> 16) % (sizeof(f) - 14);
		if (i & 1) {
			f[12] = 0x08; f[13] = 0x06;
			if (i & 2) { f[14] = 0; f[15] = 1; f[16] = 8; f[17] = 0; f[18] = 6; f[19] = 4; }
			arp++;
		} else {
			f[12] = 0x86; f[13] = 0xdd;
			f[14] = 0x60;
			f[14 + 6] = 58;
			f[14 + 7] = 255;
			if (len < 14 + 41)
				len = 14 + 41;
			f[14 + 40] = (i & 2) ? 135 : 136;
			f[14 + 41] = 0;
			nd++;
		}
		assert_int_equal(feed(n, f, len, (uint64_t)i, reply, &rlen), MR_NEIGH_CONSUMED);
		assert_true(rlen <= MR_NEIGH_FRAME_MAX);
	}
	assert_int_equal(s->arp_rx + s->arp_malformed + s->vlan_mismatch + s->nd_rx + s->nd_malformed +
				 s->nd_bad_csum,
			 arp + nd);
	mr_neigh_destroy(n);
}

/* The earliest timer by a scan of the table (what mr_neigh_next_timeout() did every call). */
static uint64_t next_timeout_scan(const struct mr_neigh *n)
{
	uint64_t t = UINT64_MAX;

	for (uint32_t i = 0; i < n->conf.capacity; i++)
		if (n->tab[i].state != MR_NEIGH_FREE && n->tab[i].state != MR_NEIGH_PERMANENT &&
		    n->tab[i].expires < t)
			t = n->tab[i].expires;
	return t;
}

/* mr_neigh_next_timeout() answers from a cache kept at every timer write (neigh_priv.h): after
 * any mix of lookups (new entries, evictions of a full table), confirmations, statics, probes,
 * failures and expiries it equals the scan of the whole table. */
static void test_next_timeout_cache(void **state)
{
	struct mr_neigh *n = make(false, 0);
	uint8_t buf[128], mac[6] = { 2, 0, 0, 0, 0, 9 }, gid[16];
	uint64_t now = 1000 * NS_PER_S;
	uint32_t x = 12345;

	(void)state;
	assert_int_equal(mr_neigh_next_timeout(n), UINT64_MAX);
	for (int step = 0; step < 20000; step++) {
		uint8_t ip[4] = { 198, 18, 0, 0 };

		x = x * 1103515245u + 12345u;
		ip[3] = (uint8_t)(2 + (x >> 16) % 12); /* 12 peers, 8 entries: evictions */
		gid4(ip, gid);
		now += ((x >> 8) % 4 == 0) ? (uint64_t)((x >> 4) % 3000) * 1000000ull : 1000;
		switch ((x >> 24) % 6) {
		case 0:
		case 1:
			(void)mr_neigh_lookup(n, gid, now, mac);
			break;
		case 2: {
			struct mr_neigh_entry *e = mr_neigh_find(n, gid, now);

			if (e != NULL)
				mr_neigh_confirm(n, e, mac, now);
			break;
		}
		case 3:
			if ((x & 63) == 0)
				(void)mr_neigh_add_static(n, gid, mac);
			break;
		default:
			while (mr_neigh_poll(n, now, buf, sizeof(buf)) > 0)
				;
			break;
		}
		assert_int_equal(mr_neigh_next_timeout(n), next_timeout_scan(n));
	}
	mr_neigh_destroy(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_arp_request_for_us_exact_reply),
		cmocka_unit_test(test_arp_request_other_ip_ignored),
		cmocka_unit_test(test_arp_vlan),
		cmocka_unit_test(test_non_neigh_frames_pass),
		cmocka_unit_test(test_arp_malformed),
		cmocka_unit_test(test_arp_conflict_and_probe),
		cmocka_unit_test(test_gratuitous_arp_exact),
		cmocka_unit_test(test_resolve_arp),
		cmocka_unit_test(test_retry_exhaustion),
		cmocka_unit_test(test_expiry_and_reprobe),
		cmocka_unit_test(test_eviction_and_static),
		cmocka_unit_test(test_api_errors),
		cmocka_unit_test(test_ns_for_us_answered),
		cmocka_unit_test(test_ns_ignored_and_invalid),
		cmocka_unit_test(test_resolve_nd),
		cmocka_unit_test(test_random_frames),
		cmocka_unit_test(test_next_timeout_cache),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
