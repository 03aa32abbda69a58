/* SPDX-License-Identifier: MIT
 * metaroced control thread: with more than one engine shard it accepts app sessions on the
 * listening socket (lsock) and places each on the shard with the fewest sessions; always (one
 * shard too) it serves the stats socket, SIGUSR1 dumps, --stats-every and --stats-json from
 * snapshots the shards take of themselves.
 */
#ifndef MR_DAEMON_CONTROL_H
#define MR_DAEMON_CONTROL_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include "daemon.h"
#include "stats_server.h"

struct mr_control {
	struct mr_daemon **shards;
	unsigned int n;
	int lsock;                       /* listening socket (mr_shm_listen) */
	uint32_t max_sessions;           /* [limits] max_sessions, daemon-wide */
	uint64_t stats_every_ns;         /* 0: off */
	volatile sig_atomic_t *stop, *dump;
	struct mr_stats_srv stats;       /* <socket>.stats (lsock -1: none) */
	bool telemetry;                  /* --telemetry: publish for DPDK telemetry once a second */
	/* private to the control thread */
	uint64_t handed[MR_CFG_MAX_LCORES];  /* sockets put on shard i's fd ring */
	uint32_t snap_seq;
	uint64_t accepted, refused;
	pthread_t tid;
};

/* Start the thread. 0 or negative errno. */
int mr_control_start(struct mr_control *c);
/* Wait for it to end (after *stop was set). */
void mr_control_join(struct mr_control *c);

#endif
