/* SPDX-License-Identifier: MIT
 * mrstat's views of a stats document: `rdma statistic show`-like summary, `ethtool -S`-like port
 * and shard lists, a QP table, the device/port view (`rdma link show` + `ibv_devinfo`), and
 * JSON. With a previous document, counters get per-second rates (--watch).
 */
#ifndef MR_MRSTAT_RENDER_H
#define MR_MRSTAT_RENDER_H

#include <stdbool.h>
#include <stdio.h>

#include "stats_doc.h"

enum mr_view { MR_VIEW_SUMMARY, MR_VIEW_PORT, MR_VIEW_QP, MR_VIEW_SHARD, MR_VIEW_LINK };

struct mr_render_opts {
	enum mr_view view;
	bool json;
	bool verbose;      /* qp: every counter of every QP */
	bool nonzero;      /* only counters that are (or, watching, change) non-zero */
};

/* prev: the previous document when watching (rates), else NULL. */
void mr_render(FILE *f, const struct mr_doc *d, const struct mr_doc *prev,
	       const struct mr_render_opts *o);
/* The counters of the summary view (rxe `rdma statistic` and mlx5 names first). */
extern const char *const mr_summary_names[];

#endif
