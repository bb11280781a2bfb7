# shellcheck shell=sh
# Sourced by debian/tests-host/check-*.sh and libntsync/tests/check-man.sh.
# The TAP prologue of the shell host tests (sourced; sh, not bash): a scratch
# folder removed at exit ($tmp), ok/bad counting the results, done_tap printing the plan
# and exiting 1 when one failed.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
bad() { n=$((n + 1)); echo "not ok $n - $1"; fail=1; }
done_tap() {
	echo "1..$n"
	exit "$fail"
}
