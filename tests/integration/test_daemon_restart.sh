#!/bin/bash
# SPDX-License-Identifier: MIT
# A daemon restarted under its apps. Pair 1 (2 QPs) runs every operation verified, then its
# initiator (on daemon A) keeps WRITEs outstanding; daemon B gets SIGTERM. Asserted:
#  - B exits 0, prints its final stats and removes its socket file;
#  - A's QPs to the old instance fail cleanly: every outstanding WR completes with an error,
#    the first with RETRY_EXC_ERR (C9-141), the QPs end in ERR, no hang (mr_xfer --until-error);
#  - the target app on B notices its daemon is gone (a control call fails) instead of hanging;
#  - B restarted with the same config recreates the socket file; the same target app reconnects
#    and, with a new initiator on A, runs every operation again, verified (generation 2);
#  - daemon A's reclaimed sessions and both daemons stop cleanly at the end.
# Usage: test_daemon_restart.sh BUILD_DIR
set -u
. "$(dirname "$0")/lib.sh"
itl_init daemon_restart "$1"
itl_netns_up 1500
for n in a b; do itl_daemon_conf $n 1500; itl_daemon_start $n; done
d="$ITL_WORK/pair"
mkdir -p "$d"
args=(--qps 2 --sizes 1,4097,65536 --timeout 60)
itl_bg target "$ITL_XFER" --role b --sock "$ITL_WORK/b.sock" --dir "$d" --reconnect "${args[@]}"
tb=$ITL_BG_PID
itl_bg init1 "$ITL_XFER" --role a --sock "$ITL_WORK/a.sock" --dir "$d" --until-error "${args[@]}"
i1=$ITL_BG_PID
itl_wait_for 60 grep -q "stream: [1-9][0-9]* completed" "$ITL_WORK/init1.log" ||
	itl_fail "generation 1 did not reach the streaming phase"
grep -q "gen 1: 2 QPs: atomic words as modelled" "$ITL_WORK/target.log" || itl_fail "gen 1 not verified by the target"
itl_ok "generation 1 verified; initiator streaming WRITEs to daemon b"

ino0=$(stat -c %i "$ITL_WORK/b.sock")
itl_daemon_stop b
itl_ok "daemon b stopped on SIGTERM: exit 0, socket removed, final stats printed"

itl_wait_pid "$i1" 60
rc=$?
[ "$rc" = 0 ] || itl_fail "initiator on daemon a did not end cleanly after the peer daemon went away (exit $rc)"
grep "first error\|every outstanding" "$ITL_WORK/init1.log" | sed "s/^/$ITL_NAME: /"
itl_ok "daemon a's QPs to the old instance failed cleanly"
itl_wait_for 30 grep -q "daemon gone" "$ITL_WORK/target.log" || itl_fail "the target app did not notice its daemon was gone"
grep "daemon gone" "$ITL_WORK/target.log" | sed "s/^/$ITL_NAME: /"

itl_daemon_start b
[ -S "$ITL_WORK/b.sock" ] || itl_fail "restarted daemon b has no socket"
ino1=$(stat -c %i "$ITL_WORK/b.sock")
itl_ok "daemon b restarted; socket file recreated (inode $ino0 -> $ino1)"
itl_wait_for 30 grep -q "reconnected" "$ITL_WORK/target.log" || itl_fail "the target app did not reconnect"
itl_bg init2 "$ITL_XFER" --role a --sock "$ITL_WORK/a.sock" --dir "$d" --gen 2 "${args[@]}"
i2=$ITL_BG_PID
itl_wait_pid "$i2" 90 || itl_fail "generation 2 initiator failed"
itl_wait_pid "$tb" 30 || itl_fail "target app failed in generation 2"
grep -h "gen 2.*verified" "$ITL_WORK/init2.log" "$ITL_WORK/target.log" | sed "s/^/$ITL_NAME: /"
grep -q PASS "$ITL_WORK/init2.log" && grep -q PASS "$ITL_WORK/target.log" || itl_fail "generation 2 did not pass"
itl_ok "after the restart the apps reconnected and transferred again, verified"
st=$(itl_stats a | grep "shm sessions")
s=$(echo "$st" | grep -o " sessions=[0-9]*" | cut -d= -f2)
[ "$s" = 0 ] || itl_fail "daemon a still has $s sessions: $st"
for n in a b; do itl_daemon_stop $n; done
echo "$ITL_NAME: PASS"
