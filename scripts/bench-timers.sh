#!/bin/sh
# Instructions per timer call at 1/16/256/1024 armed QPs (docs/performance.md "Timers"):
# callgrind counts only inside mr_ctx_next_expiry() or mr_ctx_on_timer() (inclusive: the timer
# handlers they run, and the heap's re-keying of the QPs touched since the last call), which
# does not depend on the machine's load. idle: the difference between 3000 and 1000 calls, so
# the setup's one-off cost (the first call re-keys every QP set up) drops out; fire: every
# expiry of the run (8 per QP) including that first call. Usage: scripts/bench-timers.sh [BUILD]
set -eu
bin=${1:-build}/tests/transport/bench_timers
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ir() { # ir FUNC N MODE [CALLS] -> collected instructions
	valgrind --tool=callgrind --callgrind-out-file="$tmp/out" --toggle-collect="$1" \
		"$bin" "$2" "$3" ${4:-} > "$tmp/log" 2>&1
	sed -n 's/^summary: *//p;s/^totals: *//p' "$tmp/out" | head -n 1
}
calls() { "$bin" "$1" "$2" | sed 's/.* calls \([0-9]*\) .*/\1/'; }
printf '%-5s %6s %6s %14s %14s\n' mode n_qp calls next_expiry on_timer
for n in 1 16 256 1024; do
	a=$(( $(ir mr_ctx_next_expiry "$n" idle 3000) - $(ir mr_ctx_next_expiry "$n" idle 1000) ))
	b=$(( $(ir mr_ctx_on_timer "$n" idle 3000) - $(ir mr_ctx_on_timer "$n" idle 1000) ))
	printf '%-5s %6s %6s %14.1f %14.1f\n' idle "$n" 2000 \
		"$(echo "$a / 2000" | bc -l)" "$(echo "$b / 2000" | bc -l)"
done
for n in 1 16 256 1024; do
	c=$(calls "$n" fire)
	a=$(ir mr_ctx_next_expiry "$n" fire)
	b=$(ir mr_ctx_on_timer "$n" fire)
	printf '%-5s %6s %6s %14.1f %14.1f\n' fire "$n" "$c" \
		"$(echo "$a / $c" | bc -l)" "$(echo "$b / $c" | bc -l)"
done
