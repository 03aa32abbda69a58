# Sourced by scripts: installs the Debian packages metaroce needs (idempotent, non-interactive).
MR_DEPS=(meson ninja-build pkg-config gcc libcmocka-dev python3 python3-scapy libpcap-dev
	dpdk libdpdk-dev libbpf-dev iproute2 ethtool clang llvm libclang-rt-14-dev python3-matplotlib
	libibverbs-dev ibverbs-utils perftest rdma-core)  # stack/verbs builds on verbs.h; tests/verbs

mr_install_deps() {
	local missing=()
	for p in "${MR_DEPS[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" != 0 ]; then
		echo "missing packages: ${missing[*]} (run as root to install them)" >&2
		return 1
	fi
	echo "installing: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get -o DPkg::Lock::Timeout=300 update -qq
	apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${missing[@]}"
}
