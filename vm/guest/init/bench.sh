#!/bin/sh
# /init of `ntsync-vm boot SUITE --job bench`: ntsync-bench with the kernel's driver, then
# ours, in one boot; the comparison runs in the guest. /bench-args: ntsync-bench's arguments.
# shellcheck source=vm/guest/init/lib.sh
. /lib/init.sh
mount -t tmpfs tmpfs /tmp
# Measure inside a child memory cgroup, as a desktop session runs, so that
# memcg-charged allocations cost what they cost there.
mount -t cgroup2 none /sys/fs/cgroup
echo +memory >/sys/fs/cgroup/cgroup.subtree_control
mkdir /sys/fs/cgroup/bench
echo $$ >/sys/fs/cgroup/bench/cgroup.procs
mark cgroup "$(cat /proc/self/cgroup)"
for d in intree ntsync; do
	insmod /$d.ko || mark insmod $d failed
	mark clocksource "$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
	eval "ntsync-bench --label $d --json=/tmp/$d.json $(cat /bench-args)" >/dev/null
	mark json-begin $d
	cat /tmp/$d.json
	mark json-end $d
	rmmod ntsync && mark rmmod ok
done
mark compare-begin
ntsync-bench --compare /tmp/intree.json /tmp/ntsync.json
mark compare-exit $?
mark taint "$(cat /proc/sys/kernel/tainted)"
mark bench-exit 0
poweroff -f
