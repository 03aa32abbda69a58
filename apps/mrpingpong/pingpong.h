/* SPDX-License-Identifier: MIT
 * mrpingpong's verbs side over libmetaroce: rdma-core's rc_pingpong (libibverbs/examples)
 * semantics on a metaroced RC QP - one buffer for sends and receives, rx_depth receives kept
 * posted, one SEND in flight, the client sends first, each side sends after its previous SEND
 * completed and the peer's message arrived.
 */
#ifndef MRPINGPONG_PINGPONG_H
#define MRPINGPONG_PINGPONG_H

#include <stdint.h>

#include "exchange.h"
#include "ppargs.h"

struct mrc_session;
struct mrc_pd;
struct mrc_cq;
struct mrc_qp;
struct mrc_mr;

struct mr_pp_ctx {
	const struct mr_pp_args *a;
	struct mrc_session *s;
	struct mrc_pd *pd;
	struct mrc_cq *cq;     /* one CQ for sends and receives, as rc_pingpong */
	struct mrc_qp *qp;
	struct mrc_mr *mr;
	uint8_t *buf;
	uint32_t port_mtu;
	uint32_t routs;        /* receives posted and not yet completed */
	struct mr_pp_dest mine;
	char err[256];
};

/* Session, PD, CQ, QP (INIT), buffer, rx_depth receives; fills mine (QPN, random PSN, the GID
 * at a->gid_index or zeros). 0 or -errno with ctx->err set. */
int mr_pp_open(struct mr_pp_ctx *c, const struct mr_pp_args *a);
void mr_pp_close(struct mr_pp_ctx *c);
/* RTR -> RTS towards rem with rc_pingpong's attributes (pp_connect_ctx). */
int mr_pp_connect(struct mr_pp_ctx *c, const struct mr_pp_dest *rem);
/* The ping-pong loop; *usec = wall time from the first post to the last completion. */
int mr_pp_run(struct mr_pp_ctx *c, double *usec);

#endif
