// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ntsync-bench: --compare: two JSON reports side by side.
 */
#include "bench.h"
#include "json-read.h"

static const struct jv *find_row(const struct jv *root, const char *id)
{
	const struct jv *arr = jget(root, "rows");

	for (size_t i = 0; i < arr->n; i++)
		if (!strcmp(jgets(arr->items[i], "id"), id))
			return arr->items[i];
	return NULL;
}

/* a row's median if it was measured, else NaN */
static double row_median(const struct jv *root, const char *id)
{
	const struct jv *r = find_row(root, id);

	if (!r || jgetb(r, "skipped"))
		return NAN;
	return jgetn(r, "median");
}

/* ------------------------------------------------------------------ */
/* --compare                                                           */

static const char *file_label(const struct jv *root)
{
	const char *l = jgets(jget(root, "driver"), "label");

	return l[0] ? l : "?";
}

static void describe_file(const char *tag, const char *path,
			  const struct jv *root)
{
	const struct jv *env = jget(root, "env");
	const struct jv *drv = jget(root, "driver");

	printf("%s = %s: \"%s\" - %s, Linux %s, %.0f CPU(s), %s; driver %s%s%s%s; %s mode\n",
	       tag, path, file_label(root),
	       jgets(root, "date")[0] ? jgets(root, "date") : "date unknown",
	       jgets(env, "kernel"),
	       isfinite(jgetn(env, "cpus")) ? jgetn(env, "cpus") : 0.0,
	       jgets(env, "virt")[0] ? jgets(env, "virt") : "?",
	       jgets(drv, "kind"),
	       jgets(drv, "version")[0] ? " " : "", jgets(drv, "version"),
	       jgetb(drv, "out_of_tree") ? " (out-of-tree)" : "",
	       jgets(root, "mode"));
}

static void spread_str(const struct jv *r, char *buf, size_t len)
{
	double med = jgetn(r, "median"), lo = jgetn(r, "min"), hi = jgetn(r, "max");

	if (!isfinite(med) || med == 0)
		snprintf(buf, len, "?");
	else
		snprintf(buf, len, "%.1f%%", 100 * (hi - lo) / med);
}

static void cmp_cell(const struct jv *r, char *buf, size_t len)
{
	char sp[16];

	if (!r) {
		snprintf(buf, len, "%s", "absent");
		return;
	}
	if (jgetb(r, "skipped")) {
		snprintf(buf, len, "%s", "skipped");
		return;
	}
	spread_str(r, sp, sizeof(sp));
	snprintf(buf, len, "%.0f %s (%s)", jgetn(r, "median"),
		 !strcmp(jgets(r, "unit"), "ns/op") ? "ns" : "B", sp);
}

/* a row whose runs spread by more than 5% of the median */
static bool row_noisy(const struct jv *root, const char *id)
{
	const struct jv *r = find_row(root, id);
	double med, lo, hi;

	if (!r || jgetb(r, "skipped"))
		return false;
	med = jgetn(r, "median");
	lo = jgetn(r, "min");
	hi = jgetn(r, "max");
	return isfinite(med) && med > 0 && (hi - lo) / med > 0.05;
}

/* time(ref)/time(cand) for a row; NaN if either is missing */
static double ratio(const struct jv *ref, const struct jv *cand, const char *id)
{
	double a = row_median(ref, id), b = row_median(cand, id);

	if (!isfinite(a) || !isfinite(b) || b <= 0)
		return NAN;
	return a / b;
}

int do_compare(const char *pa, const char *pb)
{
	struct jv *A = load_json(pa), *B = load_json(pb);
	const struct jv *rows_a = jget(A, "rows"), *rows_b = jget(B, "rows");
	char ca[48], cb[48], buf[160];

	printf("ntsync-bench %s --compare\n", NTSYNC_BENCH_VERSION);
	describe_file("A", pa, A);
	describe_file("B", pb, B);
	printf("ratio = A/B: time (or bytes) of A divided by B's; >1 means B is faster (smaller).\n");
	printf("spread = (max - min) / median of the runs of a row; \"noisy\" marks a ratio where\n"
	       "either side spreads by more than 5%%: run again before trusting it.\n");
	printf("Times are CLOCK_MONOTONIC ns; under QEMU -icount shift=0,sleep=off guest-instruction time.\n");
	{
		/* older reports have no env.threads: the scheduler placed them */
		const char *ta = jgets(jget(A, "env"), "threads");
		const char *tb = jgets(jget(B, "env"), "threads");

		ta = ta[0] ? ta : THREADS_BY_SCHEDULER;
		tb = tb[0] ? tb : THREADS_BY_SCHEDULER;
		if (strcmp(ta, tb))
			printf("threads differ: A %s; B %s: the rows with several threads do not compare\n",
			       ta, tb);
	}
	putchar('\n');
	printf("%-17s %-37s %-22s %-22s %7s\n", "row", "one op",
	       "A: median (spread)", "B: median (spread)", "A/B");
	printf("%-17s %-37s %-22s %-22s %7s\n", "", "",
	       file_label(A), file_label(B), "");

	for (int pass = 0; pass < 2; pass++) {
		const struct jv *list = pass ? rows_b : rows_a;

		for (size_t i = 0; i < list->n; i++) {
			const struct jv *r = list->items[i];
			const char *id = jgets(r, "id");
			const struct jv *ra = find_row(A, id), *rb = find_row(B, id);
			double q = ratio(A, B, id);

			if (pass && ra)
				continue;	/* printed in the first pass */
			cmp_cell(ra, ca, sizeof(ca));
			cmp_cell(rb, cb, sizeof(cb));
			if (isfinite(q))
				snprintf(buf, sizeof(buf), "%7.3f%s", q,
					 row_noisy(A, id) || row_noisy(B, id) ?
					 "  noisy" : "");
			else
				snprintf(buf, sizeof(buf), "%7s", "-");
			printf("%-17s %-37.37s %-22s %-22s %s\n", id,
			       jgets(r, "what"), ca, cb, buf);
		}
	}

	jfree(A);
	jfree(B);
	return 0;
}

