// SPDX-License-Identifier: GPL-2.0-only
/*
 * The differential test against the recorded reference: the error matrix
 * and the walks of tests/differential/ run on the driver at hand, compared
 * line by line with what mainline 7.3's in-tree driver answered
 * (tests/differential/reference-7.3.txt, recorded in a trixie-backports
 * guest by tests/differential/record-reference).  This is how the
 * bookworm (6.1) and trixie (6.12) guests, which have no mainline driver
 * to run, are held to mainline's errno in every case where two errors
 * apply (issue 26).
 * The live comparison of both drivers in one 7.3 boot is the test job's
 * (vm/guest/jobs/test.sh).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "differential/diff.h"

#ifndef NTSYNC_DIFF_REFERENCE
#define NTSYNC_DIFF_REFERENCE "/usr/share/ntsync-tests/differential-7.3.txt"
#endif
#define REFERENCE_NAME "differential-7.3.txt"

/* $NTSYNC_DIFF_REFERENCE, else next to this program (a static build), else installed. */
static FILE *open_reference(char *path, size_t len)
{
	const char *env = getenv("NTSYNC_DIFF_REFERENCE");
	char self[PATH_MAX];
	ssize_t n;
	FILE *f;

	if (env && *env) {
		snprintf(path, len, "%s", env);
		return fopen(path, "r");
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		*strrchr(self, '/') = 0;
		if ((size_t)snprintf(path, len, "%.*s/%s", (int)(len - sizeof(REFERENCE_NAME) - 1),
				     self, REFERENCE_NAME) < len) {
			f = fopen(path, "r");
			if (f)
				return f;
		}
	}
	snprintf(path, len, "%s", NTSYNC_DIFF_REFERENCE);
	return fopen(path, "r");
}

/* The reference's lines of one part: the matrix ("walk " lines left out) or the walks. */
static char *reference_part(bool walks, size_t *len)
{
	char path[PATH_MAX], *line = NULL, *buf = NULL;
	size_t cap = 0;
	FILE *f = open_reference(path, sizeof(path)), *m;

	if (!f)
		fail_msg("the recorded reference %s cannot be read (set NTSYNC_DIFF_REFERENCE)", path);
	m = open_memstream(&buf, len);
	while (getline(&line, &cap, f) >= 0) {
		if (line[0] == '#' || !strncmp(line, "walk ", 5) != walks)
			continue;
		fputs(line, m);
	}
	fclose(m);
	fclose(f);
	free(line);
	return buf;
}

/* §abi.order */
TEST(matrix_matches_mainline_7_3)
{
	char *ref, *got = NULL, *report = NULL;
	size_t rlen, glen, plen;
	struct nd_out o;
	struct nd_cmp r;
	FILE *g, *a, *b, *p;
	long cases;

	ref = reference_part(false, &rlen);
	g = open_memstream(&got, &glen);
	nd_out_init(&o, g);
	cases = nd_matrix(&o);
	fclose(g);
	assert_true(cases > 0);
	a = fmemopen(ref, rlen, "r");
	b = fmemopen(got, glen, "r");
	p = open_memstream(&report, &plen);
	nd_compare(a, b, p, 40, &r);
	fclose(p);
	fclose(a);
	fclose(b);
	print_message("# matrix: %ld cases, %lu reference lines, %lu differences, %lu known "
		      "(upstream/0002: a non-event alert refused, as documented)\n",
		      cases, r.lines, r.differences, r.known);
	if (r.differences)
		print_message("%s", report);
	assert_int_equal(r.matrix, (unsigned long)cases);
	assert_int_equal(r.differences, 0);
	free(report);
	free(got);
	free(ref);
}

/* §abi.order */
TEST(walks_match_mainline_7_3)
{
	unsigned long seeds = 0, differ = 0;
	char *ref, *line, *save = NULL;
	struct nd_op ops[ND_MAX_OPS];
	size_t rlen;

	ref = reference_part(true, &rlen);
	for (line = strtok_r(ref, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long seed;
		char mine[128];
		unsigned int n;
		struct nd_out d;

		assert_int_equal(sscanf(line, "walk %llu", &seed), 1);
		n = nd_walk_ops(seed, ops, ND_MAX_OPS);
		nd_out_init(&d, NULL);
		assert_int_equal(nd_run_ops(&d, ops, n), 0);
		snprintf(mine, sizeof(mine), "walk %llu ops=%u digest=%016llx", seed, n,
			 (unsigned long long)d.digest);
		seeds++;
		if (!strcmp(mine, line))
			continue;
		if (differ++ < 3) {
			struct nd_out t;

			print_message("# walk %llu differs: reference '%s', this driver '%s'; its "
				      "calls (shrink them against mainline with vm/ntsync-vm test "
				      "--suite trixie-backports):\n", seed, line, mine);
			nd_out_init(&t, stdout);
			nd_run_ops(&t, ops, n);
			fflush(stdout);
		}
	}
	print_message("# walks: %lu seeds, %lu differ from mainline 7.3\n", seeds, differ);
	assert_true(seeds >= 1000);
	assert_int_equal(differ, 0);
	free(ref);
}

static const struct CMUnitTest tests[] = {
	cmocka_unit_test(matrix_matches_mainline_7_3),
	cmocka_unit_test(walks_match_mainline_7_3),
};

NTSYNC_TEST_MAIN("diff", tests, true)
