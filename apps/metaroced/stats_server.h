/* SPDX-License-Identifier: MIT
 * metaroced's stats socket: `<socket>.stats`, a second filesystem UNIX socket next to the apps'
 * one (so it is reachable from any namespace that sees the file, like the daemon itself), served
 * by the control thread from the shards' snapshots: nothing on the data path waits for a
 * reader. mrstat is its client.
 *
 * Protocol (SOCK_SEQPACKET): the client sends one request, "stats" or "reset"; the daemon
 * answers with text lines in one or more messages and closes:
 *   metaroce-stats 1          header
 *   section NAME [ID]         link | port 1 | shard N | qp QPN
 *   s KEY VALUE...            a string (the rest of the line)
 *   c KEY N                   a counter (since the last reset)
 *   g KEY N                   a gauge (a value now; 18446744073709551615 = unlimited)
 *   end
 * "reset" makes the current counter values the new zero (per counter, per QP; the daemon's
 * own dumps and --stats-json keep the raw values) and answers "ok".
 */
#ifndef MR_DAEMON_STATS_SERVER_H
#define MR_DAEMON_STATS_SERVER_H

#include <stdint.h>
#include <stdio.h>

#include "daemon.h"

#define MR_STATS_SOCK_SUFFIX ".stats"

struct mr_stats_base;

struct mr_stats_srv {
	int lsock;
	char path[108];
	struct mr_stats_base *base;  /* counter values at the last reset, or NULL */
	uint64_t served, errors;
};

/* Listen on sock_path + ".stats". 0 or negative errno (lsock stays -1). */
int mr_stats_srv_open(struct mr_stats_srv *s, const char *sock_path);
void mr_stats_srv_close(struct mr_stats_srv *s);
/* Collects snapshots when needed (the control thread's collect()). */
typedef void (*mr_stats_collect_fn)(void *arg);
/* Serve every client waiting on the listening socket. */
void mr_stats_srv_serve(struct mr_stats_srv *s, struct mr_daemon *const *shards, unsigned int n,
			mr_stats_collect_fn collect, void *arg);
/* The document for the snapshots in shards[] (already collected), counters minus base. */
void mr_stats_doc_write(FILE *f, const struct mr_stats_view *v, struct mr_stats_base *base);

#endif
