#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# check.sh - the project's test command ("make check"; CI runs it).
#
# Installs missing Debian packages, builds the library and selftests,
# lints the module (W=1, sparse, checkpatch) for each kernel, installs it
# through DKMS, boots each kernel in QEMU with the DKMS module loaded and
# runs the selftests there.  Prints one line per step, the failures, and
# finally "N passed, N failed, N skipped", counting every host step and
# every selftest case of every kernel.  Exits non-zero on any failure.
#
# Environment:
#   ZCX_QUICK=1          6.12 only, module built from the tree (no DKMS,
#                        no lint): the fast loop for local work.
#   ZCX_TEST_KERNELS     kernels to test (default "6.1 6.12").
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
quick=${ZCX_QUICK:-0}
if [ "$quick" = 1 ]; then
	export ZCX_TEST_KERNELS=${ZCX_TEST_KERNELS:-6.12}
fi
logdir=$top/build/logs
mkdir -p "$logdir"

passed=0
failed=0
skipped=0
failures=()

# step NAME COMMAND...: run a host step, log to build/logs/NAME.log.
step() {
	local name=$1 start rc
	shift
	start=$SECONDS
	"$@" > "$logdir/$name.log" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		passed=$((passed + 1))
		printf 'ok    %-32s %4ds\n' "$name" $((SECONDS - start))
	else
		failed=$((failed + 1))
		failures+=("$name (log: build/logs/$name.log)")
		printf 'FAIL  %-32s %4ds  build/logs/%s.log\n' "$name" $((SECONDS - start)) "$name"
	fi
	return $rc
}

# count_tap KVER FILE...: add the TAP results of a guest run to the totals.
count_tap() {
	local kver=$1 line
	shift
	while IFS= read -r line; do
		case $line in
		"not ok "*)
			failed=$((failed + 1))
			failures+=("$kver: ${line#not ok }")
			;;
		"ok "*"# SKIP"*)
			skipped=$((skipped + 1))
			;;
		"ok "*)
			passed=$((passed + 1))
			;;
		esac
	done < <(cat "$@" 2>/dev/null)
}

checkpatch() {
	perl build/ktools/scripts/checkpatch.pl --no-tree --quiet \
		-f kmod/*.c kmod/*.h kmod/probes/*.c uapi/*.h
}

# The probes must agree with an independent look at the headers (Debian
# splits them: the arch package's Makefile includes the -common one's).
probes_agree() {
	local kdir=$1 outdir=$2 want=0 have=0 src
	src=$(sed -n 's|^include \(.*\)/Makefile$|\1|p' "$kdir/Makefile" | head -n 1)
	grep -q 'vm_flags_set' "${src:-$kdir}/include/linux/mm.h" && want=1
	grep -q 'define ZCX_HAVE_VM_FLAGS_SET 1' "$outdir/generated/probed.h" && have=1
	echo "vm_flags_set: headers $want, probe $have"
	[ $want = $have ]
}

step install-deps scripts/install-deps.sh || exit 1
mapfile -t kernels < <(scripts/kernels.sh)
if [ ${#kernels[@]} -eq 0 ]; then
	echo "no kernel to test" >&2
	exit 1
fi

step build-lib make -C "$top" lib verbs
step build-selftests make -C "$top" selftests
step build-zcxctl make -C "$top" zcxctl
if [ "$quick" != 1 ]; then
	step checkpatch checkpatch
fi

for kver in "${kernels[@]}"; do
	kdir=/lib/modules/$kver/build
	if [ "$quick" = 1 ]; then
		step "module-$kver" scripts/kmod-build.sh "$kver" "$kdir" "build/kmod-$kver" || continue
		mode=(--module tree)
		ko=$top/build/kmod-$kver/zcx.ko
	else
		step "lint-$kver" scripts/kmod-build.sh --lint "$kver" "$kdir" "build/lint-$kver"
		step "probes-$kver" probes_agree "$kdir" "build/lint-$kver"
		step "dkms-$kver" scripts/dkms-install.sh "$kver" || continue
		mode=(--module dkms)
		ko=
	fi

	out=$top/build/vm/check-$kver
	rm -rf "$out"
	start=$SECONDS
	scripts/vm-run.sh --kernel "$kver" "${mode[@]}" --out "$out" -- \
		env ZCX_KO="$ko" selftests/run_tests.sh build/selftests "$out/tap" \
		> "$logdir/vm-$kver.log" 2>&1
	rc=$?
	count_tap "$kver" "$out"/tap/*.tap
	# The run itself (boot, module load, splat scan) is a step of its own.
	if [ $rc -eq 0 ]; then
		passed=$((passed + 1))
		printf 'ok    %-32s %4ds\n' "vm-$kver" $((SECONDS - start))
	else
		failed=$((failed + 1))
		failures+=("vm-$kver: exit $rc (log: build/logs/vm-$kver.log, $out)")
		printf 'FAIL  %-32s %4ds  build/logs/vm-%s.log\n' "vm-$kver" $((SECONDS - start)) "$kver"
	fi
done

if [ ${#failures[@]} -gt 0 ]; then
	echo
	echo "failures:"
	printf '  %s\n' "${failures[@]}"
fi
echo
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
