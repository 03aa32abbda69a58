#!/bin/bash
# SPDX-License-Identifier: MIT
# mrperf -D (perftest's duration mode) for every test, through two daemons (tests/integration/
# lib.sh): both sides run with -D 1 as perftest's do; each must exit 0 with a result row; the
# passive side of send_bw and of the latency tests stops when the active side ends the run (its
# end-of-test exchange), so send_bw's receiver counts exactly the messages the sender completed.
# Exit 0 pass, 1 fail, 77 skip. Usage: duration_daemons.sh BUILD_DIR
set -u
. "$(dirname "$0")/../integration/lib.sh"
itl_init mrperf_duration "$1"
itl_netns_up 1500
itl_daemon_conf a 1500
itl_daemon_conf b 1500
itl_daemon_start a
itl_daemon_start b
port=$((20000 + $$ % 20000))
row() { grep -A1 "#bytes" "$1" | tail -n 1 | awk '{print $2}'; }
# pair LOG TEST WHAT: mrperf TEST -D 1, server on b, client on a, logs LOG-srv / LOG-cli; both
# must exit 0 (else fails saying WHAT); PAIR_SECS = seconds from start to both ended.
pair() {
	local t0 ps pc
	port=$((port + 1))
	t0=$(date +%s)
	itl_bg "$1-srv" timeout 60 "$ITL_MRPERF" "$2" -D 1 -u "$ITL_ACK_TIMEOUT" -p "$port" \
		--sock "$ITL_WORK/b.sock"
	ps=$ITL_BG_PID
	itl_bg "$1-cli" timeout 60 "$ITL_MRPERF" "$2" -D 1 -u "$ITL_ACK_TIMEOUT" -p "$port" \
		--sock "$ITL_WORK/a.sock" 127.0.0.1
	pc=$ITL_BG_PID
	itl_wait_pid "$pc" 60 || itl_fail "$3: client failed"
	itl_wait_pid "$ps" 60 || itl_fail "$3: server failed"
	PAIR_SECS=$(( $(date +%s) - t0 ))
}
for t in write_bw send_bw read_bw atomic_bw write_lat send_lat read_lat atomic_lat; do
	pair "$t" "$t" "$t -D 1"
	n=$(row "$ITL_WORK/$t-cli.log")
	[ -n "$n" ] && [ "$n" -gt 1 ] || itl_fail "$t -D 1: no result row ($n)"
	if [ "$t" = send_bw ]; then
		m=$(row "$ITL_WORK/$t-srv.log")
		[ "$m" = "$n" ] || itl_fail "send_bw -D: server counted $m messages, client sent $n"
	fi
	itl_ok "$t -D 1: $n iterations"
done
itl_daemon_stop a
itl_daemon_stop b
# The passive side's last reply can still be in flight when the active side ends the run (its
# clock stops it after a whole round) and destroys its QP: a reply nobody will ACK. b's frames
# get 10-50 ms of delay here, so b's ACK of the client's last write often overtakes b's reply
# write: the client ends before that write arrives. The server must then end on the end-of-test
# exchange, not wait out its retries and fail (RETRY_EXC_ERR, CI of stop 14 on a loaded VM).
ITL_DAEMON_ARGS="--impair-tx delay=10ms,jitter=40ms,seed=7" itl_daemon_start b
itl_daemon_start a
for t in write_lat write_lat write_lat write_lat send_lat; do
	pair "$t-late" "$t" "$t -D 1, late replies"
	el=$PAIR_SECS
	# -D 1 plus connection setup and the end-of-test exchange; waiting out the retries of
	# the lost reply (-u 18: 1 s x 7) would take 8 s more.
	[ "$el" -le 6 ] || itl_fail "$t -D 1, late replies: the pair took ${el} s to end"
	n=$(row "$ITL_WORK/$t-late-cli.log")
	[ -n "$n" ] && [ "$n" -gt 1 ] || itl_fail "$t -D 1, late replies: no result row ($n)"
	itl_ok "$t -D 1 with b's frames 10-50 ms late: $n iterations, both ended in ${el} s"
done
itl_daemon_stop a
itl_daemon_stop b
echo "mrperf_duration: PASS"
