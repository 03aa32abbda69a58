# Sourced by scripts and tests: checks of perftest / ibverbs-utils output (the stock tools' and
# mrperf/mrpingpong's, which print the same lines). Used by the rxe interop rig
# (scripts/interop-rxe.sh) and the stock-binary tests (tests/verbs).

# Checks one side's perftest / ibv_rc_pingpong output against what was asked: the result line
# must exist with the requested size and iterations and a positive figure, and perftest's
# "Mtu" header line must show the expected IB MTU (ITERS "any": a -D duration run, whatever
# count it reached, but at least one). Prints the figure ("0.13Gb/s", "862.48us",
# "13.84Mb/s") on success; the reason on failure (return 1).
# KIND: bw | lat | pingpong | passive (the server of ib_read_lat/ib_atomic_lat, which prints
# no result: the exchange must have completed and the MTU must match)
mr_perf_check() { # FILE KIND SIZE ITERS IB_MTU
	awk -v kind="$2" -v size="$3" -v iters="$4" -v mtu="$5" '
	/^ Mtu +:/ { split($0, a, ":"); got_mtu = a[2] + 0 }
	/^ remote address: / { remote = 1 }
	/^ #bytes/ { hdr = 1; next }
	hdr && $1 ~ /^[0-9]+$/ && NF >= 5 { rb = $1; ri = $2; hdr = 0; found = 1
		if (kind == "bw") val = $4; else val = $6 }
	/ bytes in .* seconds = / { pb = $1; prate = $(NF - 1) }
	/ iters in .* seconds = / { pi = $1; pus = $(NF - 1); found = 1 }
	END {
		if (kind == "pingpong") {
			if (!found) { print "no pingpong result"; exit 1 }
			if (iters != "any" && pi != iters) { print "iters " pi " != " iters; exit 1 }
			if (pb != 2 * size * iters) { print "bytes " pb " != " 2 * size * iters; exit 1 }
			if (!(prate > 0)) { print "rate " prate; exit 1 }
			printf "%sMb/s,%sus/iter\n", prate, pus; exit 0
		}
		if (kind == "passive") {
			if (got_mtu != mtu) { print "MTU " got_mtu " != " mtu; exit 1 }
			if (!remote) { print "no remote address (setup exchange incomplete)"; exit 1 }
			print "passive"; exit 0
		}
		if (!found) { print "no result line"; exit 1 }
		if (got_mtu != mtu) { print "MTU " got_mtu " != " mtu; exit 1 }
		if (rb != size) { print "size " rb " != " size; exit 1 }
		if (iters == "any" && !(ri > 0)) { print "iterations " ri; exit 1 }
		if (iters != "any" && ri != iters) { print "iterations " ri " != " iters; exit 1 }
		if (!(val > 0)) { print "figure " val " not positive"; exit 1 }
		printf "%s%s\n", val, kind == "bw" ? "Gb/s" : "us"
	}' "$1"
}

# The same for an `-a` run: one result row per size, each power of two from MIN to MAX present
# once with ITERS iterations and a positive figure (larger sizes may follow). Prints
# "N sizes, MIN..LARGEST" (or "passive" for a passive server).
mr_perf_check_sizes() { # FILE KIND MIN MAX ITERS IB_MTU
	[ "$2" = passive ] && { mr_perf_check "$1" passive 0 0 "$6"; return; }
	awk -v kind="$2" -v lo="$3" -v hi="$4" -v iters="$5" -v mtu="$6" '
	/^ Mtu +:/ { split($0, a, ":"); got_mtu = a[2] + 0 }
	/^ #bytes/ { hdr = 1; next }
	hdr && /^-+$/ { hdr = 0 }
	hdr && $1 ~ /^[0-9]+$/ && NF >= 5 {
		v = kind == "bw" ? $4 : $6
		if (seen[$1]++) { print "size " $1 " reported twice"; bad = 1; exit 1 }
		if ($2 != iters) { print "size " $1 ": iterations " $2 " != " iters; bad = 1; exit 1 }
		if (!(v > 0)) { print "size " $1 ": figure " v " not positive"; bad = 1; exit 1 }
		n++; if ($1 + 0 > top) top = $1 + 0
	}
	END {
		if (bad) exit 1
		if (got_mtu != mtu) { print "MTU " got_mtu " != " mtu; exit 1 }
		for (s = lo; s <= hi; s *= 2)
			if (!(s in seen)) { print "size " s " missing"; exit 1 }
		printf "%d sizes, %d..%d\n", n, lo, top
	}' "$1"
}

# meson test puts the build directories of a test's shared-library dependencies on
# LD_LIBRARY_PATH; when that is the metaroce verbs library's private directory (DIR), every
# program started from the test loads the stand-in libibverbs/libmlx5 (metaroced's DPDK mlx5
# plugin then fails: "version MLX5_1.14 not found"). Only metaroce-run may put DIR there.
mr_strip_verbs_dir() { # DIR
	local out= d
	local IFS=:
	for d in ${LD_LIBRARY_PATH:-}; do
		[ -n "$d" ] && [ "$d" != "$1" ] && [ "$(readlink -f "$d")" != "$(readlink -f "$1")" ] &&
			out=${out:+$out:}$d
	done
	if [ -n "$out" ]; then export LD_LIBRARY_PATH=$out; else unset LD_LIBRARY_PATH; fi
}
