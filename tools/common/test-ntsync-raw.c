// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host unit test of ntsync-raw.h, no device needed: linked with
 * -Wl,--wrap=ioctl, every wrapper's ioctl lands in __wrap_ioctl below,
 * which records the request and the argument block and plays the kernel
 * (writes outputs, or fails with an errno).  Checks that each wrapper sends
 * the right request with the right fields (the wait's index poisoned, pad
 * and flags as given), copies the outputs back, keeps the poison where the
 * "kernel" wrote nothing, and returns -1 with errno on failure.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ntsync-raw.h"
#include "unit-check.h"

/* the last ioctl seen */
static int last_fd;
static unsigned long last_req;
static unsigned char last_arg[64];
/* what the fake kernel does next: fail with fail_errno, else write reply */
static int fail_errno;
static unsigned char reply[64];
static size_t reply_len;
static int ret_value;

int __wrap_ioctl(int fd, unsigned long req, ...);
int __wrap_ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;
	size_t size = _IOC_SIZE(req);

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	last_fd = fd;
	last_req = req;
	memset(last_arg, 0, sizeof(last_arg));
	if (arg && size <= sizeof(last_arg))
		memcpy(last_arg, arg, size);
	if (fail_errno) {
		errno = fail_errno;
		return -1;
	}
	if (reply_len)
		memcpy(arg, reply, reply_len);
	return ret_value;
}

static void kernel(int ret, const void *out, size_t len, int err)
{
	ret_value = ret;
	fail_errno = err;
	reply_len = len;
	if (len)
		memcpy(reply, out, len);
}

int main(void)
{
	uint32_t a, b, prev;
	int objs[3] = { 7, 8, 9 };

	/* creates: the request, the args, the descriptor returned */
	kernel(42, NULL, 0, 0);
	CHECK(ntr_create_sem(3, 1, 5) == 42 && last_fd == 3 && last_req == NTSYNC_IOC_CREATE_SEM,
	      "create_sem");
	{
		struct ntsync_sem_args s;

		memcpy(&s, last_arg, sizeof(s));
		CHECK(s.count == 1 && s.max == 5, "create_sem args %u %u", s.count, s.max);
	}
	CHECK(ntr_create_mutex(3, 9, 2) == 42 && last_req == NTSYNC_IOC_CREATE_MUTEX, "create_mutex");
	{
		struct ntsync_mutex_args m;

		memcpy(&m, last_arg, sizeof(m));
		CHECK(m.owner == 9 && m.count == 2, "create_mutex args");
	}
	CHECK(ntr_create_event(3, 1, 0) == 42 && last_req == NTSYNC_IOC_CREATE_EVENT, "create_event");
	{
		struct ntsync_event_args e;

		memcpy(&e, last_arg, sizeof(e));
		CHECK(e.manual == 1 && e.signaled == 0, "create_event args");
	}

	/* sem_release: in n, out the previous count */
	{
		uint32_t was = 4;

		kernel(0, &was, sizeof(was), 0);
		CHECK(ntr_sem_release(5, 3, &prev) == 0 && prev == 4 && last_req == NTSYNC_IOC_SEM_RELEASE,
		      "sem_release prev %u", prev);
		CHECK(*(uint32_t *)last_arg == 3, "sem_release sent %u", *(uint32_t *)last_arg);
		CHECK(ntr_sem_release(5, 3, NULL) == 0, "sem_release without prev");
	}
	/* reads: outputs copied; where the kernel wrote nothing, the poison */
	{
		struct ntsync_sem_args s = { .count = 2, .max = 6 };

		kernel(0, &s, sizeof(s), 0);
		CHECK(ntr_sem_read(5, &a, &b) == 0 && a == 2 && b == 6 &&
		      last_req == NTSYNC_IOC_SEM_READ, "sem_read %u %u", a, b);
		CHECK(((struct ntsync_sem_args *)last_arg)->count == NTR_POISON32, "sem_read not poisoned");
		kernel(-1, NULL, 0, EINVAL);
		errno = 0;
		CHECK(ntr_sem_read(5, &a, &b) == -1 && errno == EINVAL && a == NTR_POISON32 &&
		      b == NTR_POISON32, "failed sem_read: %d %u %u", errno, a, b);
	}
	{
		struct ntsync_mutex_args m = { .owner = 3, .count = 1 };

		kernel(0, &m, sizeof(m), 0);
		CHECK(ntr_mutex_read(6, &a, &b) == 0 && a == 3 && b == 1 &&
		      last_req == NTSYNC_IOC_MUTEX_READ, "mutex_read");
		m.count = 7;
		kernel(0, &m, sizeof(m), 0);
		CHECK(ntr_mutex_unlock(6, 3, &prev) == 0 && prev == 7 &&
		      last_req == NTSYNC_IOC_MUTEX_UNLOCK, "mutex_unlock prev %u", prev);
		memcpy(&m, last_arg, sizeof(m));
		CHECK(m.owner == 3 && m.count == NTR_POISON32, "mutex_unlock sent %u %u", m.owner, m.count);
		kernel(0, NULL, 0, 0);
		CHECK(ntr_mutex_kill(6, 11) == 0 && last_req == NTSYNC_IOC_MUTEX_KILL &&
		      *(uint32_t *)last_arg == 11, "mutex_kill");
	}
	{
		struct ntsync_event_args e = { .manual = 1, .signaled = 1 };
		uint32_t was = 1;
		static const struct {
			int (*fn)(int, uint32_t *);
			unsigned long req;
		} ops[] = {
			{ ntr_event_set, NTSYNC_IOC_EVENT_SET },
			{ ntr_event_reset, NTSYNC_IOC_EVENT_RESET },
			{ ntr_event_pulse, NTSYNC_IOC_EVENT_PULSE },
		};

		kernel(0, &e, sizeof(e), 0);
		CHECK(ntr_event_read(7, &a, &b) == 0 && a == 1 && b == 1 &&
		      last_req == NTSYNC_IOC_EVENT_READ, "event_read");
		for (size_t i = 0; i < 3; i++) {
			kernel(0, &was, sizeof(was), 0);
			prev = 0;
			CHECK(ops[i].fn(7, &prev) == 0 && prev == 1 && last_req == ops[i].req &&
			      *(uint32_t *)last_arg == NTR_POISON32, "event op %zu", i);
		}
		kernel(-1, NULL, 0, EINVAL);
		prev = 0;
		CHECK(ntr_event_set(7, &prev) == -1 && errno == EINVAL && prev == NTR_POISON32,
		      "failed event_set keeps the poison: %u", prev);
	}
	/* waits: every field, ANY or ALL, the index out */
	{
		struct ntsync_wait_args w;

		kernel(0, NULL, 0, 0);
		CHECK(ntr_wait(3, true, objs, 3, 4, 8, NTSYNC_WAIT_REALTIME, 12345, &a) == 0 &&
		      last_req == NTSYNC_IOC_WAIT_ALL, "wait all");
		memcpy(&w, last_arg, sizeof(w));
		CHECK(w.timeout == 12345 && w.objs == (uint64_t)(uintptr_t)objs && w.count == 3 &&
		      w.owner == 4 && w.alert == 8 && w.flags == NTSYNC_WAIT_REALTIME &&
		      w.index == NTR_POISON32 && w.pad == 0, "wait args");
		CHECK(a == NTR_POISON32, "index without a reply: %u", a);
		w.index = 2;
		kernel(0, &w, sizeof(w), 0);
		CHECK(ntr_wait(3, false, objs, 3, 0, 0, 0, 0, &a) == 0 && a == 2 &&
		      last_req == NTSYNC_IOC_WAIT_ANY, "wait any index %u", a);
		kernel(-1, NULL, 0, ETIMEDOUT);
		CHECK(ntr_wait(3, false, objs, 3, 0, 0, 0, 0, NULL) == -1 && errno == ETIMEDOUT,
		      "wait timeout");
	}
	/* ntr_neg and ntr_open_path */
	errno = EPERM;
	CHECK(ntr_neg(-1) == -EPERM && ntr_neg(5) == 5 && ntr_neg(0) == 0, "ntr_neg");
	errno = 0;
	CHECK(ntr_open_path("/nonexistent/ntsync") == -1 && errno == ENOENT, "open of a missing node");

	printf("%d checks, %d failed\n", checks, failures);
	return failures != 0;
}
