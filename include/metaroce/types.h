/* SPDX-License-Identifier: MIT
 * metaroce public types: verbs-compatible enums and work request / completion layouts.
 *
 * Numeric values deliberately equal rdma-core's <infiniband/verbs.h> (ibv_wc_status, ibv_wc_opcode,
 * ibv_wr_opcode, ibv_send_flags, ibv_access_flags, ibv_qp_state) so that tools ported from verbs
 * need no translation tables. This header has no DPDK dependency.
 */
#ifndef METAROCE_TYPES_H
#define METAROCE_TYPES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* IBA 10.3.1 QP states (values as enum ibv_qp_state). */
enum mr_qp_state {
	MR_QPS_RESET = 0,
	MR_QPS_INIT = 1,
	MR_QPS_RTR = 2,
	MR_QPS_RTS = 3,
	MR_QPS_SQD = 4,
	MR_QPS_SQE = 5,
	MR_QPS_ERR = 6,
};

/* Completion status (values as enum ibv_wc_status). */
enum mr_wc_status {
	MR_WC_SUCCESS = 0,
	MR_WC_LOC_LEN_ERR = 1,
	MR_WC_LOC_QP_OP_ERR = 2,
	MR_WC_LOC_EEC_OP_ERR = 3,
	MR_WC_LOC_PROT_ERR = 4,
	MR_WC_WR_FLUSH_ERR = 5,
	MR_WC_MW_BIND_ERR = 6,
	MR_WC_BAD_RESP_ERR = 7,
	MR_WC_LOC_ACCESS_ERR = 8,
	MR_WC_REM_INV_REQ_ERR = 9,
	MR_WC_REM_ACCESS_ERR = 10,
	MR_WC_REM_OP_ERR = 11,
	MR_WC_RETRY_EXC_ERR = 12,
	MR_WC_RNR_RETRY_EXC_ERR = 13,
	MR_WC_LOC_RDD_VIOL_ERR = 14,
	MR_WC_REM_INV_RD_REQ_ERR = 15,
	MR_WC_REM_ABORT_ERR = 16,
	MR_WC_INV_EECN_ERR = 17,
	MR_WC_INV_EEC_STATE_ERR = 18,
	MR_WC_FATAL_ERR = 19,
	MR_WC_RESP_TIMEOUT_ERR = 20,
	MR_WC_GENERAL_ERR = 21,
};

/* Completion opcode (values as enum ibv_wc_opcode). */
enum mr_wc_opcode {
	MR_WC_SEND = 0,
	MR_WC_RDMA_WRITE = 1,
	MR_WC_RDMA_READ = 2,
	MR_WC_COMP_SWAP = 3,
	MR_WC_FETCH_ADD = 4,
	MR_WC_RECV = 128,
	MR_WC_RECV_RDMA_WITH_IMM = 129,
};

/* Work request opcode (values as enum ibv_wr_opcode). */
enum mr_wr_opcode {
	MR_WR_RDMA_WRITE = 0,
	MR_WR_RDMA_WRITE_WITH_IMM = 1,
	MR_WR_SEND = 2,
	MR_WR_SEND_WITH_IMM = 3,
	MR_WR_RDMA_READ = 4,
	MR_WR_ATOMIC_CMP_AND_SWP = 5,
	MR_WR_ATOMIC_FETCH_AND_ADD = 6,
	MR_WR_SEND_WITH_INV = 9,
};

/* Send flags (values as enum ibv_send_flags). */
enum mr_send_flags {
	MR_SEND_FENCE = 1 << 0,
	MR_SEND_SIGNALED = 1 << 1,
	MR_SEND_SOLICITED = 1 << 2,
	MR_SEND_INLINE = 1 << 3,
};

/* Completion flags (values as enum ibv_wc_flags). */
enum mr_wc_flags {
	MR_WC_WITH_IMM = 1 << 1,
	MR_WC_WITH_INV = 1 << 3,
};

/* Memory access flags (values as enum ibv_access_flags). */
enum mr_access_flags {
	MR_ACCESS_LOCAL_WRITE = 1 << 0,
	MR_ACCESS_REMOTE_WRITE = 1 << 1,
	MR_ACCESS_REMOTE_READ = 1 << 2,
	MR_ACCESS_REMOTE_ATOMIC = 1 << 3,
};

#define MR_MAX_SGE 16

struct mr_sge {
	uint64_t addr; /* address in the registering process (the MR's iova space) */
	uint32_t length;
	uint32_t lkey;
};

struct mr_send_wr {
	uint64_t wr_id;
	enum mr_wr_opcode opcode;
	uint32_t send_flags; /* enum mr_send_flags */
	uint32_t num_sge;
	struct mr_sge sg_list[MR_MAX_SGE];
	uint32_t imm_data;      /* host order; sent big-endian in ImmDt (IBA 9.2.6) */
	uint32_t invalidate_rkey; /* SEND_WITH_INV: IETH (IBA 9.2.7) */
	struct {
		uint64_t remote_addr;
		uint32_t rkey;
	} rdma;
	struct {
		uint64_t remote_addr;
		uint64_t compare_add;
		uint64_t swap;
		uint32_t rkey;
	} atomic;
};

struct mr_recv_wr {
	uint64_t wr_id;
	uint32_t num_sge;
	struct mr_sge sg_list[MR_MAX_SGE];
};

struct mr_wc {
	uint64_t wr_id;
	enum mr_wc_status status;
	enum mr_wc_opcode opcode;
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm_data; /* host order; valid when wc_flags & MR_WC_WITH_IMM */
	uint32_t invalidated_rkey; /* valid when wc_flags & MR_WC_WITH_INV */
	uint32_t qp_num;
	uint32_t src_qp;
	uint32_t wc_flags;
};

#ifdef __cplusplus
}
#endif
#endif
