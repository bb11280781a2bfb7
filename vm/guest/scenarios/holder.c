// SPDX-License-Identifier: GPL-2.0-only
/*
 * holder STATUS: what wineserver does to /dev/ntsync, in small: opens the
 * device, keeps a semaphore and a manual-reset event, and once a second uses
 * them (release, acquire by a zero-timeout wait, set, read, reset), writing
 * "rounds N errors E first-error TEXT" to the file STATUS.  SIGTERM ends it:
 * exit 0 if no round failed.  Built in the guest of
 * `vm/ntsync-vm lifecycle --scenario` against the installed ntsync-uapi-dev.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/ntsync.h>

static volatile sig_atomic_t stop;
static unsigned long rounds, errors;
static char first[200];

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static void fail(const char *what)
{
	if (!errors++)
		snprintf(first, sizeof(first), "round %lu: %s: %s", rounds, what, strerror(errno));
}

static void status(const char *path)
{
	char tmp[512];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "rounds %lu errors %lu first-error %s\n", rounds, errors, first[0] ? first : "-");
	fclose(f);
	rename(tmp, path);
}

int main(int argc, char **argv)
{
	struct ntsync_sem_args sa = { .count = 0, .max = 10 };
	struct ntsync_event_args ea = { .manual = 1, .signaled = 0 };
	int dev, sem, ev;

	if (argc != 2) {
		fprintf(stderr, "usage: holder STATUS-FILE\n");
		return 2;
	}
	signal(SIGTERM, on_term);
	dev = open("/dev/ntsync", O_RDWR | O_CLOEXEC);
	if (dev < 0) {
		perror("holder: /dev/ntsync");
		return 1;
	}
	sem = ioctl(dev, NTSYNC_IOC_CREATE_SEM, &sa);
	ev = ioctl(dev, NTSYNC_IOC_CREATE_EVENT, &ea);
	if (sem < 0 || ev < 0) {
		perror("holder: creating a semaphore and an event");
		return 1;
	}
	while (!stop) {
		__u32 n = 1, prev = 0;
		__s32 objs[1] = { sem };
		struct ntsync_wait_args wa = { .timeout = 0, .objs = (uintptr_t)objs, .count = 1, .owner = 1 };
		struct ntsync_event_args er;

		rounds++;
		if (ioctl(sem, NTSYNC_IOC_SEM_RELEASE, &n) < 0 || n != 0)
			fail("semaphore release");
		if (ioctl(dev, NTSYNC_IOC_WAIT_ANY, &wa) < 0 || wa.index != 0)
			fail("wait-any on the semaphore");
		if (ioctl(ev, NTSYNC_IOC_EVENT_SET, &prev) < 0 || prev != 0)
			fail("event set");
		if (ioctl(ev, NTSYNC_IOC_EVENT_READ, &er) < 0 || !er.signaled || !er.manual)
			fail("event read");
		if (ioctl(ev, NTSYNC_IOC_EVENT_RESET, &prev) < 0 || prev != 1)
			fail("event reset");
		status(argv[1]);
		sleep(1);
	}
	status(argv[1]);
	return errors ? 1 : 0;
}
