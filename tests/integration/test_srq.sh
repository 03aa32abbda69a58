#!/bin/bash
# SPDX-License-Identifier: MIT
# Shared receive queues through a real daemon (loopback on daemon a): srq_loop with plain RC
# and with MetaRoCE, every byte and every completion checked (see srq_loop.c).
# Usage: test_srq.sh BUILD_DIR
set -u
. "$(dirname "$0")/lib.sh"
itl_init srq "$1"
loop="$ITL_BUILD/tests/integration/srq_loop"
[ -x "$loop" ] || itl_skip "$loop not built"
itl_netns_up 1500
itl_daemon_conf a 1500
itl_daemon_start a
for t in rc metaroce; do
	itl_bg "srq-$t" "$loop" --sock "$ITL_WORK/a.sock" --transport $t
	itl_wait_pid "$ITL_BG_PID" 90 || itl_fail "srq_loop ($t) failed: exit $?"
	grep -q PASS "$ITL_WORK/srq-$t.log" || itl_fail "srq_loop ($t) did not pass"
	itl_ok "$(grep PASS "$ITL_WORK/srq-$t.log")"
done
itl_daemon_stop a
