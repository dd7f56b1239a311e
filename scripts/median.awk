# SPDX-License-Identifier: GPL-2.0-only
#
# median.awk - what the bench reports share: a figure's repetitions, their
# median and extremes.  Load it before the report:
#	awk -f scripts/median.awk -f scripts/REPORT.awk ...
# sample(KEY, VALUE) adds a repetition (n[KEY] counts them, order[1..nkeys]
# lists the keys as first seen); once all are in, summarise(KEY) sets
# mid[KEY] (the median), lo[KEY] and hi[KEY].
function sample(k, x) {
	if (!(k in n))
		order[++nkeys] = k
	v[k, ++n[k]] = x + 0
}
# a few repetitions each: an insertion sort does
function summarise(k,    i, j, m, t, a) {
	m = n[k]
	for (i = 1; i <= m; i++) a[i] = v[k, i]
	for (i = 2; i <= m; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	lo[k] = a[1]; hi[k] = a[m]
	mid[k] = m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
function summarise_all(    i) {
	for (i = 1; i <= nkeys; i++) summarise(order[i])
}
