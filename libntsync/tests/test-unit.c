// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host unit tests of libntsync, no device needed.
 *
 * The library is linked statically with -Wl,--wrap=ioctl, so every ioctl it
 * issues lands in __wrap_ioctl() below: a fake kernel that records the
 * request and the bytes the library passed, writes back prepared output and
 * returns a prepared result.  The tests check the exact ABI structures the
 * library builds, the -EINVAL checks it makes before any system call, how
 * results and -errno values come back, and the time-out helpers.
 */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <linux/ntsync.h>
#include <ntsync.h>

int __wrap_ioctl(int fd, unsigned long request, ...);

#define POISON8 0xcc
#define POISON32 0xccccccccu

static struct {
	int calls;
	int fd;
	unsigned long request;
	unsigned char in[64];	/* argument bytes as the library passed them */
	unsigned char out[64];	/* bytes to write back (out_len of them) */
	size_t out_len;
	int ret;		/* >= 0: return value; < 0: fail with -ret */
	int fail_without_errno;	/* return -1 with errno 0 */
} fake;

static void fake_reset(void)
{
	memset(&fake, 0, sizeof(fake));
	memset(fake.in, POISON8, sizeof(fake.in));
	fake.fd = -1;
}

static void fake_result(int ret, const void *out, size_t len)
{
	fake.ret = ret;
	fake.out_len = len;
	if (len)
		memcpy(fake.out, out, len);
}

int __wrap_ioctl(int fd, unsigned long request, ...)
{
	va_list ap;
	void *arg;
	size_t size = _IOC_SIZE(request);

	va_start(ap, request);
	arg = va_arg(ap, void *);
	va_end(ap);

	fake.calls++;
	fake.fd = fd;
	fake.request = request;
	assert_true(size <= sizeof(fake.in));
	memcpy(fake.in, arg, size);
	if (fake.out_len)
		memcpy(arg, fake.out, fake.out_len);
	if (fake.fail_without_errno) {
		errno = 0;
		return -1;
	}
	if (fake.ret < 0) {
		errno = -fake.ret;
		return -1;
	}
	return fake.ret;
}

/* An instance handle around /dev/null: open works, ioctls go to the fake. */
static int setup_dev(void **state)
{
	struct ntsync_device *dev = NULL;

	if (ntsync_open("/dev/null", &dev) != 0)
		return -1;
	*state = dev;
	fake_reset();
	return 0;
}

static int teardown_dev(void **state)
{
	ntsync_close(*state);
	return 0;
}

static int setup_fake(void **state)
{
	(void)state;
	fake_reset();
	return 0;
}

static int fcntl_cloexec(int fd)
{
	int flags = fcntl(fd, F_GETFD);

	return flags >= 0 && (flags & FD_CLOEXEC);
}

/* ---- device handle ---- */

static void open_null_out(void **state)
{
	(void)state;
	assert_int_equal(ntsync_open("/dev/null", NULL), -EINVAL);
	assert_int_equal(ntsync_open(NULL, NULL), -EINVAL);
}

static void open_missing_path(void **state)
{
	struct ntsync_device *dev = (struct ntsync_device *)&dev;

	(void)state;
	assert_int_equal(ntsync_open("/nonexistent/ntsync", &dev), -ENOENT);
	assert_null(dev);
}

static void open_not_a_directory(void **state)
{
	struct ntsync_device *dev = (struct ntsync_device *)&dev;

	(void)state;
	assert_int_equal(ntsync_open("/dev/null/ntsync", &dev), -ENOTDIR);
	assert_null(dev);
}

static void open_fd_close(void **state)
{
	struct ntsync_device *dev = NULL;
	int fd;

	(void)state;
	assert_int_equal(ntsync_open("/dev/null", &dev), 0);
	assert_non_null(dev);
	fd = ntsync_device_fd(dev);
	assert_true(fd >= 0);
	/* close-on-exec, like every descriptor the library makes */
	assert_true(fcntl_cloexec(fd));
	ntsync_close(dev);
	/* the descriptor is gone with the handle */
	assert_int_equal(close(fd), -1);
	assert_int_equal(errno, EBADF);
}

static void close_null_and_fd_null(void **state)
{
	(void)state;
	ntsync_close(NULL);
	assert_int_equal(ntsync_device_fd(NULL), -EINVAL);
}

static void version_string(void **state)
{
	(void)state;
	assert_string_equal(ntsync_version(), EXPECTED_VERSION);
}

/* The header's compile-time version is the library's (meson.build). */
static void version_macros(void **state)
{
	char want[32];

	(void)state;
	snprintf(want, sizeof(want), "%d.%d.%d", LIBNTSYNC_VERSION_MAJOR,
		 LIBNTSYNC_VERSION_MINOR, LIBNTSYNC_VERSION_PATCH);
	assert_string_equal(want, EXPECTED_LIB_VERSION);
	assert_true(LIBNTSYNC_CHECK_VERSION(1, 0));
	assert_true(LIBNTSYNC_CHECK_VERSION(1, 1));
	assert_true(LIBNTSYNC_CHECK_VERSION(0, 99));
	assert_false(LIBNTSYNC_CHECK_VERSION(1, LIBNTSYNC_VERSION_MINOR + 1));
	assert_false(LIBNTSYNC_CHECK_VERSION(2, 0));
}

/* ---- ntsync_open_fd: adopting a descriptor ---- */

static int open_null_dev(void)
{
	int fd = open("/dev/null", O_RDONLY);

	assert_true(fd >= 0);
	return fd;
}

static void open_fd_takes_over(void **state)
{
	struct ntsync_device *dev = NULL;
	int fd = open_null_dev();

	(void)state;
	fake_reset();
	assert_int_equal(ntsync_open_fd(fd, 0, &dev), 0);
	assert_non_null(dev);
	/* the very descriptor, its flags untouched (no close-on-exec added) */
	assert_int_equal(ntsync_device_fd(dev), fd);
	assert_false(fcntl_cloexec(fd));
	/* the handle issues its ioctls on it */
	fake_result(9, NULL, 0);
	assert_int_equal(ntsync_sem_create(dev, 0, 1), 9);
	assert_int_equal(fake.fd, fd);
	ntsync_close(dev);
	/* ntsync_close() closed it */
	assert_int_equal(fcntl(fd, F_GETFD), -1);
	assert_int_equal(errno, EBADF);
}

static void open_fd_dup(void **state)
{
	struct ntsync_device *dev = NULL;
	int fd = open_null_dev(), dfd;

	(void)state;
	assert_int_equal(ntsync_open_fd(fd, NTSYNC_OPEN_FD_DUP, &dev), 0);
	assert_non_null(dev);
	dfd = ntsync_device_fd(dev);
	assert_true(dfd >= 0);
	assert_int_not_equal(dfd, fd);
	assert_true(fcntl_cloexec(dfd));
	ntsync_close(dev);
	/* the duplicate is closed, the caller's descriptor is not */
	assert_int_equal(fcntl(dfd, F_GETFD), -1);
	assert_int_equal(errno, EBADF);
	assert_true(fcntl(fd, F_GETFD) >= 0);
	assert_int_equal(close(fd), 0);
}

static void open_fd_bad_input(void **state)
{
	struct ntsync_device *dev = (struct ntsync_device *)&dev;
	int fd = open_null_dev(), sv[2], pfd[2], path_fd, closed;

	(void)state;
	assert_int_equal(ntsync_open_fd(fd, 0, NULL), -EINVAL);
	assert_int_equal(ntsync_open_fd(fd, 0x2, &dev), -EINVAL);
	assert_null(dev);
	dev = (struct ntsync_device *)&dev;
	assert_int_equal(ntsync_open_fd(fd, ~0u, &dev), -EINVAL);
	assert_null(dev);
	dev = (struct ntsync_device *)&dev;
	assert_int_equal(ntsync_open_fd(-1, 0, &dev), -EBADF);
	assert_null(dev);
	/* a closed descriptor number */
	closed = open_null_dev();
	assert_int_equal(close(closed), 0);
	assert_int_equal(ntsync_open_fd(closed, 0, &dev), -EBADF);
	assert_int_equal(ntsync_open_fd(INT_MAX, NTSYNC_OPEN_FD_DUP, &dev), -EBADF);
	/* not character devices */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(ntsync_open_fd(sv[0], 0, &dev), -ENOTTY);
	assert_null(dev);
	assert_int_equal(pipe(pfd), 0);
	assert_int_equal(ntsync_open_fd(pfd[0], NTSYNC_OPEN_FD_DUP, &dev), -ENOTTY);
	path_fd = open("/dev/null", O_PATH);
	assert_true(path_fd >= 0);
	assert_int_equal(ntsync_open_fd(path_fd, 0, &dev), -EBADF);
	/* a failed call leaves the descriptors open and the caller's */
	assert_int_equal(close(sv[0]), 0);
	assert_int_equal(close(sv[1]), 0);
	assert_int_equal(close(pfd[0]), 0);
	assert_int_equal(close(pfd[1]), 0);
	assert_int_equal(close(path_fd), 0);
	assert_int_equal(close(fd), 0);
}

static void open_fd_regular_file(void **state)
{
	struct ntsync_device *dev = (struct ntsync_device *)&dev;
	char path[] = "/tmp/libntsync-unit.XXXXXX";
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(ntsync_open_fd(fd, 0, &dev), -ENOTTY);
	assert_null(dev);
	assert_int_equal(close(fd), 0);
}

/* ---- creation: NULL device, argument mapping, result ---- */

static void create_null_device(void **state)
{
	(void)state;
	assert_int_equal(ntsync_sem_create(NULL, 1, 2), -EINVAL);
	assert_int_equal(ntsync_mutex_create(NULL, 0, 0), -EINVAL);
	assert_int_equal(ntsync_event_create(NULL, true, false), -EINVAL);
	assert_int_equal(fake.calls, 0);
}

static void sem_create_args(void **state)
{
	struct ntsync_device *dev = *state;
	struct ntsync_sem_args in;

	fake_result(42, NULL, 0);
	assert_int_equal(ntsync_sem_create(dev, 3, 7), 42);
	assert_int_equal(fake.calls, 1);
	assert_int_equal(fake.fd, ntsync_device_fd(dev));
	assert_true(fake.request == NTSYNC_IOC_CREATE_SEM);
	memcpy(&in, fake.in, sizeof(in));
	assert_int_equal(in.count, 3);
	assert_int_equal(in.max, 7);
}

static void sem_create_error(void **state)
{
	fake_result(-EINVAL, NULL, 0);
	assert_int_equal(ntsync_sem_create(*state, 8, 7), -EINVAL);
	fake_result(-EMFILE, NULL, 0);
	assert_int_equal(ntsync_sem_create(*state, 0, 1), -EMFILE);
}

static void mutex_create_args(void **state)
{
	struct ntsync_device *dev = *state;
	struct ntsync_mutex_args in;

	fake_result(5, NULL, 0);
	assert_int_equal(ntsync_mutex_create(dev, 0x1234, 2), 5);
	assert_true(fake.request == NTSYNC_IOC_CREATE_MUTEX);
	memcpy(&in, fake.in, sizeof(in));
	assert_int_equal(in.owner, 0x1234);
	assert_int_equal(in.count, 2);
}

static void event_create_args(void **state)
{
	struct ntsync_device *dev = *state;
	struct ntsync_event_args in;

	fake_result(6, NULL, 0);
	assert_int_equal(ntsync_event_create(dev, true, false), 6);
	assert_true(fake.request == NTSYNC_IOC_CREATE_EVENT);
	memcpy(&in, fake.in, sizeof(in));
	assert_int_equal(in.manual, 1);
	assert_int_equal(in.signaled, 0);

	fake_result(7, NULL, 0);
	assert_int_equal(ntsync_event_create(dev, false, true), 7);
	memcpy(&in, fake.in, sizeof(in));
	assert_int_equal(in.manual, 0);
	assert_int_equal(in.signaled, 1);
}

/* ---- semaphore operations ---- */

static void sem_release_args(void **state)
{
	__u32 prev_out = 4, in;
	uint32_t prev = POISON32;

	(void)state;
	fake_result(0, &prev_out, sizeof(prev_out));
	assert_int_equal(ntsync_sem_release(9, 2, &prev), 0);
	assert_int_equal(fake.fd, 9);
	assert_true(fake.request == NTSYNC_IOC_SEM_RELEASE);
	memcpy(&in, fake.in, sizeof(in));
	assert_int_equal(in, 2);
	assert_int_equal(prev, 4);

	/* prev_count is optional */
	assert_int_equal(ntsync_sem_release(9, 1, NULL), 0);
	assert_int_equal(fake.calls, 2);
}

static void sem_release_overflow_leaves_prev(void **state)
{
	uint32_t prev = POISON32;

	(void)state;
	fake_result(-EOVERFLOW, NULL, 0);
	assert_int_equal(ntsync_sem_release(9, 5, &prev), -EOVERFLOW);
	assert_int_equal(prev, POISON32);
}

static void sem_read_args(void **state)
{
	struct ntsync_sem_args out = { .count = 2, .max = 10 };
	uint32_t count = POISON32, max = POISON32;

	(void)state;
	assert_int_equal(ntsync_sem_read(9, NULL, &max), -EINVAL);
	assert_int_equal(ntsync_sem_read(9, &count, NULL), -EINVAL);
	assert_int_equal(fake.calls, 0);

	fake_result(0, &out, sizeof(out));
	assert_int_equal(ntsync_sem_read(9, &count, &max), 0);
	assert_true(fake.request == NTSYNC_IOC_SEM_READ);
	assert_int_equal(count, 2);
	assert_int_equal(max, 10);

	count = max = POISON32;
	fake_result(-EINVAL, NULL, 0);
	assert_int_equal(ntsync_sem_read(9, &count, &max), -EINVAL);
	assert_int_equal(count, POISON32);
	assert_int_equal(max, POISON32);
}

/* ---- mutex operations ---- */

static void mutex_unlock_args(void **state)
{
	struct ntsync_mutex_args out = { .owner = 0, .count = 3 }, in;
	uint32_t prev = POISON32;

	(void)state;
	fake_result(0, &out, sizeof(out));
	assert_int_equal(ntsync_mutex_unlock(11, 77, &prev), 0);
	assert_true(fake.request == NTSYNC_IOC_MUTEX_UNLOCK);
	memcpy(&in, fake.in, sizeof(in));
	assert_int_equal(in.owner, 77);
	assert_int_equal(in.count, 0);
	assert_int_equal(prev, 3);
	assert_int_equal(ntsync_mutex_unlock(11, 77, NULL), 0);

	prev = POISON32;
	fake_result(-EPERM, NULL, 0);
	assert_int_equal(ntsync_mutex_unlock(11, 78, &prev), -EPERM);
	assert_int_equal(prev, POISON32);
}

static void mutex_kill_args(void **state)
{
	__u32 in;

	(void)state;
	fake_result(0, NULL, 0);
	assert_int_equal(ntsync_mutex_kill(11, 99), 0);
	assert_true(fake.request == NTSYNC_IOC_MUTEX_KILL);
	memcpy(&in, fake.in, sizeof(in));
	assert_int_equal(in, 99);
	fake_result(-EPERM, NULL, 0);
	assert_int_equal(ntsync_mutex_kill(11, 98), -EPERM);
}

static void mutex_read_args(void **state)
{
	struct ntsync_mutex_args out = { .owner = 5, .count = 2 };
	uint32_t owner = POISON32, count = POISON32;

	(void)state;
	assert_int_equal(ntsync_mutex_read(11, NULL, &count), -EINVAL);
	assert_int_equal(ntsync_mutex_read(11, &owner, NULL), -EINVAL);
	assert_int_equal(fake.calls, 0);

	fake_result(0, &out, sizeof(out));
	assert_int_equal(ntsync_mutex_read(11, &owner, &count), 0);
	assert_true(fake.request == NTSYNC_IOC_MUTEX_READ);
	assert_int_equal(owner, 5);
	assert_int_equal(count, 2);
}

static void mutex_read_abandoned_reports_state(void **state)
{
	struct ntsync_mutex_args out = { .owner = 0, .count = 0 };
	uint32_t owner = POISON32, count = POISON32;

	(void)state;
	fake_result(-EOWNERDEAD, &out, sizeof(out));
	assert_int_equal(ntsync_mutex_read(11, &owner, &count), -EOWNERDEAD);
	assert_int_equal(owner, 0);
	assert_int_equal(count, 0);

	owner = count = POISON32;
	fake_result(-EBADF, NULL, 0);
	assert_int_equal(ntsync_mutex_read(11, &owner, &count), -EBADF);
	assert_int_equal(owner, POISON32);
	assert_int_equal(count, POISON32);
}

/* ---- event operations ---- */

static void event_ops_args(void **state)
{
	static const struct {
		int (*fn)(int, bool *);
		unsigned long request;
	} ops[] = {
		{ ntsync_event_set, NTSYNC_IOC_EVENT_SET },
		{ ntsync_event_reset, NTSYNC_IOC_EVENT_RESET },
		{ ntsync_event_pulse, NTSYNC_IOC_EVENT_PULSE },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		__u32 one = 1, zero = 0;
		bool prev = false;

		fake_reset();
		fake_result(0, &one, sizeof(one));
		assert_int_equal(ops[i].fn(13, &prev), 0);
		assert_int_equal(fake.fd, 13);
		assert_true(fake.request == ops[i].request);
		assert_true(prev);

		fake_result(0, &zero, sizeof(zero));
		assert_int_equal(ops[i].fn(13, &prev), 0);
		assert_false(prev);

		assert_int_equal(ops[i].fn(13, NULL), 0);

		prev = true;
		fake_result(-EINVAL, NULL, 0);
		assert_int_equal(ops[i].fn(13, &prev), -EINVAL);
		assert_true(prev);
	}
}

static void event_read_args(void **state)
{
	struct ntsync_event_args out = { .manual = 1, .signaled = 0 };
	bool manual = false, signaled = true;

	(void)state;
	assert_int_equal(ntsync_event_read(13, NULL, &signaled), -EINVAL);
	assert_int_equal(ntsync_event_read(13, &manual, NULL), -EINVAL);
	assert_int_equal(fake.calls, 0);

	fake_result(0, &out, sizeof(out));
	assert_int_equal(ntsync_event_read(13, &manual, &signaled), 0);
	assert_true(fake.request == NTSYNC_IOC_EVENT_READ);
	assert_true(manual);
	assert_false(signaled);

	out.manual = 0;
	out.signaled = 1;
	fake_result(0, &out, sizeof(out));
	assert_int_equal(ntsync_event_read(13, &manual, &signaled), 0);
	assert_false(manual);
	assert_true(signaled);
}

/* An ioctl failing without setting errno still gives a negative result. */
static void errno_zero_is_not_success(void **state)
{
	(void)state;
	fake.fail_without_errno = 1;
	assert_int_equal(ntsync_mutex_kill(11, 1), -EIO);
	assert_int_equal(ntsync_sem_create(NULL, 0, 1), -EINVAL);
}

/* ---- waits ---- */

static struct ntsync_wait_args last_wait(void)
{
	struct ntsync_wait_args w;

	memcpy(&w, fake.in, sizeof(w));
	return w;
}

static void wait_refuses_before_syscall(void **state)
{
	struct ntsync_device *dev = *state;
	int objs[NTSYNC_WAIT_MAX + 1] = { 0 };
	struct ntsync_timeout inf = ntsync_timeout_infinite();
	struct ntsync_timeout bad_kind = { 0, 3, 0 };
	struct ntsync_timeout bad_reserved = { 0, NTSYNC_TIMEOUT_MONOTONIC, 1 };
	uint32_t index = POISON32;
	int (*waits[2])(struct ntsync_device *, const int *, uint32_t,
			uint32_t, int, struct ntsync_timeout, uint32_t *) = {
		ntsync_wait_any, ntsync_wait_all,
	};
	int i;

	for (i = 0; i < 2; i++) {
		assert_int_equal(waits[i](NULL, objs, 1, 1, NTSYNC_NO_ALERT,
					  inf, &index), -EINVAL);
		assert_int_equal(waits[i](dev, objs, NTSYNC_WAIT_MAX + 1, 1,
					  NTSYNC_NO_ALERT, inf, &index),
				 -EINVAL);
		assert_int_equal(waits[i](dev, objs, UINT32_MAX, 1,
					  NTSYNC_NO_ALERT, inf, &index),
				 -EINVAL);
		assert_int_equal(waits[i](dev, NULL, 1, 1, NTSYNC_NO_ALERT,
					  inf, &index), -EINVAL);
		/* descriptor 0 cannot be an alert; other negatives are junk */
		assert_int_equal(waits[i](dev, objs, 1, 1, 0, inf, &index),
				 -EINVAL);
		assert_int_equal(waits[i](dev, objs, 1, 1, -2, inf, &index),
				 -EINVAL);
		assert_int_equal(waits[i](dev, objs, 1, 1, INT_MIN, inf,
					  &index), -EINVAL);
		assert_int_equal(waits[i](dev, objs, 1, 1, NTSYNC_NO_ALERT,
					  bad_kind, &index), -EINVAL);
		assert_int_equal(waits[i](dev, objs, 1, 1, NTSYNC_NO_ALERT,
					  bad_reserved, &index), -EINVAL);
	}
	assert_int_equal(fake.calls, 0);
	assert_int_equal(index, POISON32);
}

static void wait_any_args(void **state)
{
	struct ntsync_device *dev = *state;
	int objs[3] = { 10, 11, 12 };
	struct ntsync_wait_args out = { 0 }, w;
	uint32_t index = POISON32;

	out.index = 2;
	fake_result(0, &out, sizeof(out));
	assert_int_equal(ntsync_wait_any(dev, objs, 3, 0x55, NTSYNC_NO_ALERT,
					 ntsync_timeout_infinite(), &index), 0);
	assert_int_equal(fake.fd, ntsync_device_fd(dev));
	assert_true(fake.request == NTSYNC_IOC_WAIT_ANY);
	w = last_wait();
	assert_true(w.timeout == UINT64_MAX);
	assert_true(w.objs == (__u64)(uintptr_t)objs);
	assert_int_equal(w.count, 3);
	assert_int_equal(w.owner, 0x55);
	assert_int_equal(w.alert, 0);
	assert_int_equal(w.flags, 0);
	assert_int_equal(w.pad, 0);
	assert_int_equal(w.index, 0);
	assert_int_equal(index, 2);
}

static void wait_all_args(void **state)
{
	struct ntsync_device *dev = *state;
	int objs[2] = { 10, 11 };
	struct ntsync_wait_args out = { 0 }, w;
	uint32_t index = POISON32;

	out.index = 0;
	fake_result(0, &out, sizeof(out));
	assert_int_equal(ntsync_wait_all(dev, objs, 2, 9, 14,
					 ntsync_timeout_realtime(123456789),
					 &index), 0);
	assert_true(fake.request == NTSYNC_IOC_WAIT_ALL);
	w = last_wait();
	assert_true(w.timeout == 123456789);
	assert_int_equal(w.flags, NTSYNC_WAIT_REALTIME);
	assert_int_equal(w.alert, 14);
	assert_int_equal(w.count, 2);
	assert_int_equal(w.owner, 9);
	assert_int_equal(w.pad, 0);
	assert_int_equal(index, 0);
}

static void wait_monotonic_timeout(void **state)
{
	int obj = 10;
	struct ntsync_wait_args w;

	fake_result(-ETIMEDOUT, NULL, 0);
	assert_int_equal(ntsync_wait_any(*state, &obj, 1, 1, NTSYNC_NO_ALERT,
					 ntsync_timeout_monotonic(5000), NULL),
			 -ETIMEDOUT);
	w = last_wait();
	assert_true(w.timeout == 5000);
	assert_int_equal(w.flags, 0);
}

static void wait_zero_struct_is_infinite(void **state)
{
	int obj = 10;
	struct ntsync_timeout t;

	memset(&t, 0, sizeof(t));
	fake_result(0, NULL, 0);
	assert_int_equal(ntsync_wait_any(*state, &obj, 1, 1, NTSYNC_NO_ALERT,
					 t, NULL), 0);
	assert_true(last_wait().timeout == UINT64_MAX);
}

static void wait_max_count_and_empty(void **state)
{
	int objs[NTSYNC_WAIT_MAX] = { 0 };

	fake_result(0, NULL, 0);
	assert_int_equal(ntsync_wait_all(*state, objs, NTSYNC_WAIT_MAX, 1,
					 NTSYNC_NO_ALERT,
					 ntsync_timeout_infinite(), NULL), 0);
	assert_int_equal(last_wait().count, NTSYNC_WAIT_MAX);

	/* no objects: only the alert or the time-out can end it */
	fake_result(-ETIMEDOUT, NULL, 0);
	assert_int_equal(ntsync_wait_any(*state, NULL, 0, 1, 3,
					 ntsync_timeout_monotonic(0), NULL),
			 -ETIMEDOUT);
	assert_true(last_wait().objs == 0);
	assert_int_equal(last_wait().alert, 3);
	assert_int_equal(fake.calls, 2);
}

static void wait_ownerdead_sets_index(void **state)
{
	int objs[2] = { 10, 11 };
	struct ntsync_wait_args out = { 0 };
	uint32_t index = POISON32;

	out.index = 1;
	fake_result(-EOWNERDEAD, &out, sizeof(out));
	assert_int_equal(ntsync_wait_any(*state, objs, 2, 1, NTSYNC_NO_ALERT,
					 ntsync_timeout_infinite(), &index),
			 -EOWNERDEAD);
	assert_int_equal(index, 1);
}

static void wait_failure_leaves_index(void **state)
{
	static const int errs[] = { ETIMEDOUT, EINTR, EINVAL, ENOMEM };
	int objs[2] = { 10, 11 };
	struct ntsync_wait_args out = { 0 };
	size_t i;

	out.index = 1;
	for (i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		uint32_t index = POISON32;

		fake_result(-errs[i], &out, sizeof(out));
		assert_int_equal(ntsync_wait_all(*state, objs, 2, 1,
						 NTSYNC_NO_ALERT,
						 ntsync_timeout_infinite(),
						 &index), -errs[i]);
		assert_int_equal(index, POISON32);
	}
}

static void wait_alert_index_is_count(void **state)
{
	int objs[2] = { 10, 11 };
	struct ntsync_wait_args out = { 0 };
	uint32_t index = POISON32;

	out.index = 2;
	fake_result(0, &out, sizeof(out));
	assert_int_equal(ntsync_wait_all(*state, objs, 2, 1, 12,
					 ntsync_timeout_infinite(), &index), 0);
	assert_int_equal(index, 2);
}

/* ---- time-out helpers ---- */

static uint64_t mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void timeout_constructors(void **state)
{
	struct ntsync_timeout t;

	(void)state;
	t = ntsync_timeout_infinite();
	assert_int_equal(t.kind, NTSYNC_TIMEOUT_INFINITE);
	assert_int_equal(t.reserved, 0);
	t = ntsync_timeout_monotonic(UINT64_C(1) << 40);
	assert_int_equal(t.kind, NTSYNC_TIMEOUT_MONOTONIC);
	assert_true(t.ns == UINT64_C(1) << 40);
	assert_int_equal(t.reserved, 0);
	t = ntsync_timeout_realtime(17);
	assert_int_equal(t.kind, NTSYNC_TIMEOUT_REALTIME);
	assert_true(t.ns == 17);
	assert_int_equal(t.reserved, 0);
}

/* The deadline lies between "now before the call" and "now after" plus the
 * relative time: an ordering check, not a timing one. */
static void timeout_relative_is_monotonic_deadline(void **state)
{
	static const uint64_t rels[] = {
		0, 1, 1000000, UINT64_C(5000000000), UINT64_C(1) << 50,
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rels) / sizeof(rels[0]); i++) {
		uint64_t before = mono_now();
		struct ntsync_timeout t = ntsync_timeout_relative(rels[i]);
		uint64_t after = mono_now();

		assert_int_equal(t.kind, NTSYNC_TIMEOUT_MONOTONIC);
		assert_int_equal(t.reserved, 0);
		assert_true(t.ns >= before + rels[i]);
		assert_true(t.ns <= after + rels[i]);
	}
}

static void timeout_relative_saturates(void **state)
{
	struct ntsync_timeout t;

	(void)state;
	t = ntsync_timeout_relative(UINT64_MAX);
	assert_int_equal(t.kind, NTSYNC_TIMEOUT_INFINITE);
	t = ntsync_timeout_relative(UINT64_MAX - mono_now());
	assert_int_equal(t.kind, NTSYNC_TIMEOUT_INFINITE);
	/* the kernel's deadlines are signed: beyond INT64_MAX is infinite */
	t = ntsync_timeout_relative((uint64_t)INT64_MAX);
	assert_int_equal(t.kind, NTSYNC_TIMEOUT_INFINITE);
	t = ntsync_timeout_relative((uint64_t)INT64_MAX / 2);
	assert_int_equal(t.kind, NTSYNC_TIMEOUT_MONOTONIC);
	assert_true(t.ns <= (uint64_t)INT64_MAX);
}

/* Deadlines the kernel cannot hold as signed ns go down as infinite, so
 * mainline (which would time out at once) and our module agree. */
static void wait_far_deadline_is_infinite(void **state)
{
	static const struct {
		uint64_t ns;
		uint64_t sent;
	} cases[] = {
		{ (uint64_t)INT64_MAX, (uint64_t)INT64_MAX },
		{ (uint64_t)INT64_MAX + 1, UINT64_MAX },
		{ UINT64_MAX - 1, UINT64_MAX },
		{ UINT64_MAX, UINT64_MAX },
	};
	int obj = 10;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fake_result(0, NULL, 0);
		assert_int_equal(ntsync_wait_any(*state, &obj, 1, 1,
						 NTSYNC_NO_ALERT,
						 ntsync_timeout_monotonic(cases[i].ns),
						 NULL), 0);
		assert_true(last_wait().timeout == cases[i].sent);
		assert_int_equal(last_wait().flags, 0);
		assert_int_equal(ntsync_wait_all(*state, &obj, 1, 1,
						 NTSYNC_NO_ALERT,
						 ntsync_timeout_realtime(cases[i].ns),
						 NULL), 0);
		assert_true(last_wait().timeout == cases[i].sent);
		assert_int_equal(last_wait().flags, NTSYNC_WAIT_REALTIME);
	}
}

/* The retry idiom from the header: the same deadline goes to the kernel on
 * every attempt after -EINTR. */
static void wait_retry_keeps_deadline(void **state)
{
	int obj = 10;
	struct ntsync_timeout t = ntsync_timeout_relative(1000000000);
	uint64_t first;
	int ret;

	fake_result(-EINTR, NULL, 0);
	ret = ntsync_wait_any(*state, &obj, 1, 1, NTSYNC_NO_ALERT, t, NULL);
	assert_int_equal(ret, -EINTR);
	first = last_wait().timeout;
	fake_result(0, NULL, 0);
	ret = ntsync_wait_any(*state, &obj, 1, 1, NTSYNC_NO_ALERT, t, NULL);
	assert_int_equal(ret, 0);
	assert_true(last_wait().timeout == first);
	assert_true(first == t.ns);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(open_null_out),
		cmocka_unit_test(open_missing_path),
		cmocka_unit_test(open_not_a_directory),
		cmocka_unit_test(open_fd_close),
		cmocka_unit_test(close_null_and_fd_null),
		cmocka_unit_test(version_string),
		cmocka_unit_test(version_macros),
		cmocka_unit_test(open_fd_takes_over),
		cmocka_unit_test(open_fd_dup),
		cmocka_unit_test(open_fd_bad_input),
		cmocka_unit_test(open_fd_regular_file),
		cmocka_unit_test_setup(create_null_device, setup_fake),
		cmocka_unit_test_setup_teardown(sem_create_args, setup_dev, teardown_dev),
		cmocka_unit_test_setup_teardown(sem_create_error, setup_dev, teardown_dev),
		cmocka_unit_test_setup_teardown(mutex_create_args, setup_dev, teardown_dev),
		cmocka_unit_test_setup_teardown(event_create_args, setup_dev, teardown_dev),
		cmocka_unit_test_setup(sem_release_args, setup_fake),
		cmocka_unit_test_setup(sem_release_overflow_leaves_prev, setup_fake),
		cmocka_unit_test_setup(sem_read_args, setup_fake),
		cmocka_unit_test_setup(mutex_unlock_args, setup_fake),
		cmocka_unit_test_setup(mutex_kill_args, setup_fake),
		cmocka_unit_test_setup(mutex_read_args, setup_fake),
		cmocka_unit_test_setup(mutex_read_abandoned_reports_state, setup_fake),
		cmocka_unit_test_setup(event_ops_args, setup_fake),
		cmocka_unit_test_setup(event_read_args, setup_fake),
		cmocka_unit_test_setup(errno_zero_is_not_success, setup_fake),
		cmocka_unit_test_setup_teardown(wait_refuses_before_syscall, setup_dev, teardown_dev),
		cmocka_unit_test_setup_teardown(wait_any_args, setup_dev, teardown_dev),
		cmocka_unit_test_setup_teardown(wait_all_args, setup_dev, teardown_dev),
		cmocka_unit_test_setup_teardown(wait_monotonic_timeout, setup_dev, teardown_dev),
		cmocka_unit_test_setup_teardown(wait_zero_struct_is_infinite, setup_dev, teardown_dev),
		cmocka_unit_test_setup_teardown(wait_max_count_and_empty, setup_dev, teardown_dev),
		cmocka_unit_test_setup_teardown(wait_ownerdead_sets_index, setup_dev, teardown_dev),
		cmocka_unit_test_setup_teardown(wait_failure_leaves_index, setup_dev, teardown_dev),
		cmocka_unit_test_setup_teardown(wait_alert_index_is_count, setup_dev, teardown_dev),
		cmocka_unit_test_setup_teardown(wait_retry_keeps_deadline, setup_dev, teardown_dev),
		cmocka_unit_test_setup_teardown(wait_far_deadline_is_infinite, setup_dev, teardown_dev),
		cmocka_unit_test(timeout_constructors),
		cmocka_unit_test(timeout_relative_is_monotonic_deadline),
		cmocka_unit_test(timeout_relative_saturates),
	};

	return cmocka_run_group_tests_name("libntsync-unit", tests, NULL, NULL);
}
