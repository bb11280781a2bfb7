// SPDX-License-Identifier: LGPL-2.1-or-later
/* ntsync-info --pid / --wine: the reports, for people and as JSON. */

#include "info.h"

static const char *state_name(enum link_state s)
{
	return s == LINK_OK ? "ok" : s == LINK_BROKEN ? "broken" : "unknown";
}

static const char *status_name(enum wine_status s)
{
	return s == WINE_USING ? "using" : s == WINE_NOT_USING ? "not-using" :
		"unknown";
}

void print_wine_text(const struct wine_report *r, unsigned int n,
		     unsigned int unreadable)
{
	for (unsigned int i = 0; i < n; i++) {
		const struct wine_report *w = &r[i];

		printf("%spid %d (%s): %s", i ? "\n" : "", w->pid, w->comm,
		       w->wineserver ? "wineserver" : "Wine process");
		if (!w->wineserver && w->server_pid)
			printf(", its wineserver is pid %d", w->server_pid);
		else if (!w->wineserver)
			printf(", no wineserver found");
		printf("\n  descriptors: ");
		if (w->holds == TRI_UNKNOWN)
			printf("unknown: /proc/%d/fd: %s\n", w->pid,
			       strerror(w->fd_err));
		else
			printf("%u of %s, %u ntsync objects\n", w->device_fds,
			       info.path, w->object_fds);
		for (int l = 0; l < NLINKS; l++)
			printf("  %d %-11s %-7s %s\n", l + 1, link_names[l],
			       state_name(w->link[l].state),
			       w->link[l].found);
		printf("verdict: %s\n", w->verdict);
		if (w->fix[0])
			printf("fix:     %s\n", w->fix);
	}
	if (unreadable)
		printf("note:    %u process%s could not be read (another "
		       "user's: run as root to see them)\n", unreadable,
		       unreadable == 1 ? "" : "es");
}

static void print_one_json(const struct wine_report *w)
{
	printf("    {\"pid\": %d, \"comm\": ", w->pid);
	json_str(w->comm);
	printf(", \"role\": \"%s\", \"wineserver_pid\": ",
	       w->wineserver ? "wineserver" : "client");
	if (w->server_pid)
		printf("%d", w->server_pid);
	else
		printf("null");
	printf(", \"wineserver_exe\": ");
	json_str_or_null(w->exe);
	printf(", \"ntdll\": ");
	json_str_or_null(w->ntdll);
	printf(",\n     \"holds_device\": %s, \"device_fds\": %u, "
	       "\"object_fds\": %u, \"fd_error\": ",
	       w->holds == TRI_YES ? "true" : w->holds == TRI_NO ? "false" :
	       "null", w->device_fds, w->object_fds);
	json_str_or_null(w->fd_err ? strerror(w->fd_err) : NULL);
	printf(",\n     \"links\": [");
	for (int l = 0; l < NLINKS; l++) {
		const struct wine_link *k = &w->link[l];

		printf("%s\n       {\"link\": %d, \"name\": \"%s\", \"state\": "
		       "\"%s\", \"certain\": %s, \"found\": ", l ? "," : "",
		       l + 1, link_names[l], state_name(k->state),
		       k->certain ? "true" : "false");
		json_str(k->found);
		printf(", \"reason\": ");
		json_str_or_null(k->state == LINK_BROKEN ? k->reason : NULL);
		printf(", \"fix\": ");
		json_str_or_null(k->state == LINK_BROKEN ? k->fix : NULL);
		printf("}");
	}
	printf("],\n     \"status\": \"%s\", \"verdict\": ",
	       status_name(w->status));
	json_str(w->verdict);
	printf(", \"fix\": ");
	json_str_or_null(w->fix);
	printf("}");
}

void print_wine_json(const struct wine_report *r, unsigned int n,
		     unsigned int unreadable, int rc)
{
	printf("{\n  \"tool_version\": ");
	json_str(NTSYNC_INFO_VERSION);
	printf(",\n  \"device\": ");
	json_str(info.path);
	printf(",\n  \"driver\": {\"kind\": ");
	json_str(info.driver_kind);
	printf(", \"module_loaded\": %s, \"description\": ",
	       info.module_loaded ? "true" : "false");
	json_str(info.driver_text);
	printf("},\n  \"processes\": [");
	for (unsigned int i = 0; i < n; i++) {
		printf("%s\n", i ? "," : "");
		print_one_json(&r[i]);
	}
	printf("%s],\n  \"unreadable\": %u,\n  \"exit\": %d\n}\n",
	       n ? "\n  " : "", unreadable, rc);
}

void print_wine_error_json(int pid, int rc, const char *why)
{
	static const char *const names[] = {
		[EXIT_NO_PROCESS] = "no-such-process",
		[EXIT_NOT_WINE] = "not-wine",
		[EXIT_ZOMBIE] = "zombie",
		[EXIT_UNKNOWN] = "unreadable",
	};

	printf("{\n  \"tool_version\": ");
	json_str(NTSYNC_INFO_VERSION);
	printf(",\n  \"pid\": %d,\n  \"error\": ", pid);
	json_str_or_null(rc >= EXIT_NO_PROCESS && rc <= EXIT_UNKNOWN ?
			 names[rc] : NULL);
	printf(",\n  \"message\": ");
	json_str(why);
	printf(",\n  \"exit\": %d\n}\n", rc);
}
