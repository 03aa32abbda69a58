#!/bin/bash
# SPDX-License-Identifier: MIT
# Smoke test of metaroced end to end: two network namespaces joined by a veth pair (addresses
# from 198.18.0.0/15, NOT configured in the kernel: each daemon owns its address and answers ARP
# itself), one metaroced per namespace on net_af_packet, then
#   1. ARP: a raw ARP request from the peer's kernel side must be answered by daemon A;
#   2. examples/hello_write through daemon A (loopback QP pair, WRITE WITH IMM);
#   3. tests/integration/mr_itest a <-> b across the veth: WRITE, SEND, WRITE WITH IMM, READ,
#      FETCH_ADD, CMP_SWAP, every byte and value checked; then WRITE throughput / READ latency;
#   4. SIGTERM: both daemons exit 0, remove their sockets, print a final stats line, and their
#      pcap files pass `mrpcap check` (every RoCE frame's ICRC and headers).
# Everything is torn down by a trap, also on failure (only the PIDs this script started).
# Exit 0 on success, 77 (skip) when it cannot run here (not root, no netns, no binaries).
#
# Usage: smoke-daemon.sh [--build DIR] [--busy] [--idle-sleep-us N] [--bytes N]
#                        [--bw-bytes N] [--lat-iters N] [--keep] [--no-huge]
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build="$root/build"
idle_us=20
bytes=$((1 << 20))
bw_bytes=$((32 << 20))
lat_iters=1000
keep=0
nohuge=0
while [ $# -gt 0 ]; do
	case "$1" in
	--build) build=$2; shift ;;
	--busy) idle_us=0 ;;
	--idle-sleep-us) idle_us=$2; shift ;;
	--bytes) bytes=$2; shift ;;
	--bw-bytes) bw_bytes=$2; shift ;;
	--lat-iters) lat_iters=$2; shift ;;
	--keep) keep=1 ;;
	--no-huge) nohuge=1 ;;
	*) echo "usage: $0 [--build DIR] [--busy] [--idle-sleep-us N] [--bytes N] [--bw-bytes N] [--lat-iters N] [--keep] [--no-huge]" >&2; exit 2 ;;
	esac
	shift
done

daemon="$build/apps/metaroced/metaroced"
itest="$build/tests/integration/mr_itest"
hello="$build/examples/hello_write"
mrpcap="$build/apps/mrpcap/mrpcap"
skip() { echo "smoke-daemon: SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
command -v ip >/dev/null || skip "no iproute2"
for f in "$daemon" "$itest" "$hello"; do [ -x "$f" ] || skip "$f not built"; done

. "$root/scripts/lib/netns.sh"
tag="smk$$"
nsa="mr-$tag-a"
nsb="mr-$tag-b"
work=$(mktemp -d /tmp/mr-smoke.XXXXXX)
pids=()

cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null
	done
	mr_netns_down "$tag"
	if [ "$keep" = 1 ]; then
		echo "smoke-daemon: logs kept in $work"
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
	echo "smoke-daemon: FAIL: $*" >&2
	for f in "$work"/*.log; do
		[ -f "$f" ] || continue
		echo "---- $f (tail)" >&2
		tail -n 30 "$f" >&2
	done
	exit 1
}

# Hugepages if we can get them (each daemon needs ~64 MB), else --no-huge.
eal_extra=()
if [ "$nohuge" = 0 ]; then
	mr_hugepages 512
	free_hp=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
	[ "${free_hp:-0}" -ge 128 ] || nohuge=1
fi
[ "$nohuge" = 1 ] && eal_extra=(--no-huge -m 256)

ip netns add "mr-$tag-probe" 2>/dev/null && ip netns del "mr-$tag-probe" || skip "cannot create network namespaces"
mr_netns_up "$tag" 1500 || fail "netns setup"

ncpu=$(nproc)
write_conf() { # name iface ipv4 lcore
	cat > "$work/$1.conf" <<CONF
[port]
eal_args = --vdev=net_af_packet0,iface=$2,framecnt=4096
ipv4 = $3
mtu = 1500
[roce]
dscp = 26
ecn = true
[engine]
lcores = $4
idle_sleep_us = $idle_us
[shm]
socket = $work/$1.sock
CONF
}
write_conf a mrva 198.18.0.1 0
write_conf b mrvb 198.18.0.2 $((ncpu > 1 ? 1 : 0))

start_daemon() { # name netns
	ip netns exec "$2" "$daemon" -c "$work/$1.conf" --pcap "$work/$1.pcap" \
		--pcap-max-bytes $((256 << 20)) -v -- --file-prefix="mrsmoke$$$1" "${eal_extra[@]}" \
		> "$work/daemon-$1.log" 2>&1 &
	pids+=($!)
	eval "pid_$1=$!"
}
wait_ready() { # name pid
	local i
	for i in $(seq 1 200); do
		grep -q "metaroced: ready" "$work/daemon-$1.log" 2>/dev/null && [ -S "$work/$1.sock" ] && return 0
		kill -0 "$2" 2>/dev/null || fail "daemon $1 exited during start"
		sleep 0.1
	done
	fail "daemon $1 not ready after 20 s"
}
t0=$(date +%s.%N)
start_daemon a "$nsa"
start_daemon b "$nsb"
wait_ready a "$pid_a"
wait_ready b "$pid_b"
echo "smoke-daemon: daemons up in $(echo "$(date +%s.%N) - $t0" | bc 2>/dev/null || echo '?') s (pids $pid_a $pid_b, idle_sleep_us $idle_us${eal_extra:+, --no-huge})"

# 1. ARP for daemon A's address, asked by the kernel side of B's veth end.
if command -v python3 >/dev/null; then
	mac=$(ip netns exec "$nsb" python3 "$root/tests/integration/arp_probe.py" mrvb 198.18.0.1 198.18.255.254 3) ||
		fail "no ARP reply for 198.18.0.1"
	want=$(ip netns exec "$nsa" cat /sys/class/net/mrva/address)
	[ "$mac" = "$want" ] || fail "ARP reply has MAC $mac, expected $want"
	echo "smoke-daemon: ARP 198.18.0.1 is-at $mac: ok"
fi

# 2. Loopback through one daemon.
timeout 30 "$hello" "$work/a.sock" > "$work/hello.log" 2>&1 || fail "hello_write"
echo "smoke-daemon: $(cat "$work/hello.log")"

# 2b. A peer that never answers ARP: the daemon holds the QP's frames, the WR must end with
#     RETRY_EXC_ERR (not hang, not crash), and the daemon must carry on (step 3 runs after it).
timeout 30 "$itest" --role u --sock "$work/a.sock" --unreach 198.18.0.99 --timeout 20 \
	> "$work/itest-u.log" 2>&1 || fail "mr_itest u (unreachable peer)"
echo "smoke-daemon: $(tail -n 2 "$work/itest-u.log" | head -n 1)"

# 3. Two hosts. The apps run in the root namespace: filesystem UNIX sockets cross namespaces.
timeout 120 "$itest" --role b --sock "$work/b.sock" --dir "$work" --bytes "$bytes" --timeout 60 \
	> "$work/itest-b.log" 2>&1 &
itb=$!
pids+=($itb)
ts=$(date +%s.%N)
timeout 120 "$itest" --role a --sock "$work/a.sock" --dir "$work" --bytes "$bytes" --timeout 60 \
	--bw-bytes "$bw_bytes" --lat-iters "$lat_iters" > "$work/itest-a.log" 2>&1
rca=$?
wait "$itb"
rcb=$?
te=$(date +%s.%N)
cat "$work/itest-a.log" "$work/itest-b.log"
[ "$rca" = 0 ] || fail "mr_itest a exited $rca"
[ "$rcb" = 0 ] || fail "mr_itest b exited $rcb"

# CPU used by each daemon during the run (utime + stime, in clock ticks).
hz=$(getconf CLK_TCK)
for n in a b; do
	eval p=\$pid_$n
	read -r -a st < "/proc/$p/stat"
	echo "smoke-daemon: daemon $n cpu $(( (st[13] + st[14]) * 1000 / hz )) ms over the whole test"
done

# 4. Clean stop.
for n in a b; do
	eval p=\$pid_$n
	kill -TERM "$p"
	wait "$p"
	rc=$?
	[ "$rc" = 0 ] || fail "daemon $n exited $rc on SIGTERM"
	[ -e "$work/$n.sock" ] && fail "daemon $n left its socket file"
	grep -q "^metaroced final: engine" "$work/daemon-$n.log" || fail "daemon $n: no final stats"
	grep "^metaroced final: \(engine\|qps\|neigh\)" "$work/daemon-$n.log" | sed "s/^/smoke-daemon: [$n] /"
	if [ -x "$mrpcap" ]; then
		out=$("$mrpcap" check "$work/$n.pcap" 2>&1) || fail "mrpcap check $n.pcap: $out"
		echo "smoke-daemon: $n.pcap: $(echo "$out" | tail -n 1)"
	fi
done
# Daemon A held the unreachable peer's frames instead of sending them to a guessed MAC.
held=$(sed -n 's/^metaroced final: engine.* held=\([0-9]*\) .*/\1/p' "$work/daemon-a.log")
[ "${held:-0}" -gt 0 ] || fail "daemon a never held a frame for the unreachable peer"
pids=()
echo "smoke-daemon: PASS"
exit 0
