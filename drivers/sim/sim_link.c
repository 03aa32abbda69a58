/* SPDX-License-Identifier: MIT
 * One-way simulated link. The model follows picoquic's sim_link (a transmitter whose busy time
 * is len*8/rate, then a fixed latency, with loss decided when the packet is offered), extended
 * with a byte-limited queue, Gilbert-Elliott bursts, reordering, duplication and corruption.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim_link.h"
#include "sim_rng.h"

/* A frame on the wire, waiting for its arrival time. */
struct wire_pkt {
	uint64_t arrival;
	uint64_t seq; /* tie-break: equal arrival times leave in send order */
	uint32_t len;
	uint8_t *data;
};

/* A frame accepted by the transmitter; kept only to know the queue occupancy. */
struct txq_ent {
	uint64_t finish;
	uint32_t len;
};

struct mr_sim_link {
	struct mr_sim_link_cfg cfg;
	struct mr_sim_rng rng;
	struct mr_sim_link_stats st;
	uint64_t busy_until;     /* transmitter free from this time on */
	uint64_t last_arrival;   /* FIFO floor for jitter: jitter alone never reorders */
	uint64_t offered;        /* index of the next packet offered (loss mask position) */
	uint64_t seq;
	bool ge_bad;
	/* min-heap of wire packets by (arrival, seq) */
	struct wire_pkt *heap;
	size_t heap_n, heap_cap;
	/* FIFO ring of accepted frames not yet fully serialised */
	struct txq_ent *txq;
	size_t txq_head, txq_n, txq_cap;
	uint64_t txq_bytes;
};

static const char *const fate_names[MR_SIM_FATE_NR] = {
	[MR_SIM_FATE_QUEUED] = "queued",
	[MR_SIM_FATE_DROP_QUEUE] = "drop-queue",
	[MR_SIM_FATE_DROP_MASK] = "drop-mask",
	[MR_SIM_FATE_DROP_RANDOM] = "drop-random",
	[MR_SIM_FATE_DROP_BURST] = "drop-burst",
};

const char *mr_sim_fate_str(enum mr_sim_fate f)
{
	return (unsigned int)f < MR_SIM_FATE_NR ? fate_names[f] : "?";
}

void mr_sim_link_cfg_init(struct mr_sim_link_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->ge_loss_bad = 1.0;
}

int mr_sim_link_cfg_burst(struct mr_sim_link_cfg *cfg, double mean_burst, double loss_rate)
{
	if (!(mean_burst >= 1.0) || !(loss_rate > 0.0) || !(loss_rate < 1.0))
		return -EINVAL;
	cfg->ge_p_bg = 1.0 / mean_burst;
	/* Stationary P(bad) = p_gb / (p_gb + p_bg) = loss  =>  p_gb = loss * p_bg / (1 - loss). */
	cfg->ge_p_gb = loss_rate * cfg->ge_p_bg / (1.0 - loss_rate);
	cfg->ge_loss_bad = 1.0;
	cfg->ge_loss_good = 0.0;
	return 0;
}

struct mr_sim_link *mr_sim_link_create(const struct mr_sim_link_cfg *cfg)
{
	struct mr_sim_link *l;

	if (cfg == NULL) {
		errno = EINVAL;
		return NULL;
	}
	l = calloc(1, sizeof(*l));
	if (l == NULL)
		return NULL;
	l->cfg = *cfg;
	mr_sim_rng_seed(&l->rng, cfg->seed);
	return l;
}

void mr_sim_link_destroy(struct mr_sim_link *link)
{
	if (link == NULL)
		return;
	for (size_t i = 0; i < link->heap_n; i++)
		free(link->heap[i].data);
	free(link->heap);
	free(link->txq);
	free(link);
}

static bool pkt_before(const struct wire_pkt *a, const struct wire_pkt *b)
{
	return a->arrival < b->arrival || (a->arrival == b->arrival && a->seq < b->seq);
}

static int heap_push(struct mr_sim_link *l, const struct wire_pkt *p)
{
	size_t i;

	if (l->heap_n == l->heap_cap) {
		size_t ncap = l->heap_cap ? l->heap_cap * 2 : 64;
		struct wire_pkt *nh = realloc(l->heap, ncap * sizeof(*nh));

		if (nh == NULL)
			return -ENOMEM;
		l->heap = nh;
		l->heap_cap = ncap;
	}
	i = l->heap_n++;
	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (!pkt_before(p, &l->heap[parent]))
			break;
		l->heap[i] = l->heap[parent];
		i = parent;
	}
	l->heap[i] = *p;
	return 0;
}

static void heap_pop(struct mr_sim_link *l)
{
	struct wire_pkt last = l->heap[--l->heap_n];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= l->heap_n)
			break;
		if (c + 1 < l->heap_n && pkt_before(&l->heap[c + 1], &l->heap[c]))
			c++;
		if (!pkt_before(&l->heap[c], &last))
			break;
		l->heap[i] = l->heap[c];
		i = c;
	}
	if (l->heap_n > 0)
		l->heap[i] = last;
}

/* Drop queue entries fully serialised by now. */
static void txq_drain(struct mr_sim_link *l, uint64_t now)
{
	while (l->txq_n > 0 && l->txq[l->txq_head].finish <= now) {
		l->txq_bytes -= l->txq[l->txq_head].len;
		l->txq_head = (l->txq_head + 1) % l->txq_cap;
		l->txq_n--;
	}
}

static int txq_push(struct mr_sim_link *l, uint64_t finish, uint32_t len)
{
	if (l->txq_n == l->txq_cap) {
		size_t ncap = l->txq_cap ? l->txq_cap * 2 : 64;
		struct txq_ent *nq = malloc(ncap * sizeof(*nq));

		if (nq == NULL)
			return -ENOMEM;
		for (size_t i = 0; i < l->txq_n; i++)
			nq[i] = l->txq[(l->txq_head + i) % l->txq_cap];
		free(l->txq);
		l->txq = nq;
		l->txq_cap = ncap;
		l->txq_head = 0;
	}
	l->txq[(l->txq_head + l->txq_n) % l->txq_cap] = (struct txq_ent){ finish, len };
	l->txq_n++;
	l->txq_bytes += len;
	return 0;
}

uint64_t mr_sim_link_tx_time(const struct mr_sim_link *link, size_t len)
{
	uint64_t bits = (uint64_t)len * 8u;

	if (link->cfg.rate_bps == 0)
		return 0;
	/* bits * 1e9 fits in 64 bits for any frame (< 2^16 bytes). */
	return (bits * 1000000000ull + link->cfg.rate_bps - 1) / link->cfg.rate_bps;
}

/* Decide, in a fixed order of random draws, whether the wire loses this packet. */
static enum mr_sim_fate wire_loss(struct mr_sim_link *l)
{
	const struct mr_sim_link_cfg *c = &l->cfg;
	uint64_t idx = l->offered++;
	bool masked = (c->loss_mask >> (idx % 64)) & 1u;
	bool rnd = mr_sim_rng_chance(&l->rng, c->loss);
	bool burst = false;

	if (c->ge_p_gb > 0.0) {
		if (l->ge_bad) {
			if (mr_sim_rng_chance(&l->rng, c->ge_p_bg))
				l->ge_bad = false;
		} else if (mr_sim_rng_chance(&l->rng, c->ge_p_gb)) {
			l->ge_bad = true;
			l->st.ge_bad_entries++;
		}
		burst = mr_sim_rng_chance(&l->rng, l->ge_bad ? c->ge_loss_bad : c->ge_loss_good);
	}
	if (masked)
		return MR_SIM_FATE_DROP_MASK;
	if (rnd)
		return MR_SIM_FATE_DROP_RANDOM;
	if (burst)
		return MR_SIM_FATE_DROP_BURST;
	return MR_SIM_FATE_QUEUED;
}

static int wire_put(struct mr_sim_link *l, uint64_t arrival, const void *frame, uint32_t len,
		    bool corrupt)
{
	struct wire_pkt p = { .arrival = arrival, .seq = l->seq++, .len = len };
	int rc;

	p.data = malloc(len);
	if (p.data == NULL)
		return -ENOMEM;
	memcpy(p.data, frame, len);
	if (corrupt) {
		uint64_t bit = mr_sim_rng_upto(&l->rng, (uint64_t)len * 8 - 1);

		p.data[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		l->st.corrupted++;
	}
	rc = heap_push(l, &p);
	if (rc < 0)
		free(p.data);
	return rc;
}

int mr_sim_link_send(struct mr_sim_link *link, uint64_t now, const void *frame, size_t len)
{
	struct mr_sim_link *l = link;
	const struct mr_sim_link_cfg *c = &l->cfg;
	uint64_t start, finish, arrival;
	enum mr_sim_fate fate;
	bool late, corrupt;
	int rc;

	if (len == 0 || len > 65535 || frame == NULL)
		return -EINVAL;
	l->st.sent++;
	l->st.sent_bytes += len;

	/* Transmitter: tail drop when the byte limit would be exceeded. */
	txq_drain(l, now);
	if (c->rate_bps != 0) {
		if (c->queue_bytes != 0 && l->txq_bytes + len > c->queue_bytes) {
			l->st.dropped[MR_SIM_FATE_DROP_QUEUE]++;
			return MR_SIM_FATE_DROP_QUEUE;
		}
		start = l->busy_until > now ? l->busy_until : now;
		finish = start + mr_sim_link_tx_time(l, len);
		rc = txq_push(l, finish, (uint32_t)len);
		if (rc < 0)
			return rc;
		l->busy_until = finish;
		if (l->txq_bytes > l->st.queue_peak_bytes)
			l->st.queue_peak_bytes = l->txq_bytes;
	} else {
		finish = now;
	}

	/* Wire: a lost packet still used the transmitter. */
	fate = wire_loss(l);
	if (fate != MR_SIM_FATE_QUEUED) {
		l->st.dropped[fate]++;
		return fate;
	}
	arrival = finish + c->latency_ns + mr_sim_rng_upto(&l->rng, c->jitter_ns);
	if (arrival < l->last_arrival)
		arrival = l->last_arrival;
	late = mr_sim_rng_chance(&l->rng, c->reorder);
	if (late) {
		/* Held back: later packets overtake it; it does not raise the FIFO floor. */
		arrival += c->reorder_delay_ns;
		l->st.reordered++;
	} else {
		l->last_arrival = arrival;
	}
	corrupt = mr_sim_rng_chance(&l->rng, c->corrupt);
	rc = wire_put(l, arrival, frame, (uint32_t)len, corrupt);
	if (rc < 0)
		return rc;
	if (mr_sim_rng_chance(&l->rng, c->dup)) {
		/* The copy follows the original immediately (same arrival, later sequence). */
		rc = wire_put(l, arrival, frame, (uint32_t)len, false);
		if (rc < 0)
			return rc;
		l->st.duplicated++;
	}
	return MR_SIM_FATE_QUEUED;
}

int mr_sim_link_recv(struct mr_sim_link *link, uint64_t now, void *buf, size_t cap)
{
	struct wire_pkt *p;
	uint32_t len;

	if (link->heap_n == 0 || link->heap[0].arrival > now)
		return 0;
	p = &link->heap[0];
	if (p->len > cap)
		return -ENOSPC;
	len = p->len;
	memcpy(buf, p->data, len);
	free(p->data);
	heap_pop(link);
	link->st.delivered++;
	link->st.delivered_bytes += len;
	return (int)len;
}

uint64_t mr_sim_link_next_arrival(const struct mr_sim_link *link)
{
	return link->heap_n ? link->heap[0].arrival : UINT64_MAX;
}

uint64_t mr_sim_link_busy_until(const struct mr_sim_link *link)
{
	return link->busy_until;
}

uint64_t mr_sim_link_backlog(struct mr_sim_link *link, uint64_t now)
{
	txq_drain(link, now);
	return link->txq_bytes;
}

size_t mr_sim_link_in_flight(const struct mr_sim_link *link)
{
	return link->heap_n;
}

void mr_sim_link_get_stats(const struct mr_sim_link *link, struct mr_sim_link_stats *st)
{
	*st = link->st;
}

const struct mr_sim_link_cfg *mr_sim_link_get_cfg(const struct mr_sim_link *link)
{
	return &link->cfg;
}

int mr_sim_link_set_cfg(struct mr_sim_link *link, const struct mr_sim_link_cfg *cfg)
{
	uint64_t seed = link->cfg.seed;

	if (cfg == NULL)
		return -EINVAL;
	/* Impairments change from the next packet on; the PRNG stream and queue continue. */
	link->cfg = *cfg;
	link->cfg.seed = seed;
	return 0;
}
