# SPDX-License-Identifier: GPL-2.0-only
#
# awk -f median.awk -f bench-pairs-report.awk pairs.csv - Markdown report
# of bench-pairs.sh's rows "round,system,test,bytes,value": every round,
# the medians, and in how many rounds zcx meets issue 4's targets.
BEGIN { FS = "," }
NR > 1 {
	at[$1, $2 "," $3] = $5
	sample($2 "," $3, $5)
	if ($1 > rounds) rounds = $1
}
function med(key) { return (key in mid) ? mid[key] : 0 }
function cell(x, fmt) { return x ? sprintf(fmt, x) : "-" }
function ratio(a, b) { return b ? sprintf("%.2f", a / b) : "-" }
END {
	summarise_all()
	zl = "zcx-enter,lat"; ul = "ucx-posix+cma,lat"
	zb = "zcx-enter,bw"; ub = "ucx-posix+cma,bw"; cb = "cma,bw"
	print "## zcx from one pair of processes to the next (QEMU/TCG guest)"
	print ""
	print "Each round: zcx on a new pair, then UCX `posix,cma` and process_vm_readv"
	print "beside it in the same guest. Latency is one way at 8 KiB (µs), bandwidth"
	print "streaming at 1 MiB (MB/s)."
	print ""
	print "| round | zcx lat | UCX lat | zcx ÷ UCX | zcx bw | UCX bw | pvr bw | zcx ÷ UCX | zcx ÷ pvr |"
	print "|---|---|---|---|---|---|---|---|---|"
	for (i = 1; i <= rounds; i++) {
		printf "| %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", i,
		       cell(at[i, zl] / 1000, "%.1f"), cell(at[i, ul] / 1000, "%.1f"), ratio(at[i, zl], at[i, ul]),
		       cell(at[i, zb], "%.0f"), cell(at[i, ub], "%.0f"), cell(at[i, cb], "%.0f"),
		       ratio(at[i, zb], at[i, ub]), ratio(at[i, zb], at[i, cb])
		if (at[i, zl] && at[i, ul] && at[i, zl] <= at[i, ul]) lat_met++
		if (at[i, zb] && at[i, ub] && at[i, cb] && at[i, zb] >= at[i, ub] && at[i, zb] >= 0.9 * at[i, cb]) bw_met++
	}
	printf "| median | %s | %s | %s | %s | %s | %s | %s | %s |\n",
	       cell(med(zl) / 1000, "%.1f"), cell(med(ul) / 1000, "%.1f"), ratio(med(zl), med(ul)),
	       cell(med(zb), "%.0f"), cell(med(ub), "%.0f"), cell(med(cb), "%.0f"),
	       ratio(med(zb), med(ub)), ratio(med(zb), med(cb))
	print ""
	printf "- 8 KiB latency no worse than UCX shared memory: %d of %d rounds\n", lat_met, rounds
	printf "- 1 MiB bandwidth >= 0.9x process_vm_readv and >= UCX posix,cma: %d of %d rounds\n", bw_met, rounds
	print "- The ratios of the medians row are of the medians, not medians of ratios."
}
