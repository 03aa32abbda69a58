/* SPDX-License-Identifier: MIT
 * ARP/ND interop against the Linux kernel (driven by neigh_kernel.sh): runs the port driver on
 * net_af_packet over one end of a veth whose other end the kernel owns, answers the kernel's
 * ARP requests and Neighbor Solicitations for our addresses, and resolves the kernel's addresses
 * with our own requests. Exits 0 once both directions worked for IPv4 and IPv6, printing what it
 * resolved; 1 on timeout; 77 if EAL or the port cannot start.
 *
 * Usage: neigh_kernel_peer <EAL args> -- OUR_IP4 OUR_IP6 PEER_IP4 PEER_IP6 TIMEOUT_S
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>

#include "dpdk/dpdk_port.h"
#include "dpdk/neigh.h"

static uint64_t now_ns(void)
{
	return rte_get_tsc_cycles() / (rte_get_tsc_hz() / 1000000) * 1000;
}

static void send_frame(struct mr_dpdk_port *p, const uint8_t *f, int len)
{
	struct rte_mbuf *m;

	if (len <= 0)
		return;
	m = mr_dpdk_port_mbuf_from_frame(p, f, (uint32_t)len);
	if (m != NULL && mr_dpdk_port_tx(p, 0, m) < 0)
		rte_pktmbuf_free(m);
	mr_dpdk_port_tx_flush(p, 0);
}

static void print_mac(const char *what, const uint8_t *m)
{
	printf("%s %02x:%02x:%02x:%02x:%02x:%02x\n", what, m[0], m[1], m[2], m[3], m[4], m[5]);
}

int main(int argc, char **argv)
{
	struct mr_dpdk_port_conf pc;
	struct mr_neigh_conf nc;
	struct mr_dpdk_port *p;
	struct mr_neigh *n;
	const struct mr_neigh_stats *st;
	uint8_t peer4[16] = { [10] = 0xff, [11] = 0xff }, peer6[16], mac4[6], mac6[6];
	uint8_t buf[MR_NEIGH_FRAME_MAX], reply[MR_NEIGH_FRAME_MAX], scratch[2048];
	uint64_t start, deadline, next_try = 0, t_ok4 = 0, t_ok6 = 0, t_ans = 0;
	bool ok4 = false, ok6 = false;
	int used, len;

	used = rte_eal_init(argc, argv);
	if (used < 0) {
		fprintf(stderr, "SKIP: rte_eal_init: %s\n", rte_strerror(rte_errno));
		return 77;
	}
	argc -= used;
	argv += used;
	if (argc != 6) {
		fprintf(stderr, "usage: <EAL args> -- OUR_IP4 OUR_IP6 PEER_IP4 PEER_IP6 TIMEOUT_S\n");
		return 2;
	}
	memset(&nc, 0, sizeof(nc));
	nc.ipv4_en = nc.ipv6_en = true;
	nc.retrans_ns = 200 * 1000 * 1000ull;
	nc.max_probes = 50;
	if (inet_pton(AF_INET, argv[1], nc.ipv4) != 1 || inet_pton(AF_INET6, argv[2], nc.ipv6) != 1 ||
	    inet_pton(AF_INET, argv[3], peer4 + 12) != 1 || inet_pton(AF_INET6, argv[4], peer6) != 1) {
		fprintf(stderr, "bad address\n");
		return 2;
	}
	memset(&pc, 0, sizeof(pc));
	pc.devname = "net_af_packet0";
	pc.nb_rxd = pc.nb_txd = 256;
	pc.socket_id = -1;
	pc.promiscuous = true;
	p = mr_dpdk_port_open(&pc);
	if (p == NULL) {
		fprintf(stderr, "SKIP: port open: %s\n", strerror(errno));
		return 77;
	}
	mr_dpdk_port_mac(p, nc.mac);
	n = mr_neigh_create(&nc);
	if (n == NULL) {
		fprintf(stderr, "neigh: %s\n", strerror(errno));
		return 1;
	}
	st = mr_neigh_stats(n);
	print_mac("our_mac", nc.mac);
	/* Announce ourselves (RFC 5227 3, RFC 4861 7.2.6). */
	send_frame(p, buf, mr_neigh_gratuitous_arp(n, buf, sizeof(buf)));
	send_frame(p, buf, mr_neigh_unsolicited_na(n, buf, sizeof(buf)));

	start = now_ns();
	deadline = start + (uint64_t)atoi(argv[5]) * 1000000000ull;
	while (now_ns() < deadline) {
		struct rte_mbuf *rx[32];
		uint16_t nb = mr_dpdk_port_rx_burst(p, 0, rx, 32);
		uint64_t t = now_ns();

		for (uint16_t i = 0; i < nb; i++) {
			uint32_t flen, rlen;
			const uint8_t *f = mr_dpdk_mbuf_frame(rx[i], scratch, sizeof(scratch), &flen);

			if (f != NULL && mr_neigh_input(n, f, flen, t, reply, sizeof(reply), &rlen) ==
					 MR_NEIGH_CONSUMED && rlen > 0)
				send_frame(p, reply, (int)rlen);
			rte_pktmbuf_free(rx[i]);
		}
		if (t >= next_try) {
			next_try = t + 100 * 1000 * 1000ull;
			if (!ok4 && mr_neigh_lookup(n, peer4, t, mac4) == 0) {
				ok4 = true;
				t_ok4 = t - start;
			}
			else if (!ok4)
				send_frame(p, buf, mr_neigh_solicit(n, peer4, t, buf, sizeof(buf)));
			if (!ok6 && mr_neigh_lookup(n, peer6, t, mac6) == 0) {
				ok6 = true;
				t_ok6 = t - start;
			}
			else if (!ok6)
				send_frame(p, buf, mr_neigh_solicit(n, peer6, t, buf, sizeof(buf)));
			while ((len = mr_neigh_poll(n, t, buf, sizeof(buf))) > 0)
				send_frame(p, buf, len);
			if (t_ans == 0 && st->arp_requests_answered > 0 && st->ns_answered > 0)
				t_ans = t - start;
			if (ok4 && ok6 && t_ans != 0)
				break;
		}
		if (nb == 0)
			rte_delay_us_sleep(200);
	}
	printf("ms_to_resolve_ipv4 %" PRIu64 "\nms_to_resolve_ipv6 %" PRIu64
	       "\nms_to_answer_kernel %" PRIu64 "\n", t_ok4 / 1000000, t_ok6 / 1000000,
	       t_ans / 1000000);
	if (ok4)
		print_mac("peer4_mac", mac4);
	if (ok6)
		print_mac("peer6_mac", mac6);
	printf("arp_requests_answered %" PRIu64 "\nns_answered %" PRIu64 "\narp_replies_rx %" PRIu64
	       "\nna_rx %" PRIu64 "\nsolicits_tx %" PRIu64 "\narp_malformed %" PRIu64
	       "\nnd_malformed %" PRIu64 "\nnd_bad_csum %" PRIu64 "\n",
	       st->arp_requests_answered, st->ns_answered, st->arp_replies_rx, st->na_rx,
	       st->solicits_tx, st->arp_malformed, st->nd_malformed, st->nd_bad_csum);
	len = ok4 && ok6 && st->arp_requests_answered > 0 && st->ns_answered > 0 ? 0 : 1;
	mr_neigh_destroy(n);
	mr_dpdk_port_close(p);
	rte_eal_cleanup();
	return len;
}
