// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ntsync-bench: where it ran: kernel, CPU, virtualization, the driver,
 * the clocksource and how busy the machine was.
 */
#include "bench.h"

/* ------------------------------------------------------------------ */
/* where it ran                                                        */


void detect_env(struct env *e, const char *label)
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
	tc_read_line("/sys/class/dmi/id/sys_vendor", vendor, sizeof(vendor));
	tc_read_line("/sys/class/dmi/id/product_name", product, sizeof(product));
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
	if (tc_read_line("/sys/module/ntsync/taint", e->taint, sizeof(e->taint)))
		e->out_of_tree = strchr(e->taint, 'O') != NULL;
	tc_read_line("/sys/module/ntsync/version", e->version, sizeof(e->version));
	tc_read_line("/sys/module/ntsync/srcversion", e->srcversion,
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


/*
 * Early in boot x86 runs on "tsc-early", whose calibration under QEMU's
 * icount can be off by a large factor; figures taken before the kernel
 * switches to "tsc" are on another scale.  Sleeping costs nothing under
 * -icount sleep=off, so wait (up to a minute) for the switch.
 */
void wait_for_clocksource(struct env *e, FILE *out)
{
	uint64_t t0 = now_ns();

	tc_read_line(CLOCKSOURCE, e->clocksource, sizeof(e->clocksource));
	if (strcmp(e->clocksource, "tsc-early"))
		return;
	fprintf(out, "note:   clocksource is tsc-early; waiting for the kernel to switch to tsc ...\n");
	for (int i = 0; i < 240 && !strcmp(e->clocksource, "tsc-early"); i++) {
		struct timespec ts = { 0, 250000000 };

		nanosleep(&ts, NULL);
		tc_read_line(CLOCKSOURCE, e->clocksource, sizeof(e->clocksource));
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
void wait_for_quiet(struct env *e, FILE *out, double max_s)
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

void print_env(FILE *out, const struct env *e, const char *mode,
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
	fprintf(out, "threads: %s\n", e->threads);
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

