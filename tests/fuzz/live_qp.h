/* SPDX-License-Identifier: MIT
 * A live victim for the transport fuzz targets and the hostile-peer suite: two transport
 * contexts, A (the legitimate peer) and B (the victim), one connected QP each, in RTS, with
 * B's memory laid out in one arena where every region is fenced by guard bytes.
 *
 * After live_create() B has: receives posted, a multi-packet WRITE from A open (first packet
 * placed, the rest held), READ responses queued for A, and its own SEND/WRITE/READ/atomic
 * outstanding (A has their responses queued in the held A->B list). Hostile packets are
 * injected into B as frames (built and parsed with ICRC, so they are exactly what the wire
 * can deliver); every check is a plain function returning a reason, so the libFuzzer targets
 * abort on it and the cmocka suite asserts on it.
 *
 * No cmocka here: this file is linked into fuzzers and into the gcc replay drivers.
 */
#ifndef MR_TESTS_LIVE_QP_H
#define MR_TESTS_LIVE_QP_H

#include <stdbool.h>
#include <stdint.h>

#include "transport/mrt_internal.h"

#define LIVE_GUARD 64          /* guard bytes around every region */
#define LIVE_GUARD_BYTE 0xa5
#define LIVE_HELD 64           /* held packets per direction */
#define LIVE_MAX_WR 512        /* WRs B may post in one run (wr_id bookkeeping) */
#define LIVE_RECV_BUF 2048
#define LIVE_NRECV 4

/* B's regions. RW: remote write/read/atomic; RO: remote read only; RECV: receive buffers
 * (local write); SRC: B's outgoing data (no write access at all); SINK: B's READ and atomic
 * results (local write); STALE: registered and deregistered at setup (its key is stale). */
enum live_region { LR_RW, LR_RO, LR_RECV, LR_SRC, LR_SINK, LR_STALE, LR_NUM };

struct live_pkt {
	struct mr_roce_hdrs hdr;
	uint32_t paylen;
	uint8_t payload[4096];
};

struct live_side {
	struct mr_ctx *ctx;
	struct mr_pd *pd;
	struct mr_cq *scq, *rcq;
	struct mr_qp *qp;
};

struct live_cfg {
	enum mr_transport transport;
	uint32_t mtu;              /* 256..4096 */
	uint8_t max_rd_atomic;     /* both directions */
	uint16_t n_entropies;      /* MetaRoCE */
	bool no_setup_traffic;     /* skip the open WRITE / queued READ / outstanding sends */
};

struct live {
	struct live_cfg cfg;
	struct live_side a, b;
	uint64_t now;
	uint8_t *arena;
	uint32_t arena_len;
	uint32_t reg_off[LR_NUM], reg_len[LR_NUM];
	uint8_t *ro_snap, *src_snap;   /* RO and SRC contents must never change */
	struct mr_memreg *mr[LR_NUM];
	uint32_t key[LR_NUM];
	uint8_t *a_buf;                /* A's memory: 64 KiB, all access */
	struct mr_memreg *a_mr;
	struct mr_path path_ab, path_ba; /* A->B and B->A addressing */
	/* wr_id bookkeeping for B: ids are LIVE_WRID_BASE + index */
	uint32_t nposted;
	uint8_t completed[LIVE_MAX_WR];
	uint32_t recv_len[LIVE_MAX_WR];  /* posted receive length (0 for sends) */
	bool is_recv[LIVE_MAX_WR];
	uint8_t recv_buf[LIVE_MAX_WR];   /* receive buffer index */
	int32_t last_recv_ok;            /* index of the last successful RECV completion, or -1 */
	uint32_t nrecv_posted;
	/* packets moved but not delivered yet */
	struct live_pkt held_ab[LIVE_HELD];
	uint32_t nheld_ab;
	uint64_t tx_checked;           /* B packets checked by live_b_tx */
	const char *why;               /* first invariant violated, or NULL */
};

#define LIVE_WRID_BASE 0x5eed0000ull

/* NULL on failure (resource exhaustion in setup). */
struct live *live_create(const struct live_cfg *cfg);
void live_destroy(struct live *l);

/* Address of byte off of region r (host == iova in this harness). */
uint8_t *live_addr(const struct live *l, enum live_region r, uint32_t off);

/* Build a frame from A's path and hdr (payload paylen bytes), parse it with the ICRC check and
 * hand it to B. Returns the parse result, or -1 when the builder refused the header (nothing
 * a wire could carry); -2 when the builder accepted a frame the parser rejects (a wire bug:
 * also recorded in l->why). */
int live_inject(struct live *l, const struct mr_roce_hdrs *hdr, const void *payload,
		uint32_t paylen);
/* As live_inject, from an arbitrary path (spoofed source, CE-marked tclass...). */
int live_inject_on(struct live *l, const struct mr_path *path, const struct mr_roce_hdrs *hdr,
		   const void *payload, uint32_t paylen);
/* Parse raw frame bytes (ICRC checked only when check_icrc) and hand the result to B when it
 * parses; returns the parse result. */
int live_inject_frame(struct live *l, const uint8_t *frame, uint32_t len, bool check_icrc);
/* Hand an already parsed packet to B. */
void live_rx_b(struct live *l, const struct mr_pkt *pkt);

/* Take up to max packets from B (0: until empty, bounded); each is checked (payload inside
 * a readable region, buildable); deliver them to A when to_a; A's output then goes to held.
 * Returns packets taken. out (optional) receives copies of the first nout packets. */
uint32_t live_b_tx(struct live *l, uint32_t max, bool to_a, struct live_pkt *out, uint32_t nout);
/* Deliver held A->B packet i (mod count) to B; dup: twice; drop: remove without delivery. */
void live_held_deliver(struct live *l, uint32_t i, bool dup, bool drop);
/* Pull A's output into the held list. */
void live_a_tx(struct live *l);
/* Advance the clock by ns and run both sides' timers. */
void live_advance(struct live *l, uint64_t ns);

/* B's application: post a receive on buffer i (of LIVE_NRECV); post a send WR of op
 * (SRC/SINK addressed, to A's buffer), length len. 0 or negative errno. */
int live_post_recv(struct live *l, uint32_t i, uint32_t len);
int live_post_send(struct live *l, enum mr_wr_opcode op, uint32_t len, uint32_t remote_off);
/* Poll B's CQs, checking every completion against the posted WRs. Returns the number. */
int live_poll_b(struct live *l, struct mr_wc *last);

/* Cheap per-step checks: queue indices, then memory (guards, RO/SRC unchanged). Return NULL
 * or a description of the first violation (also kept in l->why). */
const char *live_check_queues(struct live *l);
const char *live_check_memory(struct live *l);
/* Let everything settle: B's output drained, timers run until quiescent (bounded), then
 * B's QP to ERR and every WR completed exactly once. Returns NULL or the violation. */
const char *live_finish(struct live *l);

/* Deliver every held packet and move traffic both ways (with timers) until quiet. */
void live_settle(struct live *l);

/* Legitimate transfer A->B after hostile traffic: A writes len bytes into B's RW region at
 * off and then SENDs them into a fresh receive; checks the bytes. NULL or the failure. */
const char *live_legit_transfer(struct live *l, uint32_t off, uint32_t len);

/* B's responder's expected PSN and requester's next/oldest PSN (RC or MetaRoCE). */
uint32_t live_b_epsn(const struct live *l);
uint32_t live_b_req_next(const struct live *l);
uint32_t live_b_req_oldest(const struct live *l);

#endif
