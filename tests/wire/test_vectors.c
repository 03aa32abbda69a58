/* SPDX-License-Identifier: MIT
 * The wire code against real Linux rxe traffic (the .pcap files of tests/vectors, directory given as argv[1]
 * or MR_VECTORS_DIR): every RoCE frame parses with a matching ICRC and is rebuilt byte for byte
 * by mr_frame_build from its decoded fields; corrupting any covered byte, or truncating at any
 * length, is rejected with a reason and never reads out of bounds (run under ASan).
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wire/pcap_file.h"
#include "wire/icrc.h"
#include "wire/roce_hdr.h"
#include "wire/roce_opcode.h"
#include "wire/roce_pkt.h"

struct vframe {
	uint8_t *data;
	uint32_t len;
	char file[64];
	uint32_t frame_no; /* 1-based within its file */
	bool sample;       /* first of its opcode in its file: used by the slow tests */
};

static const char *vectors_dir;
static struct vframe *frames;
static size_t nframes, frames_cap;
static unsigned int nfiles;

static void add_frame(const char *file, uint32_t no, const uint8_t *d, uint32_t len, bool sample)
{
	struct vframe *f;

	if (nframes == frames_cap) {
		frames_cap = frames_cap ? 2 * frames_cap : 256;
		frames = realloc(frames, frames_cap * sizeof(*frames));
		assert_non_null(frames);
	}
	f = &frames[nframes++];
	f->data = malloc(len);
	assert_non_null(f->data);
	memcpy(f->data, d, len);
	f->len = len;
	snprintf(f->file, sizeof(f->file), "%s", file);
	f->frame_no = no;
	f->sample = sample;
}

/* Load every RoCE v2 frame (UDP dport 4791, decided without our parser) of every pcap. */
static int load_vectors(void **state)
{
	DIR *d = opendir(vectors_dir);
	struct dirent *de;

	(void)state;
	if (!d) {
		fprintf(stderr, "cannot open vectors dir %s: %s\n", vectors_dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(d))) {
		size_t nl = strlen(de->d_name);
		char path[4096];
		struct mr_pcap_reader *r;
		struct mr_pcap_rec rec;
		bool seen[256] = { false };
		uint32_t no = 0;

		if (nl < 6 || strcmp(de->d_name + nl - 5, ".pcap") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", vectors_dir, de->d_name);
		r = mr_pcap_reader_open(path);
		if (!r)
			return -1;
		nfiles++;
		while (mr_pcap_reader_next(r, &rec) == 1) {
			const uint8_t *p = rec.data;

			no++;
			/* IPv4/UDP/4791 without VLAN, as in the captures: offsets 12, 23, 36 */
			if (rec.caplen < 14 + 20 + 8 + 12 || mr_get_be16(p + 12) != 0x0800 ||
			    p[23] != 17 || mr_get_be16(p + 14 + (p[14] & 0xf) * 4 + 2) != 4791)
				continue;
			{
				uint8_t op = p[14 + (p[14] & 0xf) * 4 + 8];

				add_frame(de->d_name, no, p, rec.caplen, !seen[op]);
				seen[op] = true;
			}
		}
		mr_pcap_reader_close(r);
	}
	closedir(d);
	return nfiles ? 0 : -1;
}

static int free_vectors(void **state)
{
	(void)state;
	for (size_t i = 0; i < nframes; i++)
		free(frames[i].data);
	free(frames);
	return 0;
}

/* Every frame: MR_PARSE_OK, the stored ICRC equals ours, and building it again from the decoded
 * fields gives the identical bytes (so the builder matches rxe exactly). */
static void test_vectors_parse_and_rebuild(void **state)
{
	size_t per_file_ok = 0;

	(void)state;
	assert_true(nframes > 0);
	for (size_t i = 0; i < nframes; i++) {
		const struct vframe *f = &frames[i];
		struct mr_pkt pkt;
		struct mr_path path;
		struct mr_iov iov;
		uint8_t *out = malloc(f->len + 64);
		enum mr_parse_result r;
		uint32_t icrc;
		int len;

		assert_non_null(out);
		r = mr_frame_parse(f->data, f->len, true, &pkt);
		if (r != MR_PARSE_OK)
			fail_msg("%s frame %u: %s", f->file, f->frame_no, mr_parse_result_str(r));
		assert_int_equal(mr_icrc_frame(f->data, f->len, &icrc), 0);
		assert_int_equal(icrc, pkt.icrc);
		assert_int_equal(icrc, mr_get_le32(f->data + f->len - 4));

		memset(&path, 0, sizeof(path));
		memcpy(path.smac, pkt.smac, 6);
		memcpy(path.dmac, pkt.dmac, 6);
		path.vlan = pkt.vlan;
		path.vlan_tci = pkt.vlan_tci;
		path.ipv6 = pkt.ipv6;
		memcpy(path.sgid, pkt.sgid, 16);
		memcpy(path.dgid, pkt.dgid, 16);
		path.tclass = pkt.tclass;
		path.ttl = pkt.ttl;
		path.udp_sport = pkt.udp_sport;
		iov.base = pkt.payload;
		iov.len = pkt.paylen;
		len = mr_frame_build(out, f->len + 64, &path, mr_get_be16(f->data + 18), &pkt.hdr,
				     &iov, 1);
		assert_int_equal(len, f->len);
		if (memcmp(out, f->data, f->len) != 0)
			fail_msg("%s frame %u: rebuilt frame differs", f->file, f->frame_no);
		free(out);
		per_file_ok++;
	}
	assert_int_equal(per_file_ok, nframes);
	printf("vectors: %u files, %zu RoCE frames parsed, ICRC-verified and rebuilt identically\n",
	       nfiles, nframes);
}

/* Flip bits in every byte of one frame per opcode per file. Bytes outside the ICRC and the IP
 * checksum (MACs, protected by the Ethernet FCS) and the BTH FECN/BECN byte (variant by design,
 * A17.9.1) are skipped; every other change must be rejected, with BAD_ICRC wherever only the
 * ICRC covers the byte. */
static void test_vectors_corruption(void **state)
{
	static const uint8_t flips[] = { 0x01, 0x80, 0xff };
	size_t nsample = 0, ncases = 0;

	(void)state;
	for (size_t i = 0; i < nframes; i++) {
		const struct vframe *f = &frames[i];
		const struct mr_opcode_info *oi;
		struct mr_pkt pkt;
		uint32_t l3, udp, bth;
		uint8_t *buf;

		if (!f->sample)
			continue;
		nsample++;
		assert_int_equal(mr_frame_parse(f->data, f->len, true, &pkt), MR_PARSE_OK);
		oi = mr_opcode_info(pkt.hdr.opcode);
		l3 = 14;
		udp = l3 + (f->data[l3] & 0xfu) * 4;
		bth = udp + 8;
		buf = malloc(f->len);
		assert_non_null(buf);
		for (uint32_t off = 12; off < f->len; off++) {
			if (off == bth + 4)
				continue;
			for (size_t k = 0; k < sizeof(flips); k++) {
				enum mr_parse_result r;

				memcpy(buf, f->data, f->len);
				buf[off] ^= flips[k];
				r = mr_frame_parse(buf, f->len, true, &pkt);
				ncases++;
				if (r == MR_PARSE_OK)
					fail_msg("%s frame %u: flip 0x%02x at %u accepted", f->file,
						 f->frame_no, flips[k], off);
				if (r == MR_PARSE_NOT_ROCE)
					assert_true(off == 12 || off == 13 || off == l3 + 9 ||
						    off == udp + 2 || off == udp + 3);
				if (off >= bth + oi->length && r != MR_PARSE_BAD_ICRC)
					fail_msg("%s frame %u: payload flip at %u gave %s", f->file,
						 f->frame_no, off, mr_parse_result_str(r));
				if (off >= l3 + 12 && off < udp) /* IPv4 addresses */
					assert_int_equal(r, MR_PARSE_BAD_IP_CSUM);
				if (off == udp || off == udp + 1) /* source port: ICRC only */
					assert_int_equal(r, MR_PARSE_BAD_ICRC);
			}
		}
		free(buf);
	}
	assert_true(nsample >= nfiles);
	printf("corruption: %zu sample frames, %zu corrupted variants all rejected\n", nsample,
	       ncases);
}

/* Every prefix of every sample frame, in an exactly sized heap buffer so ASan sees overreads. */
static void test_vectors_truncation(void **state)
{
	(void)state;
	for (size_t i = 0; i < nframes; i++) {
		const struct vframe *f = &frames[i];

		if (!f->sample)
			continue;
		for (uint32_t len = 0; len < f->len; len++) {
			uint8_t *buf = malloc(len ? len : 1);
			struct mr_pkt pkt;

			assert_non_null(buf);
			memcpy(buf, f->data, len);
			assert_int_equal(mr_frame_parse(len ? buf : NULL, len, true, &pkt),
					 MR_PARSE_TRUNCATED);
			free(buf);
		}
	}
}

/* Random multi-byte damage and random lengths: must never crash or read out of bounds; the
 * result is always a defined reason, and OK only if the ICRC really matches. */
static void test_vectors_fuzz(void **state)
{
	uint64_t s = 0x1234567887654321ull;
	size_t nsample = 0;

	(void)state;
	for (size_t i = 0; i < nframes; i++)
		nsample += frames[i].sample;
	for (int it = 0; it < 30000; it++) {
		const struct vframe *f = NULL;
		size_t pick;
		uint32_t len;
		uint8_t *buf;
		struct mr_pkt pkt;
		enum mr_parse_result r;

		s = s * 6364136223846793005ull + 1442695040888963407ull;
		pick = (size_t)(s >> 33) % nsample;
		for (size_t j = 0; j < nframes; j++)
			if (frames[j].sample && pick-- == 0) {
				f = &frames[j];
				break;
			}
		assert_non_null(f);
		len = (uint32_t)((s >> 17) % (f->len + 1));
		buf = malloc(len + 1);
		assert_non_null(buf);
		memcpy(buf, f->data, len);
		for (int k = 0; k < 1 + (int)((s >> 9) & 3); k++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			if (len)
				buf[(s >> 33) % len] ^= (uint8_t)(s >> 25);
		}
		r = mr_frame_parse(buf, len, true, &pkt);
		assert_true((unsigned int)r < MR_PARSE_NR_RESULTS);
		if (r == MR_PARSE_OK) {
			uint32_t icrc;

			assert_int_equal(mr_icrc_frame(buf, len, &icrc), 0);
			assert_int_equal(icrc, pkt.icrc);
			assert_true(pkt.payload + pkt.paylen <= buf + len);
		}
		free(buf);
	}
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors_parse_and_rebuild),
		cmocka_unit_test(test_vectors_corruption),
		cmocka_unit_test(test_vectors_truncation),
		cmocka_unit_test(test_vectors_fuzz),
	};

	vectors_dir = argc > 1 ? argv[1] : getenv("MR_VECTORS_DIR");
	if (!vectors_dir) {
		fprintf(stderr, "usage: %s VECTORS_DIR (or set MR_VECTORS_DIR)\n", argv[0]);
		return 1;
	}
	return cmocka_run_group_tests(tests, load_vectors, free_vectors);
}
