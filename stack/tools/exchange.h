/* SPDX-License-Identifier: MIT
 * perftest-compatible out-of-band connection setup over TCP (port 18515).
 *
 * Stock perftest (4.5, version string "6.06") and rdma-core's ibv_rc_pingpong learn the peer's
 * QPN, PSN, rkey, buffer address and GID over a plain TCP connection before any RoCE packet
 * flows. This module speaks both dialects byte for byte, so mrperf interoperates with them in
 * either role. Two layers:
 *   - codecs (exchange.c): pure functions from structs to the exact bytes and back; they never
 *     touch a socket and reject malformed input with -EINVAL (tested against real captures);
 *   - the conversation (exchange_io.c): who writes first, message sizes, the per-test sequence of
 *     "hand shakes" that perftest uses as barriers, the final report exchange and close.
 *
 * perftest's conversation (src/perftest_communication.c), client = the side given a server name:
 *   every step is "client writes N bytes then reads N; server reads N then writes N", one write()
 *   per message (perftest reads each message with a single read() of exactly N bytes):
 *   1. version:  16 bytes, NUL-padded ASCII ("6.06\0\0..."); the peer refuses < 5.70.
 *   2. sys data: 4 bytes cycle_buffer (page size, big-endian), then 4 bytes cache line size
 *                (big-endian); both sides continue with the maximum of the two.
 *   3. MTU:      2 bytes: "%d" of the ibv_mtu enum ("3\0" = 1024); both use the minimum.
 *   4. keys:     108-byte records "%04x:%04x:%06x:%06x:%08x:%016llx:<16 x %02x:>%08x:\0"
 *                = lid:out_reads:qpn:psn:rkey:vaddr:gid[0]:..:gid[15]:srqn: plus NUL, sent
 *                again at each later barrier (59-byte form without GID when no GID index).
 *   5. reports (bw tests): size u64, iters u64, bw_peak, bw_avg, msg_rate (IEEE doubles), each
 *                its own 8-byte big-endian step.
 *   6. close:    one more key hand shake, then each side writes "done\0" and closes.
 */
#ifndef MRPERF_EXCHANGE_H
#define MRPERF_EXCHANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MR_PT_DEFAULT_PORT 18515
#define MR_PT_VERSION "6.06"          /* perftest 4.5-0.17/0.18 (Debian 12) */
#define MR_PT_VERSION_LEN 16          /* MAX_VERSION in perftest_parameters.h */
#define MR_PT_MIN_PEER_VERSION 5.70   /* check_version_compatibility() */
#define MR_PT_KEY_LEN_GID 108         /* KEY_MSG_SIZE_GID */
#define MR_PT_KEY_LEN 59              /* KEY_MSG_SIZE (no GID index) */
#define MR_PT_MTU_LEN 2               /* peer version >= 5.31: sizeof(char[2]) */
#define MR_PT_DONE_LEN 5              /* sizeof "done" */
#define MR_PP_MSG_LEN 52              /* sizeof "0000:000000:000000:" + 32 hex digits */

/* One side's connection parameters (perftest's struct pingpong_dest). */
struct mr_pt_dest {
	uint16_t lid;       /* 0 on RoCE */
	uint32_t out_reads; /* max outstanding RDMA READ/atomic (responder resources) */
	uint32_t qpn;       /* 24 bits */
	uint32_t psn;       /* 24 bits: the sender's initial SQ PSN = peer's RQ PSN */
	uint32_t rkey;
	uint64_t vaddr;     /* remote address the peer targets (perftest: 2nd half of buffer) */
	uint8_t gid[16];
	uint32_t srqn;      /* XRC/DC only, else 0 */
};

/* Bandwidth report exchanged at the end of bw tests (struct bw_report_data, per-port off). */
struct mr_pt_bw_report {
	uint64_t size;
	uint64_t iters;
	double bw_peak;
	double bw_avg;
	double msg_rate;
};
#define MR_PT_BW_REPORT_STEPS 5       /* five 8-byte steps */

/* ibv_rc_pingpong's parameters ("%04x:%06x:%06x:%s", GID as 32 hex digits). */
struct mr_pp_dest {
	uint16_t lid;
	uint32_t qpn;
	uint32_t psn;
	uint8_t gid[16];
};

/* ---- codecs (exchange.c): no I/O ---- */

/* Version message: MR_PT_VERSION NUL-padded to MR_PT_VERSION_LEN. */
void mr_pt_version_encode(uint8_t out[MR_PT_VERSION_LEN]);
/* Parses a peer's version field into *ver (e.g. 6.06). -EINVAL if not NUL-terminated within
 * 16 bytes or not a number. */
int mr_pt_version_decode(const uint8_t in[MR_PT_VERSION_LEN], double *ver);

void mr_pt_u32_encode(uint32_t v, uint8_t out[4]);
uint32_t mr_pt_u32_decode(const uint8_t in[4]);
void mr_pt_u64_encode(uint64_t v, uint8_t out[8]);
uint64_t mr_pt_u64_decode(const uint8_t in[8]);
void mr_pt_double_encode(double v, uint8_t out[8]);
double mr_pt_double_decode(const uint8_t in[8]);

/* MTU step: mtu_bytes 256..4096 -> "N\0" with N the ibv_mtu enum. -EINVAL for other sizes. */
int mr_pt_mtu_encode(uint32_t mtu_bytes, uint8_t out[MR_PT_MTU_LEN]);
/* Returns the MTU in bytes (256..4096) or -EINVAL. */
int mr_pt_mtu_decode(const uint8_t in[MR_PT_MTU_LEN]);

/* Key record. with_gid selects the 108-byte (GID) or the 59-byte form. Returns the number of
 * bytes written (always the full fixed size, NUL included) or -EINVAL / -ENOSPC. */
int mr_pt_dest_encode(const struct mr_pt_dest *d, bool with_gid, char *out, size_t out_len);
/* Strict parse of one record of exactly MR_PT_KEY_LEN[_GID] bytes: every field hex of at most
 * its printed width, ':' separators, NUL after the last one. -EINVAL on any deviation. */
int mr_pt_dest_decode(const char *in, size_t len, bool with_gid, struct mr_pt_dest *d);

/* rc_pingpong message (52 bytes with the NUL). */
int mr_pp_dest_encode(const struct mr_pp_dest *d, char *out, size_t out_len);
int mr_pp_dest_decode(const char *in, size_t len, struct mr_pp_dest *d);

/* ---- the conversation over a connected TCP socket (exchange_io.c) ---- */

struct mr_pt_conn {
	int fd;
	bool client;          /* client writes first in every step */
	bool with_gid;        /* 108-byte records (a GID index is in use: always on RoCE) */
	int timeout_ms;       /* per read/write; <= 0 waits forever */
	double peer_version;  /* filled by mr_pt_preamble */
};

/* Local parameters and negotiated results of the preamble (steps 1-3). */
struct mr_pt_preamble {
	uint32_t cycle_buffer;    /* in: page size; out: max of both */
	uint32_t cache_line_size; /* in: 64; out: max of both */
	uint32_t mtu;             /* in: local active MTU bytes; out: min of both */
	/* in: the 16-byte version field to send instead of the stock one (mrperf's MetaRoCE
	 * offer after the NUL, negotiate.h); NULL = stock bytes. */
	const uint8_t *version_out;
	/* in: skip step 1 (perftest's --dont_xchg_versions); peer_version is then ours */
	bool skip_version;
	/* out: the peer's version field exactly as received */
	uint8_t peer_version_raw[MR_PT_VERSION_LEN];
};

/* Opens a listening socket on port (all IPv4 addresses, SO_REUSEADDR), accepts one client and
 * closes the listener: perftest's server. Returns the connected fd or -errno. *listening (may
 * be NULL) is called once the socket listens, so tests can start a client without races. */
int mr_pt_accept(uint16_t port, int timeout_ms, void (*listening)(void *arg, uint16_t port),
		 void *arg);
/* Connects to host:port (IPv4 or name), retrying until timeout_ms (perftest's client gives up at
 * once; retrying lets mrperf client start before its server). Returns fd or -errno. */
int mr_pt_connect(const char *host, uint16_t port, int timeout_ms);

/* One symmetric step: client writes mine then reads theirs; server the reverse. Exactly len
 * bytes each way, one write() for ours. -ETIMEDOUT, -ECONNRESET (peer closed), -errno. */
int mr_pt_xchg(struct mr_pt_conn *c, const void *mine, void *theirs, size_t len);

/* Steps 1-3. -EPROTO if the peer's version is < 5.70 or its MTU/sys data are malformed. */
int mr_pt_preamble(struct mr_pt_conn *c, struct mr_pt_preamble *p);
/* One key hand shake (perftest's ctx_hand_shake): -EPROTO if the peer's record is malformed. */
int mr_pt_hand_shake(struct mr_pt_conn *c, const struct mr_pt_dest *mine, struct mr_pt_dest *theirs);
/* End-of-test report exchange (xchg_bw_reports, peer version >= 5.33, no per-port data). */
int mr_pt_xchg_bw_report(struct mr_pt_conn *c, const struct mr_pt_bw_report *mine,
			 struct mr_pt_bw_report *theirs);
/* ctx_close_connection: a last hand shake, "done\0", close(fd). fd is -1 afterwards. */
int mr_pt_close(struct mr_pt_conn *c, const struct mr_pt_dest *mine, struct mr_pt_dest *theirs);

/* rc_pingpong: client writes its message, reads the server's, writes "done\0"; server reads,
 * (connects its QP,) writes, then waits for "done". Returns 0 or -errno / -EPROTO. */
int mr_pp_exchange(int fd, bool client, int timeout_ms, const struct mr_pp_dest *mine,
		   struct mr_pp_dest *theirs);
/* mr_pp_exchange with on_peer(arg, theirs) called as soon as the peer's message is decoded:
 * rc_pingpong's server connects its QP there, before it answers (pp_server_exch_dest), so the
 * client's first SEND finds it ready. A negative return from on_peer aborts with that value. */
int mr_pp_exchange_cb(int fd, bool client, int timeout_ms, const struct mr_pp_dest *mine,
		      struct mr_pp_dest *theirs,
		      int (*on_peer)(void *arg, const struct mr_pp_dest *theirs), void *arg);

/* ---- per-test barrier script (which hand shakes perftest 4.5 performs, in order) ---- */

enum mr_pt_test {
	MR_PT_WRITE_BW,
	MR_PT_READ_BW,
	MR_PT_SEND_BW,
	MR_PT_ATOMIC_BW,
	MR_PT_WRITE_LAT,
	MR_PT_READ_LAT,
	MR_PT_SEND_LAT,
	MR_PT_ATOMIC_LAT,
};

/* Setup hand shakes each test performs after the preamble, given the QP count; the QP index
 * whose record goes in each hand shake is written to qp_idx (up to max entries). Returns the
 * count (the sequence is the same on both sides) or -EINVAL / -ENOSPC. The transition to
 * RTR/RTS happens after `*connect_after` hand shakes (all tests connect once they know the
 * peer, and a later hand shake is the "peer is RTR" barrier). */
int mr_pt_setup_script(enum mr_pt_test t, unsigned num_qps, unsigned *qp_idx, unsigned max,
		       unsigned *connect_after);

/* What each side does after the measurement (perftest's main() tails), as flags. */
enum mr_pt_tail_flags {
	MR_PT_TAIL_SYNC_PER_SIZE_PRE = 1 << 0,  /* a hand shake before each message size */
	MR_PT_TAIL_SYNC_PER_SIZE_POST = 1 << 1, /* a hand shake after each size (send_bw -a) */
	MR_PT_TAIL_SERVER_PASSIVE = 1 << 2,     /* server runs no loop; waits in a hand shake */
	MR_PT_TAIL_REPORT_XCHG = 1 << 3,        /* hand shake + bw report from client to server */
	MR_PT_TAIL_CLOSE = 1 << 4,              /* mr_pt_close at the end */
	MR_PT_TAIL_SERVER_CLOSE_EARLY = 1 << 5, /* server closes right after setup (read/atomic lat) */
};
/* Tail behaviour for test t; run_all selects -a. */
unsigned mr_pt_tail_flags(enum mr_pt_test t, bool run_all);

#endif
