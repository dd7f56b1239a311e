# SPDX-License-Identifier: GPL-2.0-only
#
# awk -f median.awk -f bench-net-report.awk [-v reps=N] ROWS - Markdown
# report of bench-net.sh's rows "system,test,bytes,rep,value" (sorted by
# bytes): each figure is the median of its repetitions, [min–max] where
# there are several; ratios are of the medians.
BEGIN { FS = "," }
{
	sample($1 SUBSEP $2 SUBSEP $3, $5)
	if ($2 == "lat" && !($3 in ls)) { ls[$3] = 1; li[++nl] = $3 }
	if ($2 == "bw" && !($3 in bs)) { bs[$3] = 1; bi[++nb] = $3 }
}
function med(s, test, b,    k) { k = s SUBSEP test SUBSEP b; return (k in mid) ? mid[k] : "" }
# zcx's better mode's median
function best(b, test, higher,    z, zp) {
	z = med("zcx-net-enter", test, b); zp = med("zcx-net-poll", test, b)
	if (zp != "" && (z == "" || (higher ? zp > z : zp < z)))
		z = zp
	return z
}
function ratio(a, b) { return a && b ? sprintf("%.2fx", a / b) : "-" }
# median [min–max], divided by @scale
function cell(s, test, b, scale, fmt,    k) {
	k = s SUBSEP test SUBSEP b
	if (!(k in mid) || !mid[k]) return "-"
	if (n[k] == 1) return sprintf(fmt, mid[k] / scale)
	return sprintf(fmt " [" fmt "–" fmt "]", mid[k] / scale, lo[k] / scale, hi[k] / scale)
}
function regs(x) { return x == "" ? "-" : sprintf("%.2f", x) }
function row(test, b,    z, p, pr, u) {
	z = best(b, test, test == "bw"); u = med("ucx-rc", test, b)
	if (test == "lat") {
		p = med("perftest", "lat", b)
		printf "| %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", b,
		       cell("zcx-net-enter", test, b, 1000, "%.1f"), cell("zcx-net-poll", test, b, 1000, "%.1f"),
		       cell("perftest", test, b, 1000, "%.1f"), cell("ucx-rc", test, b, 1000, "%.1f"),
		       ratio(z, p), ratio(z, u), cell("zcx-net-enter", "pkts", b, 1, "%.2f"),
		       cell("perftest", "pkts", b, 1, "%.2f")
	} else {
		pr = med("perftest-read", "bw", b)
		printf "| %d | %s | %s | %s | %s | %s | %s | %s |\n", b,
		       cell("zcx-net-enter", test, b, 1, "%.0f"), cell("zcx-net-poll", test, b, 1, "%.0f"),
		       cell("perftest-write", test, b, 1, "%.0f"), cell("perftest-read", test, b, 1, "%.0f"),
		       cell("ucx-rc", test, b, 1, "%.0f"), ratio(z, pr), ratio(z, u)
	}
}
END {
	summarise_all()
	print "## zcx through zcx_ib against perftest and UCX (Soft-RoCE on a veth, one QEMU/TCG guest)"
	print ""
	if (reps > 1) {
		print "Each figure is the median of " reps " repetitions [min–max], the systems taking turns"
		print "in each; ratios are of the medians."
		print ""
	}
	print "Latency: half the round trip, µs (ratios: zcx best mode / peer, lower is better);"
	print "packets the device sent per message (acknowledgements and zcx_ib control messages"
	print "included), which does not depend on the emulation."
	print ""
	print "| bytes | zcx enter | zcx poll | ib_send_lat | UCX rc_verbs | vs perftest | vs UCX | packets, zcx | packets, ib_send_lat |"
	print "|---|---|---|---|---|---|---|---|---|"
	for (i = 1; i <= nl; i++) row("lat", li[i])
	print ""
	print "Bandwidth, MB/s (ratios: zcx best mode / peer, higher is better)."
	print ""
	print "| bytes | zcx enter | zcx poll | ib_write_bw | ib_read_bw | UCX rc_verbs | vs ib_read_bw | vs UCX |"
	print "|---|---|---|---|---|---|---|---|"
	for (i = 1; i <= nb; i++) row("bw", bi[i])
	print ""
	print "A buffer registered for every message: one message, µs (ratio: plain verbs / zcx best"
	print "mode, higher is better for zcx); zcx keeps its registrations, and registers every"
	print "message with reg_cache=0 (enter mode).  Registrations per message: what zcx asked"
	print "of the device on both sides (one per MR; plain verbs: one ibv_reg_mr), which does"
	print "not depend on the emulation: what a NIC whose registrations cost more saves."
	print ""
	print "| bytes | zcx | zcx, reg_cache=0 | ibv_reg_mr + RDMA WRITE + ibv_dereg_mr | of which reg + dereg | ratio | registrations, zcx | zcx, reg_cache=0 |"
	print "|---|---|---|---|---|---|---|---|"
	for (i = 1; i <= nl; i++) {
		b = li[i]; vr = med("verbs-reg-per-msg", "lat", b)
		if (vr == "")
			continue
		z = best(b, "lat", 0)
		printf "| %d | %s | %s | %s | %s | %s | %s | %s |\n", b, z ? sprintf("%.1f", z / 1000) : "-",
		       cell("zcx-net-noreg", "lat", b, 1000, "%.1f"), cell("verbs-reg-per-msg", "lat", b, 1000, "%.1f"),
		       cell("verbs-reg-per-msg", "reg", b, 1000, "%.1f"), z ? sprintf("%.1fx", vr / z) : "-",
		       regs(med("zcx-net-enter", "regs", b)), regs(med("zcx-net-noreg", "regs", b))
	}
	print ""
	print "Every size, zcx enter mode with its registrations kept and with reg_cache=0, µs."
	print ""
	print "| bytes | kept | reg_cache=0 | ratio |"
	print "|---|---|---|---|"
	for (i = 1; i <= nl; i++) {
		b = li[i]
		printf "| %d | %s | %s | %s |\n", b, cell("zcx-net-enter", "lat", b, 1000, "%.1f"),
		       cell("zcx-net-noreg", "lat", b, 1000, "%.1f"),
		       ratio(med("zcx-net-enter", "lat", b), med("zcx-net-noreg", "lat", b))
	}
}
