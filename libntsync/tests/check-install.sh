#!/bin/sh
# Install the build into a scratch DESTDIR and use it the way a consumer
# does: pkg-config --cflags --libs libntsync, compile and link a program
# against the installed header and library, and run it.  Also checks the
# installed file set: SONAME links, the header (and no <linux/ntsync.h>),
# the pkg-config file and, when docs are on, the manual pages.  And the ABI
# header for emulator builds: Wine's configure gate (<linux/ntsync.h> with
# NTSYNC_IOC_EVENT_READ) passes with pkg-config --cflags ntsync-uapi, also
# in front of an incomplete system copy like Debian 13's.
# Usage: check-install.sh MESON BUILDDIR PREFIX LIBDIR INCLUDEDIR MANDIR DOCS SANITIZE CC...
set -eu

if [ $# -lt 9 ]; then
	echo "usage: $0 MESON BUILDDIR PREFIX LIBDIR INCLUDEDIR MANDIR DOCS(true|false) SANITIZE CC... (normally run by meson test)" >&2
	exit 2
fi
meson=$1 build=$2 prefix=$3 libdir=$4 includedir=$5 mandir=$6 docs=$7 sanitize=$8
shift 8
if [ "$sanitize" != none ]; then
	echo "SKIP: a sanitizer build (b_sanitize=$sanitize) cannot be linked by a plain consumer"
	exit 77
fi
if ! command -v pkg-config >/dev/null 2>&1; then
	echo "SKIP: pkg-config not found (apt-get install pkgconf)"
	exit 77
fi
case $libdir in /*) ;; *) libdir=$prefix/$libdir ;; esac
case $includedir in /*) ;; *) includedir=$prefix/$includedir ;; esac
case $mandir in /*) ;; *) mandir=$prefix/$mandir ;; esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/dest
fail=0
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
bad() { n=$((n + 1)); echo "not ok $n - $1"; fail=1; }
check() { # check DESCRIPTION COMMAND...
	what=$1
	shift
	if "$@" >"$tmp/log" 2>&1; then
		ok "$what"
	else
		bad "$what"
		sed 's/^/# /' "$tmp/log"
	fi
}

# Not --no-rebuild: `meson test` builds only what the tests need, and an
# install wants every installed target (tests/differential's ntsync-diff,
# defined after libntsync/, was missing when meson test ran before ninja).
# The test is not parallel, so this build races with no other test.
if ! $meson install -C "$build" --destdir "$dest" >"$tmp/install.log" 2>&1; then
	bad "meson install --destdir"
	sed 's/^/# /' "$tmp/install.log"
	echo "1..$n"
	exit 1
fi
ok "meson install --destdir $dest"

check "header installed as $includedir/ntsync.h" test -f "$dest$includedir/ntsync.h"
check "no <linux/ntsync.h> installed (linux-libc-dev owns it)" test ! -e "$dest$includedir/linux/ntsync.h"
check "libntsync.pc installed" test -f "$dest$libdir/pkgconfig/libntsync.pc"
shared=false
if [ -e "$dest$libdir/libntsync.so.1" ]; then
	shared=true
	check "libntsync.so -> libntsync.so.1" test "$(readlink "$dest$libdir/libntsync.so")" = libntsync.so.1
	check "libntsync.so.1 -> real file" test -f "$dest$libdir/$(readlink "$dest$libdir/libntsync.so.1")"
fi
if [ ! -e "$dest$libdir/libntsync.so" ]; then
	check "static library installed" test -f "$dest$libdir/libntsync.a"
fi
if [ "$docs" = true ]; then
	check "overview page installed" test -f "$dest$mandir/man3/libntsync.3"
	check "ntsync_wait_any(3) installed" test -f "$dest$mandir/man3/ntsync_wait_any.3"
fi

export PKG_CONFIG_PATH="$dest$libdir/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$dest"
check "pkg-config --modversion libntsync" pkg-config --modversion libntsync
version=$(pkg-config --modversion libntsync)
cflags=$(pkg-config --cflags libntsync)
libs=$(pkg-config --libs libntsync)
echo "# pkg-config --cflags --libs libntsync: $cflags $libs"
case "$libs" in *-lntsync*) ok "--libs names -lntsync" ;; *) bad "--libs lacks -lntsync: $libs" ;; esac

cat >"$tmp/consumer.c" <<'EOT'
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <ntsync.h>

int main(void)
{
	struct ntsync_device *dev = (struct ntsync_device *)&dev;
	int ret = ntsync_open("/nonexistent/ntsync", &dev);

	printf("%s\n", ntsync_version());
	if (ret != -ENOENT || dev != NULL) {
		fprintf(stderr, "ntsync_open: %d, expected %d\n", ret, -ENOENT);
		return 1;
	}
	return 0;
}
EOT
# shellcheck disable=SC2086 # pkg-config output is a list of flags
check "compile and link a consumer with pkg-config flags" \
	"$@" -std=c99 -Wall -Werror $cflags "$tmp/consumer.c" -o "$tmp/consumer" $libs
if [ -x "$tmp/consumer" ]; then
	if $shared; then
		check "consumer needs libntsync.so.1" sh -c "readelf -d '$tmp/consumer' | grep -q 'NEEDED.*libntsync.so.1'"
	fi
	out=$(LD_LIBRARY_PATH="$dest$libdir" "$tmp/consumer" 2>&1) && rc=0 || rc=$?
	if [ "$rc" -eq 0 ] && [ "$out" = "$version" ]; then
		ok "consumer runs against the installed library (version $out)"
	else
		bad "consumer: exit $rc, output '$out', expected '$version'"
	fi
fi

# ---- the ABI header for emulators: pkg-config ntsync-uapi ----
datadir=$prefix/share
uapi_h=$dest$includedir/ntsync-uapi/linux/ntsync.h
check "ABI header installed as $includedir/ntsync-uapi/linux/ntsync.h" test -f "$uapi_h"
check "ntsync-uapi.pc installed in $datadir/pkgconfig" test -f "$dest$datadir/pkgconfig/ntsync-uapi.pc"
export PKG_CONFIG_PATH="$dest$libdir/pkgconfig:$dest$datadir/pkgconfig"
ucflags=$(pkg-config --cflags ntsync-uapi 2>&1) || ucflags=
echo "# pkg-config --cflags ntsync-uapi: $ucflags"
case "$ucflags" in
*"-I$dest$includedir/ntsync-uapi"*) ok "--cflags ntsync-uapi names the ntsync-uapi directory" ;;
*) bad "--cflags ntsync-uapi is '$ucflags', expected -I$dest$includedir/ntsync-uapi" ;;
esac
check "installed ABI header is the tree's include/uapi/linux/ntsync.h" \
	cmp "$uapi_h" "$(dirname "$0")/../../include/uapi/linux/ntsync.h"
# Wine's gate (server/inproc_sync.c, dlls/ntdll/unix/sync.c).
cat >"$tmp/gate.c" <<'EOT'
#include <sys/ioctl.h>
#include <linux/ntsync.h>
#ifndef NTSYNC_IOC_EVENT_READ
#error "incomplete <linux/ntsync.h>: Wine would build its ntsync stubs"
#endif
int main(void) { return NTSYNC_IOC_EVENT_READ == 0; }
EOT
# Debian 13's linux-libc-dev ships the 6.10 preview: CREATE_SEM and
# SEM_POST only.  A stand-in for it, searched as a system directory.
mkdir -p "$tmp/stub/linux"
cat >"$tmp/stub/linux/ntsync.h" <<'EOT'
#ifndef _UAPI_LINUX_NTSYNC_H
#define _UAPI_LINUX_NTSYNC_H
#include <linux/ioctl.h>
#include <linux/types.h>
struct ntsync_sem_args { __u32 sem; __u32 count; __u32 max; };
#define NTSYNC_IOC_CREATE_SEM _IOWR('N', 0x80, struct ntsync_sem_args)
#define NTSYNC_IOC_SEM_POST _IOWR('N', 0x81, __u32)
#endif
EOT
# shellcheck disable=SC2086 # pkg-config output is a list of flags
check "Wine's gate compiles with pkg-config --cflags ntsync-uapi" \
	"$@" -std=gnu11 -Werror $ucflags -fsyntax-only "$tmp/gate.c"
# shellcheck disable=SC2086
check "Wine's gate compiles with the flags in front of an incomplete system header" \
	"$@" -std=gnu11 -Werror $ucflags -isystem "$tmp/stub" -fsyntax-only "$tmp/gate.c"
if "$@" -std=gnu11 -isystem "$tmp/stub" -fsyntax-only "$tmp/gate.c" >"$tmp/log" 2>&1; then
	bad "Wine's gate compiled against the incomplete header alone (the test proves nothing)"
elif grep -q 'incomplete <linux/ntsync.h>' "$tmp/log"; then
	ok "Wine's gate fails against the incomplete header without the flags"
else
	bad "Wine's gate failed for another reason without the flags"
	sed 's/^/# /' "$tmp/log"
fi
# shellcheck disable=SC2086
check "the ABI header and <ntsync.h> together with both pkg-config modules" \
	sh -c 'printf "#include <linux/ntsync.h>\n#include <ntsync.h>\nint main(void) { return NTSYNC_MAX_WAIT_COUNT != NTSYNC_WAIT_MAX; }\n" | "$@" -std=c99 -pedantic -Werror -x c - -fsyntax-only' \
	sh "$@" $ucflags $cflags

if [ -f "$dest$libdir/libntsync.a" ]; then
	ldirs=$(pkg-config --static --libs-only-L libntsync)
	# shellcheck disable=SC2086
	check "static link against libntsync.a" \
		"$@" -std=c99 $cflags "$tmp/consumer.c" -o "$tmp/consumer-static" \
		$ldirs -Wl,-Bstatic -lntsync -Wl,-Bdynamic
	check "static consumer runs without the shared library" "$tmp/consumer-static"
	check "static consumer does not need libntsync.so" \
		sh -c "! readelf -d '$tmp/consumer-static' | grep -q 'NEEDED.*libntsync'"
fi

echo "1..$n"
exit $fail
