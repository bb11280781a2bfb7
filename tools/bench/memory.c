// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ntsync-bench: kernel memory per object (slab deltas).
 */
#include "bench.h"

#include <dirent.h>

/* ------------------------------------------------------------------ */
/* kernel memory per object                                            */


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
 * What a cache that grew holds.  SLUB merges caches of one object size
 * and compatible flags, and /proc/slabinfo lists a merged cache under the
 * name of whichever of them was made first: our "ntsync_obj" shows up as
 * "nsproxy" on Debian's 6.12, the LSM file blob as "Acpi-Namespace".
 * /sys/kernel/slab has a link for every name merged into a cache, so the
 * role comes from the names there.  The driver's own share is its object:
 * ours from the ntsync_obj cache, mainline's from kmalloc; the file, its
 * dentry and the LSM blob come with any anonymous-inode file.
 */
struct slab_role {
	const char *alias;
	const char *role;
	bool driver;
};

static const struct slab_role slab_roles[] = {
	{ "ntsync_obj", "ntsync object", true },
	{ "filp", "file", false },
	{ "dentry", "dentry", false },
	{ "lsm_file_cache", "LSM file blob", false },
};

#define SYS_SLAB "/sys/kernel/slab"

/* the merged cache NAME belongs to: its link's target, or NAME itself */
static void slab_target(const char *name, char *out, size_t len)
{
	char path[PATH_MAX], link[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), SYS_SLAB "/%s", name);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0) {
		snprintf(out, len, "%s", name);
		return;
	}
	link[n] = '\0';
	snprintf(out, len, "%s", strrchr(link, '/') ? strrchr(link, '/') + 1 : link);
}

/*
 * The role of cache NAME (as /proc/slabinfo names it): the slab_roles[]
 * entry whose alias is one of the names merged into NAME's cache, or NULL
 * when none is.
 */
static const struct slab_role *slab_role(const char *name)
{
	static const struct slab_role kmalloc = { "kmalloc", "kmalloc", true };
	char target[PATH_MAX], other[PATH_MAX];
	const struct slab_role *role = NULL;
	struct dirent *e;
	DIR *d;

	if (!strncmp(name, "kmalloc-", 8))
		return &kmalloc;
	slab_target(name, target, sizeof(target));
	d = opendir(SYS_SLAB);
	if (!d)
		return NULL;
	while (!role && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		slab_target(e->d_name, other, sizeof(other));
		if (strcmp(other, target))
			continue;
		for (size_t i = 0; i < sizeof(slab_roles) / sizeof(slab_roles[0]); i++)
			if (!strcmp(e->d_name, slab_roles[i].alias))
				role = &slab_roles[i];
	}
	closedir(d);
	return role;
}

/*
 * The caches that grew by at least half an object per created object,
 * counted in whole objects, each named by what it holds: "driver 72 B:
 * ntsync object 1x72 (listed as nsproxy); with the file: 432 B: file 1x192
 * + dentry 1x192 + LSM file blob 1x48 (listed as Acpi-Namespace)".  SLUB's active counts are approximate (free objects in per-CPU
 * slabs count as active), so the raw byte delta runs a few percent low
 * when a repetition reuses the slabs that the previous one freed; whole
 * objects are the figure to compare.  Returns bytes per object; *driver:
 * the driver's own share of them.
 */
static double slab_whole(const struct slab_snap *a, const struct slab_snap *b,
			 unsigned int nobj, double *driver, char *out, size_t len)
{
	char mine[256] = "", vfs[256] = "";
	size_t used[2] = { 0, 0 };
	double total = 0, own = 0;

	for (size_t i = 0; i < b->n; i++) {
		unsigned long before = 0;
		const struct slab_role *role;
		bool is_driver, listed;
		double per, bytes;
		long whole;
		char *dst;
		size_t *u, cap;

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
		bytes = (double)whole * (double)b->c[i].size;
		total += bytes;
		if (!driver && !len)
			continue;	/* only the last repetition names them */
		role = slab_role(b->c[i].name);
		is_driver = role && role->driver;
		if (is_driver)
			own += bytes;
		dst = is_driver ? mine : vfs;
		u = &used[!is_driver];
		cap = sizeof(mine);
		if (!len || *u >= cap)
			continue;
		/* "ntsync object 1x72 (listed as nsproxy)", "kmalloc-96 1x96" */
		if (!role || !strcmp(role->alias, "kmalloc")) {
			*u += (size_t)snprintf(dst + *u, cap - *u, "%s%s %ldx%lu",
					       *u ? " + " : "", b->c[i].name, whole,
					       b->c[i].size);
			continue;
		}
		listed = strcmp(role->alias, b->c[i].name) != 0;
		*u += (size_t)snprintf(dst + *u, cap - *u, "%s%s %ldx%lu%s%s%s",
				       *u ? " + " : "", role->role, whole, b->c[i].size,
				       listed ? " (listed as " : "",
				       listed ? b->c[i].name : "", listed ? ")" : "");
	}
	if (driver)
		*driver = own;
	if (len)
		snprintf(out, len, "driver %.0f B: %s; with the file: %.0f B: %s",
			 own, mine[0] ? mine : "none seen", total - own,
			 vfs[0] ? vfs : "none seen");
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

unsigned int mem_objects = MEM_OBJECTS;
char mem_method[32] = "";
char mem_note[160] = "";

/* make room for nobj descriptors and grow the fd table before measuring */
unsigned int prepare_fd_room(unsigned int want)
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
void mem_measure(enum obj_type type, unsigned int reps,
		 double *per_rep, double *raw, double *driver, char *detail,
		 size_t dlen)
{
	unsigned int n = mem_objects;
	int *fds = tc_xcalloc(n, sizeof(int));
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
						r == reps - 1 ? driver : NULL,
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

