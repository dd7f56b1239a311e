#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# check.sh - the project's test command ("make check"; CI runs it).
#
# Installs missing Debian packages, builds the library and selftests,
# lints the module (W=1, sparse, checkpatch) for each kernel and the manual
# pages, tests "make install"/"make uninstall", builds the Debian packages
# and installs them on this machine (DKMS builds the module for each
# kernel), builds programs against the installed library, boots each
# kernel in QEMU with the DKMS module loaded and runs the selftests and
# those programs there, and two guests of the newest kernel joined by a
# network (scripts/vm-twonode.sh), and the network cases of the newest
# kernel once more over Soft-iWARP (scripts/siw-build.sh builds siw.ko,
# which Debian leaves out).  Prints one line per step, the
# failures, and finally "N passed, N failed, N skipped", counting every
# host step and every selftest case of every kernel.  Exits non-zero on
# any failure.
#
# Beside all that, the reliability lane: the same selftests on the debug
# kernel (scripts/debug-kernel.sh: KASAN, UBSAN, lockdep, kmemleak, fault
# injection; built once and cached), in two guests that share the programs,
# each with a kmemleak scan after them: the first as soon as the kernel is
# built (in the background once the selftests are), the second when the
# other lanes are done.
#
# Environment:
#   ZCX_QUICK=1          6.12 only, module built from the tree (no DKMS,
#                        no packages, no lint, no debug lane): the fast loop
#                        for local work.
#   ZCX_DEBUG_LANE=0     skip the debug-kernel lane (and its build).
#   ZCX_TEST_KERNELS     kernels to test (default "6.1 6.12").
#   ZCX_CHECK_MINUTES    the whole run's budget (default 80; CI allows 90):
#                        a guest gets at most what is left of it, so that
#                        hung guests end the run in time, with its summary.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
quick=${ZCX_QUICK:-0}
if [ "$quick" = 1 ]; then
	export ZCX_TEST_KERNELS=${ZCX_TEST_KERNELS:-6.12}
fi
logdir=$top/build/logs
mkdir -p "$logdir"

budget=${ZCX_CHECK_MINUTES:-80}
if [[ ! $budget =~ ^[0-9]+$ ]]; then
	echo "check.sh: ZCX_CHECK_MINUTES must be a number of minutes, not '$budget'" >&2
	echo "0 passed, 1 failed, 0 skipped"
	exit 2
fi
budget=$((budget * 60))
passed=0
failed=0
skipped=0
failures=()

# Interrupted: the guests and the debug build run in the background; take
# them down too.
# shellcheck source=background.sh
. "$top/scripts/background.sh"
stop_jobs_on_signal check.sh

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

# The failures, then the totals: the last line, even when we stop early.
summarise() {
	if [ ${#failures[@]} -gt 0 ]; then
		echo
		echo "failures:"
		printf '  %s\n' "${failures[@]}"
	fi
	echo
	echo "$passed passed, $failed failed, $skipped skipped"
}

# count_tap KVER FILE...: add the TAP results of a guest run to the totals.
# A failed case is listed with the last diagnostic lines it printed, so
# that the summary (all a CI report may keep) says why it failed.
count_tap() {
	local kver=$1 line diag=()
	shift
	while IFS= read -r line; do
		case $line in
		"not ok "*)
			failed=$((failed + 1))
			failures+=("$kver: ${line#not ok }")
			[ ${#diag[@]} -eq 0 ] || failures+=("${diag[@]/#/    | }")
			diag=()
			;;
		"ok "*"# SKIP"*)
			skipped=$((skipped + 1))
			diag=()
			;;
		"ok "*)
			passed=$((passed + 1))
			diag=()
			;;
		"#  RUN "* | "#            OK "*) diag=() ;;
		"#"*)
			diag+=("${line:0:160}")
			[ ${#diag[@]} -le 8 ] || diag=("${diag[@]:1}")
			;;
		esac
	done < <(cat "$@" 2>/dev/null)
}

# guest_time SECONDS: the time limit of a guest started now, SECONDS or
# what is left of the run's budget (at least 1: a guest started too late
# fails as a timeout).
guest_time() {
	local left=$((budget - SECONDS))
	[ "$left" -ge 1 ] || left=1
	echo $(($1 < left ? $1 : left))
}

# vm_lane_start NAME CMD VM-RUN-OPTION...: boot a guest in the background
# that runs the selftests (CMD), which write their TAP files to
# build/vm/check-NAME/tap; vm_lane_end NAME waits for it.  Their cases
# count, and the run itself (boot, module load, splat and leak scan) is a
# step of its own.
declare -A lane_pid lane_start
vm_lane_start() {
	local name=$1 cmd=$2 out=$top/build/vm/check-$1
	shift 2
	rm -rf "$out"
	lane_start[$name]=$SECONDS
	scripts/vm-run.sh "$@" --out "$out" --cmd "$cmd" > "$logdir/vm-$name.log" 2>&1 &
	lane_pid[$name]=$!
}

vm_lane_end() {
	local name=$1 out=$top/build/vm/check-$1 rc
	wait "${lane_pid[$name]}"
	rc=$?
	count_tap "$name" "$out"/tap/*.tap
	if [ $rc -eq 0 ]; then
		passed=$((passed + 1))
		printf 'ok    %-32s %4ds\n' "vm-$name" $((SECONDS - lane_start[$name]))
	else
		failed=$((failed + 1))
		failures+=("vm-$name: exit $rc (log: build/logs/vm-$name.log, $out)")
		printf 'FAIL  %-32s %4ds  build/logs/vm-%s.log\n' "vm-$name" \
			$((SECONDS - lane_start[$name])) "$name"
	fi
}

vm_lane() {
	vm_lane_start "$@"
	vm_lane_end "$1"
}

# The reliability lane: the selftests again on the debug kernel, slower
# under KASAN and lockdep in TCG, so the tests size their loops down under
# ZCX_SLOW, and two guests (debug-a, debug-b; one host CPU each) share the
# programs.  Not the programs of user-space plumbing only (PMIx bootstrap,
# the verbs interposer): their kernel paths are the other programs', and
# starting programs is what the debug kernel is slowest at (they took 8 of
# its 60 guest-minutes).
debug_skip="zcx_pmix_test.sh zcx_preload_test.sh"
# The longest there first, so that the two guests run out of work together.
debug_first="zcx_barrier_test zcx_xfer_test zcx_fault_test zcx_ib_test zcx_verbs_test"
debug_first+=" zcx_netlink_test zcx_remap_test zcx_fuzz_test.sh zcx_failinject_test"
debug_claims=$top/build/vm/check-debug-claims

# debug_lane_start HALF: boot one of the two guests, in the background.
debug_lane_start() {
	local tap=$top/build/vm/check-$1/tap
	vm_lane_start "$1" "env ZCX_SLOW=1 ZCX_CLAIM_DIR=$debug_claims ZCX_KO=$debug_ko \
		ZCX_SKIP_PROGRAMS='$debug_skip' ZCX_FIRST_PROGRAMS='$debug_first' \
		selftests/run_tests.sh build/selftests '$tap'" \
		--kernel debug --module tree --ko "$debug_ko" --timeout "$(guest_time 2400)"
}

# debug_build_then_lane: in the background once the selftests are built,
# beside the other lanes and below them (nice), holding the lock
# $debug_lock (fd $debug_lock_fd, which nothing it starts inherits) until
# the debug kernel (cached, or built) and its zcx.ko are built; then runs
# debug-a at once, on what the other lanes leave of the CPUs.  Its counts
# go to $debug_state for the main shell to add.
debug_build_then_lane() {
	local start=$SECONDS rc dkdir dkver
	passed=0 failed=0 skipped=0 failures=()
	renice -n 10 -p "$BASHPID" > /dev/null
	scripts/debug-kernel.sh > "$logdir/debug-kernel.log" 2>&1 {debug_lock_fd}>&-
	rc=$?
	if [ $rc -eq 0 ]; then
		passed=$((passed + 1))
		printf 'ok    %-32s %4ds\n' debug-kernel $((SECONDS - start))
		dkdir=$(scripts/debug-kernel.sh --print)
		dkver=$(cat "$dkdir/kernelrelease")
		step module-debug make -C "$top" module KVER="$dkver" KDIR="$dkdir/src" \
			{debug_lock_fd}>&- && echo "$top/build/kmod-$dkver/zcx.ko" > "$debug_ready"
	else
		failed=$((failed + 1))
		failures+=("debug-kernel: exit $rc (log: build/logs/debug-kernel.log)")
		printf 'FAIL  %-32s %4ds  build/logs/debug-kernel.log\n' debug-kernel \
			$((SECONDS - start))
	fi
	exec {debug_lock_fd}>&-
	if [ -s "$debug_ready" ]; then
		debug_ko=$(cat "$debug_ready")
		debug_lane_start debug-a
		vm_lane_end debug-a
	fi
	{
		echo "$passed $failed $skipped"
		[ ${#failures[@]} -eq 0 ] || printf '%s\n' "${failures[@]}"
	} > "$debug_state"
}

# Every selftest program not left out was claimed by one of the debug
# lane's guests.
debug_lane_complete() {
	local claims=$debug_claims prog name rc=0
	for prog in build/selftests/zcx_*_test* selftests/zcx_*_test.sh; do
		[ -x "$prog" ] || continue
		name=$(basename "$prog")
		case " $debug_skip " in *" $name "*) continue ;; esac
		[ -d "$claims/$name" ] || { echo "not run: $name"; rc=1; }
	done
	return $rc
}

checkpatch() {
	perl build/ktools/scripts/checkpatch.pl --no-tree --quiet \
		-f kmod/*.c kmod/*.h kmod/ib/*.c kmod/ib/*.h kmod/probes/*.c uapi/*.h
}

# The probes must agree with an independent look at the headers (Debian
# splits them: the arch package's Makefile includes the -common one's).
probes_agree() {
	local kdir=$1 outdir=$2 want=0 have=0 src
	src=$(sed -n 's|^include \(.*\)/Makefile$|\1|p' "$kdir/Makefile" | head -n 1)
	[ -r "${src:-$kdir}/include/linux/mm.h" ] || { echo "no ${src:-$kdir}/include/linux/mm.h"; return 1; }
	grep -q 'vm_flags_set' "${src:-$kdir}/include/linux/mm.h" && want=1
	grep -q 'define ZCX_HAVE_VM_FLAGS_SET 1' "$outdir/generated/probed.h" && have=1
	echo "vm_flags_set: headers $want, probe $have"
	[ $want = $have ]
}

# Every manual page formats without a warning.
man_pages() {
	local f out rc=0
	for f in man/*.[1-9]; do
		out=$({ groff -man -ww -z "$f"; man --warnings -l "$f" > /dev/null; } 2>&1)
		[ -z "$out" ] || { printf '%s:\n%s\n' "$f" "$out"; rc=1; }
	done
	return $rc
}

debug_lane=1 deps=()
[ "$quick" != 1 ] && [ "${ZCX_DEBUG_LANE:-1}" = 1 ] || debug_lane=0
# All packages now: apt must not run beside the package steps below.
[ $debug_lane = 0 ] || deps=(--debug-kernel)
step install-deps scripts/install-deps.sh "${deps[@]}" || { summarise; exit 1; }
# Every kernel named, or a failure: a lane must not go missing unseen.
step kernels scripts/kernels.sh
mapfile -t kernels < <(grep -v '^kernels.sh:' "$logdir/kernels.log")
if [ ${#kernels[@]} -eq 0 ]; then
	summarise
	exit 1
fi

step build-lib make -C "$top" lib verbs pmix
step build-selftests make -C "$top" selftests
step build-zcxctl make -C "$top" zcxctl
# zcx_pmix_test.sh runs examples/zcx_pmix_ring.
step build-examples make -C "$top" examples
# The debug lane from here on, in the background: debug-a needs the
# selftests built.
if [ $debug_lane = 1 ]; then
	debug_lock=$logdir/debug-build.lock debug_ready=$logdir/debug-build.ready
	debug_state=$logdir/debug-lane.state
	rm -rf "$debug_ready" "$debug_state" "$debug_claims"
	mkdir -p "$debug_claims"
	# Taken here, so that the main shell cannot take it before the build.
	exec {debug_lock_fd}>"$debug_lock"
	flock "$debug_lock_fd" || { summarise; exit 1; }
	debug_build_then_lane &
	debug_pid=$!
	exec {debug_lock_fd}>&-
fi
if [ "$quick" != 1 ]; then
	step checkpatch checkpatch
	step man-pages man_pages
	# The packages replace "make dkms-install" here: the module the guests
	# load is the one zcx-dkms had DKMS build (see scripts/pkg-test.sh).
	step make-install scripts/pkg-test.sh make-install
	if step deb-build scripts/deb-build.sh "$top/build/deb"; then
		step deb-lint scripts/pkg-test.sh lint "$top/build/deb"
		step deb-install scripts/pkg-test.sh install "$top/build/deb" &&
			step pkg-config scripts/pkg-test.sh pkg-config "$top/build/pkgtest"
	fi
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
		step "dkms-$kver" scripts/pkg-test.sh dkms "$kver" || continue
		mode=(--module installed)
		ko=
	fi

	tap=$top/build/vm/check-$kver/tap
	# The full run also runs the programs built against the installed
	# library, and the interposer test with the installed interposer.
	cmd="env ZCX_KO='$ko' selftests/run_tests.sh build/selftests '$tap'"
	if [ "$quick" != 1 ]; then
		preload=/usr/lib/$(gcc -print-multiarch)/zcx/libzcx-verbs-preload.so
		cmd="env ZCX_KO= ZCX_PRELOAD=$preload selftests/run_tests.sh build/selftests"
		cmd+=" '$tap'; rc=\$?; scripts/pkg-test.sh guest build/pkgtest '$tap'"
		cmd+=" || rc=1; exit \$rc"
	fi
	vm_lane "$kver" "$cmd" --kernel "$kver" "${mode[@]}" --timeout "$(guest_time 900)"
	# How the lane of the newest kernel loaded zcx, for the iWARP lane.
	lane_kver=$kver lane_ko=$ko lane_mode=("${mode[@]}")
done

# Two nodes: two guests of the newest kernel joined by a network, each with
# its own zcx and RDMA device (scripts/vm-twonode.sh); their cases count.
twonode_kver=${kernels[-1]}
if step build-twonode make -C "$top" zcx_twonode; then
	twonode_out=$top/build/vm/twonode-$twonode_kver
	twonode_mode=(--module installed)
	[ "$quick" != 1 ] || twonode_mode=(--module tree --ko "$top/build/kmod-$twonode_kver/zcx.ko")
	step "vm-twonode-$twonode_kver" scripts/vm-twonode.sh --kernel "$twonode_kver" \
		"${twonode_mode[@]}" --out "$twonode_out" --timeout "$(guest_time 900)"
	count_tap "twonode-$twonode_kver" "$twonode_out"/tap/*.tap
fi

# iWARP: zcx_ib's cases once more, over Soft-iWARP (built here: Debian's
# kernels have none), in a guest of the newest kernel loading its module
# as that kernel's lane did; only a 6.12 one, the version of the sources.
siw_kver=${kernels[-1]}
siw_dir=$top/build/siw-$siw_kver
if [[ $siw_kver == 6.12.* ]] && [ "${lane_kver:-}" = "$siw_kver" ] &&
	step "build-siw-$siw_kver" scripts/siw-build.sh "$siw_kver" "/lib/modules/$siw_kver/build" "$siw_dir"; then
	cmd="modprobe -a \$(modinfo -F depends '$siw_dir/siw.ko' | tr , ' ') &&"
	cmd+=" insmod '$siw_dir/siw.ko' &&"
	cmd+=" env ZCX_KO='$lane_ko' ZCX_NET_ONLY=1 ZCX_TEST_RDMA=siw"
	cmd+=" selftests/run_tests.sh build/selftests '$top/build/vm/check-siw-$siw_kver/tap'"
	vm_lane "siw-$siw_kver" "$cmd" --kernel "$siw_kver" "${lane_mode[@]}" \
		--timeout "$(guest_time 900)"
fi

if [ $debug_lane = 1 ]; then
	# debug-b, once the kernel and module are built (debug-a may be well
	# on by then), then both guests' counts and the claims.
	# In the background, so that a signal need not wait for the build.
	flock "$debug_lock" true &
	wait $!
	if [ -s "$debug_ready" ]; then
		debug_ko=$(cat "$debug_ready")
		debug_lane_start debug-b
		vm_lane_end debug-b
	fi
	wait "$debug_pid"
	if [ -f "$debug_state" ] && { read -r p f k && mapfile -t debug_failures; } < "$debug_state"; then
		passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + k))
		failures+=("${debug_failures[@]}")
	else
		failed=$((failed + 1))
		failures+=("debug lane: no result (log: build/logs/debug-kernel.log)")
	fi
	[ ! -s "$debug_ready" ] || step debug-lane-complete debug_lane_complete
fi

summarise
[ $failed -eq 0 ]
