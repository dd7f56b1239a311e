#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# deb-build.sh [OUTDIR] - build the Debian packages (zcx-dkms, libzcx1,
# libzcx-verbs1, libzcx-pmix1, libzcx-dev, zcx-utils) from this tree with
# dpkg-buildpackage -us -uc -b, in a copy of the tree under
# OUTDIR/src (default build/deb), so that nothing lands next to the
# repository; the .deb files end up in OUTDIR.  The copy holds what git
# tracks plus untracked files that are not ignored, as they are now
# (uncommitted changes included).  Needs dpkg-dev, debhelper, dh-dkms
# (scripts/install-deps.sh installs them).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$top/build/deb}
version=$(sed -n 's/^PACKAGE_VERSION="*\([^"]*\)"*$/\1/p' "$top/dkms.conf")
src=$out/src/zcx-$version

rm -rf "$out/src"
rm -f "$out"/*.deb "$out"/*.buildinfo "$out"/*.changes
mkdir -p "$src"
if git -C "$top" rev-parse --is-inside-work-tree > /dev/null 2>&1; then
	(cd "$top" && git ls-files -z --cached --others --exclude-standard) |
	while IFS= read -r -d '' f; do
		# Deleted but not yet committed: not part of the tree any more.
		[ -e "$top/$f" ] || [ -L "$top/$f" ] || continue
		mkdir -p "$src/$(dirname "$f")"
		cp -P "$top/$f" "$src/$f"
	done
else
	tar -C "$top" --exclude=./build -cf - . | tar -C "$src" -xf -
fi

cd "$src"
dpkg-buildpackage -us -uc -b
mv ../*.deb ../*.buildinfo ../*.changes "$out/"
ls -1 "$out"/*.deb
