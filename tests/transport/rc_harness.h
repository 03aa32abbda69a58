/* SPDX-License-Identifier: MIT
 * A tiny in-test "wire" for the RC transport unit tests: two contexts, one QP each, and a
 * pump that moves struct mr_tx_pkt from one side's mr_ctx_tx() to the other's mr_ctx_rx()
 * as struct mr_pkt (payload gathered from the iovs, no frame building), with a virtual clock
 * and per-packet fault injection by index.
 */
#ifndef MR_TESTS_RC_HARNESS_H
#define MR_TESTS_RC_HARNESS_H

#include <stdbool.h>
#include <stdint.h>

#include "transport/rc.h"

#define TW_MAX_LOG 8192
#define TW_MAX_HELD 64
#define TW_MAX_SHUF 64

enum tw_action { TW_PASS = 0, TW_DROP, TW_DUP, TW_HOLD /* deliver after the next packet */,
		 TW_CORRUPT /* as a real frame with one payload bit flipped (frames mode) */ };

struct tw_side {
	struct mr_ctx *ctx;
	struct mr_pd *pd;
	struct mr_cq *scq, *rcq;
	struct mr_qp *qp;
	struct mr_srq *srq; /* side B with tw_cfg.srq_depth */
};

struct tw_held {
	struct mr_roce_hdrs hdr;
	uint32_t paylen;
	uint8_t payload[4096];
};

struct tw {
	struct tw_side s[2];         /* 0 = A, 1 = B */
	uint64_t now;
	uint32_t sent[2];            /* packets produced per direction (0: A->B) */
	enum tw_action act[2][TW_MAX_LOG]; /* by packet index per direction */
	bool drop_all[2];
	struct mr_roce_hdrs log[2][TW_MAX_LOG]; /* headers as produced */
	uint32_t log_paylen[2][TW_MAX_LOG];
	struct tw_held held[2];
	bool have_held[2];
	/* MetaRoCE extensions */
	uint64_t log_ts[2][TW_MAX_LOG];   /* virtual time each packet was produced */
	uint16_t log_sport[2][TW_MAX_LOG]; /* mr_tx_pkt.udp_sport */
	uint32_t shuffle[2];          /* >1: deliver packets in random permutations of this many */
	struct tw_held shuf[2][TW_MAX_SHUF];
	uint32_t nshuf[2];
	uint64_t rng;
	uint64_t drop_path[2][4];     /* bitmap of MRETH.path values dropped (black-holed) */
	uint32_t ce_every[2];         /* CE-mark every n-th passing packet (tclass ECN = 3) */
	uint32_t delivered[2];
	/* Frames mode, per direction: each packet is built into a real RoCE v2 frame
	 * (mr_frame_build, IPv6 with zero GIDs: the QPs' paths) and parsed back with
	 * mr_frame_parse_deferred before mr_ctx_rx, as metaroced's engine does. */
	bool frames[2];
	uint32_t icrc_bad[2];        /* per receiving side: frames dropped for their ICRC */
	uint32_t icrc_deferred[2];   /* per receiving side: frames handed over with it pending */
};

struct tw_cfg {
	uint32_t mtu;
	uint32_t psn[2];             /* initial SQ PSN of each side */
	uint32_t access;             /* qp_access_flags on both sides */
	uint8_t max_rd_atomic;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint32_t max_send_wr, max_recv_wr, max_inline;
	bool sq_sig_all;
	uint32_t max_inflight;
	/* MR_QP_TRANSPORT at INIT->RTR when transport or cc is set */
	enum mr_transport transport;
	uint16_t n_entropies;
	enum mr_cc_algo cc;
	struct mr_cc_params cc_params;
	uint16_t udp_sport;
	uint32_t srq_depth;          /* > 0: side B's QP takes its receives from an SRQ */
};

void tw_default_cfg(struct tw_cfg *c);
/* Two contexts, PDs, CQs and QPs, connected and moved to RTS. Asserts on failure. */
struct tw *tw_create(const struct tw_cfg *c);
void tw_destroy(struct tw *w);
/* Move packets both ways until nothing is left to send; with timers, also advance the clock
 * to the next expiry until quiescent (or max_ns of virtual time passed). Returns packets
 * moved. */
uint32_t tw_pump(struct tw *w, bool timers, uint64_t max_ns);
/* Move one packet from side `from` to the other, the clock standing still; false if that side
 * had nothing to send. */
bool tw_step(struct tw *w, int from);
/* Hand one crafted packet to side `to`. */
void tw_inject(struct tw *w, int to, const struct mr_roce_hdrs *hdr, const void *payload,
	       uint32_t paylen);
/* Count logged packets of direction dir with this opcode. */
uint32_t tw_count_op(const struct tw *w, int dir, uint8_t opcode);
/* Count ACK-opcode packets (RC or MetaRoCE) of direction dir with this AETH syndrome. */
uint32_t tw_count_syndrome(const struct tw *w, int dir, uint8_t syndrome);

struct mr_memreg *tw_reg(struct tw *w, int side, void *buf, uint64_t len, uint32_t access);
void tw_post_send(struct tw *w, int side, const struct mr_send_wr *wr);
void tw_post_recv(struct tw *w, int side, uint64_t wr_id, void *buf, uint32_t len,
		  const struct mr_memreg *mr);
/* Poll exactly n completions from a CQ (asserts the count). */
void tw_poll(struct mr_cq *cq, int n, struct mr_wc *wc);
struct mr_qp_stats tw_stats(const struct tw *w, int side);
/* MetaRoCE defaults: tw_default_cfg + transport METAROCE with n entropies. */
void tw_metaroce_cfg(struct tw_cfg *c, uint16_t n);
/* Count logged packets of direction dir whose MRETH.path is p. */
uint32_t tw_count_path(const struct tw *w, int dir, uint16_t p);
/* Count logged packets of direction dir with MRETH flag bits f set. */
uint32_t tw_count_mflag(const struct tw *w, int dir, uint8_t f);

/* Test data: byte i of a buffer filled with seed. */
void tw_fill(uint8_t *p, size_t n, uint32_t seed);
/* A signaled one-SGE work request of op over [p, p+len) registered as mr. */
struct mr_send_wr tw_wr(uint64_t id, enum mr_wr_opcode op, const void *p, uint32_t len,
			const struct mr_memreg *mr);

#endif
