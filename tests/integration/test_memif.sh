#!/bin/bash
# SPDX-License-Identifier: MIT
# Two daemons in two network namespaces joined by net_memif instead of a veth (ITL_LINK=memif,
# lib.sh). The memif server (a) starts first and alone, so its link is down (DPDK 22.11's memif
# client cannot start before its server: the probe fails); it must follow the link at run time
# when the client (b) connects, not sample it once at start. Then traffic with
# every byte checked: mrperf write/read/send --verify and the mr_xfer matrix (4 QPs, every
# operation, 1 B .. 1 MiB). Ends with both daemons' tx drop counters at 0 (frames the memif ring
# did not take wait in the port's tx backlog), and with both transmit rings warmed throughout
# (tx_warm, no slot miscounted: tx_warm_slips 0).
# With MTU 9000 (IB MTU 4096, it_memif_jumbo): DPDK 22.11's memif reports a 1518-byte
# max_rx_pktlen but carries a frame up to its buffer size (bsize=9216 here); the port gives
# ethdev 1500 and sizes its mbufs for 9000 (drivers/dpdk/dpdk_port.c soft_mtu). The default
# 2048-byte buffers would chain descriptors, which 22.11 corrupts: a daemon configured so must
# refuse to start, naming bsize. Both mrperf reports must say Mtu 4096 and every byte verify.
# The jumbo run's daemons sleep under light load ([engine] load_sleep_max_us, as bench-perf's
# bulk runs): the receiving daemon must have slept (load_sleeps > 0 in its stats) while every
# byte still verified.
# Usage: test_memif.sh BUILD_DIR [MTU]
set -u
. "$(dirname "$0")/lib.sh"
itl_init memif "$1"
mtu=${2:-1500}
itl_netns_up "$mtu"
ITL_LINK=memif
if [ "$mtu" = 9000 ]; then
	ITL_MEMIF_BSIZE=2048 itl_daemon_conf a "$mtu"
	ITL_START_NOFAIL=1 itl_daemon_start a &&
		itl_fail "a started at IB MTU 4096 with 2048-byte memif buffers"
	grep -q "do not fit the port's 2048-byte frames.*raise bsize" "$ITL_WORK/daemon-a.log" ||
		itl_fail "a's refusal does not name bsize: $(tail -n 2 "$ITL_WORK/daemon-a.log")"
	itl_ok "refused: $(grep -h "raise bsize" "$ITL_WORK/daemon-a.log" | sed 's/^.*ERR *//')"
fi
[ "$mtu" = 9000 ] && ITL_LOAD_SLEEP=50
for n in a b; do itl_daemon_conf $n "$mtu"; done
itl_daemon_start a
grep -q "port 0 up=0" "$ITL_WORK/daemon-a.log" || itl_fail "a's memif link was up with no client"
itl_ok "memif server started alone, link down"
itl_daemon_start b
itl_wait_for 20 grep -q "port 0: link up" "$ITL_WORK/daemon-a.log" ||
	itl_fail "a did not see its memif link come up"
itl_ok "a followed its link: $(grep -h "link up" "$ITL_WORK/daemon-a.log" | tail -1 | sed 's/^.*INFO *//')"
# Each side located its transmit ring once the link was up (drivers/dpdk/memif_warm.h).
for n in a b; do
	itl_wait_for 5 grep -q "memif transmit ring warmed" "$ITL_WORK/daemon-$n.log" ||
		itl_fail "daemon $n does not warm its memif transmit ring: $(grep -h "memif transmit" \
			"$ITL_WORK/daemon-$n.log" | tail -1)"
done
itl_ok "both daemons warm their memif transmit ring"
itl_mrperf write_bw write_bw -s 65536 -n 2000
if [ "$mtu" = 9000 ]; then
	for f in write_bw-cli write_bw-srv; do
		grep -q "Mtu *: 4096\[B\]" "$ITL_WORK/$f.log" ||
			itl_fail "$f: not at IB MTU 4096: $(grep -h "Mtu" "$ITL_WORK/$f.log")"
	done
	itl_ok "both mrperf sides ran at IB MTU 4096 over memif"
	s=$(itl_stat b load_sleeps)
	[ "${s:-0}" -gt 0 ] || itl_fail "daemon b never slept under light load (load_sleeps=${s:-?})"
	itl_ok "daemon b slept $s times under light load, every byte verified"
fi
itl_mrperf read_bw read_bw -s 65536 -n 1000
itl_mrperf send_bw send_bw -s 4096 -n 5000
itl_xfer_pair xfer 120 --qps 4 --sizes 1,4096,65537,1M --iters 2
itl_ok "mr_xfer over 4 QPs passed on both sides"
for n in a b; do
	d=$(itl_stat $n tx_buffer_drops)
	[ "${d:-x}" = 0 ] || itl_fail "daemon $n: tx_buffer_drops=${d:-?}"
done
itl_ok "no frame dropped at either daemon's tx"
# Warming stayed on through all of it, and its count of our ring slot (frames and segments
# sent) matched the ring's own index at every link poll.
for n in a b; do
	w=$(itl_stat $n tx_warm) sl=$(itl_stat $n tx_warm_slips)
	[ "${w:-x}" = 1 ] || itl_fail "daemon $n: tx_warm=${w:-?} at the end"
	[ "${sl:-x}" = 0 ] || itl_fail "daemon $n: tx_warm_slips=${sl:-?}"
done
itl_ok "memif transmit rings warmed to the end, slot counts exact"
for n in a b; do itl_daemon_stop $n; done
echo "$ITL_NAME: PASS"
