/* SPDX-License-Identifier: MIT
 * ARP for Ethernet/IPv4 (RFC 826), with the address-conflict and announcement rules of RFC 5227.
 * Packet layout (RFC 826 "Packet format"): htype(2) ptype(2) hlen(1) plen(1) op(2) sha(6) spa(4)
 * tha(6) tpa(4).
 */
#include <errno.h>
#include <string.h>

#include "neigh_priv.h"

#define ARP_HTYPE_ETHER 1
#define ARP_OP_REQUEST 1
#define ARP_OP_REPLY 2

int mr_neigh_arp_build(const struct mr_neigh *neigh, uint16_t op, const uint8_t dmac[6],
		       const uint8_t tha[6], const uint8_t tpa[4], uint8_t *buf, uint32_t cap)
{
	uint32_t off = mr_neigh_l2_put(neigh, buf, cap, dmac, MR_ETHERTYPE_ARP);
	uint8_t *a;

	if (off == 0 || cap - off < MR_ARP_LEN)
		return -ENOSPC;
	a = buf + off;
	mr_neigh_put16(a, ARP_HTYPE_ETHER);
	mr_neigh_put16(a + 2, MR_ETHERTYPE_IPV4);
	a[4] = 6;
	a[5] = 4;
	mr_neigh_put16(a + 6, op);
	memcpy(a + 8, neigh->conf.mac, 6);
	memcpy(a + 14, neigh->conf.ipv4, 4);
	memcpy(a + 18, tha, 6);
	memcpy(a + 24, tpa, 4);
	return (int)mr_neigh_pad(buf, off + MR_ARP_LEN, cap);
}

int mr_neigh_gratuitous_arp(const struct mr_neigh *neigh, uint8_t *buf, uint32_t cap)
{
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	static const uint8_t zero[6];

	if (neigh == NULL || buf == NULL)
		return -EINVAL;
	if (!neigh->conf.ipv4_en)
		return -EAFNOSUPPORT;
	/* RFC 5227 3: an ARP Announcement is a broadcast request with SPA = TPA = our address
	 * and a zero THA. */
	return mr_neigh_arp_build(neigh, ARP_OP_REQUEST, bcast, zero, neigh->conf.ipv4, buf, cap);
}

void mr_neigh_arp_input(struct mr_neigh *neigh, const uint8_t *eth, const uint8_t *arp,
			uint32_t len, uint64_t now, uint8_t *reply, uint32_t cap, uint32_t *reply_len)
{
	uint8_t spa_gid[16];
	const uint8_t *sha, *spa, *tpa;
	struct mr_neigh_entry *e;
	uint16_t op;
	bool for_us, spa_zero;
	int rlen;

	if (len < MR_ARP_LEN || mr_neigh_be16(arp) != ARP_HTYPE_ETHER ||
	    mr_neigh_be16(arp + 2) != MR_ETHERTYPE_IPV4 || arp[4] != 6 || arp[5] != 4) {
		neigh->stats.arp_malformed++;
		return;
	}
	op = mr_neigh_be16(arp + 6);
	sha = arp + 8;
	spa = arp + 14;
	tpa = arp + 24;
	/* A group or zero sender hardware address would poison the cache (RFC 1812 3.3.2). */
	if ((op != ARP_OP_REQUEST && op != ARP_OP_REPLY) || mr_neigh_mac_is_mcast(sha) ||
	    mr_neigh_mac_is_zero(sha)) {
		neigh->stats.arp_malformed++;
		return;
	}
	neigh->stats.arp_rx++;
	if (op == ARP_OP_REPLY)
		neigh->stats.arp_replies_rx++;
	/* A promiscuous port also sees unicast ARP between other hosts. */
	if (!mr_neigh_mac_is_mcast(eth) && memcmp(eth, neigh->conf.mac, 6) != 0) {
		neigh->stats.arp_ignored++;
		return;
	}
	if (!neigh->conf.ipv4_en) {
		neigh->stats.arp_ignored++;
		return;
	}
	if (memcmp(spa, neigh->conf.ipv4, 4) == 0) {
		/* RFC 5227 2.4: someone else uses our address (our own frames looped back by a
		 * switch carry our MAC and are not a conflict). */
		if (memcmp(sha, neigh->conf.mac, 6) != 0)
			neigh->stats.addr_conflicts++;
		return;
	}
	spa_zero = spa[0] == 0 && spa[1] == 0 && spa[2] == 0 && spa[3] == 0;
	for_us = memcmp(tpa, neigh->conf.ipv4, 4) == 0;
	memcpy(spa_gid, neigh->gid4, 12);
	memcpy(spa_gid + 12, spa, 4);
	/* RFC 826 "merge": refresh the sender if known; add it if the packet is for us. An RFC 5227
	 * probe (SPA 0.0.0.0) says nothing about the sender's address. */
	if (!spa_zero && mr_neigh_addr_is_unicast(spa_gid)) {
		e = for_us ? mr_neigh_get(neigh, spa_gid, now) : mr_neigh_find(neigh, spa_gid, now);
		if (e != NULL)
			mr_neigh_confirm(neigh, e, sha, now);
	}
	if (!for_us) {
		neigh->stats.arp_ignored++;
		return;
	}
	if (op != ARP_OP_REQUEST)
		return;
	/* RFC 826: swap sender and target, fill in our hardware address, op = reply; sent unicast
	 * to the requester. */
	rlen = mr_neigh_arp_build(neigh, ARP_OP_REPLY, sha, sha, spa, reply, cap);
	if (rlen > 0) {
		*reply_len = (uint32_t)rlen;
		neigh->stats.arp_requests_answered++;
	}
}
