#!/bin/bash
# Kernel test of mrbpf (root only, exit 77 = skipped otherwise): two network namespaces joined
# by a veth pair; mrbpf attaches to the sender's egress; a UDP socket sends datagrams to port
# 4791 (and, as a control, 4792). Asserts: arrivals at 4791 match the configured loss within 5
# binomial standard deviations and the program's counters agree; port 4792 is untouched; with
# --ecn 1 every ECT(0) datagram arrives CE (so the IPv4 checksum was fixed: the kernel drops
# bad ones) and Not-ECT ones do not; detach leaves no clsact qdisc behind.
# usage: test_mrbpf.sh PATH_TO_MRBPF
set -u
mrbpf=$1
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
command -v ip >/dev/null && command -v tc >/dev/null || { echo "SKIP: needs iproute2"; exit 77; }
py=/usr/bin/python3
[ -x "$py" ] || py=python3
sfx=$$
A=mrbpfA$sfx B=mrbpfB$sfx VA=mrva$sfx VB=mrvb$sfx
# `ip netns exec` remounts /sys: pin the maps on a bpffs of our own that it does not hide.
pins=$(mktemp -d /tmp/mrbpf-pins.XXXXXX)
mount -t bpf bpf "$pins" || { rmdir "$pins"; echo "SKIP: cannot mount bpffs"; exit 77; }
export MR_BPF_PIN_DIR=$pins
cleanup() {
	ip netns del "$A" 2>/dev/null; ip netns del "$B" 2>/dev/null
	umount "$pins" 2>/dev/null; rmdir "$pins" 2>/dev/null
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
ip netns add "$A" && ip netns add "$B" || { echo "SKIP: cannot create netns"; exit 77; }
ip link add "$VA" netns "$A" type veth peer name "$VB" netns "$B" || { echo "SKIP: no veth"; exit 77; }
ip -n "$A" addr add 198.19.201.1/24 dev "$VA"
ip -n "$B" addr add 198.19.201.2/24 dev "$VB"
ip -n "$A" link set "$VA" up; ip -n "$B" link set "$VB" up
ip -n "$A" link set lo up; ip -n "$B" link set lo up
# Static neighbours: ARP must not be subject to the test's randomness (it is not UDP anyway).
ip -n "$A" neigh add 198.19.201.2 lladdr "$(ip -n "$B" -br link show "$VB" | awk '{print $3}')" dev "$VA"

# send N PORT TOS in A; count in B. Prints "received ce_count".
xfer() {
	local n=$1 port=$2 tos=$3
	ip netns exec "$B" "$py" - "$n" "$port" <<'PYEOF' &
import socket, sys
n, port = int(sys.argv[1]), int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
s.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)  # SO_RCVBUFFORCE: never overflow the socket
s.bind(("198.19.201.2", port))
s.settimeout(1.5)
got = ce = 0
open(f"/tmp/mrbpf_ready_{port}", "w").close()
try:
    while True:
        data, anc, _, _ = s.recvmsg(2048, 64)
        got += 1
        for lvl, typ, val in anc:
            if lvl == socket.IPPROTO_IP and typ == socket.IP_TOS and val[0] & 3 == 3:
                ce += 1
except socket.timeout:
    pass
print(got, ce)
PYEOF
	local rpid=$!
	for _ in $(seq 50); do [ -e /tmp/mrbpf_ready_$port ] && break; sleep 0.1; done
	rm -f /tmp/mrbpf_ready_$port
	ip netns exec "$A" "$py" - "$n" "$port" "$tos" <<'PYEOF'
import socket, sys, time
n, port, tos = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
for i in range(n):
    s.sendto(i.to_bytes(4, "big") * 16, ("198.19.201.2", port))
    if i % 50 == 49:
        time.sleep(0.005)  # stay well inside the veth/socket buffers
PYEOF
	wait $rpid
}

N=4000
P=0.3
ip netns exec "$A" "$mrbpf" attach "$VA" --loss $P --ecn 0 || fail "attach"
ip netns exec "$A" tc filter show dev "$VA" egress | grep -q bpf || fail "no bpf filter on egress"
read -r got ce < <(xfer $N 4791 0)
read -r mean lo hi < <("$py" -c "import math;n=$N;p=$P;m=n*(1-p);s=math.sqrt(n*p*(1-p));print(m,int(m-5*s),int(m+5*s))")
echo "loss $P: $got of $N arrived (expected $mean, [$lo, $hi])"
[ "$got" -ge "$lo" ] && [ "$got" -le "$hi" ] || fail "arrivals $got outside [$lo, $hi]"
stats=$(ip netns exec "$A" "$mrbpf" stats "$VA") || fail "stats"
echo "$stats"
seen=$(echo "$stats" | sed -n 's/.* seen \([0-9]*\).*/\1/p')
dropped=$(echo "$stats" | sed -n 's/.* dropped \([0-9]*\).*/\1/p')
[ "$seen" = "$N" ] || fail "program saw $seen RoCE packets, sent $N"
[ $((N - dropped)) = "$got" ] || fail "dropped $dropped but $got of $N arrived"
read -r got ce < <(xfer 500 4792 0)
[ "$got" = 500 ] || fail "non-RoCE port lost packets ($got of 500)"

# ECN: mark everything ECT, nothing else; no loss.
ip netns exec "$A" "$mrbpf" set "$VA" --loss 0 --ecn 1 || fail "set"
read -r got ce < <(xfer 500 4791 2)
echo "ecn 1, ECT(0): $got arrived, $ce CE"
[ "$got" = 500 ] && [ "$ce" = 500 ] || fail "ECT(0): $got arrived, $ce CE (want 500/500)"
read -r got ce < <(xfer 300 4791 0)
[ "$got" = 300 ] && [ "$ce" = 0 ] || fail "Not-ECT: $got arrived, $ce CE (want 300/0)"

ip netns exec "$A" "$mrbpf" detach "$VA" || fail "detach"
if ip netns exec "$A" tc qdisc show dev "$VA" | grep -q clsact; then
	fail "clsact qdisc left behind"
fi
[ ! -e "$pins/mrbpf_${VA}_cfg" ] || fail "pinned map left behind"
read -r got ce < <(xfer 500 4791 0)
[ "$got" = 500 ] || fail "after detach $got of 500 arrived"
"$mrbpf" attach "$VA" --loss 2 >/dev/null 2>&1; [ $? = 2 ] || fail "--loss 2 not rejected with 2"
echo "PASS"
