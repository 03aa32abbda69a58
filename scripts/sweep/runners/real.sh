#!/bin/bash
# SPDX-License-Identifier: MIT
# Real-mode runner for scripts/loss-sweep.sh (see scripts/sweep/README.md, "Real-mode hook"):
# two metaroced (DPDK net_af_packet) in two network namespaces over a veth pair, loss injected by
# the daemons' own seeded impairment (--impair-tx on both: data one way, ACKs the other), and
# mrperf write_bw --verify and send_bw --verify (every received byte checked) for plain RoCE and
# for --metaroce at loss 0, 0.001, 0.01, 0.02 and bursty 0.01 (Gilbert-Elliott, mean burst 4).
# Each (loss, transport, test) run gets fresh daemons, so their exit --stats-json holds exactly
# that run's retransmit counters. Appends one JSON row per run ("mode":"real") to RUNS_JSONL.
#
# usage: real.sh OUT_DIR RUNS_JSONL
# env:   MR_BUILD (build dir, default ROOT/build), MR_REAL_SIZE (65536), MR_REAL_ITERS (2000),
#        MR_REAL_TX_DEPTH (16, mrperf -t),
#        MR_REAL_ENTROPIES (16), MR_REAL_CC (none), MR_REAL_LOSSES ("0 0.001 0.01 0.02 b0.01"),
#        MR_REAL_TESTS ("write_bw send_bw"), MR_REAL_TRANSPORTS ("roce metaroce"),
#        MR_REAL_PCAP=1 (each daemon records its frames to RAW/NAME-a|b.pcap, after tx impairment),
#        MR_SWEEP_REAL=0 skips the runner.
# Exit 0 (also when skipped: not root, no netns, binaries missing), 1 on a setup failure.
set -u
out=$1 runs=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
build=$(cd "${MR_BUILD:-$root/build}" 2>/dev/null && pwd) || build=""
daemon="$build/apps/metaroced/metaroced"
mrperf="$build/apps/mrperf/mrperf"
size=${MR_REAL_SIZE:-65536}
iters=${MR_REAL_ITERS:-2000}
# Outstanding messages per QP (mrperf -t). perftest's 128 x 64 KiB = 8 MiB in flight overflows
# the af_packet receive ring (framecnt 4096) in bursts: frames vanish before any impairment
# (the PMD counts no imissed) and go-back-N then collapses into RETRY_EXC_ERR (C9-141).
txd=${MR_REAL_TX_DEPTH:-16}
ent=${MR_REAL_ENTROPIES:-16}
cc=${MR_REAL_CC:-none}
losses=${MR_REAL_LOSSES:-"0 0.001 0.01 0.02 b0.01"}
tests=${MR_REAL_TESTS:-"write_bw send_bw"}
transports=${MR_REAL_TRANSPORTS:-"roce metaroce"}
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
skip() { echo "real.sh: skipped: $*" >&2; exit 0; }
[ "${MR_SWEEP_REAL:-1}" = 0 ] && skip "MR_SWEEP_REAL=0"
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
for f in "$daemon" "$mrperf"; do [ -x "$f" ] || skip "$f not built"; done
. "$root/scripts/lib/netns.sh"
tag="rs$$"
raw="$out/raw/real"
mkdir -p "$raw"
pids=()
stop_daemons() {
	local p
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	pids=()
}
cleanup() { stop_daemons; mr_netns_down "$tag"; rm -f "$raw"/*.sock; }
trap cleanup EXIT
ip netns add "mr-$tag-probe" 2>/dev/null && ip netns del "mr-$tag-probe" || skip "no network namespaces"
mr_netns_up "$tag" 1500 || { echo "real.sh: netns setup failed" >&2; exit 1; }

# start_daemons NAME IMPAIR_SPEC_A IMPAIR_SPEC_B
start_daemons() {
	local name=$1 n spec
	for n in a b; do
		spec=$([ $n = a ] && echo "$2" || echo "$3")
		mr_daemon_conf "$raw/$n.conf" $n "$raw/$n.sock"
		rm -f "$raw/$n.sock" "$raw/$name-$n.stats.json"
		local imp=()
		[ "$spec" = off ] || imp=(--impair-tx "$spec")
		[ "${MR_REAL_PCAP:-0}" = 1 ] && imp+=(--pcap "$raw/$name-$n.pcap")
		ip netns exec "mr-$tag-$n" "$daemon" -c "$raw/$n.conf" "${imp[@]}" \
			--stats-json "$raw/$name-$n.stats.json" -- --file-prefix="mrreal$$$n" \
			--no-huge -m 256 > "$raw/$name-daemon-$n.log" 2>&1 &
		pids+=($!)
	done
	for n in a b; do
		mr_daemon_wait "$raw/$name-daemon-$n.log" "$raw/$n.sock" ||
			{ echo "real.sh: daemon $n not ready ($name)" >&2; return 1; }
	done
}

port=$((30000 + $$ % 20000))
for l in $losses; do
	model=random rate=$l burst=""
	case $l in b*) model=bursty rate=${l#b} burst=",burst=4" ;; esac
	for t in $tests; do
		for tr in $transports; do
			name="real-$t-$tr-$model-$rate"
			extra=()
			[ $tr = metaroce ] && extra=(--metaroce --entropies "$ent" --cc "$cc")
			if [ "$rate" = 0 ]; then sa=off sb=off
			else sa="loss=$rate$burst,seed=11" sb="loss=$rate$burst,seed=13"; fi
			echo "real.sh: $name" >&2
			start_daemons "$name" "$sa" "$sb" || { stop_daemons; continue; }
			port=$((port + 1))
			timeout 300 "$mrperf" "$t" -s "$size" -n "$iters" -t "$txd" -p $port --verify \
				"${extra[@]}" --sock "$raw/b.sock" --report_gbits --json "$raw/$name-server.json" \
				> "$raw/$name-server.log" 2>&1 &
			srv=$!
			timeout 300 "$mrperf" "$t" -s "$size" -n "$iters" -t "$txd" -p $port --verify \
				"${extra[@]}" --sock "$raw/a.sock" --report_gbits --json "$raw/$name-client.json" \
				127.0.0.1 > "$raw/$name-client.log" 2>&1
			rc=$?
			wait $srv
			rs=$?
			stop_daemons # writes the final --stats-json of each daemon
			"$py" - "$raw" "$name" "$tr" "$model" "$rate" "$rc" "$rs" "$size" "$ent" "$cc" \
				>> "$runs" <<'PY'
import json, re, sys
raw, name, tr, model, rate, rc, rs, size, ent, cc = sys.argv[1:]
def load(p):
    try:
        with open(p) as f:
            return json.load(f)
    except Exception:
        return None
def text(p):
    try:
        with open(p) as f:
            return f.read()
    except Exception:
        return ""
cl = load(f"{raw}/{name}-client.json")
logs = text(f"{raw}/{name}-client.log") + text(f"{raw}/{name}-server.log")
gbps = 0.0
if cl and cl.get("results"):
    gbps = float(cl["results"][-1]["BW_average"])
m = re.findall(r"verified (\d+) bytes, (\d+) corrupted", logs)
vbytes = sum(int(a) for a, _ in m)
corrupt = sum(int(b) for _, b in m)
verified = rc == "0" and rs == "0" and bool(m) and vbytes > 0 and corrupt == 0
negotiated = "Transport: MetaRoCE" in logs
tot = {"retransmits": 0, "sack_retransmits": 0, "spurious_retransmits": 0, "timeouts": 0,
       "tlp_probes": 0}
for side in "ab":
    st = load(f"{raw}/{name}-{side}.stats.json") or {}
    s = st.get("transport", {}).get("sum", {})
    for k in tot:
        tot[k] += int(s.get(k, 0))
row = {"mode": "real", "experiment": "loss", "name": name, "transport": tr,
       "loss_model": model, "loss_rate": float(rate),
       "goodput_gbps": gbps if verified else 0.0, "measured_gbps": gbps,
       "p50_us": 0, "p99_us": 0, "verified": verified, "verified_bytes": vbytes,
       "corrupted_bytes": corrupt, "negotiated_metaroce": negotiated,
       "entropies": int(ent) if tr == "metaroce" else 1,
       "cc": cc if tr == "metaroce" else "none", "fabric_paths": 1,
       "test": name.split("-")[1], "msg_size": int(size)}
row.update(tot)
if not verified:
    row["error"] = f"client rc {rc}, server rc {rs}"
print(json.dumps(row))
PY
			tail -n1 "$runs" | sed 's/^/real.sh: /' >&2
		done
	done
done
