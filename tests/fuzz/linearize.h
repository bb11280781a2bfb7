/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * linearize.h: a linearizability checker for histories of ntsync calls.
 *
 * A history is what several threads (of several processes) did to a set of
 * shared objects: each call with its recorded result, invocation and
 * response time (one clock, CLOCK_MONOTONIC, for every process), and the
 * objects' state when the history began.  It is linearizable when the
 * calls can be put in one order that respects real time (a call that
 * returned before another was invoked comes first) and in which the model
 * (model.c) gives each call exactly its recorded result.
 *
 * The search is Wing & Gong's (1993) with Lowe's memoization (2017): try
 * the calls that may come next in turn, apply them to the model, back up
 * when a call's result disagrees, and never visit the same (set of calls
 * done, model state) twice; as in Porcupine (Athalye), the history is
 * first split into independent parts (calls whose object sets are
 * connected), each checked on its own, which is sound because a history is
 * linearizable iff each part is (objects are independent; a multi-object
 * wait joins its objects into one part).
 *
 * Covered: calls that never block (object ioctls, reads, waits with a
 * deadline in the past, i.e. polls).  A wait that sleeps is not a call of
 * this model yet.
 */
#ifndef NTSYNC_FUZZ_LINEARIZE_H
#define NTSYNC_FUZZ_LINEARIZE_H

#include <stdint.h>
#include <stdio.h>

#include "model.h"

#define NTL_MAX_OPS 256		/* calls in one history */
#define NTL_MAX_OBJ 16		/* objects in one history */

struct ntl_op {
	struct ntm_call call;
	struct ntm_ret ret;	/* as recorded */
	uint64_t inv, res;	/* invocation and response, ns */
	uint32_t thread;	/* who made the call (for printing) */
	/*
	 * Set by ntl_minimize: the call may have happened at any time after
	 * inv with any result, or not at all (a weakening: it only removes
	 * constraints, so a violation that survives it is the original's).
	 */
	uint32_t whatever;
};

struct ntl_history {
	uint32_t nobj;
	struct ntm_obj init[NTL_MAX_OBJ];
	uint32_t nops;
	struct ntl_op *ops;
};

enum ntl_verdict { NTL_OK = 1, NTL_VIOLATION = 0, NTL_GAVE_UP = -1 };

struct ntl_stats {
	uint64_t histories, ops, parts, states, gave_up, violations;
};

/*
 * Check h.  max_states bounds the search (0: 4 million); beyond it the
 * verdict is NTL_GAVE_UP.  Counts go to *st when st is not NULL.
 * When the verdict is NTL_VIOLATION and bad is not NULL, *bad gets the
 * first independent part that is not linearizable (its ops in bad_ops[],
 * which must hold NTL_MAX_OPS; objects renumbered from 0).
 */
enum ntl_verdict ntl_check(const struct ntl_history *h, unsigned long max_states,
			   struct ntl_stats *st, struct ntl_history *bad, struct ntl_op *bad_ops);

/*
 * Shrink a non-linearizable history in place to a smaller one whose
 * violation implies h's, by steps that keep that implication:
 * - a call that returned before every other began is applied to the
 *   initial state and dropped (if its result is impossible there, it alone
 *   is the history);
 * - a call that began after every other returned is dropped when the rest
 *   is still not linearizable;
 * - a call that cannot change any state (a read, a failure, a time-out,
 *   a set of a set event, ...) is dropped when the rest is still not
 *   linearizable (removing such a call from a linearizable history leaves
 *   it linearizable);
 * - any other call is weakened to "whatever" (any result, any time after
 *   its start, or never) when the history is still not linearizable, and
 *   dropped if it began after every call that is not "whatever" returned.
 * Objects no call names any more are dropped.  Returns the number of calls
 * left that are not "whatever": the core of the violation.
 */
uint32_t ntl_minimize(struct ntl_history *h);

/*
 * One line per object state and per call, times relative to the first
 * call; calls weakened to "whatever" are counted, not listed.
 */
void ntl_print(FILE *f, const struct ntl_history *h, const char *indent);
void ntl_print_call(FILE *f, const struct ntm_call *c, const struct ntm_ret *r);

#endif
