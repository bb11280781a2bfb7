# shellcheck shell=bash
# shellcheck disable=SC2034  # JOB_RC is read by guest.sh, which sources this file
# Job "test": the installed cmocka conformance suite (package ntsync-tests), then, when the
# host sent it (i386/, from tests/build-static), the same suite built as static i386
# executables, which goes through the driver's compat ioctl path.  The last line of job.log
# adds both up: "N passed, N failed, N skipped".
summary_of() {
	grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$1" | tail -n1
}

if ! command -v ntsync-run-tests >/dev/null; then
	say "ntsync-run-tests is not installed (package ntsync-tests missing from the debs?)"
	JOB_RC=3
else
	n=$(find /usr/libexec/ntsync/tests -maxdepth 1 -type f -perm -u+x 2>/dev/null | wc -l)
	mark "info running $n test programs against $LOADED_BY"
	shown "$OUT/job-64.log" ntsync-run-tests --tap "$OUT/results.tap" --junit "$OUT/results.xml"
	JOB_RC=$?
	cat "$OUT/job-64.log" >>"$OUT/job.log"
	if [ -x "$IN/i386/ntsync-run-tests" ]; then
		n=$(find "$IN/i386" -maxdepth 1 -type f -name 'test-*' | wc -l)
		mark "info running the i386 build ($n static 32-bit programs, compat ioctls) against $LOADED_BY"
		shown "$OUT/job-i386.log" "$IN/i386/ntsync-run-tests" --dir "$IN/i386" \
			--tap "$OUT/results-i386.tap" --junit "$OUT/results-i386.xml"
		rc=$?
		[ "$JOB_RC" -ne 0 ] || JOB_RC=$rc
		a=$(summary_of "$OUT/job-64.log")
		b=$(summary_of "$OUT/job-i386.log")
		if [ -z "$a" ] || [ -z "$b" ]; then
			say "a test runner printed no summary line (64-bit: '${a}', i386: '${b}')"
			JOB_RC=1
		else
			# "P passed, F failed, S skipped" twice -> the sums
			read -r p1 f1 s1 < <(echo "$a" | sed -E 's/^([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?$/\1 \2 \4/')
			read -r p2 f2 s2 < <(echo "$b" | sed -E 's/^([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?$/\1 \2 \4/')
			{
				sed 's/^/i386 /' "$OUT/job-i386.log" | grep -Ev '^i386 [0-9]+ passed, '
				echo "suite, 64-bit: $a"
				echo "suite, i386:   $b"
				echo "$((p1 + p2)) passed, $((f1 + f2)) failed, $((${s1:-0} + ${s2:-0})) skipped"
			} >>"$OUT/job.log"
			say "suite, 64-bit: $a; i386: $b"
		fi
	fi
fi
