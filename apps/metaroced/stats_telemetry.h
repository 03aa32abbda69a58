/* SPDX-License-Identifier: MIT
 * metaroced --telemetry: DPDK telemetry (dpdk-telemetry.py -f mr<pid>) shows the port through
 * DPDK's own /ethdev/ commands and metaroce's counters through /metaroce/port and
 * /metaroce/link, the same names and values as mrstat. The telemetry thread never touches a
 * shard: the control thread publishes the stats document once a second (stats_server.h) and the
 * callbacks read that copy under a mutex (not on the data path).
 */
#ifndef MR_DAEMON_STATS_TELEMETRY_H
#define MR_DAEMON_STATS_TELEMETRY_H

#include "daemon.h"
#include "stats_server.h"

/* Register the /metaroce/ commands. 0 or negative errno. */
int mr_stats_telemetry_init(void);
/* The control thread's fresh view (snapshots collected), counters minus base. */
void mr_stats_telemetry_publish(const struct mr_stats_view *v, struct mr_stats_base *base);
void mr_stats_telemetry_fini(void);

#endif
