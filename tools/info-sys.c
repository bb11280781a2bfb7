// SPDX-License-Identifier: LGPL-2.1-or-later
/* ntsync-info: formatting, and the files it reads under NTSYNC_INFO_SYSROOT. */

#include "info.h"

/* ---- small helpers ---- */

void fmt(char *buf, size_t len, const char *f, ...)
{
	va_list ap;

	va_start(ap, f);
	vsnprintf(buf, len, f, ap);
	va_end(ap);
}

void rooted(char *buf, size_t len, const char *path)
{
	fmt(buf, len, "%s%s", info.root, path);
}

/* tc_read_line() of path under the root. */
bool rooted_read_line(const char *path, char *buf, size_t len)
{
	char full[TEXT * 2];

	rooted(full, sizeof(full), path);
	return tc_read_line(full, buf, len);
}

bool path_exists(const char *path)
{
	char full[TEXT * 2];

	rooted(full, sizeof(full), path);
	return access(full, F_OK) == 0;
}

/* First file matching pattern (under root), without the root prefix. */
bool find_file(const char *pattern, char *out, size_t len)
{
	char full[TEXT * 2];
	glob_t g;
	bool found = false;

	rooted(full, sizeof(full), pattern);
	if (glob(full, 0, NULL, &g) == 0 && g.gl_pathc > 0) {
		fmt(out, len, "%s", g.gl_pathv[0] + strlen(info.root));
		found = true;
	}
	globfree(&g);
	return found;
}

/* Kernel release as major*1000+minor, e.g. 6012 for 6.12.x. */
int kernel_level(void)
{
	unsigned int maj = 0, min = 0;

	if (sscanf(info.uts.release, "%u.%u", &maj, &min) != 2)
		return 0;
	return (int)(maj * 1000 + min);
}
