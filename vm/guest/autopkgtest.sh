#!/bin/bash
# Runs inside a cloud guest of `vm/ntsync-vm lifecycle` (not on a host): the
# package tests of debian/tests/ in autopkgtest form, one after the other, on
# this guest as the testbed.
#
# Its folder (/var/tmp/apt-in) holds the tree's debian/tests/ (src/), our new
# packages as the signed apt repository (repo/, vm/ntsync_vm/repo.py; added
# to apt's sources as a user adds it: the archive keyring package, a deb822
# entry with Signed-By), maybe an older version's packages (debs/old/,
# installed first so that the new ones are an upgrade), REPO_SUITE (the
# repository's suite) and plan: one line per test, "NAME RESTRICTIONS"
# (comma-separated).  For every test the new packages are (re)installed by
# name from the repository (its Depends: all of them), then it runs from src/ with
# AUTOPKGTEST_TMP and AUTOPKGTEST_ARTIFACTS set; /tmp/autopkgtest-reboot MARK
# reboots the guest, and the test runs again with AUTOPKGTEST_REBOOT_MARK=MARK
# (a systemd unit resumes this script at boot).  Exit 0 passes, 77 skips a
# skippable test, anything else fails.
# On the serial console, for the host:
#   ##ntsync## | NAME LINE     a line of the test's output (stdout and stderr)
#   ##ntsync## result NAME PASS|FAIL|SKIP DETAIL
#   ##ntsync## taint N         /proc/sys/kernel/tainted at the end
#   ##ntsync## done            then the guest powers off
set -uo pipefail

IN=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Nothing of the runner is named *ntsync*: dkms-lifecycle looks for left-overs by that name.
ST=/var/lib/vm-autopkgtest
UNIT=/etc/systemd/system/vm-autopkgtest.service
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mkdir -p "$ST"
exec >>"$ST/runner.log" 2>&1

# The console is opened afresh for every line: the serial getty's vhangup()
# revokes descriptors opened before it started. It is the kernel command line's last
# console= (the serial one the host reads; vm/ntsync_vm/arches.py names it).
CONSOLE=$(tr ' ' '\n' </proc/cmdline | sed -n 's/^console=\([^,]*\).*/\1/p' | tail -n 1)
say() {
	local c=/dev/${CONSOLE:-console}
	[ -w "$c" ] || c=/dev/console
	echo "##ntsync## $*" >"$c"
	echo "##ntsync## $*"
}

# needs-internet: the image configures no network; give eth0 QEMU user
# networking's fixed addresses (guest 10.0.2.15, gateway 10.0.2.2, DNS
# 10.0.2.3), at every boot (nothing of it is persistent).
if grep -q needs-internet "$IN/plan"; then
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

if [ ! -e "$ST/started" ]; then
	touch "$ST/started"
	cat >"$UNIT" <<UNIT
[Unit]
Description=autopkgtest runner (vm/ntsync-vm lifecycle), after a reboot
After=multi-user.target systemd-modules-load.service

[Service]
Type=oneshot
ExecStart=/bin/bash $IN/autopkgtest.sh

[Install]
WantedBy=multi-user.target
UNIT
	systemctl enable vm-autopkgtest.service
	echo 0 >"$ST/index"
	# The signed repository, as a user adds it; its apt-get update reads that source alone
	# (Debian's need the network, which only needs-internet tests have).
	kr=$(find "$IN/repo/pool" -name '*-archive-keyring_*_all.deb' | head -n 1)
	suite=$(cat "$IN/REPO_SUITE")
	mkdir -p "$ST/sources.d"
	printf 'Types: deb\nURIs: file:%s\nSuites: %s\nComponents: main\nSigned-By: %s\n' "$IN/repo" "$suite" \
		"$(dpkg-deb -c "$kr" | grep -o '/usr/share/keyrings/[^ ]*\.gpg$' | head -n 1)" >"$ST/sources.d/ours.sources"
	if [ -n "$kr" ] && apt-get install -y "$kr" 2>&1 | while IFS= read -r l; do say "| setup $l"; done &&
		cp "$ST/sources.d/ours.sources" /etc/apt/sources.list.d/ &&
		apt-get update -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$ST/sources.d" \
			-o APT::Get::List-Cleanup=0 2>&1 | while IFS= read -r l; do say "| setup $l"; done &&
		sed -n 's/^Package: //p' "$IN/repo/dists/$suite/main/binary-$(dpkg --print-architecture)/Packages" |
		grep -v -e '-dbgsym$' -e '-archive-keyring$' | sort -u >"$ST/packages" && [ -s "$ST/packages" ]; then
		say "result setup-repository PASS the signed repository added: $(tr '\n' ' ' <"$ST/packages")"
	else
		say "result setup-repository FAIL adding the signed repository (keyring, sources, apt-get update) failed"
	fi
	if compgen -G "$IN/debs/old/*.deb" >/dev/null; then
		if apt-get install -y "$IN"/debs/old/*.deb 2>&1 | while IFS= read -r l; do say "| setup $l"; done; then
			say "result setup-old-version PASS the previous version's packages installed"
		else
			say "result setup-old-version FAIL apt-get install of the previous version's packages failed"
		fi
	fi
else
	say "| runner resumed after a reboot ($(uname -r))"
fi

mapfile -t plan <"$IN/plan"
i=$(cat "$ST/index")
while [ "$i" -lt "${#plan[@]}" ]; do
	read -r name restrictions <<<"${plan[$i]}"
	mark=$(cat "$ST/mark" 2>/dev/null || true)
	rm -f "$ST/mark"
	if [ -z "$mark" ]; then
		mapfile -t pkgs <"$ST/packages"
		if ! apt-get install -y --allow-downgrades "${pkgs[@]}" 2>&1 |
			while IFS= read -r l; do say "| $name $l"; done; then
			say "result $name FAIL installing its Depends (our packages) failed"
			i=$((i + 1))
			echo "$i" >"$ST/index"
			continue
		fi
	fi
	cat >/tmp/autopkgtest-reboot <<EOF
#!/bin/sh
echo "\$1" >$ST/mark
sync
systemctl reboot
sleep infinity
EOF
	chmod 755 /tmp/autopkgtest-reboot
	export AUTOPKGTEST_ARTIFACTS=$ST/artifacts/$name AUTOPKGTEST_TMP
	AUTOPKGTEST_TMP=$(mktemp -d /tmp/autopkgtest-tmp.XXXXXX)
	mkdir -p "$AUTOPKGTEST_ARTIFACTS"
	if [ -n "$mark" ]; then export AUTOPKGTEST_REBOOT_MARK=$mark; else unset AUTOPKGTEST_REBOOT_MARK; fi
	say "| $name running${mark:+ (AUTOPKGTEST_REBOOT_MARK=$mark)}"
	(cd "$IN/src" && bash "debian/tests/$name") 2>&1 | while IFS= read -r l; do say "| $name $l"; done
	rc=${PIPESTATUS[0]}
	case $rc,$restrictions in
	0,*) say "result $name PASS exit 0" ;;
	77,*skippable*) say "result $name SKIP exit 77" ;;
	*) say "result $name FAIL exit $rc" ;;
	esac
	rm -rf "$AUTOPKGTEST_TMP"
	i=$((i + 1))
	echo "$i" >"$ST/index"
done
say "taint $(cat /proc/sys/kernel/tainted)"
systemctl disable vm-autopkgtest.service
rm -f "$UNIT"
say "done"
sync
systemctl poweroff
