/* SPDX-License-Identifier: MIT
 * Test harness: an shm server with the fake backend, polled by a thread of the test process
 * (the daemon's engine loop in miniature), so tests drive the real client library over a
 * real socket and real shared memory.
 */
#ifndef TESTS_SHM_HARNESS_H
#define TESTS_SHM_HARNESS_H

#include <stdatomic.h>
#include <stdbool.h>

#include "fake_backend.h"

struct harness {
	struct fake_backend fb;
	struct mr_shm_server *srv;
	pthread_t thread;
	atomic_bool stop;
	atomic_bool busy;     /* pure busy polling (benchmarks); default: idle back-off */
	char path[108];
};

/* Starts server + poll thread; returns 0 or -errno. */
int harness_start(struct harness *h);
/* The same with the per-session quotas (max_session_*) and db_barrier_ms of q. */
int harness_start_quota(struct harness *h, const struct mr_shm_server_params *q);
void harness_stop(struct harness *h);
/* Polls cond(h, arg) under the backend lock for up to timeout_ms; true once it holds. */
bool harness_wait(struct harness *h, bool (*cond)(struct harness *h, void *arg), void *arg,
		  int timeout_ms);

#endif
