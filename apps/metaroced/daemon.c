/* SPDX-License-Identifier: MIT
 * metaroced: the poll-mode RoCE v2 daemon (metaroced.c runs it; embed.c runs it inside an app). One DPDK port, one engine lcore per [engine] lcores
 * entry (a shard: its own RC transport ctx with a disjoint QPN range, backend, shm server,
 * timers and counters; no locks on the data path), ARP/ND for its own addresses, and the
 * shared-memory server apps connect to. With one lcore the engine also serves the socket and
 * the statistics; with several, a control thread does (control.c) and shard 0 does the port
 * I/O for all (shard.c).
 *
 *   metaroced -c FILE [--pcap FILE] [--pcap-max-bytes N] [--idle-sleep-us N] [--socket PATH]
 *             [--stats-every SEC] [--stats-json FILE] [--impair-rx SPEC] [--impair-tx SPEC]
 *             [-v...] [-- EAL args...]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "backend.h"
#include "config.h"
#include "control.h"
#include "daemon.h"
#include "dpdk/dpdk_port.h"
#include "dpdk/neigh.h"
#include "dpdk/tclass.h"
#include "log.h"
#include "wire/pcap_file.h"
#include "shm/shm_server.h"
#include "stats_server.h"
#include "stats_telemetry.h"
#include "transport/rc.h"

#define MAX_EAL_ARGS 64
#define TXPOOL_SIZE 8191     /* 2^n - 1 is the most memory-efficient mempool size */
#define TXPOOL_CACHE 256

static volatile sig_atomic_t g_stop;
static volatile sig_atomic_t g_dump;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		g_dump = 1;
	else
		g_stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: metaroced -c FILE [--pcap FILE] [--pcap-max-bytes N] "
		"[--idle-sleep-us N] [--socket PATH] [--stats-every SEC] [--stats-json FILE]\n"
		"                 [--impair-rx SPEC] [--impair-tx SPEC] [--telemetry] [-v] [-- EAL args...]\n"
		"  --impair-rx/--impair-tx: impair received/sent frames (testing), SPEC as\n"
		"  \"loss=0.01,burst=4,reorder=0.02:20us,dup=0.001,corrupt=1e-4,delay=10us,jitter=2us,\n"
		"  ecn=rate:10g,k:64k,seed=7\" (overrides [impair] rx/tx; seeded, reproducible).\n"
		"  --stats-json FILE: write the counters as JSON on SIGUSR1 and at exit.\n"
		"  --telemetry: DPDK telemetry on (dpdk-telemetry.py -f mr<pid>: /ethdev/stats,0,\n"
		"  /metaroce/port, /metaroce/link); counters also over SOCKET.stats (mrstat).\n"
		"  EAL always gets --no-pci --no-telemetry (unless --telemetry) --in-memory\n"
		"  (--no-shconf with --no-huge)\n"
		"  --file-prefix=mr<pid> --log-level=lib.eal:error, then [port] eal_args, then yours.\n"
		"  SIGUSR1 prints statistics (and writes --stats-json); SIGINT/SIGTERM stop cleanly.\n");
}

struct eal_argv {
	char *argv[MAX_EAL_ARGS];
	int argc;
	char store[4096];
	size_t used;
};

static int eal_add(struct eal_argv *e, const char *s)
{
	size_t n = strlen(s) + 1;

	if (e->argc >= MAX_EAL_ARGS - 1 || n > sizeof(e->store) - e->used)
		return -E2BIG;
	memcpy(e->store + e->used, s, n);
	e->argv[e->argc++] = e->store + e->used;
	e->used += n;
	e->argv[e->argc] = NULL;
	return 0;
}

static bool has_arg(char *const *v, int n, const char *prefix)
{
	int i;

	for (i = 0; i < n; i++)
		if (strncmp(v[i], prefix, strlen(prefix)) == 0)
			return true;
	return false;
}

/* EAL arguments: our fixed ones, the config's eal_args (split on blanks), then the CLI's. */
static int build_eal_args(struct eal_argv *e, const struct mr_daemon_config *cfg, char **extra,
			  int nextra, bool telemetry)
{
	char cfgargs[sizeof(cfg->eal_args)], *tok, *save = NULL;
	char *split[MAX_EAL_ARGS];
	int nsplit = 0, rc = 0, i;
	char buf[MR_CFG_MAX_LCORES * 12];
	bool nohuge;

	snprintf(cfgargs, sizeof(cfgargs), "%s", cfg->eal_args);
	for (tok = strtok_r(cfgargs, " \t", &save); tok != NULL && nsplit < MAX_EAL_ARGS;
	     tok = strtok_r(NULL, " \t", &save))
		split[nsplit++] = tok;
	nohuge = has_arg(split, nsplit, "--no-huge") || has_arg(extra, nextra, "--no-huge");
	rc |= eal_add(e, "metaroced");
	rc |= eal_add(e, "--no-pci");
	if (!telemetry)
		rc |= eal_add(e, "--no-telemetry");
	/* --in-memory cannot be combined with --no-huge (measured, DESIGN.md). */
	rc |= eal_add(e, nohuge ? "--no-shconf" : "--in-memory");
	if (!has_arg(split, nsplit, "--file-prefix") && !has_arg(extra, nextra, "--file-prefix")) {
		snprintf(buf, sizeof(buf), "--file-prefix=mr%ld", (long)getpid());
		rc |= eal_add(e, buf);
	}
	if (!has_arg(split, nsplit, "--log-level") && !has_arg(extra, nextra, "--log-level"))
		rc |= eal_add(e, "--log-level=lib.eal:error");
	if (!has_arg(split, nsplit, "-l") && !has_arg(extra, nextra, "-l") &&
	    !has_arg(split, nsplit, "--lcores") && !has_arg(extra, nextra, "--lcores") &&
	    !has_arg(split, nsplit, "-c") && !has_arg(extra, nextra, "-c")) {
		/* Lcore ids = the configured CPU ids; the first one is the main lcore (shard 0,
		 * the I/O shard; the control thread shares its CPU). */
		size_t off = 0;
		unsigned int k;

		for (k = 0; k < cfg->n_lcores && off < sizeof(buf); k++)
			off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%" PRIu32,
						k ? "," : "", cfg->lcores[k]);
		if (off >= sizeof(buf))
			return -E2BIG;
		rc |= eal_add(e, "-l");
		rc |= eal_add(e, buf);
		if (cfg->n_lcores > 1) {
			snprintf(buf, sizeof(buf), "%" PRIu32, cfg->lcores[0]);
			rc |= eal_add(e, "--main-lcore");
			rc |= eal_add(e, buf);
		}
	}
	for (i = 0; i < nsplit; i++)
		rc |= eal_add(e, split[i]);
	for (i = 0; i < nextra; i++)
		rc |= eal_add(e, extra[i]);
	return rc ? -E2BIG : 0;
}

/* A memif server's filesystem socket (socket-abstract=no) left by a process that ended without
 * closing its port (killed, or an embedded engine: mrd_finish) makes the next bind fail: remove
 * it when nothing listens on it any more (connect refused). arg: one EAL argument ("--vdev=..."
 * or "--vdev" followed by next). */
static void unlink_stale_memif(const char *arg, const char *next)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	const char *v = NULL, *p, *e;
	size_t n;
	int fd;

	if (strncmp(arg, "--vdev=", 7) == 0)
		v = arg + 7;
	else if ((strcmp(arg, "--vdev") == 0 || strcmp(arg, "-vdev") == 0) && next != NULL)
		v = next;
	if (v == NULL || strncmp(v, "net_memif", 9) != 0 || strstr(v, "role=server") == NULL ||
	    strstr(v, "socket-abstract=no") == NULL || (p = strstr(v, ",socket=")) == NULL)
		return;
	p += 8;
	e = strchr(p, ',');
	n = e != NULL ? (size_t)(e - p) : strlen(p);
	if (n == 0 || n >= sizeof(a.sun_path))
		return;
	memcpy(a.sun_path, p, n);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 && errno == ECONNREFUSED &&
	    unlink(a.sun_path) == 0)
		mr_log(MR_LOG_INFO, "removed the stale memif socket %s (nothing listened on it)",
		       a.sun_path);
	close(fd);
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end != '\0' || v > max || s[0] == '-')
		return -EINVAL;
	*out = v;
	return 0;
}

/* The socket's directory (e.g. /run/metaroce) may not exist yet. */
static void make_parent_dir(const char *path)
{
	char dir[PATH_MAX];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash == NULL || slash == dir)
		return;
	*slash = '\0';
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		mr_log(MR_LOG_WARN, "mkdir %s: %s", dir, strerror(errno));
}

/* Frames that may sit in the shards' rx rings: room for them in the port's mbuf pool (the
 * ring holds the received mbufs themselves). The port's own default, plus that. */
#define SHARD_RX_MBUFS 2048u

/* The port, the tx pool, the neighbour table and the impairment stages: shard 0's (the I/O
 * shard's) objects. */
static int setup_io(struct mr_daemon *d, unsigned int nshards)
{
	const struct mr_daemon_config *c = &d->cfg;
	struct mr_dpdk_port_conf pc = {0};
	struct mr_neigh_conf nc = {0};
	struct mr_tclass_map tm;
	int tci = 0;

	mr_tclass_defaults(&tm);
	if (mr_tclass_set(&tm, MR_TC_ROCE, c->dscp, c->pcp, c->ecn) < 0 ||
	    mr_tclass_set(&tm, MR_TC_CNP, c->cnp_dscp, 6, false) < 0) {
		mr_log(MR_LOG_ERR, "bad traffic class (dscp %u cnp_dscp %u pcp %u)", c->dscp,
		       c->cnp_dscp, c->pcp);
		return -EINVAL;
	}
	if (c->vlan)
		tci = mr_tclass_vlan_tci(&tm, MR_TC_ROCE, c->vlan);

	pc.port_id = c->port_id;
	pc.nb_queues = 1;
	pc.mtu = (uint16_t)(c->mtu > MR_DPDK_MTU_MAX ? MR_DPDK_MTU_MAX : c->mtu);
	pc.mac = c->has_mac ? c->mac : NULL;
	pc.promiscuous = true;       /* af_packet on a shared segment; filtered in engine_rx.c */
	pc.allmulticast = c->has_ipv6;
	pc.no_tx_warm = !c->tx_warm;
	if (nshards > 1)
		/* dpdk_port.c's default (1024 rx + 1024 tx descriptors + a 32-frame tx buffer,
		 * 256 cached per lcore, 2048 spare) plus the frames in the shards' rx rings. */
		pc.nb_mbufs = 1024 + 1024 + 32 + rte_lcore_count() * 256 + 2048 +
			      (nshards - 1) * SHARD_RX_MBUFS;
	d->port = mr_dpdk_port_open(&pc);
	if (d->port == NULL) {
		mr_log(MR_LOG_ERR, "port %u: %s (check [port] eal_args, e.g. "
		       "--vdev=net_af_packet0,iface=IFNAME)", c->port_id, strerror(errno));
		return -errno;
	}
	mr_dpdk_port_mac(d->port, d->mac);
	d->max_frame = mr_dpdk_port_max_frame(d->port);
	/* IPv4 header checksums by the port where it offers to (engine_tx.c tx_tmpl). */
	d->tx_csum_offload = (mr_dpdk_port_caps(d->port) & MR_DPDK_CAP_TX_IPV4_CKSUM) != 0;
	mr_log(MR_LOG_INFO, "port %u: IPv4 header checksum %s", c->port_id,
	       !d->tx_csum_offload ? "computed in software" :
	       c->pcap_path[0] != '\0' ? "offered by the port, computed in software while capturing" :
					 "offloaded to the port");
	/* The largest RoCE frame (A17.4.1: IB MTU payload + IP/UDP/BTH/RETH/ImmDt/ICRC, the 84
	 * bytes mr_config_ib_mtu counts, + Ethernet and a VLAN tag) must fit the port's frame
	 * (af_packet: its ring slot, memif: its buffer, which may be smaller than port.mtu
	 * allows). */
	if (c->ib_mtu + 84 + 14 + (c->vlan ? 4 : 0) > d->max_frame) {
		mr_log(MR_LOG_ERR, "port %u: frames of IB MTU %u (port.mtu %u) do not fit the "
		       "port's %u-byte frames (net_af_packet: raise framesz; net_memif: raise "
		       "bsize)", c->port_id, c->ib_mtu, c->mtu, d->max_frame);
		return -EINVAL;
	}
	d->txpool = rte_pktmbuf_pool_create("mrd_tx", TXPOOL_SIZE, TXPOOL_CACHE, 0,
					    (uint16_t)(RTE_PKTMBUF_HEADROOM + d->max_frame),
					    (int)rte_socket_id());
	if (d->txpool == NULL) {
		mr_log(MR_LOG_ERR, "tx mbuf pool: %s", rte_strerror(rte_errno));
		return -ENOMEM;
	}

	memcpy(nc.mac, d->mac, 6);
	nc.ipv4_en = c->has_ipv4;
	memcpy(nc.ipv4, c->ipv4, 4);
	nc.ipv6_en = c->has_ipv6;
	memcpy(nc.ipv6, c->ipv6, 16);
	nc.vlan = c->vlan != 0;
	nc.vlan_tci = (uint16_t)tci;
	d->neigh = mr_neigh_create(&nc);
	if (d->neigh == NULL) {
		mr_log(MR_LOG_ERR, "neighbour table: %s", strerror(errno));
		return -errno;
	}
	if (c->has_ipv6) {
		uint8_t mcs[2][6], sn[16];
		static const uint8_t all_nodes[16] = {0xff, 2, [15] = 1};

		mr_neigh_solicited_node(c->ipv6, sn);
		mr_neigh_ipv6_mcast_mac(sn, mcs[0]);
		mr_neigh_ipv6_mcast_mac(all_nodes, mcs[1]);
		mr_dpdk_port_set_mcast(d->port, (const uint8_t (*)[6])mcs, 2);
	}
	if (mr_engine_impair_setup(d) < 0) {
		mr_log(MR_LOG_ERR, "impairment: %s", strerror(errno));
		return -ENOMEM;
	}
	if (d->imp[MR_IMPAIR_RX] != NULL || d->imp[MR_IMPAIR_TX] != NULL)
		mr_log(MR_LOG_WARN, "impairment on: rx %s, tx %s",
		       d->imp[MR_IMPAIR_RX] != NULL ? c->impair_spec[MR_IMPAIR_RX] : "off",
		       d->imp[MR_IMPAIR_TX] != NULL ? c->impair_spec[MR_IMPAIR_TX] : "off");
	return 0;
}

static bool g_embedded; /* mrd_start: the engine runs on the app's own thread */

/* One shard's transport ctx, backend and shm server (bound to the socket path when it is the
 * only shard, else fed by the control thread). io: shard 0, whose port, pool, MAC and frame size
 * every shard shares (read-only after setup). */
static int setup_engine(struct mr_daemon *d, const struct mr_daemon *io)
{
	const struct mr_daemon_config *c = &d->cfg;
	struct mr_ctx_params cp = {0};
	struct mr_backend_conf bc = {0};
	struct mr_shm_server_params sp = {0};
	struct mr_tclass_map tm;
	struct mr_dpdk_link link = {0};
	int tos, tci = 0;

	mr_tclass_defaults(&tm);
	(void)mr_tclass_set(&tm, MR_TC_ROCE, c->dscp, c->pcp, c->ecn); /* checked by setup_io */
	/* A17.9.1: RoCE data ECN-capable with ECT(0) when configured. */
	tos = mr_tclass_tos(&tm, MR_TC_ROCE);
	if (c->vlan)
		tci = mr_tclass_vlan_tci(&tm, MR_TC_ROCE, c->vlan);
	memcpy(d->mac, io->mac, 6);
	d->max_frame = io->max_frame;
	d->txpool = io->txpool;
	d->scratch = malloc(d->max_frame);
	d->snap.qps = calloc(c->max_qp, sizeof(*d->snap.qps));
	if (d->scratch == NULL || d->snap.qps == NULL)
		return -ENOMEM;

	cp.max_qp = c->max_qp;
	/* Disjoint QPN ranges: the owner of a frame is its DestQP's range (shard_map.h). */
	cp.first_qpn = mr_shard_first_qpn(&d->map, d->shard_id);
	cp.max_mr = c->max_mr;
	cp.max_mtu = c->ib_mtu; /* path MTUs above the port's are refused at modify_qp */
	/* ECN on: the notification point for every QP, as ConnectX with ECN enabled. */
	cp.cnp_all_qps = c->ecn;
	cp.seed = ((uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ mr_now_ns()) +
		  d->shard_id * 0x5851f42d4c957f2dull;
	{
		struct rte_eth_dev_info di;
		const char *drv = rte_eth_dev_info_get(mr_dpdk_port_id(io->port), &di) == 0 ?
					  di.driver_name : NULL;

		/* Bounded windows on kernel-socket ports (config.h, [limits] max_inflight). */
		cp.max_inflight_pkts = mr_config_max_inflight(c, drv);
		if (d->shard_id == 0)
			mr_log(MR_LOG_INFO, "port %u driver %s: max_inflight %u packets per QP%s",
			       c->port_id, drv != NULL ? drv : "?", cp.max_inflight_pkts,
			       cp.max_inflight_pkts == 0 ? " (transport default)" :
			       c->max_inflight == 0 ? " (derived)" : "");
	}
	d->ctx = mr_ctx_create(&cp);
	if (d->ctx == NULL) {
		mr_log(MR_LOG_ERR, "transport: %s", strerror(errno));
		return -errno;
	}

	bc.ctx = d->ctx;
	memcpy(bc.mac, d->mac, 6);
	bc.has_ipv4 = c->has_ipv4;
	memcpy(bc.ipv4, c->ipv4, 4);
	bc.has_ipv6 = c->has_ipv6;
	memcpy(bc.ipv6, c->ipv6, 16);
	bc.vlan = c->vlan != 0;
	bc.vlan_tci = (uint16_t)tci;
	bc.tclass = (uint8_t)tos;
	bc.udp_sport_base = c->udp_sport_base;
	bc.ib_mtu = c->ib_mtu;
	bc.max_qp = c->max_qp;
	bc.max_mr = c->max_mr;
	bc.max_cq = c->max_cq;
	bc.line_rate_bps = (uint64_t)c->line_rate_gbps * 1000000000ull;
	bc.base_rtt_ns = (uint64_t)c->base_rtt_us * 1000ull;
	bc.rc_default_cc = c->ecn ? MR_CC_DCQCN : MR_CC_NONE;
	bc.mrc_policy = c->mrc_policy;
	/* Early MAC resolution needs the neighbour table, which only shard 0 touches; other
	 * shards' first frames wait in shard 0's held queue instead. */
	bc.on_path = d->shard_id == 0 ? mr_engine_resolve : NULL;
	bc.on_path_arg = d;
	d->be = mr_backend_create(&bc);
	if (d->be == NULL) {
		mr_log(MR_LOG_ERR, "backend: %s", strerror(errno));
		return -errno;
	}
	mr_dpdk_port_link(io->port, d->shard_id == 0 ? 1000 : 0, &link);
	mr_backend_set_port_up(d->be, link.up);
	mr_backend_set_link_rate(d->be, (uint64_t)link.speed_mbps * 1000000ull);
	if (!link.up && d->shard_id == 0)
		mr_log(MR_LOG_WARN, "port %u: link down", c->port_id);

	sp.sock_path = d->sock_path;
	sp.ops = mr_backend_ops();
	sp.backend = d->be;
	sp.max_sessions = c->max_sessions;
	/* The fence-free doorbell: its barrier costs the thread that polls, which in an
	 * embedded engine is the app's own (shm_server.h). */
	sp.db_asym = !g_embedded;
	{
		struct mr_session_quotas q;

		/* One app cannot take the whole shard (issue 8: per-session quotas). */
		mr_config_session_quotas(c, &q);
		sp.max_session_qp = q.qp;
		sp.max_session_mr = q.mr;
		sp.max_session_cq = q.cq;
		sp.max_session_pd = q.pd;
		sp.max_session_wr = q.wr;
		sp.max_session_inline = q.inline_bytes;
	}
	if (d->nshards == 1) {
		make_parent_dir(d->sock_path);
		d->srv = mr_shm_server_create(&sp);
	} else {
		d->srv = mr_shm_server_create_unbound(&sp);
	}
	if (d->srv == NULL) {
		mr_log(MR_LOG_ERR, "shm server on %s: %s", d->sock_path, strerror(errno));
		return -errno;
	}
	return 0;
}

/* RFC 5227 3: announce our address so that peers' caches learn our MAC at once. */
static void announce(struct mr_daemon *d)
{
	const struct mr_daemon_config *c = &d->cfg;
	struct mr_dpdk_link link = {0};
	int len;

	len = c->has_ipv4 ? mr_neigh_gratuitous_arp(d->neigh, d->scratch, d->max_frame) :
			    mr_neigh_unsolicited_na(d->neigh, d->scratch, d->max_frame);
	if (len > 0) {
		mr_engine_tx_copy(d, d->scratch, (uint32_t)len);
		mr_dpdk_port_tx_flush(d->port, 0);
	}
	mr_dpdk_port_link(d->port, 0, &link);
	mr_log(MR_LOG_INFO, "port %u up=%d mac %02x:%02x:%02x:%02x:%02x:%02x ib_mtu %u socket %s",
	       c->port_id, link.up, d->mac[0], d->mac[1], d->mac[2], d->mac[3], d->mac[4],
	       d->mac[5], c->ib_mtu, d->sock_path);
	if (c->mrc_policy.n > 0) {
		char peers[512];

		mr_mrc_policy_format(&c->mrc_policy, peers, sizeof(peers));
		mr_log(MR_LOG_INFO, "MetaRoCE for QPs whose app names no transport toward %s "
		       "(%u entropies, cc %s)", peers, c->mrc_policy.n_entropies,
		       mr_mrc_policy_cc_name(c->mrc_policy.cc));
	}
}

/* The EAL lcore of every shard: the configured CPU ids when EAL got them (our -l), else the
 * main lcore and then the workers in order (the user passed -l/--lcores in eal_args). */
static int map_lcores(struct mr_daemon **sh, unsigned int n, const struct mr_daemon_config *c)
{
	unsigned int i, lc;
	bool ours = rte_get_main_lcore() == c->lcores[0];

	for (i = 1; ours && i < n; i++)
		ours = c->lcores[i] < RTE_MAX_LCORE && rte_lcore_is_enabled(c->lcores[i]);
	if (ours) {
		for (i = 0; i < n; i++)
			sh[i]->lcore = c->lcores[i];
		return 0;
	}
	if (rte_lcore_count() < n) {
		mr_log(MR_LOG_ERR, "engine.lcores lists %u lcores but EAL runs %u (check -l/--lcores "
		       "in port.eal_args)", n, rte_lcore_count());
		return -EINVAL;
	}
	sh[0]->lcore = rte_get_main_lcore();
	i = 1;
	RTE_LCORE_FOREACH_WORKER(lc) {
		if (i >= n)
			break;
		sh[i++]->lcore = lc;
	}
	return 0;
}

/* All shards: shard 0 (d0, already holding cfg and options) plus copies for the others. */
static int setup(struct mr_daemon **sh, unsigned int n, int *lsock)
{
	struct mr_daemon *d0 = sh[0];
	unsigned int i;
	int rc;

	if (map_lcores(sh, n, &d0->cfg) < 0)
		return -EINVAL;
	rc = setup_io(d0, n);
	if (rc < 0)
		return rc;
	for (i = 0; i < n; i++) {
		struct mr_daemon *d = sh[i];

		if (i > 0) {
			/* Shared read-only settings; the I/O objects stay shard 0's alone. */
			d->cfg = d0->cfg;
			d->sock_path = d0->sock_path;
			d->idle_sleep_us = d0->idle_sleep_us;
			d->load_sleep_max_us = d0->load_sleep_max_us;
			d->idle_yield = d0->idle_yield;
			d->ctl_every = d0->ctl_every;
			d->stop = d0->stop;
			d->stats_json = d0->stats_json;
		}
		d->shard_id = i;
		d->nshards = n;
		d->all = sh;
		d->map = d0->map;
		rc = setup_engine(d, d0);
		if (rc < 0)
			return rc;
		/* The control thread prints the statistics (and serves the stats socket). */
		d->dump = NULL;
		d->stats_every_ns = 0;
		if (n == 1)
			continue;
		if (i > 0 && mr_shard_rings_create(d) < 0)
			return -ENOMEM;
		{
			char name[RTE_RING_NAMESIZE];

			snprintf(name, sizeof(name), "mrd_fd%u", i);
			d->fd_ring = rte_ring_create(name, 64, (int)rte_socket_id(),
						     RING_F_SP_ENQ | RING_F_SC_DEQ);
			if (d->fd_ring == NULL)
				return -ENOMEM;
		}
	}
	if (n > 1) {
		make_parent_dir(d0->sock_path);
		*lsock = mr_shm_listen(d0->sock_path, 0);
		if (*lsock < 0) {
			mr_log(MR_LOG_ERR, "shm socket %s: %s", d0->sock_path, strerror(-*lsock));
			return *lsock;
		}
		mr_log(MR_LOG_INFO, "%u engine shards: lcores %u..., QPNs %u + shard x %u", n,
		       sh[0]->lcore, d0->map.first_qpn, d0->map.qp_per_shard);
	}
	announce(d0);
	return 0;
}

static void teardown(struct mr_daemon **sh, unsigned int n, int lsock)
{
	struct mr_daemon *d0 = sh[0];
	unsigned int i;

	if (lsock >= 0) {
		close(lsock);
		unlink(d0->sock_path);
	}
	mr_engine_impair_teardown(d0);
	/* Servers first: they reclaim every session (QPs to ERR, then destroyed) through the
	 * backend while the transport still exists (and the bound one unlinks the socket file). */
	for (i = 0; i < n; i++)
		if (sh[i]->srv != NULL)
			mr_shm_server_destroy(sh[i]->srv);
	/* Mbufs in the rings come from the port's pool or the tx pool: freed before those. */
	for (i = 0; i < n; i++)
		mr_shard_rings_free(sh[i]);
	if (d0->port != NULL)
		mr_dpdk_port_tx_flush(d0->port, 0);
	mr_engine_free_held(d0);
	for (i = 0; i < n; i++) {
		mr_backend_destroy(sh[i]->be);
		if (sh[i]->ctx != NULL)
			mr_ctx_destroy(sh[i]->ctx);
		free(sh[i]->scratch);
		free(sh[i]->snap.qps);
	}
	mr_neigh_destroy(d0->neigh);
	mr_dpdk_port_close(d0->port);
	if (d0->txpool != NULL)
		rte_mempool_free(d0->txpool);
	if (d0->pcap != NULL)
		mr_pcap_writer_close(d0->pcap);
}

static int shard_main(void *arg)
{
	return mr_engine_run(arg);
}

/* The process's daemon (one per process): shard 0, the other shards, the control thread. */
static struct mr_daemon d, shard_store[MR_CFG_MAX_LCORES - 1];
static struct mr_daemon *sh[MR_CFG_MAX_LCORES];
static struct mr_control ctl;
static struct eal_argv eal;
static unsigned int nsh;
static int lsock = -1;
static const char *g_stats_json;
int mrd_start(int argc, char **argv, bool embedded)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"pcap", required_argument, NULL, 'p'},
		{"pcap-max-bytes", required_argument, NULL, 'm'},
		{"idle-sleep-us", required_argument, NULL, 'i'},
		{"socket", required_argument, NULL, 's'},
		{"stats-every", required_argument, NULL, 'S'},
		{"stats-json", required_argument, NULL, 'J'},
		{"impair-rx", required_argument, NULL, 'R'},
		{"impair-tx", required_argument, NULL, 'T'},
		{"telemetry", no_argument, NULL, 'E'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	unsigned int k;
	const char *cfg_path = NULL, *pcap_path = NULL, *sock = NULL, *stats_json = NULL;
	const char *impair_spec[MR_IMPAIR_NR_DIRS] = {NULL, NULL};
	int64_t idle_us = -1, pcap_max = -1;
	uint64_t v, stats_every = 0;
	int verbose = 0, opt, rc, nextra = 0, i;
	bool telemetry = false;
	char err[512], **extra = NULL;
	struct sigaction sa;

	g_embedded = embedded;
	optind = 0; /* embedded: the app may have run getopt already (0: glibc starts afresh) */
	while ((opt = getopt_long(argc, argv, "+c:vh", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			cfg_path = optarg;
			break;
		case 'p':
			pcap_path = optarg;
			break;
		case 'm':
			if (parse_u64(optarg, UINT64_MAX / 2, &v) < 0)
				goto bad_value;
			pcap_max = (int64_t)v;
			break;
		case 'i':
			if (parse_u64(optarg, 1000000, &v) < 0)
				goto bad_value;
			idle_us = (int64_t)v;
			break;
		case 's':
			sock = optarg;
			break;
		case 'S':
			if (parse_u64(optarg, 86400, &v) < 0)
				goto bad_value;
			stats_every = v;
			break;
		case 'J':
			stats_json = optarg;
			break;
		case 'R':
			impair_spec[MR_IMPAIR_RX] = optarg;
			break;
		case 'T':
			impair_spec[MR_IMPAIR_TX] = optarg;
			break;
		case 'v':
			verbose++;
			break;
		case 'E':
			telemetry = true;
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			usage(stderr);
			return 2;
		}
		continue;
bad_value:
		fprintf(stderr, "metaroced: bad value '%s' for --%s\n", optarg,
			opt == 'm' ? "pcap-max-bytes" : opt == 'i' ? "idle-sleep-us" : "stats-every");
		return 2;
	}
	if (cfg_path == NULL) {
		usage(stderr);
		return 2;
	}
	if (optind < argc) {
		extra = argv + optind;
		nextra = argc - optind;
	}
	mr_log_set_level(verbose >= 2 ? MR_LOG_DEBUG : verbose == 1 ? MR_LOG_INFO : MR_LOG_WARN);
	mr_config_defaults(&d.cfg);
	if (mr_config_load(&d.cfg, cfg_path, err, sizeof(err)) < 0) {
		fprintf(stderr, "metaroced: %s\n", err);
		return 2;
	}
	/* The command line overrides the file's [impair] per direction. */
	for (i = 0; i < MR_IMPAIR_NR_DIRS; i++) {
		if (impair_spec[i] != NULL &&
		    mr_config_set_impair(&d.cfg, (enum mr_impair_dir)i, impair_spec[i],
					 i == MR_IMPAIR_RX ? "--impair-rx" : "--impair-tx", err,
					 sizeof(err)) < 0) {
			fprintf(stderr, "metaroced: %s\n", err);
			return 2;
		}
	}
	if (embedded && d.cfg.n_lcores > 1) {
		fprintf(stderr, "metaroced: %s: engine.lcores lists %u lcores; an embedded engine "
			"runs one shard, in the app's thread\n", cfg_path, d.cfg.n_lcores);
		return 2;
	}
	if (!d.cfg.has_ipv4 && !d.cfg.has_ipv6) {
		fprintf(stderr, "metaroced: %s: [port] needs ipv4 or ipv6\n", cfg_path);
		return 2;
	}
	d.sock_path = sock != NULL ? sock : d.cfg.socket_path;
	d.idle_sleep_us = idle_us >= 0 ? (uint32_t)idle_us : d.cfg.idle_sleep_us;
	d.idle_yield = d.cfg.idle_yield;
	d.load_sleep_max_us = d.cfg.load_sleep_max_us;
	d.ctl_every = 64;
	d.stats_every_ns = stats_every * 1000000000ull;
	d.stop = &g_stop;
	d.dump = &g_dump;
	d.stats_json = stats_json;
	rc = mr_shard_map_init(&d.map, MR_SHARD_FIRST_QPN, d.cfg.max_qp, d.cfg.n_lcores);
	if (rc < 0) {
		fprintf(stderr, "metaroced: %s: limits.max_qp %u x engine.lcores %u QPNs do not fit "
			"the 24-bit QPN space (IBA 9.2)\n", cfg_path, d.cfg.max_qp, d.cfg.n_lcores);
		return 2;
	}
	if (pcap_path == NULL && d.cfg.pcap_path[0] != '\0')
		pcap_path = d.cfg.pcap_path;

	if (build_eal_args(&eal, &d.cfg, extra, nextra, telemetry) < 0) {
		fprintf(stderr, "metaroced: too many EAL arguments\n");
		return 2;
	}
	if (verbose) {
		fprintf(stderr, "metaroced: EAL args:");
		for (i = 0; i < eal.argc; i++)
			fprintf(stderr, " %s", eal.argv[i]);
		fprintf(stderr, "\n");
	}
	for (i = 0; i < eal.argc; i++)
		unlink_stale_memif(eal.argv[i], i + 1 < eal.argc ? eal.argv[i + 1] : NULL);
	if (rte_eal_init(eal.argc, eal.argv) < 0) {
		fprintf(stderr, "metaroced: EAL init failed: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	mr_clock_init();
	if (telemetry && mr_stats_telemetry_init() < 0)
		mr_log(MR_LOG_WARN, "telemetry: cannot register /metaroce/ commands");
	/* Embedded in an app (embed.c), the app owns its signals. */
	if (!embedded) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGUSR1, &sa, NULL);
		signal(SIGPIPE, SIG_IGN); /* an app vanishing mid-reply must not kill the daemon */
	}
	g_stats_json = stats_json;

	if (pcap_path != NULL) {
		uint64_t cap = pcap_max >= 0 ? (uint64_t)pcap_max : d.cfg.pcap_max_bytes;

		d.pcap = mr_pcap_writer_open(pcap_path, 65535, cap);
		if (d.pcap == NULL)
			mr_log(MR_LOG_ERR, "pcap %s: %s", pcap_path, strerror(errno));
	}
	ctl.stats.lsock = -1;
	nsh = d.cfg.n_lcores;
	sh[0] = &d;
	for (k = 1; k < nsh; k++)
		sh[k] = &shard_store[k - 1];
	rc = setup(sh, nsh, &lsock);
	if (rc == 0 && (pcap_path == NULL || d.pcap != NULL)) {
		bool launched = true;

		ctl.shards = sh;
		ctl.n = nsh;
		ctl.lsock = lsock;           /* -1 with one shard: its shm server listens */
		ctl.max_sessions = d.cfg.max_sessions ? d.cfg.max_sessions : 64;
		/* setup() left the shards without periodic stats: the control thread's. */
		ctl.stats_every_ns = stats_every * 1000000000ull;
		ctl.stop = &g_stop;
		ctl.dump = &g_dump;
		ctl.telemetry = telemetry;
		rc = mr_stats_srv_open(&ctl.stats, d.sock_path);
		if (rc < 0)
			mr_log(MR_LOG_WARN, "stats socket %s%s: %s (mrstat will not reach this daemon)",
			       d.sock_path, MR_STATS_SOCK_SUFFIX, strerror(-rc));
		for (k = 1; k < nsh && launched; k++)
			launched = rte_eal_remote_launch(shard_main, sh[k], sh[k]->lcore) == 0;
		if (!launched || mr_control_start(&ctl) < 0) {
			mr_log(MR_LOG_ERR, "cannot start the engine shards / control thread");
			g_stop = 1;
			rte_eal_mp_wait_lcore();
			launched = false;
		}
		if (launched) {
			FILE *out = embedded ? stderr : stdout; /* an app's stdout is its own */

			if (nsh == 1)
				fprintf(out, "metaroced: ready (pid %ld, socket %s%s)\n", (long)getpid(),
					d.sock_path, embedded ? ", embedded" : "");
			else
				fprintf(out, "metaroced: ready (pid %ld, socket %s, %u engine shards)\n",
					(long)getpid(), d.sock_path, nsh);
			fflush(out);
			return 0;
		}
	}
	return mrd_finish(1);
}

struct mr_daemon *mrd_shard0(void)
{
	return &d;
}

const char *mrd_sock_path(void)
{
	return d.sock_path;
}

void mrd_request_stop(void)
{
	g_stop = 1;
}

/* Shard 0's loop returned (the daemon) or the app closes (embedded): the other shards and the
 * control thread end, the statistics are printed (and dumped), everything is torn down. */
int mrd_join(void)
{
	g_stop = 1;
	if (nsh > 1)
		rte_eal_mp_wait_lcore();
	mr_control_join(&ctl);
	return 0;
}

int mrd_finish(int ret)
{
	unsigned int k;
	int rc;

	if (d.port != NULL && d.srv != NULL && nsh > 0 && sh[nsh - 1]->srv != NULL) {
		/* Every shard stopped: the main thread snapshots them itself. */
		struct mr_stats_view view;

		for (k = 0; k < nsh; k++)
			mr_shard_snapshot(sh[k]);
		mr_stats_view_build(&view, sh, nsh);
		mr_stats_print_whole(&view, g_embedded ? stderr : stdout, true);
		if (g_stats_json != NULL &&
		    (rc = mr_stats_json_write(&view, g_stats_json, true)) < 0) {
			fprintf(stderr, "metaroced: stats json %s: %s\n", g_stats_json,
				strerror(-rc));
			ret = 1;
		}
	}
	mr_stats_srv_close(&ctl.stats);
	mr_stats_telemetry_fini();
	/* An embedded engine ends with its process (libmetaroce's exit handler): the kernel closes
	 * the port's sockets and frees its memory. Closing the port here raced DPDK's interrupt
	 * thread, which handles the peer's memif disconnect at the same moment (both apps end
	 * together): "EAL: Error: Invalid memory" and a crash in about 1 run in 5. */
	if (g_embedded && ret == 0) {
		unlink(d.sock_path); /* what the shm server's teardown would have removed */
		return ret;
	}
	teardown(sh, nsh, lsock);
	rte_eal_cleanup();
	return ret;
}
