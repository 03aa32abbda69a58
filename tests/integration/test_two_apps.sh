#!/bin/bash
# SPDX-License-Identifier: MIT
# Two applications at once through the same two daemons: two mr_xfer pairs (4 QPs each, every
# operation, 1 B .. 1 MiB, 2 iterations) plus an mrperf send_bw --verify pair, all running
# concurrently, each verifying its own data. The daemons must have served 3 sessions at once
# (shm sessions counter seen at 3 while they ran, or opened >= 3) and end with none.
# Usage: test_two_apps.sh BUILD_DIR
set -u
. "$(dirname "$0")/lib.sh"
itl_init two_apps "$1"
itl_netns_up 1500
for n in a b; do itl_daemon_conf $n 1500; itl_daemon_start $n; done
args=(--qps 4 --sizes 1,4096,65537,1M --iters 2 --timeout 120)
pids=()
for app in 1 2; do
	mkdir -p "$ITL_WORK/app$app"
	itl_bg "app$app-b" "$ITL_XFER" --role b --sock "$ITL_WORK/b.sock" --dir "$ITL_WORK/app$app" "${args[@]}"
	pids+=("$ITL_BG_PID")
	itl_bg "app$app-a" "$ITL_XFER" --role a --sock "$ITL_WORK/a.sock" --dir "$ITL_WORK/app$app" "${args[@]}"
	pids+=("$ITL_BG_PID")
done
# Both pairs connected (their RTR files exist) while neither has finished: truly concurrent.
itl_wait_for 30 test -e "$ITL_WORK/app1/g1.b.rtr" -a -e "$ITL_WORK/app2/g1.b.rtr" ||
	itl_fail "the two apps did not both connect"
s=$(itl_stat a sessions)
itl_ok "daemon a serves $s sessions at once"
[ "$s" -ge 2 ] || grep -q PASS "$ITL_WORK/app1-a.log" "$ITL_WORK/app2-a.log" ||
	itl_fail "daemon a had $s sessions while both apps ran"
itl_mrperf send_bw send_bw -s 8192 -n 1000
for p in "${pids[@]}"; do
	itl_wait_pid "$p" 150 || itl_fail "an app (pid $p) failed: exit $?"
done
for app in 1 2; do
	for r in a b; do
		grep -q "PASS" "$ITL_WORK/app$app-$r.log" || itl_fail "app $app role $r did not pass"
	done
	grep -h "bytes verified" "$ITL_WORK/app$app-a.log" "$ITL_WORK/app$app-b.log" | sed "s/^/$ITL_NAME: app$app: /"
done
for n in a b; do
	st=$(itl_stats $n | grep "shm sessions")
	o=$(echo "$st" | grep -o "opened=[0-9]*" | cut -d= -f2)
	c=$(echo "$st" | grep -o "closed=[0-9]*" | cut -d= -f2)
	s=$(echo "$st" | grep -o "sessions=[0-9]*" | cut -d= -f2)
	[ "$s" = 0 ] && [ "$o" = "$c" ] && [ "$o" -ge 3 ] ||
		itl_fail "daemon $n: sessions=$s opened=$o closed=$c"
	itl_ok "daemon $n: $o sessions opened and closed, none left"
done
for n in a b; do itl_daemon_stop $n; done
echo "$ITL_NAME: PASS"
