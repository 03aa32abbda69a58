/* SPDX-License-Identifier: MIT
 * IPv6 Neighbor Discovery (RFC 4861): Neighbor Solicitation and Advertisement only; router
 * discovery and redirects are the kernel's or the operator's business, not a RoCE port's.
 * Message layouts: NS (4.3) type 135, code, checksum, reserved(4), target(16), options;
 * NA (4.4) type 136, code, checksum, R|S|O flags + reserved(4), target(16), options;
 * link-layer address option (4.6.1) type(1) length-in-8-octets(1) address(6).
 */
#include <errno.h>
#include <string.h>

#include "neigh_priv.h"

#define ND_MSG_LEN 24       /* NS/NA without options */
#define ND_LLAO_LEN 8
#define ND_NA_FLAG_R 0x80
#define ND_NA_FLAG_S 0x40
#define ND_NA_FLAG_O 0x20

static const uint8_t all_nodes[16] = { 0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };

uint16_t mr_neigh_icmp6_csum(const uint8_t src[16], const uint8_t dst[16], const uint8_t *icmp,
			     uint32_t len)
{
	uint64_t sum = 0;
	uint32_t i;

	for (i = 0; i < 16; i += 2)
		sum += (uint32_t)mr_neigh_be16(src + i) + mr_neigh_be16(dst + i);
	sum += (len >> 16) + (len & 0xffff); /* 32-bit upper-layer length (RFC 8200 8.1) */
	sum += MR_IPPROTO_ICMPV6;            /* 24 zero bits + next header */
	for (i = 0; i + 1 < len; i += 2)
		sum += mr_neigh_be16(icmp + i);
	if (len & 1)
		sum += (uint32_t)icmp[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static bool ip6_is_mcast(const uint8_t a[16])
{
	return a[0] == 0xff;
}

static bool ip6_is_unspec(const uint8_t a[16])
{
	static const uint8_t zero[16];

	return memcmp(a, zero, 16) == 0;
}

/* IPv6 header + ICMPv6 NS/NA with one link-layer address option carrying our MAC. */
static int nd_build(const struct mr_neigh *neigh, const uint8_t dmac[6], const uint8_t dst[16],
		    uint8_t type, uint8_t flags, const uint8_t target[16], uint8_t opt_type,
		    uint8_t *buf, uint32_t cap)
{
	const uint32_t icmp_len = ND_MSG_LEN + ND_LLAO_LEN;
	uint32_t off = mr_neigh_l2_put(neigh, buf, cap, dmac, MR_ETHERTYPE_IPV6);
	uint8_t *ip6, *icmp;
	uint16_t csum;

	if (off == 0 || cap - off < MR_IPV6_HDR_LEN + icmp_len)
		return -ENOSPC;
	ip6 = buf + off;
	memset(ip6, 0, MR_IPV6_HDR_LEN + icmp_len);
	ip6[0] = 0x60; /* version 6, traffic class 0, flow label 0 */
	mr_neigh_put16(ip6 + 4, (uint16_t)icmp_len);
	ip6[6] = MR_IPPROTO_ICMPV6;
	ip6[7] = MR_ND_HOP_LIMIT;
	memcpy(ip6 + 8, neigh->conf.ipv6, 16);
	memcpy(ip6 + 24, dst, 16);
	icmp = ip6 + MR_IPV6_HDR_LEN;
	icmp[0] = type;
	icmp[4] = flags;
	memcpy(icmp + 8, target, 16);
	icmp[24] = opt_type;
	icmp[25] = 1; /* length in units of 8 octets */
	memcpy(icmp + 26, neigh->conf.mac, 6);
	csum = mr_neigh_icmp6_csum(ip6 + 8, ip6 + 24, icmp, icmp_len);
	mr_neigh_put16(icmp + 2, csum);
	return (int)mr_neigh_pad(buf, off + MR_IPV6_HDR_LEN + icmp_len, cap);
}

int mr_neigh_ns_build(const struct mr_neigh *neigh, const uint8_t target[16], const uint8_t *mac,
		      uint8_t *buf, uint32_t cap)
{
	uint8_t dst[16], dmac[6];

	if (mac != NULL) {
		/* RFC 4861 7.3.3 PROBE: unicast to the cached link-layer address. */
		memcpy(dst, target, 16);
		memcpy(dmac, mac, 6);
	} else {
		/* RFC 4861 7.2.2: multicast to the target's solicited-node address. */
		mr_neigh_solicited_node(target, dst);
		mr_neigh_ipv6_mcast_mac(dst, dmac);
	}
	/* RFC 4861 7.2.2: include our link-layer address so the target can answer directly. */
	return nd_build(neigh, dmac, dst, MR_ND_NS, 0, target, MR_ND_OPT_SLLAO, buf, cap);
}

int mr_neigh_na_build(const struct mr_neigh *neigh, const uint8_t dst_ip[16],
		      const uint8_t dmac[6], bool solicited, uint8_t *buf, uint32_t cap)
{
	/* RFC 4861 7.2.4: Override set since we are the address owner; Router clear. */
	uint8_t flags = ND_NA_FLAG_O | (solicited ? ND_NA_FLAG_S : 0);

	return nd_build(neigh, dmac, dst_ip, MR_ND_NA, flags, neigh->conf.ipv6, MR_ND_OPT_TLLAO, buf,
			cap);
}

int mr_neigh_unsolicited_na(const struct mr_neigh *neigh, uint8_t *buf, uint32_t cap)
{
	uint8_t dmac[6];

	if (neigh == NULL || buf == NULL)
		return -EINVAL;
	if (!neigh->conf.ipv6_en)
		return -EAFNOSUPPORT;
	mr_neigh_ipv6_mcast_mac(all_nodes, dmac);
	/* RFC 4861 7.2.6: to all-nodes, Solicited clear. */
	return mr_neigh_na_build(neigh, all_nodes, dmac, false, buf, cap);
}

/* The parts of a valid NS/NA. */
struct nd_msg {
	const uint8_t *src, *dst, *target;
	const uint8_t *lladdr; /* SLLAO for NS, TLLAO for NA, or NULL */
	uint8_t type, flags;
	bool has_sllao;
};

/* RFC 4861 7.1.1 / 7.1.2 validity checks. Returns 0, or -EBADMSG (malformed), -EPROTO (bad
 * checksum). */
static int nd_validate(const uint8_t *ip6, uint32_t len, struct nd_msg *m)
{
	uint32_t plen = mr_neigh_be16(ip6 + 4), off;
	const uint8_t *icmp = ip6 + MR_IPV6_HDR_LEN;

	if ((ip6[0] >> 4) != 6 || plen > len - MR_IPV6_HDR_LEN || plen < ND_MSG_LEN)
		return -EBADMSG;
	if (ip6[7] != MR_ND_HOP_LIMIT || icmp[1] != 0)
		return -EBADMSG;
	m->src = ip6 + 8;
	m->dst = ip6 + 24;
	if (mr_neigh_icmp6_csum(m->src, m->dst, icmp, plen) != 0)
		return -EPROTO;
	m->type = icmp[0];
	m->flags = icmp[4];
	m->target = icmp + 8;
	m->lladdr = NULL;
	m->has_sllao = false;
	if (ip6_is_mcast(m->target))
		return -EBADMSG;
	for (off = ND_MSG_LEN; off < plen;) {
		uint32_t olen;

		if (plen - off < 2)
			return -EBADMSG;
		olen = (uint32_t)icmp[off + 1] * 8;
		if (olen == 0 || olen > plen - off) /* RFC 4861 4.6: length 0 is invalid */
			return -EBADMSG;
		if (olen >= ND_LLAO_LEN &&
		    icmp[off] == (m->type == MR_ND_NS ? MR_ND_OPT_SLLAO : MR_ND_OPT_TLLAO)) {
			m->lladdr = icmp + off + 2;
			m->has_sllao = m->type == MR_ND_NS;
		}
		off += olen;
	}
	if (m->type == MR_ND_NS && ip6_is_unspec(m->src)) {
		/* DAD probe: must go to a solicited-node group and carry no SLLAO. */
		static const uint8_t sn_prefix[13] = { 0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff };

		if (memcmp(m->dst, sn_prefix, sizeof(sn_prefix)) != 0 || m->has_sllao)
			return -EBADMSG;
	}
	if (m->type == MR_ND_NA && ip6_is_mcast(m->dst) && (m->flags & ND_NA_FLAG_S))
		return -EBADMSG;
	if (m->lladdr != NULL && (mr_neigh_mac_is_mcast(m->lladdr) || mr_neigh_mac_is_zero(m->lladdr)))
		return -EBADMSG;
	return 0;
}

static void ns_input(struct mr_neigh *neigh, const uint8_t *smac, const struct nd_msg *m,
		     uint64_t now, uint8_t *reply, uint32_t cap, uint32_t *reply_len)
{
	uint8_t sn[16], dmac[6];
	const uint8_t *dst;
	bool dad = ip6_is_unspec(m->src);
	int rlen;

	mr_neigh_solicited_node(neigh->conf.ipv6, sn);
	if (!neigh->conf.ipv6_en || memcmp(m->target, neigh->conf.ipv6, 16) != 0 ||
	    (memcmp(m->dst, neigh->conf.ipv6, 16) != 0 && memcmp(m->dst, sn, 16) != 0)) {
		neigh->stats.nd_ignored++;
		return;
	}
	/* RFC 4861 7.2.3: learn the solicitor's address. We enter it as REACHABLE rather than
	 * STALE: a host that solicits us is about to talk to us. */
	if (!dad && m->lladdr != NULL && !mr_neigh_gid_is_v4(m->src) && !ip6_is_mcast(m->src)) {
		struct mr_neigh_entry *e = mr_neigh_get(neigh, m->src, now);

		if (e != NULL)
			mr_neigh_confirm(neigh, e, m->lladdr, now);
	}
	if (dad) {
		/* RFC 4861 7.2.4: answer a DAD probe to all-nodes with Solicited clear. */
		dst = all_nodes;
		mr_neigh_ipv6_mcast_mac(all_nodes, dmac);
	} else {
		dst = m->src;
		memcpy(dmac, m->lladdr != NULL ? m->lladdr : smac, 6);
	}
	rlen = mr_neigh_na_build(neigh, dst, dmac, !dad, reply, cap);
	if (rlen > 0) {
		*reply_len = (uint32_t)rlen;
		neigh->stats.ns_answered++;
	}
}

static void na_input(struct mr_neigh *neigh, const struct nd_msg *m, uint64_t now)
{
	const uint8_t *ll = m->lladdr;
	struct mr_neigh_entry *e;
	bool s = (m->flags & ND_NA_FLAG_S) != 0, o = (m->flags & ND_NA_FLAG_O) != 0;

	neigh->stats.na_rx++;
	if (neigh->conf.ipv6_en && memcmp(m->target, neigh->conf.ipv6, 16) == 0) {
		/* RFC 4862 5.4.4: another node defends our address. */
		if (ll != NULL && memcmp(ll, neigh->conf.mac, 6) != 0)
			neigh->stats.addr_conflicts++;
		return;
	}
	e = mr_neigh_find(neigh, m->target, now);
	if (e == NULL || e->state == MR_NEIGH_PERMANENT || e->state == MR_NEIGH_FAILED) {
		/* RFC 4861 7.2.5: no entry -> silently discard. A FAILED entry is only retried
		 * once its hold time is over. */
		neigh->stats.nd_ignored++;
		return;
	}
	if (e->state == MR_NEIGH_INCOMPLETE) {
		/* RFC 4861 7.2.5: without a TLLAO there is nothing to learn. We enter REACHABLE
		 * also for S=0 (RFC: STALE), since we asked and the answer names the target. */
		if (ll == NULL) {
			neigh->stats.nd_ignored++;
			return;
		}
		mr_neigh_confirm(neigh, e, ll, now);
		return;
	}
	if (ll == NULL || memcmp(ll, e->mac, 6) == 0) {
		if (s)
			mr_neigh_confirm(neigh, e, e->mac, now);
		return;
	}
	if (!o) {
		/* Different address without Override: keep ours (RFC 4861 7.2.5). */
		neigh->stats.nd_ignored++;
		return;
	}
	if (s) {
		mr_neigh_confirm(neigh, e, ll, now);
	} else {
		/* Unsolicited override: take the new address but re-validate it (STALE). */
		memcpy(e->mac, ll, 6);
		e->state = MR_NEIGH_PROBE;
		e->probes = 0;
		mr_neigh_set_expires(neigh, e, now);
	}
}

void mr_neigh_nd_input(struct mr_neigh *neigh, const uint8_t *dmac, const uint8_t *smac,
		       const uint8_t *ip6, uint32_t len, uint64_t now, uint8_t *reply, uint32_t cap,
		       uint32_t *reply_len)
{
	struct nd_msg m;
	int rc = nd_validate(ip6, len, &m);

	if (rc == -EPROTO) {
		neigh->stats.nd_bad_csum++;
		return;
	}
	if (rc < 0) {
		neigh->stats.nd_malformed++;
		return;
	}
	neigh->stats.nd_rx++;
	if (!mr_neigh_mac_is_mcast(dmac) && memcmp(dmac, neigh->conf.mac, 6) != 0) {
		neigh->stats.nd_ignored++; /* unicast between other hosts, seen in promiscuous mode */
		return;
	}
	if (m.type == MR_ND_NS)
		ns_input(neigh, smac, &m, now, reply, cap, reply_len);
	else
		na_input(neigh, &m, now);
}
