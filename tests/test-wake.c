// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Wakeups across threads and processes: every way an object becomes
 * signaled wakes the right number of waiters, in queue (FIFO) order;
 * wait-all wakes only when all objects are signaled at once.
 *
 * "Blocked" is observed from /proc (the waiter sleeps inside ioctl()), and
 * "how many woke" from the objects' states right after the waking call,
 * which the driver updates atomically with the wake; no timing is assumed.
 */

#include "common.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned int count_done(struct waiter *w, unsigned int n)
{
	unsigned int done = 0;

	for (unsigned int i = 0; i < n; i++)
		done += waiter_done(&w[i]);
	return done;
}

static void join_all(struct waiter *w, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		waiter_join(&w[i]);
}

/*
 * "Exactly `woken` of the n waiters woke": none more returned within
 * SHORT_MS, and each of the others is still asleep in its ioctl().  That
 * much only shows that none more returned so far; the caller then signals
 * once more and reads the object's state at once, which the driver changes
 * atomically with the wake: only a waiter still queued can take that
 * signal, so a waiter that had left early (at any time, not only within
 * SHORT_MS) leaves the signal on the object and fails that read.  What
 * stays invisible is a wake that the driver takes back (the waiter wakes
 * and queues again without returning), which the ABI cannot show and which
 * breaks no rule.
 */
static void assert_others_still_wait(struct waiter *w, unsigned int n,
				     unsigned int woken)
{
	sleep_ms(SHORT_MS);
	assert_int_equal(count_done(w, n), woken);
	for (unsigned int i = 0; i < n; i++) {
		if (waiter_done(&w[i]))
			continue;
		if (!waiter_blocked(&w[i])) {
			print_error("waiter %u is no longer asleep in its wait\n", i);
			fail();
		}
	}
}

/* §sem.release */
TEST(sem_release_wakes_waiting_thread)
{
	int dev = DEV_OPEN();
	int sem = NEW_SEM(dev, 0, 1);
	struct waiter *w = waiter_new(dev, false, &sem, 1, 1);
	uint32_t prev = POISON32;

	START_BLOCKED(w);
	CHECK_OK(ntr_sem_release(sem, 1, &prev));
	assert_int_equal(prev, 0);
	/* The waiter took the count as part of the release. */
	ASSERT_SEM(sem, 0, 1);
	JOIN(w);
	ASSERT_WAITER_OK(w, 0);
	waiters_free(w, 1);
	close(sem);
	close(dev);
}

/* §obj.atomic §sem.release §wait.any.contention */
TEST(sem_release_of_n_wakes_n_waiters)
{
	int dev = DEV_OPEN();
	int sem = NEW_SEM(dev, 0, 5);
	struct waiter *w = waiters_alloc(3);

	for (int i = 0; i < 3; i++) {
		waiter_setup(&w[i], dev, false, &sem, 1, 1);
		START_BLOCKED(&w[i]);
	}
	CHECK_OK(ntr_sem_release(sem, 2, NULL));
	ASSERT_SEM(sem, 0, 5);
	assert_int_equal(waiters_until_done(w, 3, 2), 2);
	assert_others_still_wait(w, 3, 2);
	/* The third waiter was still queued: it takes this count at once. */
	CHECK_OK(ntr_sem_release(sem, 1, NULL));
	ASSERT_SEM(sem, 0, 5);
	assert_int_equal(waiters_until_done(w, 3, 3), 3);
	join_all(w, 3);
	for (int i = 0; i < 3; i++)
		ASSERT_WAITER_OK(&w[i], 0);
	waiters_free(w, 3);
	close(sem);
	close(dev);
}

/* §sem.release */
TEST(sem_release_beyond_waiters_keeps_the_rest)
{
	int dev = DEV_OPEN();
	int sem = NEW_SEM(dev, 0, 5);
	struct waiter *w = waiters_alloc(2);

	for (int i = 0; i < 2; i++) {
		waiter_setup(&w[i], dev, false, &sem, 1, 1);
		START_BLOCKED(&w[i]);
	}
	CHECK_OK(ntr_sem_release(sem, 5, NULL));
	ASSERT_SEM(sem, 3, 5);
	join_all(w, 2);
	ASSERT_WAITER_OK(&w[0], 0);
	ASSERT_WAITER_OK(&w[1], 0);
	waiters_free(w, 2);
	close(sem);
	close(dev);
}

/* §mutex.unlock §wait.any.contention */
TEST(mutex_unlock_wakes_one_waiter_of_another_owner)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 1, 1);
	struct waiter *w = waiters_alloc(2);
	uint32_t prev = POISON32, owner, count;
	int first;

	waiter_setup(&w[0], dev, false, &mutex, 1, 2);
	START_BLOCKED(&w[0]);
	waiter_setup(&w[1], dev, false, &mutex, 1, 3);
	START_BLOCKED(&w[1]);
	CHECK_OK(ntr_mutex_unlock(mutex, 1, &prev));
	assert_int_equal(prev, 1);
	CHECK_OK(ntr_mutex_read(mutex, &owner, &count));
	assert_int_equal(count, 1);
	assert_true(owner == 2 || owner == 3);
	first = owner == 2 ? 0 : 1;
	assert_int_equal(waiters_until_done(w, 2, 1), 1);
	assert_true(waiter_done(&w[first]));
	assert_others_still_wait(w, 2, 1);
	/* The other waiter was still queued: it owns the mutex at once. */
	CHECK_OK(ntr_mutex_unlock(mutex, owner, NULL));
	ASSERT_MUTEX(mutex, first ? 2 : 3, 1);
	join_all(w, 2);
	ASSERT_WAITER_OK(&w[0], 0);
	ASSERT_WAITER_OK(&w[1], 0);
	waiters_free(w, 2);
	close(mutex);
	close(dev);
}

/*
 * The same with waits that cannot time out (timeout U64_MAX), which the
 * driver looks at by another path than waits with a deadline: both owners
 * differ from the mutex's, so neither wait may take it before the unlock,
 * and the second may not take it from the first.
 */
/* §mutex.unlock §wait.owner §wait.timeout */
TEST(mutex_of_another_owner_blocks_infinite_waits_until_unlocked)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 1, 1);
	struct waiter *w = waiters_alloc(2);

	for (int i = 0; i < 2; i++) {
		waiter_setup(&w[i], dev, false, &mutex, 1, 2 + (uint32_t)i);
		w[i].timeout = UINT64_MAX;
		START_BLOCKED(&w[i]);
	}
	ASSERT_MUTEX(mutex, 1, 1);
	CHECK_OK(ntr_mutex_unlock(mutex, 1, NULL));
	/* queued first, woken first (§wait.order) */
	ASSERT_MUTEX(mutex, 2, 1);
	assert_int_equal(waiters_until_done(w, 2, 1), 1);
	assert_true(waiter_done(&w[0]));
	assert_others_still_wait(w, 2, 1);
	CHECK_OK(ntr_mutex_unlock(mutex, 2, NULL));
	ASSERT_MUTEX(mutex, 3, 1);
	join_all(w, 2);
	ASSERT_WAITER_OK(&w[0], 0);
	ASSERT_WAITER_OK(&w[1], 0);
	waiters_free(w, 2);
	close(mutex);
	close(dev);
}

/*
 * A mutex at its recursion limit (count U32_MAX) is not signaled even for
 * its owner: two waits of that owner sleep, one that cannot time out and
 * one with a deadline.  Each unlock by the owner lowers the count to
 * U32_MAX - 1, which the first waiter still queued takes back to U32_MAX
 * at once; the other waiter, of the same owner, must then find the mutex
 * not signaled and stay asleep.
 */
/* §silent.mutex-max §mutex.unlock §wait.order */
TEST(mutex_at_u32_max_wakes_one_waiter_of_its_owner_per_unlock)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 5, UINT32_MAX);
	struct waiter *w = waiters_alloc(2);
	uint32_t prev = POISON32;

	for (int i = 0; i < 2; i++) {
		waiter_setup(&w[i], dev, false, &mutex, 1, 5);
		if (i == 0)
			w[i].timeout = UINT64_MAX;
		START_BLOCKED(&w[i]);
	}
	ASSERT_MUTEX(mutex, 5, UINT32_MAX);
	CHECK_OK(ntr_mutex_unlock(mutex, 5, &prev));
	assert_int_equal(prev, UINT32_MAX);
	ASSERT_MUTEX(mutex, 5, UINT32_MAX);
	assert_int_equal(waiters_until_done(w, 2, 1), 1);
	assert_true(waiter_done(&w[0]));
	assert_others_still_wait(w, 2, 1);
	CHECK_OK(ntr_mutex_unlock(mutex, 5, &prev));
	assert_int_equal(prev, UINT32_MAX);
	ASSERT_MUTEX(mutex, 5, UINT32_MAX);
	join_all(w, 2);
	ASSERT_WAITER_OK(&w[0], 0);
	ASSERT_WAITER_OK(&w[1], 0);
	waiters_free(w, 2);
	close(mutex);
	close(dev);
}

/*
 * A wait for all of a mutex at its recursion limit and an event, by the
 * mutex's owner: setting the event does not satisfy it (the mutex is not
 * signaled), and the event stays set; the owner's unlock then does, and
 * the wait takes both, the mutex back to U32_MAX.
 */
/* §silent.mutex-max §wait.all.acquire */
TEST(wait_all_on_own_mutex_at_u32_max_waits_for_its_unlock)
{
	int dev = DEV_OPEN();
	int objs[2];
	struct waiter *w;

	objs[0] = NEW_MUTEX(dev, 5, UINT32_MAX);
	objs[1] = NEW_EVENT(dev, false, false);
	w = waiter_new(dev, true, objs, 2, 5);
	START_BLOCKED(w);
	ASSERT_EVENT_OP(objs[1], ntr_event_set, 0, false, true);
	assert_others_still_wait(w, 1, 0);
	ASSERT_MUTEX(objs[0], 5, UINT32_MAX);
	ASSERT_EVENT(objs[1], false, true);
	CHECK_OK(ntr_mutex_unlock(objs[0], 5, NULL));
	ASSERT_MUTEX(objs[0], 5, UINT32_MAX);
	ASSERT_EVENT(objs[1], false, false);
	JOIN(w);
	ASSERT_WAITER_OK(w, 0);
	waiters_free(w, 1);
	close(objs[0]);
	close(objs[1]);
	close(dev);
}

/* §mutex.unlock */
TEST(mutex_recursive_unlock_wakes_only_at_zero)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 1, 2);
	struct waiter *w = waiter_new(dev, false, &mutex, 1, 2);

	START_BLOCKED(w);
	CHECK_OK(ntr_mutex_unlock(mutex, 1, NULL));
	ASSERT_MUTEX(mutex, 1, 1);
	CHECK_OK(ntr_mutex_unlock(mutex, 1, NULL));
	ASSERT_MUTEX(mutex, 2, 1);
	JOIN(w);
	ASSERT_WAITER_OK(w, 0);
	waiters_free(w, 1);
	close(mutex);
	close(dev);
}

/* §mutex.kill */
TEST(mutex_kill_wakes_waiter_with_eownerdead)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 1, 3);
	int other = NEW_SEM(dev, 0, 1);
	int objs[2] = { other, mutex };
	struct waiter *w = waiter_new(dev, false, objs, 2, 2);

	START_BLOCKED(w);
	CHECK_OK(ntr_mutex_kill(mutex, 1));
	ASSERT_MUTEX(mutex, 2, 1);
	JOIN(w);
	ASSERT_WAITER_ERR(w, EOWNERDEAD);
	assert_int_equal(w->index, 1);
	waiters_free(w, 1);
	close(mutex);
	close(other);
	close(dev);
}

/* §mutex.kill §wait.all.abandoned */
TEST(mutex_kill_wakes_wait_all_with_eownerdead)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 1, 1);
	int sem = NEW_SEM(dev, 1, 1);
	int objs[2] = { sem, mutex };
	struct waiter *w = waiter_new(dev, true, objs, 2, 2);

	START_BLOCKED(w);
	CHECK_OK(ntr_mutex_kill(mutex, 1));
	JOIN(w);
	ASSERT_WAITER_ERR(w, EOWNERDEAD);
	assert_int_equal(w->index, 0);
	ASSERT_MUTEX(mutex, 2, 1);
	ASSERT_SEM(sem, 0, 1);
	waiters_free(w, 1);
	close(mutex);
	close(sem);
	close(dev);
}

static void event_wakes(uint32_t manual, int (*op)(int, uint32_t *),
			unsigned int expect_woken, uint32_t expect_state)
{
	int dev = DEV_OPEN();
	int event = NEW_EVENT(dev, manual, 0);
	struct waiter *w = waiters_alloc(2);
	uint32_t prev = POISON32;

	for (int i = 0; i < 2; i++) {
		waiter_setup(&w[i], dev, false, &event, 1, 1);
		START_BLOCKED(&w[i]);
	}
	CHECK_OK(op(event, &prev));
	assert_int_equal(prev, 0);
	ASSERT_EVENT(event, manual, expect_state);
	assert_int_equal(waiters_until_done(w, 2, expect_woken), expect_woken);
	assert_others_still_wait(w, 2, expect_woken);
	if (expect_woken < 2) {
		/* The other waiter was still queued: it takes this set at once
		 * and the auto-reset event reads unsignaled right after it. */
		CHECK_OK(ntr_event_set(event, NULL));
		ASSERT_EVENT(event, manual, 0);
		assert_int_equal(waiters_until_done(w, 2, 2), 2);
	}
	join_all(w, 2);
	ASSERT_WAITER_OK(&w[0], 0);
	ASSERT_WAITER_OK(&w[1], 0);
	waiters_free(w, 2);
	close(event);
	close(dev);
}

/* §event.set */
TEST(auto_event_set_wakes_one_waiter)
{
	event_wakes(0, ntr_event_set, 1, 0);
}

/* §event.set */
TEST(manual_event_set_wakes_all_waiters)
{
	event_wakes(1, ntr_event_set, 2, 1);
}

/* §event.pulse */
TEST(auto_event_pulse_wakes_one_of_two_waiters)
{
	event_wakes(0, ntr_event_pulse, 1, 0);
}

/* §event.pulse */
TEST(manual_event_pulse_wakes_both_waiters)
{
	event_wakes(1, ntr_event_pulse, 2, 0);
}

/*
 * Resetting an event wakes none of its waiters.  For an auto-reset event the
 * proof does not depend on time: the waiter must still be queued when the
 * event is set, so it takes that signal and the event reads unsignaled as
 * soon as the set returns; a waiter that had left on the reset (however late)
 * would leave the signal on the event.  For a manual event the set leaves it
 * signaled either way, so it shows only that the waiter is still asleep in
 * its ioctl() SHORT_MS after the reset.
 */
static void reset_wakes_nobody(uint32_t manual)
{
	int dev = DEV_OPEN();
	int event = NEW_EVENT(dev, manual, 0);
	struct waiter *w = waiter_new(dev, false, &event, 1, 1);

	START_BLOCKED(w);
	CHECK_OK(ntr_event_reset(event, NULL));
	sleep_ms(SHORT_MS);
	assert_false(waiter_done(w));
	assert_true(waiter_blocked(w));
	CHECK_OK(ntr_event_set(event, NULL));
	if (!manual)
		ASSERT_EVENT(event, 0, 0);
	JOIN(w);
	ASSERT_WAITER_OK(w, 0);
	waiters_free(w, 1);
	close(event);
	close(dev);
}

/* §event.reset */
TEST(event_reset_wakes_nobody)
{
	reset_wakes_nobody(1);
}

/* §event.reset */
TEST(auto_event_reset_wakes_nobody)
{
	reset_wakes_nobody(0);
}

/*
 * Waiters queued one after the other are woken in that order.  Takes the
 * instance dev and its object obj, and closes both.
 */
static void fifo_order(int dev, int obj, uint32_t same_owner,
		       int (*wake)(int))
{
	struct waiter *w = waiters_alloc(3);

	for (int i = 0; i < 3; i++) {
		waiter_setup(&w[i], dev, false, &obj, 1,
			     same_owner ? same_owner : (uint32_t)(100 + i));
		START_BLOCKED(&w[i]);
	}
	for (int i = 0; i < 3; i++) {
		CHECK_OK(wake(obj));
		assert_int_equal(waiters_until_done(w, 3, (unsigned int)i + 1),
				 (unsigned int)i + 1);
		if (!waiter_done(&w[i])) {
			join_all(w, 3);
			print_error("wake %d went to a later waiter, not waiter %d\n",
				    i + 1, i);
			fail();
		}
		ASSERT_WAITER_OK(&w[i], 0);
	}
	join_all(w, 3);
	waiters_free(w, 3);
	close(obj);
	close(dev);
}

static int release_one(int sem)
{
	return ntr_sem_release(sem, 1, NULL);
}

static int set_event(int event)
{
	return ntr_event_set(event, NULL);
}

static int unlock_current(int mutex)
{
	uint32_t owner, count;

	if (ntr_mutex_read(mutex, &owner, &count) < 0)
		return -1;
	if (!owner)
		return -1;
	return ntr_mutex_unlock(mutex, owner, NULL);
}

/* §abi.mainline.5 §wait.order */
TEST(sem_waiters_woken_in_fifo_order)
{
	int dev = DEV_OPEN();

	fifo_order(dev, NEW_SEM(dev, 0, 3), 1, release_one);
}

/* §abi.mainline.5 §wait.order */
TEST(auto_event_waiters_woken_in_fifo_order)
{
	int dev = DEV_OPEN();

	fifo_order(dev, NEW_EVENT(dev, 0, 0), 1, set_event);
}

/* §abi.mainline.5 §wait.order */
TEST(mutex_waiters_woken_in_fifo_order)
{
	int dev = DEV_OPEN();

	fifo_order(dev, NEW_MUTEX(dev, 1, 1), 0, unlock_current);
}

/* §wait.all.acquire */
TEST(wait_all_woken_only_when_all_signaled_at_once)
{
	int dev = DEV_OPEN();
	int sem = NEW_SEM(dev, 0, 2);
	int event = NEW_EVENT(dev, 0, 0);
	int objs[2] = { sem, event };
	struct waiter *w = waiter_new(dev, true, objs, 2, 1);
	uint32_t index;

	START_BLOCKED(w);
	/* Event alone: not enough. */
	CHECK_OK(ntr_event_set(event, NULL));
	ASSERT_EVENT(event, 0, 1);
	/* Someone else takes the event. */
	CHECK_OK(wait_any(dev, &event, 1, 9, 0, &index));
	ASSERT_EVENT(event, 0, 0);
	/* Semaphore alone: not enough either, and not consumed. */
	CHECK_OK(ntr_sem_release(sem, 1, NULL));
	ASSERT_SEM(sem, 1, 2);
	sleep_ms(SHORT_MS);
	assert_false(waiter_done(w));
	/* Now both at once: acquired together. */
	CHECK_OK(ntr_event_set(event, NULL));
	ASSERT_SEM(sem, 0, 2);
	ASSERT_EVENT(event, 0, 0);
	JOIN(w);
	ASSERT_WAITER_OK(w, 0);
	waiters_free(w, 1);
	close(sem);
	close(event);
	close(dev);
}

/* §wait.all.acquire */
TEST(wait_all_woken_by_mutex_unlock_and_sem_release)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 5, 1);
	int sem = NEW_SEM(dev, 0, 1);
	int objs[2] = { mutex, sem };
	struct waiter *w = waiter_new(dev, true, objs, 2, 6);

	START_BLOCKED(w);
	CHECK_OK(ntr_sem_release(sem, 1, NULL));
	ASSERT_SEM(sem, 1, 1);
	CHECK_OK(ntr_mutex_unlock(mutex, 5, NULL));
	ASSERT_MUTEX(mutex, 6, 1);
	ASSERT_SEM(sem, 0, 1);
	JOIN(w);
	ASSERT_WAITER_OK(w, 0);
	waiters_free(w, 1);
	close(mutex);
	close(sem);
	close(dev);
}

/* §wait.any.alert */
TEST(wait_any_woken_by_alert_returns_count)
{
	int dev = DEV_OPEN();
	int objs[2] = { NEW_SEM(dev, 0, 1), NEW_EVENT(dev, 1, 0) };
	int alert = NEW_EVENT(dev, 0, 0);
	struct waiter *w = waiter_new(dev, false, objs, 2, 1);

	w->alert = (uint32_t)alert;
	START_BLOCKED(w);
	CHECK_OK(ntr_event_set(alert, NULL));
	ASSERT_EVENT(alert, 0, 0);
	JOIN(w);
	ASSERT_WAITER_OK(w, 2);
	waiters_free(w, 1);
	close(objs[0]);
	close(objs[1]);
	close(alert);
	close(dev);
}

/* §wait.all.alert */
TEST(wait_all_woken_by_alert_returns_count)
{
	int dev = DEV_OPEN();
	int objs[2] = { NEW_SEM(dev, 1, 1), NEW_EVENT(dev, 1, 0) };
	int alert = NEW_EVENT(dev, 0, 0);
	struct waiter *w = waiter_new(dev, true, objs, 2, 1);

	w->alert = (uint32_t)alert;
	START_BLOCKED(w);
	CHECK_OK(ntr_event_set(alert, NULL));
	JOIN(w);
	ASSERT_WAITER_OK(w, 2);
	ASSERT_SEM(objs[0], 1, 1);
	ASSERT_EVENT(alert, 0, 0);
	waiters_free(w, 1);
	close(objs[0]);
	close(objs[1]);
	close(alert);
	close(dev);
}

/* §wait.index */
TEST(wait_any_woken_by_second_object_reports_its_index)
{
	int dev = DEV_OPEN();
	int objs[3] = { NEW_SEM(dev, 0, 1), NEW_EVENT(dev, 0, 0), NEW_MUTEX(dev, 4, 1) };
	struct waiter *w = waiter_new(dev, false, objs, 3, 1);

	START_BLOCKED(w);
	CHECK_OK(ntr_mutex_unlock(objs[2], 4, NULL));
	JOIN(w);
	ASSERT_WAITER_OK(w, 2);
	ASSERT_MUTEX(objs[2], 1, 1);
	waiters_free(w, 1);
	for (int i = 0; i < 3; i++)
		close(objs[i]);
	close(dev);
}

/* §dev.instance */
TEST(waiter_process_woken_by_sem_release)
{
	int dev = DEV_OPEN();
	int sem = NEW_SEM(dev, 0, 1);
	struct waiter *w = waiter_new(dev, false, &sem, 1, 1);

	w->process = true;
	START_BLOCKED(w);
	CHECK_OK(ntr_sem_release(sem, 1, NULL));
	ASSERT_SEM(sem, 0, 1);
	JOIN(w);
	ASSERT_WAITER_OK(w, 0);
	waiters_free(w, 1);
	close(sem);
	close(dev);
}

/* §dev.instance */
TEST(waiter_processes_woken_by_manual_event)
{
	int dev = DEV_OPEN();
	int event = NEW_EVENT(dev, 1, 0);
	struct waiter *w = waiters_alloc(2);

	for (int i = 0; i < 2; i++) {
		waiter_setup(&w[i], dev, false, &event, 1, 1);
		w[i].process = true;
		START_BLOCKED(&w[i]);
	}
	CHECK_OK(ntr_event_set(event, NULL));
	join_all(w, 2);
	ASSERT_WAITER_OK(&w[0], 0);
	ASSERT_WAITER_OK(&w[1], 0);
	waiters_free(w, 2);
	close(event);
	close(dev);
}

/* §mutex.kill */
TEST(waiter_process_woken_by_mutex_kill)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 1, 1);
	struct waiter *w = waiter_new(dev, false, &mutex, 1, 2);

	w->process = true;
	START_BLOCKED(w);
	CHECK_OK(ntr_mutex_kill(mutex, 1));
	JOIN(w);
	ASSERT_WAITER_ERR(w, EOWNERDEAD);
	assert_int_equal(w->index, 0);
	ASSERT_MUTEX(mutex, 2, 1);
	waiters_free(w, 1);
	close(mutex);
	close(dev);
}

/* §dev.instance */
TEST(thread_woken_by_child_process)
{
	int dev = DEV_OPEN();
	int event = NEW_EVENT(dev, 0, 0);
	uint32_t index = POISON32;
	int status;
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		sleep_ms(SHORT_MS);
		_exit(ntr_event_set(event, NULL) == 0 ? 0 : 1);
	}
	CHECK_OK(wait_any(dev, &event, 1, 1, mono_in_ms(GUARD_MS), &index));
	assert_int_equal(index, 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ASSERT_EVENT(event, 0, 0);
	close(event);
	close(dev);
}

/* §dev.instance */
TEST(wait_all_process_woken_across_processes)
{
	int dev = DEV_OPEN();
	int objs[3] = { NEW_SEM(dev, 0, 1), NEW_MUTEX(dev, 0, 0), NEW_EVENT(dev, 0, 0) };
	struct waiter *w = waiter_new(dev, true, objs, 3, 42);

	w->process = true;
	START_BLOCKED(w);
	CHECK_OK(ntr_sem_release(objs[0], 1, NULL));
	ASSERT_SEM(objs[0], 1, 1);
	CHECK_OK(ntr_event_set(objs[2], NULL));
	JOIN(w);
	ASSERT_WAITER_OK(w, 0);
	ASSERT_SEM(objs[0], 0, 1);
	ASSERT_MUTEX(objs[1], 42, 1);
	ASSERT_EVENT(objs[2], 0, 0);
	waiters_free(w, 1);
	for (int i = 0; i < 3; i++)
		close(objs[i]);
	close(dev);
}

static const struct CMUnitTest tests[] = {
	cmocka_unit_test(sem_release_wakes_waiting_thread),
	cmocka_unit_test(sem_release_of_n_wakes_n_waiters),
	cmocka_unit_test(sem_release_beyond_waiters_keeps_the_rest),
	cmocka_unit_test(mutex_unlock_wakes_one_waiter_of_another_owner),
	cmocka_unit_test(mutex_of_another_owner_blocks_infinite_waits_until_unlocked),
	cmocka_unit_test(mutex_at_u32_max_wakes_one_waiter_of_its_owner_per_unlock),
	cmocka_unit_test(wait_all_on_own_mutex_at_u32_max_waits_for_its_unlock),
	cmocka_unit_test(mutex_recursive_unlock_wakes_only_at_zero),
	cmocka_unit_test(mutex_kill_wakes_waiter_with_eownerdead),
	cmocka_unit_test(mutex_kill_wakes_wait_all_with_eownerdead),
	cmocka_unit_test(auto_event_set_wakes_one_waiter),
	cmocka_unit_test(manual_event_set_wakes_all_waiters),
	cmocka_unit_test(auto_event_pulse_wakes_one_of_two_waiters),
	cmocka_unit_test(manual_event_pulse_wakes_both_waiters),
	cmocka_unit_test(event_reset_wakes_nobody),
	cmocka_unit_test(auto_event_reset_wakes_nobody),
	cmocka_unit_test(sem_waiters_woken_in_fifo_order),
	cmocka_unit_test(auto_event_waiters_woken_in_fifo_order),
	cmocka_unit_test(mutex_waiters_woken_in_fifo_order),
	cmocka_unit_test(wait_all_woken_only_when_all_signaled_at_once),
	cmocka_unit_test(wait_all_woken_by_mutex_unlock_and_sem_release),
	cmocka_unit_test(wait_any_woken_by_alert_returns_count),
	cmocka_unit_test(wait_all_woken_by_alert_returns_count),
	cmocka_unit_test(wait_any_woken_by_second_object_reports_its_index),
	cmocka_unit_test(waiter_process_woken_by_sem_release),
	cmocka_unit_test(waiter_processes_woken_by_manual_event),
	cmocka_unit_test(waiter_process_woken_by_mutex_kill),
	cmocka_unit_test(thread_woken_by_child_process),
	cmocka_unit_test(wait_all_process_woken_across_processes),
};

NTSYNC_TEST_MAIN("wake", tests, true)
