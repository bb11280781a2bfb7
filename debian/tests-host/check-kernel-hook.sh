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
# shellcheck source=tests/tap.sh
. "$top/tests/tap.sh"

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

# /etc/kernel/{postinst.d,header_postinst.d}/00ntsync-dkms: builds ours before
# DKMS's hook; a failed build is said, marked, and never fails the kernel.
pre=$top/debian/kernel/postinst.d/00ntsync-dkms
marks=$tmp/var/lib/ntsync-dkms/build-failed
mkdir -p "$tmp/bin" "$tmp/lib/modules/$in_range/build/include"
cat >"$tmp/bin/dkms" <<'EOF2'
#!/bin/sh
echo "dkms $*" >>"$STUB_LOG"
case $1 in
status) [ -z "$STUB_INSTALLED" ] || echo "ntsync/9.9.9, $STUB_INSTALLED, x86_64: installed" ;;
install) echo "Error! Bad return status for module build (stub)"; exit "$STUB_RC" ;;
esac
exit 0
EOF2
chmod +x "$tmp/bin/dkms"
# pre KVER RC INSTALLED: the hook for KVER, the stub's install exiting RC,
# 'dkms status' saying ours is installed for INSTALLED; output in $tmp/out
pre() {
	: >"$tmp/log"
	set +e
	NTSYNC_HOOK_SYSROOT=$tmp NTSYNC_HOOK_DKMS=$tmp/bin/dkms STUB_LOG=$tmp/log STUB_RC=$2 STUB_INSTALLED=$3 \
		"$pre" "$1" "/boot/vmlinuz-$1" >"$tmp/out" 2>&1
	rc=$?
	set -e
	[ "$rc" -eq 0 ] || bad "00ntsync-dkms $1: exit $rc"
}
pre "$in_range" 10 ""
if grep -q "^dkms install -m ntsync -v 9.9.9 -k $in_range\$" "$tmp/log" && [ -e "$marks/$in_range" ] &&
	grep -q "^ntsync-dkms: Linux $in_range: building ntsync 9.9.9 failed (dkms exit status 10; its log: /var/lib/dkms/ntsync/9.9.9/build/make.log)\.\$" "$tmp/out" &&
	grep -q "^ntsync-dkms: once the cause is fixed .*: dkms install ntsync/9.9.9 -k $in_range\$" "$tmp/out"; then
	ok "pre-build hook, the build fails: exit 0, marked, said: $(sed -n 2p "$tmp/out")"
else
	bad "pre-build hook, the build fails: log '$(cat "$tmp/log")' output '$(cat "$tmp/out")'"
fi
# dkms.conf's AUTOINSTALL for the marked kernel: the installed copy (its version
# line literal, as debian/rules makes it), its paths moved into the test root
autoinstall_of() {
	sed -e "s#/var/lib/#$tmp/var/lib/#g" -e 's/^PACKAGE_VERSION=.*/PACKAGE_VERSION="9.9.9"/' \
		"$top/dkms.conf" >"$tmp/dkms.conf"
	# shellcheck disable=SC2016  # expanded by that bash: dkms sources dkms.conf with bash
	bash -c 'kernelver=$1 && . "$2" && echo "${AUTOINSTALL:-off}"' dkms.conf "$1" "$tmp/dkms.conf"
}
if [ "$(autoinstall_of "$in_range")" = off ] && [ "$(autoinstall_of 6.1.0-99-amd64)" = yes ]; then
	ok "dkms.conf: AUTOINSTALL off on the marked kernel, yes on another"
else
	bad "dkms.conf: AUTOINSTALL $(autoinstall_of "$in_range") on the marked kernel, $(autoinstall_of 6.1.0-99-amd64) on another"
fi
mkdir -p "$tmp/var/lib/dkms/ntsync/9.9.9/$in_range"
if [ "$(autoinstall_of "$in_range")" = yes ]; then
	ok "dkms.conf: AUTOINSTALL yes again once something is built there (the kernel's removal removes it)"
else
	bad "dkms.conf: AUTOINSTALL off though ours is built for the marked kernel"
fi
rm -r "$tmp/var/lib/dkms"
pre "$in_range" 0 ""
if grep -q "^dkms install" "$tmp/log" && [ ! -e "$marks/$in_range" ]; then
	ok "pre-build hook, the build succeeds: the mark cleared"
else
	bad "pre-build hook, the build succeeds: log '$(cat "$tmp/log")', mark $(ls "$marks" 2>&1)"
fi
pre "$in_range" 77 ""
if [ ! -e "$marks/$in_range" ] && ! grep -q ntsync-dkms: "$tmp/out"; then
	ok "pre-build hook, dkms says skipped (77): no mark, nothing said"
else
	bad "pre-build hook, skipped (77): output '$(cat "$tmp/out")'"
fi
pre "$in_range" 10 "$in_range"
if ! grep -q "^dkms install" "$tmp/log"; then
	ok "pre-build hook, ours already installed there: nothing built"
else
	bad "pre-build hook, ours already installed: log '$(cat "$tmp/log")'"
fi
pre "$outside" 10 ""
if [ ! -s "$tmp/log" ] && [ ! -s "$tmp/out" ]; then
	ok "pre-build hook, outside dkms.conf's range: dkms not run, nothing said"
else
	bad "pre-build hook, outside the range: log '$(cat "$tmp/log")' output '$(cat "$tmp/out")'"
fi
mkdir -p "$marks" && : >"$marks/5.10.0-gone-amd64"
pre 6.1.0-99-amd64 10 ""
if [ ! -s "$tmp/log" ] && [ ! -e "$marks/5.10.0-gone-amd64" ]; then
	ok "pre-build hook, no headers: dkms not run; the mark of a kernel that is gone removed"
else
	bad "pre-build hook, no headers: log '$(cat "$tmp/log")', marks $(ls "$marks")"
fi

rm -r "$tmp/usr/src/ntsync-9.9.9"
run 6.1.0-99-amd64 - "ntsync-dkms removed (the conffile left)"
pre "$in_range" 10 ""
if [ ! -s "$tmp/log" ] && [ ! -s "$tmp/out" ]; then
	ok "pre-build hook, ntsync-dkms removed: nothing run, nothing said"
else
	bad "pre-build hook, ntsync-dkms removed: log '$(cat "$tmp/log")'"
fi

done_tap
