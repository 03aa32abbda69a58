#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# metaroce against this machine's own limits, measured in one run (issue 10, docs/performance.md):
#   1. ICRC alone (tests/wire/bench_icrc): our CRC paths vs memcpy vs DPDK's rte_net_crc, one core;
#   2. the raw net_memif ceiling: tests/dpdk/memif_pingpong blast -> sink (a minimal forwarder:
#      one polling thread per process; dpdk-testpmd's extra busy main lcore halved it here), frames/s
#      and bytes/s at the frame sizes metaroce sends over memif (82 B = an 8-byte WRITE, 1082 B = a
#      full IB-MTU-1024 packet, 1514 B, 4154 B = a full IB-MTU-4096 packet, in 4352-byte memif
#      buffers: JUMBO_MTU below);
#   3. the raw memif ping-pong RTT at 82 B (tests/dpdk/memif_pingpong);
#   4. one kernel TCP stream over a veth between two namespaces (iperf3) at MTU 1500 and at
#      metaroce's jumbo MTU, with the CPU time it used, and its 64-byte ping-pong RTT (sockperf);
#   5. metaroce between two metaroced over net_memif (one engine lcore each, busy polling, in two
#      network namespaces, filesystem memif socket): WRITE/READ goodput at IB MTU 4096 (the
#      largest, port mtu JUMBO_MTU) and 1024 (mtu 1500), 8 B WRITE message rate at 1/16/64 QPs,
#      8 B write/send ping-pong latency, each with the engine threads' CPU share.
# Every figure comes with the CPU share of each polling thread (from /proc/PID/task/*/stat) and
# the ratios are formed from figures of this run only. The machine may be shared: figures are
# medians of several samples where the tool allows, and reported, never asserted.
#
# Usage: scripts/bench-perf.sh [--json FILE] [--quick] [--build DIR] [--keep] [--only LIST]
#   --quick   shorter runs, fewer sizes (CI; a few minutes)
#   --build   build directory (default: build; built with ninja if a binary is missing)
#   --keep    keep the work directory (logs, each metaroce run's daemon counters) for inspection
#   --only    comma-separated sections to run: icrc, memif, tcp, mr (default all; ratios whose
#             figures were not measured are null); BENCH_MR_RUNS=REGEX in the environment runs
#             only the metaroce runs whose key matches (e.g. '^write_bw'); BENCH_PERF_RECORD=1
#             records `perf record -a -g` over each metaroce client run into the work directory
#             (KEY.perf.data; implies --keep), to read where each CPU went;
#             BENCH_TX_WARM=false runs every metaroce engine with [port] tx_warm = false
#             BENCH_ROUNDS=N (1-9): each headline ratio measured in N rounds, each between its
#             own baselines, and reported as their median (default 3, --quick 1)
# Needs root (namespaces), Debian packages dpdk-dev (dpdk-testpmd), iperf3, sockperf (installed
# if missing, as scripts/lib/deps.sh does).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/lib/netns.sh"

json_out= quick=0 bdir="$root/build" keep=0 only=icrc,memif,tcp,mr
while [ $# -gt 0 ]; do
	case $1 in
	--json) json_out=$2; shift 2 ;;
	--quick) quick=1; shift ;;
	--build) bdir=$(cd "$2" && pwd); shift 2 ;;
	--keep) keep=1; shift ;;
	--only) only=$2; shift 2 ;;
	-h|--help) sed -n '2,34p' "$0"; exit 0 ;;
	*) echo "bench-perf: unknown argument $1" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "bench-perf: needs root (network namespaces)" >&2; exit 2; }
[ "${BENCH_PERF_RECORD:-0}" = 1 ] && keep=1

# Quick ICRC cells: 9 x 10 ms (5 x 5 ms until 2026-12-04 let one noisy run put the ICRC 3 %
# under DPDK's AVX-512 CRC, which it leads by about 10 % in every other run; about 9 s).
# ROUNDS: how often each headline ratio's run is measured between fresh baselines (mr_paired),
# and the 1- and 1024-QP rates in turn; the headline is the median of the rounds.
# BENCH_ROUNDS overrides (1..9).
if [ $quick = 1 ]; then
	T=5 ICRC_ARGS="--reps 9 --ms 10" LAT_N=2000 BW_SIZES="65536" SAMPLES=1 ROUNDS=1
else
	T=8 ICRC_ARGS="--reps 11 --ms 20" LAT_N=20000 BW_SIZES="65536 1048576 4194304" SAMPLES=3 ROUNDS=3
fi
ROUNDS=${BENCH_ROUNDS:-$ROUNDS}
case $ROUNDS in
[1-9]) ;;
*) echo "bench-perf: BENCH_ROUNDS must be 1..9, not '$ROUNDS'" >&2; exit 2 ;;
esac

work=$(mktemp -d /tmp/mr-bench-perf.XXXXXX)
res="$work/results.txt"   # "key value" lines, turned into the table and JSON at the end
: > "$res"
tag="bp$$"
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	sleep 0.5
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	mr_netns_down "$tag"
	ip netns del "mr-$tag-ma" 2>/dev/null
	ip netns del "mr-$tag-mb" 2>/dev/null
	[ $keep = 1 ] && echo "bench-perf: logs in $work" || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

put() { echo "$1 $2" >> "$res"; }
put bench.rounds "$ROUNDS"
note() { echo "bench-perf: $*" >&2; put "note_$(echo "$1" | tr -c 'a-z0-9_\n' _)" "\"$*\""; }

# ---- tools ----
need_pkgs=()
command -v dpdk-testpmd >/dev/null || need_pkgs+=(dpdk-dev)
command -v iperf3 >/dev/null || need_pkgs+=(iperf3)
command -v sockperf >/dev/null || need_pkgs+=(sockperf)
if [ ${#need_pkgs[@]} -gt 0 ]; then
	echo "bench-perf: installing ${need_pkgs[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
		--no-install-recommends "${need_pkgs[@]}" >/dev/null 2>&1 ||
		{ DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -qq &&
		  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
			--no-install-recommends "${need_pkgs[@]}" >/dev/null 2>&1; } ||
		echo "bench-perf: could not install ${need_pkgs[*]}" >&2
fi
targets=(tests/wire/bench_icrc tests/dpdk/memif_pingpong tests/dpdk/cacheline_pingpong
	apps/metaroced/metaroced apps/mrperf/mrperf apps/mrstat/mrstat)
for t in "${targets[@]}"; do
	[ -x "$bdir/$t" ] && continue
	[ -d "$bdir" ] || meson setup "$bdir" "$root" >/dev/null
	ninja -C "$bdir" "${targets[@]}" >/dev/null || { echo "bench-perf: build failed" >&2; exit 1; }
	break
done
ncpu=$(nproc)
cpu_a=0 cpu_b=$((ncpu > 1 ? 1 : 0))
hz=$(getconf CLK_TCK)
put machine_cpus "$ncpu"
put machine_load1 "$(cut -d' ' -f1 /proc/loadavg)"

# ---- CPU shares ----
# cpu_snap PID...: "pid/tid comm ticks" for every thread of the processes.
cpu_snap() {
	local p t
	for p in "$@"; do
		for t in /proc/"$p"/task/*; do
			[ -r "$t/stat" ] || continue
			# comm is in parentheses and may hold spaces: fields after the last ')'.
			awk -v id="$p/${t##*/}" -v comm="$(cat "$t/comm" 2>/dev/null | tr ' ' _)" '{
				s = $0; sub(/.*\) /, "", s); split(s, f, " ");
				print id, comm, f[12] + f[13] }' "$t/stat"
		done
	done
}
# sys_snap: "busy" jiffies of the whole machine (/proc/stat: user+nice+system+irq+softirq;
# idle, iowait and the hypervisor's steal left out). sys_cores SNAP1 SNAP2 SECONDS: the cores the
# whole machine used between two snapshots: every process and the kernel's softirq work,
# wherever it ran (ksoftirqd, another task's context), which a process's own accounting misses.
sys_snap() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8; exit }' /proc/stat; }
sys_cores() { echo "$1 $2 $3" | awk -v hz="$hz" '{ printf "%.3f", ($2 - $1) / hz / $3 }'; }
# cpu_share SNAP1 SNAP2 SECONDS LABEL: prints "LABEL:comm=NN%" for threads above 3%, and the sum
# of all of them (cores) on the last line.
cpu_share() {
	awk -v secs="$3" -v hz="$hz" -v label="$4" 'NR == FNR { t0[$1] = $3; next }
		($1 in t0) { pct = ($3 - t0[$1]) * 100 / hz / secs; tot += pct;
			if (pct >= 3) printf "%s:%s=%.0f%% ", label, $2, pct }
		END { printf "\n%.3f\n", tot / 100 }' "$1" "$2"
}

# ---- 1. ICRC ----
icrc_section() {
	local out="$work/icrc.txt"
	echo "== ICRC (one core, CPU $cpu_b) =="
	if ! taskset -c "$cpu_b" "$bdir/tests/wire/bench_icrc" $ICRC_ARGS > "$out" 2> "$work/icrc.err"; then
		note icrc "bench_icrc failed: $(tail -1 "$work/icrc.err")"
		return
	fi
	grep -v '^RESULT' "$out"
	grep '^RESULT' "$out" | while read -r _ k v; do put "icrc.$k" "$v"; done
}

# ---- 2./3. raw net_memif ----
EAL_T=(--no-pci --no-huge -m 256 --no-shconf --no-telemetry --log-level=lib.eal:error)
memif_rate_once() { # SIZE [SFX]: memif_pingpong blast (client, CPU a) -> sink (server, CPU b)
	local size=$1 sock="$work/mb.sock" srv cli
	rm -f "$sock"
	"$bdir/tests/dpdk/memif_pingpong" sink "$sock" "$size" "$T" -l "$cpu_b" "${EAL_T[@]}" \
		--file-prefix="${tag}mbs" > "$work/mb-sink-$size${2:-}.log" 2>&1 &
	srv=$!
	pids+=($srv)
	sleep 1
	"$bdir/tests/dpdk/memif_pingpong" blast "$sock" "$size" $((T + 5)) -l "$cpu_a" "${EAL_T[@]}" \
		--file-prefix="${tag}mbc" > "$work/mb-blast-$size${2:-}.log" 2>&1 &
	cli=$!
	pids+=($cli)
	sleep 1.5
	cpu_snap $srv $cli > "$work/s1"
	sleep "$T"
	cpu_snap $srv $cli > "$work/s2"
	# A pair that outlives its time by far is ended (a blaster once ran 11 minutes on a
	# mis-timed clock and held the whole bench): its sink then reports what it counted.
	{ sleep $((T + 20)); kill -TERM $cli $srv 2>/dev/null; } &
	local wd=$!
	wait $cli 2>/dev/null
	wait $srv 2>/dev/null
	memif_sink_rc=$?
	kill $wd 2>/dev/null
	wait $wd 2>/dev/null
	pids=("${pids[@]:0:${#pids[@]}-2}")
	grep -q '^RESULT pps' "$work/mb-sink-$size${2:-}.log"
}
memif_rate() { # SIZE [SFX]; a sink that measured nothing (seen 1 run in 50: the pair did not
	# connect in time) is run once more, and said so. SFX: appended to the keys and log names
	# (the paired measurements of mr_paired).
	local size=$1 sfx=${2:-} sh
	if ! memif_rate_once "$size" "$sfx"; then
		# The first attempt's logs are kept (--keep) for a look at why.
		echo "  memif $size B: no result (sink exit $memif_sink_rc: $(grep -v '^RESULT' \
			"$work/mb-sink-$size$sfx.log" | tail -1); blaster: $(tail -1 \
			"$work/mb-blast-$size$sfx.log")); once more"
		mv "$work/mb-sink-$size$sfx.log" "$work/mb-sink-$size$sfx.try1.log"
		mv "$work/mb-blast-$size$sfx.log" "$work/mb-blast-$size$sfx.try1.log"
		if ! memif_rate_once "$size" "$sfx"; then
			note "memif_$size$sfx" "memif sink: $(grep -v '^RESULT' "$work/mb-sink-$size$sfx.log" | tail -1)"
			return
		fi
	fi
	sh=$(cpu_share "$work/s1" "$work/s2" "$T" "memif")
	pps=$(awk '/^RESULT pps/ {print $3}' "$work/mb-sink-$size$sfx.log")
	put "memif.pps_$size$sfx" "$pps"
	put "memif.Bps_$size$sfx" "$((pps * size))"
	put "memif.cores_$size$sfx" "$(echo "$sh" | tail -1)"
	put "memif.cpu_$size$sfx" "\"$(echo "$sh" | head -1 | sed 's/ *$//')\""
	echo "  $(grep '^memif sink' "$work/mb-sink-$size$sfx.log"); CPU $(echo "$sh" | head -1)"
	# memif_pingpong times with CLOCK_MONOTONIC and says when the TSC ran at another rate
	# than DPDK's calibration (seen on this host: docs/performance-history.md, session 12).
	grep '^TSC:' "$work/mb-sink-$size$sfx.log" | sed 's/^/    sink /'
}

memif_pingpong() { # SIZE [SFX [warm]] (as memif_rate; warm: keys rtt_warm_*, both ends warm
	# their transmit ring as metaroced does, MEMIF_PP_WARM)
	local size=$1 sfx=${2:-} sock="$work/pp.sock" srv env=() kp=
	[ "${3:-}" = warm ] && env=(MEMIF_PP_WARM=1) kp=warm_
	rm -f "$sock"
	env "${env[@]}" "$bdir/tests/dpdk/memif_pingpong" echo "$sock" "$size" 0 -l "$cpu_b" \
		"${EAL_T[@]}" --file-prefix="${tag}ppe" > "$work/pp-echo.log" 2>&1 &
	srv=$!
	pids+=($srv)
	sleep 1
	if env "${env[@]}" "$bdir/tests/dpdk/memif_pingpong" ping "$sock" "$size" "$LAT_N" \
		-l "$cpu_a" "${EAL_T[@]}" --file-prefix="${tag}ppp" > "$work/pp-ping.log" 2>&1; then
		grep '^RESULT' "$work/pp-ping.log" | while read -r _ k v; do
			put "memif.${k/rtt_/rtt_$kp}$sfx" "$v"
		done
		[ -n "$kp" ] && sed -i 's/^memif ping-pong/memif ping-pong (warmed)/' "$work/pp-ping.log"
		grep -v '^RESULT' "$work/pp-ping.log" | grep -i rtt | sed 's/^/  /'
		grep '^TSC:' "$work/pp-ping.log" | sed 's/^/    ping /'
	else
		note memif_pp "memif ping-pong failed: $(tail -1 "$work/pp-ping.log")"
	fi
	kill -TERM $srv 2>/dev/null; wait $srv 2>/dev/null
	pids=("${pids[@]:0:${#pids[@]}-1}")
}

# cacheline KEY: how long a cache line takes between the two benchmark CPUs
# (tests/dpdk/cacheline_pingpong, 5 x 100k hand-overs, ~0.1 s), key host.cacheline_ns_KEY.
# memif's frames and ring indices, and every shm ring entry between an app and its daemon,
# cross this line; on this host it took 213-252 ns most of the time and once 77 ns, beside a
# fast-state run (session 13): printed beside each baseline, it shows which state a figure
# was taken in.
cacheline() {
	local out ns
	[ "$cpu_a" = "$cpu_b" ] && return 0
	out=$("$bdir/tests/dpdk/cacheline_pingpong" "$cpu_a" "$cpu_b" 5 100000 2>&1) || {
		note "cacheline_$1" "cacheline_pingpong failed: $out"
		return 0
	}
	ns=$(echo "$out" | awk '{ print $5 }')
	put "host.cacheline_ns_$1" "$ns"
	echo "  cache line CPU $cpu_a <-> $cpu_b: $ns ns per hand-over (median of 5 x 100k)"
}

memif_section() {
	echo "== raw net_memif (tests/dpdk/memif_pingpong blast -> sink, two processes, CPUs $cpu_a/$cpu_b) =="
	cacheline memif
	for s in 82 1082 1514 4154; do
		memif_rate $s
	done
	memif_pingpong 82
	memif_pingpong 82 "" warm
}

# ---- 4. kernel TCP over veth ----
# The same MTU as metaroce's runs: 1500 (IB MTU 1024), then JUMBO_MTU (IB MTU 4096; key tcpj).
JUMBO_MTU=4200 JUMBO_BSIZE=4352
tcp_section() {
	tcp_mtu 1500 tcp
	tcp_mtu "$JUMBO_MTU" tcpj
}
tcp_mtu() { # MTU KEY
	local a="mr-$tag-a" b="mr-$tag-b" srv mtu=$1 key=$2
	echo "== kernel TCP over veth (namespaces, MTU $mtu) =="
	mr_netns_up "$tag" "$mtu" || { note "$key" "no namespaces"; return; }
	# This section alone gives the kernel addresses (and its offloads back).
	ip -n "$a" addr add 198.18.77.1/30 dev mrva
	ip -n "$b" addr add 198.18.77.2/30 dev mrvb
	for ns in "$a:mrva" "$b:mrvb"; do
		ip netns exec "${ns%%:*}" ethtool -K "${ns##*:}" tx on rx on tso on gso on gro on \
			>/dev/null 2>&1 || true
	done
	if command -v iperf3 >/dev/null; then
		ip netns exec "$b" taskset -c "$cpu_b" iperf3 -s -1 -B 198.18.77.2 -p 5201 \
			> "$work/iperf-s.log" 2>&1 &
		srv=$!
		pids+=($srv)
		sleep 0.5
		local s0 s1 t0 t1
		s0=$(sys_snap) t0=$(date +%s.%N)
		ip netns exec "$a" taskset -c "$cpu_a" iperf3 -c 198.18.77.2 -p 5201 -t "$T" -J \
			> "$work/iperf.json" 2> "$work/iperf.err"
		s1=$(sys_snap) t1=$(date +%s.%N)
		wait $srv 2>/dev/null
		pids=("${pids[@]:0:${#pids[@]}-1}")
		python3 - "$work/iperf.json" "$res" "$key" \
			"$(sys_cores "$s0" "$s1" "$(echo "$t1 - $t0" | bc -l)")" <<'PY'
import json, sys
key, sysc = sys.argv[3], float(sys.argv[4])
try:
    j = json.load(open(sys.argv[1]))
    bps = j["end"]["sum_received"]["bits_per_second"]
    cpu = j["end"]["cpu_utilization_percent"]
    host, remote = cpu["host_total"], cpu["remote_total"]
except Exception as e:
    open(sys.argv[2], "a").write('note_%s "iperf3 gave no result: %s"\n' % (key, e))
    sys.exit(0)
with open(sys.argv[2], "a") as f:
    f.write("%s.bps %d\n%s.cores %.3f\n%s.sender_cpu %.1f\n%s.receiver_cpu %.1f\n%s.sys_cores %.3f\n" %
            (key, bps, key, (host + remote) / 100, key, host, key, remote, key, sysc))
print("  iperf3 one stream: %.2f Gb/s, sender %.0f%% + receiver %.0f%% of a core (iperf3's own "
      "accounting: process user+system time); the whole machine %.2f cores" % (bps / 1e9, host, remote, sysc))
PY
	else
		note "$key" "iperf3 not installed"
	fi
	# The RTT once (64-byte messages do not depend on the MTU).
	if [ "$key" = tcp ] && command -v sockperf >/dev/null; then
		ip netns exec "$b" taskset -c "$cpu_b" sockperf sr --tcp -i 198.18.77.2 -p 11111 \
			> "$work/sockperf-s.log" 2>&1 &
		srv=$!
		pids+=($srv)
		sleep 0.5
		ip netns exec "$a" taskset -c "$cpu_a" sockperf pp --tcp -i 198.18.77.2 -p 11111 \
			-m 64 -t "$T" --full-rtt > "$work/sockperf.log" 2>&1
		kill -TERM $srv 2>/dev/null; wait $srv 2>/dev/null
		pids=("${pids[@]:0:${#pids[@]}-1}")
		python3 - "$work/sockperf.log" "$res" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
def pct(p):
    m = re.search(r"percentile\s+%s\s*=\s*([\d.]+)" % re.escape(p), t)
    return float(m.group(1)) if m else None
p50, p99, p999 = pct("50.000"), pct("99.000"), pct("99.900")
with open(sys.argv[2], "a") as f:
    if p50 is None:
        f.write('note_tcp_rtt "sockperf gave no percentiles"\n')
    else:
        f.write("tcp.rtt_p50_us %.2f\ntcp.rtt_p99_us %.2f\ntcp.rtt_p999_us %.2f\n" % (p50, p99, p999))
        print("  sockperf TCP ping-pong 64 B: RTT p50 %.1f us, p99 %.1f us, p99.9 %.1f us" % (p50, p99, p999))
PY
	elif [ "$key" = tcp ]; then
		note tcp_rtt "sockperf not installed"
	fi
	mr_netns_down "$tag"
}

# ---- 5. metaroce over net_memif ----
MR_PORT=$((20000 + $$ % 20000))
da= db=
# Light-load sleep of the bulk runs at IB MTU 4096 ([engine] load_sleep_max_us; 0 = busy
# polling, as every other run). 100 us since 2026-12-04 (was 50): write_per_core_vs_tcp
# 1.93-2.74 (median 2.16, 6 quick runs) against 1.96-2.19 with 50 us in the same hour; with
# 200 us the goodput fell to 23-27 Gb/s in three runs of four (docs/performance-history.md, session 11).
BULK_SLEEP_US=${BENCH_LOAD_SLEEP_US:-100}
mr_start() { # [MTU [SLEEP]]: the port's mtu (1500: IB MTU 1024; JUMBO_MTU: 4096 in JUMBO_BSIZE
	# buffers); the engines' load_sleep_max_us (default 0)
	local n role ip lc ns mtu=${1:-1500} sleep=${2:-0} bs= win=256
	# A sleeping receiver ACKs up to a sleep late: the window must cover the line rate times
	# the sleep plus the round trip (engine.c load_sleep). 256 packets are 180 us at
	# 1.4 Mframes/s; with them the sender stalled (31-32 Gb/s against 49-55 with 1024,
	# session 13). Busy-polling runs keep 256 (1024 and 8192 measured no faster there).
	[ "$sleep" -gt 0 ] && win=1024
	[ "$mtu" -gt 1500 ] && bs=",bsize=$JUMBO_BSIZE"
	rm -f "$work/memif.sock"
	# The memif server (b, the mrperf server's side) first: DPDK 22.11's client cannot probe
	# without it. The sending side (a) is the memif client, as memif_pingpong's blaster is in
	# the raw ceiling: a memif server's tx reads descriptors its client wrote (a cache miss
	# per frame), and with the roles the other way round WRITE made 10 %, READ 15 % less.
	for n in b a; do
		role=client ip=198.18.0.1 lc=$cpu_a
		[ $n = b ] && role=server ip=198.18.0.2 lc=$cpu_b
		ns="mr-$tag-m$n"
		ip netns add "$ns" 2>/dev/null
		# One engine lcore each, busy polling unless SLEEP; a window of win packets per QP.
		cat > "$work/$n.conf" <<CONF
[port]
eal_args = --vdev=net_memif0,role=$role,id=0,socket=$work/memif.sock,socket-abstract=no,rsize=12$bs
ipv4 = $ip
mtu = $mtu
tx_warm = ${BENCH_TX_WARM:-true}
[engine]
lcores = $lc
idle_sleep_us = 0
load_sleep_max_us = $sleep
[limits]
max_inflight = $win
# Room for the 1024-QP run in one session (the session quotas default to half the shard's).
max_qp = 2048
max_mr = 8192
[shm]
socket = $work/$n.sock
CONF
		rm -f "$work/$n.sock"
		ip netns exec "$ns" "$bdir/apps/metaroced/metaroced" -c "$work/$n.conf" -- \
			--file-prefix="${tag}d$n" --no-huge -m 256 > "$work/daemon-$n.log" 2>&1 &
		eval "d$n=$!"
		pids+=($!)
		mr_daemon_wait "$work/daemon-$n.log" "$work/$n.sock" $! || return 1
	done
	# The server's link comes up when the client connects, which the daemon follows at run
	# time; the first run waits for it (else its connection setup could meet a down port).
	for _ in $(seq 1 100); do
		"$bdir/apps/mrstat/mrstat" link --sock "$work/b.sock" 2>/dev/null |
			grep -q "state ACTIVE" && return 0
		sleep 0.1
	done
	echo "bench-perf: b's memif link did not come up" >&2
	return 1
}
mr_stop() {
	kill -TERM $db 2>/dev/null; wait $db 2>/dev/null
	kill -TERM $da 2>/dev/null; wait $da 2>/dev/null
	pids=()
}
# mr_run KEY TEST ARGS...: mrperf server on b, client on a; records the client's JSON and the
# engine threads' CPU share (both daemons) over the run. $mr_pin places the two apps: "cross"
# (each on the CPU of the other daemon's engine), "same" (each beside its own daemon's engine)
# or "" (left to the scheduler).
# With mr_embed=1 there are no daemons: each mrperf runs the engine in its own thread
# ($METAROCE_ENGINE, apps/metaroced/embed.c; configs e_a/e_b.conf pin it to CPU a / b), and the
# CPU share is that of the two mrperf processes (app and engine together).
# BENCH_PERF_RECORD=1: `perf record -a -g` over one metaroce client run, into KEY.perf.data.
# perf_rec_start KEY prints the recorder's PID (nothing when off); perf_rec_stop PID ends it.
perf_rec_start() {
	[ "${BENCH_PERF_RECORD:-0}" = 1 ] || return 0
	perf record -a -g -q -o "$work/$1.perf.data" > "$work/$1.perf.log" 2>&1 < /dev/null &
	echo $!
}
perf_rec_stop() {
	[ -n "$1" ] || return 0
	kill -INT "$1"
	# not our child when started in $(...): wait for it by its PID
	while kill -0 "$1" 2>/dev/null; do sleep 0.1; done
}
mr_pin= mr_embed=0
mr_run() {
	local key=$1 t=$2 srv rc t0 t1 s0 s1 n pa=() pb=() sa=(--sock "$work/a.sock") sb=(--sock "$work/b.sock")
	shift 2
	case $mr_pin in
	cross) pa=(taskset -c "$cpu_b") pb=(taskset -c "$cpu_a") ;;
	same) pa=(taskset -c "$cpu_a") pb=(taskset -c "$cpu_b") ;;
	esac
	if [ $mr_embed = 1 ]; then
		pa=(env METAROCE_ENGINE_MODULE="$bdir/apps/metaroced/libmetaroce-engine.so"
		    METAROCE_ENGINE="-c $work/e_a.conf -- --file-prefix=${tag}ea --no-huge -m 256")
		pb=(env METAROCE_ENGINE_MODULE="$bdir/apps/metaroced/libmetaroce-engine.so"
		    METAROCE_ENGINE="-c $work/e_b.conf -- --file-prefix=${tag}eb --no-huge -m 256")
		sa=() sb=()
		rm -f "$work/emb-memif.sock"
	fi
	[ -n "${BENCH_MR_RUNS:-}" ] && ! [[ $key =~ $BENCH_MR_RUNS ]] && return 0
	MR_PORT=$((MR_PORT + 1))
	for n in a b; do
		[ $mr_embed = 1 ] && break
		"$bdir/apps/mrstat/mrstat" port --reset --sock "$work/$n.sock" > /dev/null 2>&1
	done
	if [ $mr_embed = 1 ]; then
		{ TIMEFORMAT='%U %S'; time "${pb[@]}" timeout 120 "$bdir/apps/mrperf/mrperf" "$t" "$@" \
			-p $MR_PORT --report_gbits > "$work/$key-server.log" 2>&1; } \
			2> "$work/$key.stime" &
		mr_embed_run "$key" "$t" $! "$@"
		return
	fi
	"${pb[@]}" timeout 120 "$bdir/apps/mrperf/mrperf" "$t" "$@" -p $MR_PORT --report_gbits \
		"${sb[@]}" > "$work/$key-server.log" 2>&1 &
	srv=$!
	# Until the server listens (it opens the device first: 0.1-1 s).
	for _ in $(seq 1 50); do
		ss -Hltn "sport = :$MR_PORT" 2>/dev/null | grep -q . && break
		sleep 0.1
	done
	# The CPU window spans both snapshots (each reads every thread's stat: tens of ms), so
	# that a short run cannot show a thread above 100 %.
	t0=$(date +%s.%N)
	s0=$(sys_snap)
	cpu_snap $da $db > "$work/s1"
	local prec
	prec=$(perf_rec_start "$key")
	"${pa[@]}" timeout 120 "$bdir/apps/mrperf/mrperf" "$t" "$@" -p $MR_PORT --report_gbits \
		--sock "$work/a.sock" --json "$work/$key.json" 127.0.0.1 > "$work/$key-client.log" 2>&1
	rc=$?
	perf_rec_stop "$prec"
	cpu_snap $da $db > "$work/s2"
	s1=$(sys_snap)
	t1=$(date +%s.%N)
	wait $srv 2>/dev/null
	local sysc
	sysc=$(sys_cores "$s0" "$s1" "$(echo "$t1 - $t0" | bc -l)")
	put "mr.${key}_sys_cores" "$sysc"
	# What the run lost and recovered, per daemon (a drop anywhere costs plain RC a timeout or
	# a go-back-N resend: the first thing to read when a figure is low).
	for n in a b; do
		"$bdir/apps/mrstat/mrstat" port -z --sock "$work/$n.sock" > "$work/$key-stats-$n.txt" 2>&1
		awk -v n=$n '{ k = $1; sub(/:$/, "", k) }
			k ~ /^(retransmitted_pkts|local_ack_timeout_err|out_of_sequence|packet_seq_err|tx_drop_buffer|tx_drop_nombuf|tx_drop_mbuf_alloc|rx_missed_errors|drop_ring_full|engine_max_gap_ns)$/ {
			s = s " " k "=" $2 } END { if (s != "") print "    daemon " n ":" s }' \
			"$work/$key-stats-$n.txt"
	done
	if [ $rc != 0 ] || [ ! -s "$work/$key.json" ]; then
		note "mr_$key" "mrperf $t $* failed (exit $rc): $(tail -1 "$work/$key-client.log")"
		return 1
	fi
	sh=$(cpu_share "$work/s1" "$work/s2" "$(echo "$t1 - $t0" | bc -l)" "metaroced")
	mr_record "$key" "$(echo "$sh" | tail -1)" "engine cores" "$(echo "$sh" | head -1)machine $sysc cores"
}

# mr_record KEY CORES LABEL DETAIL: the mrperf client's JSON ($work/KEY.json) into the results,
# with the CPU it took (CORES, printed as "LABEL CORES (DETAIL)").
mr_record() {
	python3 - "$work/$1.json" "$res" "$1" "$2" "$3" "$4" <<'PY'
import json, sys
j, res, key, cores, label, detail = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6].strip()
r = j["results"][-1]
with open(res, "a") as f:
    if "BW_average" in r:
        f.write("mr.%s_gbps %s\nmr.%s_mpps %s\n" % (key, r["BW_average"], key, r["MsgRate"]))
        line = "%.2f Gb/s, %.4f Mmsg/s" % (r["BW_average"], r["MsgRate"])
    else:
        f.write("mr.%s_p50_us %s\nmr.%s_p99_us %s\nmr.%s_p999_us %s\n" %
                (key, r["t_typical"], key, r["percentile_99"], key, r["percentile_99_9"]))
        line = "one-way (RTT/2, as perftest) p50 %.2f us, p99 %.2f us, p99.9 %.2f us" % (r["t_typical"], r["percentile_99"], r["percentile_99_9"])
    f.write("mr.%s_cores %s\n" % (key, cores))
    f.write('mr.%s_cpu "%s"\n' % (key, detail))
print("  %-22s %s; %s %s (%s)" % (key, line, label, cores, detail))
PY
}

mr_embed_conf() { # [nowarm]: e_a.conf (memif client, CPU a) and e_b.conf (server, CPU b),
	# IB MTU 1024; nowarm: [port] tx_warm = false (the transmit ring not warmed, as before
	# session 26)
	local n role ip lc warm=${BENCH_TX_WARM:-true}
	[ "${1:-}" = nowarm ] && warm=false
	for n in a b; do
		role=client ip=198.18.0.1 lc=$cpu_a
		[ $n = b ] && role=server ip=198.18.0.2 lc=$cpu_b
		cat > "$work/e_$n.conf" <<CONF
[port]
eal_args = --vdev=net_memif0,role=$role,id=0,socket=$work/emb-memif.sock,socket-abstract=no,rsize=12
ipv4 = $ip
mtu = 1500
tx_warm = $warm
[engine]
lcores = $lc
idle_sleep_us = 0
[limits]
max_inflight = 256
[shm]
socket = $work/e_$n.sock
CONF
	done
}
# mr_embed_run KEY TEST SERVER_JOB ARGS... (from mr_run): the client (memif client) once the
# server's engine is up (its memif socket exists; the server waits for the link). CPU: both
# processes' user+system time (bash's time) over the client's wall time, start-up included.
mr_embed_run() {
	local key=$1 t=$2 job=$3 rc t0 t1
	shift 3
	for _ in $(seq 1 100); do [ -S "$work/emb-memif.sock" ] && break; sleep 0.05; done
	local prec
	prec=$(perf_rec_start "$key")
	t0=$(date +%s.%N)
	# In a subshell: bash's time reports its children's rusage, and in this shell that
	# included the server's whenever the server ended (and was reaped) before the client
	# ("client 197 %" on a client thread at 98 %).
	( TIMEFORMAT='%U %S'; time "${pa[@]}" timeout 120 "$bdir/apps/mrperf/mrperf" "$t" "$@" \
		-p $MR_PORT --report_gbits --json "$work/$key.json" 127.0.0.1 \
		> "$work/$key-client.log" 2>&1; echo $? > "$work/$key.rc" ) 2> "$work/$key.time"
	t1=$(date +%s.%N)
	perf_rec_stop "$prec"
	wait "$job" 2>/dev/null
	rc=$(cat "$work/$key.rc")
	if [ "$rc" != 0 ] || [ ! -s "$work/$key.json" ]; then
		note "mr_$key" "embedded mrperf $t $* failed (exit $rc): $(grep -v '^metaroced' "$work/$key-client.log" | tail -1)"
		return 1
	fi
	# user+system seconds of each process ("U S" from bash's time) over the client's wall time
	set -- $(tail -1 "$work/$key.time") $(tail -1 "$work/$key.stime")
	set -- "$(echo "($1 + $2) / ($t1 - $t0)" | bc -l)" "$(echo "(${3:-0} + ${4:-0}) / ($t1 - $t0)" | bc -l)"
	mr_record "$key" "$(printf '%.3f' "$(echo "$1 + $2" | bc -l)")" "app+engine cores" \
		"$(printf 'client %.0f%%, server %.0f%% of the client run, start-up included' \
			"$(echo "$1 * 100" | bc -l)" "$(echo "$2 * 100" | bc -l)")"
}

# mr_paired KEY BASE TEST ARGS...: mr_run between two measurements of the ratio's baseline
# (mr_baseline), keys memif.*_KEY_pre and _post (and tcpj_KEY_pre/_post). This machine's speed
# flips by up to 2x within seconds (memif's 82-byte rate: 11.6 Mframes/s right before one rate
# run, 32.6 right after it), so a ratio against a baseline measured minutes earlier in section
# 2 or 4 moved with it; the ratios use the mean of these two instead (the section-2/4 figures
# stay in the table, and in *_unpaired).
#
# With ROUNDS > 1 the run is repeated as KEY_r2, KEY_r3, ..., each followed by a baseline
# (_KEY_rR_post): round R lies between the baseline after round R - 1 and its own, and each
# round's ratio is formed within it (the median is the headline).
mr_paired() {
	local key=$1 base=$2 r
	shift 2
	[ -n "${BENCH_MR_RUNS:-}" ] && ! [[ $key =~ $BENCH_MR_RUNS ]] && return 0
	mr_baseline "$key" "$base" pre
	mr_run "$key" "$@"
	mr_baseline "$key" "$base" post
	for r in $(seq 2 "$ROUNDS"); do
		echo "   (round $r of $ROUNDS)"
		mr_run "${key}_r$r" "$@"
		mr_baseline "${key}_r$r" "$base" post
	done
}
# mr_baseline KEY BASE pre|post: BASE is a frame size for memif_rate or "pp" for the 82-byte
# ping-pong; beside the 4154-byte rate also kernel TCP at its MTU (write_vs_tcp,
# write_per_core_vs_tcp). The daemons are stopped (SIGSTOP) meanwhile, so that the baseline's
# pollers have the CPUs.
mr_baseline() {
	local key=$1 base=$2 when=$3 why=
	[ $mr_embed = 0 ] && kill -STOP $da $db &&
		why="; the daemons stopped meanwhile, which their engine_max_gap_ns shows"
	echo "   (raw baseline for $key, $([ $when = pre ] && echo before || echo after) it$why)"
	cacheline "${key}_$when"
	if [ "$base" = pp ]; then
		memif_pingpong 82 "_${key}_$when"
		memif_pingpong 82 "_${key}_$when" warm
	else
		memif_rate "$base" "_${key}_$when"
	fi
	[ "$base" = 4154 ] && tcp_mtu "$JUMBO_MTU" "tcpj_${key}_$when"
	[ $mr_embed = 0 ] && kill -CONT $da $db
}

mr_bulk() { # KEY-SUFFIX: WRITE at every BW_SIZES size and READ 64 KiB, apps asleep on events
	local s
	for s in $BW_SIZES; do
		# The headline goodput ratio's run (write_vs_memif) between its baselines.
		if [ "$s$1" = 65536_mtu4096 ]; then
			mr_paired "write_bw_$s$1" 4154 write_bw -s "$s" -D "$T" -e
			continue
		fi
		mr_run "write_bw_$s$1" write_bw -s "$s" -D "$T" -e
	done
	mr_run "read_bw_65536$1" read_bw -s 65536 -D "$T" -e
}
mr_section() {
	# Bulk transfers at the largest IB MTU the port allows first (4096: mtu JUMBO_MTU), keys
	# *_mtu4096; then everything at IB MTU 1024 (mtu 1500, the frames of the earlier sessions).
	echo "== metaroce over net_memif (two metaroced, engine lcores $cpu_a/$cpu_b, IB MTU 4096) =="
	# The engines sleep under light load (load_sleep_max_us = BULK_SLEEP_US): the receiving
	# one keeps up with its sender and would otherwise poll away the rest of its core, which
	# write_per_core_vs_tcp counts. Then the 64 KiB WRITE once more with both engines busy
	# polling (keys *_busy), for the comparison.
	if mr_start "$JUMBO_MTU" "$BULK_SLEEP_US"; then
		echo "   (engines: load_sleep_max_us = $BULK_SLEEP_US)"
		mr_pin=cross
		mr_bulk _mtu4096
		mr_pin=
	else
		note mr4096 "daemons did not start: $(tail -2 "$work"/daemon-*.log | tr '\n' ' ')"
	fi
	mr_stop
	if mr_start "$JUMBO_MTU" 0; then
		echo "   (engines: busy polling)"
		mr_pin=cross
		mr_run write_bw_65536_mtu4096_busy write_bw -s 65536 -D "$T" -e
		mr_pin=
	else
		note mr4096_busy "daemons did not start: $(tail -2 "$work"/daemon-*.log | tr '\n' ' ')"
	fi
	mr_stop
	echo "== metaroce over net_memif (two metaroced, engine lcores $cpu_a/$cpu_b, IB MTU 1024) =="
	if ! mr_start; then
		note mr "daemons did not start: $(tail -2 "$work"/daemon-*.log | tr '\n' ' ')"
		mr_stop
		return
	fi
	# -e: the apps sleep on their CQ's completion channel instead of polling it, so that on a
	# 2-vCPU machine the two engines keep their cores (two polling apps beside two polling
	# engines share 2 CPUs by the scheduler's time slices: 6 ms latencies, 1/3 the goodput).
	# The message-rate runs poll with --yield instead (each empty poll after the second
	# yields the CPU to the engine beside it): 15-20 % more messages/s than -e here.
	# Apps pinned "cross": the posting app and the engine serving it on different CPUs. Left to
	# the scheduler, they often shared one (2026-12-02, same run: 8 B rate at 16 QPs 4.12 ->
	# 4.92 M/s, write_lat p50 3.2 -> 2.5 us; bandwidth with -e unchanged).
	mr_pin=cross
	mr_bulk ""
	for q in 1 16 64; do
		[ $quick = 1 ] && [ $q = 64 ] && continue
		if [ $q = 16 ]; then
			mr_paired "write_rate_8_q$q" 82 write_bw -s 8 -q $q -t 128 -D "$T" --yield
			continue
		fi
		mr_run "write_rate_8_q$q" write_bw -s 8 -q $q -t 128 -D "$T" --yield
	done
	# QP scaling: 8-byte WRITEs over 1024 QPs, 16 outstanding per QP (1024 x 128 would exceed
	# the session's WR budget), receive queues of 1 (WRITE only), against the best 1-QP rate
	# above (128 outstanding; at 16 outstanding one QP makes 0.14 M/s, which would flatter).
	mr_run write_rate_8_s1024 write_bw -s 8 -q 1024 -t 16 -r 1 -D "$T" --yield
	# qp_scaling's further rounds: the 1-QP and the 1024-QP rate again, in turn.
	for r in $(seq 2 "$ROUNDS"); do
		mr_run "write_rate_8_q1_r$r" write_bw -s 8 -q 1 -t 128 -D "$T" --yield
		mr_run "write_rate_8_s1024_r$r" write_bw -s 8 -q 1024 -t 16 -r 1 -D "$T" --yield
	done
	# write_lat has no event mode (its receiver polls the buffer's last byte, as perftest's):
	# four pollers on two CPUs. --yield: the apps' empty polls yield the CPU (the engines do
	# the same while idle, [engine] idle_yield), else every hand-over waits for the end of a
	# scheduler time slice (p50 5-10 ms). send_lat -e sleeps.
	# -u 18 (1 s ACK timeout): a starved engine otherwise ends it in RETRY_EXC_ERR.
	mr_run write_lat_8 write_lat -s 8 -n "$LAT_N" -u 18 --yield
	# An app asleep on its completion channel wakes soonest beside the engine that signals it
	# (same run: p50 7.6 us unpinned, 4.7 "same", 30 "cross").
	mr_pin=same
	mr_run send_lat_8 send_lat -s 8 -n "$LAT_N" -e
	mr_pin=
	mr_stop
	# Run to completion: no daemons, the engine inside each mrperf (METAROCE_ENGINE), one
	# polling thread per side as memif_pingpong has: the latency ratio's figure (a hand-over
	# between an app and an engine sharing a CPU is a context switch, microseconds here).
	echo "== metaroce embedded in the apps (\$METAROCE_ENGINE: app and engine one thread per side, CPUs $cpu_a/$cpu_b, IB MTU 1024) =="
	mr_embed_conf
	mr_embed=1
	# 20000 round trips in quick runs too: a fresh memif connection's first pass over its
	# 4096 ring slots faults in the region's 4 KiB pages (two frames per round trip, a WRITE
	# and its ACK: 2048 slow round trips of ~25 us); the daemons above had warmed theirs.
	mr_paired write_lat_8_embed pp write_lat -s 8 -n 20000
	# The same without warming memif's transmit ring (full runs): what it buys, in this run.
	if [ $quick = 0 ]; then
		mr_embed_conf nowarm
		mr_run write_lat_8_embed_nowarm write_lat -s 8 -n 20000
		mr_embed_conf
	fi
	mr_run send_lat_8_embed send_lat -s 8 -n 20000
	mr_paired write_rate_8_q16_embed 82 write_bw -s 8 -q 16 -t 128 -D "$T"
	mr_embed=0
}

for sec in icrc memif tcp mr; do
	case ",$only," in *",$sec,"*) "${sec}_section" ;; esac
done
put machine_load1_end "$(cut -d' ' -f1 /proc/loadavg)"

# ---- ratios, table, JSON ----
python3 - "$res" "$json_out" "$quick" <<'PY'
import json, statistics, sys
res, out, quick = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
v, notes = {}, {}
for line in open(res):
    k, _, val = line.rstrip("\n").partition(" ")
    if k.startswith("note_"):
        notes[k[5:]] = val.strip('"')
        continue
    try:
        v[k] = float(val)
    except ValueError:
        v[k] = val.strip('"')
def g(k):
    x = v.get(k)
    return x if isinstance(x, float) else None
def ratio(a, b):
    return round(a / b, 3) if a is not None and b else None
# A baseline measured right before and right after a run (mr_paired; KEY is the figure's key
# with %s where _RUN_pre / _RUN_post go): their mean, or the one measured; else the section's
# own figure (%s empty). pair=False: always the section's figure (the *_unpaired ratios).
# Round r > 1 (full runs: mr_paired's rounds) of run RUN is RUN_rR, measured between the
# baseline after round r - 1 and its own (_RUN_rR_post); no fallback to the section's figure.
def rk(run, r):
    return run if r == 1 else "%s_r%d" % (run, r)
def paired(key, run, pair=True, r=1):
    if pair and r > 1:
        xs = [x for x in (g(key % ("_%s_post" % rk(run, r - 1))),
                          g(key % ("_%s_post" % rk(run, r)))) if x]
        return sum(xs) / len(xs) if xs else None
    xs = [x for x in (g(key % ("_%s_pre" % run)), g(key % ("_%s_post" % run))) if x] if pair else []
    return sum(xs) / len(xs) if xs else g(key % "")
why = {}
# ICRC: the median over the payload-bearing frame sizes (1 KiB .. 4 KiB) of the per-size ratios.
big = [1024, 1518, 2048, 4096]
path = v.get("icrc.icrc_path", "icrc_vpclmul")
def icrc_ratio(base, num=path):
    rs = [g("icrc.%s_%d_Bps" % (num, s)) / g("icrc.%s_%d_Bps" % (base, s)) for s in big
          if g("icrc.%s_%d_Bps" % (num, s)) and g("icrc.%s_%d_Bps" % (base, s))]
    return round(statistics.median(rs), 3) if rs else None
top = {
    "icrc_vs_memcpy": icrc_ratio("memcpy"),
    "icrc_vs_rte_net_crc": icrc_ratio("rte_net_crc_avx512"),
    "icrc_vs_rte_net_crc_default": icrc_ratio("rte_net_crc_default"),
    "icrc_vs_table": icrc_ratio("icrc_table"),
    # The VPCLMULQDQ fold loop alone (bench_icrc's "clmul fold bound", no reduction, not a
    # CRC): against memcpy, what the loop of a CRC by folding could show on this core; the
    # ICRC against it, how much of that it reaches (the rest is its cost per call).
    "icrc_vs_fold_bound": icrc_ratio("clmul_fold_bound"),
    "fold_bound_vs_memcpy": icrc_ratio("memcpy", "clmul_fold_bound"),
    # The multiplier's bound for a whole CRC (bench_icrc's "clmul bound": every 64 bytes
    # multiplied once, two VPCLMULQDQ, as any CLMUL CRC must; no reduction): against memcpy,
    # the most icrc_vs_memcpy could read on this core; the ICRC against it, the share reached.
    "icrc_vs_clmul_bound": icrc_ratio("clmul_bound"),
    "clmul_bound_vs_memcpy": icrc_ratio("memcpy", "clmul_bound"),
}
if top["icrc_vs_rte_net_crc"] is None:
    why["icrc_vs_rte_net_crc"] = "rte_net_crc not measured (EAL did not start)"
# metaroce vs raw memif and TCP.
# The headline goodput ratios are at the largest IB MTU (4096, port mtu 4200) against memif's
# 4154-byte frames and TCP at the same MTU; the *_1024 twins at IB MTU 1024 / mtu 1500.
def bw_ratios(sfx, wkey, frame, tcpkey, pair=True, r=1, into=top):
    w, wc = g("mr.%s_gbps" % rk(wkey, r)), g("mr.%s_cores" % rk(wkey, r))
    tcp = paired(tcpkey + "%s.bps", wkey, pair, r)
    tcpc = paired(tcpkey + "%s.cores", wkey, pair, r)
    into["write_vs_memif" + sfx] = ratio(w * 1e9 / 8 if w else None,
                                         paired("memif.Bps_%d%%s" % frame, wkey, pair, r))
    into["write_vs_tcp" + sfx] = ratio(w * 1e9 if w else None, tcp)
    into["write_per_core_vs_tcp" + sfx] = (ratio(w * 1e9 / wc, tcp / tcpc)
                                           if w and wc and tcp and tcpc else None)
bw_ratios("_busy", "write_bw_65536_mtu4096_busy", 4154, "tcpj")
bw_ratios("_1024", "write_bw_65536", 1082, "tcp")
r16 = g("mr.write_rate_8_q16_mpps")
# 8 B WRITEs at 16 QPs against memif's 82-byte frames; rate_per_core_vs_memif the same per
# engine core (the must-show's wording): messages/s per core the two engines used against
# frames/s per core the two memif pollers used. The apps' CPU is not in it (app a shares CPU b
# with engine b; the machine's total is printed beside each run).
def rate_ratios(r, into):
    x, c = g("mr.%s_mpps" % rk("write_rate_8_q16", r)), g("mr.%s_cores" % rk("write_rate_8_q16", r))
    mp = paired("memif.pps_82%s", "write_rate_8_q16", r=r)
    mc = paired("memif.cores_82%s", "write_rate_8_q16", r=r)
    into["rate_vs_memif"] = ratio(x * 1e6 if x else None, mp)
    into["rate_per_core_vs_memif"] = ratio(x * 1e6 / c, mp / mc) if x and c and mc and mp else None
# perftest's (and mrperf's) ping-pong latency is half a round trip (RTT / 2 per sample):
# doubled, it is compared with memif_pingpong's full round trip.
def rtt(k):
    x = g(k)
    return 2 * x if x is not None else None
# latency_vs_memif_warm: the same against a ping-pong whose two ends warm their transmit ring
# as metaroced does (drivers/dpdk/memif_warm.h): the ratio once the PMD gets that help too.
def lat_ratios(r, into):
    x = rtt("mr.%s_p50_us" % rk("write_lat_8_embed", r))
    into["latency_vs_memif"] = ratio(x, paired("memif.rtt_p50_us%s", "write_lat_8_embed", r=r))
    into["latency_vs_memif_warm"] = ratio(x, paired("memif.rtt_warm_p50_us%s", "write_lat_8_embed",
                                                    r=r))
# Full runs: the same engine with [port] tx_warm = false, right after (session 26's A/B).
top["latency_nowarm_vs_memif"] = ratio(rtt("mr.write_lat_8_embed_nowarm_p50_us"),
                                       paired("memif.rtt_p50_us%s", "write_lat_8_embed"))
if top["latency_nowarm_vs_memif"] is None and quick:
    why["latency_nowarm_vs_memif"] = "not run with --quick"
top["latency_send_vs_memif"] = ratio(rtt("mr.send_lat_8_embed_p50_us"), g("memif.rtt_p50_us"))
top["latency_daemon_vs_memif"] = ratio(rtt("mr.write_lat_8_p50_us"), g("memif.rtt_p50_us"))
def embed_rate_ratios(r, into):
    x = g("mr.%s_mpps" % rk("write_rate_8_q16_embed", r))
    into["rate_embed_vs_memif"] = ratio(x * 1e6 if x else None,
                                        paired("memif.pps_82%s", "write_rate_8_q16_embed", r=r))
top["latency_send_events_vs_memif"] = ratio(rtt("mr.send_lat_8_p50_us"), g("memif.rtt_p50_us"))
# The same against the section-2/4 baselines, measured minutes before (as until 2026-12-04).
bw_ratios("_unpaired", "write_bw_65536_mtu4096", 4154, "tcpj", pair=False)
top["rate_vs_memif_unpaired"] = ratio(r16 * 1e6 if r16 else None, g("memif.pps_82"))
top["latency_vs_memif_unpaired"] = ratio(rtt("mr.write_lat_8_embed_p50_us"), g("memif.rtt_p50_us"))
r1, r64 = g("mr.write_rate_8_q1_mpps"), g("mr.write_rate_8_q64_mpps")
# Rounds (full runs; bench.rounds): every paired headline run was measured again between
# fresh baselines, and the 1- and 1024-QP rates once more each, in turn. Each round's ratios
# are formed within the round; the headline is their median (a flip of the host's state then
# moves one round, not the figure), and every round is in "rounds".
def scaling_ratios(r, into):
    into["qp_scaling"] = ratio(g("mr.%s_mpps" % rk("write_rate_8_s1024", r)),
                               g("mr.%s_mpps" % rk("write_rate_8_q1", r)))
nrounds = int(g("bench.rounds") or 1)
per_round = []
for r in range(1, nrounds + 1):
    d = {}
    bw_ratios("", "write_bw_65536_mtu4096", 4154, "tcpj", r=r, into=d)
    rate_ratios(r, d)
    lat_ratios(r, d)
    embed_rate_ratios(r, d)
    scaling_ratios(r, d)
    per_round.append(d)
top_rounds = {}
for k in per_round[0]:
    xs = [d[k] for d in per_round if d[k] is not None]
    top[k] = round(statistics.median(xs), 3) if xs else None
    if nrounds > 1:
        top_rounds[k] = [d[k] for d in per_round]
if top["qp_scaling"] is None:
    why["qp_scaling"] = "the 1-QP or the 1024-QP (-t 16 -r 1) run failed (see notes)"
top["qp_scaling_64"] = ratio(r64, r1)
if r64 is None or r1 is None:
    why["qp_scaling_64"] = ("not run with --quick" if quick and r1 is not None else
                           "a 1- or 64-QP run failed (see notes)")
for k, src in (("write_vs_memif", "write_bw/memif"), ("write_vs_tcp", "write_bw/iperf3"),
               ("write_per_core_vs_tcp", "write_bw/iperf3 CPU"),
               ("write_vs_memif_1024", "write_bw/memif"), ("write_vs_tcp_1024", "write_bw/iperf3"),
               ("write_per_core_vs_tcp_1024", "write_bw/iperf3 CPU"), ("rate_vs_memif", "rate/memif"),
               ("rate_per_core_vs_memif", "rate per engine core/memif per poller core"),
               ("latency_vs_memif", "embedded write_lat/memif ping-pong"),
               ("latency_vs_memif_warm", "embedded write_lat/warmed memif ping-pong"),
               ("latency_nowarm_vs_memif", "embedded write_lat, tx_warm off/memif ping-pong"),
               ("latency_send_vs_memif", "embedded send_lat/memif ping-pong"),
               ("latency_daemon_vs_memif", "write_lat/memif ping-pong"),
               ("rate_embed_vs_memif", "embedded rate/memif"),
               ("latency_send_events_vs_memif", "send_lat -e/memif ping-pong"),
               ("write_vs_memif_unpaired", "write_bw/memif"), ("rate_vs_memif_unpaired", "rate/memif"),
               ("write_per_core_vs_tcp_unpaired", "write_bw/iperf3 CPU"),
               ("write_vs_tcp_unpaired", "write_bw/iperf3"),
               ("latency_vs_memif_unpaired", "embedded write_lat/memif ping-pong")):
    if top[k] is None and k not in why:
        why[k] = "an input was not measured (%s): see notes" % src
out_j = dict(top)
out_j["rounds"] = top_rounds
out_j["why_null"] = {k: w_ for k, w_ in why.items() if out_j.get(k) is None}
out_j["figures"] = v
out_j["notes"] = notes
out_j["quick"] = quick
out_j["definitions"] = {
    "rounds": "full runs (bench.rounds, 3; BENCH_ROUNDS): write_vs_memif, write_vs_tcp, write_per_core_vs_tcp, rate_vs_memif, rate_per_core_vs_memif, latency_vs_memif(_warm), rate_embed_vs_memif and qp_scaling are the median of that many rounds, each run between its own baselines (round r's before is round r-1's after) and the 1- and 1024-QP rates measured in turn; each round's value is listed here (since session 27; until then one round)",
    "icrc_*": "median over 1024/1518/2048/4096-byte frames of ICRC bytes/s / baseline bytes/s, one core, CPU time",
    "clmul_bound_vs_memcpy": "the same median of the multiplier's bound for a whole CRC (every 64 bytes, the padded last block too, multiplied once by two VPCLMULQDQ into independent accumulators, no reduction: the products any carry-less-multiply CRC makes) / memcpy's: the most icrc_vs_memcpy could read on this core (session 27)",
    "icrc_vs_clmul_bound": "the same median of ICRC bytes/s / that bound's: the share of the multiplier's peak the ICRC reaches (the rest is its per-call head and reduction)",
    "fold_bound_vs_memcpy": "the same median of the bare VPCLMULQDQ fold loop's bytes/s (four 512-bit accumulators, two products per 64 bytes, no reduction: not a CRC) / memcpy's: what a CRC by folding could reach here before its per-call reduction (session 24)",
    "write_vs_memif": "64 KiB WRITE goodput at IB MTU 4096 (port mtu 4200, memif bsize 4352) / raw memif bytes/s at 4154-byte frames (memif_pingpong blast -> sink), the mean of one measurement right before and one right after the WRITE run (daemons stopped meanwhile; since 2026-12-04)",
    "*_unpaired": "write_vs_memif, write_per_core_vs_tcp, rate_vs_memif and latency_vs_memif against the raw memif and kernel TCP figures of sections 2 and 4, measured minutes before (this machine's speed drifts: memif's own 82-byte rate ranged 11.5-22.9 Mframes/s over one evening)",
    "write_vs_tcp": "64 KiB WRITE goodput at IB MTU 4096 / one iperf3 stream goodput (veth, MTU 4200)",
    "write_per_core_vs_tcp": "(WRITE goodput at IB MTU 4096 / engine cores used, both daemons) / (iperf3 goodput at MTU 4200 / CPU cores used, both ends: the mean of one iperf3 run right before and one right after the WRITE run, daemons stopped meanwhile, since 2026-12-04); the engines sleep under light load ([engine] load_sleep_max_us = 100; 50 on 2026-12-04 before 04:15 UTC) with a window of 1024 packets per QP (256 before session 13)",
    "host.cacheline_ns_*": "ns one cache line takes from CPU a to CPU b and back, halved (tests/dpdk/cacheline_pingpong, median of 5 x 100k), at the start of section 2 and beside every paired baseline (the daemons stopped): a low figure means the two vCPUs share a cache, the host's fast state (session 13)",
    "write_*_busy": "the same 64 KiB WRITE at IB MTU 4096 with both engines busy polling (load_sleep_max_us = 0)",
    "write_*_1024": "the same at IB MTU 1024: port mtu 1500, memif 1082-byte frames, iperf3 at MTU 1500",
    "rate_vs_memif": "8 B WRITE messages/s at 16 QPs / raw memif frames/s at 82 B, the mean of one measurement right before and one right after the rate run (as write_vs_memif)",
    "rate_per_core_vs_memif": "(8 B WRITE messages/s at 16 QPs / engine cores used, both daemons) / (raw memif frames/s at 82 B / cores its two pollers used); the apps' CPU is not counted (the machine's total is printed with each run)",
    "latency_vs_memif": "8 B write ping-pong round trip p50 (2 x perftest's one-way t_typical), metaroce run to completion (engine embedded in each mrperf, $METAROCE_ENGINE: one polling thread per side, as memif_pingpong) / raw memif 82-byte ping-pong RTT p50, the mean of one ping-pong right before and one right after (lower is better; until 2026-12-03 the daemon figure below)",
    "latency_vs_memif_warm": "the same round trip / the 82-byte ping-pong with both ends warming their memif transmit ring when a frame arrives, as metaroced does since session 26 ([port] tx_warm, drivers/dpdk/memif_warm.h; memif_pingpong with MEMIF_PP_WARM=1, measured right before and after as the raw one): the ratio against a PMD given the same help",
    "latency_nowarm_vs_memif": "full runs: the embedded write_lat again with [port] tx_warm = false (the memif transmit ring not warmed, as until session 26), over the same baseline as latency_vs_memif",
    "latency_send_vs_memif": "the same for 8 B send ping-pong (embedded, polling)",
    "latency_daemon_vs_memif": "8 B write ping-pong round trip p50 through two metaroced daemons (apps poll with --yield: 4 pollers on the machine's 2 CPUs) / raw memif ping-pong RTT p50",
    "rate_embed_vs_memif": "8 B WRITE messages/s at 16 QPs, engine embedded in each mrperf (one thread per side posts, polls and runs the engine) / raw memif frames/s at 82 B, measured right before and after it (since session 25)",
    "latency_send_events_vs_memif": "8 B send ping-pong round trip p50 (2 x t_typical) with -e (apps sleep on CQ events) / raw memif 82-byte ping-pong RTT p50",
    "metaroce runs": "bandwidth and send_lat: mrperf -e (apps sleep on completion events); message rates and write_lat: --yield (apps poll, yielding the CPU after 2 empty polls: 15-20 % more messages/s than -e here)",
    "qp_scaling": "8 B WRITE messages/s at 1024 QPs (16 outstanding each) / at 1 QP (128 outstanding)",
}
print()
print("%-26s %s" % ("ratio", "value"))
for k in ("icrc_vs_memcpy", "icrc_vs_rte_net_crc", "icrc_vs_rte_net_crc_default", "icrc_vs_table",
          "icrc_vs_fold_bound", "fold_bound_vs_memcpy", "icrc_vs_clmul_bound",
          "clmul_bound_vs_memcpy", "write_vs_memif", "write_vs_tcp", "write_per_core_vs_tcp", "write_vs_memif_busy",
          "write_vs_tcp_busy", "write_per_core_vs_tcp_busy", "write_vs_memif_1024",
          "write_vs_tcp_1024", "write_per_core_vs_tcp_1024", "rate_vs_memif",
          "rate_per_core_vs_memif", "rate_embed_vs_memif", "latency_vs_memif", "latency_vs_memif_warm",
          "latency_nowarm_vs_memif", "latency_send_vs_memif",
          "latency_daemon_vs_memif", "latency_send_events_vs_memif", "write_vs_memif_unpaired",
          "write_vs_tcp_unpaired", "write_per_core_vs_tcp_unpaired",
          "rate_vs_memif_unpaired", "latency_vs_memif_unpaired", "qp_scaling", "qp_scaling_64"):
    print("%-26s %s%s%s" % (k, top[k], "" if top[k] is not None else "   (" + why.get(k, "?") + ")",
                            "" if k not in top_rounds else
                            "   (median of rounds: %s)" % " ".join(str(x) for x in top_rounds[k])))
for k, n in notes.items():
    print("note %s: %s" % (k, n))
if out:
    with open(out, "w") as f:
        json.dump(out_j, f, indent=1, sort_keys=True)
        f.write("\n")
    print("JSON: %s" % out)
PY
