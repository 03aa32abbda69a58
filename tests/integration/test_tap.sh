#!/bin/bash
# SPDX-License-Identifier: MIT
# Checksum offload where the port has it: two daemons on net_tap (ITL_LINK=tap, lib.sh), whose
# PMD offers RTE_ETH_TX_OFFLOAD_IPV4_CKSUM, each tap bridged to its end of the veth. The
# daemons must say they leave the IPv4 header checksum to the port, count the frames they
# left it in (tx_csum_offload), and the peer's parser, which drops a frame whose header
# checksum is wrong (RFC 791; parse_drops "bad IPv4 header checksum"), must drop none while
# mr_xfer and mrperf --verify check every byte. A tap that did not fill the checksum in would
# put 0 on the wire, every frame would be dropped, and the transfers would time out. (The
# namespaces' bridges send IGMP reports, counted as "not RoCE v2": not a failure.)
# Daemon a also captures ([pcap] file): a capture must show the checksum the wire carries, so a
# computes it itself (tx_csum_offload stays 0) and `mrpcap check` passes on its capture, while
# b leaves it to the port.
# Usage: test_tap.sh BUILD_DIR
set -u
. "$(dirname "$0")/lib.sh"
itl_init tap "$1"
[ -c /dev/net/tun ] || itl_skip "no /dev/net/tun"
itl_netns_up 1500
ITL_LINK=tap
for n in a b; do itl_daemon_conf $n 1500; done
printf '[pcap]\nfile = %s\n' "$ITL_WORK/a.pcap" >> "$ITL_WORK/a.conf"
for n in a b; do
	itl_daemon_start $n
	itl_tap_bridge $n || itl_fail "bridging daemon $n's tap to the veth"
done
grep -q "IPv4 header checksum offered by the port, computed in software while capturing" \
	"$ITL_WORK/daemon-a.log" || itl_fail "daemon a does not say it computes the checksum while capturing"
grep -q "IPv4 header checksum offloaded to the port" "$ITL_WORK/daemon-b.log" ||
	itl_fail "daemon b does not use the tap's IPv4 checksum offload"
itl_ok "b leaves the IPv4 header checksum to net_tap, a (capturing) computes it"
itl_xfer_pair xfer 120 --qps 2 --sizes 1,4096,65537,1M --iters 2
itl_mrperf write_bw write_bw -s 65536 -n 500
itl_mrperf read_bw read_bw -s 65536 -n 500
o=$(itl_stat a tx_csum_offload)
[ "${o:-x}" = 0 ] || itl_fail "daemon a (capturing): tx_csum_offload=${o:-?}, wanted 0"
for n in a b; do
	o=$(itl_stat $n tx_csum_offload)
	[ $n = a ] || [ "${o:-0}" -gt 100 ] || itl_fail "daemon $n: tx_csum_offload=${o:-?}"
	# (The namespace's bridge sends IGMP reports: "not RoCE v2" drops are those.)
	d=$(itl_stats $n | grep -h "parse_drops " | tail -n 1)
	case $d in
	*"bad IPv4 header checksum"* | *"bad ICRC"*) itl_fail "daemon $n: $d" ;;
	esac
	itl_ok "daemon $n: $o frames with the checksum left to the port; its peer dropped none for a bad checksum or ICRC"
done
for n in a b; do itl_daemon_stop $n; done
"$ITL_BUILD/apps/mrpcap/mrpcap" check "$ITL_WORK/a.pcap" > "$ITL_WORK/mrpcap.log" 2>&1 ||
	itl_fail "mrpcap check of a's capture: $(grep -m 3 FAIL "$ITL_WORK/mrpcap.log")"
itl_ok "a's capture checks: $(tail -n 1 "$ITL_WORK/mrpcap.log")"
echo "$ITL_NAME: PASS"
