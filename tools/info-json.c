// SPDX-License-Identifier: LGPL-2.1-or-later
/* ntsync-info: the report as JSON (--json). */

#include "info.h"

void json_str(const char *s)
{
	tc_json_str(stdout, s);
}

void json_str_or_null(const char *s)
{
	tc_json_str_or_null(stdout, s);
}

static const char *tri_json(int v)
{
	return v == TRI_YES ? "true" : v == TRI_NO ? "false" : "null";
}

static void print_secure_boot_json(void)
{
	printf("  \"secure_boot\": {\"enabled\": %s, \"lockdown\": ",
	       tri_json(info.sb_enabled));
	json_str_or_null(info.lockdown);
	printf(", \"dkms_key\": ");
	json_str_or_null(info.dkms_key ? DKMS_KEY : NULL);
	printf(", \"dkms_key_enrolled\": %s, \"dkms_key_pending\": %s, "
	       "\"description\": ", tri_json(info.key_enrolled),
	       tri_json(info.key_pending));
	json_str(info.sb_text);
	printf(", \"dkms_key_description\": ");
	json_str(info.key_text);
	printf("},\n");
}

static void print_users_json(void)
{
	const struct ntsync_users *u = &info.users;

	printf("  \"processes\": {\"proc_readable\": %s, \"scanned\": %u, "
	       "\"unreadable\": %u, \"using\": %u, \"device_fds\": %u, "
	       "\"object_fds\": %u, \"users\": [",
	       u->proc_missing ? "false" : "true", u->scanned, u->unreadable,
	       u->n + u->more, u->device_fds, u->object_fds);
	for (unsigned int i = 0; i < u->n; i++) {
		printf("%s\n      {\"pid\": %d, \"comm\": ", i ? "," : "",
		       u->user[i].pid);
		json_str(u->user[i].comm);
		printf(", \"device_fds\": %u, \"object_fds\": %u, "
		       "\"wineserver\": %s", u->user[i].device_fds,
		       u->user[i].object_fds,
		       u->user[i].wineserver ? "true" : "false");
		if (u->user[i].typed)
			printf(", \"semaphores\": %u, \"mutexes\": %u, "
			       "\"events\": %u", u->user[i].sems,
			       u->user[i].mutexes, u->user[i].events);
		printf("}");
	}
	printf("%s], \"wineservers_without_device\": [", u->n ? "\n    " : "");
	for (unsigned int i = 0; i < u->nws_without; i++)
		printf("%s%d", i ? ", " : "", u->ws_without[i]);
	printf("]},\n");
}

void print_json(void)
{
	printf("{\n  \"tool_version\": ");
	json_str(NTSYNC_INFO_VERSION);
	printf(",\n  \"library_version\": ");
	json_str(ntsync_version());
	printf(",\n  \"kernel\": {\"sysname\": ");
	json_str(info.uts.sysname);
	printf(", \"release\": ");
	json_str(info.uts.release);
	printf(", \"version\": ");
	json_str(info.uts.version);
	printf(", \"machine\": ");
	json_str(info.uts.machine);
	printf("},\n  \"device\": {\"path\": ");
	json_str(info.path);
	printf(", \"exists\": %s, \"char_device\": %s", info.exists ? "true" : "false",
	       info.chardev ? "true" : "false");
	if (info.exists)
		printf(", \"major\": %u, \"minor\": %u, \"mode\": \"%04o\"",
		       info.major, info.minor, info.mode);
	printf(", \"openable\": %s, \"open_error\": ",
	       info.openable ? "true" : "false");
	json_str_or_null(info.openable ? NULL : strerror(-info.open_err));
	printf("},\n  \"driver\": {\"kind\": ");
	json_str(info.driver_kind);
	printf(", \"description\": ");
	json_str(info.driver_text);
	printf(", \"module_loaded\": %s, \"version\": ",
	       info.module_loaded ? "true" : "false");
	json_str_or_null(info.mod_version);
	printf(", \"srcversion\": ");
	json_str_or_null(info.mod_srcversion);
	printf(", \"taint\": ");
	json_str_or_null(info.module_loaded ? info.mod_taint : NULL);
	printf(", \"out_of_tree\": %s, \"dkms_file\": ",
	       info.out_of_tree ? "true" : "false");
	json_str_or_null(info.dkms_file);
	printf(", \"in_tree_file\": ");
	json_str_or_null(info.intree_file);
	printf(", \"installed_version\": ");
	json_str_or_null(info.installed_version);
	printf(", \"loaded_vs_installed\": ");
	json_str_or_null(info.installed_state);
	printf("},\n");
	print_secure_boot_json();
	printf("  \"checks\": [");
	for (int i = 0; i < info.nchecks; i++) {
		printf("%s\n    {\"name\": ", i ? "," : "");
		json_str(info.checks[i].name);
		printf(", \"result\": ");
		json_str(result_name(info.checks[i].result));
		printf(", \"detail\": ");
		json_str(info.checks[i].detail);
		printf("}");
	}
	printf("%s],\n", info.nchecks ? "\n  " : "");
	printf("  \"passed\": %d, \"failed\": %d, \"skipped\": %d,\n",
	       info.passed, info.failed, info.skipped);
	print_users_json();
	printf("  \"system_header\": {\"path\": ");
	json_str(SYS_HEADER);
	printf(", \"state\": ");
	json_str(info.sys_header);
	printf(", \"wine_backend\": %s, \"ntsync_uapi_header\": ",
	       strcmp(info.sys_header, "complete") ? "false" : "true");
	json_str_or_null(info.uapi_header ? UAPI_HEADER : NULL);
	printf(", \"advice\": ");
	json_str(info.header_text);
	printf("},\n  \"wineserver_note\": ");
	json_str(WINESERVER_NOTE);
	printf(",\n");
	printf("  \"working\": %s,\n  \"cause\": ",
	       info.working ? "true" : "false");
	json_str_or_null(info.cause);
	printf(",\n  \"verdict\": ");
	json_str(info.verdict);
	printf(",\n  \"hint\": ");
	json_str_or_null(info.hint);
	printf("\n}\n");
}
