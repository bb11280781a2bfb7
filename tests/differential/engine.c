// SPDX-License-Identifier: GPL-2.0-only
/*
 * The differential test's engine (diff.h): the error matrix, the random
 * walk, and the comparison of two runs.  Raw ioctls on the project's
 * <linux/ntsync.h>, no libntsync: a driver is judged by what it answers to
 * the bytes it is given, including bytes no library would send.
 *
 * The cases follow the order of checks in doc/abi.md §abi.order, which was
 * read from mainline's drivers/misc/ntsync.c (Elizabeth Figura); the code
 * here is the project's own.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/ntsync.h>

#include "diff.h"
#include "tools-common.h"

#define SENTINEL 0xa5a5a5a5U

/* ------------------------------------------------------------ lines */

void nd_out_init(struct nd_out *o, FILE *f)
{
	o->f = f;
	o->digest = 0xcbf29ce484222325ULL;
	o->lines = 0;
}

static void digest_bytes(struct nd_out *o, const char *s, size_t n)
{
	while (n--) {
		o->digest ^= (unsigned char)*s++;
		o->digest *= 0x100000001b3ULL;
	}
}

void nd_line(struct nd_out *o, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	digest_bytes(o, buf, n);
	digest_bytes(o, "\n", 1);
	o->lines++;
	if (o->f) {
		fwrite(buf, 1, n, o->f);
		fputc('\n', o->f);
	}
}

/* "ok", "fd" (a create's new descriptor) or the errno's name. */
static const char *result(long ret, int err, bool fd, char *buf, size_t len)
{
	const char *name;

	if (ret >= 0)
		return fd ? "fd" : "ok";
	name = tc_errno_name(err);
	if (name)
		return name;
	snprintf(buf, len, "errno%d", err);
	return buf;
}

/*
 * Every call runs under an alarm: a driver that blocks where the answer
 * should be immediate is interrupted (EINTR) and the line shows it,
 * instead of the test hanging.
 */
static void on_alarm(int sig)
{
	(void)sig;
}

static void guard_init(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;	/* no SA_RESTART */
	sigaction(SIGALRM, &sa, NULL);
}

static long guarded_ioctl(int fd, unsigned long cmd, void *arg, int *err)
{
	long ret;

	alarm(5);
	ret = ioctl(fd, cmd, arg);
	*err = ret < 0 ? errno : 0;
	alarm(0);
	return ret;
}

/* ------------------------------------------------------------ memory */

/*
 * Where an argument lives: a read-write page, NULL, a page that may not be
 * touched, a pointer whose first part is readable and the rest not (the
 * "edge": the argument straddles the end of a mapping), and a read-only
 * page for the commands that write a result back.
 */
enum mem { M_VALID, M_NULL, M_NOACC, M_EDGE, M_RO };
static const char *const mem_name[] = { "valid", "null", "noaccess", "edge", "readonly" };

static struct {
	size_t page;
	unsigned char *rw, *ro, *noacc;
} mem;

static int mem_init(void)
{
	unsigned char *p;

	if (mem.rw)
		return 0;
	mem.page = sysconf(_SC_PAGESIZE);
	/* [rw][ro][a page whose end is the edge][no access] */
	p = mmap(NULL, 4 * mem.page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	mem.rw = p;
	mem.ro = p + mem.page;
	mem.noacc = p + 3 * mem.page;
	if (mprotect(mem.noacc, mem.page, PROT_NONE) ||
	    mprotect(mem.ro, mem.page, PROT_READ))
		return -1;
	return 0;
}

/*
 * Place @len bytes of @content (the rest of the argument filled with the
 * sentinel) as variant @m says, at @off within the pages that have room;
 * returns the pointer to pass.  The edge leaves the first half readable.
 */
static void *place(enum mem m, const void *content, size_t len, size_t off)
{
	unsigned char *p;

	switch (m) {
	case M_VALID:
		p = mem.rw + off;
		memset(p, 0xa5, len > 64 ? len : 64);
		memcpy(p, content, len);
		return p;
	case M_RO:
		mprotect(mem.ro, mem.page, PROT_READ | PROT_WRITE);
		memset(mem.ro, 0xa5, mem.page);
		memcpy(mem.ro, content, len);
		mprotect(mem.ro, mem.page, PROT_READ);
		return mem.ro;
	case M_EDGE:
		p = mem.noacc - (len / 2 ? len / 2 : 1);
		memcpy(p, content, mem.noacc - p);
		return p;
	case M_NOACC:
		return mem.noacc;
	case M_NULL:
		break;
	}
	return NULL;
}

/* The first two words at @p, for a variant whose memory can be read. */
static void words(enum mem m, const void *p, size_t len, char *buf, size_t n)
{
	uint32_t w[2] = { SENTINEL, SENTINEL };

	if ((m != M_VALID && m != M_RO) || !len) {
		snprintf(buf, n, "-");
		return;
	}
	memcpy(w, p, len < 8 ? len : 8);
	if (len < 8)
		snprintf(buf, n, "%08x", w[0]);
	else
		snprintf(buf, n, "%08x,%08x", w[0], w[1]);
}

/* ------------------------------------------------------------ objects */

static int obj_read(int fd, enum nd_kind kind, char *buf, size_t len)
{
	static const unsigned long cmd[] = {
		[ND_SEM] = NTSYNC_IOC_SEM_READ,
		[ND_MUTEX] = NTSYNC_IOC_MUTEX_READ,
		[ND_EVENT] = NTSYNC_IOC_EVENT_READ,
	};
	uint32_t w[2] = { SENTINEL, SENTINEL };
	char eb[16];
	int err = 0;
	long ret;

	if (fd < 0 || kind == ND_NONE)
		return snprintf(buf, len, "-");
	ret = ioctl(fd, cmd[kind], w);
	if (ret < 0)
		err = errno;
	if (ret < 0 && !(kind == ND_MUTEX && err == EOWNERDEAD))
		return snprintf(buf, len, "%s", result(ret, err, false, eb, sizeof(eb)));
	switch (kind) {
	case ND_SEM:	/* count/max */
		return snprintf(buf, len, "%u/%u", w[0], w[1]);
	case ND_MUTEX:	/* owner,count and ! when abandoned */
		return snprintf(buf, len, "%u,%u%s", w[0], w[1], ret < 0 ? "!" : "");
	default:	/* manual, signaled */
		return snprintf(buf, len, "m%us%u", w[0], w[1]);
	}
}

/* ------------------------------------------------------------ the matrix's objects */

/*
 * Each case starts from a fresh pair of instances with the same objects:
 * every kind and every state a check depends on, and two objects of the
 * other instance.
 */
enum {
	F_SEM, F_MUTEX, F_OWNED, F_DEAD, F_MSET, F_AUNSET, F_XSEM, F_XEVENT,
	F_NOBJ
};

static const struct {
	const char *name;
	enum nd_kind kind;
	bool other;
	uint32_t a, b;
} fobj[F_NOBJ] = {
	[F_SEM]    = { "sem",    ND_SEM,   false, 1, 2 },	/* count 1 of 2 */
	[F_MUTEX]  = { "mutex",  ND_MUTEX, false, 0, 0 },	/* free */
	[F_OWNED]  = { "owned",  ND_MUTEX, false, 7, 2 },	/* owner 7, twice */
	[F_DEAD]   = { "dead",   ND_MUTEX, false, 7, 1 },	/* killed by 7 */
	[F_MSET]   = { "mset",   ND_EVENT, false, 1, 1 },	/* manual, signaled */
	[F_AUNSET] = { "aunset", ND_EVENT, false, 0, 0 },	/* auto, unsignaled */
	[F_XSEM]   = { "xsem",   ND_SEM,   true,  1, 2 },
	[F_XEVENT] = { "xevent", ND_EVENT, true,  1, 1 },
};

/*
 * The descriptors a case may name: the objects (1 + F_*), then these.  0
 * names nothing (no alert).
 */
enum {
	O_NONE, O_FIRST_OBJ, O_DEV = O_FIRST_OBJ + F_NOBJ, O_XDEV, O_CLOSED,
	O_PIPE, O_MINUS1, O_HUGE
};
static const char *const oname[] = {
	[O_DEV] = "device", [O_XDEV] = "xdevice", [O_CLOSED] = "closed",
	[O_PIPE] = "pipe", [O_MINUS1] = "-1", [O_HUGE] = "huge",
};

static const char *name_of(int o)
{
	return o >= O_FIRST_OBJ && o < O_DEV ? fobj[o - O_FIRST_OBJ].name : oname[o];
}

struct fix {
	int dev, xdev, pipe[2], closed;
	int obj[F_NOBJ];
};

static int create(int dev, enum nd_kind kind, uint32_t a, uint32_t b)
{
	static const unsigned long cmd[] = {
		[ND_SEM] = NTSYNC_IOC_CREATE_SEM,
		[ND_MUTEX] = NTSYNC_IOC_CREATE_MUTEX,
		[ND_EVENT] = NTSYNC_IOC_CREATE_EVENT,
	};
	uint32_t args[2] = { a, b };

	return ioctl(dev, cmd[kind], args);
}

static int fix_up(struct fix *f)
{
	uint32_t owner = 7;
	int i;

	f->dev = open("/dev/ntsync", O_RDWR | O_CLOEXEC);
	if (f->dev < 0)
		return -1;
	f->xdev = open("/dev/ntsync", O_RDWR | O_CLOEXEC);
	if (f->xdev < 0 || pipe2(f->pipe, O_CLOEXEC))
		return -1;
	for (i = 0; i < F_NOBJ; i++) {
		f->obj[i] = create(fobj[i].other ? f->xdev : f->dev,
				   fobj[i].kind, fobj[i].a, fobj[i].b);
		if (f->obj[i] < 0)
			return -1;
	}
	if (ioctl(f->obj[F_DEAD], NTSYNC_IOC_MUTEX_KILL, &owner))
		return -1;
	/* a number that was a descriptor a moment ago */
	f->closed = dup(f->dev);
	close(f->closed);
	return 0;
}

static void fix_down(struct fix *f)
{
	int i;

	for (i = 0; i < F_NOBJ; i++)
		close(f->obj[i]);
	close(f->pipe[0]);
	close(f->pipe[1]);
	close(f->xdev);
	close(f->dev);
}

static int fd_of(const struct fix *f, int o)
{
	switch (o) {
	case O_NONE:	return 0;
	case O_DEV:	return f->dev;
	case O_XDEV:	return f->xdev;
	case O_CLOSED:	return f->closed;
	case O_PIPE:	return f->pipe[0];
	case O_MINUS1:	return -1;
	case O_HUGE:	return 0x7fffffff;
	}
	return f->obj[o - O_FIRST_OBJ];
}

/* "sem=1/2 mutex=0,0 ...": every object's state, read back. */
static void fix_state(const struct fix *f, char *buf, size_t len)
{
	size_t at = 0;
	int i;

	buf[0] = 0;
	for (i = 0; i < F_NOBJ && at < len; i++) {
		at += snprintf(buf + at, len - at, "%s%s=", i ? " " : "", fobj[i].name);
		if (at < len)
			at += obj_read(f->obj[i], fobj[i].kind, buf + at, len - at);
	}
}

/* ------------------------------------------------------------ object ioctls */

static const struct {
	const char *name;
	unsigned long cmd;
	unsigned int len;	/* bytes of argument */
	unsigned int nin;	/* input variants */
	uint32_t in[4][2];
} ocmd[] = {
	{ "SEM_RELEASE", NTSYNC_IOC_SEM_RELEASE, 4, 4, { { 0 }, { 1 }, { 2 }, { 0xffffffff } } },
	{ "SEM_READ", NTSYNC_IOC_SEM_READ, 8, 0, { { 0 } } },
	{ "MUTEX_UNLOCK", NTSYNC_IOC_MUTEX_UNLOCK, 8, 4,
	  { { 0, 0 }, { 7, 0 }, { 8, 0 }, { 7, 5 } } },
	{ "MUTEX_KILL", NTSYNC_IOC_MUTEX_KILL, 4, 3, { { 0 }, { 7 }, { 8 } } },
	{ "MUTEX_READ", NTSYNC_IOC_MUTEX_READ, 8, 0, { { 0 } } },
	{ "EVENT_SET", NTSYNC_IOC_EVENT_SET, 4, 0, { { 0 } } },
	{ "EVENT_RESET", NTSYNC_IOC_EVENT_RESET, 4, 0, { { 0 } } },
	{ "EVENT_PULSE", NTSYNC_IOC_EVENT_PULSE, 4, 0, { { 0 } } },
	{ "EVENT_READ", NTSYNC_IOC_EVENT_READ, 8, 0, { { 0 } } },
	/* numbers no object takes: other sizes, the device's, unknown */
	{ "SEM_RELEASE/u64", _IOWR('N', 0x81, __u64), 8, 1, { { 1 } } },
	{ "EVENT_READ/u32", _IOR('N', 0x8d, __u32), 4, 0, { { 0 } } },
	{ "CREATE_SEM", NTSYNC_IOC_CREATE_SEM, 8, 1, { { 1, 2 } } },
	{ "WAIT_ANY", NTSYNC_IOC_WAIT_ANY, 8, 0, { { 0 } } },
	{ "N/0x8e", _IO('N', 0x8e), 0, 0, { { 0 } } },
	{ "0", 0, 0, 0, { { 0 } } },
};

static const int otargets[] = {
	O_FIRST_OBJ + F_SEM, O_FIRST_OBJ + F_MUTEX, O_FIRST_OBJ + F_OWNED,
	O_FIRST_OBJ + F_DEAD, O_FIRST_OBJ + F_MSET, O_FIRST_OBJ + F_AUNSET,
	O_FIRST_OBJ + F_XSEM, O_DEV, O_CLOSED, O_PIPE,
};

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static int obj_case(struct nd_out *o, unsigned int c, int target, enum mem m,
		    unsigned int in)
{
	char st[512], vb[48], ob[32], eb[16];
	const uint32_t *content = ocmd[c].in[in];
	struct fix f;
	void *p;
	long ret;
	int err;

	if (fix_up(&f))
		return -1;
	if (m == M_VALID && ocmd[c].nin)
		snprintf(vb, sizeof(vb), ocmd[c].len > 4 ? "valid(%u,%u)" : "valid(%u)",
			 content[0], content[1]);
	else if (m == M_RO && ocmd[c].nin)
		snprintf(vb, sizeof(vb), ocmd[c].len > 4 ? "readonly(%u,%u)" : "readonly(%u)",
			 content[0], content[1]);
	else
		snprintf(vb, sizeof(vb), "%s", mem_name[m]);
	p = place(m, content, ocmd[c].len, 0);
	ret = guarded_ioctl(fd_of(&f, target), ocmd[c].cmd, p, &err);
	words(m, p, ocmd[c].len, ob, sizeof(ob));
	fix_state(&f, st, sizeof(st));
	nd_line(o, "obj %s on %s %s -> %s out=%s | %s", ocmd[c].name, name_of(target), vb,
		result(ret, err, false, eb, sizeof(eb)), ob, st);
	fix_down(&f);
	return 0;
}

static long obj_matrix(struct nd_out *o)
{
	long cases = 0;
	unsigned int c, t, i;
	enum mem m;

	for (c = 0; c < ARRAY_LEN(ocmd); c++) {
		for (t = 0; t < ARRAY_LEN(otargets); t++) {
			for (i = 0; i < (ocmd[c].nin ? ocmd[c].nin : 1); i++, cases++)
				if (obj_case(o, c, otargets[t], M_VALID, i))
					return -1;
			if (!ocmd[c].len)
				continue;
			for (m = M_NULL; m <= M_RO; m++, cases++)
				/* read-only: the input most likely to succeed */
				if (obj_case(o, c, otargets[t], m, ocmd[c].nin > 1 ? 1 : 0))
					return -1;
		}
	}
	return cases;
}

/* ------------------------------------------------------------ creates */

static const struct {
	const char *name;
	unsigned long cmd;
	enum nd_kind kind;
	unsigned int nin;
	uint32_t in[7][2];
} ccmd[] = {
	{ "CREATE_SEM", NTSYNC_IOC_CREATE_SEM, ND_SEM, 7,
	  { { 0, 0 }, { 1, 2 }, { 2, 2 }, { 3, 2 }, { 0xffffffff, 0xffffffff }, { 1, 0 },
	    { 0, 0xffffffff } } },
	{ "CREATE_MUTEX", NTSYNC_IOC_CREATE_MUTEX, ND_MUTEX, 6,
	  { { 0, 0 }, { 7, 1 }, { 7, 0 }, { 0, 1 }, { 7, 0xffffffff }, { 0xffffffff, 1 } } },
	{ "CREATE_EVENT", NTSYNC_IOC_CREATE_EVENT, ND_EVENT, 5,
	  { { 0, 0 }, { 1, 1 }, { 2, 7 }, { 0, 1 }, { 0xffffffff, 0 } } },
};

static const int ctargets[] = { O_DEV, O_XDEV, O_FIRST_OBJ + F_SEM, O_CLOSED, O_PIPE };

static int create_case(struct nd_out *o, unsigned int c, int target, enum mem m,
		       unsigned int in)
{
	char st[512], vb[48], nb[64], eb[16];
	const uint32_t *content = ccmd[c].in[in];
	struct fix f;
	void *p;
	long ret;
	int err;

	if (fix_up(&f))
		return -1;
	if (m == M_VALID || m == M_RO)
		snprintf(vb, sizeof(vb), "%s(%u,%u)", mem_name[m], content[0], content[1]);
	else
		snprintf(vb, sizeof(vb), "%s", mem_name[m]);
	p = place(m, content, 8, 0);
	ret = guarded_ioctl(fd_of(&f, target), ccmd[c].cmd, p, &err);
	if (ret >= 0) {
		/* the new object, and that the descriptor is close-on-exec */
		int fl = fcntl(ret, F_GETFD);
		size_t at = snprintf(nb, sizeof(nb), " new=");

		at += obj_read(ret, ccmd[c].kind, nb + at, sizeof(nb) - at);
		snprintf(nb + at, sizeof(nb) - at, "%s", fl >= 0 && (fl & FD_CLOEXEC) ? " cloexec" : "");
		close(ret);
	} else {
		nb[0] = 0;
	}
	fix_state(&f, st, sizeof(st));
	nd_line(o, "create %s on %s %s -> %s%s | %s", ccmd[c].name, name_of(target), vb,
		result(ret, err, true, eb, sizeof(eb)), nb, st);
	fix_down(&f);
	return 0;
}

static long create_matrix(struct nd_out *o)
{
	long cases = 0;
	unsigned int c, t, i;
	enum mem m;

	for (c = 0; c < ARRAY_LEN(ccmd); c++) {
		for (t = 0; t < ARRAY_LEN(ctargets); t++) {
			for (i = 0; i < ccmd[c].nin; i++, cases++)
				if (create_case(o, c, ctargets[t], M_VALID, i))
					return -1;
			for (m = M_NULL; m <= M_RO; m++, cases++)
				if (create_case(o, c, ctargets[t], m, 1))
					return -1;
		}
	}
	return cases;
}

/* ------------------------------------------------------------ waits */

#define OBJ(x) (O_FIRST_OBJ + F_##x)
#define O_MANY 99		/* 64 fresh events, the last one signaled */

enum tmo { T_POLL, T_PAST, T_INF };

struct wvar {
	const char *name;
	enum mem mem;		/* the argument structure */
	enum mem omem;		/* the objs array */
	unsigned int n;		/* descriptors in objs */
	int objs[4];
	bool setcount;		/* count is .count, not .n */
	uint32_t count;
	bool owner0;		/* owner 0 instead of 7 */
	uint32_t owner;		/* another owner than 7 */
	uint32_t flags, pad;
	int alert;
	enum tmo tmo;
	int on;			/* the descriptor the call goes to; O_NONE: the device */
	bool known;		/* upstream/0002's case: a non-event alert */
};

#define W(...) { __VA_ARGS__ }
static const struct wvar wvars[] = {
	/* one object of each kind and state, and every other descriptor */
	W(.name = "sem", .n = 1, .objs = { OBJ(SEM) }),
	W(.name = "mutex", .n = 1, .objs = { OBJ(MUTEX) }),
	W(.name = "owned", .n = 1, .objs = { OBJ(OWNED) }),
	W(.name = "owned/owner8", .n = 1, .objs = { OBJ(OWNED) }, .owner = 8),
	W(.name = "dead", .n = 1, .objs = { OBJ(DEAD) }),
	W(.name = "mset", .n = 1, .objs = { OBJ(MSET) }),
	W(.name = "aunset", .n = 1, .objs = { OBJ(AUNSET) }),
	W(.name = "xsem", .n = 1, .objs = { OBJ(XSEM) }),
	W(.name = "device", .n = 1, .objs = { O_DEV }),
	W(.name = "xdevice", .n = 1, .objs = { O_XDEV }),
	W(.name = "closed", .n = 1, .objs = { O_CLOSED }),
	W(.name = "pipe", .n = 1, .objs = { O_PIPE }),
	W(.name = "-1", .n = 1, .objs = { O_MINUS1 }),
	W(.name = "huge", .n = 1, .objs = { O_HUGE }),
	/* counts */
	W(.name = "count0", .n = 0),
	W(.name = "count0/objsnull", .n = 0, .omem = M_NULL),
	W(.name = "count64", .n = 1, .objs = { O_MANY }),
	W(.name = "count65", .n = 1, .objs = { OBJ(SEM) }, .setcount = true, .count = 65),
	W(.name = "count0x80000000", .n = 1, .objs = { OBJ(SEM) }, .setcount = true,
	  .count = 0x80000000U),
	W(.name = "count0xffffffff", .n = 1, .objs = { OBJ(SEM) }, .setcount = true,
	  .count = 0xffffffffU),
	/* the objs array */
	W(.name = "objsnull", .n = 1, .objs = { OBJ(SEM) }, .omem = M_NULL),
	W(.name = "objsnoaccess", .n = 1, .objs = { OBJ(SEM) }, .omem = M_NOACC),
	W(.name = "objsedge", .n = 2, .objs = { OBJ(SEM), OBJ(MSET) }, .omem = M_EDGE),
	/* several objects, duplicates */
	W(.name = "dup", .n = 2, .objs = { OBJ(SEM), OBJ(SEM) }),
	W(.name = "dup3", .n = 3, .objs = { OBJ(AUNSET), OBJ(SEM), OBJ(AUNSET) }),
	W(.name = "dupowned", .n = 2, .objs = { OBJ(OWNED), OBJ(OWNED) }),
	W(.name = "allsignaled", .n = 3, .objs = { OBJ(SEM), OBJ(MUTEX), OBJ(MSET) }),
	W(.name = "mixed", .n = 2, .objs = { OBJ(AUNSET), OBJ(SEM) }),
	W(.name = "mixed/dead", .n = 2, .objs = { OBJ(DEAD), OBJ(SEM) }),
	W(.name = "mixed/owner8", .n = 3, .objs = { OBJ(SEM), OBJ(OWNED), OBJ(MSET) },
	  .owner = 8),
	W(.name = "xmixed", .n = 2, .objs = { OBJ(SEM), OBJ(XSEM) }),
	W(.name = "badlast", .n = 3, .objs = { OBJ(SEM), OBJ(MSET), O_CLOSED }),
	/* fields */
	W(.name = "pad1", .n = 1, .objs = { OBJ(SEM) }, .pad = 1),
	W(.name = "pad0x80000000", .n = 1, .objs = { OBJ(SEM) }, .pad = 0x80000000U),
	W(.name = "flags2", .n = 1, .objs = { OBJ(SEM) }, .flags = 2),
	W(.name = "flagsall", .n = 1, .objs = { OBJ(SEM) }, .flags = 0xffffffffU),
	W(.name = "realtime", .n = 1, .objs = { OBJ(SEM) }, .flags = NTSYNC_WAIT_REALTIME),
	W(.name = "realtime/aunset", .n = 1, .objs = { OBJ(AUNSET) },
	  .flags = NTSYNC_WAIT_REALTIME),
	W(.name = "owner0", .n = 1, .objs = { OBJ(SEM) }, .owner0 = true),
	W(.name = "owner0/count0", .n = 0, .owner0 = true),
	/* the structure itself */
	W(.name = "argsnull", .mem = M_NULL, .n = 1, .objs = { OBJ(SEM) }),
	W(.name = "argsnoaccess", .mem = M_NOACC, .n = 1, .objs = { OBJ(SEM) }),
	W(.name = "argsedge", .mem = M_EDGE, .n = 1, .objs = { OBJ(SEM) }),
	W(.name = "argsreadonly", .mem = M_RO, .n = 1, .objs = { OBJ(SEM) }),
	W(.name = "argsreadonly/aunset", .mem = M_RO, .n = 1, .objs = { OBJ(AUNSET) }),
	W(.name = "argsreadonly/dead", .mem = M_RO, .n = 1, .objs = { OBJ(DEAD) }),
	/* deadlines */
	W(.name = "past", .n = 1, .objs = { OBJ(AUNSET) }, .tmo = T_PAST),
	W(.name = "infinite/sem", .n = 1, .objs = { OBJ(SEM) }, .tmo = T_INF),
	W(.name = "infinite/realtime", .n = 1, .objs = { OBJ(MSET) }, .tmo = T_INF,
	  .flags = NTSYNC_WAIT_REALTIME),
	/* alerts */
	W(.name = "alert=mset", .n = 1, .objs = { OBJ(AUNSET) }, .alert = OBJ(MSET)),
	W(.name = "alert=mset/sem", .n = 1, .objs = { OBJ(SEM) }, .alert = OBJ(MSET)),
	W(.name = "alert=mset/count0", .n = 0, .alert = OBJ(MSET)),
	W(.name = "alert=aunset", .n = 1, .objs = { OBJ(SEM) }, .alert = OBJ(AUNSET)),
	W(.name = "alert=aunset/aunset", .n = 1, .objs = { OBJ(AUNSET) }, .alert = OBJ(AUNSET)),
	W(.name = "alert=mset/mset", .n = 1, .objs = { OBJ(MSET) }, .alert = OBJ(MSET)),
	W(.name = "alert=xevent", .n = 1, .objs = { OBJ(AUNSET) }, .alert = OBJ(XEVENT)),
	W(.name = "alert=closed", .n = 1, .objs = { OBJ(AUNSET) }, .alert = O_CLOSED),
	W(.name = "alert=pipe", .n = 1, .objs = { OBJ(AUNSET) }, .alert = O_PIPE),
	W(.name = "alert=device", .n = 1, .objs = { OBJ(AUNSET) }, .alert = O_DEV),
	W(.name = "alert=-1", .n = 1, .objs = { OBJ(AUNSET) }, .alert = O_MINUS1),
	W(.name = "alert=sem", .n = 1, .objs = { OBJ(AUNSET) }, .alert = OBJ(SEM), .known = true),
	W(.name = "alert=mutex", .n = 1, .objs = { OBJ(AUNSET) }, .alert = OBJ(MUTEX),
	  .known = true),
	W(.name = "alert=dead", .n = 1, .objs = { OBJ(AUNSET) }, .alert = OBJ(DEAD),
	  .known = true),
	W(.name = "alert=sem/count0", .n = 0, .alert = OBJ(SEM), .known = true),
	W(.name = "alert=sem/sem", .n = 1, .objs = { OBJ(SEM) }, .alert = OBJ(SEM),
	  .known = true),
	/* two things wrong at once */
	W(.name = "pad1+objsnoaccess", .n = 1, .objs = { OBJ(SEM) }, .omem = M_NOACC, .pad = 1),
	W(.name = "flags2+count65", .n = 1, .objs = { OBJ(SEM) }, .flags = 2, .setcount = true,
	  .count = 65),
	W(.name = "count65+objsnull", .n = 1, .objs = { OBJ(SEM) }, .omem = M_NULL,
	  .setcount = true, .count = 65),
	W(.name = "owner0+objsnoaccess", .n = 1, .objs = { OBJ(SEM) }, .omem = M_NOACC,
	  .owner0 = true),
	W(.name = "owner0+pad1", .n = 1, .objs = { OBJ(SEM) }, .owner0 = true, .pad = 1),
	W(.name = "owner0+closed", .n = 1, .objs = { O_CLOSED }, .owner0 = true),
	W(.name = "owner0+alert=sem", .n = 1, .objs = { OBJ(AUNSET) }, .owner0 = true,
	  .alert = OBJ(SEM)),
	W(.name = "objsnoaccess+alert=closed", .n = 1, .objs = { OBJ(SEM) }, .omem = M_NOACC,
	  .alert = O_CLOSED),
	W(.name = "closed+alert=sem", .n = 1, .objs = { O_CLOSED }, .alert = OBJ(SEM)),
	W(.name = "xsem+alert=xevent", .n = 1, .objs = { OBJ(XSEM) }, .alert = OBJ(XEVENT)),
	W(.name = "dup+alert=closed", .n = 2, .objs = { OBJ(SEM), OBJ(SEM) }, .alert = O_CLOSED),
	W(.name = "dup+alert=sem", .n = 2, .objs = { OBJ(AUNSET), OBJ(AUNSET) },
	  .alert = OBJ(SEM), .known = true),
	W(.name = "argsreadonly+owner0", .mem = M_RO, .n = 1, .objs = { OBJ(SEM) },
	  .owner0 = true),
	W(.name = "argsreadonly+closed", .mem = M_RO, .n = 1, .objs = { O_CLOSED }),
	W(.name = "argsreadonly+alert=mset", .mem = M_RO, .n = 1, .objs = { OBJ(AUNSET) },
	  .alert = OBJ(MSET)),
	/* other descriptors taking the call */
	W(.name = "on closed", .n = 1, .objs = { OBJ(SEM) }, .on = O_CLOSED),
	W(.name = "on pipe", .n = 1, .objs = { OBJ(SEM) }, .on = O_PIPE),
	W(.name = "on sem", .n = 1, .objs = { OBJ(SEM) }, .on = OBJ(SEM)),
	W(.name = "on xdevice", .n = 1, .objs = { OBJ(SEM) }, .on = O_XDEV),
	W(.name = "on xdevice/xsem", .n = 1, .objs = { OBJ(XSEM) }, .on = O_XDEV),
};

static int wait_case(struct nd_out *o, const struct wvar *v, bool all)
{
	char before[512], st[512], eb[16], extra[32] = "", idx[16];
	struct ntsync_wait_args args;
	int fds[80], many[64];
	unsigned int i, nfds = 0;
	struct fix f;
	void *objs, *p;
	long ret;
	int err;

	if (fix_up(&f))
		return -1;
	for (i = 0; i < v->n; i++) {
		if (v->objs[i] == O_MANY) {
			for (nfds = 0; nfds < 64; nfds++) {
				many[nfds] = create(f.dev, ND_EVENT, 0, nfds == 63);
				if (many[nfds] < 0)
					return -1;
				fds[nfds] = many[nfds];
			}
			continue;
		}
		fds[nfds++] = fd_of(&f, v->objs[i]);
	}
	while (nfds < ARRAY_LEN(fds))	/* a count above the array reads these */
		fds[nfds++] = f.obj[F_SEM];
	objs = v->omem == M_EDGE ? place(M_EDGE, fds, 8, 0) :
	       v->omem == M_VALID ? place(M_VALID, fds, sizeof(fds), 1024) :
	       place(v->omem, fds, sizeof(fds), 0);

	memset(&args, 0, sizeof(args));
	args.timeout = v->tmo == T_INF ? UINT64_MAX : v->tmo == T_PAST ? 1 : 0;
	args.objs = (uintptr_t)objs;
	args.count = v->setcount ? v->count : v->n == 1 && v->objs[0] == O_MANY ? 64 : v->n;
	args.index = SENTINEL;
	args.flags = v->flags;
	args.owner = v->owner0 ? 0 : v->owner ? v->owner : 7;
	args.alert = v->alert ? fd_of(&f, v->alert) : 0;
	args.pad = v->pad;
	p = place(v->mem, &args, sizeof(args), 0);

	fix_state(&f, before, sizeof(before));
	ret = guarded_ioctl(v->on ? fd_of(&f, v->on) : f.dev,
			    all ? NTSYNC_IOC_WAIT_ALL : NTSYNC_IOC_WAIT_ANY, p, &err);
	if (v->mem == M_VALID || v->mem == M_RO)
		snprintf(idx, sizeof(idx), "%08x", ((struct ntsync_wait_args *)p)->index);
	else
		snprintf(idx, sizeof(idx), "-");
	if (v->n == 1 && v->objs[0] == O_MANY) {
		unsigned int set = 0;

		for (i = 0; i < 64; i++) {
			uint32_t e[2] = { 0, 0 };

			if (!ioctl(many[i], NTSYNC_IOC_EVENT_READ, e) && e[1])
				set++;
			close(many[i]);
		}
		snprintf(extra, sizeof(extra), " many=%u", set);
	}
	fix_state(&f, st, sizeof(st));
	if (v->known) {
		bool spec = ret < 0 && err == EINVAL && !strcmp(before, st);

		nd_line(o, "wait %s %s " ND_KNOWN_0002 " -> %s index=%s%s | %s spec=%s",
			all ? "ALL" : "ANY", v->name, result(ret, err, false, eb, sizeof(eb)),
			idx, extra, st, spec ? "yes" : "no");
	} else {
		nd_line(o, "wait %s %s -> %s index=%s%s | %s", all ? "ALL" : "ANY", v->name,
			result(ret, err, false, eb, sizeof(eb)), idx, extra, st);
	}
	fix_down(&f);
	return 0;
}

static long wait_matrix(struct nd_out *o)
{
	long cases = 0;
	unsigned int i;
	int all;

	for (i = 0; i < ARRAY_LEN(wvars); i++)
		for (all = 0; all < 2; all++, cases++)
			if (wait_case(o, &wvars[i], all))
				return -1;
	return cases;
}

long nd_matrix(struct nd_out *o)
{
	long a, b, c;

	guard_init();
	if (mem_init())
		return -1;
	a = obj_matrix(o);
	if (a < 0)
		return -1;
	b = create_matrix(o);
	if (b < 0)
		return -1;
	c = wait_matrix(o);
	if (c < 0)
		return -1;
	return a + b + c;
}

/* ------------------------------------------------------------ the walk */

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint32_t below(uint64_t *s, uint32_t n)
{
	return (uint32_t)(splitmix(s) % n);
}

static const char *const opk_name[ND_NOPK] = {
	"create", "release", "unlock", "kill", "set", "reset", "pulse",
	"sread", "mread", "eread", "waitany", "waitall", "close",
};
static const char *const kind_name[] = { "none", "sem", "mutex", "event" };

#define OTHER 0x10	/* the generator's mark of another instance's object */

/* The spec's rule for a create's fields; the generator's idea of a slot. */
static bool valid_create(const struct nd_op *op)
{
	switch (op->kind) {
	case ND_SEM:
		return op->a <= op->b;
	case ND_MUTEX:
		return !op->a == !op->b;
	}
	return true;
}

/*
 * A seed's sequence.  The generator keeps its own idea of what each slot
 * holds (the kind a valid create made, none after a close), so that most
 * calls fit their object and most waits name live ones; it never looks
 * at a driver's answers, so both drivers run the same calls.  Alerts are
 * always events: a semaphore or mutex as alert is upstream/0002's known
 * difference, which the matrix covers, and once taken it would make every
 * later line differ.
 */
unsigned int nd_walk_ops(uint64_t seed, struct nd_op *ops, unsigned int max)
{
	uint8_t gkind[ND_SLOTS] = { 0 };
	uint64_t s = seed * 0x2545f4914f6cdd1dULL + 1;
	unsigned int n, i, j, len = 30 + below(&s, 31);

	if (len > max)
		len = max;
	for (n = 0; n < len; n++) {
		struct nd_op *op = &ops[n];
		uint32_t r = below(&s, 100);

		memset(op, 0, sizeof(*op));
		op->slot = below(&s, ND_SLOTS);
		if (r < 18) {
			op->k = ND_CREATE;
			for (i = 0; i < ND_SLOTS; i++)	/* an empty slot if there is one */
				if (!gkind[(op->slot + i) % ND_SLOTS])
					break;
			if (i < ND_SLOTS)
				op->slot = (op->slot + i) % ND_SLOTS;
			op->kind = 1 + below(&s, 3);
			op->other = below(&s, 10) == 0;
			switch (op->kind) {
			case ND_SEM:
				op->b = below(&s, 4);
				op->a = below(&s, op->b + 2);
				break;
			case ND_MUTEX:
				if (below(&s, 10) < 6)
					break;
				op->a = 1 + below(&s, 3);
				op->b = 1 + below(&s, 2);
				if (below(&s, 8) == 0)	/* owner or count alone */
					*(below(&s, 2) ? &op->a : &op->b) = 0;
				break;
			case ND_EVENT:
				op->a = below(&s, 2);
				op->b = below(&s, 2);
				break;
			}
			/* another instance's object: live, but never an alert */
			gkind[op->slot] = !valid_create(op) ? ND_NONE :
					  op->other ? OTHER | op->kind : op->kind;
		} else if (r < 25) {
			op->k = ND_CLOSE;
			gkind[op->slot] = ND_NONE;
		} else if (r < 72) {
			static const uint8_t fits[4][4] = {
				[ND_NONE] = { ND_SREAD, ND_MREAD, ND_EREAD, ND_RELEASE },
				[ND_SEM] = { ND_RELEASE, ND_RELEASE, ND_SREAD, ND_RELEASE },
				[ND_MUTEX] = { ND_UNLOCK, ND_KILL, ND_MREAD, ND_UNLOCK },
				[ND_EVENT] = { ND_SET, ND_RESET, ND_PULSE, ND_EREAD },
			};
			uint8_t kind = gkind[op->slot] & ~OTHER;

			if (below(&s, 5))
				op->k = fits[kind][below(&s, 4)];
			else
				op->k = ND_RELEASE + below(&s, ND_EREAD - ND_RELEASE + 1);
			op->null = below(&s, 40) == 0;
			if (op->k == ND_RELEASE)
				op->a = below(&s, 20) ? below(&s, 3) : 0xffffffffU;
			else if (op->k == ND_UNLOCK || op->k == ND_KILL)
				op->a = below(&s, 20) ? 1 + below(&s, 3) : 0;
		} else {
			op->k = below(&s, 2) ? ND_WAITANY : ND_WAITALL;
			op->n = below(&s, 20) ? 1 + below(&s, 4) : 0;
			for (i = 0; i < op->n; i++) {
				op->objs[i] = below(&s, ND_SLOTS);
				/* mostly live objects */
				for (j = 0; j < ND_SLOTS && below(&s, 8) &&
				     !gkind[op->objs[i]]; j++)
					op->objs[i] = (op->objs[i] + 1) % ND_SLOTS;
			}
			op->a = 1 + below(&s, 3);
			op->realtime = below(&s, 5) == 0;
			if (below(&s, 5) == 0) {
				j = below(&s, ND_SLOTS);
				for (i = 0; i < ND_SLOTS; i++)
					if (gkind[(j + i) % ND_SLOTS] == ND_EVENT)
						break;
				if (i < ND_SLOTS)
					op->alert = 1 + (j + i) % ND_SLOTS;
			}
		}
	}
	return n;
}

void nd_op_format(const struct nd_op *op, char *buf, size_t len)
{
	size_t at;
	unsigned int i;

	at = snprintf(buf, len, "%s %u", opk_name[op->k], op->slot);
	switch (op->k) {
	case ND_CREATE:
		at += snprintf(buf + at, len - at, " %s %s %u %u", kind_name[op->kind],
			       op->other ? "other" : "this", op->a, op->b);
		break;
	case ND_RELEASE:
	case ND_UNLOCK:
	case ND_KILL:
		at += snprintf(buf + at, len - at, " %u", op->a);
		break;
	case ND_WAITANY:
	case ND_WAITALL:
		at += snprintf(buf + at, len - at, " owner=%u%s alert=", op->a,
			       op->realtime ? " realtime" : "");
		if (op->alert)
			at += snprintf(buf + at, len - at, "%u", op->alert - 1);
		else
			at += snprintf(buf + at, len - at, "-");
		at += snprintf(buf + at, len - at, " objs=");
		for (i = 0; i < op->n && at < len; i++)
			at += snprintf(buf + at, len - at, "%s%u", i ? "," : "", op->objs[i]);
		if (!op->n && at < len)
			at += snprintf(buf + at, len - at, "-");
		break;
	}
	if (op->null && at < len)
		snprintf(buf + at, len - at, " null");
}

int nd_op_parse(const char *line, struct nd_op *op)
{
	char word[16], kind[8], where[8], rest[128];
	unsigned int slot, a, b, k;
	const char *p;

	memset(op, 0, sizeof(*op));
	if (sscanf(line, "%15s %u", word, &slot) != 2 || slot >= ND_SLOTS)
		return -1;
	for (k = 0; k < ND_NOPK && strcmp(word, opk_name[k]); k++)
		;
	if (k == ND_NOPK)
		return -1;
	op->k = k;
	op->slot = slot;
	op->null = strstr(line, " null") != NULL;
	switch (k) {
	case ND_CREATE:
		if (sscanf(line, "%*s %*u %7s %7s %u %u", kind, where, &a, &b) != 4)
			return -1;
		for (op->kind = ND_SEM; op->kind <= ND_EVENT &&
		     strcmp(kind, kind_name[op->kind]); op->kind++)
			;
		if (op->kind > ND_EVENT)
			return -1;
		op->other = !strcmp(where, "other");
		op->a = a;
		op->b = b;
		break;
	case ND_RELEASE:
	case ND_UNLOCK:
	case ND_KILL:
		if (sscanf(line, "%*s %*u %u", &a) != 1)
			return -1;
		op->a = a;
		break;
	case ND_WAITANY:
	case ND_WAITALL:
		if (sscanf(line, "%*s %*u owner=%u", &a) != 1)
			return -1;
		op->a = a;
		op->realtime = strstr(line, " realtime") != NULL;
		p = strstr(line, " alert=");
		if (!p)
			return -1;
		if (p[7] != '-') {
			if (sscanf(p + 7, "%u", &a) != 1 || a >= ND_SLOTS)
				return -1;
			op->alert = a + 1;
		}
		p = strstr(line, " objs=");
		if (!p || sscanf(p + 6, "%127s", rest) != 1)
			return -1;
		if (rest[0] != '-') {
			for (p = rest; *p && op->n < ND_MAX_WAIT; ) {
				char *end;
				unsigned long v = strtoul(p, &end, 10);

				if (end == p || v >= ND_SLOTS)
					return -1;
				op->objs[op->n++] = v;
				p = *end == ',' ? end + 1 : end;
			}
		}
		break;
	}
	return 0;
}

struct walk {
	int dev[2];
	int fd[ND_SLOTS];
	uint8_t kind[ND_SLOTS];
};

static void walk_state(const struct walk *w, char *buf, size_t len)
{
	size_t at = 0;
	int i;

	for (i = 0; i < ND_SLOTS && at < len; i++) {
		at += snprintf(buf + at, len - at, "%s%d:", i ? " " : "", i);
		if (at < len)
			at += obj_read(w->fd[i], w->fd[i] < 0 ? ND_NONE : w->kind[i],
				       buf + at, len - at);
	}
}

static void walk_step(struct nd_out *o, struct walk *w, const struct nd_op *op)
{
	static const unsigned long cmd[ND_NOPK] = {
		[ND_RELEASE] = NTSYNC_IOC_SEM_RELEASE, [ND_UNLOCK] = NTSYNC_IOC_MUTEX_UNLOCK,
		[ND_KILL] = NTSYNC_IOC_MUTEX_KILL, [ND_SET] = NTSYNC_IOC_EVENT_SET,
		[ND_RESET] = NTSYNC_IOC_EVENT_RESET, [ND_PULSE] = NTSYNC_IOC_EVENT_PULSE,
		[ND_SREAD] = NTSYNC_IOC_SEM_READ, [ND_MREAD] = NTSYNC_IOC_MUTEX_READ,
		[ND_EREAD] = NTSYNC_IOC_EVENT_READ, [ND_WAITANY] = NTSYNC_IOC_WAIT_ANY,
		[ND_WAITALL] = NTSYNC_IOC_WAIT_ALL,
	};
	char text[160], st[256], eb[16], out[32] = "";
	int fd = w->fd[op->slot], err = 0;
	uint32_t arg[2] = { op->a, SENTINEL };
	long ret;
	unsigned int i;

	nd_op_format(op, text, sizeof(text));
	switch (op->k) {
	case ND_CREATE: {
		static const unsigned long ccmd_of[] = {
			[ND_SEM] = NTSYNC_IOC_CREATE_SEM,
			[ND_MUTEX] = NTSYNC_IOC_CREATE_MUTEX,
			[ND_EVENT] = NTSYNC_IOC_CREATE_EVENT,
		};

		if (fd >= 0)
			close(fd);
		arg[1] = op->b;
		ret = guarded_ioctl(w->dev[op->other], ccmd_of[op->kind], op->null ? NULL : arg,
				    &err);
		w->fd[op->slot] = ret >= 0 ? ret : -1;
		w->kind[op->slot] = op->kind;
		break;
	}
	case ND_CLOSE:
		ret = close(fd);
		err = ret < 0 ? errno : 0;
		w->fd[op->slot] = -1;
		break;
	case ND_WAITANY:
	case ND_WAITALL: {
		struct ntsync_wait_args args;
		int fds[ND_MAX_WAIT];

		for (i = 0; i < op->n; i++)
			fds[i] = w->fd[op->objs[i]];
		memset(&args, 0, sizeof(args));
		args.objs = (uintptr_t)fds;
		args.count = op->n;
		args.index = SENTINEL;
		args.owner = op->a;
		args.flags = op->realtime ? NTSYNC_WAIT_REALTIME : 0;
		if (op->alert)
			args.alert = w->fd[op->alert - 1];
		ret = guarded_ioctl(w->dev[0], cmd[op->k], op->null ? NULL : &args, &err);
		snprintf(out, sizeof(out), " index=%08x", args.index);
		break;
	}
	default:
		ret = guarded_ioctl(fd, cmd[op->k], op->null ? NULL : arg, &err);
		snprintf(out, sizeof(out), " out=%08x,%08x", arg[0], arg[1]);
		break;
	}
	walk_state(w, st, sizeof(st));
	nd_line(o, "%s -> %s%s | %s", text, result(ret, err, op->k == ND_CREATE, eb, sizeof(eb)),
		out, st);
}

int nd_run_ops(struct nd_out *o, const struct nd_op *ops, unsigned int n)
{
	struct walk w;
	unsigned int i;

	guard_init();
	w.dev[0] = open("/dev/ntsync", O_RDWR | O_CLOEXEC);
	if (w.dev[0] < 0)
		return -1;
	w.dev[1] = open("/dev/ntsync", O_RDWR | O_CLOEXEC);
	if (w.dev[1] < 0) {
		close(w.dev[0]);
		return -1;
	}
	for (i = 0; i < ND_SLOTS; i++) {
		w.fd[i] = -1;
		w.kind[i] = ND_NONE;
	}
	for (i = 0; i < n; i++)
		walk_step(o, &w, &ops[i]);
	for (i = 0; i < ND_SLOTS; i++)
		if (w.fd[i] >= 0)
			close(w.fd[i]);
	close(w.dev[1]);
	close(w.dev[0]);
	return 0;
}

/* ------------------------------------------------------------ comparison */

/* The next line that is not a comment, without its newline; NULL at the end. */
static char *next_line(FILE *f, char **buf, size_t *cap)
{
	ssize_t n;

	while ((n = getline(buf, cap, f)) >= 0) {
		if (n && (*buf)[n - 1] == '\n')
			(*buf)[--n] = 0;
		if ((*buf)[0] != '#')
			return *buf;
	}
	return NULL;
}

/* The part of a case line before " -> ": what was asked. */
static size_t question_len(const char *line)
{
	const char *p = strstr(line, " -> ");

	return p ? (size_t)(p - line) : strlen(line);
}

static bool known_ok(const char *a, const char *b)
{
	size_t qa = question_len(a), qb = question_len(b), lb = strlen(b);
	static const char yes[] = " spec=yes";

	return qa == qb && !strncmp(a, b, qa) && strstr(a, ND_KNOWN_0002) &&
	       strstr(b, ND_KNOWN_0002) && lb >= sizeof(yes) - 1 &&
	       !strcmp(b + lb - (sizeof(yes) - 1), yes);
}

int nd_compare(FILE *a, FILE *b, FILE *report, unsigned long max_report,
	       struct nd_cmp *res)
{
	char *la = NULL, *lb = NULL, *pa, *pb;
	size_t ca = 0, cb = 0;
	unsigned long shown = 0;

	memset(res, 0, sizeof(*res));
	for (;;) {
		pa = next_line(a, &la, &ca);
		pb = next_line(b, &lb, &cb);
		if (!pa && !pb)
			break;
		res->lines++;
		if (pb && !strncmp(pb, "walk ", 5))
			res->walks++;
		else if (pb)
			res->matrix++;
		if (pa && pb && !strcmp(pa, pb))
			continue;
		if (pa && pb && known_ok(pa, pb)) {
			res->known++;
			continue;
		}
		res->differences++;
		if (report && shown++ < max_report)
			fprintf(report, "difference at line %lu:\n  reference: %s\n  this run:  %s\n",
				res->lines, pa ? pa : "(missing)", pb ? pb : "(missing)");
	}
	if (report && shown > max_report)
		fprintf(report, "... and %lu more differences\n", shown - max_report);
	free(la);
	free(lb);
	return res->differences ? 1 : 0;
}
