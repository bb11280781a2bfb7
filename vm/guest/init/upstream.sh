#!/bin/sh
# /init of `ntsync-vm boot trixie-backports --job upstream`: mainline's driver unpatched,
# then with upstream/'s series, each judged by the selftest and our suite (NTSYNC_STRICT=1).
# shellcheck source=vm/guest/init/lib.sh
. /lib/init.sh
mount -t tmpfs tmpfs /tmp
# the memory cgroup cases (0005's selftest case, test-memcg) need cgroup v2
mount -t cgroup2 none /sys/fs/cgroup 2>/dev/null || true
for v in unpatched patched; do
	insmod /ntsync-$v.ko || mark insmod $v failed
	mark selftest-begin $v
	ntsync-selftest
	mark selftest-end $v
	for t in /bin/test-*; do
		mark suite-group $v "${t##*/}"
		NTSYNC_STRICT=1 $t
		mark suite-exit $v "${t##*/}" $?
	done
	rmmod ntsync && mark rmmod $v ok
done
mark taint "$(cat /proc/sys/kernel/tainted)"
mark end
poweroff -f
