#!/bin/sh
# /init of `ntsync-vm coverage`: the gcov kernel (build-kernel --flavour gcov) with our
# module built with GCOV_PROFILE, the test groups one after another; before each group the
# kernel's gcov counters are reset, after it the module's ntsync.gcda goes to the host on
# the console (base64 between gcda-begin and gcda-end markers, with its size and md5sum),
# where vm/ntsync_vm/coverage.py turns each into line and branch coverage.  Then, if the
# host built it, mainline's driver (/mainline.ko) under mainline's kselftest, the same way.
# /coverage-args: FUZZ_SECONDS, LINEARIZE_SECONDS, CYCLES (shell assignments, coverage.py).
# shellcheck source=vm/guest/init/lib.sh
. /lib/init.sh
mount -t tmpfs tmpfs /tmp
mount -t debugfs debugfs /sys/kernel/debug
# test-memcg needs cgroup v2
mount -t cgroup2 none /sys/fs/cgroup 2>/dev/null || true
FUZZ_SECONDS=30 LINEARIZE_SECONDS=30 CYCLES=2000
# shellcheck disable=SC1091 # written by coverage.py
. /coverage-args
GCOV=/sys/kernel/debug/gcov
mark uname "$(uname -m) $(uname -r)"
[ -w "$GCOV/reset" ] || mark no-gcov "$GCOV/reset is missing: not a CONFIG_GCOV_KERNEL kernel"

# dump GROUP WHERE: the ntsync.gcda under a build folder matching *WHERE* to the console
dump() {
	f=$(find "$GCOV" -name ntsync.gcda -path "*$2*" | head -n 1)
	if [ -z "$f" ]; then
		mark gcda-missing "$1" "no ntsync.gcda under $GCOV matching *$2*"
		return
	fi
	# one copy, so that the size, the sum and the data are of the same bytes
	cat "$f" >/tmp/dump.gcda
	level=$(cut -f 1 /proc/sys/kernel/printk)
	dmesg -n 1	# no kernel message inside a line of base64
	mark gcda-begin "$1" "$(wc -c </tmp/dump.gcda)" "$(md5sum </tmp/dump.gcda | cut -d ' ' -f 1)" "$f"
	base64 /tmp/dump.gcda | while read -r l; do echo "##ntsync## gcda $1 $l"; done
	mark gcda-end "$1"
	dmesg -n "$level"
}

# prog GROUP NAME CMD...: one program of a group, its exit status reported
prog() {
	g=$1 n=$2
	shift 2
	mark cov-prog-begin "$g" "$n"
	"$@"
	mark cov-prog "$g" "$n" $?
}

# group NAME: the counters reset, then the group's programs (the function group_NAME)
group() {
	echo 1 >"$GCOV/reset"
	mark cov-group "$1"
	"group_$1"
	dump "$1" ntsync-cov-ours-
}

# the suite without test-diff, which is a group of its own
group_suite64() {
	for t in /native/test-*; do [ "$t" = /native/test-diff ] || prog suite64 "${t##*/}" "$t"; done
}
group_suite32() {
	if [ ! -d /compat ]; then mark cov-skip suite32 "no compat programs"; return; fi
	for t in /compat/test-*; do [ "$t" = /compat/test-diff ] || prog suite32 "${t##*/}" "$t"; done
}
group_smoke() {
	prog smoke ntsync-smoke /native/ntsync-smoke
}
group_abuse() {
	prog abuse ntsync-abuse /native/ntsync-abuse --cycles "$CYCLES" kill-blocked signal-storm close-device emfile cycles
	[ -d /compat ] && prog abuse ntsync-abuse-32 /compat/ntsync-abuse --cycles $((CYCLES / 10)) kill-blocked \
		signal-storm close-device emfile cycles
}
group_failslab() {
	prog failslab ntsync-abuse /native/ntsync-abuse failslab
	[ -d /compat ] && prog failslab ntsync-abuse-32 /compat/ntsync-abuse failslab
}
group_fuzz() {
	prog fuzz ntsync-fuzz-model /native/ntsync-fuzz --model --seconds "$FUZZ_SECONDS" --seed 1
	prog fuzz ntsync-fuzz-concurrent /native/ntsync-fuzz --concurrent --seconds "$FUZZ_SECONDS" --threads 3 --procs 2 \
		--seed 1
	[ -d /compat ] && prog fuzz ntsync-fuzz-model-32 /compat/ntsync-fuzz --model --seconds $((FUZZ_SECONDS / 3 + 1)) \
		--seed 1
}
group_linearize() {
	prog linearize ntsync-linearize /native/ntsync-linearize --seconds "$LINEARIZE_SECONDS" --procs 2 --threads 2 \
		--seed 1
}
# test-diff: the error matrix and the walks against mainline 7.3's recorded answers
# (differential-7.3.txt beside it); the live comparison of both drivers in one boot needs
# mainline's in-tree driver, which the 6.12 gcov kernel has not (coverage.py says so)
group_differential() {
	prog differential test-diff /native/test-diff
	[ -d /compat ] && prog differential test-diff-32 /compat/test-diff
}
group_unload() {
	prog unload rmmod rmmod ntsync
}
# insmod with its Nth slab allocation failed (fail-nth, counted from the shell's exec of
# insmod), N = 1, 2, ... until a load in which no allocation was left to fail (failslab's
# "times" did not move): every allocation of a load in turn, the module init's own and
# misc_register()'s among them, and so the init's error paths
group_initfail() {
	fs=/sys/kernel/debug/failslab
	if [ ! -w "$fs/times" ] || [ ! -w /proc/self/fail-nth ]; then
		mark cov-skip initfail "no failslab or fail-nth in this kernel"
		return
	fi
	echo N >"$fs/ignore-gfp-wait"
	echo 0 >"$fs/verbose"
	echo 1000000 >"$fs/times"
	n=1 failed=0 rc=1
	while [ "$n" -le 3000 ]; do
		before=$(cat "$fs/times")
		rc=0
		# shellcheck disable=SC2016 # $1 is the inner shell's
		sh -c 'echo "$1" >/proc/self/fail-nth && exec insmod /ntsync.ko' sh "$n" 2>/dev/null || rc=$?
		after=$(cat "$fs/times")
		if [ -d /sys/module/ntsync ]; then
			rmmod ntsync
		else
			failed=$((failed + 1))
		fi
		[ "$after" = "$before" ] && break
		n=$((n + 1))
	done
	echo 1 >"$fs/times"
	mark cov-initfail "$((n - 1)) loads with one allocation failed ($failed of them left no module), then load" \
		"$n with none failed: exit $rc"
	mark cov-prog initfail last-insmod "$rc"
}

mark cov-group load
insmod /ntsync.ko && mark dev "$(ls -l /dev/ntsync)"
mark version "$(cat /sys/module/ntsync/version 2>/dev/null)"
dump load ntsync-cov-ours-
for g in suite64 suite32 smoke abuse failslab fuzz linearize differential; do
	group $g
done
# the module's exit path; gcov keeps an unloaded module's counters (gcov_persist)
group unload
group initfail
mark taint "$(cat /proc/sys/kernel/tainted)"

if [ -f /mainline.ko ]; then
	echo 1 >"$GCOV/reset"
	mark cov-group mainline
	if insmod /mainline.ko; then
		prog mainline ntsync-selftest /ntsync-selftest
		prog mainline rmmod rmmod ntsync
	else
		mark cov-prog mainline insmod 1
	fi
	dump mainline ntsync-cov-mainline-
fi
mark lockdep "$(grep -E 'debug_locks:' /proc/lockdep_stats 2>/dev/null | tr -s ' ')"
mark end
poweroff -f
