# SPDX-License-Identifier: GPL-2.0-only
#
# awk -f median.awk -f bench-suite-report.awk -v dir=OUTDIR xfer-raw.csv
#     host-raw.csv reg-raw.csv
#
# The benchmark suite's summary (bench-suite.sh): prints the Markdown
# tables (zcx and every peer side by side, zcx's ratio to each, the same
# peers on the host, zcx's host projection) and writes OUTDIR/suite.csv
# ("where,system,test,param,median,min,max,runs"; where is guest, host or
# projection) and OUTDIR/plot-{latency,bandwidth,barrier,registration}.csv
# (one row per size, three columns median,min,max per system) for the
# plots.  Inputs: rows "system,test,param,rep,value" from the guest and
# from the host (systems prefixed "host-"), reg_bench rows
# "kind,param,ns_per_op,run".
#
# zcx's host projection: zcx cannot run on the host (no module loading),
# so its figures there are modelled from its structural counts in the
# guest (system calls per message, copies per byte, no pin per message:
# the registration cache hits) and unit costs measured on the host by
# peer_bench -T units:
#   latency   = handoff + syscalls/msg * syscall + copies * size * copy(size)
#   bandwidth = size / (syscalls/msg * syscall + copies * size * copy(size)
#               + handoff / 16)               (16 messages per window)
#   reg. miss = syscall + pages * pin_bulk;  kernel hit >= syscall
# copy(size) is process_vm_readv's time per byte (its pins included), so
# the copy term leans high.  The same model applied to process_vm_readv's
# ping-pong checks it against that peer's host measurement.
BEGIN {
	FS = ","
	nsys = split("zcx-enter zcx-poll ucx-posix ucx-sysv ucx-posix+cma " \
		     "ucx-posix-stream ucx-sysv-stream ucx-posix+cma-stream mpi cma memcpy", sys, " ")
	for (i = 1; i <= nsys; i++) label[sys[i]] = sys[i]
	label["ucx-posix+cma"] = "UCX posix,cma tag"
	label["ucx-posix"] = "UCX posix tag"; label["ucx-sysv"] = "UCX sysv tag"
	label["ucx-posix-stream"] = "UCX posix stream"; label["ucx-sysv-stream"] = "UCX sysv stream"
	label["ucx-posix+cma-stream"] = "UCX posix,cma stream"
	label["mpi"] = "Open MPI"; label["cma"] = "process_vm_readv"; label["memcpy"] = "memcpy (1 thread)"
	nlat = split("8 64 512 4096 8192 65536 262144 1048576 4194304", lat, " ")
	nbw = split("4096 16384 65536 262144 1048576 4194304 16777216", bw, " ")
	nbar = split("2 4 8 16", bar, " ")
	nreg = split("4096 16384 65536 262144 1048576 4194304 16777216 67108864", regs, " ")
	nrk = split("zcx-miss zcx-kernel_hit zcx-lib_hit ibv_reg_mr", rk, " ")
	rlabel["zcx-miss"] = "zcx miss (pin)"; rlabel["zcx-kernel_hit"] = "zcx kernel hit (1 ioctl)"
	rlabel["zcx-lib_hit"] = "zcx library hit (no syscall)"; rlabel["ibv_reg_mr"] = "ibv_reg_mr + dereg (Soft-RoCE)"
	# the sizes in the Markdown tables (all sizes are in the CSV and plots)
	split("8 8192 1048576", tlat, " "); split("65536 1048576 16777216", tbw, " ")
	split("4096 1048576 67108864", treg, " ")
}
FNR == 1 { next }
# reg_bench: kind,param,ns_per_op,run
NF == 4 {
	if ($1 == "miss" || $1 == "kernel_hit" || $1 == "lib_hit") sample("zcx-" $1 SUBSEP "reg" SUBSEP $2, $3)
	else if ($1 == "ibv_reg_dereg") sample("ibv_reg_mr" SUBSEP "reg" SUBSEP $2, $3)
	next
}
$4 == 0 { st[$1, $2, $3] = $5 + 0; next }
# a time or a bandwidth of 0 is a measurement that went wrong
$1 !~ /unit$/ && $5 + 0 <= 0 { next }
{ sample($1 SUBSEP $2 SUBSEP $3, $5) }

function has(s, t, p) { return (s SUBSEP t SUBSEP p) in mid }
function med(s, t, p) { return has(s, t, p) ? mid[s, t, p] : "" }
function human(b) { return b >= 1048576 ? b / 1048576 " MiB" : b >= 1024 ? b / 1024 " KiB" : b " B" }
function num(x) { return x >= 100 ? sprintf("%.0f", x) : x >= 10 ? sprintf("%.1f", x) : sprintf("%.2f", x) }
# "median [min–max]" scaled by @scale
function cell(s, t, p, scale,    k) {
	k = s SUBSEP t SUBSEP p
	if (!(k in mid)) return "n/a"
	if (n[k] == 1) return num(mid[k] / scale)
	return num(mid[k] / scale) " [" num(lo[k] / scale) "–" num(hi[k] / scale) "]"
}
function ratio(a, b) { return (a == "" || b == "" || b == 0) ? "n/a" : a / b >= 0.1 ? sprintf("%.2f", a / b) : sprintf("%.2g", a / b) }
function structural(s, t, p,    x) {
	if (!((s, t, p) in st)) return "n/a"
	x = st[s, t, p]
	if (s ~ /^(ucx|mpi)/ && x < 0.05) return "≈0"
	return sprintf("%.3g", x)
}
function unit(name, p) { return med("host-unit", name, p) }
function pages(b) { return int((b + 4095) / 4096) }
function project_lat(s, p,    c, sc) {
	c = unit("copy", p); sc = st[s, "syscalls", p]
	if (c == "" || unit("syscall", 0) == "" || !((s, "syscalls", p) in st)) return ""
	return unit("handoff", 0) + sc * unit("syscall", 0) + st[s, "copies", p] * p * c
}
function project_bw(s, p,    c, sc, t) {
	c = unit("copy", p)
	if (c == "" || unit("syscall", 0) == "" || !((s, "bw_syscalls", p) in st)) return ""
	t = st[s, "bw_syscalls", p] * unit("syscall", 0) + p * c + unit("handoff", 0) / 16
	return t > 0 ? p / t * 1000 : ""
}
function csvrow(where, s, t, p, x) {
	if (x != "") printf "%s,%s,%s,%s,%.6g,%.6g,%.6g,0\n", where, s, t, p, x, x, x > suite
}
# one row per size, median,min,max per system (NaN where missing); a
# system "projection/S" is zcx mode S's host projection
function plotfile(name, t, sizes, ns, list, nl, scale,    f, i, j, k, line) {
	f = dir "/plot-" name ".csv"
	line = "param"
	for (i = 1; i <= nl; i++) {
		k = plabel[list[i]]
		gsub(/,/, "+", k)	# a column name with no comma
		line = line "," k ",min,max"
	}
	print line > f
	for (j = 1; j <= ns; j++) {
		line = sizes[j]
		for (i = 1; i <= nl; i++) {
			if (list[i] ~ /^projection\//)
				k = "projection" SUBSEP substr(list[i], 12) "/" t SUBSEP sizes[j]
			else
				k = list[i] SUBSEP t SUBSEP sizes[j]
			if (k in mid)
				line = line sprintf(",%.6g,%.6g,%.6g", mid[k] / scale, lo[k] / scale, hi[k] / scale)
			else
				line = line ",NaN,NaN,NaN"
		}
		print line > f
	}
	close(f)
}
function setmid(s, t, p, x) {
	if (x == "") return
	k = s SUBSEP t SUBSEP p
	mid[k] = lo[k] = hi[k] = x; n[k] = 1
}

END {
	summarise_all()

	# projections, kept beside the measurements as system "projection"
	for (m = 1; m <= 2; m++) {
		s = sys[m]
		for (j = 1; j <= nlat; j++) setmid("projection", s "/lat", lat[j], project_lat(s, lat[j]))
		for (j = 1; j <= nbw; j++) setmid("projection", s "/bw", bw[j], project_bw(s, bw[j]))
	}
	if (unit("syscall", 0) != "") {
		for (j = 1; j <= nreg; j++) {
			setmid("projection", "zcx-miss/reg", regs[j], unit("syscall", 0) + pages(regs[j]) * unit("pin_bulk", 0))
			setmid("projection", "zcx-kernel_hit/reg", regs[j], unit("syscall", 0))
		}
	}

	suite = dir "/suite.csv"
	print "where,system,test,param,median,min,max,runs" > suite
	for (i = 1; i <= nkeys; i++) {
		split(order[i], f, SUBSEP)
		where = "guest"; s = f[1]
		if (s ~ /^host-/) { where = "host"; sub(/^host-/, "", s) }
		printf "%s,%s,%s,%s,%.6g,%.6g,%.6g,%d\n", where, s, f[2], f[3], mid[order[i]], lo[order[i]], hi[order[i]], n[order[i]] > suite
	}
	for (k in st) {
		split(k, f, SUBSEP)
		where = "guest"; s = f[1]
		if (s ~ /^host-/) { where = "host"; sub(/^host-/, "", s) }
		printf "%s,%s,%s,%s,%.6g,%.6g,%.6g,0\n", where, s, f[2], f[3], st[k], st[k], st[k] > suite
	}
	for (k in mid) {
		split(k, f, SUBSEP)
		if (f[1] != "projection") continue
		split(f[2], g, "/")
		printf "projection,%s,%s,%s,%.6g,%.6g,%.6g,0\n", g[1], g[2], f[3], mid[k], mid[k], mid[k] > suite
	}
	close(suite)

	# plot data: the guest's systems; the host's, with zcx's projection
	nl = 0
	for (i = 1; i <= nsys; i++) { gl[++nl] = sys[i]; plabel[sys[i]] = label[sys[i]] }
	nh = 0
	for (i = 1; i <= nsys; i++) {
		s = sys[i]
		if (s ~ /^zcx/) { hl[++nh] = "projection/" s; plabel["projection/" s] = s " (projection)" }
		else { hl[++nh] = "host-" s; plabel["host-" s] = label[s] }
	}
	plotfile("latency", "lat", lat, nlat, gl, nl, 1000)
	plotfile("bandwidth", "bw", bw, nbw, gl, nl, 1)
	plotfile("latency-host", "lat", lat, nlat, hl, nh, 1000)
	plotfile("bandwidth-host", "bw", bw, nbw, hl, nh, 1)
	split("zcx-enter zcx-poll mpi host-mpi", bl, " ")
	plabel["mpi"] = "MPI_Barrier"; plabel["host-mpi"] = "MPI_Barrier (host)"
	plotfile("barrier", "bar", bar, nbar, bl, 4, 1000)
	for (i = 1; i <= nrk; i++) plabel[rk[i]] = rlabel[rk[i]]
	plotfile("registration", "reg", regs, nreg, rk, nrk, 1000)

	# --- Markdown --------------------------------------------------------
	print "One QEMU/TCG guest (2 vCPUs, multi-threaded TCG, `-cpu max,-erms,-fsrm`), and"
	print "the same peers on the host in the same run. **Absolute times inside the"
	print "emulated guest are inflated; only ratios between figures of the same guest"
	print "run carry over.** Each figure is the median of the repetitions [min–max]."
	print "Ratios are zcx (doorbell mode, `zcx-enter`) over the system of the row:"
	print "below 1 zcx is faster for latency, above 1 it is faster for bandwidth."
	print "Two-process tests pin the processes to different CPUs. Each zcx latency"
	print "and bandwidth repetition runs on new processes and buffers: its copies go"
	print "between pinned pages through the guest kernel's direct map, and under TCG"
	print "they slow down several times for pages that share an entry of QEMU's"
	print "direct-mapped TLB, so zcx's figures vary with where its pages land (see"
	print "\"Why zcx's figures vary between runs in the guest\" in the README)."
	print ""
	print "#### Ping-pong latency, one way (µs)"
	print ""
	print "| system | " human(tlat[1]) " | enter ÷ | " human(tlat[2]) " | enter ÷ | " human(tlat[3]) " | enter ÷ | syscalls/msg (8 KiB) | copies/byte |"
	print "|---|---|---|---|---|---|---|---|---|"
	for (i = 1; i <= nsys; i++) {
		s = sys[i]; line = "| " label[s] " |"
		for (j = 1; j <= 3; j++)
			line = line " " cell(s, "lat", tlat[j], 1000) " | " ratio(med("zcx-enter", "lat", tlat[j]), med(s, "lat", tlat[j])) " |"
		print line " " (s == "cma" ? 1 : structural(s, "syscalls", 8192)) " | " structural(s, "copies", 8192) " |"
	}
	print ""
	print "#### Streaming bandwidth (MB/s)"
	print ""
	print "| system | " human(tbw[1]) " | enter ÷ | " human(tbw[2]) " | enter ÷ | " human(tbw[3]) " | enter ÷ | syscalls/msg (1 MiB) |"
	print "|---|---|---|---|---|---|---|---|"
	for (i = 1; i <= nsys; i++) {
		s = sys[i]; line = "| " label[s] " |"
		for (j = 1; j <= 3; j++)
			line = line " " cell(s, "bw", tbw[j], 1) " | " ratio(med("zcx-enter", "bw", tbw[j]), med(s, "bw", tbw[j])) " |"
		print line " " (s == "cma" ? 1 : s == "memcpy" ? 0 : structural(s, "bw_syscalls", 1048576)) " |"
	}
	print ""
	print "#### Barrier (µs per barrier, rank 0's mean; more processes than vCPUs take turns)"
	print ""
	print "| processes | zcx-enter | zcx-poll | MPI_Barrier | enter ÷ MPI | poll ÷ MPI | MPI_Barrier on the host | syscalls per barrier and process, enter / poll |"
	print "|---|---|---|---|---|---|---|---|"
	for (j = 1; j <= nbar; j++) {
		p = bar[j]
		print "| " p " | " cell("zcx-enter", "bar", p, 1000) " | " cell("zcx-poll", "bar", p, 1000) " | " \
		      cell("mpi", "bar", p, 1000) " | " ratio(med("zcx-enter", "bar", p), med("mpi", "bar", p)) " | " \
		      ratio(med("zcx-poll", "bar", p), med("mpi", "bar", p)) " | " cell("host-mpi", "bar", p, 1000) " | " \
		      structural("zcx-enter", "bar_syscalls", p) " / " structural("zcx-poll", "bar_syscalls", p) " |"
	}
	print ""
	print "#### Registration cost (µs per register + deregister)"
	print ""
	print "| system | " human(treg[1]) " | ÷ lib hit | " human(treg[2]) " | ÷ lib hit | " human(treg[3]) " | ÷ lib hit |"
	print "|---|---|---|---|---|---|---|"
	for (i = 1; i <= nrk; i++) {
		s = rk[i]; line = "| " rlabel[s] " |"
		for (j = 1; j <= 3; j++)
			line = line " " cell(s, "reg", treg[j], 1000) " | " ratio(med(s, "reg", treg[j]), med("zcx-lib_hit", "reg", treg[j])) " |"
		print line
	}
	print ""
	print "#### On the host, outside the VM: how far emulation distorts each peer"
	print ""
	print "The same programs on the host in the same run. zcx cannot be loaded there; its"
	print "rows are a **projection** from its structural counts in the guest and unit"
	print "costs measured on the host (see below), not measurements."
	print ""
	print "| system | lat " human(tlat[1]) " µs | guest ÷ host | lat " human(tlat[2]) " µs | guest ÷ host | lat " human(tlat[3]) " µs | guest ÷ host | bw " human(tbw[2]) " MB/s | host ÷ guest |"
	print "|---|---|---|---|---|---|---|---|---|"
	for (i = 1; i <= nsys; i++) {
		s = sys[i]
		if (s ~ /^zcx/) { h = "projection"; t1 = s "/lat"; t2 = s "/bw"; name = s " (projection)" }
		else { h = "host-" s; t1 = "lat"; t2 = "bw"; name = label[s] }
		line = "| " name " |"
		for (j = 1; j <= 3; j++)
			line = line " " cell(h, t1, tlat[j], 1000) " | " ratio(med(s, "lat", tlat[j]), med(h, t1, tlat[j])) " |"
		print line " " cell(h, t2, tbw[2], 1) " | " ratio(med(h, t2, tbw[2]), med(s, "bw", tbw[2])) " |"
	}
	print ""
	if (unit("syscall", 0) != "") {
		printf "Host unit costs (medians): system call %.0f ns; pinning a lone page %.0f ns, a page of a 1 MiB range %.0f ns; ",
		       unit("syscall", 0), unit("pin", 0), unit("pin_bulk", 0)
		printf "cross-CPU handoff %.0f ns; kernel copy between processes %.3f ns/byte at 8 KiB, %.3f at 1 MiB. ",
		       unit("handoff", 0), unit("copy", 8192), unit("copy", 1048576)
		printf "Projection: latency = handoff + syscalls/msg × syscall + copies/byte × size × copy(size); "
		printf "bandwidth = size / (syscalls/msg × syscall + size × copy(size) + handoff / 16); no pin per message "
		printf "(the registration cache hits). The model has no term for sleeping and waking up, so figures "
		printf "that sleep in the guest (polling mode after its idle time, barriers) are not projected. "
		x = ""
		for (j = 1; j <= 3; j++) {
			p = tlat[j]; c = med("host-cma", "lat", p)
			if (c != "" && unit("copy", p) != "")
				x = x sprintf("%s%s %.2f", (x == "" ? "" : ", "), human(p), (unit("handoff", 0) + unit("syscall", 0) + p * unit("copy", p)) / c)
		}
		if (x != "") printf "Model check, the same model for process_vm_readv's ping-pong over its host measurement: %s.", x
		print ""
		print ""
		printf "Registration on the host, projected: a zcx miss = syscall + pages × bulk pin: %s µs at 4 KiB, %s at 1 MiB, %s at 64 MiB; a kernel hit ≥ one system call (%s µs).\n",
		       num(med("projection", "zcx-miss/reg", 4096) / 1000), num(med("projection", "zcx-miss/reg", 1048576) / 1000),
		       num(med("projection", "zcx-miss/reg", 67108864) / 1000), num(unit("syscall", 0) / 1000)
	} else {
		print "No host unit costs were measured: no projection."
	}
}
