#!/bin/sh
# Host tests of ntsync-info: options and exit codes, the verdict for a
# missing node and for a node that is not ntsync, --json, the driver
# detection against fake /sys trees (NTSYNC_INFO_SYSROOT), and the parts for
# Wine: processes using ntsync from fake /proc trees, a wineserver without
# the device, the system header's state.
# Usage: check-ntsync-info.sh PATH/TO/ntsync-info [--device-only]
set -eu

if [ $# -lt 1 ] || [ ! -x "$1" ]; then
	echo "usage: $0 PATH/TO/ntsync-info [--device-only] (normally run by meson test)" >&2
	exit 2
fi
info=$1

if [ "${2:-}" = "--device-only" ]; then
	if [ ! -e /dev/ntsync ]; then
		echo "SKIP: /dev/ntsync does not exist"
		exit 77
	fi
	"$info"
	exit $?
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
n=0

ok() { n=$((n + 1)); echo "ok $n - $1"; }
bad() { n=$((n + 1)); echo "not ok $n - $1"; fail=1; }

# expect_rc WANT DESCRIPTION CMD...: run CMD, stdout to $tmp/out
expect_rc() {
	want=$1
	what=$2
	shift 2
	set +e
	"$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	set -e
	if [ "$rc" -eq "$want" ]; then
		ok "$what (exit $rc)"
	else
		bad "$what: exit $rc, expected $want"
		sed 's/^/# /' "$tmp/out" "$tmp/err"
	fi
}

# JSON field by a jq path, with python3 as the fallback reader.
json_get() {
	if command -v jq >/dev/null 2>&1; then
		jq -r "$1" "$tmp/out"
	elif command -v python3 >/dev/null 2>&1; then
		python3 -c '
import json, sys
v = json.load(open(sys.argv[2]))
for k in sys.argv[1].lstrip(".").split("."):
    v = v[k]
print("null" if v is None else (str(v).lower() if isinstance(v, bool) else v))
' "$1" "$tmp/out"
	else
		echo "no-json-reader"
	fi
}

expect_json() {
	got=$(json_get "$1") || got="(invalid JSON)"
	if [ "$got" = "no-json-reader" ]; then
		echo "# neither jq nor python3: $1 not checked"
	elif [ "$got" = "$2" ]; then
		ok "json $1 = $2"
	else
		bad "json $1 = '$got', expected '$2'"
		sed 's/^/# /' "$tmp/out"
	fi
}

expect_rc 0 "--help" "$info" --help
expect_rc 0 "--version" "$info" --version
expect_rc 2 "unknown option" "$info" --bogus
expect_rc 2 "stray argument" "$info" extra
expect_rc 2 "empty --device" "$info" --device ""

expect_rc 1 "missing node" "$info" --device "$tmp/no-such-node"
if grep -q '^verdict: NOT WORKING: .*does not exist' "$tmp/out"; then
	ok "missing node: verdict names the problem"
else
	bad "missing node: no clear verdict line"
fi
if grep -q '^hint: ' "$tmp/out"; then
	ok "missing node: a hint says what to do"
else
	bad "missing node: no hint"
fi

expect_rc 1 "missing node, --json" "$info" --json --device "$tmp/no-such-node"
expect_json .working false
expect_json .device.exists false
expect_json .passed 0

# /dev/null opens but is no ntsync device: every live check must fail.
expect_rc 1 "/dev/null is not ntsync" "$info" --json --device /dev/null
expect_json .device.char_device true
expect_json .device.openable true
expect_json .passed 0

# a regular file is refused before any check
: >"$tmp/regular"
expect_rc 1 "regular file" "$info" --device "$tmp/regular"
if grep -q 'not a character device' "$tmp/out"; then
	ok "regular file: verdict"
else
	bad "regular file: verdict does not say 'not a character device'"
fi

# Driver detection from fake trees.
rel=$(uname -r)
mkdir -p "$tmp/oot/sys/module/ntsync" "$tmp/oot/lib/modules/$rel/updates/dkms"
echo 1.0.0 >"$tmp/oot/sys/module/ntsync/version"
echo ABCDEF0123456789 >"$tmp/oot/sys/module/ntsync/srcversion"
echo OE >"$tmp/oot/sys/module/ntsync/taint"
echo live >"$tmp/oot/sys/module/ntsync/initstate"
: >"$tmp/oot/lib/modules/$rel/updates/dkms/ntsync.ko.xz"
expect_rc 1 "fake out-of-tree module" env NTSYNC_INFO_SYSROOT="$tmp/oot" "$info" --json --device "$tmp/no-such-node"
expect_json .driver.kind out-of-tree
expect_json .driver.version 1.0.0
expect_json .driver.out_of_tree true
expect_json .driver.dkms_file "/lib/modules/$rel/updates/dkms/ntsync.ko.xz"

mkdir -p "$tmp/intree/sys/module/ntsync" "$tmp/intree/lib/modules/$rel/kernel/drivers/misc"
# (no srcversion: not every in-tree module has one)
: >"$tmp/intree/sys/module/ntsync/taint"
echo live >"$tmp/intree/sys/module/ntsync/initstate"
: >"$tmp/intree/lib/modules/$rel/kernel/drivers/misc/ntsync.ko.xz"
expect_rc 1 "fake in-tree module" env NTSYNC_INFO_SYSROOT="$tmp/intree" "$info" --json --device "$tmp/no-such-node"
expect_json .driver.kind in-tree
expect_json .driver.version null
expect_json .driver.in_tree_file "/lib/modules/$rel/kernel/drivers/misc/ntsync.ko.xz"

mkdir -p "$tmp/builtin/proc"
printf '125 ntsync\n237 loop-control\n' >"$tmp/builtin/proc/misc"
mkdir -p "$tmp/builtin2/sys/module/ntsync/parameters"
expect_rc 1 "fake built-in driver" env NTSYNC_INFO_SYSROOT="$tmp/builtin" "$info" --json --device "$tmp/no-such-node"
expect_json .driver.kind built-in
expect_json .driver.module_loaded false
expect_rc 1 "fake built-in driver with a /sys/module entry" env NTSYNC_INFO_SYSROOT="$tmp/builtin2" "$info" --json --device "$tmp/no-such-node"
expect_json .driver.kind built-in

mkdir -p "$tmp/none"
expect_rc 1 "no driver" env NTSYNC_INFO_SYSROOT="$tmp/none" "$info" --json --device "$tmp/no-such-node"
expect_json .driver.kind none

# Users of ntsync from a fake /proc: links as the kernel shows them.
p=$tmp/users/proc
mkdir -p "$p/100/fd" "$p/200/fd" "$p/300/fd" "$p/400/fd" "$p/self"
echo wineserver >"$p/100/comm"
ln -s /dev/ntsync "$p/100/fd/3"
ln -s anon_inode:ntsync "$p/100/fd/4"
ln -s anon_inode:ntsync "$p/100/fd/5"
ln -s anon_inode:ntsync "$p/100/fd/6"
mkdir -p "$p/100/fdinfo"
printf 'pos:\t0\nflags:\t02000002\nntsync-type:\tsemaphore\ncount:\t0\nmax:\t1\n' >"$p/100/fdinfo/4"
printf 'pos:\t0\nntsync-type:\tmutex\nowner:\t0\n' >"$p/100/fdinfo/5"
printf 'pos:\t0\nntsync-type:\tevent\nmanual:\t1\n' >"$p/100/fdinfo/6"
echo game.exe >"$p/200/comm"
ln -s /dev/ntsync "$p/200/fd/0"
ln -s anon_inode:ntsync "$p/200/fd/9"
ln -s 'anon_inode:[eventfd]' "$p/200/fd/10"
echo bash >"$p/300/comm"
ln -s /dev/pts/0 "$p/300/fd/0"
ln -s 'anon_inode:[eventpoll]' "$p/300/fd/1"
echo wineserver >"$p/400/comm"	# a wineserver that runs without ntsync
ln -s /dev/null "$p/400/fd/0"
mkdir -p "$tmp/users/usr/include/linux"
printf '#define NTSYNC_IOC_CREATE_SEM 1\n#define NTSYNC_IOC_SEM_POST 2\n' >"$tmp/users/usr/include/linux/ntsync.h"
expect_rc 1 "fake /proc with ntsync users" env NTSYNC_INFO_SYSROOT="$tmp/users" "$info" --device /dev/ntsync-test-missing
# the device path is what it matches: with the default path both count
expect_rc 1 "fake /proc with ntsync users, --json" env NTSYNC_INFO_SYSROOT="$tmp/users" "$info" --json
expect_json .processes.using 2
expect_json .processes.device_fds 2
expect_json .processes.object_fds 4
expect_json .processes.scanned 4
expect_json .processes.unreadable 0
expect_json .system_header.state incomplete
expect_json .system_header.wine_backend false
expect_json .system_header.ntsync_uapi_header null
if grep -q '"wineservers_without_device": \[400\]' "$tmp/out"; then
	ok "json: wineserver 400 runs without the device"
else
	bad "json: wineservers_without_device is not [400]"
	sed 's/^/# /' "$tmp/out"
fi
# object types from fdinfo where shown (pid 100), none where not (pid 200)
if grep -q '"pid": 100, .*"semaphores": 1, "mutexes": 1, "events": 1}' "$tmp/out" &&
   grep -q '"pid": 200, .*"wineserver": false}' "$tmp/out"; then
	ok "json: object types from fdinfo where the driver shows them"
else
	bad "json: object types from fdinfo"
	sed 's/^/# /' "$tmp/out"
fi
if grep -q '"wineserver_note": ".*wineserver -k' "$tmp/out"; then
	ok "json: the wineserver note"
else
	bad "json: no wineserver_note"
fi
expect_rc 1 "fake /proc, text" env NTSYNC_INFO_SYSROOT="$tmp/users" "$info"
for want in 'users: *2 processes with /dev/ntsync' \
	'pid 100 .*wineserver .*1 device, 3 object descriptors (1 sem, 1 mutex, 1 event) (wineserver)' \
	'pid 200 .*game.exe .*1 device, 1 object descriptor$' \
	'pid 400 .*wineserver runs WITHOUT /dev/ntsync' \
	'^note: .*restart Wine (wineserver -k)' \
	'^header: .*incomplete preview.*pkg-config --cflags ntsync-uapi'; do
	if grep -q "$want" "$tmp/out"; then
		ok "text shows /$want/"
	else
		bad "text lacks /$want/"
		sed 's/^/# /' "$tmp/out"
	fi
done
if grep -q 'pid 300' "$tmp/out"; then
	bad "text lists pid 300, which has no ntsync descriptor"
else
	ok "text leaves out processes without ntsync"
fi
# a process whose descriptors we may not read (as non-root only)
if [ "$(id -u)" != 0 ]; then
	mkdir -p "$p/500/fd"
	echo other >"$p/500/comm"
	chmod 000 "$p/500/fd"
	expect_rc 1 "fake /proc with an unreadable process" env NTSYNC_INFO_SYSROOT="$tmp/users" "$info" --json
	expect_json .processes.unreadable 1
	chmod 755 "$p/500/fd"
fi
# the complete header, and ntsync-uapi-dev's copy
mkdir -p "$tmp/users/usr/include/ntsync-uapi/linux"
cp "$(dirname "$0")/../include/uapi/linux/ntsync.h" "$tmp/users/usr/include/linux/ntsync.h"
cp "$(dirname "$0")/../include/uapi/linux/ntsync.h" "$tmp/users/usr/include/ntsync-uapi/linux/ntsync.h"
expect_rc 1 "complete system header" env NTSYNC_INFO_SYSROOT="$tmp/users" "$info" --json
expect_json .system_header.state complete
expect_json .system_header.wine_backend true
expect_json .system_header.ntsync_uapi_header /usr/include/ntsync-uapi/linux/ntsync.h
rm "$tmp/users/usr/include/linux/ntsync.h"
expect_rc 1 "no system header" env NTSYNC_INFO_SYSROOT="$tmp/users" "$info" --json
expect_json .system_header.state missing
# no /proc at all
expect_rc 1 "no /proc" env NTSYNC_INFO_SYSROOT="$tmp/none" "$info" --json
expect_json .processes.proc_readable false

# the manual page renders without warnings
man1=$(dirname "$0")/ntsync-info.1
if ! command -v groff >/dev/null 2>&1; then
	echo "# groff not found: ntsync-info.1 not checked"
elif groff -man -ww -z "$man1" >"$tmp/warn" 2>&1 && [ ! -s "$tmp/warn" ]; then
	ok "ntsync-info.1 renders without warnings"
else
	bad "ntsync-info.1 renders with warnings"
	sed 's/^/# /' "$tmp/warn"
fi

echo "1..$n"
exit $fail
