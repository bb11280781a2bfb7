// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ntsync-fuzz --concurrent: the workers (threads in processes on shared
 * objects, with a ledger of what they did), the churn, and the run.
 */

#include "fuzz.h"

struct shared *S;
static int c_dev;
int c_obj[C_OBJS];

void cfail(const char *fmt, ...)
{
	uint64_t n = __atomic_fetch_add(&S->fails, 1, __ATOMIC_SEQ_CST);
	va_list ap;

	if (n < 8) {
		va_start(ap, fmt);
		vsnprintf(S->msg[n], sizeof(S->msg[n]), fmt, ap);
		va_end(ap);
	}
}

/*
 * --enomem-ok: an allocation failure is counted and waited out briefly (at
 * the cgroup's limit every caller would otherwise spin on it).
 */
static bool enomem_tolerated(long ret)
{
	if (ret != -ENOMEM || !opt_enomem_ok)
		return false;
	ADD(S->enomem, 1);
	usleep(10000);
	return true;
}

static int obj_kind(int i)
{
	return i < C_SEMS ? T_SEM : i < C_SEMS + C_MUTEXES ? T_MUTEX : T_EVENT;
}

struct worker {
	int id;
	uint32_t owner;
	struct rng r;
	uint32_t held[C_MUTEXES];	/* my recursion count per mutex */
};

static void record_acquire(struct worker *w, int i, bool dead)
{
	ADD(S->acquisitions, 1);
	if (obj_kind(i) == T_SEM) {
		ADD(S->sem_acq[i], 1);
	} else if (obj_kind(i) == T_MUTEX) {
		int m = i - C_SEMS;

		ADD(S->mutex_acq[m], 1);
		if (dead)
			ADD(S->mutex_deadacq[m], 1);
		if (w->held[m]++ == 0) {
			uint32_t zero = 0;

			if (!__atomic_compare_exchange_n(&S->holder[m], &zero, w->owner, false,
							 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
				cfail("mutex %d acquired by owner %u while owner %u holds it", m, w->owner, zero);
		} else if (dead) {
			cfail("mutex %d: EOWNERDEAD while owner %u already held it", m, w->owner);
		}
	} else {
		int e = i - C_SEMS - C_MUTEXES;

		if (e < 2)
			ADD(S->ev_acq[e], 1);
	}
}

static void c_unlock(struct worker *w, int m)
{
	struct ntsync_mutex_args a = { .owner = w->owner, .count = POISON32 };
	long ret;

	if (w->held[m] == 1)
		__atomic_store_n(&S->holder[m], 0, __ATOMIC_SEQ_CST);
	ret = xioctl(c_obj[C_SEMS + m], NTSYNC_IOC_MUTEX_UNLOCK, &a);
	if (ret)
		cfail("MUTEX_UNLOCK by holder %u: %s", w->owner, errname(ret));
	else if (a.count != w->held[m])
		cfail("MUTEX_UNLOCK by %u: previous count %u, holder counted %u", w->owner, a.count, w->held[m]);
	w->held[m]--;
}

static void c_kill(struct worker *w, int m)
{
	uint32_t o = w->owner;
	long ret;

	__atomic_store_n(&S->holder[m], 0, __ATOMIC_SEQ_CST);
	ADD(S->mutex_kills[m], 1);
	ret = xioctl(c_obj[C_SEMS + m], NTSYNC_IOC_MUTEX_KILL, &o);
	if (ret)
		cfail("MUTEX_KILL by holder %u: %s", w->owner, errname(ret));
	w->held[m] = 0;
}

static void c_wait(struct worker *w, bool all)
{
	int fds[6], idx[6], n = 1 + rbelow(&w->r, all ? 4 : 6), i, j;
	struct ntsync_wait_args a;
	int alert = -1;
	long ret;

	for (i = 0; i < n; i++) {
		int pick;

		do {
			pick = rbelow(&w->r, C_OBJS);
			for (j = 0; j < i && all; j++)
				if (idx[j] == pick)
					break;
		} while (all && j < i);
		idx[i] = pick;
		fds[i] = c_obj[pick];
	}
	memset(&a, 0, sizeof(a));
	a.objs = (uint64_t)(uintptr_t)fds;
	a.count = n;
	a.owner = w->owner;
	a.index = POISON32;
	if (rchance(&w->r, 20)) {
		/* an auto-reset event as alert, not among the objects for WAIT_ALL */
		alert = C_SEMS + C_MUTEXES + rbelow(&w->r, 2);
		for (i = 0; all && i < n; i++)
			if (idx[i] == alert)
				alert = -1;
		if (alert >= 0)
			a.alert = c_obj[alert];
	}
	if (rchance(&w->r, 20)) {
		a.flags = NTSYNC_WAIT_REALTIME;
		a.timeout = tc_now_ns(CLOCK_REALTIME) + rbelow(&w->r, 2000000);
	} else {
		a.timeout = tc_now_ns(CLOCK_MONOTONIC) + rbelow(&w->r, 2000000);
	}
	ret = xioctl(c_dev, all ? NTSYNC_IOC_WAIT_ALL : NTSYNC_IOC_WAIT_ANY, &a);
	if (ret == -ETIMEDOUT) {
		ADD(S->timeouts, 1);
		return;
	}
	if (enomem_tolerated(ret))
		return;
	if (ret != 0 && ret != -EOWNERDEAD) {
		cfail("%s: %s", all ? "WAIT_ALL" : "WAIT_ANY", errname(ret));
		return;
	}
	if (a.index == (uint32_t)n) {
		if (alert < 0)
			cfail("woken by alert index %u without an alert", a.index);
		else
			record_acquire(w, alert, false);
		if (ret)
			cfail("alert wake returned %s", errname(ret));
		return;
	}
	if (all) {
		if (a.index != 0)
			cfail("WAIT_ALL index %u", a.index);
		/* which mutex was abandoned is not reported: count the call once */
		if (ret == -EOWNERDEAD) {
			bool any_mutex = false;

			for (i = 0; i < n; i++)
				any_mutex |= obj_kind(idx[i]) == T_MUTEX;
			if (!any_mutex)
				cfail("WAIT_ALL returned EOWNERDEAD without a mutex among its objects");
			ADD(S->deadacq_all, 1);
		}
		for (i = 0; i < n; i++)
			record_acquire(w, idx[i], false);
	} else {
		if (a.index >= (uint32_t)n) {
			cfail("WAIT_ANY index %u of %d", a.index, n);
			return;
		}
		/* the lowest index of that object */
		for (i = 0; i < (int)a.index; i++)
			if (idx[i] == idx[a.index]) {
				cfail("WAIT_ANY returned index %u for a %s that is also at index %d (spec: the lowest index)",
				      a.index, tname[obj_kind(idx[i])], i);
				break;
			}
		if (ret == -EOWNERDEAD && obj_kind(idx[a.index]) != T_MUTEX)
			cfail("EOWNERDEAD for a %s", tname[obj_kind(idx[a.index])]);
		record_acquire(w, idx[a.index], ret == -EOWNERDEAD);
	}
}

static void c_step(struct worker *w)
{
	int r = rbelow(&w->r, 100);
	long ret;

	if (r < 40) {
		c_wait(w, rchance(&w->r, 35));
	} else if (r < 55) {
		int s = rbelow(&w->r, C_SEMS);
		uint32_t add = 1 + rbelow(&w->r, 2), n = add;

		/* n comes back as the previous count, racy by nature: not checked */
		ret = xioctl(c_obj[s], NTSYNC_IOC_SEM_RELEASE, &n);
		if (ret == 0)
			ADD(S->sem_rel[s], add);
		if (ret && ret != -EOVERFLOW)
			cfail("SEM_RELEASE: %s", errname(ret));
	} else if (r < 70) {
		int e = rbelow(&w->r, C_EVENTS), which = rbelow(&w->r, 3);
		static const unsigned long cmds[] = { NTSYNC_IOC_EVENT_SET, NTSYNC_IOC_EVENT_RESET, NTSYNC_IOC_EVENT_PULSE };
		uint32_t prev = POISON32;

		ret = xioctl(c_obj[C_SEMS + C_MUTEXES + e], cmds[which], &prev);
		if (ret)
			cfail("event op: %s", errname(ret));
		else if (prev > 1)
			cfail("event op: previous state %u", prev);
		else if (e < 2) {
			if (which == 0 && prev == 0)
				ADD(S->ev_set0[e], 1);
			else if (which == 1 && prev == 1)
				ADD(S->ev_reset1[e], 1);
			else if (which == 2)
				ADD(*(prev ? &S->ev_pulse1[e] : &S->ev_pulse0[e]), 1);
		}
	} else if (r < 85) {
		/* release or kill what I hold */
		for (int m = 0; m < C_MUTEXES; m++)
			if (w->held[m]) {
				if (rchance(&w->r, 10))
					c_kill(w, m);
				else
					c_unlock(w, m);
				break;
			}
	} else if (r < 92) {
		int m = rbelow(&w->r, C_MUTEXES);
		struct ntsync_mutex_args a = { POISON32, POISON32 };

		ret = xioctl(c_obj[C_SEMS + m], NTSYNC_IOC_MUTEX_READ, &a);
		if (w->held[m] && (ret || a.owner != w->owner || a.count != w->held[m]))
			cfail("MUTEX_READ by holder %u (count %u): %s owner %u count %u", w->owner, w->held[m],
			      errname(ret), a.owner, a.count);
		if (ret == -EOWNERDEAD && (a.owner || a.count))
			cfail("abandoned mutex reads owner %u count %u", a.owner, a.count);
		if (ret && ret != -EOWNERDEAD)
			cfail("MUTEX_READ: %s", errname(ret));
	} else if (r < 96) {
		/* someone else's mutex: only the owner may unlock or kill */
		int m = rbelow(&w->r, C_MUTEXES);
		struct ntsync_mutex_args a = { .owner = 0x7fff0000 + w->id };

		ret = xioctl(c_obj[C_SEMS + m], NTSYNC_IOC_MUTEX_UNLOCK, &a);
		if (ret != -EPERM)
			cfail("MUTEX_UNLOCK by a non-owner: %s", errname(ret));
	} else {
		int s = rbelow(&w->r, C_SEMS);
		struct ntsync_sem_args a = { POISON32, POISON32 };

		ret = xioctl(c_obj[s], NTSYNC_IOC_SEM_READ, &a);
		if (ret || a.count > a.max)
			cfail("SEM_READ: %s count %u max %u", errname(ret), a.count, a.max);
	}
	ADD(S->ops, 1);
}

static double c_deadline;

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	while (now_s() < c_deadline)
		for (int k = 0; k < 64; k++)
			c_step(w);
	for (int m = 0; m < C_MUTEXES; m++)
		while (w->held[m])
			c_unlock(w, m);
	return NULL;
}

/*
 * Churn: a private instance whose objects are closed while another thread
 * waits on them.  Nothing there is ever signaled, so every wait must end by
 * time-out (or EINVAL when the descriptor was already gone at lookup).
 */
struct churn { int dev; volatile int fd; double deadline; };

static void *churn_waiter(void *arg)
{
	struct churn *c = arg;

	struct rng r = { 0x5eed };

	while (now_s() < c->deadline) {
		int fd = c->fd;
		struct ntsync_wait_args a = { .count = 1, .owner = 1 };
		long ret;

		a.objs = (uint64_t)(uintptr_t)&fd;
		a.timeout = tc_now_ns(CLOCK_MONOTONIC) + 1000000;
		ret = xioctl(c->dev, rchance(&r, 50) ? NTSYNC_IOC_WAIT_ALL : NTSYNC_IOC_WAIT_ANY, &a);

		if (ret != -ETIMEDOUT && ret != -EINVAL && !enomem_tolerated(ret))
			cfail("wait on an object being closed: %s", errname(ret));
		ADD(S->churn, 1);
	}
	return NULL;
}

static void run_churn(double deadline, struct rng *r)
{
	struct churn c = { .dev = open_device(), .fd = -1, .deadline = deadline };
	pthread_t t;

	pthread_create(&t, NULL, churn_waiter, &c);
	while (now_s() < deadline) {
		uint32_t manual = rbelow(r, 2);
		int fd;

		switch (rbelow(r, 3)) {
		case 0: fd = ntr_create_sem(c.dev, 0, 5); break;
		case 1: fd = ntr_create_mutex(c.dev, 77, 1); break;
		default: fd = ntr_create_event(c.dev, manual, 0); break;
		}
		if (fd < 0 && enomem_tolerated(-errno))
			continue;
		if (fd < 0) {
			cfail("churn create: %s", strerror(errno));
			break;
		}
		c.fd = fd;
		usleep(rbelow(r, 500));
		c.fd = -1;
		close(fd);
		ADD(S->churn, 1);
	}
	pthread_join(t, NULL);
	close(c.dev);
}

static void run_process(int p, double deadline)
{
	pthread_t th[MAXWORKERS];
	struct worker w[MAXWORKERS];
	int nt = opt_threads;

	c_deadline = deadline;
	for (int t = 0; t < nt; t++) {
		memset(&w[t], 0, sizeof(w[t]));
		w[t].id = p * 256 + t;
		w[t].owner = (uint32_t)(p * 256 + t + 1);
		w[t].r.s = opt_seed ^ ((uint64_t)(p * 256 + t + 1) << 32);
		pthread_create(&th[t], NULL, worker_main, &w[t]);
	}
	if (p == 0) {
		struct rng cr = { opt_seed ^ 0xc4u };

		run_churn(deadline, &cr);
	}
	for (int t = 0; t < nt; t++)
		pthread_join(th[t], NULL);
}

int run_concurrent(void)
{
	struct rng r = { opt_seed };
	double start = now_s(), deadline = start + opt_seconds;
	pid_t kids[MAXWORKERS];
	int i;

	S = mmap(NULL, sizeof(*S), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (S == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	memset(S, 0, sizeof(*S));
	c_dev = open_device();
	for (i = 0; i < C_OBJS; i++) {
		long fd;

		if (obj_kind(i) == T_SEM) {
			/* (one declarator after the other: the seed's order) */
			uint32_t count = rbelow(&r, 3), max = 3 + rbelow(&r, 6);

			S->sem_init[i] = count;
			fd = xcount(ntr_create_sem(c_dev, count, max));
		} else if (obj_kind(i) == T_MUTEX) {
			fd = xcount(ntr_create_mutex(c_dev, 0, 0));
		} else {
			int e = i - C_SEMS - C_MUTEXES;
			uint32_t signaled = rbelow(&r, 2);

			S->ev_init[e] = signaled;
			fd = xcount(ntr_create_event(c_dev, e >= 2, signaled));
		}
		if (fd < 0) {
			fprintf(stderr, "ntsync-fuzz: create: %s\n", errname(fd));
			return 1;
		}
		c_obj[i] = (int)fd;
	}

	for (i = 1; i < opt_procs; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			run_process(i, deadline);
			_exit(0);
		}
	}
	run_process(0, deadline);
	for (i = 1; i < opt_procs; i++) {
		int st;

		waitpid(kids[i], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			cfail("worker process %d ended with status 0x%x", i, st);
	}

	check_invariants();
	for (i = 0; i < C_OBJS; i++)
		close(c_obj[i]);
	close(c_dev);

	return report_concurrent(now_s() - start);
}
