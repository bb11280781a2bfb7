// SPDX-License-Identifier: LGPL-2.1-or-later
/* What the project's command-line programs share; see tools-common.h. */

#include "tools-common.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

uint64_t tc_now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void *tc_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		tc_die("out of memory");
	return p;
}

bool tc_read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n;

	buf[0] = '\0';
	if (!f)
		return false;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		buf[0] = '\0';
		return true;	/* exists, empty (a taint file with no flags) */
	}
	fclose(f);
	n = strlen(buf);
	while (n && isspace((unsigned char)buf[n - 1]))
		buf[--n] = '\0';
	return true;
}

long long tc_slab_bytes(void)
{
	char line[512];
	long long sum = 0;
	FILE *f = fopen("/proc/slabinfo", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char name[128];
		long long active, total, size;

		/* the "slabinfo - version" and "# name" lines do not scan */
		if (sscanf(line, "%127s %lld %lld %lld", name, &active, &total, &size) == 4)
			sum += active * size;
	}
	fclose(f);
	return sum;
}

void tc_slab_shrink(void)
{
	DIR *d = opendir("/sys/kernel/slab");
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char p[512];
		int fd;

		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/sys/kernel/slab/%s/shrink", e->d_name);
		fd = open(p, O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		(void)!write(fd, "1", 1);
		close(fd);
	}
	if (d)
		closedir(d);
}
