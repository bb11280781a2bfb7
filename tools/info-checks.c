// SPDX-License-Identifier: LGPL-2.1-or-later
/* ntsync-info: the live check of every operation through libntsync. */

#include "info.h"

/* ---- live checks ---- */

static struct check *check_begin(const char *name)
{
	struct check *c = &info.checks[info.nchecks++];

	c->name = name;
	c->result = PASS;
	c->detail[0] = '\0';
	return c;
}

static bool check_fail(struct check *c, const char *f, ...)
	__attribute__((format(printf, 2, 3)));

/* Record the first failure of a check; returns false for "if (!ok) return". */
static bool check_fail(struct check *c, const char *f, ...)
{
	va_list ap;

	if (c->result == FAIL)
		return false;
	c->result = FAIL;
	va_start(ap, f);
	vsnprintf(c->detail, sizeof(c->detail), f, ap);
	va_end(ap);
	return false;
}

static void check_skip(struct check *c, const char *why)
{
	c->result = SKIP;
	fmt(c->detail, sizeof(c->detail), "%s", why);
}

static const char *err_name(int neg)
{
	static char buf[64];
	const char *name = neg < 0 ? tc_errno_neg_name(-neg) : NULL;

	if (neg == 0)
		return "0";
	if (name)
		return name;
	if (neg < 0)
		fmt(buf, sizeof(buf), "-%d (%s)", -neg, strerror(-neg));
	else
		fmt(buf, sizeof(buf), "%d", neg);
	return buf;
}

/* ret must equal want, else the check fails naming the call. */
#define EXPECT(c, call, want) ({					\
	int ret_ = (call);						\
	ret_ == (want) ? true :						\
		check_fail((c), "%s returned %s, expected %s", #call,	\
			   err_name(ret_), err_name(want));		\
})

#define EXPECT_VAL(c, what, got, want) ({				\
	unsigned long long got_ = (got), want_ = (want);		\
	got_ == want_ ? true :						\
		check_fail((c), "%s is %llu, expected %llu", (what),	\
			   got_, want_);				\
})

#define EXPECT_FD(c, fd, call) ({					\
	(fd) = (call);							\
	(fd) >= 0 ? true :						\
		check_fail((c), "%s returned %s", #call, err_name(fd));	\
})

static void close_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

static struct ntsync_timeout poll_now(void)
{
	return ntsync_timeout_relative(0);
}

static void check_semaphore(struct ntsync_device *dev)
{
	struct check *c = check_begin("semaphore");
	uint32_t prev = 0, count = 0, max = 0, index = 99;
	int sem = -1;

	if (!EXPECT(c, ntsync_sem_create(dev, 2, 1), -EINVAL) ||
	    !EXPECT_FD(c, sem, ntsync_sem_create(dev, 1, 3)) ||
	    !EXPECT(c, ntsync_sem_release(sem, 1, &prev), 0) ||
	    !EXPECT_VAL(c, "previous count", prev, 1) ||
	    !EXPECT(c, ntsync_sem_release(sem, 2, &prev), -EOVERFLOW) ||
	    !EXPECT(c, ntsync_sem_read(sem, &count, &max), 0) ||
	    !EXPECT_VAL(c, "count", count, 2) ||
	    !EXPECT_VAL(c, "max", max, 3) ||
	    !EXPECT(c, ntsync_wait_any(dev, &sem, 1, 1, NTSYNC_NO_ALERT,
				       poll_now(), &index), 0) ||
	    !EXPECT_VAL(c, "wait index", index, 0) ||
	    !EXPECT(c, ntsync_sem_read(sem, &count, &max), 0) ||
	    !EXPECT_VAL(c, "count after wait", count, 1))
		goto out;
	fmt(c->detail, sizeof(c->detail), "create, release, read, acquire");
out:
	close_fds(&sem, 1);
}

static void check_mutex(struct ntsync_device *dev)
{
	struct check *c = check_begin("mutex");
	uint32_t owner = 0, count = 0, prev = 0, index = 99;
	int mtx = -1;

	if (!EXPECT(c, ntsync_mutex_create(dev, 0, 1), -EINVAL) ||
	    !EXPECT_FD(c, mtx, ntsync_mutex_create(dev, 5, 2)) ||
	    !EXPECT(c, ntsync_mutex_read(mtx, &owner, &count), 0) ||
	    !EXPECT_VAL(c, "owner", owner, 5) ||
	    !EXPECT_VAL(c, "count", count, 2) ||
	    !EXPECT(c, ntsync_mutex_unlock(mtx, 6, &prev), -EPERM) ||
	    !EXPECT(c, ntsync_mutex_unlock(mtx, 5, &prev), 0) ||
	    !EXPECT_VAL(c, "previous count", prev, 2) ||
	    !EXPECT(c, ntsync_wait_any(dev, &mtx, 1, 5, NTSYNC_NO_ALERT,
				       poll_now(), &index), 0) ||
	    !EXPECT(c, ntsync_mutex_read(mtx, &owner, &count), 0) ||
	    !EXPECT_VAL(c, "count after recursive acquire", count, 2) ||
	    !EXPECT(c, ntsync_wait_any(dev, &mtx, 1, 6, NTSYNC_NO_ALERT,
				       poll_now(), &index), -ETIMEDOUT))
		goto out;
	fmt(c->detail, sizeof(c->detail),
	    "create, unlock, read, recursive acquire, contention");
out:
	close_fds(&mtx, 1);
}

static void check_mutex_kill(struct ntsync_device *dev)
{
	struct check *c = check_begin("mutex-kill");
	uint32_t owner = 1, count = 1, index = 99;
	int mtx = -1;

	if (!EXPECT_FD(c, mtx, ntsync_mutex_create(dev, 7, 1)) ||
	    !EXPECT(c, ntsync_mutex_kill(mtx, 8), -EPERM) ||
	    !EXPECT(c, ntsync_mutex_kill(mtx, 7), 0) ||
	    !EXPECT(c, ntsync_mutex_read(mtx, &owner, &count), -EOWNERDEAD) ||
	    !EXPECT_VAL(c, "owner of abandoned mutex", owner, 0) ||
	    !EXPECT(c, ntsync_wait_any(dev, &mtx, 1, 9, NTSYNC_NO_ALERT,
				       poll_now(), &index), -EOWNERDEAD) ||
	    !EXPECT_VAL(c, "index with -EOWNERDEAD", index, 0) ||
	    !EXPECT(c, ntsync_mutex_read(mtx, &owner, &count), 0) ||
	    !EXPECT_VAL(c, "new owner", owner, 9))
		goto out;
	fmt(c->detail, sizeof(c->detail),
	    "kill, abandoned read, acquire with -EOWNERDEAD");
out:
	close_fds(&mtx, 1);
}

static void check_event(struct ntsync_device *dev)
{
	struct check *c = check_begin("event");
	bool prev = true, manual = false, signaled = true;
	uint32_t index = 99;
	int ev[2] = { -1, -1 };

	if (!EXPECT_FD(c, ev[0], ntsync_event_create(dev, true, false)) ||
	    !EXPECT_FD(c, ev[1], ntsync_event_create(dev, false, true)) ||
	    !EXPECT(c, ntsync_event_read(ev[0], &manual, &signaled), 0) ||
	    !EXPECT_VAL(c, "manual", manual, 1) ||
	    !EXPECT_VAL(c, "signaled", signaled, 0) ||
	    !EXPECT(c, ntsync_event_set(ev[0], &prev), 0) ||
	    !EXPECT_VAL(c, "state before set", prev, 0) ||
	    !EXPECT(c, ntsync_event_reset(ev[0], &prev), 0) ||
	    !EXPECT_VAL(c, "state before reset", prev, 1) ||
	    !EXPECT(c, ntsync_event_set(ev[0], NULL), 0) ||
	    !EXPECT(c, ntsync_event_pulse(ev[0], &prev), 0) ||
	    !EXPECT_VAL(c, "state before pulse", prev, 1) ||
	    !EXPECT(c, ntsync_event_read(ev[0], &manual, &signaled), 0) ||
	    !EXPECT_VAL(c, "signaled after pulse", signaled, 0) ||
	    /* auto-reset: one wait consumes the signal */
	    !EXPECT(c, ntsync_wait_any(dev, &ev[1], 1, 1, NTSYNC_NO_ALERT,
				       poll_now(), &index), 0) ||
	    !EXPECT(c, ntsync_event_read(ev[1], &manual, &signaled), 0) ||
	    !EXPECT_VAL(c, "auto-reset manual", manual, 0) ||
	    !EXPECT_VAL(c, "auto-reset signaled after wait", signaled, 0))
		goto out;
	fmt(c->detail, sizeof(c->detail),
	    "create, set, reset, pulse, read, auto-reset");
out:
	close_fds(ev, 2);
}

static void check_wait_any(struct ntsync_device *dev)
{
	struct check *c = check_begin("wait-any");
	uint32_t index = 99, count = 0, max = 0;
	int objs[3] = { -1, -1, -1 };

	if (!EXPECT_FD(c, objs[0], ntsync_sem_create(dev, 0, 1)) ||
	    !EXPECT_FD(c, objs[1], ntsync_event_create(dev, true, false)) ||
	    !EXPECT_FD(c, objs[2], ntsync_sem_create(dev, 1, 1)) ||
	    !EXPECT(c, ntsync_wait_any(dev, objs, 3, 1, NTSYNC_NO_ALERT,
				       poll_now(), &index), 0) ||
	    !EXPECT_VAL(c, "index", index, 2) ||
	    !EXPECT(c, ntsync_event_set(objs[1], NULL), 0) ||
	    !EXPECT(c, ntsync_sem_release(objs[2], 1, NULL), 0) ||
	    !EXPECT(c, ntsync_wait_any(dev, objs, 3, 1, NTSYNC_NO_ALERT,
				       poll_now(), &index), 0) ||
	    !EXPECT_VAL(c, "index (lowest signalled)", index, 1) ||
	    !EXPECT(c, ntsync_sem_read(objs[2], &count, &max), 0) ||
	    !EXPECT_VAL(c, "untouched semaphore count", count, 1))
		goto out;
	fmt(c->detail, sizeof(c->detail), "acquires exactly one, lowest index");
out:
	close_fds(objs, 3);
}

static void check_wait_all(struct ntsync_device *dev)
{
	struct check *c = check_begin("wait-all");
	uint32_t index = 99, count = 0, max = 0, owner = 0;
	int objs[3] = { -1, -1, -1 };

	if (!EXPECT_FD(c, objs[0], ntsync_sem_create(dev, 1, 2)) ||
	    !EXPECT_FD(c, objs[1], ntsync_mutex_create(dev, 0, 0)) ||
	    !EXPECT_FD(c, objs[2], ntsync_event_create(dev, false, false)) ||
	    !EXPECT(c, ntsync_wait_all(dev, objs, 3, 4, NTSYNC_NO_ALERT,
				       poll_now(), &index), -ETIMEDOUT) ||
	    !EXPECT(c, ntsync_sem_read(objs[0], &count, &max), 0) ||
	    !EXPECT_VAL(c, "semaphore count after failed wait", count, 1) ||
	    !EXPECT(c, ntsync_event_set(objs[2], NULL), 0) ||
	    !EXPECT(c, ntsync_wait_all(dev, objs, 3, 4, NTSYNC_NO_ALERT,
				       poll_now(), &index), 0) ||
	    !EXPECT_VAL(c, "index", index, 0) ||
	    !EXPECT(c, ntsync_sem_read(objs[0], &count, &max), 0) ||
	    !EXPECT_VAL(c, "semaphore count", count, 0) ||
	    !EXPECT(c, ntsync_mutex_read(objs[1], &owner, &count), 0) ||
	    !EXPECT_VAL(c, "mutex owner", owner, 4) ||
	    /* the same object twice is refused in wait-all */
	    !EXPECT(c, ntsync_wait_all(dev, (int[]){ objs[0], objs[0] }, 2, 4,
				       NTSYNC_NO_ALERT, poll_now(), &index),
		    -EINVAL))
		goto out;
	fmt(c->detail, sizeof(c->detail),
	    "all or nothing, acquires all, duplicates refused");
out:
	close_fds(objs, 3);
}

static void check_alert(struct ntsync_device *dev)
{
	struct check *c = check_begin("alert");
	uint32_t index = 99;
	int ev = -1, alert = -1;

	if (!EXPECT_FD(c, ev, ntsync_event_create(dev, false, false)) ||
	    !EXPECT_FD(c, alert, ntsync_event_create(dev, true, true)) ||
	    !EXPECT(c, ntsync_wait_any(dev, &ev, 1, 1, alert, poll_now(),
				       &index), 0) ||
	    !EXPECT_VAL(c, "wait-any index", index, 1) ||
	    !EXPECT(c, ntsync_wait_all(dev, &ev, 1, 1, alert, poll_now(),
				       &index), 0) ||
	    !EXPECT_VAL(c, "wait-all index", index, 1))
		goto out;
	fmt(c->detail, sizeof(c->detail), "alert ends waits with index == count");
out:
	close_fds(&ev, 1);
	close_fds(&alert, 1);
}

static void check_timeouts(struct ntsync_device *dev)
{
	struct check *c = check_begin("timeout");
	int ev = -1;

	if (!EXPECT_FD(c, ev, ntsync_event_create(dev, false, false)) ||
	    !EXPECT(c, ntsync_wait_any(dev, &ev, 1, 1, NTSYNC_NO_ALERT,
				       ntsync_timeout_relative(1000000), NULL),
		    -ETIMEDOUT) ||
	    !EXPECT(c, ntsync_wait_any(dev, &ev, 1, 1, NTSYNC_NO_ALERT,
				       ntsync_timeout_monotonic(
					       tc_now_ns(CLOCK_MONOTONIC)),
				       NULL), -ETIMEDOUT) ||
	    !EXPECT(c, ntsync_wait_all(dev, &ev, 1, 1, NTSYNC_NO_ALERT,
				       ntsync_timeout_realtime(
					       tc_now_ns(CLOCK_REALTIME) + 1000000),
				       NULL), -ETIMEDOUT))
		goto out;
	fmt(c->detail, sizeof(c->detail),
	    "relative, absolute MONOTONIC and REALTIME deadlines expire");
out:
	close_fds(&ev, 1);
}

struct waiter {
	struct ntsync_device *dev;
	int obj;
	int ret;
	uint32_t index;
	volatile pid_t tid;
};

static void *waiter_main(void *p)
{
	struct waiter *w = p;

	w->tid = (pid_t)syscall(SYS_gettid);
	w->ret = ntsync_wait_any(w->dev, &w->obj, 1, 1, NTSYNC_NO_ALERT,
				 ntsync_timeout_relative(WAKE_BOUND_NS),
				 &w->index);
	return NULL;
}

/* Whether thread tid of this process is asleep ('S' in its stat). */
static bool thread_sleeping(pid_t tid)
{
	char path[64], buf[TEXT], *p;
	FILE *f;
	bool sleeping = false;

	fmt(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return false;
	if (fgets(buf, sizeof(buf), f)) {
		p = strrchr(buf, ')');
		sleeping = p && p[1] == ' ' && p[2] == 'S';
	}
	fclose(f);
	return sleeping;
}

static void check_wake(struct ntsync_device *dev)
{
	struct check *c = check_begin("wake");
	struct waiter w = { dev, -1, -1, 99, 0 };
	struct timespec tick = { 0, 1000000 };
	bool slept = false;
	pthread_t t;
	int i, err;

	if (!EXPECT_FD(c, w.obj, ntsync_event_create(dev, false, false)))
		return;
	err = pthread_create(&t, NULL, waiter_main, &w);
	if (err) {
		check_skip(c, "cannot create a thread");
		close(w.obj);
		return;
	}
	/* Let the waiter fall asleep in the driver (bounded, ~2 s). */
	for (i = 0; i < 2000 && !slept; i++) {
		if (w.tid && thread_sleeping(w.tid))
			slept = true;
		else
			nanosleep(&tick, NULL);
	}
	EXPECT(c, ntsync_event_set(w.obj, NULL), 0);
	pthread_join(t, NULL);
	if (EXPECT(c, w.ret, 0) && EXPECT_VAL(c, "index", w.index, 0))
		fmt(c->detail, sizeof(c->detail), "%s",
		    slept ? "a sleeping waiter is woken by a set from another thread"
			  : "waiter woken (it was not seen asleep first)");
	close(w.obj);
}

static void check_instances(struct ntsync_device *dev)
{
	struct check *c = check_begin("instances");
	struct ntsync_device *other = NULL;
	int sem = -1, ret;

	ret = ntsync_open(info.path, &other);
	if (ret) {
		check_fail(c, "second open of %s failed: %s", info.path,
			   err_name(ret));
		return;
	}
	if (EXPECT_FD(c, sem, ntsync_sem_create(dev, 1, 1)) &&
	    EXPECT(c, ntsync_wait_any(other, &sem, 1, 1, NTSYNC_NO_ALERT,
				      poll_now(), NULL), -EINVAL))
		fmt(c->detail, sizeof(c->detail),
		    "objects of one instance refused by another");
	close_fds(&sem, 1);
	ntsync_close(other);
}

void run_checks(void)
{
	struct ntsync_device *dev;
	int ret = ntsync_open(info.path, &dev);

	if (ret) {
		struct check *c = check_begin("open");

		check_fail(c, "%s", strerror(-ret));
		return;
	}
	check_semaphore(dev);
	check_mutex(dev);
	check_mutex_kill(dev);
	check_event(dev);
	check_wait_any(dev);
	check_wait_all(dev);
	check_alert(dev);
	check_timeouts(dev);
	check_wake(dev);
	check_instances(dev);
	ntsync_close(dev);
}
