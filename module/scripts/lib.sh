# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
# Shared by the scripts that build or boot the module (kbuild-matrix,
# boot-smoke, boot-fuzz, guest-lifecycle, the build-static scripts);
# sourced, not run.

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

# Take the machine's guest lock (shared with vm/ntsync-vm and
# debian/guest-lifecycle): one TCG guest at a time on this 2-core machine,
# so that guests neither starve each other nor time out.  Held on fd 9
# until the calling script exits.  NTSYNC_VM_PARALLEL=1 skips it.
guest_lock() {
	local who=$1 lock=${NTSYNC_CACHE:-/var/cache/ntsync}/guest.lock
	[ "${NTSYNC_VM_PARALLEL:-0}" = 1 ] && return 0
	mkdir -p "${lock%/*}"
	exec 9>>"$lock"
	if ! flock -n 9; then
		echo "$who: waiting for another guest to finish ($(head -n1 "$lock" 2>/dev/null))" >&2
		flock 9
	fi
	echo "pid $$: $who" >"$lock"
}

# Make sure compiler CC can link static programs for -m64 and -m32 (i386),
# installing gcc-multilib with apt-get when it cannot.  PROG names the
# caller in messages.  Returns 1 (after saying why) when that fails.
need_static_cc() {
	local prog=$1 cc=$2
	if ! command -v "$cc" >/dev/null; then
		echo "$prog: no C compiler '$cc'; install gcc (apt-get install gcc)" >&2
		return 1
	fi
	echo 'int main(void){return 0;}' | "$cc" -m32 -static -x c -o /dev/null - 2>/dev/null && return 0
	echo "$prog: $cc cannot link static i386 programs; installing gcc-multilib" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc-multilib >/dev/null && return 0
	echo "$prog: apt-get install gcc-multilib failed; install it by hand (needed for -m32 -static)" >&2
	return 1
}
