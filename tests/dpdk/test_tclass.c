/* SPDX-License-Identifier: MIT
 * Unit tests for drivers/dpdk/tclass: defaults, TOS/TCI encoding, validation and the spec parser.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "dpdk/tclass.h"

static void test_defaults(void **state)
{
	struct mr_tclass_map m;

	(void)state;
	mr_tclass_defaults(&m);
	/* RoCE: DSCP 26 (0x1a) << 2 | ECT(0) = 0x6a; CNP: DSCP 48 << 2 | Not-ECT = 0xc0. */
	assert_int_equal(mr_tclass_tos(&m, MR_TC_ROCE), 0x6a);
	assert_int_equal(mr_tclass_tos(&m, MR_TC_CNP), 0xc0);
	/* PCP 3 on VID 100 = 0x6064; PCP 6 on VID 100 = 0xc064. */
	assert_int_equal(mr_tclass_vlan_tci(&m, MR_TC_ROCE, 100), 0x6064);
	assert_int_equal(mr_tclass_vlan_tci(&m, MR_TC_CNP, 100), 0xc064);
	assert_int_equal(mr_tclass_vlan_tci(&m, MR_TC_CNP, 0), 0xc000);
	assert_string_equal(mr_tc_name(MR_TC_CNP), "cnp");
	assert_null(mr_tc_name(MR_TC_NR));
}

static void test_set_and_validate(void **state)
{
	struct mr_tclass_map m, before;

	(void)state;
	mr_tclass_defaults(&m);
	assert_int_equal(mr_tclass_set(&m, MR_TC_ROCE, 63, 7, false), 0);
	assert_int_equal(mr_tclass_tos(&m, MR_TC_ROCE), 0xfc);
	assert_int_equal(mr_tclass_vlan_tci(&m, MR_TC_ROCE, 4094), 0xeffe);
	before = m;
	assert_int_equal(mr_tclass_set(&m, MR_TC_ROCE, 64, 0, true), -EINVAL);
	assert_int_equal(mr_tclass_set(&m, MR_TC_ROCE, 0, 8, true), -EINVAL);
	assert_int_equal(mr_tclass_set(&m, MR_TC_NR, 0, 0, true), -EINVAL);
	assert_int_equal(mr_tclass_set(&m, (enum mr_tc)-1, 0, 0, true), -EINVAL);
	assert_int_equal(mr_tclass_set(NULL, MR_TC_ROCE, 0, 0, true), -EINVAL);
	assert_memory_equal(&m, &before, sizeof(m));
	assert_int_equal(mr_tclass_vlan_tci(&m, MR_TC_ROCE, 4095), -EINVAL);
	assert_int_equal(mr_tclass_tos(&m, MR_TC_NR), -EINVAL);
	assert_int_equal(mr_tclass_tos(NULL, MR_TC_ROCE), -EINVAL);
	/* A map corrupted behind our back is rejected, not encoded into neighbouring bits. */
	m.tc[MR_TC_CNP].dscp = 64;
	assert_int_equal(mr_tclass_tos(&m, MR_TC_CNP), -EINVAL);
	m.tc[MR_TC_CNP].pcp = 8;
	assert_int_equal(mr_tclass_vlan_tci(&m, MR_TC_CNP, 1), -EINVAL);
}

static void test_parse(void **state)
{
	static const char *const bad[] = {
		"", "roce", "roce:", "roce:dscp", "roce:dscp=", "roce:dscp=64", "roce:pcp=8",
		"roce:ecn=2", "roce:dscp=1x", "roce:dscp=-1", "rdma:dscp=1", "roce:dscp=1,",
		"roce:foo=1", "roce:dscp=1;", ";", "roce:dscp=1;;cnp:pcp=1", "roce:dscp=26;cnp:pcp=9", "roce:dscp=99999999999999999999",
	};
	struct mr_tclass_map m, before;

	(void)state;
	mr_tclass_defaults(&m);
	assert_int_equal(mr_tclass_parse(&m, "roce:dscp=24,pcp=5,ecn=0;cnp:dscp=46"), 0);
	assert_int_equal(mr_tclass_tos(&m, MR_TC_ROCE), 24 << 2);
	assert_int_equal(mr_tclass_vlan_tci(&m, MR_TC_ROCE, 0), 5 << 13);
	assert_int_equal(mr_tclass_tos(&m, MR_TC_CNP), 46 << 2);
	assert_int_equal(mr_tclass_vlan_tci(&m, MR_TC_CNP, 0), 6 << 13); /* unnamed field kept */
	assert_int_equal(mr_tclass_parse(&m, "roce:ecn=1"), 0);
	assert_int_equal(mr_tclass_tos(&m, MR_TC_ROCE), 24 << 2 | 2);
	before = m;
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(mr_tclass_parse(&m, bad[i]), -EINVAL);
		assert_memory_equal(&m, &before, sizeof(m)); /* all or nothing */
	}
	assert_int_equal(mr_tclass_parse(NULL, "roce:dscp=1"), -EINVAL);
	assert_int_equal(mr_tclass_parse(&m, NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_set_and_validate),
		cmocka_unit_test(test_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
