#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# zcx_fuzz_test.sh - a short run of the seeded fuzzer (tools/zcx_fuzz.c):
# a few fixed seeds, one with the odd workers running as "nobody", and
# one random seed, printed so that a failure can be reproduced with
#   build/tools/zcx_fuzz -s SEED -t SECONDS -p PROCS -T THREADS
# The whole run takes about ZCX_FUZZ_SECONDS (default 30), split evenly
# between the runs, so that it fits a slow KASAN guest under TCG; the long
# run is scripts/fuzz.sh.  TAP output; skips without the fuzzer or
# /dev/zcx.
set -u

here=$(cd "$(dirname "$0")" && pwd)
fuzz=${ZCX_FUZZ:-$here/../build/tools/zcx_fuzz}
budget=${ZCX_FUZZ_SECONDS:-30}
random_seed=$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')
# seed:procs:threads:extra options
runs=("1:2:2:" "2:3:2:" "3:2:3:-u 65534" "$random_seed:2:2:")
per=$(( budget / ${#runs[@]} ))
[ "$per" -ge 2 ] || per=2

echo "TAP version 13"
echo "1..${#runs[@]}"
if [ ! -x "$fuzz" ] || [ ! -e /dev/zcx ]; then
	for i in $(seq 1 ${#runs[@]}); do
		echo "ok $i fuzz # SKIP no $fuzz or no /dev/zcx"
	done
	exit 4
fi

log=$(mktemp)
status=0
n=0
for run in "${runs[@]}"; do
	n=$((n + 1))
	IFS=: read -r seed procs threads extra <<<"$run"
	[ "$(id -u)" = 0 ] || extra=''
	name="fuzz.seed_$seed"
	[ -z "$extra" ] || name+=".nobody"
	echo "# $fuzz -s $seed -t $per -p $procs -T $threads $extra"
	# shellcheck disable=SC2086 # $extra is options
	"$fuzz" -s "$seed" -t "$per" -p "$procs" -T "$threads" $extra >"$log" 2>&1
	rc=$?
	# The verdict and the operation count; everything on failure.
	if [ $rc -eq 0 ]; then
		grep -E '^# [0-9]+ operations|^PASS' "$log" | sed 's/^\([^#]\)/# \1/'
		echo "ok $n $name"
	else
		sed 's/^/# /' "$log"
		echo "not ok $n $name # exit $rc, reproduce: $fuzz -s $seed -t $per -p $procs -T $threads $extra"
		status=1
	fi
done
rm -f "$log"
exit $status
