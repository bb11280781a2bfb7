# SPDX-License-Identifier: GPL-2.0-only
# Shared by kbuild-matrix and smoke/boot-smoke; sourced, not run.

# Run a command inside a kernel root with /proc and /dev (objtool and apt
# need them) and a clean environment, in private mount and pid namespaces,
# so nothing stays mounted or running afterwards.
in_root() {
	local r=$1
	shift
	unshare --mount --fork --pid --propagation private sh -c '
		r=$1; shift
		mount --rbind /dev "$r/dev"
		mount -t proc proc "$r/proc"
		exec chroot "$r" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C.UTF-8 "$@"
	' sh "$r" "$@"
}

# Copy the module's sources (no build output of another kernel) to
# ROOT/DIR (default /tmp/ntsync), laid out as DKMS sees them.
copy_src() {
	local top=$1 dst=$2${3:-/tmp/ntsync}
	rm -rf "$dst"
	mkdir -p "$dst/module" "$dst/include/uapi/linux"
	cp "$top"/module/*.c "$top"/module/*.h "$top"/module/Makefile "$top"/module/Kbuild "$dst/module/"
	cp "$top/include/uapi/linux/ntsync.h" "$dst/include/uapi/linux/"
	cp "$top/VERSION" "$dst/"
}
