#!/bin/busybox sh
# Command agent of the rxe guest (installed as /bin/mr-agent in the initramfs), one per
# virtio-serial port. Line protocol, host -> guest, one request per line:
#     MRCMD <id> <timeout-seconds> <base64 of a shell command>
# guest -> host:
#     @@MR-START <id>\n <merged stdout+stderr of the command> \n@@MR-DONE <id> <exit status>\n
# The command runs under `timeout -s KILL`, so a hung tool cannot wedge the port (exit 137).
# The START marker lets the host skip late output of an earlier request it gave up on.
# The host side is scripts/rxe/guestctl.py.
port=$1
exec 3<>"$port"
while :; do
	# A read on a virtio port returns EOF while no host is connected: wait and retry.
	if ! IFS= read -r line <&3; then
		sleep 0.2
		continue
	fi
	set -- $line
	[ "$1" = MRCMD ] && [ $# -eq 4 ] || continue
	id=$2 secs=$3
	echo "$4" | base64 -d > "/tmp/agent-$id.sh" 2>/dev/null || {
		printf '@@MR-START %s\n\n@@MR-DONE %s 126\n' "$id" "$id" >&3
		continue
	}
	printf '@@MR-START %s\n' "$id" >&3
	timeout -s KILL "$secs" sh "/tmp/agent-$id.sh" </dev/null >&3 2>&1
	rc=$?
	rm -f "/tmp/agent-$id.sh"
	printf '\n@@MR-DONE %s %s\n' "$id" "$rc" >&3
done
