/* SPDX-License-Identifier: MIT
 * mrpingpong's command line and result lines against ibv_rc_pingpong's (rdma-core
 * libibverbs/examples/rc_pingpong.c): defaults, every flag, bad values, the printed lines
 * that scripts (scripts/rxe/lib.sh mr_perf_check) parse.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ppargs.h"

static int parse(struct mr_pp_args *a, char *err, int n, ...)
{
	static char *argv[32];
	static char store[32][64];
	va_list ap;

	argv[0] = store[0];
	strcpy(store[0], "mrpingpong");
	va_start(ap, n);
	for (int i = 0; i < n; i++) {
		snprintf(store[i + 1], sizeof(store[i + 1]), "%s", va_arg(ap, const char *));
		argv[i + 1] = store[i + 1];
	}
	va_end(ap);
	argv[n + 1] = NULL;
	return mr_pp_args_parse(n + 1, argv, a, err, 256);
}

static void test_defaults(void **state)
{
	struct mr_pp_args a;
	char err[256];

	(void)state;
	assert_int_equal(parse(&a, err, 0), 0);
	assert_int_equal(a.port, 18515);
	assert_int_equal(a.size, 4096);
	assert_int_equal(a.mtu, 1024);
	assert_int_equal(a.rx_depth, 500);
	assert_int_equal(a.iters, 1000);
	assert_int_equal(a.gid_index, -1);
	assert_int_equal(a.ib_port, 1);
	assert_false(a.events);
	assert_false(a.chk);
	assert_null(a.server);
	assert_null(a.sock);
}

static void test_matrix_command_line(void **state)
{
	struct mr_pp_args a;
	char err[256];

	(void)state;
	/* what scripts/interop-rxe.sh runs, client side */
	assert_int_equal(parse(&a, err, 13, "-d", "rxe0", "-g", "1", "-m", "4096", "-s", "65536",
			       "-n", "100", "--sock", "/run/x.sock", "198.18.1.11"), 0);
	assert_string_equal(a.device, "rxe0");
	assert_int_equal(a.gid_index, 1);
	assert_int_equal(a.mtu, 4096);
	assert_int_equal(a.size, 65536);
	assert_int_equal(a.iters, 100);
	assert_string_equal(a.sock, "/run/x.sock");
	assert_string_equal(a.server, "198.18.1.11");
	/* long forms, events, chk, port, rx depth, sl */
	assert_int_equal(parse(&a, err, 8, "--port=18600", "--rx-depth=16", "--iters=5", "-e", "-c",
			       "--sl=3", "--gid-idx=0", "--mtu=256"), 0);
	assert_int_equal(a.port, 18600);
	assert_int_equal(a.rx_depth, 16);
	assert_int_equal(a.iters, 5);
	assert_true(a.events);
	assert_true(a.chk);
	assert_int_equal(a.sl, 3);
	assert_int_equal(a.gid_index, 0);
	assert_int_equal(a.mtu, 256);
	assert_null(a.server);
}

static void test_bad_values(void **state)
{
	struct mr_pp_args a;
	char err[256];

	(void)state;
	/* path MTU must be an IBA MTU (256..4096, a power of two) */
	assert_int_equal(parse(&a, err, 2, "-m", "1500"), -EINVAL);
	assert_non_null(strstr(err, "-m"));
	assert_int_equal(parse(&a, err, 2, "-m", "8192"), -EINVAL);
	assert_int_equal(parse(&a, err, 2, "-m", "128"), -EINVAL);
	assert_int_equal(parse(&a, err, 2, "-s", "0"), -EINVAL);
	assert_int_equal(parse(&a, err, 2, "-s", "12x"), -EINVAL);
	assert_int_equal(parse(&a, err, 2, "-n", "-1"), -EINVAL);
	assert_int_equal(parse(&a, err, 2, "-p", "70000"), -EINVAL);
	assert_int_equal(parse(&a, err, 2, "-i", "2"), -EINVAL);
	assert_int_equal(parse(&a, err, 2, "-r", "1"), -EINVAL);
	assert_int_equal(parse(&a, err, 1, "-x"), -EINVAL);
	assert_int_equal(parse(&a, err, 1, "-s"), -EINVAL);
	assert_int_equal(parse(&a, err, 2, "host1", "host2"), -EINVAL);
	assert_non_null(strstr(err, "more than one"));
}

static void test_result_lines(void **state)
{
	char out[256];
	int n;

	(void)state;
	/* 100 round trips of 1024 bytes in 0.5 s: 204800 bytes, 3.28 Mbit/s, 5000 us/iter */
	n = mr_pp_format_result(1024, 100, 500000.0, out, sizeof(out));
	assert_true(n > 0);
	assert_string_equal(out, "204800 bytes in 0.50 seconds = 3.28 Mbit/sec\n"
				 "100 iters in 0.50 seconds = 5000.00 usec/iter\n");
	n = mr_pp_format_result(65536, 1000, 2000000.0, out, sizeof(out));
	assert_true(n > 0);
	assert_string_equal(out, "131072000 bytes in 2.00 seconds = 524.29 Mbit/sec\n"
				 "1000 iters in 2.00 seconds = 2000.00 usec/iter\n");
	assert_int_equal(mr_pp_format_result(1024, 100, 1.0, out, 10), -ENOSPC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_matrix_command_line),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_result_lines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
