/* SPDX-License-Identifier: MIT
 * Raw RoCE v2 header accessors: explicit masks and network byte order, no length checks.
 * Callers (frame.c) check lengths against the opcode table before calling these. Layouts follow
 * IBA 9.2 (BTH) and 9.3.3.3 (extension transport headers).
 */
#ifndef MR_WIRE_ROCE_HDR_H
#define MR_WIRE_ROCE_HDR_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Byte-order helpers: byte-wise so that unaligned headers (VLAN, IPv4 options) are safe. */
static inline uint16_t mr_get_be16(const uint8_t *p)
{
	return (uint16_t)((unsigned int)p[0] << 8 | p[1]);
}

static inline uint32_t mr_get_be24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static inline uint32_t mr_get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t mr_get_be64(const uint8_t *p)
{
	return (uint64_t)mr_get_be32(p) << 32 | mr_get_be32(p + 4);
}

static inline void mr_put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void mr_put_be24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

/* The 32- and 64-bit stores are one unaligned store of the swapped value (memcpy): the byte-wise
 * form let GCC assemble a header's words on the stack and reload them as 16 bytes, a failed
 * store-to-load forward in every 8-byte WRITE's RETH (13 % of mr_frame_build, perf). */
static inline void mr_put_be32(uint8_t *p, uint32_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	memcpy(p, &v, sizeof(v));
}

static inline void mr_put_be64(uint8_t *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	memcpy(p, &v, sizeof(v));
}

/* ---- BTH (IBA 9.2, figure 98): 12 bytes ----
 * byte 0: OpCode | 1: SE(7) M(6) PadCnt(5:4) TVer(3:0) | 2-3: P_Key
 * byte 4: FECN(7) BECN(6) resv6 (A17.9.1 reuses IB's resv8a) | 5-7: DestQP
 * byte 8: AckReq(7) resv7 | 9-11: PSN
 */
#define MR_BTH_SE_MASK 0x80
#define MR_BTH_MIG_MASK 0x40
#define MR_BTH_PAD_MASK 0x30
#define MR_BTH_PAD_SHIFT 4
#define MR_BTH_TVER_MASK 0x0f
#define MR_BTH_FECN_MASK 0x80
#define MR_BTH_BECN_MASK 0x40
#define MR_BTH_ACK_MASK 0x80
#define MR_BTH_QPN_MASK 0xffffffu
#define MR_BTH_PSN_MASK 0xffffffu

static inline uint8_t mr_bth_opcode(const uint8_t *bth) { return bth[0]; }
static inline void mr_bth_set_opcode(uint8_t *bth, uint8_t op) { bth[0] = op; }

static inline bool mr_bth_se(const uint8_t *bth) { return bth[1] & MR_BTH_SE_MASK; }
static inline bool mr_bth_mig(const uint8_t *bth) { return bth[1] & MR_BTH_MIG_MASK; }
static inline uint8_t mr_bth_pad(const uint8_t *bth)
{
	return (uint8_t)((bth[1] & MR_BTH_PAD_MASK) >> MR_BTH_PAD_SHIFT);
}
static inline uint8_t mr_bth_tver(const uint8_t *bth) { return bth[1] & MR_BTH_TVER_MASK; }

static inline void mr_bth_set_flags(uint8_t *bth, bool se, bool mig, uint8_t pad, uint8_t tver)
{
	bth[1] = (uint8_t)((se ? MR_BTH_SE_MASK : 0) | (mig ? MR_BTH_MIG_MASK : 0) |
			   ((pad << MR_BTH_PAD_SHIFT) & MR_BTH_PAD_MASK) | (tver & MR_BTH_TVER_MASK));
}

static inline uint16_t mr_bth_pkey(const uint8_t *bth) { return mr_get_be16(bth + 2); }
static inline void mr_bth_set_pkey(uint8_t *bth, uint16_t pkey) { mr_put_be16(bth + 2, pkey); }

static inline bool mr_bth_fecn(const uint8_t *bth) { return bth[4] & MR_BTH_FECN_MASK; }
static inline bool mr_bth_becn(const uint8_t *bth) { return bth[4] & MR_BTH_BECN_MASK; }
static inline void mr_bth_set_ecn(uint8_t *bth, bool fecn, bool becn)
{
	bth[4] = (uint8_t)((fecn ? MR_BTH_FECN_MASK : 0) | (becn ? MR_BTH_BECN_MASK : 0));
}

static inline uint32_t mr_bth_qpn(const uint8_t *bth) { return mr_get_be24(bth + 5); }
static inline void mr_bth_set_qpn(uint8_t *bth, uint32_t qpn)
{
	mr_put_be24(bth + 5, qpn & MR_BTH_QPN_MASK);
}

static inline bool mr_bth_ackreq(const uint8_t *bth) { return bth[8] & MR_BTH_ACK_MASK; }
static inline void mr_bth_set_ackreq(uint8_t *bth, bool ack)
{
	bth[8] = ack ? MR_BTH_ACK_MASK : 0;
}

static inline uint32_t mr_bth_psn(const uint8_t *bth) { return mr_get_be24(bth + 9); }
static inline void mr_bth_set_psn(uint8_t *bth, uint32_t psn)
{
	mr_put_be24(bth + 9, psn & MR_BTH_PSN_MASK);
}

/* ---- RETH (IBA 9.3.3.3.2): VA(8) R_Key(4) DMALen(4) ---- */
static inline uint64_t mr_reth_va(const uint8_t *h) { return mr_get_be64(h); }
static inline uint32_t mr_reth_rkey(const uint8_t *h) { return mr_get_be32(h + 8); }
static inline uint32_t mr_reth_len(const uint8_t *h) { return mr_get_be32(h + 12); }
static inline void mr_reth_set(uint8_t *h, uint64_t va, uint32_t rkey, uint32_t len)
{
	mr_put_be64(h, va);
	mr_put_be32(h + 8, rkey);
	mr_put_be32(h + 12, len);
}

/* ---- AETH (IBA 9.3.3.3.4): Syndrome(8) MSN(24) ---- */
#define MR_AETH_MSN_MASK 0xffffffu
static inline uint8_t mr_aeth_syn(const uint8_t *h) { return h[0]; }
static inline uint32_t mr_aeth_msn(const uint8_t *h) { return mr_get_be24(h + 1); }
static inline void mr_aeth_set(uint8_t *h, uint8_t syn, uint32_t msn)
{
	h[0] = syn;
	mr_put_be24(h + 1, msn & MR_AETH_MSN_MASK);
}

/* ---- AtomicETH (IBA 9.3.3.3.3): VA(8) R_Key(4) SwapData/AddData(8) CmpData(8) ---- */
static inline uint64_t mr_atmeth_va(const uint8_t *h) { return mr_get_be64(h); }
static inline uint32_t mr_atmeth_rkey(const uint8_t *h) { return mr_get_be32(h + 8); }
static inline uint64_t mr_atmeth_swap_add(const uint8_t *h) { return mr_get_be64(h + 12); }
static inline uint64_t mr_atmeth_cmp(const uint8_t *h) { return mr_get_be64(h + 20); }
static inline void mr_atmeth_set(uint8_t *h, uint64_t va, uint32_t rkey, uint64_t swap_add,
				 uint64_t cmp)
{
	mr_put_be64(h, va);
	mr_put_be32(h + 8, rkey);
	mr_put_be64(h + 12, swap_add);
	mr_put_be64(h + 20, cmp);
}

/* ---- AtomicAckETH (IBA 9.3.3.3.5): OrigRemData(8) ---- */
static inline uint64_t mr_atmack_orig(const uint8_t *h) { return mr_get_be64(h); }
static inline void mr_atmack_set(uint8_t *h, uint64_t v) { mr_put_be64(h, v); }

/* ---- ImmDt (IBA 9.3.3.3.6) and IETH (9.3.3.3.7): one 32-bit word each ---- */
static inline uint32_t mr_immdt(const uint8_t *h) { return mr_get_be32(h); }
static inline void mr_immdt_set(uint8_t *h, uint32_t v) { mr_put_be32(h, v); }
static inline uint32_t mr_ieth_rkey(const uint8_t *h) { return mr_get_be32(h); }
static inline void mr_ieth_set(uint8_t *h, uint32_t v) { mr_put_be32(h, v); }

/* ---- DETH (IBA 9.3.3.3.1): Q_Key(32) resv8 SrcQP(24) ---- */
#define MR_DETH_SQPN_MASK 0xffffffu
static inline uint32_t mr_deth_qkey(const uint8_t *h) { return mr_get_be32(h); }
static inline uint32_t mr_deth_sqpn(const uint8_t *h) { return mr_get_be24(h + 5); }
static inline void mr_deth_set(uint8_t *h, uint32_t qkey, uint32_t sqpn)
{
	mr_put_be32(h, qkey);
	h[4] = 0;
	mr_put_be24(h + 5, sqpn & MR_DETH_SQPN_MASK);
}

/* ---- MetaRoCE MRETH (docs/metaroce-wire.md): 20 bytes ----
 * byte 0: ver(7:4) flags(3:0) | 1: path | 2-3: reserved | 4: msg_seq | 8: offset | 12: msg_len
 * | 16: ts
 */
#define MR_MRETH_VER_SHIFT 4
#define MR_MRETH_FLAGS_NIBBLE 0x0f
static inline uint8_t mr_mreth_ver(const uint8_t *h) { return h[0] >> MR_MRETH_VER_SHIFT; }
static inline uint8_t mr_mreth_flags(const uint8_t *h) { return h[0] & MR_MRETH_FLAGS_NIBBLE; }
static inline uint8_t mr_mreth_path(const uint8_t *h) { return h[1]; }
static inline uint32_t mr_mreth_msg_seq(const uint8_t *h) { return mr_get_be32(h + 4); }
static inline uint32_t mr_mreth_offset(const uint8_t *h) { return mr_get_be32(h + 8); }
static inline uint32_t mr_mreth_msg_len(const uint8_t *h) { return mr_get_be32(h + 12); }
static inline uint32_t mr_mreth_ts(const uint8_t *h) { return mr_get_be32(h + 16); }
/* Writes all 20 bytes, reserved ones zero; ver and flags are masked to their nibbles. */
static inline void mr_mreth_set(uint8_t *h, uint8_t ver, uint8_t flags, uint8_t path,
				uint32_t msg_seq, uint32_t offset, uint32_t msg_len, uint32_t ts)
{
	h[0] = (uint8_t)((ver << MR_MRETH_VER_SHIFT) | (flags & MR_MRETH_FLAGS_NIBBLE));
	h[1] = path;
	h[2] = h[3] = 0;
	mr_put_be32(h + 4, msg_seq);
	mr_put_be32(h + 8, offset);
	mr_put_be32(h + 12, msg_len);
	mr_put_be32(h + 16, ts);
}

/* ---- MetaRoCE SACKETH (docs/metaroce-wire.md): 24 bytes ----
 * byte 0: reserved | 1-3: sack_base PSN | 4-19: bitmap | 20-21: ce_count | 22-23: reserved
 */
#define MR_SACKETH_BASE_MASK 0xffffffu
#define MR_SACKETH_BITMAP_OFF 4
#define MR_SACKETH_BITMAP_LEN 16
static inline uint32_t mr_sacketh_base(const uint8_t *h) { return mr_get_be24(h + 1); }
static inline const uint8_t *mr_sacketh_bitmap(const uint8_t *h)
{
	return h + MR_SACKETH_BITMAP_OFF;
}
static inline uint16_t mr_sacketh_ce_count(const uint8_t *h) { return mr_get_be16(h + 20); }
static inline void mr_sacketh_set(uint8_t *h, uint32_t base, const uint8_t bitmap[16],
				  uint16_t ce_count)
{
	h[0] = 0;
	mr_put_be24(h + 1, base & MR_SACKETH_BASE_MASK);
	for (int i = 0; i < MR_SACKETH_BITMAP_LEN; i++)
		h[MR_SACKETH_BITMAP_OFF + i] = bitmap[i];
	mr_put_be16(h + 20, ce_count);
	h[22] = h[23] = 0;
}

#endif
