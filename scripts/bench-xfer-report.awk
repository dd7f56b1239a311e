# SPDX-License-Identifier: GPL-2.0-only
#
# awk -f median.awk -f bench-xfer-report.awk [-v csv=OUT.csv] raw.csv -
# Markdown report of the transport benchmark (rows
# "system,test,param,rep,value" from xfer_bench, peer_bench, mpi_bench and
# ucx_perftest), with the issue's targets checked:
#   - 8 KiB latency no worse than UCX shared memory (the best of posix,
#     sysv, posix+cma);
#   - 1 MiB bandwidth at least 0.9x process_vm_readv's and no worse than
#     UCX posix,cma;
#   - one copy per byte on the zero-copy path;
#   - zero system calls per message in polling mode;
#   - barrier faster than MPI_Barrier.
# Timed figures are summarised as the median of the repetitions, with the
# spread (max - min) / 2 relative to it; OUT.csv gets
# "system,test,param,median,min,max,runs".
BEGIN {
	FS = ","
	nsys = split("zcx-enter zcx-poll ucx-posix ucx-sysv ucx-posix+cma mpi cma memcpy", sys, " ")
	for (i = 1; i <= nsys; i++)
		label[sys[i]] = sys[i]
	label["ucx-posix+cma"] = "ucx-posix,cma"
	label["cma"] = "process_vm_readv"
	nlat = split("8 64 512 4096 8192 65536 262144 1048576 4194304", lat, " ")
	nbw = split("4096 16384 65536 262144 1048576 4194304 16777216", bw, " ")
	nbar = split("2 4 8 16", bar, " ")
	zmodes[1] = "zcx-enter"; zmodes[2] = "zcx-poll"
}
NR == 1 && $1 == "system" { next }
$1 == "zcx" && $2 == "threshold" { threshold = $3; next }
$4 == 0 { st[$1, $2, $3] = $5; next }
{ sample($1 SUBSEP $2 SUBSEP $3, $5) }

function med(s, t, p,    k) { k = s SUBSEP t SUBSEP p; return (k in n) ? mid[k] : "" }
function human(b) { return b >= 1048576 ? b / 1048576 " MiB" : b >= 1024 ? b / 1024 " KiB" : b " B" }
# value with its spread, e.g. "12.3 ±4%"
function cell(s, t, p, scale, fmt,    k) {
	k = s SUBSEP t SUBSEP p
	if (!(k in n)) return "n/a"
	return sprintf(fmt, mid[k] / scale) (n[k] > 1 && mid[k] ? sprintf(" ±%.0f%%", (hi[k] - lo[k]) / 2 / mid[k] * 100) : "")
}
function ratio(a, b) { return (a == "" || b == "" || b == 0) ? "n/a" : sprintf("%.2f", a / b) }
function verdict(ok) { return ok == "" ? "not measured" : ok ? "met" : "NOT met" }
# strace differences of UCX and MPI: noise around 0 shows as "≈0"
function structural(s, t, p,    x) {
	if (!((s, t, p) in st)) return "n/a"
	x = st[s, t, p]
	if (s ~ /^(ucx|mpi)/ && x < 0.05) return "≈0"
	return sprintf("%.3g", x)
}
# the best (lowest) UCX latency at @p
function ucx_best_lat(p,    b, x, i, u) {
	split("ucx-posix ucx-sysv ucx-posix+cma", u, " ")
	b = ""
	for (i = 1; i <= 3; i++) { x = med(u[i], "lat", p); if (x != "" && (b == "" || x < b)) b = x }
	return b
}

END {
	summarise_all()
	if (csv != "") {
		print "system,test,param,median,min,max,runs" > csv
		for (i = 1; i <= nkeys; i++) {
			split(order[i], f, SUBSEP)
			printf "%s,%s,%s,%.6g,%.6g,%.6g,%d\n", f[1], f[2], f[3], mid[order[i]], lo[order[i]], hi[order[i]], n[order[i]] > csv
		}
		for (k in st) {
			split(k, f, SUBSEP)
			printf "%s,%s,%s,%s,%s,%s,0\n", f[1], f[2], f[3], st[k], st[k], st[k] > csv
		}
	}

	print "## Transport: zcx against UCX, Open MPI, process_vm_readv and memcpy"
	print ""
	print "One QEMU/TCG guest (2 vCPUs, multi-threaded TCG, `-cpu max,-erms,-fsrm`);"
	print "absolute times are inflated, ratios within the run carry over. Each cell"
	print "is the median of the repetitions, ± half their spread. Two-process tests"
	print "pin the processes to different vCPUs. zcx-enter rings the doorbell with an"
	print "ioctl; zcx-poll uses a ZCX_EP_POLL endpoint (kernel thread). UCX is"
	print "`ucx_perftest` tag_lat/tag_bw with `UCX_TLS=<tls>,self`; MPI is Open MPI"
	print "ob1 + vader (its CMA single copy for large messages); process_vm_readv"
	print "latency is a ping-pong announced through a shared page, its bandwidth a"
	print "read loop (the kernel's single copy, no synchronisation); memcpy is one"
	print "thread copying the same size. Each zcx latency and bandwidth repetition"
	print "runs on new processes and buffers (under TCG, zcx's copies slow down for"
	print "pages that share an entry of QEMU's TLB: see \"Why zcx's figures vary"
	print "between runs in the guest\" in the README)."
	if (threshold != "")
		print "zcx moves messages of " threshold " bytes and more between pinned pages (zero-copy path)."
	print ""

	print "### Ping-pong latency, one way (µs)"
	print ""
	hdr = "| size |"; sep = "|---|"
	for (i = 1; i <= nsys; i++) { hdr = hdr " " label[sys[i]] " |"; sep = sep "---|" }
	print hdr " enter / best UCX | poll / best UCX | enter / CMA |"
	print sep "---|---|---|"
	for (j = 1; j <= nlat; j++) {
		p = lat[j]; line = "| " human(p) " |"
		for (i = 1; i <= nsys; i++) line = line " " cell(sys[i], "lat", p, 1000, "%.2f") " |"
		u = ucx_best_lat(p)
		print line " " ratio(med("zcx-enter", "lat", p), u) " | " ratio(med("zcx-poll", "lat", p), u) " | " \
		      ratio(med("zcx-enter", "lat", p), med("cma", "lat", p)) " |"
	}
	print ""

	print "### Streaming bandwidth (MB/s, 10^6 bytes/s)"
	print ""
	hdr = "| size |"; sep = "|---|"
	for (i = 1; i <= nsys; i++) { hdr = hdr " " label[sys[i]] " |"; sep = sep "---|" }
	print hdr " enter / CMA | poll / CMA | enter / UCX posix,cma | best zcx / memcpy |"
	print sep "---|---|---|---|"
	for (j = 1; j <= nbw; j++) {
		p = bw[j]; line = "| " human(p) " |"
		for (i = 1; i <= nsys; i++) line = line " " cell(sys[i], "bw", p, 1, "%.0f") " |"
		e = med("zcx-enter", "bw", p); q = med("zcx-poll", "bw", p)
		best = (e == "" || (q != "" && q > e)) ? q : e
		print line " " ratio(e, med("cma", "bw", p)) " | " ratio(q, med("cma", "bw", p)) " | " \
		      ratio(e, med("ucx-posix+cma", "bw", p)) " | " ratio(best, med("memcpy", "bw", p)) " |"
	}
	print ""

	print "### Barrier latency (µs per barrier, rank 0's mean)"
	print ""
	print "More processes than the 2 vCPUs: the processes take turns on them."
	print ""
	print "| processes | zcx-enter | zcx-poll | MPI_Barrier | enter / MPI | poll / MPI | syscalls per barrier and process, enter / poll |"
	print "|---|---|---|---|---|---|---|"
	for (j = 1; j <= nbar; j++) {
		p = bar[j]
		print "| " p " | " cell("zcx-enter", "bar", p, 1000, "%.1f") " | " cell("zcx-poll", "bar", p, 1000, "%.1f") \
		      " | " cell("mpi", "bar", p, 1000, "%.1f") " | " ratio(med("zcx-enter", "bar", p), med("mpi", "bar", p)) \
		      " | " ratio(med("zcx-poll", "bar", p), med("mpi", "bar", p)) " | " \
		      structural("zcx-enter", "bar_syscalls", p) " / " structural("zcx-poll", "bar_syscalls", p) " |"
	}
	print ""

	print "### Structural figures, per message"
	print ""
	print "System calls per message: zcx from `zcx_ep_syscalls()` of both sides over the"
	print "timed runs; UCX and MPI from `strace -f -c` of both processes (a 1000-round-trip"
	print "difference, start-up excluded); process_vm_readv is 1 per message by"
	print "construction. Copies: each payload byte is copied this often (zcx from its"
	print "design: at and above the threshold pinned pages to pinned pages; below it the"
	print "inline path copies once when the receive is already posted, as in this"
	print "ping-pong, twice when it is not)."
	print ""
	print "| system | syscalls/msg 8 KiB ping-pong | syscalls/msg 1 MiB stream | copies/byte 8 B | copies/byte 8 KiB | copies/byte 1 MiB |"
	print "|---|---|---|---|---|---|"
	for (i = 1; i <= nsys; i++) {
		s = sys[i]
		if (s == "memcpy") continue
		bws = structural(s, "bw_syscalls", 1048576)
		if (s == "cma") bws = 1
		print "| " label[s] " | " structural(s, "syscalls", 8192) " | " bws " | " structural(s, "copies", 8) " | " \
		      structural(s, "copies", 8192) " | " structural(s, "copies", 1048576) " |"
	}
	print ""

	print "### Targets"
	print ""
	p = 8192; u = ucx_best_lat(p)
	for (m = 1; m <= 2; m++) {
		z = med(zmodes[m], "lat", p)
		printf "- %s 8 KiB latency / best UCX shared memory = %s (target <= 1): %s\n", zmodes[m], ratio(z, u),
		       verdict(z == "" || u == "" ? "" : z <= u)
	}
	p = 1048576; c = med("cma", "bw", p); x = med("ucx-posix+cma", "bw", p)
	for (m = 1; m <= 2; m++) {
		z = med(zmodes[m], "bw", p)
		printf "- %s 1 MiB bandwidth / process_vm_readv = %s (target >= 0.9): %s\n", zmodes[m], ratio(z, c),
		       verdict(z == "" || c == "" ? "" : z >= 0.9 * c)
		printf "- %s 1 MiB bandwidth / UCX posix,cma = %s (target >= 1): %s\n", zmodes[m], ratio(z, x),
		       verdict(z == "" || x == "" ? "" : z >= x)
	}
	ok = ""; worst = 0
	if (threshold != "")
		for (m = 1; m <= 2; m++)
			for (j = 1; j <= nlat; j++)
				if (lat[j] + 0 >= threshold + 0 && (zmodes[m], "copies", lat[j]) in st) {
					if (ok == "") ok = 1
					if (st[zmodes[m], "copies", lat[j]] != 1) { ok = 0; worst = st[zmodes[m], "copies", lat[j]] }
				}
	printf "- one copy per byte on the zero-copy path (from the design): %s\n", verdict(ok)
	ok = ""; worst = 0
	for (j = 1; j <= nlat; j++)
		if (("zcx-poll", "syscalls", lat[j]) in st) {
			x = st["zcx-poll", "syscalls", lat[j]]
			if (ok == "") ok = 1
			if (x > worst) worst = x
			if (x > 0) ok = 0
		}
	for (j = 1; j <= nbw; j++)
		if (("zcx-poll", "bw_syscalls", bw[j]) in st) {
			x = st["zcx-poll", "bw_syscalls", bw[j]]
			if (ok == "") ok = 1
			if (x > worst) worst = x
			if (x > 0) ok = 0
		}
	printf "- zero system calls per message in polling mode (worst size: %s): %s\n", (ok == "" ? "n/a" : sprintf("%.3g", worst)), verdict(ok)
	for (m = 1; m <= 2; m++) {
		ok = ""; line = ""
		for (j = 1; j <= nbar; j++) {
			z = med(zmodes[m], "bar", bar[j]); x = med("mpi", "bar", bar[j])
			if (z == "" || x == "") continue
			if (ok == "") ok = 1
			if (z >= x) ok = 0
			line = line sprintf(" %s: %s", bar[j], ratio(z, x))
		}
		printf "- %s barrier faster than MPI_Barrier (zcx / MPI by processes:%s): %s\n", zmodes[m],
		       (line == "" ? " n/a" : line), verdict(ok)
	}
}
