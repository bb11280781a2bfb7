# SPDX-License-Identifier: GPL-2.0-only
# Shared by kbuild-matrix and smoke/boot-smoke; sourced, not run.

# Run a command inside a kernel root with /proc mounted (objtool reads it)
# in a private mount namespace, so nothing stays mounted afterwards.
in_root() {
	local r=$1
	shift
	unshare --mount --fork -- sh -c 'mount -t proc proc "$0/proc" && exec chroot "$0" "$@"' "$r" "$@"
}

# Copy the module's sources (no build output of another kernel) to
# ROOT/tmp/ntsync, laid out as DKMS sees them.
copy_src() {
	local top=$1 dst=$2/tmp/ntsync
	rm -rf "$dst"
	mkdir -p "$dst/module" "$dst/include/uapi/linux"
	cp "$top"/module/*.c "$top"/module/*.h "$top"/module/Makefile "$top"/module/Kbuild "$dst/module/"
	cp "$top/include/uapi/linux/ntsync.h" "$dst/include/uapi/linux/"
	cp "$top/VERSION" "$dst/"
}
