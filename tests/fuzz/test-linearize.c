// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test-linearize: the linearizability checker (linearize.c) on hand-made
 * histories, on the host.  Each non-linearizable history here is one that
 * a real fault produces (the non-atomic poll of issue 14, mainline's
 * duplicate-index race, a lost or doubled acquisition); each linearizable
 * one differs from a bad one only in timing or a result, so a checker that
 * says "linearizable" to everything, or to nothing, fails.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "linearize.h"

static struct ntl_op ops[NTL_MAX_OPS];
static struct ntl_history H;

static void begin(void)
{
	memset(&H, 0, sizeof(H));
	memset(ops, 0, sizeof(ops));
	H.ops = ops;
}

static int add_obj(struct ntm_obj o)
{
	H.init[H.nobj] = o;
	return (int)H.nobj++;
}

static int sem(uint32_t c, uint32_t m)
{
	struct ntm_obj o;

	assert_int_equal(ntm_create_sem(&o, c, m), 0);
	return add_obj(o);
}

static int mutex(uint32_t owner, uint32_t c)
{
	struct ntm_obj o;

	assert_int_equal(ntm_create_mutex(&o, owner, c), 0);
	return add_obj(o);
}

static int event(uint32_t manual, uint32_t sig)
{
	struct ntm_obj o;

	assert_int_equal(ntm_create_event(&o, manual, sig), 0);
	return add_obj(o);
}

/* One call on one object: thread, [inv, res], result and output. */
static void op1(uint32_t thread, uint64_t inv, uint64_t res, enum ntm_op op, int obj, uint32_t arg,
		int32_t ret, uint32_t out0, uint32_t out1)
{
	struct ntl_op *o = &ops[H.nops++];

	o->thread = thread;
	o->inv = inv;
	o->res = res;
	o->call = (struct ntm_call){ .op = op, .nobj = 1, .alert = -1, .obj = { (int8_t)obj }, .arg = arg };
	o->ret = (struct ntm_ret){ ret, { out0, out1 } };
}

/* A poll: objs given as a -1-terminated list. */
static void poll(uint32_t thread, uint64_t inv, uint64_t res, bool all, const int *objs, int alert,
		 uint32_t owner, int32_t ret, uint32_t index)
{
	struct ntl_op *o = &ops[H.nops++];

	o->thread = thread;
	o->inv = inv;
	o->res = res;
	o->call = (struct ntm_call){ .op = all ? NTM_OP_WAIT_ALL : NTM_OP_WAIT_ANY, .alert = (int8_t)alert, .arg = owner };
	for (; *objs >= 0; objs++)
		o->call.obj[o->call.nobj++] = (int8_t)*objs;
	o->ret = (struct ntm_ret){ ret, { index, 0 } };
}

static int setup(void **s)
{
	(void)s;
	begin();
	return 0;
}

static enum ntl_verdict check(void)
{
	return ntl_check(&H, 0, NULL, NULL, NULL);
}

/* ------------------------------------------------------------------ */

static void sequential_history_that_follows_the_spec_is_accepted(void **s)
{
	int a = sem(0, 2), e = event(0, 0);

	(void)s;
	op1(1, 0, 10, NTM_OP_SEM_RELEASE, a, 2, 0, 0, 0);
	poll(1, 20, 30, false, (int[]){ e, a, -1 }, -1, 1, 0, 1);
	op1(1, 40, 50, NTM_OP_EVENT_SET, e, 0, 0, 0, 0);
	poll(1, 60, 70, true, (int[]){ e, a, -1 }, -1, 1, 0, 0);
	op1(1, 80, 90, NTM_OP_SEM_READ, a, 0, 0, 0, 2);
	op1(1, 80, 90, NTM_OP_EVENT_READ, e, 0, 0, 0, 0);
	assert_int_equal(check(), NTL_OK);
}

static void sequential_history_with_one_wrong_result_is_rejected(void **s)
{
	int a = sem(0, 2), e = event(0, 0);

	(void)s;
	op1(1, 0, 10, NTM_OP_SEM_RELEASE, a, 2, 0, 0, 0);
	poll(1, 20, 30, false, (int[]){ e, a, -1 }, -1, 1, 0, 1);
	op1(1, 40, 50, NTM_OP_EVENT_SET, e, 0, 0, 0, 0);
	poll(1, 60, 70, true, (int[]){ e, a, -1 }, -1, 1, 0, 0);
	op1(1, 80, 90, NTM_OP_SEM_READ, a, 0, 0, 1, 2);	/* count 0 after both takes */
	assert_int_equal(check(), NTL_VIOLATION);
}

/*
 * Issue 14's fault: manual events E1 (clear) and E2 (set); while a poll of
 * both runs, E1 is set and then E2 reset.  At every instant one of them is
 * signaled, so ETIMEDOUT is not linearizable.
 */
static void build_non_atomic_poll(int32_t poll_ret, uint32_t index)
{
	int e1 = event(1, 0), e2 = event(1, 1);

	op1(1, 10, 20, NTM_OP_EVENT_SET, e1, 0, 0, 0, 0);
	op1(1, 30, 40, NTM_OP_EVENT_RESET, e2, 0, 0, 1, 0);
	poll(2, 0, 50, false, (int[]){ e1, e2, -1 }, -1, 7, poll_ret, index);
}

static void non_atomic_poll_timeout_is_rejected(void **s)
{
	(void)s;
	begin();
	build_non_atomic_poll(-ETIMEDOUT, 0);
	assert_int_equal(check(), NTL_VIOLATION);
}

static void poll_that_sees_either_event_is_accepted(void **s)
{
	(void)s;
	begin();
	build_non_atomic_poll(0, 1);	/* before the set: E2 */
	assert_int_equal(check(), NTL_OK);
	begin();
	build_non_atomic_poll(0, 0);	/* after the set: E1 */
	assert_int_equal(check(), NTL_OK);
}

static void timeout_is_accepted_when_both_were_clear_at_some_instant(void **s)
{
	int e1, e2;

	(void)s;
	begin();
	e1 = event(1, 0);
	e2 = event(1, 1);
	/* reset E2 first, then set E1: a gap where neither is signaled */
	op1(1, 10, 20, NTM_OP_EVENT_RESET, e2, 0, 0, 1, 0);
	op1(1, 30, 40, NTM_OP_EVENT_SET, e1, 0, 0, 0, 0);
	poll(2, 0, 50, false, (int[]){ e1, e2, -1 }, -1, 7, -ETIMEDOUT, 0);
	assert_int_equal(check(), NTL_OK);
}

static void real_time_order_is_respected(void **s)
{
	int a;

	(void)s;
	begin();
	a = sem(0, 1);
	op1(1, 0, 10, NTM_OP_SEM_RELEASE, a, 1, 0, 0, 0);
	poll(2, 20, 30, false, (int[]){ a, -1 }, -1, 2, -ETIMEDOUT, 0);	/* after the release */
	assert_int_equal(check(), NTL_VIOLATION);
	H.ops[1].inv = 5;	/* overlapping the release: the poll may come first */
	assert_int_equal(check(), NTL_OK);
}

static void one_token_taken_twice_is_rejected(void **s)
{
	int a;

	(void)s;
	begin();
	a = sem(1, 1);
	poll(1, 0, 100, false, (int[]){ a, -1 }, -1, 1, 0, 0);
	poll(2, 0, 100, false, (int[]){ a, -1 }, -1, 2, 0, 0);
	assert_int_equal(check(), NTL_VIOLATION);
	H.ops[1].ret.ret = -ETIMEDOUT;
	assert_int_equal(check(), NTL_OK);
}

/*
 * "only acquires one object, even if multiple objects are signaled": any
 * one of them, at the lowest index of that object, and never the alert
 * while an object is signaled.
 */
static void wait_any_may_take_any_signaled_object_at_its_lowest_index(void **s)
{
	int a, b, al;

	(void)s;
	begin();
	a = sem(1, 1);
	b = sem(1, 1);
	al = event(1, 1);
	poll(1, 0, 10, false, (int[]){ a, b, -1 }, -1, 1, 0, 1);	/* b, though a is signaled too */
	op1(1, 20, 30, NTM_OP_SEM_READ, a, 0, 0, 1, 1);
	assert_int_equal(check(), NTL_OK);
	begin();
	a = sem(1, 1);
	b = sem(1, 1);
	poll(1, 0, 10, false, (int[]){ b, a, b, -1 }, -1, 1, 0, 2);	/* b, not at its lowest index */
	assert_int_equal(check(), NTL_VIOLATION);
	begin();
	a = sem(1, 1);
	al = event(1, 1);
	poll(1, 0, 10, false, (int[]){ a, -1 }, al, 1, 0, 1);	/* the alert while a is signaled */
	assert_int_equal(check(), NTL_VIOLATION);
}

/* Mainline's race: [S, S] with S signaled reported as index 1. */
static void duplicate_object_reported_at_its_later_index_is_rejected(void **s)
{
	int a;

	(void)s;
	begin();
	a = sem(0, 2);
	op1(1, 0, 50, NTM_OP_SEM_RELEASE, a, 1, 0, 0, 0);
	poll(2, 10, 40, false, (int[]){ a, a, -1 }, -1, 2, 0, 1);
	assert_int_equal(check(), NTL_VIOLATION);
	H.ops[1].ret.out[0] = 0;
	assert_int_equal(check(), NTL_OK);
}

static void wait_all_is_atomic_across_its_objects(void **s)
{
	int a, b;

	(void)s;
	begin();
	a = sem(1, 1);
	b = sem(1, 1);
	/* thread 1 takes a, then b is taken by a wait-all that needs a too */
	poll(1, 0, 10, false, (int[]){ a, -1 }, -1, 1, 0, 0);
	poll(2, 20, 30, true, (int[]){ a, b, -1 }, -1, 2, 0, 0);
	assert_int_equal(check(), NTL_VIOLATION);
	H.ops[1].ret.ret = -ETIMEDOUT;
	op1(3, 40, 50, NTM_OP_SEM_READ, b, 0, 0, 1, 1);	/* b untouched */
	assert_int_equal(check(), NTL_OK);
}

static void mutex_owner_and_abandonment_are_followed(void **s)
{
	int m;

	(void)s;
	begin();
	m = mutex(0, 0);
	poll(1, 0, 10, false, (int[]){ m, -1 }, -1, 5, 0, 0);
	op1(2, 20, 30, NTM_OP_MUTEX_UNLOCK, m, 6, -EPERM, 0, 0);
	op1(1, 20, 30, NTM_OP_MUTEX_KILL, m, 5, 0, 0, 0);
	poll(2, 40, 50, false, (int[]){ m, -1 }, -1, 6, -EOWNERDEAD, 0);
	op1(2, 60, 70, NTM_OP_MUTEX_READ, m, 0, 0, 6, 1);
	assert_int_equal(check(), NTL_OK);
	H.ops[3].ret.ret = 0;	/* an abandoned mutex must say EOWNERDEAD */
	assert_int_equal(check(), NTL_VIOLATION);
}

/*
 * A pulse wakes the waits in progress at its instant (also polls: the
 * driver queues them before it gives up), never a call made after it, and
 * a read never sees it.
 */
static void pulse_wakes_only_waits_in_progress(void **s)
{
	int e, a;

	(void)s;
	begin();
	e = event(0, 0);
	a = sem(1, 1);
	op1(1, 10, 20, NTM_OP_EVENT_PULSE, e, 0, 0, 0, 0);
	poll(2, 0, 30, false, (int[]){ e, a, -1 }, -1, 2, 0, 0);	/* woken through e */
	assert_int_equal(check(), NTL_OK);
	H.ops[1].inv = 25;	/* began after the pulse returned: it cannot */
	assert_int_equal(check(), NTL_VIOLATION);
	H.ops[1].inv = 0;
	poll(3, 0, 30, false, (int[]){ e, -1 }, -1, 3, 0, 0);	/* auto-reset: one waiter only */
	assert_int_equal(check(), NTL_VIOLATION);
	H.ops[2].ret.ret = -ETIMEDOUT;
	op1(4, 12, 18, NTM_OP_EVENT_READ, e, 0, 0, 0, 0);	/* a read sees it unsignaled */
	assert_int_equal(check(), NTL_OK);
	H.ops[3].ret.out[1] = 1;
	assert_int_equal(check(), NTL_VIOLATION);
}

static void independent_objects_are_checked_as_separate_parts(void **s)
{
	struct ntl_stats st = { 0 };
	int a, b, c;

	(void)s;
	begin();
	a = sem(0, 5);
	b = sem(0, 5);
	c = event(0, 0);
	op1(1, 0, 10, NTM_OP_SEM_RELEASE, a, 1, 0, 0, 0);
	op1(2, 0, 10, NTM_OP_SEM_RELEASE, b, 1, 0, 0, 0);
	poll(1, 20, 30, false, (int[]){ b, c, -1 }, -1, 1, 0, 0);
	op1(2, 20, 30, NTM_OP_SEM_READ, a, 0, 0, 1, 5);
	assert_int_equal(ntl_check(&H, 0, &st, NULL, NULL), NTL_OK);
	assert_int_equal(st.parts, 2);	/* {a} and {b, c} */
	assert_int_equal(st.ops, 4);
	assert_int_equal(st.histories, 1);
}

static void search_budget_is_reported_as_gave_up(void **s)
{
	int a;

	(void)s;
	begin();
	a = sem(0, 100);
	for (int i = 0; i < 20; i++)
		op1((uint32_t)i, 0, 100, NTM_OP_SEM_RELEASE, a, 1, 0, (uint32_t)(19 - i), 0);
	assert_int_equal(ntl_check(&H, 5, NULL, NULL, NULL), NTL_GAVE_UP);
	assert_int_equal(ntl_check(&H, 0, NULL, NULL, NULL), NTL_OK);
}

/* The non-atomic poll buried in calls that do not matter shrinks to its core. */
static void minimize_keeps_the_core_of_the_non_atomic_poll(void **s)
{
	struct ntl_history bad;
	struct ntl_op bad_ops[NTL_MAX_OPS];
	int x, e1, e2;

	(void)s;
	begin();
	x = sem(3, 9);
	e1 = event(1, 0);
	e2 = event(1, 1);
	op1(3, 0, 5, NTM_OP_SEM_RELEASE, x, 1, 0, 3, 0);		/* another part entirely */
	op1(1, 0, 5, NTM_OP_EVENT_SET, e2, 0, 0, 1, 0);		/* pure: it was set */
	op1(1, 6, 8, NTM_OP_EVENT_RESET, e1, 0, 0, 0, 0);		/* pure, and first */
	op1(1, 10, 20, NTM_OP_EVENT_SET, e1, 0, 0, 0, 0);
	op1(3, 12, 18, NTM_OP_EVENT_READ, e1, 0, 0, 1, 1);		/* pure */
	op1(1, 30, 40, NTM_OP_EVENT_RESET, e2, 0, 0, 1, 0);
	poll(2, 9, 50, false, (int[]){ e1, e2, -1 }, -1, 7, -ETIMEDOUT, 0);
	op1(1, 60, 70, NTM_OP_EVENT_READ, e2, 0, 0, 1, 0);		/* after everything */
	op1(2, 60, 70, NTM_OP_EVENT_READ, e1, 0, 0, 1, 1);
	assert_int_equal(ntl_check(&H, 0, NULL, &bad, bad_ops), NTL_VIOLATION);
	assert_int_equal(bad.nobj, 2);	/* the part of e1 and e2 */
	/*
	 * Left: the set of e1, the reset of e2 and the poll; and of those only
	 * the set's and the poll's results matter: e2 is set from the start
	 * and e1 is set before e2's reset begins, whatever that reset did.
	 */
	assert_int_equal(ntl_minimize(&bad), 2);
	assert_int_equal(bad.nops, 3);
	assert_int_equal(bad.nobj, 2);
	assert_int_equal(ntl_check(&bad, 0, NULL, NULL, NULL), NTL_VIOLATION);
	ntl_print(stdout, &bad, "    ");
	for (uint32_t i = 0; i < bad.nops; i++) {
		uint8_t op = bad.ops[i].call.op;

		assert_true(op == NTM_OP_EVENT_SET || op == NTM_OP_EVENT_RESET || op == NTM_OP_WAIT_ANY);
		assert_int_equal(bad.ops[i].whatever, op == NTM_OP_EVENT_RESET);
	}
	/* the initial state is the one after the two calls that came first */
	assert_int_equal(bad.init[0].event.signaled + bad.init[1].event.signaled, 1);
}

/*
 * A long random history made linearizable by construction: run the model
 * sequentially, give each call a linearization point, and an interval
 * around it that overlaps its neighbours.  Accepted; one impossible read
 * added anywhere makes it rejected.
 */
static uint64_t rs = 12345;

static uint32_t rnd(uint32_t n)
{
	rs = rs * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)((rs >> 33) % n);
}

static void random_linearizable_history_is_accepted(void **s)
{
	struct ntm_obj st[6];
	struct ntl_stats stats = { 0 };

	(void)s;
	for (int round = 0; round < 20; round++) {
		begin();
		sem(1, 3);
		sem(0, 2);
		mutex(0, 0);
		event(0, 1);
		event(1, 0);
		event(0, 0);
		memcpy(st, H.init, sizeof(st));
		for (uint32_t i = 0; i < 120; i++) {
			struct ntl_op *o = &ops[H.nops++];
			uint64_t t = 1000 + 100 * (uint64_t)i;
			uint32_t k = rnd(8), owner = 1 + rnd(3);

			o->thread = owner;
			o->call = (struct ntm_call){ .alert = -1, .nobj = 1, .arg = owner };
			switch (k) {
			case 0: o->call.op = NTM_OP_SEM_RELEASE; o->call.obj[0] = (int8_t)rnd(2); o->call.arg = 1; break;
			case 1: o->call.op = NTM_OP_MUTEX_UNLOCK; o->call.obj[0] = 2; break;
			case 2: o->call.op = NTM_OP_EVENT_SET + rnd(3); o->call.obj[0] = (int8_t)(3 + rnd(3)); break;
			case 3: o->call.op = NTM_OP_SEM_READ; o->call.obj[0] = (int8_t)rnd(2); break;
			default:
				o->call.op = rnd(4) ? NTM_OP_WAIT_ANY : NTM_OP_WAIT_ALL;
				o->call.nobj = (uint8_t)(1 + rnd(3));
				for (unsigned j = 0; j < o->call.nobj; j++)
					o->call.obj[j] = (int8_t)rnd(6);
				if (o->call.op == NTM_OP_WAIT_ALL)	/* distinct objects */
					for (unsigned j = 0; j < o->call.nobj; j++)
						o->call.obj[j] = (int8_t)((o->call.obj[0] + j) % 6);
				if (rnd(4) == 0)
					o->call.alert = 5;
				if (o->call.op == NTM_OP_WAIT_ALL && o->call.alert >= 0)
					for (unsigned j = 0; j < o->call.nobj; j++)
						if (o->call.obj[j] == 5)
							o->call.alert = -1;
			}
			ntm_apply(st, &o->call, &o->ret);
			for (int k = 0; k < 6; k++)	/* nobody is woken by a pulse here */
				st[k].pulsed = false;
			/* the point t lies in [inv, res]; intervals up to 4 calls wide */
			o->inv = t - rnd(250);
			o->res = t + 1 + rnd(250);
		}
		assert_int_equal(ntl_check(&H, 0, &stats, NULL, NULL), NTL_OK);
		/* now one read that no order can give: a count above the maximum */
		op1(9, 0, 1000 + 100 * 121, NTM_OP_SEM_READ, 0, 0, 0, 4, 3);
		assert_int_equal(ntl_check(&H, 0, &stats, NULL, NULL), NTL_VIOLATION);
	}
	printf("    40 random histories, %llu ops, %llu states searched\n",
	       (unsigned long long)stats.ops, (unsigned long long)stats.states);
}

#define cmocka_unit_test_setup_x(f) cmocka_unit_test_setup(f, setup)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_x(sequential_history_that_follows_the_spec_is_accepted),
		cmocka_unit_test_setup_x(sequential_history_with_one_wrong_result_is_rejected),
		cmocka_unit_test_setup_x(non_atomic_poll_timeout_is_rejected),
		cmocka_unit_test_setup_x(poll_that_sees_either_event_is_accepted),
		cmocka_unit_test_setup_x(timeout_is_accepted_when_both_were_clear_at_some_instant),
		cmocka_unit_test_setup_x(real_time_order_is_respected),
		cmocka_unit_test_setup_x(one_token_taken_twice_is_rejected),
		cmocka_unit_test_setup_x(wait_any_may_take_any_signaled_object_at_its_lowest_index),
		cmocka_unit_test_setup_x(duplicate_object_reported_at_its_later_index_is_rejected),
		cmocka_unit_test_setup_x(wait_all_is_atomic_across_its_objects),
		cmocka_unit_test_setup_x(mutex_owner_and_abandonment_are_followed),
		cmocka_unit_test_setup_x(pulse_wakes_only_waits_in_progress),
		cmocka_unit_test_setup_x(independent_objects_are_checked_as_separate_parts),
		cmocka_unit_test_setup_x(search_budget_is_reported_as_gave_up),
		cmocka_unit_test_setup_x(minimize_keeps_the_core_of_the_non_atomic_poll),
		cmocka_unit_test_setup_x(random_linearizable_history_is_accepted),
	};

	begin();
	return cmocka_run_group_tests_name("linearize", tests, NULL, NULL);
}
