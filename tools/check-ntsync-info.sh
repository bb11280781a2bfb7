#!/bin/sh
# Host tests of ntsync-info: options and exit codes, the verdict for a
# missing node and for a node that is not ntsync, --json, the driver
# detection against fake /sys trees (NTSYNC_INFO_SYSROOT), and the parts for
# Wine: processes using ntsync from fake /proc trees, a wineserver without
# the device, the system header's state; Secure Boot and DKMS's key from
# fake EFI variables (exit 3 when the kernel refuses the module).
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
# shellcheck source=tools/info-tests/tap.sh
. "$(dirname "$0")/info-tests/tap.sh"

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

# Secure Boot and DKMS's key, from fake EFI variable trees.  efivarfs files
# are 4 attribute bytes and the value; the DER "certificates" are short
# byte strings that start as DER does.
sbroot() {
	r=$tmp/sb-$1
	mkdir -p "$r/sys/firmware/efi/efivars" "$r/sys/kernel/security" \
		"$r/lib/modules/$rel/updates/dkms" "$r/var/lib/dkms"
	: >"$r/lib/modules/$rel/updates/dkms/ntsync.ko.xz"
	echo 'none [integrity] confidentiality' >"$r/sys/kernel/security/lockdown"
	printf '\060\202\001\012ntsync-test-dkms-key-0123456789' >"$r/var/lib/dkms/mok.pub"
	efivar "$r" SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c '\001'
	efivar "$r" SetupMode-8be4df61-93ca-11d2-aa0d-00e098032b8c '\000'
	# shim's MOK list with Debian's key (another certificate) only
	efivar "$r" MokListRT-605dab50-e046-4300-abb6-3dd810dd8b23 \
		'\241\131\300\245SIGLISTHEADER\060\202\002\000debian-secure-boot-ca'
}
# efivar ROOT NAME VALUE (printf format)
efivar() {
	# shellcheck disable=SC2059 # the value is given as printf escapes
	printf "\\006\\000\\000\\000$3" >"$1/sys/firmware/efi/efivars/$2"
}
# a list that holds DKMS's key among others
with_key() {
	printf '\241\131\300\245SIGLISTHEADER\060\202\002\000debian-secure-boot-ca'
	cat "$1/var/lib/dkms/mok.pub"
	printf 'trailer'
}
shim_guid=605dab50-e046-4300-abb6-3dd810dd8b23

sbroot off
efivar "$r" SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c '\000'
echo '[none] integrity confidentiality' >"$r/sys/kernel/security/lockdown"
expect_rc 1 "Secure Boot off" env NTSYNC_INFO_SYSROOT="$r" "$info" --json --device "$tmp/no-such-node"
expect_json .secure_boot.enabled false
expect_json .secure_boot.lockdown none
expect_json .secure_boot.dkms_key /var/lib/dkms/mok.pub
expect_json .secure_boot.dkms_key_enrolled false
expect_json .cause null
expect_text "run 'modprobe ntsync' as root\"" "Secure Boot off: the modprobe hint alone"

sbroot refused
expect_rc 3 "Secure Boot on, DKMS's key not enrolled" env NTSYNC_INFO_SYSROOT="$r" "$info" --device "$tmp/no-such-node"
expect_text '^verdict: NOT WORKING: Secure Boot refuses the ntsync module: DKMS.s signing key (/var/lib/dkms/mok.pub) is not enrolled$' "not enrolled: the verdict"
expect_text "^hint: .*'sudo mokutil --import /var/lib/dkms/mok.pub'.*one-time password.*reboot; when the blue MokManager screen says \"Press any key to perform MOK management\", press a key within 10 seconds, then choose \"Enroll MOK\" -> \"Continue\" -> \"Yes\", type the password, and choose \"Reboot\"; after that reboot ntsync loads by itself" "not enrolled: the steps"
expect_text '^secure boot: on; lockdown: integrity; DKMS key: /var/lib/dkms/mok.pub not enrolled (not in the MOK list)$' "not enrolled: the secure boot line"
if grep -q 'modprobe ntsync' "$tmp/out"; then
	bad "not enrolled: still advises modprobe, which the kernel refuses"
else
	ok "not enrolled: no modprobe advice"
fi
expect_rc 3 "Secure Boot on, DKMS's key not enrolled, --json" env NTSYNC_INFO_SYSROOT="$r" "$info" --json --device "$tmp/no-such-node"
expect_json .secure_boot.enabled true
expect_json .secure_boot.lockdown integrity
expect_json .secure_boot.dkms_key /var/lib/dkms/mok.pub
expect_json .secure_boot.dkms_key_enrolled false
expect_json .secure_boot.dkms_key_pending false
expect_json .cause secure-boot-key-not-enrolled
expect_json .working false

# The same under lockdown "none" (the kernel would load it): not the cause.
echo '[none] integrity confidentiality' >"$r/sys/kernel/security/lockdown"
expect_rc 1 "Secure Boot on, key not enrolled, but no lockdown" env NTSYNC_INFO_SYSROOT="$r" "$info" --json --device "$tmp/no-such-node"
expect_json .cause null
# unknown lockdown (no securityfs): the key decides
rm "$r/sys/kernel/security/lockdown"
expect_rc 3 "Secure Boot on, key not enrolled, lockdown unknown" env NTSYNC_INFO_SYSROOT="$r" "$info" --json --device "$tmp/no-such-node"
expect_json .secure_boot.lockdown null

# Enrolled: in shim's runtime list, in the kernel's copy, in the second
# part of a split list, in the firmware's db.
sbroot enrolled
with_key "$r" | sed '1s/^/\x06\x00\x00\x00/' >"$r/sys/firmware/efi/efivars/MokListRT-$shim_guid"
expect_rc 1 "Secure Boot on, key enrolled" env NTSYNC_INFO_SYSROOT="$r" "$info" --device "$tmp/no-such-node"
expect_text "^hint: *the module is installed (/lib/modules/$rel/updates/dkms/ntsync.ko.xz) but not loaded: run 'modprobe ntsync' as root$" "enrolled: the modprobe hint"
expect_text '^secure boot: on; lockdown: integrity; DKMS key: /var/lib/dkms/mok.pub enrolled (in the MOK list)$' "enrolled: the secure boot line"
expect_rc 1 "Secure Boot on, key enrolled, --json" env NTSYNC_INFO_SYSROOT="$r" "$info" --json --device "$tmp/no-such-node"
expect_json .secure_boot.dkms_key_enrolled true
expect_json .secure_boot.dkms_key_pending false
expect_json .cause null

sbroot kernelcopy
mkdir -p "$r/sys/firmware/efi/mok-variables"
with_key "$r" >"$r/sys/firmware/efi/mok-variables/MokListRT"
expect_rc 1 "key in /sys/firmware/efi/mok-variables/MokListRT" env NTSYNC_INFO_SYSROOT="$r" "$info" --json --device "$tmp/no-such-node"
expect_json .secure_boot.dkms_key_enrolled true

sbroot split
with_key "$r" | sed '1s/^/\x06\x00\x00\x00/' >"$r/sys/firmware/efi/efivars/MokListRT1-$shim_guid"
expect_rc 1 "key in MokListRT1 (a split list)" env NTSYNC_INFO_SYSROOT="$r" "$info" --json --device "$tmp/no-such-node"
expect_json .secure_boot.dkms_key_enrolled true

sbroot db
with_key "$r" | sed '1s/^/\x06\x00\x00\x00/' >"$r/sys/firmware/efi/efivars/db-d719b2cb-3d3a-4596-a3bc-dad00e67656f"
expect_rc 1 "key in the firmware's db" env NTSYNC_INFO_SYSROOT="$r" "$info" --json --device "$tmp/no-such-node"
expect_json .secure_boot.dkms_key_enrolled true

# Pending: mokutil --import put the key into MokNew.
sbroot pending
with_key "$r" | sed '1s/^/\x07\x00\x00\x00/' >"$r/sys/firmware/efi/efivars/MokNew-$shim_guid"
expect_rc 3 "enrollment pending" env NTSYNC_INFO_SYSROOT="$r" "$info" --device "$tmp/no-such-node"
expect_text '^verdict: NOT WORKING: Secure Boot refuses the ntsync module until DKMS.s signing key (/var/lib/dkms/mok.pub) is enrolled: its enrollment waits for the next reboot$' "pending: the verdict"
expect_text "^hint: *'mokutil --import /var/lib/dkms/mok.pub' was run: reboot; when the blue MokManager screen says .* \"Enroll MOK\"" "pending: the steps after the reboot"
expect_rc 3 "enrollment pending, --json" env NTSYNC_INFO_SYSROOT="$r" "$info" --json --device "$tmp/no-such-node"
expect_json .secure_boot.dkms_key_enrolled false
expect_json .secure_boot.dkms_key_pending true
expect_json .cause secure-boot-key-pending
# a request for another key only
printf '\007\000\000\000other-key' >"$r/sys/firmware/efi/efivars/MokNew-$shim_guid"
expect_rc 3 "a request for another key" env NTSYNC_INFO_SYSROOT="$r" "$info" --json --device "$tmp/no-such-node"
expect_json .secure_boot.dkms_key_pending false
expect_json .cause secure-boot-key-not-enrolled

# a request this user may not read (mokutil makes MokNew mode 0600)
rm "$r/sys/firmware/efi/efivars/MokNew-$shim_guid"
mkdir "$r/sys/firmware/efi/efivars/MokNew-$shim_guid"
expect_rc 3 "an unreadable request" env NTSYNC_INFO_SYSROOT="$r" "$info" --json --device "$tmp/no-such-node"
expect_json .secure_boot.dkms_key_pending null
expect_json .cause secure-boot-key-not-enrolled
expect_text 'an enrollment request already waits for the next reboot' "an unreadable request: the hint mentions it"

# What cannot be read is unknown, never guessed.
sbroot odd
printf '\006\000\000\000\001\000' >"$r/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
expect_rc 1 "SecureBoot variable of an odd size" env NTSYNC_INFO_SYSROOT="$r" "$info" --json --device "$tmp/no-such-node"
expect_json .secure_boot.enabled null
expect_json .cause null
printf '\006\000\000' >"$r/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
expect_rc 1 "SecureBoot variable shorter than its attributes" env NTSYNC_INFO_SYSROOT="$r" "$info" --json --device "$tmp/no-such-node"
expect_json .secure_boot.enabled null
rm "$r/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
mkdir "$r/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
expect_rc 1 "unreadable SecureBoot variable" env NTSYNC_INFO_SYSROOT="$r" "$info" --device "$tmp/no-such-node"
expect_text '^secure boot: unknown (' "unreadable SecureBoot: unknown in the text"

sbroot unreadable
rm "$r/sys/firmware/efi/efivars/MokListRT-$shim_guid"
mkdir "$r/sys/firmware/efi/efivars/MokListRT-$shim_guid"
expect_rc 1 "unreadable MOK list" env NTSYNC_INFO_SYSROOT="$r" "$info" --json --device "$tmp/no-such-node"
expect_json .secure_boot.enabled true
expect_json .secure_boot.dkms_key_enrolled null
expect_json .cause null
expect_text "Secure Boot is on: if modprobe fails with 'Key was rejected by service' or 'Operation not permitted', DKMS's key is not enrolled" "unreadable MOK list: the hint names the possibility"
# the kernel's copy, readable (as root), settles it
mkdir -p "$r/sys/firmware/efi/mok-variables"
printf 'debian-secure-boot-ca' >"$r/sys/firmware/efi/mok-variables/MokListRT"
expect_rc 3 "unreadable shim copy, kernel copy without the key" env NTSYNC_INFO_SYSROOT="$r" "$info" --json --device "$tmp/no-such-node"
expect_json .secure_boot.dkms_key_enrolled false

sbroot empty
rm -f "$r"/sys/firmware/efi/efivars/*
expect_rc 1 "efivarfs not mounted" env NTSYNC_INFO_SYSROOT="$r" "$info" --json --device "$tmp/no-such-node"
expect_json .secure_boot.enabled null
expect_json .secure_boot.dkms_key_enrolled null
expect_json .cause null

sbroot noshim
rm "$r/sys/firmware/efi/efivars/MokListRT-$shim_guid"
expect_rc 3 "Secure Boot without shim (no MOK list)" env NTSYNC_INFO_SYSROOT="$r" "$info" --device "$tmp/no-such-node"
expect_text '^hint: *this machine boots without shim' "no shim: MokManager is not offered"

sbroot nokey
rm "$r/var/lib/dkms/mok.pub"
expect_rc 1 "no DKMS key" env NTSYNC_INFO_SYSROOT="$r" "$info" --json --device "$tmp/no-such-node"
expect_json .secure_boot.dkms_key null
expect_json .secure_boot.dkms_key_enrolled null
expect_json .cause null

sbroot bios
rm -r "$r/sys/firmware/efi"
expect_rc 1 "no EFI firmware" env NTSYNC_INFO_SYSROOT="$r" "$info" --json --device "$tmp/no-such-node"
expect_json .secure_boot.enabled false
expect_json .cause null

# shim told not to validate, and setup mode: the kernel treats both as off
sbroot moksb
efivar "$r" MokSBStateRT-$shim_guid '\001'
expect_rc 1 "validation disabled in shim" env NTSYNC_INFO_SYSROOT="$r" "$info" --json --device "$tmp/no-such-node"
expect_json .secure_boot.enabled false
sbroot setup
efivar "$r" SetupMode-8be4df61-93ca-11d2-aa0d-00e098032b8c '\001'
expect_rc 1 "setup mode" env NTSYNC_INFO_SYSROOT="$r" "$info" --json --device "$tmp/no-such-node"
expect_json .secure_boot.enabled false

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
