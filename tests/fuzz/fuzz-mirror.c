// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ntsync-fuzz --model: what the fuzzer expects of the driver (its mirror of
 * every object and descriptor, run on model.c), the faulting memory, and
 * the checks of each result and state against that mirror.
 */

#include "fuzz.h"

const char *const tname[] = { "none", "sem", "mutex", "event" };

/* Memory that faults: a PROT_NONE page and a read-only page. */
void *page_none;
static void *page_ro;

void setup_pages(void)
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

/* =================================================================== model */


/* The tracked object as the model sees it, and back. */
struct ntm_obj to_ntm(const struct mobj *o)
{
	struct ntm_obj n;

	memset(&n, 0, sizeof(n));
	n.type = (enum ntm_type)o->type;	/* T_SEM.. and NTM_SEM.. agree */
	n.v[0] = o->a;
	n.v[1] = o->b;
	n.abandoned = o->dead;
	return n;
}

void from_ntm(struct mobj *o, const struct ntm_obj *n)
{
	o->a = n->v[0];
	o->b = n->v[1];
	o->dead = n->abandoned;
}

/* The run's state, kept global so the report functions can reach it. */
struct model M;
struct rng R;
uint64_t op_index;
uint64_t failures;
static char op_desc[512];

void describe(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(op_desc, sizeof(op_desc), fmt, ap);
	va_end(ap);
	if (opt_verbose)
		printf("[%" PRIu64 "] %s\n", op_index, op_desc);
}

void fail(const char *fmt, ...)
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

void check_ret(long expect, long got)
{
	if (expect != got)
		fail("expected %s, got %s", errname(expect), errname(got));
}

/*
 * When one call has two faults (say a wrong object type and a bad pointer)
 * the spec does not order them: either error is right.  Returns the one
 * that applies (got, when it is one of them).
 */
long check_ret2(long expect, long alt, long got)
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

int new_obj_slot(void)
{
	for (int i = 0; i < MAXOBJ; i++)
		if (M.obj[i].type == T_NONE)
			return i;
	return -1;
}

void track_fd(int fd, int obj)
{
	M.fds[M.nfds].fd = fd;
	M.fds[M.nfds].obj = obj;
	M.nfds++;
	M.obj[obj].refs++;
}

void untrack_fd(int k)
{
	int o = M.fds[k].obj;

	if (--M.obj[o].refs == 0)
		M.obj[o].type = T_NONE;
	M.fds[k] = M.fds[--M.nfds];
}

/* Lowest free descriptor number, to prove a failed create left none behind. */
int lowest_free_fd(void)
{
	int fd = dup(0);

	if (fd >= 0)
		close(fd);
	return fd;
}

void check_no_new_fd(int probe)
{
	if (probe >= 0 && fcntl(probe, F_GETFD) != -1)
		fail("a failed call left descriptor %d open", probe);
}

/* A random descriptor to aim an object ioctl at, with its model object. */
struct target pick_target(int want_type)
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
long misaimed(const struct target *t, int want_type)
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
enum ptrkind pick_ptr(void)
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

void *ptr_for(enum ptrkind k, void *ok, size_t len)
{
	switch (k) {
	case P_OK: return ok;
	case P_NULL: return NULL;
	case P_NONE: return page_none;
	case P_RO: return ro_copy(ok, len);
	}
	return ok;
}

const char *const pname[] = { "ok", "NULL", "unmapped", "read-only" };

bool bad_ptr(int pk)
{
	return pk == P_NULL || pk == P_NONE;
}

/* Wrong object type together with an unreadable pointer: EINVAL or EFAULT. */
long alt_for(long expect, bool unreadable)
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
void resync_either(const struct mobj *before)
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
void verify_obj(int k)
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
