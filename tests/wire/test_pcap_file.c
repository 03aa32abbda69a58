/* SPDX-License-Identifier: MIT
 * stack/wire/pcap_file: writer/reader round trip, size cap, snaplen, foreign byte order and
 * microsecond files, pcapng refusal, truncated records.
 */
#include <errno.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "wire/pcap_file.h"

static char tmpl[64];

static int mk_tmp(void **state)
{
	(void)state;
	snprintf(tmpl, sizeof(tmpl), "/tmp/mr_pcap_test_XXXXXX");
	int fd = mkstemp(tmpl);

	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int rm_tmp(void **state)
{
	(void)state;
	unlink(tmpl);
	return 0;
}

static void test_round_trip(void **state)
{
	struct mr_pcap_writer *w;
	struct mr_pcap_reader *r;
	struct mr_pcap_rec rec;
	uint8_t frame[1500];

	(void)state;
	w = mr_pcap_writer_open(tmpl, 0, 0);
	assert_non_null(w);
	for (uint32_t i = 0; i < 100; i++) {
		for (uint32_t j = 0; j < sizeof(frame); j++)
			frame[j] = (uint8_t)(i * 7 + j);
		assert_int_equal(mr_pcap_writer_write(w, frame, 60 + i * 10,
						      1700000000123456789ull + i), 0);
	}
	assert_int_equal(mr_pcap_writer_dropped(w), 0);
	assert_int_equal(mr_pcap_writer_close(w), 0);

	r = mr_pcap_reader_open(tmpl);
	assert_non_null(r);
	assert_int_equal(mr_pcap_reader_linktype(r), MR_PCAP_LINKTYPE_ETHERNET);
	for (uint32_t i = 0; i < 100; i++) {
		assert_int_equal(mr_pcap_reader_next(r, &rec), 1);
		assert_int_equal(rec.caplen, 60 + i * 10);
		assert_int_equal(rec.origlen, 60 + i * 10);
		assert_true(rec.ts_ns == 1700000000123456789ull + i);
		for (uint32_t j = 0; j < rec.caplen; j++)
			assert_int_equal(rec.data[j], (uint8_t)(i * 7 + j));
	}
	assert_int_equal(mr_pcap_reader_next(r, &rec), 0);
	mr_pcap_reader_close(r);
}

static void test_cap_and_snaplen(void **state)
{
	struct mr_pcap_writer *w;
	struct mr_pcap_reader *r;
	struct mr_pcap_rec rec;
	uint8_t frame[200] = { 0 };
	int n = 0;
	FILE *f;
	long size;

	(void)state;
	/* 24 + 3 * (16 + 64) = 264: the fourth record does not fit */
	w = mr_pcap_writer_open(tmpl, 64, 264);
	assert_non_null(w);
	for (int i = 0; i < 3; i++)
		assert_int_equal(mr_pcap_writer_write(w, frame, sizeof(frame), 1), 0);
	assert_int_equal(mr_pcap_writer_write(w, frame, sizeof(frame), 1), -ENOSPC);
	assert_int_equal(mr_pcap_writer_write(w, frame, 1, 1), -ENOSPC); /* stays a prefix */
	assert_int_equal(mr_pcap_writer_dropped(w), 2);
	assert_int_equal(mr_pcap_writer_write(w, NULL, 10, 1), -EINVAL);
	assert_int_equal(mr_pcap_writer_close(w), 0);
	f = fopen(tmpl, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fclose(f);
	assert_int_equal(size, 264);
	r = mr_pcap_reader_open(tmpl);
	assert_non_null(r);
	while (mr_pcap_reader_next(r, &rec) == 1) {
		assert_int_equal(rec.caplen, 64);
		assert_int_equal(rec.origlen, 200);
		n++;
	}
	assert_int_equal(n, 3);
	mr_pcap_reader_close(r);
	errno = 0;
	assert_null(mr_pcap_writer_open(tmpl, 0, 10)); /* cap below the header */
	assert_int_equal(errno, EINVAL);
	assert_int_equal(mr_pcap_writer_close(NULL), 0);
}

static void put32be(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void write_bytes(const uint8_t *b, size_t n)
{
	FILE *f = fopen(tmpl, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, n, f), n);
	fclose(f);
}

/* A big-endian microsecond file, as written on a big-endian host. */
static void test_foreign_byte_order(void **state)
{
	uint8_t b[24 + 16 + 4];
	struct mr_pcap_reader *r;
	struct mr_pcap_rec rec;

	(void)state;
	put32be(b, 0xa1b2c3d4);
	put32be(b + 4, 0x00020004);
	put32be(b + 8, 0);
	put32be(b + 12, 0);
	put32be(b + 16, 65535);
	put32be(b + 20, 1);
	put32be(b + 24, 10);      /* sec */
	put32be(b + 28, 500000);  /* usec */
	put32be(b + 32, 4);
	put32be(b + 36, 60);
	memcpy(b + 40, "\xde\xad\xbe\xef", 4);
	write_bytes(b, sizeof(b));
	r = mr_pcap_reader_open(tmpl);
	assert_non_null(r);
	assert_int_equal(mr_pcap_reader_linktype(r), 1);
	assert_int_equal(mr_pcap_reader_next(r, &rec), 1);
	assert_true(rec.ts_ns == 10500000000ull);
	assert_int_equal(rec.caplen, 4);
	assert_int_equal(rec.origlen, 60);
	assert_memory_equal(rec.data, "\xde\xad\xbe\xef", 4);
	assert_int_equal(mr_pcap_reader_next(r, &rec), 0);
	mr_pcap_reader_close(r);

	/* the same file cut inside the record body */
	write_bytes(b, sizeof(b) - 1);
	r = mr_pcap_reader_open(tmpl);
	assert_non_null(r);
	assert_int_equal(mr_pcap_reader_next(r, &rec), -EINVAL);
	mr_pcap_reader_close(r);
	/* ... and inside the record header */
	write_bytes(b, 30);
	r = mr_pcap_reader_open(tmpl);
	assert_non_null(r);
	assert_int_equal(mr_pcap_reader_next(r, &rec), -EINVAL);
	mr_pcap_reader_close(r);
	/* absurd caplen */
	put32be(b + 32, 0x7fffffff);
	write_bytes(b, sizeof(b));
	r = mr_pcap_reader_open(tmpl);
	assert_non_null(r);
	assert_int_equal(mr_pcap_reader_next(r, &rec), -EINVAL);
	mr_pcap_reader_close(r);
}

static size_t put32(uint8_t *p, uint32_t v, bool be)
{
	if (be) {
		put32be(p, v);
	} else {
		p[0] = (uint8_t)v;
		p[1] = (uint8_t)(v >> 8);
		p[2] = (uint8_t)(v >> 16);
		p[3] = (uint8_t)(v >> 24);
	}
	return 4;
}

static size_t put16(uint8_t *p, uint16_t v, bool be)
{
	p[be ? 0 : 1] = (uint8_t)(v >> 8);
	p[be ? 1 : 0] = (uint8_t)v;
	return 2;
}

/* SHB, IDB (Ethernet, if_tsresol 10^-9), a custom block to skip, an EPB, an IDB of another link
 * type, an EPB on it, and an SPB; in either byte order. Returns the length. */
static size_t make_pcapng(uint8_t *b, bool be)
{
	size_t o = 0, start;

	start = o; /* SHB: 28 bytes */
	o += put32(b + o, 0x0a0d0d0a, be);
	o += put32(b + o, 28, be);
	o += put32(b + o, 0x1a2b3c4d, be);
	o += put16(b + o, 1, be);
	o += put16(b + o, 0, be);
	o += put32(b + o, 0xffffffff, be);
	o += put32(b + o, 0xffffffff, be);
	o += put32(b + o, 28, be);
	assert_int_equal(o - start, 28);
	start = o; /* IDB with if_tsresol = 9 and opt_endofopt: 20 + 8 + 4 = 32 */
	o += put32(b + o, 1, be);
	o += put32(b + o, 32, be);
	o += put16(b + o, 1, be);
	o += put16(b + o, 0, be);
	o += put32(b + o, 0, be);
	o += put16(b + o, 9, be);
	o += put16(b + o, 1, be);
	memcpy(b + o, "\x09\x00\x00\x00", 4); /* value 9, padded */
	o += 4;
	o += put32(b + o, 0, be);
	o += put32(b + o, 32, be);
	assert_int_equal(o - start, 32);
	start = o; /* custom block (type 0xbad), 16 bytes */
	o += put32(b + o, 0xbad, be);
	o += put32(b + o, 16, be);
	o += put32(b + o, 0x12345678, be);
	o += put32(b + o, 16, be);
	start = o; /* EPB, interface 0, 5 data bytes padded to 8: 32 + 8 = 40 */
	o += put32(b + o, 6, be);
	o += put32(b + o, 40, be);
	o += put32(b + o, 0, be);
	o += put32(b + o, 1, be);          /* ts high */
	o += put32(b + o, 2, be);          /* ts low: 2^32 + 2 ns */
	o += put32(b + o, 5, be);
	o += put32(b + o, 60, be);
	memcpy(b + o, "\x01\x02\x03\x04\x05\x00\x00\x00", 8);
	o += 8;
	o += put32(b + o, 40, be);
	assert_int_equal(o - start, 40);
	start = o; /* IDB #1: linktype 113 (Linux cooked), default resolution */
	o += put32(b + o, 1, be);
	o += put32(b + o, 20, be);
	o += put16(b + o, 113, be);
	o += put16(b + o, 0, be);
	o += put32(b + o, 0, be);
	o += put32(b + o, 20, be);
	start = o; /* EPB on interface 1, 4 bytes, ts 3 us */
	o += put32(b + o, 6, be);
	o += put32(b + o, 36, be);
	o += put32(b + o, 1, be);
	o += put32(b + o, 0, be);
	o += put32(b + o, 3, be);
	o += put32(b + o, 4, be);
	o += put32(b + o, 4, be);
	memcpy(b + o, "\xaa\xbb\xcc\xdd", 4);
	o += 4;
	o += put32(b + o, 36, be);
	assert_int_equal(o - start, 36);
	start = o; /* SPB, 3 bytes padded to 4 */
	o += put32(b + o, 3, be);
	o += put32(b + o, 20, be);
	o += put32(b + o, 3, be);
	memcpy(b + o, "\x07\x08\x09\x00", 4);
	o += 4;
	o += put32(b + o, 20, be);
	return o;
}

static void test_pcapng(void **state)
{
	uint8_t b[512];
	struct mr_pcap_reader *r;
	struct mr_pcap_rec rec;

	(void)state;
	for (int be = 0; be < 2; be++) {
		size_t n = make_pcapng(b, be);

		write_bytes(b, n);
		r = mr_pcap_reader_open(tmpl);
		assert_non_null(r);
		assert_int_equal(mr_pcap_reader_linktype(r), 1);
		assert_int_equal(mr_pcap_reader_next(r, &rec), 1);
		assert_int_equal(rec.caplen, 5);
		assert_int_equal(rec.origlen, 60);
		assert_int_equal(rec.linktype, 1);
		assert_true(rec.ts_ns == (1ull << 32) + 2);
		assert_memory_equal(rec.data, "\x01\x02\x03\x04\x05", 5);
		assert_int_equal(mr_pcap_reader_next(r, &rec), 1);
		assert_int_equal(rec.caplen, 4);
		assert_int_equal(rec.linktype, 113);
		assert_true(rec.ts_ns == 3000);
		assert_memory_equal(rec.data, "\xaa\xbb\xcc\xdd", 4);
		assert_int_equal(mr_pcap_reader_next(r, &rec), 1);
		assert_int_equal(rec.caplen, 3);
		assert_int_equal(rec.linktype, 1);
		assert_memory_equal(rec.data, "\x07\x08\x09", 3);
		assert_int_equal(mr_pcap_reader_next(r, &rec), 0);
		mr_pcap_reader_close(r);

		/* every truncation is an error or a clean end, never a crash */
		for (size_t cut = 8; cut < n; cut++) {
			int rc;

			write_bytes(b, cut);
			r = mr_pcap_reader_open(tmpl);
			if (!r)
				continue;
			while ((rc = mr_pcap_reader_next(r, &rec)) == 1)
				;
			assert_true(rc == 0 || rc == -EINVAL);
			mr_pcap_reader_close(r);
		}
		/* a block whose trailing length disagrees */
		n = make_pcapng(b, be);
		b[28 + 32 + 16 + 39] ^= 0x01;
		b[28 + 32 + 16 + 36] ^= 0x01;
		write_bytes(b, n);
		r = mr_pcap_reader_open(tmpl);
		assert_non_null(r);
		assert_int_equal(mr_pcap_reader_next(r, &rec), -EINVAL);
		mr_pcap_reader_close(r);
	}
}

static void test_not_pcap(void **state)
{
	uint8_t b[24] = { 'G' };

	(void)state;
	write_bytes(b, sizeof(b));
	errno = 0;
	assert_null(mr_pcap_reader_open(tmpl));
	assert_int_equal(errno, EINVAL);
	write_bytes(b, 10);
	assert_null(mr_pcap_reader_open(tmpl));
	assert_int_equal(errno, EINVAL);
	assert_null(mr_pcap_reader_open("/nonexistent/dir/x.pcap"));
	assert_int_equal(errno, ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip, mk_tmp, rm_tmp),
		cmocka_unit_test_setup_teardown(test_cap_and_snaplen, mk_tmp, rm_tmp),
		cmocka_unit_test_setup_teardown(test_foreign_byte_order, mk_tmp, rm_tmp),
		cmocka_unit_test_setup_teardown(test_pcapng, mk_tmp, rm_tmp),
		cmocka_unit_test_setup_teardown(test_not_pcap, mk_tmp, rm_tmp),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
