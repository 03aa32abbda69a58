/* SPDX-License-Identifier: MIT
 * I/O-free InfiniBand RC transport (IBA ch. 9.7 / Annex A17): the transport core shared by unit
 * tests, the simulator and the DPDK engine. No DPDK include, no sockets, no clock: every entry
 * point takes `now` (nanoseconds, any monotonic origin); callers ask for the next timer expiry.
 *
 * Threading: a struct mr_ctx and everything created from it belong to one thread (one engine
 * lcore). No locks.
 *
 * Errors: functions returning int return 0 (or a count) on success and a negative errno.
 */
#ifndef MR_TRANSPORT_RC_H
#define MR_TRANSPORT_RC_H

#include <stdbool.h>
#include <stdint.h>

#include "metaroce/types.h"
#include "../wire/roce_pkt.h"

#include "../cc/cc.h"

struct mr_ctx;
struct mr_pd;
struct mr_memreg;
struct mr_cq;
struct mr_qp;
struct mr_srq;

struct mr_ctx_params {
	uint32_t max_qp;      /* QPNs handed out from first_qpn upward */
	uint32_t first_qpn;   /* >= 2: QP0/QP1 are reserved (IBA 10.2.4) */
	uint32_t max_mr;
	uint64_t seed;        /* for initial PSNs / keys; deterministic for tests */
	/* Cap on unacknowledged request PSNs per QP; 0 = default (8192, a 100 Gb/s x 10 us BDP
	 * even at MTU 256). Never above 2^23 - 1 (IBA 9.7.1). Added by the transport owner. */
	uint32_t max_inflight_pkts;
	/* The port's MTU (256..4096, a valid IB MTU); 0 = 4096. mr_qp_modify() refuses a larger
	 * path MTU (-EINVAL, as rxe_qp_chk_attr against the port's MTU), so no frame ever exceeds
	 * what the port can send. */
	uint32_t max_mtu;
	/* Notification point for every QP (A17.9.3; ConnectX's default with ECN on): CE-marked
	 * requests get CNPs whatever the QP's own congestion control. Added for issue 11. */
	bool cnp_all_qps;
};

struct mr_ctx *mr_ctx_create(const struct mr_ctx_params *p); /* NULL + errno on failure */
/* Live objects of a ctx (leak checks: all 0 once every app is gone). */
struct mr_ctx_counts {
	uint32_t qps, pds, mrs, cqs, srqs;
};
void mr_ctx_get_counts(const struct mr_ctx *ctx, struct mr_ctx_counts *c);
void mr_ctx_destroy(struct mr_ctx *ctx);

/* ---- protection domains and memory regions (IBA 10.6) ---- */
struct mr_pd *mr_pd_alloc(struct mr_ctx *ctx);
int mr_pd_free(struct mr_pd *pd); /* -EBUSY while MRs or QPs use it */

/* Register [host, host+len) which peers and SGEs address as [iova, iova+len).
 * access: enum mr_access_flags. REMOTE_WRITE/REMOTE_ATOMIC require LOCAL_WRITE (IBA 10.6.3.1). */
struct mr_memreg *mr_reg(struct mr_pd *pd, void *host, uint64_t iova, uint64_t len,
			 uint32_t access);
int mr_dereg(struct mr_memreg *mr);
uint32_t mr_memreg_lkey(const struct mr_memreg *mr);
uint32_t mr_memreg_rkey(const struct mr_memreg *mr);

/* ---- completion queues ---- */
struct mr_cq *mr_cq_create(struct mr_ctx *ctx, uint32_t depth);
int mr_cq_destroy(struct mr_cq *cq);
/* Returns the number of completions written to wc (0..n). */
int mr_cq_poll(struct mr_cq *cq, int n, struct mr_wc *wc);
/* Completions waiting to be polled (0 for NULL). */
uint32_t mr_cq_count(const struct mr_cq *cq);

/* ---- queue pairs ---- */
struct mr_qp_init_attr {
	struct mr_pd *pd;
	struct mr_cq *send_cq;
	struct mr_cq *recv_cq;
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_inline_data;
	bool sq_sig_all;
	/* Shared receive queue (rc_srq.c): receives come from it, mr_post_recv is refused and
	 * max_recv_wr is ignored. Must belong to the same PD. */
	struct mr_srq *srq;
};

enum mr_qp_attr_mask {
	MR_QP_STATE = 1 << 0,
	MR_QP_ACCESS_FLAGS = 1 << 1,
	MR_QP_PKEY_INDEX = 1 << 2,
	MR_QP_PATH = 1 << 3,        /* address vector: struct mr_path */
	MR_QP_PATH_MTU = 1 << 4,
	MR_QP_DEST_QPN = 1 << 5,
	MR_QP_RQ_PSN = 1 << 6,
	MR_QP_MAX_DEST_RD_ATOMIC = 1 << 7,
	MR_QP_MIN_RNR_TIMER = 1 << 8,
	MR_QP_SQ_PSN = 1 << 9,
	MR_QP_TIMEOUT = 1 << 10,
	MR_QP_RETRY_CNT = 1 << 11,
	MR_QP_RNR_RETRY = 1 << 12,
	MR_QP_MAX_QP_RD_ATOMIC = 1 << 13,
	MR_QP_TRANSPORT = 1 << 14,  /* transport, n_entropies, cc: optional in INIT->RTR only */
};

/* Reliable transport of a QP. MetaRoCE (docs/metaroce-wire.md) only after both ends agreed. */
enum mr_transport {
	MR_TRANSPORT_RC = 0,        /* IBA ch. 9.7 go-back-N: what stock peers speak */
	MR_TRANSPORT_METAROCE = 1,  /* spraying, SACK, selective repeat, RACK/TLP, path-aware CC */
};

struct mr_qp_attr {
	enum mr_qp_state qp_state;
	uint32_t qp_access_flags;  /* remote access the responder grants (enum mr_access_flags) */
	uint16_t pkey_index;
	struct mr_path path;
	uint32_t path_mtu;         /* bytes: 256, 512, 1024, 2048, 4096 */
	uint32_t dest_qp_num;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint8_t max_dest_rd_atomic;
	uint8_t max_rd_atomic;
	uint8_t min_rnr_timer;     /* IBA table 45 code, 0..31 */
	uint8_t timeout;           /* local ACK timeout 4.096 us * 2^timeout, 0 = infinite (C9-141) */
	uint8_t retry_cnt;         /* 0..7 */
	uint8_t rnr_retry;         /* 0..7, 7 = infinite (IBA 9.7.5.2.8) */
	/* MR_QP_TRANSPORT */
	enum mr_transport transport;
	uint16_t n_entropies;      /* MetaRoCE: UDP source ports path.udp_sport + 0..n-1 (1..256) */
	enum mr_cc_algo cc;        /* congestion control (DCQCN also for plain RC) */
	struct mr_cc_params cc_params;
};

struct mr_qp *mr_qp_create(struct mr_ctx *ctx, const struct mr_qp_init_attr *init);
int mr_qp_destroy(struct mr_qp *qp);
uint32_t mr_qp_num(const struct mr_qp *qp);
/* Applies a verbs-style state transition (IBA 10.3.1, ibv_modify_qp rules): the mask must carry
 * exactly the attributes required for the transition and only the optional ones it allows,
 * else -EINVAL. Entering ERR flushes every outstanding WR with MR_WC_WR_FLUSH_ERR. */
int mr_qp_modify(struct mr_qp *qp, const struct mr_qp_attr *attr, uint32_t mask);
int mr_qp_query(const struct mr_qp *qp, struct mr_qp_attr *attr);
enum mr_qp_state mr_qp_state(const struct mr_qp *qp);

/* Post one work request. -EINVAL for a bad WR (opcode, sge count, inline too long, atomic not
 * 8-byte aligned, an RC READ needing more response PSNs than may be outstanding: 2^23 - 1 at
 * the path MTU), -ENOMEM when the queue is full, -EINVAL in a state that forbids posting. */
int mr_post_send(struct mr_qp *qp, const struct mr_send_wr *wr);
/* WRs mr_post_send() can take now before its -ENOMEM (0 for NULL). */
uint32_t mr_qp_sq_room(const struct mr_qp *qp);
int mr_post_recv(struct mr_qp *qp, const struct mr_recv_wr *wr);

/* ---- shared receive queues (IBA 10.2.9.1, 11.2.3; rc_srq.c) ---- */
struct mr_srq *mr_srq_create(struct mr_pd *pd, uint32_t max_wr); /* NULL + errno */
int mr_srq_destroy(struct mr_srq *srq);  /* -EBUSY while QPs use it */
/* -ENOMEM when full, -EINVAL for a bad WR. */
int mr_post_srq_recv(struct mr_srq *srq, const struct mr_recv_wr *wr);
uint32_t mr_srq_count(const struct mr_srq *srq); /* receives posted and not yet taken */

/* ---- the I/O-free engine interface (ngtcp2 style) ---- */

/* One packet to send. Payload is gathered from iov by mr_frame_build(); the pointers stay valid
 * until the next call into this ctx. */
struct mr_tx_pkt {
	const struct mr_path *path;
	/* path's headers prebuilt, for mr_frame_build_tmpl (then the frame's bytes are those
	 * mr_frame_build gives from path); NULL: build from path. */
	const struct mr_hdr_tmpl *tmpl;
	struct mr_roce_hdrs hdr;
	struct mr_iov iov[MR_MAX_SGE + 1];
	unsigned int niov;
	uint32_t paylen;
	/* Non-zero: UDP source port for this packet (MetaRoCE spraying), overriding
	 * path->udp_sport. Builders must honour it. */
	uint16_t udp_sport;
};

/* Hand a parsed packet to the transport; it is dispatched by destination QPN. Its ICRC is
 * checked already, or pending (mr_frame_parse_deferred): then the transport checks it before
 * acting on the packet. Packets for unknown QPs or in wrong states are counted and dropped.
 * Returns 0 (taken or dropped), -EBADMSG (a pending ICRC did not match: nothing was changed
 * but the bytes of the WRITE's own target range the payload would have filled; the caller
 * counts it as an ICRC error), -EINVAL (NULL argument). */
int mr_ctx_rx(struct mr_ctx *ctx, const struct mr_pkt *pkt, uint64_t now);
/* Produce the next packet to send, if any: returns 1 and fills out, or 0. Responses and ACKs
 * go before new requests; QPs are served round-robin. */
int mr_ctx_tx(struct mr_ctx *ctx, uint64_t now, struct mr_tx_pkt *out);
/* Earliest pending timer (ACK timeout, RNR timer, coalesced-ACK flush), or UINT64_MAX. */
uint64_t mr_ctx_next_expiry(const struct mr_ctx *ctx);
/* Run every timer that expired at or before now. */
void mr_ctx_on_timer(struct mr_ctx *ctx, uint64_t now);
/* Queue now the coalesced ACKs whose delayed-ACK timer would fire by `until` (a responder may
 * acknowledge at any time, IBA 9.7.5.1.2), for an engine about to sleep past them; no other
 * timer runs early. Returns the QPs looked at (their ACKs leave through mr_ctx_tx). */
unsigned int mr_ctx_ack_early(struct mr_ctx *ctx, uint64_t until);

/* ---- counters (rdma-stat style); all monotonically increasing ---- */
/* Packet classes counted per direction (BTH opcode, IBA table 38; MetaRoCE by base opcode). */
enum mr_op_class {
	MR_OPC_SEND, MR_OPC_WRITE, MR_OPC_READ_REQ, MR_OPC_READ_RESP, MR_OPC_ATOMIC,
	MR_OPC_ATOMIC_ACK, MR_OPC_ACK, MR_OPC_CNP, MR_OPC_NR
};
struct mr_qp_stats {
	uint64_t tx_pkts, rx_pkts, tx_bytes, rx_bytes;
	uint64_t retransmits;          /* request packets sent again (go-back-N) */
	uint64_t timeouts;             /* local ACK timeouts */
	uint64_t seq_naks_sent, seq_naks_rcvd;
	uint64_t rnr_naks_sent, rnr_naks_rcvd;
	uint64_t rem_access_naks_sent, rem_access_naks_rcvd;
	uint64_t inv_req_naks_sent, inv_req_naks_rcvd;
	uint64_t duplicate_requests;   /* responder saw PSN < ePSN */
	uint64_t out_of_sequence;      /* responder saw PSN > ePSN */
	uint64_t acks_sent, acks_rcvd;
	uint64_t implied_naks;         /* READ/atomic responses that imply loss of earlier ACKs */
	uint64_t dropped;              /* packets discarded (bad state, bad opcode for QP, ...) */
	/* MetaRoCE and congestion control */
	uint64_t sack_retransmits;     /* packets resent selectively */
	uint64_t spurious_retransmits; /* resent packets the peer already had (seen as duplicates
				        * by the responder / D-SACK-like evidence at the sender) */
	uint64_t tlp_probes;
	uint64_t ooo_placed;           /* packets placed out of order */
	uint64_t ce_rcvd;              /* CE-marked packets received */
	uint64_t cnps_sent, cnps_rcvd;
	/* Added for mrstat (rxe / mlx5 names in apps/metaroced/counters.c) */
	uint64_t retry_seqs;           /* go-back-N / RTO retry sequences started */
	uint64_t retry_exceeded;       /* retry_cnt exhausted: WR completed RETRY_EXC_ERR */
	uint64_t rnr_retry_exceeded;   /* rnr_retry exhausted: RNR_RETRY_EXC_ERR */
	uint64_t cnps_handled;         /* CNPs a rate controller reacted to (rest: ignored) */
	uint64_t sends_completed;      /* SEND WRs completed successfully */
	uint64_t recvs_completed;      /* receive WQEs completed successfully */
	uint64_t sack_blocks_rcvd;     /* MetaRoCE SACK ACKs received */
	uint64_t tx_op[MR_OPC_NR], rx_op[MR_OPC_NR]; /* packets by enum mr_op_class */
	uint64_t rx_requests[MR_OPC_NR]; /* request messages (FIRST/ONLY packets) received */
};
int mr_qp_get_stats(const struct mr_qp *qp, struct mr_qp_stats *st);

/* The QP's congestion-control state now (for statistics): rate in bit/s, the lowest rate since
 * the QP's controller started and window in bytes, UINT64_MAX when unlimited or no controller;
 * cc_on false without one. 0 or -EINVAL. */
int mr_qp_get_cc_state(const struct mr_qp *qp, bool *cc_on, uint64_t *rate_bps,
		       uint64_t *rate_min_bps, uint64_t *cwnd_bytes);

struct mr_ctx_stats {
	uint64_t rx_unknown_qp;
	uint64_t rx_dropped;
	uint64_t rx_bad_pkey;    /* BTH P_Key outside our (default) partition: dropped */
	uint64_t rx_bad_source;  /* connected QP, packet from another address: dropped */
	uint64_t parting_acks;   /* ACKs a QP owed when it was destroyed, sent after it */
	uint64_t parting_dropped; /* such ACKs not kept (RC_PARTING_MAX waiting already) */
};
void mr_ctx_get_stats(const struct mr_ctx *ctx, struct mr_ctx_stats *st);

/* Ns per IBA timeout code: 4.096 us * 2^t (IBA 9.7.6.1.3, C9-141); 0 means infinite. */
static inline uint64_t mr_ack_timeout_ns(uint8_t t)
{
	return t == 0 ? UINT64_MAX : 4096ull << (t > 31 ? 31 : t);
}

#endif
