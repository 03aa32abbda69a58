/* SPDX-License-Identifier: MIT
 * Streaming JSON writer (json_out.h). Strings are escaped per RFC 8259 7: quote, backslash and
 * control characters; other bytes pass through (our strings are ASCII names and specs).
 */
#include "json_out.h"

#include <errno.h>
#include <inttypes.h>

void mr_json_init(struct mr_json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->first[0] = true;
	j->is_array[0] = true; /* the top level takes one value without a key */
	j->err = f == NULL ? -EINVAL : 0;
}

static void put_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	for (; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		default:
			if (*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

/* Separator, indentation and key for the next value; false if the writer is in error. */
static bool member(struct mr_json *j, const char *key)
{
	unsigned int i;

	if (j->err)
		return false;
	/* Keys belong in objects, never in arrays (nor at the top level). */
	if ((key == NULL) != j->is_array[j->depth] ||
	    (j->depth == 0 && !j->first[0])) {
		j->err = -EINVAL;
		return false;
	}
	if (!j->first[j->depth])
		fputc(',', j->f);
	j->first[j->depth] = false;
	if (j->depth > 0) {
		fputc('\n', j->f);
		for (i = 0; i < j->depth; i++)
			fputs("  ", j->f);
	}
	if (key != NULL) {
		put_str(j->f, key);
		fputs(": ", j->f);
	}
	return true;
}

static void open_level(struct mr_json *j, const char *key, bool array)
{
	if (!member(j, key))
		return;
	if (j->depth + 1 >= MR_JSON_MAX_DEPTH) {
		j->err = -EINVAL;
		return;
	}
	fputc(array ? '[' : '{', j->f);
	j->depth++;
	j->first[j->depth] = true;
	j->is_array[j->depth] = array;
}

static void close_level(struct mr_json *j, bool array)
{
	unsigned int i;

	if (j->err)
		return;
	if (j->depth == 0 || j->is_array[j->depth] != array) {
		j->err = -EINVAL;
		return;
	}
	if (!j->first[j->depth]) {
		fputc('\n', j->f);
		for (i = 0; i + 1 < j->depth; i++)
			fputs("  ", j->f);
	}
	fputc(array ? ']' : '}', j->f);
	j->depth--;
}

void mr_json_obj_begin(struct mr_json *j, const char *key)
{
	open_level(j, key, false);
}

void mr_json_obj_end(struct mr_json *j)
{
	close_level(j, false);
}

void mr_json_arr_begin(struct mr_json *j, const char *key)
{
	open_level(j, key, true);
}

void mr_json_arr_end(struct mr_json *j)
{
	close_level(j, true);
}

void mr_json_u64(struct mr_json *j, const char *key, uint64_t v)
{
	if (member(j, key))
		fprintf(j->f, "%" PRIu64, v);
}

void mr_json_i64(struct mr_json *j, const char *key, int64_t v)
{
	if (member(j, key))
		fprintf(j->f, "%" PRId64, v);
}

void mr_json_bool(struct mr_json *j, const char *key, bool v)
{
	if (member(j, key))
		fputs(v ? "true" : "false", j->f);
}

void mr_json_str(struct mr_json *j, const char *key, const char *s)
{
	if (!member(j, key))
		return;
	if (s == NULL)
		fputs("null", j->f);
	else
		put_str(j->f, s);
}

int mr_json_finish(struct mr_json *j)
{
	if (j->err)
		return j->err;
	if (j->depth != 0 || j->first[0])
		return -EINVAL;
	fputc('\n', j->f);
	if (fflush(j->f) != 0 || ferror(j->f))
		return -EIO;
	return 0;
}
