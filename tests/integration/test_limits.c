/* SPDX-License-Identifier: MIT
 * The limits the integration suite depends on, without a daemon: [limits] max_inflight (parsed,
 * range-checked, derived from the port's driver) and the CQ depth one source of truth
 * (MRC_RING_MAX_ENTRIES, which the daemon advertises as max_cqe and libmetaroce enforces). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "apps/metaroced/config.h"
#include "metaroce/shm_abi.h"

static int parse(struct mr_daemon_config *cfg, const char *text, char *err, size_t len)
{
	mr_config_defaults(cfg);
	return mr_config_parse(cfg, "t.conf", text, err, len);
}

static void test_default_is_derived(void **state)
{
	struct mr_daemon_config cfg;
	char err[256];

	(void)state;
	assert_int_equal(parse(&cfg, "[port]\nipv4 = 198.18.0.1\n", err, sizeof(err)), 0);
	assert_int_equal(cfg.max_inflight, 0);
	/* Kernel-socket PMDs get the bounded window; a NIC (or unknown) keeps the transport's. */
	assert_int_equal(mr_config_max_inflight(&cfg, "net_af_packet"), MR_CFG_INFLIGHT_SOCKET);
	assert_int_equal(mr_config_max_inflight(&cfg, "net_af_xdp"), MR_CFG_INFLIGHT_SOCKET);
	assert_int_equal(mr_config_max_inflight(&cfg, "net_tap"), MR_CFG_INFLIGHT_SOCKET);
	assert_int_equal(mr_config_max_inflight(&cfg, "net_ice"), 0);
	assert_int_equal(mr_config_max_inflight(&cfg, NULL), 0);
	/* 64 QPs' windows fit the 8192-slot rings lib.sh gives af_packet, with room for ACKs. */
	assert_true(64u * MR_CFG_INFLIGHT_SOCKET <= 8192u / 2);
}

static void test_explicit_wins(void **state)
{
	struct mr_daemon_config cfg;
	char err[256];

	(void)state;
	assert_int_equal(parse(&cfg, "[port]\nipv4 = 198.18.0.1\n[limits]\nmax_inflight = 1000\n",
			       err, sizeof(err)), 0);
	assert_int_equal(cfg.max_inflight, 1000);
	assert_int_equal(mr_config_max_inflight(&cfg, "net_af_packet"), 1000);
	assert_int_equal(mr_config_max_inflight(&cfg, "net_ice"), 1000);
	/* 0 spelled out means "derive", as the default. */
	assert_int_equal(parse(&cfg, "[port]\nipv4 = 198.18.0.1\n[limits]\nmax_inflight = 0\n",
			       err, sizeof(err)), 0);
	assert_int_equal(mr_config_max_inflight(&cfg, "net_af_packet"), MR_CFG_INFLIGHT_SOCKET);
}

static void test_out_of_range(void **state)
{
	struct mr_daemon_config cfg;
	char err[256];

	(void)state;
	/* IBA 9.7.1: at most 2^23 - 1 PSNs outstanding. */
	assert_int_equal(parse(&cfg, "[port]\nipv4 = 198.18.0.1\n[limits]\nmax_inflight = 8388608\n",
			       err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t.conf:4: limits.max_inflight:"));
	assert_int_equal(parse(&cfg, "[port]\nipv4 = 198.18.0.1\n[limits]\nmax_inflight = -1\n",
			       err, sizeof(err)), -EINVAL);
	assert_int_equal(parse(&cfg, "[port]\nipv4 = 198.18.0.1\n[limits]\nmax_inflight = 8388607\n",
			       err, sizeof(err)), 0);
	assert_int_equal(cfg.max_inflight, 8388607);
}

static void test_cq_limit(void **state)
{
	(void)state;
	/* mrperf send_bw -q 64 with perftest's -r 512 needs exactly 64 x 512 receive CQEs: the
	 * common limit must allow it (it used to be 32768 here and 65536 in the daemon). */
	assert_true(64u * 512u <= MRC_RING_MAX_ENTRIES);
	assert_int_equal(MRC_RING_MAX_ENTRIES & (MRC_RING_MAX_ENTRIES - 1), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_is_derived),
		cmocka_unit_test(test_explicit_wins),
		cmocka_unit_test(test_out_of_range),
		cmocka_unit_test(test_cq_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
