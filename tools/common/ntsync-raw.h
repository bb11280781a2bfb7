/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ntsync-raw.h: the project's one set of raw /dev/ntsync ioctl wrappers, for
 * the programs that judge or measure the device itself rather than use it:
 * the conformance suite (tests/), the fuzzers (tests/fuzz/), ntsync-smoke
 * (tests/smoke/) and ntsync-bench (tools/bench/).  Header-only, static
 * inline, against the project's <linux/ntsync.h>.  Applications use
 * libntsync (<ntsync.h>) instead; it stays separate on purpose, so that the
 * tests judge the device, not the library.  It lives in tools/common, the
 * code tools/ and tests/ share, so that neither tree includes the other's
 * headers.
 *
 * Every wrapper returns what ioctl() returns: 0 (or the new descriptor for
 * the creates), -1 with errno on error.  ntr_neg() turns that into the
 * "result or -errno" convention some callers prefer.
 *
 * Output fields are pre-filled with NTR_POISON32 (0xcc bytes) before the
 * ioctl, and copied out whatever the result, so a caller can prove that the
 * kernel wrote what it checks.
 */
#ifndef NTSYNC_RAW_H
#define NTSYNC_RAW_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/ntsync.h>

#define NTR_DEVICE "/dev/ntsync"
#define NTR_POISON32 0xccccccccU

/* ret < 0: -errno; else ret (for "0 or -errno" callers). */
static inline long ntr_neg(long ret)
{
	return ret < 0 ? -errno : ret;
}

static inline int ntr_open_path(const char *path)
{
	return open(path, O_RDWR | O_CLOEXEC);
}

static inline int ntr_open(void)
{
	return ntr_open_path(NTR_DEVICE);
}

/* ---- the device's creates: the new descriptor, or -1 with errno ---- */

static inline int ntr_create_sem(int dev, uint32_t count, uint32_t max)
{
	struct ntsync_sem_args args = { .count = count, .max = max };

	return ioctl(dev, NTSYNC_IOC_CREATE_SEM, &args);
}

static inline int ntr_create_mutex(int dev, uint32_t owner, uint32_t count)
{
	struct ntsync_mutex_args args = { .owner = owner, .count = count };

	return ioctl(dev, NTSYNC_IOC_CREATE_MUTEX, &args);
}

static inline int ntr_create_event(int dev, uint32_t manual, uint32_t signaled)
{
	struct ntsync_event_args args = { .manual = manual, .signaled = signaled };

	return ioctl(dev, NTSYNC_IOC_CREATE_EVENT, &args);
}

/* ---- objects; prev (may be NULL) receives the previous state ---- */

static inline int ntr_sem_release(int sem, uint32_t n, uint32_t *prev)
{
	uint32_t arg = n;
	int ret = ioctl(sem, NTSYNC_IOC_SEM_RELEASE, &arg);

	if (prev)
		*prev = arg;
	return ret;
}

static inline int ntr_sem_read(int sem, uint32_t *count, uint32_t *max)
{
	struct ntsync_sem_args args;
	int ret;

	memset(&args, 0xcc, sizeof(args));
	ret = ioctl(sem, NTSYNC_IOC_SEM_READ, &args);
	if (count)
		*count = args.count;
	if (max)
		*max = args.max;
	return ret;
}

static inline int ntr_mutex_unlock(int mutex, uint32_t owner, uint32_t *prev)
{
	struct ntsync_mutex_args args = { .owner = owner, .count = NTR_POISON32 };
	int ret = ioctl(mutex, NTSYNC_IOC_MUTEX_UNLOCK, &args);

	if (prev)
		*prev = args.count;
	return ret;
}

static inline int ntr_mutex_kill(int mutex, uint32_t owner)
{
	return ioctl(mutex, NTSYNC_IOC_MUTEX_KILL, &owner);
}

static inline int ntr_mutex_read(int mutex, uint32_t *owner, uint32_t *count)
{
	struct ntsync_mutex_args args;
	int ret;

	memset(&args, 0xcc, sizeof(args));
	ret = ioctl(mutex, NTSYNC_IOC_MUTEX_READ, &args);
	if (owner)
		*owner = args.owner;
	if (count)
		*count = args.count;
	return ret;
}

/* op: NTSYNC_IOC_EVENT_SET, _RESET or _PULSE */
static inline int ntr_event_op(int event, unsigned long op, uint32_t *prev)
{
	uint32_t arg = NTR_POISON32;
	int ret = ioctl(event, op, &arg);

	if (prev)
		*prev = arg;
	return ret;
}

static inline int ntr_event_set(int event, uint32_t *prev)
{
	return ntr_event_op(event, NTSYNC_IOC_EVENT_SET, prev);
}

static inline int ntr_event_reset(int event, uint32_t *prev)
{
	return ntr_event_op(event, NTSYNC_IOC_EVENT_RESET, prev);
}

static inline int ntr_event_pulse(int event, uint32_t *prev)
{
	return ntr_event_op(event, NTSYNC_IOC_EVENT_PULSE, prev);
}

static inline int ntr_event_read(int event, uint32_t *manual, uint32_t *signaled)
{
	struct ntsync_event_args args;
	int ret;

	memset(&args, 0xcc, sizeof(args));
	ret = ioctl(event, NTSYNC_IOC_EVENT_READ, &args);
	if (manual)
		*manual = args.manual;
	if (signaled)
		*signaled = args.signaled;
	return ret;
}

/* ---- waits ---- */

/* WAIT_ALL (all) or WAIT_ANY with the caller's args (index is written). */
static inline int ntr_wait_args(int dev, bool all, struct ntsync_wait_args *args)
{
	return ioctl(dev, all ? NTSYNC_IOC_WAIT_ALL : NTSYNC_IOC_WAIT_ANY, args);
}

/* The args struct filled in (pad 0, index poisoned); index (may be NULL)
 * receives args.index whatever the result. */
static inline int ntr_wait(int dev, bool all, const int *objs, uint32_t count,
			   uint32_t owner, uint32_t alert, uint32_t flags,
			   uint64_t timeout, uint32_t *index)
{
	struct ntsync_wait_args args = {
		.timeout = timeout,
		.objs = (uint64_t)(uintptr_t)objs,
		.count = count,
		.index = NTR_POISON32,
		.flags = flags,
		.owner = owner,
		.alert = alert,
		.pad = 0,
	};
	int ret = ntr_wait_args(dev, all, &args);

	if (index)
		*index = args.index;
	return ret;
}

#endif /* NTSYNC_RAW_H */
