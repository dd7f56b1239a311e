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
# Writes DIR/net.csv (system,test,bytes,value: ns or MB/s) and
# DIR/net.md (default results/).  The guest is emulated: only ratios
# carry over.  -q: fewer sizes and shorter runs.
set -euo pipefail

bench_targets="lib verbs bench examples"
# Two busy-polling processes need a TCG thread each (see bench-xfer.sh).
export VM_ACCEL=${VM_ACCEL:-tcg}
# shellcheck source=bench-common.sh
. "$(dirname "$0")/bench-common.sh"

lat_sizes="8 4096 8192 65536 1048576"
bw_sizes="65536 1048576 4194304"
reg_sizes="65536 1048576"
ms=300 iters=2000 bw_iters=300 reg_iters=60
[ "$quick" = 0 ] || { lat_sizes="8 8192 1048576"; bw_sizes="1048576"; reg_sizes=1048576; ms=100; iters=500; bw_iters=100; reg_iters=20; }

echo "[2/3] running in the $kernel guest (a few minutes)"
run=$top/build/vm/bench-net
rm -rf "$run"
"$top/scripts/vm-run.sh" --kernel "$kernel" --module tree -t 2400 -o "$run" \
	--cmd "set -e
	ip link add zcxbv0 type veth peer name zcxbv1
	ip addr add 10.77.0.1/24 dev zcxbv0
	ip link set zcxbv0 up; ip link set zcxbv1 up
	modprobe rdma_rxe
	rdma link add zcxb0 type rxe netdev zcxbv0
	modprobe rdma_cm
	insmod build/kmod-\$(uname -r)/zcx_ib.ko listen=10.77.0.1
	csv='$run/net.csv'
	echo system,test,bytes,value > \$csv
	build/bench/xfer_bench -n -T lat,bw -r 1 -t $ms | awk -F, -v OFS=, \
		'\$2 == \"lat\" || \$2 == \"bw\" || \$2 == \"pkts\" || \$2 == \"regs\" { print \$1, \$2, \$3, \$5 }' >> \$csv
	echo 0 > /sys/module/zcx_ib/parameters/reg_cache
	build/bench/xfer_bench -n -m enter -T lat -r 1 -t $ms | awk -F, -v OFS=, \
		'\$2 == \"lat\" || \$2 == \"regs\" { print \"zcx-net-noreg\", \$2, \$3, \$5 }' >> \$csv
	echo 1 > /sys/module/zcx_ib/parameters/reg_cache
	# Packets the device has sent (both ends of every test are on it).
	pkts() { cat /sys/class/infiniband/zcxb0/ports/1/hw_counters/sent_pkts; }
	# perftest: a server, then its client on the same device.
	pt() {
		\"\$@\" > /dev/null 2>&1 & srv=\$!
		for i in \$(seq 100); do ss -Hltn 'sport = :18515' | grep -q . && break; sleep 0.1; done
		\"\$@\" 10.77.0.1 | awk '\$1 ~ /^[0-9]+\$/ && NF >= 5'
		wait \$srv
	}
	for s in $lat_sizes; do
		p0=\$(pkts)
		pt ib_send_lat -d zcxb0 -F -s \$s -n $iters |
			awk -v s=\$s '{ printf \"perftest,lat,%d,%.0f\\n\", s, \$6 * 1000 }' >> \$csv
		# $iters round trips: two messages each.
		awk -v s=\$s -v d=\$((\$(pkts) - p0)) \
			'BEGIN { printf \"perftest,pkts,%d,%.2f\\n\", s, d / (2 * $iters) }' >> \$csv
	done
	for s in $bw_sizes; do
		for t in write read; do
			pt ib_\${t}_bw -d zcxb0 -F -s \$s -n $bw_iters |
				awk -v s=\$s -v t=\$t '{ printf \"perftest-%s,bw,%d,%.1f\\n\", t, s, \$4 * 1.048576 }' >> \$csv
		done
	done
	# UCX over verbs: RC carries the data, UD only wires up (rc_verbs
	# needs an auxiliary transport).  UD on Soft-RoCE gets through only
	# with the link-local GID (index 0): with the IPv4 one UCX's UD
	# endpoints time out.  One batch (-b) of every size, one server.
	ucx_env='UCX_TLS=rc_verbs,ud_verbs,self UCX_NET_DEVICES=zcxb0:1 UCX_IB_GID_INDEX=0'
	batch=\$(mktemp)
	for s in $lat_sizes; do
		n=$iters; [ \$s -le 65536 ] || n=30
		echo \"lat,\$s -t tag_lat -s \$s -n \$n -w \$((n / 10 + 2))\"
	done > \$batch
	for s in $bw_sizes; do echo \"bw,\$s -t tag_bw -s \$s -n $bw_iters -w 10\"; done >> \$batch
	env \$ucx_env timeout 600 ucx_perftest -p 13337 -b \$batch > /dev/null 2>&1 & srv=\$!
	for i in \$(seq 100); do ss -Hltn 'sport = :13337' | grep -q . && break; sleep 0.1; done
	# name (kind,size), iterations, p50, average (µs per message), ...
	env \$ucx_env timeout 600 ucx_perftest 10.77.0.1 -p 13337 -b \$batch -f -v 2> /dev/null |
		awk -F, '(\$1 == \"lat\" || \$1 == \"bw\") && \$5 !~ /inf|nan/ && \$5 + 0 > 0 {
			gsub(/ /, \"\")
			if (\$1 == \"lat\") printf \"ucx-rc,lat,%d,%.0f\\n\", \$2, \$5 * 1000
			else printf \"ucx-rc,bw,%d,%.1f\\n\", \$2, \$2 / \$5 }' >> \$csv || true
	kill \$srv 2> /dev/null || true
	wait \$srv || true
	rm -f \$batch
	# Register, WRITE, deregister per message: the whole, and the
	# registration alone (mode,size,iters,us_per_msg,reg_us_per_msg,bad).
	for s in $reg_sizes; do
		build/examples/zcx_verbs_perf -s \$s -n $reg_iters | awk -F, '\$6 == 0 {
			printf \"verbs-reg-per-msg,lat,%d,%.0f\\n\", \$2, \$4 * 1000
			printf \"verbs-reg-per-msg,reg,%d,%.0f\\n\", \$2, \$5 * 1000 }' >> \$csv
	done"
cp "$run/net.csv" "$out/net.csv"

echo "[3/3] report"
tail -n +2 "$out/net.csv" | sort -t, -k3,3n | awk -F, '
{
	v[$1 "," $2 "," $3] = $4
	if ($2 == "lat" && !($3 in ls)) { ls[$3] = 1; li[++nl] = $3 }
	if ($2 == "bw" && !($3 in bs)) { bs[$3] = 1; bi[++nb] = $3 }
}
function best(s, test, higher,    z, zp) {
	z = v["zcx-net-enter," test "," s]; zp = v["zcx-net-poll," test "," s]
	if (zp && (!z || (higher ? zp > z : zp < z)))
		z = zp
	return z
}
function ratio(a, b) { return a && b ? sprintf("%.2fx", a / b) : "-" }
function cell(x, fmt) { return x ? sprintf(fmt, x) : "-" }
function regs(x) { return x == "" ? "-" : sprintf("%.2f", x) }
function row(test, s,    z, zp, b, p, pr, u) {
	z = v["zcx-net-enter," test "," s]; zp = v["zcx-net-poll," test "," s]
	b = best(s, test, test == "bw"); u = v["ucx-rc," test "," s]
	if (test == "lat") {
		p = v["perftest,lat," s]
		printf "| %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", s, cell(z / 1000, "%.1f"),
		       cell(zp / 1000, "%.1f"), cell(p / 1000, "%.1f"), cell(u / 1000, "%.1f"),
		       ratio(b, p), ratio(b, u), cell(v["zcx-net-enter,pkts," s], "%.2f"),
		       cell(v["perftest,pkts," s], "%.2f")
	} else {
		p = v["perftest-write,bw," s]; pr = v["perftest-read,bw," s]
		printf "| %d | %s | %s | %s | %s | %s | %s | %s |\n", s, cell(z, "%.0f"), cell(zp, "%.0f"),
		       cell(p, "%.0f"), cell(pr, "%.0f"), cell(u, "%.0f"), ratio(b, pr), ratio(b, u)
	}
}
END {
	print "## zcx through zcx_ib against perftest and UCX (Soft-RoCE on a veth, one QEMU/TCG guest)"
	print ""
	print "Latency: half the round trip, µs (ratios: zcx best mode / peer, lower is better);"
	print "packets the device sent per message (acknowledgements and zcx_ib control messages"
	print "included), which does not depend on the emulation."
	print ""
	print "| bytes | zcx enter | zcx poll | ib_send_lat | UCX rc_verbs | vs perftest | vs UCX | packets, zcx | packets, ib_send_lat |"
	print "|---|---|---|---|---|---|---|---|---|"
	for (i = 1; i <= nl; i++) row("lat", li[i])
	print ""
	print "Bandwidth, MB/s (ratios: zcx best mode / peer, higher is better)."
	print ""
	print "| bytes | zcx enter | zcx poll | ib_write_bw | ib_read_bw | UCX rc_verbs | vs ib_read_bw | vs UCX |"
	print "|---|---|---|---|---|---|---|---|"
	for (i = 1; i <= nb; i++) row("bw", bi[i])
	print ""
	print "A buffer registered for every message: one message, µs (ratio: plain verbs / zcx best"
	print "mode, higher is better for zcx); zcx keeps its registrations, and registers every"
	print "message with reg_cache=0 (enter mode).  Registrations per message: what zcx asked"
	print "of the device on both sides (one per MR; plain verbs: one ibv_reg_mr), which does"
	print "not depend on the emulation: what a NIC whose registrations cost more saves."
	print ""
	print "| bytes | zcx | zcx, reg_cache=0 | ibv_reg_mr + RDMA WRITE + ibv_dereg_mr | of which reg + dereg | ratio | registrations, zcx | zcx, reg_cache=0 |"
	print "|---|---|---|---|---|---|---|---|"
	for (i = 1; i <= nl; i++) {
		s = li[i]; k = "verbs-reg-per-msg,lat," s
		if (!(k in v))
			continue
		z = best(s, "lat", 0)
		printf "| %d | %s | %s | %.1f | %.1f | %s | %s | %s |\n", s, cell(z / 1000, "%.1f"),
		       cell(v["zcx-net-noreg,lat," s] / 1000, "%.1f"), v[k] / 1000,
		       v["verbs-reg-per-msg,reg," s] / 1000, z ? sprintf("%.1fx", v[k] / z) : "-",
		       regs(v["zcx-net-enter,regs," s]), regs(v["zcx-net-noreg,regs," s])
	}
	print ""
	print "Every size, zcx enter mode with its registrations kept and with reg_cache=0, µs."
	print ""
	print "| bytes | kept | reg_cache=0 | ratio |"
	print "|---|---|---|---|"
	for (i = 1; i <= nl; i++) {
		s = li[i]; z = v["zcx-net-enter,lat," s]; zn = v["zcx-net-noreg,lat," s]
		printf "| %d | %s | %s | %s |\n", s, cell(z / 1000, "%.1f"), cell(zn / 1000, "%.1f"),
		       ratio(z, zn)
	}
}' | tee "$out/net.md"
