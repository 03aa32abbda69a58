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

#define MR_CFG_MAX_LCORES 16
#define MR_CFG_STR 256

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
	uint8_t pcp;              /* 802.1Q priority for RoCE traffic */
	/* [roce] */
	uint8_t dscp;             /* RoCE data DSCP */
	uint8_t cnp_dscp;
	bool ecn;                 /* send ECT(0) */
	uint16_t udp_sport_base;  /* entropy base */
	/* [engine] */
	uint32_t lcores[MR_CFG_MAX_LCORES];
	unsigned int n_lcores;
	uint32_t idle_sleep_us;   /* 0 = pure busy polling */
	/* [limits] */
	uint32_t max_qp;
	uint32_t max_mr;
	uint32_t max_cq;
	uint32_t max_sessions;
	/* [shm] */
	char socket_path[MR_CFG_STR];
	/* [pcap] */
	char pcap_path[MR_CFG_STR];
	uint64_t pcap_max_bytes;
	/* [impair] (drivers/impair/impair.h spec strings; testing only: loss, reorder, ECN ...) */
	bool impair_en[MR_IMPAIR_NR_DIRS];
	char impair_spec[MR_IMPAIR_NR_DIRS][MR_CFG_STR];
	struct mr_impair_cfg impair[MR_IMPAIR_NR_DIRS];
};

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

#endif
