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
