/* SPDX-License-Identifier: MIT
 * shm server internals shared by shm_server.c (sessions), shm_server_ctl.c (control requests)
 * and shm_server_data.c (ring data path). Never installed.
 */
#ifndef MR_SHM_SERVER_PRIV_H
#define MR_SHM_SERVER_PRIV_H

#include <stddef.h>
#include <stdint.h>
#include <sys/un.h>

#include "metaroce/shm_abi.h"
#include "shm_handle.h"
#include "shm_server.h"

struct mr_shm_session;

struct mr_shm_pd {
	uint32_t handle;
	void *be;
	uint32_t refs;            /* MRs + QPs */
};

struct mr_shm_buf {
	uint32_t handle;
	uint64_t app_addr, len;
	void *host;               /* daemon's mapping */
	uint32_t refs;            /* MRs */
};

struct mr_shm_mr {
	uint32_t handle;
	void *be;
	struct mr_shm_pd *pd;
	struct mr_shm_buf *buf;
	uint64_t iova, len;
	uint32_t lkey, rkey;
	uint32_t access;
	struct mr_shm_mr *next;   /* session MR list */
	struct mr_shm_mr *hnext;  /* lkey hash chain (mr_shm_mr_find) */
};

struct mr_shm_cq {
	uint32_t handle;
	void *be;
	uint32_t refs;            /* QPs */
	int evfd;
	void *map;
	size_t map_len;
	struct mrc_ring_hdr *ring;
	uint32_t size, mask;      /* private copies: the app cannot change them */
	uint32_t prod;            /* private producer index */
	uint32_t notify_done;     /* private copy of the last arm request served */
	struct mr_shm_cq *next;
};

struct mr_shm_srq {
	uint32_t handle;
	void *be;
	struct mr_shm_pd *pd;
	uint32_t refs;                /* QPs */
	void *map;
	size_t map_len;
	struct mrc_ring_hdr *ring;
	uint32_t size, cons, max_sge; /* private copies */
	bool broken;
	struct mr_shm_srq *next;
};

struct mr_shm_qp {
	uint32_t handle;
	void *be;
	uint32_t qp_num;
	struct mr_shm_pd *pd;
	struct mr_shm_cq *send_cq, *recv_cq;
	struct mr_shm_srq *srq;
	void *map;
	size_t map_len;
	struct mrc_ring_hdr *sq, *rq;
	uint32_t sq_size, rq_size;
	uint32_t sq_cons, rq_cons;    /* private consumer indices */
	struct mr_shm_qp_caps caps;
	bool broken;                  /* ring protocol violated: no longer served */
	bool db_busy;                 /* this poll found entries (shm_server_data.c drain_rung) */
	uint16_t db_idle;             /* polls in a row its doorbell bit found nothing */
	uint8_t db_hot;               /* DB_ASYM: polls left to read it after a clear */
	struct mr_shm_qp *next;
};

/* The daemon's own bits for QPs left with entries (shm_server_data.c drain_rung). */
struct mr_shm_retry {
	uint64_t sum[MRC_DB_SLOTS / 4096];
	uint64_t leaf[MRC_DB_SLOTS / 64];
};

struct mr_shm_session {
	int sock;
	uint32_t id;
	uint32_t pid;
	bool hello_done;
	bool closing;
	uint64_t mapped_bytes;
	/* What counts against the quotas (struct mr_shm_server_params). */
	uint32_t n_pd, n_mr, n_cq, n_qp;
	uint64_t n_wr, n_inline;
	struct mr_shm_htab h;
	struct mr_shm_qp *qps;
	struct mr_shm_cq *cqs;
	struct mr_shm_srq *srqs;
	struct mr_shm_mr *mrs;
	struct mr_shm_mr *last_mr;    /* lkey lookup cache (NULL when that MR goes) */
	struct mr_shm_mr **mr_hash;   /* lkey -> MR, mr_hash_mask + 1 chains (NULL: walk mrs) */
	uint32_t mr_hash_mask;
	struct mrc_doorbell *db;      /* MRC_FEAT_DOORBELL: QPs served when rung; NULL: scanned */
	struct mr_shm_retry *db_again; /* with db: QPs to serve again (private, same layout) */
	struct mr_shm_retry *db_pend; /* DB_ASYM: QPs to read after the next barrier; else NULL */
	bool db_pend_any;             /* db_pend has a bit set */
	struct mr_shm_session *next;
	struct mr_shm_server *srv;
};

struct mr_shm_server {
	int lsock;
	int epfd;
	struct sockaddr_un addr;
	const struct mr_shm_backend_ops *ops;
	void *be;
	uint32_t max_sessions, max_objects, ctl_every;
	uint64_t max_session_bytes;
	uint32_t q_pd, q_mr, q_cq, q_qp;  /* per-session quotas, 0 = none */
	uint64_t q_wr, q_inline;
	uint32_t nsessions;
	uint32_t next_id;
	uint64_t iter;
	bool db_asym;                 /* grant MRC_FEAT_DB_ASYM (params, and the kernel has it) */
	uint64_t db_period_ns;        /* barrier period (shm_server.c db_barrier_due) */
	uint64_t db_pend_t0;          /* when a QP first waited for the next barrier; 0 = none */
	uint32_t db_polls;            /* polls since the last clock read while one waits */
	struct mr_shm_session *sessions;
	struct mr_shm_server_stats st;
};

static inline uint32_t mr_shm_lkey_hash(uint32_t lkey, uint32_t mask)
{
	return ((lkey * 2654435761u) >> 12) & mask;
}

/* The session's MR with this L_Key, or NULL: O(1) on the data path whatever the number of MRs
 * (a list walk took 19 % of an engine at 1024 QPs with one MR each). */
static inline struct mr_shm_mr *mr_shm_mr_find(const struct mr_shm_session *s, uint32_t lkey)
{
	struct mr_shm_mr *mr;

	if (s->mr_hash == NULL) {
		for (mr = s->mrs; mr != NULL && mr->lkey != lkey; mr = mr->next)
			;
		return mr;
	}
	for (mr = s->mr_hash[mr_shm_lkey_hash(lkey, s->mr_hash_mask)]; mr != NULL &&
	     mr->lkey != lkey; mr = mr->hnext)
		;
	return mr;
}

/* shm_server_ctl.c: handle one received message; fills resp and the fds to send back.
 * Consumes (closes or keeps) every fd in fds. */
void mr_shm_ctl_handle(struct mr_shm_session *s, const void *msg, size_t len, int *fds,
		       unsigned int nfds, struct mrc_ctl_resp *resp, int *out_fd);
/* Releases every object of a session through the backend (QPs to ERR first). */
void mr_shm_session_reclaim(struct mr_shm_session *s);

/* shm_server_data.c */
int mr_shm_session_poll_data(struct mr_shm_session *s);
/* Moves backend completions of cq into its ring (as many as fit); returns how many. */
int mr_shm_cq_drain(struct mr_shm_session *s, struct mr_shm_cq *cq);

#endif
