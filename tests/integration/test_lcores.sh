#!/bin/bash
# SPDX-License-Identifier: MIT
# Several engine lcores in one daemon (QP sharding): daemon A runs [engine] lcores = 0,1 (two
# shards, each with its own transport, QPN range and sessions; shard 0 does the port I/O and
# hands frames to the owner of their BTH DestQP), daemon B runs one lcore.
#  1. Two apps at once on A (two sessions: the control thread puts them on different shards),
#     each an mr_xfer pair with B: WRITE, SEND and READ, every byte verified on both sides.
#  2. mrperf write_bw -q 8 --verify across A and B (0 corrupted bytes).
#  3. Loopback inside A: both ends of an mr_xfer pair on daemon A, their sessions (and QPs) on
#     different shards: frames to A's own GID must reach the other shard.
# Then, from A's --stats-json: both shards owned QPs and carried RoCE traffic (per-shard rx and
# tx > 0, and shard 1 received its frames through the dispatch ring), the totals are the sums
# over shards, no ring overflowed and nothing failed to parse.
# Usage: test_lcores.sh BUILD_DIR
set -u
. "$(dirname "$0")/lib.sh"
itl_init lcores "$1"
command -v python3 >/dev/null || itl_skip "no python3 (reads --stats-json)"
itl_netns_up 1500
for n in a b; do itl_daemon_conf $n 1500; done
# The test config oversubscribes this 2-CPU machine (two daemons, apps): the idle back-off
# (lib.sh's idle_sleep_us) keeps every poller progressing.
sed -i 's/^lcores = .*/lcores = 0,1/' "$ITL_WORK/a.conf"
ITL_DAEMON_ARGS="--stats-json $ITL_WORK/a.json --stats-every 1" itl_daemon_start a
itl_daemon_start b
grep -q "2 engine shards" "$ITL_WORK/daemon-a.log" || itl_fail "daemon a did not start 2 shards"

ops=write,send,read
args=(--qps 4 --sizes 1,4097,65536,1M --ops $ops --iters 2 --timeout 120)
pids=()
for app in 1 2; do
	mkdir -p "$ITL_WORK/app$app"
	itl_bg "app$app-b" "$ITL_XFER" --role b --sock "$ITL_WORK/b.sock" --dir "$ITL_WORK/app$app" "${args[@]}"
	pids+=("$ITL_BG_PID")
	itl_bg "app$app-a" "$ITL_XFER" --role a --sock "$ITL_WORK/a.sock" --dir "$ITL_WORK/app$app" "${args[@]}"
	pids+=("$ITL_BG_PID")
	# One at a time into A, so that the second session sees the first one's load.
	itl_wait_for 30 test -e "$ITL_WORK/app$app/g1.a.info" ||
		true
done
# A dump while the apps run comes from the control thread (SIGUSR1): snapshots the shards took
# of themselves, summed.
rm -f "$ITL_WORK/a.json"
kill -USR1 "$ITL_PID_a"
itl_wait_for 10 test -s "$ITL_WORK/a.json" || itl_fail "no --stats-json on SIGUSR1"
python3 - "$ITL_WORK/a.json" <<'PY' || itl_fail "SIGUSR1 dump of daemon a"
import json, sys
j = json.load(open(sys.argv[1]))
sh = j["shards"]
assert not j["final"] and j["nshards"] == 2 and len(sh) == 2, "2 shards, not final"
assert j["shm"]["sessions"] == sum(s["sessions"] for s in sh), "sessions = sum over shards"
assert j["transport"]["qps"] == sum(s["qps"] for s in sh), "qps = sum over shards"
assert len(j["transport"]["per_qp"]) == j["transport"]["qps"], "per_qp lists every live QP"
print("lcores: ok: SIGUSR1 dump: sessions per shard %s, qps per shard %s" %
      ([s["sessions"] for s in sh], [s["qps"] for s in sh]))
PY
for p in "${pids[@]}"; do
	itl_wait_pid "$p" 150 || itl_fail "an app (pid $p) failed: exit $?"
done
for app in 1 2; do
	for r in a b; do
		grep -q "PASS" "$ITL_WORK/app$app-$r.log" || itl_fail "app $app role $r did not pass"
	done
	grep -h "bytes verified" "$ITL_WORK/app$app-a.log" "$ITL_WORK/app$app-b.log" | sed "s/^/$ITL_NAME: app$app: /"
done
itl_ok "two sessions on a 2-shard daemon: $ops verified"
grep -q "session (fd [0-9]*) -> shard 1" "$ITL_WORK/daemon-a.log" ||
	itl_fail "daemon a never placed a session on shard 1"

# mrperf across the daemons with 8 QPs in one session (one shard), every byte checked.
itl_mrperf write8 write_bw -q 8 -s 65536 -n 200
itl_mrperf send8 send_bw -q 8 -s 4096 -n 200
itl_mrperf read8 read_bw -q 8 -s 65536 -n 100

# Loopback between shards: both roles on daemon A. The target connects first (its session on
# the emptier shard), then the initiator (the other shard); frames to A's own GID built by one
# shard must be received by the other.
mkdir -p "$ITL_WORK/loop"
before=$(grep -c "session (fd" "$ITL_WORK/daemon-a.log")
itl_bg loop-b "$ITL_XFER" --role b --sock "$ITL_WORK/a.sock" --dir "$ITL_WORK/loop" "${args[@]}"
pb=$ITL_BG_PID
itl_wait_for 30 test -e "$ITL_WORK/loop/g1.b.info" || itl_fail "loopback target did not start"
itl_bg loop-a "$ITL_XFER" --role a --sock "$ITL_WORK/a.sock" --dir "$ITL_WORK/loop" "${args[@]}"
pa=$ITL_BG_PID
itl_wait_pid "$pa" 150 || itl_fail "loopback initiator failed: exit $?"
itl_wait_pid "$pb" 150 || itl_fail "loopback target failed: exit $?"
for r in a b; do grep -q PASS "$ITL_WORK/loop-$r.log" || itl_fail "loopback role $r did not pass"; done
placed=$(grep "session (fd" "$ITL_WORK/daemon-a.log" | tail -n +$((before + 1)) | grep -o "shard [0-9]" | sort -u | wc -l)
[ "$placed" = 2 ] || itl_fail "the loopback pair's sessions were not on two shards"
grep -h "bytes verified" "$ITL_WORK/loop-a.log" "$ITL_WORK/loop-b.log" | sed "s/^/$ITL_NAME: loopback: /"
itl_ok "loopback between the two shards of daemon a: $ops verified"

grep -q "^metaroced stats: shard 1 lcore=1" "$ITL_WORK/daemon-a.log" ||
	itl_fail "no periodic (--stats-every) per-shard stats from the control thread"
for n in a b; do itl_daemon_stop $n; done
python3 - "$ITL_WORK/a.json" <<'PY' || itl_fail "daemon a's per-shard counters (above)"
import json, sys
j = json.load(open(sys.argv[1]))
sh, e, t = j["shards"], j["engine"], j["transport"]
bad = []
def check(cond, what):
    print("lcores: %s: %s" % ("ok" if cond else "FAIL", what))
    if not cond:
        bad.append(what)
check(j["final"] and j["nshards"] == 2 and len(sh) == 2, "final dump with 2 shards")
check([s["lcore"] for s in sh] == [0, 1], "shards on lcores 0 and 1: %s" % [s["lcore"] for s in sh])
for s in sh:
    print("lcores: shard %(shard)d lcore %(lcore)d: qps_created %(qps_created)d sessions %(sessions_opened)d "
          "rx %(rx)d tx %(tx)d dispatched %(dispatched)d ring_full %(ring_full)d "
          "rx_backpressure %(rx_backpressure)d tx_loopback %(tx_loopback)d retransmits %(retransmits)d" % s)
    check(s["qps_created"] > 0 and s["sessions_opened"] > 0, "shard %d owned sessions and QPs" % s["shard"])
    check(s["rx"] > 0 and s["tx"] > 0, "shard %d carried RoCE both ways" % s["shard"])
    check(s["tx_loopback"] > 0, "shard %d sent loopback frames" % s["shard"])
check(sh[1]["dispatched"] > 0 and sh[1]["ring_tx"] > 0, "shard 1 got frames from shard 0's dispatch and sent through it")
check(sh[0]["dispatched"] >= sh[1]["dispatched"], "shard 0 dispatched what shard 1 received")
check(e["rx_roce"] == sum(s["rx"] for s in sh), "engine.rx_roce %d = sum over shards" % e["rx_roce"])
check(e["tx_roce"] == sum(s["tx"] for s in sh), "engine.tx_roce %d = sum over shards" % e["tx_roce"])
check(t["sum"]["tx_pkts"] == sum(s["tx_pkts"] for s in sh), "transport.sum.tx_pkts = sum over shards")
check(t["sum"]["rx_pkts"] == sum(s["rx_pkts"] for s in sh), "transport.sum.rx_pkts = sum over shards")
check(j["shm"]["sessions_opened"] == sum(s["sessions_opened"] for s in sh) >= 7, "sessions opened = sum over shards (>= 7)")
check(j["parse_drops"]["total"] == 0, "no parse drop (every frame reached a shard that owns its QP)")
check(t["ctx_rx_unknown_qp"] == 0, "no frame for an unknown QP")
check(e["tx_frames"] == j["port"]["opackets"] + j["port"]["tx_buffer_drops"], "every routed frame reached the port")
sys.exit(1 if bad else 0)
PY
itl_ok "both shards of daemon a owned QPs and carried RoCE traffic; totals are the sums"
echo "$ITL_NAME: PASS"
