# Shared by ntsync-info's host tests (tools/check-ntsync-info.sh and
# tools/info-tests/check-ntsync-info-wine.sh), sourced after they set $tmp:
# TAP lines ("ok N - ...", "not ok N - ...") counted in $n, $fail set to 1
# by any failure; the caller ends with  echo "1..$n"; exit $fail.
# The command under test writes $tmp/out and $tmp/err.
# shellcheck shell=sh disable=SC2034,SC2154 # fail is read and tmp set by the sourcing script

n=0
fail=0

ok() { n=$((n + 1)); echo "ok $n - $1"; }
bad() { n=$((n + 1)); echo "not ok $n - $1"; fail=1; }

# expect_rc WANT DESCRIPTION CMD...: run CMD, its stdout to $tmp/out and
# stderr to $tmp/err; it must exit WANT
expect_rc() {
	want=$1
	what=$2
	shift 2
	set +e
	"$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	set -e
	if [ "$rc" -eq "$want" ]; then
		ok "$what (exit $rc)"
	else
		bad "$what: exit $rc, expected $want"
		sed 's/^/# /' "$tmp/out" "$tmp/err"
	fi
}

# expect_text PATTERN DESCRIPTION: a basic regular expression in $tmp/out
expect_text() {
	if grep -q -- "$1" "$tmp/out"; then
		ok "$2"
	else
		bad "$2: no /$1/"
		sed 's/^/# /' "$tmp/out"
	fi
}

# expect_json JQ-FILTER WANT: the filter applied to $tmp/out (jq -r) gives
# WANT. Without jq the check fails and says so: it is never passed unread
# (./check and the package build, Build-Depends jq <!nocheck>, install it).
expect_json() {
	if ! command -v jq >/dev/null 2>&1; then
		bad "json $1: jq is not installed (apt-get install jq)"
		return
	fi
	got=$(jq -r "$1" "$tmp/out" 2>&1) || got="(invalid JSON: $got)"
	if [ "$got" = "$2" ]; then
		ok "json $1 = $2"
	else
		bad "json $1 = '$got', expected '$2'"
		sed 's/^/# /' "$tmp/out"
	fi
}
