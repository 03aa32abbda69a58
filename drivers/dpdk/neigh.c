/* SPDX-License-Identifier: MIT
 * Neighbour cache, lookups, timers and the input dispatcher. The ARP and ND wire formats live in
 * neigh_arp.c and neigh_nd.c.
 *
 * The cache is a flat array searched linearly: it is used on the control path (a QP caches the
 * MAC in its path at connect time), holds a few hundred entries, and a flat array has no failure
 * modes on insert.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "neigh_priv.h"

#define NEIGH_DEF_CAPACITY 256
#define NEIGH_DEF_REACHABLE_NS (30ull * 1000000000ull)
#define NEIGH_DEF_RETRANS_NS (1000000000ull)
#define NEIGH_DEF_MAX_PROBES 3
#define NEIGH_DEF_FAILED_HOLD_NS (1000000000ull)
#define NEIGH_MAX_PROBES_LIMIT 255   /* entry.probes is 8 bits */

static const uint8_t v4_mapped_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

bool mr_neigh_gid_is_v4(const uint8_t gid[16])
{
	return memcmp(gid, v4_mapped_prefix, sizeof(v4_mapped_prefix)) == 0;
}

bool mr_neigh_mac_is_mcast(const uint8_t mac[6])
{
	return (mac[0] & 1) != 0; /* I/G bit, IEEE 802 48-bit addresses; includes broadcast */
}

bool mr_neigh_mac_is_zero(const uint8_t mac[6])
{
	static const uint8_t zero[6];

	return memcmp(mac, zero, 6) == 0;
}

void mr_neigh_solicited_node(const uint8_t ip6[16], uint8_t out[16])
{
	static const uint8_t prefix[13] = { 0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff };

	memcpy(out, prefix, sizeof(prefix));
	memcpy(out + 13, ip6 + 13, 3);
}

void mr_neigh_ipv6_mcast_mac(const uint8_t ip6[16], uint8_t mac[6])
{
	mac[0] = 0x33;
	mac[1] = 0x33;
	memcpy(mac + 2, ip6 + 12, 4);
}

uint32_t mr_neigh_l2_put(const struct mr_neigh *neigh, uint8_t *buf, uint32_t cap,
			 const uint8_t dmac[6], uint16_t ethertype)
{
	uint32_t off = 12;

	if (cap < MR_ETH_HDR_LEN + (neigh->conf.vlan ? MR_VLAN_TAG_LEN : 0))
		return 0;
	memcpy(buf, dmac, 6);
	memcpy(buf + 6, neigh->conf.mac, 6);
	if (neigh->conf.vlan) {
		mr_neigh_put16(buf + off, MR_ETHERTYPE_VLAN);
		mr_neigh_put16(buf + off + 2, neigh->conf.vlan_tci);
		off += MR_VLAN_TAG_LEN;
	}
	mr_neigh_put16(buf + off, ethertype);
	return off + 2;
}

uint32_t mr_neigh_pad(uint8_t *buf, uint32_t len, uint32_t cap)
{
	if (len >= MR_NEIGH_ETH_MIN_LEN || cap < MR_NEIGH_ETH_MIN_LEN)
		return len;
	memset(buf + len, 0, MR_NEIGH_ETH_MIN_LEN - len);
	return MR_NEIGH_ETH_MIN_LEN;
}

bool mr_neigh_addr_is_unicast(const uint8_t a[16])
{
	static const uint8_t zero[16];

	if (mr_neigh_gid_is_v4(a)) {
		/* 0.0.0.0, 224/4 multicast, 255.255.255.255 cannot be resolved (RFC 1122 3.2.1.3). */
		return !(a[12] == 0 && a[13] == 0 && a[14] == 0 && a[15] == 0) &&
		       (a[12] & 0xf0) != 0xe0 && a[12] != 0xff;
	}
	return memcmp(a, zero, 16) != 0 && a[0] != 0xff; /* not :: and not ff00::/8 */
}

struct mr_neigh *mr_neigh_create(const struct mr_neigh_conf *conf)
{
	struct mr_neigh *n;

	if (conf == NULL || (!conf->ipv4_en && !conf->ipv6_en) ||
	    mr_neigh_mac_is_mcast(conf->mac) || mr_neigh_mac_is_zero(conf->mac) ||
	    (conf->vlan && (conf->vlan_tci & 0xfff) == 0xfff) ||
	    conf->max_probes > NEIGH_MAX_PROBES_LIMIT) {
		errno = EINVAL;
		return NULL;
	}
	n = calloc(1, sizeof(*n));
	if (n == NULL)
		return NULL;
	n->conf = *conf;
	if (n->conf.capacity == 0)
		n->conf.capacity = NEIGH_DEF_CAPACITY;
	if (n->conf.reachable_ns == 0)
		n->conf.reachable_ns = NEIGH_DEF_REACHABLE_NS;
	if (n->conf.retrans_ns == 0)
		n->conf.retrans_ns = NEIGH_DEF_RETRANS_NS;
	if (n->conf.max_probes == 0)
		n->conf.max_probes = NEIGH_DEF_MAX_PROBES;
	if (n->conf.failed_hold_ns == 0)
		n->conf.failed_hold_ns = NEIGH_DEF_FAILED_HOLD_NS;
	memcpy(n->gid4, v4_mapped_prefix, 12);
	memcpy(n->gid4 + 12, conf->ipv4, 4);
	if ((n->conf.ipv4_en && !mr_neigh_addr_is_unicast(n->gid4)) ||
	    (n->conf.ipv6_en && (!mr_neigh_addr_is_unicast(n->conf.ipv6) ||
				 mr_neigh_gid_is_v4(n->conf.ipv6)))) {
		free(n);
		errno = EINVAL;
		return NULL;
	}
	n->tab = calloc(n->conf.capacity, sizeof(*n->tab));
	if (n->tab == NULL) {
		free(n);
		errno = ENOMEM;
		return NULL;
	}
	n->due = UINT64_MAX; /* no timed entry yet */
	n->due_exact = true;
	return n;
}

void mr_neigh_destroy(struct mr_neigh *neigh)
{
	if (neigh == NULL)
		return;
	free(neigh->tab);
	free(neigh);
}

/* Time-driven transitions, applied lazily whenever an entry is touched. */
static void entry_age(struct mr_neigh *n, struct mr_neigh_entry *e, uint64_t now)
{
	switch (e->state) {
	case MR_NEIGH_REACHABLE:
		if (now >= e->expires) {
			/* RFC 4861 7.3.3: an expired entry keeps its MAC while it is re-validated. */
			e->state = MR_NEIGH_PROBE;
			e->probes = 0;
			mr_neigh_set_expires(n, e, now);
		}
		break;
	case MR_NEIGH_INCOMPLETE:
	case MR_NEIGH_PROBE:
		/* The last probe had its full retrans_ns to be answered (RFC 4861 7.3.3). */
		if (e->probes >= n->conf.max_probes && now >= e->expires) {
			e->state = MR_NEIGH_FAILED;
			mr_neigh_set_expires(n, e, now + n->conf.failed_hold_ns);
			n->stats.unreachable++;
		}
		break;
	case MR_NEIGH_FAILED:
		if (now >= e->expires) {
			mr_neigh_untimed(n, e);
			memset(e, 0, sizeof(*e));
		}
		break;
	default:
		break;
	}
}

struct mr_neigh_entry *mr_neigh_find(struct mr_neigh *neigh, const uint8_t addr[16], uint64_t now)
{
	for (uint32_t i = 0; i < neigh->conf.capacity; i++) {
		struct mr_neigh_entry *e = &neigh->tab[i];

		if (e->state == MR_NEIGH_FREE || memcmp(e->addr, addr, 16) != 0)
			continue;
		entry_age(neigh, e, now);
		return e->state == MR_NEIGH_FREE ? NULL : e;
	}
	return NULL;
}

struct mr_neigh_entry *mr_neigh_get(struct mr_neigh *neigh, const uint8_t addr[16], uint64_t now)
{
	struct mr_neigh_entry *e = mr_neigh_find(neigh, addr, now);
	struct mr_neigh_entry *victim = NULL;

	if (e != NULL)
		return e;
	for (uint32_t i = 0; i < neigh->conf.capacity; i++) {
		e = &neigh->tab[i];
		if (e->state == MR_NEIGH_FREE) {
			victim = e;
			break;
		}
		if (e->state == MR_NEIGH_PERMANENT)
			continue;
		if (victim == NULL || e->last_used < victim->last_used)
			victim = e;
	}
	if (victim == NULL)
		return NULL;
	if (victim->state != MR_NEIGH_FREE) {
		neigh->stats.evictions++;
		mr_neigh_untimed(neigh, victim);
	}
	memset(victim, 0, sizeof(*victim));
	memcpy(victim->addr, addr, 16);
	victim->state = MR_NEIGH_INCOMPLETE;
	victim->expires = UINT64_MAX;
	mr_neigh_set_expires(neigh, victim, now); /* the first request is due at once */
	victim->last_used = now;
	return victim;
}

void mr_neigh_confirm(struct mr_neigh *neigh, struct mr_neigh_entry *e, const uint8_t mac[6],
		      uint64_t now)
{
	if (e->state == MR_NEIGH_PERMANENT)
		return;
	if (e->state == MR_NEIGH_INCOMPLETE || e->state == MR_NEIGH_PROBE ||
	    e->state == MR_NEIGH_FAILED)
		neigh->stats.resolved++;
	memcpy(e->mac, mac, 6);
	e->state = MR_NEIGH_REACHABLE;
	e->probes = 0;
	mr_neigh_set_expires(neigh, e, now + neigh->conf.reachable_ns);
}

static int check_gid(const struct mr_neigh *neigh, const uint8_t gid[16])
{
	if (!mr_neigh_addr_is_unicast(gid))
		return -EINVAL;
	if (mr_neigh_gid_is_v4(gid) ? !neigh->conf.ipv4_en : !neigh->conf.ipv6_en)
		return -EAFNOSUPPORT;
	return 0;
}

int mr_neigh_lookup(struct mr_neigh *neigh, const uint8_t gid[16], uint64_t now, uint8_t mac_out[6])
{
	struct mr_neigh_entry *e;
	int rc;

	if (neigh == NULL || gid == NULL || mac_out == NULL)
		return -EINVAL;
	rc = check_gid(neigh, gid);
	if (rc < 0)
		return rc;
	e = mr_neigh_get(neigh, gid, now);
	if (e == NULL)
		return -ENOSPC;
	e->last_used = now;
	switch (e->state) {
	case MR_NEIGH_REACHABLE:
	case MR_NEIGH_PROBE:
	case MR_NEIGH_PERMANENT:
		memcpy(mac_out, e->mac, 6);
		return 0;
	case MR_NEIGH_FAILED:
		return -EHOSTUNREACH;
	default:
		neigh->stats.unresolved_lookups++;
		return -EAGAIN;
	}
}

/* Send the next request for e if it is due. */
static int entry_solicit(struct mr_neigh *neigh, struct mr_neigh_entry *e, uint64_t now,
			 uint8_t *buf, uint32_t cap)
{
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	static const uint8_t zero[6];
	bool unicast = e->state == MR_NEIGH_PROBE;
	int len;

	if (e->state == MR_NEIGH_FAILED)
		return -EHOSTUNREACH;
	if ((e->state != MR_NEIGH_INCOMPLETE && e->state != MR_NEIGH_PROBE) || now < e->expires ||
	    e->probes >= neigh->conf.max_probes)
		return 0;
	if (mr_neigh_gid_is_v4(e->addr))
		/* RFC 1122 2.3.2.1: re-validation may be unicast to the cached address. */
		len = mr_neigh_arp_build(neigh, 1, unicast ? e->mac : bcast, zero, e->addr + 12, buf,
					 cap);
	else
		len = mr_neigh_ns_build(neigh, e->addr, unicast ? e->mac : NULL, buf, cap);
	if (len < 0)
		return len;
	e->probes++;
	mr_neigh_set_expires(neigh, e, now + neigh->conf.retrans_ns);
	neigh->stats.solicits_tx++;
	return len;
}

int mr_neigh_solicit(struct mr_neigh *neigh, const uint8_t gid[16], uint64_t now, uint8_t *buf,
		     uint32_t cap)
{
	struct mr_neigh_entry *e;
	int rc;

	if (neigh == NULL || gid == NULL || buf == NULL)
		return -EINVAL;
	rc = check_gid(neigh, gid);
	if (rc < 0)
		return rc;
	e = mr_neigh_get(neigh, gid, now);
	if (e == NULL)
		return -ENOSPC;
	return entry_solicit(neigh, e, now, buf, cap);
}

int mr_neigh_poll(struct mr_neigh *neigh, uint64_t now, uint8_t *buf, uint32_t cap)
{
	if (neigh == NULL || buf == NULL)
		return -EINVAL;
	for (uint32_t i = 0; i < neigh->conf.capacity; i++) {
		struct mr_neigh_entry *e = &neigh->tab[i];
		int len;

		if (e->state == MR_NEIGH_FREE)
			continue;
		entry_age(neigh, e, now);
		len = entry_solicit(neigh, e, now, buf, cap);
		if (len != 0 && len != -EHOSTUNREACH)
			return len;
	}
	return 0;
}

uint64_t mr_neigh_next_timeout(struct mr_neigh *neigh)
{
	uint64_t t = UINT64_MAX;

	if (neigh == NULL)
		return t;
	if (neigh->due_exact)
		return neigh->due; /* O(1): the engine asks every loop */
	for (uint32_t i = 0; i < neigh->conf.capacity; i++) {
		const struct mr_neigh_entry *e = &neigh->tab[i];

		/* Every state but FREE/PERMANENT changes at 'expires' (a probe, a failure, an
		 * expiry); REACHABLE is included so the caller re-validates in time. */
		if (e->state != MR_NEIGH_FREE && e->state != MR_NEIGH_PERMANENT && e->expires < t)
			t = e->expires;
	}
	neigh->due = t;
	neigh->due_exact = true;
	return t;
}

int mr_neigh_add_static(struct mr_neigh *neigh, const uint8_t gid[16], const uint8_t mac[6])
{
	struct mr_neigh_entry *e;

	if (neigh == NULL || gid == NULL || mac == NULL || !mr_neigh_addr_is_unicast(gid) ||
	    mr_neigh_mac_is_mcast(mac) || mr_neigh_mac_is_zero(mac))
		return -EINVAL;
	e = mr_neigh_get(neigh, gid, 0);
	if (e == NULL)
		return -ENOSPC;
	memcpy(e->mac, mac, 6);
	mr_neigh_untimed(neigh, e);
	e->state = MR_NEIGH_PERMANENT;
	e->probes = 0;
	return 0;
}

enum mr_neigh_state mr_neigh_state_of(struct mr_neigh *neigh, const uint8_t gid[16], uint64_t now)
{
	struct mr_neigh_entry *e;

	if (neigh == NULL || gid == NULL)
		return MR_NEIGH_FREE;
	e = mr_neigh_find(neigh, gid, now);
	return e == NULL ? MR_NEIGH_FREE : (enum mr_neigh_state)e->state;
}

const char *mr_neigh_state_str(enum mr_neigh_state s)
{
	static const char *const names[] = {
		[MR_NEIGH_FREE] = "FREE",
		[MR_NEIGH_INCOMPLETE] = "INCOMPLETE",
		[MR_NEIGH_REACHABLE] = "REACHABLE",
		[MR_NEIGH_PROBE] = "PROBE",
		[MR_NEIGH_FAILED] = "FAILED",
		[MR_NEIGH_PERMANENT] = "PERMANENT",
	};

	if ((unsigned int)s >= sizeof(names) / sizeof(names[0]))
		return "?";
	return names[s];
}

const struct mr_neigh_stats *mr_neigh_stats(const struct mr_neigh *neigh)
{
	return neigh == NULL ? NULL : &neigh->stats;
}

int mr_neigh_input(struct mr_neigh *neigh, const uint8_t *frame, uint32_t len, uint64_t now,
		   uint8_t *reply, uint32_t cap, uint32_t *reply_len)
{
	uint32_t off = MR_ETH_HDR_LEN;
	uint16_t type, vid = 0;
	bool tagged = false, ours;

	if (neigh == NULL || frame == NULL || reply == NULL || reply_len == NULL)
		return -EINVAL;
	*reply_len = 0;
	if (len < MR_ETH_HDR_LEN)
		return MR_NEIGH_PASS;
	type = mr_neigh_be16(frame + 12);
	if (type == MR_ETHERTYPE_VLAN) {
		if (len < MR_ETH_HDR_LEN + MR_VLAN_TAG_LEN)
			return MR_NEIGH_PASS;
		tagged = true;
		vid = mr_neigh_be16(frame + 14) & 0xfff;
		type = mr_neigh_be16(frame + 16);
		off += MR_VLAN_TAG_LEN;
	}
	if (type == MR_ETHERTYPE_ARP) {
		/* fall through to the VLAN check below */
	} else if (type == MR_ETHERTYPE_IPV6) {
		/* Only NS/NA are ours; anything else (including a header too short to tell) goes
		 * on to the RoCE parser, which counts it. */
		const uint8_t *ip6 = frame + off;

		if (len - off < MR_IPV6_HDR_LEN + 1 || ip6[6] != MR_IPPROTO_ICMPV6 ||
		    (ip6[MR_IPV6_HDR_LEN] != MR_ND_NS && ip6[MR_IPV6_HDR_LEN] != MR_ND_NA))
			return MR_NEIGH_PASS;
	} else {
		return MR_NEIGH_PASS;
	}
	/* 802.1Q: a VID of 0 is a priority tag and means "untagged" (IEEE 802.1Q 9.6). */
	ours = neigh->conf.vlan ? (tagged && vid == (neigh->conf.vlan_tci & 0xfff))
				: (!tagged || vid == 0);
	if (!ours) {
		neigh->stats.vlan_mismatch++;
		return MR_NEIGH_CONSUMED;
	}
	if (type == MR_ETHERTYPE_ARP)
		mr_neigh_arp_input(neigh, frame, frame + off, len - off, now, reply, cap, reply_len);
	else
		mr_neigh_nd_input(neigh, frame, frame + 6, frame + off, len - off, now, reply, cap,
				  reply_len);
	return MR_NEIGH_CONSUMED;
}
