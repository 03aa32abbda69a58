/* SPDX-License-Identifier: MIT
 * Test helper: pull perftest's TCP setup stream and the RoCE frames out of a classic pcap
 * (Ethernet/IPv4 only, as the rxe captures in tests/vectors are).
 */
#ifndef MRPERF_TEST_CAPTURE_H
#define MRPERF_TEST_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CAP_MAX_SEGS 64
#define CAP_MAX_ROCE 1024

struct cap_seg {
	bool from_client;    /* source port is not the server port */
	size_t len;
	uint8_t data[256];
};

struct cap_roce {
	uint8_t src_ip[4];
	uint8_t dst_ip[4];
	uint8_t opcode;
	uint32_t dest_qp;
	uint32_t psn;
	bool has_reth;
	uint64_t reth_va;
	uint32_t reth_rkey;
	uint32_t reth_len;
};

struct capture {
	uint8_t client_ip[4];
	uint8_t server_ip[4];
	size_t nseg;
	struct cap_seg seg[CAP_MAX_SEGS];
	size_t nroce;
	struct cap_roce roce[CAP_MAX_ROCE];
};

/* Loads path; TCP payload segments to/from tcp_port in capture order, RoCE v2 frames (UDP
 * 4791). Returns 0 or -errno. */
int capture_load(const char *path, uint16_t tcp_port, struct capture *cap);

#endif
