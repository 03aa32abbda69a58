/* SPDX-License-Identifier: MIT
 * Writes a pcap of frames built by mr_frame_build: every opcode, IPv4 and IPv6, with and without
 * 802.1Q, several payload sizes. Tools tests feed it to `mrpcap check` and to the independent
 * scripts/roce_check.py (scapy), which cross-checks our ICRC for every opcode and both IP versions.
 * MetaRoCE opcodes (0xC0 | RC) are included with varying MRETH/SACKETH fields, and last one
 * MetaRoCE ACK with the SACK of docs/metaroce-wire.md's example: cumulative PSN 0x000123, PSNs
 * 0x125-0x130 and 0x133 received, ce_count 2 (tests look for its dump line).
 * Usage: gen_frames OUT.pcap   (prints the number of frames written)
 */
#include <stdio.h>
#include <string.h>

#include "wire/pcap_file.h"
#include "wire/roce_hdr.h"
#include "wire/roce_opcode.h"
#include "wire/roce_pkt.h"

int main(int argc, char **argv)
{
	static const uint32_t sizes[] = { 0, 1, 3, 4, 5, 255, 1024, 4093, 4096 };
	struct mr_pcap_writer *w;
	uint8_t payload[MR_MAX_PAYLOAD], buf[9000];
	unsigned int n = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s OUT.pcap\n", argv[0]);
		return 2;
	}
	for (unsigned int i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 131 + 7);
	w = mr_pcap_writer_open(argv[1], 0, 64u << 20);
	if (!w) {
		perror(argv[1]);
		return 1;
	}
	for (int v = 0; v < 4; v++) {
		struct mr_path path = { 0 };

		memcpy(path.smac, "\x02\x00\x00\x00\x00\x01", 6);
		memcpy(path.dmac, "\x02\x00\x00\x00\x00\x02", 6);
		path.vlan = v & 1;
		path.vlan_tci = 0x2064;
		path.ipv6 = v & 2;
		if (path.ipv6) {
			memcpy(path.sgid, "\xfd\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01", 16);
			memcpy(path.dgid, "\xfd\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02", 16);
			path.flow_label = 0x12345;
		} else {
			path.sgid[10] = path.sgid[11] = path.dgid[10] = path.dgid[11] = 0xff;
			memcpy(path.sgid + 12, "\x0a\x00\x00\x01", 4);
			memcpy(path.dgid + 12, "\x0a\x00\x00\x02", 4);
		}
		path.tclass = 26 << 2;
		path.ttl = 64;
		path.udp_sport = (uint16_t)(0xc000 + v);
		for (unsigned int op = 0; op < 256; op++) {
			const struct mr_opcode_info *oi = mr_opcode_info((uint8_t)op);

			if (!oi)
				continue;
			for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
				struct mr_roce_hdrs h = { 0 };
				struct mr_iov iov = { payload, sizes[s] };
				int len;

				h.opcode = (uint8_t)op;
				h.pkey = 0xffff;
				h.dqpn = 0x000011 + n;
				h.psn = (0xfffff0 + n) & MR_PSN_MASK;
				h.ackreq = n & 1;
				h.reth.va = 0x7f0000001000ull + n;
				h.reth.rkey = 0x1234;
				h.reth.dlen = sizes[s];
				h.aeth.syndrome = 0x1f;
				h.aeth.msn = n;
				h.atmeth.va = 0x1000;
				h.atmeth.rkey = 0x99;
				h.atmeth.swap_add = 5;
				h.atmeth.cmp = 6;
				h.atmack = 7;
				h.imm = 0xdeadbeef;
				h.ieth_rkey = 0x4321;
				h.deth.qkey = 0x11111111;
				h.deth.sqpn = 1;
				/* MetaRoCE: cycle through the flags, paths and bitmaps */
				h.mreth.flags = (uint8_t)(n % 8);
				h.mreth.path = (uint8_t)(n * 7);
				h.mreth.msg_seq = 0xfffffff0u + n;
				h.mreth.offset = (n % 3) ? 4096u * n : 0;
				h.mreth.msg_len = h.mreth.offset + sizes[s] + (n % 2) * 4096u;
				h.mreth.ts = 0x9e3779b9u * n;
				h.sack.base = mr_psn_add(h.psn, 1 + n % 3);
				for (int b = 0; b < 16; b++)
					h.sack.bitmap[b] = (uint8_t)((n + (unsigned int)b) % 5 ? 0x0f << (n % 5) : 0);
				h.sack.ce_count = (uint16_t)(n * 3);
				len = mr_frame_build(buf, sizeof(buf), &path, (uint16_t)n, &h, &iov, 1);
				if (len < 0)
					continue; /* size illegal for this opcode */
				if (mr_pcap_writer_write(w, buf, (uint32_t)len, 1000ull * n) != 0) {
					fprintf(stderr, "write failed\n");
					return 1;
				}
				n++;
			}
		}
	}
	{
		/* the documented SACK example, IPv4 */
		struct mr_path path = { 0 };
		struct mr_roce_hdrs h = { 0 };
		int len;

		path.sgid[10] = path.sgid[11] = path.dgid[10] = path.dgid[11] = 0xff;
		memcpy(path.sgid + 12, "\x0a\x00\x00\x02", 4);
		memcpy(path.dgid + 12, "\x0a\x00\x00\x01", 4);
		path.ttl = 64;
		path.udp_sport = 0xc003;
		h.opcode = MR_OP_MRC_ACK;
		h.pkey = 0xffff;
		h.dqpn = 0x11;
		h.psn = 0x000123;
		h.aeth.syndrome = 0x1f;
		h.aeth.msn = 9;
		h.mreth.flags = MR_MRETH_ECE;
		h.mreth.path = 3;
		h.mreth.ts = 0x01020304;
		h.sack.base = 0x000124;
		for (unsigned int i = 1; i <= 12; i++) /* 0x125..0x130 */
			mr_sack_set(h.sack.bitmap, i);
		mr_sack_set(h.sack.bitmap, 0x133 - 0x124);
		h.sack.ce_count = 2;
		len = mr_frame_build(buf, sizeof(buf), &path, 1, &h, NULL, 0);
		if (len < 0 || mr_pcap_writer_write(w, buf, (uint32_t)len, 1000ull * n) != 0) {
			fprintf(stderr, "SACK example failed\n");
			return 1;
		}
		n++;
	}
	if (mr_pcap_writer_close(w) != 0)
		return 1;
	printf("%u\n", n);
	return 0;
}
