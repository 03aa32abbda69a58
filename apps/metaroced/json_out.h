/* SPDX-License-Identifier: MIT
 * A tiny streaming JSON writer for metaroced's stats dump (DPDK-free, unit-tested): objects,
 * arrays, unsigned/signed integers, booleans, strings (escaped per RFC 8259 7). The writer tracks
 * nesting and commas so callers cannot produce invalid JSON by forgetting one; misuse (too deep,
 * a key inside an array, unbalanced ends) is latched and reported by mr_json_finish().
 */
#ifndef MR_DAEMON_JSON_OUT_H
#define MR_DAEMON_JSON_OUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define MR_JSON_MAX_DEPTH 16

struct mr_json {
	FILE *f;
	unsigned int depth;
	bool first[MR_JSON_MAX_DEPTH];   /* nothing written yet at this level */
	bool is_array[MR_JSON_MAX_DEPTH];
	int err;                         /* first error (negative errno), 0 if none */
};

void mr_json_init(struct mr_json *j, FILE *f);
/* key: the member name inside an object; NULL at the top level and inside arrays. */
void mr_json_obj_begin(struct mr_json *j, const char *key);
void mr_json_obj_end(struct mr_json *j);
void mr_json_arr_begin(struct mr_json *j, const char *key);
void mr_json_arr_end(struct mr_json *j);
void mr_json_u64(struct mr_json *j, const char *key, uint64_t v);
void mr_json_i64(struct mr_json *j, const char *key, int64_t v);
void mr_json_bool(struct mr_json *j, const char *key, bool v);
/* NULL s writes null. */
void mr_json_str(struct mr_json *j, const char *key, const char *s);
/* 0 if the document is complete and was written, else -EINVAL (misuse) or -EIO. */
int mr_json_finish(struct mr_json *j);

#endif
