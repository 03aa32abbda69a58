/* SPDX-License-Identifier: MIT
 * What the verified transfer scenarios (sim_xfer.h: two nodes, sim_fxfer.h: the fabric) have in
 * common: the seeded data pattern, byte-exact checking of strided regions with guard bytes,
 * per-message completion bookkeeping, latency percentiles, goodput and QP counter sums.
 */
#ifndef MR_SIM_VERIFY_H
#define MR_SIM_VERIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "transport/rc.h"

/* Fill p[0..len) with the splitmix64 stream of `seed` (8 bytes per draw, little-endian). */
void mr_sim_fill_pattern(uint8_t *p, uint64_t len, uint64_t seed);

/* Compare a destination region of messages laid out every `stride` bytes: the first `size`
 * bytes of each stride must equal `want`, the rest (guard bytes) must equal `guard`. Adds the
 * equal and the differing bytes to *ok and *bad. */
void mr_sim_verify_strided(const uint8_t *got, const uint8_t *want, uint64_t len,
			   uint64_t stride, uint64_t size, uint8_t guard, uint64_t *ok,
			   uint64_t *bad);

/* Per-message bookkeeping of one sender: when each message was posted and completed. */
struct mr_sim_msgs {
	uint32_t count;
	uint64_t *t_post, *t_done;
	uint8_t *done;         /* 1 once the message's send completion arrived */
	uint64_t last_done;    /* time of the latest completion */
};

/* Allocate for `count` messages. Returns 0 or -ENOMEM (free with mr_sim_msgs_free anyway). */
int mr_sim_msgs_init(struct mr_sim_msgs *m, uint32_t count);
void mr_sim_msgs_free(struct mr_sim_msgs *m);
/* Record the send completion of message `i` at `now`. False (nothing recorded) if `i` is out of
 * range or already completed: the caller counts a bad completion. */
bool mr_sim_msgs_complete(struct mr_sim_msgs *m, uint64_t i, uint64_t now);
/* Append post -> completion latencies of the completed messages to lat[]; returns how many. */
uint64_t mr_sim_msgs_latencies(const struct mr_sim_msgs *m, uint64_t *lat);

/* Sort lat[0..n) and store its median, 99th percentile and maximum (untouched if n == 0). */
void mr_sim_lat_percentiles(uint64_t *lat, uint64_t n, uint64_t *p50, uint64_t *p99,
			    uint64_t *max);
/* Payload bits per virtual nanosecond (= Gb/s); 0 if no time elapsed. */
double mr_sim_goodput_gbps(uint64_t bytes, uint64_t elapsed_ns);
/* sum += s, field by field. */
void mr_sim_qp_stats_add(struct mr_qp_stats *sum, const struct mr_qp_stats *s);

#endif
