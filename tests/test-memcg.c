// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What an unprivileged user can take with /dev/ntsync (issue 29): a
 * process of uid 65534, without capabilities, with RLIMIT_NOFILE raised so
 * that memory and not descriptors is the limit, in a cgroup v2 memory
 * cgroup of its own with a small memory.max, creates semaphores (or
 * threads blocked in 64-object waits) until something stops it.  The root
 * parent outside the cgroup watches memory.current at every step and
 * checks that
 *   - the limit holds: memory.current never passes memory.max;
 *   - the end is ENOMEM or an OOM kill inside the cgroup (which one is
 *     printed), never anything else;
 *   - every byte the objects cost in slab is charged to the cgroup
 *     (the charge per object against the slab caches' growth per object,
 *     both measured, may differ by the slab's own UNCHARGED_MAX bytes and
 *     what the per-CPU charge stocks held ahead at the first measure):
 *     on our driver, whose objects and wait queues come from accounted
 *     caches; mainline's are not, and there the test prints how much of
 *     each object escapes the limit and skips as a known difference
 *     (NTSYNC_STRICT=1 fails instead);
 *   - memory.current returns to its baseline once the process is gone,
 *     and the parent (and so the guest) lives on.
 * Needs root (to make the cgroup), cgroup v2 with the memory controller;
 * skips honestly without.  The figures it prints go to doc/results.md.
 */
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "tools-common.h"

#define CGROOT "/sys/fs/cgroup"
#define LIMIT (32ULL << 20)		/* memory.max of the test's cgroup */
#define STEP 2048			/* objects between samples */
#define WAIT_STEP 32			/* threads between samples */
#define NOBODY 65534
/*
 * Slab bytes per object the cgroup may not see: the slab's own metadata
 * (the per-object cgroup pointers of accounted caches are not charged).
 * Seen with ours: 23-27 B per object on 6.12 and 7.3; mainline's object
 * itself, uncharged, is 130 B.
 */
#define UNCHARGED_MAX 64

/* Say why, then skip (cmocka's skip() takes no message). */
#define skip_msg(...) do {						\
		print_message("# skipped: " __VA_ARGS__);		\
		print_message("\n");					\
		skip();							\
	} while (0)
#define WAIT_OBJS 64

struct msg {
	int kind;		/* MSG_* */
	int err;		/* MSG_END: the errno that stopped it */
	long count;		/* objects or threads so far */
};
enum { MSG_READY, MSG_STEP, MSG_END };

static char cg[256];

static int cg_write(const char *file, const char *val)
{
	char path[512];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (write(fd, val, strlen(val)) < 0)
		ret = -1;
	close(fd);
	return ret;
}

static long long cg_read(const char *file, const char *key)
{
	char path[512], line[256];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		size_t kl = key ? strlen(key) : 0;

		if (!key) {
			v = strtoll(line, NULL, 10);
			break;
		}
		if (!strncmp(line, key, kl) && line[kl] == ' ') {
			v = strtoll(line + kl + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

/* A fresh child cgroup with the memory controller and LIMIT; skips without. */
static void cg_make(const char *what)
{
	char ctl[256] = "";
	FILE *f;

	if (geteuid() != 0)
		skip_msg("needs root to make a memory cgroup");
	f = fopen(CGROOT "/cgroup.controllers", "r");
	if (!f || !fgets(ctl, sizeof(ctl), f) || !strstr(ctl, "memory")) {
		if (f)
			fclose(f);
		skip_msg("no cgroup v2 memory controller at " CGROOT " (kernel or boot without memcg)");
	}
	fclose(f);
	snprintf(cg, sizeof(cg), CGROOT);
	/* the root may delegate it already (systemd does); if not, do it */
	cg_write("cgroup.subtree_control", "+memory");
	snprintf(cg, sizeof(cg), CGROOT "/ntsync-test-%s-%d", what, (int)getpid());
	if (mkdir(cg, 0755) && errno != EEXIST)
		skip_msg("cannot make %s: %s", cg, strerror(errno));
	if (access(strcat(strcpy(ctl, cg), "/memory.max"), F_OK))
		skip_msg("%s has no memory.max: the memory controller is not enabled for it", cg);
	snprintf(ctl, sizeof(ctl), "%llu", LIMIT);
	assert_int_equal(cg_write("memory.max", ctl), 0);
	cg_write("memory.swap.max", "0");	/* absent without swap accounting */
}

static void cg_remove(void)
{
	for (int i = 0; i < 50 && rmdir(cg) && errno == EBUSY; i++)
		usleep(100 * 1000);
}

/*
 * The system's open-file table (fs.file-max, about 10 % of memory in KiB)
 * must not stop the creation before memory.max does: on a small machine
 * (a 256 MiB guest: 22,423 files) it would.  The root parent raises it for
 * the run and puts it back when the child is gone.
 */
#define FILE_MAX_PATH "/proc/sys/fs/file-max"
#define FILE_MAX_WANT (1LL << 20)
static long long file_max_saved = -1;
static bool file_max_raised;	/* by this run, or it was high enough */

static long long file_max_read(void)
{
	char buf[32] = "";
	int fd = open(FILE_MAX_PATH, O_RDONLY | O_CLOEXEC);
	ssize_t len = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	return len > 0 ? strtoll(buf, NULL, 10) : -1;
}

static bool file_max_write(long long val)
{
	char buf[32];
	int fd = open(FILE_MAX_PATH, O_WRONLY | O_CLOEXEC);
	int len = snprintf(buf, sizeof(buf), "%lld\n", val);
	bool ok = fd >= 0 && write(fd, buf, (size_t)len) == len;

	if (fd >= 0)
		close(fd);
	return ok;
}

static void file_max_raise(void)
{
	long long cur = file_max_read();

	file_max_raised = cur >= FILE_MAX_WANT;
	if (cur >= 0 && cur < FILE_MAX_WANT && file_max_write(FILE_MAX_WANT)) {
		file_max_saved = cur;
		file_max_raised = true;
	}
}

static void file_max_restore(void)
{
	if (file_max_saved >= 0 && file_max_write(file_max_saved))
		file_max_saved = -1;
}

/* The unprivileged side: uid/gid nobody, no capabilities, many descriptors. */
static void become_nobody(void)
{
	struct rlimit nofile = { 1 << 20, 1 << 20 }, nproc = { RLIM_INFINITY, RLIM_INFINITY };

	/* as root, raise the limits that would otherwise stop it first */
	if (setrlimit(RLIMIT_NOFILE, &nofile)) {
		nofile.rlim_cur = nofile.rlim_max = 1 << 16;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	setrlimit(RLIMIT_NPROC, &nproc);
	if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
		_exit(120);
	/* a uid change away from 0 clears every capability set */
	if (getuid() != NOBODY || geteuid() != NOBODY || prctl(PR_CAPBSET_READ, 0) < 0)
		_exit(121);
}

static int to_parent = -1, from_parent = -1;

static void tell(int kind, long count, int err)
{
	struct msg m = { kind, err, count };
	char ack;

	if (write(to_parent, &m, sizeof(m)) != sizeof(m) || read(from_parent, &ack, 1) != 1)
		_exit(122);
}

/* Child, kind "objects": semaphores until a create fails. */
static void make_objects(int dev)
{
	struct ntsync_sem_args args = { .count = 0, .max = 1 };
	long n = 0;

	for (;;) {
		if (ioctl(dev, NTSYNC_IOC_CREATE_SEM, &args) < 0) {
			tell(MSG_END, n, errno);
			_exit(0);
		}
		if (++n % STEP == 0)
			tell(MSG_STEP, n, 0);
	}
}

static int wait_dev;
static int wait_fds[WAIT_OBJS];
static atomic_long waiting;
static atomic_int wait_err;

static void *waiter(void *arg)
{
	struct ntsync_wait_args args = {
		.timeout = UINT64_MAX, .objs = (uintptr_t)wait_fds, .count = WAIT_OBJS,
		.owner = 1,
	};

	(void)arg;
	atomic_fetch_add(&waiting, 1);
	if (ioctl(wait_dev, NTSYNC_IOC_WAIT_ANY, &args) < 0)
		atomic_store(&wait_err, errno);
	atomic_fetch_sub(&waiting, 1);
	return NULL;
}

/* Child, kind "waits": threads, each blocked in a wait on 64 events. */
static void make_waiters(int dev)
{
	pthread_attr_t attr;
	long n = 0;
	int i, err;

	wait_dev = dev;
	for (i = 0; i < WAIT_OBJS; i++) {
		wait_fds[i] = ntr_create_event(dev, 0, 0);
		if (wait_fds[i] < 0)
			_exit(123);
	}
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 << 10);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (;;) {
		pthread_t t;

		err = pthread_create(&t, &attr, waiter, NULL);
		if (!err) {
			/* until it is (about to be) queued: no more than STEP in flight */
			while (atomic_load(&waiting) < n + 1 && !atomic_load(&wait_err))
				sched_yield();
		}
		if (err || atomic_load(&wait_err)) {
			tell(MSG_END, n, err ? err : atomic_load(&wait_err));
			_exit(0);
		}
		if (++n % WAIT_STEP == 0)
			tell(MSG_STEP, n, 0);
	}
}

struct sample {
	long count;
	long long current, slab;
};

/*
 * Run one kind of child in a fresh cgroup and check everything the head
 * comment says.  @waits: threads in waits rather than objects.
 */
static void run_limited(bool waits)
{
	const char *what = waits ? "waits" : "objects";
	int up[2], down[2], status, end_err = 0;
	long long base, peak = 0, oom_before, after = -1, tolerance;
	struct sample s[4096];
	unsigned int ns = 0;
	struct msg m;
	bool ended = false;
	pid_t pid;
	char buf[32];

	cg_make(what);
	file_max_raise();
	base = cg_read("memory.current", NULL);
	oom_before = cg_read("memory.events", "oom_kill");
	assert_true(base >= 0);
	assert_int_equal(pipe2(up, O_CLOEXEC), 0);
	assert_int_equal(pipe2(down, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		int dev;

		close(up[0]);
		close(down[1]);
		to_parent = up[1];
		from_parent = down[0];
		snprintf(buf, sizeof(buf), "%d", (int)getpid());
		if (cg_write("cgroup.procs", buf))
			_exit(124);
		become_nobody();
		dev = open("/dev/ntsync", O_RDWR | O_CLOEXEC);
		if (dev < 0)
			_exit(125);
		tell(MSG_READY, 0, 0);
		if (waits)
			make_waiters(dev);
		make_objects(dev);
	}
	close(up[1]);
	close(down[0]);
	while (read(up[0], &m, sizeof(m)) == sizeof(m)) {
		long long cur = cg_read("memory.current", NULL);

		if (cur > peak)
			peak = cur;
		if (ns < ARRAY_LEN(s)) {
			s[ns].count = m.count;
			s[ns].current = cur;
			s[ns].slab = tc_slab_bytes();
			ns++;
		}
		if (m.kind == MSG_END) {
			ended = true;
			end_err = m.err;
		}
		if (write(down[1], "", 1) != 1)
			break;
	}
	close(up[0]);
	close(down[1]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	file_max_restore();
	if (WIFEXITED(status) && WEXITSTATUS(status) >= 120)
		fail_msg("the child could not set itself up (exit %d: 120 uid, 121 capabilities, "
			 "122 pipe, 123 events, 124 cgroup.procs, 125 /dev/ntsync)",
			 WEXITSTATUS(status));
	assert_true(ns >= 3);

	/*
	 * Back to the baseline once the process is gone (RCU frees files a
	 * little later; per-CPU charge stocks and part-used slab pages keep a
	 * few hundred KiB, seen up to 480 KiB with 2 vCPUs): a leak of the
	 * objects would keep the whole limit, so 1/32 of it plus 64 pages per
	 * CPU is the tolerance.
	 */
	tolerance = (long long)(LIMIT / 32) +
		    (long long)sysconf(_SC_NPROCESSORS_ONLN) * 64 * sysconf(_SC_PAGESIZE);
	for (int i = 0; i < 100; i++) {
		after = cg_read("memory.current", NULL);
		if (after <= base + tolerance)
			break;
		usleep(100 * 1000);
	}

	{
		/* charge and slab growth per item, from the first step to the last */
		const struct sample *a = &s[1], *z = &s[ns - 1 - ended];
		double items = (double)(z->count - a->count);
		double charge = items > 0 ? (z->current - a->current) / items : 0;
		double slab = items > 0 ? (z->slab - a->slab) / items : 0;
		long long oom = cg_read("memory.events", "oom_kill") - oom_before;
		long long hits = cg_read("memory.events", "max");
		const char *end = ended ? (end_err == ENOMEM ? "ENOMEM" : errname(end_err)) :
			WIFSIGNALED(status) ? (WTERMSIG(status) == SIGKILL && oom > 0 ?
					       "OOM kill in the cgroup" : strsignal(WTERMSIG(status))) :
			"exit";
		long total = s[ns - 1].count;
		double uncharged_max;

		print_message("# memcg %s: driver %s, memory.max %llu KiB: %ld %s before the end (%s); "
			      "charged %.0f B per %s, slab caches grew %.0f B per %s; peak "
			      "memory.current %lld KiB, limit reached %lld times, %lld OOM kills; "
			      "after exit %lld B charged (baseline %lld, tolerance %lld)\n",
			      what, ntsync_driver_is_ours() ? "ours" : "not ours (in-tree?)",
			      LIMIT >> 10, total, waits ? "blocked waiters" : "objects", end, charge,
			      waits ? "waiter" : "object", slab, waits ? "waiter" : "object",
			      peak >> 10, hits, oom, after, base, tolerance);
		cg_remove();

		assert_true(peak <= (long long)LIMIT);
		if (ended && end_err == ENFILE && !file_max_raised)
			skip_msg("the system's open-file table (fs.file-max %lld, which could not be "
				 "raised to %lld) ran out before memory.max was reached: raise "
				 "fs.file-max", file_max_read(), FILE_MAX_WANT);
		if (ended && end_err != ENOMEM && end_err != EAGAIN)
			fail_msg("stopped by %s, not by memory: the limit under test was never reached",
				 errname(end_err));
		if (ended && end_err == EAGAIN && hits <= 0)
			fail_msg("pthread_create() said EAGAIN with memory.max never reached: the "
				 "thread or process limits stopped it, not memory");
		if (!ended && !(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && oom > 0))
			fail_msg("the child ended without ENOMEM and without an OOM kill (status %#x)",
				 status);
		assert_true(after <= base + tolerance);
		/*
		 * memory.current counts what the per-CPU charge stocks hold charged
		 * ahead (up to 64 pages per CPU, as above): some at the first sample,
		 * none at the last (the limit drains them), so the charge per object
		 * reads low by up to that over the items. 16 KiB pages make it 1 MiB a
		 * CPU: on arm64-16k (2 vCPUs) the difference read 48 and 64 B per
		 * object where 4 KiB kernels read 23-27 B.
		 */
		uncharged_max = UNCHARGED_MAX + (a->count < z->count ?
			(double)sysconf(_SC_NPROCESSORS_ONLN) * 64 * sysconf(_SC_PAGESIZE) / items : 0);
		if (!waits && slab - charge > uncharged_max) {
			if (known_difference_tolerated())
				skip_msg("known difference: %.0f of every %.0f slab bytes per object "
					 "(%.0f %%) are not charged to the creator's cgroup: a user can "
					 "exceed memory.max by that share (issue 29)",
					 slab - charge, slab, 100 * (slab - charge) / slab);
			fail_msg("only %.0f of %.0f slab bytes per object are charged (at most %.0f may "
				 "not be: %d, and the charge stocks' %.0f)", charge, slab, uncharged_max,
				 UNCHARGED_MAX, uncharged_max - UNCHARGED_MAX);
		}
	}
}

/* §abi.mainline.4 §abi.security */
TEST(unprivileged_objects_stay_within_memory_max)
{
	run_limited(false);
}

/* §abi.mainline.4 §abi.security */
TEST(unprivileged_waiters_stay_within_memory_max)
{
	run_limited(true);
}

static const struct CMUnitTest tests[] = {
	cmocka_unit_test(unprivileged_objects_stay_within_memory_max),
	cmocka_unit_test(unprivileged_waiters_stay_within_memory_max),
};

NTSYNC_TEST_MAIN("memcg", tests, true)
