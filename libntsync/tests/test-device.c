// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libntsync against a real /dev/ntsync: every call once, end to end, to show
 * that the library's structures and results match the driver's.  The
 * behaviour of the driver itself is tested in depth by the conformance
 * suite in tests/.  Exits 77 (skipped) where the device cannot be opened;
 * the device path can be overridden with NTSYNC_DEVICE.  One test shares an
 * instance the way an emulator does: a server process opens it and sends
 * the device and an object over UNIX sockets to clients it starts with
 * exec (this program again, with --client FD), which adopt the device with
 * ntsync_open_fd() and wait through it.  Installed as
 * test-libntsync next to the conformance suite, so ntsync-run-tests runs it
 * in guests too.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <ntsync.h>

#define POISON32 0xccccccccu
/* A generous bound so that a broken wake fails instead of hanging. */
#define WAKE_BOUND_NS UINT64_C(60000000000)

static const char *device_path(void)
{
	const char *p = getenv("NTSYNC_DEVICE");

	return p && *p ? p : NTSYNC_DEFAULT_PATH;
}

static int setup(void **state)
{
	struct ntsync_device *dev;

	if (ntsync_open(device_path(), &dev) != 0)
		return -1;
	*state = dev;
	return 0;
}

static int teardown(void **state)
{
	ntsync_close(*state);
	return 0;
}

static void semaphore(void **state)
{
	struct ntsync_device *dev = *state;
	uint32_t count = POISON32, max = POISON32, prev = POISON32, index;
	int sem;

	assert_int_equal(ntsync_sem_create(dev, 3, 2), -EINVAL);
	sem = ntsync_sem_create(dev, 1, 3);
	assert_true(sem >= 0);
	assert_int_equal(ntsync_sem_read(sem, &count, &max), 0);
	assert_int_equal(count, 1);
	assert_int_equal(max, 3);
	assert_int_equal(ntsync_sem_release(sem, 2, &prev), 0);
	assert_int_equal(prev, 1);
	prev = POISON32;
	assert_int_equal(ntsync_sem_release(sem, 1, &prev), -EOVERFLOW);
	assert_int_equal(prev, POISON32);
	assert_int_equal(ntsync_wait_any(dev, &sem, 1, 1, NTSYNC_NO_ALERT,
					 ntsync_timeout_relative(0), &index), 0);
	assert_int_equal(index, 0);
	assert_int_equal(ntsync_sem_read(sem, &count, &max), 0);
	assert_int_equal(count, 2);
	assert_int_equal(close(sem), 0);
}

static void mutex(void **state)
{
	struct ntsync_device *dev = *state;
	uint32_t owner = POISON32, count = POISON32, prev = POISON32, index;
	int mtx;

	assert_int_equal(ntsync_mutex_create(dev, 0, 1), -EINVAL);
	mtx = ntsync_mutex_create(dev, 7, 2);
	assert_true(mtx >= 0);
	assert_int_equal(ntsync_mutex_read(mtx, &owner, &count), 0);
	assert_int_equal(owner, 7);
	assert_int_equal(count, 2);
	assert_int_equal(ntsync_mutex_unlock(mtx, 8, &prev), -EPERM);
	assert_int_equal(prev, POISON32);
	assert_int_equal(ntsync_mutex_unlock(mtx, 7, &prev), 0);
	assert_int_equal(prev, 2);
	assert_int_equal(ntsync_mutex_kill(mtx, 8), -EPERM);
	assert_int_equal(ntsync_mutex_kill(mtx, 7), 0);

	owner = count = POISON32;
	assert_int_equal(ntsync_mutex_read(mtx, &owner, &count), -EOWNERDEAD);
	assert_int_equal(owner, 0);
	assert_int_equal(count, 0);

	/* acquiring the abandoned mutex: -EOWNERDEAD with a valid index */
	index = POISON32;
	assert_int_equal(ntsync_wait_any(dev, &mtx, 1, 9, NTSYNC_NO_ALERT,
					 ntsync_timeout_relative(0), &index),
			 -EOWNERDEAD);
	assert_int_equal(index, 0);
	assert_int_equal(ntsync_mutex_read(mtx, &owner, &count), 0);
	assert_int_equal(owner, 9);
	assert_int_equal(count, 1);
	assert_int_equal(close(mtx), 0);
}

static void event(void **state)
{
	struct ntsync_device *dev = *state;
	bool manual = false, signaled = true, prev = true;
	uint32_t index;
	int ev;

	ev = ntsync_event_create(dev, true, false);
	assert_true(ev >= 0);
	assert_int_equal(ntsync_event_read(ev, &manual, &signaled), 0);
	assert_true(manual);
	assert_false(signaled);
	assert_int_equal(ntsync_event_set(ev, &prev), 0);
	assert_false(prev);
	assert_int_equal(ntsync_event_set(ev, &prev), 0);
	assert_true(prev);
	/* manual-reset: a wait leaves it signalled */
	assert_int_equal(ntsync_wait_any(dev, &ev, 1, 1, NTSYNC_NO_ALERT,
					 ntsync_timeout_relative(0), &index), 0);
	assert_int_equal(ntsync_event_read(ev, &manual, &signaled), 0);
	assert_true(signaled);
	assert_int_equal(ntsync_event_reset(ev, &prev), 0);
	assert_true(prev);
	assert_int_equal(ntsync_event_pulse(ev, &prev), 0);
	assert_false(prev);
	assert_int_equal(ntsync_event_read(ev, &manual, &signaled), 0);
	assert_false(signaled);
	assert_int_equal(close(ev), 0);

	ev = ntsync_event_create(dev, false, true);
	assert_true(ev >= 0);
	assert_int_equal(ntsync_event_read(ev, &manual, &signaled), 0);
	assert_false(manual);
	assert_true(signaled);
	/* auto-reset: a wait consumes the signal */
	assert_int_equal(ntsync_wait_any(dev, &ev, 1, 1, NTSYNC_NO_ALERT,
					 ntsync_timeout_relative(0), &index), 0);
	assert_int_equal(ntsync_event_read(ev, &manual, &signaled), 0);
	assert_false(signaled);
	assert_int_equal(close(ev), 0);
}

static void wait_all_and_alert(void **state)
{
	struct ntsync_device *dev = *state;
	uint32_t index = POISON32, count, max;
	int objs[2], alert;

	objs[0] = ntsync_sem_create(dev, 1, 1);
	objs[1] = ntsync_event_create(dev, false, false);
	alert = ntsync_event_create(dev, true, false);
	assert_true(objs[0] >= 0 && objs[1] >= 0 && alert >= 0);

	/* not all signalled: a poll times out and changes nothing */
	assert_int_equal(ntsync_wait_all(dev, objs, 2, 1, alert,
					 ntsync_timeout_relative(0), &index),
			 -ETIMEDOUT);
	assert_int_equal(index, POISON32);
	assert_int_equal(ntsync_sem_read(objs[0], &count, &max), 0);
	assert_int_equal(count, 1);

	/* the alert ends it with index == count */
	assert_int_equal(ntsync_event_set(alert, NULL), 0);
	assert_int_equal(ntsync_wait_all(dev, objs, 2, 1, alert,
					 ntsync_timeout_relative(0), &index), 0);
	assert_int_equal(index, 2);
	assert_int_equal(ntsync_sem_read(objs[0], &count, &max), 0);
	assert_int_equal(count, 1);
	assert_int_equal(ntsync_event_reset(alert, NULL), 0);

	/* all signalled: both acquired, index 0 */
	assert_int_equal(ntsync_event_set(objs[1], NULL), 0);
	index = POISON32;
	assert_int_equal(ntsync_wait_all(dev, objs, 2, 1, alert,
					 ntsync_timeout_relative(0), &index), 0);
	assert_int_equal(index, 0);
	assert_int_equal(ntsync_sem_read(objs[0], &count, &max), 0);
	assert_int_equal(count, 0);

	close(objs[0]);
	close(objs[1]);
	close(alert);
}

static uint64_t realtime_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void timeouts(void **state)
{
	struct ntsync_device *dev = *state;
	int ev = ntsync_event_create(dev, false, false);

	assert_true(ev >= 0);
	assert_int_equal(ntsync_wait_any(dev, &ev, 1, 1, NTSYNC_NO_ALERT,
					 ntsync_timeout_relative(1000000), NULL),
			 -ETIMEDOUT);
	assert_int_equal(ntsync_wait_any(dev, &ev, 1, 1, NTSYNC_NO_ALERT,
					 ntsync_timeout_monotonic(0), NULL),
			 -ETIMEDOUT);
	assert_int_equal(ntsync_wait_any(dev, &ev, 1, 1, NTSYNC_NO_ALERT,
					 ntsync_timeout_realtime(realtime_now()),
					 NULL),
			 -ETIMEDOUT);
	/* no objects at all: only the time-out ends it */
	assert_int_equal(ntsync_wait_any(dev, NULL, 0, 1, NTSYNC_NO_ALERT,
					 ntsync_timeout_relative(0), NULL),
			 -ETIMEDOUT);
	close(ev);
}

struct waiter {
	struct ntsync_device *dev;
	int obj;
	int ret;
	uint32_t index;
};

static void *waiter_main(void *p)
{
	struct waiter *w = p;

	w->ret = ntsync_wait_any(w->dev, &w->obj, 1, 1, NTSYNC_NO_ALERT,
				 ntsync_timeout_relative(WAKE_BOUND_NS),
				 &w->index);
	return NULL;
}

/* A sleeping waiter is woken by a set from another thread. */
static void wake_from_other_thread(void **state)
{
	struct waiter w = { *state, -1, -1, POISON32 };
	pthread_t t;

	w.obj = ntsync_event_create(w.dev, false, false);
	assert_true(w.obj >= 0);
	assert_int_equal(pthread_create(&t, NULL, waiter_main, &w), 0);
	assert_int_equal(ntsync_event_set(w.obj, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(w.ret, 0);
	assert_int_equal(w.index, 0);
	close(w.obj);
}

/* Objects outlive the handle; another instance refuses them in waits. */
static void objects_outlive_handle(void **state)
{
	struct ntsync_device *a, *b;
	uint32_t count, max;
	int sem;

	(void)state;
	assert_int_equal(ntsync_open(device_path(), &a), 0);
	assert_int_equal(ntsync_open(device_path(), &b), 0);
	sem = ntsync_sem_create(a, 1, 2);
	assert_true(sem >= 0);
	assert_int_equal(ntsync_wait_any(b, &sem, 1, 1, NTSYNC_NO_ALERT,
					 ntsync_timeout_relative(0), NULL),
			 -EINVAL);
	ntsync_close(a);
	assert_int_equal(ntsync_sem_release(sem, 1, NULL), 0);
	assert_int_equal(ntsync_sem_read(sem, &count, &max), 0);
	assert_int_equal(count, 2);
	assert_int_equal(max, 2);
	ntsync_close(b);
	close(sem);
}

/* ---- an instance shared with exec'd client processes ---- */

#define SHARE_CLIENTS 4
/* Owner ids of the clients' waits: distinct, like Windows thread ids. */
#define SHARE_OWNER(i) (0x100u + (uint32_t)(i))

/* One byte of data (the client's number) and n descriptors. */
static int send_fds(int sock, unsigned char byte, const int *fds, int n)
{
	char buf[CMSG_SPACE(4 * sizeof(int))];
	struct iovec iov = { &byte, 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = buf,
			      .msg_controllen = CMSG_SPACE(n * sizeof(int)) };
	struct cmsghdr *c;

	memset(buf, 0, sizeof(buf));
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(n * sizeof(int));
	memcpy(CMSG_DATA(c), fds, n * sizeof(int));
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == 1 ? 0 : -errno;
}

/* Receive exactly n descriptors (close-on-exec) and the byte; -errno. */
static int recv_fds(int sock, unsigned char *byte, int *fds, int n)
{
	char buf[CMSG_SPACE(4 * sizeof(int))];
	struct iovec iov = { byte, 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = buf,
			      .msg_controllen = sizeof(buf) };
	struct cmsghdr *c;
	ssize_t r = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);

	if (r < 0)
		return -errno;
	c = CMSG_FIRSTHDR(&msg);
	if (r != 1 || !c || c->cmsg_type != SCM_RIGHTS ||
	    c->cmsg_len != CMSG_LEN(n * sizeof(int)) ||
	    (msg.msg_flags & MSG_CTRUNC))
		return -EPROTO;
	memcpy(fds, CMSG_DATA(c), n * sizeof(int));
	return 0;
}

/* read() exactly len bytes within timeout_ms; 0 or -errno (-ETIMEDOUT). */
static int read_all(int fd, void *p, size_t len, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char *b = p;

	while (len) {
		int r = poll(&pfd, 1, timeout_ms);
		ssize_t n;

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		n = read(fd, b, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPIPE;
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

/* What a client reports back: its wait's result and index. */
struct share_report {
	int32_t reopen_ret;	/* wait through a fresh instance: -EINVAL */
	int32_t ret;
	uint32_t index;
};

/*
 * The client, exec'd with --client FD: receive the device and the
 * semaphore, adopt the device (client 1 and 3 with NTSYNC_OPEN_FD_DUP), show
 * that a fresh instance refuses the semaphore, tell the server it is ready,
 * wait for the semaphore and report.  Exit 0 when it could report.
 */
static int share_client(const char *fd_arg)
{
	struct share_report rep = { 0, 0, POISON32 };
	struct ntsync_device *dev, *fresh;
	unsigned char idx, ready = 'r';
	int sock = atoi(fd_arg), fds[2], ret;
	unsigned int flags;

	ret = recv_fds(sock, &idx, fds, 2);
	if (ret < 0) {
		fprintf(stderr, "client: receiving the descriptors: %s\n",
			strerror(-ret));
		return 1;
	}
	flags = (idx & 1) ? NTSYNC_OPEN_FD_DUP : 0;
	ret = ntsync_open_fd(fds[0], flags, &dev);
	if (ret < 0) {
		fprintf(stderr, "client %u: ntsync_open_fd: %s\n", idx,
			strerror(-ret));
		return 1;
	}
	if (flags & NTSYNC_OPEN_FD_DUP)
		close(fds[0]);
	rep.reopen_ret = ntsync_open(device_path(), &fresh);
	if (rep.reopen_ret == 0) {
		rep.reopen_ret = ntsync_wait_any(fresh, &fds[1], 1,
						 SHARE_OWNER(idx),
						 NTSYNC_NO_ALERT,
						 ntsync_timeout_relative(0),
						 NULL);
		ntsync_close(fresh);
	}
	if (write(sock, &ready, 1) != 1)
		return 1;
	rep.ret = ntsync_wait_any(dev, &fds[1], 1, SHARE_OWNER(idx),
				  NTSYNC_NO_ALERT,
				  ntsync_timeout_relative(WAKE_BOUND_NS),
				  &rep.index);
	if (write(sock, &rep, sizeof(rep)) != (ssize_t)sizeof(rep))
		return 1;
	ntsync_close(dev);
	close(fds[1]);
	return 0;
}

static void shared_with_exec_clients(void **state)
{
	struct ntsync_device *dev = *state;
	int socks[SHARE_CLIENTS];
	pid_t pids[SHARE_CLIENTS];
	uint32_t count, max;
	int sem, i;

	sem = ntsync_sem_create(dev, 0, SHARE_CLIENTS);
	assert_true(sem >= 0);
	for (i = 0; i < SHARE_CLIENTS; i++) {
		int sv[2], fds[2] = { ntsync_device_fd(dev), sem };
		char arg[16];

		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC,
					    0, sv), 0);
		snprintf(arg, sizeof(arg), "%d", sv[1]);
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			/* only the client's end survives the exec */
			fcntl(sv[1], F_SETFD, 0);
			execl("/proc/self/exe", "test-libntsync", "--client",
			      arg, (char *)NULL);
			fprintf(stderr, "exec /proc/self/exe: %s\n",
				strerror(errno));
			_exit(127);
		}
		close(sv[1]);
		socks[i] = sv[0];
		assert_int_equal(send_fds(socks[i], (unsigned char)i, fds, 2),
				 0);
	}
	/* every client has adopted the device before the release */
	for (i = 0; i < SHARE_CLIENTS; i++) {
		char c = 0;

		assert_int_equal(read_all(socks[i], &c, 1, 60000), 0);
		assert_int_equal(c, 'r');
	}
	assert_int_equal(ntsync_sem_release(sem, SHARE_CLIENTS, NULL), 0);
	for (i = 0; i < SHARE_CLIENTS; i++) {
		struct share_report rep;
		int status;

		assert_int_equal(read_all(socks[i], &rep, sizeof(rep), 60000),
				 0);
		/* another instance of the same node refuses the object */
		assert_int_equal(rep.reopen_ret, -EINVAL);
		/* the adopted handle is the server's instance */
		assert_int_equal(rep.ret, 0);
		assert_int_equal(rep.index, 0);
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		close(socks[i]);
	}
	/* each client took one count */
	assert_int_equal(ntsync_sem_read(sem, &count, &max), 0);
	assert_int_equal(count, 0);
	close(sem);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(semaphore, setup, teardown),
		cmocka_unit_test_setup_teardown(mutex, setup, teardown),
		cmocka_unit_test_setup_teardown(event, setup, teardown),
		cmocka_unit_test_setup_teardown(wait_all_and_alert, setup, teardown),
		cmocka_unit_test_setup_teardown(timeouts, setup, teardown),
		cmocka_unit_test_setup_teardown(wake_from_other_thread, setup, teardown),
		cmocka_unit_test(objects_outlive_handle),
		cmocka_unit_test_setup_teardown(shared_with_exec_clients, setup,
						teardown),
	};
	struct ntsync_device *dev;
	size_t i;
	int ret;

	/* Same command line as the conformance suite's binaries, so that
	 * ntsync-run-tests can list, filter and count this one too. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && strcmp(argv[1], "--client") == 0)
		return share_client(argv[2]);
	if (argc > 1 && strcmp(argv[1], "--list") == 0) {
		for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
			printf("%s\n", tests[i].name);
		return 0;
	}
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 ||
			 strcmp(argv[1], "-h") == 0)) {
		printf("Usage: %s [--list] [PATTERN]\n"
		       "libntsync against a real device (NTSYNC_DEVICE, default "
		       NTSYNC_DEFAULT_PATH ").\n"
		       "Exit status 77: skipped (no usable device).\n", argv[0]);
		return 0;
	}
	if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
		fprintf(stderr, "%s: unknown arguments; try --help\n", argv[0]);
		return 2;
	}
	if (argc == 2)
		cmocka_set_test_filter(argv[1]);

	ret = ntsync_open(device_path(), &dev);
	if (ret < 0) {
		printf("libntsync: SKIP: cannot open %s: %s%s\n", device_path(),
		       strerror(-ret), ret == -ENOENT ?
		       " (load the ntsync module: modprobe ntsync)" : "");
		return 77;
	}
	ntsync_close(dev);
	return cmocka_run_group_tests_name("libntsync", tests, NULL, NULL);
}
