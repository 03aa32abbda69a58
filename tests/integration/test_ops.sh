#!/bin/bash
# SPDX-License-Identifier: MIT
# Every operation at every size between two daemons over veth, at one Ethernet MTU:
#  - the daemons derive the IB MTU from port.mtu (1500 -> 1024, 9000 -> 4096, A17.4.1 / rxe):
#    checked in each daemon's startup line and in the port attributes apps see (--expect-mtu);
#  - mr_xfer: SEND, SEND_WITH_IMM, WRITE, WRITE_WITH_IMM, READ at 1 B .. 16 MiB, CMP_SWAP and
#    FETCH_ADD, every byte (and the byte after each message), immediate, byte_len and atomic
#    value verified on the receiving side;
#  - mrperf --verify (write_bw, send_bw, read_bw, atomic_bw) at the same sizes: "0 corrupted";
#  - the daemons' counters: packets actually crossed the veth in both directions, no frame too
#    long for the port, no parse drops.
# Usage: test_ops.sh BUILD_DIR MTU
set -u
. "$(dirname "$0")/lib.sh"
mtu=${2:-1500}
itl_init "ops_mtu$mtu" "$1"
case $mtu in 1500) ib=1024 ;; 9000) ib=4096 ;; *) itl_fail "unsupported MTU $mtu" ;; esac
sizes=${ITL_SIZES:-1,4095,4096,4097,65536,1M,16M}

itl_netns_up "$mtu"
for n in a b; do itl_daemon_conf $n "$mtu"; done
# Jumbo MTUs on net_af_packet: DPDK 22.11 reports max_rx_pktlen 1518 for it whatever its ring
# holds; drivers/dpdk/dpdk_port.c checks the ring slot (framesz) instead and sets the
# interface MTU itself (lib.sh gives jumbo ports 8 KiB slots).
for n in a b; do itl_daemon_start $n; done
for n in a b; do
	grep -q "mtu $mtu (IB MTU $ib)\|ib_mtu $ib " "$ITL_WORK/daemon-$n.log" ||
		itl_fail "daemon $n does not report IB MTU $ib for port.mtu $mtu"
done
itl_ok "both daemons derive IB MTU $ib from port.mtu $mtu"

itl_xfer_pair ops 120 --sizes "$sizes" --expect-mtu "$ib"
itl_ok "mr_xfer: 7 operations x sizes $sizes verified at IB MTU $ib"

IFS=, read -r -a sz <<< "$sizes"
for s in "${sz[@]}"; do
	case $s in *M) b=$(( ${s%M} << 20 )) ;; *K) b=$(( ${s%K} << 10 )) ;; *) b=$s ;; esac
	# about 32 MiB per run, at least perftest's minimum of 5 iterations
	n=$(( (32 << 20) / b )); [ $n -lt 5 ] && n=5; [ $n -gt 2000 ] && n=2000
	for t in write_bw send_bw read_bw; do
		itl_mrperf "$t-$b" $t -s "$b" -n "$n" -m "$ib"
	done
done
itl_mrperf atomic_bw atomic_bw -n 2000 -m "$ib"

# Traffic really crossed the wire (not the loopback path) and nothing was malformed.
for n in a b; do
	st=$(itl_stats $n)
	echo "$st" | sed "s/^/$ITL_NAME: [$n] /"
	rx=$(echo "$st" | grep -o " rx_roce=[0-9]*" | cut -d= -f2)
	pd=$(echo "$st" | grep -o " parse_drops=[0-9]*" | head -n 1 | cut -d= -f2)
	tl=$(echo "$st" | grep -o " rx_too_long=[0-9]*" | cut -d= -f2)
	[ "${rx:-0}" -gt 1000 ] || itl_fail "daemon $n received only ${rx:-0} RoCE frames"
	[ "${pd:-1}" = 0 ] || itl_fail "daemon $n dropped $pd malformed frames"
	[ "${tl:-1}" = 0 ] || itl_fail "daemon $n saw $tl frames longer than its port"
done
for n in a b; do itl_daemon_stop $n; done
itl_ok "daemons stopped cleanly"
echo "$ITL_NAME: PASS"
