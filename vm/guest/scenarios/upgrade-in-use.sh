# shellcheck shell=bash
# Scenario upgrade-in-use (vm/guest/scenario.sh runs it): a process holds
# /dev/ntsync and objects, as wineserver does, while apt-get installs a newer
# version of our packages (NEXT_VERSION, built by the host from this tree) and
# later while apt-get removes ntsync-dkms.
#   install   an unreachable repository refused by apt-get update, naming it; this
#             tree's packages from the signed repository; ours loaded
#   upgrade   the holder running: apt-get install of NEXT_VERSION succeeds, the
#             holder keeps working, the old module stays loaded, ntsync-info
#             says it is older than the installed one and what to do; the
#             holder ends, modprobe -r && modprobe: the new module serves;
#             a holder again, then a reboot
#   booted    the new module loaded at boot, ntsync-info's live checks pass
#   remove    the holder running: apt-get remove ntsync-dkms does not hang,
#             the module stays loaded, nothing of it is left on disk,
#             ntsync-info says so; the holder ends: rmmod unloads it
# shellcheck disable=SC2034  # STEPS is read by scenario.sh
STEPS=(install upgrade booted remove)

step_install() {
	# A fault first: the repository unreachable (a folder that is not there). apt-get
	# update must fail and name it, and nothing gets installed from it.
	mkdir -p "$ST/gone.d"
	printf 'Types: deb\nURIs: file:/var/tmp/no-such-repository\nSuites: %s\nComponents: main\n' "$SUITE" \
		>"$ST/gone.d/gone.sources"
	local rc
	shown apt-get update -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$ST/gone.d" \
		-o APT::Get::List-Cleanup=0
	rc=$?
	check unreachable-update "apt-get update of an unreachable repository fails (exit $rc)" test "$rc" != 0
	check unreachable-message "and names it: $(grep -m1 "^E:" "$ST/last.out")" \
		grep -q "no-such-repository.* Release" "$ST/last.out"
	add_repo "$IN/repo" ours || finish
	mapfile -t PKGS < <(our_packages "$IN/repo")
	check apt-install "apt-get install ${PKGS[*]} ($VERSION) from the signed repository" \
		shown apt-get install -y "${PKGS[@]}"
	check loaded "ntsync $VERSION loaded after the installation (loaded: $(loaded_version))" \
		test "$(loaded_version)" = "$VERSION"
	# the holder, built against the installed ntsync-uapi-dev (its flags are words)
	# shellcheck disable=SC2046
	check holder-built "the holder program built against ntsync-uapi-dev" \
		shown gcc -O2 -Wall $(pkg-config --cflags ntsync-uapi) -o "$HOLDER" "$IN/holder.c"
}

step_upgrade() {
	start_holder
	check holder-start "a process holds /dev/ntsync, a semaphore and an event" holder_alive
	add_repo "$IN/next" next || finish
	mapfile -t PKGS < <(our_packages "$IN/next")
	local t0=$SECONDS rc
	shown timeout 900 apt-get install -y "${PKGS[@]}"
	rc=$?
	check upgrade-apt "apt-get install of $NEXT_VERSION while in use: exit $rc after $((SECONDS - t0)) s" test "$rc" = 0
	check upgrade-postinst "the postinst says the module is in use and the new one takes over at the next boot" \
		grep -q "is loaded and in use; ntsync $NEXT_VERSION takes over at the next boot" "$ST/last.out"
	check upgrade-version "dpkg: ntsync-dkms $NEXT_VERSION installed" \
		test "$(dpkg-query -W -f '${Version}' ntsync-dkms)" = "$NEXT_VERSION-1"
	shown dkms status
	check upgrade-dkms "DKMS built $NEXT_VERSION for $(uname -r)" \
		grep -q "ntsync/$NEXT_VERSION, $(uname -r), .*: installed" "$ST/last.out"
	check upgrade-old-loaded "the old module stays loaded while in use (loaded: $(loaded_version))" \
		test "$(loaded_version)" = "$VERSION"
	check upgrade-holder "the holder goes on working through the upgrade" holder_alive
	check upgrade-info "ntsync-info: the loaded module is older than the installed one" \
		info_says "installed: ntsync-dkms $NEXT_VERSION; the loaded module ($VERSION) is older"
	check upgrade-hint "ntsync-info says what to do (modprobe -r ntsync && modprobe ntsync, or reboot)" \
		grep -q '^hint: .*modprobe -r ntsync && modprobe ntsync.*reboot' "$ST/last.out"
	check upgrade-working "ntsync-info: WORKING with the old module" grep -q '^verdict: WORKING' "$ST/last.out"
	check holder-stop "the holder ends cleanly, no error in any round" stop_holder
	check upgrade-swap "modprobe -r ntsync && modprobe ntsync after the holder ended" \
		shown sh -c 'modprobe -r ntsync && modprobe ntsync'
	check upgrade-new-loaded "the new module serves (loaded: $(loaded_version))" \
		test "$(loaded_version)" = "$NEXT_VERSION"
	check upgrade-info-same "ntsync-info: the version loaded is the one installed" \
		info_says "installed: ntsync-dkms $NEXT_VERSION, the version loaded"
	start_holder
	check holder-again "a holder again before the reboot" holder_alive
	reboot_into "$(uname -r)"
}

step_booted() {
	check booted-loaded "ntsync $NEXT_VERSION loaded at boot (loaded: $(loaded_version))" \
		test "$(loaded_version)" = "$NEXT_VERSION"
	check booted-info "ntsync-info after the reboot: WORKING, every live check passed" \
		sh -c "ntsync-info >'$ST/last.out' 2>&1; grep -Eq '^verdict: WORKING: .* ([0-9]+) of \\1 live checks passed' '$ST/last.out'"
	check booted-modules-load "systemd-modules-load.service ran without a failure" \
		systemctl is-active --quiet systemd-modules-load.service
}

step_remove() {
	start_holder
	check holder-start2 "a process holds /dev/ntsync again" holder_alive
	local t0=$SECONDS rc
	shown timeout 600 apt-get remove -y ntsync-dkms
	rc=$?
	check remove-apt "apt-get remove ntsync-dkms while in use: exit $rc after $((SECONDS - t0)) s" test "$rc" = 0
	check remove-prerm "the prerm says the module stays loaded and how to unload it (rmmod ntsync)" \
		grep -q 'then: rmmod ntsync' "$ST/last.out"
	check remove-still-loaded "the module stays loaded while in use (loaded: $(loaded_version))" \
		test "$(loaded_version)" = "$NEXT_VERSION"
	check remove-holder "the holder goes on working through the removal" holder_alive
	shown dkms status
	check remove-dkms "dkms status lists no ntsync" sh -c "! grep -q ntsync '$ST/last.out'"
	local left
	left=$(find /lib/modules -path '*/updates/*' -name 'ntsync*' 2>/dev/null
		find /usr/src /var/lib/dkms -maxdepth 1 -name 'ntsync*' 2>/dev/null)
	check remove-files "no module, source or DKMS tree of ntsync left${left:+: $left}" test -z "$left"
	shown modprobe -r ntsync
	rc=$?
	# kmod's modprobe -r finds a module by the name in modules.dep: once the
	# file is gone it cannot, whatever is loaded. This records what it says.
	say "| modprobe -r ntsync after the removal: exit $rc: $(head -n 1 "$ST/last.out")"
	check remove-info "ntsync-info: the package is removed and its module still loaded" \
		info_says "the loaded module $NEXT_VERSION stays until it is unloaded"
	check remove-hint "ntsync-info says to rmmod ntsync once nothing uses it" \
		grep -q '^hint: .*rmmod ntsync' "$ST/last.out"
	check holder-stop2 "the holder ends cleanly" stop_holder
	check remove-rmmod "rmmod ntsync once nothing uses it" shown rmmod ntsync
	check remove-unloaded "no ntsync module loaded" test ! -e /sys/module/ntsync
	mapfile -t PKGS < <(our_packages "$IN/next")
	check purge "apt-get purge of all our packages" shown apt-get purge -y "${PKGS[@]}"
}
