#!/bin/sh
# SPDX-License-Identifier: MIT
# ARP/ND interop with the Linux kernel over a veth between two private network namespaces (no
# traffic leaves them): neigh_kernel_peer runs the DPDK port on net_af_packet in one namespace;
# the kernel owns the other end. Passes when
#   - the kernel resolved our IPv4 and IPv6 addresses to our MAC (it accepted our ARP reply and
#     our NA: checksum, hop limit, flags, TLLAO), and
#   - we resolved the kernel's addresses to its MAC (we parsed its ARP reply and NA).
# Exits 77 (skip) without root, netns support, or a working EAL. Takes ~5.5 s: the kernel learns
# our MAC from our own ARP request/NS (a STALE entry) and confirms it with a unicast probe only
# after DELAY (delay_first_probe_time, 5 s); answering that probe makes the entry REACHABLE.
# Usage: neigh_kernel.sh PATH/TO/neigh_kernel_peer
set -u
PEER=$1
ID=$$
NSD=mrD-d$ID
NSK=mrD-k$ID
VD=mrd$ID
VK=mrk$ID
OUT=$(mktemp)

cleanup() {
	[ -n "${TRAFFIC:-}" ] && kill "$TRAFFIC" 2>/dev/null
	ip netns del "$NSD" 2>/dev/null
	ip netns del "$NSK" 2>/dev/null
	rm -f "$OUT"
}
trap cleanup EXIT

skip() { echo "SKIP: $*"; exit 77; }

[ "$(id -u)" = 0 ] || skip "needs root for network namespaces"
command -v ip >/dev/null || skip "no iproute2"
command -v python3 >/dev/null || skip "no python3 to make the kernel resolve us"
ip netns add "$NSD" 2>/dev/null || skip "cannot create a network namespace"
ip netns add "$NSK" || exit 1
ip link add "$VD" netns "$NSD" type veth peer name "$VK" netns "$NSK" || skip "no veth"
ip -n "$NSD" link set lo up
ip netns exec "$NSD" sysctl -qw "net.ipv6.conf.$VD.disable_ipv6=1"   # keep this kernel quiet
ip -n "$NSD" link set "$VD" up
ip -n "$NSK" link set lo up
ip -n "$NSK" addr add 10.77.0.1/24 dev "$VK"
ip -n "$NSK" addr add 2001:2:0:77::1/64 dev "$VK" nodad
ip -n "$NSK" link set "$VK" up
KMAC=$(ip -n "$NSK" -o link show "$VK" | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')

# The kernel resolves us when it has something to send: a UDP datagram every 200 ms.
ip netns exec "$NSK" python3 -c '
import socket, time
s4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
for _ in range(150):
    for s, a in ((s4, "10.77.0.2"), (s6, "2001:2:0:77::2")):
        try:
            s.sendto(b"x", (a, 4791))
        except OSError:
            pass
    time.sleep(0.2)
' &
TRAFFIC=$!

ip netns exec "$NSD" "$PEER" --no-pci --no-huge --no-shconf --file-prefix="mrk$ID" -l 0 -m 256 \
	--no-telemetry --log-level=lib.eal:error --vdev="net_af_packet0,iface=$VD" -- \
	10.77.0.2 2001:2:0:77::2 10.77.0.1 2001:2:0:77::1 20 >"$OUT" 2>&1
RC=$?
cat "$OUT"
[ $RC = 77 ] && skip "EAL/port could not start"
[ $RC = 0 ] || { echo "FAIL: peer exited $RC"; exit 1; }

OURMAC=$(sed -n 's/^our_mac //p' "$OUT")
fail=0
check() { # what expected actual
	if [ "$2" = "$3" ]; then echo "ok: $1 = $3"; else echo "FAIL: $1: expected $2, got $3"; fail=1; fi
}
check "we resolved 10.77.0.1" "$KMAC" "$(sed -n 's/^peer4_mac //p' "$OUT")"
check "we resolved 2001:2:0:77::1" "$KMAC" "$(sed -n 's/^peer6_mac //p' "$OUT")"
N4=$(ip -n "$NSK" neigh show 10.77.0.2 dev "$VK")
N6=$(ip -n "$NSK" -6 neigh show 2001:2:0:77::2 dev "$VK")
echo "kernel: $N4"
echo "kernel: $N6"
check "kernel resolved 10.77.0.2" "$OURMAC" "$(echo "$N4" | sed -n 's/.*lladdr \([0-9a-f:]*\).*/\1/p')"
check "kernel resolved 2001:2:0:77::2" "$OURMAC" "$(echo "$N6" | sed -n 's/.*lladdr \([0-9a-f:]*\).*/\1/p')"
for c in arp_malformed nd_malformed nd_bad_csum; do
	check "$c" 0 "$(sed -n "s/^$c //p" "$OUT")"
done
exit $fail
