#!/bin/bash
# SPDX-License-Identifier: MIT
# The embedded engine (apps/metaroced/embed.c, $METAROCE_ENGINE): each app process runs the
# daemon inside itself, its own thread driving the engine whenever it polls. Two embedded
# mrperf processes joined by net_memif (b the memif server, started first and waiting for its
# link; a the client), with every byte checked: write/read/send --verify, write_lat (the
# receiver waits on memory: mrc_progress), send_lat -e (the apps sleep on completion events,
# so the module's helper thread serves the engine), and the mr_xfer matrix (4 QPs, every
# operation). Then an embedded app against an ordinary daemon, the app's stdout free of the
# daemon's messages, and three refusals that must name their cause: a configuration error
# (the field), a missing engine module, and two engine lcores.
# Usage: test_embed.sh BUILD_DIR
set -u
. "$(dirname "$0")/lib.sh"
itl_init embed "$1"
MODULE="$ITL_BUILD/apps/metaroced/libmetaroce-engine.so"
[ -f "$MODULE" ] || itl_skip "$MODULE not built"
LDP=$(itl_daemon_ldpath) # DPDK's plugins must not meet metaroce's libibverbs (lib.sh)

conf() { # N ROLE IP LCORES
	cat > "$ITL_WORK/$1.conf" <<CONF
[port]
eal_args = --vdev=net_memif0,role=$2,id=0,socket=$ITL_WORK/memif.sock,socket-abstract=no,rsize=12
ipv4 = $3
mtu = 1500
[engine]
lcores = $4
idle_sleep_us = 20
[shm]
socket = $ITL_WORK/$1.sock
CONF
}
ncpu=$(nproc)
conf b server 198.18.0.2 $((ncpu > 1 ? 1 : 0))
conf a client 198.18.0.1 0
engine() { # N: the METAROCE_ENGINE value for side N
	echo "-c $ITL_WORK/$1.conf -- --file-prefix=mrit${ITL_TAG}e$1 --no-huge -m 256"
}
# emb NAME SIDE CMD...: CMD with side SIDE's engine embedded, stdout and stderr apart.
emb() {
	local name=$1 side=$2
	shift 2
	env LD_LIBRARY_PATH="$LDP" METAROCE_ENGINE_MODULE="$MODULE" \
		METAROCE_ENGINE="$(engine "$side")" "$@" > "$ITL_WORK/$name.log" \
		2> "$ITL_WORK/$name.err" &
	ITL_BG_PID=$!
	ITL_PIDS+=("$ITL_BG_PID")
}
# An embedded engine ends without closing its port (mrd_finish), so b's memif socket file
# outlives it. A memif client that meets that stale file before the next server replaced it is
# refused and does not try again (DPDK 22.11 net_memif): its link stays down. So the file goes
# before each server starts, and each client waits until the new server has made it.
memif_server_gone() { rm -f "$ITL_WORK/memif.sock"; }
# pair NAME TEST ARGS...: mrperf server embedded on b, client embedded on a (CLI_SOCK set: the
# client goes through that daemon instead, started by $BEFORE_CLIENT once b's memif socket is
# there); asserts exit 0, a result and, with --verify, verified bytes and none corrupted.
pair() {
	local name=$1 t=$2 ps pc rcs rcc
	shift 2
	ITL_PORT=$(( ${ITL_PORT:-$((20000 + $$ % 20000))} + 1 ))
	memif_server_gone
	emb "$name-srv" b timeout 120 "$ITL_MRPERF" "$t" "$@" -u "$ITL_ACK_TIMEOUT" -p "$ITL_PORT"
	ps=$ITL_BG_PID
	itl_wait_for 20 test -S "$ITL_WORK/memif.sock" || itl_fail "$name: no memif socket"
	if [ -n "${CLI_SOCK:-}" ]; then
		$BEFORE_CLIENT
		itl_bg "$name-cli" timeout 120 "$ITL_MRPERF" "$t" "$@" -u "$ITL_ACK_TIMEOUT" \
			-p "$ITL_PORT" --sock "$CLI_SOCK" 127.0.0.1
	else
		emb "$name-cli" a timeout 120 "$ITL_MRPERF" "$t" "$@" -u "$ITL_ACK_TIMEOUT" \
			-p "$ITL_PORT" 127.0.0.1
	fi
	pc=$ITL_BG_PID
	itl_wait_pid "$pc" 130; rcc=$?
	itl_wait_pid "$ps" 130; rcs=$?
	[ "$rcc" = 0 ] || itl_fail "$name: client exited $rcc"
	[ "$rcs" = 0 ] || itl_fail "$name: server exited $rcs"
	grep -q "^ *[0-9]" "$ITL_WORK/$name-cli.log" || itl_fail "$name: no result line"
	if [[ " $* " == *" --verify "* ]]; then
		grep -q "verified [1-9][0-9]* bytes, 0 corrupted" "$ITL_WORK/$name-cli.log" \
			"$ITL_WORK/$name-srv.log" || itl_fail "$name: nothing verified"
		grep -h "corrupted" "$ITL_WORK/$name-cli.log" "$ITL_WORK/$name-srv.log" |
			grep -qv " 0 corrupted" && itl_fail "$name: corrupted bytes reported"
	fi
	itl_ok "$name: mrperf $t $*: $(grep -h "verified" "$ITL_WORK/$name-cli.log" \
		"$ITL_WORK/$name-srv.log" | sed 's/^ *//' | tr '\n' ' ')$(grep -A1 "#bytes" \
		"$ITL_WORK/$name-cli.log" | tail -1 | tr -s ' \t' ' ')"
}

pair write_bw write_bw -s 65536 -n 2000 --verify
# The engine ran inside the apps: its start and final counters are on their stderr, never on
# the stdout that carries perftest's report.
for s in srv cli; do
	grep -q "metaroced: ready (.*embedded)" "$ITL_WORK/write_bw-$s.err" ||
		itl_fail "write_bw-$s: no embedded engine start on stderr"
	grep -q "^metaroced final: engine iterations=[1-9]" "$ITL_WORK/write_bw-$s.err" ||
		itl_fail "write_bw-$s: no final engine counters on stderr"
	grep -q "metaroced" "$ITL_WORK/write_bw-$s.log" &&
		itl_fail "write_bw-$s: the daemon wrote on the app's stdout"
done
itl_ok "both engines ran in their apps (stderr), stdout holds only mrperf's report"
pair read_bw read_bw -s 65536 -n 1000 --verify
pair send_bw send_bw -s 4096 -n 5000 --verify
pair write_lat write_lat -s 8 -n 5000
pair send_lat_ev send_lat -s 8 -n 1000 -e

mkdir -p "$ITL_WORK/xfer"
memif_server_gone
emb xfer-b b "$ITL_XFER" --role b --sock /nonexistent --dir "$ITL_WORK/xfer" --timeout 120 --qps 4 \
	--sizes 1,4096,65537,1M --iters 2
pb=$ITL_BG_PID
itl_wait_for 20 test -S "$ITL_WORK/memif.sock" || itl_fail "xfer: no memif socket"
emb xfer-a a "$ITL_XFER" --role a --sock /nonexistent --dir "$ITL_WORK/xfer" --timeout 120 --qps 4 \
	--sizes 1,4096,65537,1M --iters 2
pa=$ITL_BG_PID
itl_wait_pid "$pa" 130 || itl_fail "mr_xfer initiator failed"
itl_wait_pid "$pb" 130 || itl_fail "mr_xfer target failed"
grep -q PASS "$ITL_WORK/xfer-a.log" && grep -q PASS "$ITL_WORK/xfer-b.log" ||
	itl_fail "mr_xfer did not PASS on both sides"
itl_ok "mr_xfer (4 QPs, every operation, 1 B .. 1 MiB) between two embedded engines"

# An embedded app against an ordinary daemon (a as a metaroced process, the memif client,
# started once the embedded server's memif socket exists; the memif link then stays up).
daemon_a() {
	[ -n "${DA:-}" ] && return 0
	rm -f "$ITL_WORK/a.sock"
	env LD_LIBRARY_PATH="$LDP" "$ITL_DAEMON" -c "$ITL_WORK/a.conf" -v -- \
		--file-prefix="mrit${ITL_TAG}da" --no-huge -m 256 > "$ITL_WORK/daemon-a.log" 2>&1 &
	DA=$!
	ITL_PIDS+=("$DA")
	itl_wait_for 20 test -S "$ITL_WORK/a.sock" || itl_fail "daemon a did not start"
	# Its link comes up when it has connected to the embedded server's memif (followed every
	# 100 ms): a client started before that finds the port down.
	itl_wait_for 20 grep -qE "port 0 up=1|port 0: link up" "$ITL_WORK/daemon-a.log" ||
		itl_fail "daemon a's memif link did not come up"
}
DA=
CLI_SOCK="$ITL_WORK/a.sock" BEFORE_CLIENT=daemon_a pair mixed write_bw -s 65536 -n 1000 --verify
kill -TERM "$DA"
itl_wait_pid "$DA" 20 || itl_fail "daemon a did not stop cleanly"
grep -q "^metaroced final: .*rx_roce=[1-9]" "$ITL_WORK/daemon-a.log" ||
	itl_fail "daemon a carried no RoCE frame"
itl_ok "embedded server against a metaroced process: verified, the daemon stopped cleanly"

# Refusals, each naming its cause, none leaving a process behind.
printf '[engine]\nlcores = zero\n' > "$ITL_WORK/bad.conf"
out=$(env LD_LIBRARY_PATH="$LDP" METAROCE_ENGINE_MODULE="$MODULE" \
	METAROCE_ENGINE="-c $ITL_WORK/bad.conf" timeout 30 "$ITL_MRPERF" write_bw 2>&1)
rc=$?
[ "$rc" != 0 ] && [ "$rc" != 124 ] || itl_fail "bad config: exit $rc"
echo "$out" | grep -q "lcores" || itl_fail "bad config: the field is not named: $out"
itl_ok "bad config refused: $(echo "$out" | grep -m1 lcores)"
out=$(env METAROCE_ENGINE_MODULE="$ITL_WORK/none.so" METAROCE_ENGINE="$(engine a)" \
	timeout 30 "$ITL_MRPERF" write_bw 2>&1)
rc=$?
[ "$rc" != 0 ] && [ "$rc" != 124 ] || itl_fail "missing module: exit $rc"
echo "$out" | grep -q "cannot load the engine module $ITL_WORK/none.so" ||
	itl_fail "missing module not named: $out"
itl_ok "missing module refused: $(echo "$out" | grep -m1 "cannot load")"
sed 's/^lcores = .*/lcores = 0,1/' "$ITL_WORK/a.conf" > "$ITL_WORK/two.conf"
out=$(env LD_LIBRARY_PATH="$LDP" METAROCE_ENGINE_MODULE="$MODULE" \
	METAROCE_ENGINE="-c $ITL_WORK/two.conf" timeout 30 "$ITL_MRPERF" write_bw 2>&1)
rc=$?
[ "$rc" != 0 ] && [ "$rc" != 124 ] || itl_fail "two lcores: exit $rc"
echo "$out" | grep -q "an embedded engine runs one shard" || itl_fail "two lcores: $out"
itl_ok "two engine lcores refused: $(echo "$out" | grep -m1 "one shard")"
echo "$ITL_NAME: PASS"
