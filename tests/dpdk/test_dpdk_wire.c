/* SPDX-License-Identifier: MIT
 * The engine's data path end to end on one net_ring port: RoCE v2 frames built by stack/wire
 * (with the traffic class and 802.1Q priority from drivers/dpdk/tclass) go out through the port
 * driver, come back, and parse with a valid ICRC and the same headers and payload. Exits 77
 * (skip) when EAL cannot start here.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>

#include "dpdk/dpdk_port.h"
#include "dpdk/tclass.h"
#include "wire/roce_pkt.h"

static const uint8_t mac_a[6] = { 0x02, 0x4d, 0x52, 0, 0, 0x0a };
static const uint8_t mac_b[6] = { 0x02, 0x4d, 0x52, 0, 0, 0x0b };

static void make_path(struct mr_path *path, bool ipv6, bool vlan, enum mr_tc tc,
		      const struct mr_tclass_map *map)
{
	memset(path, 0, sizeof(*path));
	memcpy(path->smac, mac_a, 6);
	memcpy(path->dmac, mac_b, 6);
	path->ipv6 = ipv6;
	if (ipv6) {
		path->sgid[0] = 0x20; path->sgid[1] = 0x01; path->sgid[15] = 1;
		path->dgid[0] = 0x20; path->dgid[1] = 0x01; path->dgid[15] = 2;
		path->flow_label = 0x12345;
	} else {
		path->sgid[10] = path->sgid[11] = 0xff;
		path->dgid[10] = path->dgid[11] = 0xff;
		path->sgid[12] = 10; path->sgid[15] = 1;
		path->dgid[12] = 10; path->dgid[15] = 2;
	}
	path->vlan = vlan;
	if (vlan)
		path->vlan_tci = (uint16_t)mr_tclass_vlan_tci(map, tc, 100);
	path->tclass = (uint8_t)mr_tclass_tos(map, tc);
	path->ttl = 64;
	path->udp_sport = 0xc123;
}

static void run_case(struct mr_dpdk_port *p, bool ipv6, bool vlan, uint32_t paylen)
{
	static uint8_t payload[4096], frame[9100];
	struct mr_tclass_map map;
	struct mr_path path;
	struct mr_roce_hdrs h;
	struct mr_iov iov;
	struct mr_pkt pkt;
	struct rte_mbuf *m, *rx[1];
	const uint8_t *b;
	uint32_t len;
	int flen;

	mr_tclass_defaults(&map);
	make_path(&path, ipv6, vlan, MR_TC_ROCE, &map);
	for (uint32_t i = 0; i < paylen; i++)
		payload[i] = (uint8_t)(i * 13 + paylen);
	memset(&h, 0, sizeof(h));
	h.opcode = MR_OP_RC_WRITE_ONLY;
	h.pkey = 0xffff;
	h.dqpn = 0x000123;
	h.psn = 0xfffffe;
	h.ackreq = true;
	h.reth.va = 0x1000;
	h.reth.rkey = 0xabcd;
	h.reth.dlen = paylen;
	iov.base = payload;
	iov.len = paylen;
	flen = mr_frame_build(frame, sizeof(frame), &path, 7, &h, &iov, 1);
	assert_true(flen > 0);

	m = mr_dpdk_port_mbuf_from_frame(p, frame, (uint32_t)flen);
	assert_non_null(m);
	assert_int_equal(mr_dpdk_port_tx(p, 0, m), 0);
	assert_int_equal(mr_dpdk_port_tx_flush(p, 0), 1);
	assert_int_equal(mr_dpdk_port_rx_burst(p, 0, rx, 1), 1);
	b = mr_dpdk_mbuf_frame(rx[0], NULL, 0, &len);
	assert_non_null(b);
	assert_int_equal(len, (uint32_t)flen);
	assert_memory_equal(b, frame, len);

	assert_int_equal(mr_frame_parse(b, len, true, &pkt), MR_PARSE_OK);
	assert_int_equal(pkt.hdr.opcode, MR_OP_RC_WRITE_ONLY);
	assert_int_equal(pkt.hdr.psn, 0xfffffe);
	assert_int_equal(pkt.hdr.dqpn, 0x123);
	assert_int_equal(pkt.hdr.reth.rkey, 0xabcd);
	assert_int_equal(pkt.ipv6, ipv6);
	assert_int_equal(pkt.vlan, vlan);
	if (vlan)
		assert_int_equal(pkt.vlan_tci, 0x6064); /* PCP 3, VID 100 */
	assert_int_equal(pkt.tclass, 26 << 2 | 2); /* DSCP 26, ECT(0) */
	assert_int_equal(pkt.udp_dport, MR_ROCE_UDP_PORT);
	assert_int_equal(pkt.paylen, paylen);
	assert_memory_equal(pkt.payload, payload, paylen);
	rte_pktmbuf_free(rx[0]);
}

static struct mr_dpdk_port *open_port(const char *name, uint16_t mtu)
{
	struct mr_dpdk_port_conf c;
	struct mr_dpdk_port *p;

	memset(&c, 0, sizeof(c));
	c.devname = name;
	c.mtu = mtu;
	c.mac = mac_a;
	c.socket_id = -1;
	p = mr_dpdk_port_open(&c);
	assert_non_null(p);
	return p;
}

static void test_roce_frames_1500(void **state)
{
	struct mr_dpdk_port *p = open_port("net_ring0", 1500);

	(void)state;
	run_case(p, false, false, 1024);
	run_case(p, false, true, 1024);
	run_case(p, true, false, 1024);
	run_case(p, true, true, 1021); /* padded payload */
	mr_dpdk_port_close(p);
}

static void test_roce_frames_jumbo(void **state)
{
	struct mr_dpdk_port *p = open_port("net_ring1", 9000);

	(void)state;
	run_case(p, false, true, 4096); /* IB MTU 4096 on a 9000-byte link */
	run_case(p, true, true, 4096);
	mr_dpdk_port_close(p);
}

int main(int argc, char **argv)
{
	char prefix[64];
	char *eal_argv[] = {
		argv[0], (char *)(uintptr_t)"--no-pci", (char *)(uintptr_t)"--no-huge",
		(char *)(uintptr_t)"--no-telemetry", (char *)(uintptr_t)"--no-shconf", prefix,
		(char *)(uintptr_t)"-l", (char *)(uintptr_t)"0", (char *)(uintptr_t)"-m",
		(char *)(uintptr_t)"256", (char *)(uintptr_t)"--log-level=lib.eal:error",
		(char *)(uintptr_t)"--vdev=net_ring0", (char *)(uintptr_t)"--vdev=net_ring1",
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roce_frames_1500),
		cmocka_unit_test(test_roce_frames_jumbo),
	};
	int rc;

	(void)argc;
	snprintf(prefix, sizeof(prefix), "--file-prefix=mrwire%ld", (long)getpid());
	if (rte_eal_init((int)(sizeof(eal_argv) / sizeof(eal_argv[0])), eal_argv) < 0) {
		fprintf(stderr, "SKIP: rte_eal_init failed (%s): DPDK EAL cannot start in this "
				"environment\n", rte_strerror(rte_errno));
		return 77;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	rte_eal_cleanup();
	return rc;
}
