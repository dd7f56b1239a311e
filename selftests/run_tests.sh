#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# run_tests.sh BINDIR TAPDIR - run every zcx selftest program in BINDIR
# (inside the guest, with zcx.ko loaded), one after another, writing each
# program's TAP output to TAPDIR/<program>.tap and echoing it; its own
# failures (no Soft-RoCE device, no program run) go to
# TAPDIR/run_tests.tap.  Exits non-zero if anything failed.  The
# kselftest "settings" timeout
# applies to each program (five times it under ZCX_SLOW=1).
#
# ZCX_CLAIM_DIR=DIR (an existing directory every guest of a run shares):
# several guests split the programs between them, each running those it
# claims first; check.sh's debug lane runs two such guests side by side.
#
# ZCX_SKIP_PROGRAMS="NAME...": programs not to run (check.sh's debug lane
# leaves out those that test only user-space plumbing).
#
# ZCX_FIRST_PROGRAMS="NAME...": these first, in this order (check.sh's debug
# lane names its longest, so that its guests run out of work together).
#
# ZCX_NET_ONLY=1: only the cases that go through zcx_ib (the programs'
# network variants), for a run over another kind of RDMA device
# (ZCX_TEST_RDMA=siw, selftests/zcx_net.h).
set -uo pipefail

bindir=${1:?usage: run_tests.sh BINDIR TAPDIR}
tapdir=${2:?usage: run_tests.sh BINDIR TAPDIR}
here=$(cd "$(dirname "$0")" && pwd)
timeout=$(sed -n 's/^timeout=//p' "$here/settings")
timeout=${timeout:-300}
# A slow guest (ZCX_SLOW=1: the debug kernel) gets five times as long:
# there the programs with variants over Soft-RoCE (zcx_xfer_test's net,
# zcx_fault_test's) spend minutes in rxe under KASAN.
[ "${ZCX_SLOW:-}" != 1 ] || timeout=$((timeout * 5))
mkdir -p "$tapdir"
# Huge pages for the hugetlbfs tests (they skip without them).
if [ -w /proc/sys/vm/nr_hugepages ]; then
	echo 8 > /proc/sys/vm/nr_hugepages
fi
status=0
# The runner's own failures, counted with the programs' cases.
runner_failed() {
	echo "not ok 0 run_tests.$1" | tee -a "$tapdir/run_tests.tap"
	status=1
}
rm -f "$tapdir/run_tests.tap"
# A Soft-RoCE device on lo for the verbs tests (they would skip without
# one, so a device that cannot be added is a failure: every guest of
# the runner has Soft-RoCE).
if [ "$(id -u)" = 0 ] && ! compgen -G '/sys/class/infiniband/*' > /dev/null; then
	# (Built into the debug kernel, which has no modules to probe.)
	modprobe rdma_rxe 2>/dev/null
	if ! err=$(rdma link add rxe0 type rxe netdev lo 2>&1); then
		echo "# rdma link add rxe0 type rxe netdev lo: $err" | tee -a "$tapdir/run_tests.tap"
		runner_failed soft-roce-on-lo
	fi
fi

# zcxctl for zcx_netlink_test (make zcxctl builds it next to the tests).
if [ -z "${ZCXCTL:-}" ] && [ -x "$bindir/../tools/zcxctl" ]; then
	ZCXCTL=$(cd "$bindir/../tools" && pwd)/zcxctl
	export ZCXCTL
fi
# The tracepoint tests read tracefs.
if [ "$(id -u)" = 0 ] && [ ! -e /sys/kernel/tracing/trace ]; then
	mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null || true
fi

# The arguments that select a program's network cases; none: it has none.
net_cases() {
	case $1 in
	zcx_ib_test | zcx_wire_test) echo ;;
	zcx_xfer_test | zcx_fault_test | zcx_remap_test) echo -v net ;;
	zcx_barrier_test) echo -v net_n2 -v net_n3 ;;
	*) return 1 ;;
	esac
}

# Compiled programs, then the scripts (kselftest's TEST_PROGS); those of
# ZCX_FIRST_PROGRAMS moved to the front.
progs=()
for name in ${ZCX_FIRST_PROGRAMS:-}; do
	case " ${progs[*]##*/} " in *" $name "*) continue ;; esac
	for prog in "$bindir/$name" "$here/$name"; do
		if [ -x "$prog" ]; then
			progs+=("$prog")
			break
		fi
	done
done
for prog in "$bindir"/zcx_*_test* "$here"/zcx_*_test.sh; do
	case " ${ZCX_FIRST_PROGRAMS:-} " in *" $(basename "$prog") "*) ;; *) progs+=("$prog") ;; esac
done

# State, wait channel and kernel stack of every thread of the processes
# named NAME (a test program and the children it forked) and of zcx's
# kernel threads: what a program that hangs waits for.
task_stacks() {
	local p t
	for p in $(pgrep -x "${1:0:15}") $(pgrep '^zcx-'); do
		for t in /proc/"$p"/task/*; do
			echo "$(cat "$t/comm" 2> /dev/null) $p/${t##*/}:" \
				"state $(awk '{ print $3 }' "$t/stat" 2> /dev/null)" \
				"wchan $(cat "$t/wchan" 2> /dev/null)"
			cat "$t/stack" 2> /dev/null
		done
	done
}

ran=0
for prog in "${progs[@]}"; do
	[ -x "$prog" ] || continue
	name=$(basename "$prog")
	case " ${ZCX_SKIP_PROGRAMS:-} " in *" $name "*) continue ;; esac
	args=()
	if [ "${ZCX_NET_ONLY:-}" = 1 ]; then
		cases=$(net_cases "$name") || continue
		read -ra args <<< "$cases"
	fi
	# Guests sharing the work: a program is run by whichever claims it
	# first (mkdir on the shared tree is atomic).
	if [ -n "${ZCX_CLAIM_DIR:-}" ] && ! mkdir "$ZCX_CLAIM_DIR/$name" 2>/dev/null; then
		continue
	fi
	echo "# running $name"
	ran=$((ran + 1))
	start=$SECONDS
	# (Told to stop, a program with network tests takes its network down
	# first: zcx_net.h.)
	rm -f "$tapdir/$name.stacks"
	timeout --kill-after=60 "$timeout" "$prog" "${args[@]}" > "$tapdir/$name.tap" 2>&1 &
	pid=$!
	# A watchdog: shortly before the timeout, where everything waits.
	sleep $((timeout > 30 ? timeout - 15 : timeout)) &
	watchdog=$!
	wait -n -p ended $pid $watchdog
	rc=$?
	if [ "$ended" = "$watchdog" ]; then
		task_stacks "$name" > "$tapdir/$name.stacks"
		wait $pid
		rc=$?
	else
		kill $watchdog 2> /dev/null
		wait $watchdog 2> /dev/null
	fi
	cat "$tapdir/$name.tap"
	if [ -s "$tapdir/$name.stacks" ]; then
		echo "# $name still ran near its timeout; its tasks and zcx's threads then:"
		sed 's/^/# /' "$tapdir/$name.stacks"
	fi
	# What each program costs, for sizing the slow (debug-kernel) lane.
	echo "# $name took $((SECONDS - start)) s"
	# 4 is kselftest's "skipped".
	if [ $rc -ne 0 ] && [ $rc -ne 4 ]; then
		echo "# $name exited with status $rc"
		status=1
		# A program that died without reporting a failure still fails.
		if ! grep -q '^not ok' "$tapdir/$name.tap"; then
			echo "not ok 0 $name.exit-status-$rc" | tee -a "$tapdir/$name.tap"
		fi
	fi
done
# A guest that claimed nothing shares its work; alone, running none is wrong.
if [ $ran -eq 0 ] && [ -z "${ZCX_CLAIM_DIR:-}" ]; then
	runner_failed no-program-ran
fi
exit $status
