#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench-xfer.sh [-k KERNEL] [-o DIR] - transport benchmark.
#
# Boots KERNEL (default 6.12) in QEMU with zcx.ko from the tree and, in
# that one guest, measures between two processes: ping-pong latency (8 B
# to 4 MiB) and streaming bandwidth (4 KiB to 16 MiB) of zcx (enter and
# polling mode), ucx_perftest over posix, sysv and posix,cma, Open MPI
# (ob1/vader), process_vm_readv and single-thread memcpy; and barrier
# latency for 2 to 16 processes, zcx against MPI_Barrier.  System calls per
# message come from zcx_ep_syscalls() for zcx, from strace -f -c (the
# difference between a short and a longer run) for UCX and MPI.  Writes
# DIR/xfer.csv (median, min, max of the repetitions) and DIR/xfer.md
# (default results/).  Times inside the emulated guest are inflated; only
# ratios between figures of the same run carry over to real hardware.
#
# The guest runs with multi-threaded TCG (VM_ACCEL=tcg): with one TCG
# thread for both vCPUs, two polling processes only meet when QEMU
# switches vCPUs (every 4 ms).  A boot that fails is retried once.
# Environment: XFER_REPS (3), XFER_MS (200) per measurement, ZCX_SPIN
# (passed to libzcx in the guest when set).
set -euo pipefail

# --- in the guest: scripts/bench-xfer.sh --guest RUNDIR ------------------------
if [ "${1:-}" = --guest ]; then
	run=$2
	reps=${XFER_REPS:-3} ms=${XFER_MS:-200}
	raw=$run/raw.csv log=$run/bench.log
	b=build/bench
	echo "system,test,param,rep,value" > "$raw"
	: > "$log"
	# Open MPI refuses a node called "(none)"; nothing here needs a network.
	hostname zcxvm
	export HOME=/tmp
	lat_sizes="8 64 512 4096 8192 65536 262144 1048576 4194304"
	bw_sizes="4096 16384 65536 262144 1048576 4194304 16777216"
	note() { echo "== $(date +%T) $*"; echo "== $(date +%T) $*" >> "$log"; }
	rows() { grep -v '^system,' >> "$raw" || true; }

	note "zcx: xfer_bench"
	if ! timeout 600 $b/xfer_bench -r "$reps" -t "$ms" 2>> "$log" | rows; then
		note "xfer_bench FAILED (see above)"
	fi

	note "memcpy and process_vm_readv: peer_bench"
	timeout 300 $b/peer_bench -r "$reps" -t "$ms" 2>> "$log" | rows

	# shellcheck disable=SC2054 # the commas are Open MPI's
	mpirun=(mpirun --allow-run-as-root --oversubscribe --mca btl self,vader --mca pml ob1)
	if [ -x $b/mpi_bench ]; then
		note "Open MPI: mpi_bench (ob1, vader)"
		timeout 300 "${mpirun[@]}" -np 2 --bind-to core $b/mpi_bench -r "$reps" -t "$ms" \
			2>> "$log" | rows || note "mpi_bench FAILED"
		for n in 2 4 8 16; do
			timeout 300 "${mpirun[@]}" -np $n --bind-to none $b/mpi_bench -b -r "$reps" \
				-t "$ms" 2>> "$log" | rows || note "mpi_bench -b (np $n) FAILED"
		done
	else
		note "no build/bench/mpi_bench (mpicc missing): MPI skipped"
	fi

	# ucx_perftest: one server per test (it exits after one), client on
	# 127.0.0.1, the two pinned to different CPUs.  "avg_lat" (column 4)
	# is half the round trip for *_lat tests and the time per message
	# for *_bw tests, in microseconds.
	port=13337 ucx_out=''
	ucx() { # TLS TEST SIZE ITERS: the client's CSV line in $ucx_out
		local tls=$1 test=$2 size=$3 n=$4 warm=$(( $4 / 10 + 2 )) _
		for _ in 1 2 3; do
			port=$((port + 1))
			UCX_TLS=$tls,self timeout 120 ucx_perftest -p $port -c 0 >> "$log" 2>&1 &
			sleep 0.3
			if ucx_out=$(UCX_TLS=$tls,self timeout 120 ucx_perftest 127.0.0.1 -p $port -c 1 \
					-t "$test" -s "$size" -n "$n" -w $warm -f -v 2>> "$log" | tail -n 1) &&
			   [ -n "$ucx_out" ]; then
				wait || true
				return 0
			fi
			wait || true
		done
		return 1
	}
	# Iterations: about XFER_MS at the guest's usual speed (ucx_perftest
	# has no time limit of its own).
	lat_iters() { local n=$(( 335544 * ms / $1 )); [ $n -gt 20000 ] && n=20000; [ $n -lt 30 ] && n=30; echo $n; }
	bw_iters() { local n=$(( 671088 * ms / $1 )); [ $n -gt 20000 ] && n=20000; [ $n -lt 8 ] && n=8; echo $n; }
	for tls in posix sysv posix,cma; do
		sys=ucx-${tls/,/+}
		note "UCX: ucx_perftest UCX_TLS=$tls,self"
		for size in $lat_sizes; do
			for r in $(seq "$reps"); do
				ucx "$tls" tag_lat "$size" "$(lat_iters "$size")" || { note "$sys tag_lat $size FAILED"; continue; }
				echo "$ucx_out" | awk -F, -v s="$sys" -v z="$size" -v r="$r" '{ printf "%s,lat,%s,%s,%.6g\n", s, z, r, $3 * 1000 }' >> "$raw"
			done
		done
		for size in $bw_sizes; do
			for r in $(seq "$reps"); do
				ucx "$tls" tag_bw "$size" "$(bw_iters "$size")" || { note "$sys tag_bw $size FAILED"; continue; }
				echo "$ucx_out" | awk -F, -v s="$sys" -v z="$size" -v r="$r" '{ printf "%s,bw,%s,%s,%.6g\n", s, z, r, z / $3 }' >> "$raw"
			done
		done
	done

	# System calls per message: strace -f -c of a short and a longer run;
	# the difference over the extra messages leaves start-up out.
	calls() { awk '$NF == "total" { n += $1 } END { print n + 0 }' "$@"; }
	per() { awk -v a="$1" -v b="$2" -v m="$3" 'BEGIN { printf "%.3f\n", (b - a) / m }'; }
	if command -v strace > /dev/null; then
		st=/tmp/strace
		mkdir -p $st
		for tls in posix sysv posix,cma; do
			sys=ucx-${tls/,/+}
			for spec in "tag_lat 8192 200 1200 2" "tag_bw 1048576 20 120 1"; do
				# shellcheck disable=SC2086 # split into fields
				set -- $spec
				c=()
				for n in $3 $4; do
					rm -f $st/*
					port=$((port + 1))
					UCX_TLS=$tls,self timeout 120 strace -f -c -U calls,name -o $st/server \
						ucx_perftest -p $port -c 0 >> "$log" 2>&1 &
					sleep 1
					UCX_TLS=$tls,self timeout 120 strace -f -c -U calls,name -o $st/client \
						ucx_perftest 127.0.0.1 -p $port -c 1 -t "$1" -s "$2" -n "$n" \
						-w 0 -f >> "$log" 2>&1 || note "$sys strace $1 FAILED"
					wait || true
					c+=("$(calls $st/server $st/client)")
				done
				test=syscalls; [ "$1" = tag_bw ] && test=bw_syscalls
				echo "$sys,$test,$2,0,$(per "${c[0]}" "${c[1]}" $(( ($4 - $3) * $5 )))" >> "$raw"
			done
		done
		if [ -x $b/mpi_bench ]; then
			for spec in "lat 8192 200 1200 2" "bw 1048576 2 12 16"; do
				# shellcheck disable=SC2086 # split into fields
				set -- $spec
				c=()
				for n in $3 $4; do
					rm -f $st/*
					timeout 300 "${mpirun[@]}" -np 2 --bind-to core sh -c \
						"exec strace -f -c -U calls,name -o $st/rank\$OMPI_COMM_WORLD_RANK $b/mpi_bench -x $1 -s $2 -n $n" \
						>> "$log" 2>&1 || note "mpi strace $1 FAILED"
					c+=("$(calls $st/rank*)")
				done
				test=syscalls; [ "$1" = bw ] && test=bw_syscalls
				echo "mpi,$test,$2,0,$(per "${c[0]}" "${c[1]}" $(( ($4 - $3) * $5 )))" >> "$raw"
			done
		fi
	fi
	note "done"
	exit 0
fi

# --- on the host ---------------------------------------------------------------
bench_targets="lib bench"
# shellcheck source=bench-common.sh
. "$(dirname "$0")/bench-common.sh"

echo "[2/3] running in the $kernel guest (about 15 minutes)"
rc=0
for attempt in 1 2; do
	run=$top/build/vm/bench-xfer-$attempt
	rc=0
	VM_ACCEL=${VM_ACCEL:-tcg} "$top/scripts/vm-run.sh" --kernel "$kernel" --module tree -t 2400 \
		-o "$run" --cmd "XFER_REPS=${XFER_REPS:-3} XFER_MS=${XFER_MS:-200} ${ZCX_SPIN:+ZCX_SPIN=$ZCX_SPIN }scripts/bench-xfer.sh --guest '$run'" || rc=$?
	# Retried only when the guest measured nothing: it did not boot (127)
	# or the module did not build or load (125).
	if [ "$(wc -l < "$run/raw.csv" 2>/dev/null || echo 0)" -gt 1 ] || { [ $rc != 127 ] && [ $rc != 125 ]; }; then
		break
	fi
	[ $attempt = 2 ] || echo "bench-xfer: the guest measured nothing (exit $rc), retrying once" >&2
done
[ -s "$run/raw.csv" ] || { echo "bench-xfer: no results (exit $rc); logs in $run" >&2; exit 1; }
cp "$run/raw.csv" "$out/xfer-raw.csv"

echo "[3/3] report"
"$top/scripts/bench-xfer-report.awk" -v csv="$out/xfer.csv" "$out/xfer-raw.csv" > "$out/xfer.md"
cat "$out/xfer.md"
if [ $rc != 0 ]; then
	echo "bench-xfer: the guest run failed (exit $rc): figures may be missing; logs in $run" >&2
	exit $rc
fi
