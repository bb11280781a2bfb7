// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host unit test of ntsync-bench's JSON reader (json-read.c), the one that
 * --compare reads reports back with.
 *
 *   test-json-read [REPORT.json]
 *
 * Always: a document with every construct the writer uses (escapes, \u,
 * numbers, literals, nesting) reads back to the right values, and every
 * kind of malformed input is rejected with the message that names the file,
 * what is wrong and the byte offset.  With REPORT.json (a real report that
 * ntsync-bench --json just wrote; meson passes one): it reads back, with the
 * same number of rows as the text has "id" keys and sane figures per row.
 * Prints one line per failure; exit 0 when all pass, 1 otherwise.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-read.h"
#include "tools-common.h"

static int failures, checks;

static void __attribute__((format(printf, 2, 3)))
check(int ok, const char *fmt, ...)
{
	va_list ap;

	checks++;
	if (ok)
		return;
	failures++;
	printf("FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static void test_constructs(void)
{
	static const char doc[] =
		"{ \"tool\" : \"ntsync-bench\", \"format\": 1,\n"
		"  \"s\": \"a\\\"b\\\\c\\nd\\te\\u0041\\u00e9\",\n"
		"  \"neg\": -12.5e2, \"zero\": 0, \"t\": true, \"f\": false, \"n\": null,\n"
		"  \"empty_o\": {}, \"empty_a\": [],\n"
		"  \"rows\": [ {\"id\": \"x\", \"median\": 3.250, \"values\": [1, 2.5, 3]},\n"
		"            {\"id\": \"y\", \"skipped\": true, \"median\": null} ] }";
	char err[256] = "";
	struct jv *root = bench_json_parse(doc, "doc", err, sizeof(err));
	const struct jv *rows;

	check(root != NULL, "a valid document was rejected: %s", err);
	if (!root)
		return;
	check(!strcmp(jgets(root, "tool"), "ntsync-bench"), "tool: '%s'", jgets(root, "tool"));
	check(jgetn(root, "format") == 1, "format: %g", jgetn(root, "format"));
	/* \u00e9 is outside ASCII: the reader keeps a '?' for it */
	check(!strcmp(jgets(root, "s"), "a\"b\\c\nd\teA?"), "escapes: '%s'", jgets(root, "s"));
	check(jgetn(root, "neg") == -1250, "neg: %g", jgetn(root, "neg"));
	check(jgetn(root, "zero") == 0, "zero: %g", jgetn(root, "zero"));
	check(jgetb(root, "t") && !jgetb(root, "f"), "true/false");
	check(jget(root, "n") && jget(root, "n")->t == J_NULL, "null");
	check(jget(root, "empty_o")->t == J_OBJ && jget(root, "empty_o")->n == 0, "{}");
	check(jget(root, "empty_a")->t == J_ARR && jget(root, "empty_a")->n == 0, "[]");
	/* missing or mistyped members */
	check(jget(root, "absent") == NULL, "absent member found");
	check(!strcmp(jgets(root, "format"), ""), "a number read as a string");
	check(isnan(jgetn(root, "s")), "a string read as a number");
	check(!jgetb(root, "n"), "null read as true");
	rows = jget(root, "rows");
	check(rows->t == J_ARR && rows->n == 2, "rows: %zu", rows->n);
	if (rows->n == 2) {
		const struct jv *v = jget(rows->items[0], "values");

		check(!strcmp(jgets(rows->items[0], "id"), "x"), "row 0 id");
		check(jgetn(rows->items[0], "median") == 3.25, "row 0 median");
		check(v && v->n == 3 && v->items[1]->num == 2.5, "row 0 values");
		check(jgetb(rows->items[1], "skipped"), "row 1 skipped");
		check(isnan(jgetn(rows->items[1], "median")), "row 1 null median");
	}
	jfree(root);
}

static void test_malformed(void)
{
	static char deep[200];
	static const struct {
		const char *text, *what;
		int at;
	} bad[] = {
		{ "", "unexpected character", 0 },
		{ "   ", "unexpected character", 3 },
		{ "{", "expected a key", 1 },
		{ "{\"a\" 1}", "expected ':'", 6 },
		{ "{\"a\": 1", "expected '}'", 8 },
		{ "{\"a\": 1 \"b\": 2}", "expected '}'", 9 },
		{ "[1 2]", "expected ']'", 4 },
		{ "{\"tool\":\"ntsync-bench\",\"rows\":[1,}", "unexpected character", 33 },
		{ "\"abc", "unterminated string", 4 },
		{ "{\"a\": \"\\u12G4\"}", "bad \\u escape", 11 },
		{ "tru", "bad literal", 0 },
		{ "nul", "bad literal", 0 },
		{ "{\"tool\": \"ntsync-bench\", \"rows\": []} x", "trailing data", 37 },
		{ "[]", "no \"tool\": \"ntsync-bench\" with \"rows\"", 2 },
		{ "{\"tool\": \"other\", \"rows\": []}", "no \"tool\": \"ntsync-bench\" with \"rows\"", 29 },
		{ "{\"tool\": \"ntsync-bench\", \"rows\": {}}", "no \"tool\": \"ntsync-bench\" with \"rows\"", 36 },
		{ "{\"tool\": \"ntsync-bench\"}", "no \"tool\": \"ntsync-bench\" with \"rows\"", 24 },
		{ deep, "nested too deep", 33 },
	};

	memset(deep, '[', 40);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char err[256] = "", want[256];
		struct jv *v = bench_json_parse(bad[i].text, "bad.json", err, sizeof(err));

		snprintf(want, sizeof(want),
			 "bad.json: not an ntsync-bench JSON file (%s at byte %d); write one with 'ntsync-bench --json=FILE'",
			 bad[i].what, bad[i].at);
		check(v == NULL, "accepted malformed input '%s'", bad[i].text);
		check(!strcmp(err, want), "input '%s':\n  got  %s\n  want %s", bad[i].text, err, want);
	}
}

static void test_report(const char *path)
{
	FILE *f = fopen(path, "re");
	static char text[1 << 20];
	size_t n, ids = 0, measured = 0;
	char err[512] = "";
	struct jv *root;
	const struct jv *rows;

	if (!f) {
		check(0, "cannot open the report %s", path);
		return;
	}
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	check(n > 0 && n < sizeof(text) - 1, "report %s: %zu bytes", path, n);
	for (const char *p = text; (p = strstr(p, "\"id\":")); p++)
		ids++;
	root = bench_json_parse(text, path, err, sizeof(err));
	check(root != NULL, "the real report was rejected: %s", err);
	if (!root)
		return;
	check(!strcmp(jgets(root, "tool"), "ntsync-bench"), "report tool");
	check(jgetn(root, "format") == 1, "report format %g", jgetn(root, "format"));
	check(jget(root, "env") && jget(root, "env")->t == J_OBJ, "report env");
	check(jgetn(jget(root, "env"), "cpus") >= 1, "report env.cpus");
	check(jget(root, "driver") && jgets(jget(root, "driver"), "kind")[0], "report driver.kind");
	rows = jget(root, "rows");
	check(rows->n == ids && ids > 0, "report rows: %zu read, %zu \"id\" keys in the text", rows->n, ids);
	for (size_t i = 0; i < rows->n; i++) {
		const struct jv *r = rows->items[i];
		const char *id = jgets(r, "id");
		double med = jgetn(r, "median"), lo = jgetn(r, "min"), hi = jgetn(r, "max");

		check(id[0] != '\0', "row %zu has no id", i);
		if (jgetb(r, "skipped"))
			continue;
		measured++;
		check(isfinite(med) && lo <= med && med <= hi,
		      "row %s: min %g median %g max %g", id, lo, med, hi);
		check(jget(r, "values") && jget(r, "values")->n == (size_t)jgetn(r, "runs"),
		      "row %s: values vs runs", id);
	}
	check(measured > 0, "the report has no measured row");
	jfree(root);
}

int main(int argc, char **argv)
{
	tc_progname = "test-json-read";
	if (argc > 2) {
		fprintf(stderr, "usage: test-json-read [REPORT.json]\n");
		return 2;
	}
	test_constructs();
	test_malformed();
	if (argc == 2)
		test_report(argv[1]);
	printf("%d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
