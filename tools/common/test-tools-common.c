// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host unit test of tools-common: the errno table agrees with the C
 * library's own names (strerrorname_np), unknown values have no name, and
 * the JSON writers escape what JSON requires.  Exit 0 when all pass.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools-common.h"

static int failures, checks;

#define CHECK(cond, ...) do {						\
	checks++;							\
	if (!(cond)) {							\
		failures++;						\
		printf("FAIL %s:%d: ", __FILE__, __LINE__);		\
		printf(__VA_ARGS__);					\
		putchar('\n');						\
	}								\
} while (0)

static void check_json(void (*fn)(FILE *, const char *), const char *in, const char *want)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	fn(f, in);
	fclose(f);
	CHECK(!strcmp(buf, want), "JSON of '%s': got %s, want %s", in ? in : "(null)", buf, want);
	free(buf);
}

int main(void)
{
	int named = 0;

	for (int e = 1; e < 4096; e++) {
		const char *ours = tc_errno_name(e), *neg = tc_errno_neg_name(e);
		const char *libc = strerrorname_np(e);

		if (!ours) {
			CHECK(!neg, "%d: a negated name without a name", e);
			continue;
		}
		named++;
		CHECK(libc && !strcmp(ours, libc), "%d: ours %s, the C library's %s", e, ours,
		      libc ? libc : "none");
		CHECK(neg && neg[0] == '-' && !strcmp(neg + 1, ours), "%d: negated %s", e,
		      neg ? neg : "none");
	}
	/* every errno of the ABI and the probes */
	CHECK(named == 17, "%d names, want 17", named);
	CHECK(!tc_errno_name(0) && !tc_errno_name(-EINVAL) && !tc_errno_name(EOPNOTSUPP),
	      "names for 0, -EINVAL or EOPNOTSUPP");

	check_json(tc_json_str, "plain", "\"plain\"");
	check_json(tc_json_str, "q\"b\\s/", "\"q\\\"b\\\\s/\"");
	check_json(tc_json_str, "a\nb\tc\x01", "\"a\\nb\\u0009c\\u0001\"");
	check_json(tc_json_str, "\xc3\xa9", "\"\xc3\xa9\"");
	check_json(tc_json_str_or_null, NULL, "null");
	check_json(tc_json_str_or_null, "", "null");
	check_json(tc_json_str_or_null, "x", "\"x\"");
	{
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		tc_json_num(f, 1.23456);
		fputc(' ', f);
		tc_json_num(f, NAN);
		fputc(' ', f);
		tc_json_num(f, INFINITY);
		fclose(f);
		CHECK(!strcmp(buf, "1.235 null null"), "numbers: %s", buf);
		free(buf);
	}
	printf("%d checks, %d failed\n", checks, failures);
	return failures != 0;
}
