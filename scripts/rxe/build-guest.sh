#!/usr/bin/env bash
# Builds the Linux soft-RoCE (rdma_rxe) guest: Debian 12's stock kernel (unpacked, never
# installed) and an initramfs with busybox, rdma-core, perftest and the RDMA-CM/verbs utilities.
# The result is cached under a directory keyed by every input's version (kernel, user-space
# packages, these scripts), so a second run only prints the path.
#
# Usage: build-guest.sh [--out DIR] [--no-install] [--force]
#   --out DIR     cache root (default $MR_RXE_CACHE or /var/cache/metaroce-rxe)
#   --no-install  do not apt-get install missing host packages (fail instead)
#   --force       rebuild even if the cached guest exists
# Prints the guest directory (vmlinuz, initrd.img, manifest.txt) as the last line of stdout.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${MR_RXE_CACHE:-/var/cache/metaroce-rxe}
install=1
force=0
while [ $# -gt 0 ]; do
	case "$1" in
	--out) out=$2; shift ;;
	--no-install) install=0 ;;
	--force) force=1 ;;
	-h|--help) sed -n '2,11p' "$0"; exit 0 ;;
	*) echo "build-guest.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
	shift
done
log() { echo "build-guest: $*" >&2; }
die() { echo "build-guest: ERROR: $*" >&2; exit 1; }

# Host tools and the user-space packages whose binaries go into the initramfs.
HOST_PKGS=(qemu-system-x86 busybox-static rdma-core ibverbs-providers ibverbs-utils perftest
	rdmacm-utils iproute2 kmod cpio gzip python3 nftables tcpdump)
GUEST_PKGS=(busybox-static rdma-core ibverbs-providers ibverbs-utils perftest rdmacm-utils
	iproute2 libc6 libgcc-s1)

pkg_ok() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
missing=()
for p in "${HOST_PKGS[@]}"; do pkg_ok "$p" || missing+=("$p"); done
apt_updated=0
apt_update() {
	[ "$apt_updated" = 1 ] && return 0
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -qq >&2
	apt_updated=1
}
if [ ${#missing[@]} -gt 0 ]; then
	[ "$install" = 1 ] || die "missing packages: ${missing[*]}"
	[ "$(id -u)" = 0 ] || die "missing packages: ${missing[*]} (run as root to install them)"
	log "installing ${missing[*]}"
	apt_update
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
		--no-install-recommends "${missing[@]}" >&2
fi

# The kernel: whatever Debian 12's linux-image-amd64 metapackage currently depends on.
kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
if [ -z "$kpkg" ]; then
	apt_update
	kpkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
fi
[ -n "$kpkg" ] || die "cannot resolve linux-image-amd64"
kver_pkg=$(apt-cache policy "$kpkg" | awk '/Candidate:/ {print $2; exit}')
[ -n "$kver_pkg" ] && [ "$kver_pkg" != "(none)" ] || die "no candidate for $kpkg"
kver=${kpkg#linux-image-}

# Cache key: every input that changes the image.
key_src=$( {
	echo "$kpkg=$kver_pkg"
	for p in "${GUEST_PKGS[@]}"; do dpkg-query -W -f='${Package}=${Version}\n' "$p"; done
	cat "$here/build-guest.sh" "$here/guest-init.sh" "$here/guest-agent.sh"
} )
key=$(printf '%s' "$key_src" | sha256sum | cut -c1-16)
gdir="$out/guest-$kver-$key"
if [ "$force" = 0 ] && [ -s "$gdir/vmlinuz" ] && [ -s "$gdir/initrd.img" ] && [ -s "$gdir/manifest.txt" ]; then
	log "cached: $gdir"
	echo "$gdir"
	exit 0
fi

t0=$(date +%s)
mkdir -p "$out/debs"
chown _apt "$out/debs" 2>/dev/null || true  # apt-get download drops privileges to _apt
deb=$(ls "$out/debs/${kpkg}_"*"${kver_pkg##*:}"*_amd64.deb 2>/dev/null | head -n 1 || true)
if [ -z "$deb" ]; then
	log "downloading $kpkg=$kver_pkg"
	(cd "$out/debs" && apt-get -o DPkg::Lock::Timeout=300 download "$kpkg=$kver_pkg" >&2) ||
		{ apt_update; (cd "$out/debs" && apt-get download "$kpkg=$kver_pkg" >&2); }
	deb=$(ls "$out/debs/${kpkg}_"*_amd64.deb | head -n 1)
fi
[ -f "$deb" ] || die "kernel package not downloaded"

work=$(mktemp -d "$out/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT
log "unpacking $(basename "$deb")"
kroot="$work/kroot"
mkdir -p "$kroot"
dpkg-deb -x "$deb" "$kroot"
[ -f "$kroot/boot/vmlinuz-$kver" ] || die "no vmlinuz-$kver in $deb"
depmod -b "$kroot" "$kver"

# Modules: NIC and console transports, soft-RoCE with RDMA-CM, and the crc32 providers rxe's
# ICRC needs (without crc32_generic/crc32-pclmul `rdma link add` fails with ENOENT).
WANT_MODS=(virtio_pci virtio_net virtio_console crc32_generic crc32-pclmul rdma_rxe rdma_ucm)
rootfs="$work/rootfs"
mkdir -p "$rootfs"/{bin,sbin,usr/bin,usr/sbin,usr/lib,usr/lib64,etc/libibverbs.d,proc,sys,dev,tmp,run,root}
ln -s usr/lib "$rootfs/lib"
ln -s usr/lib64 "$rootfs/lib64"
mkdir -p "$rootfs/lib/modules"
: > "$rootfs/etc/mr-modules"
for m in "${WANT_MODS[@]}"; do
	modprobe -d "$kroot" -S "$kver" --show-depends "$m" | while read -r kind path _; do
		[ "$kind" = insmod ] || continue
		f=$(basename "$path")
		case "$f" in
		*.ko.xz) dst=${f%.xz}; [ -f "$rootfs/lib/modules/$dst" ] || xz -dc "$path" > "$rootfs/lib/modules/$dst" ;;
		*.ko.zst) dst=${f%.zst}; [ -f "$rootfs/lib/modules/$dst" ] || zstd -qdc "$path" > "$rootfs/lib/modules/$dst" ;;
		*) dst=$f; [ -f "$rootfs/lib/modules/$dst" ] || cp "$path" "$rootfs/lib/modules/$dst" ;;
		esac
		grep -qx "$dst" "$rootfs/etc/mr-modules" || echo "$dst" >> "$rootfs/etc/mr-modules"
	done
done
grep -q '^rdma_rxe.ko$' "$rootfs/etc/mr-modules" || die "rdma_rxe not found in $kpkg"

# Binaries with every library they load (ldd), copied to their canonical (merged-/usr) path.
BINS=(/usr/bin/ib_write_bw /usr/bin/ib_write_lat /usr/bin/ib_read_bw /usr/bin/ib_read_lat
	/usr/bin/ib_send_bw /usr/bin/ib_send_lat /usr/bin/ib_atomic_bw /usr/bin/ib_atomic_lat
	/usr/bin/ibv_rc_pingpong /usr/bin/ibv_uc_pingpong /usr/bin/ibv_ud_pingpong
	/usr/bin/ibv_srq_pingpong /usr/bin/ibv_devinfo /usr/bin/ibv_devices
	/usr/bin/rping /usr/bin/ucmatose /usr/bin/udaddy /usr/bin/rdma /usr/sbin/ip
	/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so)
copy_file() { # copies a host file to the same canonical path in the rootfs
	local real
	real=$(readlink -f "$1")
	[ -f "$rootfs$real" ] && return 0
	mkdir -p "$rootfs$(dirname "$real")"
	cp "$real" "$rootfs$real"
	# Keep the name the loader asks for (a soname symlink, /lib64/ld-linux...) pointing at the
	# real file; absolute targets resolve inside the guest's root.
	local asked
	asked="$(readlink -f "$(dirname "$1")")/$(basename "$1")"
	if [ "$asked" != "$real" ]; then
		mkdir -p "$rootfs$(dirname "$asked")"
		ln -sfn "$real" "$rootfs$asked"
	fi
}
for b in "${BINS[@]}"; do
	[ -e "$b" ] || die "missing $b"
	copy_file "$b"
	ldd "$b" | awk '/=> \// {print $3} /^\t\/[^ ]+ \(/ {print $1}' | while read -r lib; do copy_file "$lib"; done
done
# libgcc_s is dlopen()ed by glibc for pthread_cancel/unwinding: ldd does not list it.
copy_file /usr/lib/x86_64-linux-gnu/libgcc_s.so.1
cp /etc/libibverbs.d/rxe.driver "$rootfs/etc/libibverbs.d/"
cp /bin/busybox "$rootfs/bin/busybox"
file_is_static() { ! ldd "$1" >/dev/null 2>&1; }
file_is_static "$rootfs/bin/busybox" || die "/bin/busybox is not static (busybox-static not installed?)"
cp "$here/guest-init.sh" "$rootfs/init"
cp "$here/guest-agent.sh" "$rootfs/bin/mr-agent"
chmod 755 "$rootfs/init" "$rootfs/bin/mr-agent"
printf 'root:x:0:0:root:/root:/bin/sh\n' > "$rootfs/etc/passwd"
printf 'root:x:0:\n' > "$rootfs/etc/group"
printf '127.0.0.1 localhost\n' > "$rootfs/etc/hosts"

mkdir -p "$work/out"
cp "$kroot/boot/vmlinuz-$kver" "$work/out/vmlinuz"
(cd "$rootfs" && find . -print0 | sort -z | cpio --null -o -H newc --quiet) | gzip -6 > "$work/out/initrd.img"
{
	echo "kernel $kpkg=$kver_pkg"
	for p in "${GUEST_PKGS[@]}"; do dpkg-query -W -f='${Package} ${Version}\n' "$p"; done
	echo "modules $(tr '\n' ' ' < "$rootfs/etc/mr-modules")"
	echo "initrd_bytes $(stat -c %s "$work/out/initrd.img")"
	echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) in $(( $(date +%s) - t0 )) s"
} > "$work/out/manifest.txt"
rm -rf "$gdir"
mv "$work/out" "$gdir"
# Older builds (other package versions or script revisions) are dead weight: keep one.
for old in "$out"/guest-*; do
	[ "$old" = "$gdir" ] || rm -rf "$old"
done
log "built $gdir in $(( $(date +%s) - t0 )) s"
echo "$gdir"
