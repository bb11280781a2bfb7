// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ntsync-bench: the JSON reader (just enough for its own reports, read
 * back by --compare); see json-read.h.  Host-tested by test-json-read.c.
 *
 * A parse error longjmps out of the recursion; what was allocated so far
 * is not freed (the caller reports the error and exits).
 */
#include "json-read.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools-common.h"

struct jparser {
	const char *p;
	const char *start;
	const char *file;
	jmp_buf fail;		/* jfail() returns here */
	char *err;
	size_t errlen;
};

static void __attribute__((noreturn))
jfail(struct jparser *jp, const char *what)
{
	size_t off = (size_t)(jp->p - jp->start);

	snprintf(jp->err, jp->errlen,
		 "%s: not an ntsync-bench JSON file (%s at byte %zu); write one with 'ntsync-bench --json=FILE'",
		 jp->file, what, off);
	longjmp(jp->fail, 1);
}

static void *jcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p)
		tc_die("out of memory");
	return p;
}

static void jskip(struct jparser *jp)
{
	while (*jp->p && isspace((unsigned char)*jp->p))
		jp->p++;
}

static struct jv *jparse(struct jparser *jp, int depth);

static char *jparse_str(struct jparser *jp)
{
	size_t cap = 16, n = 0;
	char *s = jcalloc(cap, 1);

	jp->p++;	/* opening quote */
	while (*jp->p && *jp->p != '"') {
		char c = *jp->p++;

		if (c == '\\') {
			c = *jp->p++;
			switch (c) {
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case 'r': c = '\r'; break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'u': {
				unsigned int u = 0;

				for (int i = 0; i < 4; i++) {
					if (!isxdigit((unsigned char)*jp->p))
						jfail(jp, "bad \\u escape");
					u = u * 16 + (unsigned int)(isdigit((unsigned char)*jp->p) ?
						*jp->p - '0' :
						tolower((unsigned char)*jp->p) - 'a' + 10);
					jp->p++;
				}
				c = u < 0x80 ? (char)u : '?';
				break;
			}
			case '\0':
				jfail(jp, "unterminated string");
			default:
				break;
			}
		}
		if (n + 2 > cap) {
			cap *= 2;
			s = realloc(s, cap);
			if (!s)
				tc_die("out of memory");
		}
		s[n++] = c;
	}
	if (*jp->p != '"')
		jfail(jp, "unterminated string");
	jp->p++;
	s[n] = '\0';
	return s;
}

static void jpush(struct jv *v, char *key, struct jv *item)
{
	v->items = realloc(v->items, (v->n + 1) * sizeof(*v->items));
	v->keys = realloc(v->keys, (v->n + 1) * sizeof(*v->keys));
	if (!v->items || !v->keys)
		tc_die("out of memory");
	v->items[v->n] = item;
	v->keys[v->n] = key;
	v->n++;
}

static struct jv *jparse(struct jparser *jp, int depth)
{
	struct jv *v = jcalloc(1, sizeof(*v));

	if (depth > 32)
		jfail(jp, "nested too deep");
	jskip(jp);
	switch (*jp->p) {
	case '{':
		v->t = J_OBJ;
		jp->p++;
		jskip(jp);
		if (*jp->p == '}') {
			jp->p++;
			return v;
		}
		for (;;) {
			char *key;

			jskip(jp);
			if (*jp->p != '"')
				jfail(jp, "expected a key");
			key = jparse_str(jp);
			jskip(jp);
			if (*jp->p++ != ':')
				jfail(jp, "expected ':'");
			jpush(v, key, jparse(jp, depth + 1));
			jskip(jp);
			if (*jp->p == ',') {
				jp->p++;
				continue;
			}
			if (*jp->p++ != '}')
				jfail(jp, "expected '}'");
			return v;
		}
	case '[':
		v->t = J_ARR;
		jp->p++;
		jskip(jp);
		if (*jp->p == ']') {
			jp->p++;
			return v;
		}
		for (;;) {
			jpush(v, NULL, jparse(jp, depth + 1));
			jskip(jp);
			if (*jp->p == ',') {
				jp->p++;
				continue;
			}
			if (*jp->p++ != ']')
				jfail(jp, "expected ']'");
			return v;
		}
	case '"':
		v->t = J_STR;
		v->str = jparse_str(jp);
		return v;
	case 't':
		if (strncmp(jp->p, "true", 4))
			jfail(jp, "bad literal");
		jp->p += 4;
		v->t = J_BOOL;
		v->b = true;
		return v;
	case 'f':
		if (strncmp(jp->p, "false", 5))
			jfail(jp, "bad literal");
		jp->p += 5;
		v->t = J_BOOL;
		return v;
	case 'n':
		if (strncmp(jp->p, "null", 4))
			jfail(jp, "bad literal");
		jp->p += 4;
		v->t = J_NULL;
		return v;
	default: {
		char *end;

		errno = 0;
		v->num = strtod(jp->p, &end);
		if (end == jp->p)
			jfail(jp, "unexpected character");
		jp->p = end;
		v->t = J_NUM;
		return v;
	}
	}
}

void jfree(struct jv *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->n; i++) {
		jfree(v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->str);
	free(v);
}

const struct jv *jget(const struct jv *o, const char *key)
{
	if (!o || o->t != J_OBJ)
		return NULL;
	for (size_t i = 0; i < o->n; i++)
		if (!strcmp(o->keys[i], key))
			return o->items[i];
	return NULL;
}

const char *jgets(const struct jv *o, const char *key)
{
	const struct jv *v = jget(o, key);

	return v && v->t == J_STR ? v->str : "";
}

double jgetn(const struct jv *o, const char *key)
{
	const struct jv *v = jget(o, key);

	return v && v->t == J_NUM ? v->num : NAN;
}

bool jgetb(const struct jv *o, const char *key)
{
	const struct jv *v = jget(o, key);

	return v && v->t == J_BOOL && v->b;
}

struct jv *bench_json_parse(const char *text, const char *file,
			    char *err, size_t errlen)
{
	struct jparser jp = { .p = text, .start = text, .file = file,
			      .err = err, .errlen = errlen };
	struct jv *root;

	if (setjmp(jp.fail))
		return NULL;
	root = jparse(&jp, 0);
	jskip(&jp);
	if (*jp.p)
		jfail(&jp, "trailing data");
	if (root->t != J_OBJ || strcmp(jgets(root, "tool"), "ntsync-bench") ||
	    !jget(root, "rows") || jget(root, "rows")->t != J_ARR)
		jfail(&jp, "no \"tool\": \"ntsync-bench\" with \"rows\"");
	return root;
}

struct jv *load_json(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf, err[512];
	size_t cap = 65536, n = 0, got;
	struct jv *root;

	if (!f) {
		fprintf(stderr, "%s: cannot open %s: %s\n", tc_progname, path,
			strerror(errno));
		exit(2);
	}
	buf = jcalloc(cap, 1);
	while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
		n += got;
		if (n + 1 >= cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			if (!buf)
				tc_die("out of memory");
		}
	}
	fclose(f);
	buf[n] = '\0';
	root = bench_json_parse(buf, path, err, sizeof(err));
	if (!root) {
		fprintf(stderr, "%s: %s\n", tc_progname, err);
		exit(2);
	}
	free(buf);
	return root;
}
