/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Shared helpers of the ntsync conformance suite.
 *
 * The suite talks raw ioctls through <linux/ntsync.h> (the project's own
 * copy of the mainline ABI header); it does not use libntsync, so that it
 * can judge any implementation of /dev/ntsync, including the in-tree driver.
 *
 * Conventions used by every test:
 *  - every output field is pre-filled with POISON32/POISON64 (0xcc bytes),
 *    so a test proves that the kernel wrote what it checks;
 *  - every failure is checked for its exact errno (CHECK_ERR);
 *  - deadlines passed to waits that are expected to be woken are only hang
 *    guards (GUARD_MS); no test asserts how long anything took.
 */
#ifndef NTSYNC_TESTS_COMMON_H
#define NTSYNC_TESTS_COMMON_H

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/types.h>
#include <cmocka.h>
#include <linux/ntsync.h>
#include "ntsync-raw.h"

#define POISON32 0xccccccccU
#define POISON64 0xccccccccccccccccULL

/* Hang guard for anything that is expected to happen "soon". */
#define GUARD_MS 10000U
/* Deadline of waits that are expected to time out. */
#define SHORT_MS 20U

#define NSEC_PER_MSEC 1000000ULL
#define NSEC_PER_SEC 1000000000ULL

#define TEST(name) static void name(void **state __attribute__((unused)))
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

const char *errname(int err);

/* expr must succeed (>= 0); evaluates to its value. */
#define CHECK_OK(expr) ({						\
	errno = 0;							\
	long r_ = (long)(expr);						\
	if (r_ < 0) {							\
		print_error("%s failed: %s (%s)\n", #expr,		\
			    errname(errno), strerror(errno));		\
		fail();							\
	}								\
	r_;								\
})

/* expr must fail with -1 and errno == err. */
#define CHECK_ERR(expr, err) do {					\
	errno = 0;							\
	long r_ = (long)(expr);						\
	int e_ = errno;							\
	if (r_ != -1 || e_ != (err)) {					\
		if (r_ == -1)						\
			print_error("%s: expected %s, got %s\n", #expr,	\
				    errname(err), errname(e_));		\
		else							\
			print_error("%s: expected %s, got success (%ld)\n", \
				    #expr, errname(err), r_);		\
		fail();							\
	}								\
} while (0)

/*
 * Raw ioctl wrappers (ntr_open, ntr_create_sem, ..., ntr_wait): the
 * project's one set, in ntsync-raw.h.  They return the ioctl's result, -1
 * with errno on error; outputs are pre-filled with POISON32.
 */
#define wait_any(dev, objs, count, owner, timeout, index) \
	ntr_wait(dev, false, objs, count, owner, 0, 0, timeout, index)
#define wait_all(dev, objs, count, owner, timeout, index) \
	ntr_wait(dev, true, objs, count, owner, 0, 0, timeout, index)

/* Close the n descriptors in fds. */
void close_all(const int *fds, unsigned int n);

/* Asserting constructors: the test fails at the caller's line. */
#define DEV_OPEN()			((int)CHECK_OK(ntr_open()))
#define NEW_SEM(dev, c, m)		((int)CHECK_OK(ntr_create_sem(dev, c, m)))
#define NEW_MUTEX(dev, o, c)		((int)CHECK_OK(ntr_create_mutex(dev, o, c)))
#define NEW_EVENT(dev, man, sig)	((int)CHECK_OK(ntr_create_event(dev, man, sig)))

#define ASSERT_SEM(fd, c, m) do {					\
	uint32_t c_, m_;						\
	CHECK_OK(ntr_sem_read(fd, &c_, &m_));				\
	assert_int_equal(c_, (uint32_t)(c));				\
	assert_int_equal(m_, (uint32_t)(m));				\
} while (0)

#define ASSERT_MUTEX(fd, o, c) do {					\
	uint32_t o_, c_;						\
	CHECK_OK(ntr_mutex_read(fd, &o_, &c_));				\
	assert_int_equal(o_, (uint32_t)(o));				\
	assert_int_equal(c_, (uint32_t)(c));				\
} while (0)

#define ASSERT_MUTEX_ABANDONED(fd) do {					\
	uint32_t o_, c_;						\
	CHECK_ERR(ntr_mutex_read(fd, &o_, &c_), EOWNERDEAD);		\
	assert_int_equal(o_, 0);					\
	assert_int_equal(c_, 0);					\
} while (0)

#define ASSERT_EVENT(fd, man, sig) do {					\
	uint32_t m_, s_;						\
	CHECK_OK(ntr_event_read(fd, &m_, &s_));				\
	assert_int_equal(m_, (uint32_t)(man));				\
	assert_int_equal(s_, (uint32_t)(sig));				\
} while (0)

/*
 * Is /dev/ntsync served by this project's module?  Ours sets MODULE_VERSION,
 * so /sys/module/ntsync/version exists; mainline's in-tree driver sets no
 * version (built as a module or built in).  Tests of the few deliberate
 * differences (tests/README.md) use this to skip on other drivers.
 */
bool ntsync_driver_is_ours(void);
/*
 * Where mainline's driver is known to break the spec (tests/README.md, "Results,
 * and where the in-tree driver differs"): true on any driver but ours unless
 * NTSYNC_STRICT=1, and then the test prints its evidence and skips, so the
 * summary counts it as skipped, never as passed.  On our module (and under
 * NTSYNC_STRICT=1 everywhere) the test asserts as usual.
 */
bool known_difference_tolerated(void);

/* A wait with a past deadline (a poll) succeeds and reports index want. */
#define ASSERT_WAIT_INDEX(want, dev, all, objs, count, owner, alert) do { \
	uint32_t i_ = POISON32;						\
	CHECK_OK(ntr_wait(dev, all, objs, count, owner, alert, 0, 0, &i_)); \
	assert_int_equal(i_, (uint32_t)(want));				\
} while (0)

/* SEM_RELEASE of n returns 0 and the previous count want_prev; the
 * semaphore then reads (c, m). */
#define ASSERT_SEM_RELEASE(fd, n, want_prev, c, m) do {		\
	uint32_t p_ = POISON32;						\
	assert_int_equal(CHECK_OK(ntr_sem_release(fd, n, &p_)), 0);	\
	assert_int_equal(p_, (uint32_t)(want_prev));			\
	ASSERT_SEM(fd, c, m);						\
} while (0)

/* An event operation (ntr_event_set, ntr_event_reset, ntr_event_pulse) returns 0 and
 * the previous state want_prev; the event then reads (man, sig). */
#define ASSERT_EVENT_OP(fd, op, want_prev, man, sig) do {		\
	uint32_t p_ = POISON32;						\
	assert_int_equal(CHECK_OK(op(fd, &p_)), 0);			\
	assert_int_equal(p_, (uint32_t)(want_prev));			\
	ASSERT_EVENT(fd, man, sig);					\
} while (0)

/* The descriptor number the next open() would get. */
int lowest_free_fd(void);

/* Clocks. */
uint64_t now_ns(clockid_t clock);
uint64_t mono_in_ms(unsigned int ms);	/* absolute MONOTONIC deadline */
uint64_t rt_in_ms(unsigned int ms);	/* absolute REALTIME deadline */
void sleep_ms(unsigned int ms);

/*
 * A wait run in another thread or process.  Allocate with waiters_alloc()
 * (shared memory, so that process waiters can report back).
 */
struct waiter {
	/* inputs */
	int dev;
	bool all;
	bool process;
	int objs[NTSYNC_MAX_WAIT_COUNT + 1];
	uint32_t count, owner, alert, flags;
	uint64_t timeout;
	/* outputs */
	int ret, err;
	uint32_t index;
	uint64_t done_seq;
	/* bookkeeping */
	pid_t pid, tid;
	pthread_t thread;
	atomic_int state;	/* 0 new, 1 about to wait, 2 done */
	bool reaped;
};

struct waiter *waiters_alloc(unsigned int n);
void waiters_free(struct waiter *w, unsigned int n);
/* Fill in a wait-any (all=false) or wait-all; deadline = now + GUARD_MS. */
void waiter_setup(struct waiter *w, int dev, bool all, const int *objs,
		  uint32_t count, uint32_t owner);
/* One waiter of its own (free with waiters_free(w, 1)), set up as above. */
struct waiter *waiter_new(int dev, bool all, const int *objs, uint32_t count,
			  uint32_t owner);
/* Start in a new thread (or a forked child if w->process); returns 0. */
int waiter_start(struct waiter *w);
/* Poll until the waiter sleeps inside its ioctl; false after the guard. */
bool waiter_blocked(struct waiter *w);
bool waiter_done(struct waiter *w);
/*
 * Wait (up to the guard) for the waiter to return and reap it.  A hung
 * waiter is interrupted (thread: a signal without SA_RESTART; process:
 * SIGKILL) and false is returned.
 */
bool waiter_join(struct waiter *w);
/* Poll until at least n of the waiters are done (up to the guard);
 * returns how many are done. */
unsigned int waiters_until_done(struct waiter *w, unsigned int nw,
				unsigned int n);

/* Start and wait until blocked, failing the test at the caller's line. */
#define START_BLOCKED(w) do {						\
	assert_int_equal(waiter_start(w), 0);				\
	if (!waiter_blocked(w)) {					\
		print_error("waiter did not block in the wait "	\
			    "(state %d ret %d %s)\n",			\
			    atomic_load(&(w)->state), (w)->ret,	\
			    errname((w)->err));				\
		waiter_join(w);					\
		fail();							\
	}								\
} while (0)

#define JOIN(w) do {							\
	if (!waiter_join(w)) {						\
		print_error("waiter hung: was not woken within %u ms\n", \
			    GUARD_MS);					\
		fail();							\
	}								\
} while (0)

/* Check a finished waiter's result. */
#define ASSERT_WAITER_OK(w, idx) do {					\
	if ((w)->ret != 0) {						\
		print_error("waiter failed: %s\n", errname((w)->err));	\
		fail();							\
	}								\
	assert_int_equal((w)->index, (uint32_t)(idx));			\
} while (0)

#define ASSERT_WAITER_ERR(w, e) do {					\
	if ((w)->ret != -1 || (w)->err != (e)) {			\
		print_error("waiter: expected %s, got %d/%s\n",		\
			    errname(e), (w)->ret, errname((w)->err));	\
		fail();							\
	}								\
} while (0)

/*
 * Cleanup that runs however a test case ends.  fail() and skip() leave a
 * case by longjmp(), past the closes and frees at its end (and past
 * __attribute__((cleanup)), which longjmp() does not run).  What a case
 * hands to these is closed or freed by the teardown that
 * ntsync_test_main() gives every case that has none of its own; cmocka runs
 * it after the case passed, failed or skipped.  Each returns its argument,
 * which the case must then not close or free itself.
 */
int defer_close(int fd);
void *defer_free(void *p);

/* Signal used to rescue hung waiter threads (installed without SA_RESTART). */
#define RESCUE_SIGNAL SIGUSR2

/* Run one group of tests; need_device: exit 77 when /dev/ntsync is absent. */
int ntsync_test_main(int argc, char **argv, const char *group,
		     const struct CMUnitTest *tests, size_t count,
		     bool need_device);

#define NTSYNC_TEST_MAIN(group, tests, need_device)			\
	int main(int argc, char **argv)					\
	{								\
		return ntsync_test_main(argc, argv, group, tests,	\
					ARRAY_LEN(tests), need_device);	\
	}

#endif
