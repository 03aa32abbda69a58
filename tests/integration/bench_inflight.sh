#!/bin/bash
# SPDX-License-Identifier: MIT
# Not a test: measures what bounded in-flight does on this machine (engineer notes, README).
# Two daemons over veth (lib.sh), then for each case: mrperf/mr_xfer, and the sender's and the
# receiver's transport counters (retransmits, timeouts, out_of_sequence, ctx_rx_unknown_qp) and
# the port's imissed, as deltas over the case.
# Usage: [ITL_BENCH_MTU=9000] bench_inflight.sh BUILD_DIR [MAX_INFLIGHT (0 = daemon default)] [CASES...]
#   cases: w1 w8 w64 (write_bw -q N -s 64K), w16m/r16m (write_bw/read_bw -s 16M -n 5), s64 (send_bw -q 64 -s 4K), x16m (mr_xfer 16 MiB)
set -u
. "$(dirname "$0")/lib.sh"
itl_init bench "$1"
ITL_MAX_INFLIGHT=${2:-0}
shift 2 || shift $#
cases=${*:-w1 w8 w64 s64 x16m}
mtu=${ITL_BENCH_MTU:-1500}
itl_netns_up "$mtu"
for n in a b; do itl_daemon_conf $n "$mtu"; itl_daemon_start $n; done
grep -h "max_inflight" "$ITL_WORK"/daemon-a.log | head -n 1
snap() { # N -> "retransmits timeouts ooo unknown imissed"
	local s
	s=$(itl_stats "$1")
	for k in retransmits timeouts out_of_sequence ctx_rx_unknown_qp imissed ipackets opackets tx_buffer_drops oerrors stalls max_gap_us max_work_us; do
		echo "$s" | grep -o " $k=[0-9]*" | head -n 1 | cut -d= -f2
	done | tr '\n' ' '
}
delta() { # BEFORE AFTER
	local -a b=($1) a=($2)
	echo "retx=$((a[0]-b[0])) timeouts=$((a[1]-b[1])) ooo=$((a[2]-b[2])) unknown_qp=$((a[3]-b[3])) imissed=$((a[4]-b[4])) ipackets=$((a[5]-b[5])) opackets=$((a[6]-b[6])) tx_buffer_drops=$((a[7]-b[7])) oerrors=$((a[8]-b[8])) stalls=$((a[9]-b[9])) max_gap_us(total)=${a[10]} max_work_us(total)=${a[11]}"
}
# Kernel-side drops: veth rx/tx drop counters and the softnet backlog drops (all CPUs).
kstat() {
	local d
	local x
	d=0
	while read -r _ x _; do d=$((d + 0x$x)); done < /proc/net/softnet_stat
	echo "softnet_drops=$d" \
	     "mrva: $(ip -n "$(itl_ns a)" -s link show mrva | awk '/RX:/{getline; print "rx_drop=" $4} /TX:/{getline; print "tx_drop=" $4}' | tr '\n' ' ')" \
	     "mrvb: $(ip -n "$(itl_ns b)" -s link show mrvb | awk '/RX:/{getline; print "rx_drop=" $4} /TX:/{getline; print "tx_drop=" $4}' | tr '\n' ' ')"
}
run_perf() { # NAME ARGS...
	local name=$1 port t0 t1 ps pc
	shift
	ITL_PORT=$(( ${ITL_PORT:-$((20000 + $$ % 20000))} + 1 )); port=$ITL_PORT
	itl_bg "$name-srv" timeout 120 ${ITL_APP_NICE:+nice -n $ITL_APP_NICE} "$ITL_MRPERF" "$@" -p "$port" --sock "$ITL_WORK/b.sock"
	ps=$ITL_BG_PID
	itl_bg "$name-cli" timeout 120 ${ITL_APP_NICE:+nice -n $ITL_APP_NICE} "$ITL_MRPERF" "$@" -p "$port" --sock "$ITL_WORK/a.sock" \
		--report_gbits 127.0.0.1
	pc=$ITL_BG_PID
	itl_wait_pid "$pc" 130; echo "client rc $?"
	itl_wait_pid "$ps" 130; echo "server rc $?"
	tail -n 2 "$ITL_WORK/$name-cli.log" | tr -s ' '
	grep -h "rror\|fail" "$ITL_WORK/$name-cli.log" "$ITL_WORK/$name-srv.log" | head -n 3
}
ci=0
for c in $cases; do
	ci=$((ci + 1))
	ba=$(snap a); bb=$(snap b)
	if [ "${ITL_TCPDUMP:-0}" = 1 ]; then
		ip netns exec "$(itl_ns b)" tcpdump -i mrvb -B 262144 -w /dev/null -Q in udp port 4791 \
			> "$ITL_WORK/tcpdump-$c.log" 2>&1 &
		tdp=$!; ITL_PIDS+=("$tdp"); sleep 1
	fi
	kb=$(kstat)
	t0=$(date +%s%N)
	case $c in
	w16m) run_perf "$c-$ci" write_bw -s 16777216 -n 5 ;;
	r16m) run_perf "$c-$ci" read_bw -s 16777216 -n 5 ;;
	w*) run_perf "$c-$ci" write_bw -q "${c#w}" -s 65536 -n 200 ;;
	s64) run_perf "$c-$ci" send_bw -q 64 -s 4096 -n 200 ;;
	x16m) mkdir -p "$ITL_WORK/x$ci"
	      itl_bg xb "$ITL_XFER" --role b --sock "$ITL_WORK/b.sock" --dir "$ITL_WORK/x$ci" --timeout 120 --sizes 16M
	      pb=$ITL_BG_PID
	      itl_bg xa "$ITL_XFER" --role a --sock "$ITL_WORK/a.sock" --dir "$ITL_WORK/x$ci" --timeout 120 --sizes 16M
	      itl_wait_pid "$ITL_BG_PID" 130; echo "xfer a rc $?"; itl_wait_pid "$pb" 130; echo "xfer b rc $?"
	      grep -h "PASS\|status\|rror" "$ITL_WORK/xa.log" "$ITL_WORK/xb.log" | head -n 4 ;;
	esac
	t1=$(date +%s%N)
	if [ "${ITL_TCPDUMP:-0}" = 1 ]; then
		kill -INT "$tdp"; itl_wait_pid "$tdp" 5; grep "captured\|received\|dropped" "$ITL_WORK/tcpdump-$c.log"
	fi
	echo "kernel before: $kb"; echo "kernel after:  $(kstat)"
	echo "CASE $c: $(( (t1 - t0) / 1000000 )) ms; sender(a) $(delta "$ba" "$(snap a)"); receiver(b) $(delta "$bb" "$(snap b)")"
done
for n in a b; do itl_daemon_stop $n; done
