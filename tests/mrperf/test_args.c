/* SPDX-License-Identifier: MIT
 * mrperf argument parsing: perftest's defaults, good flag spellings, and strict rejection of
 * bad values with the flag named in the message.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "args.h"

#define ARGV(...) ((const char *const[]){ "mrperf", __VA_ARGS__ })
#define ARGC(...) ((int)(sizeof((const char *[]){ "mrperf", __VA_ARGS__ }) / sizeof(char *)))
#define PARSE(a, err, ...) mr_perf_args_parse(ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), (a), (err), sizeof(err))

static void test_defaults(void **state)
{
	struct mr_perf_args a;
	char err[256];

	(void)state;
	unsetenv("METAROCE_SOCK"); /* the default below is the one without it */
	assert_int_equal(PARSE(&a, err, "write_bw"), 0);
	assert_int_equal(a.test, MR_PT_WRITE_BW);
	assert_null(a.server);
	assert_int_equal(a.size, 65536);
	assert_int_equal(a.iters, 5000);
	assert_int_equal(a.tx_depth, 128);
	assert_int_equal(a.cq_mod, 100);
	assert_int_equal(a.qp_timeout, 14); /* perftest's DEF_QP_TIME: 67 ms */
	assert_int_equal(a.port, 18515);
	assert_int_equal(a.num_qps, 1);
	assert_int_equal(a.mtu, 0);
	assert_false(a.gbits);
	assert_false(a.verify);
	assert_string_equal(a.sock, "/run/metaroce/metaroced.sock");

	assert_int_equal(PARSE(&a, err, "send_lat", "10.0.0.1"), 0);
	assert_int_equal(a.test, MR_PT_SEND_LAT);
	assert_string_equal(a.server, "10.0.0.1");
	assert_int_equal(a.size, 2);
	assert_int_equal(a.iters, 1000);
	assert_int_equal(a.tx_depth, 1);
	assert_int_equal(a.cq_mod, 1); /* clamped to the TX depth */

	assert_int_equal(PARSE(&a, err, "atomic_bw"), 0);
	assert_int_equal(a.size, 8);
	/* tx depth never exceeds the iteration count */
	assert_int_equal(PARSE(&a, err, "read_bw", "-n", "50"), 0);
	assert_int_equal(a.tx_depth, 50);
	/* -u: the local ACK timeout code, 5 bits, 0 (infinite) refused (IBA 9.7.6.1.3) */
	assert_int_equal(PARSE(&a, err, "write_bw", "-u", "18"), 0);
	assert_int_equal(a.qp_timeout, 18);
	assert_int_equal(PARSE(&a, err, "write_bw", "--qp-timeout=31"), 0);
	assert_int_equal(a.qp_timeout, 31);
	assert_int_equal(PARSE(&a, err, "write_bw", "-u", "0"), -EINVAL);
	assert_int_equal(PARSE(&a, err, "write_bw", "-u", "32"), -EINVAL);
}

static void test_all_flags(void **state)
{
	struct mr_perf_args a;
	char err[256];

	(void)state;
	assert_int_equal(PARSE(&a, err, "-s", "4096", "--iters=100", "-q2", "--mtu", "1024", "-p",
			       "20000", "-t", "64", "-r", "256", "-Q", "10", "-F", "-x", "1", "-d", "rxe0",
			       "--report_gbits", "--verify", "--seed=7", "--json", "/tmp/o.json",
			       "--sock=/tmp/s.sock", "read_bw", "server.example"), 0);
	assert_int_equal(a.test, MR_PT_READ_BW);
	assert_string_equal(a.server, "server.example");
	assert_int_equal(a.size, 4096);
	assert_int_equal(a.iters, 100);
	assert_int_equal(a.num_qps, 2);
	assert_int_equal(a.mtu, 1024);
	assert_int_equal(a.port, 20000);
	assert_int_equal(a.tx_depth, 64);
	assert_int_equal(a.rx_depth, 256);
	assert_int_equal(a.cq_mod, 10);
	assert_int_equal(a.gid_index, 1);
	assert_string_equal(a.device, "rxe0");
	assert_true(a.gbits);
	assert_true(a.verify);
	assert_int_equal(a.seed, 7);
	assert_string_equal(a.json, "/tmp/o.json");
	assert_string_equal(a.sock, "/tmp/s.sock");

	assert_int_equal(PARSE(&a, err, "write_lat", "-a", "-D", "3"), -EINVAL);
	assert_int_equal(PARSE(&a, err, "write_lat", "-a"), 0);
	assert_true(a.all);
	assert_int_equal(PARSE(&a, err, "write_bw", "-D", "3"), 0);
	assert_int_equal(a.duration, 3);
	assert_int_equal(PARSE(&a, err, "-h"), 0);
	assert_true(a.help);
	assert_int_equal(PARSE(&a, err, "write_bw", "--", "-host-with-dash"), 0);
	assert_string_equal(a.server, "-host-with-dash");
}

/* Each bad command line must fail and the message must contain `needle`. */
static void bad(int argc, const char *const argv[], const char *needle)
{
	struct mr_perf_args a;
	char err[256];

	assert_int_equal(mr_perf_args_parse(argc, argv, &a, err, sizeof(err)), -EINVAL);
	if (strstr(err, needle) == NULL)
		fail_msg("error '%s' does not mention '%s'", err, needle);
}

#define BAD(needle, ...) bad(ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), needle)

/* Issue 11, tried as a new user would: perftest's -i, per-test default iterations, K/M sizes,
 * $METAROCE_SOCK as libmetaroce honours it. */
static void test_perftest_habits(void **state)
{
	struct mr_perf_args a;
	char err[256];

	(void)state;
	assert_int_equal(PARSE(&a, err, "write_bw", "-d", "mlx5_0", "-i", "1", "--report_gbits"), 0);
	assert_int_equal(PARSE(&a, err, "write_bw", "--ib-port=1"), 0);
	/* -D for every test (perftest's duration mode) */
	static const char *const every[] = { "write_bw", "write_lat", "send_bw", "send_lat",
		"read_bw", "read_lat", "atomic_bw", "atomic_lat" };
	for (size_t i = 0; i < sizeof(every) / sizeof(every[0]); i++) {
		assert_int_equal(PARSE(&a, err, every[i], "-D", "2"), 0);
		assert_int_equal(a.duration, 2);
	}
	assert_int_equal(PARSE(&a, err, "write_bw", "-s", "64K"), 0);
	assert_int_equal(a.size, 65536);
	assert_int_equal(PARSE(&a, err, "write_bw", "-s", "4k"), 0);
	assert_int_equal(a.size, 4096);
	assert_int_equal(PARSE(&a, err, "write_bw", "--size=1M"), 0);
	assert_int_equal(a.size, 1048576);
	/* perftest: DEF_ITERS_WB (5000) for write_bw only, DEF_ITERS (1000) for the rest */
	assert_int_equal(PARSE(&a, err, "write_bw"), 0);
	assert_int_equal(a.iters, 5000);
	assert_int_equal(PARSE(&a, err, "send_bw"), 0);
	assert_int_equal(a.iters, 1000);
	assert_int_equal(PARSE(&a, err, "read_bw"), 0);
	assert_int_equal(a.iters, 1000);
	assert_int_equal(PARSE(&a, err, "atomic_bw"), 0);
	assert_int_equal(a.iters, 1000);
	setenv("METAROCE_SOCK", "/tmp/elsewhere.sock", 1);
	assert_int_equal(PARSE(&a, err, "write_bw"), 0);
	assert_string_equal(a.sock, "/tmp/elsewhere.sock");
	assert_int_equal(PARSE(&a, err, "write_bw", "--sock", "/x.sock"), 0);
	assert_string_equal(a.sock, "/x.sock");      /* the flag wins */
	unsetenv("METAROCE_SOCK");
	assert_int_equal(PARSE(&a, err, "write_bw"), 0);
	assert_string_equal(a.sock, "/run/metaroce/metaroced.sock");
}

static void test_bad_values(void **state)
{
	(void)state;
	BAD("-s", "write_bw", "-s", "0");
	BAD("-s", "write_bw", "-s", "abc");
	BAD("-s", "write_bw", "-s", "-5");
	BAD("-s", "write_bw", "-s", "12x");
	BAD("-s", "write_bw", "-s", "K");
	BAD("-s", "write_bw", "-s", "2048M");      /* above 1 GiB */
	BAD("-s", "write_bw", "-s", "0K");
	BAD("-i", "write_bw", "-i", "2");          /* one port */
	BAD("--ib-port", "write_bw", "--ib-port=0");
	BAD("--size", "write_bw", "--size=99999999999");
	BAD("-s", "write_bw", "-s", "");
	BAD("-n", "write_bw", "-n", "2");
	BAD("-m", "write_bw", "-m", "1500");
	BAD("--mtu", "write_bw", "--mtu=9000");
	BAD("-p", "write_bw", "-p", "70000");
	BAD("-p", "write_bw", "-p", "0");
	BAD("-q", "write_bw", "-q", "0");
	BAD("-t", "write_bw", "-t", "1x");
	BAD("-x", "write_bw", "-x", "256");
	BAD("-D", "write_bw", "-D", "0");
	BAD("--seed", "write_bw", "--seed", "4294967296");
	BAD("--json", "write_bw", "--json=");
	BAD("--bogus", "write_bw", "--bogus");
	BAD("-j", "write_bw", "-j");
	BAD("-s", "write_bw", "-s");
	BAD("--report_gbits", "write_bw", "--report_gbits=1");
	BAD("-F", "write_bw", "-Fx");
	BAD("-n/--iters", "write_bw", "-D", "5", "-n", "100");
	BAD("-s/--size", "atomic_bw", "-s", "16");
	BAD("-a/--all", "atomic_lat", "-a");
	BAD("frob_bw", "frob_bw");
	BAD("unexpected", "write_bw", "a", "b");
	BAD("missing test", "-s", "64");
}

/* A perftest flag metaroce cannot honour: -ENOTSUP, the message names it and says why. */
static void refused(int argc, const char *const argv[], const char *needle)
{
	struct mr_perf_args a;
	char err[256];

	assert_int_equal(mr_perf_args_parse(argc, argv, &a, err, sizeof(err)), -ENOTSUP);
	if (strstr(err, needle) == NULL)
		fail_msg("error '%s' does not mention '%s'", err, needle);
}

#define REFUSED(needle, ...) refused(ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), needle)

/* Issue 9: perftest's flags beyond the basic set, with their values. */
static void test_perftest_flags(void **state)
{
	struct mr_perf_args a;
	char err[256];

	(void)state;
	assert_int_equal(PARSE(&a, err, "write_bw", "-b", "--report-both"), 0);
	assert_true(a.bidir);
	assert_true(a.report_both);
	assert_int_equal(PARSE(&a, err, "send_bw", "-e", "--use-srq", "-r", "64"), 0);
	assert_true(a.events);
	assert_true(a.use_srq);
	assert_int_equal(a.rx_depth, 64);
	assert_int_equal(PARSE(&a, err, "write_lat", "-I", "64"), 0);
	assert_int_equal(a.inline_size, 64);
	assert_int_equal(PARSE(&a, err, "send_bw", "--inline_size=128"), 0);
	assert_int_equal(a.inline_size, 128);
	assert_int_equal(PARSE(&a, err, "write_bw", "-l4"), 0);
	assert_int_equal(a.post_list, 4);
	assert_int_equal(a.cq_mod, 4);            /* the last WR of each list is signalled */
	assert_int_equal(PARSE(&a, err, "write_bw", "--post_list", "8", "-Q", "8"), 0);
	assert_int_equal(a.post_list, 8);
	assert_int_equal(PARSE(&a, err, "read_bw", "-o", "4"), 0);
	assert_int_equal(a.out_reads, 4);
	assert_int_equal(PARSE(&a, err, "atomic_lat", "--outs=1", "-A", "CMP_AND_SWAP"), 0);
	assert_int_equal(a.out_reads, 1);
	assert_true(a.atomic_cas);
	assert_int_equal(PARSE(&a, err, "write_bw", "-c", "RC", "-S", "0", "--tclass=96", "-L", "8",
			       "--retry_count", "3", "-N", "-w", "10.5", "-y", "0.01"), 0);
	assert_int_equal(a.tclass, 96);
	assert_int_equal(a.hop_limit, 8);
	assert_int_equal(a.retry_count, 3);
	assert_true(a.no_peak);
	assert_true(a.limit_bw > 10.4 && a.limit_bw < 10.6);
	assert_true(a.limit_msgrate > 0.009 && a.limit_msgrate < 0.011);
	assert_int_equal(PARSE(&a, err, "write_bw"), 0);
	assert_int_equal(a.tclass, -1);
	assert_int_equal(a.hop_limit, 64);
	assert_int_equal(a.retry_count, 7);
	assert_int_equal(a.post_list, 1);
	assert_null(a.json);
	assert_int_equal(PARSE(&a, err, "write_lat", "-H"), 0);
	assert_true(a.histogram);
	assert_false(a.unsorted);
	assert_int_equal(PARSE(&a, err, "send_lat", "-U"), 0);
	assert_true(a.histogram && a.unsorted);
	/* --out_json writes perftest's default file unless --out_json_file names one */
	assert_int_equal(PARSE(&a, err, "write_bw", "--out_json"), 0);
	assert_string_equal(a.json, "perftest_out.json");
	assert_int_equal(PARSE(&a, err, "write_bw", "--out_json", "--out_json_file=/tmp/r.json"), 0);
	assert_string_equal(a.json, "/tmp/r.json");
	assert_int_equal(PARSE(&a, err, "write_bw", "--run_infinitely"), 0);
	assert_true(a.run_infinitely);
	assert_int_equal(a.duration, 5);
	assert_int_equal(PARSE(&a, err, "write_bw", "--run_infinitely", "-D", "2"), 0);
	assert_int_equal(a.duration, 2);
	assert_int_equal(PARSE(&a, err, "read_bw", "--perform_warm_up", "--ipv6",
			       "--dont_xchg_versions", "--wait_destroy=1", "-X", "0",
			       "--force-link=Ethernet", "--pkey_index", "0"), 0);
	assert_true(a.warm_up && a.ipv6 && a.no_xchg_versions);
	assert_int_equal(a.wait_destroy, 1);
	assert_int_equal(PARSE(&a, err, "-V"), 0);
	assert_true(a.version);
	/* accepted without effect: noted for the header */
	assert_int_equal(PARSE(&a, err, "write_bw", "--use_hugepages", "--mr_per_qp", "-f", "2"), 0);
	assert_int_equal(a.nnotes, 3);
	assert_string_equal(a.note_flag[0], "use_hugepages");
	assert_string_equal(a.note_flag[2], "margin");
	assert_int_equal(PARSE(&a, err, "write_bw"), 0);
	assert_int_equal(a.nnotes, 0);
}

static void test_perftest_refusals(void **state)
{
	(void)state;
	REFUSED("-R/--rdma_cm: metaroce has no RDMA CM", "write_bw", "-R");
	REFUSED("--rdma_cm", "write_bw", "--rdma_cm");
	REFUSED("-z/--com_rdma_cm", "write_bw", "-z");
	REFUSED("-O/--dualport", "write_bw", "-O");
	REFUSED("-g/--mcg", "send_bw", "-g");
	REFUSED("-T/--tos", "write_bw", "-T", "32");
	REFUSED("UC: metaroce has RC QPs only", "write_bw", "-c", "UC");
	REFUSED("-c/--connection: XRC", "write_bw", "--connection=XRC");
	REFUSED("-c/--connection: UD", "send_bw", "-cUD");
	REFUSED("-C/--report-cycles", "write_lat", "-C");
	REFUSED("-S/--sl", "write_bw", "-S", "3");
	REFUSED("--mmap", "write_bw", "--mmap=/tmp/f");
	REFUSED("--rate_limit", "write_bw", "--rate_limit", "10");
	REFUSED("--reversed", "write_bw", "--reversed");
	REFUSED("--aes_xts", "write_bw", "--aes_xts");
	REFUSED("-X/--vector", "send_bw", "-X", "2");
	REFUSED("-o/--outs", "read_bw", "-o", "64");
	/* flags of the wrong test */
	REFUSED("-b/--bidirectional: bandwidth tests only", "write_lat", "-b");
	REFUSED("-l/--post_list: bandwidth tests only", "send_lat", "-l", "2");
	REFUSED("-I/--inline_size", "read_bw", "-I", "32");
	REFUSED("-o/--outs", "write_bw", "-o", "4");
	REFUSED("--use-srq", "write_bw", "--use-srq");
	REFUSED("-e/--events", "write_lat", "-e");
	REFUSED("-H/--report-histogram", "write_bw", "-H");
	REFUSED("--run_infinitely", "write_lat", "--run_infinitely");
	REFUSED("--perform_warm_up", "send_bw", "--perform_warm_up");
	REFUSED("-b/--bidirectional", "send_bw", "-b", "-D", "2");
	/* combinations: bad command lines (-EINVAL) naming the flags */
	BAD("-l/--post_list", "write_bw", "-l", "3");            /* 5000 % 3 */
	BAD("-Q/--cq-mod", "write_bw", "-l", "4", "-Q", "10");
	BAD("-t/--tx-depth", "write_bw", "-l", "8", "-t", "4");
	BAD("--report-both", "write_bw", "--report-both");
	BAD("--run_infinitely", "write_bw", "--run_infinitely", "-n", "100");
	BAD("-A", "atomic_bw", "-A", "SWAP");
	BAD("-c", "write_bw", "-c", "TCP");
	BAD("--force-link", "write_bw", "--force-link=FDDI");
	BAD("-w", "write_bw", "-w", "fast");
	BAD("--dont_xchg_versions", "write_bw", "--metaroce", "--dont_xchg_versions");
	BAD("--test", "--test=frob_bw");
}

/* The test from the program's name (perftest's ib_*), from --test, or the first argument. */
static void test_invocation(void **state)
{
	struct mr_perf_args a;
	char err[256];
	static const char *const names[][2] = {
		{ "ib_write_bw", "write_bw" }, { "/usr/local/bin/ib_read_lat", "read_lat" },
		{ "./ib_send_bw", "send_bw" }, { "ib_atomic_lat", "atomic_lat" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *argv[] = { names[i][0], "-s", "8", "server.example" };

		assert_int_equal(mr_perf_args_parse(4, argv, &a, err, sizeof(err)), 0);
		assert_string_equal(mr_perf_test_name(a.test), names[i][1]);
		assert_string_equal(a.server, "server.example");
	}
	{
		const char *argv[] = { "ib_write_lat" };

		assert_int_equal(mr_perf_args_parse(1, argv, &a, err, sizeof(err)), 0);
		assert_int_equal(a.test, MR_PT_WRITE_LAT);
		assert_null(a.server);
		assert_int_equal(a.size, 2);
	}
	{
		const char *argv[] = { "ib_write_bw", "a", "b" };

		assert_int_equal(mr_perf_args_parse(3, argv, &a, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "unexpected argument 'b'"));
	}
	assert_int_equal(PARSE(&a, err, "--test=send_lat", "10.0.0.2"), 0);
	assert_int_equal(a.test, MR_PT_SEND_LAT);
	assert_string_equal(a.server, "10.0.0.2");
	assert_int_equal(PARSE(&a, err, "10.0.0.2", "--test", "read_bw"), 0);
	assert_int_equal(a.test, MR_PT_READ_BW);
	assert_string_equal(a.server, "10.0.0.2");
	assert_int_equal(PARSE(&a, err, "write_bw", "10.0.0.3"), 0);
	assert_int_equal(a.test, MR_PT_WRITE_BW);
	assert_string_equal(a.server, "10.0.0.3");
	/* --test wins over the program name */
	{
		const char *argv[] = { "ib_write_bw", "--test=read_lat" };

		assert_int_equal(mr_perf_args_parse(2, argv, &a, err, sizeof(err)), 0);
		assert_int_equal(a.test, MR_PT_READ_LAT);
	}
	assert_int_equal(mr_perf_test_from_prog("mrperf", &a.test), -EINVAL);
	assert_int_equal(mr_perf_test_from_prog("ib_frob_bw", &a.test), -EINVAL);
}

static void test_names(void **state)
{
	enum mr_pt_test t;

	(void)state;
	assert_int_equal(mr_perf_test_from_name("atomic_lat", &t), 0);
	assert_int_equal(t, MR_PT_ATOMIC_LAT);
	assert_string_equal(mr_perf_test_name(MR_PT_SEND_BW), "send_bw");
	assert_int_equal(mr_perf_test_from_name("WRITE_BW", &t), -EINVAL);
	assert_true(mr_perf_test_is_bw(MR_PT_ATOMIC_BW));
	assert_false(mr_perf_test_is_bw(MR_PT_READ_LAT));
	assert_non_null(strstr(mr_perf_usage(), "--report_gbits"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_all_flags),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_perftest_habits),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_perftest_flags),
		cmocka_unit_test(test_perftest_refusals),
		cmocka_unit_test(test_invocation),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
