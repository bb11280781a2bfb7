// SPDX-License-Identifier: LGPL-2.1-or-later
/* Semaphores: creation limits, release with previous count, overflow, read. */

#include "common.h"

#include <fcntl.h>
#include <unistd.h>

/* §obj.sem §abi.mainline.1 §create.fd */
TEST(create_sem_returns_cloexec_fd)
{
	int dev = DEV_OPEN();
	int sem = NEW_SEM(dev, 1, 2);

	assert_true(sem > 2);
	assert_int_not_equal(sem, dev);
	assert_true(fcntl(sem, F_GETFD) & FD_CLOEXEC);
	ASSERT_SEM(sem, 1, 2);
	close(sem);
	close(dev);
}

/* §create.sem */
TEST(create_sem_count_above_max_is_einval)
{
	int dev = DEV_OPEN();
	int next_fd = lowest_free_fd();

	CHECK_ERR(ntr_create_sem(dev, 3, 2), EINVAL);
	CHECK_ERR(ntr_create_sem(dev, 1, 0), EINVAL);
	CHECK_ERR(ntr_create_sem(dev, UINT32_MAX, UINT32_MAX - 1), EINVAL);
	/* A failed create leaves no descriptor behind. */
	assert_int_equal(lowest_free_fd(), next_fd);
	close(dev);
}

/* §obj.sem §create.sem */
TEST(create_sem_count_equal_max_and_zero_limits)
{
	int dev = DEV_OPEN();
	int a = NEW_SEM(dev, 2, 2);
	int b = NEW_SEM(dev, 0, 0);
	int c = NEW_SEM(dev, UINT32_MAX, UINT32_MAX);
	int d = NEW_SEM(dev, 0, UINT32_MAX);

	ASSERT_SEM(a, 2, 2);
	ASSERT_SEM(b, 0, 0);
	ASSERT_SEM(c, UINT32_MAX, UINT32_MAX);
	ASSERT_SEM(d, 0, UINT32_MAX);
	close(a);
	close(b);
	close(c);
	close(d);
	close(dev);
}

/* §sem.release */
TEST(sem_release_returns_previous_count)
{
	int dev = DEV_OPEN();
	int sem = NEW_SEM(dev, 0, 10);

	ASSERT_SEM_RELEASE(sem, 1, 0, 1, 10);
	ASSERT_SEM_RELEASE(sem, 4, 1, 5, 10);
	close(sem);
	close(dev);
}

/* §sem.release §silent.release-zero */
TEST(sem_release_zero_changes_nothing)
{
	int dev = DEV_OPEN();
	int sem = NEW_SEM(dev, 3, 10);

	ASSERT_SEM_RELEASE(sem, 0, 3, 3, 10);
	close(sem);
	close(dev);
}

/* §sem.release */
TEST(sem_release_up_to_max)
{
	int dev = DEV_OPEN();
	int sem = NEW_SEM(dev, 1, 3);

	ASSERT_SEM_RELEASE(sem, 2, 1, 3, 3);
	close(sem);
	close(dev);
}

/* §sem.release */
TEST(sem_release_past_max_is_eoverflow_and_unchanged)
{
	int dev = DEV_OPEN();
	int sem = NEW_SEM(dev, 1, 2);
	uint32_t arg = 2;

	CHECK_ERR(ioctl(sem, NTSYNC_IOC_SEM_RELEASE, &arg), EOVERFLOW);
	ASSERT_SEM(sem, 1, 2);
	arg = UINT32_MAX;
	CHECK_ERR(ioctl(sem, NTSYNC_IOC_SEM_RELEASE, &arg), EOVERFLOW);
	ASSERT_SEM(sem, 1, 2);
	close(sem);
	close(dev);
}

/* §sem.release */
TEST(sem_release_at_u32_max_is_eoverflow)
{
	int dev = DEV_OPEN();
	int full = NEW_SEM(dev, UINT32_MAX, UINT32_MAX);
	int one = NEW_SEM(dev, 1, UINT32_MAX);
	uint32_t arg = 1;

	CHECK_ERR(ioctl(full, NTSYNC_IOC_SEM_RELEASE, &arg), EOVERFLOW);
	ASSERT_SEM(full, UINT32_MAX, UINT32_MAX);
	/* 1 + UINT32_MAX wraps in 32 bits: must still be an overflow. */
	arg = UINT32_MAX;
	CHECK_ERR(ioctl(one, NTSYNC_IOC_SEM_RELEASE, &arg), EOVERFLOW);
	ASSERT_SEM(one, 1, UINT32_MAX);
	arg = UINT32_MAX - 1;
	CHECK_OK(ioctl(one, NTSYNC_IOC_SEM_RELEASE, &arg));
	assert_int_equal(arg, 1);
	ASSERT_SEM(one, UINT32_MAX, UINT32_MAX);
	close(full);
	close(one);
	close(dev);
}

/* §sem.read */
TEST(sem_read_writes_count_and_max)
{
	int dev = DEV_OPEN();
	int sem = NEW_SEM(dev, 7, 9);
	struct ntsync_sem_args args;

	memset(&args, 0xcc, sizeof(args));
	assert_int_equal(CHECK_OK(ioctl(sem, NTSYNC_IOC_SEM_READ, &args)), 0);
	assert_int_equal(args.count, 7);
	assert_int_equal(args.max, 9);
	close(sem);
	close(dev);
}

/* §obj.sem */
TEST(sem_wait_decrements_until_unsignaled)
{
	int dev = DEV_OPEN();
	int sem = NEW_SEM(dev, 2, 2);
	uint32_t index;

	CHECK_OK(wait_any(dev, &sem, 1, 1, 0, &index));
	assert_int_equal(index, 0);
	ASSERT_SEM(sem, 1, 2);
	CHECK_OK(wait_any(dev, &sem, 1, 1, 0, &index));
	ASSERT_SEM(sem, 0, 2);
	index = POISON32;
	CHECK_ERR(wait_any(dev, &sem, 1, 1, 0, &index), ETIMEDOUT);
	ASSERT_SEM(sem, 0, 2);
	close(sem);
	close(dev);
}

/* §obj.sem */
TEST(sem_objects_are_independent)
{
	int dev = DEV_OPEN();
	int a = NEW_SEM(dev, 0, 5);
	int b = NEW_SEM(dev, 0, 5);

	CHECK_OK(ntr_sem_release(a, 3, NULL));
	ASSERT_SEM(a, 3, 5);
	ASSERT_SEM(b, 0, 5);
	close(a);
	close(b);
	close(dev);
}

static const struct CMUnitTest tests[] = {
	cmocka_unit_test(create_sem_returns_cloexec_fd),
	cmocka_unit_test(create_sem_count_above_max_is_einval),
	cmocka_unit_test(create_sem_count_equal_max_and_zero_limits),
	cmocka_unit_test(sem_release_returns_previous_count),
	cmocka_unit_test(sem_release_zero_changes_nothing),
	cmocka_unit_test(sem_release_up_to_max),
	cmocka_unit_test(sem_release_past_max_is_eoverflow_and_unchanged),
	cmocka_unit_test(sem_release_at_u32_max_is_eoverflow),
	cmocka_unit_test(sem_read_writes_count_and_max),
	cmocka_unit_test(sem_wait_decrements_until_unsignaled),
	cmocka_unit_test(sem_objects_are_independent),
};

NTSYNC_TEST_MAIN("sem", tests, true)
