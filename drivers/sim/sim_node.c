/* SPDX-License-Identifier: MIT
 * Simulated host: glue between the I/O-free transport and a simulated link, through the real
 * wire builder and parser (so the simulator also exercises ICRC and header encoding). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_node.h"

struct mr_sim_node {
	char name[32];
	uint8_t mac[6];
	uint8_t ipv4[4];
	struct mr_ctx *ctx;
	struct mr_sim_link *out;
	FILE *trace;
	uint16_t ip_id;        /* IPv4 identification increments per frame, as rxe does */
	struct mr_sim_node_stats st;
	uint8_t frame[MR_SIM_FRAME_MAX];
};

struct mr_sim_node *mr_sim_node_create(const struct mr_sim_node_cfg *cfg)
{
	struct mr_sim_node *n;

	if (cfg == NULL) {
		errno = EINVAL;
		return NULL;
	}
	n = calloc(1, sizeof(*n));
	if (n == NULL)
		return NULL;
	snprintf(n->name, sizeof(n->name), "%s", cfg->name ? cfg->name : "node");
	memcpy(n->mac, cfg->mac, sizeof(n->mac));
	memcpy(n->ipv4, cfg->ipv4, sizeof(n->ipv4));
	n->ctx = mr_ctx_create(&cfg->ctx);
	if (n->ctx == NULL) {
		int e = errno;

		free(n);
		errno = e ? e : ENOMEM;
		return NULL;
	}
	return n;
}

void mr_sim_node_destroy(struct mr_sim_node *node)
{
	if (node == NULL)
		return;
	mr_ctx_destroy(node->ctx);
	free(node);
}

struct mr_ctx *mr_sim_node_ctx(const struct mr_sim_node *node)
{
	return node->ctx;
}

const char *mr_sim_node_name(const struct mr_sim_node *node)
{
	return node->name;
}

void mr_sim_node_get_stats(const struct mr_sim_node *node, struct mr_sim_node_stats *st)
{
	*st = node->st;
}

static void ipv4_mapped_gid(const uint8_t ip[4], uint8_t gid[16])
{
	/* RoCE v2 IPv4 GID: ::ffff:a.b.c.d (IBA A17.4.5.1). */
	memset(gid, 0, 10);
	gid[10] = 0xff;
	gid[11] = 0xff;
	memcpy(gid + 12, ip, 4);
}

void mr_sim_node_path_to(const struct mr_sim_node *self, const struct mr_sim_node *peer,
			 uint16_t sport, struct mr_path *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->smac, self->mac, 6);
	memcpy(out->dmac, peer->mac, 6);
	out->ipv6 = false;
	ipv4_mapped_gid(self->ipv4, out->sgid);
	ipv4_mapped_gid(peer->ipv4, out->dgid);
	out->ttl = 64;
	out->udp_sport = sport;
}

void mr_sim_node_set_out_link(struct mr_sim_node *node, struct mr_sim_link *link)
{
	node->out = link;
}

void mr_sim_node_set_trace(struct mr_sim_node *node, FILE *trace)
{
	node->trace = trace;
}

static void trace_pkt(const struct mr_sim_node *n, uint64_t now, const char *dir,
		      const struct mr_roce_hdrs *h, uint32_t paylen, const char *note)
{
	const char *name = mr_opcode_name(h->opcode);

	fprintf(n->trace, "%12" PRIu64 " %-6s %s %-28s qp=%06x psn=%06x len=%u", now, n->name, dir,
		name ? name : "?", h->dqpn, h->psn, paylen);
	if (h->opcode == MR_OP_RC_ACK || h->opcode == MR_OP_RC_ATOMIC_ACK ||
	    (h->opcode >= MR_OP_RC_READ_RESPONSE_FIRST &&
	     h->opcode <= MR_OP_RC_READ_RESPONSE_ONLY && h->opcode != MR_OP_RC_READ_RESPONSE_MIDDLE))
		fprintf(n->trace, " syn=%02x msn=%u", h->aeth.syndrome, h->aeth.msn);
	fprintf(n->trace, "%s%s\n", note ? " " : "", note ? note : "");
}

int mr_sim_node_tx(struct mr_sim_node *node, uint64_t now, unsigned int budget, bool *more)
{
	struct mr_tx_pkt pkt;
	int sent = 0;

	*more = false;
	if (node->out == NULL)
		return 0;
	while (budget-- > 0) {
		const struct mr_path *path;
		struct mr_path sprayed;
		int len, fate;

		/* Pace to the link rate: one frame at a time into an idle transmitter keeps the
		 * queue empty, the way a NIC's doorbell-driven scheduler does. */
		if (mr_sim_link_busy_until(node->out) > now) {
			*more = true;
			break;
		}
		if (mr_ctx_tx(node->ctx, now, &pkt) != 1)
			break;
		path = pkt.path;
		if (pkt.udp_sport != 0 && pkt.path != NULL) {
			/* MetaRoCE spraying: a per-packet entropy (UDP source port, A17.3.3)
			 * overrides the QP's path; see docs/metaroce-wire.md. */
			sprayed = *pkt.path;
			sprayed.udp_sport = pkt.udp_sport;
			path = &sprayed;
		}
		len = mr_frame_build(node->frame, sizeof(node->frame), path, node->ip_id++,
				     &pkt.hdr, pkt.iov, pkt.niov);
		if (len < 0) {
			node->st.build_errors++;
			if (node->trace)
				trace_pkt(node, now, "tx", &pkt.hdr, pkt.paylen, "BUILD-ERROR");
			continue;
		}
		fate = mr_sim_link_send(node->out, now, node->frame, (size_t)len);
		if (fate < 0) {
			node->st.link_errors++;
			continue;
		}
		node->st.tx_frames++;
		node->st.tx_bytes += (uint64_t)len;
		sent++;
		if (node->trace)
			trace_pkt(node, now, "tx", &pkt.hdr, pkt.paylen,
				  fate == MR_SIM_FATE_QUEUED ? NULL : mr_sim_fate_str(fate));
		*more = true;
	}
	return sent;
}

static enum mr_parse_result sim_parse_drop(struct mr_sim_node *node, uint64_t now,
					   enum mr_parse_result r)
{
	if ((unsigned int)r < MR_PARSE_NR_RESULTS)
		node->st.parse_err[r]++;
	node->st.parse_drops++;
	if (node->trace)
		fprintf(node->trace, "%12" PRIu64 " %-6s rx parse error: %s\n", now, node->name,
			mr_parse_result_str(r));
	return r;
}

enum mr_parse_result mr_sim_node_rx(struct mr_sim_node *node, uint64_t now, const uint8_t *frame,
				    uint32_t len)
{
	struct mr_pkt pkt;
	/* As metaroced's engine: WRITE Middle/Last have their ICRC checked by the transport as
	 * it places them (wire/roce_pkt.h), so the corruption runs cover that path too. */
	enum mr_parse_result r = mr_frame_parse_deferred(frame, len, &pkt);

	if (r != MR_PARSE_OK)
		return sim_parse_drop(node, now, r);
	if (node->trace)
		trace_pkt(node, now, "rx", &pkt.hdr, pkt.paylen, NULL);
	if (mr_ctx_rx(node->ctx, &pkt, now) == -EBADMSG)
		return sim_parse_drop(node, now, MR_PARSE_BAD_ICRC);
	node->st.rx_frames++;
	node->st.rx_bytes += len;
	return MR_PARSE_OK;
}
