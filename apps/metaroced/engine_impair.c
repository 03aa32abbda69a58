/* SPDX-License-Identifier: MIT
 * metaroced impairment glue: puts drivers/impair's stage on the engine path, for tests and
 * demos of loss recovery (it is off unless [impair] or --impair-rx/--impair-tx ask for it).
 *   rx: frame from the port -> pcap (what was on the wire) -> rx stage -> rx path;
 *   tx: frame built into an mbuf -> tx stage -> pcap (what goes on the wire) -> port.
 * Frames the stage delays (delay, jitter, reorder, duplicates) are copied out by
 * mr_engine_impair_poll() when due; the engine's idle back-off sleeps no longer than the next
 * due time, so a delayed frame is not made later by the poller's own sleep.
 * Losses are recovered by RC itself: go-back-N on a sequence NAK or the ACK timeout
 * (IBA 9.7.5.1.3, C9-141), which is what these stages exist to exercise.
 */
#include <errno.h>
#include <stdlib.h>

#include <rte_mbuf.h>

#include "daemon.h"
#include "dpdk/dpdk_port.h"
#include "impair/impair.h"

int mr_engine_impair_setup(struct mr_daemon *d)
{
	int dir;

	for (dir = 0; dir < MR_IMPAIR_NR_DIRS; dir++) {
		if (!d->cfg.impair_en[dir])
			continue;
		d->imp[dir] = mr_impair_create(&d->cfg.impair[dir]);
		if (d->imp[dir] == NULL)
			return -errno;
	}
	if ((d->imp[MR_IMPAIR_RX] != NULL || d->imp[MR_IMPAIR_TX] != NULL) && d->imp_buf == NULL) {
		d->imp_buf = malloc(MR_IMPAIR_FRAME_MAX);
		if (d->imp_buf == NULL)
			return -ENOMEM;
	}
	return 0;
}

void mr_engine_impair_teardown(struct mr_daemon *d)
{
	int dir;

	for (dir = 0; dir < MR_IMPAIR_NR_DIRS; dir++) {
		mr_impair_destroy(d->imp[dir]);
		d->imp[dir] = NULL;
	}
	free(d->imp_buf);
	d->imp_buf = NULL;
}

void mr_engine_rx_impaired(struct mr_daemon *d, uint8_t *frame, uint32_t len, uint64_t now)
{
	struct mr_impair_verdict v;

	if (d->imp[MR_IMPAIR_RX] == NULL) {
		mr_engine_rx_frame(d, frame, len, now);
		return;
	}
	if (mr_impair_process(d->imp[MR_IMPAIR_RX], MR_IMPAIR_RX, now, frame, len, &v) < 0) {
		/* Longer than the stage handles: not ours to judge, the rx path checks it. */
		d->st.imp_errors++;
		mr_engine_rx_frame(d, frame, len, now);
		return;
	}
	if (v.action == MR_IMPAIR_DELIVER)
		mr_engine_rx_frame(d, frame, len, now);
	/* DROP: counted by the stage by reason. QUEUED: a copy comes back from the poll. */
}

bool mr_engine_tx_impair(struct mr_daemon *d, struct rte_mbuf *m, uint64_t now)
{
	struct mr_impair_verdict v;

	if (d->imp[MR_IMPAIR_TX] == NULL)
		return true;
	/* Frames are built into one segment (engine_tx.c), so the bytes are contiguous. */
	if (!rte_pktmbuf_is_contiguous(m) ||
	    mr_impair_process(d->imp[MR_IMPAIR_TX], MR_IMPAIR_TX, now,
			      rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_pkt_len(m), &v) < 0) {
		d->st.imp_errors++;
		return true;
	}
	return v.action == MR_IMPAIR_DELIVER;
}

int mr_engine_tx_raw(struct mr_daemon *d, const uint8_t *frame, uint32_t len)
{
	struct rte_mbuf *m = mr_dpdk_port_mbuf_from_frame(d->port, frame, len);

	if (m == NULL)
		return -ENOBUFS;
	mr_engine_pcap(d, frame, len);
	if (mr_dpdk_port_tx(d->port, 0, m) < 0) {
		rte_pktmbuf_free(m);
		return -ENOBUFS;
	}
	d->st.tx_frames++;
	d->st.tx_bytes += len;
	d->tx_pending = true;
	return 0;
}

unsigned int mr_engine_impair_poll(struct mr_daemon *d, uint64_t now)
{
	unsigned int n = 0;
	int len;

	if (d->imp[MR_IMPAIR_RX] != NULL &&
	    mr_impair_next_due(d->imp[MR_IMPAIR_RX], MR_IMPAIR_RX) <= now) {
		/* Bounded by the burst size, so a long queue cannot starve the rest of the loop. */
		while (n < MR_RX_BURST &&
		       (len = mr_impair_poll(d->imp[MR_IMPAIR_RX], MR_IMPAIR_RX, now, d->imp_buf,
					     MR_IMPAIR_FRAME_MAX)) > 0) {
			d->st.imp_rx_late++;
			mr_engine_rx_frame(d, d->imp_buf, (uint32_t)len, now);
			n++;
		}
	}
	if (d->imp[MR_IMPAIR_TX] != NULL &&
	    mr_impair_next_due(d->imp[MR_IMPAIR_TX], MR_IMPAIR_TX) <= now) {
		unsigned int sent = 0;

		while (sent < MR_TX_BUDGET &&
		       (len = mr_impair_poll(d->imp[MR_IMPAIR_TX], MR_IMPAIR_TX, now, d->imp_buf,
					     MR_IMPAIR_FRAME_MAX)) > 0) {
			if (mr_engine_tx_raw(d, d->imp_buf, (uint32_t)len) < 0)
				d->st.imp_tx_nombuf++;
			else
				d->st.imp_tx_late++;
			sent++;
		}
		n += sent;
	}
	return n;
}

uint64_t mr_engine_impair_next_due(const struct mr_daemon *d)
{
	uint64_t rx = UINT64_MAX, tx = UINT64_MAX;

	if (d->imp[MR_IMPAIR_RX] != NULL)
		rx = mr_impair_next_due(d->imp[MR_IMPAIR_RX], MR_IMPAIR_RX);
	if (d->imp[MR_IMPAIR_TX] != NULL)
		tx = mr_impair_next_due(d->imp[MR_IMPAIR_TX], MR_IMPAIR_TX);
	return rx < tx ? rx : tx;
}
