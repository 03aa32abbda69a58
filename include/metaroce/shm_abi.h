/* SPDX-License-Identifier: MIT
 * metaroce shared-memory ABI between libmetaroce (the app) and the daemon's shm server.
 *
 * One header, like TAS's tas_memif.h: everything two processes must agree on byte for byte.
 *
 *  - Control: one SOCK_SEQPACKET message per request/response on a filesystem UNIX socket
 *    (filesystem sockets cross network namespaces); file descriptors ride along with
 *    SCM_RIGHTS. Every message starts with struct mrc_ctl_hdr carrying MRC_ABI_VERSION.
 *  - Data: single-producer/single-consumer rings in memfds mapped by both sides. The app
 *    produces SQ and RQ entries and consumes CQ entries; the daemon does the opposite. Indices
 *    are free-running uint32 (wrap at 2^32, slot = index & (size - 1)); producer and consumer
 *    indices sit on separate 64-byte cache lines (as rdma-core's rxe_queue.h) so that the two
 *    sides never write the same line.
 *
 * Trust: the daemon never trusts ring memory. It keeps private copies of the ring size and of
 * the indices it owns, copies each entry out of the ring before validating it, and treats an
 * index the app publishes beyond the ring size as a protocol error (counted, nothing read).
 *
 * C11 only (uses <stdatomic.h>); the app-facing API is in metaroce.h.
 */
#ifndef METAROCE_SHM_ABI_H
#define METAROCE_SHM_ABI_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "metaroce/metaroce.h"
#include "metaroce/types.h"

/* 2: the CQ wake-up is a datagram socket, no longer an eventfd (CREATE_CQ below).
 * 3: the SQ entry's header is 48 bytes, an atomic's operands follow its SGE (struct mrc_sqe). */
#define MRC_ABI_VERSION 3u
#define MRC_CACHE_LINE 64
#define MRC_RING_MAGIC 0x4d52524eu /* "MRRN" */

/* Limits fixed by the entry layouts below. */
#define MRC_SQE_MAX_SGE 16       /* = MR_MAX_SGE */
#define MRC_RQE_MAX_SGE 16
#define MRC_SQE_INLINE_MAX 448   /* bytes of inline payload one SQ entry carries */
#define MRC_SQE_HDR 48           /* bytes of SQ entry before its SGEs or inline payload */
#define MRC_RING_MAX_ENTRIES 32768u

/* Public structs that travel inside control messages. */
_Static_assert(sizeof(struct mrc_port_attr) == 128, "port attr layout");
_Static_assert(sizeof(struct mrc_path) == 56, "path layout");
/* 88 bytes of verbs fields + 8 of MRC_QP_TRANSPORT (appended; still fits the 240-byte
 * request and response unions, so MRC_ABI_VERSION stays 1). */
_Static_assert(sizeof(struct mrc_qp_attr) == 96, "qp attr layout");
_Static_assert(offsetof(struct mrc_qp_attr, transport) == 88, "transport after the path");

/* ---- ring header: 4 cache lines, entries follow at offset sizeof(struct mrc_ring_hdr) ---- */
struct mrc_ring_hdr {
	/* Line 0: written only by the producer. */
	_Alignas(MRC_CACHE_LINE) _Atomic uint32_t prod;
	uint8_t pad0[MRC_CACHE_LINE - sizeof(uint32_t)];
	/* Line 1: written only by the consumer. */
	_Alignas(MRC_CACHE_LINE) _Atomic uint32_t cons;
	uint8_t pad1[MRC_CACHE_LINE - sizeof(uint32_t)];
	/* Line 2: written once by the daemon before the fd is handed out; informational for the
	 * app (the daemon uses its private copies). */
	_Alignas(MRC_CACHE_LINE) uint32_t magic;
	uint32_t size;        /* entries, power of two */
	uint32_t entry_size;  /* bytes */
	uint32_t reserved2;
	uint8_t pad2[MRC_CACHE_LINE - 4 * sizeof(uint32_t)];
	/* Line 3: CQ notification (IBA 11.4.2.2 Request Completion Notification). The app stores a
	 * new arm request (notify_req = sequence, low bit of notify_flags = solicited only); the
	 * daemon, after publishing entries, compares notify_req with notify_done (which only it
	 * writes), sends one datagram on the CQ's wake-up socket and sets notify_done = notify_req. Unused in SQ/RQ. */
	_Alignas(MRC_CACHE_LINE) _Atomic uint32_t notify_req;
	_Atomic uint32_t notify_flags;
	_Atomic uint32_t notify_done;
	uint32_t reserved3;
	uint8_t pad3[MRC_CACHE_LINE - 4 * sizeof(uint32_t)];
};
_Static_assert(sizeof(struct mrc_ring_hdr) == 4 * MRC_CACHE_LINE, "ring header is 4 lines");
_Static_assert(offsetof(struct mrc_ring_hdr, prod) == 0, "prod on line 0");
_Static_assert(offsetof(struct mrc_ring_hdr, cons) == MRC_CACHE_LINE, "cons on line 1");
_Static_assert(offsetof(struct mrc_ring_hdr, magic) == 2 * MRC_CACHE_LINE, "info on line 2");
_Static_assert(offsetof(struct mrc_ring_hdr, notify_req) == 3 * MRC_CACHE_LINE, "notify line 3");

#define MRC_NOTIFY_SOLICITED 1u

/* Optional daemon features announced in the HELLO response (additions within ABI version 1:
 * an older daemon leaves the field 0). */
#define MRC_FEAT_MAP_OFFSET 1u   /* MAP_BUF honours file_offset */
/* HELLO: the app rings doorbells (request), the session has a doorbell region (response; its
 * memfd rides with the answer). Sessions without it are served by a scan of every QP. */
#define MRC_FEAT_DOORBELL 2u
/* HELLO: the app registered for membarrier(2)'s MEMBARRIER_CMD_GLOBAL_EXPEDITED and will not
 * fence a post that finds its QP's leaf bit set (request, with DOORBELL); the daemon issues
 * that barrier before its last read of a QP whose bit it cleared (response). mrc_db_ring_asym. */
#define MRC_FEAT_DB_ASYM 4u

/* ---- doorbell: which QPs have new SQ/RQ entries (one region per session) ----
 * A QP's slot is its handle's index (mrc_db_slot). After publishing a QP's SQ or RQ producer
 * index, the app sets bit slot % 64 of leaf[slot / 64], then bit (slot / 64) % 64 of
 * sum[slot / 4096] (mrc_db_ring). The daemon reads the summary words, the leaf words they name
 * and serves only those QPs: an idle QP costs it nothing per poll, as with a NIC's doorbell,
 * instead of two ring-header reads on as many pages. A bit stays set while its QP is busy: the
 * daemon clears it (an atomic AND) after some polls that found the QP's rings empty, and a
 * summary bit once its leaf word is 0. Bits are hints to the daemon: one naming no QP of the
 * session is cleared, a QP the app does not ring only waits, and the ring indices are still
 * checked as for any other read of app memory.
 * Ordering (all sequentially consistent: the app fences after the index store, the daemon after
 * a clear): if the app finds its leaf bit still set, the daemon's clear of it comes later in
 * the total order and its read of the producer index after that, so it sees the new entries;
 * a bit already set is therefore not written again (the common case under load, which keeps
 * the doorbell's cache lines from moving on every post). Likewise for the summary bit after
 * the leaf bit (the daemon reads the leaf word again after clearing a summary bit). */
#define MRC_DB_SLOTS 65536u
struct mrc_doorbell {
	_Atomic uint64_t sum[MRC_DB_SLOTS / 4096];   /* 16 words: two cache lines */
	_Atomic uint64_t leaf[MRC_DB_SLOTS / 64];    /* 1024 words */
};
_Static_assert(sizeof(struct mrc_doorbell) == 8320, "doorbell layout");

static inline uint32_t mrc_db_slot(uint32_t handle)
{
	return ((handle & 0xffffu) - 1u) & (MRC_DB_SLOTS - 1);
}

static inline void mrc_db_ring(struct mrc_doorbell *db, uint32_t slot)
{
	uint64_t bit, sbit;

	slot &= MRC_DB_SLOTS - 1;
	bit = 1ull << (slot % 64);
	sbit = 1ull << ((slot / 64) % 64);
	atomic_thread_fence(memory_order_seq_cst); /* the index store before the bit test */
	if (atomic_load_explicit(&db->leaf[slot / 64], memory_order_seq_cst) & bit)
		return;
	atomic_fetch_or_explicit(&db->leaf[slot / 64], bit, memory_order_seq_cst);
	if (!(atomic_load_explicit(&db->sum[slot / 4096], memory_order_seq_cst) & sbit))
		atomic_fetch_or_explicit(&db->sum[slot / 4096], sbit, memory_order_seq_cst);
}

/* mrc_db_ring without the fence when the QP's leaf bit is found set (MRC_FEAT_DB_ASYM). The
 * index store may then still sit in this CPU's store buffer when the daemon clears the bit and
 * reads the index, so the daemon's guarantee is different: after clearing a bit it reads the QP
 * on its next polls (the common case: the store lands within nanoseconds), then once more after
 * a membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) issued after the clear. That barrier runs a full
 * fence on every CPU running this process, so the index store that came before the bit test in
 * program order is visible to that read, or the bit test came after the barrier's fence and
 * found the bit clear, and rang (membarrier(2), the asymmetric Dekker pattern). Only the compiler
 * must keep the store before the test (the signal fence). A clear bit takes the fenced path. */
static inline void mrc_db_ring_asym(struct mrc_doorbell *db, uint32_t slot)
{
	slot &= MRC_DB_SLOTS - 1;
	atomic_signal_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&db->leaf[slot / 64], memory_order_relaxed) & 1ull << (slot % 64))
		return;
	mrc_db_ring(db, slot);
}

/* ---- ring entries ---- */

/* Send queue entry. Fields mirror struct mr_send_wr (types.h); values are the same enums.
 * With MR_SEND_INLINE the payload is in inline_data (inline_len bytes) and num_sge is 0:
 * the app copied it at post time, so its buffers are free as soon as mrc_post_send returns.
 * The header is 48 bytes and the payload starts right after it, so that the common small WR
 * (one SGE, or up to 16 inline bytes, the size of an 8-byte WRITE) is one cache line: one
 * line the app takes back for writing and the daemon reads per post, not two (perf: each a
 * cross-core transfer per 8-byte WRITE). An atomic's operands follow its one SGE. */
struct mrc_sqe {
	uint64_t wr_id;
	uint32_t opcode;          /* enum mr_wr_opcode */
	uint32_t send_flags;      /* enum mr_send_flags */
	uint32_t num_sge;
	uint32_t imm_data;        /* host order */
	uint32_t invalidate_rkey;
	uint32_t rkey;            /* RDMA or atomic rkey */
	uint64_t remote_addr;     /* RDMA or atomic remote address */
	uint32_t inline_len;
	uint32_t reserved;
	union {
		struct mr_sge sge[MRC_SQE_MAX_SGE];
		uint8_t inline_data[MRC_SQE_INLINE_MAX];
		struct {
			struct mr_sge sge;    /* = sge[0]: where the original value lands */
			uint64_t compare_add;
			uint64_t swap;
		} atomic;
		uint8_t room[MRC_SQE_INLINE_MAX + 16]; /* the entry is 512 bytes */
	} u;
};
_Static_assert(sizeof(struct mr_sge) == 16, "sge is 16 bytes");
_Static_assert(offsetof(struct mrc_sqe, u) == MRC_SQE_HDR, "sqe header is 48 bytes");
_Static_assert(sizeof(struct mrc_sqe) == 512, "sqe is 512 bytes");

/* Receive queue entry. */
struct mrc_rqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t reserved[13];
	struct mr_sge sge[MRC_RQE_MAX_SGE];
};
_Static_assert(offsetof(struct mrc_rqe, sge) == 64, "rqe header is one line");
_Static_assert(sizeof(struct mrc_rqe) == 320, "rqe is 320 bytes");

/* Completion queue entry: struct mr_wc with fixed-width fields. */
struct mrc_cqe {
	uint64_t wr_id;
	uint32_t status;          /* enum mr_wc_status */
	uint32_t opcode;          /* enum mr_wc_opcode */
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm_data;
	uint32_t invalidated_rkey;
	uint32_t qp_num;
	uint32_t src_qp;
	uint32_t wc_flags;
	uint32_t reserved[5];
};
_Static_assert(sizeof(struct mrc_cqe) == 64, "cqe is one cache line");

/* Entry i of a ring whose header is r (entries of entry_size bytes follow the header). The
 * caller passes its own private mask, never r->size. */
static inline void *mrc_ring_entry(struct mrc_ring_hdr *r, uint32_t idx, uint32_t mask,
				   uint32_t entry_size)
{
	return (uint8_t *)(r + 1) + (size_t)(idx & mask) * entry_size;
}

/* Producer only: entries it may still write, given its private producer index. Acquire pairs
 * with the consumer's release in mrc_ring_consume(): slots it freed are no longer read. A
 * corrupt consumer index yields 0 free slots, never more than size. */
static inline uint32_t mrc_ring_free(struct mrc_ring_hdr *r, uint32_t prod, uint32_t size)
{
	uint32_t used = prod - atomic_load_explicit(&r->cons, memory_order_acquire);

	return used > size ? 0 : size - used;
}

/* Producer only: as mrc_ring_free, from the consumer index last read (*seen) while that shows
 * at least want free slots, reading the consumer's line again only below that. The consumer
 * rewrites its index on every entry it takes, on its own CPU: a read per post was a line
 * transfer per post. A stale index only undercounts (the consumer never moves back), and the
 * acquire of the read that produced it still orders the slots it freed. */
static inline uint32_t mrc_ring_free_seen(struct mrc_ring_hdr *r, uint32_t prod, uint32_t size,
					  uint32_t *seen, uint32_t want)
{
	uint32_t used = prod - *seen;

	if (used <= size && size - used >= want)
		return size - used;
	*seen = atomic_load_explicit(&r->cons, memory_order_acquire);
	used = prod - *seen;
	return used > size ? 0 : size - used;
}

/* Producer only: make entries up to (not including) prod visible. Release orders the entry
 * writes before the index store. */
static inline void mrc_ring_publish(struct mrc_ring_hdr *r, uint32_t prod)
{
	atomic_store_explicit(&r->prod, prod, memory_order_release);
}

/* Consumer only: entries ready to read, given its private consumer index. Acquire pairs with
 * mrc_ring_publish(). The caller must check the result against size: a value above it means
 * the producer is corrupt. */
static inline uint32_t mrc_ring_ready(struct mrc_ring_hdr *r, uint32_t cons)
{
	return atomic_load_explicit(&r->prod, memory_order_acquire) - cons;
}

/* Consumer only: hand slots before cons back to the producer (release: reads happen first). */
static inline void mrc_ring_consume(struct mrc_ring_hdr *r, uint32_t cons)
{
	atomic_store_explicit(&r->cons, cons, memory_order_release);
}

/* Bytes of a ring region (header + entries), rounded to a cache line. */
static inline size_t mrc_ring_bytes(uint32_t size, uint32_t entry_size)
{
	size_t b = sizeof(struct mrc_ring_hdr) + (size_t)size * entry_size;

	return (b + MRC_CACHE_LINE - 1) & ~(size_t)(MRC_CACHE_LINE - 1);
}

/* ---- control messages (SOCK_SEQPACKET; one struct per datagram) ---- */
enum mrc_ctl_op {
	MRC_CTL_HELLO = 1,       /* first request; version negotiation; response + the doorbell
				  * memfd when both sides have MRC_FEAT_DOORBELL */
	MRC_CTL_QUERY_PORT = 2,
	MRC_CTL_ALLOC_PD = 3,
	MRC_CTL_DEALLOC_PD = 4,
	MRC_CTL_MAP_BUF = 5,     /* + memfd (sealed against shrinking) */
	MRC_CTL_UNMAP_BUF = 6,
	MRC_CTL_REG_MR = 7,
	MRC_CTL_DEREG_MR = 8,
	MRC_CTL_CREATE_CQ = 9,   /* + one end of an AF_UNIX SOCK_DGRAM socketpair (the wake-up);
				  * response + ring memfd */
	MRC_CTL_DESTROY_CQ = 10,
	MRC_CTL_CREATE_QP = 11,  /* response + ring memfd (SQ then RQ) */
	MRC_CTL_MODIFY_QP = 12,
	MRC_CTL_QUERY_QP = 13,
	MRC_CTL_DESTROY_QP = 14,
	MRC_CTL_CREATE_SRQ = 15, /* response + ring memfd (one RQ-format ring) */
	MRC_CTL_DESTROY_SRQ = 16,
	MRC_CTL_OP_MAX = 17,
};

struct mrc_ctl_hdr {
	uint16_t version;   /* MRC_ABI_VERSION */
	uint16_t op;        /* enum mrc_ctl_op; the response echoes it */
	uint32_t seq;       /* chosen by the app, echoed */
	int32_t status;     /* response: 0 or negative errno; request: 0 */
	uint32_t reserved;
};
_Static_assert(sizeof(struct mrc_ctl_hdr) == 16, "ctl header is 16 bytes");

/* Handles are per session: index in the low 16 bits, generation above it. 0 is never valid. */
struct mrc_ctl_req {
	struct mrc_ctl_hdr hdr;
	union {
		struct {
			uint32_t abi_version, pid;
			uint32_t features;  /* MRC_FEAT_* the app uses (DOORBELL, DB_ASYM); 0 = none */
		} hello;
		struct { uint32_t handle; } obj;   /* DEALLOC_PD, UNMAP_BUF, DEREG_MR, DESTROY_*,
						    * QUERY_QP */
		struct {
			uint64_t app_addr, len;
			/* Offset of the mapping in the memfd (page multiple; needs
			 * MRC_FEAT_MAP_OFFSET, else must be 0: an older daemon maps from 0). */
			uint64_t file_offset;
		} map_buf;
		struct {
			uint32_t pd, buf;
			uint64_t offset, len;  /* within the buffer; iova = app_addr + offset */
			uint32_t access;
			uint32_t reserved;
		} reg_mr;
		struct { uint32_t depth; uint32_t reserved; } create_cq;
		struct {
			uint32_t pd, send_cq, recv_cq;
			uint32_t qp_type;
			uint32_t max_send_wr, max_recv_wr;
			uint32_t max_send_sge, max_recv_sge;
			uint32_t max_inline_data;
			uint32_t sq_sig_all;
			uint32_t srq;    /* SRQ handle, 0 = none: then receives come from it */
		} create_qp;
		struct { uint32_t pd, max_wr, max_sge, reserved; } create_srq;
		struct {
			uint32_t qp;
			uint32_t mask;   /* enum mrc_qp_attr_mask */
			struct mrc_qp_attr attr;
		} modify_qp;
		uint8_t raw[240];
	} u;
};
_Static_assert(sizeof(struct mrc_ctl_req) == 256, "ctl request is 256 bytes");

struct mrc_ctl_resp {
	struct mrc_ctl_hdr hdr;
	union {
		struct {
			uint32_t abi_version, session_id;
			uint32_t features;   /* MRC_FEAT_*; 0 from daemons that predate them */
		} hello;
		struct mrc_port_attr port;
		struct { uint32_t handle; } obj;
		struct { uint32_t handle, lkey, rkey, reserved; } reg_mr;
		struct { uint32_t handle, size; uint64_t map_len; } create_cq;
		struct {
			uint32_t handle, qp_num;
			uint32_t sq_size, rq_size;   /* entries */
			uint64_t sq_off, rq_off;     /* ring headers within the memfd */
			uint64_t map_len;
			uint32_t max_inline_data;
			uint32_t max_send_sge, max_recv_sge;
			uint32_t reserved;
		} create_qp;
		struct mrc_qp_attr qp_attr;
		struct { uint32_t handle, size, max_sge, reserved; uint64_t map_len; } create_srq;
		uint8_t raw[240];
	} u;
};
_Static_assert(sizeof(struct mrc_ctl_resp) == 256, "ctl response is 256 bytes");

#endif
