#!/bin/bash
# SPDX-License-Identifier: MIT
# Build the libFuzzer targets (tests/fuzz) with clang + ASan + UBSan and run each one.
#
#   scripts/fuzz.sh SECONDS [TARGET...]   fuzz each target SECONDS (-max_total_time), starting
#                                         from tests/fuzz/corpus/<t> (new inputs go to a scratch
#                                         dir, never into the repository), after replaying
#                                         tests/fuzz/regressions/<t>
#   scripts/fuzz.sh --replay [TARGET...]  run every corpus + regression file once per target
#
# Exits non-zero when any target crashes, leaks, times out or violates an invariant; the
# crashing input is kept in $FUZZ_OUT/<t>/ (default build-fuzz/fuzz-out). Prints one line per
# target: executions, CPU seconds, exec/s (docs/reliability.md quotes these).
# Environment: FUZZ_BUILD (default build-fuzz), FUZZ_OUT, FUZZ_JOBS (default 1: the machine is
# shared), CC (default clang).
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${FUZZ_BUILD:-build-fuzz}
OUT=${FUZZ_OUT:-$BUILD/fuzz-out}
JOBS=${FUZZ_JOBS:-1}
ALL_TARGETS="frame rc mrt shm config"

usage() {
	echo "usage: $0 SECONDS [TARGET...] | $0 --replay [TARGET...]  (targets: $ALL_TARGETS)" >&2
	exit 2
}

[ $# -ge 1 ] || usage
MODE=fuzz
if [ "$1" = "--replay" ]; then
	MODE=replay
	SECS=0
else
	SECS=$1
	case "$SECS" in ''|*[!0-9]*) usage ;; esac
fi
shift
TARGETS=${*:-$ALL_TARGETS}

if [ ! -f "$BUILD/build.ninja" ]; then
	CC=${CC:-clang} meson setup "$BUILD" -Dfuzz=true -Dsanitizers=true -Db_lundef=false \
		-Ddpdk=disabled -Dwerror=false -Dc_args=-fsanitize=fuzzer-no-link >/tmp/fuzz-setup.$$.log 2>&1 ||
		{ cat /tmp/fuzz-setup.$$.log; rm -f /tmp/fuzz-setup.$$.log; echo "fuzz.sh: meson setup failed" >&2; exit 1; }
	rm -f /tmp/fuzz-setup.$$.log
fi
ninja_targets=""
for t in $TARGETS; do
	ninja_targets="$ninja_targets tests/fuzz/fuzz_$t"
done
# shellcheck disable=SC2086
ninja -C "$BUILD" $ninja_targets >"$BUILD/fuzz-build.log" 2>&1 ||
	{ tail -40 "$BUILD/fuzz-build.log"; echo "fuzz.sh: build failed" >&2; exit 1; }

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
status=0
summary=""
for t in $TARGETS; do
	bin=$BUILD/tests/fuzz/fuzz_$t
	corpus=$ROOT/tests/fuzz/corpus/$t
	regr=$ROOT/tests/fuzz/regressions/$t
	dict=$ROOT/tests/fuzz/$t.dict
	out=$OUT/$t
	mkdir -p "$out/new"
	rm -f "$out"/crash-* "$out"/leak-* "$out"/timeout-* "$out"/oom-*
	log=$out/log.txt
	dictarg=()
	[ -f "$dict" ] && dictarg=(-dict="$dict")
	# Regressions first, one run each so that every one still failing is named; then the
	# corpus in one run.
	bad=0
	nrep=0
	for f in "$regr"/*; do
		[ -f "$f" ] || continue
		nrep=$((nrep + 1))
		if ! "$bin" -runs=0 -timeout=25 -rss_limit_mb=2048 "$f" >"$out/replay.txt" 2>&1; then
			echo "FAIL $t: regression $(basename "$f") crashes:"
			grep -E "INVARIANT|runtime error|ERROR: AddressSanitizer|SUMMARY: Address" \
				"$out/replay.txt" | head -3 | sed 's/^/    /'
			bad=$((bad + 1))
		fi
	done
	files=()
	for f in "$corpus"/*; do
		[ -f "$f" ] && files+=("$f")
	done
	if [ ${#files[@]} -gt 0 ] &&
	   ! "$bin" -runs=0 -timeout=25 -rss_limit_mb=2048 "${files[@]}" >"$out/replay.txt" 2>&1; then
		echo "FAIL $t: a corpus input crashes (see $out/replay.txt):"
		grep -E "Running: |INVARIANT|runtime error|ERROR: AddressSanitizer" "$out/replay.txt" |
			tail -3 | sed 's/^/    /'
		bad=$((bad + 1))
	fi
	[ $bad -gt 0 ] && status=1
	if [ "$MODE" = replay ]; then
		summary="$summary$(printf '%-7s replayed %d regressions + %d corpus inputs: %s' "$t" \
			"$nrep" "${#files[@]}" "$([ $bad -eq 0 ] && echo ok || echo "$bad FAILED")")\n"
		continue
	fi
	# CPU time of the fuzzer (children's user+sys of this shell, in clock ticks).
	c0=$(awk '{print $16+$17}' /proc/$$/stat)
	jobarg=()
	[ "$JOBS" -gt 1 ] && jobarg=(-jobs="$JOBS" -workers="$JOBS")
	"$bin" -max_total_time="$SECS" "${jobarg[@]}" -timeout=25 \
		-rss_limit_mb=2048 -max_len=8192 -print_final_stats=1 "${dictarg[@]}" \
		-artifact_prefix="$out/" "$out/new" "$corpus" >"$log" 2>&1
	rc=$?
	if [ "$JOBS" -gt 1 ]; then
		cat fuzz-*.log >>"$log" 2>/dev/null
		rm -f fuzz-*.log
	fi
	c1=$(awk '{print $16+$17}' /proc/$$/stat)
	execs=$(grep -h "stat::number_of_executed_units" "$log" | awk '{s+=$2} END {print s+0}')
	cpu=$(awk -v a="$c0" -v b="$c1" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.0f", (b-a)/hz}')
	rate=$(awk -v e="$execs" -v c="$cpu" 'BEGIN {printf "%.0f", (c > 0 ? e / c : 0)}')
	crashes=$(ls "$out" | grep -cE '^(crash|leak|timeout|oom)-')
	line=$(printf '%-7s %10s execs  %5s cpu-s  %7s exec/s  crashes %s' "$t" "$execs" "$cpu" \
		"$rate" "$crashes")
	summary="$summary$line\n"
	if [ $rc -ne 0 ] || [ "$crashes" -gt 0 ]; then
		status=1
		echo "FAIL $t (libFuzzer rc $rc): inputs in $out, log $log"
		grep -E "INVARIANT|ERROR: |SUMMARY" "$log" | head -6
	fi
done
printf "fuzz.sh %s:\n$summary" "$([ "$MODE" = replay ] && echo replay || echo "${SECS}s per target")"
exit $status
