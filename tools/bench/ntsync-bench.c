// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ntsync-bench - latency, throughput and memory of /dev/ntsync next to the
 * primitives it replaces (raw futexes, eventfd + poll as in esync, pipe
 * request/reply to a server thread as in wineserver).
 *
 * Talks to the driver with raw ioctls from <linux/ntsync.h>; it does not
 * use libntsync, so it measures the driver and nothing else.
 *
 * Every timed row is run several times with an iteration count found by a
 * short calibration; the table shows the median ns per operation, ops/s
 * and the spread of the runs.  Nothing is asserted on time: --compare
 * prints two reports side by side with their ratios.  (The project's own
 * performance targets are judged off the shipped tool, by bench-targets.)
 *
 * Exit status: 0 done (ntsync rows may have been skipped, the output says
 * so), 1 a measurement failed, 2 usage error.
 */
#include "bench.h"

/* ------------------------------------------------------------------ */
/* running                                                             */

struct bench_opts {
	bool quick;
	unsigned int runs;
	double budget_ns;	/* target length of one run */
	const char *json_path;	/* NULL: none, "-": stdout */
	const char *only;
	const char *label;
	int cpu;
	bool spread;		/* a row's threads each on their own CPU */
	double wait_s;		/* longest wait for a quiet machine */
};
static struct bench_opts opt = { .cpu = -1, .wait_s = 10 };

static const char *current_row;

static void on_alarm(int sig)
{
	char msg[256];
	int n;

	(void)sig;
	n = snprintf(msg, sizeof(msg),
		     "%s: row %s did not finish in time: a wait that never ends? (aborting)\n",
		     tc_progname, current_row ? current_row : "?");
	if (n > 0)
		(void)!write(STDERR_FILENO, msg, (size_t)n);
	_exit(1);
}

static bool row_selected(const struct row *row)
{
	const char *p = opt.only;

	if (!p)
		return true;
	while (*p) {
		size_t len = strcspn(p, ",");

		if (len && !strncmp(row->id, p, len))
			return true;
		p += len;
		if (*p == ',')
			p++;
	}
	return false;
}

/* one run of a timed row: iters operations, elapsed ns */
static uint64_t run_once(const struct row *row, uint64_t iters)
{
	bench_run_reset();
	return row->fn(row, iters);
}

/* find an iteration count whose run takes about budget_ns */
static uint64_t calibrate(const struct row *row)
{
	uint64_t iters = 4, t;
	double target = opt.budget_ns / 10;

	for (;;) {
		t = run_once(row, iters);
		if ((double)t >= target || iters >= (1ull << 40))
			break;
		if (t < target / 16)
			iters *= 8;
		else
			iters *= 2;
	}
	if (t == 0)
		t = 1;
	/* refine on a third of a run: the short runs above start cold */
	iters = (uint64_t)((double)iters * opt.budget_ns / 3 / (double)t);
	if (!iters)
		iters = 1;
	t = run_once(row, iters);
	if (t == 0)
		t = 1;
	iters = (uint64_t)((double)iters * opt.budget_ns / (double)t);
	return iters ? iters : 1;
}

/* lock rows: each run's share of acquisitions that slept, beside its time */
static void blocked_detail(struct result *r, unsigned int runs)
{
	size_t l = (size_t)snprintf(r->detail, sizeof(r->detail),
				    "acquisitions that slept, per run:");

	for (unsigned int i = 0; i < runs && l < sizeof(r->detail); i++)
		l += (size_t)snprintf(r->detail + l, sizeof(r->detail) - l,
				      "%s %.1f%% (%.0f ns)", i ? "," : "",
				      100 * r->blocked[i], r->v[i]);
}

static void run_row(const struct row *row, struct result *r, const struct env *e)
{
	unsigned int runs = opt.runs;

	uint64_t t0 = now_ns();

	current_row = row->id;
	if (row->ntsync && !e->device) {
		r->status = RES_SKIPPED;
		r->skip_reason = "no /dev/ntsync";
		return;
	}
	/* generous: a run that takes 30x its budget has hung */
	alarm((unsigned int)(opt.budget_ns * (runs + 2) * 30 / 1e9) + 60);
	if (row->kind == ROW_TIME) {
		r->iters = calibrate(row);
		for (unsigned int i = 0; i < runs; i++) {
			r->v[i] = (double)run_once(row, r->iters) / (double)r->iters;
			r->blocked[i] = g_run_blocked;
		}
		if (r->blocked[0] >= 0)
			blocked_detail(r, runs);
	} else {
		r->iters = mem_objects;
		runs = runs < 3 ? runs : 3;	/* the figure barely moves */
		mem_measure((enum obj_type)row->param, runs, r->v,
			    &r->raw_median, &r->driver_bytes, r->detail,
			    sizeof(r->detail));
		if (mem_method[0]) {
			size_t l = strlen(r->detail);

			snprintf(r->detail + l, sizeof(r->detail) - l,
				 "%s[%s, raw delta %.0f B/object%s%s]",
				 l ? " " : "", mem_method, r->raw_median,
				 mem_note[0] ? "; " : "", mem_note);
		}
	}
	alarm(0);
	r->seconds = (double)(now_ns() - t0) / 1e9;
	r->runs = runs;
	r->status = RES_OK;
	summarize(r);
}

/* ------------------------------------------------------------------ */

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: %s [--quick] [--json[=FILE]] [--runs N] [--budget MS] [--only IDS]\n"
		"                    [--objects N] [--cpu N | --spread] [--label NAME] [--wait S]\n"
		"       %s --compare A.json B.json\n"
		"       %s --list | --help | --version\n"
		"\n"
		"Measures /dev/ntsync next to futexes, eventfd+poll and pipe RPC.\n"
		"\n"
		"  -q, --quick         short run (3 runs of ~25 ms per row) for a demo\n"
		"  -j, --json[=FILE]   write results as JSON to FILE, or to stdout (the table\n"
		"                      then goes to stderr); \"--json FILE\" works too\n"
		"  -r, --runs N        runs per row (default 5, quick 3; at most %d)\n"
		"  -b, --budget MS     length of one run in ms (default 120, quick 25)\n"
		"  -o, --only IDS      only rows whose id starts with one of IDS (comma list)\n"
		"  -n, --objects N     objects for the memory rows (default %d)\n"
		"  -c, --cpu N         pin every thread to CPU N\n"
		"  -s, --spread        put the threads of a row each on its own CPU, in turn\n"
		"                      (the same placement in every run)\n"
		"  -l, --label NAME    name of this run in --compare (default: driver kind)\n"
		"  -w, --wait S        wait up to S seconds for other work to stop (default 10)\n"
		"      --compare A B   one table of two JSON files, ratio A/B per row\n"
		"      --list          list the rows\n"
		"\n"
		"Exit status: 0 done (ntsync rows skipped without /dev/ntsync), 1 failure,\n"
		"2 usage error.  See ntsync-bench(1).\n",
		tc_progname, tc_progname, tc_progname, MAX_RUNS, MEM_OBJECTS);
}

static unsigned long parse_ulong(const char *what, const char *s,
				 unsigned long lo, unsigned long hi)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi || s[0] == '-')
		tc_usage_error("%s '%s' is not a number from %lu to %lu", what, s,
			    lo, hi);
	return v;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "quick", no_argument, NULL, 'q' },
		{ "json", optional_argument, NULL, 'j' },
		{ "runs", required_argument, NULL, 'r' },
		{ "budget", required_argument, NULL, 'b' },
		{ "only", required_argument, NULL, 'o' },
		{ "objects", required_argument, NULL, 'n' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "spread", no_argument, NULL, 's' },
		{ "label", required_argument, NULL, 'l' },
		{ "wait", required_argument, NULL, 'w' },
		{ "compare", no_argument, NULL, 'C' },
		{ "list", no_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	bool compare = false, json = false, wait_set = false;
	long budget_ms = -1;
	struct result *res;
	struct env env;
	FILE *out, *jf = NULL;
	uint64_t t_start;
	int c;

	tc_progname = "ntsync-bench";
	while ((c = getopt_long(argc, argv, "qj::r:b:o:n:c:sl:w:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'q':
			opt.quick = true;
			break;
		case 'j':
			json = true;
			opt.json_path = optarg;
			break;
		case 'r':
			opt.runs = (unsigned int)parse_ulong("--runs", optarg, 1, MAX_RUNS);
			break;
		case 'b':
			budget_ms = (long)parse_ulong("--budget", optarg, 1, 600000);
			break;
		case 'o':
			opt.only = optarg;
			break;
		case 'n':
			mem_objects = (unsigned int)parse_ulong("--objects", optarg,
								 1, 1000000);
			break;
		case 'c':
			opt.cpu = (int)parse_ulong("--cpu", optarg, 0, CPU_SETSIZE - 1);
			break;
		case 's':
			opt.spread = true;
			break;
		case 'l':
			opt.label = optarg;
			break;
		case 'w':
			opt.wait_s = (double)parse_ulong("--wait", optarg, 0, 3600);
			wait_set = true;
			break;
		case 'C':
			compare = true;
			break;
		case 'L':
			for (size_t i = 0; i < NROWS; i++)
				printf("%-17s %-11s %s%s\n", rows[i].id, rows[i].group,
				       rows[i].what, rows[i].ntsync ? "" : "  (no ntsync)");
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("ntsync-bench %s\n", NTSYNC_BENCH_VERSION);
			return 0;
		default:
			fprintf(stderr, "Try '%s --help'.\n", tc_progname);
			return 2;
		}
	}

	if (compare) {
		if (argc - optind != 2)
			tc_usage_error("--compare needs exactly two JSON files (A.json B.json), got %d",
				    argc - optind);
		if (json || opt.quick)
			tc_usage_error("--compare reads results; it does not take --json or --quick");
		return do_compare(argv[optind], argv[optind + 1]);
	}
	/* "--json FILE" as well as "--json=FILE" */
	if (json && !opt.json_path && optind < argc) {
		opt.json_path = argv[optind++];
	}
	if (optind < argc)
		tc_usage_error("unexpected argument '%s'", argv[optind]);
	if (opt.only) {
		bool any = false;

		for (size_t i = 0; i < NROWS; i++)
			any |= row_selected(&rows[i]);
		if (!any)
			tc_usage_error("--only '%s' matches no row (see --list)", opt.only);
	}

	if (!opt.runs)
		opt.runs = opt.quick ? 3 : 5;
	if (budget_ms < 0)
		budget_ms = opt.quick ? 25 : 120;
	if (!wait_set)
		opt.wait_s = opt.quick ? 5 : 10;
	opt.budget_ns = (double)budget_ms * 1e6;

	if (opt.cpu >= 0 && opt.spread)
		tc_usage_error("--cpu puts every thread on one CPU, --spread each on its own: give one of them");
	if (opt.cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(opt.cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) < 0)
			tc_usage_error("--cpu %d: %s", opt.cpu, strerror(errno));
	}

	if (json && opt.json_path && strcmp(opt.json_path, "-")) {
		jf = fopen(opt.json_path, "we");
		if (!jf)
			tc_usage_error("cannot write %s: %s", opt.json_path,
				    strerror(errno));
	} else if (json) {
		jf = stdout;
	}
	out = jf == stdout ? stderr : stdout;
	setvbuf(out, NULL, _IOLBF, 0);

	signal(SIGALRM, on_alarm);
	signal(SIGPIPE, SIG_IGN);
	detect_env(&env, opt.label);
	if (opt.cpu >= 0) {
		snprintf(env.threads, sizeof(env.threads), "all on CPU %d (--cpu)", opt.cpu);
	} else if (opt.spread) {
		bench_spread_init(env.threads, sizeof(env.threads));
	} else {
		snprintf(env.threads, sizeof(env.threads), "%s", THREADS_BY_SCHEDULER);
	}
	if (env.device)
		mem_objects = prepare_fd_room(mem_objects);

	wait_for_clocksource(&env, out);
	wait_for_quiet(&env, out, opt.wait_s);
	print_env(out, &env, opt.quick ? "quick" : "full", opt.runs,
		  opt.budget_ns / 1e6);
	print_header(out);

	res = tc_xcalloc(NROWS, sizeof(*res));
	t_start = now_ns();
	{
		const char *group = NULL;

		for (size_t i = 0; i < NROWS; i++) {
			if (!row_selected(&rows[i]))
				continue;
			if (!group || strcmp(group, rows[i].group)) {
				group = rows[i].group;
				fprintf(out, "-- %s\n", group);
			}
			run_row(&rows[i], &res[i], &env);
			print_row(out, &rows[i], &res[i]);
		}
	}
	fprintf(out, "\nrows took %.1f s (clock above)\n", (double)(now_ns() - t_start) / 1e9);
	tc_read_line(CLOCKSOURCE, env.clocksource_end, sizeof(env.clocksource_end));
	if (strcmp(env.clocksource, env.clocksource_end))
		fprintf(out, "\nwarning: the clocksource changed from %s to %s during the run: rows before the switch are on another time scale; run again\n",
			env.clocksource, env.clocksource_end);
	if (!env.device)
		fprintf(out, "\nnote: /dev/ntsync is missing or cannot be opened (%s): the ntsync rows were skipped.\n",
			env.device_error);

	if (jf) {
		write_json(jf, &env, res, opt.quick ? "quick" : "full", opt.runs,
			   opt.budget_ns);
		if (fflush(jf) != 0 || (jf != stdout && fclose(jf) != 0))
			tc_die("writing %s: %s", opt.json_path ? opt.json_path : "stdout",
			    strerror(errno));
		if (jf != stdout)
			fprintf(out, "\nJSON written to %s\n", opt.json_path);
	}
	free(res);
	return 0;
}

