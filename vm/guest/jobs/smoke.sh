# shellcheck shell=bash
# shellcheck disable=SC2034  # JOB_RC is read by guest.sh, which sources this file
# Job "smoke": the smallest check of the whole path (driver loaded, device usable).
say "== smoke: $(uname -r), $LOADED_BY"
shown "$OUT/job.log" ls -l /dev/ntsync
JOB_RC=$?
if [ "$JOB_RC" -eq 0 ]; then
	shown "$OUT/job.log" python3 -c 'import os; fd = os.open("/dev/ntsync", os.O_RDWR); print("open /dev/ntsync: fd", fd); os.close(fd)'
	JOB_RC=$?
fi
