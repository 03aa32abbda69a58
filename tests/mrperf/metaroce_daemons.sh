#!/bin/bash
# SPDX-License-Identifier: MIT
# MetaRoCE between real daemons, negotiated by mrperf: two metaroced (net_af_packet on a veth
# pair across two network namespaces), each dropping 1% of what it sends (--impair-tx, seeded),
# daemon A capturing its frames (--pcap). Asserts:
#   1. both sides --metaroce: write_bw, send_bw and read_bw print "Transport: MetaRoCE" on both ends,
#      --verify finds 0 corrupted bytes, the capture holds MetaRoCE opcodes (0xC0 | RC, shown by
#      mrpcap dump as "MRC_...") on several UDP source ports (spraying), and the daemons'
#      --stats-json shows sack_retransmits > 0 (selective repeat recovered the losses);
#   2. only the client asks (--metaroce): it prints the fallback line, the run is plain RoCE v2
#      RC (no MetaRoCE opcode in the capture, one source port per direction) and still verified.
# Exit 0 ok, 1 failure, 77 skip (not root, no netns, binaries missing).
# Usage: metaroce_daemons.sh BUILD_DIR   (KEEP=1 keeps the logs)
set -u
build=$(cd "$1" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
daemon="$build/apps/metaroced/metaroced"
mrperf="$build/apps/mrperf/mrperf"
mrpcap="$build/apps/mrpcap/mrpcap"
py=/usr/bin/python3
skip() { echo "metaroce_daemons: SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root"
for f in "$daemon" "$mrperf" "$mrpcap" "$py"; do [ -x "$f" ] || skip "$f not built"; done
. "$root/scripts/lib/netns.sh"
tag="mc$$"
work=$(mktemp -d /tmp/mr-metaroce.XXXXXX)
pids=()
stop_daemons() {
	local p
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	pids=()
}
cleanup() {
	stop_daemons
	mr_netns_down "$tag"
	[ "${KEEP:-0}" = 1 ] && echo "metaroce_daemons: logs in $work" || rm -rf "$work"
}
trap cleanup EXIT
fail() {
	echo "metaroce_daemons: FAIL: $*" >&2
	for f in "$work"/*.log; do echo "---- $f" >&2; tail -n 15 "$f" >&2; done
	exit 1
}
ip netns add "mr-$tag-probe" 2>/dev/null && ip netns del "mr-$tag-probe" || skip "no network namespaces"
mr_netns_up "$tag" 1500 || fail "netns"

# start PHASE: both daemons with 1% seeded tx loss; A writes PHASE.pcap.
start() {
	local ph=$1 n seed
	for n in a b; do
		seed=$([ $n = a ] && echo 21 || echo 22)
		mr_daemon_conf "$work/$n.conf" $n "$work/$n.sock"
		local cap=()
		[ $n = a ] && cap=(--pcap "$work/$ph.pcap")
		rm -f "$work/$n.sock"
		ip netns exec "mr-$tag-$n" "$daemon" -c "$work/$n.conf" "${cap[@]}" \
			--impair-tx "loss=0.01,seed=$seed" --stats-json "$work/$ph-$n.stats.json" \
			-- --file-prefix="mrmc$$$n" --no-huge -m 256 > "$work/$ph-daemon-$n.log" 2>&1 &
		pids+=($!)
	done
	for n in a b; do
		mr_daemon_wait "$work/$ph-daemon-$n.log" "$work/$n.sock" || fail "daemon $n not ready ($ph)"
	done
}

port=$((20000 + $$ % 20000))
# perf NAME TEST SERVER_OPTS CLIENT_OPTS
perf() {
	local name=$1 t=$2 so=$3 co=$4 rc rs srv
	port=$((port + 1))
	# shellcheck disable=SC2086
	timeout 180 "$mrperf" "$t" -s 65536 -n 300 -t 16 -p $port --verify $so --sock "$work/b.sock" \
		> "$work/$name-server.log" 2>&1 &
	srv=$!
	# shellcheck disable=SC2086
	timeout 180 "$mrperf" "$t" -s 65536 -n 300 -t 16 -p $port --verify $co --sock "$work/a.sock" \
		--report_gbits 127.0.0.1 > "$work/$name-client.log" 2>&1
	rc=$?
	wait $srv
	rs=$?
	[ $rc = 0 ] || fail "$name: client exited $rc"
	[ $rs = 0 ] || fail "$name: server exited $rs"
	grep -q "verified [1-9][0-9]* bytes, 0 corrupted" "$work/$name-client.log" \
		"$work/$name-server.log" || fail "$name: no successful verify line"
	grep -h "verified" "$work/$name-client.log" "$work/$name-server.log" |
		sed "s/^/metaroce_daemons: $name:/"
}

# pcap_summary PHASE -> "METAROCE_FRAMES RC_FRAMES SPORTS_A_TO_B SPORTS_B_TO_A"
pcap_summary() {
	"$mrpcap" dump "$work/$1.pcap" > "$work/$1.dump" 2>&1 || fail "$1: mrpcap dump failed"
	"$py" - "$work/$1.dump" <<'PY'
import re, sys
mrc = rc = 0
sports = {}
for line in open(sys.argv[1]):
    m = re.match(r"\d+ (\S+) -> (\S+) sport=(\d+) (\S+)", line)
    if not m:
        continue
    src, dst, sport, op = m.groups()
    if op.startswith("MRC_"):  # mrpcap's names for the 0xC0 | RC opcodes
        mrc += 1
    else:
        rc += 1
    sports.setdefault((src, dst), set()).add(int(sport))
a2b = len(sports.get(("198.18.0.1", "198.18.0.2"), ()))
b2a = len(sports.get(("198.18.0.2", "198.18.0.1"), ()))
print(mrc, rc, a2b, b2a)
PY
}

# stat PHASE KEY: sum of transport.sum.KEY over both daemons' final --stats-json
stat() {
	"$py" - "$work/$1-a.stats.json" "$work/$1-b.stats.json" "$2" <<'PY'
import json, sys
print(sum(int(json.load(open(p))["transport"]["sum"].get(sys.argv[3], 0)) for p in sys.argv[1:3]))
PY
}

# ---- 1. both sides ask: MetaRoCE ----
start both
for t in write_bw send_bw read_bw; do
	perf "both-$t" $t "--metaroce --entropies 8" "--metaroce --entropies 8"
	for s in client server; do
		grep -q "Transport: MetaRoCE (8 entropies, cc none)" "$work/both-$t-$s.log" ||
			fail "both-$t: $s did not negotiate MetaRoCE"
	done
done
stop_daemons
read -r mrc rc a2b b2a <<<"$(pcap_summary both)"
echo "metaroce_daemons: both: $mrc MetaRoCE frames, $rc RC frames, source ports a->b $a2b, b->a $b2a"
[ "$mrc" -gt 1000 ] || fail "both: only $mrc MetaRoCE frames in the capture"
[ "$a2b" -ge 4 ] || fail "both: data sprayed over only $a2b UDP source ports (want >= 4 of 8)"
sack=$(stat both sack_retransmits)
drop=$(grep -h "impair_tx" "$work"/both-daemon-*.log | sed -n 's/.*dropped_random=\([0-9]*\).*/\1/p' |
	awk '{s += $1} END {print s + 0}')
echo "metaroce_daemons: both: impairment dropped $drop frames, sack_retransmits $sack"
[ "$drop" -gt 0 ] || fail "both: the impairment dropped nothing"
[ "$sack" -gt 0 ] || fail "both: no selective retransmission (sack_retransmits = 0)"

# ---- 2. only the client asks: plain RoCE v2 RC ----
start one
perf one-write_bw write_bw "" "--metaroce"
stop_daemons
grep -q "MetaRoCE requested but peer did not offer it: plain RoCE" "$work/one-write_bw-client.log" ||
	fail "one: the client did not report the fallback"
grep -q "Transport: MetaRoCE" "$work/one-write_bw-client.log" "$work/one-write_bw-server.log" &&
	fail "one: MetaRoCE negotiated although the server did not ask"
read -r mrc rc a2b b2a <<<"$(pcap_summary one)"
echo "metaroce_daemons: one: $mrc MetaRoCE frames, $rc RC frames, source ports a->b $a2b, b->a $b2a"
[ "$mrc" = 0 ] || fail "one: $mrc MetaRoCE frames on the wire of a plain RoCE connection"
[ "$rc" -gt 1000 ] || fail "one: only $rc RC frames captured"
[ "$a2b" = 1 ] || fail "one: plain RC used $a2b source ports (want 1 per QP)"
[ "$(stat one sack_retransmits)" = 0 ] || fail "one: selective retransmits on plain RC"
[ "$(stat one retransmits)" -gt 0 ] || fail "one: go-back-N never retransmitted at 1% loss"
echo "metaroce_daemons: all ok"
