// SPDX-License-Identifier: LGPL-2.1-or-later
/* ntsync-info: the report for people. */

#include "info.h"

/* ---- output ---- */

const char *result_name(enum result r)
{
	return r == PASS ? "pass" : r == FAIL ? "fail" : "skip";
}

static void print_users_text(void)
{
	const struct ntsync_users *u = &info.users;

	if (u->proc_missing) {
		printf("users:   unknown (no /proc to look at)\n");
		return;
	}
	printf("users:   %u process%s with %s or its objects open",
	       u->n + u->more, u->n + u->more == 1 ? "" : "es", info.path);
	if (u->unreadable)
		printf(" (%u of %u processes not readable by this user; run as "
		       "root to see them)", u->unreadable, u->scanned);
	printf("\n");
	for (unsigned int i = 0; i < u->n; i++) {
		const struct ntsync_user *p = &u->user[i];

		printf("  pid %-7d %-15s %u device, %u object descriptor%s",
		       p->pid, p->comm[0] ? p->comm : "?", p->device_fds,
		       p->object_fds, p->object_fds == 1 ? "" : "s");
		if (p->typed)
			printf(" (%u sem, %u mutex, %u event)", p->sems,
			       p->mutexes, p->events);
		printf("%s\n", p->wineserver ? " (wineserver)" : "");
	}
	if (u->more)
		printf("  ... and %u more\n", u->more);
	for (unsigned int i = 0; i < u->nws_without; i++)
		printf("  pid %-7d wineserver runs WITHOUT %s: it uses "
		       "round trips to itself (a Wine without ntsync "
		       "support, or started before the module was loaded)\n",
		       u->ws_without[i], info.path);
	printf("note:    " WINESERVER_NOTE "\n");
}

void print_text(void)
{
	printf("ntsync-info %s (libntsync %s)\n", NTSYNC_INFO_VERSION,
	       ntsync_version());
	printf("kernel:  %s %s %s\n", info.uts.sysname, info.uts.release,
	       info.uts.machine);
	if (info.exists)
		printf("device:  %s: %s %u:%u, mode %04o\n", info.path,
		       info.chardev ? "character device" : "NOT a character device",
		       info.major, info.minor, info.mode);
	else
		printf("device:  %s: missing (%s)\n", info.path,
		       strerror(info.stat_errno));
	if (info.exists)
		printf("open:    %s\n", info.openable ? "yes, by this user" :
		       strerror(-info.open_err));
	printf("driver:  %s\n", info.driver_text);
	if (info.module_loaded)
		printf("module:  version %s, srcversion %s, taint '%s'%s%s\n",
		       info.mod_version[0] ? info.mod_version : "-",
		       info.mod_srcversion[0] ? info.mod_srcversion : "-",
		       info.mod_taint,
		       info.mod_initstate[0] ? ", " : "", info.mod_initstate);
	if (info.installed_text[0])
		printf("installed: %s\n", info.installed_text);
	printf("secure boot: %s; lockdown: %s; DKMS key: %s\n", info.sb_text,
	       info.lockdown[0] ? info.lockdown : "unknown", info.key_text);
	if (info.nchecks) {
		printf("checks:\n");
		for (int i = 0; i < info.nchecks; i++)
			printf("  %-4s  %-11s %s\n",
			       result_name(info.checks[i].result),
			       info.checks[i].name, info.checks[i].detail);
	}
	print_users_text();
	printf("header:  %s\n", info.header_text);
	if (info.hint[0])
		printf("hint:    %s\n", info.hint);
	printf("verdict: %s\n", info.verdict);
}
