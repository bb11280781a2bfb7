// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ntsync-bench: kernel memory per object (slab deltas).
 */
#include "bench.h"

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
		 double *per_rep, double *raw, char *detail, size_t dlen)
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

