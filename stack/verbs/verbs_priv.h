/* SPDX-License-Identifier: MIT
 * libibverbs-compatible library over libmetaroce: internal objects. Never installed.
 *
 * Every verbs object the application sees is embedded as the first member of ours, built
 * against the system's <infiniband/verbs.h> so that layouts are exactly Debian's rdma-core 44
 * ABI (the inline ibv_post_send()/ibv_poll_cq() of the stock binaries call through
 * ctx->ops, the extended calls through struct verbs_context placed before struct ibv_context).
 */
#ifndef MR_VERBS_PRIV_H
#define MR_VERBS_PRIV_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "metaroce/metaroce.h"

#define MV_EXPORT __attribute__((visibility("default")))

#define MV_PORT 1                /* one port per daemon */
#define MV_MAX_RD_ATOMIC 16      /* RC_MAX_RD_ATOMIC of the transport */
#define MV_VENDOR_ID 0x000000    /* no IEEE OUI of our own: 0 (rxe reports 0xXXXXXX too) */

/* One daemon socket = one device. The member after the ibv_device is where rdma-core's
 * struct verbs_device keeps its provider ops: NULL here, so that a provider library's
 * "is this my device" test (e.g. mlx5dv_is_supported) answers no instead of reading junk. */
struct mv_device {
	struct ibv_device dev;
	const void *provider_ops;      /* always NULL */
	char sock[108];
	struct mrc_port_attr port;     /* as seen by ibv_get_device_list() */
	uint64_t guid;                 /* network order, EUI-64 of the MAC */
	int index;
};

struct mv_context {
	struct verbs_context vctx;     /* .context is what the app holds */
	struct mv_device *dev;
	struct mrc_session *s;
	struct mrc_port_attr port;     /* refreshed by query_port */
	bool transport_set;            /* $METAROCE_TRANSPORT: MRC_QP_TRANSPORT at RTR */
	bool metaroce;                 /* ... = metaroce (else plain RC) */
	uint16_t n_entropies;
	uint8_t cc;
	/* Live MRs: ibv_close_device() with MRs left gives their pages back to the process. */
	pthread_mutex_t mr_lock;
	struct mv_mr *mrs;
	struct mv_pd *pds;             /* under mr_lock: freed by ibv_close_device if left */
};

struct mv_pd {
	struct ibv_pd pd;
	struct mrc_pd *m;
	struct mv_pd *prev, *next;     /* mv_context.pds */
};

struct mv_mr {
	struct ibv_mr mr;
	struct mrc_mr *m;
	struct mrc_buf *view;          /* daemon window over the remapped pages */
	uintptr_t pg_start, pg_end;    /* page range pinned in the remap table */
	struct mv_mr *prev, *next;     /* mv_context.mrs */
};

struct mv_cq {
	struct ibv_cq_ex cq;           /* ibv_cq is its prefix (ibv_cq_ex_to_cq) */
	struct mrc_cq *m;
	struct mv_context *ctx;
	/* ibv_cq_ex polling: completions read ahead of the application */
	struct mr_wc cur[32];
	int ncur, icur;
};

struct mv_srq {
	struct ibv_srq srq;
	struct mrc_srq *m;
	struct mv_context *ctx;
	pthread_mutex_t lock;          /* ibv_post_srq_recv may be called from any thread */
	uint32_t max_wr, max_sge;      /* granted */
	uint32_t limit;                /* IBV_SRQ_LIMIT: kept and reported, no event yet */
};

struct mv_qp {
	struct ibv_qp_ex qpx;          /* ibv_qp is its prefix (ibv_qp_to_qp_ex) */
	struct mrc_qp *m;
	struct mv_context *ctx;
	struct ibv_qp_cap cap;
	bool sq_sig_all;
	struct mrc_qp_attr attr;       /* last attributes set (ibv_query_qp of what the daemon
	                                * does not report, e.g. the GRH sgid_index) */
	uint8_t sgid_index;
	/* ibv_wr_* batch between wr_start and wr_complete */
	struct mr_send_wr *wr;
	uint8_t *inl;                  /* wr_cap * MRC_SQE_INLINE_MAX bytes */
	uint32_t nwr, wr_cap;
	int wr_err;
};

static inline struct mv_context *mv_ctx(struct ibv_context *c)
{
	return (struct mv_context *)((uint8_t *)c - __builtin_offsetof(struct mv_context,
								   vctx.context));
}

/* Exported for perftest (IBVERBS_PRIVATE_34; rdma-core declares it in its uninstalled
 * driver.h with enum ibv_gid_type_sysfs *type: 0 = IB/RoCE v1, 1 = RoCE v2). */
int ibv_query_gid_type(struct ibv_context *context, uint8_t port, unsigned int index, int *type);

/* device.c */
int mv_query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *a, size_t len);
int mv_query_device_ex(struct ibv_context *c, const struct ibv_query_device_ex_input *in,
		       struct ibv_device_attr_ex *a, size_t len);
enum ibv_mtu mv_mtu_enum(uint32_t bytes);
/* GID table: index i of the rxe-like table, false when i is beyond it. */
bool mv_gid(const struct mrc_port_attr *p, unsigned int i, union ibv_gid *gid,
	    enum ibv_gid_type *type);
unsigned int mv_gid_count(const struct mrc_port_attr *p);

/* cq.c */
int mv_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int mv_req_notify_cq(struct ibv_cq *cq, int solicited_only);
struct ibv_cq_ex *mv_create_cq_ex(struct ibv_context *c, struct ibv_cq_init_attr_ex *a);

/* qp.c */
struct ibv_qp *mv_create_qp_ex(struct ibv_context *c, struct ibv_qp_init_attr_ex *a);

/* post.c */
int mv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int mv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int mv_recv_wr_from(struct mr_recv_wr *m, const struct ibv_recv_wr *w);
void mv_qp_ex_init(struct mv_qp *q);
void mv_qp_ex_fini(struct mv_qp *q);

/* srq.c */
int mv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);

/* mr.c */
void mv_mrs_release(struct mv_context *c);
void mv_pd_unlink(struct mv_context *c, struct mv_pd *pd);

/* mem_remap.c: see the comment there */
int mv_remap_get(uintptr_t start, uintptr_t end, int *fd, char *err, size_t errlen);
void mv_remap_put(uintptr_t start, uintptr_t end);

/* errno from a negative mrc return, logged when $METAROCE_VERBS_DEBUG is set */
int mv_err(struct mrc_session *s, int rc, const char *what);
void mv_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Always printed (stderr, "metaroce: ..."): why a call the application made was refused. */
void mv_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
