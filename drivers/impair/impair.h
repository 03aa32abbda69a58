/* SPDX-License-Identifier: MIT
 * A DPDK-free packet impairment stage any driver can put on its receive or transmit path (the
 * simulator, the DPDK daemon): per frame it returns a verdict (drop, deliver now, or held in a
 * small delay queue it owns) after applying seeded random loss, Gilbert-Elliott bursty loss,
 * per-entropy (per UDP source port) loss, reordering, duplication, bit corruption, delay and
 * jitter, and ECN CE marking from a modelled queue. Each direction has its own state (PRNG
 * stream, burst state, modelled queue, delay queue); one configuration applies to both.
 *
 * No I/O and no clock: the caller passes `now` (ns). Frames are Ethernet frames (optionally
 * 802.1Q) carrying IPv4 or IPv6; non-IP frames pass untouched.
 */
#ifndef MR_IMPAIR_H
#define MR_IMPAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MR_IMPAIR_MAX_ENTROPY_RULES 8
#define MR_IMPAIR_FRAME_MAX 10240        /* largest frame the delay queue accepts (jumbo) */
#define MR_IMPAIR_DEFAULT_QLIMIT 4096    /* frames the delay queue holds per direction */

enum mr_impair_dir {
	MR_IMPAIR_TX = 0,
	MR_IMPAIR_RX = 1,
	MR_IMPAIR_NR_DIRS
};

struct mr_impair_entropy_rule {
	uint16_t entropy;   /* matched against (udp_sport - entropy_base) mod 2^16 */
	double loss;        /* loss probability for matching frames */
};

struct mr_impair_cfg {
	double loss;                 /* independent per-frame loss */
	double burst;                /* mean burst length (frames) of Gilbert-Elliott loss, 0 = off;
				      * with it, `loss` is the overall (stationary) loss rate */
	double reorder;              /* probability a frame is held back reorder_ns extra */
	uint64_t reorder_ns;
	double dup;                  /* probability a delivered frame is sent twice */
	double corrupt;              /* probability one end-to-end protected bit flips (see
				      * mr_impair_bit_protected; any L3+ bit for non-RoCE) */
	uint64_t delay_ns;           /* fixed extra delay for every delivered frame */
	uint64_t jitter_ns;          /* extra delay uniform in [0, jitter_ns] (may reorder) */
	uint64_t ecn_rate_bps;       /* modelled queue drain rate, 0 = no ECN marking */
	uint64_t ecn_k_bytes;        /* mark CE when the modelled queue exceeds this */
	uint16_t entropy_base;       /* entropy index = udp_sport - entropy_base */
	unsigned int n_entropy;
	struct mr_impair_entropy_rule entropy[MR_IMPAIR_MAX_ENTROPY_RULES];
	uint32_t qlimit;             /* delay queue capacity in frames, 0 = default */
	uint64_t seed;
};

enum mr_impair_action {
	MR_IMPAIR_DELIVER = 0,   /* deliver the (possibly modified) frame now */
	MR_IMPAIR_DROP,          /* discard it */
	MR_IMPAIR_QUEUED,        /* a copy is in the delay queue: discard the caller's frame and
				  * collect it with mr_impair_poll() when due */
};

/* Flags describing what happened to a frame (several may be set). */
#define MR_IMPAIR_F_CORRUPTED 0x1u
#define MR_IMPAIR_F_CE        0x2u   /* CE-marked by the modelled queue */
#define MR_IMPAIR_F_DUP       0x4u   /* a duplicate was put in the delay queue */
#define MR_IMPAIR_F_REORDERED 0x8u

struct mr_impair_verdict {
	enum mr_impair_action action;
	uint32_t flags;
};

enum mr_impair_drop_reason {
	MR_IMPAIR_DROP_RANDOM = 0,
	MR_IMPAIR_DROP_BURST,
	MR_IMPAIR_DROP_ENTROPY,
	MR_IMPAIR_DROP_QFULL,    /* delay queue full */
	MR_IMPAIR_NR_DROP
};

struct mr_impair_stats {
	uint64_t frames, bytes;            /* offered */
	uint64_t delivered;                /* returned DELIVER or handed out by poll (dups incl.) */
	uint64_t dropped[MR_IMPAIR_NR_DROP];
	uint64_t delayed, reordered, duplicated, corrupted;
	uint64_t ce_marked;                /* ECT frames marked CE */
	uint64_t ce_not_ect;               /* over threshold but not ECT: left alone (RFC 3168) */
	uint64_t burst_entries;            /* good->bad transitions */
	uint64_t ecn_queue_peak;           /* bytes */
	uint64_t malformed;                /* frames too short/too long to process */
};

struct mr_impair;

/* Defaults: nothing impaired, seed 1. */
void mr_impair_cfg_init(struct mr_impair_cfg *cfg);
/* Parse "loss=0.01,burst=4,reorder=0.02:20us,dup=0.001,corrupt=1e-4,delay=10us,jitter=2us,
 * ecn=rate:10g,k:64k,entropy_loss=3:0.5,entropy_base=49152,qlimit=1024,seed=7" into cfg (fields
 * not named keep their value). Times take ns|us|ms|s (default ns), rates k|m|g (bit/s), sizes
 * k|m (x1024). Returns 0 or -EINVAL with a message naming the field in err (if err_len > 0). */
int mr_impair_cfg_parse(struct mr_impair_cfg *cfg, const char *spec, char *err, size_t err_len);
/* Check ranges. Returns 0 or -EINVAL with a message. */
int mr_impair_cfg_validate(const struct mr_impair_cfg *cfg, char *err, size_t err_len);

struct mr_impair *mr_impair_create(const struct mr_impair_cfg *cfg); /* NULL + errno */
void mr_impair_destroy(struct mr_impair *im);

/* Process one frame travelling in dir at time now. The frame may be modified in place (CE mark,
 * corruption). Returns 0 and fills *v, or -EINVAL (bad dir, len 0 or > MR_IMPAIR_FRAME_MAX). */
int mr_impair_process(struct mr_impair *im, enum mr_impair_dir dir, uint64_t now,
		      uint8_t *frame, uint32_t len, struct mr_impair_verdict *v);
/* Copy out the next delayed frame of dir due at or before now. Returns its length, 0 if none is
 * due, -ENOSPC if cap is too small (it stays queued), -EINVAL for a bad dir. */
int mr_impair_poll(struct mr_impair *im, enum mr_impair_dir dir, uint64_t now, uint8_t *buf,
		   size_t cap);
/* Due time of the next delayed frame of dir, or UINT64_MAX. */
uint64_t mr_impair_next_due(const struct mr_impair *im, enum mr_impair_dir dir);
/* Frames waiting in dir's delay queue. */
size_t mr_impair_queued(const struct mr_impair *im, enum mr_impair_dir dir);
void mr_impair_get_stats(const struct mr_impair *im, enum mr_impair_dir dir,
			 struct mr_impair_stats *st);

/* ---- frame helpers (impair_frame.c), shared with the fabric simulator ---- */

/* Offset of the IP header in an Ethernet (optionally 802.1Q) frame and whether it is IPv6.
 * Returns the offset, or -EINVAL if the frame is not IPv4/IPv6 or too short. */
int mr_impair_l3_offset(const uint8_t *frame, uint32_t len, bool *ipv6);
/* UDP source port of an IP/UDP frame, or -EINVAL (not UDP, IPv4 fragment, truncated). */
int mr_impair_udp_sport(const uint8_t *frame, uint32_t len);
/* Whether flipping this bit of a RoCE v2 frame is detectable end to end: IPv4 header bits
 * (header checksum), and every ICRC-covered bit (IBA A17.3.3) except the fields the ICRC masks
 * because switches rewrite them (IPv6 traffic class/flow label/hop limit, UDP checksum, BTH
 * resv8a with FECN/BECN). False for L2 bits (the Ethernet FCS' job) and non-RoCE frames. */
bool mr_impair_bit_protected(const uint8_t *frame, uint32_t len, uint32_t bit);
/* The ECN field (RFC 3168: 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE), or -EINVAL. */
int mr_impair_ecn_get(const uint8_t *frame, uint32_t len);
/* Mark CE if the frame is ECT(0)/ECT(1) (RFC 3168 5: never mark Not-ECT), updating the IPv4
 * header checksum incrementally (RFC 1624). The RoCE ICRC masks the TOS/traffic class
 * (IBA A17.3.3), so it stays valid. Returns 1 if marked, 0 if Not-ECT or already CE,
 * -EINVAL if not IP. */
int mr_impair_ecn_mark_ce(uint8_t *frame, uint32_t len);

#endif
