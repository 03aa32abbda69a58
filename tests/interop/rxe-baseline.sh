#!/usr/bin/env bash
# Baseline proof of the rxe interop rig: two stock Linux soft-RoCE guests (QEMU TCG, Debian 12
# kernel, rdma-core 44, perftest 4.5) on a bridge in a network namespace, talking to each other
# with the tools the interop matrix will later point at metaroce:
#   1. build (or reuse) the guest image              scripts/rxe/build-guest.sh
#   2. boot both guests, ping across the bridge      scripts/rxe/lib.sh
#   3. ib_write_bw -s 65536 -n 200 (server guest 1, client guest 2)
#   4. ib_send_lat -n 1000
#   5. ibv_rc_pingpong -d rxe0 -g 1
# Each step captures RoCE v2 + perftest TCP on br0 into its own pcap and asserts:
#   both exit statuses 0; both sides' reported size/iterations/IB MTU and a positive figure;
#   `mrpcap check` passes every RoCE frame (headers + ICRC) with zero failures; the pcap holds
#   at least the RoCE frames the step must produce (per-opcode counts from mrpcap).
# Prints the wall time of every step. Exit 0 pass, 1 fail, 77 skip (not root, no QEMU, no
# mrpcap binary).
#
# Usage: rxe-baseline.sh [--mrpcap PATH] [--keep DIR] [--tag TAG]
#   --mrpcap PATH   the project's checker (default: build/apps/mrpcap/mrpcap of this tree)
#   --keep DIR      keep pcaps and logs there (default: a temp dir, removed on success)
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$root/scripts/rxe/lib.sh"

mrpcap="$root/build/apps/mrpcap/mrpcap"
keep=
tag="bl$$"
while [ $# -gt 0 ]; do
	case "$1" in
	--mrpcap) mrpcap=$2; shift ;;
	--keep) keep=$2; shift ;;
	--tag) tag=$2; shift ;;
	*) echo "usage: $0 [--mrpcap PATH] [--keep DIR] [--tag TAG]" >&2; exit 2 ;;
	esac
	shift
done
skip() { echo "rxe-baseline: SKIP: $*"; exit 77; }
why=$(mr_rxe_can_run) || skip "$why"
[ -x "$mrpcap" ] || skip "no mrpcap at $mrpcap (build the tree or pass --mrpcap)"

work=${keep:-$(mktemp -d /tmp/mr-rxe-baseline.XXXXXX)}
mkdir -p "$work"
result=1
cleanup() {
	mr_rxe_down "$tag"
	if [ "$result" = 0 ] && [ -z "$keep" ]; then rm -rf "$work"; else echo "rxe-baseline: files in $work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() { echo "rxe-baseline: FAIL: $*" >&2; exit 1; }
t_all=$(mr_rxe_now)

# 1. Guest image.
t=$(mr_rxe_now)
mr_rxe_guest || fail "cannot build the guest image"
echo "rxe-baseline: build: $(mr_rxe_since "$t") s ($MR_RXE_GUEST_DIR; $(head -n 1 "$MR_RXE_GUEST_DIR/manifest.txt"))"

# 2. Boot and reachability.
mr_rxe_up "$tag" 2 1500 || fail "guests did not boot"
echo "rxe-baseline: boot: $MR_RXE_BOOT_SECS s (2 guests, TCG, -smp 1 each)"
t=$(mr_rxe_now)
mr_rxe_run "$tag" 2 20 "ping -c 1 -W 5 $(mr_rxe_guest_ip 1) && ping -c 1 -W 5 $MR_RXE_ADDR_HOST" \
	> "$work/ping.log" 2>&1 || fail "ping across the bridge: $(cat "$work/ping.log")"
mr_rxe_run "$tag" 1 20 "cat /sys/class/infiniband/rxe0/ports/1/gids/1; ibv_devinfo | grep active_mtu" \
	> "$work/gid.log" 2>&1 || fail "rxe0 query"
grep -q "0000:0000:0000:0000:0000:ffff:c612:010b" "$work/gid.log" ||
	fail "guest 1 GID index 1 is not ::ffff:198.18.1.11: $(cat "$work/gid.log")"
grep -q "active_mtu:.*1024" "$work/gid.log" || fail "IB MTU is not 1024: $(cat "$work/gid.log")"
echo "rxe-baseline: reachability + GID/MTU check: $(mr_rxe_since "$t") s"

# Asserts mrpcap's per-opcode count OPCODE >= MIN in the check output FILE.
opcode_at_least() { # FILE OPCODE MIN
	local n
	n=$(awk -v op="$2" '$1 == op { print $2 }' "$1")
	[ "${n:-0}" -ge "$3" ] || fail "$(basename "$1"): $2 = ${n:-0}, want >= $3"
}

# One attempt of a step; on failure sets STEP_WHY and returns 1.
step_once() { # NAME KIND SIZE ITERS SERVER_CMD CLIENT_CMD
	local name=$1 kind=$2 size=$3 iters=$4 scmd=$5 ccmd=$6
	STEP_WHY=
	mr_rxe_capture_start "$tag" "$work/$name.pcap" || { STEP_WHY="$name: tcpdump"; return 1; }
	mr_rxe_pair "$tag" 1 2 180 "$work/$name" "$scmd" "$ccmd"
	mr_rxe_capture_stop "$tag" || { STEP_WHY="$name: capture dropped frames"; return 1; }
	if [ "$MR_RXE_PAIR_SRC" != 0 ] || [ "$MR_RXE_PAIR_CRC" != 0 ]; then
		STEP_WHY="$name: exit server=$MR_RXE_PAIR_SRC client=$MR_RXE_PAIR_CRC
$(tail -n 5 "$work/$name.server")
$(tail -n 5 "$work/$name.client")"
		return 1
	fi
	sfig=$(mr_perf_check "$work/$name.server" "$kind" "$size" "$iters" 1024) ||
		{ STEP_WHY="$name server: $sfig"; return 1; }
	cfig=$(mr_perf_check "$work/$name.client" "$kind" "$size" "$iters" 1024) ||
		{ STEP_WHY="$name client: $cfig"; return 1; }
	return 0
}

# A step runs once more after a failure: stock perftest in a TCG guest on a loaded 2-core host
# occasionally reports a zero figure or stalls past rxe's retry budget (seen once in CI:
# "ib_write_bw server: figure 0.000000 not positive"). The retry is announced, never silent, and
# the capture check below applies to the attempt that passed.
step() { # NAME KIND SIZE ITERS SERVER_CMD CLIENT_CMD
	local name=$1 t sfig cfig
	t=$(mr_rxe_now)
	if ! step_once "$@"; then
		echo "rxe-baseline: $name: attempt 1 failed ($(echo "$STEP_WHY" | head -n 1)); retrying"
		cp "$work/$name.server" "$work/$name.try1.server" 2>/dev/null
		cp "$work/$name.client" "$work/$name.try1.client" 2>/dev/null
		step_once "$@" || fail "$STEP_WHY"
	fi
	"$mrpcap" check "$work/$name.pcap" > "$work/$name.check" 2>&1 ||
		fail "$name: mrpcap check: $(grep -m 3 FAIL "$work/$name.check")"
	grep -q ", 0 failed" "$work/$name.check" || fail "$name: mrpcap reported failures"
	echo "rxe-baseline: $name: $(mr_rxe_since "$t") s; server $sfig, client $cfig;" \
		"pcap $(tail -n 1 "$work/$name.check")"
}

# 3. ib_write_bw: 200 x 64 KiB at IB MTU 1024 = 64 packets per message.
cmd="ib_write_bw -d rxe0 -x 1 -F --report_gbits -s 65536 -n 200"
step ib_write_bw bw 65536 200 "$cmd" "$cmd $(mr_rxe_guest_ip 1)"
opcode_at_least "$work/ib_write_bw.check" RC_RDMA_WRITE_FIRST 200
opcode_at_least "$work/ib_write_bw.check" RC_RDMA_WRITE_MIDDLE $((200 * 62))
opcode_at_least "$work/ib_write_bw.check" RC_RDMA_WRITE_LAST 200
opcode_at_least "$work/ib_write_bw.check" RC_ACKNOWLEDGE 1

# 4. ib_send_lat: ping-pong of 2-byte SENDs, 1000 each way.
cmd="ib_send_lat -d rxe0 -x 1 -F -n 1000"
step ib_send_lat lat 2 1000 "$cmd" "$cmd $(mr_rxe_guest_ip 1)"
opcode_at_least "$work/ib_send_lat.check" RC_SEND_ONLY 2000

# 5. ibv_rc_pingpong: 1000 round trips of 4096-byte SENDs (4 packets each at IB MTU 1024).
step ibv_rc_pingpong pingpong 4096 1000 "ibv_rc_pingpong -d rxe0 -g 1" \
	"ibv_rc_pingpong -d rxe0 -g 1 $(mr_rxe_guest_ip 1)"
opcode_at_least "$work/ibv_rc_pingpong.check" RC_SEND_FIRST 2000
opcode_at_least "$work/ibv_rc_pingpong.check" RC_SEND_LAST 2000

mr_rxe_run "$tag" 1 20 "rdma statistic show link rxe0/1" > "$work/stats.log" 2>&1 &&
	echo "rxe-baseline: guest 1 $(cat "$work/stats.log")"
t=$(mr_rxe_now)
mr_rxe_down "$tag"
echo "rxe-baseline: shutdown: $(mr_rxe_since "$t") s"
result=0
echo "rxe-baseline: PASS in $(mr_rxe_since "$t_all") s"
