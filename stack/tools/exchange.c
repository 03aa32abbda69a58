/* SPDX-License-Identifier: MIT
 * perftest / rc_pingpong setup-message codecs: exact bytes, no I/O (see exchange.h).
 */
#include "exchange.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mr_pt_version_encode(uint8_t out[MR_PT_VERSION_LEN])
{
	/* perftest copies VERSION into a zeroed char[16]; the rest stays NUL. */
	memset(out, 0, MR_PT_VERSION_LEN);
	memcpy(out, MR_PT_VERSION, sizeof(MR_PT_VERSION) - 1);
}

int mr_pt_version_decode(const uint8_t in[MR_PT_VERSION_LEN], double *ver)
{
	char buf[MR_PT_VERSION_LEN];
	char *end;
	size_t n;

	if (in == NULL || ver == NULL)
		return -EINVAL;
	memcpy(buf, in, sizeof(buf));
	n = strnlen(buf, sizeof(buf));
	if (n == 0 || n == sizeof(buf))
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!((buf[i] >= '0' && buf[i] <= '9') || buf[i] == '.'))
			return -EINVAL;
	errno = 0;
	*ver = strtod(buf, &end);
	if (errno != 0 || *end != '\0')
		return -EINVAL;
	return 0;
}

void mr_pt_u32_encode(uint32_t v, uint8_t out[4])
{
	/* perftest sends ints through htonl (hton_int): big-endian. */
	for (int i = 0; i < 4; i++)
		out[i] = (uint8_t)(v >> (24 - 8 * i));
}

uint32_t mr_pt_u32_decode(const uint8_t in[4])
{
	return (uint32_t)in[0] << 24 | (uint32_t)in[1] << 16 | (uint32_t)in[2] << 8 | in[3];
}

void mr_pt_u64_encode(uint64_t v, uint8_t out[8])
{
	/* hton_long on LP64 is bswap_64 on little-endian hosts: big-endian. */
	for (int i = 0; i < 8; i++)
		out[i] = (uint8_t)(v >> (56 - 8 * i));
}

uint64_t mr_pt_u64_decode(const uint8_t in[8])
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | in[i];
	return v;
}

void mr_pt_double_encode(double v, uint8_t out[8])
{
	/* hton_double byte-swaps the IEEE-754 image on little-endian hosts. */
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	mr_pt_u64_encode(bits, out);
}

double mr_pt_double_decode(const uint8_t in[8])
{
	uint64_t bits = mr_pt_u64_decode(in);
	double v;

	memcpy(&v, &bits, sizeof(v));
	return v;
}

/* ibv_mtu enum: IBV_MTU_256 = 1 .. IBV_MTU_4096 = 5 (IBA 7.7.1 PMTU encoding). */
static int mtu_to_enum(uint32_t bytes)
{
	for (int e = 1; e <= 5; e++)
		if (bytes == (128u << e))
			return e;
	return -EINVAL;
}

int mr_pt_mtu_encode(uint32_t mtu_bytes, uint8_t out[MR_PT_MTU_LEN])
{
	int e = mtu_to_enum(mtu_bytes);

	if (e < 0)
		return e;
	/* check_mtu(): sprintf(cur, "%d", mtu) and send the first two bytes. */
	out[0] = (uint8_t)('0' + e);
	out[1] = '\0';
	return 0;
}

int mr_pt_mtu_decode(const uint8_t in[MR_PT_MTU_LEN])
{
	if (in[0] < '1' || in[0] > '5' || in[1] != '\0')
		return -EINVAL;
	return (int)(128u << (in[0] - '0'));
}

/* Parses a hex field of 1..maxw digits at *p terminated by term; advances *p past term. */
static int hex_field(const char **p, const char *end, unsigned maxw, char term, uint64_t *v)
{
	const char *s = *p;
	unsigned n = 0;
	uint64_t acc = 0;

	while (s < end && *s != term) {
		char ch = *s;
		unsigned d;

		if (ch >= '0' && ch <= '9')
			d = (unsigned)(ch - '0');
		else if (ch >= 'a' && ch <= 'f')
			d = (unsigned)(ch - 'a' + 10);
		else if (ch >= 'A' && ch <= 'F')
			d = (unsigned)(ch - 'A' + 10);
		else
			return -EINVAL;
		if (++n > maxw)
			return -EINVAL;
		acc = acc << 4 | d;
		s++;
	}
	if (n == 0 || s >= end)
		return -EINVAL;
	*v = acc;
	*p = s + 1;
	return 0;
}

int mr_pt_dest_encode(const struct mr_pt_dest *d, bool with_gid, char *out, size_t out_len)
{
	size_t need = with_gid ? MR_PT_KEY_LEN_GID : MR_PT_KEY_LEN;
	char buf[MR_PT_KEY_LEN_GID];
	int n;

	if (d == NULL || out == NULL || d->qpn > 0xffffff || d->psn > 0xffffff ||
	    d->out_reads > 0xffff)
		return -EINVAL;
	if (out_len < need)
		return -ENOSPC;
	memset(buf, 0, sizeof(buf));
	n = snprintf(buf, sizeof(buf), "%04x:%04x:%06x:%06x:%08x:%016llx:", d->lid, d->out_reads,
		     d->qpn, d->psn, d->rkey, (unsigned long long)d->vaddr);
	if (with_gid) {
		for (int i = 0; i < 16; i++)
			n += snprintf(buf + n, sizeof(buf) - (size_t)n, "%02x:", d->gid[i]);
		/* KEY_PRINT_FMT_GID ends with "%08x:" */
		n += snprintf(buf + n, sizeof(buf) - (size_t)n, "%08x:", d->srqn);
	} else {
		/* KEY_PRINT_FMT ends with "%08x" and no colon */
		n += snprintf(buf + n, sizeof(buf) - (size_t)n, "%08x", d->srqn);
	}
	if ((size_t)n + 1 != need)
		return -EINVAL;
	memcpy(out, buf, need);
	return (int)need;
}

int mr_pt_dest_decode(const char *in, size_t len, bool with_gid, struct mr_pt_dest *d)
{
	size_t need = with_gid ? MR_PT_KEY_LEN_GID : MR_PT_KEY_LEN;
	const char *p = in, *end;
	uint64_t v[6];
	static const unsigned width[6] = { 4, 4, 6, 6, 8, 16 };
	struct mr_pt_dest tmp;

	if (in == NULL || d == NULL || len != need)
		return -EINVAL;
	end = in + len;
	memset(&tmp, 0, sizeof(tmp));
	for (int i = 0; i < 6; i++)
		if (hex_field(&p, end, width[i], ':', &v[i]) < 0)
			return -EINVAL;
	tmp.lid = (uint16_t)v[0];
	tmp.out_reads = (uint32_t)v[1];
	tmp.qpn = (uint32_t)v[2];
	tmp.psn = (uint32_t)v[3];
	tmp.rkey = (uint32_t)v[4];
	tmp.vaddr = v[5];
	if (with_gid) {
		uint64_t g;

		for (int i = 0; i < 16; i++) {
			if (hex_field(&p, end, 2, ':', &g) < 0)
				return -EINVAL;
			tmp.gid[i] = (uint8_t)g;
		}
		if (hex_field(&p, end, 8, ':', &g) < 0)
			return -EINVAL;
		tmp.srqn = (uint32_t)g;
	} else {
		uint64_t g;

		if (hex_field(&p, end, 8, '\0', &g) < 0)
			return -EINVAL;
		tmp.srqn = (uint32_t)g;
		p--; /* point at the NUL */
	}
	/* sprintf's NUL must follow; anything after it is padding we do not accept. */
	if (p >= end || *p != '\0' || (size_t)(p - in) + 1 != len)
		return -EINVAL;
	*d = tmp;
	return 0;
}

int mr_pp_dest_encode(const struct mr_pp_dest *d, char *out, size_t out_len)
{
	char buf[MR_PP_MSG_LEN];
	int n;

	if (d == NULL || out == NULL || d->qpn > 0xffffff || d->psn > 0xffffff)
		return -EINVAL;
	if (out_len < MR_PP_MSG_LEN)
		return -ENOSPC;
	n = snprintf(buf, sizeof(buf), "%04x:%06x:%06x:", d->lid, d->qpn, d->psn);
	/* gid_to_wire_gid(): four htonl'd words as %08x = the 16 raw bytes in order. */
	for (int i = 0; i < 16; i++)
		n += snprintf(buf + n, sizeof(buf) - (size_t)n, "%02x", d->gid[i]);
	if (n + 1 != MR_PP_MSG_LEN)
		return -EINVAL;
	memcpy(out, buf, MR_PP_MSG_LEN);
	return MR_PP_MSG_LEN;
}

int mr_pp_dest_decode(const char *in, size_t len, struct mr_pp_dest *d)
{
	const char *p = in, *end;
	uint64_t v[3];
	static const unsigned width[3] = { 4, 6, 6 };
	struct mr_pp_dest tmp;

	if (in == NULL || d == NULL || len != MR_PP_MSG_LEN)
		return -EINVAL;
	end = in + len;
	memset(&tmp, 0, sizeof(tmp));
	for (int i = 0; i < 3; i++)
		if (hex_field(&p, end, width[i], ':', &v[i]) < 0)
			return -EINVAL;
	tmp.lid = (uint16_t)v[0];
	tmp.qpn = (uint32_t)v[1];
	tmp.psn = (uint32_t)v[2];
	/* the GID is exactly 32 hex digits followed by the NUL */
	if (end - p != 33 || p[32] != '\0')
		return -EINVAL;
	for (int i = 0; i < 16; i++) {
		char two[3] = { p[2 * i], p[2 * i + 1], '\0' };
		const char *q = two;
		uint64_t g;

		if (hex_field(&q, two + 3, 2, '\0', &g) < 0 || q != two + 3)
			return -EINVAL;
		tmp.gid[i] = (uint8_t)g;
	}
	*d = tmp;
	return 0;
}
