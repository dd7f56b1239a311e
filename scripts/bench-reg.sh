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

bench_targets="lib bench"
# shellcheck source=bench-common.sh
. "$(dirname "$0")/bench-common.sh"

echo "[2/3] running in the $kernel guest (a few minutes)"
# The guest writes into its run directory, which it always sees.
run=$top/build/vm/bench-reg
"$top/scripts/vm-run.sh" --kernel "$kernel" --module tree -t 1800 -o "$run" \
	--cmd "set -e
	modprobe rdma_rxe
	rdma link add rxe0 type rxe netdev lo
	build/bench/reg_bench > '$run/reg.csv'"
cp "$run/reg.csv" "$out/reg.csv"

echo "[3/3] report"
"$top/scripts/bench-reg-report.awk" "$out/reg.csv" > "$out/reg.md"
cat "$out/reg.md"
