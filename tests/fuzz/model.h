/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * model.h: an executable model of the ntsync specification.
 *
 * Pure functions, no I/O, no descriptors: each takes object states (and
 * the arguments of one ioctl) and returns what the spec says the ioctl
 * returns (0, or -errno), its outputs and the objects' new states.  The
 * spec is doc/spec.md (the documentation patch in the project's words)
 * with the mainline ABI changes of doc/abi.md (mainline wins where they
 * differ).
 *
 * What is modelled: the three objects, the 14 ioctls' state machine and
 * the errors that follow from arguments and object state (EINVAL,
 * EOVERFLOW, EPERM, EOWNERDEAD, ETIMEDOUT).  What is not: descriptors and
 * memory (EBADF, ENOTTY, EFAULT are the caller's business: ntsync-fuzz
 * decides them before asking the model), and sleeping.  A wait is modelled
 * as a poll, i.e. a wait whose deadline has passed: -ETIMEDOUT when nothing
 * can be acquired at that instant.  For a wait with a later deadline that
 * answer means "would sleep".
 *
 * Used by ntsync-fuzz --model (one thread, state compared after every
 * call), by linearize.c (the concurrent histories' sequential spec) and by
 * test-model.c (the spec, paragraph by paragraph, on the host).
 */
#ifndef NTSYNC_FUZZ_MODEL_H
#define NTSYNC_FUZZ_MODEL_H

#include <stdbool.h>
#include <stdint.h>

enum ntm_type { NTM_NONE, NTM_SEM, NTM_MUTEX, NTM_EVENT };

#define NTM_MAX_WAIT 64	/* NTSYNC_MAX_WAIT_COUNT */

struct ntm_obj {
	enum ntm_type type;
	bool abandoned;		/* mutex only: killed and not yet reacquired */
	/*
	 * event only: pulsed by the call just made, so that waits made at that
	 * instant may take it (see ntm_event_pulse()); ntm_settle() clears it.
	 */
	bool pulsed;
	/* v[] holds the fields in the order of the read ioctl's struct */
	union {
		struct { uint32_t count, max; } sem;
		struct { uint32_t owner, count; } mutex;
		struct { uint32_t manual, signaled; } event;
		uint32_t v[2];
	};
};

/* --- creation: 0 and *o set, or -EINVAL and *o untouched --------------- */
long ntm_create_sem(struct ntm_obj *o, uint32_t count, uint32_t max);
long ntm_create_mutex(struct ntm_obj *o, uint32_t owner, uint32_t count);
long ntm_create_event(struct ntm_obj *o, uint32_t manual, uint32_t signaled);

/*
 * --- object ioctls ------------------------------------------------------
 * An object of another type than the ioctl's gives -EINVAL and no change.
 * *prev is written only on success.
 */
long ntm_sem_release(struct ntm_obj *o, uint32_t n, uint32_t *prev);
long ntm_mutex_unlock(struct ntm_obj *o, uint32_t owner, uint32_t *prev);
long ntm_mutex_kill(struct ntm_obj *o, uint32_t owner);
long ntm_event_set(struct ntm_obj *o, uint32_t *prev);
long ntm_event_reset(struct ntm_obj *o, uint32_t *prev);
long ntm_event_pulse(struct ntm_obj *o, uint32_t *prev);
/*
 * SEM_READ / MUTEX_READ / EVENT_READ as `type`: out[] gets the struct's
 * fields in order ({count, max}, {owner, count}, {manual, signaled}).  An
 * abandoned mutex: -EOWNERDEAD with out = {0, 0}.
 */
long ntm_read(const struct ntm_obj *o, enum ntm_type type, uint32_t out[2]);

/* Is o signaled for a wait on behalf of owner? (a pulse is not) */
bool ntm_signaled(const struct ntm_obj *o, uint32_t owner);


/*
 * --- waits (as polls) ---------------------------------------------------
 * objs[i] is the state of the i-th descriptor, NULL when it is not an
 * object of the waiting instance (closed, a pipe, another instance's).
 * The same pointer twice is the same object twice.  alert: NULL when the
 * argument is 0; with has_alert set and alert NULL, a descriptor that is
 * no object of this instance.
 */
struct ntm_wait {
	uint32_t count;		/* objs[] has count entries (up to NTM_MAX_WAIT) */
	uint32_t owner;
	uint32_t flags;		/* NTSYNC_WAIT_REALTIME (1) is the one known flag */
	uint32_t pad;
	struct ntm_obj **objs;
	bool has_alert;
	struct ntm_obj *alert;
};

/* 0 / -EOWNERDEAD with *index set, -ETIMEDOUT, or -EINVAL; objects changed */
long ntm_wait_any(const struct ntm_wait *w, uint32_t *index);
/*
 * The spec lets WAIT_ANY acquire any one of its signaled objects ("only
 * acquires one object, even if multiple objects are signaled");
 * ntm_wait_any() takes the lowest index, as mainline does and as a lone
 * thread always sees.  ntm_wait_any_pick() acquires the object at index
 * pick where the spec allows it to be the one: it can be taken and pick is
 * the lowest index of that object; pick == count, the alert, when no object
 * can be taken.  Otherwise it does what ntm_wait_any() does.
 */
long ntm_wait_any_pick(const struct ntm_wait *w, uint32_t pick, uint32_t *index);
long ntm_wait_all(const struct ntm_wait *w, uint32_t *index);

/*
 * --- one call on a vector of objects (for histories) ---------------------
 * obj[] index into the state vector; object ioctls use obj[0] (nobj 1); for
 * waits obj[0..nobj) are the objs array (duplicates allowed) and alert the
 * alert (-1: none).
 */
enum ntm_op {
	NTM_OP_SEM_RELEASE, NTM_OP_MUTEX_UNLOCK, NTM_OP_MUTEX_KILL,
	NTM_OP_EVENT_SET, NTM_OP_EVENT_RESET, NTM_OP_EVENT_PULSE,
	NTM_OP_SEM_READ, NTM_OP_MUTEX_READ, NTM_OP_EVENT_READ,
	NTM_OP_WAIT_ANY, NTM_OP_WAIT_ALL,
	NTM_OP_COUNT
};

#define NTM_CALL_MAXOBJ 8

struct ntm_call {
	uint8_t op;		/* enum ntm_op */
	uint8_t nobj;
	int8_t alert;		/* waits: state index of the alert, -1 none */
	int8_t obj[NTM_CALL_MAXOBJ];
	uint32_t arg;		/* SEM_RELEASE: n; UNLOCK, KILL, waits: owner */
};

struct ntm_ret {
	int32_t ret;		/* 0 or -errno */
	uint32_t out[2];	/* prev / index / the read's two fields */
};

/*
 * A pulse wakes the waits in progress at its instant, though the event is
 * never signaled for anyone else: in a history, the waits linearized right
 * after a pulse may take the pulsed event (an auto-reset one once).  After
 * any other call the pulse is over: ntm_settle(st, n, c, r), called after
 * each ntm_apply() of c, ends every pulse but c's own, or keeps them all
 * when c was a wait that acquired.
 */
void ntm_settle(struct ntm_obj *st, unsigned n, const struct ntm_call *c, const struct ntm_ret *r);

/* Apply call to the states st[]; returns r->ret. */
long ntm_apply(struct ntm_obj *st, const struct ntm_call *c, struct ntm_ret *r);
/* The same, WAIT_ANY taking the object at index pick (ntm_wait_any_pick()). */
long ntm_apply_pick(struct ntm_obj *st, const struct ntm_call *c, uint32_t pick, struct ntm_ret *r);
/* Do two results of call c say the same thing (outputs that the spec defines)? */
bool ntm_ret_equal(const struct ntm_call *c, const struct ntm_ret *a, const struct ntm_ret *b);
/*
 * Can this call with this recorded result never change any state?  (st: the
 * objects' types and event kinds, which never change.)
 */
bool ntm_call_is_pure(const struct ntm_obj *st, const struct ntm_call *c, const struct ntm_ret *r);

const char *ntm_op_name(unsigned op);
const char *ntm_errname(long e);
/* "sem{count=1,max=2}" etc. into buf; returns buf */
char *ntm_fmt_obj(char *buf, unsigned long n, const struct ntm_obj *o);

#endif
