/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libntsync - a typed C API for the NT synchronization primitives of
 * /dev/ntsync (semaphores, mutexes and events with Windows semantics).
 *
 * This header is self-contained: it does not need <linux/ntsync.h>, and it
 * may be included together with it.  It is valid C99 and C++.
 *
 * Ownership, in short:
 *
 *   - A device instance is an opaque struct ntsync_device, made by
 *     ntsync_open() (a new instance) or ntsync_open_fd() (an instance
 *     descriptor received from another process or inherited; 1.1) and freed
 *     by ntsync_close(), which closes the handle's descriptor.  Every
 *     instance is a separate namespace: objects of one instance cannot be
 *     waited on through another.  Processes share an instance by passing its
 *     descriptor (and those of its objects) over a UNIX socket (SCM_RIGHTS)
 *     or across fork/exec; opening the node again makes a new instance.
 *
 *   - Sync objects (semaphores, mutexes, events) are plain int file
 *     descriptors, returned by ntsync_*_create().  They belong to the caller,
 *     who closes them with close(2); an object is destroyed when its last
 *     descriptor is closed.  Objects stay valid after ntsync_close() of the
 *     device they were created on and can still be released, set and read,
 *     but a wait only accepts objects of its own instance, so keep the
 *     instance open for as long as you wait on its objects.  All
 *     descriptors the library makes are close-on-exec.
 *
 * Errors: every call that can fail returns a negative errno value (-EINVAL,
 * -ETIMEDOUT, ...) and never sets errno as its way of reporting; >= 0 means
 * success.  Two results need care:
 *
 *   -EOWNERDEAD  from a wait: the wait SUCCEEDED; an abandoned mutex (see
 *                ntsync_mutex_kill()) was acquired, its previous owner
 *                died.  The index is valid and every object is acquired
 *                just as on a 0 result.  From ntsync_mutex_read(): the
 *                mutex is abandoned (owner and count read as 0).
 *   -ETIMEDOUT   from a wait: the normal time-out; nothing was acquired.
 *
 * Signals: a wait interrupted by a signal whose handler was installed
 * without SA_RESTART returns -EINTR, and nothing was acquired (an object
 * that was acquired before the signal is reported as success instead).
 * libntsync never retries by itself.  Deadlines are absolute, so calling the
 * wait again with the same struct ntsync_timeout is a safe retry that does
 * not extend the time-out.  With SA_RESTART the kernel restarts the wait
 * itself and -EINTR is not seen.
 *
 * What the library can check before the system call it refuses itself with
 * -EINVAL: NULL handles and NULL required pointers, more than
 * NTSYNC_WAIT_MAX objects, a bad alert value, a malformed time-out.
 * Everything else is decided by the kernel driver.
 *
 * Each function has a manual page in section 3; libntsync(3) is the overview.
 */

#ifndef NTSYNC_H
#define NTSYNC_H

/*
 * The version of the library API this header declares.  A program that needs
 * a function of a later release can test for it at compile time:
 *
 *   #if LIBNTSYNC_CHECK_VERSION(1, 1)
 *           ret = ntsync_open_fd(fd, 0, &dev);
 *   #endif
 *
 * ntsync_version() gives the version of the library actually loaded.
 */
#define LIBNTSYNC_VERSION_MAJOR 1
#define LIBNTSYNC_VERSION_MINOR 1
#define LIBNTSYNC_VERSION_PATCH 0
/* True if this header is version major.minor or later. */
#define LIBNTSYNC_CHECK_VERSION(major, minor)				\
	(LIBNTSYNC_VERSION_MAJOR > (major) ||				\
	 (LIBNTSYNC_VERSION_MAJOR == (major) &&				\
	  LIBNTSYNC_VERSION_MINOR >= (minor)))

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the library's public functions; everything else in it is hidden. */
#if defined(__GNUC__) || defined(__clang__)
#define NTSYNC_API __attribute__((visibility("default")))
#else
#define NTSYNC_API
#endif

/* The device node that ntsync_open(NULL, ...) opens. */
#define NTSYNC_DEFAULT_PATH "/dev/ntsync"

/* The most objects one wait accepts (the kernel's NTSYNC_MAX_WAIT_COUNT). */
#define NTSYNC_WAIT_MAX 64

/*
 * The "alert" argument of the waits when there is no alert event.  The kernel
 * interface reserves descriptor 0 for "no alert", so an event whose
 * descriptor is 0 cannot serve as an alert: the waits refuse alert == 0 with
 * -EINVAL instead of silently waiting without the alert.
 */
#define NTSYNC_NO_ALERT (-1)

/* An opened /dev/ntsync instance.  Opaque. */
struct ntsync_device;

/* Which clock a time-out's deadline is measured against. */
enum ntsync_timeout_kind {
	NTSYNC_TIMEOUT_INFINITE = 0,	/* wait until woken; never -ETIMEDOUT */
	NTSYNC_TIMEOUT_MONOTONIC = 1,	/* absolute CLOCK_MONOTONIC deadline */
	NTSYNC_TIMEOUT_REALTIME = 2	/* absolute CLOCK_REALTIME deadline */
};

/*
 * A wait's time-out: an absolute deadline in nanoseconds since the epoch of
 * the chosen clock, or infinite.  A deadline at or before the current time
 * makes the wait a poll: it acquires what is signalled now or returns
 * -ETIMEDOUT without sleeping.  Build one with the ntsync_timeout_*()
 * helpers; a zero-initialised struct is an infinite time-out.  MONOTONIC
 * deadlines are read in the caller's time namespace, as clock_gettime(2)
 * gives them.  A deadline above INT64_MAX ns (after the year 2262 on either
 * clock) is treated as infinite: the kernel cannot represent it.
 */
struct ntsync_timeout {
	uint64_t ns;		/* deadline; ignored when kind is INFINITE */
	uint32_t kind;		/* enum ntsync_timeout_kind */
	uint32_t reserved;	/* must be 0 */
};

/* Version string of the library that is loaded, e.g. "1.1.0". */
NTSYNC_API const char *ntsync_version(void);

/* --- device instance --------------------------------------------------- */

/*
 * Open a new instance of the device at path (NULL means /dev/ntsync).
 * On success stores the handle in *out and returns 0; on failure sets
 * *out to NULL (when out is not NULL) and returns -errno from open(2),
 * e.g. -ENOENT when the node does not exist (driver not loaded).
 */
NTSYNC_API int ntsync_open(const char *path, struct ntsync_device **out);

/* Flags of ntsync_open_fd(). */
/* Duplicate the descriptor (close-on-exec) instead of taking it over. */
#define NTSYNC_OPEN_FD_DUP 0x1u

/*
 * Since 1.1.  Make a handle for an instance whose descriptor fd the caller
 * already has: received over a UNIX socket (SCM_RIGHTS) from the process
 * that opened the device, as Wine's clients get wineserver's, or inherited.
 * The handle refers to that same instance, so the waits accept the objects
 * that were created on it in any process.
 *
 * Ownership: by default the handle TAKES OVER fd: on success fd belongs to
 * the handle and ntsync_close() closes it; the caller must not close it
 * (its close-on-exec flag is left as it is).  With NTSYNC_OPEN_FD_DUP the
 * handle works on a close-on-exec duplicate and fd stays the caller's.  On
 * failure fd is left open and the caller's in both cases.
 *
 * Returns 0 with the handle in *out, or -errno with *out set to NULL (when
 * out is not NULL): -EINVAL for a NULL out or unknown flags, -EBADF if fd is
 * not an open descriptor (or an O_PATH one), -ENOTTY if it is not a
 * character device (a socket, a pipe, a regular file, an ntsync object),
 * -EMFILE from the duplication, -ENOMEM.  Like ntsync_open(), it cannot
 * tell an ntsync instance from another character device; the first
 * operation on such a handle fails with -ENOTTY.
 */
NTSYNC_API int ntsync_open_fd(int fd, unsigned int flags,
			      struct ntsync_device **out);

/* Close the instance and free the handle.  NULL is a no-op.  Objects created
 * on it stay open until the caller closes them. */
NTSYNC_API void ntsync_close(struct ntsync_device *dev);

/* The instance's file descriptor (still owned by the handle; do not close
 * it), or -EINVAL if dev is NULL: to pass the instance to another process
 * or to issue the ioctls of <linux/ntsync.h> directly.  The device cannot
 * be polled. */
NTSYNC_API int ntsync_device_fd(const struct ntsync_device *dev);

/* --- semaphores -------------------------------------------------------- */

/* Returns a new semaphore descriptor (>= 0) or -errno; -EINVAL if
 * count > max. */
NTSYNC_API int ntsync_sem_create(struct ntsync_device *dev,
				 uint32_t count, uint32_t max);
/* Add count; previous count to *prev_count (may be NULL).  -EOVERFLOW if the
 * result would exceed the maximum (the semaphore is then unchanged). */
NTSYNC_API int ntsync_sem_release(int sem, uint32_t count,
				  uint32_t *prev_count);
NTSYNC_API int ntsync_sem_read(int sem, uint32_t *count, uint32_t *max);

/* --- mutexes ----------------------------------------------------------- */

/* owner 0 with count 0 is an unowned mutex; both must be zero or both
 * nonzero (-EINVAL otherwise). */
NTSYNC_API int ntsync_mutex_create(struct ntsync_device *dev,
				   uint32_t owner, uint32_t count);
/* -EPERM if owner does not own the mutex.  *prev_count may be NULL. */
NTSYNC_API int ntsync_mutex_unlock(int mutex, uint32_t owner,
				   uint32_t *prev_count);
/* Mark the mutex abandoned if owner owns it (its owner thread died). */
NTSYNC_API int ntsync_mutex_kill(int mutex, uint32_t owner);
/* -EOWNERDEAD (with *owner and *count 0) if the mutex is abandoned. */
NTSYNC_API int ntsync_mutex_read(int mutex, uint32_t *owner, uint32_t *count);

/* --- events ------------------------------------------------------------ */

NTSYNC_API int ntsync_event_create(struct ntsync_device *dev,
				   bool manual, bool signaled);
/* *prev_signaled (may be NULL) receives the state before the call. */
NTSYNC_API int ntsync_event_set(int event, bool *prev_signaled);
NTSYNC_API int ntsync_event_reset(int event, bool *prev_signaled);
NTSYNC_API int ntsync_event_pulse(int event, bool *prev_signaled);
NTSYNC_API int ntsync_event_read(int event, bool *manual, bool *signaled);

/* --- waits ------------------------------------------------------------- */

/*
 * Wait until one of objs[0..count-1] is signalled and acquire it (any), or
 * until all of them are signalled at once and acquire them all together
 * (all).  owner (nonzero) is the mutex owner the wait acquires mutexes for.
 * alert is an event descriptor of the same instance that ends the wait when
 * signalled, or NTSYNC_NO_ALERT.  count may be 0 (objs may then be NULL):
 * the wait ends only by alert or time-out.
 *
 * Returns 0 or -EOWNERDEAD with *index set: for "any" the index of the
 * acquired object (the lowest one if several are signalled); for "all" 0;
 * for both, count if the alert ended the wait (nothing else acquired).
 * index may be NULL if the caller does not need it.  Otherwise -ETIMEDOUT,
 * -EINTR or another -errno, and *index is not written.
 */
NTSYNC_API int ntsync_wait_any(struct ntsync_device *dev, const int *objs,
			       uint32_t count, uint32_t owner, int alert,
			       struct ntsync_timeout timeout, uint32_t *index);
NTSYNC_API int ntsync_wait_all(struct ntsync_device *dev, const int *objs,
			       uint32_t count, uint32_t owner, int alert,
			       struct ntsync_timeout timeout, uint32_t *index);

/* --- time-outs --------------------------------------------------------- */

/* Never time out. */
NTSYNC_API struct ntsync_timeout ntsync_timeout_infinite(void);
/* Absolute deadlines on CLOCK_MONOTONIC / CLOCK_REALTIME, in ns. */
NTSYNC_API struct ntsync_timeout ntsync_timeout_monotonic(uint64_t deadline_ns);
NTSYNC_API struct ntsync_timeout ntsync_timeout_realtime(uint64_t deadline_ns);
/* A MONOTONIC deadline rel_ns from now; 0 means poll.  Infinite if the
 * deadline would lie beyond INT64_MAX ns (about 292 years of uptime). */
NTSYNC_API struct ntsync_timeout ntsync_timeout_relative(uint64_t rel_ns);

#ifdef __cplusplus
}
#endif

#endif /* NTSYNC_H */
