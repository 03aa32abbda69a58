/* SPDX-License-Identifier: MIT
 * mrstat's reading of the stats socket's document (apps/mrstat/stats_doc.c) and its views:
 * sections and values parsed exactly, truncated or garbled documents refused with the line,
 * per-second rates between two samples (and none for gauges, a counter that went back, or no
 * elapsed time), and the JSON and ethtool-style output carrying the values.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "render.h"
#include "stats_doc.h"

static const char doc1[] =
	"metaroce-stats 1\ntime_ns 1000000000\n"
	"section link\ns device mr0\ns gid0 ::ffff:198.18.0.1 RoCEv2\ng active_mtu 1024\n"
	"section port 1\nc sent_pkts 100\nc np_cnp_sent 3\ng qps 2\n"
	"section qp 17\ns state RTS\nc sent_pkts 60\n"
	"section qp 18\ns state RTS\nc sent_pkts 40\n"
	"end\n";
static const char doc2[] =
	"metaroce-stats 1\ntime_ns 1500000000\n"
	"section port 1\nc sent_pkts 600\nc np_cnp_sent 2\ng qps 7\n"
	"section qp 17\nc sent_pkts 260\n"
	"end\n";

static void test_parse(void **state)
{
	struct mr_doc d;
	char err[128];
	const struct mr_doc_sec *s;

	(void)state;
	assert_int_equal(mr_doc_parse(&d, doc1, strlen(doc1), err, sizeof(err)), 0);
	assert_int_equal(d.time_ns, 1000000000ull);
	assert_int_equal(d.n, 4);
	s = mr_doc_find(&d, "link", -1);
	assert_non_null(s);
	assert_string_equal(mr_doc_get(s, "gid0")->s, "::ffff:198.18.0.1 RoCEv2");
	assert_int_equal(mr_doc_get(s, "active_mtu")->v, 1024);
	s = mr_doc_find(&d, "qp", 18);
	assert_non_null(s);
	assert_int_equal(s->id, 18);
	assert_int_equal(mr_doc_get(s, "sent_pkts")->v, 40);
	assert_null(mr_doc_get(s, "nope"));
	assert_null(mr_doc_find(&d, "qp", 19));
	mr_doc_free(&d);
}

static void test_refuse(void **state)
{
	struct mr_doc d;
	char err[128];
	static const char *const bad[] = {
		"metaroce-stats 1\nsection port 1\nc sent_pkts 1\n",          /* no end */
		"metaroce-stats 1\nsection port 1\nc sent_pkts x1\nend\n",   /* not a number */
		"metaroce-stats 1\nc sent_pkts 1\nend\n",                    /* before a section */
		"metaroce-stats 2\nend\n",                                   /* other version */
		"metaroce-stats 1\nsection port 1\nq what 1\nend\n",         /* unknown kind */
		"metaroce-stats 1\nsection port 1\nc 1\nend\n",              /* no name */
		"metaroce-stats 1\nsection port 1\nc x 99999999999999999999999\nend\n", /* range */
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(mr_doc_parse(&d, bad[i], strlen(bad[i]), err, sizeof(err)), -22);
		assert_true(strstr(err, "line") != NULL || strstr(err, "truncated") != NULL);
		assert_null(d.sec);
	}
	assert_int_equal(mr_doc_parse(&d, bad[2], strlen(bad[2]), err, sizeof(err)), -22);
	assert_non_null(strstr(err, "line 2"));
}

static void test_rates(void **state)
{
	struct mr_doc a, b;
	char err[128];
	const struct mr_doc_sec *p;

	(void)state;
	assert_int_equal(mr_doc_parse(&a, doc1, strlen(doc1), err, sizeof(err)), 0);
	assert_int_equal(mr_doc_parse(&b, doc2, strlen(doc2), err, sizeof(err)), 0);
	p = mr_doc_find(&b, "port", 1);
	/* (600 - 100) in 0.5 s */
	assert_true(mr_doc_rate(&a, &b, p, "sent_pkts") > 999.9);
	assert_true(mr_doc_rate(&a, &b, p, "sent_pkts") < 1000.1);
	assert_true(mr_doc_rate(&a, &b, p, "np_cnp_sent") < 0); /* went back (a reset) */
	assert_true(mr_doc_rate(&a, &b, p, "qps") < 0);         /* a gauge */
	assert_true(mr_doc_rate(&a, &b, mr_doc_find(&b, "qp", 17), "sent_pkts") > 399.9);
	assert_true(mr_doc_rate(&b, &a, p, "sent_pkts") < 0);   /* time went back */
	assert_true(mr_doc_rate(NULL, &b, p, "sent_pkts") < 0);
	mr_doc_free(&a);
	mr_doc_free(&b);
}

static char *render(const struct mr_doc *d, const struct mr_doc *prev, enum mr_view v, bool json)
{
	struct mr_render_opts o = { .view = v, .json = json };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	mr_render(f, d, prev, &o);
	fclose(f);
	return buf;
}

static void test_views(void **state)
{
	struct mr_doc a, b;
	char err[128], *out;

	(void)state;
	assert_int_equal(mr_doc_parse(&a, doc1, strlen(doc1), err, sizeof(err)), 0);
	assert_int_equal(mr_doc_parse(&b, doc2, strlen(doc2), err, sizeof(err)), 0);
	out = render(&a, NULL, MR_VIEW_PORT, false);
	assert_non_null(strstr(out, "     np_cnp_sent: 3\n"));    /* grep -E "ecn|cnp" finds it */
	free(out);
	out = render(&a, NULL, MR_VIEW_SUMMARY, false);
	assert_non_null(strstr(out, "link mr0/1 sent_pkts 100"));
	free(out);
	out = render(&a, NULL, MR_VIEW_LINK, false);
	assert_non_null(strstr(out, "GID[  0]:\t\t::ffff:198.18.0.1 RoCEv2"));
	assert_non_null(strstr(out, "active_mtu:\t\t1024"));
	free(out);
	out = render(&b, &a, MR_VIEW_SUMMARY, true);
	assert_non_null(strstr(out, "\"port\":{\"id\":1,\"sent_pkts\":600,"));
	assert_non_null(strstr(out, "\"rates\":{\"sent_pkts\":1000.000}"));
	assert_non_null(strstr(out, "\"qps\":[{\"id\":17,"));
	free(out);
	mr_doc_free(&a);
	mr_doc_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_refuse),
		cmocka_unit_test(test_rates),
		cmocka_unit_test(test_views),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
