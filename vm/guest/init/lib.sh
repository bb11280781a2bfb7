#!/bin/sh
# Sourced first by every initramfs job's /init (vm/ntsync_vm/boot.py puts this file in the
# initramfs as /lib/init.sh, the job's script as /init): busybox's shell, the pseudo file
# systems, and mark(), the one way a guest reports to the host.
#
# The marker protocol (vm/ntsync_vm/console.py): a console line "##ntsync## KEY REST".
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

mark() {
	echo "##ntsync## $*"
}
