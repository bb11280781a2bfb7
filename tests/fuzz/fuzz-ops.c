// SPDX-License-Identifier: LGPL-2.1-or-later
/* ntsync-fuzz --model: the operations, valid and invalid, and the run. */

#include "fuzz.h"

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

int run_model(void)
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
	report_model(n, now_s() - start);
	return failures ? 1 : 0;
}
