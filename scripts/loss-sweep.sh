#!/bin/bash
# Loss sweep and incast experiments for plain RoCE (go-back-N) and MetaRoCE, in the simulator
# (modelled 100 Gb/s links, ~10 us RTT, 4 KB MTU, 1 MiB messages, every byte verified).
# Writes DIR/runs.jsonl (one JSON record per run), DIR/results.{json,csv}, DIR/incast.{json,csv},
# DIR/spray.json and DIR/*.png. See scripts/sweep/README.md (columns, the real-mode hook).
#
# usage: scripts/loss-sweep.sh --out DIR [--build BUILD_DIR] [--count N] [--paths N]
#                              [--quick] [--no-incast] [--no-plots]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out="" build="${MR_BUILD:-$root/build}" count=16 paths=8 incast=1 plots=1 quick=0
while [ $# -gt 0 ]; do
	case "$1" in
	--out) out=$2; shift 2 ;;
	--build) build=$2; shift 2 ;;
	--count) count=$2; shift 2 ;;
	--paths) paths=$2; shift 2 ;;
	--quick) quick=1; count=4; shift ;;
	--no-incast) incast=0; shift ;;
	--no-plots) plots=0; shift ;;
	-h|--help) sed -n '2,9p' "$0"; exit 0 ;;
	*) echo "loss-sweep: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
[ -n "$out" ] || { echo "loss-sweep: --out DIR is required" >&2; exit 2; }
mrsim="$build/apps/mrsim/mrsim"
[ -x "$mrsim" ] || { echo "loss-sweep: $mrsim not built (ninja -C $build apps/mrsim/mrsim)" >&2; exit 2; }
mkdir -p "$out/raw"
runs="$out/runs.jsonl"
: >"$runs"

# One simulated run: EXPERIMENT NAME, then mrsim fabric arguments. Appends its JSON record
# (tagged with mode and experiment) to runs.jsonl; a run that fails still leaves a record.
run() {
	local exp=$1 name=$2
	shift 2
	local raw="$out/raw/$name.json"
	rm -f "$raw"
	if ! "$mrsim" --fabric 1 --json "$raw" "$@" >"$out/raw/$name.txt" 2>&1; then
		echo "  $name: not verified (see raw/$name.txt)" >&2
	fi
	if [ -s "$raw" ]; then
		sed "s/^{/{\"mode\":\"sim\",\"experiment\":\"$exp\",\"name\":\"$name\",/" "$raw" >>"$runs"
	else
		printf '{"mode":"sim","experiment":"%s","name":"%s","error":"%s"}\n' "$exp" "$name" \
			"$(tail -n1 "$out/raw/$name.txt" | tr -d '"\\')" >>"$runs"
	fi
}

# MetaRoCE is used only when the transport accepts MR_QP_TRANSPORT=METAROCE.
transports="roce"
if "$mrsim" --fabric 1 --transport metaroce --size 65536 --count 1 >/dev/null 2>&1; then
	transports="roce metaroce"
else
	echo "loss-sweep: MetaRoCE not available in this build: roce only" >&2
fi

common=(--size 1M --count "$count" --mtu 4096 --rate-gbps 100 --fabric-paths "$paths"
	--depth 4 --seed 7)
for t in $transports; do
	for p in 0 0.001 0.01 0.02 0.05; do
		echo "sweep: $t random loss $p" >&2
		run loss "loss-$t-random-$p" --transport "$t" --loss "$p" "${common[@]}"
	done
	echo "sweep: $t bursty loss 0.01 (mean burst 4)" >&2
	run loss "loss-$t-bursty-0.01" --transport "$t" --loss 0.01 --burst 4 "${common[@]}"
done

# 16-path spraying with reordering and no loss: spurious retransmissions per data packet.
for t in $transports; do
	[ "$t" = metaroce ] || continue
	echo "sweep: spray 16 paths, reorder 5% by 20 us" >&2
	run spray "spray-16-reorder" --transport metaroce --fabric-paths 16 --entropies 64 \
		--reorder 0.05 --reorder-us 20 --size 1M --count "$count" --mtu 4096 --seed 7
done

# Incast K:1 into one 100 Gb/s downlink (1 MiB queue, ECN K = 100 KiB): DCQCN on plain RoCE
# and MetaRoCE with its own CC (when available).
if [ "$incast" = 1 ]; then
	icount=$([ "$quick" = 1 ] && echo 1 || echo 4)
	for k in 8 32; do
		echo "sweep: incast $k:1 DCQCN" >&2
		run incast "incast-$k-roce-dcqcn" --transport roce --cc dcqcn --incast "$k" \
			--size 1M --count "$icount" --depth 2 --ecn-kb 100 --queue-kb 1024 --seed 7
		if [[ " $transports " == *" metaroce "* ]]; then
			echo "sweep: incast $k:1 MetaRoCE CC" >&2
			run incast "incast-$k-metaroce-cc" --transport metaroce --cc metaroce \
				--incast "$k" --size 1M --count "$icount" --depth 2 --ecn-kb 100 \
				--queue-kb 1024 --seed 7
		fi
	done
fi

# Real-mode hook: every executable in MR_SWEEP_RUNNERS (colon-separated) or
# scripts/sweep/runners/*.sh is called as `RUNNER OUT_DIR RUNS_JSONL` and appends records with
# "mode":"real" (same fields) to RUNS_JSONL. See scripts/sweep/README.md.
# Runners find the binaries through MR_BUILD (runners/real.sh: two metaroced + mrperf; it skips
# itself unless root; MR_SWEEP_REAL=0 skips it too).
export MR_BUILD="$build"
runners=()
IFS=: read -r -a runners <<<"${MR_SWEEP_RUNNERS:-}"
for r in "$here"/sweep/runners/*.sh; do [ -x "$r" ] && runners+=("$r"); done
for r in "${runners[@]}"; do
	[ -n "$r" ] || continue
	echo "sweep: real-mode runner $r" >&2
	"$r" "$out" "$runs" || echo "loss-sweep: runner $r failed ($?)" >&2
done

py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3 # Debian's, with python3-matplotlib
"$py" "$here/sweep/aggregate.py" "$runs" "$out"
if [ "$plots" = 1 ]; then
	"$py" "$here/sweep/plot.py" "$out" || echo "loss-sweep: plots skipped (matplotlib?)" >&2
fi
echo "loss-sweep: results in $out" >&2
