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
 *                 blocks.  This file decides what the model does not know:
 *                 descriptors (EBADF, ENOTTY) and memory (EFAULT).
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

#define POISON32 0xccccccccu

static const char *device_path = "/dev/ntsync";
static uint64_t opt_seed;
static bool opt_seed_set;
static double opt_seconds = 10;
static uint64_t opt_ops; /* 0: no limit */
static bool opt_verbose;
static int opt_threads = 4, opt_procs = 2;
static unsigned opt_max_reports = 30;
static bool opt_enomem_ok;

/* ------------------------------------------------------------------ rng */

struct rng { uint64_t s; };

static uint64_t rnext(struct rng *r)
{
	/* splitmix64: tiny, good enough, identical on 32- and 64-bit builds */
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t rbelow(struct rng *r, uint32_t n)
{
	return n ? (uint32_t)(rnext(r) % n) : 0;
}

static bool rchance(struct rng *r, unsigned percent)
{
	return rbelow(r, 100) < percent;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Memory that faults: a PROT_NONE page and a read-only page. */
static void *page_none, *page_ro;

static void setup_pages(void)
{
	long ps = sysconf(_SC_PAGESIZE);

	page_none = mmap(NULL, ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	page_ro = mmap(NULL, ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page_none == MAP_FAILED || page_ro == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	memset(page_ro, 0, ps);
}

/* Fill the read-only page with `len` bytes of `src` and write-protect it. */
static void *ro_copy(const void *src, size_t len)
{
	long ps = sysconf(_SC_PAGESIZE);

	mprotect(page_ro, ps, PROT_READ | PROT_WRITE);
	memcpy(page_ro, src, len);
	mprotect(page_ro, ps, PROT_READ);
	return page_ro;
}

static int open_device(void)
{
	int fd = ntr_open_path(device_path);

	if (fd < 0 && (errno == ENOENT || errno == ENODEV || errno == ENXIO)) {
		printf("ntsync-fuzz: %s: %s: skipping (load the ntsync module first)\n",
		       device_path, strerror(errno));
		exit(77);
	}
	if (fd < 0) {
		fprintf(stderr, "ntsync-fuzz: open %s: %s\n", device_path, strerror(errno));
		exit(1);
	}
	return fd;
}

/* Results seen, by errno (0: success), for the model run's summary. */
static uint64_t hist[160];

/* ioctl that returns the result as 0/-errno (or the fd for creates). */
static long xcount(long ret)
{
	ret = ntr_neg(ret);
	hist[ret > 0 ? 0 : (-ret < 160 ? -ret : 159)]++;
	return ret;
}

static long xioctl(int fd, unsigned long cmd, void *arg)
{
	return xcount(ioctl(fd, cmd, arg));
}

/* the model's errno names serve the fuzzer's messages too */
#define errname ntm_errname

/* =================================================================== model */

enum otype { T_NONE, T_SEM, T_MUTEX, T_EVENT };
static const char *const tname[] = { "none", "sem", "mutex", "event" };

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

/* The tracked object as the model sees it, and back. */
static struct ntm_obj to_ntm(const struct mobj *o)
{
	struct ntm_obj n;

	memset(&n, 0, sizeof(n));
	n.type = (enum ntm_type)o->type;	/* T_SEM.. and NTM_SEM.. agree */
	n.v[0] = o->a;
	n.v[1] = o->b;
	n.abandoned = o->dead;
	return n;
}

static void from_ntm(struct mobj *o, const struct ntm_obj *n)
{
	o->a = n->v[0];
	o->b = n->v[1];
	o->dead = n->abandoned;
}

/* The run's state, kept global so the report functions can reach it. */
static struct model M;
static struct rng R;
static uint64_t op_index;
static uint64_t failures;
static char op_desc[512];

static void describe(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(op_desc, sizeof(op_desc), fmt, ap);
	va_end(ap);
	if (opt_verbose)
		printf("[%" PRIu64 "] %s\n", op_index, op_desc);
}

static void fail(const char *fmt, ...)
{
	va_list ap;

	failures++;
	if (failures > opt_max_reports)
		return;
	printf("FAIL seed=%" PRIu64 " op=%" PRIu64 ": %s: ", opt_seed, op_index, op_desc);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static void check_ret(long expect, long got)
{
	if (expect != got)
		fail("expected %s, got %s", errname(expect), errname(got));
}

/*
 * When one call has two faults (say a wrong object type and a bad pointer)
 * the spec does not order them: either error is right.  Returns the one
 * that applies (got, when it is one of them).
 */
static long check_ret2(long expect, long alt, long got)
{
	if (alt && got == alt)
		return got;
	if (expect != got) {
		if (alt)
			fail("expected %s or %s, got %s", errname(expect), errname(alt), errname(got));
		else
			fail("expected %s, got %s", errname(expect), errname(got));
	}
	return expect;
}

static bool bad_ptr(int pk);

static int new_obj_slot(void)
{
	for (int i = 0; i < MAXOBJ; i++)
		if (M.obj[i].type == T_NONE)
			return i;
	return -1;
}

static void track_fd(int fd, int obj)
{
	M.fds[M.nfds].fd = fd;
	M.fds[M.nfds].obj = obj;
	M.nfds++;
	M.obj[obj].refs++;
}

static void untrack_fd(int k)
{
	int o = M.fds[k].obj;

	if (--M.obj[o].refs == 0)
		M.obj[o].type = T_NONE;
	M.fds[k] = M.fds[--M.nfds];
}

/* Lowest free descriptor number, to prove a failed create left none behind. */
static int lowest_free_fd(void)
{
	int fd = dup(0);

	if (fd >= 0)
		close(fd);
	return fd;
}

static void check_no_new_fd(int probe)
{
	if (probe >= 0 && fcntl(probe, F_GETFD) != -1)
		fail("a failed call left descriptor %d open", probe);
}

/* A random descriptor to aim an object ioctl at, with its model object. */
enum target_kind { TGT_OBJ, TGT_DEVICE, TGT_PIPE, TGT_CLOSED };

struct target { int fd; int obj; enum target_kind kind; };

static struct target pick_target(int want_type)
{
	struct target t = { .fd = M.closed_fd, .obj = -1, .kind = TGT_CLOSED };
	int r = rbelow(&R, 100);

	if (M.nfds && r < 90) {
		/* prefer a descriptor of the wanted type most of the time */
		int k = rbelow(&R, M.nfds);

		if (r < 75)
			for (int tries = 0; tries < 8 && M.obj[M.fds[k].obj].type != want_type; tries++)
				k = rbelow(&R, M.nfds);
		t.fd = M.fds[k].fd;
		t.obj = M.fds[k].obj;
		t.kind = TGT_OBJ;
	} else if (r < 94) {
		int d = rbelow(&R, NDEV);

		if (M.dev[d] >= 0) {
			t.fd = M.dev[d];
			t.kind = TGT_DEVICE;
		}
	} else if (r < 97) {
		t.fd = M.pipefd[rbelow(&R, 2)];
		t.kind = TGT_PIPE;
	}
	return t;
}

/* Expected result of an object ioctl that is not aimed at the right type. */
static long misaimed(const struct target *t, int want_type)
{
	switch (t->kind) {
	case TGT_CLOSED: return -EBADF;
	case TGT_DEVICE: return -ENOTTY;
	case TGT_PIPE: return -ENOTTY;
	case TGT_OBJ: return M.obj[t->obj].type == want_type ? 0 : -EINVAL;
	}
	return 0;
}

/* Kinds of bad memory an argument pointer may point at. */
enum ptrkind { P_OK, P_NULL, P_NONE, P_RO };

static enum ptrkind pick_ptr(void)
{
	int r = rbelow(&R, 100);

	if (r < 92)
		return P_OK;
	if (r < 94)
		return P_NULL;
	if (r < 97)
		return P_NONE;
	return P_RO;
}

static void *ptr_for(enum ptrkind k, void *ok, size_t len)
{
	switch (k) {
	case P_OK: return ok;
	case P_NULL: return NULL;
	case P_NONE: return page_none;
	case P_RO: return ro_copy(ok, len);
	}
	return ok;
}

static const char *const pname[] = { "ok", "NULL", "unmapped", "read-only" };

static bool bad_ptr(int pk)
{
	return pk == P_NULL || pk == P_NONE;
}

/* Wrong object type together with an unreadable pointer: EINVAL or EFAULT. */
static long alt_for(long expect, bool unreadable)
{
	return expect == -EINVAL && unreadable ? -EFAULT : 0;
}

/* Read an object's state through the driver into a model object. */
static long read_obj(int fd, int type, struct mobj *out)
{
	long ret;

	out->type = type;
	out->dead = false;
	if (type == T_SEM) {
		struct ntsync_sem_args a = { POISON32, POISON32 };

		ret = xioctl(fd, NTSYNC_IOC_SEM_READ, &a);
		out->a = a.count;
		out->b = a.max;
	} else if (type == T_MUTEX) {
		struct ntsync_mutex_args a = { POISON32, POISON32 };

		ret = xioctl(fd, NTSYNC_IOC_MUTEX_READ, &a);
		out->a = a.owner;
		out->b = a.count;
		if (ret == -EOWNERDEAD) {
			out->dead = true;
			ret = 0;
		}
	} else {
		struct ntsync_event_args a = { POISON32, POISON32 };

		ret = xioctl(fd, NTSYNC_IOC_EVENT_READ, &a);
		out->a = a.manual;
		out->b = a.signaled;
	}
	return ret;
}

static bool same_state(const struct mobj *x, const struct mobj *y)
{
	if (x->type == T_MUTEX && (x->dead || y->dead))
		return x->dead == y->dead && y->a == 0 && y->b == 0 && x->a == 0 && x->b == 0;
	return x->a == y->a && x->b == y->b && x->dead == y->dead;
}

static void fmt_state(char *buf, size_t n, const struct mobj *o)
{
	switch (o->type) {
	case T_SEM: snprintf(buf, n, "sem{count=%u,max=%u}", o->a, o->b); break;
	case T_MUTEX: snprintf(buf, n, "mutex{owner=%u,count=%u%s}", o->a, o->b, o->dead ? ",abandoned" : ""); break;
	case T_EVENT: snprintf(buf, n, "event{manual=%u,signaled=%u}", o->a, o->b); break;
	default: snprintf(buf, n, "none");
	}
}

static int fd_of(int obj)
{
	for (int k = 0; k < M.nfds; k++)
		if (M.fds[k].obj == obj)
			return M.fds[k].fd;
	return -1;
}

/*
 * A call whose outcome the spec leaves open (output to read-only memory:
 * the state change may or may not have happened before the copy-out
 * failed).  Read every object back; each must equal either its state
 * before or its model state after the call; adopt what the driver has.
 */
static void resync_either(const struct mobj *before)
{
	for (int i = 0; i < MAXOBJ; i++) {
		struct mobj got;
		int fd;
		long ret;

		if (M.obj[i].type == T_NONE)
			continue;
		fd = fd_of(i);
		ret = read_obj(fd, M.obj[i].type, &got);
		if (ret) {
			fail("reading back %s fd %d: %s", tname[M.obj[i].type], fd, errname(ret));
			continue;
		}
		if (!same_state(&got, &M.obj[i]) && !same_state(&got, &before[i])) {
			char b1[80], b2[80], b3[80];

			fmt_state(b1, sizeof(b1), &before[i]);
			fmt_state(b2, sizeof(b2), &M.obj[i]);
			fmt_state(b3, sizeof(b3), &got);
			fail("fd %d is %s, expected %s (unchanged) or %s (applied)", fd, b3, b1, b2);
		}
		M.obj[i].a = got.a;
		M.obj[i].b = got.b;
		M.obj[i].dead = got.dead;
	}
}

/* Verify one object against the model (the driver read is the check). */
static void verify_obj(int k)
{
	int o = M.fds[k].obj, fd = M.fds[k].fd;
	struct mobj got;
	long ret, expect;

	describe("verify fd %d (%s)", fd, tname[M.obj[o].type]);
	ret = read_obj(fd, M.obj[o].type, &got);
	expect = 0;
	if (ret != expect) {
		check_ret(expect, ret);
		return;
	}
	if (M.obj[o].type == T_MUTEX && M.obj[o].dead != got.dead)
		fail("abandoned: expected %d, got %d", M.obj[o].dead, got.dead);
	if (!same_state(&got, &M.obj[o])) {
		char b1[80], b2[80];

		fmt_state(b1, sizeof(b1), &M.obj[o]);
		fmt_state(b2, sizeof(b2), &got);
		fail("state: expected %s, got %s", b1, b2);
		M.obj[o] = (struct mobj){ .type = got.type, .dev = M.obj[o].dev, .refs = M.obj[o].refs,
					  .a = got.a, .b = got.b, .dead = got.dead };
	}
}

/* ---------------------------------------------------------------- creates */

static uint32_t pick_u32(void)
{
	switch (rbelow(&R, 8)) {
	case 0: return 0;
	case 1: return 1;
	case 2: return UINT32_MAX;
	case 3: return UINT32_MAX - 1;
	case 4: return rnext(&R);
	default: return rbelow(&R, 5);
	}
}

static int pick_dev(void)
{
	int d = rchance(&R, 85) ? 0 : 1;

	return M.dev[d] >= 0 ? d : (M.dev[!d] >= 0 ? !d : -1);
}

static void op_create(void)
{
	int type = 1 + rbelow(&R, 3), d = pick_dev(), slot = new_obj_slot(), probe;
	uint32_t x, y;
	unsigned long cmd;
	long expect = 0, ret;
	enum ptrkind pk;
	void *p;
	struct ntm_obj created;
	union {
		struct ntsync_sem_args s;
		struct ntsync_mutex_args m;
		struct ntsync_event_args e;
	} args;

	if (d < 0 || slot < 0 || M.nfds >= MAXFD)
		return;
	x = pick_u32();
	y = pick_u32();
	if (type == T_SEM) {
		if (rchance(&R, 80) && x > y) {
			uint32_t t = x; x = y; y = t;
		}
		args.s.count = x; args.s.max = y;
		cmd = NTSYNC_IOC_CREATE_SEM;
		expect = ntm_create_sem(&created, x, y);
	} else if (type == T_MUTEX) {
		if (rchance(&R, 50))
			x = y = 0;
		else if (rchance(&R, 85)) {
			x = x ? x : 1 + rbelow(&R, 3);
			y = y ? y : 1;
		}
		args.m.owner = x; args.m.count = y;
		cmd = NTSYNC_IOC_CREATE_MUTEX;
		expect = ntm_create_mutex(&created, x, y);
	} else {
		if (rchance(&R, 80)) {
			x = rbelow(&R, 2);
			y = rbelow(&R, 2);
		}
		args.e.manual = x; args.e.signaled = y;
		cmd = NTSYNC_IOC_CREATE_EVENT;
		expect = ntm_create_event(&created, x, y);
	}
	pk = pick_ptr();
	p = ptr_for(pk, &args, sizeof(args));
	if (pk == P_NULL || pk == P_NONE)
		expect = -EFAULT;	/* input-only: read-only memory is fine */
	describe("create %s on dev%d (%u, %u) ptr=%s", tname[type], d, x, y, pname[pk]);
	probe = lowest_free_fd();
	ret = xioctl(M.dev[d], cmd, p);
	if (expect == 0 && ret >= 0) {
		int fl = fcntl((int)ret, F_GETFD);

		if (fl < 0 || !(fl & FD_CLOEXEC))
			fail("new descriptor %ld is not close-on-exec", ret);
		M.obj[slot] = (struct mobj){ .type = type, .dev = d };
		from_ntm(&M.obj[slot], &created);
		track_fd((int)ret, slot);
		return;
	}
	if (ret >= 0) {
		fail("expected %s, got descriptor %ld", errname(expect), ret);
		close((int)ret);
		return;
	}
	check_ret(expect, ret);
	check_no_new_fd(probe);
}

/* ------------------------------------------------------------ object ops */

static void op_sem_release(void)
{
	struct target t = pick_target(T_SEM);
	uint32_t n, arg;
	enum ptrkind pk = pick_ptr();
	long expect = misaimed(&t, T_SEM), ret;
	struct mobj before[MAXOBJ];
	void *p;

	switch (rbelow(&R, 6)) {
	case 0: n = 0; break;
	case 1: n = UINT32_MAX; break;
	case 2: n = t.obj >= 0 ? M.obj[t.obj].b - M.obj[t.obj].a + 1 : 7; break;
	default: n = 1 + rbelow(&R, 3);
	}
	arg = n;
	p = ptr_for(pk, &arg, sizeof(arg));
	describe("SEM_RELEASE fd %d (%s) by %u ptr=%s", t.fd,
		 t.obj >= 0 ? tname[M.obj[t.obj].type] : "not an object", n, pname[pk]);
	memcpy(before, M.obj, sizeof(before));
	if (expect == 0 && (pk == P_NULL || pk == P_NONE))
		expect = -EFAULT;
	if (expect == 0) {
		struct ntm_obj o = to_ntm(&M.obj[t.obj]);
		uint32_t prev;

		expect = ntm_sem_release(&o, n, &prev);
		from_ntm(&M.obj[t.obj], &o);
	}
	ret = xioctl(t.fd, NTSYNC_IOC_SEM_RELEASE, p);
	if (pk == P_RO && t.kind == TGT_OBJ && M.obj[t.obj].type == T_SEM) {
		if (ret != expect && ret != -EFAULT)
			check_ret(expect, ret);
		resync_either(before);
		return;
	}
	check_ret2(expect, alt_for(misaimed(&t, T_SEM), bad_ptr(pk)), ret);
	if (ret == 0 && expect == 0 && arg != before[t.obj].a)
		fail("previous count: expected %u, got %u", before[t.obj].a, arg);
	if (ret != expect)
		resync_either(before);
}

static uint32_t pick_owner(void)
{
	return rchance(&R, 8) ? 0 : 1 + rbelow(&R, 3);
}

static void op_mutex_unlock_kill(bool kill)
{
	struct target t = pick_target(T_MUTEX);
	uint32_t owner = pick_owner();
	struct ntsync_mutex_args args = { .owner = owner, .count = POISON32 };
	uint32_t karg = owner;
	enum ptrkind pk = pick_ptr();
	long expect = misaimed(&t, T_MUTEX), ret;
	struct mobj before[MAXOBJ];
	void *p = kill ? ptr_for(pk, &karg, sizeof(karg)) : ptr_for(pk, &args, sizeof(args));

	describe("%s fd %d (%s) owner %u ptr=%s", kill ? "MUTEX_KILL" : "MUTEX_UNLOCK", t.fd,
		 t.obj >= 0 ? tname[M.obj[t.obj].type] : "not an object", owner, pname[pk]);
	memcpy(before, M.obj, sizeof(before));
	if (expect == 0 && (pk == P_NULL || pk == P_NONE))
		expect = -EFAULT;
	if (expect == 0) {
		struct ntm_obj o = to_ntm(&M.obj[t.obj]);
		uint32_t prev;

		expect = kill ? ntm_mutex_kill(&o, owner) : ntm_mutex_unlock(&o, owner, &prev);
		from_ntm(&M.obj[t.obj], &o);
	}
	ret = xioctl(t.fd, kill ? NTSYNC_IOC_MUTEX_KILL : NTSYNC_IOC_MUTEX_UNLOCK, p);
	if (pk == P_RO && !kill && t.kind == TGT_OBJ && M.obj[t.obj].type == T_MUTEX) {
		if (ret != expect && ret != -EFAULT)
			check_ret(expect, ret);
		resync_either(before);
		return;
	}
	check_ret2(expect, alt_for(misaimed(&t, T_MUTEX), bad_ptr(pk)), ret);
	if (!kill && ret == 0 && expect == 0 && args.count != before[t.obj].b)
		fail("previous count: expected %u, got %u", before[t.obj].b, args.count);
	if (ret != expect)
		resync_either(before);
}

static void op_event(int which)
{
	static const unsigned long cmds[] = { NTSYNC_IOC_EVENT_SET, NTSYNC_IOC_EVENT_RESET, NTSYNC_IOC_EVENT_PULSE };
	static const char *const names[] = { "EVENT_SET", "EVENT_RESET", "EVENT_PULSE" };
	struct target t = pick_target(T_EVENT);
	uint32_t prev = POISON32;
	enum ptrkind pk = pick_ptr();
	long expect = misaimed(&t, T_EVENT), ret;
	struct mobj before[MAXOBJ];
	void *p = ptr_for(pk, &prev, sizeof(prev));

	describe("%s fd %d (%s) ptr=%s", names[which], t.fd,
		 t.obj >= 0 ? tname[M.obj[t.obj].type] : "not an object", pname[pk]);
	memcpy(before, M.obj, sizeof(before));
	if (expect == 0) {
		static long (*const fn[])(struct ntm_obj *, uint32_t *) = {
			ntm_event_set, ntm_event_reset, ntm_event_pulse,
		};
		struct ntm_obj o = to_ntm(&M.obj[t.obj]);
		uint32_t was;

		expect = fn[which](&o, &was);
		from_ntm(&M.obj[t.obj], &o);
	}
	ret = xioctl(t.fd, cmds[which], p);
	if (pk != P_OK && expect == 0) {
		/* output-only pointer: the change may land before the copy-out fails */
		if (ret != -EFAULT)
			fail("expected -EFAULT for a %s output pointer, got %s", pname[pk], errname(ret));
		resync_either(before);
		return;
	}
	check_ret2(expect, alt_for(expect, pk != P_OK), ret);
	if (ret == 0 && expect == 0 && prev != before[t.obj].b)
		fail("previous state: expected %u, got %u", before[t.obj].b, prev);
	if (ret != expect)
		resync_either(before);
}

static void op_read(void)
{
	int type = 1 + rbelow(&R, 3);
	struct target t = pick_target(type);
	static const unsigned long cmds[] = { 0, NTSYNC_IOC_SEM_READ, NTSYNC_IOC_MUTEX_READ, NTSYNC_IOC_EVENT_READ };
	uint32_t out[2] = { POISON32, POISON32 }, want[2] = { 0, 0 };
	enum ptrkind pk = pick_ptr();
	long expect = misaimed(&t, type), ret;
	void *p = ptr_for(pk, out, sizeof(out));
	struct mobj *o = t.obj >= 0 ? &M.obj[t.obj] : NULL;

	describe("%s_READ fd %d (%s) ptr=%s", tname[type], t.fd, o ? tname[o->type] : "not an object", pname[pk]);
	if (expect == 0 && pk != P_OK) {
		expect = -EFAULT;
	} else if (expect == 0) {
		struct ntm_obj n = to_ntm(o);

		/* the fields in struct order: sem {count, max}, mutex {owner, count},
		 * event {manual, signaled} */
		expect = ntm_read(&n, (enum ntm_type)type, want);
	}
	ret = xioctl(t.fd, cmds[type], p);
	check_ret2(expect, alt_for(misaimed(&t, type), pk != P_OK), ret);
	if ((ret == 0 || ret == -EOWNERDEAD) && ret == expect) {
		if (out[0] != want[0] || out[1] != want[1])
			fail("read {%u, %u}, expected {%u, %u}", out[0], out[1], want[0], want[1]);
	}
}

/* Unknown ioctls, and device ioctls on objects and the reverse. */
static void op_wrong_ioctl(void)
{
	static const unsigned long obj_cmds[] = {
		NTSYNC_IOC_SEM_RELEASE, NTSYNC_IOC_MUTEX_UNLOCK, NTSYNC_IOC_MUTEX_KILL,
		NTSYNC_IOC_EVENT_SET, NTSYNC_IOC_EVENT_RESET, NTSYNC_IOC_EVENT_PULSE,
		NTSYNC_IOC_SEM_READ, NTSYNC_IOC_MUTEX_READ, NTSYNC_IOC_EVENT_READ,
	};
	static const unsigned long dev_cmds[] = {
		NTSYNC_IOC_CREATE_SEM, NTSYNC_IOC_CREATE_MUTEX, NTSYNC_IOC_CREATE_EVENT,
		NTSYNC_IOC_WAIT_ANY, NTSYNC_IOC_WAIT_ALL,
	};
	uint64_t buf[8] = { 0 };
	unsigned long cmd;
	int fd, d = pick_dev();
	long ret;

	switch (rbelow(&R, 4)) {
	case 0:	/* object ioctl on the device */
		if (d < 0)
			return;
		cmd = obj_cmds[rbelow(&R, 9)];
		fd = M.dev[d];
		break;
	case 1:	/* device ioctl on an object */
		if (!M.nfds)
			return;
		cmd = dev_cmds[rbelow(&R, 5)];
		fd = M.fds[rbelow(&R, M.nfds)].fd;
		break;
	case 2:	/* a number in the 'N' range that nobody defines */
		cmd = _IOC(rbelow(&R, 4), 'N', rchance(&R, 50) ? 0x8e + rbelow(&R, 0x72) : rbelow(&R, 0x80),
			   rbelow(&R, 64));
		fd = rchance(&R, 50) && d >= 0 ? M.dev[d] : (M.nfds ? M.fds[rbelow(&R, M.nfds)].fd : -1);
		if (fd < 0)
			return;
		break;
	default: /* a defined number with the wrong size */
		cmd = obj_cmds[rbelow(&R, 9)];
		cmd = (cmd & ~((unsigned long)_IOC_SIZEMASK << _IOC_SIZESHIFT)) |
		      ((unsigned long)(_IOC_SIZE(cmd) + 4) << _IOC_SIZESHIFT);
		fd = rchance(&R, 50) && d >= 0 ? M.dev[d] : (M.nfds ? M.fds[rbelow(&R, M.nfds)].fd : -1);
		if (fd < 0)
			return;
		break;
	}
	describe("ioctl 0x%lx on fd %d (unknown there)", cmd, fd);
	ret = xioctl(fd, cmd, buf);
	check_ret(-ENOTTY, ret);
}

/* ------------------------------------------------------------------ waits */

static void op_wait(bool all)
{
	int d = pick_dev(), fds[NTSYNC_MAX_WAIT_COUNT + 8], objs[NTSYNC_MAX_WAIT_COUNT + 8];
	uint32_t count, owner = pick_owner(), i;
	struct ntsync_wait_args args;
	enum ptrkind pk = pick_ptr(), objs_pk = P_OK;
	long expect = 0, alt = 0, ret;
	uint32_t expect_index = POISON32;
	struct mobj before[MAXOBJ];
	int alert_obj = -1;	/* -1: none */
	char list[400];
	size_t ll = 0;
	void *p, *objs_p;

	if (d < 0)
		return;
	count = rchance(&R, 3) ? (rchance(&R, 50) ? 65 + rbelow(&R, 3) : 0) : 1 + rbelow(&R, rchance(&R, 10) ? 64 : 6);
	memset(&args, 0, sizeof(args));
	for (i = 0; i < count && i < NTSYNC_MAX_WAIT_COUNT + 8; i++) {
		int r = rbelow(&R, 100);

		objs[i] = -1;
		if (M.nfds && r < 95) {
			int k = rbelow(&R, M.nfds);

			/* mostly objects of the waiting instance */
			for (int tries = 0; tries < 4 && M.obj[M.fds[k].obj].dev != d; tries++)
				k = rbelow(&R, M.nfds);
			fds[i] = M.fds[k].fd;
			objs[i] = M.fds[k].obj;
		} else if (r < 96) {
			fds[i] = M.closed_fd;
		} else if (r < 97) {
			fds[i] = -1;
		} else if (r < 98) {
			fds[i] = M.pipefd[0];
		} else if (r < 99) {
			fds[i] = M.dev[d];
		} else {
			fds[i] = 100000 + rbelow(&R, 1000);
		}
	}
	/* make a duplicate now and then */
	if (count >= 2 && count <= NTSYNC_MAX_WAIT_COUNT && rchance(&R, 10)) {
		uint32_t from = rbelow(&R, count), to = rbelow(&R, count);

		fds[to] = fds[from];
		objs[to] = objs[from];
	}
	args.count = count;
	args.owner = owner;
	args.index = POISON32;
	args.timeout = rchance(&R, 80) ? 0 : 1 + rbelow(&R, 1000);
	if (rchance(&R, 30))
		args.flags = NTSYNC_WAIT_REALTIME;
	if (rchance(&R, 2))
		args.flags |= 1u << (1 + rbelow(&R, 31));
	if (rchance(&R, 2))
		args.pad = 1 + rbelow(&R, 100);
	if (rchance(&R, 25)) {
		int r = rbelow(&R, 100);

		if (M.nfds && r < 90) {
			int k = rbelow(&R, M.nfds);

			for (int tries = 0; tries < 6 && (M.obj[M.fds[k].obj].type != T_EVENT ||
							  M.obj[M.fds[k].obj].dev != d); tries++)
				k = rbelow(&R, M.nfds);
			args.alert = M.fds[k].fd;
			alert_obj = M.fds[k].obj;
		} else {
			/* not an object: the model sees has_alert without one */
			args.alert = r < 95 ? (uint32_t)M.closed_fd : (uint32_t)M.dev[d];
		}
	}
	objs_pk = rchance(&R, 3) ? (rchance(&R, 50) ? P_NULL : P_NONE) : P_OK;
	objs_p = objs_pk == P_OK ? (void *)fds : objs_pk == P_NULL ? NULL : page_none;
	args.objs = (uint64_t)(uintptr_t)objs_p;
	p = ptr_for(pk, &args, sizeof(args));

	for (i = 0; i < count && i < 8; i++)
		ll += snprintf(list + ll, sizeof(list) - ll, "%s%d%s%s", i ? "," : "", fds[i],
			       objs[i] >= 0 ? ":" : "", objs[i] >= 0 ? tname[M.obj[objs[i]].type] : "");
	if (count > 8)
		snprintf(list + ll, sizeof(list) - ll, ",...");
	describe("%s on dev%d objs=[%s] count=%u owner=%u alert=%u flags=0x%x pad=%u timeout=%" PRIu64
		 " objs_ptr=%s args_ptr=%s", all ? "WAIT_ALL" : "WAIT_ANY", d, list, count, owner, args.alert,
		 args.flags, args.pad, (uint64_t)args.timeout, pname[objs_pk], pname[pk]);

	/* --- the spec's answer --- */
	memcpy(before, M.obj, sizeof(before));
	if (pk == P_NULL || pk == P_NONE)
		expect = -EFAULT;
	else if (args.pad || (args.flags & ~NTSYNC_WAIT_REALTIME) || count > NTSYNC_MAX_WAIT_COUNT || !owner) {
		expect = -EINVAL;
		/* the order of the owner check and the copy of objs is not specified */
		if (count && count <= NTSYNC_MAX_WAIT_COUNT && objs_pk != P_OK && !args.pad &&
		    !(args.flags & ~NTSYNC_WAIT_REALTIME))
			alt = -EFAULT;
	} else if (count && objs_pk != P_OK)
		expect = -EFAULT;
	else {
		/* the model decides the rest: objects, alert, duplicates, the poll */
		struct ntm_obj st[MAXOBJ], *wobjs[NTSYNC_MAX_WAIT_COUNT];
		struct ntm_wait w = {
			.count = count, .owner = owner, .flags = args.flags, .pad = args.pad,
			.objs = wobjs, .has_alert = args.alert != 0,
		};

		for (int k = 0; k < MAXOBJ; k++)
			st[k] = to_ntm(&M.obj[k]);
		/* an object of another (or a closed) instance is no object here */
		for (i = 0; i < count; i++)
			wobjs[i] = objs[i] >= 0 && M.obj[objs[i]].dev == d ? &st[objs[i]] : NULL;
		if (alert_obj >= 0 && M.obj[alert_obj].dev == d)
			w.alert = &st[alert_obj];
		expect = all ? ntm_wait_all(&w, &expect_index) : ntm_wait_any(&w, &expect_index);
		for (int k = 0; k < MAXOBJ; k++)
			if (M.obj[k].type != T_NONE)
				from_ntm(&M.obj[k], &st[k]);
	}

	ret = xioctl(M.dev[d], all ? NTSYNC_IOC_WAIT_ALL : NTSYNC_IOC_WAIT_ANY, p);
	if (pk == P_RO) {
		/* index cannot be written back: EFAULT after acquiring is allowed */
		if (ret != expect && !(ret == -EFAULT && (expect == 0 || expect == -EOWNERDEAD)))
			check_ret(expect, ret);
		resync_either(before);
		return;
	}
	if (check_ret2(expect, alt, ret) != expect || ret != expect) {
		resync_either(before);
		return;
	}
	if ((ret == 0 || ret == -EOWNERDEAD) && args.index != expect_index)
		fail("index: expected %u, got %u", expect_index, args.index);
}

/* ------------------------------------------------------ descriptor churn */

static void op_close(void)
{
	int k;

	if (!M.nfds)
		return;
	k = rbelow(&R, M.nfds);
	describe("close fd %d (%s, %d refs)", M.fds[k].fd, tname[M.obj[M.fds[k].obj].type],
		 M.obj[M.fds[k].obj].refs);
	if (close(M.fds[k].fd))
		fail("close: %s", strerror(errno));
	untrack_fd(k);
}

static void op_dup(void)
{
	int k, fd;

	if (!M.nfds || M.nfds >= MAXFD)
		return;
	k = rbelow(&R, M.nfds);
	describe("dup fd %d", M.fds[k].fd);
	fd = dup(M.fds[k].fd);
	if (fd < 0) {
		fail("dup: %s", strerror(errno));
		return;
	}
	track_fd(fd, M.fds[k].obj);
}

/* Close a device instance (its objects stay usable) and open a new one. */
static void op_reopen_device(void)
{
	int d = rbelow(&R, NDEV);

	describe("close and reopen dev%d", d);
	if (M.dev[d] >= 0)
		close(M.dev[d]);
	M.dev[d] = open_device();
	/* objects of the old instance now belong to no open instance */
	for (int i = 0; i < MAXOBJ; i++)
		if (M.obj[i].type != T_NONE && M.obj[i].dev == d)
			M.obj[i].dev = -1 - d;
}

static void model_reset(bool first)
{
	if (!first) {
		while (M.nfds)
			close(M.fds[--M.nfds].fd);
		for (int d = 0; d < NDEV; d++)
			close(M.dev[d]);
		close(M.pipefd[0]);
		close(M.pipefd[1]);
	}
	memset(&M, 0, sizeof(M));
	for (int d = 0; d < NDEV; d++)
		M.dev[d] = open_device();
	if (pipe(M.pipefd)) {
		perror("pipe");
		exit(2);
	}
	M.closed_fd = 900 + rbelow(&R, 100);
	close(M.closed_fd);
}

static int run_model(void)
{
	double start = now_s(), deadline = start + opt_seconds;
	uint64_t n = 0;

	R.s = opt_seed;
	setup_pages();
	model_reset(true);
	for (op_index = 0; !opt_ops || op_index < opt_ops; op_index++) {
		int r;

		if ((op_index & 255) == 0 && !opt_ops && now_s() >= deadline)
			break;
		if (op_index && op_index % 5000 == 0) {
			/* a fresh epoch: everything closed, fds and instances reborn */
			describe("reset: close every object and both instances");
			model_reset(false);
		}
		r = rbelow(&R, 1000);
		if (r < 110)
			op_create();
		else if (r < 200)
			op_sem_release();
		else if (r < 270)
			op_mutex_unlock_kill(false);
		else if (r < 300)
			op_mutex_unlock_kill(true);
		else if (r < 370)
			op_event(rbelow(&R, 3));
		else if (r < 450)
			op_read();
		else if (r < 640)
			op_wait(false);
		else if (r < 800)
			op_wait(true);
		else if (r < 840)
			op_wrong_ioctl();
		else if (r < 910)
			op_close();
		else if (r < 940)
			op_dup();
		else if (r < 944)
			op_reopen_device();
		else if (M.nfds)
			verify_obj(rbelow(&R, M.nfds));
		n++;
	}
	/* a last full sweep */
	for (int k = 0; k < M.nfds; k++, n++)
		verify_obj(k);
	model_reset(false);
	{
		double el = now_s() - start;

		printf("ntsync-fuzz: model: %" PRIu64 " ops in %.1f s (%.0f ops/s), %" PRIu64 " failures (seed %" PRIu64 ")\n",
		       n, el, el > 0 ? n / el : 0.0, failures, opt_seed);
		printf("ntsync-fuzz: driver results:");
		for (int e = 0; e < 160; e++)
			if (hist[e])
				printf(" %s=%" PRIu64, errname(-e), hist[e]);
		printf("\nops: %" PRIu64 "\nfailures: %" PRIu64 "\n", n, failures);
	}
	return failures ? 1 : 0;
}

/* ============================================================ concurrent */

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

static struct shared *S;
static int c_dev;
static int c_obj[C_OBJS];

static void cfail(const char *fmt, ...)
{
	uint64_t n = __atomic_fetch_add(&S->fails, 1, __ATOMIC_SEQ_CST);
	va_list ap;

	if (n < 8) {
		va_start(ap, fmt);
		vsnprintf(S->msg[n], sizeof(S->msg[n]), fmt, ap);
		va_end(ap);
	}
}

#define ADD(f, v) __atomic_fetch_add(&(f), (v), __ATOMIC_SEQ_CST)

/*
 * --enomem-ok: an allocation failure is counted and waited out briefly (at
 * the cgroup's limit every caller would otherwise spin on it).
 */
static bool enomem_tolerated(long ret)
{
	if (ret != -ENOMEM || !opt_enomem_ok)
		return false;
	ADD(S->enomem, 1);
	usleep(10000);
	return true;
}

static int obj_kind(int i)
{
	return i < C_SEMS ? T_SEM : i < C_SEMS + C_MUTEXES ? T_MUTEX : T_EVENT;
}

struct worker {
	int id;
	uint32_t owner;
	struct rng r;
	uint32_t held[C_MUTEXES];	/* my recursion count per mutex */
};

static void record_acquire(struct worker *w, int i, bool dead)
{
	ADD(S->acquisitions, 1);
	if (obj_kind(i) == T_SEM) {
		ADD(S->sem_acq[i], 1);
	} else if (obj_kind(i) == T_MUTEX) {
		int m = i - C_SEMS;

		ADD(S->mutex_acq[m], 1);
		if (dead)
			ADD(S->mutex_deadacq[m], 1);
		if (w->held[m]++ == 0) {
			uint32_t zero = 0;

			if (!__atomic_compare_exchange_n(&S->holder[m], &zero, w->owner, false,
							 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
				cfail("mutex %d acquired by owner %u while owner %u holds it", m, w->owner, zero);
		} else if (dead) {
			cfail("mutex %d: EOWNERDEAD while owner %u already held it", m, w->owner);
		}
	} else {
		int e = i - C_SEMS - C_MUTEXES;

		if (e < 2)
			ADD(S->ev_acq[e], 1);
	}
}

static void c_unlock(struct worker *w, int m)
{
	struct ntsync_mutex_args a = { .owner = w->owner, .count = POISON32 };
	long ret;

	if (w->held[m] == 1)
		__atomic_store_n(&S->holder[m], 0, __ATOMIC_SEQ_CST);
	ret = xioctl(c_obj[C_SEMS + m], NTSYNC_IOC_MUTEX_UNLOCK, &a);
	if (ret)
		cfail("MUTEX_UNLOCK by holder %u: %s", w->owner, errname(ret));
	else if (a.count != w->held[m])
		cfail("MUTEX_UNLOCK by %u: previous count %u, holder counted %u", w->owner, a.count, w->held[m]);
	w->held[m]--;
}

static void c_kill(struct worker *w, int m)
{
	uint32_t o = w->owner;
	long ret;

	__atomic_store_n(&S->holder[m], 0, __ATOMIC_SEQ_CST);
	ADD(S->mutex_kills[m], 1);
	ret = xioctl(c_obj[C_SEMS + m], NTSYNC_IOC_MUTEX_KILL, &o);
	if (ret)
		cfail("MUTEX_KILL by holder %u: %s", w->owner, errname(ret));
	w->held[m] = 0;
}

static void c_wait(struct worker *w, bool all)
{
	int fds[6], idx[6], n = 1 + rbelow(&w->r, all ? 4 : 6), i, j;
	struct ntsync_wait_args a;
	int alert = -1;
	long ret;

	for (i = 0; i < n; i++) {
		int pick;

		do {
			pick = rbelow(&w->r, C_OBJS);
			for (j = 0; j < i && all; j++)
				if (idx[j] == pick)
					break;
		} while (all && j < i);
		idx[i] = pick;
		fds[i] = c_obj[pick];
	}
	memset(&a, 0, sizeof(a));
	a.objs = (uint64_t)(uintptr_t)fds;
	a.count = n;
	a.owner = w->owner;
	a.index = POISON32;
	if (rchance(&w->r, 20)) {
		/* an auto-reset event as alert, not among the objects for WAIT_ALL */
		alert = C_SEMS + C_MUTEXES + rbelow(&w->r, 2);
		for (i = 0; all && i < n; i++)
			if (idx[i] == alert)
				alert = -1;
		if (alert >= 0)
			a.alert = c_obj[alert];
	}
	if (rchance(&w->r, 20)) {
		a.flags = NTSYNC_WAIT_REALTIME;
		a.timeout = clock_ns(CLOCK_REALTIME) + rbelow(&w->r, 2000000);
	} else {
		a.timeout = clock_ns(CLOCK_MONOTONIC) + rbelow(&w->r, 2000000);
	}
	ret = xioctl(c_dev, all ? NTSYNC_IOC_WAIT_ALL : NTSYNC_IOC_WAIT_ANY, &a);
	if (ret == -ETIMEDOUT) {
		ADD(S->timeouts, 1);
		return;
	}
	if (enomem_tolerated(ret))
		return;
	if (ret != 0 && ret != -EOWNERDEAD) {
		cfail("%s: %s", all ? "WAIT_ALL" : "WAIT_ANY", errname(ret));
		return;
	}
	if (a.index == (uint32_t)n) {
		if (alert < 0)
			cfail("woken by alert index %u without an alert", a.index);
		else
			record_acquire(w, alert, false);
		if (ret)
			cfail("alert wake returned %s", errname(ret));
		return;
	}
	if (all) {
		if (a.index != 0)
			cfail("WAIT_ALL index %u", a.index);
		/* which mutex was abandoned is not reported: count the call once */
		if (ret == -EOWNERDEAD) {
			bool any_mutex = false;

			for (i = 0; i < n; i++)
				any_mutex |= obj_kind(idx[i]) == T_MUTEX;
			if (!any_mutex)
				cfail("WAIT_ALL returned EOWNERDEAD without a mutex among its objects");
			ADD(S->deadacq_all, 1);
		}
		for (i = 0; i < n; i++)
			record_acquire(w, idx[i], false);
	} else {
		if (a.index >= (uint32_t)n) {
			cfail("WAIT_ANY index %u of %d", a.index, n);
			return;
		}
		/* the lowest index of that object */
		for (i = 0; i < (int)a.index; i++)
			if (idx[i] == idx[a.index]) {
				cfail("WAIT_ANY returned index %u for a %s that is also at index %d (spec: the lowest index)",
				      a.index, tname[obj_kind(idx[i])], i);
				break;
			}
		if (ret == -EOWNERDEAD && obj_kind(idx[a.index]) != T_MUTEX)
			cfail("EOWNERDEAD for a %s", tname[obj_kind(idx[a.index])]);
		record_acquire(w, idx[a.index], ret == -EOWNERDEAD);
	}
}

static void c_step(struct worker *w)
{
	int r = rbelow(&w->r, 100);
	long ret;

	if (r < 40) {
		c_wait(w, rchance(&w->r, 35));
	} else if (r < 55) {
		int s = rbelow(&w->r, C_SEMS);
		uint32_t add = 1 + rbelow(&w->r, 2), n = add;

		/* n comes back as the previous count, racy by nature: not checked */
		ret = xioctl(c_obj[s], NTSYNC_IOC_SEM_RELEASE, &n);
		if (ret == 0)
			ADD(S->sem_rel[s], add);
		if (ret && ret != -EOVERFLOW)
			cfail("SEM_RELEASE: %s", errname(ret));
	} else if (r < 70) {
		int e = rbelow(&w->r, C_EVENTS), which = rbelow(&w->r, 3);
		static const unsigned long cmds[] = { NTSYNC_IOC_EVENT_SET, NTSYNC_IOC_EVENT_RESET, NTSYNC_IOC_EVENT_PULSE };
		uint32_t prev = POISON32;

		ret = xioctl(c_obj[C_SEMS + C_MUTEXES + e], cmds[which], &prev);
		if (ret)
			cfail("event op: %s", errname(ret));
		else if (prev > 1)
			cfail("event op: previous state %u", prev);
		else if (e < 2) {
			if (which == 0 && prev == 0)
				ADD(S->ev_set0[e], 1);
			else if (which == 1 && prev == 1)
				ADD(S->ev_reset1[e], 1);
			else if (which == 2)
				ADD(*(prev ? &S->ev_pulse1[e] : &S->ev_pulse0[e]), 1);
		}
	} else if (r < 85) {
		/* release or kill what I hold */
		for (int m = 0; m < C_MUTEXES; m++)
			if (w->held[m]) {
				if (rchance(&w->r, 10))
					c_kill(w, m);
				else
					c_unlock(w, m);
				break;
			}
	} else if (r < 92) {
		int m = rbelow(&w->r, C_MUTEXES);
		struct ntsync_mutex_args a = { POISON32, POISON32 };

		ret = xioctl(c_obj[C_SEMS + m], NTSYNC_IOC_MUTEX_READ, &a);
		if (w->held[m] && (ret || a.owner != w->owner || a.count != w->held[m]))
			cfail("MUTEX_READ by holder %u (count %u): %s owner %u count %u", w->owner, w->held[m],
			      errname(ret), a.owner, a.count);
		if (ret == -EOWNERDEAD && (a.owner || a.count))
			cfail("abandoned mutex reads owner %u count %u", a.owner, a.count);
		if (ret && ret != -EOWNERDEAD)
			cfail("MUTEX_READ: %s", errname(ret));
	} else if (r < 96) {
		/* someone else's mutex: only the owner may unlock or kill */
		int m = rbelow(&w->r, C_MUTEXES);
		struct ntsync_mutex_args a = { .owner = 0x7fff0000 + w->id };

		ret = xioctl(c_obj[C_SEMS + m], NTSYNC_IOC_MUTEX_UNLOCK, &a);
		if (ret != -EPERM)
			cfail("MUTEX_UNLOCK by a non-owner: %s", errname(ret));
	} else {
		int s = rbelow(&w->r, C_SEMS);
		struct ntsync_sem_args a = { POISON32, POISON32 };

		ret = xioctl(c_obj[s], NTSYNC_IOC_SEM_READ, &a);
		if (ret || a.count > a.max)
			cfail("SEM_READ: %s count %u max %u", errname(ret), a.count, a.max);
	}
	ADD(S->ops, 1);
}

static double c_deadline;

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	while (now_s() < c_deadline)
		for (int k = 0; k < 64; k++)
			c_step(w);
	for (int m = 0; m < C_MUTEXES; m++)
		while (w->held[m])
			c_unlock(w, m);
	return NULL;
}

/*
 * Churn: a private instance whose objects are closed while another thread
 * waits on them.  Nothing there is ever signaled, so every wait must end by
 * time-out (or EINVAL when the descriptor was already gone at lookup).
 */
struct churn { int dev; volatile int fd; double deadline; };

static void *churn_waiter(void *arg)
{
	struct churn *c = arg;

	struct rng r = { 0x5eed };

	while (now_s() < c->deadline) {
		int fd = c->fd;
		struct ntsync_wait_args a = { .count = 1, .owner = 1 };
		long ret;

		a.objs = (uint64_t)(uintptr_t)&fd;
		a.timeout = clock_ns(CLOCK_MONOTONIC) + 1000000;
		ret = xioctl(c->dev, rchance(&r, 50) ? NTSYNC_IOC_WAIT_ALL : NTSYNC_IOC_WAIT_ANY, &a);

		if (ret != -ETIMEDOUT && ret != -EINVAL && !enomem_tolerated(ret))
			cfail("wait on an object being closed: %s", errname(ret));
		ADD(S->churn, 1);
	}
	return NULL;
}

static void run_churn(double deadline, struct rng *r)
{
	struct churn c = { .dev = open_device(), .fd = -1, .deadline = deadline };
	pthread_t t;

	pthread_create(&t, NULL, churn_waiter, &c);
	while (now_s() < deadline) {
		uint32_t manual = rbelow(r, 2);
		int fd;

		switch (rbelow(r, 3)) {
		case 0: fd = ntr_create_sem(c.dev, 0, 5); break;
		case 1: fd = ntr_create_mutex(c.dev, 77, 1); break;
		default: fd = ntr_create_event(c.dev, manual, 0); break;
		}
		if (fd < 0 && enomem_tolerated(-errno))
			continue;
		if (fd < 0) {
			cfail("churn create: %s", strerror(errno));
			break;
		}
		c.fd = fd;
		usleep(rbelow(r, 500));
		c.fd = -1;
		close(fd);
		ADD(S->churn, 1);
	}
	pthread_join(t, NULL);
	close(c.dev);
}

static void run_process(int p, double deadline)
{
	pthread_t th[MAXWORKERS];
	struct worker w[MAXWORKERS];
	int nt = opt_threads;

	c_deadline = deadline;
	for (int t = 0; t < nt; t++) {
		memset(&w[t], 0, sizeof(w[t]));
		w[t].id = p * 256 + t;
		w[t].owner = (uint32_t)(p * 256 + t + 1);
		w[t].r.s = opt_seed ^ ((uint64_t)(p * 256 + t + 1) << 32);
		pthread_create(&th[t], NULL, worker_main, &w[t]);
	}
	if (p == 0) {
		struct rng cr = { opt_seed ^ 0xc4u };

		run_churn(deadline, &cr);
	}
	for (int t = 0; t < nt; t++)
		pthread_join(th[t], NULL);
}

static int run_concurrent(void)
{
	struct rng r = { opt_seed };
	double start = now_s(), deadline = start + opt_seconds;
	pid_t kids[MAXWORKERS];
	int i;

	S = mmap(NULL, sizeof(*S), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (S == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	memset(S, 0, sizeof(*S));
	c_dev = open_device();
	for (i = 0; i < C_OBJS; i++) {
		long fd;

		if (obj_kind(i) == T_SEM) {
			/* (one declarator after the other: the seed's order) */
			uint32_t count = rbelow(&r, 3), max = 3 + rbelow(&r, 6);

			S->sem_init[i] = count;
			fd = xcount(ntr_create_sem(c_dev, count, max));
		} else if (obj_kind(i) == T_MUTEX) {
			fd = xcount(ntr_create_mutex(c_dev, 0, 0));
		} else {
			int e = i - C_SEMS - C_MUTEXES;
			uint32_t signaled = rbelow(&r, 2);

			S->ev_init[e] = signaled;
			fd = xcount(ntr_create_event(c_dev, e >= 2, signaled));
		}
		if (fd < 0) {
			fprintf(stderr, "ntsync-fuzz: create: %s\n", errname(fd));
			return 1;
		}
		c_obj[i] = (int)fd;
	}

	for (i = 1; i < opt_procs; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			run_process(i, deadline);
			_exit(0);
		}
	}
	run_process(0, deadline);
	for (i = 1; i < opt_procs; i++) {
		int st;

		waitpid(kids[i], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			cfail("worker process %d ended with status 0x%x", i, st);
	}

	/* --- invariants --- */
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
	for (i = 0; i < C_OBJS; i++)
		close(c_obj[i]);
	close(c_dev);

	{
		double el = now_s() - start;
		uint64_t f = S->fails;

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
}

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
		opt_seed = clock_ns(CLOCK_REALTIME) ^ ((uint64_t)getpid() << 20);
	printf("ntsync-fuzz: %s seed=%" PRIu64 " (%zu-bit caller)\n", mode == 1 ? "model" : "concurrent",
	       opt_seed, sizeof(void *) * 8);
	fflush(stdout);
	close(open_device());	/* exit 77 early when there is no device */
	return mode == 1 ? run_model() : run_concurrent();
}
