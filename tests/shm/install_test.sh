#!/bin/sh
# Installs libmetaroce into a staging root, builds examples/ with its Makefile using only
# pkg-config, checks the library exports only mrc_* and links no DPDK, then runs hello_write
# against shm_loopd (the shm server with a loopback fake backend).
# usage: install_test.sh BUILD_DIR SOURCE_DIR SHM_LOOPD   (env EXTRA_CFLAGS: e.g. sanitizers)
set -eu
build=$1 src=$2 loopd=$3
tmp=$(mktemp -d /tmp/mrshm-install.XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

meson install -C "$build" --no-rebuild --tags devel --destdir "$tmp/root" >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log"; echo "FAIL: meson install"; exit 1; }
pc=$(find "$tmp/root" -name metaroce.pc | head -1)
[ -n "$pc" ] || { echo "FAIL: metaroce.pc not installed"; exit 1; }
for h in metaroce.h types.h shm_abi.h; do
	[ -n "$(find "$tmp/root" -path "*/include/metaroce/$h")" ] || { echo "FAIL: $h missing"; exit 1; }
done
so=$(find "$tmp/root" -name 'libmetaroce.so.*' -type f | head -1)
[ -n "$so" ] || { echo "FAIL: libmetaroce.so not installed"; exit 1; }
libdir=$(dirname "$so")
if ldd "$so" | grep -q -i 'rte_\|dpdk'; then echo "FAIL: libmetaroce links DPDK"; exit 1; fi
bad=$(nm -D --defined-only "$so" | awk '$2 == "T" && $3 !~ /^mrc_/ {print $3}')
[ -z "$bad" ] || { echo "FAIL: exported non-mrc_ symbols: $bad"; exit 1; }

export PKG_CONFIG_PATH="$(dirname "$pc")" PKG_CONFIG_SYSROOT_DIR="$tmp/root"
echo "pkg-config: $(pkg-config --cflags --libs metaroce)"
mkdir "$tmp/ex"
cp "$src/examples/hello_write.c" "$src/examples/Makefile" "$tmp/ex/"
make -C "$tmp/ex" CFLAGS="-O2 -Wall -Wextra -Werror ${EXTRA_CFLAGS:-}" \
	LDFLAGS="${EXTRA_CFLAGS:-}" >"$tmp/make.log" 2>&1 ||
	{ cat "$tmp/make.log"; echo "FAIL: make"; exit 1; }

sock="$tmp/loopd.sock"
"$loopd" "$sock" 60 &
pid=$!
i=0
while [ ! -S "$sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
out=$(LD_LIBRARY_PATH="$libdir" "$tmp/ex/hello_write" "$sock")
echo "$out"
echo "$out" | grep -q 'wrote "hello, metaroce"' || { echo "FAIL: hello_write"; exit 1; }
# Without a daemon the example must fail cleanly with a message, not crash.
if LD_LIBRARY_PATH="$libdir" "$tmp/ex/hello_write" "$tmp/none.sock" 2>"$tmp/err"; then
	echo "FAIL: hello_write succeeded without a daemon"; exit 1
fi
grep -q "cannot reach the daemon" "$tmp/err" || { cat "$tmp/err"; echo "FAIL: message"; exit 1; }
echo PASS
