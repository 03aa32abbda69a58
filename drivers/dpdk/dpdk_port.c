/* SPDX-License-Identifier: MIT
 * DPDK ethdev port: configuration, mbuf pool, rx/tx queues, buffered tx with a TSC-timed drain
 * (as DPDK's examples/l2fwd), offloads with software fallback, statistics.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <rte_byteorder.h>
#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_ethdev.h>
#include <rte_kvargs.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "dpdk_port.h"
#include "memif_warm.h"

#define DEF_NB_DESC 1024
#define DEF_MTU RTE_ETHER_MTU
#define DEF_DRAIN_US 100 /* l2fwd's BURST_TX_DRAIN_US */
#define DEF_TX_BURST 32
#define MAX_TX_BURST 512
#define POOL_CACHE 256
#define POOL_SPARE 2048 /* mbufs in flight in the engine (held frames, retransmit copies) */
/* Frame = MTU + Ethernet header + two VLAN tags (QinQ tolerated) + FCS some PMDs DMA too. */
#define FRAME_OVERHEAD (RTE_ETHER_HDR_LEN + 2 * RTE_VLAN_HLEN + RTE_ETHER_CRC_LEN)
#define MIN_MTU 68 /* RFC 791: every IPv4 host must take 68-byte datagrams */
/* net_af_packet (TPACKET_V2): a ring frame of framesz bytes carries the tpacket2_hdr and the
 * sockaddr_ll before the data; framesz defaults to 2048 in the PMD. */
#define AFP_DRIVER "net_af_packet"
#define AFP_DEF_FRAMESZ 2048u
#define AFP_FRAME_HDR ((uint32_t)(TPACKET2_HDRLEN - sizeof(struct sockaddr_ll)))
/* net_memif: a frame must fit one buffer of bsize bytes (soft_mtu). */
#define MEMIF_DRIVER "net_memif"
#define MEMIF_DEF_BSIZE 2048u /* the PMD's ETH_MEMIF_DEFAULT_PKT_BUFFER_SIZE */

/* Per-queue tx state; each on its own cache line, written only by the owning lcore. */
struct mr_dpdk_txq {
	uint16_t head;       /* pend[head .. head + n) wait, oldest first */
	uint16_t n;
	uint16_t burst;      /* a queue of this many is sent at once */
	uint64_t last_drain; /* TSC of the last drain check that flushed */
	uint64_t dropped;    /* frames refused because pend[] was full */
	struct rte_mbuf *pend[MR_DPDK_TX_BACKLOG];
} __rte_cache_aligned;

struct mr_dpdk_port {
	uint16_t port_id;
	uint16_t nb_queues;
	uint16_t mtu;
	uint16_t eth_mtu;    /* MTU given to ethdev: mtu, or clamped (af_packet, memif: soft_mtu) */
	uint32_t caps;
	uint32_t max_frame;
	uint32_t pmd_frame;  /* af_packet's ring slot, memif's buffer: its largest frame; 0 = other */
	bool afp;            /* net_af_packet: we set the kernel interface's MTU */
	uint64_t drain_tsc;
	uint64_t alloc_fail; /* any lcore: updated atomically */
	bool started;
	struct rte_ether_addr mac;
	struct rte_mempool *pool;
	struct mr_dpdk_txq *txq;
	/* net_memif (copy mode): queue 0's transmit ring warmed when a frame arrives
	 * (memif_warm.h); located on each link-up by mr_dpdk_port_warm_follow. */
	bool warm_able;       /* memif, copy mode, warming not disabled */
	bool memif_client;    /* role=client: we send on C2S */
	bool warm_seg_slots;  /* the PMD's transmit takes a slot per segment (else per frame) */
	bool warm_link_up;    /* the link as the last follow saw it */
	int warm_err;         /* the last find's result (0: on) */
	struct mr_memif_warm warm;
};

static int find_port(const struct mr_dpdk_port_conf *conf, uint16_t *pid)
{
	if (conf->devname != NULL) {
		if (rte_eth_dev_get_port_by_name(conf->devname, pid) != 0)
			return -ENODEV;
		return 0;
	}
	if (!rte_eth_dev_is_valid_port(conf->port_id))
		return -ENODEV;
	*pid = conf->port_id;
	return 0;
}

/* Create the mbuf pool: one segment must hold a whole frame of the configured MTU, so the data
 * path never sees chained mbufs from rx (jumbo included; 9000 + overhead fits in a uint16_t data
 * room). */
static int create_pool(struct mr_dpdk_port *p, const struct mr_dpdk_port_conf *c, uint16_t nb_rxd,
		       uint16_t nb_txd, uint16_t tx_burst, int socket)
{
	char name[RTE_MEMPOOL_NAMESIZE];
	uint32_t frame = (uint32_t)p->mtu + FRAME_OVERHEAD;
	uint32_t room = RTE_MAX(frame, (uint32_t)RTE_MBUF_DEFAULT_DATAROOM);
	uint32_t n = c->nb_mbufs;

	/* af_packet refuses an rx queue whose mbufs are smaller than its ring slot (and a memif
	 * buffer's frame then fits one mbuf too). */
	if (p->pmd_frame != 0)
		room = RTE_MAX(room, p->pmd_frame);

	if (n == 0)
		n = (uint32_t)p->nb_queues * (nb_rxd + nb_txd + tx_burst + MR_DPDK_TX_BACKLOG) +
		    rte_lcore_count() * POOL_CACHE + POOL_SPARE;
	snprintf(name, sizeof(name), "mr_pool_p%u", p->port_id);
	/* rte_mempool requires cache_size <= n / 1.5 (RTE_MEMPOOL_CACHE_MAX_SIZE rule). */
	p->pool = rte_pktmbuf_pool_create(name, n, RTE_MIN((uint32_t)POOL_CACHE, n / 2), 0,
					  (uint16_t)(room + RTE_PKTMBUF_HEADROOM), socket);
	if (p->pool == NULL)
		return -rte_errno;
	p->max_frame = room - RTE_ETHER_CRC_LEN;
	if (p->pmd_frame != 0)
		p->max_frame = RTE_MIN(p->max_frame, p->pmd_frame);
	return 0;
}

static int setup_txq(struct mr_dpdk_port *p, uint16_t tx_burst, int socket)
{
	p->txq = rte_zmalloc_socket("mr_txq", sizeof(*p->txq) * p->nb_queues, RTE_CACHE_LINE_SIZE,
				    socket);
	if (p->txq == NULL)
		return -ENOMEM;
	for (uint16_t q = 0; q < p->nb_queues; q++)
		p->txq[q].burst = tx_burst;
	return 0;
}

/* The slots n frames take in memif's transmit ring (read before the PMD frees them). */
static uint32_t warm_slots(const struct mr_dpdk_port *p, struct rte_mbuf *const *m, uint16_t n)
{
	uint32_t slots = n;

	if (p->warm_seg_slots)
		for (uint16_t i = 0; i < n; i++)
			slots += m[i]->nb_segs - 1u;
	return slots;
}

/* rte_eth_tx_burst on a warmed queue: our next slot moves by what was sent. */
static uint16_t warm_tx(struct mr_dpdk_port *p, uint16_t q, struct rte_mbuf **m, uint16_t n)
{
	uint32_t all = warm_slots(p, m, n);
	uint16_t sent = rte_eth_tx_burst(p->port_id, q, m, n);

	/* the frames not sent are still ours to read */
	mr_memif_warm_sent(&p->warm, (uint16_t)(all - warm_slots(p, m + sent, (uint16_t)(n - sent))));
	return sent;
}

/* Hands q's waiting frames to the PMD. What it does not take (its ring is full: the peer or
 * the wire is slower than we are) stays queued in order for the next call instead of being
 * dropped: every such drop costs plain RC a Local ACK Timeout or a go-back-N resend of the
 * window (IBA 9.7.5.1.2), and the engine stops asking the transport for frames while the
 * queue is full (mr_dpdk_port_tx_room). */
static uint16_t txq_send(struct mr_dpdk_port *p, uint16_t q)
{
	struct mr_dpdk_txq *t = &p->txq[q];
	uint16_t sent;

	if (t->n == 0)
		return 0;
	/* What the PMD does not take stays in place: the head moves, nothing is copied (a
	 * memmove per partial burst cost up to 8 KiB each with a full backlog). */
	if (q == 0 && p->warm.ring != NULL)
		sent = warm_tx(p, q, t->pend + t->head, t->n);
	else
		sent = rte_eth_tx_burst(p->port_id, q, t->pend + t->head, t->n);
	t->n = (uint16_t)(t->n - sent);
	t->head = t->n == 0 ? 0 : (uint16_t)(t->head + sent);
	return sent;
}

static void free_port(struct mr_dpdk_port *p)
{
	mr_memif_warm_off(&p->warm);
	/* The backlog goes out (what the PMD takes) while the port still runs: a tx burst on a
	 * stopped port reaches ethdev's stub, which logs an error and a stack dump. */
	if (p->txq != NULL) {
		for (uint16_t q = 0; q < p->nb_queues; q++) {
			struct mr_dpdk_txq *t = &p->txq[q];

			if (p->started)
				txq_send(p, q);
			rte_pktmbuf_free_bulk(t->pend + t->head, t->n);
			t->n = 0;
		}
	}
	if (p->started)
		rte_eth_dev_stop(p->port_id);
	rte_free(p->txq);
	rte_eth_dev_close(p->port_id);
	/* The pool goes last: the PMD's rings referenced its mbufs until close. */
	rte_mempool_free(p->pool);
	free(p);
}

/* The value of the port's devarg key copied into out (cap bytes); false if it has none (or a
 * longer one). */
static bool devarg(const struct rte_eth_dev_info *info, const char *key, char *out, size_t cap)
{
	const struct rte_devargs *da = info->device != NULL ? rte_dev_devargs(info->device) : NULL;
	struct rte_kvargs *kv;
	const char *v;
	bool found = false;

	if (da == NULL || da->args == NULL || da->args[0] == '\0')
		return false;
	kv = rte_kvargs_parse(da->args, NULL);
	if (kv == NULL)
		return false;
	v = rte_kvargs_get(kv, key);
	if (v != NULL && strlen(v) < cap) {
		memcpy(out, v, strlen(v) + 1);
		found = true;
	}
	rte_kvargs_free(kv);
	return found;
}

/* A numeric devarg of the port (af_packet's framesz=N, memif's bsize=N), or def. */
static uint32_t devarg_u32(const struct rte_eth_dev_info *info, const char *key, uint32_t def)
{
	char v[32], *end;
	unsigned long n;

	if (!devarg(info, key, v, sizeof(v)))
		return def;
	n = strtoul(v, &end, 0);
	return *end == '\0' && n <= UINT16_MAX + 1ul ? (uint32_t)n : def;
}

/* Whether the port's devarg key equals val (memif's role=client, zero-copy=yes). */
static bool devarg_is(const struct rte_eth_dev_info *info, const char *key, const char *val)
{
	char v[32];

	return devarg(info, key, v, sizeof(v)) && strcmp(v, val) == 0;
}

/* What ethdev is told for an MTU on this port. DPDK 22.11's net_af_packet and net_memif report
 * a fixed max_rx_pktlen of 1518 whatever they carry, so rte_eth_dev_configure() refuses jumbo
 * MTUs although
 * - af_packet's socket passes any frame up to its ring slot (framesz devarg minus the tpacket2
 *   header) and the kernel interface's MTU;
 * - memif has no MTU state: a frame up to one descriptor buffer (bsize devarg, 2048 by default)
 *   crosses as one descriptor, and its rx copies it into one mbuf of the pool's data room
 *   (create_pool() sizes the room from mtu). Longer frames it would chain over several
 *   descriptors, but 22.11's tx leaves a stale "next" flag on a reused descriptor (fixed
 *   upstream in 2026, f7a52200d4 "net/memif: fix descriptor Tx flags corruption"), which glues
 *   unrelated frames together (seen here as 1.3 M "unknown QP" drops at IB MTU 4096): so bsize
 *   is this port's frame limit, as the slot is af_packet's.
 * For these two ethdev gets the largest MTU it accepts; for af_packet the interface MTU is set
 * by us (as the PMD's mtu_set would). The port's max frame is the slot or buffer
 * (mr_dpdk_port_max_frame(); the caller checks that its largest frame, e.g. IB MTU 4096's,
 * fits). Other PMDs get mtu as is, and refuse what they cannot do. -EINVAL if a slot or buffer
 * cannot even hold a minimal frame. */
static int soft_mtu(struct mr_dpdk_port *p, const struct rte_eth_dev_info *info)
{
	uint32_t dev_max = info->max_mtu;
	bool memif;

	p->eth_mtu = p->mtu;
	p->afp = info->driver_name != NULL && strcmp(info->driver_name, AFP_DRIVER) == 0;
	memif = info->driver_name != NULL && strcmp(info->driver_name, MEMIF_DRIVER) == 0;
	if (!p->afp && !memif)
		return 0;
	if (p->afp) {
		uint32_t fs = devarg_u32(info, "framesz", AFP_DEF_FRAMESZ);

		p->pmd_frame = fs > AFP_FRAME_HDR ? fs - AFP_FRAME_HDR : 0;
	} else {
		p->pmd_frame = devarg_u32(info, "bsize", MEMIF_DEF_BSIZE);
		/* The PMD's role defaults to server; zero-copy rings carry the mbufs' own memory
		 * (another layout): not warmed. */
		p->memif_client = devarg_is(info, "role", "client");
		p->warm_able = !devarg_is(info, "zero-copy", "yes");
	}
	if (p->pmd_frame < RTE_ETHER_MIN_LEN + RTE_VLAN_HLEN)
		return -EINVAL;
	if (info->max_rx_pktlen > RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN)
		dev_max = RTE_MIN(dev_max, info->max_rx_pktlen - RTE_ETHER_HDR_LEN -
					    RTE_ETHER_CRC_LEN);
	if (p->mtu > dev_max)
		p->eth_mtu = (uint16_t)dev_max;
	return 0;
}

/* SIOCSIFMTU on the af_packet interface (in our network namespace). */
static int afp_set_if_mtu(const struct rte_eth_dev_info *info, uint16_t mtu)
{
	struct ifreq ifr;
	int s, rc = 0;

	memset(&ifr, 0, sizeof(ifr));
	if (if_indextoname(info->if_index, ifr.ifr_name) == NULL)
		return -ENODEV;
	s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0)
		return -errno;
	if (ioctl(s, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu == mtu) {
		close(s);
		return 0;
	}
	ifr.ifr_mtu = mtu;
	if (ioctl(s, SIOCSIFMTU, &ifr) < 0)
		rc = -errno;
	close(s);
	return rc;
}

static int configure(struct mr_dpdk_port *p, const struct mr_dpdk_port_conf *c,
		     const struct rte_eth_dev_info *info, uint16_t *nb_rxd, uint16_t *nb_txd)
{
	struct rte_eth_conf ec;
	int rc;

	memset(&ec, 0, sizeof(ec));
	ec.rxmode.mtu = p->eth_mtu;
	if (!c->no_tx_offload) {
		if (info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) {
			ec.txmode.offloads |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
			p->caps |= MR_DPDK_CAP_TX_IPV4_CKSUM;
		}
		if (info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_VLAN_INSERT) {
			ec.txmode.offloads |= RTE_ETH_TX_OFFLOAD_VLAN_INSERT;
			p->caps |= MR_DPDK_CAP_TX_VLAN_INSERT;
		}
		if (info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) {
			ec.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
			p->caps |= MR_DPDK_CAP_TX_MULTI_SEG;
		}
	}
	/* Several queues: let RSS spread flows. RoCE flows differ by UDP source port (A17.3.3), so
	 * hash on UDP ports where the NIC can. */
	if (p->nb_queues > 1 && (info->flow_type_rss_offloads & (RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP))) {
		ec.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		ec.rx_adv_conf.rss_conf.rss_hf =
			info->flow_type_rss_offloads & (RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP);
		p->caps |= MR_DPDK_CAP_RSS;
	}
	rc = rte_eth_dev_configure(p->port_id, p->nb_queues, p->nb_queues, &ec);
	if (rc < 0)
		return rc;
	rc = rte_eth_dev_adjust_nb_rx_tx_desc(p->port_id, nb_rxd, nb_txd);
	if (rc < 0)
		return rc;
	if (p->eth_mtu != p->mtu) /* jumbo on af_packet (its interface MTU) or memif, soft_mtu() */
		return p->afp ? afp_set_if_mtu(info, p->mtu) : 0;
	rc = rte_eth_dev_set_mtu(p->port_id, p->mtu);
	if (rc == 0)
		p->caps |= MR_DPDK_CAP_MTU_SET;
	else if (rc != -ENOTSUP)
		return rc;
	return 0;
}

static int setup_queues(struct mr_dpdk_port *p, const struct rte_eth_dev_info *info,
			uint16_t nb_rxd, uint16_t nb_txd, int socket)
{
	struct rte_eth_rxconf rxc = info->default_rxconf;
	struct rte_eth_txconf txc = info->default_txconf;
	int rc;

	txc.offloads = 0;
	if (p->caps & MR_DPDK_CAP_TX_IPV4_CKSUM)
		txc.offloads |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
	if (p->caps & MR_DPDK_CAP_TX_VLAN_INSERT)
		txc.offloads |= RTE_ETH_TX_OFFLOAD_VLAN_INSERT;
	if (p->caps & MR_DPDK_CAP_TX_MULTI_SEG)
		txc.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	for (uint16_t q = 0; q < p->nb_queues; q++) {
		rc = rte_eth_rx_queue_setup(p->port_id, q, nb_rxd, (unsigned int)socket, &rxc,
					    p->pool);
		if (rc < 0)
			return rc;
		rc = rte_eth_tx_queue_setup(p->port_id, q, nb_txd, (unsigned int)socket, &txc);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Use mac as our address: program it if the PMD can, else accept everything and filter in
 * software (the neighbour code ignores unicast ARP/ND for other MACs). */
static int set_mac(struct mr_dpdk_port *p, const uint8_t *mac, bool *promisc)
{
	struct rte_ether_addr a;
	int rc;

	memcpy(a.addr_bytes, mac, RTE_ETHER_ADDR_LEN);
	rc = rte_eth_dev_default_mac_addr_set(p->port_id, &a);
	if (rc == -ENOTSUP) {
		*promisc = true;
		rc = 0;
	}
	if (rc == 0)
		p->mac = a;
	return rc;
}

struct mr_dpdk_port *mr_dpdk_port_open(const struct mr_dpdk_port_conf *c)
{
	struct rte_eth_dev_info info;
	struct mr_dpdk_port *p;
	uint16_t pid, nb_rxd, nb_txd, tx_burst;
	int rc, socket;
	bool promisc;

	if (c == NULL) {
		errno = EINVAL;
		return NULL;
	}
	rc = find_port(c, &pid);
	if (rc < 0) {
		errno = -rc;
		return NULL;
	}
	rc = rte_eth_dev_info_get(pid, &info);
	if (rc < 0) {
		errno = -rc;
		return NULL;
	}
	nb_rxd = c->nb_rxd ? c->nb_rxd : DEF_NB_DESC;
	nb_txd = c->nb_txd ? c->nb_txd : DEF_NB_DESC;
	tx_burst = c->tx_burst ? c->tx_burst : DEF_TX_BURST;
	if ((c->mtu != 0 && (c->mtu < MIN_MTU || c->mtu > MR_DPDK_MTU_MAX ||
			     c->mtu < info.min_mtu)) ||
	    c->nb_queues > MR_DPDK_MAX_QUEUES || c->nb_queues > info.max_rx_queues ||
	    c->nb_queues > info.max_tx_queues || tx_burst > MAX_TX_BURST) {
		errno = EINVAL;
		return NULL;
	}
	if (c->mac != NULL && ((c->mac[0] & 1) || (c->mac[0] | c->mac[1] | c->mac[2] | c->mac[3] |
						   c->mac[4] | c->mac[5]) == 0)) {
		errno = EINVAL;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;
	mr_memif_warm_init(&p->warm);
	p->warm_err = -ENOENT;
	promisc = c->promiscuous;
	p->port_id = pid;
	p->nb_queues = c->nb_queues ? c->nb_queues : 1;
	p->mtu = c->mtu ? c->mtu : DEF_MTU;
	p->drain_tsc = (rte_get_tsc_hz() + 999999) / 1000000 *
		       (c->tx_drain_us ? c->tx_drain_us : DEF_DRAIN_US);
	socket = c->socket_id >= 0 ? c->socket_id : rte_eth_dev_socket_id(pid);
	if (socket < 0)
		socket = (int)rte_socket_id();

	rc = soft_mtu(p, &info);
	/* Any other PMD must take the MTU as is. */
	if (rc == 0 && p->eth_mtu == p->mtu && p->mtu > info.max_mtu)
		rc = -EINVAL;
	if (rc == 0)
		rc = configure(p, c, &info, &nb_rxd, &nb_txd);
	if (rc == 0)
		rc = create_pool(p, c, nb_rxd, nb_txd, tx_burst, socket);
	if (rc == 0 && p->warm_able) {
		/* DPDK 22.11's memif transmit copies segment by segment, a slot each, when its
		 * buffers are at least the mbufs' data room; else it packs a frame into slots. */
		p->warm_able = !c->no_tx_warm;
		p->warm_seg_slots = p->pmd_frame >= (uint32_t)(rte_pktmbuf_data_room_size(p->pool) -
							       RTE_PKTMBUF_HEADROOM);
	}
	if (rc == 0)
		rc = setup_queues(p, &info, nb_rxd, nb_txd, socket);
	if (rc == 0)
		rc = setup_txq(p, tx_burst, socket);
	if (rc == 0)
		rc = rte_eth_dev_start(pid);
	if (rc == 0) {
		p->started = true;
		rc = rte_eth_macaddr_get(pid, &p->mac);
	}
	if (rc == 0 && c->mac != NULL)
		rc = set_mac(p, c->mac, &promisc);
	/* Promiscuous/allmulticast are best effort: some PMDs (net_ring) have no filter at all. */
	if (rc == 0 && promisc) {
		int r2 = rte_eth_promiscuous_enable(pid);

		if (r2 < 0 && r2 != -ENOTSUP)
			rc = r2;
	}
	if (rc == 0 && c->allmulticast) {
		int r2 = rte_eth_allmulticast_enable(pid);

		if (r2 < 0 && r2 != -ENOTSUP)
			rc = r2;
	}
	if (rc < 0) {
		free_port(p);
		errno = -rc;
		return NULL;
	}
	return p;
}

void mr_dpdk_port_close(struct mr_dpdk_port *port)
{
	if (port != NULL)
		free_port(port);
}

uint16_t mr_dpdk_port_id(const struct mr_dpdk_port *port) { return port->port_id; }
uint16_t mr_dpdk_port_nb_queues(const struct mr_dpdk_port *port) { return port->nb_queues; }
uint16_t mr_dpdk_port_mtu(const struct mr_dpdk_port *port) { return port->mtu; }
uint32_t mr_dpdk_port_caps(const struct mr_dpdk_port *port) { return port->caps; }
uint32_t mr_dpdk_port_max_frame(const struct mr_dpdk_port *port) { return port->max_frame; }

void mr_dpdk_port_mac(const struct mr_dpdk_port *port, uint8_t mac[6])
{
	memcpy(mac, port->mac.addr_bytes, 6);
}

int mr_dpdk_port_link(const struct mr_dpdk_port *port, unsigned int wait_ms,
		      struct mr_dpdk_link *link)
{
	struct rte_eth_link l;
	int rc;

	if (port == NULL || link == NULL)
		return -EINVAL;
	for (unsigned int waited = 0;; waited += 10) {
		memset(&l, 0, sizeof(l));
		rc = rte_eth_link_get_nowait(port->port_id, &l);
		if (rc < 0)
			return rc;
		if (l.link_status == RTE_ETH_LINK_UP || waited >= wait_ms)
			break;
		rte_delay_us_sleep(10 * 1000); /* control path: sleep, do not spin */
	}
	link->up = l.link_status == RTE_ETH_LINK_UP;
	link->full_duplex = l.link_duplex == RTE_ETH_LINK_FULL_DUPLEX;
	link->autoneg = l.link_autoneg == RTE_ETH_LINK_AUTONEG;
	link->speed_mbps = l.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN ? 0 : l.link_speed;
	return 0;
}

int mr_dpdk_port_set_mcast(struct mr_dpdk_port *port, const uint8_t (*macs)[6], unsigned int n)
{
	struct rte_ether_addr list[64];
	int rc;

	if (port == NULL || (n > 0 && macs == NULL))
		return -EINVAL;
	if (n > RTE_DIM(list))
		return rte_eth_allmulticast_enable(port->port_id);
	for (unsigned int i = 0; i < n; i++) {
		if (!(macs[i][0] & 1))
			return -EINVAL; /* not a group address */
		memcpy(list[i].addr_bytes, macs[i], 6);
	}
	rc = rte_eth_dev_set_mc_addr_list(port->port_id, list, n);
	if (rc == -ENOTSUP) {
		/* No multicast filter: accept all multicast (a PMD without even that, such as
		 * net_ring, filters nothing and needs neither). */
		rc = rte_eth_allmulticast_enable(port->port_id);
		if (rc == -ENOTSUP)
			rc = 0;
	}
	return rc;
}

uint16_t mr_dpdk_port_rx_burst(struct mr_dpdk_port *port, uint16_t q, struct rte_mbuf **bufs,
			       uint16_t n)
{
	if (unlikely(q >= port->nb_queues))
		return 0;
	return rte_eth_rx_burst(port->port_id, q, bufs, n);
}

uint16_t mr_dpdk_port_tx_burst(struct mr_dpdk_port *port, uint16_t q, struct rte_mbuf **bufs,
			       uint16_t n)
{
	if (unlikely(q >= port->nb_queues))
		return 0;
	if (q == 0 && port->warm.ring != NULL)
		return warm_tx(port, q, bufs, n);
	return rte_eth_tx_burst(port->port_id, q, bufs, n);
}

void mr_dpdk_port_tx_warm(struct mr_dpdk_port *port)
{
	mr_memif_warm_lines(&port->warm);
}

int mr_dpdk_port_warm_follow(struct mr_dpdk_port *port, bool up)
{
	if (!port->warm_able)
		return -EOPNOTSUPP;
	if (!up) {
		mr_memif_warm_off(&port->warm);
		port->warm_err = -ENOLINK;
	} else if (!port->warm_link_up) {
		/* A new connection: the rings (and maybe the region) are new. */
		port->warm_err = mr_memif_warm_find(&port->warm, port->memif_client,
						    port->pmd_frame);
	} else if (port->warm.ring != NULL) {
		port->warm_err = mr_memif_warm_resync(&port->warm);
	}
	port->warm_link_up = up;
	return port->warm_err;
}

int mr_dpdk_port_tx(struct mr_dpdk_port *port, uint16_t q, struct rte_mbuf *m)
{
	struct mr_dpdk_txq *t;
	int sent = 0;

	if (unlikely(port == NULL || m == NULL || q >= port->nb_queues))
		return -EINVAL;
	t = &port->txq[q];
	if (unlikely(t->n == MR_DPDK_TX_BACKLOG)) {
		sent = txq_send(port, q);
		if (t->n == MR_DPDK_TX_BACKLOG) {
			rte_pktmbuf_free(m);
			t->dropped++;
			return sent;
		}
	}
	if (unlikely(t->head + t->n == MR_DPDK_TX_BACKLOG)) {
		/* The tail reached the end with room before the head: one compaction per
		 * backlog's worth of frames at most. */
		memmove(t->pend, t->pend + t->head, (size_t)t->n * sizeof(t->pend[0]));
		t->head = 0;
	}
	t->pend[t->head + t->n++] = m;
	if (t->n >= t->burst)
		sent += txq_send(port, q);
	return sent;
}

unsigned int mr_dpdk_port_tx_room(const struct mr_dpdk_port *port, uint16_t q)
{
	if (unlikely(port == NULL || q >= port->nb_queues))
		return 0;
	return MR_DPDK_TX_BACKLOG - port->txq[q].n;
}

unsigned int mr_dpdk_port_tx_backlog(const struct mr_dpdk_port *port, uint16_t q)
{
	if (unlikely(port == NULL || q >= port->nb_queues))
		return 0;
	return port->txq[q].n;
}

uint16_t mr_dpdk_port_tx_flush(struct mr_dpdk_port *port, uint16_t q)
{
	if (unlikely(port == NULL || q >= port->nb_queues))
		return 0;
	return txq_send(port, q);
}

uint16_t mr_dpdk_port_tx_drain(struct mr_dpdk_port *port, uint16_t q, uint64_t now_tsc)
{
	struct mr_dpdk_txq *t;

	if (unlikely(q >= port->nb_queues))
		return 0;
	t = &port->txq[q];
	if (now_tsc - t->last_drain < port->drain_tsc)
		return 0;
	t->last_drain = now_tsc;
	return txq_send(port, q);
}

struct rte_mbuf *mr_dpdk_port_mbuf_from_frame(struct mr_dpdk_port *port, const void *frame,
					      uint32_t len)
{
	const uint8_t *src = frame;
	struct rte_mbuf *head = NULL;

	if (port == NULL || frame == NULL || len == 0 || len > UINT16_MAX) {
		errno = EINVAL;
		return NULL;
	}
	while (len > 0) {
		struct rte_mbuf *seg = rte_pktmbuf_alloc(port->pool);
		uint16_t chunk;

		if (unlikely(seg == NULL)) {
			rte_pktmbuf_free(head);
			__atomic_fetch_add(&port->alloc_fail, 1, __ATOMIC_RELAXED);
			errno = ENOBUFS;
			return NULL;
		}
		chunk = (uint16_t)RTE_MIN(len, (uint32_t)rte_pktmbuf_tailroom(seg));
		memcpy(rte_pktmbuf_mtod(seg, uint8_t *), src, chunk);
		seg->data_len = chunk;
		seg->pkt_len = chunk;
		src += chunk;
		len -= chunk;
		if (head == NULL) {
			head = seg;
		} else if (rte_pktmbuf_chain(head, seg) != 0) {
			rte_pktmbuf_free(seg);
			rte_pktmbuf_free(head);
			errno = EINVAL; /* more than RTE_MBUF_MAX_NB_SEGS segments */
			return NULL;
		}
	}
	return head;
}

const uint8_t *mr_dpdk_mbuf_frame(const struct rte_mbuf *m, uint8_t *scratch, uint32_t cap,
				  uint32_t *len)
{
	if (m == NULL || len == NULL)
		return NULL;
	*len = m->pkt_len;
	if (m->nb_segs == 1)
		return rte_pktmbuf_mtod(m, const uint8_t *);
	if (scratch == NULL || m->pkt_len > cap)
		return NULL;
	return rte_pktmbuf_read(m, 0, m->pkt_len, scratch);
}

int mr_dpdk_port_tx_prepare(struct mr_dpdk_port *port, struct rte_mbuf **mp,
			    const struct mr_dpdk_tx_meta *meta)
{
	struct rte_mbuf *m;
	uint16_t l2_len;

	if (port == NULL || mp == NULL || *mp == NULL || meta == NULL)
		return -EINVAL;
	m = *mp;
	l2_len = meta->l2_len;
	if (meta->ipv4_cksum && (meta->l3_len < sizeof(struct rte_ipv4_hdr) ||
				 rte_pktmbuf_data_len(m) < (uint32_t)l2_len + meta->l3_len))
		return -EINVAL;
	if (meta->vlan_insert) {
		if (port->caps & MR_DPDK_CAP_TX_VLAN_INSERT) {
			m->ol_flags |= RTE_MBUF_F_TX_VLAN;
			m->vlan_tci = meta->vlan_tci;
		} else {
			m->vlan_tci = meta->vlan_tci;
			if (rte_pktmbuf_headroom(m) < sizeof(struct rte_vlan_hdr))
				return -ENOSPC;
			if (rte_vlan_insert(mp) != 0)
				return -EINVAL;
			m = *mp;
			l2_len += sizeof(struct rte_vlan_hdr);
		}
	}
	if (meta->ipv4_cksum) {
		struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, l2_len);

		if ((ip->version_ihl >> 4) != 4)
			return -EINVAL;
		ip->hdr_checksum = 0;
		if (port->caps & MR_DPDK_CAP_TX_IPV4_CKSUM) {
			m->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM;
			m->l2_len = l2_len;
			m->l3_len = meta->l3_len;
		} else {
			ip->hdr_checksum = rte_ipv4_cksum(ip);
		}
	}
	return 0;
}

int mr_dpdk_port_stats_get(struct mr_dpdk_port *port, struct mr_dpdk_port_stats *st)
{
	struct rte_eth_stats s;
	int rc;

	if (port == NULL || st == NULL)
		return -EINVAL;
	rc = rte_eth_stats_get(port->port_id, &s);
	if (rc < 0)
		return rc;
	memset(st, 0, sizeof(*st));
	st->ipackets = s.ipackets;
	st->opackets = s.opackets;
	st->ibytes = s.ibytes;
	st->obytes = s.obytes;
	st->imissed = s.imissed;
	st->ierrors = s.ierrors;
	st->oerrors = s.oerrors;
	st->rx_nombuf = s.rx_nombuf;
	st->mbufs_in_use = rte_mempool_in_use_count(port->pool);
	for (uint16_t q = 0; q < port->nb_queues; q++)
		st->tx_buffer_drops += port->txq[q].dropped;
	st->mbuf_alloc_fail = __atomic_load_n(&port->alloc_fail, __ATOMIC_RELAXED);
	st->tx_warm = port->warm.ring != NULL;
	st->tx_warm_slips = port->warm.slips;
	return 0;
}

int mr_dpdk_port_stats_reset(struct mr_dpdk_port *port)
{
	int rc;

	if (port == NULL)
		return -EINVAL;
	rc = rte_eth_stats_reset(port->port_id);
	if (rc < 0)
		return rc;
	/* xstats may be separate in the PMD; not all support resetting them. */
	(void)rte_eth_xstats_reset(port->port_id);
	for (uint16_t q = 0; q < port->nb_queues; q++)
		port->txq[q].dropped = 0;
	__atomic_store_n(&port->alloc_fail, 0, __ATOMIC_RELAXED);
	return 0;
}

int mr_dpdk_port_xstats(struct mr_dpdk_port *port, struct mr_dpdk_xstat *out, unsigned int n)
{
	struct rte_eth_xstat_name *names = NULL;
	struct rte_eth_xstat *vals = NULL;
	int cnt, rc;

	if (port == NULL || (n > 0 && out == NULL))
		return -EINVAL;
	cnt = rte_eth_xstats_get_names(port->port_id, NULL, 0);
	if (cnt <= 0 || n == 0)
		return cnt;
	names = calloc((size_t)cnt, sizeof(*names));
	vals = calloc((size_t)cnt, sizeof(*vals));
	rc = -ENOMEM;
	if (names == NULL || vals == NULL)
		goto out;
	rc = rte_eth_xstats_get_names(port->port_id, names, (unsigned int)cnt);
	if (rc < 0 || rc > cnt)
		goto out_fix;
	rc = rte_eth_xstats_get(port->port_id, vals, (unsigned int)cnt);
	if (rc < 0 || rc > cnt)
		goto out_fix;
	for (int i = 0; i < rc && (unsigned int)i < n; i++) {
		uint64_t id = vals[i].id;

		snprintf(out[i].name, sizeof(out[i].name), "%s",
			 id < (uint64_t)cnt ? names[id].name : "?");
		out[i].value = vals[i].value;
	}
	goto out;
out_fix:
	if (rc > cnt)
		rc = -EAGAIN; /* the set of counters changed between the two calls */
out:
	free(names);
	free(vals);
	return rc;
}

int mr_dpdk_port_stats_dump(struct mr_dpdk_port *port, FILE *f)
{
	struct mr_dpdk_port_stats st;
	struct mr_dpdk_xstat *xs;
	int n, rc;

	if (port == NULL || f == NULL)
		return -EINVAL;
	rc = mr_dpdk_port_stats_get(port, &st);
	if (rc < 0)
		return rc;
	fprintf(f, "     tx_buffer_drops: %" PRIu64 "\n     mbuf_alloc_fail: %" PRIu64 "\n",
		st.tx_buffer_drops, st.mbuf_alloc_fail);
	n = mr_dpdk_port_xstats(port, NULL, 0);
	if (n <= 0)
		return n;
	xs = calloc((size_t)n, sizeof(*xs));
	if (xs == NULL)
		return -ENOMEM;
	rc = mr_dpdk_port_xstats(port, xs, (unsigned int)n);
	for (int i = 0; i < rc && i < n; i++)
		fprintf(f, "     %s: %" PRIu64 "\n", xs[i].name, xs[i].value);
	free(xs);
	return rc < 0 ? rc : 0;
}
