// SPDX-License-Identifier: GPL-2.0-only
/*
 * Host tests of the differential test's own parts that need no device: the
 * comparison (that it passes only identical outputs, catches every kind of
 * difference, and allows upstream/0002's known difference only where the
 * driver under test gave the documented answer), the walk generator's
 * determinism and the replay format's round trip.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "diff.h"

static unsigned long compare(const char *a, const char *b, struct nd_cmp *r)
{
	FILE *fa = fmemopen((void *)a, strlen(a), "r");
	FILE *fb = fmemopen((void *)b, strlen(b), "r");

	nd_compare(fa, fb, NULL, 0, r);
	fclose(fa);
	fclose(fb);
	return r->differences;
}

#define CASE "obj SEM_RELEASE on sem valid(1) -> ok out=00000001,a5a5a5a5 | sem=2/2\n"
#define WALK "walk 1 ops=40 digest=0123456789abcdef\n"
#define KNOWN_Q "wait ANY alert=sem " ND_KNOWN_0002 " -> "

static void identical_outputs_pass(void **state)
{
	struct nd_cmp r;

	(void)state;
	assert_int_equal(compare(CASE WALK, CASE WALK, &r), 0);
	assert_int_equal(r.lines, 2);
	assert_int_equal(r.matrix, 1);
	assert_int_equal(r.walks, 1);
	/* comments are not compared */
	assert_int_equal(compare("# kernel 7.3\n" CASE WALK, "# kernel 6.1\n" CASE WALK, &r), 0);
}

static void every_kind_of_difference_counts(void **state)
{
	struct nd_cmp r;

	(void)state;
	/* another errno */
	assert_int_equal(compare(CASE,
		"obj SEM_RELEASE on sem valid(1) -> EINVAL out=00000001,a5a5a5a5 | sem=2/2\n", &r), 1);
	/* another output field, another state */
	assert_int_equal(compare(CASE,
		"obj SEM_RELEASE on sem valid(1) -> ok out=00000002,a5a5a5a5 | sem=2/2\n", &r), 1);
	assert_int_equal(compare(CASE,
		"obj SEM_RELEASE on sem valid(1) -> ok out=00000001,a5a5a5a5 | sem=1/2\n", &r), 1);
	/* a walk's digest */
	assert_int_equal(compare(WALK, "walk 1 ops=40 digest=0123456789abcdee\n", &r), 1);
	/* lines missing on either side */
	assert_int_equal(compare(CASE WALK, CASE, &r), 1);
	assert_int_equal(compare(CASE, CASE WALK, &r), 1);
	assert_int_equal(compare("", CASE, &r), 1);
}

static void known_difference_needs_the_documented_answer(void **state)
{
	const char *mainline = KNOWN_Q "ok index=00000001 | sem=0/2 spec=no\n";
	struct nd_cmp r;

	(void)state;
	/* ours refused it as documented: allowed, and counted apart */
	assert_int_equal(compare(mainline, KNOWN_Q "EINVAL index=a5a5a5a5 | sem=1/2 spec=yes\n",
				 &r), 0);
	assert_int_equal(r.known, 1);
	/* ours did something else: a difference */
	assert_int_equal(compare(mainline, KNOWN_Q "EFAULT index=a5a5a5a5 | sem=1/2 spec=no\n",
				 &r), 1);
	assert_int_equal(r.known, 0);
	/* the tag never excuses another case's line */
	assert_int_equal(compare(mainline, "wait ALL alert=sem " ND_KNOWN_0002
				 " -> EINVAL index=a5a5a5a5 | sem=1/2 spec=yes\n", &r), 1);
	/* nor an untagged line */
	assert_int_equal(compare("wait ANY sem -> ok index=00000000 | sem=0/2\n",
				 "wait ANY sem -> EINVAL index=a5a5a5a5 | sem=1/2 spec=yes\n", &r), 1);
}

static void walks_are_deterministic_and_replayable(void **state)
{
	struct nd_op a[ND_MAX_OPS], b[ND_MAX_OPS], parsed;
	unsigned int na, nb, i, seed, kinds = 0;
	char text[160], again[160];

	(void)state;
	for (seed = 1; seed <= 200; seed++) {
		na = nd_walk_ops(seed, a, ND_MAX_OPS);
		nb = nd_walk_ops(seed, b, ND_MAX_OPS);
		assert_int_equal(na, nb);
		assert_true(na >= 30 && na <= 60);
		assert_memory_equal(a, b, na * sizeof(a[0]));
		for (i = 0; i < na; i++) {
			kinds |= 1u << a[i].k;
			nd_op_format(&a[i], text, sizeof(text));
			assert_int_equal(nd_op_parse(text, &parsed), 0);
			nd_op_format(&parsed, again, sizeof(again));
			assert_string_equal(text, again);
			/* alerts are events only (upstream/0002 stays out of the walks) */
			if (a[i].alert)
				assert_true(a[i].k == ND_WAITANY || a[i].k == ND_WAITALL);
		}
	}
	/* every kind of call occurs */
	assert_int_equal(kinds, (1u << ND_NOPK) - 1);
	/* other seeds, other sequences */
	na = nd_walk_ops(1, a, ND_MAX_OPS);
	nb = nd_walk_ops(2, b, ND_MAX_OPS);
	assert_true(na != nb || memcmp(a, b, na * sizeof(a[0])));
	assert_int_equal(nd_op_parse("frobnicate 1", &parsed), -1);
	assert_int_equal(nd_op_parse("release 9 1", &parsed), -1);
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(identical_outputs_pass),
		cmocka_unit_test(every_kind_of_difference_counts),
		cmocka_unit_test(known_difference_needs_the_documented_answer),
		cmocka_unit_test(walks_are_deterministic_and_replayable),
	};

	return cmocka_run_group_tests_name("diff-compare", tests, NULL, NULL);
}
