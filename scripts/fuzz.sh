#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The long fuzzing run: boot a kernel in QEMU with zcx.ko built from the
# tree, run build/tools/zcx_fuzz for a time budget (odd-numbered workers
# as "nobody"), then, where the kernel has kmemleak (the debug kernel),
# scan for leaks twice and fail on any report.  The VM runner already
# fails on any kernel splat (KASAN, lockdep, WARNING, hung task, ...).
#
# Usage: scripts/fuzz.sh [-k KERNEL] [-t SECONDS] [-s SEED] [-p PROCS] [-T THREADS]
#
#   -k KERNEL   debug (default: scripts/debug-kernel.sh's KASAN/lockdep/
#               kmemleak kernel), 6.12, 6.1 or a full version
#   -t SECONDS  fuzzing budget (default 600)
#   -s SEED     seed (default: random, printed before the guest boots)
#   -p PROCS    worker processes (default 4)
#   -T THREADS  threads per worker (default 3)
#
# Prints the seed, the operation count and the verdict; exits 0 only if
# the fuzzer passed, the kernel logged no splat and kmemleak found nothing.
# A failure is reproduced with the same -s (and -p/-T): see zcx_fuzz -h.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"; }

kernel=debug secs=600 seed='' procs=4 threads=3
while getopts k:t:s:p:T:h opt; do
	case $opt in
	k) kernel=$OPTARG ;;
	t) secs=$OPTARG ;;
	s) seed=$OPTARG ;;
	p) procs=$OPTARG ;;
	T) threads=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || { usage >&2; exit 2; }
for v in "$secs" "$procs" "$threads"; do
	case $v in '' | *[!0-9]*) echo "fuzz.sh: not a number: $v" >&2; exit 2 ;; esac
done
[ -n "$seed" ] || seed=$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')
case $seed in *[!0-9xXa-fA-F]*) echo "fuzz.sh: bad seed $seed" >&2; exit 2 ;; esac

echo "fuzz: seed=$seed kernel=$kernel seconds=$secs procs=$procs threads=$threads"
make -s -C "$top" zcx_fuzz

out=$top/build/vm/fuzz-$kernel-$$
mkdir -p "$out"
# vm-run.sh clears kmemleak before the command and, on a kernel that has
# it, scans after it with zcx unloaded: a leak fails the run like a splat.
cmd="build/tools/zcx_fuzz -s $seed -t $secs -p $procs -T $threads -u 65534"

rc=0
# Budget plus boot, module load, settling and the scans, slowly.
"$top/scripts/vm-run.sh" --kernel "$kernel" --module tree --out "$out" \
	--timeout $((secs * 2 + 600)) --cmd "$cmd" | tee "$out/fuzz.log" || rc=$?
ops=$(sed -n 's/^# \([0-9]*\) operations$/\1/p' "$out/fuzz.log" | tail -n 1)
if [ $rc -eq 0 ]; then
	leaks=''
	[ ! -f "$out/kmemleak.log" ] || leaks=", kmemleak: no leaks"
	echo "fuzz: PASS seed=$seed ops=${ops:-?} kernel=$kernel$leaks (logs in $out)"
else
	echo "fuzz: FAIL (exit $rc) seed=$seed ops=${ops:-?} kernel=$kernel (logs in $out);" \
		"reproduce: scripts/fuzz.sh -k $kernel -s $seed -t $secs -p $procs -T $threads"
fi
exit $rc
