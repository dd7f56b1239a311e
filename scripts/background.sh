# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# background.sh - sourced by the scripts that run guests or builds in the
# background (check.sh, vm-twonode.sh).  A script's background jobs ignore
# SIGINT: without this, Ctrl-C would stop the script and leave them
# running.

# kill_tree SIGNAL PID...: stop each process (so that it starts nothing
# new), signal its descendants the same way, then signal and continue it.
kill_tree() {
	local sig=$1 pid
	shift
	for pid; do
		kill -STOP "$pid" 2> /dev/null || continue
		# shellcheck disable=SC2046 # one PID per word
		kill_tree "$sig" $(cat /proc/"$pid"/task/*/children 2> /dev/null)
		kill -"$sig" "$pid" 2> /dev/null
		kill -CONT "$pid" 2> /dev/null
	done
}

# stop_jobs NAME STATUS: terminate the running background jobs and all
# they started, SIGKILL what is left of them after 10 s, exit STATUS.
stop_jobs() {
	local pids watchdog
	trap '' INT TERM	# a second Ctrl-C must not leave anything stopped
	echo "$1: interrupted, stopping what runs in the background" >&2
	pids=$(jobs -pr)
	if [ -n "$pids" ]; then
		# shellcheck disable=SC2086 # one PID per word
		kill_tree TERM $pids
		# shellcheck disable=SC2086
		(sleep 10; kill_tree KILL $pids) &
		watchdog=$!
		# shellcheck disable=SC2086
		wait $pids || true
		kill "$watchdog" 2> /dev/null || true
	fi
	exit "$2"
}

# stop_jobs_on_signal NAME: on SIGINT or SIGTERM, stop_jobs (status 130 or
# 143).  A foreground command runs to its end first (Ctrl-C stops it too).
stop_jobs_on_signal() {
	# shellcheck disable=SC2064 # NAME now
	trap "stop_jobs '$1' 130" INT
	# shellcheck disable=SC2064
	trap "stop_jobs '$1' 143" TERM
}
