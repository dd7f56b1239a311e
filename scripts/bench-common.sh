# SPDX-License-Identifier: GPL-2.0-only
#
# bench-common.sh - sourced by the bench-*.sh scripts: parses their common
# options (-k KERNEL, -o DIR, -q, -h), sets $top, $kernel, $out (absolute,
# created) and $quick (1 with -q), installs missing packages and builds the
# make targets given in $bench_targets: step 1 of $step_total (default 3).
# The sourcing script's header comment is its --help.

top=$(cd "$(dirname "$0")/.." && pwd)
kernel=6.12
out=$top/results
quick=0
while [ $# -gt 0 ]; do
	case $1 in
	-k) kernel=$2; shift 2 ;;
	-o) out=$2; shift 2 ;;
	-q) quick=1; shift ;;
	-h|--help) sed -n '3,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "$0"; exit 0 ;;
	*) echo "$(basename "$0"): unknown option $1" >&2; exit 2 ;;
	esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)

echo "[1/${step_total:-3}] packages and build"
"$top/scripts/install-deps.sh" --bench
# shellcheck disable=SC2086 # a list of targets
make -s -C "$top" $bench_targets
