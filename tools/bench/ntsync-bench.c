// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ntsync-bench - latency, throughput and memory of /dev/ntsync next to the
 * primitives it replaces (raw futexes, eventfd + poll as in esync, pipe
 * request/reply to a server thread as in wineserver).
 *
 * Talks to the driver with raw ioctls from <linux/ntsync.h>; it does not
 * use libntsync, so it measures the driver and nothing else.
 *
 * Every timed row is run several times with an iteration count found by a
 * short calibration; the table shows the median ns per operation, ops/s
 * and the spread of the runs.  Nothing is asserted on time: --compare
 * prints the project's targets as informational "met" / "not met" lines.
 *
 * Exit status: 0 done (ntsync rows may have been skipped, the output says
 * so), 1 a measurement failed, 2 usage error.
 */
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

/* ------------------------------------------------------------------ */
/* small helpers                                                       */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		tc_die("out of memory");
	return p;
}

/* Read the first line of a small file, stripped; false if unreadable. */
static bool read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n;

	buf[0] = '\0';
	if (!f)
		return false;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		buf[0] = '\0';
		return true;
	}
	fclose(f);
	n = strlen(buf);
	while (n && isspace((unsigned char)buf[n - 1]))
		buf[--n] = '\0';
	return true;
}

/* ------------------------------------------------------------------ */
/* the raw ntsync calls                                                */

static int g_dev = -1;		/* /dev/ntsync, or -1 */

static int nt_create_sem(uint32_t count, uint32_t max)
{
	int fd = ntr_create_sem(g_dev, count, max);

	if (fd < 0)
		tc_die("NTSYNC_IOC_CREATE_SEM: %s", strerror(errno));
	return fd;
}

static int nt_create_mutex(uint32_t owner, uint32_t count)
{
	int fd = ntr_create_mutex(g_dev, owner, count);

	if (fd < 0)
		tc_die("NTSYNC_IOC_CREATE_MUTEX: %s", strerror(errno));
	return fd;
}

static int nt_create_event(uint32_t manual, uint32_t signaled)
{
	int fd = ntr_create_event(g_dev, manual, signaled);

	if (fd < 0)
		tc_die("NTSYNC_IOC_CREATE_EVENT: %s", strerror(errno));
	return fd;
}

static void nt_sem_release(int sem, uint32_t n)
{
	if (ntr_sem_release(sem, n, NULL) < 0)
		tc_die("NTSYNC_IOC_SEM_RELEASE: %s", strerror(errno));
}

static void nt_mutex_unlock(int mutex, uint32_t owner)
{
	if (ntr_mutex_unlock(mutex, owner, NULL) < 0)
		tc_die("NTSYNC_IOC_MUTEX_UNLOCK: %s", strerror(errno));
}

static void nt_event_set(int event)
{
	if (ntr_event_set(event, NULL) < 0)
		tc_die("NTSYNC_IOC_EVENT_SET: %s", strerror(errno));
}

static uint32_t nt_wait(unsigned long req, const int *objs, uint32_t count,
			uint32_t owner)
{
	struct ntsync_wait_args a = {
		.timeout = WAIT_FOREVER,
		.objs = (uint64_t)(uintptr_t)objs,
		.count = count,
		.owner = owner,
	};

	while (ntr_wait_args(g_dev, req == NTSYNC_IOC_WAIT_ALL, &a) < 0) {
		if (errno == EINTR)
			continue;
		tc_die("%s: %s", req == NTSYNC_IOC_WAIT_ALL ?
		    "NTSYNC_IOC_WAIT_ALL" : "NTSYNC_IOC_WAIT_ANY",
		    strerror(errno));
	}
	return a.index;
}

static uint32_t nt_wait_any(const int *objs, uint32_t count, uint32_t owner)
{
	return nt_wait(NTSYNC_IOC_WAIT_ANY, objs, count, owner);
}

/* ------------------------------------------------------------------ */
/* threads                                                             */

static void start_thread(pthread_t *t, void *(*fn)(void *), void *arg)
{
	int err = pthread_create(t, NULL, fn, arg);

	if (err)
		tc_die("pthread_create: %s", strerror(err));
}

static void join_thread(pthread_t t)
{
	int err = pthread_join(t, NULL);

	if (err)
		tc_die("pthread_join: %s", strerror(err));
}

/*
 * A start line: the timing thread waits until every worker has arrived,
 * then releases them all and reads the clock.
 */
struct start_line {
	pthread_barrier_t barrier;
};

static void start_line_init(struct start_line *s, unsigned int parties)
{
	int err = pthread_barrier_init(&s->barrier, NULL, parties);

	if (err)
		tc_die("pthread_barrier_init: %s", strerror(err));
}

static void start_line_wait(struct start_line *s)
{
	pthread_barrier_wait(&s->barrier);
}

static void start_line_destroy(struct start_line *s)
{
	pthread_barrier_destroy(&s->barrier);
}

/* ------------------------------------------------------------------ */
/* scenarios: each runs `iters` operations and returns elapsed ns      */

struct row;
typedef uint64_t (*bench_fn)(const struct row *row, uint64_t iters);

/* 1. floor: two null system calls */
static uint64_t bench_getppid2(const struct row *row, uint64_t iters)
{
	uint64_t t0 = now_ns();

	(void)row;
	for (uint64_t i = 0; i < iters; i++) {
		syscall(SYS_getppid);
		syscall(SYS_getppid);
	}
	return now_ns() - t0;
}

/*
 * 1. the floor of any driver's ioctl: two ioctls that every layer above
 * the driver handles (descriptor lookup, the LSM ioctl hooks) but that no
 * driver implements: /dev/null has no ioctl method, so they fail ENOTTY.
 */
static uint64_t bench_ioctl2(const struct row *row, uint64_t iters)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	uint64_t t0, t;

	(void)row;
	if (fd < 0)
		tc_die("open /dev/null: %s", strerror(errno));
	if (ioctl(fd, NTSYNC_IOC_SEM_READ, NULL) != -1 || errno != ENOTTY)
		tc_die("ioctl on /dev/null did not fail with ENOTTY");
	t0 = now_ns();
	for (uint64_t i = 0; i < iters; i++) {
		ioctl(fd, NTSYNC_IOC_SEM_READ, NULL);
		ioctl(fd, NTSYNC_IOC_SEM_READ, NULL);
	}
	t = now_ns() - t0;
	close(fd);
	return t;
}

/* 1 and 4: wait-any over `width` semaphores, only the last signaled, then release it */
static uint64_t bench_wait_any(const struct row *row, uint64_t iters);
/* 4: wait-all over `width` signaled semaphores, then release each */
static uint64_t bench_wait_all(const struct row *row, uint64_t iters);
/* 4: a poll (past deadline) over `width` unsignaled semaphores: ETIMEDOUT */
static uint64_t bench_poll(const struct row *row, uint64_t iters);

/* 2. ping-pong: one operation is a round trip A -> B -> A */
struct pingpong {
	struct start_line start;
	uint64_t iters;
	/* ntsync */
	int ev[2];
	/* futex */
	_Atomic uint32_t word[2];
	/* eventfd */
	int efd[2];
	/* pipes: request and reply */
	int req[2], rep[2];
};

static void futex_event_set(_Atomic uint32_t *w)
{
	atomic_store_explicit(w, 1, memory_order_release);
	syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void futex_event_wait(_Atomic uint32_t *w)
{
	while (!atomic_exchange_explicit(w, 0, memory_order_acquire))
		syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
}

static void *pp_ntsync_peer(void *arg)
{
	struct pingpong *p = arg;

	start_line_wait(&p->start);
	for (uint64_t i = 0; i < p->iters; i++) {
		nt_wait_any(&p->ev[0], 1, 2);
		nt_event_set(p->ev[1]);
	}
	return NULL;
}

static void *pp_futex_peer(void *arg)
{
	struct pingpong *p = arg;

	start_line_wait(&p->start);
	for (uint64_t i = 0; i < p->iters; i++) {
		futex_event_wait(&p->word[0]);
		futex_event_set(&p->word[1]);
	}
	return NULL;
}

static void efd_signal(int fd)
{
	uint64_t one = 1;

	while (write(fd, &one, sizeof(one)) != sizeof(one)) {
		if (errno != EINTR)
			tc_die("eventfd write: %s", strerror(errno));
	}
}

/* esync: poll() until readable, then a non-blocking read() to grab it */
static void efd_wait(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	uint64_t v;

	for (;;) {
		if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
			tc_die("poll: %s", strerror(errno));
		if (read(fd, &v, sizeof(v)) == sizeof(v))
			return;
		if (errno != EAGAIN && errno != EINTR)
			tc_die("eventfd read: %s", strerror(errno));
	}
}

static void *pp_eventfd_peer(void *arg)
{
	struct pingpong *p = arg;

	start_line_wait(&p->start);
	for (uint64_t i = 0; i < p->iters; i++) {
		efd_wait(p->efd[0]);
		efd_signal(p->efd[1]);
	}
	return NULL;
}

/* wineserver-style: fixed 64-byte request and reply */
struct rpc_msg {
	uint32_t op;
	uint32_t handle;
	uint32_t value;
	uint32_t pad[13];
};

enum { RPC_SET_EVENT = 1, RPC_QUIT = 2 };

static void full_write(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			tc_die("pipe write: %s", strerror(errno));
		}
		p += n;
		len -= (size_t)n;
	}
}

static bool full_read(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			tc_die("pipe read: %s", strerror(errno));
		}
		if (n == 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

static void *pp_pipe_server(void *arg)
{
	struct pingpong *p = arg;
	uint32_t state[16] = { 0 };
	struct rpc_msg m;

	start_line_wait(&p->start);
	while (full_read(p->req[0], &m, sizeof(m))) {
		if (m.op == RPC_QUIT)
			break;
		m.value = state[m.handle & 15];
		state[m.handle & 15] = 1;
		full_write(p->rep[1], &m, sizeof(m));
	}
	return NULL;
}

enum pp_kind { PP_NTSYNC, PP_FUTEX, PP_EVENTFD, PP_PIPE };

static uint64_t bench_pingpong(const struct row *row, uint64_t iters);

/* 3. contended mutex */
struct mutex_run {
	struct start_line start;
	int mutex;
	uint64_t iters;
	uint64_t shared;	/* changed only under the ntsync mutex */
};

struct mutex_worker {
	struct mutex_run *run;
	uint32_t owner;
};

static void *mutex_worker(void *arg)
{
	struct mutex_worker *w = arg;
	struct mutex_run *r = w->run;

	start_line_wait(&r->start);
	for (uint64_t i = 0; i < r->iters; i++) {
		nt_wait_any(&r->mutex, 1, w->owner);
		r->shared++;
		nt_mutex_unlock(r->mutex, w->owner);
	}
	return NULL;
}

static uint64_t bench_mutex(const struct row *row, uint64_t iters);

/* 3. semaphore work queue: 1 producer, 3 consumers, 16 slots */
#define QUEUE_SLOTS 16
#define QUEUE_CONSUMERS 3

struct queue_run {
	struct start_line start;
	int items, slots;
	uint64_t iters;
	_Atomic uint64_t taken;
};

static void *queue_consumer(void *arg)
{
	struct queue_run *q = arg;
	uint32_t owner = (uint32_t)syscall(SYS_gettid);

	start_line_wait(&q->start);
	for (;;) {
		uint64_t n;

		nt_wait_any(&q->items, 1, owner);
		n = atomic_fetch_add(&q->taken, 1);
		nt_sem_release(q->slots, 1);
		if (n >= q->iters)
			break;
	}
	return NULL;
}

static uint64_t bench_queue(const struct row *row, uint64_t iters);

/*
 * 5. Wine: one NT wait (WaitForSingleObject on a signaled manual-reset
 * event), done by the driver (one ioctl) or as Wine does it without
 * ntsync: a "select" request to the wineserver, here a server thread that
 * reads a 64-byte request from a pipe, looks the handles up in its object
 * table, finds the first signaled one (the wait's bookkeeping) and writes
 * the 64-byte reply to another pipe, as Wine's request and reply pipes do.
 * The real wineserver does more per request; this is its floor.
 */
struct wine_server {
	struct start_line start;
	int req[2], rep[2];
	uint8_t signaled[16];	/* the server's object table */
};

struct wine_select {
	uint32_t op;		/* 1 select, 2 quit */
	uint32_t count;
	uint32_t handles[8];
	uint32_t status, index;	/* reply */
	uint32_t pad[4];
};

static void *wine_server_main(void *arg)
{
	struct wine_server *w = arg;
	struct wine_select m;

	start_line_wait(&w->start);
	while (full_read(w->req[0], &m, sizeof(m)) && m.op == 1) {
		m.status = 1;	/* STATUS_PENDING: would queue the thread */
		for (uint32_t i = 0; i < m.count && i < 8; i++) {
			if (w->signaled[m.handles[i] & 15]) {
				m.status = 0;
				m.index = i;
				break;
			}
		}
		full_write(w->rep[1], &m, sizeof(m));
	}
	return NULL;
}

static uint64_t bench_wine_wait(const struct row *row, uint64_t iters);

/* ------------------------------------------------------------------ */
/* the rows                                                            */

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

static const struct row rows[] = {
	{ "null.getppid2", "uncontended", "2x getppid() (null syscall floor)",
	  ROW_TIME, false, bench_getppid2, 0 },
	{ "null.ioctl2", "uncontended", "2x ioctl() -> ENOTTY (ioctl floor)",
	  ROW_TIME, false, bench_ioctl2, 0 },
	{ "uncontended.sem", "uncontended", "wait-any on signaled sem + release",
	  ROW_TIME, true, bench_wait_any, 1 },

	{ "wine.wait.ntsync", "wine", "NT wait, signaled event: driver ioctl",
	  ROW_TIME, true, bench_wine_wait, 0 },
	{ "wine.wait.server", "wine", "same wait as wineserver round trip",
	  ROW_TIME, false, bench_wine_wait, 1 },

	{ "pingpong.ntsync", "ping-pong", "round trip, 2 auto-reset events",
	  ROW_TIME, true, bench_pingpong, PP_NTSYNC },
	{ "pingpong.futex", "ping-pong", "round trip, raw futexes (floor)",
	  ROW_TIME, false, bench_pingpong, PP_FUTEX },
	{ "pingpong.eventfd", "ping-pong", "round trip, eventfd + poll (esync)",
	  ROW_TIME, false, bench_pingpong, PP_EVENTFD },
	{ "pingpong.pipe", "ping-pong", "request/reply over pipes to a server",
	  ROW_TIME, false, bench_pingpong, PP_PIPE },

	{ "mutex.2", "contention", "mutex lock+unlock, 2 threads",
	  ROW_TIME, true, bench_mutex, 2 },
	{ "mutex.4", "contention", "mutex lock+unlock, 4 threads",
	  ROW_TIME, true, bench_mutex, 4 },
	{ "queue.1p3c", "contention", "sem work queue item, 1 prod/3 cons",
	  ROW_TIME, true, bench_queue, 0 },

	{ "waitany.1", "wait width", "wait-any 1 (last signaled) + release",
	  ROW_TIME, true, bench_wait_any, 1 },
	{ "waitany.8", "wait width", "wait-any 8 (last signaled) + release",
	  ROW_TIME, true, bench_wait_any, 8 },
	{ "waitany.64", "wait width", "wait-any 64 (last signaled) + release",
	  ROW_TIME, true, bench_wait_any, 64 },
	{ "poll.1", "wait width", "poll 1 unsignaled (past deadline)",
	  ROW_TIME, true, bench_poll, 1 },
	{ "poll.8", "wait width", "poll 8 unsignaled (past deadline)",
	  ROW_TIME, true, bench_poll, 8 },
	{ "waitall.2", "wait width", "wait-all 2 + 2 releases",
	  ROW_TIME, true, bench_wait_all, 2 },
	{ "waitall.8", "wait width", "wait-all 8 + 8 releases",
	  ROW_TIME, true, bench_wait_all, 8 },
	{ "waitall.64", "wait width", "wait-all 64 + 64 releases",
	  ROW_TIME, true, bench_wait_all, 64 },

	{ "mem.sem", "memory", "kernel slab per semaphore",
	  ROW_MEM, true, NULL, OBJ_SEM },
	{ "mem.mutex", "memory", "kernel slab per mutex",
	  ROW_MEM, true, NULL, OBJ_MUTEX },
	{ "mem.event", "memory", "kernel slab per event",
	  ROW_MEM, true, NULL, OBJ_EVENT },
};

#define NROWS (sizeof(rows) / sizeof(rows[0]))

static uint64_t bench_wine_wait(const struct row *row, uint64_t iters)
{
	struct wine_server w;
	struct wine_select m;
	uint64_t t0, elapsed;
	pthread_t t;
	int ev;

	if (row->param == 0) {
		ev = nt_create_event(1, 1);
		t0 = now_ns();
		for (uint64_t i = 0; i < iters; i++)
			nt_wait_any(&ev, 1, 1);
		elapsed = now_ns() - t0;
		close(ev);
		return elapsed;
	}
	_Static_assert(sizeof(struct wine_select) == 64, "Wine's request size");
	memset(&w, 0, sizeof(w));
	w.signaled[5] = 1;
	if (pipe2(w.req, O_CLOEXEC) < 0 || pipe2(w.rep, O_CLOEXEC) < 0)
		tc_die("pipe2: %s", strerror(errno));
	start_line_init(&w.start, 2);
	start_thread(&t, wine_server_main, &w);
	start_line_wait(&w.start);
	memset(&m, 0, sizeof(m));
	t0 = now_ns();
	for (uint64_t i = 0; i < iters; i++) {
		m.op = 1;
		m.count = 1;
		m.handles[0] = 5;
		full_write(w.req[1], &m, sizeof(m));
		if (!full_read(w.rep[0], &m, sizeof(m)) || m.status != 0)
			tc_die("%s: the server thread did not satisfy the wait", row->id);
	}
	elapsed = now_ns() - t0;
	m.op = 2;
	full_write(w.req[1], &m, sizeof(m));
	join_thread(t);
	start_line_destroy(&w.start);
	close(w.req[0]);
	close(w.req[1]);
	close(w.rep[0]);
	close(w.rep[1]);
	return elapsed;
}

static uint64_t bench_wait_any(const struct row *row, uint64_t iters)
{
	uint32_t width = (uint32_t)row->param;
	int objs[NTSYNC_MAX_WAIT_COUNT];
	uint64_t t0, t;

	for (uint32_t i = 0; i < width; i++)
		objs[i] = nt_create_sem(i == width - 1 ? 1 : 0, 1);
	if (nt_wait_any(objs, width, 1) != width - 1)
		tc_die("%s: wait-any returned the wrong index", row->id);
	nt_sem_release(objs[width - 1], 1);

	t0 = now_ns();
	for (uint64_t i = 0; i < iters; i++) {
		nt_wait_any(objs, width, 1);
		nt_sem_release(objs[width - 1], 1);
	}
	t = now_ns() - t0;

	for (uint32_t i = 0; i < width; i++)
		close(objs[i]);
	return t;
}

/*
 * How Wine polls (WaitForMultipleObjects with a zero time-out): a deadline
 * of 0 has passed on either clock, and nothing is signaled.
 */
static uint64_t bench_poll(const struct row *row, uint64_t iters)
{
	uint32_t width = (uint32_t)row->param;
	int objs[NTSYNC_MAX_WAIT_COUNT];
	struct ntsync_wait_args a = {
		.timeout = 0,
		.objs = (uint64_t)(uintptr_t)objs,
		.count = width,
		.owner = 1,
	};
	uint64_t t0, t;

	for (uint32_t i = 0; i < width; i++)
		objs[i] = nt_create_sem(0, 1);
	if (ntr_wait_args(g_dev, false, &a) != -1 || errno != ETIMEDOUT)
		tc_die("%s: a poll of unsignaled semaphores did not time out", row->id);

	t0 = now_ns();
	for (uint64_t i = 0; i < iters; i++)
		ntr_wait_args(g_dev, false, &a);
	t = now_ns() - t0;

	for (uint32_t i = 0; i < width; i++)
		close(objs[i]);
	return t;
}

static uint64_t bench_wait_all(const struct row *row, uint64_t iters)
{
	uint32_t width = (uint32_t)row->param;
	int objs[NTSYNC_MAX_WAIT_COUNT] = { 0 };	/* width >= 1 (the rows) */
	uint32_t count;
	uint64_t t0, t;

	for (uint32_t i = 0; i < width; i++)
		objs[i] = nt_create_sem(1, 1);
	nt_wait(NTSYNC_IOC_WAIT_ALL, objs, width, 1);
	if (ntr_sem_read(objs[0], &count, NULL) < 0 || count != 0)
		tc_die("%s: wait-all did not acquire", row->id);
	for (uint32_t i = 0; i < width; i++)
		nt_sem_release(objs[i], 1);

	t0 = now_ns();
	for (uint64_t i = 0; i < iters; i++) {
		nt_wait(NTSYNC_IOC_WAIT_ALL, objs, width, 1);
		for (uint32_t j = 0; j < width; j++)
			nt_sem_release(objs[j], 1);
	}
	t = now_ns() - t0;

	for (uint32_t i = 0; i < width; i++)
		close(objs[i]);
	return t;
}

static uint64_t bench_pingpong(const struct row *row, uint64_t iters)
{
	struct pingpong p;
	struct rpc_msg m;
	void *(*peer)(void *) = NULL;
	pthread_t t;
	uint64_t t0, elapsed;

	memset(&p, 0, sizeof(p));
	p.iters = iters;
	start_line_init(&p.start, 2);

	switch (row->param) {
	case PP_NTSYNC:
		p.ev[0] = nt_create_event(0, 0);
		p.ev[1] = nt_create_event(0, 0);
		peer = pp_ntsync_peer;
		break;
	case PP_FUTEX:
		peer = pp_futex_peer;
		break;
	case PP_EVENTFD:
		for (int i = 0; i < 2; i++) {
			p.efd[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
			if (p.efd[i] < 0)
				tc_die("eventfd: %s", strerror(errno));
		}
		peer = pp_eventfd_peer;
		break;
	case PP_PIPE:
		if (pipe2(p.req, O_CLOEXEC) < 0 || pipe2(p.rep, O_CLOEXEC) < 0)
			tc_die("pipe2: %s", strerror(errno));
		peer = pp_pipe_server;
		break;
	}

	start_thread(&t, peer, &p);
	start_line_wait(&p.start);
	memset(&m, 0, sizeof(m));
	m.op = RPC_SET_EVENT;

	t0 = now_ns();
	switch (row->param) {
	case PP_NTSYNC:
		for (uint64_t i = 0; i < iters; i++) {
			nt_event_set(p.ev[0]);
			nt_wait_any(&p.ev[1], 1, 1);
		}
		break;
	case PP_FUTEX:
		for (uint64_t i = 0; i < iters; i++) {
			futex_event_set(&p.word[0]);
			futex_event_wait(&p.word[1]);
		}
		break;
	case PP_EVENTFD:
		for (uint64_t i = 0; i < iters; i++) {
			efd_signal(p.efd[0]);
			efd_wait(p.efd[1]);
		}
		break;
	case PP_PIPE:
		for (uint64_t i = 0; i < iters; i++) {
			m.handle = (uint32_t)i;
			full_write(p.req[1], &m, sizeof(m));
			if (!full_read(p.rep[0], &m, sizeof(m)))
				tc_die("pipe server went away");
		}
		break;
	}
	elapsed = now_ns() - t0;

	if (row->param == PP_PIPE) {
		m.op = RPC_QUIT;
		full_write(p.req[1], &m, sizeof(m));
	}
	join_thread(t);
	start_line_destroy(&p.start);

	switch (row->param) {
	case PP_NTSYNC:
		close(p.ev[0]);
		close(p.ev[1]);
		break;
	case PP_EVENTFD:
		close(p.efd[0]);
		close(p.efd[1]);
		break;
	case PP_PIPE:
		close(p.req[0]);
		close(p.req[1]);
		close(p.rep[0]);
		close(p.rep[1]);
		break;
	}
	return elapsed;
}

/* one operation = one lock + unlock by one thread; iters is the total */
static uint64_t bench_mutex(const struct row *row, uint64_t iters)
{
	unsigned int n = (unsigned int)row->param;
	struct mutex_worker w[8];
	pthread_t t[8];
	struct mutex_run r;
	uint64_t t0, elapsed;

	memset(&r, 0, sizeof(r));
	r.mutex = nt_create_mutex(0, 0);
	r.iters = (iters + n - 1) / n;
	start_line_init(&r.start, n + 1);
	for (unsigned int i = 0; i < n; i++) {
		w[i].run = &r;
		w[i].owner = 100 + i;
		start_thread(&t[i], mutex_worker, &w[i]);
	}
	start_line_wait(&r.start);
	t0 = now_ns();
	for (unsigned int i = 0; i < n; i++)
		join_thread(t[i]);
	elapsed = now_ns() - t0;
	start_line_destroy(&r.start);
	close(r.mutex);
	if (r.shared != r.iters * n)
		tc_die("%s: mutex lost an update (%" PRIu64 " of %" PRIu64 ")",
		    row->id, r.shared, r.iters * n);
	/* report per requested op: scale for the rounding up */
	return (uint64_t)((double)elapsed * (double)iters /
			  (double)(r.iters * n));
}

/* one operation = one item through the queue */
static uint64_t bench_queue(const struct row *row, uint64_t iters)
{
	struct queue_run q;
	pthread_t t[QUEUE_CONSUMERS];
	uint64_t t0, elapsed;

	(void)row;
	memset(&q, 0, sizeof(q));
	q.items = nt_create_sem(0, UINT32_MAX);
	q.slots = nt_create_sem(QUEUE_SLOTS, UINT32_MAX);
	q.iters = iters;
	start_line_init(&q.start, QUEUE_CONSUMERS + 1);
	for (int i = 0; i < QUEUE_CONSUMERS; i++)
		start_thread(&t[i], queue_consumer, &q);

	start_line_wait(&q.start);
	t0 = now_ns();
	/* the extra items, one per consumer, tell the consumers to stop */
	for (uint64_t i = 0; i < iters + QUEUE_CONSUMERS; i++) {
		nt_wait_any(&q.slots, 1, 1);
		nt_sem_release(q.items, 1);
	}
	for (int i = 0; i < QUEUE_CONSUMERS; i++)
		join_thread(t[i]);
	elapsed = now_ns() - t0;

	start_line_destroy(&q.start);
	close(q.items);
	close(q.slots);
	return elapsed;
}

/* ------------------------------------------------------------------ */
/* kernel memory per object                                            */

static int cmp_double(const void *a, const void *b);

struct slab_cache {
	char name[64];
	unsigned long active;
	unsigned long size;
};

struct slab_snap {
	struct slab_cache *c;
	size_t n;
	uint64_t bytes;		/* sum active * objsize */
};

/* /proc/slabinfo (root only); false if it cannot be read */
static bool slab_snapshot(struct slab_snap *s)
{
	FILE *f = fopen("/proc/slabinfo", "re");
	char line[512];
	size_t cap = 0;

	memset(s, 0, sizeof(*s));
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		struct slab_cache c;
		unsigned long num;

		if (line[0] == '#' || !strncmp(line, "slabinfo", 8))
			continue;
		if (sscanf(line, "%63s %lu %lu %lu", c.name, &c.active, &num,
			   &c.size) != 4)
			continue;
		if (s->n == cap) {
			cap = cap ? cap * 2 : 256;
			s->c = realloc(s->c, cap * sizeof(*s->c));
			if (!s->c)
				tc_die("out of memory");
		}
		s->c[s->n++] = c;
		s->bytes += (uint64_t)c.active * c.size;
	}
	fclose(f);
	return s->n > 0;
}

static void slab_free(struct slab_snap *s)
{
	free(s->c);
	memset(s, 0, sizeof(*s));
}

/* /proc/meminfo Slab: in bytes, or -1 */
static int64_t meminfo_slab(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char line[256];
	long long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Slab: %lld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb < 0 ? -1 : (int64_t)kb * 1024;
}

/*
 * The caches that grew by at least half an object per created object,
 * counted in whole objects: "filp 1x256 + kmalloc-cg-64 1x64".  SLUB's
 * active counts are approximate (free objects in per-CPU slabs count as
 * active), so the raw byte delta runs a few percent low when a
 * repetition reuses the slabs that the previous one freed; whole
 * objects are the figure to compare.  Returns bytes per object.
 */
static double slab_whole(const struct slab_snap *a, const struct slab_snap *b,
			 unsigned int nobj, char *out, size_t len)
{
	size_t used = 0;
	double total = 0;

	if (len)
		out[0] = '\0';
	for (size_t i = 0; i < b->n; i++) {
		unsigned long before = 0;
		double per;
		long whole;

		for (size_t j = 0; j < a->n; j++) {
			if (!strcmp(a->c[j].name, b->c[i].name)) {
				before = a->c[j].active;
				break;
			}
		}
		if (b->c[i].active <= before)
			continue;
		per = (double)(b->c[i].active - before) / nobj;
		whole = lround(per);
		if (whole < 1)
			continue;
		total += (double)whole * (double)b->c[i].size;
		if (used < len)
			used += (size_t)snprintf(out + used, len - used,
						 "%s%s %ldx%lu", used ? " + " : "",
						 b->c[i].name, whole, b->c[i].size);
	}
	if (used >= len && len > 4)
		strcpy(out + len - 4, "...");
	return total;
}

static int create_obj(enum obj_type type)
{
	switch (type) {
	case OBJ_SEM:
		return nt_create_sem(0, 1);
	case OBJ_MUTEX:
		return nt_create_mutex(0, 0);
	case OBJ_EVENT:
	default:
		return nt_create_event(0, 0);
	}
}

static unsigned int mem_objects = MEM_OBJECTS;
static char mem_method[32] = "";
static char mem_note[160] = "";

/* make room for nobj descriptors and grow the fd table before measuring */
static unsigned int prepare_fd_room(unsigned int want)
{
	struct rlimit rl;
	rlim_t need = (rlim_t)want + 256;
	int fd;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return want;
	if (rl.rlim_cur < need) {
		struct rlimit nl = rl;

		nl.rlim_cur = need;
		if (nl.rlim_max < need)
			nl.rlim_max = need;
		if (setrlimit(RLIMIT_NOFILE, &nl) < 0) {
			nl.rlim_cur = rl.rlim_max;
			nl.rlim_max = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &nl);
			getrlimit(RLIMIT_NOFILE, &rl);
			if (rl.rlim_cur < need) {
				want = rl.rlim_cur > 512 ?
				       (unsigned int)(rl.rlim_cur - 256) : 256;
				snprintf(mem_note, sizeof(mem_note),
					 "RLIMIT_NOFILE allows only %u objects",
					 want);
			}
		}
	}
	/* the fd table grows once, here, not inside the measurement */
	fd = dup2(g_dev, (int)want + 128);
	if (fd >= 0)
		close(fd);
	return want;
}

/*
 * Fills per_rep[] with bytes per object (whole slab objects when
 * /proc/slabinfo is readable, else the /proc/meminfo Slab delta), *raw
 * with the median raw delta, and detail with the caches that grew.
 */
static void mem_measure(enum obj_type type, unsigned int reps,
			double *per_rep, double *raw, char *detail, size_t dlen)
{
	unsigned int n = mem_objects;
	int *fds = xcalloc(n, sizeof(int));
	double raws[MAX_RUNS];

	detail[0] = '\0';
	/* warm the caches so the first repetition is not special */
	for (unsigned int i = 0; i < n; i++)
		fds[i] = create_obj(type);
	for (unsigned int i = 0; i < n; i++)
		close(fds[i]);

	for (unsigned int r = 0; r < reps; r++) {
		struct slab_snap a, b;
		bool have_slabinfo = slab_snapshot(&a);
		int64_t m0 = meminfo_slab(), m1;

		for (unsigned int i = 0; i < n; i++)
			fds[i] = create_obj(type);
		m1 = meminfo_slab();
		if (have_slabinfo && slab_snapshot(&b)) {
			raws[r] = ((double)b.bytes - (double)a.bytes) / n;
			per_rep[r] = slab_whole(&a, &b, n,
						r == reps - 1 ? detail : NULL,
						r == reps - 1 ? dlen : 0);
			snprintf(mem_method, sizeof(mem_method), "/proc/slabinfo");
			slab_free(&b);
		} else {
			raws[r] = m0 < 0 || m1 < 0 ? NAN :
				  ((double)m1 - (double)m0) / n;
			per_rep[r] = raws[r];
			snprintf(mem_method, sizeof(mem_method),
				 "/proc/meminfo Slab");
		}
		slab_free(&a);
		for (unsigned int i = 0; i < n; i++)
			close(fds[i]);
	}
	qsort(raws, reps, sizeof(double), cmp_double);
	*raw = raws[reps / 2];
	free(fds);
}

/* ------------------------------------------------------------------ */
/* statistics                                                          */

struct result {
	enum { RES_NONE, RES_OK, RES_SKIPPED } status;
	const char *skip_reason;
	uint64_t iters;
	unsigned int runs;
	double v[MAX_RUNS];	/* ns/op (time) or bytes/object (memory) */
	double median, min, max, q1, q3;
	double raw_median;	/* memory rows: raw slab byte delta */
	double seconds;		/* the row took, calibration included */
	char detail[512];
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double quantile(const double *sorted, unsigned int n, double q)
{
	double pos = q * (n - 1);
	unsigned int lo = (unsigned int)pos;
	double frac = pos - lo;

	if (lo + 1 >= n)
		return sorted[n - 1];
	return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

static void summarize(struct result *r)
{
	double s[MAX_RUNS];

	memcpy(s, r->v, r->runs * sizeof(double));
	qsort(s, r->runs, sizeof(double), cmp_double);
	r->min = s[0];
	r->max = s[r->runs - 1];
	r->median = quantile(s, r->runs, 0.5);
	r->q1 = quantile(s, r->runs, 0.25);
	r->q3 = quantile(s, r->runs, 0.75);
}

/* ------------------------------------------------------------------ */
/* where it ran                                                        */

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
	char date[32];		/* UTC, ISO 8601 */
};

static void detect_env(struct env *e, const char *label)
{
	struct utsname u;
	FILE *f;
	char line[512], vendor[128], product[128];
	bool hyper = false;

	memset(e, 0, sizeof(*e));
	{
		time_t now = time(NULL);
		struct tm tm;

		if (gmtime_r(&now, &tm))
			strftime(e->date, sizeof(e->date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	}
	if (uname(&u) == 0) {
		snprintf(e->kernel, sizeof(e->kernel), "%s", u.release);
		snprintf(e->kversion, sizeof(e->kversion), "%s", u.version);
		snprintf(e->machine, sizeof(e->machine), "%s", u.machine);
	}
	e->cpus = sysconf(_SC_NPROCESSORS_ONLN);
	f = fopen("/proc/cpuinfo", "re");
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			char *colon = strchr(line, ':');

			if (!colon)
				continue;
			if (!e->cpu[0] && !strncmp(line, "model name", 10)) {
				char *v = colon + 1;

				while (*v == ' ')
					v++;
				v[strcspn(v, "\n")] = '\0';
				snprintf(e->cpu, sizeof(e->cpu), "%s", v);
			}
			if (!strncmp(line, "flags", 5) &&
			    strstr(colon, " hypervisor"))
				hyper = true;
		}
		fclose(f);
	}
	read_line("/sys/class/dmi/id/sys_vendor", vendor, sizeof(vendor));
	read_line("/sys/class/dmi/id/product_name", product, sizeof(product));
	if (vendor[0] || hyper)
		snprintf(e->virt, sizeof(e->virt), "%s%s%s%s",
			 hyper ? "virtual machine" : "bare metal",
			 vendor[0] ? " (" : "", vendor,
			 vendor[0] ? (product[0] ? "" : ")") : "");
	if (vendor[0] && product[0]) {
		size_t l = strlen(e->virt);

		snprintf(e->virt + l, sizeof(e->virt) - l, " %s)", product);
	}

	e->module = access("/sys/module/ntsync", F_OK) == 0;
	e->loadable = access("/sys/module/ntsync/initstate", F_OK) == 0;
	if (read_line("/sys/module/ntsync/taint", e->taint, sizeof(e->taint)))
		e->out_of_tree = strchr(e->taint, 'O') != NULL;
	read_line("/sys/module/ntsync/version", e->version, sizeof(e->version));
	read_line("/sys/module/ntsync/srcversion", e->srcversion,
		  sizeof(e->srcversion));

	g_dev = ntr_open();
	if (g_dev >= 0) {
		e->device = true;
	} else {
		snprintf(e->device_error, sizeof(e->device_error), "%s",
			 strerror(errno));
	}

	if (!e->device)
		snprintf(e->driver, sizeof(e->driver), "none");
	else if (e->out_of_tree)
		snprintf(e->driver, sizeof(e->driver), "ours");
	else if (e->module && e->loadable)
		snprintf(e->driver, sizeof(e->driver), "in-tree");
	else
		snprintf(e->driver, sizeof(e->driver), "built-in");
	snprintf(e->label, sizeof(e->label), "%s", label ? label : e->driver);
}

#define CLOCKSOURCE "/sys/devices/system/clocksource/clocksource0/current_clocksource"

/*
 * Early in boot x86 runs on "tsc-early", whose calibration under QEMU's
 * icount can be off by a large factor; figures taken before the kernel
 * switches to "tsc" are on another scale.  Sleeping costs nothing under
 * -icount sleep=off, so wait (up to a minute) for the switch.
 */
static void wait_for_clocksource(struct env *e, FILE *out)
{
	uint64_t t0 = now_ns();

	read_line(CLOCKSOURCE, e->clocksource, sizeof(e->clocksource));
	if (strcmp(e->clocksource, "tsc-early"))
		return;
	fprintf(out, "note:   clocksource is tsc-early; waiting for the kernel to switch to tsc ...\n");
	for (int i = 0; i < 240 && !strcmp(e->clocksource, "tsc-early"); i++) {
		struct timespec ts = { 0, 250000000 };

		nanosleep(&ts, NULL);
		read_line(CLOCKSOURCE, e->clocksource, sizeof(e->clocksource));
	}
	e->clock_wait_s = (double)(now_ns() - t0) / 1e9;
}

/* busy and total jiffies of all CPUs from /proc/stat */
static bool cpu_jiffies(unsigned long long *busy, unsigned long long *total)
{
	unsigned long long v[8] = { 0 };
	FILE *f = fopen("/proc/stat", "re");
	int n;

	if (!f)
		return false;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
		   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	if (n < 4)
		return false;
	*total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
	*busy = *total - v[3] - v[4];
	return true;
}

/*
 * Right after boot a one-CPU guest still runs the kernel's crypto self
 * tests and other deferred work; on one CPU that work lands inside the
 * measurements (it tripled the null syscall row here).  Sleep until the
 * machine is quiet: idle time is free under -icount sleep=off.  Gives up
 * after max_s seconds and says how busy the machine was.
 */
static void wait_for_quiet(struct env *e, FILE *out, double max_s)
{
	uint64_t t0 = now_ns();
	bool said = false;

	e->busy_pct = -1;
	for (;;) {
		unsigned long long b0, t0j, b1, t1j;
		struct timespec ts = { 0, 300000000 };

		if (!cpu_jiffies(&b0, &t0j))
			return;
		nanosleep(&ts, NULL);
		if (!cpu_jiffies(&b1, &t1j))
			return;
		e->busy_pct = t1j > t0j ? 100.0 * (double)(b1 - b0) /
					  (double)(t1j - t0j) : 0;
		e->quiet_wait_s = (double)(now_ns() - t0) / 1e9;
		if (e->busy_pct <= 5 || e->quiet_wait_s >= max_s)
			return;
		if (!said) {
			fprintf(out, "note:   %.0f%% of the CPU time is used by other work; waiting up to %.0f s for quiet ...\n",
				e->busy_pct, max_s);
			said = true;
		}
	}
}

static void print_env(FILE *out, const struct env *e, const char *mode,
		      unsigned int runs, double budget_ms)
{
	fprintf(out, "ntsync-bench %s: %s mode, %u runs per row, ~%.0f ms per run, %s\n",
		NTSYNC_BENCH_VERSION, mode, runs, budget_ms, e->date);
	fprintf(out, "where:  Linux %s %s, %s, %ld CPU%s online\n", e->kernel,
		e->kversion, e->machine, e->cpus, e->cpus == 1 ? "" : "s");
	fprintf(out, "        %s%s%s\n", e->cpu[0] ? e->cpu : "unknown CPU",
		e->virt[0] ? ", " : "", e->virt);
	if (e->device) {
		fprintf(out, "driver: /dev/ntsync open; ");
		if (!e->module)
			fprintf(out, "built into the kernel (no /sys/module/ntsync)");
		else
			fprintf(out, "module ntsync %s, %s (taint '%s')%s%s",
				e->loadable ? "loaded" : "built in",
				e->out_of_tree ? "out-of-tree" : "in-tree",
				e->taint, e->version[0] ? ", version " : "",
				e->version);
		fprintf(out, " -> \"%s\"\n", e->label);
	} else {
		fprintf(out, "driver: /dev/ntsync cannot be opened (%s): the ntsync rows are skipped\n",
			e->device_error);
	}
	fprintf(out, "clock:  clocksource %s%s", e->clocksource[0] ? e->clocksource : "?",
		!strcmp(e->clocksource, "tsc-early") ?
		" (still early-boot calibration: figures may be off by a large factor)" : "");
	if (e->clock_wait_s > 0)
		fprintf(out, " (waited %.1f s for it)", e->clock_wait_s);
	fputc('\n', out);
	if (e->busy_pct >= 0)
		fprintf(out, "load:   other work used %.0f%% of the CPU time just before the rows (%s, waited %.1f s)\n",
			e->busy_pct, e->busy_pct > 5 ?
			"busy: figures include that noise" : "quiet",
			e->quiet_wait_s);
	fprintf(out,
		"time:   CLOCK_MONOTONIC ns. Under QEMU -icount shift=0,sleep=off this is\n"
		"        guest-instruction time (1 ns per guest instruction): repeatable to\n"
		"        ~0.1%%, comparable between guests, but not wall-clock time.\n");
}

/* ------------------------------------------------------------------ */
/* running                                                             */

static struct {
	bool quick;
	unsigned int runs;
	double budget_ns;	/* target length of one run */
	const char *json_path;	/* NULL: none, "-": stdout */
	const char *only;
	const char *label;
	int cpu;
	double wait_s;		/* longest wait for a quiet machine */
} opt = { .cpu = -1, .wait_s = 10 };

static const char *current_row;

static void on_alarm(int sig)
{
	char msg[256];
	int n;

	(void)sig;
	n = snprintf(msg, sizeof(msg),
		     "%s: row %s did not finish in time: a wait that never ends? (aborting)\n",
		     tc_progname, current_row ? current_row : "?");
	if (n > 0)
		(void)!write(STDERR_FILENO, msg, (size_t)n);
	_exit(1);
}

static bool row_selected(const struct row *row)
{
	const char *p = opt.only;

	if (!p)
		return true;
	while (*p) {
		size_t len = strcspn(p, ",");

		if (len && !strncmp(row->id, p, len))
			return true;
		p += len;
		if (*p == ',')
			p++;
	}
	return false;
}

/* find an iteration count whose run takes about budget_ns */
static uint64_t calibrate(const struct row *row)
{
	uint64_t iters = 4, t;
	double target = opt.budget_ns / 10;

	for (;;) {
		t = row->fn(row, iters);
		if ((double)t >= target || iters >= (1ull << 40))
			break;
		if (t < target / 16)
			iters *= 8;
		else
			iters *= 2;
	}
	if (t == 0)
		t = 1;
	/* refine on a third of a run: the short runs above start cold */
	iters = (uint64_t)((double)iters * opt.budget_ns / 3 / (double)t);
	if (!iters)
		iters = 1;
	t = row->fn(row, iters);
	if (t == 0)
		t = 1;
	iters = (uint64_t)((double)iters * opt.budget_ns / (double)t);
	return iters ? iters : 1;
}

static void run_row(const struct row *row, struct result *r, const struct env *e)
{
	unsigned int runs = opt.runs;

	uint64_t t0 = now_ns();

	current_row = row->id;
	if (row->ntsync && !e->device) {
		r->status = RES_SKIPPED;
		r->skip_reason = "no /dev/ntsync";
		return;
	}
	/* generous: a run that takes 30x its budget has hung */
	alarm((unsigned int)(opt.budget_ns * (runs + 2) * 30 / 1e9) + 60);
	if (row->kind == ROW_TIME) {
		r->iters = calibrate(row);
		for (unsigned int i = 0; i < runs; i++)
			r->v[i] = (double)row->fn(row, r->iters) / (double)r->iters;
	} else {
		r->iters = mem_objects;
		runs = runs < 3 ? runs : 3;	/* the figure barely moves */
		mem_measure((enum obj_type)row->param, runs, r->v,
			    &r->raw_median, r->detail, sizeof(r->detail));
		if (mem_method[0]) {
			size_t l = strlen(r->detail);

			snprintf(r->detail + l, sizeof(r->detail) - l,
				 "%s[%s, raw delta %.0f B/object%s%s]",
				 l ? " " : "", mem_method, r->raw_median,
				 mem_note[0] ? "; " : "", mem_note);
		}
	}
	alarm(0);
	r->seconds = (double)(now_ns() - t0) / 1e9;
	r->runs = runs;
	r->status = RES_OK;
	summarize(r);
}

/* "12,345,678" */
static const char *group_digits(double v, char *buf, size_t len)
{
	char tmp[32];
	size_t n, o = 0;

	snprintf(tmp, sizeof(tmp), "%.0f", v);
	n = strlen(tmp);
	for (size_t i = 0; i < n && o + 2 < len; i++) {
		buf[o++] = tmp[i];
		if ((n - i - 1) % 3 == 0 && i + 1 < n && tmp[i] != '-')
			buf[o++] = ',';
	}
	buf[o] = '\0';
	return buf;
}

static void print_header(FILE *out)
{
	fprintf(out, "\n%-17s %-37s %11s %11s  %s\n", "row", "one op",
		"median", "ops/s", "spread: min..max (range/median)");
}

static void print_row(FILE *out, const struct row *row, const struct result *r)
{
	char buf[32];

	if (r->status == RES_SKIPPED) {
		fprintf(out, "%-17s %-37s %11s %11s  (%s)\n", row->id, row->what,
			"skipped", "-", r->skip_reason);
		return;
	}
	if (row->kind == ROW_MEM) {
		fprintf(out, "%-17s %-37s %9.0f B %11s  %.0f..%.0f B (%.1f%%), %" PRIu64 " objects x %u\n",
			row->id, row->what, r->median, "-", r->min, r->max,
			r->median ? 100 * (r->max - r->min) / r->median : 0.0,
			r->iters, r->runs);
		if (r->detail[0])
			fprintf(out, "%-17s   %s\n", "", r->detail);
		return;
	}
	fprintf(out, "%-17s %-37s %8.0f ns %11s  %.0f..%.0f (%.1f%%), %" PRIu64 " ops x %u\n",
		row->id, row->what, r->median,
		group_digits(1e9 / r->median, buf, sizeof(buf)), r->min, r->max,
		100 * (r->max - r->min) / r->median, r->iters, r->runs);
}

/* ------------------------------------------------------------------ */
/* JSON out                                                            */

static void write_json(FILE *f, const struct env *e, const struct result *res)
{
	bool first = true;

	fprintf(f, "{\n  \"tool\": \"ntsync-bench\",\n  \"version\": ");
	tc_json_str(f, NTSYNC_BENCH_VERSION);
	fprintf(f, ",\n  \"format\": 1,\n  \"mode\": \"%s\",\n  \"runs\": %u,\n"
		"  \"budget_ns\": %.0f,\n", opt.quick ? "quick" : "full", opt.runs,
		opt.budget_ns);
	fprintf(f, "  \"time_note\": \"CLOCK_MONOTONIC ns; under QEMU -icount shift=0,sleep=off guest-instruction time\",\n");
	fprintf(f, "  \"date\": ");
	tc_json_str(f, e->date);
	fprintf(f, ",\n  \"env\": {\n    \"kernel\": ");
	tc_json_str(f, e->kernel);
	fprintf(f, ",\n    \"kernel_version\": ");
	tc_json_str(f, e->kversion);
	fprintf(f, ",\n    \"machine\": ");
	tc_json_str(f, e->machine);
	fprintf(f, ",\n    \"cpu\": ");
	tc_json_str(f, e->cpu);
	fprintf(f, ",\n    \"cpus\": %ld,\n    \"virt\": ", e->cpus);
	tc_json_str(f, e->virt);
	fprintf(f, ",\n    \"clocksource\": ");
	tc_json_str(f, e->clocksource);
	fprintf(f, ",\n    \"clocksource_end\": ");
	tc_json_str(f, e->clocksource_end);
	fprintf(f, ",\n    \"busy_percent_before\": ");
	tc_json_num(f, e->busy_pct);
	fprintf(f, "\n  },\n  \"driver\": {\n    \"device\": %s,\n",
		e->device ? "true" : "false");
	fprintf(f, "    \"module\": %s,\n    \"loadable\": %s,\n    \"out_of_tree\": %s,\n",
		e->module ? "true" : "false", e->loadable ? "true" : "false",
		e->out_of_tree ? "true" : "false");
	fprintf(f, "    \"taint\": ");
	tc_json_str(f, e->taint);
	fprintf(f, ",\n    \"version\": ");
	tc_json_str(f, e->version);
	fprintf(f, ",\n    \"srcversion\": ");
	tc_json_str(f, e->srcversion);
	fprintf(f, ",\n    \"kind\": ");
	tc_json_str(f, e->driver);
	fprintf(f, ",\n    \"label\": ");
	tc_json_str(f, e->label);
	fprintf(f, "\n  },\n  \"rows\": [");
	for (size_t i = 0; i < NROWS; i++) {
		const struct row *row = &rows[i];
		const struct result *r = &res[i];

		if (r->status == RES_NONE)
			continue;
		fprintf(f, "%s\n    {\"id\": ", first ? "" : ",");
		first = false;
		tc_json_str(f, row->id);
		fprintf(f, ", \"group\": ");
		tc_json_str(f, row->group);
		fprintf(f, ", \"what\": ");
		tc_json_str(f, row->what);
		fprintf(f, ", \"unit\": \"%s\", \"ntsync\": %s",
			row->kind == ROW_MEM ? "bytes/object" : "ns/op",
			row->ntsync ? "true" : "false");
		if (r->status == RES_SKIPPED) {
			fprintf(f, ", \"skipped\": true, \"reason\": ");
			tc_json_str(f, r->skip_reason);
			fputc('}', f);
			continue;
		}
		fprintf(f, ", \"skipped\": false, \"median\": ");
		tc_json_num(f, r->median);
		fprintf(f, ", \"min\": ");
		tc_json_num(f, r->min);
		fprintf(f, ", \"max\": ");
		tc_json_num(f, r->max);
		fprintf(f, ", \"q1\": ");
		tc_json_num(f, r->q1);
		fprintf(f, ", \"q3\": ");
		tc_json_num(f, r->q3);
		if (row->kind == ROW_TIME) {
			fprintf(f, ", \"ops_per_s\": ");
			tc_json_num(f, 1e9 / r->median);
			fprintf(f, ", \"iters\": %" PRIu64, r->iters);
		} else {
			fprintf(f, ", \"objects\": %" PRIu64 ", \"raw_median\": ",
				r->iters);
			tc_json_num(f, r->raw_median);
			fprintf(f, ", \"detail\": ");
			tc_json_str(f, r->detail);
		}
		fprintf(f, ", \"seconds\": %.3f, \"runs\": %u, \"values\": [",
			r->seconds, r->runs);
		for (unsigned int k = 0; k < r->runs; k++) {
			if (k)
				fputs(", ", f);
			tc_json_num(f, r->v[k]);
		}
		fputs("]}", f);
	}
	fprintf(f, "\n  ]\n}\n");
}

/* ------------------------------------------------------------------ */
/* JSON in (just enough for our own files)                             */

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jv {
	enum jtype t;
	double num;
	bool b;
	char *str;
	size_t n;
	char **keys;		/* J_OBJ */
	struct jv **items;	/* J_ARR and J_OBJ */
};

struct jparser {
	const char *p;
	const char *start;
	const char *file;
};

static void __attribute__((noreturn))
jfail(struct jparser *jp, const char *what)
{
	size_t off = (size_t)(jp->p - jp->start);

	fprintf(stderr, "%s: %s: not an ntsync-bench JSON file (%s at byte %zu); write one with 'ntsync-bench --json=FILE'\n",
		tc_progname, jp->file, what, off);
	exit(2);
}

static void jskip(struct jparser *jp)
{
	while (*jp->p && isspace((unsigned char)*jp->p))
		jp->p++;
}

static struct jv *jparse(struct jparser *jp, int depth);

static char *jparse_str(struct jparser *jp)
{
	size_t cap = 16, n = 0;
	char *s = xcalloc(cap, 1);

	jp->p++;	/* opening quote */
	while (*jp->p && *jp->p != '"') {
		char c = *jp->p++;

		if (c == '\\') {
			c = *jp->p++;
			switch (c) {
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case 'r': c = '\r'; break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'u': {
				unsigned int u = 0;

				for (int i = 0; i < 4; i++) {
					if (!isxdigit((unsigned char)*jp->p))
						jfail(jp, "bad \\u escape");
					u = u * 16 + (unsigned int)(isdigit((unsigned char)*jp->p) ?
						*jp->p - '0' :
						tolower((unsigned char)*jp->p) - 'a' + 10);
					jp->p++;
				}
				c = u < 0x80 ? (char)u : '?';
				break;
			}
			case '\0':
				jfail(jp, "unterminated string");
			default:
				break;
			}
		}
		if (n + 2 > cap) {
			cap *= 2;
			s = realloc(s, cap);
			if (!s)
				tc_die("out of memory");
		}
		s[n++] = c;
	}
	if (*jp->p != '"')
		jfail(jp, "unterminated string");
	jp->p++;
	s[n] = '\0';
	return s;
}

static void jpush(struct jv *v, char *key, struct jv *item)
{
	v->items = realloc(v->items, (v->n + 1) * sizeof(*v->items));
	v->keys = realloc(v->keys, (v->n + 1) * sizeof(*v->keys));
	if (!v->items || !v->keys)
		tc_die("out of memory");
	v->items[v->n] = item;
	v->keys[v->n] = key;
	v->n++;
}

static struct jv *jparse(struct jparser *jp, int depth)
{
	struct jv *v = xcalloc(1, sizeof(*v));

	if (depth > 32)
		jfail(jp, "nested too deep");
	jskip(jp);
	switch (*jp->p) {
	case '{':
		v->t = J_OBJ;
		jp->p++;
		jskip(jp);
		if (*jp->p == '}') {
			jp->p++;
			return v;
		}
		for (;;) {
			char *key;

			jskip(jp);
			if (*jp->p != '"')
				jfail(jp, "expected a key");
			key = jparse_str(jp);
			jskip(jp);
			if (*jp->p++ != ':')
				jfail(jp, "expected ':'");
			jpush(v, key, jparse(jp, depth + 1));
			jskip(jp);
			if (*jp->p == ',') {
				jp->p++;
				continue;
			}
			if (*jp->p++ != '}')
				jfail(jp, "expected '}'");
			return v;
		}
	case '[':
		v->t = J_ARR;
		jp->p++;
		jskip(jp);
		if (*jp->p == ']') {
			jp->p++;
			return v;
		}
		for (;;) {
			jpush(v, NULL, jparse(jp, depth + 1));
			jskip(jp);
			if (*jp->p == ',') {
				jp->p++;
				continue;
			}
			if (*jp->p++ != ']')
				jfail(jp, "expected ']'");
			return v;
		}
	case '"':
		v->t = J_STR;
		v->str = jparse_str(jp);
		return v;
	case 't':
		if (strncmp(jp->p, "true", 4))
			jfail(jp, "bad literal");
		jp->p += 4;
		v->t = J_BOOL;
		v->b = true;
		return v;
	case 'f':
		if (strncmp(jp->p, "false", 5))
			jfail(jp, "bad literal");
		jp->p += 5;
		v->t = J_BOOL;
		return v;
	case 'n':
		if (strncmp(jp->p, "null", 4))
			jfail(jp, "bad literal");
		jp->p += 4;
		v->t = J_NULL;
		return v;
	default: {
		char *end;

		errno = 0;
		v->num = strtod(jp->p, &end);
		if (end == jp->p)
			jfail(jp, "unexpected character");
		jp->p = end;
		v->t = J_NUM;
		return v;
	}
	}
}

static void jfree(struct jv *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->n; i++) {
		jfree(v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->str);
	free(v);
}

static const struct jv *jget(const struct jv *o, const char *key)
{
	if (!o || o->t != J_OBJ)
		return NULL;
	for (size_t i = 0; i < o->n; i++)
		if (!strcmp(o->keys[i], key))
			return o->items[i];
	return NULL;
}

static const char *jgets(const struct jv *o, const char *key)
{
	const struct jv *v = jget(o, key);

	return v && v->t == J_STR ? v->str : "";
}

static double jgetn(const struct jv *o, const char *key)
{
	const struct jv *v = jget(o, key);

	return v && v->t == J_NUM ? v->num : NAN;
}

static bool jgetb(const struct jv *o, const char *key)
{
	const struct jv *v = jget(o, key);

	return v && v->t == J_BOOL && v->b;
}

static struct jv *load_json(const char *path)
{
	FILE *f = fopen(path, "re");
	struct jparser jp;
	char *buf;
	size_t cap = 65536, n = 0, got;
	struct jv *root;

	if (!f) {
		fprintf(stderr, "%s: cannot open %s: %s\n", tc_progname, path,
			strerror(errno));
		exit(2);
	}
	buf = xcalloc(cap, 1);
	while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
		n += got;
		if (n + 1 >= cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			if (!buf)
				tc_die("out of memory");
		}
	}
	fclose(f);
	buf[n] = '\0';
	jp.p = jp.start = buf;
	jp.file = path;
	root = jparse(&jp, 0);
	jskip(&jp);
	if (*jp.p)
		jfail(&jp, "trailing data");
	if (root->t != J_OBJ || strcmp(jgets(root, "tool"), "ntsync-bench") ||
	    !jget(root, "rows") || jget(root, "rows")->t != J_ARR)
		jfail(&jp, "no \"tool\": \"ntsync-bench\" with \"rows\"");
	free(buf);
	return root;
}

static const struct jv *find_row(const struct jv *root, const char *id)
{
	const struct jv *arr = jget(root, "rows");

	for (size_t i = 0; i < arr->n; i++)
		if (!strcmp(jgets(arr->items[i], "id"), id))
			return arr->items[i];
	return NULL;
}

/* a row's median if it was measured, else NaN */
static double row_median(const struct jv *root, const char *id)
{
	const struct jv *r = find_row(root, id);

	if (!r || jgetb(r, "skipped"))
		return NAN;
	return jgetn(r, "median");
}

/* ------------------------------------------------------------------ */
/* --compare                                                           */

static const char *file_label(const struct jv *root)
{
	const char *l = jgets(jget(root, "driver"), "label");

	return l[0] ? l : "?";
}

static void describe_file(const char *tag, const char *path,
			  const struct jv *root)
{
	const struct jv *env = jget(root, "env");
	const struct jv *drv = jget(root, "driver");

	printf("%s = %s: \"%s\" - %s, Linux %s, %.0f CPU(s), %s; driver %s%s%s%s; %s mode\n",
	       tag, path, file_label(root),
	       jgets(root, "date")[0] ? jgets(root, "date") : "date unknown",
	       jgets(env, "kernel"),
	       isfinite(jgetn(env, "cpus")) ? jgetn(env, "cpus") : 0.0,
	       jgets(env, "virt")[0] ? jgets(env, "virt") : "?",
	       jgets(drv, "kind"),
	       jgets(drv, "version")[0] ? " " : "", jgets(drv, "version"),
	       jgetb(drv, "out_of_tree") ? " (out-of-tree)" : "",
	       jgets(root, "mode"));
}

static void spread_str(const struct jv *r, char *buf, size_t len)
{
	double med = jgetn(r, "median"), lo = jgetn(r, "min"), hi = jgetn(r, "max");

	if (!isfinite(med) || med == 0)
		snprintf(buf, len, "?");
	else
		snprintf(buf, len, "%.1f%%", 100 * (hi - lo) / med);
}

static void cmp_cell(const struct jv *r, char *buf, size_t len)
{
	char sp[16];

	if (!r) {
		snprintf(buf, len, "%s", "absent");
		return;
	}
	if (jgetb(r, "skipped")) {
		snprintf(buf, len, "%s", "skipped");
		return;
	}
	spread_str(r, sp, sizeof(sp));
	snprintf(buf, len, "%.0f %s (%s)", jgetn(r, "median"),
		 !strcmp(jgets(r, "unit"), "ns/op") ? "ns" : "B", sp);
}

/* a row whose runs spread by more than 5% of the median */
static bool row_noisy(const struct jv *root, const char *id)
{
	const struct jv *r = find_row(root, id);
	double med, lo, hi;

	if (!r || jgetb(r, "skipped"))
		return false;
	med = jgetn(r, "median");
	lo = jgetn(r, "min");
	hi = jgetn(r, "max");
	return isfinite(med) && med > 0 && (hi - lo) / med > 0.05;
}

/* time(ref)/time(cand) for a row; NaN if either is missing */
static double ratio(const struct jv *ref, const struct jv *cand, const char *id)
{
	double a = row_median(ref, id), b = row_median(cand, id);

	if (!isfinite(a) || !isfinite(b) || b <= 0)
		return NAN;
	return a / b;
}

/*
 * One target line: "[met    ] what: value".  `value` is a format for the
 * figures; a target whose rows are missing or skipped prints n/a instead.
 */
static void verdict(bool known, bool met, const char *what,
		    const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void verdict(bool known, bool met, const char *what,
		    const char *fmt, ...)
{
	va_list ap;

	printf("  [%s] %s: ", !known ? "n/a    " : met ? "met    " : "not met",
	       what);
	if (known) {
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
	} else {
		fputs("a row is missing or skipped", stdout);
	}
	putchar('\n');
}

static void ratio_target(const struct jv *ours, const char *label,
			 const char *num, const char *den, double limit)
{
	double a = row_median(ours, num), b = row_median(ours, den);
	bool known = isfinite(a) && isfinite(b) && b > 0;
	char what[160];

	snprintf(what, sizeof(what), "%s: %s within %.2fx of %s", label, num,
		 limit, den);
	verdict(known, known && a / b <= limit, what, "%.2fx (%.0f / %.0f)",
		known ? a / b : 0.0, a, b);
}

static int do_compare(const char *pa, const char *pb)
{
	struct jv *A = load_json(pa), *B = load_json(pb);
	const struct jv *ours, *intree;
	const char *ours_tag, *intree_tag;
	const struct jv *rows_a = jget(A, "rows"), *rows_b = jget(B, "rows");
	char ca[48], cb[48], buf[160];
	const char *fast_rows[] = { "uncontended.sem", "waitany.1", "waitany.8",
				    "waitany.64", "pingpong.ntsync" };

	printf("ntsync-bench %s --compare\n", NTSYNC_BENCH_VERSION);
	describe_file("A", pa, A);
	describe_file("B", pb, B);
	printf("ratio = A/B: time (or bytes) of A divided by B's; >1 means B is faster (smaller).\n");
	printf("spread = (max - min) / median of the runs of a row; \"noisy\" marks a ratio where\n"
	       "either side spreads by more than 5%%: run again before trusting it.\n");
	printf("Times are CLOCK_MONOTONIC ns; under QEMU -icount shift=0,sleep=off guest-instruction time.\n\n");
	printf("%-17s %-37s %-22s %-22s %7s\n", "row", "one op",
	       "A: median (spread)", "B: median (spread)", "A/B");
	printf("%-17s %-37s %-22s %-22s %7s\n", "", "",
	       file_label(A), file_label(B), "");

	for (int pass = 0; pass < 2; pass++) {
		const struct jv *list = pass ? rows_b : rows_a;

		for (size_t i = 0; i < list->n; i++) {
			const struct jv *r = list->items[i];
			const char *id = jgets(r, "id");
			const struct jv *ra = find_row(A, id), *rb = find_row(B, id);
			double q = ratio(A, B, id);

			if (pass && ra)
				continue;	/* printed in the first pass */
			cmp_cell(ra, ca, sizeof(ca));
			cmp_cell(rb, cb, sizeof(cb));
			if (isfinite(q))
				snprintf(buf, sizeof(buf), "%7.3f%s", q,
					 row_noisy(A, id) || row_noisy(B, id) ?
					 "  noisy" : "");
			else
				snprintf(buf, sizeof(buf), "%7s", "-");
			printf("%-17s %-37.37s %-22s %-22s %s\n", id,
			       jgets(r, "what"), ca, cb, buf);
		}
	}

	/* which file is ours? the out-of-tree one; otherwise B */
	if (jgetb(jget(A, "driver"), "out_of_tree") &&
	    !jgetb(jget(B, "driver"), "out_of_tree")) {
		ours = A;
		intree = B;
		ours_tag = "A";
		intree_tag = "B";
	} else {
		ours = B;
		intree = A;
		ours_tag = "B";
		intree_tag = "A";
	}

	printf("\nTargets (informational, nothing is asserted): ours = %s (\"%s\"), in-tree = %s (\"%s\")%s\n",
	       ours_tag, file_label(ours), intree_tag, file_label(intree),
	       jgetb(jget(ours, "driver"), "out_of_tree") ? "" :
	       " [neither file is marked out-of-tree: assuming B is ours]");

	/* ours vs in-tree >= 1.00 on every ntsync time row */
	{
		const struct jv *list = jget(ours, "rows");
		double worst = INFINITY;
		char worst_id[64] = "", bad[512] = "";
		size_t used = 0;
		int n = 0;

		for (size_t i = 0; i < list->n; i++) {
			const struct jv *r = list->items[i];
			const char *id = jgets(r, "id");
			double q;

			if (!jgetb(r, "ntsync") || strcmp(jgets(r, "unit"), "ns/op"))
				continue;
			q = ratio(intree, ours, id);
			if (!isfinite(q))
				continue;
			n++;
			if (q < worst) {
				worst = q;
				snprintf(worst_id, sizeof(worst_id), "%s", id);
			}
			if (q < 1.0 && used < sizeof(bad))
				used += (size_t)snprintf(bad + used, sizeof(bad) - used,
							 " %s %.3f%s", id, q,
							 row_noisy(intree, id) ||
							 row_noisy(ours, id) ?
							 " (noisy)" : "");
		}
		verdict(n > 0, n > 0 && worst >= 1.0,
			"ours vs in-tree >= 1.00 on every ntsync time row",
			"lowest %.3f (%s) of %d rows%s%s", n ? worst : 0.0,
			worst_id, n, bad[0] ? "; below 1.00:" : "", bad);
	}
	/* >= 1.10 on uncontended, wait-any width and ping-pong */
	for (size_t i = 0; i < sizeof(fast_rows) / sizeof(fast_rows[0]); i++) {
		double q = ratio(intree, ours, fast_rows[i]);

		char what[96];

		snprintf(what, sizeof(what), "ours vs in-tree >= 1.10 on %s",
			 fast_rows[i]);
		verdict(isfinite(q), isfinite(q) && q >= 1.10, what, "%.3f", q);
	}
	ratio_target(ours, "ours", "uncontended.sem", "null.getppid2", 3.0);
	ratio_target(intree, "(in-tree, for reference)", "uncontended.sem",
		     "null.getppid2", 3.0);
	ratio_target(ours, "ours", "waitany.64", "waitany.1", 6.0);
	ratio_target(intree, "(in-tree, for reference)", "waitany.64",
		     "waitany.1", 6.0);
	ratio_target(ours, "ours", "pingpong.ntsync", "pingpong.futex", 1.05);
	{
		/* what the ioctl path alone costs a round trip of 4 calls */
		double io = row_median(ours, "null.ioctl2");
		double nul = row_median(ours, "null.getppid2");
		double fx = row_median(ours, "pingpong.futex");

		if (isfinite(io) && isfinite(nul) && isfinite(fx) && fx > 0)
			printf("  [info   ] ioctl path vs null syscall: +%.0f ns per call, so 4 ioctls add %.0f ns (%.3fx) to a futex round trip before the driver does anything\n",
			       (io - nul) / 2, 2 * (io - nul), (fx + 2 * (io - nul)) / fx);
	}
	{
		double p = row_median(ours, "pingpong.ntsync");
		double ev = row_median(ours, "pingpong.eventfd");
		double pi = row_median(ours, "pingpong.pipe");
		bool known = isfinite(p) && isfinite(ev) && isfinite(pi);

		verdict(known, known && p < ev && p < pi,
			"ours: pingpong.ntsync faster than eventfd and pipe RPC",
			"%.0f vs %.0f and %.0f ns", p, ev, pi);
	}
	{
		const char *mem[] = { "mem.sem", "mem.mutex", "mem.event" };

		for (size_t i = 0; i < 3; i++) {
			double a = row_median(intree, mem[i]);
			double b = row_median(ours, mem[i]);
			bool known = isfinite(a) && isfinite(b);

			char what[96];

			snprintf(what, sizeof(what),
				 "ours: %s no larger than in-tree", mem[i]);
			verdict(known, known && b <= a, what,
				"%.0f vs %.0f bytes/object", b, a);
		}
	}
	jfree(A);
	jfree(B);
	return 0;
}

/* ------------------------------------------------------------------ */

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: %s [--quick] [--json[=FILE]] [--runs N] [--budget MS] [--only IDS]\n"
		"                    [--objects N] [--cpu N] [--label NAME] [--wait S]\n"
		"       %s --compare A.json B.json\n"
		"       %s --list | --help | --version\n"
		"\n"
		"Measures /dev/ntsync next to futexes, eventfd+poll and pipe RPC.\n"
		"\n"
		"  -q, --quick         short run (3 runs of ~25 ms per row) for a demo\n"
		"  -j, --json[=FILE]   write results as JSON to FILE, or to stdout (the table\n"
		"                      then goes to stderr); \"--json FILE\" works too\n"
		"  -r, --runs N        runs per row (default 5, quick 3; at most %d)\n"
		"  -b, --budget MS     length of one run in ms (default 120, quick 25)\n"
		"  -o, --only IDS      only rows whose id starts with one of IDS (comma list)\n"
		"  -n, --objects N     objects for the memory rows (default %d)\n"
		"  -c, --cpu N         pin every thread to CPU N\n"
		"  -l, --label NAME    name of this run in --compare (default: driver kind)\n"
		"  -w, --wait S        wait up to S seconds for other work to stop (default 10)\n"
		"      --compare A B   one table of two JSON files, ratio A/B per row\n"
		"      --list          list the rows\n"
		"\n"
		"Exit status: 0 done (ntsync rows skipped without /dev/ntsync), 1 failure,\n"
		"2 usage error.  See ntsync-bench(1).\n",
		tc_progname, tc_progname, tc_progname, MAX_RUNS, MEM_OBJECTS);
}

static unsigned long parse_ulong(const char *what, const char *s,
				 unsigned long lo, unsigned long hi)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi || s[0] == '-')
		tc_usage_error("%s '%s' is not a number from %lu to %lu", what, s,
			    lo, hi);
	return v;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "quick", no_argument, NULL, 'q' },
		{ "json", optional_argument, NULL, 'j' },
		{ "runs", required_argument, NULL, 'r' },
		{ "budget", required_argument, NULL, 'b' },
		{ "only", required_argument, NULL, 'o' },
		{ "objects", required_argument, NULL, 'n' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "label", required_argument, NULL, 'l' },
		{ "wait", required_argument, NULL, 'w' },
		{ "compare", no_argument, NULL, 'C' },
		{ "list", no_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	bool compare = false, json = false, wait_set = false;
	long budget_ms = -1;
	struct result *res;
	struct env env;
	FILE *out, *jf = NULL;
	uint64_t t_start;
	int c;

	tc_progname = "ntsync-bench";
	while ((c = getopt_long(argc, argv, "qj::r:b:o:n:c:l:w:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'q':
			opt.quick = true;
			break;
		case 'j':
			json = true;
			opt.json_path = optarg;
			break;
		case 'r':
			opt.runs = (unsigned int)parse_ulong("--runs", optarg, 1, MAX_RUNS);
			break;
		case 'b':
			budget_ms = (long)parse_ulong("--budget", optarg, 1, 600000);
			break;
		case 'o':
			opt.only = optarg;
			break;
		case 'n':
			mem_objects = (unsigned int)parse_ulong("--objects", optarg,
								 1, 1000000);
			break;
		case 'c':
			opt.cpu = (int)parse_ulong("--cpu", optarg, 0, CPU_SETSIZE - 1);
			break;
		case 'l':
			opt.label = optarg;
			break;
		case 'w':
			opt.wait_s = (double)parse_ulong("--wait", optarg, 0, 3600);
			wait_set = true;
			break;
		case 'C':
			compare = true;
			break;
		case 'L':
			for (size_t i = 0; i < NROWS; i++)
				printf("%-17s %-11s %s%s\n", rows[i].id, rows[i].group,
				       rows[i].what, rows[i].ntsync ? "" : "  (no ntsync)");
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("ntsync-bench %s\n", NTSYNC_BENCH_VERSION);
			return 0;
		default:
			fprintf(stderr, "Try '%s --help'.\n", tc_progname);
			return 2;
		}
	}

	if (compare) {
		if (argc - optind != 2)
			tc_usage_error("--compare needs exactly two JSON files (A.json B.json), got %d",
				    argc - optind);
		if (json || opt.quick)
			tc_usage_error("--compare reads results; it does not take --json or --quick");
		return do_compare(argv[optind], argv[optind + 1]);
	}
	/* "--json FILE" as well as "--json=FILE" */
	if (json && !opt.json_path && optind < argc) {
		opt.json_path = argv[optind++];
	}
	if (optind < argc)
		tc_usage_error("unexpected argument '%s'", argv[optind]);
	if (opt.only) {
		bool any = false;

		for (size_t i = 0; i < NROWS; i++)
			any |= row_selected(&rows[i]);
		if (!any)
			tc_usage_error("--only '%s' matches no row (see --list)", opt.only);
	}

	if (!opt.runs)
		opt.runs = opt.quick ? 3 : 5;
	if (budget_ms < 0)
		budget_ms = opt.quick ? 25 : 120;
	if (!wait_set)
		opt.wait_s = opt.quick ? 5 : 10;
	opt.budget_ns = (double)budget_ms * 1e6;

	if (opt.cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(opt.cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) < 0)
			tc_usage_error("--cpu %d: %s", opt.cpu, strerror(errno));
	}

	if (json && opt.json_path && strcmp(opt.json_path, "-")) {
		jf = fopen(opt.json_path, "we");
		if (!jf)
			tc_usage_error("cannot write %s: %s", opt.json_path,
				    strerror(errno));
	} else if (json) {
		jf = stdout;
	}
	out = jf == stdout ? stderr : stdout;
	setvbuf(out, NULL, _IOLBF, 0);

	signal(SIGALRM, on_alarm);
	signal(SIGPIPE, SIG_IGN);
	detect_env(&env, opt.label);
	if (env.device)
		mem_objects = prepare_fd_room(mem_objects);

	wait_for_clocksource(&env, out);
	wait_for_quiet(&env, out, opt.wait_s);
	print_env(out, &env, opt.quick ? "quick" : "full", opt.runs,
		  opt.budget_ns / 1e6);
	print_header(out);

	res = xcalloc(NROWS, sizeof(*res));
	t_start = now_ns();
	{
		const char *group = NULL;

		for (size_t i = 0; i < NROWS; i++) {
			if (!row_selected(&rows[i]))
				continue;
			if (!group || strcmp(group, rows[i].group)) {
				group = rows[i].group;
				fprintf(out, "-- %s\n", group);
			}
			run_row(&rows[i], &res[i], &env);
			print_row(out, &rows[i], &res[i]);
		}
	}
	fprintf(out, "\nrows took %.1f s (clock above)\n", (double)(now_ns() - t_start) / 1e9);
	read_line(CLOCKSOURCE, env.clocksource_end, sizeof(env.clocksource_end));
	if (strcmp(env.clocksource, env.clocksource_end))
		fprintf(out, "\nwarning: the clocksource changed from %s to %s during the run: rows before the switch are on another time scale; run again\n",
			env.clocksource, env.clocksource_end);
	if (!env.device)
		fprintf(out, "\nnote: /dev/ntsync is missing or cannot be opened (%s): the ntsync rows were skipped.\n",
			env.device_error);

	if (jf) {
		write_json(jf, &env, res);
		if (fflush(jf) != 0 || (jf != stdout && fclose(jf) != 0))
			tc_die("writing %s: %s", opt.json_path ? opt.json_path : "stdout",
			    strerror(errno));
		if (jf != stdout)
			fprintf(out, "\nJSON written to %s\n", opt.json_path);
	}
	free(res);
	return 0;
}
