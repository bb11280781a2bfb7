// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ntsync-bench: the scenarios: the raw calls, threads, every timed row
 * (each runs `iters` operations and returns the elapsed ns) and the table
 * of rows.
 */
#include "bench.h"

/* ------------------------------------------------------------------ */
/* the raw ntsync calls                                                */

int g_dev = -1;		/* /dev/ntsync, or -1 */

int nt_create_sem(uint32_t count, uint32_t max)
{
	int fd = ntr_create_sem(g_dev, count, max);

	if (fd < 0)
		tc_die("NTSYNC_IOC_CREATE_SEM: %s", strerror(errno));
	return fd;
}

int nt_create_mutex(uint32_t owner, uint32_t count)
{
	int fd = ntr_create_mutex(g_dev, owner, count);

	if (fd < 0)
		tc_die("NTSYNC_IOC_CREATE_MUTEX: %s", strerror(errno));
	return fd;
}

int nt_create_event(uint32_t manual, uint32_t signaled)
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

/*
 * --spread: the CPUs a row's threads go on.  The timing thread stays on
 * the first; the threads a run starts take the next ones in turn, from the
 * second, so that every run of every row places its threads the same way
 * (left to the scheduler, the placement may differ from run to run: on 4
 * vCPUs under QEMU the wait-all and wait-any contention rows spread by up
 * to 12 % within a boot without it, under 2 % with it).
 */
static int spread_cpu[CPU_SETSIZE];
static unsigned int spread_n, spread_next;

void bench_spread_init(char *desc, size_t len)
{
	cpu_set_t set;
	size_t l;

	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		tc_die("sched_getaffinity: %s", strerror(errno));
	spread_n = 0;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			spread_cpu[spread_n++] = c;
	CPU_ZERO(&set);
	CPU_SET(spread_cpu[0], &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		tc_die("sched_setaffinity: %s", strerror(errno));

	l = (size_t)snprintf(desc, len, "spread (--spread): timing thread on CPU %d, a row's threads on",
			     spread_cpu[0]);
	for (unsigned int i = 1; i <= spread_n && l < len; i++)
		l += (size_t)snprintf(desc + l, len - l, "%s %d", i > 1 ? "," : "",
				      spread_cpu[i % spread_n]);
	if (l < len)
		snprintf(desc + l, len - l, "%s",
			 spread_n > 1 ? ", ... in turn" : " (one CPU: all share it)");
}

/*
 * Lock rows count how often an acquisition slept: the voluntary context
 * switches of their workers between the start line and the end (a wait
 * that finds the object free returns without one).  Where a contended
 * row's time moves from run to run, this says whether the lock changed
 * hands more often (the hand-offs are what costs).
 */
double g_run_blocked = -1;
static _Atomic uint64_t run_sleeps;	/* the workers' sleeps in this run */

void bench_run_reset(void)
{
	spread_next = 1;
	g_run_blocked = -1;
	atomic_store(&run_sleeps, 0);
}

static uint64_t thread_sleeps(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru) < 0)
		tc_die("getrusage: %s", strerror(errno));
	return (uint64_t)ru.ru_nvcsw;
}

/* a lock row's worker, at its end: the sleeps since s0 (thread_sleeps()) */
static void add_sleeps(uint64_t s0)
{
	atomic_fetch_add(&run_sleeps, thread_sleeps() - s0);
}

/* a lock row, after joining its workers: the share of its ops that slept */
static void note_blocked(uint64_t ops)
{
	g_run_blocked = (double)atomic_load(&run_sleeps) / (double)ops;
}

static void start_thread(pthread_t *t, void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	int err = pthread_attr_init(&attr);

	if (!err && spread_n) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(spread_cpu[spread_next++ % spread_n], &set);
		err = pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	}
	if (!err)
		err = pthread_create(t, &attr, fn, arg);
	pthread_attr_destroy(&attr);
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
/* 4: the same while another thread sleeps in a wait-any over BUSY_WIDTH semaphores */
static uint64_t bench_wait_any_busy(const struct row *row, uint64_t iters);
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
	uint64_t s0;

	start_line_wait(&r->start);
	s0 = thread_sleeps();
	for (uint64_t i = 0; i < r->iters; i++) {
		nt_wait_any(&r->mutex, 1, w->owner);
		r->shared++;
		nt_mutex_unlock(r->mutex, w->owner);
	}
	add_sleeps(s0);
	return NULL;
}

static uint64_t bench_mutex(const struct row *row, uint64_t iters);

/* 3. wait-all contention: 4 threads each take the same 8 semaphores at once */
#define WAITALL_WIDTH 8

struct waitall_run {
	struct start_line start;
	int objs[WAITALL_WIDTH];
	uint64_t iters;
	uint64_t shared;	/* changed only while holding all 8 */
};

struct waitall_worker {
	struct waitall_run *run;
	uint32_t owner;
};

static void *waitall_worker(void *arg)
{
	struct waitall_worker *w = arg;
	struct waitall_run *r = w->run;
	uint64_t s0;

	start_line_wait(&r->start);
	s0 = thread_sleeps();
	for (uint64_t i = 0; i < r->iters; i++) {
		nt_wait(NTSYNC_IOC_WAIT_ALL, r->objs, WAITALL_WIDTH, w->owner);
		r->shared++;
		for (unsigned int j = 0; j < WAITALL_WIDTH; j++)
			nt_sem_release(r->objs[j], 1);
	}
	add_sleeps(s0);
	return NULL;
}

static uint64_t bench_waitall_contended(const struct row *row, uint64_t iters);

/*
 * 3. semaphore work queue: 1 producer, consumers taking items, a slot
 * semaphore bounding what is in flight.  queue.1p3c: one item semaphore,
 * 3 consumers, 16 slots; contend.waitany64: the producer signals 64 item
 * semaphores in turn, 4 consumers each wait for any of the 64, 64 slots.
 */
#define QUEUE_MAX_CONSUMERS 4

struct queue_shape {
	uint32_t width;		/* item semaphores */
	unsigned int consumers;
	uint32_t slots;
};

static const struct queue_shape queue_shapes[] = {
	{ 1, 3, 16 },		/* queue.1p3c */
	{ 64, 4, 64 },		/* contend.waitany64 */
};

struct queue_run {
	struct start_line start;
	int items[NTSYNC_MAX_WAIT_COUNT], slots;
	uint32_t width;
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

		nt_wait_any(q->items, q->width, owner);
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


const struct row rows[] = {
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
	{ "contend.waitall8", "contention", "wait-all 8 + 8 releases, 4 threads",
	  ROW_TIME, true, bench_waitall_contended, 4 },
	{ "contend.waitany64", "contention", "wait-any 64, 4 waiters, 1 signaller",
	  ROW_TIME, true, bench_queue, 1 },

	{ "waitany.1", "wait width", "wait-any 1 (last signaled) + release",
	  ROW_TIME, true, bench_wait_any, 1 },
	{ "waitany.8", "wait width", "wait-any 8 (last signaled) + release",
	  ROW_TIME, true, bench_wait_any, 8 },
	{ "waitany.64", "wait width", "wait-any 64 (last signaled) + release",
	  ROW_TIME, true, bench_wait_any, 64 },
	{ "waitany.64.busy", "wait width", "waitany.64, a thread asleep in a wait on 16",
	  ROW_TIME, true, bench_wait_any_busy, 64 },
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
const size_t nrows = sizeof(rows) / sizeof(rows[0]);


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
 * A thread asleep in a wait too large for the kernel stack, as a game's
 * worker threads sleep in WaitForMultipleObjects, while waitany.64 runs:
 * the sleeping wait holds the array of queue entries it took, possibly the
 * instance's spare (module/ntsync.c, ntsync_entries_get()), and the other
 * large waits must not become slower meanwhile.  On 1.1.0 they do not: the
 * first wait to end after it refills the spare slot (doc/results.md).
 */
#define BUSY_WIDTH 16

struct busy_sleeper {
	int objs[BUSY_WIDTH];
	_Atomic pid_t tid;
};

static void *busy_sleeper_main(void *arg)
{
	struct busy_sleeper *b = arg;

	atomic_store(&b->tid, (pid_t)syscall(SYS_gettid));
	if (nt_wait_any(b->objs, BUSY_WIDTH, 3) != 0)
		tc_die("waitany.64.busy: the sleeping wait returned the wrong index");
	return NULL;
}

/* Whether thread TID of this process is asleep (state S in its stat). */
static bool thread_is_asleep(pid_t tid)
{
	char path[64], buf[256], *p;
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		tc_die("%s: %s", path, strerror(errno));
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		tc_die("%s: cannot read it", path);
	buf[len] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

static uint64_t bench_wait_any_busy(const struct row *row, uint64_t iters)
{
	struct busy_sleeper b = { .tid = 0 };
	uint64_t t;
	pthread_t th;
	int tries;

	for (int i = 0; i < BUSY_WIDTH; i++)
		b.objs[i] = nt_create_sem(0, 1);
	start_thread(&th, busy_sleeper_main, &b);
	for (tries = 0; tries < 10000; tries++) {
		pid_t tid = atomic_load(&b.tid);

		if (tid && thread_is_asleep(tid))
			break;
		usleep(1000);
	}
	if (tries == 10000)
		tc_die("%s: the other thread did not go to sleep in its wait in 10 s", row->id);
	t = bench_wait_any(row, iters);
	nt_sem_release(b.objs[0], 1);
	join_thread(th);
	for (int i = 0; i < BUSY_WIDTH; i++)
		close(b.objs[i]);
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
	note_blocked(r.iters * n);
	close(r.mutex);
	if (r.shared != r.iters * n)
		tc_die("%s: mutex lost an update (%" PRIu64 " of %" PRIu64 ")",
		    row->id, r.shared, r.iters * n);
	/* report per requested op: scale for the rounding up */
	return (uint64_t)((double)elapsed * (double)iters /
			  (double)(r.iters * n));
}

/* one operation = one item through the queue (row->param: queue_shapes[]) */
static uint64_t bench_queue(const struct row *row, uint64_t iters)
{
	const struct queue_shape *shape = &queue_shapes[row->param];
	struct queue_run q;
	pthread_t t[QUEUE_MAX_CONSUMERS];
	uint64_t t0, elapsed;

	memset(&q, 0, sizeof(q));
	q.width = shape->width;
	for (uint32_t i = 0; i < q.width; i++)
		q.items[i] = nt_create_sem(0, UINT32_MAX);
	q.slots = nt_create_sem(shape->slots, UINT32_MAX);
	q.iters = iters;
	start_line_init(&q.start, shape->consumers + 1);
	for (unsigned int i = 0; i < shape->consumers; i++)
		start_thread(&t[i], queue_consumer, &q);

	start_line_wait(&q.start);
	t0 = now_ns();
	/* the extra items, one per consumer, tell the consumers to stop */
	for (uint64_t i = 0; i < iters + shape->consumers; i++) {
		nt_wait_any(&q.slots, 1, 1);
		nt_sem_release(q.items[i % q.width], 1);
	}
	for (unsigned int i = 0; i < shape->consumers; i++)
		join_thread(t[i]);
	elapsed = now_ns() - t0;

	start_line_destroy(&q.start);
	for (uint32_t i = 0; i < q.width; i++)
		close(q.items[i]);
	close(q.slots);
	if (atomic_load(&q.taken) != iters + shape->consumers)
		tc_die("%s: %" PRIu64 " items taken of %" PRIu64, row->id,
		    (uint64_t)atomic_load(&q.taken), iters + shape->consumers);
	return elapsed;
}

/* one operation = one wait-all over the 8 and their release, by one thread */
static uint64_t bench_waitall_contended(const struct row *row, uint64_t iters)
{
	unsigned int n = (unsigned int)row->param;
	struct waitall_worker w[QUEUE_MAX_CONSUMERS];
	pthread_t t[QUEUE_MAX_CONSUMERS];
	struct waitall_run r;
	uint64_t t0, elapsed;

	memset(&r, 0, sizeof(r));
	for (unsigned int j = 0; j < WAITALL_WIDTH; j++)
		r.objs[j] = nt_create_sem(1, 1);
	r.iters = (iters + n - 1) / n;
	start_line_init(&r.start, n + 1);
	for (unsigned int i = 0; i < n; i++) {
		w[i].run = &r;
		w[i].owner = 100 + i;
		start_thread(&t[i], waitall_worker, &w[i]);
	}
	start_line_wait(&r.start);
	t0 = now_ns();
	for (unsigned int i = 0; i < n; i++)
		join_thread(t[i]);
	elapsed = now_ns() - t0;
	start_line_destroy(&r.start);
	note_blocked(r.iters * n);
	for (unsigned int j = 0; j < WAITALL_WIDTH; j++)
		close(r.objs[j]);
	if (r.shared != r.iters * n)
		tc_die("%s: wait-all let two threads in (%" PRIu64 " of %" PRIu64 ")",
		    row->id, r.shared, r.iters * n);
	return (uint64_t)((double)elapsed * (double)iters /
			  (double)(r.iters * n));
}
