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
for t in write_bw send_bw read_bw atomic_bw write_lat send_lat read_lat atomic_lat; do
	port=$((port + 1))
	itl_bg "$t-srv" timeout 60 "$ITL_MRPERF" "$t" -D 1 -u "$ITL_ACK_TIMEOUT" -p "$port" \
		--sock "$ITL_WORK/b.sock"
	ps=$ITL_BG_PID
	itl_bg "$t-cli" timeout 60 "$ITL_MRPERF" "$t" -D 1 -u "$ITL_ACK_TIMEOUT" -p "$port" \
		--sock "$ITL_WORK/a.sock" 127.0.0.1
	pc=$ITL_BG_PID
	itl_wait_pid "$pc" 60 || itl_fail "$t -D 1: client failed"
	itl_wait_pid "$ps" 60 || itl_fail "$t -D 1: server failed"
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
echo "mrperf_duration: PASS"
