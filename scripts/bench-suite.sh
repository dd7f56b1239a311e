#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench-suite.sh [-k KERNEL] [-o DIR] [-q] - the whole benchmark suite.
#
# One QEMU boot of KERNEL (default 6.12; multi-threaded TCG, -cpu
# max,-erms,-fsrm) with zcx.ko from the tree measures, between processes:
# ping-pong latency (8 B to 4 MiB) and streaming bandwidth (4 KiB to
# 16 MiB) of zcx (doorbell and polling mode) and its peers, ucx_perftest
# (UCX_TLS posix, sysv, posix,cma; tag and stream tests), Open MPI
# (ob1/vader), process_vm_readv and single-thread memcpy; barrier latency
# for 2 to 16 processes (zcx, MPI_Barrier); system calls per message
# (strace for the peers); registration cost for 4 KiB to 64 MiB (zcx
# miss, kernel hit, library hit; ibv_reg_mr on Soft-RoCE).  Then the same
# peers run on the host, with the unit costs (system call, page pin,
# cross-CPU handoff, kernel copy per byte) from which zcx's host figures
# are projected (zcx cannot be loaded on the host).  One progress line
# "[i/N] step" per step.
#
# Times inside the emulated guest are inflated; only ratios between
# figures of the same run carry over to real hardware.
#
# Writes to DIR (default results/): summary.md (the tables, with zcx's
# ratio to each peer, medians [min-max]), suite.csv (every figure: guest,
# host, projection), plot-*.csv and latency.png, bandwidth.png,
# latency-host.png, bandwidth-host.png, barrier.png, registration.png;
# the detailed reports xfer.md/xfer.csv and reg.md/reg.csv, and the raw
# rows xfer-raw.csv, host-raw.csv, reg-raw.csv, and run-info.txt.  With the default DIR the
# table in README.md ("Performance") is replaced by summary.md.
#
# -q: quick mode for development: 2 repetitions of 20 ms each; the
# figures are only indicative.
# Environment: BENCH_REPS (3; XFER_REPS is honoured too), BENCH_MS (150
# per measurement), ZCX_SPIN (passed to libzcx in the guest when set),
# BENCH_REPORT_ONLY=1 (measure nothing: the reports and plots again from
# the raw rows in DIR).
set -euo pipefail

# The steps: build, boot, then the guest's and the host's measurements.
guest_steps=9 host_steps=6
[ "${BENCH_PARTS:-all}" = xfer ] && guest_steps=8 host_steps=0
step_total=$((2 + guest_steps + host_steps + 1))
start=$SECONDS
bench_targets="lib bench"
# shellcheck source=bench-common.sh
. "$(dirname "$0")/bench-common.sh"

if [ "$quick" = 1 ]; then
	reps=${BENCH_REPS:-2} ms=${BENCH_MS:-20}
else
	reps=${BENCH_REPS:-${XFER_REPS:-3}} ms=${BENCH_MS:-${XFER_MS:-150}}
fi
load_at_start=$(cut -d' ' -f1 /proc/loadavg)
name=bench-suite; [ "${BENCH_PARTS:-all}" = xfer ] && name=bench-xfer

# BENCH_REPORT_ONLY=1: the tables, CSV and plots again from DIR's raw rows.
if [ -n "${BENCH_REPORT_ONLY:-}" ]; then
	run=$top/build/vm/$name-report rc=0 step_no=$((step_total - 1))
	mkdir -p "$run"
else
# --- the guest ------------------------------------------------------------------
step_no=2
echo "[2/$step_total] guest: booting $kernel with zcx.ko from the tree ($reps repetitions of $ms ms)"
guest_env="BENCH_STEP=$step_no BENCH_STEPS=$step_total XFER_REPS=$reps XFER_MS=$ms"
[ "${BENCH_PARTS:-all}" = xfer ] || guest_env+=" XFER_REG=1"
[ -z "${ZCX_SPIN:-}" ] || guest_env+=" ZCX_SPIN=$ZCX_SPIN"
rc=0
for attempt in 1 2; do
	run=$top/build/vm/$name-$attempt
	rm -rf "$run"
	mkdir -p "$run"
	: > "$run/progress"
	rc=0
	# vm-run.sh prints the guest's output at the end; the progress lines
	# come live from the run directory instead.
	VM_ACCEL=${VM_ACCEL:-tcg} "$top/scripts/vm-run.sh" --kernel "$kernel" --module tree -t 2400 \
		-o "$run" --cmd "$guest_env scripts/bench-xfer.sh --guest '$run'" > /dev/null &
	vm=$!
	tail -n +1 -F --pid=$vm "$run/progress" 2> /dev/null || true
	wait $vm || rc=$?
	# Retried only when the guest measured nothing: it did not boot (127)
	# or the module did not build or load (125).
	if [ "$(wc -l < "$run/raw.csv" 2>/dev/null || echo 0)" -gt 1 ] || { [ $rc != 127 ] && [ $rc != 125 ]; }; then
		break
	fi
	[ $attempt = 2 ] || echo "$name: the guest measured nothing (exit $rc), retrying once" >&2
done
[ -s "$run/raw.csv" ] || { echo "$name: no results (exit $rc); logs in $run" >&2; exit 1; }
[ $rc = 0 ] || echo "$name: the guest run failed (exit $rc): figures may be missing; logs in $run" >&2
cp "$run/raw.csv" "$out/xfer-raw.csv"
step_no=$((2 + guest_steps))

# --- the host: the same peers, and the unit costs of zcx's projection ----------
if [ $host_steps -gt 0 ]; then
	raw=$out/host-raw.csv log=$run/host.log prefix=host- where=host progress=''
	# shellcheck source=bench-measure.sh
	. "$top/scripts/bench-measure.sh"
	cd "$top"
	echo "system,test,param,rep,value" > "$raw"
	: > "$log"
	measure_copy_peers units
	measure_mpi
	for tls in posix sysv posix,cma; do
		measure_ucx $tls
	done
	cp "$run/reg.csv" "$out/reg-raw.csv" 2>/dev/null || echo "$name: the guest measured no registration" >&2
fi
# What the report says about the run (kept for BENCH_REPORT_ONLY).
elapsed=$((SECONDS - start))
{
	echo "$(date -u +%Y-%m-%d), kernel $kernel, $reps × $ms ms, measured in $((elapsed / 60)) min $((elapsed % 60)) s"
	echo "Host: $(nproc) CPUs, load average $load_at_start at the start, $(cut -d' ' -f1 /proc/loadavg) at the end"
} > "$out/run-info.txt"
fi

# --- reports and plots ------------------------------------------------------------
step_no=$((step_no + 1))
echo "[$step_no/$step_total] report: tables, CSV and plots in $out"
awk -f "$top/scripts/median.awk" -f "$top/scripts/bench-xfer-report.awk" -v csv="$out/xfer.csv" "$out/xfer-raw.csv" > "$out/xfer.md"
if [ "${BENCH_PARTS:-all}" = xfer ]; then
	cat "$out/xfer.md"
	echo "$name: $(( (SECONDS - start) / 60 )) min $(( (SECONDS - start) % 60 )) s"
	exit $rc
fi
if [ -s "$out/reg-raw.csv" ]; then
	awk -f "$top/scripts/median.awk" -f "$top/scripts/bench-reg-report.awk" -v csv="$out/reg.csv" "$out/reg-raw.csv" > "$out/reg.md"
fi
inputs=("$out/xfer-raw.csv" "$out/host-raw.csv")
[ ! -s "$out/reg-raw.csv" ] || inputs+=("$out/reg-raw.csv")
{
	echo "### zcx against its peers ($(sed -n 1p "$out/run-info.txt" 2>/dev/null))"
	echo ""
	sed -n 2p "$out/run-info.txt" 2>/dev/null || true
	echo "(other work on the host disturbs both the guest and the host figures)."
	# A busy host: say so where the figures are.
	sed -n 2p "$out/run-info.txt" 2>/dev/null | awk '
		{ cpus = $2; load = $6 }
		cpus > 0 && load >= cpus {
			print ""
			print "**The host was busy during this run** (load average " load " on " cpus " CPUs): the"
			print "guest'"'"'s vCPUs wait for host CPUs, which costs whatever sleeps in the guest a"
			print "scheduler tick at a time. zcx waits by spinning (`ZCX_SPIN` polls), then"
			print "sleeping; the peers only spin, so zcx'"'"'s figures suffer most. Re-run on an idle"
			print "host for figures to quote."
		}'
	echo ""
	awk -f "$top/scripts/median.awk" -f "$top/scripts/bench-suite-report.awk" -v dir="$out" "${inputs[@]}"
	echo ""
	echo "Plots: latency.png, bandwidth.png (guest), latency-host.png, bandwidth-host.png"
	echo "(host, zcx projected), barrier.png, registration.png. Details: xfer.md, reg.md."
} > "$out/summary.md"
if command -v gnuplot > /dev/null; then
	gnuplot -e "dir='$out'" "$top/scripts/bench-plots.gp" 2>> "$run/host.log" ||
		echo "$name: gnuplot failed (see $run/host.log)" >&2
else
	echo "$name: no gnuplot (apt-get install gnuplot-nox): no plots" >&2
fi
if [ "$out" = "$top/results" ] && grep -q '^<!-- bench-suite table -->' "$top/README.md"; then
	# The README's table is the summary of this run, nothing else.
	awk -v table="$out/summary.md" '
		/^<!-- bench-suite table -->/ { print; while ((getline l < table) > 0) print l; skip = 1; next }
		/^<!-- end of the bench-suite table -->/ { skip = 0 }
		!skip' "$top/README.md" > "$top/README.md.new"
	mv "$top/README.md.new" "$top/README.md"
	echo "$name: README.md's Performance table updated from $out/summary.md"
fi
cat "$out/summary.md"
echo "$name: done in $(( (SECONDS - start) / 60 )) min $(( (SECONDS - start) % 60 )) s; results in $out"
exit $rc
