#!/bin/sh
# Run inside a guest (as root) whose kernel has ntsync loaded: the model
# fuzzer, the concurrent fuzzer and the abuse tests, 64-bit and 32-bit, then
# a kmemleak scan, `rmmod ntsync`, and a check of the kernel log.  Any
# report of tests/kernel-log-gates (lockdep, KASAN, kmemleak, debug-objects,
# BUG, WARNING, Oops, ...) fails the run.  POSIX sh: it runs under busybox in an
# initramfs (vm/ntsync-vm boot --job fuzz) and under Debian's dash in a cloud
# guest (vm/ntsync-vm exec).
#
#   guest-abuse.sh [--bindir DIR] [--bindir32 DIR] [--gates FILE] [--seconds N]
#                  [--cycles N] [--seed N] [--no-rmmod] [--suite DIR]
#                  [--concurrent N] [--linearize N] [--linearize-only]
#                  [--memcg N]
#
#   --bindir DIR  where ntsync-fuzz, ntsync-abuse, ntsync-linearize are (an
#                 amd64/ folder of meson/build-static); default: next to this
#                 script, else PATH
#   --bindir32 DIR  the same programs built for i386 (compat ioctls); default
#                 DIR/../i386 when it exists
#   --gates FILE  the kernel-log gate list (tests/kernel-log-gates); default
#                 DIR/kernel-log-gates, else /usr/share/ntsync-tests/kernel-log-gates
#   --seconds N   fuzzing time in seconds, split over the fuzz runs (default 600)
#   --cycles N    create/close cycles for the abuse test (default 1000000; under
#                 TCG, where one cycle costs ~100x more, pass ~100000 and say so)
#   --concurrent N  seconds of the 64-bit concurrent fuzzer, instead of its
#                 share of --seconds (for a long concurrent run on a slow kernel)
#   --no-rmmod    leave the module loaded (when the driver is built in, rmmod
#                 is skipped anyway)
#   --suite DIR   first run the conformance suite built by meson/build-static:
#                 every DIR/*/test-* program (amd64/ and i386/; one
#                 result per program: cmocka exits with its number of failures)
#   --linearize N seconds of ntsync-linearize (concurrent histories checked for
#                 linearizability against the spec's model), 64-bit, plus N/5 of
#                 the 32-bit build when present; default 0 (not run)
#   --linearize-only  skip the fuzzers and the abuse tests (the suite, the
#                 linearizability phase and the end checks still run)
#   --memcg N     then N seconds of the 64-bit concurrent fuzzer inside a
#                 cgroup v2 memory cgroup held at its limit (memory.max lowered
#                 from the warmed-up fuzzer's charge until charges fail;
#                 oom_score_adj -1000, so that a failed charge is ENOMEM and
#                 not an OOM kill): the driver's allocation failures, every
#                 ENOMEM handled (--enomem-ok), the invariants kept, the
#                 charge back under 1 MiB after it; default 0 (not run)
# Ends with `N passed, N failed, N skipped`; exit 0 iff none failed.
set -eu
# shellcheck disable=SC3040 # busybox ash and dash >= 0.5.11 have pipefail
(set -o pipefail 2>/dev/null) && set -o pipefail

bindir=$(dirname "$0")
bindir32=
gates=
seconds=600
cycles=1000000
seed=
rmmod_it=1
suite=
linearize=0
lin_only=0
concurrent=
memcg=0
while [ $# -gt 0 ]; do
	case $1 in
	--bindir) bindir=${2:?--bindir needs a directory}; shift 2 ;;
	--bindir32) bindir32=${2:?--bindir32 needs a directory}; shift 2 ;;
	--gates) gates=${2:?--gates needs a file}; shift 2 ;;
	--seconds) seconds=${2:?--seconds needs a number}; shift 2 ;;
	--cycles) cycles=${2:?--cycles needs a number}; shift 2 ;;
	--seed) seed=${2:?--seed needs a number}; shift 2 ;;
	--no-rmmod) rmmod_it=0; shift ;;
	--suite) suite=${2:?--suite needs a directory}; shift 2 ;;
	--linearize) linearize=${2:?--linearize needs a number}; shift 2 ;;
	--linearize-only) lin_only=1; shift ;;
	--concurrent) concurrent=${2:?--concurrent needs a number}; shift 2 ;;
	--memcg) memcg=${2:?--memcg needs a number}; shift 2 ;;
	-h|--help) sed -n '2,44p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "guest-abuse: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
case $seconds$cycles$linearize$concurrent$memcg in *[!0-9]*) echo "guest-abuse: --seconds, --cycles, --concurrent, --linearize and --memcg take whole numbers" >&2; exit 2 ;; esac

[ -n "$bindir32" ] || [ ! -d "$bindir/../i386" ] || bindir32=$bindir/../i386
find_bin() {
	if [ -x "$bindir/$1" ]; then echo "$bindir/$1"
	elif command -v "$1" >/dev/null 2>&1; then command -v "$1"
	fi
}
find_bin32() {
	if [ -n "$bindir32" ] && [ -x "$bindir32/$1" ]; then echo "$bindir32/$1"; fi
}
fuzz=$(find_bin ntsync-fuzz)
abuse=$(find_bin ntsync-abuse)
fuzz32=$(find_bin32 ntsync-fuzz)
abuse32=$(find_bin32 ntsync-abuse)
lin=$(find_bin ntsync-linearize)
lin32=$(find_bin32 ntsync-linearize)
if [ -z "$fuzz" ] || [ -z "$abuse" ]; then
	echo "guest-abuse: no ntsync-fuzz/ntsync-abuse in $bindir or PATH; build them with meson/build-static OUTDIR and pass --bindir OUTDIR/amd64" >&2
	exit 2
fi
if [ -z "$gates" ]; then
	for g in "$bindir/kernel-log-gates" /usr/share/ntsync-tests/kernel-log-gates; do
		[ -f "$g" ] && { gates=$g; break; }
	done
fi
if [ -z "$gates" ] || [ ! -f "$gates" ]; then
	echo "guest-abuse: no kernel-log gate list (tests/kernel-log-gates) at '${gates:-$bindir/kernel-log-gates}'; pass --gates FILE" >&2
	exit 2
fi
# directive NAME: the VALUE of the gate list's "@NAME<TAB>VALUE<TAB>what" line
# (the taint flags a run may add, how KCSAN's reports begin: written there once)
tab=$(printf '\t')
directive() {
	while IFS="$tab" read -r d_name d_value _; do
		if [ "$d_name" = "@$1" ] && [ -n "$d_value" ]; then
			printf '%s\n' "$d_value"
			return 0
		fi
	done <"$gates"
	echo "guest-abuse: the gate list $gates has no '@$1<TAB>VALUE<TAB>what' line (an old copy of tests/kernel-log-gates?)" >&2
	return 1
}
taint_allowed=$(directive taint-allowed) || exit 2
kcsan_report=$(directive kcsan-report) || exit 2
case $taint_allowed in *[!0-9]*) echo "guest-abuse: $gates: @taint-allowed '$taint_allowed' is not a decimal number" >&2; exit 2 ;; esac
if [ ! -c /dev/ntsync ]; then
	echo "guest-abuse: /dev/ntsync is missing: load the module (modprobe ntsync) first"
	echo "0 passed, 0 failed, 1 skipped"
	exit 77
fi

passed=0 failed=0 skipped=0
result() { # name rc
	case $2 in
	0) passed=$((passed + 1)); echo "ok $1" ;;
	77) skipped=$((skipped + 1)); echo "skip $1" ;;
	*) failed=$((failed + 1)); echo "FAIL $1 (exit $2)" ;;
	esac
}
run() { # name cmd...
	name=$1; shift
	echo "== $name: $*"
	rc=0
	"$@" || rc=$?
	result "$name" "$rc"
}

[ -d /sys/kernel/debug/failslab ] || mount -t debugfs none /sys/kernel/debug 2>/dev/null || true
leak=/sys/kernel/debug/kmemleak
if [ -w "$leak" ]; then
	echo scan >"$leak" || true
	echo clear >"$leak" || true
fi
log_lines=$(dmesg | wc -l)
tainted_before=$(cat /proc/sys/kernel/tainted)
echo "guest-abuse: kernel $(uname -r), $(nproc 2>/dev/null || echo ?) CPUs, tainted=$tainted_before, ${seconds}s of fuzzing, $cycles cycles, ${linearize}s of linearizability checks"
echo "guest-abuse: driver version $(cat /sys/module/ntsync/version 2>/dev/null || echo 'none (not our module)')"

if [ -n "$suite" ]; then
	# The conformance suite, 64-bit and compat (i386 on amd64: compat ioctls), from
	# every folder of DIR (meson/build-static's amd64/ and i386/, the initramfs's
	# native/ and compat/); a program's exit status is its number of failed test
	# cases, 77 when it skipped.
	for d in "$suite"/*/; do
		arch=$(basename "$d")
		for t in "$d"test-*; do
			[ -x "$t" ] || continue
			run "suite-$arch-${t##*/test-}" "$t"
		done
	done
fi

seedarg=
[ -n "$seed" ] && seedarg="--seed $seed"
if [ "$lin_only" = 0 ]; then
# Time split: model 40%, concurrent 40% (64-bit), 10% each for the 32-bit runs.
m=$((seconds * 4 / 10)); c=$((seconds * 4 / 10)); s32=$((seconds / 10))
[ -z "$fuzz32" ] && { m=$((m + s32)); c=$((c + s32)); }
[ -n "$concurrent" ] && c=$concurrent
# shellcheck disable=SC2086 # seedarg is empty or two words
run fuzz-model "$fuzz" --model --seconds "$m" $seedarg
# shellcheck disable=SC2086
run fuzz-concurrent "$fuzz" --concurrent --seconds "$c" --threads 3 --procs 2 $seedarg
run abuse "$abuse" --cycles "$cycles"
if [ -n "$fuzz32" ]; then
	# shellcheck disable=SC2086
	run fuzz-model-32 "$fuzz32" --model --seconds "$s32" $seedarg
	# shellcheck disable=SC2086
	run fuzz-concurrent-32 "$fuzz32" --concurrent --seconds "$s32" --threads 2 --procs 2 $seedarg
	run abuse-32 "$abuse32" --cycles $((cycles / 10))
else
	echo "guest-abuse: no i386 builds (--bindir32): compat ioctls not exercised"
	skipped=$((skipped + 1))
fi
fi

if [ "$linearize" -gt 0 ]; then
	# Concurrent histories (2 processes x 2 threads, polls and every
	# non-blocking call) checked for linearizability against the model.
	if [ -z "$lin" ]; then
		echo "guest-abuse: no ntsync-linearize in $bindir or PATH"
		result linearize 1
	else
		# shellcheck disable=SC2086
		run linearize "$lin" --seconds "$linearize" --procs 2 --threads 2 $seedarg
		if [ -n "$lin32" ]; then
			# shellcheck disable=SC2086
			run linearize-32 "$lin32" --seconds $((linearize / 5 + 1)) --procs 2 --threads 2 $seedarg
		fi
	fi
fi

# The concurrent fuzzer in a memory cgroup at its limit (--memcg N).
memcg_phase() { # seconds
	cgroot=/sys/fs/cgroup
	[ -e "$cgroot/cgroup.controllers" ] || mount -t cgroup2 none "$cgroot" 2>/dev/null || true
	if ! grep -qw memory "$cgroot/cgroup.controllers" 2>/dev/null; then
		echo "guest-abuse: no cgroup v2 memory controller at $cgroot: the memcg phase is skipped"
		result fuzz-concurrent-memcg 77
		return
	fi
	echo +memory >"$cgroot/cgroup.subtree_control" 2>/dev/null || true
	cg=$cgroot/ntsync-pressure
	mkdir -p "$cg"
	if [ ! -e "$cg/memory.max" ]; then
		echo "guest-abuse: $cg has no memory.max (the memory controller is not enabled below the root)"
		result fuzz-concurrent-memcg 1
		return
	fi
	echo 0 >"$cg/memory.swap.max" 2>/dev/null || true
	# an OOM report without a victim prints no task list
	echo 0 >/proc/sys/vm/oom_dump_tasks 2>/dev/null || true
	out=${TMPDIR:-/tmp}/guest-abuse-memcg.$$
	echo "== fuzz-concurrent-memcg: $fuzz --concurrent --enomem-ok --seconds $(($1 + 5)) in $cg"
	# the shell moves itself into the cgroup, then becomes the fuzzer; its
	# worker processes inherit both the cgroup and the OOM exemption
	# shellcheck disable=SC2016,SC2086 # $$ is the inner shell's; seedarg is empty or two words
	sh -c 'echo $$ >"$1/cgroup.procs" && echo -1000 >/proc/$$/oom_score_adj && shift && exec "$@"' \
		sh "$cg" "$fuzz" --concurrent --enomem-ok --seconds $(($1 + 5)) --threads 3 --procs 2 $seedarg >"$out" 2>&1 &
	pid=$!
	sleep 5	# warm-up: every thread, object and page the fuzzer keeps is there
	# memory.current includes the per-CPU charge stock (up to 64 pages a
	# CPU), so a limit at memory.current does not bite: lower it 32 KiB a
	# second until charges fail (the cgroup's "oom" event: the OOM killer
	# was asked and found no victim), then hold it there.
	max=$(cat "$cg/memory.current")
	echo "guest-abuse: memcg: after the warm-up memory.current is $((max / 1024)) KiB"
	floor=$((max / 4))
	t=0
	while kill -0 "$pid" 2>/dev/null && [ "$t" -lt "$1" ]; do
		ooms=$(sed -n 's/^oom //p' "$cg/memory.events")
		if [ "${ooms:-0}" = 0 ] && [ "$max" -gt "$floor" ]; then
			max=$((max - 32768))
			echo "$max" >"$cg/memory.max"
		fi
		sleep 1
		t=$((t + 1))
	done
	echo "guest-abuse: memcg: memory.max held at $((max / 1024)) KiB (lowered from the warm-up's charge until charges failed)"
	rc=0
	wait "$pid" || rc=$?
	cat "$out"
	hits=$(sed -n 's/^max //p' "$cg/memory.events")
	ooms=$(sed -n 's/^oom //p' "$cg/memory.events")
	kills=$(sed -n 's/^oom_kill //p' "$cg/memory.events")
	enomem=$(sed -n 's/^enomem: \([0-9]*\).*/\1/p' "$out")
	echo "guest-abuse: memcg: limit reached ${hits:-?} times, ${ooms:-?} failed charges (OOM without a victim), ${kills:-?} OOM kills, ${enomem:-?} ENOMEM tolerated by the fuzzer"
	if [ "$rc" = 0 ] && [ "${kills:-1}" != 0 ]; then
		echo "guest-abuse: memcg: a process was OOM-killed despite oom_score_adj -1000"
		rc=1
	fi
	if [ "$rc" = 0 ] && [ "${enomem:-0}" = 0 ]; then
		echo "guest-abuse: memcg: no call ever failed with ENOMEM: the limit never bit (nothing tested)"
		rc=1
	fi
	# back to nothing charged once the fuzzer is gone (RCU frees its files a little later)
	i=0
	while [ "$i" -lt 10 ] && [ "$(cat "$cg/memory.current")" -gt 1048576 ]; do sleep 1; i=$((i + 1)); done
	left=$(cat "$cg/memory.current")
	echo "guest-abuse: memcg: $left B still charged after the fuzzer exited"
	if [ "$rc" = 0 ] && [ "$left" -gt 1048576 ]; then
		echo "guest-abuse: memcg: more than 1 MiB still charged to the cgroup: a leak"
		rc=1
	fi
	rmdir "$cg" 2>/dev/null || true
	rm -f "$out"
	result fuzz-concurrent-memcg "$rc"
}
if [ "$memcg" -gt 0 ]; then memcg_phase "$memcg"; fi

# kmemleak: two scans (an object must look unreferenced twice to be reported)
if [ -w "$leak" ]; then
	echo scan >"$leak"; sleep 1; echo scan >"$leak"
	if grep -q "unreferenced object" "$leak"; then
		echo "guest-abuse: kmemleak reports:"; cat "$leak"
		result kmemleak 1
	else
		result kmemleak 0
	fi
else
	echo "guest-abuse: no kmemleak in this kernel"
	result kmemleak 77
fi

if [ "$rmmod_it" = 1 ] && [ -d /sys/module/ntsync ] && [ -e /sys/module/ntsync/initstate ]; then
	echo "== rmmod ntsync"
	rc=0; rmmod ntsync || rc=$?
	[ $rc = 0 ] && [ ! -d /sys/module/ntsync ] || rc=1
	result rmmod $rc
else
	echo "guest-abuse: ntsync is built in or --no-rmmod given: rmmod skipped"
	result rmmod 77
fi

# the kernel log since the start: a report of the gate list fails the run
patterns=${TMPDIR:-/tmp}/guest-abuse-gates.$$
grep -v -e '^#' -e '^$' -e '^@' "$gates" | cut -f1 >"$patterns"
# On a KCSAN kernel the kernel's own data races (timers, the tick) are
# reported too: the host judges those reports (vm/ntsync-vm boot --job fuzz
# debug-kernel kcsan: one in ntsync's code fails the run), so their lines
# (@kcsan-report) are left out here, as tests/kernel-log-gates says.
not_kcsan() {
	if [ -e /sys/kernel/debug/kcsan ]; then grep -v -F -e "$kcsan_report"; else cat; fi
}
if dmesg | tail -n +"$((log_lines + 1))" | not_kcsan | grep -E -f "$patterns"; then
	echo "guest-abuse: the kernel log shows a report (above)"
	result kernel-log 1
else
	result kernel-log 0
fi
rm -f "$patterns"
tainted_after=$(cat /proc/sys/kernel/tainted)
# the out-of-tree and unsigned-module taints (@taint-allowed) are expected when ours loads
if [ $((tainted_after & ~(tainted_before | taint_allowed))) -ne 0 ]; then
	echo "guest-abuse: taint changed from $tainted_before to $tainted_after"
	result taint 1
else
	result taint 0
fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
