#!/bin/bash
# SPDX-License-Identifier: MIT
# Debian's stock perftest and ibverbs-utils binaries, unmodified, on both ends of two metaroce
# hosts: two metaroced over veth (tests/integration/lib.sh), server on daemon B, client on
# daemon A, both through metaroce-run on the verbs library; perftest's TCP exchange over
# 127.0.0.1. One cell per line: every tool of the interop matrix (ib_{write,send,read,atomic}_
# {bw,lat}, ibv_rc_pingpong) at IB MTU 1024 and 4096, then perftest options: -q 4, -b, -a
# (2..2^16 checked), -e, -I 64, -D 2, --use-srq, ibv_srq_pingpong, ibv_rc_pingpong -e.
# A cell passes when both exit 0 and both sides report the requested size, iterations, IB MTU
# and a positive figure (scripts/lib/perf_check.sh). A cell whose verbs call the library
# refuses (EOPNOTSUPP/ENOSYS: "Operation not supported", "Function not implemented",
# "Couldn't create SRQ") is reported UNSUP with the tool's message and does not fail the test
# (MR_STOCK_STRICT=1 makes it fail); cells named in MR_STOCK_KNOWN (open bugs, docs/verbs.md)
# that fail are reported KNOWN; anything else failing fails the test.
# Exit 0 pass, 1 fail, 77 skip (not root, no netns, Debian's perftest / ibverbs-utils missing).
# Usage: test_stock_tools.sh BUILD_DIR [CELL_FILTER_REGEX]   (ITL_KEEP=1 keeps the logs)
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../integration/lib.sh"
itl_init verbs_stock_tools "$1"
filter=${2:-.}
for t in ib_write_bw ib_send_bw ib_read_bw ib_atomic_bw ib_write_lat ib_send_lat ib_read_lat \
	ib_atomic_lat ibv_rc_pingpong ibv_srq_pingpong; do
	[ -x "/usr/bin/$t" ] || itl_skip "/usr/bin/$t missing (Debian packages perftest, ibverbs-utils)"
done
run="$ITL_BUILD/apps/metaroce-run/metaroce-run"
[ -x "$run" ] || itl_fail "launcher $run not built"
. "$ITL_ROOT/scripts/lib/perf_check.sh"
mr_strip_verbs_dir "$("$run" --print-dir)"
iters=${MR_STOCK_ITERS:-200}

listening() { ss -ltnH "sport = :$1" 2>/dev/null | grep -q .; }
listening_or_gone() { listening "$1" || ! kill -0 "$2" 2>/dev/null; }
unsupported() { grep -h -m 1 -i -E "operation not supported|function not implemented|couldn't create srq|failed to create srq" "$@"; }
port=$((20000 + $$ % 20000))
passed=0 failed=0 unsup=0 known=0 failed_ids= unsup_ids= known_ids=

# The longest gap between two iterations of daemon N's engine so far, in ms (mrstat port).
max_gap_ms() {
	"$ITL_BUILD/apps/mrstat/mrstat" port --sock "$ITL_WORK/$1.sock" 2>/dev/null |
		awk '$1 == "engine_max_gap_ns:" { printf "%d", $2 / 1000000; f = 1 } END { if (!f) print 0 }'
}
# A tool whose retry budget is shorter than an engine stall fails with RETRY_EXC_ERR through no
# fault of the transport: ibv_rc_pingpong has no -u and keeps verbs' 14 / 7 (7 x 67 ms). A cell
# that failed so while a daemon's engine was descheduled for longer than that is run once more,
# and said so (seen once in a CI rehearsal: a 643 ms gap, both sides "transport retry counter
# exceeded").
STALL_MS=400

# cell ID IB_MTU KIND SIZE ITERS CMD...: server (daemon B) / client (daemon A) pair. KIND: bw,
# lat, pingpong (checked per side; READ/atomic latency servers are passive), or all-bw/all-lat
# (-a runs: every size 2..65536 checked).
cell() {
	local id=$1 mtu=$2 kind=$3 size=$4 it=$5 ps pc rcs rcc skind fs fc why t0 ga gb ga1 gb1
	shift 5
	[[ "$id" =~ $filter ]] || return 0
	port=$((port + 1))
	t0=$(date +%s%N)
	ga=$(max_gap_ms a) gb=$(max_gap_ms b)
	itl_bg "$id-srv" timeout ${MR_CELL_TIMEOUT:-120} "$run" --sock "$ITL_WORK/b.sock" "$@" -p "$port"
	ps=$ITL_BG_PID
	# Until the server listens, or has exited (a verb it needs is unsupported).
	if itl_wait_for 20 listening_or_gone "$port" "$ps" && listening "$port"; then
		itl_bg "$id-cli" timeout ${MR_CELL_TIMEOUT:-120} "$run" --sock "$ITL_WORK/a.sock" "$@" -p "$port" 127.0.0.1
		pc=$ITL_BG_PID
		itl_wait_pid "$pc" 130; rcc=$?
	else
		rcc=125
	fi
	itl_wait_pid "$ps" 130; rcs=$?
	skind=$kind
	case "$1" in */ib_read_lat|*/ib_atomic_lat) skind=passive ;; esac
	# With -a a WRITE/READ bandwidth server prints only the last size: checked as passive.
	case "$kind:$1" in all-bw:*/ib_write_bw|all-bw:*/ib_read_bw) skind=passive ;; esac
	local st=PASS detail
	if [ "$rcc" != 0 ] || [ "$rcs" != 0 ]; then
		st=FAIL detail="exit server=$rcs client=$rcc"
		why=$(cat "$ITL_WORK/$id-srv.log" "$ITL_WORK/$id-cli.log" 2>/dev/null | unsupported) &&
			st=UNSUP detail="$(echo "$why" | sed 's/^ *//')"
	else
		case "$kind" in
		all-*)
			fs=$(mr_perf_check_sizes "$ITL_WORK/$id-srv.log" "$([ "$skind" = passive ] && echo passive || echo "${kind#all-}")" 2 65536 "$it" "$mtu") &&
			fc=$(mr_perf_check_sizes "$ITL_WORK/$id-cli.log" "${kind#all-}" 2 65536 "$it" "$mtu") ;;
		*)
			fs=$(mr_perf_check "$ITL_WORK/$id-srv.log" "$skind" "$size" "$it" "$mtu") &&
			fc=$(mr_perf_check "$ITL_WORK/$id-cli.log" "$kind" "$size" "$it" "$mtu") ;;
		esac
		if [ $? = 0 ]; then detail="server $fs client $fc"
		else st=FAIL detail="${fc:-$fs}"; fi
	fi
	# MR_STOCK_KNOWN: cells with an open bug (docs/verbs.md "Known issues"): still run and
	# printed, reported KNOWN instead of failing the test; a KNOWN cell that passes says so.
	case " ${MR_STOCK_KNOWN:-} " in
	*" $id "*) [ "$st" = FAIL ] && st=KNOWN detail="known issue: $detail" ;;
	esac
	if [ "$st" = FAIL ] && [ -z "${CELL_RETRY:-}" ] &&
	   grep -q "retry counter exceeded" "$ITL_WORK/$id-srv.log" "$ITL_WORK/$id-cli.log" 2>/dev/null; then
		ga1=$(max_gap_ms a) gb1=$(max_gap_ms b)
		if { [ "$ga1" -gt "$ga" ] && [ "$ga1" -ge $STALL_MS ]; } ||
		   { [ "$gb1" -gt "$gb" ] && [ "$gb1" -ge $STALL_MS ]; }; then
			printf '%s: RETRY %-34s engine stall during the cell (longest gap a %s ms, b %s ms) beyond the tool'"'"'s retry budget: %s\n' \
				"$ITL_NAME" "$id" "$ga1" "$gb1" "$detail"
			for f in srv cli; do
				[ -f "$ITL_WORK/$id-$f.log" ] && mv "$ITL_WORK/$id-$f.log" "$ITL_WORK/$id-$f.try1.log"
			done
			CELL_RETRY=1 cell "$id" "$mtu" "$kind" "$size" "$it" "$@"
			return
		fi
	fi
	printf '%s: %-5s %-34s %6s ms  %s\n' "$ITL_NAME" "$st" "$id" \
		"$(( ($(date +%s%N) - t0) / 1000000 ))" "$detail"
	case "$st" in
	PASS) passed=$((passed + 1)) ;;
	UNSUP) unsup=$((unsup + 1)); unsup_ids="$unsup_ids $id" ;;
	KNOWN) known=$((known + 1)); known_ids="$known_ids $id" ;;
	*) failed=$((failed + 1)); failed_ids="$failed_ids $id"
		tail -n 4 "$ITL_WORK/$id-srv.log" | sed 's/^/    server| /'
		tail -n 4 "$ITL_WORK/$id-cli.log" 2>/dev/null | sed 's/^/    client| /' ;;
	esac
}

# perftest's -u: the local ACK timeout (IBA 9.7.6.1.3) the integration suite uses
# (ITL_ACK_TIMEOUT, tests/integration/lib.sh: 18 = 1.07 s): with perftest's default 14 (67 ms)
# two daemons and four pollers on this 2-core host see 8 ACK timeouts in a row whenever a daemon
# is descheduled for half a second, and the QP ends in RETRY_EXC_ERR (seen: read_bw, write_bw
# -q 4, send_bw, no loss at all). ibv_rc_pingpong has no such option (one message in flight).
P="-d metaroce0 -x 1 -F -u $ITL_ACK_TIMEOUT"
for mtu in 1500 9000; do
	ib=$([ "$mtu" = 9000 ] && echo 4096 || echo 1024)
	itl_netns_up "$mtu"
	itl_daemon_conf a "$mtu"
	itl_daemon_conf b "$mtu"
	itl_daemon_start a
	itl_daemon_start b
	for t in write send read; do
		cell "${t}_bw_$ib" "$ib" bw 65536 "$iters" "/usr/bin/ib_${t}_bw" $P --report_gbits -s 65536 -n "$iters"
		cell "${t}_lat_$ib" "$ib" lat 64 "$iters" "/usr/bin/ib_${t}_lat" $P -s 64 -n "$iters"
	done
	cell "atomic_bw_$ib" "$ib" bw 8 "$iters" /usr/bin/ib_atomic_bw $P --report_gbits -n "$iters"
	cell "atomic_lat_$ib" "$ib" lat 8 "$iters" /usr/bin/ib_atomic_lat $P -n "$iters"
	cell "rc_pingpong_$ib" "$ib" pingpong 4096 "$iters" /usr/bin/ibv_rc_pingpong -d metaroce0 -g 1 -m "$ib" -s 4096 -n "$iters"
	if [ "$mtu" = 1500 ]; then
		# perftest reports the iterations of all 4 QPs
		cell "write_bw_q4" 1024 bw 65536 $((iters * 4)) /usr/bin/ib_write_bw $P --report_gbits -s 65536 -n "$iters" -q 4
		cell "send_bw_q4" 1024 bw 65536 $((iters * 4)) /usr/bin/ib_send_bw $P --report_gbits -s 65536 -n "$iters" -q 4
		cell "write_bw_b" 1024 bw 65536 "$iters" /usr/bin/ib_write_bw $P --report_gbits -s 65536 -n "$iters" -b
		cell "send_bw_b" 1024 bw 65536 "$iters" /usr/bin/ib_send_bw $P --report_gbits -s 65536 -n "$iters" -b
		cell "read_bw_b" 1024 bw 65536 "$iters" /usr/bin/ib_read_bw $P --report_gbits -s 65536 -n "$iters" -b
		cell "write_bw_a" 1024 all-bw 0 5 /usr/bin/ib_write_bw $P --report_gbits -a -n 5
		cell "send_lat_a" 1024 all-lat 0 5 /usr/bin/ib_send_lat $P -a -n 5
		cell "send_bw_e" 1024 bw 65536 "$iters" /usr/bin/ib_send_bw $P --report_gbits -s 65536 -n "$iters" -e
		cell "read_bw_e" 1024 bw 65536 "$iters" /usr/bin/ib_read_bw $P --report_gbits -s 65536 -n "$iters" -e
		cell "send_lat_e" 1024 lat 64 "$iters" /usr/bin/ib_send_lat $P -s 64 -n "$iters" -e
		cell "write_lat_I" 1024 lat 64 "$iters" /usr/bin/ib_write_lat $P -s 64 -I 64 -n "$iters"
		cell "send_bw_I" 1024 bw 64 "$iters" /usr/bin/ib_send_bw $P --report_gbits -s 64 -I 64 -n "$iters"
		cell "write_bw_D2" 1024 bw 65536 any /usr/bin/ib_write_bw $P --report_gbits -s 65536 -D 2
		cell "send_bw_srq" 1024 bw 65536 "$iters" /usr/bin/ib_send_bw $P --report_gbits -s 65536 -n "$iters" --use-srq
		cell "send_lat_srq" 1024 lat 64 "$iters" /usr/bin/ib_send_lat $P -s 64 -n "$iters" --use-srq
		cell "rc_pingpong_e" 1024 pingpong 4096 "$iters" /usr/bin/ibv_rc_pingpong -d metaroce0 -g 1 -s 4096 -n "$iters" -e
		cell "srq_pingpong" 1024 pingpong 4096 "$iters" /usr/bin/ibv_srq_pingpong -d metaroce0 -g 1 -s 4096 -n "$iters"
	fi
	itl_daemon_stop a
	itl_daemon_stop b
done
echo "$ITL_NAME: $passed passed, $failed failed, $unsup unsupported by the library, $known known issues${known_ids:+ (}${known_ids# }${known_ids:+)}"
[ "$unsup" = 0 ] || echo "$ITL_NAME: unsupported:$unsup_ids"
[ "$failed" = 0 ] || itl_fail "failed:$failed_ids"
[ "${MR_STOCK_STRICT:-0}" = 0 ] || [ "$unsup" = 0 ] || itl_fail "MR_STOCK_STRICT: unsupported cells:$unsup_ids"
[ "$passed" -gt 0 ] || itl_fail "no cell ran (filter '$filter')"
itl_ok "stock perftest/ibverbs-utils between two metaroce daemons"
