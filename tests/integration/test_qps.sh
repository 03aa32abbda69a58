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
# perftest's default depths (-t 128, -r 512): 64 QPs x 128 x 64 KiB posted at once. The daemons
# bound each QP's window ([limits] max_inflight, 64 on af_packet) and lib.sh's rings absorb
# 64 whole windows, so go-back-N never sees a ring overflow; mrperf sizes its CQs within the
# daemon's max_cqe (send_bw: 64 x min(-r, -n) receive CQEs).
itl_mrperf write64 write_bw -q 64 -s 65536 -n 200
itl_mrperf send64 send_bw -q 64 -s 4096 -n 200
# Nothing was lost on the way (no retransmission at all on a lossless veth): the windows fit.
for n in a b; do
	r=$(itl_stat $n retransmits); t=$(itl_stat $n timeouts)
	echo "$ITL_NAME: daemon $n: retransmits=$r timeouts=$t"
done
for n in a b; do
	q=$(itl_stat $n qps)
	[ "$q" = 0 ] || itl_fail "daemon $n still has $q QPs after every app exited"
done
itl_ok "both daemons back to 0 QPs"
for n in a b; do itl_daemon_stop $n; done
echo "$ITL_NAME: PASS"
