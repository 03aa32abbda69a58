#!/bin/bash
# SPDX-License-Identifier: MIT
# mrperf end to end: two metaroced (net_af_packet on a veth pair across two network namespaces),
# mrperf server on daemon B, mrperf client on daemon A, the perftest TCP exchange over loopback.
# Every test runs with --verify (data checked byte by byte, atomics counted) and --json.
# Exit 0 ok, 1 failure, 77 skip (not root, no netns, binaries missing).
# Usage: [MRPERF_EXTRA="-q 2"] mrperf_daemons.sh BUILD_DIR [TEST...]
set -u
build=$(cd "$1" && pwd); shift
root=$(cd "$(dirname "$0")/../.." && pwd)
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(write_bw send_bw read_bw atomic_bw write_lat send_lat read_lat atomic_lat)
daemon="$build/apps/metaroced/metaroced"
mrperf="$build/apps/mrperf/mrperf"
skip() { echo "mrperf_daemons: SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root"
for f in "$daemon" "$mrperf"; do [ -x "$f" ] || skip "$f not built"; done
. "$root/scripts/lib/netns.sh"
tag="mp$$"
work=$(mktemp -d /tmp/mrperf-e2e.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	mr_netns_down "$tag"
	[ "${KEEP:-0}" = 1 ] && echo "logs in $work" || rm -rf "$work"
}
trap cleanup EXIT
fail() {
	echo "mrperf_daemons: FAIL: $*" >&2
	for f in "$work"/*.log; do echo "---- $f" >&2; tail -n 25 "$f" >&2; done
	exit 1
}
ip netns add "mr-$tag-probe" 2>/dev/null && ip netns del "mr-$tag-probe" || skip "no network namespaces"
mr_netns_up "$tag" 1500 || fail "netns"
for n in a b; do
	mr_daemon_conf "$work/$n.conf" $n "$work/$n.sock"
	ip netns exec "mr-$tag-$n" "$daemon" -c "$work/$n.conf" -- --file-prefix="mrperf$$$n" \
		--no-huge -m 256 > "$work/daemon-$n.log" 2>&1 &
	pids+=($!)
done
for n in a b; do
	mr_daemon_wait "$work/daemon-$n.log" "$work/$n.sock" || fail "daemon $n not ready"
done
port=$((20000 + $$ % 20000))
for t in "${tests[@]}"; do
	case $t in
	*_lat) opts=(-n 200) ;;
	atomic_bw) opts=(-n 2000) ;;
	*) opts=(-n 2000 -s 8192) ;;
	esac
	# ACK timeout 1.07 s instead of perftest's 67 ms: daemons on this shared VM are sometimes
	# descheduled for seconds (see tests/integration/lib.sh ITL_ACK_TIMEOUT).
	opts+=(-u "${MRPERF_QP_TIMEOUT:-18}")
	opts+=(${MRPERF_EXTRA:-})
	port=$((port + 1))
	timeout 120 "$mrperf" "$t" "${opts[@]}" -p $port --verify --sock "$work/b.sock" \
		--json "$work/$t-server.json" > "$work/$t-server.log" 2>&1 &
	srv=$!
	timeout 120 "$mrperf" "$t" "${opts[@]}" -p $port --verify --sock "$work/a.sock" \
		--report_gbits --json "$work/$t-client.json" 127.0.0.1 > "$work/$t-client.log" 2>&1
	rc=$?
	wait $srv
	rs=$?
	[ $rc = 0 ] || fail "$t client exited $rc"
	[ $rs = 0 ] || fail "$t server exited $rs"
	grep -q "verified [1-9][0-9]* bytes, 0 corrupted" "$work/$t-client.log" "$work/$t-server.log" || fail "$t: no successful verify line"
	grep -h "verified\|^ [0-9]" "$work/$t-client.log" "$work/$t-server.log" | sed "s/^/mrperf_daemons: $t: /"
	if command -v python3 >/dev/null; then
		for j in "$work/$t-client.json"; do
			python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$j" || fail "$t: bad JSON"
		done
	fi
done
echo "mrperf_daemons: all ok"
