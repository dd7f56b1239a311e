#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# vm-twonode.sh [-k KERNEL] [-m tree|installed] [--ko PATH] [-o DIR]
#               [-t SECONDS] - zcx between two nodes.
#
# Boots two guests of KERNEL (default 6.12) joined by a network: qemu's
# socket backend, the first guest's NIC listening on a local TCP port and
# the second's connecting to it.  A stream loses no frame (over qemu's UDP
# transport the 64 MiB case stalled here: RDMA recovers slowly from loss);
# qemu does not set TCP_NODELAY on it, so small round trips take tens of
# ms, which only the reported latency shows.  Each guest puts Soft-RoCE on
# its virtio NIC (10.78.0.1 and 10.78.0.2), loads zcx_ib listening there
# (the tree's build, or with -m installed the installed one; keepalive_ms
# 2000, so that the lost-node case ends within a minute), and runs
# build/tools/zcx_twonode (make zcx_twonode) as server and client; the two
# find each other through DIR/shared and then talk only through zcx (see
# tools/zcx_twonode.c for the cases).  Their TAP goes to
# DIR/tap/zcx_twonode-{server,client}.tap, the guests' logs to DIR/{a,b}.
# DIR defaults to build/vm/twonode-KERNEL.  Exit status 0 if both passed.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "vm-twonode: $*" >&2; exit 2; }
# Interrupted: take the two guests down too.
# shellcheck source=background.sh
. "$top/scripts/background.sh"
stop_jobs_on_signal vm-twonode

kernel=6.12 mode=tree ko='' out='' timeout=900
while [ $# -gt 0 ]; do
	case $1 in
	-k | --kernel) kernel=${2:?$1 needs an argument}; shift ;;
	-m | --module) mode=${2:?$1 needs an argument}; shift ;;
	--ko) ko=${2:?$1 needs an argument}; shift ;;
	-o | --out) out=${2:?$1 needs an argument}; shift ;;
	-t | --timeout) timeout=${2:?$1 needs an argument}; shift ;;
	-h | --help) sed -n '3,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "$0"; exit 0 ;;
	*) die "unknown argument $1 (see --help)" ;;
	esac
	shift
done
case $mode in tree | installed) ;; *) die "--module is tree or installed" ;; esac
[ -x "$top/build/tools/zcx_twonode" ] || die "no build/tools/zcx_twonode (make zcx_twonode)"
out=${out:-$top/build/vm/twonode-$kernel}
out=$(mkdir -p "$out" && cd "$out" && pwd)
rm -rf "${out:?}"/{shared,tap,a,b}
mkdir -p "$out/shared" "$out/tap"

# A free local port for the link.
port=
for p in $(shuf -i 20000-60000 -n 50); do
	ss -Hltn "sport = :$p" | grep -q . || { port=$p; break; }
done
[ -n "$port" ] || die "no free TCP port"

# What each guest runs: its NIC and RDMA device, zcx_ib, then its side.
guest_cmd() {
	local role=$1 ip=$2 load
	if [ "$mode" = tree ]; then
		local kodir=${ko:+$(dirname "$ko")}
		kodir=${kodir:-$top/build/kmod-\$(uname -r)}
		# (Built in on the debug kernel.)
		load="{ modprobe rdma_cm 2>/dev/null || true; } && insmod $kodir/zcx_ib.ko listen=$ip keepalive_ms=2000"
	else
		load="modprobe zcx_ib listen=$ip keepalive_ms=2000"
	fi
	cat <<-EOF2
	set -e
	modprobe virtio_net 2>/dev/null || true
	ip link set eth0 up
	# RoCE wants a link that does not drop: Debian's default fq_codel
	# drops what queues for over 5 ms, as an emulated NIC on a loaded
	# host makes a burst of READ responses do, and Soft-RoCE fails the
	# connection after 7 tries without progress.  A FIFO as long as
	# zcx_ib's READs in flight (16 of up to 2 MiB, 1 KiB a packet) drops
	# none.  (The debug kernel has no traffic control, nor fq_codel.)
	tc qdisc replace dev eth0 root pfifo limit 40000 2>/dev/null || true
	ip addr add $ip/24 dev eth0
	modprobe rdma_rxe 2>/dev/null || true
	rdma link add zcxnet0 type rxe netdev eth0
	# The port comes up with the NIC's carrier, which may take a moment.
	for i in \$(seq 100); do grep -q ACTIVE /sys/class/infiniband/zcxnet0/ports/1/state && break; sleep 0.1; done
	$load
	set +e
	build/tools/zcx_twonode $role '$out/shared' eth0 > '$out/tap/zcx_twonode-$role.tap' 2>&1
	rc=\$?
	# What the link and Soft-RoCE went through: drops, retries.
	tc -s qdisc show dev eth0 || true
	rdma statistic show link zcxnet0/1 || true
	# Connections tear down in the background; then zcx_ib can go.
	for i in \$(seq 300); do rmmod zcx_ib 2>/dev/null && break; sleep 0.1; done
	exit \$rc
	EOF2
}

# Built once here, not by both guests' runners at the same time.
if [ "$mode" = tree ] && [ -z "$ko" ]; then
	[ "$kernel" != debug ] || die "the debug kernel needs --ko"
	kver=$("$top/scripts/kernels.sh" "$kernel") || die "no kernel $kernel"
	make -s -C "$top" module KVER="$kver" > "$out/build.log" 2>&1 ||
		{ cat "$out/build.log" >&2; die "building the module failed"; }
	ko=$top/build/kmod-$kver/zcx.ko
fi
vm_opts=(--kernel "$kernel" --module "$mode" --timeout "$timeout")
[ -z "$ko" ] || vm_opts+=(--ko "$ko")

"$top/scripts/vm-run.sh" "${vm_opts[@]}" --out "$out/a" --mac 52:54:00:78:00:01 \
	--netdev "socket,listen=127.0.0.1:$port" --cmd "$(guest_cmd server 10.78.0.1)" \
	> "$out/a.log" 2>&1 &
pid_a=$!
# The second guest's qemu connects at once: wait (boundedly) for the first to listen.
for _ in $(seq 600); do
	ss -Hltn "sport = :$port" | grep -q . && break
	kill -0 $pid_a 2>/dev/null || break
	sleep 0.1
done
"$top/scripts/vm-run.sh" "${vm_opts[@]}" --out "$out/b" --mac 52:54:00:78:00:02 \
	--netdev "socket,connect=127.0.0.1:$port" --cmd "$(guest_cmd client 10.78.0.2)" \
	> "$out/b.log" 2>&1 &
pid_b=$!
rc=0
wait $pid_a || rc=1
wait $pid_b || rc=1
for role in server client; do
	echo "--- $role"
	cat "$out/tap/zcx_twonode-$role.tap" 2>/dev/null || echo "(no output)"
done
[ $rc = 0 ] || { echo "vm-twonode: a guest failed: $out/a.log, $out/b.log" >&2; tail -n 5 "$out/a.log" "$out/b.log" >&2; }
exit $rc
