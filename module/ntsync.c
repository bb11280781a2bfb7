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
 * So every object counts its signals: ntsync_obj.signals is incremented,
 * under the object's lock, after every change that can make it signaled
 * (release, unlock, kill, set, pulse), before any waiter is handed the
 * object.  The look reads each object's count before its state; a poll
 * that found nothing then reads the counts again.  If none changed, no
 * object became signaled while it was looked at, so at the instant between
 * the two reads every object was in the state the look saw: unsignaled,
 * and the time-out is correct.  If one changed, the poll does what a
 * sleeping wait does: it queues on every object in order, taking the first
 * that is signaled, and times out only if queueing found none; a queued
 * waiter is handed every object that becomes signaled, so at the end of
 * queueing none was.  The alert is taken by the look only under the same
 * check, made while the alert's lock is held.  Acquisitions, which only
 * ever make an object less signaled, do not count.
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
 * entries on the kernel stack (320 bytes; the wait functions use about
 * 1.4 KiB in all); larger ones allocate them, charged to the caller's
 * memory cgroup, which costs measurably inside a child cgroup.
 */
#define NTSYNC_STACK_ENTRIES	8

enum ntsync_type {
	NTSYNC_TYPE_SEM,
	NTSYNC_TYPE_MUTEX,
	NTSYNC_TYPE_EVENT,
};

/*
 * One open of /dev/ntsync.
 *
 * @wait_all_lock: serializes wait-all queueing and every access to objects
 *                 that have wait-all entries queued (see the top of file).
 * @file:          the device file; each object holds a reference to it.
 */
struct ntsync_device {
	struct mutex wait_all_lock;	/* see "Locking" at the top */
	struct file *file;
};

/*
 * A semaphore, mutex or event.
 *
 * @lock:        protects @u and @any_waiters; with wait_all_lock also
 *               @all_hint.
 * @type:        set at creation, never changes.
 * @all_hint:    number of entries on @all_waiters; nonzero means that @u
 *               is accessed only with the instance's wait_all_lock held.
 * @signals:     incremented after every change that can signal @u; @lock.
 *               Read without locks (see "Looking without locks").
 * @u:           the state; see ntsync_lock_obj() for which lock covers it.
 * @any_waiters: wait-any entries (and alerts), in queueing order; @lock.
 * @all_waiters: wait-all entries, in queueing order; wait_all_lock.
 * @dev:         the instance, kept alive by a reference to its file.
 * @file:        the object's own file.
 */
struct ntsync_obj {
	spinlock_t lock;		/* state and wait-any queue */
	enum ntsync_type type;
	unsigned int all_hint;
	unsigned int signals;

	union ntsync_state {
		struct {
			__u32 count;
			__u32 max;
		} sem;
		struct {
			__u32 count;
			__u32 owner;
			bool ownerdead;
		} mutex;
		struct {
			bool manual;
			bool signaled;
		} event;
	} u;

	struct list_head any_waiters;
	struct list_head all_waiters;
	struct ntsync_device *dev;
	struct file *file;
};

struct ntsync_q;

/* One object of one wait, linked on the object's waiter list. */
struct ntsync_q_entry {
	struct list_head node;
	struct ntsync_q *q;
	struct ntsync_obj *obj;
	__u32 index;
};

/*
 * A thread's wait.
 *
 * @signaled:  -1 while waiting; the index of the satisfying entry once
 *             claimed (0 for a complete wait-all, count for the alert).
 * @ownerdead: an abandoned mutex was acquired; written by the claimer
 *             before it drops the lock of the object it claimed through.
 * @count:     number of objects, not counting the alert.
 * @entries:   count entries, then the alert's if there is one.
 */
struct ntsync_q {
	struct task_struct *task;
	atomic_t signaled;
	__u32 owner;
	__u32 count;
	bool ownerdead;
	struct ntsync_q_entry *entries;
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

/* Could a wait on behalf of @owner acquire @obj now? */
static bool ntsync_signaled(const struct ntsync_obj *obj, __u32 owner)
{
	switch (obj->type) {
	case NTSYNC_TYPE_SEM:
		return obj->u.sem.count;
	case NTSYNC_TYPE_MUTEX:
		if (obj->u.mutex.owner && obj->u.mutex.owner != owner)
			return false;
		return obj->u.mutex.count < U32_MAX;
	case NTSYNC_TYPE_EVENT:
		return obj->u.event.signaled;
	}
	return false;
}

/*
 * Acquire a signaled @obj for @owner.  Returns true if it was a mutex whose
 * previous owner had died.
 */
static bool ntsync_acquire_state(struct ntsync_obj *obj, __u32 owner)
{
	bool ownerdead = false;

	ntsync_assert_held(obj);

	switch (obj->type) {
	case NTSYNC_TYPE_SEM:
		obj->u.sem.count--;
		break;
	case NTSYNC_TYPE_MUTEX:
		ownerdead = obj->u.mutex.ownerdead;
		obj->u.mutex.ownerdead = false;
		obj->u.mutex.owner = owner;
		obj->u.mutex.count++;
		break;
	case NTSYNC_TYPE_EVENT:
		if (!obj->u.event.manual)
			obj->u.event.signaled = false;
		break;
	}
	return ownerdead;
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
			if (obj->type != NTSYNC_TYPE_MUTEX)
				break;
			continue;
		}
		if (!ntsync_claim(q, entry->index))
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
 * @obj may have become signaled: wake whom it can satisfy, wait-all
 * waiters first.  @all says whether the caller holds wait_all_lock.
 */
static void ntsync_wake_state(struct ntsync_obj *obj, bool all)
{
	struct ntsync_q_entry *entry;

	lockdep_assert_held(&obj->lock);
	/* the new state before the count: pairs with ntsync_look_signals() */
	smp_wmb();
	WRITE_ONCE(obj->signals, obj->signals + 1);

	if (all) {
		lockdep_assert_held(&obj->dev->wait_all_lock);
		list_for_each_entry(entry, &obj->all_waiters, node)
			ntsync_wake_all_state(obj->dev, entry->q);
	}
	ntsync_wake_any_state(obj);
}

static int ntsync_sem_release(struct ntsync_obj *sem, void __user *argp)
{
	__u32 __user *user_count = argp;
	__u32 count, prev;
	int ret = 0;
	bool all;

	if (get_user(count, user_count))
		return -EFAULT;
	if (sem->type != NTSYNC_TYPE_SEM)
		return -EINVAL;

	all = ntsync_lock_obj(sem);
	prev = sem->u.sem.count;
	if (count > sem->u.sem.max - prev) {
		ret = -EOVERFLOW;
	} else {
		sem->u.sem.count = prev + count;
		ntsync_wake_state(sem, all);
	}
	ntsync_unlock_obj(sem, all);

	if (!ret && put_user(prev, user_count))
		ret = -EFAULT;
	return ret;
}

static int ntsync_mutex_unlock(struct ntsync_obj *mutex, void __user *argp)
{
	struct ntsync_mutex_args __user *user_args = argp;
	struct ntsync_mutex_args args;
	int ret = 0;
	__u32 prev;
	bool all;

	if (copy_from_user(&args, user_args, sizeof(args)))
		return -EFAULT;
	if (mutex->type != NTSYNC_TYPE_MUTEX)
		return -EINVAL;
	if (!args.owner)
		return -EINVAL;

	all = ntsync_lock_obj(mutex);
	prev = mutex->u.mutex.count;
	if (mutex->u.mutex.owner != args.owner) {
		ret = -EPERM;
	} else {
		if (!--mutex->u.mutex.count)
			mutex->u.mutex.owner = 0;
		ntsync_wake_state(mutex, all);
	}
	ntsync_unlock_obj(mutex, all);

	if (!ret && put_user(prev, &user_args->count))
		ret = -EFAULT;
	return ret;
}

static int ntsync_mutex_kill(struct ntsync_obj *mutex, void __user *argp)
{
	int ret = 0;
	__u32 owner;
	bool all;

	if (get_user(owner, (__u32 __user *)argp))
		return -EFAULT;
	if (mutex->type != NTSYNC_TYPE_MUTEX)
		return -EINVAL;
	if (!owner)
		return -EINVAL;

	all = ntsync_lock_obj(mutex);
	if (mutex->u.mutex.owner != owner) {
		ret = -EPERM;
	} else {
		mutex->u.mutex.ownerdead = true;
		mutex->u.mutex.owner = 0;
		mutex->u.mutex.count = 0;
		ntsync_wake_state(mutex, all);
	}
	ntsync_unlock_obj(mutex, all);
	return ret;
}

/* Set an event; a pulse wakes whom it can and leaves it nonsignaled. */
static int ntsync_event_set(struct ntsync_obj *event, void __user *argp,
			    bool pulse)
{
	__u32 prev;
	bool all;

	if (event->type != NTSYNC_TYPE_EVENT)
		return -EINVAL;

	all = ntsync_lock_obj(event);
	prev = event->u.event.signaled;
	event->u.event.signaled = true;
	ntsync_wake_state(event, all);
	if (pulse)
		event->u.event.signaled = false;
	ntsync_unlock_obj(event, all);

	if (put_user(prev, (__u32 __user *)argp))
		return -EFAULT;
	return 0;
}

static int ntsync_event_reset(struct ntsync_obj *event, void __user *argp)
{
	__u32 prev;
	bool all;

	if (event->type != NTSYNC_TYPE_EVENT)
		return -EINVAL;

	all = ntsync_lock_obj(event);
	prev = event->u.event.signaled;
	event->u.event.signaled = false;
	ntsync_unlock_obj(event, all);

	if (put_user(prev, (__u32 __user *)argp))
		return -EFAULT;
	return 0;
}

static int ntsync_sem_read(struct ntsync_obj *sem, void __user *argp)
{
	struct ntsync_sem_args args;
	bool all;

	if (sem->type != NTSYNC_TYPE_SEM)
		return -EINVAL;

	all = ntsync_lock_obj(sem);
	args.count = sem->u.sem.count;
	args.max = sem->u.sem.max;
	ntsync_unlock_obj(sem, all);

	if (copy_to_user(argp, &args, sizeof(args)))
		return -EFAULT;
	return 0;
}

static int ntsync_mutex_read(struct ntsync_obj *mutex, void __user *argp)
{
	struct ntsync_mutex_args args;
	int ret;
	bool all;

	if (mutex->type != NTSYNC_TYPE_MUTEX)
		return -EINVAL;

	all = ntsync_lock_obj(mutex);
	args.owner = mutex->u.mutex.owner;
	args.count = mutex->u.mutex.count;
	ret = mutex->u.mutex.ownerdead ? -EOWNERDEAD : 0;
	ntsync_unlock_obj(mutex, all);

	if (copy_to_user(argp, &args, sizeof(args)))
		return -EFAULT;
	return ret;
}

static int ntsync_event_read(struct ntsync_obj *event, void __user *argp)
{
	struct ntsync_event_args args;
	bool all;

	if (event->type != NTSYNC_TYPE_EVENT)
		return -EINVAL;

	all = ntsync_lock_obj(event);
	args.manual = event->u.event.manual;
	args.signaled = event->u.event.signaled;
	ntsync_unlock_obj(event, all);

	if (copy_to_user(argp, &args, sizeof(args)))
		return -EFAULT;
	return 0;
}

static long ntsync_obj_ioctl(struct file *file, unsigned int cmd,
			     unsigned long parm)
{
	struct ntsync_obj *obj = file->private_data;
	void __user *argp = (void __user *)parm;

	switch (cmd) {
	case NTSYNC_IOC_SEM_RELEASE:
		return ntsync_sem_release(obj, argp);
	case NTSYNC_IOC_SEM_READ:
		return ntsync_sem_read(obj, argp);
	case NTSYNC_IOC_MUTEX_UNLOCK:
		return ntsync_mutex_unlock(obj, argp);
	case NTSYNC_IOC_MUTEX_KILL:
		return ntsync_mutex_kill(obj, argp);
	case NTSYNC_IOC_MUTEX_READ:
		return ntsync_mutex_read(obj, argp);
	case NTSYNC_IOC_EVENT_SET:
		return ntsync_event_set(obj, argp, false);
	case NTSYNC_IOC_EVENT_RESET:
		return ntsync_event_reset(obj, argp);
	case NTSYNC_IOC_EVENT_PULSE:
		return ntsync_event_set(obj, argp, true);
	case NTSYNC_IOC_EVENT_READ:
		return ntsync_event_read(obj, argp);
	default:
		return -ENOIOCTLCMD;
	}
}

/* /proc/PID/fdinfo/N: what a hung game's objects are doing. */
static void ntsync_obj_show_fdinfo(struct seq_file *m, struct file *file)
{
	struct ntsync_obj *obj = file->private_data;
	struct ntsync_q_entry *entry;
	unsigned int any = 0, all_waiters;
	union ntsync_state snap;
	bool all;

	all = ntsync_lock_obj(obj);
	snap = obj->u;
	list_for_each_entry(entry, &obj->any_waiters, node)
		any++;
	all_waiters = obj->all_hint;
	ntsync_unlock_obj(obj, all);

	switch (obj->type) {
	case NTSYNC_TYPE_SEM:
		seq_printf(m, "ntsync-type:\tsemaphore\ncount:\t%u\nmax:\t%u\n",
			   snap.sem.count, snap.sem.max);
		break;
	case NTSYNC_TYPE_MUTEX:
		seq_printf(m, "ntsync-type:\tmutex\nowner:\t%u\ncount:\t%u\nabandoned:\t%u\n",
			   snap.mutex.owner, snap.mutex.count,
			   snap.mutex.ownerdead);
		break;
	case NTSYNC_TYPE_EVENT:
		seq_printf(m, "ntsync-type:\tevent\nmanual:\t%u\nsignaled:\t%u\n",
			   snap.event.manual, snap.event.signaled);
		break;
	}
	seq_printf(m, "waiters-any:\t%u\nwaiters-all:\t%u\n", any, all_waiters);
}

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

static struct ntsync_obj *ntsync_alloc_obj(struct ntsync_device *dev,
					   enum ntsync_type type)
{
	struct ntsync_obj *obj;

	obj = kmem_cache_zalloc(ntsync_obj_cachep, GFP_KERNEL);
	if (!obj)
		return NULL;
	spin_lock_init(&obj->lock);
	obj->type = type;
	INIT_LIST_HEAD(&obj->any_waiters);
	INIT_LIST_HEAD(&obj->all_waiters);
	obj->dev = dev;
	return obj;
}

/*
 * Give a new object its file and return its descriptor, which appears in
 * the caller's table only once nothing can fail any more.  On failure the
 * object is freed.
 */
static int ntsync_install_obj(struct ntsync_obj *obj)
{
	struct file *file;
	int fd;

	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0)
		goto err_free;
	file = anon_inode_getfile(NTSYNC_NAME, &ntsync_obj_fops, obj, O_RDWR);
	if (IS_ERR(file)) {
		put_unused_fd(fd);
		fd = PTR_ERR(file);
		goto err_free;
	}
	obj->file = file;
	get_file(obj->dev->file);
	fd_install(fd, file);
	return fd;

err_free:
	kmem_cache_free(ntsync_obj_cachep, obj);
	return fd;
}

static int ntsync_create_sem(struct ntsync_device *dev, void __user *argp)
{
	struct ntsync_sem_args args;
	struct ntsync_obj *sem;

	if (copy_from_user(&args, argp, sizeof(args)))
		return -EFAULT;
	if (args.count > args.max)
		return -EINVAL;

	sem = ntsync_alloc_obj(dev, NTSYNC_TYPE_SEM);
	if (!sem)
		return -ENOMEM;
	sem->u.sem.count = args.count;
	sem->u.sem.max = args.max;
	return ntsync_install_obj(sem);
}

static int ntsync_create_mutex(struct ntsync_device *dev, void __user *argp)
{
	struct ntsync_mutex_args args;
	struct ntsync_obj *mutex;

	if (copy_from_user(&args, argp, sizeof(args)))
		return -EFAULT;
	if (!args.owner != !args.count)
		return -EINVAL;

	mutex = ntsync_alloc_obj(dev, NTSYNC_TYPE_MUTEX);
	if (!mutex)
		return -ENOMEM;
	mutex->u.mutex.owner = args.owner;
	mutex->u.mutex.count = args.count;
	return ntsync_install_obj(mutex);
}

static int ntsync_create_event(struct ntsync_device *dev, void __user *argp)
{
	struct ntsync_event_args args;
	struct ntsync_obj *event;

	if (copy_from_user(&args, argp, sizeof(args)))
		return -EFAULT;

	event = ntsync_alloc_obj(dev, NTSYNC_TYPE_EVENT);
	if (!event)
		return -ENOMEM;
	event->u.event.manual = args.manual;
	event->u.event.signaled = args.signaled;
	return ntsync_install_obj(event);
}

/* A reference to the object behind @fd if it belongs to @dev, else NULL. */
static struct ntsync_obj *ntsync_get_obj(struct ntsync_device *dev, int fd)
{
	struct file *file = fget(fd);
	struct ntsync_obj *obj;

	if (!file)
		return NULL;
	if (file->f_op != &ntsync_obj_fops)
		goto err;
	obj = file->private_data;
	if (obj->dev != dev)
		goto err;
	return obj;

err:
	fput(file);
	return NULL;
}

static void ntsync_put_objs(struct ntsync_obj **objs, __u32 n)
{
	while (n--)
		fput(objs[n]->file);
}

/*
 * Copy in and check a wait's arguments and take references to its objects:
 * the @args->count objects, then the alert event if there is one.  Returns
 * the number of references taken or a negative errno.
 */
static int ntsync_wait_get(struct ntsync_device *dev, void __user *argp,
			   struct ntsync_wait_args *args,
			   struct ntsync_obj **objs, bool all)
{
	int fds[NTSYNC_MAX_WAIT_COUNT];
	struct ntsync_obj *obj;
	__u32 i, j, n = 0;

	if (copy_from_user(args, argp, sizeof(*args)))
		return -EFAULT;
	if (args->pad || (args->flags & ~NTSYNC_WAIT_REALTIME) ||
	    !args->owner || args->count > NTSYNC_MAX_WAIT_COUNT)
		return -EINVAL;
	if (copy_from_user(fds, u64_to_user_ptr(args->objs),
			   array_size(args->count, sizeof(*fds))))
		return -EFAULT;

	for (i = 0; i < args->count; i++) {
		obj = ntsync_get_obj(dev, fds[i]);
		if (!obj)
			goto err;
		objs[n++] = obj;
		/* a wait for all may name each object only once */
		for (j = 0; all && j < i; j++) {
			if (objs[j] == obj)
				goto err;
		}
	}

	if (args->alert) {
		obj = ntsync_get_obj(dev, args->alert);
		if (!obj)
			goto err;
		objs[n++] = obj;
		if (obj->type != NTSYNC_TYPE_EVENT)
			goto err;
		for (j = 0; all && j < args->count; j++) {
			if (objs[j] == obj)
				goto err;
		}
	}
	return n;

err:
	ntsync_put_objs(objs, n);
	return -EINVAL;
}

/*
 * The absolute deadline on the host's clock; KTIME_MAX for none.  Deadlines
 * past KTIME_MAX mean "never" as well.
 */
static ktime_t ntsync_deadline(const struct ntsync_wait_args *args)
{
	ktime_t t;

	if (args->timeout > KTIME_MAX)
		return KTIME_MAX;
	t = args->timeout;
	if (!(args->flags & NTSYNC_WAIT_REALTIME))
		t = ntsync_timens_to_host(t);
	return t;
}

static clockid_t ntsync_clock(const struct ntsync_wait_args *args)
{
	return args->flags & NTSYNC_WAIT_REALTIME ? CLOCK_REALTIME :
						    CLOCK_MONOTONIC;
}

static bool ntsync_expired(const struct ntsync_wait_args *args,
			   ktime_t deadline)
{
	ktime_t now;

	if (deadline == KTIME_MAX)
		return false;
	now = args->flags & NTSYNC_WAIT_REALTIME ? ktime_get_real() :
						   ktime_get();
	return deadline <= now;
}

/*
 * Sleep until @q is claimed, the deadline passes (-ETIMEDOUT) or a signal
 * arrives (-ERESTARTSYS: the deadline is absolute, so a restarted call
 * waits exactly as long as the first).
 */
static int ntsync_schedule(struct ntsync_q *q,
			   const struct ntsync_wait_args *args,
			   ktime_t deadline)
{
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
						    ntsync_clock(args))) {
			ret = -ETIMEDOUT;
			break;
		}
	}
	__set_current_state(TASK_RUNNING);
	return ret;
}

static int ntsync_q_init(struct ntsync_q *q, const struct ntsync_wait_args *args,
			 struct ntsync_q_entry *stack_entries, __u32 n)
{
	q->task = current;
	atomic_set(&q->signaled, -1);
	q->owner = args->owner;
	q->count = args->count;
	q->ownerdead = false;
	if (n <= NTSYNC_STACK_ENTRIES) {
		q->entries = stack_entries;
		return 0;
	}
	q->entries = kmalloc_array(n, sizeof(*q->entries), GFP_KERNEL_ACCOUNT);
	return q->entries ? 0 : -ENOMEM;
}

static void ntsync_q_free(struct ntsync_q *q,
			  struct ntsync_q_entry *stack_entries)
{
	if (q->entries != stack_entries)
		kfree(q->entries);
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
static __u32 ntsync_lowest_index(struct ntsync_obj *const *objs, __u32 index)
{
	__u32 i = 0;

	while (objs[i] != objs[index])
		i++;
	return i;
}

/*
 * The signal count of @obj, read before its state is looked at without
 * locks.
 */
static unsigned int ntsync_look_signals(const struct ntsync_obj *obj)
{
	unsigned int signals = READ_ONCE(obj->signals);

	/* the count before the state: pairs with ntsync_wake_state() */
	smp_rmb();
	return signals;
}

/*
 * After looking at @objs[0..@n) without locks and finding none signaled:
 * did none of them change since the look read @sum, the sum of their signal
 * counts?  Then there was an instant at which none was signaled.  The sum
 * can only come back to its value after 2^32 signals within the call.
 */
static bool ntsync_unchanged(struct ntsync_obj *const *objs, __u32 n,
			     unsigned int sum)
{
	__u32 i;

	/* the states looked at before the counts read again */
	smp_rmb();
	for (i = 0; i < n; i++)
		sum -= READ_ONCE(objs[i]->signals);
	return !sum;
}

static int ntsync_wait_any(struct ntsync_device *dev, void __user *argp)
{
	struct ntsync_q_entry stack_entries[NTSYNC_STACK_ENTRIES];
	struct ntsync_obj *objs[NTSYNC_MAX_WAIT_COUNT + 1];
	struct ntsync_wait_args args;
	unsigned int sum = 0;
	bool all, expired, stale = false;
	__u32 i, queued = 0;
	struct ntsync_q q;
	ktime_t deadline;
	int n, ret, signaled;

	n = ntsync_wait_get(dev, argp, &args, objs, false);
	if (n < 0)
		return n;

	/*
	 * Try to acquire without queueing, lowest index first: look at each
	 * object without its lock and lock only one that looks signaled.
	 * Any object found signaled under its lock may be taken; the alert
	 * (index count) only if no object changed since it was looked at.
	 */
	for (i = 0; i < n; i++) {
		struct ntsync_obj *obj = objs[i];
		unsigned int signals = ntsync_look_signals(obj);
		bool ownerdead;

		/* racy by design: see "Looking without locks" */
		if (!data_race(ntsync_signaled(obj, args.owner))) {
			sum += signals;
			continue;
		}
		all = ntsync_lock_obj(obj);
		if (ntsync_signaled(obj, args.owner) &&
		    (i < args.count ||
		     (!stale && ntsync_unchanged(objs, args.count, sum)))) {
			ownerdead = ntsync_acquire_state(obj, args.owner);
			ntsync_unlock_obj(obj, all);
			ret = ntsync_wait_done(argp, ntsync_lowest_index(objs, i),
					       ownerdead);
			goto out;
		}
		ntsync_unlock_obj(obj, all);
		stale = true;
	}

	/* A poll that found nothing, and nothing changed meanwhile, is over. */
	deadline = ntsync_deadline(&args);
	expired = ntsync_expired(&args, deadline);
	if (expired && !stale && ntsync_unchanged(objs, n, sum)) {
		ret = -ETIMEDOUT;
		goto out;
	}

	ret = ntsync_q_init(&q, &args, stack_entries, n);
	if (ret)
		goto out;

	/* Queue on each object, stopping early once something claims us. */
	for (i = 0; i < n; i++) {
		struct ntsync_q_entry *entry = &q.entries[i];
		struct ntsync_obj *obj = objs[i];

		entry->q = &q;
		entry->obj = obj;
		entry->index = i;

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
		ret = ntsync_schedule(&q, &args, deadline);

	/* Alert first, then downwards: see "Looking without locks". */
	while (queued--) {
		struct ntsync_obj *obj = q.entries[queued].obj;

		all = ntsync_lock_obj(obj);
		list_del(&q.entries[queued].node);
		ntsync_unlock_obj(obj, all);
	}

	/* Every claim through a queued entry happened before its list_del. */
	signaled = atomic_read(&q.signaled);
	if (signaled != -1)
		ret = ntsync_wait_done(argp, ntsync_lowest_index(objs, signaled),
				       q.ownerdead);
	ntsync_q_free(&q, stack_entries);
out:
	ntsync_put_objs(objs, n);
	return ret;
}

static int ntsync_wait_all(struct ntsync_device *dev, void __user *argp)
{
	struct ntsync_q_entry stack_entries[NTSYNC_STACK_ENTRIES];
	struct ntsync_obj *objs[NTSYNC_MAX_WAIT_COUNT + 1];
	struct ntsync_obj *alert = NULL;
	struct ntsync_wait_args args;
	struct ntsync_q q;
	ktime_t deadline;
	int n, ret;
	__u32 i;

	n = ntsync_wait_get(dev, argp, &args, objs, true);
	if (n < 0)
		return n;
	if (n > args.count)
		alert = objs[args.count];

	deadline = ntsync_deadline(&args);
	ret = ntsync_q_init(&q, &args, stack_entries, n);
	if (ret)
		goto out;

	for (i = 0; i < n; i++) {
		q.entries[i].q = &q;
		q.entries[i].obj = objs[i];
		q.entries[i].index = i;
	}

	mutex_lock(&dev->wait_all_lock);

	for (i = 0; i < args.count; i++) {
		struct ntsync_obj *obj = objs[i];

		spin_lock(&obj->lock);
		obj->all_hint++;
		list_add_tail(&q.entries[i].node, &obj->all_waiters);
		spin_unlock(&obj->lock);
	}
	if (alert) {
		spin_lock(&alert->lock);
		list_add_tail(&q.entries[args.count].node, &alert->any_waiters);
		spin_unlock(&alert->lock);
	}

	/* The objects come first; the alert counts only if they fail. */
	ntsync_wake_all_state(dev, &q);
	if (alert) {
		spin_lock(&alert->lock);
		if (ntsync_signaled(alert, q.owner) &&
		    ntsync_claim(&q, args.count))
			ntsync_acquire_state(alert, q.owner);
		spin_unlock(&alert->lock);
	}

	mutex_unlock(&dev->wait_all_lock);

	if (atomic_read(&q.signaled) != -1)
		ret = 0;
	else if (ntsync_expired(&args, deadline))
		ret = -ETIMEDOUT;
	else
		ret = ntsync_schedule(&q, &args, deadline);

	mutex_lock(&dev->wait_all_lock);
	if (alert) {
		spin_lock(&alert->lock);
		list_del(&q.entries[args.count].node);
		spin_unlock(&alert->lock);
	}
	for (i = 0; i < args.count; i++) {
		struct ntsync_obj *obj = objs[i];

		spin_lock(&obj->lock);
		list_del(&q.entries[i].node);
		obj->all_hint--;
		spin_unlock(&obj->lock);
	}
	mutex_unlock(&dev->wait_all_lock);

	ret = ntsync_wait_result(&q, argp, ret);
	ntsync_q_free(&q, stack_entries);
out:
	ntsync_put_objs(objs, n);
	return ret;
}

static int ntsync_char_open(struct inode *inode, struct file *file)
{
	struct ntsync_device *dev;

	dev = kzalloc(sizeof(*dev), GFP_KERNEL_ACCOUNT);
	if (!dev)
		return -ENOMEM;
	mutex_init(&dev->wait_all_lock);
	dev->file = file;
	file->private_data = dev;
	return nonseekable_open(inode, file);
}

static int ntsync_char_release(struct inode *inode, struct file *file)
{
	struct ntsync_device *dev = file->private_data;

	mutex_destroy(&dev->wait_all_lock);
	kfree(dev);
	return 0;
}

static long ntsync_char_ioctl(struct file *file, unsigned int cmd,
			      unsigned long parm)
{
	struct ntsync_device *dev = file->private_data;
	void __user *argp = (void __user *)parm;

	switch (cmd) {
	case NTSYNC_IOC_CREATE_SEM:
		return ntsync_create_sem(dev, argp);
	case NTSYNC_IOC_CREATE_MUTEX:
		return ntsync_create_mutex(dev, argp);
	case NTSYNC_IOC_CREATE_EVENT:
		return ntsync_create_event(dev, argp);
	case NTSYNC_IOC_WAIT_ANY:
		return ntsync_wait_any(dev, argp);
	case NTSYNC_IOC_WAIT_ALL:
		return ntsync_wait_all(dev, argp);
	default:
		return -ENOIOCTLCMD;
	}
}

static const struct file_operations ntsync_fops = {
	.owner		= THIS_MODULE,
	.open		= ntsync_char_open,
	.release	= ntsync_char_release,
	.unlocked_ioctl	= ntsync_char_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
};

static struct miscdevice ntsync_misc = {
	.minor		= MISC_DYNAMIC_MINOR,
	.name		= NTSYNC_NAME,
	.fops		= &ntsync_fops,
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
