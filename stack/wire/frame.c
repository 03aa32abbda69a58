/* SPDX-License-Identifier: MIT
 * RoCE v2 frame builder and parser (IBA Annex A17): Ethernet [802.1Q] / IPv4|IPv6 / UDP 4791 /
 * BTH / extension headers / payload / pad / ICRC. Both directions take the header layout from the
 * one opcode table (roce_opcode.c) and the ICRC from the one pseudo-header routine (icrc.c).
 *
 * The parser never trusts a length it has not checked against the bytes it was given: every read
 * is preceded by a bounds check, and every rejection has its own enum mr_parse_result so that
 * drops can be counted by reason.
 */
#include <errno.h>
#include <string.h>

#include "wire/icrc.h"
#include "wire/roce_hdr.h"
#include "wire/roce_opcode.h"
#include "wire/roce_pkt.h"

#define ETH_HLEN 14
#define VLAN_HLEN 4
#define ETH_P_IPV4 0x0800
#define ETH_P_IPV6 0x86dd
#define ETH_P_8021Q 0x8100
#define IPV4_HLEN 20
#define IPV6_HLEN 40
#define UDP_HLEN 8
#define IPPROTO_UDP_NUM 17
#define IPV4_DF 0x4000
#define IPV4_MF_OFF_MASK 0x3fff /* MF flag + fragment offset */
/* Payloads from this size on are copied with mr_crc32_copy(): below it, a second read of the
 * payload (still in L1) costs less than the extra CRC reductions of chaining per iov. */
#define FUSED_COPY_MIN 1024u

static const char *const parse_result_names[MR_PARSE_NR_RESULTS] = {
	[MR_PARSE_OK] = "ok",
	[MR_PARSE_NOT_ROCE] = "not RoCE v2",
	[MR_PARSE_TRUNCATED] = "truncated",
	[MR_PARSE_BAD_IP] = "bad IP header (version/IHL/fragment)",
	[MR_PARSE_BAD_IP_CSUM] = "bad IPv4 header checksum",
	[MR_PARSE_BAD_IP_LEN] = "bad IP length",
	[MR_PARSE_BAD_UDP_LEN] = "bad UDP length",
	[MR_PARSE_BAD_UDP_CSUM] = "bad UDP checksum",
	[MR_PARSE_BAD_VERSION] = "bad BTH transport version or MRETH version",
	[MR_PARSE_UNKNOWN_OPCODE] = "unknown BTH opcode",
	[MR_PARSE_BAD_PAD] = "bad pad count",
	[MR_PARSE_BAD_LENGTH] = "payload length illegal for opcode",
	[MR_PARSE_BAD_ICRC] = "bad ICRC",
};

const char *mr_parse_result_str(enum mr_parse_result r)
{
	if ((unsigned int)r >= MR_PARSE_NR_RESULTS)
		return "invalid parse result";
	return parse_result_names[r];
}

const char *mr_opcode_name(uint8_t opcode)
{
	return mr_opcode_table[opcode].name;
}

unsigned int mr_opcode_hdr_len(uint8_t opcode)
{
	const struct mr_opcode_info *oi = mr_opcode_info(opcode);

	return oi ? oi->length : 0;
}

/* RFC 1071 one's-complement sum, continued from sum. */
static uint32_t csum_add(uint32_t sum, const uint8_t *p, uint32_t len)
{
	while (len >= 2) {
		sum += mr_get_be16(p);
		p += 2;
		len -= 2;
	}
	if (len)
		sum += (uint32_t)p[0] << 8;
	return sum;
}

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* RFC 791 header check: the one's complement sum of the header (checksum included) is 0xffff.
 * Summed as 32-bit words in host order and folded (RFC 1071 2(B)/(C): the sum does not depend on
 * byte order or on the word width, and 0xffff swapped is 0xffff): five loads for a 20-byte
 * header where the 16-bit loop took ten, 4 % of a receiving engine's cycles at 8 B WRITEs
 * (perf). iphl is a multiple of 4 (IHL counts 32-bit words). */
static bool ipv4_hdr_csum_ok(const uint8_t *ip, uint32_t iphl)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < iphl; i += 4) {
		uint32_t w;

		memcpy(&w, ip + i, sizeof(w));
		sum += w;
	}
	sum = (sum & 0xffffffffu) + (sum >> 32);
	sum = (sum & 0xffffffffu) + (sum >> 32);
	return csum_fold((uint32_t)(sum & 0xffff) + (uint32_t)(sum >> 16)) == 0xffff;
}

/* The 20-byte header mr_frame_build writes for path (version 4, IHL 5, DF, protocol UDP): the
 * one's complement sum of its 16-bit words that do not change from frame to frame, i.e. all
 * but the total length, the id and the checksum (RFC 1071: the sum is associative, so those
 * are added per frame, ipv4_csum_of). */
static uint32_t ipv4_csum_base(const struct mr_path *path)
{
	return (0x45u << 8 | path->tclass) + IPV4_DF +
	       ((uint32_t)path->ttl << 8 | IPPROTO_UDP_NUM) + mr_get_be16(path->sgid + 12) +
	       mr_get_be16(path->sgid + 14) + mr_get_be16(path->dgid + 12) +
	       mr_get_be16(path->dgid + 14);
}

/* RFC 791 header checksum (host order) from the values written, not read back: reading bytes
 * stored a moment ago as words stalls on store forwarding. */
static uint16_t ipv4_csum_of(uint32_t base, uint16_t tot_len, uint16_t id)
{
	return (uint16_t)~csum_fold(base + tot_len + id);
}

/* UDP checksum over the pseudo-header (RFC 768 / RFC 8200 8.1) and the datagram; a correct
 * datagram sums to 0xffff. */
static bool udp_csum_ok(const uint8_t *ip, bool ipv6, const uint8_t *udp, uint32_t ulen)
{
	uint32_t sum = 0;

	if (ipv6)
		sum = csum_add(sum, ip + 8, 32);
	else
		sum = csum_add(sum, ip + 12, 8);
	sum += IPPROTO_UDP_NUM + ulen;
	sum = csum_add(sum, udp, ulen);
	return csum_fold(sum) == 0xffff;
}

static void gid_from_ipv4(uint8_t gid[16], const uint8_t *a)
{
	/* IPv4-mapped GID ::ffff:a.b.c.d (A17.8 / RFC 4291 2.5.5.2). Two 8-byte stores: the
	 * receive path's next step compares bytes 0-11 (a 4-byte load at offset 8), which a
	 * 2-byte and two 1-byte stores could not forward (perf: mr_backend_is_local_gid, 3 % of
	 * a receiving engine at 8-byte WRITEs, was that stall). */
	uint64_t lo = 0, hi;
	uint32_t v4;

	memcpy(&v4, a, 4);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	hi = (uint64_t)v4 << 32 | 0xffff0000u;
#else
	hi = 0xffffull << 32 | v4;
#endif
	memcpy(gid, &lo, 8);
	memcpy(gid + 8, &hi, 8);
}

/* Decode BTH and the extension headers the opcode table says are present. */
static void decode_hdrs(const struct mr_opcode_info *oi, const uint8_t *bth,
			struct mr_roce_hdrs *h)
{
	h->opcode = mr_bth_opcode(bth);
	h->se = mr_bth_se(bth);
	h->mig = mr_bth_mig(bth);
	h->padcnt = mr_bth_pad(bth);
	h->tver = mr_bth_tver(bth);
	h->pkey = mr_bth_pkey(bth);
	h->fecn = mr_bth_fecn(bth);
	h->becn = mr_bth_becn(bth);
	h->dqpn = mr_bth_qpn(bth);
	h->ackreq = mr_bth_ackreq(bth);
	h->psn = mr_bth_psn(bth);
	if (oi->mask & MR_MRETH_MASK) {
		const uint8_t *p = bth + oi->offset[MR_HDR_MRETH];

		h->mreth.ver = mr_mreth_ver(p);
		h->mreth.flags = mr_mreth_flags(p);
		h->mreth.path = mr_mreth_path(p);
		h->mreth.msg_seq = mr_mreth_msg_seq(p);
		h->mreth.offset = mr_mreth_offset(p);
		h->mreth.msg_len = mr_mreth_msg_len(p);
		h->mreth.ts = mr_mreth_ts(p);
	}
	if (oi->mask & MR_SACKETH_MASK) {
		const uint8_t *p = bth + oi->offset[MR_HDR_SACKETH];

		h->sack.base = mr_sacketh_base(p);
		memcpy(h->sack.bitmap, mr_sacketh_bitmap(p), sizeof(h->sack.bitmap));
		h->sack.ce_count = mr_sacketh_ce_count(p);
	}
	if (oi->mask & MR_RETH_MASK) {
		const uint8_t *p = bth + oi->offset[MR_HDR_RETH];

		h->reth.va = mr_reth_va(p);
		h->reth.rkey = mr_reth_rkey(p);
		h->reth.dlen = mr_reth_len(p);
	}
	if (oi->mask & MR_AETH_MASK) {
		const uint8_t *p = bth + oi->offset[MR_HDR_AETH];

		h->aeth.syndrome = mr_aeth_syn(p);
		h->aeth.msn = mr_aeth_msn(p);
	}
	if (oi->mask & MR_ATMETH_MASK) {
		const uint8_t *p = bth + oi->offset[MR_HDR_ATMETH];

		h->atmeth.va = mr_atmeth_va(p);
		h->atmeth.rkey = mr_atmeth_rkey(p);
		h->atmeth.swap_add = mr_atmeth_swap_add(p);
		h->atmeth.cmp = mr_atmeth_cmp(p);
	}
	if (oi->mask & MR_ATMACK_MASK)
		h->atmack = mr_atmack_orig(bth + oi->offset[MR_HDR_ATMACK]);
	if (oi->mask & MR_IMMDT_MASK)
		h->imm = mr_immdt(bth + oi->offset[MR_HDR_IMMDT]);
	if (oi->mask & MR_IETH_MASK)
		h->ieth_rkey = mr_ieth_rkey(bth + oi->offset[MR_HDR_IETH]);
	if (oi->mask & MR_DETH_MASK) {
		const uint8_t *p = bth + oi->offset[MR_HDR_DETH];

		h->deth.qkey = mr_deth_qkey(p);
		h->deth.sqpn = mr_deth_sqpn(p);
	}
}

enum mr_parse_result mr_frame_parse(const uint8_t *frame, uint32_t len, bool check_icrc,
				    struct mr_pkt *pkt)
{
	const struct mr_opcode_info *oi;
	const uint8_t *ip, *udp, *bth;
	uint32_t off = ETH_HLEN, iphl, l4len, ulen, roce_len, area, paylen;
	enum mr_parse_result r;
	uint16_t etype, csum;
	uint8_t padcnt;

	if (!pkt)
		return MR_PARSE_NOT_ROCE;
	mr_zero_fixed(pkt, sizeof(*pkt));
	pkt->frame = frame;
	pkt->frame_len = len;
	if (!frame || len < ETH_HLEN)
		return MR_PARSE_TRUNCATED;
	memcpy(pkt->dmac, frame, 6);
	memcpy(pkt->smac, frame + 6, 6);
	etype = mr_get_be16(frame + 12);
	if (etype == ETH_P_8021Q) {
		if (len < ETH_HLEN + VLAN_HLEN)
			return MR_PARSE_TRUNCATED;
		pkt->vlan = true;
		pkt->vlan_tci = mr_get_be16(frame + 14);
		etype = mr_get_be16(frame + 16);
		off += VLAN_HLEN;
	}
	ip = frame + off;
	if (etype == ETH_P_IPV4) {
		uint16_t tot;

		if (len - off < IPV4_HLEN)
			return MR_PARSE_TRUNCATED;
		if ((ip[0] >> 4) != 4)
			return MR_PARSE_BAD_IP;
		iphl = (ip[0] & 0x0fu) * 4;
		if (iphl < IPV4_HLEN)
			return MR_PARSE_BAD_IP;
		if (len - off < iphl)
			return MR_PARSE_TRUNCATED;
		if (ip[9] != IPPROTO_UDP_NUM)
			return MR_PARSE_NOT_ROCE;
		/* RoCE v2 is never fragmented (A17.4: DF set, MTU respected); a fragment cannot be
		 * verified without reassembly, which a RoCE receiver does not do. */
		if (mr_get_be16(ip + 6) & IPV4_MF_OFF_MASK)
			return MR_PARSE_BAD_IP;
		if (!ipv4_hdr_csum_ok(ip, iphl))
			return MR_PARSE_BAD_IP_CSUM;
		tot = mr_get_be16(ip + 2);
		if (tot < iphl + UDP_HLEN)
			return MR_PARSE_BAD_IP_LEN;
		/* Ethernet may pad a short frame: bytes after tot are ignored, missing ones are not. */
		if (tot > len - off)
			return MR_PARSE_TRUNCATED;
		l4len = tot - iphl;
		pkt->ipv6 = false;
		pkt->tclass = ip[1];
		pkt->ttl = ip[8];
		gid_from_ipv4(pkt->sgid, ip + 12);
		gid_from_ipv4(pkt->dgid, ip + 16);
	} else if (etype == ETH_P_IPV6) {
		uint16_t plen;

		if (len - off < IPV6_HLEN)
			return MR_PARSE_TRUNCATED;
		if ((ip[0] >> 4) != 6)
			return MR_PARSE_BAD_IP;
		iphl = IPV6_HLEN;
		/* Extension headers are not followed: RoCE v2 senders put UDP right after the
		 * fixed header (A17.4.5.2), so anything else is not ours. */
		if (ip[6] != IPPROTO_UDP_NUM)
			return MR_PARSE_NOT_ROCE;
		plen = mr_get_be16(ip + 4);
		if (plen < UDP_HLEN)
			return MR_PARSE_BAD_IP_LEN;
		if (plen > len - off - IPV6_HLEN)
			return MR_PARSE_TRUNCATED;
		l4len = plen;
		pkt->ipv6 = true;
		pkt->tclass = (uint8_t)(mr_get_be16(ip) >> 4);
		pkt->ttl = ip[7];
		memcpy(pkt->sgid, ip + 8, 16);
		memcpy(pkt->dgid, ip + 24, 16);
	} else {
		return MR_PARSE_NOT_ROCE;
	}

	/* UDP: l4len >= 8 bytes are present (checked above). */
	udp = ip + iphl;
	pkt->udp_sport = mr_get_be16(udp);
	pkt->udp_dport = mr_get_be16(udp + 2);
	if (pkt->udp_dport != MR_ROCE_UDP_PORT) /* A17.2.2 */
		return MR_PARSE_NOT_ROCE;
	ulen = mr_get_be16(udp + 4);
	if (ulen != l4len)
		return MR_PARSE_BAD_UDP_LEN;
	/* A17.3.1: senders should send 0; a non-zero checksum must still be right. */
	csum = mr_get_be16(udp + 6);
	if (csum && !udp_csum_ok(ip, pkt->ipv6, udp, ulen))
		return MR_PARSE_BAD_UDP_CSUM;

	roce_len = ulen - UDP_HLEN; /* BTH .. ICRC inclusive */
	if (roce_len < MR_BTH_LEN + MR_ICRC_LEN)
		return MR_PARSE_TRUNCATED;
	bth = udp + UDP_HLEN;
	pkt->bth = bth;
	oi = mr_opcode_info(mr_bth_opcode(bth));
	if (!oi)
		return MR_PARSE_UNKNOWN_OPCODE;
	/* IBA 9.2.x (BTH TVer): only version 0 is defined; others are silently dropped. */
	if (mr_bth_tver(bth) != 0)
		return MR_PARSE_BAD_VERSION;
	if (roce_len < (uint32_t)oi->length + MR_ICRC_LEN)
		return MR_PARSE_TRUNCATED;
	area = roce_len - oi->length - MR_ICRC_LEN; /* payload + pad */
	padcnt = mr_bth_pad(bth);
	/* IBA 9.2 PadCnt: payload + pad is a whole number of 4-byte words. */
	if ((area & 3) || padcnt > area)
		return MR_PARSE_BAD_PAD;
	paylen = area - padcnt;
	decode_hdrs(oi, bth, &pkt->hdr);
	/* MetaRoCE: an MRETH version we do not know means fields we cannot interpret; drop it as
	 * the BTH TVer rule does (docs/metaroce-wire.md, "ver = 1"). */
	if ((oi->mask & MR_MRETH_MASK) && pkt->hdr.mreth.ver != MR_MRETH_VER)
		return MR_PARSE_BAD_VERSION;
	pkt->payload = bth + oi->length;
	pkt->paylen = paylen;
	pkt->icrc = mr_get_le32(bth + roce_len - MR_ICRC_LEN);
	pkt->ip = ip;
	pkt->ip_hdr_len = iphl;
	pkt->icrc_len = roce_len - MR_ICRC_LEN;
	r = mr_opcode_check_len(oi, paylen, padcnt, &pkt->hdr);
	if (r != MR_PARSE_OK)
		return r;
	if (check_icrc && pkt->icrc != mr_icrc_calc(ip, iphl, pkt->ipv6, roce_len - MR_ICRC_LEN))
		return MR_PARSE_BAD_ICRC;
	return MR_PARSE_OK;
}

bool mr_pkt_icrc_ok(const struct mr_pkt *pkt)
{
	return pkt->ip != NULL &&
	       pkt->icrc == mr_icrc_calc(pkt->ip, pkt->ip_hdr_len, pkt->ipv6, pkt->icrc_len);
}

enum mr_parse_result mr_frame_parse_deferred(const uint8_t *frame, uint32_t len,
					     struct mr_pkt *pkt)
{
	enum mr_parse_result r = mr_frame_parse(frame, len, false, pkt);
	uint8_t op;

	if (r != MR_PARSE_OK)
		return r;
	op = pkt->hdr.opcode;
	if ((op == MR_OP_RC_WRITE_MIDDLE || op == MR_OP_RC_WRITE_LAST) &&
	    pkt->paylen >= MR_ICRC_DEFER_MIN) {
		/* The headers' part now (mr_icrc_calc chains, wire/icrc.h); the payload's when it
		 * is placed. */
		pkt->icrc_part = mr_icrc_calc(pkt->ip, pkt->ip_hdr_len, pkt->ipv6,
					      (uint32_t)(pkt->payload - pkt->bth));
		pkt->icrc_pending = true;
		return MR_PARSE_OK;
	}
	return mr_pkt_icrc_ok(pkt) ? MR_PARSE_OK : MR_PARSE_BAD_ICRC;
}

bool mr_pkt_place_checked(const struct mr_pkt *pkt, void *dst)
{
	uint32_t hl = (uint32_t)(pkt->payload - pkt->bth);
	uint32_t pad = pkt->icrc_len - hl - pkt->paylen; /* mr_frame_parse: payload + pad fit */
	uint32_t crc = mr_crc32_copy(pkt->icrc_part, dst, pkt->payload, pkt->paylen);

	crc = mr_crc32(crc, pkt->payload + pkt->paylen, pad);
	return crc == pkt->icrc;
}

/* Zeroes the len header bytes at p (a multiple of 4, IBA 9.2: every header is a whole number of
 * words). A variable-length memset (and the loop of 4-byte stores that was here, which GCC turned
 * back into one) compiled to rep stos, whose start-up cost was 3 % of a WRITE sender's cycles
 * (perf, 1 KiB packets) and 1.3 % at 8 B. Up to MR_ROCE_HDR_MAX_LEN: two to four fixed-size
 * stores that may overlap, never past len (nothing is written beyond the frame). */
static inline void zero_hdrs(uint8_t *p, uint32_t len)
{
	static const uint8_t z[16];

	if (len < 8 || len > MR_ROCE_HDR_MAX_LEN) {
		memset(p, 0, len);
	} else if (len < 16) {
		memcpy(p, z, 8);
		memcpy(p + len - 8, z, 8);
	} else {
		memcpy(p, z, 16);
		if (len > 32)
			memcpy(p + 16, z, 16);
		if (len > 48)
			memcpy(p + 32, z, 16);
		memcpy(p + len - 16, z, 16);
	}
}

/* Write BTH and the extension headers at the offsets the table gives. */
static void encode_hdrs(const struct mr_opcode_info *oi, uint8_t *bth,
			const struct mr_roce_hdrs *h, uint8_t padcnt)
{
	zero_hdrs(bth, oi->length); /* reserved fields and the CNP's 16 bytes are zero */
	mr_bth_set_opcode(bth, h->opcode);
	mr_bth_set_flags(bth, h->se, h->mig, padcnt, 0);
	mr_bth_set_pkey(bth, h->pkey);
	mr_bth_set_ecn(bth, h->fecn, h->becn);
	mr_bth_set_qpn(bth, h->dqpn);
	mr_bth_set_ackreq(bth, h->ackreq);
	mr_bth_set_psn(bth, h->psn);
	/* ver 0 in the caller's struct means "current version" (see roce_pkt.h). */
	if (oi->mask & MR_MRETH_MASK)
		mr_mreth_set(bth + oi->offset[MR_HDR_MRETH], MR_MRETH_VER, h->mreth.flags,
			     h->mreth.path, h->mreth.msg_seq, h->mreth.offset, h->mreth.msg_len,
			     h->mreth.ts);
	if (oi->mask & MR_SACKETH_MASK)
		mr_sacketh_set(bth + oi->offset[MR_HDR_SACKETH], h->sack.base, h->sack.bitmap,
			       h->sack.ce_count);
	if (oi->mask & MR_RETH_MASK)
		mr_reth_set(bth + oi->offset[MR_HDR_RETH], h->reth.va, h->reth.rkey, h->reth.dlen);
	if (oi->mask & MR_AETH_MASK)
		mr_aeth_set(bth + oi->offset[MR_HDR_AETH], h->aeth.syndrome, h->aeth.msn);
	if (oi->mask & MR_ATMETH_MASK)
		mr_atmeth_set(bth + oi->offset[MR_HDR_ATMETH], h->atmeth.va, h->atmeth.rkey,
			      h->atmeth.swap_add, h->atmeth.cmp);
	if (oi->mask & MR_ATMACK_MASK)
		mr_atmack_set(bth + oi->offset[MR_HDR_ATMACK], h->atmack);
	if (oi->mask & MR_IMMDT_MASK)
		mr_immdt_set(bth + oi->offset[MR_HDR_IMMDT], h->imm);
	if (oi->mask & MR_IETH_MASK)
		mr_ieth_set(bth + oi->offset[MR_HDR_IETH], h->ieth_rkey);
	if (oi->mask & MR_DETH_MASK)
		mr_deth_set(bth + oi->offset[MR_HDR_DETH], h->deth.qkey, h->deth.sqpn);
}

/* What a frame of these headers and this payload needs, checked as the parser would check it:
 * the opcode's table entry, the payload length and the pad. 0 or -EINVAL. */
static int frame_plan(const struct mr_roce_hdrs *hdr, const struct mr_iov *iov, unsigned int niov,
		      const struct mr_opcode_info **oip, uint32_t *paylenp, uint8_t *padp)
{
	const struct mr_opcode_info *oi;
	uint32_t paylen = 0;
	uint8_t padcnt;

	if (!hdr || (niov && !iov))
		return -EINVAL;
	oi = mr_opcode_info(hdr->opcode);
	if (!oi || hdr->tver != 0 || hdr->dqpn > MR_BTH_QPN_MASK || hdr->psn > MR_PSN_MASK)
		return -EINVAL;
	/* MetaRoCE: version 1 only (0 = current), no reserved flag bits, 24-bit sack_base. */
	if ((oi->mask & MR_MRETH_MASK) &&
	    ((hdr->mreth.ver != 0 && hdr->mreth.ver != MR_MRETH_VER) ||
	     (hdr->mreth.flags & ~MR_MRETH_FLAGS_MASK)))
		return -EINVAL;
	if ((oi->mask & MR_SACKETH_MASK) && hdr->sack.base > MR_PSN_MASK)
		return -EINVAL;
	for (unsigned int i = 0; i < niov; i++) {
		if (iov[i].len && !iov[i].base)
			return -EINVAL;
		if (iov[i].len > MR_MAX_PAYLOAD || paylen + iov[i].len > MR_MAX_PAYLOAD)
			return -EINVAL;
		paylen += iov[i].len;
	}
	padcnt = (uint8_t)((4 - (paylen & 3)) & 3);
	/* Refuse what a receiver would drop (same rules as the parser). */
	if (mr_opcode_check_len(oi, paylen, padcnt, hdr) != MR_PARSE_OK)
		return -EINVAL;
	*oip = oi;
	*paylenp = paylen;
	*padp = padcnt;
	return 0;
}

/* BTH, extension headers, payload, pad and ICRC (A17.3.3: over the masked IP/UDP headers and
 * everything after them) at bth; ip is the frame's IP header. */
static void frame_body(const uint8_t *ip, uint32_t iphl, bool ipv6, uint8_t *bth,
		       const struct mr_opcode_info *oi, const struct mr_roce_hdrs *hdr,
		       const struct mr_iov *iov, unsigned int niov, uint32_t paylen, uint8_t padcnt)
{
	uint32_t roce_len = oi->length + paylen + padcnt + MR_ICRC_LEN;
	uint8_t *p = bth + oi->length;

	encode_hdrs(oi, bth, hdr, padcnt);
	if (paylen >= FUSED_COPY_MIN) {
		/* Payload copied and folded into the ICRC in one pass (headers first, A17.3.3). */
		uint32_t icrc = mr_icrc_calc(ip, iphl, ipv6, oi->length);

		for (unsigned int i = 0; i < niov; i++) {
			icrc = mr_crc32_copy(icrc, p, iov[i].base, iov[i].len);
			p += iov[i].len;
		}
		memset(p, 0, padcnt);
		mr_put_le32(bth + roce_len - MR_ICRC_LEN, mr_crc32(icrc, p, padcnt));
		return;
	}
	for (unsigned int i = 0; i < niov; i++) {
		if (iov[i].len)
			memcpy(p, iov[i].base, iov[i].len);
		p += iov[i].len;
	}
	memset(p, 0, padcnt);
	mr_put_le32(bth + roce_len - MR_ICRC_LEN,
		    mr_icrc_calc(ip, iphl, ipv6, roce_len - MR_ICRC_LEN));
}

/* Ethernet [802.1Q] / IP / UDP of path at buf (off: the IP header's offset), for a UDP datagram
 * of ulen bytes. */
static void write_l2_l4(uint8_t *buf, uint32_t off, const struct mr_path *path, uint16_t ip_id,
			uint32_t ulen)
{
	uint32_t iphl = path->ipv6 ? IPV6_HLEN : IPV4_HLEN;
	uint8_t *ip, *udp;

	memcpy(buf, path->dmac, 6);
	memcpy(buf + 6, path->smac, 6);
	if (path->vlan) {
		mr_put_be16(buf + 12, ETH_P_8021Q);
		mr_put_be16(buf + 14, path->vlan_tci);
	}
	mr_put_be16(buf + off - 2, path->ipv6 ? ETH_P_IPV6 : ETH_P_IPV4);

	ip = buf + off;
	if (path->ipv6) {
		mr_put_be32(ip, 6u << 28 | (uint32_t)path->tclass << 20 | path->flow_label);
		mr_put_be16(ip + 4, (uint16_t)ulen);
		ip[6] = IPPROTO_UDP_NUM;
		ip[7] = path->ttl;
		memcpy(ip + 8, path->sgid, 16);
		memcpy(ip + 24, path->dgid, 16);
	} else {
		ip[0] = 0x45;
		ip[1] = path->tclass;
		mr_put_be16(ip + 2, (uint16_t)(iphl + ulen));
		mr_put_be16(ip + 4, ip_id);
		mr_put_be16(ip + 6, IPV4_DF); /* A17.4: RoCE v2 must not be fragmented */
		ip[8] = path->ttl;
		ip[9] = IPPROTO_UDP_NUM;
		ip[10] = ip[11] = 0;
		memcpy(ip + 12, path->sgid + 12, 4);
		memcpy(ip + 16, path->dgid + 12, 4);
		mr_put_be16(ip + 10, ipv4_csum_of(ipv4_csum_base(path), (uint16_t)(iphl + ulen),
						  ip_id));
	}

	udp = ip + iphl;
	mr_put_be16(udp, path->udp_sport);
	mr_put_be16(udp + 2, MR_ROCE_UDP_PORT);
	mr_put_be16(udp + 4, (uint16_t)ulen);
	mr_put_be16(udp + 6, 0); /* A17.3.1: UDP checksum 0, the ICRC protects the packet */
}

int mr_frame_build(uint8_t *buf, uint32_t cap, const struct mr_path *path, uint16_t ip_id,
		   const struct mr_roce_hdrs *hdr, const struct mr_iov *iov, unsigned int niov)
{
	const struct mr_opcode_info *oi;
	uint32_t off, iphl, ulen, total, paylen;
	uint8_t padcnt;
	int rc;

	if (!buf || !path)
		return -EINVAL;
	if (path->ipv6 && path->flow_label > 0xfffff)
		return -EINVAL;
	rc = frame_plan(hdr, iov, niov, &oi, &paylen, &padcnt);
	if (rc)
		return rc;
	off = ETH_HLEN + (path->vlan ? VLAN_HLEN : 0);
	iphl = path->ipv6 ? IPV6_HLEN : IPV4_HLEN;
	ulen = UDP_HLEN + oi->length + paylen + padcnt + MR_ICRC_LEN;
	total = off + iphl + ulen;
	if (total > cap)
		return -ENOSPC;
	write_l2_l4(buf, off, path, ip_id, ulen);
	frame_body(buf + off, iphl, path->ipv6, buf + off + iphl + UDP_HLEN, oi, hdr, iov, niov,
		   paylen, padcnt);
	return (int)total;
}

int mr_hdr_tmpl_init(struct mr_hdr_tmpl *t, const struct mr_path *path)
{
	uint32_t off;

	if (t == NULL)
		return -EINVAL;
	memset(t, 0, sizeof(*t));
	if (path == NULL || (path->ipv6 && path->flow_label > 0xfffff))
		return -EINVAL; /* len 0: mr_frame_build_tmpl refuses it, as mr_frame_build would */
	off = ETH_HLEN + (path->vlan ? VLAN_HLEN : 0);
	/* Lengths, IPv4 id and checksum are patched per frame; written here as zero. */
	write_l2_l4(t->b, off, path, 0, 0);
	if (!path->ipv6) {
		uint8_t *ip = t->b + off;

		ip[2] = ip[3] = ip[10] = ip[11] = 0;
		t->csum_base = ipv4_csum_base(path);
	}
	t->ip_off = (uint8_t)off;
	t->ipv6 = path->ipv6;
	t->udp_sport = path->udp_sport;
	t->len = (uint8_t)(off + (path->ipv6 ? IPV6_HLEN : IPV4_HLEN) + UDP_HLEN);
	return 0;
}

int mr_frame_build_tmpl(uint8_t *buf, uint32_t cap, const struct mr_hdr_tmpl *t,
			const uint8_t dmac[6], uint16_t udp_sport, uint16_t ip_id,
			const struct mr_roce_hdrs *hdr, const struct mr_iov *iov, unsigned int niov,
			unsigned int flags)
{
	const struct mr_opcode_info *oi;
	uint32_t iphl, ulen, total, paylen;
	uint8_t *ip, *udp, padcnt;
	int rc;

	if (!buf || !t || !dmac || t->len == 0 || (flags & ~MR_BUILD_IP_CSUM_OFFLOAD))
		return -EINVAL;
	rc = frame_plan(hdr, iov, niov, &oi, &paylen, &padcnt);
	if (rc)
		return rc;
	iphl = t->ipv6 ? IPV6_HLEN : IPV4_HLEN;
	ulen = UDP_HLEN + oi->length + paylen + padcnt + MR_ICRC_LEN;
	total = t->ip_off + iphl + ulen;
	if (total > cap)
		return -ENOSPC;
	/* One fixed-size copy (vector stores) where the buffer has the room: the bytes past the
	 * headers are overwritten by the BTH and what follows, or lie past the frame. */
	if (t->len <= 64 && cap >= 64)
		memcpy(buf, t->b, 64);
	else if (cap >= MR_HDR_TMPL_LEN)
		memcpy(buf, t->b, MR_HDR_TMPL_LEN);
	else
		memcpy(buf, t->b, t->len);
	memcpy(buf, dmac, 6);
	ip = buf + t->ip_off;
	if (t->ipv6) {
		mr_put_be16(ip + 4, (uint16_t)ulen);
	} else {
		uint16_t tot = (uint16_t)(iphl + ulen);

		mr_put_be16(ip + 2, tot);
		mr_put_be16(ip + 4, ip_id);
		/* RFC 791; the template holds 0 there, which the offload wants. The ICRC masks
		 * the field (A17.3.3), so it is the same either way. */
		if (!(flags & MR_BUILD_IP_CSUM_OFFLOAD))
			mr_put_be16(ip + 10, ipv4_csum_of(t->csum_base, tot, ip_id));
	}
	udp = ip + iphl;
	/* MetaRoCE spraying picks the entropy per packet (A17.3.3); 0 keeps the path's port. */
	mr_put_be16(udp, udp_sport != 0 ? udp_sport : t->udp_sport);
	mr_put_be16(udp + 4, (uint16_t)ulen);
	frame_body(ip, iphl, t->ipv6, udp + UDP_HLEN, oi, hdr, iov, niov, paylen, padcnt);
	return (int)total;
}
