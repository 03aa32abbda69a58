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
 * The variant fields are set to ones by ORing the first 64 bytes with a mask built once per
 * header layout (mr_crc32_ops.or64: in registers, the packet read once in place and not
 * copied). IPv4 with more than 24 bytes of options is masked in a copy instead.
 *
 * The CRC-32 itself is slicing-by-8 here and carry-less-multiply folding in crc32_clmul.c; the
 * fastest path the CPU runs is chosen once at start-up (MR_CRC32_IMPL in the environment
 * overrides it for measurements).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "wire/crc32_impl.h"
#include "wire/icrc.h"
#include "wire/roce_hdr.h"
#include "wire/roce_pkt.h"

#define MR_CRC32_POLY 0xedb88320u /* reflected 0x04c11db7 */

/* Slicing-by-8 tables (Intel's "slicing-by-8", 2006): t[k][b] is the CRC of byte b followed by
 * k zero bytes. Built once before main() so the hot path has no initialisation test. The
 * VPCLMULQDQ path's last step reads them too (crc32_impl.h). */
uint32_t mr_crc32_tab[8][256];

static const struct mr_crc32_ops table_ops;
static const struct mr_crc32_ops *crc_ops = &table_ops;
static enum mr_crc32_impl crc_impl = MR_CRC32_TABLE;

static const char *const impl_names[MR_CRC32_NR_IMPLS] = {
	[MR_CRC32_TABLE] = "table",
	[MR_CRC32_PCLMUL] = "pclmul",
	[MR_CRC32_VPCLMUL] = "vpclmul",
};

/* CRC register after the 8 bytes of ones that stand for the LRH (IBA 7.8.1), from crc 0. */
static uint32_t lrh_state;

static void crc32_select(void);
static void icrc_masks_init(void);

__attribute__((constructor)) static void mr_crc32_init(void)
{
	uint32_t(*t)[256] = mr_crc32_tab;

	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ MR_CRC32_POLY : c >> 1;
		t[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int k = 1; k < 8; k++)
			t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
	lrh_state = mr_crc32_table_raw(0xffffffffu, (const uint8_t[8]){ 0xff, 0xff, 0xff, 0xff,
									0xff, 0xff, 0xff, 0xff }, 8);
	icrc_masks_init();
	crc32_select();
}

uint32_t mr_crc32_table_raw(uint32_t c, const uint8_t *p, size_t len)
{
	uint32_t(*t)[256] = mr_crc32_tab; /* read only here */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	while (len >= 8) {
		uint32_t lo, hi;

		memcpy(&lo, p, 4);
		memcpy(&hi, p + 4, 4);
		lo ^= c;
		c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^
		    t[4][lo >> 24] ^ t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^
		    t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
		p += 8;
		len -= 8;
	}
#endif
	while (len--)
		c = (c >> 8) ^ t[0][(c ^ *p++) & 0xff];
	return c;
}

static uint32_t table_copy(uint32_t state, uint8_t *dst, const uint8_t *src, size_t len)
{
	memcpy(dst, src, len);
	return mr_crc32_table_raw(state, src, len);
}

static uint32_t table_or64(uint32_t state, const uint8_t *or64, const uint8_t *p, size_t len)
{
	uint8_t head[64];
	size_t n = len < 64 ? len : 64;

	for (size_t i = 0; i < n; i++)
		head[i] = p[i] | or64[i];
	return mr_crc32_table_raw(mr_crc32_table_raw(state, head, n), p + n, len - n);
}

static const struct mr_crc32_ops table_ops = { mr_crc32_table_raw, table_copy, table_or64 };

const struct mr_crc32_ops *mr_crc32_impl_ops(enum mr_crc32_impl impl)
{
	switch (impl) {
	case MR_CRC32_TABLE:
		return &table_ops;
	case MR_CRC32_PCLMUL:
		return mr_crc32_pclmul_ops();
	case MR_CRC32_VPCLMUL:
		return mr_crc32_vpclmul_ops();
	default:
		return NULL;
	}
}

const char *mr_crc32_impl_name(enum mr_crc32_impl impl)
{
	return (unsigned int)impl < MR_CRC32_NR_IMPLS ? impl_names[impl] : "invalid";
}

enum mr_crc32_impl mr_crc32_impl_get(void)
{
	return crc_impl;
}

int mr_crc32_impl_set(enum mr_crc32_impl impl)
{
	const struct mr_crc32_ops *ops = mr_crc32_impl_ops(impl);

	if (!ops)
		return -ENOTSUP;
	crc_ops = ops;
	crc_impl = impl;
	return 0;
}

/* The fastest path this CPU runs, unless MR_CRC32_IMPL names another (an unknown or
 * unsupported name keeps the automatic choice: a measurement knob must not break the stack). */
static void crc32_select(void)
{
	const char *want = getenv("MR_CRC32_IMPL");

	for (int i = MR_CRC32_NR_IMPLS - 1; i >= 0; i--)
		if (mr_crc32_impl_set((enum mr_crc32_impl)i) == 0)
			break;
	if (want)
		for (int i = 0; i < MR_CRC32_NR_IMPLS; i++)
			if (strcmp(want, impl_names[i]) == 0)
				(void)mr_crc32_impl_set((enum mr_crc32_impl)i);
}

uint32_t mr_crc32(uint32_t crc, const void *buf, size_t len)
{
	if (!len)
		return crc;
	return ~crc_ops->crc(~crc, buf, len);
}

uint32_t mr_crc32_copy(uint32_t crc, void *dst, const void *src, size_t len)
{
	if (!len)
		return crc;
	return ~crc_ops->copy(~crc, dst, src, len);
}

/* The OR masks of the first 64 bytes: IPv4 with 0..24 bytes of options (IHL 5..11), IPv6. */
#define HEAD 64u
#define HEAD_MAX (60u + 8u + MR_BTH_LEN)
#define V4_MASKS 7
static uint8_t or_v4[V4_MASKS][HEAD], or_v6[HEAD];

/* Replace the variant fields (A17.3.3) of a copy of IP+UDP+BTH by ones (an OR, so that the same
 * routine applied to zeros gives the OR masks). */
static void icrc_mask(uint8_t *pseudo, uint32_t ip_hdr_len, bool ipv6)
{
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
}

static void icrc_masks_init(void)
{
	for (uint32_t i = 0; i < V4_MASKS; i++)
		icrc_mask(or_v4[i], 20 + 4 * i, false);
	icrc_mask(or_v6, 40, true);
}

/* Raw CRC register over the masked pseudo-header and roce_len - MR_BTH_LEN further bytes, for
 * the layouts without a prebuilt mask (IPv4 with over 24 bytes of options): the head masked in
 * a copy. Kept out of line so that the usual path needs no stack frame (with the copy inlined,
 * mr_icrc_calc saved four registers and set up 88 bytes of stack around every call: about 6 %
 * of a 2 KiB frame's ICRC). */
static __attribute__((noinline)) uint32_t icrc_state_copy(const uint8_t *ip, uint32_t ip_hdr_len,
							  bool ipv6, uint32_t roce_len)
{
	uint8_t head[HEAD_MAX > HEAD ? HEAD_MAX : HEAD];
	uint32_t n = ip_hdr_len + 8 + MR_BTH_LEN;
	uint32_t total = n + roce_len - MR_BTH_LEN;
	uint32_t c;

	memcpy(head, ip, n);
	icrc_mask(head, ip_hdr_len, ipv6);
	c = crc_ops->crc(lrh_state, head, n);
	return crc_ops->crc(c, ip + n, total - n);
}

/* The one pseudo-header routine, used by the builder (generate) and the parser (check). */
uint32_t mr_icrc_calc(const uint8_t *ip, uint32_t ip_hdr_len, bool ipv6, uint32_t roce_len)
{
	uint32_t total = ip_hdr_len + 8 + roce_len;

	if (ip_hdr_len > 60 || roce_len < MR_BTH_LEN)
		return 0; /* callers never do this; keep the copy in bounds regardless */
	if (ipv6 ? ip_hdr_len == 40 : ip_hdr_len >= 20 && ip_hdr_len <= 44 && (ip_hdr_len & 3) == 0)
		return ~crc_ops->or64(lrh_state, ipv6 ? or_v6 : or_v4[(ip_hdr_len - 20) / 4], ip,
				      total);
	return ~icrc_state_copy(ip, ip_hdr_len, ipv6, roce_len);
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
