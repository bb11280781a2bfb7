// SPDX-License-Identifier: LGPL-2.1-or-later
/* ntsync-info: the verdict, the cause and the hint. */

#include "info.h"

/* ---- verdict ---- */

void decide(void)
{
	int level = kernel_level();

	for (int i = 0; i < info.nchecks; i++) {
		switch (info.checks[i].result) {
		case PASS: info.passed++; break;
		case FAIL: info.failed++; break;
		case SKIP: info.skipped++; break;
		}
	}

	if (!info.exists) {
		fmt(info.verdict, sizeof(info.verdict),
		    "NOT WORKING: %s does not exist", info.path);
		if (info.intree_file[0])
			fmt(info.hint, sizeof(info.hint),
			    "the kernel's own driver is installed (%s) but not "
			    "loaded: run 'modprobe ntsync' as root",
			    info.intree_file);
		else if (level >= 6014 && !info.dkms_file[0])
			fmt(info.hint, sizeof(info.hint),
			    "kernel %s is new enough for the in-tree driver "
			    "(6.14+) but no ntsync module is installed for it: "
			    "use a kernel built with CONFIG_NTSYNC", info.uts.release);
		else if (info.dkms_file[0] && secure_boot_refuses())
			explain_secure_boot();
		else if (info.dkms_file[0])
			fmt(info.hint, sizeof(info.hint),
			    "the module is installed (%s) but not loaded: "
			    "run 'modprobe ntsync' as root%s", info.dkms_file,
			    info.sb_enabled == TRI_YES &&
			    info.key_enrolled != TRI_YES ?
			    "; Secure Boot is on: if modprobe fails with 'Key "
			    "was rejected by service' or 'Operation not "
			    "permitted', DKMS's key is not enrolled "
			    "('mokutil --test-key " DKMS_KEY "' or ntsync-info "
			    "as root tells)" : "");
		else
			fmt(info.hint, sizeof(info.hint),
			    "install the ntsync-dkms package (it builds the "
			    "driver for kernel %s), then 'modprobe ntsync'",
			    info.uts.release);
	} else if (!info.chardev) {
		fmt(info.verdict, sizeof(info.verdict),
		    "NOT WORKING: %s is not a character device", info.path);
		fmt(info.hint, sizeof(info.hint),
		    "remove %s and reload the driver", info.path);
	} else if (!info.openable) {
		fmt(info.verdict, sizeof(info.verdict),
		    "NOT WORKING: %s cannot be opened by this user: %s",
		    info.path, strerror(-info.open_err));
		fmt(info.hint, sizeof(info.hint),
		    "the driver creates the node with mode 0666; check udev "
		    "rules and the node's permissions (mode %04o)", info.mode);
	} else if (info.failed) {
		fmt(info.verdict, sizeof(info.verdict),
		    "NOT WORKING: %d of %d live checks failed (driver: %s)",
		    info.failed, info.nchecks, info.driver_text);
		fmt(info.hint, sizeof(info.hint),
		    "the driver behind %s does not behave like ntsync; see the "
		    "failed checks above", info.path);
	} else {
		info.working = true;
		fmt(info.verdict, sizeof(info.verdict),
		    "WORKING: %s works, %d of %d live checks passed (driver: %s)",
		    info.path, info.passed, info.nchecks, info.driver_text);
	}
	if (info.hint[0] || !info.installed_state || !info.installed_state[0] ||
	    strcmp(info.installed_state, "same") == 0)
		return;
	if (strcmp(info.installed_state, "removed") == 0)
		fmt(info.hint, sizeof(info.hint),
		    "ntsync-dkms is removed but its module %s is still loaded: "
		    "to unload it, end every program using %s (Wine: "
		    "'wineserver -k'), then run 'rmmod ntsync' as root "
		    "('modprobe -r ntsync' answers 'Module ntsync not found': "
		    "the module's file is gone), or reboot",
		    info.mod_version, info.path);
	else
		fmt(info.hint, sizeof(info.hint),
		    "ntsync %s is loaded, ntsync-dkms %s is installed: to use "
		    "%s now, end every program using %s (Wine: 'wineserver "
		    "-k'), then run 'modprobe -r ntsync && modprobe ntsync' as "
		    "root; or reboot", info.mod_version, info.installed_version,
		    info.installed_version, info.path);
}
