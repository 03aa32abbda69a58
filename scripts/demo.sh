#!/usr/bin/env bash
# metaroce demo (README's first command). What exists so far: the RoCE v2 wire codec and the
# I/O-free RC transport, run in the deterministic simulator with loss injection, and the capture
# checker on real Linux rxe traffic. Installs its own packages on a fresh Debian 12 machine.
# Usage: scripts/demo.sh [--no-install]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
install=1
for a in "$@"; do
	case "$a" in
	--no-install) install=0 ;;
	*) echo "demo.sh: unknown argument '$a'" >&2; exit 2 ;;
	esac
done
. scripts/lib/deps.sh
[ "$install" = 1 ] && mr_install_deps
bdir=build-demo
[ -f "$bdir/build.ninja" ] || meson setup "$bdir" -Dtests=false >/dev/null
ninja -C "$bdir" >/dev/null

echo "== 1. Real Linux rxe captures through metaroce's decoder (ICRC + header checks) =="
"$bdir/apps/mrpcap/mrpcap" check tests/vectors/*.pcap

echo
echo "== 2. Simulated RDMA WRITE, 100 Gb/s link, 5 us one way, 4 KB MTU, go-back-N RC =="
for loss in 0 0.001 0.01 0.05; do
	echo "-- random loss $loss --"
	"$bdir/apps/mrsim/mrsim" --op write --size 1048576 --count 16 --mtu 4096 --loss "$loss" --seed 7
done
echo "-- bursty loss 1% (Gilbert-Elliott, mean burst 4) --"
"$bdir/apps/mrsim/mrsim" --op write --size 1048576 --count 16 --mtu 4096 --loss 0.01 --burst 4 --seed 7
echo "-- READ and SEND at 1% loss --"
"$bdir/apps/mrsim/mrsim" --op read --size 1048576 --count 8 --mtu 4096 --loss 0.01 --seed 7
"$bdir/apps/mrsim/mrsim" --op send --size 1048576 --count 8 --mtu 4096 --loss 0.01 --seed 7
echo
echo "demo: every byte verified"
