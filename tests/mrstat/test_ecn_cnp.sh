#!/bin/bash
# SPDX-License-Identifier: MIT
# ECN as ConnectX users expect, on plain RC QPs (no MetaRoCE, the app asks for no congestion
# control): two daemons with `ecn = true` (the default), daemon A's impairment stage marking CE
# on what A sends once a virtual 100 Mb/s queue holds more than 32 KiB (RFC 3168 marking of
# ECT(0) frames, A17.9.1). mrperf write_bw A -> B. Asserts with mrstat:
#   - B, the notification point, saw the marks (np_ecn_marked_roce_packets = A's stage's
#     impair_tx_ce_marked) and sent CNPs (np_cnp_sent > 0, at most one per 50 us per QP);
#   - A, the reaction point, handled every CNP (rp_cnp_handled = CNPs received > 0, ignored 0)
#     with DCQCN, which the daemon runs for plain RC QPs when ECN is on;
#   - the sender's rate fell: the QP's lowest DCQCN rate (mrstat qp cc_rate_min_bps, sampled
#     with --watch during the transfer) went below 3/4 of the line rate it started at. (Its
#     rate now, cc_rate_bps, recovers within milliseconds: on a loaded host the transfer ran
#     near the marking rate, and 0.3-s samples saw 9.998-10 Gb/s.)
# Exit 0 pass, 1 fail, 77 skip. Usage: test_ecn_cnp.sh BUILD_DIR
set -u
. "$(dirname "$0")/../integration/lib.sh"
itl_init ecn_cnp "$1"
MRSTAT="$ITL_BUILD/apps/mrstat/mrstat"
PY=/usr/bin/python3
[ -x "$MRSTAT" ] || itl_skip "$MRSTAT not built"
[ -x "$PY" ] || itl_skip "no python3"

itl_netns_up 1500
itl_daemon_conf a 1500
itl_daemon_conf b 1500
ITL_DAEMON_ARGS="--impair-tx ecn=rate:100m,k:32k,seed=5" itl_daemon_start a
ITL_DAEMON_ARGS="" itl_daemon_start b
"$MRSTAT" --sock "$ITL_WORK/a.sock" link | grep -q "ecn:.*on" || itl_fail "ecn not on"

port=$((20000 + $$ % 20000))
itl_bg srv timeout 90 "$ITL_MRPERF" write_bw -s 65536 -n 300 -u "$ITL_ACK_TIMEOUT" -p "$port" \
	--sock "$ITL_WORK/b.sock"
ps=$ITL_BG_PID
itl_bg cli timeout 90 "$ITL_MRPERF" write_bw -s 65536 -n 300 -u "$ITL_ACK_TIMEOUT" -p "$port" \
	--report_gbits --sock "$ITL_WORK/a.sock" 127.0.0.1
pc=$ITL_BG_PID
itl_wait_for 20 sh -c "'$MRSTAT' --sock '$ITL_WORK/a.sock' qp | grep -q RTS" ||
	itl_fail "no QP on A"
"$MRSTAT" --sock "$ITL_WORK/a.sock" qp --json --watch 0.3 --count 6 > "$ITL_WORK/watch.jsonl" ||
	itl_fail "mrstat --watch"
itl_wait_pid "$pc" 90 || itl_fail "mrperf client failed"
itl_wait_pid "$ps" 90 || itl_fail "mrperf server failed"
# B first, then A once it has handled every CNP B sent: B's last CNPs (for the last marked
# packets) may still be on their way when the client exits on its final ACK.
"$MRSTAT" --sock "$ITL_WORK/b.sock" --json > "$ITL_WORK/b.json" || itl_fail "mrstat b"
cnps=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["port"]["np_cnp_sent"])' \
	"$ITL_WORK/b.json")
cnp_seen() {
	"$MRSTAT" --sock "$ITL_WORK/a.sock" --json > "$ITL_WORK/a.json" &&
		"$PY" -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["port"]["rx_cnp_pkts"] < int(sys.argv[2]))' \
			"$ITL_WORK/a.json" "$cnps"
}
itl_wait_for 5 cnp_seen || echo "ecn_cnp: A's rx_cnp_pkts below B's np_cnp_sent ($cnps) after 5 s"
grep -h "65536" "$ITL_WORK/cli.log" | sed "s/^/ecn_cnp: mrperf: /"
"$PY" - "$ITL_WORK/watch.jsonl" "$ITL_WORK/a.json" "$ITL_WORK/b.json" <<'PY' || itl_fail "ECN checks"
import json, sys
watch = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
a, b = (json.load(open(p))["port"] for p in sys.argv[2:4])
qps = [q for w in watch for q in w["qps"] if q["transport"] == "roce"]
assert qps, "no plain RC QP sampled"
assert all(q["cc"] == "dcqcn" for q in qps), set(q["cc"] for q in qps)
line = json.load(open(sys.argv[2]))["link"]["link_speed_mbps"] * 1e6
rates = [q["cc_rate_min_bps"] for q in qps]
assert min(rates) < 0.75 * line, ("DCQCN rate did not fall", rates, line)
assert a["impair_tx_ce_marked"] > 0, a["impair_tx_ce_marked"]
assert b["np_ecn_marked_roce_packets"] == a["impair_tx_ce_marked"], \
    (b["np_ecn_marked_roce_packets"], a["impair_tx_ce_marked"])
assert b["np_cnp_sent"] > 0 and b["tx_cnp_pkts"] == b["np_cnp_sent"], b["np_cnp_sent"]
assert a["rp_cnp_handled"] > 0 and a["rp_cnp_ignored"] == 0, (a["rp_cnp_handled"],
                                                              a["rp_cnp_ignored"])
assert a["rx_cnp_pkts"] == a["rp_cnp_handled"] == b["np_cnp_sent"], \
    (a["rx_cnp_pkts"], a["rp_cnp_handled"], b["np_cnp_sent"])
print("ecn_cnp: CE marked %d, B np_ecn_marked_roce_packets %d np_cnp_sent %d, A rp_cnp_handled %d;"
      " A's lowest DCQCN rate %.3f Gb/s (line %.1f)"
      % (a["impair_tx_ce_marked"], b["np_ecn_marked_roce_packets"], b["np_cnp_sent"],
         a["rp_cnp_handled"], min(rates) / 1e9, line / 1e9))
PY
itl_ok "CNPs sent and handled for a plain RC QP, the sender's rate fell"
itl_daemon_stop a
itl_daemon_stop b
echo "ecn_cnp: PASS"
