/* SPDX-License-Identifier: MIT
 * Classic pcap file format (as documented by tcpdump.org "pcap-savefile" and the IETF draft
 * draft-ietf-opsawg-pcap): 24-byte global header, then 16-byte record headers each followed by
 * caplen bytes. Byte order is that of the writer, found from the magic number.
 * pcapng (draft-ietf-opsawg-pcapng): blocks of type/length/body/length; the Section Header's
 * byte-order magic sets the byte order; packets come in Enhanced or Simple Packet Blocks.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/pcap_file.h"

#define PCAP_MAGIC_US 0xa1b2c3d4u
#define PCAP_MAGIC_NS 0xa1b23c4du
#define PCAPNG_SHB 0x0a0d0d0au
/* Records larger than this are corrupt: no link carries 256 KiB frames (libpcap's
 * MAXIMUM_SNAPLEN is 262144 for the same reason). */
#define PCAP_MAX_REC 262144u

#define PCAPNG_BOM 0x1a2b3c4du
#define PCAPNG_IDB 1u
#define PCAPNG_SPB 3u
#define PCAPNG_EPB 6u
#define PCAPNG_MAX_IF 64
#define PCAPNG_MAX_BLOCK (PCAP_MAX_REC + 4096u)

struct mr_pcap_reader {
	FILE *f;
	bool swap;
	bool nsec;
	bool ng;
	uint32_t linktype;
	uint8_t *buf;
	uint32_t buf_cap;
	/* pcapng interfaces (IDBs) of the current section */
	uint32_t nif;
	uint32_t if_link[PCAPNG_MAX_IF];
	uint32_t if_snap[PCAPNG_MAX_IF];
	uint8_t if_tsresol[PCAPNG_MAX_IF]; /* option 9 value; default 6 (microseconds) */
};

struct mr_pcap_writer {
	FILE *f;
	uint32_t snaplen;
	uint64_t max_bytes;
	uint64_t bytes;
	uint64_t dropped;
	bool full;
};

static uint32_t rd32(const uint8_t *p, bool swap)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return swap ? __builtin_bswap32(v) : v;
}

static uint16_t rd16(const uint8_t *p, bool swap)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return swap ? __builtin_bswap16(v) : v;
}

static int grow(struct mr_pcap_reader *r, uint32_t n)
{
	uint8_t *nb;

	if (n <= r->buf_cap)
		return 0;
	nb = realloc(r->buf, n);
	if (!nb)
		return -ENOMEM;
	r->buf = nb;
	r->buf_cap = n;
	return 0;
}

/* Read the rest of a pcapng block of total length `total`, of which `consumed` bytes (the
 * type/length header, and for a section header its byte-order word) are already read, into
 * r->buf. Returns the body length (without the trailing length word), or a negative errno. */
static int ng_read_body(struct mr_pcap_reader *r, uint32_t total, uint32_t consumed)
{
	uint32_t body;

	if (total < consumed + 4 || (total & 3) || total > PCAPNG_MAX_BLOCK)
		return -EINVAL;
	body = total - consumed; /* includes the trailing total length */
	if (grow(r, body) < 0)
		return -ENOMEM;
	if (fread(r->buf, 1, body, r->f) != body)
		return ferror(r->f) ? -EIO : -EINVAL;
	if (rd32(r->buf + body - 4, r->swap) != total)
		return -EINVAL;
	return (int)(body - 4);
}

/* Section Header Block: its byte-order magic decides the byte order of the section. */
static int ng_section(struct mr_pcap_reader *r, const uint8_t hdr[8])
{
	uint32_t bom, total;
	int n;

	if (fread(&bom, 1, 4, r->f) != 4)
		return -EINVAL;
	if (bom == PCAPNG_BOM)
		r->swap = false;
	else if (__builtin_bswap32(bom) == PCAPNG_BOM)
		r->swap = true;
	else
		return -EINVAL;
	total = rd32(hdr + 4, r->swap);
	if (total < 28)
		return -EINVAL;
	n = ng_read_body(r, total, 12); /* type, length and byte-order words consumed */
	if (n < 0)
		return n;
	if (rd16(r->buf, r->swap) != 1) /* major version 1 */
		return -EINVAL;
	r->nif = 0;
	return 0;
}

/* Interface Description Block: link type, snaplen and the if_tsresol option (code 9). */
static int ng_interface(struct mr_pcap_reader *r, uint32_t len)
{
	uint32_t i = r->nif, off = 8;

	if (len < 8 || i >= PCAPNG_MAX_IF)
		return -EINVAL;
	r->if_link[i] = rd16(r->buf, r->swap);
	r->if_snap[i] = rd32(r->buf + 4, r->swap);
	r->if_tsresol[i] = 6;
	while (off + 4 <= len) {
		uint16_t code = rd16(r->buf + off, r->swap), olen = rd16(r->buf + off + 2, r->swap);

		if (code == 0)
			break;
		if (off + 4 + olen > len)
			return -EINVAL;
		if (code == 9 && olen >= 1)
			r->if_tsresol[i] = r->buf[off + 4];
		off += 4 + ((olen + 3u) & ~3u);
	}
	if (r->nif == 0 && !r->linktype)
		r->linktype = r->if_link[0];
	r->nif++;
	return 0;
}

static uint64_t ng_ts_ns(uint64_t ts, uint8_t resol)
{
	uint8_t p = resol & 0x7f;

	if (resol & 0x80) { /* 2^-p seconds */
		if (p > 32)
			return 0;
		return (ts >> p) * 1000000000u + (((ts & ((1ull << p) - 1)) * 1000000000u) >> p);
	}
	if (p <= 9) {
		uint64_t m = 1;

		for (uint8_t k = p; k < 9; k++)
			m *= 10;
		return ts * m;
	}
	for (uint8_t k = 9; k < p && k < 30; k++)
		ts /= 10;
	return ts;
}

static int ng_next(struct mr_pcap_reader *r, struct mr_pcap_rec *rec)
{
	for (;;) {
		uint8_t hdr[8];
		size_t n = fread(hdr, 1, sizeof(hdr), r->f);
		uint32_t type, total, ifid, caplen, origlen;
		int len, rc;

		if (n == 0)
			return ferror(r->f) ? -EIO : 0;
		if (n != sizeof(hdr))
			return -EINVAL;
		type = rd32(hdr, r->swap);
		if (type == PCAPNG_SHB) { /* a new section (same value in both byte orders) */
			rc = ng_section(r, hdr);
			if (rc < 0)
				return rc;
			continue;
		}
		total = rd32(hdr + 4, r->swap);
		len = ng_read_body(r, total, 8);
		if (len < 0)
			return len;
		switch (type) {
		case PCAPNG_IDB:
			rc = ng_interface(r, (uint32_t)len);
			if (rc < 0)
				return rc;
			continue;
		case PCAPNG_EPB:
			if (len < 20)
				return -EINVAL;
			ifid = rd32(r->buf, r->swap);
			caplen = rd32(r->buf + 12, r->swap);
			origlen = rd32(r->buf + 16, r->swap);
			if (ifid >= r->nif || caplen > (uint32_t)len - 20)
				return -EINVAL;
			rec->ts_ns = ng_ts_ns((uint64_t)rd32(r->buf + 4, r->swap) << 32 |
					      rd32(r->buf + 8, r->swap), r->if_tsresol[ifid]);
			rec->caplen = caplen;
			rec->origlen = origlen;
			rec->linktype = r->if_link[ifid];
			rec->data = r->buf + 20;
			return 1;
		case PCAPNG_SPB:
			if (len < 4 || r->nif == 0)
				return -EINVAL;
			origlen = rd32(r->buf, r->swap);
			caplen = origlen;
			if (r->if_snap[0] && caplen > r->if_snap[0])
				caplen = r->if_snap[0];
			if (caplen > (uint32_t)len - 4)
				return -EINVAL;
			rec->ts_ns = 0; /* SPBs carry no timestamp */
			rec->caplen = caplen;
			rec->origlen = origlen;
			rec->linktype = r->if_link[0];
			rec->data = r->buf + 4;
			return 1;
		default:
			continue; /* statistics, name resolution, custom...: not needed */
		}
	}
}

struct mr_pcap_reader *mr_pcap_reader_open(const char *path)
{
	struct mr_pcap_reader *r;
	uint8_t gh[24];
	uint32_t magic;
	FILE *f = fopen(path, "rb");

	if (!f)
		return NULL;
	r = calloc(1, sizeof(*r));
	if (!r) {
		fclose(f);
		errno = ENOMEM;
		return NULL;
	}
	r->f = f;
	if (fread(gh, 1, 8, f) != 8)
		goto bad;
	memcpy(&magic, gh, 4);
	if (magic == PCAPNG_SHB) {
		int rc;

		r->ng = true;
		rc = ng_section(r, gh);
		if (rc < 0) {
			mr_pcap_reader_close(r);
			errno = -rc;
			return NULL;
		}
		/* Find the first interface so the file has a link type before any packet; the
		 * blocks read so far carry no packets, so nothing is lost. */
		for (;;) {
			long pos = ftell(f);
			uint8_t bh[8];
			uint32_t total;
			int len;

			if (pos < 0 || fread(bh, 1, 8, f) != 8)
				break;
			if (rd32(bh, r->swap) != PCAPNG_IDB) {
				fseek(f, pos, SEEK_SET);
				break;
			}
			total = rd32(bh + 4, r->swap);
			len = ng_read_body(r, total, 8);
			if (len < 0 || ng_interface(r, (uint32_t)len) < 0)
				goto bad;
		}
		return r;
	}
	if (fread(gh + 8, 1, 16, f) != 16)
		goto bad;
	if (magic == PCAP_MAGIC_US || magic == PCAP_MAGIC_NS) {
		r->nsec = magic == PCAP_MAGIC_NS;
	} else if (__builtin_bswap32(magic) == PCAP_MAGIC_US ||
		   __builtin_bswap32(magic) == PCAP_MAGIC_NS) {
		r->swap = true;
		r->nsec = __builtin_bswap32(magic) == PCAP_MAGIC_NS;
	} else {
		goto bad;
	}
	/* The link type's low 16 bits; the upper bits may carry FCS flags (pcap-savefile). */
	r->linktype = rd32(gh + 20, r->swap) & 0xffff;
	return r;
bad:
	mr_pcap_reader_close(r);
	errno = EINVAL;
	return NULL;
}

uint32_t mr_pcap_reader_linktype(const struct mr_pcap_reader *r)
{
	return r->linktype;
}

int mr_pcap_reader_next(struct mr_pcap_reader *r, struct mr_pcap_rec *rec)
{
	uint8_t rh[16];
	size_t n;
	uint32_t sec, frac, caplen;

	if (r->ng)
		return ng_next(r, rec);
	n = fread(rh, 1, sizeof(rh), r->f);
	if (n == 0)
		return ferror(r->f) ? -EIO : 0;
	if (n != sizeof(rh))
		return -EINVAL;
	sec = rd32(rh, r->swap);
	frac = rd32(rh + 4, r->swap);
	caplen = rd32(rh + 8, r->swap);
	if (caplen > PCAP_MAX_REC)
		return -EINVAL;
	if (grow(r, caplen) < 0)
		return -ENOMEM;
	if (caplen && fread(r->buf, 1, caplen, r->f) != caplen)
		return ferror(r->f) ? -EIO : -EINVAL;
	rec->ts_ns = (uint64_t)sec * 1000000000u + (r->nsec ? frac : (uint64_t)frac * 1000u);
	rec->caplen = caplen;
	rec->origlen = rd32(rh + 12, r->swap);
	rec->linktype = r->linktype;
	rec->data = r->buf;
	return 1;
}

void mr_pcap_reader_close(struct mr_pcap_reader *r)
{
	if (!r)
		return;
	fclose(r->f);
	free(r->buf);
	free(r);
}

struct mr_pcap_writer *mr_pcap_writer_open(const char *path, uint32_t snaplen,
					   uint64_t max_bytes)
{
	struct mr_pcap_writer *w;
	uint32_t gh[6];

	if (!path || (max_bytes && max_bytes < sizeof(gh))) {
		errno = EINVAL;
		return NULL;
	}
	if (!snaplen || snaplen > PCAP_MAX_REC)
		snaplen = PCAP_MAX_REC;
	w = calloc(1, sizeof(*w));
	if (!w) {
		errno = ENOMEM;
		return NULL;
	}
	w->f = fopen(path, "wb");
	if (!w->f) {
		int e = errno;

		free(w);
		errno = e;
		return NULL;
	}
	gh[0] = PCAP_MAGIC_NS;
	gh[1] = 2 | 4u << 16; /* version 2.4, native order like the magic */
	gh[2] = 0;            /* thiszone */
	gh[3] = 0;            /* sigfigs */
	gh[4] = snaplen;
	gh[5] = MR_PCAP_LINKTYPE_ETHERNET;
	if (fwrite(gh, sizeof(gh), 1, w->f) != 1) {
		fclose(w->f);
		free(w);
		errno = EIO;
		return NULL;
	}
	w->snaplen = snaplen;
	w->max_bytes = max_bytes;
	w->bytes = sizeof(gh);
	return w;
}

int mr_pcap_writer_write(struct mr_pcap_writer *w, const void *frame, uint32_t len,
			 uint64_t ts_ns)
{
	uint32_t rh[4];
	uint32_t caplen;

	if (!w || (len && !frame))
		return -EINVAL;
	caplen = len < w->snaplen ? len : w->snaplen;
	if (w->full || (w->max_bytes && w->bytes + sizeof(rh) + caplen > w->max_bytes)) {
		w->full = true;
		w->dropped++;
		return -ENOSPC;
	}
	rh[0] = (uint32_t)(ts_ns / 1000000000u);
	rh[1] = (uint32_t)(ts_ns % 1000000000u);
	rh[2] = caplen;
	rh[3] = len;
	if (fwrite(rh, sizeof(rh), 1, w->f) != 1 ||
	    (caplen && fwrite(frame, caplen, 1, w->f) != 1))
		return -EIO;
	w->bytes += sizeof(rh) + caplen;
	return 0;
}

uint64_t mr_pcap_writer_dropped(const struct mr_pcap_writer *w)
{
	return w ? w->dropped : 0;
}

int mr_pcap_writer_close(struct mr_pcap_writer *w)
{
	int rc = 0;

	if (!w)
		return 0;
	if (fclose(w->f) != 0)
		rc = -EIO;
	free(w);
	return rc;
}
