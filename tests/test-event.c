// SPDX-License-Identifier: LGPL-2.1-or-later
/* Events: creation, set/reset/pulse with previous state, read, acquisition. */

#include "common.h"

#include <fcntl.h>
#include <unistd.h>

/* §abi.mainline.1 §create.fd */
TEST(create_event_returns_cloexec_fd)
{
	int dev = DEV_OPEN();
	int event = NEW_EVENT(dev, 0, 0);

	assert_true(event > 2);
	assert_true(fcntl(event, F_GETFD) & FD_CLOEXEC);
	ASSERT_EVENT(event, 0, 0);
	close(event);
	close(dev);
}

/* §create.event */
TEST(create_event_all_four_kinds)
{
	int dev = DEV_OPEN();
	int a = NEW_EVENT(dev, 0, 0);
	int b = NEW_EVENT(dev, 0, 1);
	int c = NEW_EVENT(dev, 1, 0);
	int d = NEW_EVENT(dev, 1, 1);

	ASSERT_EVENT(a, 0, 0);
	ASSERT_EVENT(b, 0, 1);
	ASSERT_EVENT(c, 1, 0);
	ASSERT_EVENT(d, 1, 1);
	close(a);
	close(b);
	close(c);
	close(d);
	close(dev);
}

/* §create.event §event.read */
TEST(create_event_nonzero_flags_mean_true)
{
	int dev = DEV_OPEN();
	int event = NEW_EVENT(dev, 2, 0x100);

	/* "manual: on output, contains 1 if the event is manual-reset". */
	ASSERT_EVENT(event, 1, 1);
	close(event);
	close(dev);
}

/* §event.read */
TEST(event_read_writes_manual_and_signaled)
{
	int dev = DEV_OPEN();
	int event = NEW_EVENT(dev, 1, 0);
	struct ntsync_event_args args;

	memset(&args, 0xcc, sizeof(args));
	assert_int_equal(CHECK_OK(ioctl(event, NTSYNC_IOC_EVENT_READ, &args)), 0);
	assert_int_equal(args.manual, 1);
	assert_int_equal(args.signaled, 0);
	close(event);
	close(dev);
}

/*
 * op twice on an event of each kind created with signaled = from: the first
 * returns from, the second to, and the event is left at to.
 */
static void event_op_twice(int (*op)(int, uint32_t *), uint32_t from,
			   uint32_t to)
{
	int dev = DEV_OPEN();

	for (uint32_t manual = 0; manual < 2; manual++) {
		int event = NEW_EVENT(dev, manual, from);

		ASSERT_EVENT_OP(event, op, from, manual, to);
		ASSERT_EVENT_OP(event, op, to, manual, to);
		close(event);
	}
	close(dev);
}

/* §event.set */
TEST(event_set_returns_previous_state)
{
	event_op_twice(ntr_event_set, 0, 1);
}

/* §event.reset */
TEST(event_reset_returns_previous_state)
{
	event_op_twice(ntr_event_reset, 1, 0);
}

/* §event.pulse */
TEST(event_pulse_returns_previous_state_and_leaves_unsignaled)
{
	event_op_twice(ntr_event_pulse, 1, 0);
}

/* §event.pulse */
TEST(event_pulse_without_waiters_wakes_nothing_later)
{
	int dev = DEV_OPEN();
	int event = NEW_EVENT(dev, 1, 0);

	CHECK_OK(ntr_event_pulse(event, NULL));
	CHECK_ERR(wait_any(dev, &event, 1, 1, 0, NULL), ETIMEDOUT);
	ASSERT_EVENT(event, 1, 0);
	close(event);
	close(dev);
}

/* §obj.event §wait.acquire */
TEST(auto_event_is_reset_by_acquisition)
{
	int dev = DEV_OPEN();
	int event = NEW_EVENT(dev, 0, 1);
	uint32_t index = POISON32;

	CHECK_OK(wait_any(dev, &event, 1, 1, 0, &index));
	assert_int_equal(index, 0);
	ASSERT_EVENT(event, 0, 0);
	CHECK_ERR(wait_any(dev, &event, 1, 1, 0, NULL), ETIMEDOUT);
	close(event);
	close(dev);
}

/* §obj.event §wait.acquire */
TEST(manual_event_is_not_reset_by_acquisition)
{
	int dev = DEV_OPEN();
	int event = NEW_EVENT(dev, 1, 1);
	uint32_t index = POISON32;

	CHECK_OK(wait_any(dev, &event, 1, 1, 0, &index));
	assert_int_equal(index, 0);
	ASSERT_EVENT(event, 1, 1);
	index = POISON32;
	CHECK_OK(wait_all(dev, &event, 1, 1, 0, &index));
	assert_int_equal(index, 0);
	ASSERT_EVENT(event, 1, 1);
	close(event);
	close(dev);
}

/* §wait.acquire */
TEST(unsignaled_event_is_not_acquired)
{
	int dev = DEV_OPEN();
	int event = NEW_EVENT(dev, 0, 0);

	CHECK_ERR(wait_any(dev, &event, 1, 1, 0, NULL), ETIMEDOUT);
	CHECK_ERR(wait_all(dev, &event, 1, 1, 0, NULL), ETIMEDOUT);
	ASSERT_EVENT(event, 0, 0);
	close(event);
	close(dev);
}

static const struct CMUnitTest tests[] = {
	cmocka_unit_test(create_event_returns_cloexec_fd),
	cmocka_unit_test(create_event_all_four_kinds),
	cmocka_unit_test(create_event_nonzero_flags_mean_true),
	cmocka_unit_test(event_read_writes_manual_and_signaled),
	cmocka_unit_test(event_set_returns_previous_state),
	cmocka_unit_test(event_reset_returns_previous_state),
	cmocka_unit_test(event_pulse_returns_previous_state_and_leaves_unsignaled),
	cmocka_unit_test(event_pulse_without_waiters_wakes_nothing_later),
	cmocka_unit_test(auto_event_is_reset_by_acquisition),
	cmocka_unit_test(manual_event_is_not_reset_by_acquisition),
	cmocka_unit_test(unsignaled_event_is_not_acquired),
};

NTSYNC_TEST_MAIN("event", tests, true)
