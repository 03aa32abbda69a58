/* SPDX-License-Identifier: MIT
 * mrperf's verbs side over libmetaroce (mrc_*): resources, QP connection from the exchanged
 * parameters, and the measurement loops (perftest's run_iter_bw / run_iter_lat_* semantics).
 */
#ifndef MRPERF_PERF_H
#define MRPERF_PERF_H

#include <stdbool.h>
#include <stdint.h>

#include "args.h"
#include "exchange.h"
#include "report.h"



struct mrc_session;
struct mrc_pd;
struct mrc_cq;
struct mrc_qp;
struct mrc_mr;
struct mrc_srq;

struct mr_perf_qp {
	struct mrc_qp *qp;
	struct mrc_mr *mr;
	uint8_t *buf;      /* [0, half): local source/sink; [half, 2 half): the peer's target */
	size_t half;
	struct mr_pt_dest mine;
	struct mr_pt_dest rem;
};

struct mr_perf_ctx {
	const struct mr_perf_args *a;
	enum mr_perf_verb verb;
	bool client;
	struct mrc_session *s;
	struct mrc_pd *pd;
	struct mrc_cq *scq;
	struct mrc_cq *rcq;
	uint32_t port_mtu;
	uint8_t gid[16];
	unsigned gid_index;  /* of gid in the daemon's table (1: IPv4-mapped; --ipv6: an IPv6 one) */
	struct mrc_srq *srq; /* --use-srq */
	uint64_t cq_events;  /* -e: wake-ups on a CQ event fd */
	unsigned nqp;
	struct mr_perf_qp qp[MR_PERF_MAX_QPS];
	uint64_t verified;   /* --verify: bytes checked */
	uint64_t corrupted;  /* --verify: bytes that differed */
	/* Negotiated in the setup exchange (negotiate.h); set before mr_perf_connect. */
	bool metaroce;
	uint16_t n_entropies;
	uint8_t cc;          /* enum mrc_cc_algo */
	char err[256];       /* last failure, in words */
	/* -D: the setup connection; on the passive side of a test the peer's end-of-test
	 * exchange arriving on it ends the run (perftest's peers stop on their own clocks). */
	int peer_fd;
	uint64_t done_check_ns;
};

enum mr_perf_verb mr_perf_verb_of(enum mr_pt_test t);

/* Session, PD, CQs, QPs and buffers (largest message size max_size); fills each qp's mine.
 * 0 or -errno with ctx->err set. */
int mr_perf_open(struct mr_perf_ctx *c, const struct mr_perf_args *a, uint64_t max_size);
void mr_perf_close(struct mr_perf_ctx *c);
/* INIT -> RTR -> RTS towards each qp's rem at path MTU mtu (IBA 10.3.1). */
int mr_perf_connect(struct mr_perf_ctx *c, uint32_t mtu);

/* Requester bandwidth loop (write/read/send/atomic): iters messages of size per QP (or for
 * duration seconds), tx_depth outstanding, one signalled per cq_mod, post_list WRs per post.
 * With -b on a send test it also takes (and re-posts) the peer's messages: receives must have
 * been posted before the start barrier. */
int mr_perf_bw_client(struct mr_perf_ctx *c, uint64_t size, struct mr_pt_bw_report *out);
/* Pre-post receives for send tests (before the sync hand shake). */
int mr_perf_post_recvs(struct mr_perf_ctx *c, uint64_t size);
/* send_bw server: consume iters receives per QP (re-posting), measure. With
 * --run_infinitely it prints a row every -D seconds and returns only on an error. */
int mr_perf_bw_send_server(struct mr_perf_ctx *c, uint64_t size, struct mr_pt_bw_report *out);
/* Latency loop; fills n one-way samples (usec) into out. */
int mr_perf_lat(struct mr_perf_ctx *c, uint64_t size, struct mr_lat_stats *out);
/* --verify checks of what a passive side received (write target region). */
void mr_perf_verify_target(struct mr_perf_ctx *c, uint64_t size);

#endif
