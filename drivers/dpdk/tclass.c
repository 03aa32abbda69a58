/* SPDX-License-Identifier: MIT
 * Traffic class to DSCP/ECN/PCP mapping, with validation and a small spec parser for the daemon's
 * command line.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tclass.h"

#define DSCP_MAX 63  /* 6-bit field, RFC 2474 3 */
#define PCP_MAX 7    /* 3-bit field, IEEE 802.1Q 6.9.3 */
#define VID_MAX 4094

static const char *const tc_names[MR_TC_NR] = {
	[MR_TC_ROCE] = "roce",
	[MR_TC_CNP] = "cnp",
};

const char *mr_tc_name(enum mr_tc tc)
{
	return (unsigned int)tc < MR_TC_NR ? tc_names[tc] : NULL;
}

void mr_tclass_defaults(struct mr_tclass_map *map)
{
	if (map == NULL)
		return;
	map->tc[MR_TC_ROCE] = (struct mr_tclass_ent){ MR_TCLASS_ROCE_DSCP, MR_TCLASS_ROCE_PCP, true };
	map->tc[MR_TC_CNP] = (struct mr_tclass_ent){ MR_TCLASS_CNP_DSCP, MR_TCLASS_CNP_PCP, false };
}

int mr_tclass_set(struct mr_tclass_map *map, enum mr_tc tc, uint8_t dscp, uint8_t pcp, bool ect)
{
	if (map == NULL || (unsigned int)tc >= MR_TC_NR || dscp > DSCP_MAX || pcp > PCP_MAX)
		return -EINVAL;
	map->tc[tc] = (struct mr_tclass_ent){ dscp, pcp, ect };
	return 0;
}

int mr_tclass_tos(const struct mr_tclass_map *map, enum mr_tc tc)
{
	const struct mr_tclass_ent *e;

	if (map == NULL || (unsigned int)tc >= MR_TC_NR)
		return -EINVAL;
	e = &map->tc[tc];
	if (e->dscp > DSCP_MAX)
		return -EINVAL;
	return e->dscp << 2 | (e->ect ? MR_ECN_ECT0 : MR_ECN_NOT_ECT);
}

int mr_tclass_vlan_tci(const struct mr_tclass_map *map, enum mr_tc tc, uint16_t vid)
{
	if (map == NULL || (unsigned int)tc >= MR_TC_NR || vid > VID_MAX || map->tc[tc].pcp > PCP_MAX)
		return -EINVAL;
	return map->tc[tc].pcp << 13 | vid;
}

/* Parse an unsigned decimal in [0, max] from [s, end); -EINVAL otherwise. */
static int parse_uint(const char *s, const char *end, unsigned int max)
{
	unsigned int v = 0;

	if (s == end)
		return -EINVAL;
	for (; s < end; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		v = v * 10 + (unsigned int)(*s - '0');
		if (v > max)
			return -EINVAL;
	}
	return (int)v;
}

/* One "name:key=val,key=val" clause in [s, end). */
static int parse_clause(struct mr_tclass_map *map, const char *s, const char *end)
{
	const char *colon = memchr(s, ':', (size_t)(end - s));
	struct mr_tclass_ent *e = NULL;
	size_t nlen;

	if (colon == NULL || colon + 1 == end)
		return -EINVAL; /* no clause, or a class with no field */
	nlen = (size_t)(colon - s);
	for (unsigned int i = 0; i < MR_TC_NR; i++)
		if (strlen(tc_names[i]) == nlen && memcmp(s, tc_names[i], nlen) == 0)
			e = &map->tc[i];
	if (e == NULL)
		return -EINVAL;
	for (s = colon + 1; s < end;) {
		const char *comma = memchr(s, ',', (size_t)(end - s));
		const char *kend = comma != NULL ? comma : end;
		const char *eq = memchr(s, '=', (size_t)(kend - s));
		size_t klen;
		int v;

		if (eq == NULL)
			return -EINVAL;
		klen = (size_t)(eq - s);
		if (klen == 4 && memcmp(s, "dscp", 4) == 0) {
			v = parse_uint(eq + 1, kend, DSCP_MAX);
			if (v < 0)
				return v;
			e->dscp = (uint8_t)v;
		} else if (klen == 3 && memcmp(s, "pcp", 3) == 0) {
			v = parse_uint(eq + 1, kend, PCP_MAX);
			if (v < 0)
				return v;
			e->pcp = (uint8_t)v;
		} else if (klen == 3 && memcmp(s, "ecn", 3) == 0) {
			v = parse_uint(eq + 1, kend, 1);
			if (v < 0)
				return v;
			e->ect = v == 1;
		} else {
			return -EINVAL;
		}
		s = comma != NULL ? comma + 1 : end;
		if (comma != NULL && s == end)
			return -EINVAL; /* trailing comma */
	}
	return 0;
}

int mr_tclass_parse(struct mr_tclass_map *map, const char *spec)
{
	struct mr_tclass_map tmp;
	const char *s, *end;

	if (map == NULL || spec == NULL || *spec == '\0')
		return -EINVAL;
	tmp = *map;
	end = spec + strlen(spec);
	for (s = spec; s < end;) {
		const char *semi = strchr(s, ';');
		const char *cend = semi != NULL ? semi : end;
		int rc = parse_clause(&tmp, s, cend);

		if (rc < 0)
			return rc;
		s = semi != NULL ? semi + 1 : end;
		if (semi != NULL && s == end)
			return -EINVAL; /* trailing ';' */
	}
	*map = tmp;
	return 0;
}
