# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
# Sourced by tests/build-static; not run. (Kernel roots, the module's
# source layout and the guest lock are vm/ntsync-vm's now: kroot, in-root,
# module/install-source, vm/ntsync_vm/lock.py.)

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
