/* SPDX-License-Identifier: MIT
 * metaroced: the state of one engine shard (one engine lcore, one transport context, its own
 * shm server, backend, timers and counters) and the functions of its engine loop. With one
 * lcore configured the daemon is exactly shard 0 (no rings, no control thread). DPDK objects
 * are opaque here; engine*.c and shard*.c include DPDK.
 */
#ifndef MR_DAEMON_DAEMON_H
#define MR_DAEMON_DAEMON_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "dpdk/dpdk_port.h"
#include "dpdk/neigh.h"
#include "impair/impair.h"
#include "shard_map.h"
#include "shm/shm_server.h"
#include "transport/rc.h"
#include "wire/roce_pkt.h"

struct rte_mbuf;
struct rte_mempool;
struct rte_ring;
struct mr_dpdk_port;
struct mr_ctx;
struct mr_backend;
struct mr_shm_server;
struct mr_neigh;
struct mr_pcap_writer;
struct mr_impair;

/* Frames built while the peer's MAC is unknown wait here (the QP's output is held, not dropped,
 * until ARP/ND answers or gives up). */
#define MR_HELD_MAX 1024
#define MR_RX_BURST 32
/* Rx bursts per loop iteration while the port returns full bursts: after the engine lost the
 * CPU, every ACK already waiting in the ring is processed before the transport's timers run,
 * else they fire spuriously and go-back-N (IBA 9.7.5.2.1) resends windows that were acked. */
#define MR_RX_DRAIN_BURSTS 64
#define MR_TX_BUDGET 64        /* transport packets per loop iteration, so rx keeps up */
#define MR_IDLE_SPINS 256      /* empty iterations before the idle back-off sleeps */
#define MR_YIELD_SPINS 2      /* empty iterations before an idle engine yields its CPU */
#define MR_STALL_NS 10000000ull /* 10 ms: far longer than any iteration or idle sleep */

struct mr_held {
	struct rte_mbuf *m;
	uint8_t gid[16];
};

struct mr_engine_stats {
	uint64_t iterations, idle_sleeps, idle_yields, load_sleeps;
	uint64_t rx_frames, rx_bytes;
	uint64_t rx_neigh;          /* ARP/ND frames consumed by the neighbour module */
	uint64_t rx_roce;           /* parsed and handed to the transport */
	uint64_t rx_not_for_us;     /* unicast to another MAC, or a GID that is not ours */
	uint64_t rx_own_echo;       /* our own frames seen again (shared segment) */
	uint64_t rx_too_long;       /* multi-segment frame larger than the scratch buffer */
	uint64_t parse_drop[MR_PARSE_NR_RESULTS];
	uint64_t tx_frames, tx_bytes;
	uint64_t tx_neigh;          /* ARP/ND requests and replies */
	uint64_t tx_loopback;       /* frames to our own GID, delivered in software */
	uint64_t tx_nombuf;         /* no mbuf: the packet is lost, RC retransmits it */
	uint64_t tx_build_err;
	uint64_t tx_csum_offload;   /* IPv4 header checksums left to the port (its offload) */
	uint64_t held, held_sent;
	uint64_t held_dropped;      /* peer unreachable, or the hold queue was full */
	uint64_t timer_runs;
	/* Loop iterations that started more than MR_STALL_NS after the previous one (the engine
	 * lost its CPU, or one iteration worked that long) and the longest such gap: on a shared
	 * machine these explain ACK timeouts without loss. */
	uint64_t stalls, max_gap_ns;
	uint64_t max_work_ns;       /* longest busy part of one iteration (no idle sleep) */
	/* impairment glue (the stage's own counters are in struct mr_impair_stats) */
	uint64_t imp_rx_late;       /* delayed/duplicated received frames handed on later */
	uint64_t imp_tx_late;       /* delayed/duplicated frames sent later */
	uint64_t imp_tx_nombuf;     /* a late frame found no mbuf: lost, RC recovers it */
	uint64_t imp_errors;        /* mr_impair_process refused a frame (length): passed as is */
	/* QP sharding (all 0 with one lcore, except tx_roce) */
	uint64_t tx_roce;           /* packets this shard's transport produced (built frames) */
	uint64_t rx_dispatched;     /* I/O shard: RoCE frames handed to another shard's ring */
	uint64_t ring_rx;           /* frames this shard took from its rx ring */
	uint64_t ring_tx;           /* frames this shard handed to the I/O shard for tx */
	uint64_t ring_full;         /* a ring was full: frame dropped, RC retransmits it */
	uint64_t ring_copy;         /* dispatched by copy (the frame was not one rx mbuf) */
	uint64_t rx_backpressure;   /* I/O shard: port rx paused, a shard's rx ring was nearly full */
	uint64_t tx_backpressure;   /* iterations the transport's tx was cut short: port tx backlog full */
	uint64_t sessions_adopted;  /* session sockets received from the control thread */
	uint64_t clock_resyncs;     /* shard 0: the TSC clock re-anchored on CLOCK_MONOTONIC */
};

/* One QP's counters as seen in a stats snapshot. */
struct mr_qp_snap {
	uint32_t qpn;
	enum mr_qp_state state;
	struct mr_qp_stats s;
	/* for mrstat qp: the connection and its congestion control now */
	uint32_t dest_qpn, path_mtu;
	uint8_t transport, cc;      /* enum mr_transport, enum mr_cc_algo */
	uint16_t n_entropies;
	bool cc_on;
	uint64_t cc_rate_bps, cc_rate_min_bps, cc_cwnd_bytes; /* UINT64_MAX: unlimited */
};

/* A shard's counters copied by the shard itself (its objects are single-threaded): the control
 * thread asks for one, waits, then reads it; shards never read each other's. The I/O shard
 * also copies the port, neighbour, impairment and pcap counters it alone updates. Reading the
 * live uint64_t counters from the control thread would be fine on x86-64 (aligned 64-bit loads
 * do not tear; a value one iteration old is harmless), but the per-QP list and the sessions are
 * linked structures a shard frees as it goes, so they are only ever walked by their shard. */
struct mr_shard_snap {
	struct mr_engine_stats st;
	unsigned int nheld;
	unsigned int nqp;
	uint64_t qps_created;
	uint64_t policy_upgrades;   /* QPs made MetaRoCE by [metaroce] peers */
	struct mr_qp_stats qsum;
	struct mr_ctx_stats cs;
	struct mr_ctx_counts cnt;   /* live transport objects */
	uint64_t txpool_in_use;     /* mbufs of this shard's tx pool in use (I/O shard: its own) */
	struct mr_shm_server_stats ss;
	unsigned int nsessions;
	struct mr_qp_snap *qps;     /* cfg.max_qp entries */
	unsigned int nqps;
	/* I/O shard only */
	struct mr_dpdk_port_stats ps;
	struct mr_neigh_stats ns;
	bool imp_on[MR_IMPAIR_NR_DIRS];
	struct mr_impair_stats is[MR_IMPAIR_NR_DIRS];
	size_t imp_queued[MR_IMPAIR_NR_DIRS];
	uint64_t pcap_dropped;
	struct mr_dpdk_link link;   /* for mrstat link (state, speed) */
};

struct mr_daemon {
	struct mr_daemon_config cfg;
	const char *sock_path;
	uint32_t idle_sleep_us;
	uint32_t load_sleep_max_us;
	bool idle_yield;
	uint32_t ctl_every;
	uint64_t stats_every_ns;

	struct mr_dpdk_port *port;
	struct rte_mempool *txpool;
	uint32_t max_frame;
	uint8_t mac[6];
	struct mr_ctx *ctx;
	struct mr_backend *be;
	struct mr_shm_server *srv;
	struct mr_neigh *neigh;
	struct mr_pcap_writer *pcap;

	volatile sig_atomic_t *stop;
	volatile sig_atomic_t *dump;

	uint16_t ip_id;
	bool tx_csum_offload;       /* the port fills IPv4 header checksums (MR_DPDK_CAP_TX_IPV4_CKSUM) */
	bool tx_pending;            /* frames queued in the port's tx buffer this iteration */
	int warm_state;             /* memif transmit-ring warming: 0 on, else why not (engine.c) */
	struct mr_held held[MR_HELD_MAX];
	unsigned int nheld;
	uint64_t held_next_check;   /* held frames are re-examined at most every ms (or on ARP) */
	/* One-entry lookup cache in front of the neighbour table (most traffic goes to one peer). */
	uint8_t lk_gid[16];
	uint8_t lk_mac[6];
	uint64_t lk_until;

	uint8_t *scratch;           /* max_frame bytes: rx copies of chained mbufs, loopback */
	/* Impairment (testing): one stage per direction, each with its own spec and seed; NULL
	 * when off, so the normal path costs one branch. */
	struct mr_impair *imp[2];   /* indexed by enum mr_impair_dir */
	uint8_t *imp_buf;           /* MR_IMPAIR_FRAME_MAX bytes: late frames copied out */
	const char *stats_json;     /* --stats-json FILE, or NULL */
	struct mr_engine_stats st;

	/* QP sharding. Shard 0 (the main lcore) is the I/O shard: it alone polls the port, runs
	 * ARP/ND, the impairment stages and the pcap, and transmits. Other shards have port,
	 * neigh, pcap and impairment pointers NULL-ed where the code must not touch them. */
	unsigned int shard_id, nshards;
	unsigned int lcore;
	struct mr_shard_map map;
	struct mr_daemon **all;     /* every shard, indexed by id (shard 0 dispatches) */
	struct rte_ring *rx_ring;   /* I/O shard -> this shard: frames for its QPNs (SP/SC) */
	struct rte_ring *tx_ring;   /* this shard -> I/O shard: built frames to route (SP/SC) */
	struct rte_ring *fd_ring;   /* control thread -> this shard: session sockets (SP/SC) */
	struct rte_mbuf *rx_cur;    /* I/O shard: the rx mbuf being processed (zero-copy hand-off) */
	/* Written by this shard, read by the control thread (session placement). */
	_Atomic uint32_t pub_sessions;
	_Atomic uint64_t pub_adopted;
	/* Stats snapshot handshake: the control thread bumps snap_req; the shard fills snap and
	 * stores snap_done = snap_req (release). */
	_Atomic uint32_t snap_req;
	_Atomic uint32_t snap_done;
	struct mr_shard_snap snap;
};

/* Monotonic nanoseconds (the transport's and the neighbour module's clock). */
uint64_t mr_now_ns(void);
void mr_clock_init(void); /* after EAL init: mr_now_ns from the TSC (engine.c) */

/* engine.c: run until *d->stop. Returns 0. */
/* One engine loop's own state (engine.c): the daemon's lcores run mr_engine_run, which adds
 * the idle back-off; an embedded engine (embed.c) calls mr_engine_iter from the app's thread. */
struct mr_engine_loop {
	uint64_t next_link, next_stats, prev;
	uint64_t ctl_period_ns, next_ctl; /* embedded: control by the clock (0: every ctl_every) */
	bool ctl_now;                     /* embedded: every iteration (its helper serves) */
	uint32_t link_seen, ctl_count;
	unsigned int idle;          /* iterations without work in a row, at most MR_IDLE_SPINS */
	unsigned int tx_got;        /* the last iteration's transport tx packets */
	uint32_t nap_us;            /* the light-load sleep (engine.c load_sleep), grows by 1 us */
	uint32_t clock_count;       /* iterations since shard 0 last checked the clock (engine.c) */
};
void mr_engine_loop_init(struct mr_daemon *d, struct mr_engine_loop *l);
/* One iteration (rx, shm control and data, timers, neighbours, impairment, tx); returns the
 * work it did (0: idle). */
unsigned int mr_engine_iter(struct mr_daemon *d, struct mr_engine_loop *l);
/* Its two halves: the receive side (port bursts, or the shard's ring), then the rest (shm,
 * timers, neighbours, impairment, tx), which counts the first half's work in its return
 * value and the loop's idle state. An embedded engine returns to its app between the two
 * when the first placed data (embed.c). */
unsigned int mr_engine_iter_rx(struct mr_daemon *d, uint64_t now);
unsigned int mr_engine_iter_rest(struct mr_daemon *d, struct mr_engine_loop *l, uint64_t now,
				 unsigned int work);
int mr_engine_run(struct mr_daemon *d);

/* The process's daemon (daemon.c). mrd_start parses the command line (getopt: -c FILE ...),
 * starts EAL, the port, the shards and the control thread: 0 when ready, -1 after --help, else
 * the exit status (2: usage or configuration, named on stderr; 1: start-up failed, already torn
 * down). Then shard 0's loop runs (mr_engine_run on mrd_shard0(), or embed.c's iterations),
 * mrd_join() stops the rest and mrd_finish() prints the statistics and tears everything down.
 * embedded: no signal handlers, one shard only, messages on stderr (the app's stdout is its). */
int mrd_start(int argc, char **argv, bool embedded);
struct mr_daemon *mrd_shard0(void);
const char *mrd_sock_path(void);
void mrd_request_stop(void);
int mrd_join(void);
int mrd_finish(int ret);
/* engine_rx.c: one received frame (ARP/ND -> neighbour module, RoCE -> transport). */
void mr_engine_rx_frame(struct mr_daemon *d, const uint8_t *frame, uint32_t len, uint64_t now);
/* RoCE part of the rx path (also used for frames looped back to our own GID). */
void mr_engine_rx_roce(struct mr_daemon *d, const uint8_t *frame, uint32_t len, uint64_t now);
/* engine_tx.c */
/* Send a ready frame (ARP/ND) by copy. 0 or negative errno. */
int mr_engine_tx_copy(struct mr_daemon *d, const uint8_t *frame, uint32_t len);
/* Drain the transport's output (at most budget packets). Returns the number produced. */
unsigned int mr_engine_tx_transport(struct mr_daemon *d, uint64_t now, unsigned int budget);
/* Send held frames whose peer resolved; drop those whose peer is unreachable. */
unsigned int mr_engine_release_held(struct mr_daemon *d, uint64_t now);
/* Start resolving gid now (backend on_path hook). */
void mr_engine_resolve(void *arg, const uint8_t gid[16]);
/* Neighbour retransmissions / probes that are due. */
unsigned int mr_engine_neigh_poll(struct mr_daemon *d, uint64_t now);
/* Record a frame in the pcap file, if any. */
void mr_engine_pcap(struct mr_daemon *d, const uint8_t *frame, uint32_t len);
/* Free held mbufs (shutdown). */
void mr_engine_free_held(struct mr_daemon *d);
/* engine_impair.c: the impairment stage on the engine path. */
/* Create the stages the config enables. 0 or negative errno. */
int mr_engine_impair_setup(struct mr_daemon *d);
void mr_engine_impair_teardown(struct mr_daemon *d);
/* A received frame (writable: corruption and CE marks are applied in place): through the rx
 * stage, then mr_engine_rx_frame now, later (mr_engine_impair_poll) or never. */
void mr_engine_rx_impaired(struct mr_daemon *d, uint8_t *frame, uint32_t len, uint64_t now);
/* A built frame about to be sent: true if it may go now; false if the tx stage dropped it or
 * kept a copy to send later (the caller frees the mbuf either way). */
bool mr_engine_tx_impair(struct mr_daemon *d, struct rte_mbuf *m, uint64_t now);
/* Hand on delayed frames that are due (both directions). Returns the number handled. */
unsigned int mr_engine_impair_poll(struct mr_daemon *d, uint64_t now);
/* Earliest due time of a delayed frame, or UINT64_MAX (the idle back-off wakes for it). */
uint64_t mr_engine_impair_next_due(const struct mr_daemon *d);
/* Send a frame that already went through the tx stage (copy into a fresh mbuf). */
int mr_engine_tx_raw(struct mr_daemon *d, const uint8_t *frame, uint32_t len);

/* shard.c: the ring glue between shards (only used with more than one shard). */
/* Create this shard's rings (shard i > 0). 0 or negative errno. */
int mr_shard_rings_create(struct mr_daemon *d);
/* Free the rings and whatever they still hold (shutdown, shards stopped). */
void mr_shard_rings_free(struct mr_daemon *d);
/* I/O shard: hand a RoCE frame to the shard owning its destination QPN. True if the frame was
 * taken (queued, or dropped on a full ring); false if shard 0 owns it (process it here). */
bool mr_shard_dispatch(struct mr_daemon *d, const uint8_t *frame, uint32_t len);
/* Shard i > 0: frames from the rx ring into the transport. Returns the number handled. */
unsigned int mr_shard_rx_ring(struct mr_daemon *d, uint64_t now);
/* Shard i > 0: a built frame to the I/O shard (consumes m). */
void mr_shard_tx_ring(struct mr_daemon *d, struct rte_mbuf *m);
/* I/O shard: route the frames other shards built (neighbour, loopback, tx). Returns count. */
unsigned int mr_shard_drain_tx_rings(struct mr_daemon *d, uint64_t now);
/* I/O shard: room for a full rx burst in every other shard's rx ring (else the port's own
 * ring holds the frames until the owner catches up, instead of a drop here). */
bool mr_shard_rx_room(const struct mr_daemon *d);
/* Adopt session sockets from the control thread. Returns the number adopted. */
unsigned int mr_shard_adopt_fds(struct mr_daemon *d);
/* engine_tx.c: route a built frame (destination MAC still to patch) to gid: loopback is the
 * caller's business; resolved -> tx, unresolved -> held behind the same peer, else dropped. */
void mr_engine_route_built(struct mr_daemon *d, struct rte_mbuf *m, const uint8_t gid[16],
			   uint64_t now);

/* stats.c */
/* Copy d's counters into d->snap (from d's own thread, or any thread once d stopped). */
void mr_shard_snapshot(struct mr_daemon *d);
/* The daemon-wide view of n shards' snapshots (shards[0]: the I/O shard). */
struct mr_stats_view {
	struct mr_daemon *const *shards;
	unsigned int n;
	struct mr_engine_stats st;  /* summed (max_gap_ns, max_work_ns: the largest) */
	unsigned int nheld, nqp, nsessions;
	struct mr_qp_stats qsum;
	uint64_t policy_upgrades;   /* QPs made MetaRoCE by [metaroce] peers, all shards */
	struct mr_ctx_stats cs;
	struct mr_shm_server_stats ss;
};
void mr_stats_view_build(struct mr_stats_view *v, struct mr_daemon *const *shards,
			 unsigned int n);
/* One block of "metaroced stats:" lines (final: the exit line). */
void mr_stats_print(const struct mr_stats_view *v, FILE *f, bool final);
/* The same in one write(2) to fileno(f): a reader of the log never sees half a dump. */
void mr_stats_print_whole(const struct mr_stats_view *v, FILE *f, bool final);
/* stats_json.c: the same counters (and per-QP and per-shard ones) as one JSON document written
 * to path atomically (path.tmp, then rename), for scripts (like `rdma stat` / `ethtool -S`).
 * 0 or negative errno. */
int mr_stats_json_write(const struct mr_stats_view *v, const char *path, bool final);
/* A snapshot of every shard taken now from the calling (engine 0 or final) thread, printed
 * and, with --stats-json, written. */
void mr_stats_dump_local(struct mr_daemon *const *shards, unsigned int n, bool final,
			 bool json);

#endif
