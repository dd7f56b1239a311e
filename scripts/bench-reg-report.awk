# SPDX-License-Identifier: GPL-2.0-only
#
# awk -f median.awk -f bench-reg-report.awk [-v csv=OUT.csv] reg-raw.csv -
# Markdown report of reg_bench's rows "kind,param,ns_per_op[,run]"
# (several runs: each figure is their median; OUT.csv gets
# "kind,param,median,min,max,runs"), with the issue's targets checked: at
# 1 MiB a library hit is at least 100x cheaper than a miss and cheaper
# than a kernel hit; hit cost stays within 1.5x from 16 to 8192 cached
# regions.
BEGIN { FS = "," }
NR == 1 { next }
{
	sample($1 SUBSEP $2, $3)
	if (!($2 in seen_size) && $1 == "miss") { sizes[++ns] = $2; seen_size[$2] = 1 }
	if ($1 == "lib_hit_vs_regions" && !($2 in seen_count)) { counts[++nc] = $2; seen_count[$2] = 1 }
}
function human(b) { return b >= 1048576 ? b / 1048576 " MiB" : b / 1024 " KiB" }
function us(ns) { return ns == "" ? "n/a" : sprintf("%.2f", ns / 1000) }
function ratio(a, b) { return (a == "" || b == "" || b == 0) ? "n/a" : sprintf("%.0fx", a / b) }
END {
	summarise_all()
	if (csv != "") {
		print "kind,param,median,min,max,runs" > csv
		for (i = 1; i <= nkeys; i++) {
			split(order[i], f, SUBSEP)
			printf "%s,%s,%.6g,%.6g,%.6g,%d\n", f[1], f[2], mid[order[i]], lo[order[i]], hi[order[i]], n[order[i]] > csv
		}
	}
	print "## Registration cost (zcx in QEMU/TCG; ratios carry over, absolute times do not)"
	print ""
	print "Misses pin page by page; buffers from 2 MiB up are usually backed by"
	print "transparent huge pages, which pin much faster, hence the dip at 4 MiB."
	print "A kernel hit is one ioctl; a library hit is zcx_mr_reg + zcx_mr_dereg"
	print "with no system call; ibv_reg_mr + ibv_dereg_mr run on Soft-RoCE."
	if (n["miss", sizes[1]] > 1) print "Each figure is the median of " n["miss", sizes[1]] " runs of reg_bench."
	print ""
	print "| size | miss (pin) µs | kernel hit µs | library hit µs | ibv_reg_mr+dereg µs | miss / lib hit | kernel / lib hit | verbs / lib hit |"
	print "|---|---|---|---|---|---|---|---|"
	for (i = 1; i <= ns; i++) {
		s = sizes[i]
		printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", human(s), us(mid["miss", s]),
		       us(mid["kernel_hit", s]), us(mid["lib_hit", s]), us(mid["ibv_reg_dereg", s]),
		       ratio(mid["miss", s], mid["lib_hit", s]), ratio(mid["kernel_hit", s], mid["lib_hit", s]),
		       ratio(mid["ibv_reg_dereg", s], mid["lib_hit", s])
	}
	print ""
	print "| size | munmap registered µs | munmap unregistered µs | ratio |"
	print "|---|---|---|---|"
	for (i = 1; i <= ns; i++) {
		s = sizes[i]
		printf "| %s | %s | %s | %.2f |\n", human(s), us(mid["munmap_registered", s]),
		       us(mid["munmap_plain", s]), mid["munmap_registered", s] / mid["munmap_plain", s]
	}
	print ""
	print "| cached regions | library hit ns | kernel hit ns |"
	print "|---|---|---|"
	lmin = lmax = kmin = kmax = ""
	for (i = 1; i <= nc; i++) {
		c = counts[i]; l = mid["lib_hit_vs_regions", c]; k = mid["kernel_hit_vs_regions", c]
		printf "| %d | %.0f | %.0f |\n", c, l, k
		if (lmin == "" || l < lmin) lmin = l; if (lmax == "" || l > lmax) lmax = l
		if (kmin == "" || k < kmin) kmin = k; if (kmax == "" || k > kmax) kmax = k
	}
	m = 1048576
	print ""
	print "Targets:"
	t1 = mid["miss", m] / mid["lib_hit", m]
	printf "- library hit at 1 MiB %.0fx cheaper than a miss (target >= 100x): %s\n", t1, (t1 >= 100 ? "met" : "NOT met")
	printf "- library hit cheaper than a kernel hit at 1 MiB (%.0f vs %.0f ns): %s\n", mid["lib_hit", m], mid["kernel_hit", m], (mid["lib_hit", m] < mid["kernel_hit", m] ? "met" : "NOT met")
	printf "- library hit spread from %d to %d regions %.2fx (target <= 1.5x): %s\n", counts[1], counts[nc], lmax / lmin, (lmax / lmin <= 1.5 ? "met" : "NOT met")
	printf "- kernel hit spread over the same %.2fx\n", kmax / kmin
}
