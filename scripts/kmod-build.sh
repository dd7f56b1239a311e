#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# kmod-build.sh [--lint] KVER KDIR OUTDIR - build zcx.ko (and zcx_ib.ko) for
# one kernel.
#
# Kbuild writes objects next to the sources, so each kernel gets its own
# OUTDIR that mirrors the source files as symlinks; one tree then builds
# for several kernels without cleaning in between.  The feature probes run
# first and leave OUTDIR/generated/probed.h.
#
# --lint builds with W=1 and sparse (C=1) and fails if the compiler or
# sparse printed anything about zcx's own files.
set -euo pipefail

lint=0
if [ "${1:-}" = --lint ]; then
	lint=1
	shift
fi
kver=${1:?usage: kmod-build.sh [--lint] KVER KDIR OUTDIR}
kdir=${2:?usage: kmod-build.sh [--lint] KVER KDIR OUTDIR}
outdir=${3:?usage: kmod-build.sh [--lint] KVER KDIR OUTDIR}
top=$(cd "$(dirname "$0")/.." && pwd)

if [ ! -f "$kdir/Makefile" ]; then
	echo "kmod-build: no kernel build tree at $kdir (install linux-headers for $kver)" >&2
	exit 1
fi

mkdir -p "$outdir/kmod/ib" "$outdir/uapi" "$outdir/generated"
outdir=$(cd "$outdir" && pwd)	# kbuild's M= must be absolute
# Refresh the mirror: sources may have been added or removed.
find "$outdir/kmod" "$outdir/kmod/ib" "$outdir/uapi" -maxdepth 1 -type l -delete
for f in "$top"/kmod/*.[ch]; do ln -s "$f" "$outdir/kmod/"; done
for f in "$top"/kmod/ib/*.[ch]; do ln -s "$f" "$outdir/kmod/ib/"; done
ln -s "$top"/uapi/*.h "$outdir/uapi/"
ln -sf "$top/Kbuild" "$top/dkms.conf" "$outdir/"

"$top/scripts/kmod-probes.sh" "$kdir" "$outdir/generated"

if [ "$lint" = 0 ]; then
	make -C "$kdir" M="$outdir" modules
	exit 0
fi

# Force a full rebuild so every file is compiled and checked.
make -C "$kdir" M="$outdir" clean > /dev/null
"$top/scripts/kmod-probes.sh" "$kdir" "$outdir/generated"
log=$outdir/lint.log
make -C "$kdir" M="$outdir" W=1 C=1 modules > "$log" 2>&1 || {
	cat "$log" >&2
	exit 1
}
# Every unit compiled here is ours: any diagnostic at all is a finding.
if grep -E "warning:|error:|sparse:" "$log" >&2; then
	echo "kmod-build: W=1/sparse findings for $kver (full log: $log)" >&2
	exit 1
fi
