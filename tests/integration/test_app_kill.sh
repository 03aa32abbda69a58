#!/bin/bash
# SPDX-License-Identifier: MIT
# An app killed mid-transfer: a victim pair streams 64 KiB WRITEs (16 outstanding on each of 4
# QPs) while a survivor pair runs every operation verified. The victim's initiator gets
# kill -9 while its WRs are in flight. Asserted:
#  - daemon A reclaims the victim: its session count drops by one, "closed" rises by one and its
#    QP count drops by exactly the victim's 4 QPs (SIGUSR1 stats);
#  - the survivor completes with every byte and value verified;
#  - both daemons still stop cleanly (exit 0, sockets removed).
# Usage: test_app_kill.sh BUILD_DIR
set -u
. "$(dirname "$0")/lib.sh"
itl_init app_kill "$1"
itl_netns_up 1500
for n in a b; do itl_daemon_conf $n 1500; itl_daemon_start $n; done
mkdir -p "$ITL_WORK/victim" "$ITL_WORK/surv"
itl_bg victim-b "$ITL_XFER" --role b --sock "$ITL_WORK/b.sock" --dir "$ITL_WORK/victim" \
	--qps 4 --sizes 65536 --ops write --timeout 120
vb=$ITL_BG_PID
itl_bg victim-a "$ITL_XFER" --role a --sock "$ITL_WORK/a.sock" --dir "$ITL_WORK/victim" \
	--qps 4 --sizes 65536 --ops write --stream 100 --timeout 120
va=$ITL_BG_PID
itl_wait_for 30 grep -q "stream: [1-9][0-9]* completed" "$ITL_WORK/victim-a.log" ||
	itl_fail "victim never streamed"
# The survivor: 2 QPs, every op, up to 1 MiB, 3 iterations (long enough to overlap the kill).
itl_bg surv-b "$ITL_XFER" --role b --sock "$ITL_WORK/b.sock" --dir "$ITL_WORK/surv" \
	--qps 2 --sizes 1,4097,1M --iters 3 --timeout 120
sb=$ITL_BG_PID
itl_bg surv-a "$ITL_XFER" --role a --sock "$ITL_WORK/a.sock" --dir "$ITL_WORK/surv" \
	--qps 2 --sizes 1,4097,1M --iters 3 --timeout 120
sa=$ITL_BG_PID
itl_wait_for 30 test -e "$ITL_WORK/surv/g1.b.rtr" || itl_fail "survivor never connected"
st=$(itl_stats a)
s0=$(echo "$st" | grep -o " sessions=[0-9]*" | cut -d= -f2)
c0=$(echo "$st" | grep -o " closed=[0-9]*" | cut -d= -f2)
q0=$(echo "$st" | grep -o " qps=[0-9]*" | cut -d= -f2)
w0=$(echo "$st" | grep -o " send_wrs=[0-9]*" | cut -d= -f2)
grep -q PASS "$ITL_WORK/surv-a.log" && itl_fail "survivor finished before the kill: no overlap"
kill -0 "$va" || itl_fail "victim exited before the kill"
kill -KILL "$va"
itl_wait_pid "$va" 10
itl_ok "victim pid $va killed with SIGKILL after $(grep -o "stream: [0-9]* completed" "$ITL_WORK/victim-a.log" | tail -n 1 | cut -d' ' -f2) WRITEs completed ($w0 send WRs seen by daemon a)"
reclaimed() {
	local s c q
	st=$(itl_stats a)
	s=$(echo "$st" | grep -o " sessions=[0-9]*" | cut -d= -f2)
	c=$(echo "$st" | grep -o " closed=[0-9]*" | cut -d= -f2)
	q=$(echo "$st" | grep -o " qps=[0-9]*" | cut -d= -f2)
	[ "$c" -ge $((c0 + 1)) ] && [ "$s" -le $((s0 - 1)) ] &&
		{ [ "$q" -le $((q0 - 4)) ] || grep -q PASS "$ITL_WORK/surv-a.log"; }
}
itl_wait_for 10 reclaimed || itl_fail "daemon a did not reclaim the killed app (before: sessions=$s0 closed=$c0 qps=$q0; now: $(echo "$st" | grep -o "sessions=[0-9]*\|closed=[0-9]*\|qps=[0-9]*" | tr '\n' ' '))"
itl_ok "daemon a reclaimed the killed session: sessions $s0 -> $(echo "$st" | grep -o " sessions=[0-9]*" | cut -d= -f2), closed $c0 -> $(echo "$st" | grep -o " closed=[0-9]*" | cut -d= -f2), qps $q0 -> $(echo "$st" | grep -o " qps=[0-9]*" | cut -d= -f2)"
itl_wait_pid "$sa" 130 || itl_fail "survivor initiator failed after the kill"
itl_wait_pid "$sb" 30 || itl_fail "survivor target failed after the kill"
grep -h "bytes verified" "$ITL_WORK/surv-a.log" "$ITL_WORK/surv-b.log" | sed "s/^/$ITL_NAME: survivor: /"
grep -q PASS "$ITL_WORK/surv-a.log" && grep -q PASS "$ITL_WORK/surv-b.log" || itl_fail "survivor did not pass"
itl_ok "the other app completed, every byte verified"
# The victim's target waits for a "done" that never comes; it is ours to stop.
kill -TERM "$vb" 2>/dev/null; itl_wait_pid "$vb" 10
for n in a b; do itl_daemon_stop $n; done
itl_ok "both daemons stopped cleanly"
echo "$ITL_NAME: PASS"
