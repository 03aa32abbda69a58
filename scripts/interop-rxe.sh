#!/usr/bin/env bash
# Interop matrix against a stock Linux soft-RoCE peer (rdma_rxe in a QEMU guest, see
# scripts/rxe/lib.sh and docs/interop-rxe.md).
#
# Cells = tool x role x IB MTU x message size, plus one cell under 1% loss. Each cell runs a
# server and a client with perftest's command lines, checks both exit statuses and both sides'
# reported numbers (size, iterations, IB MTU, a positive figure), and prints one line. The
# "DUT" (device under test) is the metaroce side; the "peer" is an rxe guest (198.18.1.11).
# By default the DUT is metaroced + mrperf/mrpingpong of this tree's build/ (built first, with
# its Debian packages, if it is not there), or of --metaroce BUILD. With --baseline the DUT is a
# second rxe guest instead (198.18.1.11; the peer is then 198.18.1.12) and every row is
# labelled "rxe<->rxe baseline": the rig proving itself without metaroce.
#
# Usage: interop-rxe.sh [options]
#   --tools LIST      comma list (default ib_write_bw,ib_send_bw,ib_read_bw,ib_atomic_bw,
#                     ib_write_lat,ib_send_lat,ib_read_lat,ib_atomic_lat,ibv_rc_pingpong;
#                     atomic cells have one size, the 8-byte operand)
#   --roles LIST      dut-server,dut-client (default both)
#   --mtus LIST       IB MTUs, 1024,4096 (default both; Ethernet MTU 1500 / 9000)
#   --sizes LIST      one,many (one = exactly one IB MTU of payload, many = 65536 bytes)
#   --iters N         iterations per cell (default 100)
#   --cell-timeout S  kill a side after S seconds (default 60; the loss cell gets 3x)
#   --retries N       run a failed cell again up to N times (default 1): a TCG guest on a loaded
#                     2-core host can stall longer than the peer's ACK timeout x retry count;
#                     retried cells are counted and named in the closing line
#   --loss PCT        the loss cells' drop rate (default 1; 0 = no loss cells)
#   --loss-roles LIST roles of the loss cells (default dut-server,dut-client: ib_write_bw at
#                     IB MTU 1024, 64 KiB, so both directions' go-back-N is exercised)
#   --pcap-dir DIR    record each cell's traffic (RoCE v2, perftest TCP, ARP) to DIR/CELL.pcap
#   --mrpcap PATH     check every recorded pcap with `mrpcap check` (needs --pcap-dir; default
#                     with --pcap-dir: the DUT build's apps/mrpcap/mrpcap, when there is one)
#   --metaroce BUILD  DUT = metaroced on mrx0 (198.18.1.1) + BUILD/apps/mrperf/mrperf and
#                     BUILD/apps/mrpingpong/mrpingpong (default: ROOT/build)
#   --baseline        rxe<->rxe: no metaroce at all
#   --tag TAG         netns suffix (default ix$$)
#   --logs DIR        keep every side's output there (default: a temp dir, removed on success)
# Exit: 0 all cells passed, 1 a cell failed, 77 cannot run here (not root, no QEMU).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/rxe/lib.sh"

tools=ib_write_bw,ib_send_bw,ib_read_bw,ib_atomic_bw,ib_write_lat,ib_send_lat,ib_read_lat,ib_atomic_lat,ibv_rc_pingpong
roles=dut-server,dut-client
mtus=1024,4096
sizes=one,many
iters=100
cell_timeout=60   # a healthy cell takes 1-7 s here, even on TCG with the host busy
retries=1
loss=1
loss_roles=dut-server,dut-client
pcap_dir=
mrpcap=
metaroce=
baseline=0
tag="ix$$"
logs=
while [ $# -gt 0 ]; do
	case "$1" in
	--tools) tools=$2; shift ;;
	--roles) roles=$2; shift ;;
	--mtus) mtus=$2; shift ;;
	--sizes) sizes=$2; shift ;;
	--iters) iters=$2; shift ;;
	--cell-timeout) cell_timeout=$2; shift ;;
	--retries) retries=$2; shift ;;
	--loss) loss=$2; shift ;;
	--loss-roles) loss_roles=$2; shift ;;
	--pcap-dir) pcap_dir=$2; shift ;;
	--mrpcap) mrpcap=$2; shift ;;
	--metaroce) metaroce=$2; shift ;;
	--baseline) baseline=1 ;;
	--tag) tag=$2; shift ;;
	--logs) logs=$2; shift ;;
	-h|--help) sed -n '2,35p' "$0"; exit 0 ;;
	*) echo "interop-rxe: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
	shift
done
why=$(mr_rxe_can_run) || { echo "interop-rxe: SKIP: $why"; exit 77; }
if [ "$baseline" = 1 ]; then
	[ -z "$metaroce" ] || { echo "interop-rxe: --baseline and --metaroce exclude each other" >&2; exit 2; }
else
	if [ -z "$metaroce" ]; then
		root=$(cd "$here/.." && pwd)
		metaroce=$root/build
		# Built (or brought up to date: a no-op when it is) so that the DUT is this tree.
		echo "interop-rxe: DUT = metaroce built in $metaroce"
		(cd "$root" && . scripts/lib/deps.sh && mr_install_deps &&
			{ [ -f build/build.ninja ] || meson setup build; } && ninja -C build >/dev/null) ||
			{ echo "interop-rxe: cannot build metaroce" >&2; exit 1; }
	fi
	metaroce=$(cd "$metaroce" && pwd)
	if [ -n "$pcap_dir" ] && [ -z "$mrpcap" ] && [ -x "$metaroce/apps/mrpcap/mrpcap" ]; then
		mrpcap=$metaroce/apps/mrpcap/mrpcap
	fi
fi
[ -z "$mrpcap" ] || [ -x "$mrpcap" ] || { echo "interop-rxe: no executable $mrpcap" >&2; exit 2; }
[ -z "$pcap_dir" ] || mkdir -p "$pcap_dir"
keep_logs=1
[ -n "$logs" ] || { logs=$(mktemp -d /tmp/mr-interop.XXXXXX); keep_logs=0; }
mkdir -p "$logs"

# The rxe guest every cell talks to: guest 2 beside a guest-1 stand-in DUT, else guest 1.
PEER=$([ -z "$metaroce" ] && echo 2 || echo 1)
PEER_IP=$(mr_rxe_guest_ip "$PEER")
RXE_FLAGS="-d rxe0 -x 1 -F"  # device, RoCE v2 GID index (::ffff:IPv4), no CPU-freq warning

# ---- the DUT: the one place that changes when metaroce is plugged in -----------------------
# dut_label, dut_setup MTU, dut_teardown, dut_supports TOOL, dut_server_bg CMD OUT SECS,
# dut_wait_listen, dut_client CMD SERVER OUT SECS, dut_addr (where the peer's TCP setup connects).
if [ -z "$metaroce" ]; then
	DUT_GUEST=1
	dut_label() { echo "rxe<->rxe baseline"; }
	dut_setup() { :; }
	dut_teardown() { :; }
	dut_supports() { :; }
	dut_server_bg() { mr_rxe_run_bg "$tag" $DUT_GUEST "$3" "$2" "$1"; DUT_BG_PID=$MR_RXE_BG_PID; }
	dut_wait_listen() { mr_rxe_wait_listen "$tag" $DUT_GUEST 18515 20; }
	dut_client() { mr_rxe_run "$tag" $DUT_GUEST "$4" "$1 $2" > "$3" 2>&1; }
	dut_addr() { mr_rxe_guest_ip $DUT_GUEST; }
	NGUESTS=2
else
	DUT_GUEST=
	daemon="$metaroce/apps/metaroced/metaroced"
	mrperf="$metaroce/apps/mrperf/mrperf"
	mrpingpong="$metaroce/apps/mrpingpong/mrpingpong"
	for f in "$daemon" "$mrperf"; do [ -x "$f" ] || { echo "interop-rxe: SKIP: $f not built"; exit 77; }; done
	ns=$(mr_rxe_ns "$tag")
	sock="$(mr_rxe_dir "$tag")/metaroced.sock"
	dut_label() { echo "metaroce<->rxe"; }
	# IB MTU 4096 = Ethernet MTU 9000: net_af_packet's TPACKET_V2 ring slot (framesz, default
	# 2048) holds its header and one frame, so jumbo frames need framesz >= 9000 + the header
	# + the Ethernet header (10240; blocksz a page multiple holding whole slots). DPDK 22.11's PMD
	# still reports a 1518-byte max_rx_pktlen; drivers/dpdk/dpdk_port.c sizes the port from
	# framesz instead. --no-huge memory (-m) must hold the larger mbufs.
	afp_args() { # IB MTU -> net_af_packet devargs
		if [ "$1" = 4096 ]; then echo "framecnt=1024,blocksz=20480,framesz=10240"
		else echo "framecnt=4096"; fi
	}
	# Packets a metaroce QP keeps unacknowledged. A TCG rxe digests ~4 MB/s and its guest is
	# starved for 100+ ms on a busy 2-core host: with the derived 256-packet window a starved
	# rxe does not ACK within perftest's 67 ms ACK timeout (timeout 14, C9-141), every timeout
	# resends the whole window (go-back-N, IBA 9.7.6.1.3) onto rxe's backlog, and the QP ends
	# in RETRY_EXC_ERR. 128 packets (2 READs of 64 KiB) drain in ~32 ms.
	RIG_INFLIGHT=${MR_RXE_INFLIGHT:-128}
	dut_setup() { # IB MTU: (re)start metaroced on mrx0 with the matching Ethernet MTU
		dut_teardown
		cat > "$logs/metaroced.conf" <<-CONF
		[port]
		eal_args = --vdev=net_af_packet0,iface=mrx0,$(afp_args "$1")
		ipv4 = $MR_RXE_ADDR_MR
		mtu = $(( $1 == 4096 ? 9000 : 1500 ))
		[engine]
		idle_sleep_us = 20
		[limits]
		max_inflight = $RIG_INFLIGHT
		[shm]
		socket = $sock
		CONF
		ip netns exec "$ns" "$daemon" -c "$logs/metaroced.conf" --pcap "$logs/metaroced-$1.pcap" \
			--pcap-max-bytes $((64 << 20)) -- --file-prefix="mrrxe$$" --no-huge -m 512 \
			> "$logs/metaroced-$1.log" 2>&1 &
		DUT_DAEMON_PID=$!
		local _
		for _ in $(seq 1 200); do
			grep -q "metaroced: ready" "$logs/metaroced-$1.log" 2>/dev/null && [ -S "$sock" ] && return 0
			kill -0 "$DUT_DAEMON_PID" 2>/dev/null || break
			sleep 0.1
		done
		echo "interop-rxe: metaroced did not start: $(tail -n 3 "$logs/metaroced-$1.log")" >&2
		return 1
	}
	dut_teardown() {
		[ -n "${DUT_DAEMON_PID:-}" ] || return 0
		kill "$DUT_DAEMON_PID" 2>/dev/null && wait "$DUT_DAEMON_PID" 2>/dev/null
		DUT_DAEMON_PID=
	}
	dut_supports() { # mrperf: perftest tools; mrpingpong: ibv_rc_pingpong
		case "$1" in
		ib_*) return 0 ;;
		ibv_rc_pingpong) [ -x "$mrpingpong" ] ;;
		*) return 1 ;;
		esac
	}
	dut_argv() { # "ib_write_bw -d rxe0 -x 1 ..." -> DUT_ARGV=(mrperf write_bw ... --sock SOCK)
		local tool=${1%% *} more
		read -ra more <<< "${1#* }"
		case "$tool" in
		ibv_rc_pingpong) DUT_ARGV=("$mrpingpong" "${more[@]}" --sock "$sock") ;;
		*) DUT_ARGV=("$mrperf" "${tool#ib_}" "${more[@]}" --sock "$sock") ;;
		esac
	}
	dut_server_bg() {
		dut_argv "$1"
		timeout -s KILL "$3" ip netns exec "$ns" "${DUT_ARGV[@]}" > "$2" 2>&1 &
		DUT_BG_PID=$!
	}
	dut_wait_listen() {
		local _
		for _ in $(seq 1 200); do
			ip netns exec "$ns" ss -ltn 2>/dev/null | grep -q ':18515 ' && return 0
			sleep 0.1
		done
		return 1
	}
	dut_client() {
		dut_argv "$1"
		timeout -s KILL "$4" ip netns exec "$ns" "${DUT_ARGV[@]}" "$2" > "$3" 2>&1 &
		DUT_FG_PID=$!
		wait "$DUT_FG_PID"  # interruptible, see mr_rxe_run
	}
	# perftest's TCP exchange reaches mrperf through the namespace's kernel (br0); the RoCE
	# GID inside the exchange is metaroced's 198.18.1.1.
	dut_addr() { echo "$MR_RXE_ADDR_HOST"; }
	NGUESTS=1
fi

# ---- cells ------------------------------------------------------------------------------------
cleanup() {
	# A DUT server still running after an interrupt (its `timeout` wrapper forwards the signal).
	local p
	for p in ${DUT_BG_PID:-} ${DUT_FG_PID:-}; do kill "$p" 2>/dev/null; done
	dut_teardown
	mr_rxe_down "$tag"
	[ "$keep_logs" = 1 ] || [ "${failed:-1}" != 0 ] || rm -rf "$logs"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

is_atomic() { case "$1" in ib_atomic_*) return 0 ;; *) return 1 ;; esac; }
kind_of() { case "$1" in *_bw) echo bw ;; *_lat) echo lat ;; ibv_*pingpong) echo pingpong ;; esac; }
# READ/atomic latency servers are passive responders and print no result (perftest).
server_kind_of() { case "$1" in ib_read_lat|ib_atomic_lat) echo passive ;; *) kind_of "$1" ;; esac; }

# Command line (without the server address) for TOOL at IB MTU and SIZE.
cell_cmd() { # TOOL MTU SIZE
	case "$(kind_of "$1")" in
	bw) echo "$1 $RXE_FLAGS --report_gbits$(is_atomic "$1" || echo " -s $3") -n $iters" ;;
	lat) echo "$1 $RXE_FLAGS$(is_atomic "$1" || echo " -s $3") -n $iters" ;;
	pingpong) echo "$1 -d rxe0 -g 1 -m $2 -s $3 -n $iters" ;;
	esac
}

passed=0 failed=0 skipped=0 retried=0 retried_ids=
cell_once() { # TOOL ROLE MTU SIZENAME LOSS; sets CELL_STATUS (PASS, FAIL or SKIP) and CELL_ID
	local tool=$1 role=$2 mtu=$3 sname=$4 lossp=$5 size id cmd t0 kind srv_out cli_out
	local sfig cfig status detail
	# one = one IB MTU of payload, many = 64 KiB; atomics always carry 8 bytes (IBA 9.4.5)
	size=$(is_atomic "$tool" && echo 8 || { [ "$sname" = one ] && echo "$mtu" || echo 65536; })
	kind=$(kind_of "$tool")
	id="${tool}_${role}_mtu${mtu}_${sname}$([ "$lossp" -gt 0 ] && echo "_loss$lossp")"
	CELL_ID=$id
	cmd=$(cell_cmd "$tool" "$mtu" "$size")
	srv_out="$logs/$id.server" cli_out="$logs/$id.client"
	t0=$(mr_rxe_now)
	if ! dut_supports "$tool"; then
		printf '%-4s %-20s %-16s %-10s mtu=%-4s %-5s %s\n' SKIP "$(dut_label)" "$tool" \
			"$role" "$mtu" "$sname" "not supported by the DUT"
		CELL_STATUS=SKIP
		return
	fi
	[ -z "$pcap_dir" ] || mr_rxe_capture_start "$tag" "$pcap_dir/$id.pcap" \
		"udp port 4791 or tcp port 18515 or arp" || true
	mr_rxe_loss "$tag" "$lossp"
	local secs=$((lossp > 0 ? 3 * cell_timeout : cell_timeout)) src crc
	if [ "$role" = dut-server ]; then
		dut_server_bg "$cmd" "$srv_out" "$secs"
		if dut_wait_listen; then
			mr_rxe_run "$tag" $PEER "$secs" "$cmd $(dut_addr)" > "$cli_out" 2>&1
			crc=$?
		else
			echo "server never listened" > "$cli_out"; crc=125
		fi
		wait "$DUT_BG_PID"; src=$?
	else
		mr_rxe_run_bg "$tag" $PEER "$secs" "$srv_out" "$cmd"
		if mr_rxe_wait_listen "$tag" $PEER 18515 20; then
			dut_client "$cmd" "$PEER_IP" "$cli_out" "$secs"
			crc=$?
		else
			echo "server never listened" > "$cli_out"; crc=125
		fi
		wait "$MR_RXE_BG_PID"; src=$?
	fi
	local dropped=
	[ "$lossp" -gt 0 ] && dropped=$(mr_rxe_loss_dropped "$tag")
	mr_rxe_loss "$tag" 0
	local cap_ok=1
	[ -z "$pcap_dir" ] || mr_rxe_capture_stop "$tag" || cap_ok=0

	status=PASS detail=
	if [ "$src" != 0 ] || [ "$crc" != 0 ]; then
		status=FAIL detail="exit server=$src client=$crc"
	elif ! sfig=$(mr_perf_check "$srv_out" "$(server_kind_of "$tool")" "$size" "$iters" "$mtu"); then
		status=FAIL detail="server: $sfig"
	elif ! cfig=$(mr_perf_check "$cli_out" "$kind" "$size" "$iters" "$mtu"); then
		status=FAIL detail="client: $cfig"
	else
		detail="server $sfig client $cfig"
	fi
	if [ -n "$dropped" ]; then
		detail="$detail, nft dropped $dropped"
		[ "$status" = PASS ] && [ "${dropped:-0}" -eq 0 ] && status=FAIL detail="$detail (loss rule never hit)"
	fi
	# A recorder that cannot keep up is not the cell's fault: say so, and skip the frame-count
	# check (the frames it did record are still verified).
	[ "$cap_ok" = 1 ] || detail="$detail, capture lost frames (pcap incomplete)"
	if [ -n "$pcap_dir" ] && [ -n "$mrpcap" ] && [ "$status" = PASS ]; then
		# Every RoCE frame must verify, and the capture must hold at least one request per
		# iteration (a short pcap means traffic bypassed the bridge or the capture lost it).
		local chk nroce
		if chk=$("$mrpcap" check "$pcap_dir/$id.pcap" 2>&1); then
			nroce=$(echo "$chk" | awk '/ passed, / { print $1 }' | tail -n 1)
			if [ "$cap_ok" = 0 ] || [ "${nroce:-0}" -ge "$iters" ]; then
				detail="$detail, pcap $nroce RoCE frames ok"
			else
				status=FAIL detail="$detail, pcap holds ${nroce:-0} RoCE frames < $iters"
			fi
		else
			status=FAIL detail="$detail, mrpcap check: $(echo "$chk" | tail -n 1)"
		fi
	fi
	printf '%-4s %-20s %-16s %-10s mtu=%-4s %-5s %5ss  %s\n' "$status" "$(dut_label)" "$tool" \
		"$role" "$mtu" "$sname" "$(mr_rxe_since "$t0")" "$detail"
	CELL_STATUS=$status
	if [ "$status" != PASS ]; then
		sed 's/^/    server| /' "$srv_out" | tail -n 5
		sed 's/^/    client| /' "$cli_out" | tail -n 5
	fi
}

cell() { # TOOL ROLE MTU SIZENAME LOSS: one cell, run again on failure up to --retries times
	local try=0
	while :; do
		cell_once "$@"
		case "$CELL_STATUS" in
		SKIP) skipped=$((skipped + 1)); return ;;
		PASS)
			passed=$((passed + 1))
			if [ "$try" -gt 0 ]; then
				retried=$((retried + 1))
				retried_ids="$retried_ids $CELL_ID"
			fi
			return ;;
		esac
		if [ "$try" -lt "$retries" ]; then
			try=$((try + 1))
			echo "     retrying $CELL_ID ($try of $retries)"
			continue
		fi
		failed=$((failed + 1))
		return
	done
}

t_all=$(mr_rxe_now)
first_mtu=${mtus%%,*}
eth_mtu() { [ "$1" = 4096 ] && echo 9000 || echo 1500; }
mr_rxe_up "$tag" "$NGUESTS" "$(eth_mtu "$first_mtu")" || { echo "interop-rxe: guests did not boot" >&2; failed=1; exit 1; }
echo "interop-rxe: guests up in ${MR_RXE_BOOT_SECS}s; logs in $logs"
for mtu in ${mtus//,/ }; do
	mr_rxe_set_mtu "$tag" "$(eth_mtu "$mtu")" || { echo "interop-rxe: cannot set MTU" >&2; failed=1; exit 1; }
	dut_setup "$mtu" || { failed=$((failed + 1)); continue; }
	for tool in ${tools//,/ }; do
		for sname in ${sizes//,/ }; do
			# an atomic has one size: run its cells once, under the first size name
			is_atomic "$tool" && [ "$sname" != "${sizes%%,*}" ] && continue
			for role in ${roles//,/ }; do
				cell "$tool" "$role" "$mtu" "$sname" 0
			done
		done
	done
done
if [ "$loss" -gt 0 ]; then
	# Loss cells: IB MTU 1024, many packets. With the DUT as server rxe is the requester (its
	# go-back-N against the DUT's sequence NAKs and duplicates); as client the DUT is (its
	# retransmissions against rxe's NAKs, IBA 9.7.5.2.1). The drop rule hits both directions.
	if mr_rxe_set_mtu "$tag" 1500 && dut_setup 1024; then
		for role in ${loss_roles//,/ }; do
			cell ib_write_bw "$role" 1024 many "$loss"
		done
	else
		failed=$((failed + 1))
	fi
fi
if [ -n "$pcap_dir" ] && /usr/bin/python3 -c 'import scapy' 2>/dev/null; then
	# The second, independent opinion on every captured RoCE frame (ICRC and headers by scapy,
	# no metaroce code): scripts/roce_check.py over all of this run's pcaps at once.
	if rc_out=$(/usr/bin/python3 "$here/roce_check.py" "$pcap_dir"/*.pcap 2>&1); then
		echo "interop-rxe: roce_check.py: $(echo "$rc_out" | tail -n 1)"
	else
		echo "interop-rxe: roce_check.py FAILED: $(echo "$rc_out" | tail -n 3 | tr '\n' ' ')"
		failed=$((failed + 1))
	fi
fi
[ "$retried" -eq 0 ] || echo "interop-rxe: $retried cell(s) passed only on a retry:$retried_ids"
echo "interop-rxe: $passed passed, $failed failed$([ $skipped -gt 0 ] && echo ", $skipped skipped") in $(mr_rxe_since "$t_all")s"
[ "$failed" = 0 ]
