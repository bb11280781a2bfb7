// SPDX-License-Identifier: LGPL-2.1-or-later
/* Shared helpers of the ntsync conformance suite; see common.h. */

#include "common.h"
#include "tools-common.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static atomic_uint_fast64_t done_counter;

const char *errname(int err)
{
	static __thread char buf[32];
	const char *name = tc_errno_name(err);

	if (err == 0)
		return "no error";
	if (name)
		return name;
	snprintf(buf, sizeof(buf), "errno %d", err);
	return buf;
}

bool ntsync_driver_is_ours(void)
{
	return access("/sys/module/ntsync/version", F_OK) == 0;
}

bool known_difference_tolerated(void)
{
	const char *strict = getenv("NTSYNC_STRICT");

	return !ntsync_driver_is_ours() && !(strict && strcmp(strict, "0"));
}

void close_all(const int *fds, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		close(fds[i]);
}

int lowest_free_fd(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (fd >= 0)
		close(fd);
	return fd;
}

uint64_t now_ns(clockid_t clock)
{
	return tc_now_ns(clock);
}

uint64_t mono_in_ms(unsigned int ms)
{
	return now_ns(CLOCK_MONOTONIC) + ms * NSEC_PER_MSEC;
}

uint64_t rt_in_ms(unsigned int ms)
{
	return now_ns(CLOCK_REALTIME) + ms * NSEC_PER_MSEC;
}

void sleep_ms(unsigned int ms)
{
	struct timespec ts = {
		.tv_sec = ms / 1000,
		.tv_nsec = (long)(ms % 1000) * 1000000L,
	};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

struct waiter *waiters_alloc(unsigned int n)
{
	void *p = mmap(NULL, n * sizeof(struct waiter), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		print_error("mmap: %s\n", strerror(errno));
		fail();
	}
	memset(p, 0, n * sizeof(struct waiter));
	return p;
}

void waiters_free(struct waiter *w, unsigned int n)
{
	munmap(w, n * sizeof(struct waiter));
}

void waiter_setup(struct waiter *w, int dev, bool all, const int *objs,
		  uint32_t count, uint32_t owner)
{
	w->dev = dev;
	w->all = all;
	if (count)
		memcpy(w->objs, objs, count * sizeof(int));
	w->count = count;
	w->owner = owner;
	w->alert = 0;
	w->flags = 0;
	w->timeout = mono_in_ms(GUARD_MS);
	w->ret = -2;
	w->err = 0;
	w->index = POISON32;
	atomic_store(&w->state, 0);
	w->reaped = false;
}

struct waiter *waiter_new(int dev, bool all, const int *objs, uint32_t count,
			  uint32_t owner)
{
	struct waiter *w = waiters_alloc(1);

	waiter_setup(w, dev, all, objs, count, owner);
	return w;
}

static void waiter_run(struct waiter *w)
{
	uint32_t index = POISON32;
	int ret, err;

	w->tid = (pid_t)syscall(SYS_gettid);
	atomic_store(&w->state, 1);
	ret = ntr_wait(w->dev, w->all, w->objs, w->count, w->owner, w->alert,
			w->flags, w->timeout, &index);
	err = ret < 0 ? errno : 0;
	w->ret = ret;
	w->err = err;
	w->index = index;
	w->done_seq = atomic_fetch_add(&done_counter, 1) + 1;
	atomic_store(&w->state, 2);
}

static void *waiter_thread(void *arg)
{
	waiter_run(arg);
	return NULL;
}

int waiter_start(struct waiter *w)
{
	w->tid = 0;
	if (w->process) {
		pid_t pid = fork();

		if (pid < 0)
			return -1;
		if (pid == 0) {
			waiter_run(w);
			_exit(0);
		}
		w->pid = pid;
		return 0;
	}
	w->pid = getpid();
	return pthread_create(&w->thread, NULL, waiter_thread, w);
}

/* Is task pid/tid asleep (S) inside ioctl()? */
static bool task_sleeps_in_ioctl(pid_t pid, pid_t tid)
{
	char path[64], buf[512];
	const char *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || p[2] != 'S')
		return false;

	/* Confirm the syscall where readable (needs ptrace access). */
	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = 0;
	return atol(buf) == SYS_ioctl;
}

bool waiter_blocked(struct waiter *w)
{
	uint64_t end = now_ns(CLOCK_MONOTONIC) + GUARD_MS * NSEC_PER_MSEC;

	while (now_ns(CLOCK_MONOTONIC) < end) {
		int st = atomic_load(&w->state);

		if (st == 2)
			return false;
		if (st == 1 && w->tid && task_sleeps_in_ioctl(w->pid, w->tid))
			return true;
		usleep(500);
	}
	return false;
}

bool waiter_done(struct waiter *w)
{
	return atomic_load(&w->state) == 2;
}

unsigned int waiters_until_done(struct waiter *w, unsigned int nw,
				unsigned int n)
{
	uint64_t end = now_ns(CLOCK_MONOTONIC) + GUARD_MS * NSEC_PER_MSEC;
	unsigned int done;

	for (;;) {
		done = 0;
		for (unsigned int i = 0; i < nw; i++)
			done += waiter_done(&w[i]);
		if (done >= n || now_ns(CLOCK_MONOTONIC) >= end)
			return done;
		usleep(200);
	}
}

bool waiter_join(struct waiter *w)
{
	bool ok;

	if (w->reaped)
		return true;
	ok = waiters_until_done(w, 1, 1) == 1;
	if (w->process) {
		int status;

		if (!ok)
			kill(w->pid, SIGKILL);
		while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR)
			;
	} else {
		while (!ok && !waiter_done(w)) {
			pthread_kill(w->thread, RESCUE_SIGNAL);
			usleep(1000);
		}
		pthread_join(w->thread, NULL);
	}
	w->reaped = true;
	return ok;
}

/* ---- cleanup run by every case's teardown ---- */

#define DEFER_MAX 1024

static struct deferred {
	int fd;		/* >= 0: close it */
	void *p;	/* else free it */
} deferred[DEFER_MAX];
static unsigned int n_deferred;

static void defer(int fd, void *p)
{
	if (n_deferred == DEFER_MAX) {
		print_error("more than %u deferred cleanups in one case\n", DEFER_MAX);
		fail();
	}
	deferred[n_deferred].fd = fd;
	deferred[n_deferred].p = p;
	n_deferred++;
}

int defer_close(int fd)
{
	if (fd >= 0)
		defer(fd, NULL);
	return fd;
}

void *defer_free(void *p)
{
	if (p)
		defer(-1, p);
	return p;
}

/* Last in, first out: objects close before their device, memory goes last
 * when it was handed over first. */
static int run_deferred(void **state)
{
	(void)state;
	while (n_deferred) {
		struct deferred *d = &deferred[--n_deferred];

		if (d->fd >= 0)
			close(d->fd);
		else
			free(d->p);
	}
	return 0;
}

static void rescue_handler(int sig)
{
	(void)sig;
}

static void usage(const char *argv0, const struct CMUnitTest *tests,
		  size_t count)
{
	(void)tests;
	(void)count;
	printf("Usage: %s [--list] [PATTERN]\n"
	       "  --list    print the names of the test cases, one a line\n"
	       "  PATTERN   run only the test cases matching PATTERN (* and ?)\n"
	       "Set CMOCKA_MESSAGE_OUTPUT=TAP for TAP output.\n"
	       "Exit status 77: skipped (no usable /dev/ntsync).\n", argv0);
}

int ntsync_test_main(int argc, char **argv, const char *group,
		     const struct CMUnitTest *tests, size_t count,
		     bool need_device)
{
	struct CMUnitTest *cases;
	struct sigaction sa;
	int failed;

	/* Line-buffered, so a runner that merges stdout and stderr keeps
	 * each message next to the result of its test case. */
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (argc > 1 && !strcmp(argv[1], "--list")) {
		for (size_t i = 0; i < count; i++)
			printf("%s\n", tests[i].name);
		return 0;
	}
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(argv[0], tests, count);
		return 0;
	}
	if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
		fprintf(stderr, "%s: unknown arguments; try --help\n", argv[0]);
		return 2;
	}
	if (argc == 2)
		cmocka_set_test_filter(argv[1]);

	if (need_device) {
		int fd = ntr_open();

		if (fd < 0) {
			int err = errno;

			fprintf(stderr,
				"%s: SKIP: cannot open " NTR_DEVICE ": %s%s\n",
				group, strerror(err),
				err == ENOENT ?
				" (load the ntsync module: modprobe ntsync)" : "");
			return 77;
		}
		close(fd);
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = rescue_handler;
	sigemptyset(&sa.sa_mask);
	sigaction(RESCUE_SIGNAL, &sa, NULL);

	cases = calloc(count, sizeof(*cases));
	if (!cases) {
		fprintf(stderr, "%s: out of memory\n", group);
		return 1;
	}
	memcpy(cases, tests, count * sizeof(*cases));
	for (size_t i = 0; i < count; i++)
		if (!cases[i].teardown_func)
			cases[i].teardown_func = run_deferred;
	failed = _cmocka_run_group_tests(group, cases, count, NULL, NULL);
	free(cases);
	return failed ? 1 : 0;
}
