/* SPDX-License-Identifier: MIT
 * Minimal classic-pcap reader and writer (no libpcap), self-contained so that any component
 * (simulator traces, daemons, tests) can record frames for Wireshark or `mrpcap check`.
 *
 * Reader: classic pcap in either byte order, microsecond (0xa1b2c3d4) or nanosecond
 * (0xa1b23c4d) timestamps; pcapng (either byte order) Enhanced and Simple Packet Blocks, with
 * per-interface link type and if_tsresol, other blocks skipped.
 * Writer: classic pcap, native byte order, nanosecond timestamps, linktype Ethernet, with a cap
 * on the file size so a long run cannot fill the disk.
 */
#ifndef MR_PCAP_FILE_H
#define MR_PCAP_FILE_H

#include <stdint.h>

#define MR_PCAP_LINKTYPE_ETHERNET 1

struct mr_pcap_reader;
struct mr_pcap_writer;

struct mr_pcap_rec {
	uint64_t ts_ns;      /* timestamp, nanoseconds since the epoch */
	uint32_t caplen;     /* bytes present in data */
	uint32_t origlen;    /* bytes on the wire (caplen < origlen: cut by the snaplen) */
	uint32_t linktype;   /* of the interface that captured it (pcapng may mix them) */
	const uint8_t *data; /* valid until the next mr_pcap_reader_next() or close */
};

/* Open a pcap or pcapng file for reading. NULL with errno set: ENOENT etc. from fopen,
 * EINVAL (not a capture file / bad header), ENOMEM. */
struct mr_pcap_reader *mr_pcap_reader_open(const char *path);
/* Link type of the file (pcapng: of its first interface; 0 if it declares none). */
uint32_t mr_pcap_reader_linktype(const struct mr_pcap_reader *r);
/* Next record: 1 when rec is filled, 0 at a clean end of file, -EINVAL on a corrupt or
 * truncated record header, -EIO on a read error, -ENOMEM. */
int mr_pcap_reader_next(struct mr_pcap_reader *r, struct mr_pcap_rec *rec);
void mr_pcap_reader_close(struct mr_pcap_reader *r);

/* Create (truncate) path. max_bytes caps the file size including the 24-byte header (0 = no
 * cap). NULL with errno set on failure. */
struct mr_pcap_writer *mr_pcap_writer_open(const char *path, uint32_t snaplen,
					   uint64_t max_bytes);
/* Append one frame (cut to snaplen). 0, -ENOSPC when the cap would be exceeded (the frame is
 * dropped and counted; later smaller frames are dropped too so the file stays a prefix of the
 * trace), -EINVAL, or -EIO. */
int mr_pcap_writer_write(struct mr_pcap_writer *w, const void *frame, uint32_t len,
			 uint64_t ts_ns);
/* Frames dropped because of the cap. */
uint64_t mr_pcap_writer_dropped(const struct mr_pcap_writer *w);
/* Flush and close; 0 or -EIO. NULL is accepted. */
int mr_pcap_writer_close(struct mr_pcap_writer *w);

#endif
