#!/usr/bin/env bash
# Command-line front end to scripts/rxe/lib.sh: Linux soft-RoCE guests on a bridge in netns
# mr-rxe-TAG (guest G at 198.18.1.(10+G), host kernel 198.18.1.2 on br0, veth end mrx0 for
# metaroced at 198.18.1.1). Guests stay up between commands until `down`.
#
# Usage: guest.sh [--tag TAG] COMMAND ...          (TAG default: dev)
#   up [--guests N] [--mtu 1500|9000]   build/reuse the image, create the network, boot N (1-2)
#   run [--timeout S] G CMD...          run CMD in guest G; prints its output, exits with its status
#   pair [--timeout S] S C CMD...       CMD as server in guest S, `CMD <S's IP>` in guest C
#                                       (perftest / ibv_*_pingpong style)
#   mtu M                               Ethernet MTU everywhere (1500 -> IB 1024, 9000 -> IB 4096)
#   loss PCT                            drop PCT% of UDP 4791 on the bridge, both ways (0 = off)
#   capture start FILE [FILTER] | capture stop
#   status                              guests, addresses, rxe state
#   down                                stop everything (also safe when nothing runs)
#   demo                                up, ib_write_bw guest 2 -> guest 1, down
# Example:
#   scripts/rxe/guest.sh up && scripts/rxe/guest.sh run 1 ibv_devinfo -v && scripts/rxe/guest.sh down
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
tag=dev
if [ "${1:-}" = --tag ]; then tag=$2; shift 2; fi
cmd=${1:-}
[ $# -gt 0 ] && shift
usage() { sed -n '2,18p' "$0" >&2; exit 2; }
need_up() { [ -S "$(mr_rxe_dir "$tag")/g1.ctl0" ] || { echo "guest.sh: no guests for tag $tag (run up)" >&2; exit 1; }; }

case "$cmd" in
up)
	n=2 mtu=1500
	while [ $# -gt 0 ]; do
		case "$1" in
		--guests) n=$2; shift ;;
		--mtu) mtu=$2; shift ;;
		*) usage ;;
		esac
		shift
	done
	why=$(mr_rxe_can_run) || { echo "guest.sh: $why" >&2; exit 1; }
	mr_rxe_up "$tag" "$n" "$mtu" || { mr_rxe_down "$tag"; exit 1; }
	;;
run|pair)
	secs=120
	if [ "${1:-}" = --timeout ]; then secs=$2; shift 2; fi
	need_up
	if [ "$cmd" = run ]; then
		[ $# -ge 2 ] || usage
		g=$1; shift
		mr_rxe_run "$tag" "$g" "$secs" "$*"
		exit $?
	fi
	[ $# -ge 3 ] || usage
	s=$1 c=$2; shift 2
	out=$(mktemp /tmp/mr-rxe-pair.XXXXXX)
	mr_rxe_pair "$tag" "$s" "$c" "$secs" "$out" "$*" "$* $(mr_rxe_guest_ip "$s")"
	rc=$?
	echo "== server (guest $s, exit $MR_RXE_PAIR_SRC)"; cat "$out.server"
	echo "== client (guest $c, exit $MR_RXE_PAIR_CRC)"; cat "$out.client"
	rm -f "$out" "$out.server" "$out.client"
	exit $rc
	;;
mtu) [ $# -eq 1 ] || usage; need_up; mr_rxe_set_mtu "$tag" "$1" ;;
loss)
	[ $# -eq 1 ] || usage
	mr_rxe_loss "$tag" "$1" || exit 1
	[ "$1" -gt 0 ] && echo "dropping $1% of UDP 4791 on br0 (mr-rxe-$tag); 'guest.sh loss 0' to stop"
	;;
capture)
	case "${1:-}" in
	start) [ $# -ge 2 ] || usage; mr_rxe_capture_start "$tag" "$2" "${3:-udp port 4791 or tcp port 18515 or arp}" ;;
	stop) mr_rxe_capture_stop "$tag" ;;
	*) usage ;;
	esac
	;;
status)
	ns=$(mr_rxe_ns "$tag")
	ip netns list | grep -qw "$ns" || { echo "no namespace $ns"; exit 1; }
	ip -n "$ns" -br link
	n=$(cat "$(mr_rxe_dir "$tag")/guests" 2>/dev/null || echo 0)
	for g in $(seq 1 "$n"); do
		echo "== guest $g ($(mr_rxe_guest_ip "$g"))"
		mr_rxe_run "$tag" "$g" 20 "rdma link show; ibv_devinfo | grep -E 'state|active_mtu'"
	done
	[ -n "$(mr_rxe_loss_dropped "$tag")" ] && echo "loss rule: $(mr_rxe_loss_dropped "$tag") dropped"
	;;
down) mr_rxe_down "$tag" ;;
demo)
	why=$(mr_rxe_can_run) || { echo "guest.sh: $why" >&2; exit 77; }
	trap 'mr_rxe_down "$tag"' EXIT
	mr_rxe_up "$tag" 2 1500 || exit 1
	"$0" --tag "$tag" pair 1 2 ib_write_bw -d rxe0 -x 1 -F --report_gbits -s 65536 -n 200
	;;
*) usage ;;
esac
