/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ntsync-bench: what its parts share.  Each part depends on this header and
 * tools/common only; ntsync-bench.c (the options and the run) is called by
 * none of them.
 */
#ifndef NTSYNC_BENCH_H
#define NTSYNC_BENCH_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <linux/futex.h>
#include <linux/ntsync.h>

#include "ntsync-raw.h"
#include "tools-common.h"

#ifndef NTSYNC_BENCH_VERSION
#define NTSYNC_BENCH_VERSION "unknown"
#endif

#define NS_PER_SEC 1000000000ull
#define WAIT_FOREVER UINT64_MAX
#define MAX_RUNS 64
#define MEM_OBJECTS 10000


struct env;

/* CLOCK_MONOTONIC in ns: every row's clock */
static inline uint64_t now_ns(void)
{
	return tc_now_ns(CLOCK_MONOTONIC);
}

/* ---- scenarios.c: the raw calls and the rows ---- */

extern int g_dev;		/* /dev/ntsync, or -1 */
/* --spread: pins the timing thread, says the placement in desc */
void bench_spread_init(char *desc, size_t len);
/* before every run of a row: thread placement, the lock rows' sleep count */
void bench_run_reset(void);
/* the last run of a lock row: the share of its acquisitions that slept, or -1 */
extern double g_run_blocked;
int nt_create_sem(uint32_t count, uint32_t max);
int nt_create_mutex(uint32_t owner, uint32_t count);
int nt_create_event(uint32_t manual, uint32_t signaled);

struct row;
typedef uint64_t (*bench_fn)(const struct row *row, uint64_t iters);

enum row_kind { ROW_TIME, ROW_MEM };
enum obj_type { OBJ_SEM, OBJ_MUTEX, OBJ_EVENT };

struct row {
	const char *id;		/* stable key, used by --compare */
	const char *group;
	const char *what;	/* what one operation is */
	enum row_kind kind;
	bool ntsync;		/* needs /dev/ntsync */
	bench_fn fn;
	int param;
};

extern const struct row rows[];
extern const size_t nrows;
#define NROWS nrows

/* ---- report.c: statistics, the table, the JSON report ---- */

struct result {
	enum { RES_NONE, RES_OK, RES_SKIPPED } status;
	const char *skip_reason;
	uint64_t iters;
	unsigned int runs;
	double v[MAX_RUNS];	/* ns/op (time) or bytes/object (memory) */
	double median, min, max, q1, q3;
	double raw_median;	/* memory rows: raw slab byte delta */
	double driver_bytes;	/* memory rows: the driver's own share */
	double seconds;		/* the row took, calibration included */
	double blocked[MAX_RUNS];	/* lock rows: share of acquisitions that slept, or -1 */
	char detail[512];
};

int cmp_double(const void *a, const void *b);
void summarize(struct result *r);
const char *group_digits(double v, char *buf, size_t len);
void print_header(FILE *out);
void print_row(FILE *out, const struct row *row, const struct result *r);
/* res: one result per row of rows[]; mode "quick" or "full", as run */
void write_json(FILE *f, const struct env *e, const struct result *res,
		const char *mode, unsigned int runs, double budget_ns);

/* ---- environment.c: where it ran ---- */

struct env {
	char kernel[128];
	char kversion[256];
	char machine[80];
	char cpu[128];
	long cpus;
	char virt[320];
	bool device;
	char device_error[128];
	bool module;		/* /sys/module/ntsync exists */
	bool loadable;		/* has initstate: a loaded .ko, not built in */
	bool out_of_tree;	/* taint has 'O' */
	char taint[32];
	char version[64];
	char srcversion[64];
	char driver[32];	/* "ours", "in-tree", "built-in", "none" */
	char clocksource[32];	/* at the start of the rows */
	char clocksource_end[32];
	double clock_wait_s;	/* waited for tsc-early to go */
	double busy_pct;	/* CPU used by others just before the rows */
	double quiet_wait_s;	/* waited for it to drop */
	char label[64];		/* --label, default = driver */
	char threads[128];	/* where a row's threads run (--cpu, --spread) */
#define THREADS_BY_SCHEDULER "placed by the scheduler"
	char date[32];		/* UTC, ISO 8601 */
};

void detect_env(struct env *e, const char *label);
#define CLOCKSOURCE "/sys/devices/system/clocksource/clocksource0/current_clocksource"
void wait_for_clocksource(struct env *e, FILE *out);
void wait_for_quiet(struct env *e, FILE *out, double max_s);
void print_env(FILE *out, const struct env *e, const char *mode,
	       unsigned int runs, double budget_ms);

/* ---- memory.c: kernel memory per object ---- */

extern unsigned int mem_objects;
extern char mem_method[32];
extern char mem_note[160];
/* make room for want descriptors; returns how many objects fit */
unsigned int prepare_fd_room(unsigned int want);
void mem_measure(enum obj_type type, unsigned int reps,
		 double *per_rep, double *raw, double *driver, char *detail,
		 size_t dlen);

/* ---- compare.c ---- */

int do_compare(const char *pa, const char *pb);

#endif /* NTSYNC_BENCH_H */
