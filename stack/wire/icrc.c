/* SPDX-License-Identifier: MIT
 * ICRC (IBA 7.8.1 for IB; A17.3.3 for RoCE v2): CRC-32 over the packet with the fields that
 * routers may change replaced by ones, so that the CRC is end-to-end invariant.
 *
 * For RoCE v2 the "variant" fields are the IP TOS/traffic class, TTL/hop limit, IPv4 header
 * checksum, IPv6 flow label, UDP checksum, and the BTH byte holding FECN/BECN (A17.9.1: switches
 * set FECN). IB's LRH, absent in RoCE v2, is represented by 8 bytes of ones at the start: that is
 * why the CRC is seeded with the CRC of 0xff x 8 rather than with zero. The result is stored
 * little-endian (verified against Linux rxe captures in tests/vectors).
 *
 * Only the first IP+UDP+BTH bytes (at most 80) are copied to be masked; the rest of the packet is
 * fed to the CRC in place.
 */
#include <errno.h>
#include <string.h>

#include "wire/icrc.h"
#include "wire/roce_hdr.h"
#include "wire/roce_pkt.h"

#define MR_CRC32_POLY 0xedb88320u /* reflected 0x04c11db7 */

/* Slicing-by-8 tables (Intel's "slicing-by-8", 2006): t[k][b] is the CRC of byte b followed by
 * k zero bytes. Built once before main() so the hot path has no initialisation test. */
static uint32_t crc_tab[8][256];

__attribute__((constructor)) static void mr_crc32_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ MR_CRC32_POLY : c >> 1;
		crc_tab[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int k = 1; k < 8; k++)
			crc_tab[k][i] = (crc_tab[k - 1][i] >> 8) ^ crc_tab[0][crc_tab[k - 1][i] & 0xff];
}

uint32_t mr_crc32(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t c = ~crc;

	if (!len)
		return crc;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	while (len >= 8) {
		uint32_t lo, hi;

		memcpy(&lo, p, 4);
		memcpy(&hi, p + 4, 4);
		lo ^= c;
		c = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^
		    crc_tab[5][(lo >> 16) & 0xff] ^ crc_tab[4][lo >> 24] ^
		    crc_tab[3][hi & 0xff] ^ crc_tab[2][(hi >> 8) & 0xff] ^
		    crc_tab[1][(hi >> 16) & 0xff] ^ crc_tab[0][hi >> 24];
		p += 8;
		len -= 8;
	}
#endif
	while (len--)
		c = (c >> 8) ^ crc_tab[0][(c ^ *p++) & 0xff];
	return ~c;
}

/* The one pseudo-header routine, used by the builder (generate) and the parser (check). */
uint32_t mr_icrc_calc(const uint8_t *ip, uint32_t ip_hdr_len, bool ipv6, uint32_t roce_len)
{
	static const uint8_t lrh_ones[8] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	uint8_t pseudo[60 + 8 + MR_BTH_LEN];
	uint32_t n = ip_hdr_len + 8 + MR_BTH_LEN;
	uint32_t crc;

	if (ip_hdr_len > 60 || roce_len < MR_BTH_LEN)
		return 0; /* callers never do this; keep the copy in bounds regardless */
	memcpy(pseudo, ip, n);
	if (ipv6) {
		/* Traffic class and flow label (all of bytes 0-3 but the version), hop limit. */
		pseudo[0] |= 0x0f;
		pseudo[1] = pseudo[2] = pseudo[3] = 0xff;
		pseudo[7] = 0xff;
	} else {
		pseudo[1] = 0xff;              /* TOS (DSCP/ECN) */
		pseudo[8] = 0xff;              /* TTL */
		pseudo[10] = pseudo[11] = 0xff; /* header checksum */
	}
	pseudo[ip_hdr_len + 6] = pseudo[ip_hdr_len + 7] = 0xff; /* UDP checksum */
	pseudo[ip_hdr_len + 8 + 4] = 0xff; /* BTH FECN/BECN/resv (A17.9.1) */

	crc = mr_crc32(0, lrh_ones, sizeof(lrh_ones));
	crc = mr_crc32(crc, pseudo, n);
	return mr_crc32(crc, ip + n, roce_len - MR_BTH_LEN);
}

int mr_icrc_frame(const uint8_t *frame, uint32_t len, uint32_t *icrc)
{
	uint32_t off = 14, iphl;
	uint16_t etype;
	bool ipv6;

	if (len < 14)
		return -EINVAL;
	etype = mr_get_be16(frame + 12);
	if (etype == 0x8100) {
		if (len < 18)
			return -EINVAL;
		etype = mr_get_be16(frame + 16);
		off = 18;
	}
	if (etype == 0x0800) {
		if (len < off + 20)
			return -EINVAL;
		ipv6 = false;
		iphl = (frame[off] & 0x0fu) * 4;
		if (iphl < 20)
			return -EINVAL;
	} else if (etype == 0x86dd) {
		ipv6 = true;
		iphl = 40;
	} else {
		return -EINVAL;
	}
	if (len < off + iphl + 8 + MR_BTH_LEN + MR_ICRC_LEN)
		return -EINVAL;
	*icrc = mr_icrc_calc(frame + off, iphl, ipv6, len - off - iphl - 8 - MR_ICRC_LEN);
	return 0;
}

int mr_icrc_frame_fix(uint8_t *frame, uint32_t len)
{
	uint32_t icrc;
	int rc = mr_icrc_frame(frame, len, &icrc);

	if (rc)
		return rc;
	mr_put_le32(frame + len - MR_ICRC_LEN, icrc);
	return 0;
}
