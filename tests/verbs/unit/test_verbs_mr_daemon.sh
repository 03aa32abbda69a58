#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/verbs/unit/test_verbs_mr.c against a real metaroced (net_af_packet on a veth in a
# namespace): the QP pairs of the test are connected to each other on this one daemon, so
# every WRITE/READ/SEND/atomic and the out-of-bounds WRITEs of the guard test go through the
# real transport (responder R_Key and bounds checks). Exit 0 pass, 1 fail, 77 skip.
# Usage: test_verbs_mr_daemon.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../integration/lib.sh"
itl_init verbs_mr_daemon "$1"
bin="$ITL_BUILD/tests/verbs/unit/test_verbs_mr"
[ -x "$bin" ] || itl_fail "$bin not built"
# meson puts the verbs library's directory on LD_LIBRARY_PATH (the test links it): the daemon
# must not load its stand-in libmlx5/libefa through DPDK's mlx5 driver; the test binary finds
# it through its RUNPATH.
. "$ITL_ROOT/scripts/lib/perf_check.sh"
mr_strip_verbs_dir "$ITL_BUILD/stack/verbs/lib"
itl_netns_up 1500
itl_daemon_conf a 1500
itl_daemon_start a
"$bin" --sock "$ITL_WORK/a.sock" > "$ITL_WORK/test.log" 2>&1 || itl_fail "test_verbs_mr failed"
grep -q "PASSED.*10 test" "$ITL_WORK/test.log" || itl_fail "not all tests ran: $(tail -3 "$ITL_WORK/test.log")"
itl_ok "$(grep PASSED "$ITL_WORK/test.log")"
itl_daemon_stop a
