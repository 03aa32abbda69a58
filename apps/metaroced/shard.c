/* SPDX-License-Identifier: MIT
 * metaroced QP sharding: the rings between engine shards. Only used with more than one engine
 * lcore; one lcore is shard 0 alone, with none of this.
 *
 *   port -> shard 0 (I/O): ARP/ND, MAC filter, then by BTH DestQP (shard_map.c):
 *             own QPN -> parse + ICRC + transport here
 *             QPN of shard i -> shard i's rx ring (the rx mbuf itself, no copy) -> shard i parses
 *   shard i transport output -> frame built into an mbuf -> shard i's tx ring -> shard 0:
 *             to our own GID (loopback) -> pcap, then dispatched by DestQP as if received
 *             else -> neighbour lookup (destination MAC patched: the Ethernet header is outside
 *             the ICRC, A17.3.1), held until ARP/ND answers, tx impairment, pcap, port tx
 *   control thread -> shard i's fd ring: an accepted app socket, adopted into shard i's server
 *
 * Every ring has exactly one producer and one consumer (RING_F_SP_ENQ | RING_F_SC_DEQ), so no
 * lock is taken on the data path; every object of a session lives in the shard that adopted it.
 * A full ring drops the frame (counted): RC recovers it as any loss (IBA 9.7.5.1.3, C9-141).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "daemon.h"
#include "backend.h"
#include "log.h"

/* Frames per ring: several loop iterations of the peer shard's work, so that a shard losing
 * its CPU for a while (2 cores, several pollers) does not make the other one drop. */
#define SHARD_RING_SIZE 2048
#define SHARD_FD_RING_SIZE 64
#define SHARD_RING_BURST 32

static struct rte_ring *ring(const char *what, unsigned int shard, unsigned int size)
{
	char name[RTE_RING_NAMESIZE];
	struct rte_ring *r;

	snprintf(name, sizeof(name), "mrd_%s%u", what, shard);
	r = rte_ring_create(name, size, (int)rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (r == NULL)
		mr_log(MR_LOG_ERR, "shard %u: ring %s: %s", shard, name, rte_strerror(rte_errno));
	return r;
}

int mr_shard_rings_create(struct mr_daemon *d)
{
	d->rx_ring = ring("rx", d->shard_id, SHARD_RING_SIZE);
	d->tx_ring = ring("tx", d->shard_id, SHARD_RING_SIZE);
	if (d->rx_ring == NULL || d->tx_ring == NULL)
		return -ENOMEM;
	return 0;
}

static void ring_free_mbufs(struct rte_ring *r)
{
	void *p;

	if (r == NULL)
		return;
	while (rte_ring_dequeue(r, &p) == 0)
		rte_pktmbuf_free(p);
	rte_ring_free(r);
}

void mr_shard_rings_free(struct mr_daemon *d)
{
	void *p;

	ring_free_mbufs(d->rx_ring);
	ring_free_mbufs(d->tx_ring);
	d->rx_ring = d->tx_ring = NULL;
	if (d->fd_ring != NULL) {
		/* Sockets accepted but never adopted: the apps see EOF. */
		while (rte_ring_dequeue(d->fd_ring, &p) == 0)
			close((int)(intptr_t)p - 1);
		rte_ring_free(d->fd_ring);
		d->fd_ring = NULL;
	}
}

/* The frame as an mbuf that can cross to another shard: the rx mbuf itself when the frame is
 * its (unmodified-length, single-segment) data, else a copy. NULL when no mbuf is left. */
static struct rte_mbuf *frame_mbuf(struct mr_daemon *d, const uint8_t *frame, uint32_t len)
{
	struct rte_mbuf *m = d->rx_cur;

	if (m != NULL && rte_pktmbuf_is_contiguous(m) &&
	    frame == rte_pktmbuf_mtod(m, const uint8_t *) && len == rte_pktmbuf_data_len(m)) {
		d->rx_cur = NULL; /* the rx loop must not free it */
		return m;
	}
	if (len > d->max_frame)
		return NULL;
	m = rte_pktmbuf_alloc(d->txpool);
	if (m == NULL)
		return NULL;
	memcpy(rte_pktmbuf_mtod(m, uint8_t *), frame, len);
	m->data_len = (uint16_t)len;
	m->pkt_len = len;
	d->st.ring_copy++;
	return m;
}

static bool enqueue_to(struct mr_daemon *d, unsigned int owner, struct rte_mbuf *m)
{
	if (rte_ring_sp_enqueue(d->all[owner]->rx_ring, m) != 0) {
		rte_pktmbuf_free(m);
		d->st.ring_full++;
		return false;
	}
	d->st.rx_dispatched++;
	return true;
}

bool mr_shard_dispatch(struct mr_daemon *d, const uint8_t *frame, uint32_t len)
{
	struct rte_mbuf *m;
	unsigned int owner;
	uint32_t qpn;

	/* Frames we cannot classify stay here: the full parse counts why they are dropped. */
	if (mr_shard_peek_dqpn(frame, len, &qpn) < 0)
		return false;
	owner = mr_shard_of_qpn(&d->map, qpn);
	if (owner == d->shard_id)
		return false;
	m = frame_mbuf(d, frame, len);
	if (m == NULL) {
		d->st.tx_nombuf++;
		return true;
	}
	(void)enqueue_to(d, owner, m);
	return true;
}

bool mr_shard_rx_room(const struct mr_daemon *d)
{
	unsigned int s;

	for (s = 1; s < d->nshards; s++)
		if (rte_ring_free_count(d->all[s]->rx_ring) < MR_RX_BURST)
			return false;
	return true;
}

unsigned int mr_shard_rx_ring(struct mr_daemon *d, uint64_t now)
{
	void *bufs[SHARD_RING_BURST];
	unsigned int n, i, total = 0, b;

	/* As the port's drain (daemon.h, MR_RX_DRAIN_BURSTS): ACKs before timers and tx. */
	for (b = 0; b < MR_RX_DRAIN_BURSTS; b++) {
		n = rte_ring_sc_dequeue_burst(d->rx_ring, bufs, SHARD_RING_BURST, NULL);
		for (i = 0; i < n; i++) {
			struct rte_mbuf *m = bufs[i];
			uint32_t len;
			const uint8_t *f = mr_dpdk_mbuf_frame(m, d->scratch, d->max_frame, &len);

			d->st.ring_rx++;
			if (f == NULL)
				d->st.rx_too_long++;
			else
				mr_engine_rx_roce(d, f, len, now);
			rte_pktmbuf_free(m);
		}
		total += n;
		if (n < SHARD_RING_BURST)
			break;
	}
	return total;
}

void mr_shard_tx_ring(struct mr_daemon *d, struct rte_mbuf *m)
{
	if (rte_ring_sp_enqueue(d->tx_ring, m) != 0) {
		rte_pktmbuf_free(m);
		d->st.ring_full++;
		return;
	}
	d->st.ring_tx++;
}

/* One frame another shard built. */
static void route_one(struct mr_daemon *d, struct rte_mbuf *m, uint64_t now)
{
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t len = rte_pktmbuf_data_len(m);
	uint8_t gid[16];
	uint32_t qpn;
	unsigned int owner;

	if (mr_shard_peek_dgid(f, len, gid) < 0) {
		/* We built it: cannot happen unless the builder is broken. */
		rte_pktmbuf_free(m);
		d->st.tx_build_err++;
		return;
	}
	if (!mr_backend_is_local_gid(d->be, gid)) {
		mr_engine_route_built(d, m, gid, now);
		return;
	}
	/* Loopback from shard i: the capture shows it once, then its owner receives it. */
	mr_engine_pcap(d, f, len);
	owner = mr_shard_peek_dqpn(f, len, &qpn) == 0 ? mr_shard_of_qpn(&d->map, qpn) : 0;
	if (owner != 0) {
		(void)enqueue_to(d, owner, m);
		return;
	}
	mr_engine_rx_roce(d, f, len, now);
	rte_pktmbuf_free(m);
}

unsigned int mr_shard_drain_tx_rings(struct mr_daemon *d, uint64_t now)
{
	void *bufs[SHARD_RING_BURST];
	unsigned int s, n, i, total = 0;

	for (s = 1; s < d->nshards; s++) {
		struct rte_ring *r = d->all[s]->tx_ring;
		unsigned int got = 0, room;

		/* At most one ring's worth per shard per iteration, so rx keeps its turn; and no
		 * more than the port's tx backlog takes: the rest waits in the ring (back-pressure
		 * to the shard, mr_engine_tx_transport). */
		while (got < SHARD_RING_SIZE &&
		       (room = mr_dpdk_port_tx_room(d->port, 0)) > 0 &&
		       (n = rte_ring_sc_dequeue_burst(r, bufs, RTE_MIN(room, SHARD_RING_BURST),
						      NULL)) > 0) {
			for (i = 0; i < n; i++)
				route_one(d, bufs[i], now);
			got += n;
		}
		total += got;
	}
	return total;
}

unsigned int mr_shard_adopt_fds(struct mr_daemon *d)
{
	void *p;
	unsigned int n = 0;

	while (rte_ring_sc_dequeue(d->fd_ring, &p) == 0) {
		int rc = mr_shm_server_adopt(d->srv, (int)(intptr_t)p - 1);

		if (rc < 0)
			mr_log(MR_LOG_WARN, "shard %u: session refused: %s", d->shard_id,
			       strerror(-rc));
		d->st.sessions_adopted++;
		n++;
	}
	/* Sessions first, then the adopted count (release): the control thread reads them in the
	 * opposite order, so a session it stops counting as pending is already counted here. */
	if (n > 0) {
		atomic_store_explicit(&d->pub_sessions, mr_shm_server_nsessions(d->srv),
				      memory_order_relaxed);
		atomic_fetch_add_explicit(&d->pub_adopted, n, memory_order_release);
	}
	return n;
}
