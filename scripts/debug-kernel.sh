#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# debug-kernel.sh [--print] - build, once, a 6.12 kernel for the reliability
# lane: Debian's linux-source-6.12 with x86_64 defconfig plus
# scripts/debug-kernel.config (KASAN, UBSAN, lockdep, kmemleak, DEBUG_VM,
# DEBUG_LIST, fault injection, and built in everything the VM runner,
# selftests and Soft-RoCE need).  The result is cached on disk under
# ${ZCX_CACHE:-/var/cache/zcx}/debug-kernel-KEY, KEY hashing the source
# package's version, the compiler's (modules must be built with the
# kernel's), the config fragment and the recipe version below (bump it
# when the build steps change); later runs only print the directory, and
# a new build removes other keys' trees unused for a week (a few GB
# each).  It holds bzImage and a build tree for out-of-tree modules
# (make M=...).  --print prints the directory without building (exit 1
# if it is not built).  About 28 CPU-minutes (18 minutes on 2 cores
# beside a guest).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
tarball=/usr/src/linux-source-6.12.tar.xz
frag=$top/scripts/debug-kernel.config
srcver=$(dpkg-query -W -f '${Version}' linux-source-6.12)
recipe=1
cc_version=$(gcc -dumpfullversion 2>/dev/null || echo none)
key=$( { echo "$srcver gcc $cc_version recipe $recipe"; cat "$frag"; } |
	sha256sum | cut -c1-16)
cache=${ZCX_CACHE:-/var/cache/zcx}
dir=$cache/debug-kernel-$key

if [ -f "$dir/done" ]; then
	# Last used now: see the pruning below.
	touch "$dir/used" 2> /dev/null || true
	echo "$dir"
	exit 0
fi
[ "${1:-}" = --print ] && exit 1

# The build itself, run as a child so that set -e holds inside it.
if [ "${1:-}" = --build-in ]; then
	cd "$2"
	make defconfig
	scripts/kconfig/merge_config.sh -m .config "$frag"
	make olddefconfig
	# Every option of the fragment must have survived olddefconfig.
	while read -r line; do
		case $line in CONFIG_*=*) ;; *) continue ;; esac
		opt=${line%%=*} val=${line#*=}
		if [ "$val" = n ]; then
			! grep -q "^$opt=" .config || { echo "not disabled: $opt"; exit 1; }
		else
			grep -qx "$line" .config || { echo "not set: $line"; exit 1; }
		fi
	done < "$frag"
	make -j"$(nproc)" bzImage modules
	exit 0
fi

"$top/scripts/install-deps.sh" --debug-kernel
mkdir -p "$dir"
log=$dir/build.log
echo "debug-kernel: building in $dir (log: $log)" >&2
rm -rf "$dir/src"
mkdir -p "$dir/src"
tar -C "$dir/src" --strip-components=1 -xf "$tarball"
if ! "$0" --build-in "$dir/src" > "$log" 2>&1; then
	tail -n 30 "$log" >&2
	echo "debug-kernel: build failed" >&2
	exit 1
fi
cp "$dir/src/arch/x86/boot/bzImage" "$dir/bzImage"
make -s -C "$dir/src" kernelrelease > "$dir/kernelrelease"
touch "$dir/done" "$dir/used"
# Trees of other keys, unused for a week (another checkout may still use
# one, or be building it: its directory's time is recent then).
for old in "$cache"/debug-kernel-*; do
	[ "$old" != "$dir" ] || continue
	mark=$old/used
	[ -e "$mark" ] || mark=$old
	[ -z "$(find "$mark" -maxdepth 0 -mtime +7)" ] || rm -rf "$old"
done
echo "$dir"
