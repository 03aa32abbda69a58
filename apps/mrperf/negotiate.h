/* SPDX-License-Identifier: MIT
 * MetaRoCE negotiation inside perftest's setup exchange, invisible to stock perftest.
 *
 * perftest 4.5 exchanges a 16-byte version field (MAX_VERSION), filled by strncpy(VERSION) and
 * therefore NUL-padded: "6.06\0\0\0\0\0\0\0\0\0\0\0\0". It only ever reads the peer's field
 * with atof() (src/perftest_communication.c: check_version_compatibility() "< 5.70",
 * check_sys_data() ">= 5.32", check_mtu(), xchg_bw_reports() in *_bw.c), and atof stops at the
 * first NUL. mrperf with --metaroce puts its offer after that NUL:
 *
 *   byte  0..3   "6.06"           perftest's version, unchanged
 *         4      0                terminates the string every reader sees
 *         5..8   "MRC1"           marker + negotiation version 1
 *         9      flags            bit 0: MetaRoCE offered (docs/metaroce-wire.md); others 0
 *         10..11 n_entropies      big-endian, 1..256 (MRETH.path is 8 bits)
 *         12     cc               enum mrc_cc_algo the sender would like (0 none, 1 DCQCN,
 *                                 2 MetaRoCE CC)
 *         13..15 0                reserved: sent as 0, ignored
 *
 * A stock peer parses "6.06" and ignores the rest; an mrperf peer without --metaroce sends the
 * stock bytes exactly (so captures and stock peers see nothing new). MetaRoCE is used only when
 * BOTH fields carry a valid offer; anything else (stock zero padding, a damaged or unknown
 * marker) means plain RoCE v2 RC (IBA ch. 9.7), so a stock peer never sees a MetaRoCE packet.
 * Agreement: entropies = the smaller offer; cc = the smaller enum value (none < DCQCN <
 * MetaRoCE CC: a controller runs only if both sides asked for at least that much).
 */
#ifndef MRPERF_NEGOTIATE_H
#define MRPERF_NEGOTIATE_H

#include <stdbool.h>
#include <stdint.h>

#include "exchange.h"

#define MR_MRC_MARKER "MRC1"
#define MR_MRC_MARKER_OFF 5
#define MR_MRC_FLAG_METAROCE 0x01
#define MR_MRC_MAX_ENTROPIES 256
#define MR_MRC_CC_MAX 2               /* MRC_CC_METAROCE */

struct mr_mrc_offer {
	bool metaroce;         /* offered (else: plain RoCE only) */
	uint16_t n_entropies;  /* 1..256 when offered */
	uint8_t cc;            /* enum mrc_cc_algo */
};

/* The version field to send: the stock one when o is NULL or does not offer MetaRoCE, else
 * the stock one with the offer after its NUL. -EINVAL (out untouched) for entropies outside
 * 1..256 or an unknown cc. */
int mr_mrc_version_encode(const struct mr_mrc_offer *o, uint8_t out[MR_PT_VERSION_LEN]);
/* The peer's offer in its version field: 1 and *o filled for a valid offer, 0 (and *o = no
 * offer) for anything else, including stock perftest's zero padding. Never reads beyond 16. */
int mr_mrc_version_decode(const uint8_t in[MR_PT_VERSION_LEN], struct mr_mrc_offer *o);
/* What both sides use: true (and *out) only if both offered. Symmetric: both ends compute the
 * same result from the two offers. */
bool mr_mrc_negotiate(const struct mr_mrc_offer *mine, const struct mr_mrc_offer *peer,
		      struct mr_mrc_offer *out);
/* "none", "dcqcn", "metaroce" <-> enum mrc_cc_algo; -EINVAL for unknown names. */
int mr_mrc_cc_from_name(const char *name, uint8_t *cc);
const char *mr_mrc_cc_name(uint8_t cc);

#endif
