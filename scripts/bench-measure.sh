# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash disable=SC2154 # the variables are the sourcing script's
#
# bench-measure.sh - sourced by bench-xfer.sh and bench-suite.sh: the
# measurement steps of the benchmarks, each run in the QEMU guest or, for
# the peers, on the host.  Run from the repository top.  Set before
# sourcing:
#   raw      CSV the rows "system,test,param,rep,value" are appended to
#   log      where the programs' diagnostics go
#   reps ms  repetitions and milliseconds per measurement
#   prefix   prepended to every system name ("host-" on the host, else "")
#   where    "guest" or "host", for the progress lines
#   progress (optional) a file that gets the progress lines too
#   step_no step_total  progress counter: step() prints "[step_no/step_total]"
# Each measure_* function is one progress step.

bench_dir=build/bench
lat_sizes="8 64 512 4096 8192 65536 262144 1048576 4194304"
bw_sizes="4096 16384 65536 262144 1048576 4194304 16777216"
# shellcheck disable=SC2054 # the commas are Open MPI's
mpirun=(mpirun --allow-run-as-root --oversubscribe --mca btl self,vader --mca pml ob1)

note() { echo "== $(date +%T) $*" >> "$log"; echo "$where: $*" >&2; }
step() {
	local line
	step_no=$((step_no + 1))
	line="[$step_no/$step_total] $where: $*"
	echo "$line"
	[ -z "${progress:-}" ] || echo "$line" >> "$progress"
	echo "== $(date +%T) $line" >> "$log"
}
# Rows of a program's CSV on stdin, without its header, named for $where.
rows() { grep -v '^system,' | sed "s/^/$prefix/" >> "$raw" || true; }

measure_zcx() {
	step "zcx: xfer_bench (latency, bandwidth, barriers; enter and poll mode)"
	timeout 900 $bench_dir/xfer_bench -r "$reps" -t "$ms" 2>> "$log" | rows ||
		note "xfer_bench FAILED (see $log)"
}

# memcpy and process_vm_readv; with "units", also the unit costs of the
# projection (peer_bench -T).
measure_copy_peers() {
	local tests=memcpy,cma${1:+,$1}
	step "memcpy, process_vm_readv${1:+, unit costs}: peer_bench"
	timeout 600 $bench_dir/peer_bench -T "$tests" -r "$reps" -t "$ms" 2>> "$log" | rows ||
		note "peer_bench FAILED"
}

measure_mpi() {
	if [ ! -x $bench_dir/mpi_bench ]; then
		step "Open MPI: skipped (no build/bench/mpi_bench: mpicc missing)"
		step "Open MPI: skipped"
		return 0
	fi
	step "Open MPI: mpi_bench ping-pong and stream (ob1, vader)"
	timeout 600 "${mpirun[@]}" -np 2 --bind-to core $bench_dir/mpi_bench -r "$reps" -t "$ms" \
		2>> "$log" | rows || note "mpi_bench FAILED"
	step "Open MPI: MPI_Barrier, 2 to 16 processes"
	timeout 600 "${mpirun[@]}" -np 16 --bind-to none $bench_dir/mpi_bench -b -r "$reps" \
		-t "$ms" 2>> "$log" | rows || note "mpi_bench -b FAILED"
}

# ucx_perftest: one server and one client per transport, running a batch
# file of every test, size and repetition (-b; it exits at the end), the
# two pinned to different CPUs.  "avg_lat" (column 4 of the batch output)
# is half the round trip for *_lat tests and the time per message for
# *_bw tests, in microseconds.  tag_* is UCP tag matching at every size,
# stream_* UCP streams at the sizes of the summary tables (every test
# sets UCX up anew, which takes long in the guest).
ucx_port=13337
ucx_stream_lat_sizes="8 8192 1048576"
ucx_stream_bw_sizes="65536 1048576 16777216"
# Iterations: about $ms at the guest's usual speed (ucx_perftest has no
# time limit of its own).
ucx_lat_iters() { local n=$(( 335544 * ms / $1 )); [ $n -gt 20000 ] && n=20000; [ $n -lt 30 ] && n=30; echo $n; }
ucx_bw_iters() { local n=$(( 671088 * ms / $1 )); [ $n -gt 20000 ] && n=20000; [ $n -lt 8 ] && n=8; echo $n; }
measure_ucx() { # TLS
	local tls=$1 sys=ucx-${1/,/+} batch out attempt test size r n
	step "UCX: ucx_perftest UCX_TLS=$tls,self (tag and stream, latency and bandwidth)"
	batch=$(mktemp) out=$(mktemp)
	for test in tag stream; do
		local ls=$lat_sizes bs=$bw_sizes
		[ $test = tag ] || ls=$ucx_stream_lat_sizes bs=$ucx_stream_bw_sizes
		for size in $ls; do
			n=$(ucx_lat_iters "$size")
			for r in $(seq "$reps"); do
				echo "$test,lat,$size,$r -t ${test}_lat -s $size -n $n -w $(( n / 10 + 2 ))"
			done
		done
		for size in $bs; do
			n=$(ucx_bw_iters "$size")
			for r in $(seq "$reps"); do
				echo "$test,bw,$size,$r -t ${test}_bw -s $size -n $n -w $(( n / 10 + 2 ))"
			done
		done
	done > "$batch"
	for attempt in 1 2; do
		ucx_port=$((ucx_port + 1))
		UCX_TLS=$tls,self timeout 600 ucx_perftest -p $ucx_port -c 0 -b "$batch" >> "$log" 2>&1 &
		sleep 0.5
		UCX_TLS=$tls,self timeout 600 ucx_perftest 127.0.0.1 -p $ucx_port -c 1 -b "$batch" \
			-f -v > "$out" 2>> "$log" || true
		wait || true
		[ "$(grep -c '^[a-z]*,\(lat\|bw\),' "$out")" -lt "$(wc -l < "$batch")" ] || break
		note "$sys: ucx_perftest measured $(grep -c '^[a-z]*,\(lat\|bw\),' "$out") of $(wc -l < "$batch") (attempt $attempt)"
	done
	# name = test,kind,size,rep ; then iterations, p50, avg_lat, ...
	# A test that went wrong reports inf or nan: no row.
	awk -F, -v s="$prefix$sys" '($2 == "lat" || $2 == "bw") && $7 !~ /inf|nan/ && $7 + 0 > 0 {
		gsub(/ /, "", $0)
		name = ($1 == "tag") ? s : s "-stream"
		if ($2 == "lat") printf "%s,lat,%s,%s,%.6g\n", name, $3, $4, $7 * 1000
		else printf "%s,bw,%s,%s,%.6g\n", name, $3, $4, $3 / $7
	}' "$out" >> "$raw"
	rm -f "$batch" "$out"
}

# System calls per message: strace -f -c of a short and a longer run;
# the difference over the extra messages leaves start-up out.
measure_syscalls() {
	local st tls sys spec n test c attempt server
	step "system calls per message of UCX and Open MPI: strace -f -c"
	command -v strace > /dev/null || { note "no strace: skipped"; return 0; }
	calls() { awk '$NF == "total" { n += $1 } END { print n + 0 }' "$@"; }
	per() { awk -v a="$1" -v b="$2" -v m="$3" 'BEGIN { printf "%.3f\n", (b - a) / m }'; }
	st=$(mktemp -d)
	for tls in posix sysv posix,cma; do
		sys=ucx-${tls/,/+}
		for spec in "tag_lat 8192 200 1200 2" "tag_bw 1048576 20 120 1"; do
			# shellcheck disable=SC2086 # split into fields
			set -- $spec
			c=()
			for n in $3 $4; do
				# The server starts slowly under strace: a client that
				# finds nobody listening tries again with a new pair.
				for attempt in 1 2 3; do
					rm -f "$st"/*
					ucx_port=$((ucx_port + 1))
					UCX_TLS=$tls,self timeout 120 strace -f -c -U calls,name -o "$st/server" \
						ucx_perftest -p $ucx_port -c 0 >> "$log" 2>&1 &
					server=$!
					sleep $attempt
					if UCX_TLS=$tls,self timeout 120 strace -f -c -U calls,name -o "$st/client" \
						ucx_perftest 127.0.0.1 -p $ucx_port -c 1 -t "$1" -s "$2" -n "$n" \
						-w 0 -f >> "$log" 2>&1; then
						wait || true
						c+=("$(calls "$st/server" "$st/client")")
						break
					fi
					kill $server 2> /dev/null || true
					wait || true
					note "$sys strace $1 (attempt $attempt) FAILED"
				done
			done
			test=syscalls; [ "$1" = tag_bw ] && test=bw_syscalls
			if [ ${#c[@]} = 2 ]; then
				echo "$prefix$sys,$test,$2,0,$(per "${c[0]}" "${c[1]}" $(( ($4 - $3) * $5 )))" >> "$raw"
			fi
		done
	done
	if [ -x $bench_dir/mpi_bench ]; then
		for spec in "lat 8192 200 1200 2" "bw 1048576 2 12 16"; do
			# shellcheck disable=SC2086 # split into fields
			set -- $spec
			c=()
			for n in $3 $4; do
				rm -f "$st"/*
				timeout 300 "${mpirun[@]}" -np 2 --bind-to core sh -c \
					"exec strace -f -c -U calls,name -o $st/rank\$OMPI_COMM_WORLD_RANK $bench_dir/mpi_bench -x $1 -s $2 -n $n" \
					>> "$log" 2>&1 || note "mpi strace $1 FAILED"
				c+=("$(calls "$st"/rank*)")
			done
			test=syscalls; [ "$1" = bw ] && test=bw_syscalls
			echo "${prefix}mpi,$test,$2,0,$(per "${c[0]}" "${c[1]}" $(( ($4 - $3) * $5 )))" >> "$raw"
		done
	fi
	rm -rf "$st"
}

# Registration cost: reg_bench $reps times, $ms / 2 per measurement (rows
# "kind,param,ns_per_op" into $1, with "run" appended), on a Soft-RoCE
# device on lo for ibv_reg_mr when one can be made.
measure_reg() { # OUT.csv
	local r
	step "registration: reg_bench x$reps (zcx miss and hits, ibv_reg_mr on Soft-RoCE)"
	if ! rdma link show 2>/dev/null | grep -q rxe0; then
		{ modprobe rdma_rxe && rdma link add rxe0 type rxe netdev lo; } >> "$log" 2>&1 ||
			note "no Soft-RoCE device: ibv_reg_mr not measured"
	fi
	echo "kind,param,ns_per_op,run" > "$1"
	for r in $(seq "$reps"); do
		timeout 600 $bench_dir/reg_bench -t $(( ms / 2 > 10 ? ms / 2 : 10 )) 2>> "$log" | awk -v r="$r" 'NR > 1 { print $0 "," r }' >> "$1" ||
			note "reg_bench FAILED"
	done
}
