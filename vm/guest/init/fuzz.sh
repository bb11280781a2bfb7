#!/bin/sh
# /init of `ntsync-vm boot KERNEL --job fuzz`: tests/fuzz/guest-abuse.sh with the
# arguments in /fuzz-args.
# shellcheck source=vm/guest/init/lib.sh
. /lib/init.sh
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mark insmod
insmod /ntsync.ko || mark insmod failed
mark guest-abuse
eval "set -- $(cat /fuzz-args)"
# /native: the static programs of the architecture, /compat: of its compat ABI (boot.py)
/bin/guest-abuse.sh --bindir /native --bindir32 /compat --gates /native/kernel-log-gates "$@"
mark guest-abuse-exit $?
poweroff -f
