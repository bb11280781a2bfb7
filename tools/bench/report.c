// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ntsync-bench: statistics of the runs, the table, and the JSON report.
 */
#include "bench.h"

/* ------------------------------------------------------------------ */
/* statistics                                                          */


int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double quantile(const double *sorted, unsigned int n, double q)
{
	double pos = q * (n - 1);
	unsigned int lo = (unsigned int)pos;
	double frac = pos - lo;

	if (lo + 1 >= n)
		return sorted[n - 1];
	return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

void summarize(struct result *r)
{
	double s[MAX_RUNS];

	memcpy(s, r->v, r->runs * sizeof(double));
	qsort(s, r->runs, sizeof(double), cmp_double);
	r->min = s[0];
	r->max = s[r->runs - 1];
	r->median = quantile(s, r->runs, 0.5);
	r->q1 = quantile(s, r->runs, 0.25);
	r->q3 = quantile(s, r->runs, 0.75);
}

/* "12,345,678" */
const char *group_digits(double v, char *buf, size_t len)
{
	char tmp[32];
	size_t n, o = 0;

	snprintf(tmp, sizeof(tmp), "%.0f", v);
	n = strlen(tmp);
	for (size_t i = 0; i < n && o + 2 < len; i++) {
		buf[o++] = tmp[i];
		if ((n - i - 1) % 3 == 0 && i + 1 < n && tmp[i] != '-')
			buf[o++] = ',';
	}
	buf[o] = '\0';
	return buf;
}

void print_header(FILE *out)
{
	fprintf(out, "\n%-17s %-37s %11s %11s  %s\n", "row", "one op",
		"median", "ops/s", "spread: min..max (range/median)");
}

void print_row(FILE *out, const struct row *row, const struct result *r)
{
	char buf[32];

	if (r->status == RES_SKIPPED) {
		fprintf(out, "%-17s %-37s %11s %11s  (%s)\n", row->id, row->what,
			"skipped", "-", r->skip_reason);
		return;
	}
	if (row->kind == ROW_MEM) {
		fprintf(out, "%-17s %-37s %9.0f B %11s  %.0f..%.0f B (%.1f%%), %" PRIu64 " objects x %u\n",
			row->id, row->what, r->median, "-", r->min, r->max,
			r->median ? 100 * (r->max - r->min) / r->median : 0.0,
			r->iters, r->runs);
	} else {
		fprintf(out, "%-17s %-37s %8.0f ns %11s  %.0f..%.0f (%.1f%%), %" PRIu64 " ops x %u\n",
			row->id, row->what, r->median,
			group_digits(1e9 / r->median, buf, sizeof(buf)), r->min, r->max,
			100 * (r->max - r->min) / r->median, r->iters, r->runs);
	}
	if (r->detail[0])
		fprintf(out, "%-17s   %s\n", "", r->detail);
}

/* ------------------------------------------------------------------ */
/* JSON out                                                            */

void write_json(FILE *f, const struct env *e, const struct result *res,
		const char *mode, unsigned int runs, double budget_ns)
{
	bool first = true;

	fprintf(f, "{\n  \"tool\": \"ntsync-bench\",\n  \"version\": ");
	tc_json_str(f, NTSYNC_BENCH_VERSION);
	fprintf(f, ",\n  \"format\": 1,\n  \"mode\": \"%s\",\n  \"runs\": %u,\n"
		"  \"budget_ns\": %.0f,\n", mode, runs, budget_ns);
	fprintf(f, "  \"time_note\": \"CLOCK_MONOTONIC ns; under QEMU -icount shift=0,sleep=off guest-instruction time\",\n");
	fprintf(f, "  \"date\": ");
	tc_json_str(f, e->date);
	fprintf(f, ",\n  \"env\": {\n    \"kernel\": ");
	tc_json_str(f, e->kernel);
	fprintf(f, ",\n    \"kernel_version\": ");
	tc_json_str(f, e->kversion);
	fprintf(f, ",\n    \"machine\": ");
	tc_json_str(f, e->machine);
	fprintf(f, ",\n    \"cpu\": ");
	tc_json_str(f, e->cpu);
	fprintf(f, ",\n    \"cpus\": %ld,\n    \"threads\": ", e->cpus);
	tc_json_str(f, e->threads);
	fprintf(f, ",\n    \"virt\": ");
	tc_json_str(f, e->virt);
	fprintf(f, ",\n    \"clocksource\": ");
	tc_json_str(f, e->clocksource);
	fprintf(f, ",\n    \"clocksource_end\": ");
	tc_json_str(f, e->clocksource_end);
	fprintf(f, ",\n    \"busy_percent_before\": ");
	tc_json_num(f, e->busy_pct);
	fprintf(f, "\n  },\n  \"driver\": {\n    \"device\": %s,\n",
		e->device ? "true" : "false");
	fprintf(f, "    \"module\": %s,\n    \"loadable\": %s,\n    \"out_of_tree\": %s,\n",
		e->module ? "true" : "false", e->loadable ? "true" : "false",
		e->out_of_tree ? "true" : "false");
	fprintf(f, "    \"taint\": ");
	tc_json_str(f, e->taint);
	fprintf(f, ",\n    \"version\": ");
	tc_json_str(f, e->version);
	fprintf(f, ",\n    \"srcversion\": ");
	tc_json_str(f, e->srcversion);
	fprintf(f, ",\n    \"kind\": ");
	tc_json_str(f, e->driver);
	fprintf(f, ",\n    \"label\": ");
	tc_json_str(f, e->label);
	fprintf(f, "\n  },\n  \"rows\": [");
	for (size_t i = 0; i < NROWS; i++) {
		const struct row *row = &rows[i];
		const struct result *r = &res[i];

		if (r->status == RES_NONE)
			continue;
		fprintf(f, "%s\n    {\"id\": ", first ? "" : ",");
		first = false;
		tc_json_str(f, row->id);
		fprintf(f, ", \"group\": ");
		tc_json_str(f, row->group);
		fprintf(f, ", \"what\": ");
		tc_json_str(f, row->what);
		fprintf(f, ", \"unit\": \"%s\", \"ntsync\": %s",
			row->kind == ROW_MEM ? "bytes/object" : "ns/op",
			row->ntsync ? "true" : "false");
		if (r->status == RES_SKIPPED) {
			fprintf(f, ", \"skipped\": true, \"reason\": ");
			tc_json_str(f, r->skip_reason);
			fputc('}', f);
			continue;
		}
		fprintf(f, ", \"skipped\": false, \"median\": ");
		tc_json_num(f, r->median);
		fprintf(f, ", \"min\": ");
		tc_json_num(f, r->min);
		fprintf(f, ", \"max\": ");
		tc_json_num(f, r->max);
		fprintf(f, ", \"q1\": ");
		tc_json_num(f, r->q1);
		fprintf(f, ", \"q3\": ");
		tc_json_num(f, r->q3);
		if (row->kind == ROW_TIME) {
			fprintf(f, ", \"ops_per_s\": ");
			tc_json_num(f, 1e9 / r->median);
			fprintf(f, ", \"iters\": %" PRIu64, r->iters);
		} else {
			fprintf(f, ", \"objects\": %" PRIu64 ", \"raw_median\": ",
				r->iters);
			tc_json_num(f, r->raw_median);
			fprintf(f, ", \"driver_bytes\": ");
			tc_json_num(f, r->driver_bytes);
			fprintf(f, ", \"detail\": ");
			tc_json_str(f, r->detail);
		}
		fprintf(f, ", \"seconds\": %.3f, \"runs\": %u, \"values\": [",
			r->seconds, r->runs);
		for (unsigned int k = 0; k < r->runs; k++) {
			if (k)
				fputs(", ", f);
			tc_json_num(f, r->v[k]);
		}
		fputs("]", f);
		if (row->kind == ROW_TIME && r->runs && r->blocked[0] >= 0) {
			fputs(", \"blocked\": [", f);
			for (unsigned int k = 0; k < r->runs; k++) {
				if (k)
					fputs(", ", f);
				tc_json_num(f, r->blocked[k]);
			}
			fputs("]", f);
		}
		fputs("}", f);
	}
	fprintf(f, "\n  ]\n}\n");
}

