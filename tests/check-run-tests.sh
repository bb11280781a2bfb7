#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The stand-ins' bodies expand their variables when they run, not here:
# shellcheck disable=SC2016
#
# Host test of ntsync-run-tests' kernel-log gate: stand-in test binaries
# write lines into a stand-in kernel log (a plain file) and taint flags
# into a stand-in /proc/sys/kernel/tainted, and the runner must blame
# exactly the binary that ran while a report appeared.
#   check-run-tests.sh RUNNER GATES
set -u
runner=$1 gates=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-run-tests.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

mkdir "$tmp/bin"
# stand-in NAME BODY: a test binary with one case "case_NAME" whose run
# executes BODY first.
standin() {
	cat >"$tmp/bin/test-$1" <<STANDIN
#!/bin/sh
[ "\${1:-}" = --list ] && { echo case_$1; exit 0; }
$2
echo "ok 1 - case_$1"
STANDIN
	chmod +x "$tmp/bin/test-$1"
}
standin a-clean 'echo "[    1.0] ntsync: nothing to see" >>"$NTSYNC_RUN_TESTS_KMSG"'
standin b-warn 'echo "[    2.0] WARNING: CPU: 0 PID: 42 at drivers/misc/ntsync.c:123 ntsync_x+0x1/0x2" >>"$NTSYNC_RUN_TESTS_KMSG"'
standin c-kcsan 'echo "[    3.0] BUG: KCSAN: data-race in hrtimer_wakeup / schedule_hrtimeout" >>"$NTSYNC_RUN_TESTS_KMSG"'
standin d-taint 'echo 4609 >"$NTSYNC_RUN_TESTS_TAINTED"'
standin e-oot 'echo 12288 >"$NTSYNC_RUN_TESTS_TAINTED"'
cat >"$tmp/bin/test-f-skip" <<'STANDIN'
#!/bin/sh
[ "${1:-}" = --list ] && { echo case_skip; exit 0; }
echo "[    4.0] BUG: unable to handle page fault" >>"$NTSYNC_RUN_TESTS_KMSG"
echo "no /dev/ntsync"
exit 77
STANDIN
chmod +x "$tmp/bin/test-f-skip"

: >"$tmp/kmsg"
echo 0 >"$tmp/tainted"
NTSYNC_RUN_TESTS_KMSG=$tmp/kmsg NTSYNC_RUN_TESTS_TAINTED=$tmp/tainted \
	bash "$runner" --dir "$tmp/bin" --gates "$gates" >"$tmp/out" 2>&1
rc=$?
cat "$tmp/out"

[ $rc = 1 ] || fail "exit status $rc, not 1 (a report must fail the run)"
expect() { grep -q -F -x -e "$1" "$tmp/out" || fail "no line '$1'"; }
expect "PASS a-clean: (kernel log)"
expect "FAIL b-warn: (kernel log)"
expect "    kernel WARNING (lockdep reports included): [    2.0] WARNING: CPU: 0 PID: 42 at drivers/misc/ntsync.c:123 ntsync_x+0x1/0x2"
expect "PASS c-kcsan: (kernel log)"
expect "FAIL d-taint: (kernel log)"
expect "    kernel taint changed from 0 to 4609 while it ran"
expect "PASS e-oot: (kernel log)"
grep -q 'f-skip: (kernel log)' "$tmp/out" && fail "a skipped binary got a kernel-log result"
# 5 cases + 5 kernel-log results: 8 passed, 2 failed; 1 skipped
expect "8 passed, 2 failed, 1 skipped"
[ "$(grep -c -F 'ntsync-run-tests[' "$tmp/kmsg")" = 12 ] ||
	fail "expected 12 marks (begin and end for 6 binaries) in the kernel log"

# Without a gate list the kernel log is not checked, and says so.
NTSYNC_RUN_TESTS_KMSG=$tmp/kmsg NTSYNC_RUN_TESTS_TAINTED=$tmp/tainted \
	bash "$runner" --dir "$tmp/bin" --gates /nonexistent >"$tmp/out2" 2>&1
rc=$?
[ $rc = 2 ] || fail "a missing --gates file gave exit $rc, not 2"
grep -q 'gate list /nonexistent does not exist' "$tmp/out2" || fail "no message for the missing gate list"

# The taint rule and the KCSAN exemption are the list's @ directives: with
# only O allowed, e-oot's E fails; with another @kcsan-report text, c-kcsan's
# line is a BUG: report; without @taint-allowed the runner refuses the list.
sed -e 's/^@taint-allowed	[0-9]*/@taint-allowed	4096/' \
	-e 's/^@kcsan-report	[^	]*/@kcsan-report	NOT KCSAN/' "$gates" >"$tmp/gates-o"
: >"$tmp/kmsg"
echo 0 >"$tmp/tainted"
NTSYNC_RUN_TESTS_KMSG=$tmp/kmsg NTSYNC_RUN_TESTS_TAINTED=$tmp/tainted \
	bash "$runner" --dir "$tmp/bin" --gates "$tmp/gates-o" c-kcsan e-oot >"$tmp/out3" 2>&1
grep -q -F -x "FAIL e-oot: (kernel log)" "$tmp/out3" || fail "@taint-allowed 4096 did not fail an E taint"
grep -q -F -x "FAIL c-kcsan: (kernel log)" "$tmp/out3" || fail "another @kcsan-report still exempted KCSAN's line"
grep -v '^@taint-allowed	' "$gates" >"$tmp/gates-none"
NTSYNC_RUN_TESTS_KMSG=$tmp/kmsg NTSYNC_RUN_TESTS_TAINTED=$tmp/tainted \
	bash "$runner" --dir "$tmp/bin" --gates "$tmp/gates-none" >"$tmp/out4" 2>&1
rc=$?
[ $rc = 2 ] || fail "a gate list without @taint-allowed gave exit $rc, not 2"
grep -q "has no '@taint-allowed" "$tmp/out4" || fail "no message for the missing @taint-allowed line"

[ $fails = 0 ] && echo "check-run-tests: all checks passed"
[ $fails = 0 ]
