#!/bin/bash
# SPDX-License-Identifier: MIT
# 1 to 64 QPs concurrently between two daemons: mr_xfer with 1, 8 and 64 QPs, every operation,
# all QPs' WRs in flight at once, data/immediates/atomics verified per QP (a pattern per round
# and QP: data landing on the wrong QP's buffer is caught); then mrperf write_bw and send_bw
# -q 64 --verify. The daemons' QP count must be back to 0 after the apps exit.
# Usage: test_qps.sh BUILD_DIR
set -u
. "$(dirname "$0")/lib.sh"
itl_init multi_qp "$1"
itl_netns_up 1500
for n in a b; do itl_daemon_conf $n 1500; itl_daemon_start $n; done
for nq in 1 8 64; do
	itl_xfer_pair "qps$nq" 120 --qps $nq --sizes 1,4097,65536 --expect-mtu 1024
	grep -q "gen 1: $nq QPs: atomic words as modelled" "$ITL_WORK/qps$nq-b.log" ||
		itl_fail "$nq QPs: target did not verify all QPs"
	itl_ok "$nq QPs concurrently: every operation verified on each QP"
done
# Shallow queues: with 64 QPs x perftest's default depth 128 x 64 KiB the stack (no congestion
# control in RoCE mode) overruns af_packet's ring and go-back-N collapses (see README.md);
# -r 128 keeps send_bw's CQ (64 x (tx + rx + 2)) under the client library's 32768 limit.
itl_mrperf write64 write_bw -q 64 -s 65536 -t 2 -n 100
itl_mrperf send64 send_bw -q 64 -s 4096 -t 4 -r 128 -n 200
for n in a b; do
	q=$(itl_stat $n qps)
	[ "$q" = 0 ] || itl_fail "daemon $n still has $q QPs after every app exited"
done
itl_ok "both daemons back to 0 QPs"
for n in a b; do itl_daemon_stop $n; done
echo "$ITL_NAME: PASS"
