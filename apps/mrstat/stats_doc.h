/* SPDX-License-Identifier: MIT
 * mrstat: the stats socket's document (apps/metaroced/stats_server.h) parsed into sections of
 * named values, and the per-second rates between two documents. No I/O: unit-tested alone.
 */
#ifndef MR_MRSTAT_STATS_DOC_H
#define MR_MRSTAT_STATS_DOC_H

#include <stddef.h>
#include <stdint.h>

#define MR_DOC_NAME_MAX 64
#define MR_DOC_STR_MAX 128

struct mr_doc_ent {
	char kind;                   /* 'c' counter, 'g' gauge, 's' string */
	char name[MR_DOC_NAME_MAX];
	uint64_t v;
	char s[MR_DOC_STR_MAX];      /* kind 's' only */
};

struct mr_doc_sec {
	char kind[16];               /* link, port, shard, qp */
	long id;                     /* -1 without */
	struct mr_doc_ent *e;
	size_t n, cap;
};

struct mr_doc {
	uint64_t time_ns;
	struct mr_doc_sec *sec;
	size_t n, cap;
};

/* Parse text (len bytes, need not be NUL-terminated). 0, or -EINVAL with a message naming the
 * line in err (a truncated document, one without "end", is refused: the daemon went away). */
int mr_doc_parse(struct mr_doc *d, const char *text, size_t len, char *err, size_t errlen);
void mr_doc_free(struct mr_doc *d);
/* The first section of that kind (and id, if id >= 0), or NULL. */
const struct mr_doc_sec *mr_doc_find(const struct mr_doc *d, const char *kind, long id);
/* The entry called name in s, or NULL. */
const struct mr_doc_ent *mr_doc_get(const struct mr_doc_sec *s, const char *name);
/* Per-second rate of counter name in section s between the documents prev and cur (the same
 * section, matched by kind and id): -1 when unknown (no previous value, counter went back,
 * no time elapsed). */
double mr_doc_rate(const struct mr_doc *prev, const struct mr_doc *cur,
		   const struct mr_doc_sec *s, const char *name);

#endif
