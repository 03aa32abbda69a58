#!/bin/bash
# SPDX-License-Identifier: MIT
# Soak: two metaroced daemons over veth (tests/integration/lib.sh) with the daemons' own
# impairment stage on both transmit paths (seeded random loss, reordering, duplication), and for
# SECONDS (default 120; 1800 by hand) a churning mix of apps, each verifying its own bytes:
#   xfer    mr_xfer pairs, 2 QPs, every operation 1 B .. 1 MiB, plain RC; a new generation
#           (new session, PD, buffers, MRs, CQ, QPs; destroyed at its end) after another;
#   manyqp  mr_xfer pairs with 12 QPs (WRITE/SEND/READ 64 KiB);
#   victim  mr_xfer streaming 16 x 64 KiB WRITEs per QP, SIGKILLed after 1-3 s, restarted;
#   mrperf  in turn: send_bw --metaroce --verify (4 QPs, 8 KiB), write_bw --metaroce -D 5
#           --verify (4 QPs): MetaRoCE under the same impairment; write_bw -q 8 -D 5 --verify
#           over plain RC;
#   hostile mr_hostile churn: QPs destroyed with WRITEs posted, apps SIGKILLed with WRITEs and
#           READs in flight, MRs deregistered and buffers unmapped with WRITEs/READs in flight
#           (SOAK_NO_DEREG=1 leaves the dereg cases out; docs/findings.md F1-F3 is why they exist).
# Asserted at the end (after every app has exited):
#   - zero corrupted bytes: every mr_xfer generation that was not killed passed (any failure of
#     a verifying app fails the soak), every mrperf run printed "0 corrupted";
#   - nothing leaked: sessions 0 and opened == closed, QPs 0 (live and per shard), no frames
#     held for ARP or queued in the impairment stages (--stats-json), no tx mbuf shortage,
#     no transport QP/PD/MR/CQ/SRQ left and no mbuf in use at exit ("objects");
#   - the daemon's RSS at the end is within SOAK_RSS_TOL_KB (default 32 MiB) of its RSS after
#     the warm-up (a quarter of the run, at most 120 s), when the load was already at its peak:
#     the pools (DPDK heap of -m 256, af_packet rings, impairment queue) are touched by then, so
#     growth after it is what the churn left behind. 32 MiB is 8x the largest warm-up-to-end
#     difference measured here (-4 MiB: freed memory going back); ~250 QP lifecycles per daemon
#     in 120 s mean a leak of >= 128 KiB per QP (a WQE array, a ring mapping) fails it, and a
#     30-minute run (~4000 QPs) catches 8 KiB per QP.
#     Under ASan the check is skipped (its quarantine holds freed memory by design); its leak
#     report at exit fails the clean-stop check instead;
#   - the impairment really dropped, reordered and duplicated frames, and both transports
#     retransmitted;
#   - both daemons stop cleanly (exit 0).
# Counts the daemons do not export yet (mbufs in use, live MRs/PDs/CQs, mapped bytes) are listed
# in docs/reliability.md for the lead.
# Usage: soak.sh BUILD_DIR [SECONDS]
set -u
. "$(dirname "$0")/../integration/lib.sh"
dur=${2:-120}
itl_init soak "$1"
HOSTILE="$ITL_BUILD/tests/hostile_app/mr_hostile"
[ -x "$HOSTILE" ] || itl_skip "$HOSTILE not built"
export METAROCE_TIMEOUT_MS=${METAROCE_TIMEOUT_MS:-10000}
py=/usr/bin/python3
[ -x "$py" ] || itl_skip "no python3"
warm=$((dur / 4 < 120 ? dur / 4 : 120))
tol_kb=${SOAK_RSS_TOL_KB:-32768}

soak_cleanup() {
	local rc=$? f p
	touch "$ITL_WORK/stop" 2>/dev/null
	for f in "$ITL_WORK"/*.pids; do
		[ -f "$f" ] || continue
		for p in $(cat "$f"); do kill -KILL "$p" 2>/dev/null; done
	done
	(exit $rc)
	itl_cleanup
}
trap soak_cleanup EXIT

itl_netns_up 1500
# Seeded, so a failing run can be repeated; loss + reordering + duplication on both directions.
imp=${SOAK_IMPAIR:-loss=0.003,reorder=0.005:40us,dup=0.003}
for n in a b; do
	itl_daemon_conf $n 1500
	ITL_DAEMON_ARGS="--stats-json $ITL_WORK/$n.json --impair-tx $imp,seed=$([ $n = a ] && echo 31 || echo 32)" \
		itl_daemon_start $n
done
stopped() { [ -e "$ITL_WORK/stop" ]; }
log_line() { echo "$*" >> "$ITL_WORK/results.txt"; }
: > "$ITL_WORK/results.txt"

# CORRUPT: a verifying app saw wrong bytes or values (mr_xfer's byte/value/length checks,
# mrperf's non-zero "corrupted"); ERROR: it failed otherwise (an error completion, a timeout).
classify() { # LOG
	if grep -q "is 0x[0-9a-f]*, expected\|byte after the message\|returned 0x\|atomic word is\|doorbell says\|byte_len [0-9]*, expected\|READ byte_len\|[1-9][0-9]* corrupted" "$1"; then
		echo CORRUPT
	else
		echo ERROR
	fi
}

# One mr_xfer generation: target on B, initiator on A; records PASS/FAIL.
xfer_gen() { # LOOP GEN ARGS...
	local name=$1 g=$2 pa pb rca rcb
	shift 2
	mkdir -p "$ITL_WORK/$name"
	"$ITL_XFER" --role b --sock "$ITL_WORK/b.sock" --dir "$ITL_WORK/$name" --gen "$g" \
		--timeout 90 "$@" > "$ITL_WORK/$name.b.out" 2>&1 &
	pb=$!
	"$ITL_XFER" --role a --sock "$ITL_WORK/a.sock" --dir "$ITL_WORK/$name" --gen "$g" \
		--timeout 90 "$@" > "$ITL_WORK/$name.a.out" 2>&1 &
	pa=$!
	echo "$pa $pb" > "$ITL_WORK/$name.pids"
	wait $pa; rca=$?
	wait $pb; rcb=$?
	if [ $rca = 0 ] && [ $rcb = 0 ]; then
		log_line "$name gen $g PASS $(grep -ho "[0-9]* bytes verified" "$ITL_WORK/$name.a.out" "$ITL_WORK/$name.b.out" | awk '{s += $1} END {print s}') bytes"
	else
		cat "$ITL_WORK/$name.a.out" "$ITL_WORK/$name.b.out" > "$ITL_WORK/$name-fail-$g.log"
		log_line "$name gen $g FAIL $(classify "$ITL_WORK/$name-fail-$g.log") initiator=$rca target=$rcb"
	fi
}

xfer_loop() { # NAME ARGS...
	local name=$1 g=1
	shift
	while ! stopped; do xfer_gen "$name" $g "$@"; g=$((g + 1)); done
}

# A streaming initiator killed with SIGKILL mid-transfer; its target is then stopped too.
victim_loop() {
	local g=1 pa pb
	mkdir -p "$ITL_WORK/victim"
	while ! stopped; do
		"$ITL_XFER" --role b --sock "$ITL_WORK/b.sock" --dir "$ITL_WORK/victim" --gen $g \
			--qps 4 --sizes 65536 --ops write --timeout 90 > "$ITL_WORK/victim.b.out" 2>&1 &
		pb=$!
		"$ITL_XFER" --role a --sock "$ITL_WORK/a.sock" --dir "$ITL_WORK/victim" --gen $g \
			--qps 4 --sizes 65536 --ops write --stream 60 --timeout 90 \
			> "$ITL_WORK/victim.a.out" 2>&1 &
		pa=$!
		echo "$pa $pb" > "$ITL_WORK/victim.pids"
		itl_wait_for 60 grep -q "stream: [1-9][0-9]* completed" "$ITL_WORK/victim.a.out"
		sleep $((1 + g % 3))
		if kill -KILL "$pa" 2>/dev/null; then
			log_line "victim gen $g KILLED after $(grep -o "stream: [0-9]* completed" "$ITL_WORK/victim.a.out" | tail -n 1 | cut -d' ' -f2) WRITEs"
		else
			log_line "victim gen $g FAIL: exited before the kill: $(tail -n 1 "$ITL_WORK/victim.a.out")"
		fi
		wait $pa 2>/dev/null
		kill -TERM "$pb" 2>/dev/null
		wait $pb 2>/dev/null
		g=$((g + 1))
	done
}

# mrperf server on B, client on A; records the verify line or the failure.
mrperf_run() { # NAME PORT I TEST ARGS...
	local name=$1 port=$2 i=$3 t=$4 ps pc rcs rcc
	shift 4
	{
		"$ITL_MRPERF" "$t" "$@" -u "$ITL_ACK_TIMEOUT" -p $port --verify --sock "$ITL_WORK/b.sock" \
			> "$ITL_WORK/$name.srv.out" 2>&1 &
		ps=$!
		sleep 0.3
		"$ITL_MRPERF" "$t" "$@" -u "$ITL_ACK_TIMEOUT" -p $port --verify --sock "$ITL_WORK/a.sock" \
			127.0.0.1 > "$ITL_WORK/$name.cli.out" 2>&1 &
		pc=$!
		echo "$pc $ps" > "$ITL_WORK/$name.pids"
		itl_wait_pid_quiet $pc 150; rcc=$?
		itl_wait_pid_quiet $ps 30; rcs=$?
		if [ $rcc = 0 ] && [ $rcs = 0 ] &&
		   ! grep -h "corrupted" "$ITL_WORK/$name.cli.out" "$ITL_WORK/$name.srv.out" | grep -qv " 0 corrupted" &&
		   grep -q "verified [1-9][0-9]* bytes, 0 corrupted" "$ITL_WORK/$name.cli.out" "$ITL_WORK/$name.srv.out"; then
			log_line "$name run $i PASS $(grep -ho "verified [0-9]* bytes" "$ITL_WORK/$name.cli.out" "$ITL_WORK/$name.srv.out" | awk '{s += $2} END {print s}') bytes $(grep -ho "Transport: MetaRoCE" "$ITL_WORK/$name.cli.out" | head -n 1)"
		else
			cat "$ITL_WORK/$name.cli.out" "$ITL_WORK/$name.srv.out" > "$ITL_WORK/$name-fail-$i.log"
			log_line "$name run $i FAIL $(classify "$ITL_WORK/$name-fail-$i.log") client=$rcc server=$rcs"
		fi
	}
}

# One mrperf pair at a time (two cores): MetaRoCE SEND and WRITE, plain RC WRITE, in turn.
mrperf_loop() {
	local i=0
	while ! stopped; do
		case $((i % 3)) in
		0) mrperf_run meta_send $((30000 + i % 900)) $i send_bw --metaroce -q 4 -s 8192 -n 2000 ;;
		1) mrperf_run meta_write $((30000 + i % 900)) $i write_bw --metaroce -q 4 -s 65536 -D 5 ;;
		2) mrperf_run rc_write $((30000 + i % 900)) $i write_bw -q 8 -s 16384 -D 5 ;;
		esac
		i=$((i + 1))
	done
}

# Waits for PID (a child of this loop's shell) with a deadline, killing it when late.
itl_wait_pid_quiet() { # PID SECONDS
	local i
	for i in $(seq 1 $(($2 * 10))); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null
	wait "$1"
}

hostile_loop() {
	local i=0 cases=(destroy_qp_inflight crash_midflight)
	[ "${SOAK_NO_DEREG:-0}" = 1 ] ||
		cases+=(dereg_inflight_write dereg_inflight_remote dereg_inflight_read)
	while ! stopped; do
		local c=${cases[$((i % ${#cases[@]}))]}
		timeout 240 "$HOSTILE" --sock-a "$ITL_WORK/a.sock" --sock-b "$ITL_WORK/b.sock" \
			--timeout 60 "$c" > "$ITL_WORK/hostile.out" 2>&1 &
		echo "$!" > "$ITL_WORK/hostile.pids"
		if wait $!; then
			log_line "hostile $i $c PASS"
		else
			log_line "hostile $i $c FAIL"
			cp "$ITL_WORK/hostile.out" "$ITL_WORK/hostile-fail-$i.log"
		fi
		i=$((i + 1))
		sleep 3
	done
}

loops=()
# Five loops at once is what two shared cores carry without multi-second engine stalls (seven
# left daemons descheduled for 5-8 s and apps timing out, measured).
xfer_loop xfer --qps 2 --sizes 1,4097,65536,1M & loops+=($!)
xfer_loop manyqp --qps 12 --sizes 65536 --ops write,send,read & loops+=($!)
victim_loop & loops+=($!)
mrperf_loop & loops+=($!)
hostile_loop & loops+=($!)
ITL_PIDS+=("${loops[@]}")
echo "$ITL_NAME: ${#loops[@]} app loops running for $dur s (warm-up $warm s), impairment $imp"

sleep "$warm"
for n in a b; do
	kill -0 "$(itl_pid $n)" 2>/dev/null || itl_fail "daemon $n died during the warm-up"
	eval "rss0_$n=$(awk '/^VmRSS/ {print $2}' /proc/"$(itl_pid $n)"/status)"
done
echo "$ITL_NAME: after warm-up: RSS a $rss0_a kB, b $rss0_b kB; $(grep -c PASS "$ITL_WORK/results.txt") runs passed so far"
end=$(( $(date +%s) + dur - warm ))
while [ "$(date +%s)" -lt "$end" ]; do
	for n in a b; do
		kill -0 "$(itl_pid $n)" 2>/dev/null && continue
		touch "$ITL_WORK/stop"
		grep -h -A 30 "ERROR: AddressSanitizer\|runtime error\|SEGV" "$ITL_WORK/daemon-$n.log" | head -n 40
		itl_fail "daemon $n died during the soak ($(grep -c PASS "$ITL_WORK/results.txt") runs had passed; last: $(tail -n 3 "$ITL_WORK/results.txt" | tr '\n' ' '))"
	done
	sleep 2
done
touch "$ITL_WORK/stop"
echo "$ITL_NAME: load stopped after $dur s; waiting for the apps' last runs"
for p in "${loops[@]}"; do
	itl_wait_pid "$p" 240 || itl_fail "an app loop (pid $p) did not finish"
done

# Nothing left once every app is gone.
idle() {
	local n s q
	for n in a b; do
		st=$(itl_stats $n)
		s=$(echo "$st" | grep -o " sessions=[0-9]*" | tail -n 1 | cut -d= -f2)
		q=$(echo "$st" | grep -o " qps=[0-9]*" | tail -n 1 | cut -d= -f2)
		[ "$s" = 0 ] && [ "$q" = 0 ] || return 1
	done
}
itl_wait_for 30 idle || itl_fail "sessions or QPs left after every app exited: $(echo "$st" | grep -o " sessions=[0-9]*\| qps=[0-9]*" | tr '\n' ' ')"
for n in a b; do
	eval "rss1_$n=$(awk '/^VmRSS/ {print $2}' /proc/"$(itl_pid $n)"/status)"
done
for n in a b; do itl_daemon_stop $n; done
grep -h "runtime error:\|ERROR: AddressSanitizer\|ERROR: LeakSanitizer" "$ITL_WORK"/daemon-*.log &&
	itl_fail "sanitizer report in a daemon log"

fails=$(grep -c " FAIL" "$ITL_WORK/results.txt")
kills=$(grep -c " KILLED" "$ITL_WORK/results.txt")
passes=$(grep -c " PASS" "$ITL_WORK/results.txt")
bytes=$(grep " PASS .* bytes" "$ITL_WORK/results.txt" | awk '{for (i = 1; i < NF; i++) if ($(i + 1) == "bytes") s += $i} END {printf "%d", s}')
for k in xfer manyqp victim meta_send meta_write rc_write hostile; do
	echo "$ITL_NAME: $k: $(grep -c "^$k .* PASS" "$ITL_WORK/results.txt") passed, $(grep -c "^$k .* KILLED" "$ITL_WORK/results.txt") killed, $(grep -c "^$k .* FAIL" "$ITL_WORK/results.txt") failed"
done
grep " FAIL" "$ITL_WORK/results.txt" | head -n 10 | sed "s/^/$ITL_NAME: failed: /"
for f in "$ITL_WORK"/*-fail-*.log; do
	[ -f "$f" ] || continue
	echo "---- $f"; grep -h "FAIL\|corrupt\|error" "$f" | head -n 5
done
asan=0
ldd "$ITL_DAEMON" 2>/dev/null | grep -q libasan && asan=1
"$py" - "$ITL_WORK/a.json" "$ITL_WORK/b.json" "$rss0_a" "$rss1_a" "$rss0_b" "$rss1_b" "$tol_kb" "$asan" <<'PY' || itl_fail "stats assertions"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
rss = {"a": (int(sys.argv[3]), int(sys.argv[4])), "b": (int(sys.argv[5]), int(sys.argv[6]))}
tol, asan = int(sys.argv[7]), sys.argv[8] == "1"
bad = []
for n, j in (("a", a), ("b", b)):
    sh, tr, en, imp = j["shm"], j["transport"], j["engine"], j["impair"]
    if not j["final"]: bad.append(n + ": no final stats")
    if sh["sessions"] != 0 or sh["sessions_opened"] != sh["sessions_closed"]:
        bad.append("%s: sessions %d, opened %d, closed %d" % (n, sh["sessions"], sh["sessions_opened"], sh["sessions_closed"]))
    if tr["qps"] != 0 or any(s["qps"] != 0 or s["sessions"] != 0 for s in j["shards"]):
        bad.append("%s: QPs left: %d" % (n, tr["qps"]))
    if en["holding"] != 0: bad.append("%s: %d frames still held for ARP" % (n, en["holding"]))
    if imp["tx"]["queued"] != 0: bad.append("%s: %d frames left in the impairment queue" % (n, imp["tx"]["queued"]))
    if j["port"]["mbuf_alloc_fail"] != 0 or en["tx_nombuf"] != 0:
        bad.append("%s: mbuf shortage (alloc_fail %d, tx_nombuf %d)" % (n, j["port"]["mbuf_alloc_fail"], en["tx_nombuf"]))
    if j["parse_drops"]["total"] != 0: bad.append("%s: parse drops %s" % (n, j["parse_drops"]))
    # Every transport object of every app is gone, and no mbuf is kept: at exit with no session
    # nothing may hold one but a PMD's rx ring (af_packet holds none; one burst of slack).
    o = j["objects"]
    for k in ("qps", "pds", "mrs", "cqs", "srqs"):
        if o[k] != 0: bad.append("%s: %d %s left in the transport" % (n, o[k], k))
    if o["rx_mbufs_in_use"] + o["tx_mbufs_in_use"] > 32:
        bad.append("%s: mbufs still in use at exit: rx %d, tx %d" % (n, o["rx_mbufs_in_use"], o["tx_mbufs_in_use"]))
    t = imp["tx"]
    if not (t["dropped"]["total"] > 0 and t["reordered"] > 0 and t["duplicated"] > 0):
        bad.append("%s: impairment did not drop/reorder/duplicate: %s" % (n, t))
    if tr["sum"]["retransmits"] == 0: bad.append(n + ": no retransmits under loss")
    r0, r1 = rss[n]
    grow = r1 - r0
    if not asan and grow > tol: bad.append("%s: RSS grew %d kB after the warm-up (%d -> %d, tolerance %d)" % (n, grow, r0, r1, tol))
    print("soak: daemon %s: sessions opened=closed=%d, qps_created %d, tx dropped %d reordered %d duplicated %d of %d frames, retransmits %d (sack %d), timeouts %d, RSS %d -> %d kB (%+d)%s; left at exit: %d QPs %d PDs %d MRs %d CQs %d SRQs, mbufs in use rx %d tx %d"
          % (n, sh["sessions_opened"], sum(s["qps_created"] for s in j["shards"]), t["dropped"]["total"], t["reordered"], t["duplicated"], t["frames"],
             tr["sum"]["retransmits"], tr["sum"]["sack_retransmits"], tr["sum"]["timeouts"], r0, r1, grow, " (ASan: RSS not asserted)" if asan else "",
             o["qps"], o["pds"], o["mrs"], o["cqs"], o["srqs"], o["rx_mbufs_in_use"], o["tx_mbufs_in_use"]))
for m in bad: print("soak: FAIL: " + m)
sys.exit(1 if bad else 0)
PY
corrupt=$(grep -c " FAIL CORRUPT" "$ITL_WORK/results.txt")
echo "$ITL_NAME: $passes runs verified ($bytes bytes), $kills apps killed mid-transfer, $fails failed ($corrupt with corrupted bytes); engine stalls: $(grep -ho "^metaroced final: engine.*" "$ITL_WORK"/daemon-*.log | grep -o "stalls=[0-9]* max_gap_us=[0-9]*" | tr '\n' ' ')"
[ "$corrupt" = 0 ] || itl_fail "$corrupt app runs saw corrupted bytes"
# Runs that end in an error status without any corrupted byte are a liveness bug, not a
# safety one: today a few percent of the 12-QP plain-RC runs end in RETRY_EXC_ERR under this
# impairment (docs/findings.md F10, open). They are printed; more than SOAK_MAX_ERROR_PCT
# (default 10) percent of the runs fails the soak, so a systematic breakage still does.
max_err=${SOAK_MAX_ERROR_PCT:-10}
if [ "$fails" != 0 ]; then
	[ $((fails * 100)) -le $(((passes + fails) * max_err)) ] ||
		itl_fail "$fails of $((passes + fails)) app runs failed with errors (no corrupted bytes; see above; more than $max_err%)"
	echo "$ITL_NAME: WARN: $fails of $((passes + fails)) app runs ended in an error status, none with corrupted bytes (liveness, docs/findings.md F10)"
fi
[ "$passes" -gt 0 ] || itl_fail "nothing ran"
grep -q "^meta_.* PASS .*MetaRoCE" "$ITL_WORK/results.txt" || itl_fail "no MetaRoCE run passed"
echo "$ITL_NAME: PASS ($dur s: zero corrupted bytes, nothing leaked${fails:+, $fails runs with errors})"
