# Sourced by scripts: Linux soft-RoCE (rdma_rxe) peers in QEMU guests, on a bridge inside a
# network namespace, with an attachment point for metaroced.
#
#   netns mr-rxe-TAG:
#     br0 (198.18.1.2/24: the host kernel's control address, for ping and perftest's TCP
#          exchange; never the stack's RoCE address)
#      ├─ tap1 ── QEMU guest 1: eth0 198.18.1.11, rxe0      (QEMU runs inside the netns)
#      ├─ tap2 ── QEMU guest 2: eth0 198.18.1.12, rxe0
#      └─ mrxb ══ veth ══ mrx0: no address; metaroced's net_af_packet owns 198.18.1.1 and
#                          answers ARP for it (the kernel must not, or it would reply to UDP 4791
#                          with ICMP port unreachable)
#
# Functions (TAG: a short name, also the namespace suffix; guests are numbered 1..N):
#   mr_rxe_up TAG N MTU          build/fetch the guest, create the network, boot N guests (<= 2)
#   mr_rxe_run TAG G SECS CMD    run CMD (one shell string) in guest G, output to stdout,
#                                returns its exit status (guest kills it after SECS)
#   mr_rxe_run_bg TAG G SECS OUT CMD   same, in the background (port 2 of the guest), output to
#                                file OUT; sets MR_RXE_BG_PID (a host PID to `wait` for)
#   mr_rxe_set_mtu TAG MTU       Ethernet MTU on every bridge port and every guest's eth0
#   mr_rxe_loss TAG PCT          drop PCT% of UDP 4791 frames crossing the bridge, both
#                                directions (nftables, bridge family); 0 removes the rule
#   mr_rxe_loss_dropped TAG      frames dropped so far by that rule
#   mr_rxe_capture_start TAG FILE [FILTER]  tcpdump on br0 (default: RoCE v2 + perftest TCP)
#   mr_rxe_capture_stop TAG
#   mr_rxe_down TAG              power off guests, kill only our QEMU/tcpdump PIDs, delete the
#                                namespace (and with it br0, taps, veth); idempotent, trap-safe
# Environment: MR_RXE_CACHE (guest image cache), MR_RXE_RUN (state: sockets, logs, pids),
#              MR_RXE_QEMU_MEM (MB, default 512), MR_RXE_BOOT_TIMEOUT (s, default 180),
#              MR_RXE_APPEND (extra kernel parameters, e.g. mr.cmd=BASE64 for a one-shot run).

MR_RXE_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MR_RXE_RUN=${MR_RXE_RUN:-/run/metaroce-rxe}
MR_RXE_GUEST_DIR=${MR_RXE_GUEST_DIR:-}
export MR_RXE_ADDR_MR=198.18.1.1  # metaroced (not configured on any kernel interface)
MR_RXE_ADDR_HOST=198.18.1.2    # host kernel, on br0
MR_RXE_PREFIX=198.18.1

mr_rxe_log() { echo "rxe: $*" >&2; }
mr_rxe_ns() { echo "mr-rxe-$1"; }
mr_rxe_dir() { echo "$MR_RXE_RUN/$1"; }
mr_rxe_guest_ip() { echo "$MR_RXE_PREFIX.$((10 + $1))"; }
mr_rxe_now() { date +%s.%N; }
mr_rxe_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# Can this machine run guests at all? Prints the reason and returns 1 if not. QEMU itself is
# not required here: build-guest.sh installs it (as root), and a failure there is a failure.
mr_rxe_can_run() {
	[ "$(id -u)" = 0 ] || { echo "needs root (network namespaces, taps)"; return 1; }
	[ -c /dev/net/tun ] || { echo "no /dev/net/tun"; return 1; }
	command -v apt-get >/dev/null || command -v qemu-system-x86_64 >/dev/null ||
		{ echo "no qemu-system-x86_64 and no apt-get to install it"; return 1; }
	ip netns add mr-rxe-probe$$ 2>/dev/null || { echo "cannot create network namespaces"; return 1; }
	ip netns del mr-rxe-probe$$
	return 0
}

mr_rxe_guest() { # -> sets MR_RXE_GUEST_DIR (build-guest.sh; MR_RXE_CACHE picks the cache)
	[ -n "$MR_RXE_GUEST_DIR" ] && [ -s "$MR_RXE_GUEST_DIR/initrd.img" ] && return 0
	MR_RXE_GUEST_DIR=$("$MR_RXE_LIB_DIR/build-guest.sh" | tail -n 1) || return 1
	[ -s "$MR_RXE_GUEST_DIR/initrd.img" ]
}

mr_rxe_net_up() { # TAG N MTU
	local tag=$1 n=$2 mtu=$3 ns i
	ns=$(mr_rxe_ns "$tag")
	ip netns add "$ns" || return 1
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
	ip -n "$ns" link set lo up
	ip -n "$ns" link add br0 type bridge forward_delay 0 stp_state 0 mcast_snooping 0 || return 1
	for i in $(seq 1 "$n"); do
		ip -n "$ns" tuntap add dev "tap$i" mode tap || return 1
		ip -n "$ns" link set "tap$i" master br0 mtu "$mtu" up
	done
	ip -n "$ns" link add mrx0 type veth peer name mrxb || return 1
	ip -n "$ns" link set mrxb master br0 mtu "$mtu" up
	ip -n "$ns" link set mrx0 mtu "$mtu" up
	# mrx0 belongs to the stack: the kernel must never answer ARP there (not even for br0's
	# address, which it would by default), and frames must reach af_packet as sent.
	ip netns exec "$ns" sysctl -qw net.ipv4.conf.mrx0.arp_ignore=8
	ip netns exec "$ns" ethtool -K mrx0 tx off rx off tso off gso off gro off >/dev/null 2>&1 || true
	ip netns exec "$ns" ethtool -K mrxb tx off rx off tso off gso off gro off >/dev/null 2>&1 || true
	ip -n "$ns" link set br0 mtu "$mtu" up
	ip -n "$ns" addr add "$MR_RXE_ADDR_HOST/24" dev br0
}

mr_rxe_boot() { # TAG G MTU   (starts QEMU, does not wait)
	local tag=$1 g=$2 mtu=$3 ns dir mac
	ns=$(mr_rxe_ns "$tag")
	dir=$(mr_rxe_dir "$tag")
	mac=$(printf '52:54:00:18:01:%02x' $((10 + g)))
	rm -f "$dir/g$g.ctl0" "$dir/g$g.ctl1" "$dir/g$g.pid" "$dir/g$g.console"
	ip netns exec "$ns" qemu-system-x86_64 -name "mr-rxe-$tag-g$g" \
		-accel tcg -cpu max -m "${MR_RXE_QEMU_MEM:-512}" -smp 1 \
		-nodefaults -no-user-config -display none -no-reboot \
		-kernel "$MR_RXE_GUEST_DIR/vmlinuz" -initrd "$MR_RXE_GUEST_DIR/initrd.img" \
		-append "console=ttyS0 quiet loglevel=3 panic=-1 mr.ip=$(mr_rxe_guest_ip "$g")/24 mr.mtu=$mtu mr.name=g$g ${MR_RXE_APPEND:-}" \
		-serial "file:$dir/g$g.console" \
		-netdev "tap,id=n0,ifname=tap$g,script=no,downscript=no" \
		-device "virtio-net-pci,netdev=n0,mac=$mac" \
		-device virtio-serial-pci \
		-chardev "socket,id=c0,path=$dir/g$g.ctl0,server=on,wait=off" \
		-device virtserialport,chardev=c0,name=mr.ctl0 \
		-chardev "socket,id=c1,path=$dir/g$g.ctl1,server=on,wait=off" \
		-device virtserialport,chardev=c1,name=mr.ctl1 \
		-pidfile "$dir/g$g.pid" \
		> "$dir/g$g.qemu.log" 2>&1 &
	echo $! > "$dir/g$g.launcher"
}

mr_rxe_wait_ready() { # TAG G SECS
	local tag=$1 g=$2 secs=$3 dir t=0 pid
	dir=$(mr_rxe_dir "$tag")
	while [ "$t" -lt $((secs * 5)) ]; do
		if grep -q "MR-RXE-READY" "$dir/g$g.console" 2>/dev/null; then
			python3 "$MR_RXE_LIB_DIR/guestctl.py" "$dir/g$g.ctl0" --wait 30 && return 0
			mr_rxe_log "guest $g: agent does not answer"
			return 1
		fi
		if grep -q "MR-RXE-FAIL\|Kernel panic" "$dir/g$g.console" 2>/dev/null; then
			mr_rxe_log "guest $g failed to boot: $(grep -a "MR-RXE-FAIL\|Kernel panic" "$dir/g$g.console" | head -n 2)"
			return 1
		fi
		pid=$(cat "$dir/g$g.launcher" 2>/dev/null)
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
			mr_rxe_log "guest $g: QEMU exited: $(tail -n 3 "$dir/g$g.qemu.log")"
			return 1
		fi
		sleep 0.2
		t=$((t + 1))
	done
	mr_rxe_log "guest $g not ready after $secs s; console tail:"
	tail -n 15 "$dir/g$g.console" >&2
	return 1
}

mr_rxe_up() { # TAG N MTU
	local tag=$1 n=${2:-2} mtu=${3:-1500} dir g t0
	[ "$n" -ge 1 ] && [ "$n" -le 2 ] || { mr_rxe_log "1 or 2 guests"; return 1; }
	mr_rxe_guest || { mr_rxe_log "cannot build the guest"; return 1; }
	dir=$(mr_rxe_dir "$tag")
	mr_rxe_down "$tag" 2>/dev/null
	mkdir -p "$dir"
	echo "$n" > "$dir/guests"
	mr_rxe_net_up "$tag" "$n" "$mtu" || { mr_rxe_log "network setup failed"; return 1; }
	t0=$(mr_rxe_now)
	for g in $(seq 1 "$n"); do mr_rxe_boot "$tag" "$g" "$mtu"; done
	for g in $(seq 1 "$n"); do
		mr_rxe_wait_ready "$tag" "$g" "${MR_RXE_BOOT_TIMEOUT:-180}" || return 1
	done
	MR_RXE_BOOT_SECS=$(mr_rxe_since "$t0")
	mr_rxe_log "$n guest(s) up in $MR_RXE_BOOT_SECS s (netns $(mr_rxe_ns "$tag"), MTU $mtu)"
}

mr_rxe_run() { # TAG G SECS CMD
	local tag=$1 g=$2 secs=$3 pid
	shift 3
	# Background + wait: bash defers a TERM/INT trap until a foreground child exits (up to SECS
	# here), but interrupts `wait` at once, so callers' cleanup traps run promptly.
	python3 "$MR_RXE_LIB_DIR/guestctl.py" "$(mr_rxe_dir "$tag")/g$g.ctl0" --timeout "$secs" -- "$*" &
	pid=$!
	wait "$pid"
}

mr_rxe_run_bg() { # TAG G SECS OUTFILE CMD
	local tag=$1 g=$2 secs=$3 out=$4
	shift 4
	python3 "$MR_RXE_LIB_DIR/guestctl.py" "$(mr_rxe_dir "$tag")/g$g.ctl1" --timeout "$secs" -- "$*" \
		> "$out" 2>&1 &
	MR_RXE_BG_PID=$!
}

mr_rxe_set_mtu() { # TAG MTU
	local tag=$1 mtu=$2 ns dev g n
	ns=$(mr_rxe_ns "$tag")
	n=$(cat "$(mr_rxe_dir "$tag")/guests")
	for dev in $(ip -n "$ns" -o link show master br0 | awk -F': ' '{print $2}' | cut -d@ -f1) mrx0 br0; do
		ip -n "$ns" link set "$dev" mtu "$mtu" || return 1
	done
	for g in $(seq 1 "$n"); do
		mr_rxe_run "$tag" "$g" 20 "ip link set eth0 mtu $mtu" >/dev/null || return 1
	done
}

mr_rxe_loss() { # TAG PCT
	local tag=$1 pct=$2 ns
	ns=$(mr_rxe_ns "$tag")
	ip netns exec "$ns" nft delete table bridge mr_loss 2>/dev/null
	[ "$pct" -gt 0 ] 2>/dev/null || return 0
	# Forward hook of the bridge family: every frame between two ports (guest<->guest and
	# guest<->mrx0), in both directions, after the copy to br0 that tcpdump sees.
	ip netns exec "$ns" nft -f - <<-EOF
	table bridge mr_loss {
		chain loss {
			type filter hook forward priority 0; policy accept;
			udp dport 4791 numgen random mod 100 < $pct counter drop
		}
	}
	EOF
}

mr_rxe_loss_dropped() { # TAG
	ip netns exec "$(mr_rxe_ns "$1")" nft list table bridge mr_loss 2>/dev/null |
		awk '/counter packets/ { for (i = 1; i < NF; i++) if ($i == "packets") print $(i + 1) }'
}

mr_rxe_capture_start() { # TAG FILE [FILTER]
	local tag=$1 file=$2 filter=${3:-udp port 4791 or tcp port 18515} dir i
	dir=$(mr_rxe_dir "$tag")
	mr_rxe_capture_stop "$tag"
	# -Z root: Debian's tcpdump otherwise drops to user tcpdump before opening FILE.
	# --immediate-mode: without it TPACKET_V3 hands over frames in blocks (up to 1 s late) and
	# whatever is still in the ring at SIGINT is lost: short cells came out empty.
	# -B 262144 (KiB): with the default 2 MiB the busy 2-core host dropped ~9% of a 64 KiB x 200
	# ib_write_bw burst ("dropped by kernel"), and 64 MiB still lost frames of a DPDK-speed burst.
	ip netns exec "$(mr_rxe_ns "$tag")" tcpdump -i br0 -s 0 -B 262144 -U --immediate-mode -Z root \
		-w "$file" "$filter" \
		> "$dir/tcpdump.log" 2>&1 &
	echo $! > "$dir/tcpdump.pid"
	for i in $(seq 1 50); do
		grep -q "listening on" "$dir/tcpdump.log" 2>/dev/null && return 0
		kill -0 "$(cat "$dir/tcpdump.pid")" 2>/dev/null || break
		sleep 0.1
	done
	mr_rxe_log "tcpdump did not start: $(cat "$dir/tcpdump.log")"
	return 1
}

# Stops the capture; fails (1) if the kernel dropped frames, so a pcap is never silently short.
mr_rxe_capture_stop() { # TAG
	local dir pid
	dir=$(mr_rxe_dir "$1")
	[ -f "$dir/tcpdump.pid" ] || return 0
	pid=$(cat "$dir/tcpdump.pid")
	rm -f "$dir/tcpdump.pid"
	if kill -0 "$pid" 2>/dev/null && grep -q tcpdump "/proc/$pid/cmdline" 2>/dev/null; then
		sleep 0.3  # let the last frames (final ACKs) through the bridge and into the file
		kill -INT "$pid"
		wait "$pid" 2>/dev/null || true  # our child: reaped here
		local i  # not our child (guest.sh capture stop): poll until it has written its stats
		for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	fi
	if grep -q "^[1-9][0-9]* packets dropped by kernel" "$dir/tcpdump.log" 2>/dev/null; then
		mr_rxe_log "capture incomplete: $(grep "dropped by kernel" "$dir/tcpdump.log")"
		return 1
	fi
	return 0
}

# Kills a QEMU we started: the PID comes from our pidfile and must still be a QEMU named for TAG.
mr_rxe_kill_qemu() { # TAG G
	local dir pid i
	dir=$(mr_rxe_dir "$1")
	pid=$(cat "$dir/g$2.pid" 2>/dev/null)
	[ -n "$pid" ] || return 0
	tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q -- "-name mr-rxe-$1-g$2 " || return 0
	kill "$pid" 2>/dev/null
	for i in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
	kill -9 "$pid" 2>/dev/null
}

mr_rxe_down() { # TAG
	local tag=$1 dir ns g
	dir=$(mr_rxe_dir "$tag")
	ns=$(mr_rxe_ns "$tag")
	mr_rxe_capture_stop "$tag"
	local pids=()
	for g in 1 2; do
		[ -f "$dir/g$g.pid" ] || continue
		# Ask politely first (quick, and the console log ends cleanly), then kill.
		timeout 5 python3 "$MR_RXE_LIB_DIR/guestctl.py" "$dir/g$g.ctl1" --timeout 3 -- \
			"poweroff -f" >/dev/null 2>&1 &
		pids+=($!)
	done
	[ ${#pids[@]} -eq 0 ] || wait "${pids[@]}" 2>/dev/null
	for g in 1 2; do
		mr_rxe_kill_qemu "$tag" "$g"
		rm -f "$dir/g$g.pid"
	done
	if ip netns list 2>/dev/null | grep -qw "$ns"; then
		ip netns exec "$ns" nft delete table bridge mr_loss 2>/dev/null
		for g in 1 2; do ip -n "$ns" link del "tap$g" 2>/dev/null; done
		ip -n "$ns" link del mrx0 2>/dev/null
		ip -n "$ns" link del br0 2>/dev/null
		ip netns del "$ns"
	fi
	# State (sockets, pidfiles, consoles) dies with the guests; boot failures print the console
	# tail before anyone calls this.
	rm -rf "$dir"
	return 0
}

mr_rxe_wait_listen() { # TAG G PORT [SECS]   until guest G listens on TCP PORT
	mr_rxe_run "$1" "$2" "$((${4:-20} + 5))" \
		"i=0; while [ \$i -lt $((${4:-20} * 10)) ]; do netstat -ltn | grep -q ':$3 ' && exit 0; sleep 0.1; i=\$((i + 1)); done; exit 1"
}

# Runs a perftest-style pair: SERVER_CMD in guest S (background), then, once S listens on
# 18515, CLIENT_CMD in guest C. Output in OUT.server / OUT.client; statuses in
# MR_RXE_PAIR_SRC / MR_RXE_PAIR_CRC; returns 0 only if both exited 0.
mr_rxe_pair() { # TAG S C SECS OUT SERVER_CMD CLIENT_CMD
	local tag=$1 s=$2 c=$3 secs=$4 out=$5 scmd=$6 ccmd=$7
	mr_rxe_run_bg "$tag" "$s" "$secs" "$out.server" "$scmd"
	if mr_rxe_wait_listen "$tag" "$s" 18515 20; then
		mr_rxe_run "$tag" "$c" "$secs" "$ccmd" > "$out.client" 2>&1
		MR_RXE_PAIR_CRC=$?
	else
		echo "server never listened on 18515" > "$out.client"
		MR_RXE_PAIR_CRC=125
	fi
	wait "$MR_RXE_BG_PID"
	MR_RXE_PAIR_SRC=$?
	[ "$MR_RXE_PAIR_SRC" = 0 ] && [ "$MR_RXE_PAIR_CRC" = 0 ]
}

# mr_perf_check FILE KIND SIZE ITERS IB_MTU: scripts/lib/perf_check.sh (shared with tests/verbs).
. "$MR_RXE_LIB_DIR/../lib/perf_check.sh"
