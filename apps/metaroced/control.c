/* SPDX-License-Identifier: MIT
 * metaroced control thread: the DESIGN.md "control thread" next to the engine lcores. It is a
 * plain pthread sharing the main lcore's CPU (it sleeps in poll() between events), never on the
 * data path: it touches no transport object. Sessions reach their shard as an fd over an SP/SC
 * ring; statistics come from snapshots each shard takes of its own objects when asked.
 */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_ring.h>

#include "control.h"
#include "log.h"
#include "shard_map.h"
#include "shm/shm_server.h"
#include "stats_telemetry.h"

#define CONTROL_POLL_MS 10
#define SNAP_WAIT_NS 2000000000ull
#define TELEMETRY_EVERY_NS 1000000000ull /* --telemetry: how fresh dpdk-telemetry.py's view is */  /* a shard descheduled this long: print what we have */

static void sleep_us(unsigned int us)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)us * 1000 };

	nanosleep(&ts, NULL);
}

/* Sessions per shard: adopted (as the shard published) plus those still on its fd ring. The
 * adopted count is read before the session count (shard.c publishes in the other order). */
static uint32_t shard_load(const struct mr_control *c, unsigned int i)
{
	uint64_t adopted = atomic_load_explicit(&c->shards[i]->pub_adopted, memory_order_acquire);
	uint32_t sessions = atomic_load_explicit(&c->shards[i]->pub_sessions,
						 memory_order_relaxed);

	return sessions + (uint32_t)(c->handed[i] > adopted ? c->handed[i] - adopted : 0);
}

static void place(struct mr_control *c, int fd)
{
	uint32_t load[MR_CFG_MAX_LCORES], total = 0;
	unsigned int i;

	for (i = 0; i < c->n; i++) {
		load[i] = shard_load(c, i);
		total += load[i];
	}
	/* [limits] max_sessions stays daemon-wide: the app sees EOF at HELLO, as unsharded. */
	if (total >= c->max_sessions) {
		close(fd);
		c->refused++;
		return;
	}
	i = mr_shard_pick(load, c->n);
	if (rte_ring_sp_enqueue(c->shards[i]->fd_ring, (void *)(intptr_t)(fd + 1)) != 0) {
		close(fd);
		c->refused++;
		return;
	}
	c->handed[i]++;
	c->accepted++;
	mr_log(MR_LOG_INFO, "session (fd %d) -> shard %u (lcore %u, load %u)", fd, i,
	       c->shards[i]->lcore, load[i]);
}

/* Ask every shard for a snapshot and wait for all of them. */
static void collect(void *arg)
{
	struct mr_control *c = arg;
	uint32_t seq = ++c->snap_seq;
	uint64_t t0 = mr_now_ns();
	unsigned int i;

	for (i = 0; i < c->n; i++)
		atomic_store_explicit(&c->shards[i]->snap_req, seq, memory_order_release);
	for (i = 0; i < c->n; i++) {
		while (atomic_load_explicit(&c->shards[i]->snap_done, memory_order_acquire) != seq) {
			if (mr_now_ns() - t0 > SNAP_WAIT_NS || *c->stop) {
				mr_log(MR_LOG_WARN, "shard %u did not answer a stats request", i);
				break;
			}
			sleep_us(50);
		}
	}
}

static void dump(struct mr_control *c, bool json)
{
	struct mr_stats_view v;
	const char *path = c->shards[0]->stats_json;
	int rc;

	collect(c);
	/* The snapshots are only written on request, and the last one was answered. */
	mr_stats_view_build(&v, c->shards, c->n);
	mr_stats_print_whole(&v, stdout, false);
	if (json && path != NULL && (rc = mr_stats_json_write(&v, path, false)) < 0)
		fprintf(stderr, "metaroced: stats json %s: %s\n", path, strerror(-rc));
}

static void *control_main(void *arg)
{
	struct mr_control *c = arg;
	uint64_t next_stats = c->stats_every_ns ? mr_now_ns() + c->stats_every_ns : UINT64_MAX;
	uint64_t next_tel = c->telemetry ? mr_now_ns() : UINT64_MAX;

	while (!*c->stop) {
		struct pollfd p[2] = {
			{ .fd = c->lsock, .events = POLLIN },
			{ .fd = c->stats.lsock, .events = POLLIN },
		};
		int fd;

		/* Signals may land on any thread: the timeout bounds how late we see the flags.
		 * poll() skips the negative fds (no session socket with one shard). */
		if (poll(p, 2, CONTROL_POLL_MS) > 0) {
			if (p[0].revents & POLLIN)
				while ((fd = mr_shm_accept(c->lsock)) >= 0)
					place(c, fd);
			if (p[1].revents & POLLIN)
				mr_stats_srv_serve(&c->stats, c->shards, c->n, collect, c);
		}
		if (*c->dump) {
			*c->dump = 0;
			dump(c, true);
		}
		if (mr_now_ns() >= next_stats) {
			dump(c, true); /* --stats-every with --stats-json: the JSON too */
			next_stats = mr_now_ns() + c->stats_every_ns;
		}
		if (mr_now_ns() >= next_tel) {
			struct mr_stats_view v;

			collect(c);
			mr_stats_view_build(&v, c->shards, c->n);
			mr_stats_telemetry_publish(&v, c->stats.base);
			next_tel = mr_now_ns() + TELEMETRY_EVERY_NS;
		}
	}
	return NULL;
}

int mr_control_start(struct mr_control *c)
{
	int rc = pthread_create(&c->tid, NULL, control_main, c);

	return rc == 0 ? 0 : -rc;
}

void mr_control_join(struct mr_control *c)
{
	pthread_join(c->tid, NULL);
}
