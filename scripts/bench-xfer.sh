#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench-xfer.sh [-k KERNEL] [-o DIR] [-q] - transport benchmark: the part
# of bench-suite.sh that needs no host run and no registration.
#
# Boots KERNEL (default 6.12) in QEMU with zcx.ko from the tree and, in
# that one guest, measures between two processes: ping-pong latency (8 B
# to 4 MiB) and streaming bandwidth (4 KiB to 16 MiB) of zcx (enter and
# polling mode), ucx_perftest over posix, sysv and posix,cma (tag and
# stream tests), Open MPI (ob1/vader), process_vm_readv and single-thread
# memcpy; and barrier latency for 2 to 16 processes, zcx against
# MPI_Barrier.  System calls per message come from zcx_ep_syscalls() for
# zcx, from strace -f -c (the difference between a short and a longer run)
# for UCX and MPI.  Writes DIR/xfer-raw.csv, DIR/xfer.csv (median, min,
# max of the repetitions) and DIR/xfer.md (default results/).  Times
# inside the emulated guest are inflated; only ratios between figures of
# the same run carry over to real hardware.
#
# The guest runs with multi-threaded TCG (VM_ACCEL=tcg): with one TCG
# thread for both vCPUs, two polling processes only meet when QEMU
# switches vCPUs (every 4 ms).  A boot that fails is retried once.
# Environment: XFER_REPS (3), XFER_MS (150) per measurement, ZCX_SPIN
# (passed to libzcx in the guest when set); -q: 2 x 20 ms.
set -euo pipefail

# --- in the guest: scripts/bench-xfer.sh --guest RUNDIR ------------------------
if [ "${1:-}" = --guest ]; then
	run=$2
	reps=${XFER_REPS:-3} ms=${XFER_MS:-200}
	raw=$run/raw.csv log=$run/bench.log
	prefix='' where=guest progress=$run/progress
	step_no=${BENCH_STEP:-1} step_total=${BENCH_STEPS:-11}
	# shellcheck source=bench-measure.sh
	. scripts/bench-measure.sh
	echo "system,test,param,rep,value" > "$raw"
	: > "$log"
	export HOME=/tmp
	measure_zcx
	measure_copy_peers ""
	measure_mpi
	for tls in posix sysv posix,cma; do
		measure_ucx $tls
	done
	measure_syscalls
	# bench-suite.sh measures registration in the same guest (XFER_REG=1).
	[ -z "${XFER_REG:-}" ] || measure_reg "$run/reg.csv"
	exit 0
fi

# --- on the host: bench-suite.sh without registration and host peers --------------
BENCH_PARTS=xfer exec "$(dirname "$0")/bench-suite.sh" "$@"
