#!/bin/bash
# SPDX-License-Identifier: MIT
# Impairment inside metaroced, recovered by RC: two daemons (net_af_packet, veth pair across two
# network namespaces) with seeded impairment on their engine paths:
#   A: --impair-tx loss=0.02                (independent loss of what A sends)
#   B: --impair-tx loss=0.01,burst=1.5      (Gilbert-Elliott bursts of what B sends: ACKs, READ
#                                            responses; short bursts: with one READ in flight
#                                            a per-frame burst spans RC's retries, and 8 losses
#                                            in a row end the QP with RETRY_EXC_ERR, C9-141)
#      --impair-rx reorder=0.005:30us,dup=0.002  (late and duplicated frames B receives)
# then tests/integration/mr_itest a <-> b: RDMA WRITE, SEND, WRITE WITH IMM, READ, atomics, every
# byte and value checked, then WRITE throughput and READ latency. Asserts, from the daemons'
# --stats-json files (SIGUSR1 dump and exit dump):
#   - the impairment really dropped / reordered / duplicated frames (counters > 0, and the
#     tx stage's frames == delivered + dropped on A, whose stage only drops);
#   - RC recovered: retransmits > 0 (go-back-N, IBA 9.7.5.1.3) and mr_itest verified every byte;
#   - nothing arrived corrupted (parse drops 0: loss must not turn into bad ICRCs);
#   - the JSON is valid, has per-QP entries while the QPs live, and final=true at exit.
# Exit 0 pass, 1 fail, 77 skip (not root, no netns, binaries missing).
# Usage: impair_daemon.sh BUILD_DIR [--keep]
set -u
build=$(cd "$1" && pwd)
keep=${2:-}
root=$(cd "$(dirname "$0")/../.." && pwd)
daemon="$build/apps/metaroced/metaroced"
itest="$build/tests/integration/mr_itest"
py=/usr/bin/python3
skip() { echo "impair_daemon: SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root"
for f in "$daemon" "$itest" "$py"; do [ -x "$f" ] || skip "$f missing"; done
. "$root/scripts/lib/netns.sh"
tag="imp$$"
work=$(mktemp -d /tmp/mr-impair.XXXXXX)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	mr_netns_down "$tag"
	[ "$keep" = --keep ] && echo "impair_daemon: logs in $work" || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() {
	echo "impair_daemon: FAIL: $*" >&2
	for f in "$work"/*.log; do [ -f "$f" ] && { echo "---- $f" >&2; tail -n 25 "$f" >&2; }; done
	exit 1
}
ip netns add "mr-$tag-probe" 2>/dev/null && ip netns del "mr-$tag-probe" || skip "no network namespaces"
mr_netns_up "$tag" 1500 || fail "netns"
eal_extra=(--no-huge -m 256)
free_hp=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
[ "${free_hp:-0}" -ge 128 ] && eal_extra=()
declare -A imp=(
	[a]="--impair-tx loss=0.02,seed=11"
	[b]="--impair-tx loss=0.01,burst=1.5,seed=12 --impair-rx reorder=0.005:30us,dup=0.002,seed=13"
)
for n in a b; do
	mr_daemon_conf "$work/$n.conf" $n "$work/$n.sock"
	# shellcheck disable=SC2086
	ip netns exec "mr-$tag-$n" "$daemon" -c "$work/$n.conf" --stats-json "$work/$n.json" \
		${imp[$n]} -- --file-prefix="mrimp$$$n" "${eal_extra[@]}" > "$work/daemon-$n.log" 2>&1 &
	pids+=($!)
	eval "pid_$n=$!"
done
for n in a b; do
	mr_daemon_wait "$work/daemon-$n.log" "$work/$n.sock" || fail "daemon $n not ready"
done

timeout 120 "$itest" --role b --sock "$work/b.sock" --dir "$work" --bytes $((1 << 20)) \
	--timeout 90 > "$work/itest-b.log" 2>&1 &
itb=$!
pids+=($itb)
timeout 120 "$itest" --role a --sock "$work/a.sock" --dir "$work" --bytes $((1 << 20)) \
	--timeout 90 --bw-bytes $((8 << 20)) --lat-iters 300 > "$work/itest-a.log" 2>&1
rca=$?
wait "$itb"
rcb=$?
cat "$work/itest-a.log" "$work/itest-b.log" | sed 's/^/impair_daemon: /'
[ $rca = 0 ] || fail "mr_itest a exited $rca (data not verified under impairment)"
[ $rcb = 0 ] || fail "mr_itest b exited $rcb"

# SIGUSR1: a live dump (final=false).
kill -USR1 "$pid_a"
for i in $(seq 1 50); do [ -s "$work/a.json" ] && break; sleep 0.1; done
[ -s "$work/a.json" ] || fail "no stats JSON after SIGUSR1"
"$py" - "$work/a.json" <<'PY' || fail "SIGUSR1 JSON"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["schema"] == "metaroced-stats-1" and j["final"] is False, j.get("final")
assert j["impair"]["tx"]["enabled"] and not j["impair"]["rx"]["enabled"]
assert j["impair"]["tx"]["spec"] == "loss=0.02,seed=11"
PY

for n in a b; do
	eval p=\$pid_$n
	kill -TERM "$p"
	wait "$p"
	rc=$?
	[ $rc = 0 ] || fail "daemon $n exited $rc"
done
pids=()
"$py" - "$work/a.json" "$work/b.json" <<'PY' || fail "stats assertions"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for n, j in (("a", a), ("b", b)):
    assert j["final"] is True, n
    assert j["parse_drops"]["total"] == 0, (n, j["parse_drops"])
    assert j["transport"]["sum"]["tx_pkts"] > 1000, (n, j["transport"]["sum"])
ta, tb, rb = a["impair"]["tx"], b["impair"]["tx"], b["impair"]["rx"]
assert ta["dropped"]["random"] > 0 and ta["dropped"]["total"] == ta["dropped"]["random"], ta
assert ta["frames"] == ta["delivered"] + ta["dropped"]["total"], ta
assert tb["dropped"]["burst"] > 0 and tb["burst_entries"] > 0, tb
assert rb["reordered"] > 0 and rb["duplicated"] > 0 and rb["late"] > 0, rb
assert rb["dropped"]["total"] == 0 and rb["queued"] == 0, rb
# A's tx loss is about 2% of what it offered (seeded: loose bounds, not a golden number).
rate = ta["dropped"]["total"] / ta["frames"]
assert 0.005 < rate < 0.05, rate
retx = a["transport"]["sum"]["retransmits"] + b["transport"]["sum"]["retransmits"]
naks = a["transport"]["sum"]["seq_naks_rcvd"] + b["transport"]["sum"]["seq_naks_rcvd"]
tmo = a["transport"]["sum"]["timeouts"] + b["transport"]["sum"]["timeouts"]
assert retx > 0, "no retransmits"
assert b["transport"]["sum"]["duplicate_requests"] + b["transport"]["sum"]["out_of_sequence"] > 0
print("impair_daemon: A tx dropped %d/%d (%.2f%%), B tx dropped %d (bursts %d), B rx reordered %d"
      " duplicated %d; RC retransmits %d, seq NAKs %d, timeouts %d"
      % (ta["dropped"]["total"], ta["frames"], 100 * rate, tb["dropped"]["total"],
         tb["burst_entries"], rb["reordered"], rb["duplicated"], retx, naks, tmo))
PY
grep "^metaroced final: impair" "$work/daemon-a.log" "$work/daemon-b.log" | sed 's/^/impair_daemon: /'
echo "impair_daemon: PASS"
