/* SPDX-License-Identifier: MIT
 * metaroced's JSON writer (stats dump): exact bytes for nesting, commas, escaping; misuse is
 * latched and reported, never written as broken JSON silently. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apps/metaroced/json_out.h"

static void test_document(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct mr_json j;

	(void)state;
	assert_non_null(f);
	mr_json_init(&j, f);
	mr_json_obj_begin(&j, NULL);
	mr_json_u64(&j, "max", UINT64_MAX);
	mr_json_i64(&j, "neg", -5);
	mr_json_bool(&j, "t", true);
	mr_json_str(&j, "esc", "a\"b\\c\nd\x01");
	mr_json_str(&j, "nul", NULL);
	mr_json_obj_begin(&j, "empty");
	mr_json_obj_end(&j);
	mr_json_arr_begin(&j, "arr");
	mr_json_u64(&j, NULL, 1);
	mr_json_obj_begin(&j, NULL);
	mr_json_u64(&j, "qpn", 17);
	mr_json_obj_end(&j);
	mr_json_arr_end(&j);
	mr_json_obj_end(&j);
	assert_int_equal(mr_json_finish(&j), 0);
	fclose(f);
	assert_string_equal(buf,
		"{\n"
		"  \"max\": 18446744073709551615,\n"
		"  \"neg\": -5,\n"
		"  \"t\": true,\n"
		"  \"esc\": \"a\\\"b\\\\c\\nd\\u0001\",\n"
		"  \"nul\": null,\n"
		"  \"empty\": {},\n"
		"  \"arr\": [\n"
		"    1,\n"
		"    {\n"
		"      \"qpn\": 17\n"
		"    }\n"
		"  ]\n"
		"}\n");
	free(buf);
}

static int misuse(int which)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct mr_json j;
	int rc, i;

	mr_json_init(&j, f);
	switch (which) {
	case 0: /* key inside an array */
		mr_json_arr_begin(&j, NULL);
		mr_json_u64(&j, "k", 1);
		mr_json_arr_end(&j);
		break;
	case 1: /* no key inside an object */
		mr_json_obj_begin(&j, NULL);
		mr_json_u64(&j, NULL, 1);
		mr_json_obj_end(&j);
		break;
	case 2: /* unbalanced */
		mr_json_obj_begin(&j, NULL);
		break;
	case 3: /* wrong closer */
		mr_json_obj_begin(&j, NULL);
		mr_json_arr_end(&j);
		break;
	case 4: /* too deep */
		for (i = 0; i < MR_JSON_MAX_DEPTH + 2; i++)
			mr_json_arr_begin(&j, NULL);
		break;
	case 5: /* two top-level values */
		mr_json_u64(&j, NULL, 1);
		mr_json_u64(&j, NULL, 2);
		break;
	default: /* nothing at all */
		break;
	}
	rc = mr_json_finish(&j);
	fclose(f);
	free(buf);
	return rc;
}

static void test_misuse(void **state)
{
	int i;

	(void)state;
	for (i = 0; i <= 6; i++)
		if (misuse(i) != -EINVAL)
			fail_msg("misuse case %d not reported", i);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_document),
		cmocka_unit_test(test_misuse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
