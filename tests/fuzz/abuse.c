// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ntsync-abuse: fault and abuse tests for /dev/ntsync.
 *
 *   kill-blocked    processes SIGKILLed while blocked in WAIT_ANY/WAIT_ALL;
 *                   the objects are untouched and usable afterwards, and a
 *                   waiter blocked on a mutex whose owner is killed
 *                   (MUTEX_KILL) wakes with EOWNERDEAD
 *   signal-storm    thousands of signals at a thread blocked in waits, with
 *                   and without SA_RESTART, while the semaphore is released:
 *                   every release is acquired exactly once, none lost
 *   close-device    the device descriptor (and object descriptors) closed
 *                   while objects live and waits sleep on them
 *   emfile          RLIMIT_NOFILE exhausted: creates fail with EMFILE and
 *                   leave no descriptor behind
 *   failslab        slab allocation failures injected into creates, waits
 *                   and releases (needs /sys/kernel/debug/failslab, root):
 *                   ENOMEM or success, nothing leaked, state unchanged
 *   cycles          --cycles N create/wait/close cycles; slab usage returns
 *                   to its baseline and no descriptor is left
 *
 * `ntsync-abuse [--cycles N] [TEST...]` runs the named tests (default: all)
 * and ends with the line `N passed, N failed, N skipped`.  Exit 0 when none
 * failed, 1 otherwise, 77 when /dev/ntsync is missing.
 *
 * Raw ioctls against the project's <linux/ntsync.h>; no libntsync.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/ntsync.h>

#include "ntsync-raw.h"
#include "tools-common.h"

#define SKIP 77
#define NS 1000000000ull

static const char *device_path = "/dev/ntsync";
static unsigned long opt_cycles = 1000000;
static const char *cur_test;
static int cur_failed;

static void tfail(const char *fmt, ...)
{
	va_list ap;

	cur_failed++;
	printf("  FAIL %s: ", cur_test);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

#define CHECK(cond, ...) do { if (!(cond)) tfail(__VA_ARGS__); } while (0)

static long xioctl(int fd, unsigned long cmd, void *arg)
{
	return ntr_neg(ioctl(fd, cmd, arg));
}

static uint64_t mono_ns(void)
{
	return tc_now_ns(CLOCK_MONOTONIC);
}

static int open_dev(void)
{
	int fd = ntr_open_path(device_path);

	if (fd < 0) {
		tfail("open %s: %s", device_path, strerror(errno));
		exit(1);
	}
	return fd;
}

static int create_sem(int dev, uint32_t count, uint32_t max)
{
	long fd = ntr_neg(ntr_create_sem(dev, count, max));

	if (fd < 0)
		tfail("CREATE_SEM(%u, %u): %s", count, max, strerror((int)-fd));
	return (int)fd;
}

static int create_mutex(int dev, uint32_t owner, uint32_t count)
{
	long fd = ntr_neg(ntr_create_mutex(dev, owner, count));

	if (fd < 0)
		tfail("CREATE_MUTEX(%u, %u): %s", owner, count, strerror((int)-fd));
	return (int)fd;
}

static int create_event(int dev, uint32_t manual, uint32_t signaled)
{
	long fd = ntr_neg(ntr_create_event(dev, manual, signaled));

	if (fd < 0)
		tfail("CREATE_EVENT(%u, %u): %s", manual, signaled, strerror((int)-fd));
	return (int)fd;
}

static long wait_objs(int dev, bool all, const int *fds, uint32_t n, uint32_t owner,
		      uint64_t timeout, int alert, uint32_t *index)
{
	return ntr_neg(ntr_wait(dev, all, fds, n, owner,
				alert > 0 ? (uint32_t)alert : 0, 0, timeout, index));
}

static uint32_t sem_count(int fd)
{
	uint32_t count;
	long ret = ntr_neg(ntr_sem_read(fd, &count, NULL));

	if (ret)
		tfail("SEM_READ: %s", strerror((int)-ret));
	return count;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;	/* the directory's own descriptor */
}

/* Wait (bounded) until a task sleeps in the kernel: state 'S'. */
static bool wait_sleeping_path(const char *path)
{
	char buf[256];

	for (int i = 0; i < 3000; i++) {
		FILE *f = fopen(path, "r");
		char *p;

		if (f) {
			size_t n = fread(buf, 1, sizeof(buf) - 1, f);

			fclose(f);
			buf[n] = 0;
			p = strrchr(buf, ')');
			if (p && p[1] == ' ' && p[2] == 'S')
				return true;
		}
		usleep(10000);
	}
	return false;
}

static bool wait_sleeping(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	return wait_sleeping_path(path);
}

static bool thread_sleeping(volatile pid_t *tid)
{
	char path[64];

	for (int i = 0; i < 3000 && !*tid; i++)
		usleep(1000);
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)*tid);
	return wait_sleeping_path(path);
}

/* ----------------------------------------------------------- kill-blocked */

static int test_kill_blocked(void)
{
	int dev = open_dev();
	int sem = create_sem(dev, 0, 2), mutex = create_mutex(dev, 5, 1), ev = create_event(dev, 0, 0);
	pid_t a, b, c;
	int st;

	if (sem < 0 || mutex < 0 || ev < 0)
		return 1;
	a = fork();
	if (a == 0) {
		int objs[] = { sem, ev };

		wait_objs(dev, false, objs, 2, 3, UINT64_MAX, 0, NULL);
		_exit(10);	/* not reached unless woken */
	}
	b = fork();
	if (b == 0) {
		int objs[] = { sem, mutex, ev };

		wait_objs(dev, true, objs, 3, 9, UINT64_MAX, 0, NULL);
		_exit(10);
	}
	c = fork();
	if (c == 0) {
		int objs[] = { mutex };
		uint32_t idx;
		long ret = wait_objs(dev, false, objs, 1, 7, UINT64_MAX, 0, &idx);

		_exit(ret == -EOWNERDEAD && idx == 0 ? 0 : 20);
	}
	CHECK(wait_sleeping(a) && wait_sleeping(b) && wait_sleeping(c), "waiters never went to sleep");
	kill(a, SIGKILL);
	kill(b, SIGKILL);
	waitpid(a, &st, 0);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "WAIT_ANY waiter: status 0x%x, not killed", st);
	waitpid(b, &st, 0);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "WAIT_ALL waiter: status 0x%x, not killed", st);

	/* the owner dies: MUTEX_KILL wakes the third waiter with EOWNERDEAD */
	{
		uint32_t owner = 5;
		long ret = xioctl(mutex, NTSYNC_IOC_MUTEX_KILL, &owner);

		CHECK(ret == 0, "MUTEX_KILL: %s", strerror((int)-ret));
		waitpid(c, &st, 0);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "waiter on killed mutex: status 0x%x (want EOWNERDEAD, index 0)", st);
	}
	/* the killed waiters took nothing; everything still works */
	{
		uint32_t n = 1, idx;
		struct ntsync_mutex_args m = { 0xcccccccc, 0xcccccccc };
		int objs[] = { sem, mutex };
		long ret;

		CHECK(sem_count(sem) == 0, "semaphore count %u after killed waiters", sem_count(sem));
		ret = xioctl(sem, NTSYNC_IOC_SEM_RELEASE, &n);
		CHECK(ret == 0 && n == 0, "SEM_RELEASE: %ld prev %u", ret, n);
		CHECK(sem_count(sem) == 1, "released count stolen by a dead waiter: %u", sem_count(sem));
		ret = xioctl(mutex, NTSYNC_IOC_MUTEX_READ, &m);
		CHECK(ret == 0 && m.owner == 7 && m.count == 1, "mutex: %ld owner %u count %u (want owner 7 count 1)",
		      ret, m.owner, m.count);
		m.owner = 7;
		ret = xioctl(mutex, NTSYNC_IOC_MUTEX_UNLOCK, &m);
		CHECK(ret == 0, "MUTEX_UNLOCK by 7: %ld", ret);
		ret = wait_objs(dev, true, objs, 2, 9, 0, 0, &idx);
		CHECK(ret == 0 && idx == 0, "WAIT_ALL after the kills: %ld index %u", ret, idx);
	}
	close(sem);
	close(mutex);
	close(ev);
	close(dev);
	return 0;
}

/* ----------------------------------------------------------- signal-storm */

struct storm {
	int dev, sem, mutex;
	unsigned want;
	volatile unsigned got, eintr;
	volatile int done;
	long bad;
};

static void on_signal(int sig)
{
	(void)sig;
}

static void *storm_waiter(void *arg)
{
	struct storm *s = arg;

	while (s->got < s->want) {
		int objs[2] = { s->sem, s->mutex };
		bool all = s->got & 1;
		uint32_t idx;
		long ret = wait_objs(s->dev, all, objs, all ? 2 : 1, 42, mono_ns() + 60 * NS, 0, &idx);

		if (ret == 0) {
			s->got++;
			if (all) {
				struct ntsync_mutex_args m = { .owner = 42 };

				if (xioctl(s->mutex, NTSYNC_IOC_MUTEX_UNLOCK, &m))
					s->bad = -1000;
			}
		} else if (ret == -EINTR) {
			s->eintr++;
		} else {
			s->bad = ret;
			break;
		}
	}
	s->done = 1;
	return NULL;
}

static void storm_once(bool restart)
{
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = restart ? SA_RESTART : 0 };
	struct storm s = { .want = 300 };
	unsigned released = 0, signals = 0;
	pthread_t t;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	s.dev = open_dev();
	s.sem = create_sem(s.dev, 0, 4);
	s.mutex = create_mutex(s.dev, 0, 0);
	pthread_create(&t, NULL, storm_waiter, &s);
	while (!s.done) {
		pthread_kill(t, SIGUSR1);
		signals++;
		if (signals % 8 == 0 && released < s.want) {
			uint32_t n = 1;
			long ret = xioctl(s.sem, NTSYNC_IOC_SEM_RELEASE, &n);

			if (ret == 0)
				released++;
			else if (ret != -EOVERFLOW)
				tfail("SEM_RELEASE: %s", strerror((int)-ret));
		}
		if (signals % 64 == 0)
			sched_yield();
	}
	pthread_join(t, NULL);
	CHECK(!s.bad, "%s: a wait failed with %ld", restart ? "SA_RESTART" : "no SA_RESTART", s.bad);
	CHECK(s.got == released, "%s: %u releases but %u acquisitions", restart ? "SA_RESTART" : "plain", released, s.got);
	CHECK(sem_count(s.sem) == 0, "count %u left over", sem_count(s.sem));
	printf("  %s: %u signals, %u EINTR, %u acquisitions of %u releases\n",
	       restart ? "SA_RESTART" : "plain", signals, s.eintr, s.got, released);
	close(s.sem);
	close(s.mutex);
	close(s.dev);
	signal(SIGUSR1, SIG_DFL);
}

static int test_signal_storm(void)
{
	storm_once(false);
	storm_once(true);
	return 0;
}

/* ----------------------------------------------------------- close-device */

struct closer { int dev; int objs[2]; int n; uint64_t timeout; int alert; long ret; uint32_t idx; volatile pid_t tid; };

static void *closer_waiter(void *arg)
{
	struct closer *c = arg;

	c->tid = (pid_t)syscall(SYS_gettid);

	c->ret = wait_objs(c->dev, false, c->objs, c->n, 1, c->timeout, c->alert, &c->idx);
	return NULL;
}

static int test_close_device(void)
{
	/* 1. objects outlive the device descriptor */
	{
		int dev = open_dev();
		int sem = create_sem(dev, 1, 3), ev = create_event(dev, 1, 0), mtx = create_mutex(dev, 0, 0);
		uint32_t n = 2;
		long ret;

		close(dev);
		ret = xioctl(sem, NTSYNC_IOC_SEM_RELEASE, &n);
		CHECK(ret == 0 && n == 1, "SEM_RELEASE after the device closed: %ld prev %u", ret, n);
		ret = xioctl(ev, NTSYNC_IOC_EVENT_SET, &n);
		CHECK(ret == 0 && n == 0, "EVENT_SET after the device closed: %ld prev %u", ret, n);
		n = 3;
		ret = xioctl(mtx, NTSYNC_IOC_MUTEX_KILL, &n);
		CHECK(ret == -EPERM, "MUTEX_KILL of an unowned mutex: %ld", ret);
		close(sem);
		close(ev);
		close(mtx);
	}
	/* 2. a wait sleeps while the device and its object fds are closed: it times out */
	{
		struct closer c = { .dev = open_dev(), .n = 2, .alert = 0 };
		pthread_t t;

		c.objs[0] = create_sem(c.dev, 0, 1);
		c.objs[1] = create_event(c.dev, 1, 0);
		c.timeout = mono_ns() + NS / 2;
		pthread_create(&t, NULL, closer_waiter, &c);
		CHECK(thread_sleeping(&c.tid), "the waiter never went to sleep");
		close(c.objs[0]);
		close(c.objs[1]);
		close(c.dev);
		pthread_join(t, NULL);
		CHECK(c.ret == -ETIMEDOUT || c.ret == -EINVAL,
		      "wait on closed objects: %ld (want ETIMEDOUT, or EINVAL if closed before the lookup)", c.ret);
	}
	/* 3. the device closed under a sleeping wait; a dup of the event wakes it */
	{
		struct closer c = { .dev = open_dev(), .n = 1 };
		pthread_t t;
		int keep;
		uint32_t prev;
		long ret;

		c.objs[0] = create_sem(c.dev, 0, 1);
		c.alert = create_event(c.dev, 0, 0);
		keep = dup(c.alert);
		c.timeout = UINT64_MAX;
		pthread_create(&t, NULL, closer_waiter, &c);
		CHECK(thread_sleeping(&c.tid), "the waiter never went to sleep");
		close(c.dev);
		close(c.alert);
		close(c.objs[0]);
		ret = xioctl(keep, NTSYNC_IOC_EVENT_SET, &prev);
		CHECK(ret == 0, "EVENT_SET on the surviving dup: %ld", ret);
		pthread_join(t, NULL);
		CHECK(c.ret == 0 && c.idx == 1, "alert wake after the device closed: %ld index %u (want 0, 1)", c.ret, c.idx);
		close(keep);
	}
	return 0;
}

/* ---------------------------------------------------------------- emfile */

static int test_emfile(void)
{
	struct rlimit old, lim;
	int dev = open_dev(), base = count_fds(), fds[64], n = 0;
	long ret = 0;

	getrlimit(RLIMIT_NOFILE, &old);
	lim = old;
	lim.rlim_cur = dev + 20;
	if (setrlimit(RLIMIT_NOFILE, &lim)) {
		tfail("setrlimit: %s", strerror(errno));
		return 1;
	}
	while (n < 64) {
		switch (n % 3) {
		case 0: { struct ntsync_sem_args a = { 0, 1 }; ret = xioctl(dev, NTSYNC_IOC_CREATE_SEM, &a); break; }
		case 1: { struct ntsync_mutex_args a = { 0, 0 }; ret = xioctl(dev, NTSYNC_IOC_CREATE_MUTEX, &a); break; }
		default: { struct ntsync_event_args a = { 0, 0 }; ret = xioctl(dev, NTSYNC_IOC_CREATE_EVENT, &a); break; }
		}
		if (ret < 0)
			break;
		fds[n++] = (int)ret;
	}
	CHECK(ret == -EMFILE, "create past RLIMIT_NOFILE: %s (want EMFILE)", strerror((int)-ret));
	/* all three kinds refused, and a wait still works at the limit */
	{
		struct ntsync_mutex_args m = { 0, 0 };
		struct ntsync_event_args e = { 0, 0 };

		ret = xioctl(dev, NTSYNC_IOC_CREATE_MUTEX, &m);
		CHECK(ret == -EMFILE, "CREATE_MUTEX at the limit: %ld", ret);
		ret = xioctl(dev, NTSYNC_IOC_CREATE_EVENT, &e);
		CHECK(ret == -EMFILE, "CREATE_EVENT at the limit: %ld", ret);
		if (n) {
			uint32_t idx;

			ret = wait_objs(dev, false, fds, 1, 1, 0, 0, &idx);
			CHECK(ret == -ETIMEDOUT, "WAIT_ANY at the limit: %ld", ret);
		}
	}
	printf("  %d objects created before EMFILE\n", n);
	while (n)
		close(fds[--n]);
	setrlimit(RLIMIT_NOFILE, &old);
	CHECK(count_fds() == base, "descriptors: %d before, %d after", base, count_fds());
	close(dev);
	return 0;
}

/* -------------------------------------------------------------- failslab */

#define FS "/sys/kernel/debug/failslab/"

static int put(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	close(fd);
	return n < 0 ? -errno : 0;
}

static long get_long(const char *path)
{
	char buf[64] = "";
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0)
		buf[n] = 0;
	return strtol(buf, NULL, 10);
}

enum fs_op { FS_SEM, FS_MUTEX, FS_EVENT, FS_ANY, FS_ALL, FS_RELEASE, FS_ANY_BIG, FS_ALL_BIG, FS_OPEN, FS_NOPS };
static const char *const fs_names[] = {
	"CREATE_SEM", "CREATE_MUTEX", "CREATE_EVENT", "WAIT_ANY", "WAIT_ALL", "SEM_RELEASE",
	"WAIT_ANY of 12 that must queue", "WAIT_ALL of 12", "open of the device",
};

/*
 * Waits of up to 8 objects keep their queue on the kernel stack, and a
 * wait-any that can acquire at once never queues: only these allocate.
 * big[]: 12 semaphores, count 0 for the wait-any (it queues, then times
 * out 50 ms later; a deadline that passes before the wait is set up
 * returns ETIMEDOUT without allocating, and a KASAN kernel under TCG needs
 * milliseconds to get there) and count 1 for the wait-all (it acquires
 * all twelve).
 */
#define FS_BIG 12

/* Bring every semaphore of big[] (maximum 1) to count want; say what it found. */
static uint32_t fs_big_set(int dev, const int *big, uint32_t want)
{
	uint32_t total = 0;

	for (int i = 0; i < FS_BIG; i++) {
		uint32_t c = sem_count(big[i]), n = 1;

		total += c;
		if (c < want)
			xioctl(big[i], NTSYNC_IOC_SEM_RELEASE, &n);
		else if (c > want)
			wait_objs(dev, false, &big[i], 1, 7, 0, 0, NULL);
	}
	return total;
}

static int test_failslab(void)
{
	int dev, objs[3], big[FS_BIG], injected_total = 0, mif;

	if (access(FS "probability", W_OK)) {
		printf("  no %s (needs CONFIG_FAILSLAB, CONFIG_FAULT_INJECTION_DEBUG_FS, debugfs mounted, root)\n", FS);
		return SKIP;
	}
	if (put(FS "verbose", "0") || put(FS "ignore-gfp-wait", "N") || put(FS "task-filter", "Y") ||
	    put(FS "interval", "1") || put(FS "probability", "100")) {
		tfail("cannot configure %s", FS);
		return 1;
	}
	/*
	 * make-it-fail is written through a descriptor opened beforehand: an
	 * open() inside the window would itself allocate, take the one
	 * injected failure and leave the flag set.
	 */
	mif = open("/proc/thread-self/make-it-fail", O_WRONLY | O_CLOEXEC);
	if (mif < 0) {
		tfail("open /proc/thread-self/make-it-fail: %s", strerror(errno));
		return 1;
	}
	dev = open_dev();
	objs[0] = create_sem(dev, 1, 5);
	objs[1] = create_event(dev, 1, 1);
	objs[2] = create_mutex(dev, 0, 0);
	for (int i = 0; i < FS_BIG; i++)
		big[i] = create_sem(dev, 0, 1);
	for (int op = 0; op < FS_NOPS; op++) {
		int injected = 0, enomem = 0;

		if (op == FS_ALL_BIG)
			fs_big_set(dev, big, 1);

		for (long space = 0; space < 65536; space += 8) {
			char sp[32];
			int base = count_fds();
			long ret;
			uint32_t idx = 0, n = 1;

			snprintf(sp, sizeof(sp), "%ld", space);
			put(FS "space", sp);
			put(FS "times", "1");
			if (pwrite(mif, "1", 1, 0) != 1)
				tfail("make-it-fail: %s", strerror(errno));
			switch (op) {
			case FS_SEM: { struct ntsync_sem_args a = { 0, 1 }; ret = xioctl(dev, NTSYNC_IOC_CREATE_SEM, &a); break; }
			case FS_MUTEX: { struct ntsync_mutex_args a = { 3, 1 }; ret = xioctl(dev, NTSYNC_IOC_CREATE_MUTEX, &a); break; }
			case FS_EVENT: { struct ntsync_event_args a = { 1, 0 }; ret = xioctl(dev, NTSYNC_IOC_CREATE_EVENT, &a); break; }
			case FS_ANY: ret = wait_objs(dev, false, objs, 3, 7, 0, 0, &idx); break;
			case FS_ALL: ret = wait_objs(dev, true, objs, 3, 7, 0, 0, &idx); break;
			case FS_ANY_BIG: ret = wait_objs(dev, false, big, FS_BIG, 7, mono_ns() + NS / 20, 0, &idx); break;
			case FS_ALL_BIG: ret = wait_objs(dev, true, big, FS_BIG, 7, 0, 0, &idx); break;
			case FS_OPEN: ret = open(device_path, O_RDWR | O_CLOEXEC); ret = ret < 0 ? -errno : ret; break;
			default: ret = xioctl(objs[0], NTSYNC_IOC_SEM_RELEASE, &n); break;
			}
			if (pwrite(mif, "0", 1, 0) != 1)
				tfail("make-it-fail: %s", strerror(errno));
			bool clean = get_long(FS "times") == 1;

			if (op == FS_ANY_BIG && ret == -ETIMEDOUT)
				ret = 0;	/* the outcome without a failure: nothing was signaled */

			if (clean) {
				/* nothing injected: the op must succeed; it is undone below */
				if (ret < 0)
					tfail("%s without injection: %s", fs_names[op], strerror((int)-ret));
			} else {
				injected++;
			}
			if (ret == -ENOMEM)
				enomem++;
			else if (ret < 0 && !clean)
				tfail("%s with a failed allocation after %ld bytes: %s (want ENOMEM or success)",
				      fs_names[op], space, strerror((int)-ret));
			if (op <= FS_EVENT || op == FS_OPEN) {
				if (ret >= 0)
					close((int)ret);
				else
					CHECK(count_fds() == base, "%s failed but left a descriptor (%d -> %d)",
					      fs_names[op], base, count_fds());
			} else if (op == FS_ANY_BIG || op == FS_ALL_BIG) {
				/* ANY: nothing to acquire either way; ALL: all twelve or none */
				uint32_t want = op == FS_ALL_BIG && ret < 0 ? FS_BIG : 0;
				uint32_t was = fs_big_set(dev, big, op == FS_ALL_BIG ? 1 : 0);

				CHECK(was == want, "%s returned %ld: the twelve counts add up to %u, want %u",
				      fs_names[op], ret, was, want);
				CHECK(ret < 0 || op == FS_ANY_BIG || idx == 0, "%s: index %u", fs_names[op], idx);
			} else if (op == FS_RELEASE) {
				uint32_t c = sem_count(objs[0]);

				CHECK(ret == 0 ? c == 2 : c == 1, "SEM_RELEASE %ld: count %u", ret, c);
				if (ret == 0) {
					int one[1] = { objs[0] };

					wait_objs(dev, false, one, 1, 7, 0, 0, NULL);
				}
			} else {
				struct ntsync_mutex_args m = { 0xcccccccc, 0xcccccccc };
				uint32_t c = sem_count(objs[0]);

				xioctl(objs[2], NTSYNC_IOC_MUTEX_READ, &m);
				if (ret == 0) {
					/* acquired (ANY: the semaphore; ALL: all three): give it back */
					uint32_t want_owner = op == FS_ALL ? 7 : 0;

					CHECK(c == 0 && m.owner == want_owner && idx == 0,
					      "%s succeeded but state is count %u owner %u index %u",
					      fs_names[op], c, m.owner, idx);
					n = 1;
					xioctl(objs[0], NTSYNC_IOC_SEM_RELEASE, &n);
					m.owner = 7;
					if (op == FS_ALL)
						xioctl(objs[2], NTSYNC_IOC_MUTEX_UNLOCK, &m);
				} else {
					CHECK(c == 1 && m.owner == 0, "%s failed (%ld) but state changed: count %u owner %u",
					      fs_names[op], ret, c, m.owner);
				}
			}
			if (clean)
				break;
		}
		printf("  %s: %d allocation failures injected, %d returned ENOMEM\n", fs_names[op], injected, enomem);
		injected_total += injected;
	}
	put(FS "probability", "0");
	put(FS "times", "1");
	close(mif);
	close(objs[0]);
	close(objs[1]);
	close(objs[2]);
	for (int i = 0; i < FS_BIG; i++)
		close(big[i]);
	close(dev);
	CHECK(injected_total > 0, "no failure was ever injected: is failslab working?");
	return 0;
}

/* ----------------------------------------------------------------- cycles */

/* Bytes in slab caches (active objects times object size), after shrinking. */
static long long slab_bytes(void)
{
	tc_slab_shrink();
	return tc_slab_bytes();
}

static int test_cycles(void)
{
	int dev = open_dev(), base = count_fds();
	long long before, after, limit;
	uint64_t t0 = mono_ns();

	before = slab_bytes();
	for (unsigned long i = 0; i < opt_cycles; i++) {
		int fd;
		uint32_t idx;

		switch (i % 3) {
		case 0: fd = create_sem(dev, 1, 1); break;
		case 1: fd = create_mutex(dev, 0, 0); break;
		default: fd = create_event(dev, 0, 1); break;
		}
		if (fd < 0)
			return 1;
		if (i % 2) {
			long ret = wait_objs(dev, i % 4 == 1, &fd, 1, 1, 0, 0, &idx);

			if (ret) {
				tfail("cycle %lu: wait: %ld", i, ret);
				return 1;
			}
		}
		close(fd);
	}
	close(dev);
	after = slab_bytes();
	printf("  %lu cycles in %.1f s\n", opt_cycles, (mono_ns() - t0) / 1e9);
	CHECK(count_fds() == base - 1, "descriptors: %d before, %d after", base - 1, count_fds());
	if (before < 0 || after < 0) {
		printf("  /proc/slabinfo unreadable (not root?): slab usage not checked\n");
		return 0;
	}
	/* a leak of one small object per cycle would exceed this */
	limit = 2ll * 1024 * 1024 + 16ll * opt_cycles;
	printf("  slab: %lld KiB before, %lld KiB after (growth %lld KiB, limit %lld KiB)\n",
	       before / 1024, after / 1024, (after - before) / 1024, limit / 1024);
	CHECK(after - before <= limit, "slab grew by %lld bytes over %lu cycles", after - before, opt_cycles);
	return 0;
}

/* ------------------------------------------------------------------ main */

static const struct { const char *name; int (*fn)(void); } tests[] = {
	{ "kill-blocked", test_kill_blocked },
	{ "signal-storm", test_signal_storm },
	{ "close-device", test_close_device },
	{ "emfile", test_emfile },
	{ "failslab", test_failslab },
	{ "cycles", test_cycles },
};

int main(int argc, char **argv)
{
	int passed = 0, failed = 0, skipped = 0, ntests = sizeof(tests) / sizeof(tests[0]);
	bool any = false, want[16] = { false };
	int fd;

	for (int i = 1; i < argc; i++) {
		int k;

		if (!strcmp(argv[i], "--cycles") && i + 1 < argc) {
			opt_cycles = strtoul(argv[++i], NULL, 0);
			continue;
		}
		if (!strcmp(argv[i], "--device") && i + 1 < argc) {
			device_path = argv[++i];
			continue;
		}
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("Usage: ntsync-abuse [--cycles N] [--device PATH] [TEST...]\nTests:");
			for (k = 0; k < ntests; k++)
				printf(" %s", tests[k].name);
			printf("\n");
			return 0;
		}
		for (k = 0; k < ntests; k++)
			if (!strcmp(argv[i], tests[k].name))
				break;
		if (k == ntests) {
			fprintf(stderr, "ntsync-abuse: unknown test or argument '%s' (see --help)\n", argv[i]);
			return 2;
		}
		want[k] = any = true;
	}
	fd = open(device_path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		printf("ntsync-abuse: %s: %s: skipping\n", device_path, strerror(errno));
		return 77;
	}
	close(fd);
	printf("ntsync-abuse: %zu-bit caller, %lu cycles\n", sizeof(void *) * 8, opt_cycles);
	for (int k = 0; k < ntests; k++) {
		int r;

		if (any && !want[k])
			continue;
		cur_test = tests[k].name;
		cur_failed = 0;
		printf("== %s\n", cur_test);
		fflush(stdout);
		r = tests[k].fn();
		if (r == SKIP && !cur_failed) {
			printf("skip %s\n", cur_test);
			skipped++;
		} else if (r || cur_failed) {
			printf("FAIL %s\n", cur_test);
			failed++;
		} else {
			printf("ok %s\n", cur_test);
			passed++;
		}
		fflush(stdout);
	}
	printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
	return failed ? 1 : 0;
}
