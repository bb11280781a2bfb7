# shellcheck shell=bash
# Scenario upgrade-from-release (vm/guest/scenario.sh runs it): a machine on the
# last release of ours (RELEASE_VERSION, built by the host from its git tag
# RELEASE_TAG, in a signed repository of its own: release/) upgraded by apt to
# this tree's VERSION (repo/: the same repository once it has published the new
# version) while a process holds /dev/ntsync.
#   release   the release's packages from its repository; its module loaded,
#             DKMS's build of it for the running kernel; the holder built
#             against the release's own ABI header (the release has no
#             ntsync-uapi-dev: /usr/src/ntsync-RELEASE_VERSION/include/uapi)
#   upgrade   the holder running; the repository now has VERSION; apt-get
#             upgrade --with-new-pkgs (what `apt upgrade` does): no error from
#             apt, dpkg or DKMS, every package of the release now at VERSION;
#             DKMS removed the release's build and built VERSION; the holder
#             goes on with the release's module, which stays loaded;
#             ntsync-info says the loaded module is older than the installed
#             one; the holder ends cleanly; reboot
#   booted    VERSION loaded at boot, ntsync-info WORKING and naming VERSION
#             as loaded and installed, the suite passes, nothing of the
#             release left in DKMS's tree, /usr/src or /lib/modules, dpkg
#             --audit and apt-get check clean
# shellcheck disable=SC2034  # STEPS is read by scenario.sh
STEPS=(release upgrade booted)
: "${RELEASE_VERSION:?}" "${RELEASE_TAG:?}"

# versions_of PKG...: "PKG VERSION" for each installed PKG
versions_of() {
	dpkg-query -W -f '${Package} ${Version}\n' "$@" 2>/dev/null
}

step_release() {
	add_repo "$IN/release" ours || finish
	mapfile -t PKGS < <(our_packages "$IN/release")
	printf '%s\n' "${PKGS[@]}" >"$ST/release-packages"
	check release-install "apt-get install ${PKGS[*]} ($RELEASE_VERSION, built from tag $RELEASE_TAG) from the signed repository" \
		shown apt-get install -y "${PKGS[@]}"
	check release-loaded "the release's module (ntsync $RELEASE_VERSION) loaded on $(uname -r) (loaded: $(loaded_version))" \
		test "$(loaded_version)" = "$RELEASE_VERSION"
	shown dkms status
	check release-dkms "DKMS built ntsync $RELEASE_VERSION for $(uname -r)" \
		grep -q "ntsync/$RELEASE_VERSION, $(uname -r), .*: installed" "$ST/last.out"
	check release-info "the release's ntsync-info: WORKING with ntsync $RELEASE_VERSION" \
		sh -c "ntsync-info >'$ST/last.out' 2>&1; grep -Fq 'ntsync $RELEASE_VERSION' '$ST/last.out' && grep -q '^verdict: WORKING' '$ST/last.out'"
	check holder-built "the holder built against the release's ABI header (/usr/src/ntsync-$RELEASE_VERSION/include/uapi)" \
		shown gcc -O2 -Wall -I"/usr/src/ntsync-$RELEASE_VERSION/include/uapi" -o "$HOLDER" "$IN/holder.c"
}

step_upgrade() {
	local t0 rc p v bad_pkgs=() left
	start_holder
	check holder-start "a process holds the release's /dev/ntsync, a semaphore and an event" holder_alive
	# The repository publishes the new version: the same sources entry, its folder now repo/.
	add_repo "$IN/repo" ours || finish
	# What plain apt-get upgrade (no new packages) would keep back, for the record: a
	# package of ours that gained a dependency on a new package (1.1.0's ntsync-uapi-dev
	# is only recommended by libntsync-dev, and neither form installs it).
	local kept
	apt-get "${APT_OURS[@]}" -s upgrade >"$ST/simulated.out" 2>&1
	kept=$(sed -n '/kept back:/,/^[^ ]/p' "$ST/simulated.out" | grep '^ ' | xargs echo)
	say "| apt-get upgrade without --with-new-pkgs would keep back: ${kept:-nothing}"
	t0=$SECONDS
	shown timeout 1200 apt-get "${APT_OURS[@]}" upgrade -y --with-new-pkgs
	rc=$?
	check upgrade-apt "apt-get upgrade --with-new-pkgs ($RELEASE_VERSION -> $VERSION) while in use: exit $rc after $((SECONDS - t0)) s" \
		test "$rc" = 0
	check upgrade-no-error "no error from apt, dpkg or DKMS in its output" no_apt_errors
	check upgrade-postinst "the postinst says $RELEASE_VERSION is in use and $VERSION takes over at the next boot" \
		grep -q "ntsync $RELEASE_VERSION is loaded and in use; ntsync $VERSION takes over at the next boot" "$ST/last.out"
	mapfile -t PKGS <"$ST/release-packages"
	while read -r p v; do
		case $v in "$VERSION"-*) ;; *) bad_pkgs+=("$p=$v") ;; esac
	done < <(versions_of "${PKGS[@]}")
	check upgrade-versions "every package of the release now at $VERSION${bad_pkgs[*]:+; not: ${bad_pkgs[*]}}" \
		test "${#bad_pkgs[@]}" = 0
	shown dkms status
	check upgrade-dkms-new "DKMS built ntsync $VERSION for $(uname -r)" \
		grep -q "ntsync/$VERSION, $(uname -r), .*: installed" "$ST/last.out"
	check upgrade-dkms-old "and removed the release's build: no ntsync/$RELEASE_VERSION in dkms status" \
		sh -c "! grep -q 'ntsync/$RELEASE_VERSION' '$ST/last.out'"
	left=$(find "/var/lib/dkms/ntsync/$RELEASE_VERSION" "/usr/src/ntsync-$RELEASE_VERSION" -maxdepth 0 2>/dev/null)
	check upgrade-old-files "no source or DKMS tree of $RELEASE_VERSION left${left:+: $left}" test -z "$left"
	check upgrade-module-file "the module on disk for $(uname -r) is $VERSION (modinfo: $(modinfo -F version ntsync 2>/dev/null))" \
		test "$(modinfo -F version ntsync 2>/dev/null)" = "$VERSION"
	check upgrade-old-loaded "the release's module stays loaded while in use (loaded: $(loaded_version))" \
		test "$(loaded_version)" = "$RELEASE_VERSION"
	check upgrade-holder "the holder goes on working through the upgrade" holder_alive
	check upgrade-info "ntsync-info ($VERSION): the loaded module ($RELEASE_VERSION) is older than the installed one" \
		info_says "installed: ntsync-dkms $VERSION; the loaded module ($RELEASE_VERSION) is older"
	check upgrade-working "ntsync-info: WORKING with the release's module" grep -q '^verdict: WORKING' "$ST/last.out"
	check holder-stop "the holder ends cleanly, no error in any round" stop_holder
	uname -r >"$ST/kernel"
	reboot_into "$(uname -r)"
}

step_booted() {
	local left
	check_booted_ours "$(cat "$ST/kernel")"
	check booted-info "ntsync-info: WORKING, ntsync $VERSION loaded and installed" \
		sh -c "ntsync-info >'$ST/last.out' 2>&1; grep -Fq '(driver: ntsync $VERSION, ' '$ST/last.out' &&
			grep -Fq 'installed: ntsync-dkms $VERSION, the version loaded' '$ST/last.out' &&
			grep -q '^verdict: WORKING' '$ST/last.out'"
	check_suite "$(uname -r)"
	left=$(find /var/lib/dkms /usr/src /lib/modules -path "*ntsync*$RELEASE_VERSION*" 2>/dev/null | head -n 5)
	check nothing-left "no file of the release's build ($RELEASE_VERSION) in DKMS's tree, /usr/src or /lib/modules${left:+: $left}" \
		test -z "$left"
	shown dpkg --audit
	check dpkg-audit "dpkg --audit: nothing half-installed" test ! -s "$ST/last.out"
	check apt-check "apt-get check: no broken dependencies" shown apt-get check
}
