// SPDX-License-Identifier: LGPL-2.1-or-later
/* ntsync-fuzz --concurrent: the invariants, checked against the ledger. */

#include "fuzz.h"

/*
 * After every worker has ended: the ledger the workers kept in S against the
 * objects' final state (semaphore counts conserved, mutexes unowned and
 * EOWNERDEAD no more often than kills, auto-reset events' tokens).
 */
void check_invariants(void)
{
	int i;

	for (i = 0; i < C_SEMS; i++) {
		struct ntsync_sem_args a = { POISON32, POISON32 };
		long ret = xioctl(c_obj[i], NTSYNC_IOC_SEM_READ, &a);
		int64_t want = (int64_t)S->sem_init[i] + (int64_t)S->sem_rel[i] - (int64_t)S->sem_acq[i];

		if (ret || a.count != want)
			cfail("semaphore %d: count %u, but initial %u + released %" PRIu64 " - acquired %" PRIu64 " = %" PRId64,
			      i, a.count, S->sem_init[i], S->sem_rel[i], S->sem_acq[i], want);
	}
	for (i = 0; i < C_MUTEXES; i++) {
		struct ntsync_mutex_args a = { POISON32, POISON32 };
		long ret = xioctl(c_obj[C_SEMS + i], NTSYNC_IOC_MUTEX_READ, &a);

		if ((ret && ret != -EOWNERDEAD) || a.owner || a.count)
			cfail("mutex %d after every holder released it: %s owner %u count %u", i, errname(ret), a.owner, a.count);
		if (S->mutex_deadacq[i] > S->mutex_kills[i])
			cfail("mutex %d: %" PRIu64 " abandoned acquisitions (WAIT_ANY) but only %" PRIu64 " kills",
			      i, S->mutex_deadacq[i], S->mutex_kills[i]);
	}
	{
		uint64_t dead = S->deadacq_all, kills = 0;

		for (i = 0; i < C_MUTEXES; i++) {
			dead += S->mutex_deadacq[i];
			kills += S->mutex_kills[i];
		}
		if (dead > kills)
			cfail("%" PRIu64 " EOWNERDEAD acquisitions but only %" PRIu64 " kills", dead, kills);
	}
	for (i = 0; i < 2; i++) {
		struct ntsync_event_args a = { POISON32, POISON32 };
		long ret = xioctl(c_obj[C_SEMS + C_MUTEXES + i], NTSYNC_IOC_EVENT_READ, &a);
		/*
		 * Tokens come from the initial state and from sets that found it
		 * clear; each leaves through an acquisition, a reset that found it
		 * set, a pulse that found it set, or is still there.  A pulse may
		 * hand one extra acquisition to a waiter.
		 */
		int64_t in = S->ev_init[i] + S->ev_set0[i];
		int64_t out = S->ev_acq[i] + S->ev_reset1[i] + S->ev_pulse1[i] + a.signaled;
		int64_t slack = S->ev_pulse0[i] + S->ev_pulse1[i];

		if (ret || out < in || out > in + slack)
			cfail("auto-reset event %d: init %u + sets %" PRIu64 " vs acquired %" PRIu64 " + resets %" PRIu64
			      " + pulses(set) %" PRIu64 " + final %u (pulses %" PRIu64 ")", i, S->ev_init[i], S->ev_set0[i],
			      S->ev_acq[i], S->ev_reset1[i], S->ev_pulse1[i], a.signaled, slack);
	}
}
