/* SPDX-License-Identifier: MIT
 * Shared between the tc eBPF program (mr_tc_impair.bpf.c) and its loader (mrbpf.c): the
 * configuration map value and the counter slots. Fixed-width types only (BPF and user space). */
#ifndef MR_TC_IMPAIR_H
#define MR_TC_IMPAIR_H

#include <linux/types.h>

#define MR_BPF_ROCE_PORT 4791

struct mr_bpf_cfg {
	__u32 loss_thresh;   /* drop when prandom_u32 < this (probability * 2^32) */
	__u32 ecn_thresh;    /* CE-mark an ECT packet when prandom_u32 < this */
};

enum mr_bpf_stat {
	MR_BPF_STAT_SEEN = 0,   /* RoCE v2 packets inspected */
	MR_BPF_STAT_DROPPED,
	MR_BPF_STAT_MARKED,
	MR_BPF_STAT_NOT_ECT,    /* Not-ECT packets seen while marking is on: left alone */
	MR_BPF_NR_STATS
};

#endif
