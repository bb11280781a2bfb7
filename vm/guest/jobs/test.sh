# shellcheck shell=bash
# shellcheck disable=SC2034  # JOB_RC is read by guest.sh, which sources this file
# Job "test": the installed cmocka conformance suite (package ntsync-tests).
if ! command -v ntsync-run-tests >/dev/null; then
	say "ntsync-run-tests is not installed (package ntsync-tests missing from the debs?)"
	JOB_RC=3
else
	n=$(find /usr/libexec/ntsync/tests -maxdepth 1 -type f -perm -u+x 2>/dev/null | wc -l)
	mark "info running $n test programs against $LOADED_BY"
	shown "$OUT/job.log" ntsync-run-tests --tap "$OUT/results.tap" --junit "$OUT/results.xml"
	JOB_RC=$?
fi
