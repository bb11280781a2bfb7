// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libntsync: thin, typed wrappers over the ioctls of /dev/ntsync.
 *
 * Each call checks what can be checked without the kernel (NULL pointers,
 * object counts, time-out and alert values), fills the ABI structure of
 * <linux/ntsync.h> (the project's copy of the mainline header), issues one
 * ioctl and turns the result into 0/-errno.  No state is kept besides the
 * device descriptor, so every call is thread-safe.
 */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/ntsync.h>
#include <ntsync.h>

/* The public header restates two ABI facts; keep them in step. */
_Static_assert(NTSYNC_WAIT_MAX == NTSYNC_MAX_WAIT_COUNT,
	       "NTSYNC_WAIT_MAX must equal the kernel's NTSYNC_MAX_WAIT_COUNT");
_Static_assert(sizeof(struct ntsync_wait_args) == 40,
	       "struct ntsync_wait_args is 40 bytes in the mainline ABI");
_Static_assert(sizeof(struct ntsync_timeout) == 16,
	       "struct ntsync_timeout is part of the library ABI");
_Static_assert(LIBNTSYNC_VERSION_MAJOR == 1,
	       "a new major version is a new SONAME");

#ifndef LIBNTSYNC_VERSION
#error "LIBNTSYNC_VERSION must be defined by the build"
#endif

struct ntsync_device {
	int fd;
};

/* -errno of the last failed call, never 0 (a result of 0 means success). */
static int neg_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

/* ioctl() returning its nonnegative result or -errno. */
static int xioctl(int fd, unsigned long request, void *arg)
{
	int ret = ioctl(fd, request, arg);

	return ret < 0 ? neg_errno() : ret;
}

NTSYNC_API const char *ntsync_version(void)
{
	return LIBNTSYNC_VERSION;
}

NTSYNC_API int ntsync_open(const char *path, struct ntsync_device **out)
{
	struct ntsync_device *dev;
	int fd;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!path)
		path = NTSYNC_DEFAULT_PATH;

	/* Like Wine: read-only suffices for every ioctl. */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return neg_errno();

	dev = malloc(sizeof(*dev));
	if (!dev) {
		close(fd);
		return -ENOMEM;
	}
	dev->fd = fd;
	*out = dev;
	return 0;
}

/*
 * The descriptor is taken over (or duplicated) as it is: there is nothing in
 * the ABI that identifies an ntsync instance without side effects, so only
 * what fstat(2) can tell is checked, as ntsync_open() trusts its path.
 */
NTSYNC_API int ntsync_open_fd(int fd, unsigned int flags,
			      struct ntsync_device **out)
{
	struct ntsync_device *dev;
	struct stat st;
	int fl;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (flags & ~NTSYNC_OPEN_FD_DUP)
		return -EINVAL;
	if (fd < 0)
		return -EBADF;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return neg_errno();
#ifdef O_PATH
	/* An O_PATH descriptor names the node but cannot issue ioctls. */
	if (fl & O_PATH)
		return -EBADF;
#endif
	if (fstat(fd, &st) != 0)
		return neg_errno();
	if (!S_ISCHR(st.st_mode))
		return -ENOTTY;

	dev = malloc(sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	if (flags & NTSYNC_OPEN_FD_DUP) {
		dev->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		if (dev->fd < 0) {
			int ret = neg_errno();

			free(dev);
			return ret;
		}
	} else {
		dev->fd = fd;
	}
	*out = dev;
	return 0;
}

NTSYNC_API void ntsync_close(struct ntsync_device *dev)
{
	if (!dev)
		return;
	close(dev->fd);
	free(dev);
}

NTSYNC_API int ntsync_device_fd(const struct ntsync_device *dev)
{
	return dev ? dev->fd : -EINVAL;
}

/* --- semaphores --------------------------------------------------------- */

NTSYNC_API int ntsync_sem_create(struct ntsync_device *dev,
				 uint32_t count, uint32_t max)
{
	struct ntsync_sem_args args = { .count = count, .max = max };

	if (!dev)
		return -EINVAL;
	return xioctl(dev->fd, NTSYNC_IOC_CREATE_SEM, &args);
}

NTSYNC_API int ntsync_sem_release(int sem, uint32_t count,
				  uint32_t *prev_count)
{
	__u32 val = count;
	int ret = xioctl(sem, NTSYNC_IOC_SEM_RELEASE, &val);

	if (ret < 0)
		return ret;
	if (prev_count)
		*prev_count = val;
	return 0;
}

NTSYNC_API int ntsync_sem_read(int sem, uint32_t *count, uint32_t *max)
{
	struct ntsync_sem_args args = { 0 };
	int ret;

	if (!count || !max)
		return -EINVAL;
	ret = xioctl(sem, NTSYNC_IOC_SEM_READ, &args);
	if (ret < 0)
		return ret;
	*count = args.count;
	*max = args.max;
	return 0;
}

/* --- mutexes ------------------------------------------------------------ */

NTSYNC_API int ntsync_mutex_create(struct ntsync_device *dev,
				   uint32_t owner, uint32_t count)
{
	struct ntsync_mutex_args args = { .owner = owner, .count = count };

	if (!dev)
		return -EINVAL;
	return xioctl(dev->fd, NTSYNC_IOC_CREATE_MUTEX, &args);
}

NTSYNC_API int ntsync_mutex_unlock(int mutex, uint32_t owner,
				   uint32_t *prev_count)
{
	struct ntsync_mutex_args args = { .owner = owner };
	int ret = xioctl(mutex, NTSYNC_IOC_MUTEX_UNLOCK, &args);

	if (ret < 0)
		return ret;
	if (prev_count)
		*prev_count = args.count;
	return 0;
}

NTSYNC_API int ntsync_mutex_kill(int mutex, uint32_t owner)
{
	__u32 val = owner;
	int ret = xioctl(mutex, NTSYNC_IOC_MUTEX_KILL, &val);

	return ret < 0 ? ret : 0;
}

NTSYNC_API int ntsync_mutex_read(int mutex, uint32_t *owner, uint32_t *count)
{
	struct ntsync_mutex_args args = { 0 };
	int ret;

	if (!owner || !count)
		return -EINVAL;
	ret = xioctl(mutex, NTSYNC_IOC_MUTEX_READ, &args);
	/* An abandoned mutex still reports its (zeroed) state. */
	if (ret < 0 && ret != -EOWNERDEAD)
		return ret;
	*owner = args.owner;
	*count = args.count;
	return ret < 0 ? ret : 0;
}

/* --- events ------------------------------------------------------------- */

NTSYNC_API int ntsync_event_create(struct ntsync_device *dev,
				   bool manual, bool signaled)
{
	struct ntsync_event_args args = {
		.manual = manual,
		.signaled = signaled,
	};

	if (!dev)
		return -EINVAL;
	return xioctl(dev->fd, NTSYNC_IOC_CREATE_EVENT, &args);
}

static int event_op(int event, unsigned long request, bool *prev_signaled)
{
	__u32 prev = 0;
	int ret = xioctl(event, request, &prev);

	if (ret < 0)
		return ret;
	if (prev_signaled)
		*prev_signaled = prev != 0;
	return 0;
}

NTSYNC_API int ntsync_event_set(int event, bool *prev_signaled)
{
	return event_op(event, NTSYNC_IOC_EVENT_SET, prev_signaled);
}

NTSYNC_API int ntsync_event_reset(int event, bool *prev_signaled)
{
	return event_op(event, NTSYNC_IOC_EVENT_RESET, prev_signaled);
}

NTSYNC_API int ntsync_event_pulse(int event, bool *prev_signaled)
{
	return event_op(event, NTSYNC_IOC_EVENT_PULSE, prev_signaled);
}

NTSYNC_API int ntsync_event_read(int event, bool *manual, bool *signaled)
{
	struct ntsync_event_args args = { 0 };
	int ret;

	if (!manual || !signaled)
		return -EINVAL;
	ret = xioctl(event, NTSYNC_IOC_EVENT_READ, &args);
	if (ret < 0)
		return ret;
	*manual = args.manual != 0;
	*signaled = args.signaled != 0;
	return 0;
}

/* --- waits -------------------------------------------------------------- */

/*
 * The kernel keeps deadlines as signed 64-bit nanoseconds.  Mainline turns a
 * deadline above INT64_MAX (other than U64_MAX) into a negative time that
 * has passed, so the wait times out at once; this project's module waits for
 * ever instead.  Such a deadline lies after the year 2262 on either clock,
 * so the library sends it as "infinite" and both drivers agree.
 */
static __u64 deadline(uint64_t ns)
{
	return ns > (uint64_t)INT64_MAX ? UINT64_MAX : ns;
}

static int do_wait(unsigned long request, struct ntsync_device *dev,
		   const int *objs, uint32_t count, uint32_t owner, int alert,
		   struct ntsync_timeout timeout, uint32_t *index)
{
	struct ntsync_wait_args args = { 0 };
	int ret;

	if (!dev)
		return -EINVAL;
	if (count > NTSYNC_WAIT_MAX)
		return -EINVAL;
	if (count && !objs)
		return -EINVAL;
	/* 0 means "no alert" to the kernel, so it cannot name descriptor 0. */
	if (alert == NTSYNC_NO_ALERT)
		args.alert = 0;
	else if (alert > 0)
		args.alert = (__u32)alert;
	else
		return -EINVAL;
	if (timeout.reserved)
		return -EINVAL;

	switch (timeout.kind) {
	case NTSYNC_TIMEOUT_INFINITE:
		args.timeout = UINT64_MAX;
		break;
	case NTSYNC_TIMEOUT_MONOTONIC:
		args.timeout = deadline(timeout.ns);
		break;
	case NTSYNC_TIMEOUT_REALTIME:
		args.timeout = deadline(timeout.ns);
		args.flags = NTSYNC_WAIT_REALTIME;
		break;
	default:
		return -EINVAL;
	}

	args.objs = (__u64)(uintptr_t)objs;
	args.count = count;
	args.owner = owner;

	ret = xioctl(dev->fd, request, &args);
	/* -EOWNERDEAD is an acquisition too: the index is valid. */
	if (ret < 0 && ret != -EOWNERDEAD)
		return ret;
	if (index)
		*index = args.index;
	return ret < 0 ? ret : 0;
}

NTSYNC_API int ntsync_wait_any(struct ntsync_device *dev, const int *objs,
			       uint32_t count, uint32_t owner, int alert,
			       struct ntsync_timeout timeout, uint32_t *index)
{
	return do_wait(NTSYNC_IOC_WAIT_ANY, dev, objs, count, owner, alert,
		       timeout, index);
}

NTSYNC_API int ntsync_wait_all(struct ntsync_device *dev, const int *objs,
			       uint32_t count, uint32_t owner, int alert,
			       struct ntsync_timeout timeout, uint32_t *index)
{
	return do_wait(NTSYNC_IOC_WAIT_ALL, dev, objs, count, owner, alert,
		       timeout, index);
}

/* --- time-outs ---------------------------------------------------------- */

NTSYNC_API struct ntsync_timeout ntsync_timeout_infinite(void)
{
	struct ntsync_timeout t = { 0, NTSYNC_TIMEOUT_INFINITE, 0 };

	return t;
}

NTSYNC_API struct ntsync_timeout ntsync_timeout_monotonic(uint64_t deadline_ns)
{
	struct ntsync_timeout t = { deadline_ns, NTSYNC_TIMEOUT_MONOTONIC, 0 };

	return t;
}

NTSYNC_API struct ntsync_timeout ntsync_timeout_realtime(uint64_t deadline_ns)
{
	struct ntsync_timeout t = { deadline_ns, NTSYNC_TIMEOUT_REALTIME, 0 };

	return t;
}

NTSYNC_API struct ntsync_timeout ntsync_timeout_relative(uint64_t rel_ns)
{
	struct timespec ts;
	uint64_t now;

	/* CLOCK_MONOTONIC cannot fail on Linux; if it did, poll rather than
	 * risk sleeping for ever. */
	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		return ntsync_timeout_monotonic(0);
	now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (now > (uint64_t)INT64_MAX || rel_ns > (uint64_t)INT64_MAX - now)
		return ntsync_timeout_infinite();
	return ntsync_timeout_monotonic(now + rel_ns);
}
