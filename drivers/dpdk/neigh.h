/* SPDX-License-Identifier: MIT
 * Neighbour resolution for the RoCE v2 port: ARP (RFC 826, RFC 5227) and IPv6 Neighbor Discovery
 * (RFC 4861), on plain byte buffers. No DPDK include, no I/O, no clock: the caller passes every
 * received frame to mr_neigh_input(), sends whatever frames the module hands back, and passes a
 * monotonic time in nanoseconds.
 *
 * Addresses are 16-byte GIDs as RoCE v2 uses them (IBTA A17.4.5.1): IPv6 addresses, or IPv4
 * addresses in IPv4-mapped form ::ffff:a.b.c.d. An IPv4-mapped address is resolved with ARP, any
 * other with ND.
 *
 * Packets waiting for resolution are DROPPED, not queued: mr_neigh_lookup() returns -EAGAIN and
 * counts it in stats.unresolved_lookups. RoCE RC recovers from the loss by its own retransmission
 * (IBA 9.7.6.1), and the data path is expected to cache the MAC in its path (struct mr_path.dmac)
 * after the first successful lookup, so queueing would only duplicate that retry logic.
 *
 * Typical use on the control thread:
 *     rc = mr_neigh_lookup(n, gid, now, mac);
 *     if (rc == -EAGAIN && (len = mr_neigh_solicit(n, gid, now, buf, sizeof(buf))) > 0)
 *             send(buf, len);
 *     ... for every received frame:
 *     if (mr_neigh_input(n, frame, flen, now, reply, sizeof(reply), &rlen) == MR_NEIGH_CONSUMED) {
 *             if (rlen) send(reply, rlen);
 *     } else { hand the frame to the RoCE parser }
 *     ... periodically (at mr_neigh_next_timeout()): while ((len = mr_neigh_poll(n, now, buf,
 *             sizeof(buf))) > 0) send(buf, len);   (retransmitted requests, re-validation probes)
 *
 * Not thread-safe: one owner (the control thread) per struct mr_neigh. ARP/ND frames arrive on
 * whichever rx queue the NIC picks (RSS sends non-IP traffic to queue 0): an engine lcore that
 * sees one should pass it to the owner (e.g. through an rte_ring) rather than call
 * mr_neigh_input() itself, and engines should keep the resolved MAC in their paths.
 */
#ifndef MR_DRIVERS_DPDK_NEIGH_H
#define MR_DRIVERS_DPDK_NEIGH_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest frame this module builds (NA/NS with an 802.1Q tag: 14 + 4 + 40 + 32 = 90 bytes). */
#define MR_NEIGH_FRAME_MAX 128
/* Frames are padded to the Ethernet minimum (64 bytes with FCS, IEEE 802.3 4.4.2). */
#define MR_NEIGH_ETH_MIN_LEN 60

struct mr_neigh_conf {
	uint8_t mac[6];          /* our unicast MAC */
	bool ipv4_en;            /* answer ARP for ipv4 and resolve IPv4-mapped GIDs */
	uint8_t ipv4[4];
	bool ipv6_en;            /* answer NS for ipv6 and resolve other GIDs */
	uint8_t ipv6[16];
	bool vlan;               /* tag our frames with vlan_tci and accept only that VID */
	uint16_t vlan_tci;       /* PCP(3) DEI(1) VID(12) */
	uint32_t capacity;       /* cache entries; 0 -> 256 */
	uint64_t reachable_ns;   /* entry lifetime after confirmation; 0 -> 30 s (RFC 4861 ch. 10) */
	uint64_t retrans_ns;     /* time between requests; 0 -> 1 s (RFC 4861 RETRANS_TIMER) */
	uint32_t max_probes;     /* requests before giving up; 0 -> 3 (MAX_MULTICAST_SOLICIT) */
	uint64_t failed_hold_ns; /* how long -EHOSTUNREACH is remembered; 0 -> 1 s */
};

struct mr_neigh_stats {
	uint64_t arp_rx;              /* well-formed ARP frames seen */
	uint64_t arp_requests_answered;
	uint64_t arp_replies_rx;
	uint64_t arp_ignored;         /* well-formed but not for our address */
	uint64_t arp_malformed;       /* truncated, wrong htype/ptype/lengths/op, multicast sender */
	uint64_t nd_rx;               /* well-formed NS/NA seen */
	uint64_t ns_answered;
	uint64_t na_rx;
	uint64_t nd_ignored;          /* well-formed but not for our address / unknown target */
	uint64_t nd_malformed;        /* RFC 4861 7.1.1/7.1.2 validity checks failed */
	uint64_t nd_bad_csum;         /* ICMPv6 checksum wrong (RFC 4443 2.3) */
	uint64_t vlan_mismatch;       /* ARP/ND frame on a VLAN that is not ours */
	uint64_t addr_conflicts;      /* someone else claims our address (RFC 5227 2.4) */
	uint64_t solicits_tx;         /* requests built by mr_neigh_solicit/mr_neigh_poll */
	uint64_t resolved;            /* INCOMPLETE/PROBE -> REACHABLE transitions */
	uint64_t unresolved_lookups;  /* lookups answered -EAGAIN (the caller's packet is dropped) */
	uint64_t unreachable;         /* resolutions that ran out of probes */
	uint64_t evictions;           /* entries recycled because the cache was full */
};

/* Entry states (a reduced RFC 4861 7.3.2 state machine; STALE and DELAY are folded into PROBE,
 * which keeps using the old MAC while unicast probes re-confirm it). */
enum mr_neigh_state {
	MR_NEIGH_FREE = 0,
	MR_NEIGH_INCOMPLETE,  /* requests sent, no answer yet: lookups return -EAGAIN */
	MR_NEIGH_REACHABLE,   /* confirmed within reachable_ns */
	MR_NEIGH_PROBE,       /* expired: MAC still used while unicast requests re-confirm it */
	MR_NEIGH_FAILED,      /* probes exhausted: lookups return -EHOSTUNREACH for failed_hold_ns */
	MR_NEIGH_PERMANENT,   /* static entry, never expires */
};

/* Result of mr_neigh_input(). */
enum mr_neigh_verdict {
	MR_NEIGH_PASS = 0,     /* not ARP/NS/NA: hand the frame to the next parser */
	MR_NEIGH_CONSUMED = 1, /* ARP/NS/NA (valid or not): handled here, do not parse further */
};

struct mr_neigh;

/* Create a resolver. Returns NULL and sets errno (EINVAL: bad conf, e.g. multicast MAC, no
 * address family enabled, VID 4095; ENOMEM). */
struct mr_neigh *mr_neigh_create(const struct mr_neigh_conf *conf);
void mr_neigh_destroy(struct mr_neigh *neigh);

/* Process one received Ethernet frame (FCS stripped). Returns MR_NEIGH_PASS or MR_NEIGH_CONSUMED;
 * when a reply must be sent, writes it to reply (cap >= MR_NEIGH_FRAME_MAX suffices) and sets
 * *reply_len to its length, else sets *reply_len to 0. Malformed ARP/ND frames are counted and
 * consumed. Never reads outside [frame, frame + len). -EINVAL on NULL arguments. */
int mr_neigh_input(struct mr_neigh *neigh, const uint8_t *frame, uint32_t len, uint64_t now,
		   uint8_t *reply, uint32_t cap, uint32_t *reply_len);

/* Look up the MAC for gid. Returns 0 (mac_out filled), -EAGAIN (resolution in progress or just
 * started: send the frame from mr_neigh_solicit()), -EHOSTUNREACH (probes exhausted), -EINVAL
 * (NULL, multicast or unspecified gid), -EAFNOSUPPORT (family not enabled in the conf). */
int mr_neigh_lookup(struct mr_neigh *neigh, const uint8_t gid[16], uint64_t now, uint8_t mac_out[6]);

/* Build the request that resolves gid if one is due now (an ARP request, or an NS to the
 * solicited-node multicast address; unicast to the cached MAC when re-validating an expired
 * entry). Starts a resolution if gid has no entry. Returns the frame length, 0 when nothing is
 * due (resolved, or the last request is younger than retrans_ns), -EHOSTUNREACH, -ENOSPC (cap too
 * small), or the errors of mr_neigh_lookup(). */
int mr_neigh_solicit(struct mr_neigh *neigh, const uint8_t gid[16], uint64_t now, uint8_t *buf,
		     uint32_t cap);

/* Build one due retransmission/probe for any entry; returns its length, 0 if none is due, or
 * -ENOSPC. Call repeatedly until it returns 0. */
int mr_neigh_poll(struct mr_neigh *neigh, uint64_t now, uint8_t *buf, uint32_t cap);

/* Earliest time at which mr_neigh_poll() may have work, or UINT64_MAX. O(1) (a cached value,
 * rescanned only after an entry's earliest timer moved later or left). */
uint64_t mr_neigh_next_timeout(struct mr_neigh *neigh);

/* Gratuitous ARP (an RFC 5227 section 3 "ARP Announcement") for our IPv4 address, to be sent on
 * start; or an unsolicited NA to all-nodes (RFC 4861 7.2.6) for our IPv6 address. Return the frame
 * length, -EAFNOSUPPORT if that family is disabled, -ENOSPC. */
int mr_neigh_gratuitous_arp(const struct mr_neigh *neigh, uint8_t *buf, uint32_t cap);
int mr_neigh_unsolicited_na(const struct mr_neigh *neigh, uint8_t *buf, uint32_t cap);

/* Add a permanent entry (never expires, never probed). -EINVAL, -ENOSPC (cache full of
 * permanent entries). */
int mr_neigh_add_static(struct mr_neigh *neigh, const uint8_t gid[16], const uint8_t mac[6]);

/* State of gid's entry (MR_NEIGH_FREE if none) as of now; for tests and diagnostics. */
enum mr_neigh_state mr_neigh_state_of(struct mr_neigh *neigh, const uint8_t gid[16], uint64_t now);
const char *mr_neigh_state_str(enum mr_neigh_state s);

const struct mr_neigh_stats *mr_neigh_stats(const struct mr_neigh *neigh);

/* Helpers the port needs to accept ND traffic: the solicited-node multicast address of ip6
 * (ff02::1:ffXX:XXXX, RFC 4291 2.7.1) and the Ethernet multicast MAC of an IPv6 multicast
 * address (33:33 + low 32 bits, RFC 2464 section 7). */
void mr_neigh_solicited_node(const uint8_t ip6[16], uint8_t out[16]);
void mr_neigh_ipv6_mcast_mac(const uint8_t ip6[16], uint8_t mac[6]);

/* True if gid is IPv4-mapped (::ffff:0:0/96, RFC 4291 2.5.5.2). */
bool mr_neigh_gid_is_v4(const uint8_t gid[16]);

#ifdef __cplusplus
}
#endif
#endif
