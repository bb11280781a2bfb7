// SPDX-License-Identifier: LGPL-2.1-or-later
/* ntsync-fuzz: the summary of a run, for people and for guest-abuse.sh. */

#include "fuzz.h"

/* The model run's summary: ops, failures, the driver's results by errno. */
void report_model(uint64_t n, double el)
{
	printf("ntsync-fuzz: model: %" PRIu64 " ops in %.1f s (%.0f ops/s), %" PRIu64 " failures (seed %" PRIu64 ")\n",
	       n, el, el > 0 ? n / el : 0.0, failures, opt_seed);
	printf("ntsync-fuzz: driver results:");
	for (int e = 0; e < 160; e++)
		if (hist[e])
			printf(" %s=%" PRIu64, errname(-e), hist[e]);
	printf("\nops: %" PRIu64 "\nfailures: %" PRIu64 "\n", n, failures);
}

/* The concurrent run's summary and its first failures; 1 if any. */
int report_concurrent(double el)
{
	uint64_t f = S->fails;
	int i;

	for (i = 0; i < 8 && (uint64_t)i < f; i++)
		printf("FAIL seed=%" PRIu64 " concurrent: %s\n", opt_seed, S->msg[i]);
	printf("ntsync-fuzz: concurrent: %d processes x %d threads: %" PRIu64 " ops in %.1f s (%.0f ops/s), "
	       "%" PRIu64 " acquisitions, %" PRIu64 " time-outs, %" PRIu64 " churn ops, %" PRIu64 " failures (seed %" PRIu64 ")\n",
	       opt_procs, opt_threads, S->ops, el, el > 0 ? S->ops / el : 0.0, S->acquisitions, S->timeouts,
	       S->churn, f, opt_seed);
	if (opt_enomem_ok)
		printf("enomem: %" PRIu64 " (creates and waits that failed with ENOMEM, tolerated)\n", S->enomem);
	printf("ops: %" PRIu64 "\nfailures: %" PRIu64 "\n", S->ops, f);
	return f ? 1 : 0;
}
