// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A stand-in for Wine's wineserver and ntdll.so in the tests of
 * ntsync-info --check-wine and --pid (no Wine build is at hand on the
 * host).  Both builds carry Wine's own strings (wineserver's usage and
 * start-up message, ntdll.so's WINELOADERNOEXEC and WINEPRELOADRESERVE,
 * the request name get_inproc_sync_fd) and the string "/dev/ntsync",
 * which they open.  Only the backend build (-DBACKEND) issues the
 * driver's ioctls, with the request numbers of <linux/ntsync.h>, as
 * server/inproc_sync.c and dlls/ntdll/unix/sync.c do; the stub build is
 * what Wine's "#else" branch leaves: the strings and no ioctl.  Never run
 * by the tests, only read.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#ifdef BACKEND
#include <linux/ntsync.h>
#endif

static const char *const requests[] = { "get_inproc_sync_fd", NULL };

int main(int argc, char **argv)
{
	int fd;

	if (argc > 1 && !strcmp(argv[1], "--help")) {
		printf("   -p[n], --persistent[=n]  make server persistent, "
		       "optionally for n seconds\n");
		return 0;
	}
	if (getenv("WINELOADERNOEXEC") || getenv("WINEPRELOADRESERVE"))
		fprintf(stderr, "wineserver: starting (pid=%ld)\n",
			(long)getpid());
	puts(requests[0]);
	fd = open("/dev/ntsync", O_CLOEXEC | O_RDONLY);
	if (fd < 0)
		return 1;
#ifdef BACKEND
	{
		struct ntsync_sem_args sem = { 0 };
		struct ntsync_mutex_args mutex = { 0 };
		struct ntsync_event_args event = { 0 };
		struct ntsync_wait_args wait = { 0 };
		unsigned int count = 0;

		/* wineserver's */
		ioctl(fd, NTSYNC_IOC_CREATE_SEM, &sem);
		ioctl(fd, NTSYNC_IOC_CREATE_MUTEX, &mutex);
		ioctl(fd, NTSYNC_IOC_CREATE_EVENT, &event);
		ioctl(fd, NTSYNC_IOC_EVENT_SET, &count);
		ioctl(fd, NTSYNC_IOC_EVENT_RESET, &count);
		ioctl(fd, NTSYNC_IOC_MUTEX_KILL, &count);
		/* ntdll.so's */
		ioctl(fd, NTSYNC_IOC_SEM_RELEASE, &count);
		ioctl(fd, NTSYNC_IOC_SEM_READ, &sem);
		ioctl(fd, NTSYNC_IOC_EVENT_PULSE, &count);
		ioctl(fd, NTSYNC_IOC_EVENT_READ, &event);
		ioctl(fd, NTSYNC_IOC_MUTEX_UNLOCK, &mutex);
		ioctl(fd, NTSYNC_IOC_MUTEX_READ, &mutex);
		ioctl(fd, argc > 2 ? NTSYNC_IOC_WAIT_ALL : NTSYNC_IOC_WAIT_ANY,
		      &wait);
	}
#endif
	close(fd);
	return 0;
}
