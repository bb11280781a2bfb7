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

/*
 * One target line: "[met    ] what: value".  `value` is a format for the
 * figures; a target whose rows are missing or skipped prints n/a instead.
 */
static void verdict(bool known, bool met, const char *what,
		    const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void verdict(bool known, bool met, const char *what,
		    const char *fmt, ...)
{
	va_list ap;

	printf("  [%s] %s: ", !known ? "n/a    " : met ? "met    " : "not met",
	       what);
	if (known) {
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
	} else {
		fputs("a row is missing or skipped", stdout);
	}
	putchar('\n');
}

static void ratio_target(const struct jv *ours, const char *label,
			 const char *num, const char *den, double limit)
{
	double a = row_median(ours, num), b = row_median(ours, den);
	bool known = isfinite(a) && isfinite(b) && b > 0;
	char what[160];

	snprintf(what, sizeof(what), "%s: %s within %.2fx of %s", label, num,
		 limit, den);
	verdict(known, known && a / b <= limit, what, "%.2fx (%.0f / %.0f)",
		known ? a / b : 0.0, a, b);
}

int do_compare(const char *pa, const char *pb)
{
	struct jv *A = load_json(pa), *B = load_json(pb);
	const struct jv *ours, *intree;
	const char *ours_tag, *intree_tag;
	const struct jv *rows_a = jget(A, "rows"), *rows_b = jget(B, "rows");
	char ca[48], cb[48], buf[160];
	const char *fast_rows[] = { "uncontended.sem", "waitany.1", "waitany.8",
				    "waitany.64", "pingpong.ntsync" };

	printf("ntsync-bench %s --compare\n", NTSYNC_BENCH_VERSION);
	describe_file("A", pa, A);
	describe_file("B", pb, B);
	printf("ratio = A/B: time (or bytes) of A divided by B's; >1 means B is faster (smaller).\n");
	printf("spread = (max - min) / median of the runs of a row; \"noisy\" marks a ratio where\n"
	       "either side spreads by more than 5%%: run again before trusting it.\n");
	printf("Times are CLOCK_MONOTONIC ns; under QEMU -icount shift=0,sleep=off guest-instruction time.\n\n");
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

	/* which file is ours? the out-of-tree one; otherwise B */
	if (jgetb(jget(A, "driver"), "out_of_tree") &&
	    !jgetb(jget(B, "driver"), "out_of_tree")) {
		ours = A;
		intree = B;
		ours_tag = "A";
		intree_tag = "B";
	} else {
		ours = B;
		intree = A;
		ours_tag = "B";
		intree_tag = "A";
	}

	printf("\nTargets (informational, nothing is asserted): ours = %s (\"%s\"), in-tree = %s (\"%s\")%s\n",
	       ours_tag, file_label(ours), intree_tag, file_label(intree),
	       jgetb(jget(ours, "driver"), "out_of_tree") ? "" :
	       " [neither file is marked out-of-tree: assuming B is ours]");

	/* ours vs in-tree >= 1.00 on every ntsync time row */
	{
		const struct jv *list = jget(ours, "rows");
		double worst = INFINITY;
		char worst_id[64] = "", bad[512] = "";
		size_t used = 0;
		int n = 0;

		for (size_t i = 0; i < list->n; i++) {
			const struct jv *r = list->items[i];
			const char *id = jgets(r, "id");
			double q;

			if (!jgetb(r, "ntsync") || strcmp(jgets(r, "unit"), "ns/op"))
				continue;
			q = ratio(intree, ours, id);
			if (!isfinite(q))
				continue;
			n++;
			if (q < worst) {
				worst = q;
				snprintf(worst_id, sizeof(worst_id), "%s", id);
			}
			if (q < 1.0 && used < sizeof(bad))
				used += (size_t)snprintf(bad + used, sizeof(bad) - used,
							 " %s %.3f%s", id, q,
							 row_noisy(intree, id) ||
							 row_noisy(ours, id) ?
							 " (noisy)" : "");
		}
		verdict(n > 0, n > 0 && worst >= 1.0,
			"ours vs in-tree >= 1.00 on every ntsync time row",
			"lowest %.3f (%s) of %d rows%s%s", n ? worst : 0.0,
			worst_id, n, bad[0] ? "; below 1.00:" : "", bad);
	}
	/* >= 1.10 on uncontended, wait-any width and ping-pong */
	for (size_t i = 0; i < sizeof(fast_rows) / sizeof(fast_rows[0]); i++) {
		double q = ratio(intree, ours, fast_rows[i]);

		char what[96];

		snprintf(what, sizeof(what), "ours vs in-tree >= 1.10 on %s",
			 fast_rows[i]);
		verdict(isfinite(q), isfinite(q) && q >= 1.10, what, "%.3f", q);
	}
	ratio_target(ours, "ours", "uncontended.sem", "null.getppid2", 3.0);
	ratio_target(intree, "(in-tree, for reference)", "uncontended.sem",
		     "null.getppid2", 3.0);
	ratio_target(ours, "ours", "waitany.64", "waitany.1", 6.0);
	ratio_target(intree, "(in-tree, for reference)", "waitany.64",
		     "waitany.1", 6.0);
	ratio_target(ours, "ours", "pingpong.ntsync", "pingpong.futex", 1.05);
	{
		/* what the ioctl path alone costs a round trip of 4 calls */
		double io = row_median(ours, "null.ioctl2");
		double nul = row_median(ours, "null.getppid2");
		double fx = row_median(ours, "pingpong.futex");

		if (isfinite(io) && isfinite(nul) && isfinite(fx) && fx > 0)
			printf("  [info   ] ioctl path vs null syscall: +%.0f ns per call, so 4 ioctls add %.0f ns (%.3fx) to a futex round trip before the driver does anything\n",
			       (io - nul) / 2, 2 * (io - nul), (fx + 2 * (io - nul)) / fx);
	}
	{
		double p = row_median(ours, "pingpong.ntsync");
		double ev = row_median(ours, "pingpong.eventfd");
		double pi = row_median(ours, "pingpong.pipe");
		bool known = isfinite(p) && isfinite(ev) && isfinite(pi);

		verdict(known, known && p < ev && p < pi,
			"ours: pingpong.ntsync faster than eventfd and pipe RPC",
			"%.0f vs %.0f and %.0f ns", p, ev, pi);
	}
	{
		const char *mem[] = { "mem.sem", "mem.mutex", "mem.event" };

		for (size_t i = 0; i < 3; i++) {
			double a = row_median(intree, mem[i]);
			double b = row_median(ours, mem[i]);
			bool known = isfinite(a) && isfinite(b);

			char what[96];

			snprintf(what, sizeof(what),
				 "ours: %s no larger than in-tree", mem[i]);
			verdict(known, known && b <= a, what,
				"%.0f vs %.0f bytes/object", b, a);
		}
	}
	jfree(A);
	jfree(B);
	return 0;
}

