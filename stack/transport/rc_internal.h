/* SPDX-License-Identifier: MIT
 * Private state of the transport: shared by stack/transport's .c files only, never installed.
 *
 * Layout follows Linux rxe's split: ctx (QPN table, scheduling, timers), mr (PD/MR/keys),
 * cq, qp (state machine, flush), requester (SQ -> request packets), completer (ACKs and
 * responses -> send completions) and responder (requests -> placement, responses, receive
 * completions).
 *
 * Layering: a core shared by every QP (rc_qp.c, rc_ctx.c, rc_cq.c, rc_mr.c, rc_srq.c, qp_cc.c:
 * verbs state machine, queues, keys, packet checks and dispatch, scheduling, the timer heap,
 * congestion-control glue) drives one of two transport engines through struct rc_engine_ops
 * (qp->eng), as ngtcp2 and picoquic drive their congestion controllers: rc_engine, plain RC
 * (rc_requester.c, rc_responder.c, rc_completer.c; table in rc_engine.c), or mrt_engine,
 * MetaRoCE (mrt_qp.c, mrt_requester.c, mrt_responder.c, rack.c, sack_scoreboard.c, entropy.c;
 * private state behind qp->mrt, declared in mrt_internal.h, which the core never includes).
 * The core calls an engine only through its table; engines call down into the core (scheduling,
 * timers, completions, CC) and MetaRoCE also reuses RC helpers (WQE resolve and gather,
 * opcodes, receive binding, the response ring). The RC engine's state is struct mr_qp's
 * req/comp/resp blocks, which the core itself resets on RESET, INIT->RTR, RTR->RTS and ERR.
 */
#ifndef MR_TRANSPORT_RC_INTERNAL_H
#define MR_TRANSPORT_RC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rc.h"

/* Deepest READ/atomic pipelines a QP may negotiate (max_rd_atomic, max_dest_rd_atomic). */
#define RC_MAX_RD_ATOMIC 16
/* Response queue: each READ/atomic response may be preceded by one coalesced ACK, plus NAKs. */
#define RC_RESP_RING (2 * RC_MAX_RD_ATOMIC + 8)
/* The responder ACKs at least every this many request packets even without AckReq. */
#define RC_ACK_EVERY 16
#define RC_TX_QUANTUM 16   /* request packets one QP sends per turn (rc_ctx.c rc_serve) */
/* A request run that ends without AckReq (its last packet lost) is ACKed this long after its
 * last packet, so a tail loss costs one packet after the ACK timeout instead of the whole
 * unacknowledged run. Half the smallest local ACK timeout (8.192 us, timeout = 1), and above a
 * software sender's gap between bursts (2 us at 3 Mpps on memif: at 2 us the timer fired
 * inside steady streams, one ACK per 6 packets instead of per RC_ACK_EVERY). */
#define RC_DELAYED_ACK_NS 4000u
/* 100 Gb/s x 10 us = 125 kB BDP: 8192 packets cover it even at a 256-byte MTU. */
#define RC_DEFAULT_INFLIGHT 8192u
/* IBA 9.7.1: never more than 2^23 unacknowledged PSNs (half the 24-bit space). */
#define RC_MAX_INFLIGHT ((1u << 23) - 1)
#define RC_MAX_WR 16384u
#define RC_MAX_INLINE 4096u
#define RC_MAX_MSG (1u << 31) /* IBA 9.7.2: messages are at most 2^31 bytes */

/* Intrusive doubly linked list (circular with a head node). */
struct rc_link {
	struct rc_link *prev, *next;
};

static inline void rc_list_init(struct rc_link *h) { h->prev = h->next = h; }
static inline bool rc_list_empty(const struct rc_link *h) { return h->next == h; }
static inline bool rc_linked(const struct rc_link *l) { return l->next != NULL; }
static inline void rc_list_add_tail(struct rc_link *h, struct rc_link *l)
{
	l->prev = h->prev;
	l->next = h;
	h->prev->next = l;
	h->prev = l;
}
static inline void rc_list_add_head(struct rc_link *h, struct rc_link *l)
{
	l->prev = h;
	l->next = h->next;
	h->next->prev = l;
	h->next = l;
}
static inline void rc_list_del(struct rc_link *l)
{
	if (!rc_linked(l))
		return;
	l->prev->next = l->next;
	l->next->prev = l->prev;
	l->prev = l->next = NULL;
}

/* Through uintptr_t so that one macro serves const and non-const links (-Wcast-qual). */
#define rc_container_of(p, type, member) \
	((type *)(uintptr_t)((const char *)(p) - offsetof(type, member)))

struct mr_qp;

/* Timers of a ctx (rc_ctx.c): a binary min-heap of the armed QPs keyed by their earliest
 * deadline (rc_qp_next_expiry), so that the next expiry is the root and a timer run visits
 * only the QPs that are due. A key is a cache: every path that may move a deadline marks its
 * QP dirty (rc_timer_update, and every entry point into the ctx does so for the QP it serves),
 * and dirty QPs are re-keyed before the heap is read. A key that is too early only costs a
 * visit with nothing due; one that is too late would lose a timer, hence the marking. */
struct rc_tm_ent {
	uint64_t key;
	struct mr_qp *qp;
};

struct rc_timers {
	uint32_t n;            /* armed QPs: h[1..n] */
	struct rc_link dirty;  /* QPs to re-key before the heap is read */
	struct rc_tm_ent h[];  /* 1-based heap: the children of h[i] are h[2i] and h[2i+1] */
};

/* An ACK owed by a QP destroyed before it was sent (rc_qp.c rc_qp_parting_ack): the QP is gone,
 * so the header's fields and the path are kept here until mr_ctx_tx hands the ACK out. */
#define RC_PARTING_MAX 32
struct rc_parting {
	struct mr_path path;
	uint32_t dqpn, psn, msn;
};

struct mr_ctx {
	struct mr_ctx_params p;
	uint32_t max_inflight;
	uint64_t rng;
	struct mr_qp **qp_tab;      /* index = qpn - first_qpn */
	uint32_t qp_next;           /* next-fit start of the QPN search (rc_qp.c) */
	struct mr_memreg **mr_tab;  /* index = key >> 8 */
	uint8_t *mr_tag;            /* next tag (key & 0xff) per slot: stale keys never match */
	struct rc_link resp_sched;  /* QPs with responses/ACKs queued */
	struct rc_link req_sched;   /* QPs that may have request packets to send */
	uint32_t req_streak;        /* packets the head of req_sched sent in a row (rc_serve) */
	struct rc_timers *tm;       /* armed QPs (allocated: mutable behind a const ctx) */
	struct rc_link pds, cqs, srqs;
	struct mr_ctx_stats stats;
	struct rc_parting parting[RC_PARTING_MAX]; /* FIFO: [parting_head, + parting_n) */
	uint32_t parting_head, parting_n;
	struct mr_path parting_path; /* the path of the parting ACK mr_ctx_tx handed out last */
};

struct mr_pd {
	struct mr_ctx *ctx;
	struct rc_link link;
	uint32_t refs; /* MRs + QPs */
};

struct mr_memreg {
	struct mr_ctx *ctx;
	struct mr_pd *pd;
	uint8_t *host;
	uint64_t iova;
	uint64_t len;
	uint32_t access;
	uint32_t key; /* lkey == rkey, as rxe */
};

struct mr_srq {
	struct mr_pd *pd;
	struct rc_link link;
	uint32_t refs;             /* QPs attached */
	uint32_t max_wr, head, tail; /* [head, tail) posted, free running */
	struct mr_recv_wr *wr;
};

struct mr_cq {
	struct mr_ctx *ctx;
	struct rc_link link;
	uint32_t refs;
	uint32_t depth, head, count;
	uint64_t overflows;
	struct mr_wc *wc;
};

/* A send WQE and the requester/completer bookkeeping for it. */
struct rc_swqe {
	struct mr_send_wr wr;
	uint8_t *host[MR_MAX_SGE];  /* resolved SGE addresses (when the WQE is first started) */
	uint8_t *inline_buf;        /* max_inline_data bytes, preallocated */
	uint32_t len;               /* message length */
	uint32_t npkts;             /* PSNs the message occupies */
	uint32_t first_psn, last_psn;
	bool psn_valid;             /* PSNs assigned (first packet sent once) */
	bool resolved;
	uint32_t msg_seq;           /* MetaRoCE: MRETH.msg_seq of this message */
	enum mr_wc_status status;   /* status if this WQE is the one that failed */
};

struct rc_rwqe {
	struct mr_recv_wr wr;
	uint8_t *host[MR_MAX_SGE]; /* resolved when a SEND first lands in it */
	uint32_t len;
	/* MetaRoCE: several receives may be filling at once (per-packet placement); the
	 * completion is built from these when the cumulative PSN passes the message's end. */
	bool m_bound;
	/* MetaRoCE: the message that consumes this receive (mrt_responder.c mrt_claim): set by
	 * its first packet to arrive; every later packet naming this receive must agree. */
	bool m_claimed;
	uint32_t m_last_psn;
	uint8_t m_op;        /* enum mr_wc_opcode */
	uint32_t m_flags, m_len, m_imm, m_inv;
};

enum rc_resp_kind { RC_RESP_ACK, RC_RESP_READ, RC_RESP_ATOMIC };

struct rc_resp {
	uint8_t kind;
	uint8_t syndrome;
	uint32_t psn;        /* next PSN to send for READ; the PSN for ACK/atomic */
	uint32_t msn;
	uint32_t first_psn;  /* READ: PSN of this response stream's first packet */
	uint32_t last_psn;   /* READ: PSN of its last packet */
	const uint8_t *host; /* READ: next byte */
	uint32_t left;       /* READ: bytes left */
	uint32_t rkey;       /* READ: the R_Key host came from (mr_dereg revokes by key) */
	uint64_t orig;       /* atomic: original value */
	uint32_t msg_seq, off, msg_len; /* MetaRoCE READ responses: MRETH fields */
	uint16_t path;       /* MetaRoCE READ: the request's entropy, where spraying starts */
	bool dup;            /* MetaRoCE: queued for a duplicate request (counted in rd_dups) */
};

/* Responder resources for duplicate READ/atomic requests (IBA 9.4.5, 9.7.5.1): a duplicate
 * atomic must be answered from the saved result, never executed twice. */
struct rc_rd_res {
	bool atomic;
	bool valid;
	uint32_t psn;
	uint64_t orig;
};

enum rc_msg { RC_MSG_NONE, RC_MSG_SEND, RC_MSG_WRITE };

struct mrt_qp;

struct mr_qp {
	struct mr_ctx *ctx;
	const struct rc_engine_ops *eng; /* rc_engine, or mrt_engine once MetaRoCE is negotiated */
	struct mrt_qp *mrt;  /* mrt_engine's private state (mrt_*.c), NULL under rc_engine */
	/* Congestion control (stack/cc): DCQCN also for plain RC (reaction point paced here,
	 * notification point in the responder). */
	bool cc_on;
	bool cnp_pending;
	bool paced;          /* requester waits for cc.next_send_ns */
	struct mr_cc cc;
	struct mr_dcqcn_np np;
	uint32_t qpn;
	struct mr_qp_init_attr init;
	struct mr_qp_attr attr;
	enum mr_qp_state state;
	bool cq_overrun;     /* a completion of this QP found its CQ full (rc_cq.c) */
	struct mr_qp_stats stats;

	struct rc_link resp_link, req_link;
	/* Timers (rc_ctx.c): position in ctx->tm->h (0: not armed, the key is h[tm_pos].key),
	 * and the link on ctx->tm->dirty (or on a timer run's list of due QPs). */
	uint32_t tm_pos;
	struct rc_link tm_link;

	/* Send queue: [sq_head, sq_tail) posted and not completed; free-running indices. */
	struct rc_swqe *sq;
	uint8_t *inline_area;
	uint32_t sq_head, sq_tail;

	/* Requester (IBA 9.7.4, 9.7.6). */
	struct {
		uint32_t cur;       /* SQ index being sent */
		uint32_t off;       /* byte offset within it */
		uint32_t psn;       /* next PSN to send */
		uint32_t psn_max;   /* one past the highest PSN ever sent */
		uint32_t rd_atomic; /* READ/atomic requests issued in [sq_head, cur) */
		uint32_t noack;     /* packets sent since the last AckReq */
		bool rnr_wait;
		uint64_t rnr_until;
	} req;

	/* Completer (IBA 9.7.5.1, 9.7.6). */
	struct {
		uint32_t psn;         /* oldest unacknowledged PSN */
		uint8_t retry_left;
		uint8_t rnr_left;
		bool implied_retried; /* go-back-N already started for this comp.psn */
		uint64_t ack_deadline;
	} comp;

	/* Receive queue. */
	struct rc_rwqe *rq;
	uint32_t rq_head, rq_tail;

	/* Responder (IBA 9.7.5, 9.7.5.1.1). */
	struct {
		uint32_t epsn;
		uint32_t msn;
		bool nak_sent;          /* one PSN sequence NAK per sequence error */
		enum rc_msg in_msg;     /* multi-packet message in progress */
		bool rwqe_bound;        /* SEND in progress owns rq[rq_head] */
		uint32_t recv_off;
		uint8_t *wptr;          /* WRITE in progress; NULL with wleft > 0: MR revoked */
		uint32_t wleft, wlen;
		uint32_t wkey;          /* R_Key of the WRITE in progress (mr_dereg revokes) */
		uint32_t since_ack;
		uint64_t ack_deadline;  /* delayed-ACK flush, UINT64_MAX when idle */
		uint32_t rd_pending;    /* READ/atomic responses queued */
		uint32_t rd_dups;       /* MetaRoCE: of those, queued for duplicate requests */
		struct rc_resp ring[RC_RESP_RING];
		uint32_t ring_head, ring_count;
		struct rc_rd_res res[RC_MAX_RD_ATOMIC];
		uint32_t res_next;
	} resp;

	/* attr.path's L2..UDP headers prebuilt (mr_hdr_tmpl_init at every path change), handed
	 * to the builder with each packet (mr_tx_pkt.tmpl). Last, so that the fields above keep
	 * the cache lines they had. */
	struct mr_hdr_tmpl tmpl;
};

/* What the core (rc_qp.c, rc_ctx.c) asks of a QP's transport engine (qp->eng). Every entry is
 * set; around each call the core does the header checks, statistics, CNPs, CC timers and the
 * re-keying of the QP's timers. */
struct rc_engine_ops {
	/* INIT->RTR with this engine (a: the resolved MR_QP_TRANSPORT attributes). On failure
	 * the core switches the QP back to rc_engine (calling this engine's free). */
	int (*setup)(struct mr_qp *qp, const struct mr_qp_attr *a);
	void (*start)(struct mr_qp *qp);  /* RTR->RTS, after the core set the SQ PSNs */
	void (*on_err)(struct mr_qp *qp); /* entry to ERR, after the core flushed SQ and RQ */
	/* Release the engine's private state (engine change, RESET, failed setup, destroy);
	 * harmless when there is none. */
	void (*free)(struct mr_qp *qp);
	/* Earliest of the engine's deadlines, UINT64_MAX if none (pacing and CC: qp_cc.c). */
	uint64_t (*next_expiry)(const struct mr_qp *qp);
	void (*on_timer)(struct mr_qp *qp, uint64_t now); /* run what is due at now */
	/* Send now the delayed ACK owed until `until` (mr_ctx_ack_early); NULL: none early. */
	void (*ack_early)(struct mr_qp *qp, uint64_t until);
	/* A request (the QP as responder), or a response, ACK or NAK (the QP as requester). */
	void (*rx_req)(struct mr_qp *qp, const struct mr_pkt *pkt, uint64_t now);
	void (*rx_resp)(struct mr_qp *qp, const struct mr_pkt *pkt, uint64_t now);
	/* Build the next response/ACK, or the next request packet, into out: > 0 when one was
	 * built, 0 when there is nothing to send now. */
	int (*tx_resp)(struct mr_qp *qp, uint64_t now, struct mr_tx_pkt *out);
	int (*tx_req)(struct mr_qp *qp, uint64_t now, struct mr_tx_pkt *out);
};

extern const struct rc_engine_ops rc_engine;  /* rc_engine.c */
extern const struct rc_engine_ops mrt_engine; /* mrt_qp.c */

/* ---- rc_ctx.c ---- */
void rc_sched_req(struct mr_qp *qp);
void rc_sched_resp(struct mr_qp *qp);
/* A zeroed entry at the tail of the responder's output ring (RC and MetaRoCE), or NULL when
 * the ring is full (counted as dropped). */
struct rc_resp *rc_resp_push(struct mr_qp *qp);
/* qp's timers may have changed: it is re-keyed (armed, moved or disarmed) before the ctx's
 * timers are next read. O(1); call it after writing any deadline rc_qp_next_expiry reads. */
void rc_timer_update(struct mr_qp *qp);
/* Take qp off the timer heap and the dirty list (destroy, reset). */
void rc_timer_remove(struct mr_qp *qp);
/* Check the timer heap of ctx against a recomputation of every QP's expiry, after re-keying
 * the dirty QPs: heap order and positions, every armed QP in the heap with a key no later than
 * its real expiry (a later one loses a timer). strict also counts keys that are merely early
 * (a path that moved a deadline later without rc_timer_update: harmless) and disarmed QPs
 * left in the heap. Returns the number of violations. O(max_qp): tests and audit builds. */
unsigned int rc_timer_audit(const struct mr_ctx *ctx, bool strict);

/* ---- rc_mr.c ---- */
/* Resolve key to an MR of pd covering [va, va+len) with all access bits; NULL if not. */
struct mr_memreg *rc_mr_lookup(struct mr_ctx *ctx, const struct mr_pd *pd, uint32_t key,
			       uint64_t va, uint64_t len, uint32_t access);
void rc_mr_destroy_all(struct mr_ctx *ctx);

/* ---- rc_srq.c ---- */
/* True when receive index idx of qp is posted, taking WQEs from its SRQ as needed. */
bool rc_rq_ready(struct mr_qp *qp, uint32_t idx);
uint32_t rc_srq_qp_ring(const struct mr_srq *s);
void rc_srq_destroy_all(struct mr_ctx *ctx);

/* ---- rc_cq.c ---- */
void rc_cq_push(struct mr_qp *qp, struct mr_cq *cq, const struct mr_wc *wc);

/* ---- rc_qp.c ---- */
static inline struct rc_swqe *rc_sq_at(const struct mr_qp *qp, uint32_t idx)
{
	return &qp->sq[idx % qp->init.max_send_wr];
}
/* An mr_tx_pkt made ready for one packet: headers zeroed, no payload. The iov array (33 entries)
 * is left alone, niov says how much of it counts: the memset of the whole struct compiled to
 * rep stos, 3 % of a sender's cycles. */
static inline void rc_tx_reset(struct mr_tx_pkt *out)
{
	mr_zero_fixed(&out->hdr, sizeof(out->hdr)); /* not memset: rep stos (roce_pkt.h) */
	out->path = NULL;
	out->niov = 0;
	out->paylen = 0;
	out->udp_sport = 0;
}

/* A response's headers as far as every response shares them (IBA 9.7.5.1: BTH to the peer's QP,
 * default P_Key, AETH with the MSN; an ACK unless the caller changes opcode and syndrome). */
static inline void rc_resp_hdr(struct mr_tx_pkt *out, const struct mr_path *path, uint32_t dqpn,
			       uint32_t psn, uint32_t msn)
{
	rc_tx_reset(out);
	out->path = path;
	out->hdr.opcode = MR_OP_RC_ACK;
	out->hdr.pkey = 0xffff;
	out->hdr.dqpn = dqpn;
	out->hdr.psn = psn;
	out->hdr.aeth.msn = msn;
	out->hdr.aeth.syndrome = MR_AETH_ACK | MR_AETH_CREDIT_INVALID;
}

/* A posted WR into its SQ slot: the fixed fields and the num_sge SGEs in use, not all 336 bytes
 * (the struct assignment compiled to rep movsq, 5 % of a sender's cycles at 4 M WRs/s). */
static inline void rc_send_wr_copy(struct mr_send_wr *d, const struct mr_send_wr *s)
{
	uint32_t n = s->num_sge < MR_MAX_SGE ? s->num_sge : MR_MAX_SGE;

	memcpy(d, s, offsetof(struct mr_send_wr, sg_list));
	for (uint32_t i = 0; i < n; i++)
		d->sg_list[i] = s->sg_list[i];
	memcpy(&d->imm_data, &s->imm_data,
	       sizeof(*d) - offsetof(struct mr_send_wr, imm_data));
}

static inline struct rc_rwqe *rc_rq_at(const struct mr_qp *qp, uint32_t idx)
{
	return &qp->rq[idx % qp->init.max_recv_wr];
}
/* Move to ERR (IBA 10.3.1): flush SQ and RQ with MR_WC_WR_FLUSH_ERR, the SQ head WQE carries
 * its own status if it was the one that failed. */
void rc_qp_to_err(struct mr_qp *qp);
void rc_qp_free(struct mr_qp *qp);
uint32_t rc_mtu(const struct mr_qp *qp);
static inline uint32_t rc_npkts(uint32_t len, uint32_t mtu)
{
	return len == 0 ? 1 : (uint32_t)(((uint64_t)len + mtu - 1) / mtu);
}
bool rc_wr_is_rd_atomic(enum mr_wr_opcode op);

/* ---- rc_requester.c ---- */
int rc_req_resolve(struct mr_qp *qp, struct rc_swqe *w);
unsigned int rc_req_gather(const struct rc_swqe *w, uint32_t off, uint32_t n, struct mr_iov *iov);
uint8_t rc_req_opcode(enum mr_wr_opcode op, bool first, bool last);
int rc_rwqe_bind(struct mr_qp *qp, struct rc_rwqe *r);
int rc_req_tx(struct mr_qp *qp, uint64_t now, struct mr_tx_pkt *out);
/* Point the requester at psn (go-back-N restart point), recounting outstanding READ/atomics. */
void rc_req_seek(struct mr_qp *qp, uint32_t psn);
void rc_req_on_timer(struct mr_qp *qp, uint64_t now);

/* ---- rc_completer.c ---- */
void rc_comp_rx(struct mr_qp *qp, const struct mr_pkt *pkt, uint64_t now);
/* Complete the SQ head WQE (send completion if signaled or failed). */
void rc_comp_complete_head(struct mr_qp *qp, enum mr_wc_status status);

/* ---- rc_responder.c ---- */
void rc_resp_rx(struct mr_qp *qp, const struct mr_pkt *pkt, uint64_t now);
/* An RC WRITE Middle/Last whose ICRC is pending: if it is the next one the responder expects,
 * placed with the ICRC checked in the copy (0, or -EBADMSG: mismatch, nothing advanced);
 * -EAGAIN: not that case, nothing touched (check the ICRC, then rc_resp_rx). */
int rc_resp_write_checked(struct mr_qp *qp, const struct mr_pkt *pkt, uint64_t now);
int rc_resp_tx(struct mr_qp *qp, struct mr_tx_pkt *out);
void rc_resp_reset(struct mr_qp *qp);
void rc_resp_on_timer(struct mr_qp *qp, uint64_t now);

/* ---- qp_cc.c: congestion control for both transports ---- */
int qp_cc_check(const struct mr_qp_attr *a);
int qp_cc_setup(struct mr_qp *qp, const struct mr_qp_attr *a);
uint64_t qp_cc_next_expiry(const struct mr_qp *qp);
void qp_cc_on_timer(struct mr_qp *qp, uint64_t now);
void qp_cc_on_cnp(struct mr_qp *qp, uint64_t now);
/* Reaction point of either engine: may a packet go now with inflight_bytes outstanding (a
 * pacing hold arms the pacer timer), and account one that went on path. */
bool qp_cc_can_send(struct mr_qp *qp, uint64_t now, uint64_t inflight_bytes);
void qp_cc_sent(struct mr_qp *qp, uint64_t now, uint32_t bytes, uint16_t path);

/* ---- rc_ctx.c ---- */
uint64_t rc_qp_next_expiry(const struct mr_qp *qp);

/* DCQCN notification point (A17.9.3): CE-marked request -> maybe queue a CNP. */
void rc_resp_on_ce(struct mr_qp *qp, uint64_t now);
int rc_resp_cnp_tx(struct mr_qp *qp, struct mr_tx_pkt *out);

/* IBA table 45: RNR timer code -> nanoseconds. */
uint64_t rc_rnr_timer_ns(uint8_t code);

#endif
