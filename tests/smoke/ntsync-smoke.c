// SPDX-License-Identifier: GPL-2.0-only
/*
 * ntsync-smoke: one pass over every ioctl of /dev/ntsync and every error
 * row of the ABI, for a freshly loaded module.  Prints one line per check
 * and ends with "N passed, N failed"; exits 77 when /dev/ntsync is missing.
 * The full conformance suite is tests/; this is the module's quick proof.
 *
 * Built by meson (tests/smoke/meson.build); static copies for guests by
 * meson/build-static.
 */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/ntsync.h>

#include "ntsync-raw.h"

static int passed, failed;

#define CHECK(cond, ...) do {						\
	if (cond) {							\
		passed++;						\
	} else {							\
		failed++;						\
		printf("FAIL %s:%d: ", __func__, __LINE__);		\
		printf(__VA_ARGS__);					\
		printf("\n");						\
	}								\
} while (0)

/* ioctl that returns -errno, or the result when it succeeds */
static int io(int fd, unsigned long cmd, void *arg)
{
	return (int)ntr_neg(ioctl(fd, cmd, arg));
}

#define EXPECT(call, want) do {						\
	int got_ = (call);						\
	CHECK(got_ == (want), "%s = %d (%s), want %d", #call, got_,	\
	      got_ < 0 ? strerror(-got_) : "ok", (want));		\
} while (0)

static int dev;
static void *badptr;

static int sem(uint32_t count, uint32_t max)
{
	return (int)ntr_neg(ntr_create_sem(dev, count, max));
}

static int mtx(uint32_t owner, uint32_t count)
{
	return (int)ntr_neg(ntr_create_mutex(dev, owner, count));
}

static int evt(uint32_t manual, uint32_t signaled)
{
	return (int)ntr_neg(ntr_create_event(dev, manual, signaled));
}

static uint64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

static int wait_on(unsigned long cmd, const int *fds, uint32_t count,
		   uint32_t owner, int alert, uint64_t timeout, uint32_t *index)
{
	struct ntsync_wait_args a = {
		.timeout = timeout, .objs = (uintptr_t)fds, .count = count,
		.owner = owner, .alert = alert, .index = 0xcccccccc,
	};
	int ret = io(dev, cmd, &a);

	if (index)
		*index = a.index;
	return ret;
}

static void test_sem(void)
{
	struct ntsync_sem_args a;
	uint32_t v;
	int s;

	EXPECT(sem(3, 2), -EINVAL);
	s = sem(1, 2);
	CHECK(s >= 0, "create sem: %d", s);
	CHECK((fcntl(s, F_GETFD) & FD_CLOEXEC), "sem fd is not close-on-exec");

	v = 1;
	EXPECT(io(s, NTSYNC_IOC_SEM_RELEASE, &v), 0);
	CHECK(v == 1, "release returned prev %u", v);
	v = 1;
	EXPECT(io(s, NTSYNC_IOC_SEM_RELEASE, &v), -EOVERFLOW);
	v = UINT32_MAX;
	EXPECT(io(s, NTSYNC_IOC_SEM_RELEASE, &v), -EOVERFLOW);
	memset(&a, 0xcc, sizeof(a));
	EXPECT(io(s, NTSYNC_IOC_SEM_READ, &a), 0);
	CHECK(a.count == 2 && a.max == 2, "read %u/%u", a.count, a.max);
	EXPECT(io(s, NTSYNC_IOC_SEM_READ, badptr), -EFAULT);
	EXPECT(io(s, NTSYNC_IOC_SEM_RELEASE, badptr), -EFAULT);
	/* wrong type, unknown command */
	EXPECT(io(s, NTSYNC_IOC_EVENT_SET, &v), -EINVAL);
	EXPECT(io(s, NTSYNC_IOC_MUTEX_READ, &a), -EINVAL);
	EXPECT(io(s, _IO('N', 0x99), NULL), -ENOTTY);
	EXPECT(io(dev, _IO('N', 0x99), NULL), -ENOTTY);
	EXPECT(io(dev, NTSYNC_IOC_CREATE_SEM, badptr), -EFAULT);
	close(s);
}

static void test_mutex(void)
{
	struct ntsync_mutex_args a;
	uint32_t owner, idx;
	int m, fds[1];

	EXPECT(mtx(0, 1), -EINVAL);
	EXPECT(mtx(1, 0), -EINVAL);
	m = mtx(5, UINT32_MAX);
	CHECK(m >= 0, "create mutex: %d", m);
	fds[0] = m;
	/* recursion count saturated: not acquirable even by its owner */
	EXPECT(wait_on(NTSYNC_IOC_WAIT_ANY, fds, 1, 5, 0, 0, NULL), -ETIMEDOUT);
	memset(&a, 0xcc, sizeof(a));
	a.owner = 5;
	EXPECT(io(m, NTSYNC_IOC_MUTEX_UNLOCK, &a), 0);
	CHECK(a.count == UINT32_MAX, "unlock prev %u", a.count);
	EXPECT(wait_on(NTSYNC_IOC_WAIT_ANY, fds, 1, 5, 0, 0, &idx), 0);
	a.owner = 0;
	EXPECT(io(m, NTSYNC_IOC_MUTEX_UNLOCK, &a), -EINVAL);
	a.owner = 6;
	EXPECT(io(m, NTSYNC_IOC_MUTEX_UNLOCK, &a), -EPERM);
	owner = 0;
	EXPECT(io(m, NTSYNC_IOC_MUTEX_KILL, &owner), -EINVAL);
	owner = 6;
	EXPECT(io(m, NTSYNC_IOC_MUTEX_KILL, &owner), -EPERM);
	EXPECT(io(m, NTSYNC_IOC_MUTEX_KILL, badptr), -EFAULT);
	owner = 5;
	EXPECT(io(m, NTSYNC_IOC_MUTEX_KILL, &owner), 0);
	memset(&a, 0xcc, sizeof(a));
	EXPECT(io(m, NTSYNC_IOC_MUTEX_READ, &a), -EOWNERDEAD);
	CHECK(a.owner == 0 && a.count == 0, "abandoned read %u/%u", a.owner, a.count);
	EXPECT(wait_on(NTSYNC_IOC_WAIT_ANY, fds, 1, 7, 0, 0, &idx), -EOWNERDEAD);
	CHECK(idx == 0, "index %u", idx);
	memset(&a, 0xcc, sizeof(a));
	EXPECT(io(m, NTSYNC_IOC_MUTEX_READ, &a), 0);
	CHECK(a.owner == 7 && a.count == 1, "after abandoned wait %u/%u", a.owner, a.count);
	EXPECT(wait_on(NTSYNC_IOC_WAIT_ANY, fds, 1, 7, 0, 0, &idx), 0);
	a.owner = 7;
	EXPECT(io(m, NTSYNC_IOC_MUTEX_UNLOCK, &a), 0);
	CHECK(a.count == 2, "unlock prev %u", a.count);
	EXPECT(io(m, NTSYNC_IOC_MUTEX_UNLOCK, badptr), -EFAULT);
	EXPECT(io(m, NTSYNC_IOC_SEM_RELEASE, &owner), -EINVAL);
	close(m);
}

static void test_event(void)
{
	struct ntsync_event_args a;
	uint32_t prev;
	int e;

	e = evt(1, 0);
	CHECK(e >= 0, "create event: %d", e);
	prev = 0xcccccccc;
	EXPECT(io(e, NTSYNC_IOC_EVENT_SET, &prev), 0);
	CHECK(prev == 0, "set prev %u", prev);
	EXPECT(io(e, NTSYNC_IOC_EVENT_SET, &prev), 0);
	CHECK(prev == 1, "set prev %u", prev);
	EXPECT(io(e, NTSYNC_IOC_EVENT_RESET, &prev), 0);
	CHECK(prev == 1, "reset prev %u", prev);
	EXPECT(io(e, NTSYNC_IOC_EVENT_PULSE, &prev), 0);
	CHECK(prev == 0, "pulse prev %u", prev);
	memset(&a, 0xcc, sizeof(a));
	EXPECT(io(e, NTSYNC_IOC_EVENT_READ, &a), 0);
	CHECK(a.manual == 1 && a.signaled == 0, "read %u/%u", a.manual, a.signaled);
	EXPECT(io(e, NTSYNC_IOC_EVENT_READ, badptr), -EFAULT);
	EXPECT(io(e, NTSYNC_IOC_EVENT_SET, badptr), -EFAULT);
	EXPECT(io(e, NTSYNC_IOC_MUTEX_KILL, &prev), -EINVAL);
	EXPECT(io(e, NTSYNC_IOC_SEM_READ, &a), -EINVAL);
	close(e);
}

static void test_wait_args(void)
{
	int s = sem(1, 1), e = evt(0, 0), p[2], fds[65], i, other, os;
	struct ntsync_wait_args a;
	uint32_t idx;

	CHECK(pipe(p) == 0, "pipe");
	fds[0] = s;
	memset(&a, 0, sizeof(a));
	a.objs = (uintptr_t)fds;
	a.count = 1;
	a.owner = 1;
	a.pad = 1;
	EXPECT(io(dev, NTSYNC_IOC_WAIT_ANY, &a), -EINVAL);
	a.pad = 0;
	a.flags = 2;
	EXPECT(io(dev, NTSYNC_IOC_WAIT_ANY, &a), -EINVAL);
	a.flags = 0;
	a.owner = 0;
	EXPECT(io(dev, NTSYNC_IOC_WAIT_ALL, &a), -EINVAL);
	a.owner = 1;
	a.count = 65;
	EXPECT(io(dev, NTSYNC_IOC_WAIT_ANY, &a), -EINVAL);
	a.count = 1;
	a.objs = (uintptr_t)badptr;
	EXPECT(io(dev, NTSYNC_IOC_WAIT_ANY, &a), -EFAULT);
	EXPECT(io(dev, NTSYNC_IOC_WAIT_ANY, badptr), -EFAULT);

	fds[0] = -1;
	EXPECT(wait_on(NTSYNC_IOC_WAIT_ANY, fds, 1, 1, 0, 0, NULL), -EINVAL);
	fds[0] = 100000;
	EXPECT(wait_on(NTSYNC_IOC_WAIT_ANY, fds, 1, 1, 0, 0, NULL), -EINVAL);
	fds[0] = p[0];
	EXPECT(wait_on(NTSYNC_IOC_WAIT_ANY, fds, 1, 1, 0, 0, NULL), -EINVAL);
	fds[0] = dev;
	EXPECT(wait_on(NTSYNC_IOC_WAIT_ALL, fds, 1, 1, 0, 0, NULL), -EINVAL);
	fds[0] = s;
	EXPECT(wait_on(NTSYNC_IOC_WAIT_ANY, fds, 1, 1, s, 0, NULL), -EINVAL);
	EXPECT(wait_on(NTSYNC_IOC_WAIT_ANY, fds, 1, 1, p[0], 0, NULL), -EINVAL);

	/* an object of another instance */
	other = ntr_open();
	CHECK(other >= 0, "second open");
	{
		struct ntsync_sem_args sa = { .count = 1, .max = 1 };

		os = io(other, NTSYNC_IOC_CREATE_SEM, &sa);
	}
	fds[0] = os;
	EXPECT(wait_on(NTSYNC_IOC_WAIT_ANY, fds, 1, 1, 0, 0, NULL), -EINVAL);
	fds[0] = s;
	EXPECT(wait_on(NTSYNC_IOC_WAIT_ANY, fds, 1, 1, os, 0, NULL), -EINVAL);

	/* duplicates: fine for any, refused for all */
	fds[0] = e;
	fds[1] = s;
	fds[2] = s;
	EXPECT(wait_on(NTSYNC_IOC_WAIT_ALL, fds, 3, 1, 0, 0, NULL), -EINVAL);
	EXPECT(wait_on(NTSYNC_IOC_WAIT_ALL, fds + 1, 1, 1, s, 0, NULL), -EINVAL);
	EXPECT(wait_on(NTSYNC_IOC_WAIT_ANY, fds, 3, 1, 0, 0, &idx), 0);
	CHECK(idx == 1, "lowest index of a duplicate: %u", idx);

	/* 64 objects, last one signaled */
	for (i = 0; i < 64; i++)
		fds[i] = e;
	{
		uint32_t v = 1;

		EXPECT(io(s, NTSYNC_IOC_SEM_RELEASE, &v), 0);
	}
	fds[63] = s;
	EXPECT(wait_on(NTSYNC_IOC_WAIT_ANY, fds, 64, 1, 0, 0, &idx), 0);
	CHECK(idx == 63, "index %u", idx);
	EXPECT(wait_on(NTSYNC_IOC_WAIT_ANY, fds, 0, 1, 0, 0, NULL), -ETIMEDOUT);
	EXPECT(wait_on(NTSYNC_IOC_WAIT_ALL, fds, 0, 1, 0, 0, &idx), 0);
	CHECK(idx == 0, "empty wait-all index %u", idx);

	close(os);
	close(other);
	close(p[0]);
	close(p[1]);
	close(s);
	close(e);
}

static void test_wait_semantics(void)
{
	int s = sem(0, 3), m = mtx(0, 0), e = evt(0, 1), al = evt(1, 0);
	int fds[3] = { s, m, e };
	struct ntsync_sem_args sa;
	uint32_t idx, v, prev;

	/* wait-all needs all three */
	EXPECT(wait_on(NTSYNC_IOC_WAIT_ALL, fds, 3, 9, 0, 0, NULL), -ETIMEDOUT);
	v = 2;
	EXPECT(io(s, NTSYNC_IOC_SEM_RELEASE, &v), 0);
	EXPECT(wait_on(NTSYNC_IOC_WAIT_ALL, fds, 3, 9, 0, 0, &idx), 0);
	CHECK(idx == 0, "wait-all index %u", idx);
	memset(&sa, 0xcc, sizeof(sa));
	EXPECT(io(s, NTSYNC_IOC_SEM_READ, &sa), 0);
	CHECK(sa.count == 1, "sem after wait-all %u", sa.count);
	/* the auto-reset event was consumed: nothing of the set is taken */
	EXPECT(wait_on(NTSYNC_IOC_WAIT_ALL, fds, 3, 9, 0, 0, NULL), -ETIMEDOUT);
	EXPECT(io(s, NTSYNC_IOC_SEM_READ, &sa), 0);
	CHECK(sa.count == 1, "sem after failed wait-all %u", sa.count);

	/* alert: index == count, objects first */
	EXPECT(io(al, NTSYNC_IOC_EVENT_SET, &prev), 0);
	EXPECT(wait_on(NTSYNC_IOC_WAIT_ANY, fds + 2, 1, 9, al, 0, &idx), 0);
	CHECK(idx == 1, "alert index %u", idx);
	EXPECT(wait_on(NTSYNC_IOC_WAIT_ALL, fds, 3, 9, al, 0, &idx), 0);
	CHECK(idx == 3, "wait-all alert index %u", idx);
	EXPECT(wait_on(NTSYNC_IOC_WAIT_ANY, fds, 1, 9, al, 0, &idx), 0);
	CHECK(idx == 0, "objects before alert: %u", idx);

	/* deadlines */
	EXPECT(wait_on(NTSYNC_IOC_WAIT_ANY, fds + 2, 1, 9, 0,
		       now_ns(CLOCK_MONOTONIC) + 20000000, NULL), -ETIMEDOUT);
	{
		struct ntsync_wait_args a = {
			.timeout = now_ns(CLOCK_REALTIME) + 20000000,
			.objs = (uintptr_t)(fds + 2), .count = 1, .owner = 9,
			.flags = NTSYNC_WAIT_REALTIME,
		};

		EXPECT(io(dev, NTSYNC_IOC_WAIT_ANY, &a), -ETIMEDOUT);
	}
	close(s);
	close(m);
	close(e);
	close(al);
}

struct waiter {
	int fd;
	unsigned long cmd;
	uint32_t owner;
	int ret;
	uint32_t index;
};

static void *waiter_thread(void *arg)
{
	struct waiter *w = arg;

	w->ret = wait_on(w->cmd, &w->fd, 1, w->owner, 0,
			 now_ns(CLOCK_MONOTONIC) + 5000000000ull, &w->index);
	return NULL;
}

static void test_wakeups(void)
{
	int e = evt(0, 0), m = mtx(3, 1);
	struct waiter w[2] = {
		{ .fd = e, .cmd = NTSYNC_IOC_WAIT_ANY, .owner = 1 },
		{ .fd = e, .cmd = NTSYNC_IOC_WAIT_ALL, .owner = 2 },
	};
	struct ntsync_event_args ea;
	pthread_t t[2];
	uint32_t prev, owner;
	int i, woken;

	for (i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, waiter_thread, &w[i]);
	usleep(200000);
	/* a pulse of an auto-reset event wakes exactly one of the two */
	EXPECT(io(e, NTSYNC_IOC_EVENT_PULSE, &prev), 0);
	usleep(200000);
	EXPECT(io(e, NTSYNC_IOC_EVENT_READ, &ea), 0);
	CHECK(ea.signaled == 0, "pulsed event reads signaled");
	EXPECT(io(e, NTSYNC_IOC_EVENT_SET, &prev), 0);
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	for (i = 0, woken = 0; i < 2; i++)
		woken += w[i].ret == 0;
	CHECK(woken == 2, "pulse+set woke %d of 2", woken);

	/* kill wakes a waiter with EOWNERDEAD */
	w[0].fd = m;
	w[0].owner = 4;
	pthread_create(&t[0], NULL, waiter_thread, &w[0]);
	usleep(200000);
	owner = 3;
	EXPECT(io(m, NTSYNC_IOC_MUTEX_KILL, &owner), 0);
	pthread_join(t[0], NULL);
	CHECK(w[0].ret == -EOWNERDEAD && w[0].index == 0,
	      "killed mutex wait %d index %u", w[0].ret, w[0].index);
	close(e);
	close(m);
}

static void on_alarm(int sig)
{
	(void)sig;
}

static void test_signal(void)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	int e = evt(0, 0);
	uint32_t idx;

	sigaction(SIGALRM, &sa, NULL);
	ualarm(100000, 0);
	EXPECT(wait_on(NTSYNC_IOC_WAIT_ANY, &e, 1, 1, 0, UINT64_MAX, &idx), -EINTR);
	close(e);
}

static void test_lifetime(void)
{
	int d2 = open("/dev/ntsync", O_RDWR), s, saved = dev;
	struct ntsync_sem_args a;

	dev = d2;
	s = sem(2, 5);
	dev = saved;
	close(d2);
	/* the object outlives the device descriptor */
	memset(&a, 0xcc, sizeof(a));
	EXPECT(io(s, NTSYNC_IOC_SEM_READ, &a), 0);
	CHECK(a.count == 2 && a.max == 5, "read %u/%u", a.count, a.max);
	close(s);
}

/* /proc/self/fdinfo/FD of an object, in buf; false if it cannot be read. */
static bool fdinfo(int obj, char *buf, size_t len)
{
	char path[64];
	int fd, n;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", obj);
	fd = open(path, O_RDONLY);
	n = fd < 0 ? -1 : read(fd, buf, len - 1);
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = 0;
	return n > 0;
}

/*
 * This project's module (it has a version) shows each kind's state in
 * fdinfo, and how many waits are queued on the object (module/ntsync.c,
 * ntsync_obj_show_fdinfo(); the lines are this module's alone).
 */
static void test_fdinfo(void)
{
	int s, m, e;
	char buf[512];
	struct waiter w[2];
	pthread_t t[2];

	if (access("/sys/module/ntsync/version", F_OK)) {
		printf("skip fdinfo: not this project's module\n");
		return;
	}
	s = sem(2, 7);
	m = mtx(5, 2);
	e = evt(1, 0);
	CHECK(fdinfo(s, buf, sizeof(buf)) &&
	      strstr(buf, "ntsync-type:\tsemaphore\ncount:\t2\nmax:\t7\n") &&
	      strstr(buf, "waiters-any:\t0\nwaiters-all:\t0\n"), "semaphore fdinfo: %s", buf);
	CHECK(fdinfo(m, buf, sizeof(buf)) &&
	      strstr(buf, "ntsync-type:\tmutex\nowner:\t5\ncount:\t2\nabandoned:\t0\n"),
	      "mutex fdinfo: %s", buf);
	CHECK(fdinfo(e, buf, sizeof(buf)) &&
	      strstr(buf, "ntsync-type:\tevent\nmanual:\t1\nsignaled:\t0\n"), "event fdinfo: %s", buf);

	/* one wait-any and one wait-all queued on the event */
	w[0] = (struct waiter){ .fd = e, .cmd = NTSYNC_IOC_WAIT_ANY, .owner = 1 };
	w[1] = (struct waiter){ .fd = e, .cmd = NTSYNC_IOC_WAIT_ALL, .owner = 2 };
	pthread_create(&t[0], NULL, waiter_thread, &w[0]);
	pthread_create(&t[1], NULL, waiter_thread, &w[1]);
	usleep(200000);
	CHECK(fdinfo(e, buf, sizeof(buf)) && strstr(buf, "waiters-any:\t1\nwaiters-all:\t1\n"),
	      "event fdinfo with two waits queued: %s", buf);
	EXPECT(io(e, NTSYNC_IOC_EVENT_SET, &(uint32_t){ 0 }), 0);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	CHECK(w[0].ret == 0 && w[1].ret == 0, "waits on the set event: %d %d", w[0].ret, w[1].ret);
	CHECK(fdinfo(e, buf, sizeof(buf)) && strstr(buf, "signaled:\t1\n") &&
	      strstr(buf, "waiters-any:\t0\nwaiters-all:\t0\n"), "event fdinfo after: %s", buf);

	/* an abandoned mutex says so */
	EXPECT(io(m, NTSYNC_IOC_MUTEX_KILL, &(uint32_t){ 5 }), 0);
	CHECK(fdinfo(m, buf, sizeof(buf)) &&
	      strstr(buf, "owner:\t0\ncount:\t0\nabandoned:\t1\n"), "killed mutex fdinfo: %s", buf);
	close(s);
	close(m);
	close(e);
}

int main(void)
{
	dev = ntr_open();
	if (dev < 0) {
		fprintf(stderr, "ntsync-smoke: cannot open /dev/ntsync: %s (load the module first)\n",
			strerror(errno));
		return 77;
	}
	/* one page of no access, the system's page size (16 KiB on arm64-16k kernels) */
	badptr = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (badptr == MAP_FAILED) {
		fprintf(stderr, "ntsync-smoke: mmap of a no-access page: %s\n", strerror(errno));
		return 1;
	}

	test_sem();
	test_mutex();
	test_event();
	test_wait_args();
	test_wait_semantics();
	test_wakeups();
	test_signal();
	test_lifetime();
	test_fdinfo();

	close(dev);
	printf("smoke: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
