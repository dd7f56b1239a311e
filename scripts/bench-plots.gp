# SPDX-License-Identifier: GPL-2.0-only
#
# bench-plots.gp - the benchmark suite's figures, from the plot-*.csv files
# bench-suite-report.awk writes (one row per size; per system three
# columns: median, min, max).  Called by bench-suite.sh as
#   gnuplot -e "dir='RESULTS'" scripts/bench-plots.gp
# Every system is one line with error bars from min to max, all on the
# same log-log axes.

set datafile separator ","
set datafile missing "NaN"
set terminal pngcairo size 1100,700 font ",10" noenhanced
# Twelve distinguishable colours; zcx (the first two systems) drawn thicker.
colours = "#d62728 #ff7f0e #1f77b4 #2ca02c #9467bd #17becf #8c564b #bcbd22 #e377c2 #7f7f7f #000000 #aec7e8"
do for [i = 1:12] { set linetype i lc rgb word(colours, i) pt i }
set logscale xy
set grid xtics ytics mxtics mytics lc rgb "#dddddd"
set key outside right top
set pointsize 0.8
set format x "%.0s%cB"
bytes_tics = "set xtics (\"8\" 8, \"64\" 64, \"512\" 512, \"4K\" 4096, \"16K\" 16384, \"64K\" 65536, \"256K\" 262144, \"1M\" 1048576, \"4M\" 4194304, \"16M\" 16777216, \"64M\" 67108864)"

# columns in @file: 1 + 3 per system
columns(file) = int(system(sprintf("head -n 1 '%s' | awk -F, '{ print NF }'", file)))

# plot(FILE, TITLE, YLABEL): every system of FILE, median with min-max bars
plot_all = "n = (columns(file) - 1) / 3; \
	plot for [i = 0:n - 1] file using 1:(column(2 + 3 * i)):(column(3 + 3 * i)):(column(4 + 3 * i)) \
		with yerrorlines lt (i + 1) lw (i < 2 ? 2.5 : 1.2) \
		title columnheader(2 + 3 * i)"

@bytes_tics
set xlabel "message size (bytes)"

file = dir . "/plot-latency.csv"
set output dir . "/latency.png"
set title "Ping-pong latency, one way, in the QEMU/TCG guest (inflated; compare ratios)"
set ylabel "µs"
@plot_all

file = dir . "/plot-latency-host.csv"
set output dir . "/latency-host.png"
set title "Ping-pong latency on the host; zcx projected from its structural counts"
@plot_all

set key outside right top
file = dir . "/plot-bandwidth.csv"
set output dir . "/bandwidth.png"
set title "Streaming bandwidth in the QEMU/TCG guest (inflated; compare ratios)"
set ylabel "MB/s"
@plot_all

file = dir . "/plot-bandwidth-host.csv"
set output dir . "/bandwidth-host.png"
set title "Streaming bandwidth on the host; zcx projected from its structural counts"
@plot_all

file = dir . "/plot-registration.csv"
set output dir . "/registration.png"
set title "Registration cost (register + deregister) in the QEMU/TCG guest"
set ylabel "µs"
set xlabel "region size (bytes)"
@plot_all

file = dir . "/plot-barrier.csv"
set output dir . "/barrier.png"
set title "Barrier latency vs processes (2 vCPUs in the guest; MPI also on the host)"
set ylabel "µs per barrier"
set xlabel "processes"
set xtics (2, 4, 8, 16)
set format x "%g"
set xrange [1.7:19]
set logscale x 2
@plot_all
