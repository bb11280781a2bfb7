# shellcheck shell=bash
# shellcheck disable=SC2034  # JOB_RC is read by guest.sh, which sources this file
# Job "exec": run the user's command in a copy of their folder; the folder comes back.
SHARE=/var/tmp/ntsync-share
rm -rf "$SHARE"
mkdir -p "$SHARE"
if [ -d "$IN/share" ]; then cp -a "$IN/share/." "$SHARE/"; fi
say "== exec in $SHARE: $CMD"
cd "$SHARE" || exit 1
shown "$OUT/job.log" bash -c "$CMD"
JOB_RC=$?
cd / || exit 1
say "== exit code $JOB_RC"
mkdir -p "$OUT/share"
cp -a "$SHARE/." "$OUT/share/"
