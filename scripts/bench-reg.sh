#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench-reg.sh [-k KERNEL] [-o DIR] - registration cost benchmark.
#
# Boots KERNEL (default 6.12) in QEMU with zcx.ko from the tree and a
# Soft-RoCE device on lo, runs build/bench/reg_bench there REG_REPS times
# (1), and writes DIR/reg-raw.csv (every run), DIR/reg.csv (median, min,
# max) and DIR/reg.md (default results/).  bench-suite.sh measures the same
# in its guest (scripts/bench-measure.sh).  Times inside the emulated guest
# are inflated; only the ratios between figures of the same run carry over
# to real hardware.
set -euo pipefail

bench_targets="lib bench"
# shellcheck source=bench-common.sh
. "$(dirname "$0")/bench-common.sh"

# The guest writes into its run directory, which it always sees.
run=$top/build/vm/bench-reg
reps=${REG_REPS:-1}
"$top/scripts/vm-run.sh" --kernel "$kernel" --module tree -t 1800 -o "$run" \
	--cmd "reps=$reps ms=200 raw=/dev/null log='$run/bench.log' prefix='' where=guest step_no=1 step_total=3
	. scripts/bench-measure.sh
	measure_reg '$run/reg-raw.csv'"
cp "$run/reg-raw.csv" "$out/reg-raw.csv"

echo "[3/3] report"
awk -f "$top/scripts/median.awk" -f "$top/scripts/bench-reg-report.awk" -v csv="$out/reg.csv" "$out/reg-raw.csv" > "$out/reg.md"
cat "$out/reg.md"
