#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# demo.sh [KERNEL] - see zcx working: boot a Debian kernel (default 6.12)
# in QEMU, load zcx.ko built from this tree, and run the examples.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
kernel=${1:-6.12}
"$top/scripts/install-deps.sh"
make -s -C "$top" lib examples
exec "$top/scripts/vm-run.sh" --kernel "$kernel" --module tree --cmd '
	set -e
	echo "== guest kernel $(uname -r); zcx.ko loaded from the tree"
	ls -l /dev/zcx
	echo "== build/examples/zcx_info"
	build/examples/zcx_info
	echo "== build/examples/zcx_regcache"
	build/examples/zcx_regcache
	echo "== build/examples/zcx_pingpong (forked, addresses through pipes)"
	build/examples/zcx_pingpong
	echo "== build/examples/zcx_pingpong -p (polling endpoints)"
	build/examples/zcx_pingpong -p
	echo "== zcx_pingpong -s FILE & zcx_pingpong -c FILE (launched separately)"
	rm -f /tmp/zcx-pingpong.addr*
	build/examples/zcx_pingpong -s /tmp/zcx-pingpong.addr > /tmp/zcx-pingpong.out &
	build/examples/zcx_pingpong -c /tmp/zcx-pingpong.addr
	wait $!
	tail -n 2 /tmp/zcx-pingpong.out
	echo "== build/examples/zcx_barrier -n 4"
	build/examples/zcx_barrier -n 4
'
