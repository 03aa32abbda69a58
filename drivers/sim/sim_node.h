/* SPDX-License-Identifier: MIT
 * A simulated host: one struct mr_ctx (the I/O-free RC transport) with an Ethernet/IPv4 address.
 * Every packet it sends is a real RoCE v2 frame built by mr_frame_build() (ICRC included), and
 * every frame it receives goes through mr_frame_parse_deferred() and mr_ctx_rx() (the ICRC
 * checked on arrival, or by the transport as it places a WRITE's payload).
 */
#ifndef MR_SIM_NODE_H
#define MR_SIM_NODE_H

#include <stdint.h>
#include <stdio.h>

#include "transport/rc.h"
#include "wire/roce_pkt.h"
#include "sim/sim_link.h"

/* Largest frame a node builds or accepts: headers + 4096 B payload + pad + ICRC, rounded up. */
#define MR_SIM_FRAME_MAX 8192

struct mr_sim_node;

struct mr_sim_node_cfg {
	const char *name;      /* for traces; copied */
	uint8_t mac[6];
	uint8_t ipv4[4];       /* the node's GID is ::ffff:a.b.c.d */
	struct mr_ctx_params ctx;
};

struct mr_sim_node_stats {
	uint64_t tx_frames, tx_bytes;
	uint64_t rx_frames, rx_bytes;           /* frames handed to mr_ctx_rx */
	uint64_t parse_drops;                   /* sum of parse_err[] */
	uint64_t parse_err[MR_PARSE_NR_RESULTS]; /* frames the parser rejected, by reason */
	uint64_t build_errors;                  /* mr_frame_build() failures (a transport bug) */
	uint64_t link_errors;                   /* mr_sim_link_send() errors (-ENOMEM...) */
};

struct mr_sim_node *mr_sim_node_create(const struct mr_sim_node_cfg *cfg); /* NULL + errno */
void mr_sim_node_destroy(struct mr_sim_node *node);
struct mr_ctx *mr_sim_node_ctx(const struct mr_sim_node *node);
const char *mr_sim_node_name(const struct mr_sim_node *node);
void mr_sim_node_get_stats(const struct mr_sim_node *node, struct mr_sim_node_stats *st);

/* The address vector from self to peer (IPv4-mapped GIDs, TTL 64, UDP source port sport). */
void mr_sim_node_path_to(const struct mr_sim_node *self, const struct mr_sim_node *peer,
			 uint16_t sport, struct mr_path *out);

/* Attach the link this node transmits on (NULL detaches). */
void mr_sim_node_set_out_link(struct mr_sim_node *node, struct mr_sim_link *link);
/* Optional per-frame trace (one text line per frame sent or received); NULL disables. */
void mr_sim_node_set_trace(struct mr_sim_node *node, FILE *trace);

/* Transmit while the out link's transmitter is idle at now and the transport has packets (at
 * most `budget` frames). Returns the number of frames put on the link, or 0. Sets *more when
 * the transport may have more to send (the caller should come back at the link's busy_until). */
int mr_sim_node_tx(struct mr_sim_node *node, uint64_t now, unsigned int budget, bool *more);
/* Parse one received frame and, if valid, hand it to the transport. Returns the parse result. */
enum mr_parse_result mr_sim_node_rx(struct mr_sim_node *node, uint64_t now, const uint8_t *frame,
				    uint32_t len);

#endif
