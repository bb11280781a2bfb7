#!/bin/sh
# Host tests of ntsync-info's Wine part:
#  - --check-wine on two stand-ins for Wine's binaries built from
#    fake-wine.c (one issues the driver's ioctls, one is a stub that still
#    names /dev/ntsync), as single files, an install prefix, a build tree,
#    a mixed install, and on things that are no Wine; wineserver's ioctls
#    built for arm64 and i386 by clang where it can (fake-wineserver-cross.c);
#  - --pid and --wine on the layouts in layouts/ (NTSYNC_INFO_SYSROOT):
#    each layout.txt names its cases, the exit status and the verdict and
#    fix each must print, text and JSON;
#  - --pid on this machine's own processes: this shell (not Wine), a
#    zombie it makes, a pid that does not exist, and usage errors.
# Usage: check-ntsync-info-wine.sh NTSYNC-INFO FAKE-WINE-BACKEND FAKE-WINE-STUB
set -eu

if [ $# -ne 3 ] || [ ! -x "$1" ]; then
	echo "usage: $0 NTSYNC-INFO FAKE-WINE-BACKEND FAKE-WINE-STUB (run by meson test)" >&2
	exit 2
fi
info=$1
backend=$2
stub=$3
here=$(cd "$(dirname "$0")" && pwd)

tmp=$(mktemp -d)
zpid=
# shellcheck disable=SC2317 # run by the trap
cleanup() {
	[ -z "$zpid" ] || kill "$zpid" 2>/dev/null || :
	rm -rf "$tmp"
}
trap cleanup EXIT
# shellcheck source=tools/info-tests/tap.sh
. "$here/tap.sh"

# ---- --check-wine ----

expect_rc 0 "--check-wine on the backend build" "$info" --check-wine "$backend"
expect_text '^verdict: BACKEND: ' "backend build: verdict"
expect_text 'backend compiled in: all 14 ntsync request numbers' "backend build: all 14 request numbers found"
expect_rc 0 "--check-wine --json on the backend build" "$info" --check-wine "$backend" --json
expect_json '.files[0].requests' 'CREATE_SEM, SEM_RELEASE, WAIT_ANY, WAIT_ALL, CREATE_MUTEX, MUTEX_UNLOCK, MUTEX_KILL, CREATE_EVENT, EVENT_SET, EVENT_RESET, EVENT_PULSE, SEM_READ, MUTEX_READ, EVENT_READ'
expect_rc 1 "--check-wine on the stub build" "$info" --check-wine "$stub"
expect_text '^verdict: STUB: .*pkg-config --cflags ntsync-uapi' "stub build: verdict and fix"
expect_text '"/dev/ntsync" string present (not evidence either way)' "stub build has the string and is still a stub"
expect_rc 1 "--check-wine --json on the stub build" "$info" --check-wine "$stub" --json
expect_json .backend false
expect_json '.files[0].dev_ntsync_string' true
expect_json '.files[0].request_numbers' 0
expect_json .exit 1

# other architectures, where clang can build for them: wineserver's
# ioctls as an object file (no C library needed)
multiarch=$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
for target in aarch64-linux-gnu i386-linux-gnu; do
	for opt in -O0 -O2; do
		obj=$tmp/wineserver-$target$opt.o
		if command -v clang >/dev/null 2>&1 &&
		   clang --target="$target" "$opt" -ffreestanding \
			-I"$here/../../include/uapi" -I/usr/include \
			-I"/usr/include/$multiarch" -c \
			"$here/fake-wineserver-cross.c" -o "$obj" 2>/dev/null; then
			expect_rc 0 "--check-wine on wineserver's ioctls for $target $opt" \
				"$info" --check-wine "$obj"
		else
			echo "# clang cannot build for $target: not checked"
		fi
	done
done

# an install prefix, a build tree, a mixed install
mkdir -p "$tmp/prefix/bin" "$tmp/prefix/lib/wine/x86_64-unix" \
	"$tmp/build/server" "$tmp/build/dlls/ntdll" \
	"$tmp/mixed/bin" "$tmp/mixed/lib/wine/x86_64-unix" "$tmp/empty" \
	"$tmp/text"
cp "$backend" "$tmp/prefix/bin/wineserver"
cp "$backend" "$tmp/prefix/lib/wine/x86_64-unix/ntdll.so"
cp "$backend" "$tmp/build/server/wineserver"
cp "$backend" "$tmp/build/dlls/ntdll/ntdll.so"
cp "$backend" "$tmp/mixed/bin/wineserver"
cp "$stub" "$tmp/mixed/lib/wine/x86_64-unix/ntdll.so"
expect_rc 0 "--check-wine on an install prefix" "$info" --check-wine "$tmp/prefix"
expect_text '^verdict: BACKEND: the ntsync backend is compiled into 2 Wine binaries' "install prefix: both binaries"
expect_rc 0 "--check-wine on a build tree" "$info" --check-wine "$tmp/build" --json
expect_json '.files | length' 2
expect_json .backend true
expect_rc 1 "--check-wine on a mixed install (ntdll.so a stub)" "$info" --check-wine "$tmp/mixed"
expect_text '^verdict: STUB: the ntsync backend is not compiled into 1 of 2 Wine binaries' "mixed install: the stub is found"
expect_text 'ntdll.so (x86-64): stubs only' "mixed install: ntdll.so named"

# no Wine: each a message and exit 2
expect_rc 2 "--check-wine on a program that is no Wine (/bin/sh)" "$info" --check-wine /bin/sh
expect_text '^verdict: NOT WINE: /bin/sh is no wineserver or ntdll.so of Wine' "no Wine: the message"
expect_rc 2 "--check-wine on ntsync-info itself (it lists the numbers as data)" "$info" --check-wine "$info"
expect_rc 2 "--check-wine on a directory without Wine" "$info" --check-wine "$tmp/empty"
expect_text '^verdict: NOT WINE: no wineserver or ntdll.so under' "empty directory: the message"
echo '#!/bin/sh' >"$tmp/text/wineserver"
expect_rc 2 "--check-wine on a script called wineserver" "$info" --check-wine "$tmp/text/wineserver"
expect_text 'not an ELF file' "script: not ELF"
expect_rc 2 "--check-wine on a missing path" "$info" --check-wine "$tmp/no-such"
expect_text '^verdict: cannot read .*No such file' "missing path: the message"
expect_rc 2 "--check-wine with an empty path" "$info" --check-wine ""

# ---- --pid and --wine on the recorded layouts ----

for dir in "$here"/layouts/*/; do
	name=$(basename "$dir")
	root=$tmp/layout-$name
	cp -a "$dir" "$root"
	load=$(sed -n 's/^load //p' "$root/layout.txt")
	[ -z "$load" ] || touch -d "@$load" "$root/dev/ntsync"
	sed -n 's/^bin //p' "$root/layout.txt" | while read -r kind path; do
		mkdir -p "$(dirname "$root/$path")"
		if [ "$kind" = backend ]; then
			cp "$backend" "$root/$path"
		else
			cp "$stub" "$root/$path"
		fi
	done
	sed -n 's/^case //p' "$root/layout.txt" >"$tmp/cases"
	while IFS='|' read -r args want verdict fix; do
		# shellcheck disable=SC2086 # args are words
		expect_rc "$want" "$name: ntsync-info $args" \
			env NTSYNC_INFO_SYSROOT="$root" "$info" $args
		expect_text "$verdict" "$name: $args: verdict"
		if [ "$fix" != - ]; then
			expect_text "$fix" "$name: $args: fix"
		fi
		# shellcheck disable=SC2086
		expect_rc "$want" "$name: ntsync-info --json $args" \
			env NTSYNC_INFO_SYSROOT="$root" "$info" --json $args
		expect_json .exit "$want"
	done <"$tmp/cases"
done

# the evidence of each link, in the layout where all links are whole
root=$tmp/layout-using
expect_rc 0 "using: --json --pid 200" env NTSYNC_INFO_SYSROOT="$root" "$info" --json --pid 200
expect_json '.processes[0].status' using
expect_json '.processes[0].wineserver_pid' 100
expect_json '.processes[0].holds_device' true
expect_json '[.processes[0].links[].state] | join(",")' ok,ok,ok,ok,ok
expect_json '.processes[0].ntdll' /opt/wine/lib/wine/x86_64-unix/ntdll.so
expect_rc 0 "using: text" env NTSYNC_INFO_SYSROOT="$root" "$info" --pid 100
expect_text '^  2 build  *ok  *opt/wine/bin/wineserver (x86-64): backend compiled in\|^  2 build  *ok  */opt/wine/bin/wineserver (x86-64): backend compiled in' "using: link 2 names the request numbers"
expect_text '^  3 start  *ok  *wineserver pid 100 holds /dev/ntsync open' "using: link 3 from the descriptors"
expect_text '^  5 visibility  *ok  *pid 100: the same mount namespace' "using: link 5 compares mount namespaces"
expect_rc 0 "using: --wine lists both Wine processes" env NTSYNC_INFO_SYSROOT="$root" "$info" --wine --json
expect_json '[.processes[].pid] | join(",")' 100,200
root=$tmp/layout-before
expect_rc 1 "before: --json" env NTSYNC_INFO_SYSROOT="$root" "$info" --json --pid 100
expect_json '.processes[0].links[2].state' broken
expect_json '.processes[0].links[2].certain' true
root=$tmp/layout-flatpak
expect_rc 1 "flatpak: --json" env NTSYNC_INFO_SYSROOT="$root" "$info" --json --pid 100
expect_json '.processes[0].links[4].state' broken
expect_json '.processes[0].status' not-using
root=$tmp/layout-other-user
expect_rc 7 "other-user: --json" env NTSYNC_INFO_SYSROOT="$root" "$info" --json --pid 100
expect_json '.processes[0].status' unknown
expect_json '.processes[0].holds_device' null
expect_json '.processes[0].links[3].state' unknown

# ---- --pid on this machine's processes ----

expect_rc 5 "--pid of this shell (not Wine)" "$info" --pid $$
expect_text "^verdict: NO VERDICT: pid $$ .* is not a Wine process" "this shell: the message"
expect_rc 4 "--pid of a process that does not exist" "$info" --pid 2147483647
expect_text '^verdict: NO VERDICT: no process with pid 2147483647$' "no such process: the message"
# a zombie: the background child of a shell that then becomes sleep 300,
# which never reaps it (the child still runs at the exec, so the shell
# cannot reap it first); on a loaded machine the child's second can take
# long, so give it up to a minute (the parent outlives that)
sh -c 'sleep 1 & echo $!; exec sleep 300' >"$tmp/zombie" &
zpid=$!
z=
i=0
while [ "$i" -lt 300 ]; do
	i=$((i + 1))
	z=$(head -n 1 "$tmp/zombie")
	if [ -n "$z" ] && grep -q '^State:.*Z' "/proc/$z/status" 2>/dev/null; then
		break
	fi
	sleep 0.2
done
if [ -n "$z" ] && grep -q '^State:.*Z' "/proc/$z/status" 2>/dev/null; then
	expect_rc 6 "--pid of a zombie" "$info" --pid "$z"
	expect_text "^verdict: NO VERDICT: pid $z .* is a zombie" "zombie: the message"
	expect_rc 6 "--pid of a zombie, --json" "$info" --json --pid "$z"
	expect_json .error zombie
else
	bad "could not make a zombie to look at"
fi
kill "$zpid" 2>/dev/null || :
zpid=

expect_rc 2 "--pid that is no number" "$info" --pid abc
expect_rc 2 "--pid 0" "$info" --pid 0
expect_rc 2 "--pid with --wine" "$info" --pid 1 --wine

echo "1..$n"
exit $fail
