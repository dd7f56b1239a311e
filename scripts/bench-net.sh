#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench-net.sh [-k KERNEL] [-o DIR] [-q] - zcx through the RDMA backend
# against the NIC's own tools and UCX.
#
# In one KERNEL guest (default 6.12): Soft-RoCE on a veth with 10.77.0.1
# and zcx_ib listening there; two processes then measure, on that one
# device, zcx through its queue pairs (build/bench/xfer_bench -n:
# ping-pong latency, half the round trip, and streaming bandwidth, enter
# and polling mode) and perftest (ib_send_lat for latency; ib_write_bw
# and ib_read_bw, the operation zcx's rendezvous uses, for bandwidth)
# and UCX over verbs (ucx_perftest tag_lat and tag_bw, rc_verbs).
# zcx's figures include what perftest leaves out: matching, and the
# first message's registrations, which both sides keep for the next
# ones (perftest registers its buffer once); and, in enter mode, with
# zcx_ib's reg_cache=0, registering and invalidating every message's
# pages on both sides.  Then the
# registration-heavy case, on the same device: build/examples/
# zcx_verbs_perf registering, RDMA WRITEing and deregistering a buffer
# (of four in turn) for every message with plain verbs, against one zcx
# message of the same size (half of the ping-pong's round trip: neither
# overlaps messages).  Packets per message too, zcx's and ib_send_lat's,
# from the device's sent_pkts counter: a count that does not depend on
# the emulation's speed; and the registrations zcx asked of the device
# per message (its dev_regs_posted counters), kept and with reg_cache=0.
# All of it NET_REPS times (default 3), the systems taking turns in each
# repetition, on new processes and buffers: the emulated times of zcx and
# of perftest alike swing by half from one set of buffers to the next (see
# "Why zcx's figures vary between runs in the guest" in the README), so
# the report gives each figure's median [min-max] and the ratios of the
# medians.  Writes DIR/net.csv (system,test,bytes,rep,value: ns, MB/s, or
# a count per message) and DIR/net.md (default results/).  The guest is
# emulated: only ratios carry over.  -q: fewer sizes, shorter runs and
# one repetition.
set -euo pipefail

# In the guest: Soft-RoCE on a veth, zcx_ib listening there, then the
# repetitions, as rows "system,test,bytes,rep,value" on stdout.  The sizes
# and counts come in the environment (set below).
if [ "${1:-}" = --guest ]; then
	cd "$(dirname "$0")/.."
	ip link add zcxbv0 type veth peer name zcxbv1
	ip addr add 10.77.0.1/24 dev zcxbv0
	ip link set zcxbv0 up
	ip link set zcxbv1 up
	modprobe rdma_rxe
	rdma link add zcxb0 type rxe netdev zcxbv0
	modprobe rdma_cm
	insmod "build/kmod-$(uname -r)/zcx_ib.ko" listen=10.77.0.1
	# Packets the device has sent (both ends of every test are on it).
	pkts() { cat /sys/class/infiniband/zcxb0/ports/1/hw_counters/sent_pkts; }
	# zcx: xfer_bench's figures, as system $1 (empty: xfer_bench's name).
	zcx() {
		local as=$1
		shift
		build/bench/xfer_bench "$@" | awk -F, -v OFS=, -v as="$as" -v r="$rep" '
			$2 == "lat" || $2 == "bw" || $2 == "pkts" || $2 == "regs" {
				print as == "" ? $1 : as, $2, $3, r, $5 }'
	}
	# perftest: a server, then its client on the same device.
	pt() {
		"$@" > /dev/null 2>&1 &
		local srv=$!
		for _ in $(seq 100); do ss -Hltn 'sport = :18515' | grep -q . && break; sleep 0.1; done
		"$@" 10.77.0.1 | awk '$1 ~ /^[0-9]+$/ && NF >= 5'
		wait $srv
	}
	# UCX over verbs: RC carries the data, UD only wires up (rc_verbs
	# needs an auxiliary transport).  UD on Soft-RoCE gets through only
	# with the link-local GID (index 0): with the IPv4 one UCX's UD
	# endpoints time out.  One batch (-b) of every size, one server.
	ucx_env=("UCX_TLS=rc_verbs,ud_verbs,self" "UCX_NET_DEVICES=zcxb0:1" "UCX_IB_GID_INDEX=0")
	batch=$(mktemp)
	for s in $lat_sizes; do
		n=$iters
		[ "$s" -le 65536 ] || n=30
		echo "lat,$s -t tag_lat -s $s -n $n -w $((n / 10 + 2))"
	done > "$batch"
	for s in $bw_sizes; do echo "bw,$s -t tag_bw -s $s -n $bw_iters -w 10"; done >> "$batch"
	for rep in $(seq "$reps"); do
		zcx "" -n -T lat,bw -r 1 -t "$ms"
		echo 0 > /sys/module/zcx_ib/parameters/reg_cache
		zcx zcx-net-noreg -n -m enter -T lat -r 1 -t "$ms"
		echo 1 > /sys/module/zcx_ib/parameters/reg_cache
		for s in $lat_sizes; do
			# A 1 MiB round trip takes tens of ms here.
			n=$iters
			[ "$s" -le 65536 ] || n=300
			p0=$(pkts)
			# t_avg; perftest has printed "inf" there.
			pt ib_send_lat -d zcxb0 -F -s "$s" -n "$n" | awk -v s="$s" -v r="$rep" '
				$6 !~ /inf|nan/ && $6 + 0 > 0 { printf "perftest,lat,%d,%d,%.0f\n", s, r, $6 * 1000 }'
			# n round trips: two messages each.
			awk -v s="$s" -v r="$rep" -v d=$(($(pkts) - p0)) -v n="$n" \
				'BEGIN { printf "perftest,pkts,%d,%d,%.2f\n", s, r, d / (2 * n) }'
		done
		for s in $bw_sizes; do
			for t in write read; do
				pt "ib_${t}_bw" -d zcxb0 -F -s "$s" -n "$bw_iters" |
					awk -v s="$s" -v t="$t" -v r="$rep" \
						'{ printf "perftest-%s,bw,%d,%d,%.1f\n", t, s, r, $4 * 1.048576 }'
			done
		done
		env "${ucx_env[@]}" timeout 600 ucx_perftest -p 13337 -b "$batch" > /dev/null 2>&1 &
		srv=$!
		for _ in $(seq 100); do ss -Hltn 'sport = :13337' | grep -q . && break; sleep 0.1; done
		# name (kind,size), iterations, p50, average (µs per message), ...
		env "${ucx_env[@]}" timeout 600 ucx_perftest 10.77.0.1 -p 13337 -b "$batch" -f -v 2> /dev/null |
			awk -F, -v r="$rep" '($1 == "lat" || $1 == "bw") && $5 !~ /inf|nan/ && $5 + 0 > 0 {
				gsub(/ /, "")
				if ($1 == "lat") printf "ucx-rc,lat,%d,%d,%.0f\n", $2, r, $5 * 1000
				else printf "ucx-rc,bw,%d,%d,%.1f\n", $2, r, $2 / $5 }' || true
		kill $srv 2> /dev/null || true
		wait $srv || true
		# Register, WRITE, deregister per message: the whole, and the
		# registration alone (mode,size,iters,us_per_msg,reg_us_per_msg,bad).
		for s in $reg_sizes; do
			build/examples/zcx_verbs_perf -s "$s" -n "$reg_iters" | awk -F, -v r="$rep" '$6 == 0 {
				printf "verbs-reg-per-msg,lat,%d,%d,%.0f\n", $2, r, $4 * 1000
				printf "verbs-reg-per-msg,reg,%d,%d,%.0f\n", $2, r, $5 * 1000 }'
		done
	done
	rm -f "$batch"
	exit 0
fi

bench_targets="lib verbs bench examples"
# Two busy-polling processes need a TCG thread each (see bench-xfer.sh).
export VM_ACCEL=${VM_ACCEL:-tcg}
# shellcheck source=bench-common.sh
. "$(dirname "$0")/bench-common.sh"

lat_sizes="8 4096 8192 65536 1048576"
bw_sizes="65536 1048576 4194304"
reg_sizes="65536 1048576"
ms=300 iters=2000 bw_iters=300 reg_iters=60 reps=${NET_REPS:-3}
[ "$quick" = 0 ] || { lat_sizes="8 8192 1048576"; bw_sizes="1048576"; reg_sizes=1048576; ms=100; iters=500; bw_iters=100; reg_iters=20; reps=${NET_REPS:-1}; }

echo "[2/3] running in the $kernel guest ($reps × a few minutes)"
run=$top/build/vm/bench-net
rm -rf "$run"
"$top/scripts/vm-run.sh" --kernel "$kernel" --module tree -t $((600 + reps * 1200)) -o "$run" \
	--cmd "reps=$reps ms=$ms iters=$iters bw_iters=$bw_iters reg_iters=$reg_iters \
lat_sizes='$lat_sizes' bw_sizes='$bw_sizes' reg_sizes='$reg_sizes' \
scripts/bench-net.sh --guest > '$run/rows.csv'"
{ echo system,test,bytes,rep,value; cat "$run/rows.csv"; } > "$out/net.csv"

echo "[3/3] report"
tail -n +2 "$out/net.csv" | sort -t, -k3,3n |
	awk -f "$top/scripts/median.awk" -f "$top/scripts/bench-net-report.awk" -v reps="$reps" |
	tee "$out/net.md"
