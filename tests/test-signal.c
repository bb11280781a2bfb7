// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Signals during a wait: EINTR without SA_RESTART, transparent restart
 * with SA_RESTART, and no acquisition lost when a signal races a wake.
 */

#include "common.h"

#include <signal.h>
#include <unistd.h>

#define TEST_SIGNAL SIGUSR1

static atomic_int handled;

static void handler(int sig)
{
	(void)sig;
	atomic_fetch_add(&handled, 1);
}

static void install(bool restart)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = restart ? SA_RESTART : 0;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(TEST_SIGNAL, &sa, NULL), 0);
	atomic_store(&handled, 0);
}

static void signal_interrupts(bool all)
{
	int dev = DEV_OPEN();
	/* An empty semaphore and (for wait-all) a signaled auto-reset event,
	 * which a partial acquisition would reset. */
	int objs[2] = { NEW_SEM(dev, 0, 1), NEW_EVENT(dev, 0, 1) };
	struct waiter *w;

	install(false);
	w = waiter_new(dev, all, objs, all ? 2 : 1, 1);
	START_BLOCKED(w);
	assert_int_equal(pthread_kill(w->thread, TEST_SIGNAL), 0);
	JOIN(w);
	ASSERT_WAITER_ERR(w, EINTR);
	assert_true(atomic_load(&handled) >= 1);
	ASSERT_SEM(objs[0], 0, 1);
	ASSERT_EVENT(objs[1], 0, 1);
	waiters_free(w, 1);
	close(objs[0]);
	close(objs[1]);
	close(dev);
}

/* §wait.eintr §abi.errors.signal */
TEST(signal_interrupts_wait_any_with_eintr)
{
	signal_interrupts(false);
}

/* §abi.errors.signal */
TEST(signal_interrupts_wait_all_with_eintr_and_acquires_nothing)
{
	signal_interrupts(true);
}

/* §abi.errors.signal */
TEST(signal_with_sa_restart_restarts_the_wait)
{
	int dev = DEV_OPEN();
	int sem = NEW_SEM(dev, 0, 1);
	struct waiter *w;

	install(true);
	w = waiter_new(dev, false, &sem, 1, 1);
	START_BLOCKED(w);
	for (int i = 0; i < 3; i++) {
		int before = atomic_load(&handled);

		assert_int_equal(pthread_kill(w->thread, TEST_SIGNAL), 0);
		/* Handler ran and the thread is back asleep in the ioctl. */
		for (int n = 0; n < 10000 && atomic_load(&handled) == before; n++)
			usleep(100);
		assert_true(waiter_blocked(w));
	}
	assert_true(atomic_load(&handled) >= 3);
	assert_false(waiter_done(w));
	CHECK_OK(ntr_sem_release(sem, 1, NULL));
	JOIN(w);
	ASSERT_WAITER_OK(w, 0);
	ASSERT_SEM(sem, 0, 1);
	waiters_free(w, 1);
	close(sem);
	close(dev);
}

/* §abi.errors.signal */
TEST(signal_with_sa_restart_keeps_absolute_deadline)
{
	int dev = DEV_OPEN();
	int sem = NEW_SEM(dev, 0, 1);
	struct waiter *w;

	install(true);
	w = waiter_new(dev, false, &sem, 1, 1);
	w->timeout = mono_in_ms(300);
	START_BLOCKED(w);
	assert_int_equal(pthread_kill(w->thread, TEST_SIGNAL), 0);
	JOIN(w);
	ASSERT_WAITER_ERR(w, ETIMEDOUT);
	assert_true(now_ns(CLOCK_MONOTONIC) >= w->timeout);
	waiters_free(w, 1);
	close(sem);
	close(dev);
}

/*
 * A signal and a wake race: whatever the outcome, an acquisition is never
 * lost.  Success means the count was taken; EINTR means it is still there.
 *
 * The window is in the kernel: the waiter has seen the signal and decided
 * on EINTR, and a release claims it before it has left every queue; the
 * wait must then return the acquisition.  No outcome seen from user space
 * tells that round from one where the release came first: both acquire.
 * So the case makes the window wide and frequent instead: the wait-any
 * waits on 64 semaphores and the release goes to the first, which a
 * leaving waiter drops last (it leaves from the highest index down), and
 * every other round sends the signal before the release, after a delay
 * that grows from round to round (0 to 31 microseconds, spun), so that some
 * releases land while the waiter is leaving.  A driver that
 * drops the acquisition in the window is caught (doc/results.md: a run
 * with that bug put in on purpose).  A wait-all leaves its queues under
 * one lock, so its window is only the way from the signal to that lock:
 * it waits on one semaphore.  Rounds that sent the signal first and still
 * acquired are counted and printed; without any, the window surely was not
 * met, and the case reports itself skipped after the invariants held.
 * With SA_RESTART an interrupted wait is restarted and acquires too: that
 * case claims only that no wait ends in EINTR, which every round asserts.
 */
static void race(bool all, bool restart)
{
	enum { ROUNDS = 300, WIDE = 64 };
	int dev = DEV_OPEN();
	uint32_t n = all ? 1 : WIDE;
	int objs[WIDE];
	struct waiter *w = waiters_alloc(1);
	unsigned int acquired = 0, interrupted = 0, lost = 0, bogus = 0;
	unsigned int crossed = 0;

	for (uint32_t k = 0; k < n; k++)
		objs[k] = NEW_SEM(dev, 0, 1);
	install(restart);
	for (int i = 0; i < ROUNDS; i++) {
		uint32_t count, max;

		waiter_setup(w, dev, all, objs, n, 1);
		START_BLOCKED(w);
		if (i & 1) {
			ntr_sem_release(objs[0], 1, NULL);
			pthread_kill(w->thread, TEST_SIGNAL);
		} else {
			uint64_t until;

			pthread_kill(w->thread, TEST_SIGNAL);
			until = now_ns(CLOCK_MONOTONIC) + (uint64_t)(i / 2 % 32) * 1000;
			while (now_ns(CLOCK_MONOTONIC) < until)
				;
			ntr_sem_release(objs[0], 1, NULL);
		}
		if (!waiter_join(w)) {
			print_error("round %d: waiter hung\n", i);
			fail();
		}
		CHECK_OK(ntr_sem_read(objs[0], &count, &max));
		if (w->ret == 0 && w->index == 0 && count == 0) {
			acquired++;
			crossed += !(i & 1);
		} else if (w->ret == -1 && w->err == EINTR && count == 1) {
			interrupted++;
			CHECK_OK(wait_any(dev, objs, 1, 1, 0, NULL));
		} else if (w->ret == -1 && w->err == EINTR && count == 0) {
			lost++;
		} else {
			bogus++;
			print_error("round %d: ret %d %s index %u count %u\n", i,
				    w->ret, errname(w->err), w->index, count);
		}
	}
	print_message("%u acquired (%u of them signaled first), %u interrupted, %u lost\n",
		      acquired, crossed, interrupted, lost);
	waiters_free(w, 1);
	for (uint32_t k = 0; k < n; k++)
		close(objs[k]);
	close(dev);
	assert_int_equal(lost, 0);
	assert_int_equal(bogus, 0);
	if (restart)
		assert_int_equal(interrupted, 0);
	assert_int_equal(acquired + interrupted, ROUNDS);
	if (!restart && !crossed) {
		print_message("skipped: the race window was not met (no wait "
			      "signaled first still acquired)\n");
		skip();
	}
}

/* §abi.errors.signal */
TEST(signal_racing_a_wake_loses_no_acquisition_wait_any)
{
	race(false, false);
}

/* §abi.errors.signal */
TEST(signal_racing_a_wake_loses_no_acquisition_wait_all)
{
	race(true, false);
}

/* §abi.errors.signal */
TEST(signal_racing_a_wake_with_sa_restart_always_acquires)
{
	race(false, true);
}

/* §wait.eintr */
TEST(signal_in_waiter_process_interrupts_wait)
{
	int dev = DEV_OPEN();
	int sem = NEW_SEM(dev, 0, 1);
	struct waiter *w;

	install(false);
	w = waiter_new(dev, false, &sem, 1, 1);
	w->process = true;
	START_BLOCKED(w);
	assert_int_equal(kill(w->pid, TEST_SIGNAL), 0);
	JOIN(w);
	ASSERT_WAITER_ERR(w, EINTR);
	ASSERT_SEM(sem, 0, 1);
	waiters_free(w, 1);
	close(sem);
	close(dev);
}

/* §abi.errors.signal */
TEST(fatal_signal_ends_waiter_process_cleanly)
{
	int dev = DEV_OPEN();
	int sem = NEW_SEM(dev, 0, 1);
	struct waiter *w = waiter_new(dev, true, &sem, 1, 1);

	w->process = true;
	START_BLOCKED(w);
	assert_int_equal(kill(w->pid, SIGKILL), 0);
	w->state = 2;	/* it will never report */
	waiter_join(w);
	/* The killed waiter took nothing and left the object usable. */
	CHECK_OK(ntr_sem_release(sem, 1, NULL));
	CHECK_OK(wait_any(dev, &sem, 1, 1, 0, NULL));
	ASSERT_SEM(sem, 0, 1);
	waiters_free(w, 1);
	close(sem);
	close(dev);
}

static const struct CMUnitTest tests[] = {
	cmocka_unit_test(signal_interrupts_wait_any_with_eintr),
	cmocka_unit_test(signal_interrupts_wait_all_with_eintr_and_acquires_nothing),
	cmocka_unit_test(signal_with_sa_restart_restarts_the_wait),
	cmocka_unit_test(signal_with_sa_restart_keeps_absolute_deadline),
	cmocka_unit_test(signal_racing_a_wake_loses_no_acquisition_wait_any),
	cmocka_unit_test(signal_racing_a_wake_loses_no_acquisition_wait_all),
	cmocka_unit_test(signal_racing_a_wake_with_sa_restart_always_acquires),
	cmocka_unit_test(signal_in_waiter_process_interrupts_wait),
	cmocka_unit_test(fatal_signal_ends_waiter_process_cleanly),
};

NTSYNC_TEST_MAIN("signal", tests, true)
