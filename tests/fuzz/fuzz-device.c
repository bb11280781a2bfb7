// SPDX-License-Identifier: LGPL-2.1-or-later
/* ntsync-fuzz: the clock, the device, and the results seen by errno. */

#include "fuzz.h"

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int open_device(void)
{
	int fd = ntr_open_path(device_path);

	if (fd < 0 && (errno == ENOENT || errno == ENODEV || errno == ENXIO)) {
		printf("ntsync-fuzz: %s: %s: skipping (load the ntsync module first)\n",
		       device_path, strerror(errno));
		exit(77);
	}
	if (fd < 0) {
		fprintf(stderr, "ntsync-fuzz: open %s: %s\n", device_path, strerror(errno));
		exit(1);
	}
	return fd;
}

uint64_t hist[160];

long xcount(long ret)
{
	ret = ntr_neg(ret);
	hist[ret > 0 ? 0 : (-ret < 160 ? -ret : 159)]++;
	return ret;
}

long xioctl(int fd, unsigned long cmd, void *arg)
{
	return xcount(ioctl(fd, cmd, arg));
}
