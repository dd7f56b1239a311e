#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# kernels.sh ALIAS... - print the full version of each installed Debian
# kernel named by ALIAS: "6.1" -> newest /boot/vmlinuz-6.1.*, "6.12" ->
# newest /boot/vmlinuz-6.12.*; a full version is printed as it is if that
# kernel is installed.  Without arguments, the kernels zcx is tested on.
set -euo pipefail

ZCX_TEST_KERNELS=${ZCX_TEST_KERNELS:-"6.1 6.12"}

resolve() {
	local alias=$1 kver

	if [ -e "/boot/vmlinuz-$alias" ]; then
		echo "$alias"
		return
	fi
	kver=$(find /boot -maxdepth 1 -name "vmlinuz-$alias.*" -printf '%f\n' |
	       sed 's/^vmlinuz-//' | sort -V | tail -n 1)
	if [ -z "$kver" ]; then
		echo "kernels.sh: no installed kernel matches '$alias'" >&2
		return 1
	fi
	echo "$kver"
}

# shellcheck disable=SC2086 # word splitting of the default list is wanted
[ $# -gt 0 ] || set -- $ZCX_TEST_KERNELS
for alias in "$@"; do
	resolve "$alias"
done
