#!/bin/sh
# Host tests of /etc/kernel/postinst.d/ntsync-dkms (debian/kernel/postinst.d/):
# a kernel installed without its headers, one ntsync is built for, gets the
# package to install named; a kernel with headers, one outside dkms.conf's
# range, or no ntsync-dkms installed gets nothing; it always exits 0.
#
#   debian/tests-host/check-kernel-hook.sh [SOURCE-TREE]   (run by meson test)
set -eu

top=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
hook=$top/debian/kernel/postinst.d/ntsync-dkms
[ -x "$hook" ] || {
	echo "usage: $0 [SOURCE-TREE] (the ntsync tree; $hook must be executable)" >&2
	exit 2
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
bad() { n=$((n + 1)); echo "not ok $n - $1"; fail=1; }

# the installed source's dkms.conf: the tree's, as the package installs it
mkdir -p "$tmp/usr/src/ntsync-9.9.9"
cp "$top/dkms.conf" "$tmp/usr/src/ntsync-9.9.9/dkms.conf"
in_range=6.12.118+deb13-cloud-amd64
outside=7.3.4+bpo-cloud-amd64

# run KVER WANT-PATTERN|-: the hook's output for kernel KVER has a line matching the
# pattern (or, for -, is empty); exit 0 always
run() {
	kver=$1 want=$2 what=$3
	set +e
	NTSYNC_HOOK_SYSROOT=$tmp "$hook" "$kver" "/boot/vmlinuz-$kver" >"$tmp/out" 2>&1
	rc=$?
	set -e
	if [ "$rc" -ne 0 ]; then
		bad "$what: exit $rc"
	elif [ "$want" = - ] && [ ! -s "$tmp/out" ]; then
		ok "$what: nothing said"
	elif [ "$want" != - ] && grep -q -- "$want" "$tmp/out"; then
		ok "$what: $(head -n 1 "$tmp/out")"
	else
		bad "$what: output '$(cat "$tmp/out")'"
	fi
}

run "$in_range" "^ntsync-dkms: Linux $in_range: ntsync not built, its headers are missing: apt-get install linux-headers-$in_range\$" \
	"in range, no headers"
mkdir -p "$tmp/lib/modules/$in_range/build"
: >"$tmp/lib/modules/$in_range/build/Makefile"
run "$in_range" - "in range, headers installed"
run "$outside" - "outside dkms.conf's range (the kernel's own driver)"
run "" - "no kernel named"
rm -r "$tmp/usr/src/ntsync-9.9.9"
run 6.1.0-99-amd64 - "ntsync-dkms removed (the conffile left)"

echo "1..$n"
exit $fail
