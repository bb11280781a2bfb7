// SPDX-License-Identifier: LGPL-2.1-or-later
/* ntsync-info: the system's <linux/ntsync.h>, for Wine's build. */

#include "info.h"

/* ---- for Wine: its system header ---- */

/* Does the file at path (under the root) define name? */
static bool file_mentions(const char *path, const char *name)
{
	char full[TEXT * 2], line[512];
	bool found = false;
	FILE *f;

	rooted(full, sizeof(full), path);
	f = fopen(full, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, name) != NULL;
	fclose(f);
	return found;
}

/*
 * Wine builds its ntsync backend only if <linux/ntsync.h> defines
 * NTSYNC_IOC_EVENT_READ; Debian 13's linux-libc-dev has a 6.10 preview
 * without it, Debian 12's none.
 */
void probe_header(void)
{
	info.uapi_header = path_exists(UAPI_HEADER);
	if (!path_exists(SYS_HEADER))
		info.sys_header = "missing";
	else if (!file_mentions(SYS_HEADER, "NTSYNC_IOC_EVENT_READ"))
		info.sys_header = "incomplete";
	else
		info.sys_header = "complete";

	if (!strcmp(info.sys_header, "complete"))
		fmt(info.header_text, sizeof(info.header_text),
		    SYS_HEADER " is complete: Wine built here gets its ntsync "
		    "backend");
	else
		fmt(info.header_text, sizeof(info.header_text),
		    "%s: Wine built here has no ntsync backend; configure it "
		    "with CPPFLAGS=\"$(pkg-config --cflags ntsync-uapi)\" (%s)",
		    !strcmp(info.sys_header, "missing") ?
		    "there is no " SYS_HEADER :
		    SYS_HEADER " is an incomplete preview (no "
		    "NTSYNC_IOC_EVENT_READ)",
		    info.uapi_header ? "ntsync-uapi-dev is installed" :
		    "install ntsync-uapi-dev");
}
