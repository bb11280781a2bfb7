// SPDX-License-Identifier: LGPL-2.1-or-later
/* What the project's command-line programs share; see tools-common.h. */

#include "tools-common.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>

const char *tc_progname = "ntsync";

void tc_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", tc_progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void tc_usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", tc_progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help'.\n", tc_progname);
	exit(2);
}

/*
 * The one errno-name table: every errno the ABI (doc/spec) and the
 * programs' probes meet.  Stored negated ("-EINVAL"): tc_errno_name() skips
 * the sign.  Static strings, so several names can be in one printf.
 */
static const struct {
	int err;
	const char *neg_name;
} errno_names[] = {
	{ EINVAL, "-EINVAL" }, { EFAULT, "-EFAULT" }, { EPERM, "-EPERM" },
	{ ENOTTY, "-ENOTTY" }, { EOVERFLOW, "-EOVERFLOW" },
	{ EOWNERDEAD, "-EOWNERDEAD" }, { ETIMEDOUT, "-ETIMEDOUT" },
	{ EINTR, "-EINTR" }, { EBADF, "-EBADF" }, { ENOMEM, "-ENOMEM" },
	{ EMFILE, "-EMFILE" }, { ENOENT, "-ENOENT" }, { EACCES, "-EACCES" },
	{ ENODEV, "-ENODEV" }, { ENXIO, "-ENXIO" }, { EAGAIN, "-EAGAIN" },
	{ ENOSYS, "-ENOSYS" },
};

const char *tc_errno_neg_name(int err)
{
	for (size_t i = 0; i < sizeof(errno_names) / sizeof(errno_names[0]); i++)
		if (errno_names[i].err == err)
			return errno_names[i].neg_name;
	return NULL;
}

const char *tc_errno_name(int err)
{
	const char *neg = tc_errno_neg_name(err);

	return neg ? neg + 1 : NULL;
}

void tc_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

void tc_json_str_or_null(FILE *f, const char *s)
{
	if (s && *s)
		tc_json_str(f, s);
	else
		fputs("null", f);
}

void tc_json_num(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.3f", v);
	else
		fputs("null", f);
}
