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
# labelled "rxe<->rxe baseline": the rig proving itself without metaroce. With --stock the DUT
# runs Debian's own /usr/bin/ib_* and ibv_*_pingpong, unmodified, through metaroce-run on the
# metaroce verbs library (stack/verbs), so both ends run the same stock binaries.
#
# Variants (--variants) add cells with perftest / ibverbs-utils options, each on the tools that
# support it, in both roles at IB MTU 1024 (and 4096 with --full):
#   q4 (-q 4), bidir (-b), all (-a: sizes 2..2^23, every power of two up to 64 KiB checked),
#   events (-e), inline (-I 64, 64-byte messages), duration (-D 2), srq (--use-srq, SEND
#   tools), srqpp (ibv_srq_pingpong), ipv6 (an IPv6 GID: DUT -x 0 / -g 0 = its configured
#   2001:2::1, the rxe guest's GID of 2001:2::11 after it gets that address).
# A cell whose DUT reports an operation as unsupported (EOPNOTSUPP/ENOSYS, e.g. SRQs) is
# counted UNSUP with the tool's message, never hangs and never counts as passed.
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
#   --stock           DUT = stock perftest / ibverbs-utils through BUILD/apps/metaroce-run
#                     (default variants: ci)
#   --variants LIST   comma list of the variants above, 'ci' (a subset: one tool each, both
#                     roles, IB MTU 1024), 'all-variants' or 'none' (default none; ci with --stock)
#   --ack-timeout N   perftest -u N on both ends of every perftest cell (local ACK timeout
#                     4.096 us * 2^N; default: perftest's own 14 = 67 ms). For loaded hosts,
#                     where a starved TCG guest or daemon stalls 8 x 67 ms and the requester ends
#                     in RETRY_EXC_ERR (status 12) without any loss
#   --full            with --stock: sizes one,many, every variant on every tool that has it, at
#                     both IB MTUs (long under TCG; see docs/interop-rxe.md for timings)
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
stock=0
full=0
variants=
ack_timeout=
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
	--stock) stock=1 ;;
	--full) full=1 ;;
	--variants) variants=$2; shift ;;
	--ack-timeout) ack_timeout=$2; shift ;;
	--tag) tag=$2; shift ;;
	--logs) logs=$2; shift ;;
	-h|--help) sed -n '2,58p' "$0"; exit 0 ;;
	*) echo "interop-rxe: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
	shift
done
why=$(mr_rxe_can_run) || { echo "interop-rxe: SKIP: $why"; exit 77; }
if [ "$stock" = 1 ]; then
	[ "$baseline" = 0 ] || { echo "interop-rxe: --baseline and --stock exclude each other" >&2; exit 2; }
	[ -n "$variants" ] || variants=ci
	if [ "$full" = 1 ]; then
		variants=all-variants
		sizes=one,many
	fi
fi
[ -n "$variants" ] || variants=none
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
# device, RoCE v2 GID index (GIDX: 1 = ::ffff:IPv4 on both rxe and metaroce; each side's own
# index of its IPv6 GID in ipv6 cells), no CPU-freq warning
RXE_FLAGS="-d rxe0 -x GIDX -F${ack_timeout:+ -u $ack_timeout}"
DUT_GIDX=1 PEER_GIDX=1
MR_RXE_ADDR6_MR=2001:2::1       # metaroced's IPv6 address in ipv6 cells (GID index 0)
MR_RXE_PREFIX6=2001:2::         # guest G: 2001:2::(10+G)

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
	launcher="$metaroce/apps/metaroce-run/metaroce-run"
	# Never the verbs library under metaroced or the rig's own tools (meson test may have put
	# its directory on LD_LIBRARY_PATH): only metaroce-run adds it, for the DUT's tool.
	[ -x "$launcher" ] && mr_strip_verbs_dir "$("$launcher" --print-dir)"
	if [ "$stock" = 1 ]; then
		# Built by this tree: missing means broken, not "cannot run here".
		for f in "$daemon" "$launcher"; do
			[ -x "$f" ] || { echo "interop-rxe: $f not built" >&2; exit 1; }
		done
		"$launcher" --sock /nonexistent true 2>&1 | grep -q "verbs library is not in" &&
			{ echo "interop-rxe: $("$launcher" --sock /nonexistent true 2>&1)" >&2; exit 1; }
	else
		for f in "$daemon" "$mrperf"; do [ -x "$f" ] || { echo "interop-rxe: SKIP: $f not built"; exit 77; }; done
	fi
	ns=$(mr_rxe_ns "$tag")
	sock="$(mr_rxe_dir "$tag")/metaroced.sock"
	dut_label() { [ "$stock" = 1 ] && echo "metaroce(stock)<->rxe" || echo "metaroce<->rxe"; }
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
	dut_setup() { # IB MTU [ipv6]: (re)start metaroced on mrx0 with the matching Ethernet MTU
		dut_teardown
		cat > "$logs/metaroced.conf" <<-CONF
		[port]
		eal_args = --vdev=net_af_packet0,iface=mrx0,$(afp_args "$1")
		ipv4 = $MR_RXE_ADDR_MR
		$([ "${2:-}" = ipv6 ] && echo "ipv6 = $MR_RXE_ADDR6_MR")
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
	dut_supports() { # mrperf: perftest tools; mrpingpong: ibv_rc_pingpong; --stock: /usr/bin
		if [ "$stock" = 1 ]; then
			[ -x "/usr/bin/$1" ]
			return
		fi
		[ "${2:-base}" = base ] || return 1  # variants are stock-tool options
		case "$1" in
		ib_*) return 0 ;;
		ibv_rc_pingpong) [ -x "$mrpingpong" ] ;;
		*) return 1 ;;
		esac
	}
	dut_argv() { # "ib_write_bw -d rxe0 -x 1 ..." -> DUT_ARGV=(mrperf write_bw ... --sock SOCK)
		local tool=${1%% *} more i
		read -ra more <<< "${1#* }"
		if [ "$stock" = 1 ]; then
			# The same stock command line, on the metaroce device (and its GID index).
			for i in "${!more[@]}"; do
				case "${more[$i]}" in
				rxe0) more[$i]=metaroce0 ;;
				GIDX) more[$i]=$DUT_GIDX ;;
				esac
			done
			DUT_ARGV=("$launcher" --sock "$sock" "/usr/bin/$tool" "${more[@]}")
			return
		fi
		for i in "${!more[@]}"; do [ "${more[$i]}" = GIDX ] && more[$i]=$DUT_GIDX; done
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
			# A server that failed (e.g. an unsupported verb) never listens: do not wait.
			kill -0 "$DUT_BG_PID" 2>/dev/null || return 1
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

# ---- variants: name -> the tools that take the option (full), the ci subset's tool --------------
variant_tools() { # VARIANT FULL(0|1)
	case "$1:$2" in
	q4:1) echo ib_write_bw ib_send_bw ib_read_bw ib_atomic_bw ;;
	q4:0) echo ib_write_bw ;;
	bidir:1) echo ib_write_bw ib_send_bw ib_read_bw ;;
	bidir:0) echo ib_send_bw ;;
	all:1) echo ib_write_bw ib_send_bw ib_read_bw ib_write_lat ib_send_lat ib_read_lat ;;
	all:0) echo ib_write_bw ;;
	# Not ib_write_bw: perftest 4.5 itself refuses -e on WRITE ("Events feature not available on
	# WRITE verb", exit 1 before any verb; the same against rxe or mlx5), nor ib_write_lat.
	events:1) echo ib_send_bw ib_read_bw ib_atomic_bw ib_send_lat ibv_rc_pingpong ;;
	events:0) echo ib_send_bw ;;
	inline:1) echo ib_write_bw ib_send_bw ib_write_lat ib_send_lat ;;
	inline:0) echo ib_send_lat ;;
	duration:1) echo ib_write_bw ib_send_bw ib_read_bw ;;
	duration:0) echo ib_read_bw ;;
	srq:*) [ "$2" = 1 ] && echo ib_send_bw ib_send_lat || echo ib_send_bw ;;
	srqpp:*) echo ibv_srq_pingpong ;;
	ipv6:1) echo ib_write_bw ib_send_bw ib_read_bw ib_write_lat ibv_rc_pingpong ;;
	ipv6:0) echo ib_write_bw ;;
	*) return 1 ;;
	esac
}
ALL_VARIANTS="q4 bidir all events inline duration srq srqpp ipv6"
case "$variants" in
none) variants= ;;
ci|all-variants) variants=$ALL_VARIANTS ;;
*) variants=${variants//,/ }
	for v in $variants; do
		variant_tools "$v" 1 >/dev/null || { echo "interop-rxe: unknown variant '$v' (see --help)" >&2; exit 2; }
	done ;;
esac
ALL_ITERS=5   # -a: every size 2..2^23 (perftest), 5 messages each

# Command line (without the server address) for TOOL at IB MTU and SIZE, in VARIANT. GIDX
# stands for the GID index, which each side fills in.
cell_cmd() { # TOOL MTU SIZE VARIANT
	local tool=$1 mtu=$2 size=$3 v=${4:-base} n="-n $iters" s=" -s $3" x
	is_atomic "$tool" && s=
	case "$v" in
	all) s=" -a" n="-n $ALL_ITERS" ;;
	inline) s=" -s 64 -I 64" ;;
	duration) n="-D 2" ;;
	esac
	case "$v" in
	q4) x=" -q 4" ;;
	bidir) x=" -b" ;;
	events) x=" -e" ;;
	srq) x=" --use-srq" ;;
	*) x= ;;
	esac
	case "$(kind_of "$tool")" in
	bw) echo "$tool $RXE_FLAGS --report_gbits$s $n$x" ;;
	lat) echo "$tool $RXE_FLAGS$s $n$x" ;;
	pingpong) echo "$tool -d rxe0 -g GIDX -m $mtu -s $size -n $iters$x" ;;
	esac
}
gidx() { echo "${1//GIDX/$2}"; } # CMD INDEX
# Before an rxe server starts: nothing of an earlier cell may still hold perftest's port in the
# guest (a server whose client never came is killed by the agent's timeout, but may linger).
peer_port_free() {
	mr_rxe_run "$tag" $PEER 15 "i=0; while netstat -ltn | grep -q ':18515 '; do [ \$i -eq 20 ] && killall -q ib_write_bw ib_send_bw ib_read_bw ib_atomic_bw ib_write_lat ib_send_lat ib_read_lat ib_atomic_lat ibv_rc_pingpong ibv_srq_pingpong; [ \$i -ge 50 ] && exit 1; sleep 0.2; i=\$((i + 1)); done" >/dev/null 2>&1 || true
}

# Did the DUT refuse the operation (EOPNOTSUPP / ENOSYS / a tool's "Couldn't create SRQ")?
# Prints the line that says so.
dut_unsupported() { # FILE
	grep -m 1 -i -E "operation not supported|function not implemented|not supported by the device|couldn't create srq|failed to create srq" "$1"
}

passed=0 failed=0 skipped=0 unsup=0 retried=0 retried_ids= unsup_ids=
cell_once() { # TOOL ROLE MTU SIZENAME LOSS [VARIANT]; sets CELL_STATUS (PASS, FAIL, SKIP, UNSUP)
	local tool=$1 role=$2 mtu=$3 sname=$4 lossp=$5 v=${6:-base} size id cmd t0 kind srv_out cli_out
	local sfig cfig status detail citers skind dut_cmd peer_cmd dut_out why
	# one = one IB MTU of payload, many = 64 KiB; atomics always carry 8 bytes (IBA 9.4.5)
	size=$(is_atomic "$tool" && echo 8 || { [ "$sname" = one ] && echo "$mtu" || echo 65536; })
	[ "$v" = inline ] && size=64
	kind=$(kind_of "$tool")
	skind=$(server_kind_of "$tool")
	citers=$iters
	[ "$v" = duration ] && citers=any
	[ "$v" = q4 ] && citers=$((iters * 4))  # perftest counts every QP's iterations
	[ "$v" = all ] && citers=$ALL_ITERS
	id="${tool}_${role}_mtu${mtu}_${sname}$([ "$v" != base ] && echo "_$v")$([ "$lossp" -gt 0 ] && echo "_loss$lossp")"
	CELL_ID=$id
	cmd=$(cell_cmd "$tool" "$mtu" "$size" "$v")
	dut_cmd=$(gidx "$cmd" "$DUT_GIDX")
	peer_cmd=$(gidx "$cmd" "$PEER_GIDX")
	srv_out="$logs/$id.server" cli_out="$logs/$id.client"
	t0=$(mr_rxe_now)
	if ! dut_supports "$tool" "$v"; then
		printf '%-5s %-22s %-16s %-10s mtu=%-4s %-5s %-8s %s\n' SKIP "$(dut_label)" "$tool" \
			"$role" "$mtu" "$sname" "$v" "not supported by the DUT"
		CELL_STATUS=SKIP
		return
	fi
	[ -z "$pcap_dir" ] || mr_rxe_capture_start "$tag" "$pcap_dir/$id.pcap" \
		"udp port 4791 or tcp port 18515 or arp" || true
	mr_rxe_loss "$tag" "$lossp"
	local secs=$((lossp > 0 ? 3 * cell_timeout : cell_timeout)) src crc
	[ "$v" = all ] && secs=$((3 * cell_timeout))
	if [ "$role" = dut-server ]; then
		dut_out=$srv_out
		dut_server_bg "$dut_cmd" "$srv_out" "$secs"
		if dut_wait_listen; then
			mr_rxe_run "$tag" $PEER "$secs" "$peer_cmd $(dut_addr)" > "$cli_out" 2>&1
			crc=$?
		else
			echo "server never listened" > "$cli_out"; crc=125
		fi
		wait "$DUT_BG_PID"; src=$?
	else
		dut_out=$cli_out
		peer_port_free
		mr_rxe_run_bg "$tag" $PEER "$secs" "$srv_out" "$peer_cmd"
		if mr_rxe_wait_listen "$tag" $PEER 18515 20; then
			dut_client "$dut_cmd" "$PEER_IP" "$cli_out" "$secs"
			crc=$?
			# A DUT client that refused the operation never connects: end the waiting
			# rxe server now instead of at the cell timeout.
			[ "$crc" = 0 ] || ! dut_unsupported "$cli_out" >/dev/null ||
				mr_rxe_run "$tag" $PEER 10 "killall -q ${tool##*/}" >/dev/null 2>&1
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
		if [ "$baseline" = 0 ] && why=$(dut_unsupported "$dut_out"); then
			status=UNSUP detail="DUT: $(echo "$why" | sed 's/^ *//')"
		fi
	elif [ "$v" = all ]; then
		# With -a a WRITE/READ/atomic bandwidth server prints only the largest size.
		case "$tool" in ib_write_bw|ib_read_bw|ib_atomic_bw) skind=passive ;; esac
		if ! sfig=$(mr_perf_check_sizes "$srv_out" "$skind" 2 65536 "$citers" "$mtu"); then
			status=FAIL detail="server: $sfig"
		elif ! cfig=$(mr_perf_check_sizes "$cli_out" "$kind" 2 65536 "$citers" "$mtu"); then
			status=FAIL detail="client: $cfig"
		else
			detail="server $sfig client $cfig"
		fi
	elif ! sfig=$(mr_perf_check "$srv_out" "$skind" "$size" "$citers" "$mtu"); then
		status=FAIL detail="server: $sfig"
	elif ! cfig=$(mr_perf_check "$cli_out" "$kind" "$size" "$citers" "$mtu"); then
		status=FAIL detail="client: $cfig"
	else
		detail="server $sfig client $cfig"
	fi
	# perftest derives its figures from a CPU clock it measures at start; under TCG on a loaded
	# host that fit fails ("Correlation coefficient r^2 ... < 0.9") and every figure is 0.
	if [ "$status" = FAIL ] && grep -q "Correlation coefficient r^2" "$srv_out" "$cli_out" 2>/dev/null; then
		detail="$detail (a perftest could not measure its CPU clock: host too loaded for TCG timing)"
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
		local chk nroce want_frames=$iters
		[ "$v" = all ] || [ "$v" = duration ] && want_frames=$ALL_ITERS
		if chk=$("$mrpcap" check "$pcap_dir/$id.pcap" 2>&1); then
			nroce=$(echo "$chk" | awk '/ passed, / { print $1 }' | tail -n 1)
			if [ "$cap_ok" = 0 ] || [ "${nroce:-0}" -ge "$want_frames" ]; then
				detail="$detail, pcap $nroce RoCE frames ok"
			else
				status=FAIL detail="$detail, pcap holds ${nroce:-0} RoCE frames < $want_frames"
			fi
		else
			status=FAIL detail="$detail, mrpcap check: $(echo "$chk" | tail -n 1)"
		fi
	fi
	printf '%-5s %-22s %-16s %-10s mtu=%-4s %-5s %-8s %5ss  %s\n' "$status" "$(dut_label)" "$tool" \
		"$role" "$mtu" "$sname" "$v" "$(mr_rxe_since "$t0")" "$detail"
	CELL_STATUS=$status CELL_DETAIL=$detail CELL_OUTS="$srv_out $cli_out"
	if [ "$status" = FAIL ]; then
		sed 's/^/    server| /' "$srv_out" | tail -n 5
		sed 's/^/    client| /' "$cli_out" | tail -n 5
	fi
}

# ---- the rig's own health ---------------------------------------------------------------------
# A CI run on a loaded host (stop 14) saw every cell from some point on fail on perftest's TCP
# exchange ("Couldn't connect", both directions) while the guests' agents still answered: the
# rig had lost its IP path, not the DUT its protocol, and 30 cells x 2 tries x 60 s ran the job
# to the edge of its time limit. So a failed cell is followed by a check of the rig (each
# guest's agent, ping both ways over br0; a dead DUT daemon is counted failed and restarted). A broken rig is described (guest
# memory, eth0 counters, neighbours, dmesg; the host's br0) and rebuilt (guests rebooted at the
# current Ethernet MTU, the phase's DUT setup run again) before the cell runs again, at most
# MR_RXE_MAX_REBUILDS (2) times. MR_RXE_MAX_FAILS_IN_A_ROW (4; 0 = never) cells failing one
# after another end the run: what follows cannot pass either. The first failure is repeated at
# the end, since a long log is often read from its tail. MR_RXE_BREAK_AT=CELL_ID breaks the rig
# (guest eth0 down) right after that cell ran, to test all of this (docs/interop-rxe.md).
rig_ns=$(mr_rxe_ns "$tag")
rig_mtu= rig_setup=: rig_rebuilds=0 fails_in_a_row=0 not_run=0 first_fail= first_rig= dut_deaths=0
rig_check() { # prints each problem; returns 1 if there is one
	local g ip bad=0
	for g in $(seq 1 "$NGUESTS"); do
		ip=$(mr_rxe_guest_ip "$g")
		if ! mr_rxe_run "$tag" "$g" 10 true >/dev/null 2>&1; then
			echo "guest $g: its agent does not answer"; bad=1; continue
		fi
		ip netns exec "$rig_ns" busybox ping -c 2 -W 3 -q "$ip" >/dev/null 2>&1 ||
			{ echo "host ($MR_RXE_ADDR_HOST) -> guest $g ($ip): no ping reply"; bad=1; }
		mr_rxe_run "$tag" "$g" 15 "ping -c 2 -W 3 -q $MR_RXE_ADDR_HOST" >/dev/null 2>&1 ||
			{ echo "guest $g ($ip) -> host ($MR_RXE_ADDR_HOST): no ping reply"; bad=1; }
	done
	return $bad
}
rig_describe() {
	local g
	for g in $(seq 1 "$NGUESTS"); do
		echo "    guest $g (memory, interface counters, ARP table, dmesg tail, console tail):"
		mr_rxe_run "$tag" "$g" 15 "free -m | head -n 2; cat /proc/net/dev | grep -e eth0 -e face; cat /proc/net/arp; dmesg | tail -n 8" 2>&1 |
			sed 's/^/    | /'
		tail -n 4 "$(mr_rxe_dir "$tag")/g$g.console" 2>/dev/null | sed 's/^/    | /'
	done
	echo "    host netns $rig_ns (br0, neighbours):"
	{ ip -n "$rig_ns" -s link show br0; ip -n "$rig_ns" neigh; } 2>&1 | sed 's/^/    | /'
}
rig_rebuild() { # guests rebooted at the phase's Ethernet MTU, then the phase's DUT setup
	rig_rebuilds=$((rig_rebuilds + 1))
	dut_teardown
	mr_rxe_up "$tag" "$NGUESTS" "$(eth_mtu "$rig_mtu")" && $rig_setup
}
rig_phase() { # IB-MTU SETUP-COMMAND: what rig_rebuild restores
	rig_mtu=$1 rig_setup=$2
}

cell() { # TOOL ROLE MTU SIZENAME LOSS [VARIANT]: one cell, run again on failure up to --retries times
	local try=0 why max_rebuilds=${MR_RXE_MAX_REBUILDS:-2} max_fails=${MR_RXE_MAX_FAILS_IN_A_ROW:-4}
	if [ "$max_fails" -gt 0 ] && [ "$fails_in_a_row" -ge "$max_fails" ]; then
		not_run=$((not_run + 1)) failed=$((failed + 1))
		return
	fi
	while :; do
		cell_once "$@"
		if [ -n "${MR_RXE_BREAK_AT:-}" ] && [ "$CELL_ID" = "$MR_RXE_BREAK_AT" ]; then
			echo "interop-rxe: MR_RXE_BREAK_AT: guest $PEER's eth0 goes down now"
			mr_rxe_run "$tag" "$PEER" 10 "ip link set eth0 down" >/dev/null 2>&1
			MR_RXE_BREAK_AT=
		fi
		case "$CELL_STATUS" in
		SKIP) skipped=$((skipped + 1)); return ;;
		UNSUP) unsup=$((unsup + 1)); unsup_ids="$unsup_ids $CELL_ID"; return ;;
		PASS)
			passed=$((passed + 1)) fails_in_a_row=0
			if [ "$try" -gt 0 ]; then
				retried=$((retried + 1))
				retried_ids="$retried_ids $CELL_ID"
			fi
			return ;;
		esac
		if [ -z "$first_fail" ]; then
			first_fail="$CELL_ID ($CELL_DETAIL)"
			local f
			for f in $CELL_OUTS; do
				first_fail="$first_fail"$'\n'"$(tail -n 3 "$f" | sed "s/^/    ${f##*.}| /")"
			done
		fi
		# A dead daemon is the DUT's failure, never the rig's: counted whatever a retry does.
		if [ -z "$DUT_GUEST" ] && ! kill -0 "${DUT_DAEMON_PID:-0}" 2>/dev/null; then
			echo "interop-rxe: metaroced died during $CELL_ID (a failure whatever the retry does); its log ends:"
			tail -n 8 "$logs/metaroced-$rig_mtu.log" 2>/dev/null | sed 's/^/    | /'
			dut_deaths=$((dut_deaths + 1)) failed=$((failed + 1))
			$rig_setup || fails_in_a_row=$max_fails
		fi
		if ! why=$(rig_check); then
			echo "interop-rxe: after $CELL_ID the rig itself is broken:"
			echo "$why" | sed 's/^/    /'
			rig_describe
			[ -n "$first_rig" ] || first_rig="after $CELL_ID: $(echo "$why" | tr '\n' ';')"
			if [ "$rig_rebuilds" -ge "$max_rebuilds" ]; then
				echo "interop-rxe: rig rebuilt $rig_rebuilds times already: no more"
			elif rig_rebuild; then
				echo "interop-rxe: rig rebuilt ($rig_rebuilds of $max_rebuilds): guests rebooted, DUT set up again; $CELL_ID runs again"
				continue  # a broken rig's failure is not the cell's: no retry used up
			else
				echo "interop-rxe: the rig could not be rebuilt"
				fails_in_a_row=$max_fails
			fi
		fi
		if [ "$try" -lt "$retries" ]; then
			try=$((try + 1))
			echo "     retrying $CELL_ID ($try of $retries)"
			continue
		fi
		failed=$((failed + 1)) fails_in_a_row=$((fails_in_a_row + 1))
		[ "$max_fails" -gt 0 ] && [ "$fails_in_a_row" -eq "$max_fails" ] &&
			echo "interop-rxe: $max_fails cells failed in a row: the remaining cells are not run (counted failed)"
		return
	done
}

# IPv6 GIDs for the ipv6 cells: the peer guest (and a guest DUT) get 2001:2::(10+G) on eth0,
# which rxe adds to its GID table; the index of its RoCE v2 entry is that side's GIDX. A
# metaroced DUT is restarted with ipv6 = 2001:2::1, its GID index 0 (apps/metaroced/backend.c).
guest_ipv6_gidx() { # G -> prints the GID index
	local g=$1 a
	a="${MR_RXE_PREFIX6}$((10 + g))"
	mr_rxe_run "$tag" "$g" 30 "sysctl -qw net.ipv6.conf.eth0.disable_ipv6=0; /usr/bin/ip -6 addr add $a/64 dev eth0 nodad 2>/dev/null; want=2001:0002:0000:0000:0000:0000:0000:00$((10 + g)); i=0; while [ \$i -lt 50 ]; do for f in /sys/class/infiniband/rxe0/ports/1/gids/*; do n=\${f##*/}; [ \"\$(cat \$f)\" = \"\$want\" ] && [ \"\$(cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/\$n 2>/dev/null)\" = 'RoCE v2' ] && { echo \$n; exit 0; }; done; sleep 0.1; i=\$((i + 1)); done; exit 1"
}
ipv6_up() { # MTU: sets DUT_GIDX / PEER_GIDX; returns 1 if a side has no IPv6 GID
	PEER_GIDX=$(guest_ipv6_gidx "$PEER") || { echo "interop-rxe: guest $PEER: no RoCE v2 GID for its IPv6 address" >&2; return 1; }
	if [ -n "$DUT_GUEST" ]; then
		DUT_GIDX=$(guest_ipv6_gidx "$DUT_GUEST") || return 1
	else
		dut_setup "$1" ipv6 || return 1
		DUT_GIDX=0  # mrperf: the daemon's GID 0 is its configured IPv6 address
		if [ "$stock" = 1 ]; then
			# The library's table is rxe-like (0 link-local, 1 IPv4, then global IPv6):
			# the DUT's index is wherever ibv_devinfo shows 2001:2::1.
			DUT_GIDX=$(ip netns exec "$ns" "$launcher" --sock "$sock" /usr/bin/ibv_devinfo -v 2>/dev/null |
				awk -v a="$MR_RXE_ADDR6_MR" '/GID\[/ && index($0, a ",") { l = $0; sub(/.*GID\[ */, "", l); sub(/\].*/, "", l); print l; exit }')
			[ -n "$DUT_GIDX" ] || { echo "interop-rxe: metaroce0 shows no GID $MR_RXE_ADDR6_MR" >&2; return 1; }
		fi
	fi
	echo "interop-rxe: IPv6 GIDs: DUT index $DUT_GIDX, peer (guest $PEER, ${MR_RXE_PREFIX6}$((10 + PEER))) index $PEER_GIDX"
}

t_all=$(mr_rxe_now)
first_mtu=${mtus%%,*}
eth_mtu() { [ "$1" = 4096 ] && echo 9000 || echo 1500; }
mr_rxe_up "$tag" "$NGUESTS" "$(eth_mtu "$first_mtu")" || { echo "interop-rxe: guests did not boot" >&2; failed=1; exit 1; }
echo "interop-rxe: guests up in ${MR_RXE_BOOT_SECS}s; logs in $logs"
for mtu in ${mtus//,/ }; do
	mr_rxe_set_mtu "$tag" "$(eth_mtu "$mtu")" || { echo "interop-rxe: cannot set MTU" >&2; failed=1; exit 1; }
	rig_phase "$mtu" "dut_setup $mtu"
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
	# Variants: at IB MTU 1024 (the ci subset), and at every MTU with --full; ipv6 last (it
	# gives the guest an IPv6 address, and the DUT daemon one).
	[ "$full" = 1 ] || [ "$mtu" = 1024 ] || continue
	for v in $variants; do
		[ "$v" = ipv6 ] && continue
		for tool in $(variant_tools "$v" "$full"); do
			for role in ${roles//,/ }; do
				cell "$tool" "$role" "$mtu" many 0 "$v"
			done
		done
	done
done
if [[ " $variants " == *" ipv6 "* ]]; then
	v6mtu=${mtus%%,*}
	rig_phase "$v6mtu" "ipv6_up $v6mtu"
	if mr_rxe_set_mtu "$tag" "$(eth_mtu "$v6mtu")" && ipv6_up "$v6mtu"; then
		for tool in $(variant_tools ipv6 "$full"); do
			for role in ${roles//,/ }; do
				cell "$tool" "$role" "$v6mtu" many 0 ipv6
			done
		done
	else
		echo "FAIL  ipv6 cells: no IPv6 GID on one side"
		failed=$((failed + 1))
	fi
	DUT_GIDX=1 PEER_GIDX=1
fi
if [ "$loss" -gt 0 ]; then
	# Loss cells: IB MTU 1024, many packets. With the DUT as server rxe is the requester (its
	# go-back-N against the DUT's sequence NAKs and duplicates); as client the DUT is (its
	# retransmissions against rxe's NAKs, IBA 9.7.5.2.1). The drop rule hits both directions.
	rig_phase 1024 "dut_setup 1024"
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
	# MR_ROCE_CHECK_MAX=N samples the first N RoCE frames of each pcap (scapy decodes ~500
	# frames/s here: all 650k frames of the --stock set take 20 min; mrpcap checked them all).
	if rc_out=$(/usr/bin/python3 "$here/roce_check.py" ${MR_ROCE_CHECK_MAX:+--max-per-file "$MR_ROCE_CHECK_MAX"} "$pcap_dir"/*.pcap 2>&1); then
		echo "interop-rxe: roce_check.py: $(echo "$rc_out" | tail -n 1)"
	else
		echo "interop-rxe: roce_check.py FAILED: $(echo "$rc_out" | tail -n 3 | tr '\n' ' ')"
		failed=$((failed + 1))
	fi
fi
[ "$retried" -eq 0 ] || echo "interop-rxe: $retried cell(s) passed only on a retry:$retried_ids"
[ "$rig_rebuilds" -eq 0 ] || echo "interop-rxe: the rig was rebuilt $rig_rebuilds time(s), first $first_rig"
[ "$dut_deaths" -eq 0 ] || echo "interop-rxe: metaroced died $dut_deaths time(s) (each counted failed)"
[ "$not_run" -eq 0 ] || echo "interop-rxe: $not_run cell(s) not run after ${MR_RXE_MAX_FAILS_IN_A_ROW:-4} failures in a row (counted failed)"
[ -z "$first_fail" ] || printf 'interop-rxe: the first failure: %s\n' "$first_fail"
[ "$unsup" -eq 0 ] || echo "interop-rxe: $unsup cell(s) UNSUPPORTED by the DUT (not passed):$unsup_ids"
echo "interop-rxe: $passed passed, $failed failed$([ $skipped -gt 0 ] && echo ", $skipped skipped")$([ $unsup -gt 0 ] && echo ", $unsup unsupported") in $(mr_rxe_since "$t_all")s"
[ "$failed" = 0 ]
