/* SPDX-License-Identifier: MIT
 * metaroced QP sharding: QPN ranges, frame peeks, session placement (see shard_map.h).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "shard_map.h"

#define ETH_HLEN 14
#define VLAN_HLEN 4
#define ETH_P_IPV4 0x0800
#define ETH_P_IPV6 0x86dd
#define ETH_P_8021Q 0x8100
#define IPPROTO_UDP_ 17
#define UDP_HLEN 8
#define ROCE_V2_PORT 4791       /* A17.3.2: the IANA RoCE v2 UDP destination port */
#define BTH_LEN 12

int mr_shard_map_init(struct mr_shard_map *m, uint32_t first_qpn, uint32_t qp_per_shard,
		      unsigned int nshards)
{
	if (m == NULL || nshards == 0 || qp_per_shard == 0 || first_qpn < 2)
		return -EINVAL;
	if ((uint64_t)first_qpn + (uint64_t)qp_per_shard * nshards > MR_SHARD_QPN_LIMIT)
		return -ERANGE;
	m->first_qpn = first_qpn;
	m->qp_per_shard = qp_per_shard;
	m->nshards = nshards;
	return 0;
}

uint32_t mr_shard_first_qpn(const struct mr_shard_map *m, unsigned int shard)
{
	return m->first_qpn + shard * m->qp_per_shard;
}

unsigned int mr_shard_of_qpn(const struct mr_shard_map *m, uint32_t qpn)
{
	uint32_t idx;

	if (m->nshards <= 1 || qpn < m->first_qpn)
		return 0;
	idx = (qpn - m->first_qpn) / m->qp_per_shard;
	return idx < m->nshards ? idx : 0;
}

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* Offset of the L3 header and its ethertype. 0 or negative errno. */
static int l3(const uint8_t *f, uint32_t len, uint32_t *off, uint16_t *type)
{
	if (len < ETH_HLEN)
		return -EMSGSIZE;
	*type = be16(f + 12);
	*off = ETH_HLEN;
	if (*type == ETH_P_8021Q) {
		if (len < ETH_HLEN + VLAN_HLEN)
			return -EMSGSIZE;
		*type = be16(f + 16);
		*off += VLAN_HLEN;
	}
	return *type == ETH_P_IPV4 || *type == ETH_P_IPV6 ? 0 : -ENOENT;
}

/* Offset of the UDP header (IPv4 without fragmentation, IPv6 whose next header is UDP). */
static int l4_udp(const uint8_t *f, uint32_t len, uint32_t *udp)
{
	uint32_t off;
	uint16_t type;
	int rc = l3(f, len, &off, &type);

	if (rc < 0)
		return rc;
	if (type == ETH_P_IPV4) {
		uint32_t ihl;

		if (len - off < 20)
			return -EMSGSIZE;
		if ((f[off] >> 4) != 4 || (ihl = (uint32_t)(f[off] & 0xf) * 4) < 20)
			return -ENOENT;
		/* A fragment's UDP header is in the first fragment only (MF or an offset). */
		if ((be16(f + off + 6) & 0x3fff) != 0 || f[off + 9] != IPPROTO_UDP_)
			return -ENOENT;
		*udp = off + ihl;
	} else {
		if (len - off < 40)
			return -EMSGSIZE;
		if ((f[off] >> 4) != 6 || f[off + 6] != IPPROTO_UDP_)
			return -ENOENT;
		*udp = off + 40;
	}
	return 0;
}

int mr_shard_peek_dqpn(const uint8_t *frame, uint32_t len, uint32_t *qpn)
{
	uint32_t udp;
	int rc;

	if (frame == NULL || qpn == NULL)
		return -EINVAL;
	rc = l4_udp(frame, len, &udp);
	if (rc < 0)
		return rc;
	/* udp <= len is not implied for IPv4 (IHL up to 60 bytes): compare without overflow. */
	if (udp > len || len - udp < UDP_HLEN + BTH_LEN)
		return -EMSGSIZE;
	if (be16(frame + udp + 2) != ROCE_V2_PORT)
		return -ENOENT;
	/* BTH bytes 5..7: DestQP (IBA 9.2, figure 111). */
	*qpn = (uint32_t)frame[udp + UDP_HLEN + 5] << 16 |
	       (uint32_t)frame[udp + UDP_HLEN + 6] << 8 | frame[udp + UDP_HLEN + 7];
	return 0;
}

int mr_shard_peek_dgid(const uint8_t *frame, uint32_t len, uint8_t gid[16])
{
	uint32_t off;
	uint16_t type;
	int rc;

	if (frame == NULL || gid == NULL)
		return -EINVAL;
	rc = l3(frame, len, &off, &type);
	if (rc < 0)
		return rc;
	if (type == ETH_P_IPV4) {
		if (len - off < 20)
			return -EMSGSIZE;
		if ((frame[off] >> 4) != 4)
			return -ENOENT;
		memset(gid, 0, 10);
		gid[10] = 0xff;
		gid[11] = 0xff;
		memcpy(gid + 12, frame + off + 16, 4);
	} else {
		if (len - off < 40)
			return -EMSGSIZE;
		if ((frame[off] >> 4) != 6)
			return -ENOENT;
		memcpy(gid, frame + off + 24, 16);
	}
	return 0;
}

unsigned int mr_shard_pick(const uint32_t *load, unsigned int n)
{
	unsigned int i, best = 0;

	for (i = 1; i < n; i++)
		if (load[i] < load[best])
			best = i;
	return best;
}
