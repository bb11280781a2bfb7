// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ntsync-fuzz: random sequences of every /dev/ntsync ioctl, valid and
 * invalid, checked two ways.
 *
 *   --model       one thread; every operation is also run on the
 *                 executable model of the specification (model.c: the
 *                 seed's documentation with the mainline ABI changes) and
 *                 the return value, errno, output fields and object state
 *                 must match exactly.  Waits use a zero timeout so nothing
 *                 blocks.  The fuzzer (fuzz-mirror.c) decides what the
 *                 model does not know: descriptors (EBADF, ENOTTY) and
 *                 memory (EFAULT).
 *   --concurrent  several threads in several processes hammer shared objects
 *                 with blocking waits that have short deadlines; afterwards
 *                 invariants are checked (semaphore counts conserved, a mutex
 *                 has one owner, an auto-reset event hands out no more than
 *                 it was given).
 *   --enomem-ok   (with --concurrent) an ENOMEM from a create or a wait is
 *                 counted, not a failure: for runs inside a memory cgroup at
 *                 its limit (tests/fuzz/guest-abuse.sh --memcg), where the
 *                 driver's allocations fail; the call must have changed
 *                 nothing, which the invariants check at the end.
 *
 * Every run prints its seed; every failure prints the seed and the index of
 * the operation, so `--model --seed S --ops N+1 --verbose` replays it.
 * Exit status: 0 clean, 1 any mismatch, 2 usage, 77 no /dev/ntsync.
 *
 * Raw ioctls against the project's <linux/ntsync.h>; no libntsync.
 */

#include "fuzz.h"

const char *device_path = "/dev/ntsync";
uint64_t opt_seed;
static bool opt_seed_set;
double opt_seconds = 10;
uint64_t opt_ops; /* 0: no limit */
bool opt_verbose;
int opt_threads = 4, opt_procs = 2;
unsigned opt_max_reports = 30;
bool opt_enomem_ok;

/* ================================================================== main */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: ntsync-fuzz --model|--concurrent [options]\n"
		"  --model           single-threaded, every op checked against the reference model\n"
		"  --concurrent      threads and processes on shared objects, invariants checked\n"
		"  --seed N          random seed (default: from the clock; always printed)\n"
		"  --seconds S       run time (default 10)\n"
		"  --ops N           --model: stop after N operations (replays a failure at op N-1)\n"
		"  --threads N       --concurrent: threads per process (default 4)\n"
		"  --procs N         --concurrent: processes (default 2)\n"
		"  --device PATH     default /dev/ntsync\n"
		"  --verbose         --model: print every operation\n"
		"  --enomem-ok       --concurrent: ENOMEM from creates and waits counted, not a failure\n"
		"                    (inside a memory cgroup at its limit)\n"
		"Exit: 0 no failure, 1 failures, 2 usage error, 77 no device.\n");
}

int main(int argc, char **argv)
{
	int mode = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--model"))
			mode = 1;
		else if (!strcmp(a, "--concurrent"))
			mode = 2;
		else if (!strcmp(a, "--verbose"))
			opt_verbose = true;
		else if (!strcmp(a, "--enomem-ok"))
			opt_enomem_ok = true;
		else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (v && !strcmp(a, "--seed")) {
			opt_seed = strtoull(v, NULL, 0); opt_seed_set = true; i++;
		} else if (v && !strcmp(a, "--seconds")) {
			opt_seconds = atof(v); i++;
		} else if (v && !strcmp(a, "--ops")) {
			opt_ops = strtoull(v, NULL, 0); i++;
		} else if (v && !strcmp(a, "--threads")) {
			opt_threads = atoi(v); i++;
		} else if (v && !strcmp(a, "--procs")) {
			opt_procs = atoi(v); i++;
		} else if (v && !strcmp(a, "--device")) {
			device_path = v; i++;
		} else {
			fprintf(stderr, "ntsync-fuzz: unknown or incomplete argument '%s' (see --help)\n", a);
			return 2;
		}
	}
	if (!mode) {
		fprintf(stderr, "ntsync-fuzz: choose --model or --concurrent (see --help)\n");
		return 2;
	}
	if (opt_enomem_ok && mode != 2) {
		fprintf(stderr, "ntsync-fuzz: --enomem-ok goes with --concurrent only\n");
		return 2;
	}
	if (opt_threads < 1 || opt_threads > MAXWORKERS || opt_procs < 1 || opt_procs > MAXWORKERS) {
		fprintf(stderr, "ntsync-fuzz: --threads and --procs must be 1..%d\n", MAXWORKERS);
		return 2;
	}
	if (!opt_seed_set)
		opt_seed = tc_now_ns(CLOCK_REALTIME) ^ ((uint64_t)getpid() << 20);
	printf("ntsync-fuzz: %s seed=%" PRIu64 " (%zu-bit caller)\n", mode == 1 ? "model" : "concurrent",
	       opt_seed, sizeof(void *) * 8);
	fflush(stdout);
	close(open_device());	/* exit 77 early when there is no device */
	return mode == 1 ? run_model() : run_concurrent();
}
