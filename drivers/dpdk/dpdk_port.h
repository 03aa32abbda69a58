/* SPDX-License-Identifier: MIT
 * The DPDK ethdev port driver: one Ethernet port (any PMD: a NIC, net_af_packet/net_af_xdp on a
 * veth, net_memif, net_ring...) with one rx and one tx queue per engine lcore.
 *
 * The caller owns EAL: it calls rte_eal_init() first, with --vdev=... for virtual devices, and
 * selects the port by device name or port id. This header does not include DPDK headers (mbufs
 * are an opaque struct rte_mbuf); link the mrdpdk library (mrdpdk_dep) to use it.
 *
 * Threading: open/close/stats/link/mcast on the control thread; queue q's rx/tx/drain calls from
 * exactly one lcore at a time (the engine lcore owning q). Nothing here takes a lock.
 *
 * The poll loop of an engine lcore (l2fwd style):
 *     n = mr_dpdk_port_rx_burst(p, q, bufs, 32);
 *     for each bufs[i]: frame = mr_dpdk_mbuf_frame(bufs[i], scratch, sizeof(scratch), &len);
 *                       ... parse, process, rte_pktmbuf_free(bufs[i]);
 *     for each frame to send: m = mr_dpdk_port_mbuf_from_frame(p, bytes, len);
 *                             mr_dpdk_port_tx(p, q, m);
 *     mr_dpdk_port_tx_drain(p, q, rte_rdtsc());   (sends what the buffer holds after drain_us)
 */
#ifndef MR_DRIVERS_DPDK_DPDK_PORT_H
#define MR_DRIVERS_DPDK_DPDK_PORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rte_mbuf;
struct mr_dpdk_port;

/* Largest MTU the driver configures (jumbo frames; mbufs are sized to hold a whole frame). */
#define MR_DPDK_MTU_MAX 9000
#define MR_DPDK_MAX_QUEUES 64

struct mr_dpdk_port_conf {
	const char *devname;    /* e.g. "net_ring0", "net_af_packet0", "0000:03:00.0"; or NULL */
	uint16_t port_id;       /* used when devname is NULL */
	uint16_t nb_queues;     /* rx = tx queues, one per engine lcore; 0 -> 1 */
	uint16_t nb_rxd;        /* descriptors per rx queue; 0 -> 1024 (adjusted to the PMD) */
	uint16_t nb_txd;        /* descriptors per tx queue; 0 -> 1024 */
	uint16_t mtu;           /* IP MTU, 68..MR_DPDK_MTU_MAX; 0 -> 1500 */
	uint32_t nb_mbufs;      /* mbuf pool size; 0 -> enough for all rings, caches and bursts */
	int socket_id;          /* NUMA socket for pool and rings; <0 -> the port's socket */
	const uint8_t *mac;     /* unicast MAC to use instead of the device's (NULL: keep). If the
				 * PMD cannot change it (net_ring's is all zeros), the port is put
				 * in promiscuous mode and mr_dpdk_port_mac() returns this one. */
	bool promiscuous;       /* accept every unicast MAC (needed on af_packet shared links) */
	bool allmulticast;      /* accept every multicast MAC (ND without an mc filter) */
	bool no_tx_offload;     /* never use NIC offloads (tests the software fallback) */
	uint32_t tx_drain_us;   /* flush a partly filled tx buffer after this long; 0 -> 100 us */
	uint16_t tx_burst;      /* tx buffer size per queue; 0 -> 32, max 512 */
	bool no_tx_warm;        /* net_memif: never warm the transmit ring (mr_dpdk_port_tx_warm) */
};

/* Capabilities found in rte_eth_dev_info and enabled on the port (mr_dpdk_port_caps()). */
#define MR_DPDK_CAP_TX_IPV4_CKSUM (1u << 0)  /* NIC computes the IPv4 header checksum */
#define MR_DPDK_CAP_TX_VLAN_INSERT (1u << 1) /* NIC inserts the 802.1Q tag from mbuf->vlan_tci */
#define MR_DPDK_CAP_TX_MULTI_SEG (1u << 2)   /* NIC sends chained mbufs */
#define MR_DPDK_CAP_RSS (1u << 3)            /* rx spread over queues by RSS (nb_queues > 1) */
#define MR_DPDK_CAP_MTU_SET (1u << 4)        /* the PMD accepted the MTU */

/* Open, configure and start the port. Returns NULL with errno set: ENODEV (no such port),
 * EINVAL (bad conf: MTU outside the device's range, too many queues, group MAC...), ENOMEM
 * (mbuf pool), or the PMD's error. Conf errors are found before the device is touched; a PMD
 * failure after that closes the port (a vdev is then gone). Must not be called twice for one
 * port without mr_dpdk_port_close(). */
struct mr_dpdk_port *mr_dpdk_port_open(const struct mr_dpdk_port_conf *conf);
/* Stop and close the port, free its tx buffers and mbuf pool. Mbufs still held by the caller
 * must have been freed before. NULL is a no-op. */
void mr_dpdk_port_close(struct mr_dpdk_port *port);

uint16_t mr_dpdk_port_id(const struct mr_dpdk_port *port);
uint16_t mr_dpdk_port_nb_queues(const struct mr_dpdk_port *port);
uint16_t mr_dpdk_port_mtu(const struct mr_dpdk_port *port);
uint32_t mr_dpdk_port_caps(const struct mr_dpdk_port *port);
void mr_dpdk_port_mac(const struct mr_dpdk_port *port, uint8_t mac[6]);
/* Largest frame (Ethernet header + 802.1Q tag + MTU, without FCS) an mbuf of the pool holds in
 * one segment. */
uint32_t mr_dpdk_port_max_frame(const struct mr_dpdk_port *port);

struct mr_dpdk_link {
	bool up;
	bool full_duplex;
	bool autoneg;
	uint32_t speed_mbps; /* 0 if unknown */
};
/* Link status; waits up to wait_ms for the link to come up. 0 or negative errno. */
int mr_dpdk_port_link(const struct mr_dpdk_port *port, unsigned int wait_ms,
		      struct mr_dpdk_link *link);

/* Accept these multicast MACs (e.g. IPv6 solicited-node groups, 33:33:ff:xx:xx:xx): the
 * device's multicast filter if it has one, else allmulticast. 0 or negative errno. */
int mr_dpdk_port_set_mcast(struct mr_dpdk_port *port, const uint8_t (*macs)[6], unsigned int n);

/* ---- data path (queue q owned by the calling lcore) ---- */

/* Receive up to n frames. Returns the number received (0 for a bad queue). The caller frees them
 * with rte_pktmbuf_free(). */
uint16_t mr_dpdk_port_rx_burst(struct mr_dpdk_port *port, uint16_t q, struct rte_mbuf **bufs,
			       uint16_t n);
/* Send up to n frames now. Returns how many the PMD took; the rest still belong to the caller. */
uint16_t mr_dpdk_port_tx_burst(struct mr_dpdk_port *port, uint16_t q, struct rte_mbuf **bufs,
			       uint16_t n);

/* net_memif (copy mode, not disabled by no_tx_warm): queue 0's transmit ring is warmed ahead of
 * a transmit (drivers/dpdk/memif_warm.h), from queue 0's lcore:
 * - mr_dpdk_port_warm_follow on every link poll: locates the ring when the link comes up (a
 *   new connection), rereads our ring index while it stays up, stops at link down. Returns 0
 *   while warming is on, else why not (-EOPNOTSUPP: not a memif port in copy mode or disabled;
 *   -ENOLINK: link down; -ENOENT, -EEXIST, -EPROTO: the region was not found, not alone, or
 *   not laid out as expected).
 * - mr_dpdk_port_tx_warm when a frame arrived (a response and an ACK will follow): prefetch
 *   instructions only, for the next two slots; nothing on other ports.
 * Whether it is on and how often a reread found our count of the ring index off are in the
 * port's stats (tx_warm, tx_warm_slips). */
int mr_dpdk_port_warm_follow(struct mr_dpdk_port *port, bool up);
void mr_dpdk_port_tx_warm(struct mr_dpdk_port *port);
/* Queue one frame on q; the queue goes to the PMD when it holds tx_burst frames, on a flush or
 * by the drain. Frames the PMD does not take (its ring is full) stay queued, in order, for the
 * next send: nothing is dropped below MR_DPDK_TX_BACKLOG waiting frames. Returns the number of
 * frames sent by this call (>= 0), or -EINVAL (bad queue or NULL; m not consumed). A frame
 * queued on a full backlog is freed and counted in tx_buffer_drops: callers that can wait ask
 * mr_dpdk_port_tx_room() first. */
#define MR_DPDK_TX_BACKLOG 1024
int mr_dpdk_port_tx(struct mr_dpdk_port *port, uint16_t q, struct rte_mbuf *m);
/* How many more frames q can queue without a drop / how many wait now. */
unsigned int mr_dpdk_port_tx_room(const struct mr_dpdk_port *port, uint16_t q);
unsigned int mr_dpdk_port_tx_backlog(const struct mr_dpdk_port *port, uint16_t q);
/* Send q's queued frames if the last drain is older than tx_drain_us (now_tsc: rte_rdtsc()).
 * Returns the number sent. */
uint16_t mr_dpdk_port_tx_drain(struct mr_dpdk_port *port, uint16_t q, uint64_t now_tsc);
/* Send q's queued frames now (as many as the PMD takes). Returns the number sent. */
uint16_t mr_dpdk_port_tx_flush(struct mr_dpdk_port *port, uint16_t q);

/* Copy a built frame into a new mbuf from the port's pool (chained if longer than one mbuf).
 * Returns NULL with errno ENOBUFS (pool empty) or EINVAL (len 0 or > 65535). */
struct rte_mbuf *mr_dpdk_port_mbuf_from_frame(struct mr_dpdk_port *port, const void *frame,
					      uint32_t len);
/* A received frame's bytes: a pointer into the mbuf when it is one segment, else a copy in
 * scratch. Sets *len. Returns NULL when the frame is multi-segment and longer than cap. */
const uint8_t *mr_dpdk_mbuf_frame(const struct rte_mbuf *m, uint8_t *scratch, uint32_t cap,
				  uint32_t *len);

/* Offloads for a frame about to be sent whose IPv4 header checksum is still to be computed
 * (and/or which needs an 802.1Q tag): uses the NIC when it can, else does it in software. */
struct mr_dpdk_tx_meta {
	uint16_t l2_len;    /* Ethernet header length in the frame as built (14, or 18 if tagged) */
	uint16_t l3_len;    /* IP header length */
	bool ipv4_cksum;    /* compute the IPv4 header checksum */
	bool vlan_insert;   /* insert an 802.1Q tag with vlan_tci after the MAC addresses */
	uint16_t vlan_tci;
};
/* May replace *m (software VLAN insertion). 0, or -EINVAL (header not in the first segment,
 * not IPv4), -ENOSPC (no headroom for the tag). */
int mr_dpdk_port_tx_prepare(struct mr_dpdk_port *port, struct rte_mbuf **m,
			    const struct mr_dpdk_tx_meta *meta);

/* ---- statistics ---- */

struct mr_dpdk_port_stats {
	uint64_t ipackets, opackets, ibytes, obytes; /* rte_eth_stats */
	uint64_t imissed, ierrors, oerrors, rx_nombuf;
	uint64_t tx_buffer_drops; /* frames refused at a full tx backlog, all queues */
	uint64_t mbuf_alloc_fail; /* mr_dpdk_port_mbuf_from_frame() failures */
	uint64_t mbufs_in_use;    /* of the port's rx pool now (leak checks: idle = what the PMD holds) */
	uint64_t tx_warm;         /* 1 while memif's transmit ring is warmed (mr_dpdk_port_tx_warm) */
	uint64_t tx_warm_slips;   /* link polls that found our count of the ring index off */
};
int mr_dpdk_port_stats_get(struct mr_dpdk_port *port, struct mr_dpdk_port_stats *st);
int mr_dpdk_port_stats_reset(struct mr_dpdk_port *port);

#define MR_DPDK_XSTAT_NAME_LEN 64
struct mr_dpdk_xstat {
	char name[MR_DPDK_XSTAT_NAME_LEN];
	uint64_t value;
};
/* Extended statistics (rte_eth_xstats: names and values, as `ethtool -S`). Fills at most n and
 * returns how many exist (call with n = 0 to size the array), or negative errno. */
int mr_dpdk_port_xstats(struct mr_dpdk_port *port, struct mr_dpdk_xstat *out, unsigned int n);
/* Print "name: value" lines for the port's and the driver's counters. 0 or negative errno. */
int mr_dpdk_port_stats_dump(struct mr_dpdk_port *port, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
