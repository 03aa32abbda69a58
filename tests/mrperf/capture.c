/* SPDX-License-Identifier: MIT
 * Test helper: minimal pcap walker for the rxe captures (see capture.h).
 */
#include "capture.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t rd32(const uint8_t *p, bool swap)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return swap ? __builtin_bswap32(v) : v;
}

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t be24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static void frame(struct capture *cap, const uint8_t *f, size_t len, uint16_t tcp_port)
{
	const uint8_t *ip, *l4;
	size_t ihl, iplen;

	if (len < 14 + 20 || be16(f + 12) != 0x0800)
		return;
	ip = f + 14;
	ihl = (size_t)(ip[0] & 0x0f) * 4;
	iplen = be16(ip + 2);
	if (ihl < 20 || iplen < ihl || 14 + iplen > len)
		return;
	l4 = ip + ihl;
	if (ip[9] == 6 && iplen >= ihl + 20) {
		size_t doff = (size_t)(l4[12] >> 4) * 4;
		size_t plen = iplen - ihl - doff;
		uint16_t sp = be16(l4), dp = be16(l4 + 2);
		struct cap_seg *s;

		if ((sp != tcp_port && dp != tcp_port) || doff < 20 || ihl + doff > iplen || plen == 0)
			return;
		if (cap->nseg >= CAP_MAX_SEGS || plen > sizeof(s->data))
			return;
		s = &cap->seg[cap->nseg++];
		s->from_client = sp != tcp_port;
		s->len = plen;
		memcpy(s->data, l4 + doff, plen);
		memcpy(s->from_client ? cap->client_ip : cap->server_ip, ip + 12, 4);
		memcpy(s->from_client ? cap->server_ip : cap->client_ip, ip + 16, 4);
	} else if (ip[9] == 17 && iplen >= ihl + 8 + 12 && be16(l4 + 2) == 4791) {
		const uint8_t *bth = l4 + 8;
		struct cap_roce *r;

		if (cap->nroce >= CAP_MAX_ROCE)
			return;
		r = &cap->roce[cap->nroce++];
		memset(r, 0, sizeof(*r));
		memcpy(r->src_ip, ip + 12, 4);
		memcpy(r->dst_ip, ip + 16, 4);
		r->opcode = bth[0];
		r->dest_qp = be24(bth + 5);
		r->psn = be24(bth + 9);
		/* RC WRITE FIRST/ONLY (0x06, 0x0a, 0x0b) and READ request (0x0c) carry a RETH
		 * (IBA 9.3.3.3, table 38) right after the 12-byte BTH. */
		if ((r->opcode == 0x06 || r->opcode == 0x0a || r->opcode == 0x0b ||
		     r->opcode == 0x0c) && iplen >= ihl + 8 + 12 + 16) {
			const uint8_t *reth = bth + 12;

			r->has_reth = true;
			r->reth_va = (uint64_t)rd32(reth, true) << 32 | rd32(reth + 4, true);
			r->reth_rkey = rd32(reth + 8, true);
			r->reth_len = rd32(reth + 12, true);
		}
	}
}

int capture_load(const char *path, uint16_t tcp_port, struct capture *cap)
{
	FILE *f = fopen(path, "rb");
	uint8_t gh[24], rh[16];
	uint8_t *buf = NULL;
	bool swap;
	int ret = 0;

	if (f == NULL)
		return -errno;
	memset(cap, 0, sizeof(*cap));
	if (fread(gh, 1, sizeof(gh), f) != sizeof(gh)) {
		fclose(f);
		return -EINVAL;
	}
	if (rd32(gh, false) == 0xa1b2c3d4 || rd32(gh, false) == 0xa1b23c4d)
		swap = false;
	else if (rd32(gh, true) == 0xa1b2c3d4 || rd32(gh, true) == 0xa1b23c4d)
		swap = true;
	else {
		fclose(f);
		return -EINVAL;
	}
	buf = malloc(65536);
	if (buf == NULL) {
		fclose(f);
		return -ENOMEM;
	}
	while (fread(rh, 1, sizeof(rh), f) == sizeof(rh)) {
		uint32_t cl = rd32(rh + 8, swap);

		if (cl > 65536 || fread(buf, 1, cl, f) != cl) {
			ret = -EINVAL;
			break;
		}
		frame(cap, buf, cl, tcp_port);
	}
	free(buf);
	fclose(f);
	return ret;
}
