/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tools-common: what the project's command-line programs share (ntsync-info,
 * ntsync-bench, the conformance suite, the fuzzers): the one errno-name
 * table, die/usage errors, JSON writing, the clock, small files and the
 * slab figures.  A static library, never installed; libntsync stays
 * separate.  ntsync-raw.h, next to it, is the one set of raw ioctl
 * wrappers (header-only).
 */
#ifndef NTSYNC_TOOLS_COMMON_H
#define NTSYNC_TOOLS_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

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

/* clock_gettime(clock) in nanoseconds. */
uint64_t tc_now_ns(clockid_t clock);

/* calloc that dies ("out of memory") instead of returning NULL; never NULL,
 * also for n or size 0. */
void *tc_xcalloc(size_t n, size_t size);

/*
 * The first line of a small file (a sysfs attribute) into buf, trailing
 * white space stripped; "" for an empty file.  False, with buf "", when it
 * cannot be opened.
 */
bool tc_read_line(const char *path, char *buf, size_t len);

/*
 * Bytes in every slab cache's active objects (active objects times object
 * size, from /proc/slabinfo, which only root may read), or -1 when it
 * cannot be read.
 */
long long tc_slab_bytes(void);
/* Ask every slab cache to shrink (/sys/kernel/slab/NAME/shrink, root
 * only); also drains KASAN's quarantine of freed objects.  Best effort. */
void tc_slab_shrink(void);

#endif /* NTSYNC_TOOLS_COMMON_H */
