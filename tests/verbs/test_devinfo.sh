#!/bin/bash
# SPDX-License-Identifier: MIT
# Stock ibverbs-utils (Debian's /usr/bin/ibv_devices, ibv_devinfo) through metaroce-run on the
# metaroce verbs library, against one metaroced (net_af_packet on a veth in a namespace), at
# Ethernet MTU 1500 and 9000. Asserts, per MTU:
#   - ibv_devices lists exactly metaroce0 with the EUI-64 GUID of the daemon's MAC;
#   - `ibv_devinfo -v` agrees field by field with the daemon's own port attributes (mrc_query_port
#     over its socket, tests/verbs/mr_port_attr): PORT_ACTIVE, max/active MTU (1024 at 1500,
#     4096 at 9000, as rxe), link layer Ethernet, transport InfiniBand, the GID table (index 0
#     the fe80:: EUI-64 GID, index 1 ::ffff:198.18.0.1) and the device limits
#     (tests/verbs/devinfo_check.py);
#   - `ibv_devinfo -d metaroce0 -i 1` works, and --device renames the device;
# and, once: the launcher fails clearly without a daemon, and the system's own ibv_devices
# (no launcher) never shows metaroce0.
# Exit 0 pass, 1 fail, 77 skip (not root, no netns, Debian's ibverbs-utils not installed).
# Usage: test_devinfo.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../integration/lib.sh"
itl_init verbs_devinfo "$1"
for t in ibv_devices ibv_devinfo; do
	[ -x "/usr/bin/$t" ] || itl_skip "/usr/bin/$t missing (Debian package ibverbs-utils)"
done
run="$ITL_BUILD/apps/metaroce-run/metaroce-run"
attr_tool="$ITL_BUILD/tests/verbs/mr_port_attr"
[ -x "$run" ] || itl_fail "launcher $run not built"
. "$ITL_ROOT/scripts/lib/perf_check.sh"
mr_strip_verbs_dir "$("$run" --print-dir)"
[ -x "$attr_tool" ] || itl_fail "$attr_tool not built"

# Without a daemon the launcher refuses, naming the socket.
"$run" --sock "$ITL_WORK/nothing.sock" /usr/bin/ibv_devices > "$ITL_WORK/nodaemon.log" 2>&1
rc=$?
[ "$rc" = 1 ] && grep -q "no metaroced socket at '$ITL_WORK/nothing.sock'" "$ITL_WORK/nodaemon.log" ||
	itl_fail "launcher without a daemon: exit $rc: $(cat "$ITL_WORK/nodaemon.log")"
itl_ok "no daemon: launcher exits 1 naming the socket"

for mtu in 1500 9000; do
	want_ib=$([ "$mtu" = 9000 ] && echo 4096 || echo 1024)
	itl_netns_up "$mtu"
	itl_daemon_conf a "$mtu"
	itl_daemon_start a
	sock="$ITL_WORK/a.sock"
	"$attr_tool" "$sock" > "$ITL_WORK/attr-$mtu.txt" 2>&1 || itl_fail "mr_port_attr: $(cat "$ITL_WORK/attr-$mtu.txt")"
	grep -qx "active_mtu=$want_ib" "$ITL_WORK/attr-$mtu.txt" ||
		itl_fail "daemon reports $(grep active_mtu "$ITL_WORK/attr-$mtu.txt"), want $want_ib at MTU $mtu"
	grep -qx "gid1=00000000000000000000ffffc6120001" "$ITL_WORK/attr-$mtu.txt" ||
		itl_fail "daemon GID 1 is not ::ffff:198.18.0.1: $(grep gid1 "$ITL_WORK/attr-$mtu.txt")"

	# ibv_devices: one line per device after the two header lines.
	"$run" --sock "$sock" /usr/bin/ibv_devices > "$ITL_WORK/devices-$mtu.txt" 2>&1 ||
		itl_fail "ibv_devices exited $?: $(cat "$ITL_WORK/devices-$mtu.txt")"
	mac=$(sed -n 's/^mac=//p' "$ITL_WORK/attr-$mtu.txt")
	IFS=: read -r m0 m1 m2 m3 m4 m5 <<< "$mac"
	guid=$(printf '%02x%s%sfffe%s%s%s' $((0x$m0 ^ 2)) "$m1" "$m2" "$m3" "$m4" "$m5")
	devs=$(awk 'NR > 2 && NF >= 2 { print $1 " " $2 }' "$ITL_WORK/devices-$mtu.txt")
	[ "$devs" = "metaroce0 $guid" ] ||
		itl_fail "ibv_devices lists '$devs', want 'metaroce0 $guid': $(cat "$ITL_WORK/devices-$mtu.txt")"
	itl_ok "MTU $mtu: ibv_devices: metaroce0 $guid"

	"$run" --sock "$sock" /usr/bin/ibv_devinfo -v > "$ITL_WORK/devinfo-$mtu.txt" 2>&1 ||
		itl_fail "ibv_devinfo -v exited $?: $(tail -n 5 "$ITL_WORK/devinfo-$mtu.txt")"
	if ! python3 "$here/devinfo_check.py" "$ITL_WORK/devinfo-$mtu.txt" "$ITL_WORK/attr-$mtu.txt" \
		metaroce0 > "$ITL_WORK/check-$mtu.txt"; then
		cat "$ITL_WORK/check-$mtu.txt" >&2
		itl_fail "MTU $mtu: ibv_devinfo -v disagrees with the daemon (above); output in devinfo-$mtu.txt: $(head -c 3000 "$ITL_WORK/devinfo-$mtu.txt")"
	fi
	sed "s/^/$ITL_NAME: MTU $mtu: /" "$ITL_WORK/check-$mtu.txt"
	grep -q "active_mtu:.*$want_ib (" "$ITL_WORK/devinfo-$mtu.txt" || itl_fail "active_mtu is not $want_ib"

	"$run" --sock "$sock" /usr/bin/ibv_devinfo -d metaroce0 -i 1 > "$ITL_WORK/devinfo-d-$mtu.txt" 2>&1 ||
		itl_fail "ibv_devinfo -d metaroce0 -i 1 exited $?: $(tail -n 5 "$ITL_WORK/devinfo-d-$mtu.txt")"
	grep -q "state:.*PORT_ACTIVE (4)" "$ITL_WORK/devinfo-d-$mtu.txt" ||
		itl_fail "ibv_devinfo -d metaroce0 -i 1: no PORT_ACTIVE"
	itl_ok "MTU $mtu: ibv_devinfo -d metaroce0 -i 1: PORT_ACTIVE"
	if [ "$mtu" = 1500 ]; then
		"$run" --sock "$sock" --device mrtest7 /usr/bin/ibv_devices > "$ITL_WORK/devices-name.txt" 2>&1 ||
			itl_fail "ibv_devices with --device exited $?"
		devs=$(awk 'NR > 2 && NF >= 2 { print $1 }' "$ITL_WORK/devices-name.txt")
		[ "$devs" = mrtest7 ] || itl_fail "--device mrtest7: ibv_devices lists '$devs'"
		itl_ok "--device mrtest7 renames the device"
	fi
	itl_daemon_stop a
done

# The host's own rdma-core, without the launcher, never sees metaroce (nothing was installed
# into it); whatever real devices the host has stay where they are.
/usr/bin/ibv_devices > "$ITL_WORK/system-devices.txt" 2>&1
grep -q metaroce "$ITL_WORK/system-devices.txt" && itl_fail "the system's ibv_devices lists metaroce"
itl_ok "system ibv_devices (no launcher): no metaroce device"
