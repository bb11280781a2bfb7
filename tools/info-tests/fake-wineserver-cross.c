// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The ioctls of Wine's server/inproc_sync.c without a C library, for
 * --check-wine's test on other architectures (compiled by the test with
 * clang --target=aarch64-linux-gnu or i386-linux-gnu -c, where clang is
 * there): arm64 builds its request numbers with MOVZ/MOVK pairs, and an
 * optimizing compiler derives some from others, so not every one of them
 * is in the code.  Never linked or run.
 */
#include <linux/ioctl.h>
#include <linux/ntsync.h>

int ioctl(int fd, unsigned long request, ...);

const char usage[] = "   -p[n], --persistent[=n]  make server persistent, "
	"optionally for n seconds\n";

int backend(int fd, void *args, unsigned int *tid)
{
	ioctl(fd, NTSYNC_IOC_CREATE_EVENT, args);
	ioctl(fd, NTSYNC_IOC_CREATE_MUTEX, args);
	ioctl(fd, NTSYNC_IOC_CREATE_SEM, args);
	ioctl(fd, NTSYNC_IOC_EVENT_SET, tid);
	ioctl(fd, NTSYNC_IOC_EVENT_RESET, tid);
	return ioctl(fd, NTSYNC_IOC_MUTEX_KILL, tid);
}
