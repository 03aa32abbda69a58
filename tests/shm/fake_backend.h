/* SPDX-License-Identifier: MIT
 * A fake transport behind the shm server (the role TAS's tests/libtas harness plays): records
 * every backend call for the tests to inspect, lets tests inject completions, and optionally
 * executes RC operations between its own QPs by memcpy (loopback mode), so that data really
 * moves through the daemon's mappings of app memory.
 *
 * The server calls the ops from its thread; tests inspect from theirs: every access holds
 * fb->lock (tests: fake_lock()/fake_unlock()).
 */
#ifndef TESTS_SHM_FAKE_BACKEND_H
#define TESTS_SHM_FAKE_BACKEND_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "shm/shm_server.h"

#define FAKE_MAX 64
#define FAKE_MAX_MR 512 /* MRs over a test's life (never reused: distinct keys) */
#define FAKE_LOG 128
#define FAKE_CQ_CAP 1024

struct fake_pd {
	bool live;
	int id;
};

struct fake_mr {
	bool live;
	struct fake_pd *pd;
	uint8_t *host;
	uint64_t iova, len;
	uint32_t access, lkey, rkey;
};

struct fake_cq {
	bool live;
	uint32_t depth;
	struct mr_wc q[FAKE_CQ_CAP];
	uint32_t head, tail;
};

struct fake_qp {
	bool live;
	bool saw_err;            /* modified to ERR before destroy */
	uint32_t qpn;
	struct fake_pd *pd;
	struct fake_cq *scq, *rcq;
	struct mr_shm_qp_caps caps;
	struct mrc_qp_attr attr;
	uint32_t last_mask;
	uint32_t modifies;
	struct mr_recv_wr rq[64];   /* loopback mode: posted receives */
	uint32_t rq_head, rq_tail;
};

struct fake_backend {
	pthread_mutex_t lock;
	struct mrc_port_attr port;
	bool exec;                  /* loopback execution of posted WRs */
	int post_send_rc;           /* forced post_send result when nonzero */
	struct fake_pd pds[FAKE_MAX];
	struct fake_mr mrs[FAKE_MAX_MR];
	struct fake_cq *cqs[FAKE_MAX];
	struct fake_qp qps[FAKE_MAX];
	unsigned int n_pd, n_mr, n_cq, n_qp;        /* created so far (array fill) */
	unsigned int live_pd, live_mr, live_cq, live_qp;
	unsigned int destroyed_after_err;           /* QPs destroyed after a modify to ERR */
	struct mr_send_wr sends[FAKE_LOG];
	uint8_t inline_copy[FAKE_LOG][512];         /* inline payload copied during post_send */
	unsigned int n_sends;
	struct mr_recv_wr recvs[FAKE_LOG];
	unsigned int n_recvs;
};

extern const struct mr_shm_backend_ops fake_ops;

void fake_init(struct fake_backend *fb);
void fake_fini(struct fake_backend *fb);
void fake_lock(struct fake_backend *fb);
void fake_unlock(struct fake_backend *fb);
/* Queues a completion on the i-th CQ created (as the transport would). */
int fake_cq_push(struct fake_backend *fb, unsigned int cq_index, const struct mr_wc *wc);

#endif
