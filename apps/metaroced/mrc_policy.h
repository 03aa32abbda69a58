/* SPDX-License-Identifier: MIT
 * metaroced's MetaRoCE policy for applications that do not ask for a transport (stock verbs
 * binaries through the verbs library, or any mrc_* app that leaves MRC_QP_TRANSPORT out of its
 * INIT->RTR call): config [metaroce] peers = a list of IPv4/IPv6 prefixes whose hosts run
 * metaroce. An RC QP whose destination GID falls in one of them becomes a MetaRoCE QP at
 * INIT->RTR, with the configured entropies and CC.
 *
 * Why a list the operator writes and not a negotiation: the app's own connection exchange
 * (perftest's TCP, RDMA-CM, an MPI's) is invisible to the daemon, and anything a daemon sent on
 * the wire to ask "do you speak MetaRoCE?" would reach a stock peer too, which must only ever
 * see RoCE v2 RC (docs/metaroce-wire.md). Both daemons of a connection must list each other:
 * the same rule decides on both ends because it only reads the peer's address.
 * DPDK-free; unit-tested in tests/daemon/test_mrc_policy.c.
 */
#ifndef MR_DAEMON_MRC_POLICY_H
#define MR_DAEMON_MRC_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MR_MRC_POLICY_MAX_NETS 32
#define MR_MRC_POLICY_DEFAULT_ENTROPIES 16

/* One prefix in GID space: IPv4 prefixes are stored IPv4-mapped (::ffff:a.b.c.d, A17.4.5.1)
 * with 96 added to their length, so one 128-bit compare matches both families. */
struct mr_mrc_net {
	uint8_t addr[16];
	uint8_t plen;              /* 0..128 */
};

struct mr_mrc_policy {
	struct mr_mrc_net net[MR_MRC_POLICY_MAX_NETS];
	unsigned int n;            /* 0: the policy never upgrades (the default) */
	uint16_t n_entropies;      /* 1..256 (MRC_MAX_ENTROPIES) */
	uint8_t cc;                /* enum mrc_cc_algo */
};

/* Empty list, MR_MRC_POLICY_DEFAULT_ENTROPIES, no CC. */
void mr_mrc_policy_init(struct mr_mrc_policy *p);

/* Replace the list from "198.18.0.0/15, 2001:2::/48, 198.19.0.7" (commas and/or spaces; a bare
 * address is one host) or "none". -EINVAL with the reason in err ("'198.18.0.1/15' has host
 * bits set beyond /15", "more than 32 prefixes", ...); p is unchanged then. */
int mr_mrc_policy_set_peers(struct mr_mrc_policy *p, const char *list, char *err, size_t errlen);

/* "none" | "dcqcn" | "metaroce" -> enum mrc_cc_algo value; -EINVAL otherwise. */
int mr_mrc_policy_cc_from_name(const char *name, uint8_t *cc);
const char *mr_mrc_policy_cc_name(uint8_t cc);

/* True if a QP toward dgid (a RoCE v2 GID: IPv6 or IPv4-mapped) is to run MetaRoCE. */
bool mr_mrc_policy_match(const struct mr_mrc_policy *p, const uint8_t dgid[16]);

/* The list as it would be written in the config ("198.18.0.0/15,2001:2::/48", "none"). */
void mr_mrc_policy_format(const struct mr_mrc_policy *p, char *out, size_t len);

#endif
