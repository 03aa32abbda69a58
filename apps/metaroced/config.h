/* SPDX-License-Identifier: MIT
 * metaroced configuration: an INI-style file (see configs/metaroced.conf).
 * Every error names the file, the line and the field ("section.key").
 */
#ifndef MR_DAEMON_CONFIG_H
#define MR_DAEMON_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "impair/impair.h"
#include "mrc_policy.h"

#define MR_CFG_MAX_LCORES 16
#define MR_CFG_STR 256
/* Derived [limits] max_inflight for ports whose frames cross a kernel socket ring (see
 * mr_config_max_inflight). Every unacknowledged packet sits in one of the socket rings (our tx
 * ring waiting for the kernel, the peer's rx ring waiting for its engine), so the sum over QPs
 * is both the rings' occupancy and their queueing delay, which must stay well under the ACK
 * timeout (perftest's 14: 67 ms) on a shared machine where the kernel drains maybe 50 kfps:
 * 64 QPs x 64 = 4096 packets. One QP still fills veth (64 KiB at IB MTU 1024 per RTT). */
#define MR_CFG_INFLIGHT_SOCKET 64u

struct mr_daemon_config {
	/* [port] */
	char eal_args[1024];      /* extra EAL arguments, e.g. "--vdev=net_af_packet0,iface=veth0" */
	uint16_t port_id;
	bool has_ipv4;
	uint8_t ipv4[4];
	bool has_ipv6;
	uint8_t ipv6[16];
	bool has_mac;             /* else the port's own MAC */
	uint8_t mac[6];
	uint32_t mtu;             /* Ethernet MTU (IP packet size) */
	uint32_t ib_mtu;          /* derived: largest IB MTU that fits, A17.4.1 */
	uint16_t vlan;            /* 0 = untagged */
	bool tx_warm;             /* net_memif: warm the transmit ring (drivers/dpdk/memif_warm.h) */
	uint8_t pcp;              /* 802.1Q priority for RoCE traffic */
	/* [roce] */
	uint8_t dscp;             /* RoCE data DSCP */
	uint8_t cnp_dscp;
	bool ecn;                 /* send ECT(0) */
	uint16_t udp_sport_base;  /* entropy base */
	uint32_t line_rate_gbps;  /* CC line rate for QPs that ask for a CC; 0 = link speed */
	uint32_t base_rtt_us;     /* CC base RTT estimate (BDP, delay target) */
	/* [engine] */
	uint32_t lcores[MR_CFG_MAX_LCORES];
	unsigned int n_lcores;
	uint32_t idle_sleep_us;   /* 0 = pure busy polling */
	bool idle_yield;          /* idle engine: sched_yield() between polls (engine.c) */
	uint32_t load_sleep_max_us; /* light-load sleep cap (engine.c load_sleep); 0 = off */
	/* [limits] */
	uint32_t max_qp;
	uint32_t max_mr;
	uint32_t max_cq;
	uint32_t max_sessions;
	/* Unacknowledged request packets per QP (mr_ctx_params.max_inflight_pkts); 0 = derived
	 * from the port: MR_CFG_INFLIGHT_SOCKET for kernel-socket PMDs (net_af_packet, af_xdp,
	 * tap, pcap: their ring, not a NIC, absorbs bursts), else the transport's default. */
	uint32_t max_inflight;
	/* Per-session quotas (each shard's shm server); 0 = derived, see
	 * mr_config_session_quotas(). */
	uint32_t session_max_qp, session_max_mr, session_max_cq, session_max_pd;
	uint64_t session_max_wr, session_max_inline;
	/* [shm] */
	char socket_path[MR_CFG_STR];
	/* [pcap] */
	char pcap_path[MR_CFG_STR];
	uint64_t pcap_max_bytes;
	/* [metaroce] peers / entropies / cc: MetaRoCE for QPs whose app names no transport */
	struct mr_mrc_policy mrc_policy;
	/* [impair] (drivers/impair/impair.h spec strings; testing only: loss, reorder, ECN ...) */
	bool impair_en[MR_IMPAIR_NR_DIRS];
	char impair_spec[MR_IMPAIR_NR_DIRS][MR_CFG_STR];
	struct mr_impair_cfg impair[MR_IMPAIR_NR_DIRS];
};

/* Default per-session WR budget (send + receive WRs of a session's QPs + its CQ entries):
 * the engine commits about 1 KiB per WR (transport WQE + shm ring entry), so 256 MiB: enough
 * for 16 QPs of 8192 + 8192 WRs, small enough that four such apps fit a small host. */
#define MR_CFG_SESSION_WR (1u << 18)
#define MR_CFG_SESSION_INLINE (64ull << 20) /* inline bytes (max_send_wr x max_inline_data) */

struct mr_session_quotas {
	uint32_t qp, mr, cq, pd;
	uint64_t wr, inline_bytes;
};

/* The quotas one app session gets: the [limits] session_* values, or by default half of the
 * shard's max_qp / max_mr / max_cq (PDs: half of max_mr), so that one app always leaves room
 * for others, MR_CFG_SESSION_WR WRs and MR_CFG_SESSION_INLINE inline bytes. */
void mr_config_session_quotas(const struct mr_daemon_config *cfg, struct mr_session_quotas *q);

/* Fill defaults (a valid config except for the address, which must be set). */
void mr_config_defaults(struct mr_daemon_config *cfg);

/* Parse text (name is used in messages). Returns 0, or -EINVAL with a message like
 * "metaroced.conf:7: port.mtu: 'abc' is not an integer in [576, 9216]" written to err. */
int mr_config_parse(struct mr_daemon_config *cfg, const char *name, const char *text,
		    char *err, size_t errlen);
int mr_config_load(struct mr_daemon_config *cfg, const char *path, char *err, size_t errlen);
/* Derived IB path MTU for an Ethernet MTU: IP+UDP+BTH+ext+ICRC must fit (A17.4.1). */
uint32_t mr_config_ib_mtu(uint32_t eth_mtu);
/* Set the impairment of one direction from an mr_impair_cfg_parse spec ("loss=0.01,seed=7"),
 * parsed on top of the defaults and range-checked; an empty spec or "off" disables it. origin
 * names where the spec came from in messages ("metaroced.conf:14: impair.rx" or "--impair-rx"):
 * "ORIGIN: loss: 2 is outside [0, 1]". Returns 0 or -EINVAL (cfg unchanged). */
int mr_config_set_impair(struct mr_daemon_config *cfg, enum mr_impair_dir dir, const char *spec,
			 const char *origin, char *err, size_t errlen);
void mr_config_print(const struct mr_daemon_config *cfg, FILE *f);
/* The per-QP in-flight cap for a port driven by driver (an ethdev driver name, may be NULL):
 * cfg->max_inflight if set, MR_CFG_INFLIGHT_SOCKET for kernel-socket PMDs, else 0 (the
 * transport's default). */
uint32_t mr_config_max_inflight(const struct mr_daemon_config *cfg, const char *driver);

#endif
