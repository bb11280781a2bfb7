// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Processes using ntsync, from /proc/PID/fd.  The links tell the
 * descriptors apart: the device reads as its path (/dev/ntsync), every
 * object as "anon_inode:ntsync".  This project's module also shows each
 * object's type in /proc/PID/fdinfo/N ("ntsync-type:"); mainline's driver
 * shows nothing there, so the types are counted where they are shown.
 * Which instance a device descriptor is cannot be seen without kcmp(2) and
 * ptrace rights, so the scan does not group processes by instance.
 */

#include "ntsync-users.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define OBJECT_LINK "anon_inode:ntsync"

bool ntsync_users_is_pid_name(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

static void read_comm(const char *dir, char *comm, size_t len)
{
	char path[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/comm", dir);
	comm[0] = '\0';
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(comm, (int)len, f))
		comm[strcspn(comm, "\n")] = '\0';
	fclose(f);
}

static int by_pid(const void *a, const void *b)
{
	const struct ntsync_user *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

static int int_cmp(const void *a, const void *b)
{
	const int *x = a, *y = b;

	return (*x > *y) - (*x < *y);
}

/* The "ntsync-type:" of an object descriptor's fdinfo, or "" */
static void object_type(const char *dir, const char *fd, char *type,
			size_t len)
{
	char path[1100], line[128];
	FILE *f;

	type[0] = '\0';
	snprintf(path, sizeof(path), "%s/fdinfo/%s", dir, fd);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "ntsync-type:", 12)) {
			const char *v = line + 12;

			v += strspn(v, " \t");
			snprintf(type, len, "%.*s", (int)strcspn(v, "\n"), v);
			break;
		}
	}
	fclose(f);
}

void ntsync_users_scan(const char *root, const char *devpath,
		       struct ntsync_users *out)
{
	char procdir[512];
	struct stat devst;
	bool have_rdev;
	DIR *proc;
	struct dirent *pe;

	memset(out, 0, sizeof(*out));
	have_rdev = stat(devpath, &devst) == 0 && S_ISCHR(devst.st_mode);
	snprintf(procdir, sizeof(procdir), "%s/proc", root);
	proc = opendir(procdir);
	if (!proc) {
		out->proc_missing = true;
		return;
	}
	while ((pe = readdir(proc))) {
		struct ntsync_user u = { 0 };
		char dir[768], fddir[800];
		struct dirent *fe;
		DIR *fds;

		if (!ntsync_users_is_pid_name(pe->d_name))
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", procdir, pe->d_name);
		snprintf(fddir, sizeof(fddir), "%s/fd", dir);
		u.pid = atoi(pe->d_name);
		read_comm(dir, u.comm, sizeof(u.comm));
		/* comm is cut at 15 bytes: "wineserver" or e.g. "wineserver64" */
		u.wineserver = strncmp(u.comm, "wineserver", 10) == 0;
		out->scanned++;
		fds = opendir(fddir);
		if (!fds) {
			if (errno == EACCES || errno == EPERM)
				out->unreadable++;
			else
				out->scanned--;	/* exited meanwhile */
			continue;
		}
		while ((fe = readdir(fds))) {
			char fdpath[1100], link[256];
			struct stat st;
			ssize_t n;

			if (!ntsync_users_is_pid_name(fe->d_name))
				continue;
			snprintf(fdpath, sizeof(fdpath), "%s/%s", fddir, fe->d_name);
			n = readlink(fdpath, link, sizeof(link) - 1);
			if (n < 0)
				continue;
			link[n] = '\0';
			if (strcmp(link, OBJECT_LINK) == 0) {
				char type[16];

				u.object_fds++;
				object_type(dir, fe->d_name, type, sizeof(type));
				u.sems += !strcmp(type, "semaphore");
				u.mutexes += !strcmp(type, "mutex");
				u.events += !strcmp(type, "event");
				u.typed += type[0] != '\0';
			} else if (strcmp(link, devpath) == 0)
				u.device_fds++;
			else if (have_rdev && link[0] == '/' &&
				 stat(fdpath, &st) == 0 && S_ISCHR(st.st_mode) &&
				 st.st_rdev == devst.st_rdev)
				u.device_fds++;	/* the node under another name */
		}
		closedir(fds);
		if (u.wineserver && !u.device_fds &&
		    out->nws_without < NTSYNC_WINESERVERS_MAX)
			out->ws_without[out->nws_without++] = u.pid;
		if (!u.device_fds && !u.object_fds)
			continue;
		out->device_fds += u.device_fds;
		out->object_fds += u.object_fds;
		if (out->n < NTSYNC_USERS_MAX)
			out->user[out->n++] = u;
		else
			out->more++;
	}
	closedir(proc);
	qsort(out->user, out->n, sizeof(out->user[0]), by_pid);
	qsort(out->ws_without, out->nws_without, sizeof(int), int_cmp);
}
