#!/bin/bash
# Runs inside a cloud guest of `vm/ntsync-vm lifecycle --scenario NAME` (not on a
# host): one scenario of a Debian machine's life (vm/guest/scenarios/NAME.sh),
# step by step, its state carried across reboots.
#
# Its folder (/var/tmp/scn-in) holds this script, scenario.sh's scenario as
# steps.sh, env (SCENARIO, SUITE, VERSION, NEXT_VERSION, NET, CONSOLE), repo/
# (this tree's packages as the signed apt repository), maybe next/ (a newer
# version built from the tree, also signed) and the helpers of scenarios/.
# The scenario defines STEPS (names) and a function step_NAME for each; a
# step that reboots calls reboot_into [KERNEL RELEASE] as its last command,
# and the next step runs after the boot (a systemd unit resumes this script).
# The guest boots from its disk through GRUB: reboot_into writes
# /boot/grub/grub.cfg for the kernel named (default: the newest installed),
# as `grub-reboot` would.
# On the serial console, for the host:
#   ##ntsync## step NAME KERNEL    a step begins (on kernel KERNEL)
#   ##ntsync## check PASS|FAIL NAME DETAIL
#   ##ntsync## | LINE              output of a command (apt, dkms, ntsync-info)
#   ##ntsync## taint N             /proc/sys/kernel/tainted at the end
#   ##ntsync## done                then the guest powers off
# Nothing of the runner is named *ntsync*: the scenarios look for left-overs by that name.
set -uo pipefail

IN=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ST=/var/lib/vm-scenario
UNIT=/etc/systemd/system/vm-scenario.service
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# shellcheck source=/dev/null
. "$IN/env"
: "${SCENARIO:?}" "${SUITE:?}" "${VERSION:?}" "${NET:=0}" "${NEXT_VERSION:=}" "${CONSOLE:=ttyS0}"
mkdir -p "$ST"
exec >>"$ST/runner.log" 2>&1

# The console is opened afresh for every line: the serial getty's vhangup()
# revokes descriptors opened before it started.
systemctl mask --runtime --now "serial-getty@$CONSOLE.service" >/dev/null 2>&1 || true
say() {
	local c=/dev/$CONSOLE
	[ -w "$c" ] || c=/dev/console
	echo "##ntsync## $*" >"$c"
	echo "##ntsync## $*"
}
ok() { say "check PASS $1 ${*:2}"; }
bad() { say "check FAIL $1 ${*:2}"; }
# check NAME DETAIL CMD...: PASS when CMD succeeds
check() {
	local name=$1 detail=$2
	shift 2
	if "$@"; then ok "$name" "$detail"; else bad "$name" "$detail (failed: $*)"; fi
}
# shown CMD...: run CMD, every line of its output to the console as "| LINE" and
# to $ST/last.out; its exit status
shown() {
	"$@" 2>&1 | tee "$ST/last.out" | while IFS= read -r l; do say "| $l"; done
	return "${PIPESTATUS[0]}"
}

# The Debian archive through QEMU's user network (guest 10.0.2.15, gateway
# 10.0.2.2, DNS 10.0.2.3), at every boot: nothing of it is persistent.
if [ "$NET" = 1 ]; then
	if ! ip -4 route show default | grep -q .; then
		ip link set eth0 up
		ip addr add 10.0.2.15/24 dev eth0 2>/dev/null || true
		ip route add default via 10.0.2.2 || true
	fi
	if ! grep -qs '^nameserver' /etc/resolv.conf; then
		rm -f /etc/resolv.conf
		echo 'nameserver 10.0.2.3' >/etc/resolv.conf
	fi
fi

# APT_OURS: apt-get's options that make it read our sources alone (add_repo keeps
# a copy of each in $ST/sources.d) when the guest has no network: the image's
# lists of Debian's archive are of its build, and nothing may come from them.
APT_OURS=()
[ "$NET" = 1 ] || APT_OURS=(-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$ST/sources.d"
	-o APT::Get::List-Cleanup=0)

# add_repo DIR NAME: a signed repository of ours (a folder of the input) as a
# user adds it (README): the archive keyring package, a deb822 entry with
# Signed-By, apt-get update.
add_repo() {
	local dir=$1 name=$2 kr
	kr=$(find "$dir/pool" -name '*-archive-keyring_*_all.deb' | head -n 1)
	[ -n "$kr" ] || { bad "repo-$name" "no archive keyring package in $dir"; return 1; }
	shown apt-get install -y "$kr" || { bad "repo-$name" "installing the archive keyring failed"; return 1; }
	printf 'Types: deb\nURIs: file:%s\nSuites: %s\nComponents: main\nSigned-By: %s\n' "$dir" "$SUITE" \
		"$(dpkg -L "$(dpkg-deb -f "$kr" Package)" | grep '\.gpg$' | head -n 1)" \
		>"/etc/apt/sources.list.d/$name.sources"
	# Without the network (the scenario needs no archive) apt-get update reads our sources alone.
	mkdir -p "$ST/sources.d"
	cp "/etc/apt/sources.list.d/$name.sources" "$ST/sources.d/"
	shown apt-get update "${APT_OURS[@]}" || { bad "repo-$name" "apt-get update failed"; return 1; }
}

# our_packages DIR: the names of the packages in repository DIR (not the keyring)
our_packages() {
	sed -n 's/^Package: //p' "$1/dists/$SUITE/main/binary-$(dpkg --print-architecture)/Packages" |
		grep -v -e '-dbgsym$' -e '-archive-keyring$' | sort -u
}

loaded_version() { cat /sys/module/ntsync/version 2>/dev/null || echo none; }

# no_apt_errors: apt's last output (last.out) has no DKMS or dpkg error line
no_apt_errors() {
	! grep -E '^(Error!|E: |dpkg: error)|[Ee]rror processing|Bad return status' "$ST/last.out"
}

# info_says TEXT: ntsync-info's report (shown) has TEXT in a line (a fixed string: a
# version like 1.1.0+test1 is no pattern)
info_says() {
	shown ntsync-info
	grep -Fq -- "$1" "$ST/last.out"
}

# The holder (scenarios/holder.c, built by the scenario that uses it): a process that
# keeps /dev/ntsync, a semaphore and an event busy, as wineserver does, writing its
# rounds and errors to HSTATUS.
HOLDER=/usr/local/bin/vm-holder
HSTATUS=/run/vm-holder.status
start_holder() {
	rm -f "$HSTATUS"
	setsid "$HOLDER" "$HSTATUS" </dev/null >/run/vm-holder.log 2>&1 &
	echo $! >/run/vm-holder.pid
	sleep 3
	holder_rounds >/dev/null
}
# holder_rounds: the rounds so far (fails when the holder reports no status or an error)
holder_rounds() {
	local rounds errors
	read -r _ rounds _ errors _ <"$HSTATUS" 2>/dev/null || return 1
	[ "$errors" = 0 ] || { say "| holder: $(cat "$HSTATUS")"; return 1; }
	echo "$rounds"
}
# holder_alive: the holder still runs and its rounds go on, without an error
holder_alive() {
	local a b
	a=$(holder_rounds) || return 1
	sleep 3
	b=$(holder_rounds) || return 1
	kill -0 "$(cat /run/vm-holder.pid)" 2>/dev/null && [ "$b" -gt "$a" ]
}
# stop_holder: it ends on SIGTERM within 10 s, with no error in any round
stop_holder() {
	local pid
	pid=$(cat /run/vm-holder.pid)
	kill -TERM "$pid"
	for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
	! kill -0 "$pid" 2>/dev/null && grep -q 'errors 0 ' "$HSTATUS"
}

# check_booted_ours NEW: booted into kernel NEW, ours loaded at boot by systemd-modules-load
check_booted_ours() {
	check new-booted "booted $1" test "$(uname -r)" = "$1"
	check new-loaded "ours (ntsync $VERSION) loaded at boot (loaded: $(loaded_version))" \
		test "$(loaded_version)" = "$VERSION"
	check new-modules-load "systemd-modules-load.service ran without a failure" \
		systemctl is-active --quiet systemd-modules-load.service
}

# check_suite NEW: the installed conformance suite passes on kernel NEW
check_suite() {
	local rc
	shown ntsync-run-tests
	rc=$?
	check new-suite "ntsync-run-tests on $1: exit $rc; $(grep -E '[0-9]+ passed' "$ST/last.out" | tail -n 1)" \
		test "$rc" = 0
}

# The kernels installed, newest first.
kernels() {
	find /boot -maxdepth 1 -name 'vmlinuz-*' -printf '%f\n' | sed 's/^vmlinuz-//' | sort -rV
}

# reboot_into [RELEASE]: the next boot runs kernel RELEASE (default the newest
# installed), then the next step.
reboot_into() {
	local krel=${1:-$(kernels | head -n 1)} cmdline
	[ -e "/boot/vmlinuz-$krel" ] || { bad reboot "no /boot/vmlinuz-$krel"; finish; }
	cmdline=$(sed 's/^BOOT_IMAGE=[^ ]* //' /proc/cmdline)
	cat >/boot/grub/grub.cfg <<EOF
# vm/ntsync-vm lifecycle --scenario: the next boot's kernel
serial --unit=0 --speed=115200
terminal_input serial console
terminal_output serial console
set timeout=0
menuentry 'Debian GNU/Linux, $krel' {
  linux /boot/vmlinuz-$krel $cmdline
  initrd /boot/initrd.img-$krel
}
EOF
	echo $((i + 1)) >"$ST/index"
	say "| rebooting into $krel"
	sync
	systemctl reboot
	sleep infinity
}

finish() {
	say "taint $(cat /proc/sys/kernel/tainted)"
	systemctl disable vm-scenario.service >/dev/null 2>&1
	rm -f "$UNIT"
	say "done"
	sync
	systemctl poweroff
	sleep infinity
}

# shellcheck source=/dev/null
. "$IN/steps.sh"

if [ ! -e "$ST/index" ]; then
	cat >"$UNIT" <<UNIT
[Unit]
Description=vm/ntsync-vm lifecycle --scenario, after a reboot
After=multi-user.target systemd-modules-load.service

[Service]
Type=oneshot
ExecStart=/bin/bash $IN/scenario.sh
TimeoutStartSec=infinity

[Install]
WantedBy=multi-user.target
UNIT
	systemctl enable vm-scenario.service >/dev/null 2>&1
	echo 0 >"$ST/index"
fi

i=$(cat "$ST/index")
while [ "$i" -lt "${#STEPS[@]}" ]; do
	say "step ${STEPS[$i]} $(uname -r)"
	"step_${STEPS[$i]}"
	i=$((i + 1))
	echo "$i" >"$ST/index"
done
finish
