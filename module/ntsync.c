// SPDX-License-Identifier: GPL-2.0-only
/*
 * ntsync: NT synchronization primitives for NT emulators
 *
 * /dev/ntsync gives each open a private instance in which user space
 * creates semaphores, mutexes and events, each an anonymous file, and waits
 * on up to NTSYNC_MAX_WAIT_COUNT of them at once, acquiring any one of them
 * or all of them atomically.  The user-space ABI is mainline's
 * <linux/ntsync.h>, byte for byte.
 *
 * Credit: this is an independent implementation of the driver that
 * Elizabeth Figura <zfigura@codeweavers.com> wrote for mainline Linux
 * (drivers/misc/ntsync.c, Copyright (C) 2024 Elizabeth Figura), and its
 * design follows hers in these points: objects are anonymous files that
 * hold a reference to their instance's file; waits queue entries on
 * per-object lists of wait-any and wait-all waiters; a waiter is claimed
 * once, by a compare-and-exchange on its "signaled" index; and waits for
 * all serialize on an instance-wide mutex that an object takes only while
 * wait-all entries are queued on it (her all_hint).  The ABI, its error
 * codes and the behaviour are hers.  The code is this project's own, and
 * so are the rest of the design: the wait that acquires before it queues,
 * stack-allocated wait entries, the lock-free look and its sequence counts,
 * the object layer below and the fdinfo output.
 *
 * Locking
 * -------
 * Every object has a spinlock, ntsync_obj.lock, which serializes changes to
 * its state and its queue of wait-any entries.  Waits for all objects need a
 * consistent view of several objects at once; rather than nesting up to 64
 * spinlocks, they serialize on the instance's wait_all_lock mutex:
 *
 *  - ntsync_obj.all_hint counts the wait-all entries queued on an object.
 *    It only changes with both wait_all_lock and the object's lock held.
 *  - Whoever wants to touch an object takes its spinlock and, if all_hint is
 *    nonzero, drops it, takes wait_all_lock and the spinlock again
 *    (ntsync_lock_obj()).
 *
 * So while a wait-all entry is queued on an object, nothing reads or changes
 * that object without wait_all_lock, and a holder of wait_all_lock may read
 * and change every object that a queued wait-all covers without taking the
 * objects' spinlocks.  Objects that nobody waits on "for all" never touch
 * the mutex: wait-any, release, set and the reads stay on one spinlock.
 *
 * A waiter is claimed exactly once by moving ntsync_q.signaled from -1 to
 * the index of the entry that satisfied it with a compare-and-exchange, made
 * under the lock that protects the object being acquired; whoever wins the
 * exchange acquires the object(s) on the waiter's behalf and wakes it.
 *
 * Looking without locks
 * ---------------------
 * A wait-any first looks at its objects without locks and locks only one
 * that looks signaled.  Acquiring an object that way is always a correct
 * result; "nothing is signaled" (the time-out of a poll) and "only the
 * alert is signaled" are not, unless they held at one instant for all the
 * objects: looked at one after another, one object can become signaled
 * behind the look while another stops being signaled ahead of it.
 *
 * So every object has a sequence count, ntsync_obj.seq (a
 * seqcount_spinlock_t tied to its lock), and every change that can make it
 * signaled (release, unlock, kill, set, pulse) is a write section of it,
 * ended before any waiter is handed the object.  The look begins a read
 * section on each object before it reads the state, and keeps the count in
 * the wait's entry; a poll that found nothing then checks, object by
 * object, that no section ran since (read_seqcount_retry()).  If none did,
 * then at the instant between the last look and the first check every
 * object was in the state the look saw: unsignaled, and the time-out is
 * correct.  (A count bumped once after the change would not do: a change
 * made just after the look and counted only after the check would go
 * unseen.)
 *
 * If one changed, or an object that looked signaled was not under its
 * lock, the poll does what a sleeping wait does: it queues on every object
 * in order, taking the first that is signaled, and times out only if
 * queueing found none; a queued waiter is handed every object that becomes
 * signaled, so at the end of queueing none was.  The alert is taken by the
 * look only under the same check, made while the alert's lock is held.
 * Acquisitions, which only ever make an object less signaled, are not
 * write sections.  A wait that can neither time out nor take an alert
 * needs no instant, and its look reads no counts.
 *
 * A waiter leaves its queues alert first and then from the highest index
 * down: while it is still queued on an object, nobody can hand it the
 * alert ahead of that object.
 */

#include <linux/anon_inodes.h>
#include <linux/atomic.h>
#include <linux/compiler.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/hrtimer.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/lockdep.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>

#include "compat.h"
#include "../include/uapi/linux/ntsync.h"

#define NTSYNC_NAME	"ntsync"

/*
 * Waits on up to this many entries (objects plus alert) keep their queue
 * entries on the kernel stack; larger ones use the instance's spare array
 * or allocate one, charged to the caller's memory cgroup.
 */
#define NTSYNC_STACK_ENTRIES	8

/**
 * enum ntsync_kind - what an object is
 * @NTSYNC_SEM: a semaphore
 * @NTSYNC_MUTEX: a mutex
 * @NTSYNC_EVENT: an event, manual-reset or auto-reset
 */
enum ntsync_kind {
	NTSYNC_SEM,
	NTSYNC_MUTEX,
	NTSYNC_EVENT,
};

struct ntsync_q_entry;

/**
 * struct ntsync_device - one open of /dev/ntsync
 * @wait_all_lock: serializes wait-all queueing and every access to objects
 *	that have wait-all entries queued (see "Locking" at the top).
 * @file: the device file; each object holds a reference to it.
 * @spare: an array of NTSYNC_MAX_WAIT_COUNT + 1 queue entries that the
 *	last wait too large for the stack left for the next, or NULL; taken
 *	and given back with xchg() and cmpxchg().
 */
struct ntsync_device {
	struct mutex wait_all_lock;	/* see "Locking" at the top */
	struct file *file;
	struct ntsync_q_entry *spare;
};

/**
 * union ntsync_state - the state of an object
 * @sem: a semaphore's count and maximum
 * @mutex: a mutex's owner (0: none) and recursion count
 * @event: an event's manual-reset flag and state, each 0 or 1
 *
 * Kept in the ABI's own argument structures, so that a read hands it out as
 * it is.
 */
union ntsync_state {
	struct ntsync_sem_args sem;
	struct ntsync_mutex_args mutex;
	struct ntsync_event_args event;
};

/**
 * struct ntsync_obj - a semaphore, mutex or event
 * @lock: protects @s, @abandoned and @any_waiters; with wait_all_lock
 *	also @all_hint.
 * @seq: a write section around every change that can signal @s, under
 *	@lock; read by the lock-free look (see "Looking without locks").
 * @all_hint: number of entries on @all_waiters; nonzero means that @s is
 *	accessed only with the instance's wait_all_lock held.
 * @kind: what the object is, set at creation (8 bits, which keeps the
 *	object at 72 bytes on 64-bit without lock debugging).
 * @abandoned: a mutex whose owner was killed and that nobody acquired
 *	since; its owner and count are 0.
 * @s: the state; see ntsync_lock_obj() for which lock covers it.
 * @any_waiters: wait-any entries (and alerts), in queueing order; @lock.
 * @all_waiters: wait-all entries, in queueing order; wait_all_lock.
 * @dev: the instance, kept alive by a reference to its file.
 * @file: the object's own file.
 */
struct ntsync_obj {
	spinlock_t lock;		/* state, wait-any queue, seq */
	seqcount_spinlock_t seq;
	unsigned int all_hint;
	enum ntsync_kind kind : 8;
	bool abandoned;
	union ntsync_state s;

	struct list_head any_waiters;
	struct list_head all_waiters;
	struct ntsync_device *dev;
	struct file *file;
};

struct ntsync_q;

/**
 * struct ntsync_q_entry - one object of one wait
 * @node: on the object's @any_waiters or @all_waiters while queued.
 * @seq: before the wait queues, the object's sequence count when the
 *	lock-free look began its read section (the look is over before
 *	@node is used; sharing it keeps an entry at 32 bytes on 64-bit).
 * @q: the wait; set when the entry is queued.
 * @obj: the object; the wait holds a reference to its file.
 *
 * An entry's index in the wait (the object's, or the count of objects for
 * the alert) is its place in @q->entries: ntsync_entry_index().
 */
struct ntsync_q_entry {
	union {
		struct list_head node;
		unsigned int seq;
	};
	struct ntsync_q *q;
	struct ntsync_obj *obj;
};

/**
 * struct ntsync_q - a thread's wait
 * @task: the waiting thread.
 * @signaled: -1 while waiting; the index of the satisfying entry once
 *	claimed (0 for a complete wait-all, count for the alert).
 * @owner: the owner a mutex is acquired for.
 * @count: number of objects, not counting the alert.
 * @ownerdead: an abandoned mutex was acquired; written by the claimer
 *	before it drops the lock of the object it claimed through.
 * @realtime: the deadline is on CLOCK_REALTIME (NTSYNC_WAIT_REALTIME),
 *	else on CLOCK_MONOTONIC in the caller's time namespace.
 * @deadline: the absolute deadline on the host's clock (KTIME_MAX: none);
 *	see ntsync_deadline().
 * @entries: @count entries, then the alert's if there is one.
 *
 * The wait's arguments that are needed after ntsync_wait_get() live here,
 * not in a copy of struct ntsync_wait_args on the wait's stack.
 */
struct ntsync_q {
	struct task_struct *task;
	atomic_t signaled;
	__u32 owner;
	__u32 count;
	bool ownerdead;
	bool realtime;
	ktime_t deadline;
	struct ntsync_q_entry *entries;
};

/**
 * union ntsync_wait_stack - what a wait keeps on the stack
 * @small: a wait of up to NTSYNC_STACK_ENTRIES entries: its entries and
 *	the descriptors it copies in.
 * @small.entries: the queue entries.
 * @small.fds: the descriptors of its objects.
 * @fds: the descriptors of a larger wait, whose entries are elsewhere.
 *
 * Mainline's driver keeps only the descriptors on the stack and allocates
 * every wait's entries; this keeps the frame of each wait under 512 bytes
 * with no allocation for a small wait.
 */
union ntsync_wait_stack {
	struct {
		struct ntsync_q_entry entries[NTSYNC_STACK_ENTRIES];
		int fds[NTSYNC_STACK_ENTRIES];
	} small;
	int fds[NTSYNC_MAX_WAIT_COUNT];
};

static struct kmem_cache *ntsync_obj_cachep;

/*
 * Lock an object for reading or changing its state.  Returns true when
 * wait_all_lock was taken as well, which happens when wait-all entries are
 * queued on the object.
 */
static bool ntsync_lock_obj(struct ntsync_obj *obj)
	__acquires(&obj->lock)
{
	spin_lock(&obj->lock);
	if (likely(!obj->all_hint))
		return false;

	spin_unlock(&obj->lock);
	mutex_lock(&obj->dev->wait_all_lock);
	spin_lock(&obj->lock);
	return true;
}

static void ntsync_unlock_obj(struct ntsync_obj *obj, bool all)
	__releases(&obj->lock)
{
	spin_unlock(&obj->lock);
	if (all)
		mutex_unlock(&obj->dev->wait_all_lock);
}

/* The state of @obj may be read or changed by the caller. */
static void ntsync_assert_held(struct ntsync_obj *obj)
{
	if (obj->all_hint)
		lockdep_assert_held(&obj->dev->wait_all_lock);
	else
		lockdep_assert_held(&obj->lock);
}

/*
 * Could a wait on behalf of @owner acquire @obj now?  Called with the
 * object held (ntsync_assert_held()) and, as a hint that the caller checks
 * again under the lock, by the lock-free look, for which every field is
 * read once: the fields of a mutex may then come from two instants.
 * Inlined: the look calls it for every object of a wait.
 */
static __always_inline bool ntsync_signaled(const struct ntsync_obj *obj,
					    __u32 owner)
{
	const union ntsync_state *s = &obj->s;
	__u32 mutex_owner;

	switch (obj->kind) {
	case NTSYNC_SEM:
		return READ_ONCE(s->sem.count);
	case NTSYNC_MUTEX:
		/* a recursion count at its limit cannot grow: not signaled */
		mutex_owner = READ_ONCE(s->mutex.owner);
		return (!mutex_owner || mutex_owner == owner) &&
		       READ_ONCE(s->mutex.count) != U32_MAX;
	case NTSYNC_EVENT:
		return READ_ONCE(s->event.signaled);
	}
	WARN_ON_ONCE(1);
	return false;
}

/*
 * Acquire a signaled @obj for @owner.  Returns true if it was a mutex whose
 * previous owner had died.
 */
static bool ntsync_acquire_state(struct ntsync_obj *obj, __u32 owner)
{
	union ntsync_state *s = &obj->s;
	bool was_abandoned;

	ntsync_assert_held(obj);

	switch (obj->kind) {
	case NTSYNC_SEM:
		s->sem.count--;
		return false;
	case NTSYNC_MUTEX:
		was_abandoned = obj->abandoned;
		obj->abandoned = false;
		s->mutex.count++;
		s->mutex.owner = owner;
		return was_abandoned;
	case NTSYNC_EVENT:
		/* an auto-reset event (manual 0) resets */
		s->event.signaled &= s->event.manual;
		return false;
	}
	WARN_ON_ONCE(1);
	return false;
}

/* The index in its wait of @entry: the result of a wait it satisfies. */
static __u32 ntsync_entry_index(const struct ntsync_q_entry *entry)
{
	return entry - entry->q->entries;
}

/* Claim @q for @index; on success the caller acquires on its behalf. */
static bool ntsync_claim(struct ntsync_q *q, __u32 index)
{
	return atomic_cmpxchg(&q->signaled, -1, index) == -1;
}

/* Hand a signaled @obj to the wait-any waiters queued on it, in order. */
static void ntsync_wake_any_state(struct ntsync_obj *obj)
{
	struct ntsync_q_entry *entry;

	lockdep_assert_held(&obj->lock);

	list_for_each_entry(entry, &obj->any_waiters, node) {
		struct ntsync_q *q = entry->q;

		if (atomic_read(&q->signaled) != -1)
			continue;
		if (!ntsync_signaled(obj, q->owner)) {
			/* only a mutex can be signaled for some owners */
			if (obj->kind != NTSYNC_MUTEX)
				break;
			continue;
		}
		if (!ntsync_claim(q, ntsync_entry_index(entry)))
			continue;
		if (ntsync_acquire_state(obj, q->owner))
			q->ownerdead = true;
		wake_up_process(q->task);
	}
}

/* Satisfy the wait-all @q if all its objects are signaled at once. */
static void ntsync_wake_all_state(struct ntsync_device *dev,
				  struct ntsync_q *q)
{
	__u32 i;

	lockdep_assert_held(&dev->wait_all_lock);

	if (atomic_read(&q->signaled) != -1)
		return;
	for (i = 0; i < q->count; i++) {
		if (!ntsync_signaled(q->entries[i].obj, q->owner))
			return;
	}
	if (!ntsync_claim(q, 0))
		return;
	for (i = 0; i < q->count; i++) {
		if (ntsync_acquire_state(q->entries[i].obj, q->owner))
			q->ownerdead = true;
	}
	wake_up_process(q->task);
}

/*
 * @obj, held, has just become more signaled (in a write section of its
 * sequence count, ended): hand it to whom it can satisfy, wait-all waiters
 * first.
 * While wait-all entries are queued on it (all_hint, which changes only
 * under both locks), ntsync_lock_obj() took wait_all_lock as well.
 */
static void ntsync_wake(struct ntsync_obj *obj)
{
	struct ntsync_q_entry *entry;

	lockdep_assert_held(&obj->lock);

	if (obj->all_hint) {
		lockdep_assert_held(&obj->dev->wait_all_lock);
		list_for_each_entry(entry, &obj->all_waiters, node)
			ntsync_wake_all_state(obj->dev, entry->q);
	}
	ntsync_wake_any_state(obj);
}

/*
 * The object ioctls.  The dispatcher picks the handler by the command
 * alone; each handler checks its inputs in mainline's order (doc/abi.md,
 * §abi.order): first what it copies in, then the object's kind, then the
 * state under the object's lock, and copies out last.  A call that is
 * wrong in two ways thus fails as it does in mainline: an unreadable
 * argument is EFAULT before a wrong kind is EINVAL.
 */

/* SEM_RELEASE: add to the count, unless that passes the maximum. */
static int ntsync_sem_release(struct ntsync_obj *sem, __u32 __user *inout)
{
	struct ntsync_sem_args *s = &sem->s.sem;
	__u32 add, before;
	bool all;
	int ret = 0;

	if (get_user(add, inout))
		return -EFAULT;
	if (sem->kind != NTSYNC_SEM)
		return -EINVAL;

	all = ntsync_lock_obj(sem);
	before = s->count;
	if (add > s->max - before) {
		ret = -EOVERFLOW;
	} else {
		write_seqcount_begin(&sem->seq);
		s->count = before + add;
		write_seqcount_end(&sem->seq);
		ntsync_wake(sem);
	}
	ntsync_unlock_obj(sem, all);

	if (!ret && put_user(before, inout))
		ret = -EFAULT;
	return ret;
}

/* MUTEX_UNLOCK: one level of recursion; the count before is written back. */
static int ntsync_mutex_unlock(struct ntsync_obj *mutex,
			       struct ntsync_mutex_args __user *uargs)
{
	struct ntsync_mutex_args *m = &mutex->s.mutex;
	struct ntsync_mutex_args args;
	__u32 before;
	bool all;
	int ret = 0;

	if (copy_from_user(&args, uargs, sizeof(args)))
		return -EFAULT;
	if (!args.owner || mutex->kind != NTSYNC_MUTEX)
		return -EINVAL;

	all = ntsync_lock_obj(mutex);
	before = m->count;
	if (m->owner != args.owner) {
		ret = -EPERM;
	} else {
		write_seqcount_begin(&mutex->seq);
		if (!--m->count)
			m->owner = 0;
		write_seqcount_end(&mutex->seq);
		ntsync_wake(mutex);
	}
	ntsync_unlock_obj(mutex, all);

	if (!ret && put_user(before, &uargs->count))
		ret = -EFAULT;
	return ret;
}

/*
 * MUTEX_KILL: the owner died; every level of recursion goes and the mutex
 * is abandoned until someone acquires it.  Nothing is written back.
 */
static int ntsync_mutex_kill(struct ntsync_obj *mutex, __u32 __user *uowner)
{
	struct ntsync_mutex_args *m = &mutex->s.mutex;
	__u32 owner;
	bool all;
	int ret = 0;

	if (get_user(owner, uowner))
		return -EFAULT;
	if (!owner || mutex->kind != NTSYNC_MUTEX)
		return -EINVAL;

	all = ntsync_lock_obj(mutex);
	if (m->owner != owner) {
		ret = -EPERM;
	} else {
		write_seqcount_begin(&mutex->seq);
		m->owner = 0;
		m->count = 0;
		mutex->abandoned = true;
		write_seqcount_end(&mutex->seq);
		ntsync_wake(mutex);
	}
	ntsync_unlock_obj(mutex, all);
	return ret;
}

/* EVENT_SET: signal the event; the state before is written back. */
static int ntsync_event_set(struct ntsync_obj *event, __u32 __user *out)
{
	struct ntsync_event_args *e = &event->s.event;
	__u32 before;
	bool all;

	if (event->kind != NTSYNC_EVENT)
		return -EINVAL;

	all = ntsync_lock_obj(event);
	before = e->signaled;
	write_seqcount_begin(&event->seq);
	e->signaled = 1;
	write_seqcount_end(&event->seq);
	ntsync_wake(event);
	ntsync_unlock_obj(event, all);

	return put_user(before, out) ? -EFAULT : 0;
}

/* EVENT_RESET: unsignal the event; the state before is written back. */
static int ntsync_event_reset(struct ntsync_obj *event, __u32 __user *out)
{
	struct ntsync_event_args *e = &event->s.event;
	__u32 before;
	bool all;

	if (event->kind != NTSYNC_EVENT)
		return -EINVAL;

	all = ntsync_lock_obj(event);
	before = e->signaled;
	e->signaled = 0;
	ntsync_unlock_obj(event, all);

	return put_user(before, out) ? -EFAULT : 0;
}

/*
 * EVENT_PULSE: signal the event to the waiters it can wake and leave it
 * unsignaled, all under one hold of the lock; the state before is written
 * back.
 */
static int ntsync_event_pulse(struct ntsync_obj *event, __u32 __user *out)
{
	struct ntsync_event_args *e = &event->s.event;
	__u32 before;
	bool all;

	if (event->kind != NTSYNC_EVENT)
		return -EINVAL;

	all = ntsync_lock_obj(event);
	before = e->signaled;
	write_seqcount_begin(&event->seq);
	e->signaled = 1;
	write_seqcount_end(&event->seq);
	ntsync_wake(event);
	e->signaled = 0;
	ntsync_unlock_obj(event, all);

	return put_user(before, out) ? -EFAULT : 0;
}

/*
 * The state of @obj, as the ABI spells it, for the three reads (each has
 * checked the kind); -EOWNERDEAD for an abandoned mutex.
 */
static int ntsync_read_state(struct ntsync_obj *obj, void __user *out)
{
	union ntsync_state now;
	bool abandoned, all;

	all = ntsync_lock_obj(obj);
	now = obj->s;
	abandoned = obj->abandoned;
	ntsync_unlock_obj(obj, all);

	if (copy_to_user(out, &now, sizeof(now)))
		return -EFAULT;
	return abandoned ? -EOWNERDEAD : 0;
}

/* SEM_READ */
static int ntsync_sem_read(struct ntsync_obj *sem,
			   struct ntsync_sem_args __user *out)
{
	if (sem->kind != NTSYNC_SEM)
		return -EINVAL;
	return ntsync_read_state(sem, out);
}

/* MUTEX_READ */
static int ntsync_mutex_read(struct ntsync_obj *mutex,
			     struct ntsync_mutex_args __user *out)
{
	if (mutex->kind != NTSYNC_MUTEX)
		return -EINVAL;
	return ntsync_read_state(mutex, out);
}

/* EVENT_READ */
static int ntsync_event_read(struct ntsync_obj *event,
			     struct ntsync_event_args __user *out)
{
	if (event->kind != NTSYNC_EVENT)
		return -EINVAL;
	return ntsync_read_state(event, out);
}

static long ntsync_obj_ioctl(struct file *file, unsigned int cmd,
			     unsigned long uarg)
{
	struct ntsync_obj *obj = file->private_data;
	void __user *p = (void __user *)uarg;

	switch (cmd) {
	case NTSYNC_IOC_SEM_RELEASE:
		return ntsync_sem_release(obj, p);
	case NTSYNC_IOC_SEM_READ:
		return ntsync_sem_read(obj, p);
	case NTSYNC_IOC_MUTEX_UNLOCK:
		return ntsync_mutex_unlock(obj, p);
	case NTSYNC_IOC_MUTEX_KILL:
		return ntsync_mutex_kill(obj, p);
	case NTSYNC_IOC_MUTEX_READ:
		return ntsync_mutex_read(obj, p);
	case NTSYNC_IOC_EVENT_SET:
		return ntsync_event_set(obj, p);
	case NTSYNC_IOC_EVENT_RESET:
		return ntsync_event_reset(obj, p);
	case NTSYNC_IOC_EVENT_PULSE:
		return ntsync_event_pulse(obj, p);
	case NTSYNC_IOC_EVENT_READ:
		return ntsync_event_read(obj, p);
	}
	return -ENOIOCTLCMD;
}

/*
 * /proc/PID/fdinfo/N: what a hung game's objects are doing.  These lines are
 * this module's alone (mainline's driver shows none); tools/ntsync-users.c
 * reads "ntsync-type:".
 *
 * A reader of /proc, maybe another process, takes only the object's lock,
 * never the instance's wait_all_lock (as ntsync_lock_obj() would while
 * wait-all entries are queued): that lock covers the wait-any queue and
 * all_hint, but a holder of wait_all_lock may change the state without
 * it.  So each field of the state is read once, and while wait-all
 * entries are queued two fields may come from two instants.
 */
static void ntsync_obj_show_fdinfo(struct seq_file *m, struct file *file)
{
	struct ntsync_obj *obj = file->private_data;
	const union ntsync_state *s = &obj->s;
	struct ntsync_q_entry *entry;
	unsigned int any = 0;

	spin_lock(&obj->lock);
	switch (obj->kind) {
	case NTSYNC_SEM:
		seq_printf(m, "ntsync-type:\tsemaphore\ncount:\t%u\nmax:\t%u\n",
			   READ_ONCE(s->sem.count), s->sem.max);
		break;
	case NTSYNC_MUTEX:
		seq_printf(m, "ntsync-type:\tmutex\nowner:\t%u\ncount:\t%u\nabandoned:\t%u\n",
			   READ_ONCE(s->mutex.owner), READ_ONCE(s->mutex.count),
			   READ_ONCE(obj->abandoned));
		break;
	case NTSYNC_EVENT:
		seq_printf(m, "ntsync-type:\tevent\nmanual:\t%u\nsignaled:\t%u\n",
			   s->event.manual, READ_ONCE(s->event.signaled));
		break;
	}
	list_for_each_entry(entry, &obj->any_waiters, node)
		any++;
	seq_printf(m, "waiters-any:\t%u\nwaiters-all:\t%u\n", any, obj->all_hint);
	spin_unlock(&obj->lock);
}

/* The last descriptor of an object is gone: free it, let go of the device. */
static int ntsync_obj_release(struct inode *inode, struct file *file)
{
	struct ntsync_obj *obj = file->private_data;
	struct file *dev_file = obj->dev->file;

	kmem_cache_free(ntsync_obj_cachep, obj);
	fput(dev_file);
	return 0;
}

static const struct file_operations ntsync_obj_fops = {
	.owner		= THIS_MODULE,
	.release	= ntsync_obj_release,
	.unlocked_ioctl	= ntsync_obj_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.show_fdinfo	= ntsync_obj_show_fdinfo,
};

/*
 * Make an object of @kind in state @s, checked by the caller, and give it a
 * descriptor.  The descriptor appears in the caller's table only once
 * nothing can fail; the object's file, once it exists, owns the object and
 * the reference to the device, so dropping the file undoes everything.
 */
static int ntsync_obj_create(struct ntsync_device *dev, enum ntsync_kind kind,
			     const union ntsync_state *s)
{
	struct ntsync_obj *obj;
	struct file *file;
	int fd;

	obj = kmem_cache_zalloc(ntsync_obj_cachep, GFP_KERNEL);
	if (!obj)
		return -ENOMEM;
	spin_lock_init(&obj->lock);
	seqcount_spinlock_init(&obj->seq, &obj->lock);
	INIT_LIST_HEAD(&obj->any_waiters);
	INIT_LIST_HEAD(&obj->all_waiters);
	obj->kind = kind;
	obj->s = *s;
	obj->dev = dev;

	file = anon_inode_getfile(NTSYNC_NAME, &ntsync_obj_fops, obj, O_RDWR);
	if (IS_ERR(file)) {
		kmem_cache_free(ntsync_obj_cachep, obj);
		return PTR_ERR(file);
	}
	obj->file = file;
	get_file(dev->file);

	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		fput(file);
		return fd;
	}
	fd_install(fd, file);
	return fd;
}

/* CREATE_SEM: a count no greater than the maximum. */
static int ntsync_create_sem(struct ntsync_device *dev,
			     const struct ntsync_sem_args __user *uargs)
{
	union ntsync_state s;

	if (copy_from_user(&s.sem, uargs, sizeof(s.sem)))
		return -EFAULT;
	if (s.sem.count > s.sem.max)
		return -EINVAL;
	return ntsync_obj_create(dev, NTSYNC_SEM, &s);
}

/* CREATE_MUTEX: owned with a count, or free with none. */
static int ntsync_create_mutex(struct ntsync_device *dev,
			       const struct ntsync_mutex_args __user *uargs)
{
	union ntsync_state s;

	if (copy_from_user(&s.mutex, uargs, sizeof(s.mutex)))
		return -EFAULT;
	if (!s.mutex.owner != !s.mutex.count)
		return -EINVAL;
	return ntsync_obj_create(dev, NTSYNC_MUTEX, &s);
}

/*
 * CREATE_EVENT: any flags; they are kept as 0 or 1, the way reads report
 * them.
 */
static int ntsync_create_event(struct ntsync_device *dev,
			       const struct ntsync_event_args __user *uargs)
{
	union ntsync_state s;

	if (copy_from_user(&s.event, uargs, sizeof(s.event)))
		return -EFAULT;
	s.event.manual = !!s.event.manual;
	s.event.signaled = !!s.event.signaled;
	return ntsync_obj_create(dev, NTSYNC_EVENT, &s);
}

/*
 * Look up descriptor @fd for a wait on @dev: its object, with a reference
 * to the object's file, or NULL if it is not an object of @dev.
 */
static struct ntsync_obj *ntsync_obj_get(struct ntsync_device *dev, int fd)
{
	struct file *file = fget(fd);

	if (file && file->f_op == &ntsync_obj_fops) {
		struct ntsync_obj *obj = file->private_data;

		if (obj->dev == dev)
			return obj;
	}
	if (file)
		fput(file);
	return NULL;
}

/*
 * The entries of a wait too large for the stack: the instance's spare
 * array if no other wait holds it, else a new one, charged to the caller's
 * memory cgroup.  Mainline allocates every wait's entries; here a wait-any
 * over 64 objects that its look satisfies would pay that on every call
 * (ntsync-bench's waitany.64), and the array does not fit on the stack.
 */
static struct ntsync_q_entry *ntsync_entries_get(struct ntsync_device *dev)
{
	struct ntsync_q_entry *entries = xchg(&dev->spare, NULL);

	if (entries)
		return entries;
	return kmalloc_array(NTSYNC_MAX_WAIT_COUNT + 1, sizeof(*entries),
			     GFP_KERNEL_ACCOUNT);
}

/* Keep @entries as the instance's spare array, unless it has one. */
static void ntsync_entries_put(struct ntsync_device *dev,
			       struct ntsync_q_entry *entries)
{
	if (cmpxchg(&dev->spare, NULL, entries))
		kfree(entries);
}

/*
 * Drop the references to the objects of the first @n entries of @q, and
 * give its entries back if they are not on the stack.
 */
static void ntsync_wait_put(struct ntsync_device *dev, struct ntsync_q *q,
			    __u32 n, union ntsync_wait_stack *stack)
{
	while (n--)
		fput(q->entries[n].obj->file);
	if (q->entries != stack->small.entries)
		ntsync_entries_put(dev, q->entries);
}

/*
 * The absolute deadline on the host's clock; KTIME_MAX for none (U64_MAX).
 * Any other deadline above KTIME_MAX is taken as passed: 0.  Mainline 7.3
 * was measured sleeping on such a deadline instead (doc/spec.md,
 * §silent.timeout-huge, says where and why); following it is pending.
 */
static ktime_t ntsync_deadline(const struct ntsync_wait_args *args)
{
	ktime_t t;

	if (args->timeout == U64_MAX)
		return KTIME_MAX;
	if (args->timeout > KTIME_MAX)
		return 0;
	t = args->timeout;
	if (!(args->flags & NTSYNC_WAIT_REALTIME))
		t = ntsync_timens_to_host(t);
	return t;
}

/*
 * Copy in and check a wait's arguments, set up @q and take references to
 * its objects, each in its entry: the count objects, then the alert event
 * if there is one.  Returns the number of entries or a negative errno.
 */
static int ntsync_wait_get(struct ntsync_device *dev, void __user *argp,
			   struct ntsync_q *q, union ntsync_wait_stack *stack)
{
	struct ntsync_wait_args args;
	struct ntsync_obj *obj;
	__u32 i, n;
	int *fds;

	if (copy_from_user(&args, argp, sizeof(args)))
		return -EFAULT;
	if (args.pad || (args.flags & ~NTSYNC_WAIT_REALTIME) ||
	    !args.owner || args.count > NTSYNC_MAX_WAIT_COUNT)
		return -EINVAL;

	n = args.count + !!args.alert;
	fds = n <= NTSYNC_STACK_ENTRIES ? stack->small.fds : stack->fds;
	if (copy_from_user(fds, u64_to_user_ptr(args.objs),
			   array_size(args.count, sizeof(*fds))))
		return -EFAULT;

	if (n <= NTSYNC_STACK_ENTRIES) {
		q->entries = stack->small.entries;
	} else {
		q->entries = ntsync_entries_get(dev);
		if (!q->entries)
			return -ENOMEM;
	}
	q->task = current;
	atomic_set(&q->signaled, -1);
	q->owner = args.owner;
	q->count = args.count;
	q->ownerdead = false;
	q->realtime = args.flags & NTSYNC_WAIT_REALTIME;
	q->deadline = ntsync_deadline(&args);

	/* entry->q is set when the entry is queued: the look needs none */
	for (i = 0; i < args.count; i++) {
		obj = ntsync_obj_get(dev, fds[i]);
		if (!obj)
			goto err;
		q->entries[i].obj = obj;
	}
	if (args.alert) {
		obj = ntsync_obj_get(dev, args.alert);
		if (!obj)
			goto err;
		q->entries[i++].obj = obj;
		if (obj->kind != NTSYNC_EVENT)
			goto err;
	}
	return n;

err:
	ntsync_wait_put(dev, q, i, stack);
	return -EINVAL;
}

/* Does a wait name one object twice, the alert included? */
static bool ntsync_wait_has_duplicates(const struct ntsync_q *q, __u32 n)
{
	__u32 i, j;

	for (i = 1; i < n; i++) {
		for (j = 0; j < i; j++) {
			if (q->entries[i].obj == q->entries[j].obj)
				return true;
		}
	}
	return false;
}

static clockid_t ntsync_clock(const struct ntsync_q *q)
{
	return q->realtime ? CLOCK_REALTIME : CLOCK_MONOTONIC;
}

static bool ntsync_expired(const struct ntsync_q *q)
{
	ktime_t now;

	if (q->deadline == KTIME_MAX)
		return false;
	now = q->realtime ? ktime_get_real() : ktime_get();
	return q->deadline <= now;
}

/*
 * Sleep until @q is claimed, the deadline passes (-ETIMEDOUT) or a signal
 * arrives (-ERESTARTSYS: the deadline is absolute, so a restarted call
 * waits exactly as long as the first).
 */
static int ntsync_schedule(struct ntsync_q *q)
{
	ktime_t deadline = q->deadline;
	ktime_t *expires = deadline == KTIME_MAX ? NULL : &deadline;
	int ret;

	for (;;) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (atomic_read(&q->signaled) != -1) {
			ret = 0;
			break;
		}
		if (signal_pending(current)) {
			ret = -ERESTARTSYS;
			break;
		}
		if (!schedule_hrtimeout_range_clock(expires, 0,
						    HRTIMER_MODE_ABS,
						    ntsync_clock(q))) {
			ret = -ETIMEDOUT;
			break;
		}
	}
	__set_current_state(TASK_RUNNING);
	return ret;
}

/* Report a claimed wait: the index always, EOWNERDEAD as the result. */
static int ntsync_wait_done(void __user *argp, __u32 index, bool ownerdead)
{
	struct ntsync_wait_args __user *user_args = argp;

	if (put_user(index, &user_args->index))
		return -EFAULT;
	return ownerdead ? -EOWNERDEAD : 0;
}

/*
 * The wait's result once it is off every queue.  A claim that raced with a
 * signal or the deadline still wins: what was acquired is reported.
 */
static int ntsync_wait_result(struct ntsync_q *q, void __user *argp, int ret)
{
	int signaled = atomic_read(&q->signaled);

	if (signaled == -1)
		return ret;
	return ntsync_wait_done(argp, signaled, q->ownerdead);
}

/*
 * A wait-any reports the lowest index at which the acquired object was
 * passed.  The object may have been acquired through a later duplicate:
 * the unlocked first look can pass index 0 just before the object becomes
 * signaled, and a wait that is leaving its queues has already dropped its
 * earlier entries when a release claims it through a later one.
 */
static __u32 ntsync_lowest_index(const struct ntsync_q *q, __u32 index)
{
	__u32 i = 0;

	while (q->entries[i].obj != q->entries[index].obj)
		i++;
	return i;
}

/*
 * Lock @obj, which looked signaled to the lock-free look, and acquire it
 * for @q if it is.  The wait is not queued anywhere yet: nobody else can
 * claim it.
 */
static bool ntsync_try_acquire(struct ntsync_q *q, struct ntsync_obj *obj)
{
	bool all = ntsync_lock_obj(obj);
	bool taken = ntsync_signaled(obj, q->owner);

	if (taken && ntsync_acquire_state(obj, q->owner))
		q->ownerdead = true;
	ntsync_unlock_obj(obj, all);
	return taken;
}

/*
 * The lock-free look of a wait-any that can neither time out nor take an
 * alert: acquire the lowest-indexed object that is signaled under its
 * lock.  Returns its index, or -1.  No sequence count is read: whatever
 * this look misses, queueing finds.
 */
static int ntsync_look(struct ntsync_q *q)
{
	__u32 i;

	for (i = 0; i < q->count; i++) {
		struct ntsync_obj *obj = q->entries[i].obj;

		if (ntsync_signaled(obj, q->owner) && ntsync_try_acquire(q, obj))
			return i;
	}
	return -1;
}

/*
 * Has no object of the first @n entries of @q been through a write
 * section since the look began its read section on it?  Then there was an
 * instant at which each was as the look saw it.
 */
static bool ntsync_unchanged(const struct ntsync_q *q, __u32 n)
{
	__u32 i;

	for (i = 0; i < n; i++) {
		const struct ntsync_q_entry *entry = &q->entries[i];

		if (read_seqcount_retry(&entry->obj->seq, entry->seq))
			return false;
	}
	return true;
}

/*
 * The lock-free look of a wait-any that can time out or take an alert
 * (see "Looking without locks"): acquire the lowest-indexed object that is
 * signaled under its lock, or the alert if no object changed since the
 * look.  Returns the index taken or -1; *@stale is then true if an object
 * or the alert looked signaled and was not taken, and else the sequence
 * counts that the look kept in the @n entries tell whether nothing was
 * signaled at one instant (ntsync_unchanged()).
 */
static int ntsync_look_counted(struct ntsync_q *q, __u32 n, bool *stale)
{
	struct ntsync_q_entry *entry;
	struct ntsync_obj *alert;
	bool all, taken;
	__u32 i;

	for (i = 0; i < q->count; i++) {
		entry = &q->entries[i];
		entry->seq = read_seqcount_begin(&entry->obj->seq);
		if (!ntsync_signaled(entry->obj, q->owner))
			continue;
		if (ntsync_try_acquire(q, entry->obj))
			return i;
		*stale = true;
	}
	if (n == q->count)
		return -1;

	entry = &q->entries[q->count];
	alert = entry->obj;
	entry->seq = read_seqcount_begin(&alert->seq);
	if (!ntsync_signaled(alert, q->owner))
		return -1;
	all = ntsync_lock_obj(alert);
	taken = ntsync_signaled(alert, q->owner) && !*stale &&
		ntsync_unchanged(q, q->count);
	if (taken)
		ntsync_acquire_state(alert, q->owner);
	ntsync_unlock_obj(alert, all);
	if (!taken) {
		*stale = true;
		return -1;
	}
	return q->count;
}

static int ntsync_wait_any(struct ntsync_device *dev, void __user *argp)
{
	union ntsync_wait_stack stack;
	bool all, expired, stale = false;
	__u32 i, n, queued = 0;
	int ret, signaled;
	struct ntsync_q q;

	ret = ntsync_wait_get(dev, argp, &q, &stack);
	if (ret < 0)
		return ret;
	n = ret;

	/* Try to acquire without queueing, lowest index first. */
	if (n > q.count || q.deadline != KTIME_MAX)
		signaled = ntsync_look_counted(&q, n, &stale);
	else
		signaled = ntsync_look(&q);
	if (signaled >= 0) {
		ret = ntsync_wait_done(argp, ntsync_lowest_index(&q, signaled),
				       q.ownerdead);
		goto out;
	}

	/* A poll that found nothing, and nothing changed meanwhile, is over. */
	expired = ntsync_expired(&q);
	if (expired && !stale && ntsync_unchanged(&q, n)) {
		ret = -ETIMEDOUT;
		goto out;
	}

	/* Queue on each object, stopping early once something claims us. */
	for (i = 0; i < n; i++) {
		struct ntsync_q_entry *entry = &q.entries[i];
		struct ntsync_obj *obj = entry->obj;

		entry->q = &q;
		all = ntsync_lock_obj(obj);
		if (ntsync_signaled(obj, q.owner)) {
			if (ntsync_claim(&q, i) &&
			    ntsync_acquire_state(obj, q.owner))
				q.ownerdead = true;
			ntsync_unlock_obj(obj, all);
			break;
		}
		list_add_tail(&entry->node, &obj->any_waiters);
		queued++;
		ntsync_unlock_obj(obj, all);

		if (atomic_read(&q.signaled) != -1)
			break;
	}

	if (expired && atomic_read(&q.signaled) == -1)
		ret = -ETIMEDOUT;
	else
		ret = ntsync_schedule(&q);

	/* Alert first, then downwards: see "Looking without locks". */
	while (queued--) {
		struct ntsync_q_entry *entry = &q.entries[queued];

		all = ntsync_lock_obj(entry->obj);
		list_del(&entry->node);
		ntsync_unlock_obj(entry->obj, all);
	}

	/* Every claim through a queued entry happened before its list_del. */
	signaled = atomic_read(&q.signaled);
	if (signaled != -1)
		ret = ntsync_wait_done(argp, ntsync_lowest_index(&q, signaled),
				       q.ownerdead);
out:
	ntsync_wait_put(dev, &q, n, &stack);
	return ret;
}

static int ntsync_wait_all(struct ntsync_device *dev, void __user *argp)
{
	union ntsync_wait_stack stack;
	struct ntsync_obj *alert = NULL;
	bool alert_queued = false;
	struct ntsync_q q;
	__u32 i, n;
	int ret;

	ret = ntsync_wait_get(dev, argp, &q, &stack);
	if (ret < 0)
		return ret;
	n = ret;
	/* a wait for all may name each object only once */
	if (ntsync_wait_has_duplicates(&q, n)) {
		ret = -EINVAL;
		goto out;
	}
	if (n > q.count)
		alert = q.entries[q.count].obj;

	for (i = 0; i < n; i++)
		q.entries[i].q = &q;

	mutex_lock(&dev->wait_all_lock);

	for (i = 0; i < q.count; i++) {
		struct ntsync_obj *obj = q.entries[i].obj;

		spin_lock(&obj->lock);
		obj->all_hint++;
		list_add_tail(&q.entries[i].node, &obj->all_waiters);
		spin_unlock(&obj->lock);
	}

	/*
	 * The objects come first; the alert counts only if they fail, and
	 * is queued only then: queued earlier, a set of the alert could
	 * claim the wait while all its objects were signaled.  Every object
	 * stays as it is while wait_all_lock is held.
	 */
	ntsync_wake_all_state(dev, &q);
	if (alert && atomic_read(&q.signaled) == -1) {
		spin_lock(&alert->lock);
		if (ntsync_signaled(alert, q.owner)) {
			if (ntsync_claim(&q, q.count))
				ntsync_acquire_state(alert, q.owner);
		} else {
			list_add_tail(&q.entries[q.count].node,
				      &alert->any_waiters);
			alert_queued = true;
		}
		spin_unlock(&alert->lock);
	}

	mutex_unlock(&dev->wait_all_lock);

	if (atomic_read(&q.signaled) != -1)
		ret = 0;
	else if (ntsync_expired(&q))
		ret = -ETIMEDOUT;
	else
		ret = ntsync_schedule(&q);

	mutex_lock(&dev->wait_all_lock);
	if (alert_queued) {
		spin_lock(&alert->lock);
		list_del(&q.entries[q.count].node);
		spin_unlock(&alert->lock);
	}
	for (i = 0; i < q.count; i++) {
		struct ntsync_obj *obj = q.entries[i].obj;

		spin_lock(&obj->lock);
		list_del(&q.entries[i].node);
		obj->all_hint--;
		spin_unlock(&obj->lock);
	}
	mutex_unlock(&dev->wait_all_lock);

	ret = ntsync_wait_result(&q, argp, ret);
out:
	ntsync_wait_put(dev, &q, n, &stack);
	return ret;
}

static int ntsync_dev_open(struct inode *inode, struct file *file)
{
	struct ntsync_device *dev;

	dev = kzalloc_obj(*dev, GFP_KERNEL_ACCOUNT);
	if (!dev)
		return -ENOMEM;
	mutex_init(&dev->wait_all_lock);
	dev->file = file;
	file->private_data = dev;
	return nonseekable_open(inode, file);
}

/* Every object holds a reference to the device file: none is left. */
static int ntsync_dev_release(struct inode *inode, struct file *file)
{
	struct ntsync_device *dev = file->private_data;

	mutex_destroy(&dev->wait_all_lock);
	kfree(dev->spare);
	kfree(dev);
	return 0;
}

/* The device ioctls: the waits, which are the hot path, then the creates. */
static long ntsync_dev_ioctl(struct file *file, unsigned int cmd,
			     unsigned long uarg)
{
	struct ntsync_device *dev = file->private_data;
	void __user *p = (void __user *)uarg;

	switch (cmd) {
	case NTSYNC_IOC_WAIT_ANY:
		return ntsync_wait_any(dev, p);
	case NTSYNC_IOC_WAIT_ALL:
		return ntsync_wait_all(dev, p);
	case NTSYNC_IOC_CREATE_SEM:
		return ntsync_create_sem(dev, p);
	case NTSYNC_IOC_CREATE_MUTEX:
		return ntsync_create_mutex(dev, p);
	case NTSYNC_IOC_CREATE_EVENT:
		return ntsync_create_event(dev, p);
	}
	return -ENOIOCTLCMD;
}

static const struct file_operations ntsync_dev_fops = {
	.owner		= THIS_MODULE,
	.open		= ntsync_dev_open,
	.release	= ntsync_dev_release,
	.unlocked_ioctl	= ntsync_dev_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
};

static struct miscdevice ntsync_misc = {
	.minor		= MISC_DYNAMIC_MINOR,
	.name		= NTSYNC_NAME,
	.fops		= &ntsync_dev_fops,
	.mode		= 0666,
};

static int __init ntsync_init(void)
{
	int ret;

	ntsync_obj_cachep = KMEM_CACHE(ntsync_obj, SLAB_ACCOUNT);
	if (!ntsync_obj_cachep)
		return -ENOMEM;
	ret = misc_register(&ntsync_misc);
	if (ret)
		kmem_cache_destroy(ntsync_obj_cachep);
	return ret;
}

static void __exit ntsync_exit(void)
{
	misc_deregister(&ntsync_misc);
	kmem_cache_destroy(ntsync_obj_cachep);
}

module_init(ntsync_init);
module_exit(ntsync_exit);

MODULE_DESCRIPTION("NT synchronization primitives for NT emulators");
MODULE_LICENSE("GPL");
MODULE_VERSION(NTSYNC_VERSION);
