/* SPDX-License-Identifier: MIT
 * metaroced's MetaRoCE peer policy (see mrc_policy.h).
 */
#include "mrc_policy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metaroce/metaroce.h"

static const char *const cc_names[] = {
	[MRC_CC_NONE] = "none", [MRC_CC_DCQCN] = "dcqcn", [MRC_CC_METAROCE] = "metaroce",
};

void mr_mrc_policy_init(struct mr_mrc_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->n_entropies = MR_MRC_POLICY_DEFAULT_ENTROPIES;
	p->cc = MRC_CC_NONE;
}

int mr_mrc_policy_cc_from_name(const char *name, uint8_t *cc)
{
	if (name == NULL || cc == NULL)
		return -EINVAL;
	for (unsigned int i = 0; i < sizeof(cc_names) / sizeof(cc_names[0]); i++)
		if (strcmp(name, cc_names[i]) == 0) {
			*cc = (uint8_t)i;
			return 0;
		}
	return -EINVAL;
}

const char *mr_mrc_policy_cc_name(uint8_t cc)
{
	return cc < sizeof(cc_names) / sizeof(cc_names[0]) ? cc_names[cc] : "unknown";
}

static bool prefix_equal(const uint8_t a[16], const uint8_t b[16], unsigned int plen)
{
	unsigned int full = plen / 8, rest = plen % 8;

	if (memcmp(a, b, full) != 0)
		return false;
	if (rest == 0)
		return true;
	return ((a[full] ^ b[full]) & (uint8_t)(0xff00u >> rest)) == 0;
}

static bool host_bits_zero(const uint8_t a[16], unsigned int plen)
{
	uint8_t masked[16];

	/* a equals its own prefix padded with zeros exactly when no bit beyond plen is set. */
	memcpy(masked, a, 16);
	for (unsigned int i = 0; i < 128; i++)
		if (i >= plen)
			masked[i / 8] &= (uint8_t)~(0x80u >> (i % 8));
	return memcmp(masked, a, 16) == 0;
}

/* One "ADDR[/LEN]" token -> net. */
static int parse_net(const char *tok, struct mr_mrc_net *net, char *err, size_t errlen)
{
	char addr[INET6_ADDRSTRLEN + 8];
	const char *slash = strchr(tok, '/');
	size_t alen = slash ? (size_t)(slash - tok) : strlen(tok);
	unsigned long plen, maxlen;
	uint8_t v4[4];
	char *end;
	bool is_v4;

	if (alen == 0 || alen >= sizeof(addr)) {
		snprintf(err, errlen, "'%s' is not an IPv4 or IPv6 address or prefix", tok);
		return -EINVAL;
	}
	memcpy(addr, tok, alen);
	addr[alen] = '\0';
	memset(net, 0, sizeof(*net));
	if (inet_pton(AF_INET, addr, v4) == 1) {
		is_v4 = true;
		net->addr[10] = net->addr[11] = 0xff;
		memcpy(net->addr + 12, v4, 4);
		maxlen = 32;
	} else if (inet_pton(AF_INET6, addr, net->addr) == 1) {
		is_v4 = false;
		maxlen = 128;
	} else {
		snprintf(err, errlen, "'%s' is not an IPv4 or IPv6 address or prefix", tok);
		return -EINVAL;
	}
	plen = maxlen;
	if (slash != NULL) {
		errno = 0;
		if (!isdigit((unsigned char)slash[1]) ||
		    (plen = strtoul(slash + 1, &end, 10), errno != 0 || *end != '\0') ||
		    plen > maxlen) {
			snprintf(err, errlen, "'%s': prefix length must be 0..%lu", tok, maxlen);
			return -EINVAL;
		}
	}
	net->plen = (uint8_t)(is_v4 ? plen + 96 : plen);
	/* A prefix with host bits set is almost always a typo for another network. */
	if (!host_bits_zero(net->addr, net->plen)) {
		snprintf(err, errlen, "'%s' has host bits set beyond /%lu", tok, plen);
		return -EINVAL;
	}
	return 0;
}

int mr_mrc_policy_set_peers(struct mr_mrc_policy *p, const char *list, char *err, size_t errlen)
{
	struct mr_mrc_net nets[MR_MRC_POLICY_MAX_NETS];
	unsigned int n = 0;
	const char *s = list;

	if (p == NULL || list == NULL || err == NULL || errlen == 0)
		return -EINVAL;
	err[0] = '\0';
	while (isspace((unsigned char)*s))
		s++;
	if (strcmp(s, "none") == 0) {
		p->n = 0;
		return 0;
	}
	while (*s != '\0') {
		char tok[96];
		size_t len = strcspn(s, ", \t");

		if (len == 0) {
			s++;
			continue;
		}
		if (len >= sizeof(tok)) {
			snprintf(err, errlen, "'%.*s...' is too long for an address", 20, s);
			return -EINVAL;
		}
		memcpy(tok, s, len);
		tok[len] = '\0';
		s += len;
		if (n == MR_MRC_POLICY_MAX_NETS) {
			snprintf(err, errlen, "more than %d prefixes", MR_MRC_POLICY_MAX_NETS);
			return -EINVAL;
		}
		if (parse_net(tok, &nets[n], err, errlen) < 0)
			return -EINVAL;
		n++;
	}
	if (n == 0) {
		snprintf(err, errlen, "no prefix given (use 'none' for no MetaRoCE peers)");
		return -EINVAL;
	}
	memcpy(p->net, nets, n * sizeof(nets[0]));
	p->n = n;
	return 0;
}

bool mr_mrc_policy_match(const struct mr_mrc_policy *p, const uint8_t dgid[16])
{
	if (p == NULL || dgid == NULL)
		return false;
	for (unsigned int i = 0; i < p->n; i++)
		if (prefix_equal(p->net[i].addr, dgid, p->net[i].plen))
			return true;
	return false;
}

void mr_mrc_policy_format(const struct mr_mrc_policy *p, char *out, size_t len)
{
	static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};
	size_t used = 0;

	if (len == 0)
		return;
	out[0] = '\0';
	if (p->n == 0) {
		snprintf(out, len, "none");
		return;
	}
	for (unsigned int i = 0; i < p->n && used < len; i++) {
		const struct mr_mrc_net *net = &p->net[i];
		char a[INET6_ADDRSTRLEN];
		unsigned int plen = net->plen;

		if (memcmp(net->addr, mapped, 12) == 0 && plen >= 96) {
			inet_ntop(AF_INET, net->addr + 12, a, sizeof(a));
			plen -= 96;
		} else {
			inet_ntop(AF_INET6, net->addr, a, sizeof(a));
		}
		used += (size_t)snprintf(out + used, len - used, "%s%s/%u", i ? "," : "", a, plen);
	}
}
