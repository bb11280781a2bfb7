/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Force-included (-include) when `vm/ntsync-vm coverage` builds mainline's
 * drivers/misc/ntsync.c (Elizabeth Figura's driver, from Debian's
 * linux-source-7.3, unmodified) as an out-of-tree module against trixie's
 * 6.12 gcov kernel, so that mainline's kselftest can be measured on the same
 * kernel as ours.  It is coverage tooling, never part of our driver: it
 * gives 6.12 what 7.3's ntsync.c uses and 6.12 lacks, written for this
 * purpose, and changes nothing of the driver's logic.
 *
 *  - <uapi/linux/ntsync.h>: 6.12's header has only the first ioctls; this
 *    tree's copy of the ABI (byte for byte mainline's) is included first,
 *    and its include guard, the same as the kernel's, keeps 6.12's out.
 *  - FD_PREPARE()/fd_prepare_file()/fd_publish(): the 6.19 helper that
 *    reserves a descriptor, makes the file and installs or undoes both.
 *  - timens_ktime_to_host(): 6.12 exports do_timens_ktime_to_host() to
 *    nobody; a module does the same arithmetic on the namespace's offset.
 * kzalloc_obj() and kmalloc_flex() are in Debian's 6.12 already.
 */
#ifndef NTSYNC_COVERAGE_MAINLINE_SHIM_H
#define NTSYNC_COVERAGE_MAINLINE_SHIM_H

#include <linux/err.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/ktime.h>
#include <linux/nsproxy.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/time_namespace.h>
#include "../../include/uapi/linux/ntsync.h"

#ifndef FD_PREPARE
struct ntsync_shim_fdp {
	int err;
	int fd;
	struct file *file;
};

static inline void ntsync_shim_fdp_undo(struct ntsync_shim_fdp *p)
{
	if (p->file)
		fput(p->file);
	if (p->fd >= 0)
		put_unused_fd(p->fd);
}

/* a descriptor first, then the file; on any error neither is left */
#define FD_PREPARE(name, flags, file_init)					\
	struct ntsync_shim_fdp name __attribute__((cleanup(ntsync_shim_fdp_undo))) = ({ \
		struct ntsync_shim_fdp p_ = { .err = 0, .fd = get_unused_fd_flags(flags) }; \
		if (p_.fd < 0) {						\
			p_.err = p_.fd;						\
		} else {							\
			p_.file = (file_init);					\
			if (IS_ERR(p_.file)) {					\
				p_.err = PTR_ERR(p_.file);			\
				p_.file = NULL;					\
			}							\
		}								\
		p_;								\
	})
#define fd_prepare_file(p)	((p).file)
#define fd_publish(p) ({							\
		int fd_ = (p).fd;						\
		fd_install(fd_, (p).file);					\
		(p).file = NULL;						\
		(p).fd = -1;							\
		fd_;								\
	})
#endif

#if IS_ENABLED(CONFIG_TIME_NS)
static inline ktime_t ntsync_shim_timens_to_host(clockid_t clock, ktime_t t)
{
	const struct time_namespace *ns = current->nsproxy->time_ns;
	ktime_t offset;

	if (clock != CLOCK_MONOTONIC)
		return t;	/* mainline's driver asks for MONOTONIC only */
	offset = timespec64_to_ktime(ns->offsets.monotonic);
	if (!offset)
		return t;
	if (offset > 0 && t < offset)
		return 0;
	if (offset < 0 && t > KTIME_MAX + offset)
		return KTIME_MAX;
	return ktime_sub(t, offset);
}
#define timens_ktime_to_host(clock, t)	ntsync_shim_timens_to_host(clock, t)
#endif

#endif
