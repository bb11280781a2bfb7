# shellcheck shell=bash
# Scenario backports-kernel (vm/guest/scenario.sh runs it): trixie on its 6.12
# kernel with our module; the user adds trixie-backports and installs its
# kernel (KERNEL_SOURCES, KERNEL_PKGS: the suite table's trixie-backports row,
# linux-base from backports too), which has mainline's driver in tree.
#   install   this tree's packages from the signed repository; ours loaded on 6.12
#   backports apt-get install of the backports kernel: no error from apt or DKMS,
#             DKMS builds nothing for it (dkms.conf's kernel range), the
#             postinst says the kernel has its own driver; reboot into it
#   on-new    the in-tree driver serves /dev/ntsync, ntsync-info names it and
#             its live checks pass; reboot into 6.12 again
#   on-old    ours is back, loaded at boot; nothing broken in dpkg or DKMS
# shellcheck disable=SC2034  # STEPS is read by scenario.sh
STEPS=(install backports on_new on_old)
: "${KERNEL_SOURCES:?}" "${KERNEL_PKGS:?}"

# working_with DRIVER: ntsync-info's verdict is WORKING with DRIVER (the start of its text)
working_with() {
	info_says "(driver: $1" && grep -q '^verdict: WORKING:' "$ST/last.out"
}

step_install() {
	uname -r >"$ST/old-kernel"
	add_repo "$IN/repo" ours || finish
	mapfile -t PKGS < <(our_packages "$IN/repo")
	check apt-install "apt-get install ${PKGS[*]} ($VERSION) from the signed repository" \
		shown apt-get install -y "${PKGS[@]}"
	check loaded "ours (ntsync $VERSION) loaded on $(uname -r) (loaded: $(loaded_version))" \
		test "$(loaded_version)" = "$VERSION"
}

step_backports() {
	printf '%s\n' "$KERNEL_SOURCES" >/etc/apt/sources.list.d/backports.list
	check apt-update "apt-get update with $KERNEL_SOURCES" shown apt-get update
	local t0=$SECONDS rc new
	# shellcheck disable=SC2086  # a list of package names
	shown apt-get install -y $KERNEL_PKGS
	rc=$?
	check kernel-apt "apt-get install $KERNEL_PKGS: exit $rc after $((SECONDS - t0)) s" test "$rc" = 0
	check kernel-no-error "no error from apt, dpkg or DKMS in its output" no_apt_errors
	new=$(kernels | head -n 1)
	echo "$new" >"$ST/new-kernel"
	check kernel-new "a newer kernel is installed: $new" test "$new" != "$(cat "$ST/old-kernel")"
	check kernel-in-tree "$new ships mainline's driver (kernel/drivers/misc/ntsync.ko*)" \
		sh -c "find /lib/modules/$new/kernel -name 'ntsync.ko*' | grep -q ."
	local built
	built=$(find "/lib/modules/$new/updates" -name 'ntsync.ko*' 2>/dev/null)
	check kernel-nothing-built "DKMS built nothing for $new${built:+: $built}" test -z "$built"
	shown dkms status
	check kernel-dkms-status "dkms status: ours installed for $(cat "$ST/old-kernel"), nothing for $new" \
		sh -c "grep -q 'ntsync/$VERSION, $(cat "$ST/old-kernel"), .*: installed' '$ST/last.out' &&
			! grep -q 'ntsync/.*, $new' '$ST/last.out'"
	shown dpkg-reconfigure ntsync-dkms
	check kernel-postinst "our postinst says $new has its own driver" \
		grep -q "Linux $new: has its own ntsync driver" "$ST/last.out"
	reboot_into "$new"
}

step_on_new() {
	local new
	new=$(cat "$ST/new-kernel")
	check new-booted "booted $new" test "$(uname -r)" = "$new"
	check new-loaded "an ntsync module is loaded at boot" test -e /sys/module/ntsync/initstate
	check new-not-ours "it is not ours (no version, no out-of-tree taint): $(cat /sys/module/ntsync/taint 2>/dev/null)" \
		sh -c '! test -e /sys/module/ntsync/version && ! grep -q O /sys/module/ntsync/taint'
	check new-info "ntsync-info names the in-tree driver" info_says "driver:  the kernel's in-tree ntsync module"
	check new-working "ntsync-info: WORKING, its live checks passed" grep -q '^verdict: WORKING' "$ST/last.out"
	check new-modules-load "systemd-modules-load.service ran without a failure" \
		systemctl is-active --quiet systemd-modules-load.service
	reboot_into "$(cat "$ST/old-kernel")"
}

step_on_old() {
	check old-booted "booted $(cat "$ST/old-kernel") again" test "$(uname -r)" = "$(cat "$ST/old-kernel")"
	check old-ours "ours is back (loaded: $(loaded_version))" test "$(loaded_version)" = "$VERSION"
	check old-info "ntsync-info: our module, WORKING" \
		working_with "ntsync $VERSION, this project's out-of-tree module"
	check old-modules-load "systemd-modules-load.service ran without a failure" \
		systemctl is-active --quiet systemd-modules-load.service
	shown dpkg --audit
	check dpkg-audit "dpkg --audit: nothing half-installed" test ! -s "$ST/last.out"
	check apt-check "apt-get check: no broken dependencies" shown apt-get check
}
