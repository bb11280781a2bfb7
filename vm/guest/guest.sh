#!/bin/bash
# Runs inside the guest, started by cloud-init's runcmd from the NoCloud seed.
# The host hands over a tar on the virtio disk with serial "ntsync-in" (this script, job.env,
# repo/ (our packages as a signed apt repository), src/, share/); results go back as a tar written raw to the disk "ntsync-out".
# Progress goes to the serial console as "##ntsync## ..." lines, which the host watches.
set -uo pipefail

IN=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=/var/tmp/ntsync-out
# shellcheck source=/dev/null
. "$IN/job.env"
: "${JOB:?}" "${DRIVER:=ours}" "${NET:=0}" "${VERSION:?}" "${MODE:=repo}" "${SECURE_BOOT:=}" "${REPO_SUITE:=trixie}"

rm -rf "$OUT"
mkdir -p "$OUT"
# The serial console is the host's progress channel. A getty starting on it later would
# hang up (vhangup) every descriptor open on it, so: no getty there except for `shell`,
# and every message opens the device afresh.
# CONSOLE (job.env): the architecture's serial console (vm/ntsync_vm/arches.py).
: "${CONSOLE:?}"
if [ "$JOB" != shell ]; then
	systemctl mask --runtime --now "serial-getty@$CONSOLE.service" >/dev/null 2>&1 || true
fi
TTY=/dev/$CONSOLE
[ -w "$TTY" ] || TTY=/dev/console
exec >>"$OUT/guest.log" 2>&1
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

mark() { echo "##ntsync## $*" >"$TTY"; echo "##ntsync## $*"; }
say() { echo "$*" >"$TTY"; echo "$*"; }
kmsg() { echo "ntsync-vm: $*" >/dev/kmsg 2>/dev/null || true; }
# Run a command, its output both in a log file and on the console.
shown() {
	local logf=$1
	shift
	"$@" 2>&1 | tee -a "$logf" | while IFS= read -r line; do echo "$line" >"$TTY"; done
	return "${PIPESTATUS[0]}"
}
# The same, each line in the log file after the guest's uptime (the kernel log's time base),
# so that slow steps of an installation show.
shown_timed() {
	local logf=$1 line up _
	shift
	"$@" 2>&1 | while IFS= read -r line; do
		echo "$line" >"$TTY"
		read -r up _ </proc/uptime
		printf '[%8s] %s\n' "$up" "$line" >>"$logf"
	done
	return "${PIPESTATUS[0]}"
}

JOB_RC=0
LOADED_BY=""

finish() {
	local rc=$1
	mark stage unload
	local unload_rc=0
	if [ -e /sys/module/ntsync ]; then
		if modprobe -r ntsync; then unload_rc=0; else unload_rc=$?; fi
		if [ "$unload_rc" -ne 0 ]; then
			say "modprobe -r ntsync failed (rc $unload_rc); users: $(cat /sys/module/ntsync/refcnt 2>/dev/null)"
		fi
	else
		say "ntsync module not loaded at the end (nothing to unload)"
	fi
	echo "$unload_rc" >"$OUT/unload.rc"
	mark stage collect
	kmsg "job $JOB end"
	cat /proc/sys/kernel/tainted >"$OUT/taint.end"
	dmesg >"$OUT/dmesg.txt" 2>&1 || true
	echo "$rc" >"$OUT/job.rc"
	cp /var/log/cloud-init-output.log "$OUT/" 2>/dev/null || true
	tar -cf /dev/disk/by-id/virtio-ntsync-out -C "$OUT" . || say "writing results failed"
	sync
	mark "done rc=$rc"
	systemctl poweroff --no-block || poweroff -f
	exit 0
}

fail() {
	say "ntsync-vm guest: $*"
	echo "$*" >"$OUT/failure"
	finish 3
}

kernel_has_in_tree() {
	# The kernel's own ntsync module, if any (7.x: drivers/misc/ntsync.ko).
	local f
	f=$(modinfo -n ntsync 2>/dev/null) || return 1
	case $f in */kernel/drivers/*) return 0 ;; esac
	# dkms may have put ours in updates/ and hidden the in-tree one.
	find "/lib/modules/$(uname -r)/kernel/drivers" -name 'ntsync.ko*' | grep -q .
}

build_ours_directly() {
	# For kernels with an in-tree driver DKMS leaves alone: build ours for this kernel by hand.
	# (module/ needs ../VERSION and ../include/uapi: copy the whole source tree.)
	local src=/usr/src/ntsync-$VERSION
	[ -f "$src/module/Makefile" ] || src=$IN/src
	say "building our module from $src for $(uname -r)"
	rm -rf /var/tmp/ntsync-build
	cp -a "$src" /var/tmp/ntsync-build
	if ! shown_timed "$OUT/build.log" make -C /var/tmp/ntsync-build/module KDIR="/lib/modules/$(uname -r)/build"; then
		return 1
	fi
	OURS_KO=/var/tmp/ntsync-build/module/ntsync.ko
}

load_driver() {
	# $1 = ours | in-tree.  Leaves exactly that driver loaded.
	local want=$1
	if [ -e /sys/module/ntsync ]; then
		modprobe -r ntsync || return 1
	fi
	if [ "$want" = in-tree ]; then
		local f
		f=$(find "/lib/modules/$(uname -r)/kernel/drivers" -name 'ntsync.ko*' | head -n1)
		[ -n "$f" ] || { say "this kernel has no in-tree ntsync module"; return 1; }
		# By path: dkms or the step above may have put ours first in modules.dep.
		insmod "$f" || return 1
		LOADED_BY="in-tree $f"
	else
		local f
		f=$(modinfo -n ntsync 2>/dev/null || true)
		case $f in
		*/updates/ntsync-vm/*)
			# built here before (a kernel with the in-tree driver: DKMS built nothing)
			modprobe ntsync || return 1
			LOADED_BY="ours (built here) $f"
			;;
		*/updates/* | */extra/*)
			modprobe ntsync || return 1
			LOADED_BY="ours (dkms) $f"
			;;
		*)
			# Installed where depmod finds it first (updates/), so that the final
			# `modprobe -r ntsync` is the same honest check as for a DKMS install.
			build_ours_directly || return 1
			local dst
			dst=/lib/modules/$(uname -r)/updates/ntsync-vm/ntsync.ko
			install -D -m 0644 "$OURS_KO" "$dst" && depmod -a || return 1
			modprobe ntsync || return 1
			[ "$(modinfo -n ntsync)" = "$dst" ] || { say "modprobe did not pick $dst"; return 1; }
			LOADED_BY="ours (built here) $dst"
			;;
		esac
	fi
	udevadm settle || true
	say "driver: $LOADED_BY; $(ls -l /dev/ntsync 2>&1)"
	say "driver version: $(cat /sys/module/ntsync/version 2>/dev/null || echo '(none: in-tree)') srcversion $(cat /sys/module/ntsync/srcversion 2>/dev/null)"
}

# Secure Boot runs: what the guest booted as, for the host's gate (cloud.judge_secure_boot)
# and the user's eyes. KEY=VALUE lines in secure-boot.txt.
secure_boot_facts() {
	local sb lockdown key signer=""
	sb=$(mokutil --sb-state 2>&1 | head -n1)
	lockdown=$(cat /sys/kernel/security/lockdown 2>&1)
	key=$(mokutil --test-key /var/lib/dkms/mok.pub 2>&1 | head -n1)
	[ -e /sys/module/ntsync ] && signer=$(modinfo -F signer ntsync 2>/dev/null)
	{
		echo "sb_state=$sb"
		echo "lockdown=$lockdown"
		echo "dkms_key=$key"
		echo "signer=$signer"
	} >"$OUT/secure-boot.txt"
	say "secure boot: $sb; lockdown: $lockdown; $key${signer:+; module signed by: $signer}"
}

# ------------------------------------------------------------------------------------ start
mark "stage start kernel=$(uname -r)"
kmsg "job $JOB start"
uname -r >"$OUT/uname"
cat /proc/sys/kernel/tainted >"$OUT/taint.start"
cp "$IN/job.env" "$OUT/"

mark stage install
if [ "$NET" = 1 ]; then
	# A user's cloud image: no compiler, no headers. Get them from Debian's archive.
	say "network install: apt-get update; headers and compiler for $(uname -r)"
	shown_timed "$OUT/install.log" apt-get update || fail "apt-get update failed (network?)"
	shown_timed "$OUT/install.log" apt-get install -y "linux-headers-$(uname -r)" dkms gcc make libc6-dev \
		pkgconf libcmocka0 || fail "installing headers and compiler failed"
fi
if [ "$MODE" = repo ]; then
	# As a user gets them (README): the archive keyring package first (from the project's
	# site: here the repository's pool), the sources entry with Signed-By, apt-get update of
	# that source alone (the guest has no network for Debian's), apt-get install by name.
	# A Release or package that does not match the signature is refused by apt right here.
	kr=$(find "$IN/repo/pool" -name 'ntsync-archive-keyring_*_all.deb' | head -n 1)
	[ -n "$kr" ] || fail "no ntsync-archive-keyring package in the repository"
	shown_timed "$OUT/install.log" apt-get install -y "$kr" || fail "installing the archive keyring failed"
	mkdir -p /var/tmp/ntsync-sources.d
	printf 'Types: deb\nURIs: file:%s\nSuites: %s\nComponents: main\nSigned-By: %s\n' "$IN/repo" "$REPO_SUITE" \
		/usr/share/keyrings/ntsync-archive-keyring.gpg | tee /etc/apt/sources.list.d/ntsync.sources \
		>/var/tmp/ntsync-sources.d/ntsync.sources
	shown_timed "$OUT/install.log" apt-get update -o Dir::Etc::SourceList=/dev/null \
		-o Dir::Etc::SourceParts=/var/tmp/ntsync-sources.d -o APT::Get::List-Cleanup=0 ||
		fail "apt-get update of the ntsync repository failed (its signature or hashes?)"
	mapfile -t pkgs < <(sed -n 's/^Package: //p' "$IN/repo/dists/$REPO_SUITE/main/binary-$(dpkg --print-architecture)/Packages" |
		grep -v -e '-dbgsym$' -e '^ntsync-archive-keyring$' | sort -u)
	[ ${#pkgs[@]} -gt 0 ] || fail "the repository lists no packages"
	say "apt-get install ${pkgs[*]} (from the signed repository, suite $REPO_SUITE)"
	shown_timed "$OUT/install.log" apt-get install -y "${pkgs[@]}" || fail "apt-get install of our packages failed"
	rm -rf /var/tmp/ntsync-sources.d
fi

mark stage driver
if [ "$SECURE_BOOT" = not-enrolled ]; then
	# The kernel must refuse the module: the job (sb-refused) checks that, nothing loads it.
	secure_boot_facts
	mark stage job
	# shellcheck source=/dev/null
	. "$IN/job.sh"
	finish "$JOB_RC"
fi
case $MODE:$DRIVER in
repo:ours | src:ours)
	if [ "$MODE" = repo ] && ! kernel_has_in_tree && [ ! -e /sys/module/ntsync ]; then
		say "ntsync-dkms installed but the module is not loaded; dkms status:"
		shown "$OUT/install.log" dkms status
	fi
	load_driver ours || fail "loading our ntsync module failed"
	;;
*:in-tree)
	kernel_has_in_tree || fail "--driver in-tree: kernel $(uname -r) has no in-tree ntsync"
	load_driver in-tree || fail "loading the in-tree ntsync module failed"
	;;
*) fail "unknown driver '$DRIVER'" ;;
esac

[ -z "$SECURE_BOOT" ] || secure_boot_facts
mark stage job
# The job's own commands; each writes job.log and sets JOB_RC.
# shellcheck source=/dev/null
. "$IN/job.sh"
finish "$JOB_RC"
