#!/bin/busybox sh
# /init of the rxe guest initramfs (built by scripts/rxe/build-guest.sh; runs under busybox ash).
# Brings up eth0 and a soft-RoCE device rxe0 on it, then serves commands from the host over
# virtio-serial ports named mr.ctl* (see scripts/rxe/guest-agent.sh for the protocol).
#
# Kernel command line parameters (all optional except mr.ip):
#   mr.ip=A.B.C.D/LEN   IPv4 address of eth0 (RoCE v2 GID index 1 becomes ::ffff:A.B.C.D)
#   mr.mtu=N            Ethernet MTU of eth0 (1500 -> IB MTU 1024, 9000 -> IB MTU 4096)
#   mr.name=NAME        hostname, also printed in the ready line
#   mr.cmd=BASE64       a command to run once rxe0 is up; its exit status is printed as
#                       "MR-RXE-CMD-EXIT <rc>" on the console and the guest powers off
/bin/busybox --install -s /bin
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /tmp /run
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run

ip=
mtu=1500
name=rxe-guest
cmd=
for w in $(cat /proc/cmdline); do
	case "$w" in
	mr.ip=*) ip=${w#mr.ip=} ;;
	mr.mtu=*) mtu=${w#mr.mtu=} ;;
	mr.name=*) name=${w#mr.name=} ;;
	mr.cmd=*) cmd=${w#mr.cmd=} ;;
	esac
done
hostname "$name"

fail() {
	echo "MR-RXE-FAIL $*"
	poweroff -f
}

# Modules in dependency order, resolved on the build host (modprobe --show-depends).
while read -r m; do
	[ -n "$m" ] || continue
	insmod "/lib/modules/$m" 2>/tmp/insmod.err || {
		grep -q "File exists" /tmp/insmod.err || fail "insmod $m: $(cat /tmp/insmod.err)"
	}
done < /etc/mr-modules

ip link set lo up
i=0
while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ -e /sys/class/net/eth0 ] || fail "no eth0"
# No IPv6 autoconfiguration noise on the wire (router/neighbour solicitations, MLD); rxe keeps
# its MAC-based default GID at index 0 and the IPv4-mapped GID at index 1 either way.
sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null
sysctl -qw net.ipv6.conf.default.disable_ipv6=1 2>/dev/null
sysctl -qw net.ipv6.conf.eth0.disable_ipv6=1 2>/dev/null
ip link set eth0 mtu "$mtu" up || fail "eth0 mtu $mtu"
[ -n "$ip" ] && { ip addr add "$ip" dev eth0 || fail "eth0 address $ip"; }
rdma link add rxe0 type rxe netdev eth0 || fail "rdma link add rxe0"
i=0
while [ ! -e /sys/class/infiniband/rxe0/ports/1/gids/1 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done

# One agent per control port; the host finds the ports by name.
for p in /sys/class/virtio-ports/*; do
	[ -e "$p/name" ] || continue
	case "$(cat "$p/name")" in
	mr.ctl*) /bin/mr-agent "/dev/${p##*/}" & ;;
	esac
done

echo "MR-RXE-READY $name ip=$ip mtu=$mtu gid1=$(cat /sys/class/infiniband/rxe0/ports/1/gids/1 2>/dev/null)"

if [ -n "$cmd" ]; then
	echo "$cmd" | base64 -d > /tmp/cmd.sh
	sh /tmp/cmd.sh
	echo "MR-RXE-CMD-EXIT $?"
	poweroff -f
fi
while :; do sleep 3600; done
