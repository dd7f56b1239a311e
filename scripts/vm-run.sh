#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Run a command (or a shell) in a throw-away QEMU guest booting one of the
# installed Debian kernels, with the zcx module loaded.
#
# Usage: scripts/vm-run.sh [options] [--] [command ...]
#
#   -k, --kernel K     6.1 | 6.12 | full kver (default 6.12); 6.1 means the
#                      newest /boot/vmlinuz-6.1.*; "debug" is the debug
#                      kernel scripts/debug-kernel.sh built (KASAN, lockdep,
#                      kmemleak, fault injection; everything built in)
#   -m, --module M     tree: make module, insmod build/kmod-<kver>/zcx.ko
#                      dkms: scripts/dkms-install.sh <kver>, modprobe zcx
#                      installed: modprobe zcx as this machine has it
#                      (the zcx-dkms package), installing nothing
#                      none: load nothing                   (default tree)
#       --ko PATH      tree mode: insmod PATH instead, without building;
#                      /dev/zcx is only checked if PATH is named zcx.ko
#   -c, --cmd STRING   command for bash -c in the guest; trailing arguments
#                      are joined with spaces like ssh does (default: true)
#   -s, --shell        interactive shell on the console instead of a command
#   -t, --timeout S    wall-clock limit for the VM (default 900, env
#                      VM_TIMEOUT; none for --shell unless given)
#   -o, --out DIR      run directory (default build/vm/run-<kernel>-<pid>)
#       --netdev SPEC  give the guest a virtio NIC (eth0) on qemu's
#                      "-netdev SPEC" (e.g. socket,listen=127.0.0.1:PORT)
#       --mac MAC      with this MAC address (default 52:54:00:00:00:01);
#                      scripts/vm-twonode.sh joins two guests this way
#   -v, --verbose      stream the serial console to the terminal
#   -q, --quiet        print only the command's output (the default)
#   -h, --help
#
# The guest sees the host's / read-only and the repository tree read-write at
# the same path; the command runs as root in the repository top with
# HOME=/tmp. The run directory gets console.log, output.log, dmesg.log, rc;
# on a kernel with kmemleak also kmemleak.log, the leak scan made after the
# command and after unloading zcx (any leak fails the run like a splat).
#
# Exit status: the command's status; 124 timeout; 125 module build or load
# failure; 126 kernel splat in the guest log if the command succeeded (else
# the splat is only reported); 127 no status from the guest (boot failure or
# crash).
#
# Environment: VM_MEM (MiB, 2048), VM_SMP (2), VM_TIMEOUT, VM_EXTRA_APPEND
# (added to the kernel command line), VM_HUNG_TASK_SECS (the guest's
# hung-task timeout, 30), VM_KERNEL_IMAGE (boot this bzImage
# with the module directory of -k), VM_ACCEL (qemu -accel, default
# tcg,thread=single; "tcg" is faster for parallel loads but flaky).
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"; }
die() { echo "vm-run: $*" >&2; exit 2; }

kernel=6.12 mode=tree ko='' cmd='' shell=0 out='' verbose=0 netdev='' mac=52:54:00:00:00:01
timeout=${VM_TIMEOUT:-}
while [ $# -gt 0 ]; do
	case $1 in
	-k | --kernel) kernel=${2:?$1 needs an argument}; shift ;;
	-m | --module) mode=${2:?$1 needs an argument}; shift ;;
	--ko) ko=${2:?$1 needs an argument}; shift ;;
	-c | --cmd) cmd=${2?$1 needs an argument}; shift ;;
	-s | --shell) shell=1 ;;
	-t | --timeout) timeout=${2:?$1 needs an argument}; shift ;;
	-o | --out) out=${2:?$1 needs an argument}; shift ;;
	--netdev) netdev=${2:?$1 needs an argument}; shift ;;
	--mac) mac=${2:?$1 needs an argument}; shift ;;
	-v | --verbose) verbose=1 ;;
	-q | --quiet) verbose=0 ;;
	-h | --help) usage; exit 0 ;;
	--) shift; break ;;
	-*) die "unknown option $1 (see --help)" ;;
	*) break ;;
	esac
	shift
done
if [ $# -gt 0 ]; then
	[ -z "$cmd" ] || die "give the command either with -c or as arguments"
	cmd="$*"
fi
[ -n "$cmd" ] || cmd=true
[ $shell = 0 ] || [ "$cmd" = true ] || die "--shell takes no command"
# Input piped in would be lost while the guest boots.
[ $shell = 0 ] || [ -t 0 ] || die "--shell needs a terminal (use -c, or tmux)"
case $mode in tree | dkms | installed | none) ;; *) die "bad --module $mode" ;; esac
[ -z "$ko" ] || [ "$mode" = tree ] || die "--ko needs --module tree"
if [ -z "$timeout" ]; then
	if [ $shell = 1 ]; then timeout=0; else timeout=900; fi
fi

kdir=''
if [ "$kernel" = debug ]; then
	dkdir=$("$top/scripts/debug-kernel.sh" --print) ||
		die "the debug kernel is not built: run scripts/debug-kernel.sh"
	kver=$(cat "$dkdir/kernelrelease")
	image=$dkdir/bzImage
	kdir=$dkdir/src
	case $mode in dkms | installed) die "--module $mode does not apply to the debug kernel" ;; esac
else
	kver=$("$top/scripts/kernels.sh" "$kernel") || die "no kernel /boot/vmlinuz-${kernel}[.*]"
	image=${VM_KERNEL_IMAGE:-/boot/vmlinuz-$kver}
	[ -d "/lib/modules/$kver" ] || die "no /lib/modules/$kver"
fi
[ -r "$image" ] || die "cannot read $image"

out=${out:-$top/build/vm/run-$kernel-$$}
mkdir -p "$out"
out=$(cd "$out" && pwd)
# The guest mounts these at the same paths and parses job.env with sh.
case $top$out in *[[:space:]\'\\]*) die "paths with blanks or quotes are not supported" ;; esac
rm -f "$out"/{console,output,dmesg,qemu,build,kmemleak}.log "$out"/{rc,fail,job.env,cmd}

# Lines of a guest kernel log that mean the kernel is broken.
splat_re='WARNING:|\bBUG:|Oops|KASAN|UBSAN|possible (circular|recursive) locking'
splat_re+='|refcount_t|hung task|blocked for more than|general protection fault'
splat_re+='|kernel BUG|unreferenced object|Kernel panic'
# An oops header without "Oops" (6.1: "invalid opcode: 0000 [#1]"), the end
# of any oops or warning, RCU stalls, lockdep's other report, kmemleak
# giving up, and the guest's own verdicts after the job (scripts/vm/init).
splat_re+='| \[#[0-9]+\]|---\[ end trace|detected stalls?|self-detected stall'
splat_re+='|non-static key|kmemleak: .*(disabled|Cannot allocate a kmemleak_object)'
splat_re+='|zcx-vm: (rmmod [a-z_]+ failed after the job|kmemleak scan failed)'
splat='' splat_log=''    # first splat line and its log, set after the run

# Failure report: one line of reason, where the logs are, a bit of log: from
# the first splat on if there is one, else the end of $3. Of dmesg.log only
# what the kernel said after the guest's init started the job (module load
# and command) is relevant; the boot is noise.
fail() {
	local rc=$1 reason=$2 log=${3:-} lines=''
	[ -z "$splat" ] || reason+=", kernel splat: $splat"
	echo "vm-run: $reason (exit $rc); logs in $out" >&2
	if [ -n "$splat" ]; then
		log=$splat_log
		lines=$(grep -E -m1 -A29 "$splat_re" "$log")
	elif [ -n "$log" ] && [ -s "$log" ]; then
		if [ "${log##*/}" = dmesg.log ]; then
			lines=$(sed '1,/zcx-vm: job start/d' "$log" | tail -n 30)
		else
			lines=$(tail -n 30 "$log")
		fi
	fi
	[ -z "$lines" ] || printf -- '--- %s:\n%s\n' "$log" "$lines" >&2
	exit "$rc"
}

# Build or install the module on the host, before the slow boot.
check_dev=0
if [ "$mode" = tree ] && [ -z "$ko" ]; then
	ko=$top/build/kmod-$kver/zcx.ko
	make -C "$top" module KVER="$kver" ${kdir:+KDIR="$kdir"} >"$out/build.log" 2>&1 ||
		fail 125 "module build failed" "$out/build.log"
fi
if [ "$mode" = tree ]; then
	ko=$(realpath -- "$ko")
	[ -f "$ko" ] || fail 125 "no module file $ko"
	[ "$(basename "$ko")" != zcx.ko ] || check_dev=1
elif [ "$mode" = dkms ]; then
	"$top/scripts/dkms-install.sh" "$kver" >"$out/build.log" 2>&1 ||
		fail 125 "dkms install failed" "$out/build.log"
	check_dev=1
elif [ "$mode" = installed ]; then
	modinfo -k "$kver" -n zcx >"$out/build.log" 2>&1 ||
		fail 125 "no zcx module installed for $kver" "$out/build.log"
	check_dev=1
fi

# Initramfs, cached by content (see mkinitramfs.sh).
mkinit=$top/scripts/vm/mkinitramfs.sh
initrd=$top/build/vm/cache/initramfs-$kver-$("$mkinit" --key "$kver").cpio.gz
[ -f "$initrd" ] || "$mkinit" "$kver" "$initrd"

# The serial console has no window size: hand over the terminal's. Logs
# should not get escape sequences, so a command gets TERM=dumb.
rows='' cols='' term=dumb
if [ $shell = 1 ]; then
	read -r rows cols < <(stty size) || true
	term=${TERM:-linux}
fi
cat >"$out/job.env" <<-EOF2
	TOP='$top'
	RUN='$out'
	MODE='$mode'
	KO='$ko'
	CHECK_DEV=$check_dev
	INTERACTIVE=$shell
	TERM='$term'
	ROWS='$rows'
	COLS='$cols'
	HUNG_TASK_SECS='${VM_HUNG_TASK_SECS:-30}'
EOF2
printf '%s\n' "$cmd" >"$out/cmd"

append="console=ttyS0 panic=-1"
[ $verbose = 1 ] || append+=" quiet loglevel=5"  # warnings still reach console.log
# The debug kernel on 4-level paging: while identify_cpu() rebuilds the boot
# CPU's feature bits, an interrupt can see LA57 (which -cpu max offers)
# cleared, and KASAN then takes a 5-level address for a wild access.
[ "$kernel" != debug ] || append+=" no5lvl"
# And its ACPI interpreter, under KASAN in TCG, runs out the 30 s loop
# limit in each virtio device's _PRT (IRQ routing) at boot: 90 s lost, and
# the devices take MSI-X anyway.
[ "$kernel" != debug ] || append+=" acpi=noirq"
# And its check that the IO-APIC timer ticks, under KASAN in TCG on a busy
# host, can miss the ticks and panic ("IO-APIC + timer doesn't work!").
[ "$kernel" != debug ] || append+=" no_timer_check"
append+=" ${VM_EXTRA_APPEND:-}"

# Serial console: always logged; on the terminal only for -v and --shell
# (where it is multiplexed with the monitor: Ctrl-A X quits).
if [ $shell = 1 ]; then
	console=(-chardev "stdio,id=con,mux=on,signal=off,logfile=$out/console.log"
		-serial chardev:con -mon chardev=con)
elif [ $verbose = 1 ]; then
	console=(-chardev "stdio,id=con,logfile=$out/console.log" -serial chardev:con)
else
	console=(-chardev "file,id=con,path=$out/console.log" -serial chardev:con)
fi

p9=security_model=none,multidevs=remap
# shellcheck disable=SC2054 # the commas are qemu's
qemu=(qemu-system-x86_64 -nodefaults -no-reboot -display none
	# KVM cannot boot these kernels here; without erms/fsrm TCG copies fast.
	# One TCG thread for all vCPUs: with multi-threaded TCG, 6.12 guests
	# sometimes (~2 boots in 100) run a stale int3 after live code patching
	# (static keys) and Oops; the price is half speed for parallel loads.
	-accel "${VM_ACCEL:-tcg,thread=single}" -cpu max,-erms,-fsrm
	-smp "${VM_SMP:-2}" -m "${VM_MEM:-2048}"
	-kernel "$image" -initrd "$initrd" -append "$append"
	-virtfs "local,path=/,mount_tag=hostroot,readonly=on,$p9"
	-virtfs "local,path=$top,mount_tag=zcxtree,$p9"
	-virtfs "local,path=$out,mount_tag=zcxrun,$p9"
	"${console[@]}")
[ -z "$netdev" ] ||
	qemu+=(-netdev "$netdev,id=net0" -device "virtio-net-pci,netdev=net0,mac=$mac")

# --foreground: qemu must stay in the terminal's process group to read it.
qrc=0
if [ $shell = 1 ]; then
	timeout --foreground -k 10 "$timeout" "${qemu[@]}" 2>"$out/qemu.log" || qrc=$?
else
	timeout --foreground -k 10 "$timeout" "${qemu[@]}" \
		</dev/null 2>"$out/qemu.log" || qrc=$?
fi

[ ! -f "$out/output.log" ] || cat "$out/output.log"

# A panic never reaches dmesg.log, and the console has no info-level
# messages: look in both.
# kmemleak.log: the debug kernel's leak scan after the job ("unreferenced
# object" is a splat).
for f in "$out/dmesg.log" "$out/console.log" "$out/kmemleak.log"; do
	splat=$(grep -E -m1 "$splat_re" "$f" 2>/dev/null) || continue
	splat_log=$f
	break
done

if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	fail 124 "timeout after ${timeout}s" "$out/console.log"
fi
[ ! -f "$out/fail" ] || fail 125 "$(cat "$out/fail")" "$out/dmesg.log"
if [ ! -s "$out/rc" ]; then
	cat "$out/qemu.log" >&2
	fail 127 "guest reported no status (qemu exit $qrc)" "$out/console.log"
fi
rc=$(cat "$out/rc")
# A failed command keeps its status (the splat is mentioned); a splat turns
# success into failure.
[ "$rc" = 0 ] || fail "$rc" "command exited $rc" "$out/dmesg.log"
[ -z "$splat" ] || fail 126 "command exit 0"
