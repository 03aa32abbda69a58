/* SPDX-License-Identifier: MIT
 * metaroced config parser: valid files, and errors that name the line and the field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "apps/metaroced/config.h"

static void test_example_file(void **state)
{
	struct mr_daemon_config cfg;
	char err[512];
	const char *path = getenv("MR_CONFIG_EXAMPLE");

	(void)state;
	assert_non_null(path);
	mr_config_defaults(&cfg);
	assert_int_equal(mr_config_load(&cfg, path, err, sizeof(err)), 0);
	assert_true(cfg.has_ipv4);
	assert_memory_equal(cfg.ipv4, ((uint8_t[]){198, 18, 0, 1}), 4);
	assert_int_equal(cfg.mtu, 1500);
	assert_int_equal(cfg.ib_mtu, 1024); /* as rxe: Ethernet 1500 -> IB 1024 */
	assert_int_equal(cfg.dscp, 26);
	assert_int_equal(cfg.cnp_dscp, 48);
	assert_string_equal(cfg.eal_args, "--vdev=net_af_packet0,iface=veth0");
	assert_true(cfg.tx_warm);
}

static void test_values(void **state)
{
	struct mr_daemon_config cfg;
	char err[512];
	const char *text = "[port]\nipv6 = fd00::1\nmtu=9000\nmac = 02:00:00:00:00:0a\nvlan = 100\n"
			   "tx_warm = false\n[engine]\nlcores = 1, 3\n[roce]\necn = false\n";

	(void)state;
	mr_config_defaults(&cfg);
	assert_int_equal(mr_config_parse(&cfg, "t.conf", text, err, sizeof(err)), 0);
	assert_true(cfg.has_ipv6);
	assert_false(cfg.has_ipv4);
	assert_int_equal(cfg.ib_mtu, 4096);
	assert_true(cfg.has_mac);
	assert_int_equal(cfg.mac[5], 0x0a);
	assert_int_equal(cfg.vlan, 100);
	assert_int_equal(cfg.n_lcores, 2);
	assert_int_equal(cfg.lcores[1], 3);
	assert_false(cfg.ecn);
	assert_false(cfg.tx_warm);
}

struct bad_case {
	const char *text;
	const char *expect; /* substring of the message: file:line and field */
};

static void test_errors_name_line_and_field(void **state)
{
	static const struct bad_case cases[] = {
		{"[port]\nipv4 = 198.18.0.1\nmtu = abc\n", "b.conf:3: port.mtu: 'abc' is not an integer"},
		{"[port]\nipv4 = 198.18.0.300\n", "b.conf:2: port.ipv4: '198.18.0.300' is not an IPv4"},
		{"[port]\nipv4 = 198.18.0.1\n[roce]\ndscp = 64\n", "b.conf:4: roce.dscp:"},
		{"[port]\nipv4 = 198.18.0.1\nbogus = 1\n", "b.conf:3: port.bogus: unknown field"},
		{"[nope]\n", "b.conf:1: unknown section [nope]"},
		{"mtu = 1500\n", "b.conf:1: field 'mtu' outside any [section]"},
		{"[port]\nipv4 = 198.18.0.1\nmtu = 1500\nmtu = 9000\n", "b.conf:4: port.mtu: set twice"},
		{"[port]\nipv4 = 198.18.0.1\nmac = 02:00:00\n", "b.conf:3: port.mac:"},
		{"[port]\nipv4 = 198.18.0.1\ntx_warm = maybe\n", "b.conf:3: port.tx_warm:"},
		{"[port]\nipv4 = 198.18.0.1\n[engine]\nlcores = 1,1\n", "b.conf:4: engine.lcores: lcore 1 listed twice"},
		{"[port]\nipv4 = 198.18.0.1\nmtu = 575\n", "b.conf:3: port.mtu: '575' is not an integer in [576, 9216]"},
		{"[port]\nmtu = 1500\n", "port.ipv4: no address configured"},
		{"[port]\nipv4 198.18.0.1\n", "b.conf:2: expected 'key = value'"},
		{"[port]\nipv4 =\n", "b.conf:2: port.ipv4: empty value"},
		{"[port\n", "b.conf:1: malformed section header"},
		{"[port]\nipv4 = 198.18.0.1\n[limits]\nsession_max_qp = x\n",
		 "b.conf:4: limits.session_max_qp: 'x' is not an integer"},
		{"[port]\nipv4 = 198.18.0.1\n[limits]\nmax_qp = 8\nsession_max_qp = 9\n",
		 "limits.session_max_qp: 9 is above limits.max_qp (8)"},
		{"[port]\nipv4 = 198.18.0.1\n[limits]\nsession_max_mr = 5000\n",
		 "limits.session_max_mr: 5000 is above limits.max_mr (4096)"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mr_daemon_config cfg;
		char err[512];

		mr_config_defaults(&cfg);
		assert_int_equal(mr_config_parse(&cfg, "b.conf", cases[i].text, err, sizeof(err)),
				 -EINVAL);
		if (!strstr(err, cases[i].expect))
			fail_msg("case %zu: message '%s' lacks '%s'", i, err, cases[i].expect);
	}
}

/* [impair] rx/tx: mr_impair_cfg_parse specs, errors naming the line, the field and the spec's
 * own field; CLI overrides through mr_config_set_impair name their option. */
static void test_impair(void **state)
{
	struct mr_daemon_config cfg;
	char err[512];
	const char *text = "[port]\nipv4 = 198.18.0.1\n[impair]\n"
			   "rx = loss=0.01,burst=4,seed=7\ntx = delay=10us,jitter=2us,dup=0.5\n";

	(void)state;
	mr_config_defaults(&cfg);
	assert_false(cfg.impair_en[MR_IMPAIR_RX]);
	assert_false(cfg.impair_en[MR_IMPAIR_TX]);
	assert_int_equal(mr_config_parse(&cfg, "i.conf", text, err, sizeof(err)), 0);
	assert_true(cfg.impair_en[MR_IMPAIR_RX]);
	assert_true(cfg.impair_en[MR_IMPAIR_TX]);
	assert_string_equal(cfg.impair_spec[MR_IMPAIR_RX], "loss=0.01,burst=4,seed=7");
	assert_true(cfg.impair[MR_IMPAIR_RX].loss == 0.01);
	assert_true(cfg.impair[MR_IMPAIR_RX].burst == 4.0);
	assert_int_equal(cfg.impair[MR_IMPAIR_RX].seed, 7);
	assert_true(cfg.impair[MR_IMPAIR_TX].loss == 0.0);
	assert_int_equal(cfg.impair[MR_IMPAIR_TX].delay_ns, 10000);
	assert_int_equal(cfg.impair[MR_IMPAIR_TX].jitter_ns, 2000);
	assert_true(cfg.impair[MR_IMPAIR_TX].dup == 0.5);
	assert_int_equal(cfg.impair[MR_IMPAIR_TX].seed, 1); /* the stage's default seed */

	/* CLI override: replaces (not merges with) the file's spec; "off" disables. */
	assert_int_equal(mr_config_set_impair(&cfg, MR_IMPAIR_RX, "reorder=0.1:20us", "--impair-rx",
					      err, sizeof(err)), 0);
	assert_true(cfg.impair[MR_IMPAIR_RX].loss == 0.0);
	assert_true(cfg.impair[MR_IMPAIR_RX].reorder == 0.1);
	assert_int_equal(cfg.impair[MR_IMPAIR_RX].reorder_ns, 20000);
	assert_int_equal(mr_config_set_impair(&cfg, MR_IMPAIR_TX, "off", "--impair-tx", err,
					      sizeof(err)), 0);
	assert_false(cfg.impair_en[MR_IMPAIR_TX]);
	/* A bad CLI spec names the option and the spec field, and leaves the config unchanged. */
	assert_int_equal(mr_config_set_impair(&cfg, MR_IMPAIR_RX, "loss=2", "--impair-rx", err,
					      sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "--impair-rx: loss:"));
	assert_non_null(strstr(err, "2"));
	assert_true(cfg.impair[MR_IMPAIR_RX].reorder == 0.1);
	assert_int_equal(mr_config_set_impair(&cfg, (enum mr_impair_dir)5, "loss=0.1", "x", err,
					      sizeof(err)), -EINVAL);
	assert_int_equal(mr_config_set_impair(&cfg, MR_IMPAIR_RX, NULL, "x", err, sizeof(err)),
			 -EINVAL);
}

static void test_impair_errors(void **state)
{
	static const struct bad_case cases[] = {
		{"[port]\nipv4 = 198.18.0.1\n[impair]\nrx = loss=2\n", "b.conf:4: impair.rx: loss:"},
		{"[port]\nipv4 = 198.18.0.1\n\n[impair]\n# c\ntx = delay=5parsecs\n",
		 "b.conf:6: impair.tx: delay:"},
		{"[port]\nipv4 = 198.18.0.1\n[impair]\ntx = bogus=1\n", "b.conf:4: impair.tx: "},
		{"[port]\nipv4 = 198.18.0.1\n[impair]\nrx = loss=0.1\nrx = loss=0.2\n",
		 "b.conf:5: impair.rx: set twice"},
		{"[port]\nipv4 = 198.18.0.1\n[impair]\nboth = loss=0.1\n",
		 "b.conf:4: impair.both: unknown field"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mr_daemon_config cfg;
		char err[512];

		mr_config_defaults(&cfg);
		assert_int_equal(mr_config_parse(&cfg, "b.conf", cases[i].text, err, sizeof(err)),
				 -EINVAL);
		if (!strstr(err, cases[i].expect))
			fail_msg("case %zu: message '%s' lacks '%s'", i, err, cases[i].expect);
		print_message("  %s\n", err);
	}
}

/* Per-session quotas (issue 8 defect 4): by default half of the shard's QPs, MRs and CQs, so
 * that one app leaves room for others; set explicitly, as given. */
static void test_session_quotas(void **state)
{
	struct mr_daemon_config cfg;
	struct mr_session_quotas q;
	char err[512];
	const char *text = "[port]\nipv4 = 198.18.0.1\n[limits]\nmax_qp = 100\nsession_max_qp = 7\n"
			   "session_max_wr = 5000\nsession_max_inline = 0\n";

	(void)state;
	mr_config_defaults(&cfg);
	assert_int_equal(mr_config_parse(&cfg, "q.conf", "[port]\nipv4 = 198.18.0.1\n", err,
					 sizeof(err)), 0);
	mr_config_session_quotas(&cfg, &q);
	assert_int_equal(q.qp, 512);
	assert_int_equal(q.mr, 2048);
	assert_int_equal(q.cq, 512);
	assert_int_equal(q.pd, 2048);
	assert_int_equal(q.wr, MR_CFG_SESSION_WR);
	assert_int_equal(q.inline_bytes, MR_CFG_SESSION_INLINE);
	mr_config_defaults(&cfg);
	assert_int_equal(mr_config_parse(&cfg, "q.conf", text, err, sizeof(err)), 0);
	mr_config_session_quotas(&cfg, &q);
	assert_int_equal(q.qp, 7);
	assert_int_equal(q.mr, 2048);
	assert_int_equal(q.wr, 5000);
	assert_int_equal(q.inline_bytes, MR_CFG_SESSION_INLINE);
}

static void test_missing_file(void **state)
{
	struct mr_daemon_config cfg;
	char err[512];

	(void)state;
	mr_config_defaults(&cfg);
	assert_true(mr_config_load(&cfg, "/nonexistent/metaroced.conf", err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "/nonexistent/metaroced.conf: cannot open"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_example_file),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_errors_name_line_and_field),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_session_quotas),
		cmocka_unit_test(test_impair),
		cmocka_unit_test(test_impair_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
