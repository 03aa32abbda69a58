#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# metaroce demo (README's first command). On a fresh Debian 12 machine, as root:
#   1. installs what it needs (scripts/lib/deps.sh), builds with meson into build-demo/;
#   2. two network namespaces joined by a veth pair (198.18.0.0/15, not configured in the kernel),
#      one metaroced per namespace on DPDK's net_af_packet, capturing every frame;
#   3. mrperf write_bw, send_bw, read_bw, write_lat, send_lat, read_lat, all with --verify;
#   4. RDMA WRITE and SEND bandwidth again with 1% loss injected inside both daemons
#      (--impair-tx): plain RoCE recovered by RC's go-back-N (IBA 9.7.5.1.3), then the same with
#      MetaRoCE negotiated (mrperf --metaroce: spraying, SACK, selective retransmission);
#   5. a report table (operation, size, bandwidth/latency, bytes verified, corrupted bytes,
#      retransmits/timeouts/NAKs from the daemons' --stats-json dumps, frames captured), then
#      `mrpcap check` and the independent scapy checker (scripts/roce_check.py) on the captures,
#      with per-opcode counts showing WRITE, SEND and READ traffic (and MetaRoCE's under loss);
#   6. the simulator: go-back-N vs loss at a modelled 100 Gb/s.
# Everything is torn down by a trap, also on failure (only the PIDs and namespaces it created).
# Exit 0 on success; otherwise non-zero with "demo: FAIL at step: ..." naming the step.
# Usage: scripts/demo.sh [--no-install] [--pcap-dir DIR] [--keep] [--no-sim]
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
install=1 pcap_dir="" keep=0 sim=1
while [ $# -gt 0 ]; do
	case "$1" in
	--no-install) install=0 ;;
	--pcap-dir) [ $# -ge 2 ] || { echo "demo.sh: --pcap-dir needs a directory" >&2; exit 2; }
		pcap_dir=$2; shift ;;
	--keep) keep=1 ;;
	--no-sim) sim=0 ;;
	-h|--help) sed -n '3,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "demo.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
	esac
	shift
done

step="start"
pids=()
tag="demo$$"
work=""
netns_up=0
py=/usr/bin/python3

cleanup() {
	local rc=$? p
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	[ "$netns_up" = 1 ] && mr_netns_down "$tag"
	if [ -n "$work" ]; then
		if [ "$keep" = 1 ] || [ $rc != 0 ]; then
			echo "demo: logs kept in $work"
		else
			rm -rf "$work"
		fi
	fi
	if [ $rc != 0 ]; then
		echo "demo: FAIL at step: $step" >&2
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
die() {
	echo "demo: $step: $*" >&2
	local f
	for f in "$work"/*.log; do
		[ -f "$f" ] || continue
		echo "---- $f (tail)" >&2
		tail -n 15 "$f" >&2
	done
	exit 1
}

# ---- 1. dependencies and build ----
SECONDS=0
step="install dependencies"
. scripts/lib/deps.sh
. scripts/lib/netns.sh
[ "$(id -u)" = 0 ] || { echo "demo.sh: run as root (network namespaces, hugepages)" >&2; exit 1; }
if [ "$install" = 1 ]; then
	mr_install_deps || die "mr_install_deps failed"
fi
step="build (meson, build-demo/)"
bdir=build-demo
if [ ! -f "$bdir/build.ninja" ]; then
	meson setup "$bdir" -Dtests=false > /tmp/demo-meson-$$.log 2>&1 ||
		{ tail -n 20 /tmp/demo-meson-$$.log >&2; rm -f /tmp/demo-meson-$$.log; die "meson setup"; }
	rm -f /tmp/demo-meson-$$.log
fi
targets=(apps/metaroced/metaroced apps/mrperf/mrperf apps/mrpcap/mrpcap)
[ "$sim" = 1 ] && targets+=(apps/mrsim/mrsim)
ninja -C "$bdir" "${targets[@]}" > /dev/null || die "ninja"
daemon="$bdir/apps/metaroced/metaroced"
mrperf="$bdir/apps/mrperf/mrperf"
mrpcap="$bdir/apps/mrpcap/mrpcap"

step="work and capture directories"
work=$(mktemp -d /tmp/metaroce-demo.XXXXXX)
if [ -n "$pcap_dir" ]; then
	mkdir -p "$pcap_dir" || die "cannot create $pcap_dir"
	pcap_dir=$(cd "$pcap_dir" && pwd)
	capdir=$pcap_dir
else
	capdir=$work
fi

# ---- 2. hugepages, namespaces, daemons ----
step="hugepages"
mr_hugepages 512
free_hp=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
eal_mem=()
if [ "${free_hp:-0}" -lt 256 ]; then
	eal_mem=(--no-huge -m 256)
	echo "demo: not enough free hugepages (${free_hp:-0}), daemons run with --no-huge"
fi
step="network namespaces"
ip netns add "mr-$tag-probe" 2>/dev/null && ip netns del "mr-$tag-probe" ||
	die "cannot create network namespaces"
netns_up=1
mr_netns_up "$tag" 1500 || die "mr_netns_up"
for n in a b; do
	mr_daemon_conf "$work/$n.conf" $n "$work/$n.sock"
done

# start_daemons PHASE [metaroced args...]: one daemon per namespace, capture in $capdir.
start_daemons() {
	local phase=$1 n p
	shift
	for n in a b; do
		rm -f "$work/$n.sock"
		ip netns exec "mr-$tag-$n" "$daemon" -c "$work/$n.conf" \
			--pcap "$capdir/$phase-$n.pcap" --stats-json "$work/$phase-$n.json" "$@" \
			-- --file-prefix="mrdemo$$$n" "${eal_mem[@]}" > "$work/daemon-$phase-$n.log" 2>&1 &
		pids+=($!)
		eval "pid_$n=$!"
	done
	for n in a b; do
		eval "p=\$pid_$n"
		mr_daemon_wait "$work/daemon-$phase-$n.log" "$work/$n.sock" "$p" ||
			die "daemon $n exited or was not ready after 20 s"
	done
}

# snapshot PHASE NAME: both daemons dump their counters (SIGUSR1) to NAME-{a,b}.json.
snapshot() {
	local phase=$1 name=$2 n i
	for n in a b; do
		eval "p=\$pid_$n"
		rm -f "$work/$phase-$n.json"
		kill -USR1 "$p"
		for i in $(seq 1 100); do [ -s "$work/$phase-$n.json" ] && break; sleep 0.05; done
		[ -s "$work/$phase-$n.json" ] || die "daemon $n wrote no stats JSON on SIGUSR1"
		cp "$work/$phase-$n.json" "$work/snap-$name-$n.json"
	done
}

# stop_daemons: SIGTERM, exit status 0 required; the exit dump is the phase's final JSON.
stop_daemons() {
	local n rc
	for n in a b; do
		eval "p=\$pid_$n"
		kill -TERM "$p"
		wait "$p"
		rc=$?
		[ $rc = 0 ] || die "daemon $n exited $rc"
	done
	pids=()
}

port=$((20000 + $$ % 20000))
# run_perf PHASE TEST LABEL [mrperf args...]: server on daemon B, client on daemon A.
run_perf() {
	local phase=$1 t=$2 label=$3 rc rs srv t_run=$SECONDS
	shift 3
	step="mrperf $t ($label)"
	port=$((port + 1))
	timeout 120 "$mrperf" "$t" "$@" -p $port --verify --report_gbits --sock "$work/b.sock" \
		--json "$work/$label-server.json" > "$work/$label-server.log" 2>&1 &
	srv=$!
	pids+=($srv)
	timeout 120 "$mrperf" "$t" "$@" -p $port --verify --report_gbits --sock "$work/a.sock" \
		--json "$work/$label-client.json" 127.0.0.1 > "$work/$label-client.log" 2>&1
	rc=$?
	wait $srv
	rs=$?
	unset 'pids[${#pids[@]}-1]'
	[ $rc = 0 ] || die "client exited $rc"
	[ $rs = 0 ] || die "server exited $rs"
	snapshot "$phase" "$label"
	echo "$label $t $*" >> "$work/runs.txt"
	printf '  %-16s ok  (%s, %d s)\n' "$label" "$*" $((SECONDS - t_run))
}

echo "== metaroce demo: two hosts (network namespaces + veth), one metaroced each, mrperf =="
step="start daemons"
start_daemons clean
snapshot clean clean-start
echo "-- RDMA over metaroced, every received byte checked (--verify) --"
run_perf clean write_bw write_bw -s 65536 -n 64
run_perf clean send_bw send_bw -s 65536 -n 64
run_perf clean read_bw read_bw -s 65536 -n 64
run_perf clean write_lat write_lat -s 64 -n 300
run_perf clean send_lat send_lat -s 64 -n 300
run_perf clean read_lat read_lat -s 64 -n 300
step="stop daemons"
stop_daemons

echo "-- RDMA WRITE and SEND with 1% loss injected in both daemons (seeded): RoCE go-back-N, then MetaRoCE --"
step="start daemons with impairment"
start_daemons loss --impair-tx "loss=0.01,seed=7"
snapshot loss loss-start
run_perf loss write_bw "write_bw@1%loss" -s 65536 -n 256
# SEND checks every byte of every message (a WRITE test checks the final buffer, as perftest).
run_perf loss send_bw "send_bw@1%loss" -s 65536 -n 256
# The same over MetaRoCE (both ends offer it in the setup exchange; docs/metaroce-wire.md).
run_perf loss write_bw "mrc_write@1%loss" -s 65536 -n 256 --metaroce
run_perf loss send_bw "mrc_send@1%loss" -s 65536 -n 256 --metaroce
step="stop impaired daemons"
stop_daemons

# ---- 5. report ----
step="report"
echo
"$py" - "$work" "$capdir" <<'PY' || die "report"
import json, os, re, sys
work, capdir = sys.argv[1], sys.argv[2]

def load(p):
    with open(p) as f:
        return json.load(f)

def verified(label):
    v = c = 0
    for side in ("client", "server"):
        try:
            txt = open(os.path.join(work, "%s-%s.log" % (label, side))).read()
        except OSError:
            continue
        for m in re.finditer(r"verified (\d+) bytes, (\d+) corrupted", txt):
            v += int(m.group(1)); c += int(m.group(2))
    return v, c

def counters(j):
    s = j["transport"]["sum"]
    e = j["engine"]
    return {"retx": s["retransmits"], "tmo": s["timeouts"],
            "nak": s["seq_naks_rcvd"] + s["rnr_naks_rcvd"],
            "frames": e["rx_frames"] + e["tx_frames"],
            "imp": j["impair"]["tx"]["dropped"]["total"] + j["impair"]["rx"]["dropped"]["total"],
            "bad": j["parse_drops"]["total"]}

rows = []
prev = {}
bad_total = 0
for line in open(os.path.join(work, "runs.txt")):
    label, test = line.split()[:2]
    phase = "loss" if "loss" in label else "clean"
    if phase not in prev:
        prev[phase] = [counters(load(os.path.join(work, "snap-%s-start-%s.json" % (phase, n))))
                       for n in "ab"]
    cur = [counters(load(os.path.join(work, "snap-%s-%s.json" % (label, n)))) for n in "ab"]
    base = prev[phase]
    d = {k: sum(cur[i][k] - base[i][k] for i in range(2)) for k in cur[0]}
    prev[phase] = cur
    client = load(os.path.join(work, label + "-client.json"))
    r = client["results"][0]
    if test.endswith("_bw"):
        perf = "%.3f Gb/s" % r["BW_average"]
    else:
        perf = "%.1f us (p99 %.1f)" % (r["t_typical"], r["percentile_99"])
    v, c = verified(label)
    bad_total += c + d["bad"]
    rows.append((label, r["MsgSize"], perf, v, c, d["retx"], d["tmo"], d["nak"], d["imp"],
                 d["frames"]))

hdr = ("operation", "size", "bandwidth / latency", "verified B", "corrupt B", "retx",
       "timeouts", "NAKs", "dropped(imp)", "frames")
fmt = "%-16s %6s %-20s %11s %9s %6s %8s %5s %12s %7s"
print(fmt % hdr)
print("-" * 108)
for row in rows:
    print(fmt % row)
print("(retx/timeouts/NAKs: RC transport counters of both daemons, from their --stats-json "
      "dumps; frames: frames received+sent by both daemons = frames captured)")
for n in "ab":
    j = load(os.path.join(work, "loss-%s.json" % n))
    t = j["impair"]["tx"]
    print("daemon %s impairment (%s): %d frames offered, %d dropped (%.2f%%)"
          % (n.upper(), t["spec"], t["frames"], t["dropped"]["total"],
             100.0 * t["dropped"]["total"] / max(1, t["frames"])))
gb = {row[0]: float(row[2].split()[0]) for row in rows if row[2].endswith("Gb/s")}
for op in ("write", "send"):
    a, b = gb.get("%s_bw@1%%loss" % op), gb.get("mrc_%s@1%%loss" % op)
    if a and b:
        print("1%% loss, %s: MetaRoCE %.3f Gb/s vs RoCE go-back-N %.3f Gb/s = %.2fx"
              % (op.upper(), b, a, b / a))
for label in ("mrc_write@1%loss", "mrc_send@1%loss"):
    txt = "".join(open(os.path.join(work, "%s-%s.log" % (label, s))).read()
                  for s in ("client", "server"))
    if "Transport: MetaRoCE" not in txt:
        print("demo: %s did not negotiate MetaRoCE" % label)
        sys.exit(1)
if bad_total:
    print("demo: corrupted bytes or malformed frames seen: %d" % bad_total)
    sys.exit(1)
if sum(r[5] for r in rows if "loss" in r[0]) == 0:
    print("demo: the 1% loss runs show no retransmissions")
    sys.exit(1)
PY

# ---- captures: metaroce's checker and the independent one ----
step="mrpcap check"
echo
echo "-- captures ($capdir): mrpcap check (metaroce's decoder: ICRC, headers) --"
declare -A opcount=()
for f in "$capdir"/clean-a.pcap "$capdir"/clean-b.pcap "$capdir"/loss-a.pcap "$capdir"/loss-b.pcap; do
	out=$("$mrpcap" check "$f" 2>&1) || { echo "$out" | tail -n 20 >&2; die "mrpcap check $f"; }
	echo "$(basename "$f"): $(echo "$out" | tail -n 1)"
	echo "$out" > "$work/$(basename "$f").mrpcap.txt"
done
echo "per-opcode counts, daemon A's capture of the clean runs (both directions):"
sed -n '/per-opcode counts/,/passed/p' "$work/clean-a.pcap.mrpcap.txt" | grep '^  ' |
	sed 's/^/  /'
for op in RC_RDMA_WRITE RC_SEND RC_RDMA_READ_REQUEST RC_RDMA_READ_RESPONSE RC_ACKNOWLEDGE; do
	grep -q "^  $op" "$work/clean-a.pcap.mrpcap.txt" || die "no $op frames in the capture"
done
echo "per-opcode counts, daemon A's capture of the 1% loss runs (RoCE, then MetaRoCE 0xC0|op):"
sed -n '/per-opcode counts/,/passed/p' "$work/loss-a.pcap.mrpcap.txt" | grep '^  ' |
	sed 's/^/  /'
for op in MRC_RDMA_WRITE MRC_SEND MRC_ACKNOWLEDGE; do
	grep -q "^  $op" "$work/loss-a.pcap.mrpcap.txt" || die "no $op frames in the loss capture"
done
step="roce_check.py (independent scapy checker)"
echo "-- scripts/roce_check.py (scapy, independent ICRC computation; A's captures: on a veth"
echo "   pair B captured the same frames, as the equal mrpcap counts show) --"
chk=()
for f in clean-a loss-a; do
	# Both files at once: scapy is the slow part of the demo and there are two cores.
	"$py" scripts/roce_check.py "$capdir/$f.pcap" > "$work/$f.roce_check.txt" 2>&1 &
	chk+=($!)
	pids+=($!)
done
for i in 0 1; do
	f=$([ $i = 0 ] && echo clean-a || echo loss-a)
	wait "${chk[$i]}" || { tail -n 20 "$work/$f.roce_check.txt" >&2; die "roce_check.py $f.pcap"; }
	echo "$f.pcap: $(tail -n 1 "$work/$f.roce_check.txt")"
done
pids=()
[ -n "$pcap_dir" ] && echo "captures left in $pcap_dir"

# ---- 6. the simulator ----
if [ "$sim" = 1 ]; then
	step="simulator"
	echo
	echo "-- simulator: RDMA WRITE 16 x 1 MiB, 100 Gb/s link, 5 us one way, 4 KB MTU, go-back-N RC --"
	for loss in 0 0.001 0.01; do
		echo "random loss $loss:"
		"$bdir/apps/mrsim/mrsim" --op write --size 1048576 --count 16 --mtu 4096 --loss "$loss" \
			--seed 7 | sed 's/^/  /' || die "mrsim loss $loss"
	done
	echo "bursty loss 1% (Gilbert-Elliott, mean burst 4):"
	"$bdir/apps/mrsim/mrsim" --op write --size 1048576 --count 16 --mtu 4096 --loss 0.01 \
		--burst 4 --seed 7 | sed 's/^/  /' || die "mrsim burst"
fi
step="done"
echo
echo "demo: PASS in $SECONDS s (every received byte verified, captures checked by two independent decoders)"
