#!/bin/bash
# SPDX-License-Identifier: MIT
# perftest flags of mrperf end to end through two daemons (tests/integration/lib.sh), each with
# --verify: write_bw -b (both sides send; both verify what the peer wrote), send_bw -e
# --use-srq (receives from an SRQ, completions through CQ events), write_lat -I 64 (inline
# writes), write_bw -l 4 (lists of 4 WRs per post), send_bw -b --report-both, and the tool run
# under a perftest name (ib_read_bw -o 4). Each pair must exit 0, verify every byte and print a
# result row with a non-zero figure. Exit 0 pass, 1 fail, 77 skip.
# Usage: flags_daemons.sh BUILD [CASE...]  (CASE: wbw_b sbw_e wlat_i wbw_l sbw_b rbw_o; default all)
set -u
cases=("${@:2}")
[ ${#cases[@]} -gt 0 ] || cases=(wbw_b sbw_e wlat_i wbw_l sbw_b rbw_o)
. "$(dirname "$0")/../integration/lib.sh"
itl_init mrperf_flags "$1"
itl_netns_up 1500
itl_daemon_conf a 1500
itl_daemon_conf b 1500
itl_daemon_start a
itl_daemon_start b
port=$((20000 + $$ % 20000))
ln -s "$ITL_MRPERF" "$ITL_WORK/ib_read_bw"
# The first result row after the column titles: "#bytes #iterations X Y ..." -> field N.
field() { grep -A1 "#bytes" "$1" | tail -n 1 | awk -v n="$2" '{print $n}'; }
nonzero() { awk -v x="$1" 'BEGIN { exit !(x + 0 > 0) }'; }
# pair NAME PROG TEST_AND_OPTS... : server on daemon b, client on daemon a
pair() {
	local name=$1 prog=$2 ps pc
	shift 2
	port=$((port + 1))
	itl_bg "$name-srv" timeout 120 "$prog" "$@" -u "$ITL_ACK_TIMEOUT" -p "$port" --verify \
		--sock "$ITL_WORK/b.sock"
	ps=$ITL_BG_PID
	itl_bg "$name-cli" timeout 120 "$prog" "$@" -u "$ITL_ACK_TIMEOUT" -p "$port" --verify \
		--sock "$ITL_WORK/a.sock" 127.0.0.1
	pc=$ITL_BG_PID
	itl_wait_pid "$pc" 120 || itl_fail "$name: client failed"
	itl_wait_pid "$ps" 120 || itl_fail "$name: server failed"
	grep -h "verified\|^ [0-9]\|events:\|results" "$ITL_WORK/$name-cli.log" "$ITL_WORK/$name-srv.log" |
		sed "s/^/mrperf_flags: $name: /"
}
verified() { # LOG: the receiving side checked bytes and found none corrupted
	grep -q "verified [1-9][0-9]* bytes, 0 corrupted" "$1"
}

# -b: both sides write into each other; each verifies its target; both print the sum.
# 1 KiB (one packet): bidirectional multi-packet messages (write 8 KiB, send 4 KiB) sometimes
# stall both daemons for 10 s on this VM (no completion, then RETRY_EXC/flush): a stack issue
# to investigate (docs/mrperf.md), not mrperf's accounting.
case_wbw_b() {
	pair wbw_b "$ITL_MRPERF" write_bw -b -n 2000 -s 1024
	for s in cli srv; do
		verified "$ITL_WORK/wbw_b-$s.log" || itl_fail "write_bw -b: $s did not verify the peer's writes"
		grep -q "Bidirectional   : ON" "$ITL_WORK/wbw_b-$s.log" || itl_fail "write_bw -b: $s header"
		bw=$(field "$ITL_WORK/wbw_b-$s.log" 4)
		nonzero "$bw" || itl_fail "write_bw -b: $s average '$bw'"
	done
	itl_ok "write_bw -b: both directions verified, sum $(field "$ITL_WORK/wbw_b-cli.log" 4) MB/sec"
}

# -e --use-srq: the server's receives come from the SRQ, and both sides slept on CQ events
case_sbw_e() {
	pair sbw_e "$ITL_MRPERF" send_bw -e --use-srq -n 2000 -s 4096
	grep -q "Using SRQ      : ON" "$ITL_WORK/sbw_e-srv.log" || itl_fail "send_bw --use-srq: header"
	verified "$ITL_WORK/sbw_e-srv.log" || itl_fail "send_bw -e --use-srq: server did not verify"
	for s in cli srv; do
		n=$(sed -n 's/^ events: \([0-9]*\) CQ wake-ups/\1/p' "$ITL_WORK/sbw_e-$s.log")
		[ -n "$n" ] || itl_fail "send_bw -e: $s printed no event count"
	done
	nonzero "$(field "$ITL_WORK/sbw_e-cli.log" 4)" || itl_fail "send_bw -e: client average"
	itl_ok "send_bw -e --use-srq: verified, $(sed -n 's/^ events: //p' "$ITL_WORK/sbw_e-srv.log") (server)"
}

# -I 64: write_lat posts its 2-byte writes inline
case_wlat_i() {
	pair wlat_i "$ITL_MRPERF" write_lat -I 64 -n 500 -s 64
	grep -q "Max inline data : 64\[B\]" "$ITL_WORK/wlat_i-cli.log" || itl_fail "write_lat -I: header"
	for s in cli srv; do
		verified "$ITL_WORK/wlat_i-$s.log" || itl_fail "write_lat -I 64: $s did not verify"
	done
	t=$(field "$ITL_WORK/wlat_i-cli.log" 6)
	nonzero "$t" || itl_fail "write_lat -I 64: t_avg '$t'"
	itl_ok "write_lat -I 64: verified, t_avg $t usec"
}

# -l 4: the client posts lists of 4; CQ moderation follows
case_wbw_l() {
	pair wbw_l "$ITL_MRPERF" write_bw -l 4 -n 2000 -s 8192
	grep -q "Post List       : 4" "$ITL_WORK/wbw_l-cli.log" || itl_fail "write_bw -l 4: header"
	verified "$ITL_WORK/wbw_l-srv.log" || itl_fail "write_bw -l 4: server did not verify"
	[ "$(field "$ITL_WORK/wbw_l-cli.log" 2)" = 2000 ] || itl_fail "write_bw -l 4: iterations"
	nonzero "$(field "$ITL_WORK/wbw_l-cli.log" 4)" || itl_fail "write_bw -l 4: average"
	itl_ok "write_bw -l 4: verified, $(field "$ITL_WORK/wbw_l-cli.log" 4) MB/sec"
}

# send_bw -b --report-both: both send and receive; each direction reported too
case_sbw_b() {
	pair sbw_b "$ITL_MRPERF" send_bw -b --report-both -n 1000 -s 1024
	for s in cli srv; do
		verified "$ITL_WORK/sbw_b-$s.log" || itl_fail "send_bw -b: $s did not verify"
		grep -q "Remote results" "$ITL_WORK/sbw_b-$s.log" || itl_fail "send_bw -b --report-both: $s"
	done
	itl_ok "send_bw -b --report-both: both directions verified"
}

# a perftest name selects the test; -o limits the outstanding READs
case_rbw_o() {
	pair rbw_o "$ITL_WORK/ib_read_bw" -o 4 -n 1000 -s 8192
	grep -q "RDMA_Read BW Test" "$ITL_WORK/rbw_o-cli.log" || itl_fail "ib_read_bw: not a read test"
	grep -q "Outstand reads  : 4" "$ITL_WORK/rbw_o-cli.log" || itl_fail "ib_read_bw -o 4: header"
	verified "$ITL_WORK/rbw_o-cli.log" || itl_fail "ib_read_bw -o 4: client did not verify"
	itl_ok "ib_read_bw -o 4: verified, $(field "$ITL_WORK/rbw_o-cli.log" 4) MB/sec"
}

for c in "${cases[@]}"; do "case_$c"; done
itl_daemon_stop a
itl_daemon_stop b
echo "mrperf_flags: PASS"
