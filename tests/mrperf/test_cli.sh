#!/bin/sh
# SPDX-License-Identifier: MIT
# mrperf's command line as a user sees it: bad flags exit 2 and name the flag, --help exits 0,
# a missing daemon is a clean runtime error (exit 1), never a crash.
mrperf=$1
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

expect() { # expect CODE NEEDLE ARGS...
	code=$1; needle=$2; shift 2
	"$mrperf" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" -ne "$code" ]; then
		echo "FAIL: mrperf $* exited $rc, expected $code"; cat "$tmp/err"; fail=1; return
	fi
	if [ -n "$needle" ] && ! grep -q -e "$needle" "$tmp/out" "$tmp/err"; then
		echo "FAIL: mrperf $*: output lacks '$needle'"; cat "$tmp/out" "$tmp/err"; fail=1; return
	fi
	echo "ok: mrperf $* -> $rc"
}

expect 2 "-s" write_bw -s 0
expect 2 "--size" write_bw --size=abc
expect 2 "-m" write_bw -m 1500
expect 2 "-p" write_bw -p 65536
expect 2 "-q" send_bw -q 0
expect 2 "unknown option '--frob'" write_bw --frob
expect 2 "unknown test 'write_bandwidth'" write_bandwidth
expect 2 "-n/--iters" write_bw -D 2 -n 10
expect 2 "needs a value" write_bw --json
expect 0 "report_gbits" --help
# no daemon at this socket: a runtime error naming the socket
expect 1 "$tmp/none.sock" write_bw --sock "$tmp/none.sock" -F -x 1 -d rxe0 --report_gbits
expect 1 "cannot reach metaroced" send_lat 127.0.0.1 --sock "$tmp/none.sock"
expect 1 "is metaroced running" write_bw --sock "$tmp/none.sock"
expect 2 "metaroced has one port" write_bw -i 2
expect 1 "is metaroced running" write_bw -d mlx5_0 -i 1 -s 64K --report_gbits --sock "$tmp/none.sock"
# stock perftest flags metaroce cannot honour: exit 1, one line naming the flag and why
expect 1 "-R/--rdma_cm: metaroce has no RDMA CM" write_bw -R
expect 1 "-c/--connection: UD" send_bw -c UD
expect 1 "-b/--bidirectional: bandwidth tests only" write_lat -b
expect 0 "perftest" -V
expect 1 "is metaroced running" --test=send_bw -b -e --use-srq --sock "$tmp/none.sock"
# run under a perftest name, the name is the test
ln -s "$(readlink -f "$mrperf")" "$tmp/ib_read_lat"
mrperf="$tmp/ib_read_lat"
expect 1 "is metaroced running" -o 2 --sock "$tmp/none.sock"
expect 1 "-I/--inline_size" -I 16
exit $fail
