# shellcheck shell=bash
# Shared by the autopkgtest tests in debian/tests/ (sourced, not run).
#
# Every check prints "PASS name: detail" or "FAIL name: detail" and appends
# the line to $RESULTS, which lives in $AUTOPKGTEST_ARTIFACTS so that it
# survives the reboots of a needs-reboot test; summary prints
# "N passed, N failed" over the whole file and fails when a check failed.

export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

test_name=${0##*/}
ARTIFACTS=${AUTOPKGTEST_ARTIFACTS:-${AUTOPKGTEST_TMP:-}}
if [ -z "$ARTIFACTS" ]; then
	echo "$test_name: AUTOPKGTEST_ARTIFACTS is not set: run me with autopkgtest (or vm/ntsync-vm lifecycle), not by hand" >&2
	exit 2
fi
mkdir -p "$ARTIFACTS"
RESULTS=$ARTIFACTS/$test_name.results

mark() { echo "### $test_name: $*"; }
record() { echo "$*"; echo "$*" >>"$RESULTS"; }
pass() { record "PASS $1: ${*:2}"; }
fail() { record "FAIL $1: ${*:2}"; }
# check NAME DETAIL CMD...: PASS when CMD succeeds.
check() {
	local name=$1 detail=$2
	shift 2
	if "$@"; then pass "$name" "$detail"; else fail "$name" "$detail"; fi
}
# summary: the closing line over every phase of this test; exit status 0
# iff no check failed and at least one ran.
summary() {
	local passed failed
	passed=$(grep -c '^PASS' "$RESULTS" 2>/dev/null || true)
	failed=$(grep -c '^FAIL' "$RESULTS" 2>/dev/null || true)
	echo "${passed:-0} passed, ${failed:-0} failed"
	[ "${failed:-0}" -eq 0 ] && [ "${passed:-0}" -gt 0 ]
}

# The installed package's upstream version (what the module reports).
package_version() {
	local v
	v=$(dpkg-query -W -f '${Version}' "$1" 2>/dev/null) || return 1
	echo "${v%-*}"
}

# The kernel rule, read from the installed dkms.conf: the one source of the
# supported kernel range (BUILD_EXCLUSIVE_KERNEL, a regular expression that
# dkms matches with bash's =~, i.e. POSIX ERE like grep -E).
kernel_regex() {
	local conf=$1
	sed -n 's/^BUILD_EXCLUSIVE_KERNEL="\(.*\)"$/\1/p' "$conf"
}
kernel_matches() { grep -Eq -- "$2" <<<"$1"; }

loaded_version() { cat /sys/module/ntsync/version 2>/dev/null; }
dev_mode() { stat -c %a /dev/ntsync 2>/dev/null; }
# (grep without -q in pipes: with pipefail, a writer killed by SIGPIPE
# after grep -q quit early would turn a match into a failure.)
dkms_has() { dkms status -m ntsync -v "$1" -k "$2" 2>/dev/null | grep ': installed' >/dev/null; }
# The kernel's own module (in /lib/modules/KVER/kernel/, or built in).
kernel_own_module() {
	find "/lib/modules/$1/kernel" -name 'ntsync.ko*' 2>/dev/null | grep . >/dev/null ||
		grep -qs '/ntsync\.ko' "/lib/modules/$1/modules.builtin"
}
