/* SPDX-License-Identifier: MIT
 * A deterministic one-way simulated link with a virtual clock, modelled on picoquic's sim_link:
 * a transmitter with a rate (serialisation delay) fed by a FIFO queue with a byte limit (tail
 * drop), then a wire with propagation latency, seeded jitter, loss (random, a rotating 64-bit
 * mask, Gilbert-Elliott bursts), reordering, duplication and bit corruption.
 *
 * No I/O and no wall clock: the caller passes `now` (ns) on every call. Frames are copied in.
 */
#ifndef MR_SIM_LINK_H
#define MR_SIM_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mr_sim_link;

struct mr_sim_link_cfg {
	uint64_t rate_bps;      /* transmitter rate; 0 = infinite (no serialisation, no queue) */
	uint64_t latency_ns;    /* one-way propagation delay */
	uint64_t jitter_ns;     /* extra delay uniform in [0, jitter_ns]; never reorders */
	uint64_t queue_bytes;   /* bytes awaiting/under serialisation; 0 = unlimited */
	double loss;            /* independent per-packet loss probability */
	uint64_t loss_mask;     /* bit (i % 64) set: drop the i-th packet offered (0-based) */
	/* Gilbert-Elliott two-state loss model (Gilbert 1960, Elliott 1963): per packet the
	 * state first moves (good->bad with ge_p_gb, bad->good with ge_p_bg), then the packet is
	 * lost with the state's loss probability. ge_p_gb == 0 disables the model. */
	double ge_p_gb, ge_p_bg;
	double ge_loss_bad, ge_loss_good;
	double reorder;         /* probability that a packet is held back by reorder_delay_ns */
	uint64_t reorder_delay_ns;
	double dup;             /* probability that a delivered packet arrives twice */
	double corrupt;         /* probability that one random bit of a delivered packet flips */
	uint64_t seed;
};

/* Why a packet offered to mr_sim_link_send() will or will not arrive. */
enum mr_sim_fate {
	MR_SIM_FATE_QUEUED = 0,  /* will arrive (possibly delayed, duplicated or corrupted) */
	MR_SIM_FATE_DROP_QUEUE,  /* tail drop: queue full */
	MR_SIM_FATE_DROP_MASK,   /* loss mask bit set */
	MR_SIM_FATE_DROP_RANDOM, /* independent random loss */
	MR_SIM_FATE_DROP_BURST,  /* Gilbert-Elliott loss */
	MR_SIM_FATE_NR
};

struct mr_sim_link_stats {
	uint64_t sent, sent_bytes;           /* packets offered to the link */
	uint64_t delivered, delivered_bytes; /* handed out by mr_sim_link_recv (dups included) */
	uint64_t dropped[MR_SIM_FATE_NR];    /* by reason; [MR_SIM_FATE_QUEUED] stays 0 */
	uint64_t duplicated;                 /* extra copies created */
	uint64_t reordered;                  /* packets held back by the reorder model */
	uint64_t corrupted;                  /* packets with a flipped bit */
	uint64_t ge_bad_entries;             /* good->bad transitions of the burst model */
	uint64_t queue_peak_bytes;           /* max bytes queued, including the new packet */
};

/* Fill cfg with a lossless link (rate 0 = infinite, no delay). */
void mr_sim_link_cfg_init(struct mr_sim_link_cfg *cfg);
/* Configure the Gilbert-Elliott model from a mean burst length (packets, >= 1) and an overall
 * loss rate in (0, 1): loss 1 in bad, 0 in good, p_bg = 1/mean, and p_gb chosen so that the
 * stationary bad-state probability p_gb/(p_gb+p_bg) equals the loss rate. -EINVAL if out of
 * range. */
int mr_sim_link_cfg_burst(struct mr_sim_link_cfg *cfg, double mean_burst, double loss_rate);

struct mr_sim_link *mr_sim_link_create(const struct mr_sim_link_cfg *cfg); /* NULL + errno */
void mr_sim_link_destroy(struct mr_sim_link *link);

/* Offer a frame at time now. Returns its fate (>= 0) or -EINVAL (len 0 or > 65535) or
 * -ENOMEM. `now` must not go backwards across calls. */
int mr_sim_link_send(struct mr_sim_link *link, uint64_t now, const void *frame, size_t len);
/* Copy out the next frame whose arrival time is <= now. Returns its length, 0 when none is
 * due, or -ENOSPC if cap is too small (the frame stays queued). */
int mr_sim_link_recv(struct mr_sim_link *link, uint64_t now, void *buf, size_t cap);
/* Arrival time of the next frame, or UINT64_MAX when the wire is empty. */
uint64_t mr_sim_link_next_arrival(const struct mr_sim_link *link);
/* Time at which the transmitter finishes everything accepted so far (<= now: idle). Senders
 * that pace themselves to the link rate transmit when this is <= now. */
uint64_t mr_sim_link_busy_until(const struct mr_sim_link *link);
/* Bytes accepted but not yet fully serialised at time now. */
uint64_t mr_sim_link_backlog(struct mr_sim_link *link, uint64_t now);
/* Number of frames on the wire (not yet received). */
size_t mr_sim_link_in_flight(const struct mr_sim_link *link);
void mr_sim_link_get_stats(const struct mr_sim_link *link, struct mr_sim_link_stats *st);
const struct mr_sim_link_cfg *mr_sim_link_get_cfg(const struct mr_sim_link *link);
/* Change the impairments from the next packet on (e.g. cut the link mid-run); the queue, the
 * wire and the PRNG stream carry on (the seed is kept). */
int mr_sim_link_set_cfg(struct mr_sim_link *link, const struct mr_sim_link_cfg *cfg);
/* Serialisation time of len bytes at the configured rate, rounded up to whole ns. */
uint64_t mr_sim_link_tx_time(const struct mr_sim_link *link, size_t len);
const char *mr_sim_fate_str(enum mr_sim_fate f);

#endif
