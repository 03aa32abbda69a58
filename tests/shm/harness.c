/* SPDX-License-Identifier: MIT
 * Test harness: shm server + fake backend in a poll thread (see harness.h).
 */
#include "harness.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void *poll_main(void *arg)
{
	struct harness *h = arg;
	unsigned int idle = 0;

	while (!atomic_load(&h->stop)) {
		/* Short sleeps when idle so the tests' own threads get the CPU on 2 cores. */
		if (mr_shm_server_poll(h->srv) > 0)
			idle = 0;
		else if (++idle > 64 && !atomic_load_explicit(&h->busy, memory_order_relaxed))
			usleep(100);
	}
	return NULL;
}

int harness_start(struct harness *h)
{
	return harness_start_quota(h, NULL);
}

int harness_start_quota(struct harness *h, const struct mr_shm_server_params *q)
{
	static unsigned int serial;
	struct mr_shm_server_params p = { 0 };

	memset(h, 0, sizeof(*h));
	fake_init(&h->fb);
	snprintf(h->path, sizeof(h->path), "/tmp/mrshm-test-%d-%u.sock", (int)getpid(),
		 serial++);
	p.sock_path = h->path;
	p.ops = &fake_ops;
	p.backend = &h->fb;
	p.ctl_every = 1;
	p.max_objects = 256;
	p.db_asym = true; /* as metaroced: the fence-free doorbell (METAROCE_NO_DB_ASYM=1: not) */
	if (q != NULL) {
		p.db_barrier_ms = q->db_barrier_ms;
		p.max_session_pd = q->max_session_pd;
		p.max_session_mr = q->max_session_mr;
		p.max_session_cq = q->max_session_cq;
		p.max_session_qp = q->max_session_qp;
		p.max_session_wr = q->max_session_wr;
		p.max_session_inline = q->max_session_inline;
	}
	h->srv = mr_shm_server_create(&p);
	if (h->srv == NULL)
		return -errno;
	atomic_store(&h->stop, false);
	if (pthread_create(&h->thread, NULL, poll_main, h) != 0) {
		mr_shm_server_destroy(h->srv);
		return -EAGAIN;
	}
	return 0;
}

void harness_stop(struct harness *h)
{
	/* A failed assertion may have left the test holding the backend lock. */
	pthread_mutex_unlock(&h->fb.lock);
	atomic_store(&h->stop, true);
	pthread_join(h->thread, NULL);
	mr_shm_server_destroy(h->srv);
	fake_fini(&h->fb);
}

bool harness_wait(struct harness *h, bool (*cond)(struct harness *h, void *arg), void *arg,
		  int timeout_ms)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		bool ok;

		fake_lock(&h->fb);
		ok = cond(h, arg);
		fake_unlock(&h->fb);
		if (ok)
			return true;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > timeout_ms)
			return false;
		usleep(200);
	}
}
