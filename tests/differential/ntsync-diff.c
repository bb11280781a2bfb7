// SPDX-License-Identifier: GPL-2.0-only
/*
 * ntsync-diff: the differential test's command line.  It runs the error
 * matrix and the random walks against whichever driver serves /dev/ntsync,
 * prints one line per call, compares two such outputs, and makes the
 * candidates with which a failing walk is shrunk.  The guest job
 * (vm/guest/jobs/test.sh) runs it once per driver in one boot and
 * compares; tests/test-diff.c compares against the recorded reference.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "diff.h"
#include "tools-common.h"

#define EXIT_SKIP 77

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: ntsync-diff COMMAND [OPTIONS]\n"
		"The differential test of /dev/ntsync: every line says what the driver\n"
		"answered to one call; two drivers' outputs are compared line by line.\n"
		"\n"
		"  matrix                  the error matrix, one line per case\n"
		"  walk [--first S] [--seeds N] [--trace]\n"
		"                          walks S .. S+N-1 (default 1 and 1000): one digest\n"
		"                          line each, or with --trace every call\n"
		"  all [--seeds N]         matrix, then the walks' digests: the format of the\n"
		"                          recorded reference\n"
		"  ops SEED                the calls of walk SEED, in the replay format\n"
		"  replay [--digest] FILE...\n"
		"                          run the calls in each FILE (the replay format)\n"
		"  candidates FILE DIR     write the shrink candidates of FILE, shortest\n"
		"                          first, as DIR/NNNN.ops\n"
		"  compare [--max N] REFERENCE OUTPUT\n"
		"                          compare two outputs (comments '#' skipped); show\n"
		"                          N differences (default 20); exit 1 if any\n"
		"\n"
		"Exit status: 0, 1 (differences), 2 (usage), 77 (no /dev/ntsync).\n");
}

static unsigned long long number(const char *s, const char *what)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end)
		tc_usage_error("%s must be a number, not '%s'", what, s);
	return v;
}

static int device_missing(void)
{
	if (errno == ENOENT || errno == ENODEV || errno == ENXIO) {
		fprintf(stderr, "ntsync-diff: /dev/ntsync: %s (no driver loaded?): skipped\n",
			strerror(errno));
		return EXIT_SKIP;
	}
	tc_die("/dev/ntsync: %s", strerror(errno));
}

static void walk_one(struct nd_out *o, unsigned long long seed, bool trace)
{
	struct nd_op ops[ND_MAX_OPS];
	unsigned int n = nd_walk_ops(seed, ops, ND_MAX_OPS);
	struct nd_out d;

	if (trace) {
		nd_line(o, "# walk %llu ops=%u", seed, n);
		if (nd_run_ops(o, ops, n))
			exit(device_missing());
		return;
	}
	nd_out_init(&d, NULL);
	if (nd_run_ops(&d, ops, n))
		exit(device_missing());
	nd_line(o, "walk %llu ops=%u digest=%016llx", seed, n, (unsigned long long)d.digest);
}

static void header(const char *what)
{
	char version[64] = "in-tree (no /sys/module/ntsync/version)";
	struct utsname u;
	FILE *f;

	f = fopen("/sys/module/ntsync/version", "r");
	if (f) {
		if (fgets(version, sizeof(version), f))
			version[strcspn(version, "\n")] = 0;
		fclose(f);
	} else if (access("/sys/module/ntsync", F_OK)) {
		snprintf(version, sizeof(version), "built in or unknown");
	}
	uname(&u);
	printf("# ntsync-diff %s: kernel %s %s, driver %s\n", what, u.release, u.machine, version);
}

static int cmd_walk(int argc, char **argv, bool all)
{
	static const struct option lo[] = {
		{ "first", required_argument, NULL, 'f' },
		{ "seeds", required_argument, NULL, 'n' },
		{ "trace", no_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long first = 1, seeds = 1000, s;
	bool trace = false;
	struct nd_out o;
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'f': first = number(optarg, "--first"); break;
		case 'n': seeds = number(optarg, "--seeds"); break;
		case 't': trace = true; break;
		default: exit(2);
		}
	}
	if (optind != argc)
		tc_usage_error("unexpected argument '%s'", argv[optind]);
	if (all && (trace || first != 1))
		tc_usage_error("all takes --seeds only");
	nd_out_init(&o, stdout);
	if (all) {
		long cases;

		header("all");
		cases = nd_matrix(&o);
		if (cases < 0)
			return device_missing();
		printf("# matrix: %ld cases; walks %llu to %llu follow\n", cases, first,
		       first + seeds - 1);
	}
	for (s = first; s < first + seeds; s++)
		walk_one(&o, s, trace);
	return 0;
}

static unsigned int read_ops(const char *path, struct nd_op *ops)
{
	char *line = NULL;
	size_t cap = 0;
	unsigned int n = 0, no = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		tc_die("%s: %s", path, strerror(errno));
	while (getline(&line, &cap, f) >= 0) {
		no++;
		line[strcspn(line, "\n")] = 0;
		if (!line[0] || line[0] == '#')
			continue;
		if (n == ND_MAX_OPS)
			tc_die("%s: more than %d calls", path, ND_MAX_OPS);
		if (nd_op_parse(line, &ops[n++]))
			tc_die("%s:%u: not a call of the replay format: '%s'", path, no, line);
	}
	free(line);
	fclose(f);
	return n;
}

static int cmd_replay(int argc, char **argv)
{
	bool digest = argc > 1 && !strcmp(argv[1], "--digest");
	struct nd_op ops[ND_MAX_OPS];
	struct nd_out o, d;
	int i;

	nd_out_init(&o, stdout);
	for (i = 1 + digest; i < argc; i++) {
		unsigned int n = read_ops(argv[i], ops);

		if (digest) {
			nd_out_init(&d, NULL);
			if (nd_run_ops(&d, ops, n))
				return device_missing();
			printf("%s ops=%u digest=%016llx\n", argv[i], n, (unsigned long long)d.digest);
		} else {
			printf("# %s ops=%u\n", argv[i], n);
			if (nd_run_ops(&o, ops, n))
				return device_missing();
		}
	}
	return 0;
}

/*
 * Delta debugging's removals: every run of K consecutive calls left out,
 * for K = n/2, n/4, ... 1, the shortest candidates first.  The caller
 * keeps the first candidate whose outputs still differ and asks again.
 */
static int cmd_candidates(const char *path, const char *dir)
{
	struct nd_op ops[ND_MAX_OPS];
	unsigned int n = read_ops(path, ops), k, start, i, no = 0;
	char name[4096], text[160];

	if (mkdir(dir, 0755) && errno != EEXIST)
		tc_die("%s: %s", dir, strerror(errno));
	for (k = n / 2 ? n / 2 : 1; n && k >= 1; k /= 2) {
		for (start = 0; start + k <= n; start += k) {
			FILE *f;

			snprintf(name, sizeof(name), "%s/%04u.ops", dir, no++);
			f = fopen(name, "w");
			if (!f)
				tc_die("%s: %s", name, strerror(errno));
			for (i = 0; i < n; i++) {
				if (i >= start && i < start + k)
					continue;
				nd_op_format(&ops[i], text, sizeof(text));
				fprintf(f, "%s\n", text);
			}
			if (fclose(f))
				tc_die("%s: %s", name, strerror(errno));
		}
		if (k == 1)
			break;
	}
	printf("%u candidates from %u calls\n", no, n);
	return 0;
}

static int cmd_compare(int argc, char **argv)
{
	unsigned long max = 20;
	struct nd_cmp r;
	FILE *a, *b;
	int i = 1, ret;

	if (argc > 2 && !strcmp(argv[1], "--max")) {
		max = number(argv[2], "--max");
		i = 3;
	}
	if (argc - i != 2)
		tc_usage_error("compare needs REFERENCE and OUTPUT");
	a = fopen(argv[i], "r");
	if (!a)
		tc_die("%s: %s", argv[i], strerror(errno));
	b = fopen(argv[i + 1], "r");
	if (!b)
		tc_die("%s: %s", argv[i + 1], strerror(errno));
	ret = nd_compare(a, b, stdout, max, &r);
	printf("compared %lu lines (%lu matrix cases, %lu walks): %lu differences, "
	       "%lu known differences (upstream/0002, ours as documented)\n",
	       r.lines, r.matrix, r.walks, r.differences, r.known);
	fclose(a);
	fclose(b);
	return ret;
}

int main(int argc, char **argv)
{
	const char *cmd;
	struct nd_op ops[ND_MAX_OPS];
	struct nd_out o;
	char text[160];
	unsigned int n, i;

	tc_progname = "ntsync-diff";
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	if (argc < 2)
		tc_usage_error("a command is needed");
	cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
		usage(stdout);
		return 0;
	}
	argc--;
	argv++;
	if (!strcmp(cmd, "matrix")) {
		if (argc != 1)
			tc_usage_error("matrix takes no arguments");
		nd_out_init(&o, stdout);
		header("matrix");
		if (nd_matrix(&o) < 0)
			return device_missing();
		return 0;
	}
	if (!strcmp(cmd, "walk") || !strcmp(cmd, "all"))
		return cmd_walk(argc, argv, !strcmp(cmd, "all"));
	if (!strcmp(cmd, "ops")) {
		if (argc != 2)
			tc_usage_error("ops needs SEED");
		n = nd_walk_ops(number(argv[1], "SEED"), ops, ND_MAX_OPS);
		for (i = 0; i < n; i++) {
			nd_op_format(&ops[i], text, sizeof(text));
			printf("%s\n", text);
		}
		return 0;
	}
	if (!strcmp(cmd, "replay"))
		return cmd_replay(argc, argv);
	if (!strcmp(cmd, "candidates")) {
		if (argc != 3)
			tc_usage_error("candidates needs FILE and DIR");
		return cmd_candidates(argv[1], argv[2]);
	}
	if (!strcmp(cmd, "compare"))
		return cmd_compare(argc, argv);
	tc_usage_error("unknown command '%s'", cmd);
}
