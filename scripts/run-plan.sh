#!/bin/bash
# SPDX-License-Identifier: MIT
# Runs a JSON test plan (configs/plans/*.json; the article's fields plus operations, transport,
# loss, repetitions) through two metaroced over a veth pair (or your running daemons) with
# mrperf, and writes results.csv, results.json and PNG plots into the plan's output_dir, with
# progress and an ETA; --compare OTHER_RESULTS_DIR prints the per-point change and a verdict.
#
#   scripts/run-plan.sh PLAN.json [--compare OTHER_RESULTS_DIR] [--output-dir DIR]
#                       [--build DIR] [--no-install]
#
# From a fresh clone: installs the Debian packages (scripts/lib/deps.sh; root), builds into
# build/ if needed. Needs root for the network namespaces (topology veth).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build"
install=1
args=()
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=$(cd "$2" && pwd); shift 2 ;;
	--no-install) install=0; shift ;;
	-h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) args+=("$1"); shift ;;
	esac
done
[ ${#args[@]} -ge 1 ] || { echo "usage: $0 PLAN.json [--compare DIR] [--output-dir DIR]" >&2; exit 2; }
. "$root/scripts/lib/deps.sh"
if [ "$install" = 1 ]; then
	mr_install_deps || echo "run-plan: some packages are missing (plots need python3-matplotlib)" >&2
fi
if [ ! -x "$build/apps/mrstat/mrstat" ] || [ ! -x "$build/apps/metaroced/metaroced" ]; then
	[ -f "$build/build.ninja" ] || meson setup "$build" "$root" > /dev/null
	ninja -C "$build" > /dev/null
fi
[ "$(id -u)" = 0 ] || echo "run-plan: not root: topology veth needs network namespaces" >&2
# Debian's python3 (with python3-matplotlib), not a python3 earlier in PATH (pyenv, venvs).
py=/usr/bin/python3
[ -x "$py" ] || py=python3
exec "$py" "$root/scripts/plan/run_plan.py" --build "$build" "${args[@]}"
