/* SPDX-License-Identifier: MIT
 * Parse + ICRC throughput on the rxe capture vectors (not a test): loads every RoCE frame, then
 * parses all of them with ICRC checking repeatedly for about a second; also times the builder.
 * Absolute rates depend on the machine and its load, so each figure is also printed as a ratio
 * against baselines measured in the same run on the same frames: a memcpy of every frame (the
 * floor for touching each byte once) and a bytewise one-table CRC-32. mr_crc32 runs the path
 * selected at start-up (MR_CRC32_IMPL=table gives the slicing-by-8 "before" figures).
 * Usage: bench_wire VECTORS_DIR [seconds]
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wire/pcap_file.h"
#include "wire/crc32_impl.h"
#include "wire/icrc.h"
#include "wire/roce_pkt.h"

struct bframe {
	uint8_t *data;
	uint32_t len;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The textbook bytewise CRC-32 (reflected 0xEDB88320, one 256-entry table): the baseline. */
static uint32_t crc_tab[256];

static void crc_tab_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_tab[i] = c;
	}
}

static uint32_t crc_bytewise(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	while (n--)
		c = crc_tab[(c ^ *p++) & 0xff] ^ (c >> 8);
	return c ^ 0xffffffffu;
}

/* Frames per second of fn over all frames, run for about secs. */
static double rate(const struct bframe *fr, size_t n, double secs, uint64_t *sink,
		   uint64_t (*fn)(const struct bframe *f, uint8_t *out), uint8_t *out)
{
	uint64_t iters = 0;
	double t0 = now_s(), t;

	do {
		for (size_t i = 0; i < n; i++)
			*sink += fn(&fr[i], out);
		iters++;
	} while ((t = now_s() - t0) < secs);
	return (double)(n * iters) / t;
}

static uint64_t do_memcpy(const struct bframe *f, uint8_t *out)
{
	memcpy(out, f->data, f->len);
	return out[f->len - 1];
}

static uint64_t do_crc_bytewise(const struct bframe *f, uint8_t *out)
{
	(void)out;
	return crc_bytewise(f->data, f->len);
}

static uint64_t do_crc_ours(const struct bframe *f, uint8_t *out)
{
	(void)out;
	return mr_crc32(0, f->data, f->len);
}

int main(int argc, char **argv)
{
	struct bframe *fr = NULL;
	size_t n = 0, cap = 0;
	uint64_t bytes = 0, iters = 0, parsed = 0, built = 0;
	double secs = argc > 2 ? atof(argv[2]) : 1.0, t0, t;
	DIR *d;
	struct dirent *de;
	struct mr_pkt pkt;
	uint8_t out[9000];
	double base_cpy = 0, base_byte = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s VECTORS_DIR [seconds]\n", argv[0]);
		return 2;
	}
	d = opendir(argv[1]);
	if (!d) {
		perror(argv[1]);
		return 2;
	}
	while ((de = readdir(d))) {
		char path[4096];
		struct mr_pcap_reader *r;
		struct mr_pcap_rec rec;
		size_t nl = strlen(de->d_name);

		if (nl < 6 || strcmp(de->d_name + nl - 5, ".pcap") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", argv[1], de->d_name);
		r = mr_pcap_reader_open(path);
		if (!r)
			continue;
		while (mr_pcap_reader_next(r, &rec) == 1) {
			if (mr_frame_parse(rec.data, rec.caplen, true, &pkt) != MR_PARSE_OK)
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 1024;
				fr = realloc(fr, cap * sizeof(*fr));
				if (!fr)
					return 1;
			}
			fr[n].data = malloc(rec.caplen);
			if (!fr[n].data)
				return 1;
			memcpy(fr[n].data, rec.data, rec.caplen);
			fr[n].len = rec.caplen;
			bytes += rec.caplen;
			n++;
		}
		mr_pcap_reader_close(r);
	}
	closedir(d);
	if (!n) {
		fprintf(stderr, "no RoCE frames found\n");
		return 1;
	}

	{
		uint64_t sink = 0;
		double r_cpy, r_byte, r_ours;

		crc_tab_init();
		r_cpy = rate(fr, n, secs / 2, &sink, do_memcpy, out);
		r_byte = rate(fr, n, secs / 2, &sink, do_crc_bytewise, out);
		r_ours = rate(fr, n, secs / 2, &sink, do_crc_ours, out);
		printf("baselines: memcpy %.2f Mframes/s, bytewise CRC-32 %.2f Mframes/s; "
		       "mr_crc32 (%s; MR_CRC32_IMPL=table|pclmul|vpclmul selects) %.2f Mframes/s = "
		       "%.2fx bytewise (sink %llu)\n", r_cpy / 1e6, r_byte / 1e6,
		       mr_crc32_impl_name(mr_crc32_impl_get()), r_ours / 1e6, r_ours / r_byte,
		       (unsigned long long)(sink & 1));
		base_cpy = r_cpy;
		base_byte = r_byte;
	}
	t0 = now_s();
	do {
		for (size_t i = 0; i < n; i++)
			parsed += mr_frame_parse(fr[i].data, fr[i].len, true, &pkt) == MR_PARSE_OK;
		iters++;
	} while ((t = now_s() - t0) < secs);
	printf("parse+ICRC: %zu frames (avg %.0f B) x %llu rounds in %.3f s: %.2f Mframes/s, "
	       "%.2f Gb/s\n", n, (double)bytes / n, (unsigned long long)iters, t,
	       parsed / t / 1e6, (double)bytes * iters * 8 / t / 1e9);
	printf("parse+ICRC ratio: %.2f of memcpy's frame rate, %.2fx a bytewise CRC-32 alone\n",
	       parsed / t / base_cpy, parsed / t / base_byte);
	if (parsed != n * iters)
		return 1;

	/* Builder: rebuild every frame from its decoded form (headers + payload + ICRC). */
	iters = 0;
	t0 = now_s();
	do {
		for (size_t i = 0; i < n; i++) {
			struct mr_path path = { 0 };
			struct mr_iov iov;

			mr_frame_parse(fr[i].data, fr[i].len, false, &pkt);
			memcpy(path.smac, pkt.smac, 6);
			memcpy(path.dmac, pkt.dmac, 6);
			memcpy(path.sgid, pkt.sgid, 16);
			memcpy(path.dgid, pkt.dgid, 16);
			path.ttl = pkt.ttl;
			path.udp_sport = pkt.udp_sport;
			iov.base = pkt.payload;
			iov.len = pkt.paylen;
			built += mr_frame_build(out, sizeof(out), &path, 1, &pkt.hdr, &iov, 1) > 0;
		}
		iters++;
	} while ((t = now_s() - t0) < secs);
	printf("parse(no ICRC)+build: %.2f Mframes/s, %.2f Gb/s (%.2f of memcpy's frame rate)\n",
	       built / t / 1e6, (double)bytes * iters * 8 / t / 1e9, built / t / base_cpy);
	for (size_t i = 0; i < n; i++)
		free(fr[i].data);
	free(fr);
	return built == n * iters ? 0 : 1;
}
