// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host test (no device needed): the project's <linux/ntsync.h> must match
 * the mainline ABI byte for byte.  Every number below is copied from the
 * tables in doc/abi.md; they are facts of the ABI, not choices, so
 * they are written as literals and never derived from the header.  A
 * request number is the one thing that differs between architectures: it
 * is computed from the ABI's direction, number and size with this
 * machine's encoding, and both encodings' values are checked.
 */

#include "common.h"

#define CHECK_FIELD(type, field, off, size) do {			\
	assert_int_equal(offsetof(struct type, field), (off));		\
	assert_int_equal(sizeof(((struct type *)0)->field), (size));	\
} while (0)

/*
 * The ioctls as the ABI defines them: direction, number and argument size
 * (type 'N'), and the request number each gives in both encodings Linux
 * uses (doc/abi.md): the generic one of asm-generic/ioctl.h (x86, arm,
 * arm64, riscv, s390: two direction bits at 30, _IOC_WRITE 1, _IOC_READ 2,
 * 14 size bits) and the one of powerpc, mips, sparc and alpha (three
 * direction bits at 29, _IOC_WRITE 4, _IOC_READ 2, 13 size bits).
 */
enum { W = 1, R = 2 };

static const struct {
	const char *name;
	unsigned int value;		/* the header's, on this machine */
	unsigned int dir, nr, size;
	unsigned int generic, powerpc;	/* doc/abi.md's two columns */
} ioctls[] = {
#define IOCTL(n, d, nr, sz, g, p) { #n, NTSYNC_IOC_##n, d, nr, sz, g, p }
	IOCTL(CREATE_SEM, W, 0x80, 8, 0x40084E80U, 0x80084E80U),
	IOCTL(SEM_RELEASE, R | W, 0x81, 4, 0xC0044E81U, 0xC0044E81U),
	IOCTL(WAIT_ANY, R | W, 0x82, 40, 0xC0284E82U, 0xC0284E82U),
	IOCTL(WAIT_ALL, R | W, 0x83, 40, 0xC0284E83U, 0xC0284E83U),
	IOCTL(CREATE_MUTEX, W, 0x84, 8, 0x40084E84U, 0x80084E84U),
	IOCTL(MUTEX_UNLOCK, R | W, 0x85, 8, 0xC0084E85U, 0xC0084E85U),
	IOCTL(MUTEX_KILL, W, 0x86, 4, 0x40044E86U, 0x80044E86U),
	IOCTL(CREATE_EVENT, W, 0x87, 8, 0x40084E87U, 0x80084E87U),
	IOCTL(EVENT_SET, R, 0x88, 4, 0x80044E88U, 0x40044E88U),
	IOCTL(EVENT_RESET, R, 0x89, 4, 0x80044E89U, 0x40044E89U),
	IOCTL(EVENT_PULSE, R, 0x8a, 4, 0x80044E8AU, 0x40044E8AU),
	IOCTL(SEM_READ, R, 0x8b, 8, 0x80084E8BU, 0x40084E8BU),
	IOCTL(MUTEX_READ, R, 0x8c, 8, 0x80084E8CU, 0x40084E8CU),
	IOCTL(EVENT_READ, R, 0x8d, 8, 0x80084E8DU, 0x40084E8DU),
#undef IOCTL
};

static unsigned int encode_generic(unsigned int dir, unsigned int nr, unsigned int size)
{
	return (dir & (R | W)) << 30 | (size & 0x3fff) << 16 | 'N' << 8 | nr;
}

static unsigned int encode_powerpc(unsigned int dir, unsigned int nr, unsigned int size)
{
	unsigned int d = (dir & W ? 4 : 0) | (dir & R ? 2 : 0);

	return d << 29 | (size & 0x1fff) << 16 | 'N' << 8 | nr;
}

/* This machine's encoding: the one its <asm/ioctl.h> uses. */
#if defined(__powerpc__) || defined(__mips__) || defined(__sparc__) || defined(__alpha__)
#define encode_here encode_powerpc
#define ENCODING "powerpc"
#else
#define encode_here encode_generic
#define ENCODING "generic"
#endif

/* §abi.ioctls */
TEST(ioctl_numbers_match_mainline)
{
	for (size_t i = 0; i < sizeof(ioctls) / sizeof(ioctls[0]); i++) {
		unsigned int d = ioctls[i].dir, nr = ioctls[i].nr, sz = ioctls[i].size;

		/* both columns of doc/abi.md follow from direction, number and size */
		if (encode_generic(d, nr, sz) != ioctls[i].generic ||
		    encode_powerpc(d, nr, sz) != ioctls[i].powerpc)
			fail_msg("NTSYNC_IOC_%s: doc/abi.md's values 0x%08X/0x%08X, encoded 0x%08X/0x%08X",
				 ioctls[i].name, ioctls[i].generic, ioctls[i].powerpc,
				 encode_generic(d, nr, sz), encode_powerpc(d, nr, sz));
		/* and the header gives this machine's */
		if (ioctls[i].value != encode_here(d, nr, sz))
			fail_msg("NTSYNC_IOC_%s is 0x%08X, the %s encoding gives 0x%08X", ioctls[i].name,
				 ioctls[i].value, ENCODING, encode_here(d, nr, sz));
	}
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
