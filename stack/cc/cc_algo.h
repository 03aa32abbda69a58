/* SPDX-License-Identifier: MIT
 * Private to stack/cc: the per-algorithm ops tables that mr_cc_init dispatches to.
 * Each algorithm keeps its state in struct mr_cc.u[] and static-asserts that it fits.
 */
#ifndef MR_CC_ALGO_H
#define MR_CC_ALGO_H

#include "cc/cc.h"

extern const struct mr_cc_ops mr_cc_none_ops;
extern const struct mr_cc_ops mr_cc_dcqcn_ops;
extern const struct mr_cc_ops mr_cc_metaroce_ops;

/* Bits in `bytes` at `rate_bps`, in ns, rounded up so pacing never exceeds the rate. */
uint64_t mr_cc_tx_time_ns(uint64_t bytes, uint64_t rate_bps);

/* Set a new pacing rate at `now`. On an increase the wait already scheduled for the last
 * packet shrinks in proportion (a flow that sent at 1 Mb/s must not sit out its old 32 ms gap
 * after recovering); a decrease leaves it: the packet has already left. */
void mr_cc_set_rate(struct mr_cc *cc, uint64_t now, uint64_t rate_bps);

#endif
