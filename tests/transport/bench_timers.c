/* SPDX-License-Identifier: MIT
 * Timer cost per call with N armed QPs in one ctx (docs/performance.md "Timers"). Public API
 * only, so the same source measures any version of the transport.
 *
 *   bench_timers N idle [calls]  N QPs, each with an unacknowledged SEND (local ACK timer
 *                                armed, IBA 9.7.6.1.3), none due: `calls` times
 *                                mr_ctx_next_expiry() + mr_ctx_on_timer(now): the poll loop's
 *                                overhead (the daemon asks for the next expiry every loop).
 *   bench_timers N fire          the same QPs with staggered deadlines and a peer that never
 *                                answers: jump to each expiry and run it, one QP due per call,
 *                                until every QP has exhausted retry_cnt and gone to ERR.
 *
 * Wall time is printed, but it depends on the machine's load; instruction counts do not:
 *   valgrind --tool=callgrind --toggle-collect=mr_ctx_next_expiry \
 *            --toggle-collect=mr_ctx_on_timer build/tests/transport/bench_timers 1024 idle
 * and divide the collected Ir by the calls printed (scripts in docs/performance.md).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "transport/rc.h"

#define STEP_NS 1000u      /* between two QPs' first sends: staggered ACK deadlines */
#define TIMEOUT_CODE 14    /* local ACK timeout 4.096 us * 2^14 = 67 ms >> N * STEP_NS */

static void die(const char *what)
{
	fprintf(stderr, "bench_timers: %s failed\n", what);
	exit(1);
}

static struct mr_qp *make_qp(struct mr_ctx *ctx, struct mr_pd *pd, struct mr_cq *cq, uint32_t i)
{
	struct mr_qp_init_attr ia = {
		.pd = pd, .send_cq = cq, .recv_cq = cq, .max_send_wr = 4, .max_recv_wr = 4,
	};
	struct mr_qp_attr a;
	struct mr_qp *qp = mr_qp_create(ctx, &ia);

	if (qp == NULL)
		die("mr_qp_create");
	memset(&a, 0, sizeof(a));
	a.qp_state = MR_QPS_INIT;
	if (mr_qp_modify(qp, &a, MR_QP_STATE | MR_QP_PKEY_INDEX | MR_QP_ACCESS_FLAGS))
		die("INIT");
	a.qp_state = MR_QPS_RTR;
	a.path_mtu = 1024;
	a.dest_qp_num = 0x10000 + i; /* nobody: every request is lost */
	a.rq_psn = 1;
	a.min_rnr_timer = 1;
	if (mr_qp_modify(qp, &a, MR_QP_STATE | MR_QP_PATH | MR_QP_PATH_MTU | MR_QP_DEST_QPN |
				 MR_QP_RQ_PSN | MR_QP_MAX_DEST_RD_ATOMIC | MR_QP_MIN_RNR_TIMER))
		die("RTR");
	a.qp_state = MR_QPS_RTS;
	a.sq_psn = 1;
	a.timeout = TIMEOUT_CODE;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	if (mr_qp_modify(qp, &a, MR_QP_STATE | MR_QP_SQ_PSN | MR_QP_TIMEOUT | MR_QP_RETRY_CNT |
				 MR_QP_RNR_RETRY | MR_QP_MAX_QP_RD_ATOMIC))
		die("RTS");
	return qp;
}

static uint32_t drain(struct mr_ctx *ctx, uint64_t now)
{
	struct mr_tx_pkt out;
	uint32_t n = 0;

	while (mr_ctx_tx(ctx, now, &out) == 1)
		n++;
	return n;
}

static double ns_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e9 + (double)(t1.tv_nsec - t0->tv_nsec);
}

int main(int argc, char **argv)
{
	uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 1024;
	const char *mode = argc > 2 ? argv[2] : "idle";
	uint64_t calls = argc > 3 ? strtoull(argv[3], NULL, 0) : 1000, done = 0, now = 0, sink = 0;
	struct mr_ctx_params p = { .max_qp = n, .first_qpn = 16, .max_mr = 4, .seed = 1 };
	struct mr_send_wr wr = { .opcode = MR_WR_SEND, .send_flags = MR_SEND_SIGNALED };
	struct timespec t0;
	struct mr_ctx *ctx;
	struct mr_cq *cq;
	struct mr_pd *pd;

	if (n == 0 || (strcmp(mode, "idle") != 0 && strcmp(mode, "fire") != 0)) {
		fprintf(stderr, "usage: bench_timers N idle|fire [calls]\n");
		return 2;
	}
	ctx = mr_ctx_create(&p);
	if (ctx == NULL)
		die("mr_ctx_create");
	pd = mr_pd_alloc(ctx);
	cq = mr_cq_create(ctx, 2 * n + 16);
	if (pd == NULL || cq == NULL)
		die("pd/cq");
	/* QP i sends a zero-length SEND at i * STEP_NS: its ACK timer expires STEP_NS after
	 * QP i-1's. */
	for (uint32_t i = 0; i < n; i++) {
		struct mr_qp *qp = make_qp(ctx, pd, cq, i);

		now = (uint64_t)i * STEP_NS;
		wr.wr_id = i;
		if (mr_post_send(qp, &wr) != 0 || drain(ctx, now) != 1)
			die("first send");
	}
	now++;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (strcmp(mode, "idle") == 0) {
		for (done = 0; done < calls; done++) {
			sink += mr_ctx_next_expiry(ctx) <= now;
			mr_ctx_on_timer(ctx, now);
		}
		if (sink != 0)
			die("idle: a timer was due");
	} else {
		for (;;) {
			uint64_t t = mr_ctx_next_expiry(ctx);

			if (t == UINT64_MAX)
				break;
			now = t > now ? t : now;
			mr_ctx_on_timer(ctx, now);
			done++;
			sink += drain(ctx, now); /* the retransmissions (outside the measured calls) */
		}
		/* Every QP: the first send, retry_cnt resends, then retry exceeded (C9-141). */
		if (sink != 7ull * n)
			die("fire: unexpected retransmission count");
	}
	printf("n_qp %u mode %s calls %llu (each: next_expiry + on_timer) wall %.1f ns/call\n", n,
	       mode, (unsigned long long)done, ns_since(&t0) / (double)(done ? done : 1));
	mr_ctx_destroy(ctx);
	return 0;
}
