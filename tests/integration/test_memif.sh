#!/bin/bash
# SPDX-License-Identifier: MIT
# Two daemons in two network namespaces joined by net_memif instead of a veth (ITL_LINK=memif,
# lib.sh). The memif server (a) starts first and alone, so its link is down (DPDK 22.11's memif
# client cannot start before its server: the probe fails); it must follow the link at run time
# when the client (b) connects, not sample it once at start. Then traffic with
# every byte checked: mrperf write/read/send --verify and the mr_xfer matrix (4 QPs, every
# operation, 1 B .. 1 MiB). Ends with both daemons' tx drop counters at 0 (frames the memif ring
# did not take wait in the port's tx backlog).
# Usage: test_memif.sh BUILD_DIR
set -u
. "$(dirname "$0")/lib.sh"
itl_init memif "$1"
itl_netns_up 1500
ITL_LINK=memif
for n in a b; do itl_daemon_conf $n 1500; done
itl_daemon_start a
grep -q "port 0 up=0" "$ITL_WORK/daemon-a.log" || itl_fail "a's memif link was up with no client"
itl_ok "memif server started alone, link down"
itl_daemon_start b
itl_wait_for 20 grep -q "port 0: link up" "$ITL_WORK/daemon-a.log" ||
	itl_fail "a did not see its memif link come up"
itl_ok "a followed its link: $(grep -h "link up" "$ITL_WORK/daemon-a.log" | tail -1 | sed 's/^.*INFO *//')"
itl_mrperf write_bw write_bw -s 65536 -n 2000
itl_mrperf read_bw read_bw -s 65536 -n 1000
itl_mrperf send_bw send_bw -s 4096 -n 5000
itl_xfer_pair xfer 120 --qps 4 --sizes 1,4096,65537,1M --iters 2
itl_ok "mr_xfer over 4 QPs passed on both sides"
for n in a b; do
	d=$(itl_stat $n tx_buffer_drops)
	[ "${d:-x}" = 0 ] || itl_fail "daemon $n: tx_buffer_drops=${d:-?}"
done
itl_ok "no frame dropped at either daemon's tx"
for n in a b; do itl_daemon_stop $n; done
echo "$ITL_NAME: PASS"
