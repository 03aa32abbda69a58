/* SPDX-License-Identifier: MIT
 * metaroced configuration parser. Format: "[section]" lines, "key = value" lines, '#' comments.
 * Unknown sections/keys, duplicate keys and bad values are errors that name file:line and field.
 */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

void mr_config_defaults(struct mr_daemon_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->mtu = 1500;
	cfg->ib_mtu = mr_config_ib_mtu(cfg->mtu);
	cfg->pcp = 3;
	cfg->dscp = 26;     /* common ConnectX RoCE deployment choice */
	cfg->cnp_dscp = 48; /* CNPs at priority 6 */
	cfg->ecn = true;
	cfg->udp_sport_base = 0xc000; /* A17.3.3 leaves the source port to the sender */
	cfg->base_rtt_us = 50;        /* two daemons over veth/af_packet: tens of us */
	cfg->lcores[0] = 0;
	cfg->n_lcores = 1;
	cfg->idle_sleep_us = 0;
	cfg->idle_yield = true;
	cfg->tx_warm = true;
	cfg->max_qp = 1024;
	cfg->max_mr = 4096;
	cfg->max_cq = 1024;
	cfg->max_sessions = 64;
	snprintf(cfg->socket_path, sizeof(cfg->socket_path), "/run/metaroce/metaroced.sock");
	cfg->pcap_max_bytes = 256ull << 20;
	mr_impair_cfg_init(&cfg->impair[MR_IMPAIR_RX]);
	mr_impair_cfg_init(&cfg->impair[MR_IMPAIR_TX]);
	mr_mrc_policy_init(&cfg->mrc_policy);
}

uint32_t mr_config_ib_mtu(uint32_t eth_mtu)
{
	/* IPv6 (40) + UDP (8) + BTH (12) + RETH+ImmDt (20) + ICRC (4) must fit around the payload. */
	static const uint32_t ib_mtus[] = {4096, 2048, 1024, 512, 256};
	for (size_t i = 0; i < sizeof(ib_mtus) / sizeof(ib_mtus[0]); i++)
		if (ib_mtus[i] + 84 <= eth_mtu)
			return ib_mtus[i];
	return 0;
}

struct parse_state {
	const char *name;
	unsigned int line;
	char section[32];
	char *err;
	size_t errlen;
	char seen[64][64]; /* "section.key" already set, to reject duplicates */
	unsigned int nseen;
};

static int fail(struct parse_state *ps, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct parse_state *ps, const char *field, const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (field)
		snprintf(ps->err, ps->errlen, "%s:%u: %s.%s: %s", ps->name, ps->line, ps->section,
			 field, msg);
	else
		snprintf(ps->err, ps->errlen, "%s:%u: %s", ps->name, ps->line, msg);
	return -EINVAL;
}

static int get_uint(struct parse_state *ps, const char *key, const char *v, uint64_t lo,
		    uint64_t hi, uint64_t *out)
{
	char *end;

	errno = 0;
	if (!isdigit((unsigned char)v[0]))
		return fail(ps, key, "'%s' is not an integer in [%llu, %llu]", v,
			    (unsigned long long)lo, (unsigned long long)hi);
	unsigned long long x = strtoull(v, &end, 0);
	if (errno || *end || x < lo || x > hi)
		return fail(ps, key, "'%s' is not an integer in [%llu, %llu]", v,
			    (unsigned long long)lo, (unsigned long long)hi);
	*out = x;
	return 0;
}

static int get_bool(struct parse_state *ps, const char *key, const char *v, bool *out)
{
	if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "1"))
		*out = true;
	else if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "0"))
		*out = false;
	else
		return fail(ps, key, "'%s' is not a boolean (true/false)", v);
	return 0;
}

static int get_str(struct parse_state *ps, const char *key, const char *v, char *out, size_t cap)
{
	if (strlen(v) >= cap)
		return fail(ps, key, "value longer than %zu characters", cap - 1);
	memcpy(out, v, strlen(v) + 1);
	return 0;
}

static int get_mac(struct parse_state *ps, const char *key, const char *v, uint8_t mac[6])
{
	unsigned int b[6];
	char tail;

	if (sscanf(v, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
		   &tail) != 6)
		return fail(ps, key, "'%s' is not a MAC address (aa:bb:cc:dd:ee:ff)", v);
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return 0;
}

static int get_lcores(struct parse_state *ps, const char *key, const char *v,
		      struct mr_daemon_config *cfg)
{
	char buf[256];
	char *save = NULL;
	unsigned int n = 0;

	if (get_str(ps, key, v, buf, sizeof(buf)))
		return -EINVAL;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t x;
		while (isspace((unsigned char)*tok))
			tok++;
		if (n == MR_CFG_MAX_LCORES)
			return fail(ps, key, "more than %d lcores", MR_CFG_MAX_LCORES);
		if (get_uint(ps, key, tok, 0, 1023, &x))
			return -EINVAL;
		for (unsigned int i = 0; i < n; i++)
			if (cfg->lcores[i] == x)
				return fail(ps, key, "lcore %llu listed twice", (unsigned long long)x);
		cfg->lcores[n++] = (uint32_t)x;
	}
	if (n == 0)
		return fail(ps, key, "needs at least one lcore");
	cfg->n_lcores = n;
	return 0;
}

static int set_key(struct parse_state *ps, struct mr_daemon_config *cfg, const char *key,
		   const char *v)
{
	const char *s = ps->section;
	uint64_t x;
	int rc;

#define UINT_FIELD(sec, name, lo, hi, dst)                                                       \
	if (!strcmp(s, sec) && !strcmp(key, name)) {                                             \
		if ((rc = get_uint(ps, key, v, lo, hi, &x)))                                     \
			return rc;                                                               \
		dst = x;                                                                         \
		return 0;                                                                        \
	}
	UINT_FIELD("port", "port_id", 0, 1023, cfg->port_id)
	UINT_FIELD("port", "mtu", 576, 9216, cfg->mtu)
	UINT_FIELD("port", "vlan", 0, 4094, cfg->vlan)
	UINT_FIELD("port", "pcp", 0, 7, cfg->pcp)
	UINT_FIELD("roce", "dscp", 0, 63, cfg->dscp)
	UINT_FIELD("roce", "cnp_dscp", 0, 63, cfg->cnp_dscp)
	UINT_FIELD("roce", "udp_sport_base", 1024, 65535 - 256, cfg->udp_sport_base)
	UINT_FIELD("roce", "line_rate_gbps", 0, 1600, cfg->line_rate_gbps)
	UINT_FIELD("roce", "base_rtt_us", 1, 1000000, cfg->base_rtt_us)
	UINT_FIELD("engine", "idle_sleep_us", 0, 1000000, cfg->idle_sleep_us)
	UINT_FIELD("engine", "load_sleep_max_us", 0, 1000, cfg->load_sleep_max_us)
	UINT_FIELD("limits", "max_qp", 1, 1u << 20, cfg->max_qp)
	UINT_FIELD("limits", "max_mr", 1, 1u << 22, cfg->max_mr)
	UINT_FIELD("limits", "max_cq", 1, 1u << 20, cfg->max_cq)
	UINT_FIELD("limits", "max_sessions", 1, 4096, cfg->max_sessions)
	/* 0 = derived from the port; at most 2^23 - 1 PSNs may be outstanding (IBA 9.7.1). */
	UINT_FIELD("limits", "max_inflight", 0, (1u << 23) - 1, cfg->max_inflight)
	/* 0 = derived (mr_config_session_quotas); at most the shard's own limits (checked once
	 * the whole file is read). */
	UINT_FIELD("limits", "session_max_qp", 0, 1u << 20, cfg->session_max_qp)
	UINT_FIELD("limits", "session_max_mr", 0, 1u << 22, cfg->session_max_mr)
	UINT_FIELD("limits", "session_max_cq", 0, 1u << 20, cfg->session_max_cq)
	UINT_FIELD("limits", "session_max_pd", 0, 1u << 22, cfg->session_max_pd)
	UINT_FIELD("limits", "session_max_wr", 0, 1ull << 32, cfg->session_max_wr)
	UINT_FIELD("limits", "session_max_inline", 0, 1ull << 40, cfg->session_max_inline)
	UINT_FIELD("pcap", "max_bytes", 4096, 1ull << 40, cfg->pcap_max_bytes)
	if (!strcmp(s, "port") && !strcmp(key, "eal_args"))
		return get_str(ps, key, v, cfg->eal_args, sizeof(cfg->eal_args));
	if (!strcmp(s, "port") && !strcmp(key, "ipv4")) {
		if (inet_pton(AF_INET, v, cfg->ipv4) != 1)
			return fail(ps, key, "'%s' is not an IPv4 address", v);
		cfg->has_ipv4 = true;
		return 0;
	}
	if (!strcmp(s, "port") && !strcmp(key, "ipv6")) {
		if (inet_pton(AF_INET6, v, cfg->ipv6) != 1)
			return fail(ps, key, "'%s' is not an IPv6 address", v);
		cfg->has_ipv6 = true;
		return 0;
	}
	if (!strcmp(s, "port") && !strcmp(key, "mac")) {
		if (!strcmp(v, "auto")) {
			cfg->has_mac = false;
			return 0;
		}
		cfg->has_mac = true;
		return get_mac(ps, key, v, cfg->mac);
	}
	if (!strcmp(s, "port") && !strcmp(key, "tx_warm"))
		return get_bool(ps, key, v, &cfg->tx_warm);
	if (!strcmp(s, "roce") && !strcmp(key, "ecn"))
		return get_bool(ps, key, v, &cfg->ecn);
	if (!strcmp(s, "engine") && !strcmp(key, "idle_yield"))
		return get_bool(ps, key, v, &cfg->idle_yield);
	if (!strcmp(s, "engine") && !strcmp(key, "lcores"))
		return get_lcores(ps, key, v, cfg);
	if (!strcmp(s, "shm") && !strcmp(key, "socket"))
		return get_str(ps, key, v, cfg->socket_path, sizeof(cfg->socket_path));
	if (!strcmp(s, "pcap") && !strcmp(key, "file"))
		return get_str(ps, key, v, cfg->pcap_path, sizeof(cfg->pcap_path));
	if (!strcmp(s, "metaroce") && !strcmp(key, "peers")) {
		char msg[256];

		if (mr_mrc_policy_set_peers(&cfg->mrc_policy, v, msg, sizeof(msg)) < 0)
			return fail(ps, key, "%s", msg);
		return 0;
	}
	/* 1..256: MRETH.path is 8 bits (docs/metaroce-wire.md) */
	UINT_FIELD("metaroce", "entropies", 1, 256, cfg->mrc_policy.n_entropies)
	if (!strcmp(s, "metaroce") && !strcmp(key, "cc")) {
		if (mr_mrc_policy_cc_from_name(v, &cfg->mrc_policy.cc) < 0)
			return fail(ps, key, "'%s' is not one of none, dcqcn, metaroce", v);
		return 0;
	}
	if (!strcmp(s, "impair") && (!strcmp(key, "rx") || !strcmp(key, "tx"))) {
		char origin[128];

		snprintf(origin, sizeof(origin), "%s:%u: impair.%s", ps->name, ps->line, key);
		return mr_config_set_impair(cfg, key[0] == 'r' ? MR_IMPAIR_RX : MR_IMPAIR_TX, v,
					    origin, ps->err, ps->errlen);
	}
#undef UINT_FIELD
	return fail(ps, key, "unknown field");
}

static char *trim(char *p)
{
	char *e;

	while (isspace((unsigned char)*p))
		p++;
	e = p + strlen(p);
	while (e > p && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return p;
}

static int parse_line(struct parse_state *ps, struct mr_daemon_config *cfg, char *line)
{
	char *hash = strchr(line, '#');
	char *p, *eq, *key, *val;
	static const char *const sections[] = {"port", "roce", "engine", "limits", "shm", "pcap",
					       "metaroce", "impair"};

	if (hash)
		*hash = '\0';
	p = trim(line);
	if (*p == '\0')
		return 0;
	if (*p == '[') {
		char *close = strchr(p, ']');
		if (!close || close[1] != '\0')
			return fail(ps, NULL, "malformed section header '%s'", p);
		*close = '\0';
		for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
			if (!strcmp(p + 1, sections[i])) {
				snprintf(ps->section, sizeof(ps->section), "%s", sections[i]);
				return 0;
			}
		}
		return fail(ps, NULL, "unknown section [%s] (expected port, roce, engine, limits, shm, pcap, metaroce or impair)",
			    p + 1);
	}
	eq = strchr(p, '=');
	if (!eq)
		return fail(ps, NULL, "expected 'key = value', got '%s'", p);
	*eq = '\0';
	key = trim(p);
	val = trim(eq + 1);
	if (ps->section[0] == '\0')
		return fail(ps, NULL, "field '%s' outside any [section]", key);
	if (*key == '\0')
		return fail(ps, NULL, "empty field name");
	if (*val == '\0')
		return fail(ps, key, "empty value");
	char full[64];
	snprintf(full, sizeof(full), "%s.%.30s", ps->section, key);
	for (unsigned int i = 0; i < ps->nseen; i++)
		if (!strcmp(ps->seen[i], full))
			return fail(ps, key, "set twice");
	if (ps->nseen < sizeof(ps->seen) / sizeof(ps->seen[0]))
		memcpy(ps->seen[ps->nseen++], full, sizeof(full));
	return set_key(ps, cfg, key, val);
}

int mr_config_parse(struct mr_daemon_config *cfg, const char *name, const char *text, char *err,
		    size_t errlen)
{
	struct parse_state ps = {.name = name, .err = err, .errlen = errlen};
	const char *p = text;
	int rc;

	if (!cfg || !name || !text || !err || errlen == 0)
		return -EINVAL;
	err[0] = '\0';
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char line[1536];

		ps.line++;
		if (n >= sizeof(line))
			return fail(&ps, NULL, "line longer than %zu characters", sizeof(line) - 1);
		memcpy(line, p, n);
		line[n] = '\0';
		if ((rc = parse_line(&ps, cfg, line)))
			return rc;
		p += n + (nl ? 1 : 0);
	}
	/* Whole-file checks name the field that is missing or inconsistent. */
	if (!cfg->has_ipv4 && !cfg->has_ipv6) {
		snprintf(err, errlen, "%s: port.ipv4: no address configured (set port.ipv4 or port.ipv6)",
			 name);
		return -EINVAL;
	}
	cfg->ib_mtu = mr_config_ib_mtu(cfg->mtu);
	if (cfg->ib_mtu == 0) {
		snprintf(err, errlen, "%s: port.mtu: %u leaves no room for a 256-byte IB MTU", name,
			 cfg->mtu);
		return -EINVAL;
	}
	{
		static const struct {
			const char *field, *of;
			size_t v, lim;
		} q[] = {
			{ "session_max_qp", "max_qp", offsetof(struct mr_daemon_config, session_max_qp),
			  offsetof(struct mr_daemon_config, max_qp) },
			{ "session_max_mr", "max_mr", offsetof(struct mr_daemon_config, session_max_mr),
			  offsetof(struct mr_daemon_config, max_mr) },
			{ "session_max_cq", "max_cq", offsetof(struct mr_daemon_config, session_max_cq),
			  offsetof(struct mr_daemon_config, max_cq) },
		};

		for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
			uint32_t v, lim;

			memcpy(&v, (const char *)cfg + q[i].v, sizeof(v));
			memcpy(&lim, (const char *)cfg + q[i].lim, sizeof(lim));
			if (v > lim) {
				snprintf(err, errlen, "%s: limits.%s: %u is above limits.%s (%u)", name,
					 q[i].field, v, q[i].of, lim);
				return -EINVAL;
			}
		}
	}
	return 0;
}

void mr_config_session_quotas(const struct mr_daemon_config *cfg, struct mr_session_quotas *q)
{
	q->qp = cfg->session_max_qp ? cfg->session_max_qp : (cfg->max_qp + 1) / 2;
	q->mr = cfg->session_max_mr ? cfg->session_max_mr : (cfg->max_mr + 1) / 2;
	q->cq = cfg->session_max_cq ? cfg->session_max_cq : (cfg->max_cq + 1) / 2;
	q->pd = cfg->session_max_pd ? cfg->session_max_pd : (cfg->max_mr + 1) / 2;
	q->wr = cfg->session_max_wr ? cfg->session_max_wr : MR_CFG_SESSION_WR;
	q->inline_bytes = cfg->session_max_inline ? cfg->session_max_inline :
			  MR_CFG_SESSION_INLINE;
}

int mr_config_load(struct mr_daemon_config *cfg, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *text;
	long len;
	int rc;

	if (!f) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return -errno;
	}
	if (fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || len > (1 << 20) || fseek(f, 0, SEEK_SET)) {
		fclose(f);
		snprintf(err, errlen, "%s: unreadable or larger than 1 MiB", path);
		return -EINVAL;
	}
	text = malloc((size_t)len + 1);
	if (!text) {
		fclose(f);
		return -ENOMEM;
	}
	if (fread(text, 1, (size_t)len, f) != (size_t)len) {
		free(text);
		fclose(f);
		snprintf(err, errlen, "%s: read error", path);
		return -EIO;
	}
	fclose(f);
	text[len] = '\0';
	if (memchr(text, '\0', (size_t)len)) {
		free(text);
		snprintf(err, errlen, "%s: contains a NUL byte", path);
		return -EINVAL;
	}
	rc = mr_config_parse(cfg, path, text, err, errlen);
	free(text);
	return rc;
}

int mr_config_set_impair(struct mr_daemon_config *cfg, enum mr_impair_dir dir, const char *spec,
			 const char *origin, char *err, size_t errlen)
{
	struct mr_impair_cfg ic;
	char msg[256];

	if (cfg == NULL || spec == NULL || origin == NULL ||
	    (dir != MR_IMPAIR_RX && dir != MR_IMPAIR_TX))
		return -EINVAL;
	if (strlen(spec) >= sizeof(cfg->impair_spec[dir])) {
		snprintf(err, errlen, "%s: spec longer than %zu characters", origin,
			 sizeof(cfg->impair_spec[dir]) - 1);
		return -EINVAL;
	}
	if (spec[0] == '\0' || !strcmp(spec, "off")) {
		cfg->impair_en[dir] = false;
		cfg->impair_spec[dir][0] = '\0';
		mr_impair_cfg_init(&cfg->impair[dir]);
		return 0;
	}
	mr_impair_cfg_init(&ic);
	if (mr_impair_cfg_parse(&ic, spec, msg, sizeof(msg)) < 0 ||
	    mr_impair_cfg_validate(&ic, msg, sizeof(msg)) < 0) {
		snprintf(err, errlen, "%s: %s", origin, msg);
		return -EINVAL;
	}
	cfg->impair[dir] = ic;
	cfg->impair_en[dir] = true;
	snprintf(cfg->impair_spec[dir], sizeof(cfg->impair_spec[dir]), "%s", spec);
	return 0;
}

uint32_t mr_config_max_inflight(const struct mr_daemon_config *cfg, const char *driver)
{
	/* PMDs whose frames go through a kernel socket: a burst larger than the socket's ring
	 * (or the peer's) is dropped, and plain RC's go-back-N (IBA 9.7.5.1.2) then resends the
	 * whole window into the same ring: keep windows small. */
	static const char *const socket_pmds[] = {"net_af_packet", "net_af_xdp", "net_tap",
						  "net_pcap"};

	if (cfg->max_inflight != 0)
		return cfg->max_inflight;
	for (size_t i = 0; driver != NULL && i < sizeof(socket_pmds) / sizeof(socket_pmds[0]); i++)
		if (!strcmp(driver, socket_pmds[i]))
			return MR_CFG_INFLIGHT_SOCKET;
	return 0;
}

void mr_config_print(const struct mr_daemon_config *cfg, FILE *f)
{
	char a4[INET_ADDRSTRLEN] = "-", a6[INET6_ADDRSTRLEN] = "-";

	if (cfg->has_ipv4)
		inet_ntop(AF_INET, cfg->ipv4, a4, sizeof(a4));
	if (cfg->has_ipv6)
		inet_ntop(AF_INET6, cfg->ipv6, a6, sizeof(a6));
	fprintf(f, "port %u ipv4 %s ipv6 %s mtu %u (IB MTU %u) vlan %u dscp %u cnp_dscp %u ecn %s\n",
		cfg->port_id, a4, a6, cfg->mtu, cfg->ib_mtu, cfg->vlan, cfg->dscp, cfg->cnp_dscp,
		cfg->ecn ? "on" : "off");
	fprintf(f, "lcores %u idle_sleep_us %u max_qp %u max_mr %u socket %s\n", cfg->n_lcores,
		cfg->idle_sleep_us, cfg->max_qp, cfg->max_mr, cfg->socket_path);
	{
		char peers[512];

		mr_mrc_policy_format(&cfg->mrc_policy, peers, sizeof(peers));
		fprintf(f, "metaroce peers %s entropies %u cc %s\n", peers,
			cfg->mrc_policy.n_entropies, mr_mrc_policy_cc_name(cfg->mrc_policy.cc));
	}
	fprintf(f, "impair rx %s tx %s\n",
		cfg->impair_en[MR_IMPAIR_RX] ? cfg->impair_spec[MR_IMPAIR_RX] : "off",
		cfg->impair_en[MR_IMPAIR_TX] ? cfg->impair_spec[MR_IMPAIR_TX] : "off");
}
