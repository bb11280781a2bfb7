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
 */

#include "info.h"

struct info_state info;

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: ntsync-info [--json] [--device PATH]\n"
		"Tell whether ntsync (/dev/ntsync) works on this machine.\n"
		"\n"
		"  -j, --json         machine-readable output\n"
		"  -d, --device PATH  check PATH instead of " NTSYNC_DEFAULT_PATH "\n"
		"  -h, --help         show this help\n"
		"  -V, --version      show the version\n"
		"\n"
		"Exit status: 0 working, 1 not working, 2 usage error, 3 not "
		"working because\nSecure Boot refuses the module (DKMS's "
		"signing key is not enrolled).\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "device", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	bool json = false;
	int opt;

	info.path = NTSYNC_DEFAULT_PATH;
	while ((opt = getopt_long(argc, argv, "jd:hV", opts, NULL)) != -1) {
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

	info.root = getenv("NTSYNC_INFO_SYSROOT");
	if (!info.root)
		info.root = "";
	if (uname(&info.uts) != 0)
		memset(&info.uts, 0, sizeof(info.uts));

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
