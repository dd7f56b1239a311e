#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench-reg.sh [-k KERNEL] [-o DIR] - registration cost benchmark.
#
# Boots KERNEL (default 6.12) in QEMU with zcx.ko from the tree and a
# Soft-RoCE device on lo, runs build/bench/reg_bench there, and writes
# DIR/reg.csv and DIR/reg.md (default results/).  Times inside the
# emulated guest are inflated; only the ratios between figures of the same
# run carry over to real hardware.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
kernel=6.12
out=$top/results
while [ $# -gt 0 ]; do
	case $1 in
	-k) kernel=$2; shift 2 ;;
	-o) out=$2; shift 2 ;;
	-h|--help) sed -n '4,11p' "$0"; exit 0 ;;
	*) echo "bench-reg: unknown option $1" >&2; exit 2 ;;
	esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)

echo "[1/3] packages and build"
"$top/scripts/install-deps.sh"
make -s -C "$top" lib bench

echo "[2/3] running in the $kernel guest (a few minutes)"
"$top/scripts/vm-run.sh" --kernel "$kernel" --module tree -t 1800 -o "$top/build/vm/bench-reg" \
	--cmd "set -e
	modprobe rdma_rxe
	rdma link add rxe0 type rxe netdev lo
	build/bench/reg_bench > '$out/reg.csv'"

echo "[3/3] report"
"$top/scripts/bench-reg-report.awk" "$out/reg.csv" > "$out/reg.md"
cat "$out/reg.md"
