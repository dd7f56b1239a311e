#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench-poll.sh [-k KERNEL] [-o DIR] [-q] - system calls per message in
# polling mode, with and without a CPU for every thread.
#
# A ZCX_EP_POLL endpoint's kernel thread takes what its process posts, so
# a busy process rings no doorbell.  But a ping-pong is four threads (two
# processes, their two polling threads), and the default guest has two
# vCPUs: the polling threads then share them (ZCX_SQ_CPU_SHARED) and the
# waiting processes take their submissions themselves, a system call
# per message as in enter mode.  This boots the KERNEL guest (default
# 6.12) with 2 and then with 4 vCPUs and, on each, runs xfer_bench's
# latency and bandwidth tests at 8 B, 8 KiB and 1 MiB in enter and in
# polling mode, counting the system calls of both sides per message
# (zcx_ep_syscalls()); and, with 2 vCPUs, the times of both modes.
#
# The 4 vCPUs share the host's cores, so a vCPU may wait a host
# scheduler slice (milliseconds) for its turn.  In both guests zcx.ko is
# therefore loaded with poll_idle_us=1000000 and libzcx spins with
# ZCX_SPIN=100000000, so that polling threads with a CPU of their own
# and the waiters do not go to sleep between two messages (threads that
# share a CPU nap and sleep whatever poll_idle_us).  The times of the
# 4-vCPU run are not zcx's and are not reported.  Writes DIR/poll.csv
# (vcpus,system,test,bytes,value: calls per message, ns or MB/s) and
# DIR/poll.md (default results/).  -q: shorter runs.
set -euo pipefail

sizes="8 8192 1048576"

# In the guest: the structural rows as CSV on stdout, prefixed with VCPUS.
if [ "${1:-}" = --guest ]; then
	vcpus=$2 ms=$3
	cd "$(dirname "$0")/.."
	ko=build/kmod-$(uname -r)/zcx.ko
	rmmod zcx
	insmod "$ko" poll_idle_us=1000000
	for size in $sizes; do
		ZCX_SPIN=100000000 build/bench/xfer_bench -m both -T lat,bw -s "$size" -r 1 -t "$ms" |
			awk -F, -v c="$vcpus" -v OFS=, '
				$2 ~ /syscalls$/ || (c == 2 && ($2 == "lat" || $2 == "bw")) {
					print c, $1, $2, $3, $5
				}'
	done
	exit 0
fi

bench_targets="lib bench"
# Busy-polling threads need a TCG thread each (see bench-xfer.sh).
export VM_ACCEL=${VM_ACCEL:-tcg}
# shellcheck source=bench-common.sh
. "$(dirname "$0")/bench-common.sh"

ms=150
[ "$quick" = 0 ] || ms=50

echo vcpus,system,test,bytes,value > "$out/poll.csv"
step=2
for vcpus in 2 4; do
	echo "[$step/4] $vcpus vCPUs in the $kernel guest"
	run=$top/build/vm/bench-poll-$vcpus
	rm -rf "$run"
	VM_SMP=$vcpus "$top/scripts/vm-run.sh" --kernel "$kernel" --module tree -t 900 -o "$run" \
		--cmd "scripts/bench-poll.sh --guest $vcpus $ms > '$run/poll.csv'"
	cat "$run/poll.csv" >> "$out/poll.csv"
	step=$((step + 1))
done

echo "[4/4] report"
awk -F, -v sizes="$sizes" '
NR > 1 { v[$1, $2, $3, $4] = $5 }
function cell(c, sys, test, s) { return ((c, sys, test, s) in v) ? sprintf("%.2f", v[c, sys, test, s]) : "-" }
END {
	print "## System calls per message in polling mode (QEMU/TCG guest)"
	print ""
	print "Both sides of a ping-pong (lat) and of a stream of windows of sends (bw),"
	print "per message, in enter mode (a doorbell per batch) and polling mode"
	print "(ZCX_EP_POLL), with 2 vCPUs (two processes and two polling threads"
	print "share them) and with 4 (a vCPU for each thread)."
	print ""
	print "| test | bytes | enter, 2 vCPUs | poll, 2 vCPUs | enter, 4 vCPUs | poll, 4 vCPUs |"
	print "|---|---|---|---|---|---|"
	n = split(sizes, size_list, " ")
	for (t = 1; t <= 2; t++) {
		test = t == 1 ? "syscalls" : "bw_syscalls"
		for (i = 1; i <= n; i++) {
			s = size_list[i]
			printf "| %s | %s | %s | %s | %s | %s |\n", t == 1 ? "lat" : "bw", s,
			       cell(2, "zcx-enter", test, s), cell(2, "zcx-poll", test, s),
			       cell(4, "zcx-enter", test, s), cell(4, "zcx-poll", test, s)
			if ((4, "zcx-poll", test, s) in v) {
				x = v[4, "zcx-poll", test, s] + 0
				if (x > worst) worst = x
				seen++
			}
		}
	}
	print ""
	if (seen == 2 * n)
		printf "- polling mode with a vCPU per thread, most system calls per message: %.2f\n", worst
	else
		print "- polling mode with a vCPU per thread: figures missing (see the guest logs)"
	print "- What remains there: a polling thread that found another task on its vCPU"
	print "  said so (ZCX_SQ_CPU_SHARED), and its process took its submissions itself."
	print ""
	print "With 2 vCPUs, the times of the two modes (latency one way in µs, bandwidth"
	print "in MB/s; one pair of processes each, so subject to the pair-to-pair spread"
	print "the README describes):"
	print ""
	print "| bytes | lat, enter | lat, poll | poll ÷ enter | bw, enter | bw, poll | poll ÷ enter |"
	print "|---|---|---|---|---|---|---|"
	for (i = 1; i <= n; i++) {
		s = size_list[i]
		le = v[2, "zcx-enter", "lat", s]; lp = v[2, "zcx-poll", "lat", s]
		be = v[2, "zcx-enter", "bw", s]; bp = v[2, "zcx-poll", "bw", s]
		printf "| %s | %s | %s | %s | %s | %s | %s |\n", s,
		       le ? sprintf("%.1f", le / 1000) : "-", lp ? sprintf("%.1f", lp / 1000) : "-",
		       le && lp ? sprintf("%.2f", lp / le) : "-",
		       be ? sprintf("%.0f", be) : "-", bp ? sprintf("%.0f", bp) : "-",
		       be && bp ? sprintf("%.2f", bp / be) : "-"
	}
}' "$out/poll.csv" | tee "$out/poll.md"
