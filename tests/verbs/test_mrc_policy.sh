#!/bin/bash
# SPDX-License-Identifier: MIT
# MetaRoCE for unmodified applications, chosen by the daemons' [metaroce] peers policy
# (apps/metaroced/mrc_policy.h): two metaroced over veth, each dropping 1% of what it sends
# (--impair-tx, seeded), daemon A recording its frames. The same application command lines run
# twice in this one test:
#   phase rc:  both daemons list a network that is NOT the peer's (198.19.0.0/16): the QPs must
#              stay plain RoCE v2 RC: no MetaRoCE opcode in A's capture (mrpcap dump), one UDP
#              source port per QP, metaroce_by_policy = 0 on both daemons;
#   phase mrc: both daemons list each other (198.18.0.0/24): every QP must become MetaRoCE by
#              policy (metaroce_by_policy = QPs created, on both daemons), the capture holds
#              MetaRoCE opcodes (0xC0 | RC) and no RC data/ACK opcode, data sprayed over several
#              source ports, selective retransmissions > 0;
# and for each of WRITE, SEND and READ bandwidth, MetaRoCE's goodput (the client's perftest
# "BW average") must be at least MIN_RATIO (2) times plain RoCE's, measured in this run.
# TOOLS = stock: Debian's /usr/bin/ib_{write,send,read}_bw through metaroce-run on the verbs
#                library (the application is not changed and passes no MetaRoCE option);
#         mrperf: mrperf without --metaroce (an mrc_* app that names no transport): the same
#                daemon policy, without the verbs library.
# Both phases run perftest's -u 16 (local ACK timeout 4.096 us * 2^16 = 268 ms, IBA 9.7.6.1.3)
# instead of its default 14 (67 ms): on this shared 2-core host the daemons are descheduled for
# hundreds of ms, and 8 such stalls in a row end a plain RC QP in RETRY_EXC_ERR at 1% loss
# (seen: ib_send_bw, 46 timeouts in 18 s), which would leave no baseline to compare against.
# It is a stock option, the same on both phases and both ends (MR_POLICY_ACK_TIMEOUT=N).
# Exit 0 pass, 1 fail, 77 skip (not root, no netns, stock tools not installed).
# Usage: test_mrc_policy.sh BUILD_DIR [stock|mrperf]   (ITL_KEEP=1 keeps the logs;
#        MR_POLICY_ITERS=N messages of 64 KiB per run, default 400; MR_POLICY_MIN_RATIO=R)
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../integration/lib.sh"
tools=${2:-stock}
itl_init "verbs_mrc_policy_$tools" "$1"
run="$ITL_BUILD/apps/metaroce-run/metaroce-run"
mrpcap="$ITL_BUILD/apps/mrpcap/mrpcap"
iters=${MR_POLICY_ITERS:-400}
min_ratio=${MR_POLICY_MIN_RATIO:-2}
ack_timeout=${MR_POLICY_ACK_TIMEOUT:-16}
case "$tools" in
stock)
	for t in ib_write_bw ib_send_bw ib_read_bw; do
		[ -x "/usr/bin/$t" ] || itl_skip "/usr/bin/$t missing (Debian package perftest)"
	done
	[ -x "$run" ] || itl_fail "launcher $run not built" ;;
mrperf) ;;
*) echo "usage: $0 BUILD_DIR [stock|mrperf]" >&2; exit 2 ;;
esac
[ -x "$mrpcap" ] || itl_fail "$mrpcap not built"
. "$ITL_ROOT/scripts/lib/perf_check.sh"
[ -x "$run" ] && mr_strip_verbs_dir "$("$run" --print-dir)"

itl_netns_up 1500

# start PHASE PEERS: both daemons with 1% seeded tx loss and the given policy; A records.
start() {
	local ph=$1 peers=$2 n seed
	for n in a b; do
		itl_daemon_conf "$n" 1500
		printf '[metaroce]\npeers = %s\nentropies = 8\n' "$peers" >> "$ITL_WORK/$n.conf"
		seed=$([ "$n" = a ] && echo 31 || echo 32)
		ITL_DAEMON_ARGS="--impair-tx loss=0.01,seed=$seed --stats-json $ITL_WORK/$ph-$n.json"
		[ "$n" = a ] && ITL_DAEMON_ARGS="$ITL_DAEMON_ARGS --pcap $ITL_WORK/$ph.pcap"
		itl_daemon_start "$n"
	done
	ITL_DAEMON_ARGS=
}

listening() { ss -ltnH "sport = :$1" 2>/dev/null | grep -q .; }
port=$((20000 + $$ % 20000))
# bw PHASE TEST: one server (daemon B) / client (daemon A) pair; prints the client's Gb/s.
bw() {
	local ph=$1 t=$2 name="$1-$2" ps pc rcs rcc cmd fig
	port=$((port + 1))
	if [ "$tools" = stock ]; then
		cmd=("/usr/bin/ib_$t" -d metaroce0 -x 1 -F --report_gbits -s 65536 -n "$iters" -p "$port"
			-u "$ack_timeout")
		itl_bg "$name-srv" timeout 150 "$run" --sock "$ITL_WORK/b.sock" "${cmd[@]}"
		ps=$ITL_BG_PID
		# perftest's client gives up at once if the server is not listening yet.
		itl_wait_for 20 listening "$port" || itl_fail "$name: server never listened on $port"
		itl_bg "$name-cli" timeout 150 "$run" --sock "$ITL_WORK/a.sock" "${cmd[@]}" 127.0.0.1
	else
		cmd=("$ITL_MRPERF" "$t" -s 65536 -n "$iters" --report_gbits -p "$port" -u "$ack_timeout")
		itl_bg "$name-srv" timeout 150 "${cmd[@]}" --sock "$ITL_WORK/b.sock"
		ps=$ITL_BG_PID
		itl_wait_for 20 listening "$port" || itl_fail "$name: server never listened on $port"
		itl_bg "$name-cli" timeout 150 "${cmd[@]}" --sock "$ITL_WORK/a.sock" 127.0.0.1
	fi
	pc=$ITL_BG_PID
	itl_wait_pid "$pc" 160; rcc=$?
	itl_wait_pid "$ps" 160; rcs=$?
	[ "$rcc" = 0 ] && [ "$rcs" = 0 ] ||
		itl_fail "$name: exit client=$rcc server=$rcs: $(tail -n 3 "$ITL_WORK/$name-cli.log") / $(tail -n 3 "$ITL_WORK/$name-srv.log")"
	fig=$(mr_perf_check "$ITL_WORK/$name-cli.log" bw 65536 "$iters" 1024) ||
		itl_fail "$name client: $fig"
	echo "${fig%Gb/s}"
}

# pcap_summary PHASE -> "MRC_FRAMES RC_FRAMES MAX_SOURCE_PORTS_OF_ONE_QP_DIRECTION"
pcap_summary() {
	"$mrpcap" dump "$ITL_WORK/$1.pcap" > "$ITL_WORK/$1.dump" 2>&1 || itl_fail "$1: mrpcap dump failed"
	python3 - "$ITL_WORK/$1.dump" <<'PY'
import re, sys
mrc = rc = 0
sports = {}
for line in open(sys.argv[1]):
    m = re.match(r"\d+ (\S+) -> (\S+) sport=(\d+) (\S+) qpn=(\S+)", line)
    if not m:
        continue
    src, dst, sport, op, qpn = m.groups()
    if op.startswith("MRC_"):  # mrpcap's names for the 0xC0 | RC opcodes
        mrc += 1
    else:
        rc += 1
    sports.setdefault((src, dst, qpn), set()).add(int(sport))
print(mrc, rc, max((len(s) for s in sports.values()), default=0))
PY
}

# jstat PHASE PATH: sum over both daemons' final --stats-json of a dotted key
jstat() {
	python3 - "$ITL_WORK/$1-a.json" "$ITL_WORK/$1-b.json" "$2" <<'PY'
import json, sys
t = 0
for p in sys.argv[1:3]:
    v = json.load(open(p))
    for k in sys.argv[3].split("."):
        v = v[k]
    t += int(v)
print(t)
PY
}

declare -A gbps
for ph in rc mrc; do
	if [ "$ph" = rc ]; then start rc "198.19.0.0/16, 2001:2:1::/48"
	else start mrc "198.18.0.0/24"; fi
	for t in write_bw send_bw read_bw; do
		gbps[$ph-$t]=$(bw "$ph" "$t") || exit 1
		itl_ok "$ph $t: ${gbps[$ph-$t]} Gb/s at 1% loss"
	done
	itl_daemon_stop a
	itl_daemon_stop b
	read -r mrc rc sports <<< "$(pcap_summary "$ph")"
	up=$(jstat "$ph" transport.metaroce_by_policy)
	qps=$(python3 -c 'import json,sys; print(sum(s["qps_created"] for p in sys.argv[1:] for s in json.load(open(p))["shards"]))' \
		"$ITL_WORK/$ph-a.json" "$ITL_WORK/$ph-b.json")
	sack=$(jstat "$ph" transport.sum.sack_retransmits)
	gbn=$(jstat "$ph" transport.sum.retransmits)
	echo "$ITL_NAME: $ph: capture $mrc MetaRoCE + $rc RC frames, <= $sports source ports per QP and direction;" \
		"QPs $qps, by policy $up; retransmits go-back-N $gbn, selective $sack"
	if [ "$ph" = rc ]; then
		[ "$mrc" = 0 ] || itl_fail "rc: $mrc MetaRoCE frames toward a peer the policy does not list"
		[ "$rc" -gt 1000 ] || itl_fail "rc: only $rc RC frames captured"
		[ "$up" = 0 ] || itl_fail "rc: $up QPs upgraded toward an unlisted peer"
		[ "$sports" = 1 ] || itl_fail "rc: plain RC used $sports source ports for one QP (A17.3.3: one per flow)"
		itl_ok "unlisted peer: plain RoCE v2 RC only (0 MetaRoCE frames, 0 QPs upgraded)"
	else
		[ "$mrc" -gt 1000 ] || itl_fail "mrc: only $mrc MetaRoCE frames captured"
		[ "$rc" = 0 ] || itl_fail "mrc: $rc plain RC frames on MetaRoCE connections"
		[ "$qps" -gt 0 ] && [ "$up" = "$qps" ] || itl_fail "mrc: $up of $qps QPs made MetaRoCE by policy"
		[ "$sports" -ge 4 ] || itl_fail "mrc: sprayed over only $sports source ports (want >= 4 of 8)"
		[ "$sack" -gt 0 ] || itl_fail "mrc: no selective retransmission at 1% loss"
		itl_ok "listed peers: every QP MetaRoCE by policy ($up), no RC frame"
	fi
done

bad=0
for t in write_bw send_bw read_bw; do
	r=$(awk -v m="${gbps[mrc-$t]}" -v p="${gbps[rc-$t]}" 'BEGIN { if (p > 0) printf "%.2f", m / p; else print "inf" }')
	echo "$ITL_NAME: 1% loss, $t: MetaRoCE ${gbps[mrc-$t]} Gb/s vs RoCE ${gbps[rc-$t]} Gb/s = ${r}x (want >= ${min_ratio}x)"
	awk -v r="$r" -v m="$min_ratio" 'BEGIN { exit !(r == "inf" || r + 0 >= m + 0) }' || bad=1
done
[ "$bad" = 0 ] || itl_fail "MetaRoCE goodput below ${min_ratio}x plain RoCE's at 1% loss"
itl_ok "MetaRoCE by daemon policy: >= ${min_ratio}x plain RoCE's goodput for write/send/read at 1% loss"
