/* SPDX-License-Identifier: MIT
 * Impairment configuration strings: "key=value,key=value,...". Every error names the field. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "impair/impair.h"

void mr_impair_cfg_init(struct mr_impair_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->seed = 1;
}

static int fail(char *err, size_t err_len, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && err_len > 0) {
		va_start(ap, fmt);
		vsnprintf(err, err_len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* A probability in [0, 1]: "0.01", "1e-4", or "1%". */
static int parse_prob(const char *field, const char *s, double *out, char *err, size_t el)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno != 0 || !isfinite(v))
		return fail(err, el, "%s: '%s' is not a number", field, s);
	if (*end == '%') {
		v /= 100.0;
		end++;
	}
	if (*end != '\0')
		return fail(err, el, "%s: trailing characters in '%s'", field, s);
	if (v < 0.0 || v > 1.0)
		return fail(err, el, "%s: %s is outside [0, 1]", field, s);
	*out = v;
	return 0;
}

/* A non-negative number with an optional unit suffix from units[] (NULL-terminated pairs). */
struct unit {
	const char *sfx;
	double mul;
};

static int parse_scaled(const char *field, const char *s, const struct unit *units,
			double def_mul, uint64_t *out, char *err, size_t el)
{
	char *end;
	double v, mul = def_mul;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno != 0 || !isfinite(v) || v < 0)
		return fail(err, el, "%s: '%s' is not a non-negative number", field, s);
	if (*end != '\0') {
		const struct unit *u;

		for (u = units; u->sfx != NULL; u++)
			if (strcmp(end, u->sfx) == 0)
				break;
		if (u->sfx == NULL)
			return fail(err, el, "%s: unknown unit '%s'", field, end);
		mul = u->mul;
	}
	v *= mul;
	if (v >= 1.8e19)
		return fail(err, el, "%s: '%s' is too large", field, s);
	*out = (uint64_t)llround(v);
	return 0;
}

static const struct unit time_units[] = {
	{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 }, { NULL, 0 },
};
static const struct unit rate_units[] = {
	{ "k", 1e3 }, { "K", 1e3 }, { "m", 1e6 }, { "M", 1e6 }, { "g", 1e9 }, { "G", 1e9 },
	{ "kbit", 1e3 }, { "mbit", 1e6 }, { "gbit", 1e9 }, { NULL, 0 },
};
static const struct unit size_units[] = {
	{ "k", 1024 }, { "K", 1024 }, { "m", 1048576 }, { "M", 1048576 }, { "b", 1 },
	{ NULL, 0 },
};

static int parse_uint(const char *field, const char *s, uint64_t max, uint64_t *out, char *err,
		      size_t el)
{
	char *end;
	unsigned long long v;

	if (s[0] == '-' || s[0] == '+' || s[0] == '\0')
		return fail(err, el, "%s: '%s' is not a non-negative integer", field, s);
	errno = 0;
	v = strtoull(s, &end, 0);
	if (end == s || *end != '\0' || errno != 0)
		return fail(err, el, "%s: '%s' is not a non-negative integer", field, s);
	if (v > max)
		return fail(err, el, "%s: %s exceeds %llu", field, s, (unsigned long long)max);
	*out = v;
	return 0;
}

/* "P:TIME" */
static int parse_reorder(struct mr_impair_cfg *c, char *v, char *err, size_t el)
{
	char *colon = strchr(v, ':');

	if (colon == NULL)
		return fail(err, el, "reorder: expected PROB:DELAY, got '%s'", v);
	*colon = '\0';
	if (parse_prob("reorder", v, &c->reorder, err, el) < 0)
		return -EINVAL;
	return parse_scaled("reorder", colon + 1, time_units, 1, &c->reorder_ns, err, el);
}

/* "rate:R:k:K", "rate:R" (then k comes from the next comma field "k:K") */
static int parse_ecn_part(struct mr_impair_cfg *c, const char *field, char *v, char *err,
			  size_t el)
{
	char *tok, *save = NULL;

	for (tok = strtok_r(v, ":", &save); tok != NULL; tok = strtok_r(NULL, ":", &save)) {
		char *val = strtok_r(NULL, ":", &save);

		if (val == NULL)
			return fail(err, el, "%s: '%s' has no value", field, tok);
		if (strcmp(tok, "rate") == 0) {
			if (parse_scaled("ecn rate", val, rate_units, 1, &c->ecn_rate_bps, err,
					 el) < 0)
				return -EINVAL;
		} else if (strcmp(tok, "k") == 0) {
			if (parse_scaled("ecn k", val, size_units, 1, &c->ecn_k_bytes, err, el) < 0)
				return -EINVAL;
		} else {
			return fail(err, el, "%s: unknown parameter '%s' (rate, k)", field, tok);
		}
	}
	return 0;
}

/* "E:P" */
static int parse_entropy(struct mr_impair_cfg *c, char *v, char *err, size_t el)
{
	char *colon = strchr(v, ':');
	uint64_t e;
	double p;

	if (colon == NULL)
		return fail(err, el, "entropy_loss: expected ENTROPY:PROB, got '%s'", v);
	*colon = '\0';
	if (parse_uint("entropy_loss", v, 65535, &e, err, el) < 0 ||
	    parse_prob("entropy_loss", colon + 1, &p, err, el) < 0)
		return -EINVAL;
	for (unsigned int i = 0; i < c->n_entropy; i++)
		if (c->entropy[i].entropy == e) {
			c->entropy[i].loss = p;
			return 0;
		}
	if (c->n_entropy == MR_IMPAIR_MAX_ENTROPY_RULES)
		return fail(err, el, "entropy_loss: more than %d rules",
			    MR_IMPAIR_MAX_ENTROPY_RULES);
	c->entropy[c->n_entropy].entropy = (uint16_t)e;
	c->entropy[c->n_entropy].loss = p;
	c->n_entropy++;
	return 0;
}

static int parse_one(struct mr_impair_cfg *c, char *key, char *val, bool *ecn_open, char *err,
		     size_t el)
{
	uint64_t u;
	double d;
	char *end;

	/* "ecn=rate:10g,k:64k": the comma splits ECN's own parameters; "k:64k" arrives as a
	 * key without '='. */
	if (val == NULL) {
		if (*ecn_open && strncmp(key, "k:", 2) == 0)
			return parse_ecn_part(c, "ecn", key, err, el);
		return fail(err, el, "%s: missing '=value'", key);
	}
	*ecn_open = false;
	if (strcmp(key, "loss") == 0)
		return parse_prob("loss", val, &c->loss, err, el);
	if (strcmp(key, "burst") == 0) {
		errno = 0;
		d = strtod(val, &end);
		if (end == val || *end != '\0' || errno != 0 || !isfinite(d) ||
		    (d != 0 && d < 1.0) || d > 1e6)
			return fail(err, el, "burst: '%s' must be 0 (off) or a mean length >= 1",
				    val);
		c->burst = d;
		return 0;
	}
	if (strcmp(key, "reorder") == 0)
		return parse_reorder(c, val, err, el);
	if (strcmp(key, "dup") == 0)
		return parse_prob("dup", val, &c->dup, err, el);
	if (strcmp(key, "corrupt") == 0)
		return parse_prob("corrupt", val, &c->corrupt, err, el);
	if (strcmp(key, "delay") == 0)
		return parse_scaled("delay", val, time_units, 1, &c->delay_ns, err, el);
	if (strcmp(key, "jitter") == 0)
		return parse_scaled("jitter", val, time_units, 1, &c->jitter_ns, err, el);
	if (strcmp(key, "ecn") == 0) {
		*ecn_open = true;
		return parse_ecn_part(c, "ecn", val, err, el);
	}
	if (strcmp(key, "entropy_loss") == 0)
		return parse_entropy(c, val, err, el);
	if (strcmp(key, "entropy_base") == 0) {
		if (parse_uint("entropy_base", val, 65535, &u, err, el) < 0)
			return -EINVAL;
		c->entropy_base = (uint16_t)u;
		return 0;
	}
	if (strcmp(key, "qlimit") == 0) {
		if (parse_uint("qlimit", val, 1u << 20, &u, err, el) < 0)
			return -EINVAL;
		c->qlimit = (uint32_t)u;
		return 0;
	}
	if (strcmp(key, "seed") == 0)
		return parse_uint("seed", val, UINT64_MAX, &c->seed, err, el);
	return fail(err, el, "unknown field '%s'", key);
}

int mr_impair_cfg_parse(struct mr_impair_cfg *cfg, const char *spec, char *err, size_t err_len)
{
	char *copy, *tok, *save = NULL;
	bool ecn_open = false;
	struct mr_impair_cfg c;
	int rc = 0;

	if (cfg == NULL || spec == NULL)
		return fail(err, err_len, "no configuration");
	c = *cfg;
	copy = strdup(spec);
	if (copy == NULL)
		return -ENOMEM;
	save = copy;
	/* strsep, not strtok: an empty field ("a=1,,b=2") is an error, not skipped. */
	while (spec[0] != '\0' && rc == 0 && (tok = strsep(&save, ",")) != NULL) {
		char *eq = strchr(tok, '=');

		if (eq != NULL)
			*eq = '\0';
		if (*tok == '\0') {
			rc = fail(err, err_len, "empty field name");
			break;
		}
		rc = parse_one(&c, tok, eq ? eq + 1 : NULL, &ecn_open, err, err_len);
	}
	free(copy);
	if (rc == 0)
		rc = mr_impair_cfg_validate(&c, err, err_len);
	if (rc == 0)
		*cfg = c;
	return rc;
}

int mr_impair_cfg_validate(const struct mr_impair_cfg *c, char *err, size_t el)
{
	if (c == NULL)
		return fail(err, el, "no configuration");
	if (!(c->loss >= 0 && c->loss <= 1))
		return fail(err, el, "loss: outside [0, 1]");
	if (c->burst != 0 && !(c->burst >= 1))
		return fail(err, el, "burst: mean length must be >= 1");
	if (c->burst != 0 && c->loss >= 1)
		return fail(err, el, "burst: needs loss < 1");
	if (!(c->reorder >= 0 && c->reorder <= 1) || !(c->dup >= 0 && c->dup <= 1) ||
	    !(c->corrupt >= 0 && c->corrupt <= 1))
		return fail(err, el, "reorder/dup/corrupt: outside [0, 1]");
	if (c->reorder > 0 && c->reorder_ns == 0)
		return fail(err, el, "reorder: needs a delay > 0");
	if (c->ecn_rate_bps != 0 && c->ecn_k_bytes == 0)
		return fail(err, el, "ecn: needs k > 0 with a rate");
	if (c->ecn_rate_bps == 0 && c->ecn_k_bytes != 0)
		return fail(err, el, "ecn: needs a rate with k");
	if (c->n_entropy > MR_IMPAIR_MAX_ENTROPY_RULES)
		return fail(err, el, "entropy_loss: too many rules");
	for (unsigned int i = 0; i < c->n_entropy; i++)
		if (!(c->entropy[i].loss >= 0 && c->entropy[i].loss <= 1))
			return fail(err, el, "entropy_loss: outside [0, 1]");
	return 0;
}
