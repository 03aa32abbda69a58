/* SPDX-License-Identifier: MIT
 * mrperf --verify pattern: deterministic per seed, sensitive to a single flipped bit, to the
 * seed and to misplaced (shifted) data.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pattern.h"

static void test_pattern(void **state)
{
	enum { N = 4096 };
	uint8_t *a = malloc(N), *b = malloc(N + 8);
	size_t zeros = 0;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	mr_pattern_fill(7, a, N);
	assert_int_equal(mr_pattern_check(7, a, N), 0);
	for (size_t i = 0; i < N; i++) {
		assert_int_equal(a[i], mr_pattern_byte(7, i));
		zeros += a[i] == 0;
	}
	assert_true(zeros < N / 64); /* not a constant or sparse pattern */
	/* one flipped bit is one corrupted byte */
	a[1234] ^= 0x10;
	assert_int_equal(mr_pattern_check(7, a, N), 1);
	a[1234] ^= 0x10;
	/* another seed differs almost everywhere */
	assert_true(mr_pattern_check(8, a, N) > N - N / 64);
	/* data shifted by 8 bytes (misplaced) is detected */
	mr_pattern_fill(7, b, N + 8);
	assert_true(mr_pattern_check(7, b + 8, N) > N - N / 64);
	/* all-zero buffer (nothing arrived) is detected */
	memset(a, 0, N);
	assert_true(mr_pattern_check(7, a, N) > N - N / 64);
	free(a);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pattern),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
