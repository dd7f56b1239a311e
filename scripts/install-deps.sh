#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# install-deps.sh [--bench] [--debug-kernel] [--soak] - install the Debian
# packages that building and testing zcx need (with --bench, also those the
# benchmarks compare against; with --debug-kernel, what building a kernel
# needs; with --soak, the memory churn of scripts/soak.sh),
# if any is missing (needs root for that).  Output goes to build/logs/apt.log;
# quiet when everything is present.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
packages=(
	build-essential kmod cpio xz-utils gzip pkg-config dkms sparse
	dpkg-dev debhelper dh-dkms lintian man-db groff-base
	busybox-static qemu-system-x86 iproute2
	libibverbs-dev librdmacm-dev ibverbs-providers ibverbs-utils
	libnl-genl-3-dev
	libpmix-dev openmpi-bin
	linux-image-amd64 linux-headers-amd64
	linux-image-6.12-amd64 linux-headers-6.12-amd64 linux-source-6.12
)
for group in "$@"; do
	case $group in
	# Peers measured beside zcx: UCX, Open MPI, perftest; strace counts their syscalls;
	# gnuplot draws the figures.
	--bench) packages+=(ucx-utils libopenmpi-dev strace gnuplot-nox perftest) ;;
	# Building the debug kernel (scripts/debug-kernel.sh).
	--debug-kernel) packages+=(flex bison bc libelf-dev libssl-dev) ;;
	# The memory churn beside the soak (scripts/soak.sh).
	--soak) packages+=(stress-ng) ;;
	*) echo "install-deps: unknown option $group" >&2; exit 2 ;;
	esac
done

missing=()
for pkg in "${packages[@]}"; do
	status=$(dpkg-query -W -f '${db:Status-Status}' "$pkg" 2>/dev/null || true)
	[ "$status" = installed ] || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing packages (run as root to install): ${missing[*]}" >&2
	exit 1
fi
mkdir -p "$top/build/logs"
log=$top/build/logs/apt.log
echo "installing: ${missing[*]} (log: $log)"
export DEBIAN_FRONTEND=noninteractive
# A mirror's passing failure should not fail the run.
retries=(-o Acquire::Retries=3)
if ! { apt-get "${retries[@]}" update &&
       apt-get "${retries[@]}" install -y --no-install-recommends "${missing[@]}"; } > "$log" 2>&1; then
	tail -n 30 "$log" >&2
	echo "install-deps: apt-get failed; see $log" >&2
	exit 1
fi
