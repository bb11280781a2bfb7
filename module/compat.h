/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Every difference between the kernels that ntsync builds against
 * (Debian's 6.1, 6.12, 7.2 and 7.3) lives here, one feature test each.
 */

#ifndef NTSYNC_COMPAT_H
#define NTSYNC_COMPAT_H

#include <linux/ktime.h>
#include <linux/sched.h>
#include <linux/nsproxy.h>
#include <linux/slab.h>
#include <linux/time_namespace.h>

/*
 * kzalloc_obj() sizes an allocation by the type of what it is assigned to
 * (7.0, and Debian's 6.12 from its stable updates); older kernels get the
 * same from kzalloc().
 */
#ifndef kzalloc_obj
#define kzalloc_obj(obj, gfp)	kzalloc(sizeof(obj), gfp)
#endif

/*
 * A MONOTONIC deadline is given in the caller's time namespace and has to
 * be moved to the host's clock before it is armed.  Kernels that export the
 * conversion to modules (7.2 on; the Makefile looks for the symbol in the
 * tree's Module.symvers) do it themselves; before that, do the same
 * arithmetic on the namespace's offset, which the headers show.  A deadline
 * before the offset has already passed; the result never exceeds KTIME_MAX.
 */
#ifdef NTSYNC_HAVE_TIMENS_EXPORT
static inline ktime_t ntsync_timens_to_host(ktime_t t)
{
	return timens_ktime_to_host(CLOCK_MONOTONIC, t);
}
#elif IS_ENABLED(CONFIG_TIME_NS)
static inline ktime_t ntsync_timens_to_host(ktime_t t)
{
	const struct time_namespace *ns = current->nsproxy->time_ns;
	ktime_t offset = timespec64_to_ktime(ns->offsets.monotonic);

	if (likely(!offset))
		return t;
	if (offset > 0 && t < offset)
		return 0;
	if (offset < 0 && t > KTIME_MAX + offset)
		return KTIME_MAX;
	return ktime_sub(t, offset);
}
#else
static inline ktime_t ntsync_timens_to_host(ktime_t t)
{
	return t;
}
#endif

#endif /* NTSYNC_COMPAT_H */
