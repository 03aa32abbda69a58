/* SPDX-License-Identifier: MIT
 * Congestion control behind one interface (ngtcp2 style: a struct of function pointers that
 * receives timestamped events). The transport calls the event hooks and reads the outputs
 * (pacing rate, window). No I/O, no DPDK, no clock: times are `now` in ns.
 *
 * Algorithms:
 *  - DCQCN (Zhu et al., SIGCOMM'15; ConnectX defaults): reaction point at the sender
 *    (rate cut on CNP, alpha decay, fast recovery / additive / hyper increase), notification
 *    point at the receiver (one CNP per flow per min interval when CE-marked packets arrive).
 *    Usable for plain RoCE and MetaRoCE.
 *  - MetaRoCE CC: window from ECN fraction (DCTCP-like) and delay against a target (Swift-like),
 *    per-path signals, in-flight bounded by the BDP.
 */
#ifndef MR_CC_H
/* Packets a paced sender may send back to back to catch up with its schedule (cc.c). */
#define MR_CC_BURST_PKTS 8u
#define MR_CC_H

#include <stdbool.h>
#include <stdint.h>

#define MR_CC_MAX_PATHS 256

enum mr_cc_algo {
	MR_CC_NONE = 0,     /* unpaced, unbounded (plain RC as rxe does) */
	MR_CC_DCQCN = 1,
	MR_CC_METAROCE = 2,
};

struct mr_cc_params {
	uint64_t line_rate_bps;  /* link rate: the maximum and initial rate */
	uint64_t base_rtt_ns;    /* propagation RTT estimate (for BDP and delay target) */
	uint32_t mtu;            /* payload bytes per packet */
	uint16_t n_paths;        /* entropies in use, 1..256 */
	/* DCQCN knobs (0 = ConnectX-like defaults, documented in dcqcn.c) */
	uint64_t dcqcn_rai_bps, dcqcn_rhai_bps;
	uint32_t dcqcn_g_shift;        /* g = 1/2^g_shift */
	uint64_t dcqcn_alpha_timer_ns, dcqcn_rate_timer_ns;
	uint32_t dcqcn_byte_counter;
	/* MetaRoCE knobs (0 = defaults) */
	uint64_t target_delay_ns;
};

/* One acknowledgement as the transport saw it. */
struct mr_cc_ack {
	uint64_t now;
	uint32_t acked_bytes;    /* newly acknowledged payload bytes (cumulative + selective) */
	uint32_t acked_pkts;
	uint32_t ce_pkts;        /* of those, CE-marked (ECN echo) */
	uint64_t rtt_ns;         /* RTT sample from an echoed timestamp, 0 if none */
	uint16_t path;           /* path the sample belongs to */
	uint64_t inflight_bytes; /* after this ack */
};

struct mr_cc;

struct mr_cc_ops {
	const char *name;
	void (*init)(struct mr_cc *cc, uint64_t now);
	void (*on_send)(struct mr_cc *cc, uint64_t now, uint32_t bytes, uint16_t path);
	void (*on_ack)(struct mr_cc *cc, const struct mr_cc_ack *ack);
	void (*on_cnp)(struct mr_cc *cc, uint64_t now);                  /* DCQCN RP */
	void (*on_loss)(struct mr_cc *cc, uint64_t now, uint32_t bytes, uint16_t path);
	void (*on_timeout)(struct mr_cc *cc, uint64_t now);
	uint64_t (*next_timer)(const struct mr_cc *cc);                  /* UINT64_MAX if none */
	void (*on_timer)(struct mr_cc *cc, uint64_t now);
};

/* Opaque per-algorithm state lives in `u`; the outputs are read by the transport. */
struct mr_cc {
	const struct mr_cc_ops *ops;
	struct mr_cc_params p;
	/* outputs */
	uint64_t rate_bps;    /* pacing rate, UINT64_MAX = unpaced */
	uint64_t cwnd_bytes;  /* congestion window, UINT64_MAX = unbounded */
	uint64_t rate_min_bps; /* the lowest rate_bps since init (statistics: a cut that
				* recovered within microseconds still shows) */
	uint64_t next_send_ns; /* pacing: earliest time the next packet may leave */
	/* per-path congestion score for path-aware spraying: higher = avoid (decays over time) */
	uint32_t path_penalty[MR_CC_MAX_PATHS];
	uint64_t u[64];       /* algorithm private state (static-asserted big enough) */
};

/* Initialise cc for algo with params. Returns 0 or -EINVAL (bad algo or params). */
int mr_cc_init(struct mr_cc *cc, enum mr_cc_algo algo, const struct mr_cc_params *p, uint64_t now);
const char *mr_cc_algo_name(enum mr_cc_algo algo);
/* Pacing helper for the transport: may a packet of `bytes` leave at now? (rate and window). */
bool mr_cc_can_send(const struct mr_cc *cc, uint64_t now, uint64_t inflight_bytes);
/* Account a sent packet: advances next_send_ns by bytes at rate_bps, calls ops->on_send. */
void mr_cc_sent(struct mr_cc *cc, uint64_t now, uint32_t bytes, uint16_t path);

/* DCQCN notification point (receiver side): call for every CE-marked packet of a flow; returns
 * true when a CNP must be sent now (at most one per min_interval_ns per flow; DCQCN paper
 * section 3: 50 us). */
struct mr_dcqcn_np {
	uint64_t min_interval_ns;
	uint64_t last_cnp_ns;
	bool sent_any;
	uint64_t cnps;
};
void mr_dcqcn_np_init(struct mr_dcqcn_np *np, uint64_t min_interval_ns);
bool mr_dcqcn_np_on_ce(struct mr_dcqcn_np *np, uint64_t now);

#endif
