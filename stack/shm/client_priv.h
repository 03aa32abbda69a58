/* SPDX-License-Identifier: MIT
 * libmetaroce internals shared by client*.c. Never installed.
 */
#ifndef MR_SHM_CLIENT_PRIV_H
#define MR_SHM_CLIENT_PRIV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metaroce/metaroce.h"
#include "metaroce/shm_abi.h"

/* client_embed.c: the embedded engine's poll (NULL without one), and its start for mrc_open:
 * 0 (no $METAROCE_ENGINE), 1 with *sock its socket, or a negative errno (said on stderr). */
extern int (*mrc_embed_poll_fn)(void);
/* ... and its helper thread's wake-up: the app is about to block (event wait, control call). */
extern void (*mrc_embed_kick_fn)(void);
int mrc_embed_open(const char **sock);
/* The app polls (every mrc_poll_cq and mrc_progress): the module's helper thread only takes
 * over the engine when this stops moving. A plain increment, no locked add: the helper needs
 * to see a change, and one lost among several polling threads still is one. */
extern _Atomic uint64_t mrc_embed_polls;
static inline void mrc_embed_bump(_Atomic uint64_t *c)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}
static inline void mrc_embed_note_poll(void)
{
	mrc_embed_bump(&mrc_embed_polls);
}
/* The app posted (every SQ, RQ and SRQ publish) while an engine runs in this process: its
 * idle polls skip the engine's transmit half until this moves (apps/metaroced/embed.c). The
 * same plain increment: a change is all the engine looks for. */
extern _Atomic uint64_t mrc_embed_posts;
static inline void mrc_embed_note_post(void)
{
	if (mrc_embed_poll_fn != NULL)
		mrc_embed_bump(&mrc_embed_posts);
}

enum mrc_obj_type { MRC_OBJ_BUF = 1, MRC_OBJ_PD, MRC_OBJ_MR, MRC_OBJ_CQ, MRC_OBJ_QP, MRC_OBJ_SRQ };

/* Every client object starts with this link: mrc_close() frees what the app left open. */
struct mrc_obj {
	struct mrc_obj *prev, *next;
	int type;
	struct mrc_session *s;
	uint32_t handle;   /* the daemon's per-session handle */
};

struct mrc_buf {
	struct mrc_obj o;
	uint8_t *addr;
	size_t len;
	uint32_t mr_refs;
	uint64_t iova;      /* the daemon's app_addr for this buffer (addr unless remapped) */
	bool foreign;       /* mapped by the caller (mrc_map_memfd): never unmapped here */
};

struct mrc_pd {
	struct mrc_obj o;
};

struct mrc_mr {
	struct mrc_obj o;
	struct mrc_pd *pd;
	struct mrc_buf *buf;
	uint32_t lkey, rkey;
};

struct mrc_cq {
	struct mrc_obj o;
	int evfd;
	void *map;
	size_t map_len;
	struct mrc_ring_hdr *ring;
	uint32_t size, mask;
	uint32_t cons;          /* private consumer index */
	uint32_t notify_seq;
	uint32_t qp_refs;
};

struct mrc_srq {
	struct mrc_obj o;
	struct mrc_pd *pd;
	void *map;
	size_t map_len;
	struct mrc_ring_hdr *ring;
	uint32_t size, prod, max_sge; /* private producer index */
	uint32_t cons_seen;           /* mrc_ring_free_seen */
	uint32_t qp_refs;
};

struct mrc_qp {
	struct mrc_obj o;
	struct mrc_pd *pd;
	struct mrc_cq *send_cq, *recv_cq;
	struct mrc_srq *srq;        /* receives go to the SRQ instead of the RQ ring */
	uint32_t qp_num;
	uint32_t db_slot;           /* mrc_db_slot(o.handle) */
	void *map;
	size_t map_len;
	struct mrc_ring_hdr *sq, *rq;
	uint32_t sq_size, rq_size;
	uint32_t sq_prod, rq_prod;  /* private producer indices */
	uint32_t sq_cons_seen, rq_cons_seen; /* mrc_ring_free_seen */
	uint32_t max_inline_data, max_send_sge, max_recv_sge;
	uint32_t state;             /* as last set or queried (enum mr_qp_state) */
	uint32_t path_mtu;          /* as last set (0: not yet), for the READ length check */
	bool metaroce;              /* MRC_TRANSPORT_METAROCE agreed at INIT->RTR */
};

struct mrc_session {
	int sock;
	pthread_mutex_t lock;       /* serialises control requests */
	uint32_t seq;
	uint32_t id;
	uint32_t features;          /* MRC_FEAT_* from HELLO */
	struct mrc_doorbell *db;    /* MRC_FEAT_DOORBELL: rung after each post; else NULL */
	bool db_asym;               /* MRC_FEAT_DB_ASYM: mrc_db_ring_asym (no fence if set) */
	struct mrc_obj objs;        /* list head */
	char err[256];
};

/* client.c */
/* Records "fmt..." as the session's last error and returns -err (err is a positive errno). */
int mrc_fail(struct mrc_session *s, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* One request/response exchange. fd_in: descriptor to pass or -1; *fd_out receives the
 * response's descriptor (or -1) when fd_out is non-NULL. Returns the daemon's status or a
 * transport error (-ECONNRESET daemon gone, -ETIMEDOUT no answer). */
int mrc_rpc(struct mrc_session *s, uint16_t op, struct mrc_ctl_req *req, int fd_in,
	    struct mrc_ctl_resp *resp, int *fd_out);
void mrc_obj_link(struct mrc_session *s, struct mrc_obj *o, int type, uint32_t handle);
void mrc_obj_unlink(struct mrc_obj *o);
/* Frees client-side resources of an object (no request to the daemon). */
void mrc_obj_free(struct mrc_obj *o);
const char *mrc_op_name(uint16_t op);

#endif
