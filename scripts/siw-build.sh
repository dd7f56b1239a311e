#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# siw-build.sh KVER KDIR OUTDIR - build Soft-iWARP (siw.ko), which Debian's
# kernels leave out (CONFIG_RDMA_SIW is not set), from the siw sources of
# Debian's linux-source-6.12 against the headers in KDIR, into
# OUTDIR/siw.ko: check.sh runs zcx_ib's cases over it, an iWARP device
# beside the Soft-RoCE one.  KVER must be a 6.12 kernel, the version of
# those sources.  Nothing of it is committed.
set -euo pipefail

kver=${1:?usage: siw-build.sh KVER KDIR OUTDIR} kdir=${2:?} outdir=${3:?}
case $kver in
6.12.*) ;;
*)
	echo "siw-build: $kver is not a 6.12 kernel, the version of the sources" >&2
	exit 1
	;;
esac
tarball=$(find /usr/src -maxdepth 1 -name 'linux-source-6.12.tar.*' | head -n 1)
if [ -z "$tarball" ]; then
	echo "siw-build: /usr/src/linux-source-6.12.tar.* missing (apt-get install linux-source-6.12)" >&2
	exit 1
fi
outdir=$(mkdir -p "$outdir" && cd "$outdir" && pwd)
rm -rf "${outdir:?}"/*
tar -xf "$tarball" -C "$outdir" --strip-components=5 --wildcards '*/drivers/infiniband/sw/siw/*'
make -C "$kdir" M="$outdir" CONFIG_RDMA_SIW=m modules
test -f "$outdir/siw.ko"
