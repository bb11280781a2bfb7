# shellcheck shell=bash
# shellcheck disable=SC2034  # JOB_RC is read by guest.sh, which sources this file
# shellcheck disable=SC2016  # the sh -c commands expand in their own shell, on purpose
# Job "sb-refused" (ntsync-vm secure-boot, case a): a Secure Boot PC whose MokList lacks DKMS's
# key. The packages were installed with apt in the install stage (it fails the run if apt
# fails); here: the kernel refuses the module for its signature, the postinst and ntsync-info
# say so and give the steps to enroll the key, and nothing else is broken. One "ok"/"not ok"
# line per check, then "N passed, N failed, 0 skipped".
JOB_RC=0
passed=0
failed=0
LOG=$OUT/job.log

check() {	# DESCRIPTION COMMAND...: one check, its output kept in job.log
	local what=$1 out rc
	shift
	out=$("$@" 2>&1)
	rc=$?
	if [ "$rc" -eq 0 ]; then
		passed=$((passed + 1))
		say "ok - $what"
		echo "ok - $what" >>"$LOG"
	else
		failed=$((failed + 1))
		say "not ok - $what"
		{ echo "not ok - $what"; printf '%s\n' "$out" | sed 's/^/#   /'; } >>"$LOG"
		printf '%s\n' "$out" | sed 's/^/#   /' | head -n 15 >"$TTY"
	fi
}

# What the user saw: the postinst's lines of the apt run (install.log has each line after the
# guest's uptime).
postinst=$OUT/postinst.txt
sed -E 's/^\[ *[0-9.]+\] //' "$OUT/install.log" | grep '^ntsync-dkms:' >"$postinst"
say "== what apt printed from ntsync-dkms's postinst:"
while IFS= read -r line; do say "   $line"; done <"$postinst"

check "Secure Boot is on (mokutil --sb-state)" grep -qx 'sb_state=SecureBoot enabled' "$OUT/secure-boot.txt"
check "the kernel is locked down (/sys/kernel/security/lockdown)" \
	grep -Eq '^lockdown=.*\[(integrity|confidentiality)\]' "$OUT/secure-boot.txt"
check "DKMS's key is not enrolled (mokutil --test-key)" \
	grep -q '^dkms_key=.*is not enrolled' "$OUT/secure-boot.txt"
check "ntsync-dkms is installed (dpkg)" \
	sh -c '[ "$(dpkg-query -W -f "\${Status}" ntsync-dkms)" = "install ok installed" ]'
check "dpkg --audit finds nothing half-installed" sh -c '[ -z "$(dpkg --audit)" ]'
check "DKMS built and installed the module for $(uname -r)" \
	sh -c "dkms status -m ntsync -k \"\$(uname -r)\" | grep -q ': installed'"
ko=$(modinfo -n ntsync 2>/dev/null)
check "the module DKMS installed is signed ($ko)" sh -c "modinfo -F sig_id ntsync | grep -q PKCS"
check "the module is not loaded and /dev/ntsync is absent" \
	sh -c '[ ! -e /sys/module/ntsync ] && [ ! -e /dev/ntsync ]'
modprobe_out=$(modprobe ntsync 2>&1)
modprobe_rc=$?
say "== modprobe ntsync: rc $modprobe_rc: $modprobe_out"
check "modprobe ntsync is refused" test "$modprobe_rc" -ne 0
check "the refusal is for the key (Key was rejected by service)" \
	grep -q 'Key was rejected by service' <<<"$modprobe_out"
check "the kernel log says why" \
	sh -c "dmesg | grep -Eq 'Loading of module with unavailable key is rejected|Lockdown: .*unsigned module loading is restricted'"
check "the postinst gives the enrollment command" \
	grep -qF 'mokutil --import /var/lib/dkms/mok.pub' "$postinst"
check "the postinst names MokManager's Enroll MOK step" grep -qF 'Enroll MOK' "$postinst"
check "the postinst does not claim the module loads at the next boot" \
	sh -c "! grep -Eiq 'loaded at the next boot|/dev/ntsync is ready' '$postinst'"

say "== ntsync-info (as a user would run it)"
info_out=$(ntsync-info 2>&1)
info_rc=$?
printf '%s\n' "$info_out" >"$OUT/ntsync-info.txt"
while IFS= read -r line; do say "   $line"; done <"$OUT/ntsync-info.txt"
check "ntsync-info exits 3 (Secure Boot refuses the module)" test "$info_rc" -eq 3
check "ntsync-info's verdict names Secure Boot" grep -q '^verdict: NOT WORKING: Secure Boot' <<<"$info_out"
check "ntsync-info gives the enrollment command" grep -qF 'mokutil --import /var/lib/dkms/mok.pub' <<<"$info_out"
ntsync-info --json >"$OUT/ntsync-info.json" 2>&1
check "ntsync-info --json names the cause and the key's state" python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
sb = j["secure_boot"]
assert j["cause"].startswith("secure-boot"), j["cause"]
assert sb["enabled"] is True and sb["dkms_key_enrolled"] is False, sb
assert j["working"] is False
' "$OUT/ntsync-info.json"
check "no failed systemd unit" sh -c '[ -z "$(systemctl --failed --no-legend --plain)" ]'

# At the next boot systemd-modules-load asks for ntsync (modules-load.d) and fails on it
# alone, as README.Debian says: what the user will see until the key is enrolled.
say "== systemctl restart systemd-modules-load (what every boot does until the key is enrolled)"
systemctl restart systemd-modules-load.service >/dev/null 2>&1
check "systemd-modules-load fails on the refused module (README.Debian says so)" \
	systemctl is-failed --quiet systemd-modules-load.service
journalctl -b -u systemd-modules-load.service --no-pager -o cat >"$OUT/modules-load.txt" 2>&1
grep -E "ntsync|Failed" "$OUT/modules-load.txt" | tail -n 4 | while IFS= read -r line; do say "   $line"; done
check "its message names ntsync and the key" \
	grep -Eq "Failed to insert (module )?'ntsync': Key was rejected by service" "$OUT/modules-load.txt"
systemctl reset-failed systemd-modules-load.service 2>/dev/null

say "$passed passed, $failed failed, 0 skipped"
echo "$passed passed, $failed failed, 0 skipped" >>"$LOG"
[ "$failed" -eq 0 ] || JOB_RC=1
