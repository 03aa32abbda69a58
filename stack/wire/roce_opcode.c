/* SPDX-License-Identifier: MIT
 * The opcode table (IBA 9.2 table 38 "OpCode field", 9.3 header presence per opcode; UD opcodes
 * 0x64/0x65 with DETH; CNP 0x81 per A17.9.3). Offsets are spelled out rather than computed so a
 * reader can check each row against the spec; tests/wire/test_opcode.c proves they are consistent.
 */
#include "wire/roce_opcode.h"

#define BTH MR_BTH_LEN
#define MRB (MR_BTH_LEN + MR_MRETH_LEN) /* MetaRoCE: BTH + MRETH */
#define MRC_REQ (MR_OPF_MRC | MR_OPF_REQ)
#define MRC_RESP (MR_OPF_MRC | MR_OPF_RESP)

const uint8_t mr_hdr_len_table[MR_NUM_HDR_TYPES] = {
	[MR_HDR_BTH] = MR_BTH_LEN,
	[MR_HDR_MRETH] = MR_MRETH_LEN,
	[MR_HDR_RETH] = MR_RETH_LEN,
	[MR_HDR_ATMETH] = MR_ATMETH_LEN,
	[MR_HDR_AETH] = MR_AETH_LEN,
	[MR_HDR_SACKETH] = MR_SACKETH_LEN,
	[MR_HDR_ATMACK] = MR_ATMACK_LEN,
	[MR_HDR_DETH] = MR_DETH_LEN,
	[MR_HDR_IMMDT] = MR_IMMDT_LEN,
	[MR_HDR_IETH] = MR_IETH_LEN,
	[MR_HDR_CNP_RSVD] = MR_CNP_RSVD_LEN,
	[MR_HDR_PAYLOAD] = 0,
};

const struct mr_opcode_info mr_opcode_table[256] = {
	[MR_OP_RC_SEND_FIRST] = {
		.name = "RC_SEND_FIRST",
		.mask = MR_BTH_MASK | MR_PAYLOAD_MASK,
		.flags = MR_OPF_RC | MR_OPF_REQ | MR_OPF_SEND | MR_OPF_FIRST,
		.length = BTH,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_PAYLOAD] = BTH },
	},
	[MR_OP_RC_SEND_MIDDLE] = {
		.name = "RC_SEND_MIDDLE",
		.mask = MR_BTH_MASK | MR_PAYLOAD_MASK,
		.flags = MR_OPF_RC | MR_OPF_REQ | MR_OPF_SEND | MR_OPF_MIDDLE,
		.length = BTH,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_PAYLOAD] = BTH },
	},
	[MR_OP_RC_SEND_LAST] = {
		.name = "RC_SEND_LAST",
		.mask = MR_BTH_MASK | MR_PAYLOAD_MASK,
		.flags = MR_OPF_RC | MR_OPF_REQ | MR_OPF_SEND | MR_OPF_LAST,
		.length = BTH,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_PAYLOAD] = BTH },
	},
	[MR_OP_RC_SEND_LAST_IMM] = {
		.name = "RC_SEND_LAST_WITH_IMMEDIATE",
		.mask = MR_BTH_MASK | MR_IMMDT_MASK | MR_PAYLOAD_MASK,
		.flags = MR_OPF_RC | MR_OPF_REQ | MR_OPF_SEND | MR_OPF_LAST | MR_OPF_IMM,
		.length = BTH + MR_IMMDT_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_IMMDT] = BTH,
			    [MR_HDR_PAYLOAD] = BTH + MR_IMMDT_LEN },
	},
	[MR_OP_RC_SEND_ONLY] = {
		.name = "RC_SEND_ONLY",
		.mask = MR_BTH_MASK | MR_PAYLOAD_MASK,
		.flags = MR_OPF_RC | MR_OPF_REQ | MR_OPF_SEND | MR_OPF_ONLY,
		.length = BTH,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_PAYLOAD] = BTH },
	},
	[MR_OP_RC_SEND_ONLY_IMM] = {
		.name = "RC_SEND_ONLY_WITH_IMMEDIATE",
		.mask = MR_BTH_MASK | MR_IMMDT_MASK | MR_PAYLOAD_MASK,
		.flags = MR_OPF_RC | MR_OPF_REQ | MR_OPF_SEND | MR_OPF_ONLY | MR_OPF_IMM,
		.length = BTH + MR_IMMDT_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_IMMDT] = BTH,
			    [MR_HDR_PAYLOAD] = BTH + MR_IMMDT_LEN },
	},
	[MR_OP_RC_WRITE_FIRST] = {
		.name = "RC_RDMA_WRITE_FIRST",
		.mask = MR_BTH_MASK | MR_RETH_MASK | MR_PAYLOAD_MASK,
		.flags = MR_OPF_RC | MR_OPF_REQ | MR_OPF_WRITE | MR_OPF_FIRST,
		.length = BTH + MR_RETH_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_RETH] = BTH,
			    [MR_HDR_PAYLOAD] = BTH + MR_RETH_LEN },
	},
	[MR_OP_RC_WRITE_MIDDLE] = {
		.name = "RC_RDMA_WRITE_MIDDLE",
		.mask = MR_BTH_MASK | MR_PAYLOAD_MASK,
		.flags = MR_OPF_RC | MR_OPF_REQ | MR_OPF_WRITE | MR_OPF_MIDDLE,
		.length = BTH,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_PAYLOAD] = BTH },
	},
	[MR_OP_RC_WRITE_LAST] = {
		.name = "RC_RDMA_WRITE_LAST",
		.mask = MR_BTH_MASK | MR_PAYLOAD_MASK,
		.flags = MR_OPF_RC | MR_OPF_REQ | MR_OPF_WRITE | MR_OPF_LAST,
		.length = BTH,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_PAYLOAD] = BTH },
	},
	[MR_OP_RC_WRITE_LAST_IMM] = {
		.name = "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
		.mask = MR_BTH_MASK | MR_IMMDT_MASK | MR_PAYLOAD_MASK,
		.flags = MR_OPF_RC | MR_OPF_REQ | MR_OPF_WRITE | MR_OPF_LAST | MR_OPF_IMM,
		.length = BTH + MR_IMMDT_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_IMMDT] = BTH,
			    [MR_HDR_PAYLOAD] = BTH + MR_IMMDT_LEN },
	},
	[MR_OP_RC_WRITE_ONLY] = {
		.name = "RC_RDMA_WRITE_ONLY",
		.mask = MR_BTH_MASK | MR_RETH_MASK | MR_PAYLOAD_MASK,
		.flags = MR_OPF_RC | MR_OPF_REQ | MR_OPF_WRITE | MR_OPF_ONLY,
		.length = BTH + MR_RETH_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_RETH] = BTH,
			    [MR_HDR_PAYLOAD] = BTH + MR_RETH_LEN },
	},
	[MR_OP_RC_WRITE_ONLY_IMM] = {
		.name = "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
		.mask = MR_BTH_MASK | MR_RETH_MASK | MR_IMMDT_MASK | MR_PAYLOAD_MASK,
		.flags = MR_OPF_RC | MR_OPF_REQ | MR_OPF_WRITE | MR_OPF_ONLY | MR_OPF_IMM,
		.length = BTH + MR_RETH_LEN + MR_IMMDT_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_RETH] = BTH,
			    [MR_HDR_IMMDT] = BTH + MR_RETH_LEN,
			    [MR_HDR_PAYLOAD] = BTH + MR_RETH_LEN + MR_IMMDT_LEN },
	},
	[MR_OP_RC_READ_REQUEST] = {
		.name = "RC_RDMA_READ_REQUEST",
		.mask = MR_BTH_MASK | MR_RETH_MASK,
		.flags = MR_OPF_RC | MR_OPF_REQ | MR_OPF_READ | MR_OPF_ONLY,
		.length = BTH + MR_RETH_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_RETH] = BTH,
			    [MR_HDR_PAYLOAD] = BTH + MR_RETH_LEN },
	},
	[MR_OP_RC_READ_RESPONSE_FIRST] = {
		.name = "RC_RDMA_READ_RESPONSE_FIRST",
		.mask = MR_BTH_MASK | MR_AETH_MASK | MR_PAYLOAD_MASK,
		.flags = MR_OPF_RC | MR_OPF_RESP | MR_OPF_READ | MR_OPF_FIRST | MR_OPF_ACK,
		.length = BTH + MR_AETH_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_AETH] = BTH,
			    [MR_HDR_PAYLOAD] = BTH + MR_AETH_LEN },
	},
	/* IBA 9.3.3.3.4: the middle read response carries no AETH. */
	[MR_OP_RC_READ_RESPONSE_MIDDLE] = {
		.name = "RC_RDMA_READ_RESPONSE_MIDDLE",
		.mask = MR_BTH_MASK | MR_PAYLOAD_MASK,
		.flags = MR_OPF_RC | MR_OPF_RESP | MR_OPF_READ | MR_OPF_MIDDLE,
		.length = BTH,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_PAYLOAD] = BTH },
	},
	[MR_OP_RC_READ_RESPONSE_LAST] = {
		.name = "RC_RDMA_READ_RESPONSE_LAST",
		.mask = MR_BTH_MASK | MR_AETH_MASK | MR_PAYLOAD_MASK,
		.flags = MR_OPF_RC | MR_OPF_RESP | MR_OPF_READ | MR_OPF_LAST | MR_OPF_ACK,
		.length = BTH + MR_AETH_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_AETH] = BTH,
			    [MR_HDR_PAYLOAD] = BTH + MR_AETH_LEN },
	},
	[MR_OP_RC_READ_RESPONSE_ONLY] = {
		.name = "RC_RDMA_READ_RESPONSE_ONLY",
		.mask = MR_BTH_MASK | MR_AETH_MASK | MR_PAYLOAD_MASK,
		.flags = MR_OPF_RC | MR_OPF_RESP | MR_OPF_READ | MR_OPF_ONLY | MR_OPF_ACK,
		.length = BTH + MR_AETH_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_AETH] = BTH,
			    [MR_HDR_PAYLOAD] = BTH + MR_AETH_LEN },
	},
	[MR_OP_RC_ACK] = {
		.name = "RC_ACKNOWLEDGE",
		.mask = MR_BTH_MASK | MR_AETH_MASK,
		.flags = MR_OPF_RC | MR_OPF_RESP | MR_OPF_ACK | MR_OPF_ONLY,
		.length = BTH + MR_AETH_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_AETH] = BTH,
			    [MR_HDR_PAYLOAD] = BTH + MR_AETH_LEN },
	},
	[MR_OP_RC_ATOMIC_ACK] = {
		.name = "RC_ATOMIC_ACKNOWLEDGE",
		.mask = MR_BTH_MASK | MR_AETH_MASK | MR_ATMACK_MASK,
		.flags = MR_OPF_RC | MR_OPF_RESP | MR_OPF_ACK | MR_OPF_ATOMIC | MR_OPF_ONLY,
		.length = BTH + MR_AETH_LEN + MR_ATMACK_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_AETH] = BTH,
			    [MR_HDR_ATMACK] = BTH + MR_AETH_LEN,
			    [MR_HDR_PAYLOAD] = BTH + MR_AETH_LEN + MR_ATMACK_LEN },
	},
	[MR_OP_RC_CMP_SWAP] = {
		.name = "RC_COMPARE_SWAP",
		.mask = MR_BTH_MASK | MR_ATMETH_MASK,
		.flags = MR_OPF_RC | MR_OPF_REQ | MR_OPF_ATOMIC | MR_OPF_ONLY,
		.length = BTH + MR_ATMETH_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_ATMETH] = BTH,
			    [MR_HDR_PAYLOAD] = BTH + MR_ATMETH_LEN },
	},
	[MR_OP_RC_FETCH_ADD] = {
		.name = "RC_FETCH_ADD",
		.mask = MR_BTH_MASK | MR_ATMETH_MASK,
		.flags = MR_OPF_RC | MR_OPF_REQ | MR_OPF_ATOMIC | MR_OPF_ONLY,
		.length = BTH + MR_ATMETH_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_ATMETH] = BTH,
			    [MR_HDR_PAYLOAD] = BTH + MR_ATMETH_LEN },
	},
	[MR_OP_RC_SEND_LAST_INV] = {
		.name = "RC_SEND_LAST_WITH_INVALIDATE",
		.mask = MR_BTH_MASK | MR_IETH_MASK | MR_PAYLOAD_MASK,
		.flags = MR_OPF_RC | MR_OPF_REQ | MR_OPF_SEND | MR_OPF_LAST | MR_OPF_INV,
		.length = BTH + MR_IETH_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_IETH] = BTH,
			    [MR_HDR_PAYLOAD] = BTH + MR_IETH_LEN },
	},
	[MR_OP_RC_SEND_ONLY_INV] = {
		.name = "RC_SEND_ONLY_WITH_INVALIDATE",
		.mask = MR_BTH_MASK | MR_IETH_MASK | MR_PAYLOAD_MASK,
		.flags = MR_OPF_RC | MR_OPF_REQ | MR_OPF_SEND | MR_OPF_ONLY | MR_OPF_INV,
		.length = BTH + MR_IETH_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_IETH] = BTH,
			    [MR_HDR_PAYLOAD] = BTH + MR_IETH_LEN },
	},
	[MR_OP_UD_SEND_ONLY] = {
		.name = "UD_SEND_ONLY",
		.mask = MR_BTH_MASK | MR_DETH_MASK | MR_PAYLOAD_MASK,
		.flags = MR_OPF_UD | MR_OPF_REQ | MR_OPF_SEND | MR_OPF_ONLY,
		.length = BTH + MR_DETH_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_DETH] = BTH,
			    [MR_HDR_PAYLOAD] = BTH + MR_DETH_LEN },
	},
	[MR_OP_UD_SEND_ONLY_IMM] = {
		.name = "UD_SEND_ONLY_WITH_IMMEDIATE",
		.mask = MR_BTH_MASK | MR_DETH_MASK | MR_IMMDT_MASK | MR_PAYLOAD_MASK,
		.flags = MR_OPF_UD | MR_OPF_REQ | MR_OPF_SEND | MR_OPF_ONLY | MR_OPF_IMM,
		.length = BTH + MR_DETH_LEN + MR_IMMDT_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_DETH] = BTH,
			    [MR_HDR_IMMDT] = BTH + MR_DETH_LEN,
			    [MR_HDR_PAYLOAD] = BTH + MR_DETH_LEN + MR_IMMDT_LEN },
	},
	/* A17.9.3: a CNP is BTH (opcode 0x81, DestQP of the notified QP) + 16 reserved bytes. */
	[MR_OP_CNP] = {
		.name = "CNP",
		.mask = MR_BTH_MASK | MR_CNP_RSVD_MASK,
		.flags = MR_OPF_CNP | MR_OPF_ONLY,
		.length = BTH + MR_CNP_RSVD_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_CNP_RSVD] = BTH,
			    [MR_HDR_PAYLOAD] = BTH + MR_CNP_RSVD_LEN },
	},
	/* MetaRoCE (docs/metaroce-wire.md): opcode 0xC0 | RC opcode, in the manufacturer-specific
	 * range of IBA 9.2 table 38. MRETH right after the BTH in every packet; WRITE carries a RETH
	 * in every packet (per-packet placement); READ responses carry no AETH (the MRETH says
	 * where the data goes); the ACK adds a SACKETH after the AETH. Flags keep the RC meaning. */
	[MR_OP_MRC_SEND_FIRST] = {
		.name = "MRC_SEND_FIRST",
		.mask = MR_BTH_MASK | MR_MRETH_MASK | MR_PAYLOAD_MASK,
		.flags = MRC_REQ | MR_OPF_SEND | MR_OPF_FIRST,
		.length = MRB,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_MRETH] = BTH, [MR_HDR_PAYLOAD] = MRB },
	},
	[MR_OP_MRC_SEND_MIDDLE] = {
		.name = "MRC_SEND_MIDDLE",
		.mask = MR_BTH_MASK | MR_MRETH_MASK | MR_PAYLOAD_MASK,
		.flags = MRC_REQ | MR_OPF_SEND | MR_OPF_MIDDLE,
		.length = MRB,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_MRETH] = BTH, [MR_HDR_PAYLOAD] = MRB },
	},
	[MR_OP_MRC_SEND_LAST] = {
		.name = "MRC_SEND_LAST",
		.mask = MR_BTH_MASK | MR_MRETH_MASK | MR_PAYLOAD_MASK,
		.flags = MRC_REQ | MR_OPF_SEND | MR_OPF_LAST,
		.length = MRB,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_MRETH] = BTH, [MR_HDR_PAYLOAD] = MRB },
	},
	[MR_OP_MRC_SEND_LAST_IMM] = {
		.name = "MRC_SEND_LAST_WITH_IMMEDIATE",
		.mask = MR_BTH_MASK | MR_MRETH_MASK | MR_IMMDT_MASK | MR_PAYLOAD_MASK,
		.flags = MRC_REQ | MR_OPF_SEND | MR_OPF_LAST | MR_OPF_IMM,
		.length = MRB + MR_IMMDT_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_MRETH] = BTH, [MR_HDR_IMMDT] = MRB,
			    [MR_HDR_PAYLOAD] = MRB + MR_IMMDT_LEN },
	},
	[MR_OP_MRC_SEND_ONLY] = {
		.name = "MRC_SEND_ONLY",
		.mask = MR_BTH_MASK | MR_MRETH_MASK | MR_PAYLOAD_MASK,
		.flags = MRC_REQ | MR_OPF_SEND | MR_OPF_ONLY,
		.length = MRB,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_MRETH] = BTH, [MR_HDR_PAYLOAD] = MRB },
	},
	[MR_OP_MRC_SEND_ONLY_IMM] = {
		.name = "MRC_SEND_ONLY_WITH_IMMEDIATE",
		.mask = MR_BTH_MASK | MR_MRETH_MASK | MR_IMMDT_MASK | MR_PAYLOAD_MASK,
		.flags = MRC_REQ | MR_OPF_SEND | MR_OPF_ONLY | MR_OPF_IMM,
		.length = MRB + MR_IMMDT_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_MRETH] = BTH, [MR_HDR_IMMDT] = MRB,
			    [MR_HDR_PAYLOAD] = MRB + MR_IMMDT_LEN },
	},
	[MR_OP_MRC_WRITE_FIRST] = {
		.name = "MRC_RDMA_WRITE_FIRST",
		.mask = MR_BTH_MASK | MR_MRETH_MASK | MR_RETH_MASK | MR_PAYLOAD_MASK,
		.flags = MRC_REQ | MR_OPF_WRITE | MR_OPF_FIRST,
		.length = MRB + MR_RETH_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_MRETH] = BTH, [MR_HDR_RETH] = MRB,
			    [MR_HDR_PAYLOAD] = MRB + MR_RETH_LEN },
	},
	[MR_OP_MRC_WRITE_MIDDLE] = {
		.name = "MRC_RDMA_WRITE_MIDDLE",
		.mask = MR_BTH_MASK | MR_MRETH_MASK | MR_RETH_MASK | MR_PAYLOAD_MASK,
		.flags = MRC_REQ | MR_OPF_WRITE | MR_OPF_MIDDLE,
		.length = MRB + MR_RETH_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_MRETH] = BTH, [MR_HDR_RETH] = MRB,
			    [MR_HDR_PAYLOAD] = MRB + MR_RETH_LEN },
	},
	[MR_OP_MRC_WRITE_LAST] = {
		.name = "MRC_RDMA_WRITE_LAST",
		.mask = MR_BTH_MASK | MR_MRETH_MASK | MR_RETH_MASK | MR_PAYLOAD_MASK,
		.flags = MRC_REQ | MR_OPF_WRITE | MR_OPF_LAST,
		.length = MRB + MR_RETH_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_MRETH] = BTH, [MR_HDR_RETH] = MRB,
			    [MR_HDR_PAYLOAD] = MRB + MR_RETH_LEN },
	},
	[MR_OP_MRC_WRITE_LAST_IMM] = {
		.name = "MRC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
		.mask = MR_BTH_MASK | MR_MRETH_MASK | MR_RETH_MASK |
			MR_IMMDT_MASK | MR_PAYLOAD_MASK,
		.flags = MRC_REQ | MR_OPF_WRITE | MR_OPF_LAST | MR_OPF_IMM,
		.length = MRB + MR_RETH_LEN + MR_IMMDT_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_MRETH] = BTH, [MR_HDR_RETH] = MRB,
			    [MR_HDR_IMMDT] = MRB + MR_RETH_LEN,
			    [MR_HDR_PAYLOAD] = MRB + MR_RETH_LEN + MR_IMMDT_LEN },
	},
	[MR_OP_MRC_WRITE_ONLY] = {
		.name = "MRC_RDMA_WRITE_ONLY",
		.mask = MR_BTH_MASK | MR_MRETH_MASK | MR_RETH_MASK | MR_PAYLOAD_MASK,
		.flags = MRC_REQ | MR_OPF_WRITE | MR_OPF_ONLY,
		.length = MRB + MR_RETH_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_MRETH] = BTH, [MR_HDR_RETH] = MRB,
			    [MR_HDR_PAYLOAD] = MRB + MR_RETH_LEN },
	},
	[MR_OP_MRC_WRITE_ONLY_IMM] = {
		.name = "MRC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
		.mask = MR_BTH_MASK | MR_MRETH_MASK | MR_RETH_MASK |
			MR_IMMDT_MASK | MR_PAYLOAD_MASK,
		.flags = MRC_REQ | MR_OPF_WRITE | MR_OPF_ONLY | MR_OPF_IMM,
		.length = MRB + MR_RETH_LEN + MR_IMMDT_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_MRETH] = BTH, [MR_HDR_RETH] = MRB,
			    [MR_HDR_IMMDT] = MRB + MR_RETH_LEN,
			    [MR_HDR_PAYLOAD] = MRB + MR_RETH_LEN + MR_IMMDT_LEN },
	},
	[MR_OP_MRC_READ_REQUEST] = {
		.name = "MRC_RDMA_READ_REQUEST",
		.mask = MR_BTH_MASK | MR_MRETH_MASK | MR_RETH_MASK,
		.flags = MRC_REQ | MR_OPF_READ | MR_OPF_ONLY,
		.length = MRB + MR_RETH_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_MRETH] = BTH, [MR_HDR_RETH] = MRB,
			    [MR_HDR_PAYLOAD] = MRB + MR_RETH_LEN },
	},
	[MR_OP_MRC_READ_RESPONSE_FIRST] = {
		.name = "MRC_RDMA_READ_RESPONSE_FIRST",
		.mask = MR_BTH_MASK | MR_MRETH_MASK | MR_PAYLOAD_MASK,
		.flags = MRC_RESP | MR_OPF_READ | MR_OPF_FIRST,
		.length = MRB,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_MRETH] = BTH, [MR_HDR_PAYLOAD] = MRB },
	},
	[MR_OP_MRC_READ_RESPONSE_MIDDLE] = {
		.name = "MRC_RDMA_READ_RESPONSE_MIDDLE",
		.mask = MR_BTH_MASK | MR_MRETH_MASK | MR_PAYLOAD_MASK,
		.flags = MRC_RESP | MR_OPF_READ | MR_OPF_MIDDLE,
		.length = MRB,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_MRETH] = BTH, [MR_HDR_PAYLOAD] = MRB },
	},
	[MR_OP_MRC_READ_RESPONSE_LAST] = {
		.name = "MRC_RDMA_READ_RESPONSE_LAST",
		.mask = MR_BTH_MASK | MR_MRETH_MASK | MR_PAYLOAD_MASK,
		.flags = MRC_RESP | MR_OPF_READ | MR_OPF_LAST,
		.length = MRB,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_MRETH] = BTH, [MR_HDR_PAYLOAD] = MRB },
	},
	[MR_OP_MRC_READ_RESPONSE_ONLY] = {
		.name = "MRC_RDMA_READ_RESPONSE_ONLY",
		.mask = MR_BTH_MASK | MR_MRETH_MASK | MR_PAYLOAD_MASK,
		.flags = MRC_RESP | MR_OPF_READ | MR_OPF_ONLY,
		.length = MRB,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_MRETH] = BTH, [MR_HDR_PAYLOAD] = MRB },
	},
	[MR_OP_MRC_ACK] = {
		.name = "MRC_ACKNOWLEDGE",
		.mask = MR_BTH_MASK | MR_MRETH_MASK | MR_AETH_MASK | MR_SACKETH_MASK,
		.flags = MRC_RESP | MR_OPF_ACK | MR_OPF_ONLY,
		.length = MRB + MR_AETH_LEN + MR_SACKETH_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_MRETH] = BTH, [MR_HDR_AETH] = MRB,
			    [MR_HDR_SACKETH] = MRB + MR_AETH_LEN,
			    [MR_HDR_PAYLOAD] = MRB + MR_AETH_LEN + MR_SACKETH_LEN },
	},
	[MR_OP_MRC_ATOMIC_ACK] = {
		.name = "MRC_ATOMIC_ACKNOWLEDGE",
		.mask = MR_BTH_MASK | MR_MRETH_MASK | MR_AETH_MASK | MR_ATMACK_MASK,
		.flags = MRC_RESP | MR_OPF_ACK | MR_OPF_ATOMIC | MR_OPF_ONLY,
		.length = MRB + MR_AETH_LEN + MR_ATMACK_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_MRETH] = BTH, [MR_HDR_AETH] = MRB,
			    [MR_HDR_ATMACK] = MRB + MR_AETH_LEN,
			    [MR_HDR_PAYLOAD] = MRB + MR_AETH_LEN + MR_ATMACK_LEN },
	},
	[MR_OP_MRC_CMP_SWAP] = {
		.name = "MRC_COMPARE_SWAP",
		.mask = MR_BTH_MASK | MR_MRETH_MASK | MR_ATMETH_MASK,
		.flags = MRC_REQ | MR_OPF_ATOMIC | MR_OPF_ONLY,
		.length = MRB + MR_ATMETH_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_MRETH] = BTH, [MR_HDR_ATMETH] = MRB,
			    [MR_HDR_PAYLOAD] = MRB + MR_ATMETH_LEN },
	},
	[MR_OP_MRC_FETCH_ADD] = {
		.name = "MRC_FETCH_ADD",
		.mask = MR_BTH_MASK | MR_MRETH_MASK | MR_ATMETH_MASK,
		.flags = MRC_REQ | MR_OPF_ATOMIC | MR_OPF_ONLY,
		.length = MRB + MR_ATMETH_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_MRETH] = BTH, [MR_HDR_ATMETH] = MRB,
			    [MR_HDR_PAYLOAD] = MRB + MR_ATMETH_LEN },
	},
	[MR_OP_MRC_SEND_LAST_INV] = {
		.name = "MRC_SEND_LAST_WITH_INVALIDATE",
		.mask = MR_BTH_MASK | MR_MRETH_MASK | MR_IETH_MASK | MR_PAYLOAD_MASK,
		.flags = MRC_REQ | MR_OPF_SEND | MR_OPF_LAST | MR_OPF_INV,
		.length = MRB + MR_IETH_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_MRETH] = BTH, [MR_HDR_IETH] = MRB,
			    [MR_HDR_PAYLOAD] = MRB + MR_IETH_LEN },
	},
	[MR_OP_MRC_SEND_ONLY_INV] = {
		.name = "MRC_SEND_ONLY_WITH_INVALIDATE",
		.mask = MR_BTH_MASK | MR_MRETH_MASK | MR_IETH_MASK | MR_PAYLOAD_MASK,
		.flags = MRC_REQ | MR_OPF_SEND | MR_OPF_ONLY | MR_OPF_INV,
		.length = MRB + MR_IETH_LEN,
		.offset = { [MR_HDR_BTH] = 0, [MR_HDR_MRETH] = BTH, [MR_HDR_IETH] = MRB,
			    [MR_HDR_PAYLOAD] = MRB + MR_IETH_LEN },
	},
};

enum mr_parse_result mr_opcode_check_len(const struct mr_opcode_info *oi, uint32_t paylen,
					 uint8_t padcnt, const struct mr_roce_hdrs *hdr)
{
	if (padcnt > 3)
		return MR_PARSE_BAD_PAD;
	/* READ request, ACK, atomics, CNP: no payload field at all (IBA 9.3 table 38), so no pad. */
	if (!(oi->mask & MR_PAYLOAD_MASK)) {
		if (padcnt)
			return MR_PARSE_BAD_PAD;
		return paylen ? MR_PARSE_BAD_LENGTH : MR_PARSE_OK;
	}
	/* No IB packet carries more than the largest IB MTU, 4096 bytes (IBA ch. 7 MTU sizes). */
	if (paylen > MR_MAX_PAYLOAD)
		return MR_PARSE_BAD_LENGTH;
	/* Only the last or only packet of a message may be shorter than the PMTU (IBA 9.7.5.1.x);
	 * every PMTU is a multiple of 4, so first/middle packets are full and carry no pad. */
	if (oi->flags & (MR_OPF_FIRST | MR_OPF_MIDDLE)) {
		if (padcnt)
			return MR_PARSE_BAD_PAD;
		if (!paylen)
			return MR_PARSE_BAD_LENGTH;
	}
	/* Pad bytes only ever complete data (IBA 9.2 PadCnt): pad without data is malformed. */
	if (padcnt && !paylen)
		return MR_PARSE_BAD_PAD;
	if (padcnt != ((4 - (paylen & 3)) & 3))
		return MR_PARSE_BAD_PAD;
	/* RDMA WRITE Only: the payload is the whole transfer, so it must equal the RETH DMA
	 * length (IBA 9.7.4.1 length checks; rxe's responder rejects it too). */
	if (hdr && (oi->flags & MR_OPF_WRITE) && (oi->flags & MR_OPF_ONLY) &&
	    hdr->reth.dlen != paylen)
		return MR_PARSE_BAD_LENGTH;
	/* MetaRoCE per-packet placement: the payload must lie inside its message
	 * (docs/metaroce-wire.md MRETH offset/msg_len), or the receiver would write past it. */
	if (hdr && (oi->mask & MR_MRETH_MASK) &&
	    (uint64_t)hdr->mreth.offset + paylen > hdr->mreth.msg_len)
		return MR_PARSE_BAD_LENGTH;
	return MR_PARSE_OK;
}
