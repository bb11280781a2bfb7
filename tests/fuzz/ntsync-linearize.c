// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ntsync-linearize: record concurrent histories on /dev/ntsync and check
 * each for linearizability against the spec's model (linearize.c over
 * model.c).
 *
 * --procs P processes x --threads T threads (default 2 x 2), each with its
 * own mutex owner id, share 8 objects: semaphores s0 and s1 (max 3),
 * mutexes m2 and m3, manual events e4 and e5, auto-reset events e6 and e7.
 * The run is a sequence of rounds.  In a round every worker makes 2..24
 * random calls that never block: polls (WAIT_ANY and WAIT_ALL with a
 * deadline in the past, 1..4 objects, duplicates in WAIT_ANY, an event as
 * alert now and then, MONOTONIC or REALTIME), SEM_RELEASE, MUTEX_UNLOCK
 * (its own id mostly, another's or 0 sometimes), MUTEX_KILL, EVENT_SET,
 * RESET, PULSE and the three reads.  Each call is stamped with
 * CLOCK_MONOTONIC right before and right after the ioctl.  The workers
 * then wait at a barrier, the coordinator reads every object (these reads
 * end the history, and their values are the next round's initial state,
 * exact because nothing runs meanwhile) and checks the round's history.
 *
 * A round picks one of three mixes so that the known fault classes get a
 * chance: "mix" (everything, uniformly), "juggle" (one worker keeps at least
 * one of e4/e5 set by setting one before it resets the other, while the
 * others poll both, also as alert: issue 14's non-atomic poll), and "dup"
 * (polls that name a semaphore twice while others release it: mainline's
 * duplicate-index race).
 *
 * A history that no order explains is shrunk (ntl_minimize) and printed.
 * Exit: 0 no violation, 1 a violation, 2 usage, 77 no /dev/ntsync.
 * Blocking waits are not covered yet (the model has no sleepers).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/ntsync.h>

#include "ntsync-raw.h"

#include "linearize.h"
#include "tools-common.h"

#define NOBJ 8
#define MAXW 16
#define MAXK 62
#define POISON32 0xccccccccu

enum { MIX, JUGGLE, DUP, NPROFILE };
static const char *const profile_name[] = { "mix", "juggle", "dup" };

static const char *device_path = "/dev/ntsync";
static double opt_seconds = 10;
static int opt_threads = 2, opt_procs = 2;
static uint64_t opt_seed;
static bool opt_seed_set, opt_verbose;
static int opt_fake;	/* 1: atomic model as the device, 2: with issue 14's poll */
static unsigned opt_max_reports = 3;

struct rng { uint64_t s; };

static uint64_t rnext(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);	/* splitmix64 */

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t rbelow(struct rng *r, uint32_t n)
{
	return n ? (uint32_t)(rnext(r) % n) : 0;
}

static uint64_t now_ns(void)
{
	return tc_now_ns(CLOCK_MONOTONIC);
}

/* ------------------------------------------------------- shared state */

struct shared {
	pthread_barrier_t start, end;
	int stop;
	uint32_t profile, round;
	uint64_t seed;
	uint32_t nk[MAXW];		/* calls per worker this round */
	struct ntl_op rec[MAXW][MAXK];
	uint64_t syscalls;
	/* --fake: the device is the model itself, behind one lock */
	pthread_mutex_t fake_lock;
	struct ntm_obj fake[NOBJ];
};

static struct shared *S;
static int dev, objfd[NOBJ];
static const enum ntm_type objtype[NOBJ] = {
	NTM_SEM, NTM_SEM, NTM_MUTEX, NTM_MUTEX, NTM_EVENT, NTM_EVENT, NTM_EVENT, NTM_EVENT,
};
static int nworkers;

static int32_t do_ioctl(int fd, unsigned long cmd, void *arg)
{
	long ret = ntr_neg(ioctl(fd, cmd, arg));

	return ret < 0 ? (int32_t)ret : 0;
}

/*
 * --fake: the model stands in for the driver, so the whole pipeline runs on
 * a host.  fake 1 applies each call atomically: every history is
 * linearizable.  fake 2 polls as the driver did before issue 14's fix:
 * one object after another, each under the lock alone, then the alert.
 */
static void fake_perform(struct ntl_op *op)
{
	struct ntm_call *c = &op->call;

	op->inv = now_ns();
	if (opt_fake == 2 && c->op == NTM_OP_WAIT_ANY) {
		op->ret.ret = -ETIMEDOUT;
		for (int i = 0; i <= c->nobj; i++) {
			int o = i < c->nobj ? c->obj[i] : c->alert;
			bool got;

			if (o < 0)
				break;
			pthread_mutex_lock(&S->fake_lock);
			got = ntm_signaled(&S->fake[o], c->arg);
			if (got) {
				struct ntm_call one = *c;

				/* acquire just that one through the model */
				one.nobj = i < c->nobj ? 1 : 0;
				one.obj[0] = (int8_t)o;
				one.alert = i < c->nobj ? -1 : (int8_t)o;
				ntm_apply(S->fake, &one, &op->ret);
				for (int k = 0; k < NOBJ; k++)
					S->fake[k].pulsed = false;
				if (op->ret.out[0] == 0 && i < c->nobj) {
					/* the lowest index of that object */
					int j = 0;

					while (c->obj[j] != o)
						j++;
					op->ret.out[0] = (uint32_t)j;
				} else if (i == c->nobj) {
					op->ret.out[0] = c->nobj;
				}
			}
			pthread_mutex_unlock(&S->fake_lock);
			if (got)
				break;
			/* a window between two looks, as a preempted poller has */
			sched_yield();
		}
	} else {
		pthread_mutex_lock(&S->fake_lock);
		ntm_apply(S->fake, c, &op->ret);
		ntm_settle(S->fake, NOBJ, c, &op->ret);	/* nobody waits in the fake */
		for (int o = 0; o < NOBJ; o++)
			S->fake[o].pulsed = false;
		pthread_mutex_unlock(&S->fake_lock);
	}
	op->res = now_ns();
	op->thread &= 0xffff;
}

/* Make call c now, recording its result and times into op. */
static void perform(struct ntl_op *op)
{
	struct ntm_call *c = &op->call;
	struct ntm_ret *r = &op->ret;
	int fd = c->nobj ? objfd[c->obj[0]] : -1;

	r->out[0] = r->out[1] = POISON32;
	if (opt_fake) {
		fake_perform(op);
		return;
	}
	switch (c->op) {
	case NTM_OP_SEM_RELEASE: {
		uint32_t n = c->arg;

		op->inv = now_ns();
		r->ret = do_ioctl(fd, NTSYNC_IOC_SEM_RELEASE, &n);
		op->res = now_ns();
		r->out[0] = n;
		break;
	}
	case NTM_OP_MUTEX_UNLOCK: {
		struct ntsync_mutex_args a = { .owner = c->arg, .count = POISON32 };

		op->inv = now_ns();
		r->ret = do_ioctl(fd, NTSYNC_IOC_MUTEX_UNLOCK, &a);
		op->res = now_ns();
		r->out[0] = a.count;
		break;
	}
	case NTM_OP_MUTEX_KILL: {
		uint32_t o = c->arg;

		op->inv = now_ns();
		r->ret = do_ioctl(fd, NTSYNC_IOC_MUTEX_KILL, &o);
		op->res = now_ns();
		break;
	}
	case NTM_OP_EVENT_SET:
	case NTM_OP_EVENT_RESET:
	case NTM_OP_EVENT_PULSE: {
		static const unsigned long cmd[] = { NTSYNC_IOC_EVENT_SET, NTSYNC_IOC_EVENT_RESET, NTSYNC_IOC_EVENT_PULSE };
		uint32_t prev = POISON32;

		op->inv = now_ns();
		r->ret = do_ioctl(fd, cmd[c->op - NTM_OP_EVENT_SET], &prev);
		op->res = now_ns();
		r->out[0] = prev;
		break;
	}
	case NTM_OP_SEM_READ: {
		struct ntsync_sem_args a = { POISON32, POISON32 };

		op->inv = now_ns();
		r->ret = do_ioctl(fd, NTSYNC_IOC_SEM_READ, &a);
		op->res = now_ns();
		r->out[0] = a.count;
		r->out[1] = a.max;
		break;
	}
	case NTM_OP_MUTEX_READ: {
		struct ntsync_mutex_args a = { POISON32, POISON32 };

		op->inv = now_ns();
		r->ret = do_ioctl(fd, NTSYNC_IOC_MUTEX_READ, &a);
		op->res = now_ns();
		r->out[0] = a.owner;
		r->out[1] = a.count;
		break;
	}
	case NTM_OP_EVENT_READ: {
		struct ntsync_event_args a = { POISON32, POISON32 };

		op->inv = now_ns();
		r->ret = do_ioctl(fd, NTSYNC_IOC_EVENT_READ, &a);
		op->res = now_ns();
		r->out[0] = a.manual;
		r->out[1] = a.signaled;
		break;
	}
	default: {	/* the waits, as polls: an absolute deadline of 0 has passed */
		int fds[NTM_CALL_MAXOBJ];
		struct ntsync_wait_args a;

		memset(&a, 0, sizeof(a));
		for (unsigned i = 0; i < c->nobj; i++)
			fds[i] = objfd[c->obj[i]];
		a.objs = (uint64_t)(uintptr_t)fds;
		a.count = c->nobj;
		a.owner = c->arg;
		a.index = POISON32;
		a.alert = c->alert >= 0 ? (uint32_t)objfd[c->alert] : 0;
		a.flags = op->thread & 0x10000 ? NTSYNC_WAIT_REALTIME : 0;
		op->thread &= 0xffff;
		op->inv = now_ns();
		r->ret = do_ioctl(dev, c->op == NTM_OP_WAIT_ANY ? NTSYNC_IOC_WAIT_ANY : NTSYNC_IOC_WAIT_ALL, &a);
		op->res = now_ns();
		r->out[0] = a.index;
		break;
	}
	}
}

/* ------------------------------------------------------ call choices */

static uint32_t owner_of(int w)
{
	return (uint32_t)w + 1;
}

static void poll_call(struct rng *r, struct ntm_call *c, int w, bool all, const int *pool, int npool)
{
	c->op = all ? NTM_OP_WAIT_ALL : NTM_OP_WAIT_ANY;
	c->arg = owner_of(w);
	c->alert = -1;
	c->nobj = (uint8_t)(1 + rbelow(r, all ? (npool < 3 ? npool : 3) : 4));
	for (unsigned i = 0; i < c->nobj; i++) {
		int o;
		bool again;

		do {	/* WAIT_ALL: distinct objects */
			o = pool[rbelow(r, npool)];
			again = false;
			for (unsigned j = 0; all && j < i; j++)
				again |= c->obj[j] == o;
		} while (again);
		c->obj[i] = (int8_t)o;
	}
	if (rbelow(r, 100) < 15) {
		int a = 4 + (int)rbelow(r, 4);

		for (unsigned j = 0; all && j < c->nobj; j++)
			if (c->obj[j] == a)
				a = -1;
		c->alert = (int8_t)a;
	}
}

static void one_call(struct rng *r, struct ntm_call *c, int w)
{
	int o = (int)rbelow(r, NOBJ);
	uint32_t k = rbelow(r, 100);

	memset(c, 0, sizeof(*c));
	c->nobj = 1;
	c->alert = -1;
	c->obj[0] = (int8_t)o;
	if (k < 40) {
		static const int all_objs[NOBJ] = { 0, 1, 2, 3, 4, 5, 6, 7 };

		poll_call(r, c, w, k >= 30, all_objs, NOBJ);
	} else if (k < 52) {
		c->op = NTM_OP_SEM_RELEASE;
		c->obj[0] = (int8_t)rbelow(r, 2);
		c->arg = rbelow(r, 10) ? 1 + rbelow(r, 2) : 0;
	} else if (k < 66) {
		c->op = NTM_OP_EVENT_SET + rbelow(r, 3);
		c->obj[0] = (int8_t)(4 + rbelow(r, 4));
	} else if (k < 78) {
		c->op = rbelow(r, 8) ? NTM_OP_MUTEX_UNLOCK : NTM_OP_MUTEX_KILL;
		c->obj[0] = (int8_t)(2 + rbelow(r, 2));
		c->arg = rbelow(r, 4) ? owner_of(w) : rbelow(r, 10) ? owner_of((int)rbelow(r, (uint32_t)nworkers)) : 0;
	} else {
		c->op = objtype[o] == NTM_SEM ? NTM_OP_SEM_READ : objtype[o] == NTM_MUTEX ? NTM_OP_MUTEX_READ : NTM_OP_EVENT_READ;
	}
}

/* Worker 0 of a juggle round: at least one of e4, e5 stays set. */
static void juggle_call(struct rng *r, struct ntm_call *c, int w, uint32_t step)
{
	static const int pool[] = { 4, 5, 4, 5, 0, 6 };

	memset(c, 0, sizeof(*c));
	c->nobj = 1;
	c->alert = -1;
	if (w == 0) {
		/* set e5, reset e4, set e4, reset e5, ... */
		static const uint8_t ops[4] = { NTM_OP_EVENT_SET, NTM_OP_EVENT_RESET, NTM_OP_EVENT_SET, NTM_OP_EVENT_RESET };
		static const int8_t objs[4] = { 5, 4, 4, 5 };

		c->op = ops[step % 4];
		c->obj[0] = objs[step % 4];
		return;
	}
	if (rbelow(r, 10) == 0) {
		c->op = NTM_OP_EVENT_READ;
		c->obj[0] = (int8_t)(4 + rbelow(r, 2));
		return;
	}
	if (rbelow(r, 2)) {
		/*
		 * Both juggled events with the auto-reset ones between them
		 * (nobody sets those in this mix): the longest look from one
		 * to the other.
		 */
		static const int8_t fwd[4] = { 4, 6, 7, 5 }, back[4] = { 5, 7, 6, 4 };

		c->op = NTM_OP_WAIT_ANY;
		c->arg = owner_of(w);
		c->nobj = 4;
		memcpy(c->obj, rbelow(r, 2) ? fwd : back, 4);
		return;
	}
	poll_call(r, c, w, false, pool, rbelow(r, 3) ? 2 : 6);
	if (rbelow(r, 4) == 0) {
		/* one event in objs, the other as alert */
		c->nobj = 1;
		c->obj[0] = (int8_t)(4 + rbelow(r, 2));
		c->alert = (int8_t)(9 - c->obj[0]);
		if (rbelow(r, 2))
			c->op = NTM_OP_WAIT_ALL;
	}
}

/* A dup round: polls that name s0 twice; releases of s0. */
static void dup_call(struct rng *r, struct ntm_call *c, int w)
{
	memset(c, 0, sizeof(*c));
	c->alert = -1;
	c->arg = owner_of(w);
	if (w % 2 == 0 || rbelow(r, 4) == 0) {
		c->nobj = 1;
		if (rbelow(r, 10) < 7) {
			c->op = NTM_OP_SEM_RELEASE;
			c->obj[0] = 0;
			c->arg = 1;
		} else {
			c->op = NTM_OP_EVENT_SET;
			c->obj[0] = 6;
		}
		return;
	}
	c->op = NTM_OP_WAIT_ANY;
	switch (rbelow(r, 4)) {
	case 0: c->nobj = 2; c->obj[0] = 0; c->obj[1] = 0; break;
	case 1: c->nobj = 3; c->obj[0] = 0; c->obj[1] = 1; c->obj[2] = 0; break;
	case 2: c->nobj = 3; c->obj[0] = 1; c->obj[1] = 0; c->obj[2] = 0; break;
	default: c->nobj = 2; c->obj[0] = 6; c->obj[1] = 6; c->alert = 6; break;
	}
}

static void run_round_worker(int w)
{
	struct rng r = { S->seed ^ ((uint64_t)(w + 1) << 40) };
	uint32_t k = S->nk[w];

	for (uint32_t i = 0; i < k; i++) {
		struct ntl_op *op = &S->rec[w][i];

		switch (S->profile) {
		case JUGGLE: juggle_call(&r, &op->call, w, i); break;
		case DUP: dup_call(&r, &op->call, w); break;
		default: one_call(&r, &op->call, w); break;
		}
		op->thread = (uint32_t)w + 1;
		if ((op->call.op == NTM_OP_WAIT_ANY || op->call.op == NTM_OP_WAIT_ALL) && rbelow(&r, 5) == 0)
			op->thread |= 0x10000;	/* REALTIME deadline 0: also past */
		perform(op);
	}
	__atomic_fetch_add(&S->syscalls, k, __ATOMIC_RELAXED);
}

static void *worker_thread(void *arg)
{
	int w = (int)(intptr_t)arg;

	for (;;) {
		pthread_barrier_wait(&S->start);
		if (__atomic_load_n(&S->stop, __ATOMIC_ACQUIRE))
			break;
		run_round_worker(w);
		pthread_barrier_wait(&S->end);
	}
	return NULL;
}

static void run_workers(int p)
{
	pthread_t th[MAXW];

	for (int t = 0; t < opt_threads; t++)
		pthread_create(&th[t], NULL, worker_thread, (void *)(intptr_t)(p * opt_threads + t));
	for (int t = 0; t < opt_threads; t++)
		pthread_join(th[t], NULL);
}

/* -------------------------------------------------------- coordinator */

static bool read_all(struct ntl_op *ops, uint32_t *n, struct ntm_obj *state)
{
	for (int o = 0; o < NOBJ; o++) {
		struct ntl_op *op = &ops[(*n)++];

		memset(op, 0, sizeof(*op));
		op->call.nobj = 1;
		op->call.alert = -1;
		op->call.obj[0] = (int8_t)o;
		op->call.op = objtype[o] == NTM_SEM ? NTM_OP_SEM_READ : objtype[o] == NTM_MUTEX ? NTM_OP_MUTEX_READ
										       : NTM_OP_EVENT_READ;
		op->thread = 0;
		perform(op);
		if (op->ret.ret && !(objtype[o] == NTM_MUTEX && op->ret.ret == -EOWNERDEAD)) {
			fprintf(stderr, "ntsync-linearize: reading object %d: %s\n", o, ntm_errname(op->ret.ret));
			return false;
		}
		memset(&state[o], 0, sizeof(state[o]));
		state[o].type = objtype[o];
		state[o].v[0] = op->ret.out[0];
		state[o].v[1] = op->ret.out[1];
		state[o].abandoned = op->ret.ret == -EOWNERDEAD;
	}
	return true;
}

static bool create_objects(struct rng *r)
{
	for (int o = 0; o < NOBJ; o++) {
		long fd;

		if (opt_fake) {
			if (objtype[o] == NTM_SEM)
				ntm_create_sem(&S->fake[o], rbelow(r, 3), 3);
			else if (objtype[o] == NTM_MUTEX)
				ntm_create_mutex(&S->fake[o], 0, 0);
			else
				ntm_create_event(&S->fake[o], o < 6, rbelow(r, 2));
			continue;
		}
		if (objtype[o] == NTM_SEM) {
			fd = ntr_create_sem(dev, rbelow(r, 3), 3);
		} else if (objtype[o] == NTM_MUTEX) {
			fd = ntr_create_mutex(dev, 0, 0);
		} else {
			fd = ntr_create_event(dev, o < 6, rbelow(r, 2));
		}
		if (fd < 0) {
			perror("ntsync-linearize: create");
			return false;
		}
		objfd[o] = (int)fd;
	}
	return true;
}

static void dump(FILE *f, const struct ntl_history *h);

static int run(void)
{
	static struct ntl_op hist_ops[NTL_MAX_OPS], bad_ops[NTL_MAX_OPS];
	struct ntm_obj state[NOBJ];
	struct ntl_stats st = { 0 };
	struct rng r = { opt_seed };
	pthread_barrierattr_t ba;
	uint64_t start = now_ns(), deadline = start + (uint64_t)(opt_seconds * 1e9), per_profile[NPROFILE] = { 0 };
	unsigned reports = 0;
	pid_t kids[MAXW];
	pthread_t th[MAXW];
	uint32_t n, kmax;
	double el;

	nworkers = opt_procs * opt_threads;
	/* every worker's calls and the final reads fit one history */
	kmax = (NTL_MAX_OPS - NOBJ) / (uint32_t)nworkers;
	if (kmax > MAXK)
		kmax = MAXK;
	S = mmap(NULL, sizeof(*S), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (S == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	memset(S, 0, sizeof(*S));
	pthread_barrierattr_init(&ba);
	pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
	pthread_barrier_init(&S->start, &ba, (unsigned)nworkers + 1);
	pthread_barrier_init(&S->end, &ba, (unsigned)nworkers + 1);
	{
		pthread_mutexattr_t ma;

		pthread_mutexattr_init(&ma);
		pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
		pthread_mutex_init(&S->fake_lock, &ma);
	}
	if (!create_objects(&r))
		return 1;
	n = 0;
	if (!read_all(hist_ops, &n, state))
		return 1;

	for (int p = 1; p < opt_procs; p++) {
		kids[p] = fork();
		if (kids[p] == 0) {
			run_workers(p);
			_exit(0);
		}
	}
	for (int t = 0; t < opt_threads; t++)
		pthread_create(&th[t], NULL, worker_thread, (void *)(intptr_t)t);

	while (now_ns() < deadline) {
		struct ntl_history h = { .nobj = NOBJ, .ops = hist_ops };
		struct ntl_history bad;
		enum ntl_verdict v;

		S->round++;
		S->seed = rnext(&r);
		S->profile = rbelow(&r, 100) < 40 ? MIX : rbelow(&r, 100) < 60 ? JUGGLE : DUP;
		for (int w = 0; w < nworkers; w++)
			S->nk[w] = S->profile == JUGGLE ? kmax : 2 + rbelow(&r, kmax - 1);
		memcpy(h.init, state, sizeof(state));
		pthread_barrier_wait(&S->start);
		pthread_barrier_wait(&S->end);
		n = 0;
		for (int w = 0; w < nworkers; w++)
			for (uint32_t i = 0; i < S->nk[w]; i++)
				hist_ops[n++] = S->rec[w][i];
		if (!read_all(hist_ops, &n, state))
			break;
		h.nops = n;
		per_profile[S->profile]++;
		v = ntl_check(&h, 0, &st, &bad, bad_ops);
		if (opt_verbose)
			printf("round %u (%s): %u calls: %s\n", S->round, profile_name[S->profile], n,
			       v == NTL_OK ? "linearizable" : v == NTL_VIOLATION ? "NOT linearizable" : "gave up");
		if (v == NTL_VIOLATION && reports++ < opt_max_reports) {
			uint32_t before = bad.nops, core;

			printf("FAIL seed=%" PRIu64 " round %u (%s): no order of these %u calls, consistent with real "
			       "time, gives their results under the spec\n", opt_seed, S->round,
			       profile_name[S->profile], h.nops);
			dump(stdout, &bad);
			core = ntl_minimize(&bad);
			printf("  minimal failing history: %u of the %u calls of its part, %u whose results matter;"
			       " initial states first:\n", bad.nops, before, core);
			ntl_print(stdout, &bad, "    ");
			fflush(stdout);
		}
	}
	__atomic_store_n(&S->stop, 1, __ATOMIC_RELEASE);
	pthread_barrier_wait(&S->start);
	for (int t = 0; t < opt_threads; t++)
		pthread_join(th[t], NULL);
	for (int p = 1; p < opt_procs; p++) {
		int ws;

		waitpid(kids[p], &ws, 0);
	}
	el = (now_ns() - start) / 1e9;
	printf("ntsync-linearize: %d processes x %d threads, %.1f s: %" PRIu64 " histories (mix %" PRIu64
	       ", juggle %" PRIu64 ", dup %" PRIu64 "), %" PRIu64 " calls checked (%" PRIu64 " by the workers), "
	       "%" PRIu64 " parts, %" PRIu64 " search states, %" PRIu64 " gave up, %" PRIu64 " violations (seed %" PRIu64 ")\n",
	       opt_procs, opt_threads, el, st.histories, per_profile[MIX], per_profile[JUGGLE], per_profile[DUP],
	       st.ops, S->syscalls, st.parts, st.states, st.gave_up, st.violations, opt_seed);
	printf("histories: %" PRIu64 "\nops: %" PRIu64 "\nviolations: %" PRIu64 "\n", st.histories, st.ops, st.violations);
	for (int o = 0; o < NOBJ && !opt_fake; o++)
		close(objfd[o]);
	return st.violations ? 1 : 0;
}

/*
 * A failing part as text, so that it can be checked and shrunk again away
 * from the guest (--check FILE reads every LIN- line of a console log).
 */
static void dump(FILE *f, const struct ntl_history *h)
{
	fprintf(f, "LIN-HIST %u %u\n", h->nobj, h->nops);
	for (uint32_t o = 0; o < h->nobj; o++)
		fprintf(f, "LIN-OBJ %d %u %u %d\n", h->init[o].type, h->init[o].v[0], h->init[o].v[1],
			h->init[o].abandoned);
	for (uint32_t i = 0; i < h->nops; i++) {
		const struct ntl_op *op = &h->ops[i];

		fprintf(f, "LIN-OP %u %" PRIu64 " %" PRIu64 " %u %u %d %u", op->thread, op->inv, op->res,
			op->call.op, op->call.nobj, op->call.alert, op->call.arg);
		for (int k = 0; k < NTM_CALL_MAXOBJ; k++)
			fprintf(f, " %d", op->call.obj[k]);
		fprintf(f, " %d %u %u\n", op->ret.ret, op->ret.out[0], op->ret.out[1]);
	}
	fprintf(f, "LIN-END\n");
}

/* --check FILE: every dumped history in FILE, checked and shrunk. */
static int check_file(const char *path)
{
	static struct ntl_op ops[NTL_MAX_OPS], bad_ops[NTL_MAX_OPS];
	struct ntl_history h = { .ops = ops }, bad;
	FILE *f = fopen(path, "r");
	char line[512];
	int nhist = 0, nbad = 0;
	bool in = false;

	if (!f) {
		perror(path);
		return 2;
	}
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "LIN-");
		unsigned a, b;

		if (!p)
			continue;
		if (sscanf(p, "LIN-HIST %u %u", &a, &b) == 2 && a <= NTL_MAX_OBJ && b <= NTL_MAX_OPS) {
			memset(&h, 0, sizeof(h));
			h.ops = ops;
			in = true;
		} else if (in && !strncmp(p, "LIN-OBJ ", 8) && h.nobj < NTL_MAX_OBJ) {
			int type, dead;
			struct ntm_obj *o = &h.init[h.nobj++];

			memset(o, 0, sizeof(*o));
			if (sscanf(p, "LIN-OBJ %d %u %u %d", &type, &o->v[0], &o->v[1], &dead) != 4)
				in = false;
			o->type = (enum ntm_type)type;
			o->abandoned = dead;
		} else if (in && !strncmp(p, "LIN-OP ", 7) && h.nops < NTL_MAX_OPS) {
			struct ntl_op *op = &ops[h.nops++];
			unsigned opc, nobj;
			int alert, ob[8], ret;

			if (sscanf(p, "LIN-OP %u %" SCNu64 " %" SCNu64 " %u %u %d %u %d %d %d %d %d %d %d %d %d %u %u",
				   &op->thread, &op->inv, &op->res, &opc, &nobj, &alert, &op->call.arg,
				   &ob[0], &ob[1], &ob[2], &ob[3], &ob[4], &ob[5], &ob[6], &ob[7],
				   &ret, &op->ret.out[0], &op->ret.out[1]) != 18) {
				in = false;
				continue;
			}
			op->call.op = (uint8_t)opc;
			op->call.nobj = (uint8_t)nobj;
			op->call.alert = (int8_t)alert;
			for (int k = 0; k < 8; k++)
				op->call.obj[k] = (int8_t)ob[k];
			op->ret.ret = ret;
		} else if (in && !strncmp(p, "LIN-END", 7)) {
			enum ntl_verdict v = ntl_check(&h, 0, NULL, &bad, bad_ops);
			uint32_t before = bad.nops, core;

			in = false;
			nhist++;
			printf("history %d: %u calls on %u objects: %s\n", nhist, h.nops, h.nobj,
			       v == NTL_OK ? "linearizable" : v == NTL_VIOLATION ? "NOT linearizable" : "gave up");
			if (v != NTL_VIOLATION)
				continue;
			nbad++;
			dump(stdout, &bad);
			core = ntl_minimize(&bad);
			printf("  minimal failing history: %u of %u calls, %u whose results matter; initial states first:\n",
			       bad.nops, before, core);
			ntl_print(stdout, &bad, "    ");
		}
	}
	fclose(f);
	printf("%d histories, %d not linearizable\n", nhist, nbad);
	return nbad ? 1 : 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: ntsync-linearize [options]\n"
		"  --seconds S     run time (default 10)\n"
		"  --procs P       processes (default 2)\n"
		"  --threads T     worker threads per process (default 2; P x T <= %d)\n"
		"  --seed N        random seed (default: from the clock; always printed)\n"
		"  --reports N     print at most N failing histories (default 3)\n"
		"  --device PATH   default /dev/ntsync\n"
		"  --fake          no device: the model itself stands in for the driver (a self-test:\n"
		"                  every history is linearizable)\n"
		"  --fake-nonatomic  the same, but WAIT_ANY looks at one object after another\n"
		"                  as the driver did before issue 14's fix (must be caught)\n"
		"  --verbose       one line per history\n"
		"  --check FILE    no device: check (and shrink) the failing histories dumped\n"
		"                  as LIN- lines in FILE, e.g. a guest's console log\n"
		"Exit: 0 every history linearizable, 1 a violation, 2 usage, 77 no device.\n", MAXW);
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (v && !strcmp(a, "--check")) {
			return check_file(v);
		} else if (!strcmp(a, "--fake")) {
			opt_fake = 1;
		} else if (!strcmp(a, "--fake-nonatomic")) {
			opt_fake = 2;
		} else if (!strcmp(a, "--verbose")) {
			opt_verbose = true;
		} else if (v && !strcmp(a, "--seconds")) {
			opt_seconds = atof(v); i++;
		} else if (v && !strcmp(a, "--procs")) {
			opt_procs = atoi(v); i++;
		} else if (v && !strcmp(a, "--threads")) {
			opt_threads = atoi(v); i++;
		} else if (v && !strcmp(a, "--seed")) {
			opt_seed = strtoull(v, NULL, 0); opt_seed_set = true; i++;
		} else if (v && !strcmp(a, "--reports")) {
			opt_max_reports = (unsigned)atoi(v); i++;
		} else if (v && !strcmp(a, "--device")) {
			device_path = v; i++;
		} else {
			fprintf(stderr, "ntsync-linearize: unknown or incomplete argument '%s' (see --help)\n", a);
			return 2;
		}
	}
	if (opt_procs < 1 || opt_threads < 1 || opt_procs * opt_threads > MAXW) {
		fprintf(stderr, "ntsync-linearize: need 1 <= procs x threads <= %d\n", MAXW);
		return 2;
	}
	if (!opt_seed_set)
		opt_seed = now_ns() ^ ((uint64_t)getpid() << 20);
	dev = opt_fake ? open("/dev/null", O_RDONLY) : ntr_open_path(device_path);
	if (dev < 0 && (errno == ENOENT || errno == ENODEV || errno == ENXIO)) {
		printf("ntsync-linearize: %s: %s: skipping (load the ntsync module first)\n", device_path, strerror(errno));
		return 77;
	}
	if (dev < 0) {
		perror("ntsync-linearize: open");
		return 1;
	}
	printf("ntsync-linearize: seed=%" PRIu64 " (%zu-bit caller)\n", opt_seed, sizeof(void *) * 8);
	fflush(stdout);
	return run();
}
