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

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glob.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <ntsync.h>

#include "ntsync-users.h"
#include "tools-common.h"

#ifndef NTSYNC_INFO_VERSION
#error "NTSYNC_INFO_VERSION must be defined by the build"
#endif

#define EXIT_WORKING 0
#define EXIT_NOT_WORKING 1
#define EXIT_USAGE 2
#define EXIT_SECURE_BOOT 3

/* Upper bound for the checks that wait for a wake-up: a broken driver makes
 * a check fail, never hang the tool. */
#define WAKE_BOUND_NS UINT64_C(5000000000)

#define TEXT 256

enum result { PASS, FAIL, SKIP };

struct check {
	const char *name;
	enum result result;
	char detail[TEXT];
};

#define MAX_CHECKS 32

static struct {
	/* environment */
	const char *root;	/* prefix for /sys, /proc, /lib/modules (tests) */
	struct utsname uts;

	/* device node */
	const char *path;
	bool exists;
	bool chardev;
	unsigned int major, minor;
	unsigned int mode;
	int stat_errno;
	bool openable;
	int open_err;
	bool misc_registered;	/* "ntsync" in /proc/misc */

	/* driver */
	bool module_loaded;	/* /sys/module/ntsync exists */
	char mod_version[64];
	char mod_srcversion[64];
	char mod_taint[32];
	char mod_initstate[32];
	bool out_of_tree;
	char dkms_file[TEXT];
	char intree_file[TEXT];
	const char *driver_kind;
	char driver_text[TEXT * 2];

	/* live checks */
	struct check checks[MAX_CHECKS];
	int nchecks, passed, failed, skipped;

	/* who uses it */
	struct ntsync_users users;

	/* the system's ABI header, for emulator builds */
	const char *sys_header;		/* "missing", "incomplete", "complete" */
	bool uapi_header;		/* ntsync-uapi-dev's copy is installed */
	char header_text[TEXT * 2];

	/* Secure Boot and the key DKMS signs the module with */
	int sb_enabled;			/* TRI_YES, TRI_NO, TRI_UNKNOWN */
	char sb_text[TEXT];
	char lockdown[32];		/* "" when unknown */
	bool dkms_key;			/* DKMS_KEY exists */
	int key_enrolled;		/* in the MOK list or db */
	int key_pending;		/* in MokNew, the import request */
	bool mok_request;		/* MokNew exists (for whatever key) */
	bool no_mok_list;		/* EFI without MokListRT: no shim */
	char key_text[TEXT];
	const char *cause;		/* NULL, or why it does not work */

	bool working;
	char verdict[TEXT * 2];
	char hint[TEXT * 4];
} info;

#define SYS_HEADER "/usr/include/linux/ntsync.h"
#define UAPI_HEADER "/usr/include/ntsync-uapi/linux/ntsync.h"
/* The reminder about a running wineserver. */
#define WINESERVER_NOTE "a running wineserver keeps the choice it made when " \
	"it started: after loading the module, restart Wine (wineserver -k)"


/* ---- small helpers ---- */

static void fmt(char *buf, size_t len, const char *f, ...)
	__attribute__((format(printf, 3, 4)));

static void fmt(char *buf, size_t len, const char *f, ...)
{
	va_list ap;

	va_start(ap, f);
	vsnprintf(buf, len, f, ap);
	va_end(ap);
}

static void rooted(char *buf, size_t len, const char *path)
{
	fmt(buf, len, "%s%s", info.root, path);
}

/* Read the first line of a small file; false if it cannot be read. */
static bool read_line(const char *path, char *buf, size_t len)
{
	char full[TEXT * 2];
	FILE *f;

	rooted(full, sizeof(full), path);
	f = fopen(full, "re");
	if (!f)
		return false;
	if (!fgets(buf, (int)len, f)) {
		buf[0] = '\0';
		fclose(f);
		return true;	/* exists, empty (a taint file with no flags) */
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return true;
}

static bool path_exists(const char *path)
{
	char full[TEXT * 2];

	rooted(full, sizeof(full), path);
	return access(full, F_OK) == 0;
}

/* First file matching pattern (under root), without the root prefix. */
static bool find_file(const char *pattern, char *out, size_t len)
{
	char full[TEXT * 2];
	glob_t g;
	bool found = false;

	rooted(full, sizeof(full), pattern);
	if (glob(full, 0, NULL, &g) == 0 && g.gl_pathc > 0) {
		fmt(out, len, "%s", g.gl_pathv[0] + strlen(info.root));
		found = true;
	}
	globfree(&g);
	return found;
}

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

/* Kernel release as major*1000+minor, e.g. 6012 for 6.12.x. */
static int kernel_level(void)
{
	unsigned int maj = 0, min = 0;

	if (sscanf(info.uts.release, "%u.%u", &maj, &min) != 2)
		return 0;
	return (int)(maj * 1000 + min);
}

/* ---- the node and the driver ---- */

static void probe_device(void)
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

static void probe_driver(void)
{
	char pattern[TEXT * 2];

	info.module_loaded = path_exists("/sys/module/ntsync");
	if (info.module_loaded) {
		read_line("/sys/module/ntsync/version", info.mod_version,
			  sizeof(info.mod_version));
		read_line("/sys/module/ntsync/srcversion",
			  info.mod_srcversion, sizeof(info.mod_srcversion));
		read_line("/sys/module/ntsync/taint", info.mod_taint,
			  sizeof(info.mod_taint));
		read_line("/sys/module/ntsync/initstate", info.mod_initstate,
			  sizeof(info.mod_initstate));
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

/* ---- live checks ---- */

static struct check *check_begin(const char *name)
{
	struct check *c = &info.checks[info.nchecks++];

	c->name = name;
	c->result = PASS;
	c->detail[0] = '\0';
	return c;
}

static bool check_fail(struct check *c, const char *f, ...)
	__attribute__((format(printf, 2, 3)));

/* Record the first failure of a check; returns false for "if (!ok) return". */
static bool check_fail(struct check *c, const char *f, ...)
{
	va_list ap;

	if (c->result == FAIL)
		return false;
	c->result = FAIL;
	va_start(ap, f);
	vsnprintf(c->detail, sizeof(c->detail), f, ap);
	va_end(ap);
	return false;
}

static void check_skip(struct check *c, const char *why)
{
	c->result = SKIP;
	fmt(c->detail, sizeof(c->detail), "%s", why);
}

static const char *err_name(int neg)
{
	static char buf[64];
	const char *name = neg < 0 ? tc_errno_neg_name(-neg) : NULL;

	if (neg == 0)
		return "0";
	if (name)
		return name;
	if (neg < 0)
		fmt(buf, sizeof(buf), "-%d (%s)", -neg, strerror(-neg));
	else
		fmt(buf, sizeof(buf), "%d", neg);
	return buf;
}

/* ret must equal want, else the check fails naming the call. */
#define EXPECT(c, call, want) ({					\
	int ret_ = (call);						\
	ret_ == (want) ? true :						\
		check_fail((c), "%s returned %s, expected %s", #call,	\
			   err_name(ret_), err_name(want));		\
})

#define EXPECT_VAL(c, what, got, want) ({				\
	unsigned long long got_ = (got), want_ = (want);		\
	got_ == want_ ? true :						\
		check_fail((c), "%s is %llu, expected %llu", (what),	\
			   got_, want_);				\
})

#define EXPECT_FD(c, fd, call) ({					\
	(fd) = (call);							\
	(fd) >= 0 ? true :						\
		check_fail((c), "%s returned %s", #call, err_name(fd));	\
})

static void close_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

static struct ntsync_timeout poll_now(void)
{
	return ntsync_timeout_relative(0);
}

static void check_semaphore(struct ntsync_device *dev)
{
	struct check *c = check_begin("semaphore");
	uint32_t prev = 0, count = 0, max = 0, index = 99;
	int sem = -1;

	if (!EXPECT(c, ntsync_sem_create(dev, 2, 1), -EINVAL) ||
	    !EXPECT_FD(c, sem, ntsync_sem_create(dev, 1, 3)) ||
	    !EXPECT(c, ntsync_sem_release(sem, 1, &prev), 0) ||
	    !EXPECT_VAL(c, "previous count", prev, 1) ||
	    !EXPECT(c, ntsync_sem_release(sem, 2, &prev), -EOVERFLOW) ||
	    !EXPECT(c, ntsync_sem_read(sem, &count, &max), 0) ||
	    !EXPECT_VAL(c, "count", count, 2) ||
	    !EXPECT_VAL(c, "max", max, 3) ||
	    !EXPECT(c, ntsync_wait_any(dev, &sem, 1, 1, NTSYNC_NO_ALERT,
				       poll_now(), &index), 0) ||
	    !EXPECT_VAL(c, "wait index", index, 0) ||
	    !EXPECT(c, ntsync_sem_read(sem, &count, &max), 0) ||
	    !EXPECT_VAL(c, "count after wait", count, 1))
		goto out;
	fmt(c->detail, sizeof(c->detail), "create, release, read, acquire");
out:
	close_fds(&sem, 1);
}

static void check_mutex(struct ntsync_device *dev)
{
	struct check *c = check_begin("mutex");
	uint32_t owner = 0, count = 0, prev = 0, index = 99;
	int mtx = -1;

	if (!EXPECT(c, ntsync_mutex_create(dev, 0, 1), -EINVAL) ||
	    !EXPECT_FD(c, mtx, ntsync_mutex_create(dev, 5, 2)) ||
	    !EXPECT(c, ntsync_mutex_read(mtx, &owner, &count), 0) ||
	    !EXPECT_VAL(c, "owner", owner, 5) ||
	    !EXPECT_VAL(c, "count", count, 2) ||
	    !EXPECT(c, ntsync_mutex_unlock(mtx, 6, &prev), -EPERM) ||
	    !EXPECT(c, ntsync_mutex_unlock(mtx, 5, &prev), 0) ||
	    !EXPECT_VAL(c, "previous count", prev, 2) ||
	    !EXPECT(c, ntsync_wait_any(dev, &mtx, 1, 5, NTSYNC_NO_ALERT,
				       poll_now(), &index), 0) ||
	    !EXPECT(c, ntsync_mutex_read(mtx, &owner, &count), 0) ||
	    !EXPECT_VAL(c, "count after recursive acquire", count, 2) ||
	    !EXPECT(c, ntsync_wait_any(dev, &mtx, 1, 6, NTSYNC_NO_ALERT,
				       poll_now(), &index), -ETIMEDOUT))
		goto out;
	fmt(c->detail, sizeof(c->detail),
	    "create, unlock, read, recursive acquire, contention");
out:
	close_fds(&mtx, 1);
}

static void check_mutex_kill(struct ntsync_device *dev)
{
	struct check *c = check_begin("mutex-kill");
	uint32_t owner = 1, count = 1, index = 99;
	int mtx = -1;

	if (!EXPECT_FD(c, mtx, ntsync_mutex_create(dev, 7, 1)) ||
	    !EXPECT(c, ntsync_mutex_kill(mtx, 8), -EPERM) ||
	    !EXPECT(c, ntsync_mutex_kill(mtx, 7), 0) ||
	    !EXPECT(c, ntsync_mutex_read(mtx, &owner, &count), -EOWNERDEAD) ||
	    !EXPECT_VAL(c, "owner of abandoned mutex", owner, 0) ||
	    !EXPECT(c, ntsync_wait_any(dev, &mtx, 1, 9, NTSYNC_NO_ALERT,
				       poll_now(), &index), -EOWNERDEAD) ||
	    !EXPECT_VAL(c, "index with -EOWNERDEAD", index, 0) ||
	    !EXPECT(c, ntsync_mutex_read(mtx, &owner, &count), 0) ||
	    !EXPECT_VAL(c, "new owner", owner, 9))
		goto out;
	fmt(c->detail, sizeof(c->detail),
	    "kill, abandoned read, acquire with -EOWNERDEAD");
out:
	close_fds(&mtx, 1);
}

static void check_event(struct ntsync_device *dev)
{
	struct check *c = check_begin("event");
	bool prev = true, manual = false, signaled = true;
	uint32_t index = 99;
	int ev[2] = { -1, -1 };

	if (!EXPECT_FD(c, ev[0], ntsync_event_create(dev, true, false)) ||
	    !EXPECT_FD(c, ev[1], ntsync_event_create(dev, false, true)) ||
	    !EXPECT(c, ntsync_event_read(ev[0], &manual, &signaled), 0) ||
	    !EXPECT_VAL(c, "manual", manual, 1) ||
	    !EXPECT_VAL(c, "signaled", signaled, 0) ||
	    !EXPECT(c, ntsync_event_set(ev[0], &prev), 0) ||
	    !EXPECT_VAL(c, "state before set", prev, 0) ||
	    !EXPECT(c, ntsync_event_reset(ev[0], &prev), 0) ||
	    !EXPECT_VAL(c, "state before reset", prev, 1) ||
	    !EXPECT(c, ntsync_event_set(ev[0], NULL), 0) ||
	    !EXPECT(c, ntsync_event_pulse(ev[0], &prev), 0) ||
	    !EXPECT_VAL(c, "state before pulse", prev, 1) ||
	    !EXPECT(c, ntsync_event_read(ev[0], &manual, &signaled), 0) ||
	    !EXPECT_VAL(c, "signaled after pulse", signaled, 0) ||
	    /* auto-reset: one wait consumes the signal */
	    !EXPECT(c, ntsync_wait_any(dev, &ev[1], 1, 1, NTSYNC_NO_ALERT,
				       poll_now(), &index), 0) ||
	    !EXPECT(c, ntsync_event_read(ev[1], &manual, &signaled), 0) ||
	    !EXPECT_VAL(c, "auto-reset manual", manual, 0) ||
	    !EXPECT_VAL(c, "auto-reset signaled after wait", signaled, 0))
		goto out;
	fmt(c->detail, sizeof(c->detail),
	    "create, set, reset, pulse, read, auto-reset");
out:
	close_fds(ev, 2);
}

static void check_wait_any(struct ntsync_device *dev)
{
	struct check *c = check_begin("wait-any");
	uint32_t index = 99, count = 0, max = 0;
	int objs[3] = { -1, -1, -1 };

	if (!EXPECT_FD(c, objs[0], ntsync_sem_create(dev, 0, 1)) ||
	    !EXPECT_FD(c, objs[1], ntsync_event_create(dev, true, false)) ||
	    !EXPECT_FD(c, objs[2], ntsync_sem_create(dev, 1, 1)) ||
	    !EXPECT(c, ntsync_wait_any(dev, objs, 3, 1, NTSYNC_NO_ALERT,
				       poll_now(), &index), 0) ||
	    !EXPECT_VAL(c, "index", index, 2) ||
	    !EXPECT(c, ntsync_event_set(objs[1], NULL), 0) ||
	    !EXPECT(c, ntsync_sem_release(objs[2], 1, NULL), 0) ||
	    !EXPECT(c, ntsync_wait_any(dev, objs, 3, 1, NTSYNC_NO_ALERT,
				       poll_now(), &index), 0) ||
	    !EXPECT_VAL(c, "index (lowest signalled)", index, 1) ||
	    !EXPECT(c, ntsync_sem_read(objs[2], &count, &max), 0) ||
	    !EXPECT_VAL(c, "untouched semaphore count", count, 1))
		goto out;
	fmt(c->detail, sizeof(c->detail), "acquires exactly one, lowest index");
out:
	close_fds(objs, 3);
}

static void check_wait_all(struct ntsync_device *dev)
{
	struct check *c = check_begin("wait-all");
	uint32_t index = 99, count = 0, max = 0, owner = 0;
	int objs[3] = { -1, -1, -1 };

	if (!EXPECT_FD(c, objs[0], ntsync_sem_create(dev, 1, 2)) ||
	    !EXPECT_FD(c, objs[1], ntsync_mutex_create(dev, 0, 0)) ||
	    !EXPECT_FD(c, objs[2], ntsync_event_create(dev, false, false)) ||
	    !EXPECT(c, ntsync_wait_all(dev, objs, 3, 4, NTSYNC_NO_ALERT,
				       poll_now(), &index), -ETIMEDOUT) ||
	    !EXPECT(c, ntsync_sem_read(objs[0], &count, &max), 0) ||
	    !EXPECT_VAL(c, "semaphore count after failed wait", count, 1) ||
	    !EXPECT(c, ntsync_event_set(objs[2], NULL), 0) ||
	    !EXPECT(c, ntsync_wait_all(dev, objs, 3, 4, NTSYNC_NO_ALERT,
				       poll_now(), &index), 0) ||
	    !EXPECT_VAL(c, "index", index, 0) ||
	    !EXPECT(c, ntsync_sem_read(objs[0], &count, &max), 0) ||
	    !EXPECT_VAL(c, "semaphore count", count, 0) ||
	    !EXPECT(c, ntsync_mutex_read(objs[1], &owner, &count), 0) ||
	    !EXPECT_VAL(c, "mutex owner", owner, 4) ||
	    /* the same object twice is refused in wait-all */
	    !EXPECT(c, ntsync_wait_all(dev, (int[]){ objs[0], objs[0] }, 2, 4,
				       NTSYNC_NO_ALERT, poll_now(), &index),
		    -EINVAL))
		goto out;
	fmt(c->detail, sizeof(c->detail),
	    "all or nothing, acquires all, duplicates refused");
out:
	close_fds(objs, 3);
}

static void check_alert(struct ntsync_device *dev)
{
	struct check *c = check_begin("alert");
	uint32_t index = 99;
	int ev = -1, alert = -1;

	if (!EXPECT_FD(c, ev, ntsync_event_create(dev, false, false)) ||
	    !EXPECT_FD(c, alert, ntsync_event_create(dev, true, true)) ||
	    !EXPECT(c, ntsync_wait_any(dev, &ev, 1, 1, alert, poll_now(),
				       &index), 0) ||
	    !EXPECT_VAL(c, "wait-any index", index, 1) ||
	    !EXPECT(c, ntsync_wait_all(dev, &ev, 1, 1, alert, poll_now(),
				       &index), 0) ||
	    !EXPECT_VAL(c, "wait-all index", index, 1))
		goto out;
	fmt(c->detail, sizeof(c->detail), "alert ends waits with index == count");
out:
	close_fds(&ev, 1);
	close_fds(&alert, 1);
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void check_timeouts(struct ntsync_device *dev)
{
	struct check *c = check_begin("timeout");
	int ev = -1;

	if (!EXPECT_FD(c, ev, ntsync_event_create(dev, false, false)) ||
	    !EXPECT(c, ntsync_wait_any(dev, &ev, 1, 1, NTSYNC_NO_ALERT,
				       ntsync_timeout_relative(1000000), NULL),
		    -ETIMEDOUT) ||
	    !EXPECT(c, ntsync_wait_any(dev, &ev, 1, 1, NTSYNC_NO_ALERT,
				       ntsync_timeout_monotonic(
					       clock_ns(CLOCK_MONOTONIC)),
				       NULL), -ETIMEDOUT) ||
	    !EXPECT(c, ntsync_wait_all(dev, &ev, 1, 1, NTSYNC_NO_ALERT,
				       ntsync_timeout_realtime(
					       clock_ns(CLOCK_REALTIME) + 1000000),
				       NULL), -ETIMEDOUT))
		goto out;
	fmt(c->detail, sizeof(c->detail),
	    "relative, absolute MONOTONIC and REALTIME deadlines expire");
out:
	close_fds(&ev, 1);
}

struct waiter {
	struct ntsync_device *dev;
	int obj;
	int ret;
	uint32_t index;
	volatile pid_t tid;
};

static void *waiter_main(void *p)
{
	struct waiter *w = p;

	w->tid = (pid_t)syscall(SYS_gettid);
	w->ret = ntsync_wait_any(w->dev, &w->obj, 1, 1, NTSYNC_NO_ALERT,
				 ntsync_timeout_relative(WAKE_BOUND_NS),
				 &w->index);
	return NULL;
}

/* Whether thread tid of this process is asleep ('S' in its stat). */
static bool thread_sleeping(pid_t tid)
{
	char path[64], buf[TEXT], *p;
	FILE *f;
	bool sleeping = false;

	fmt(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return false;
	if (fgets(buf, sizeof(buf), f)) {
		p = strrchr(buf, ')');
		sleeping = p && p[1] == ' ' && p[2] == 'S';
	}
	fclose(f);
	return sleeping;
}

static void check_wake(struct ntsync_device *dev)
{
	struct check *c = check_begin("wake");
	struct waiter w = { dev, -1, -1, 99, 0 };
	struct timespec tick = { 0, 1000000 };
	bool slept = false;
	pthread_t t;
	int i, err;

	if (!EXPECT_FD(c, w.obj, ntsync_event_create(dev, false, false)))
		return;
	err = pthread_create(&t, NULL, waiter_main, &w);
	if (err) {
		check_skip(c, "cannot create a thread");
		close(w.obj);
		return;
	}
	/* Let the waiter fall asleep in the driver (bounded, ~2 s). */
	for (i = 0; i < 2000 && !slept; i++) {
		if (w.tid && thread_sleeping(w.tid))
			slept = true;
		else
			nanosleep(&tick, NULL);
	}
	EXPECT(c, ntsync_event_set(w.obj, NULL), 0);
	pthread_join(t, NULL);
	if (EXPECT(c, w.ret, 0) && EXPECT_VAL(c, "index", w.index, 0))
		fmt(c->detail, sizeof(c->detail), "%s",
		    slept ? "a sleeping waiter is woken by a set from another thread"
			  : "waiter woken (it was not seen asleep first)");
	close(w.obj);
}

static void check_instances(struct ntsync_device *dev)
{
	struct check *c = check_begin("instances");
	struct ntsync_device *other = NULL;
	int sem = -1, ret;

	ret = ntsync_open(info.path, &other);
	if (ret) {
		check_fail(c, "second open of %s failed: %s", info.path,
			   err_name(ret));
		return;
	}
	if (EXPECT_FD(c, sem, ntsync_sem_create(dev, 1, 1)) &&
	    EXPECT(c, ntsync_wait_any(other, &sem, 1, 1, NTSYNC_NO_ALERT,
				      poll_now(), NULL), -EINVAL))
		fmt(c->detail, sizeof(c->detail),
		    "objects of one instance refused by another");
	close_fds(&sem, 1);
	ntsync_close(other);
}

static void run_checks(void)
{
	struct ntsync_device *dev;
	int ret = ntsync_open(info.path, &dev);

	if (ret) {
		struct check *c = check_begin("open");

		check_fail(c, "%s", strerror(-ret));
		return;
	}
	check_semaphore(dev);
	check_mutex(dev);
	check_mutex_kill(dev);
	check_event(dev);
	check_wait_any(dev);
	check_wait_all(dev);
	check_alert(dev);
	check_timeouts(dev);
	check_wake(dev);
	check_instances(dev);
	ntsync_close(dev);
}

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
static void probe_header(void)
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

/* ---- Secure Boot and DKMS's signing key ---- */

/*
 * With Secure Boot on, Debian's kernels lock themselves down and load only
 * modules signed by a key they trust: the distribution's, or one enrolled
 * in shim's MOK list (MokListRT, which the kernel loads into its keyrings)
 * or in the firmware's db.  DKMS signs what it builds with
 * /var/lib/dkms/mok.key; its certificate, mok.pub (DER), is trusted only
 * after "mokutil --import" and a reboot through MokManager.  Everything
 * here is read from files any user may read where it can; what cannot be
 * read is reported as unknown, never guessed.
 */
enum { TRI_UNKNOWN = -1, TRI_NO = 0, TRI_YES = 1 };

#define EFI_DIR "/sys/firmware/efi"
#define EFIVARS EFI_DIR "/efivars/"
/* Since Linux 5.10, the MOK variables shim passed to the kernel. */
#define MOKVARS EFI_DIR "/mok-variables/"
#define GUID_GLOBAL "-8be4df61-93ca-11d2-aa0d-00e098032b8c"
#define GUID_SHIM "-605dab50-e046-4300-abb6-3dd810dd8b23"
#define GUID_SECURITY "-d719b2cb-3d3a-4596-a3bc-dad00e67656f"
#define LOCKDOWN "/sys/kernel/security/lockdown"
#define DKMS_KEY "/var/lib/dkms/mok.pub"
/* Larger than any MOK list, db or certificate. */
#define BLOB_MAX (1 << 20)

struct blob {
	unsigned char *data;
	size_t len;
};

/* Read a whole file (under root): 0, or -errno (-EFBIG past BLOB_MAX). */
static int read_blob(const char *path, struct blob *b)
{
	char full[TEXT * 2];
	size_t cap = 0;
	ssize_t n;
	int fd, err = 0;

	b->data = NULL;
	b->len = 0;
	rooted(full, sizeof(full), path);
	fd = open(full, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		if (b->len == cap) {
			unsigned char *p;

			if (cap >= BLOB_MAX) {
				err = -EFBIG;
				break;
			}
			cap = cap ? cap * 2 : 4096;
			p = realloc(b->data, cap);
			if (!p) {
				err = -ENOMEM;
				break;
			}
			b->data = p;
		}
		n = read(fd, b->data + b->len, cap - b->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		b->len += (size_t)n;
	}
	close(fd);
	if (err) {
		free(b->data);
		b->data = NULL;
		b->len = 0;
	}
	return err;
}

/*
 * An efivarfs file: 4 bytes of attributes, then the value.  0, or -errno
 * (-EINVAL for a file too short to hold the attributes).
 */
static int read_efivar(const char *name, struct blob *b)
{
	char path[TEXT];
	int err;

	fmt(path, sizeof(path), EFIVARS "%s", name);
	err = read_blob(path, b);
	if (err)
		return err;
	if (b->len < 4) {
		free(b->data);
		b->data = NULL;
		return -EINVAL;
	}
	memmove(b->data, b->data + 4, b->len - 4);
	b->len -= 4;
	return 0;
}

/* A one-byte EFI variable's value (0..255), or -errno. */
static int efivar_byte(const char *name)
{
	struct blob b;
	int ret = read_efivar(name, &b);

	if (ret)
		return ret;
	ret = b.len == 1 ? b.data[0] : -EINVAL;
	free(b.data);
	return ret;
}

/* Whether the efivarfs directory shows any variable (is it mounted?). */
static bool efivars_listed(void)
{
	char pattern[TEXT * 2];
	glob_t g;
	bool any;

	rooted(pattern, sizeof(pattern), EFIVARS "*-*");
	any = glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc > 0;
	globfree(&g);
	return any;
}

static void probe_sb_state(void)
{
	int sb, setup, moksb;

	info.sb_enabled = TRI_UNKNOWN;
	if (!path_exists(EFI_DIR)) {
		if (path_exists("/sys/firmware")) {
			info.sb_enabled = TRI_NO;
			fmt(info.sb_text, sizeof(info.sb_text),
			    "off (not booted through EFI firmware)");
		} else {
			fmt(info.sb_text, sizeof(info.sb_text),
			    "unknown (no /sys/firmware to look at)");
		}
		return;
	}
	sb = efivar_byte("SecureBoot" GUID_GLOBAL);
	if (sb == -ENOENT && efivars_listed()) {
		info.sb_enabled = TRI_NO;
		fmt(info.sb_text, sizeof(info.sb_text),
		    "off (the firmware has no SecureBoot variable)");
		return;
	}
	if (sb < 0 || sb > 1) {
		fmt(info.sb_text, sizeof(info.sb_text), "unknown (%s%s: %s)",
		    EFIVARS "SecureBoot", GUID_GLOBAL,
		    sb == -ENOENT ? "missing; is efivarfs mounted?" :
		    sb == -EINVAL ? "not one byte" :
		    sb >= 0 ? "an unexpected value" : strerror(-sb));
		return;
	}
	if (sb == 0) {
		info.sb_enabled = TRI_NO;
		fmt(info.sb_text, sizeof(info.sb_text), "off");
		return;
	}
	/* As the kernel's EFI stub decides: setup mode, or shim told not
	 * to validate (mokutil --disable-validation), means off. */
	setup = efivar_byte("SetupMode" GUID_GLOBAL);
	if (setup == 1) {
		info.sb_enabled = TRI_NO;
		fmt(info.sb_text, sizeof(info.sb_text),
		    "off (the firmware is in setup mode)");
		return;
	}
	moksb = efivar_byte("MokSBStateRT" GUID_SHIM);
	if (moksb == 1) {
		info.sb_enabled = TRI_NO;
		fmt(info.sb_text, sizeof(info.sb_text),
		    "off (validation is disabled in shim)");
		return;
	}
	info.sb_enabled = TRI_YES;
	fmt(info.sb_text, sizeof(info.sb_text), "on");
}

static void probe_lockdown(void)
{
	char line[TEXT], *open_br, *close_br;

	info.lockdown[0] = '\0';
	if (!read_line(LOCKDOWN, line, sizeof(line)))
		return;
	open_br = strchr(line, '[');
	close_br = open_br ? strchr(open_br, ']') : NULL;
	if (!close_br || close_br - open_br - 1 >= (int)sizeof(info.lockdown))
		return;
	*close_br = '\0';
	fmt(info.lockdown, sizeof(info.lockdown), "%s", open_br + 1);
}

/* Does the blob hold the key's bytes? */
static bool blob_has(const struct blob *b, const struct blob *key)
{
	return b->len >= key->len &&
	       memmem(b->data, b->len, key->data, key->len) != NULL;
}

/*
 * Search one variable for the key: TRI_YES, TRI_NO (read, not there), or
 * -errno (-ENOENT: no such variable).  efivar selects the efivarfs format.
 */
static int var_has_key(const char *path_or_name, bool efivar,
		       const struct blob *key)
{
	struct blob b;
	int ret;

	ret = efivar ? read_efivar(path_or_name, &b) :
		       read_blob(path_or_name, &b);
	if (ret)
		return ret;
	ret = blob_has(&b, key) ? TRI_YES : TRI_NO;
	free(b.data);
	return ret;
}

/*
 * The MOK list as the kernel sees it: /sys/firmware/efi/mok-variables/
 * MokListRT (root only), else shim's runtime copy in efivarfs, which shim
 * splits into MokListRT, MokListRT1, MokListRT2, ... when it is large.
 */
static int mok_list_has_key(const struct blob *key)
{
	char name[TEXT];
	int kernel, ret, i;

	kernel = var_has_key(MOKVARS "MokListRT", false, key);
	if (kernel == TRI_YES || kernel == TRI_NO)
		return kernel;
	for (i = 0; i < 64; i++) {
		if (i)
			fmt(name, sizeof(name), "MokListRT%d" GUID_SHIM, i);
		else
			fmt(name, sizeof(name), "MokListRT" GUID_SHIM);
		ret = var_has_key(name, true, key);
		if (ret == TRI_YES)
			return TRI_YES;
		if (ret == -ENOENT && i)
			return TRI_NO;
		if (ret == -ENOENT)	/* the kernel's copy may still exist */
			return kernel;
		if (ret != TRI_NO)
			return ret;
	}
	return TRI_NO;
}

static void probe_dkms_key(void)
{
	struct blob key, req;
	int mok, db, ret;

	info.key_enrolled = TRI_UNKNOWN;
	info.key_pending = TRI_UNKNOWN;
	ret = read_blob(DKMS_KEY, &key);
	info.dkms_key = ret != -ENOENT && ret != -ENOTDIR;
	if (!info.dkms_key) {
		fmt(info.key_text, sizeof(info.key_text), "none (no %s)",
		    DKMS_KEY);
		return;
	}
	if (ret) {
		fmt(info.key_text, sizeof(info.key_text),
		    "%s: not readable (%s)", DKMS_KEY, strerror(-ret));
		return;
	}
	/* A DER certificate is one SEQUENCE: 0x30 and a long length. */
	if (key.len < 16 || key.data[0] != 0x30) {
		fmt(info.key_text, sizeof(info.key_text),
		    "%s: not a DER certificate", DKMS_KEY);
		free(key.data);
		return;
	}

	if (info.sb_enabled == TRI_NO && !path_exists(EFI_DIR)) {
		free(key.data);
		fmt(info.key_text, sizeof(info.key_text),
		    "%s (no EFI firmware: nothing to enroll it in)", DKMS_KEY);
		return;
	}

	mok = mok_list_has_key(&key);
	db = var_has_key("db" GUID_SECURITY, true, &key);
	if (mok == TRI_YES || db == TRI_YES)
		info.key_enrolled = TRI_YES;
	else if (mok == TRI_NO)
		info.key_enrolled = TRI_NO;
	else if (mok == -ENOENT && info.sb_enabled != TRI_UNKNOWN &&
		 efivars_listed()) {
		/* Variables are readable, and shim left no MOK list: the
		 * machine boots without shim, so there is no MokManager. */
		info.key_enrolled = TRI_NO;
		info.no_mok_list = true;
	}

	/* mokutil --import writes the request to MokNew (mode 0600). */
	ret = read_efivar("MokNew" GUID_SHIM, &req);
	info.mok_request = ret != -ENOENT;
	if (ret == -ENOENT) {
		info.key_pending = TRI_NO;
	} else if (!ret) {
		info.key_pending = blob_has(&req, &key) ? TRI_YES : TRI_NO;
		free(req.data);
	}
	if (info.key_enrolled == TRI_YES)
		info.key_pending = TRI_NO;
	free(key.data);

	if (info.key_enrolled == TRI_YES)
		fmt(info.key_text, sizeof(info.key_text), "%s enrolled (%s)",
		    DKMS_KEY, mok == TRI_YES ? "in the MOK list" :
		    "in the firmware's db");
	else if (info.key_pending == TRI_YES)
		fmt(info.key_text, sizeof(info.key_text),
		    "%s not enrolled yet: its enrollment waits for the next "
		    "reboot (MokManager)", DKMS_KEY);
	else if (info.key_enrolled == TRI_NO)
		fmt(info.key_text, sizeof(info.key_text),
		    "%s not enrolled (%s)%s", DKMS_KEY,
		    info.no_mok_list ? "no MOK list: not booted through shim" :
		    "not in the MOK list",
		    info.key_pending == TRI_UNKNOWN ?
		    "; an enrollment request waits for the next reboot "
		    "(MokNew, readable by root only)" : "");
	else
		fmt(info.key_text, sizeof(info.key_text),
		    "%s: unknown whether enrolled (the MOK list is not "
		    "readable%s; run as root)", DKMS_KEY,
		    mok == -ENOENT ? ": no efivarfs" : " by this user");
}

static void probe_secure_boot(void)
{
	probe_sb_state();
	probe_lockdown();
	probe_dkms_key();
}

/* ---- verdict ---- */

/*
 * The module was built but is not loaded, and the kernel will refuse it:
 * Secure Boot is on, the kernel is not known to be unlocked, and DKMS's
 * key is known not to be enrolled.
 */
static bool secure_boot_refuses(void)
{
	return info.sb_enabled == TRI_YES &&
	       strcmp(info.lockdown, "none") != 0 &&
	       info.key_enrolled != TRI_YES &&
	       (info.key_enrolled == TRI_NO || info.key_pending == TRI_YES);
}

/* What the user sees in MokManager after the reboot. */
#define MOK_STEPS "reboot; when the blue MokManager screen says \"Press " \
	"any key to perform MOK management\", press a key within 10 " \
	"seconds, then choose \"Enroll MOK\" -> \"Continue\" -> \"Yes\", " \
	"type the password, and choose \"Reboot\"; after that reboot ntsync " \
	"loads by itself"

static void explain_secure_boot(void)
{
	if (info.key_pending == TRI_YES) {
		info.cause = "secure-boot-key-pending";
		fmt(info.verdict, sizeof(info.verdict),
		    "NOT WORKING: Secure Boot refuses the ntsync module until "
		    "DKMS's signing key (%s) is enrolled: its enrollment waits "
		    "for the next reboot", DKMS_KEY);
		fmt(info.hint, sizeof(info.hint),
		    "'mokutil --import %s' was run: " MOK_STEPS
		    " (the password is the one chosen at the import)",
		    DKMS_KEY);
		return;
	}
	info.cause = "secure-boot-key-not-enrolled";
	fmt(info.verdict, sizeof(info.verdict),
	    "NOT WORKING: Secure Boot refuses the ntsync module: DKMS's "
	    "signing key (%s) is not enrolled", DKMS_KEY);
	if (info.no_mok_list)
		fmt(info.hint, sizeof(info.hint),
		    "this machine boots without shim (there is no MOK list), "
		    "so MokManager cannot enroll the key: add %s to the "
		    "firmware's Secure Boot db with its setup tool, or turn "
		    "Secure Boot off", DKMS_KEY);
	else
		fmt(info.hint, sizeof(info.hint),
		    "enroll DKMS's key once: run 'sudo mokutil --import %s' "
		    "(package mokutil) and choose a one-time password, then "
		    MOK_STEPS "%s", DKMS_KEY,
		    info.mok_request && info.key_pending != TRI_NO ?
		    " (an enrollment request already waits for the next "
		    "reboot; ntsync-info as root tells whether it holds "
		    "this key)" : "");
}

static void decide(void)
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
}

/* ---- output ---- */

static const char *result_name(enum result r)
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

static void print_text(void)
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

static void json_str(const char *s)
{
	tc_json_str(stdout, s);
}

static void json_str_or_null(const char *s)
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

static void print_json(void)
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
