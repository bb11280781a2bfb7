/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ntsync-bench's JSON reader: just enough JSON for its own reports, which
 * --compare reads back.  Errors name the file and the byte offset.
 */
#ifndef NTSYNC_BENCH_JSON_READ_H
#define NTSYNC_BENCH_JSON_READ_H

#include <stdbool.h>
#include <stddef.h>

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jv {
	enum jtype t;
	double num;
	bool b;
	char *str;
	size_t n;
	char **keys;		/* J_OBJ */
	struct jv **items;	/* J_ARR and J_OBJ */
};

/*
 * Parse text (the contents of file, named in errors) as an ntsync-bench
 * report: a JSON object with "tool": "ntsync-bench" and a "rows" array.
 * NULL on error, with the message in err ("FILE: not an ntsync-bench JSON
 * file (WHAT at byte N); ...").
 */
struct jv *bench_json_parse(const char *text, const char *file,
			    char *err, size_t errlen);
/* Read and parse a report; on error print the message and exit 2. */
struct jv *load_json(const char *path);
void jfree(struct jv *v);

/* Members of an object; missing or of another type: NULL, "", NaN, false. */
const struct jv *jget(const struct jv *o, const char *key);
const char *jgets(const struct jv *o, const char *key);
double jgetn(const struct jv *o, const char *key);
bool jgetb(const struct jv *o, const char *key);

#endif /* NTSYNC_BENCH_JSON_READ_H */
