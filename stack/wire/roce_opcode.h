/* SPDX-License-Identifier: MIT
 * The RoCE v2 opcode table: per BTH opcode, which headers follow the BTH, at which offsets, and
 * what the packet means. The frame builder and the parser both read this one table (as Linux
 * rxe_opcode.c does), so they cannot disagree about a layout.
 */
#ifndef MR_WIRE_ROCE_OPCODE_H
#define MR_WIRE_ROCE_OPCODE_H

#include <stdint.h>

#include "wire/roce_pkt.h"

/* Header kinds, in the order they appear on the wire (IBA 9.2 / table 38 column order; the
 * MetaRoCE MRETH comes right after the BTH and the SACKETH after the AETH,
 * docs/metaroce-wire.md). */
enum mr_hdr_type {
	MR_HDR_BTH,
	MR_HDR_MRETH,
	MR_HDR_RETH,
	MR_HDR_ATMETH,
	MR_HDR_AETH,
	MR_HDR_SACKETH,
	MR_HDR_ATMACK,
	MR_HDR_DETH,
	MR_HDR_IMMDT,
	MR_HDR_IETH,
	MR_HDR_CNP_RSVD, /* A17.9.3: 16 reserved bytes after the BTH of a CNP */
	MR_HDR_PAYLOAD,
	MR_NUM_HDR_TYPES
};

#define MR_MASK(t) (1u << (t))
#define MR_BTH_MASK MR_MASK(MR_HDR_BTH)
#define MR_MRETH_MASK MR_MASK(MR_HDR_MRETH)
#define MR_SACKETH_MASK MR_MASK(MR_HDR_SACKETH)
#define MR_RETH_MASK MR_MASK(MR_HDR_RETH)
#define MR_ATMETH_MASK MR_MASK(MR_HDR_ATMETH)
#define MR_AETH_MASK MR_MASK(MR_HDR_AETH)
#define MR_ATMACK_MASK MR_MASK(MR_HDR_ATMACK)
#define MR_DETH_MASK MR_MASK(MR_HDR_DETH)
#define MR_IMMDT_MASK MR_MASK(MR_HDR_IMMDT)
#define MR_IETH_MASK MR_MASK(MR_HDR_IETH)
#define MR_CNP_RSVD_MASK MR_MASK(MR_HDR_CNP_RSVD)
#define MR_PAYLOAD_MASK MR_MASK(MR_HDR_PAYLOAD)

/* Header sizes in bytes (IBA 9.3.3.3; CNP A17.9.3; MR_MRETH_LEN and MR_SACKETH_LEN, MetaRoCE,
 * are in roce_pkt.h). */
#define MR_RETH_LEN 16
#define MR_AETH_LEN 4
#define MR_ATMETH_LEN 28
#define MR_ATMACK_LEN 8
#define MR_DETH_LEN 8
#define MR_IMMDT_LEN 4
#define MR_IETH_LEN 4
#define MR_CNP_RSVD_LEN 16

/* Largest payload of one packet: the largest IB MTU (IBA ch. 7). */
#define MR_MAX_PAYLOAD 4096

/* What a packet means. */
enum mr_opcode_flags {
	MR_OPF_REQ = 1u << 0,    /* requester -> responder */
	MR_OPF_RESP = 1u << 1,   /* responder -> requester (read response, ack, atomic ack) */
	MR_OPF_ACK = 1u << 2,    /* carries an AETH acknowledging requests */
	MR_OPF_FIRST = 1u << 3,
	MR_OPF_MIDDLE = 1u << 4,
	MR_OPF_LAST = 1u << 5,
	MR_OPF_ONLY = 1u << 6,
	MR_OPF_SEND = 1u << 7,
	MR_OPF_WRITE = 1u << 8,
	MR_OPF_READ = 1u << 9,
	MR_OPF_ATOMIC = 1u << 10,
	MR_OPF_IMM = 1u << 11,
	MR_OPF_INV = 1u << 12,
	MR_OPF_RC = 1u << 13,
	MR_OPF_UD = 1u << 14,
	MR_OPF_CNP = 1u << 15,
	MR_OPF_MRC = 1u << 16,   /* MetaRoCE (the RC opcode's meaning, MetaRoCE headers) */
};

struct mr_opcode_info {
	const char *name;        /* NULL: opcode not supported */
	uint32_t mask;           /* MR_*_MASK of the headers present */
	uint32_t flags;          /* enum mr_opcode_flags */
	uint8_t length;          /* BTH + all extension headers */
	uint8_t offset[MR_NUM_HDR_TYPES]; /* from the start of the BTH; payload at `length` */
};

extern const struct mr_opcode_info mr_opcode_table[256];

/* Header sizes by type (0 for the payload). */
extern const uint8_t mr_hdr_len_table[MR_NUM_HDR_TYPES];

static inline const struct mr_opcode_info *mr_opcode_info(uint8_t opcode)
{
	const struct mr_opcode_info *oi = &mr_opcode_table[opcode];

	return oi->name ? oi : NULL;
}

/* Per-opcode payload and pad rules shared by the builder (refuses) and the parser (drops).
 * paylen excludes the pad. Returns MR_PARSE_OK, MR_PARSE_BAD_PAD or MR_PARSE_BAD_LENGTH. */
enum mr_parse_result mr_opcode_check_len(const struct mr_opcode_info *oi, uint32_t paylen,
					 uint8_t padcnt, const struct mr_roce_hdrs *hdr);

#endif
