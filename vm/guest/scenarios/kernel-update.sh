# shellcheck shell=bash
# Scenario kernel-update (vm/guest/scenario.sh runs it): the monthly kernel
# update. The machine starts on the previous point release of the suite's
# kernel (OLD_KERNEL_VERSION of the meta-packages KERNEL_META, from the
# archive; the image's newer kernel is purged first), with our packages; then
# apt upgrade brings the new kernel and its headers.
#   prepare   the meta-packages at OLD_KERNEL_VERSION (their kernel and
#             headers); reboot into that kernel
#   old       the image's newer kernel purged: a machine on the previous point
#             release; our packages from the signed repository, ours loaded
#   no_headers  a fault first: the headers' meta-package held, apt upgrade
#             brings the new kernel without its headers: DKMS builds nothing
#             for it and names the package to install, the kernel package is
#             configured (dpkg --audit), ours goes on working on the old kernel
#   build_fails another fault: the hold lifted and ours made not to compile (an
#             #error in the installed source); apt upgrade brings the headers
#             and the build fails: our hook (/etc/kernel/header_postinst.d/
#             00ntsync-dkms) says so and how to retry, apt exits 0, the
#             kernel's packages are configured (dpkg --audit), ours goes on
#             working on the old kernel; the source repaired, the command the
#             user was told (dkms install ntsync/VERSION -k NEW) builds ours
#   upgrade   apt upgrade: nothing broken is left, DKMS has ours for the new
#             kernel, no error; reboot into it
#   new       ours loaded at boot, the conformance suite (ntsync-run-tests)
#             passes; the old kernel purged: its DKMS build goes with it,
#             nothing of it left behind
# shellcheck disable=SC2034  # STEPS is read by scenario.sh
STEPS=(prepare old no_headers build_fails upgrade new)
: "${KERNEL_META:?}" "${OLD_KERNEL_VERSION:?}"

# kernel_pkgs RELEASE: the installed packages of kernel RELEASE (image, headers)
kernel_pkgs() {
	dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' "linux-image-$1" "linux-headers-$1" 2>/dev/null |
		awk '$1 == "ii" { print $2 }'
}

step_prepare() {
	uname -r >"$ST/image-kernel"
	check apt-update "apt-get update (the suite's sources)" shown apt-get update
	# shellcheck disable=SC2086  # a list of package names
	shown apt-cache policy $KERNEL_META
	local pins=() p
	for p in $KERNEL_META; do pins+=("$p=$OLD_KERNEL_VERSION"); done
	check old-install "apt-get install ${pins[*]} (the previous point release)" \
		shown apt-get install -y --allow-downgrades "${pins[@]}"
	local old
	old=$(kernels | grep -vx "$(cat "$ST/image-kernel")" | head -n 1)
	echo "$old" >"$ST/old-kernel"
	check old-kernel "the previous point release's kernel is installed: ${old:-none}" test -n "$old"
	[ -n "$old" ] || finish
	reboot_into "$old"
}

step_old() {
	local old image
	old=$(cat "$ST/old-kernel")
	image=$(cat "$ST/image-kernel")
	check old-booted "booted $old" test "$(uname -r)" = "$old"
	mapfile -t gone < <(kernel_pkgs "$image")
	check purge-newer "apt-get purge ${gone[*]} (the image's newer kernel): a machine on $old" \
		shown apt-get purge -y "${gone[@]}"
	check only-old "$old is the only kernel" test "$(kernels)" = "$old"
	add_repo "$IN/repo" ours || finish
	mapfile -t PKGS < <(our_packages "$IN/repo")
	check apt-install "apt-get install ${PKGS[*]} ($VERSION) from the signed repository" \
		shown apt-get install -y "${PKGS[@]}"
	check loaded "ours (ntsync $VERSION) loaded on $old (loaded: $(loaded_version))" \
		test "$(loaded_version)" = "$VERSION"
	shown apt list --upgradable
}

step_no_headers() {
	local t0=$SECONDS rc new old headers
	old=$(cat "$ST/old-kernel")
	headers=$(echo "$KERNEL_META" | tr ' ' '\n' | grep headers)
	check hold-headers "apt-mark hold $headers" shown apt-mark hold "$headers"
	shown apt upgrade -y
	rc=$?
	check noh-apt "apt upgrade without the headers: exit $rc after $((SECONDS - t0)) s" test "$rc" = 0
	new=$(kernels | head -n 1)
	echo "$new" >"$ST/new-kernel"
	check noh-new-kernel "apt upgrade brought a newer kernel: $new" test "$new" != "$old"
	check noh-no-headers "without its headers (no /lib/modules/$new/build/Makefile)" \
		test ! -e "/lib/modules/$new/build/Makefile"
	check noh-message "the user is told which package to install: $(grep -m1 -F "apt-get install linux-headers-$new" "$ST/last.out")" \
		grep -Fq "ntsync-dkms: Linux $new: ntsync not built, its headers are missing: apt-get install linux-headers-$new" "$ST/last.out"
	grep -Fi -e headers -e dkms "$ST/last.out" | while IFS= read -r l; do say "| (seen) $l"; done
	check noh-nothing-built "nothing built for $new" \
		sh -c "! ls /lib/modules/$new/updates/dkms/ntsync.ko* 2>/dev/null"
	shown dpkg --audit
	check noh-dpkg-audit "dpkg --audit: the kernel package is configured, nothing half-installed" \
		test ! -s "$ST/last.out"
	check noh-old-works "ours goes on working on $old (loaded: $(loaded_version))" \
		sh -c "test '$(loaded_version)' = '$VERSION' && ntsync-info | grep -q '^verdict: WORKING'"
}

step_build_fails() {
	local t0=$SECONDS rc new old headers src
	old=$(cat "$ST/old-kernel")
	new=$(cat "$ST/new-kernel")
	headers=$(echo "$KERNEL_META" | tr ' ' '\n' | grep headers)
	check unhold-headers "apt-mark unhold $headers" shown apt-mark unhold "$headers"
	src=/usr/src/ntsync-$VERSION/module/ntsync.c
	cp "$src" "$ST/ntsync.c.orig"
	echo '#error "made not to compile by the kernel-update scenario"' >>"$src"
	shown apt upgrade -y
	rc=$?
	cp "$ST/last.out" "$ST/build-fails.out"
	say "| (apt upgrade with a failing build: exit $rc after $((SECONDS - t0)) s)"
	grep -E -e 'Error!|[Ee]rror processing|run-parts|dkms|ntsync|make.log|E: ' "$ST/build-fails.out" |
		while IFS= read -r l; do say "| (seen) $l"; done
	check fail-headers "the headers of $new came" test -e "/lib/modules/$new/build/Makefile"
	check fail-tried "DKMS tried to build ours for $new and said it failed" \
		grep -Eq "Bad return status for module build on kernel: $new|[Bb]uild.*failed|failed for module.*ntsync" \
		"$ST/build-fails.out"
	check fail-nothing-built "nothing built for $new" \
		sh -c "! ls /lib/modules/$new/updates/dkms/ntsync.ko* 2>/dev/null"
	check fail-make-log "the build's log names the cause: $(grep -m1 -o 'error: #error.*' \
		"/var/lib/dkms/ntsync/$VERSION/build/make.log" 2>/dev/null)" \
		grep -q 'made not to compile' "/var/lib/dkms/ntsync/$VERSION/build/make.log"
	check fail-said "ours said the build failed, that $new installs without it, and how to retry" \
		sh -c "grep -Fq 'ntsync-dkms: Linux $new: building ntsync $VERSION failed' '$ST/build-fails.out' &&
			grep -Fq 'dkms install ntsync/$VERSION -k $new' '$ST/build-fails.out'"
	check fail-apt-exit "apt upgrade finished with exit 0 (a failed module build is no failed upgrade): exit $rc" \
		test "$rc" = 0
	shown dpkg --audit
	check fail-dpkg-audit "dpkg --audit: the kernel's packages configured despite the failed build" \
		test ! -s "$ST/last.out"
	check fail-old-works "ours goes on working on $old (loaded: $(loaded_version))" \
		sh -c "test '$(loaded_version)' = '$VERSION' && ntsync-info | grep -q '^verdict: WORKING'"
	# the source repaired (a fixed package would bring it); then what the user was told
	cp "$ST/ntsync.c.orig" "$src"
	if [ -n "$(dpkg --audit 2>/dev/null)" ]; then
		shown dpkg --configure -a
		rc=$?
		check fail-fixed-configure "the source repaired: dpkg --configure -a: exit $rc" test "$rc" = 0
	fi
	shown dkms install "ntsync/$VERSION" -k "$new"
	rc=$?
	check fail-fixed-install "the source repaired: dkms install ntsync/$VERSION -k $new: exit $rc" test "$rc" = 0
	check fail-fixed-module "the module file: /lib/modules/$new/updates/dkms/ntsync.ko*" \
		sh -c "ls /lib/modules/$new/updates/dkms/ntsync.ko* >/dev/null"
	shown dpkg --audit
	check fail-fixed-audit "dpkg --audit: nothing half-installed after the fix" test ! -s "$ST/last.out"
}

step_upgrade() {
	local t0=$SECONDS rc new old
	old=$(cat "$ST/old-kernel")
	new=$(cat "$ST/new-kernel")
	shown apt upgrade -y
	rc=$?
	check upgrade-apt "apt upgrade: exit $rc after $((SECONDS - t0)) s" test "$rc" = 0
	check upgrade-no-error "no error from apt, dpkg or DKMS in its output" no_apt_errors
	check upgrade-new-kernel "the newest kernel is still $new" test "$(kernels | head -n 1)" = "$new"
	check upgrade-headers "and its headers: /lib/modules/$new/build" test -e "/lib/modules/$new/build/Makefile"
	shown dkms status
	check upgrade-dkms "DKMS built ntsync $VERSION for $new" \
		grep -q "ntsync/$VERSION, $new, .*: installed" "$ST/last.out"
	check upgrade-dkms-old "and it is still installed for $old" \
		grep -q "ntsync/$VERSION, $old, .*: installed" "$ST/last.out"
	check upgrade-module "the module file: /lib/modules/$new/updates/dkms/ntsync.ko*" \
		sh -c "ls /lib/modules/$new/updates/dkms/ntsync.ko* >/dev/null"
	reboot_into "$new"
}

step_new() {
	local new old rc
	new=$(cat "$ST/new-kernel")
	old=$(cat "$ST/old-kernel")
	check_booted_ours "$new"
	check_suite "$new"
	mapfile -t gone < <(kernel_pkgs "$old")
	shown apt-get purge -y "${gone[@]}"
	rc=$?
	check purge-old "apt-get purge ${gone[*]}: exit $rc" test "$rc" = 0
	check purge-no-error "no error from apt, dpkg or DKMS in its output" no_apt_errors
	shown dkms status
	check purge-dkms "dkms status: ours for $new only" \
		sh -c "grep -q 'ntsync/$VERSION, $new, .*: installed' '$ST/last.out' && ! grep -q '$old' '$ST/last.out'"
	local left
	left=$(find /lib/modules/"$old" /var/lib/dkms/ntsync -path "*$old*" 2>/dev/null | head -n 5)
	check purge-nothing-left "nothing of $old left in /lib/modules or DKMS's tree${left:+: $left}" test -z "$left"
	shown dpkg --audit
	check dpkg-audit "dpkg --audit: nothing half-installed" test ! -s "$ST/last.out"
}
