// SPDX-License-Identifier: LGPL-2.1-or-later
/* ntsync-info: the device node and the driver behind it. */

#include "info.h"

/* ---- the node and the driver ---- */
static bool misc_has_ntsync(void)
{
	char full[TEXT * 2], line[TEXT];
	bool found = false;
	FILE *f;

	rooted(full, sizeof(full), "/proc/misc");
	f = fopen(full, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		char name[TEXT];
		unsigned int minor;

		if (sscanf(line, "%u %255s", &minor, name) == 2 &&
		    strcmp(name, "ntsync") == 0)
			found = true;
	}
	fclose(f);
	return found;
}


void probe_device(void)
{
	struct ntsync_device *dev;
	struct stat st;

	if (stat(info.path, &st) == 0) {
		info.exists = true;
		info.chardev = S_ISCHR(st.st_mode);
		info.major = major(st.st_rdev);
		info.minor = minor(st.st_rdev);
		info.mode = st.st_mode & 07777;
	} else {
		info.stat_errno = errno;
	}

	info.open_err = ntsync_open(info.path, &dev);
	if (info.open_err == 0) {
		info.openable = true;
		ntsync_close(dev);
	}
	info.misc_registered = misc_has_ntsync();
}

/*
 * The ntsync-dkms version installed (the source DKMS builds from,
 * /usr/src/ntsync-VERSION/dkms.conf) next to the module loaded now.  After
 * an upgrade while /dev/ntsync is in use, the running kernel keeps the old
 * module until it is unloaded or the machine reboots; after a removal, the
 * module stays loaded but its file is gone, so 'modprobe -r' (which looks
 * the name up in modules.dep) answers "Module ntsync not found": only rmmod
 * unloads it.
 */
static void probe_installed(void)
{
	static const char prefix[] = "/usr/src/ntsync-", suffix[] = "/dkms.conf";
	char file[TEXT];
	size_t n;
	int c;

	if (find_file("/usr/src/ntsync-*/dkms.conf", file, sizeof(file))) {
		n = strlen(file) - strlen(prefix) - strlen(suffix);
		if (n >= sizeof(info.installed_version))
			n = sizeof(info.installed_version) - 1;
		memcpy(info.installed_version, file + strlen(prefix), n);
		info.installed_version[n] = 0;
	}
	info.installed_state = "";
	if (!info.module_loaded || !info.out_of_tree || !info.mod_version[0])
		return;
	if (!info.installed_version[0]) {
		info.installed_state = "removed";
		fmt(info.installed_text, sizeof(info.installed_text),
		    "no ntsync-dkms (no /usr/src/ntsync-*/): the loaded module "
		    "%s stays until it is unloaded or the machine reboots",
		    info.mod_version);
		return;
	}
	c = strverscmp(info.mod_version, info.installed_version);
	info.installed_state = c == 0 ? "same" : c < 0 ? "older" : "newer";
	if (c == 0)
		fmt(info.installed_text, sizeof(info.installed_text),
		    "ntsync-dkms %s, the version loaded", info.installed_version);
	else
		fmt(info.installed_text, sizeof(info.installed_text),
		    "ntsync-dkms %s; the loaded module (%s) is %s: %s takes "
		    "over when the module is next loaded", info.installed_version,
		    info.mod_version, info.installed_state,
		    info.installed_version);
}

void probe_driver(void)
{
	char pattern[TEXT * 2];

	info.module_loaded = path_exists("/sys/module/ntsync");
	if (info.module_loaded) {
		rooted_read_line("/sys/module/ntsync/version",
				 info.mod_version, sizeof(info.mod_version));
		rooted_read_line("/sys/module/ntsync/srcversion",
				 info.mod_srcversion, sizeof(info.mod_srcversion));
		rooted_read_line("/sys/module/ntsync/taint",
				 info.mod_taint, sizeof(info.mod_taint));
		rooted_read_line("/sys/module/ntsync/initstate",
				 info.mod_initstate, sizeof(info.mod_initstate));
		info.out_of_tree = strchr(info.mod_taint, 'O') != NULL;
	}

	fmt(pattern, sizeof(pattern), "/lib/modules/%s/updates/dkms/ntsync.ko*",
	    info.uts.release);
	find_file(pattern, info.dkms_file, sizeof(info.dkms_file));
	fmt(pattern, sizeof(pattern),
	    "/lib/modules/%s/kernel/drivers/misc/ntsync.ko*",
	    info.uts.release);
	find_file(pattern, info.intree_file, sizeof(info.intree_file));

	/*
	 * A loadable module has an initstate file; a built-in driver has at
	 * most a /sys/module entry (for parameters or a version) and a line
	 * in /proc/misc.  srcversion exists only for some modules, so it
	 * does not decide anything.
	 */
	if (info.module_loaded && !info.mod_initstate[0])
		info.module_loaded = false;	/* built in, not a module */
	probe_installed();
	if (info.module_loaded && info.out_of_tree) {
		info.driver_kind = "out-of-tree";
		fmt(info.driver_text, sizeof(info.driver_text),
		    "ntsync %s, this project's out-of-tree module%s%s%s",
		    info.mod_version[0] ? info.mod_version : "(no version)",
		    info.dkms_file[0] ? " (DKMS: " : "",
		    info.dkms_file, info.dkms_file[0] ? ")" : "");
	} else if (info.module_loaded) {
		info.driver_kind = "in-tree";
		fmt(info.driver_text, sizeof(info.driver_text),
		    "the kernel's in-tree ntsync module%s%s%s",
		    info.intree_file[0] ? " (" : "", info.intree_file,
		    info.intree_file[0] ? ")" : "");
	} else if (path_exists("/sys/module/ntsync") || info.misc_registered) {
		/* Built-in drivers have no srcversion or taint file. */
		info.driver_kind = "built-in";
		fmt(info.driver_text, sizeof(info.driver_text),
		    "the kernel's ntsync driver, built into the kernel");
	} else if (info.exists) {
		info.driver_kind = "unknown";
		fmt(info.driver_text, sizeof(info.driver_text),
		    "unknown: %s exists but no ntsync driver is registered",
		    info.path);
	} else {
		info.driver_kind = "none";
		fmt(info.driver_text, sizeof(info.driver_text),
		    "none loaded");
	}
}
