// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ntsync-info --pid / --wine: is this Wine process using ntsync, and if
 * not, which link of the chain is broken?
 *
 *   1 driver       the driver is there and /dev/ntsync opens
 *   2 build        its wineserver and ntdll.so have the backend (info-elf.c)
 *   3 start        its wineserver started after the driver was loaded
 *   4 environment  no variable turned it off (or failed to turn it on)
 *   5 visibility   /dev/ntsync exists where the wineserver looks for it
 *
 * The direct evidence is the process's descriptors: a Wine process that
 * uses ntsync holds /dev/ntsync open (wineserver opens it at start,
 * server/inproc_sync.c; every client receives it from the server,
 * dlls/ntdll/unix/server.c) and its objects ("anon_inode:ntsync").  The
 * links say why not.  Everything is read from /proc (and /sys, /dev) under
 * NTSYNC_INFO_SYSROOT, so the tests run on recorded layouts.  What the
 * caller may not read (another user's process without root: environ, maps,
 * fd, exe, root and ns are guarded by ptrace's access check) is reported
 * as unknown with its errno, never guessed.
 */

#include "info.h"

#include <ctype.h>
#include <dirent.h>
#include <limits.h>

const char *const link_names[NLINKS] = {
	"driver", "build", "start", "environment", "visibility",
};

/* ---- /proc under the root ---- */

/*
 * Recorded layouts are made and read as root, where no mode bit makes a
 * file unreadable; so under NTSYNC_INFO_SYSROOT (only there) a file
 * NAME.errno next to NAME, holding "EACCES" (or EPERM, ENOENT), makes
 * reading NAME fail with that error, as it does for a non-root caller
 * looking at another user's process.
 */
static int recorded_errno(const char *path)
{
	char p[PATH_MAX], line[32];

	if (!*info.root)
		return 0;
	fmt(p, sizeof(p), "%s.errno", path);
	if (!tc_read_line(p, line, sizeof(line)))
		return 0;
	if (!strcmp(line, "EACCES"))
		return EACCES;
	if (!strcmp(line, "EPERM"))
		return EPERM;
	if (!strcmp(line, "ENOENT"))
		return ENOENT;
	return EIO;
}

/* ROOT/proc/PID/NAME into buf; the recorded error, if any. */
static int proc_path(char *buf, size_t len, int pid, const char *name)
{
	if (pid)
		fmt(buf, len, "%s/proc/%d/%s", info.root, pid, name);
	else
		fmt(buf, len, "%s/proc/self/%s", info.root, name);
	return recorded_errno(buf);
}

/* A /proc file, NUL-terminated, at most len - 1 bytes; -errno. */
static ssize_t proc_read(int pid, const char *name, char *buf, size_t len)
{
	char path[PATH_MAX];
	size_t got = 0;
	int err, fd;

	buf[0] = '\0';
	err = proc_path(path, sizeof(path), pid, name);
	if (err)
		return -err;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (got + 1 < len) {
		ssize_t n = read(fd, buf + got, len - 1 - got);

		if (n < 0) {
			err = errno;
			close(fd);
			return -err;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	return (ssize_t)got;
}

static int proc_readlink(int pid, const char *name, char *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t n;
	int err;

	buf[0] = '\0';
	err = proc_path(path, sizeof(path), pid, name);
	if (err)
		return -err;
	n = readlink(path, buf, len - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

/* "Permission denied (another user's process: run as root)" */
static const char *why_unreadable(int err)
{
	static char buf[TEXT];

	if (err == EACCES || err == EPERM)
		fmt(buf, sizeof(buf), "%s (another user's process, or ptrace "
		    "policy: run as root)", strerror(err));
	else
		fmt(buf, sizeof(buf), "%s", strerror(err));
	return buf;
}

/* ---- one process ---- */

#define ENV_MAX (1 << 20)

struct proc {
	int pid;
	bool exists;
	char state;
	int ppid;
	unsigned long long start;	/* clock ticks after boot */
	char comm[32];
	char exe[PATH_MAX];		/* "" when unreadable */
	int exe_err;
	char ntdll[PATH_MAX];		/* from maps, "" when none */
	int maps_err;
	char *env;			/* NUL-separated, env_len bytes */
	size_t env_len;
	int env_err;
	unsigned int device_fds, object_fds;
	int fd_err;
	bool wineserver, wine;
};

static void proc_free(struct proc *p)
{
	free(p->env);
	p->env = NULL;
}

/* stat: "pid (comm) S ppid ... starttime(22)"; comm may hold spaces. */
static bool read_stat(struct proc *p)
{
	char buf[1024], *s;
	unsigned long long start = 0;
	int ppid = 0;
	char state = '?';

	if (proc_read(p->pid, "stat", buf, sizeof(buf)) <= 0)
		return false;
	s = strrchr(buf, ')');
	if (!s)
		return false;
	/* fields 3 (state), 4 (ppid), then 5..21 skipped, 22 starttime */
	if (sscanf(s + 1, " %c %d %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
		   "%*s %*s %*s %*s %*s %*s %*s %llu", &state, &ppid, &start) != 3)
		return false;
	p->state = state;
	p->ppid = ppid;
	p->start = start;
	return true;
}

static bool basename_is(const char *path, const char *prefix)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return !strncmp(b, prefix, strlen(prefix));
}

static void scan_fds(struct proc *p)
{
	char dir[PATH_MAX], link[PATH_MAX], target[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int err;

	err = proc_path(dir, sizeof(dir), p->pid, "fd");
	if (err) {
		p->fd_err = err;
		return;
	}
	d = opendir(dir);
	if (!d) {
		p->fd_err = errno;
		return;
	}
	while ((de = readdir(d))) {
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		fmt(link, sizeof(link), "%s/%s", dir, de->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = '\0';
		if (!strcmp(target, info.path))
			p->device_fds++;
		else if (!strcmp(target, "anon_inode:ntsync"))
			p->object_fds++;
	}
	closedir(d);
}

/* Only what every probe needs; false when the process does not exist. */
static bool load_proc(int pid, struct proc *p, bool full)
{
	char buf[PATH_MAX + 256];
	char path[PATH_MAX];
	ssize_t n;
	FILE *f;
	int err;

	memset(p, 0, sizeof(*p));
	p->pid = pid;
	if (!read_stat(p))
		return false;
	p->exists = true;
	proc_read(pid, "comm", p->comm, sizeof(p->comm));
	p->comm[strcspn(p->comm, "\n")] = '\0';
	p->exe_err = -proc_readlink(pid, "exe", p->exe, sizeof(p->exe));
	p->wineserver = !strcmp(p->comm, "wineserver") ||
		basename_is(p->exe, "wineserver");
	if (!full && !p->wineserver)
		return true;

	err = proc_path(path, sizeof(path), pid, "maps");
	f = err ? NULL : fopen(path, "re");
	if (!f) {
		p->maps_err = err ? err : errno;
	} else {
		while (fgets(buf, sizeof(buf), f)) {
			char *s = strchr(buf, '/');

			buf[strcspn(buf, "\n")] = '\0';
			if (s && basename_is(s, "ntdll.so") &&
			    !strcmp(strrchr(s, '/'), "/ntdll.so")) {
				fmt(p->ntdll, sizeof(p->ntdll), "%s", s);
				break;
			}
		}
		fclose(f);
	}
	p->wine = p->wineserver || p->ntdll[0] ||
		basename_is(p->exe, "wine");

	p->env = tc_xcalloc(1, ENV_MAX);
	n = proc_read(pid, "environ", p->env, ENV_MAX);
	if (n < 0)
		p->env_err = (int)-n;
	else
		p->env_len = (size_t)n;
	scan_fds(p);
	return true;
}

static const char *env_get(const struct proc *p, const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; p->env && i < p->env_len;) {
		const char *e = p->env + i;

		if (!strncmp(e, name, len) && e[len] == '=')
			return e + len + 1;
		i += strlen(e) + 1;
	}
	return NULL;
}

/* ---- the time the driver came, and when a process started ---- */

static double boot_time(void)
{
	char path[PATH_MAX], line[TEXT];
	double bt = -1;
	FILE *f;

	fmt(path, sizeof(path), "%s/proc/stat", info.root);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "btime ", 6))
			bt = strtod(line + 6, NULL);
	fclose(f);
	return bt;
}

/* Wall-clock start of a process: btime + starttime / CLK_TCK. */
static double start_time(const struct proc *p)
{
	double bt = boot_time();
	long hz = sysconf(_SC_CLK_TCK);

	if (bt < 0 || hz <= 0)
		return -1;
	return bt + (double)p->start / (double)hz;
}

/*
 * When the driver was loaded.  The kernel keeps no load time for a
 * module (/proc/modules and /sys/module/NAME have none).  What it does
 * keep: devtmpfs creates /dev/ntsync when the driver registers its misc
 * device (misc_register() in the module's init), and a devtmpfs node's
 * mtime is set then and not changed by opening, ioctls or udev's chmod
 * (which moves ctime only).  So /dev/ntsync's mtime is the load time, to
 * the clock's precision, unless someone made the node by hand (mknod) or
 * the wall clock was stepped since (btime is recomputed from the current
 * clock, the mtime is not).  sysfs is no good here: kernfs dates an inode
 * when it is first looked up, not when the module came, so the mtime of
 * /sys/module/ntsync is only "no earlier than".  A driver built into the
 * kernel was there from boot.
 */
static double load_time(char *src, size_t len)
{
	char path[PATH_MAX];
	struct stat st;

	if (!info.module_loaded && !strcmp(info.driver_kind, "built-in")) {
		fmt(src, len, "the driver is built into the kernel: there "
		    "since boot");
		return 0;
	}
	fmt(path, sizeof(path), "%s%s", info.root, info.path);
	if (stat(path, &st) != 0) {
		fmt(src, len, "%s: %s", info.path, strerror(errno));
		return -1;
	}
	fmt(src, len, "the driver created %s", info.path);
	return (double)st.st_mtim.tv_sec + st.st_mtim.tv_nsec / 1e9;
}

static void fmt_time(double t, char *buf, size_t len)
{
	time_t s = (time_t)t;
	struct tm tm;

	if (t < 0 || !gmtime_r(&s, &tm)) {
		fmt(buf, len, "unknown");
		return;
	}
	strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

/* ---- which wineserver serves a client ---- */

static bool same_prefix(const struct proc *a, const struct proc *b)
{
	const char *pa = env_get(a, "WINEPREFIX"), *pb = env_get(b, "WINEPREFIX");
	const char *ha = env_get(a, "HOME"), *hb = env_get(b, "HOME");

	if (pa || pb)
		return pa && pb && !strcmp(pa, pb);
	return ha && hb && !strcmp(ha, hb);	/* both ~/.wine */
}

/*
 * The wineserver of a client: the one with the same WINEPREFIX (or, both
 * without, the same HOME); failing a readable environment, the only
 * wineserver there is.  0 when none is found.
 */
static int find_server(const struct proc *client, char *how, size_t len)
{
	char dir[PATH_MAX];
	struct dirent *de;
	int match = 0, only = 0, count = 0;
	DIR *d;

	fmt(dir, sizeof(dir), "%s/proc", info.root);
	d = opendir(dir);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		struct proc s;

		if (!ntsync_users_is_pid_name(de->d_name))
			continue;
		/* a wineserver is loaded in full */
		if (!load_proc(atoi(de->d_name), &s, false) || !s.wineserver ||
		    s.state == 'Z') {
			proc_free(&s);
			continue;
		}
		count++;
		only = s.pid;
		if (!match && same_prefix(client, &s))
			match = s.pid;
		proc_free(&s);
	}
	closedir(d);
	if (match) {
		fmt(how, len, "the wineserver with the same %s",
		    env_get(client, "WINEPREFIX") ? "WINEPREFIX" : "HOME");
		return match;
	}
	if (count == 1 && client->env_err) {
		fmt(how, len, "the only wineserver (the environment that "
		    "would tell is unreadable)");
		return only;
	}
	fmt(how, len, count ? "%d wineservers, none with this WINEPREFIX" :
	    "no wineserver process found", count);
	return 0;
}

/* ---- link 2: the binaries ---- */

/* Open a file of process pid: the real /proc/PID/exe where possible (it
 * reaches files in other mount namespaces and deleted ones), else the
 * path in the process's root. */
static void check_binary(int pid, const char *file, bool is_exe,
			 struct wine_binary *b)
{
	char path[PATH_MAX * 2];
	char clean[PATH_MAX];

	fmt(clean, sizeof(clean), "%s", file);
	if (strlen(clean) > 10 &&
	    !strcmp(clean + strlen(clean) - 10, " (deleted)"))
		clean[strlen(clean) - 10] = '\0';
	if (is_exe && !*info.root) {
		fmt(path, sizeof(path), "/proc/%d/exe", pid);
		if (elf_check(path, b) == 0)
			goto done;
	}
	fmt(path, sizeof(path), "%s/proc/%d/root%s", info.root, pid, clean);
	if (elf_check(path, b) != 0 && !*info.root)
		elf_check(clean, b);
done:
	fmt(b->path, sizeof(b->path), "%s", clean);
	if (is_exe)
		b->role = "wineserver";
}

/* For a wineserver alone: its ntdll.so beside it, in an install
 * (PREFIX/bin/wineserver, PREFIX/lib{,64}/wine/ARCH-unix/ntdll.so) or a
 * build tree (server/wineserver, dlls/ntdll/ntdll.so). */
static bool ntdll_beside(int pid, const char *exe, char *out, size_t len)
{
	static const char *const rel[] = {
		"/lib/wine/*-unix/ntdll.so", "/lib64/wine/*-unix/ntdll.so",
		"/lib/*/wine/*-unix/ntdll.so", "/dlls/ntdll/ntdll.so",
	};
	char top[PATH_MAX], pattern[PATH_MAX * 2], prefix[PATH_MAX];
	char *s;

	fmt(top, sizeof(top), "%s", exe);
	for (int i = 0; i < 2 && (s = strrchr(top, '/')); i++)
		*s = '\0';
	fmt(prefix, sizeof(prefix), "%s/proc/%d/root", info.root, pid);
	for (size_t i = 0; i < sizeof(rel) / sizeof(*rel); i++) {
		glob_t g;

		fmt(pattern, sizeof(pattern), "%s%s%s", prefix, top, rel[i]);
		if (glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc) {
			fmt(out, len, "%s", g.gl_pathv[0] + strlen(prefix));
			globfree(&g);
			return true;
		}
		globfree(&g);
	}
	return false;
}

static bool decidable(const struct wine_binary *b)
{
	return !b->err && b->elf && b->wine &&
		(!strcmp(b->machine, "x86-64") || !strcmp(b->machine, "i386") ||
		 !strcmp(b->machine, "arm64"));
}

static void link_build(struct wine_report *r, const struct proc *t,
		       const struct proc *srv)
{
	struct wine_link *l = &r->link[LINK_BUILD];
	struct wine_binary b[2];
	char text[2][TEXT * 4];
	int nb = 0, nt = 0, stub = -1;

	l->state = LINK_OK;
	if (srv && srv->exe[0]) {
		check_binary(srv->pid, srv->exe, true, &b[nb]);
		fmt(r->exe, sizeof(r->exe), "%s", b[nb].path);
		nb++;
	} else if (srv) {
		fmt(text[nt++], sizeof(text[0]), "wineserver's binary: "
		    "/proc/%d/exe: %s", srv->pid,
		    why_unreadable(srv->exe_err));
		l->state = LINK_UNKNOWN;
	}
	if (t->ntdll[0]) {
		fmt(r->ntdll, sizeof(r->ntdll), "%s", t->ntdll);
		check_binary(t->pid, r->ntdll, false, &b[nb++]);
	} else if (srv && srv->exe[0] &&
		   ntdll_beside(srv->pid, srv->exe, r->ntdll,
				sizeof(r->ntdll))) {
		check_binary(srv->pid, r->ntdll, false, &b[nb++]);
	}
	for (int i = 0; i < nb && nt < 2; i++) {
		binary_text(&b[i], text[nt++], sizeof(text[0]));
		if (!decidable(&b[i]))
			l->state = LINK_UNKNOWN;
		else if (!b[i].backend && stub < 0)
			stub = i;
	}
	if (!nt) {
		l->state = LINK_UNKNOWN;
		fmt(l->found, sizeof(l->found), "no wineserver and no ntdll.so "
		    "to look at (%s)", t->maps_err ?
		    why_unreadable(t->maps_err) : "no ntdll.so in its maps");
		return;
	}
	fmt(l->found, sizeof(l->found), "%s%s%s", text[0], nt > 1 ? "; " : "",
	    nt > 1 ? text[1] : "");
	if (stub < 0)
		return;
	l->state = LINK_BROKEN;
	l->certain = true;
	fmt(l->reason, sizeof(l->reason), "%s is built without the ntsync "
	    "backend (stubs)", b[stub].path);
	if (!strcmp(b[stub].role, "wineserver") && !b[stub].backend_request)
		fmt(l->fix, sizeof(l->fix), "use a Wine with the ntsync "
		    "backend (upstream 10.16 or later), built with "
		    "./configure CPPFLAGS=\"$(pkg-config --cflags ntsync-uapi)\" "
		    "(package ntsync-uapi-dev)");
	else
		fmt(l->fix, sizeof(l->fix), "rebuild Wine against the complete "
		    "header: install ntsync-uapi-dev, ./configure CPPFLAGS=\""
		    "$(pkg-config --cflags ntsync-uapi)\" and make (Wine "
		    "compiles the backend only when <linux/ntsync.h> defines "
		    "NTSYNC_IOC_EVENT_READ); then wineserver -k");
}

/* ---- link 4: the environment ---- */

/*
 * Read from Wine's own source (wine-11.10-tkg: upstream 11.10 with
 * staging and wine-tkg): Wine reads NO variable about ntsync.  The
 * getenv() calls of dlls/ntdll/unix/ and server/ are WINEDEBUG,
 * WINEPREFIX, WINEARCH, WINESERVER, WINESERVERSOCKET, WINEDLLPATH,
 * WINEDLLOVERRIDES, WINELOADERNOEXEC, WINEPRELOADRESERVE, ... (e.g.
 * server/request.c:599, dlls/ntdll/unix/loader.c:386,
 * dlls/ntdll/unix/server.c:1651); none of the names below occurs anywhere
 * in that tree.  Wine decides by whether /dev/ntsync opens
 * (server/inproc_sync.c:51).
 *
 * Proton, read from the sources stored here: GE-Proton's launcher
 * (GloriousEggroll/proton-ge-custom, `proton`, master 8441795 of
 * 2026-08-05) sets WINENTSYNC=1 for the game unless PROTON_NO_NTSYNC is
 * set (compat flag "nontsync"), which removes WINENTSYNC instead; it reads
 * no PROTON_USE_NTSYNC.  Valve's launcher as stored (ValveSoftware/Proton,
 * bleeding-edge of 2024-10-25) reads no ntsync variable at all (only
 * PROTON_NO_ESYNC/PROTON_NO_FSYNC), and Valve's Wine as stored
 * (ValveSoftware/wine 5d76e39, server/inproc_sync.c) opens /dev/ntsync
 * without looking at any variable.  Unverified: which Proton build reads
 * PROTON_USE_NTSYNC, how the Wine under GE-Proton reads WINENTSYNC, and
 * wine-staging's older "fast sync" patches' WINE_DISABLE_FAST_SYNC.  The
 * names marked NOOP are ones users try that no source known here reads.
 * So a variable is the verdict's cause only when the process does NOT
 * hold the device (the effect is seen), never on its own.
 */
enum env_kind { ENV_DISABLES, ENV_ENABLES, ENV_NOOP };
static const struct {
	const char *name;
	enum env_kind kind;
} env_vars[] = {
	{ "WINE_DISABLE_FAST_SYNC", ENV_DISABLES },
	{ "PROTON_NO_NTSYNC", ENV_DISABLES },
	{ "PROTON_USE_NTSYNC", ENV_ENABLES },
	{ "WINENTSYNC", ENV_ENABLES },
	{ "PROTON_ENABLE_NTSYNC", ENV_NOOP },
	{ "WINE_NTSYNC", ENV_NOOP },
	{ "WINE_USE_NTSYNC", ENV_NOOP },
	{ "WINE_ENABLE_NTSYNC", ENV_NOOP },
	{ "PROTON_NTSYNC", ENV_NOOP },
};

static bool env_true(const char *v)
{
	return v && *v && strcmp(v, "0");
}

static bool is_proton(const struct proc *p)
{
	return env_get(p, "STEAM_COMPAT_DATA_PATH") ||
		env_get(p, "STEAM_COMPAT_CLIENT_INSTALL_PATH") ||
		strcasestr(p->exe, "proton") || strcasestr(p->ntdll, "proton");
}

static void link_env(struct wine_report *r, const struct proc *t,
		     const struct proc *srv)
{
	struct wine_link *l = &r->link[LINK_ENV];
	const struct proc *ps[2] = { t, srv && srv != t ? srv : NULL };
	char set[TEXT * 2] = "", noop[TEXT] = "";
	const char *disabler = NULL, *dval = NULL;
	bool proton = false, enabled = false, readable = false;
	size_t used = 0;

	l->state = LINK_OK;
	for (int i = 0; i < 2; i++) {
		const struct proc *p = ps[i];

		if (!p || p->env_err)
			continue;
		readable = true;
		proton = proton || is_proton(p);
		for (size_t v = 0; v < sizeof(env_vars) / sizeof(*env_vars); v++) {
			const char *val = env_get(p, env_vars[v].name);

			if (!val)
				continue;
			if (!strstr(set, env_vars[v].name) && used < sizeof(set))
				used += (size_t)snprintf(set + used,
					sizeof(set) - used, "%s%s=%s (pid %d)",
					used ? ", " : "", env_vars[v].name,
					val, p->pid);
			if (env_vars[v].kind == ENV_DISABLES && env_true(val) &&
			    !disabler)
				disabler = env_vars[v].name, dval = val;
			if (env_vars[v].kind == ENV_ENABLES && env_true(val))
				enabled = true;
			if (env_vars[v].kind == ENV_NOOP && !noop[0])
				fmt(noop, sizeof(noop), "%s", env_vars[v].name);
		}
	}
	if (!readable) {
		l->state = LINK_UNKNOWN;
		fmt(l->found, sizeof(l->found), "cannot read /proc/%d/environ: "
		    "%s", t->pid, why_unreadable(t->env_err));
		return;
	}
	fmt(l->found, sizeof(l->found), "%s%s%s%s%s%s",
	    proton ? "Proton (STEAM_COMPAT_* or a Proton path); " : "",
	    set[0] ? "set: " : "no ntsync variable set (Wine itself reads "
	    "none; Proton's and staging's are checked)", set,
	    noop[0] ? "; " : "", noop,
	    noop[0] ? " does nothing: no Wine or Proton source known here "
	    "reads it" : "");
	if (disabler) {
		l->state = LINK_BROKEN;
		fmt(l->reason, sizeof(l->reason), "%s=%s is set, which turns "
		    "ntsync off in the builds that read it", disabler, dval);
		fmt(l->fix, sizeof(l->fix), "unset %s (in Steam: remove it "
		    "from the game's launch options), then restart the game "
		    "(wineserver -k)", disabler);
	} else if (proton && !enabled) {
		l->state = LINK_BROKEN;
		fmt(l->reason, sizeof(l->reason), "a Proton process with "
		    "neither WINENTSYNC=1 (which GE-Proton's launcher sets "
		    "unless PROTON_NO_NTSYNC is set) nor PROTON_USE_NTSYNC=1 "
		    "(which some Proton builds are said to need)%s%s%s",
		    noop[0] ? " (" : "", noop,
		    noop[0] ? " is no such switch)" : "");
		fmt(l->fix, sizeof(l->fix), "set WINENTSYNC=1 (GE-Proton: "
		    "leave PROTON_NO_NTSYNC unset, its launcher then sets it) "
		    "or PROTON_USE_NTSYNC=1; Steam launch options: "
		    "WINENTSYNC=1 %%command%%%s%s",
		    noop[0] ? " instead of " : "", noop);
	}
}

/* ---- link 5: can the wineserver see the device? ---- */

/*
 * /.flatpak-info, which Flatpak puts in every sandbox's root: the app's
 * name ([Application] name=) and, where this Flatpak writes it, its own
 * version ([Instance] flatpak-version=; not checked against Flatpak's
 * source here, so a missing one reads "unknown version").
 */
static void flatpak_info(int pid, char *app, size_t alen, char *ver,
			 size_t vlen)
{
	char path[PATH_MAX], line[TEXT], section[64] = "";
	FILE *f;

	app[0] = ver[0] = '\0';
	fmt(path, sizeof(path), "%s/proc/%d/root/.flatpak-info", info.root,
	    pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\r\n")] = '\0';
		if (line[0] == '[')
			fmt(section, sizeof(section), "%s", line);
		else if (!strcmp(section, "[Application]") &&
			 !strncmp(line, "name=", 5))
			fmt(app, alen, "%s", line + 5);
		else if (!strcmp(section, "[Instance]") &&
			 !strncmp(line, "flatpak-version=", 16))
			fmt(ver, vlen, "%s", line + 16);
	}
	fclose(f);
	if (!app[0])
		fmt(app, alen, "APP");
}

/* An ancestor called name ("bwrap", "firejail"): its pid, or 0. */
static int ancestor(int pid, const char *name)
{
	for (int i = 0; i < 64 && pid > 1; i++) {
		struct proc p;

		if (!load_proc(pid, &p, false))
			return 0;
		proc_free(&p);
		if (i && !strcmp(p.comm, name))
			return pid;
		pid = p.ppid;
	}
	return 0;
}

static void link_visible(struct wine_report *r, const struct proc *o)
{
	struct wine_link *l = &r->link[LINK_VISIBLE];
	char ns[64], self_ns[64], path[PATH_MAX], app[TEXT], ver[64];
	char aa[TEXT] = "", where[TEXT];
	int ns_err, err, bwrap, firejail;
	bool seen, own_ns;

	ns_err = -proc_readlink(o->pid, "ns/mnt", ns, sizeof(ns));
	proc_readlink(0, "ns/mnt", self_ns, sizeof(self_ns));
	own_ns = !ns_err && strcmp(ns, self_ns);
	err = proc_path(path, sizeof(path), o->pid, "root");
	if (!err) {
		char dev[PATH_MAX + 32];

		fmt(dev, sizeof(dev), "%s%s", path, info.path);
		if (access(dev, F_OK) != 0)
			err = errno;
	}
	seen = !err;
	flatpak_info(o->pid, app, sizeof(app), ver, sizeof(ver));
	bwrap = ancestor(o->pid, "bwrap");
	firejail = ancestor(o->pid, "firejail");
	if (proc_read(o->pid, "attr/apparmor/current", aa, sizeof(aa)) < 0)
		proc_read(o->pid, "attr/current", aa, sizeof(aa));
	aa[strcspn(aa, "\n")] = '\0';
	fmt(where, sizeof(where), "%s%s%s%s%s%s%s",
	    app[0] ? "Flatpak app " : "", app, app[0] && ver[0] ? " (Flatpak " : "",
	    app[0] && ver[0] ? ver : "", app[0] && ver[0] ? ")" : "",
	    bwrap ? (app[0] ? ", under bwrap" : "under bwrap") : "",
	    firejail ? ", under firejail" : "");
	fmt(l->found, sizeof(l->found), "pid %d: %s mount namespace%s; %s "
	    "%s in its root%s%s%s%s; AppArmor: %s", o->pid,
	    ns_err ? "unknown" : own_ns ? "its own" : "the same",
	    ns_err ? "" : own_ns ? " (not this tool's)" : " as this tool's",
	    info.path, seen ? "exists" : err == ENOENT ? "does NOT exist" :
	    "cannot be looked up", seen || err == ENOENT ? "" : ": ",
	    seen || err == ENOENT ? "" : why_unreadable(err),
	    where[0] ? "; " : "", where, aa[0] ? aa : "none shown");
	if (seen) {
		l->state = LINK_OK;
		if (strstr(aa, "(enforce)")) {
			/* only the cause when nothing else is found */
			l->state = LINK_BROKEN;
			fmt(l->reason, sizeof(l->reason), "the AppArmor profile "
			    "'%.*s' confines it and may deny %s",
			    (int)strcspn(aa, " "), aa, info.path);
			fmt(l->fix, sizeof(l->fix), "allow the device in that "
			    "profile ('%s rw,'), reload it (apparmor_parser -r "
			    "FILE), then restart Wine (wineserver -k)",
			    info.path);
		}
		return;
	}
	if (err != ENOENT || !(*info.root ? path_exists(info.path) :
			       info.exists)) {
		/* unreadable, or no device on the host either (link 1) */
		l->state = LINK_UNKNOWN;
		return;
	}
	l->state = LINK_BROKEN;
	l->certain = true;
	if (app[0]) {
		fmt(l->reason, sizeof(l->reason), "the Flatpak sandbox of %s "
		    "hides %s", app, info.path);
		/*
		 * --device=all is the permission that exposes /dev/ntsync in
		 * every Flatpak version.  Whether a narrower one does in newer
		 * Flatpak (the issue names 1.18) is unverified here.
		 */
		fmt(l->fix, sizeof(l->fix), "flatpak override --user "
		    "--device=all %s (Flatpak %s: --device=all is the "
		    "permission known to expose %s), then restart the app",
		    app, ver[0] ? ver : "of unknown version", info.path);
	} else if (firejail) {
		fmt(l->reason, sizeof(l->reason), "the firejail sandbox (pid "
		    "%d) has a private /dev without %s", firejail, info.path);
		fmt(l->fix, sizeof(l->fix), "run it without firejail's "
		    "private-dev (drop 'private-dev' from its profile or "
		    "pass --noprofile), then restart Wine");
	} else if (bwrap) {
		fmt(l->reason, sizeof(l->reason), "the bubblewrap sandbox "
		    "(bwrap, pid %d) has a private /dev without %s", bwrap,
		    info.path);
		fmt(l->fix, sizeof(l->fix), "bind the device into the sandbox: "
		    "bwrap ... --dev /dev --dev-bind %s %s ...", info.path,
		    info.path);
	} else {
		fmt(l->reason, sizeof(l->reason), "%s does not exist in the "
		    "process's root (%s mount namespace)", info.path,
		    own_ns ? "its own" : "this");
		fmt(l->fix, sizeof(l->fix), "make %s visible in its container "
		    "(bind-mount it), then restart Wine", info.path);
	}
}

/* ---- link 1 and 3 ---- */

static void link_driver(struct wine_report *r, const struct proc *srv)
{
	struct wine_link *l = &r->link[LINK_DRIVER];
	bool present = info.module_loaded ||
		!strcmp(info.driver_kind, "built-in");
	bool opens = info.openable;
	char how[TEXT];

	if (info.openable)
		fmt(how, sizeof(how), "opens (tried)");
	else
		fmt(how, sizeof(how), "does not open: %s", info.exists ?
		    strerror(-info.open_err) : "missing");
	if (*info.root) {
		/* a recording holds no device node: its presence stands in
		 * for the live open */
		opens = path_exists(info.path);
		fmt(how, sizeof(how), "%s (recorded)", opens ? "present" :
		    "missing");
	}
	if (r->device_fds || (srv && srv->device_fds)) {
		opens = true;
		fmt(how, sizeof(how), "opens (held open by pid %d)",
		    r->device_fds ? r->pid : srv->pid);
	}
	fmt(l->found, sizeof(l->found), "driver: %s; %s %s",
	    info.driver_text, info.path, how);
	if (present && opens) {
		l->state = LINK_OK;
		return;
	}
	l->state = LINK_BROKEN;
	l->certain = true;
	if (!present) {
		fmt(l->reason, sizeof(l->reason), "the ntsync driver is not "
		    "loaded");
		fmt(l->fix, sizeof(l->fix), "as root: modprobe ntsync (from "
		    "ntsync-dkms, or the kernel's own module; plain "
		    "'ntsync-info' says which), then restart Wine "
		    "(wineserver -k)");
	} else {
		fmt(l->reason, sizeof(l->reason), "%s does not open", info.path);
		fmt(l->fix, sizeof(l->fix), "run plain 'ntsync-info' for why "
		    "(the node's permissions: the driver makes it 0666)");
	}
}

static void link_start(struct wine_report *r, const struct proc *srv)
{
	struct wine_link *l = &r->link[LINK_START];
	char src[TEXT], ts[64], tl[64];
	double st, lt;

	l->state = LINK_UNKNOWN;
	if (!srv) {
		fmt(l->found, sizeof(l->found), "no wineserver to look at");
		return;
	}
	st = start_time(srv);
	lt = load_time(src, sizeof(src));
	fmt_time(st, ts, sizeof(ts));
	fmt_time(lt, tl, sizeof(tl));
	if (srv->device_fds) {
		l->state = LINK_OK;
		fmt(l->found, sizeof(l->found), "wineserver pid %d holds %s "
		    "open (%u descriptor%s, %u objects): it opened it when it "
		    "started (%s)", srv->pid, info.path, srv->device_fds,
		    srv->device_fds == 1 ? "" : "s", srv->object_fds, ts);
		return;
	}
	if (st < 0 || lt < 0) {
		fmt(l->found, sizeof(l->found), "wineserver pid %d started %s; "
		    "%s%s%s", srv->pid, ts, src, lt < 0 ? "" : " at ",
		    lt < 0 ? "" : tl);
		return;
	}
	fmt(l->found, sizeof(l->found), "wineserver pid %d started %s "
	    "(/proc/%d/stat field 22 + btime); %s%s%s; %s%s%s", srv->pid, ts,
	    srv->pid, src, lt > 0 ? " at " : "", lt > 0 ? tl : "",
	    srv->fd_err ? "its descriptors: " : "it holds no ",
	    srv->fd_err ? why_unreadable(srv->fd_err) : info.path,
	    srv->fd_err ? "" : " open");
	/* btime is whole seconds: a second either way is too close */
	if (st + 1.0 < lt) {
		l->state = LINK_BROKEN;
		l->certain = true;
		fmt(l->reason, sizeof(l->reason), "its wineserver (pid %d) "
		    "started %s, before the driver was loaded (%s): it chose "
		    "no ntsync then", srv->pid, ts, tl);
		fmt(l->fix, sizeof(l->fix), "restart Wine so that wineserver "
		    "starts again: wineserver -k (with the same WINEPREFIX; "
		    "for Proton, quit the game and Steam's wineserver ends), "
		    "then start the program again");
	} else if (st > lt + 1.0) {
		l->state = LINK_OK;
	} else {
		strcat(l->found, "; too close to tell");
	}
}

/* ---- the verdict ---- */

static void decide_wine(struct wine_report *r)
{
	int first = -1, unknown = -1;

	if (r->holds == TRI_YES) {
		r->status = WINE_USING;
		fmt(r->verdict, sizeof(r->verdict), "USING ntsync: pid %d holds "
		    "%s (%u descriptor%s) and %u ntsync object%s", r->pid,
		    info.path, r->device_fds, r->device_fds == 1 ? "" : "s",
		    r->object_fds, r->object_fds == 1 ? "" : "s");
		for (int i = 0; i < NLINKS; i++) {
			struct wine_link *l = &r->link[i];

			if (l->state != LINK_BROKEN)
				continue;
			/* the descriptors outweigh a guess from elsewhere */
			l->state = i == LINK_BUILD ? LINK_UNKNOWN : LINK_OK;
			strncat(l->found, " (yet the process holds the device)",
				sizeof(l->found) - strlen(l->found) - 1);
			l->fix[0] = '\0';
		}
		return;
	}
	for (int i = 0; i < NLINKS; i++) {
		const struct wine_link *l = &r->link[i];

		if (first < 0 && l->state == LINK_BROKEN &&
		    (r->holds == TRI_NO || l->certain))
			first = i;
		if (unknown < 0 && l->state == LINK_UNKNOWN)
			unknown = i;
	}
	if (first >= 0) {
		r->status = WINE_NOT_USING;
		fmt(r->verdict, sizeof(r->verdict), "NOT USING ntsync: %d %s: "
		    "%s", first + 1, link_names[first], r->link[first].reason);
		fmt(r->fix, sizeof(r->fix), "%s", r->link[first].fix);
	} else if (r->holds != TRI_NO) {
		r->status = WINE_UNKNOWN;
		fmt(r->verdict, sizeof(r->verdict), "UNKNOWN: cannot read "
		    "/proc/%d/fd: %s", r->pid, why_unreadable(r->fd_err));
		fmt(r->fix, sizeof(r->fix), "run ntsync-info --pid %d as root",
		    r->pid);
	} else if (unknown >= 0) {
		r->status = WINE_NOT_USING;
		fmt(r->verdict, sizeof(r->verdict), "NOT USING ntsync: pid %d "
		    "does not hold %s; no link found broken, link %d (%s) "
		    "could not be checked", r->pid, info.path, unknown + 1,
		    link_names[unknown]);
		fmt(r->fix, sizeof(r->fix), "run ntsync-info --pid %d as root "
		    "to check every link", r->pid);
	} else {
		r->status = WINE_NOT_USING;
		fmt(r->verdict, sizeof(r->verdict), "NOT USING ntsync: pid %d "
		    "does not hold %s, yet every link looks whole", r->pid,
		    info.path);
		fmt(r->fix, sizeof(r->fix), "restart Wine (wineserver -k) "
		    "and check again");
	}
}

static void report(struct wine_report *r, struct proc *t)
{
	struct proc srv_proc, *srv = NULL;
	char how[TEXT];

	memset(r, 0, sizeof(*r));
	r->pid = t->pid;
	fmt(r->comm, sizeof(r->comm), "%s", t->comm);
	r->wineserver = t->wineserver;
	r->device_fds = t->device_fds;
	r->object_fds = t->object_fds;
	r->fd_err = t->fd_err;
	r->holds = t->fd_err ? TRI_UNKNOWN : t->device_fds ? TRI_YES : TRI_NO;
	memset(&srv_proc, 0, sizeof(srv_proc));
	if (t->wineserver) {
		srv = t;
	} else {
		int spid = find_server(t, how, sizeof(how));

		if (spid && load_proc(spid, &srv_proc, true))
			srv = &srv_proc;
	}
	r->server_pid = srv ? srv->pid : 0;
	link_driver(r, srv);
	link_build(r, t, srv);
	link_start(r, srv);
	if (!srv)
		fmt(r->link[LINK_START].found, sizeof(r->link[0].found),
		    "no wineserver found for pid %d: %s", t->pid, how);
	link_env(r, t, srv);
	link_visible(r, srv ? srv : t);
	decide_wine(r);
	proc_free(&srv_proc);
}

int wine_probe_pid(int pid, struct wine_report *r, char *why, size_t len)
{
	struct proc p;
	int rc = 0;

	if (!load_proc(pid, &p, true)) {
		fmt(why, len, "no process with pid %d", pid);
		return EXIT_NO_PROCESS;
	}
	if (p.state == 'Z') {
		fmt(why, len, "pid %d (%s) is a zombie: it has exited and its "
		    "parent (pid %d) has not reaped it; nothing is left to "
		    "look at", pid, p.comm, p.ppid);
		rc = EXIT_ZOMBIE;
	} else if (!p.wine && p.maps_err && p.exe_err &&
		   !strstr(p.comm, ".exe")) {
		fmt(why, len, "cannot tell whether pid %d (%s) is Wine: "
		    "/proc/%d/maps: %s", pid, p.comm, pid,
		    why_unreadable(p.maps_err));
		rc = EXIT_UNKNOWN;
	} else if (!p.wine && !strstr(p.comm, ".exe")) {
		fmt(why, len, "pid %d (%s) is not a Wine process: not a "
		    "wineserver, and no ntdll.so in its maps", pid, p.comm);
		rc = EXIT_NOT_WINE;
	} else {
		report(r, &p);
	}
	proc_free(&p);
	return rc;
}

unsigned int wine_probe_all(struct wine_report *r, unsigned int max,
			    unsigned int *unreadable)
{
	char dir[PATH_MAX];
	struct dirent *de;
	unsigned int n = 0;
	DIR *d;

	*unreadable = 0;
	fmt(dir, sizeof(dir), "%s/proc", info.root);
	d = opendir(dir);
	if (!d)
		return 0;
	while ((de = readdir(d)) && n < max) {
		struct proc p;

		if (!ntsync_users_is_pid_name(de->d_name) ||
		    !load_proc(atoi(de->d_name), &p, true))
			continue;
		if (p.state != 'Z' && (p.wine || strstr(p.comm, ".exe")))
			report(&r[n++], &p);
		else if (p.state != 'Z' && p.maps_err)
			(*unreadable)++;
		proc_free(&p);
	}
	closedir(d);
	return n;
}

int wine_exit_status(const struct wine_report *r, unsigned int n)
{
	int rc = EXIT_WORKING;

	if (!n)
		return EXIT_NOT_WINE;
	for (unsigned int i = 0; i < n; i++) {
		if (r[i].status == WINE_NOT_USING)
			return EXIT_NOT_WORKING;
		if (r[i].status == WINE_UNKNOWN)
			rc = EXIT_UNKNOWN;
	}
	return rc;
}
