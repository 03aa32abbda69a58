/* SPDX-License-Identifier: MIT
 * metaroced QP sharding, the pure part (DPDK-free, unit-tested in tests/daemon): which engine
 * shard owns a QPN, where the BTH destination QP and the destination GID sit in a frame as built
 * or received, and which shard a new app session goes to.
 *
 * Every shard owns a disjoint QPN range (its transport ctx hands out QPNs from its first_qpn
 * upward), so the owner of a frame is a division, not a table lookup shared between lcores.
 */
#ifndef MR_DAEMON_SHARD_MAP_H
#define MR_DAEMON_SHARD_MAP_H

#include <stdbool.h>
#include <stdint.h>

/* IBA 10.2.4 / rxe: QP0 and QP1 are special; RC QPNs start at 17 as in rxe. */
#define MR_SHARD_FIRST_QPN 17u
/* The BTH destination QP field is 24 bits (IBA 9.2). */
#define MR_SHARD_QPN_LIMIT (1u << 24)

struct mr_shard_map {
	uint32_t first_qpn;     /* shard 0's first QPN */
	uint32_t qp_per_shard;  /* the QPN range of each shard ([limits] max_qp) */
	unsigned int nshards;
};

/* 0, or -EINVAL (no shard, range 0) / -ERANGE (the ranges do not fit in 24 bits). */
int mr_shard_map_init(struct mr_shard_map *m, uint32_t first_qpn, uint32_t qp_per_shard,
		      unsigned int nshards);
/* First QPN of shard i (its transport ctx's mr_ctx_params.first_qpn). */
uint32_t mr_shard_first_qpn(const struct mr_shard_map *m, unsigned int shard);
/* The shard owning qpn; QPNs outside every range (QP1, unknown QPs) belong to shard 0, which
 * parses and counts them. */
unsigned int mr_shard_of_qpn(const struct mr_shard_map *m, uint32_t qpn);

/* The BTH destination QP of a RoCE v2 frame (Ethernet [+ one 802.1Q tag] / IPv4 or IPv6 / UDP
 * to port 4791 / BTH, A17.2-A17.3), read without any check beyond what reaching it requires:
 * the owner shard does the full parse and ICRC check. Never reads past frame[len - 1].
 * 0, or -EINVAL (NULL), -EMSGSIZE (truncated), -ENOENT (not RoCE v2: other ethertype, IP
 * options/extension headers we do not walk, not UDP, not port 4791, a fragment). */
int mr_shard_peek_dqpn(const uint8_t *frame, uint32_t len, uint32_t *qpn);
/* The destination address of a built IPv4/IPv6 frame as a GID (IPv4-mapped ::ffff:a.b.c.d for
 * IPv4, A17.4.5.1 / RFC 4291 2.5.5.2). Same errors as mr_shard_peek_dqpn (UDP not required). */
int mr_shard_peek_dgid(const uint8_t *frame, uint32_t len, uint8_t gid[16]);

/* The shard for a new session: the fewest sessions (load[i]), the lowest id on a tie.
 * n >= 1. */
unsigned int mr_shard_pick(const uint32_t *load, unsigned int n);

#endif
