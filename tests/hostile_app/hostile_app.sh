#!/bin/bash
# SPDX-License-Identifier: MIT
# Hostile apps against two real metaroced daemons (veth between two network namespaces,
# tests/integration/lib.sh). While a well-behaved app (mr_xfer pairs, 2 QPs, every operation,
# 1 B .. 64 KiB, every byte verified, one generation after another) keeps transferring through
# both daemons, mr_hostile runs the given cases one by one. After each case:
#   - both daemon PIDs are alive and answer a fresh session (mr_hostile ping);
#   - the well-behaved app completed two more verified generations (it keeps making progress;
#     the second one started after the case ended), and no generation failed;
#   - ring cases raised ring_corrupt, descriptor cases raised wr_rejected (SIGUSR1 stats).
# Quota cases hold what they grabbed (--hold) while the well-behaved app must progress.
# At the end every hostile session is reclaimed (sessions 0, qps 0 on both daemons) and both
# daemons stop cleanly (exit 0: under ASan that includes no leak report) with no sanitizer
# report in their logs.
# Usage: hostile_app.sh BUILD_DIR CASE[,CASE...]
set -u
. "$(dirname "$0")/../integration/lib.sh"
group=${2:?usage: hostile_app.sh BUILD_DIR CASE[,CASE...]}
itl_init "hostile_app" "$1"
HOSTILE="$ITL_BUILD/tests/hostile_app/mr_hostile"
[ -x "$HOSTILE" ] || itl_skip "$HOSTILE not built"
export METAROCE_TIMEOUT_MS=${METAROCE_TIMEOUT_MS:-5000}

hs_cleanup() {
	local rc=$? p
	touch "$ITL_WORK/stop" 2>/dev/null
	# The survivor loop's current mr_xfer pair is ours too.
	for p in $(cat "$ITL_WORK/surv.pids" 2>/dev/null); do kill -TERM "$p" 2>/dev/null; done
	(exit $rc)
	itl_cleanup
}
trap hs_cleanup EXIT

itl_netns_up 1500
for n in a b; do itl_daemon_conf $n 1500; itl_daemon_start $n; done
pida=$(itl_pid a)
pidb=$(itl_pid b)

survivor_loop() {
	local g=1 pa pb rca rcb
	while [ ! -e "$ITL_WORK/stop" ]; do
		"$ITL_XFER" --role b --sock "$ITL_WORK/b.sock" --dir "$ITL_WORK/surv" --gen $g \
			--qps 2 --sizes 1,4097,65536 --timeout 60 > "$ITL_WORK/surv-b.$g.out" 2>&1 &
		pb=$!
		"$ITL_XFER" --role a --sock "$ITL_WORK/a.sock" --dir "$ITL_WORK/surv" --gen $g \
			--qps 2 --sizes 1,4097,65536 --timeout 60 > "$ITL_WORK/surv-a.$g.out" 2>&1 &
		pa=$!
		echo "$pa $pb" > "$ITL_WORK/surv.pids"
		wait $pa; rca=$?
		wait $pb; rcb=$?
		if [ $rca = 0 ] && [ $rcb = 0 ] && grep -q PASS "$ITL_WORK/surv-a.$g.out" &&
		   grep -q PASS "$ITL_WORK/surv-b.$g.out"; then
			echo "gen $g PASS $(grep -ho "[0-9]* bytes verified" "$ITL_WORK/surv-a.$g.out" "$ITL_WORK/surv-b.$g.out" | tr '\n' ' ')" >> "$ITL_WORK/surv.status"
			rm -f "$ITL_WORK/surv-a.$g.out" "$ITL_WORK/surv-b.$g.out"
		else
			echo "gen $g FAIL initiator=$rca target=$rcb" >> "$ITL_WORK/surv.status"
			cp "$ITL_WORK/surv-a.$g.out" "$ITL_WORK/surv-a.$g.log"
			cp "$ITL_WORK/surv-b.$g.out" "$ITL_WORK/surv-b.$g.log"
		fi
		g=$((g + 1))
	done
}
mkdir -p "$ITL_WORK/surv"
: > "$ITL_WORK/surv.status"
survivor_loop &
ITL_PIDS+=($!)
surv_loop_pid=$!

surv_passes() { grep -c " PASS" "$ITL_WORK/surv.status"; }
surv_at_least() { [ "$(surv_passes)" -ge "$1" ]; }
itl_wait_for 60 surv_at_least 1 || itl_fail "the well-behaved app never completed a generation"
itl_ok "well-behaved app: $(tail -n 1 "$ITL_WORK/surv.status")"

stat_of() { # DAEMON KEY
	itl_stats "$1" | grep -o " $2=[0-9]*" | tail -n 1 | cut -d= -f2
}
# "ring_corrupt wr_rejected", each summed over both daemons (one dump per daemon).
shm_counters() {
	local ta tb
	ta=$(itl_stats a | grep "stats: shm")
	tb=$(itl_stats b | grep "stats: shm")
	for k in ring_corrupt wr_rejected; do
		echo $(( $(echo "$ta" | grep -o " $k=[0-9]*" | cut -d= -f2) + $(echo "$tb" | grep -o " $k=[0-9]*" | cut -d= -f2) ))
	done | tr '\n' ' '
}
counted() { # CASE: the cases whose effect shows in the shm counters
	case $1 in ring_sq_jump|ring_sq_back|ring_rq_jump|ring_garbage|sqe_bad_fields|sge_overflow) return 0 ;; esac
	return 1
}

failed=()
run_case() { # CASE
	local c=$1 log="$ITL_WORK/hostile-$1.log" p0 rc hold="" hp rc0 rj0 rc1 rj1
	p0=$(surv_passes)
	counted "$c" && read -r rc0 rj0 <<< "$(shm_counters)"
	case $c in quota_*) hold="$ITL_WORK/release-$c" ;; esac
	if [ -n "$hold" ]; then
		"$HOSTILE" --sock-a "$ITL_WORK/a.sock" --sock-b "$ITL_WORK/b.sock" --pid-a "$pida" \
			--pid-b "$pidb" --hold "$hold" "$c" > "$log" 2>&1 &
		hp=$!
		ITL_PIDS+=($hp)
		itl_wait_for 120 grep -q "holding\|: FAIL (setup)" "$log" ||
			echo "$ITL_NAME: $c: never reached its hold point" >> "$log"
		# While the hostile app holds everything it could get, the other app must progress.
		if ! itl_wait_for 90 surv_at_least $((p0 + 2)); then
			echo "mr_hostile: FAIL: the well-behaved app made no progress while $c held its resources" >> "$log"
		fi
		touch "$hold"
		itl_wait_pid "$hp" 60; rc=$?
		p0=$(surv_passes)
	else
		timeout 240 "$HOSTILE" --sock-a "$ITL_WORK/a.sock" --sock-b "$ITL_WORK/b.sock" \
			--pid-a "$pida" --pid-b "$pidb" "$c" > "$log" 2>&1
		rc=$?
	fi
	sed "s/^/$ITL_NAME: /" "$log"
	for n in a b; do
		kill -0 "$(itl_pid $n)" 2>/dev/null && continue
		grep -h -A 30 "ERROR: AddressSanitizer\|runtime error\|SEGV\|Assertion" "$ITL_WORK/daemon-$n.log" | head -n 40
		itl_fail "$c: daemon $n (pid $(itl_pid $n)) died"
	done
	"$HOSTILE" --sock-a "$ITL_WORK/a.sock" --sock-b "$ITL_WORK/b.sock" ping > "$ITL_WORK/ping.out" 2>&1 ||
		{ cat "$ITL_WORK/ping.out"; rc=1; echo "$ITL_NAME: $c: a daemon does not answer after the case"; }
	if ! itl_wait_for 90 surv_at_least $((p0 + 2)); then
		rc=1
		echo "$ITL_NAME: $c: the well-behaved app made no progress after the case ($(tail -n 1 "$ITL_WORK/surv.status"))"
	fi
	if grep -q " FAIL" "$ITL_WORK/surv.status"; then
		rc=1
		echo "$ITL_NAME: $c: the well-behaved app failed: $(grep " FAIL" "$ITL_WORK/surv.status" | head -n 3 | tr '\n' ' ')"
		tail -n 5 "$ITL_WORK"/surv-*.log 2>/dev/null
		sed -i 's/ FAIL/ failed-reported/' "$ITL_WORK/surv.status"
	fi
	counted "$c" && read -r rc1 rj1 <<< "$(shm_counters)"
	case $c in
	ring_sq_jump|ring_sq_back|ring_rq_jump)
		[ "$rc1" -gt "$rc0" ] || { rc=1; echo "$ITL_NAME: $c: ring_corrupt stayed at $rc0"; } ;;
	ring_garbage|sqe_bad_fields|sge_overflow)
		[ "$rj1" -gt "$rj0" ] || { rc=1; echo "$ITL_NAME: $c: wr_rejected stayed at $rj0"; } ;;
	esac
	if [ "$rc" = 0 ]; then
		itl_ok "$c: PASS (daemons up and answering, other app at $(surv_passes) verified generations)"
	else
		echo "$ITL_NAME: $c: FAIL"
		failed+=("$c")
	fi
}

IFS=, read -r -a cases <<< "$group"
for c in "${cases[@]}"; do run_case "$c"; done

touch "$ITL_WORK/stop"
itl_wait_pid "$surv_loop_pid" 90 || itl_fail "the well-behaved app's last generation did not end"
itl_ok "well-behaved app: $(surv_passes) generations verified, $(grep -c "failed-reported" "$ITL_WORK/surv.status") failed"
# Every hostile session (including the SIGKILLed ones) reclaimed: nothing left on either daemon.
reclaimed() {
	local n s q
	for n in a b; do
		st=$(itl_stats $n)
		s=$(echo "$st" | grep -o " sessions=[0-9]*" | tail -n 1 | cut -d= -f2)
		q=$(echo "$st" | grep -o " qps=[0-9]*" | tail -n 1 | cut -d= -f2)
		[ "$s" = 0 ] && [ "$q" = 0 ] || return 1
	done
}
itl_wait_for 20 reclaimed || { failed+=("reclaim"); echo "$ITL_NAME: sessions/QPs left: a: $(itl_stats a | grep -o " sessions=[0-9]*\| qps=[0-9]*" | tr '\n' ' ') b: $(itl_stats b | grep -o " sessions=[0-9]*\| qps=[0-9]*" | tr '\n' ' ')"; }
for n in a b; do itl_daemon_stop $n; done
itl_ok "both daemons stopped cleanly"
# UBSan reports do not stop the daemon unless halt_on_error is set: any report fails the run.
if grep -h "runtime error:\|ERROR: AddressSanitizer\|ERROR: LeakSanitizer" "$ITL_WORK"/daemon-*.log; then
	failed+=("sanitizer-report")
fi
if [ ${#failed[@]} -gt 0 ]; then
	echo "$ITL_NAME: FAIL: ${failed[*]}"
	exit 1
fi
echo "$ITL_NAME: PASS ($group)"
