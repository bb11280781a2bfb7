/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Which processes have /dev/ntsync or ntsync objects open, from /proc: the
 * part of ntsync-info that answers "is Wine using it?".
 */
#ifndef NTSYNC_USERS_H
#define NTSYNC_USERS_H

#include <stdbool.h>

/* A name of /proc that is a process: digits only ("" is none). */
bool ntsync_users_is_pid_name(const char *s);

#define NTSYNC_USERS_MAX 64
#define NTSYNC_WINESERVERS_MAX 16

struct ntsync_user {
	int pid;
	char comm[32];		/* /proc/PID/comm */
	unsigned int device_fds;	/* descriptors of the device (instances) */
	unsigned int object_fds;	/* descriptors of ntsync objects */
	/* from /proc/PID/fdinfo, where the driver shows it (this project's
	 * module does; mainline's driver shows nothing): */
	unsigned int sems, mutexes, events;	/* objects by type */
	unsigned int typed;		/* objects whose type was shown */
	bool wineserver;
};

struct ntsync_users {
	unsigned int scanned;		/* processes looked at */
	unsigned int unreadable;	/* whose descriptors we may not read */
	unsigned int n;			/* users listed (at most ..._MAX) */
	unsigned int more;		/* users beyond the list */
	unsigned int device_fds, object_fds;	/* over all users */
	struct ntsync_user user[NTSYNC_USERS_MAX];
	/* wineserver processes without the device open */
	unsigned int nws_without;
	int ws_without[NTSYNC_WINESERVERS_MAX];
	bool proc_missing;		/* no /proc to look at */
};

/*
 * Scan ROOT/proc/[0-9]* /fd (root "" for the real one).  A descriptor is the
 * device if its link reads devpath or it stats as the character device
 * whose number devpath has; an object if its link reads
 * "anon_inode:ntsync", whose type /proc/PID/fdinfo gives where the driver
 * shows it ("ntsync-type:" lines of this project's module).  Processes whose fd directory cannot be read (other
 * users' without privilege) are counted in unreadable.
 */
void ntsync_users_scan(const char *root, const char *devpath,
		       struct ntsync_users *out);

#endif
