/* SPDX-License-Identifier: MIT
 * mrstat: parsing the stats document (stats_doc.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats_doc.h"

static void *grow(void *p, size_t *cap, size_t n, size_t elem)
{
	size_t nc;
	void *q;

	if (n < *cap)
		return p;
	nc = *cap ? *cap * 2 : 16;
	q = realloc(p, nc * elem);
	if (q != NULL)
		*cap = nc;
	return q;
}

void mr_doc_free(struct mr_doc *d)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		free(d->sec[i].e);
	free(d->sec);
	memset(d, 0, sizeof(*d));
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno != 0 || *end != '\0' ? -EINVAL : 0;
}

/* One line (NUL-terminated, no newline). 1 at "end", 0 for others, negative on error. */
static int parse_line(struct mr_doc *d, char *line, int lineno, char *err, size_t errlen)
{
	struct mr_doc_sec *s;
	struct mr_doc_ent *e;
	char *sp, *val;

	if (line[0] == '\0')
		return 0;
	if (strcmp(line, "end") == 0)
		return 1;
	if (strncmp(line, "metaroce-stats ", 15) == 0)
		return strcmp(line + 15, "1") == 0 ? 0 : -EPROTO;
	if (strncmp(line, "time_ns ", 8) == 0)
		return parse_u64(line + 8, &d->time_ns);
	if (strncmp(line, "section ", 8) == 0) {
		void *q = grow(d->sec, &d->cap, d->n, sizeof(*d->sec));

		if (q == NULL)
			return -ENOMEM;
		d->sec = q;
		s = &d->sec[d->n];
		memset(s, 0, sizeof(*s));
		s->id = -1;
		if (sscanf(line + 8, "%15s %ld", s->kind, &s->id) < 1)
			goto bad;
		d->n++;
		return 0;
	}
	if (d->n == 0 || (line[0] != 'c' && line[0] != 'g' && line[0] != 's') || line[1] != ' ')
		goto bad;
	s = &d->sec[d->n - 1];
	sp = strchr(line + 2, ' ');
	if (sp == NULL || (size_t)(sp - (line + 2)) >= MR_DOC_NAME_MAX || sp == line + 2)
		goto bad;
	*sp = '\0';
	val = sp + 1;
	{
		void *q = grow(s->e, &s->cap, s->n, sizeof(*s->e));

		if (q == NULL)
			return -ENOMEM;
		s->e = q;
	}
	e = &s->e[s->n];
	memset(e, 0, sizeof(*e));
	e->kind = line[0];
	memcpy(e->name, line + 2, (size_t)(sp - (line + 2)));
	if (e->kind == 's')
		snprintf(e->s, sizeof(e->s), "%.*s", (int)sizeof(e->s) - 1, val);
	else if (parse_u64(val, &e->v) < 0)
		goto bad;
	s->n++;
	return 0;
bad:
	snprintf(err, errlen, "stats document line %d: cannot parse '%.60s'", lineno, line);
	return -EINVAL;
}

int mr_doc_parse(struct mr_doc *d, const char *text, size_t len, char *err, size_t errlen)
{
	char line[512];
	size_t i = 0;
	int lineno = 0, rc;

	memset(d, 0, sizeof(*d));
	if (errlen > 0)
		err[0] = '\0';
	while (i < len) {
		size_t j = i, n;

		while (j < len && text[j] != '\n')
			j++;
		n = j - i;
		lineno++;
		if (n >= sizeof(line)) {
			snprintf(err, errlen, "stats document line %d: too long", lineno);
			mr_doc_free(d);
			return -EINVAL;
		}
		memcpy(line, text + i, n);
		line[n] = '\0';
		rc = parse_line(d, line, lineno, err, errlen);
		if (rc == 1)
			return 0;
		if (rc < 0) {
			if (errlen > 0 && err[0] == '\0')
				snprintf(err, errlen, "stats document line %d: %s", lineno,
					 rc == -EPROTO ? "unknown version" : "bad value");
			mr_doc_free(d);
			return -EINVAL;
		}
		i = j + 1;
	}
	snprintf(err, errlen, "stats document truncated (no \"end\" after %d lines)", lineno);
	mr_doc_free(d);
	return -EINVAL;
}

const struct mr_doc_sec *mr_doc_find(const struct mr_doc *d, const char *kind, long id)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		if (strcmp(d->sec[i].kind, kind) == 0 && (id < 0 || d->sec[i].id == id))
			return &d->sec[i];
	return NULL;
}

const struct mr_doc_ent *mr_doc_get(const struct mr_doc_sec *s, const char *name)
{
	size_t i;

	if (s == NULL)
		return NULL;
	for (i = 0; i < s->n; i++)
		if (strcmp(s->e[i].name, name) == 0)
			return &s->e[i];
	return NULL;
}

double mr_doc_rate(const struct mr_doc *prev, const struct mr_doc *cur,
		   const struct mr_doc_sec *s, const char *name)
{
	const struct mr_doc_ent *a, *b;

	if (prev == NULL || cur == NULL || s == NULL || cur->time_ns <= prev->time_ns)
		return -1;
	a = mr_doc_get(mr_doc_find(prev, s->kind, s->id), name);
	b = mr_doc_get(s, name);
	if (a == NULL || b == NULL || b->kind != 'c' || b->v < a->v)
		return -1;
	return (double)(b->v - a->v) * 1e9 / (double)(cur->time_ns - prev->time_ns);
}
