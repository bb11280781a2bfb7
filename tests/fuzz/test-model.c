// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test-model: the executable model (model.c) against the spec, on the host,
 * no device.  The tests walk the seed documentation's paragraphs in order
 * (semaphore, mutex, abandoned mutex, events, each ioctl, WAIT_ANY,
 * WAIT_ALL) and then doc/abi.md's error table, row by row where a row is about
 * state or arguments (descriptor and pointer rows are ntsync-fuzz's).
 * One test per behaviour, named after it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "model.h"

#define POISON 0xccccccccu

static struct ntm_obj sem(uint32_t count, uint32_t max)
{
	struct ntm_obj o;

	assert_int_equal(ntm_create_sem(&o, count, max), 0);
	return o;
}

static struct ntm_obj mutex(uint32_t owner, uint32_t count)
{
	struct ntm_obj o;

	assert_int_equal(ntm_create_mutex(&o, owner, count), 0);
	return o;
}

static struct ntm_obj event(uint32_t manual, uint32_t signaled)
{
	struct ntm_obj o;

	assert_int_equal(ntm_create_event(&o, manual, signaled), 0);
	return o;
}

/* A poll on objs[0..n) with an optional alert. */
static long wait_on(bool all, struct ntm_obj **objs, uint32_t n, uint32_t owner,
		    struct ntm_obj *alert, uint32_t *index)
{
	struct ntm_wait w = { .count = n, .owner = owner, .objs = objs,
			      .has_alert = alert != NULL, .alert = alert };

	*index = POISON;
	return all ? ntm_wait_all(&w, index) : ntm_wait_any(&w, index);
}

static bool same(const struct ntm_obj *a, const struct ntm_obj *b)
{
	return a->type == b->type && a->abandoned == b->abandoned && a->v[0] == b->v[0] && a->v[1] == b->v[1];
}

/* ============================================================ semaphore */

static void create_sem_count_above_max_is_einval(void **s)
{
	struct ntm_obj o = { .type = NTM_NONE };

	(void)s;
	assert_int_equal(ntm_create_sem(&o, 3, 2), -EINVAL);
	assert_int_equal(o.type, NTM_NONE);
	assert_int_equal(ntm_create_sem(&o, UINT32_MAX, UINT32_MAX), 0);
	assert_int_equal(ntm_create_sem(&o, 0, 0), 0);
}

static void sem_signaled_iff_count_nonzero(void **s)
{
	struct ntm_obj a = sem(0, 2), b = sem(1, 2);

	(void)s;
	assert_false(ntm_signaled(&a, 1));
	assert_true(ntm_signaled(&b, 1));
}

static void sem_wait_decrements_by_one_until_unsignaled(void **s)
{
	struct ntm_obj o = sem(2, 5), *objs[] = { &o };
	uint32_t index, out[2];

	(void)s;
	assert_int_equal(wait_on(false, objs, 1, 1, NULL, &index), 0);
	assert_int_equal(index, 0);
	assert_int_equal(o.sem.count, 1);
	assert_int_equal(wait_on(false, objs, 1, 1, NULL, &index), 0);
	assert_int_equal(wait_on(false, objs, 1, 1, NULL, &index), -ETIMEDOUT);
	assert_int_equal(ntm_read(&o, NTM_SEM, out), 0);
	assert_int_equal(out[0], 0);
	assert_int_equal(out[1], 5);
}

static void sem_release_adds_and_returns_previous_count(void **s)
{
	struct ntm_obj o = sem(1, 5);
	uint32_t prev = POISON;

	(void)s;
	assert_int_equal(ntm_sem_release(&o, 3, &prev), 0);
	assert_int_equal(prev, 1);
	assert_int_equal(o.sem.count, 4);
	assert_int_equal(ntm_sem_release(&o, 0, &prev), 0);	/* spec silent: 0 is fine */
	assert_int_equal(prev, 4);
}

static void sem_release_past_max_is_eoverflow_and_unchanged(void **s)
{
	struct ntm_obj o = sem(4, 5), before;
	uint32_t prev = POISON;

	(void)s;
	before = o;
	assert_int_equal(ntm_sem_release(&o, 2, &prev), -EOVERFLOW);
	assert_int_equal(prev, POISON);
	assert_true(same(&o, &before));
	assert_int_equal(ntm_sem_release(&o, 1, &prev), 0);
	assert_int_equal(o.sem.count, 5);
}

static void sem_release_does_not_wrap_at_32_bits(void **s)
{
	struct ntm_obj o = sem(2, UINT32_MAX);
	uint32_t prev;

	(void)s;
	assert_int_equal(ntm_sem_release(&o, UINT32_MAX - 1, &prev), -EOVERFLOW);
	assert_int_equal(o.sem.count, 2);
	assert_int_equal(ntm_sem_release(&o, UINT32_MAX - 2, &prev), 0);
	assert_int_equal(o.sem.count, UINT32_MAX);
}

/* ================================================================ mutex */

static void create_mutex_owner_and_count_must_agree(void **s)
{
	struct ntm_obj o;

	(void)s;
	assert_int_equal(ntm_create_mutex(&o, 1, 0), -EINVAL);
	assert_int_equal(ntm_create_mutex(&o, 0, 1), -EINVAL);
	assert_int_equal(ntm_create_mutex(&o, 0, 0), 0);
	assert_int_equal(ntm_create_mutex(&o, 7, UINT32_MAX), 0);
	assert_int_equal(o.mutex.owner, 7);
	assert_int_equal(o.mutex.count, UINT32_MAX);
}

static void mutex_signaled_when_unowned_or_owned_by_waiter(void **s)
{
	struct ntm_obj free_m = mutex(0, 0), held = mutex(3, 1);

	(void)s;
	assert_true(ntm_signaled(&free_m, 1));
	assert_true(ntm_signaled(&held, 3));
	assert_false(ntm_signaled(&held, 4));
}

static void mutex_wait_sets_owner_and_recurses(void **s)
{
	struct ntm_obj o = mutex(0, 0), *objs[] = { &o };
	uint32_t index;

	(void)s;
	assert_int_equal(wait_on(false, objs, 1, 5, NULL, &index), 0);
	assert_int_equal(o.mutex.owner, 5);
	assert_int_equal(o.mutex.count, 1);
	assert_int_equal(wait_on(false, objs, 1, 5, NULL, &index), 0);
	assert_int_equal(o.mutex.count, 2);
	assert_int_equal(wait_on(false, objs, 1, 6, NULL, &index), -ETIMEDOUT);
	assert_int_equal(o.mutex.owner, 5);
}

static void mutex_at_max_count_is_not_signaled_for_its_owner(void **s)
{
	struct ntm_obj o = mutex(2, UINT32_MAX), *objs[] = { &o };
	uint32_t index;

	(void)s;
	assert_int_equal(wait_on(false, objs, 1, 2, NULL, &index), -ETIMEDOUT);
	assert_int_equal(o.mutex.count, UINT32_MAX);
}

static void mutex_unlock_owner_zero_is_einval(void **s)
{
	struct ntm_obj o = mutex(0, 0), h = mutex(1, 1);
	uint32_t prev = POISON;

	(void)s;
	assert_int_equal(ntm_mutex_unlock(&o, 0, &prev), -EINVAL);
	assert_int_equal(ntm_mutex_unlock(&h, 0, &prev), -EINVAL);
	assert_int_equal(prev, POISON);
	assert_int_equal(h.mutex.count, 1);
}

static void mutex_unlock_by_non_owner_is_eperm(void **s)
{
	struct ntm_obj o = mutex(0, 0), h = mutex(1, 2);
	uint32_t prev = POISON;

	(void)s;
	assert_int_equal(ntm_mutex_unlock(&o, 1, &prev), -EPERM);
	assert_int_equal(ntm_mutex_unlock(&h, 2, &prev), -EPERM);
	assert_int_equal(h.mutex.owner, 1);
	assert_int_equal(h.mutex.count, 2);
}

static void mutex_unlock_returns_previous_count_and_frees_at_zero(void **s)
{
	struct ntm_obj h = mutex(1, 2);
	uint32_t prev = POISON;

	(void)s;
	assert_int_equal(ntm_mutex_unlock(&h, 1, &prev), 0);
	assert_int_equal(prev, 2);
	assert_int_equal(h.mutex.owner, 1);
	assert_int_equal(ntm_mutex_unlock(&h, 1, &prev), 0);
	assert_int_equal(prev, 1);
	assert_int_equal(h.mutex.owner, 0);
	assert_int_equal(h.mutex.count, 0);
	assert_true(ntm_signaled(&h, 9));
}

/* ====================================================== abandoned mutex */

static void mutex_kill_owner_zero_is_einval_other_owner_eperm(void **s)
{
	struct ntm_obj h = mutex(1, 1), before;

	(void)s;
	before = h;
	assert_int_equal(ntm_mutex_kill(&h, 0), -EINVAL);
	assert_int_equal(ntm_mutex_kill(&h, 2), -EPERM);
	assert_true(same(&h, &before));
}

static void mutex_kill_abandons_and_unowns(void **s)
{
	struct ntm_obj h = mutex(1, 3);
	uint32_t out[2] = { POISON, POISON };

	(void)s;
	assert_int_equal(ntm_mutex_kill(&h, 1), 0);
	assert_true(h.abandoned);
	assert_true(ntm_signaled(&h, 42));	/* "inherently considered unowned" */
	assert_int_equal(ntm_read(&h, NTM_MUTEX, out), -EOWNERDEAD);
	assert_int_equal(out[0], 0);
	assert_int_equal(out[1], 0);
	assert_int_equal(ntm_mutex_kill(&h, 1), -EPERM);
}

static void abandoned_mutex_unlock_is_eperm(void **s)
{
	struct ntm_obj h = mutex(1, 1);
	uint32_t prev;

	(void)s;
	assert_int_equal(ntm_mutex_kill(&h, 1), 0);
	assert_int_equal(ntm_mutex_unlock(&h, 1, &prev), -EPERM);
	assert_true(h.abandoned);
}

static void abandoned_mutex_wait_is_eownerdead_and_acquires(void **s)
{
	struct ntm_obj e = event(0, 0), h = mutex(1, 1), *objs[] = { &e, &h };
	uint32_t index, out[2];

	(void)s;
	assert_int_equal(ntm_mutex_kill(&h, 1), 0);
	assert_int_equal(wait_on(false, objs, 2, 7, NULL, &index), -EOWNERDEAD);
	assert_int_equal(index, 1);	/* "index is still set to the index of the mutex" */
	assert_false(h.abandoned);
	assert_int_equal(ntm_read(&h, NTM_MUTEX, out), 0);
	assert_int_equal(out[0], 7);
	assert_int_equal(out[1], 1);
	/* taken once more by the same owner: plain success now */
	assert_int_equal(wait_on(false, objs, 2, 7, NULL, &index), 0);
	assert_int_equal(h.mutex.count, 2);
}

static void owner_ids_are_not_interpreted_dead_owner_may_reacquire(void **s)
{
	struct ntm_obj h = mutex(1, 1), *objs[] = { &h };
	uint32_t index;

	(void)s;
	assert_int_equal(ntm_mutex_kill(&h, 1), 0);
	assert_int_equal(wait_on(false, objs, 1, 1, NULL, &index), -EOWNERDEAD);
	assert_int_equal(h.mutex.owner, 1);
}

/* ================================================================ events */

static void create_event_reads_back_as_zero_or_one(void **s)
{
	struct ntm_obj e = event(5, 9);
	uint32_t out[2];

	(void)s;
	assert_int_equal(ntm_read(&e, NTM_EVENT, out), 0);
	assert_int_equal(out[0], 1);	/* manual */
	assert_int_equal(out[1], 1);	/* signaled */
}

static void auto_event_is_designaled_by_acquisition(void **s)
{
	struct ntm_obj e = event(0, 1), *objs[] = { &e };
	uint32_t index;

	(void)s;
	assert_int_equal(wait_on(false, objs, 1, 1, NULL, &index), 0);
	assert_int_equal(e.event.signaled, 0);
	assert_int_equal(wait_on(false, objs, 1, 1, NULL, &index), -ETIMEDOUT);
}

static void manual_event_is_not_affected_by_acquisition(void **s)
{
	struct ntm_obj e = event(1, 1), *objs[] = { &e };
	uint32_t index;

	(void)s;
	assert_int_equal(wait_on(false, objs, 1, 1, NULL, &index), 0);
	assert_int_equal(wait_on(true, objs, 1, 1, NULL, &index), 0);
	assert_int_equal(e.event.signaled, 1);
}

static void event_set_reset_pulse_return_previous_state(void **s)
{
	struct ntm_obj e = event(0, 0);
	uint32_t prev = POISON;

	(void)s;
	assert_int_equal(ntm_event_set(&e, &prev), 0);
	assert_int_equal(prev, 0);
	assert_int_equal(ntm_event_set(&e, &prev), 0);
	assert_int_equal(prev, 1);
	assert_int_equal(ntm_event_reset(&e, &prev), 0);
	assert_int_equal(prev, 1);
	assert_int_equal(e.event.signaled, 0);
	assert_int_equal(ntm_event_reset(&e, &prev), 0);
	assert_int_equal(prev, 0);
}

static void event_pulse_leaves_event_unsignaled(void **s)
{
	struct ntm_obj a = event(0, 1), m = event(1, 0);
	uint32_t prev = POISON;

	(void)s;
	assert_int_equal(ntm_event_pulse(&a, &prev), 0);
	assert_int_equal(prev, 1);
	assert_int_equal(a.event.signaled, 0);
	assert_int_equal(ntm_event_pulse(&m, &prev), 0);
	assert_int_equal(prev, 0);
	assert_int_equal(m.event.signaled, 0);
}

static void pulse_is_seen_by_waits_at_its_instant_only(void **s)
{
	struct ntm_obj st[2] = { event(0, 0), sem(0, 1) };
	struct ntm_call pulse = { .op = NTM_OP_EVENT_PULSE, .nobj = 1, .alert = -1, .obj = { 0 } };
	struct ntm_call any = { .op = NTM_OP_WAIT_ANY, .nobj = 2, .alert = -1, .obj = { 1, 0 }, .arg = 1 };
	struct ntm_call rd = { .op = NTM_OP_EVENT_READ, .nobj = 1, .alert = -1, .obj = { 0 } };
	struct ntm_ret r;

	(void)s;
	ntm_apply(st, &pulse, &r);
	ntm_settle(st, 2, &pulse, &r);
	assert_true(st[0].pulsed);
	assert_int_equal(st[0].event.signaled, 0);
	ntm_apply(st, &any, &r);	/* a waiter at the pulse's instant */
	assert_int_equal(r.ret, 0);
	assert_int_equal(r.out[0], 1);
	ntm_settle(st, 2, &any, &r);
	assert_false(st[0].pulsed);	/* auto-reset: that was the one */
	ntm_apply(st, &any, &r);
	assert_int_equal(r.ret, -ETIMEDOUT);
	ntm_apply(st, &pulse, &r);
	ntm_settle(st, 2, &pulse, &r);
	ntm_apply(st, &rd, &r);	/* "a simultaneous read ... unsignaled" */
	assert_int_equal(r.out[1], 0);
	ntm_settle(st, 2, &rd, &r);
	assert_false(st[0].pulsed);	/* the pulse is over */
}

/* ============================================================== WAIT_ANY */

static void wait_any_acquires_only_one_of_several_signaled(void **s)
{
	struct ntm_obj a = sem(1, 1), b = sem(1, 1), c = event(0, 1), *objs[] = { &a, &b, &c };
	uint32_t index;

	(void)s;
	assert_int_equal(wait_on(false, objs, 3, 1, NULL, &index), 0);
	assert_int_equal(index, 0);
	assert_int_equal(a.sem.count, 0);
	assert_int_equal(b.sem.count, 1);
	assert_int_equal(c.event.signaled, 1);
}

static void wait_any_takes_lowest_signaled_index_of_mixed_types(void **s)
{
	struct ntm_obj a = sem(0, 1), m = mutex(9, 1), e = event(0, 1), b = sem(1, 1);
	struct ntm_obj *objs[] = { &a, &m, &e, &b };
	uint32_t index;

	(void)s;
	assert_int_equal(wait_on(false, objs, 4, 1, NULL, &index), 0);
	assert_int_equal(index, 2);
	assert_int_equal(e.event.signaled, 0);
	assert_int_equal(b.sem.count, 1);
}

static void wait_any_same_object_twice_reports_lowest_index(void **s)
{
	struct ntm_obj a = sem(0, 1), b = sem(2, 2), *objs[] = { &a, &b, &a, &b };
	uint32_t index;

	(void)s;
	assert_int_equal(wait_on(false, objs, 4, 1, NULL, &index), 0);
	assert_int_equal(index, 1);
	assert_int_equal(b.sem.count, 1);
}

static void wait_any_may_acquire_any_signaled_object(void **s)
{
	struct ntm_obj a = sem(1, 1), b = event(0, 1), al = event(1, 1), *objs[] = { &a, &b, &a };
	struct ntm_wait w = { .count = 3, .owner = 1, .objs = objs, .has_alert = true, .alert = &al };
	uint32_t index = POISON;

	(void)s;
	assert_int_equal(ntm_wait_any_pick(&w, 1, &index), 0);	/* b, though a is signaled */
	assert_int_equal(index, 1);
	assert_int_equal(b.event.signaled, 0);
	assert_int_equal(a.sem.count, 1);
	/* a at index 2 is a at index 0: reported at the lowest */
	assert_int_equal(ntm_wait_any_pick(&w, 2, &index), 0);
	assert_int_equal(index, 0);
	a.sem.count = 1;
	/* the alert (pick 3) only when no object can be taken */
	assert_int_equal(ntm_wait_any_pick(&w, 3, &index), 0);
	assert_int_equal(index, 0);
	assert_int_equal(ntm_wait_any_pick(&w, 3, &index), 0);
	assert_int_equal(index, 3);
}

static void wait_any_objs_have_priority_over_alert(void **s)
{
	struct ntm_obj a = sem(1, 1), al = event(0, 1), *objs[] = { &a };
	uint32_t index;

	(void)s;
	assert_int_equal(wait_on(false, objs, 1, 1, &al, &index), 0);
	assert_int_equal(index, 0);
	assert_int_equal(al.event.signaled, 1);
}

static void wait_any_alert_alone_returns_count_and_acquires_it(void **s)
{
	struct ntm_obj a = sem(0, 1), b = mutex(3, 1), al = event(0, 1), *objs[] = { &a, &b };
	uint32_t index;

	(void)s;
	assert_int_equal(wait_on(false, objs, 2, 1, &al, &index), 0);
	assert_int_equal(index, 2);
	assert_int_equal(al.event.signaled, 0);
	assert_int_equal(wait_on(false, objs, 2, 1, &al, &index), -ETIMEDOUT);
}

static void wait_any_same_event_in_objs_and_alert_reports_objs_index(void **s)
{
	struct ntm_obj a = sem(0, 1), e = event(1, 1), *objs[] = { &a, &e };
	uint32_t index;

	(void)s;
	assert_int_equal(wait_on(false, objs, 2, 1, &e, &index), 0);
	assert_int_equal(index, 1);
}

static void wait_any_past_deadline_with_nothing_signaled_times_out(void **s)
{
	struct ntm_obj a = sem(0, 1), m = mutex(2, 1), e = event(1, 0), al = event(0, 0);
	struct ntm_obj *objs[] = { &a, &m, &e }, before[4];
	uint32_t index;

	(void)s;
	before[0] = a; before[1] = m; before[2] = e; before[3] = al;
	assert_int_equal(wait_on(false, objs, 3, 1, &al, &index), -ETIMEDOUT);
	assert_int_equal(index, POISON);
	assert_true(same(&a, &before[0]) && same(&m, &before[1]) && same(&e, &before[2]) && same(&al, &before[3]));
}

static void wait_any_of_no_objects_times_out_or_takes_alert(void **s)
{
	struct ntm_obj al = event(0, 1), *objs[1] = { NULL };
	uint32_t index;

	(void)s;
	assert_int_equal(wait_on(false, objs, 0, 1, NULL, &index), -ETIMEDOUT);
	assert_int_equal(wait_on(false, objs, 0, 1, &al, &index), 0);
	assert_int_equal(index, 0);
}

/* ============================================================== WAIT_ALL */

static void wait_all_acquires_every_object_at_once(void **s)
{
	struct ntm_obj a = sem(2, 2), m = mutex(0, 0), e = event(0, 1), me = event(1, 1);
	struct ntm_obj *objs[] = { &a, &m, &e, &me };
	uint32_t index;

	(void)s;
	assert_int_equal(wait_on(true, objs, 4, 4, NULL, &index), 0);
	assert_int_equal(index, 0);	/* "always filled with zero on success" */
	assert_int_equal(a.sem.count, 1);
	assert_int_equal(m.mutex.owner, 4);
	assert_int_equal(m.mutex.count, 1);
	assert_int_equal(e.event.signaled, 0);
	assert_int_equal(me.event.signaled, 1);
}

static void wait_all_not_all_signaled_times_out_and_modifies_nothing(void **s)
{
	struct ntm_obj a = sem(1, 2), m = mutex(0, 0), e = event(0, 0);
	struct ntm_obj *objs[] = { &a, &m, &e }, b0, b1;
	uint32_t index;

	(void)s;
	b0 = a; b1 = m;
	assert_int_equal(wait_on(true, objs, 3, 4, NULL, &index), -ETIMEDOUT);
	assert_true(same(&a, &b0));
	assert_true(same(&m, &b1));
}

static void wait_all_alert_returns_count_and_leaves_objs(void **s)
{
	struct ntm_obj a = sem(1, 2), e = event(0, 0), al = event(0, 1), *objs[] = { &a, &e };
	uint32_t index;

	(void)s;
	assert_int_equal(wait_on(true, objs, 2, 1, &al, &index), 0);
	assert_int_equal(index, 2);
	assert_int_equal(a.sem.count, 1);
	assert_int_equal(al.event.signaled, 0);
}

static void wait_all_objs_have_priority_over_alert(void **s)
{
	struct ntm_obj a = sem(1, 2), al = event(0, 1), *objs[] = { &a };
	uint32_t index;

	(void)s;
	assert_int_equal(wait_on(true, objs, 1, 1, &al, &index), 0);
	assert_int_equal(index, 0);
	assert_int_equal(a.sem.count, 0);
	assert_int_equal(al.event.signaled, 1);
}

static void wait_all_abandoned_mutex_is_eownerdead_and_acquires_all(void **s)
{
	struct ntm_obj a = sem(1, 1), m = mutex(1, 1), *objs[] = { &a, &m };
	uint32_t index;

	(void)s;
	assert_int_equal(ntm_mutex_kill(&m, 1), 0);
	assert_int_equal(wait_on(true, objs, 2, 3, NULL, &index), -EOWNERDEAD);
	assert_int_equal(index, 0);
	assert_int_equal(a.sem.count, 0);
	assert_int_equal(m.mutex.owner, 3);
	assert_false(m.abandoned);
}

static void wait_all_of_no_objects_succeeds_at_once(void **s)
{
	struct ntm_obj al = event(0, 1), *objs[1] = { NULL };
	uint32_t index;

	(void)s;
	assert_int_equal(wait_on(true, objs, 0, 1, NULL, &index), 0);
	assert_int_equal(index, 0);
	assert_int_equal(wait_on(true, objs, 0, 1, &al, &index), 0);
	assert_int_equal(index, 0);
	assert_int_equal(al.event.signaled, 1);	/* "the former takes priority" */
}

/* ========================================================= error table */

static void wait_on_a_non_object_is_einval(void **s)
{
	struct ntm_obj a = sem(1, 1), *objs[] = { &a, NULL };
	uint32_t index;

	(void)s;
	assert_int_equal(wait_on(false, objs, 2, 1, NULL, &index), -EINVAL);
	assert_int_equal(wait_on(true, objs, 2, 1, NULL, &index), -EINVAL);
	assert_int_equal(a.sem.count, 1);	/* even though objs[0] is signaled */
}

static void wait_alert_that_is_not_an_event_is_einval(void **s)
{
	struct ntm_obj a = sem(0, 1), m = mutex(0, 0), bs = sem(1, 1), *objs[] = { &a };
	struct ntm_wait w = { .count = 1, .owner = 1, .objs = objs, .has_alert = true, .alert = NULL };
	uint32_t index;

	(void)s;
	assert_int_equal(wait_on(false, objs, 1, 1, &bs, &index), -EINVAL);
	assert_int_equal(wait_on(true, objs, 1, 1, &m, &index), -EINVAL);
	assert_int_equal(bs.sem.count, 1);
	/* an alert descriptor that is no object of this instance */
	assert_int_equal(ntm_wait_any(&w, &index), -EINVAL);
	assert_int_equal(ntm_wait_all(&w, &index), -EINVAL);
}

static void wait_all_same_object_twice_is_einval(void **s)
{
	struct ntm_obj a = sem(2, 2), e = event(1, 1), *objs[] = { &a, &a }, *objs2[] = { &e };
	uint32_t index;

	(void)s;
	assert_int_equal(wait_on(true, objs, 2, 1, NULL, &index), -EINVAL);
	assert_int_equal(a.sem.count, 2);
	assert_int_equal(wait_on(true, objs2, 1, 1, &e, &index), -EINVAL);
	assert_int_equal(wait_on(false, objs, 2, 1, NULL, &index), 0);	/* allowed in WAIT_ANY */
}

static void wait_argument_rules_are_einval(void **s)
{
	struct ntm_obj a = sem(5, 5), *objs[NTM_MAX_WAIT + 1];
	struct ntm_wait w = { .count = 1, .owner = 1, .objs = objs };
	uint32_t index;

	(void)s;
	for (int i = 0; i <= NTM_MAX_WAIT; i++)
		objs[i] = &a;
	w.owner = 0;
	assert_int_equal(ntm_wait_any(&w, &index), -EINVAL);
	assert_int_equal(ntm_wait_all(&w, &index), -EINVAL);
	w.owner = 1;
	w.pad = 1;
	assert_int_equal(ntm_wait_any(&w, &index), -EINVAL);
	w.pad = 0;
	w.flags = 2;
	assert_int_equal(ntm_wait_all(&w, &index), -EINVAL);
	w.flags = 1;	/* NTSYNC_WAIT_REALTIME */
	assert_int_equal(ntm_wait_any(&w, &index), 0);
	w.flags = 0;
	w.count = NTM_MAX_WAIT + 1;
	assert_int_equal(ntm_wait_any(&w, &index), -EINVAL);
	w.count = NTM_MAX_WAIT;
	assert_int_equal(ntm_wait_any(&w, &index), 0);	/* 64 is allowed */
	assert_int_equal(a.sem.count, 3);
}

static void object_ioctls_on_the_wrong_type_are_einval(void **s)
{
	struct ntm_obj se = sem(1, 3), mu = mutex(1, 1), ev = event(0, 1), before[3];
	struct ntm_obj *all[] = { &se, &mu, &ev };
	uint32_t prev = POISON, out[2] = { POISON, POISON };

	(void)s;
	before[0] = se; before[1] = mu; before[2] = ev;
	assert_int_equal(ntm_sem_release(&mu, 1, &prev), -EINVAL);
	assert_int_equal(ntm_sem_release(&ev, 1, &prev), -EINVAL);
	assert_int_equal(ntm_mutex_unlock(&se, 1, &prev), -EINVAL);
	assert_int_equal(ntm_mutex_unlock(&ev, 1, &prev), -EINVAL);
	assert_int_equal(ntm_mutex_kill(&se, 1), -EINVAL);
	assert_int_equal(ntm_mutex_kill(&ev, 1), -EINVAL);
	assert_int_equal(ntm_event_set(&se, &prev), -EINVAL);
	assert_int_equal(ntm_event_reset(&mu, &prev), -EINVAL);
	assert_int_equal(ntm_event_pulse(&se, &prev), -EINVAL);
	assert_int_equal(ntm_read(&mu, NTM_SEM, out), -EINVAL);
	assert_int_equal(ntm_read(&ev, NTM_MUTEX, out), -EINVAL);
	assert_int_equal(ntm_read(&se, NTM_EVENT, out), -EINVAL);
	assert_int_equal(prev, POISON);
	assert_int_equal(out[0], POISON);
	for (int i = 0; i < 3; i++)
		assert_true(same(all[i], &before[i]));
}

/* ================================================= calls on a vector */

static void apply_matches_the_direct_functions(void **s)
{
	struct ntm_obj st[3] = { sem(0, 3), mutex(0, 0), event(0, 1) };
	struct ntm_call rel = { .op = NTM_OP_SEM_RELEASE, .nobj = 1, .alert = -1, .obj = { 0 }, .arg = 2 };
	struct ntm_call any = { .op = NTM_OP_WAIT_ANY, .nobj = 3, .alert = 2, .obj = { 1, 0, 2 }, .arg = 6 };
	struct ntm_call all = { .op = NTM_OP_WAIT_ALL, .nobj = 2, .alert = 2, .obj = { 0, 1 }, .arg = 6 };
	struct ntm_call rd = { .op = NTM_OP_MUTEX_READ, .nobj = 1, .alert = -1, .obj = { 1 } };
	struct ntm_ret r;

	(void)s;
	assert_int_equal(ntm_apply(st, &rel, &r), 0);
	assert_int_equal(r.out[0], 0);
	assert_int_equal(ntm_apply(st, &any, &r), 0);
	assert_int_equal(r.out[0], 0);	/* the free mutex, index 0 */
	assert_int_equal(ntm_apply(st, &all, &r), 0);
	assert_int_equal(r.out[0], 0);
	assert_int_equal(st[0].sem.count, 1);
	assert_int_equal(st[1].mutex.count, 2);
	assert_int_equal(ntm_apply(st, &rd, &r), 0);
	assert_int_equal(r.out[0], 6);
	assert_int_equal(r.out[1], 2);
	assert_int_equal(st[2].event.signaled, 1);	/* the alert never needed */
}

static void results_compare_outputs_only_where_defined(void **s)
{
	struct ntm_call any = { .op = NTM_OP_WAIT_ANY, .nobj = 2, .alert = -1, .obj = { 0, 1 }, .arg = 1 };
	struct ntm_ret t1 = { -ETIMEDOUT, { 1, 2 } }, t2 = { -ETIMEDOUT, { 3, 4 } };
	struct ntm_ret i0 = { 0, { 0, 9 } }, i1 = { 0, { 1, 9 } }, d0 = { -EOWNERDEAD, { 0, 0 } };

	(void)s;
	assert_true(ntm_ret_equal(&any, &t1, &t2));
	assert_false(ntm_ret_equal(&any, &i0, &i1));
	assert_false(ntm_ret_equal(&any, &i0, &d0));
	assert_false(ntm_ret_equal(&any, &i0, &t1));
}

static void pure_calls_are_those_that_cannot_change_state(void **s)
{
	struct ntm_obj st[3] = { sem(0, 3), event(1, 0), event(0, 0) };
	struct ntm_call any = { .op = NTM_OP_WAIT_ANY, .nobj = 2, .alert = -1, .obj = { 1, 2 }, .arg = 1 };
	struct ntm_call set = { .op = NTM_OP_EVENT_SET, .nobj = 1, .alert = -1, .obj = { 2 } };
	struct ntm_ret manual = { 0, { 0 } }, autoev = { 0, { 1 } }, to = { -ETIMEDOUT, { 0 } };
	struct ntm_ret was_set = { 0, { 1 } }, was_clear = { 0, { 0 } };

	(void)s;
	assert_true(ntm_call_is_pure(st, &any, &manual));
	assert_false(ntm_call_is_pure(st, &any, &autoev));
	assert_true(ntm_call_is_pure(st, &any, &to));
	assert_true(ntm_call_is_pure(st, &set, &was_set));
	assert_false(ntm_call_is_pure(st, &set, &was_clear));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(create_sem_count_above_max_is_einval),
		cmocka_unit_test(sem_signaled_iff_count_nonzero),
		cmocka_unit_test(sem_wait_decrements_by_one_until_unsignaled),
		cmocka_unit_test(sem_release_adds_and_returns_previous_count),
		cmocka_unit_test(sem_release_past_max_is_eoverflow_and_unchanged),
		cmocka_unit_test(sem_release_does_not_wrap_at_32_bits),
		cmocka_unit_test(create_mutex_owner_and_count_must_agree),
		cmocka_unit_test(mutex_signaled_when_unowned_or_owned_by_waiter),
		cmocka_unit_test(mutex_wait_sets_owner_and_recurses),
		cmocka_unit_test(mutex_at_max_count_is_not_signaled_for_its_owner),
		cmocka_unit_test(mutex_unlock_owner_zero_is_einval),
		cmocka_unit_test(mutex_unlock_by_non_owner_is_eperm),
		cmocka_unit_test(mutex_unlock_returns_previous_count_and_frees_at_zero),
		cmocka_unit_test(mutex_kill_owner_zero_is_einval_other_owner_eperm),
		cmocka_unit_test(mutex_kill_abandons_and_unowns),
		cmocka_unit_test(abandoned_mutex_unlock_is_eperm),
		cmocka_unit_test(abandoned_mutex_wait_is_eownerdead_and_acquires),
		cmocka_unit_test(owner_ids_are_not_interpreted_dead_owner_may_reacquire),
		cmocka_unit_test(create_event_reads_back_as_zero_or_one),
		cmocka_unit_test(auto_event_is_designaled_by_acquisition),
		cmocka_unit_test(manual_event_is_not_affected_by_acquisition),
		cmocka_unit_test(event_set_reset_pulse_return_previous_state),
		cmocka_unit_test(event_pulse_leaves_event_unsignaled),
		cmocka_unit_test(pulse_is_seen_by_waits_at_its_instant_only),
		cmocka_unit_test(wait_any_acquires_only_one_of_several_signaled),
		cmocka_unit_test(wait_any_takes_lowest_signaled_index_of_mixed_types),
		cmocka_unit_test(wait_any_same_object_twice_reports_lowest_index),
		cmocka_unit_test(wait_any_may_acquire_any_signaled_object),
		cmocka_unit_test(wait_any_objs_have_priority_over_alert),
		cmocka_unit_test(wait_any_alert_alone_returns_count_and_acquires_it),
		cmocka_unit_test(wait_any_same_event_in_objs_and_alert_reports_objs_index),
		cmocka_unit_test(wait_any_past_deadline_with_nothing_signaled_times_out),
		cmocka_unit_test(wait_any_of_no_objects_times_out_or_takes_alert),
		cmocka_unit_test(wait_all_acquires_every_object_at_once),
		cmocka_unit_test(wait_all_not_all_signaled_times_out_and_modifies_nothing),
		cmocka_unit_test(wait_all_alert_returns_count_and_leaves_objs),
		cmocka_unit_test(wait_all_objs_have_priority_over_alert),
		cmocka_unit_test(wait_all_abandoned_mutex_is_eownerdead_and_acquires_all),
		cmocka_unit_test(wait_all_of_no_objects_succeeds_at_once),
		cmocka_unit_test(wait_on_a_non_object_is_einval),
		cmocka_unit_test(wait_alert_that_is_not_an_event_is_einval),
		cmocka_unit_test(wait_all_same_object_twice_is_einval),
		cmocka_unit_test(wait_argument_rules_are_einval),
		cmocka_unit_test(object_ioctls_on_the_wrong_type_are_einval),
		cmocka_unit_test(apply_matches_the_direct_functions),
		cmocka_unit_test(results_compare_outputs_only_where_defined),
		cmocka_unit_test(pure_calls_are_those_that_cannot_change_state),
	};

	return cmocka_run_group_tests_name("model", tests, NULL, NULL);
}
