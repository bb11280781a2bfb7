# shellcheck shell=bash
# Scenario release-upgrade (vm/guest/scenario.sh runs it): bookworm on its 6.1
# kernel with our packages and a process holding /dev/ntsync, moved to trixie
# the way Debian's release notes say (every bookworm in the sources made
# trixie, ours too; the minimal upgrade, then apt full-upgrade);
# TO_SUITE is the release it moves to. Our repository (repo/) has the same
# packages for both releases, as a user's repository would.
#   install   bookworm: this tree's packages from the signed repository; ours
#             loaded, built by bookworm's gcc-12; a reboot (the upgrade then
#             runs in the scenario's own unit, not under cloud-init, which
#             the upgrade replaces)
#   upgrade   the holder running; the sources changed to trixie; apt-get
#             upgrade (no new packages) and full-upgrade: no error from apt,
#             dpkg or DKMS; the 6.12 kernel and headers came and DKMS built
#             ours for it with gcc-14; the holder went on working; reboot
#             into 6.12
#   trixie    trixie booted on 6.12, ours loaded at boot, ntsync-info WORKING,
#             the suite passes; apt autoremove --purge (and, for what apt
#             keeps as the fallback kernel, apt-get purge by name) takes
#             bookworm's 6.1 kernel and with it its DKMS build: no file of
#             the bookworm build left, dpkg --audit and apt-get check clean
# shellcheck disable=SC2034  # STEPS is read by scenario.sh
STEPS=(install upgrade trixie)
: "${TO_SUITE:?}"

APT_OPTS=(-y -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)

# os_release FIELD: FIELD of /etc/os-release (not sourced: it sets VERSION, a name of ours)
os_release() {
	sed -n "s/^$1=//p" /etc/os-release | tr -d '"'
}
# module_gcc RELEASE: the "GCC: (...) N.N.N" of our module built for kernel RELEASE
module_gcc() {
	local f
	f=$(find "/lib/modules/$1/updates" -name 'ntsync.ko*' 2>/dev/null | head -n 1)
	[ -n "$f" ] || return 0
	case $f in
	*.xz) xz -dc "$f" ;;
	*.zst) zstd -dcq "$f" ;;
	*.gz) gzip -dc "$f" ;;
	*) cat "$f" ;;
	esac | grep -a -o 'GCC: ([^)]*) [0-9.]*' | sort -u | head -n 1
}

step_install() {
	uname -r >"$ST/old-kernel"
	check on-bookworm "the machine runs $(os_release PRETTY_NAME) on $(uname -r)" \
		test "$(os_release VERSION_CODENAME)" = "$SUITE"
	add_repo "$IN/repo" ours || finish
	mapfile -t PKGS < <(our_packages "$IN/repo")
	check apt-install "apt-get install ${PKGS[*]} ($VERSION) from the signed repository" \
		shown apt-get install -y "${PKGS[@]}"
	check loaded "ours (ntsync $VERSION) loaded on $(uname -r) (loaded: $(loaded_version))" \
		test "$(loaded_version)" = "$VERSION"
	local gcc
	gcc=$(module_gcc "$(uname -r)")
	check old-gcc "ours for $(uname -r) built by bookworm's gcc-12: ${gcc:-no GCC note found}" \
		sh -c "echo '$gcc' | grep -q 'GCC: (Debian 12\.'"
	# shellcheck disable=SC2046  # flags are words
	check holder-built "the holder program built against ntsync-uapi-dev" \
		shown gcc -O2 -Wall $(pkg-config --cflags ntsync-uapi) -o "$HOLDER" "$IN/holder.c"
	reboot_into "$(uname -r)"
}

step_upgrade() {
	local old t0 rc new gcc
	old=$(cat "$ST/old-kernel")
	start_holder
	check holder-start "a process holds /dev/ntsync, a semaphore and an event" holder_alive
	# The release notes' way: every bookworm in the sources becomes trixie.
	sed -i "s/\b$SUITE\b/$TO_SUITE/g" /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
		/etc/apt/sources.list.d/*.sources 2>/dev/null
	shown sh -c 'cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v "^#"'
	check sources "the sources say $TO_SUITE, ours too" \
		sh -c "! grep -rqw '$SUITE' /etc/apt/sources.list /etc/apt/sources.list.d/ && grep -qw '$TO_SUITE' /etc/apt/sources.list.d/ours.sources"
	check apt-update "apt-get update with the $TO_SUITE sources" shown apt-get update
	t0=$SECONDS
	# apt-get upgrade installs no new package: the notes' apt upgrade --without-new-pkgs
	shown apt-get upgrade "${APT_OPTS[@]}"
	rc=$?
	check minimal-upgrade "apt-get upgrade (no new packages): exit $rc after $((SECONDS - t0)) s" test "$rc" = 0
	t0=$SECONDS
	shown apt-get full-upgrade "${APT_OPTS[@]}"
	rc=$?
	cp "$ST/last.out" "$ST/full-upgrade.out"
	check full-upgrade "apt-get full-upgrade: exit $rc after $((SECONDS - t0)) s" test "$rc" = 0
	check full-upgrade-no-error "no error from apt, dpkg or DKMS in its output" no_apt_errors
	grep -E '^(ntsync-dkms|dkms|Autoinstall|Building|Signing|Installing /lib/modules|Running the post_install)' \
		"$ST/full-upgrade.out" | while IFS= read -r l; do say "| (seen) $l"; done
	new=$(kernels | head -n 1)
	echo "$new" >"$ST/new-kernel"
	check on-trixie "the system is $(os_release PRETTY_NAME)" test "$(os_release VERSION_CODENAME)" = "$TO_SUITE"
	check new-kernel "$TO_SUITE's kernel is installed: $new" \
		sh -c "test '$new' != '$old' && echo '$new' | grep -q '^6\.12\.'"
	check new-headers "and its headers: /lib/modules/$new/build" test -e "/lib/modules/$new/build/Makefile"
	shown dkms status
	check dkms-new "DKMS built ntsync $VERSION for $new" \
		grep -q "ntsync/$VERSION, $new, .*: installed" "$ST/last.out"
	gcc=$(module_gcc "$new")
	check new-gcc "ours for $new built by $TO_SUITE's gcc-14: ${gcc:-no GCC note found}" \
		sh -c "echo '$gcc' | grep -q 'GCC: (Debian 14\.'"
	check holder-through "the holder went on working through the release upgrade" holder_alive
	check old-still-loaded "the module loaded on $old stays until the reboot (loaded: $(loaded_version))" \
		test "$(loaded_version)" = "$VERSION"
	shown dpkg --audit
	check upgrade-dpkg-audit "dpkg --audit: nothing half-installed" test ! -s "$ST/last.out"
	reboot_into "$new"
}

step_trixie() {
	local new old rc left
	new=$(cat "$ST/new-kernel")
	old=$(cat "$ST/old-kernel")
	check_booted_ours "$new"
	shown ntsync-info
	check new-info "ntsync-info: WORKING with ours" \
		sh -c "grep -Fq '(driver: ntsync $VERSION, ' '$ST/last.out' && grep -q '^verdict: WORKING' '$ST/last.out'"
	check_suite "$new"
	# The release notes' last step: what bookworm left, bookworm's kernel among it.
	shown apt-get autoremove --purge -y
	rc=$?
	check autoremove "apt-get autoremove --purge: exit $rc" test "$rc" = 0
	check autoremove-no-error "no error from apt, dpkg or DKMS in its output" no_apt_errors
	# apt keeps the newest two kernels from autoremove (apt-auto-removal): bookworm's
	# may be the second; then the user purges it by name, as README.Debian says
	local gone
	mapfile -t gone < <(dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' "linux-image-$old" \
		"linux-headers-$old" 2>/dev/null | awk '$1 ~ /^[ir]/ { print $2 }')
	if [ "${#gone[@]}" -gt 0 ]; then
		say "| autoremove kept ${gone[*]}: purged by name"
		shown apt-get purge -y "${gone[@]}"
		rc=$?
		check purge-old "apt-get purge ${gone[*]}: exit $rc" test "$rc" = 0
		check purge-no-error "no error from apt, dpkg or DKMS in its output" no_apt_errors
	fi
	check old-kernel-gone "bookworm's kernel $old is gone" test ! -e "/boot/vmlinuz-$old"
	shown dkms status
	check dkms-only-new "dkms status: ours for $new only" \
		sh -c "grep -q 'ntsync/$VERSION, $new, .*: installed' '$ST/last.out' && ! grep -q '$old' '$ST/last.out'"
	left=$(find /lib/modules /var/lib/dkms -path "*$old*" 2>/dev/null | head -n 5)
	check nothing-left "no file of the bookworm build ($old) in /lib/modules or DKMS's tree${left:+: $left}" \
		test -z "$left"
	shown dpkg --audit
	check dpkg-audit "dpkg --audit: nothing half-installed" test ! -s "$ST/last.out"
	check apt-check "apt-get check: no broken dependencies" shown apt-get check
}
