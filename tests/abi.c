// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host test (no device needed): the project's <linux/ntsync.h> must match
 * the mainline ABI byte for byte.  Every number below is copied from the
 * table in doc/abi.md; they are facts of the ABI, not choices, so
 * they are written as literals and never derived from the header.
 */

#include "common.h"

#define CHECK_FIELD(type, field, off, size) do {			\
	assert_int_equal(offsetof(struct type, field), (off));		\
	assert_int_equal(sizeof(((struct type *)0)->field), (size));	\
} while (0)

/* §abi.ioctls */
TEST(ioctl_numbers_match_mainline)
{
	assert_int_equal(NTSYNC_IOC_CREATE_SEM, 0x40084E80U);
	assert_int_equal(NTSYNC_IOC_SEM_RELEASE, 0xC0044E81U);
	assert_int_equal(NTSYNC_IOC_WAIT_ANY, 0xC0284E82U);
	assert_int_equal(NTSYNC_IOC_WAIT_ALL, 0xC0284E83U);
	assert_int_equal(NTSYNC_IOC_CREATE_MUTEX, 0x40084E84U);
	assert_int_equal(NTSYNC_IOC_MUTEX_UNLOCK, 0xC0084E85U);
	assert_int_equal(NTSYNC_IOC_MUTEX_KILL, 0x40044E86U);
	assert_int_equal(NTSYNC_IOC_CREATE_EVENT, 0x40084E87U);
	assert_int_equal(NTSYNC_IOC_EVENT_SET, 0x80044E88U);
	assert_int_equal(NTSYNC_IOC_EVENT_RESET, 0x80044E89U);
	assert_int_equal(NTSYNC_IOC_EVENT_PULSE, 0x80044E8AU);
	assert_int_equal(NTSYNC_IOC_SEM_READ, 0x80084E8BU);
	assert_int_equal(NTSYNC_IOC_MUTEX_READ, 0x80084E8CU);
	assert_int_equal(NTSYNC_IOC_EVENT_READ, 0x80084E8DU);
}

/* §abi.constants */
TEST(constants_match_mainline)
{
	assert_int_equal(NTSYNC_WAIT_REALTIME, 0x1);
	assert_int_equal(NTSYNC_MAX_WAIT_COUNT, 64);
}

/* §abi.structs */
TEST(sem_args_layout)
{
	assert_int_equal(sizeof(struct ntsync_sem_args), 8);
	CHECK_FIELD(ntsync_sem_args, count, 0, 4);
	CHECK_FIELD(ntsync_sem_args, max, 4, 4);
}

/* §abi.structs */
TEST(mutex_args_layout)
{
	assert_int_equal(sizeof(struct ntsync_mutex_args), 8);
	CHECK_FIELD(ntsync_mutex_args, owner, 0, 4);
	CHECK_FIELD(ntsync_mutex_args, count, 4, 4);
}

/* §abi.structs */
TEST(event_args_layout)
{
	assert_int_equal(sizeof(struct ntsync_event_args), 8);
	CHECK_FIELD(ntsync_event_args, manual, 0, 4);
	CHECK_FIELD(ntsync_event_args, signaled, 4, 4);
}

/* §abi.structs §abi.mainline.2 */
TEST(wait_args_layout)
{
	assert_int_equal(sizeof(struct ntsync_wait_args), 40);
	CHECK_FIELD(ntsync_wait_args, timeout, 0, 8);
	CHECK_FIELD(ntsync_wait_args, objs, 8, 8);
	CHECK_FIELD(ntsync_wait_args, count, 16, 4);
	CHECK_FIELD(ntsync_wait_args, index, 20, 4);
	CHECK_FIELD(ntsync_wait_args, flags, 24, 4);
	CHECK_FIELD(ntsync_wait_args, owner, 28, 4);
	CHECK_FIELD(ntsync_wait_args, alert, 32, 4);
	CHECK_FIELD(ntsync_wait_args, pad, 36, 4);
}

/* The ioctl encodings: direction, type 'N', number and argument size. */
/* §abi.ioctls */
TEST(ioctl_encodings_match_structs)
{
	assert_int_equal(_IOC_TYPE(NTSYNC_IOC_CREATE_SEM), 'N');
	assert_int_equal(_IOC_DIR(NTSYNC_IOC_CREATE_SEM), _IOC_WRITE);
	assert_int_equal(_IOC_SIZE(NTSYNC_IOC_CREATE_SEM), 8);
	assert_int_equal(_IOC_DIR(NTSYNC_IOC_SEM_RELEASE), _IOC_READ | _IOC_WRITE);
	assert_int_equal(_IOC_SIZE(NTSYNC_IOC_SEM_RELEASE), 4);
	assert_int_equal(_IOC_SIZE(NTSYNC_IOC_WAIT_ANY), 40);
	assert_int_equal(_IOC_SIZE(NTSYNC_IOC_WAIT_ALL), 40);
	assert_int_equal(_IOC_DIR(NTSYNC_IOC_MUTEX_KILL), _IOC_WRITE);
	assert_int_equal(_IOC_DIR(NTSYNC_IOC_EVENT_SET), _IOC_READ);
	assert_int_equal(_IOC_NR(NTSYNC_IOC_EVENT_READ), 0x8d);
}

static const struct CMUnitTest tests[] = {
	cmocka_unit_test(ioctl_numbers_match_mainline),
	cmocka_unit_test(constants_match_mainline),
	cmocka_unit_test(sem_args_layout),
	cmocka_unit_test(mutex_args_layout),
	cmocka_unit_test(event_args_layout),
	cmocka_unit_test(wait_args_layout),
	cmocka_unit_test(ioctl_encodings_match_structs),
};

NTSYNC_TEST_MAIN("abi", tests, false)
