#!/bin/sh
# Host tests of ntsync-dkms's postinst: what it says after DKMS built the
# module, for each way the load into the running kernel can go, above all
# when Secure Boot refuses the module because DKMS's key is not enrolled.
#
#   debian/tests-host/check-postinst.sh [SOURCE-TREE]   (run by meson test)
#
# The script is made as the package build makes it (#NTSYNC_VERSION# from
# VERSION as dh_installdeb -D does, #NTSYNC_KERNEL_RE# by
# debian/subst-kernel-range), then run with "configure" against stub dkms,
# modprobe, rmmod, mokutil and uname (the only commands on PATH besides the
# real coreutils, find and grep it reads files with) and a fake root of
# /lib/modules, /sys and /var/lib/dkms (NTSYNC_POSTINST_SYSROOT).  Nothing
# here loads a module or reads the host's EFI variables.
set -eu

top=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
[ -f "$top/debian/ntsync-dkms.postinst" ] || {
	echo "usage: $0 [SOURCE-TREE] (the ntsync tree with debian/)" >&2
	exit 2
}
# shellcheck source=tests/tap.sh
. "$top/tests/tap.sh"

version=$(cat "$top/VERSION")
kver=6.12.0-99-amd64
shim=605dab50-e046-4300-abb6-3dd810dd8b23
global=8be4df61-93ca-11d2-aa0d-00e098032b8c

# The postinst as the package ships it.
mkdir -p "$tmp/pkg/DEBIAN"
sed "s/#NTSYNC_VERSION#/$version/g" "$top/debian/ntsync-dkms.postinst" >"$tmp/pkg/DEBIAN/postinst"
if (cd "$top" && bash debian/subst-kernel-range "$tmp/pkg") >"$tmp/subst.log" 2>&1; then
	ok "the postinst is made as the package build makes it"
else
	bad "debian/subst-kernel-range failed"
	sed 's/^/# /' "$tmp/subst.log"
	done_tap
fi
postinst=$tmp/pkg/DEBIAN/postinst
sh=$(command -v sh)

# The commands: stubs, and links to the real tools the script reads with.
bin=$tmp/bin
mkdir -p "$bin"
for t in cat find grep od tr wc; do
	ln -s "$(command -v "$t")" "$bin/$t"
done
cat >"$bin/uname" <<EOF
#!/bin/sh
echo $kver
EOF
cat >"$bin/dkms" <<'EOF'
#!/bin/sh
echo "dkms $*" >>"$STUB_LOG"
[ "$1" = status ] && echo "ntsync/$STUB_VERSION, $STUB_KVER, x86_64: installed"
exit 0
EOF
cat >"$bin/modprobe" <<'EOF'
#!/bin/sh
echo "modprobe $*" >>"$STUB_LOG"
[ -z "$STUB_MODPROBE_MSG" ] || echo "$STUB_MODPROBE_MSG" >&2
exit "$STUB_MODPROBE_RC"
EOF
cat >"$bin/rmmod" <<'EOF'
#!/bin/sh
echo "rmmod $*" >>"$STUB_LOG"
exit 1
EOF
# mokutil --sb-state and --test-key print what the test says.
cat >"$tmp/mokutil" <<'EOF'
#!/bin/sh
echo "mokutil $*" >>"$STUB_LOG"
case $1 in
--sb-state) printf '%s\n' "$STUB_SB_STATE" ;;
--test-key) printf '%s\n' "$2 $STUB_TEST_KEY" ;;
*) exit 1 ;;
esac
EOF
chmod +x "$bin"/* "$tmp/mokutil"

# A fake root: the running kernel's modules and headers, DKMS's key, and
# EFI variables (4 attribute bytes, then the value).
mkroot() {
	r=$tmp/root-$1
	mkdir -p "$r/lib/modules/$kver/build" "$r/lib/modules/$kver/updates/dkms" \
		"$r/var/lib/dkms" "$r/sys/firmware/efi/efivars"
	printf '\060\202\001\012dkms-test-key-0123456789' >"$r/var/lib/dkms/mok.pub"
}
efivar() {
	# shellcheck disable=SC2059 # the value is given as printf escapes
	printf "\\006\\000\\000\\000$3" >"$1/sys/firmware/efi/efivars/$2"
}
secure_boot() {
	efivar "$1" "SecureBoot-$global" "$2"
}
# A MOK list (or request) that holds DKMS's key: efivarfs format.
list_with_key() {
	{
		printf '\006\000\000\000SIGLIST\060\202\002\000debian-ca'
		cat "$1/var/lib/dkms/mok.pub"
		printf 'end'
	} >"$2"
}

# run NAME: the postinst with "configure" in root $r; output in $tmp/out.
# STUB_* variables and MOKUTIL=yes (put the mokutil stub on PATH) are read
# from the environment of the call.
run() {
	what=$1
	rm -f "$bin/mokutil"
	[ "${MOKUTIL:-}" != yes ] || ln -s "$tmp/mokutil" "$bin/mokutil"
	: >"$tmp/log"
	set +e
	env -i PATH="$bin" NTSYNC_POSTINST_SYSROOT="$r" STUB_LOG="$tmp/log" \
		STUB_VERSION="$version" STUB_KVER="$kver" \
		STUB_MODPROBE_RC="${STUB_MODPROBE_RC:-0}" \
		STUB_MODPROBE_MSG="${STUB_MODPROBE_MSG:-}" \
		STUB_SB_STATE="${STUB_SB_STATE:-}" \
		STUB_TEST_KEY="${STUB_TEST_KEY:-}" \
		"$sh" "$postinst" configure >"$tmp/out" 2>&1
	rc=$?
	set -e
	if [ "$rc" -eq 0 ]; then
		ok "$what: exit 0"
	else
		bad "$what: exit $rc, expected 0 (apt would fail)"
		sed 's/^/# /' "$tmp/out"
	fi
}
has() {
	if grep -q -- "$1" "$tmp/out"; then
		ok "$what: says /$1/"
	else
		bad "$what: does not say /$1/"
		sed 's/^/# /' "$tmp/out" "$tmp/log"
	fi
}
lacks() {
	if grep -q -- "$1" "$tmp/out"; then
		bad "$what: says /$1/"
		sed 's/^/# /' "$tmp/out"
	else
		ok "$what: does not say /$1/"
	fi
}
# Every line of the output is modprobe's or ours.
prefixed() {
	if grep -v -e '^ntsync-dkms: ' -e '^modprobe: ' "$tmp/out" | grep -q .; then
		bad "$what: a line without the ntsync-dkms: prefix"
		sed 's/^/# /' "$tmp/out"
	else
		ok "$what: every line is prefixed"
	fi
}
rejected="modprobe: ERROR: could not insert 'ntsync': Key was rejected by service"
steps_import='^ntsync-dkms:   sudo mokutil --import /var/lib/dkms/mok.pub    (choose a one-time password)$'
steps_boot='^ntsync-dkms:   press a key within 10 seconds, then choose "Enroll MOK" -> "Continue" -> "Yes",$'
steps_after='^ntsync-dkms: After that reboot the ntsync module loads by itself.'
false_promise='it is loaded at the next boot'

# 1. Loaded fine.
mkroot fine
secure_boot "$r" '\001'
STUB_MODPROBE_RC=0 run "loaded"
has "^ntsync-dkms: Linux $kver: ntsync $version built and installed by DKMS.$"
has "^ntsync-dkms: loaded ntsync $version into the running kernel $kver; /dev/ntsync is ready.$"
lacks 'Secure Boot'
if grep -q "^modprobe ntsync$" "$tmp/log"; then
	ok "loaded: ran modprobe ntsync"
else
	bad "loaded: did not run modprobe ntsync"
fi

# 2. Secure Boot refuses the module, mokutil says the key is not enrolled.
mkroot refused
secure_boot "$r" '\001'
MOKUTIL=yes STUB_MODPROBE_RC=1 STUB_MODPROBE_MSG=$rejected \
	STUB_TEST_KEY="is not enrolled" run "refused, mokutil: not enrolled"
has "^$rejected\$"
has "^ntsync-dkms: Secure Boot is on and the kernel refused the ntsync module: it does not trust$"
has "$steps_import"
has '^ntsync-dkms:   reboot; when the blue MokManager screen says "Press any key to perform MOK management",$'
has "$steps_boot"
has '^ntsync-dkms:   type the password, and choose "Reboot".$'
has "$steps_after"
has '^ntsync-dkms: mokutil --test-key /var/lib/dkms/mok.pub; ntsync-info (package ntsync-tools).$'
lacks "$false_promise"
lacks 'mokutil is not installed'
prefixed
if grep -q "^mokutil --test-key $r/var/lib/dkms/mok.pub$" "$tmp/log"; then
	ok "refused: mokutil --test-key was asked about DKMS's key"
else
	bad "refused: mokutil --test-key was not asked about DKMS's key"
	sed 's/^/# /' "$tmp/log"
fi

# 3. The same without mokutil: the EFI variables say it (MokListRT
#    without the key); the import step names the package.
mkroot refused-efi
secure_boot "$r" '\001'
printf '\006\000\000\000SIGLIST\060\202\002\000debian-ca' >"$r/sys/firmware/efi/efivars/MokListRT-$shim"
STUB_MODPROBE_RC=1 STUB_MODPROBE_MSG="modprobe: ERROR: could not insert 'ntsync': Operation not permitted" \
	run "refused, no mokutil, MokListRT without the key"
has "$steps_import"
has '^ntsync-dkms:   (mokutil is not installed: apt-get install mokutil)$'
has "$steps_boot"
lacks "$false_promise"
prefixed

# 4. Neither mokutil nor a readable MOK list: modprobe's message decides.
mkroot refused-msg
secure_boot "$r" '\001'
STUB_MODPROBE_RC=1 STUB_MODPROBE_MSG=$rejected run "refused, key state from modprobe's message"
has "$steps_import"
lacks "$false_promise"
# ... also with Secure Boot's state unknown (the variable unreadable)
rm "$r/sys/firmware/efi/efivars/SecureBoot-$global"
mkdir "$r/sys/firmware/efi/efivars/SecureBoot-$global"
STUB_MODPROBE_RC=1 STUB_MODPROBE_MSG=$rejected run "refused, Secure Boot's state unknown"
has "^ntsync-dkms: The kernel refused the ntsync module's signature: it does not trust$"
has "$steps_import"
# ... but not for another error
STUB_MODPROBE_RC=1 STUB_MODPROBE_MSG="modprobe: ERROR: could not insert 'ntsync': Operation not permitted" \
	run "Operation not permitted, Secure Boot's state unknown"
has "$false_promise"
rmdir "$r/sys/firmware/efi/efivars/SecureBoot-$global"
# ... and Secure Boot's state from mokutil --sb-state when the variable
# cannot be read.
MOKUTIL=yes STUB_SB_STATE="SecureBoot enabled" STUB_TEST_KEY="is not enrolled" \
	STUB_MODPROBE_RC=1 STUB_MODPROBE_MSG=$rejected run "refused, mokutil --sb-state"
has "$steps_import"
lacks "$false_promise"

# 5. The key is pending: mokutil --import was run before.
mkroot pending
secure_boot "$r" '\001'
MOKUTIL=yes STUB_MODPROBE_RC=1 STUB_MODPROBE_MSG=$rejected \
	STUB_TEST_KEY="is already in the enrollment request" run "pending, mokutil"
has "^ntsync-dkms: (/var/lib/dkms/mok.pub) is not enrolled yet; its enrollment (mokutil --import) waits for$"
has "$steps_boot"
has '^ntsync-dkms:   type the password chosen at the import, and choose "Reboot".$'
has "$steps_after"
lacks 'sudo mokutil --import'
lacks "$false_promise"
prefixed
# ... seen in MokNew without mokutil
list_with_key "$r" "$r/sys/firmware/efi/efivars/MokNew-$shim"
printf '\006\000\000\000SIGLIST\060\202\002\000debian-ca' >"$r/sys/firmware/efi/efivars/MokListRT-$shim"
STUB_MODPROBE_RC=1 STUB_MODPROBE_MSG=$rejected run "pending, MokNew"
has 'its enrollment (mokutil --import) waits for$'
lacks 'sudo mokutil --import'

# 6. Another failure: Secure Boot off, or on with the key enrolled.
mkroot other
secure_boot "$r" '\000'
STUB_MODPROBE_RC=1 STUB_MODPROBE_MSG="modprobe: ERROR: could not insert 'ntsync': Exec format error" \
	run "other failure, Secure Boot off"
has "^ntsync-dkms: could not load the ntsync module now (see 'dmesg'); it is loaded at the next boot.$"
lacks 'Secure Boot'
secure_boot "$r" '\001'
MOKUTIL=yes STUB_TEST_KEY="is already enrolled" STUB_MODPROBE_RC=1 \
	STUB_MODPROBE_MSG="modprobe: ERROR: could not insert 'ntsync': Exec format error" \
	run "other failure, key enrolled"
has "$false_promise"
lacks 'mokutil --import'
# the key in MokListRT, without mokutil
list_with_key "$r" "$r/sys/firmware/efi/efivars/MokListRT-$shim"
STUB_MODPROBE_RC=1 STUB_MODPROBE_MSG="modprobe: ERROR: could not insert 'ntsync': Exec format error" \
	run "other failure, key in MokListRT"
has "$false_promise"
lacks 'mokutil --import'
# no EFI firmware at all: "Operation not permitted" is not Secure Boot's
rm -r "$r/sys/firmware/efi"
STUB_MODPROBE_RC=1 STUB_MODPROBE_MSG="modprobe: ERROR: could not insert 'ntsync': Operation not permitted" \
	run "other failure, no EFI"
has "$false_promise"

# 7. Odd variables never break the script (set -e): a SecureBoot variable
#    of the wrong size, a MOK list that is a directory, no /sys at all.
mkroot odd
printf '\006\000\000' >"$r/sys/firmware/efi/efivars/SecureBoot-$global"
mkdir "$r/sys/firmware/efi/efivars/MokListRT-$shim"
STUB_MODPROBE_RC=1 STUB_MODPROBE_MSG="modprobe: ERROR: could not insert 'ntsync': Invalid argument" \
	run "odd variables"
has "$false_promise"
rm -r "$r/sys"
STUB_MODPROBE_RC=1 STUB_MODPROBE_MSG="modprobe: ERROR: could not insert 'ntsync': Invalid argument" \
	run "no /sys"
has "$false_promise"
# Secure Boot on, the key missing: unsigned module
mkroot nokey
secure_boot "$r" '\001'
rm "$r/var/lib/dkms/mok.pub"
STUB_MODPROBE_RC=1 STUB_MODPROBE_MSG=$rejected run "no DKMS key"
has '^ntsync-dkms: Secure Boot is on and the kernel refused the ntsync module: DKMS has no signing key (/var/lib/dkms/mok.pub), so the module is unsigned$'
lacks "$false_promise"

done_tap
