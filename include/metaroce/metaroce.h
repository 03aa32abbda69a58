/* SPDX-License-Identifier: MIT
 * libmetaroce: the application API of the metaroce userspace RoCE v2 stack.
 *
 * An application opens a session with the metaroced daemon over a filesystem UNIX socket and
 * then works like with verbs: protection domains, memory regions, completion queues and RC
 * queue pairs. Control calls (create/modify/destroy) are synchronous requests on the socket;
 * the hot path (mrc_post_send, mrc_post_recv, mrc_poll_cq, mrc_req_notify_cq) only touches
 * rings in shared memory and never enters the kernel.
 *
 * Memory: the engine reads and writes application memory directly (zero copy), so memory
 * registered with mrc_reg_mr must come from mrc_alloc_buf (a memfd the daemon also maps).
 * Other memory is rejected with -EFAULT.
 *
 * Errors: calls returning int return 0 (or a count) or a negative errno; constructors return
 * NULL and set errno. mrc_last_error() explains the last failure of a session in words.
 * EDQUOT: the daemon's per-session quota for PDs, MRs, CQs, QPs, queued WRs + CQ entries or
 * inline bytes is reached (metaroced.conf [limits] session_max_*; the message names it).
 *
 * Threading: control calls on one session may come from any thread (they are serialised);
 * post and poll calls on one QP / CQ must not run concurrently from several threads.
 *
 * No DPDK dependency: link with `pkg-config --cflags --libs metaroce`.
 */
#ifndef METAROCE_METAROCE_H
#define METAROCE_METAROCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metaroce/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define MRC_API __attribute__((visibility("default")))
#else
#define MRC_API
#endif

/* Socket used when mrc_open() gets NULL and $METAROCE_SOCK is unset. */
#define MRC_DEFAULT_SOCK "/run/metaroce/metaroced.sock"

struct mrc_session;
struct mrc_pd;
struct mrc_mr;
struct mrc_cq;
struct mrc_qp;
struct mrc_srq;
struct mrc_buf;

/* ---- port ---- */
enum mrc_port_state {           /* values as enum ibv_port_state */
	MRC_PORT_DOWN = 1,
	MRC_PORT_INIT = 2,
	MRC_PORT_ARMED = 3,
	MRC_PORT_ACTIVE = 4,
};

#define MRC_MAX_GIDS 4

/* Fixed-width so that it travels unchanged in control messages. */
struct mrc_port_attr {
	uint32_t state;            /* enum mrc_port_state */
	uint32_t active_mtu;       /* IB MTU in bytes: 256 .. 4096 */
	uint32_t max_mtu;
	uint32_t gid_count;
	uint8_t mac[6];
	uint8_t reserved[2];
	uint8_t gid[MRC_MAX_GIDS][16]; /* GID index 1 is the IPv4-mapped RoCE v2 GID, as rxe */
	uint32_t max_qp, max_qp_wr, max_cq, max_cqe;
	uint32_t max_mr, max_pd, max_sge, max_inline_data;
	uint64_t max_mr_size;
};

/* ---- QP attributes: public equivalents of struct mr_qp_attr (stack/transport/rc.h) ---- */

/* Mask bits: values identical to enum mr_qp_attr_mask; same verbs transition rules
 * (IBA 10.3.1, ibv_modify_qp): required and optional attributes per transition. */
enum mrc_qp_attr_mask {
	MRC_QP_STATE = 1 << 0,
	MRC_QP_ACCESS_FLAGS = 1 << 1,
	MRC_QP_PKEY_INDEX = 1 << 2,
	MRC_QP_PATH = 1 << 3,
	MRC_QP_PATH_MTU = 1 << 4,
	MRC_QP_DEST_QPN = 1 << 5,
	MRC_QP_RQ_PSN = 1 << 6,
	MRC_QP_MAX_DEST_RD_ATOMIC = 1 << 7,
	MRC_QP_MIN_RNR_TIMER = 1 << 8,
	MRC_QP_SQ_PSN = 1 << 9,
	MRC_QP_TIMEOUT = 1 << 10,
	MRC_QP_RETRY_CNT = 1 << 11,
	MRC_QP_RNR_RETRY = 1 << 12,
	MRC_QP_MAX_QP_RD_ATOMIC = 1 << 13,
	/* transport, n_entropies, cc (metaroce extension; optional in INIT->RTR only). Set it only
	 * after both ends agreed on MetaRoCE (docs/metaroce-wire.md): a stock peer must only ever
	 * see plain RoCE v2 RC. */
	MRC_QP_TRANSPORT = 1 << 14,
};
#define MRC_QP_ATTR_MASK_ALL ((1u << 15) - 1)

/* Values as enum mr_transport (stack/transport/rc.h). */
enum mrc_transport {
	MRC_TRANSPORT_RC = 0,        /* IBA ch. 9.7 go-back-N: what stock peers speak */
	MRC_TRANSPORT_METAROCE = 1,  /* spraying, SACK, selective repeat (docs/metaroce-wire.md) */
};

/* Values as enum mr_cc_algo (stack/cc/cc.h). The daemon fills in the controller's parameters
 * (line rate from the link or its config, base RTT from its config). */
enum mrc_cc_algo {
	MRC_CC_NONE = 0,
	MRC_CC_DCQCN = 1,
	MRC_CC_METAROCE = 2,
};

#define MRC_MAX_ENTROPIES 256        /* MRETH.path is 8 bits */

/* Address vector: struct mr_path with fixed-width fields. GIDs are IPv6 or IPv4-mapped
 * (::ffff:a.b.c.d); ipv6 = 0 selects an IPv4 header built from gid[12..15]. */
struct mrc_path {
	uint8_t smac[6];
	uint8_t dmac[6];
	uint8_t vlan;          /* bool */
	uint8_t ipv6;          /* bool */
	uint16_t vlan_tci;     /* PCP(3) DEI(1) VID(12) */
	uint8_t sgid[16];
	uint8_t dgid[16];
	uint8_t tclass;        /* DSCP << 2 | ECN */
	uint8_t ttl;
	uint16_t udp_sport;    /* entropy (A17.3.3); 0 = let the stack choose */
	uint32_t flow_label;   /* IPv6 only, 20 bits */
};

struct mrc_qp_attr {
	uint32_t qp_state;         /* enum mr_qp_state */
	uint32_t qp_access_flags;  /* enum mr_access_flags the responder grants */
	uint16_t pkey_index;
	uint8_t max_dest_rd_atomic;
	uint8_t max_rd_atomic;
	uint32_t path_mtu;         /* bytes: 256, 512, 1024, 2048, 4096 */
	uint32_t dest_qp_num;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint8_t min_rnr_timer;     /* IBA table 45 code, 0..31 */
	uint8_t timeout;           /* 4.096 us * 2^timeout, 0 = infinite (C9-141) */
	uint8_t retry_cnt;         /* 0..7 */
	uint8_t rnr_retry;         /* 0..7, 7 = infinite (IBA 9.7.5.2.8) */
	struct mrc_path path;
	/* MRC_QP_TRANSPORT. Appended after the verbs fields: a request from an older client
	 * (zeroed beyond its 88-byte attr) reads as plain RC, and these bytes are only read when
	 * the mask bit is set. */
	uint8_t transport;         /* enum mrc_transport */
	uint8_t cc;                /* enum mrc_cc_algo */
	uint16_t n_entropies;      /* MetaRoCE: UDP source ports path.udp_sport + 0..n-1, 1..256 */
	uint32_t reserved;         /* 0 */
};

enum mrc_qp_type {
	MRC_QPT_RC = 2,            /* value as IBV_QPT_RC */
};

struct mrc_qp_init_attr {
	uint32_t qp_type;          /* enum mrc_qp_type; only RC today */
	struct mrc_cq *send_cq;
	struct mrc_cq *recv_cq;
	uint32_t max_send_wr;      /* rounded up to a power of two */
	uint32_t max_recv_wr;
	uint32_t max_send_sge;     /* <= MR_MAX_SGE */
	uint32_t max_recv_sge;
	uint32_t max_inline_data;  /* <= port max_inline_data */
	bool sq_sig_all;
	struct mrc_srq *srq;       /* non-NULL: receives come from this SRQ (same PD) */
};

/* ---- session ---- */
/* sock_path NULL: $METAROCE_SOCK, else MRC_DEFAULT_SOCK. NULL + errno on failure
 * (ENOENT/ECONNREFUSED: no daemon; EPROTO: ABI version mismatch). */
MRC_API struct mrc_session *mrc_open(const char *sock_path);
/* Closes the session; the daemon reclaims every object still open. */
MRC_API int mrc_close(struct mrc_session *s);

/* Embedded engine: with $METAROCE_ENGINE set to a metaroced command line ("-c FILE [options]
 * [-- EAL args]"), the first mrc_open() of the process starts the daemon inside it (the
 * module $METAROCE_ENGINE_MODULE, default libmetaroce-engine.so; this library itself stays
 * DPDK-free) and every session of the process connects to that daemon, whatever socket was
 * named. The app's own thread then runs the engine: mrc_poll_cq() does one iteration before
 * it reads the CQ, and an app that waits on memory instead of a CQ (perftest's write_lat polls
 * a buffer's last byte) calls mrc_progress() in its loop. While the app runs neither, a helper
 * thread of the module serves the engine at a coarser pace (control calls, ACKs, timers).
 * EAL pins the calling thread to the configured [engine] lcores CPU; one shard only.
 * mrc_progress returns 1 if the iteration did work, 0 if it did none, another thread was
 * running the engine, or the process has no embedded engine. */
MRC_API int mrc_progress(void);
/* Human-readable explanation of the session's last failed call ("" if none). */
MRC_API const char *mrc_last_error(const struct mrc_session *s);
/* strerror() for the negative errnos this library returns. */
MRC_API const char *mrc_strerror(int err);
MRC_API int mrc_query_port(struct mrc_session *s, struct mrc_port_attr *attr);

/* ---- protection domains and memory ---- */
MRC_API struct mrc_pd *mrc_alloc_pd(struct mrc_session *s);
MRC_API int mrc_dealloc_pd(struct mrc_pd *pd); /* -EBUSY while MRs or QPs use it */

/* Memory shared with the daemon (page-aligned, zeroed). NULL + errno on failure. */
MRC_API void *mrc_alloc_buf(struct mrc_session *s, size_t len);
/* -EINVAL for a pointer mrc_alloc_buf did not return, -EBUSY while an MR covers it. */
MRC_API int mrc_free_buf(struct mrc_session *s, void *buf);

/* Register [addr, addr+len), which must lie inside one mrc_alloc_buf buffer (else EFAULT).
 * Peers and SGEs address it by its virtual address in this process. access: enum
 * mr_access_flags; REMOTE_WRITE/REMOTE_ATOMIC need LOCAL_WRITE (IBA 10.6.3.1). */
MRC_API struct mrc_mr *mrc_reg_mr(struct mrc_pd *pd, void *addr, size_t len, uint32_t access);
MRC_API int mrc_dereg_mr(struct mrc_mr *mr);
/* Memory the caller maps itself (libibverbs' in-place remapping, stack/verbs/mem_remap.c):
 * [file_offset, +len) of memfd fd (sealed against shrinking) is what the app sees at addr;
 * the daemon maps the same pages. Peers and SGEs address byte addr + i as iova + i (iova is
 * addr itself unless the app chose another, ibv_reg_mr_iova2). addr, iova, file_offset and
 * len are page multiples. The caller keeps its mapping (mrc_unmap_memfd and mrc_close never
 * unmap addr). file_offset != 0 needs a daemon announcing MRC_FEAT_MAP_OFFSET, else
 * EOPNOTSUPP. NULL + errno on failure. */
MRC_API struct mrc_buf *mrc_map_memfd(struct mrc_session *s, int fd, uint64_t file_offset,
				      void *addr, uint64_t iova, size_t len);
MRC_API int mrc_unmap_memfd(struct mrc_buf *b);  /* -EBUSY while an MR uses it */
/* mrc_reg_mr inside the given buffer (from mrc_map_memfd), which matters when several
 * buffers cover the same address. The MR's iova is the buffer's iova + (addr - its addr). */
MRC_API struct mrc_mr *mrc_reg_mr_in(struct mrc_pd *pd, struct mrc_buf *b, void *addr,
				     size_t len, uint32_t access);
/* MRC_FEAT_* bits the daemon announced (shm_abi.h). */
MRC_API uint32_t mrc_features(const struct mrc_session *s);
MRC_API uint32_t mrc_mr_lkey(const struct mrc_mr *mr);
MRC_API uint32_t mrc_mr_rkey(const struct mrc_mr *mr);

/* ---- completion queues ---- */
MRC_API struct mrc_cq *mrc_create_cq(struct mrc_session *s, uint32_t depth);
MRC_API int mrc_destroy_cq(struct mrc_cq *cq); /* -EBUSY while a QP uses it */
/* Returns the number of completions written to wc (0..n), oldest first. */
MRC_API int mrc_poll_cq(struct mrc_cq *cq, int n, struct mr_wc *wc);
/* Blocking waits: a file descriptor that is readable (POLLIN) after an armed CQ got an entry:
 * the app's end of a datagram socket pair whose other end the daemon writes with non-blocking
 * sends, so nothing the app does with its end (blocking mode, never draining) can stall the
 * daemon. Arm with mrc_req_notify_cq(), poll the CQ once more (an entry may have arrived
 * before arming), then wait on the fd with poll()/epoll, then mrc_cq_ack_events(). One arm =
 * at most one event. Only poll and mrc_cq_ack_events() it; do not read or write it. */
MRC_API int mrc_cq_event_fd(const struct mrc_cq *cq);
MRC_API int mrc_req_notify_cq(struct mrc_cq *cq, bool solicited_only);
/* Completions waiting in the CQ ring (not yet polled), or a negative errno. */
MRC_API int mrc_cq_ready(const struct mrc_cq *cq);
/* Drains the event fd; returns the number of events it held (0 if none). */
MRC_API int mrc_cq_ack_events(struct mrc_cq *cq);

/* ---- queue pairs ---- */
MRC_API struct mrc_qp *mrc_create_qp(struct mrc_pd *pd, const struct mrc_qp_init_attr *init);
MRC_API int mrc_modify_qp(struct mrc_qp *qp, const struct mrc_qp_attr *attr, uint32_t mask);
MRC_API int mrc_query_qp(struct mrc_qp *qp, struct mrc_qp_attr *attr);
MRC_API int mrc_destroy_qp(struct mrc_qp *qp);
MRC_API uint32_t mrc_qp_num(const struct mrc_qp *qp);
/* The capabilities the daemon granted at creation (queue sizes rounded up, SGE and inline
 * limits); send_cq/recv_cq/qp_type/sq_sig_all as created. */
MRC_API int mrc_qp_caps(const struct mrc_qp *qp, struct mrc_qp_init_attr *caps);

/* Hot path: queue one work request in shared memory. SGE addresses are virtual addresses of
 * this process inside registered MRs. With MR_SEND_INLINE the data is copied now (sg_list may
 * point anywhere, total <= max_inline_data). -EINVAL for a malformed WR or a QP state that
 * forbids posting (IBA 10.8.2: sends need RTS, receives need INIT or later), -ENOMEM when the
 * ring is full. Completions for signaled sends (or all with sq_sig_all) and every receive
 * appear on the CQs; a WR the daemon rejects completes with an error status. */
MRC_API int mrc_post_send(struct mrc_qp *qp, const struct mr_send_wr *wr);
MRC_API int mrc_post_recv(struct mrc_qp *qp, const struct mr_recv_wr *wr);
/* Post wrs[0..n) in order and make them visible at once (one shared-memory index store).
 * Returns how many were posted (stopping at the first failure; its error is in
 * mrc_last_error()), or a negative errno if none was. */
MRC_API int mrc_post_send_batch(struct mrc_qp *qp, const struct mr_send_wr *wrs, int n);
MRC_API int mrc_post_recv_batch(struct mrc_qp *qp, const struct mr_recv_wr *wrs, int n);

/* ---- shared receive queues (IBA 10.2.9.1) ----
 * Receives posted to an SRQ are taken, in posting order, by whichever of its QPs gets a message
 * first; completions appear on that QP's receive CQ with its qp_num. A WR with SGEs this session
 * may not use is dropped by the daemon (counted) since no QP's CQ can report it yet. No SRQ
 * limit events. -EBUSY from destroy while QPs use it. */
MRC_API struct mrc_srq *mrc_create_srq(struct mrc_pd *pd, uint32_t max_wr, uint32_t max_sge);
MRC_API int mrc_destroy_srq(struct mrc_srq *srq);
MRC_API int mrc_post_srq_recv(struct mrc_srq *srq, const struct mr_recv_wr *wr);
MRC_API uint32_t mrc_srq_size(const struct mrc_srq *srq); /* entries (power of two) */

#ifdef __cplusplus
}
#endif
#endif
