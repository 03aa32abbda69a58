/* SPDX-License-Identifier: MIT
 * A simulated world: nodes joined pairwise by two one-way links, and a run loop over a virtual
 * clock that jumps straight to the next event (a frame arrival, a transport timer, or the moment
 * a paced transmitter becomes free), as picoquic's simulation tests do. Single-threaded and
 * deterministic: the same seeds give the same run.
 */
#ifndef MR_SIM_H
#define MR_SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/sim_link.h"
#include "sim/sim_node.h"

#define MR_SIM_MAX_NODES 8

/* Virtual time at which a new world starts: not 0, so that a transport using 0 as "unset" is
 * not confused by the first packet. */
#define MR_SIM_T0 1000000ull

struct mr_sim;

struct mr_sim_stats {
	uint64_t events;        /* loop iterations */
	uint64_t timer_runs;    /* mr_ctx_on_timer() calls */
	uint64_t stuck_timers;  /* 100000 passes at one instant (a timer never cleared: a transport bug) */
};

struct mr_sim *mr_sim_create(void); /* NULL + errno */
/* Destroys the world, its links and every node added to it. */
void mr_sim_destroy(struct mr_sim *sim);
/* Add a node; the world takes ownership. -ENOSPC beyond MR_SIM_MAX_NODES. */
int mr_sim_add_node(struct mr_sim *sim, struct mr_sim_node *node);
/* Join a and b with a link a->b (cfg_ab) and b->a (cfg_ba). A node has one out link. */
int mr_sim_connect(struct mr_sim *sim, struct mr_sim_node *a, struct mr_sim_node *b,
		   const struct mr_sim_link_cfg *cfg_ab, const struct mr_sim_link_cfg *cfg_ba);
/* The link from a to b, or NULL. */
struct mr_sim_link *mr_sim_get_link(const struct mr_sim *sim, const struct mr_sim_node *a,
				    const struct mr_sim_node *b);
uint64_t mr_sim_now(const struct mr_sim *sim);
void mr_sim_get_stats(const struct mr_sim *sim, struct mr_sim_stats *st);
/* Per-frame text trace for every node (NULL disables). */
void mr_sim_set_trace(struct mr_sim *sim, FILE *trace);

/* Ask the loop to wake at virtual time t even if nothing else happens then (the predicate runs,
 * e.g. to post a late receive). Several wake-ups may be pending. -ENOSPC beyond 16. */
int mr_sim_wake_at(struct mr_sim *sim, uint64_t t);

/* Called before every event; return true to stop. May post work requests (the loop then lets
 * every node transmit at the current time). */
typedef bool (*mr_sim_pred_fn)(struct mr_sim *sim, void *arg);

/* Run until pred returns true (0), or until max_ns of virtual time have passed (-ETIMEDOUT).
 * pred NULL runs until the world is quiet (no frame on any link, no timer, nothing to send)
 * and returns 0. *elapsed (optional) receives the virtual time this call consumed. */
int mr_sim_run(struct mr_sim *sim, mr_sim_pred_fn pred, void *arg, uint64_t max_ns,
	       uint64_t *elapsed);

#endif
