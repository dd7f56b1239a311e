# SPDX-License-Identifier: GPL-2.0-only
#
# bench-common.sh - sourced by the bench-*.sh scripts: parses their common
# options (-k KERNEL, -o DIR, -h), sets $top, $kernel and $out (absolute,
# created), installs missing packages and builds the make targets given in
# $bench_targets.  The sourcing script's header comment is its --help.

top=$(cd "$(dirname "$0")/.." && pwd)
kernel=6.12
out=$top/results
while [ $# -gt 0 ]; do
	case $1 in
	-k) kernel=$2; shift 2 ;;
	-o) out=$2; shift 2 ;;
	-h|--help) sed -n '3,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "$0"; exit 0 ;;
	*) echo "$(basename "$0"): unknown option $1" >&2; exit 2 ;;
	esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)

echo "[1/3] packages and build"
"$top/scripts/install-deps.sh" --bench
# shellcheck disable=SC2086 # a list of targets
make -s -C "$top" $bench_targets
