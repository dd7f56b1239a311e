#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# kernel-tools.sh OUTDIR - unpack the build-time tools zcx borrows from the
# kernel (the kselftest harness headers, checkpatch.pl and its data files)
# out of Debian's linux-source-6.12 tarball into OUTDIR.  Nothing of it is
# committed.  The unpack is cached, keyed by the package version, because
# reading the tarball costs some 15 seconds.
set -euo pipefail

outdir=${1:?usage: kernel-tools.sh OUTDIR}
tarball=$(find /usr/src -maxdepth 1 -name 'linux-source-6.12.tar.*' | head -n 1)
if [ -z "$tarball" ]; then
	echo "kernel-tools: /usr/src/linux-source-6.12.tar.* missing (apt-get install linux-source-6.12)" >&2
	exit 1
fi
key=$(dpkg-query -W -f '${Version}' linux-source-6.12 2>/dev/null || stat -c %Y "$tarball")
stamp=$outdir/.source-version

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$key" ]; then
	exit 0
fi

files=(
	tools/testing/selftests/kselftest_harness.h
	tools/testing/selftests/kselftest.h
	scripts/checkpatch.pl
	scripts/spelling.txt
	scripts/const_structs.checkpatch
)
rm -rf "$outdir"
mkdir -p "$outdir"
tar -xf "$tarball" -C "$outdir" --strip-components=1 --wildcards "${files[@]/#/*/}"
echo "$key" > "$stamp"
