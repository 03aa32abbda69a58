/* SPDX-License-Identifier: MIT
 * MetaRoCE negotiation in perftest's version field (apps/mrperf/negotiate.h): the offer is
 * invisible to a stock perftest reader (atof on the NUL-terminated string), stock bytes from
 * real perftest 4.5 captures never read as an offer, MetaRoCE is agreed only when both sides
 * offered it, and the preamble carries the field over a real socket in both roles.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "args.h"
#include "capture.h"
#include "exchange.h"
#include "negotiate.h"

static const char *const captures[] = { "ib_write_bw.pcap", "ib_send_bw.pcap",
					"ib_read_bw.pcap" };

static struct capture *load(const char *name)
{
	const char *d = getenv("MR_VECTORS_DIR");
	char path[512];
	struct capture *cap = calloc(1, sizeof(*cap));

	assert_non_null(cap);
	snprintf(path, sizeof(path), "%s/%s", d != NULL ? d : "tests/vectors", name);
	assert_int_equal(capture_load(path, MR_PT_DEFAULT_PORT, cap), 0);
	return cap;
}

/* What stock perftest does with the peer's field: atof(rem_version) (perftest 4.5
 * src/perftest_communication.c check_version_compatibility / check_sys_data / check_mtu). */
static double stock_reader(const uint8_t f[MR_PT_VERSION_LEN])
{
	char s[MR_PT_VERSION_LEN];

	memcpy(s, f, sizeof(s));
	return atof(s);
}

static void test_stock_bytes_from_captures(void **state)
{
	(void)state;
	for (size_t c = 0; c < sizeof(captures) / sizeof(captures[0]); c++) {
		struct capture *cap = load(captures[c]);
		uint8_t mine[MR_PT_VERSION_LEN];
		struct mr_mrc_offer o = { .metaroce = true };

		/* segments 0 and 1: the client's and the server's version fields */
		for (int side = 0; side < 2; side++) {
			const uint8_t *f = cap->seg[side].data;

			assert_int_equal(cap->seg[side].len, MR_PT_VERSION_LEN);
			/* stock perftest pads with NULs (strncpy): the marker region is free */
			assert_memory_equal(f, "6.06", 4);
			for (int i = 4; i < MR_PT_VERSION_LEN; i++)
				assert_int_equal(f[i], 0);
			assert_int_equal(mr_mrc_version_decode(f, &o), 0);
			assert_false(o.metaroce);
			assert_int_equal(o.n_entropies, 0);
		}
		/* without an offer mrperf sends exactly the captured bytes */
		assert_int_equal(mr_mrc_version_encode(NULL, mine), 0);
		assert_memory_equal(mine, cap->seg[0].data, MR_PT_VERSION_LEN);
		o = (struct mr_mrc_offer){ .metaroce = false, .n_entropies = 8 };
		assert_int_equal(mr_mrc_version_encode(&o, mine), 0);
		assert_memory_equal(mine, cap->seg[1].data, MR_PT_VERSION_LEN);
		free(cap);
	}
}

static void test_offer_layout_and_stock_view(void **state)
{
	static const uint8_t exp[MR_PT_VERSION_LEN] = { '6', '.', '0', '6', 0, 'M', 'R', 'C', '1',
							0x01, 0x01, 0x00, 0x02, 0, 0, 0 };
	struct mr_mrc_offer o = { .metaroce = true, .n_entropies = 256, .cc = 2 }, p;
	uint8_t f[MR_PT_VERSION_LEN];
	double v;

	(void)state;
	assert_int_equal(mr_mrc_version_encode(&o, f), 0);
	assert_memory_equal(f, exp, sizeof(exp));
	/* A stock reader sees 6.06, and so does mrperf's own strict version parser. */
	assert_true(stock_reader(f) > 6.059 && stock_reader(f) < 6.061);
	assert_int_equal(strcmp((const char *)f, MR_PT_VERSION), 0);
	assert_int_equal(mr_pt_version_decode(f, &v), 0);
	assert_true(v > 6.059 && v < 6.061);
	assert_int_equal(mr_mrc_version_decode(f, &p), 1);
	assert_true(p.metaroce);
	assert_int_equal(p.n_entropies, 256);
	assert_int_equal(p.cc, 2);
	/* bounds of the encoder: refused, output untouched */
	memset(f, 0xAA, sizeof(f));
	o.n_entropies = 0;
	assert_int_equal(mr_mrc_version_encode(&o, f), -EINVAL);
	o.n_entropies = 257;
	assert_int_equal(mr_mrc_version_encode(&o, f), -EINVAL);
	o.n_entropies = 4;
	o.cc = 3;
	assert_int_equal(mr_mrc_version_encode(&o, f), -EINVAL);
	assert_int_equal(f[0], 0xAA);
	assert_int_equal(mr_mrc_version_encode(&o, NULL), -EINVAL);
}

static void test_malformed_offers_mean_plain_roce(void **state)
{
	struct mr_mrc_offer good = { .metaroce = true, .n_entropies = 4, .cc = 0 }, p;
	uint8_t f[MR_PT_VERSION_LEN], g[MR_PT_VERSION_LEN];

	(void)state;
	assert_int_equal(mr_mrc_version_encode(&good, g), 0);
	/* every single-byte damage of the marker, flags, entropies or cc */
	for (int i = 5; i <= 12; i++) {
		memcpy(f, g, sizeof(f));
		f[i] = i == 9 ? 0x00 : i == 10 ? 0x7f : i == 12 ? 0x09 : (uint8_t)'x';
		if (i == 11)
			f[11] = 0; /* 0 entropies */
		assert_int_equal(mr_mrc_version_decode(f, &p), 0);
		assert_false(p.metaroce);
	}
	/* the marker only counts behind a terminated version string */
	memcpy(f, g, sizeof(f));
	f[4] = '7';
	assert_int_equal(mr_mrc_version_decode(f, &p), 0);
	/* reserved bytes and unknown flag bits are ignored */
	memcpy(f, g, sizeof(f));
	f[9] |= 0xf0;
	f[13] = f[14] = f[15] = 0xff;
	assert_int_equal(mr_mrc_version_decode(f, &p), 1);
	assert_int_equal(p.n_entropies, 4);
	assert_int_equal(mr_mrc_version_decode(NULL, &p), 0);
	assert_int_equal(mr_mrc_version_decode(f, NULL), -EINVAL);
}

static void test_negotiate_rules(void **state)
{
	struct mr_mrc_offer a = { .metaroce = true, .n_entropies = 16, .cc = 2 };
	struct mr_mrc_offer b = { .metaroce = true, .n_entropies = 4, .cc = 1 };
	struct mr_mrc_offer none = { 0 }, r1, r2;

	(void)state;
	assert_true(mr_mrc_negotiate(&a, &b, &r1));
	assert_true(mr_mrc_negotiate(&b, &a, &r2));
	assert_true(r1.metaroce && r2.metaroce);
	assert_int_equal(r1.n_entropies, 4); /* the smaller offer */
	assert_int_equal(r1.cc, 1);          /* none < DCQCN < MetaRoCE CC */
	/* both ends agree (field-wise: padding is not part of the value) */
	assert_int_equal(r1.n_entropies, r2.n_entropies);
	assert_int_equal(r1.cc, r2.cc);
	/* one side only, or neither: plain RoCE */
	assert_false(mr_mrc_negotiate(&a, &none, &r1));
	assert_false(r1.metaroce);
	assert_int_equal(r1.n_entropies, 0);
	assert_false(mr_mrc_negotiate(&none, &a, &r1));
	assert_false(mr_mrc_negotiate(&none, &none, &r1));
	assert_false(mr_mrc_negotiate(&a, NULL, &r1));
	b.n_entropies = 0; /* invalid offers never agree */
	assert_false(mr_mrc_negotiate(&a, &b, NULL));
}

/* ---- the field over a real socket: mr_pt_preamble in both roles ---- */

struct side {
	int fd;
	bool client;
	const uint8_t *vout;      /* NULL: stock */
	const struct capture *replay; /* non-NULL: play the captured server, byte for byte */
	struct mr_pt_preamble pre;
	uint8_t got[MR_PT_VERSION_LEN];
	int rc;
};

static void *run_side(void *arg)
{
	struct side *s = arg;

	if (s->replay != NULL) {
		/* the captured stock server: read each client step, answer with its own bytes */
		for (size_t i = 0; i < 8; i += 2) {
			uint8_t buf[64];
			size_t want = s->replay->seg[i].len, have = 0;

			while (have < want) {
				ssize_t n = read(s->fd, buf + have, want - have);

				if (n <= 0) {
					s->rc = -EIO;
					return NULL;
				}
				have += (size_t)n;
			}
			if (i == 0)
				memcpy(s->got, buf, MR_PT_VERSION_LEN);
			if (write(s->fd, s->replay->seg[i + 1].data, s->replay->seg[i + 1].len) !=
			    (ssize_t)s->replay->seg[i + 1].len) {
				s->rc = -EIO;
				return NULL;
			}
		}
		s->rc = 0;
		return NULL;
	}
	struct mr_pt_conn c = { .fd = s->fd, .client = s->client, .with_gid = true,
				.timeout_ms = 5000 };

	s->pre.cycle_buffer = 4096;
	s->pre.cache_line_size = 64;
	s->pre.mtu = 1024;
	s->pre.version_out = s->vout;
	s->rc = mr_pt_preamble(&c, &s->pre);
	return NULL;
}

static void converse(struct side *cl, struct side *sv)
{
	int sp[2];
	pthread_t th;
	struct timeval tmo = { .tv_sec = 10 };

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	setsockopt(sp[0], SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
	setsockopt(sp[1], SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
	cl->fd = sp[0];
	cl->client = true;
	sv->fd = sp[1];
	sv->client = false;
	assert_int_equal(pthread_create(&th, NULL, run_side, sv), 0);
	run_side(cl);
	assert_int_equal(pthread_join(th, NULL), 0);
	close(sp[0]);
	close(sp[1]);
}

static void test_preamble_both_offer(void **state)
{
	struct mr_mrc_offer oa = { .metaroce = true, .n_entropies = 32, .cc = 0 };
	struct mr_mrc_offer ob = { .metaroce = true, .n_entropies = 8, .cc = 2 }, pa, pb, ra, rb;
	uint8_t fa[MR_PT_VERSION_LEN], fb[MR_PT_VERSION_LEN];
	struct side cl = { 0 }, sv = { 0 };

	(void)state;
	assert_int_equal(mr_mrc_version_encode(&oa, fa), 0);
	assert_int_equal(mr_mrc_version_encode(&ob, fb), 0);
	cl.vout = fa;
	sv.vout = fb;
	converse(&cl, &sv);
	assert_int_equal(cl.rc, 0);
	assert_int_equal(sv.rc, 0);
	assert_memory_equal(cl.pre.peer_version_raw, fb, MR_PT_VERSION_LEN);
	assert_memory_equal(sv.pre.peer_version_raw, fa, MR_PT_VERSION_LEN);
	assert_int_equal(mr_mrc_version_decode(cl.pre.peer_version_raw, &pb), 1);
	assert_int_equal(mr_mrc_version_decode(sv.pre.peer_version_raw, &pa), 1);
	assert_true(mr_mrc_negotiate(&oa, &pb, &ra));
	assert_true(mr_mrc_negotiate(&ob, &pa, &rb));
	assert_int_equal(ra.n_entropies, 8);
	assert_int_equal(rb.n_entropies, 8);
	assert_int_equal(ra.cc, 0);
	assert_int_equal(rb.cc, 0);
}

static void test_preamble_one_side(void **state)
{
	struct mr_mrc_offer oa = { .metaroce = true, .n_entropies = 16, .cc = 0 }, p, r;
	uint8_t fa[MR_PT_VERSION_LEN], stock[MR_PT_VERSION_LEN];
	struct side cl = { 0 }, sv = { 0 };

	(void)state;
	assert_int_equal(mr_mrc_version_encode(&oa, fa), 0);
	mr_pt_version_encode(stock);
	/* client offers, server is mrperf without --metaroce: it sends stock bytes */
	cl.vout = fa;
	converse(&cl, &sv);
	assert_int_equal(cl.rc, 0);
	assert_int_equal(sv.rc, 0);
	assert_memory_equal(cl.pre.peer_version_raw, stock, MR_PT_VERSION_LEN);
	assert_int_equal(mr_mrc_version_decode(cl.pre.peer_version_raw, &p), 0);
	assert_false(mr_mrc_negotiate(&oa, &p, &r));
	/* the server saw the offer but did not ask for MetaRoCE: plain RoCE as well */
	assert_int_equal(mr_mrc_version_decode(sv.pre.peer_version_raw, &p), 1);
	assert_false(mr_mrc_negotiate(&(struct mr_mrc_offer){ 0 }, &p, &r));
}

static void test_preamble_against_captured_stock_server(void **state)
{
	struct mr_mrc_offer oa = { .metaroce = true, .n_entropies = 16, .cc = 1 }, p;
	uint8_t fa[MR_PT_VERSION_LEN];

	(void)state;
	assert_int_equal(mr_mrc_version_encode(&oa, fa), 0);
	for (size_t c = 0; c < sizeof(captures) / sizeof(captures[0]); c++) {
		struct capture *cap = load(captures[c]);
		struct side cl = { 0 }, sv = { 0 };

		cl.vout = fa;
		sv.replay = cap;
		converse(&cl, &sv);
		assert_int_equal(sv.rc, 0);
		assert_int_equal(cl.rc, 0);
		/* the stock server received our offer; what it parses is 6.06 (>= 5.70) */
		assert_memory_equal(sv.got, fa, MR_PT_VERSION_LEN);
		assert_true(stock_reader(sv.got) >= 5.70);
		assert_int_equal(cl.pre.mtu, 1024);
		/* and it offered nothing: plain RoCE */
		assert_memory_equal(cl.pre.peer_version_raw, cap->seg[1].data, MR_PT_VERSION_LEN);
		assert_int_equal(mr_mrc_version_decode(cl.pre.peer_version_raw, &p), 0);
		assert_false(mr_mrc_negotiate(&oa, &p, NULL));
		free(cap);
	}
}

static void test_args(void **state)
{
	struct mr_perf_args a;
	char err[256];

	(void)state;
	assert_int_equal(mr_perf_args_parse(2, (const char *const[]){ "mrperf", "write_bw" }, &a,
					    err, sizeof(err)), 0);
	assert_false(a.metaroce);
	assert_int_equal(a.entropies, 16);
	assert_int_equal(a.cc, 0);
	assert_int_equal(mr_perf_args_parse(6, (const char *const[]){ "mrperf", "write_bw",
		"--metaroce", "--entropies=4", "--cc", "metaroce" }, &a, err, sizeof(err)), 0);
	assert_true(a.metaroce);
	assert_int_equal(a.entropies, 4);
	assert_int_equal(a.cc, 2);
	assert_int_equal(mr_perf_args_parse(4, (const char *const[]){ "mrperf", "write_bw",
		"--cc", "bbr" }, &a, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "--cc"));
	assert_int_equal(mr_perf_args_parse(3, (const char *const[]){ "mrperf", "write_bw",
		"--entropies=0" }, &a, err, sizeof(err)), -EINVAL);
	assert_int_equal(mr_perf_args_parse(3, (const char *const[]){ "mrperf", "write_bw",
		"--entropies=257" }, &a, err, sizeof(err)), -EINVAL);
	assert_int_equal(mr_perf_args_parse(3, (const char *const[]){ "mrperf", "write_bw",
		"--metaroce=1" }, &a, err, sizeof(err)), -EINVAL);
	assert_int_equal(mr_mrc_cc_from_name("dcqcn", &(uint8_t){ 0 }), 0);
	assert_string_equal(mr_mrc_cc_name(1), "dcqcn");
	assert_string_equal(mr_mrc_cc_name(9), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stock_bytes_from_captures),
		cmocka_unit_test(test_offer_layout_and_stock_view),
		cmocka_unit_test(test_malformed_offers_mean_plain_roce),
		cmocka_unit_test(test_negotiate_rules),
		cmocka_unit_test(test_preamble_both_offer),
		cmocka_unit_test(test_preamble_one_side),
		cmocka_unit_test(test_preamble_against_captured_stock_server),
		cmocka_unit_test(test_args),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
