// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Mutexes: creation limits, unlock/kill with owners, recursion up to
 * UINT32_MAX, abandonment and EOWNERDEAD from reads and waits.
 */

#include "common.h"

#include <fcntl.h>
#include <unistd.h>

/* §create.mutex §abi.mainline.1 §create.fd */
TEST(create_mutex_returns_cloexec_fd)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 0, 0);

	assert_true(mutex > 2);
	assert_true(fcntl(mutex, F_GETFD) & FD_CLOEXEC);
	ASSERT_MUTEX(mutex, 0, 0);
	close(mutex);
	close(dev);
}

/* §obj.owner §create.mutex */
TEST(create_mutex_owned_with_count)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 123, 5);

	ASSERT_MUTEX(mutex, 123, 5);
	close(mutex);
	close(dev);
}

/* §create.mutex */
TEST(create_mutex_owner_without_count_is_einval)
{
	int dev = DEV_OPEN();
	int next_fd = lowest_free_fd();

	CHECK_ERR(ntr_create_mutex(dev, 1, 0), EINVAL);
	assert_int_equal(lowest_free_fd(), next_fd);
	close(dev);
}

/* §create.mutex */
TEST(create_mutex_count_without_owner_is_einval)
{
	int dev = DEV_OPEN();
	int next_fd = lowest_free_fd();

	CHECK_ERR(ntr_create_mutex(dev, 0, 1), EINVAL);
	CHECK_ERR(ntr_create_mutex(dev, 0, UINT32_MAX), EINVAL);
	assert_int_equal(lowest_free_fd(), next_fd);
	close(dev);
}

/* §mutex.read */
TEST(mutex_read_writes_owner_and_count)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 77, 3);
	struct ntsync_mutex_args args;

	memset(&args, 0xcc, sizeof(args));
	assert_int_equal(CHECK_OK(ioctl(mutex, NTSYNC_IOC_MUTEX_READ, &args)), 0);
	assert_int_equal(args.owner, 77);
	assert_int_equal(args.count, 3);
	close(mutex);
	close(dev);
}

/* §mutex.unlock */
TEST(mutex_unlock_returns_previous_count)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 1, 2);
	struct ntsync_mutex_args args = { .owner = 1, .count = POISON32 };

	assert_int_equal(CHECK_OK(ioctl(mutex, NTSYNC_IOC_MUTEX_UNLOCK, &args)), 0);
	assert_int_equal(args.count, 2);
	assert_int_equal(args.owner, 1);
	ASSERT_MUTEX(mutex, 1, 1);
	args.count = POISON32;
	CHECK_OK(ioctl(mutex, NTSYNC_IOC_MUTEX_UNLOCK, &args));
	assert_int_equal(args.count, 1);
	/* Count zero: unowned again. */
	ASSERT_MUTEX(mutex, 0, 0);
	close(mutex);
	close(dev);
}

/* §mutex.unlock */
TEST(mutex_unlock_owner_zero_is_einval)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 1, 1);
	int unowned = NEW_MUTEX(dev, 0, 0);

	CHECK_ERR(ntr_mutex_unlock(mutex, 0, NULL), EINVAL);
	ASSERT_MUTEX(mutex, 1, 1);
	CHECK_ERR(ntr_mutex_unlock(unowned, 0, NULL), EINVAL);
	ASSERT_MUTEX(unowned, 0, 0);
	close(mutex);
	close(unowned);
	close(dev);
}

/* §mutex.unlock */
TEST(mutex_unlock_by_other_owner_is_eperm)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 1, 2);
	uint32_t prev = POISON32;

	CHECK_ERR(ntr_mutex_unlock(mutex, 2, &prev), EPERM);
	ASSERT_MUTEX(mutex, 1, 2);
	close(mutex);
	close(dev);
}

/* §mutex.unlock */
TEST(mutex_unlock_unowned_is_eperm)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 0, 0);

	CHECK_ERR(ntr_mutex_unlock(mutex, 1, NULL), EPERM);
	ASSERT_MUTEX(mutex, 0, 0);
	close(mutex);
	close(dev);
}

/* §obj.mutex §wait.acquire */
TEST(mutex_wait_acquires_and_recurses)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 0, 0);

	ASSERT_WAIT_INDEX(0, dev, false, &mutex, 1, 10, 0);
	ASSERT_MUTEX(mutex, 10, 1);
	ASSERT_WAIT_INDEX(0, dev, false, &mutex, 1, 10, 0);
	ASSERT_MUTEX(mutex, 10, 2);
	close(mutex);
	close(dev);
}

/* §obj.mutex */
TEST(mutex_owned_by_other_is_not_acquired)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 10, 1);

	CHECK_ERR(wait_any(dev, &mutex, 1, 11, 0, NULL), ETIMEDOUT);
	ASSERT_MUTEX(mutex, 10, 1);
	CHECK_ERR(wait_all(dev, &mutex, 1, 11, 0, NULL), ETIMEDOUT);
	ASSERT_MUTEX(mutex, 10, 1);
	close(mutex);
	close(dev);
}

/* §mutex.unlock §silent.mutex-max */
TEST(mutex_recursion_up_to_u32_max)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 5, UINT32_MAX - 1);
	uint32_t prev = POISON32;

	ASSERT_WAIT_INDEX(0, dev, false, &mutex, 1, 5, 0);
	ASSERT_MUTEX(mutex, 5, UINT32_MAX);
	/* At UINT32_MAX the mutex is not signaled, even for its owner. */
	CHECK_ERR(wait_any(dev, &mutex, 1, 5, 0, NULL), ETIMEDOUT);
	CHECK_ERR(wait_all(dev, &mutex, 1, 5, 0, NULL), ETIMEDOUT);
	ASSERT_MUTEX(mutex, 5, UINT32_MAX);
	CHECK_OK(ntr_mutex_unlock(mutex, 5, &prev));
	assert_int_equal(prev, UINT32_MAX);
	ASSERT_MUTEX(mutex, 5, UINT32_MAX - 1);
	close(mutex);
	close(dev);
}

/* §silent.mutex-max */
TEST(create_mutex_at_u32_max_is_not_signaled_for_owner)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 5, UINT32_MAX);

	ASSERT_MUTEX(mutex, 5, UINT32_MAX);
	CHECK_ERR(wait_any(dev, &mutex, 1, 5, 0, NULL), ETIMEDOUT);
	ASSERT_MUTEX(mutex, 5, UINT32_MAX);
	close(mutex);
	close(dev);
}

/* §obj.abandoned */
TEST(mutex_kill_abandons_the_mutex)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 3, 4);

	assert_int_equal(CHECK_OK(ntr_mutex_kill(mutex, 3)), 0);
	ASSERT_MUTEX_ABANDONED(mutex);
	close(mutex);
	close(dev);
}

/* §mutex.read */
TEST(mutex_read_of_abandoned_mutex_is_eownerdead_with_zeros)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 3, 4);
	struct ntsync_mutex_args args;

	CHECK_OK(ntr_mutex_kill(mutex, 3));
	memset(&args, 0xcc, sizeof(args));
	CHECK_ERR(ioctl(mutex, NTSYNC_IOC_MUTEX_READ, &args), EOWNERDEAD);
	assert_int_equal(args.owner, 0);
	assert_int_equal(args.count, 0);
	/* Reading does not clear the abandoned state. */
	ASSERT_MUTEX_ABANDONED(mutex);
	close(mutex);
	close(dev);
}

/* §mutex.kill */
TEST(mutex_kill_owner_zero_is_einval)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 3, 1);
	int unowned = NEW_MUTEX(dev, 0, 0);

	CHECK_ERR(ntr_mutex_kill(mutex, 0), EINVAL);
	ASSERT_MUTEX(mutex, 3, 1);
	CHECK_ERR(ntr_mutex_kill(unowned, 0), EINVAL);
	ASSERT_MUTEX(unowned, 0, 0);
	close(mutex);
	close(unowned);
	close(dev);
}

/* §mutex.kill */
TEST(mutex_kill_by_non_owner_is_eperm)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 3, 2);

	CHECK_ERR(ntr_mutex_kill(mutex, 4), EPERM);
	ASSERT_MUTEX(mutex, 3, 2);
	close(mutex);
	close(dev);
}

/* §mutex.kill */
TEST(mutex_kill_unowned_is_eperm)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 0, 0);

	CHECK_ERR(ntr_mutex_kill(mutex, 4), EPERM);
	ASSERT_MUTEX(mutex, 0, 0);
	close(mutex);
	close(dev);
}

/* §mutex.kill */
TEST(mutex_kill_or_unlock_of_abandoned_mutex_is_eperm)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 3, 1);

	CHECK_OK(ntr_mutex_kill(mutex, 3));
	CHECK_ERR(ntr_mutex_kill(mutex, 3), EPERM);
	CHECK_ERR(ntr_mutex_unlock(mutex, 3, NULL), EPERM);
	ASSERT_MUTEX_ABANDONED(mutex);
	close(mutex);
	close(dev);
}

/* §obj.abandoned §wait.any.abandoned */
TEST(abandoned_mutex_wait_any_is_eownerdead_and_acquires)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 3, 2);
	int sem = NEW_SEM(dev, 0, 1);
	int objs[2] = { sem, mutex };
	uint32_t index = POISON32;

	CHECK_OK(ntr_mutex_kill(mutex, 3));
	CHECK_ERR(wait_any(dev, objs, 2, 9, 0, &index), EOWNERDEAD);
	assert_int_equal(index, 1);
	/* Owned by the waiter, count 1, no longer abandoned. */
	ASSERT_MUTEX(mutex, 9, 1);
	ASSERT_SEM(sem, 0, 1);
	close(mutex);
	close(sem);
	close(dev);
}

/* §obj.owner */
TEST(abandoned_mutex_reacquired_by_its_dead_owner_id)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 3, 2);
	uint32_t index = POISON32;

	CHECK_OK(ntr_mutex_kill(mutex, 3));
	/* Owner ids are not interpreted: the old id may acquire it again. */
	CHECK_ERR(wait_any(dev, &mutex, 1, 3, 0, &index), EOWNERDEAD);
	assert_int_equal(index, 0);
	ASSERT_MUTEX(mutex, 3, 1);
	close(mutex);
	close(dev);
}

/* §wait.all.abandoned */
TEST(abandoned_mutex_wait_all_is_eownerdead_and_acquires_all)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 3, 1);
	int sem = NEW_SEM(dev, 2, 2);
	int event = NEW_EVENT(dev, 0, 1);
	int objs[3] = { sem, mutex, event };
	uint32_t index = POISON32;

	CHECK_OK(ntr_mutex_kill(mutex, 3));
	CHECK_ERR(wait_all(dev, objs, 3, 9, 0, &index), EOWNERDEAD);
	assert_int_equal(index, 0);
	ASSERT_MUTEX(mutex, 9, 1);
	ASSERT_SEM(sem, 1, 2);
	ASSERT_EVENT(event, 0, 0);
	close(mutex);
	close(sem);
	close(event);
	close(dev);
}

/* §wait.any.abandoned */
TEST(abandoned_state_cleared_by_one_acquisition)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 3, 1);
	uint32_t index, prev = POISON32;

	CHECK_OK(ntr_mutex_kill(mutex, 3));
	CHECK_ERR(wait_any(dev, &mutex, 1, 9, 0, NULL), EOWNERDEAD);
	CHECK_OK(ntr_mutex_unlock(mutex, 9, &prev));
	assert_int_equal(prev, 1);
	ASSERT_MUTEX(mutex, 0, 0);
	index = POISON32;
	assert_int_equal(CHECK_OK(wait_any(dev, &mutex, 1, 10, 0, &index)), 0);
	assert_int_equal(index, 0);
	ASSERT_MUTEX(mutex, 10, 1);
	close(mutex);
	close(dev);
}

/* §mutex.kill */
TEST(mutex_kill_after_recursion_resets_count)
{
	int dev = DEV_OPEN();
	int mutex = NEW_MUTEX(dev, 0, 0);

	CHECK_OK(wait_any(dev, &mutex, 1, 4, 0, NULL));
	CHECK_OK(wait_any(dev, &mutex, 1, 4, 0, NULL));
	CHECK_OK(wait_any(dev, &mutex, 1, 4, 0, NULL));
	ASSERT_MUTEX(mutex, 4, 3);
	CHECK_OK(ntr_mutex_kill(mutex, 4));
	ASSERT_MUTEX_ABANDONED(mutex);
	CHECK_ERR(wait_any(dev, &mutex, 1, 5, 0, NULL), EOWNERDEAD);
	ASSERT_MUTEX(mutex, 5, 1);
	close(mutex);
	close(dev);
}

static const struct CMUnitTest tests[] = {
	cmocka_unit_test(create_mutex_returns_cloexec_fd),
	cmocka_unit_test(create_mutex_owned_with_count),
	cmocka_unit_test(create_mutex_owner_without_count_is_einval),
	cmocka_unit_test(create_mutex_count_without_owner_is_einval),
	cmocka_unit_test(mutex_read_writes_owner_and_count),
	cmocka_unit_test(mutex_unlock_returns_previous_count),
	cmocka_unit_test(mutex_unlock_owner_zero_is_einval),
	cmocka_unit_test(mutex_unlock_by_other_owner_is_eperm),
	cmocka_unit_test(mutex_unlock_unowned_is_eperm),
	cmocka_unit_test(mutex_wait_acquires_and_recurses),
	cmocka_unit_test(mutex_owned_by_other_is_not_acquired),
	cmocka_unit_test(mutex_recursion_up_to_u32_max),
	cmocka_unit_test(create_mutex_at_u32_max_is_not_signaled_for_owner),
	cmocka_unit_test(mutex_kill_abandons_the_mutex),
	cmocka_unit_test(mutex_read_of_abandoned_mutex_is_eownerdead_with_zeros),
	cmocka_unit_test(mutex_kill_owner_zero_is_einval),
	cmocka_unit_test(mutex_kill_by_non_owner_is_eperm),
	cmocka_unit_test(mutex_kill_unowned_is_eperm),
	cmocka_unit_test(mutex_kill_or_unlock_of_abandoned_mutex_is_eperm),
	cmocka_unit_test(abandoned_mutex_wait_any_is_eownerdead_and_acquires),
	cmocka_unit_test(abandoned_mutex_reacquired_by_its_dead_owner_id),
	cmocka_unit_test(abandoned_mutex_wait_all_is_eownerdead_and_acquires_all),
	cmocka_unit_test(abandoned_state_cleared_by_one_acquisition),
	cmocka_unit_test(mutex_kill_after_recursion_resets_count),
};

NTSYNC_TEST_MAIN("mutex", tests, true)
