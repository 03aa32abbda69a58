/* SPDX-License-Identifier: MIT
 * mrpcap: verify and decode RoCE v2 traffic in pcap files with metaroce's own wire parser.
 *   mrpcap check FILE...   verify every RoCE v2 frame (headers + ICRC); exit 1 if any fails
 *   mrpcap dump FILE       one line per RoCE v2 frame
 * MetaRoCE frames (opcodes 0xC0 | RC opcode, docs/metaroce-wire.md) are verified by the same
 * parser (ICRC, lengths, MRETH ver == 1, offset + payload <= msg_len) and decoded in full.
 * Frame numbers are 1-based, counting every record in the file, as Wireshark numbers them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/pcap_file.h"
#include "wire/icrc.h"
#include "wire/roce_opcode.h"
#include "wire/roce_pkt.h"

struct check_stats {
	uint64_t passed, failed, skipped, file_errors;
	uint64_t metaroce_passed, metaroce_failed;
	uint64_t per_opcode[256];
	uint64_t per_reason[MR_PARSE_NR_RESULTS];
};

static void usage(FILE *out)
{
	fprintf(out, "usage: mrpcap check FILE...\n"
		     "       mrpcap dump FILE\n"
		     "Classic pcap (either byte order, usec or nsec) or pcapng; Ethernet frames.\n");
}

static void fmt_addr(char *buf, size_t len, const uint8_t gid[16], bool ipv6)
{
	if (!ipv6)
		inet_ntop(AF_INET, gid + 12, buf, (socklen_t)len);
	else
		inet_ntop(AF_INET6, gid, buf, (socklen_t)len);
}

static struct mr_pcap_reader *open_or_complain(const char *path)
{
	struct mr_pcap_reader *r = mr_pcap_reader_open(path);

	if (!r) {
		fprintf(stderr, "%s: cannot read pcap/pcapng: %s\n", path, strerror(errno));
		return NULL;
	}
	if (mr_pcap_reader_linktype(r) && mr_pcap_reader_linktype(r) != MR_PCAP_LINKTYPE_ETHERNET) {
		fprintf(stderr, "%s: unsupported link type %u (only Ethernet, 1)\n", path,
			mr_pcap_reader_linktype(r));
		mr_pcap_reader_close(r);
		return NULL;
	}
	return r;
}

static void check_file(const char *path, struct check_stats *st)
{
	struct mr_pcap_reader *r = open_or_complain(path);
	struct mr_pcap_rec rec;
	struct mr_pkt pkt;
	uint64_t n = 0;
	int rc;

	if (!r) {
		st->file_errors++;
		return;
	}
	while ((rc = mr_pcap_reader_next(r, &rec)) == 1) {
		enum mr_parse_result res;

		n++;
		if (rec.linktype != MR_PCAP_LINKTYPE_ETHERNET) {
			st->skipped++;
			continue;
		}
		res = mr_frame_parse(rec.data, rec.caplen, true, &pkt);
		if (res == MR_PARSE_NOT_ROCE) {
			st->skipped++;
			continue;
		}
		if (rec.caplen < rec.origlen) {
			printf("%s: frame %" PRIu64 ": FAIL: cut by the capture's snaplen "
			       "(%u of %u bytes), cannot verify\n", path, n, rec.caplen,
			       rec.origlen);
			st->failed++;
			continue;
		}
		if (res != MR_PARSE_OK) {
			const char *op = pkt.bth ? mr_opcode_name(pkt.bth[0]) : NULL;

			printf("%s: frame %" PRIu64 ": FAIL: %s", path, n, mr_parse_result_str(res));
			if (op)
				printf(" (%s, PSN %u)", op, pkt.hdr.psn);
			if (res == MR_PARSE_BAD_ICRC) {
				uint32_t want = 0;

				if (mr_icrc_frame(rec.data, rec.caplen, &want) == 0)
					printf(": stored 0x%08x, computed 0x%08x", pkt.icrc, want);
			}
			printf("\n");
			st->failed++;
			st->per_reason[res]++;
			if (pkt.bth && mr_opcode_is_metaroce(pkt.bth[0]))
				st->metaroce_failed++;
			continue;
		}
		st->passed++;
		st->per_opcode[pkt.hdr.opcode]++;
		if (mr_opcode_is_metaroce(pkt.hdr.opcode))
			st->metaroce_passed++;
	}
	if (rc < 0) {
		fprintf(stderr, "%s: corrupt or unreadable record after frame %" PRIu64 ": %s\n",
			path, n, strerror(-rc));
		st->file_errors++;
	}
	mr_pcap_reader_close(r);
}

static int cmd_check(int argc, char **argv)
{
	struct check_stats *st = calloc(1, sizeof(*st));
	int ret;

	if (!st) {
		perror("mrpcap");
		return 2;
	}
	for (int i = 0; i < argc; i++)
		check_file(argv[i], st);
	printf("per-opcode counts (frames that passed):\n");
	for (unsigned int op = 0; op < 256; op++)
		if (st->per_opcode[op])
			printf("  %-36s %" PRIu64 "\n", mr_opcode_name((uint8_t)op),
			       st->per_opcode[op]);
	for (unsigned int res = 0; res < MR_PARSE_NR_RESULTS; res++)
		if (st->per_reason[res])
			printf("  failed: %-28s %" PRIu64 "\n",
			       mr_parse_result_str((enum mr_parse_result)res), st->per_reason[res]);
	if (st->metaroce_passed || st->metaroce_failed)
		printf("MetaRoCE frames: %" PRIu64 " passed, %" PRIu64 " failed\n",
		       st->metaroce_passed, st->metaroce_failed);
	printf("skipped %" PRIu64 " non-RoCE frames\n", st->skipped);
	if (st->file_errors)
		printf("%" PRIu64 " file(s) could not be read completely\n", st->file_errors);
	printf("%" PRIu64 " passed, %" PRIu64 " failed\n", st->passed, st->failed);
	ret = st->failed ? 1 : st->file_errors ? 2 : 0;
	free(st);
	return ret;
}

static void print_aeth(uint8_t syn, uint32_t msn)
{
	uint8_t v = syn & 0x1f;

	switch (syn & MR_AETH_TYPE_MASK) { /* IBA 9.3.3.3.4 table 42 */
	case MR_AETH_ACK:
		printf(" aeth=ACK(credit %u%s)", v, v == MR_AETH_CREDIT_INVALID ? " invalid" : "");
		break;
	case MR_AETH_RNR_NAK:
		printf(" aeth=RNR_NAK(timer %u)", v);
		break;
	case MR_AETH_NAK: {
		static const char *const nak[] = { "PSN sequence error", "invalid request",
						   "remote access error", "remote operational error",
						   "invalid RD request" };

		printf(" aeth=NAK(%s)", v < 5 ? nak[v] : "reserved");
		break;
	}
	default:
		printf(" aeth=reserved(0x%02x)", syn);
		break;
	}
	printf(" msn=%u", msn);
}

/* MRETH (docs/metaroce-wire.md): path, message, byte range, flags, timestamp. */
static void print_mreth(const struct mr_roce_hdrs *h)
{
	uint8_t f = h->mreth.flags;

	printf(" mreth=path:%u,msg_seq:%u,off:%u/%u,flags:", h->mreth.path, h->mreth.msg_seq,
	       h->mreth.offset, h->mreth.msg_len);
	if (!f)
		printf("-");
	printf("%s%s%s%s", f & MR_MRETH_RETX ? "RETX" : "",
	       (f & MR_MRETH_TLP) ? ((f & MR_MRETH_RETX) ? "|TLP" : "TLP") : "",
	       (f & MR_MRETH_ECE) ? ((f & (MR_MRETH_RETX | MR_MRETH_TLP)) ? "|ECE" : "ECE") : "",
	       (f & ~MR_MRETH_FLAGS_MASK) ? ((f & MR_MRETH_FLAGS_MASK) ? "|rsvd" : "rsvd") : "");
	printf(",ts:0x%08x", h->mreth.ts);
}

/* SACKETH as PSN ranges: "cum 0x000123 sack [0x000125-0x000130,0x000133] ce 2". The cumulative
 * acknowledgement is the BTH PSN (IBA 9.7.5.1 semantics, kept by MetaRoCE). */
static void print_sack(const struct mr_roce_hdrs *h)
{
	bool first = true;

	printf(" cum 0x%06x sack [", h->psn);
	for (unsigned int i = 0; i < MR_SACK_BITS;) {
		unsigned int j = i;

		if (!mr_sack_test(h->sack.bitmap, i)) {
			i++;
			continue;
		}
		while (j + 1 < MR_SACK_BITS && mr_sack_test(h->sack.bitmap, j + 1))
			j++;
		printf("%s0x%06x", first ? "" : ",", mr_psn_add(h->sack.base, i));
		if (j > i)
			printf("-0x%06x", mr_psn_add(h->sack.base, j));
		first = false;
		i = j + 1;
	}
	printf("] ce %u", h->sack.ce_count);
}

static void dump_pkt(uint64_t n, const struct mr_pkt *p)
{
	const struct mr_roce_hdrs *h = &p->hdr;
	const struct mr_opcode_info *oi = mr_opcode_info(h->opcode);
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
	uint32_t m = oi ? oi->mask : 0;

	fmt_addr(src, sizeof(src), p->sgid, p->ipv6);
	fmt_addr(dst, sizeof(dst), p->dgid, p->ipv6);
	printf("%" PRIu64 " %s -> %s sport=%u %s qpn=0x%06x psn=%u ackreq=%d", n, src, dst,
	       p->udp_sport, oi ? oi->name : "?", h->dqpn, h->psn, h->ackreq);
	if (h->se)
		printf(" se=1");
	if (h->fecn || h->becn)
		printf(" fecn=%d becn=%d", h->fecn, h->becn);
	/* Headers in wire order, as the opcode table says they are present. */
	if (m & MR_MRETH_MASK)
		print_mreth(h);
	if (m & MR_RETH_MASK)
		printf(" reth=va:0x%" PRIx64 ",rkey:0x%x,len:%u", h->reth.va, h->reth.rkey,
		       h->reth.dlen);
	if (m & MR_ATMETH_MASK)
		printf(" atmeth=va:0x%" PRIx64 ",rkey:0x%x,swap_add:0x%" PRIx64 ",cmp:0x%" PRIx64,
		       h->atmeth.va, h->atmeth.rkey, h->atmeth.swap_add, h->atmeth.cmp);
	if (m & MR_DETH_MASK)
		printf(" deth=qkey:0x%x,sqpn:0x%06x", h->deth.qkey, h->deth.sqpn);
	if (m & MR_AETH_MASK)
		print_aeth(h->aeth.syndrome, h->aeth.msn);
	if (m & MR_SACKETH_MASK)
		print_sack(h);
	if (m & MR_ATMACK_MASK)
		printf(" orig=0x%" PRIx64, h->atmack);
	if (m & MR_IMMDT_MASK)
		printf(" imm=0x%08x", h->imm);
	if (m & MR_IETH_MASK)
		printf(" ieth_rkey=0x%x", h->ieth_rkey);
	printf(" paylen=%u\n", p->paylen);
}

static int cmd_dump(const char *path)
{
	struct mr_pcap_reader *r = open_or_complain(path);
	struct mr_pcap_rec rec;
	struct mr_pkt pkt;
	uint64_t n = 0;
	int rc, ret = 0;

	if (!r)
		return 2;
	while ((rc = mr_pcap_reader_next(r, &rec)) == 1) {
		enum mr_parse_result res;

		n++;
		if (rec.linktype != MR_PCAP_LINKTYPE_ETHERNET)
			continue;
		res = mr_frame_parse(rec.data, rec.caplen, true, &pkt);
		if (res == MR_PARSE_NOT_ROCE)
			continue;
		if (res == MR_PARSE_OK || res == MR_PARSE_BAD_ICRC) {
			dump_pkt(n, &pkt);
			if (res == MR_PARSE_OK)
				continue;
		}
		printf("%" PRIu64 " FAIL: %s\n", n, mr_parse_result_str(res));
		ret = 1;
	}
	if (rc < 0) {
		fprintf(stderr, "%s: corrupt or unreadable record after frame %" PRIu64 ": %s\n",
			path, n, strerror(-rc));
		ret = 2;
	}
	mr_pcap_reader_close(r);
	return ret;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "check") == 0)
		return cmd_check(argc - 2, argv + 2);
	if (argc == 3 && strcmp(argv[1], "dump") == 0)
		return cmd_dump(argv[2]);
	if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		usage(stdout);
		return 0;
	}
	usage(stderr);
	return 2;
}
