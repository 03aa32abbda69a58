/* SPDX-License-Identifier: MIT
 * The daemon side of libmetaroce: accepts app sessions on a UNIX socket, maps their memory,
 * turns control requests into calls on a backend ops table, and moves work requests and
 * completions between the apps' shared-memory rings and the backend.
 *
 * No DPDK include, no threads, no locks: a server and its backend belong to one thread (the
 * engine lcore that owns the transport). Everything is non-blocking. The host calls
 * mr_shm_server_poll() from its poll loop (or poll_data every iteration and poll_ctl when
 * mr_shm_server_fd() is readable / every N iterations).
 *
 * Isolation: every object belongs to one session and is named by a per-session handle with a
 * generation number; ring contents are copied out and validated before use; SGE lkeys must
 * name an MR of the same session and PD. When a session's socket reaches EOF or an error (the
 * app exited or crashed), its QPs are moved to ERR and destroyed, then its MRs, CQs, PDs and
 * mappings are released through the backend, and the other sessions carry on.
 */
#ifndef MR_SHM_SERVER_H
#define MR_SHM_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "metaroce/metaroce.h"
#include "metaroce/types.h"

struct mr_shm_server;

/* QP capabilities passed to the backend (already validated and rounded by the server). */
struct mr_shm_qp_caps {
	uint32_t max_send_wr, max_recv_wr;
	uint32_t max_send_sge, max_recv_sge;
	uint32_t max_inline_data;
	bool sq_sig_all;
	void *srq;            /* backend SRQ the QP takes its receives from, or NULL */
};

/* What the server needs from the transport. `be` is the backend pointer given at creation;
 * object pointers are opaque backend objects. Every op returns 0 (or a count) or a negative
 * errno, which the server forwards to the app. All ops are called from the server's thread.
 *
 * reg_mr: the engine must access [host, host+len) (the daemon's mapping of the app's memfd)
 *   when peers or SGEs name [iova, iova+len) (the app's virtual address), i.e. rc.h mr_reg().
 * dereg_mr: when it returns, the engine holds no pointer into the MR's memory any more (rc.h
 *   mr_dereg() revokes in-flight references: IBA 10.6.7), because the server may unmap the
 *   buffer as soon as no MR covers it (MRC_CTL_UNMAP_BUF is refused with -EBUSY before).
 * post_send/post_recv: SGE addresses and lkeys are the app's, unchanged (they are iovas of
 *   MRs registered above). For MR_SEND_INLINE, sg_list[0] instead points (host address, lkey
 *   0) at a copy of the inline payload that is only valid during the call: the backend must
 *   copy it before returning. Return -ENOMEM or -EAGAIN when the queue is full (the server
 *   retries later); any other error makes the server complete that WR with an error CQE.
 * poll_cq: as rc.h mr_cq_poll(); the server never asks for more than the app's ring can hold.
 * cq_pending: whether the CQ holds completions not polled yet (rc.h mr_cq_count() > 0); may be
 *   NULL (then a full ring with an armed CQ always raises the event).
 * sq_room: how many WRs post_send would take now (rc.h mr_qp_sq_room()); may be NULL. With it
 *   a full send queue costs the server one call per poll instead of copying and checking the
 *   next ring entry only to have post_send refuse it.
 * modify_qp/query_qp: attribute values and mask bits are identical to rc.h's mr_qp_attr.
 * query_port may be NULL (the server then reports a port that is down).
 */
struct mr_shm_backend_ops {
	int (*query_port)(void *be, struct mrc_port_attr *attr);
	int (*alloc_pd)(void *be, void **pd);
	int (*dealloc_pd)(void *be, void *pd);
	int (*reg_mr)(void *be, void *pd, void *host, uint64_t iova, uint64_t len,
		      uint32_t access, void **mr, uint32_t *lkey, uint32_t *rkey);
	int (*dereg_mr)(void *be, void *mr);
	int (*create_cq)(void *be, uint32_t depth, void **cq);
	int (*destroy_cq)(void *be, void *cq);
	int (*poll_cq)(void *be, void *cq, int n, struct mr_wc *wc);
	bool (*cq_pending)(void *be, void *cq);
	uint32_t (*sq_room)(void *be, void *qp);
	int (*create_qp)(void *be, void *pd, void *send_cq, void *recv_cq,
			 const struct mr_shm_qp_caps *caps, void **qp, uint32_t *qp_num);
	int (*modify_qp)(void *be, void *qp, const struct mrc_qp_attr *attr, uint32_t mask);
	int (*query_qp)(void *be, void *qp, struct mrc_qp_attr *attr);
	int (*destroy_qp)(void *be, void *qp);
	int (*post_send)(void *be, void *qp, const struct mr_send_wr *wr);
	int (*post_recv)(void *be, void *qp, const struct mr_recv_wr *wr);
	/* Shared receive queues (rc.h mr_srq_*); NULL: -EOPNOTSUPP to the app. */
	int (*create_srq)(void *be, void *pd, uint32_t max_wr, void **srq);
	int (*destroy_srq)(void *be, void *srq);
	int (*post_srq_recv)(void *be, void *srq, const struct mr_recv_wr *wr);
};

struct mr_shm_server_params {
	const char *sock_path;          /* filesystem path; a stale socket file is replaced */
	const struct mr_shm_backend_ops *ops;
	void *backend;
	uint32_t max_sessions;          /* 0 = 64 */
	uint32_t max_objects;           /* per session (PDs+bufs+MRs+CQs+QPs); 0 = 4096 */
	uint64_t max_session_bytes;     /* mapped app buffers per session; 0 = 4 GiB */
	uint32_t ctl_every;             /* mr_shm_server_poll(): control path every N calls; 0=64 */
	uint32_t sock_mode;             /* permissions of the socket file; 0 = 0660 */
	/* Per-session quotas, so that one app cannot take every QPN, MR slot or the daemon's
	 * memory from the others; 0 = only max_objects applies. Over a quota the request fails
	 * with -EDQUOT. max_session_wr bounds the per-QP memory the engine commits: it counts
	 * the send + receive queue sizes (after rounding) of the session's QPs plus the entries
	 * of its CQs, and max_session_inline the inline bytes (max_send_wr x max_inline_data). */
	uint32_t max_session_pd, max_session_mr, max_session_cq, max_session_qp;
	uint64_t max_session_wr;
	uint64_t max_session_inline;
	/* Grant MRC_FEAT_DB_ASYM (shm_abi.h mrc_db_ring_asym) to apps that ask, if the kernel
	 * has membarrier's global expedited barrier: their posts then leave out the fence, and
	 * this server's thread issues a barrier (about 1-20 us) at most every db_barrier_ms
	 * (0 = 10) while a QP whose bit it cleared waits for one. Not for a server whose poll
	 * runs on the app's own thread (an embedded engine). */
	bool db_asym;
	uint32_t db_barrier_ms;
};

struct mr_shm_server_stats {
	uint64_t sessions_opened, sessions_closed;
	uint64_t ctl_requests;          /* well-formed requests handled */
	uint64_t ctl_errors;            /* requests answered with a negative status */
	uint64_t ctl_malformed;         /* wrong size / version / fd count: answered -EPROTO etc. */
	uint64_t send_wrs, recv_wrs;    /* WRs handed to the backend */
	uint64_t wr_rejected;           /* WRs completed with an error by the server */
	uint64_t cqes;                  /* completions written to app CQ rings */
	uint64_t events;                /* wake-ups sent (one datagram each) */
	uint64_t ring_corrupt;          /* app published an impossible ring index */
	uint64_t events_refused;        /* wake-up send failed (not EAGAIN): app closed its end */
	uint64_t db_pends;              /* DB_ASYM: QPs left to be read after the next barrier */
	uint64_t db_barriers;           /* DB_ASYM: membarrier calls (counted before the call) */
	uint64_t db_barrier_fails;      /* ... that failed (those QPs are read again later) */
};

/* NULL + errno (EINVAL bad params, EADDRINUSE a live server owns the path, ENAMETOOLONG...). */
struct mr_shm_server *mr_shm_server_create(const struct mr_shm_server_params *p);
/* Reclaims every session (as if each app had exited), closes and unlinks the socket. */
void mr_shm_server_destroy(struct mr_shm_server *srv);

/* One iteration for a poll loop: the data path every call, the control path every ctl_every
 * calls. Returns the amount of work done (0 = idle, so the caller may back off). */
int mr_shm_server_poll(struct mr_shm_server *srv);
/* Accepts sessions, handles pending control requests, reclaims closed sessions. */
int mr_shm_server_poll_ctl(struct mr_shm_server *srv);
/* Drains SQ/RQ rings into the backend and backend CQs into CQ rings (+ CQ wake-ups). */
int mr_shm_server_poll_data(struct mr_shm_server *srv);
/* An fd (epoll) that is readable when the control path has work; for idle sleeping. */
int mr_shm_server_fd(const struct mr_shm_server *srv);
unsigned int mr_shm_server_nsessions(const struct mr_shm_server *srv);
void mr_shm_server_get_stats(const struct mr_shm_server *srv, struct mr_shm_server_stats *st);

/* ---- sharded hosts: one listening socket, one server per engine thread ----
 * The thread that owns the socket accepts connections (mr_shm_accept) and hands each fd to the
 * engine thread chosen for that session, which adopts it into its own server: from then on
 * that thread alone serves the session (no locks, as above). */

/* Bind and listen on a filesystem UNIX socket as mr_shm_server_create() does (a stale socket
 * file is replaced, a live server's is never stolen; mode 0 = 0660). Returns the non-blocking
 * listening fd, or -EINVAL, -ENAMETOOLONG, -EADDRINUSE, ... The caller closes it and unlinks
 * the path. */
int mr_shm_listen(const char *path, uint32_t mode);
/* Accept one pending connection: the connected fd (non-blocking, close-on-exec), -EAGAIN when
 * none is waiting, or another negative errno. */
int mr_shm_accept(int lsock);
/* A server without a listening socket (p->sock_path is ignored): sessions only come from
 * mr_shm_server_adopt(). mr_shm_server_fd() still reports its sessions' readiness.
 * NULL + errno (EINVAL bad params, ENOMEM). */
struct mr_shm_server *mr_shm_server_create_unbound(const struct mr_shm_server_params *p);
/* Make a connected session socket (from mr_shm_accept) a session of srv, exactly as if srv had
 * accepted it. The fd is consumed in every case (closed on error). 0, or -EINVAL, -EBUSY
 * (max_sessions reached: the app sees EOF at HELLO), -ENOMEM. */
int mr_shm_server_adopt(struct mr_shm_server *srv, int fd);

#endif
