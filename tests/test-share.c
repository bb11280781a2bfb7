// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Wine's way of sharing one instance among processes.
 *
 * wineserver opens /dev/ntsync once, creates every object itself and sends
 * the device and object descriptors to its client processes over UNIX
 * sockets (SCM_RIGHTS); the clients wait through the device they received,
 * with their Windows thread ids as mutex owners.  Here the test is the
 * server; its clients are this program again, started with fork and exec in
 * client mode (--client FD PROTO), so that they share nothing with the
 * server but what the socket carries.  A client receives commands (wait,
 * release, read, create, ...) over its socket, runs each with one ioctl and
 * replies; a wait first replies "started", and the server confirms from
 * /proc that the client sleeps inside ioctl() before it wakes it.
 *
 * One case puts a 32-bit process on objects made by a 64-bit one, as Wine's
 * 32-bit clients of a 64-bit wineserver: the i386 build of this program
 * (meson/build-static) runs it with the installed 64-bit build
 * (/usr/libexec/ntsync/tests/test-share, or $NTSYNC_SHARE_AMD64) as the
 * maker of the objects; the 64-bit build runs it with the i386 build as the
 * user when $NTSYNC_SHARE_I386 names one.  Without the other build the case
 * is skipped and says so.
 *
 * Every wait has a guard deadline, every read of a reply a poll() guard; a
 * client that hangs is killed by the case's teardown.
 */

#include "common.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Bump when struct cmd or struct reply change: peers must agree. */
#define PROTO "ntsync-share-1"
#define MAX_SLOTS 64
#define MAX_PEERS 16
#define NCLIENTS 8
/* Guard of a client's wait that the test expects to be woken. */
#define WAIT_GUARD_MS GUARD_MS
/* How long the server waits for a reply before it gives up. */
#define REPLY_GUARD_MS (GUARD_MS + 5000)
#define OWNER(i) (0x1000u + (uint32_t)(i))	/* a Windows thread id */
#define NO_SLOT 0xffffffffu

enum op {
	OP_ADD = 1,	/* the descriptors attached become slots */
	OP_OPEN,	/* open /dev/ntsync as a new slot */
	OP_CREATE_SEM,	/* on dev: a = count, b = max */
	OP_CREATE_MUTEX,	/* on dev: a = owner, b = count */
	OP_CREATE_EVENT,	/* on dev: a = manual, b = signaled */
	OP_GIVE,	/* send slot's descriptor back with the reply */
	OP_WAIT,	/* dev, all, slots[count], owner, alert, timeout_ms */
	OP_SEM_RELEASE,	/* slot, a = count; v1 = previous count */
	OP_MUTEX_UNLOCK,	/* slot, a = owner; v1 = previous count */
	OP_MUTEX_KILL,	/* slot, a = owner */
	OP_EVENT_SET,	/* slot; v1 = previous state */
	OP_SEM_READ,	/* slot; v1, v2 = count, max */
	OP_MUTEX_READ,	/* slot; v1, v2 = owner, count */
	OP_EVENT_READ,	/* slot; v1, v2 = manual, signaled */
	OP_CLOSE,	/* slot */
	OP_EXIT,
};

/* Only 32-bit fields: the same layout for i386 and amd64 peers. */
struct cmd {
	uint32_t op, dev, slot, all, count, owner, alert, timeout_ms, a, b;
	uint32_t slots[8];
};

struct reply {
	uint32_t kind;		/* REPLY_* */
	int32_t ret, err;	/* the ioctl's result and errno */
	uint32_t index, v1, v2;
	uint32_t slot;		/* first slot a command created */
	uint32_t ptr_bits;	/* REPLY_HELLO: 32 or 64 */
};

enum { REPLY_HELLO = 1, REPLY_STARTED, REPLY_DONE };

/* ---- descriptors over a socket ---- */

static ssize_t send_msg(int sock, const void *buf, size_t len,
			const int *fds, unsigned int nfds)
{
	char ctl[CMSG_SPACE(8 * sizeof(int))];
	struct iovec iov = { (void *)buf, len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (nfds) {
		struct cmsghdr *c;

		memset(ctl, 0, sizeof(ctl));
		msg.msg_control = ctl;
		msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	}
	return sendmsg(sock, &msg, MSG_NOSIGNAL);
}

/*
 * One whole message (SOCK_SEQPACKET) and its descriptors, close-on-exec,
 * within timeout_ms (-1: no limit).  Returns its length, 0 at the peer's
 * end, -1 with errno (ETIMEDOUT for the guard).
 */
static ssize_t recv_msg(int sock, void *buf, size_t len, int *fds,
			unsigned int *nfds, int timeout_ms)
{
	char ctl[CMSG_SPACE(8 * sizeof(int))];
	struct iovec iov = { buf, len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = ctl, .msg_controllen = sizeof(ctl) };
	struct pollfd pfd = { .fd = sock, .events = POLLIN };
	struct cmsghdr *c;
	ssize_t n;
	int r;

	*nfds = 0;
	do
		r = poll(&pfd, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		errno = ETIMEDOUT;
	if (r <= 0)
		return -1;
	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			*nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			memcpy(fds, CMSG_DATA(c), *nfds * sizeof(int));
		}
	}
	return n;
}

/* ---- the client: this program exec'd with --client FD PROTO ---- */

static int slots[MAX_SLOTS];
static unsigned int nslots;

static uint32_t add_slot(int fd)
{
	if (nslots == MAX_SLOTS) {
		close(fd);
		return NO_SLOT;
	}
	slots[nslots] = fd;
	return nslots++;
}

static int slot_fd(uint32_t slot)
{
	return slot < nslots ? slots[slot] : -1;
}

/* Run one command; the ioctl's result goes to rep. */
static void run_cmd(int sock, const struct cmd *c, const int *fds,
		    unsigned int nfds, struct reply *rep)
{
	int objs[8], give = -1;
	uint32_t u1 = POISON32, u2 = POISON32;
	int ret = 0;

	errno = 0;
	switch (c->op) {
	case OP_ADD:
		rep->slot = nslots;
		for (unsigned int i = 0; i < nfds; i++)
			if (add_slot(fds[i]) == NO_SLOT)
				ret = -1, errno = EMFILE;
		break;
	case OP_OPEN:
		ret = ntr_open();
		if (ret >= 0)
			rep->slot = add_slot(ret);
		break;
	case OP_CREATE_SEM:
	case OP_CREATE_MUTEX:
	case OP_CREATE_EVENT:
		ret = c->op == OP_CREATE_SEM ? ntr_create_sem(slot_fd(c->dev), c->a, c->b) :
		      c->op == OP_CREATE_MUTEX ? ntr_create_mutex(slot_fd(c->dev), c->a, c->b) :
		      ntr_create_event(slot_fd(c->dev), c->a, c->b);
		if (ret >= 0)
			rep->slot = add_slot(ret);
		break;
	case OP_GIVE:
		give = slot_fd(c->slot);
		break;
	case OP_WAIT: {
		struct reply started = { .kind = REPLY_STARTED };
		uint32_t n = c->count > 8 ? 8 : c->count;

		for (uint32_t i = 0; i < n; i++)
			objs[i] = slot_fd(c->slots[i]);
		if (send_msg(sock, &started, sizeof(started), NULL, 0) < 0)
			exit(4);
		ret = ntr_wait(slot_fd(c->dev), c->all, objs, n, c->owner,
				c->alert == NO_SLOT ? 0 : (uint32_t)slot_fd(c->alert),
				0, mono_in_ms(c->timeout_ms), &rep->index);
		break;
	}
	case OP_SEM_RELEASE:
		ret = ntr_sem_release(slot_fd(c->slot), c->a, &u1);
		break;
	case OP_MUTEX_UNLOCK:
		ret = ntr_mutex_unlock(slot_fd(c->slot), c->a, &u1);
		break;
	case OP_MUTEX_KILL:
		ret = ntr_mutex_kill(slot_fd(c->slot), c->a);
		break;
	case OP_EVENT_SET:
		ret = ntr_event_set(slot_fd(c->slot), &u1);
		break;
	case OP_SEM_READ:
		ret = ntr_sem_read(slot_fd(c->slot), &u1, &u2);
		break;
	case OP_MUTEX_READ:
		ret = ntr_mutex_read(slot_fd(c->slot), &u1, &u2);
		break;
	case OP_EVENT_READ:
		ret = ntr_event_read(slot_fd(c->slot), &u1, &u2);
		break;
	case OP_CLOSE:
		ret = close(slot_fd(c->slot));
		break;
	default:
		ret = -1;
		errno = ENOSYS;
	}
	rep->ret = ret;
	rep->err = ret < 0 ? errno : 0;
	rep->v1 = u1;
	rep->v2 = u2;
	if (send_msg(sock, rep, sizeof(*rep), give >= 0 ? &give : NULL,
		     give >= 0) < 0)
		exit(4);
}

static int client_main(const char *fd_arg, const char *proto)
{
	struct reply hello = { .kind = REPLY_HELLO,
			       .ptr_bits = (uint32_t)(sizeof(void *) * 8) };
	int sock = atoi(fd_arg);

	if (strcmp(proto, PROTO)) {
		fprintf(stderr, "test-share client: protocol %s, the server speaks %s\n",
			PROTO, proto);
		return 3;
	}
	if (send_msg(sock, &hello, sizeof(hello), NULL, 0) < 0)
		return 4;
	for (;;) {
		struct reply rep = { .kind = REPLY_DONE, .index = POISON32,
				     .slot = NO_SLOT };
		struct cmd c;
		int fds[8];
		unsigned int nfds;
		ssize_t n = recv_msg(sock, &c, sizeof(c), fds, &nfds, -1);

		if (n == 0)
			return 0;	/* the server went away */
		if (n != (ssize_t)sizeof(c))
			return 5;
		if (c.op == OP_EXIT)
			return 0;
		run_cmd(sock, &c, fds, nfds, &rep);
	}
}

/* ---- the server's side ---- */

struct peer {
	pid_t pid;
	int sock;
	unsigned int bits;	/* the client's pointer size */
	bool waiting;		/* a wait started, its result not collected */
	const char *path;
};

static struct peer peers[MAX_PEERS];
static unsigned int npeers;

/* Start path (this program or its other-architecture build) as a client. */
static struct peer *spawn(const char *path)
{
	struct peer *p;
	struct reply hello;
	int sv[2], fds[8];
	unsigned int nfds;
	char arg[16];

	assert_true(npeers < MAX_PEERS);
	p = &peers[npeers++];
	memset(p, 0, sizeof(*p));
	p->sock = -1;
	p->path = path;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	snprintf(arg, sizeof(arg), "%d", sv[1]);
	p->pid = fork();
	assert_true(p->pid >= 0);
	if (p->pid == 0) {
		/* exec: only the client's end of the socket survives, every
		 * ntsync descriptor of the server is close-on-exec */
		if (fcntl(sv[1], F_SETFD, 0) == 0)
			execl(path, "test-share", "--client", arg, PROTO, (char *)NULL);
		fprintf(stderr, "exec %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	close(sv[1]);
	p->sock = sv[0];
	if (recv_msg(p->sock, &hello, sizeof(hello), fds, &nfds,
		     REPLY_GUARD_MS) != (ssize_t)sizeof(hello) ||
	    hello.kind != REPLY_HELLO) {
		print_error("client %s (pid %d) did not start: %s\n", path,
			    (int)p->pid, strerror(errno));
		fail();
	}
	p->bits = hello.ptr_bits;
	return p;
}

/* Kill and reap every client (the teardown of each case). */
static int reap_peers(void **state)
{
	(void)state;
	for (unsigned int i = 0; i < npeers; i++) {
		if (peers[i].pid > 0) {
			kill(peers[i].pid, SIGKILL);
			while (waitpid(peers[i].pid, NULL, 0) < 0 && errno == EINTR)
				;
		}
		if (peers[i].sock >= 0)
			close(peers[i].sock);
	}
	npeers = 0;
	return 0;
}

static void reply_of(struct peer *p, struct reply *rep, int *fd)
{
	int fds[8];
	unsigned int nfds;
	ssize_t n = recv_msg(p->sock, rep, sizeof(*rep), fds, &nfds,
			     REPLY_GUARD_MS);

	if (n != (ssize_t)sizeof(*rep)) {
		print_error("no reply from client %d within %u ms: %s\n",
			    (int)p->pid, REPLY_GUARD_MS,
			    n == 0 ? "it exited" : strerror(errno));
		fail();
	}
	if (fd)
		*fd = nfds ? fds[0] : -1;
	else
		close_all(fds, nfds);
}

static void send_cmd(struct peer *p, const struct cmd *c, const int *fds,
		     unsigned int nfds)
{
	/* a client runs one command at a time: not while it waits */
	if (p->waiting) {
		print_error("test bug: command %u to client %d, which waits\n",
			    c->op, (int)p->pid);
		fail();
	}
	if (send_msg(p->sock, c, sizeof(*c), fds, nfds) != (ssize_t)sizeof(*c)) {
		print_error("sending to client %d: %s\n", (int)p->pid,
			    strerror(errno));
		fail();
	}
}

/* A command that replies at once (a wait: a poll); returns the reply. */
static struct reply call(struct peer *p, struct cmd c)
{
	struct reply rep;

	send_cmd(p, &c, NULL, 0);
	reply_of(p, &rep, NULL);
	if (c.op == OP_WAIT) {
		assert_int_equal(rep.kind, REPLY_STARTED);
		reply_of(p, &rep, NULL);
	}
	assert_int_equal(rep.kind, REPLY_DONE);
	return rep;
}

/* The command must succeed. */
static struct reply call_ok(struct peer *p, struct cmd c)
{
	struct reply rep = call(p, c);

	if (rep.ret < 0) {
		print_error("client %d: op %u failed: %s\n", (int)p->pid, c.op,
			    errname(rep.err));
		fail();
	}
	return rep;
}

/* Hand descriptors to a client; returns the slot of the first. */
static uint32_t give(struct peer *p, const int *fds, unsigned int n)
{
	struct cmd c = { .op = OP_ADD };
	struct reply rep;

	send_cmd(p, &c, fds, n);
	reply_of(p, &rep, NULL);
	assert_int_equal(rep.ret, 0);
	return rep.slot;
}

/* Take a descriptor back from a client (close-on-exec on our side). */
static int take(struct peer *p, uint32_t slot)
{
	struct cmd c = { .op = OP_GIVE, .slot = slot };
	struct reply rep;
	int fd;

	send_cmd(p, &c, NULL, 0);
	reply_of(p, &rep, &fd);
	assert_true(fd >= 0);
	return fd;
}

/*
 * ioctl's number as /proc/PID/syscall gives it for a client, by the
 * client's ABI.  A client of this program's own ABI: SYS_ioctl (16 on
 * x86-64, 29 on arm64 and riscv64, 5015 on mips64, 54 on i386, 32-bit ARM,
 * powerpc and s390x).  The other ABI of a 64-bit kernel with a compat ABI,
 * seen from either side: on x86 a 64-bit client's is x86-64's 16 and a
 * 32-bit one's i386's 54; on ARM a 64-bit client's is arm64's 29 and a
 * 32-bit one's 54.  (A 32-bit build watching a 64-bit client needs the
 * 64-bit number: SYS_ioctl is its own ABI's.)
 */
#if defined(__x86_64__) || defined(__i386__)
#define IOCTL_NR_64 16
#define IOCTL_NR_32 54
#elif defined(__aarch64__) || defined(__arm__)
#define IOCTL_NR_64 29
#define IOCTL_NR_32 54
#else
#define IOCTL_NR_64 SYS_ioctl
#define IOCTL_NR_32 SYS_ioctl
#endif

static long ioctl_nr(unsigned int bits)
{
	if (bits == 8 * sizeof(void *))
		return SYS_ioctl;
	return bits == 64 ? IOCTL_NR_64 : IOCTL_NR_32;
}

/* Is the (single-threaded) client, of ABI BITS, asleep inside ioctl()? */
static bool sleeps_in_ioctl(pid_t pid, unsigned int bits)
{
	char path[64], buf[512];
	const char *s;
	ssize_t n;
	long nr;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	s = strrchr(buf, ')');
	if (!s || s[1] != ' ' || s[2] != 'S')
		return false;
	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;	/* no ptrace access: the state must do */
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = 0;
	nr = atol(buf);
	return nr == ioctl_nr(bits);
}

/* Start a wait in the client and return once it sleeps in the driver. */
static void start_wait(struct peer *p, uint32_t dev, bool all,
		       const uint32_t *objs, uint32_t count, uint32_t owner,
		       uint32_t alert)
{
	struct cmd c = { .op = OP_WAIT, .dev = dev, .all = all,
			 .count = count, .owner = owner, .alert = alert,
			 .timeout_ms = WAIT_GUARD_MS };
	uint64_t end;
	struct reply rep;

	memcpy(c.slots, objs, count * sizeof(*objs));
	send_cmd(p, &c, NULL, 0);
	p->waiting = true;
	reply_of(p, &rep, NULL);
	assert_int_equal(rep.kind, REPLY_STARTED);
	end = now_ns(CLOCK_MONOTONIC) + GUARD_MS * NSEC_PER_MSEC;
	while (!sleeps_in_ioctl(p->pid, p->bits)) {
		struct pollfd pfd = { .fd = p->sock, .events = POLLIN };

		if (poll(&pfd, 1, 0) == 1) {
			print_error("client %d: its wait returned at once\n",
				    (int)p->pid);
			fail();
		}
		if (now_ns(CLOCK_MONOTONIC) > end) {
			print_error("client %d did not block in its wait\n",
				    (int)p->pid);
			fail();
		}
		usleep(500);
	}
}

/*
 * The client's wait is still asleep: no reply within SHORT_MS (a wrong wake
 * would reply at once; waiting longer only makes the check more sensitive)
 * and the client sleeps in ioctl() again within the guard (a wake inside
 * the driver that finds nothing to take may run it for a moment).
 */
static void assert_still_waiting(struct peer *p)
{
	struct pollfd pfd = { .fd = p->sock, .events = POLLIN };
	uint64_t end;
	int r;

	do
		r = poll(&pfd, 1, SHORT_MS);
	while (r < 0 && errno == EINTR);
	if (r != 0) {
		print_error("client %d: its wait ended, it should still sleep\n",
			    (int)p->pid);
		fail();
	}
	end = now_ns(CLOCK_MONOTONIC) + GUARD_MS * NSEC_PER_MSEC;
	while (!sleeps_in_ioctl(p->pid, p->bits)) {
		if (now_ns(CLOCK_MONOTONIC) > end) {
			print_error("client %d no longer sleeps in its wait\n",
				    (int)p->pid);
			fail();
		}
		usleep(500);
	}
}

/* Collect the result of a wait started with start_wait(). */
static void wait_result(struct peer *p, int want_err, uint32_t want_index)
{
	struct reply rep;

	reply_of(p, &rep, NULL);
	p->waiting = false;
	assert_int_equal(rep.kind, REPLY_DONE);
	if (want_err ? (rep.ret != -1 || rep.err != want_err) : rep.ret != 0) {
		print_error("client %d: wait returned %d (%s), expected %s\n",
			    (int)p->pid, rep.ret, errname(rep.err),
			    want_err ? errname(want_err) : "success");
		fail();
	}
	assert_int_equal(rep.index, want_index);
}

/* Start n clients, each with the device and the objects in fds[1..]. */
static void spawn_with(struct peer **out, unsigned int n, const int *fds,
		       unsigned int nfds)
{
	for (unsigned int i = 0; i < n; i++) {
		out[i] = spawn("/proc/self/exe");
		/* slot 0: the device, then the objects in order */
		assert_int_equal(give(out[i], fds, nfds), 0);
	}
}

/* ---- the cases ---- */

/*
 * Eight exec'd clients with distinct owners: all sleep on one semaphore and
 * one release wakes them all; then a mutex goes from owner to owner in
 * queue order, each unlock done by the process that owns it.
 */
/* §dev.instance */
TEST(eight_clients_distinct_owners)
{
	int dev = DEV_OPEN();
	int sem = NEW_SEM(dev, 0, NCLIENTS);
	int mtx = NEW_MUTEX(dev, 0, 0);
	int fds[3] = { dev, sem, mtx };
	struct peer *c[NCLIENTS];
	const uint32_t s_sem = 1, s_mtx = 2;
	struct reply r;

	spawn_with(c, NCLIENTS, fds, 3);
	for (unsigned int i = 0; i < NCLIENTS; i++)
		start_wait(c[i], 0, false, &s_sem, 1, OWNER(i), NO_SLOT);
	ASSERT_SEM_RELEASE(sem, NCLIENTS, 0, 0, NCLIENTS);
	for (unsigned int i = 0; i < NCLIENTS; i++)
		wait_result(c[i], 0, 0);

	/* client 0 takes the mutex (a poll), the others queue on it */
	r = call_ok(c[0], (struct cmd){ .op = OP_WAIT, .dev = 0, .count = 1,
		.slots = { s_mtx }, .owner = OWNER(0), .alert = NO_SLOT });
	assert_int_equal(r.index, 0);
	ASSERT_MUTEX(mtx, OWNER(0), 1);
	/* nobody but the owner may unlock it (a client only takes commands
	 * while it is not waiting) */
	r = call(c[1], (struct cmd){ .op = OP_MUTEX_UNLOCK, .slot = s_mtx,
				     .a = OWNER(1) });
	assert_int_equal(r.err, EPERM);
	assert_int_equal(r.ret, -1);
	CHECK_ERR(ntr_mutex_unlock(mtx, OWNER(NCLIENTS), NULL), EPERM);
	for (unsigned int i = 1; i < NCLIENTS; i++)
		start_wait(c[i], 0, false, &s_mtx, 1, OWNER(i), NO_SLOT);
	for (unsigned int i = 0; i + 1 < NCLIENTS; i++) {
		r = call_ok(c[i], (struct cmd){ .op = OP_MUTEX_UNLOCK,
						.slot = s_mtx, .a = OWNER(i) });
		assert_int_equal(r.v1, 1);
		wait_result(c[i + 1], 0, 0);
		ASSERT_MUTEX(mtx, OWNER(i + 1), 1);
		for (unsigned int j = i + 2; j < NCLIENTS; j++)
			assert_still_waiting(c[j]);
	}
	call_ok(c[NCLIENTS - 1], (struct cmd){ .op = OP_MUTEX_UNLOCK,
		.slot = s_mtx, .a = OWNER(NCLIENTS - 1) });
	ASSERT_MUTEX(mtx, 0, 0);
	close_all(fds, 3);
}

/* A client's alertable wait is ended by another process's EVENT_SET. */
/* §dev.instance */
TEST(alert_from_another_process)
{
	int dev = DEV_OPEN();
	int sem = NEW_SEM(dev, 0, 1);
	int alert = NEW_EVENT(dev, 1, 0);
	int ev = NEW_EVENT(dev, 0, 0);
	int fds[4] = { dev, sem, alert, ev };
	const uint32_t objs[2] = { 1, 3 };
	struct peer *c[2];
	struct reply r;

	spawn_with(c, 2, fds, 4);
	start_wait(c[0], 0, false, objs, 2, OWNER(0), 2);
	/* wait-all with the same alert, in the other client */
	start_wait(c[1], 0, true, objs, 2, OWNER(1), 2);
	/* both are asleep; a third process sets the alert */
	{
		struct peer *setter = spawn("/proc/self/exe");

		give(setter, &alert, 1);
		r = call_ok(setter, (struct cmd){ .op = OP_EVENT_SET, .slot = 0 });
		assert_int_equal(r.v1, 0);
	}
	/* index == count: woken by the alert; nothing else acquired */
	wait_result(c[0], 0, 2);
	wait_result(c[1], 0, 2);
	ASSERT_SEM(sem, 0, 1);
	ASSERT_EVENT(ev, 0, 0);
	ASSERT_EVENT(alert, 1, 1);
	close_all(fds, 4);
}

/*
 * A client is killed while it owns two mutexes.  The driver knows nothing
 * of processes: the waiters in other processes sleep on until the server
 * marks the mutexes abandoned with MUTEX_KILL, as wineserver does when a
 * thread dies; then each gets EOWNERDEAD, and a later acquisition is
 * ordinary again.
 */
/* §dev.instance */
TEST(killed_owner_mutex_kill_wakes_others_with_eownerdead)
{
	int dev = DEV_OPEN();
	int m1 = NEW_MUTEX(dev, 0, 0);
	int m2 = NEW_MUTEX(dev, 0, 0);
	int fds[3] = { dev, m1, m2 };
	const uint32_t both[2] = { 1, 2 };
	struct peer *c[4];
	int status;

	spawn_with(c, 4, fds, 3);
	/* client 0 owns both (a poll over both: wait-all) */
	call_ok(c[0], (struct cmd){ .op = OP_WAIT, .dev = 0, .all = 1,
		.count = 2, .slots = { 1, 2 }, .owner = OWNER(0),
		.alert = NO_SLOT });
	ASSERT_MUTEX(m1, OWNER(0), 1);
	ASSERT_MUTEX(m2, OWNER(0), 1);
	start_wait(c[1], 0, false, &both[0], 1, OWNER(1), NO_SLOT);
	start_wait(c[2], 0, false, &both[1], 1, OWNER(2), NO_SLOT);
	start_wait(c[3], 0, false, both, 2, OWNER(3), NO_SLOT);

	assert_int_equal(kill(c[0]->pid, SIGKILL), 0);
	assert_int_equal(waitpid(c[0]->pid, &status, 0), c[0]->pid);
	c[0]->pid = 0;
	assert_true(WIFSIGNALED(status));
	/* its death alone changes nothing */
	ASSERT_MUTEX(m1, OWNER(0), 1);
	for (unsigned int i = 1; i < 4; i++)
		assert_still_waiting(c[i]);

	/* the server: "thread OWNER(0) died" */
	CHECK_ERR(ntr_mutex_kill(m1, OWNER(1)), EPERM);
	assert_int_equal(CHECK_OK(ntr_mutex_kill(m1, OWNER(0))), 0);
	wait_result(c[1], EOWNERDEAD, 0);
	ASSERT_MUTEX(m1, OWNER(1), 1);
	assert_int_equal(CHECK_OK(ntr_mutex_kill(m2, OWNER(0))), 0);
	wait_result(c[2], EOWNERDEAD, 0);
	ASSERT_MUTEX(m2, OWNER(2), 1);
	assert_still_waiting(c[3]);
	/* an ordinary hand-over afterwards: success, not EOWNERDEAD */
	call_ok(c[1], (struct cmd){ .op = OP_MUTEX_UNLOCK, .slot = 1,
				    .a = OWNER(1) });
	wait_result(c[3], 0, 0);
	ASSERT_MUTEX(m1, OWNER(3), 1);
	close_all(fds, 3);
}

/*
 * The server closes its descriptors of the device and of the objects; the
 * clients' copies keep the instance and the objects alive, and their waits
 * and wakes through it go on working.
 */
/* §dev.instance */
TEST(objects_outlive_the_servers_descriptors)
{
	int dev = DEV_OPEN();
	int sem = NEW_SEM(dev, 0, 5);
	int ev = NEW_EVENT(dev, 1, 0);
	int fds[3] = { dev, sem, ev };
	const uint32_t s_sem = 1, s_ev = 2;
	struct peer *c[2];
	struct reply r;

	spawn_with(c, 2, fds, 3);
	close_all(fds, 3);
	start_wait(c[0], 0, false, &s_sem, 1, OWNER(0), NO_SLOT);
	r = call_ok(c[1], (struct cmd){ .op = OP_SEM_RELEASE, .slot = s_sem,
					.a = 2 });
	assert_int_equal(r.v1, 0);
	wait_result(c[0], 0, 0);
	r = call_ok(c[1], (struct cmd){ .op = OP_SEM_READ, .slot = s_sem });
	assert_int_equal(r.v1, 1);
	assert_int_equal(r.v2, 5);
	/* the instance lives on in the clients: one creates an object on
	 * it, the other waits on it through its own copy of the device */
	r = call_ok(c[0], (struct cmd){ .op = OP_CREATE_SEM, .dev = 0, .a = 1,
					.b = 1 });
	fds[0] = take(c[0], r.slot);
	assert_int_equal(give(c[1], fds, 1), 3);
	close(fds[0]);
	r = call_ok(c[1], (struct cmd){ .op = OP_WAIT, .dev = 0, .count = 2,
		.slots = { s_sem, 3 }, .owner = OWNER(1), .alert = NO_SLOT });
	assert_int_equal(r.index, 0);
	r = call_ok(c[1], (struct cmd){ .op = OP_WAIT, .dev = 0, .count = 2,
		.slots = { s_sem, 3 }, .owner = OWNER(1), .alert = NO_SLOT });
	assert_int_equal(r.index, 1);
	/* and the server's event */
	start_wait(c[1], 0, false, &s_ev, 1, OWNER(1), NO_SLOT);
	call_ok(c[0], (struct cmd){ .op = OP_EVENT_SET, .slot = s_ev });
	wait_result(c[1], 0, 0);
	r = call_ok(c[1], (struct cmd){ .op = OP_EVENT_READ, .slot = s_ev });
	assert_int_equal(r.v1, 1);
	assert_int_equal(r.v2, 1);
}

/* ---- 32-bit and 64-bit processes on the same objects ---- */

/* ELF class and machine of path: 64 for x86-64, 32 for i386, else 0. */
static unsigned int elf_bits(const char *path)
{
	unsigned char h[20];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, h, sizeof(h));
	close(fd);
	if (n != (ssize_t)sizeof(h) || memcmp(h, "\177ELF", 4))
		return 0;
	if (h[4] == 2 && h[18] == 62)
		return 64;
	if (h[4] == 1 && h[18] == 3)
		return 32;
	return 0;
}

/* The other architecture's build of this program, or NULL with why. */
static const char *other_build(char *why, size_t len)
{
	const bool self64 = sizeof(void *) == 8;
	const char *var = self64 ? "NTSYNC_SHARE_I386" : "NTSYNC_SHARE_AMD64";
	const char *path = getenv(var);
	unsigned int want = self64 ? 32 : 64;

	if (!path || !*path)
		path = self64 ? NULL : "/usr/libexec/ntsync/tests/test-share";
	if (!path) {
		snprintf(why, len, "no i386 build of test-share to run against "
			 "(set NTSYNC_SHARE_I386=PATH); the i386 run of the "
			 "suite covers this case with the installed 64-bit build");
		return NULL;
	}
	if (elf_bits(path) != want) {
		snprintf(why, len, "%s (%s) is not a %u-bit x86 build of "
			 "test-share%s", path, var, want,
			 access(path, X_OK) ? ": it does not exist" : "");
		return NULL;
	}
	return path;
}

/*
 * A 64-bit process (the maker, like a 64-bit wineserver) opens the instance
 * and creates the objects; a 32-bit process (the user, like a 32-bit Wine
 * client) gets them, reads them, waits on them and wakes the maker.  The
 * test itself only carries descriptors between the two.
 */
/* §dev.instance */
TEST(i386_client_on_objects_of_a_64bit_process)
{
	char why[256];
	const char *other = other_build(why, sizeof(why));
	struct peer *maker, *user;
	int fds[5];
	uint32_t slot;
	struct reply r;
	const uint32_t s_sem = 1, s_mtx = 2, s_ev = 3, s_alert = 4;
	const uint32_t pair[2] = { 1, 2 };

	if (!other) {
		printf("%s\n", why);
		skip();
	}
	if (sizeof(void *) == 8) {
		maker = spawn("/proc/self/exe");
		user = spawn(other);
	} else {
		maker = spawn(other);
		user = spawn("/proc/self/exe");
	}
	assert_int_equal(maker->bits, 64);
	assert_int_equal(user->bits, 32);

	/* the maker: instance (slot 0) and objects (slots 1-4) */
	r = call_ok(maker, (struct cmd){ .op = OP_OPEN });
	assert_int_equal(r.slot, 0);
	r = call_ok(maker, (struct cmd){ .op = OP_CREATE_SEM, .a = 0, .b = 2 });
	assert_int_equal(r.slot, s_sem);
	r = call_ok(maker, (struct cmd){ .op = OP_CREATE_MUTEX, .a = OWNER(64), .b = 1 });
	assert_int_equal(r.slot, s_mtx);
	r = call_ok(maker, (struct cmd){ .op = OP_CREATE_EVENT, .a = 0, .b = 0 });
	assert_int_equal(r.slot, s_ev);
	r = call_ok(maker, (struct cmd){ .op = OP_CREATE_EVENT, .a = 1, .b = 0 });
	assert_int_equal(r.slot, s_alert);
	for (unsigned int i = 0; i < 5; i++)
		fds[i] = take(maker, i);
	slot = give(user, fds, 5);
	assert_int_equal(slot, 0);
	close_all(fds, 5);

	/* the 32-bit user reads what the 64-bit maker made */
	r = call_ok(user, (struct cmd){ .op = OP_SEM_READ, .slot = s_sem });
	assert_int_equal(r.v1, 0);
	assert_int_equal(r.v2, 2);
	r = call_ok(user, (struct cmd){ .op = OP_MUTEX_READ, .slot = s_mtx });
	assert_int_equal(r.v1, OWNER(64));
	assert_int_equal(r.v2, 1);
	r = call_ok(user, (struct cmd){ .op = OP_EVENT_READ, .slot = s_alert });
	assert_int_equal(r.v1, 1);
	assert_int_equal(r.v2, 0);

	/* the user's wait-all sleeps until the maker releases both */
	start_wait(user, 0, true, pair, 2, OWNER(32), s_alert);
	r = call_ok(maker, (struct cmd){ .op = OP_SEM_RELEASE, .slot = s_sem, .a = 1 });
	assert_int_equal(r.v1, 0);
	assert_still_waiting(user);
	r = call_ok(maker, (struct cmd){ .op = OP_MUTEX_UNLOCK, .slot = s_mtx,
					 .a = OWNER(64) });
	assert_int_equal(r.v1, 1);
	wait_result(user, 0, 0);
	r = call_ok(maker, (struct cmd){ .op = OP_MUTEX_READ, .slot = s_mtx });
	assert_int_equal(r.v1, OWNER(32));
	assert_int_equal(r.v2, 1);
	r = call_ok(maker, (struct cmd){ .op = OP_SEM_READ, .slot = s_sem });
	assert_int_equal(r.v1, 0);

	/* the maker's alertable wait is ended by the user */
	start_wait(maker, 0, false, &s_ev, 1, OWNER(64), s_alert);
	r = call_ok(user, (struct cmd){ .op = OP_EVENT_SET, .slot = s_alert });
	assert_int_equal(r.v1, 0);
	wait_result(maker, 0, 1);
	/* and its plain wait by the user's set of the auto-reset event */
	start_wait(maker, 0, false, &s_ev, 1, OWNER(64), NO_SLOT);
	call_ok(user, (struct cmd){ .op = OP_EVENT_SET, .slot = s_ev });
	wait_result(maker, 0, 0);
	r = call_ok(user, (struct cmd){ .op = OP_EVENT_READ, .slot = s_ev });
	assert_int_equal(r.v2, 0);

	/* the 32-bit user abandons its mutex for the 64-bit maker */
	call_ok(user, (struct cmd){ .op = OP_MUTEX_KILL, .slot = s_mtx, .a = OWNER(32) });
	r = call(maker, (struct cmd){ .op = OP_WAIT, .count = 1,
		.slots = { s_mtx }, .owner = OWNER(64), .alert = NO_SLOT });
	assert_int_equal(r.ret, -1);
	assert_int_equal(r.err, EOWNERDEAD);
	assert_int_equal(r.index, 0);
}

int main(int argc, char **argv)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(eight_clients_distinct_owners, reap_peers),
		cmocka_unit_test_teardown(alert_from_another_process, reap_peers),
		cmocka_unit_test_teardown(killed_owner_mutex_kill_wakes_others_with_eownerdead,
					  reap_peers),
		cmocka_unit_test_teardown(objects_outlive_the_servers_descriptors,
					  reap_peers),
		cmocka_unit_test_teardown(i386_client_on_objects_of_a_64bit_process,
					  reap_peers),
	};

	if (argc == 4 && !strcmp(argv[1], "--client"))
		return client_main(argv[2], argv[3]);
	return ntsync_test_main(argc, argv, "share", tests, ARRAY_LEN(tests),
				true);
}
