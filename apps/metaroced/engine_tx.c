/* SPDX-License-Identifier: MIT
 * metaroced tx path: transport output -> destination MAC from the neighbour cache -> frame built
 * straight into an mbuf -> port tx buffer. Frames to a peer whose MAC is not known yet are held
 * (in order) until ARP/ND answers; frames to our own GID are looped back in software.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "daemon.h"
#include "backend.h"
#include "dpdk/dpdk_port.h"
#include "dpdk/neigh.h"
#include "impair/impair.h"
#include "log.h"
#include "wire/pcap_file.h"
#include "transport/rc.h"

/* How long a successful lookup is reused without asking the neighbour table again; the table
 * keeps using a stale MAC while it re-validates anyway (neigh.h, PROBE state). */
#define LOOKUP_CACHE_NS 100000000ull
#define HELD_CHECK_NS 1000000ull

void mr_engine_pcap(struct mr_daemon *d, const uint8_t *frame, uint32_t len)
{
	struct timespec ts;

	if (d->pcap == NULL)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	/* -ENOSPC past the size cap: the writer counts the drops itself. */
	(void)mr_pcap_writer_write(d->pcap, frame, len,
				   (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
}

/* A frame built for the port's IPv4 checksum offload that is about to be captured or handed to
 * the tx impairment stage (either attached while it waited for ARP): its checksum computed
 * here instead (RFC 791), since both see the bytes and the stage resends copies without the
 * mbuf's flags. */
static void csum_in_software(struct rte_mbuf *m)
{
	struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, m->l2_len);

	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	m->ol_flags &= ~(RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM);
}

static void send_mbuf(struct mr_daemon *d, struct rte_mbuf *m, uint64_t now)
{
	uint32_t len = rte_pktmbuf_pkt_len(m);

	if (unlikely(m->ol_flags & RTE_MBUF_F_TX_IP_CKSUM) &&
	    (d->imp[MR_IMPAIR_TX] != NULL || d->pcap != NULL))
		csum_in_software(m);
	/* The tx impairment sees the frame as built; dropped or delayed ones never reach the
	 * capture or the port now (delayed ones go out from mr_engine_impair_poll()). */
	if (d->imp[MR_IMPAIR_TX] != NULL && !mr_engine_tx_impair(d, m, now)) {
		rte_pktmbuf_free(m);
		return;
	}
	mr_engine_pcap(d, rte_pktmbuf_mtod(m, const uint8_t *), len);
	if (mr_dpdk_port_tx(d->port, 0, m) < 0) {
		rte_pktmbuf_free(m);
		d->st.tx_nombuf++;
		return;
	}
	d->st.tx_frames++;
	d->st.tx_bytes += len;
	d->tx_pending = true;
}

int mr_engine_tx_copy(struct mr_daemon *d, const uint8_t *frame, uint32_t len)
{
	struct rte_mbuf *m = mr_dpdk_port_mbuf_from_frame(d->port, frame, len);

	if (m == NULL) {
		d->st.tx_nombuf++;
		return -ENOBUFS;
	}
	d->st.tx_neigh++;
	send_mbuf(d, m, d->imp[MR_IMPAIR_TX] != NULL ? mr_now_ns() : 0);
	return 0;
}

static int lookup(struct mr_daemon *d, const uint8_t gid[16], uint64_t now, uint8_t mac[6])
{
	int rc;

	if (now < d->lk_until && memcmp(gid, d->lk_gid, 16) == 0) {
		memcpy(mac, d->lk_mac, 6);
		return 0;
	}
	rc = mr_neigh_lookup(d->neigh, gid, now, mac);
	if (rc == 0) {
		memcpy(d->lk_gid, gid, 16);
		memcpy(d->lk_mac, mac, 6);
		d->lk_until = now + LOOKUP_CACHE_NS;
	}
	return rc;
}

static void solicit(struct mr_daemon *d, const uint8_t gid[16], uint64_t now)
{
	uint8_t buf[MR_NEIGH_FRAME_MAX];
	int len = mr_neigh_solicit(d->neigh, gid, now, buf, sizeof(buf));

	if (len > 0)
		mr_engine_tx_copy(d, buf, (uint32_t)len);
}

void mr_engine_resolve(void *arg, const uint8_t gid[16])
{
	struct mr_daemon *d = arg;
	uint64_t now = mr_now_ns();
	uint8_t mac[6];

	if (mr_backend_is_local_gid(d->be, gid))
		return;
	if (lookup(d, gid, now, mac) == -EAGAIN)
		solicit(d, gid, now);
}

unsigned int mr_engine_neigh_poll(struct mr_daemon *d, uint64_t now)
{
	uint8_t buf[MR_NEIGH_FRAME_MAX];
	unsigned int n = 0;
	int len;

	/* O(1) per loop: the table caches its earliest timer (neigh_priv.h). */
	if (now < mr_neigh_next_timeout(d->neigh))
		return 0;
	while ((len = mr_neigh_poll(d->neigh, now, buf, sizeof(buf))) > 0) {
		mr_engine_tx_copy(d, buf, (uint32_t)len);
		n++;
	}
	return n;
}

/* Said when it happens (issue 11), at most once a second: the QP will only fail seconds later,
 * with RETRY_EXC_ERR, far from the cause. */
static void warn_unreachable(const struct mr_daemon *d, const uint8_t gid[16], uint64_t now)
{
	static uint64_t last;
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	char ip[INET6_ADDRSTRLEN];

	if (last != 0 && now - last < 1000000000ull)
		return;
	last = now;
	if (memcmp(gid, v4mapped, 12) == 0)
		inet_ntop(AF_INET, gid + 12, ip, sizeof(ip));
	else
		inet_ntop(AF_INET6, gid, ip, sizeof(ip));
	mr_log(MR_LOG_WARN, "peer %s unreachable: no ARP/ND answer on port %u; its frames are "
	       "dropped (mrstat: tx_drop_unreachable %" PRIu64 "). Check the peer's address and "
	       "that its daemon runs on the same link", ip, d->cfg.port_id, d->st.held_dropped);
}

unsigned int mr_engine_release_held(struct mr_daemon *d, uint64_t now)
{
	unsigned int i, j = 0, sent = 0;

	/* In queue order, so that one QP's packets keep their PSN order (IBA 9.7.1 would treat a
	 * reordering as loss and go back N). */
	for (i = 0; i < d->nheld; i++) {
		struct mr_held h = d->held[i];
		uint8_t mac[6];
		int rc = lookup(d, h.gid, now, mac);

		if (rc == 0) {
			memcpy(rte_pktmbuf_mtod(h.m, uint8_t *), mac, 6);
			send_mbuf(d, h.m, now);
			d->st.held_sent++;
			sent++;
		} else if (rc == -EAGAIN) {
			d->held[j++] = h;
		} else {
			/* Unreachable: RC's retry counter (C9-141) will end the QP in error. */
			rte_pktmbuf_free(h.m);
			d->st.held_dropped++;
			warn_unreachable(d, h.gid, now);
		}
	}
	d->nheld = j;
	return sent;
}

void mr_engine_free_held(struct mr_daemon *d)
{
	unsigned int i;

	for (i = 0; i < d->nheld; i++)
		rte_pktmbuf_free(d->held[i].m);
	d->nheld = 0;
}

static void loopback(struct mr_daemon *d, struct mr_path *path, const struct mr_tx_pkt *pkt,
		     uint64_t now)
{
	int len;

	memcpy(path->dmac, d->mac, 6);
	len = mr_frame_build(d->scratch, d->max_frame, path, d->ip_id++, &pkt->hdr, pkt->iov,
			     pkt->niov);
	if (len < 0) {
		d->st.tx_build_err++;
		return;
	}
	d->st.tx_loopback++;
	mr_engine_pcap(d, d->scratch, (uint32_t)len);
	/* To one of our own QPs, which may live in another shard. */
	if (d->nshards > 1 && mr_shard_dispatch(d, d->scratch, (uint32_t)len))
		return;
	mr_engine_rx_roce(d, d->scratch, (uint32_t)len, now);
}

/* Frames for a peer that already waits go behind it, in order. */
static bool peer_waits(const struct mr_daemon *d, const uint8_t gid[16])
{
	unsigned int i;

	for (i = 0; i < d->nheld; i++)
		if (memcmp(d->held[i].gid, gid, 16) == 0)
			return true;
	return false;
}

/* A built frame whose lookup gave rc (0: dmac is in the frame; -EAGAIN: unresolved). */
static void route(struct mr_daemon *d, struct rte_mbuf *m, const uint8_t gid[16], int rc,
		  uint64_t now)
{
	if (rc == 0) {
		send_mbuf(d, m, now);
	} else if (rc == -EAGAIN && d->nheld < MR_HELD_MAX) {
		memcpy(d->held[d->nheld].gid, gid, 16);
		d->held[d->nheld++].m = m;
		d->st.held++;
		solicit(d, gid, now);
	} else {
		rte_pktmbuf_free(m);
		d->st.held_dropped++;
		if (rc != -EAGAIN)
			warn_unreachable(d, gid, now);
	}
}

void mr_engine_route_built(struct mr_daemon *d, struct rte_mbuf *m, const uint8_t gid[16],
			   uint64_t now)
{
	uint8_t mac[6];
	int rc = lookup(d, gid, now, mac);

	if (rc == 0 && d->nheld > 0 && peer_waits(d, gid))
		rc = -EAGAIN;
	/* The Ethernet header is outside the ICRC (A17.3.1): patching the MAC keeps it valid. */
	if (rc == 0)
		memcpy(rte_pktmbuf_mtod(m, uint8_t *), mac, 6);
	route(d, m, gid, rc, now);
}

/* An mbuf holding pkt's frame, built from path, or (path NULL) from the QP's template with dmac
 * and the mr_frame_build_tmpl flags; NULL, counted, without an mbuf (the requester's ACK
 * timeout recovers the packet) or for a packet the builder refuses. */
static struct rte_mbuf *build_mbuf(struct mr_daemon *d, const struct mr_tx_pkt *pkt,
				   const struct mr_path *path, const uint8_t *dmac,
				   unsigned int flags)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(d->txpool);
	int len;

	if (m == NULL) {
		d->st.tx_nombuf++;
		return NULL;
	}
	if (path != NULL)
		len = mr_frame_build(rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_tailroom(m), path,
				     d->ip_id++, &pkt->hdr, pkt->iov, pkt->niov);
	else
		len = mr_frame_build_tmpl(rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_tailroom(m),
					  pkt->tmpl, dmac, pkt->udp_sport, d->ip_id++, &pkt->hdr,
					  pkt->iov, pkt->niov, flags);
	if (len < 0) {
		rte_pktmbuf_free(m);
		d->st.tx_build_err++;
		return NULL;
	}
	m->data_len = (uint16_t)len;
	m->pkt_len = (uint32_t)len;
	return m;
}

/* Shard i > 0: build into an mbuf (destination MAC left to the I/O shard) and hand it over. */
static void build_for_io(struct mr_daemon *d, struct mr_path *path, const struct mr_tx_pkt *pkt)
{
	struct rte_mbuf *m;

	if (mr_backend_is_local_gid(d->be, path->dgid)) {
		memcpy(path->dmac, d->mac, 6);
		d->st.tx_loopback++;
	}
	m = build_mbuf(d, pkt, path, NULL, 0);
	if (m != NULL)
		mr_shard_tx_ring(d, m);
}

/* A packet to a peer on the port, its headers from the QP's prebuilt template: no copy of the
 * path, the destination MAC straight from the lookup. The IPv4 header checksum is left to a
 * port that offers it, unless frames are captured (the capture would show it zero) or go
 * through the tx impairment stage (which sends the frames it delays or duplicates as copies,
 * without the mbuf's offload flags). */
static void tx_tmpl(struct mr_daemon *d, const struct mr_tx_pkt *pkt, uint64_t now)
{
	const uint8_t *gid = pkt->path->dgid;
	bool off = d->tx_csum_offload && !pkt->tmpl->ipv6 && d->pcap == NULL &&
		   d->imp[MR_IMPAIR_TX] == NULL;
	struct rte_mbuf *m;
	uint8_t mac[6] = { 0 };
	int rc;

	rc = lookup(d, gid, now, mac);
	if (rc == 0 && d->nheld > 0 && peer_waits(d, gid))
		rc = -EAGAIN;
	m = build_mbuf(d, pkt, NULL, mac, off ? MR_BUILD_IP_CSUM_OFFLOAD : 0);
	if (m == NULL)
		return;
	if (off) {
		/* DPDK's IPv4 checksum offload: the field zero, the header's place in the mbuf. */
		m->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM;
		m->l2_len = pkt->tmpl->ip_off;
		m->l3_len = 20;
		d->st.tx_csum_offload++;
	}
	route(d, m, gid, rc, now);
}

unsigned int mr_engine_tx_transport(struct mr_daemon *d, uint64_t now, unsigned int budget)
{
	unsigned int n, room;

	/* ARP/ND answers release held frames from the rx path at once; this catches failures
	 * (probes exhausted) without a table lookup per held frame per loop iteration. */
	if (d->nheld > 0 && now >= d->held_next_check) {
		mr_engine_release_held(d, now);
		d->held_next_check = now + HELD_CHECK_NS;
	}
	/* Back-pressure: a packet taken from the transport counts as sent (its PSN is used), so
	 * no more are taken than the port's tx backlog (or the I/O shard's ring) can hold. A
	 * full PMD ring then slows the transport down instead of losing frames. */
	room = d->tx_ring != NULL ? rte_ring_free_count(d->tx_ring) :
				     mr_dpdk_port_tx_room(d->port, 0);
	if (room < budget) {
		budget = room;
		d->st.tx_backpressure++;
	}
	for (n = 0; n < budget; n++) {
		struct mr_tx_pkt pkt;
		struct mr_path path;
		struct rte_mbuf *m;
		int rc;
		bool local;

		if (mr_ctx_tx(d->ctx, now, &pkt) != 1)
			break;
		/* Read from the QP's path, not from the copy just stored below: loads of a few
		 * bytes from a struct copied with vector stores a moment before missed the store
		 * forwarding (4-5 % of the sending engine's cycles at 8-byte WRITEs, perf). */
		local = d->tx_ring == NULL && mr_backend_is_local_gid(d->be, pkt.path->dgid);
		d->st.tx_roce++;
		if (pkt.tmpl != NULL && !local && d->tx_ring == NULL) {
			tx_tmpl(d, &pkt, now);
			continue;
		}
		path = *pkt.path;
		/* MetaRoCE sprays: the transport picks the entropy (UDP source port, A17.3.3) per
		 * packet; plain RC leaves it 0 and the path's fixed per-QP port is used. */
		if (pkt.udp_sport != 0)
			path.udp_sport = pkt.udp_sport;
		if (d->tx_ring != NULL) {
			build_for_io(d, &path, &pkt);
			continue;
		}
		if (local) {
			loopback(d, &path, &pkt, now);
			continue;
		}
		rc = lookup(d, pkt.path->dgid, now, path.dmac);
		if (rc == 0 && d->nheld > 0 && peer_waits(d, pkt.path->dgid))
			rc = -EAGAIN;
		m = build_mbuf(d, &pkt, &path, NULL, 0);
		if (m != NULL)
			route(d, m, pkt.path->dgid, rc, now);
	}
	return n;
}
