// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ntsync-winbench: the NT synchronization calls a Windows program makes, timed from inside
 * Wine: with /dev/ntsync they are ioctls of the driver; without it, round trips to
 * wineserver. A Windows console program (mingw-w64), built by `vm/ntsync-vm wine` with the
 * Wine build's toolchain and run in its guests.
 *
 *   ntsync-winbench [--quick] [--repeat N]
 *   ntsync-winbench --hold       holds objects until --release (or 10 minutes): a Windows
 *                                process that surely has the device open while the guest
 *                                looks at it (vm/guest/jobs/wine.sh's snapshot)
 *   ntsync-winbench --release    ends a --hold
 *
 * One line a row and run: "ROW NS-PER-OP OPS", then "ntsync-winbench: done". Every row
 * runs N times (--repeat, default 5), in rounds (each row once, then each again), so that
 * the spread of a row shows, and a drift over the process's life shows as a trend. Rows:
 *   sem.wait-release   uncontended WaitForSingleObject + ReleaseSemaphore
 *   sem.poll           WaitForSingleObject(sem, 0) on an unsignaled semaphore (a poll)
 *   wait-any.64        WaitForMultipleObjects over 64 events, the last one signaled
 *   wait-any.64.busy   the same while another thread of the process sleeps in a wait on
 *                      16 events (as a game's worker threads do), holding queue entries
 *                      off the kernel stack (the driver's spare array, if it took that)
 *   wait-all.8         WaitForMultipleObjects(bWaitAll) over 8 semaphores, released again
 *   event.ping-pong    SetEvent/WaitForSingleObject between two threads, per round trip
 *
 * Time is QueryPerformanceCounter's: in a guest under -icount it counts guest instructions.
 */
#include <windows.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static LARGE_INTEGER freq;

static double now_ns(void)
{
	LARGE_INTEGER t;

	QueryPerformanceCounter(&t);
	return (double)t.QuadPart * 1e9 / (double)freq.QuadPart;
}

static void die(const char *what)
{
	fprintf(stderr, "ntsync-winbench: %s failed: error %lu\n", what, GetLastError());
	exit(1);
}

static void row(const char *name, double ns, long ops)
{
	printf("%-18s %12.0f %10ld\n", name, ns / ops, ops);
	fflush(stdout);
}

static void bench_sem(long n)
{
	HANDLE sem = CreateSemaphoreW(NULL, 1, 1, NULL);
	double t;
	long i;

	if (!sem)
		die("CreateSemaphore");
	t = now_ns();
	for (i = 0; i < n; i++) {
		if (WaitForSingleObject(sem, INFINITE) != WAIT_OBJECT_0)
			die("WaitForSingleObject");
		if (!ReleaseSemaphore(sem, 1, NULL))
			die("ReleaseSemaphore");
	}
	row("sem.wait-release", now_ns() - t, n);

	if (WaitForSingleObject(sem, INFINITE) != WAIT_OBJECT_0)
		die("WaitForSingleObject");
	t = now_ns();
	for (i = 0; i < n; i++)
		if (WaitForSingleObject(sem, 0) != WAIT_TIMEOUT)
			die("the poll");
	row("sem.poll", now_ns() - t, n);
	CloseHandle(sem);
}

static void bench_wait_any(long n, const char *name)
{
	HANDLE ev[MAXIMUM_WAIT_OBJECTS];
	double t;
	long i;
	int k;

	for (k = 0; k < MAXIMUM_WAIT_OBJECTS; k++)
		if (!(ev[k] = CreateEventW(NULL, TRUE, k == MAXIMUM_WAIT_OBJECTS - 1, NULL)))
			die("CreateEvent");
	t = now_ns();
	for (i = 0; i < n; i++)
		if (WaitForMultipleObjects(MAXIMUM_WAIT_OBJECTS, ev, FALSE, INFINITE) !=
		    WAIT_OBJECT_0 + MAXIMUM_WAIT_OBJECTS - 1)
			die("WaitForMultipleObjects (any)");
	row(name, now_ns() - t, n);
	for (k = 0; k < MAXIMUM_WAIT_OBJECTS; k++)
		CloseHandle(ev[k]);
}

#define SLEEPER_WAIT 16

static DWORD WINAPI sleeper(void *arg)
{
	HANDLE *ev = arg;

	/* ev[0] ends it; the others are never signaled */
	if (WaitForMultipleObjects(SLEEPER_WAIT, ev, FALSE, INFINITE) != WAIT_OBJECT_0)
		die("WaitForMultipleObjects (the sleeping thread)");
	return 0;
}

/* wait-any.64 while another thread sleeps in a wait on SLEEPER_WAIT events */
static void bench_wait_any_busy(long n)
{
	HANDLE ev[SLEEPER_WAIT], thread;
	int k;

	for (k = 0; k < SLEEPER_WAIT; k++)
		if (!(ev[k] = CreateEventW(NULL, FALSE, FALSE, NULL)))
			die("CreateEvent");
	if (!(thread = CreateThread(NULL, 0, sleeper, ev, 0, NULL)))
		die("CreateThread");
	/* let it go to sleep in its wait first */
	Sleep(50);
	bench_wait_any(n, "wait-any.64.busy");
	if (!SetEvent(ev[0]))
		die("SetEvent");
	WaitForSingleObject(thread, INFINITE);
	CloseHandle(thread);
	for (k = 0; k < SLEEPER_WAIT; k++)
		CloseHandle(ev[k]);
}

static void bench_wait_all(long n)
{
	HANDLE sem[8];
	double t;
	long i;
	int k;

	for (k = 0; k < 8; k++)
		if (!(sem[k] = CreateSemaphoreW(NULL, 1, 1, NULL)))
			die("CreateSemaphore");
	t = now_ns();
	for (i = 0; i < n; i++) {
		if (WaitForMultipleObjects(8, sem, TRUE, INFINITE) != WAIT_OBJECT_0)
			die("WaitForMultipleObjects (all)");
		for (k = 0; k < 8; k++)
			if (!ReleaseSemaphore(sem[k], 1, NULL))
				die("ReleaseSemaphore");
	}
	row("wait-all.8", now_ns() - t, n);
	for (k = 0; k < 8; k++)
		CloseHandle(sem[k]);
}

struct pingpong {
	HANDLE ping, pong;
	long n;
};

static DWORD WINAPI ponger(void *arg)
{
	struct pingpong *p = arg;
	long i;

	for (i = 0; i < p->n; i++) {
		if (WaitForSingleObject(p->ping, INFINITE) != WAIT_OBJECT_0)
			die("WaitForSingleObject (pong side)");
		if (!SetEvent(p->pong))
			die("SetEvent (pong side)");
	}
	return 0;
}

static void bench_pingpong(long n)
{
	struct pingpong p = { CreateEventW(NULL, FALSE, FALSE, NULL), CreateEventW(NULL, FALSE, FALSE, NULL), n };
	HANDLE thread;
	double t;
	long i;

	if (!p.ping || !p.pong)
		die("CreateEvent");
	if (!(thread = CreateThread(NULL, 0, ponger, &p, 0, NULL)))
		die("CreateThread");
	t = now_ns();
	for (i = 0; i < n; i++) {
		if (!SetEvent(p.ping))
			die("SetEvent");
		if (WaitForSingleObject(p.pong, INFINITE) != WAIT_OBJECT_0)
			die("WaitForSingleObject");
	}
	row("event.ping-pong", now_ns() - t, n);
	WaitForSingleObject(thread, INFINITE);
	CloseHandle(thread);
	CloseHandle(p.ping);
	CloseHandle(p.pong);
}

#define HOLD_EVENT L"ntsync-winbench-hold"

/* A semaphore, a mutex owned by this thread, two events: then wait for --release. */
static int hold(void)
{
	HANDLE release = CreateEventW(NULL, TRUE, FALSE, HOLD_EVENT);
	HANDLE sem = CreateSemaphoreW(NULL, 0, 1, NULL);
	HANDLE mutex = CreateMutexW(NULL, TRUE, NULL);
	HANDLE event = CreateEventW(NULL, FALSE, FALSE, NULL);
	DWORD r;

	if (!release || !sem || !mutex || !event)
		die("creating the objects to hold");
	printf("ntsync-winbench: holding 4 objects\n");
	fflush(stdout);
	r = WaitForSingleObject(release, 600000);
	printf("ntsync-winbench: %s\n", r == WAIT_OBJECT_0 ? "released" : "not released in 10 minutes");
	return r == WAIT_OBJECT_0 ? 0 : 1;
}

static int release_hold(void)
{
	HANDLE release = OpenEventW(EVENT_MODIFY_STATE, FALSE, HOLD_EVENT);

	if (!release || !SetEvent(release))
		die("releasing the --hold (OpenEvent, SetEvent)");
	return 0;
}

int main(int argc, char **argv)
{
	long n = 20000;
	int repeat = 5, i;
	char *end;

	if (argc == 2 && !strcmp(argv[1], "--hold"))
		return hold();
	if (argc == 2 && !strcmp(argv[1], "--release"))
		return release_hold();
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			n = 2000;
		} else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) {
			repeat = strtol(argv[++i], &end, 10);
			if (*end || repeat < 1 || repeat > 100) {
				fprintf(stderr, "ntsync-winbench: --repeat %s: give a count from 1 to 100\n", argv[i]);
				return 2;
			}
		} else {
			fprintf(stderr, "usage: ntsync-winbench [--quick] [--repeat N] | --hold | --release\n");
			return 2;
		}
	}

	if (!QueryPerformanceFrequency(&freq))
		die("QueryPerformanceFrequency");
	printf("%-18s %12s %10s\n", "row", "ns/op", "ops");
	for (i = 0; i < repeat; i++) {
		bench_sem(n);
		bench_wait_any(n / 4, "wait-any.64");
		bench_wait_any_busy(n / 4);
		bench_wait_all(n / 4);
		bench_pingpong(n / 4);
	}
	printf("ntsync-winbench: done\n");
	return 0;
}
