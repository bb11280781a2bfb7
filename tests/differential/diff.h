/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The differential test's engine: an exhaustive error matrix and seeded
 * random walks over /dev/ntsync, each call printed as one line that says
 * everything the driver answered (the result, every output field, the
 * state of every object read back), so that two drivers can be compared
 * line by line.  Every line is a pure function of the driver's answers:
 * no descriptor numbers, addresses or times appear in it.
 *
 * The order of checks that the lines hold a driver to is doc/abi.md,
 * §abi.order; tests/differential/README.md says how the parts fit.
 */
#ifndef NTSYNC_DIFF_H
#define NTSYNC_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Where lines go: a file (or none), and a running digest of them. */
struct nd_out {
	FILE *f;		/* every line is written here; NULL: digest only */
	uint64_t digest;	/* FNV-1a 64 over the lines, newlines included */
	unsigned long lines;
};

void nd_out_init(struct nd_out *o, FILE *f);
void nd_line(struct nd_out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * The marker of a case where the project departs from mainline on
 * purpose (doc/abi.md §abi.mainline.7, upstream/0002: a semaphore or
 * mutex given as alert).  Such a line ends with " spec=yes" when the
 * driver gave the documented answer (EINVAL, nothing changed), else with
 * " spec=no".
 */
#define ND_KNOWN_0002 "[known 0002]"

/*
 * The error matrix: one line per case, in a fixed order.  Returns the
 * number of cases, or -1 (errno set) when /dev/ntsync cannot be opened.
 */
long nd_matrix(struct nd_out *o);

/* ---- the random walk ---- */

#define ND_SLOTS	6	/* objects a walk juggles */
#define ND_MAX_OPS	128	/* ops in one sequence */
#define ND_MAX_WAIT	6	/* objects in one of the walk's waits */

enum nd_opk {
	ND_CREATE, ND_RELEASE, ND_UNLOCK, ND_KILL, ND_SET, ND_RESET,
	ND_PULSE, ND_SREAD, ND_MREAD, ND_EREAD, ND_WAITANY, ND_WAITALL,
	ND_CLOSE, ND_NOPK
};

enum nd_kind { ND_NONE, ND_SEM, ND_MUTEX, ND_EVENT };

struct nd_op {
	uint8_t k;		/* enum nd_opk */
	uint8_t slot;		/* the object acted on, or created */
	uint8_t kind;		/* create: enum nd_kind */
	uint8_t other;		/* create: on the second instance */
	uint8_t null;		/* pass NULL as the argument */
	uint8_t n;		/* waits: objects */
	uint8_t objs[ND_MAX_WAIT];	/* waits: slots */
	uint8_t alert;		/* waits: slot + 1; 0 for none */
	uint8_t realtime;	/* waits: NTSYNC_WAIT_REALTIME */
	uint32_t a, b;		/* create: the two fields; release: count;
				 * unlock, kill, waits: owner (a) */
};

/* The sequence of seed @seed (depends on the seed alone, never on a
 * driver's answers); returns its length. */
unsigned int nd_walk_ops(uint64_t seed, struct nd_op *ops, unsigned int max);
/* One op as text (the replay format); @buf of at least 128 bytes. */
void nd_op_format(const struct nd_op *op, char *buf, size_t len);
/* Parse nd_op_format()'s text; 0, or -1 when @line is not an op. */
int nd_op_parse(const char *line, struct nd_op *op);
/*
 * Run @ops on fresh instances, one line per op into @o.  Returns 0, or -1
 * (errno set) when /dev/ntsync cannot be opened.
 */
int nd_run_ops(struct nd_out *o, const struct nd_op *ops, unsigned int n);

/* ---- comparison ---- */

struct nd_cmp {
	unsigned long lines;		/* lines compared */
	unsigned long differences;	/* lines that differ (missing ones too) */
	unsigned long known;		/* differences allowed by ND_KNOWN_0002 */
	unsigned long matrix, walks;	/* matrix lines and walk lines in @b */
};

/*
 * Compare the output of two runs, @a the reference (mainline's driver)
 * and @b the driver under test, line by line; lines starting with '#' are
 * comments in either.  A pair of lines that differ counts as a known
 * difference only if both carry ND_KNOWN_0002 for the same case and @b's
 * ends with " spec=yes".  Each difference goes to @report (at most
 * @max_report of them, then a count).  Returns 0 when nothing differs.
 */
int nd_compare(FILE *a, FILE *b, FILE *report, unsigned long max_report,
	       struct nd_cmp *res);

#endif /* NTSYNC_DIFF_H */
