/* SPDX-License-Identifier: MIT
 * The simulated world and its event loop. Time only moves forward, to the earliest of: the next
 * frame arrival on any link, the next transport timer, or the end of the transmitter busy period
 * of a node that still has frames to send (pacing at link rate, so queues stay empty). */
#include <errno.h>
#include <stdlib.h>

#include "sim/sim.h"

struct sim_wire {
	struct mr_sim_link *link;
	struct mr_sim_node *src, *dst;
};

struct mr_sim {
	uint64_t now;
	struct mr_sim_node *nodes[MR_SIM_MAX_NODES];
	bool tx_more[MR_SIM_MAX_NODES];
	unsigned int nnodes;
	struct sim_wire wires[MR_SIM_MAX_NODES];
	unsigned int nwires;
	struct mr_sim_stats st;
	uint64_t wake[16];      /* caller wake-ups, unordered */
	unsigned int nwake;
	uint8_t frame[MR_SIM_FRAME_MAX];
};

struct mr_sim *mr_sim_create(void)
{
	struct mr_sim *sim = calloc(1, sizeof(*sim));

	if (sim == NULL)
		return NULL;
	sim->now = MR_SIM_T0;
	return sim;
}

void mr_sim_destroy(struct mr_sim *sim)
{
	if (sim == NULL)
		return;
	for (unsigned int i = 0; i < sim->nwires; i++)
		mr_sim_link_destroy(sim->wires[i].link);
	for (unsigned int i = 0; i < sim->nnodes; i++)
		mr_sim_node_destroy(sim->nodes[i]);
	free(sim);
}

int mr_sim_add_node(struct mr_sim *sim, struct mr_sim_node *node)
{
	if (node == NULL)
		return -EINVAL;
	if (sim->nnodes == MR_SIM_MAX_NODES)
		return -ENOSPC;
	sim->nodes[sim->nnodes++] = node;
	return 0;
}

static int node_index(const struct mr_sim *sim, const struct mr_sim_node *n)
{
	for (unsigned int i = 0; i < sim->nnodes; i++)
		if (sim->nodes[i] == n)
			return (int)i;
	return -1;
}

static int add_wire(struct mr_sim *sim, struct mr_sim_node *src, struct mr_sim_node *dst,
		    const struct mr_sim_link_cfg *cfg)
{
	struct mr_sim_link *l;

	for (unsigned int i = 0; i < sim->nwires; i++)
		if (sim->wires[i].src == src)
			return -EEXIST;
	if (sim->nwires == MR_SIM_MAX_NODES)
		return -ENOSPC;
	l = mr_sim_link_create(cfg);
	if (l == NULL)
		return -errno;
	sim->wires[sim->nwires++] = (struct sim_wire){ l, src, dst };
	mr_sim_node_set_out_link(src, l);
	return 0;
}

int mr_sim_connect(struct mr_sim *sim, struct mr_sim_node *a, struct mr_sim_node *b,
		   const struct mr_sim_link_cfg *cfg_ab, const struct mr_sim_link_cfg *cfg_ba)
{
	int rc;

	if (node_index(sim, a) < 0 || node_index(sim, b) < 0 || a == b)
		return -EINVAL;
	rc = add_wire(sim, a, b, cfg_ab);
	if (rc < 0)
		return rc;
	return add_wire(sim, b, a, cfg_ba);
}

struct mr_sim_link *mr_sim_get_link(const struct mr_sim *sim, const struct mr_sim_node *a,
				    const struct mr_sim_node *b)
{
	for (unsigned int i = 0; i < sim->nwires; i++)
		if (sim->wires[i].src == a && sim->wires[i].dst == b)
			return sim->wires[i].link;
	return NULL;
}

uint64_t mr_sim_now(const struct mr_sim *sim)
{
	return sim->now;
}

void mr_sim_get_stats(const struct mr_sim *sim, struct mr_sim_stats *st)
{
	*st = sim->st;
}

void mr_sim_set_trace(struct mr_sim *sim, FILE *trace)
{
	for (unsigned int i = 0; i < sim->nnodes; i++)
		mr_sim_node_set_trace(sim->nodes[i], trace);
}

int mr_sim_wake_at(struct mr_sim *sim, uint64_t t)
{
	if (sim->nwake == sizeof(sim->wake) / sizeof(sim->wake[0]))
		return -ENOSPC;
	sim->wake[sim->nwake++] = t;
	return 0;
}

/* One pass over everything due at sim->now. */
static void step(struct mr_sim *sim)
{
	uint64_t now = sim->now;

	for (unsigned int i = 0; i < sim->nnodes; i++) {
		struct mr_ctx *ctx = mr_sim_node_ctx(sim->nodes[i]);

		if (mr_ctx_next_expiry(ctx) <= now) {
			mr_ctx_on_timer(ctx, now);
			sim->st.timer_runs++;
			sim->tx_more[i] = true;
		}
	}
	for (unsigned int w = 0; w < sim->nwires; w++) {
		struct sim_wire *sw = &sim->wires[w];
		int len;

		while ((len = mr_sim_link_recv(sw->link, now, sim->frame, sizeof(sim->frame))) != 0) {
			if (len < 0) /* larger than any frame we build: cannot happen */
				abort();
			mr_sim_node_rx(sw->dst, now, sim->frame, (uint32_t)len);
			sim->tx_more[node_index(sim, sw->dst)] = true;
		}
	}
	for (unsigned int i = 0; i < sim->nnodes; i++) {
		bool more;

		if (!sim->tx_more[i])
			continue;
		/* A budget bounds one pass; with an infinite-rate link the node keeps 'more'. */
		mr_sim_node_tx(sim->nodes[i], now, 64, &more);
		sim->tx_more[i] = more;
	}
}

/* Earliest future event, or UINT64_MAX when the world is quiet. */
static uint64_t next_event(struct mr_sim *sim)
{
	uint64_t next = UINT64_MAX;

	for (unsigned int k = 0; k < sim->nwake;) {
		if (sim->wake[k] <= sim->now) {
			sim->wake[k] = sim->wake[--sim->nwake]; /* reached: forget it */
			continue;
		}
		if (sim->wake[k] < next)
			next = sim->wake[k];
		k++;
	}
	for (unsigned int w = 0; w < sim->nwires; w++) {
		uint64_t t = mr_sim_link_next_arrival(sim->wires[w].link);

		if (t < next)
			next = t;
	}
	for (unsigned int i = 0; i < sim->nnodes; i++) {
		uint64_t t = mr_ctx_next_expiry(mr_sim_node_ctx(sim->nodes[i]));

		if (t < sim->now)
			t = sim->now; /* due now (armed during this step): run again at once */
		if (t < next)
			next = t;
		if (sim->tx_more[i]) {
			struct mr_sim_link *l = NULL;

			for (unsigned int w = 0; w < sim->nwires; w++)
				if (sim->wires[w].src == sim->nodes[i])
					l = sim->wires[w].link;
			t = l ? mr_sim_link_busy_until(l) : UINT64_MAX;
			if (t <= sim->now)
				t = sim->now; /* budget ran out: continue at the same instant */
			if (t < next)
				next = t;
		}
	}
	return next;
}

int mr_sim_run(struct mr_sim *sim, mr_sim_pred_fn pred, void *arg, uint64_t max_ns,
	       uint64_t *elapsed)
{
	uint64_t start = sim->now;
	unsigned int same_instant = 0;
	uint64_t deadline = max_ns > UINT64_MAX - start ? UINT64_MAX : start + max_ns;
	int rc;

	for (unsigned int i = 0; i < sim->nnodes; i++)
		sim->tx_more[i] = true;
	for (;;) {
		uint64_t next;

		sim->st.events++;
		if (pred != NULL && pred(sim, arg)) {
			rc = 0;
			break;
		}
		if (pred != NULL)
			/* pred may have posted work: give every node a chance to send now. */
			for (unsigned int i = 0; i < sim->nnodes; i++)
				sim->tx_more[i] = true;
		step(sim);
		next = next_event(sim);
		if (next == UINT64_MAX && pred == NULL) {
			rc = 0;
			break;
		}
		if (next > deadline) {
			/* The last step may have satisfied the caller: ask once more. */
			if (pred != NULL && pred(sim, arg)) {
				rc = 0;
				break;
			}
			sim->now = deadline;
			rc = -ETIMEDOUT;
			break;
		}
		if (next == sim->now && ++same_instant > 100000) {
			/* A timer that on_timer never clears would spin forever: step past it. */
			sim->st.stuck_timers++;
			next = sim->now + 1;
		}
		if (next != sim->now)
			same_instant = 0;
		sim->now = next;
	}
	if (elapsed)
		*elapsed = sim->now - start;
	return rc;
}
