#!/bin/sh
# /init of `ntsync-vm boot SUITE --arch ARCH --job suite`: insmod, the smoke test (ntsync-smoke,
# as `--job smoke` runs it), the conformance suite (every test-* of the architecture's static
# programs in /native, then of its compat ABI's in /compat when it has one: 32-bit processes
# through the driver's compat path), rmmod.
# Each program's cmocka summary is judged on the host (boot.py, judge_suite); its exit
# status is its number of failed cases, 77 when it skipped (no usable /dev/ntsync).
# shellcheck source=vm/guest/init/lib.sh
. /lib/init.sh
mount -t tmpfs tmpfs /tmp
# the memory cgroup cases (test-memcg) need cgroup v2
mount -t cgroup2 none /sys/fs/cgroup 2>/dev/null || true
mark uptime init "$(cut -d ' ' -f 1 /proc/uptime)"
mark insmod
insmod /ntsync.ko && mark dev "$(ls -l /dev/ntsync)"
mark version "$(cat /sys/module/ntsync/version 2>/dev/null || echo in-tree)"
mark uname "$(uname -m) $(uname -r)"
if [ -x /native/ntsync-smoke ]; then
	mark smoke
	/native/ntsync-smoke
	mark smoke-exit $?
fi
for abi in native compat; do
	[ -d "/$abi" ] || continue
	for t in "/$abi"/test-*; do
		[ -x "$t" ] || continue
		mark suite-group "$abi" "${t##*/}"
		"$t"
		mark suite-exit "$abi" "${t##*/}" $?
	done
done
mark uptime suite "$(cut -d ' ' -f 1 /proc/uptime)"
rmmod ntsync && mark rmmod ok
mark taint "$(cat /proc/sys/kernel/tainted)"
mark end
poweroff -f
