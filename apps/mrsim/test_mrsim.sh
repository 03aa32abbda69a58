#!/bin/sh
# Runs mrsim with loss and checks its exit status and report; then checks strict argument
# parsing (a bad value names the flag and exits 2). Usage: test_mrsim.sh PATH_TO_MRSIM
set -u
mrsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/out" 2>/dev/null; exit 1; }

"$mrsim" --op write --size 1M --count 4 --mtu 1024 --loss 0.02 --burst 4 --seed 3 \
	--json "$tmp/r.json" >"$tmp/out" 2>&1 || fail "mrsim write with loss exited $?"
cat "$tmp/out"
# 4 x (1 MiB + 64 guard bytes) verified, none wrong; the loss was real and repaired.
grep -Eq '^  bytes verified   4194560 \(0 wrong' "$tmp/out" || fail "no verified bytes line"
grep -Eq '^  packets a->b     [0-9]+ sent, [1-9][0-9]* lost' "$tmp/out" || fail "nothing was lost"
grep -Eq '^  retransmits      [1-9]' "$tmp/out" || fail "no retransmissions reported"
grep -Eq '^  result           OK \(4/4' "$tmp/out" || fail "result not OK"
grep -q '"bytes_verified":4194560' "$tmp/r.json" || fail "json lacks bytes_verified"

"$mrsim" --op read --size 100000 --count 3 --mtu 1024 --loss 0.02 >"$tmp/out" 2>&1 ||
	fail "mrsim read with loss exited $?"
grep -Eq '^  retransmits      [1-9]' "$tmp/out" || fail "read at 2% loss retransmitted nothing"

for bad in "--loss 1.5" "--loss abc" "--mtu 1000" "--size 12Q" "--count 0" "--op frob" \
	   "--rate-gbps -1" "--seed 1x"; do
	flag=${bad%% *}
	# shellcheck disable=SC2086
	"$mrsim" $bad >"$tmp/out" 2>&1
	rc=$?
	[ "$rc" = 2 ] || fail "'$bad' exited $rc, want 2"
	grep -q -- "$flag" "$tmp/out" || fail "'$bad' message does not name $flag"
done
"$mrsim" --bogus 1 >"$tmp/out" 2>&1; [ $? = 2 ] || fail "unknown flag not rejected"
echo "mrsim tool test passed"
