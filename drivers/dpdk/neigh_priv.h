/* SPDX-License-Identifier: MIT
 * Private to neigh*.c: the cache layout and the helpers shared by the ARP and ND halves.
 * Never include this outside drivers/dpdk/neigh*.c.
 */
#ifndef MR_DRIVERS_DPDK_NEIGH_PRIV_H
#define MR_DRIVERS_DPDK_NEIGH_PRIV_H

#include <stdbool.h>
#include <stdint.h>

#include "neigh.h"

#define MR_ETH_HDR_LEN 14
#define MR_VLAN_TAG_LEN 4
#define MR_ETHERTYPE_VLAN 0x8100
#define MR_ETHERTYPE_ARP 0x0806
#define MR_ETHERTYPE_IPV4 0x0800
#define MR_ETHERTYPE_IPV6 0x86dd
#define MR_ARP_LEN 28            /* RFC 826 for Ethernet/IPv4: 8 + 2 * (6 + 4) */
#define MR_IPV6_HDR_LEN 40
#define MR_IPPROTO_ICMPV6 58
#define MR_ND_NS 135             /* RFC 4861 4.3 */
#define MR_ND_NA 136             /* RFC 4861 4.4 */
#define MR_ND_OPT_SLLAO 1        /* RFC 4861 4.6.1 */
#define MR_ND_OPT_TLLAO 2
#define MR_ND_HOP_LIMIT 255      /* RFC 4861 7.1.1: proves the sender is on-link */

struct mr_neigh_entry {
	uint8_t addr[16];   /* IPv6 or IPv4-mapped */
	uint8_t mac[6];
	uint8_t state;      /* enum mr_neigh_state */
	uint8_t probes;     /* requests sent in the current INCOMPLETE/PROBE episode */
	uint64_t expires;   /* REACHABLE: end of life; INCOMPLETE/PROBE: next request; FAILED: end */
	uint64_t last_used; /* for eviction of the least recently used entry */
};

struct mr_neigh {
	struct mr_neigh_conf conf;
	struct mr_neigh_stats stats;
	uint8_t gid4[16];   /* our IPv4 address, IPv4-mapped */
	struct mr_neigh_entry *tab;
	/* mr_neigh_next_timeout()'s answer: the earliest 'expires' of an entry in a timed state
	 * (not FREE or PERMANENT), kept by mr_neigh_set_expires()/mr_neigh_untimed(); when
	 * due_exact is false the next call rescans the table. The engine asks every loop. */
	uint64_t due;
	bool due_exact;
};

/* Every write of a timed entry's 'expires' goes through here. */
static inline void mr_neigh_set_expires(struct mr_neigh *n, struct mr_neigh_entry *e, uint64_t t)
{
	if (t <= n->due)
		n->due = t;             /* the new earliest (still exact if it was) */
	else if (e->expires == n->due)
		n->due_exact = false;   /* the earliest may have been this entry's old time */
	e->expires = t;
}

/* Before e leaves the timed states (freed, evicted, made PERMANENT). */
static inline void mr_neigh_untimed(struct mr_neigh *n, const struct mr_neigh_entry *e)
{
	if (e->expires == n->due)
		n->due_exact = false;
}

static inline uint16_t mr_neigh_be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline void mr_neigh_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* The cache (neigh.c). find() applies the time-driven transitions before returning the entry
 * (or NULL if there is none or it just expired out of FAILED). */
struct mr_neigh_entry *mr_neigh_find(struct mr_neigh *neigh, const uint8_t addr[16], uint64_t now);
/* Existing entry, or a new INCOMPLETE one (evicting the least recently used entry if full);
 * NULL only when every slot is PERMANENT. */
struct mr_neigh_entry *mr_neigh_get(struct mr_neigh *neigh, const uint8_t addr[16], uint64_t now);
/* An answer arrived: the entry becomes REACHABLE with mac. */
void mr_neigh_confirm(struct mr_neigh *neigh, struct mr_neigh_entry *e, const uint8_t mac[6],
		      uint64_t now);

/* Frame helpers (neigh.c). */
/* Not unspecified, multicast or (IPv4) limited broadcast. */
bool mr_neigh_addr_is_unicast(const uint8_t a[16]);
bool mr_neigh_mac_is_mcast(const uint8_t mac[6]);
bool mr_neigh_mac_is_zero(const uint8_t mac[6]);
/* Ethernet header (+ our 802.1Q tag); returns its length, or 0 if cap is too small. */
uint32_t mr_neigh_l2_put(const struct mr_neigh *neigh, uint8_t *buf, uint32_t cap,
			 const uint8_t dmac[6], uint16_t ethertype);
/* Zero-pad to the Ethernet minimum; returns the padded length (or len if cap is too small). */
uint32_t mr_neigh_pad(uint8_t *buf, uint32_t len, uint32_t cap);

/* ARP half (neigh_arp.c). arp/len: the bytes after the Ethernet/VLAN header. */
void mr_neigh_arp_input(struct mr_neigh *neigh, const uint8_t *dmac, const uint8_t *arp,
			uint32_t len, uint64_t now, uint8_t *reply, uint32_t cap, uint32_t *reply_len);
int mr_neigh_arp_build(const struct mr_neigh *neigh, uint16_t op, const uint8_t dmac[6],
		       const uint8_t tha[6], const uint8_t tpa[4], uint8_t *buf, uint32_t cap);

/* ND half (neigh_nd.c). ip6/len: the bytes after the Ethernet/VLAN header, already known to hold
 * an IPv6 header with next header ICMPv6 and a type byte of NS or NA. */
void mr_neigh_nd_input(struct mr_neigh *neigh, const uint8_t *dmac, const uint8_t *smac,
		       const uint8_t *ip6, uint32_t len, uint64_t now, uint8_t *reply, uint32_t cap,
		       uint32_t *reply_len);
/* NS for target: to its solicited-node group, or unicast to mac when mac != NULL. */
int mr_neigh_ns_build(const struct mr_neigh *neigh, const uint8_t target[16], const uint8_t *mac,
		      uint8_t *buf, uint32_t cap);
/* NA for our address to dst_ip/dmac, Override set, Solicited as given. */
int mr_neigh_na_build(const struct mr_neigh *neigh, const uint8_t dst_ip[16],
		      const uint8_t dmac[6], bool solicited, uint8_t *buf, uint32_t cap);
/* RFC 4443 2.3 checksum over the RFC 8200 8.1 pseudo-header and the ICMPv6 message. */
uint16_t mr_neigh_icmp6_csum(const uint8_t src[16], const uint8_t dst[16], const uint8_t *icmp,
			     uint32_t len);

#endif
