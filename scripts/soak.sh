#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The soak: mixed transfers with end-to-end data verification for a chosen
# time while stress-ng churns memory and the application keeps remapping
# its own buffers, in a QEMU guest with zcx.ko loaded.
#
# Usage: scripts/soak.sh [-k KERNEL] [-t SECONDS] [-p PAIRS] [-s SEED] [-N]
#
#   -k KERNEL   debug | 6.1 | 6.12 | full kver (default: debug if
#               scripts/debug-kernel.sh --print finds it built, else 6.12)
#   -t SECONDS  how long the transfers run (default 120)
#   -p PAIRS    process pairs of build/tools/zcx_soak (default 2)
#   -s SEED     seed of zcx_soak's choices (default: random, printed; give
#               it again to replay the same sequence of rounds)
#   -N          through the network backend: Soft-RoCE on a veth in the
#               guest, zcx_ib listening there, and zcx_soak -N (messages,
#               puts and gets through zcx_ib; zcx_ib unloaded after the
#               census, before the runner's leak scan)
#
# In the guest: stress-ng --vm --mmap --madvise --fork --brk runs for the
# same time beside zcx_soak (which is shielded from the OOM killer,
# oom_score_adj -1000; the stressors get RLIMIT_DATA so that they press
# on memory without exhausting it).  Then the checks: zcx_soak's verdict
# (every byte right, no error), the module's live objects back to zero
# (contexts, regions, pinned pages and bytes, endpoints), and on a kernel
# with kmemleak no entry in vm-run.sh's scans; vm-run.sh fails the run on any
# kernel splat.  The last line is the summary:
#   soak: kernel K, N s, ops N, bytes verified N, invalidations N,
#   corruptions=0, leaks=0, splats=0, verdict PASS
# Exit status: 0 pass, 1 a check failed, 2 usage, else vm-run.sh's.
# Environment: VM_MEM (MiB, default 3072 here), VM_HUNG_TASK_SECS (120
# here), VM_SMP, VM_ACCEL as for
# vm-run.sh; logs in build/soak/<kernel>-<pid>/.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"; }

# --- in the guest ----------------------------------------------------------
#
# scripts/soak.sh --guest SECONDS PAIRS SEED DIR [-N]: what runs inside
# the VM (DIR: the run directory, for stress-ng's log).
# Prints "soak-*:" lines for the host side and exits non-zero on a failed
# check.
if [ "${1:-}" = --guest ]; then
	secs=$2 pairs=$3 seed=$4 dir=$5 net=${6:-}
	rc=0
	zstat() { cat "/sys/class/misc/zcx/$1" 2>/dev/null || echo -1; }
	zcxctl=$top/build/tools/zcxctl

	if [ -n "$net" ]; then
		# (On the debug kernel ib_core, rdma_cm and rxe are built in.)
		modprobe rdma_cm 2>/dev/null || true
		ip link add zcxsv0 type veth peer name zcxsv1
		ip addr add 10.77.2.1/24 dev zcxsv0
		ip link set zcxsv0 up
		ip link set zcxsv1 up
		rdma link add zcxs0 type rxe netdev zcxsv0
		for _ in $(seq 100); do
			grep -q ACTIVE /sys/class/infiniband/zcxs0/ports/1/state && break
			sleep 0.1
		done
		grep -q ACTIVE /sys/class/infiniband/zcxs0/ports/1/state ||
			{ echo "soak-check: zcxs0's port not ACTIVE after 10 s"; exit 1; }
		insmod "$top/build/kmod-$(uname -r)/zcx_ib.ko" listen=10.77.2.1
	fi

	# stress-ng: one worker of each; each may hold at most 320 MiB of data.
	# Without CAP_SYS_ADMIN: its madvise worker would otherwise poison its
	# own pages (MADV_HWPOISON) and die of SIGBUS after a few seconds.
	# The mmap worker's round maps, touches and unmaps its whole size page
	# by page: 16 MiB, else one round outlasts a soak on the debug kernel.
	(
		ulimit -d $((320 * 1024))
		exec setpriv --bounding-set -sys_admin --inh-caps -sys_admin \
			stress-ng --vm 1 --vm-bytes 160M --mmap 1 --mmap-bytes 16M \
			--madvise 1 --fork 1 --brk 1 --timeout "${secs}s" \
			--temp-path /tmp --metrics-brief
	) >"$dir/stress-ng.log" 2>&1 &
	stress=$!

	# The soak, out of the OOM killer's reach; it waits in the module
	# rather than spin (more processes than CPUs here).
	soak_rc=0
	(
		echo -1000 >/proc/self/oom_score_adj
		ZCX_SPIN=0 exec "$top/build/tools/zcx_soak" -t "$secs" -p "$pairs" -s "$seed" ${net:+"$net"}
	) || soak_rc=$?
	stress_rc=0
	wait "$stress" || stress_rc=$?
	echo "soak-stress-ng: exit $stress_rc"
	tail -n 12 "$dir/stress-ng.log"
	# Churn that did not happen is no churn: every stressor must have
	# finished rounds (bogo ops, the column after the name).
	for w in vm mmap madvise fork brk; do
		ops=$(awk -v w="$w" '$4 == w && $5 ~ /^[0-9]+$/ { print $5 }' "$dir/stress-ng.log")
		[ "${ops:-0}" -gt 0 ] || { echo "soak-check: stress-ng $w did no round"; rc=1; }
	done
	[ "$soak_rc" = 0 ] || { echo "soak-check: zcx_soak exited $soak_rc"; rc=1; }

	# Live objects: unpinning is deferred to a workqueue, so poll (10 s at most).
	for _ in $(seq 100); do
		ctx=$(zstat contexts) reg=$(zstat regions) pin=$(zstat pinned_pages)
		eps=$("$zcxctl" stats 2>/dev/null | awk '$1 == "endpoints" { print $2 }')
		pb=$("$zcxctl" stats 2>/dev/null | awk '$1 == "pinned_bytes" { print $2 }')
		[ "$ctx$reg$pin${eps:-0}${pb:-0}" = 00000 ] && break
		sleep 0.1
	done
	echo "soak-census: contexts=$ctx regions=$reg pinned_pages=$pin pinned_bytes=${pb:-?} endpoints=${eps:-?}"
	[ "$ctx$reg$pin${eps:-0}${pb:-0}" = 00000 ] || { echo "soak-check: objects left in the module"; rc=1; }

	# The module's totals of invalidations by cause (closed contexts included).
	"$zcxctl" stats 2>/dev/null | awk '$1 ~ /^(invalidations|inval_)/ { printf "%s=%s ", $1, $2 } END { print "" }' |
		sed 's/^/soak-invalidations: /'
	# zcx_ib goes first (it holds zcx.ko): its connections must all have
	# been torn down, else its unloading fails.
	if [ -n "$net" ] && ! rmmod zcx_ib; then
		echo "soak-check: zcx_ib would not unload"
		rc=1
	fi

	exit $rc
fi

# --- on the host -----------------------------------------------------------

kernel='' secs=120 pairs=2 seed='' net=''
while getopts k:t:p:s:Nh opt; do
	case $opt in
	k) kernel=$OPTARG ;;
	t) secs=$OPTARG ;;
	p) pairs=$OPTARG ;;
	s) seed=$OPTARG ;;
	N) net=-N ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# = 0 ] || { usage >&2; exit 2; }
case $secs$pairs in *[!0-9]*) echo "soak: -t and -p take numbers" >&2; exit 2 ;; esac
if [ -z "$kernel" ]; then
	if "$top/scripts/debug-kernel.sh" --print >/dev/null 2>&1; then kernel=debug; else kernel=6.12; fi
fi
[ -n "$seed" ] || seed=$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')

"$top/scripts/install-deps.sh" --soak
make -C "$top" -s lib zcxctl zcx_soak >/dev/null

out=$top/build/soak/$kernel-$$
mkdir -p "$out"
echo "soak: kernel $kernel, $secs s, $pairs pairs, seed $seed${net:+, through zcx_ib}; logs in $out"
set +e
# stress-ng's fork worker holds its mm's lock for the whole of a fork,
# which on the debug kernel in TCG can outlast the runner's 30 s hung-task
# timeout (khugepaged waiting on it is reported); the kernel's own default.
VM_HUNG_TASK_SECS=${VM_HUNG_TASK_SECS:-120} VM_MEM=${VM_MEM:-3072} "$top/scripts/vm-run.sh" --kernel "$kernel" --out "$out" \
	--timeout $((secs * 3 + 900)) -- "$top/scripts/soak.sh" --guest "$secs" "$pairs" "$seed" "$out" ${net:+"$net"} \
	2>&1 | tee "$out/soak.log"
vrc=${PIPESTATUS[0]}
set -e

# The summary, from what the guest printed and what vm-run said.
get() { sed -n "s/^soak-result:.* $1=\([^ ]*\).*/\1/p" "$out/soak.log" | tail -n 1; }
# The runner's kmemleak scan, made after the soak with zcx unloaded.
leaks=n/a
[ ! -f "$out/kmemleak.log" ] || leaks=$(grep -c '^unreferenced object' "$out/kmemleak.log" || true)
splats=0
grep -q 'kernel splat' "$out/soak.log" && splats=1
verdict=PASS
[ "$vrc" = 0 ] || verdict=FAIL
[ "$(get verdict)" = PASS ] || verdict=FAIL
echo "soak: kernel $kernel, $(get seconds) s, ops $(get ops), bytes verified $(get bytes)," \
	"invalidations $(get invalidations), corruptions=$(get corruptions), errors=$(get errors)," \
	"leaks=${leaks:-?}, splats=$splats, verdict $verdict"
[ $verdict = PASS ] || exit $((vrc ? vrc : 1))
