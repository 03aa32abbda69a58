/* SPDX-License-Identifier: MIT
 * metaroced rx path: Ethernet frame -> ARP/ND (neighbour module) or RoCE v2 (parse with ICRC
 * check, A17.3.4) -> transport. Every rejected frame is counted by reason, never trusted.
 */
#include <errno.h>
#include <string.h>

#include "daemon.h"
#include "backend.h"
#include "dpdk/neigh.h"
#include "transport/rc.h"

void mr_engine_rx_roce(struct mr_daemon *d, const uint8_t *frame, uint32_t len, uint64_t now)
{
	struct mr_pkt pkt;
	enum mr_parse_result r;

	/* A17.3.4 / C17-x: the ICRC is checked before anything in the packet is used; for RC
	 * WRITE Middle/Last the check is fused with the payload's placement (wire/roce_pkt.h,
	 * mr_frame_parse_deferred), and the transport makes it before it acts on the packet. */
	r = mr_frame_parse_deferred(frame, len, &pkt);
	if (r != MR_PARSE_OK) {
		d->st.parse_drop[r < MR_PARSE_NR_RESULTS ? r : MR_PARSE_NOT_ROCE]++;
		return;
	}
	if (!mr_backend_is_local_gid(d->be, pkt.dgid)) {
		if (pkt.icrc_pending && !mr_pkt_icrc_ok(&pkt))
			d->st.parse_drop[MR_PARSE_BAD_ICRC]++;
		else
			d->st.rx_not_for_us++;
		return;
	}
	if (mr_ctx_rx(d->ctx, &pkt, now) == -EBADMSG)
		d->st.parse_drop[MR_PARSE_BAD_ICRC]++;
	else
		d->st.rx_roce++;
}

void mr_engine_rx_frame(struct mr_daemon *d, const uint8_t *frame, uint32_t len, uint64_t now)
{
	uint8_t reply[MR_NEIGH_FRAME_MAX];
	uint32_t rlen = 0;

	d->st.rx_frames++;
	d->st.rx_bytes += len;
	if (len < 14) {
		d->st.parse_drop[MR_PARSE_TRUNCATED]++;
		return;
	}
	/* On a shared segment (af_packet) a PMD may hand our own transmissions back. */
	if (memcmp(frame + 6, d->mac, 6) == 0) {
		d->st.rx_own_echo++;
		return;
	}
	if (mr_neigh_input(d->neigh, frame, len, now, reply, sizeof(reply), &rlen) ==
	    MR_NEIGH_CONSUMED) {
		d->st.rx_neigh++;
		if (rlen > 0)
			mr_engine_tx_copy(d, reply, rlen);
		if (d->nheld > 0)
			mr_engine_release_held(d, now);
		return;
	}
	/* Promiscuous port: unicast frames for other stations are not ours. */
	if (!(frame[0] & 1) && memcmp(frame, d->mac, 6) != 0) {
		d->st.rx_not_for_us++;
		return;
	}
	/* Several shards: the owner of the destination QPN parses it (shard.c). */
	if (d->nshards > 1 && mr_shard_dispatch(d, frame, len))
		return;
	mr_engine_rx_roce(d, frame, len, now);
}
