#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Build the tiny initramfs that boots a zcx test VM (see scripts/vm-run.sh).
#
#   mkinitramfs.sh <kver> <out.cpio.gz>   build the image
#   mkinitramfs.sh --key <kver>           print the cache key of that image
#
# The image holds only busybox-static, the virtio/9p module chain of <kver>
# and scripts/vm/{init,modprobe-shim}: everything else comes from the host's
# root filesystem, which the guest mounts read-only over virtio-9p.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
busybox=/bin/busybox    # from busybox-static: must not need a libc

usage() { sed -n '2,9s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }

# Print the module files needed to mount 9p, dependency order, no duplicates.
# modprobe --show-depends takes one module per call; built-ins ("builtin x")
# need nothing, and a kernel without /lib/modules (the debug kernel) has
# everything built in.
modules() {
	local kver=$1 m
	[ -d "/lib/modules/$kver" ] || return 0
	for m in virtio_pci 9pnet_virtio 9p; do
		modprobe -S "$kver" --show-depends "$m"
	done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }'
}

key() {
	local kver=$1
	{
		echo "$kver"
		modules "$kver" | xargs -r sha256sum
		sha256sum "$busybox" "$here/init" "$here/modprobe-shim" "$here/mkinitramfs.sh"
	} | sha256sum | cut -c1-16
}

build() {
	local kver=$1 out=$2 stage f name applet
	stage=$(mktemp -d)
	# shellcheck disable=SC2064 # expand now: $stage is local
	trap "rm -rf '$stage'" EXIT

	mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,host,job,modules}
	cp "$busybox" "$stage/bin/busybox"
	# Applet links at build time, so /sbin/modprobe can be the shim instead.
	for applet in $("$busybox" --list-full); do
		[ "$applet" = sbin/modprobe ] || [ -e "$stage/$applet" ] ||
			ln -s /bin/busybox "$stage/$applet"
	done
	install -m 0755 "$here/init" "$stage/init"
	install -m 0755 "$here/modprobe-shim" "$stage/sbin/modprobe"

	# busybox insmod cannot decompress, so store plain .ko files.
	: >"$stage/modules/order"
	for f in $(modules "$kver"); do
		name=$(basename "$f")
		case $f in
		*.xz) xz -dc "$f" >"$stage/modules/${name%.xz}" ;;
		*.zst) zstd -qdc "$f" >"$stage/modules/${name%.zst}" ;;
		*.gz) gzip -dc "$f" >"$stage/modules/${name%.gz}" ;;
		*) cp "$f" "$stage/modules/$name" ;;
		esac
		echo "${name%.ko*}.ko" >>"$stage/modules/order"
	done

	mkdir -p "$(dirname "$out")"
	(cd "$stage" && find . | LC_ALL=C sort | cpio --quiet -o -H newc -R 0:0) |
		gzip -1 >"$out.tmp.$$"
	mv -f "$out.tmp.$$" "$out"   # atomic: parallel runs may share the cache
}

case ${1:-} in
-h | --help) usage ;;
--key) [ $# -eq 2 ] || { usage >&2; exit 2; }; key "$2" ;;
*) [ $# -eq 2 ] || { usage >&2; exit 2; }; build "$1" "$2" ;;
esac
