/* SPDX-License-Identifier: MIT
 * The shm server's backend in metaroced: PD/MR/CQ/QP calls from apps mapped 1:1 onto the RC
 * transport (stack/transport/rc.h), plus what only the daemon knows: its MAC, IP addresses and
 * GIDs, traffic class and UDP source-port entropy, which it puts into every QP's path.
 * DPDK-free (unit-tested without EAL). Single-threaded, like the transport ctx it wraps.
 */
#ifndef MR_DAEMON_BACKEND_H
#define MR_DAEMON_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "metaroce/metaroce.h"
#include "mrc_policy.h"
#include "shm/shm_server.h"
#include "transport/rc.h"

struct mr_backend_conf {
	struct mr_ctx *ctx;          /* the engine's transport context (not owned) */
	uint8_t mac[6];
	bool has_ipv4;
	uint8_t ipv4[4];
	bool has_ipv6;
	uint8_t ipv6[16];
	bool vlan;
	uint16_t vlan_tci;           /* PCP << 13 | VID */
	uint8_t tclass;              /* DSCP << 2 | ECN for RoCE data (A17.9.1) */
	uint16_t udp_sport_base;
	uint32_t ib_mtu;             /* active IB MTU (A17.4.1) */
	uint32_t max_qp, max_mr, max_cq;
	/* Congestion-control parameters given to a QP whose app asks for a CC (MRC_QP_TRANSPORT):
	 * line rate in bit/s (0: the link speed set with mr_backend_set_link_rate, else 10 Gb/s)
	 * and the base RTT estimate in ns (0: MR_BACKEND_DEFAULT_BASE_RTT_NS). */
	uint64_t line_rate_bps;
	uint64_t base_rtt_ns;
	/* Congestion control for plain RC QPs whose app did not choose one (no MRC_QP_TRANSPORT at
	 * INIT->RTR): DCQCN when the port has ECN on, as a ConnectX reaction point (issue 11). An
	 * app that passes MRC_QP_TRANSPORT with cc none disables it for its QP. */
	enum mr_cc_algo rc_default_cc;
	/* MetaRoCE for QPs whose app leaves MRC_QP_TRANSPORT out of INIT->RTR: toward a GID the
	 * policy matches they run MetaRoCE with its entropies and CC (mrc_policy.h); an app that
	 * states a transport, either one, always gets what it asked for. Zeroed: never. */
	struct mr_mrc_policy mrc_policy;
	/* Called when a QP gets a path, so that the engine resolves the peer's MAC before the first
	 * packet; may be NULL. */
	void (*on_path)(void *arg, const uint8_t dgid[16]);
	void *on_path_arg;
};

struct mr_backend;

/* NULL + errno (EINVAL: no ctx or no address; ENOMEM). */
struct mr_backend *mr_backend_create(const struct mr_backend_conf *conf);
/* Destroys the QPs the server left behind (normally none: destroy the server first). */
void mr_backend_destroy(struct mr_backend *be);
/* The ops table for struct mr_shm_server_params (backend pointer: the struct mr_backend). */
const struct mr_shm_backend_ops *mr_backend_ops(void);
void mr_backend_set_port_up(struct mr_backend *be, bool up);
/* The port state apps see (query_port): the link as the engine last followed it. */
bool mr_backend_port_up(const struct mr_backend *be);
#define MR_BACKEND_DEFAULT_LINE_RATE_BPS 10000000000ull
#define MR_BACKEND_DEFAULT_BASE_RTT_NS 50000ull
/* The port's link speed in bit/s (0 = unknown): the CC line rate unless conf.line_rate_bps. */
void mr_backend_set_link_rate(struct mr_backend *be, uint64_t bps);
/* The struct mr_cc_params a QP with the given path MTU and entropies gets (what
 * MRC_QP_TRANSPORT with a CC other than none is translated to). */
void mr_backend_cc_params(const struct mr_backend *be, uint32_t path_mtu, uint16_t n_paths,
			  struct mr_cc_params *p);

/* Our GIDs as query_port reports them: index 0 the IPv6 address (or the fe80:: EUI-64 link-local
 * one), index 1 the IPv4-mapped GID (as rxe). Returns the count. */
unsigned int mr_backend_gids(const struct mr_backend *be, uint8_t gid[MRC_MAX_GIDS][16]);
/* True if gid is one of ours (frames to it are looped back, never sent). */
bool mr_backend_is_local_gid(const struct mr_backend *be, const uint8_t gid[16]);

/* UDP source port of a QP (A17.3.3: fixed per flow, as rxe): base + a fold of the QPN pair into
 * [base, min(base + 0x4000, 65536)). */
uint16_t mr_backend_udp_sport(uint16_t base, uint32_t lqpn, uint32_t rqpn);
/* Build the QP's path from the app's (only dgid, ttl, tclass, flow_label and udp_sport are
 * taken; zero means "daemon default") and the daemon's own addressing. An IPv4-mapped dgid
 * selects IPv4 framing. -EAFNOSUPPORT if we have no address of the dgid's family, -EINVAL for an
 * unspecified or multicast dgid. */
int mr_backend_make_path(const struct mr_backend *be, const struct mrc_path *app, uint32_t lqpn,
			 uint32_t rqpn, struct mr_path *out);

/* Sum of every QP's counters, destroyed ones included. Returns the number of live QPs. */
unsigned int mr_backend_qp_stats_sum(const struct mr_backend *be, struct mr_qp_stats *sum);
/* QPs the [metaroce] peers policy made MetaRoCE (destroyed ones included). */
uint64_t mr_backend_policy_upgrades(const struct mr_backend *be);
/* QPs created since the backend was (destroyed ones included). */
uint64_t mr_backend_qps_created(const struct mr_backend *be);
/* Call fn for every live QP (stats dumps, `rdma stat qp` style). Returns the number visited. */
unsigned int mr_backend_qp_foreach(const struct mr_backend *be,
				   void (*fn)(void *arg, const struct mr_qp *qp), void *arg);

#endif
