// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ntsync-info: is ntsync working on this machine?
 *
 * Reports whether /dev/ntsync exists and can be opened by the calling user,
 * which driver serves it (this project's out-of-tree module and its
 * version, or the kernel's own), the kernel version, and runs a quick live
 * check of every operation through libntsync.  Then, for people who run
 * or build Wine: which processes have the device or its objects open (from
 * /proc, as far as the caller may look), whether a running wineserver
 * works without it, and whether the system's <linux/ntsync.h> is complete
 * enough for Wine's build.  Also whether Secure Boot is on and whether
 * the kernel trusts the key DKMS signs the module with (from EFI variables,
 * as any user, without mokutil).  Ends with a verdict line.
 *
 * Exit status: 0 working, 1 not working, 2 usage error, 3 not working
 * because Secure Boot refuses the module: DKMS's signing key is not
 * enrolled (or its enrollment waits for the next reboot).
 *
 * --pid PID and --wine answer "is this Wine process using ntsync, and if
 * not, why?" (info-wine.c): 0 using, 1 not using, 4 no such process, 5
 * not Wine, 6 a zombie, 7 unknown (not readable without root).
 * --check-wine PATH tells from Wine's binaries whether its ntsync backend
 * is compiled in (info-elf.c): 0 yes, 1 stubs, 2 not Wine or unreadable.
 */

#include "info.h"

struct info_state info;

/* --pid PID or (pid_arg NULL) --wine */
static int wine_main(const char *pid_arg, bool json)
{
	static struct wine_report reports[64];
	unsigned int n = 0, unreadable = 0;
	char why[TEXT * 2];
	int rc;

	probe_device();
	probe_driver();
	if (pid_arg) {
		char *end;
		long pid;

		errno = 0;
		pid = strtol(pid_arg, &end, 10);
		if (errno || *end || end == pid_arg || pid <= 0 ||
		    pid > INT32_MAX) {
			fprintf(stderr, "ntsync-info: --pid needs a process id "
				"(a positive number), not '%s'\n", pid_arg);
			return EXIT_USAGE;
		}
		rc = wine_probe_pid((int)pid, &reports[0], why, sizeof(why));
		if (rc) {
			if (json)
				print_wine_error_json((int)pid, rc, why);
			else
				printf("verdict: %s: %s\n", rc == EXIT_UNKNOWN ?
				       "UNKNOWN" : "NO VERDICT", why);
			return rc;
		}
		n = 1;
	} else {
		n = wine_probe_all(reports, 64, &unreadable);
	}
	rc = wine_exit_status(reports, n);
	if (json) {
		print_wine_json(reports, n, unreadable, rc);
	} else {
		print_wine_text(reports, n, unreadable);
		if (!n)
			printf("verdict: no Wine process found%s\n", unreadable ?
			       " among the processes this user may read" : "");
	}
	return rc;
}

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: ntsync-info [--json] [--device PATH]\n"
		"       ntsync-info [--json] --pid PID | --wine\n"
		"       ntsync-info [--json] --check-wine PATH\n"
		"Tell whether ntsync (/dev/ntsync) works on this machine; whether "
		"a Wine process\nuses it, and if not, why; whether a Wine build "
		"has its ntsync backend.\n"
		"\n"
		"  -j, --json         machine-readable output\n"
		"  -d, --device PATH  check PATH instead of " NTSYNC_DEFAULT_PATH "\n"
		"  -p, --pid PID      is Wine process PID (a program or its "
		"wineserver) using it?\n"
		"  -w, --wine         the same for every Wine process in sight\n"
		"  -c, --check-wine PATH  is the ntsync backend compiled into the "
		"Wine at PATH\n"
		"                     (an install prefix, a build tree, a "
		"wineserver or ntdll.so)?\n"
		"  -h, --help         show this help\n"
		"  -V, --version      show the version\n"
		"\n"
		"Exit status: 0 working, 1 not working, 2 usage error, 3 not "
		"working because\nSecure Boot refuses the module (DKMS's "
		"signing key is not enrolled).\n"
		"--pid, --wine: 0 using, 1 not using, 4 no such process, 5 not "
		"Wine, 6 zombie,\n7 unknown (cannot read the process: run as "
		"root).\n"
		"--check-wine: 0 backend compiled in, 1 stubs only, 2 not Wine "
		"or unreadable.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "device", required_argument, NULL, 'd' },
		{ "pid", required_argument, NULL, 'p' },
		{ "wine", no_argument, NULL, 'w' },
		{ "check-wine", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	bool json = false, wine = false;
	const char *pid_arg = NULL, *check = NULL;
	int opt;

	info.path = NTSYNC_DEFAULT_PATH;
	while ((opt = getopt_long(argc, argv, "jd:p:wc:hV", opts, NULL)) != -1) {
		switch (opt) {
		case 'j':
			json = true;
			break;
		case 'd':
			if (!*optarg) {
				fprintf(stderr, "ntsync-info: --device needs a "
					"path, e.g. --device /dev/ntsync\n");
				return EXIT_USAGE;
			}
			info.path = optarg;
			break;
		case 'p':
			pid_arg = optarg;
			break;
		case 'w':
			wine = true;
			break;
		case 'c':
			check = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("ntsync-info %s (libntsync %s)\n",
			       NTSYNC_INFO_VERSION, ntsync_version());
			return 0;
		default:
			fprintf(stderr, "ntsync-info: see 'ntsync-info --help' "
				"for the options\n");
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ntsync-info: unexpected argument '%s'; "
			"use --device PATH to check another node\n",
			argv[optind]);
		return EXIT_USAGE;
	}

	if ((pid_arg != NULL) + wine + (check != NULL) > 1) {
		fprintf(stderr, "ntsync-info: --pid, --wine and --check-wine "
			"go one at a time\n");
		return EXIT_USAGE;
	}
	if (check) {
		if (!*check) {
			fprintf(stderr, "ntsync-info: --check-wine needs a path: "
				"a Wine install prefix, build tree, "
				"wineserver or ntdll.so\n");
			return EXIT_USAGE;
		}
		return check_wine(check, json);
	}

	info.root = getenv("NTSYNC_INFO_SYSROOT");
	if (!info.root)
		info.root = "";
	if (uname(&info.uts) != 0)
		memset(&info.uts, 0, sizeof(info.uts));

	if (pid_arg || wine)
		return wine_main(pid_arg, json);

	probe_device();
	probe_driver();
	if (info.exists && info.chardev && info.openable)
		run_checks();
	ntsync_users_scan(info.root, info.path, &info.users);
	probe_header();
	probe_secure_boot();
	decide();

	if (json)
		print_json();
	else
		print_text();
	if (info.working)
		return EXIT_WORKING;
	return info.cause ? EXIT_SECURE_BOOT : EXIT_NOT_WORKING;
}
