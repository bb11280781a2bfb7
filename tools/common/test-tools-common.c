// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host unit test of tools-common: the errno table agrees with the C
 * library's own names (strerrorname_np), unknown values have no name, the
 * JSON writers escape what JSON requires, and the clock, tc_xcalloc,
 * tc_read_line and tc_slab_bytes do what tools-common.h says.  Exit 0 when
 * all pass.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools-common.h"
#include "unit-check.h"

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

/* A file in a fresh temporary directory holding content (NULL: none). */
static void put_file(char *path, size_t len, const char *dir, const char *content)
{
	FILE *f;

	snprintf(path, len, "%s/f", dir);
	unlink(path);
	if (!content)
		return;
	f = fopen(path, "w");
	if (f) {
		fputs(content, f);
		fclose(f);
	}
}

static void check_files(void)
{
	char dir[] = "/tmp/test-tools-common.XXXXXX", path[64], buf[16];

	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp: %s", strerror(errno));
		return;
	}
	put_file(path, sizeof(path), dir, "O  \t\n");
	CHECK(tc_read_line(path, buf, sizeof(buf)) && !strcmp(buf, "O"),
	      "trailing white space: '%s'", buf);
	put_file(path, sizeof(path), dir, "1.0.2\nsecond\n");
	CHECK(tc_read_line(path, buf, sizeof(buf)) && !strcmp(buf, "1.0.2"),
	      "first line only: '%s'", buf);
	put_file(path, sizeof(path), dir, "");
	strcpy(buf, "x");
	CHECK(tc_read_line(path, buf, sizeof(buf)) && !buf[0],
	      "empty file: true and '', got '%s'", buf);
	put_file(path, sizeof(path), dir, "0123456789abcdefghij\n");
	CHECK(tc_read_line(path, buf, sizeof(buf)) && !strcmp(buf, "0123456789abcde"),
	      "a long line cut to the buffer: '%s'", buf);
	put_file(path, sizeof(path), dir, NULL);
	strcpy(buf, "x");
	CHECK(!tc_read_line(path, buf, sizeof(buf)) && !buf[0],
	      "missing file: false and '', got '%s'", buf);
	rmdir(dir);
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
	{
		uint64_t a = tc_now_ns(CLOCK_MONOTONIC), b = tc_now_ns(CLOCK_MONOTONIC);
		struct timespec ts;
		uint64_t rt;

		CHECK(a && b >= a, "monotonic clock: %llu then %llu",
		      (unsigned long long)a, (unsigned long long)b);
		clock_gettime(CLOCK_REALTIME, &ts);
		rt = tc_now_ns(CLOCK_REALTIME);
		CHECK(rt / 1000000000u - (uint64_t)ts.tv_sec <= 1,
		      "realtime clock: %llu ns, time %lld s",
		      (unsigned long long)rt, (long long)ts.tv_sec);
	}
	{
		unsigned char *p = tc_xcalloc(64, 4), *z = tc_xcalloc(0, 0);
		int zero = 1;

		for (int i = 0; i < 256; i++)
			zero &= p[i] == 0;
		CHECK(p && zero, "tc_xcalloc: not zeroed");
		CHECK(z != NULL, "tc_xcalloc(0, 0) returned NULL");
		free(p);
		free(z);
	}
	check_files();
	{
		long long slab = tc_slab_bytes();

		/* /proc/slabinfo is root's: -1 for others, a real total for root */
		if (access("/proc/slabinfo", R_OK) == 0)
			CHECK(slab > 0, "slab bytes %lld with /proc/slabinfo readable", slab);
		else
			CHECK(slab == -1, "slab bytes %lld without /proc/slabinfo", slab);
	}
	printf("%d checks, %d failed\n", checks, failures);
	return failures != 0;
}
