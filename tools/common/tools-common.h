/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tools-common: what the project's command-line programs share (ntsync-info,
 * ntsync-bench, the conformance suite, the fuzzers): the one errno-name
 * table, die/usage errors, and JSON writing.  A static library, never
 * installed; libntsync stays separate.
 */
#ifndef NTSYNC_TOOLS_COMMON_H
#define NTSYNC_TOOLS_COMMON_H

#include <stdio.h>

/* The program name in messages ("ntsync-bench"); set once by main(). */
extern const char *tc_progname;

/* "PROG: message" on stderr, exit 1. */
void tc_die(const char *fmt, ...)
	__attribute__((noreturn, format(printf, 1, 2)));
/* "PROG: message" and "Try 'PROG --help'." on stderr, exit 2. */
void tc_usage_error(const char *fmt, ...)
	__attribute__((noreturn, format(printf, 1, 2)));

/*
 * The symbolic name of a (positive) errno value the ntsync programs meet
 * ("EINVAL"), or NULL for any other (callers print those their own way:
 * "errno 95").  Static strings.
 */
const char *tc_errno_name(int err);
/* The same, negated, as the kernel returns it ("-EINVAL"), or NULL. */
const char *tc_errno_neg_name(int err);

/* A JSON string ('"', '\\' and control characters escaped). */
void tc_json_str(FILE *f, const char *s);
/* As tc_json_str, or null for NULL or "". */
void tc_json_str_or_null(FILE *f, const char *s);
/* A number with three decimals, or null when not finite. */
void tc_json_num(FILE *f, double v);

#endif /* NTSYNC_TOOLS_COMMON_H */
