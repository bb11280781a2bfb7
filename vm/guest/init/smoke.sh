#!/bin/sh
# /init of `ntsync-vm boot SUITE --job smoke`: insmod, ntsync-smoke, rmmod.
# shellcheck source=vm/guest/init/lib.sh
. /lib/init.sh
mark insmod
insmod /ntsync.ko && mark dev "$(ls -l /dev/ntsync)"
mark version "$(cat /sys/module/ntsync/version 2>/dev/null || echo in-tree)"
mark smoke
ntsync-smoke
mark smoke-exit $?
rmmod ntsync && mark rmmod ok
mark taint "$(cat /proc/sys/kernel/tainted)"
mark end
poweroff -f
