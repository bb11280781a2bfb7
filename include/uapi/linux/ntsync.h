/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * The /dev/ntsync interface: NT semaphores, mutexes and events for NT
 * emulators
 *
 * Copyright (C) 2021-2022 Elizabeth Figura <zfigura@codeweavers.com>
 *
 * This is the ABI of mainline Linux's ntsync driver (complete from 6.14),
 * whose author is Elizabeth Figura.  Every name, value and structure
 * layout here is hers and stays exactly as mainline has it, down to the
 * include guard and the spelling of each definition (a macro defined twice
 * must be defined alike), so that this copy and the kernel's
 * <linux/ntsync.h> are interchangeable (tests/abi.c checks each value and
 * offset).  The comments
 * are the ntsync project's.  The project's module, libntsync and its tests
 * all build against this one copy.
 *
 * Each open of /dev/ntsync is a separate instance.  Its ioctls create
 * objects, each returned as a new close-on-exec descriptor, and wait on
 * them; the objects' own ioctls change and read them.  Every call returns
 * -1 with errno on failure.
 */

#ifndef __LINUX_NTSYNC_H
#define __LINUX_NTSYNC_H

#include <linux/types.h>

/* A semaphore: signaled while count is nonzero; count never exceeds max. */
struct ntsync_sem_args {
	__u32 count;
	__u32 max;
};

/*
 * A mutex: owner is an id of the caller's choosing (0: not owned) and count
 * its recursion depth; signaled for a waiter whose owner id is the
 * mutex's, or when it is not owned.
 */
struct ntsync_mutex_args {
	__u32 owner;
	__u32 count;
};

/* An event: manual-reset (nonzero) or auto-reset (0), and its state. */
struct ntsync_event_args {
	__u32 manual;
	__u32 signaled;
};

/* ntsync_wait_args.flags: the deadline is on CLOCK_REALTIME. */
#define NTSYNC_WAIT_REALTIME	0x1

/*
 * A wait for any or all of count objects.
 *
 * timeout: absolute deadline in ns on CLOCK_MONOTONIC (the caller's time
 *          namespace) or, with NTSYNC_WAIT_REALTIME, CLOCK_REALTIME; a
 *          deadline already past polls; U64_MAX waits without one.
 * objs:    user address of an array of count object descriptors (int).
 * index:   written on success: the index in objs of the object acquired
 *          (the lowest, if it is named more than once), 0 for wait-all, or
 *          count when the alert ended the wait.
 * owner:   the owner id that mutexes are acquired for; must not be 0.
 * alert:   0, or the descriptor of an event that ends the wait when
 *          signaled; the objects take precedence over it.
 * pad:     must be 0.
 */
struct ntsync_wait_args {
	__u64 timeout;
	__u64 objs;
	__u32 count;
	__u32 index;
	__u32 flags;
	__u32 owner;
	__u32 alert;
	__u32 pad;
};

/* The most objects one wait may name, not counting the alert. */
#define NTSYNC_MAX_WAIT_COUNT 64

/*
 * ioctls of the device.  The CREATEs return the new object's descriptor;
 * the waits return 0, or fail with ETIMEDOUT, or with EOWNERDEAD when they
 * acquired an abandoned mutex (index is written all the same).
 */
#define NTSYNC_IOC_CREATE_SEM		_IOW ('N', 0x80, struct ntsync_sem_args)
#define NTSYNC_IOC_WAIT_ANY		_IOWR('N', 0x82, struct ntsync_wait_args)
#define NTSYNC_IOC_WAIT_ALL		_IOWR('N', 0x83, struct ntsync_wait_args)
#define NTSYNC_IOC_CREATE_MUTEX		_IOW ('N', 0x84, struct ntsync_mutex_args)
#define NTSYNC_IOC_CREATE_EVENT		_IOW ('N', 0x87, struct ntsync_event_args)

/*
 * ioctls of the objects; each is EINVAL on an object of another kind.
 * SEM_RELEASE adds the __u32 it points to and hands back the count before
 * (EOVERFLOW past max).  MUTEX_UNLOCK gives up one level of owner's hold
 * and hands back the count before; MUTEX_KILL, given the owner id alone,
 * abandons the mutex (EPERM if that owner does not hold it).  The EVENT
 * calls hand back the state before; a pulse wakes what a set would and
 * leaves the event unsignaled.  The READs fill in the object's structure;
 * MUTEX_READ of an abandoned mutex fails with EOWNERDEAD.
 */
#define NTSYNC_IOC_SEM_RELEASE		_IOWR('N', 0x81, __u32)
#define NTSYNC_IOC_MUTEX_UNLOCK		_IOWR('N', 0x85, struct ntsync_mutex_args)
#define NTSYNC_IOC_MUTEX_KILL		_IOW ('N', 0x86, __u32)
#define NTSYNC_IOC_EVENT_SET		_IOR ('N', 0x88, __u32)
#define NTSYNC_IOC_EVENT_RESET		_IOR ('N', 0x89, __u32)
#define NTSYNC_IOC_EVENT_PULSE		_IOR ('N', 0x8a, __u32)
#define NTSYNC_IOC_SEM_READ		_IOR ('N', 0x8b, struct ntsync_sem_args)
#define NTSYNC_IOC_MUTEX_READ		_IOR ('N', 0x8c, struct ntsync_mutex_args)
#define NTSYNC_IOC_EVENT_READ		_IOR ('N', 0x8d, struct ntsync_event_args)

#endif /* __LINUX_NTSYNC_H */
