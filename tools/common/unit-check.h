/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * unit-check.h: the CHECK() of the plain host unit tests in tools/common
 * (no cmocka): counts every check, prints "FAIL file:line: message" for
 * each that fails; main() ends with
 *	printf("%d checks, %d failed\n", checks, failures);
 *	return failures != 0;
 * Include once, from the test's one source file.
 */
#ifndef NTSYNC_UNIT_CHECK_H
#define NTSYNC_UNIT_CHECK_H

#include <stdio.h>

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

#endif /* NTSYNC_UNIT_CHECK_H */
