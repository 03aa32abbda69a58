/* SPDX-License-Identifier: MIT
 * RoCE v2 invariant CRC (IBA A17.3.3 / 7.8.1) and the CRC-32 it is built on.
 */
#ifndef MR_WIRE_ICRC_H
#define MR_WIRE_ICRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* CRC-32 with the zlib/Ethernet polynomial, chained like zlib's crc32(): start with crc = 0.
 * Carry-less-multiply folding where the CPU has it (wire/crc32_impl.h), else slicing-by-8. */
uint32_t mr_crc32(uint32_t crc, const void *buf, size_t len);
/* Copy len bytes from src to dst (not overlapping) and return mr_crc32(crc, src, len), reading
 * src once: for payload placement on receive and payload copy on transmit. */
uint32_t mr_crc32_copy(uint32_t crc, void *dst, const void *src, size_t len);

/* ICRC of a RoCE v2 packet whose IP header starts at ip (ip_hdr_len bytes, options included),
 * followed by the 8-byte UDP header, the BTH, and roce_len - MR_BTH_LEN further bytes (headers,
 * payload, pad; roce_len excludes the ICRC itself). The caller guarantees that all these bytes
 * are readable. The value is stored little-endian in the 4 bytes after them.
 * The result chains like mr_crc32(): the ICRC of a packet whose bytes after the first k are
 * elsewhere is mr_crc32[_copy](mr_icrc_calc(ip, ip_hdr_len, ipv6, k'), rest, ...) with k' the
 * roce_len of the first part (at least MR_BTH_LEN): fused copy + check on receive placement. */
uint32_t mr_icrc_calc(const uint8_t *ip, uint32_t ip_hdr_len, bool ipv6, uint32_t roce_len);

/* Locate the IP header of an Ethernet (optionally 802.1Q) frame and compute the ICRC its last 4
 * bytes should hold, using the frame length (not the IP length) for the extent. Used to craft
 * test frames and to report expected values. Returns 0, or -EINVAL if the frame is too short or
 * not IPv4/IPv6. */
int mr_icrc_frame(const uint8_t *frame, uint32_t len, uint32_t *icrc);

/* Rewrite the ICRC of a frame in place (tests and tools that edit frames). 0 or -EINVAL. */
int mr_icrc_frame_fix(uint8_t *frame, uint32_t len);

static inline uint32_t mr_get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void mr_put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

#endif
