#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# zcx_preload_test.sh - an unmodified verbs program under
# LD_PRELOAD=libzcx-verbs-preload.so: ibv_rc_pingpong between two
# processes on Soft-RoCE, the client with the interposer, both checking
# every buffer they receive (-c).  TAP output; skips without an RDMA
# device or ibv_rc_pingpong.
set -u

here=$(cd "$(dirname "$0")" && pwd)
preload=${ZCX_PRELOAD:-$here/../build/lib/libzcx-verbs-preload.so}
dev=$(find /sys/class/infiniband -mindepth 1 -maxdepth 1 -printf "%f\n" 2>/dev/null | sort | head -n 1)

echo "TAP version 13"
echo "1..1"
if [ -z "$dev" ] || ! command -v ibv_rc_pingpong > /dev/null || [ ! -f "$preload" ]; then
	echo "ok 1 preload.rc_pingpong # SKIP no RDMA device, ibv_rc_pingpong or $preload"
	exit 4
fi

log=$(mktemp -d)
# GID 1: rxe on lo lists ::ffff:127.0.0.1 there (RoCE v2).
# A slow guest (ZCX_SLOW=1, the debug kernel) exchanges fewer buffers.
iters=200
[ "${ZCX_SLOW:-}" != 1 ] || iters=50
port=18515
args=(-d "$dev" -g 1 -c -n "$iters" -s 65536 -p "$port")
# Line-buffered: a server cut short by the timeout still leaves its log.
timeout 120 stdbuf -oL ibv_rc_pingpong "${args[@]}" > "$log/server" 2>&1 &
server=$!
# The client connects once, with no retry: wait, boundedly, until the
# server's port is listening (state 0A).  Its "local address" line comes
# before it even opens the socket.
listening() {
	cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
		awk -v p="$(printf ':%04X' $port)" '$2 ~ p "$" && $4 == "0A" { f = 1 } END { exit !f }'
}
for _ in $(seq 1 3000); do
	listening && break
	kill -0 $server 2> /dev/null || break
	sleep 0.01
done
ZCX_PRELOAD_STATS=1 LD_PRELOAD=$preload timeout 120 \
	ibv_rc_pingpong "${args[@]}" localhost > "$log/client" 2>&1
client_rc=$?
wait $server
server_rc=$?
sed 's/^/# /' "$log/client"

# Both sides completed and checked every buffer; the client's MR came
# from the zcx cache (one miss), not from a pass-through.
if [ $client_rc -eq 0 ] && [ $server_rc -eq 0 ] &&
   grep -q "$iters iters" "$log/client" && grep -q "zcx-preload: .* 1 misses" "$log/client"; then
	echo "ok 1 preload.rc_pingpong"
	rc=0
else
	echo "# client $client_rc, server $server_rc"
	sed 's/^/# server: /' "$log/server"
	echo "not ok 1 preload.rc_pingpong"
	rc=1
fi
rm -rf "$log"
exit $rc
