/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ntsync-fuzz: what its parts share.  One file per concern:
 *   ntsync-fuzz.c    the command line and the options
 *   fuzz-device.c    the clock, the device, the results seen by errno
 *   fuzz-mirror.c    --model: the mirror of every object and descriptor,
 *                    the faulting memory, each result checked against it
 *   fuzz-ops.c       --model: the operations and the run
 *   fuzz-workers.c   --concurrent: the workers, their ledger, the run
 *   fuzz-ledger.c    --concurrent: the invariants against the ledger
 *   fuzz-report.c    the summaries of both runs
 */
#ifndef NTSYNC_FUZZ_H
#define NTSYNC_FUZZ_H

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/ntsync.h>

#include "ntsync-raw.h"

#include "model.h"
#include "tools-common.h"

#define POISON32 0xccccccccu

/* ---- ntsync-fuzz.c: the options ---- */

extern const char *device_path;
extern uint64_t opt_seed;
extern double opt_seconds;
extern uint64_t opt_ops;	/* 0: no limit */
extern bool opt_verbose;
extern int opt_threads, opt_procs;
extern unsigned opt_max_reports;
extern bool opt_enomem_ok;

/* ------------------------------------------------------------------ rng */

struct rng { uint64_t s; };

static inline uint64_t rnext(struct rng *r)
{
	/* splitmix64: tiny, good enough, identical on 32- and 64-bit builds */
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint32_t rbelow(struct rng *r, uint32_t n)
{
	return n ? (uint32_t)(rnext(r) % n) : 0;
}

static inline bool rchance(struct rng *r, unsigned percent)
{
	return rbelow(r, 100) < percent;
}


/* ---- fuzz-device.c ---- */

double now_s(void);
/* the device, or exit 77 when there is none */
int open_device(void);
/* Results seen, by errno (0: success), for the model run's summary. */
extern uint64_t hist[160];
/* ioctl that returns the result as 0/-errno (or the fd for creates). */
long xcount(long ret);
long xioctl(int fd, unsigned long cmd, void *arg);

/* the model's errno names serve the fuzzer's messages too */
#define errname ntm_errname

/* ---- --model: fuzz-mirror.c, fuzz-ops.c ---- */

enum otype { T_NONE, T_SEM, T_MUTEX, T_EVENT };
#define MAXOBJ 48
#define MAXFD 80
#define NDEV 2

struct mobj {
	int type;	/* T_NONE: slot free */
	int dev;	/* index of the instance that created it */
	int refs;	/* tracked descriptors naming it */
	uint32_t a, b;	/* sem: count, max; mutex: owner, count; event: manual, signaled */
	bool dead;	/* mutex abandoned */
};

struct mfd { int fd; int obj; };

struct model {
	struct mobj obj[MAXOBJ];
	struct mfd fds[MAXFD];
	int nfds;
	int dev[NDEV];	/* device descriptors, -1 when closed */
	int pipefd[2];
	int closed_fd;	/* a number known not to be open */
};

enum target_kind { TGT_OBJ, TGT_DEVICE, TGT_PIPE, TGT_CLOSED };

struct target { int fd; int obj; enum target_kind kind; };

enum ptrkind { P_OK, P_NULL, P_NONE, P_RO };

extern const char *const tname[];
extern const char *const pname[];
extern struct model M;
extern struct rng R;
extern uint64_t op_index;
extern uint64_t failures;

/* Memory that faults: a PROT_NONE page (and a read-only one, in ptr_for()). */
extern void *page_none;
void setup_pages(void);
struct ntm_obj to_ntm(const struct mobj *o);
void from_ntm(struct mobj *o, const struct ntm_obj *n);
void describe(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void check_ret(long expect, long got);
long check_ret2(long expect, long alt, long got);
int new_obj_slot(void);
void track_fd(int fd, int obj);
void untrack_fd(int k);
int lowest_free_fd(void);
void check_no_new_fd(int probe);
struct target pick_target(int want_type);
long misaimed(const struct target *t, int want_type);
enum ptrkind pick_ptr(void);
void *ptr_for(enum ptrkind k, void *ok, size_t len);
bool bad_ptr(int pk);
long alt_for(long expect, bool unreadable);
void resync_either(const struct mobj *before);
void verify_obj(int k);
int run_model(void);

/* ---- --concurrent: fuzz-workers.c, fuzz-ledger.c ---- */

#define C_SEMS 4
#define C_MUTEXES 3
#define C_EVENTS 4	/* 0,1 auto-reset; 2,3 manual-reset */
#define C_OBJS (C_SEMS + C_MUTEXES + C_EVENTS)
#define MAXWORKERS 64

/* Shared by every thread of every process (MAP_SHARED anonymous memory). */
struct shared {
	uint64_t ops, fails, timeouts, acquisitions, interrupted, churn, enomem;
	uint64_t sem_acq[C_SEMS], sem_rel[C_SEMS];
	uint32_t sem_init[C_SEMS];
	uint32_t holder[C_MUTEXES];	/* owner id of the mutex's holder, 0: none */
	uint64_t mutex_kills[C_MUTEXES], mutex_deadacq[C_MUTEXES], mutex_acq[C_MUTEXES];
	uint64_t deadacq_all;	/* WAIT_ALL returns that took at least one abandoned mutex */
	/* auto-reset event ledger: see check_event() */
	uint64_t ev_acq[C_EVENTS], ev_set0[C_EVENTS], ev_reset1[C_EVENTS], ev_pulse0[C_EVENTS], ev_pulse1[C_EVENTS];
	uint32_t ev_init[C_EVENTS];
	char msg[8][200];
};

#define ADD(f, v) __atomic_fetch_add(&(f), (v), __ATOMIC_SEQ_CST)

extern struct shared *S;
extern int c_obj[C_OBJS];
void cfail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int run_concurrent(void);
void check_invariants(void);

/* ---- fuzz-report.c ---- */

void report_model(uint64_t n, double el);
int report_concurrent(double el);

#endif /* NTSYNC_FUZZ_H */
