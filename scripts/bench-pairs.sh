#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench-pairs.sh [-k KERNEL] [-o DIR] [-q] - how zcx's figures vary from
# one pair of processes to the next, against the peers measured beside
# each pair.
#
# Under QEMU/TCG a pair's figures depend on where its pages landed (see
# "Why zcx's figures vary between runs in the guest" in the README), so
# one pair, or the three of make bench-all, can mislead.  In one KERNEL
# guest (default 6.12) this runs PAIRS (default 10; 4 with -q) rounds of:
# zcx ping-pong latency at 8 KiB and streaming bandwidth at 1 MiB
# (build/bench/xfer_bench, enter mode, each on a new pair), the same with
# ucx_perftest over UCX_TLS=posix,cma (tag_lat, tag_bw), and the
# bandwidth of process_vm_readv (build/bench/peer_bench -T cma).  Writes DIR/pairs.csv
# (round,system,test,bytes,value: ns or MB/s) and DIR/pairs.md: every
# round, the medians, and in how many rounds zcx meets issue 4's targets
# (8 KiB latency no worse than UCX shared memory; 1 MiB bandwidth at
# least 0.9x process_vm_readv and no worse than UCX posix,cma).
# Default DIR: results/.
set -euo pipefail

# In the guest: the rounds, as CSV rows on stdout.
if [ "${1:-}" = --guest ]; then
	rounds=$2 port=14000
	cd "$(dirname "$0")/.."
	ucx() { # TEST BYTES ITERATIONS
		port=$((port + 1))
		UCX_TLS=posix,cma,self timeout 300 ucx_perftest -p $port -c 0 -t "$1" -s "$2" \
			-n "$3" > /dev/null 2>&1 &
		sleep 0.5
		# The summary line: iterations, p50, average (µs per message), ...
		UCX_TLS=posix,cma,self timeout 300 ucx_perftest 127.0.0.1 -p $port -c 1 -t "$1" \
			-s "$2" -n "$3" -f 2> /dev/null | awk -v r="$round" -v t="$1" -v s="$2" '
			NF >= 7 && $1 ~ /^[0-9]+$/ {
				if (t == "tag_lat") printf "%d,ucx-posix+cma,lat,%d,%.0f\n", r, s, $3 * 1000
				else printf "%d,ucx-posix+cma,bw,%d,%.1f\n", r, s, s / $3
			}' | tail -n 1 || true	# a failed UCX run: no row
		wait || true
	}
	# rows "system,test,param,rep,value" as round,system,test,bytes,value
	rows() { awk -F, -v r="$round" -v OFS=, '$2 == "lat" || $2 == "bw" { print r, $1, $2, $3, $5 }'; }
	for round in $(seq "$rounds"); do
		build/bench/xfer_bench -m enter -T lat -s 8192 -r 1 -t 150 | rows
		build/bench/xfer_bench -m enter -T bw -s 1048576 -r 1 -t 150 | rows
		ucx tag_lat 8192 20000
		ucx tag_bw 1048576 300
		build/bench/peer_bench -T cma -r 1 -t 100 | awk -F, '$2 == "bw" && $3 == 1048576' | rows
	done
	exit 0
fi

bench_targets="lib bench"
# Two busy-polling processes need a TCG thread each (see bench-xfer.sh).
export VM_ACCEL=${VM_ACCEL:-tcg}
# shellcheck source=bench-common.sh
. "$(dirname "$0")/bench-common.sh"

rounds=${PAIRS:-10}
[ "$quick" = 0 ] || rounds=${PAIRS:-4}

echo "[2/3] $rounds rounds in the $kernel guest (about $((rounds * 5)) s each)"
run=$top/build/vm/bench-pairs
rm -rf "$run"
"$top/scripts/vm-run.sh" --kernel "$kernel" --module tree -t 1800 -o "$run" \
	--cmd "scripts/bench-pairs.sh --guest $rounds > '$run/pairs.csv'"
{ echo round,system,test,bytes,value; cat "$run/pairs.csv"; } > "$out/pairs.csv"

echo "[3/3] report"
awk -f "$top/scripts/median.awk" -f "$top/scripts/bench-pairs-report.awk" "$out/pairs.csv" |
	tee "$out/pairs.md"
