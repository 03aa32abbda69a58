#!/bin/bash
# SPDX-License-Identifier: MIT
# mrstat against two live daemons (tests/integration/lib.sh: veth between two namespaces,
# net_af_packet), daemon A dropping 1% of what it sends (--impair-tx loss=0.01, seeded):
#   - `mrstat link` shows the port as ibv_devinfo would: PORT_ACTIVE, active_mtu, the MAC of
#     the interface, GID 0 = ::ffff:198.18.0.1 (RoCE v2);
#   - `mrstat --reset` zeroes the counters; a daemon that is not running gets a clear message;
#   - during a MetaRoCE WRITE transfer, `mrstat --watch 0.5 --json` reports non-zero rates;
#   - afterwards the counters agree with the impairment stage: A's needed retransmissions
#     (A's retransmitted_pkts - B's duplicate_request) are within 10% of the frames the stage dropped
#     (MetaRoCE resends each lost packet once: selective repeat), and B received exactly what A
#     sent minus what was dropped (tx/rx_vport_rdma_unicast_packets);
#   - the drop count mrstat shows equals the daemon's own --stats-json dump (minus the value at
#     the reset);
#   - with B restarted at a smaller port.mtu, mrperf says "MTU mismatch" when it happens;
#   - with --telemetry, dpdk-telemetry.py shows /ethdev/stats,0 and /metaroce/port and /link.
# Exit 0 pass, 1 fail, 77 skip. Usage: test_mrstat_daemons.sh BUILD_DIR
set -u
. "$(dirname "$0")/../integration/lib.sh"
itl_init mrstat_daemons "$1"
MRSTAT="$ITL_BUILD/apps/mrstat/mrstat"
PY=/usr/bin/python3
[ -x "$MRSTAT" ] || itl_skip "$MRSTAT not built"
[ -x "$PY" ] || itl_skip "no python3"

itl_netns_up 1500
itl_daemon_conf a 1500
itl_daemon_conf b 1500
ITL_DAEMON_ARGS="--impair-tx loss=0.01,seed=21 --stats-json $ITL_WORK/a.json --telemetry" \
	itl_daemon_start a
ITL_DAEMON_ARGS="" itl_daemon_start b

# No daemon: the message says what to do.
out=$("$MRSTAT" --sock "$ITL_WORK/none.sock" 2>&1) && itl_fail "mrstat without a daemon exited 0"
echo "$out" | grep -q "is metaroced running" || itl_fail "no clear message without a daemon: $out"
itl_ok "no daemon: $(echo "$out" | head -n 1)"

link=$("$MRSTAT" --sock "$ITL_WORK/a.sock" link) || itl_fail "mrstat link"
mac=$(ip netns exec "$(itl_ns a)" cat /sys/class/net/mrva/address)
echo "$link" | grep -q "state:.*PORT_ACTIVE" || itl_fail "link not active: $link"
echo "$link" | grep -q "active_mtu:.*1024" || itl_fail "active_mtu (MTU 1500 -> IB 1024): $link"
echo "$link" | grep -q "mac:.*$mac" || itl_fail "mac is not $mac: $link"
echo "$link" | grep -q "GID\[  0\]:.*::ffff:198.18.0.1 RoCEv2" || itl_fail "GID 0: $link"
itl_ok "link view: $(echo "$link" | head -n 1)"

# Baseline for the cross-check with the daemon's own dump, then reset.
"$MRSTAT" --sock "$ITL_WORK/a.sock" --json > "$ITL_WORK/a-before.json" || itl_fail "mrstat --json"
"$MRSTAT" --sock "$ITL_WORK/a.sock" --reset | grep -q "counters reset" || itl_fail "reset a"
"$MRSTAT" --sock "$ITL_WORK/b.sock" --reset > /dev/null || itl_fail "reset b"

port=$((20000 + $$ % 20000))
itl_bg srv timeout 90 "$ITL_MRPERF" write_bw --metaroce -s 65536 -n 1000 -u "$ITL_ACK_TIMEOUT" \
	-p "$port" --verify --sock "$ITL_WORK/b.sock"
ps=$ITL_BG_PID
itl_bg cli timeout 90 "$ITL_MRPERF" write_bw --metaroce -s 65536 -n 1000 -u "$ITL_ACK_TIMEOUT" \
	-p "$port" --verify --sock "$ITL_WORK/a.sock" 127.0.0.1
pc=$ITL_BG_PID
# Live rates while the transfer runs (the first sample has none: nothing to compare with).
itl_wait_for 20 grep -q "BW peak\|#bytes" "$ITL_WORK/cli.log" ||
	itl_wait_for 10 "$MRSTAT" --sock "$ITL_WORK/a.sock" qp | grep -q RTS
"$MRSTAT" --sock "$ITL_WORK/a.sock" --watch 0.5 --count 5 --json > "$ITL_WORK/watch.jsonl" ||
	itl_fail "mrstat --watch"
itl_wait_pid "$pc" 90 || itl_fail "mrperf client failed"
itl_wait_pid "$ps" 90 || itl_fail "mrperf server failed"
grep -q "0 corrupted" "$ITL_WORK/srv.log" "$ITL_WORK/cli.log" || itl_fail "no verified data"

"$MRSTAT" --sock "$ITL_WORK/a.sock" --json > "$ITL_WORK/a-after.json" || itl_fail "mrstat a"
"$MRSTAT" --sock "$ITL_WORK/b.sock" --json > "$ITL_WORK/b-after.json" || itl_fail "mrstat b"
kill -USR1 "$(itl_pid a)"
itl_wait_for 10 test -s "$ITL_WORK/a.json" || itl_fail "no --stats-json dump"
sleep 0.2
"$PY" - "$ITL_WORK/watch.jsonl" "$ITL_WORK/a-after.json" "$ITL_WORK/b-after.json" \
	"$ITL_WORK/a.json" "$ITL_WORK/a-before.json" <<'PY' || itl_fail "counter checks"
import json, sys
watch = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
a, b, dump = (json.load(open(p)) for p in sys.argv[2:5])
rates = [w["port"]["rates"].get("tx_vport_rdma_unicast_packets", 0) for w in watch
         if "rates" in w["port"]]
assert len(watch) == 5 and len(rates) == 4, (len(watch), rates)
assert max(rates) > 0, ("--watch showed no live rate", rates)
pa, pb = a["port"], b["port"]
drops = pa["impair_tx_dropped"]
assert drops > 100, ("too few drops to compare", drops)
# Each dropped packet is resent until it arrives; resends the receiver already had (it counts
# them: duplicate_request, the ground truth for spurious ones, which a loaded machine makes by
# late ACKs) are not repairs.
needed = pa["retransmitted_pkts"] - pb["duplicate_request"]
print("mrstat_daemons: A %s; B duplicate_request %d out_of_sequence %d" % (
    {k: pa[k] for k in ("impair_tx_dropped", "retransmitted_pkts", "retrans_selective_pkts",
                        "retrans_gbn_pkts", "tlp_probes", "retrans_spurious_pkts",
                        "local_ack_timeout_err")},
    pb["duplicate_request"], pb["out_of_sequence"]))
assert abs(needed - drops) <= 0.10 * drops, ("retransmissions vs drops", needed, drops)
assert pa["retrans_selective_pkts"] > 0.5 * drops, pa["retrans_selective_pkts"]
delivered = pa["tx_vport_rdma_unicast_packets"] - drops
assert abs(pb["rx_vport_rdma_unicast_packets"] - delivered) <= 0.01 * delivered + 2, \
    (pb["rx_vport_rdma_unicast_packets"], delivered)
assert pa["impair_tx_dropped_random"] == drops
assert pa["rx_icrc_errors"] == 0 and pb["rx_malformed"] == 0
# the daemon's raw dump: what mrstat shows after --reset is the raw value minus the baseline
base = json.load(open(sys.argv[5]))["port"]["impair_tx_dropped"]
raw = dump["impair"]["tx"]["dropped"]["total"]
assert raw - base == drops, ("mrstat vs --stats-json", raw, base, drops)
print("mrstat_daemons: dropped %d, retransmitted %d (B had %d already, selective %d, tlp %d): "
      "needed/dropped = %.3f; B rcvd %d = A sent %d - dropped; watch rates %s"
      % (drops, pa["retransmitted_pkts"], pb["duplicate_request"],
         pa["retrans_selective_pkts"], pa["tlp_probes"], needed / drops,
         pb["rx_vport_rdma_unicast_packets"], pa["tx_vport_rdma_unicast_packets"],
         [round(r) for r in rates]))
PY
itl_ok "counters agree with the impairment stage"

# Asymmetric MTU: B restarted with port.mtu 1000 (IB MTU 512) against A's 1500 (1024).
itl_daemon_stop b
sed -i 's/^mtu = 1500/mtu = 1000/' "$ITL_WORK/b.conf"
ITL_DAEMON_ARGS="" itl_daemon_start b
"$MRSTAT" --sock "$ITL_WORK/b.sock" link | grep -q "active_mtu:.*512" || itl_fail "b active_mtu 512"
itl_bg srv2 timeout 60 "$ITL_MRPERF" write_bw -n 20 -s 4K -p $((port + 1)) --sock "$ITL_WORK/b.sock"
ps=$ITL_BG_PID
itl_bg cli2 timeout 60 "$ITL_MRPERF" write_bw -n 20 -s 4K -p $((port + 1)) --sock "$ITL_WORK/a.sock" \
	127.0.0.1
itl_wait_pid "$ITL_BG_PID" 60 || itl_fail "mrperf with asymmetric MTU"
itl_wait_pid "$ps" 60 || itl_fail "mrperf server with asymmetric MTU"
grep -q "MTU mismatch: the peer uses MTU 512, we 1024" "$ITL_WORK/cli2.log" ||
	itl_fail "no MTU mismatch message: $(cat "$ITL_WORK/cli2.log")"
itl_ok "$(grep -h "MTU mismatch" "$ITL_WORK/cli2.log")"

# --telemetry: DPDK's own client sees the port (/ethdev/) and metaroce's counters (/metaroce/).
if [ -x /usr/bin/dpdk-telemetry.py ]; then
	sleep 1.2 # published once a second by the control thread
	printf '/metaroce/port\n/metaroce/link\n/ethdev/stats,0\n' |
		timeout 20 "$PY" /usr/bin/dpdk-telemetry.py -f "mrit${ITL_TAG}a" > "$ITL_WORK/tel.out" 2>&1
	"$PY" - "$ITL_WORK/tel.out" "$ITL_WORK/a-after.json" <<'PY' || itl_fail "telemetry: $(head -c 400 "$ITL_WORK/tel.out")"
import json, sys
got = {}
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("{"):
        got.update(json.loads(line))
port, link, eth = got["/metaroce/port"], got["/metaroce/link"], got["/ethdev/stats"]
after = json.load(open(sys.argv[2]))["port"]
assert link["state"] == "ACTIVE" and link["gid0"].startswith("::ffff:198.18.0.1"), link
# counted since the reset, and at least what mrstat saw after the first transfer
assert port["tx_vport_rdma_unicast_packets"] >= after["tx_vport_rdma_unicast_packets"] > 0
assert port["np_cnp_sent"] >= 0 and "rx_icrc_errors" in port
assert eth["opackets"] >= port["tx_vport_rdma_unicast_packets"] - port["impair_tx_dropped"]
print("mrstat_daemons: telemetry: /metaroce/port %d counters, tx_vport_rdma_unicast_packets %d,"
      " /ethdev/stats,0 opackets %d" % (len(port), port["tx_vport_rdma_unicast_packets"],
                                        eth["opackets"]))
PY
fi
itl_daemon_stop a
itl_daemon_stop b
echo "mrstat_daemons: PASS"
