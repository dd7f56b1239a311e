#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# dkms-install.sh [KVER...] - install zcx.ko through DKMS from this tree,
# as a compute-node administrator would: the module sources go to
# /usr/src/zcx-<version>, then "dkms add", "dkms build -k", "dkms install -k"
# for each kernel (default: the running one).  A previous registration of
# the same version is removed first, so the tree's current code is built.
# dkms-install.sh --remove undoes it: "dkms remove --all", then the sources.
# This is the developer's path; where the zcx-dkms package of the same
# version is installed (make check installs it), it owns the registration
# and this script refuses: "scripts/pkg-test.sh purge" removes it.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
version=$(sed -n 's/^PACKAGE_VERSION="*\([^"]*\)"*$/\1/p' "$top/dkms.conf")
src=/usr/src/zcx-$version
remove=
if [ "${1:-}" = --remove ]; then
	remove=1
	shift
fi
[ $# -gt 0 ] || set -- "$(uname -r)"

if ! command -v dkms > /dev/null; then
	echo "dkms-install: dkms is not installed (apt-get install dkms)" >&2
	exit 1
fi

if dpkg-query -S "$src" > /dev/null 2>&1; then
	echo "dkms-install: $src belongs to the zcx-dkms package (zcx/$version" \
		"is registered by it); remove it first: scripts/pkg-test.sh purge" >&2
	exit 1
fi

# Only what the module build needs: DKMS copies the source tree into its
# own build directory, and the repository's build/ can be large.
# (Not "dkms status | grep -q": under pipefail grep's early exit fails it.)
if [ -n "$(dkms status -m zcx -v "$version" 2>/dev/null)" ]; then
	dkms remove -m zcx -v "$version" --all > /dev/null
fi
rm -rf "$src"
[ -z "$remove" ] || exit 0
mkdir -p "$src/scripts"
cp -r "$top/Makefile" "$top/Kbuild" "$top/dkms.conf" "$top/kmod" "$top/uapi" "$src/"
cp "$top/scripts/kmod-build.sh" "$top/scripts/kmod-probes.sh" \
	"$top/scripts/kernels.sh" "$src/scripts/"

dkms add -m zcx -v "$version"
for kver in "$@"; do
	dkms build -m zcx -v "$version" -k "$kver"
	dkms install -m zcx -v "$version" -k "$kver" --force
done
