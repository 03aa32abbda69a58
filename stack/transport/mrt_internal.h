/* SPDX-License-Identifier: MIT
 * Private state of the MetaRoCE transport (docs/metaroce-wire.md): shared by mrt_*.c,
 * sack_scoreboard.c, rack.c and entropy.c only, never installed.
 *
 * A MetaRoCE QP keeps the RC queues (SQ/RQ/CQ, PD/MR checks) and replaces the RC engine
 * (qp->eng is mrt_engine instead of rc_engine, struct rc_engine_ops in rc_internal.h):
 *  - requester: per-PSN scoreboard (sack_scoreboard.c), RACK/TLP/RTO loss detection (rack.c),
 *    path selection over n entropies (entropy.c), READ re-request of missing byte ranges;
 *  - responder: per-packet placement, per-PSN receive ring (cumulative PSN + SACK bitmap),
 *    completions and MSN strictly in message order.
 * Everything is allocated once at INIT->RTR; per packet work is O(1) or O(window).
 */
#ifndef MR_TRANSPORT_MRT_INTERNAL_H
#define MR_TRANSPORT_MRT_INTERNAL_H

#include "rc_internal.h"

/* Scoreboard / receive ring size in PSNs (power of two): the most request packets a MetaRoCE
 * QP keeps unacknowledged. 4096 x 4 KiB = 16 MiB, several 100 Gb/s x 100 us BDPs. */
#define MRT_WIN 4096u
#define MRT_SACK_BITS 128u
/* READ response packets per READ request chunk: each chunk is one request PSN whose responses
 * are tracked in one 64-bit bitmap, so a lost response is re-requested alone. */
#define MRT_RD_CHUNK 64u
/* Responder: ACK at least every this many in-order packets, or after MRT_DELACK_NS. */
#define MRT_ACK_EVERY 2u
#define MRT_DELACK_NS 2000u
/* RACK reorder window floor (RFC 8985 6.2 uses min_rtt/4; a zero-RTT link still needs a
 * window so that a reordered burst is not declared lost before it lands). */
#define MRT_REO_MIN_NS 1000u
#define MRT_REO_MULT_MAX 16u
/* Ceiling of a reorder window learnt from measured lateness (rack.c): half the RTO floor, so a
 * real loss is still repaired well before the RTO. */
#define MRT_REO_EXT_MAX_NS 50000u
/* TLP (RFC 8985 7.2): PTO = 2*SRTT, at least this; before any RTT sample, MRT_TLP_INIT_NS. */
#define MRT_TLP_MIN_NS 10000u
#define MRT_TLP_INIT_NS 100000u
/* RTO floor with an RTT estimate (the QP's IBA timeout is the ceiling, C9-141). */
#define MRT_RTO_MIN_NS 100000u
#define MRT_RTO_MAX_SHIFT 16u
#define MRT_RTO_PROBES_PER_ACKTO 4u /* rack.c mrt_rto_deadline */
/* RFC 6298's G (rack.c mrt_gran_note): the endpoints' scheduling granularity, learnt as the
 * largest RTT excursion above min RTT; it halves every MRT_GRAN_HALFLIFE smoothed RTTs without
 * a larger one. */
#define MRT_GRAN_HALFLIFE 4096u
#define MRT_GRAN_ACKTO_MULT 4u
/* Entropy: recycle queue length, cooldown of a lossy / marked path. */
#define MRT_RECYCLE 64u
#define MRT_COOL_MIN_NS 50000u
#define MRT_COOL_MAX_SHIFT 10u
#define MRT_PEN_LOSS 64u
#define MRT_PEN_ECN 16u
#define MRT_PEN_RTT 4u
/* Source ports past 65535 continue here (entropy.c mrt_udp_sport). */
#define MRT_SPORT_WRAP_BASE 0xc000u

/* Scoreboard entry flags. */
enum {
	MRT_TX_SENT = 1 << 0,  /* transmitted at least once */
	MRT_TX_ACKED = 1 << 1, /* the peer has the request packet (cumulative or SACK) */
	MRT_TX_DONE = 1 << 2,  /* nothing left to do (READ: all responses; atomic: result) */
	MRT_TX_LOST = 1 << 3,  /* declared lost and not resent yet */
	MRT_TX_RETX = 1 << 4,  /* has been resent */
	MRT_TX_PIPE = 1 << 5,  /* counted in flight */
	MRT_TX_SPUR = 1 << 6,  /* its last resend was found spurious (counted once) */
};

/* Recent resends remembered for the duplicate-arrival test (rack.c mrt_rack_dup_echo). */
#define MRT_RTX_RECENT 32u
struct mrt_rtx_rec {
	uint32_t psn;
	uint32_t ts;   /* MRETH.ts of the copy sent before the resend */
	bool valid;
};

/* One request PSN at the requester. */
struct mrt_txe {
	uint64_t xmit_ts;  /* time of the last transmission */
	uint64_t prev_ts;  /* time of the transmission before it (reordering extent) */
	uint64_t rd_bits;  /* READ chunk: response packets received */
	uint32_t wqe;      /* SQ index (free running) */
	uint32_t off;      /* byte offset of this packet (READ: of the chunk) in the message */
	uint32_t len;      /* payload bytes (READ: bytes the chunk asks for) */
	uint16_t path;
	uint8_t flags;
	uint8_t rd_npkts;  /* READ chunk: response packets expected */
	uint32_t tprev, tnext; /* sent-order list (struct mrt_req t_head): ring slots, MRT_NIL */
};

#define MRT_NIL UINT32_MAX

struct mrt_path {
	uint64_t cool_until; /* skip this entropy before then */
	uint32_t penalty;    /* decays on clean ACKs */
	uint8_t cool_shift;  /* exponential cooldown on repeated loss */
};

struct mrt_req {
	struct mrt_txe *sb;   /* MRT_WIN ring indexed by PSN */
	uint32_t una;         /* oldest PSN not DONE */
	uint32_t nxt;         /* next new PSN */
	uint32_t cum;         /* one past the highest cumulatively acknowledged PSN */
	uint32_t hi_acked;    /* one past the highest ACKED PSN */
	uint32_t retx_hint;   /* no LOST entry below this PSN */
	uint32_t nlost;       /* entries LOST and not DONE */
	uint32_t pipe;        /* packets in flight (RFC 6675 "pipe") */
	uint64_t pipe_bytes;
	uint32_t cur, off;    /* new-data cursor: SQ index and byte offset */
	uint32_t msg_seq;     /* receive-consuming messages started (MRETH.msg_seq) */
	uint32_t rd_out;      /* READ chunks / atomics sent and not DONE */
	/* RTT (RFC 6298 estimator on echoed timestamps) */
	bool have_rtt;
	uint64_t srtt, rttvar, min_rtt;
	/* RACK (RFC 8985 6). Every SENT entry not DONE is on a list in transmission order, a
	 * resend moving it to the tail (the time-ordered list of RFC 8985 6.2 step 5's "for each
	 * packet in the reverse order of sending" in Linux tcp_rack_detect_loss): detection
	 * walks it from the oldest and stops at the first packet sent after the newest
	 * delivered one, or not yet overdue, so it costs O(packets declared lost + ties) per
	 * ACK, not a scan of the whole unacknowledged window. rack_walked counts the entries
	 * visited (tests). */
	uint32_t t_head, t_tail;
	uint64_t rack_walked;
	uint64_t rack_xmit_ts;
	uint32_t rack_psn;
	uint64_t rack_rtt;
	bool rack_valid;
	/* Responses to READ chunks are served in order (one response queue at the responder):
	 * a chunk whose request arrived can only have lost responses once a later READ/atomic
	 * completed. */
	bool rd_rack_valid;
	uint32_t rd_rack_psn;
	bool in_rto;          /* marking everything lost: no per-packet loss signals */
	/* RFC 6298 G (host scheduling granularity, rack.c) and the Eifel detection of a spurious
	 * timeout (RFC 3522 / RFC 4015): MRETH.ts at the first RTO of a series, and the congestion
	 * state before it (restored when the timeout proves spurious). */
	uint64_t gran, gran_ts;
	bool eifel_pending;
	bool eifel_hit;       /* a PSN the timeout marked lost was acknowledged before its resend */
	uint32_t eifel_ts;
	bool cc_undo_valid;
	struct mr_cc cc_undo;
	uint32_t reo_mult, reo_persist;
	uint64_t reo_last_inc, reo_last_dec;
	uint64_t reo_extent;  /* largest lateness seen on a spurious loss declaration */
	struct mrt_rtx_rec rtx_recent[MRT_RTX_RECENT];
	uint32_t rtx_head;
	uint64_t rack_deadline, tlp_deadline, rto_deadline;
	bool tlp_fire, tlp_out;
	bool rto_probe; /* a repeated RTO: resend the oldest unacknowledged PSN (rack.c) */
	uint32_t backoff;
	uint8_t retry_left, rnr_left;
	uint64_t progress_ts; /* last forward progress, or idle (mrt_arm_timers) */
	bool rnr_wait;
	uint64_t rnr_until;
	uint32_t cap_pkts;    /* in-flight cap: max_inflight and the ring */
	uint64_t bdp_rate_bps; /* CC none with link rate + RTT given: BDP cap (mrt_inflight_cap) */
	uint64_t bdp_rtt_ns;
	/* entropy */
	uint16_t n_paths, rr;
	struct mrt_path path[MR_CC_MAX_PATHS];
	uint16_t recycle[MRT_RECYCLE];
	uint32_t rc_head, rc_count;
};

/* Responder receive ring flags per PSN. */
enum {
	MRT_RX_RCVD = 1 << 0,
	MRT_RX_LAST = 1 << 1,  /* last request PSN of a message (MSN advances past it) */
	MRT_RX_RECV = 1 << 2,  /* ...of a message that consumes a receive WQE */
	MRT_RX_RQ = 1 << 3,    /* placed into (or completes) the receive WQE of rseq[] */
};

struct mrt_resp {
	uint8_t *rflags;      /* MRT_WIN ring indexed by PSN */
	uint32_t *rseq;       /* MRT_WIN ring: MRETH.msg_seq of MRT_RX_RQ packets */
	uint32_t nxt;         /* cumulative: every PSN before it received */
	uint32_t msn;
	uint32_t rq_base;     /* receive WQE index of msg_seq 0 */
	bool ack_pending;
	uint32_t unacked;
	uint64_t ack_deadline;
	uint32_t echo_ts;
	uint16_t echo_path;
	bool echo_ece;
	uint32_t ce_count;
};

struct mrt_qp {
	struct mrt_req req;
	struct mrt_resp resp;
};

static inline struct mrt_txe *mrt_sb(const struct mr_qp *qp, uint32_t psn)
{
	return &qp->mrt->req.sb[psn & (MRT_WIN - 1)];
}

static inline uint32_t mrt_psn_dist(uint32_t a, uint32_t b) /* a - b, a at or after b */
{
	return (a - b) & MR_PSN_MASK;
}

static inline uint32_t mrt_ts(uint64_t now)
{
	return (uint32_t)(now >> 8); /* MRETH.ts: 256 ns units, truncated to 32 bits */
}

/* ---- mrt_qp.c (and mrt_engine, declared in rc_internal.h) ---- */
void mrt_scatter(const struct mr_sge *sg, uint8_t *const *host, uint32_t nsge, uint32_t off,
		 const uint8_t *src, uint32_t n);

/* ---- entropy.c ---- */
void mrt_path_init(struct mr_qp *qp, uint16_t n);
uint16_t mrt_path_pick(struct mr_qp *qp, uint64_t now);
void mrt_path_good(struct mr_qp *qp, uint16_t p);
void mrt_path_ecn(struct mr_qp *qp, uint16_t p, uint64_t now);
void mrt_path_slow(struct mr_qp *qp, uint16_t p);
void mrt_path_loss(struct mr_qp *qp, uint16_t p, uint64_t now);
uint16_t mrt_udp_sport(uint16_t base, uint16_t p);

/* ---- sack_scoreboard.c ---- */
/* Mark psn ACKED (and DONE unless it is a READ chunk or an atomic). Returns true if new. */
bool mrt_sb_ack(struct mr_qp *qp, uint32_t psn, uint32_t echo_ts, uint64_t now,
		uint32_t *bytes);
void mrt_sb_done(struct mr_qp *qp, uint32_t psn, uint64_t now);
void mrt_sb_lost(struct mr_qp *qp, uint32_t psn, uint64_t now);
/* Undo a loss declaration not acted on yet: psn is in flight again. Returns true if it was LOST. */
bool mrt_sb_unlost(struct mr_qp *qp, uint32_t psn);
void mrt_sb_pipe_out(struct mr_qp *qp, struct mrt_txe *e);
/* e was (re)transmitted at a time no earlier than any entry's on the list: (re)link it at the
 * tail. */
void mrt_sb_sent_order(struct mr_qp *qp, struct mrt_txe *e);
bool mrt_sb_in_flight(const struct mr_qp *qp, uint32_t psn); /* una <= psn < nxt */
bool mrt_txe_is_rd_atomic(const struct mr_qp *qp, const struct mrt_txe *e);
/* Responder side: SACK bitmap from the first hole. */
void mrt_rx_sack(const struct mr_qp *qp, uint8_t bitmap[16]);

/* ---- rack.c ---- */
void mrt_rtt_sample(struct mr_qp *qp, uint64_t rtt, uint64_t now);
/* Eifel (RFC 3522 / 4015) on an ACK of new data echoing echo_ts, with that ACK's RTT sample.
 * Returns true if it proved the last timeout spurious (the response is applied). */
bool mrt_rto_eifel(struct mr_qp *qp, uint32_t echo_ts, uint64_t rtt, uint64_t now);
void mrt_rack_update(struct mr_qp *qp, const struct mrt_txe *e, uint32_t psn, uint64_t now);
void mrt_rack_detect(struct mr_qp *qp, uint64_t now);
void mrt_rack_spurious(struct mr_qp *qp, uint64_t now, uint64_t sent_ts);
void mrt_rack_resent(struct mr_qp *qp, uint32_t psn, uint64_t prev_ts);
void mrt_rack_dup_echo(struct mr_qp *qp, uint32_t echo_ts, uint64_t now);
uint64_t mrt_reo_wnd(const struct mr_qp *qp);
uint64_t mrt_rto(const struct mr_qp *qp);
void mrt_arm_timers(struct mr_qp *qp, uint64_t now, bool progress);
void mrt_rack_on_timer(struct mr_qp *qp, uint64_t now);

/* ---- mrt_requester.c ---- */
uint32_t mrt_inflight_cap(const struct mr_qp *qp);
int mrt_req_tx(struct mr_qp *qp, uint64_t now, struct mr_tx_pkt *out);
void mrt_req_rx(struct mr_qp *qp, const struct mr_pkt *pkt, uint64_t now);
void mrt_req_progress(struct mr_qp *qp, uint64_t now);

/* ---- mrt_responder.c ---- */
void mrt_resp_rx(struct mr_qp *qp, const struct mr_pkt *pkt, uint64_t now);
int mrt_resp_tx(struct mr_qp *qp, uint64_t now, struct mr_tx_pkt *out);
void mrt_resp_on_timer(struct mr_qp *qp, uint64_t now);

/* ---- congestion control glue (mrt_qp.c) ---- */
void mrt_cc_ack(struct mr_qp *qp, const struct mr_cc_ack *ack);
void mrt_cc_loss(struct mr_qp *qp, uint64_t now, uint32_t bytes, uint16_t path);
void mrt_cc_timeout(struct mr_qp *qp, uint64_t now);
/* RFC 4015 3.2: restore the congestion state saved at the first timeout of a series. */
void mrt_cc_undo_timeout(struct mr_qp *qp);
uint32_t mrt_cc_path_penalty(const struct mr_qp *qp, uint16_t p);
/* After a send: will the controller hold the next packet back for at least gap_ns (window
 * full with inflight_bytes, or pacing)? */
bool mrt_cc_blocked_after(const struct mr_qp *qp, uint64_t now, uint64_t inflight_bytes,
			  uint64_t gap_ns);

#endif
