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
/* Worst-case BTH + extension headers (BTH + RETH/AtomicETH + DETH + ImmDt...). */
#define MR_ROCE_HDR_MAX_LEN 64

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
};

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
	MR_PARSE_BAD_VERSION,     /* BTH TVer != 0 */
	MR_PARSE_UNKNOWN_OPCODE,
	MR_PARSE_BAD_PAD,         /* pad count illegal for this opcode/payload */
	MR_PARSE_BAD_LENGTH,      /* payload length illegal for the opcode (e.g. ACK with payload) */
	MR_PARSE_BAD_ICRC,
	MR_PARSE_NR_RESULTS
};

const char *mr_parse_result_str(enum mr_parse_result r);

/* Parse an Ethernet frame (optionally 802.1Q tagged) carrying IPv4 or IPv6 / UDP 4791 / RoCE.
 * Never reads outside [frame, frame+len). Checks ICRC when check_icrc is true. */
enum mr_parse_result mr_frame_parse(const uint8_t *frame, uint32_t len, bool check_icrc,
				    struct mr_pkt *pkt);

/* Build a complete frame: L2..UDP from path (ip_id for IPv4), BTH and the extension headers
 * that hdr->opcode requires (per the opcode table), the payload gathered from iov, pad to a
 * 4-byte multiple, and the ICRC. Returns the frame length, or -EINVAL (bad opcode / fields),
 * -ENOSPC (cap too small). */
int mr_frame_build(uint8_t *buf, uint32_t cap, const struct mr_path *path, uint16_t ip_id,
		   const struct mr_roce_hdrs *hdr, const struct mr_iov *iov, unsigned int niov);

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
