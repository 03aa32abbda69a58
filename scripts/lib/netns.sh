# Sourced by scripts: two network namespaces joined by a veth pair, for two metaroce hosts.
# Addresses come from 198.18.0.0/15 (RFC 2544 benchmarking range) and are NOT configured on the
# kernel side: the DPDK port (net_af_packet) owns them, and the kernel would otherwise answer
# UDP 4791 with ICMP port unreachable.
# Usage:  mr_netns_up TAG [MTU]   -> namespaces mr-TAG-a / mr-TAG-b, interfaces mrva / mrvb
#         mr_netns_down TAG       (idempotent; safe from a trap)

mr_netns_up() {
	local tag=$1 mtu=${2:-1500}
	local a="mr-$tag-a" b="mr-$tag-b"
	mr_netns_down "$tag"
	ip netns add "$a"
	ip netns add "$b"
	ip link add mrva netns "$a" type veth peer name mrvb netns "$b"
	for side in "$a:mrva" "$b:mrvb"; do
		local ns=${side%%:*} dev=${side##*:}
		# No kernel IPv6 either: no router solicitations or DAD noise on the wire.
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 || true
		ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$dev.disable_ipv6=1" || true
		ip -n "$ns" link set lo up
		ip -n "$ns" link set "$dev" mtu "$mtu" up
		# af_packet PMDs need the offloads off so the frames they see are what is on the wire.
		ip netns exec "$ns" ethtool -K "$dev" tx off rx off tso off gso off gro off >/dev/null 2>&1 || true
	done
}

mr_netns_down() {
	local tag=$1
	ip netns del "mr-$tag-a" 2>/dev/null || true
	ip netns del "mr-$tag-b" 2>/dev/null || true
}

# Hugepages for DPDK (a fresh machine has none). Falls back silently: callers may use --no-huge.
mr_hugepages() {
	local want=${1:-512}
	local have
	have=$(cat /proc/sys/vm/nr_hugepages 2>/dev/null || echo 0)
	if [ "$have" -lt "$want" ]; then
		echo "$want" > /proc/sys/vm/nr_hugepages 2>/dev/null || true
	fi
}

# Standard metaroced config for side a|b of mr_netns_up (mrva 198.18.0.1 on lcore 0, mrvb
# 198.18.0.2 on lcore 1 when there is one; the pollers idle-sleep so two daemons and their apps
# share the cores).  Usage: mr_daemon_conf FILE SIDE SOCKET
mr_daemon_conf() {
	local f=$1 side=$2 sock=$3 ifc=mrva ip=198.18.0.1 lc=0
	if [ "$side" = b ]; then
		ifc=mrvb ip=198.18.0.2
		[ "$(nproc)" -gt 1 ] && lc=1
	fi
	cat > "$f" <<CONF
[port]
eal_args = --vdev=net_af_packet0,iface=$ifc,framecnt=4096
ipv4 = $ip
mtu = 1500
[engine]
lcores = $lc
idle_sleep_us = 20
[shm]
socket = $sock
CONF
}

# Wait up to 20 s for a daemon started with its output in LOG to print "metaroced: ready" and
# create SOCKET; fails early if PID (optional) exits.  Usage: mr_daemon_wait LOG SOCKET [PID]
mr_daemon_wait() {
	local log=$1 sock=$2 pid=${3:-} i
	for i in $(seq 1 200); do
		grep -q "metaroced: ready" "$log" 2>/dev/null && [ -S "$sock" ] && return 0
		[ -z "$pid" ] || kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
