# SPDX-License-Identifier: MIT
# Sourced by the integration tests: two network namespaces joined by a veth pair, one metaroced
# per namespace (net_af_packet), apps in the root namespace reaching the daemons through their
# filesystem UNIX sockets (they cross namespaces, DESIGN.md). Keeps tests short and uniform:
#
#   itl_init NAME BUILD_DIR      work dir, unique tag, traps (cleanup kills only our PIDs)
#   itl_netns_up MTU             namespaces mr-<tag>-a/-b, veth mrva/mrvb with that MTU
#   itl_daemon_conf N MTU        write $ITL_WORK/N.conf (N = a|b; port.mtu = MTU)
#   itl_daemon_start N           start daemon N in its namespace, wait until ready (with
#                                ITL_START_NOFAIL=1 returns 1 if it exits during start)
#   itl_daemon_stop N            SIGTERM, expect exit 0, socket file removed, final stats
#   itl_daemon_kill9 N           for tests that simulate a crash
#   itl_stats N                  SIGUSR1; prints the fresh "metaroced stats:" lines
#   itl_stat N KEY               one counter from a fresh stats dump (e.g. "sessions")
#   itl_bg NAME CMD...           run CMD in the background, log in $ITL_WORK/NAME.log; pid in
#                                ITL_BG_PID; it is killed by the trap if still running
#   itl_wait_pid PID SECONDS     wait for PID with a deadline; returns its exit code (124 late)
#   itl_wait_for SECONDS CMD...  poll CMD (0.05 s steps) until it succeeds (readiness checks)
#   itl_fail MSG                 print MSG and every log tail, exit 1
#   itl_ok MSG                   print a verified fact
# Exit codes follow meson: 0 pass, 1 fail, 77 skip (not root, no netns, binaries missing).

ITL_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
. "$ITL_ROOT/scripts/lib/netns.sh"

itl_skip() { echo "$ITL_NAME: SKIP: $*"; exit 77; }
itl_ok() { echo "$ITL_NAME: ok: $*"; }

itl_fail() {
	local f
	echo "$ITL_NAME: FAIL: $*" >&2
	for f in "$ITL_WORK"/*.log; do
		[ -f "$f" ] || continue
		echo "---- $f (tail)" >&2
		tail -n 40 "$f" >&2
	done
	# again last: meson's report keeps only the last 100 lines of a failed test
	echo "$ITL_NAME: FAIL: $*" >&2
	exit 1
}

itl_init() { # NAME BUILD_DIR
	ITL_NAME=$1
	ITL_BUILD=$(cd "$2" 2>/dev/null && pwd) || { echo "$1: no build dir '$2'" >&2; exit 2; }
	ITL_DAEMON="$ITL_BUILD/apps/metaroced/metaroced"
	ITL_MRPERF="$ITL_BUILD/apps/mrperf/mrperf"
	ITL_XFER="$ITL_BUILD/tests/integration/mr_xfer"
	ITL_IDLE_US=${ITL_IDLE_US:-20}
	# RC local ACK timeout code for the apps (IBA 9.7.6.1.3: 4.096 us * 2^N; perftest's 14 is
	# 67 ms). On this shared 2-vCPU VM a daemon is sometimes descheduled for 0.5-7 s (engine
	# stats: stalls, max_gap_us), and 8 timeouts of 67 ms without progress end a QP in
	# RETRY_EXC_ERR although nothing was lost. 18 (1.07 s, 8.6 s in all) rides those out;
	# losses in the middle of a window still recover at once through PSN NAKs.
	ITL_ACK_TIMEOUT=${ITL_ACK_TIMEOUT:-18}
	export MR_XFER_ACK_TIMEOUT=$ITL_ACK_TIMEOUT
	[ "$(id -u)" = 0 ] || itl_skip "needs root (network namespaces)"
	command -v ip >/dev/null || itl_skip "no iproute2"
	for f in "$ITL_DAEMON" "$ITL_MRPERF" "$ITL_XFER"; do
		[ -x "$f" ] || itl_skip "$f not built"
	done
	# Unique per run and per test: tests never share namespaces, sockets or EAL prefixes.
	ITL_TAG="it$$${RANDOM}"
	ITL_WORK=$(mktemp -d "/tmp/mr-it-$ITL_NAME.XXXXXX")
	ITL_PIDS=()
	ITL_T0=$(date +%s%N)
	ip netns add "mr-$ITL_TAG-probe" 2>/dev/null && ip netns del "mr-$ITL_TAG-probe" ||
		itl_skip "cannot create network namespaces"
	trap itl_cleanup EXIT
	trap 'exit 130' INT TERM
}

itl_cleanup() {
	local p rc=$?
	for p in "${ITL_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${ITL_PIDS[@]}"; do
		# A daemon stuck in teardown must not hang the suite.
		for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	mr_netns_down "$ITL_TAG"
	if [ "${ITL_KEEP:-0}" = 1 ]; then
		echo "$ITL_NAME: logs kept in $ITL_WORK"
	else
		rm -rf "$ITL_WORK"
	fi
	echo "$ITL_NAME: finished in $(( ($(date +%s%N) - ITL_T0) / 1000000 )) ms (exit $rc)"
}

itl_netns_up() { # MTU
	ITL_MTU=$1
	mr_netns_up "$ITL_TAG" "$1" || itl_fail "netns setup (mtu $1)"
	local got
	got=$(ip netns exec "mr-$ITL_TAG-a" cat /sys/class/net/mrva/mtu)
	[ "$got" = "$1" ] || itl_fail "veth mtu is $got, wanted $1"
}

itl_daemon_conf() { # N MTU
	local n=$1 mtu=$2 ifc ip lc ncpu
	ncpu=$(nproc)
	if [ "$n" = a ]; then ifc=mrva; ip=198.18.0.1; lc=0
	else ifc=mrvb; ip=198.18.0.2; lc=$((ncpu > 1 ? 1 : 0)); fi
	# The af_packet rings (rx and tx, one size) must absorb every QP's whole window while the
	# peer daemon is descheduled (2 cores, two daemons, busy apps): 64 QPs x max_inflight 64
	# (the daemon's default on af_packet, config.h) = 4096 frames, doubled for ACKs and READ
	# responses: 8192 slots of 2 KiB = 16 MiB per ring. Only what is in flight occupies them,
	# so a bigger ring adds no delay. A slot must hold a whole frame: IB MTU 4096 needs ~4.2 KB,
	# so jumbo MTUs get 8 KiB slots (blocksz a multiple of framesz and of the page size, as
	# the PMD assumes).
	local ring="framecnt=${ITL_FRAMECNT:-8192}"
	[ "$mtu" -gt 1500 ] && ring="blocksz=65536,framesz=8192,framecnt=${ITL_FRAMECNT:-4096}"
	local vdev="net_af_packet0,iface=$ifc,$ring"
	# ITL_LINK=memif: the daemons are joined by net_memif instead (a is the memif server, b
	# the client) over a filesystem socket, which crosses namespaces where the PMD's default
	# abstract socket does not; 4096-slot rings (rsize=12). Jumbo MTUs need buffers that hold
	# a whole frame (bsize; ITL_MEMIF_BSIZE overrides): drivers/dpdk/dpdk_port.c soft_mtu.
	if [ "${ITL_LINK:-veth}" = memif ]; then
		local role=server bs=${ITL_MEMIF_BSIZE:-}
		[ "$n" = b ] && role=client
		[ -n "$bs" ] || { [ "$mtu" -gt 1500 ] && bs=9216; }
		vdev="net_memif0,role=$role,id=0,socket=$ITL_WORK/memif.sock,socket-abstract=no,rsize=12${bs:+,bsize=$bs}"
	fi
	# ITL_LINK=tap: each daemon on net_tap (kernel interface mrtap in its namespace, which
	# itl_tap_bridge joins to the veth); the tap PMD offers the IPv4 checksum offload.
	[ "${ITL_LINK:-veth}" = tap ] && vdev="net_tap0,iface=mrtap"
	cat > "$ITL_WORK/$n.conf" <<CONF
[port]
eal_args = --vdev=$vdev
ipv4 = $ip
mtu = $mtu
[engine]
lcores = $lc
idle_sleep_us = $ITL_IDLE_US
load_sleep_max_us = ${ITL_LOAD_SLEEP:-0}
[shm]
socket = $ITL_WORK/$n.sock
CONF
	# ITL_MAX_INFLIGHT: override the daemon's derived per-QP window (measurements).
	if [ "${ITL_MAX_INFLIGHT:-0}" != 0 ]; then
		printf '[limits]\nmax_inflight = %s\n' "$ITL_MAX_INFLIGHT" >> "$ITL_WORK/$n.conf"
	fi
}

itl_ns() { echo "mr-$ITL_TAG-$1"; }

# ITL_LINK=tap: bridge daemon N's tap interface (created when it started) with its namespace's
# veth end, so that frames cross tap -> bridge -> veth -> bridge -> tap unchanged. The tap PMD
# gives the kernel's interface the port's own MAC, which would make the bridge deliver the
# daemon's unicast frames to the namespace's stack instead of out of the tap: the interface
# gets another (locally administered) address first.
itl_tap_bridge() { # N
	local n=$1 ns veth
	ns=$(itl_ns "$n")
	veth=mrv$n
	ip -n "$ns" link set mrtap address "02:00:00:00:00:0$([ "$n" = a ] && echo 1 || echo 2)" ||
		return 1
	ip -n "$ns" link add mrbr type bridge || return 1
	ip -n "$ns" link set mrbr mtu "$ITL_MTU" up || return 1
	for i in "$veth" mrtap; do
		ip netns exec "$ns" ethtool -K "$i" tx off rx off tso off gso off gro off \
			>/dev/null 2>&1 || true
		ip -n "$ns" link set "$i" master mrbr || return 1
	done
	ip -n "$ns" link set mrtap up
}

# LD_LIBRARY_PATH without metaroce's own libibverbs directory: meson puts it there for tests
# that link the verbs library, and DPDK's mlx5 PMD plugin would then load the stand-in libmlx5
# in the daemon ("Cannot init plugins").
itl_daemon_ldpath() {
	local out= d IFS=:
	for d in ${LD_LIBRARY_PATH:-}; do
		case "$d" in */stack/verbs/lib|*/stack/verbs/lib/) ;; *) out=${out:+$out:}$d ;; esac
	done
	echo "$out"
}

itl_daemon_start() { # N
	local n=$1 p c
	# ITL_DAEMON_ARGS: extra daemon options when debugging (e.g. "--stats-every 1").
	# shellcheck disable=SC2086
	ip netns exec "$(itl_ns "$n")" env LD_LIBRARY_PATH="$(itl_daemon_ldpath)" "$ITL_DAEMON" -c "$ITL_WORK/$n.conf" -v ${ITL_DAEMON_ARGS:-} -- \
		--file-prefix="mrit$ITL_TAG$n" --no-huge -m 256 >> "$ITL_WORK/daemon-$n.log" 2>&1 &
	p=$!
	ITL_PIDS+=("$p")
	eval "ITL_PID_$n=$p"
	local i
	for i in $(seq 1 400); do
		c=$(grep -c "metaroced: ready" "$ITL_WORK/daemon-$n.log" 2>/dev/null)
		if [ "${c:-0}" -gt "$(itl_starts "$n")" ] &&
		   [ -S "$ITL_WORK/$n.sock" ]; then
			eval "ITL_STARTS_$n=\$(( \$(itl_starts $n) + 1 ))"
			return 0
		fi
		if ! kill -0 "$p" 2>/dev/null; then
			itl_forget "$p"
			[ "${ITL_START_NOFAIL:-0}" = 1 ] && return 1
			itl_fail "daemon $n exited during start"
		fi
		sleep 0.05
	done
	itl_fail "daemon $n not ready after 20 s"
}
itl_starts() { eval "echo \${ITL_STARTS_$1:-0}"; }
itl_pid() { eval "echo \${ITL_PID_$1:-}"; }

# Removes PID from the cleanup list (it has been waited for).
itl_forget() {
	local p keep=()
	for p in "${ITL_PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
	ITL_PIDS=("${keep[@]}")
}

itl_wait_pid() { # PID SECONDS
	local p=$1 i rc
	for i in $(seq 1 $(($2 * 20))); do
		kill -0 "$p" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$p" 2>/dev/null; then
		return 124
	fi
	wait "$p"
	rc=$?
	itl_forget "$p"
	return $rc
}

itl_daemon_stop() { # N
	local n=$1 p rc
	p=$(itl_pid "$n")
	kill -TERM "$p" 2>/dev/null
	itl_wait_pid "$p" 20
	rc=$?
	[ "$rc" = 0 ] || itl_fail "daemon $n exited $rc on SIGTERM"
	[ -e "$ITL_WORK/$n.sock" ] && itl_fail "daemon $n left its socket file"
	grep -q "^metaroced final: engine" "$ITL_WORK/daemon-$n.log" || itl_fail "daemon $n: no final stats"
	return 0
}

# Asks daemon N for a stats dump (SIGUSR1) and prints the new lines once the dump is complete
# (its last line is the shm line).
itl_stats() { # N
	local n=$1 log="$ITL_WORK/daemon-$1.log" before i
	before=$(grep -c "^metaroced stats: shm" "$log")
	kill -USR1 "$(itl_pid "$n")" || itl_fail "daemon $n is gone"
	for i in $(seq 1 200); do
		[ "$(grep -c "^metaroced stats: shm" "$log")" -gt "$before" ] && break
		sleep 0.05
	done
	[ "$(grep -c "^metaroced stats: shm" "$log")" -gt "$before" ] ||
		itl_fail "daemon $n printed no stats on SIGUSR1"
	grep "^metaroced stats:" "$log" | tail -n 6
}

itl_stat() { # N KEY: value of KEY=... in the freshest dump
	itl_stats "$1" | grep -o " $2=[0-9]*" | tail -n 1 | cut -d= -f2
}

itl_bg() { # NAME CMD...
	local name=$1
	shift
	"$@" > "$ITL_WORK/$name.log" 2>&1 &
	ITL_BG_PID=$!
	ITL_PIDS+=("$ITL_BG_PID")
}

itl_wait_for() { # SECONDS CMD...
	local s=$1 i
	shift
	for i in $(seq 1 $((s * 20))); do
		"$@" && return 0
		sleep 0.05
	done
	return 1
}

# Runs a pair of mr_xfer processes: target (role b) on daemon B, initiator (role a) on daemon A,
# exchanging QP info in DIR. Extra args go to both. Fails the test unless both exit 0.
itl_xfer_pair() { # NAME TIMEOUT ARGS...
	local name=$1 to=$2 pb pa rca rcb
	shift 2
	mkdir -p "$ITL_WORK/$name"
	itl_bg "$name-b" "$ITL_XFER" --role b --sock "$ITL_WORK/b.sock" --dir "$ITL_WORK/$name" \
		--timeout "$to" "$@"
	pb=$ITL_BG_PID
	itl_bg "$name-a" "$ITL_XFER" --role a --sock "$ITL_WORK/a.sock" --dir "$ITL_WORK/$name" \
		--timeout "$to" "$@"
	pa=$ITL_BG_PID
	itl_wait_pid "$pa" $((to + 10)); rca=$?
	itl_wait_pid "$pb" $((to + 10)); rcb=$?
	sed "s/^/$ITL_NAME: /" "$ITL_WORK/$name-a.log" "$ITL_WORK/$name-b.log" | grep -v "^$ITL_NAME: *$" | grep "PASS\|verified\|RESULT" | head -n 40
	[ "$rca" = 0 ] || itl_fail "$name: initiator exited $rca"
	[ "$rcb" = 0 ] || itl_fail "$name: target exited $rcb"
	grep -q "PASS" "$ITL_WORK/$name-a.log" || itl_fail "$name: initiator did not PASS"
	grep -q "PASS" "$ITL_WORK/$name-b.log" || itl_fail "$name: target did not PASS"
}

# mrperf server on daemon B, client on daemon A, --verify; asserts "0 corrupted" with a non-zero
# byte count on the verifying side and exit 0 on both.
itl_mrperf() { # NAME TEST ARGS...
	local name=$1 t=$2 ps pc rcs rcc port
	shift 2
	ITL_PORT=$(( ${ITL_PORT:-$((20000 + $$ % 20000))} + 1 ))
	port=$ITL_PORT
	itl_bg "$name-srv" timeout 120 "$ITL_MRPERF" "$t" "$@" -u "$ITL_ACK_TIMEOUT" -p "$port" --verify \
		--sock "$ITL_WORK/b.sock"
	ps=$ITL_BG_PID
	itl_bg "$name-cli" timeout 120 "$ITL_MRPERF" "$t" "$@" -u "$ITL_ACK_TIMEOUT" -p "$port" --verify \
		--sock "$ITL_WORK/a.sock" --report_gbits 127.0.0.1
	pc=$ITL_BG_PID
	itl_wait_pid "$pc" 130; rcc=$?
	itl_wait_pid "$ps" 130; rcs=$?
	[ "$rcc" = 0 ] || itl_fail "mrperf $name: client exited $rcc"
	[ "$rcs" = 0 ] || itl_fail "mrperf $name: server exited $rcs"
	grep -q "corrupted" "$ITL_WORK/$name-cli.log" "$ITL_WORK/$name-srv.log" ||
		itl_fail "mrperf $name: no verify line"
	if grep -h "corrupted" "$ITL_WORK/$name-cli.log" "$ITL_WORK/$name-srv.log" |
	   grep -qv " 0 corrupted"; then
		itl_fail "mrperf $name: corrupted bytes reported"
	fi
	grep -q "verified [1-9][0-9]* bytes, 0 corrupted" "$ITL_WORK/$name-cli.log" \
		"$ITL_WORK/$name-srv.log" || itl_fail "mrperf $name: nothing verified"
	itl_ok "mrperf $t $* : $(grep -h "verified" "$ITL_WORK/$name-cli.log" "$ITL_WORK/$name-srv.log" | sed 's/^ *//' | tr '\n' ' ')"
}
