/* SPDX-License-Identifier: MIT
 * Frame builder cost per frame (not a test): mr_frame_build from a copy of the QP's path (as
 * the engine did, patching the destination MAC and the UDP source port into the copy) against
 * mr_frame_build_tmpl from the path's prebuilt headers, for RDMA WRITE Only frames of 8 B,
 * 1 KiB and 4 KiB payload over IPv4. Each frame is built into the buffer the previous one was
 * read from, and its ICRC feeds the next ip_id, so that calls do not overlap. Cells alternate
 * (old, new, old, ...) and each prints its median of REPS.
 * Usage: bench_build [REPS] [FRAMES_PER_REP]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wire/roce_hdr.h"
#include "wire/roce_opcode.h"
#include "wire/roce_pkt.h"

#define MAX_REPS 99

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

struct cell {
	const struct mr_path *path;
	const struct mr_hdr_tmpl *tmpl;
	struct mr_roce_hdrs hdr;
	struct mr_iov iov;
	uint8_t *buf;
};

/* ns per frame over n frames; tmpl selects the builder. */
static double run(struct cell *c, bool tmpl, unsigned int n)
{
	static const uint8_t mac[6] = { 0x52, 0x54, 0, 0, 0, 0x21 };
	uint16_t id = 1;
	double t0 = now_ns();
	int len = 0;

	for (unsigned int i = 0; i < n; i++) {
		c->hdr.psn = (c->hdr.psn + 1) & MR_PSN_MASK;
		if (tmpl) {
			len = mr_frame_build_tmpl(c->buf, 8192, c->tmpl, mac, 0, id, &c->hdr, &c->iov,
						  1, 0);
		} else {
			struct mr_path p = *c->path;

			memcpy(p.dmac, mac, 6);
			len = mr_frame_build(c->buf, 8192, &p, id, &c->hdr, &c->iov, 1);
		}
		if (len <= 0) {
			fprintf(stderr, "build failed: %d\n", len);
			exit(1);
		}
		id = (uint16_t)(id + c->buf[len - 1]); /* the ICRC's last byte: a dependence */
	}
	return (now_ns() - t0) / n;
}

int main(int argc, char **argv)
{
	static const uint32_t sizes[] = { 8, 1024, 4096 };
	unsigned int reps = argc > 1 ? (unsigned)atoi(argv[1]) : 9;
	unsigned int n = argc > 2 ? (unsigned)atoi(argv[2]) : 200000;
	struct mr_path path;
	struct mr_hdr_tmpl t;
	uint8_t *payload = calloc(1, 4096), *buf = aligned_alloc(64, 8192);

	if (reps < 1 || reps > MAX_REPS || n < 1 || payload == NULL || buf == NULL) {
		fprintf(stderr, "usage: %s [REPS 1..%d] [FRAMES_PER_REP]\n", argv[0], MAX_REPS);
		return 2;
	}
	memset(&path, 0, sizeof(path));
	memcpy(path.smac, "\x52\x54\x00\x00\x00\x12", 6);
	path.sgid[10] = path.sgid[11] = path.dgid[10] = path.dgid[11] = 0xff;
	memcpy(path.sgid + 12, "\xc6\x12\x00\x01", 4);
	memcpy(path.dgid + 12, "\xc6\x12\x00\x02", 4);
	path.tclass = 26 << 2 | 2;
	path.ttl = 64;
	path.udp_sport = 0xc001;
	if (mr_hdr_tmpl_init(&t, &path) != 0)
		return 1;
	printf("# one core, median of %u x %u frames per cell, ns per frame (ICRC included)\n", reps,
	       n);
	printf("%-10s %10s %10s %8s\n", "payload", "from path", "template", "ratio");
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		struct cell c = { .path = &path, .tmpl = &t, .buf = buf };
		double old[MAX_REPS], tm[MAX_REPS], mo, mt;

		c.hdr.opcode = MR_OP_RC_WRITE_ONLY;
		c.hdr.dqpn = 0x11;
		c.hdr.reth.va = 0x10000;
		c.hdr.reth.rkey = 0x1234;
		c.hdr.reth.dlen = sizes[s];
		c.iov.base = payload;
		c.iov.len = sizes[s];
		run(&c, false, n / 10); /* warm-up */
		run(&c, true, n / 10);
		for (unsigned int r = 0; r < reps; r++) {
			old[r] = run(&c, false, n);
			tm[r] = run(&c, true, n);
		}
		qsort(old, reps, sizeof(double), cmp_d);
		qsort(tm, reps, sizeof(double), cmp_d);
		mo = old[reps / 2];
		mt = tm[reps / 2];
		printf("%-10u %10.2f %10.2f %8.3f\n", sizes[s], mo, mt, mt / mo);
		printf("RESULT build_path_%u_ns %.3f\nRESULT build_tmpl_%u_ns %.3f\n", sizes[s], mo,
		       sizes[s], mt);
	}
	free(payload);
	free(buf);
	return 0;
}
