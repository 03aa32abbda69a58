/* SPDX-License-Identifier: MIT
 * Traffic classes of the RoCE port: which DSCP, ECN codepoint and 802.1p priority (VLAN PCP) each
 * kind of frame carries. No DPDK include.
 *
 * Defaults follow common ConnectX/RoCE deployments: RoCE data DSCP 26 (AF31), priority 3, sent
 * ECN-capable with ECT(0) so that switches can mark congestion (IBA A17.9.1, RFC 3168 5);
 * CNPs DSCP 48 (CS6), priority 6, not ECN-capable (a CNP is itself the congestion signal,
 * IBA A17.9.3).
 */
#ifndef MR_DRIVERS_DPDK_TCLASS_H
#define MR_DRIVERS_DPDK_TCLASS_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum mr_tc {
	MR_TC_ROCE = 0, /* RoCE v2 data and ACK/NAK packets */
	MR_TC_CNP,      /* congestion notification packets (BTH opcode 0x81) */
	MR_TC_NR
};

/* ECN field values (RFC 3168 5). */
#define MR_ECN_NOT_ECT 0x0
#define MR_ECN_ECT1 0x1
#define MR_ECN_ECT0 0x2
#define MR_ECN_CE 0x3

#define MR_TCLASS_ROCE_DSCP 26
#define MR_TCLASS_ROCE_PCP 3
#define MR_TCLASS_CNP_DSCP 48
#define MR_TCLASS_CNP_PCP 6

struct mr_tclass_ent {
	uint8_t dscp; /* 0..63 */
	uint8_t pcp;  /* 0..7 */
	bool ect;     /* send ECT(0) */
};

struct mr_tclass_map {
	struct mr_tclass_ent tc[MR_TC_NR];
};

/* Fill map with the defaults above. */
void mr_tclass_defaults(struct mr_tclass_map *map);

/* Set one class. -EINVAL for an unknown tc, dscp > 63 or pcp > 7. */
int mr_tclass_set(struct mr_tclass_map *map, enum mr_tc tc, uint8_t dscp, uint8_t pcp, bool ect);

/* IPv4 TOS / IPv6 Traffic Class byte (DSCP << 2 | ECN) for tc, as struct mr_path.tclass wants.
 * Returns 0..255, or -EINVAL. */
int mr_tclass_tos(const struct mr_tclass_map *map, enum mr_tc tc);

/* 802.1Q TCI for tc on VLAN vid (PCP << 13 | vid, DEI 0). Returns 0..65535, or -EINVAL for an
 * unknown tc or vid > 4094 (4095 is reserved, IEEE 802.1Q table 9-2). */
int mr_tclass_vlan_tci(const struct mr_tclass_map *map, enum mr_tc tc, uint16_t vid);

/* Parse a spec such as "roce:dscp=26,pcp=3,ecn=1;cnp:dscp=48,pcp=6,ecn=0" into map (fields not
 * named keep their value). Returns 0, or -EINVAL and leaves map unchanged on any syntax or range
 * error. */
int mr_tclass_parse(struct mr_tclass_map *map, const char *spec);

const char *mr_tc_name(enum mr_tc tc);

#ifdef __cplusplus
}
#endif
#endif
