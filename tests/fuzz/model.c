// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * model.c: the ntsync specification as pure functions (see model.h).
 *
 * Every rule below is one sentence of the seed's documentation patch
 * (Documentation/userspace-api/ntsync.rst, "the doc") or one row of
 * shared/spec/abi.md; the comments quote or name it.  Where the spec is
 * silent the choice is marked "spec silent" and matches mainline.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "model.h"
#include "tools-common.h"

#define WAIT_REALTIME 0x1u	/* NTSYNC_WAIT_REALTIME */

/* ---------------------------------------------------------------- creates */

long ntm_create_sem(struct ntm_obj *o, uint32_t count, uint32_t max)
{
	/* doc: "Fails with EINVAL if count is greater than max." */
	if (count > max)
		return -EINVAL;
	memset(o, 0, sizeof(*o));
	o->type = NTM_SEM;
	o->sem.count = count;
	o->sem.max = max;
	return 0;
}

long ntm_create_mutex(struct ntm_obj *o, uint32_t owner, uint32_t count)
{
	/* doc: owner nonzero and count zero, or the reverse: EINVAL */
	if (!owner != !count)
		return -EINVAL;
	memset(o, 0, sizeof(*o));
	o->type = NTM_MUTEX;
	o->mutex.owner = owner;
	o->mutex.count = count;
	return 0;
}

long ntm_create_event(struct ntm_obj *o, uint32_t manual, uint32_t signaled)
{
	/* doc: "If nonzero, ..." for both; read back as 0/1 (mainline) */
	memset(o, 0, sizeof(*o));
	o->type = NTM_EVENT;
	o->event.manual = !!manual;
	o->event.signaled = !!signaled;
	return 0;
}

/* ------------------------------------------------------------ object ops */

long ntm_sem_release(struct ntm_obj *o, uint32_t n, uint32_t *prev)
{
	if (o->type != NTM_SEM)
		return -EINVAL;	/* abi.md: an object ioctl on the wrong type */
	/* doc: past the maximum: EOVERFLOW "and the semaphore is not affected" */
	if ((uint64_t)o->sem.count + n > o->sem.max)
		return -EOVERFLOW;
	*prev = o->sem.count;	/* "on output contains its previous count" */
	o->sem.count += n;	/* releasing 0 succeeds (spec silent; mainline) */
	return 0;
}

long ntm_mutex_unlock(struct ntm_obj *o, uint32_t owner, uint32_t *prev)
{
	if (o->type != NTM_MUTEX)
		return -EINVAL;
	if (!owner)
		return -EINVAL;	/* doc: "If owner is zero, the ioctl fails with EINVAL" */
	/* doc: "not the current owner": EPERM; an abandoned mutex has none */
	if (o->mutex.owner != owner)
		return -EPERM;
	*prev = o->mutex.count;	/* "the previous recursion count" */
	/* doc: decremented; at zero "marked as unowned and signaled" */
	if (--o->mutex.count == 0)
		o->mutex.owner = 0;
	return 0;
}

long ntm_mutex_kill(struct ntm_obj *o, uint32_t owner)
{
	if (o->type != NTM_MUTEX)
		return -EINVAL;
	if (!owner)
		return -EINVAL;	/* doc: "If the owner is zero, ... EINVAL" */
	if (o->mutex.owner != owner)
		return -EPERM;	/* doc: "does not own the mutex ... EPERM" */
	/* doc: "Mark a mutex as unowned and abandoned" */
	o->mutex.owner = 0;
	o->mutex.count = 0;
	o->abandoned = true;
	return 0;
}

static long event_op(struct ntm_obj *o, uint32_t *prev, uint32_t now)
{
	if (o->type != NTM_EVENT)
		return -EINVAL;
	*prev = o->event.signaled;	/* "the previous state of the event" */
	o->event.signaled = now;
	return 0;
}

long ntm_event_set(struct ntm_obj *o, uint32_t *prev)
{
	return event_op(o, prev, 1);
}

long ntm_event_reset(struct ntm_obj *o, uint32_t *prev)
{
	return event_op(o, prev, 0);
}

/*
 * doc: "a set followed by a reset, performed as a single atomic operation":
 * it wakes sleepers; for a poll (nobody asleep in this model) it is a reset.
 */
long ntm_event_pulse(struct ntm_obj *o, uint32_t *prev)
{
	long ret = event_op(o, prev, 0);

	/*
	 * Spec silent on polls: a wait whose deadline has passed but which is
	 * still in the call when the pulse comes may be woken by it, as a
	 * sleeping waiter is (mainline and our module queue such a poll before
	 * giving up).  A read never sees the pulse.
	 */
	if (!ret)
		o->pulsed = true;
	return ret;
}

void ntm_settle(struct ntm_obj *st, unsigned n, const struct ntm_call *c, const struct ntm_ret *r)
{
	if ((c->op == NTM_OP_WAIT_ANY || c->op == NTM_OP_WAIT_ALL) && (r->ret == 0 || r->ret == -EOWNERDEAD))
		return;	/* one more waiter woken at the pulse's instant */
	for (unsigned i = 0; i < n; i++)
		st[i].pulsed = false;
	if (c->op == NTM_OP_EVENT_PULSE && r->ret == 0)
		st[c->obj[0]].pulsed = true;	/* the pulse just made */
}

long ntm_read(const struct ntm_obj *o, enum ntm_type type, uint32_t out[2])
{
	if (o->type != type)
		return -EINVAL;
	if (type == NTM_MUTEX && o->abandoned) {
		/* doc: "fails with EOWNERDEAD. In this case, count and owner are set to zero." */
		out[0] = out[1] = 0;
		return -EOWNERDEAD;
	}
	out[0] = o->v[0];
	out[1] = o->v[1];
	return 0;
}

/* ------------------------------------------------------------------ waits */

bool ntm_signaled(const struct ntm_obj *o, uint32_t owner)
{
	switch (o->type) {
	case NTM_SEM:
		return o->sem.count > 0;	/* "signaled if its count is nonzero" */
	case NTM_MUTEX:
		/*
		 * doc: "signaled if it is unowned or if its owner matches"; an
		 * abandoned mutex is unowned.  Spec silent: a recursion count of
		 * UINT32_MAX cannot grow, so not signaled even for its owner
		 * (mainline).
		 */
		return o->mutex.owner == 0 ||
		       (o->mutex.owner == owner && o->mutex.count < UINT32_MAX);
	case NTM_EVENT:
		return o->event.signaled != 0;
	default:
		return false;
	}
}

/* Can a wait take o now: signaled, or an event being pulsed? */
static bool can_take(const struct ntm_obj *o, uint32_t owner)
{
	return ntm_signaled(o, owner) || (o->type == NTM_EVENT && o->pulsed);
}

/* Acquire a signaled object; true when it was an abandoned mutex. */
static bool acquire(struct ntm_obj *o, uint32_t owner)
{
	bool dead = false;

	switch (o->type) {
	case NTM_SEM:
		o->sem.count--;		/* "acquired by decrementing its count by one" */
		break;
	case NTM_MUTEX:
		/* "incrementing its recursion count by one and setting its owner";
		 * an abandoned one: owned with count 1 and "no longer abandoned" */
		dead = o->abandoned;
		o->abandoned = false;
		o->mutex.owner = owner;
		o->mutex.count++;
		break;
	case NTM_EVENT:
		if (!o->event.manual) {	/* "An auto-reset event is acquired by designaling it" */
			o->event.signaled = 0;
			o->pulsed = false;	/* a pulse wakes one waiter of an auto-reset event */
		}
		break;
	default:
		break;
	}
	return dead;
}

/* The EINVAL rules common to both waits; all: no object twice. */
static long wait_check(const struct ntm_wait *w, bool all)
{
	uint32_t i, j;

	/* abi.md (mainline): count > 64, nonzero pad, unknown flags, owner 0 */
	if (w->count > NTM_MAX_WAIT || w->pad || (w->flags & ~WAIT_REALTIME) || !w->owner)
		return -EINVAL;
	/* doc: "If any object is invalid, the function fails with EINVAL" */
	for (i = 0; i < w->count; i++)
		if (!w->objs[i])
			return -EINVAL;
	/* doc: alert "must point to a valid event"; abi.md: of this instance */
	if (w->has_alert && (!w->alert || w->alert->type != NTM_EVENT))
		return -EINVAL;
	if (all) {
		/* doc: not valid "to pass the same object more than once, nor
		 * ... the same object in objs and in alert" */
		for (i = 0; i < w->count; i++) {
			for (j = 0; j < i; j++)
				if (w->objs[i] == w->objs[j])
					return -EINVAL;
			if (w->has_alert && w->objs[i] == w->alert)
				return -EINVAL;
		}
	}
	return 0;
}

/* The alert, when the objects gave nothing: index = count. */
static long take_alert(const struct ntm_wait *w, uint32_t *index)
{
	if (w->has_alert && can_take(w->alert, w->owner)) {
		acquire(w->alert, w->owner);
		*index = w->count;	/* doc: "If alert was signaled instead, this contains count" */
		return 0;
	}
	/* a poll: "If the timeout is equal to or earlier than the current
	 * time, the function returns immediately" with ETIMEDOUT */
	return -ETIMEDOUT;
}

long ntm_wait_any(const struct ntm_wait *w, uint32_t *index)
{
	long ret = wait_check(w, false);
	uint32_t i;

	if (ret)
		return ret;
	/*
	 * "acquires at most one"; a member of objs before the alert ("a member
	 * of objs will always be given priority"); the lowest signaled index
	 * (mainline), which for an object passed twice is "the lowest index
	 * corresponding to that object".
	 */
	for (i = 0; i < w->count; i++) {
		if (can_take(w->objs[i], w->owner)) {
			*index = i;
			/* "If an abandoned mutex is acquired, the ioctl fails with EOWNERDEAD" */
			return acquire(w->objs[i], w->owner) ? -EOWNERDEAD : 0;
		}
	}
	/* count 0 and no alert: nothing to acquire, a time-out (mainline) */
	return take_alert(w, index);
}

long ntm_wait_any_pick(const struct ntm_wait *w, uint32_t pick, uint32_t *index)
{
	long ret = wait_check(w, false);
	uint32_t i;

	if (ret)
		return ret;
	if (pick > w->count)
		return ntm_wait_any(w, index);
	if (pick == w->count) {
		/* the alert only when no object can be taken */
		for (i = 0; i < w->count; i++)
			if (can_take(w->objs[i], w->owner))
				return ntm_wait_any(w, index);
		return take_alert(w, index);
	}
	/* doc: "The function only acquires one object, even if multiple
	 * objects are signaled": any one of them; reported at its lowest index */
	if (!can_take(w->objs[pick], w->owner))
		return ntm_wait_any(w, index);
	for (i = 0; i < pick; i++)
		if (w->objs[i] == w->objs[pick])
			return ntm_wait_any(w, index);
	*index = pick;
	return acquire(w->objs[pick], w->owner) ? -EOWNERDEAD : 0;
}

long ntm_wait_all(const struct ntm_wait *w, uint32_t *index)
{
	long ret = wait_check(w, true);
	bool dead = false;
	uint32_t i;

	if (ret)
		return ret;
	for (i = 0; i < w->count; i++)
		if (!can_take(w->objs[i], w->owner))
			return take_alert(w, index);
	/*
	 * All signaled (with count 0: all of no objects, success at once,
	 * mainline): all acquired at once, index 0; EOWNERDEAD when any mutex
	 * was abandoned, "all objects are nevertheless marked as acquired".
	 */
	for (i = 0; i < w->count; i++)
		dead |= acquire(w->objs[i], w->owner);
	*index = 0;
	return dead ? -EOWNERDEAD : 0;
}

/* ---------------------------------------------------- calls on a vector */

long ntm_apply(struct ntm_obj *st, const struct ntm_call *c, struct ntm_ret *r)
{
	return ntm_apply_pick(st, c, UINT32_MAX, r);
}

long ntm_apply_pick(struct ntm_obj *st, const struct ntm_call *c, uint32_t pick, struct ntm_ret *r)
{
	struct ntm_obj *o = c->nobj ? &st[c->obj[0]] : NULL;
	long ret;

	r->out[0] = r->out[1] = 0;
	switch (c->op) {
	case NTM_OP_SEM_RELEASE: ret = ntm_sem_release(o, c->arg, &r->out[0]); break;
	case NTM_OP_MUTEX_UNLOCK: ret = ntm_mutex_unlock(o, c->arg, &r->out[0]); break;
	case NTM_OP_MUTEX_KILL: ret = ntm_mutex_kill(o, c->arg); break;
	case NTM_OP_EVENT_SET: ret = ntm_event_set(o, &r->out[0]); break;
	case NTM_OP_EVENT_RESET: ret = ntm_event_reset(o, &r->out[0]); break;
	case NTM_OP_EVENT_PULSE: ret = ntm_event_pulse(o, &r->out[0]); break;
	case NTM_OP_SEM_READ: ret = ntm_read(o, NTM_SEM, r->out); break;
	case NTM_OP_MUTEX_READ: ret = ntm_read(o, NTM_MUTEX, r->out); break;
	case NTM_OP_EVENT_READ: ret = ntm_read(o, NTM_EVENT, r->out); break;
	case NTM_OP_WAIT_ANY:
	case NTM_OP_WAIT_ALL: {
		struct ntm_obj *objs[NTM_CALL_MAXOBJ];
		struct ntm_wait w = {
			.count = c->nobj, .owner = c->arg, .objs = objs,
			.has_alert = c->alert >= 0,
			.alert = c->alert >= 0 ? &st[c->alert] : NULL,
		};

		for (unsigned i = 0; i < c->nobj; i++)
			objs[i] = &st[c->obj[i]];
		ret = c->op == NTM_OP_WAIT_ALL ? ntm_wait_all(&w, &r->out[0]) : ntm_wait_any_pick(&w, pick, &r->out[0]);
		break;
	}
	default:
		ret = -ENOTTY;
	}
	r->ret = (int32_t)ret;
	return ret;
}

bool ntm_ret_equal(const struct ntm_call *c, const struct ntm_ret *a, const struct ntm_ret *b)
{
	bool acquired = a->ret == 0 || a->ret == -EOWNERDEAD;

	if (a->ret != b->ret)
		return false;
	switch (c->op) {
	case NTM_OP_SEM_RELEASE:
	case NTM_OP_MUTEX_UNLOCK:
	case NTM_OP_EVENT_SET:
	case NTM_OP_EVENT_RESET:
	case NTM_OP_EVENT_PULSE:
		return a->ret || a->out[0] == b->out[0];
	case NTM_OP_SEM_READ:
	case NTM_OP_MUTEX_READ:
	case NTM_OP_EVENT_READ:
		return !acquired || (a->out[0] == b->out[0] && a->out[1] == b->out[1]);
	case NTM_OP_WAIT_ANY:
	case NTM_OP_WAIT_ALL:
		return !acquired || a->out[0] == b->out[0];
	default:
		return true;
	}
}

static bool manual_event(const struct ntm_obj *o)
{
	return o->type == NTM_EVENT && o->event.manual;
}

bool ntm_call_is_pure(const struct ntm_obj *st, const struct ntm_call *c, const struct ntm_ret *r)
{
	switch (c->op) {
	case NTM_OP_SEM_READ:
	case NTM_OP_MUTEX_READ:
	case NTM_OP_EVENT_READ:
		return true;
	default:
		break;
	}
	if (r->ret != 0 && r->ret != -EOWNERDEAD)
		return true;	/* every failure leaves every object as it was */
	switch (c->op) {
	case NTM_OP_SEM_RELEASE: return c->arg == 0;
	case NTM_OP_EVENT_SET: return r->out[0] == 1;
	case NTM_OP_EVENT_RESET: return r->out[0] == 0;
	case NTM_OP_WAIT_ANY:
		/* taking a manual-reset event changes nothing */
		if (r->ret)
			return false;
		if (r->out[0] == c->nobj)
			return c->alert >= 0 && manual_event(&st[c->alert]);
		return r->out[0] < c->nobj && manual_event(&st[c->obj[r->out[0]]]);
	case NTM_OP_WAIT_ALL:
		if (r->ret)
			return false;
		if (r->out[0] == c->nobj && c->nobj)
			return c->alert >= 0 && manual_event(&st[c->alert]);
		for (unsigned i = 0; i < c->nobj; i++)
			if (!manual_event(&st[c->obj[i]]))
				return false;
		return true;
	default:
		return false;	/* unlock and kill change the mutex */
	}
}

/* ------------------------------------------------------------- printing */

const char *ntm_op_name(unsigned op)
{
	static const char *const names[NTM_OP_COUNT] = {
		"SEM_RELEASE", "MUTEX_UNLOCK", "MUTEX_KILL", "EVENT_SET", "EVENT_RESET",
		"EVENT_PULSE", "SEM_READ", "MUTEX_READ", "EVENT_READ", "WAIT_ANY", "WAIT_ALL",
	};

	return op < NTM_OP_COUNT ? names[op] : "?";
}

const char *ntm_errname(long e)
{
	static __thread char buf[24];
	const char *name = e < 0 && e > -4096 ? tc_errno_neg_name((int)-e) : NULL;

	if (e == 0)
		return "0";
	if (name)
		return name;
	snprintf(buf, sizeof(buf), "%ld", e);
	return buf;
}

char *ntm_fmt_obj(char *buf, unsigned long n, const struct ntm_obj *o)
{
	switch (o->type) {
	case NTM_SEM:
		snprintf(buf, n, "sem{count=%u,max=%u}", o->sem.count, o->sem.max);
		break;
	case NTM_MUTEX:
		snprintf(buf, n, "mutex{owner=%u,count=%u%s}", o->mutex.owner, o->mutex.count,
			 o->abandoned ? ",abandoned" : "");
		break;
	case NTM_EVENT:
		snprintf(buf, n, "event{%s,signaled=%u}", o->event.manual ? "manual" : "auto",
			 o->event.signaled);
		break;
	default:
		snprintf(buf, n, "none");
	}
	return buf;
}
