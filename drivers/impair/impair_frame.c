/* SPDX-License-Identifier: MIT
 * Minimal frame accessors for the impairment stage: find L3, read the UDP source port (the
 * entropy), read and set the IP ECN field. Bounds-checked: never read past len. */
#include <errno.h>

#include "impair/impair.h"

#define ETH_HLEN 14
#define ETYPE_VLAN 0x8100
#define ETYPE_IPV4 0x0800
#define ETYPE_IPV6 0x86dd
#define IPPROTO_UDP_NUM 17

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

int mr_impair_l3_offset(const uint8_t *frame, uint32_t len, bool *ipv6)
{
	uint32_t off = ETH_HLEN;
	uint16_t et;

	if (len < ETH_HLEN)
		return -EINVAL;
	et = rd16(frame + 12);
	if (et == ETYPE_VLAN) { /* IEEE 802.1Q tag: 4 bytes, then the real EtherType */
		if (len < ETH_HLEN + 4)
			return -EINVAL;
		et = rd16(frame + 16);
		off += 4;
	}
	if (et == ETYPE_IPV4) {
		if (len < off + 20 || (frame[off] >> 4) != 4)
			return -EINVAL;
		*ipv6 = false;
	} else if (et == ETYPE_IPV6) {
		if (len < off + 40 || (frame[off] >> 4) != 6)
			return -EINVAL;
		*ipv6 = true;
	} else {
		return -EINVAL;
	}
	return (int)off;
}

int mr_impair_udp_sport(const uint8_t *frame, uint32_t len)
{
	bool v6;
	int l3 = mr_impair_l3_offset(frame, len, &v6);
	uint32_t l4;

	if (l3 < 0)
		return l3;
	if (v6) {
		if (frame[l3 + 6] != IPPROTO_UDP_NUM) /* no extension headers on RoCE v2 */
			return -EINVAL;
		l4 = (uint32_t)l3 + 40;
	} else {
		uint32_t ihl = (frame[l3] & 0x0fu) * 4u;

		if (frame[l3 + 9] != IPPROTO_UDP_NUM || ihl < 20 ||
		    (rd16(frame + l3 + 6) & 0x1fff) != 0) /* non-first fragments have no UDP */
			return -EINVAL;
		l4 = (uint32_t)l3 + ihl;
	}
	if (len < l4 + 8)
		return -EINVAL;
	return rd16(frame + l4);
}

static int l4_offset(const uint8_t *frame, uint32_t len, int l3, bool v6)
{
	uint32_t ihl;

	if (v6)
		return frame[l3 + 6] == IPPROTO_UDP_NUM ? l3 + 40 : -EINVAL;
	ihl = (frame[l3] & 0x0fu) * 4u;
	if (frame[l3 + 9] != IPPROTO_UDP_NUM || ihl < 20 || (uint32_t)l3 + ihl > len)
		return -EINVAL;
	return l3 + (int)ihl;
}

bool mr_impair_bit_protected(const uint8_t *frame, uint32_t len, uint32_t bit)
{
	uint32_t byte = bit / 8;
	bool v6;
	int l3 = mr_impair_l3_offset(frame, len, &v6), l4;

	if (byte >= len || l3 < 0 || byte < (uint32_t)l3)
		return false;
	l4 = l4_offset(frame, len, l3, v6);
	if (v6) {
		/* IPv6 has no header checksum; the ICRC masks traffic class, flow label and hop
		 * limit (IBA A17.3.3) and the rest of the header is covered. */
		if (byte < (uint32_t)l3 + 4 || byte == (uint32_t)l3 + 7)
			return false;
		if (l4 < 0 || byte < (uint32_t)l4)
			return true;
	} else if (l4 < 0 || byte < (uint32_t)l4) {
		return true; /* the IPv4 header checksum covers every header bit */
	}
	if (len < (uint32_t)l4 + 8 || rd16(frame + l4 + 2) != 4791)
		return false; /* not RoCE: nothing end-to-end to say */
	/* UDP checksum: masked in the ICRC and usually 0 (A17.3.3, A17.4.4). BTH byte 4
	 * (FECN, BECN, resv6) is the masked resv8a field: switches may set FECN. */
	if (byte == (uint32_t)l4 + 6 || byte == (uint32_t)l4 + 7 || byte == (uint32_t)l4 + 12)
		return false;
	return true;
}

int mr_impair_ecn_get(const uint8_t *frame, uint32_t len)
{
	bool v6;
	int l3 = mr_impair_l3_offset(frame, len, &v6);

	if (l3 < 0)
		return l3;
	if (v6) /* traffic class straddles bytes 0-1: ECN is bits 4-5 of byte 1 */
		return (frame[l3 + 1] >> 4) & 3;
	return frame[l3 + 1] & 3;
}

int mr_impair_ecn_mark_ce(uint8_t *frame, uint32_t len)
{
	bool v6;
	int l3 = mr_impair_l3_offset(frame, len, &v6);
	int ecn;

	if (l3 < 0)
		return l3;
	ecn = mr_impair_ecn_get(frame, len);
	if (ecn == 0 || ecn == 3) /* RFC 3168 5: Not-ECT is never marked; CE stays CE */
		return 0;
	if (v6) {
		frame[l3 + 1] |= 0x30;
		return 1;
	} else {
		uint8_t *ip = frame + l3;
		uint16_t old = rd16(ip), neww;
		uint32_t sum;

		ip[1] |= 3;
		neww = rd16(ip);
		/* RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m') over the changed 16-bit word. */
		sum = (uint16_t)~rd16(ip + 10);
		sum += (uint16_t)~old;
		sum += neww;
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (uint16_t)~sum;
		ip[10] = (uint8_t)(sum >> 8);
		ip[11] = (uint8_t)sum;
	}
	return 1;
}
