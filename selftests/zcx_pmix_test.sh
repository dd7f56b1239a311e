#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# zcx_pmix_test.sh - libzcx-pmix: examples/zcx_pmix_ring's processes find
# each other through PMIx (Open MPI's mpirun as the launcher), pass
# checked messages round a ring (zero-copy and inline sizes) and meet at a
# barrier; alone it is a ring of one; with a launcher it cannot reach it
# fails at once; five ranks meet in a group (-N) on the node; a group in
# which one rank's part fails (tools/zcx_pmix_group_check) fails in every
# rank, none waiting for ever, whether that rank failed after the
# addresses were traded or before; a process's two job handles trade
# apart; as root,
# also through the RDMA backend (-N -F: Soft-RoCE on a veth of its own,
# zcx_ib listening, a group barrier).  TAP output;
# skips without mpirun, the example or /dev/zcx.
set -u

here=$(cd "$(dirname "$0")" && pwd)
ring=${ZCX_PMIX_RING:-$here/../build/examples/zcx_pmix_ring}
# A slow guest (ZCX_SLOW=1, the debug kernel) does fewer rounds.
rounds=100
[ "${ZCX_SLOW:-}" != 1 ] || rounds=20
# As root, Open MPI wants to be told; more ranks than CPUs need
# --oversubscribe.
mpirun=(mpirun --allow-run-as-root --oversubscribe)
check=${ZCX_PMIX_GROUP_CHECK:-$here/../build/tools/zcx_pmix_group_check}
tests=10

echo "TAP version 13"
echo "1..$tests"
if [ ! -x "$ring" ] || [ ! -e /dev/zcx ] || ! command -v mpirun > /dev/null; then
	for i in $(seq 1 $tests); do
		echo "ok $i pmix # SKIP no $ring, /dev/zcx or mpirun"
	done
	exit 4
fi

log=$(mktemp)
status=0
n=0

# verdict NAME RC OK: case NAME's TAP line, ok if RC is 0 and OK is 1;
# else with the log.
verdict() {
	n=$((n + 1))
	if [ "$2" -eq 0 ] && [ "$3" = 1 ]; then
		echo "ok $n pmix.$1"
	else
		sed 's/^/# /' "$log"
		echo "# exit status $2"
		echo "not ok $n pmix.$1"
		status=1
	fi
}

# report NAME RC EXPECTED: ok if RC is 0 and the output has exactly the
# lines of EXPECTED, in any order.
report() {
	local ok=0
	[ "$(grep '^rank ' "$log" | sort)" = "$(sort <<<"$3")" ] && ok=1
	verdict "$1" "$2" $ok
}

# ok_lines NPROCS BYTES: what every rank prints.
ok_lines() {
	local r
	for r in $(seq 0 $(($1 - 1))); do
		echo "rank $r of $1: $rounds rounds, $2 bytes, ok"
	done
}

timeout 120 "$ring" -r $rounds -s 65536 > "$log" 2>&1
report singleton $? "$(ok_lines 1 65536)"

timeout 300 "${mpirun[@]}" -n 4 "$ring" -r $rounds -s 65536 > "$log" 2>&1
report mpirun_4_ranks_zero_copy $? "$(ok_lines 4 65536)"

timeout 300 "${mpirun[@]}" -n 3 "$ring" -r $rounds -s 100 > "$log" 2>&1
report mpirun_3_ranks_inline $? "$(ok_lines 3 100)"

# zcx_pmix_group() of 5 (three rounds, partners wrapping round), on the node.
timeout 300 "${mpirun[@]}" -n 5 "$ring" -N -r 20 -s 100 > "$log" 2>&1
report mpirun_5_ranks_group $? "$(rounds=20 ok_lines 5 100)"

# group_fails NAME NPROCS BAD-RANK OPTION: a group whose rank BAD-RANK
# fails its part (OPTION: -c after the exchange, -e before): that rank
# gets -EINVAL, every other an error too (the test's timeout catches one
# that waits for ever), and no rank passes a barrier.
group_fails() {
	local name=$1 nprocs=$2 bad=$3 opt=$4 rc r line ok=1
	timeout 120 "${mpirun[@]}" -n "$nprocs" "$check" "$opt" "$bad" > "$log" 2>&1
	rc=$?
	for r in $(seq 0 $((nprocs - 1))); do
		line=$(grep "^rank $r: group " "$log")
		if [ "$r" = "$bad" ]; then
			[ "$line" = "rank $r: group -22" ] || ok=0
		else
			[[ $line =~ ^rank\ $r:\ group\ -[0-9]+$ ]] || ok=0
		fi
	done
	! grep -q 'barrier' "$log" || ok=0
	verdict "$name" "$rc" $ok
}

if [ -x "$check" ]; then
	group_fails group_fails_everywhere_after_a_failed_connect 5 2 -c
	group_fails group_fails_everywhere_after_a_failed_create 3 0 -e
else
	for name in after_a_failed_connect after_a_failed_create; do
		n=$((n + 1))
		echo "ok $n pmix.group_fails_everywhere_$name # SKIP no $check"
	done
fi

# A rank that never takes part: with a timeout, the others' group fails
# with -ETIMEDOUT (-110) instead of waiting for ever; the absent rank
# leaves once every other has its outcome.
group_times_out() {
	local nprocs=3 absent=1 rc r line ok=1 dir
	dir=$(mktemp -d)
	timeout 120 "${mpirun[@]}" -n $nprocs "$check" -a $absent -d "$dir" > "$log" 2>&1
	rc=$?
	rm -rf "$dir"
	for r in $(seq 0 $((nprocs - 1))); do
		line=$(grep "^rank $r: " "$log")
		if [ "$r" = "$absent" ]; then
			[ "$line" = "rank $r: away, $((nprocs - 1)) came back" ] || ok=0
		else
			[ "$line" = "rank $r: group -110" ] || ok=0
		fi
	done
	verdict group_times_out_without_a_rank "$rc" $ok
}

if [ -x "$check" ]; then
	group_times_out
else
	n=$((n + 1))
	echo "ok $n pmix.group_times_out_without_a_rank # SKIP no $check"
fi

# Two job handles in each rank, collectives by turns on each: every rank
# gets what every other sent in that collective (100 of them, so that a
# rank one collective ahead of another has its chances to get in the way).
two_handles() {
	local nprocs=3 collectives=100 rc r expected
	timeout 120 "${mpirun[@]}" -n $nprocs "$check" -t $collectives > "$log" 2>&1
	rc=$?
	expected=$(for r in $(seq 0 $((nprocs - 1))); do
		echo "rank $r: $collectives collectives, 0 wrong"
	done)
	report two_job_handles_trade_apart $rc "$expected"
}

if [ -x "$check" ]; then
	two_handles
else
	n=$((n + 1))
	echo "ok $n pmix.two_job_handles_trade_apart # SKIP no $check"
fi

# A job whose launcher is gone: an error, not a job of one.
n=$((n + 1))
PMIX_NAMESPACE=zcx-no-such-job timeout 60 "$ring" -r 1 > "$log" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q 'zcx_pmix_init' "$log" && ! grep -q '^rank ' "$log"; then
	echo "ok $n pmix.unreachable_launcher_fails"
else
	sed 's/^/# /' "$log"
	echo "# exit status $rc"
	echo "not ok $n pmix.unreachable_launcher_fails"
	status=1
fi

# The network of its own: Soft-RoCE on a veth, zcx_ib listening there
# (the tree's next to $ZCX_KO, else the installed one).
net_ip=10.79.0.1
net_up() {
	ip link add zcxpmv0 type veth peer name zcxpmv1 &&
		ip addr add $net_ip/24 dev zcxpmv0 &&
		ip link set zcxpmv0 up && ip link set zcxpmv1 up || return 1
	modprobe rdma_rxe 2>/dev/null
	rdma link add zcxpm0 type rxe netdev zcxpmv0 || return 1
	# The port comes up with the veth's carrier, asynchronously.
	for _ in $(seq 100); do
		grep -q ACTIVE /sys/class/infiniband/zcxpm0/ports/1/state && break
		sleep 0.1
	done
	modprobe rdma_cm 2>/dev/null
	if [ -n "${ZCX_KO:-}" ]; then
		insmod "$(dirname "$ZCX_KO")/zcx_ib.ko" listen=$net_ip
	else
		modprobe zcx_ib listen=$net_ip
	fi
}
net_down() {
	# Connections tear down in the background; then zcx_ib can go.
	for _ in $(seq 300); do
		rmmod zcx_ib 2>/dev/null && break
		sleep 0.1
	done
	rdma link delete zcxpm0 2>/dev/null
	ip link delete zcxpmv0 2>/dev/null
}

n=$((n + 1))
if [ "$(id -u)" != 0 ] || grep -q '^zcx_ib ' /proc/modules; then
	echo "ok $n pmix.mpirun_3_ranks_through_rdma # SKIP needs root and zcx_ib not loaded"
else
	n=$((n - 1))
	if net_up > "$log" 2>&1; then
		timeout 300 "${mpirun[@]}" -n 3 "$ring" -N -F -r 20 -s 65536 > "$log" 2>&1
		rc=$?
	else
		rc=99
	fi
	net_down
	if grep -q '^zcx_ib ' /proc/modules; then
		echo "zcx_ib still loaded after the job" >> "$log"
		rc=98
	fi
	report mpirun_3_ranks_through_rdma $rc "$(rounds=20 ok_lines 3 65536)"
fi

rm -f "$log"
exit $status
