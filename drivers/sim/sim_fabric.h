/* SPDX-License-Identifier: MIT
 * A multipath fabric for the simulator: H hosts (struct mr_sim_node) behind one two-stage switch
 * with N parallel paths between the stages. A frame goes
 *
 *   host s --uplink--> [switch] --path p towards d--> [switch] --downlink d--> host d
 *
 * where p = ECMP hash(UDP source port, IP addresses, ports) % N, so the entropies (UDP source
 * ports) a MetaRoCE sender sprays over land on different paths, as on a Clos fabric with
 * per-flow ECMP (RFC 2992). Every path towards each destination is its own one-way link with its
 * own rate, latency, queue limit (tail drop), ECN threshold and loss (the sim_link models); the
 * downlink of each host is one shared queue, so K senders into one receiver (incast) contend for
 * it. Queues mark CE on ECT frames when their backlog exceeds K (DCTCP/DCQCN step marking).
 *
 * Single-threaded, deterministic, on the same virtual clock as sim.h.
 */
#ifndef MR_SIM_FABRIC_H
#define MR_SIM_FABRIC_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/sim_link.h"
#include "sim/sim_node.h"

#define MR_SIM_FABRIC_MAX_HOSTS 64
#define MR_SIM_FABRIC_MAX_PATHS 64

struct mr_sim_fabric_path_cfg {
	struct mr_sim_link_cfg link;   /* rate, latency, queue_bytes (tail drop), loss models... */
	uint64_t ecn_k_bytes;          /* mark CE when the queue exceeds this; 0 = never */
};

struct mr_sim_fabric_cfg {
	unsigned int n_hosts;          /* 2..MR_SIM_FABRIC_MAX_HOSTS */
	unsigned int n_paths;          /* 1..MR_SIM_FABRIC_MAX_PATHS */
	uint64_t host_rate_bps;        /* NIC rate: uplinks and downlinks */
	uint64_t host_latency_ns;      /* host <-> switch one-way propagation */
	uint64_t down_queue_bytes;     /* switch egress queue towards each host; 0 = unlimited */
	uint64_t down_ecn_k_bytes;     /* 0 = never mark */
	struct mr_sim_fabric_path_cfg path[MR_SIM_FABRIC_MAX_PATHS];
	uint64_t ecmp_seed;            /* hash seed ("switch id") */
	uint64_t seed;                 /* link PRNG streams derive from it */
	struct mr_ctx_params ctx;      /* every host's transport context */
};

/* Defaults: 2 hosts, 1 path, 100 Gb/s everywhere, 1 us per hop (10 us RTT over the 3 hops and
 * back... see the .c), 1 MiB downlink queue, no ECN, no loss. */
void mr_sim_fabric_cfg_init(struct mr_sim_fabric_cfg *cfg);
/* Apply one path configuration to every path. */
void mr_sim_fabric_cfg_all_paths(struct mr_sim_fabric_cfg *cfg,
				 const struct mr_sim_fabric_path_cfg *p);

struct mr_sim_fabric;

struct mr_sim_fabric *mr_sim_fabric_create(const struct mr_sim_fabric_cfg *cfg); /* NULL+errno */
void mr_sim_fabric_destroy(struct mr_sim_fabric *f);
unsigned int mr_sim_fabric_n_hosts(const struct mr_sim_fabric *f);
/* Host i (MAC 02:00:00:00:i>>8:i+1, IPv4 10.0.(i+1)>>8.(i+1)&255), or NULL. */
struct mr_sim_node *mr_sim_fabric_host(const struct mr_sim_fabric *f, unsigned int i);
/* The path ECMP picks for a frame from host src to host dst with this UDP source port. */
unsigned int mr_sim_fabric_ecmp(const struct mr_sim_fabric *f, unsigned int src,
				unsigned int dst, uint16_t sport);
uint64_t mr_sim_fabric_now(const struct mr_sim_fabric *f);
/* Wake the loop at t even if nothing else happens then. -ENOSPC beyond 16 pending. */
int mr_sim_fabric_wake_at(struct mr_sim_fabric *f, uint64_t t);

typedef bool (*mr_sim_fabric_pred_fn)(struct mr_sim_fabric *f, void *arg);
/* As mr_sim_run(): until pred returns true (0) or max_ns elapse (-ETIMEDOUT); pred NULL runs
 * until quiet. */
int mr_sim_fabric_run(struct mr_sim_fabric *f, mr_sim_fabric_pred_fn pred, void *arg,
		      uint64_t max_ns, uint64_t *elapsed);

/* What one queue (or a set of queues) did. */
struct mr_sim_fabric_report {
	uint64_t pkts, bytes;          /* offered to the queue(s) */
	uint64_t drops_queue;          /* tail drops */
	uint64_t drops_loss;           /* wire loss (random, mask, burst) */
	uint64_t ce_marks;
	uint64_t peak_queue_bytes;     /* max over the queues */
	double utilisation;            /* bytes sent on the wire / (rate * time since creation),
					* averaged over the queues */
};
/* Path p summed over every destination (-EINVAL if p is out of range). */
int mr_sim_fabric_path_report(struct mr_sim_fabric *f, unsigned int p,
			      struct mr_sim_fabric_report *r);
/* Path p towards host dst only. */
int mr_sim_fabric_path_to_report(struct mr_sim_fabric *f, unsigned int dst, unsigned int p,
				 struct mr_sim_fabric_report *r);
/* The switch egress queue towards host h. */
int mr_sim_fabric_down_report(struct mr_sim_fabric *f, unsigned int h,
			      struct mr_sim_fabric_report *r);

struct mr_sim_fabric_stats {
	uint64_t events;
	uint64_t forwarded;      /* frames the switch forwarded */
	uint64_t unroutable;     /* frames with an unknown destination or not IPv4: dropped */
	uint64_t stuck_timers;
};
void mr_sim_fabric_get_stats(const struct mr_sim_fabric *f, struct mr_sim_fabric_stats *st);

#endif
