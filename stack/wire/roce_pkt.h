/* SPDX-License-Identifier: MIT
 * RoCE v2 wire API (IBTA Annex A17): decoded header fields, frame building and parsing.
 * No DPDK, no I/O: frames are plain byte buffers.
 */
#ifndef MR_WIRE_ROCE_PKT_H
#define MR_WIRE_ROCE_PKT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MR_ROCE_UDP_PORT 4791   /* IBTA A17.2.2 */
#define MR_BTH_LEN 12
#define MR_ICRC_LEN 4
/* Worst-case bytes in front of the BTH: Ethernet + 802.1Q + IPv6 + UDP. */
#define MR_L2L4_MAX_LEN (14 + 4 + 40 + 8)
/* Worst-case BTH + extension headers (BTH + RETH/AtomicETH + DETH + ImmDt...; MetaRoCE:
 * BTH + MRETH + AtomicETH or BTH + MRETH + AETH + SACKETH = 60). */
#define MR_ROCE_HDR_MAX_LEN 64

/* Zeroes n bytes at p (n a compile-time constant) with unrolled 16-byte stores. A plain memset
 * (or a loop of small stores, which GCC turns back into one) of the 100-250-byte structs on the
 * per-packet path compiled to rep stos, whose start-up cost was 3-7 % of an engine's cycles at
 * 8-byte messages (perf: mr_frame_parse, rc_tx_reset, the header zeroing in mr_frame_build). */
static inline void mr_zero_fixed(void *p, size_t n)
{
	typedef uint8_t mr_v16 __attribute__((vector_size(16), aligned(1), may_alias));
	uint8_t *b = (uint8_t *)p;

#pragma GCC unroll 32
	for (size_t i = 0; i + 16 <= n; i += 16)
		*(mr_v16 *)(b + i) = (mr_v16){ 0 };
	for (size_t i = n & ~(size_t)15; i < n; i++)
		b[i] = 0;
}

/* BTH opcodes (IBA 9.2, table 38): RC 0x00-0x1f, UD 0x60-0x7f, CNP 0x81 (A17.9.3). */
enum mr_opcode {
	MR_OP_RC_SEND_FIRST = 0x00,
	MR_OP_RC_SEND_MIDDLE = 0x01,
	MR_OP_RC_SEND_LAST = 0x02,
	MR_OP_RC_SEND_LAST_IMM = 0x03,
	MR_OP_RC_SEND_ONLY = 0x04,
	MR_OP_RC_SEND_ONLY_IMM = 0x05,
	MR_OP_RC_WRITE_FIRST = 0x06,
	MR_OP_RC_WRITE_MIDDLE = 0x07,
	MR_OP_RC_WRITE_LAST = 0x08,
	MR_OP_RC_WRITE_LAST_IMM = 0x09,
	MR_OP_RC_WRITE_ONLY = 0x0a,
	MR_OP_RC_WRITE_ONLY_IMM = 0x0b,
	MR_OP_RC_READ_REQUEST = 0x0c,
	MR_OP_RC_READ_RESPONSE_FIRST = 0x0d,
	MR_OP_RC_READ_RESPONSE_MIDDLE = 0x0e,
	MR_OP_RC_READ_RESPONSE_LAST = 0x0f,
	MR_OP_RC_READ_RESPONSE_ONLY = 0x10,
	MR_OP_RC_ACK = 0x11,
	MR_OP_RC_ATOMIC_ACK = 0x12,
	MR_OP_RC_CMP_SWAP = 0x13,
	MR_OP_RC_FETCH_ADD = 0x14,
	MR_OP_RC_SEND_LAST_INV = 0x16,
	MR_OP_RC_SEND_ONLY_INV = 0x17,
	MR_OP_UD_SEND_ONLY = 0x64,
	MR_OP_UD_SEND_ONLY_IMM = 0x65,
	MR_OP_CNP = 0x81,
	/* MetaRoCE (docs/metaroce-wire.md): 0xC0 | RC opcode, in the range IBA 9.2 table 38
	 * reserves for manufacturer-specific opcodes (110x xxxx). */
	MR_OP_MRC_SEND_FIRST = 0xc0,
	MR_OP_MRC_SEND_MIDDLE = 0xc1,
	MR_OP_MRC_SEND_LAST = 0xc2,
	MR_OP_MRC_SEND_LAST_IMM = 0xc3,
	MR_OP_MRC_SEND_ONLY = 0xc4,
	MR_OP_MRC_SEND_ONLY_IMM = 0xc5,
	MR_OP_MRC_WRITE_FIRST = 0xc6,
	MR_OP_MRC_WRITE_MIDDLE = 0xc7,
	MR_OP_MRC_WRITE_LAST = 0xc8,
	MR_OP_MRC_WRITE_LAST_IMM = 0xc9,
	MR_OP_MRC_WRITE_ONLY = 0xca,
	MR_OP_MRC_WRITE_ONLY_IMM = 0xcb,
	MR_OP_MRC_READ_REQUEST = 0xcc,
	MR_OP_MRC_READ_RESPONSE_FIRST = 0xcd,
	MR_OP_MRC_READ_RESPONSE_MIDDLE = 0xce,
	MR_OP_MRC_READ_RESPONSE_LAST = 0xcf,
	MR_OP_MRC_READ_RESPONSE_ONLY = 0xd0,
	MR_OP_MRC_ACK = 0xd1,
	MR_OP_MRC_ATOMIC_ACK = 0xd2,
	MR_OP_MRC_CMP_SWAP = 0xd3,
	MR_OP_MRC_FETCH_ADD = 0xd4,
	MR_OP_MRC_SEND_LAST_INV = 0xd6,
	MR_OP_MRC_SEND_ONLY_INV = 0xd7,
};

/* ---- MetaRoCE opcode mapping (docs/metaroce-wire.md "Framing") ---- */
#define MR_OP_MRC_BASE 0xc0
#define MR_OP_MRC_RANGE_MASK 0xe0 /* IBA 9.2 table 38: 110x xxxx = manufacturer specific */
#define MR_OP_RC_MASK 0x1f        /* RC opcodes are 000x xxxx */

/* True for any opcode in the MetaRoCE range 0xC0..0xDF (whether or not it is defined:
 * mr_opcode_name() says that). */
static inline bool mr_opcode_is_metaroce(uint8_t op)
{
	return (op & MR_OP_MRC_RANGE_MASK) == MR_OP_MRC_BASE;
}

/* The MetaRoCE opcode carrying RC opcode rc_op (0x00..0x1f). Anything else is returned
 * unchanged, so this never invents a MetaRoCE opcode for a UD/CNP packet. */
static inline uint8_t mr_opcode_to_metaroce(uint8_t rc_op)
{
	return rc_op <= MR_OP_RC_MASK ? (uint8_t)(MR_OP_MRC_BASE | rc_op) : rc_op;
}

/* The RC opcode a MetaRoCE opcode stands for; other opcodes are returned unchanged. Lets the
 * transport switch on one set of opcode names for both modes. */
static inline uint8_t mr_opcode_base(uint8_t op)
{
	return mr_opcode_is_metaroce(op) ? (uint8_t)(op & MR_OP_RC_MASK) : op;
}

/* MRETH (20 bytes, right after the BTH of every MetaRoCE packet). Byte 0 holds ver in the high
 * nibble and flags in the low nibble; flag bit i has value 1 << i. */
#define MR_MRETH_LEN 20
#define MR_MRETH_VER 1
#define MR_MRETH_RETX 0x01  /* retransmission */
#define MR_MRETH_TLP 0x02   /* tail-loss probe */
#define MR_MRETH_ECE 0x04   /* in ACKs: the acknowledged packet arrived CE-marked */
#define MR_MRETH_FLAGS_MASK 0x07 /* defined flags; bit 3 is reserved (sent 0, ignored) */
/* MRETH.ts unit: 256 ns, truncated to 32 bits. */
#define MR_MRETH_TS_SHIFT 8

/* SACKETH (24 bytes, in MetaRoCE ACKs after the AETH): 8 reserved bits, sack_base (24-bit PSN),
 * 128-bit bitmap, ce_count(16), 16 reserved bits. */
#define MR_SACKETH_LEN 24
#define MR_SACK_BITS 128
#define MR_SACK_BYTES (MR_SACK_BITS / 8)

/* Bitmap bit i stands for PSN sack_base + i; bit 0 is the most significant bit of byte 0. */
static inline bool mr_sack_test(const uint8_t bitmap[MR_SACK_BYTES], unsigned int i)
{
	return i < MR_SACK_BITS && (bitmap[i >> 3] & (0x80u >> (i & 7)));
}

static inline void mr_sack_set(uint8_t bitmap[MR_SACK_BYTES], unsigned int i)
{
	if (i < MR_SACK_BITS)
		bitmap[i >> 3] = (uint8_t)(bitmap[i >> 3] | (0x80u >> (i & 7)));
}

/* AETH syndrome (IBA 9.7.5.2.x, table 42): top 3 bits select the kind, low 5 bits the value. */
#define MR_AETH_TYPE_MASK 0x60
#define MR_AETH_ACK 0x00       /* low 5 bits: credit count (0x1f = invalid/unlimited) */
#define MR_AETH_RNR_NAK 0x20   /* low 5 bits: RNR timer code (table 45) */
#define MR_AETH_NAK 0x60       /* low 5 bits: NAK code below */
#define MR_NAK_PSN_SEQ_ERR 0x00
#define MR_NAK_INVALID_REQ 0x01
#define MR_NAK_REM_ACCESS_ERR 0x02
#define MR_NAK_REM_OP_ERR 0x03
#define MR_NAK_INVALID_RD_REQ 0x04
#define MR_AETH_CREDIT_INVALID 0x1f

/* Decoded BTH and extension headers. Multi-byte fields are host order. */
struct mr_roce_hdrs {
	uint8_t opcode;
	bool se;       /* solicited event */
	bool mig;      /* MigReq */
	uint8_t padcnt; /* filled by the parser; the builder computes it from the payload length */
	uint8_t tver;  /* transport header version, 0 */
	uint16_t pkey;
	bool fecn, becn;
	uint32_t dqpn;  /* 24 bits */
	bool ackreq;
	uint32_t psn;   /* 24 bits */
	struct { uint64_t va; uint32_t rkey; uint32_t dlen; } reth;            /* IBA 9.3.3.3.2 */
	struct { uint8_t syndrome; uint32_t msn; } aeth;                     /* IBA 9.3.3.3.4 */
	struct { uint64_t va; uint32_t rkey; uint64_t swap_add; uint64_t cmp; } atmeth; /* 9.3.3.3.3 */
	uint64_t atmack;  /* AtomicAckETH original data (IBA 9.3.3.3.5) */
	uint32_t imm;     /* ImmDt (IBA 9.3.3.3.6), host order */
	uint32_t ieth_rkey; /* IETH (IBA 9.3.3.3.7) */
	struct { uint32_t qkey; uint32_t sqpn; } deth; /* IBA 9.3.3.3.1 */
	/* MetaRoCE MRETH. ver: the builder writes MR_MRETH_VER when 0 (a zeroed struct) or 1 and
	 * refuses anything else; the parser drops ver != 1. flags: MR_MRETH_*. ts: 256 ns units. */
	struct { uint8_t ver, flags; uint8_t path; uint32_t msg_seq, offset, msg_len, ts; } mreth;
	/* MetaRoCE SACKETH: base is a 24-bit PSN; bitmap per mr_sack_test(). */
	struct { uint32_t base; uint8_t bitmap[16]; uint16_t ce_count; } sack;
};

/* Addressing of one flow: everything in front of the BTH. GIDs are IPv6 or IPv4-mapped
 * (::ffff:a.b.c.d) addresses; ipv6=false selects an IPv4 header built from gid[12..15]. */
struct mr_path {
	uint8_t smac[6];
	uint8_t dmac[6];
	bool vlan;
	uint16_t vlan_tci;   /* PCP(3) DEI(1) VID(12) */
	bool ipv6;
	uint8_t sgid[16];
	uint8_t dgid[16];
	uint8_t tclass;      /* DSCP << 2 | ECN */
	uint8_t ttl;         /* hop limit */
	uint32_t flow_label; /* IPv6 only, 20 bits */
	uint16_t udp_sport;  /* entropy (A17.3.3 recommends a per-flow source port) */
};

struct mr_iov {
	const void *base;
	uint32_t len;
};

/* A parsed frame. Pointers refer into the caller's frame buffer. */
struct mr_pkt {
	const uint8_t *frame;
	uint32_t frame_len;
	uint8_t dmac[6], smac[6];
	bool vlan;
	uint16_t vlan_tci;
	bool ipv6;
	uint8_t sgid[16], dgid[16];  /* IPv4 addresses are returned IPv4-mapped */
	uint8_t tclass;
	uint8_t ttl;
	uint16_t udp_sport, udp_dport;
	const uint8_t *bth;          /* start of BTH within frame */
	struct mr_roce_hdrs hdr;
	const uint8_t *payload;
	uint32_t paylen;             /* without pad and ICRC */
	uint32_t icrc;
	/* What the ICRC covers (mr_icrc_calc's arguments): the IP header and the bytes from the
	 * BTH up to the ICRC. */
	const uint8_t *ip;
	uint32_t ip_hdr_len, icrc_len;
	/* mr_frame_parse_deferred: the ICRC is not checked yet. icrc_part is the CRC of everything
	 * before the payload; the transport checks the rest while it places the payload
	 * (mr_pkt_place_checked) or in full (mr_pkt_icrc_ok) before it acts on the packet. */
	bool icrc_pending;
	uint32_t icrc_part;
};

/* Every reason a frame can be rejected. MR_PARSE_NOT_ROCE means "not ours" (skip, count) rather
 * than "malformed". */
enum mr_parse_result {
	MR_PARSE_OK = 0,
	MR_PARSE_NOT_ROCE,        /* not Ethernet/IP/UDP dst port 4791 */
	MR_PARSE_TRUNCATED,       /* frame ends before a header it announces */
	MR_PARSE_BAD_IP,          /* bad IPv4 IHL/version/fragment or IPv6 version */
	MR_PARSE_BAD_IP_CSUM,
	MR_PARSE_BAD_IP_LEN,      /* IP total/payload length disagrees with the frame */
	MR_PARSE_BAD_UDP_LEN,
	MR_PARSE_BAD_UDP_CSUM,    /* non-zero UDP checksum that does not verify */
	MR_PARSE_BAD_VERSION,     /* BTH TVer != 0, or MetaRoCE MRETH ver != 1 */
	MR_PARSE_UNKNOWN_OPCODE,
	MR_PARSE_BAD_PAD,         /* pad count illegal for this opcode/payload */
	MR_PARSE_BAD_LENGTH,      /* payload length illegal for the opcode (e.g. ACK with payload,
				   * MetaRoCE offset + payload > msg_len) */
	MR_PARSE_BAD_ICRC,
	MR_PARSE_NR_RESULTS
};

const char *mr_parse_result_str(enum mr_parse_result r);

/* Parse an Ethernet frame (optionally 802.1Q tagged) carrying IPv4 or IPv6 / UDP 4791 / RoCE.
 * Never reads outside [frame, frame+len). Checks ICRC when check_icrc is true. */
enum mr_parse_result mr_frame_parse(const uint8_t *frame, uint32_t len, bool check_icrc,
				    struct mr_pkt *pkt);

/* As mr_frame_parse with the ICRC checked, except for the packets whose payload the RC
 * responder places at a position its own state fixes (RDMA WRITE Middle and Last without
 * immediate, at least
 * MR_ICRC_DEFER_MIN bytes): those return MR_PARSE_OK with icrc_pending set, and the check is
 * fused with the placement copy (one pass over the payload instead of two). Whoever takes
 * such a packet must check it (mr_pkt_icrc_ok or mr_pkt_place_checked) before anything in
 * it is used beyond choosing where it would go. */
#define MR_ICRC_DEFER_MIN 256
enum mr_parse_result mr_frame_parse_deferred(const uint8_t *frame, uint32_t len,
					     struct mr_pkt *pkt);
/* The full ICRC check of a parsed packet (pending or not). */
bool mr_pkt_icrc_ok(const struct mr_pkt *pkt);
/* For a pending packet: copy its paylen payload bytes to dst while finishing the ICRC over
 * them and the pad; true if it matches. dst gets the bytes either way. */
bool mr_pkt_place_checked(const struct mr_pkt *pkt, void *dst);

/* Build a complete frame: L2..UDP from path (ip_id for IPv4), BTH and the extension headers
 * that hdr->opcode requires (per the opcode table), the payload gathered from iov, pad to a
 * 4-byte multiple, and the ICRC. Returns the frame length, or -EINVAL (bad opcode / fields),
 * -ENOSPC (cap too small). */
int mr_frame_build(uint8_t *buf, uint32_t cap, const struct mr_path *path, uint16_t ip_id,
		   const struct mr_roce_hdrs *hdr, const struct mr_iov *iov, unsigned int niov);

/* The Ethernet [802.1Q] / IP / UDP headers of one path, prebuilt once (mr_hdr_tmpl_init, when
 * the path is set) so that a frame's first 42-66 bytes are one fixed-size copy and a few patched
 * fields: the destination MAC, the UDP source port, the IP and UDP lengths, and IPv4's id and
 * header checksum (from a precomputed partial sum). */
#define MR_HDR_TMPL_LEN 80
struct mr_hdr_tmpl {
	uint8_t b[MR_HDR_TMPL_LEN]; /* L2..UDP as mr_frame_build writes them, patched fields 0 */
	uint8_t len;                /* bytes of b in use: 42, 46, 62 or 66; 0 = no valid path */
	uint8_t ip_off;             /* 14, or 18 behind an 802.1Q tag */
	bool ipv6;
	uint16_t udp_sport;         /* the path's own source port */
	uint32_t csum_base;         /* IPv4: sum of the header's 16-bit words that do not change */
};
/* 0, or -EINVAL for a path mr_frame_build would refuse (then t->len is 0). */
int mr_hdr_tmpl_init(struct mr_hdr_tmpl *t, const struct mr_path *path);
/* mr_frame_build_tmpl flags: the IPv4 header checksum is left 0 for the NIC to fill in (DPDK's
 * IPv4 checksum offload wants the field zeroed); no effect on IPv6 frames. */
#define MR_BUILD_IP_CSUM_OFFLOAD 1u
/* mr_frame_build with the path's headers from t, dmac as the destination MAC, udp_sport (0: the
 * path's) as the UDP source port: the same bytes (but for MR_BUILD_IP_CSUM_OFFLOAD's zero),
 * the same errors. It may write up to MR_HDR_TMPL_LEN bytes of buf (within cap) past a shorter
 * frame's end. */
int mr_frame_build_tmpl(uint8_t *buf, uint32_t cap, const struct mr_hdr_tmpl *t,
			const uint8_t dmac[6], uint16_t udp_sport, uint16_t ip_id,
			const struct mr_roce_hdrs *hdr, const struct mr_iov *iov, unsigned int niov,
			unsigned int flags);

/* Length of BTH + extension headers for an opcode, or 0 for an unknown opcode. */
unsigned int mr_opcode_hdr_len(uint8_t opcode);
/* Human name ("RC_RDMA_WRITE_FIRST"...), or NULL for an unknown opcode. */
const char *mr_opcode_name(uint8_t opcode);

/* 24-bit PSN arithmetic (IBA 9.7.1): PSNs compare modulo 2^24 within a half window. */
#define MR_PSN_MASK 0xffffffu
static inline uint32_t mr_psn_add(uint32_t psn, uint32_t n) { return (psn + n) & MR_PSN_MASK; }
/* <0, 0, >0 as a is before, equal to, after b (signed 24-bit distance). */
static inline int32_t mr_psn_cmp(uint32_t a, uint32_t b)
{
	return (int32_t)(((a - b) & MR_PSN_MASK) << 8) >> 8;
}

#endif
